/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kdp/backend.h>
#include <kdp/cleanup.h>
#include <kdp/health.h>

#include "backend-ctx.h"

#include "kdp-test.h"
#include "kdp-test-sysfs.h"

/* ---- the fixture: one H100 behind a switch, one unbound, a ConnectX-6 Dx PF and a vfio VF ---- */

#define GPU "0000:3d:00.0"
#define GPU_DIR "sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/0000:3c:00.0/" GPU
#define UNBOUND "0000:3e:00.0"
#define VF "0000:af:00.3"
#define VF_DIR "sys/devices/pci0000:ae/0000:ae:00.0/" VF
#define PF_DIR "sys/devices/pci0000:ae/0000:ae:00.0/0000:af:00.0"

/* Writes an AER counter file as the kernel prints it (docs/hardware-gpu.md §2.2), MalfTLP carrying the total. */
static void write_aer(const char *root, const char *dev_dir, bool fatal, unsigned total) {
        _cleanup_free_ char *rel = NULL, *text = NULL;

        ck_assert_int_ge(asprintf(&rel, "%s/%s", dev_dir, fatal ? "aer_dev_fatal" : "aer_dev_nonfatal"), 0);
        ck_assert_int_ge(asprintf(&text,
                                  "Undefined 0\nDLP 0\nSDES 0\nTLP 0\nFCP 0\nCmpltTO 0\nCmpltAbrt 0\nUnxCmplt 0\n"
                                  "RxOF 0\nMalfTLP %u\nECRC 0\nUnsupReq 0\nACSViol 0\nUncorrIntErr 0\nBlockedTLP 0\n"
                                  "AtomicOpBlocked 0\nTLPBlockedErr 0\nPoisonTLPBlocked 0\nTOTAL_ERR_%s %u\n",
                                  total, fatal ? "FATAL" : "NONFATAL", total), 0);
        kdp_test_tree_write(root, rel, text);
}

static void write_net(const char *root, const char *dev_dir, const char *ifname, const char *carrier,
                      const char *operstate) {
        _cleanup_free_ char *rel = NULL, *link_rel = NULL, *target = NULL;

        ck_assert_int_ge(asprintf(&rel, "%s/net/%s/uevent", dev_dir, ifname), 0);
        kdp_test_tree_write(root, rel, "INTERFACE=x\n");
        free(rel);
        if (carrier) {
                ck_assert_int_ge(asprintf(&rel, "%s/net/%s/carrier", dev_dir, ifname), 0);
                kdp_test_tree_write(root, rel, carrier);
                free(rel);
        }
        ck_assert_int_ge(asprintf(&rel, "%s/net/%s/operstate", dev_dir, ifname), 0);
        kdp_test_tree_write(root, rel, operstate);
        ck_assert_int_ge(asprintf(&link_rel, "sys/class/net/%s", ifname), 0);
        ck_assert_int_ge(asprintf(&target, "../../%s/net/%s", dev_dir + strlen("sys/"), ifname), 0);
        kdp_test_tree_link(root, link_rel, target);
}

static char *fixture_new(void) {
        char *root = kdp_test_tree_new("health");

        kdp_test_pci_add(root, &(kdp_test_pci_dev){ .path = "pci0000:3a/0000:3a:00.0/0000:3b:00.0/0000:3c:00.0/" GPU,
                                                    .vendor = "0x10de", .device = "0x2330",
                                                    .class_code = "0x030200", .numa_node = "0",
                                                    .driver = "nvidia", .iommu_group = "14", .enable = "1" });
        write_aer(root, GPU_DIR, true, 0);
        write_aer(root, GPU_DIR, false, 0);
        kdp_test_pci_add(root, &(kdp_test_pci_dev){ .path = "pci0000:3a/0000:3a:00.0/0000:3b:00.0/0000:3c:01.0/" UNBOUND,
                                                    .vendor = "0x10de", .device = "0x2330",
                                                    .class_code = "0x030200", .numa_node = "0", .enable = "0" });
        kdp_test_pci_add(root, &(kdp_test_pci_dev){ .path = "pci0000:ae/0000:ae:00.0/0000:af:00.0",
                                                    .vendor = "0x15b3", .device = "0x101d",
                                                    .class_code = "0x020000", .numa_node = "1",
                                                    .driver = "mlx5_core", .enable = "1", .sriov_totalvfs = "8",
                                                    .sriov_numvfs = "2" });
        kdp_test_pci_add(root, &(kdp_test_pci_dev){ .path = "pci0000:ae/0000:ae:00.0/" VF, .vendor = "0x15b3",
                                                    .device = "0x101e", .class_code = "0x020000",
                                                    .numa_node = "1", .driver = "vfio-pci", .enable = "1",
                                                    .physfn = "0000:af:00.0", .vf_index = 1 });
        write_aer(root, VF_DIR, true, 0);
        write_aer(root, VF_DIR, false, 0);

        write_net(root, PF_DIR, "ens1f0", "1\n", "up\n");
        write_net(root, PF_DIR, "ens1f1", "0\n", "down\n");
        write_net(root, PF_DIR, "ens1f2", NULL, "down\n");             /* administratively down */
        write_net(root, PF_DIR, "ens1f3", "1\n", "unknown\n");
        write_net(root, PF_DIR, "ens1f4", "1\n", "dormant\n");
        return root;
}

