/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * SR-IOV sysfs and /dev fixture trees for the unit tests (header-only, like kdp-test.h; include
 * that and kdp-test-sysfs.h first), shaped as docs/hardware-sriov.md §14 (Intel E810: two PFs, iavf,
 * vfio-pci and igb_uio VFs) and §15 (ConnectX-6 Dx with RDMA VFs, legacy or switchdev mode),
 * with the pieces to change them: netdevs, RDMA and vDPA devices.
 */
#pragma once

#include <check.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kdp/cleanup.h>

#include "alloc.h"

/* §14: root port 0000:89:02.0 on NUMA node 1, PF0 0000:8a:00.0 and PF1 0000:8a:00.1 below it */
#define KDP_TEST_E810_PORT "pci0000:89/0000:89:02.0"
#define KDP_TEST_E810_PF0 KDP_TEST_E810_PORT "/0000:8a:00.0"
#define KDP_TEST_E810_PF1 KDP_TEST_E810_PORT "/0000:8a:00.1"
/* §15: PF0 0000:3b:00.0 (its VFs at 3b:00.2-5) and PF1 0000:3b:00.1 (IB here) */
#define KDP_TEST_CX6_PORT "pci0000:3a/0000:3a:00.0"
#define KDP_TEST_CX6_PF0 KDP_TEST_CX6_PORT "/0000:3b:00.0"
#define KDP_TEST_CX6_PF1 KDP_TEST_CX6_PORT "/0000:3b:00.1"

/* A file below a device directory (path below sys/devices), with the kernel's newline. */
static inline void kdp_test_sriov_write(const char *root, const char *dev_path, const char *file, const char *value) {
        _cleanup_free_ char *rel = NULL, *content = NULL;

        ck_assert_int_ge(asprintf(&rel, "sys/devices/%s/%s", dev_path, file), 0);
        ck_assert_int_ge(asprintf(&content, "%s\n", value), 0);
        kdp_test_tree_write(root, rel, content);
}

/* The last component of a device path: its PCI address. */
static inline const char *kdp_test_sriov_address_of(const char *dev_path) {
        const char *slash = strrchr(dev_path, '/');

        return slash ? slash + 1 : dev_path;
}

/*
 * A netdev below the device at dev_path, as §6 and §15 list its files; port_name and switch_id
 * NULL leave phys_port_name and phys_switch_id out (a driver without them).
 */
