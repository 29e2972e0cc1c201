/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * unit/backend-example: the example backend (plugins/example/example.c) driven
 * through the ABI the way the daemon drives it: dlopen the built .so, take its
 * ops from kdp_backend_entry, make a kdp_backend_ctx from -o style overrides,
 * then init, scan into a kdp_device_tree, and call each hook.
 */
#include <check.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <kdp/backend.h>

#include "alloc.h"
#include "backend-ctx.h"
#include "config.h"
#include "device-tree.h"

#include "kdp-test.h"
#include "kdp-test-sysfs.h"
#include "kdp-test-backend.h"

#define EXAMPLE_SO KDP_BUILD_DIR "/plugins/kdp-backend-example.so"

/* One loaded and initialised backend with its scanned tree. */
typedef kdp_test_backend example_run;

static const kdp_backend_ops *example_load(void **ret_handle) {
        kdp_backend_entry_fn entry;
        void *handle;

        handle = dlopen(EXAMPLE_SO, RTLD_NOW | RTLD_LOCAL);
        ck_assert_msg(handle, "dlopen %s: %s", EXAMPLE_SO, dlerror());
        entry = (kdp_backend_entry_fn) dlsym(handle, KDP_BACKEND_ENTRY_SYMBOL);
        ck_assert_ptr_nonnull(entry);
        *ret_handle = handle;
        return entry();
}

/* Loads the backend and makes its ctx from NULL-terminated "example.key=value" overrides. */
static void example_open(example_run *run, const char *const *overrides) {
        *run = (example_run){ 0 };
        run->ops = example_load(&run->handle);
        ck_assert_int_eq(kdp_config_load(NULL, &run->config), 0);
        for (size_t i = 0; overrides && overrides[i]; i++)
                ck_assert_int_eq(kdp_config_add_override(run->config, overrides[i]), 0);
        ck_assert_int_eq(kdp_backend_ctx_new("example", NULL, run->ops->params, run->config, &run->ctx), 0);
}

/* example_open(), init, scan and finish the tree. */
static void example_start(example_run *run, const char *const *overrides) {
        example_open(run, overrides);
        ck_assert_int_eq(run->ops->init(run->ctx, &run->state), 0);
        ck_assert_ptr_nonnull(run->state);
        ck_assert_int_eq(kdp_device_tree_new(NULL, &run->tree), 0);
        ck_assert_int_eq(run->ops->scan(run->state, run->tree), 0);
        kdp_device_tree_finish(run->tree);
        ck_assert_uint_eq(run->tree->n_rejected, 0);
}

static void example_run_done(example_run *run) {
        run->tree = kdp_device_tree_free(run->tree);
        if (run->ops)
                run->ops->fini(run->state);
        run->state = NULL;
        run->ctx = kdp_backend_ctx_free(run->ctx);
        run->config = kdp_config_free(run->config);
        if (run->handle)
                ck_assert_int_eq(dlclose(run->handle), 0);
        run->handle = NULL;
}

#define OVERRIDES(...) ((const char *const[]){ __VA_ARGS__, NULL })

static const char *kv_get(const kdp_kv *kvs, size_t n, const char *key) {
        for (size_t i = 0; i < n; i++)
                if (strcmp(kvs[i].key, key) == 0)
                        return kvs[i].value;
        return NULL;
}

