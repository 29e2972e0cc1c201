/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NVLink in the GPU backend's preferred allocation (plugins/gpu/nvlink.c): the pick on the
 * topology of tests/fixtures/nodes/gpu-h100nvl (seven H100 NVL cards), and the links read from
 * the fake NVML (tests/nvml/fake-nvml.c):
 *
 *   NUMA 0  root port 15:01.0  switch  gpu0 18:00.0, gpu1 19:00.0, gpu2 1a:00.0
 *           root port 37:01.0  switch  gpu3 3a:00.0, gpu4 3b:00.0
 *   NUMA 1  root port 97:01.0  switch  gpu5 9a:00.0, gpu6 9b:00.0
 *
 * gpu1-gpu2 and gpu3-gpu4 are the pairs with NVLink bridges; the tests set how many links are
 * active. Without links the pick must be the framework's (framework/src/daemon/preferred.c).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdp/cleanup.h>

#include "gpu.h"
#include "nvml.h"
#include "preferred.h"

#include "kdp-test.h"

#define N_GPUS 7

static const gpu_nvlink_gpu node[N_GPUS] = {
        { "gpu0", 0, "pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/0000:18:00.0" },
        { "gpu1", 0, "pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:01.0/0000:19:00.0" },
        { "gpu2", 0, "pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:02.0/0000:1a:00.0" },
        { "gpu3", 0, "pci0000:37/0000:37:01.0/0000:38:00.0/0000:39:00.0/0000:3a:00.0" },
        { "gpu4", 0, "pci0000:37/0000:37:01.0/0000:38:00.0/0000:39:01.0/0000:3b:00.0" },
        { "gpu5", 1, "pci0000:97/0000:97:01.0/0000:98:00.0/0000:99:00.0/0000:9a:00.0" },
        { "gpu6", 1, "pci0000:97/0000:97:01.0/0000:98:00.0/0000:99:01.0/0000:9b:00.0" },
};

/* Active links of the two bridged pairs. */
typedef struct bridges {
        unsigned gpu1_gpu2, gpu3_gpu4;
} bridges;

static unsigned node_links(const bridges *b, size_t x, size_t y) {
        if ((x == 1 && y == 2) || (x == 2 && y == 1))
                return b->gpu1_gpu2;
        if ((x == 3 && y == 4) || (x == 4 && y == 3))
                return b->gpu3_gpu4;
        return 0;
}

/*
 * What the backend answers: M (deduplicated, in the given order) then the pick, as gpu.c builds
 * the candidates; node indices into *ret, their number returned; -1 when gpu_nvlink_pick has no
 * choice to make (the backend then leaves the answer to the framework).
 */
static int backend_pick(const bridges *b, const size_t *avail, size_t n_avail, const size_t *must, size_t n_must,
                        size_t size, size_t *ret) {
        gpu_nvlink_gpu cand[N_GPUS];
        size_t of[N_GPUS], picked[N_GPUS], n = 0, nm;
        unsigned links[N_GPUS * N_GPUS];
        bool in[N_GPUS] = { false };

        for (size_t i = 0; i < n_must && n < size; i++)
                if (!in[must[i]]) {
                        in[must[i]] = true;
                        of[n++] = must[i];
                }
        nm = n;
        for (size_t i = 0; i < n_avail; i++)
                if (!in[avail[i]]) {
                        in[avail[i]] = true;
                        of[n++] = avail[i];
                }
        if (nm >= size || size - nm >= n - nm)
                return -1;
        for (size_t i = 0; i < n; i++) {
                cand[i] = node[of[i]];
                for (size_t j = 0; j < n; j++)
                        links[i * n + j] = node_links(b, of[i], of[j]);
        }
        ck_assert_int_eq(gpu_nvlink_pick(cand, n, nm, links, size - nm, picked), 0);
        memcpy(ret, of, nm * sizeof(size_t));
        for (size_t i = 0; i < size - nm; i++)
                ret[nm + i] = of[picked[i]];
        return (int) size;
}

/* "gpu1,gpu2" of a pick. */
static char *pick_text(const bridges *b, const size_t *avail, size_t n_avail, const size_t *must, size_t n_must,
                       size_t size) {
        size_t got[N_GPUS];
        char *out = calloc(8 * N_GPUS + 1, 1);
        int n;

        ck_assert_ptr_nonnull(out);
        n = backend_pick(b, avail, n_avail, must, n_must, size, got);
        if (n < 0)
                return strcpy(out, "(framework)");
        for (int i = 0; i < n; i++)
                sprintf(out + strlen(out), "%s%s", i ? "," : "", node[got[i]].id);
        return out;
}

