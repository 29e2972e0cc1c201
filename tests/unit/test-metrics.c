/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The metrics registry: what a scrape reads after known counts, and the probes' answers on a fake clock. */
#include <check.h>
#include <errno.h>
#include <string.h>

#include <grpc/grpc.h>

#include "metrics.h"
#include "snapshot.h"

#include "kdp-test.h"

#define SEC 1000000000u

static uint64_t fake_now;

static uint64_t fake_clock(void) {
        return fake_now;
}

/* A stream into *text (free()), closed and checked by done(). */
static FILE *stream(char **text, size_t *size) {
        FILE *f = open_memstream(text, size);

        ck_assert_ptr_nonnull(f);
        return f;
}

static void done(FILE *f) {
        ck_assert_int_eq(fclose(f), 0);
}

/* The lines of a scrape of `m` that start with `prefix`, joined (free()). */
static char *scraped(kdp_metrics *m, const char *prefix) {
        _cleanup_free_ char *text = NULL;
        char *out = NULL, *save = NULL;
        size_t size = 0, out_size = 0;
        FILE *f = stream(&text, &size), *o;

        ck_assert_int_eq(kdp_metrics_write(m, f), 0);
        done(f);
        o = stream(&out, &out_size);
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
                if (strncmp(line, prefix, strlen(prefix)) == 0)
                        fprintf(o, "%s\n", line);
        done(o);
        return out;
}

static kdp_metrics *new_metrics(bool device_health, uint64_t stall_ms) {
        kdp_metrics *m = NULL;

        ck_assert_int_eq(kdp_metrics_new(&(kdp_metrics_options){ .device_health = device_health, .stall_ms = stall_ms,
                                                                 .clock_ns = fake_clock }, &m), 0);
        return m;
}

static void add_device(kdp_device_list *l, const char *id, kdp_health health) {
        kdp_device d;

        ck_assert_int_eq(kdp_device_from_info(&(kdp_device_info){ .id = id, .health = health }, NULL, &d), 0);
        ck_assert_int_eq(kdp_device_list_append(l, &d), 0);
}

START_TEST(test_metrics_counts_devices_calls_and_registrations_of_a_resource) {
        _cleanup_(kdp_metrics_freep) kdp_metrics *m = new_metrics(true, 0);
        _cleanup_free_ char *devices = NULL, *health = NULL, *allocations = NULL, *registrations = NULL, *count = NULL;
        _cleanup_(kdp_snapshot_unrefp) kdp_snapshot *snap = NULL;
        kdp_metrics_resource *r;
        kdp_device_list l;

        grpc_init();
        ck_assert_int_eq(kdp_device_list_init(&l, "example.com/widget"), 0);
        add_device(&l, "w-0", KDP_HEALTHY);
        add_device(&l, "w\"1", KDP_UNHEALTHY);
        add_device(&l, "w-2", KDP_HEALTHY);
        kdp_device_list_sort(&l);
        ck_assert_int_eq(kdp_snapshot_new(&l, 1, &snap), 0);
        ck_assert_int_eq(kdp_metrics_resource_add(m, "example.com/widget", &r), 0);
        kdp_metrics_resource_publish(r, snap);
        for (int i = 0; i < 5; i++)
                kdp_metrics_resource_allocated(r, 0, 40000);
        kdp_metrics_resource_allocated(r, 3, 20000);            /* INVALID_ARGUMENT */
        kdp_metrics_resource_allocated(r, 99, 20000);           /* no such code: unknown */
        kdp_metrics_resource_registration(r, KDP_METRICS_REGISTER_NO_KUBELET);
        kdp_metrics_resource_registration(r, KDP_METRICS_REGISTER_NO_KUBELET);
        kdp_metrics_resource_registration(r, KDP_METRICS_REGISTERED);

        devices = scraped(m, "kdp_devices{");
        ck_assert_str_eq(devices, "kdp_devices{resource=\"example.com/widget\",health=\"healthy\"} 2\n"
                                  "kdp_devices{resource=\"example.com/widget\",health=\"unhealthy\"} 1\n");
        health = scraped(m, "kdp_device_health{");
        ck_assert_str_eq(health, "kdp_device_health{resource=\"example.com/widget\",device=\"w\\\"1\"} 0\n"
                                 "kdp_device_health{resource=\"example.com/widget\",device=\"w-0\"} 1\n"
                                 "kdp_device_health{resource=\"example.com/widget\",device=\"w-2\"} 1\n");
        allocations = scraped(m, "kdp_allocations_total{");
        ck_assert_str_eq(allocations, "kdp_allocations_total{resource=\"example.com/widget\",result=\"ok\"} 5\n"
                                      "kdp_allocations_total{resource=\"example.com/widget\",result=\"unknown\"} 1\n"
                                      "kdp_allocations_total{resource=\"example.com/widget\",result=\"invalid_argument\"} 1\n");
        count = scraped(m, "kdp_allocate_duration_seconds_count");
        ck_assert_str_eq(count, "kdp_allocate_duration_seconds_count{resource=\"example.com/widget\"} 7\n");
        registrations = scraped(m, "kdp_registrations_total{");
        ck_assert_str_eq(registrations,
                         "kdp_registrations_total{resource=\"example.com/widget\",result=\"success\",reason=\"none\"} 1\n"
                         "kdp_registrations_total{resource=\"example.com/widget\",result=\"failure\","
                         "reason=\"kubelet_absent\"} 2\n");
        kdp_metrics_resource_remove(r);
}
END_TEST

