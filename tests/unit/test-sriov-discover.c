/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The SR-IOV backend's reader of one PCI function (plugins/sriov/discover.c), on plain
 * sysfs/dev trees shaped as docs/hardware-sriov.md §14 (Intel E810, iavf and vfio-pci VFs) and
 * §15 (ConnectX-6 Dx with RDMA VFs, and in switchdev mode), plus uio, no-IOMMU, IB,
 * vDPA, a netdev moved into a pod, functions going away and malformed files.
 */
#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdp/backend.h>
#include <kdp/cleanup.h>
#include <kdp/pci.h>

#include "backend-ctx.h"
#include "sriov.h"

#include "kdp-test.h"
#include "kdp-test-sysfs.h"
#include "kdp-test-sriov.h"

KDP_DEFINE_CLEANUP_FUNC(kdp_pci_list, kdp_pci_list_free)

/* ---- reading and comparing ---- */

typedef struct run {
        char *root;
        kdp_backend_ctx *ctx;
        kdp_pci_list *pci;
        const char *why;
} run;

static void run_done(run *r) {
        r->pci = kdp_pci_list_free(r->pci);
        r->ctx = kdp_backend_ctx_free(r->ctx);
        kdp_test_rm_rfp(&r->root);
}

static void run_scan(run *r) {
        if (!r->ctx)
                r->ctx = kdp_test_tree_ctx(r->root);
        r->pci = kdp_pci_list_free(r->pci);
        ck_assert_int_eq(kdp_pci_list_scan(r->ctx, &r->pci), 0);
}

/* sriov_discover() of the function at `address` of the last scan. */
static int discover(run *r, const char *address, sriov_func *ret) {
        const kdp_pci_device *p = kdp_pci_list_find(r->pci, address);

        ck_assert_msg(p != NULL, "%s is not in the scan", address);
        r->why = "(not set)";
        return sriov_discover(r->ctx, p, ret, &r->why);
}

/* Every field of f as want has it. */
static void expect_func(const sriov_func *f, const sriov_func *want) {
        ck_assert_str_eq(f->address, want->address);
        ck_assert_str_eq(f->vendor, want->vendor);
        ck_assert_str_eq(f->device, want->device);
        ck_assert_uint_eq(f->class_code, want->class_code);
        ck_assert_str_eq(f->driver, want->driver);
        ck_assert_int_eq(f->numa_node, want->numa_node);
        ck_assert_str_eq(f->acpi_index, want->acpi_index);
        ck_assert_int_eq(f->is_pf_with_vfs, want->is_pf_with_vfs);
        ck_assert_str_eq(f->pf_address, want->pf_address);
        ck_assert_int_eq(f->vf_index, want->vf_index);
        ck_assert_str_eq(f->pf_name, want->pf_name);
        ck_assert_str_eq(f->netdev, want->netdev);
        ck_assert_str_eq(f->link_type, want->link_type);
        ck_assert_int_eq(f->default_route, false);
        ck_assert_str_eq(f->pkey, want->pkey);
        ck_assert_str_eq(f->ddp_profile, "");
        ck_assert_int_eq(f->iommu_group, want->iommu_group);
        ck_assert_int_eq(f->noiommu, want->noiommu);
        ck_assert_int_eq(f->uio_index, want->uio_index);
        ck_assert_str_eq(f->rdma_dev, want->rdma_dev);
        ck_assert_uint_eq(f->n_rdma_nodes, want->n_rdma_nodes);
        for (size_t i = 0; i < want->n_rdma_nodes; i++)
                ck_assert_str_eq(f->rdma_nodes[i], want->rdma_nodes[i]);
        ck_assert_str_eq(f->vdpa_type, want->vdpa_type);
        ck_assert_str_eq(f->vdpa_path, want->vdpa_path);
}

