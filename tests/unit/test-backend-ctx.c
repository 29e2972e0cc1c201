/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <kdp/backend.h>
#include <kdp/cleanup.h>

#include "backend-ctx.h"
#include "config.h"

#include "kdp-test.h"

/* ---- helpers ---- */

static char *write_yaml(const char *content) {
        return kdp_test_write_temp("backend-ctx", ".yaml", content, strlen(content));
}

static const kdp_param_spec specs[] = {
        { "devices", "4", "how many widgets" },
        { "resource", "example.com/widget", "resource name" },
        { "health-file", NULL, "a file whose presence marks widgets unhealthy" },
        { "verbose", "no", "log more" },
        { 0 },
};

/* A context for backend "example" whose params are set by -o overrides (NULL-terminated). */
static kdp_backend_ctx *ctx_with(const char *const *overrides) {
        _cleanup_(kdp_config_freep) kdp_config *c = NULL;
        kdp_backend_ctx *ctx = NULL;

        ck_assert_int_eq(kdp_config_load(NULL, &c), 0);
        for (; overrides && *overrides; overrides++)
                ck_assert_int_eq(kdp_config_add_override(c, *overrides), 0);
        ck_assert_int_eq(kdp_backend_ctx_new("example", NULL, specs, c, &ctx), 0);
        return ctx;
}

/* ---- creating ---- */

START_TEST(test_backend_ctx_new_takes_override_then_file_then_default) {
        _cleanup_(kdp_test_unlink_freep) char *path =
                write_yaml("example:\n  devices: 16\n  verbose: yes\nother:\n  x: 1\n");
        _cleanup_(kdp_config_freep) kdp_config *c = NULL;
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = NULL;
        _cleanup_free_ char *origin = NULL;

        ck_assert_int_eq(kdp_config_load(path, &c), 0);
        ck_assert_int_eq(kdp_config_add_override(c, "example.verbose=on"), 0);
        ck_assert_int_eq(kdp_backend_ctx_new("example", NULL, specs, c, &ctx), 0);

        ck_assert_str_eq(kdp_backend_name(ctx), "example");
        ck_assert_uint_eq(ctx->n_params, 4);
        ck_assert_str_eq(ctx->params[0].name, "devices");
        ck_assert_str_eq(ctx->params[0].value, "16");
        ck_assert_int_ge(asprintf(&origin, "%s:2", path), 0);
        ck_assert_str_eq(ctx->params[0].origin, origin);
        ck_assert_str_eq(ctx->params[1].value, "example.com/widget");
        ck_assert_str_eq(ctx->params[1].origin, "default");
        ck_assert_ptr_null(ctx->params[2].value);
        ck_assert_ptr_null(ctx->params[2].origin);
        ck_assert_str_eq(ctx->params[3].value, "on");
        ck_assert_str_eq(ctx->params[3].origin, "-o example.verbose=on");

        ck_assert_str_eq(kdp_backend_param(ctx, "devices"), "16");
        ck_assert_str_eq(kdp_backend_param(ctx, "resource"), "example.com/widget");
        ck_assert_ptr_null(kdp_backend_param(ctx, "health-file"));
        ck_assert_ptr_null(kdp_backend_param(ctx, "x"));
        ck_assert_ptr_null(kdp_backend_param(ctx, NULL));
        ck_assert_ptr_null(kdp_backend_param(NULL, "devices"));
}
END_TEST

START_TEST(test_backend_ctx_new_without_config_or_specs_uses_defaults) {
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = NULL, *bare = NULL;

        ck_assert_int_eq(kdp_backend_ctx_new("example", NULL, specs, NULL, &ctx), 0);
        ck_assert_str_eq(kdp_backend_param(ctx, "devices"), "4");
        ck_assert_str_eq(kdp_backend_param(ctx, "verbose"), "no");

        ck_assert_int_eq(kdp_backend_ctx_new("bare", NULL, NULL, NULL, &bare), 0);
        ck_assert_uint_eq(bare->n_params, 0);
        ck_assert_ptr_null(kdp_backend_param(bare, "devices"));
        ck_assert_ptr_null(kdp_backend_ctx_free(NULL));
}
END_TEST

