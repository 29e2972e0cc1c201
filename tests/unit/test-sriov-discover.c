/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The SR-IOV backend's reader of one PCI function (plugins/sriov/discover.c), on plain
 * sysfs/dev trees shaped as HARDWARE-SRIOV §14 (Intel E810, iavf and vfio-pci VFs) and
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

KDP_DEFINE_CLEANUP_FUNC(kdp_pci_list, kdp_pci_list_free)

/* ---- building the trees ---- */

/* §14: root port 0000:89:02.0 on NUMA node 1, PF0 0000:8a:00.0 and PF1 0000:8a:00.1 below it */
#define E810_PORT "pci0000:89/0000:89:02.0"
#define E810_PF0 E810_PORT "/0000:8a:00.0"
#define E810_PF1 E810_PORT "/0000:8a:00.1"
/* §15: PF0 0000:3b:00.0 (its VFs at 3b:00.2-5) and PF1 0000:3b:00.1 (IB here) */
#define CX6_PORT "pci0000:3a/0000:3a:00.0"
#define CX6_PF0 CX6_PORT "/0000:3b:00.0"
#define CX6_PF1 CX6_PORT "/0000:3b:00.1"

/* A file below a device directory (path below sys/devices), with the kernel's newline. */
static void dev_write(const char *root, const char *dev_path, const char *file, const char *value) {
        _cleanup_free_ char *rel = NULL, *content = NULL;

        ck_assert_int_ge(asprintf(&rel, "sys/devices/%s/%s", dev_path, file), 0);
        ck_assert_int_ge(asprintf(&content, "%s\n", value), 0);
        kdp_test_tree_write(root, rel, content);
}

/* The last component of a device path: its PCI address. */
static const char *address_of(const char *dev_path) {
        const char *slash = strrchr(dev_path, '/');

        return slash ? slash + 1 : dev_path;
}

/*
 * A netdev below the device at dev_path, as §6 and §15 list its files; port_name and switch_id
 * NULL leave phys_port_name and phys_switch_id out (a driver without them).
 */
static void net_add(const char *root, const char *dev_path, const char *ifname, const char *type,
                    const char *port_name, const char *switch_id) {
        _cleanup_free_ char *dir = NULL, *rel = NULL, *target = NULL, *file = NULL, *uevent = NULL;

        ck_assert_int_ge(asprintf(&dir, "net/%s", ifname), 0);
#define NET_FILE(name, value)                                                    \
        do {                                                                     \
                free(file);                                                      \
                ck_assert_int_ge(asprintf(&file, "%s/%s", dir, name), 0);        \
                dev_write(root, dev_path, file, value);                          \
        } while (0)
        NET_FILE("type", type);
        NET_FILE("operstate", "up");
        NET_FILE("carrier", "1");
        NET_FILE("address", "3c:fd:fe:a1:b2:c3");
        if (port_name)
                NET_FILE("phys_port_name", port_name);
        if (switch_id)
                NET_FILE("phys_switch_id", switch_id);
        ck_assert_int_ge(asprintf(&uevent, "INTERFACE=%s\nIFINDEX=7", ifname), 0);
        NET_FILE("uevent", uevent);
#undef NET_FILE
        ck_assert_int_ge(asprintf(&rel, "sys/devices/%s/%s/device", dev_path, dir), 0);
        ck_assert_int_ge(asprintf(&target, "../../../%s", address_of(dev_path)), 0);
        kdp_test_tree_link(root, rel, target);
        free(rel);
        free(target);
        ck_assert_int_ge(asprintf(&rel, "sys/class/net/%s", ifname), 0);
        ck_assert_int_ge(asprintf(&target, "../../devices/%s/%s", dev_path, dir), 0);
        kdp_test_tree_link(root, rel, target);
}

