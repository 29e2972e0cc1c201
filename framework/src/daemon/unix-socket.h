/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The listening unix sockets kdpd binds itself: each plugin socket
 * (server.c) and the metrics socket (metrics-http.c), on the loop thread.
 *
 * What is at the path first: nothing, or a socket file nobody listens on
 * (left by a kdpd that crashed), which is removed; a live socket is
 * -EADDRINUSE; anything else (a symlink, broken or not, a directory, a file)
 * is not ours to remove: -EEXIST. The socket is born 0600 (umask 0177 around
 * bind), so nobody else can connect before its owner sets the mode and group
 * it is meant to have.
 */
#pragma once

#include <sys/types.h>

/* A socket bound at `path` and listening, nonblocking and close-on-exec, in *ret_fd; bind's own errno else. */
int kdp_unix_socket_listen(const char *path, int *ret_fd);
/* chown to `gid` ((gid_t) -1: unchanged), then chmod `mode`; on failure the file is removed. */
int kdp_unix_socket_set_access(const char *path, gid_t gid, mode_t mode);
