/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdp/backend.h>
#include <kdp/cleanup.h>

#include "alloc.h"
#include "device.h"

#include "kdp-test.h"

/* ---- fixture: two widgets sharing a control node, an env key and a CDI name ---- */

static kdp_device_list devices;

static const kdp_device_info infos[] = {
        {
                .id = "w0",
                .dev_nodes = (const kdp_dev_node[]) {
                        { .host_path = "/dev/widget0" },
                        { .host_path = "/dev/widget-ctl", .container_path = "/dev/ctl", .permissions = "rwm" },
                        { 0 },
                },
                .mounts = (const kdp_mount[]) { { .host_path = "/opt/widget", .read_only = 1 }, { 0 } },
                .envs = (const kdp_kv[]) { { "WIDGET_VISIBLE", "0" }, { "WIDGET_W0", "yes" }, { 0 } },
                .annotations = (const kdp_kv[]) { { "example.com/slot", "0" }, { 0 } },
                .cdi_devices = (const char *const[]) { "example.com/widget=w0", "example.com/widget=ctl", NULL },
        },
        {
                .id = "w1",
                .dev_nodes = (const kdp_dev_node[]) {
                        { .host_path = "/dev/widget1" },
                        { .host_path = "/dev/widget-ctl1", .container_path = "/dev/ctl", .permissions = "r" },
                        { 0 },
                },
                .mounts = (const kdp_mount[]) {
                        { .host_path = "/opt/widget-other", .container_path = "/opt/widget" },
                        { .host_path = "/var/lib/w1" },
                        { 0 },
                },
                .envs = (const kdp_kv[]) { { "WIDGET_VISIBLE", "1" }, { 0 } },
                .annotations = (const kdp_kv[]) { { "example.com/slot", "1" }, { 0 } },
                .cdi_devices = (const char *const[]) { "example.com/widget=ctl", "example.com/widget=w1", NULL },
        },
        { .id = "w2" },
};

static void setup(void) {
        ck_assert_int_eq(kdp_device_list_init(&devices, "example.com/widget"), 0);
        for (size_t i = 0; i < KDP_ELEMENTSOF(infos); i++) {
                kdp_device d;

                ck_assert_int_eq(kdp_device_from_info(&infos[i], NULL, &d), 0);
                ck_assert_int_eq(kdp_device_list_append(&devices, &d), 0);
        }
}

static void teardown(void) {
        kdp_device_list_done(&devices);
}

/* ---- add_device ---- */

START_TEST(test_alloc_response_add_device_copies_the_device_record) {
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response r;

        kdp_alloc_response_init(&r, &devices);
        ck_assert_int_eq(kdp_alloc_response_add_device(&r, "w0"), 0);

        ck_assert_uint_eq(r.n_dev_nodes, 2);
        ck_assert_str_eq(r.dev_nodes[0].host_path, "/dev/widget0");
        ck_assert_str_eq(r.dev_nodes[0].container_path, "/dev/widget0");
        ck_assert_str_eq(r.dev_nodes[0].permissions, "rw");
        ck_assert_str_eq(r.dev_nodes[1].host_path, "/dev/widget-ctl");
        ck_assert_str_eq(r.dev_nodes[1].container_path, "/dev/ctl");
        ck_assert_str_eq(r.dev_nodes[1].permissions, "rwm");
        ck_assert_ptr_ne(r.dev_nodes[0].host_path, devices.devices[0].dev_nodes[0].host_path);

        ck_assert_uint_eq(r.n_mounts, 1);
        ck_assert_str_eq(r.mounts[0].host_path, "/opt/widget");
        ck_assert_str_eq(r.mounts[0].container_path, "/opt/widget");
        ck_assert_int_eq(r.mounts[0].read_only, 1);

        ck_assert_uint_eq(r.n_envs, 2);
        ck_assert_str_eq(r.envs[0].key, "WIDGET_VISIBLE");
        ck_assert_str_eq(r.envs[0].value, "0");
        ck_assert_str_eq(r.envs[1].key, "WIDGET_W0");
        ck_assert_str_eq(r.envs[1].value, "yes");

        ck_assert_uint_eq(r.n_annotations, 1);
        ck_assert_str_eq(r.annotations[0].key, "example.com/slot");
        ck_assert_str_eq(r.annotations[0].value, "0");

        ck_assert_uint_eq(r.n_cdi_devices, 2);
        ck_assert_str_eq(r.cdi_devices[0], "example.com/widget=w0");
        ck_assert_str_eq(r.cdi_devices[1], "example.com/widget=ctl");
}
END_TEST

