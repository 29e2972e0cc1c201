/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kdp/backend.h>
#include <kdp/cleanup.h>

#include "sysfs.h"

int kdp_sysfs_read_text(const char *path, char **ret) {
        return kdp_sysfs_read_text_at(AT_FDCWD, path, ret);
}

int kdp_sysfs_read_text_at(int dirfd, const char *name, char **ret) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, size = 0;

        fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;

        for (;;) {
                ssize_t n;

                if (len + 1 >= size) {
                        char *p;

                        if (size >= KDP_SYSFS_TEXT_MAX)
                                return -EFBIG;
                        size = size ? size * 2 : 4096;
                        p = realloc(buf, size);
                        if (!p)
                                return -ENOMEM;
                        buf = p;
                }
                n = read(fd, buf + len, size - len - 1);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                len += (size_t) n;
        }
        while (len > 0 && buf[len - 1] == '\n')
                len--;
        buf[len] = '\0';

        *ret = KDP_TAKE_PTR(buf);
        return 0;
}

bool kdp_sysfs_name_valid(const char *s) {
        return s && *s && !strchr(s, '/') && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

int kdp_sysfs_link_base_at(int dirfd, const char *name, char *buf, size_t size) {
        char target[PATH_MAX];
        const char *base;
        ssize_t n;
        size_t len;

        n = readlinkat(dirfd, name, target, sizeof(target) - 1);
        if (n < 0)
                return -errno;
        target[n] = '\0';
        base = strrchr(target, '/');
        base = base ? base + 1 : target;
        len = strlen(base);
        if (len == 0)
                return -EINVAL;
        if (len >= size)
                return -ENAMETOOLONG;
        memcpy(buf, base, len + 1);
        return 0;
}

/* DEVNAME= of a uevent text, or NULL. Points into `uevent`. */
static const char *uevent_devname(char *uevent) {
        char *state = NULL;

        for (char *line = strtok_r(uevent, "\n", &state); line; line = strtok_r(NULL, "\n", &state))
                if (strncmp(line, "DEVNAME=", strlen("DEVNAME=")) == 0)
                        return line + strlen("DEVNAME=");
        return NULL;
}

int kdp_sysfs_devnode_at(int dirfd, const char *uevent, const char *dev_root, char *buf, size_t size) {
        _cleanup_free_ char *text = NULL;
        const char *devname;
        int r, n;

        assert(uevent && dev_root && buf && size > 0);

        r = kdp_sysfs_read_text_at(dirfd, uevent, &text);
        if (r < 0 && r != -ENOENT)
                return r;
        devname = text ? uevent_devname(text) : NULL;
        while (devname && *devname == '/')
                devname++;
        if (!devname || !*devname) {
                buf[0] = '\0';
                return 0;
        }

        /* "/" as the dev root would give "//dri/card1" */
        if (strcmp(dev_root, "/") == 0)
                dev_root = "";
        n = snprintf(buf, size, "%s/%s", dev_root, devname);
        if (n < 0 || (size_t) n >= size)
                return -ENAMETOOLONG;
        return 0;
}

int kdp_sysfs_compare_names(const void *a, const void *b) {
        return strverscmp((const char *) a, (const char *) b);
}

int kdp_sysfs_collect(DIR *dir, size_t elem_size, kdp_sysfs_entry_fn read_one, void *userdata, void **ret,
                      size_t *ret_n) {
        _cleanup_free_ char *elems = NULL;
        size_t n = 0, allocated = 0;
        struct dirent *de;
        int r;

        for (errno = 0; dir && (de = readdir(dir)); errno = 0) {
                if (de->d_name[0] == '.')
                        continue;
                if (n == allocated) {
                        size_t k = allocated ? allocated * 2 : 16;
                        char *v;

                        if (k > KDP_SYSFS_ENTRIES_MAX)
                                return -E2BIG;
                        v = reallocarray(elems, k, elem_size);
                        if (!v)
                                return -ENOMEM;
                        elems = v;
                        allocated = k;
                }
                r = read_one(de->d_name, elems + n * elem_size, userdata);
                if (r < 0)
                        return r;
                n += r > 0;
        }
        if (errno != 0)
                return -errno;
        if (n == 0) {
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }
        qsort(elems, n, elem_size, kdp_sysfs_compare_names);
        *ret = KDP_TAKE_PTR(elems);
        *ret_n = n;
        return 0;
}