static void expect_discovered(run *r, const char *address, const sriov_func *want) {
        sriov_func f;

        memset(&f, 0xa5, sizeof(f));    /* every field must be written */
        ck_assert_int_eq(discover(r, address, &f), 0);
        ck_assert_ptr_null(r->why);
        expect_func(&f, want);
}

static void expect_failure(run *r, const char *address, int error, const char *why) {
        sriov_func f;

        memset(&f, 0xa5, sizeof(f));
        ck_assert_int_eq(discover(r, address, &f), error);
        ck_assert_ptr_nonnull(r->why);
        ck_assert_str_eq(r->why, why);
        ck_assert_uint_eq((unsigned char) f.address[0], 0xa5);   /* *ret untouched */
}

/* The fields every function has, for designated initialisers. */
#define E810_VF(addr, index, drv, group)                                                                \
        .address = (addr), .vendor = "8086", .device = "1889", .class_code = 0x020000, .driver = (drv), \
        .numa_node = 1, .pf_address = "0000:8a:00.0", .vf_index = (index), .pf_name = "ens3f0np0",      \
        .link_type = "ether", .iommu_group = (group), .uio_index = -1
#define CX6_VF(addr, index)                                                                             \
        .address = (addr), .vendor = "15b3", .device = "101e", .class_code = 0x020000,                  \
        .driver = "mlx5_core", .numa_node = 0, .pf_address = "0000:3b:00.0", .vf_index = (index),       \
        .pf_name = "ens1f0np0", .link_type = "ether", .iommu_group = -1, .uio_index = -1
/* ... with its netdev ens1f0v<index> and RDMA device mlx5_<k> (k = index + 2) and their nodes */
#define CX6_RDMA_VF(addr, index, k)                                                                     \
        CX6_VF(addr, index), .netdev = "ens1f0v" #index, .rdma_dev = "mlx5_" #k,                        \
        .rdma_nodes = { "/dev/infiniband/issm" #k, "/dev/infiniband/umad" #k, "/dev/infiniband/uverbs" #k, \
                        "/dev/infiniband/rdma_cm" },                                                    \
        .n_rdma_nodes = 4

/* §15's PF0, in legacy and switchdev mode alike (its own netdev is the uplink) */
static const sriov_func cx6_pf0 = {
        .address = "0000:3b:00.0", .vendor = "15b3", .device = "101d", .class_code = 0x020000,
        .driver = "mlx5_core", .numa_node = 0, .is_pf_with_vfs = true, .vf_index = -1, .netdev = "ens1f0np0",
        .link_type = "ether", .iommu_group = -1, .uio_index = -1, .rdma_dev = "mlx5_0",
        .rdma_nodes = { "/dev/infiniband/issm0", "/dev/infiniband/umad0", "/dev/infiniband/uverbs0",
                        "/dev/infiniband/rdma_cm" },
        .n_rdma_nodes = 4,
};

/* ---- E810 ---- */

START_TEST(test_sriov_discover_e810_pf_and_vfs) {
        _cleanup_(run_done) run r = { .root = kdp_test_tree_new("sriov-discover") };

        kdp_test_sriov_e810_tree(r.root);
        run_scan(&r);

        expect_discovered(&r, "0000:8a:00.0",
                          &(sriov_func){ .address = "0000:8a:00.0", .vendor = "8086", .device = "1593",
                                         .class_code = 0x020000, .driver = "ice", .numa_node = 1, .acpi_index = "3",
                                         .is_pf_with_vfs = true, .vf_index = -1, .netdev = "ens3f0np0",
                                         .link_type = "ether", .iommu_group = 90, .uio_index = -1 });
        expect_discovered(&r, "0000:8a:01.0",
                          &(sriov_func){ E810_VF("0000:8a:01.0", 0, "iavf", 100), .netdev = "ens3f0v0" });
        expect_discovered(&r, "0000:8a:01.5",
                          &(sriov_func){ E810_VF("0000:8a:01.5", 5, "iavf", 105), .netdev = "ens3f0v5" });
        /* vfio-pci: no netdev; the link type is the PF's */
        expect_discovered(&r, "0000:8a:01.6", &(sriov_func){ E810_VF("0000:8a:01.6", 6, "vfio-pci", 106) });
        expect_discovered(&r, "0000:8a:01.7", &(sriov_func){ E810_VF("0000:8a:01.7", 7, "vfio-pci", 107) });
        /* the root port: no SR-IOV, no netdev, no group */
        expect_discovered(&r, "0000:89:02.0",
                          &(sriov_func){ .address = "0000:89:02.0", .vendor = "8086", .device = "347a",
                                         .class_code = 0x060400, .driver = "pcieport", .numa_node = 1,
                                         .vf_index = -1, .iommu_group = -1, .uio_index = -1 });
}
END_TEST

