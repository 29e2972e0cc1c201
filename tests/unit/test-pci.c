/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <check.h>
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kdp/backend.h>
#include <kdp/cleanup.h>
#include <kdp/pci.h>

#include "backend-ctx.h"

#include "kdp-test.h"
#include "kdp-test-sysfs.h"

KDP_DEFINE_CLEANUP_FUNC(kdp_pci_list, kdp_pci_list_free)

/* ---- the fixture: a two-socket GPU and NIC server, plus the BMC ---- */

#define P3A "pci0000:3a/0000:3a:00.0"
#define P3B P3A "/0000:3b:00.0"
#define PAE "pci0000:ae/0000:ae:00.0"
#define PBMC "pci0000:00/0000:00:1c.0"

/* aer_dev_fatal of a healthy H100, as the kernel prints it (docs/hardware-gpu.md §2.2), without the last newline */
#define AER_FATAL_ZERO                                                                                   \
        "Undefined 0\nDLP 0\nSDES 0\nTLP 0\nFCP 0\nCmpltTO 0\nCmpltAbrt 0\nUnxCmplt 0\nRxOF 0\nMalfTLP 0\n" \
        "ECRC 0\nUnsupReq 0\nACSViol 0\nUncorrIntErr 0\nBlockedTLP 0\nAtomicOpBlocked 0\nTLPBlockedErr 0\n"   \
        "PoisonTLPBlocked 0\nTOTAL_ERR_FATAL 0"

static const kdp_test_pci_dev fixture_devices[] = {
        /* the BMC's VGA behind its PCIe-to-PCI bridge: no NUMA affinity, no IOMMU group */
        { .path = PBMC, .vendor = "0x8086", .device = "0xa190", .class_code = "0x060400",
          .subsystem_vendor = "0x8086", .subsystem_device = "0x7270", .numa_node = "-1", .driver = "pcieport",
          .enable = "1" },
        { .path = PBMC "/0000:01:00.0", .vendor = "0x1a03", .device = "0x1150", .class_code = "0x060400",
          .subsystem_vendor = "0x1a03", .subsystem_device = "0x1150", .numa_node = "-1", .enable = "1" },
        { .path = PBMC "/0000:01:00.0/0000:02:00.0", .vendor = "0x1a03", .device = "0x2000",
          .class_code = "0x030000", .subsystem_vendor = "0x1a03", .subsystem_device = "0x2000",
          .numa_node = "-1", .driver = "ast", .enable = "1" },
        /* NUMA 0: root port, a Broadcom PEX890xx switch (upstream + 2 downstream ports), two H100 */
        { .path = P3A, .vendor = "0x8086", .device = "0x347a", .class_code = "0x060400",
          .subsystem_vendor = "0x8086", .subsystem_device = "0x0000", .numa_node = "0", .driver = "pcieport",
          .iommu_group = "10", .enable = "1" },
        { .path = P3B, .vendor = "0x1000", .device = "0xc030", .class_code = "0x060400",
          .subsystem_vendor = "0x1000", .subsystem_device = "0xa064", .numa_node = "0", .driver = "pcieport",
          .iommu_group = "11", .enable = "1" },
        { .path = P3B "/0000:3c:00.0", .vendor = "0x1000", .device = "0xc030", .class_code = "0x060400",
          .subsystem_vendor = "0x1000", .subsystem_device = "0xa064", .numa_node = "0", .driver = "pcieport",
          .iommu_group = "12", .enable = "1" },
        { .path = P3B "/0000:3c:01.0", .vendor = "0x1000", .device = "0xc030", .class_code = "0x060400",
          .subsystem_vendor = "0x1000", .subsystem_device = "0xa064", .numa_node = "0", .driver = "pcieport",
          .iommu_group = "13", .enable = "1" },
        { .path = P3B "/0000:3c:00.0/0000:3d:00.0", .vendor = "0x10de", .device = "0x2330",
          .class_code = "0x030200", .subsystem_vendor = "0x10de", .subsystem_device = "0x16c1",
          .numa_node = "0", .driver = "nvidia", .iommu_group = "14", .enable = "1" },
        { .path = P3B "/0000:3c:01.0/0000:3e:00.0", .vendor = "0x10de", .device = "0x2330",
          .class_code = "0x030200", .subsystem_vendor = "0x10de", .subsystem_device = "0x16c1",
          .numa_node = "0", .driver = "nvidia", .iommu_group = "15", .enable = "1" },
        /* an integrated endpoint on the host bridge, bound to nothing, without subsystem files */
        { .path = "pci0000:3a/0000:3a:01.0", .vendor = "0x8086", .device = "0x0b00", .class_code = "0x088000",
          .numa_node = "0", .iommu_group = "16", .enable = "0" },
        /* a directory without `vendor`: libpci's error, skipped */
        { .path = "pci0000:3a/0000:3a:05.0", .device = "0x09a2", .class_code = "0x088000", .numa_node = "0" },
        /* NUMA 1: a ConnectX-6 Dx PF with 2 of 8 VFs enabled, one VF on mlx5_core, one on vfio-pci */
        { .path = PAE, .vendor = "0x8086", .device = "0x347a", .class_code = "0x060400",
          .subsystem_vendor = "0x8086", .subsystem_device = "0x0000", .numa_node = "1", .driver = "pcieport",
          .iommu_group = "20", .enable = "1" },
        { .path = PAE "/0000:af:00.0", .vendor = "0x15b3", .device = "0x101d", .class_code = "0x020000",
          .subsystem_vendor = "0x15b3", .subsystem_device = "0x0016", .numa_node = "1", .driver = "mlx5_core",
          .iommu_group = "21", .enable = "1", .sriov_totalvfs = "8", .sriov_numvfs = "2" },
        { .path = PAE "/0000:af:00.2", .vendor = "0x15b3", .device = "0x101e", .class_code = "0x020000",
          .subsystem_vendor = "0x15b3", .subsystem_device = "0x0016", .numa_node = "1", .driver = "mlx5_core",
          .iommu_group = "22", .enable = "1", .physfn = "0000:af:00.0", .vf_index = 0 },
        { .path = PAE "/0000:af:00.3", .vendor = "0x15b3", .device = "0x101e", .class_code = "0x020000",
          .subsystem_vendor = "0x15b3", .subsystem_device = "0x0016", .numa_node = "1", .driver = "vfio-pci",
          .iommu_group = "23", .enable = "1", .physfn = "0000:af:00.0", .vf_index = 1 },
};

