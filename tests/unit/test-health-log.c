/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * health-log.c: a device's health problem is logged when it starts and when it
 * ends, with its flaps; a reason of another cause on the way is logged, the
 * hold's "recovering: " is no other cause.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdp/cleanup.h>
#include <kdp/log.h>

#include "health-log.h"

#include "kdp-test.h"

#define RES "example.com/nic"
#define DOWN "PF ens1 link down"
#define HELD "recovering: PF ens1 link down"

/* Devices "d0".."d<n-1>", reasons[i] NULL: healthy, else unhealthy for it; sorted. */
static void make_list(kdp_device_list *l, const char *const *reasons, unsigned n) {
        ck_assert_int_eq(kdp_device_list_init(l, RES), 0);
        for (unsigned i = 0; i < n; i++) {
                char id[16];
                kdp_device d;

                snprintf(id, sizeof(id), "d%u", i);
                ck_assert_int_eq(kdp_device_from_info(&(kdp_device_info){
                                         .id = id, .health = reasons[i] ? KDP_UNHEALTHY : KDP_HEALTHY,
                                         .health_reason = reasons[i] }, NULL, &d), 0);
                ck_assert_int_eq(kdp_device_list_append(l, &d), 0);
        }
        kdp_device_list_sort(l);
}

/* The resource's lists, one update each: `at` holds the list logged last (NULL: none yet). */
typedef struct history {
        kdp_health_log log;
        kdp_device_list lists[2];
        kdp_device_list *at;
} history;

static void history_done(history *h) {
        kdp_health_log_done(&h->log);
        if (h->at)
                kdp_device_list_done(h->at);
}

/* Logs the change to the list of `reasons` (n devices); returns what was logged (free()). */
static char *update(history *h, const char *const *reasons, unsigned n) {
        kdp_device_list *next = h->at == &h->lists[0] ? &h->lists[1] : &h->lists[0];
        kdp_test_capture cap;

        make_list(next, reasons, n);
        kdp_test_capture_begin(&cap);
        kdp_health_log_update(&h->log, RES, h->at, next, NULL);
        if (h->at)
                kdp_device_list_done(h->at);
        h->at = next;
        return kdp_test_capture_end(&cap);
}

/* Updates to the list of `reasons` and expects exactly `lines` logged (NULL-terminated; each its level, then its text). */
static void expect(history *h, const char *const *reasons, unsigned n, const char *const *lines) {
        _cleanup_free_ char *log = update(h, reasons, n);
        const char *p = log;

        for (size_t i = 0; lines[i]; i++)
                kdp_test_expect_line(&p, lines[i][0], "health-log.c", lines[i] + 1);
        ck_assert_str_eq(p, "");
}

#define NOTHING ((const char *[]){ NULL })
#define LINES(...) ((const char *[]){ __VA_ARGS__, NULL })
#define REASONS(...) ((const char *[]){ __VA_ARGS__ }), (unsigned) (sizeof((const char *[]){ __VA_ARGS__ }) / sizeof(char *))
#define BECAME(id, reason) "W\"Device became unhealthy\" resource=\"" RES "\" device=\"" id "\" reason=\"" reason "\""
#define ANOTHER(id, reason) "I\"Device unhealthy for another reason\" resource=\"" RES "\" device=\"" id "\" reason=\"" reason "\""
#define SAME(id, reason, flaps)                                                                     \
        "I\"Device health reason changed for the same cause\" resource=\"" RES "\" device=\"" id "\" " \
        "reason=\"" reason "\" flaps=" flaps
#define RECOVERED(id, flaps) "I\"Device recovered\" resource=\"" RES "\" device=\"" id "\" flaps=" flaps

START_TEST(test_health_log_flaps_of_one_cause_log_a_start_and_an_end) {
        _cleanup_(history_done) history h = { 0 };

        expect(&h, REASONS(NULL, NULL), NOTHING);
        expect(&h, REASONS(DOWN, DOWN), LINES(BECAME("d0", DOWN), BECAME("d1", DOWN)));
        /* d0 flaps 99 more times, d1 stays down; then d1 flaps once */
        for (int i = 0; i < 99; i++) {
                expect(&h, REASONS(HELD, DOWN), NOTHING);
                expect(&h, REASONS(DOWN, DOWN), NOTHING);
        }
        expect(&h, REASONS(HELD, HELD), NOTHING);
        expect(&h, REASONS(NULL, NULL), LINES(RECOVERED("d0", "100"), RECOVERED("d1", "1")));
        /* a new spell counts from 1 */
        expect(&h, REASONS(NULL, DOWN), LINES(BECAME("d1", DOWN)));
        expect(&h, REASONS(NULL, NULL), LINES(RECOVERED("d1", "1")));
}
END_TEST

START_TEST(test_health_log_changes_of_one_cause_are_logged_at_v2) {
        _cleanup_(history_done) history h = { 0 };

        expect(&h, REASONS(DOWN), LINES(BECAME("d0", DOWN)));
        kdp_log_set_verbosity(2);
        expect(&h, REASONS(HELD), LINES(SAME("d0", HELD, "1")));
        expect(&h, REASONS(DOWN), LINES(SAME("d0", DOWN, "2")));
        kdp_log_set_verbosity(0);
}
END_TEST

START_TEST(test_health_log_another_cause_is_logged) {
        _cleanup_(history_done) history h = { 0 };

        expect(&h, REASONS(NULL), NOTHING);
        expect(&h, REASONS(DOWN), LINES(BECAME("d0", DOWN)));
        expect(&h, REASONS("driver unbound"), LINES(ANOTHER("d0", "driver unbound")));
        /* held, it fails for another cause: logged, and one more flap */
        expect(&h, REASONS("recovering: driver unbound"), NOTHING);
        expect(&h, REASONS(DOWN), LINES(ANOTHER("d0", DOWN)));
        expect(&h, REASONS(NULL), LINES(RECOVERED("d0", "2")));
}
END_TEST

START_TEST(test_health_log_a_removed_device_ends_its_spell) {
        _cleanup_(history_done) history h = { 0 };

        /* the first list: d1 and d2 are unhealthy from the start */
        expect(&h, REASONS(NULL, DOWN, DOWN), LINES(BECAME("d1", DOWN), BECAME("d2", DOWN)));
        expect(&h, REASONS(NULL, HELD, HELD), NOTHING);
        expect(&h, REASONS(NULL, DOWN, DOWN), NOTHING);
        expect(&h, REASONS(NULL, DOWN), LINES("I\"Removed device\" resource=\"" RES "\" device=\"d2\""));
        /* back, unhealthy: a new spell, counted from 1; d1 kept its count */
        expect(&h, REASONS(NULL, HELD, "removed"), LINES(BECAME("d2", "removed")));
        expect(&h, REASONS(NULL, NULL, NULL), LINES(RECOVERED("d1", "2"), RECOVERED("d2", "1")));
}
END_TEST

static Suite *health_log_suite(void) {
        Suite *s = suite_create("health-log");
        TCase *tc = tcase_create("conditions");

        tcase_add_test(tc, test_health_log_flaps_of_one_cause_log_a_start_and_an_end);
        tcase_add_test(tc, test_health_log_changes_of_one_cause_are_logged_at_v2);
        tcase_add_test(tc, test_health_log_another_cause_is_logged);
        tcase_add_test(tc, test_health_log_a_removed_device_ends_its_spell);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return kdp_test_run(health_log_suite());
}