/* §14's no-IOMMU variant: group 107 named vfio-noiommu. */
START_TEST(test_sriov_discover_noiommu_group) {
        _cleanup_(run_done) run r = { .root = kdp_test_tree_new("sriov-discover") };

        kdp_test_sriov_e810_tree(r.root);
        kdp_test_tree_write(r.root, "sys/kernel/iommu_groups/107/name", "vfio-noiommu\n");
        kdp_test_tree_write(r.root, "dev/vfio/noiommu-107", "");
        /* a group named by another IOMMU driver is no no-IOMMU group */
        kdp_test_tree_write(r.root, "sys/kernel/iommu_groups/106/name", "vfio-noiommu-not\n");
        run_scan(&r);

        expect_discovered(&r, "0000:8a:01.7",
                          &(sriov_func){ E810_VF("0000:8a:01.7", 7, "vfio-pci", 107), .noiommu = true });
        expect_discovered(&r, "0000:8a:01.6", &(sriov_func){ E810_VF("0000:8a:01.6", 6, "vfio-pci", 106) });
}
END_TEST

START_TEST(test_sriov_discover_uio_vf) {
        _cleanup_(run_done) run r = { .root = kdp_test_tree_new("sriov-discover") };

        kdp_test_sriov_e810_tree(r.root);
        run_scan(&r);

        expect_discovered(&r, "0000:8a:05.0",
                          &(sriov_func){ .address = "0000:8a:05.0", .vendor = "8086", .device = "1889",
                                         .class_code = 0x020000, .driver = "igb_uio", .numa_node = 1,
                                         .pf_address = "0000:8a:00.1", .vf_index = 0, .pf_name = "ens3f1np1",
                                         .link_type = "ether", .iommu_group = 110, .uio_index = 3 });
}
END_TEST

/* A PF is excluded while its VFs are enabled, not before. */
START_TEST(test_sriov_discover_pf_with_vfs) {
        _cleanup_(run_done) run r = { .root = kdp_test_tree_new("sriov-discover") };
        sriov_func f;

        kdp_test_sriov_e810_tree(r.root);
        run_scan(&r);
        ck_assert_int_eq(discover(&r, "0000:8a:00.1", &f), 0);
        ck_assert(f.is_pf_with_vfs);

        kdp_test_sriov_write(r.root, KDP_TEST_E810_PF1, "sriov_numvfs", "0");
        run_scan(&r);
        ck_assert_int_eq(discover(&r, "0000:8a:00.1", &f), 0);
        expect_func(&f, &(sriov_func){ .address = "0000:8a:00.1", .vendor = "8086", .device = "1593",
                                       .class_code = 0x020000, .driver = "ice", .numa_node = 1, .vf_index = -1,
                                       .netdev = "ens3f1np1", .link_type = "ether", .iommu_group = 91,
                                       .uio_index = -1 });
}
END_TEST

