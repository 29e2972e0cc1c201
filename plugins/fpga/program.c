/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * GBS files and partial reconfiguration of DFL FPGA ports (see program.h).
 */
#include <assert.h>
#include <ctype.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <libfyaml.h>
#include <linux/fpga-dfl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kdp/backend.h>

#include "program.h"

#define GBS_MAGIC_1 UINT64_C(0x414750466e6f6558)
#define GBS_MAGIC_2 UINT64_C(0x31303076534247b7)
#define GBS_HEADER_SIZE 20
#define GBS_METADATA_MAX 4095
#define AFU_ID_BUSY_TRIES 25            /* afu_id reads EBUSY while the port is disabled */
#define AFU_ID_BUSY_WAIT_US (200 * 1000)

KDP_DEFINE_CLEANUP_FUNC(struct fy_document, fy_document_destroy)

KDP_DEFINE_CLEANUP_FUNC(struct fy_diag, fy_diag_destroy)

static void diag_discard(struct fy_diag *diag, void *user, const char *buf, size_t len) {
        (void) diag;
        (void) user;
        (void) buf;
        (void) len;
}

/* Sets *reterr (when not NULL) to a formatted message; returns r. */
static int fail(int r, char **reterr, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(int r, char **reterr, const char *fmt, ...) {
        va_list ap;

        if (!reterr)
                return r;
        va_start(ap, fmt);
        if (vasprintf(reterr, fmt, ap) < 0)
                *reterr = NULL;
        va_end(ap);
        return r;
}

int fpga_program_canonical_id(const char *id, char ret[FPGA_PROGRAM_ID_MAX + 1]) {
        size_t n = 0;
        const char *end;

        while (isspace((unsigned char) *id))
                id++;
        end = id + strlen(id);
        while (end > id && isspace((unsigned char) end[-1]))
                end--;
        for (const char *p = id; p < end; p++) {
                if (*p == '-')
                        continue;
                if (!isxdigit((unsigned char) *p) || n == FPGA_PROGRAM_ID_MAX)
                        return -EINVAL;
                ret[n++] = (char) tolower((unsigned char) *p);
        }
        if (n < 32)
                return -EINVAL;
        ret[n] = '\0';
        return 0;
}

int fpga_program_gbs_path(const char *bitstream_dir, const char *interface_id, const char *afu_id, char **ret) {
        char ifid[FPGA_PROGRAM_ID_MAX + 1], afu[FPGA_PROGRAM_ID_MAX + 1];

        if (fpga_program_canonical_id(interface_id, ifid) < 0 || fpga_program_canonical_id(afu_id, afu) < 0)
                return -EINVAL;
        if (asprintf(ret, "%s/%s/%s.gbs", bitstream_dir, ifid, afu) < 0)
                return -ENOMEM;
        return 0;
}

/* The canonical ID of a string member of `map`; -ENOENT when missing, -EINVAL when no ID. */
static int json_id(struct fy_node *map, const char *key, char ret[FPGA_PROGRAM_ID_MAX + 1]) {
        struct fy_node *n = map ? fy_node_mapping_lookup_by_string(map, key, FY_NT) : NULL;
        const char *text;

        if (!n || fy_node_get_type(n) != FYNT_SCALAR)
                return -ENOENT;
        text = fy_node_get_scalar0(n);
        if (!text)
                return -ENOMEM;
        return fpga_program_canonical_id(text, ret);
}

/* Reads afu-image.interface-uuid and the one accelerator-type-uuid from the metadata. */
static int parse_metadata(const char *json, size_t len, fpga_program_gbs *g, char **reterr) {
        _cleanup_(fy_diag_destroyp) struct fy_diag *diag = NULL;
        _cleanup_(fy_document_destroyp) struct fy_document *doc = NULL;
        struct fy_diag_cfg dcfg;
        struct fy_parse_cfg pcfg;
        struct fy_node *root, *image, *clusters;
        int r;

        fy_diag_cfg_default(&dcfg);
        dcfg.fp = NULL;
        dcfg.output_fn = diag_discard;
        diag = fy_diag_create(&dcfg);
        if (!diag)
                return -ENOMEM;
        pcfg = (struct fy_parse_cfg){ .flags = FYPCF_QUIET | FYPCF_JSON_FORCE, .diag = diag };
        doc = fy_document_build_from_string(&pcfg, json, len);
        root = doc ? fy_document_root(doc) : NULL;
        if (!root || fy_node_get_type(root) != FYNT_MAPPING)
                return fail(-EBADMSG, reterr, "metadata is not a JSON object");
        image = fy_node_mapping_lookup_by_string(root, "afu-image", FY_NT);
        if (!image || fy_node_get_type(image) != FYNT_MAPPING)
                return fail(-EBADMSG, reterr, "metadata has no afu-image object");
        r = json_id(image, "interface-uuid", g->interface_id);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return fail(-EBADMSG, reterr, "metadata has %s afu-image.interface-uuid",
                            r == -ENOENT ? "no" : "a malformed");
        clusters = fy_node_mapping_lookup_by_string(image, "accelerator-clusters", FY_NT);
        if (!clusters || fy_node_get_type(clusters) != FYNT_SEQUENCE || fy_node_sequence_item_count(clusters) != 1)
                return fail(-EBADMSG, reterr, "metadata needs exactly one afu-image.accelerator-clusters entry");
        r = json_id(fy_node_sequence_get_by_index(clusters, 0), "accelerator-type-uuid", g->afu_id);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return fail(-EBADMSG, reterr, "metadata has %s accelerator-type-uuid",
                            r == -ENOENT ? "no" : "a malformed");
        return 0;
}

/*
 * Checks the header and metadata of a GBS file of `size` bytes, whose first
 * `head_size` bytes are at `head` (all of them, or at least the header and
 * the metadata), and fills g's IDs and bitstream_offset.
 */
static int parse_head(const uint8_t *head, size_t head_size, size_t size, fpga_program_gbs *g, char **reterr_reason) {
        uint64_t m1, m2;
        uint32_t len;
        int r;

        assert(head_size <= size);
        if (size < GBS_HEADER_SIZE)
                return fail(-EBADMSG, reterr_reason, "shorter (%zu bytes) than a GBS header (%d bytes)", size,
                            GBS_HEADER_SIZE);
        memcpy(&m1, head, 8);
        memcpy(&m2, head + 8, 8);
        memcpy(&len, head + 16, 4);
        m1 = le64toh(m1);
        m2 = le64toh(m2);
        len = le32toh(len);
        if (m1 != GBS_MAGIC_1 || m2 != GBS_MAGIC_2)
                return fail(-EBADMSG, reterr_reason, "not a GBS file (magic %#018llx %#018llx)",
                            (unsigned long long) m1, (unsigned long long) m2);
        if (len == 0 || len > GBS_METADATA_MAX)
                return fail(-EBADMSG, reterr_reason, "metadata length %u out of range (1 to %d)", len,
                            GBS_METADATA_MAX);
        if (size - GBS_HEADER_SIZE < len)
                return fail(-EBADMSG, reterr_reason, "truncated: %zu bytes of metadata of %u",
                            size - GBS_HEADER_SIZE, len);
        if (size - GBS_HEADER_SIZE == len)
                return fail(-EBADMSG, reterr_reason, "truncated: no bitstream after the metadata");
        assert(head_size >= GBS_HEADER_SIZE + len);
        r = parse_metadata((const char *) head + GBS_HEADER_SIZE, len, g, reterr_reason);
        if (r < 0)
                return r;
        g->bitstream_offset = GBS_HEADER_SIZE + len;
        return 0;
}

int fpga_program_gbs_parse(const uint8_t *data, size_t size, fpga_program_gbs *ret, char **reterr_reason) {
        fpga_program_gbs g = { 0 };
        int r;

        r = parse_head(data, size, size, &g, reterr_reason);
        if (r < 0)
                return r;
        g.bitstream = data + g.bitstream_offset;
        g.bitstream_size = size - g.bitstream_offset;
        *ret = g;
        return 0;
}

/* The first bytes of the file, up to the longest header and metadata; -errno. */
static int read_head(int fd, uint8_t *buf, size_t want, size_t *ret_got) {
        size_t got = 0;

        while (got < want) {
                ssize_t n = pread(fd, buf + got, want - got, (off_t) got);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                got += (size_t) n;
        }
        *ret_got = got;
        return 0;
}

int fpga_program_gbs_load(const char *path, fpga_program_gbs *ret, char **reterr_reason) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        uint8_t head[GBS_HEADER_SIZE + GBS_METADATA_MAX];
        fpga_program_gbs g = { 0 };
        struct stat st;
        size_t size, got = 0;
        void *map;
        int r;

        if (fd < 0 || fstat(fd, &st) < 0)
                return fail(-errno, reterr_reason, "cannot read %s: %s", path, strerror(errno));
        if (!S_ISREG(st.st_mode))
                return fail(-EINVAL, reterr_reason, "%s is not a regular file", path);
        if ((size_t) st.st_size > FPGA_PROGRAM_GBS_MAX)
                return fail(-EFBIG, reterr_reason, "%s is larger than %zu MiB", path, FPGA_PROGRAM_GBS_MAX >> 20);
        size = (size_t) st.st_size;
        r = read_head(fd, head, size < sizeof(head) ? size : sizeof(head), &got);
        if (r < 0)
                return fail(r, reterr_reason, "cannot read %s: %s", path, strerror(-r));
        if (got < sizeof(head))
                size = got;             /* the file ends within what was read (it may have shrunk since fstat) */
        {
                _cleanup_free_ char *why = NULL;

                r = parse_head(head, got, size, &g, &why);
                if (r < 0)
                        return fail(r, reterr_reason, "bad bitstream file %s: %s", path, why ? why : strerror(-r));
        }
        /* the page cache's pages, not kdpd's memory: the FME copies the bitstream from them */
        map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED)
                return fail(-errno, reterr_reason, "cannot map %s: %s", path, strerror(errno));
        g.map = map;
        g.map_size = size;
        g.bitstream = (const uint8_t *) map + g.bitstream_offset;
        g.bitstream_size = size - g.bitstream_offset;
        *ret = g;
        return 0;
}

