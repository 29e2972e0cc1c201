/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench-preferred [PICKS]: the default GetPreferredAllocation in process
 * (framework/src/daemon/preferred.c), at 4096 devices on three trees:
 *
 *   gpu   2 NUMA nodes × 4 host bridges × 8 root ports × 8 switches × 8 GPUs,
 *         each GPU behind its own downstream port
 *   vf    64 PFs (2 NUMA nodes × 4 host bridges × 8 root ports) × 64 VFs,
 *         the VFs only, as functions beside their PF
 *   flat  no NUMA node, no pci_path
 *
 * For each tree: the index build (p50 of 50, and the heap it holds, from
 * mallinfo2), then one pick at sizes 1, 2, 4, 8, 16, 64, 256 with two kinds
 * of available set, without must_include (the kubelet's `none` policy):
 * `all` (every device; many subtrees tie) and `half` (each device with
 * probability 1/2, 64 sets drawn in advance and used in turn). PICKS picks
 * per case (default 2000, 200 from size 64 up), after 20 untimed ones.
 * Then the large requests, sizes 256, 1024, 2000 and 3000, with `all` and
 * `most` available (each device with probability 3/4), 5 picks each after one untimed: CPU time (p50 and max) and the heap one
 * pick allocates at its peak (`peak_bytes`, the most of the 5: the bench
 * replaces malloc and friends to count it; not in a sanitizer build), and
 * the method the pick took (preferred.h: exact, scored or greedy).
 * Prints one name=value line per figure, times in µs: wall clock, and the
 * thread's CPU time (`cpu`), which a busy machine inflates less. Not run by
 * ctest.
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "preferred.h"

#define N_DEVICES 4096
#define N_SETS 64
#define BUILD_REPS 50
#define LARGE_PICKS 5

#ifdef __SANITIZE_ADDRESS__
#define HEAP_COUNTED 0
#else
#define HEAP_COUNTED 1

/* The heap in use and its high-water mark (one thread: the bench's). */
static size_t heap_now, heap_peak;

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);
void __libc_free(void *p);

static void *heap_count(void *p) {
        if (p) {
                heap_now += malloc_usable_size(p);
                if (heap_now > heap_peak)
                        heap_peak = heap_now;
        }
        return p;
}

void *malloc(size_t n) {
        return heap_count(__libc_malloc(n));
}

void *calloc(size_t n, size_t size) {
        return heap_count(__libc_calloc(n, size));
}

void *realloc(void *p, size_t n) {
        size_t before = p ? malloc_usable_size(p) : 0;
        void *q = __libc_realloc(p, n);

        if (!q)
                return NULL;
        heap_now -= before;
        return heap_count(q);
}

void free(void *p) {
        if (p)
                heap_now -= malloc_usable_size(p);
        __libc_free(p);
}
#endif

/* Starts a measure: the heap in use now, from which the high-water mark is followed. */
static size_t heap_mark(void) {
#if HEAP_COUNTED
        heap_peak = heap_now;
        return heap_now;
#else
        return 0;
#endif
}

static size_t heap_high(void) {
#if HEAP_COUNTED
        return heap_peak;
#else
        return 0;
#endif
}