/* What the scan must return for the fixture, in address order. */
static const kdp_pci_device fixture_expected[] = {
        { .address = "0000:00:1c.0", .vendor_id = 0x8086, .device_id = 0xa190, .subsystem_vendor_id = 0x8086,
          .subsystem_device_id = 0x7270, .class_code = 0x060400, .driver = "pcieport", .numa_node = -1,
          .iommu_group = -1, .sriov_totalvfs = -1, .sriov_numvfs = 0, .physfn = "", .parent = "",
          .path = PBMC, .is_bridge = true },
        { .address = "0000:01:00.0", .vendor_id = 0x1a03, .device_id = 0x1150, .subsystem_vendor_id = 0x1a03,
          .subsystem_device_id = 0x1150, .class_code = 0x060400, .driver = "", .numa_node = -1,
          .iommu_group = -1, .sriov_totalvfs = -1, .sriov_numvfs = 0, .physfn = "", .parent = "0000:00:1c.0",
          .path = PBMC "/0000:01:00.0", .is_bridge = true },
        { .address = "0000:02:00.0", .vendor_id = 0x1a03, .device_id = 0x2000, .subsystem_vendor_id = 0x1a03,
          .subsystem_device_id = 0x2000, .class_code = 0x030000, .driver = "ast", .numa_node = -1,
          .iommu_group = -1, .sriov_totalvfs = -1, .sriov_numvfs = 0, .physfn = "", .parent = "0000:01:00.0",
          .path = PBMC "/0000:01:00.0/0000:02:00.0", .is_bridge = false },
        { .address = "0000:3a:00.0", .vendor_id = 0x8086, .device_id = 0x347a, .subsystem_vendor_id = 0x8086,
          .subsystem_device_id = 0x0000, .class_code = 0x060400, .driver = "pcieport", .numa_node = 0,
          .iommu_group = 10, .sriov_totalvfs = -1, .sriov_numvfs = 0, .physfn = "", .parent = "", .path = P3A,
          .is_bridge = true },
        { .address = "0000:3a:01.0", .vendor_id = 0x8086, .device_id = 0x0b00, .subsystem_vendor_id = 0,
          .subsystem_device_id = 0, .class_code = 0x088000, .driver = "", .numa_node = 0, .iommu_group = 16,
          .sriov_totalvfs = -1, .sriov_numvfs = 0, .physfn = "", .parent = "", .path = "pci0000:3a/0000:3a:01.0",
          .is_bridge = false },
        { .address = "0000:3b:00.0", .vendor_id = 0x1000, .device_id = 0xc030, .subsystem_vendor_id = 0x1000,
          .subsystem_device_id = 0xa064, .class_code = 0x060400, .driver = "pcieport", .numa_node = 0,
          .iommu_group = 11, .sriov_totalvfs = -1, .sriov_numvfs = 0, .physfn = "", .parent = "0000:3a:00.0",
          .path = P3B, .is_bridge = true },
        { .address = "0000:3c:00.0", .vendor_id = 0x1000, .device_id = 0xc030, .subsystem_vendor_id = 0x1000,
          .subsystem_device_id = 0xa064, .class_code = 0x060400, .driver = "pcieport", .numa_node = 0,
          .iommu_group = 12, .sriov_totalvfs = -1, .sriov_numvfs = 0, .physfn = "", .parent = "0000:3b:00.0",
          .path = P3B "/0000:3c:00.0", .is_bridge = true },
        { .address = "0000:3c:01.0", .vendor_id = 0x1000, .device_id = 0xc030, .subsystem_vendor_id = 0x1000,
          .subsystem_device_id = 0xa064, .class_code = 0x060400, .driver = "pcieport", .numa_node = 0,
          .iommu_group = 13, .sriov_totalvfs = -1, .sriov_numvfs = 0, .physfn = "", .parent = "0000:3b:00.0",
          .path = P3B "/0000:3c:01.0", .is_bridge = true },
        { .address = "0000:3d:00.0", .vendor_id = 0x10de, .device_id = 0x2330, .subsystem_vendor_id = 0x10de,
          .subsystem_device_id = 0x16c1, .class_code = 0x030200, .driver = "nvidia", .numa_node = 0,
          .iommu_group = 14, .sriov_totalvfs = -1, .sriov_numvfs = 0, .physfn = "", .parent = "0000:3c:00.0",
          .path = P3B "/0000:3c:00.0/0000:3d:00.0", .is_bridge = false },
        { .address = "0000:3e:00.0", .vendor_id = 0x10de, .device_id = 0x2330, .subsystem_vendor_id = 0x10de,
          .subsystem_device_id = 0x16c1, .class_code = 0x030200, .driver = "nvidia", .numa_node = 0,
          .iommu_group = 15, .sriov_totalvfs = -1, .sriov_numvfs = 0, .physfn = "", .parent = "0000:3c:01.0",
          .path = P3B "/0000:3c:01.0/0000:3e:00.0", .is_bridge = false },
        { .address = "0000:ae:00.0", .vendor_id = 0x8086, .device_id = 0x347a, .subsystem_vendor_id = 0x8086,
          .subsystem_device_id = 0x0000, .class_code = 0x060400, .driver = "pcieport", .numa_node = 1,
          .iommu_group = 20, .sriov_totalvfs = -1, .sriov_numvfs = 0, .physfn = "", .parent = "", .path = PAE,
          .is_bridge = true },
        { .address = "0000:af:00.0", .vendor_id = 0x15b3, .device_id = 0x101d, .subsystem_vendor_id = 0x15b3,
          .subsystem_device_id = 0x0016, .class_code = 0x020000, .driver = "mlx5_core", .numa_node = 1,
          .iommu_group = 21, .sriov_totalvfs = 8, .sriov_numvfs = 2, .physfn = "", .parent = "0000:ae:00.0",
          .path = PAE "/0000:af:00.0", .is_bridge = false },
        { .address = "0000:af:00.2", .vendor_id = 0x15b3, .device_id = 0x101e, .subsystem_vendor_id = 0x15b3,
          .subsystem_device_id = 0x0016, .class_code = 0x020000, .driver = "mlx5_core", .numa_node = 1,
          .iommu_group = 22, .sriov_totalvfs = -1, .sriov_numvfs = 0, .physfn = "0000:af:00.0",
          .parent = "0000:ae:00.0", .path = PAE "/0000:af:00.2", .is_bridge = false },
        { .address = "0000:af:00.3", .vendor_id = 0x15b3, .device_id = 0x101e, .subsystem_vendor_id = 0x15b3,
          .subsystem_device_id = 0x0016, .class_code = 0x020000, .driver = "vfio-pci", .numa_node = 1,
          .iommu_group = 23, .sriov_totalvfs = -1, .sriov_numvfs = 0, .physfn = "0000:af:00.0",
          .parent = "0000:ae:00.0", .path = PAE "/0000:af:00.3", .is_bridge = false },
};

/* The fixture under a new temp root (free(); pair with _cleanup_(kdp_test_rm_rfp)). */
static char *fixture_new(void) {
        char *root = kdp_test_tree_new("pci");

        for (size_t i = 0; i < KDP_ELEMENTSOF(fixture_devices); i++)
                kdp_test_pci_add(root, &fixture_devices[i]);

        /* an entry libpci cannot parse, and a device that vanished after its link was listed */
        kdp_test_tree_link(root, "sys/bus/pci/devices/garbage", "../../../devices/pci0000:3a");
        kdp_test_tree_link(root, "sys/bus/pci/devices/0000:3a:06.0", "../../../devices/pci0000:3a/0000:3a:06.0");

        /* the GPUs' DRM minors, the NICs' netdevs (with their /sys/class links) */
        kdp_test_tree_write(root, "sys/devices/" P3B "/0000:3c:00.0/0000:3d:00.0/drm/card1/uevent",
                            "MAJOR=226\nMINOR=1\nDEVNAME=dri/card1\nDEVTYPE=drm_minor\n");
        kdp_test_tree_write(root, "sys/devices/" P3B "/0000:3c:00.0/0000:3d:00.0/drm/renderD128/uevent",
                            "MAJOR=226\nMINOR=128\nDEVNAME=dri/renderD128\nDEVTYPE=drm_minor\n");
        kdp_test_tree_write(root, "sys/devices/" P3B "/0000:3c:01.0/0000:3e:00.0/drm/card2/uevent",
                            "MAJOR=226\nMINOR=2\nDEVNAME=dri/card2\nDEVTYPE=drm_minor\n");
        kdp_test_tree_write(root, "sys/devices/" P3B "/0000:3c:01.0/0000:3e:00.0/drm/renderD129/uevent",
                            "MAJOR=226\nMINOR=129\nDEVNAME=dri/renderD129\nDEVTYPE=drm_minor\n");
        kdp_test_tree_write(root, "sys/devices/" PAE "/0000:af:00.0/net/ens1f0/uevent", "INTERFACE=ens1f0\nIFINDEX=4\n");
        kdp_test_tree_write(root, "sys/devices/" PAE "/0000:af:00.0/net/ens1f0/carrier", "1\n");
        kdp_test_tree_write(root, "sys/devices/" PAE "/0000:af:00.0/net/ens1f0/operstate", "up\n");
        kdp_test_tree_link(root, "sys/class/net/ens1f0", "../../devices/" PAE "/0000:af:00.0/net/ens1f0");
        kdp_test_tree_write(root, "sys/devices/" PAE "/0000:af:00.2/net/ens1f0v0/uevent",
                            "INTERFACE=ens1f0v0\nIFINDEX=6\n");
        kdp_test_tree_link(root, "sys/class/net/ens1f0v0", "../../devices/" PAE "/0000:af:00.2/net/ens1f0v0");
        kdp_test_tree_write(root, "sys/devices/" P3B "/0000:3c:00.0/0000:3d:00.0/aer_dev_fatal", AER_FATAL_ZERO "\n");
        return root;
}