START_TEST(test_backend_ctx_new_rejects_undeclared_config_key) {
        _cleanup_(kdp_config_freep) kdp_config *c = NULL;
        _cleanup_free_ char *log = NULL;
        kdp_backend_ctx *ctx = (kdp_backend_ctx *) 0x1;
        const char *p;
        kdp_test_capture cap;

        ck_assert_int_eq(kdp_config_load(NULL, &c), 0);
        ck_assert_int_eq(kdp_config_add_override(c, "example.device=2"), 0);
        ck_assert_int_eq(kdp_config_add_override(c, "other.device=2"), 0);
        kdp_test_capture_begin(&cap);
        ck_assert_int_eq(kdp_backend_ctx_new("example", NULL, specs, c, &ctx), -EINVAL);
        log = kdp_test_capture_end(&cap);

        ck_assert_ptr_eq(ctx, (kdp_backend_ctx *) 0x1);
        p = log;
        kdp_test_expect_line(&p, 'E', "config.c",
                             "\"Unknown config key\" key=\"example.device\" origin=\"-o example.device=2\" "
                             "err=\"Invalid argument\"");
        ck_assert_str_eq(p, "");
}
END_TEST

START_TEST(test_backend_ctx_new_rejects_bad_arguments) {
        kdp_backend_ctx *ctx = NULL;

        ck_assert_int_eq(kdp_backend_ctx_new(NULL, NULL, specs, NULL, &ctx), -EINVAL);
        ck_assert_int_eq(kdp_backend_ctx_new("", NULL, specs, NULL, &ctx), -EINVAL);
        ck_assert_int_eq(kdp_backend_ctx_new("example", NULL, specs, NULL, NULL), -EINVAL);
        ck_assert_ptr_null(ctx);
}
END_TEST

START_TEST(test_backend_log_macros_prefix_the_backend_field) {
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = ctx_with(NULL);
        _cleanup_free_ char *log = NULL;
        const kdp_log_field *f;
        const char *p;
        kdp_test_capture cap;
        int r;

        f = kdp_backend_log_field(ctx);
        ck_assert_str_eq(f->key, "backend");
        ck_assert_int_eq(f->type, KDP_LOG_FIELD_STR);
        ck_assert_str_eq(f->str, "example");
        ck_assert_int_eq(kdp_backend_log_field(NULL)->type, KDP_LOG_FIELD_NONE);
        ck_assert_ptr_null(kdp_backend_name(NULL));

        kdp_test_capture_begin(&cap);
        kdp_backend_log_info(ctx, "Scanned widgets", KDP_F_INT("devices", 4));
        kdp_backend_log_warning(ctx, "Skipped device without driver");
        r = kdp_backend_log_error(ctx, -ENODEV, "Failed to open widget", KDP_F_STR("path", "/dev/w0"));
        kdp_backend_log_v(ctx, 4, "Scanned widget");
        kdp_backend_log_info(NULL, "Started");
        log = kdp_test_capture_end(&cap);

        ck_assert_int_eq(r, -ENODEV);
        p = log;
        kdp_test_expect_line(&p, 'I', "test-backend-ctx.c", "\"Scanned widgets\" backend=\"example\" devices=4");
        kdp_test_expect_line(&p, 'W', "test-backend-ctx.c", "\"Skipped device without driver\" backend=\"example\"");
        kdp_test_expect_line(&p, 'E', "test-backend-ctx.c",
                             "\"Failed to open widget\" backend=\"example\" path=\"/dev/w0\" err=\"No such device\"");
        kdp_test_expect_line(&p, 'I', "test-backend-ctx.c", "\"Started\"");
        ck_assert_str_eq(p, "");
}
END_TEST

/* ---- integers ---- */

static const struct {
        const char *text;
        int64_t value;
} good_ints[] = {
        { "0", 0 },
        { "16", 16 },
        { "-5", -5 },
        { "+7", 7 },
        { "007", 7 },
        { "-0", 0 },
        { "9223372036854775807", INT64_MAX },
        { "-9223372036854775808", INT64_MIN },
};