/* Removes a netdev net_add() made, as moving it into another netns does (its net/ stays, empty). */
static void net_remove(const char *root, const char *dev_path, const char *ifname) {
        static const char *const files[] = { "type", "operstate", "carrier", "address", "phys_port_name",
                                             "phys_switch_id", "uevent", "device" };
        _cleanup_free_ char *rel = NULL;

        for (size_t i = 0; i < KDP_ELEMENTSOF(files); i++) {
                _cleanup_free_ char *path = NULL;

                ck_assert_int_ge(asprintf(&path, "%s/sys/devices/%s/net/%s/%s", root, dev_path, ifname, files[i]), 0);
                (void) unlink(path);
        }
        ck_assert_int_ge(asprintf(&rel, "sys/devices/%s/net/%s", dev_path, ifname), 0);
        kdp_test_tree_remove(root, rel);
        free(rel);
        ck_assert_int_ge(asprintf(&rel, "sys/class/net/%s", ifname), 0);
        kdp_test_tree_remove(root, rel);
}

/* The SR-IOV files of a PF (§1), beside those kdp_test_pci_add() writes. */
static void pf_sriov_files(const char *root, const char *pf_path, const char *offset, const char *vf_device) {
        dev_write(root, pf_path, "sriov_offset", offset);
        dev_write(root, pf_path, "sriov_stride", "1");
        dev_write(root, pf_path, "sriov_vf_device", vf_device);
        dev_write(root, pf_path, "sriov_drivers_autoprobe", "1");
}

/* §14, PF0 and VFs 0-7 (iavf 0-5 with ens3f0v<i>, vfio-pci 6-7), PF1 with VF0 on igb_uio. */
static void e810_tree(const char *root) {
        char vf_path[128], ifname[IF_NAMESIZE], group[8];

        kdp_test_pci_add(root, &(kdp_test_pci_dev){ .path = E810_PORT, .vendor = "0x8086", .device = "0x347a",
                                                    .class_code = "0x060400", .numa_node = "1",
                                                    .driver = "pcieport" });
        kdp_test_pci_add(root, &(kdp_test_pci_dev){
                                       .path = E810_PF0, .vendor = "0x8086", .device = "0x1593",
                                       .subsystem_vendor = "0x8086", .subsystem_device = "0x0005",
                                       .class_code = "0x020000", .numa_node = "1", .driver = "ice",
                                       .iommu_group = "90", .sriov_totalvfs = "128", .sriov_numvfs = "8" });
        dev_write(root, E810_PF0, "modalias", "pci:v00008086d00001593sv00008086sd00000005bc02sc00i00");
        dev_write(root, E810_PF0, "acpi_index", "3");
        pf_sriov_files(root, E810_PF0, "8", "1889");
        net_add(root, E810_PF0, "ens3f0np0", "1", "p0", NULL);

        for (int i = 0; i < 8; i++) {
                (void) snprintf(vf_path, sizeof(vf_path), E810_PORT "/0000:8a:01.%d", i);
                (void) snprintf(group, sizeof(group), "%d", 100 + i);
                kdp_test_pci_add(root, &(kdp_test_pci_dev){
                                               .path = vf_path, .vendor = "0x8086", .device = "0x1889",
                                               .subsystem_vendor = "0x8086", .subsystem_device = "0x0000",
                                               .class_code = "0x020000", .numa_node = "1",
                                               .driver = i < 6 ? "iavf" : "vfio-pci", .iommu_group = group,
                                               .physfn = "0000:8a:00.0", .vf_index = i });
                dev_write(root, vf_path, "modalias", "pci:v00008086d00001889sv00008086sd00000000bc02sc00i00");
                if (i < 6) {
                        (void) snprintf(ifname, sizeof(ifname), "ens3f0v%d", i);
                        net_add(root, vf_path, ifname, "1", NULL, NULL);
                }
        }
        kdp_test_tree_write(root, "dev/vfio/vfio", "");
        kdp_test_tree_write(root, "dev/vfio/106", "");
        kdp_test_tree_write(root, "dev/vfio/107", "");

        /* PF1: offset 39, its VF0 at 8a:05.0 (§2) bound to igb_uio */
        kdp_test_pci_add(root, &(kdp_test_pci_dev){
                                       .path = E810_PF1, .vendor = "0x8086", .device = "0x1593",
                                       .subsystem_vendor = "0x8086", .subsystem_device = "0x0005",
                                       .class_code = "0x020000", .numa_node = "1", .driver = "ice",
                                       .iommu_group = "91", .sriov_totalvfs = "128", .sriov_numvfs = "1" });
        pf_sriov_files(root, E810_PF1, "39", "1889");
        net_add(root, E810_PF1, "ens3f1np1", "1", "p1", NULL);
        kdp_test_pci_add(root, &(kdp_test_pci_dev){
                                       .path = E810_PORT "/0000:8a:05.0", .vendor = "0x8086", .device = "0x1889",
                                       .class_code = "0x020000", .numa_node = "1", .driver = "igb_uio",
                                       .iommu_group = "110", .physfn = "0000:8a:00.1", .vf_index = 0 });
        dev_write(root, E810_PORT "/0000:8a:05.0", "uio/uio3/name", "uio_pci_generic");
        dev_write(root, E810_PORT "/0000:8a:05.0", "uio/uio3/dev", "243:3");
        dev_write(root, E810_PORT "/0000:8a:05.0", "uio/uio3/uevent", "MAJOR=243\nMINOR=3\nDEVNAME=uio3");
        kdp_test_tree_write(root, "dev/uio3", "");
}

