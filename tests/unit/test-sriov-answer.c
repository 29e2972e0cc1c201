/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The SR-IOV backend's Allocate answer (plugins/sriov/answer.c): the env and
 * DeviceSpecs sriovdp gives for the functions of one container
 * (docs/hardware-sriov.md §13), on a dev tree in a temporary directory. Pools,
 * selectors and functions are built here directly, as config.c and
 * discover.c would fill them.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <kdp/backend.h>
#include <kdp/cleanup.h>

#include "alloc.h"
#include "backend-ctx.h"
#include "kdp-test.h"
#include "kdp-test-sysfs.h"
#include "kdp-test-sriov.h"
#include "sriov.h"

/* ---- fixtures ---- */

/* A dev tree with every node the answers below may name (regular files stand for the nodes). */
static char *tree_new(void) {
        static const char *const nodes[] = {
                "dev/vfio/vfio", "dev/vfio/61", "dev/vfio/62", "dev/vfio/noiommu-107", "dev/uio3",
                "dev/vhost-net", "dev/net/tun", "dev/vhost-vdpa-0", "dev/infiniband/rdma_cm",
                "dev/infiniband/ucm2", "dev/infiniband/issm2", "dev/infiniband/umad2", "dev/infiniband/uverbs2",
                "dev/infiniband/issm3", "dev/infiniband/umad3", "dev/infiniband/uverbs3",
        };
        char *root = kdp_test_tree_new("sriov-answer");

        for (size_t i = 0; i < KDP_ELEMENTSOF(nodes); i++)
                kdp_test_tree_write(root, nodes[i], "");
        return root;
}

static sriov_pool pool_of(const char *prefix, const char *name, sriov_selector *selectors, size_t n_selectors) {
        sriov_pool p = { .selectors = selectors, .n_selectors = n_selectors };

        snprintf(p.resource_prefix, sizeof(p.resource_prefix), "%s", prefix);
        snprintf(p.resource_name, sizeof(p.resource_name), "%s", name);
        snprintf(p.resource, sizeof(p.resource), "%s/%s", prefix, name);
        return p;
}

/* A function bound to `driver` in IOMMU group `group` (-1: none), with no uio, RDMA or vDPA device. */
static sriov_func func_of(const char *address, const char *driver, int group) {
        sriov_func f = { .numa_node = -1, .vf_index = -1, .iommu_group = group, .uio_index = -1 };

        snprintf(f.address, sizeof(f.address), "%s", address);
        snprintf(f.driver, sizeof(f.driver), "%s", driver);
        return f;
}

/* An mlx5 VF with RDMA device mlx5_<k> and its nodes (ucm too when `ucm`), as discover.c lists them (§7). */
static sriov_func rdma_func_of(const char *address, int k, bool ucm) {
        sriov_func f = func_of(address, "mlx5_core", -1);

        snprintf(f.rdma_dev, sizeof(f.rdma_dev), "mlx5_%d", k);
        if (ucm)
                snprintf(f.rdma_nodes[f.n_rdma_nodes++], SRIOV_PATH_MAX, "/dev/infiniband/ucm%d", k);
        snprintf(f.rdma_nodes[f.n_rdma_nodes++], SRIOV_PATH_MAX, "/dev/infiniband/issm%d", k);
        snprintf(f.rdma_nodes[f.n_rdma_nodes++], SRIOV_PATH_MAX, "/dev/infiniband/umad%d", k);
        snprintf(f.rdma_nodes[f.n_rdma_nodes++], SRIOV_PATH_MAX, "/dev/infiniband/uverbs%d", k);
        snprintf(f.rdma_nodes[f.n_rdma_nodes++], SRIOV_PATH_MAX, "/dev/infiniband/rdma_cm");
        return f;
}

/* sriov_answer() into a fresh `r` (kdp_alloc_response_done() it), which must succeed. */
static void answer(kdp_alloc_response *r, const kdp_backend_ctx *ctx, const sriov_pool *pool,
                   const sriov_func *const *funcs, const size_t *selectors, size_t n) {
        kdp_alloc_response_init(r, NULL);
        ck_assert_int_eq(sriov_answer(ctx, pool, funcs, selectors, n, r), 0);
        ck_assert_uint_eq(r->n_mounts, 0);
        ck_assert_uint_eq(r->n_annotations, 0);
        ck_assert_uint_eq(r->n_cdi_devices, 0);
}

/* ---- vfio ---- */