#define IDX(...) ((const size_t[]){ __VA_ARGS__ }), KDP_ELEMENTSOF(((const size_t[]){ __VA_ARGS__ }))
#define NONE NULL, 0
#define ALL IDX(0, 1, 2, 3, 4, 5, 6)
#define CHECK(b, avail, must, size, expected)                                          \
        do {                                                                            \
                _cleanup_free_ char *got_ = pick_text((b), avail, must, (size));        \
                ck_assert_str_eq(got_, (expected));                                     \
        } while (0)

static const bridges full = { .gpu1_gpu2 = 12, .gpu3_gpu4 = 12 };       /* 3 bridges of 4 links each */
static const bridges degraded = { .gpu1_gpu2 = 12, .gpu3_gpu4 = 8 };     /* one bridge of 3-4 down */
static const bridges no_links = { 0 };

/* ---- the rule: NVLink, then the PCIe switch, then the NUMA node ---- */

START_TEST(test_gpu_nvlink_pair_comes_before_switch_siblings) {
        /* gpu0-gpu1 are switch siblings with the lowest IDs; gpu1-gpu2 share the switch and NVLink */
        CHECK(&degraded, ALL, NONE, 2, "gpu1,gpu2");
        CHECK(&degraded, ALL, IDX(1), 2, "gpu1,gpu2");
        CHECK(&degraded, ALL, IDX(2), 2, "gpu2,gpu1");
        CHECK(&degraded, ALL, IDX(4), 2, "gpu4,gpu3");
        /* gpu1 taken: its NVLink partner goes with a switch sibling, not across switches */
        CHECK(&degraded, IDX(0, 2, 3, 4, 5, 6), IDX(2), 2, "gpu2,gpu0");
        /* no NVLink partner: a switch sibling (either breaks the pair: the lowest)... */
        CHECK(&degraded, ALL, IDX(0), 2, "gpu0,gpu1");
        /* ...or, on the other NUMA node, the switch sibling */
        CHECK(&degraded, ALL, IDX(5), 2, "gpu5,gpu6");
        /* gpu3's switch sibling gone: a GPU of its NUMA node before one of the other */
        CHECK(&degraded, IDX(0, 1, 2, 3, 5, 6), IDX(3), 2, "gpu3,gpu0");
}
END_TEST

START_TEST(test_gpu_nvlink_more_links_rank_higher) {
        bridges b = { .gpu1_gpu2 = 4, .gpu3_gpu4 = 8 };

        CHECK(&degraded, ALL, NONE, 2, "gpu1,gpu2");    /* 12 links against 8 */
        CHECK(&b, ALL, NONE, 2, "gpu3,gpu4");           /* 4 against 8 */
        b = (bridges){ .gpu1_gpu2 = 1, .gpu3_gpu4 = 0 };
        CHECK(&b, ALL, NONE, 2, "gpu1,gpu2");           /* one link is still NVLink */
        /* equal links: the pair whose taking leaves the closest GPUs free (gpu0-gpu2's switch whole) */
        CHECK(&full, ALL, NONE, 2, "gpu3,gpu4");
        /* a third GPU beside gpu3: the pair with more links, even behind another switch */
        CHECK(&degraded, ALL, IDX(3), 3, "gpu3,gpu1,gpu2");
        b = (bridges){ .gpu1_gpu2 = 4, .gpu3_gpu4 = 8 };
        CHECK(&b, ALL, IDX(3), 3, "gpu3,gpu0,gpu4");    /* its own pair, and a GPU that breaks no pair */
}
END_TEST

