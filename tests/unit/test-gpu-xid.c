/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <kdp/cleanup.h>

#include "xid.h"

#include "kdp-test.h"

/* ---- parsing records ---- */

typedef struct xid_case {
        const char *line;
        int r;
        const char *bdf;
        unsigned code;
        unsigned cause;
        int gi, ci;
        uint64_t seq, ts_usec;
} xid_case;

static void check_case(const xid_case *c) {
        gpu_xid x = { .code = 12345 };
        int r;

        r = gpu_xid_parse_record(c->line, strlen(c->line), &x);
        ck_assert_msg(r == c->r, "'%s': %d, expected %d", c->line, r, c->r);
        if (r != 1) {
                ck_assert_uint_eq(x.code, 12345);       /* untouched */
                return;
        }
        ck_assert_str_eq(x.bdf, c->bdf);
        ck_assert_uint_eq(x.code, c->code);
        ck_assert_uint_eq(x.cause, c->cause);
        ck_assert_int_eq(x.gpu_instance, c->gi);
        ck_assert_int_eq(x.compute_instance, c->ci);
        ck_assert_uint_eq(x.seq, c->seq);
        ck_assert_uint_eq(x.ts_usec, c->ts_usec);
}

/* docs/hardware-gpu.md §3.4 "Examples", verbatim. */
START_TEST(test_gpu_xid_parse_record_reads_every_example_of_the_fact_sheet) {
        static const xid_case cases[] = {
                { .line = "4,8811,91234567890,c;NVRM: GPU at PCI:0000:18:00: "
                          "GPU-5f1b3a7e-0c2d-4e8f-9a61-3b7c2d9e0f14" },
                { "4,8812,91234567921,c;NVRM: Xid (PCI:0000:18:00): 13, pid=4242, name=python3, Graphics SM Warp "
                  "Exception on (GPC 1, TPC 2, SM 0): Out Of Range Address",
                  1, "0000:18:00.0", 13, 0, -1, -1, 8812, 91234567921 },
                { "4,8813,91234570001,c;NVRM: Xid (PCI:0000:18:00): 31, pid=4242, name=python3, MMU Fault: ENGINE "
                  "0x40 (GRAPHICS GPC1) faulted @ 0x7f12_34560000. Fault is of type 0x2 (FAULT_PTE). Access type "
                  "is 0x0 (VIRT_READ)",
                  1, "0000:18:00.0", 31, 0, -1, -1, 8813, 91234570001 },
                { "4,8814,91234570100,c;NVRM: Xid (PCI:0000:18:00): 43, pid=4242, name=python3, Ch 00000018",
                  1, "0000:18:00.0", 43, 0, -1, -1, 8814, 91234570100 },
                { "4,8815,91234570200,c;NVRM: Xid (PCI:0000:18:00): 45, pid=4242, name=python3, Ch 00000018 caused "
                  "by previous Xid 79",
                  1, "0000:18:00.0", 45, 79, -1, -1, 8815, 91234570200 },
                { "4,8816,91234570300,c;NVRM: Xid (PCI:0000:19:00): 48, pid=5151, name=train, An uncorrectable "
                  "double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, "
                  "subpartition 0.",
                  1, "0000:19:00.0", 48, 0, -1, -1, 8816, 91234570300 },
                { "4,8817,91234570400,c;NVRM: Xid (PCI:0000:19:00): 63, pid=1896, Row Remapper: New row marked for "
                  "remapping, reset gpu to activate.",
                  1, "0000:19:00.0", 63, 0, -1, -1, 8817, 91234570400 },
                { "4,8818,91234570500,c;NVRM: Xid (PCI:0000:19:00): 64, pid=1896, Row Remapper: Failed to remap "
                  "row, reset gpu to activate.",
                  1, "0000:19:00.0", 64, 0, -1, -1, 8818, 91234570500 },
                { "4,8819,91234570600,c;NVRM: Xid (PCI:0000:3a:00): 74, NVLink: failed to train link 3 to remote "
                  "PCI:0000:3b:00",
                  1, "0000:3a:00.0", 74, 0, -1, -1, 8819, 91234570600 },
                { "4,8820,91234570700,c;NVRM: Xid (PCI:0000:3a:00): 79, pid=0, GPU has fallen off the bus.",
                  1, "0000:3a:00.0", 79, 0, -1, -1, 8820, 91234570700 },
                { .line = "4,8821,91234570701,c;NVRM: GPU 0000:3a:00.0: GPU has fallen off the bus." },
                { "4,8822,91234570800,c;NVRM: Xid (PCI:0000:9a:00): 92, pid=0, High single-bit ECC error rate "
                  "detected",
                  1, "0000:9a:00.0", 92, 0, -1, -1, 8822, 91234570800 },
                { "4,8823,91234570900,c;NVRM: Xid (PCI:0000:9a:00 GPU-I:05): 94, pid=7194, Contained: CE User "
                  "Channel (0x9). RST: No, D-RST: No",
                  1, "0000:9a:00.0", 94, 0, 5, -1, 8823, 91234570900 },
                { "4,8824,91234571000,c;NVRM: Xid (PCI:0000:9a:00): 95, pid=7062, Uncontained: LTC TAG (0x2, 0x1). "
                  "RST: Yes, D-RST: No",
                  1, "0000:9a:00.0", 95, 0, -1, -1, 8824, 91234571000 },
                { "4,8825,91234571100,c;NVRM: Xid (PCI:0000:ba:00 GPU-I:01 GPU-CI:00): 109, pid=3003, name=infer, "
                  "Ch 00000010, errorString CTX SWITCH TIMEOUT, Info 0x1c001",
                  1, "0000:ba:00.0", 109, 0, 1, 0, 8825, 91234571100 },
                { "4,8826,91234571200,c;NVRM: Xid (PCI:0000:bb:00): 119, pid=2222, name=nvidia-smi, Timeout after "
                  "6s of waiting for RPC response from GPU7 GSP! Expected function 76 (GSP_RM_CONTROL) sequence "
                  "5678 (0x20800a4c 0x4).",
                  1, "0000:bb:00.0", 119, 0, -1, -1, 8826, 91234571200 },
        };

        for (size_t i = 0; i < KDP_ELEMENTSOF(cases); i++)
                check_case(&cases[i]);
}
END_TEST