START_TEST(test_backend_param_int_parses_signed_decimal) {
        _cleanup_free_ char *o = NULL;
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = NULL;
        int64_t v = 12345;

        ck_assert_int_ge(asprintf(&o, "example.devices=%s", good_ints[_i].text), 0);
        ctx = ctx_with((const char *const[]) { o, NULL });
        ck_assert_int_eq(kdp_backend_param_int(ctx, "devices", INT64_MIN, INT64_MAX, &v), 0);
        ck_assert_int_eq(v, good_ints[_i].value);
}
END_TEST

static const char *const bad_ints[] = {
        "", "+", "-", "1.5", " 1", "1 ", "0x10", "1e3", "abc", "--1", "+-1", "1-",
        "9223372036854775808", "-9223372036854775809", "99999999999999999999",
};

START_TEST(test_backend_param_int_rejects_malformed_value_naming_origin_and_range) {
        _cleanup_free_ char *o = NULL, *log = NULL, *body = NULL;
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = NULL;
        int64_t v = 12345;
        const char *p;
        kdp_test_capture cap;

        ck_assert_int_ge(asprintf(&o, "example.devices=%s", bad_ints[_i]), 0);
        ctx = ctx_with((const char *const[]) { o, NULL });
        kdp_test_capture_begin(&cap);
        ck_assert_int_eq(kdp_backend_param_int(ctx, "devices", INT64_MIN, INT64_MAX, &v), -EINVAL);
        log = kdp_test_capture_end(&cap);
        ck_assert_int_eq(v, 12345);

        ck_assert_int_ge(asprintf(&body, "\"Rejected config value\" backend=\"example\" key=\"example.devices\" "
                                         "value=\"%s\" origin=\"-o %s\" reason=\"not a decimal integer in range\" "
                                         "min=-9223372036854775808 max=9223372036854775807 err=\"Invalid argument\"",
                                  bad_ints[_i], o), 0);
        p = log;
        kdp_test_expect_line(&p, 'E', "backend-ctx.c", body);
        ck_assert_str_eq(p, "");
}
END_TEST

START_TEST(test_backend_param_int_enforces_the_range) {
        _cleanup_(kdp_test_unlink_freep) char *path = write_yaml("example:\n\n  devices: 11\n");
        _cleanup_(kdp_config_freep) kdp_config *c = NULL;
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = NULL;
        _cleanup_free_ char *log = NULL, *body = NULL;
        int64_t v = -1;
        const char *p;
        kdp_test_capture cap;

        ck_assert_int_eq(kdp_config_load(path, &c), 0);
        ck_assert_int_eq(kdp_backend_ctx_new("example", NULL, specs, c, &ctx), 0);

        ck_assert_int_eq(kdp_backend_param_int(ctx, "devices", 11, 11, &v), 0);
        ck_assert_int_eq(v, 11);
        v = -1;
        kdp_test_capture_begin(&cap);
        ck_assert_int_eq(kdp_backend_param_int(ctx, "devices", 0, 10, &v), -EINVAL);
        ck_assert_int_eq(kdp_backend_param_int(ctx, "devices", 12, 100, &v), -EINVAL);
        log = kdp_test_capture_end(&cap);
        ck_assert_int_eq(v, -1);

        p = log;
        ck_assert_int_ge(asprintf(&body, "\"Rejected config value\" backend=\"example\" key=\"example.devices\" "
                                         "value=\"11\" origin=\"%s:3\" reason=\"not a decimal integer in range\" "
                                         "min=0 max=10 err=\"Invalid argument\"", path), 0);
        kdp_test_expect_line(&p, 'E', "backend-ctx.c", body);
        free(body);
        ck_assert_int_ge(asprintf(&body, "\"Rejected config value\" backend=\"example\" key=\"example.devices\" "
                                         "value=\"11\" origin=\"%s:3\" reason=\"not a decimal integer in range\" "
                                         "min=12 max=100 err=\"Invalid argument\"", path), 0);
        kdp_test_expect_line(&p, 'E', "backend-ctx.c", body);
        ck_assert_str_eq(p, "");
}
END_TEST