/* §13's example, byte for byte, with our own values: a vfio VF of a needVhostNet selector. */
START_TEST(test_sriov_answer_vfio_with_vhost_net_is_sriovdps_shape) {
        _cleanup_(kdp_test_rm_rfp) char *root = tree_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response r = { 0 };
        sriov_selector sel = { .need_vhost_net = true };
        sriov_pool pool = pool_of("example.com", "e810_vfio", &sel, 1);
        sriov_func f = func_of("0000:5e:01.3", "vfio-pci", 61);

        answer(&r, ctx, &pool, (const sriov_func *const[]){ &f }, (const size_t[]){ 0 }, 1);
        kdp_test_sriov_expect_env(&r, "PCIDEVICE_EXAMPLE_COM_E810_VFIO", "0000:5e:01.3",
                   "{\"0000:5e:01.3\":{\"generic\":{\"deviceID\":\"0000:5e:01.3\"},"
                   "\"vfio\":{\"dev-mount\":\"/dev/vfio/61\",\"mount\":\"/dev/vfio/vfio\"},"
                   "\"vhost\":{\"net-mount\":\"/dev/vhost-net\",\"tun-mount\":\"/dev/net/tun\"}}}");
        KDP_TEST_SRIOV_EXPECT_NODES(&r, root,
                     { "vfio/vfio", "/dev/vfio/vfio" }, { "vfio/61", "/dev/vfio/61" },
                     { "vhost-net", "/dev/vhost-net" }, { "net/tun", "/dev/net/tun" });
}
END_TEST

/* Two VFs: /dev/vfio/vfio once; the BDFs in request order, the _INFO keys sorted. */
START_TEST(test_sriov_answer_two_vfio_vfs_share_the_container_node) {
        _cleanup_(kdp_test_rm_rfp) char *root = tree_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response r = { 0 };
        sriov_selector sel = { 0 };
        sriov_pool pool = pool_of("example.com", "e810_vfio", &sel, 1);
        sriov_func a = func_of("0000:5e:01.3", "vfio-pci", 61), b = func_of("0000:5e:01.4", "vfio-pci", 62);

        answer(&r, ctx, &pool, (const sriov_func *const[]){ &b, &a }, (const size_t[]){ 0, 0 }, 2);
        kdp_test_sriov_expect_env(&r, "PCIDEVICE_EXAMPLE_COM_E810_VFIO", "0000:5e:01.4,0000:5e:01.3",
                   "{\"0000:5e:01.3\":{\"generic\":{\"deviceID\":\"0000:5e:01.3\"},"
                   "\"vfio\":{\"dev-mount\":\"/dev/vfio/61\",\"mount\":\"/dev/vfio/vfio\"}},"
                   "\"0000:5e:01.4\":{\"generic\":{\"deviceID\":\"0000:5e:01.4\"},"
                   "\"vfio\":{\"dev-mount\":\"/dev/vfio/62\",\"mount\":\"/dev/vfio/vfio\"}}}");
        KDP_TEST_SRIOV_EXPECT_NODES(&r, root,
                     { "vfio/vfio", "/dev/vfio/vfio" }, { "vfio/62", "/dev/vfio/62" },
                     { "vfio/61", "/dev/vfio/61" });
}
END_TEST

/* No-IOMMU: the host node is noiommu-<N>, the container's and dev-mount <N>; no group: no group node. */
START_TEST(test_sriov_answer_noiommu_group_keeps_the_container_name) {
        _cleanup_(kdp_test_rm_rfp) char *root = tree_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response r = { 0 };
        sriov_pool pool = pool_of("example.com", "vfio", NULL, 0);
        sriov_func a = func_of("0000:5e:01.5", "vfio-pci", 107), b = func_of("0000:5e:01.6", "vfio-pci", -1);

        a.noiommu = true;
        answer(&r, ctx, &pool, (const sriov_func *const[]){ &a, &b }, NULL, 2);
        kdp_test_sriov_expect_env(&r, "PCIDEVICE_EXAMPLE_COM_VFIO", "0000:5e:01.5,0000:5e:01.6",
                   "{\"0000:5e:01.5\":{\"generic\":{\"deviceID\":\"0000:5e:01.5\"},"
                   "\"vfio\":{\"dev-mount\":\"/dev/vfio/107\",\"mount\":\"/dev/vfio/vfio\"}},"
                   "\"0000:5e:01.6\":{\"generic\":{\"deviceID\":\"0000:5e:01.6\"},"
                   "\"vfio\":{\"mount\":\"/dev/vfio/vfio\"}}}");
        KDP_TEST_SRIOV_EXPECT_NODES(&r, root, { "vfio/vfio", "/dev/vfio/vfio" },
                                    { "vfio/noiommu-107", "/dev/vfio/107" });
}
END_TEST

/* ---- uio ---- */

START_TEST(test_sriov_answer_uio_gives_its_node) {
        _cleanup_(kdp_test_rm_rfp) char *root = tree_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response r = { 0 };
        sriov_pool pool = pool_of("example.com", "dpdk", NULL, 0);
        sriov_func a = func_of("0000:5e:02.0", "igb_uio", 70), b = func_of("0000:5e:02.1", "uio", 71);

        a.uio_index = 3;                /* b has no uio node */
        answer(&r, ctx, &pool, (const sriov_func *const[]){ &a, &b }, NULL, 2);
        kdp_test_sriov_expect_env(&r, "PCIDEVICE_EXAMPLE_COM_DPDK", "0000:5e:02.0,0000:5e:02.1",
                   "{\"0000:5e:02.0\":{\"generic\":{\"deviceID\":\"0000:5e:02.0\"},\"uio\":{\"mount\":\"/dev/uio3\"}},"
                   "\"0000:5e:02.1\":{\"generic\":{\"deviceID\":\"0000:5e:02.1\"},\"uio\":{}}}");
        KDP_TEST_SRIOV_EXPECT_NODES(&r, root, { "uio3", "/dev/uio3" });
}
END_TEST