/* §6: a CNI moved the VF's netdev into a pod; the VF stays, with its net/ empty. */
START_TEST(test_sriov_discover_netdev_moved_into_a_pod) {
        _cleanup_(run_done) run r = { .root = kdp_test_tree_new("sriov-discover") };

        kdp_test_sriov_e810_tree(r.root);
        run_scan(&r);
        /* leaving between the listing of net/ and the read of its type: as gone */
        kdp_test_tree_remove(r.root, "sys/devices/" KDP_TEST_E810_PORT "/0000:8a:01.1/net/ens3f0v1/type");
        expect_discovered(&r, "0000:8a:01.1", &(sriov_func){ E810_VF("0000:8a:01.1", 1, "iavf", 101) });

        /* moved: net/ stays, empty */
        kdp_test_sriov_net_remove(r.root, KDP_TEST_E810_PORT "/0000:8a:01.1", "ens3f0v1");
        expect_discovered(&r, "0000:8a:01.1", &(sriov_func){ E810_VF("0000:8a:01.1", 1, "iavf", 101) });
        /* net/ itself gone too (the driver unbound): the same */
        kdp_test_tree_remove(r.root, "sys/devices/" KDP_TEST_E810_PORT "/0000:8a:01.1/net");
        expect_discovered(&r, "0000:8a:01.1", &(sriov_func){ E810_VF("0000:8a:01.1", 1, "iavf", 101) });
}
END_TEST

START_TEST(test_sriov_discover_function_gone) {
        _cleanup_(run_done) run r = { .root = kdp_test_tree_new("sriov-discover") };

        kdp_test_sriov_e810_tree(r.root);
        run_scan(&r);

        /* removed after the scan: its bus link dangles, its directory is gone */
        {
                char *dir = kdp_test_tree_path(r.root, "sys/devices/" KDP_TEST_E810_PORT "/0000:8a:01.2");

                kdp_test_rm_rfp(&dir);
        }
        expect_failure(&r, "0000:8a:01.2", -ENOENT, "its sysfs directory is gone");

        /* being removed: the PF dropped its virtfn3 link first */
        kdp_test_tree_remove(r.root, "sys/devices/" KDP_TEST_E810_PF0 "/virtfn3");
        expect_failure(&r, "0000:8a:01.3", -ENOENT, "its PF lists no virtfn link to it (it is being removed)");

        /* and the PF of a VF gone with it */
        kdp_test_tree_remove(r.root, "sys/bus/pci/devices/0000:8a:00.0");
        expect_failure(&r, "0000:8a:01.4", -ENOENT, "its PF's sysfs directory is gone");
}
END_TEST

