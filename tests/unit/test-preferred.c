/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * unit/preferred: the default GetPreferredAllocation (framework/src/daemon/preferred.c).
 *
 * The main fixture is an 8-GPU box: two NUMA nodes, one host bridge each, two
 * root ports per host bridge, each with a PCIe switch (upstream port, two
 * downstream ports) and one GPU per downstream port:
 *
 *   NUMA 0  pci0000:00  root port 00:01.0  switch A  gpu 0, gpu 1
 *                       root port 00:02.0  switch B  gpu 2, gpu 3
 *   NUMA 1  pci0000:80  root port 80:01.0  switch C  gpu 4, gpu 5
 *                       root port 80:02.0  switch D  gpu 6, gpu 7
 */
#include <check.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preferred.h"

#include "kdp-test.h"

typedef struct test_device {
        const char *id;
        int numa;               /* -1: no NUMA affinity */
        const char *pci_path;   /* NULL: none */
} test_device;

static const test_device gpus[] = {
        { "gpu0", 0, "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0" },
        { "gpu1", 0, "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:04:00.0" },
        { "gpu2", 0, "pci0000:00/0000:00:02.0/0000:05:00.0/0000:06:00.0/0000:07:00.0" },
        { "gpu3", 0, "pci0000:00/0000:00:02.0/0000:05:00.0/0000:06:01.0/0000:08:00.0" },
        { "gpu4", 1, "pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:00.0/0000:83:00.0" },
        { "gpu5", 1, "pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:01.0/0000:84:00.0" },
        { "gpu6", 1, "pci0000:80/0000:80:02.0/0000:85:00.0/0000:86:00.0/0000:87:00.0" },
        { "gpu7", 1, "pci0000:80/0000:80:02.0/0000:85:00.0/0000:86:01.0/0000:88:00.0" },
};

/* Builds kdp_device records (only what the index reads) and their index. */
static kdp_preferred_index *index_from(const test_device *t, size_t n) {
        _cleanup_free_ kdp_device *devs = calloc(n ? n : 1, sizeof(kdp_device));
        kdp_preferred_index *idx = NULL;

        ck_assert_ptr_nonnull(devs);
        for (size_t i = 0; i < n; i++) {
                devs[i].id = (char *) t[i].id;
                devs[i].pci_path = (char *) t[i].pci_path;
                if (t[i].numa >= 0) {
                        devs[i].numa_nodes[0] = t[i].numa;
                        devs[i].n_numa_nodes = 1;
                }
        }
        ck_assert_int_eq(kdp_preferred_index_new(devs, n, &idx), 0);
        ck_assert_ptr_nonnull(idx);
        return idx;
}

static void format_indices(const size_t *v, size_t n, char *buf, size_t buf_size) {
        size_t off = 0;

        buf[0] = '\0';
        for (size_t i = 0; i < n && off < buf_size; i++)
                off += (size_t) snprintf(buf + off, buf_size - off, "%s%zu", i ? "," : "", v[i]);
}

static void check_pick(const kdp_preferred_index *idx,
                       const size_t *avail, size_t n_avail,
                       const size_t *must, size_t n_must, size_t size,
                       const size_t *expected, size_t n_expected, int line) {
        size_t picked[size + 1];
        char got[256], want[256];
        size_t n;

        picked[size] = SIZE_MAX;        /* canary: nothing is written past `size` */
        n = kdp_preferred_pick(idx, avail, n_avail, must, n_must, size, picked);
        format_indices(picked, n <= size ? n : size, got, sizeof(got));
        format_indices(expected, n_expected, want, sizeof(want));
        ck_assert_msg(n == n_expected && (n == 0 || memcmp(picked, expected, n * sizeof(size_t)) == 0),
                      "line %d: picked [%s], expected [%s]", line, got, want);
        ck_assert_uint_eq(picked[size], SIZE_MAX);
}

#define IDX(...) ((const size_t[]){ __VA_ARGS__ }), KDP_ELEMENTSOF(((const size_t[]){ __VA_ARGS__ }))
#define NO_IDX NULL, 0
#define SPAN(p, n) (p), (n)
#define ALL_GPUS IDX(0, 1, 2, 3, 4, 5, 6, 7)
#define CHECK_PICK(idx, avail, must, size, expected) \
        check_pick((idx), avail, must, (size), expected, __LINE__)

/* ---- locality ---- */

START_TEST(test_preferred_pick_size_two_takes_a_switch_pair) {
        _cleanup_(kdp_preferred_index_freep) kdp_preferred_index *idx =
                index_from(gpus, KDP_ELEMENTSOF(gpus));

        CHECK_PICK(idx, ALL_GPUS, NO_IDX, 2, IDX(0, 1));
        /* lowest indices would be 1,2 across switches A and B */
        CHECK_PICK(idx, IDX(1, 2, 3, 5, 6, 7), NO_IDX, 2, IDX(2, 3));
        CHECK_PICK(idx, IDX(7, 6, 5, 4), NO_IDX, 2, IDX(4, 5));
        /* a switch pair before two lone GPUs on one host bridge, even though NUMA 0 holds exactly two */
        CHECK_PICK(idx, IDX(0, 2, 4, 6, 7), NO_IDX, 2, IDX(6, 7));
}
END_TEST

START_TEST(test_preferred_pick_switch_pair_on_the_other_numa_node) {
        _cleanup_(kdp_preferred_index_freep) kdp_preferred_index *idx =
                index_from(gpus, KDP_ELEMENTSOF(gpus));

        /* NUMA 0 holds two GPUs on two switches, NUMA 1 a pair on one switch */
        CHECK_PICK(idx, IDX(0, 2, 4, 5), NO_IDX, 2, IDX(4, 5));
        /* both pairs of NUMA 1 tie on closeness and on what stays free: the lower one */
        CHECK_PICK(idx, IDX(0, 2, 4, 5, 6, 7), NO_IDX, 2, IDX(4, 5));
        CHECK_PICK(idx, IDX(7, 6, 5, 4, 2, 0), NO_IDX, 2, IDX(4, 5));
        /* with switch C broken up, switch D */
        CHECK_PICK(idx, IDX(0, 2, 4, 6, 7), NO_IDX, 2, IDX(6, 7));
}
END_TEST

START_TEST(test_preferred_pick_size_four_takes_one_numa_node) {
        _cleanup_(kdp_preferred_index_freep) kdp_preferred_index *idx =
                index_from(gpus, KDP_ELEMENTSOF(gpus));

        CHECK_PICK(idx, ALL_GPUS, NO_IDX, 4, IDX(0, 1, 2, 3));
        CHECK_PICK(idx, IDX(0, 2, 4, 5, 6, 7), NO_IDX, 4, IDX(4, 5, 6, 7));
        /* NUMA 0 has 3 free, NUMA 1 has 4: all of NUMA 1 */
        CHECK_PICK(idx, IDX(1, 2, 3, 4, 5, 6, 7), NO_IDX, 4, IDX(4, 5, 6, 7));
        /* three fit on NUMA 0 exactly (best fit), leaving NUMA 1 whole */
        CHECK_PICK(idx, IDX(1, 2, 3, 4, 5, 6, 7), NO_IDX, 3, IDX(1, 2, 3));
}
END_TEST

START_TEST(test_preferred_pick_must_include_takes_partner_on_same_switch) {
        _cleanup_(kdp_preferred_index_freep) kdp_preferred_index *idx =
                index_from(gpus, KDP_ELEMENTSOF(gpus));

        CHECK_PICK(idx, ALL_GPUS, IDX(2), 2, IDX(2, 3));
        CHECK_PICK(idx, ALL_GPUS, IDX(3), 2, IDX(3, 2));
        CHECK_PICK(idx, ALL_GPUS, IDX(6), 2, IDX(6, 7));
        /* with switch B's partner busy, stay on switch B's NUMA node */
        CHECK_PICK(idx, IDX(0, 1, 2, 4, 5, 6, 7), IDX(2), 2, IDX(2, 0));
        CHECK_PICK(idx, IDX(0, 1, 2, 4, 5, 6, 7), IDX(2), 3, IDX(2, 0, 1));
        /* size 4 from switch B: NUMA 0 */
        CHECK_PICK(idx, ALL_GPUS, IDX(2), 4, IDX(2, 0, 1, 3));
        /* more than NUMA 0 has left: the rest from NUMA 1 */
        CHECK_PICK(idx, IDX(0, 2, 3, 4, 5, 6, 7), IDX(2), 4, IDX(2, 0, 3, 4));
}
END_TEST

