/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * conditions.c: what a backend's scans note is logged when it starts, changes
 * and ends, and never on a scan that finds it unchanged.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <kdp/cleanup.h>
#include <kdp/device.h>

#include "conditions.h"
#include "device-tree.h"

#include "kdp-test.h"

/* Served devices, by address, for the "served now" / "gone" question. */
static const char *served_now[8];

static bool is_served(const char *address, void *userdata) {
        (void) userdata;
        for (size_t i = 0; served_now[i]; i++)
                if (strcmp(served_now[i], address) == 0)
                        return true;
        return false;
}

typedef struct scan_note {
        const char *address;
        const char *reason;
} scan_note;

/* One scan that declares `v` (NULL-terminated) not served, then mixes NUMA in example.com/w when `mixed`; returns the log. */
static char *scan(kdp_conditions *c, const scan_note *v, bool mixed, int *ret_changed) {
        _cleanup_(kdp_device_tree_freep) kdp_device_tree *t = NULL;
        kdp_test_capture cap;

        ck_assert_int_eq(kdp_device_tree_new(NULL, &t), 0);
        for (size_t i = 0; v && v[i].address; i++)
                ck_assert_int_eq(kdp_device_tree_not_served(t, v[i].address, v[i].reason), 0);
        ck_assert_int_eq(kdp_device_tree_add(t, "example.com/w", &(kdp_device_info){
                .id = "w0", .numa_nodes = { 0 }, .n_numa_nodes = 1 }), 0);
        ck_assert_int_eq(kdp_device_tree_add(t, "example.com/w", &(kdp_device_info){
                .id = "w1", .numa_nodes = { 1 }, .n_numa_nodes = mixed ? 0 : 1 }), 0);
        kdp_device_tree_finish(t);
        kdp_test_capture_begin(&cap);
        *ret_changed = kdp_conditions_update(c, "gpu", t, is_served, NULL);
        ck_assert_uint_eq(t->n_notes, 0);       /* taken over */
        return kdp_test_capture_end(&cap);
}

START_TEST(test_conditions_log_new_changed_and_gone_once) {
        _cleanup_(kdp_conditions_done) kdp_conditions c = { 0 };
        _cleanup_free_ char *log = NULL;
        const char *p;
        int changed;

        log = scan(&c, (const scan_note[]){ { "0000:3b:00.0", "driver unbound" },
                                            { "0000:18:00.0", "bound to vfio-pci, not nvidia" }, { 0 } },
                   true, &changed);
        ck_assert_int_eq(changed, 1);
        p = log;
        /* sorted by kind, then address */
        kdp_test_expect_line(&p, 'I', "conditions.c", "\"Device not served\" backend=\"gpu\" address=\"0000:18:00.0\" "
                                                      "reason=\"bound to vfio-pci, not nvidia\"");
        kdp_test_expect_line(&p, 'I', "conditions.c", "\"Device not served\" backend=\"gpu\" address=\"0000:3b:00.0\" "
                                                      "reason=\"driver unbound\"");
        kdp_test_expect_line(&p, 'W', "conditions.c",
                             "\"Dropped NUMA affinity of a resource that mixes devices with and without it\" "
                             "resource=\"example.com/w\" withTopology=1 withoutTopology=1");
        ck_assert_str_eq(p, "");

        /* the same scan again, twice: nothing */
        for (int i = 0; i < 2; i++) {
                free(log);
                log = scan(&c, (const scan_note[]){ { "0000:18:00.0", "bound to vfio-pci, not nvidia" },
                                                    { "0000:3b:00.0", "driver unbound" }, { 0 } },
                           true, &changed);
                ck_assert_str_eq(log, "");
                ck_assert_int_eq(changed, 0);
        }

        /* a reason changes, a device becomes served, one goes away, NUMA is whole again */
        served_now[0] = "0000:18:00.0";
        free(log);
        log = scan(&c, (const scan_note[]){ { "0000:3b:00.0", "its /proc/driver/nvidia information is malformed" },
                                            { 0 } },
                   false, &changed);
        ck_assert_int_eq(changed, 1);
        p = log;
        kdp_test_expect_line(&p, 'I', "conditions.c", "\"Device served now\" backend=\"gpu\" address=\"0000:18:00.0\" "
                                                      "previousReason=\"bound to vfio-pci, not nvidia\"");
        kdp_test_expect_line(&p, 'I', "conditions.c",
                             "\"Device not served, for another reason\" backend=\"gpu\" address=\"0000:3b:00.0\" "
                             "reason=\"its /proc/driver/nvidia information is malformed\" "
                             "previousReason=\"driver unbound\"");
        kdp_test_expect_line(&p, 'I', "conditions.c",
                             "\"Resource no longer mixes devices with and without NUMA affinity\" "
                             "resource=\"example.com/w\"");
        ck_assert_str_eq(p, "");

        served_now[0] = NULL;
        free(log);
        log = scan(&c, NULL, false, &changed);
        ck_assert_int_eq(changed, 1);
        p = log;
        kdp_test_expect_line(&p, 'I', "conditions.c",
                             "\"Device not served is gone\" backend=\"gpu\" address=\"0000:3b:00.0\" "
                             "previousReason=\"its /proc/driver/nvidia information is malformed\"");
        ck_assert_str_eq(p, "");
        ck_assert_uint_eq(c.n, 0);

        free(log);
        log = scan(&c, NULL, false, &changed);
        ck_assert_str_eq(log, "");
        ck_assert_int_eq(changed, 0);
}
END_TEST