START_TEST(test_gpu_xid_parse_record_reads_other_line_shapes) {
        static const xid_case cases[] = {
                /* r384 era: no "PCI:" */
                { "4,17,5000,-;NVRM: Xid (0000:03:00): 14, Channel 00000001",
                  1, "0000:03:00.0", 14, 0, -1, -1, 17, 5000 },
                /* CONFIG_PRINTK_CALLER, and unknown fields after it */
                { "4,8820,91234570700,c,caller=T1234;NVRM: Xid (PCI:0000:3a:00): 79, pid=0, "
                  "GPU has fallen off the bus.",
                  1, "0000:3a:00.0", 79, 0, -1, -1, 8820, 91234570700 },
                { "4,8820,91234570700,-,caller=C3,future=x;NVRM: Xid (PCI:0000:3a:00): 79, pid=0, x",
                  1, "0000:3a:00.0", 79, 0, -1, -1, 8820, 91234570700 },
                /* a domain wider than 4 digits is read as a number and printed back "%04x" */
                { "4,1,2,-;NVRM: Xid (PCI:03f8cfdd:00:00): 48, x",
                  1, "3f8cfdd:00:00.0", 48, 0, -1, -1, 1, 2 },
                { "4,1,2,-;NVRM: Xid (PCI:FFFFFFFF:AB:1F GPU-I:12 GPU-CI:3): 94, x",
                  1, "ffffffff:ab:1f.0", 94, 0, 12, 3, 1, 2 },
                { "4,1,2,-;NVRM: Xid (PCI:10000:00:00): 13, x",
                  1, "10000:00:00.0", 13, 0, -1, -1, 1, 2 },
                { .line = "4,1,2,-;NVRM: Xid (PCI:100000000:00:00): 13, x" },
                /* GPU-CI without GPU-I, as the regex allows */
                { "4,1,2,-;NVRM: Xid (PCI:0000:18:00 GPU-CI:7): 13, x",
                  1, "0000:18:00.0", 13, 0, -1, 7, 1, 2 },
                /* other kernel levels and a trailing newline */
                { "0,18446744073709551615,18446744073709551615,-;NVRM: Xid (PCI:0000:18:00): 4294967295,\n",
                  1, "0000:18:00.0", 4294967295u, 0, -1, -1, UINT64_MAX, UINT64_MAX },
                { "7,1,2,-;NVRM: Xid (PCI:0000:18:00): 13, x\n SUBSYSTEM=pci\n DEVICE=+pci:0000:18:00.0\n",
                  1, "0000:18:00.0", 13, 0, -1, -1, 1, 2 },
                /* "caused by" only at the end of the text */
                { "4,1,2,-;NVRM: Xid (PCI:0000:18:00): 45, Ch 1 caused by previous Xid 79 and more",
                  1, "0000:18:00.0", 45, 0, -1, -1, 1, 2 },
                { "4,1,2,-;NVRM: Xid (PCI:0000:18:00): 45, caused by previous Xid 99999999999",
                  1, "0000:18:00.0", 45, 0, -1, -1, 1, 2 },
        };

        for (size_t i = 0; i < KDP_ELEMENTSOF(cases); i++)
                check_case(&cases[i]);
}
END_TEST

START_TEST(test_gpu_xid_parse_record_ignores_lines_that_are_no_gpu_xid) {
        static const xid_case cases[] = {
                { .line = "4,1,2,-;nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 00 egress" },
                { .line = "4,1,2,-;NVRM: SXid (PCI:0000:05:00): 12028, x" },
                { .line = "4,1,2,-;" },
                { .line = "4,1,2,-;hello world" },
                { .line = "4,1,2,-;\\x00\\xff garbage" },
                { .line = "4,1,2,-;NVRM: Xid" },
                { .line = "4,1,2,-;NVRM: Xid (" },
                { .line = "4,1,2,-;NVRM: Xid (PCI:0000:18:00): 13" },                /* no ',' */
                { .line = "4,1,2,-;NVRM: Xid (PCI:0000:18:00): , x" },
                { .line = "4,1,2,-;NVRM: Xid (PCI:0000:18:00): abc, x" },
                { .line = "4,1,2,-;NVRM: Xid (PCI:0000:18:00): 4294967296, x" },
                { .line = "4,1,2,-;NVRM: Xid (PCI:0000:18:0): 13, x" },
                { .line = "4,1,2,-;NVRM: Xid (PCI:0000:18:000): 13, x" },
                { .line = "4,1,2,-;NVRM: Xid (PCI::18:00): 13, x" },
                { .line = "4,1,2,-;NVRM: Xid (PCI:0000:18:00 GPU-I:): 13, x" },
                { .line = "4,1,2,-;NVRM: Xid (PCI:0000:18:00 GPU-I:2147483648): 13, x" },
                { .line = "4,1,2,-;NVRM: Xid (PCI:0000:18:00 GPU-CI:1 GPU-I:1): 13, x" },
                { .line = "4,1,2,-;NVRM: Xid (PCI:0000:18:00.0): 13, x" },
                { .line = "4,1,2,-;NVRM: xid (PCI:0000:18:00): 13, x" },
                /* anchored: a kernel line quoting foreign text is no Xid */
                { .line = "6,1,2,-;usb 1-1: Product: NVRM: Xid (PCI:0000:18:00): 79, x" },
                { .line = "4,1,2,-; NVRM: Xid (PCI:0000:18:00): 79, x" },
        };

        for (size_t i = 0; i < KDP_ELEMENTSOF(cases); i++)
                check_case(&cases[i]);
}
END_TEST