START_TEST(test_preferred_pick_must_include_across_numa_nodes_fills_near_them) {
        _cleanup_(kdp_preferred_index_freep) kdp_preferred_index *idx =
                index_from(gpus, KDP_ELEMENTSOF(gpus));

        /*
         * Every fill of two adds closeness 8 (3 and 4: a partner on each switch;
         * 0 and 1: a switch pair on gpu 2's host bridge; ...) and leaves 8 among
         * the rest: the lowest, switch A.
         */
        CHECK_PICK(idx, ALL_GPUS, IDX(2, 5), 4, IDX(2, 5, 0, 1));
        CHECK_PICK(idx, ALL_GPUS, IDX(2, 5), 3, IDX(2, 5, 3));
        /* both NUMA nodes hold one and have 3 free: the first (lowest device) gets the fill */
        CHECK_PICK(idx, ALL_GPUS, IDX(0, 7), 4, IDX(0, 7, 1, 2));
}
END_TEST

START_TEST(test_preferred_pick_best_fit_prefers_the_fuller_neighbourhood) {
        _cleanup_(kdp_preferred_index_freep) kdp_preferred_index *idx =
                index_from(gpus, KDP_ELEMENTSOF(gpus));

        /*
         * Switch pairs A and D tie on closeness; taking D leaves 0, 1 and 2
         * (closeness 4 + 2 + 2), taking A leaves 2, 6 and 7 (4)
         */
        CHECK_PICK(idx, IDX(0, 1, 2, 6, 7), NO_IDX, 2, IDX(6, 7));
        CHECK_PICK(idx, IDX(0, 1, 5, 6, 7), NO_IDX, 2, IDX(0, 1));
}
END_TEST

START_TEST(test_preferred_pick_tied_subtrees_compare_their_picks) {
        /*
         * Root ports x and y look alike: a lone device and two switch pairs
         * each. Four of x are 5-8 (its lowest, 0, is lone and left), four of
         * y are 2, 3, 4, 9: y's set is the lower one although x holds device 0.
         * Five are a whole root port: x, with 0.
         */
        static const test_device two_ports[] = {
                { "x-lone", 0, "h/x/l0" },      { "y-lone", 0, "h/y/l0" },
                { "y-s1-0", 0, "h/y/s1/p0" },   { "y-s1-1", 0, "h/y/s1/p1" },
                { "y-s2-0", 0, "h/y/s2/p0" },   { "x-s1-0", 0, "h/x/s1/p0" },
                { "x-s1-1", 0, "h/x/s1/p1" },   { "x-s2-0", 0, "h/x/s2/p0" },
                { "x-s2-1", 0, "h/x/s2/p1" },   { "y-s2-1", 0, "h/y/s2/p1" },
        };
        _cleanup_(kdp_preferred_index_freep) kdp_preferred_index *idx =
                index_from(two_ports, KDP_ELEMENTSOF(two_ports));

        CHECK_PICK(idx, IDX(0, 1, 2, 3, 4, 5, 6, 7, 8, 9), NO_IDX, 4, IDX(2, 3, 4, 9));
        CHECK_PICK(idx, IDX(0, 1, 2, 3, 4, 5, 6, 7, 8, 9), NO_IDX, 2, IDX(2, 3));
        CHECK_PICK(idx, IDX(0, 1, 2, 3, 4, 5, 6, 7, 8, 9), NO_IDX, 5, IDX(0, 5, 6, 7, 8));
}
END_TEST

START_TEST(test_preferred_pick_fragmented_takes_best_fit) {
        _cleanup_(kdp_preferred_index_freep) kdp_preferred_index *idx =
                index_from(gpus, KDP_ELEMENTSOF(gpus));

        /* gpu 1 is in use: gpu 0 is the lone device of switch A */
        CHECK_PICK(idx, IDX(0, 2, 3, 4, 5, 6, 7), NO_IDX, 1, IDX(0));
        CHECK_PICK(idx, IDX(0, 2, 3, 4, 5, 6, 7), NO_IDX, 2, IDX(2, 3));
        CHECK_PICK(idx, IDX(0, 2, 3, 4, 5, 6, 7), NO_IDX, 3, IDX(0, 2, 3));
        CHECK_PICK(idx, IDX(0, 2, 3, 4, 5, 6, 7), NO_IDX, 4, IDX(4, 5, 6, 7));
        CHECK_PICK(idx, IDX(0, 2, 3, 4, 5, 6, 7), NO_IDX, 5, IDX(0, 4, 5, 6, 7));
        CHECK_PICK(idx, IDX(0, 2, 3, 4, 5, 6, 7), NO_IDX, 6, IDX(2, 3, 4, 5, 6, 7));
        /* gpus 0 and 5 are in use: NUMA nodes tie, lone gpu 1 on the first */
        CHECK_PICK(idx, IDX(1, 2, 3, 4, 6, 7), NO_IDX, 1, IDX(1));
        /* only lone devices left: one from each switch of NUMA 0 */
        CHECK_PICK(idx, IDX(1, 3, 5, 7), NO_IDX, 2, IDX(1, 3));
}
END_TEST

/* ---- edge cases of the request ---- */

START_TEST(test_preferred_pick_size_above_available_returns_all) {
        _cleanup_(kdp_preferred_index_freep) kdp_preferred_index *idx =
                index_from(gpus, KDP_ELEMENTSOF(gpus));

        CHECK_PICK(idx, IDX(6, 1, 4), NO_IDX, 5, IDX(1, 4, 6));
        CHECK_PICK(idx, IDX(6, 1, 4), IDX(3), 8, IDX(3, 1, 4, 6));
        CHECK_PICK(idx, NO_IDX, NO_IDX, 3, NO_IDX);
}
END_TEST

START_TEST(test_preferred_pick_ignores_duplicate_and_unknown_available) {
        _cleanup_(kdp_preferred_index_freep) kdp_preferred_index *idx =
                index_from(gpus, KDP_ELEMENTSOF(gpus));

        CHECK_PICK(idx, IDX(3, 3, 2, 2, 8, SIZE_MAX), NO_IDX, 4, IDX(2, 3));
        /* a must_include device also listed as available is picked once */
        CHECK_PICK(idx, IDX(2, 3, 2), IDX(2), 4, IDX(2, 3));
}
END_TEST

START_TEST(test_preferred_pick_must_include_not_available_comes_first) {
        _cleanup_(kdp_preferred_index_freep) kdp_preferred_index *idx =
                index_from(gpus, KDP_ELEMENTSOF(gpus));

        CHECK_PICK(idx, IDX(0, 1, 2, 3), IDX(5), 2, IDX(5, 0));
        CHECK_PICK(idx, IDX(0, 1, 2, 3), IDX(7, 5), 3, IDX(7, 5, 0));
}
END_TEST

START_TEST(test_preferred_pick_must_include_keeps_order_drops_duplicates_caps_at_size) {
        _cleanup_(kdp_preferred_index_freep) kdp_preferred_index *idx =
                index_from(gpus, KDP_ELEMENTSOF(gpus));

        CHECK_PICK(idx, ALL_GPUS, IDX(6, 2, 2, 6), 3, IDX(6, 2, 3));
        CHECK_PICK(idx, ALL_GPUS, IDX(3, 1, 2), 2, IDX(3, 1));
        CHECK_PICK(idx, ALL_GPUS, IDX(99, SIZE_MAX, 4), 2, IDX(4, 5));
        CHECK_PICK(idx, NO_IDX, IDX(99), 2, NO_IDX);
}
END_TEST