/* Runs the check and returns its reason ("" when healthy, asserting the result matches). */
static char *check(const kdp_backend_ctx *ctx, const char *address, const char *driver, unsigned checks,
                   kdp_health_pci *state) {
        char *reason = (char *) "untouched";
        int r;

        r = kdp_health_pci_check(ctx, address, driver, checks, state, &reason);
        ck_assert_msg(r == KDP_HEALTHY || r == KDP_UNHEALTHY, "check of %s: %d", address, r);
        if (r == KDP_HEALTHY) {
                ck_assert_ptr_null(reason);
                return strdup("");
        }
        ck_assert_ptr_nonnull(reason);
        ck_assert_str_ne(reason, "");
        return reason;
}

#define CHECK_EQ(ctx, address, driver, checks, state, want)                                 \
        do {                                                                                \
                _cleanup_free_ char *_got = check((ctx), (address), (driver), (checks), (state)); \
                ck_assert_str_eq(_got, (want));                                             \
        } while (0)

/* ---- PCI ---- */

START_TEST(test_health_pci_check_passes_a_healthy_device_and_takes_the_baseline) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        kdp_health_pci st = { 0 };

        CHECK_EQ(ctx, GPU, "nvidia", KDP_HEALTH_PCI_ALL, &st, "");
        ck_assert_int_eq(st.based, 1);
        ck_assert_uint_eq(st.aer_fatal_base, 0);
        ck_assert_uint_eq(st.aer_nonfatal_base, 0);
        CHECK_EQ(ctx, GPU, "nvidia", KDP_HEALTH_PCI_ALL, &st, "");
}
END_TEST

START_TEST(test_health_pci_check_reports_a_removed_device) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_free_ char *dir = kdp_test_tree_path(root, GPU_DIR);
        kdp_health_pci st = { 0 };

        CHECK_EQ(ctx, GPU, "nvidia", KDP_HEALTH_PCI_ALL, &st, "");
        /* hot-unplug: the directory goes, the bus/pci/devices link is left dangling */
        kdp_test_rm_rfp(&dir);
        dir = NULL;
        CHECK_EQ(ctx, GPU, "nvidia", KDP_HEALTH_PCI_ALL, &st, "device removed");
        CHECK_EQ(ctx, GPU, "nvidia", KDP_HEALTH_PCI_PRESENT, NULL, "device removed");
        CHECK_EQ(ctx, GPU, NULL, KDP_HEALTH_PCI_DRIVER, NULL, "device removed");
        CHECK_EQ(ctx, "0000:ff:00.0", NULL, KDP_HEALTH_PCI_PRESENT, NULL, "device removed");
        ck_assert_int_eq(kdp_health_pci_rebase(ctx, GPU, &st), -ENOENT);
}
END_TEST