/* dev_write() of `value` to the file the format names. */
static void dev_writef(const char *root, const char *dev_path, const char *value, const char *format, ...)
        __attribute__((format(printf, 4, 5)));
static void dev_writef(const char *root, const char *dev_path, const char *value, const char *format, ...) {
        _cleanup_free_ char *file = NULL;
        va_list ap;

        va_start(ap, format);
        ck_assert_int_ge(vasprintf(&file, format, ap), 0);
        va_end(ap);
        dev_write(root, dev_path, file, value);
}

/* The RDMA device <ibdev> and its uverbs<k>, umad<k>, issm<k> below the device at dev_path (§7, §15). */
static void rdma_add(const char *root, const char *dev_path, const char *ibdev, int k, const char *link_layer) {
        char value[64];

        dev_writef(root, dev_path, "b8ce:f603:00a1:b2c4", "infiniband/%s/node_guid", ibdev);
        dev_writef(root, dev_path, "4: ACTIVE", "infiniband/%s/ports/1/state", ibdev);
        dev_writef(root, dev_path, "5: LinkUp", "infiniband/%s/ports/1/phys_state", ibdev);
        dev_writef(root, dev_path, link_layer, "infiniband/%s/ports/1/link_layer", ibdev);
        /* a RoCE port has a pkey table too; only an InfiniBand function's counts */
        dev_writef(root, dev_path, "0xffff", "infiniband/%s/ports/1/pkeys/0", ibdev);

        dev_writef(root, dev_path, ibdev, "infiniband_verbs/uverbs%d/ibdev", k);
        (void) snprintf(value, sizeof(value), "231:%d", 192 + k);
        dev_writef(root, dev_path, value, "infiniband_verbs/uverbs%d/dev", k);
        (void) snprintf(value, sizeof(value), "MAJOR=231\nMINOR=%d\nDEVNAME=infiniband/uverbs%d", 192 + k, k);
        dev_writef(root, dev_path, value, "infiniband_verbs/uverbs%d/uevent", k);
        dev_writef(root, dev_path, ibdev, "infiniband_mad/umad%d/ibdev", k);
        dev_writef(root, dev_path, "1", "infiniband_mad/umad%d/port", k);
        dev_writef(root, dev_path, ibdev, "infiniband_mad/issm%d/ibdev", k);
        dev_writef(root, dev_path, "1", "infiniband_mad/issm%d/port", k);

        for (size_t i = 0; i < 3; i++) {
                static const char *const nodes[] = { "uverbs", "umad", "issm" };
                char node[64];

                (void) snprintf(node, sizeof(node), "dev/infiniband/%s%d", nodes[i], k);
                kdp_test_tree_write(root, node, "");
        }
}