START_TEST(test_preferred_pick_size_zero_picks_nothing) {
        _cleanup_(kdp_preferred_index_freep) kdp_preferred_index *idx =
                index_from(gpus, KDP_ELEMENTSOF(gpus));

        ck_assert_uint_eq(kdp_preferred_pick(idx, IDX(0, 1), IDX(2), 0, NULL), 0);
}
END_TEST

START_TEST(test_preferred_pick_empty_index_picks_nothing) {
        _cleanup_(kdp_preferred_index_freep) kdp_preferred_index *idx = index_from(NULL, 0);

        CHECK_PICK(idx, IDX(0, 1), IDX(0), 2, NO_IDX);
}
END_TEST

/* ---- devices without (full) topology ---- */

START_TEST(test_preferred_pick_without_topology_takes_lowest_indices) {
        static const test_device plain[] = {
                { "a", -1, NULL }, { "b", -1, NULL }, { "c", -1, NULL }, { "d", -1, NULL },
                { "e", -1, NULL }, { "f", -1, NULL }, { "g", -1, NULL }, { "h", -1, NULL },
        };
        _cleanup_(kdp_preferred_index_freep) kdp_preferred_index *idx =
                index_from(plain, KDP_ELEMENTSOF(plain));

        CHECK_PICK(idx, IDX(7, 5, 3, 1, 0, 2), NO_IDX, 3, IDX(0, 1, 2));
        CHECK_PICK(idx, IDX(7, 5, 3, 1, 0, 2), IDX(6), 3, IDX(6, 0, 1));
        CHECK_PICK(idx, IDX(7, 5), NO_IDX, 3, IDX(5, 7));
        ck_assert_uint_eq(kdp_preferred_distance(idx, 0, 7), 0);
}
END_TEST

START_TEST(test_preferred_pick_numa_without_pci_path_prefers_one_node) {
        static const test_device numa_only[] = {
                { "a", 0, NULL }, { "b", 0, NULL },
                { "c", 1, NULL }, { "d", 1, NULL }, { "e", 1, NULL },
        };
        _cleanup_(kdp_preferred_index_freep) kdp_preferred_index *idx =
                index_from(numa_only, KDP_ELEMENTSOF(numa_only));

        CHECK_PICK(idx, IDX(0, 1, 2, 3, 4), NO_IDX, 2, IDX(0, 1));
        CHECK_PICK(idx, IDX(0, 1, 2, 3, 4), NO_IDX, 3, IDX(2, 3, 4));
        CHECK_PICK(idx, IDX(1, 2, 3, 4), NO_IDX, 2, IDX(2, 3));
        CHECK_PICK(idx, IDX(0, 1, 2, 3, 4), IDX(4), 2, IDX(4, 2));
        ck_assert_uint_eq(kdp_preferred_distance(idx, 0, 1), 0);
        ck_assert_uint_eq(kdp_preferred_distance(idx, 1, 2), 2);
}
END_TEST

START_TEST(test_preferred_pick_pci_path_without_numa_uses_pci_locality) {
        static const test_device no_numa[] = {
                { "a", -1, "pci0000:00/0000:00:01.0/0000:01:00.0" },
                { "b", -1, "pci0000:00/0000:00:02.0/0000:02:00.0" },
                { "c", -1, "pci0000:00/0000:00:02.0/0000:02:00.1" },
                { "d", -1, "pci0000:40/0000:40:01.0/0000:41:00.0" },
        };
        _cleanup_(kdp_preferred_index_freep) kdp_preferred_index *idx =
                index_from(no_numa, KDP_ELEMENTSOF(no_numa));

        CHECK_PICK(idx, IDX(0, 1, 2, 3), NO_IDX, 2, IDX(1, 2));
        CHECK_PICK(idx, IDX(0, 1, 2, 3), IDX(3), 2, IDX(3, 0));
        ck_assert_uint_eq(kdp_preferred_distance(idx, 1, 2), 2);
        ck_assert_uint_eq(kdp_preferred_distance(idx, 0, 1), 4);
        ck_assert_uint_eq(kdp_preferred_distance(idx, 0, 3), 6);
}
END_TEST

/* ---- distance ---- */

START_TEST(test_preferred_distance_counts_tree_edges) {
        static const test_device mixed[] = {
                { "a", 0, "pci0000:00/0000:00:01.0/0000:01:00.0" },
                { "b", 0, "pci0000:00/0000:00:01.0/0000:01:00.0" },      /* same PCI function */
                { "c", 0, NULL },
                { "d", 0, "/pci0000:00//0000:00:01.0/0000:01:00.0/" },  /* empty components skipped */
                { "e", 1, "pci0000:00/0000:00:01.0/0000:01:00.0" },      /* same path, other node */
        };
        _cleanup_(kdp_preferred_index_freep) kdp_preferred_index *gpu_idx =
                index_from(gpus, KDP_ELEMENTSOF(gpus));
        _cleanup_(kdp_preferred_index_freep) kdp_preferred_index *idx =
                index_from(mixed, KDP_ELEMENTSOF(mixed));

        ck_assert_uint_eq(kdp_preferred_distance(gpu_idx, 0, 0), 0);
        ck_assert_uint_eq(kdp_preferred_distance(gpu_idx, 0, 1), 4);   /* same switch */
        ck_assert_uint_eq(kdp_preferred_distance(gpu_idx, 1, 0), 4);
        ck_assert_uint_eq(kdp_preferred_distance(gpu_idx, 0, 2), 8);   /* same host bridge */
        ck_assert_uint_eq(kdp_preferred_distance(gpu_idx, 0, 4), 12);  /* other NUMA node */
        ck_assert_uint_eq(kdp_preferred_distance(gpu_idx, 7, 6), 4);

        ck_assert_uint_eq(kdp_preferred_distance(idx, 0, 1), 0);
        ck_assert_uint_eq(kdp_preferred_distance(idx, 0, 3), 0);
        ck_assert_uint_eq(kdp_preferred_distance(idx, 0, 2), 3);
        ck_assert_uint_eq(kdp_preferred_distance(idx, 0, 4), 8);
        /* devices sharing a leaf are still two devices */
        CHECK_PICK(idx, IDX(0, 1, 2, 3, 4), NO_IDX, 3, IDX(0, 1, 3));
}
END_TEST

/* ---- the objective against an exhaustive search ---- */

#define RANDOM_MAX_DEVICES 40
#define EXHAUSTIVE_MAX_DEVICES 12
#define EXHAUSTIVE_CASES 5000
#define SWAP_CASES 150

/* A random resource: tree, available, must_include, size. */
typedef struct random_case {
        size_t n;
        int numa[RANDOM_MAX_DEVICES];
        char path[RANDOM_MAX_DEVICES][64];
        bool has_path[RANDOM_MAX_DEVICES];
        size_t available[2 * RANDOM_MAX_DEVICES + 2];
        size_t n_available;
        size_t must[4];
        size_t n_must;
        size_t size;
} random_case;

/* splitmix64: the same cases on every libc */
static uint64_t random_next(uint64_t *state) {
        uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
}

static size_t random_below(uint64_t *state, size_t n) {
        return (size_t) (random_next(state) % n);
}

/*
 * Devices on NUMA node -1 (none), 0 or 1; a sixth without pci_path; paths 1 to
 * 4 components deep from 2 names per level, so that switches and root ports
 * are shared, now and then with empty components; in half of the cases every
 * path has one depth, 2 or 3, as on a regular node (many subtrees tie); a
 * fifth copy an earlier device's location. Three in four devices are
 * available, with a duplicate and an unknown index now and then; a third of
 * the requests have 1 to 3 must_include entries (some not available, some
 * unknown, some repeated).
 */
