/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * plugins/fpga/program.c: GBS files (valid, bad magic, truncated, bad metadata), the checks
 * before a PR (declared AFU, interface ID against compat_id) with the messages an operator reads,
 * and, run under sim-node on tests/sim-node/fpga-node.sh's node (KDP_TEST_FPGA_SIM=1, from
 * sim-node/fpga-program), real PR calls through the emulated FME nodes: good, failing (EIO), slow,
 * and two cards at once. The GBS files are written by the tests.
 */
#include <check.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kdp/backend.h>
#include <kdp/cleanup.h>

#include "program.h"

#include "kdp-test.h"

#define D5005 "bfac4d851ee856fe8c95865ce1bbaa2d"
#define DCP12 "69528db6eb31577a8c3668f9faa081f6"
#define NLB0 "d8424dc4a4a3c413f89e433683f9040b"
#define NLB3 "f7df405cbd7acf7222f144b0b93acd18"

/* A GBS image: header, `json` as metadata (its length as `len`, or strlen when len is 0), then `raw`. */
static uint8_t *gbs_image(uint64_t magic1, const char *json, uint32_t len, const char *raw, size_t *ret_size) {
        size_t jl = strlen(json), rl = strlen(raw), size = 20 + jl + rl;
        uint8_t *d = malloc(size + 1);
        uint64_t m1 = htole64(magic1), m2 = htole64(UINT64_C(0x31303076534247b7));
        uint32_t l = htole32(len ? len : (uint32_t) jl);

        ck_assert_ptr_nonnull(d);
        memcpy(d, &m1, 8);
        memcpy(d + 8, &m2, 8);
        memcpy(d + 16, &l, 4);
        memcpy(d + 20, json, jl);
        memcpy(d + 20 + jl, raw, rl);
        *ret_size = size;
        return d;
}

#define MAGIC1 UINT64_C(0x414750466e6f6558)

/* The metadata of an image for interface `ifid` carrying AFU `afu` (both as a user writes them). */
static char *metadata(const char *ifid, const char *afu) {
        char *j = NULL;

        ck_assert_int_ge(asprintf(&j,
                                  "{\"version\": 1, \"platform-name\": \"pac_s10_dc\", \"afu-image\": "
                                  "{\"magic-no\": 488605312, \"interface-uuid\": \"%s\", \"power\": 0, "
                                  "\"accelerator-clusters\": [{\"total-contexts\": 1, \"name\": \"nlb\", "
                                  "\"accelerator-type-uuid\": \"%s\"}]}}",
                                  ifid, afu),
                         0);
        return j;
}

/* The raw bitstream sim-node's emulated hardware takes the AFU ID from. */
static char *sim_raw(const char *afu) {
        char *r = NULL;

        ck_assert_int_ge(asprintf(&r, "SIM-BITSTREAM afu_id=%s\n\x01\x02\x03", afu), 0);
        return r;
}

/* Writes a valid GBS file for (ifid, afu) under dir (or a temp file when dir is NULL); returns its path. */
static char *write_gbs(const char *dir, const char *ifid, const char *afu) {
        _cleanup_free_ char *json = metadata(ifid, afu), *raw = sim_raw(afu), *path = NULL;
        _cleanup_free_ uint8_t *img = NULL;
        size_t size;

        img = gbs_image(MAGIC1, json, 0, raw, &size);
        if (!dir)
                return kdp_test_write_temp("gbs", ".gbs", (const char *) img, size);
        ck_assert_int_eq(fpga_program_gbs_path(dir, ifid, afu, &path), 0);
        {
                _cleanup_free_ char *sub = NULL;
                char ifc[FPGA_PROGRAM_ID_MAX + 1];
                FILE *f;

                ck_assert_int_eq(fpga_program_canonical_id(ifid, ifc), 0);
                ck_assert_int_ge(asprintf(&sub, "%s/%s", dir, ifc), 0);
                (void) mkdir(sub, 0755);
                f = fopen(path, "we");
                ck_assert_ptr_nonnull(f);
                ck_assert_uint_eq(fwrite(img, 1, size, f), size);
                ck_assert_int_eq(fclose(f), 0);
        }
        return KDP_TAKE_PTR(path);
}

/* ---- IDs and paths ---- */

