/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The Prometheus text exposition format 0.0.4, written to a stdio stream, and
 * the histogram kdpd's threads fill in place.
 *
 *   # HELP name text                       text: \ and newline escaped
 *   # TYPE name counter|gauge|histogram
 *   name{label="value",...} value          value: \, " and newline escaped
 *
 * Any other byte of a label value or help text outside printable ASCII is
 * written as '?': the format wants UTF-8, and kdp's values are ASCII (a
 * backend's free text is the exception). Labels are {name, value} pairs ended
 * by one whose name is NULL; NULL for none.
 *
 * A histogram counts each observation once, in the first bucket whose upper
 * bound holds it (the last bucket: above every bound), with relaxed atomics,
 * so that any thread observes without a lock. Writing it makes the counts
 * cumulative, as the format wants: name_bucket{...,le="B"} for each bound and
 * for "+Inf", then name_sum (seconds) and name_count (the +Inf bucket's). The
 * buckets are read one by one while threads observe: each written line is at
 * least the one before it, and the sum may miss the observation of a call
 * still in progress.
 */
#pragma once

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define KDP_HISTOGRAM_MAX_BOUNDS 16

typedef struct kdp_exposition_label {
        const char *name;
        const char *value;
} kdp_exposition_label;

typedef struct kdp_histogram {
        const uint64_t *bounds_ns;      /* ascending upper bounds in ns; static storage */
        size_t n_bounds;                /* at most KDP_HISTOGRAM_MAX_BOUNDS */
        atomic_uint_least64_t counts[KDP_HISTOGRAM_MAX_BOUNDS + 1];     /* per bucket, not cumulative */
        atomic_uint_least64_t sum_ns;
} kdp_histogram;

void kdp_exposition_histogram_init(kdp_histogram *h, const uint64_t *bounds_ns, size_t n_bounds);
/* Any thread. */
void kdp_exposition_histogram_observe(kdp_histogram *h, uint64_t ns);

/* The HELP and TYPE lines that start a family; every sample of the family follows them at once. */
void kdp_exposition_family(FILE *f, const char *name, const char *type, const char *help);
void kdp_exposition_u64(FILE *f, const char *name, const kdp_exposition_label *labels, uint64_t value);
void kdp_exposition_double(FILE *f, const char *name, const kdp_exposition_label *labels, double value);
void kdp_exposition_histogram(FILE *f, const char *name, const kdp_exposition_label *labels, const kdp_histogram *h);
/* The shortest text that reads back as `v`, integers without exponent ("10", "0.0005", "2.5e-05", "+Inf"). */
void kdp_exposition_number(FILE *f, double v);