static void random_case_new(uint64_t *state, size_t min_devices, size_t max_devices, random_case *c) {
        size_t regular = random_below(state, 2) == 0 ? 2 + random_below(state, 2) : 0;

        *c = (random_case){ .n = min_devices + random_below(state, max_devices - min_devices + 1) };
        for (size_t i = 0; i < c->n; i++) {
                size_t depth, len = 0;

                if (i > 0 && random_below(state, 5) == 0) {
                        size_t j = random_below(state, i);

                        c->numa[i] = c->numa[j];
                        c->has_path[i] = c->has_path[j];
                        memcpy(c->path[i], c->path[j], sizeof(c->path[i]));
                        continue;
                }
                c->numa[i] = (int) random_below(state, 3) - 1;
                c->has_path[i] = random_below(state, 6) != 0;
                if (!c->has_path[i])
                        continue;
                depth = regular ? regular : 1 + random_below(state, 4);
                for (size_t l = 0; l < depth; l++)
                        len += (size_t) snprintf(c->path[i] + len, sizeof(c->path[i]) - len, "%s%s%c%zu",
                                                 l > 0 ? "/" : "", random_below(state, 8) == 0 ? "/" : "",
                                                 (char) ('a' + l), random_below(state, 2));
        }
        for (size_t d = 0; d < c->n; d++)
                if (random_below(state, 4) != 0)
                        c->available[c->n_available++] = d;
        if (c->n_available > 0 && random_below(state, 4) == 0) {
                size_t again = c->available[random_below(state, c->n_available)];

                c->available[c->n_available++] = again;
        }
        if (random_below(state, 8) == 0)
                c->available[c->n_available++] = c->n + random_below(state, 3);
        for (size_t i = c->n_available; i > 1; i--) {
                size_t j = random_below(state, i), t = c->available[i - 1];

                c->available[i - 1] = c->available[j];
                c->available[j] = t;
        }
        c->n_must = random_below(state, 3) == 0 ? 1 + random_below(state, 3) : 0;
        for (size_t i = 0; i < c->n_must; i++)
                c->must[i] = random_below(state, c->n + 1);
        c->size = random_below(state, 16) == 0 ? random_below(state, 2) * (c->n + 1) : 1 + random_below(state, c->n);
}

/* The depth of the lowest common ancestor: 0 across NUMA nodes, 1 + the pci_path components in common. */
static unsigned oracle_closeness(const random_case *c, size_t a, size_t b) {
        const char *pa = c->has_path[a] ? c->path[a] : "", *pb = c->has_path[b] ? c->path[b] : "";
        unsigned depth = 1;

        if (c->numa[a] != c->numa[b])
                return 0;
        for (;;) {
                size_t la, lb;

                pa += strspn(pa, "/");
                pb += strspn(pb, "/");
                la = strcspn(pa, "/");
                lb = strcspn(pb, "/");
                if (la == 0 || la != lb || memcmp(pa, pb, la) != 0)
                        return depth;
                depth++;
                pa += la;
                pb += lb;
        }
}

/* M (in order, into ret) and A of preferred.h as flags; returns |M|, *ret_k = k. */
static size_t oracle_sets(const random_case *c, bool *must, bool *free_set, size_t *ret, size_t *ret_k) {
        size_t n_must = 0, n_free = 0;

        memset(must, 0, c->n * sizeof(bool));
        memset(free_set, 0, c->n * sizeof(bool));
        for (size_t i = 0; i < c->n_must && n_must < c->size; i++)
                if (c->must[i] < c->n && !must[c->must[i]]) {
                        must[c->must[i]] = true;
                        ret[n_must++] = c->must[i];
                }
        for (size_t i = 0; i < c->n_available; i++) {
                size_t d = c->available[i];

                if (d < c->n && !must[d] && !free_set[d]) {
                        free_set[d] = true;
                        n_free++;
                }
        }
        *ret_k = n_must + (c->size - n_must < n_free ? c->size - n_must : n_free);
        return n_must;
}

/*
 * Criteria 1 to 3 of set s (k devices) as numbers to maximise: the least
 * closeness of a pair in s (0 without a pair), the sum over its pairs, the
 * sum over the pairs of A not in s.
 */
static void oracle_key(const random_case *c, const bool *s, const bool *free_set, size_t k, long key[3]) {
        long worst = LONG_MAX;

        key[1] = key[2] = 0;
        for (size_t a = 0; a < c->n; a++)
                for (size_t b = a + 1; b < c->n; b++) {
                        long close = oracle_closeness(c, a, b);

                        if (s[a] && s[b]) {
                                worst = close < worst ? close : worst;
                                key[1] += close;
                        }
                        if (free_set[a] && !s[a] && free_set[b] && !s[b])
                                key[2] += close;
                }
        key[0] = k >= 2 ? worst : 0;
}

static int oracle_key_compare(const long x[3], const long y[3]) {
        for (size_t i = 0; i < 3; i++)
                if (x[i] != y[i])
                        return x[i] > y[i] ? 1 : -1;
        return 0;
}

/* Whether the sorted members of set x come before those of set y (same size). */
static bool oracle_lower(const bool *x, const bool *y, size_t n) {
        size_t xs[RANDOM_MAX_DEVICES], ys[RANDOM_MAX_DEVICES], nx = 0, ny = 0;

        for (size_t d = 0; d < n; d++) {
                if (x[d])
                        xs[nx++] = d;
                if (y[d])
                        ys[ny++] = d;
        }
        for (size_t i = 0; i < nx && i < ny; i++)
                if (xs[i] != ys[i])
                        return xs[i] < ys[i];
        return false;
}

/* The objective of preferred.h, applied to every subset (n ≤ EXHAUSTIVE_MAX_DEVICES). */
static size_t oracle_pick(const random_case *c, size_t *ret) {
        bool must[RANDOM_MAX_DEVICES], free_set[RANDOM_MAX_DEVICES], s[RANDOM_MAX_DEVICES];
        bool best[RANDOM_MAX_DEVICES] = { false };
        long best_key[3] = { -1, -1, -1 };
        size_t n_must, k, n;

        ck_assert_uint_le(c->n, EXHAUSTIVE_MAX_DEVICES);
        n_must = oracle_sets(c, must, free_set, ret, &k);
        if (n_must == c->size)
                return n_must;
        for (unsigned mask = 0; mask < (1u << c->n); mask++) {
                long key[3];
                size_t size = 0;
                bool valid = true;
                int r;

                for (size_t d = 0; d < c->n; d++) {
                        s[d] = mask & (1u << d);
                        size += s[d];
                        valid = valid && (!s[d] || must[d] || free_set[d]) && (!must[d] || s[d]);
                }
                if (!valid || size != k)
                        continue;
                oracle_key(c, s, free_set, k, key);
                r = oracle_key_compare(key, best_key);
                if (r > 0 || (r == 0 && oracle_lower(s, best, c->n))) {
                        memcpy(best, s, sizeof(s));
                        memcpy(best_key, key, sizeof(key));
                }
        }
        n = n_must;
        for (size_t d = 0; d < c->n; d++)
                if (best[d] && !must[d])
                        ret[n++] = d;
        return n;
}

static void random_case_describe(const random_case *c, const size_t *want, size_t n_want,
                                 const size_t *got, size_t n_got, char *buf, size_t buf_size) {
        char list[256];
        size_t off = 0;

        for (size_t d = 0; d < c->n && off < buf_size; d++)
                off += (size_t) snprintf(buf + off, buf_size - off, "\n  device %zu: numa %d pci_path %s", d,
                                         c->numa[d], c->has_path[d] ? c->path[d] : "(none)");
        format_indices(c->available, c->n_available, list, sizeof(list));
        if (off < buf_size)
                off += (size_t) snprintf(buf + off, buf_size - off, "\n  available [%s]", list);
        format_indices(c->must, c->n_must, list, sizeof(list));
        if (off < buf_size)
                off += (size_t) snprintf(buf + off, buf_size - off, " must_include [%s] size %zu", list, c->size);
        format_indices(want, n_want, list, sizeof(list));
        if (off < buf_size)
                off += (size_t) snprintf(buf + off, buf_size - off, "\n  expected [%s]", list);
        format_indices(got, n_got, list, sizeof(list));
        if (off < buf_size)
                (void) snprintf(buf + off, buf_size - off, " got [%s]", list);
}