START_TEST(test_alloc_response_add_device_merges_devices_with_unique_keys) {
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response r;

        kdp_alloc_response_init(&r, &devices);
        ck_assert_int_eq(kdp_alloc_response_add_device(&r, "w0"), 0);
        ck_assert_int_eq(kdp_alloc_response_add_device(&r, "w1"), 0);
        ck_assert_int_eq(kdp_alloc_response_add_device(&r, "w2"), 0);
        ck_assert_int_eq(kdp_alloc_response_add_device(&r, "w0"), 0);

        /* dev nodes and mounts: the first for a container path wins */
        ck_assert_uint_eq(r.n_dev_nodes, 3);
        ck_assert_str_eq(r.dev_nodes[0].container_path, "/dev/widget0");
        ck_assert_str_eq(r.dev_nodes[1].container_path, "/dev/ctl");
        ck_assert_str_eq(r.dev_nodes[1].host_path, "/dev/widget-ctl");
        ck_assert_str_eq(r.dev_nodes[1].permissions, "rwm");
        ck_assert_str_eq(r.dev_nodes[2].container_path, "/dev/widget1");
        ck_assert_uint_eq(r.n_mounts, 2);
        ck_assert_str_eq(r.mounts[0].host_path, "/opt/widget");
        ck_assert_int_eq(r.mounts[0].read_only, 1);
        ck_assert_str_eq(r.mounts[1].host_path, "/var/lib/w1");

        /* envs and annotations: the last value wins, in the place of the first */
        ck_assert_uint_eq(r.n_envs, 2);
        ck_assert_str_eq(r.envs[0].key, "WIDGET_VISIBLE");
        ck_assert_str_eq(r.envs[0].value, "0");         /* w0 was added again last */
        ck_assert_str_eq(r.envs[1].key, "WIDGET_W0");
        ck_assert_uint_eq(r.n_annotations, 1);
        ck_assert_str_eq(r.annotations[0].value, "0");

        /* CDI names: each once */
        ck_assert_uint_eq(r.n_cdi_devices, 3);
        ck_assert_str_eq(r.cdi_devices[0], "example.com/widget=w0");
        ck_assert_str_eq(r.cdi_devices[1], "example.com/widget=ctl");
        ck_assert_str_eq(r.cdi_devices[2], "example.com/widget=w1");
}
END_TEST

START_TEST(test_alloc_response_add_device_rejects_unknown_id) {
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response r, none;

        kdp_alloc_response_init(&r, &devices);
        ck_assert_int_eq(kdp_alloc_response_add_device(&r, "w9"), -ENOENT);
        ck_assert_int_eq(kdp_alloc_response_add_device(&r, ""), -ENOENT);
        ck_assert_int_eq(kdp_alloc_response_add_device(&r, NULL), -EINVAL);
        ck_assert_int_eq(kdp_alloc_response_add_device(NULL, "w0"), -EINVAL);
        ck_assert_uint_eq(r.n_dev_nodes + r.n_mounts + r.n_envs + r.n_annotations + r.n_cdi_devices, 0);

        kdp_alloc_response_init(&none, NULL);
        ck_assert_int_eq(kdp_alloc_response_add_device(&none, "w0"), -ENOENT);
}
END_TEST

/* ---- setters ---- */

START_TEST(test_alloc_response_add_env_replaces_an_earlier_value) {
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response r;
        char value[] = "a";

        kdp_alloc_response_init(&r, NULL);
        ck_assert_int_eq(kdp_alloc_response_add_env(&r, "A", value), 0);
        value[0] = 'X';
        ck_assert_int_eq(kdp_alloc_response_add_env(&r, "B", "b"), 0);
        ck_assert_int_eq(kdp_alloc_response_add_env(&r, "A", "a2"), 0);
        ck_assert_int_eq(kdp_alloc_response_add_env(&r, "EMPTY", ""), 0);

        ck_assert_uint_eq(r.n_envs, 3);
        ck_assert_str_eq(r.envs[0].key, "A");
        ck_assert_str_eq(r.envs[0].value, "a2");
        ck_assert_str_eq(r.envs[1].key, "B");
        ck_assert_str_eq(r.envs[1].value, "b");
        ck_assert_str_eq(r.envs[2].value, "");
}
END_TEST

START_TEST(test_alloc_response_add_env_rejects_bad_arguments) {
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response r;

        kdp_alloc_response_init(&r, NULL);
        ck_assert_int_eq(kdp_alloc_response_add_env(NULL, "A", "a"), -EINVAL);
        ck_assert_int_eq(kdp_alloc_response_add_env(&r, NULL, "a"), -EINVAL);
        ck_assert_int_eq(kdp_alloc_response_add_env(&r, "", "a"), -EINVAL);
        ck_assert_int_eq(kdp_alloc_response_add_env(&r, "A=B", "a"), -EINVAL);
        ck_assert_int_eq(kdp_alloc_response_add_env(&r, "A", NULL), -EINVAL);
        ck_assert_uint_eq(r.n_envs, 0);
}
END_TEST