START_TEST(test_gpu_xid_parse_record_ignores_records_written_from_userspace) {
        static const xid_case cases[] = {
                { "7,1,2,-;NVRM: Xid (PCI:0000:18:00): 79, x", 1, "0000:18:00.0", 79, 0, -1, -1, 1, 2 },
                { .line = "8,1,2,-;NVRM: Xid (PCI:0000:18:00): 79, x" },     /* LOG_USER|LOG_EMERG */
                { .line = "12,1,2,-;NVRM: Xid (PCI:0000:18:00): 79, x" },    /* LOG_USER|LOG_WARNING */
                { .line = "30,1,2,-;NVRM: Xid (PCI:0000:18:00): 79, x" },    /* LOG_DAEMON|LOG_INFO */
                { .line = "99999999999,1,2,-;NVRM: Xid (PCI:0000:18:00): 79, x" },
        };

        for (size_t i = 0; i < KDP_ELEMENTSOF(cases); i++)
                check_case(&cases[i]);
}
END_TEST

START_TEST(test_gpu_xid_parse_record_rejects_malformed_headers) {
        static const char *const lines[] = {
                "",
                "4,8812,91234567921,c NVRM: Xid (PCI:0000:18:00): 13, x",        /* no ';' */
                "4,abc,91234567921,c;NVRM: Xid (PCI:0000:18:00): 13, x",         /* seq */
                "4,8812,9123x,c;NVRM: Xid (PCI:0000:18:00): 13, x",              /* ts */
                "x,8812,91234567921,c;NVRM: Xid (PCI:0000:18:00): 13, x",        /* prio */
                "4,8812,91234567921;NVRM: Xid (PCI:0000:18:00): 13, x",          /* no flags */
                "4,8812,91234567921,;NVRM: Xid (PCI:0000:18:00): 13, x",         /* empty flags */
                "4,8812,91234567921,,c;x",
                "4,,91234567921,c;x",
                "4,-1,2,c;x",
                "4, 1,2,c;x",
                "4,18446744073709551616,2,c;x",                                  /* seq overflows */
                "4,1,2,-\n;NVRM: Xid (PCI:0000:18:00): 13, x",                   /* ';' after the end of line */
                " SUBSYSTEM=pci",
                ";NVRM: Xid (PCI:0000:18:00): 13, x",
        };
        gpu_xid x;

        for (size_t i = 0; i < KDP_ELEMENTSOF(lines); i++)
                ck_assert_msg(gpu_xid_parse_record(lines[i], strlen(lines[i]), &x) == -EINVAL,
                              "'%s'", lines[i]);
        ck_assert_int_eq(gpu_xid_parse_record(NULL, 0, &x), -EINVAL);
}
END_TEST

/* `len` bounds the record: nothing past it is read, and no NUL is needed. */
START_TEST(test_gpu_xid_parse_record_reads_only_len_bytes) {
        static const char text[] = "4,1,2,-;NVRM: Xid (PCI:0000:18:00): 13, x" "4,9,9,-;";
        char *copy;
        gpu_xid x;
        size_t len = strlen("4,1,2,-;NVRM: Xid (PCI:0000:18:00): 13,");

        /* an exact-size heap copy without NUL, so that ASan/valgrind see any read past it */
        copy = malloc(len);
        ck_assert_ptr_nonnull(copy);
        memcpy(copy, text, len);
        ck_assert_int_eq(gpu_xid_parse_record(copy, len, &x), 1);
        ck_assert_uint_eq(x.code, 13);
        ck_assert_int_eq(gpu_xid_parse_record(copy, len - 1, &x), 0);          /* "...: 13" without ',' */
        ck_assert_int_eq(gpu_xid_parse_record(copy, strlen("4,1,2,-"), &x), -EINVAL);
        ck_assert_int_eq(gpu_xid_parse_record(copy, strlen("4,1,2,-;"), &x), 0);
        ck_assert_int_eq(gpu_xid_parse_record(copy, 0, &x), -EINVAL);
        free(copy);
}
END_TEST

START_TEST(test_gpu_xid_bucket_follows_the_catalog) {
        static const struct {
                unsigned code;
                const char *bucket;
        } cases[] = {
                { 13, "RESTART_APP" },          { 31, "RESTART_APP" },     { 43, "IGNORE" },
                { 45, "WORKFLOW_XID_45" },      { 48, "WORKFLOW_XID_48" }, { 63, "IGNORE" },
                { 64, "RESET_GPU" },            { 68, "RESTART_APP" },     { 74, "WORKFLOW_NVLINK_ERR" },
                { 79, "RESTART_BM" },           { 92, "IGNORE" },          { 94, "RESTART_APP" },
                { 95, "RESET_GPU" },            { 109, "RESET_GPU" },      { 119, "RESET_GPU" },
                { 120, "RESET_GPU" },           { 154, "FOLLOW_OTHER_XID" },
                { 0, "UNKNOWN" },               { 14, "UNKNOWN" },         { 121, "UNKNOWN" },
                { 4294967295u, "UNKNOWN" },
        };

        for (size_t i = 0; i < KDP_ELEMENTSOF(cases); i++)
                ck_assert_str_eq(gpu_xid_bucket(cases[i].code), cases[i].bucket);
}
END_TEST

