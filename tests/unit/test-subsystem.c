/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdp/backend.h>
#include <kdp/cleanup.h>
#include <kdp/subsystem.h>

#include "backend-ctx.h"

#include "kdp-test.h"
#include "kdp-test-sysfs.h"

/* ---- the fixture: an FPGA card (DFL) behind a switch port, a platform UART, a virtual netdev ---- */

#define P3A "pci0000:3a/0000:3a:00.0"
#define P3B P3A "/0000:3b:00.0"
#define REGION P3B "/fpga_region/region0"
#define PORT REGION "/dfl-port.0"

static char *fixture_new(void) {
        char *root = kdp_test_tree_new("subsystem");
        const kdp_test_pci_dev port = { .path = PORT };
        const kdp_test_pci_dev uart = { .path = "platform/serial8250" };

        kdp_test_pci_add(root, &(kdp_test_pci_dev){ .path = P3A, .vendor = "0x8086", .device = "0x347a",
                                                   .class_code = "0x060400", .driver = "pcieport" });
        kdp_test_pci_add(root, &(kdp_test_pci_dev){ .path = P3B, .vendor = "0x8086", .device = "0x0b30",
                                                   .class_code = "0x120000", .driver = "dfl-pci" });

        /* class/fpga_region: region0 with a uevent without DEVNAME, region1 without a uevent */
        kdp_test_tree_write(root, "sys/devices/" REGION "/uevent", "");
        kdp_test_tree_mkdir(root, "sys/devices/" P3B "/fpga_region/region1");
        kdp_test_tree_link(root, "sys/class/fpga_region/region0", "../../devices/" REGION);
        kdp_test_tree_link(root, "sys/class/fpga_region/region1", "../../devices/" P3B "/fpga_region/region1");

        /* bus/platform: the DFL port below the region, with a node and a driver; a UART outside PCI */
        kdp_test_tree_write(root, "sys/devices/" PORT "/uevent",
                            "DRIVER=dfl-port\nMAJOR=236\nMINOR=0\nDEVNAME=dfl-port.0\nMODALIAS=platform:dfl-port\n");
        kdp_test_tree_mkdir(root, "sys/bus/platform/drivers/dfl-port");
        kdp_test_pci_sys_link(root, &port, "driver", "bus/platform/drivers/dfl-port");
        kdp_test_tree_link(root, "sys/bus/platform/devices/dfl-port.0", "../../../devices/" PORT);
        kdp_test_tree_write(root, "sys/devices/platform/serial8250/uevent",
                            "DRIVER=serial8250\nMODALIAS=platform:serial8250\n");
        kdp_test_tree_mkdir(root, "sys/bus/platform/drivers/serial8250");
        kdp_test_pci_sys_link(root, &uart, "driver", "bus/platform/drivers/serial8250");
        kdp_test_tree_link(root, "sys/bus/platform/devices/serial8250", "../../../devices/platform/serial8250");

        /* class/net: a virtual netdev, no node, no driver */
        kdp_test_tree_write(root, "sys/devices/virtual/net/lo/uevent", "INTERFACE=lo\nIFINDEX=1\n");
        kdp_test_tree_link(root, "sys/class/net/lo", "../../devices/virtual/net/lo");
        return root;
}

static void expect_device(const kdp_subsystem_device *d, const char *name, const char *devpath,
                          const char *devnode, const char *driver, const char *pci_address) {
        ck_assert_str_eq(d->name, name);
        ck_assert_str_eq(d->devpath, devpath);
        ck_assert_str_eq(d->devnode, devnode);
        ck_assert_str_eq(d->driver, driver);
        ck_assert_str_eq(d->pci_address, pci_address);
}

/* ---- tests ---- */

START_TEST(test_subsystem_enumerate_lists_a_class) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_free_ kdp_subsystem_device *d = NULL;
        size_t n = 99;

        ck_assert_int_eq(kdp_subsystem_enumerate(ctx, "fpga_region", &d, &n), 0);
        ck_assert_uint_eq(n, 2);
        expect_device(&d[0], "region0", REGION, "", "", "0000:3b:00.0");
        expect_device(&d[1], "region1", P3B "/fpga_region/region1", "", "", "0000:3b:00.0");
}
END_TEST

START_TEST(test_subsystem_enumerate_falls_back_to_a_bus) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_free_ kdp_subsystem_device *d = NULL;
        _cleanup_free_ char *node = NULL;
        size_t n = 99;

        node = kdp_test_tree_path(root, "dev/dfl-port.0");
        ck_assert_int_eq(kdp_subsystem_enumerate(ctx, "platform", &d, &n), 0);
        ck_assert_uint_eq(n, 2);
        expect_device(&d[0], "dfl-port.0", PORT, node, "dfl-port", "0000:3b:00.0");
        expect_device(&d[1], "serial8250", "platform/serial8250", "", "serial8250", "");
}
END_TEST