/* Checks everything the record of widget-<n> carries. */
static void check_widget(const kdp_device *d, unsigned n, int numa, kdp_health health) {
        char id[32], path[32], env[32];

        snprintf(id, sizeof(id), "widget-%u", n);
        snprintf(path, sizeof(path), "/dev/widget%u", n);
        snprintf(env, sizeof(env), "WIDGET_%u", n);
        ck_assert_str_eq(d->id, id);
        ck_assert_int_eq(d->health, health);
        if (health == KDP_HEALTHY)
                ck_assert_ptr_null(d->health_reason);
        else
                ck_assert_str_eq(d->health_reason, "configured unhealthy");
        if (numa < 0)
                ck_assert_uint_eq(d->n_numa_nodes, 0);
        else {
                ck_assert_uint_eq(d->n_numa_nodes, 1);
                ck_assert_int_eq(d->numa_nodes[0], numa);
        }
        ck_assert_ptr_null(d->pci_address);
        ck_assert_ptr_null(d->pci_path);
        ck_assert_uint_eq(d->n_dev_nodes, 1);
        ck_assert_str_eq(d->dev_nodes[0].host_path, "/dev/null");
        ck_assert_str_eq(d->dev_nodes[0].container_path, path);
        ck_assert_str_eq(d->dev_nodes[0].permissions, "rw");
        ck_assert_uint_eq(d->n_envs, 1);
        ck_assert_str_eq(d->envs[0].key, env);
        ck_assert_str_eq(d->envs[0].value, id);
        ck_assert_uint_eq(d->n_mounts, 0);
        ck_assert_uint_eq(d->n_annotations, 0);
        ck_assert_uint_eq(d->n_cdi_devices, 0);
}

/* ---- ABI ---- */

START_TEST(test_backend_example_entry_describes_every_hook) {
        void *handle = NULL;
        const kdp_backend_ops *ops = example_load(&handle);
        static const char *const names[] = { "devices", "numa_nodes", "resource", "unhealthy",
                                             "prestart_delay_ms", "cdi", "not_served", "scan_hold_file" };
        static const char *const defaults[] = { "8", "2", "example.com/widget", "", "0", "false", "", "" };

        ck_assert_uint_eq(ops->abi_major, KDP_BACKEND_ABI_MAJOR);
        ck_assert_uint_eq(ops->struct_size, sizeof(kdp_backend_ops));
        ck_assert_str_eq(ops->name, "example");
        ck_assert_ptr_nonnull(ops->udev_subsystems);
        ck_assert_ptr_null(ops->udev_subsystems[0]);
        ck_assert_ptr_nonnull(ops->init);
        ck_assert_ptr_nonnull(ops->scan);
        ck_assert_ptr_nonnull(ops->fini);
        ck_assert_ptr_nonnull(ops->allocate);
        ck_assert_ptr_nonnull(ops->preferred);
        ck_assert_ptr_nonnull(ops->pre_start);
        ck_assert_ptr_nonnull(ops->probe);
        ck_assert_uint_eq(ops->probe_interval_ms, 0);
        ck_assert_uint_eq(ops->rescan_interval_ms, 0);
        for (size_t i = 0; i < KDP_ELEMENTSOF(names); i++) {
                ck_assert_str_eq(ops->params[i].name, names[i]);
                ck_assert_str_eq(ops->params[i].default_value, defaults[i]);
                ck_assert_ptr_nonnull(ops->params[i].help);
        }
        ck_assert_ptr_null(ops->params[KDP_ELEMENTSOF(names)].name);
        /* everything but the entry is hidden */
        ck_assert_ptr_null(dlsym(handle, "example_init"));
        ck_assert_ptr_null(dlsym(handle, "example_ops"));
        ck_assert_int_eq(dlclose(handle), 0);
}
END_TEST

/* ---- scan ---- */

START_TEST(test_backend_example_scan_defaults_to_8_widgets_on_2_numa_nodes) {
        _cleanup_(example_run_done) example_run run = { 0 };
        const kdp_device_list *l;

        example_start(&run, NULL);
        ck_assert_uint_eq(run.tree->n_resources, 1);
        l = kdp_device_tree_find(run.tree, "example.com/widget");
        ck_assert_ptr_nonnull(l);
        ck_assert_uint_eq(l->n_devices, 8);
        for (unsigned i = 0; i < 8; i++)
                check_widget(&l->devices[i], i, (int) (i % 2), KDP_HEALTHY);
}
END_TEST