void fpga_program_gbs_done(fpga_program_gbs *g) {
        if (g->map)
                (void) munmap(g->map, g->map_size);
        *g = (fpga_program_gbs){ 0 };
}

/* The canonical ID in a sysfs file; afu_id reads EBUSY while a PR or reset disables the port. */
static int read_id(const char *path, char ret[FPGA_PROGRAM_ID_MAX + 1]) {
        _cleanup_free_ char *text = NULL;
        int r = -EBUSY;

        for (int i = 0; i < AFU_ID_BUSY_TRIES && r == -EBUSY; i++) {
                if (i > 0)
                        (void) usleep(AFU_ID_BUSY_WAIT_US);
                free(text);
                text = NULL;
                r = kdp_sysfs_read_text(path, &text);
        }
        if (r < 0)
                return r;
        return fpga_program_canonical_id(text, ret);
}

/* One PR call on the FME node; the node is open only for it. */
static int port_pr(const fpga_program_card *card, const fpga_program_gbs *g) {
        struct dfl_fpga_fme_port_pr pr = {
                .argsz = sizeof(pr),
                .port_id = card->port_id,
                .buffer_size = (uint32_t) g->bitstream_size,
                .buffer_address = (uint64_t) (uintptr_t) g->bitstream,
        };
        _cleanup_close_ int fd = -1;

        if (g->bitstream_size > UINT32_MAX)
                return -EFBIG;
        /* exclusive: newer kernels only with O_EXCL, older ones on every open (docs/hardware-fpga.md §3) */
        fd = open(card->fme_node, O_RDWR | O_EXCL | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        if (ioctl(fd, DFL_FPGA_FME_PORT_PR, &pr) < 0)
                return -errno;
        return 0;
}

int fpga_program_run(const fpga_program_card *card, const char *path, const char *expected_afu_id,
                      char **reterr_reason) {
        _cleanup_(fpga_program_gbs_done) fpga_program_gbs g = { 0 };
        char compat[FPGA_PROGRAM_ID_MAX + 1], now[FPGA_PROGRAM_ID_MAX + 1], want[FPGA_PROGRAM_ID_MAX + 1];
        int r;

        r = fpga_program_gbs_load(path, &g, reterr_reason);
        if (r < 0)
                return r;
        if (expected_afu_id) {
                if (fpga_program_canonical_id(expected_afu_id, want) < 0)
                        return fail(-EINVAL, reterr_reason, "'%s' is not an AFU ID", expected_afu_id);
                if (strcmp(want, g.afu_id) != 0)
                        return fail(-EKEYREJECTED, reterr_reason,
                                    "bitstream %s carries AFU %s, not the declared AFU %s (card %s)", path,
                                    g.afu_id, want, card->name);
        }
        r = read_id(card->compat_id_path, compat);
        if (r < 0)
                return fail(r, reterr_reason, "cannot read the interface ID of card %s from %s: %s", card->name,
                            card->compat_id_path, strerror(-r));
        if (strcmp(compat, g.interface_id) != 0)
                return fail(-ENOEXEC, reterr_reason,
                            "bitstream %s (AFU %s) is built for interface %s, card %s has interface %s", path,
                            g.afu_id, g.interface_id, card->name, compat);
        r = port_pr(card, &g);
        if (r == -EBUSY)
                return fail(r, reterr_reason,
                            "card %s is busy: %s is held open or reconfiguring (programming AFU %s from %s)",
                            card->name, card->fme_node, g.afu_id, path);
        if (r < 0)
                return fail(r, reterr_reason,
                            "programming card %s port %u with AFU %s (interface %s) from %s through %s failed: %s",
                            card->name, card->port_id, g.afu_id, g.interface_id, path, card->fme_node,
                            strerror(-r));
        r = read_id(card->afu_id_path, now);
        if (r < 0)
                return fail(r, reterr_reason, "cannot read the AFU of card %s port %u from %s after programming: %s",
                            card->name, card->port_id, card->afu_id_path, strerror(-r));
        if (strcmp(now, g.afu_id) != 0)
                return fail(-EIO, reterr_reason,
                            "card %s port %u shows AFU %s after programming AFU %s from %s", card->name,
                            card->port_id, now, g.afu_id, path);
        return 0;
}