START_TEST(test_health_pci_check_reports_an_unbound_driver) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);

        CHECK_EQ(ctx, UNBOUND, "nvidia", KDP_HEALTH_PCI_DRIVER, NULL, "driver unbound (expected nvidia)");
        CHECK_EQ(ctx, UNBOUND, NULL, KDP_HEALTH_PCI_DRIVER, NULL, "driver unbound");
        /* unbinding the GPU (the link goes) */
        kdp_test_tree_remove(root, GPU_DIR "/driver");
        CHECK_EQ(ctx, GPU, "nvidia", KDP_HEALTH_PCI_PRESENT | KDP_HEALTH_PCI_DRIVER, NULL,
                 "driver unbound (expected nvidia)");
}
END_TEST

START_TEST(test_health_pci_check_reports_the_wrong_driver) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);

        CHECK_EQ(ctx, VF, "mlx5_core", KDP_HEALTH_PCI_DRIVER, NULL, "bound to vfio-pci instead of mlx5_core");
        CHECK_EQ(ctx, VF, "vfio-pci", KDP_HEALTH_PCI_DRIVER, NULL, "");
        CHECK_EQ(ctx, VF, NULL, KDP_HEALTH_PCI_DRIVER, NULL, "");
}
END_TEST

START_TEST(test_health_pci_check_reports_a_disabled_device) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);

        CHECK_EQ(ctx, UNBOUND, NULL, KDP_HEALTH_PCI_ENABLED, NULL, "disabled (enable=0)");
        kdp_test_tree_write(root, GPU_DIR "/enable", "0\n");
        CHECK_EQ(ctx, GPU, "nvidia", KDP_HEALTH_PCI_ENABLED, NULL, "disabled (enable=0)");
        /* `enable` is a count */
        kdp_test_tree_write(root, GPU_DIR "/enable", "2\n");
        CHECK_EQ(ctx, GPU, "nvidia", KDP_HEALTH_PCI_ENABLED, NULL, "");
        /* no such file: nothing to check */
        kdp_test_tree_remove(root, GPU_DIR "/enable");
        CHECK_EQ(ctx, GPU, "nvidia", KDP_HEALTH_PCI_ENABLED, NULL, "");
}
END_TEST

START_TEST(test_health_pci_check_reports_rising_aer_fatal_until_rebased) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        kdp_health_pci st = { 0 };

        CHECK_EQ(ctx, GPU, "nvidia", KDP_HEALTH_PCI_ALL, &st, "");
        write_aer(root, GPU_DIR, true, 2);
        CHECK_EQ(ctx, GPU, "nvidia", KDP_HEALTH_PCI_ALL, &st, "AER fatal errors rose from 0 to 2");
        /* stays unhealthy: the baseline is not moved by a check */
        CHECK_EQ(ctx, GPU, "nvidia", KDP_HEALTH_PCI_ALL, &st, "AER fatal errors rose from 0 to 2");
        ck_assert_uint_eq(st.aer_fatal_base, 0);
        /* a check that does not ask for AER does not see it */
        CHECK_EQ(ctx, GPU, "nvidia", KDP_HEALTH_PCI_ALL & ~KDP_HEALTH_PCI_AER_FATAL, &st, "");

        /* after the reset the backend re-takes the baseline */
        ck_assert_int_eq(kdp_health_pci_rebase(ctx, GPU, &st), 0);
        ck_assert_uint_eq(st.aer_fatal_base, 2);
        ck_assert_uint_eq(st.aer_nonfatal_base, 0);
        CHECK_EQ(ctx, GPU, "nvidia", KDP_HEALTH_PCI_ALL, &st, "");
        write_aer(root, GPU_DIR, true, 3);
        CHECK_EQ(ctx, GPU, "nvidia", KDP_HEALTH_PCI_AER_FATAL, &st, "AER fatal errors rose from 2 to 3");
}
END_TEST

START_TEST(test_health_pci_check_reports_rising_aer_nonfatal) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        kdp_health_pci st = { 0 };

        CHECK_EQ(ctx, GPU, "nvidia", KDP_HEALTH_PCI_AER_NONFATAL, &st, "");
        write_aer(root, GPU_DIR, false, 1);
        CHECK_EQ(ctx, GPU, "nvidia", KDP_HEALTH_PCI_AER_NONFATAL, &st, "AER non-fatal errors rose from 0 to 1");
        CHECK_EQ(ctx, GPU, "nvidia", KDP_HEALTH_PCI_AER_FATAL, &st, "");
        write_aer(root, GPU_DIR, true, 7);
        CHECK_EQ(ctx, GPU, "nvidia", KDP_HEALTH_PCI_ALL, &st,
                 "AER fatal errors rose from 0 to 7; AER non-fatal errors rose from 0 to 1");
}
END_TEST