START_TEST(test_fpga_program_canonical_id_trims_drops_dashes_lowers) {
        char id[FPGA_PROGRAM_ID_MAX + 1];

        ck_assert_int_eq(fpga_program_canonical_id(" BFAC4D85-1EE8-56FE-8C95-865CE1BBAA2D\n", id), 0);
        ck_assert_str_eq(id, D5005);
        ck_assert_int_eq(fpga_program_canonical_id("40007c0623210742000ebc58df6f5343e668b03a", id), 0);
        ck_assert_str_eq(id, "40007c0623210742000ebc58df6f5343e668b03a");
        ck_assert_int_eq(fpga_program_canonical_id("bfac4d851ee856fe8c95865ce1bbaa2", id), -EINVAL);   /* 31 */
        ck_assert_int_eq(fpga_program_canonical_id("bfac4d851ee856fe8c95865ce1bbaa2g", id), -EINVAL);
        ck_assert_int_eq(fpga_program_canonical_id("../../../etc/passwd0000000000000000000", id), -EINVAL);
        ck_assert_int_eq(fpga_program_canonical_id("", id), -EINVAL);
}
END_TEST

START_TEST(test_fpga_program_gbs_path_is_interface_dir_and_afu_file) {
        _cleanup_free_ char *p = NULL;

        ck_assert_int_eq(fpga_program_gbs_path("/srv/fpga", "BFAC4D85-1EE8-56FE-8C95-865CE1BBAA2D", NLB0, &p), 0);
        ck_assert_str_eq(p, "/srv/fpga/" D5005 "/" NLB0 ".gbs");
        ck_assert_int_eq(fpga_program_gbs_path("/srv/fpga", "../x", NLB0, &p), -EINVAL);
}
END_TEST

/* ---- GBS files ---- */

START_TEST(test_fpga_program_gbs_parse_reads_ids_and_bitstream) {
        _cleanup_free_ char *json = metadata("BFAC4D85-1EE8-56FE-8C95-865CE1BBAA2D", "D8424DC4A4A3C413F89E433683F9040B");
        _cleanup_(fpga_program_gbs_done) fpga_program_gbs g = { 0 };
        _cleanup_free_ uint8_t *img = NULL;
        size_t size;

        img = gbs_image(MAGIC1, json, 0, "RAW", &size);
        ck_assert_int_eq(fpga_program_gbs_parse(img, size, &g, NULL), 0);
        ck_assert_str_eq(g.interface_id, D5005);
        ck_assert_str_eq(g.afu_id, NLB0);
        ck_assert_uint_eq(g.bitstream_offset, 20 + strlen(json));
        ck_assert_ptr_eq(g.bitstream, img + g.bitstream_offset);      /* borrowed, not copied */
        ck_assert_uint_eq(g.bitstream_size, 3);
        ck_assert_mem_eq(g.bitstream, "RAW", 3);
        ck_assert_ptr_null(g.map);
}
END_TEST

typedef struct bad_case {
        uint64_t magic1;
        const char *json;               /* NULL: a valid one */
        uint32_t len;                   /* 0: the JSON's length */
        const char *raw;
        size_t cut;                     /* >0: the image cut to this size */
        const char *reason;
} bad_case;

