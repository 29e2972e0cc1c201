/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <check.h>
#include <math.h>
#include <stdint.h>

#include <kdp/cleanup.h>

#include "exposition.h"

#include "kdp-test.h"

/* Runs the statements after `f` with `f` a stream into `text` (free()). */
#define WRITTEN(text, size, f, ...)                                     \
        do {                                                            \
                f = open_memstream(&(text), &(size));                   \
                ck_assert_ptr_nonnull(f);                               \
                __VA_ARGS__;                                            \
                ck_assert_int_eq(fclose(f), 0);                         \
        } while (0)

static const uint64_t bounds[] = { 1000, 500000, 10000000000 };         /* 1 µs, 0.5 ms, 10 s */

START_TEST(test_exposition_histogram_is_cumulative_with_inf_sum_and_count) {
        _cleanup_free_ char *text = NULL;
        kdp_histogram h;
        size_t size = 0;
        FILE *f;

        kdp_exposition_histogram_init(&h, bounds, KDP_ELEMENTSOF(bounds));
        kdp_exposition_histogram_observe(&h, 1000);             /* on a bound: in its bucket */
        kdp_exposition_histogram_observe(&h, 200000);
        kdp_exposition_histogram_observe(&h, 300000);
        kdp_exposition_histogram_observe(&h, 20000000000);      /* above every bound: +Inf only */
        WRITTEN(text, size, f, kdp_exposition_histogram(f, "kdp_x_seconds",
                (const kdp_exposition_label[]){ { "resource", "example.com/widget" }, { 0 } }, &h));
        ck_assert_str_eq(text,
                         "kdp_x_seconds_bucket{resource=\"example.com/widget\",le=\"1e-06\"} 1\n"
                         "kdp_x_seconds_bucket{resource=\"example.com/widget\",le=\"0.0005\"} 3\n"
                         "kdp_x_seconds_bucket{resource=\"example.com/widget\",le=\"10\"} 3\n"
                         "kdp_x_seconds_bucket{resource=\"example.com/widget\",le=\"+Inf\"} 4\n"
                         "kdp_x_seconds_sum{resource=\"example.com/widget\"} 20.000501\n"
                         "kdp_x_seconds_count{resource=\"example.com/widget\"} 4\n");
}
END_TEST

START_TEST(test_exposition_empty_histogram_without_labels) {
        _cleanup_free_ char *text = NULL;
        kdp_histogram h;
        size_t size = 0;
        FILE *f;

        kdp_exposition_histogram_init(&h, bounds, 1);
        WRITTEN(text, size, f, kdp_exposition_histogram(f, "kdp_y_seconds", NULL, &h));
        ck_assert_str_eq(text,
                         "kdp_y_seconds_bucket{le=\"1e-06\"} 0\n"
                         "kdp_y_seconds_bucket{le=\"+Inf\"} 0\n"
                         "kdp_y_seconds_sum 0\n"
                         "kdp_y_seconds_count 0\n");
}
END_TEST

START_TEST(test_exposition_escapes_label_values_and_help) {
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        FILE *f;

        WRITTEN(text, size, f,
                kdp_exposition_family(f, "kdp_z_total", "counter", "A \"quoted\" back\\slash\nand a new line.");
                kdp_exposition_u64(f, "kdp_z_total", (const kdp_exposition_label[]){
                        { "reason", "say \"hi\"\\now\nthen\ttab \xc3\xa9" }, { "b", "" }, { 0 } }, 18446744073709551615u));
        ck_assert_str_eq(text,
                         "# HELP kdp_z_total A \"quoted\" back\\\\slash\\nand a new line.\n"
                         "# TYPE kdp_z_total counter\n"
                         "kdp_z_total{reason=\"say \\\"hi\\\"\\\\now\\nthen?tab ??\",b=\"\"} 18446744073709551615\n");
}
END_TEST

START_TEST(test_exposition_numbers_read_back) {
        static const struct {
                double v;
                const char *text;
        } cases[] = {
                { 0, "0" }, { 10, "10" }, { 20000, "20000" }, { -3, "-3" }, { 0.0005, "0.0005" },
                { 2.5e-05, "2.5e-05" }, { 0.1, "0.1" }, { 1796215540.28, "1796215540.28" }, { 1e300, "1e+300" },
                { INFINITY, "+Inf" }, { -INFINITY, "-Inf" }, { NAN, "NaN" },
        };

        for (size_t i = 0; i < KDP_ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *text = NULL;
                char want[64];
                size_t size = 0;
                FILE *f;

                WRITTEN(text, size, f, kdp_exposition_double(f, "g", NULL, cases[i].v));
                snprintf(want, sizeof(want), "g %s\n", cases[i].text);
                ck_assert_str_eq(text, want);
        }
}
END_TEST

static Suite *exposition_suite(void) {
        Suite *s = suite_create("exposition");
        TCase *tc = tcase_create("format");

        tcase_set_timeout(tc, 10);
        tcase_add_test(tc, test_exposition_histogram_is_cumulative_with_inf_sum_and_count);
        tcase_add_test(tc, test_exposition_empty_histogram_without_labels);
        tcase_add_test(tc, test_exposition_escapes_label_values_and_help);
        tcase_add_test(tc, test_exposition_numbers_read_back);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return kdp_test_run(exposition_suite());
}