START_TEST(test_subsystem_enumerate_of_pci_names_the_function_itself) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_free_ kdp_subsystem_device *d = NULL;
        size_t n = 99;

        ck_assert_int_eq(kdp_subsystem_enumerate(ctx, "pci", &d, &n), 0);
        ck_assert_uint_eq(n, 2);
        expect_device(&d[0], "0000:3a:00.0", P3A, "", "pcieport", "0000:3a:00.0");
        expect_device(&d[1], "0000:3b:00.0", P3B, "", "dfl-pci", "0000:3b:00.0");
}
END_TEST

START_TEST(test_subsystem_enumerate_prefers_the_class_and_gives_no_devnode_without_devname) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_free_ kdp_subsystem_device *d = NULL;
        size_t n = 99;

        /* a bus of the same name is not read while the class exists */
        kdp_test_tree_mkdir(root, "sys/devices/virtual/net/ghost");
        kdp_test_tree_link(root, "sys/bus/net/devices/ghost", "../../../devices/virtual/net/ghost");

        ck_assert_int_eq(kdp_subsystem_enumerate(ctx, "net", &d, &n), 0);
        ck_assert_uint_eq(n, 1);
        expect_device(&d[0], "lo", "virtual/net/lo", "", "", "");
}
END_TEST

START_TEST(test_subsystem_enumerate_sorts_in_version_order) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_free_ kdp_subsystem_device *d = NULL;
        size_t n = 0;

        kdp_test_tree_write(root, "sys/devices/" P3B "/fpga_region/region10/uevent", "");
        kdp_test_tree_write(root, "sys/devices/" P3B "/fpga_region/region2/uevent", "");
        kdp_test_tree_link(root, "sys/class/fpga_region/region10", "../../devices/" P3B "/fpga_region/region10");
        kdp_test_tree_link(root, "sys/class/fpga_region/region2", "../../devices/" P3B "/fpga_region/region2");

        ck_assert_int_eq(kdp_subsystem_enumerate(ctx, "fpga_region", &d, &n), 0);
        ck_assert_uint_eq(n, 4);
        expect_device(&d[0], "region0", REGION, "", "", "0000:3b:00.0");
        expect_device(&d[1], "region1", P3B "/fpga_region/region1", "", "", "0000:3b:00.0");
        expect_device(&d[2], "region2", P3B "/fpga_region/region2", "", "", "0000:3b:00.0");
        expect_device(&d[3], "region10", P3B "/fpga_region/region10", "", "", "0000:3b:00.0");
}
END_TEST

START_TEST(test_subsystem_enumerate_skips_a_dangling_link) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_free_ kdp_subsystem_device *d = NULL;
        _cleanup_free_ char *log = NULL;
        kdp_test_capture c;
        size_t n = 0;
        int r;

        /* a region removed between readdir() and realpath() */
        kdp_test_tree_link(root, "sys/class/fpga_region/region7", "../../devices/" P3B "/fpga_region/region7");

        kdp_test_capture_begin(&c);
        r = kdp_subsystem_enumerate(ctx, "fpga_region", &d, &n);
        log = kdp_test_capture_end(&c);
        ck_assert_int_eq(r, 0);
        ck_assert_str_eq(log, "");      /* a race, not something to warn about (v=4 only) */
        ck_assert_uint_eq(n, 2);
        expect_device(&d[0], "region0", REGION, "", "", "0000:3b:00.0");
        expect_device(&d[1], "region1", P3B "/fpga_region/region1", "", "", "0000:3b:00.0");
}
END_TEST

/* Enumerates fpga_region three times: the first logs the line `level` `body` alone, the others nothing. */
static void enumerate_three_times(const kdp_backend_ctx *ctx, char level, const char *body, size_t n) {
        for (int i = 0; i < 3; i++) {
                _cleanup_free_ kdp_subsystem_device *d = NULL;
                _cleanup_free_ char *log = NULL;
                kdp_test_capture c;
                const char *p;
                size_t got = 99;

                kdp_test_capture_begin(&c);
                ck_assert_int_eq(kdp_subsystem_enumerate(ctx, "fpga_region", &d, &got), 0);
                log = kdp_test_capture_end(&c);
                ck_assert_uint_eq(got, n);
                p = log;
                if (i == 0)
                        kdp_test_expect_line(&p, level, "subsystem.c", body);
                ck_assert_str_eq(p, "");
        }
}