START_TEST(test_health_pci_check_takes_a_nonzero_baseline) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        kdp_health_pci st = { 0 };

        /* errors from before kdp started are no news */
        write_aer(root, GPU_DIR, true, 5);
        write_aer(root, GPU_DIR, false, 9);
        CHECK_EQ(ctx, GPU, "nvidia", KDP_HEALTH_PCI_AER_FATAL, &st, "");
        ck_assert_uint_eq(st.aer_fatal_base, 5);
        ck_assert_uint_eq(st.aer_nonfatal_base, 9);
        CHECK_EQ(ctx, GPU, "nvidia", KDP_HEALTH_PCI_ALL, &st, "");
}
END_TEST

START_TEST(test_health_pci_check_follows_counters_that_restart) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        kdp_health_pci st = { 0 };

        write_aer(root, GPU_DIR, true, 4);
        CHECK_EQ(ctx, GPU, "nvidia", KDP_HEALTH_PCI_AER_FATAL, &st, "");
        /* removed and re-added: fresh counters */
        write_aer(root, GPU_DIR, true, 0);
        CHECK_EQ(ctx, GPU, "nvidia", KDP_HEALTH_PCI_AER_FATAL, &st, "");
        ck_assert_uint_eq(st.aer_fatal_base, 0);
        write_aer(root, GPU_DIR, true, 1);
        CHECK_EQ(ctx, GPU, "nvidia", KDP_HEALTH_PCI_AER_FATAL, &st, "AER fatal errors rose from 0 to 1");
}
END_TEST

START_TEST(test_health_pci_check_skips_missing_aer_files) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        kdp_health_pci st = { 0 }, gpu = { 0 };

        /* UNBOUND has no AER files at all */
        CHECK_EQ(ctx, UNBOUND, NULL, KDP_HEALTH_PCI_AER_FATAL | KDP_HEALTH_PCI_AER_NONFATAL, &st, "");
        ck_assert_int_eq(st.based, 1);
        ck_assert_uint_eq(st.aer_fatal_base, 0);
        CHECK_EQ(ctx, UNBOUND, NULL, KDP_HEALTH_PCI_AER_FATAL | KDP_HEALTH_PCI_AER_NONFATAL, &st, "");
        ck_assert_int_eq(kdp_health_pci_rebase(ctx, UNBOUND, &st), 0);

        /* a file that goes away skips just its check */
        CHECK_EQ(ctx, GPU, "nvidia", KDP_HEALTH_PCI_ALL, &gpu, "");
        write_aer(root, GPU_DIR, false, 3);
        kdp_test_tree_remove(root, GPU_DIR "/aer_dev_fatal");
        CHECK_EQ(ctx, GPU, "nvidia", KDP_HEALTH_PCI_ALL, &gpu, "AER non-fatal errors rose from 0 to 3");
}
END_TEST

START_TEST(test_health_pci_check_reads_only_token_count_lines) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        kdp_health_pci st = { 0 };

        CHECK_EQ(ctx, GPU, "nvidia", KDP_HEALTH_PCI_AER_FATAL, &st, "");
        /* an unnamed bit, a longer token, a line that is no counter, then the total */
        kdp_test_tree_write(root, GPU_DIR "/aer_dev_fatal",
                            "dev_fatal_errs_bit[27] 1\nTOTAL_ERR_FATALS 9\nTOTAL_ERR_FATAL x\nTOTAL_ERR_FATAL 1\n");
        CHECK_EQ(ctx, GPU, "nvidia", KDP_HEALTH_PCI_AER_FATAL, &st, "AER fatal errors rose from 0 to 1");
        /* no total at all: nothing to check */
        kdp_test_tree_write(root, GPU_DIR "/aer_dev_fatal", "MalfTLP 4\n");
        CHECK_EQ(ctx, GPU, "nvidia", KDP_HEALTH_PCI_AER_FATAL, &st, "");
}
END_TEST