START_TEST(test_alloc_response_add_annotation_replaces_an_earlier_value) {
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response r;

        kdp_alloc_response_init(&r, NULL);
        ck_assert_int_eq(kdp_alloc_response_add_annotation(&r, "example.com/a", "1"), 0);
        ck_assert_int_eq(kdp_alloc_response_add_annotation(&r, "example.com/a", "2"), 0);
        ck_assert_int_eq(kdp_alloc_response_add_annotation(&r, "k=v", "3"), 0);       /* only envs forbid '=' */
        ck_assert_uint_eq(r.n_annotations, 2);
        ck_assert_str_eq(r.annotations[0].value, "2");
        ck_assert_str_eq(r.annotations[1].key, "k=v");

        ck_assert_int_eq(kdp_alloc_response_add_annotation(NULL, "a", "1"), -EINVAL);
        ck_assert_int_eq(kdp_alloc_response_add_annotation(&r, "", "1"), -EINVAL);
        ck_assert_int_eq(kdp_alloc_response_add_annotation(&r, NULL, "1"), -EINVAL);
        ck_assert_int_eq(kdp_alloc_response_add_annotation(&r, "a", NULL), -EINVAL);
        ck_assert_uint_eq(r.n_annotations, 2);
}
END_TEST

START_TEST(test_alloc_response_add_dev_node_resolves_defaults_and_keeps_the_first_per_path) {
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response r;

        kdp_alloc_response_init(&r, NULL);
        ck_assert_int_eq(kdp_alloc_response_add_dev_node(&r, &(kdp_dev_node) { .host_path = "/dev/a" }), 0);
        ck_assert_int_eq(kdp_alloc_response_add_dev_node(&r, &(kdp_dev_node) {
                .host_path = "/dev/b", .container_path = "/dev/a", .permissions = "r" }), 0);
        ck_assert_int_eq(kdp_alloc_response_add_dev_node(&r, &(kdp_dev_node) {
                .host_path = "/dev/a", .container_path = "/dev/c", .permissions = "mr" }), 0);

        ck_assert_uint_eq(r.n_dev_nodes, 2);
        ck_assert_str_eq(r.dev_nodes[0].host_path, "/dev/a");
        ck_assert_str_eq(r.dev_nodes[0].container_path, "/dev/a");
        ck_assert_str_eq(r.dev_nodes[0].permissions, "rw");
        ck_assert_str_eq(r.dev_nodes[1].host_path, "/dev/a");
        ck_assert_str_eq(r.dev_nodes[1].container_path, "/dev/c");
        ck_assert_str_eq(r.dev_nodes[1].permissions, "mr");
}
END_TEST

START_TEST(test_alloc_response_add_dev_node_rejects_relative_paths_and_bad_permissions) {
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response r;

        kdp_alloc_response_init(&r, NULL);
        ck_assert_int_eq(kdp_alloc_response_add_dev_node(NULL, &(kdp_dev_node) { .host_path = "/dev/a" }), -EINVAL);
        ck_assert_int_eq(kdp_alloc_response_add_dev_node(&r, NULL), -EINVAL);
        ck_assert_int_eq(kdp_alloc_response_add_dev_node(&r, &(kdp_dev_node) { 0 }), -EINVAL);
        ck_assert_int_eq(kdp_alloc_response_add_dev_node(&r, &(kdp_dev_node) { .host_path = "dev/a" }), -EINVAL);
        ck_assert_int_eq(kdp_alloc_response_add_dev_node(&r, &(kdp_dev_node) {
                .host_path = "/dev/a", .container_path = "a" }), -EINVAL);
        ck_assert_int_eq(kdp_alloc_response_add_dev_node(&r, &(kdp_dev_node) {
                .host_path = "/dev/a", .permissions = "" }), -EINVAL);
        ck_assert_int_eq(kdp_alloc_response_add_dev_node(&r, &(kdp_dev_node) {
                .host_path = "/dev/a", .permissions = "rwx" }), -EINVAL);
        ck_assert_int_eq(kdp_alloc_response_add_dev_node(&r, &(kdp_dev_node) {
                .host_path = "/dev/a", .permissions = "ww" }), -EINVAL);
        ck_assert_uint_eq(r.n_dev_nodes, 0);
}
END_TEST

