/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The text exposition format and histograms (see exposition.h). */
#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "exposition.h"

void kdp_exposition_histogram_init(kdp_histogram *h, const uint64_t *bounds_ns, size_t n_bounds) {
        assert(n_bounds <= KDP_HISTOGRAM_MAX_BOUNDS);
        h->bounds_ns = bounds_ns;
        h->n_bounds = n_bounds;
        for (size_t i = 0; i <= KDP_HISTOGRAM_MAX_BOUNDS; i++)
                atomic_init(&h->counts[i], 0);
        atomic_init(&h->sum_ns, 0);
}

void kdp_exposition_histogram_observe(kdp_histogram *h, uint64_t ns) {
        size_t i = 0;

        while (i < h->n_bounds && ns > h->bounds_ns[i])
                i++;
        atomic_fetch_add_explicit(&h->counts[i], 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&h->sum_ns, ns, memory_order_relaxed);
}

/* `s` with \ and newline escaped, and " too in a label value; other bytes outside printable ASCII as '?'. */
static void write_escaped(FILE *f, const char *s, bool label) {
        for (; s && *s; s++) {
                unsigned char c = (unsigned char) *s;

                if (c == '\\' || (label && c == '"'))
                        fprintf(f, "\\%c", c);
                else if (c == '\n')
                        fputs("\\n", f);
                else
                        fputc(c >= 0x20 && c < 0x7f ? c : '?', f);
        }
}

/* {a="x",b="y"} with `le` (may be NULL) last; nothing when there are no labels at all. */
static void write_labels(FILE *f, const kdp_exposition_label *labels, const char *le) {
        const char *sep = "{";

        for (size_t i = 0; labels && labels[i].name; i++) {
                fprintf(f, "%s%s=\"", sep, labels[i].name);
                write_escaped(f, labels[i].value, true);
                fputc('"', f);
                sep = ",";
        }
        if (le)
                fprintf(f, "%sle=\"%s\"", sep, le);
        if (le || strcmp(sep, ",") == 0)
                fputc('}', f);
}

/* The shortest text of `v` that reads back as `v`, an integer without exponent; `buf` has room for 32 bytes. */
static const char *number_text(double v, char *buf) {
        if (isnan(v))
                return "NaN";
        if (isinf(v))
                return v > 0 ? "+Inf" : "-Inf";
        if (v == floor(v) && fabs(v) < 1e15) {
                snprintf(buf, 32, "%.0f", v);
                return buf;
        }
        for (int precision = 1; precision <= 17; precision++) {
                snprintf(buf, 32, "%.*g", precision, v);
                if (strtod(buf, NULL) == v)
                        break;
        }
        return buf;
}

void kdp_exposition_number(FILE *f, double v) {
        char buf[32];

        fputs(number_text(v, buf), f);
}

void kdp_exposition_family(FILE *f, const char *name, const char *type, const char *help) {
        fprintf(f, "# HELP %s ", name);
        write_escaped(f, help, false);
        fprintf(f, "\n# TYPE %s %s\n", name, type);
}

void kdp_exposition_u64(FILE *f, const char *name, const kdp_exposition_label *labels, uint64_t value) {
        fputs(name, f);
        write_labels(f, labels, NULL);
        fprintf(f, " %" PRIu64 "\n", value);
}

void kdp_exposition_double(FILE *f, const char *name, const kdp_exposition_label *labels, double value) {
        fputs(name, f);
        write_labels(f, labels, NULL);
        fputc(' ', f);
        kdp_exposition_number(f, value);
        fputc('\n', f);
}

static void write_bucket(FILE *f, const char *name, const kdp_exposition_label *labels, const char *le,
                         uint64_t count) {
        fprintf(f, "%s_bucket", name);
        write_labels(f, labels, le);
        fprintf(f, " %" PRIu64 "\n", count);
}

void kdp_exposition_histogram(FILE *f, const char *name, const kdp_exposition_label *labels, const kdp_histogram *h) {
        uint64_t total = 0;
        char le[32], sample[256];

        for (size_t i = 0; i < h->n_bounds; i++) {
                total += atomic_load_explicit(&h->counts[i], memory_order_relaxed);
                write_bucket(f, name, labels, number_text((double) h->bounds_ns[i] / 1e9, le), total);
        }
        total += atomic_load_explicit(&h->counts[h->n_bounds], memory_order_relaxed);
        write_bucket(f, name, labels, "+Inf", total);
        snprintf(sample, sizeof(sample), "%s_sum", name);
        kdp_exposition_double(f, sample, labels,
                              (double) atomic_load_explicit(&h->sum_ns, memory_order_relaxed) / 1e9);
        snprintf(sample, sizeof(sample), "%s_count", name);
        kdp_exposition_u64(f, sample, labels, total);
}
