/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unix sockets kdpd binds or asks (see unix-socket.h). */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <kdp/cleanup.h>
#include <kdp/log.h>

#include "unix-socket.h"

#define PRIVATE_NAME ".kdp-XXXXXX"
#define BOUND_NAME ".s"

int kdp_unix_socket_connect(const char *path, int *ret_fd) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -1;

        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        /* a unix connect never is EINPROGRESS: it is done, refused, or EAGAIN for a full backlog */
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return -errno;
        *ret_fd = KDP_TAKE_FD(fd);
        return 0;
}

bool kdp_unix_socket_untold(int r) {
        return r == -EMFILE || r == -ENFILE || r == -ENOBUFS || r == -ENOMEM || r == -ENAMETOOLONG;
}

int kdp_unix_socket_served(const char *path) {
        _cleanup_close_ int fd = -1;
        int r = kdp_unix_socket_connect(path, &fd);

        if (r == -EAGAIN)
                return 2;
        return r >= 0 || kdp_unix_socket_untold(r) ? 1 : 0;
}

/* Clears the way for a socket at `path` (see unix-socket.h). */
static int remove_stale(const char *path) {
        struct stat st;

        if (lstat(path, &st) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISSOCK(st.st_mode))
                return -EEXIST;
        if (kdp_unix_socket_served(path))
                return -EADDRINUSE;
        if (unlink(path) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

int kdp_unix_socket_check_dir(const char *dir) {
        char mode[8];
        struct stat st;

        if (stat(dir, &st) < 0)
                return -errno;
        if (!(st.st_mode & (S_IWGRP | S_IWOTH)) || (st.st_mode & S_ISVTX))
                return 0;
        snprintf(mode, sizeof(mode), "%04o", (unsigned) (st.st_mode & 07777));
        return kdp_log_error(-EPERM, "Refused socket directory: others may write it and it has no sticky bit",
                             KDP_F_STR("dir", dir), KDP_F_STR("mode", mode));
}

/* The private directory beside `path` (its name in `tmp`), open in *ret_fd, setgid and of `gid` if given. */
static int make_private_dir(char *tmp, gid_t gid, int *ret_fd) {
        _cleanup_close_ int fd = -1;
        int r = 0;

        if (!mkdtemp(tmp))
                return -errno;
        fd = open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || (gid != (gid_t) -1 && (fchown(fd, (uid_t) -1, gid) < 0 || fchmod(fd, 02700) < 0)))
                r = -errno;
        if (r < 0) {
                (void) rmdir(tmp);
                return r;
        }
        *ret_fd = KDP_TAKE_FD(fd);
        return 0;
}

/*
 * Binds `fd` as BOUND_NAME in the directory `dir_fd` with `mode`, listening,
 * then renames it to `path` (-EEXIST when something is there). The umask is back before any other file is made on this thread (the loop's).
 */
static int bind_private(int fd, int dir_fd, mode_t mode, const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        mode_t old_mask;
        int r = 0;

        snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/" BOUND_NAME, dir_fd);
        old_mask = umask(~mode & 0777);
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                r = -errno;
        (void) umask(old_mask);
        if (r < 0)
                return r;
        if (listen(fd, SOMAXCONN) < 0 ||
            renameat2(dir_fd, BOUND_NAME, AT_FDCWD, path, RENAME_NOREPLACE) < 0)
                r = -errno;
        return r;
}

/* The directory part of `path`, "." for a bare name, malloc()ed. */
static char *dir_of(const char *path) {
        _cleanup_free_ char *copy = strdup(path);

        return copy ? strdup(dirname(copy)) : NULL;
}

int kdp_unix_socket_listen(const char *path, gid_t gid, mode_t mode, int *ret_fd) {
        struct sockaddr_un sa;
        _cleanup_free_ char *dir = NULL, *tmp = NULL;
        _cleanup_close_ int fd = -1, dir_fd = -1;
        int r;

        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        dir = dir_of(path);
        if (!dir || asprintf(&tmp, "%s/" PRIVATE_NAME, dir) < 0)
                return -ENOMEM;
        r = kdp_unix_socket_check_dir(dir);
        if (r >= 0)
                r = remove_stale(path);
        if (r >= 0)
                r = make_private_dir(tmp, gid, &dir_fd);
        if (r < 0)
                return r;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        r = fd < 0 ? -errno : bind_private(fd, dir_fd, mode, path);
        (void) unlinkat(dir_fd, BOUND_NAME, 0);         /* left there only on failure */
        (void) rmdir(tmp);
        if (r < 0)
                return r == -EEXIST ? -EADDRINUSE : r;
        *ret_fd = KDP_TAKE_FD(fd);
        return 0;
}