/* Scans the tree at `root` with stderr captured; returns the list, and what was logged in *ret_log (free()). */
static kdp_pci_list *scan_quietly(const char *root, char **ret_log) {
        _cleanup_free_ char *sys = kdp_test_tree_path(root, "sys");
        kdp_pci_list *l = NULL;
        kdp_test_capture c;
        char *log;

        kdp_test_capture_begin(&c);
        ck_assert_int_eq(kdp_pci_list_scan_root(sys, &l), 0);
        log = kdp_test_capture_end(&c);
        if (ret_log)
                *ret_log = log;
        else
                free(log);
        ck_assert_ptr_nonnull(l);
        return l;
}

static void expect_device(const kdp_pci_device *got, const kdp_pci_device *want) {
        ck_assert_ptr_nonnull(got);
        ck_assert_str_eq(got->address, want->address);
        ck_assert_msg(got->vendor_id == want->vendor_id, "%s vendor %04x", want->address, got->vendor_id);
        ck_assert_msg(got->device_id == want->device_id, "%s device %04x", want->address, got->device_id);
        ck_assert_msg(got->subsystem_vendor_id == want->subsystem_vendor_id, "%s subsystem vendor %04x",
                      want->address, got->subsystem_vendor_id);
        ck_assert_msg(got->subsystem_device_id == want->subsystem_device_id, "%s subsystem device %04x",
                      want->address, got->subsystem_device_id);
        ck_assert_msg(got->class_code == want->class_code, "%s class %06x", want->address, got->class_code);
        ck_assert_str_eq(got->driver, want->driver);
        ck_assert_msg(got->numa_node == want->numa_node, "%s numa %d", want->address, got->numa_node);
        ck_assert_msg(got->numa_node_absent == want->numa_node_absent, "%s numa absent %d", want->address,
                      got->numa_node_absent);
        ck_assert_msg(got->iommu_group == want->iommu_group, "%s iommu %d", want->address, got->iommu_group);
        ck_assert_msg(got->sriov_totalvfs == want->sriov_totalvfs, "%s totalvfs %d", want->address,
                      got->sriov_totalvfs);
        ck_assert_msg(got->sriov_numvfs == want->sriov_numvfs, "%s numvfs %d", want->address, got->sriov_numvfs);
        ck_assert_str_eq(got->physfn, want->physfn);
        ck_assert_str_eq(got->parent, want->parent);
        ck_assert_str_eq(got->path, want->path);
        ck_assert_msg(got->is_bridge == want->is_bridge, "%s is_bridge %d", want->address, got->is_bridge);
}

/* ---- scan ---- */

START_TEST(test_pci_list_scan_reads_every_field) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_pci_list_freep) kdp_pci_list *l = scan_quietly(root, NULL);

        ck_assert_uint_eq(kdp_pci_list_size(l), KDP_ELEMENTSOF(fixture_expected));
        for (size_t i = 0; i < KDP_ELEMENTSOF(fixture_expected); i++)
                expect_device(kdp_pci_list_get(l, i), &fixture_expected[i]);
        ck_assert_ptr_null(kdp_pci_list_get(l, KDP_ELEMENTSOF(fixture_expected)));
}
END_TEST

/* kdp_pci_list_scan() through `ctx` with stderr captured; returns what was logged (free()). */
static char *ctx_scan(const kdp_backend_ctx *ctx, kdp_pci_list **ret) {
        kdp_test_capture c;

        kdp_test_capture_begin(&c);
        ck_assert_int_eq(kdp_pci_list_scan(ctx, ret), 0);
        return kdp_test_capture_end(&c);
}

/* The three warnings of the fixture's bad entries, in entry-name order, through `backend` (NULL: none). */
static void expect_fixture_warnings(const char *log, const char *root, const char *backend) {
        _cleanup_free_ char *field = NULL, *body = NULL;
        const char *p = log;

        ck_assert_int_ge(asprintf(&field, backend ? " backend=\"%s\"" : "%s", backend ? backend : ""), 0);
        ck_assert_int_ge(asprintf(&body,
                                  "\"Skipped PCI device\"%s pciAddress=\"0000:3a:05.0\" reason=\"Cannot open "
                                  "%s/sys/bus/pci/devices/0000:3a:05.0/vendor: No such file or directory\"",
                                  field, root), 0);
        kdp_test_expect_line(&p, 'W', "pci.c", body);
        free(body);
        ck_assert_int_ge(asprintf(&body,
                                  "\"Skipped PCI device\"%s pciAddress=\"0000:3a:06.0\" "
                                  "path=\"%s/sys/bus/pci/devices/0000:3a:06.0\" err=\"No such file or directory\"",
                                  field, root), 0);
        kdp_test_expect_line(&p, 'W', "pci.c", body);
        free(body);
        ck_assert_int_ge(asprintf(&body,
                                  "\"Skipped sysfs entry that is not a PCI address\"%s "
                                  "path=\"%s/sys/bus/pci/devices\" entry=\"garbage\"",
                                  field, root), 0);
        kdp_test_expect_line(&p, 'W', "pci.c", body);
        ck_assert_str_eq(p, "");
}

/* Without a backend (kdpctl discover) every scan warns about every skipped entry, without backend="...". */
START_TEST(test_pci_list_scan_skips_bad_entries_with_warnings) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();

        for (int round = 0; round < 2; round++) {
                _cleanup_(kdp_pci_list_freep) kdp_pci_list *l = NULL;
                _cleanup_free_ char *log = NULL;

                l = scan_quietly(root, &log);
                expect_fixture_warnings(log, root, NULL);
                /* everything else was scanned */
                ck_assert_uint_eq(kdp_pci_list_size(l), KDP_ELEMENTSOF(fixture_expected));
                ck_assert_ptr_null(kdp_pci_list_find(l, "0000:3a:05.0"));
                ck_assert_ptr_null(kdp_pci_list_find(l, "0000:3a:06.0"));
        }
}
END_TEST

/*
 * Through a backend's ctx a skipped entry is warned about once, however often the list is read
 * again; its end is logged once (repaired, or gone), and a new break is warned about again. Each
 * backend has its own memory.
 */
