/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NVIDIA Xid errors from the kernel log (docs/hardware-gpu.md §3.4, §3.6, §7).
 *
 *   /dev/kmsg --read()--> gpu_kmsg_drain() --record--> gpu_xid_parse_record()
 *                                          --Xid-----> fn(userdata, xid, replay)
 *
 * The reader owns its fd and buffer; gpu.c owns the reader and watches its fd
 * on kdpd's loop. Everything runs on the loop thread (inside backend hooks).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kdp/cleanup.h>
#include <kdp/pci.h>

typedef struct gpu_xid {
        char bdf[KDP_PCI_ADDRESS_MAX];  /* "0000:18:00.0": the line's domain:bus:device, function 0,
                                         * printed "%04x:%02x:%02x.0" like the kernel's sysfs name
                                         * (kdp_pci_device.address) */
        unsigned code;                  /* the Xid number */
        unsigned cause;                 /* "... caused by previous Xid N" (Xid 45): N; 0 when absent */
        int gpu_instance;               /* MIG "GPU-I:NN", -1 when absent */
        int compute_instance;           /* MIG "GPU-CI:NN", -1 when absent */
        uint64_t seq;                   /* kmsg sequence number */
        uint64_t ts_usec;               /* kmsg timestamp, µs since boot */
} gpu_xid;

/*
 * Parses one kmsg record: "prio,seq,ts_usec,flags[,more];text" (the text may
 * end in '\n'; continuation lines are not part of `line`, and the text stops
 * at the first '\n' anyway). Returns 1 and fills *ret for an NVRM Xid line,
 * 0 for any other well-formed record, and -EINVAL for a malformed header.
 *
 * Only kernel records count: prio >= 8 (a facility other than 0) was written
 * from userspace and gives 0, whatever its text. The text must start with
 * "NVRM: Xid (", so a kernel line quoting foreign text (a USB product
 * string, say) cannot fake one. A domain wider than 32 bits gives 0.
 */
int gpu_xid_parse_record(const char *line, size_t len, gpu_xid *ret);

/* The catalog bucket NVIDIA's Xid catalog gives `code` ("RESET_GPU", ...), "UNKNOWN" when not listed. */
const char *gpu_xid_bucket(unsigned code);

/*
 * A set of Xid codes parsed from "13,31,43" (decimal; spaces around entries
 * allowed; empty entries such as "13,,31" or a trailing ',' are skipped, as
 * nvdp does; "" = none). Duplicates are kept once. An entry that is no Xid
 * number ("abc", "0x1f", "-1") is skipped too, as nvdp skips it: when
 * ret_skipped is set, *ret_skipped is then those entries, trimmed and joined
 * by ',' (free()), and NULL when none was skipped. -EINVAL for a NULL text.
 */
typedef struct gpu_xid_set {
        unsigned *codes;                /* sorted, unique; NULL when n == 0 */
        size_t n;
} gpu_xid_set;
int gpu_xid_set_parse(const char *text, gpu_xid_set *ret, char **ret_skipped);
bool gpu_xid_set_has(const gpu_xid_set *set, unsigned code);
void gpu_xid_set_done(gpu_xid_set *set);

/* The reader's buffer: the kernel's largest record (CONSOLE_EXT_LOG_MAX), '\n' included. */
#define GPU_KMSG_BUFFER_SIZE 8192

/* The kernel log reader. */
typedef struct gpu_kmsg gpu_kmsg;
/* `replay` is true for records that were already in the log when it was opened. */
typedef void (*gpu_xid_fn)(void *userdata, const gpu_xid *xid, bool replay);

/*
 * Opens `path` non-blocking. A character device (/dev/kmsg) is read one
 * record per read() from its oldest record; a FIFO (tests) is opened
 * read-write so that it never reports end-of-file, and a FIFO or a regular
 * file is read as a stream of records separated by '\n' (lines starting with
 * a space are continuation lines and skipped; a line is complete only at its
 * '\n'). -EISDIR for a directory, -EINVAL for any other kind of file.
 */
int gpu_kmsg_open(const char *path, gpu_kmsg **ret);
gpu_kmsg *gpu_kmsg_free(gpu_kmsg *k);
KDP_DEFINE_CLEANUP_FUNC(gpu_kmsg, gpu_kmsg_free)
int gpu_kmsg_fd(const gpu_kmsg *k);
/*
 * Reads until the log has nothing more (EAGAIN; for a regular file, its end)
 * and calls fn (may be NULL) for every Xid. EPIPE (records overwritten
 * before we read them) is counted through the seq gap that follows and
 * reading goes on; a record longer than the buffer (EINVAL) is skipped and
 * counted. Returns the number of Xids seen, or a negative errno when the fd
 * failed for good.
 *
 * `replay` is true for every Xid of the first drain after open, false after:
 * call this right after gpu_kmsg_open(), before entering the loop, so that
 * "first drain" means "already in the log at open". One warning per drain
 * reports the records lost during it.
 */
int gpu_kmsg_drain(gpu_kmsg *k, gpu_xid_fn fn, void *userdata);
/*
 * Records lost so far: gaps in seq (which cover the kernel's EPIPE and the
 * records it skipped with EINVAL) plus lines a FIFO or file held that were
 * longer than the buffer. The first record read sets the baseline.
 */
uint64_t gpu_kmsg_lost(const gpu_kmsg *k);
