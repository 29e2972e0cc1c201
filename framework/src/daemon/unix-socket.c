/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Listening unix sockets (see unix-socket.h). */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <kdp/cleanup.h>

#include "unix-socket.h"

/* Clears the way for a socket at `path` (see unix-socket.h). */
static int remove_stale(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -1;
        struct stat st;

        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        if (lstat(path, &st) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISSOCK(st.st_mode))
                return -EEXIST;
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) == 0)
                return -EADDRINUSE;
        if (unlink(path) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

/*
 * Under umask 0177 the socket is born 0600; the umask is back before any
 * other file is made on this thread (the loop's).
 */
int kdp_unix_socket_listen(const char *path, int *ret_fd) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -1;
        mode_t old_mask;
        int r;

        r = remove_stale(path);
        if (r < 0)
                return r;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        strcpy(sa.sun_path, path);      /* length checked by remove_stale() */
        old_mask = umask(0177);
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                r = -errno;
        (void) umask(old_mask);
        if (r < 0)
                return r;
        if (listen(fd, SOMAXCONN) < 0) {
                r = -errno;
                (void) unlink(path);
                return r;
        }
        *ret_fd = KDP_TAKE_FD(fd);
        return 0;
}

int kdp_unix_socket_set_access(const char *path, gid_t gid, mode_t mode) {
        int r;

        if ((gid != (gid_t) -1 && chown(path, (uid_t) -1, gid) < 0) || chmod(path, mode) < 0) {
                r = -errno;
                (void) unlink(path);
                return r;
        }
        return 0;
}