START_TEST(test_pci_list_scan_warns_once_per_backend_while_an_entry_stays_bad) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *other = NULL;
        _cleanup_(kdp_pci_list_freep) kdp_pci_list *l = NULL;
        _cleanup_free_ char *log = NULL, *body = NULL, *sys = kdp_test_tree_path(root, "sys");
        const char *p;

        log = ctx_scan(ctx, &l);
        expect_fixture_warnings(log, root, "test");
        for (int i = 0; i < 2; i++) {
                l = kdp_pci_list_free(l);
                free(log);
                log = ctx_scan(ctx, &l);
                ck_assert_str_eq(log, "");
        }
        ck_assert_uint_eq(kdp_pci_list_size(l), KDP_ELEMENTSOF(fixture_expected));

        /* another backend reading the same tree warns for itself, once */
        ck_assert_int_eq(kdp_backend_ctx_new("other", (const char *const[_KDP_PATH_KIND_MAX]){ [KDP_PATH_SYSFS] = sys },
                                             NULL, NULL, &other), 0);
        l = kdp_pci_list_free(l);
        free(log);
        log = ctx_scan(other, &l);
        expect_fixture_warnings(log, root, "other");
        l = kdp_pci_list_free(l);
        free(log);
        log = ctx_scan(other, &l);
        ck_assert_str_eq(log, "");

        /* repaired: one line, and the function is in the list */
        kdp_test_tree_write(root, "sys/devices/pci0000:3a/0000:3a:05.0/vendor", "0x8086\n");
        for (int i = 0; i < 3; i++) {
                l = kdp_pci_list_free(l);
                free(log);
                log = ctx_scan(ctx, &l);
                if (i == 0) {
                        p = log;
                        kdp_test_expect_line(&p, 'I', "pci.c", "\"PCI device no longer skipped\" backend=\"test\" "
                                                               "pciAddress=\"0000:3a:05.0\"");
                        ck_assert_str_eq(p, "");
                } else
                        ck_assert_str_eq(log, "");
                ck_assert_ptr_nonnull(kdp_pci_list_find(l, "0000:3a:05.0"));
        }

        /* broken again: warned about again, once */
        kdp_test_tree_remove(root, "sys/devices/pci0000:3a/0000:3a:05.0/vendor");
        ck_assert_int_ge(asprintf(&body,
                                  "\"Skipped PCI device\" backend=\"test\" pciAddress=\"0000:3a:05.0\" "
                                  "reason=\"Cannot open %s/sys/bus/pci/devices/0000:3a:05.0/vendor: "
                                  "No such file or directory\"", root), 0);
        for (int i = 0; i < 3; i++) {
                l = kdp_pci_list_free(l);
                free(log);
                log = ctx_scan(ctx, &l);
                if (i == 0) {
                        p = log;
                        kdp_test_expect_line(&p, 'W', "pci.c", body);
                        ck_assert_str_eq(p, "");
                } else
                        ck_assert_str_eq(log, "");
                ck_assert_ptr_null(kdp_pci_list_find(l, "0000:3a:05.0"));
        }

        /* the dangling link and the entry that is no address go away: one line each */
        kdp_test_tree_remove(root, "sys/bus/pci/devices/0000:3a:06.0");
        kdp_test_tree_remove(root, "sys/bus/pci/devices/garbage");
        l = kdp_pci_list_free(l);
        free(log);
        log = ctx_scan(ctx, &l);
        p = log;
        kdp_test_expect_line(&p, 'I', "pci.c",
                             "\"Skipped PCI device is gone\" backend=\"test\" pciAddress=\"0000:3a:06.0\"");
        free(body);
        ck_assert_int_ge(asprintf(&body, "\"Skipped sysfs entry is gone\" backend=\"test\" "
                                         "path=\"%s/sys/bus/pci/devices\" entry=\"garbage\"", root), 0);
        kdp_test_expect_line(&p, 'I', "pci.c", body);
        ck_assert_str_eq(p, "");
        l = kdp_pci_list_free(l);
        free(log);
        log = ctx_scan(ctx, &l);
        ck_assert_str_eq(log, "");

        /* the whole bus gone: what is still skipped is gone with it */
        {
                _cleanup_free_ char *bus = kdp_test_tree_path(root, "sys/bus/pci"),
                                    *moved = kdp_test_tree_path(root, "sys/bus/pci-moved");
                kdp_test_capture c;

                ck_assert_int_eq(rename(bus, moved), 0);
                l = kdp_pci_list_free(l);
                free(log);
                kdp_test_capture_begin(&c);
                ck_assert_int_eq(kdp_pci_list_scan(ctx, &l), -ENOENT);
                log = kdp_test_capture_end(&c);
                p = log;
                kdp_test_expect_line(&p, 'I', "pci.c",
                                     "\"Skipped PCI device is gone\" backend=\"test\" pciAddress=\"0000:3a:05.0\"");
                ck_assert_str_eq(p, "");
        }
}
END_TEST

/* The list names each PCI function it skipped, by address, with the IDs it read and the reason. */
START_TEST(test_pci_list_names_the_functions_it_skipped) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_pci_list_freep) kdp_pci_list *l = NULL;
        _cleanup_free_ char *reason = NULL;
        const kdp_pci_skipped *k;

        kdp_test_pci_add(root, &(kdp_test_pci_dev){ .path = "pci0000:00/0000:00:02.0", .vendor = "0x10de",
                                                    .device = "0x2330", .class_code = "0x1234567" });
        kdp_test_tree_link(root, "sys/bus/pci/devices/0000:3a:07.0", "0000:3a:07.0");  /* a link loop */
        l = scan_quietly(root, NULL);
        ck_assert_uint_eq(kdp_pci_list_skipped_size(l), 3);

        /* in address order; "garbage" is no function, 0000:3a:06.0 (its link dangles) is being removed */
        k = kdp_pci_list_skipped_get(l, 0);
        ck_assert_str_eq(k->address, "0000:00:02.0");
        ck_assert_uint_eq(k->vendor_id, 0x10de);
        ck_assert_uint_eq(k->device_id, 0x2330);
        ck_assert_str_eq(k->reason, "its sysfs file class cannot be read: Bad message");
        k = kdp_pci_list_skipped_get(l, 1);
        ck_assert_str_eq(k->address, "0000:3a:05.0");
        ck_assert_uint_eq(k->vendor_id, 0);
        ck_assert_uint_eq(k->device_id, 0);
        ck_assert_int_ge(asprintf(&reason, "libpci cannot read it: Cannot open "
                                           "%s/sys/bus/pci/devices/0000:3a:05.0/vendor: No such file or directory",
                                  root), 0);
        ck_assert_str_eq(k->reason, reason);
        k = kdp_pci_list_skipped_get(l, 2);
        ck_assert_str_eq(k->address, "0000:3a:07.0");
        ck_assert_uint_eq(k->vendor_id, 0);
        ck_assert_str_eq(k->reason, "its sysfs directory cannot be opened: Too many levels of symbolic links");
        ck_assert_ptr_null(kdp_pci_list_skipped_get(l, 3));
        ck_assert_uint_eq(kdp_pci_list_skipped_size(NULL), 0);
        ck_assert_ptr_null(kdp_pci_list_skipped_get(NULL, 0));
}
END_TEST

START_TEST(test_pci_list_scan_uses_the_ctx_sysfs_root) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_(kdp_pci_list_freep) kdp_pci_list *l = NULL;
        kdp_test_capture c;

        kdp_test_capture_begin(&c);
        ck_assert_int_eq(kdp_pci_list_scan(ctx, &l), 0);
        free(kdp_test_capture_end(&c));
        ck_assert_uint_eq(kdp_pci_list_size(l), KDP_ELEMENTSOF(fixture_expected));
        expect_device(kdp_pci_list_find(l, "0000:af:00.0"), &fixture_expected[11]);
}
END_TEST

static uint64_t cache_clock(void *data) {
        return *(const uint64_t *) data;
}

/* Read again only when marked dirty or old enough on the backend's clock; the empty list without a bus. */
START_TEST(test_pci_list_cache_reads_again_when_dirty_or_old) {
        _cleanup_(kdp_test_rm_rfp) char *root = kdp_test_tree_new("pci");
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        kdp_pci_list_cache c = { 0 };
        uint64_t now_usec = UINT64_C(5000000);
        const kdp_test_pci_dev second = { .path = "pci0000:00/0000:00:02.0", .vendor = "0x8086",
                                          .device = "0x1889", .class_code = "0x020000" };

        kdp_backend_ctx_set_clock(ctx, cache_clock, &now_usec);
        ck_assert_int_eq(kdp_pci_list_cache_refresh(ctx, &c, 1000), 0);
        ck_assert_ptr_null(c.list);     /* no PCI bus: empty */
        ck_assert(c.listed);

        kdp_test_pci_add(root, &(kdp_test_pci_dev){ .path = "pci0000:00/0000:00:01.0", .vendor = "0x8086",
                                                    .device = "0x1889", .class_code = "0x020000" });
        now_usec += 999000;
        ck_assert_int_eq(kdp_pci_list_cache_refresh(ctx, &c, 1000), 0);
        ck_assert_ptr_null(c.list);     /* not old enough, not dirty: not read */
        now_usec += 1000;
        ck_assert_int_eq(kdp_pci_list_cache_refresh(ctx, &c, 1000), 0);
        ck_assert_uint_eq(kdp_pci_list_size(c.list), 1);

        kdp_test_pci_add(root, &second);
        ck_assert_int_eq(kdp_pci_list_cache_refresh(ctx, &c, 1000), 0);
        ck_assert_uint_eq(kdp_pci_list_size(c.list), 1);
        c.dirty = true;
        ck_assert_int_eq(kdp_pci_list_cache_refresh(ctx, &c, 1000), 0);
        ck_assert_uint_eq(kdp_pci_list_size(c.list), 2);
        ck_assert(!c.dirty);
        ck_assert_uint_eq(c.listed_ms, 6000);

        ck_assert_int_eq(kdp_pci_list_cache_refresh(NULL, &c, 1000), -EINVAL);
        ck_assert_int_eq(kdp_pci_list_cache_refresh(ctx, NULL, 1000), -EINVAL);
        kdp_pci_list_cache_done(&c);
        ck_assert_ptr_null(c.list);
        ck_assert(!c.listed);
        kdp_pci_list_cache_done(NULL);
}
END_TEST

