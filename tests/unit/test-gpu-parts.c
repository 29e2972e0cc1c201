/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The GPU backend's parsers and replica policy (plugins/gpu/nvidia.c, amd.c,
 * share.c), on the exact texts docs/hardware-gpu.md §3.1 and §4.2 describe.
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "alloc.h"
#include "gpu.h"
#include "kdp-test.h"

/* §3.1: "Key: \t value" with the driver's own tabs; "GPU Excluded:\t No" has no space before the tab. */
static const char h100_information[] =
        "Model: \t\t NVIDIA H100 80GB HBM3\n"
        "IRQ:   \t\t 523\n"
        "GPU UUID: \t GPU-5f1b3a7e-0c2d-4e8f-9a61-3b7c2d9e0f14\n"
        "Video BIOS: \t 96.00.99.00.01\n"
        "Bus Type: \t PCIe\n"
        "DMA Size: \t 52 bits\n"
        "DMA Mask: \t 0xfffffffffffff\n"
        "Bus Location: \t 0000:3a:00.0\n"
        "Device Minor: \t 2\n"
        "GPU Firmware: \t 595.45.04\n"
        "GPU Excluded:\t No\n";

START_TEST(nvidia_information_fields) {
        nvidia_info info;

        ck_assert_int_eq(nvidia_parse_information(h100_information, "0000:3a:00.0", &info, NULL), 0);
        ck_assert_str_eq(info.uuid, "GPU-5f1b3a7e-0c2d-4e8f-9a61-3b7c2d9e0f14");
        ck_assert_uint_eq(info.minor, 2);
        ck_assert(!info.excluded);
}
END_TEST

START_TEST(nvidia_information_odd) {
        nvidia_info info;
        const char *why = NULL;

        /* the UUID line is missing while the driver has not cached it */
        ck_assert_int_eq(nvidia_parse_information("Bus Location: \t 0000:18:00.0\nDevice Minor: \t 0\n",
                                                  "0000:18:00.0", &info, &why), 0);
        ck_assert_str_eq(info.uuid, "");
        ck_assert_uint_eq(info.minor, 0);
        ck_assert_ptr_null(why);
        ck_assert_int_eq(nvidia_parse_information("Bus Location: \t 0000:18:00.0\nDevice Minor: \t 0\n"
                                                  "GPU Excluded:\t Yes\n", "0000:18:00.0", &info, &why), 0);
        ck_assert(info.excluded);
        ck_assert_ptr_null(why);
        /* another GPU's file, a missing minor, a minor beyond NVIDIA's 247, garbage: each says what is wrong */
        ck_assert_int_eq(nvidia_parse_information(h100_information, "0000:18:00.0", &info, &why), -EBADMSG);
        ck_assert_str_eq(why, "its Bus Location names another PCI address");
        ck_assert_int_eq(nvidia_parse_information("Bus Location: \t 0000:18:00.0\n", "0000:18:00.0", &info, &why),
                         -EBADMSG);
        ck_assert_str_eq(why, "no Device Minor line");
        ck_assert_int_eq(nvidia_parse_information("Bus Location: \t 0000:18:00.0\nDevice Minor: \t 248\n",
                                                  "0000:18:00.0", &info, &why), -EBADMSG);
        ck_assert_str_eq(why, "its Device Minor is not a number from 0 to 247");
        ck_assert_int_eq(nvidia_parse_information("Bus Location: \t 0000:18:00.0\nDevice Minor: \t x\n",
                                                  "0000:18:00.0", &info, NULL), -EBADMSG);
        ck_assert_int_eq(nvidia_parse_information("", "0000:18:00.0", &info, &why), -EBADMSG);
        ck_assert_str_eq(why, "no Bus Location line");
        ck_assert_int_eq(nvidia_parse_information("Bus Location: \t 0000:18:00.0\nDevice Minor: \t 1\n"
                                                  "GPU UUID: \t GPU-0123456789012345678901234567890123456789xxxx\n",
                                                  "0000:18:00.0", &info, &why), -EBADMSG);
        ck_assert_str_eq(why, "its GPU UUID is longer than 47 characters");
}
END_TEST

/* §4.2: an MI300X GPU node (decimal values; location_id = bus << 8). */
static const char mi300x_node[] =
        "cpu_cores_count 0\n"
        "simd_count 1216\n"
        "mem_banks_count 1\n"
        "gfx_target_version 90402\n"
        "vendor_id 4098\n"
        "device_id 29857\n"
        "location_id 34048\n"
        "domain 0\n"
        "drm_render_minor 144\n"
        "hive_id 15188982192727901047\n"
        "num_xcc 8\n";