/* A vDPA device `name` below the VF at vf_path, bound to `driver` (NULL: unbound), as govdpa finds them. */
static void vdpa_add(const char *root, const char *vf_path, const char *name, const char *driver) {
        _cleanup_free_ char *path = NULL, *rel = NULL, *target = NULL;

        ck_assert_int_ge(asprintf(&path, "%s/%s", vf_path, name), 0);
        dev_write(root, path, "uevent", "MODALIAS=vdpa:v00000001d00001af4");
        ck_assert_int_ge(asprintf(&rel, "sys/bus/vdpa/devices/%s", name), 0);
        ck_assert_int_ge(asprintf(&target, "../../../devices/%s", path), 0);
        kdp_test_tree_link(root, rel, target);
        if (driver) {
                free(rel);
                ck_assert_int_ge(asprintf(&rel, "bus/vdpa/drivers/%s", driver), 0);
                kdp_test_tree_mkdir(root, "sys/bus/vdpa/drivers/virtio_vdpa");
                kdp_test_tree_mkdir(root, "sys/bus/vdpa/drivers/vhost_vdpa");
                kdp_test_pci_sys_link(root, &(kdp_test_pci_dev){ .path = path }, "driver", rel);
        }
}

/* §15: PF0 (mlx5_0) with VFs 3b:00.2-5 (mlx5_2-5, ens1f0v0-3; 00.3 also has the legacy ucm3). */
static void cx6_tree(const char *root, bool switchdev) {
        char vf_path[128], ifname[IF_NAMESIZE], ibdev[16];

        kdp_test_pci_add(root, &(kdp_test_pci_dev){
                                       .path = CX6_PF0, .vendor = "0x15b3", .device = "0x101d",
                                       .subsystem_vendor = "0x15b3", .subsystem_device = "0x0016",
                                       .class_code = "0x020000", .numa_node = "0", .driver = "mlx5_core",
                                       .sriov_totalvfs = "8", .sriov_numvfs = "4" });
        dev_write(root, CX6_PF0, "modalias", "pci:v000015B3d0000101Dsv000015B3sd00000016bc02sc00i00");
        pf_sriov_files(root, CX6_PF0, "2", "101e");
        rdma_add(root, CX6_PF0, "mlx5_0", 0, "Ethernet");
        if (!switchdev)
                net_add(root, CX6_PF0, "ens1f0np0", "1", "p0", NULL);
        else {
                net_add(root, CX6_PF0, "ens1f0np0", "1", "p0", "1c34da0300a1b2c3");
                for (int i = 0; i < 4; i++) {
                        char port[16];

                        (void) snprintf(ifname, sizeof(ifname), "ens1f0r%d", i);
                        (void) snprintf(port, sizeof(port), "pf0vf%d", i);
                        net_add(root, CX6_PF0, ifname, "1", port, "1c34da0300a1b2c3");
                }
        }

        for (int i = 0; i < 4; i++) {
                (void) snprintf(vf_path, sizeof(vf_path), CX6_PORT "/0000:3b:00.%d", 2 + i);
                kdp_test_pci_add(root, &(kdp_test_pci_dev){
                                               .path = vf_path, .vendor = "0x15b3", .device = "0x101e",
                                               .subsystem_vendor = "0x15b3", .subsystem_device = "0x0000",
                                               .class_code = "0x020000", .numa_node = "0", .driver = "mlx5_core",
                                               .physfn = "0000:3b:00.0", .vf_index = i });
                dev_write(root, vf_path, "modalias", "pci:v000015B3d0000101Esv000015B3sd00000000bc02sc00i00");
                (void) snprintf(ifname, sizeof(ifname), "ens1f0v%d", i);
                net_add(root, vf_path, ifname, "1", NULL, NULL);
                (void) snprintf(ibdev, sizeof(ibdev), "mlx5_%d", 2 + i);
                rdma_add(root, vf_path, ibdev, 2 + i, "Ethernet");
        }
        dev_write(root, CX6_PORT "/0000:3b:00.3", "infiniband_cm/ucm3/ibdev", "mlx5_3");
        kdp_test_tree_write(root, "dev/infiniband/ucm3", "");
        kdp_test_tree_write(root, "dev/infiniband/rdma_cm", "");
}

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

        e810_tree(r.root);
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

        e810_tree(r.root);
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

        e810_tree(r.root);
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

        e810_tree(r.root);
        run_scan(&r);
        ck_assert_int_eq(discover(&r, "0000:8a:00.1", &f), 0);
        ck_assert(f.is_pf_with_vfs);

        dev_write(r.root, E810_PF1, "sriov_numvfs", "0");
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

        e810_tree(r.root);
        run_scan(&r);
        /* leaving between the listing of net/ and the read of its type: as gone */
        kdp_test_tree_remove(r.root, "sys/devices/" E810_PORT "/0000:8a:01.1/net/ens3f0v1/type");
        expect_discovered(&r, "0000:8a:01.1", &(sriov_func){ E810_VF("0000:8a:01.1", 1, "iavf", 101) });

        /* moved: net/ stays, empty */
        net_remove(r.root, E810_PORT "/0000:8a:01.1", "ens3f0v1");
        expect_discovered(&r, "0000:8a:01.1", &(sriov_func){ E810_VF("0000:8a:01.1", 1, "iavf", 101) });
        /* net/ itself gone too (the driver unbound): the same */
        kdp_test_tree_remove(r.root, "sys/devices/" E810_PORT "/0000:8a:01.1/net");
        expect_discovered(&r, "0000:8a:01.1", &(sriov_func){ E810_VF("0000:8a:01.1", 1, "iavf", 101) });
}
END_TEST