START_TEST(test_backend_example_scan_follows_configured_params) {
        _cleanup_(example_run_done) example_run run = { 0 };
        const kdp_device_list *l;

        example_start(&run, OVERRIDES("example.devices=3", "example.numa_nodes=3",
                                      "example.resource=acme.io/gizmo"));
        ck_assert_uint_eq(run.tree->n_resources, 1);
        ck_assert_ptr_null(kdp_device_tree_find(run.tree, "example.com/widget"));
        l = kdp_device_tree_find(run.tree, "acme.io/gizmo");
        ck_assert_ptr_nonnull(l);
        ck_assert_uint_eq(l->n_devices, 3);
        check_widget(&l->devices[0], 0, 0, KDP_HEALTHY);
        check_widget(&l->devices[1], 1, 1, KDP_HEALTHY);
        check_widget(&l->devices[2], 2, 2, KDP_HEALTHY);
}
END_TEST

START_TEST(test_backend_example_scan_sorts_12_widgets_by_id) {
        static const unsigned order[] = { 0, 1, 10, 11, 2, 3, 4, 5, 6, 7, 8, 9 };
        _cleanup_(example_run_done) example_run run = { 0 };
        const kdp_device_list *l;

        example_start(&run, OVERRIDES("example.devices=12", "example.numa_nodes=4"));
        l = kdp_device_tree_find(run.tree, "example.com/widget");
        ck_assert_ptr_nonnull(l);
        ck_assert_uint_eq(l->n_devices, 12);
        for (size_t i = 0; i < KDP_ELEMENTSOF(order); i++)
                check_widget(&l->devices[i], order[i], (int) (order[i] % 4), KDP_HEALTHY);
}
END_TEST

START_TEST(test_backend_example_scan_without_numa_nodes_reports_no_topology) {
        _cleanup_(example_run_done) example_run run = { 0 };
        const kdp_device_list *l;

        example_start(&run, OVERRIDES("example.numa_nodes=0"));
        l = kdp_device_tree_find(run.tree, "example.com/widget");
        ck_assert_ptr_nonnull(l);
        ck_assert_uint_eq(l->n_devices, 8);
        for (unsigned i = 0; i < 8; i++)
                check_widget(&l->devices[i], i, -1, KDP_HEALTHY);
}
END_TEST

START_TEST(test_backend_example_scan_with_zero_devices_keeps_the_resource) {
        _cleanup_(example_run_done) example_run run = { 0 };
        const kdp_device_list *l;

        example_start(&run, OVERRIDES("example.devices=0"));
        ck_assert_uint_eq(run.tree->n_resources, 1);
        l = kdp_device_tree_find(run.tree, "example.com/widget");
        ck_assert_ptr_nonnull(l);
        ck_assert_uint_eq(l->n_devices, 0);
}
END_TEST

START_TEST(test_backend_example_scan_reports_configured_unhealthy) {
        _cleanup_(example_run_done) example_run run = { 0 };
        const kdp_device_list *l;

        example_start(&run, OVERRIDES("example.unhealthy=widget-3,widget-1"));
        l = kdp_device_tree_find(run.tree, "example.com/widget");
        ck_assert_ptr_nonnull(l);
        ck_assert_uint_eq(l->n_devices, 8);
        for (unsigned i = 0; i < 8; i++)
                check_widget(&l->devices[i], i, (int) (i % 2),
                             i == 1 || i == 3 ? KDP_UNHEALTHY : KDP_HEALTHY);
}
END_TEST

START_TEST(test_backend_example_scan_ignores_unknown_unhealthy_ids) {
        _cleanup_(example_run_done) example_run run = { 0 };
        const kdp_device_list *l;

        example_start(&run, OVERRIDES("example.unhealthy=widget-8,widget-01,gadget-1,,widget-7"));
        l = kdp_device_tree_find(run.tree, "example.com/widget");
        ck_assert_ptr_nonnull(l);
        ck_assert_uint_eq(l->n_devices, 8);
        for (unsigned i = 0; i < 8; i++)
                check_widget(&l->devices[i], i, (int) (i % 2), i == 7 ? KDP_UNHEALTHY : KDP_HEALTHY);
}
END_TEST