/* ---- RDMA ---- */

/* mlx5 VFs of an isRdma selector: §15's _INFO; ucm a node but no key; rdma_cm once. */
START_TEST(test_sriov_answer_rdma_vfs_give_their_char_devices) {
        _cleanup_(kdp_test_rm_rfp) char *root = tree_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response r = { 0 }, plain = { 0 };
        sriov_selector sels[] = { { .is_rdma = true }, { .is_rdma = false } };
        sriov_pool pool = pool_of("nvidia.com", "cx6_rdma", sels, 2);
        sriov_func a = rdma_func_of("0000:3b:00.2", 2, true), b = rdma_func_of("0000:3b:00.3", 3, false),
                   c = func_of("0000:3b:00.4", "mlx5_core", -1);
        kdp_test_capture cap;
        _cleanup_free_ char *log = NULL;
        const char *p;

        kdp_test_capture_begin(&cap);
        answer(&r, ctx, &pool, (const sriov_func *const[]){ &a, &b, &c }, (const size_t[]){ 0, 0, 0 }, 3);
        log = kdp_test_capture_end(&cap);
        kdp_test_sriov_expect_env(&r, "PCIDEVICE_NVIDIA_COM_CX6_RDMA", "0000:3b:00.2,0000:3b:00.3,0000:3b:00.4",
                   "{\"0000:3b:00.2\":{\"generic\":{\"deviceID\":\"0000:3b:00.2\"},"
                   "\"rdma\":{\"issm\":\"/dev/infiniband/issm2\",\"rdma_cm\":\"/dev/infiniband/rdma_cm\","
                   "\"rdma_dev\":\"mlx5_2\",\"umad\":\"/dev/infiniband/umad2\",\"uverbs\":\"/dev/infiniband/uverbs2\"}},"
                   "\"0000:3b:00.3\":{\"generic\":{\"deviceID\":\"0000:3b:00.3\"},"
                   "\"rdma\":{\"issm\":\"/dev/infiniband/issm3\",\"rdma_cm\":\"/dev/infiniband/rdma_cm\","
                   "\"rdma_dev\":\"mlx5_3\",\"umad\":\"/dev/infiniband/umad3\",\"uverbs\":\"/dev/infiniband/uverbs3\"}},"
                   "\"0000:3b:00.4\":{\"generic\":{\"deviceID\":\"0000:3b:00.4\"}}}");
        KDP_TEST_SRIOV_EXPECT_NODES(&r, root,
                     { "infiniband/ucm2", "/dev/infiniband/ucm2" }, { "infiniband/issm2", "/dev/infiniband/issm2" },
                     { "infiniband/umad2", "/dev/infiniband/umad2" },
                     { "infiniband/uverbs2", "/dev/infiniband/uverbs2" },
                     { "infiniband/rdma_cm", "/dev/infiniband/rdma_cm" },
                     { "infiniband/issm3", "/dev/infiniband/issm3" }, { "infiniband/umad3", "/dev/infiniband/umad3" },
                     { "infiniband/uverbs3", "/dev/infiniband/uverbs3" });
        p = log;
        kdp_test_expect_line(&p, 'W', "answer.c",
                             "\"Left out RDMA: the function has no RDMA device\" backend=\"test\" "
                             "pciAddress=\"0000:3b:00.4\"");
        ck_assert_str_eq(p, "");

        /* the same VF taken by a selector without isRdma: no RDMA at all */
        answer(&plain, ctx, &pool, (const sriov_func *const[]){ &a }, (const size_t[]){ 1 }, 1);
        kdp_test_sriov_expect_env(&plain, "PCIDEVICE_NVIDIA_COM_CX6_RDMA", "0000:3b:00.2",
                   "{\"0000:3b:00.2\":{\"generic\":{\"deviceID\":\"0000:3b:00.2\"}}}");
        ck_assert_uint_eq(plain.n_dev_nodes, 0);
}
END_TEST

/* ---- vhost-net ---- */