START_TEST(test_fpga_program_gbs_parse_refuses_malformed_files_saying_why) {
        _cleanup_free_ char *valid = metadata(D5005, NLB0);
        const bad_case cases[] = {
                { 0x1122334455667788, NULL, 0, "RAW", 0,
                  "not a GBS file (magic 0x1122334455667788 0x31303076534247b7)" },
                { MAGIC1, NULL, 0, "RAW", 12, "shorter (12 bytes) than a GBS header (20 bytes)" },
                { MAGIC1, NULL, 0, "RAW", 60, NULL },   /* reason computed below */
                { MAGIC1, NULL, 0, "", 0, "truncated: no bitstream after the metadata" },
                { MAGIC1, NULL, 4096, "RAW", 0, "metadata length 4096 out of range (1 to 4095)" },
                { MAGIC1, "[1, 2]", 0, "RAW", 0, "metadata is not a JSON object" },
                { MAGIC1, "{\"afu-image\": ", 0, "RAW", 0, "metadata is not a JSON object" },
                { MAGIC1, "{\"version\": 1}", 0, "RAW", 0, "metadata has no afu-image object" },
                { MAGIC1, "{\"afu-image\": {\"accelerator-clusters\": []}}", 0, "RAW", 0,
                  "metadata has no afu-image.interface-uuid" },
                { MAGIC1, "{\"afu-image\": {\"interface-uuid\": \"xyz\"}}", 0, "RAW", 0,
                  "metadata has a malformed afu-image.interface-uuid" },
                { MAGIC1, "{\"afu-image\": {\"interface-uuid\": \"" D5005 "\", \"accelerator-clusters\": []}}", 0,
                  "RAW", 0, "metadata needs exactly one afu-image.accelerator-clusters entry" },
                { MAGIC1, "{\"afu-image\": {\"interface-uuid\": \"" D5005 "\", \"accelerator-clusters\": [{}]}}", 0,
                  "RAW", 0, "metadata has no accelerator-type-uuid" },
        };

        for (size_t i = 0; i < KDP_ELEMENTSOF(cases); i++) {
                const bad_case *c = &cases[i];
                _cleanup_free_ char *why = NULL, *expect = NULL;
                fpga_program_gbs g = { .bitstream_size = 4242 };
                size_t size;
                uint8_t *img = gbs_image(c->magic1, c->json ? c->json : valid, c->len, c->raw, &size);

                if (c->cut)
                        size = c->cut;
                ck_assert_msg(fpga_program_gbs_parse(img, size, &g, &why) == -EBADMSG, "case %zu", i);
                if (!c->reason)
                        ck_assert_int_ge(asprintf(&expect, "truncated: 40 bytes of metadata of %zu", strlen(valid)), 0);
                ck_assert_str_eq(why, c->reason ? c->reason : expect);
                ck_assert_uint_eq(g.bitstream_size, 4242);      /* untouched */
                free(img);
        }
}
END_TEST

START_TEST(test_fpga_program_gbs_load_names_the_file) {
        _cleanup_(kdp_test_unlink_freep) char *good = write_gbs(NULL, D5005, NLB3);
        _cleanup_(kdp_test_unlink_freep) char *junk = kdp_test_write_temp("gbs", ".gbs", "not a gbs at all", 16);
        _cleanup_(fpga_program_gbs_done) fpga_program_gbs g = { 0 };
        _cleanup_free_ char *why = NULL, *expect = NULL;

        ck_assert_int_eq(fpga_program_gbs_load(good, &g, NULL), 0);
        ck_assert_str_eq(g.afu_id, NLB3);
        ck_assert_ptr_nonnull(g.map);
        ck_assert_ptr_eq(g.bitstream, (const uint8_t *) g.map + g.bitstream_offset);
        ck_assert_uint_eq(g.bitstream_offset + g.bitstream_size, g.map_size);
        ck_assert_int_eq(fpga_program_gbs_load(junk, &g, &why), -EBADMSG);
        ck_assert_int_ge(asprintf(&expect, "bad bitstream file %s: shorter (16 bytes) than a GBS header (20 bytes)",
                                  junk), 0);
        ck_assert_str_eq(why, expect);
        free(why);
        ck_assert_int_eq(fpga_program_gbs_load("/nonexistent/x.gbs", &g, &why), -ENOENT);
        ck_assert_str_eq(why, "cannot read /nonexistent/x.gbs: No such file or directory");
}
END_TEST

/* ---- the checks before a PR ---- */

typedef struct fake_card {
        char *dir;
        char *compat, *afu, *fme;
        fpga_program_card card;
} fake_card;