/* The template shows kdp_device_tree_not_served(): a skipped widget is not added, and is noted with why. */
START_TEST(test_backend_example_scan_declares_widgets_not_served) {
        _cleanup_(example_run_done) example_run run = { 0 };
        const kdp_device_list *l;

        example_start(&run, OVERRIDES("example.not_served=widget-5,widget-2"));
        l = kdp_device_tree_find(run.tree, "example.com/widget");
        ck_assert_ptr_nonnull(l);
        ck_assert_uint_eq(l->n_devices, 6);
        ck_assert_ptr_null(kdp_device_list_find(l, "widget-2"));
        ck_assert_ptr_null(kdp_device_list_find(l, "widget-5"));
        ck_assert_uint_eq(run.tree->n_notes, 2);
        ck_assert_int_eq(run.tree->notes[0].kind, KDP_TREE_NOTE_NOT_SERVED);
        ck_assert_str_eq(run.tree->notes[0].key, "widget-2");
        ck_assert_str_eq(run.tree->notes[0].text, "listed in example.not_served");
        ck_assert_str_eq(run.tree->notes[1].key, "widget-5");
}
END_TEST

START_TEST(test_backend_example_scan_4096_widgets) {
        _cleanup_(example_run_done) example_run run = { 0 };
        const kdp_device_list *l;
        const kdp_device *d;

        example_start(&run, OVERRIDES("example.devices=4096", "example.numa_nodes=8"));
        l = kdp_device_tree_find(run.tree, "example.com/widget");
        ck_assert_ptr_nonnull(l);
        ck_assert_uint_eq(l->n_devices, 4096);
        d = kdp_device_list_find(l, "widget-4095");
        ck_assert_ptr_nonnull(d);
        check_widget(d, 4095, 7, KDP_HEALTHY);
        check_widget(&l->devices[0], 0, 0, KDP_HEALTHY);
        check_widget(&l->devices[l->n_devices - 1], 999, 7, KDP_HEALTHY);
}
END_TEST

/* ---- params ---- */

START_TEST(test_backend_example_init_rejects_out_of_range_params) {
        static const char *const bad[] = {
                "example.devices=65537", "example.devices=-1", "example.devices=eight",
                "example.numa_nodes=1025", "example.prestart_delay_ms=60001",
        };

        for (size_t i = 0; i < KDP_ELEMENTSOF(bad); i++) {
                _cleanup_(example_run_done) example_run run = { 0 };
                void *state = (void *) &run;

                example_open(&run, OVERRIDES(bad[i]));
                ck_assert_int_eq(run.ops->init(run.ctx, &state), -EINVAL);
                ck_assert_ptr_eq(state, &run);     /* untouched on failure */
        }
}
END_TEST

START_TEST(test_backend_example_init_accepts_param_limits) {
        _cleanup_(example_run_done) example_run run = { 0 };

        example_open(&run, OVERRIDES("example.devices=65536", "example.numa_nodes=1024",
                                     "example.prestart_delay_ms=60000"));
        ck_assert_int_eq(run.ops->init(run.ctx, &run.state), 0);
        ck_assert_ptr_nonnull(run.state);
        ck_assert_int_eq(run.ops->probe(run.state, "example.com/widget", "widget-65535", &(char *){ NULL }),
                         KDP_HEALTHY);
        ck_assert_int_eq(run.ops->probe(run.state, "example.com/widget", "widget-65536", &(char *){ NULL }),
                         -ENOENT);
}
END_TEST

START_TEST(test_backend_example_ctx_rejects_undeclared_param) {
        void *handle = NULL;
        const kdp_backend_ops *ops = example_load(&handle);
        _cleanup_(kdp_config_freep) kdp_config *config = NULL;
        kdp_backend_ctx *ctx = NULL;

        ck_assert_int_eq(kdp_config_load(NULL, &config), 0);
        ck_assert_int_eq(kdp_config_add_override(config, "example.count=4"), 0);
        ck_assert_int_eq(kdp_backend_ctx_new("example", NULL, ops->params, config, &ctx), -EINVAL);
        ck_assert_ptr_null(ctx);
        ck_assert_int_eq(dlclose(handle), 0);
}
END_TEST