/* ---- sets ---- */

static void check_set(const char *text, const unsigned *codes, size_t n) {
        gpu_xid_set set = {};

        ck_assert_msg(gpu_xid_set_parse(text, &set, NULL) == 0, "'%s'", text);
        ck_assert_msg(set.n == n, "'%s': %zu codes, expected %zu", text, set.n, n);
        for (size_t i = 0; i < n; i++) {
                ck_assert_uint_eq(set.codes[i], codes[i]);
                ck_assert(gpu_xid_set_has(&set, codes[i]));
        }
        if (n == 0)
                ck_assert_ptr_null(set.codes);
        gpu_xid_set_done(&set);
        ck_assert_ptr_null(set.codes);
        ck_assert_uint_eq(set.n, 0);
}

START_TEST(test_gpu_xid_set_parse_reads_lists) {
        gpu_xid_set set = {};

        check_set("13,31,43,45,68,109", (const unsigned[]){ 13, 31, 43, 45, 68, 109 }, 6);
        check_set(" 13 , 31 ", (const unsigned[]){ 13, 31 }, 2);
        check_set("\t79\n", (const unsigned[]){ 79 }, 1);
        check_set("109,13,0,4294967295", (const unsigned[]){ 0, 13, 109, 4294967295u }, 4);

        ck_assert_int_eq(gpu_xid_set_parse("13,31,43,45,68,109", &set, NULL), 0);
        ck_assert(!gpu_xid_set_has(&set, 48));
        ck_assert(!gpu_xid_set_has(&set, 79));
        ck_assert(!gpu_xid_set_has(&set, 0));
        gpu_xid_set_done(&set);
}
END_TEST

START_TEST(test_gpu_xid_set_parse_takes_empty_as_none) {
        gpu_xid_set set = {};

        check_set("", NULL, 0);
        check_set("   ", NULL, 0);
        check_set(",", NULL, 0);
        ck_assert_int_eq(gpu_xid_set_parse("", &set, NULL), 0);
        ck_assert(!gpu_xid_set_has(&set, 0));
        ck_assert(!gpu_xid_set_has(NULL, 13));
        gpu_xid_set_done(&set);
        gpu_xid_set_done(&set);
        gpu_xid_set_done(NULL);
}
END_TEST

/* As nvdp does: an empty entry is skipped, not an error. */
START_TEST(test_gpu_xid_set_parse_skips_empty_entries) {
        check_set("13,,31", (const unsigned[]){ 13, 31 }, 2);
        check_set("13,", (const unsigned[]){ 13 }, 1);
        check_set(",13, ,31,,", (const unsigned[]){ 13, 31 }, 2);
}
END_TEST

START_TEST(test_gpu_xid_set_parse_keeps_duplicates_once) {
        check_set("13,13,31,13", (const unsigned[]){ 13, 31 }, 2);
        check_set("79, 79", (const unsigned[]){ 79 }, 1);
}
END_TEST

/* An entry that is no Xid number is skipped, as nvdp skips it, and handed back; the others count. */
START_TEST(test_gpu_xid_set_parse_skips_entries_that_are_no_numbers) {
        static const struct {
                const char *text, *skipped;
                unsigned code;          /* the one code left, 0: none */
        } cases[] = {
                { "abc", "abc", 0 },        { "13,abc", "abc", 13 },  { "13 31", "13 31", 0 },
                { "-1,48", "-1", 48 },      { "+13", "+13", 0 },      { "0x1f, 79", "0x1f", 79 },
                { "13.0", "13.0", 0 },      { "4294967296", "4294967296", 0 },
                { "1e3,13", "1e3", 13 },    { "31x, 13 ,x y", "31x,x y", 13 },
        };
        gpu_xid_set set = { .codes = (unsigned *) 1, .n = 99 };

        for (size_t i = 0; i < KDP_ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *skipped = NULL;

                ck_assert_msg(gpu_xid_set_parse(cases[i].text, &set, &skipped) == 0, "'%s'", cases[i].text);
                ck_assert_str_eq(skipped, cases[i].skipped);
                ck_assert_uint_eq(set.n, cases[i].code ? 1 : 0);
                if (cases[i].code)
                        ck_assert_uint_eq(set.codes[0], cases[i].code);
                gpu_xid_set_done(&set);
        }
        /* nothing skipped: NULL */
        {
                char *skipped = (char *) "untouched";

                ck_assert_int_eq(gpu_xid_set_parse("13,,31", &set, &skipped), 0);
                ck_assert_ptr_null(skipped);
                gpu_xid_set_done(&set);
        }
        ck_assert_int_eq(gpu_xid_set_parse(NULL, &set, NULL), -EINVAL);
        ck_assert_int_eq(gpu_xid_set_parse("13", NULL, NULL), -EINVAL);
}
END_TEST

/* ---- the reader ---- */

typedef struct seen {
        gpu_xid xids[16];
        bool replay[16];
        size_t n;
} seen;

static void on_xid(void *userdata, const gpu_xid *xid, bool replay) {
        seen *s = userdata;

        ck_assert_uint_lt(s->n, KDP_ELEMENTSOF(s->xids));
        s->xids[s->n] = *xid;
        s->replay[s->n] = replay;
        s->n++;
}