static uint64_t clock_ns(clockid_t clock) {
        struct timespec ts;

        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static int compare_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

/* nearest-rank percentile of a sorted array */
static uint64_t percentile(const uint64_t *v, size_t n, unsigned p) {
        size_t i = (n * p + 99) / 100;

        return v[i ? i - 1 : 0];
}

static uint64_t random_next(uint64_t *state) {
        uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
}

/* Fills devs[i].pci_path and NUMA node for tree `kind`; paths live in `paths` (96 bytes each). */
static void make_tree(const char *kind, kdp_device *devs, char *paths) {
        for (unsigned i = 0; i < N_DEVICES; i++) {
                char *path = paths + 96 * i;
                unsigned numa = i / 2048, hb = i / 512, rp = i / 64 % 8;

                devs[i] = (kdp_device){ 0 };
                if (strcmp(kind, "gpu") == 0) {
                        unsigned sw = i / 8 % 64, port = i % 8, bus = 2 + 3 * sw;

                        /* host bridge, root port, switch upstream port, downstream port, GPU */
                        snprintf(path, 96, "pci%04x:%02x/%04x:%02x:%02x.0/%04x:%02x:00.0/%04x:%02x:%02x.0/%04x:%02x:00.0",
                                 hb, hb, hb, hb, rp + 1, hb, bus, hb, bus + 1, port, hb, bus + 2);
                } else if (strcmp(kind, "vf") == 0) {
                        unsigned vf = 1 + i % 64;

                        /* host bridge, root port, VF function (the PF is function 0 of the same bus) */
                        snprintf(path, 96, "pci%04x:%02x/%04x:%02x:%02x.0/%04x:%02x:%02x.%u",
                                 hb, hb, hb, hb, rp + 1, hb, 16 + rp, vf / 8, vf % 8);
                } else {
                        path = NULL;
                }
                devs[i].pci_path = path;
                if (path) {
                        devs[i].numa_nodes[0] = (int) numa;
                        devs[i].n_numa_nodes = 1;
                }
        }
}

static int bench_index(const char *kind, const kdp_device *devs, kdp_preferred_index **ret) {
        uint64_t t[BUILD_REPS], cpu[BUILD_REPS];
        struct mallinfo2 before, after;

        for (unsigned r = 0; r < BUILD_REPS; r++) {
                kdp_preferred_index *idx = NULL;
                uint64_t t0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
                int e = kdp_preferred_index_new(devs, N_DEVICES, &idx);

                t[r] = clock_ns(CLOCK_MONOTONIC) - t0;
                cpu[r] = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
                if (e < 0) {
                        fprintf(stderr, "bench-preferred: index: %s\n", strerror(-e));
                        return e;
                }
                kdp_preferred_index_free(idx);
        }
        qsort(t, BUILD_REPS, sizeof(uint64_t), compare_u64);
        qsort(cpu, BUILD_REPS, sizeof(uint64_t), compare_u64);
        before = mallinfo2();
        if (kdp_preferred_index_new(devs, N_DEVICES, ret) < 0)
                return -ENOMEM;
        after = mallinfo2();
        printf("index_%s_build_p50_us=%.1f\n", kind, percentile(t, BUILD_REPS, 50) / 1e3);
        printf("index_%s_build_cpu_p50_us=%.1f\n", kind, percentile(cpu, BUILD_REPS, 50) / 1e3);
        printf("index_%s_bytes=%zu\n", kind, after.uordblks - before.uordblks);
        return 0;
}

static int bench_picks(const char *kind, const kdp_preferred_index *idx, size_t picks) {
        static const size_t sizes[] = { 1, 2, 4, 8, 16, 64, 256 };
        size_t *sets = calloc(N_SETS * N_DEVICES, sizeof(size_t)), n_set[N_SETS];
        size_t *picked = calloc(256, sizeof(size_t)), *all = calloc(N_DEVICES, sizeof(size_t));
        uint64_t *t = calloc(picks, sizeof(uint64_t)), *cpu = calloc(picks, sizeof(uint64_t)), state = 4096;
        int r = 0;

        if (!sets || !picked || !all || !t || !cpu) {
                r = -ENOMEM;
                picks = 0;
        }
        for (size_t d = 0; d < N_DEVICES && all; d++)
                all[d] = d;
        for (size_t s = 0; s < N_SETS && picks > 0; s++) {
                n_set[s] = 0;
                for (size_t d = 0; d < N_DEVICES; d++)
                        if (random_next(&state) & 1)
                                sets[s * N_DEVICES + n_set[s]++] = d;
        }
        for (size_t half = 0; half < 2 && picks > 0; half++)
                for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
                        size_t n = sizes[z] >= 64 && picks > 200 ? 200 : picks;

                        for (size_t i = 0; i < n + 20; i++) {
                                const size_t *avail = half ? sets + (i % N_SETS) * N_DEVICES : all;
                                size_t n_avail = half ? n_set[i % N_SETS] : N_DEVICES, got;
                                uint64_t t0, c0;

                                t0 = clock_ns(CLOCK_MONOTONIC);
                                c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
                                got = kdp_preferred_pick(idx, avail, n_avail, NULL, 0, sizes[z], picked);
                                if (i >= 20) {
                                        cpu[i - 20] = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
                                        t[i - 20] = clock_ns(CLOCK_MONOTONIC) - t0;
                                }
                                if (got != sizes[z]) {
                                        fprintf(stderr, "bench-preferred: %zu picked of %zu\n", got, sizes[z]);
                                        r = -EIO;
                                }
                        }
                        qsort(t, n, sizeof(uint64_t), compare_u64);
                        qsort(cpu, n, sizeof(uint64_t), compare_u64);
                        printf("pick_%s_%s_size%zu_p50_us=%.1f\n", kind, half ? "half" : "all", sizes[z],
                               percentile(t, n, 50) / 1e3);
                        printf("pick_%s_%s_size%zu_p99_us=%.1f\n", kind, half ? "half" : "all", sizes[z],
                               percentile(t, n, 99) / 1e3);
                        printf("pick_%s_%s_size%zu_cpu_p50_us=%.1f\n", kind, half ? "half" : "all", sizes[z],
                               percentile(cpu, n, 50) / 1e3);
                        printf("pick_%s_%s_size%zu_cpu_p99_us=%.1f\n", kind, half ? "half" : "all", sizes[z],
                               percentile(cpu, n, 99) / 1e3);
                        fflush(stdout);
                }
        free(sets);
        free(picked);
        free(all);
        free(t);
        free(cpu);
        return r;
}

