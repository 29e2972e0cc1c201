/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The unix sockets kdpd binds itself: each plugin socket (server.c) and the
 * metrics socket (metrics-http.c), on the loop thread; and every connect
 * kdpd makes on the loop to ask whether a socket is served (daemon.c,
 * kubelet-client.c), which never waits.
 *
 * What is at the path first: nothing, or a socket file nobody listens on
 * (left by a kdpd that crashed), which is removed; a live socket (one that
 * accepts, or whose backlog is full) is -EADDRINUSE; anything else (a
 * symlink, broken or not, a directory, a file) is not ours to remove:
 * -EEXIST.
 *
 * The socket is born with its mode and group, and no step after bind()
 * names it by a path that someone else could redirect: it is bound as ".s"
 * in a private directory ".kdp-XXXXXX" (0700, made beside the path, reached
 * through its fd), under the umask that gives the mode (Linux takes a unix
 * socket's file mode from the umask at bind, never from fchmod on the
 * socket), with the directory setgid and of the group when one is given,
 * then renamed into place, never over anything (RENAME_NOREPLACE). Both
 * names start with a dot, which the kubelet's plugin watcher skips. A
 * directory that others may write and that has no sticky bit is refused:
 * whoever can write it could swap names in it.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/*
 * A socket bound at `path` with `mode`, of group `gid` ((gid_t) -1: kdpd's),
 * listening, nonblocking and close-on-exec, in *ret_fd; -errno else.
 */
int kdp_unix_socket_listen(const char *path, gid_t gid, mode_t mode, int *ret_fd);

/*
 * 0 if sockets may be made in `dir`; -EPERM, logged with the directory and
 * its mode, when others may write it and it has no sticky bit; -errno of stat.
 */
int kdp_unix_socket_check_dir(const char *dir);

/*
 * Connects to `path` without waiting: 0 and the connected socket (nonblocking,
 * close-on-exec) in *ret_fd; -EAGAIN when a listener is there but its backlog
 * is full (it serves, busy); -ECONNREFUSED, -ENOENT... when nobody listens.
 */
int kdp_unix_socket_connect(const char *path, int *ret_fd);

/* True for an error of kdp_unix_socket_connect() that tells nothing of the listener: no fd, no memory, a path too long. */
bool kdp_unix_socket_untold(int r);

/*
 * Whether someone listens at `path`: 1 accepting, 2 listening with its
 * backlog full, 0 nobody (refused, gone, not a socket); 1 when it cannot
 * tell (kdp_unix_socket_untold()): taken for in use.
 */
int kdp_unix_socket_served(const char *path);