START_TEST(test_sriov_discover_malformed_files) {
        _cleanup_(run_done) run r = { .root = kdp_test_tree_new("sriov-discover") };

        kdp_test_sriov_e810_tree(r.root);
        kdp_test_sriov_cx6_tree(r.root, false);
        run_scan(&r);

        kdp_test_sriov_write(r.root, KDP_TEST_CX6_PORT "/0000:3b:00.2", "net/ens1f0v0/type", "ether");
        expect_failure(&r, "0000:3b:00.2", -EBADMSG, "its sysfs file net/ens1f0v0/type is malformed");
        kdp_test_sriov_write(r.root, KDP_TEST_CX6_PORT "/0000:3b:00.2", "net/ens1f0v0/type", "65536");
        expect_failure(&r, "0000:3b:00.2", -EBADMSG, "its sysfs file net/ens1f0v0/type is malformed");
        kdp_test_sriov_write(r.root, KDP_TEST_CX6_PORT "/0000:3b:00.2", "net/ens1f0v0/type", "");
        expect_failure(&r, "0000:3b:00.2", -EBADMSG, "its sysfs file net/ens1f0v0/type is malformed");
        /* a number that is neither ether nor infiniband: an unknown link type */
        kdp_test_sriov_write(r.root, KDP_TEST_CX6_PORT "/0000:3b:00.2", "net/ens1f0v0/type", "772");
        {
                sriov_func f;

                ck_assert_int_eq(discover(&r, "0000:3b:00.2", &f), 0);
                ck_assert_str_eq(f.link_type, "");
                ck_assert_str_eq(f.netdev, "ens1f0v0");
        }

        /* a vfio VF reads the PF's */
        kdp_test_sriov_write(r.root, KDP_TEST_E810_PF0, "net/ens3f0np0/type", "1x");
        expect_failure(&r, "0000:8a:01.6", -EBADMSG, "its PF's sysfs file net/ens3f0np0/type is malformed");

        /* unreadable: a directory where the file should be */
        kdp_test_tree_remove(r.root, "sys/devices/" KDP_TEST_E810_PORT "/0000:8a:01.0/net/ens3f0v0/type");
        kdp_test_tree_mkdir(r.root, "sys/devices/" KDP_TEST_E810_PORT "/0000:8a:01.0/net/ens3f0v0/type");
        expect_failure(&r, "0000:8a:01.0", -EISDIR, "its sysfs file net/ens3f0v0/type could not be read");

        kdp_test_sriov_write(r.root, KDP_TEST_CX6_PORT "/0000:3b:00.3", "acpi_index", "one");
        expect_failure(&r, "0000:3b:00.3", -EBADMSG, "its sysfs file acpi_index is malformed");
        kdp_test_sriov_write(r.root, KDP_TEST_CX6_PORT "/0000:3b:00.3", "acpi_index", "12345678901234567");
        expect_failure(&r, "0000:3b:00.3", -EBADMSG, "its sysfs file acpi_index is malformed");

        kdp_test_tree_mkdir(r.root, "sys/devices/" KDP_TEST_E810_PORT "/0000:8a:05.0/uio/uio");
        expect_failure(&r, "0000:8a:05.0", -EBADMSG, "its sysfs entry uio/uio is malformed");

        kdp_test_tree_remove(r.root, "sys/devices/" KDP_TEST_CX6_PORT "/0000:3b:00.4/infiniband_verbs/uverbs4/ibdev");
        kdp_test_tree_mkdir(r.root, "sys/devices/" KDP_TEST_CX6_PORT "/0000:3b:00.4/infiniband_verbs/uverbs4/ibdev");
        expect_failure(&r, "0000:3b:00.4", -EISDIR, "its sysfs file infiniband_verbs/uverbs4/ibdev could not be read");
}
END_TEST

/* ---- ConnectX-6 Dx ---- */

START_TEST(test_sriov_discover_cx6_rdma_vfs) {
        _cleanup_(run_done) run r = { .root = kdp_test_tree_new("sriov-discover") };

        kdp_test_sriov_cx6_tree(r.root, false);
        run_scan(&r);

        expect_discovered(&r, "0000:3b:00.2",
                          &(sriov_func){ CX6_RDMA_VF("0000:3b:00.2", 0, 2) });
        /* ucm first when the legacy node is there */
        expect_discovered(&r, "0000:3b:00.3",
                          &(sriov_func){ CX6_VF("0000:3b:00.3", 1), .netdev = "ens1f0v1", .rdma_dev = "mlx5_3",
                                         .rdma_nodes = { "/dev/infiniband/ucm3", "/dev/infiniband/issm3",
                                                         "/dev/infiniband/umad3", "/dev/infiniband/uverbs3",
                                                         "/dev/infiniband/rdma_cm" },
                                         .n_rdma_nodes = 5 });
        expect_discovered(&r, "0000:3b:00.0", &cx6_pf0);

        /* each node only if present: no rdma_cm, and an umad of another RDMA device */
        kdp_test_tree_remove(r.root, "dev/infiniband/rdma_cm");
        kdp_test_sriov_write(r.root, KDP_TEST_CX6_PORT "/0000:3b:00.2", "infiniband_mad/umad2/ibdev", "mlx5_20");
        expect_discovered(&r, "0000:3b:00.2",
                          &(sriov_func){ CX6_VF("0000:3b:00.2", 0), .netdev = "ens1f0v0", .rdma_dev = "mlx5_2",
                                         .rdma_nodes = { "/dev/infiniband/issm2", "/dev/infiniband/uverbs2" },
                                         .n_rdma_nodes = 2 });
}
END_TEST