/* tun missing: neither node (the env still names both); vhost-net missing: no vhost at all. */
START_TEST(test_sriov_answer_vhost_net_needs_both_nodes) {
        _cleanup_(kdp_test_rm_rfp) char *root = tree_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response no_tun = { 0 }, no_vhost = { 0 };
        sriov_selector sel = { .need_vhost_net = true };
        sriov_pool pool = pool_of("example.com", "e810_kernel", &sel, 1);
        sriov_func f = func_of("0000:8a:01.0", "iavf", 101);
        kdp_test_capture cap;
        _cleanup_free_ char *log = NULL;
        const char *p;

        kdp_test_capture_begin(&cap);
        kdp_test_tree_remove(root, "dev/net/tun");
        answer(&no_tun, ctx, &pool, (const sriov_func *const[]){ &f }, (const size_t[]){ 0 }, 1);
        kdp_test_tree_remove(root, "dev/vhost-net");
        answer(&no_vhost, ctx, &pool, (const sriov_func *const[]){ &f }, (const size_t[]){ 0 }, 1);
        log = kdp_test_capture_end(&cap);

        kdp_test_sriov_expect_env(&no_tun, "PCIDEVICE_EXAMPLE_COM_E810_KERNEL", "0000:8a:01.0",
                   "{\"0000:8a:01.0\":{\"generic\":{\"deviceID\":\"0000:8a:01.0\"},"
                   "\"vhost\":{\"net-mount\":\"/dev/vhost-net\",\"tun-mount\":\"/dev/net/tun\"}}}");
        ck_assert_uint_eq(no_tun.n_dev_nodes, 0);
        kdp_test_sriov_expect_env(&no_vhost, "PCIDEVICE_EXAMPLE_COM_E810_KERNEL", "0000:8a:01.0",
                   "{\"0000:8a:01.0\":{\"generic\":{\"deviceID\":\"0000:8a:01.0\"}}}");
        ck_assert_uint_eq(no_vhost.n_dev_nodes, 0);

        p = log;
        kdp_test_expect_line(&p, 'W', "answer.c",
                             "\"Left out vhost-net and tun: tun is missing\" backend=\"test\" "
                             "pciAddress=\"0000:8a:01.0\" path=\"/dev/net/tun\"");
        kdp_test_expect_line(&p, 'W', "answer.c",
                             "\"Left out vhost-net: it is missing\" backend=\"test\" "
                             "pciAddress=\"0000:8a:01.0\" path=\"/dev/vhost-net\"");
        ck_assert_str_eq(p, "");
}
END_TEST

/* ---- vDPA ---- */

/* vdpaType vhost: the vhost-vdpa node; vdpaType virtio: an empty vdpa object and no node. */
START_TEST(test_sriov_answer_vdpa_vhost_gives_its_node) {
        _cleanup_(kdp_test_rm_rfp) char *root = tree_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response vhost = { 0 }, virtio = { 0 };
        sriov_selector sels[] = { { .vdpa_type = "vhost" }, { .vdpa_type = "virtio" } };
        sriov_pool pool = pool_of("example.com", "vdpa", sels, 2);
        sriov_func a = func_of("0000:65:00.2", "mlx5_core", -1), b = func_of("0000:65:00.3", "mlx5_core", -1);

        snprintf(a.vdpa_type, sizeof(a.vdpa_type), "vhost");
        snprintf(a.vdpa_path, sizeof(a.vdpa_path), "/dev/vhost-vdpa-0");
        snprintf(b.vdpa_type, sizeof(b.vdpa_type), "virtio");
        answer(&vhost, ctx, &pool, (const sriov_func *const[]){ &a }, (const size_t[]){ 0 }, 1);
        kdp_test_sriov_expect_env(&vhost, "PCIDEVICE_EXAMPLE_COM_VDPA", "0000:65:00.2",
                   "{\"0000:65:00.2\":{\"generic\":{\"deviceID\":\"0000:65:00.2\"},"
                   "\"vdpa\":{\"mount\":\"/dev/vhost-vdpa-0\"}}}");
        KDP_TEST_SRIOV_EXPECT_NODES(&vhost, root, { "vhost-vdpa-0", "/dev/vhost-vdpa-0" });

        answer(&virtio, ctx, &pool, (const sriov_func *const[]){ &b }, (const size_t[]){ 1 }, 1);
        kdp_test_sriov_expect_env(&virtio, "PCIDEVICE_EXAMPLE_COM_VDPA", "0000:65:00.3",
                   "{\"0000:65:00.3\":{\"generic\":{\"deviceID\":\"0000:65:00.3\"},\"vdpa\":{}}}");
        ck_assert_uint_eq(virtio.n_dev_nodes, 0);
}
END_TEST

/* ---- additionalInfo ---- */