START_TEST(test_backend_param_int_reads_default_and_reports_unset_and_undeclared) {
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = ctx_with(NULL);
        _cleanup_free_ char *log = NULL;
        int64_t v = -1;
        kdp_test_capture cap;

        ck_assert_int_eq(kdp_backend_param_int(ctx, "devices", 0, 100, &v), 0);
        ck_assert_int_eq(v, 4);

        v = -1;
        kdp_test_capture_begin(&cap);
        ck_assert_int_eq(kdp_backend_param_int(ctx, "health-file", 0, 100, &v), -ENOENT);
        ck_assert_int_eq(kdp_backend_param_int(ctx, "undeclared", 0, 100, &v), -EINVAL);
        ck_assert_int_eq(kdp_backend_param_int(ctx, "devices", 100, 0, &v), -EINVAL);
        ck_assert_int_eq(kdp_backend_param_int(ctx, "devices", 0, 100, NULL), -EINVAL);
        ck_assert_int_eq(kdp_backend_param_int(ctx, NULL, 0, 100, &v), -EINVAL);
        ck_assert_int_eq(kdp_backend_param_int(NULL, "devices", 0, 100, &v), -EINVAL);
        log = kdp_test_capture_end(&cap);

        ck_assert_int_eq(v, -1);
        ck_assert_str_eq(log, "");      /* argument errors and unset values are the caller's to report */
}
END_TEST

/* ---- booleans ---- */

static const struct {
        const char *text;
        bool value;
} good_bools[] = {
        { "true", true }, { "TRUE", true }, { "True", true }, { "yes", true }, { "YES", true }, { "on", true },
        { "On", true }, { "1", true }, { "false", false }, { "False", false }, { "no", false }, { "NO", false },
        { "off", false }, { "OFF", false }, { "0", false },
};

START_TEST(test_backend_param_bool_accepts_words_in_any_case) {
        _cleanup_free_ char *o = NULL;
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = NULL;
        bool v = !good_bools[_i].value;

        ck_assert_int_ge(asprintf(&o, "example.verbose=%s", good_bools[_i].text), 0);
        ctx = ctx_with((const char *const[]) { o, NULL });
        ck_assert_int_eq(kdp_backend_param_bool(ctx, "verbose", &v), 0);
        ck_assert_int_eq(v, good_bools[_i].value);
}
END_TEST

static const char *const bad_bools[] = { "", "2", "y", "n", "t", "truee", " true", "enable", "-1" };

START_TEST(test_backend_param_bool_rejects_other_words_naming_origin) {
        _cleanup_free_ char *o = NULL, *log = NULL, *body = NULL;
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = NULL;
        bool v = true;
        const char *p;
        kdp_test_capture cap;

        ck_assert_int_ge(asprintf(&o, "example.verbose=%s", bad_bools[_i]), 0);
        ctx = ctx_with((const char *const[]) { o, NULL });
        kdp_test_capture_begin(&cap);
        ck_assert_int_eq(kdp_backend_param_bool(ctx, "verbose", &v), -EINVAL);
        log = kdp_test_capture_end(&cap);
        ck_assert(v);

        ck_assert_int_ge(asprintf(&body, "\"Rejected config value\" backend=\"example\" key=\"example.verbose\" "
                                         "value=\"%s\" origin=\"-o %s\" "
                                         "reason=\"not one of true/false/yes/no/on/off/1/0\" err=\"Invalid argument\"",
                                  bad_bools[_i], o), 0);
        p = log;
        kdp_test_expect_line(&p, 'E', "backend-ctx.c", body);
        ck_assert_str_eq(p, "");
}
END_TEST

START_TEST(test_backend_param_bool_reads_default_and_reports_unset_and_undeclared) {
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = ctx_with(NULL);
        bool v = true;

        ck_assert_int_eq(kdp_backend_param_bool(ctx, "verbose", &v), 0);
        ck_assert(!v);
        v = true;
        ck_assert_int_eq(kdp_backend_param_bool(ctx, "health-file", &v), -ENOENT);
        ck_assert_int_eq(kdp_backend_param_bool(ctx, "undeclared", &v), -EINVAL);
        ck_assert_int_eq(kdp_backend_param_bool(ctx, "verbose", NULL), -EINVAL);
        ck_assert_int_eq(kdp_backend_param_bool(NULL, "verbose", &v), -EINVAL);
        ck_assert(v);
}
END_TEST

/* ---- paths ---- */

static void expect_path(const kdp_backend_ctx *ctx, kdp_path_kind kind, const char *rel, const char *expect) {
        _cleanup_free_ char *p = NULL;

        ck_assert_int_eq(kdp_backend_path(ctx, kind, rel, &p), 0);
        ck_assert_str_eq(p, expect);
}

