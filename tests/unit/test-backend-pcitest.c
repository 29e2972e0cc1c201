/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * unit/backend-pcitest: the pcitest backend (tests/backends/pcitest.c), which
 * the hardware-layer e2e tests run, on a plain sysfs tree: the functions of
 * its vendor and device are served; one libkdp could not read is declared
 * not served with the reason unless the IDs it read say it is not one of
 * them, and its warning is logged once however often the backend scans.
 */
#include <check.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdp/backend.h>

#include "backend-ctx.h"
#include "config.h"
#include "device-tree.h"

#include "kdp-test.h"
#include "kdp-test-sysfs.h"
#include "kdp-test-backend.h"

#define PCITEST_SO KDP_TEST_BACKEND_DIR "/kdp-backend-pcitest.so"

typedef kdp_test_backend pcitest_run;

static void pcitest_open(pcitest_run *run, const char *root, const char *const *overrides) {
        ck_assert_int_eq(kdp_test_backend_open(run, PCITEST_SO, "pcitest", root, overrides), 0);
}

/* One scan into a fresh tree; returns what it logged (free()). */
static char *pcitest_scan(pcitest_run *run, const char *root) {
        kdp_test_capture c;

        kdp_test_capture_begin(&c);
        kdp_test_backend_scan(run, root);
        return kdp_test_capture_end(&c);
}

static void pcitest_done(pcitest_run *run) {
        kdp_test_backend_done(run);
}

START_TEST(test_backend_pcitest_declares_the_functions_it_cannot_read) {
        _cleanup_(kdp_test_rm_rfp) char *root = kdp_test_tree_new("pcitest");
        _cleanup_free_ char *log = NULL, *text = NULL, *want = NULL, *warning = NULL;
        pcitest_run run;
        const char *p;

        /* served; no vendor file (may be ours); ours with a malformed class; another vendor's, malformed */
        kdp_test_pci_add(root, &(kdp_test_pci_dev){ .path = "pci0000:15/0000:18:00.0", .vendor = "0x10de",
                                                    .device = "0x2330", .class_code = "0x030200", .driver = "nvidia" });
        kdp_test_pci_add(root, &(kdp_test_pci_dev){ .path = "pci0000:15/0000:19:00.0", .device = "0x2330",
                                                    .class_code = "0x030200" });
        kdp_test_pci_add(root, &(kdp_test_pci_dev){ .path = "pci0000:15/0000:1a:00.0", .vendor = "0x10de",
                                                    .device = "0x2330", .class_code = "0x030200x" });
        kdp_test_pci_add(root, &(kdp_test_pci_dev){ .path = "pci0000:15/0000:1b:00.0", .vendor = "0x8086",
                                                    .device = "0x0b00", .class_code = "0x1234567" });

        pcitest_open(&run, root, (const char *const[]){ "pcitest.vendor=10de", "pcitest.device=2330", NULL });
        log = pcitest_scan(&run, root);
        ck_assert_uint_eq(run.tree->n_resources, 1);
        ck_assert_uint_eq(run.tree->resources[0].n_devices, 1);
        ck_assert_str_eq(run.tree->resources[0].devices[0].id, "0000:18:00.0");
        text = kdp_test_not_served_text(run.tree);
        ck_assert_int_ge(asprintf(&want, "0000:19:00.0: libpci cannot read it: Cannot open "
                                         "%s/sys/bus/pci/devices/0000:19:00.0/vendor: No such file or directory\n"
                                         "0000:1a:00.0: its sysfs file class cannot be read: Bad message\n", root), 0);
        ck_assert_str_eq(text, want);

        /* the warnings name the backend, once: the scans after add none */
        ck_assert_int_ge(asprintf(&warning, "\"Skipped PCI device\" backend=\"pcitest\" pciAddress=\"0000:19:00.0\" "
                                            "reason=\"Cannot open %s/sys/bus/pci/devices/0000:19:00.0/vendor: No such "
                                            "file or directory\"", root), 0);
        p = log;
        kdp_test_expect_line(&p, 'W', "pci.c", warning);
        kdp_test_expect_line(&p, 'W', "pci.c", "\"Skipped PCI device\" backend=\"pcitest\" pciAddress=\"0000:1a:00.0\" "
                                               "file=\"class\" err=\"Bad message\"");
        kdp_test_expect_line(&p, 'W', "pci.c", "\"Skipped PCI device\" backend=\"pcitest\" pciAddress=\"0000:1b:00.0\" "
                                               "file=\"class\" err=\"Bad message\"");
        ck_assert_str_eq(p, "");
        for (int i = 0; i < 2; i++) {
                free(log);
                log = pcitest_scan(&run, root);
                ck_assert_str_eq(log, "");
                free(text);
                text = kdp_test_not_served_text(run.tree);
                ck_assert_str_eq(text, want);
        }
        pcitest_done(&run);
}
END_TEST

static Suite *backend_pcitest_suite(void) {
        Suite *s = suite_create("backend-pcitest");
        TCase *tc = tcase_create("scan");

        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, test_backend_pcitest_declares_the_functions_it_cannot_read);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return kdp_test_run(backend_pcitest_suite());
}