START_TEST(test_sriov_discover_function_gone) {
        _cleanup_(run_done) run r = { .root = kdp_test_tree_new("sriov-discover") };

        e810_tree(r.root);
        run_scan(&r);

        /* removed after the scan: its bus link dangles, its directory is gone */
        {
                char *dir = kdp_test_tree_path(r.root, "sys/devices/" E810_PORT "/0000:8a:01.2");

                kdp_test_rm_rfp(&dir);
        }
        expect_failure(&r, "0000:8a:01.2", -ENOENT, "its sysfs directory is gone");

        /* being removed: the PF dropped its virtfn3 link first */
        kdp_test_tree_remove(r.root, "sys/devices/" E810_PF0 "/virtfn3");
        expect_failure(&r, "0000:8a:01.3", -ENOENT, "its PF lists no virtfn link to it (it is being removed)");

        /* and the PF of a VF gone with it */
        kdp_test_tree_remove(r.root, "sys/bus/pci/devices/0000:8a:00.0");
        expect_failure(&r, "0000:8a:01.4", -ENOENT, "its PF's sysfs directory is gone");
}
END_TEST

START_TEST(test_sriov_discover_malformed_files) {
        _cleanup_(run_done) run r = { .root = kdp_test_tree_new("sriov-discover") };

        e810_tree(r.root);
        cx6_tree(r.root, false);
        run_scan(&r);

        dev_write(r.root, CX6_PORT "/0000:3b:00.2", "net/ens1f0v0/type", "ether");
        expect_failure(&r, "0000:3b:00.2", -EBADMSG, "its sysfs file net/ens1f0v0/type is malformed");
        dev_write(r.root, CX6_PORT "/0000:3b:00.2", "net/ens1f0v0/type", "65536");
        expect_failure(&r, "0000:3b:00.2", -EBADMSG, "its sysfs file net/ens1f0v0/type is malformed");
        dev_write(r.root, CX6_PORT "/0000:3b:00.2", "net/ens1f0v0/type", "");
        expect_failure(&r, "0000:3b:00.2", -EBADMSG, "its sysfs file net/ens1f0v0/type is malformed");
        /* a number that is neither ether nor infiniband: an unknown link type */
        dev_write(r.root, CX6_PORT "/0000:3b:00.2", "net/ens1f0v0/type", "772");
        {
                sriov_func f;

                ck_assert_int_eq(discover(&r, "0000:3b:00.2", &f), 0);
                ck_assert_str_eq(f.link_type, "");
                ck_assert_str_eq(f.netdev, "ens1f0v0");
        }

        /* a vfio VF reads the PF's */
        dev_write(r.root, E810_PF0, "net/ens3f0np0/type", "1x");
        expect_failure(&r, "0000:8a:01.6", -EBADMSG, "its PF's sysfs file net/ens3f0np0/type is malformed");

        /* unreadable: a directory where the file should be */
        kdp_test_tree_remove(r.root, "sys/devices/" E810_PORT "/0000:8a:01.0/net/ens3f0v0/type");
        kdp_test_tree_mkdir(r.root, "sys/devices/" E810_PORT "/0000:8a:01.0/net/ens3f0v0/type");
        expect_failure(&r, "0000:8a:01.0", -EISDIR, "its sysfs file net/ens3f0v0/type could not be read");

        dev_write(r.root, CX6_PORT "/0000:3b:00.3", "acpi_index", "one");
        expect_failure(&r, "0000:3b:00.3", -EBADMSG, "its sysfs file acpi_index is malformed");
        dev_write(r.root, CX6_PORT "/0000:3b:00.3", "acpi_index", "12345678901234567");
        expect_failure(&r, "0000:3b:00.3", -EBADMSG, "its sysfs file acpi_index is malformed");

        kdp_test_tree_mkdir(r.root, "sys/devices/" E810_PORT "/0000:8a:05.0/uio/uio");
        expect_failure(&r, "0000:8a:05.0", -EBADMSG, "its sysfs entry uio/uio is malformed");

        kdp_test_tree_remove(r.root, "sys/devices/" CX6_PORT "/0000:3b:00.4/infiniband_verbs/uverbs4/ibdev");
        kdp_test_tree_mkdir(r.root, "sys/devices/" CX6_PORT "/0000:3b:00.4/infiniband_verbs/uverbs4/ibdev");
        expect_failure(&r, "0000:3b:00.4", -EISDIR, "its sysfs file infiniband_verbs/uverbs4/ibdev could not be read");
}
END_TEST