START_TEST(test_gpu_nvlink_sizes) {
        /* one GPU: one in no NVLink pair, whose taking leaves the closest GPUs free */
        CHECK(&degraded, ALL, NONE, 1, "gpu5");
        CHECK(&degraded, IDX(1, 2, 3, 4), NONE, 1, "gpu3");     /* the pair with fewer links breaks */
        /* three: a whole switch, its NVLink pair in it */
        CHECK(&degraded, ALL, NONE, 3, "gpu0,gpu1,gpu2");
        /* four: both NVLink pairs (one NUMA node either way, the pairs decide) */
        CHECK(&degraded, ALL, NONE, 4, "gpu1,gpu2,gpu3,gpu4");
        /* five: NUMA node 0, all of it */
        CHECK(&degraded, ALL, NONE, 5, "gpu0,gpu1,gpu2,gpu3,gpu4");
        /* six: across NUMA nodes; both pairs, then the GPUs closest to them */
        CHECK(&degraded, ALL, NONE, 6, "gpu0,gpu1,gpu2,gpu3,gpu4,gpu5");
        /* no choice left: the framework answers (every GPU, or M) */
        CHECK(&degraded, ALL, NONE, 7, "(framework)");
        CHECK(&degraded, ALL, IDX(1, 5), 2, "(framework)");
        CHECK(&degraded, IDX(1, 2), NONE, 3, "(framework)");
}
END_TEST

START_TEST(test_gpu_nvlink_must_include) {
        /* M first, in the order given, then the pick by ascending ID */
        CHECK(&degraded, ALL, IDX(4, 3), 3, "gpu4,gpu3,gpu0");
        CHECK(&degraded, ALL, IDX(5, 1), 3, "gpu5,gpu1,gpu2");
        CHECK(&degraded, ALL, IDX(5, 1), 4, "gpu5,gpu1,gpu0,gpu2");    /* gpu0: close to two of them */
        /* duplicates count once */
        CHECK(&degraded, ALL, IDX(3, 3), 2, "gpu3,gpu4");
        /* M beyond the size is cut to its first `size` */
        CHECK(&degraded, ALL, IDX(6, 0, 1), 2, "(framework)");
}
END_TEST

/* Without links, every request on every available subset gets the framework's answer. */
START_TEST(test_gpu_nvlink_without_links_is_the_framework) {
        _cleanup_(kdp_preferred_index_freep) kdp_preferred_index *idx = NULL;
        kdp_device devs[N_GPUS] = { 0 };
        size_t checked = 0;

        for (size_t i = 0; i < N_GPUS; i++) {
                devs[i].id = (char *) node[i].id;
                devs[i].pci_path = (char *) node[i].pci_path;
                devs[i].numa_nodes[0] = node[i].numa_node;
                devs[i].n_numa_nodes = 1;
        }
        ck_assert_int_eq(kdp_preferred_index_new(devs, N_GPUS, &idx), 0);
        for (unsigned mask = 1; mask < 1u << N_GPUS; mask++) {
                size_t avail[N_GPUS], n_avail = 0;

                for (size_t i = 0; i < N_GPUS; i++)
                        if (mask & 1u << i)
                                avail[n_avail++] = i;
                for (size_t must = 0; must <= n_avail; must++)         /* n_avail: none */
                        for (size_t size = 1; size <= n_avail; size++) {
                                size_t want[N_GPUS], got[N_GPUS], n_must = must < n_avail;
                                size_t n = kdp_preferred_pick(idx, avail, n_avail, &avail[must % n_avail], n_must,
                                                              size, want);

                                if (backend_pick(&no_links, avail, n_avail, &avail[must % n_avail], n_must, size,
                                                 got) < 0)
                                        continue;
                                ck_assert_uint_eq(n, size);
                                ck_assert_msg(memcmp(want, got, n * sizeof(size_t)) == 0,
                                              "mask %#x must %zu size %zu: %zu %zu %zu against %zu %zu %zu", mask,
                                              must, size, want[0], n > 1 ? want[1] : 99, n > 2 ? want[2] : 99,
                                              got[0], n > 1 ? got[1] : 99, n > 2 ? got[2] : 99);
                                checked++;
                        }
        }
        ck_assert_uint_gt(checked, 1000);
}
END_TEST

START_TEST(test_gpu_nvlink_refuses_what_it_cannot_weigh) {
        static gpu_nvlink_gpu many[40];
        static unsigned links[40 * 40];
        size_t picked[40];

        for (size_t i = 0; i < 40; i++)
                many[i] = (gpu_nvlink_gpu){ .id = "x", .numa_node = -1 };
        ck_assert_int_eq(gpu_nvlink_pick(many, 40, 0, links, 20, picked), -E2BIG);
        ck_assert_int_eq(gpu_nvlink_pick(many, 40, 0, links, 0, picked), -EINVAL);
        ck_assert_int_eq(gpu_nvlink_pick(many, 40, 30, links, 10, picked), -EINVAL);
        /* 16 GPUs, 8 of them: too many; 15 GPUs, 7 of them: weighed */
        ck_assert_int_eq(gpu_nvlink_pick(many, 16, 0, links, 8, picked), -E2BIG);
        ck_assert_int_eq(gpu_nvlink_pick(many, 15, 0, links, 7, picked), 0);
        for (size_t i = 0; i < 7; i++)
                ck_assert_uint_eq(picked[i], i);
}
END_TEST