/* §15's switchdev variant: the PF's net/ holds the uplink and the representors; the PF name is the uplink. */
START_TEST(test_sriov_discover_switchdev_uplink) {
        _cleanup_(run_done) run r = { .root = kdp_test_tree_new("sriov-discover") };

        kdp_test_sriov_cx6_tree(r.root, true);
        run_scan(&r);

        /* the PF's own netdev too */
        expect_discovered(&r, "0000:3b:00.0", &cx6_pf0);

        expect_discovered(&r, "0000:3b:00.4",
                          &(sriov_func){ CX6_RDMA_VF("0000:3b:00.4", 2, 4) });
}
END_TEST

/*
 * A switchdev PF whose uplink sorts after its representors (a CX-4 Lx showed if=pf0,eth7,eth5,...,
 * §10), and one whose uplink is not there: never a representor, whatever comes first.
 */
START_TEST(test_sriov_discover_switchdev_never_a_representor) {
        _cleanup_(run_done) run r = { .root = kdp_test_tree_new("sriov-discover") };
        static const char pf[] = "pci0000:80/0000:80:01.0/0000:81:00.0";
        char ifname[IF_NAMESIZE], port[16];
        sriov_func f;

        kdp_test_pci_add(r.root, &(kdp_test_pci_dev){ .path = pf, .vendor = "0x15b3", .device = "0x1015",
                                                      .class_code = "0x020000", .numa_node = "1",
                                                      .driver = "mlx5_core", .sriov_totalvfs = "8",
                                                      .sriov_numvfs = "2" });
        for (int i = 0; i < 2; i++) {
                (void) snprintf(ifname, sizeof(ifname), "eth%d", i);
                (void) snprintf(port, sizeof(port), i ? "c1pf0vf%d" : "pf0vf%d", i);
                kdp_test_sriov_net_add(r.root, pf, ifname, "1", port, "02c0ffee00000001");
        }
        kdp_test_sriov_net_add(r.root, pf, "ethsf0", "1", "pf0sf0", "02c0ffee00000001");
        /* a netdev the driver gives no port name, sorting before the uplink: the uplink still wins */
        kdp_test_sriov_net_add(r.root, pf, "ib0", "32", NULL, NULL);
        kdp_test_sriov_net_add(r.root, pf, "pf0", "1", "p0", "02c0ffee00000001");
        kdp_test_pci_add(r.root, &(kdp_test_pci_dev){ .path = "pci0000:80/0000:80:01.0/0000:81:00.2",
                                                      .vendor = "0x15b3", .device = "0x1016",
                                                      .class_code = "0x020000", .numa_node = "1",
                                                      .driver = "vfio-pci", .iommu_group = "42",
                                                      .physfn = "0000:81:00.0", .vf_index = 0 });
        run_scan(&r);

        expect_discovered(&r, "0000:81:00.2",
                          &(sriov_func){ .address = "0000:81:00.2", .vendor = "15b3", .device = "1016",
                                         .class_code = 0x020000, .driver = "vfio-pci", .numa_node = 1,
                                         .pf_address = "0000:81:00.0", .vf_index = 0, .pf_name = "pf0",
                                         .link_type = "ether", .iommu_group = 42, .uio_index = -1 });
        ck_assert_int_eq(discover(&r, "0000:81:00.0", &f), 0);
        ck_assert_str_eq(f.netdev, "pf0");

        /* no uplink: the first netdev that is no representor */
        kdp_test_sriov_net_remove(r.root, pf, "pf0");
        ck_assert_int_eq(discover(&r, "0000:81:00.2", &f), 0);
        ck_assert_str_eq(f.pf_name, "ib0");
        ck_assert_str_eq(f.link_type, "infiniband");
        /* only representors: no PF name, no link type */
        kdp_test_sriov_net_remove(r.root, pf, "ib0");
        ck_assert_int_eq(discover(&r, "0000:81:00.2", &f), 0);
        ck_assert_str_eq(f.pf_name, "");
        ck_assert_str_eq(f.link_type, "");
}
END_TEST