START_TEST(amd_kfd_properties) {
        amd_kfd_node node = { .partition = 9, .render_minor = 0 };

        ck_assert_int_eq(amd_kfd_parse_properties(mi300x_node, &node), 1);
        ck_assert_str_eq(node.bdf, "0000:85:00.0");
        ck_assert_uint_eq(node.render_minor, 144);
        ck_assert_uint_eq(node.partition, 0);
        /* a CPX partition: the low bits of location_id are the partition, not the function */
        ck_assert_int_eq(amd_kfd_parse_properties("simd_count 152\nlocation_id 1287\ndomain 0\n"
                                                  "drm_render_minor 135\n", &node), 1);
        ck_assert_str_eq(node.bdf, "0000:05:00.0");
        ck_assert_uint_eq(node.render_minor, 135);
        ck_assert_uint_eq(node.partition, 7);
        /* device 3 of bus 0x27 (location_id bits 3-7), partition 2, domain 1 */
        ck_assert_int_eq(amd_kfd_parse_properties("simd_count 304\nlocation_id 10010\ndomain 1\n"
                                                  "drm_render_minor 138\n", &node), 1);
        ck_assert_str_eq(node.bdf, "0001:27:03.0");
        ck_assert_uint_eq(node.partition, 2);
        /* no domain line (an older kernel): domain 0 */
        ck_assert_int_eq(amd_kfd_parse_properties("cpu_cores_count 0\nsimd_count 256\nmem_banks_count 1\n"
                                                  "location_id 768\ndrm_render_minor 128\nmax_engine_clk_fcompute 1500\n",
                                                  &node), 1);
        ck_assert_str_eq(node.bdf, "0000:03:00.0");
        ck_assert_uint_eq(node.render_minor, 128);
        ck_assert_uint_eq(node.partition, 0);
        ck_assert_int_eq(amd_kfd_parse_properties("simd_count 256\nlocation_id 768\ndomain x\ndrm_render_minor 128\n",
                                                  &node), -EBADMSG);
        /* a CPU node, a GPU node without its address, a bad number */
        ck_assert_int_eq(amd_kfd_parse_properties("cpu_cores_count 96\nsimd_count 0\nlocation_id 0\n", &node), 0);
        ck_assert_int_eq(amd_kfd_parse_properties("simd_count 152\ndomain 0\ndrm_render_minor 128\n", &node),
                         -ENOENT);
        ck_assert_int_eq(amd_kfd_parse_properties("simd_count 152\nlocation_id 768\ndomain 0\n", &node), -ENOENT);
        ck_assert_int_eq(amd_kfd_parse_properties("simd_count 1x\n", &node), -EBADMSG);
}
END_TEST

/* The partitions of one GPU by index, whatever the node order; another GPU's nodes left out. */
START_TEST(amd_kfd_partition_list) {
        amd_kfd_node nodes[] = {
                { "0000:05:00.0", 2, 130 }, { "0000:27:00.0", 0, 136 }, { "0000:05:00.0", 0, 128 },
                { "0000:05:00.0", 1, 129 }, { "0000:05:00.0", 1, 199 },
        };
        amd_kfd kfd = { .nodes = nodes, .n = 5, .present = true };
        const amd_kfd_node *got[8];

        ck_assert_uint_eq(amd_kfd_partitions(&kfd, "0000:05:00.0", got, 8), 3);
        ck_assert_uint_eq(got[0]->render_minor, 128);
        ck_assert_uint_eq(got[1]->render_minor, 129);   /* the first node of a partition */
        ck_assert_uint_eq(got[2]->render_minor, 130);
        ck_assert_uint_eq(amd_kfd_partitions(&kfd, "0000:05:00.0", got, 2), 2);
        ck_assert_uint_eq(amd_kfd_partitions(&kfd, "0000:27:00.0", got, 8), 1);
        ck_assert_uint_eq(amd_kfd_partitions(&kfd, "0000:85:00.0", got, 8), 0);
        ck_assert(amd_kfd_has(&kfd, "0000:27:00.0"));
        ck_assert(!amd_kfd_has(&kfd, "0000:85:00.0"));
}
END_TEST

/* current_compute_partition + current_memory_partition -> the mixed resource's name. */
START_TEST(amd_partition_modes) {
        char mode[16];

        ck_assert_int_eq(amd_partition_mode("CPX", "NPS4", mode, sizeof(mode)), 0);
        ck_assert_str_eq(mode, "cpx_nps4");
        ck_assert_int_eq(amd_partition_mode("SPX", "NPS1", mode, sizeof(mode)), 0);
        ck_assert_str_eq(mode, "spx_nps1");
        ck_assert_int_eq(amd_partition_mode("dpx", "nps2", mode, sizeof(mode)), 0);
        ck_assert_str_eq(mode, "dpx_nps2");
        ck_assert_int_eq(amd_partition_mode("TPX", "NPS1", mode, sizeof(mode)), 0);
        ck_assert_str_eq(mode, "tpx_nps1");
        ck_assert_int_eq(amd_partition_mode("QPX", "NPS4", mode, 8), -ENAMETOOLONG);
        ck_assert_int_eq(amd_partition_mode("XPX", "NPS1", mode, sizeof(mode)), -EBADMSG);
        ck_assert_int_eq(amd_partition_mode("CPX", "NPS", mode, sizeof(mode)), -EBADMSG);
        ck_assert_int_eq(amd_partition_mode("CPX", "NPS4x", mode, sizeof(mode)), -EBADMSG);
        ck_assert_int_eq(amd_partition_mode("CPX", "", mode, sizeof(mode)), -EBADMSG);
        ck_assert_int_eq(amd_partition_mode("", "NPS1", mode, sizeof(mode)), -EBADMSG);
}
END_TEST