START_TEST(test_pci_list_scan_without_pci_bus_is_enoent) {
        _cleanup_(kdp_test_rm_rfp) char *root = kdp_test_tree_new("pci");
        _cleanup_free_ char *sys = kdp_test_tree_path(root, "sys");
        kdp_pci_list *l = NULL;

        ck_assert_int_eq(kdp_pci_list_scan_root(sys, &l), -ENOENT);
        kdp_test_tree_mkdir(root, "sys/bus/pci");
        ck_assert_int_eq(kdp_pci_list_scan_root(sys, &l), -ENOENT);
        kdp_test_tree_write(root, "sys/bus/pci/devices", "not a directory\n");
        ck_assert_int_eq(kdp_pci_list_scan_root(sys, &l), -ENOENT);
        ck_assert_ptr_null(l);
}
END_TEST

START_TEST(test_pci_list_scan_of_an_empty_bus_is_an_empty_list) {
        _cleanup_(kdp_test_rm_rfp) char *root = kdp_test_tree_new("pci");
        _cleanup_free_ char *sys = kdp_test_tree_path(root, "sys");
        _cleanup_(kdp_pci_list_freep) kdp_pci_list *l = NULL;

        kdp_test_tree_mkdir(root, "sys/bus/pci/devices");
        ck_assert_int_eq(kdp_pci_list_scan_root(sys, &l), 0);
        ck_assert_uint_eq(kdp_pci_list_size(l), 0);
        ck_assert_ptr_null(kdp_pci_list_get(l, 0));
        ck_assert_ptr_null(kdp_pci_list_find(l, "0000:00:00.0"));
}
END_TEST

START_TEST(test_pci_list_scan_rejects_bad_arguments) {
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx("/nonexistent");
        kdp_pci_list *l = NULL;

        ck_assert_int_eq(kdp_pci_list_scan_root(NULL, &l), -EINVAL);
        ck_assert_int_eq(kdp_pci_list_scan_root("", &l), -EINVAL);
        ck_assert_int_eq(kdp_pci_list_scan_root("/sys", NULL), -EINVAL);
        ck_assert_int_eq(kdp_pci_list_scan(NULL, &l), -EINVAL);
        ck_assert_int_eq(kdp_pci_list_scan(ctx, NULL), -EINVAL);
        ck_assert_int_eq(kdp_pci_list_scan(ctx, &l), -ENOENT);
        ck_assert_ptr_null(l);
        ck_assert_ptr_null(kdp_pci_list_free(NULL));
        ck_assert_uint_eq(kdp_pci_list_size(NULL), 0);
        ck_assert_ptr_null(kdp_pci_list_get(NULL, 0));
        ck_assert_ptr_null(kdp_pci_list_find(NULL, "0000:00:00.0"));
}
END_TEST

START_TEST(test_pci_list_find_parses_the_address) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_pci_list_freep) kdp_pci_list *l = scan_quietly(root, NULL);

        for (size_t i = 0; i < KDP_ELEMENTSOF(fixture_expected); i++)
                ck_assert_ptr_eq(kdp_pci_list_find(l, fixture_expected[i].address), kdp_pci_list_get(l, i));
        ck_assert_ptr_eq(kdp_pci_list_find(l, "0000:AF:00.2"), kdp_pci_list_get(l, 12));
        ck_assert_ptr_eq(kdp_pci_list_find(l, "00000000:af:00.2"), kdp_pci_list_get(l, 12));
        ck_assert_ptr_null(kdp_pci_list_find(l, "0000:af:00.1"));
        ck_assert_ptr_null(kdp_pci_list_find(l, "af:00.2"));
        ck_assert_ptr_null(kdp_pci_list_find(l, "0000:af:00.2 "));
        ck_assert_ptr_null(kdp_pci_list_find(l, "0000:af:20.0"));
        ck_assert_ptr_null(kdp_pci_list_find(l, "0000:af:00.8"));
        ck_assert_ptr_null(kdp_pci_list_find(l, ""));
        ck_assert_ptr_null(kdp_pci_list_find(l, NULL));
}
END_TEST

START_TEST(test_pci_list_scan_sorts_by_numeric_domain) {
        _cleanup_(kdp_test_rm_rfp) char *root = kdp_test_tree_new("pci");
        _cleanup_(kdp_pci_list_freep) kdp_pci_list *l = NULL;

        /* a VMD domain (5 hex digits) sorts after ffff, though "10000" < "ffff" as text */
        kdp_test_pci_add(root, &(kdp_test_pci_dev){ .path = "pci0000:00/0000:00:0e.0", .vendor = "0x8086",
                                                    .device = "0x467f", .class_code = "0x010400", .driver = "vmd" });
        kdp_test_pci_add(root, &(kdp_test_pci_dev){ .path = "pci0000:00/0000:00:0e.0/pci10000:e0/10000:e0:1d.0",
                                                    .vendor = "0x8086", .device = "0x7a34",
                                                    .class_code = "0x060400", .driver = "pcieport" });
        kdp_test_pci_add(root, &(kdp_test_pci_dev){ .path = "pciffff:00/ffff:00:00.0", .vendor = "0x1414",
                                                    .device = "0x5353", .class_code = "0x030000" });
        l = scan_quietly(root, NULL);

        ck_assert_uint_eq(kdp_pci_list_size(l), 3);
        ck_assert_str_eq(kdp_pci_list_get(l, 0)->address, "0000:00:0e.0");
        ck_assert_str_eq(kdp_pci_list_get(l, 1)->address, "ffff:00:00.0");
        ck_assert_str_eq(kdp_pci_list_get(l, 2)->address, "10000:e0:1d.0");
        /* behind VMD the component above is no PCI address: no parent */
        ck_assert_str_eq(kdp_pci_list_get(l, 2)->path, "pci0000:00/0000:00:0e.0/pci10000:e0/10000:e0:1d.0");
        ck_assert_str_eq(kdp_pci_list_get(l, 2)->parent, "");
        ck_assert_int_eq(kdp_pci_list_get(l, 2)->numa_node, -1);
        ck_assert_int_eq(kdp_pci_list_get(l, 0)->sriov_totalvfs, -1);
}
END_TEST