/* "*" first, then the function's own entry over it (whatever their order in the config). */
START_TEST(test_sriov_answer_additional_info_own_entry_wins) {
        _cleanup_(kdp_test_rm_rfp) char *root = tree_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response r = { 0 }, other = { 0 };
        sriov_info_entry info[] = {
                { .key = "0000:8a:01.1", .keys = { (char *[]){ "b", "c" }, 2 }, .values = { (char *[]){ "3", "4" }, 2 } },
                { .key = "*", .keys = { (char *[]){ "a", "b" }, 2 }, .values = { (char *[]){ "1", "2" }, 2 } },
        };
        sriov_pool pool = pool_of("example.com", "e810_kernel", NULL, 0), only_one = pool;
        sriov_func a = func_of("0000:8a:01.1", "iavf", -1), b = func_of("0000:8a:01.2", "iavf", -1);

        pool.info = info;
        pool.n_info = 2;
        answer(&r, ctx, &pool, (const sriov_func *const[]){ &a, &b }, NULL, 2);
        kdp_test_sriov_expect_env(&r, "PCIDEVICE_EXAMPLE_COM_E810_KERNEL", "0000:8a:01.1,0000:8a:01.2",
                   "{\"0000:8a:01.1\":{\"extra\":{\"a\":\"1\",\"b\":\"3\",\"c\":\"4\"},"
                   "\"generic\":{\"deviceID\":\"0000:8a:01.1\"}},"
                   "\"0000:8a:01.2\":{\"extra\":{\"a\":\"1\",\"b\":\"2\"},"
                   "\"generic\":{\"deviceID\":\"0000:8a:01.2\"}}}");
        ck_assert_uint_eq(r.n_dev_nodes, 0);

        /* additionalInfo without "*" nor an entry of this function: an empty extra object */
        only_one.info = info;
        only_one.n_info = 1;
        answer(&other, ctx, &only_one, (const sriov_func *const[]){ &b }, NULL, 1);
        kdp_test_sriov_expect_env(&other, "PCIDEVICE_EXAMPLE_COM_E810_KERNEL", "0000:8a:01.2",
                   "{\"0000:8a:01.2\":{\"extra\":{},\"generic\":{\"deviceID\":\"0000:8a:01.2\"}}}");
}
END_TEST

/* "additionalInfo": {} is a map all the same: sriovdp's extra provider answers {}; without one, no extra. */
START_TEST(test_sriov_answer_empty_additional_info_gives_an_empty_extra) {
        _cleanup_(kdp_test_rm_rfp) char *root = tree_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response r = { 0 }, none = { 0 };
        sriov_pool empty = pool_of("example.com", "e810_kernel", NULL, 0), absent = empty;
        sriov_func a = func_of("0000:8a:01.1", "iavf", -1);

        empty.has_info = true;
        answer(&r, ctx, &empty, (const sriov_func *const[]){ &a }, NULL, 1);
        kdp_test_sriov_expect_env(&r, "PCIDEVICE_EXAMPLE_COM_E810_KERNEL", "0000:8a:01.1",
                   "{\"0000:8a:01.1\":{\"extra\":{},\"generic\":{\"deviceID\":\"0000:8a:01.1\"}}}");
        answer(&none, ctx, &absent, (const sriov_func *const[]){ &a }, NULL, 1);
        kdp_test_sriov_expect_env(&none, "PCIDEVICE_EXAMPLE_COM_E810_KERNEL", "0000:8a:01.1",
                   "{\"0000:8a:01.1\":{\"generic\":{\"deviceID\":\"0000:8a:01.1\"}}}");
}
END_TEST

/* Go's json.Marshal (>= 1.22): HTML-unsafe and control characters, U+2028/9, invalid UTF-8, byte order of keys. */
START_TEST(test_sriov_answer_escapes_json_as_go_does) {
        _cleanup_(kdp_test_rm_rfp) char *root = tree_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response r = { 0 };
        sriov_info_entry info = {
                .key = "*",
                .keys = { (char *[]){ "v", "B", "a", "<k>", "Z-1", "\xc3\xa4" }, 6 },
                .values = { (char *[]){
                        "q\"b\\s/<a>&\x01\x1f\x7f\n\r\t\b\f"
                        "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"          /* é € U+1F600: as is */
                        "\xe2\x80\xa8\xe2\x80\xa9"                      /* U+2028 U+2029 */
                        "|\xff|\xe2\x82|\xc0\xaf|\xed\xa0\x80|\xf4\x90\x80\x80"  /* invalid, truncated, overlong,
                                                                                     surrogate, > U+10FFFF */
                        "|\xef\xbf\xbd|\xe2\x82\xac\xe2",               /* a real U+FFFD; a cut sequence at the end */
                        "upper", "lower", "key", "", "non-ascii key" }, 6 },
        };
        sriov_pool pool = pool_of("example.com", "e810_kernel", NULL, 0);
        sriov_func f = func_of("0000:8a:01.6", "iavf", -1);

        pool.info = &info;
        pool.n_info = 1;
        answer(&r, ctx, &pool, (const sriov_func *const[]){ &f }, NULL, 1);
        /* what Go 1.22 prints for the same map */
        kdp_test_sriov_expect_env(&r, "PCIDEVICE_EXAMPLE_COM_E810_KERNEL", "0000:8a:01.6",
                   "{\"0000:8a:01.6\":{\"extra\":{"
                   "\"\\u003ck\\u003e\":\"key\",\"B\":\"upper\",\"Z-1\":\"\",\"a\":\"lower\","
                   "\"v\":\"q\\\"b\\\\s/\\u003ca\\u003e\\u0026\\u0001\\u001f\x7f\\n\\r\\t\\b\\f"
                   "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"
                   "\\u2028\\u2029"
                   "|\\ufffd|\\ufffd\\ufffd|\\ufffd\\ufffd|\\ufffd\\ufffd\\ufffd|\\ufffd\\ufffd\\ufffd\\ufffd"
                   "|\xef\xbf\xbd|\xe2\x82\xac\\ufffd\","
                   "\"\xc3\xa4\":\"non-ascii key\"},"
                   "\"generic\":{\"deviceID\":\"0000:8a:01.6\"}}}");
}
END_TEST

