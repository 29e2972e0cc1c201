/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The backend loader: every refusal with its exact error, and the hooks of a good backend. */
#include <check.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "registry.h"

#include "kdp-test.h"

static const char *const test_dirs[] = { KDP_TEST_BACKEND_DIR, KDP_BUILD_DIR "/plugins", NULL };

static int load(const char *name, kdp_backend **ret) {
        return kdp_registry_load(name, test_dirs, ret);
}

START_TEST(test_registry_refuses_each_broken_backend) {
        kdp_backend *b = NULL;

        ck_assert_int_eq(load("nosuch", &b), -ENOENT);
        ck_assert_int_eq(load("/nonexistent/kdp-backend-x.so", &b), -ENOENT);
        ck_assert_int_eq(load("noentry", &b), -ENOEXEC);
        ck_assert_int_eq(load("badabi", &b), -EPROTO);
        ck_assert_int_eq(load("nohook", &b), -EPROTO);
        ck_assert_int_eq(load("badname", &b), -EPROTO);
        ck_assert_ptr_null(b);                  /* never written on failure */
}
END_TEST

START_TEST(test_registry_refuses_a_file_that_is_not_a_shared_object) {
        kdp_backend *b = NULL;
        char path[] = "/tmp/kdp-backend-junk-XXXXXX";
        int fd = mkstemp(path);

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, "not an ELF file", 15), 15);
        close(fd);
        ck_assert_int_eq(kdp_registry_load(path, NULL, &b), -ELIBBAD);
        unlink(path);
}
END_TEST

START_TEST(test_registry_loads_example_with_its_optional_hooks) {
        _cleanup_(kdp_registry_freep) kdp_backend *b = NULL;

        ck_assert_int_eq(load("example", &b), 0);
        ck_assert_str_eq(b->name, "example");
        ck_assert_str_eq(b->path, KDP_BUILD_DIR "/plugins/kdp-backend-example.so");
        ck_assert_ptr_nonnull(b->allocate);
        ck_assert_ptr_nonnull(b->pre_start);
        ck_assert_ptr_nonnull(b->probe);
        ck_assert(!b->started);
}
END_TEST

START_TEST(test_registry_scans_example_devices) {
        _cleanup_(kdp_registry_freep) kdp_backend *b = NULL;
        _cleanup_(kdp_device_tree_freep) kdp_device_tree *tree = NULL;
        _cleanup_(kdp_config_freep) kdp_config *c = NULL;
        const char *roots[_KDP_PATH_KIND_MAX] = { 0 };
        kdp_device_list *l;

        ck_assert_int_eq(kdp_config_load(NULL, &c), 0);
        ck_assert_int_eq(kdp_config_add_override(c, "example.devices=3"), 0);
        ck_assert_int_eq(kdp_config_add_override(c, "example.unhealthy=widget-1"), 0);
        ck_assert_int_eq(load("example", &b), 0);
        ck_assert_int_eq(kdp_registry_scan(b, NULL, &tree), -ESRCH);   /* not started */
        ck_assert_int_eq(kdp_registry_start(b, c, roots), 0);
        ck_assert_int_eq(kdp_registry_start(b, c, roots), -EALREADY);
        ck_assert_int_eq(kdp_registry_scan(b, NULL, &tree), 0);
        l = kdp_device_tree_find(tree, "example.com/widget");
        ck_assert_ptr_nonnull(l);
        ck_assert_int_eq(l->n_devices, 3);
        ck_assert_str_eq(l->devices[0].id, "widget-0");
        ck_assert_str_eq(l->devices[2].id, "widget-2");
        ck_assert_int_eq(l->devices[1].health, KDP_UNHEALTHY);
        ck_assert_str_eq(l->devices[1].health_reason, "configured unhealthy");
        ck_assert_int_eq(l->devices[0].health, KDP_HEALTHY);
        kdp_registry_stop(b);
        ck_assert(!b->started);
        ck_assert_ptr_null(b->ctx);
}
END_TEST

START_TEST(test_registry_start_refuses_unknown_config_key) {
        _cleanup_(kdp_registry_freep) kdp_backend *b = NULL;
        _cleanup_(kdp_config_freep) kdp_config *c = NULL;
        const char *roots[_KDP_PATH_KIND_MAX] = { 0 };

        ck_assert_int_eq(kdp_config_load(NULL, &c), 0);
        ck_assert_int_eq(kdp_config_add_override(c, "example.colour=blue"), 0);
        ck_assert_int_eq(load("example", &b), 0);
        ck_assert_int_eq(kdp_registry_start(b, c, roots), -EINVAL);
        ck_assert(!b->started);
}
END_TEST

START_TEST(test_registry_start_reports_init_failure) {
        _cleanup_(kdp_registry_freep) kdp_backend *b = NULL;
        const char *roots[_KDP_PATH_KIND_MAX] = { 0 };

        ck_assert_int_eq(load("initfail", &b), 0);
        ck_assert_int_eq(kdp_registry_start(b, NULL, roots), -ENODEV);
        ck_assert(!b->started);
        ck_assert_ptr_null(b->ctx);
}
END_TEST