/* A device skipped with a warning: once per backend while it lasts, its end once, a new break again. */
START_TEST(test_subsystem_enumerate_warns_once_while_a_device_stays_bad) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_free_ char *real = NULL, *body = NULL, *devname = NULL, *uevent = NULL, *link = NULL, *dir = NULL;
        const char *name = "region_with_a_name_of_sixty_four_characters_or_more_0123456789ab";

        /* a DEVNAME that does not fit (256 bytes), then fits, then not */
        devname = calloc(300, 1);
        ck_assert_ptr_nonnull(devname);
        memset(devname, 'x', 280);
        ck_assert_int_ge(asprintf(&uevent, "DEVNAME=%s\n", devname), 0);
        kdp_test_tree_write(root, "sys/devices/" REGION "/uevent", uevent);
        real = kdp_test_tree_path(root, "sys/devices/" REGION);
        ck_assert_int_ge(asprintf(&body, "\"Skipped device with a too long node path\" backend=\"test\" "
                                         "device=\"region0\" path=\"%s\"", real), 0);
        enumerate_three_times(ctx, 'W', body, 1);
        kdp_test_tree_write(root, "sys/devices/" REGION "/uevent", "DEVNAME=fpga-region0\n");
        enumerate_three_times(ctx, 'I', "\"Device no longer skipped\" backend=\"test\" subsystem=\"fpga_region\" "
                                        "device=\"region0\"", 2);
        kdp_test_tree_write(root, "sys/devices/" REGION "/uevent", uevent);
        enumerate_three_times(ctx, 'W', body, 1);

        /* the device goes away */
        kdp_test_tree_remove(root, "sys/class/fpga_region/region0");
        enumerate_three_times(ctx, 'I', "\"Skipped device is gone\" backend=\"test\" subsystem=\"fpga_region\" "
                                        "device=\"region0\"", 1);

        /* a name that does not fit, until its entry goes; then the class itself goes */
        ck_assert_int_ge(asprintf(&link, "sys/class/fpga_region/%s", name), 0);
        kdp_test_tree_link(root, link, "../../devices/" REGION);
        dir = kdp_test_tree_path(root, "sys/class/fpga_region");
        free(body);
        ck_assert_int_ge(asprintf(&body, "\"Skipped device with a too long name\" backend=\"test\" path=\"%s\" "
                                         "device=\"%s\"", dir, name), 0);
        enumerate_three_times(ctx, 'W', body, 1);
        kdp_test_tree_remove(root, link);
        kdp_test_tree_remove(root, "sys/class/fpga_region/region1");
        kdp_test_tree_remove(root, "sys/class/fpga_region");
        free(body);
        ck_assert_int_ge(asprintf(&body, "\"Skipped device is gone\" backend=\"test\" subsystem=\"fpga_region\" "
                                         "device=\"%s\"", name), 0);
        enumerate_three_times(ctx, 'I', body, 0);
}
END_TEST

START_TEST(test_subsystem_enumerate_skips_a_too_long_name_with_a_warning) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_free_ kdp_subsystem_device *d = NULL;
        _cleanup_free_ char *log = NULL, *dir = NULL, *body = NULL, *link = NULL;
        const char *name = "region_with_a_name_of_sixty_four_characters_or_more_0123456789ab";
        const char *p;
        kdp_test_capture c;
        size_t n = 0;
        int r;

        ck_assert_uint_eq(strlen(name), 64);
        ck_assert_int_ge(asprintf(&link, "sys/class/fpga_region/%s", name), 0);
        kdp_test_tree_link(root, link, "../../devices/" REGION);

        kdp_test_capture_begin(&c);
        r = kdp_subsystem_enumerate(ctx, "fpga_region", &d, &n);
        log = kdp_test_capture_end(&c);
        ck_assert_int_eq(r, 0);
        ck_assert_uint_eq(n, 2);
        ck_assert_str_eq(d[0].name, "region0");
        ck_assert_str_eq(d[1].name, "region1");

        dir = kdp_test_tree_path(root, "sys/class/fpga_region");
        ck_assert_int_ge(asprintf(&body, "\"Skipped device with a too long name\" backend=\"test\" path=\"%s\" "
                                         "device=\"%s\"", dir, name), 0);
        p = log;
        kdp_test_expect_line(&p, 'W', "subsystem.c", body);
        ck_assert_str_eq(p, "");
}
END_TEST