START_TEST(test_backend_param_resource_rejects_a_name_the_kubelet_refuses_naming_file_key_and_value) {
        _cleanup_(kdp_test_unlink_freep) char *path = write_yaml("example:\n  resource: \"not a name\"\n");
        _cleanup_(kdp_config_freep) kdp_config *c = NULL;
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = NULL, *good = NULL, *dflt = NULL, *unset = NULL;
        _cleanup_free_ char *log = NULL, *body = NULL;
        const char *v = "untouched", *p;
        kdp_test_capture cap;

        ck_assert_int_eq(kdp_config_load(path, &c), 0);
        ck_assert_int_eq(kdp_backend_ctx_new("example", NULL, specs, c, &ctx), 0);
        kdp_test_capture_begin(&cap);
        ck_assert_int_eq(kdp_backend_param_resource(ctx, "resource", &v), -EINVAL);
        log = kdp_test_capture_end(&cap);
        ck_assert_str_eq(v, "untouched");
        p = log;
        ck_assert_int_ge(asprintf(&body, "\"Rejected config value\" backend=\"example\" key=\"example.resource\" "
                                         "value=\"not a name\" origin=\"%s:2\" reason=\"not an extended resource "
                                         "name <domain>/<name> the kubelet accepts\" err=\"Invalid argument\"", path), 0);
        kdp_test_expect_line(&p, 'E', "backend-ctx.c", body);
        ck_assert_str_eq(p, "");

        good = ctx_with((const char *const[]) { "example.resource=vendor.example/thing-1", NULL });
        ck_assert_int_eq(kdp_backend_param_resource(good, "resource", &v), 0);
        ck_assert_str_eq(v, "vendor.example/thing-1");
        dflt = ctx_with(NULL);
        ck_assert_int_eq(kdp_backend_param_resource(dflt, "resource", &v), 0);
        ck_assert_str_eq(v, "example.com/widget");
        ck_assert_int_eq(kdp_backend_param_resource(dflt, "health-file", &v), -ENOENT);
        ck_assert_int_eq(kdp_backend_param_resource(dflt, "nosuch", &v), -EINVAL);
        unset = ctx_with((const char *const[]) { "example.resource=kubernetes.io/widget", NULL });
        kdp_test_capture_begin(&cap);
        ck_assert_int_eq(kdp_backend_param_resource(unset, "resource", &v), -EINVAL);
        free(kdp_test_capture_end(&cap));
        ck_assert_str_eq(v, "example.com/widget");
}
END_TEST

START_TEST(test_backend_path_joins_default_roots) {
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = ctx_with(NULL);

        expect_path(ctx, KDP_PATH_SYSFS, "bus/pci/devices", "/sys/bus/pci/devices");
        expect_path(ctx, KDP_PATH_DEV, "dri/card0", "/dev/dri/card0");
        expect_path(ctx, KDP_PATH_PROC, "self/mountinfo", "/proc/self/mountinfo");
        expect_path(ctx, KDP_PATH_CDI, "example.yaml", "/var/run/cdi/example.yaml");
        expect_path(ctx, KDP_PATH_SYSFS, "/class/drm", "/sys/class/drm");
        expect_path(ctx, KDP_PATH_SYSFS, "", "/sys");
}
END_TEST

START_TEST(test_backend_path_joins_configured_roots_with_one_slash) {
        char sysfs[] = "/tmp/fixture/sys/";
        const char *const roots[_KDP_PATH_KIND_MAX] = {
                [KDP_PATH_SYSFS] = sysfs,
                [KDP_PATH_DEV] = "/",
                [KDP_PATH_PROC] = NULL,
                [KDP_PATH_CDI] = "/etc/cdi//",
        };
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = NULL;

        ck_assert_int_eq(kdp_backend_ctx_new("example", roots, specs, NULL, &ctx), 0);
        sysfs[1] = 'X';         /* roots are copied */

        expect_path(ctx, KDP_PATH_SYSFS, "bus/pci", "/tmp/fixture/sys/bus/pci");
        expect_path(ctx, KDP_PATH_SYSFS, "//bus/pci", "/tmp/fixture/sys/bus/pci");
        expect_path(ctx, KDP_PATH_SYSFS, "", "/tmp/fixture/sys");
        expect_path(ctx, KDP_PATH_DEV, "dri", "/dri");
        expect_path(ctx, KDP_PATH_DEV, "", "/");
        expect_path(ctx, KDP_PATH_PROC, "1/status", "/proc/1/status");
        expect_path(ctx, KDP_PATH_CDI, "x.json", "/etc/cdi/x.json");
}
END_TEST