START_TEST(test_metrics_device_health_only_when_asked) {
        _cleanup_(kdp_metrics_freep) kdp_metrics *m = new_metrics(false, 0);
        _cleanup_free_ char *health = NULL;
        kdp_metrics_resource *r;

        ck_assert_int_eq(kdp_metrics_resource_add(m, "example.com/widget", &r), 0);
        health = scraped(m, "# TYPE kdp_device_health");
        ck_assert_str_eq(health, "");
        kdp_metrics_resource_remove(r);
}
END_TEST

START_TEST(test_metrics_folds_unhealthy_reasons_into_a_bounded_set) {
        _cleanup_(kdp_metrics_freep) kdp_metrics *m = new_metrics(false, 0);
        _cleanup_free_ char *text = NULL;
        kdp_metrics_resource *r;

        ck_assert_int_eq(kdp_metrics_resource_add(m, "r.example.com/x", &r), 0);
        kdp_metrics_resource_unhealthy(r, "AER fatal errors rose from 0 to 2");
        kdp_metrics_resource_unhealthy(r, "AER fatal errors rose from 2 to 17");
        kdp_metrics_resource_unhealthy(r, "driver unbound (expected nvidia); disabled (enable=0)");
        kdp_metrics_resource_unhealthy(r, NULL);
        kdp_metrics_resource_unhealthy(r, "bad\nbyte \xff");
        for (int i = 0; i < 6; i++) {
                char reason[32];

                snprintf(reason, sizeof(reason), "reason %c", 'a' + i);         /* 4 more fit the 8, 2 are other */
                kdp_metrics_resource_unhealthy(r, reason);
        }
        kdp_metrics_resource_unhealthy(r, "device node /dev/nvidia7 missing");   /* other too */
        text = scraped(m, "kdp_unhealthy_transitions_total{");
        ck_assert_str_eq(text,
                         "kdp_unhealthy_transitions_total{resource=\"r.example.com/x\",reason=\"AER fatal errors rose "
                         "from N to N\"} 2\n"
                         "kdp_unhealthy_transitions_total{resource=\"r.example.com/x\",reason=\"driver unbound "
                         "(expected nvidia)\"} 1\n"
                         "kdp_unhealthy_transitions_total{resource=\"r.example.com/x\",reason=\"unknown\"} 1\n"
                         "kdp_unhealthy_transitions_total{resource=\"r.example.com/x\",reason=\"bad?byte ?\"} 1\n"
                         "kdp_unhealthy_transitions_total{resource=\"r.example.com/x\",reason=\"reason a\"} 1\n"
                         "kdp_unhealthy_transitions_total{resource=\"r.example.com/x\",reason=\"reason b\"} 1\n"
                         "kdp_unhealthy_transitions_total{resource=\"r.example.com/x\",reason=\"reason c\"} 1\n"
                         "kdp_unhealthy_transitions_total{resource=\"r.example.com/x\",reason=\"reason d\"} 1\n"
                         "kdp_unhealthy_transitions_total{resource=\"r.example.com/x\",reason=\"other\"} 3\n");
        kdp_metrics_resource_remove(r);
}
END_TEST