START_TEST(test_health_pci_check_reports_every_failure) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        kdp_health_pci st = { 0 };

        CHECK_EQ(ctx, VF, "vfio-pci", KDP_HEALTH_PCI_ALL, &st, "");
        kdp_test_tree_write(root, VF_DIR "/enable", "0\n");
        write_aer(root, VF_DIR, true, 1);
        write_aer(root, VF_DIR, false, 2);
        CHECK_EQ(ctx, VF, "mlx5_core", KDP_HEALTH_PCI_ALL, &st,
                 "bound to vfio-pci instead of mlx5_core; disabled (enable=0); AER fatal errors rose from 0 to 1; "
                 "AER non-fatal errors rose from 0 to 2");
}
END_TEST

START_TEST(test_health_pci_check_runs_only_the_requested_checks) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);

        CHECK_EQ(ctx, UNBOUND, "nvidia", KDP_HEALTH_PCI_PRESENT, NULL, "");
        CHECK_EQ(ctx, UNBOUND, "nvidia", 0, NULL, "");
        CHECK_EQ(ctx, "0000:ff:00.0", "nvidia", 0, NULL, "");
        CHECK_EQ(ctx, UNBOUND, "nvidia", KDP_HEALTH_PCI_PRESENT | KDP_HEALTH_PCI_ENABLED, NULL,
                 "disabled (enable=0)");
}
END_TEST

START_TEST(test_health_pci_check_rejects_bad_arguments) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        kdp_health_pci st = { 0 };
        char *reason = NULL;

        ck_assert_int_eq(kdp_health_pci_check(NULL, GPU, NULL, KDP_HEALTH_PCI_ALL, &st, &reason), -EINVAL);
        ck_assert_int_eq(kdp_health_pci_check(ctx, NULL, NULL, KDP_HEALTH_PCI_ALL, &st, &reason), -EINVAL);
        ck_assert_int_eq(kdp_health_pci_check(ctx, "", NULL, KDP_HEALTH_PCI_ALL, &st, &reason), -EINVAL);
        ck_assert_int_eq(kdp_health_pci_check(ctx, "..", NULL, KDP_HEALTH_PCI_ALL, &st, &reason), -EINVAL);
        ck_assert_int_eq(kdp_health_pci_check(ctx, "0000:3d:00.0/..", NULL, KDP_HEALTH_PCI_ALL, &st, &reason),
                         -EINVAL);
        ck_assert_int_eq(kdp_health_pci_check(ctx, GPU, NULL, KDP_HEALTH_PCI_ALL + 1, &st, &reason), -EINVAL);
        ck_assert_int_eq(kdp_health_pci_check(ctx, GPU, NULL, KDP_HEALTH_PCI_AER_FATAL, NULL, &reason), -EINVAL);
        ck_assert_int_eq(kdp_health_pci_check(ctx, GPU, "", KDP_HEALTH_PCI_DRIVER, NULL, &reason), -EINVAL);
        ck_assert_int_eq(kdp_health_pci_check(ctx, GPU, NULL, KDP_HEALTH_PCI_ALL, &st, NULL), -EINVAL);
        ck_assert_ptr_null(reason);
        ck_assert_int_eq(st.based, 0);

        ck_assert_int_eq(kdp_health_pci_rebase(NULL, GPU, &st), -EINVAL);
        ck_assert_int_eq(kdp_health_pci_rebase(ctx, "../x", &st), -EINVAL);
        ck_assert_int_eq(kdp_health_pci_rebase(ctx, GPU, NULL), -EINVAL);
}
END_TEST

/* ---- device nodes ---- */

START_TEST(test_health_check_dev_node_accepts_a_regular_file_in_a_plain_tree) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        char *reason = (char *) "untouched";

        kdp_test_tree_write(root, "dev/dri/renderD128", "");
        ck_assert_int_eq(kdp_health_check_dev_node(ctx, "dri/renderD128", &reason), KDP_HEALTHY);
        ck_assert_ptr_null(reason);
        reason = (char *) "untouched";
        ck_assert_int_eq(kdp_health_check_dev_node(ctx, "/dri/renderD128", &reason), KDP_HEALTHY);
        ck_assert_ptr_null(reason);
}
END_TEST