START_TEST(test_backend_path_rejects_bad_kind_and_arguments) {
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = ctx_with(NULL);
        char *p = (char *) "untouched";

        ck_assert_int_eq(kdp_backend_path(ctx, _KDP_PATH_KIND_MAX, "x", &p), -EINVAL);
        ck_assert_int_eq(kdp_backend_path(ctx, (kdp_path_kind) -1, "x", &p), -EINVAL);
        ck_assert_int_eq(kdp_backend_path(ctx, _KDP_PATH_KIND_INVALID, "x", &p), -EINVAL);
        ck_assert_int_eq(kdp_backend_path(ctx, KDP_PATH_SYSFS, NULL, &p), -EINVAL);
        ck_assert_int_eq(kdp_backend_path(ctx, KDP_PATH_SYSFS, "x", NULL), -EINVAL);
        ck_assert_int_eq(kdp_backend_path(NULL, KDP_PATH_SYSFS, "x", &p), -EINVAL);
        ck_assert_str_eq(p, "untouched");
}
END_TEST


/* A host that records what the backend asked of it. */
typedef struct host_log {
        int watched_fd, unwatched_fd;
        kdp_backend_fd_fn fn;
        uint32_t rescan_ms;
} host_log;

static int log_watch_fd(void *data, int fd, kdp_backend_fd_fn fn) {
        host_log *l = data;

        l->watched_fd = fd;
        l->fn = fn;
        return 0;
}

static void log_unwatch_fd(void *data, int fd) {
        ((host_log *) data)->unwatched_fd = fd;
}

static int log_rescan_after(void *data, uint32_t ms) {
        ((host_log *) data)->rescan_ms = ms;
        return 0;
}

static int some_fd_fn(void *state, int fd) {
        (void) state;
        return fd;
}

START_TEST(test_backend_host_requests_reach_the_host) {
        static const kdp_backend_host host = {
                .watch_fd = log_watch_fd, .unwatch_fd = log_unwatch_fd, .rescan_after = log_rescan_after,
        };
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = NULL;
        host_log l = { -1, -1, NULL, 0 };

        ck_assert_int_eq(kdp_backend_ctx_new("example", NULL, specs, NULL, &ctx), 0);
        /* outside kdpd (no host) the requests are refused, never crash */
        ck_assert_int_eq(kdp_backend_watch_fd(ctx, 3, some_fd_fn), -EOPNOTSUPP);
        ck_assert_int_eq(kdp_backend_rescan_after(ctx, 10), -EOPNOTSUPP);
        kdp_backend_unwatch_fd(ctx, 3);

        kdp_backend_ctx_set_host(ctx, &host, &l);
        ck_assert_int_eq(kdp_backend_watch_fd(ctx, 7, some_fd_fn), 0);
        ck_assert_int_eq(l.watched_fd, 7);
        ck_assert_ptr_eq(l.fn, some_fd_fn);
        ck_assert_int_eq(kdp_backend_watch_fd(ctx, -1, some_fd_fn), -EINVAL);
        ck_assert_int_eq(kdp_backend_watch_fd(ctx, 7, NULL), -EINVAL);
        ck_assert_int_eq(kdp_backend_rescan_after(ctx, 2500), 0);
        ck_assert_uint_eq(l.rescan_ms, 2500);
        kdp_backend_unwatch_fd(ctx, 7);
        ck_assert_int_eq(l.unwatched_fd, 7);
        ck_assert_int_eq(kdp_backend_rescan_after(NULL, 1), -EINVAL);
}
END_TEST

