/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The not-served lists: for each backend, the devices its last scan looked at
 * and does not serve, with the reason (kdp_device_tree_not_served() and the
 * framework's own refusals), as `kdpctl not-served` shows them.
 *
 * kdpd writes one file per backend, <state dir>/<backend>.not-served (state
 * dir: kdpd --state-dir, default /run/kdp):
 *
 *   # kdpd not-served v1 backend=gpu
 *   0000:18:00.0<TAB>bound to vfio-pci, not nvidia
 *
 * one device a line, sorted by address; an address has no blanks and a reason
 * no tab or newline. Why a file and not an RPC: kdpd answers only the
 * kubelet's API on its sockets; a file is read with `kdpctl not-served` (or
 * cat) in the same container, whatever --v is, and needs no new server. It is
 * never written into the kubelet dir (a 1.26 kubelet deletes every non-socket
 * file there).
 *
 * Ownership and threads: kdpd's loop thread writes a backend's file whole
 * (atomic-file.h: a reader sees the old list or the new one) after a scan
 * that changed the set, writes it once at start (even empty, so an empty list
 * means "nothing skipped", not "not running") and removes it at a clean stop.
 * Readers (kdpctl) only read. Two kdpd on one host sharing a state dir must
 * not load the same backend.
 */
#pragma once

#include <stddef.h>
#include <stdio.h>

#define KDP_NOT_SERVED_DEFAULT_DIR "/run/kdp"

typedef struct kdp_not_served_entry {
        const char *address;
        const char *reason;
} kdp_not_served_entry;

/* "<dir>/<backend>.not-served" into *ret (free()). */
int kdp_not_served_path(const char *dir, const char *backend, char **ret);

/* Writes the list of `backend` (entries sorted by the caller), creating `dir`; -errno on failure (not logged). */
int kdp_not_served_write(const char *dir, const char *backend, const kdp_not_served_entry *v, size_t n);

/* Removes the list of `backend`; a missing file is fine. */
int kdp_not_served_remove(const char *dir, const char *backend);

/*
 * Prints "not served: <address> <reason>" for each entry of the lists in
 * `dir`, backend by backend in name order; only `backend`'s when not NULL.
 * Returns how many entries were printed; -ENOENT when there is no list (kdpd
 * not running with that state dir, or not with that backend), or the -errno
 * of reading.
 */
int kdp_not_served_print(const char *dir, const char *backend, FILE *out);