START_TEST(test_metrics_counts_device_events_by_subsystem_and_action) {
        _cleanup_(kdp_metrics_freep) kdp_metrics *m = new_metrics(false, 0);
        _cleanup_free_ char *text = NULL, *restarts = NULL;

        ck_assert_int_eq(kdp_metrics_add_subsystem(m, "pci"), 0);
        ck_assert_int_eq(kdp_metrics_add_subsystem(m, "drm"), 0);
        kdp_metrics_device_event(m, "pci", "bind");
        kdp_metrics_device_event(m, "pci", "bind");
        kdp_metrics_device_event(m, "pci", "frobnicate");
        kdp_metrics_device_event(m, "drm", "remove");
        kdp_metrics_device_event(m, "usb", "add");               /* not watched: not counted */
        kdp_metrics_kubelet_restarted(m);
        text = scraped(m, "kdp_device_events_total{");
        ck_assert_str_eq(text, "kdp_device_events_total{subsystem=\"pci\",action=\"bind\"} 2\n"
                               "kdp_device_events_total{subsystem=\"pci\",action=\"other\"} 1\n"
                               "kdp_device_events_total{subsystem=\"drm\",action=\"remove\"} 1\n");
        restarts = scraped(m, "kdp_kubelet_restarts_total ");
        ck_assert_str_eq(restarts, "kdp_kubelet_restarts_total 1\n");
}
END_TEST

START_TEST(test_metrics_series_outlives_its_removal_while_a_server_holds_it) {
        _cleanup_(kdp_metrics_freep) kdp_metrics *m = new_metrics(false, 0);
        _cleanup_free_ char *text = NULL;
        kdp_metrics_resource *r, *held;

        ck_assert_int_eq(kdp_metrics_resource_add(m, "example.com/widget", &r), 0);
        held = kdp_metrics_resource_ref(r);
        kdp_metrics_resource_remove(r);
        kdp_metrics_resource_allocated(held, 0, 1000);          /* a call still answered: counted, not scraped */
        text = scraped(m, "kdp_allocations_total{");
        ck_assert_str_eq(text, "");
        ck_assert_ptr_null(kdp_metrics_resource_unref(held));
}
END_TEST

START_TEST(test_metrics_healthz_names_a_thread_past_the_bound) {
        _cleanup_(kdp_metrics_freep) kdp_metrics *m = new_metrics(false, 10000);
        _cleanup_free_ char *ok = NULL, *stalled = NULL, *back = NULL;
        kdp_metrics_heartbeat *loop, *cq;
        size_t size = 0;
        FILE *f;

        ck_assert_uint_eq(kdp_metrics_beat_ms(m), 1000);
        fake_now = 100 * (uint64_t) SEC;
        ck_assert_int_eq(kdp_metrics_add_heartbeat(m, "event loop", &loop), 0);
        ck_assert_int_eq(kdp_metrics_add_heartbeat(m, "completion queue thread", &cq), 0);
        fake_now += 10 * (uint64_t) SEC;                        /* at the bound: still fine */
        f = stream(&ok, &size);
        ck_assert(kdp_metrics_healthy(m, f));
        done(f);
        ck_assert_str_eq(ok, "ok\n");
        kdp_metrics_heartbeat_beat(cq);
        fake_now += 2300000000u;
        f = stream(&stalled, &size);
        ck_assert(!kdp_metrics_healthy(m, f));
        done(f);
        ck_assert_str_eq(stalled, "event loop has not run for 12.3 s\n");
        kdp_metrics_heartbeat_beat(loop);
        f = stream(&back, &size);
        ck_assert(kdp_metrics_healthy(m, f));
        done(f);
        ck_assert_str_eq(back, "ok\n");
}
END_TEST

START_TEST(test_metrics_no_heartbeats_without_a_bound) {
        _cleanup_(kdp_metrics_freep) kdp_metrics *m = new_metrics(false, 0);
        kdp_metrics_heartbeat *h = (kdp_metrics_heartbeat *) m;

        ck_assert_uint_eq(kdp_metrics_beat_ms(m), 0);
        ck_assert_int_eq(kdp_metrics_add_heartbeat(m, "event loop", &h), 0);
        ck_assert_ptr_null(h);
        kdp_metrics_heartbeat_beat(h);
}
END_TEST