START_TEST(test_backend_param_origin_names_file_flag_or_default) {
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = NULL;

        ck_assert_int_eq(kdp_backend_ctx_new("example", NULL, specs, NULL, &ctx), 0);
        ck_assert_str_eq(kdp_backend_param_origin(ctx, "devices"), "default");
        ck_assert_ptr_null(kdp_backend_param_origin(ctx, "undeclared"));
}
END_TEST

static uint64_t fake_clock(void *data) {
        return *(const uint64_t *) data;
}

static uint64_t monotonic_usec(void) {
        struct timespec ts;

        ck_assert_int_eq(clock_gettime(CLOCK_MONOTONIC, &ts), 0);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

/* A backend's clock is CLOCK_MONOTONIC unless a test sets its own; either way, whatever the uptime. */
START_TEST(test_backend_now_usec_reads_the_clock_a_test_sets) {
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = NULL;
        uint64_t fake = 42, before, now, after;

        ck_assert_int_eq(kdp_backend_ctx_new("example", NULL, specs, NULL, &ctx), 0);
        before = monotonic_usec();
        now = kdp_backend_now_usec(ctx);
        after = monotonic_usec();
        ck_assert_uint_le(before, now);
        ck_assert_uint_le(now, after);

        kdp_backend_ctx_set_clock(ctx, fake_clock, &fake);
        ck_assert_uint_eq(kdp_backend_now_usec(ctx), 42);
        fake = 7;
        ck_assert_uint_eq(kdp_backend_now_usec(ctx), 7);

        kdp_backend_ctx_set_clock(ctx, NULL, NULL);
        before = monotonic_usec();
        now = kdp_backend_now_usec(ctx);
        ck_assert_uint_le(before, now);
        ck_assert_uint_le(now, monotonic_usec());
}
END_TEST

static Suite *backend_ctx_suite(void) {
        Suite *s = suite_create("backend-ctx");
        TCase *tc;

        tc = tcase_create("new");
        tcase_set_timeout(tc, 10);
        tcase_add_test(tc, test_backend_ctx_new_takes_override_then_file_then_default);
        tcase_add_test(tc, test_backend_ctx_new_without_config_or_specs_uses_defaults);
        tcase_add_test(tc, test_backend_ctx_new_rejects_undeclared_config_key);
        tcase_add_test(tc, test_backend_ctx_new_rejects_bad_arguments);
        tcase_add_test(tc, test_backend_log_macros_prefix_the_backend_field);
        suite_add_tcase(s, tc);

        tc = tcase_create("params");
        tcase_set_timeout(tc, 10);
        tcase_add_loop_test(tc, test_backend_param_int_parses_signed_decimal, 0, (int) KDP_ELEMENTSOF(good_ints));
        tcase_add_loop_test(tc, test_backend_param_int_rejects_malformed_value_naming_origin_and_range, 0,
                            (int) KDP_ELEMENTSOF(bad_ints));
        tcase_add_test(tc, test_backend_param_int_enforces_the_range);
        tcase_add_test(tc, test_backend_param_int_reads_default_and_reports_unset_and_undeclared);
        tcase_add_loop_test(tc, test_backend_param_bool_accepts_words_in_any_case, 0, (int) KDP_ELEMENTSOF(good_bools));
        tcase_add_loop_test(tc, test_backend_param_bool_rejects_other_words_naming_origin, 0,
                            (int) KDP_ELEMENTSOF(bad_bools));
        tcase_add_test(tc, test_backend_param_bool_reads_default_and_reports_unset_and_undeclared);
        tcase_add_test(tc, test_backend_param_resource_rejects_a_name_the_kubelet_refuses_naming_file_key_and_value);
        suite_add_tcase(s, tc);

        tc = tcase_create("paths");
        tcase_set_timeout(tc, 10);
        tcase_add_test(tc, test_backend_path_joins_default_roots);
        tcase_add_test(tc, test_backend_path_joins_configured_roots_with_one_slash);
        tcase_add_test(tc, test_backend_path_rejects_bad_kind_and_arguments);
        tcase_add_test(tc, test_backend_host_requests_reach_the_host);
        tcase_add_test(tc, test_backend_param_origin_names_file_flag_or_default);
        tcase_add_test(tc, test_backend_now_usec_reads_the_clock_a_test_sets);
        suite_add_tcase(s, tc);

        return s;
}

int main(void) {
        return kdp_test_run(backend_ctx_suite());
}