/* ---- the env key ---- */

START_TEST(test_sriov_answer_env_key_keeps_hyphens_and_replaces_dots) {
        _cleanup_(kdp_test_rm_rfp) char *root = tree_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response r = { 0 };
        _cleanup_free_ char *k1 = NULL, *k2 = NULL, *k3 = NULL;
        sriov_pool hyphen = pool_of("example.com", "e810-vfio", NULL, 0),
                   dots = pool_of("sriov.net.example.co.uk", "Mixed_case9", NULL, 0),
                   plain = pool_of("intel.com", "intel_sriov_netdevice", NULL, 0);
        sriov_func f = func_of("0000:8a:01.0", "iavf", -1);

        ck_assert_int_eq(sriov_answer_env_key(&hyphen, &k1), 0);
        ck_assert_str_eq(k1, "PCIDEVICE_EXAMPLE_COM_E810-VFIO");
        ck_assert_int_eq(sriov_answer_env_key(&dots, &k2), 0);
        ck_assert_str_eq(k2, "PCIDEVICE_SRIOV_NET_EXAMPLE_CO_UK_MIXED_CASE9");
        ck_assert_int_eq(sriov_answer_env_key(&plain, &k3), 0);
        ck_assert_str_eq(k3, "PCIDEVICE_INTEL_COM_INTEL_SRIOV_NETDEVICE");

        answer(&r, ctx, &hyphen, (const sriov_func *const[]){ &f }, NULL, 1);
        kdp_test_sriov_expect_env(&r, "PCIDEVICE_EXAMPLE_COM_E810-VFIO", "0000:8a:01.0",
                   "{\"0000:8a:01.0\":{\"generic\":{\"deviceID\":\"0000:8a:01.0\"}}}");
}
END_TEST

/* ---- request order ---- */

START_TEST(test_sriov_answer_keeps_request_order) {
        _cleanup_(kdp_test_rm_rfp) char *root = tree_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response r = { 0 };
        sriov_pool pool = pool_of("intel.com", "sriov", NULL, 0);
        sriov_func a = func_of("0000:8a:01.2", "iavf", -1), b = func_of("0000:03:02.1", "ixgbevf", -1),
                   c = func_of("0000:8a:01.0", "iavf", -1);

        answer(&r, ctx, &pool, (const sriov_func *const[]){ &a, &b, &c }, NULL, 3);
        kdp_test_sriov_expect_env(&r, "PCIDEVICE_INTEL_COM_SRIOV", "0000:8a:01.2,0000:03:02.1,0000:8a:01.0",
                   "{\"0000:03:02.1\":{\"generic\":{\"deviceID\":\"0000:03:02.1\"}},"
                   "\"0000:8a:01.0\":{\"generic\":{\"deviceID\":\"0000:8a:01.0\"}},"
                   "\"0000:8a:01.2\":{\"generic\":{\"deviceID\":\"0000:8a:01.2\"}}}");
        ck_assert_uint_eq(r.n_dev_nodes, 0);
}
END_TEST

/* ---- bad input ---- */

/* ---- device-info files ---- */

static void expect_devinfo(const kdp_backend_ctx *ctx, const sriov_selector *sel, const sriov_func *f,
                           const char *want) {
        _cleanup_free_ char *json = NULL;

        ck_assert_int_eq(sriov_answer_devinfo(ctx, sel, f, &json), 0);
        ck_assert_str_eq(json, want);
}

/* A VF: its address and its PF's, in json.Marshal's order; needVhostNet adds vhost-net. */
START_TEST(test_sriov_answer_devinfo_of_a_vf) {
        _cleanup_(kdp_test_rm_rfp) char *root = tree_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        sriov_selector plain = { 0 }, vhost = { .need_vhost_net = true };
        sriov_func f = func_of("0000:8a:01.2", "iavf", 102), pf = func_of("0000:8a:00.0", "ice", 90);

        snprintf(f.pf_address, sizeof(f.pf_address), "0000:8a:00.0");
        expect_devinfo(ctx, &plain, &f,
                       "{\"type\":\"pci\",\"version\":\"1.1.0\",\"pci\":{\"pci-address\":\"0000:8a:01.2\","
                       "\"pf-pci-address\":\"0000:8a:00.0\"}}");
        expect_devinfo(ctx, &vhost, &f,
                       "{\"type\":\"pci\",\"version\":\"1.1.0\",\"pci\":{\"pci-address\":\"0000:8a:01.2\","
                       "\"vhost-net\":\"/dev/vhost-net\",\"pf-pci-address\":\"0000:8a:00.0\"}}");
        /* a function that is no VF, no selector: the address alone */
        expect_devinfo(ctx, NULL, &pf, "{\"type\":\"pci\",\"version\":\"1.1.0\",\"pci\":{\"pci-address\":\"0000:8a:00.0\"}}");

        /* no /dev/vhost-net: no vhost-net (as the Allocate answer leaves it out) */
        kdp_test_tree_remove(root, "dev/vhost-net");
        expect_devinfo(ctx, &vhost, &f,
                       "{\"type\":\"pci\",\"version\":\"1.1.0\",\"pci\":{\"pci-address\":\"0000:8a:01.2\","
                       "\"pf-pci-address\":\"0000:8a:00.0\"}}");
}
END_TEST