/* ---- allocate ---- */

START_TEST(test_backend_example_allocate_adds_devices_env_and_annotation) {
        _cleanup_(example_run_done) example_run run = { 0 };
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response resp = { 0 };
        const char *const ids[] = { "widget-3", "widget-1" };

        example_start(&run, NULL);
        kdp_alloc_response_init(&resp, kdp_device_tree_find(run.tree, "example.com/widget"));
        ck_assert_int_eq(run.ops->allocate(run.state, &(kdp_alloc_request){
                .resource = "example.com/widget", .device_ids = ids, .n_device_ids = 2 }, &resp), 0);

        ck_assert_uint_eq(resp.n_dev_nodes, 2);
        ck_assert_str_eq(resp.dev_nodes[0].host_path, "/dev/null");
        ck_assert_str_eq(resp.dev_nodes[0].container_path, "/dev/widget3");
        ck_assert_str_eq(resp.dev_nodes[0].permissions, "rw");
        ck_assert_str_eq(resp.dev_nodes[1].host_path, "/dev/null");
        ck_assert_str_eq(resp.dev_nodes[1].container_path, "/dev/widget1");
        ck_assert_str_eq(resp.dev_nodes[1].permissions, "rw");
        ck_assert_uint_eq(resp.n_envs, 3);
        ck_assert_pstr_eq(kv_get(resp.envs, resp.n_envs, "WIDGET_3"), "widget-3");
        ck_assert_pstr_eq(kv_get(resp.envs, resp.n_envs, "WIDGET_1"), "widget-1");
        ck_assert_pstr_eq(kv_get(resp.envs, resp.n_envs, "EXAMPLE_WIDGETS"), "widget-3,widget-1");
        ck_assert_uint_eq(resp.n_annotations, 1);
        ck_assert_str_eq(resp.annotations[0].key, "example.com/widgets");
        ck_assert_str_eq(resp.annotations[0].value, "widget-3,widget-1");
        ck_assert_uint_eq(resp.n_cdi_devices, 0);       /* example.cdi is off by default: no spec, no name */
        ck_assert_uint_eq(resp.n_mounts, 0);
}
END_TEST

/* example.cdi: each widget's record carries its CDI name (kdpd writes the spec from the record),
 * and Allocate names the widgets by it alone, after the configured resource. */
START_TEST(test_backend_example_allocate_names_cdi_after_configured_resource) {
        _cleanup_(example_run_done) example_run run = { 0 };
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response resp = { 0 };
        const char *const ids[] = { "widget-0" }, *const unknown[] = { "widget-8" };
        const kdp_device *d;

        example_start(&run, OVERRIDES("example.resource=acme.io/gizmo", "example.cdi=true"));
        d = kdp_device_list_find(kdp_device_tree_find(run.tree, "acme.io/gizmo"), "widget-0");
        ck_assert_ptr_nonnull(d);
        ck_assert_uint_eq(d->n_cdi_devices, 1);
        ck_assert_str_eq(d->cdi_devices[0], "acme.io/gizmo=widget-0");
        ck_assert_uint_eq(d->n_dev_nodes, 1);
        ck_assert_str_eq(d->dev_nodes[0].container_path, "/dev/widget0");
        kdp_alloc_response_init(&resp, kdp_device_tree_find(run.tree, "acme.io/gizmo"));
        ck_assert_int_eq(run.ops->allocate(run.state, &(kdp_alloc_request){
                .resource = "acme.io/gizmo", .device_ids = ids, .n_device_ids = 1 }, &resp), 0);
        ck_assert_uint_eq(resp.n_cdi_devices, 1);
        ck_assert_str_eq(resp.cdi_devices[0], "acme.io/gizmo=widget-0");
        ck_assert_uint_eq(resp.n_dev_nodes, 0);         /* in the spec: not named twice */
        ck_assert_uint_eq(resp.n_envs, 1);
        ck_assert_pstr_eq(kv_get(resp.envs, resp.n_envs, "EXAMPLE_WIDGETS"), "widget-0");
        ck_assert_uint_eq(resp.n_annotations, 1);
        ck_assert_str_eq(resp.annotations[0].value, "widget-0");
        ck_assert_int_eq(run.ops->allocate(run.state, &(kdp_alloc_request){
                .resource = "acme.io/gizmo", .device_ids = unknown, .n_device_ids = 1 }, &resp), -ENOENT);
}
END_TEST