START_TEST(test_health_check_dev_node_reports_a_missing_node) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_free_ char *reason = NULL, *want = NULL;

        kdp_test_tree_write(root, "dev/dri/renderD128", "");
        ck_assert_int_eq(kdp_health_check_dev_node(ctx, "dri/renderD129", &reason), KDP_UNHEALTHY);
        ck_assert_int_ge(asprintf(&want, "device node %s/dev/dri/renderD129 missing", root), 0);
        ck_assert_str_eq(reason, want);
        free(reason);
        free(want);
        /* a path through a file */
        ck_assert_int_eq(kdp_health_check_dev_node(ctx, "dri/renderD128/x", &reason), KDP_UNHEALTHY);
        ck_assert_int_ge(asprintf(&want, "device node %s/dev/dri/renderD128/x missing", root), 0);
        ck_assert_str_eq(reason, want);
}
END_TEST

START_TEST(test_health_check_dev_node_wants_a_character_device_on_a_device_filesystem) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_free_ char *reason = NULL, *want = NULL;

        /* <dev root>/null a character device: this dev root is a real device filesystem */
        kdp_test_tree_link(root, "dev/null", "/dev/null");
        kdp_test_tree_write(root, "dev/nvidia0", "");
        kdp_test_tree_link(root, "dev/nvidiactl", "/dev/null");

        ck_assert_int_eq(kdp_health_check_dev_node(ctx, "nvidia0", &reason), KDP_UNHEALTHY);
        ck_assert_int_ge(asprintf(&want, "device node %s/dev/nvidia0 is not a character device", root), 0);
        ck_assert_str_eq(reason, want);
        free(reason);
        reason = (char *) "untouched";
        ck_assert_int_eq(kdp_health_check_dev_node(ctx, "nvidiactl", &reason), KDP_HEALTHY);
        ck_assert_ptr_null(reason);
}
END_TEST

START_TEST(test_health_check_dev_node_rejects_a_directory) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_free_ char *reason = NULL, *want = NULL;

        kdp_test_tree_mkdir(root, "dev/dri");
        ck_assert_int_eq(kdp_health_check_dev_node(ctx, "dri", &reason), KDP_UNHEALTHY);
        ck_assert_int_ge(asprintf(&want, "device node %s/dev/dri is not a character device", root), 0);
        ck_assert_str_eq(reason, want);
}
END_TEST

START_TEST(test_health_check_dev_node_rejects_bad_arguments) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        char *reason = NULL;

        ck_assert_int_eq(kdp_health_check_dev_node(NULL, "nvidia0", &reason), -EINVAL);
        ck_assert_int_eq(kdp_health_check_dev_node(ctx, NULL, &reason), -EINVAL);
        ck_assert_int_eq(kdp_health_check_dev_node(ctx, "", &reason), -EINVAL);
        ck_assert_int_eq(kdp_health_check_dev_node(ctx, "nvidia0", NULL), -EINVAL);
        ck_assert_ptr_null(reason);
}
END_TEST

/* ---- network links ---- */

START_TEST(test_health_check_net_link_passes_a_link_with_carrier) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        char *reason = (char *) "untouched";

        ck_assert_int_eq(kdp_health_check_net_link(ctx, "ens1f0", &reason), KDP_HEALTHY);
        ck_assert_ptr_null(reason);
        /* a driver that does not track operstate */
        reason = (char *) "untouched";
        ck_assert_int_eq(kdp_health_check_net_link(ctx, "ens1f3", &reason), KDP_HEALTHY);
        ck_assert_ptr_null(reason);
}
END_TEST

START_TEST(test_health_check_net_link_reports_a_link_down) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        char *reason = NULL;

        ck_assert_int_eq(kdp_health_check_net_link(ctx, "ens1f1", &reason), KDP_UNHEALTHY);
        ck_assert_str_eq(reason, "link down (carrier 0, operstate down)");
        free(reason);
        ck_assert_int_eq(kdp_health_check_net_link(ctx, "ens1f2", &reason), KDP_UNHEALTHY);
        ck_assert_str_eq(reason, "link down (carrier unreadable, operstate down)");
        free(reason);
        ck_assert_int_eq(kdp_health_check_net_link(ctx, "ens1f4", &reason), KDP_UNHEALTHY);
        ck_assert_str_eq(reason, "link down (carrier 1, operstate dormant)");
        free(reason);

        /* the link goes down between two probes */
        kdp_test_tree_write(root, PF_DIR "/net/ens1f0/carrier", "0\n");
        kdp_test_tree_write(root, PF_DIR "/net/ens1f0/operstate", "lowerlayerdown\n");
        ck_assert_int_eq(kdp_health_check_net_link(ctx, "ens1f0", &reason), KDP_UNHEALTHY);
        ck_assert_str_eq(reason, "link down (carrier 0, operstate lowerlayerdown)");
        free(reason);
}
END_TEST