START_TEST(test_preferred_pick_matches_exhaustive_search) {
        uint64_t state = 20240611;

        for (unsigned i = 0; i < EXHAUSTIVE_CASES; i++) {
                _cleanup_(kdp_preferred_index_freep) kdp_preferred_index *idx = NULL;
                test_device t[RANDOM_MAX_DEVICES];
                size_t want[RANDOM_MAX_DEVICES + 2], got[RANDOM_MAX_DEVICES + 2], n_want, n_got;
                random_case c;

                random_case_new(&state, 1, EXHAUSTIVE_MAX_DEVICES, &c);
                for (size_t d = 0; d < c.n; d++)
                        t[d] = (test_device){ "d", c.numa[d], c.has_path[d] ? c.path[d] : NULL };
                idx = index_from(t, c.n);
                n_want = oracle_pick(&c, want);
                got[c.size] = SIZE_MAX;
                n_got = kdp_preferred_pick(idx, c.available, c.n_available, c.must, c.n_must, c.size, got);
                if (n_got != n_want || memcmp(got, want, n_want * sizeof(size_t)) != 0 || got[c.size] != SIZE_MAX) {
                        char description[4096];

                        random_case_describe(&c, want, n_want, got, n_got <= c.size ? n_got : c.size,
                                             description, sizeof(description));
                        ck_abort_msg("case %u:%s", i, description);
                }
        }
}
END_TEST

/*
 * Trees of 13 to 40 devices, too many to try every subset: the answer has the
 * form of the contract, and no swap of one added device for another free one
 * scores better, or as well with a lower set.
 */
START_TEST(test_preferred_pick_no_swap_improves_on_larger_trees) {
        uint64_t state = 4096;

        for (unsigned i = 0; i < SWAP_CASES; i++) {
                _cleanup_(kdp_preferred_index_freep) kdp_preferred_index *idx = NULL;
                test_device t[RANDOM_MAX_DEVICES];
                bool must[RANDOM_MAX_DEVICES], free_set[RANDOM_MAX_DEVICES], s[RANDOM_MAX_DEVICES] = { false };
                size_t want[RANDOM_MAX_DEVICES + 2], got[RANDOM_MAX_DEVICES + 2], n_must, k, n_got;
                char description[8192];
                long key[3], other[3];
                random_case c;

                random_case_new(&state, EXHAUSTIVE_MAX_DEVICES + 1, RANDOM_MAX_DEVICES, &c);
                for (size_t d = 0; d < c.n; d++)
                        t[d] = (test_device){ "d", c.numa[d], c.has_path[d] ? c.path[d] : NULL };
                idx = index_from(t, c.n);
                n_must = oracle_sets(&c, must, free_set, want, &k);
                got[c.size] = SIZE_MAX;
                n_got = kdp_preferred_pick(idx, c.available, c.n_available, c.must, c.n_must, c.size, got);
                random_case_describe(&c, want, n_must, got, n_got <= c.size ? n_got : c.size,
                                     description, sizeof(description));
                ck_assert_msg(n_got == (n_must == c.size ? n_must : k) && got[c.size] == SIZE_MAX &&
                              memcmp(got, want, n_must * sizeof(size_t)) == 0,
                              "case %u (expected: M first):%s", i, description);
                for (size_t j = n_must; j < n_got; j++) {
                        ck_assert_msg(got[j] < c.n && free_set[got[j]] && !s[got[j]] && (j == n_must || got[j - 1] < got[j]),
                                      "case %u: %zu is not a free device in ascending order:%s", i, got[j], description);
                        s[got[j]] = true;
                }
                for (size_t j = 0; j < n_must; j++)
                        s[got[j]] = true;
                oracle_key(&c, s, free_set, n_got, key);
                for (size_t j = n_must; j < n_got; j++)
                        for (size_t f = 0; f < c.n; f++) {
                                if (!free_set[f] || s[f])
                                        continue;
                                s[got[j]] = false;
                                s[f] = true;
                                oracle_key(&c, s, free_set, n_got, other);
                                s[f] = false;
                                s[got[j]] = true;
                                ck_assert_msg(oracle_key_compare(other, key) < 0 ||
                                              (oracle_key_compare(other, key) == 0 && got[j] < f),
                                              "case %u: %zu instead of %zu is as good or better (%ld %ld %ld vs %ld %ld %ld):%s",
                                              i, f, got[j], other[0], other[1], other[2], key[0], key[1], key[2],
                                              description);
                        }
        }
}
END_TEST

/* ---- the methods under limits ---- */

static const kdp_preferred_limits default_limits = {
        .table_bytes = KDP_PREFERRED_TABLE_BYTES_MAX,
        .operations = KDP_PREFERRED_OPERATIONS_MAX,
        .method = KDP_PREFERRED_EXACT,
};

static const kdp_preferred_limits no_tables = { .table_bytes = 0, .operations = 0, .method = KDP_PREFERRED_EXACT };

/*
 * Limits that leave the exact method out, or some of the time: the scored
 * method asked for; no room for any table; too few operations for most
 * tables (some exact picks stop in their tie comparisons); room for small
 * tables only.
 */
static const kdp_preferred_limits tight_limits[] = {
        { .table_bytes = SIZE_MAX, .operations = UINT64_MAX, .method = KDP_PREFERRED_SCORED },
        { .table_bytes = 0, .operations = 0, .method = KDP_PREFERRED_EXACT },
        { .table_bytes = SIZE_MAX, .operations = 60, .method = KDP_PREFERRED_EXACT },
        { .table_bytes = 256, .operations = UINT64_MAX, .method = KDP_PREFERRED_EXACT },
};

static bool contains_index(const size_t *v, size_t n, size_t x) {
        for (size_t i = 0; i < n; i++)
                if (v[i] == x)
                        return true;
        return false;
}

static void set_flags(const size_t *v, size_t n, size_t n_devices, bool *ret) {
        memset(ret, 0, n_devices * sizeof(bool));
        for (size_t i = 0; i < n; i++)
                ret[v[i]] = true;
}

/*
 * Whatever method the limits leave, the answer has the contract's form (M
 * first in order, then devices of A ascending, k in all) and meets what
 * preferred.h promises of that method: exact, the exhaustive search's
 * answer; scored, its criteria 1 to 3; greedy, its criterion 1.
 */
