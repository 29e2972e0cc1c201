/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Programming an Intel DFL FPGA port: GBS files and partial reconfiguration
 * through the card's FME node.
 *
 *   bitstream_dir/<interface_id>/<afu_id>.gbs     fpga_program_gbs_path()
 *        │ fpga_program_gbs_load(): header and metadata read (pread) and checked,
 *        │ then the file mapped read-only: the raw bitstream is never copied
 *        ▼
 *   interface_id == the PR region's compat_id ? ── no ─► -ENOEXEC
 *        │ open /dev/dfl-fme.N (O_RDWR|O_EXCL|O_CLOEXEC; EBUSY: someone holds it)
 *        │ ioctl DFL_FPGA_FME_PORT_PR {port_id, raw bitstream}     (seconds)
 *        │ close: the FME is free again
 *        ▼
 *   the port's afu_id == the file's AFU ID ? ── no ─► -EIO
 *
 * A GBS file (Intel's "green bitstream") is a 20-byte header (two little-endian
 * 64-bit magic words, 0x414750466e6f6558 and 0x31303076534247b7, then the
 * metadata's length as a little-endian 32-bit number, 1 to 4095), the metadata
 * (JSON: afu-image.interface-uuid, and afu-image.accelerator-clusters with
 * exactly one entry, whose accelerator-type-uuid is the AFU ID), and the raw
 * bitstream up to the end of the file, which is what the FME is given.
 *
 * IDs are canonical throughout: lower-case hex, no dashes (a dashed UUID is
 * accepted where a user writes one), 32 to 64 digits.
 *
 * Nothing here keeps state or logs: each call reads what it needs and hands
 * back an error code and, on failure, a message for the operator that names the
 * file, the card and both IDs. fpga_program_run() blocks for as long as the
 * hardware programs (seconds): call it where that is allowed (the backend's
 * PreStart runs it through kdp_backend_run_unlocked()). It never holds the FME
 * node open longer than the one ioctl (docs/hardware-fpga.md §3: an open FME blocks
 * every other user).
 *
 * Memory: the bitstream (tens of MiB, up to FPGA_PROGRAM_GBS_MAX) is handed to
 * the FME straight from a MAP_PRIVATE, PROT_READ mapping of the file, so its
 * pages are the page cache's (file pages, reclaimable), never kdpd's anonymous
 * memory; the kernel copies it into a buffer of its own for the PR. A file
 * truncated while it programs makes that copy fault: the PR fails with EFAULT.
 * Replace a bitstream by rename(), which leaves a mapping on the old file.
 *
 * Ownership: a fpga_program_gbs from fpga_program_gbs_load() owns its mapping
 * (fpga_program_gbs_done() unmaps it); one from fpga_program_gbs_parse()
 * borrows the caller's image. A card description is borrowed for the call;
 * every char ** result is the caller's to free().
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <kdp/cleanup.h>

#define FPGA_PROGRAM_ID_MAX 64
#define FPGA_PROGRAM_GBS_MAX ((size_t) 512 << 20)   /* larger files are refused (-EFBIG) */

typedef struct fpga_program_gbs {
        char interface_id[FPGA_PROGRAM_ID_MAX + 1];
        char afu_id[FPGA_PROGRAM_ID_MAX + 1];
        const uint8_t *bitstream;       /* the raw bitstream, in `map` or the parsed image */
        size_t bitstream_size;
        size_t bitstream_offset;        /* where it starts in the file: after the header and metadata */
        void *map;                      /* owned: the file mapped read-only (load), or NULL (parse) */
        size_t map_size;
} fpga_program_gbs;

/* One card's PR target, as the backend found it in sysfs and /dev; all borrowed. */
typedef struct fpga_program_card {
        const char *name;               /* for messages: the card's PCI address */
        const char *fme_node;           /* "/dev/dfl-fme.0" (under the dev root) */
        const char *compat_id_path;     /* the PR region's compat_id in sysfs */
        const char *afu_id_path;        /* the port's afu_id in sysfs */
        uint32_t port_id;               /* the port's `id` within the card */
} fpga_program_card;

/*
 * Canonical form of an ID into `ret` (FPGA_PROGRAM_ID_MAX + 1 bytes): spaces
 * around it trimmed, dashes dropped, lower case. -EINVAL unless 32 to 64 hex digits.
 */
int fpga_program_canonical_id(const char *id, char ret[FPGA_PROGRAM_ID_MAX + 1]);

/* "<bitstream_dir>/<interface_id>/<afu_id>.gbs" of canonical IDs (free()); -EINVAL for a bad ID. */
int fpga_program_gbs_path(const char *bitstream_dir, const char *interface_id, const char *afu_id, char **ret);

/*
 * Parses a GBS image in memory (`size` bytes at `data`, borrowed: `ret`'s
 * bitstream points into it). -EBADMSG for a malformed file (bad magic,
 * truncated, metadata length out of range, metadata not the JSON described
 * above, no raw bitstream) with *reterr_reason saying what is wrong.
 */
int fpga_program_gbs_parse(const uint8_t *data, size_t size, fpga_program_gbs *ret, char **reterr_reason);

/*
 * Checks the header and metadata of the file at `path` (only they are read),
 * then maps it: the -errno of open/pread/mmap, -EFBIG, or as _parse().
 */
int fpga_program_gbs_load(const char *path, fpga_program_gbs *ret, char **reterr_reason);
void fpga_program_gbs_done(fpga_program_gbs *g);

/*
 * Programs the GBS file at `path` into the card's port and checks the result.
 * `expected_afu_id` (may be NULL) is the AFU the file must carry. Returns 0 or:
 *   the errors of fpga_program_gbs_load(), with the file named;
 *   -EKEYREJECTED  the file carries another AFU than expected;
 *   -ENOEXEC       the file's interface ID is not the region's compat_id;
 *   -EBUSY         the FME node or the port is busy (held open, or a PR in progress);
 *   -EIO           the PR failed (the hardware saw an error; the fpga_manager's
 *                  status says which), or afu_id shows another AFU afterwards;
 *   the -errno of reading compat_id/afu_id or of opening the FME node.
 * *reterr_reason names the file, the card, the port and both IDs.
 */
int fpga_program_run(const fpga_program_card *card, const char *path, const char *expected_afu_id,
                      char **reterr_reason);