START_TEST(test_health_check_net_link_of_a_missing_interface_is_enoent) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        char *reason = NULL;

        /* a VF netdev moved into a pod: gone from the host's class/net */
        ck_assert_int_eq(kdp_health_check_net_link(ctx, "ens1f0v1", &reason), -ENOENT);
        ck_assert_ptr_null(reason);
}
END_TEST

START_TEST(test_health_check_net_link_rejects_bad_arguments) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        char *reason = NULL;

        ck_assert_int_eq(kdp_health_check_net_link(NULL, "ens1f0", &reason), -EINVAL);
        ck_assert_int_eq(kdp_health_check_net_link(ctx, NULL, &reason), -EINVAL);
        ck_assert_int_eq(kdp_health_check_net_link(ctx, "", &reason), -EINVAL);
        ck_assert_int_eq(kdp_health_check_net_link(ctx, "..", &reason), -EINVAL);
        ck_assert_int_eq(kdp_health_check_net_link(ctx, "../../devices", &reason), -EINVAL);
        ck_assert_int_eq(kdp_health_check_net_link(ctx, "ens1f0np0-very-long", &reason), -EINVAL);
        ck_assert_int_eq(kdp_health_check_net_link(ctx, "ens1f0", NULL), -EINVAL);
        ck_assert_ptr_null(reason);
}
END_TEST

static Suite *health_suite(void) {
        Suite *s = suite_create("health");
        TCase *tc;

        tc = tcase_create("pci");
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, test_health_pci_check_passes_a_healthy_device_and_takes_the_baseline);
        tcase_add_test(tc, test_health_pci_check_reports_a_removed_device);
        tcase_add_test(tc, test_health_pci_check_reports_an_unbound_driver);
        tcase_add_test(tc, test_health_pci_check_reports_the_wrong_driver);
        tcase_add_test(tc, test_health_pci_check_reports_a_disabled_device);
        tcase_add_test(tc, test_health_pci_check_reports_rising_aer_fatal_until_rebased);
        tcase_add_test(tc, test_health_pci_check_reports_rising_aer_nonfatal);
        tcase_add_test(tc, test_health_pci_check_takes_a_nonzero_baseline);
        tcase_add_test(tc, test_health_pci_check_follows_counters_that_restart);
        tcase_add_test(tc, test_health_pci_check_skips_missing_aer_files);
        tcase_add_test(tc, test_health_pci_check_reads_only_token_count_lines);
        tcase_add_test(tc, test_health_pci_check_reports_every_failure);
        tcase_add_test(tc, test_health_pci_check_runs_only_the_requested_checks);
        tcase_add_test(tc, test_health_pci_check_rejects_bad_arguments);
        suite_add_tcase(s, tc);

        tc = tcase_create("dev-node");
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, test_health_check_dev_node_accepts_a_regular_file_in_a_plain_tree);
        tcase_add_test(tc, test_health_check_dev_node_reports_a_missing_node);
        tcase_add_test(tc, test_health_check_dev_node_wants_a_character_device_on_a_device_filesystem);
        tcase_add_test(tc, test_health_check_dev_node_rejects_a_directory);
        tcase_add_test(tc, test_health_check_dev_node_rejects_bad_arguments);
        suite_add_tcase(s, tc);

        tc = tcase_create("net");
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, test_health_check_net_link_passes_a_link_with_carrier);
        tcase_add_test(tc, test_health_check_net_link_reports_a_link_down);
        tcase_add_test(tc, test_health_check_net_link_of_a_missing_interface_is_enoent);
        tcase_add_test(tc, test_health_check_net_link_rejects_bad_arguments);
        suite_add_tcase(s, tc);

        return s;
}

int main(void) {
        return kdp_test_run(health_suite());
}