START_TEST(test_alloc_response_add_mount_resolves_defaults_and_keeps_the_first_per_path) {
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response r;

        kdp_alloc_response_init(&r, NULL);
        ck_assert_int_eq(kdp_alloc_response_add_mount(&r, &(kdp_mount) { .host_path = "/opt/a", .read_only = 2 }), 0);
        ck_assert_int_eq(kdp_alloc_response_add_mount(&r, &(kdp_mount) {
                .host_path = "/opt/b", .container_path = "/opt/a" }), 0);
        ck_assert_int_eq(kdp_alloc_response_add_mount(&r, &(kdp_mount) {
                .host_path = "/opt/b", .container_path = "/b" }), 0);

        ck_assert_uint_eq(r.n_mounts, 2);
        ck_assert_str_eq(r.mounts[0].host_path, "/opt/a");
        ck_assert_str_eq(r.mounts[0].container_path, "/opt/a");
        ck_assert_int_eq(r.mounts[0].read_only, 1);
        ck_assert_str_eq(r.mounts[1].host_path, "/opt/b");
        ck_assert_str_eq(r.mounts[1].container_path, "/b");
        ck_assert_int_eq(r.mounts[1].read_only, 0);

        ck_assert_int_eq(kdp_alloc_response_add_mount(NULL, &(kdp_mount) { .host_path = "/x" }), -EINVAL);
        ck_assert_int_eq(kdp_alloc_response_add_mount(&r, NULL), -EINVAL);
        ck_assert_int_eq(kdp_alloc_response_add_mount(&r, &(kdp_mount) { .host_path = "x" }), -EINVAL);
        ck_assert_int_eq(kdp_alloc_response_add_mount(&r, &(kdp_mount) { .host_path = "/x", .container_path = "x" }),
                         -EINVAL);
        ck_assert_int_eq(kdp_alloc_response_add_mount(&r, &(kdp_mount) { 0 }), -EINVAL);
        ck_assert_uint_eq(r.n_mounts, 2);
}
END_TEST

START_TEST(test_alloc_response_add_cdi_device_validates_and_deduplicates) {
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response r;

        kdp_alloc_response_init(&r, NULL);
        ck_assert_int_eq(kdp_alloc_response_add_cdi_device(&r, "vendor.com/class=a"), 0);
        ck_assert_int_eq(kdp_alloc_response_add_cdi_device(&r, "vendor.com/class=b"), 0);
        ck_assert_int_eq(kdp_alloc_response_add_cdi_device(&r, "vendor.com/class=a"), 0);
        ck_assert_int_eq(kdp_alloc_response_add_cdi_device(&r, "vendor.com/class"), -EINVAL);
        ck_assert_int_eq(kdp_alloc_response_add_cdi_device(&r, "a"), -EINVAL);
        ck_assert_int_eq(kdp_alloc_response_add_cdi_device(&r, NULL), -EINVAL);
        ck_assert_int_eq(kdp_alloc_response_add_cdi_device(NULL, "vendor.com/class=a"), -EINVAL);

        ck_assert_uint_eq(r.n_cdi_devices, 2);
        ck_assert_str_eq(r.cdi_devices[0], "vendor.com/class=a");
        ck_assert_str_eq(r.cdi_devices[1], "vendor.com/class=b");
}
END_TEST

START_TEST(test_alloc_response_done_empties_and_keeps_the_device_list) {
        kdp_alloc_response r;

        kdp_alloc_response_init(&r, &devices);
        ck_assert_int_eq(kdp_alloc_response_add_device(&r, "w1"), 0);
        kdp_alloc_response_done(&r);
        ck_assert_ptr_eq(r.devices, &devices);
        ck_assert_ptr_null(r.envs);
        ck_assert_uint_eq(r.n_dev_nodes + r.n_mounts + r.n_envs + r.n_annotations + r.n_cdi_devices, 0);

        /* reusable after done, and done twice is harmless */
        ck_assert_int_eq(kdp_alloc_response_add_device(&r, "w0"), 0);
        kdp_alloc_response_done(&r);
        kdp_alloc_response_done(&r);
        kdp_alloc_response_done(NULL);
}
END_TEST

/* ---- preferred ---- */

static const char *const available[] = { "w0", "w1", "w2", "w3" };