static void check_seen(const seen *s, size_t i, uint64_t seq, unsigned code, const char *bdf, bool replay) {
        ck_assert_uint_gt(s->n, i);
        ck_assert_uint_eq(s->xids[i].seq, seq);
        ck_assert_uint_eq(s->xids[i].code, code);
        ck_assert_str_eq(s->xids[i].bdf, bdf);
        ck_assert_int_eq(s->replay[i], replay);
}

static void write_all(int fd, const char *text, size_t len) {
        ck_assert_int_eq(write(fd, text, len), (ssize_t) len);
}

static void write_str(int fd, const char *text) {
        write_all(fd, text, strlen(text));
}

/* A FIFO in a new temp dir (*ret_dir: remove with kdp_test_rm_rfp), the reader on it and a writer fd. */
static void fifo_new(char **ret_dir, gpu_kmsg **ret_k, int *ret_w) {
        _cleanup_free_ char *path = NULL;
        char *dir;

        dir = strdup("/tmp/kdp-test-xid-XXXXXX");
        ck_assert_ptr_nonnull(dir);
        ck_assert_ptr_nonnull(mkdtemp(dir));
        ck_assert_int_ge(asprintf(&path, "%s/kmsg", dir), 0);
        ck_assert_int_eq(mkfifo(path, 0600), 0);
        ck_assert_int_eq(gpu_kmsg_open(path, ret_k), 0);
        /* the reader holds the FIFO read-write, so a non-blocking writer can open it */
        *ret_w = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        ck_assert_int_ge(*ret_w, 0);
        *ret_dir = dir;
}

START_TEST(test_gpu_kmsg_drain_reads_a_fifo_and_keeps_a_partial_record) {
        _cleanup_(kdp_test_rm_rfp) char *dir = NULL;
        _cleanup_(gpu_kmsg_freep) gpu_kmsg *k = NULL;
        _cleanup_close_ int w = -1;
        seen s = {};

        fifo_new(&dir, &k, &w);
        ck_assert_int_ge(gpu_kmsg_fd(k), 0);
        write_str(w, "4,10,1000,c;NVRM: Xid (PCI:0000:18:00): 13, pid=4242, name=python3, x\n"
                     "4,11,1001,-;pcieport 0000:17:00.0: AER: Corrected error received: 0000:18:00.0\n"
                     " SUBSYSTEM=pci\n"
                     " DEVICE=+pci:0000:17:00.0\n"
                     "4,12,1002,c;NVRM: Xid (PCI:0000:9a:00 GPU-I:05): 94, pid=7194, x\n"
                     "4,13,1003,c;NVRM: Xid (PCI:0000:3a:0");
        ck_assert_int_eq(gpu_kmsg_drain(k, on_xid, &s), 2);
        ck_assert_uint_eq(s.n, 2);
        check_seen(&s, 0, 10, 13, "0000:18:00.0", true);
        check_seen(&s, 1, 12, 94, "0000:9a:00.0", true);
        ck_assert_int_eq(s.xids[1].gpu_instance, 5);

        write_str(w, "0): 79, pid=0, GPU has fallen off the bus.\n");
        ck_assert_int_eq(gpu_kmsg_drain(k, on_xid, &s), 1);
        ck_assert_uint_eq(s.n, 3);
        check_seen(&s, 2, 13, 79, "0000:3a:00.0", false);
        ck_assert_uint_eq(s.xids[2].ts_usec, 1003);

        ck_assert_int_eq(gpu_kmsg_drain(k, on_xid, &s), 0);
        ck_assert_uint_eq(s.n, 3);
        ck_assert_uint_eq(gpu_kmsg_lost(k), 0);
}
END_TEST

START_TEST(test_gpu_kmsg_drain_reads_a_record_written_byte_by_byte) {
        static const char rec[] = "4,1,2,c;NVRM: Xid (PCI:0000:18:00): 48, x\n";
        _cleanup_(kdp_test_rm_rfp) char *dir = NULL;
        _cleanup_(gpu_kmsg_freep) gpu_kmsg *k = NULL;
        _cleanup_close_ int w = -1;
        seen s = {};

        fifo_new(&dir, &k, &w);
        ck_assert_int_eq(gpu_kmsg_drain(k, on_xid, &s), 0);
        for (size_t i = 0; i < strlen(rec); i++) {
                write_all(w, rec + i, 1);
                ck_assert_int_eq(gpu_kmsg_drain(k, on_xid, &s), i + 1 == strlen(rec));
        }
        ck_assert_uint_eq(s.n, 1);
        check_seen(&s, 0, 1, 48, "0000:18:00.0", false);
}
END_TEST

START_TEST(test_gpu_kmsg_drain_skips_malformed_and_userspace_records) {
        _cleanup_(kdp_test_rm_rfp) char *dir = NULL;
        _cleanup_(gpu_kmsg_freep) gpu_kmsg *k = NULL;
        _cleanup_close_ int w = -1;
        seen s = {};

        fifo_new(&dir, &k, &w);
        write_str(w, "garbage\n"
                     "\n"
                     "12,1,2,-;NVRM: Xid (PCI:0000:18:00): 79, faked by a user\n"
                     "4,2,3,-;NVRM: SXid (PCI:0000:05:00): 12028, x\n"
                     "4,x,3,-;NVRM: Xid (PCI:0000:18:00): 79, no seq\n"
                     "4,3,4,-;NVRM: Xid (PCI:0000:18:00): 31, x\n");
        /* drained without the callback first: counted all the same */
        ck_assert_int_eq(gpu_kmsg_drain(k, NULL, NULL), 1);
        write_str(w, "4,4,5,-;NVRM: Xid (PCI:0000:18:00): 43, x\n");
        ck_assert_int_eq(gpu_kmsg_drain(k, on_xid, &s), 1);
        check_seen(&s, 0, 4, 43, "0000:18:00.0", false);
        ck_assert_uint_eq(gpu_kmsg_lost(k), 0);
}
END_TEST