/* ---- ConnectX-6 Dx ---- */

START_TEST(test_sriov_discover_cx6_rdma_vfs) {
        _cleanup_(run_done) run r = { .root = kdp_test_tree_new("sriov-discover") };

        cx6_tree(r.root, false);
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
        dev_write(r.root, CX6_PORT "/0000:3b:00.2", "infiniband_mad/umad2/ibdev", "mlx5_20");
        expect_discovered(&r, "0000:3b:00.2",
                          &(sriov_func){ CX6_VF("0000:3b:00.2", 0), .netdev = "ens1f0v0", .rdma_dev = "mlx5_2",
                                         .rdma_nodes = { "/dev/infiniband/issm2", "/dev/infiniband/uverbs2" },
                                         .n_rdma_nodes = 2 });
}
END_TEST

/* §15's switchdev variant: the PF's net/ holds the uplink and the representors; the PF name is the uplink. */
START_TEST(test_sriov_discover_switchdev_uplink) {
        _cleanup_(run_done) run r = { .root = kdp_test_tree_new("sriov-discover") };

        cx6_tree(r.root, true);
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
                net_add(r.root, pf, ifname, "1", port, "02c0ffee00000001");
        }
        net_add(r.root, pf, "ethsf0", "1", "pf0sf0", "02c0ffee00000001");
        /* a netdev the driver gives no port name, sorting before the uplink: the uplink still wins */
        net_add(r.root, pf, "ib0", "32", NULL, NULL);
        net_add(r.root, pf, "pf0", "1", "p0", "02c0ffee00000001");
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
        net_remove(r.root, pf, "pf0");
        ck_assert_int_eq(discover(&r, "0000:81:00.2", &f), 0);
        ck_assert_str_eq(f.pf_name, "ib0");
        ck_assert_str_eq(f.link_type, "infiniband");
        /* only representors: no PF name, no link type */
        net_remove(r.root, pf, "ib0");
        ck_assert_int_eq(discover(&r, "0000:81:00.2", &f), 0);
        ck_assert_str_eq(f.pf_name, "");
        ck_assert_str_eq(f.link_type, "");
}
END_TEST