/* PF1 in InfiniBand mode: IPoIB netdevs (type 32) and the default pkey at index 0. */
START_TEST(test_sriov_discover_infiniband_pkey) {
        _cleanup_(run_done) run r = { .root = kdp_test_tree_new("sriov-discover") };
        static const char vf[] = KDP_TEST_CX6_PORT "/0000:3b:01.2";

        kdp_test_pci_add(r.root, &(kdp_test_pci_dev){ .path = KDP_TEST_CX6_PF1, .vendor = "0x15b3", .device = "0x101d",
                                                      .class_code = "0x020700", .numa_node = "0",
                                                      .driver = "mlx5_core", .sriov_totalvfs = "8",
                                                      .sriov_numvfs = "1" });
        kdp_test_sriov_net_add(r.root, KDP_TEST_CX6_PF1, "ibp59s0f1", "32", NULL, NULL);
        kdp_test_pci_add(r.root, &(kdp_test_pci_dev){ .path = vf, .vendor = "0x15b3", .device = "0x101e",
                                                      .class_code = "0x020700", .numa_node = "0",
                                                      .driver = "mlx5_core", .physfn = "0000:3b:00.1",
                                                      .vf_index = 0 });
        kdp_test_sriov_net_add(r.root, vf, "ibp59s0f1v0", "32", NULL, NULL);
        kdp_test_sriov_rdma_add(r.root, vf, "mlx5_6", 6, "InfiniBand");
        kdp_test_sriov_write(r.root, vf, "infiniband/mlx5_6/ports/1/pkeys/0", "0x7fff");
        kdp_test_sriov_write(r.root, vf, "infiniband/mlx5_6/ports/1/pkeys/1", "0x8001");
        run_scan(&r);

        expect_discovered(&r, "0000:3b:01.2",
                          &(sriov_func){ .address = "0000:3b:01.2", .vendor = "15b3", .device = "101e",
                                         .class_code = 0x020700, .driver = "mlx5_core", .numa_node = 0,
                                         .pf_address = "0000:3b:00.1", .vf_index = 0, .pf_name = "ibp59s0f1",
                                         .netdev = "ibp59s0f1v0", .link_type = "infiniband", .pkey = "0x7fff",
                                         .iommu_group = -1, .uio_index = -1, .rdma_dev = "mlx5_6",
                                         .rdma_nodes = { "/dev/infiniband/issm6", "/dev/infiniband/umad6",
                                                         "/dev/infiniband/uverbs6" },
                                         .n_rdma_nodes = 3 });

        kdp_test_sriov_write(r.root, vf, "infiniband/mlx5_6/ports/1/pkeys/0", "7fff");
        expect_failure(&r, "0000:3b:01.2", -EBADMSG, "its sysfs file infiniband/mlx5_6/ports/1/pkeys/0 is malformed");
}
END_TEST