START_TEST(test_gpu_kmsg_drain_counts_seq_gaps_once_per_drain) {
        _cleanup_(kdp_test_rm_rfp) char *dir = NULL;
        _cleanup_(gpu_kmsg_freep) gpu_kmsg *k = NULL;
        _cleanup_free_ char *log = NULL, *body = NULL;
        _cleanup_close_ int w = -1;
        kdp_test_capture c;
        const char *p;
        seen s = {};

        fifo_new(&dir, &k, &w);
        /* the first record sets the baseline: nothing before seq 100 counts */
        write_str(w, "4,100,1,-;a\n"
                     "4,101,2,-;b\n"
                     "4,104,3,-;NVRM: Xid (PCI:0000:18:00): 13, x\n"        /* 102, 103 lost */
                     "12,105,4,-;user\n"
                     "4,109,5,-;e\n");                                       /* 106..108 lost */
        kdp_test_capture_begin(&c);
        ck_assert_int_eq(gpu_kmsg_drain(k, on_xid, &s), 1);
        ck_assert_uint_eq(gpu_kmsg_lost(k), 5);
        write_str(w, "4,110,6,-;f\n");
        ck_assert_int_eq(gpu_kmsg_drain(k, on_xid, &s), 0);
        ck_assert_uint_eq(gpu_kmsg_lost(k), 5);
        /* a seq going back (another boot, a rewound file) is a new baseline, not a loss */
        write_str(w, "4,0,7,-;g\n4,1,8,-;h\n4,3,9,-;i\n");
        ck_assert_int_eq(gpu_kmsg_drain(k, on_xid, &s), 0);
        ck_assert_uint_eq(gpu_kmsg_lost(k), 6);
        log = kdp_test_capture_end(&c);

        ck_assert_int_ge(asprintf(&body, "\"Lost kernel log records\" path=\"%s/kmsg\" records=5", dir), 0);
        p = log;
        kdp_test_expect_line(&p, 'W', "xid.c", body);
        free(body);
        ck_assert_int_ge(asprintf(&body, "\"Lost kernel log records\" path=\"%s/kmsg\" records=1", dir), 0);
        kdp_test_expect_line(&p, 'W', "xid.c", body);
        ck_assert_str_eq(p, "");
}
END_TEST

/* A line of `len` bytes plus '\n': "prio,seq,0,-;" then `text`, padded with 'x'. */
static char *record_padded(unsigned prio, uint64_t seq, const char *text, size_t len) {
        char *r;
        int n;

        r = malloc(len + 2);
        ck_assert_ptr_nonnull(r);
        n = snprintf(r, len + 1, "%u,%" PRIu64 ",0,-;%s", prio, seq, text);
        ck_assert_int_gt(n, 0);
        ck_assert_uint_le((size_t) n, len);
        memset(r + n, 'x', len - (size_t) n);
        r[len] = '\n';
        r[len + 1] = '\0';
        return r;
}

START_TEST(test_gpu_kmsg_drain_drops_records_longer_than_the_buffer) {
        _cleanup_(kdp_test_rm_rfp) char *dir = NULL;
        _cleanup_(gpu_kmsg_freep) gpu_kmsg *k = NULL;
        _cleanup_free_ char *fits = NULL, *too_long = NULL, *huge = NULL;
        _cleanup_close_ int w = -1;
        kdp_test_capture c;
        seen s = {};

        /* the largest line that fits: GPU_KMSG_BUFFER_SIZE bytes with its '\n' */
        fits = record_padded(4, 1, "NVRM: Xid (PCI:0000:18:00): 13, ", GPU_KMSG_BUFFER_SIZE - 1);
        too_long = record_padded(4, 2, "NVRM: Xid (PCI:0000:18:00): 79, ", GPU_KMSG_BUFFER_SIZE);
        huge = record_padded(4, 4, "NVRM: Xid (PCI:0000:18:00): 79, ", 3 * GPU_KMSG_BUFFER_SIZE + 17);

        fifo_new(&dir, &k, &w);
        write_str(w, fits);
        write_str(w, too_long);
        write_str(w, "4,3,0,-;NVRM: Xid (PCI:0000:18:00): 31, x\n");
        write_str(w, huge);
        write_str(w, " SUBSYSTEM=pci\n");
        write_str(w, "4,5,0,-;NVRM: Xid (PCI:0000:19:00): 43, x\n");

        kdp_test_capture_begin(&c);
        ck_assert_int_eq(gpu_kmsg_drain(k, on_xid, &s), 3);
        free(kdp_test_capture_end(&c));
        ck_assert_uint_eq(s.n, 3);
        check_seen(&s, 0, 1, 13, "0000:18:00.0", true);
        check_seen(&s, 1, 3, 31, "0000:18:00.0", true);
        check_seen(&s, 2, 5, 43, "0000:19:00.0", true);
        ck_assert_uint_eq(gpu_kmsg_lost(k), 2);

        /* back in step: the next record, in a read of its own, is whole */
        write_str(w, "4,6,0,-;NVRM: Xid (PCI:0000:19:00): 63, x\n");
        ck_assert_int_eq(gpu_kmsg_drain(k, on_xid, &s), 1);
        check_seen(&s, 3, 6, 63, "0000:19:00.0", false);
        ck_assert_uint_eq(gpu_kmsg_lost(k), 2);
}
END_TEST