START_TEST(test_backend_example_allocate_fails_on_unknown_id) {
        _cleanup_(example_run_done) example_run run = { 0 };
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response resp = { 0 };
        const char *const ids[] = { "widget-1", "widget-8" };

        example_start(&run, NULL);
        kdp_alloc_response_init(&resp, kdp_device_tree_find(run.tree, "example.com/widget"));
        ck_assert_int_eq(run.ops->allocate(run.state, &(kdp_alloc_request){
                .resource = "example.com/widget", .device_ids = ids, .n_device_ids = 2 }, &resp),
                -ENOENT);
}
END_TEST

/* ---- preferred, pre_start, probe, fini ---- */

START_TEST(test_backend_example_preferred_defers_to_the_framework) {
        _cleanup_(example_run_done) example_run run = { 0 };
        _cleanup_(kdp_pref_response_done) kdp_pref_response resp = { 0 };
        const char *const avail[] = { "widget-0", "widget-1", "widget-2" };
        const kdp_pref_request req = {
                .resource = "example.com/widget", .available = avail, .n_available = 3, .size = 2,
        };

        example_start(&run, NULL);
        kdp_pref_response_init(&resp, &req);
        ck_assert_int_eq(run.ops->preferred(run.state, &req, &resp), -EOPNOTSUPP);
        ck_assert_uint_eq(resp.n_ids, 0);
}
END_TEST

static int64_t elapsed_ms(const struct timespec *since) {
        struct timespec now;

        ck_assert_int_eq(clock_gettime(CLOCK_MONOTONIC, &now), 0);
        return (now.tv_sec - since->tv_sec) * 1000 + (now.tv_nsec - since->tv_nsec) / 1000000;
}

START_TEST(test_backend_example_pre_start_sleeps_the_configured_delay) {
        _cleanup_(example_run_done) example_run run = { 0 };
        const char *const ids[] = { "widget-0" };
        const kdp_prestart_request req = { "example.com/widget", ids, 1 };
        struct timespec start;

        example_start(&run, OVERRIDES("example.prestart_delay_ms=150"));
        ck_assert_int_eq(clock_gettime(CLOCK_MONOTONIC, &start), 0);
        ck_assert_int_eq(run.ops->pre_start(run.state, &req), 0);
        ck_assert_int_ge(elapsed_ms(&start), 150);      /* a lower bound only: a busy machine is slower */
}
END_TEST

START_TEST(test_backend_example_pre_start_returns_at_once_by_default) {
        _cleanup_(example_run_done) example_run run = { 0 };
        const char *const ids[] = { "widget-0", "widget-1" };
        const kdp_prestart_request req = { "example.com/widget", ids, 2 };
        const kdp_param_spec *p;

        example_start(&run, NULL);
        for (p = run.ops->params; p && p->name && strcmp(p->name, "prestart_delay_ms") != 0; p++)
                ;
        ck_assert_ptr_nonnull(p);
        ck_assert_ptr_nonnull(p->name);
        ck_assert_str_eq(p->default_value, "0");        /* no delay unless configured */
        ck_assert_int_eq(run.ops->pre_start(run.state, &req), 0);
}
END_TEST