START_TEST(test_pci_list_scan_names_the_driver_of_a_dangling_link) {
        _cleanup_(kdp_test_rm_rfp) char *root = kdp_test_tree_new("pci");
        _cleanup_(kdp_pci_list_freep) kdp_pci_list *l = NULL;

        /* as umockdev leaves them: link targets outside devices/ do not exist */
        kdp_test_pci_add(root, &(kdp_test_pci_dev){ .path = "pci0000:3b/0000:3b:00.0", .vendor = "0x10de",
                                                    .device = "0x20b0", .class_code = "0x030200",
                                                    .numa_node = "1", .driver = "nvidia", .iommu_group = "57" });
        kdp_test_tree_remove(root, "sys/bus/pci/drivers/nvidia");
        kdp_test_tree_remove(root, "sys/kernel/iommu_groups/57/devices");
        kdp_test_tree_remove(root, "sys/kernel/iommu_groups/57");
        l = scan_quietly(root, NULL);

        ck_assert_uint_eq(kdp_pci_list_size(l), 1);
        ck_assert_str_eq(kdp_pci_list_get(l, 0)->driver, "nvidia");
        ck_assert_int_eq(kdp_pci_list_get(l, 0)->iommu_group, 57);
        ck_assert_int_eq(kdp_pci_list_get(l, 0)->numa_node, 1);
        ck_assert_uint_eq(kdp_pci_list_get(l, 0)->class_code, 0x030200);
}
END_TEST

/* A numa_node file that reads -1 is no affinity; an absent one is told apart (a device leaving). */
START_TEST(test_pci_list_scan_tells_an_absent_numa_node_from_minus_one) {
        _cleanup_(kdp_test_rm_rfp) char *root = kdp_test_tree_new("pci");
        _cleanup_(kdp_pci_list_freep) kdp_pci_list *l = NULL;
        const kdp_pci_device *d;

        kdp_test_pci_add(root, &(kdp_test_pci_dev){ .path = "pci0000:3b/0000:3b:00.0", .vendor = "0x10de",
                                                    .device = "0x2330", .class_code = "0x030200", .numa_node = "1" });
        kdp_test_pci_add(root, &(kdp_test_pci_dev){ .path = "pci0000:3b/0000:3b:00.1", .vendor = "0x10de",
                                                    .device = "0x2330", .class_code = "0x030200", .numa_node = "-1" });
        kdp_test_pci_add(root, &(kdp_test_pci_dev){ .path = "pci0000:3b/0000:3b:00.2", .vendor = "0x10de",
                                                    .device = "0x2330", .class_code = "0x030200" });
        l = scan_quietly(root, NULL);

        ck_assert_uint_eq(kdp_pci_list_size(l), 3);
        d = kdp_pci_list_get(l, 0);
        ck_assert_int_eq(d->numa_node, 1);
        ck_assert(!d->numa_node_absent);
        ck_assert_int_eq(kdp_pci_numa_node(d, 0), 1);
        d = kdp_pci_list_get(l, 1);
        ck_assert_int_eq(d->numa_node, -1);
        ck_assert(!d->numa_node_absent);
        ck_assert_int_eq(kdp_pci_numa_node(d, 0), -1);
        d = kdp_pci_list_get(l, 2);
        ck_assert_int_eq(d->numa_node, -1);
        ck_assert(d->numa_node_absent);
        ck_assert_int_eq(kdp_pci_numa_node(d, 0), 0);
        ck_assert_int_eq(kdp_pci_numa_node(d, -1), -1);
}
END_TEST

START_TEST(test_pci_list_scan_skips_a_malformed_class) {
        _cleanup_(kdp_test_rm_rfp) char *root = kdp_test_tree_new("pci");
        _cleanup_free_ char *log = NULL;
        _cleanup_(kdp_pci_list_freep) kdp_pci_list *l = NULL;
        const char *p;

        kdp_test_pci_add(root, &(kdp_test_pci_dev){ .path = "pci0000:00/0000:00:02.0", .vendor = "0x8086",
                                                    .device = "0x0d57", .class_code = "0x1234567" });
        kdp_test_pci_add(root, &(kdp_test_pci_dev){ .path = "pci0000:00/0000:00:03.0", .vendor = "0x1af4",
                                                    .device = "0x1041", .class_code = "0x020000",
                                                    .sriov_totalvfs = "lots" });
        l = scan_quietly(root, &log);
        p = log;

        ck_assert_uint_eq(kdp_pci_list_size(l), 0);
        kdp_test_expect_line(&p, 'W', "pci.c", "\"Skipped PCI device\" pciAddress=\"0000:00:02.0\" file=\"class\" "
                                               "err=\"Bad message\"");
        kdp_test_expect_line(&p, 'W', "pci.c", "\"Skipped PCI device\" pciAddress=\"0000:00:03.0\" "
                                               "file=\"sriov_totalvfs\" err=\"Bad message\"");
        ck_assert_str_eq(p, "");
}
END_TEST

/* Real sysfs: whatever this machine has, the scan must work and return well-formed addresses. */
START_TEST(test_pci_list_scan_of_the_real_sys_works) {
        _cleanup_(kdp_pci_list_freep) kdp_pci_list *l = NULL;
        unsigned long long prev = 0;
        regex_t re;
        int r;

        r = kdp_pci_list_scan_root("/sys", &l);
        ck_assert_msg(r == 0 || r == -ENOENT, "scan of /sys: %s", strerror(-r));
        if (r == -ENOENT)
                return;

        ck_assert_int_eq(regcomp(&re, "^[0-9a-f]{4,8}:[0-9a-f]{2}:[01][0-9a-f]\\.[0-7]$", REG_EXTENDED | REG_NOSUB), 0);
        for (size_t i = 0; i < kdp_pci_list_size(l); i++) {
                const kdp_pci_device *d = kdp_pci_list_get(l, i);
                size_t alen = strlen(d->address), plen = strlen(d->path);
                unsigned domain, bus, dev, fn;
                unsigned long long key;

                ck_assert_msg(regexec(&re, d->address, 0, NULL, 0) == 0, "address '%s'", d->address);
                ck_assert_ptr_eq(kdp_pci_list_find(l, d->address), d);
                ck_assert_msg(plen >= alen && strcmp(d->path + plen - alen, d->address) == 0, "path '%s'", d->path);
                ck_assert_msg(d->parent[0] == '\0' || regexec(&re, d->parent, 0, NULL, 0) == 0, "parent '%s'",
                              d->parent);
                ck_assert_msg(d->physfn[0] == '\0' || regexec(&re, d->physfn, 0, NULL, 0) == 0, "physfn '%s'",
                              d->physfn);
                ck_assert_int_ge(d->numa_node, -1);
                ck_assert_int_ge(d->iommu_group, -1);
                ck_assert_uint_le(d->class_code, 0xffffff);

                /* in ascending address order */
                ck_assert_int_eq(sscanf(d->address, "%x:%x:%x.%x", &domain, &bus, &dev, &fn), 4);
                key = (unsigned long long) domain << 16 | bus << 8 | dev << 3 | fn;
                ck_assert_msg(i == 0 || key > prev, "'%s' out of order", d->address);
                prev = key;
        }
        regfree(&re);
}
END_TEST

/* ---- attributes ---- */

START_TEST(test_pci_read_attr_strips_the_trailing_newline) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_free_ char *v = NULL, *aer = NULL;

        ck_assert_int_eq(kdp_pci_read_attr(ctx, "0000:3d:00.0", "device", &v), 0);
        ck_assert_str_eq(v, "0x2330");
        ck_assert_int_eq(kdp_pci_read_attr(ctx, "0000:3d:00.0", "aer_dev_fatal", &aer), 0);
        ck_assert_str_eq(aer, AER_FATAL_ZERO);
        free(v);
        v = NULL;
        ck_assert_int_eq(kdp_pci_read_attr(ctx, "0000:3d:00.0", "drm/card1/uevent", &v), 0);
        ck_assert_str_eq(v, "MAJOR=226\nMINOR=1\nDEVNAME=dri/card1\nDEVTYPE=drm_minor");
}
END_TEST

START_TEST(test_pci_read_attr_reports_a_missing_file_or_device_as_enoent) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        char *v = NULL;

        ck_assert_int_eq(kdp_pci_read_attr(ctx, "0000:3d:00.0", "aer_dev_nonfatal", &v), -ENOENT);
        ck_assert_int_eq(kdp_pci_read_attr(ctx, "0000:3d:00.1", "vendor", &v), -ENOENT);
        ck_assert_int_eq(kdp_pci_read_attr(ctx, "0000:3d:00.0", "vendor/x", &v), -ENOENT);
        ck_assert_ptr_null(v);
}
END_TEST