/* PF1 in InfiniBand mode: IPoIB netdevs (type 32) and the default pkey at index 0. */
START_TEST(test_sriov_discover_infiniband_pkey) {
        _cleanup_(run_done) run r = { .root = kdp_test_tree_new("sriov-discover") };
        static const char vf[] = CX6_PORT "/0000:3b:01.2";

        kdp_test_pci_add(r.root, &(kdp_test_pci_dev){ .path = CX6_PF1, .vendor = "0x15b3", .device = "0x101d",
                                                      .class_code = "0x020700", .numa_node = "0",
                                                      .driver = "mlx5_core", .sriov_totalvfs = "8",
                                                      .sriov_numvfs = "1" });
        net_add(r.root, CX6_PF1, "ibp59s0f1", "32", NULL, NULL);
        kdp_test_pci_add(r.root, &(kdp_test_pci_dev){ .path = vf, .vendor = "0x15b3", .device = "0x101e",
                                                      .class_code = "0x020700", .numa_node = "0",
                                                      .driver = "mlx5_core", .physfn = "0000:3b:00.1",
                                                      .vf_index = 0 });
        net_add(r.root, vf, "ibp59s0f1v0", "32", NULL, NULL);
        rdma_add(r.root, vf, "mlx5_6", 6, "InfiniBand");
        dev_write(r.root, vf, "infiniband/mlx5_6/ports/1/pkeys/0", "0x7fff");
        dev_write(r.root, vf, "infiniband/mlx5_6/ports/1/pkeys/1", "0x8001");
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

        dev_write(r.root, vf, "infiniband/mlx5_6/ports/1/pkeys/0", "7fff");
        expect_failure(&r, "0000:3b:01.2", -EBADMSG, "its sysfs file infiniband/mlx5_6/ports/1/pkeys/0 is malformed");
}
END_TEST

/* vDPA devices of the bus whose directory is a VF's child: vhost (with its node), virtio, unbound. */
START_TEST(test_sriov_discover_vdpa) {
        _cleanup_(run_done) run r = { .root = kdp_test_tree_new("sriov-discover") };
        sriov_func f;

        cx6_tree(r.root, false);
        vdpa_add(r.root, CX6_PORT "/0000:3b:00.4", "vdpa0", "vhost_vdpa");
        dev_write(r.root, CX6_PORT "/0000:3b:00.4/vdpa0", "vhost-vdpa-0/dev", "511:0");
        dev_write(r.root, CX6_PORT "/0000:3b:00.4/vdpa0", "vhost-vdpa-0/uevent",
                  "MAJOR=511\nMINOR=0\nDEVNAME=vhost-vdpa-0");
        kdp_test_tree_write(r.root, "dev/vhost-vdpa-0", "");
        vdpa_add(r.root, CX6_PORT "/0000:3b:00.5", "vdpa1", "virtio_vdpa");
        vdpa_add(r.root, CX6_PORT "/0000:3b:00.3", "vdpa2", NULL);
        /* a simulator's device may take any name, even one every PCI function has a file of */
        vdpa_add(r.root, "vdpasim_net", "class", "vhost_vdpa");
        dev_write(r.root, "vdpasim_net/class", "vhost-vdpa-1/uevent", "MAJOR=511\nMINOR=1\nDEVNAME=vhost-vdpa-1");
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
        kdp_test_tree_remove(r.root, "sys/devices/" CX6_PORT "/0000:3b:00.4/vdpa0/vhost-vdpa-0/dev");
        kdp_test_tree_remove(r.root, "sys/devices/" CX6_PORT "/0000:3b:00.4/vdpa0/vhost-vdpa-0/uevent");
        kdp_test_tree_remove(r.root, "sys/devices/" CX6_PORT "/0000:3b:00.4/vdpa0/vhost-vdpa-0");
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