START_TEST(test_metrics_beat_is_a_quarter_of_the_bound_up_to_a_second) {
        _cleanup_(kdp_metrics_freep) kdp_metrics *a = new_metrics(false, 400), *b = new_metrics(false, 3600000);

        ck_assert_uint_eq(kdp_metrics_beat_ms(a), 100);
        ck_assert_uint_eq(kdp_metrics_beat_ms(b), 1000);
}
END_TEST

/* /readyz of `m`: its text (free()) and whether it is ready. */
static char *ready_text(kdp_metrics *m, bool *ret_ready) {
        char *text = NULL;
        size_t size = 0;
        FILE *f = stream(&text, &size);

        *ret_ready = kdp_metrics_ready(m, f);
        done(f);
        return text;
}

START_TEST(test_metrics_readyz_says_which_resource_lacks_what) {
        _cleanup_(kdp_metrics_freep) kdp_metrics *m = new_metrics(false, 10000);
        _cleanup_free_ char *starting = NULL, *none = NULL, *absent = NULL, *no_stream = NULL, *ok = NULL;
        _cleanup_free_ char *lost = NULL;
        kdp_metrics_resource *b, *a;
        bool ready;

        starting = ready_text(m, &ready);
        ck_assert(!ready);
        ck_assert_str_eq(starting, "starting: the first scan of the backends is not done\n");
        kdp_metrics_started(m);
        none = ready_text(m, &ready);
        ck_assert(ready);
        ck_assert_str_eq(none, "ok\n");
        ck_assert_int_eq(kdp_metrics_resource_add(m, "b.example.com/x", &b), 0);
        ck_assert_int_eq(kdp_metrics_resource_add(m, "a.example.com/x", &a), 0);
        kdp_metrics_resource_registration(b, KDP_METRICS_REGISTER_NO_KUBELET);
        absent = ready_text(m, &ready);
        ck_assert(!ready);
        ck_assert_str_eq(absent, "a.example.com/x: not registered with the kubelet\n"
                                 "b.example.com/x: not registered with the kubelet (last attempt: kubelet_absent)\n");
        kdp_metrics_resource_registration(a, KDP_METRICS_REGISTERED);
        kdp_metrics_resource_registration(b, KDP_METRICS_REGISTERED);
        kdp_metrics_resource_stream(b, true);
        no_stream = ready_text(m, &ready);
        ck_assert(!ready);
        ck_assert_str_eq(no_stream, "a.example.com/x: registered, but no ListAndWatch stream open\n");
        kdp_metrics_resource_stream(a, true);
        ok = ready_text(m, &ready);
        ck_assert(ready);
        ck_assert_str_eq(ok, "ok\n");
        kdp_metrics_resource_stream(a, false);
        kdp_metrics_resource_unregistered(b);
        lost = ready_text(m, &ready);
        ck_assert(!ready);
        ck_assert_str_eq(lost, "a.example.com/x: registered, but no ListAndWatch stream open\n"
                               "b.example.com/x: not registered with the kubelet\n");
        kdp_metrics_resource_remove(a);
        kdp_metrics_resource_remove(b);
}
END_TEST

static Suite *metrics_suite(void) {
        Suite *s = suite_create("metrics");
        TCase *series = tcase_create("series"), *probes = tcase_create("probes");

        tcase_set_timeout(series, 10);
        tcase_add_test(series, test_metrics_counts_devices_calls_and_registrations_of_a_resource);
        tcase_add_test(series, test_metrics_device_health_only_when_asked);
        tcase_add_test(series, test_metrics_folds_unhealthy_reasons_into_a_bounded_set);
        tcase_add_test(series, test_metrics_counts_device_events_by_subsystem_and_action);
        tcase_add_test(series, test_metrics_series_outlives_its_removal_while_a_server_holds_it);
        suite_add_tcase(s, series);
        tcase_set_timeout(probes, 10);
        tcase_add_test(probes, test_metrics_healthz_names_a_thread_past_the_bound);
        tcase_add_test(probes, test_metrics_no_heartbeats_without_a_bound);
        tcase_add_test(probes, test_metrics_beat_is_a_quarter_of_the_bound_up_to_a_second);
        tcase_add_test(probes, test_metrics_readyz_says_which_resource_lacks_what);
        suite_add_tcase(s, probes);
        return s;
}

int main(void) {
        return kdp_test_run(metrics_suite());
}