START_TEST(test_pref_response_add_keeps_available_ids_in_order_without_duplicates) {
        const kdp_pref_request req = {
                .resource = "example.com/widget",
                .available = available,
                .n_available = 4,
                .size = 2,
        };
        _cleanup_(kdp_pref_response_done) kdp_pref_response r;
        char id[] = "w2";

        kdp_pref_response_init(&r, &req);
        ck_assert_int_eq(kdp_pref_response_add(&r, id), 0);
        ck_assert_int_eq(kdp_pref_response_add(&r, "w0"), 0);
        ck_assert_int_eq(kdp_pref_response_add(&r, "w2"), 0);

        ck_assert_uint_eq(r.n_ids, 2);
        ck_assert_str_eq(r.ids[0], "w2");
        ck_assert_str_eq(r.ids[1], "w0");
        /* the answer borrows the request's strings, not the caller's */
        ck_assert_ptr_eq(r.ids[0], available[2]);
        ck_assert_ptr_eq(r.ids[1], available[0]);
}
END_TEST

START_TEST(test_pref_response_add_rejects_unavailable_id) {
        const kdp_pref_request req = { .available = available, .n_available = 2, .size = 1 };
        _cleanup_(kdp_pref_response_done) kdp_pref_response r, unset;

        kdp_pref_response_init(&r, &req);
        ck_assert_int_eq(kdp_pref_response_add(&r, "w2"), -EINVAL);     /* beyond n_available */
        ck_assert_int_eq(kdp_pref_response_add(&r, "w9"), -EINVAL);
        ck_assert_int_eq(kdp_pref_response_add(&r, ""), -EINVAL);
        ck_assert_int_eq(kdp_pref_response_add(&r, NULL), -EINVAL);
        ck_assert_int_eq(kdp_pref_response_add(NULL, "w0"), -EINVAL);
        ck_assert_uint_eq(r.n_ids, 0);

        kdp_pref_response_init(&unset, NULL);
        ck_assert_int_eq(kdp_pref_response_add(&unset, "w0"), -EINVAL);
}
END_TEST

START_TEST(test_pref_response_add_grows_past_its_first_allocation) {
        const char *ids[100];
        char names[100][8];
        const kdp_pref_request req = { .available = ids, .n_available = 100, .size = 100 };
        _cleanup_(kdp_pref_response_done) kdp_pref_response r;

        for (int i = 0; i < 100; i++) {
                (void) snprintf(names[i], sizeof(names[i]), "d%d", i);
                ids[i] = names[i];
        }
        kdp_pref_response_init(&r, &req);
        for (int i = 99; i >= 0; i--)
                ck_assert_int_eq(kdp_pref_response_add(&r, names[i]), 0);
        ck_assert_uint_eq(r.n_ids, 100);
        ck_assert_uint_ge(r.n_allocated, 100);
        ck_assert_str_eq(r.ids[0], "d99");
        ck_assert_str_eq(r.ids[99], "d0");

        kdp_pref_response_done(&r);
        ck_assert_ptr_eq(r.req, &req);
        ck_assert_uint_eq(r.n_ids, 0);
        ck_assert_ptr_null(r.ids);
}
END_TEST

static Suite *alloc_suite(void) {
        Suite *s = suite_create("alloc");
        TCase *tc;

        tc = tcase_create("alloc-response");
        tcase_set_timeout(tc, 10);
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_alloc_response_add_device_copies_the_device_record);
        tcase_add_test(tc, test_alloc_response_add_device_merges_devices_with_unique_keys);
        tcase_add_test(tc, test_alloc_response_add_device_rejects_unknown_id);
        tcase_add_test(tc, test_alloc_response_add_env_replaces_an_earlier_value);
        tcase_add_test(tc, test_alloc_response_add_env_rejects_bad_arguments);
        tcase_add_test(tc, test_alloc_response_add_annotation_replaces_an_earlier_value);
        tcase_add_test(tc, test_alloc_response_add_dev_node_resolves_defaults_and_keeps_the_first_per_path);
        tcase_add_test(tc, test_alloc_response_add_dev_node_rejects_relative_paths_and_bad_permissions);
        tcase_add_test(tc, test_alloc_response_add_mount_resolves_defaults_and_keeps_the_first_per_path);
        tcase_add_test(tc, test_alloc_response_add_cdi_device_validates_and_deduplicates);
        tcase_add_test(tc, test_alloc_response_done_empties_and_keeps_the_device_list);
        suite_add_tcase(s, tc);

        tc = tcase_create("pref-response");
        tcase_set_timeout(tc, 10);
        tcase_add_test(tc, test_pref_response_add_keeps_available_ids_in_order_without_duplicates);
        tcase_add_test(tc, test_pref_response_add_rejects_unavailable_id);
        tcase_add_test(tc, test_pref_response_add_grows_past_its_first_allocation);
        suite_add_tcase(s, tc);

        return s;
}

int main(void) {
        return kdp_test_run(alloc_suite());
}