START_TEST(test_pci_read_attr_rejects_bad_arguments) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        char *v = NULL;

        ck_assert_int_eq(kdp_pci_read_attr(NULL, "0000:3d:00.0", "vendor", &v), -EINVAL);
        ck_assert_int_eq(kdp_pci_read_attr(ctx, NULL, "vendor", &v), -EINVAL);
        ck_assert_int_eq(kdp_pci_read_attr(ctx, "../../../etc", "passwd", &v), -EINVAL);
        ck_assert_int_eq(kdp_pci_read_attr(ctx, "0000:3D:00.0", "vendor", &v), -EINVAL);
        ck_assert_int_eq(kdp_pci_read_attr(ctx, "0000:3d:00.0", NULL, &v), -EINVAL);
        ck_assert_int_eq(kdp_pci_read_attr(ctx, "0000:3d:00.0", "", &v), -EINVAL);
        ck_assert_int_eq(kdp_pci_read_attr(ctx, "0000:3d:00.0", "/etc/passwd", &v), -EINVAL);
        ck_assert_int_eq(kdp_pci_read_attr(ctx, "0000:3d:00.0", "../0000:3e:00.0/vendor", &v), -EINVAL);
        ck_assert_int_eq(kdp_pci_read_attr(ctx, "0000:3d:00.0", "vendor", NULL), -EINVAL);
        ck_assert_ptr_null(v);
}
END_TEST

/* ---- children ---- */

START_TEST(test_pci_children_reads_drm_nodes_from_uevent) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_free_ kdp_pci_child *c = NULL;
        _cleanup_free_ char *card = NULL, *render = NULL;
        size_t n = 99;

        ck_assert_int_eq(kdp_pci_children(ctx, "0000:3d:00.0", "drm", &c, &n), 0);
        ck_assert_uint_eq(n, 2);
        card = kdp_test_tree_path(root, "dev/dri/card1");
        render = kdp_test_tree_path(root, "dev/dri/renderD128");
        ck_assert_str_eq(c[0].name, "card1");
        ck_assert_str_eq(c[0].devnode, card);
        ck_assert_str_eq(c[1].name, "renderD128");
        ck_assert_str_eq(c[1].devnode, render);
}
END_TEST

START_TEST(test_pci_children_sorts_in_version_order) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_free_ kdp_pci_child *c = NULL;
        size_t n = 0;

        kdp_test_tree_write(root, "sys/devices/" PAE "/0000:af:00.0/infiniband_verbs/uverbs10/uevent",
                            "MAJOR=231\nMINOR=202\nDEVNAME=infiniband/uverbs10\n");
        kdp_test_tree_write(root, "sys/devices/" PAE "/0000:af:00.0/infiniband_verbs/uverbs2/uevent",
                            "MAJOR=231\nMINOR=194\nDEVNAME=infiniband/uverbs2\n");
        /* not a class device directory: ignored */
        kdp_test_tree_write(root, "sys/devices/" PAE "/0000:af:00.0/infiniband_verbs/abi_version", "6\n");

        ck_assert_int_eq(kdp_pci_children(ctx, "0000:af:00.0", "infiniband_verbs", &c, &n), 0);
        ck_assert_uint_eq(n, 2);
        ck_assert_str_eq(c[0].name, "uverbs2");
        ck_assert_str_eq(c[1].name, "uverbs10");
        ck_assert_str_eq(c[1].devnode + strlen(root), "/dev/infiniband/uverbs10");
}
END_TEST

START_TEST(test_pci_children_of_net_have_no_devnode) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_free_ kdp_pci_child *c = NULL;
        size_t n = 0;

        ck_assert_int_eq(kdp_pci_children(ctx, "0000:af:00.2", "net", &c, &n), 0);
        ck_assert_uint_eq(n, 1);
        ck_assert_str_eq(c[0].name, "ens1f0v0");
        ck_assert_str_eq(c[0].devnode, "");
}
END_TEST

START_TEST(test_pci_children_of_a_device_without_them_is_empty) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        kdp_pci_child *c = (kdp_pci_child *) 1;
        size_t n = 99;

        /* the vfio-bound VF has no netdev */
        ck_assert_int_eq(kdp_pci_children(ctx, "0000:af:00.3", "net", &c, &n), 0);
        ck_assert_ptr_null(c);
        ck_assert_uint_eq(n, 0);
}
END_TEST

START_TEST(test_pci_children_of_a_removed_device_is_enoent) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        kdp_pci_child *c = NULL;
        size_t n = 99;

        ck_assert_int_eq(kdp_pci_children(ctx, "0000:3a:06.0", "drm", &c, &n), -ENOENT);
        ck_assert_int_eq(kdp_pci_children(ctx, "0000:3f:00.0", "drm", &c, &n), -ENOENT);
        ck_assert_ptr_null(c);
        ck_assert_uint_eq(n, 99);
}
END_TEST

START_TEST(test_pci_children_rejects_bad_arguments) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        kdp_pci_child *c = NULL;
        size_t n = 0;

        ck_assert_int_eq(kdp_pci_children(NULL, "0000:3d:00.0", "drm", &c, &n), -EINVAL);
        ck_assert_int_eq(kdp_pci_children(ctx, "garbage", "drm", &c, &n), -EINVAL);
        ck_assert_int_eq(kdp_pci_children(ctx, "0000:3d:00.0", NULL, &c, &n), -EINVAL);
        ck_assert_int_eq(kdp_pci_children(ctx, "0000:3d:00.0", "", &c, &n), -EINVAL);
        ck_assert_int_eq(kdp_pci_children(ctx, "0000:3d:00.0", "..", &c, &n), -EINVAL);
        ck_assert_int_eq(kdp_pci_children(ctx, "0000:3d:00.0", "drm/card1", &c, &n), -EINVAL);
        ck_assert_int_eq(kdp_pci_children(ctx, "0000:3d:00.0", "drm", NULL, &n), -EINVAL);
        ck_assert_int_eq(kdp_pci_children(ctx, "0000:3d:00.0", "drm", &c, NULL), -EINVAL);
}
END_TEST

/* kdp_pci_children(ctx, "0000:3d:00.0", "drm") with stderr captured; the log (free()), the count in *ret_n. */
static char *children_of_3d(const kdp_backend_ctx *ctx, int expect, size_t *ret_n) {
        _cleanup_free_ kdp_pci_child *c = NULL;
        kdp_test_capture cap;
        size_t n = 0;

        kdp_test_capture_begin(&cap);
        ck_assert_int_eq(kdp_pci_children(ctx, "0000:3d:00.0", "drm", &c, &n), expect);
        if (ret_n)
                *ret_n = n;
        return kdp_test_capture_end(&cap);
}

/* Calls children_of_3d() three times: the first logs the line `level` `body` alone, the others nothing. */
static void children_three_times(const kdp_backend_ctx *ctx, int expect, char level, const char *body, size_t n) {
        for (int i = 0; i < 3; i++) {
                _cleanup_free_ char *log = NULL;
                const char *p;
                size_t got = 99;

                log = children_of_3d(ctx, expect, &got);
                if (expect == 0)
                        ck_assert_uint_eq(got, n);
                p = log;
                if (i == 0)
                        kdp_test_expect_line(&p, level, "pci.c", body);
                ck_assert_str_eq(p, "");
        }
}