START_TEST(test_preferred_pick_under_limits_keeps_each_methods_promise) {
        uint64_t state = 20240612;
        size_t taken[_KDP_PREFERRED_METHOD_MAX] = { 0 };

        for (unsigned i = 0; i < EXHAUSTIVE_CASES; i++) {
                _cleanup_(kdp_preferred_index_freep) kdp_preferred_index *idx = NULL;
                test_device t[RANDOM_MAX_DEVICES];
                bool must[RANDOM_MAX_DEVICES], free_set[RANDOM_MAX_DEVICES], s[RANDOM_MAX_DEVICES];
                size_t want[RANDOM_MAX_DEVICES + 2], m_order[RANDOM_MAX_DEVICES + 2], n_want, n_must, k;
                long want_key[3];
                random_case c;

                random_case_new(&state, 1, EXHAUSTIVE_MAX_DEVICES, &c);
                for (size_t d = 0; d < c.n; d++)
                        t[d] = (test_device){ "d", c.numa[d], c.has_path[d] ? c.path[d] : NULL };
                idx = index_from(t, c.n);
                n_want = oracle_pick(&c, want);
                n_must = oracle_sets(&c, must, free_set, m_order, &k);
                set_flags(want, n_want, c.n, s);
                oracle_key(&c, s, free_set, n_want, want_key);

                for (size_t l = 0; l < KDP_ELEMENTSOF(tight_limits); l++) {
                        size_t got[RANDOM_MAX_DEVICES + 2], n_got;
                        kdp_preferred_method method = _KDP_PREFERRED_METHOD_INVALID;
                        bool ok;
                        long key[3];

                        got[c.size] = SIZE_MAX;
                        n_got = kdp_preferred_pick_limited(idx, c.available, c.n_available, c.must, c.n_must, c.size,
                                                           &tight_limits[l], got, &method);
                        ok = n_got == n_want && got[c.size] == SIZE_MAX && method >= 0 &&
                             method < KDP_PREFERRED_NO_MEMORY && memcmp(got, m_order, n_must * sizeof(size_t)) == 0;
                        for (size_t j = n_must; ok && j < n_got; j++)
                                ok = got[j] < c.n && free_set[got[j]] && (j == n_must || got[j - 1] < got[j]);
                        if (ok) {
                                set_flags(got, n_got, c.n, s);
                                oracle_key(&c, s, free_set, n_got, key);
                                taken[method]++;
                        }
                        if (ok && method == KDP_PREFERRED_EXACT)
                                ok = memcmp(got, want, n_want * sizeof(size_t)) == 0;
                        else if (ok && method == KDP_PREFERRED_SCORED)
                                ok = oracle_key_compare(key, want_key) == 0;
                        else if (ok)
                                ok = key[0] == want_key[0];
                        if (!ok) {
                                char description[4096];

                                random_case_describe(&c, want, n_want, got, n_got <= c.size ? n_got : c.size,
                                                     description, sizeof(description));
                                ck_abort_msg("case %u, limits %zu, method %d:%s", i, l, (int) method, description);
                        }
                }
        }
        /* every method had its turn (the exact ones: answers that need no table) */
        ck_assert_uint_ge(taken[KDP_PREFERRED_EXACT], EXHAUSTIVE_CASES);
        ck_assert_uint_ge(taken[KDP_PREFERRED_SCORED], EXHAUSTIVE_CASES / 5);
        ck_assert_uint_ge(taken[KDP_PREFERRED_GREEDY], EXHAUSTIVE_CASES / 4);
}
END_TEST

/* ---- scale and threads ---- */

#define N_LARGE 4096

/* 2 NUMA nodes, 8 host bridges, 64 root ports, 512 switches of 8 devices each. */
static kdp_preferred_index *large_index(void) {
        _cleanup_free_ test_device *t = calloc(N_LARGE, sizeof(test_device));
        _cleanup_free_ char *ids = calloc(N_LARGE, 16), *paths = calloc(N_LARGE, 96);

        ck_assert_ptr_nonnull(t);
        ck_assert_ptr_nonnull(ids);
        ck_assert_ptr_nonnull(paths);
        for (unsigned i = 0; i < N_LARGE; i++) {
                char *id = ids + 16 * i, *path = paths + 96 * i;

                snprintf(id, 16, "dev%04u", i);
                snprintf(path, 96, "pci0000:%02x/0000:%02x:%02x.0/0000:%02x:00.0/0000:%02x:%02x.%u",
                         i / 512, i / 512, i / 64 % 8, i / 8 % 256, i / 8 % 256, i / 2 % 4, i % 2);
                t[i] = (test_device){ id, (int) (i / 2048), path };
        }
        return index_from(t, N_LARGE);
}