/* An RDMA VF names its RDMA device when its selector has isRdma; sriovdp makes it an RDMA device
 * (and writes rdma-device) for such a selector only. */
START_TEST(test_sriov_answer_devinfo_names_the_rdma_device) {
        _cleanup_(kdp_test_rm_rfp) char *root = tree_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        sriov_selector rdma = { .is_rdma = true, .need_vhost_net = true }, plain = { 0 };
        sriov_func f = rdma_func_of("0000:3b:00.3", 3, false);

        snprintf(f.pf_address, sizeof(f.pf_address), "0000:3b:00.0");
        expect_devinfo(ctx, &rdma, &f,
                       "{\"type\":\"pci\",\"version\":\"1.1.0\",\"pci\":{\"pci-address\":\"0000:3b:00.3\","
                       "\"vhost-net\":\"/dev/vhost-net\",\"rdma-device\":\"mlx5_3\","
                       "\"pf-pci-address\":\"0000:3b:00.0\"}}");
        expect_devinfo(ctx, &plain, &f,
                       "{\"type\":\"pci\",\"version\":\"1.1.0\",\"pci\":{\"pci-address\":\"0000:3b:00.3\","
                       "\"pf-pci-address\":\"0000:3b:00.0\"}}");
        expect_devinfo(ctx, NULL, &f,
                       "{\"type\":\"pci\",\"version\":\"1.1.0\",\"pci\":{\"pci-address\":\"0000:3b:00.3\","
                       "\"pf-pci-address\":\"0000:3b:00.0\"}}");
}
END_TEST

/* A vdpaType selector and a vDPA device of that type: type "vdpa"; path for vhost only; another type: pci. */
START_TEST(test_sriov_answer_devinfo_of_a_vdpa_device) {
        _cleanup_(kdp_test_rm_rfp) char *root = tree_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        sriov_selector vhost = { .vdpa_type = "vhost" }, virtio = { .vdpa_type = "virtio" };
        sriov_func f = func_of("0000:3b:00.4", "mlx5_core", -1);

        snprintf(f.pf_address, sizeof(f.pf_address), "0000:3b:00.0");
        snprintf(f.vdpa_type, sizeof(f.vdpa_type), "vhost");
        snprintf(f.vdpa_dev, sizeof(f.vdpa_dev), "vdpa0");
        snprintf(f.vdpa_path, sizeof(f.vdpa_path), "/dev/vhost-vdpa-0");
        expect_devinfo(ctx, &vhost, &f,
                       "{\"type\":\"vdpa\",\"version\":\"1.1.0\",\"vdpa\":{\"parent-device\":\"vdpa0\","
                       "\"driver\":\"vhost\",\"path\":\"/dev/vhost-vdpa-0\",\"pci-address\":\"0000:3b:00.4\","
                       "\"pf-pci-address\":\"0000:3b:00.0\"}}");
        /* the selector wants virtio, the device is vhost: described as the PCI function */
        expect_devinfo(ctx, &virtio, &f,
                       "{\"type\":\"pci\",\"version\":\"1.1.0\",\"pci\":{\"pci-address\":\"0000:3b:00.4\","
                       "\"pf-pci-address\":\"0000:3b:00.0\"}}");

        snprintf(f.vdpa_type, sizeof(f.vdpa_type), "virtio");
        f.vdpa_path[0] = '\0';
        expect_devinfo(ctx, &virtio, &f,
                       "{\"type\":\"vdpa\",\"version\":\"1.1.0\",\"vdpa\":{\"parent-device\":\"vdpa0\","
                       "\"driver\":\"virtio\",\"pci-address\":\"0000:3b:00.4\",\"pf-pci-address\":\"0000:3b:00.0\"}}");
}
END_TEST