/* A card whose files are plain temp files: the FME "node" is a regular file (ioctl: ENOTTY). */
static void fake_card_init(fake_card *f, const char *compat, const char *afu) {
        FILE *w;

        f->dir = strdup("/tmp/kdp-test-fpga-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(f->dir));
        ck_assert_int_ge(asprintf(&f->compat, "%s/compat_id", f->dir), 0);
        ck_assert_int_ge(asprintf(&f->afu, "%s/afu_id", f->dir), 0);
        ck_assert_int_ge(asprintf(&f->fme, "%s/dfl-fme.0", f->dir), 0);
        if (compat) {
                w = fopen(f->compat, "we");
                ck_assert_ptr_nonnull(w);
                fprintf(w, "%s\n", compat);
                ck_assert_int_eq(fclose(w), 0);
        }
        w = fopen(f->afu, "we");
        ck_assert_ptr_nonnull(w);
        fprintf(w, "%s\n", afu);
        ck_assert_int_eq(fclose(w), 0);
        w = fopen(f->fme, "we");
        ck_assert_ptr_nonnull(w);
        ck_assert_int_eq(fclose(w), 0);
        f->card = (fpga_program_card){ .name = "0000:3b:00.0", .fme_node = f->fme, .compat_id_path = f->compat,
                                       .afu_id_path = f->afu, .port_id = 0 };
}

static void fake_card_done(fake_card *f) {
        if (!f->dir)
                return;
        (void) unlink(f->compat);
        (void) unlink(f->afu);
        (void) unlink(f->fme);
        (void) rmdir(f->dir);
        free(f->dir);
        free(f->compat);
        free(f->afu);
        free(f->fme);
}

/* `text` with {gbs}, {compat} and {fme} replaced by those paths (free()). */
static char *fill(const char *text, const char *gbs, const fake_card *f) {
        char *out = NULL;
        size_t size = 0;
        FILE *m = open_memstream(&out, &size);

        ck_assert_ptr_nonnull(m);
        while (*text) {
                if (strncmp(text, "{gbs}", 5) == 0)
                        fputs(gbs, m), text += 5;
                else if (strncmp(text, "{compat}", 8) == 0)
                        fputs(f->compat, m), text += 8;
                else if (strncmp(text, "{fme}", 5) == 0)
                        fputs(f->fme, m), text += 5;
                else
                        fputc(*text++, m);
        }
        ck_assert_int_eq(fclose(m), 0);
        return out;
}

typedef struct refusal {
        const char *file_ifid, *file_afu;       /* what the GBS file carries */
        const char *compat;                     /* the card's compat_id; NULL: none */
        const char *expected_afu;
        int r;
        const char *reason;
} refusal;

/* The FME "node" is a plain file, so a PR that gets that far fails with ENOTTY (not under sim-node). */
START_TEST(test_fpga_program_run_refuses_with_a_message_naming_file_card_and_ids) {
        const refusal cases[] = {
                { DCP12, NLB3, D5005, NLB3, -ENOEXEC,
                  "bitstream {gbs} (AFU " NLB3 ") is built for interface " DCP12 ", card 0000:3b:00.0 has interface "
                  D5005 },
                { D5005, NLB0, D5005, "F7DF405C-BD7A-CF72-22F1-44B0B93ACD18", -EKEYREJECTED,
                  "bitstream {gbs} carries AFU " NLB0 ", not the declared AFU " NLB3 " (card 0000:3b:00.0)" },
                { D5005, NLB3, NULL, NULL, -ENOENT,
                  "cannot read the interface ID of card 0000:3b:00.0 from {compat}: No such file or directory" },
                { D5005, NLB3, D5005, NULL, -ENOTTY,
                  "programming card 0000:3b:00.0 port 0 with AFU " NLB3 " (interface " D5005 ") from {gbs} through "
                  "{fme} failed: Inappropriate ioctl for device" },
        };

        for (size_t i = 0; i < KDP_ELEMENTSOF(cases); i++) {
                const refusal *c = &cases[i];
                _cleanup_(kdp_test_unlink_freep) char *gbs = write_gbs(NULL, c->file_ifid, c->file_afu);
                _cleanup_(fake_card_done) fake_card f = { 0 };
                _cleanup_free_ char *why = NULL, *expect = NULL;

                if (c->r == -ENOTTY && getenv("UMOCKDEV_DIR"))
                        continue;       /* under sim-node the preload answers for a plain file too */
                fake_card_init(&f, c->compat, NLB0);
                ck_assert_msg(fpga_program_run(&f.card, gbs, c->expected_afu, &why) == c->r, "case %zu: %s", i, why);
                expect = fill(c->reason, gbs, &f);
                ck_assert_str_eq(why, expect);
        }
}
END_TEST

/* ---- on sim-node's emulated FME nodes ---- */

/* Card n of the fixture: its container region is region<2n>, its PR region region<2n+1>. */
static fpga_program_card sim_card(int n, char *buf_compat, char *buf_afu, char *buf_fme, char *buf_name) {
        sprintf(buf_compat, "/sys/devices/pci0000:3b/0000:3b:0%d.0/fpga_region/region%d/dfl-fme.%d/"
                            "dfl-fme-region.%d/fpga_region/region%d/compat_id", n, 2 * n, n, n, 2 * n + 1);
        sprintf(buf_afu, "/sys/devices/pci0000:3b/0000:3b:0%d.0/fpga_region/region%d/dfl-port.%d/afu_id", n,
                2 * n, n);
        sprintf(buf_fme, "/dev/dfl-fme.%d", n);
        sprintf(buf_name, "0000:3b:0%d.0", n);
        return (fpga_program_card){ .name = buf_name, .fme_node = buf_fme, .compat_id_path = buf_compat,
                                    .afu_id_path = buf_afu, .port_id = 0 };
}

typedef struct sim_job {
        int card;
        const char *gbs;
        int r;
        char *why;
        int done;                       /* __atomic */
} sim_job;

static void *sim_program(void *userdata) {
        sim_job *j = userdata;
        char c[256], a[256], f[64], n[32];
        fpga_program_card card = sim_card(j->card, c, a, f, n);

        j->r = fpga_program_run(&card, j->gbs, NULL, &j->why);
        __atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
        return NULL;
}

/* A command to sim-node's control FIFO (KDP_TEST_FPGA_CTL). */
static void sim_control(const char *line) {
        const char *path = getenv("KDP_TEST_FPGA_CTL");
        _cleanup_close_ int fd = -1;

        ck_assert_msg(path, "KDP_TEST_FPGA_CTL is not set");
        fd = open(path, O_WRONLY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, line, strlen(line)), (ssize_t) strlen(line));
}

