/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Files written for others to read (kdpd's CDI specs and not-served lists, a
 * backend's files for a CNI): written whole to a temp file beside the target
 * and renamed over it, so a reader sees the old content or the new, never a
 * part. Any thread; the caller owns every path and buffer.
 */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Creates `dir` and its missing parents with `mode` (not narrowed by the umask); 0 if it exists. */
int kdp_atomic_file_mkdir_p(const char *dir, mode_t mode);

/*
 * Writes `size` bytes of `content` to `path` with `mode`: to a temp file made
 * from `tmp_template` (a path in the same directory ending in "XXXXXX",
 * rewritten in place) and renamed over `path`. The temp file is removed on
 * failure. Returns 0 or the -errno of the step that failed. Not fsync()ed:
 * the files are for readers on a running node, under /run, which a reboot
 * empties anyway; where /run sits on a disk, the fsyncs were most of an
 * Allocate of 64 SR-IOV VFs (a device-info file each): p50 48.6 ms.
 */
int kdp_atomic_file_write(const char *path, char *tmp_template, const char *content, size_t size, mode_t mode);

#ifdef __cplusplus
}
#endif