START_TEST(test_registry_default_hooks_without_backend_hooks) {
        _cleanup_(kdp_registry_freep) kdp_backend *b = NULL;
        const char *roots[_KDP_PATH_KIND_MAX] = { 0 };
        kdp_prestart_request pr = { .resource = "twin.example.com/gadget" };

        ck_assert_int_eq(load("twin", &b), 0);
        ck_assert_ptr_null(b->allocate);
        ck_assert_ptr_null(b->pre_start);
        ck_assert_int_eq(kdp_registry_start(b, NULL, roots), 0);
        ck_assert_int_eq(kdp_registry_allocate(b, NULL, NULL), -EOPNOTSUPP);
        ck_assert_int_eq(kdp_registry_preferred(b, NULL, NULL), -EOPNOTSUPP);
        ck_assert_int_eq(kdp_registry_pre_start(b, &pr), 0);
}
END_TEST

/* The reload hook: called only while started, reaching the state; none for a backend without it. */
START_TEST(test_registry_reload_calls_the_hook_of_a_started_backend) {
        _cleanup_(kdp_registry_freep) kdp_backend *b = NULL, *twin = NULL;
        _cleanup_(kdp_device_tree_freep) kdp_device_tree *tree = NULL;
        const char *roots[_KDP_PATH_KIND_MAX] = { 0 };
        const kdp_device_list *l;

        ck_assert_int_eq(load("reloader", &b), 0);
        ck_assert_ptr_nonnull(b->reload);
        ck_assert_int_eq(kdp_registry_reload(b), -ESRCH);       /* not started */
        ck_assert_int_eq(kdp_registry_start(b, NULL, roots), 0);
        ck_assert_int_eq(kdp_registry_reload(b), 0);
        ck_assert_int_eq(kdp_registry_reload(b), 0);
        ck_assert_int_eq(kdp_registry_scan(b, NULL, &tree), 0);
        l = kdp_device_tree_find(tree, "reloader.example.com/thing");
        ck_assert_ptr_nonnull(l);
        ck_assert_int_eq(l->n_devices, 3);                      /* devices=1, one more per reload */
        kdp_registry_stop(b);
        ck_assert_int_eq(kdp_registry_reload(b), -ESRCH);

        ck_assert_int_eq(load("twin", &twin), 0);
        ck_assert_ptr_null(twin->reload);
        ck_assert_int_eq(kdp_registry_start(twin, NULL, roots), 0);
        ck_assert_int_eq(kdp_registry_reload(twin), -EOPNOTSUPP);
}
END_TEST

/* A backend whose struct_size ends before `reload` has none, whatever lies beyond its table. */
START_TEST(test_registry_ignores_reload_beyond_struct_size) {
        _cleanup_(kdp_registry_freep) kdp_backend *b = NULL;
        _cleanup_(kdp_device_tree_freep) kdp_device_tree *tree = NULL;
        const char *roots[_KDP_PATH_KIND_MAX] = { 0 };

        ck_assert_int_eq(load("oldreload", &b), 0);
        ck_assert_uint_eq(b->ops->struct_size, offsetof(kdp_backend_ops, reload));
        ck_assert(!KDP_OPS_HAS(b->ops, reload));
        ck_assert(KDP_OPS_HAS(b->ops, device_event));
        ck_assert_ptr_null(b->reload);
        ck_assert_int_eq(kdp_registry_start(b, NULL, roots), 0);
        ck_assert_int_eq(kdp_registry_reload(b), -EOPNOTSUPP);
        ck_assert_int_eq(kdp_registry_scan(b, NULL, &tree), 0);
        ck_assert_int_eq(kdp_device_tree_find(tree, "oldreload.example.com/thing")->n_devices, 1);
}
END_TEST

static Suite *registry_suite(void) {
        Suite *s = suite_create("registry");
        TCase *tc = tcase_create("load");

        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, test_registry_refuses_each_broken_backend);
        tcase_add_test(tc, test_registry_refuses_a_file_that_is_not_a_shared_object);
        tcase_add_test(tc, test_registry_loads_example_with_its_optional_hooks);
        tcase_add_test(tc, test_registry_scans_example_devices);
        tcase_add_test(tc, test_registry_start_refuses_unknown_config_key);
        tcase_add_test(tc, test_registry_start_reports_init_failure);
        tcase_add_test(tc, test_registry_default_hooks_without_backend_hooks);
        tcase_add_test(tc, test_registry_reload_calls_the_hook_of_a_started_backend);
        tcase_add_test(tc, test_registry_ignores_reload_beyond_struct_size);
        suite_add_tcase(s, tc);

        return s;
}

int main(void) {
        return kdp_test_run(registry_suite());
}
