/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <check.h>
#include <stdint.h>

#include "log-limit.h"

#include "kdp-test.h"

#define SEC 1000000u

START_TEST(test_log_limit_allows_a_burst_per_window_and_counts_the_rest) {
        kdp_log_limit l;
        uint64_t suppressed = 99;

        kdp_log_limit_init(&l, 3, 10 * SEC);
        /* window 1 starts at t=100 s: three lines, then 4 dropped */
        for (int i = 0; i < 3; i++) {
                ck_assert(kdp_log_limit_allow(&l, 100 * SEC + (uint64_t) i, &suppressed));
                ck_assert_uint_eq(suppressed, 0);
        }
        for (int i = 0; i < 4; i++)
                ck_assert(!kdp_log_limit_allow(&l, 109 * SEC + 999999u, &suppressed));
        ck_assert_uint_eq(suppressed, 0);

        /* 10 s after the window started: a new one; the first line hands out the 4, once */
        ck_assert(kdp_log_limit_allow(&l, 110 * SEC, &suppressed));
        ck_assert_uint_eq(suppressed, 4);
        ck_assert(kdp_log_limit_allow(&l, 110 * SEC, &suppressed));
        ck_assert_uint_eq(suppressed, 0);
        ck_assert(kdp_log_limit_allow(&l, 110 * SEC, &suppressed));
        ck_assert(!kdp_log_limit_allow(&l, 110 * SEC, &suppressed));

        /* a long quiet time: the one dropped line is reported with the next */
        ck_assert(kdp_log_limit_allow(&l, 1000 * SEC, &suppressed));
        ck_assert_uint_eq(suppressed, 1);
        kdp_log_limit_done(&l);
}
END_TEST

START_TEST(test_log_limit_starts_a_window_when_the_clock_goes_back) {
        kdp_log_limit l;
        uint64_t suppressed = 0;

        kdp_log_limit_init(&l, 1, 10 * SEC);
        ck_assert(kdp_log_limit_allow(&l, 50 * SEC, &suppressed));
        ck_assert(!kdp_log_limit_allow(&l, 50 * SEC, &suppressed));
        ck_assert(kdp_log_limit_allow(&l, 40 * SEC, &suppressed));
        ck_assert_uint_eq(suppressed, 1);
        kdp_log_limit_done(&l);
}
END_TEST

START_TEST(test_log_limit_of_zero_drops_every_line) {
        kdp_log_limit l;
        uint64_t suppressed = 7;

        kdp_log_limit_init(&l, 0, 10 * SEC);
        ck_assert(!kdp_log_limit_allow(&l, 0, &suppressed));
        ck_assert(!kdp_log_limit_allow(&l, 20 * SEC, &suppressed));
        ck_assert_uint_eq(suppressed, 7);
        kdp_log_limit_done(&l);
}
END_TEST

static Suite *log_limit_suite(void) {
        Suite *s = suite_create("log-limit");
        TCase *tc = tcase_create("allow");

        tcase_set_timeout(tc, 10);
        tcase_add_test(tc, test_log_limit_allows_a_burst_per_window_and_counts_the_rest);
        tcase_add_test(tc, test_log_limit_starts_a_window_when_the_clock_goes_back);
        tcase_add_test(tc, test_log_limit_of_zero_drops_every_line);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return kdp_test_run(log_limit_suite());
}