/* The file name: every '/' of the resource and the ID becomes '-'; bad input is refused. */
START_TEST(test_sriov_answer_devinfo_name_replaces_slashes) {
        _cleanup_(kdp_test_rm_rfp) char *root = tree_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_free_ char *a = NULL, *b = NULL, *json = NULL;
        sriov_func none = func_of("", "iavf", -1);

        ck_assert_int_eq(sriov_answer_devinfo_name("intel.com/e810_netdev", "0000:8a:01.0", &a), 0);
        ck_assert_str_eq(a, "intel.com-e810_netdev-0000:8a:01.0-device.json");
        ck_assert_int_eq(sriov_answer_devinfo_name("example.com/a/b", "x/y", &b), 0);
        ck_assert_str_eq(b, "example.com-a-b-x-y-device.json");
        ck_assert_int_eq(sriov_answer_devinfo_name("", "0000:8a:01.0", &json), -EINVAL);
        ck_assert_int_eq(sriov_answer_devinfo_name("intel.com/x", "", &json), -EINVAL);
        ck_assert_int_eq(sriov_answer_devinfo(ctx, NULL, &none, &json), -EINVAL);
        ck_assert_ptr_null(json);
}
END_TEST

START_TEST(test_sriov_answer_rejects_bad_input) {
        _cleanup_(kdp_test_rm_rfp) char *root = tree_new();
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = kdp_test_tree_ctx(root);
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response r = { 0 };
        _cleanup_free_ char *key = NULL;
        sriov_selector sel = { 0 };
        sriov_pool pool = pool_of("example.com", "e810", &sel, 1), nameless = pool_of("example.com", "", NULL, 0),
                   prefixless = pool_of("", "e810", NULL, 0);
        sriov_func f = func_of("0000:8a:01.0", "iavf", -1), unnamed = func_of("", "iavf", -1);
        const sriov_func *const funcs[] = { &f }, *const none[] = { NULL }, *const blank[] = { &unnamed };

        kdp_alloc_response_init(&r, NULL);
        ck_assert_int_eq(sriov_answer(NULL, &pool, funcs, NULL, 1, &r), -EINVAL);
        ck_assert_int_eq(sriov_answer(ctx, NULL, funcs, NULL, 1, &r), -EINVAL);
        ck_assert_int_eq(sriov_answer(ctx, &pool, NULL, NULL, 1, &r), -EINVAL);
        ck_assert_int_eq(sriov_answer(ctx, &pool, funcs, NULL, 0, &r), -EINVAL);
        ck_assert_int_eq(sriov_answer(ctx, &pool, funcs, NULL, 1, NULL), -EINVAL);
        ck_assert_int_eq(sriov_answer(ctx, &pool, none, NULL, 1, &r), -EINVAL);
        ck_assert_int_eq(sriov_answer(ctx, &pool, blank, NULL, 1, &r), -EINVAL);
        ck_assert_int_eq(sriov_answer(ctx, &pool, funcs, (const size_t[]){ 1 }, 1, &r), -EINVAL);
        ck_assert_int_eq(sriov_answer(ctx, &nameless, funcs, NULL, 1, &r), -EINVAL);
        ck_assert_int_eq(sriov_answer(ctx, &prefixless, funcs, NULL, 1, &r), -EINVAL);
        ck_assert_uint_eq(r.n_envs, 0);
        ck_assert_uint_eq(r.n_dev_nodes, 0);

        ck_assert_int_eq(sriov_answer_env_key(NULL, &key), -EINVAL);
        ck_assert_int_eq(sriov_answer_env_key(&pool, NULL), -EINVAL);
        ck_assert_int_eq(sriov_answer_env_key(&nameless, &key), -EINVAL);
        ck_assert_ptr_null(key);
}
END_TEST

static Suite *sriov_answer_suite(void) {
        Suite *s = suite_create("sriov-answer");
        TCase *tc = tcase_create("answer");

        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_sriov_answer_vfio_with_vhost_net_is_sriovdps_shape);
        tcase_add_test(tc, test_sriov_answer_two_vfio_vfs_share_the_container_node);
        tcase_add_test(tc, test_sriov_answer_noiommu_group_keeps_the_container_name);
        tcase_add_test(tc, test_sriov_answer_uio_gives_its_node);
        tcase_add_test(tc, test_sriov_answer_rdma_vfs_give_their_char_devices);
        tcase_add_test(tc, test_sriov_answer_vhost_net_needs_both_nodes);
        tcase_add_test(tc, test_sriov_answer_vdpa_vhost_gives_its_node);
        tcase_add_test(tc, test_sriov_answer_additional_info_own_entry_wins);
        tcase_add_test(tc, test_sriov_answer_empty_additional_info_gives_an_empty_extra);
        tcase_add_test(tc, test_sriov_answer_escapes_json_as_go_does);
        tcase_add_test(tc, test_sriov_answer_env_key_keeps_hyphens_and_replaces_dots);
        tcase_add_test(tc, test_sriov_answer_keeps_request_order);
        tcase_add_test(tc, test_sriov_answer_devinfo_of_a_vf);
        tcase_add_test(tc, test_sriov_answer_devinfo_names_the_rdma_device);
        tcase_add_test(tc, test_sriov_answer_devinfo_of_a_vdpa_device);
        tcase_add_test(tc, test_sriov_answer_devinfo_name_replaces_slashes);
        tcase_add_test(tc, test_sriov_answer_rejects_bad_input);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return kdp_test_run(sriov_answer_suite());
}