/* A condition that is not a device not served changes nothing the not-served list shows. */
START_TEST(test_conditions_report_not_served_changes_only) {
        _cleanup_(kdp_conditions_done) kdp_conditions c = { 0 };
        _cleanup_free_ kdp_not_served_entry *v = NULL;
        _cleanup_free_ char *log = NULL;
        size_t n;
        int changed;

        log = scan(&c, (const scan_note[]){ { "widget-2", "filtered out by example.skip" }, { 0 } }, false,
                   &changed);
        ck_assert_int_eq(changed, 1);
        free(log);
        log = scan(&c, (const scan_note[]){ { "widget-2", "filtered out by example.skip" }, { 0 } }, true,
                   &changed);
        ck_assert_int_eq(changed, 0);
        ck_assert_ptr_nonnull(strstr(log, "\"Dropped NUMA affinity"));

        ck_assert_int_eq(kdp_conditions_not_served(&c, &v, &n), 0);
        ck_assert_uint_eq(n, 1);
        ck_assert_str_eq(v[0].address, "widget-2");
        ck_assert_str_eq(v[0].reason, "filtered out by example.skip");
}
END_TEST

/* Refusals keep their levels: a refused resource name is a warning, a resource claimed twice an error. */
START_TEST(test_conditions_log_refusals_at_their_levels_once) {
        _cleanup_(kdp_conditions_done) kdp_conditions c = { 0 };
        _cleanup_free_ char *log = NULL;
        kdp_test_capture cap;
        const char *p;

        for (int round = 0; round < 3; round++) {
                _cleanup_(kdp_device_tree_freep) kdp_device_tree *t = NULL;

                ck_assert_int_eq(kdp_device_tree_new(NULL, &t), 0);
                if (round < 2) {
                        ck_assert_int_eq(kdp_device_tree_add_resource(t, "gpu"), -EINVAL);
                        ck_assert_int_eq(kdp_device_tree_note(t, KDP_TREE_NOTE_REFUSED_RESOURCE, "example.com/w",
                                                              "example", 0, 0), 0);
                }
                kdp_test_capture_begin(&cap);
                (void) kdp_conditions_update(&c, "dupres", t, is_served, NULL);
                free(log);
                log = kdp_test_capture_end(&cap);
                p = log;
                if (round == 0) {
                        kdp_test_expect_line(&p, 'W', "conditions.c",
                                             "\"Rejected resource\" backend=\"dupres\" resource=\"gpu\" "
                                             "reason=\"not <domain>/<name> as the kubelet wants it\" "
                                             "err=\"Invalid argument\"");
                        kdp_test_expect_line(&p, 'E', "conditions.c",
                                             "\"Refused resource served by another backend\" "
                                             "resource=\"example.com/w\" backend=\"dupres\" servedBy=\"example\" "
                                             "err=\"File exists\"");
                } else if (round == 2) {
                        kdp_test_expect_line(&p, 'I', "conditions.c",
                                             "\"Resource no longer rejected\" backend=\"dupres\" resource=\"gpu\"");
                        kdp_test_expect_line(&p, 'I', "conditions.c",
                                             "\"Resource no longer refused\" resource=\"example.com/w\" "
                                             "backend=\"dupres\"");
                }
                ck_assert_str_eq(p, "");
        }
}
END_TEST

static Suite *conditions_suite(void) {
        Suite *s = suite_create("conditions");
        TCase *tc = tcase_create("diff");

        tcase_set_timeout(tc, 10);
        tcase_add_test(tc, test_conditions_log_new_changed_and_gone_once);
        tcase_add_test(tc, test_conditions_report_not_served_changes_only);
        tcase_add_test(tc, test_conditions_log_refusals_at_their_levels_once);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return kdp_test_run(conditions_suite());
}
