/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Whole-file writes by rename (see kdp/atomic-file.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kdp/atomic-file.h>
#include <kdp/cleanup.h>

static int mkdir_one(const char *path, mode_t mode) {
        struct stat st;

        if (mkdir(path, mode) == 0)
                return chmod(path, mode) < 0 ? -errno : 0;     /* not narrowed by the umask */
        if (errno != EEXIST)
                return -errno;
        if (stat(path, &st) < 0)
                return -errno;
        return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

int kdp_atomic_file_mkdir_p(const char *dir, mode_t mode) {
        _cleanup_free_ char *p = NULL;
        struct stat st;

        if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
                return 0;
        p = strdup(dir);
        if (!p)
                return -ENOMEM;
        for (char *s = p + 1;; s++) {
                char c = *s;
                int r;

                if (c != '/' && c != '\0')
                        continue;
                *s = '\0';
                r = mkdir_one(p, mode);
                *s = c;
                if (r < 0)
                        return r;
                if (c == '\0')
                        return 0;
        }
}

static int write_all(int fd, const char *buf, size_t size) {
        while (size > 0) {
                ssize_t n = write(fd, buf, size);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                buf += n;
                size -= (size_t) n;
        }
        return 0;
}

int kdp_atomic_file_write(const char *path, char *tmp_template, const char *content, size_t size, mode_t mode) {
        _cleanup_close_ int fd = -1;
        int r;

        fd = mkostemp(tmp_template, O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = write_all(fd, content, size);
        if (r >= 0 && fchmod(fd, mode) < 0)
                r = -errno;
        if (r >= 0 && rename(tmp_template, path) < 0)
                r = -errno;
        if (r < 0)
                (void) unlink(tmp_template);
        return r;
}