static char *sim_afu(int n) {
        char c[256], a[256], f[64], nm[32];
        fpga_program_card card = sim_card(n, c, a, f, nm);
        char *text = NULL;

        ck_assert_int_eq(kdp_sysfs_read_text(card.afu_id_path, &text), 0);
        return text;
}

static char *sim_dir;

static void sim_setup(void) {
        sim_dir = strdup("/tmp/kdp-test-fpga-lib-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(sim_dir));
}

static void sim_teardown(void) {
        kdp_test_rm_rfp(&sim_dir);
}

START_TEST(test_fpga_program_run_programs_a_good_card_and_reads_the_afu_back) {
        _cleanup_free_ char *gbs = write_gbs(sim_dir, D5005, NLB3), *before = sim_afu(0), *after = NULL;
        sim_job j = { .card = 0, .gbs = gbs };

        ck_assert_str_eq(before, NLB0);
        sim_program(&j);
        ck_assert_msg(j.r == 0, "%d: %s", j.r, j.why);
        after = sim_afu(0);
        ck_assert_str_eq(after, NLB3);
}
END_TEST

START_TEST(test_fpga_program_run_reports_eio_of_a_failing_card) {
        _cleanup_free_ char *gbs = write_gbs(sim_dir, D5005, NLB3), *after = NULL, *expect = NULL;
        sim_job j = { .card = 1, .gbs = gbs };

        sim_program(&j);
        ck_assert_int_eq(j.r, -EIO);
        ck_assert_int_ge(asprintf(&expect, "programming card 0000:3b:01.0 port 0 with AFU " NLB3 " (interface "
                                  D5005 ") from %s through /dev/dfl-fme.1 failed: Input/output error", gbs), 0);
        ck_assert_str_eq(j.why, expect);
        free(j.why);
        after = sim_afu(1);
        ck_assert_str_eq(after, NLB0);
}
END_TEST

START_TEST(test_fpga_program_run_waits_for_a_slow_card_while_another_is_programmed) {
        _cleanup_free_ char *slow = write_gbs(sim_dir, D5005, NLB3), *fast = NULL, *a2 = NULL, *a0 = NULL;
        sim_job j2 = { .card = 2, .gbs = slow }, j0 = { .card = 0 };
        pthread_t t;

        fast = write_gbs(sim_dir, D5005, NLB0);
        j0.gbs = fast;
        ck_assert_int_eq(pthread_create(&t, NULL, sim_program, &j2), 0);
        sim_program(&j0);
        ck_assert_int_eq(pthread_join(t, NULL), 0);
        ck_assert_msg(j2.r == 0, "%d: %s", j2.r, j2.why);
        ck_assert_msg(j0.r == 0, "%d: %s", j0.r, j0.why);
        a2 = sim_afu(2);
        a0 = sim_afu(0);
        ck_assert_str_eq(a2, NLB3);
        ck_assert_str_eq(a0, NLB0);
}
END_TEST

/*
 * Card 3 holds every PR call until told: of two programmings at once, the later call finds the
 * card busy (EBUSY) and says so; the first ends when sim-node lets it.
 */
START_TEST(test_fpga_program_run_reports_a_busy_card) {
        _cleanup_free_ char *gbs = write_gbs(sim_dir, D5005, NLB3), *expect = NULL, *after = NULL;
        sim_job j[2] = { { .card = 3, .gbs = gbs }, { .card = 3, .gbs = gbs } };
        pthread_t t[2];
        int waited_ms = 0;
        sim_job *busy, *ok;

        for (int i = 0; i < 2; i++)
                ck_assert_int_eq(pthread_create(&t[i], NULL, sim_program, &j[i]), 0);
        while (!__atomic_load_n(&j[0].done, __ATOMIC_ACQUIRE) && !__atomic_load_n(&j[1].done, __ATOMIC_ACQUIRE)) {
                ck_assert_msg(waited_ms < 100000, "neither programming ended");
                (void) usleep(10 * 1000);
                waited_ms += 10;
        }
        sim_control("fpga-pr dfl-fme.3 good 0\n");
        for (int i = 0; i < 2; i++)
                ck_assert_int_eq(pthread_join(t[i], NULL), 0);
        busy = j[0].r == -EBUSY ? &j[0] : &j[1];
        ok = busy == &j[0] ? &j[1] : &j[0];
        ck_assert_msg(busy->r == -EBUSY, "%d: %s / %d: %s", j[0].r, j[0].why, j[1].r, j[1].why);
        ck_assert_msg(ok->r == 0, "%d: %s", ok->r, ok->why);
        ck_assert_int_ge(asprintf(&expect, "card 0000:3b:03.0 is busy: /dev/dfl-fme.3 is held open or reconfiguring "
                                           "(programming AFU " NLB3 " from %s)", gbs), 0);
        ck_assert_str_eq(busy->why, expect);
        free(busy->why);
        after = sim_afu(3);
        ck_assert_str_eq(after, NLB3);
}
END_TEST

static Suite *fpga_program_suite(void) {
        Suite *s = suite_create("fpga-program");
        TCase *tc;

        tc = tcase_create("ids");
        tcase_add_test(tc, test_fpga_program_canonical_id_trims_drops_dashes_lowers);
        tcase_add_test(tc, test_fpga_program_gbs_path_is_interface_dir_and_afu_file);
        suite_add_tcase(s, tc);

        tc = tcase_create("gbs");
        tcase_add_test(tc, test_fpga_program_gbs_parse_reads_ids_and_bitstream);
        tcase_add_test(tc, test_fpga_program_gbs_parse_refuses_malformed_files_saying_why);
        tcase_add_test(tc, test_fpga_program_gbs_load_names_the_file);
        suite_add_tcase(s, tc);

        tc = tcase_create("checks");
        tcase_add_test(tc, test_fpga_program_run_refuses_with_a_message_naming_file_card_and_ids);
        suite_add_tcase(s, tc);

        if (getenv("KDP_TEST_FPGA_SIM")) {
                tc = tcase_create("sim-node");
                tcase_add_checked_fixture(tc, sim_setup, sim_teardown);
                tcase_set_timeout(tc, 120);
                tcase_add_test(tc, test_fpga_program_run_programs_a_good_card_and_reads_the_afu_back);
                tcase_add_test(tc, test_fpga_program_run_reports_eio_of_a_failing_card);
                tcase_add_test(tc, test_fpga_program_run_waits_for_a_slow_card_while_another_is_programmed);
                tcase_add_test(tc, test_fpga_program_run_reports_a_busy_card);
                suite_add_tcase(s, tc);
        }
        return s;
}

int main(void) {
        return kdp_test_run(fpga_program_suite());
}
