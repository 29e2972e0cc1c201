/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Health hysteresis: one transition each way for a flapping device. */
#include <check.h>
#include <string.h>

#include "debounce.h"
#include "kdp-test.h"

#define HOLD 1000

/* A sorted list of devices "d0".."d<n-1>", healthy except those in `down` ("d1,d3"). */
static void make_list(kdp_device_list *l, unsigned n, const char *down) {
        ck_assert_int_eq(kdp_device_list_init(l, "example.com/widget"), 0);
        for (unsigned i = 0; i < n; i++) {
                char id[16], needle[20];
                kdp_device d;
                bool is_down;

                snprintf(id, sizeof(id), "d%u", i);
                snprintf(needle, sizeof(needle), ",%s,", id);
                is_down = down && strstr(down, needle);
                ck_assert_int_eq(kdp_device_from_info(&(kdp_device_info){
                                         .id = id, .health = is_down ? KDP_UNHEALTHY : KDP_HEALTHY,
                                         .health_reason = is_down ? "link down" : NULL }, NULL, &d), 0);
                ck_assert_int_eq(kdp_device_list_append(l, &d), 0);
        }
        kdp_device_list_sort(l);
}

START_TEST(test_debounce_holds_a_recovered_device_for_the_hold_time) {
        _cleanup_(kdp_debounce_freep) kdp_debounce *db = NULL;
        kdp_device_list l;

        ck_assert_int_eq(kdp_debounce_new(HOLD, &db), 0);
        make_list(&l, 2, NULL);                         /* first report: taken as it is */
        ck_assert_uint_eq(kdp_debounce_apply(db, NULL, &l, 10000), 0);
        ck_assert_int_eq(l.devices[1].health, KDP_HEALTHY);
        kdp_device_list_done(&l);

        make_list(&l, 2, ",d1,");                       /* fails at t=10100 */
        ck_assert_uint_eq(kdp_debounce_apply(db, NULL, &l, 10100), 0);
        ck_assert_int_eq(l.devices[1].health, KDP_UNHEALTHY);
        ck_assert_str_eq(l.devices[1].health_reason, "link down");
        kdp_device_list_done(&l);

        make_list(&l, 2, NULL);                         /* healthy again at t=10200: held until 11100 */
        ck_assert_uint_eq(kdp_debounce_apply(db, NULL, &l, 10200), 11100);
        ck_assert_int_eq(l.devices[1].health, KDP_UNHEALTHY);
        ck_assert_str_eq(l.devices[1].health_reason, "recovering: link down");
        ck_assert_str_eq(kdp_debounce_held_cause(l.devices[1].health_reason), "link down");
        ck_assert_ptr_null(kdp_debounce_held_cause("link down"));
        ck_assert_ptr_null(kdp_debounce_held_cause(NULL));
        ck_assert_int_eq(l.devices[0].health, KDP_HEALTHY);
        kdp_device_list_done(&l);

        make_list(&l, 2, NULL);                         /* the hold is over */
        ck_assert_uint_eq(kdp_debounce_apply(db, NULL, &l, 11100), 0);
        ck_assert_int_eq(l.devices[1].health, KDP_HEALTHY);
        ck_assert_ptr_null(l.devices[1].health_reason);
        kdp_device_list_done(&l);
}
END_TEST

START_TEST(test_debounce_restarts_the_hold_at_every_flap) {
        _cleanup_(kdp_debounce_freep) kdp_debounce *db = NULL;
        kdp_device_list l;
        uint64_t t = 0;

        ck_assert_int_eq(kdp_debounce_new(HOLD, &db), 0);
        for (int i = 0; i < 10; i++, t += 100) {       /* down and up every 100 ms for 2 s */
                make_list(&l, 1, i % 2 ? NULL : ",d0,");
                (void) kdp_debounce_apply(db, NULL, &l, t);
                ck_assert_int_eq(l.devices[0].health, KDP_UNHEALTHY);   /* never seen healthy */
                kdp_device_list_done(&l);
        }
        make_list(&l, 1, NULL);                         /* last failure was at t=800 */
        ck_assert_uint_eq(kdp_debounce_apply(db, NULL, &l, 1700), 1800);
        ck_assert_int_eq(l.devices[0].health, KDP_UNHEALTHY);
        kdp_device_list_done(&l);
        make_list(&l, 1, NULL);
        ck_assert_uint_eq(kdp_debounce_apply(db, NULL, &l, 1800), 0);
        ck_assert_int_eq(l.devices[0].health, KDP_HEALTHY);
        kdp_device_list_done(&l);
}
END_TEST