START_TEST(test_preferred_pick_4096_devices_returns_distinct_best_fit) {
        _cleanup_(kdp_preferred_index_freep) kdp_preferred_index *idx = large_index();
        _cleanup_free_ size_t *all = calloc(N_LARGE, sizeof(size_t));
        _cleanup_free_ size_t *odd = calloc(N_LARGE / 2, sizeof(size_t));
        _cleanup_free_ uint8_t *seen = NULL;
        size_t picked[8];

        ck_assert_ptr_nonnull(all);
        ck_assert_ptr_nonnull(odd);
        for (size_t i = 0; i < N_LARGE; i++)
                all[i] = N_LARGE - 1 - i;
        for (size_t i = 0; i < N_LARGE / 2; i++)
                odd[i] = 2 * i + 1;

        CHECK_PICK(idx, SPAN(all, N_LARGE), NO_IDX, 8, IDX(0, 1, 2, 3, 4, 5, 6, 7));
        CHECK_PICK(idx, SPAN(odd, N_LARGE / 2), NO_IDX, 8, IDX(1, 3, 5, 7, 9, 11, 13, 15));
        CHECK_PICK(idx, SPAN(all, N_LARGE), IDX(4095), 8, IDX(4095, 4088, 4089, 4090, 4091, 4092, 4093, 4094));
        /* two whole switches of root port 0; with odd ones only, four half switches */
        CHECK_PICK(idx, SPAN(all, N_LARGE), NO_IDX, 16,
                   IDX(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
        CHECK_PICK(idx, SPAN(odd, N_LARGE / 2), NO_IDX, 16,
                   IDX(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31));
        ck_assert_uint_eq(kdp_preferred_distance(idx, 0, 1), 2);
        ck_assert_uint_eq(kdp_preferred_distance(idx, 0, 7), 2);      /* same switch */
        ck_assert_uint_eq(kdp_preferred_distance(idx, 0, 8), 4);      /* same root port */
        ck_assert_uint_eq(kdp_preferred_distance(idx, 0, 64), 6);     /* same host bridge */
        ck_assert_uint_eq(kdp_preferred_distance(idx, 0, 512), 8);    /* same NUMA node */
        ck_assert_uint_eq(kdp_preferred_distance(idx, 0, 4095), 10);

        /* 1000 picks with a moving must_include: always 8 distinct available devices */
        for (size_t round = 0; round < 1000; round++) {
                size_t must = (round * 37) % N_LARGE, n;

                n = kdp_preferred_pick(idx, all, N_LARGE, &must, 1, 8, picked);
                ck_assert_uint_eq(n, 8);
                ck_assert_uint_eq(picked[0], must);
                seen = calloc(N_LARGE, 1);
                ck_assert_ptr_nonnull(seen);
                for (size_t i = 0; i < n; i++) {
                        ck_assert_uint_lt(picked[i], N_LARGE);
                        ck_assert_uint_eq(seen[picked[i]], 0);
                        seen[picked[i]] = 1;
                        /* all 8 from the must_include device's switch */
                        ck_assert_uint_eq(picked[i] / 8, must / 8);
                }
                free(KDP_TAKE_PTR(seen));
        }
}
END_TEST

START_TEST(test_preferred_pick_4096_devices_without_topology_takes_lowest) {
        _cleanup_free_ test_device *t = calloc(N_LARGE, sizeof(test_device));
        _cleanup_free_ size_t *all = calloc(N_LARGE, sizeof(size_t));
        _cleanup_(kdp_preferred_index_freep) kdp_preferred_index *idx = NULL;

        ck_assert_ptr_nonnull(t);
        ck_assert_ptr_nonnull(all);
        for (size_t i = 0; i < N_LARGE; i++) {
                t[i] = (test_device){ "x", -1, NULL };
                all[i] = N_LARGE - 1 - i;
        }
        idx = index_from(t, N_LARGE);
        CHECK_PICK(idx, SPAN(all + 100, N_LARGE - 100), IDX(4095), 8, IDX(4095, 0, 1, 2, 3, 4, 5, 6));
}
END_TEST

typedef struct pick_thread {
        const kdp_preferred_index *idx;
        size_t mismatches;
} pick_thread;

static void *pick_thread_run(void *userdata) {
        pick_thread *pt = userdata;
        const size_t avail[] = { 0, 2, 3, 4, 5, 6, 7 };

        for (unsigned i = 0; i < 2000; i++) {
                size_t picked[2] = { 0 };
                size_t n = kdp_preferred_pick(pt->idx, avail, KDP_ELEMENTSOF(avail), NULL, 0, 2, picked);

                if (n != 2 || picked[0] != 2 || picked[1] != 3)
                        pt->mismatches++;
        }
        return NULL;
}

START_TEST(test_preferred_pick_concurrent_on_one_index) {
        _cleanup_(kdp_preferred_index_freep) kdp_preferred_index *idx =
                index_from(gpus, KDP_ELEMENTSOF(gpus));
        pthread_t threads[4];
        pick_thread pt[4];

        for (size_t i = 0; i < KDP_ELEMENTSOF(threads); i++) {
                pt[i] = (pick_thread){ .idx = idx };
                ck_assert_int_eq(pthread_create(&threads[i], NULL, pick_thread_run, &pt[i]), 0);
        }
        for (size_t i = 0; i < KDP_ELEMENTSOF(threads); i++) {
                ck_assert_int_eq(pthread_join(threads[i], NULL), 0);
                ck_assert_uint_eq(pt[i].mismatches, 0);
        }
}
END_TEST

/*
 * P and Q of preferred.h for a pick on large_index with every device
 * available: its devices sit at depth 5, below groups of 2048 (NUMA node),
 * 512 (host bridge), 64 (root port) and 8 (switch) devices, and a pair
 * counts one for each group that holds both.
 */
static void large_score(const size_t *picked, size_t n, long *ret_p, long *ret_q) {
        static const size_t groups[] = { 2048, 512, 64, 8 };
        _cleanup_free_ bool *taken = calloc(N_LARGE, sizeof(bool));
        _cleanup_free_ long *in = calloc(N_LARGE, sizeof(long)), *left = calloc(N_LARGE, sizeof(long));

        ck_assert_ptr_nonnull(taken);
        ck_assert_ptr_nonnull(in);
        ck_assert_ptr_nonnull(left);
        for (size_t i = 0; i < n; i++)
                taken[picked[i]] = true;
        *ret_p = *ret_q = 0;
        for (size_t g = 0; g < KDP_ELEMENTSOF(groups); g++) {
                memset(in, 0, N_LARGE * sizeof(long));
                memset(left, 0, N_LARGE * sizeof(long));
                for (size_t d = 0; d < N_LARGE; d++) {
                        in[d / groups[g]] += taken[d];
                        left[d / groups[g]] += !taken[d];
                }
                for (size_t j = 0; j < N_LARGE / groups[g]; j++) {
                        *ret_p += in[j] * (in[j] - 1) / 2;
                        *ret_q += left[j] * (left[j] - 1) / 2;
                }
        }
}

/* The smallest group of large_index (8, 64, 512, 2048 or all 4096 devices) holding `size` and all of must. */
static size_t large_group(const size_t *must, size_t n_must, size_t size) {
        static const size_t groups[] = { 8, 64, 512, 2048 };

        for (size_t g = 0; g < KDP_ELEMENTSOF(groups); g++) {
                bool together = groups[g] >= size;

                for (size_t i = 1; i < n_must && together; i++)
                        together = must[i] / groups[g] == must[0] / groups[g];
                if (together)
                        return groups[g];
        }
        return N_LARGE;
}

/*
 * A valid answer of `size` on large_index with every device available: M
 * first, then distinct devices ascending, none of M, all in one group of the
 * deepest kind that can hold them (criterion 1).
 */
static void check_large_answer(const size_t *picked, size_t n, const size_t *must, size_t n_must, size_t size,
                               const char *what) {
        size_t group = large_group(must, n_must, size), first = n_must > 0 ? must[0] : picked[0];

        ck_assert_msg(n == size, "%s: %zu picked", what, n);
        for (size_t i = 0; i < n; i++) {
                ck_assert_msg(picked[i] < N_LARGE, "%s: %zu out of range", what, picked[i]);
                ck_assert_msg(i >= n_must || picked[i] == must[i], "%s: %zu where must_include has %zu",
                              what, picked[i], must[i]);
                ck_assert_msg(i < n_must || !contains_index(must, n_must, picked[i]), "%s: %zu twice", what,
                              picked[i]);
                ck_assert_msg(i <= n_must || picked[i - 1] < picked[i], "%s: %zu after %zu", what, picked[i],
                              picked[i - 1]);
                ck_assert_msg(picked[i] / group == first / group, "%s: %zu outside the group of %zu of %zu",
                              what, picked[i], group, first);
        }
}

/*
 * A request for 2000 or 3000 of 4096 devices (two NUMA nodes of 2048)
 * needs 26 to 70 MB of exact tables: under the default limits it takes the
 * scored method, whose answer scores as the exact one does (the reference
 * sets: the exact method's answers without limits, checked here for 2000);
 * without room for tables, the greedy one. Both answers are valid sets in
 * the deepest group that can hold them.
 */
START_TEST(test_preferred_pick_huge_request_stays_within_limits) {
        static const kdp_preferred_limits unlimited = {
                .table_bytes = SIZE_MAX,
                .operations = UINT64_MAX,
                .method = KDP_PREFERRED_EXACT,
        };
        static const struct {
                size_t size;
                size_t must[2];
                size_t n_must;
                size_t ranges[6][2];    /* the reference after M: [from, to) */
        } cases[] = {
                { 2000, { 0 }, 0, { { 0, 2000 } } },
                { 2000, { 4095 }, 1, { { 2048, 4040 }, { 4088, 4095 } } },
                { 2000, { 5, 4000 }, 2, { { 0, 5 }, { 6, 1999 } } },
                { 3000, { 0 }, 0, { { 0, 3000 } } },
                { 3000, { 4095 }, 1, { { 0, 2560 }, { 3584, 3968 }, { 4032, 4080 }, { 4088, 4095 } } },
                { 3000, { 5, 4000 }, 2, { { 0, 5 }, { 6, 2560 }, { 3584, 4000 }, { 4001, 4024 } } },
        };
        _cleanup_(kdp_preferred_index_freep) kdp_preferred_index *idx = large_index();
        _cleanup_free_ size_t *all = calloc(N_LARGE, sizeof(size_t));
        _cleanup_free_ size_t *picked = calloc(N_LARGE + 1, sizeof(size_t));
        _cleanup_free_ size_t *reference = calloc(N_LARGE, sizeof(size_t));

        ck_assert_ptr_nonnull(all);
        ck_assert_ptr_nonnull(picked);
        ck_assert_ptr_nonnull(reference);
        for (size_t i = 0; i < N_LARGE; i++)
                all[i] = N_LARGE - 1 - i;

        for (size_t z = 0; z < KDP_ELEMENTSOF(cases); z++) {
                size_t size = cases[z].size, n_must = cases[z].n_must, n_ref = n_must, n;
                kdp_preferred_method method = _KDP_PREFERRED_METHOD_INVALID;
                long p, q, ref_p, ref_q;
                char what[64];

                memcpy(reference, cases[z].must, n_must * sizeof(size_t));
                for (size_t r = 0; r < 6 && cases[z].ranges[r][1] > 0; r++)
                        for (size_t d = cases[z].ranges[r][0]; d < cases[z].ranges[r][1]; d++)
                                reference[n_ref++] = d;
                ck_assert_uint_eq(n_ref, size);
                large_score(reference, size, &ref_p, &ref_q);

                snprintf(what, sizeof(what), "size %zu, %zu must (scored)", size, n_must);
                picked[size] = SIZE_MAX;
                n = kdp_preferred_pick_limited(idx, all, N_LARGE, cases[z].must, n_must, size, &default_limits,
                                               picked, &method);
                ck_assert_int_eq(method, KDP_PREFERRED_SCORED);
                ck_assert_uint_eq(picked[size], SIZE_MAX);
                check_large_answer(picked, n, cases[z].must, n_must, size, what);
                large_score(picked, n, &p, &q);
                ck_assert_msg(p == ref_p && q == ref_q, "%s: P %ld Q %ld, exact P %ld Q %ld", what, p, q, ref_p, ref_q);
                /* kdp_preferred_pick is the same under the default limits */
                ck_assert_uint_eq(kdp_preferred_pick(idx, all, N_LARGE, cases[z].must, n_must, size, reference), size);
                ck_assert_mem_eq(reference, picked, size * sizeof(size_t));

                snprintf(what, sizeof(what), "size %zu, %zu must (greedy)", size, n_must);
                n = kdp_preferred_pick_limited(idx, all, N_LARGE, cases[z].must, n_must, size, &no_tables,
                                               picked, &method);
                ck_assert_int_eq(method, KDP_PREFERRED_GREEDY);
                check_large_answer(picked, n, cases[z].must, n_must, size, what);

                if (size == 2000) {
                        /* the reference is the exact answer */
                        memcpy(reference, cases[z].must, n_must * sizeof(size_t));
                        for (size_t r = 0, k = n_must; r < 6 && cases[z].ranges[r][1] > 0; r++)
                                for (size_t d = cases[z].ranges[r][0]; d < cases[z].ranges[r][1]; d++)
                                        reference[k++] = d;
                        n = kdp_preferred_pick_limited(idx, all, N_LARGE, cases[z].must, n_must, size, &unlimited,
                                                       picked, &method);
                        ck_assert_int_eq(method, KDP_PREFERRED_EXACT);
                        ck_assert_uint_eq(n, size);
                        ck_assert_mem_eq(picked, reference, size * sizeof(size_t));
                }
        }
}
END_TEST

/* 4096 VFs: 2 NUMA nodes × 4 host bridges × 8 root ports, each with one PF and its 64 VFs beside it. */
static kdp_preferred_index *vf_index(void) {
        _cleanup_free_ test_device *t = calloc(N_LARGE, sizeof(test_device));
        _cleanup_free_ char *paths = calloc(N_LARGE, 96);

        ck_assert_ptr_nonnull(t);
        ck_assert_ptr_nonnull(paths);
        for (unsigned i = 0; i < N_LARGE; i++) {
                unsigned hb = i / 512, rp = i / 64 % 8, vf = 1 + i % 64;

                snprintf(paths + 96 * i, 96, "pci%04x:%02x/%04x:%02x:%02x.0/%04x:%02x:%02x.%u",
                         hb, hb, hb, hb, rp + 1, hb, 16 + rp, vf / 8, vf % 8);
                t[i] = (test_device){ "vf", (int) (i / 2048), paths + 96 * i };
        }
        return index_from(t, N_LARGE);
}

/*
 * The requests a node sees, GPUs 1 to 16 (large_index: 8 per switch) and
 * VFs 1 to 64 (64 per PF), with every device available and with random
 * halves, with and without a must_include device, and 256 of each with
 * every device available: all answered by the exact method under the
 * default limits.
 */
START_TEST(test_preferred_pick_realistic_requests_stay_exact) {
        _cleanup_(kdp_preferred_index_freep) kdp_preferred_index *gpu = large_index();
        _cleanup_(kdp_preferred_index_freep) kdp_preferred_index *vf = vf_index();
        _cleanup_free_ size_t *avail = calloc(N_LARGE, sizeof(size_t));
        _cleanup_free_ size_t *picked = calloc(N_LARGE, sizeof(size_t));
        uint64_t state = 16;

        ck_assert_ptr_nonnull(avail);
        ck_assert_ptr_nonnull(picked);
        for (unsigned kind = 0; kind < 2; kind++)
                for (unsigned draw = 0; draw < 4; draw++) {
                        const kdp_preferred_index *idx = kind == 0 ? gpu : vf;
                        size_t n_avail = 0, max_size = kind == 0 ? 16 : 64;

                        for (size_t d = 0; d < N_LARGE; d++)
                                if (draw == 0 || random_below(&state, 2) == 0)
                                        avail[n_avail++] = d;
                        for (size_t size = 1; size <= max_size; size++)
                                for (size_t with_must = 0; with_must < 2; with_must++) {
                                        size_t must = avail[random_below(&state, n_avail)], n;
                                        kdp_preferred_method method = _KDP_PREFERRED_METHOD_INVALID;

                                        n = kdp_preferred_pick_limited(idx, avail, n_avail, &must, with_must, size,
                                                                       &default_limits, picked, &method);
                                        ck_assert_msg(n == size && method == KDP_PREFERRED_EXACT,
                                                      "%s, draw %u, size %zu, must %zu: %zu picked, method %d",
                                                      kind == 0 ? "gpu" : "vf", draw, size, with_must ? must : SIZE_MAX,
                                                      n, (int) method);
                                }
                        if (draw == 0) {
                                kdp_preferred_method method = _KDP_PREFERRED_METHOD_INVALID;

                                ck_assert_uint_eq(kdp_preferred_pick_limited(idx, avail, n_avail, NULL, 0, 256,
                                                                             &default_limits, picked, &method),
                                                  256);
                                ck_assert_int_eq(method, KDP_PREFERRED_EXACT);
                        }
                }
}
END_TEST

static Suite *preferred_suite(void) {
        Suite *s = suite_create("preferred");
        TCase *tc;

        tc = tcase_create("locality");
        tcase_set_timeout(tc, 10);
        tcase_add_test(tc, test_preferred_pick_size_two_takes_a_switch_pair);
        tcase_add_test(tc, test_preferred_pick_switch_pair_on_the_other_numa_node);
        tcase_add_test(tc, test_preferred_pick_size_four_takes_one_numa_node);
        tcase_add_test(tc, test_preferred_pick_must_include_takes_partner_on_same_switch);
        tcase_add_test(tc, test_preferred_pick_must_include_across_numa_nodes_fills_near_them);
        tcase_add_test(tc, test_preferred_pick_fragmented_takes_best_fit);
        tcase_add_test(tc, test_preferred_pick_best_fit_prefers_the_fuller_neighbourhood);
        tcase_add_test(tc, test_preferred_pick_tied_subtrees_compare_their_picks);
        suite_add_tcase(s, tc);

        tc = tcase_create("request");
        tcase_set_timeout(tc, 10);
        tcase_add_test(tc, test_preferred_pick_size_above_available_returns_all);
        tcase_add_test(tc, test_preferred_pick_ignores_duplicate_and_unknown_available);
        tcase_add_test(tc, test_preferred_pick_must_include_not_available_comes_first);
        tcase_add_test(tc, test_preferred_pick_must_include_keeps_order_drops_duplicates_caps_at_size);
        tcase_add_test(tc, test_preferred_pick_size_zero_picks_nothing);
        tcase_add_test(tc, test_preferred_pick_empty_index_picks_nothing);
        suite_add_tcase(s, tc);

        tc = tcase_create("topology");
        tcase_set_timeout(tc, 10);
        tcase_add_test(tc, test_preferred_pick_without_topology_takes_lowest_indices);
        tcase_add_test(tc, test_preferred_pick_numa_without_pci_path_prefers_one_node);
        tcase_add_test(tc, test_preferred_pick_pci_path_without_numa_uses_pci_locality);
        tcase_add_test(tc, test_preferred_distance_counts_tree_edges);
        suite_add_tcase(s, tc);

        tc = tcase_create("exhaustive");
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, test_preferred_pick_matches_exhaustive_search);
        tcase_add_test(tc, test_preferred_pick_no_swap_improves_on_larger_trees);
        tcase_add_test(tc, test_preferred_pick_under_limits_keeps_each_methods_promise);
        suite_add_tcase(s, tc);

        tc = tcase_create("scale");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_preferred_pick_4096_devices_returns_distinct_best_fit);
        tcase_add_test(tc, test_preferred_pick_4096_devices_without_topology_takes_lowest);
        tcase_add_test(tc, test_preferred_pick_concurrent_on_one_index);
        suite_add_tcase(s, tc);

        tc = tcase_create("limits");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_preferred_pick_huge_request_stays_within_limits);
        tcase_add_test(tc, test_preferred_pick_realistic_requests_stay_exact);
        suite_add_tcase(s, tc);

        return s;
}

int main(void) {
        return kdp_test_run(preferred_suite());
}