static const char *const method_names[_KDP_PREFERRED_METHOD_MAX] = {
        [KDP_PREFERRED_EXACT] = "exact",
        [KDP_PREFERRED_SCORED] = "scored",
        [KDP_PREFERRED_GREEDY] = "greedy",
        [KDP_PREFERRED_NO_MEMORY] = "no-memory",
};

/* The large requests: a few picks each, CPU time, peak heap and method per pick. */
static int bench_large(const char *kind, const kdp_preferred_index *idx) {
        static const size_t sizes[] = { 256, 1024, 2000, 3000 };
        static const kdp_preferred_limits limits = {
                .table_bytes = KDP_PREFERRED_TABLE_BYTES_MAX,
                .operations = KDP_PREFERRED_OPERATIONS_MAX,
                .method = KDP_PREFERRED_EXACT,
        };
        size_t *most = calloc(N_DEVICES, sizeof(size_t)), *all = calloc(N_DEVICES, sizeof(size_t));
        size_t *picked = calloc(N_DEVICES, sizeof(size_t)), n_most = 0;
        uint64_t state = 1024, cpu[LARGE_PICKS];
        int r = 0;

        if (!most || !all || !picked) {
                free(most);
                free(all);
                free(picked);
                return -ENOMEM;
        }
        for (size_t d = 0; d < N_DEVICES; d++) {
                all[d] = d;
                if (random_next(&state) & 3)
                        most[n_most++] = d;
        }
        for (size_t h = 0; h < 2; h++)
                for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
                        const size_t *avail = h ? most : all;
                        size_t n_avail = h ? n_most : N_DEVICES, want = sizes[z] < n_avail ? sizes[z] : n_avail;
                        size_t peak = 0;
                        kdp_preferred_method method = KDP_PREFERRED_EXACT;

                        for (size_t i = 0; i < LARGE_PICKS + 1; i++) {
                                size_t got, start;
                                uint64_t c0;

                                start = heap_mark();
                                c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
                                got = kdp_preferred_pick_limited(idx, avail, n_avail, NULL, 0, sizes[z], &limits,
                                                                 picked, &method);
                                if (i > 0)
                                        cpu[i - 1] = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
                                if (heap_high() - start > peak)
                                        peak = heap_high() - start;
                                if (got != want) {
                                        fprintf(stderr, "bench-preferred: %zu picked of %zu\n", got, want);
                                        r = -EIO;
                                }
                        }
                        qsort(cpu, LARGE_PICKS, sizeof(uint64_t), compare_u64);
                        printf("large_%s_%s_size%zu_cpu_p50_us=%.1f\n", kind, h ? "most" : "all", sizes[z],
                               percentile(cpu, LARGE_PICKS, 50) / 1e3);
                        printf("large_%s_%s_size%zu_cpu_max_us=%.1f\n", kind, h ? "most" : "all", sizes[z],
                               cpu[LARGE_PICKS - 1] / 1e3);
                        if (HEAP_COUNTED)
                                printf("large_%s_%s_size%zu_peak_bytes=%zu\n", kind, h ? "most" : "all", sizes[z],
                                       peak);
                        printf("large_%s_%s_size%zu_method=%s\n", kind, h ? "most" : "all", sizes[z],
                               method_names[method]);
                        fflush(stdout);
                }
        free(most);
        free(all);
        free(picked);
        return r;
}

int main(int argc, char **argv) {
        static const char *const kinds[] = { "gpu", "vf", "flat" };
        size_t picks = argc > 1 ? strtoul(argv[1], NULL, 10) : 2000;
        kdp_device *devs = calloc(N_DEVICES, sizeof(kdp_device));
        char *paths = calloc(N_DEVICES, 96);
        int r = 0;

        if (!devs || !paths || picks == 0) {
                fprintf(stderr, "usage: bench-preferred [PICKS > 0]\n");
                free(devs);
                free(paths);
                return 1;
        }
        printf("preferred_devices=%d\npreferred_picks=%zu\n", N_DEVICES, picks);
        for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]) && r == 0; k++) {
                kdp_preferred_index *idx = NULL;

                make_tree(kinds[k], devs, paths);
                r = bench_index(kinds[k], devs, &idx);
                if (r == 0)
                        r = bench_picks(kinds[k], idx, picks);
                if (r == 0)
                        r = bench_large(kinds[k], idx);
                kdp_preferred_index_free(idx);
        }
        free(devs);
        free(paths);
        return r < 0;
}