START_TEST(replica_base) {
        ck_assert_uint_eq(gpu_replica_base_len("GPU-abc::3"), strlen("GPU-abc"));
        ck_assert_uint_eq(gpu_replica_base_len("0000:18:00.0::12"), strlen("0000:18:00.0"));
        ck_assert_uint_eq(gpu_replica_base_len("0000:18:00.0"), strlen("0000:18:00.0"));
}
END_TEST

/* Runs the policy and returns the chosen IDs joined by spaces. */
static char *choose(gpu_replica_policy policy, const char *const *available, size_t n, const char *const *must,
                    size_t n_must, size_t size, int *ret) {
        kdp_pref_request req = { .resource = "nvidia.com/gpu", .available = available, .n_available = n,
                                 .must_include = must, .n_must_include = n_must, .size = size };
        kdp_pref_response resp;
        char *out = calloc(1, 1024);

        kdp_pref_response_init(&resp, &req);
        *ret = gpu_replicas_preferred(policy, &req, &resp);
        for (size_t i = 0; i < resp.n_ids; i++) {
                if (i)
                        strcat(out, " ");
                strcat(out, resp.ids[i]);
        }
        kdp_pref_response_done(&resp);
        return out;
}

/* Three GPUs with two replicas each; A::0 is already in use elsewhere, so A has one free. */
static const char *const shared[] = { "A::1", "B::0", "B::1", "C::0", "C::1" };

START_TEST(replicas_spread) {
        _cleanup_free_ char *two = NULL, *three = NULL, *four = NULL, *must = NULL;
        const char *const m[] = { "C::1" };
        int r;

        two = choose(GPU_REPLICAS_SPREAD, shared, 5, NULL, 0, 2, &r);
        ck_assert_int_eq(r, 0);
        ck_assert_str_eq(two, "B::0 C::0");            /* distinct GPUs, the least used first */
        three = choose(GPU_REPLICAS_SPREAD, shared, 5, NULL, 0, 3, &r);
        ck_assert_str_eq(three, "B::0 C::0 A::1");     /* a third distinct GPU before a second replica */
        four = choose(GPU_REPLICAS_SPREAD, shared, 5, NULL, 0, 4, &r);
        ck_assert_str_eq(four, "B::0 C::0 A::1 B::1");
        must = choose(GPU_REPLICAS_SPREAD, shared, 5, m, 1, 2, &r);
        ck_assert_str_eq(must, "C::1 B::0");
}
END_TEST

START_TEST(replicas_pack) {
        _cleanup_free_ char *one = NULL, *three = NULL;
        int r;

        one = choose(GPU_REPLICAS_PACK, shared, 5, NULL, 0, 1, &r);
        ck_assert_int_eq(r, 0);
        ck_assert_str_eq(one, "A::1");                 /* the GPU already shared fills up first */
        three = choose(GPU_REPLICAS_PACK, shared, 5, NULL, 0, 3, &r);
        ck_assert_str_eq(three, "A::1 B::0 B::1");
}
END_TEST

START_TEST(replicas_impossible) {
        _cleanup_free_ char *big = NULL, *unknown = NULL;
        const char *const m[] = { "Z::0" };
        int r;

        big = choose(GPU_REPLICAS_SPREAD, shared, 5, NULL, 0, 6, &r);
        ck_assert_int_eq(r, -EINVAL);
        unknown = choose(GPU_REPLICAS_SPREAD, shared, 5, m, 1, 1, &r);
        ck_assert_int_eq(r, -EINVAL);
}
END_TEST

static Suite *gpu_parts_suite(void) {
        Suite *s = suite_create("gpu-parts");
        TCase *tc = tcase_create("core");

        tcase_add_test(tc, nvidia_information_fields);
        tcase_add_test(tc, nvidia_information_odd);
        tcase_add_test(tc, amd_kfd_properties);
        tcase_add_test(tc, amd_kfd_partition_list);
        tcase_add_test(tc, amd_partition_modes);
        tcase_add_test(tc, replica_base);
        tcase_add_test(tc, replicas_spread);
        tcase_add_test(tc, replicas_pack);
        tcase_add_test(tc, replicas_impossible);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return kdp_test_run(gpu_parts_suite());
}