/* vDPA devices of the bus whose directory is a VF's child: vhost (with its node), virtio, unbound. */
START_TEST(test_sriov_discover_vdpa) {
        _cleanup_(run_done) run r = { .root = kdp_test_tree_new("sriov-discover") };
        sriov_func f;

        kdp_test_sriov_cx6_tree(r.root, false);
        kdp_test_sriov_vdpa_add(r.root, KDP_TEST_CX6_PORT "/0000:3b:00.4", "vdpa0", "vhost_vdpa");
        kdp_test_sriov_write(r.root, KDP_TEST_CX6_PORT "/0000:3b:00.4/vdpa0", "vhost-vdpa-0/dev", "511:0");
        kdp_test_sriov_write(r.root, KDP_TEST_CX6_PORT "/0000:3b:00.4/vdpa0", "vhost-vdpa-0/uevent",
                  "MAJOR=511\nMINOR=0\nDEVNAME=vhost-vdpa-0");
        kdp_test_tree_write(r.root, "dev/vhost-vdpa-0", "");
        kdp_test_sriov_vdpa_add(r.root, KDP_TEST_CX6_PORT "/0000:3b:00.5", "vdpa1", "virtio_vdpa");
        kdp_test_sriov_vdpa_add(r.root, KDP_TEST_CX6_PORT "/0000:3b:00.3", "vdpa2", NULL);
        /* a simulator's device may take any name, even one every PCI function has a file of */
        kdp_test_sriov_vdpa_add(r.root, "vdpasim_net", "class", "vhost_vdpa");
        kdp_test_sriov_write(r.root, "vdpasim_net/class", "vhost-vdpa-1/uevent",
                             "MAJOR=511\nMINOR=1\nDEVNAME=vhost-vdpa-1");
        run_scan(&r);

        expect_discovered(&r, "0000:3b:00.4",
                          &(sriov_func){ CX6_RDMA_VF("0000:3b:00.4", 2, 4), .vdpa_type = "vhost",
                                         .vdpa_path = "/dev/vhost-vdpa-0" });
        ck_assert_int_eq(discover(&r, "0000:3b:00.5", &f), 0);
        ck_assert_str_eq(f.vdpa_type, "virtio");
        ck_assert_str_eq(f.vdpa_path, "");
        ck_assert_int_eq(discover(&r, "0000:3b:00.3", &f), 0);
        ck_assert_str_eq(f.vdpa_type, "");
        ck_assert_str_eq(f.vdpa_path, "");
        /* another VF's vDPA device is not this one's */
        ck_assert_int_eq(discover(&r, "0000:3b:00.2", &f), 0);
        ck_assert_str_eq(f.vdpa_type, "");

        /* bound to vhost_vdpa before its node exists: no usable vDPA device yet */
        kdp_test_tree_remove(r.root, "sys/devices/" KDP_TEST_CX6_PORT "/0000:3b:00.4/vdpa0/vhost-vdpa-0/dev");
        kdp_test_tree_remove(r.root, "sys/devices/" KDP_TEST_CX6_PORT "/0000:3b:00.4/vdpa0/vhost-vdpa-0/uevent");
        kdp_test_tree_remove(r.root, "sys/devices/" KDP_TEST_CX6_PORT "/0000:3b:00.4/vdpa0/vhost-vdpa-0");
        ck_assert_int_eq(discover(&r, "0000:3b:00.4", &f), 0);
        ck_assert_str_eq(f.vdpa_type, "");
        ck_assert_str_eq(f.vdpa_path, "");
}
END_TEST

static Suite *sriov_discover_suite(void) {
        Suite *s = suite_create("sriov-discover");
        TCase *tc;

        tc = tcase_create("e810");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_sriov_discover_e810_pf_and_vfs);
        tcase_add_test(tc, test_sriov_discover_noiommu_group);
        tcase_add_test(tc, test_sriov_discover_uio_vf);
        tcase_add_test(tc, test_sriov_discover_pf_with_vfs);
        tcase_add_test(tc, test_sriov_discover_netdev_moved_into_a_pod);
        suite_add_tcase(s, tc);

        tc = tcase_create("connectx");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_sriov_discover_cx6_rdma_vfs);
        tcase_add_test(tc, test_sriov_discover_switchdev_uplink);
        tcase_add_test(tc, test_sriov_discover_switchdev_never_a_representor);
        tcase_add_test(tc, test_sriov_discover_infiniband_pkey);
        tcase_add_test(tc, test_sriov_discover_vdpa);
        suite_add_tcase(s, tc);

        tc = tcase_create("errors");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_sriov_discover_function_gone);
        tcase_add_test(tc, test_sriov_discover_malformed_files);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return kdp_test_run(sriov_discover_suite());
}
