/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the in-process benches share: a monotonic clock in nanoseconds and the
 * nearest-rank percentile of a sorted array of samples (sort with bench_stats_cmp_u64).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <time.h>

static inline uint64_t bench_stats_now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static inline int bench_stats_cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

static inline uint64_t bench_stats_pct(const uint64_t *v, size_t n, unsigned p) {
        size_t i = (n * p + 99) / 100;

        return v[i ? i - 1 : 0];
}