/* ---- reading the links from NVML ---- */

START_TEST(test_gpu_nvlink_reads_active_links_only) {
        static const char fixture[] =
                "gpu 0000:19:00.0 GPU-11111111-1111-1111-1111-111111111111 device=0x2321\n"
                "gpu 0000:1a:00.0 GPU-22222222-2222-2222-2222-222222222222 device=0x2321\n"
                "gpu 0000:18:00.0 GPU-33333333-3333-3333-3333-333333333333 device=0x2321\n"
                "nvlink 0000:19:00.0 0 up 0000:1a:00.0\n"
                "nvlink 0000:19:00.0 1 down 0000:1a:00.0\n"
                "nvlink 0000:19:00.0 2 up 0000:1a:00.0\n"
                "nvlink 0000:19:00.0 5 up 0000:1A:00.0\n"
                "fail nvmlDeviceGetNvLinkState GPU_IS_LOST 0000:1a:00.0\n";
        _cleanup_free_ char *path = kdp_test_write_temp("nvml", ".fixture", fixture, strlen(fixture));
        _cleanup_(gpu_nvml_freep) gpu_nvml *n = NULL;
        char remote[GPU_NVLINKS_MAX][KDP_PCI_ADDRESS_MAX];
        size_t k = 99;

        ck_assert_int_eq(setenv("KDP_FAKE_NVML", path, 1), 0);
        ck_assert_int_eq(gpu_nvml_open(KDP_FAKE_NVML_LIB, &n, NULL), 0);
        ck_assert_int_eq(gpu_nvlink_read(n, "0000:19:00.0", remote, GPU_NVLINKS_MAX, &k), 0);
        ck_assert_uint_eq(k, 3);                /* links 0, 2 and 5; link 1 is down */
        ck_assert_str_eq(remote[0], "0000:1a:00.0");
        ck_assert_str_eq(remote[1], "0000:1a:00.0");
        ck_assert_str_eq(remote[2], "0000:1a:00.0");    /* NVML's upper-case hex, as kdp writes addresses */
        ck_assert_int_eq(gpu_nvlink_read(n, "0000:19:00.0", remote, 2, &k), 0);
        ck_assert_uint_eq(k, 2);                /* at most `max` */
        /* a GPU without links, one whose link state fails, one NVML does not know */
        ck_assert_int_eq(gpu_nvlink_read(n, "0000:18:00.0", remote, GPU_NVLINKS_MAX, &k), 0);
        ck_assert_uint_eq(k, 0);
        ck_assert_int_eq(gpu_nvlink_read(n, "0000:1a:00.0", remote, GPU_NVLINKS_MAX, &k), 0);
        ck_assert_uint_eq(k, 0);
        ck_assert_int_eq(gpu_nvlink_read(n, "0000:99:00.0", remote, GPU_NVLINKS_MAX, &k), -ENOENT);
        (void) unlink(path);
}
END_TEST

static Suite *gpu_nvlink_suite(void) {
        Suite *s = suite_create("gpu-nvlink");
        TCase *pick = tcase_create("pick"), *read = tcase_create("read");

        tcase_add_test(pick, test_gpu_nvlink_pair_comes_before_switch_siblings);
        tcase_add_test(pick, test_gpu_nvlink_more_links_rank_higher);
        tcase_add_test(pick, test_gpu_nvlink_sizes);
        tcase_add_test(pick, test_gpu_nvlink_must_include);
        tcase_add_test(pick, test_gpu_nvlink_without_links_is_the_framework);
        tcase_add_test(pick, test_gpu_nvlink_refuses_what_it_cannot_weigh);
        tcase_set_timeout(pick, 120);
        tcase_add_test(read, test_gpu_nvlink_reads_active_links_only);
        tcase_set_timeout(read, 60);
        suite_add_tcase(s, pick);
        suite_add_tcase(s, read);
        return s;
}

int main(void) {
        return kdp_test_run(gpu_nvlink_suite());
}