/* A dropped first record is counted too, although no seq came before it. */
START_TEST(test_gpu_kmsg_drain_counts_a_long_first_record) {
        _cleanup_(kdp_test_rm_rfp) char *dir = NULL;
        _cleanup_(gpu_kmsg_freep) gpu_kmsg *k = NULL;
        _cleanup_free_ char *too_long = NULL, *log = NULL;
        _cleanup_close_ int w = -1;
        kdp_test_capture c;
        seen s = {};

        too_long = record_padded(4, 7, "x", GPU_KMSG_BUFFER_SIZE + 100);
        fifo_new(&dir, &k, &w);
        write_str(w, too_long);
        write_str(w, "4,8,0,-;NVRM: Xid (PCI:0000:18:00): 31, x\n");
        kdp_test_capture_begin(&c);
        ck_assert_int_eq(gpu_kmsg_drain(k, on_xid, &s), 1);
        log = kdp_test_capture_end(&c);
        ck_assert_uint_eq(gpu_kmsg_lost(k), 1);
        check_seen(&s, 0, 8, 31, "0000:18:00.0", true);
        ck_assert_ptr_nonnull(strstr(log, "\"Lost kernel log records\""));
}
END_TEST

START_TEST(test_gpu_kmsg_drain_reads_a_regular_file_to_its_end) {
        _cleanup_(kdp_test_unlink_freep) char *path = NULL;
        _cleanup_(gpu_kmsg_freep) gpu_kmsg *k = NULL;
        _cleanup_close_ int w = -1;
        static const char text[] =
                "4,8811,91234567890,c;NVRM: GPU at PCI:0000:18:00: GPU-5f1b3a7e-0c2d-4e8f-9a61-3b7c2d9e0f14\n"
                "4,8812,91234567921,c;NVRM: Xid (PCI:0000:18:00): 13, pid=4242, name=python3, x\n"
                "12,8813,91234567922,-;NVRM: Xid (PCI:0000:18:00): 79, fake\n"
                "4,8814,91234570100,c,caller=T1234;NVRM: Xid (PCI:0000:18:00): 43, pid=4242, Ch 00000018\n"
                " SUBSYSTEM=pci\n"
                "4,8815,91234570200,c;NVRM: Xid (PCI:0000:18:00): 45, pid=4242, Ch 00000018 "
                "caused by previous Xid 79\n";
        seen s = {};

        path = kdp_test_write_temp("xid", ".kmsg", text, strlen(text));
        ck_assert_int_eq(gpu_kmsg_open(path, &k), 0);
        ck_assert_int_eq(gpu_kmsg_drain(k, on_xid, &s), 3);
        check_seen(&s, 0, 8812, 13, "0000:18:00.0", true);
        check_seen(&s, 1, 8814, 43, "0000:18:00.0", true);
        check_seen(&s, 2, 8815, 45, "0000:18:00.0", true);
        ck_assert_uint_eq(s.xids[2].cause, 79);
        ck_assert_int_eq(gpu_kmsg_drain(k, on_xid, &s), 0);

        /* appended later; a line is complete only at its '\n' */
        w = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
        ck_assert_int_ge(w, 0);
        write_str(w, "4,8816,91234570300,c;NVRM: Xid (PCI:0000:19:00): 48, x\n"
                     "4,8817,1,-;NVRM: Xid (PCI:0000:19:00): 6");
        ck_assert_int_eq(gpu_kmsg_drain(k, on_xid, &s), 1);
        check_seen(&s, 3, 8816, 48, "0000:19:00.0", false);
        write_str(w, "4, x\n");
        ck_assert_int_eq(gpu_kmsg_drain(k, on_xid, &s), 1);
        check_seen(&s, 4, 8817, 64, "0000:19:00.0", false);
        ck_assert_uint_eq(gpu_kmsg_lost(k), 0);
}
END_TEST

START_TEST(test_gpu_kmsg_open_rejects_what_is_no_log) {
        _cleanup_(kdp_test_rm_rfp) char *dir = NULL;
        _cleanup_free_ char *missing = NULL;
        gpu_kmsg *k = (gpu_kmsg *) 1;

        dir = strdup("/tmp/kdp-test-xid-XXXXXX");
        ck_assert_ptr_nonnull(dir);
        ck_assert_ptr_nonnull(mkdtemp(dir));
        ck_assert_int_ge(asprintf(&missing, "%s/missing", dir), 0);

        ck_assert_int_eq(gpu_kmsg_open(missing, &k), -ENOENT);
        ck_assert_int_eq(gpu_kmsg_open(dir, &k), -EISDIR);
        ck_assert_int_eq(gpu_kmsg_open(NULL, &k), -EINVAL);
        ck_assert_int_eq(gpu_kmsg_open(dir, NULL), -EINVAL);
        ck_assert_ptr_eq(k, (gpu_kmsg *) 1);                    /* untouched */
        ck_assert_int_eq(gpu_kmsg_drain(NULL, on_xid, NULL), -EINVAL);
        ck_assert_int_eq(gpu_kmsg_fd(NULL), -EINVAL);
        ck_assert_uint_eq(gpu_kmsg_lost(NULL), 0);
        ck_assert_ptr_null(gpu_kmsg_free(NULL));
}
END_TEST

/* Waits (10 s at most: an event, not a latency bound) until fd is readable. */
static void wait_readable(int fd) {
        struct pollfd p = { .fd = fd, .events = POLLIN };

        ck_assert_int_eq(poll(&p, 1, 10000), 1);
}