START_TEST(test_backend_example_probe_reports_configured_health) {
        _cleanup_(example_run_done) example_run run = { 0 };
        _cleanup_free_ char *reason = NULL;
        char *untouched = (char *) "untouched";

        example_start(&run, OVERRIDES("example.unhealthy=widget-2"));
        ck_assert_int_eq(run.ops->probe(run.state, "example.com/widget", "widget-2", &reason), KDP_UNHEALTHY);
        ck_assert_pstr_eq(reason, "configured unhealthy");

        ck_assert_int_eq(run.ops->probe(run.state, "example.com/widget", "widget-1", &untouched), KDP_HEALTHY);
        ck_assert_str_eq(untouched, "untouched");
        ck_assert_int_eq(run.ops->probe(run.state, "example.com/widget", "widget-8", &untouched), -ENOENT);
        ck_assert_int_eq(run.ops->probe(run.state, "example.com/widget", "widget-02", &untouched), -ENOENT);
        ck_assert_int_eq(run.ops->probe(run.state, "example.com/widget", "widget-2x", &untouched), -ENOENT);
        ck_assert_int_eq(run.ops->probe(run.state, "example.com/other", "widget-2", &untouched), -ENOENT);
        ck_assert_str_eq(untouched, "untouched");
}
END_TEST

START_TEST(test_backend_example_fini_accepts_null) {
        void *handle = NULL;
        const kdp_backend_ops *ops = example_load(&handle);

        ops->fini(NULL);
        ck_assert_int_eq(dlclose(handle), 0);
}
END_TEST

static Suite *backend_example_suite(void) {
        Suite *s = suite_create("backend-example");
        TCase *tc;

        tc = tcase_create("abi");
        tcase_set_timeout(tc, 10);
        tcase_add_test(tc, test_backend_example_entry_describes_every_hook);
        tcase_add_test(tc, test_backend_example_fini_accepts_null);
        suite_add_tcase(s, tc);

        tc = tcase_create("scan");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_backend_example_scan_defaults_to_8_widgets_on_2_numa_nodes);
        tcase_add_test(tc, test_backend_example_scan_follows_configured_params);
        tcase_add_test(tc, test_backend_example_scan_sorts_12_widgets_by_id);
        tcase_add_test(tc, test_backend_example_scan_without_numa_nodes_reports_no_topology);
        tcase_add_test(tc, test_backend_example_scan_with_zero_devices_keeps_the_resource);
        tcase_add_test(tc, test_backend_example_scan_reports_configured_unhealthy);
        tcase_add_test(tc, test_backend_example_scan_ignores_unknown_unhealthy_ids);
        tcase_add_test(tc, test_backend_example_scan_declares_widgets_not_served);
        tcase_add_test(tc, test_backend_example_scan_4096_widgets);
        suite_add_tcase(s, tc);

        tc = tcase_create("params");
        tcase_set_timeout(tc, 10);
        tcase_add_test(tc, test_backend_example_init_rejects_out_of_range_params);
        tcase_add_test(tc, test_backend_example_init_accepts_param_limits);
        tcase_add_test(tc, test_backend_example_ctx_rejects_undeclared_param);
        suite_add_tcase(s, tc);

        tc = tcase_create("allocate");
        tcase_set_timeout(tc, 10);
        tcase_add_test(tc, test_backend_example_allocate_adds_devices_env_and_annotation);
        tcase_add_test(tc, test_backend_example_allocate_names_cdi_after_configured_resource);
        tcase_add_test(tc, test_backend_example_allocate_fails_on_unknown_id);
        suite_add_tcase(s, tc);

        tc = tcase_create("hooks");
        tcase_set_timeout(tc, 10);
        tcase_add_test(tc, test_backend_example_preferred_defers_to_the_framework);
        tcase_add_test(tc, test_backend_example_pre_start_sleeps_the_configured_delay);
        tcase_add_test(tc, test_backend_example_pre_start_returns_at_once_by_default);
        tcase_add_test(tc, test_backend_example_probe_reports_configured_health);
        suite_add_tcase(s, tc);

        return s;
}

int main(void) {
        return kdp_test_run(backend_example_suite());
}