/* A class device skipped with a warning: once while it lasts, its end once, a new break again. */
START_TEST(test_pci_children_warn_once_while_a_class_device_stays_bad) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_free_ char *dir = NULL, *uevent = NULL, *body = NULL, *devname = NULL;
        const char *name = "card_with_a_name_of_sixty_four_characters_or_more_0123456789abcd";
        const char *gpu = "sys/devices/" P3B "/0000:3c:00.0/0000:3d:00.0";

        ck_assert_uint_eq(strlen(name), 64);
        ck_assert_int_ge(asprintf(&dir, "%s/drm/%s", gpu, name), 0);
        kdp_test_tree_mkdir(root, dir);
        ck_assert_int_ge(asprintf(&body, "\"Skipped class device with a too long name\" backend=\"test\" "
                                         "pciAddress=\"0000:3d:00.0\" device=\"%s\"", name), 0);
        children_three_times(ctx, 0, 'W', body, 2);
        kdp_test_tree_remove(root, dir);
        free(body);
        ck_assert_int_ge(asprintf(&body, "\"Skipped class device is gone\" backend=\"test\" "
                                         "pciAddress=\"0000:3d:00.0\" device=\"%s\"", name), 0);
        children_three_times(ctx, 0, 'I', body, 2);

        /* a node path that does not fit (256 bytes), then fits again, then not */
        devname = calloc(300, 1);
        ck_assert_ptr_nonnull(devname);
        memset(devname, 'x', 280);
        free(uevent);
        ck_assert_int_ge(asprintf(&uevent, "MAJOR=226\nMINOR=3\nDEVNAME=dri/%s\n", devname), 0);
        free(dir);
        ck_assert_int_ge(asprintf(&dir, "%s/drm/card3/uevent", gpu), 0);
        kdp_test_tree_write(root, dir, uevent);
        children_three_times(ctx, 0, 'W', "\"Skipped class device with a too long node path\" backend=\"test\" "
                                          "pciAddress=\"0000:3d:00.0\" device=\"card3\"", 2);
        kdp_test_tree_write(root, dir, "MAJOR=226\nMINOR=3\nDEVNAME=dri/card3\n");
        children_three_times(ctx, 0, 'I', "\"Class device no longer skipped\" backend=\"test\" "
                                          "pciAddress=\"0000:3d:00.0\" device=\"card3\"", 3);
        kdp_test_tree_write(root, dir, uevent);
        children_three_times(ctx, 0, 'W', "\"Skipped class device with a too long node path\" backend=\"test\" "
                                          "pciAddress=\"0000:3d:00.0\" device=\"card3\"", 2);

        /* the function goes away, and its class devices with it */
        kdp_test_tree_remove(root, "sys/bus/pci/devices/0000:3d:00.0");
        children_three_times(ctx, -ENOENT, 'I', "\"Skipped class device is gone\" backend=\"test\" "
                                                "pciAddress=\"0000:3d:00.0\" device=\"card3\"", 0);
}
END_TEST

/* ---- kdpctl discover ---- */

/* Runs `kdpctl discover --sysfs-root <root>/sys` and returns its stdout (free()). */
static char *run_discover(const char *root, int *ret_status) {
        _cleanup_free_ char *cmd = NULL;

        ck_assert_int_ge(asprintf(&cmd, "%s/kdpctl discover --sysfs-root '%s/sys' 2>/dev/null", KDP_BUILD_DIR, root),
                         0);
        return kdp_test_command_output(cmd, ret_status);
}

START_TEST(test_pci_kdpctl_discover_prints_the_tree) {
        _cleanup_(kdp_test_rm_rfp) char *root = fixture_new();
        _cleanup_free_ char *out = NULL;
        int status;

        out = run_discover(root, &status);
        ck_assert_int_eq(status, 0);
        ck_assert_str_eq(out,
                         "ADDRESS             ID         CLASS   DRIVER     NUMA  IOMMU  SRIOV\n"
                         "0000:00:1c.0        8086:a190  060400  pcieport   -     -\n"
                         "  0000:01:00.0      1a03:1150  060400  -          -     -\n"
                         "    0000:02:00.0    1a03:2000  030000  ast        -     -\n"
                         "0000:3a:00.0        8086:347a  060400  pcieport   0     10\n"
                         "  0000:3b:00.0      1000:c030  060400  pcieport   0     11\n"
                         "    0000:3c:00.0    1000:c030  060400  pcieport   0     12\n"
                         "      0000:3d:00.0  10de:2330  030200  nvidia     0     14\n"
                         "    0000:3c:01.0    1000:c030  060400  pcieport   0     13\n"
                         "      0000:3e:00.0  10de:2330  030200  nvidia     0     15\n"
                         "0000:3a:01.0        8086:0b00  088000  -          0     16\n"
                         "0000:ae:00.0        8086:347a  060400  pcieport   1     20\n"
                         "  0000:af:00.0      15b3:101d  020000  mlx5_core  1     21     vfs=2/8\n"
                         "  0000:af:00.2      15b3:101e  020000  mlx5_core  1     22     pf=0000:af:00.0\n"
                         "  0000:af:00.3      15b3:101e  020000  vfio-pci   1     23     pf=0000:af:00.0\n");
}
END_TEST

START_TEST(test_pci_kdpctl_discover_without_pci_bus_fails) {
        _cleanup_(kdp_test_rm_rfp) char *root = kdp_test_tree_new("pci");
        _cleanup_free_ char *out = NULL;
        int status;

        out = run_discover(root, &status);
        ck_assert(WIFEXITED(status));
        ck_assert_int_eq(WEXITSTATUS(status), 1);
        ck_assert_str_eq(out, "");
}
END_TEST

static Suite *pci_suite(void) {
        Suite *s = suite_create("pci");
        TCase *tc;

        tc = tcase_create("scan");
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, test_pci_list_scan_reads_every_field);
        tcase_add_test(tc, test_pci_list_scan_skips_bad_entries_with_warnings);
        tcase_add_test(tc, test_pci_list_scan_warns_once_per_backend_while_an_entry_stays_bad);
        tcase_add_test(tc, test_pci_list_names_the_functions_it_skipped);
        tcase_add_test(tc, test_pci_list_scan_uses_the_ctx_sysfs_root);
        tcase_add_test(tc, test_pci_list_scan_without_pci_bus_is_enoent);
        tcase_add_test(tc, test_pci_list_scan_of_an_empty_bus_is_an_empty_list);
        tcase_add_test(tc, test_pci_list_scan_rejects_bad_arguments);
        tcase_add_test(tc, test_pci_list_find_parses_the_address);
        tcase_add_test(tc, test_pci_list_scan_sorts_by_numeric_domain);
        tcase_add_test(tc, test_pci_list_scan_names_the_driver_of_a_dangling_link);
        tcase_add_test(tc, test_pci_list_scan_tells_an_absent_numa_node_from_minus_one);
        tcase_add_test(tc, test_pci_list_scan_skips_a_malformed_class);
        tcase_add_test(tc, test_pci_list_scan_of_the_real_sys_works);
        suite_add_tcase(s, tc);

        tc = tcase_create("attr");
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, test_pci_read_attr_strips_the_trailing_newline);
        tcase_add_test(tc, test_pci_read_attr_reports_a_missing_file_or_device_as_enoent);
        tcase_add_test(tc, test_pci_read_attr_rejects_bad_arguments);
        suite_add_tcase(s, tc);

        tc = tcase_create("children");
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, test_pci_children_reads_drm_nodes_from_uevent);
        tcase_add_test(tc, test_pci_children_sorts_in_version_order);
        tcase_add_test(tc, test_pci_children_of_net_have_no_devnode);
        tcase_add_test(tc, test_pci_children_of_a_device_without_them_is_empty);
        tcase_add_test(tc, test_pci_children_of_a_removed_device_is_enoent);
        tcase_add_test(tc, test_pci_children_rejects_bad_arguments);
        tcase_add_test(tc, test_pci_children_warn_once_while_a_class_device_stays_bad);
        suite_add_tcase(s, tc);

        tc = tcase_create("discover");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_pci_list_cache_reads_again_when_dirty_or_old);
        tcase_add_test(tc, test_pci_kdpctl_discover_prints_the_tree);
        tcase_add_test(tc, test_pci_kdpctl_discover_without_pci_bus_fails);
        suite_add_tcase(s, tc);

        return s;
}

int main(void) {
        return kdp_test_run(pci_suite());
}