static inline void kdp_test_sriov_net_add(const char *root, const char *dev_path, const char *ifname, const char *type,
                    const char *port_name, const char *switch_id) {
        _cleanup_free_ char *dir = NULL, *rel = NULL, *target = NULL, *file = NULL, *uevent = NULL;

        ck_assert_int_ge(asprintf(&dir, "net/%s", ifname), 0);
#define NET_FILE(name, value)                                                    \
        do {                                                                     \
                free(file);                                                      \
                ck_assert_int_ge(asprintf(&file, "%s/%s", dir, name), 0);        \
                kdp_test_sriov_write(root, dev_path, file, value);                          \
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
        ck_assert_int_ge(asprintf(&target, "../../../%s", kdp_test_sriov_address_of(dev_path)), 0);
        kdp_test_tree_link(root, rel, target);
        free(rel);
        free(target);
        ck_assert_int_ge(asprintf(&rel, "sys/class/net/%s", ifname), 0);
        ck_assert_int_ge(asprintf(&target, "../../devices/%s/%s", dev_path, dir), 0);
        kdp_test_tree_link(root, rel, target);
}

/* Removes a netdev kdp_test_sriov_net_add() made, as moving it into another netns does (its net/ stays, empty). */
static inline void kdp_test_sriov_net_remove(const char *root, const char *dev_path, const char *ifname) {
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
static inline void kdp_test_sriov_pf_files(const char *root, const char *pf_path, const char *offset,
                                           const char *vf_device) {
        kdp_test_sriov_write(root, pf_path, "sriov_offset", offset);
        kdp_test_sriov_write(root, pf_path, "sriov_stride", "1");
        kdp_test_sriov_write(root, pf_path, "sriov_vf_device", vf_device);
        kdp_test_sriov_write(root, pf_path, "sriov_drivers_autoprobe", "1");
}

/* §14, PF0 and VFs 0-7 (iavf 0-5 with ens3f0v<i>, vfio-pci 6-7), PF1 with VF0 on igb_uio. */
static inline void kdp_test_sriov_e810_tree(const char *root) {
        char vf_path[128], ifname[IF_NAMESIZE], group[8];

        kdp_test_pci_add(root, &(kdp_test_pci_dev){ .path = KDP_TEST_E810_PORT, .vendor = "0x8086", .device = "0x347a",
                                                    .class_code = "0x060400", .numa_node = "1",
                                                    .driver = "pcieport" });
        kdp_test_pci_add(root, &(kdp_test_pci_dev){
                                       .path = KDP_TEST_E810_PF0, .vendor = "0x8086", .device = "0x1593",
                                       .subsystem_vendor = "0x8086", .subsystem_device = "0x0005",
                                       .class_code = "0x020000", .numa_node = "1", .driver = "ice",
                                       .iommu_group = "90", .sriov_totalvfs = "128", .sriov_numvfs = "8" });
        kdp_test_sriov_write(root, KDP_TEST_E810_PF0, "modalias",
                             "pci:v00008086d00001593sv00008086sd00000005bc02sc00i00");
        kdp_test_sriov_write(root, KDP_TEST_E810_PF0, "acpi_index", "3");
        kdp_test_sriov_pf_files(root, KDP_TEST_E810_PF0, "8", "1889");
        kdp_test_sriov_net_add(root, KDP_TEST_E810_PF0, "ens3f0np0", "1", "p0", NULL);

        for (int i = 0; i < 8; i++) {
                (void) snprintf(vf_path, sizeof(vf_path), KDP_TEST_E810_PORT "/0000:8a:01.%d", i);
                (void) snprintf(group, sizeof(group), "%d", 100 + i);
                kdp_test_pci_add(root, &(kdp_test_pci_dev){
                                               .path = vf_path, .vendor = "0x8086", .device = "0x1889",
                                               .subsystem_vendor = "0x8086", .subsystem_device = "0x0000",
                                               .class_code = "0x020000", .numa_node = "1",
                                               .driver = i < 6 ? "iavf" : "vfio-pci", .iommu_group = group,
                                               .physfn = "0000:8a:00.0", .vf_index = i });
                kdp_test_sriov_write(root, vf_path, "modalias",
                                     "pci:v00008086d00001889sv00008086sd00000000bc02sc00i00");
                if (i < 6) {
                        (void) snprintf(ifname, sizeof(ifname), "ens3f0v%d", i);
                        kdp_test_sriov_net_add(root, vf_path, ifname, "1", NULL, NULL);
                }
        }
        kdp_test_tree_write(root, "dev/vfio/vfio", "");
        kdp_test_tree_write(root, "dev/vfio/106", "");
        kdp_test_tree_write(root, "dev/vfio/107", "");

        /* PF1: offset 39, its VF0 at 8a:05.0 (§2) bound to igb_uio */
        kdp_test_pci_add(root, &(kdp_test_pci_dev){
                                       .path = KDP_TEST_E810_PF1, .vendor = "0x8086", .device = "0x1593",
                                       .subsystem_vendor = "0x8086", .subsystem_device = "0x0005",
                                       .class_code = "0x020000", .numa_node = "1", .driver = "ice",
                                       .iommu_group = "91", .sriov_totalvfs = "128", .sriov_numvfs = "1" });
        kdp_test_sriov_pf_files(root, KDP_TEST_E810_PF1, "39", "1889");
        kdp_test_sriov_net_add(root, KDP_TEST_E810_PF1, "ens3f1np1", "1", "p1", NULL);
        kdp_test_pci_add(root, &(kdp_test_pci_dev){
                                       .path = KDP_TEST_E810_PORT "/0000:8a:05.0", .vendor = "0x8086",
                                       .device = "0x1889",
                                       .class_code = "0x020000", .numa_node = "1", .driver = "igb_uio",
                                       .iommu_group = "110", .physfn = "0000:8a:00.1", .vf_index = 0 });
        kdp_test_sriov_write(root, KDP_TEST_E810_PORT "/0000:8a:05.0", "uio/uio3/name", "uio_pci_generic");
        kdp_test_sriov_write(root, KDP_TEST_E810_PORT "/0000:8a:05.0", "uio/uio3/dev", "243:3");
        kdp_test_sriov_write(root, KDP_TEST_E810_PORT "/0000:8a:05.0", "uio/uio3/uevent",
                             "MAJOR=243\nMINOR=3\nDEVNAME=uio3");
        kdp_test_tree_write(root, "dev/uio3", "");
}

/* kdp_test_sriov_write() of `value` to the file the format names. */
static inline void kdp_test_sriov_writef(const char *root, const char *dev_path, const char *value,
                                         const char *format, ...)
        __attribute__((format(printf, 4, 5)));
static inline void kdp_test_sriov_writef(const char *root, const char *dev_path, const char *value,
                                         const char *format, ...) {
        _cleanup_free_ char *file = NULL;
        va_list ap;

        va_start(ap, format);
        ck_assert_int_ge(vasprintf(&file, format, ap), 0);
        va_end(ap);
        kdp_test_sriov_write(root, dev_path, file, value);
}

/* The RDMA device <ibdev> and its uverbs<k>, umad<k>, issm<k> below the device at dev_path (§7, §15). */
static inline void kdp_test_sriov_rdma_add(const char *root, const char *dev_path, const char *ibdev, int k,
                                           const char *link_layer) {
        char value[64];

        kdp_test_sriov_writef(root, dev_path, "b8ce:f603:00a1:b2c4", "infiniband/%s/node_guid", ibdev);
        kdp_test_sriov_writef(root, dev_path, "4: ACTIVE", "infiniband/%s/ports/1/state", ibdev);
        kdp_test_sriov_writef(root, dev_path, "5: LinkUp", "infiniband/%s/ports/1/phys_state", ibdev);
        kdp_test_sriov_writef(root, dev_path, link_layer, "infiniband/%s/ports/1/link_layer", ibdev);
        /* a RoCE port has a pkey table too; only an InfiniBand function's counts */
        kdp_test_sriov_writef(root, dev_path, "0xffff", "infiniband/%s/ports/1/pkeys/0", ibdev);

        kdp_test_sriov_writef(root, dev_path, ibdev, "infiniband_verbs/uverbs%d/ibdev", k);
        (void) snprintf(value, sizeof(value), "231:%d", 192 + k);
        kdp_test_sriov_writef(root, dev_path, value, "infiniband_verbs/uverbs%d/dev", k);
        (void) snprintf(value, sizeof(value), "MAJOR=231\nMINOR=%d\nDEVNAME=infiniband/uverbs%d", 192 + k, k);
        kdp_test_sriov_writef(root, dev_path, value, "infiniband_verbs/uverbs%d/uevent", k);
        kdp_test_sriov_writef(root, dev_path, ibdev, "infiniband_mad/umad%d/ibdev", k);
        kdp_test_sriov_writef(root, dev_path, "1", "infiniband_mad/umad%d/port", k);
        kdp_test_sriov_writef(root, dev_path, ibdev, "infiniband_mad/issm%d/ibdev", k);
        kdp_test_sriov_writef(root, dev_path, "1", "infiniband_mad/issm%d/port", k);

        for (size_t i = 0; i < 3; i++) {
                static const char *const nodes[] = { "uverbs", "umad", "issm" };
                char node[64];

                (void) snprintf(node, sizeof(node), "dev/infiniband/%s%d", nodes[i], k);
                kdp_test_tree_write(root, node, "");
        }
}

/* A vDPA device `name` below the VF at vf_path, bound to `driver` (NULL: unbound), as govdpa finds them. */
static inline void kdp_test_sriov_vdpa_add(const char *root, const char *vf_path, const char *name,
                                           const char *driver) {
        _cleanup_free_ char *path = NULL, *rel = NULL, *target = NULL;

        ck_assert_int_ge(asprintf(&path, "%s/%s", vf_path, name), 0);
        kdp_test_sriov_write(root, path, "uevent", "MODALIAS=vdpa:v00000001d00001af4");
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
static inline void kdp_test_sriov_cx6_tree(const char *root, bool switchdev) {
        char vf_path[128], ifname[IF_NAMESIZE], ibdev[16];

        kdp_test_pci_add(root, &(kdp_test_pci_dev){
                                       .path = KDP_TEST_CX6_PF0, .vendor = "0x15b3", .device = "0x101d",
                                       .subsystem_vendor = "0x15b3", .subsystem_device = "0x0016",
                                       .class_code = "0x020000", .numa_node = "0", .driver = "mlx5_core",
                                       .sriov_totalvfs = "8", .sriov_numvfs = "4" });
        kdp_test_sriov_write(root, KDP_TEST_CX6_PF0, "modalias",
                             "pci:v000015B3d0000101Dsv000015B3sd00000016bc02sc00i00");
        kdp_test_sriov_pf_files(root, KDP_TEST_CX6_PF0, "2", "101e");
        kdp_test_sriov_rdma_add(root, KDP_TEST_CX6_PF0, "mlx5_0", 0, "Ethernet");
        if (!switchdev)
                kdp_test_sriov_net_add(root, KDP_TEST_CX6_PF0, "ens1f0np0", "1", "p0", NULL);
        else {
                kdp_test_sriov_net_add(root, KDP_TEST_CX6_PF0, "ens1f0np0", "1", "p0", "1c34da0300a1b2c3");
                for (int i = 0; i < 4; i++) {
                        char port[16];

                        (void) snprintf(ifname, sizeof(ifname), "ens1f0r%d", i);
                        (void) snprintf(port, sizeof(port), "pf0vf%d", i);
                        kdp_test_sriov_net_add(root, KDP_TEST_CX6_PF0, ifname, "1", port, "1c34da0300a1b2c3");
                }
        }

        for (int i = 0; i < 4; i++) {
                (void) snprintf(vf_path, sizeof(vf_path), KDP_TEST_CX6_PORT "/0000:3b:00.%d", 2 + i);
                kdp_test_pci_add(root, &(kdp_test_pci_dev){
                                               .path = vf_path, .vendor = "0x15b3", .device = "0x101e",
                                               .subsystem_vendor = "0x15b3", .subsystem_device = "0x0000",
                                               .class_code = "0x020000", .numa_node = "0", .driver = "mlx5_core",
                                               .physfn = "0000:3b:00.0", .vf_index = i });
                kdp_test_sriov_write(root, vf_path, "modalias",
                                     "pci:v000015B3d0000101Esv000015B3sd00000000bc02sc00i00");
                (void) snprintf(ifname, sizeof(ifname), "ens1f0v%d", i);
                kdp_test_sriov_net_add(root, vf_path, ifname, "1", NULL, NULL);
                (void) snprintf(ibdev, sizeof(ibdev), "mlx5_%d", 2 + i);
                kdp_test_sriov_rdma_add(root, vf_path, ibdev, 2 + i, "Ethernet");
        }
        kdp_test_sriov_write(root, KDP_TEST_CX6_PORT "/0000:3b:00.3", "infiniband_cm/ucm3/ibdev", "mlx5_3");
        kdp_test_tree_write(root, "dev/infiniband/ucm3", "");
        kdp_test_tree_write(root, "dev/infiniband/rdma_cm", "");
}

/* Removes the RDMA device kdp_test_sriov_rdma_add() made (its class devices stay), as a move into a netns does. */
static inline void kdp_test_sriov_rdma_remove(const char *root, const char *dev_path, const char *ibdev) {
        static const char *const files[] = { "node_guid", "ports/1/state", "ports/1/phys_state",
                                             "ports/1/link_layer", "ports/1/pkeys/0", "ports/1/pkeys",
                                             "ports/1", "ports", "" };

        for (size_t i = 0; i < KDP_ELEMENTSOF(files); i++) {
                _cleanup_free_ char *rel = NULL;

                ck_assert_int_ge(asprintf(&rel, "sys/devices/%s/infiniband/%s/%s", dev_path, ibdev, files[i]), 0);
                kdp_test_tree_remove(root, rel);
        }
}

/* ---- Allocate answers ---- */

/* The response's env is exactly `key`=`ids` and `key`_INFO=`info`, in that order. */
static inline void kdp_test_sriov_expect_env(const kdp_alloc_response *r, const char *key, const char *ids,
                                             const char *info) {
        _cleanup_free_ char *info_key = NULL;

        ck_assert_int_ge(asprintf(&info_key, "%s_INFO", key), 0);
        ck_assert_uint_eq(r->n_envs, 2);
        ck_assert_str_eq(r->envs[0].key, key);
        ck_assert_str_eq(r->envs[0].value, ids);
        ck_assert_str_eq(r->envs[1].key, info_key);
        ck_assert_str_eq(r->envs[1].value, info);
}

typedef struct kdp_test_sriov_node {
        const char *host;               /* relative to <root>/dev */
        const char *container;
} kdp_test_sriov_node;

/* The response's DeviceSpecs are exactly `want`, in order, each "rw". */
static inline void kdp_test_sriov_expect_nodes(const kdp_alloc_response *r, const char *root,
                                               const kdp_test_sriov_node *want, size_t n) {
        ck_assert_uint_eq(r->n_dev_nodes, n);
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *host = NULL;

                ck_assert_int_ge(asprintf(&host, "%s/dev/%s", root, want[i].host), 0);
                ck_assert_str_eq(r->dev_nodes[i].host_path, host);
                ck_assert_str_eq(r->dev_nodes[i].container_path, want[i].container);
                ck_assert_str_eq(r->dev_nodes[i].permissions, "rw");
        }
}
#define KDP_TEST_SRIOV_EXPECT_NODES(r, root, ...) \
        kdp_test_sriov_expect_nodes((r), (root), (const kdp_test_sriov_node[]){ __VA_ARGS__ }, \
                                    KDP_ELEMENTSOF(((const kdp_test_sriov_node[]){ __VA_ARGS__ })))