START_TEST(test_subsystem_enumerate_of_a_missing_subsystem_is_empty) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        kdp_subsystem_device *d = (kdp_subsystem_device *) 1;
        size_t n = 99;

        ck_assert_int_eq(kdp_subsystem_enumerate(ctx, "infiniband", &d, &n), 0);
        ck_assert_ptr_null(d);
        ck_assert_uint_eq(n, 0);

        /* a class without devices (yet) */
        kdp_test_tree_mkdir(root, "sys/class/infiniband");
        d = (kdp_subsystem_device *) 1;
        n = 99;
        ck_assert_int_eq(kdp_subsystem_enumerate(ctx, "infiniband", &d, &n), 0);
        ck_assert_ptr_null(d);
        ck_assert_uint_eq(n, 0);
}
END_TEST

START_TEST(test_subsystem_enumerate_rejects_bad_arguments) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        kdp_subsystem_device *d = (kdp_subsystem_device *) 1;
        size_t n = 99;

        ck_assert_int_eq(kdp_subsystem_enumerate(NULL, "net", &d, &n), -EINVAL);
        ck_assert_int_eq(kdp_subsystem_enumerate(ctx, NULL, &d, &n), -EINVAL);
        ck_assert_int_eq(kdp_subsystem_enumerate(ctx, "", &d, &n), -EINVAL);
        ck_assert_int_eq(kdp_subsystem_enumerate(ctx, ".", &d, &n), -EINVAL);
        ck_assert_int_eq(kdp_subsystem_enumerate(ctx, "..", &d, &n), -EINVAL);
        ck_assert_int_eq(kdp_subsystem_enumerate(ctx, "net/lo", &d, &n), -EINVAL);
        ck_assert_int_eq(kdp_subsystem_enumerate(ctx, "../class", &d, &n), -EINVAL);
        ck_assert_int_eq(kdp_subsystem_enumerate(ctx, "net", NULL, &n), -EINVAL);
        ck_assert_int_eq(kdp_subsystem_enumerate(ctx, "net", &d, NULL), -EINVAL);
        /* nothing written on failure */
        ck_assert_ptr_eq(d, (kdp_subsystem_device *) 1);
        ck_assert_uint_eq(n, 99);
}
END_TEST

START_TEST(test_subsystem_enumerate_of_the_real_sys_lists_lo) {
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = NULL;
        _cleanup_free_ kdp_subsystem_device *d = NULL;
        const kdp_subsystem_device *lo = NULL;
        size_t n = 0;

        if (access("/sys/class/net/lo", F_OK) < 0)
                return;         /* no sysfs here */

        ck_assert_int_eq(kdp_backend_ctx_new("test", NULL, NULL, NULL, &ctx), 0);
        ck_assert_int_eq(kdp_subsystem_enumerate(ctx, "net", &d, &n), 0);
        ck_assert_uint_ge(n, 1);
        for (size_t i = 0; i < n; i++) {
                ck_assert_uint_gt(strlen(d[i].name), 0);
                ck_assert_uint_gt(strlen(d[i].devpath), 0);
                ck_assert_str_eq(d[i].devnode, "");     /* netdevs have no node */
                if (i > 0)
                        ck_assert_int_lt(strverscmp(d[i - 1].name, d[i].name), 0);
                if (strcmp(d[i].name, "lo") == 0)
                        lo = &d[i];
        }
        ck_assert_ptr_nonnull(lo);
        ck_assert_str_eq(lo->devpath, "virtual/net/lo");
        ck_assert_str_eq(lo->devnode, "");
        ck_assert_str_eq(lo->driver, "");
        ck_assert_str_eq(lo->pci_address, "");
}
END_TEST

static Suite *subsystem_suite(void) {
        Suite *s = suite_create("subsystem");
        TCase *tc = tcase_create("enumerate");

        tcase_add_test(tc, test_subsystem_enumerate_lists_a_class);
        tcase_add_test(tc, test_subsystem_enumerate_falls_back_to_a_bus);
        tcase_add_test(tc, test_subsystem_enumerate_of_pci_names_the_function_itself);
        tcase_add_test(tc, test_subsystem_enumerate_prefers_the_class_and_gives_no_devnode_without_devname);
        tcase_add_test(tc, test_subsystem_enumerate_sorts_in_version_order);
        tcase_add_test(tc, test_subsystem_enumerate_skips_a_dangling_link);
        tcase_add_test(tc, test_subsystem_enumerate_skips_a_too_long_name_with_a_warning);
        tcase_add_test(tc, test_subsystem_enumerate_warns_once_while_a_device_stays_bad);
        tcase_add_test(tc, test_subsystem_enumerate_of_a_missing_subsystem_is_empty);
        tcase_add_test(tc, test_subsystem_enumerate_rejects_bad_arguments);
        tcase_add_test(tc, test_subsystem_enumerate_of_the_real_sys_lists_lo);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return kdp_test_run(subsystem_suite());
}
