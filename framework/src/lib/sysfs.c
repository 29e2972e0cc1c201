/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kdp/cleanup.h>

#include "sysfs.h"

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