START_TEST(test_debounce_holds_a_device_that_comes_back_after_removal) {
        _cleanup_(kdp_debounce_freep) kdp_debounce *db = NULL;
        kdp_device_list before, gone, back;

        ck_assert_int_eq(kdp_debounce_new(HOLD, &db), 0);
        make_list(&before, 3, NULL);
        ck_assert_uint_eq(kdp_debounce_apply(db, NULL, &before, 0), 0);
        make_list(&gone, 2, NULL);                      /* d2 unplugged at t=50 */
        ck_assert_uint_eq(kdp_debounce_apply(db, &before, &gone, 50), 0);
        make_list(&back, 3, NULL);                      /* and back at t=300 */
        ck_assert_uint_eq(kdp_debounce_apply(db, &gone, &back, 300), 1050);
        ck_assert_int_eq(back.devices[2].health, KDP_UNHEALTHY);
        ck_assert_str_eq(back.devices[2].health_reason, "recovering: removed");
        ck_assert_int_eq(back.devices[0].health, KDP_HEALTHY);
        kdp_device_list_done(&before);
        kdp_device_list_done(&gone);
        kdp_device_list_done(&back);
}
END_TEST

START_TEST(test_debounce_with_zero_hold_changes_nothing) {
        _cleanup_(kdp_debounce_freep) kdp_debounce *db = NULL;
        kdp_device_list l;

        ck_assert_int_eq(kdp_debounce_new(0, &db), 0);
        make_list(&l, 1, ",d0,");
        ck_assert_uint_eq(kdp_debounce_apply(db, NULL, &l, 5), 0);
        kdp_device_list_done(&l);
        make_list(&l, 1, NULL);
        ck_assert_uint_eq(kdp_debounce_apply(db, NULL, &l, 6), 0);
        ck_assert_int_eq(l.devices[0].health, KDP_HEALTHY);
        kdp_device_list_done(&l);
}
END_TEST

START_TEST(test_debounce_keeps_resources_apart) {
        _cleanup_(kdp_debounce_freep) kdp_debounce *db = NULL;
        kdp_device_list a, b;

        ck_assert_int_eq(kdp_debounce_new(HOLD, &db), 0);
        make_list(&a, 1, ",d0,");
        (void) kdp_debounce_apply(db, NULL, &a, 0);
        kdp_device_list_done(&a);
        make_list(&b, 1, NULL);                         /* same ID, another resource */
        free(b.resource);
        b.resource = strdup("example.com/other");
        ck_assert_uint_eq(kdp_debounce_apply(db, NULL, &b, 10), 0);
        ck_assert_int_eq(b.devices[0].health, KDP_HEALTHY);
        kdp_device_list_done(&b);
}
END_TEST

static Suite *debounce_suite(void) {
        Suite *s = suite_create("debounce");
        TCase *tc = tcase_create("hold");

        tcase_add_test(tc, test_debounce_holds_a_recovered_device_for_the_hold_time);
        tcase_add_test(tc, test_debounce_restarts_the_hold_at_every_flap);
        tcase_add_test(tc, test_debounce_holds_a_device_that_comes_back_after_removal);
        tcase_add_test(tc, test_debounce_with_zero_hold_changes_nothing);
        tcase_add_test(tc, test_debounce_keeps_resources_apart);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return kdp_test_run(debounce_suite());
}