/*
 * A character device that gives one record per read() as /dev/kmsg does, with records of the
 * test's own (never the host's kernel log): a pseudo-terminal in canonical mode gives one line
 * per read(), and a line ended by VEOF instead of '\n' comes without its '\n', which only the
 * reader's record mode takes as complete (a stream reader would wait for the rest of the line).
 */
START_TEST(test_gpu_kmsg_drain_reads_a_character_device_one_record_per_read) {
        _cleanup_close_ int m = -1;
        _cleanup_(gpu_kmsg_freep) gpu_kmsg *k = NULL;
        struct termios t;
        struct stat st;
        seen s = {};

        m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        ck_assert_int_ge(m, 0);
        ck_assert_int_eq(grantpt(m), 0);
        ck_assert_int_eq(unlockpt(m), 0);
        ck_assert_int_eq(tcgetattr(m, &t), 0);
        t.c_iflag = 0;                                  /* bytes as written */
        t.c_lflag = ICANON;                             /* lines; no echo, no signals */
        t.c_cc[VEOF] = 4;
        ck_assert_int_eq(tcsetattr(m, TCSANOW, &t), 0);
        ck_assert_int_eq(stat(ptsname(m), &st), 0);
        ck_assert(S_ISCHR(st.st_mode));
        ck_assert_int_eq(gpu_kmsg_open(ptsname(m), &k), 0);

        ck_assert_int_eq(gpu_kmsg_drain(k, on_xid, &s), 0);     /* nothing yet: EAGAIN */
        write_str(m, "4,10,1000,c;NVRM: Xid (PCI:0000:18:00): 13, pid=1, name=python3, x\n"
                     "6,11,1001,-;nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver\n"
                     "4,12,1002,c;NVRM: Xid (PCI:0000:3a:00): 79, pid=0, GPU has fallen off the bus.\004");
        wait_readable(gpu_kmsg_fd(k));
        ck_assert_int_eq(gpu_kmsg_drain(k, on_xid, &s), 2);
        ck_assert_uint_eq(s.n, 2);
        check_seen(&s, 0, 10, 13, "0000:18:00.0", false);
        check_seen(&s, 1, 12, 79, "0000:3a:00.0", false);
        ck_assert_uint_eq(s.xids[1].ts_usec, 1002);

        /* seq 13 never came: one record lost */
        write_str(m, "4,14,1004,c;NVRM: Xid (PCI:0000:9a:00): 48, pid=0, An uncorrectable double bit error\n");
        wait_readable(gpu_kmsg_fd(k));
        ck_assert_int_eq(gpu_kmsg_drain(k, on_xid, &s), 1);
        check_seen(&s, 2, 14, 48, "0000:9a:00.0", false);
        ck_assert_uint_eq(gpu_kmsg_lost(k), 1);
        ck_assert_int_eq(gpu_kmsg_drain(k, on_xid, &s), 0);
        ck_assert_uint_eq(s.n, 3);
}
END_TEST

static Suite *gpu_xid_suite(void) {
        Suite *s = suite_create("gpu-xid");
        TCase *tc;

        tc = tcase_create("parse");
        tcase_set_timeout(tc, 10);
        tcase_add_test(tc, test_gpu_xid_parse_record_reads_every_example_of_the_fact_sheet);
        tcase_add_test(tc, test_gpu_xid_parse_record_reads_other_line_shapes);
        tcase_add_test(tc, test_gpu_xid_parse_record_ignores_lines_that_are_no_gpu_xid);
        tcase_add_test(tc, test_gpu_xid_parse_record_ignores_records_written_from_userspace);
        tcase_add_test(tc, test_gpu_xid_parse_record_rejects_malformed_headers);
        tcase_add_test(tc, test_gpu_xid_parse_record_reads_only_len_bytes);
        tcase_add_test(tc, test_gpu_xid_bucket_follows_the_catalog);
        suite_add_tcase(s, tc);

        tc = tcase_create("set");
        tcase_set_timeout(tc, 10);
        tcase_add_test(tc, test_gpu_xid_set_parse_reads_lists);
        tcase_add_test(tc, test_gpu_xid_set_parse_takes_empty_as_none);
        tcase_add_test(tc, test_gpu_xid_set_parse_skips_empty_entries);
        tcase_add_test(tc, test_gpu_xid_set_parse_keeps_duplicates_once);
        tcase_add_test(tc, test_gpu_xid_set_parse_skips_entries_that_are_no_numbers);
        suite_add_tcase(s, tc);

        tc = tcase_create("reader");
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, test_gpu_kmsg_drain_reads_a_fifo_and_keeps_a_partial_record);
        tcase_add_test(tc, test_gpu_kmsg_drain_reads_a_record_written_byte_by_byte);
        tcase_add_test(tc, test_gpu_kmsg_drain_skips_malformed_and_userspace_records);
        tcase_add_test(tc, test_gpu_kmsg_drain_counts_seq_gaps_once_per_drain);
        tcase_add_test(tc, test_gpu_kmsg_drain_drops_records_longer_than_the_buffer);
        tcase_add_test(tc, test_gpu_kmsg_drain_counts_a_long_first_record);
        tcase_add_test(tc, test_gpu_kmsg_drain_reads_a_regular_file_to_its_end);
        tcase_add_test(tc, test_gpu_kmsg_open_rejects_what_is_no_log);
        tcase_add_test(tc, test_gpu_kmsg_drain_reads_a_character_device_one_record_per_read);
        suite_add_tcase(s, tc);

        return s;
}

int main(void) {
        return kdp_test_run(gpu_xid_suite());
}
