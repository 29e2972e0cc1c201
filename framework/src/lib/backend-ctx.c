/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The context a backend gets in init(): its name, its resolved params, the
 * path roots and its skip log (see backend-ctx.h and <kdp/backend.h>).
 *
 * A param's value comes from, in order: the last -o override, the config
 * file, the spec's default; its origin says which ("-o gpu.x=1",
 * "/etc/kdp/config.yaml:12", "default"). A name the backend did not declare
 * has no value: kdp_backend_param() returns NULL and the typed getters return
 * -EINVAL (an argument error of the backend, not logged).
 *
 * Time: kdp_backend_now_usec() reads CLOCK_MONOTONIC, or the clock a unit
 * test set with kdp_backend_ctx_set_clock().
 *
 * Typed getters log a malformed value at error level with the backend's
 * field, key="<backend>.<param>" (as written in -o), the value, its origin
 * and, for integers, min and max.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "backend-ctx.h"
#include "device.h"

static const char *const default_roots[_KDP_PATH_KIND_MAX] = {
        [KDP_PATH_SYSFS] = "/sys",
        [KDP_PATH_DEV] = "/dev",
        [KDP_PATH_PROC] = "/proc",
        [KDP_PATH_CDI] = "/var/run/cdi",
};

const char *kdp_backend_default_root(kdp_path_kind kind) {
        return (int) kind >= 0 && kind < _KDP_PATH_KIND_MAX ? default_roots[kind] : NULL;
}

kdp_backend_ctx *kdp_backend_ctx_free(kdp_backend_ctx *ctx) {
        if (!ctx)
                return NULL;

        for (size_t i = 0; i < ctx->n_params; i++) {
                free(ctx->params[i].value);
                free(ctx->params[i].origin);
        }
        free(ctx->params);
        kdp_skip_log_free(ctx->skips);
        for (size_t i = 0; i < _KDP_PATH_KIND_MAX; i++)
                free(ctx->roots[i]);
        free(ctx->name);
        free(ctx);
        return NULL;
}

int kdp_backend_ctx_new(const char *name, const char *const roots[_KDP_PATH_KIND_MAX],
                        const kdp_param_spec *specs, const kdp_config *config,
                        kdp_backend_ctx **ret) {
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = NULL;
        size_t n = 0;
        int r;

        if (!name || !*name || !ret)
                return -EINVAL;

        r = kdp_config_check_section(config, name, specs);
        if (r < 0)
                return r;

        ctx = calloc(1, sizeof(*ctx));
        if (!ctx)
                return -ENOMEM;
        ctx->name = strdup(name);
        if (!ctx->name)
                return -ENOMEM;
        ctx->log_field = KDP_F_STR("backend", ctx->name);
        r = kdp_skip_log_new(&ctx->skips);
        if (r < 0)
                return r;

        for (size_t i = 0; i < _KDP_PATH_KIND_MAX; i++) {
                ctx->roots[i] = strdup((roots && roots[i]) ? roots[i] : default_roots[i]);
                if (!ctx->roots[i])
                        return -ENOMEM;
        }

        while (specs && specs[n].name)
                n++;
        if (n > 0) {
                ctx->params = calloc(n, sizeof(kdp_backend_ctx_param));
                if (!ctx->params)
                        return -ENOMEM;
                ctx->n_params = n;
        }

        for (size_t i = 0; i < n; i++) {
                kdp_backend_ctx_param *p = &ctx->params[i];
                const char *value, *origin = NULL;

                p->name = specs[i].name;
                value = kdp_config_get(config, name, specs[i].name, &origin);
                if (!value) {
                        value = specs[i].default_value;
                        origin = "default";
                }
                if (!value)
                        continue;

                p->value = strdup(value);
                p->origin = strdup(origin);
                if (!p->value || !p->origin)
                        return -ENOMEM;
        }

        *ret = KDP_TAKE_PTR(ctx);
        return 0;
}

const char *kdp_backend_name(const kdp_backend_ctx *ctx) {
        return ctx ? ctx->name : NULL;
}

static const kdp_backend_ctx_param *ctx_find_param(const kdp_backend_ctx *ctx, const char *name) {
        if (!ctx || !name)
                return NULL;

        for (size_t i = 0; i < ctx->n_params; i++)
                if (strcmp(ctx->params[i].name, name) == 0)
                        return &ctx->params[i];
        return NULL;
}

const char *kdp_backend_param(const kdp_backend_ctx *ctx, const char *name) {
        const kdp_backend_ctx_param *p = ctx_find_param(ctx, name);

        return p ? p->value : NULL;
}

const char *kdp_backend_param_origin(const kdp_backend_ctx *ctx, const char *name) {
        const kdp_backend_ctx_param *p = ctx_find_param(ctx, name);

        return p ? p->origin : NULL;
}

/* The declared param `name` that has a value: -EINVAL when undeclared, -ENOENT when unset. */
static int param_with_value(const kdp_backend_ctx *ctx, const char *name, const kdp_backend_ctx_param **ret) {
        const kdp_backend_ctx_param *p = ctx_find_param(ctx, name);

        if (!p)
                return -EINVAL;
        if (!p->value)
                return -ENOENT;
        *ret = p;
        return 0;
}

/* "<backend>.<param>" (free()), or NULL when out of memory. */
static char *param_key(const kdp_backend_ctx *ctx, const char *name) {
        char *s;

        if (asprintf(&s, "%s.%s", ctx->name, name) < 0)
                return NULL;
        return s;
}

int kdp_backend_param_int(const kdp_backend_ctx *ctx, const char *name, int64_t min, int64_t max,
                          int64_t *ret) {
        _cleanup_free_ char *key = NULL;
        const kdp_backend_ctx_param *p;
        const char *s;
        bool ok = true;
        int64_t v = 0;
        int r;

        if (!ctx || !name || !ret || min > max)
                return -EINVAL;
        r = param_with_value(ctx, name, &p);
        if (r < 0)
                return r;

        /* decimal, optional sign, the whole string; accumulated negatively so INT64_MIN parses */
        s = p->value;
        if (*s == '+' || *s == '-')
                s++;
        if (*s == '\0')
                ok = false;
        for (; ok && *s; s++) {
                int digit = *s - '0';

                if (digit < 0 || digit > 9 || v < (INT64_MIN + digit) / 10)
                        ok = false;
                else
                        v = v * 10 - digit;
        }
        if (ok && p->value[0] != '-') {
                if (v == INT64_MIN)
                        ok = false;
                else
                        v = -v;
        }

        if (!ok || v < min || v > max) {
                key = param_key(ctx, name);
                return kdp_backend_log_error(ctx, -EINVAL, "Rejected config value", KDP_F_STR("key", key ?: name),
                                             KDP_F_STR("value", p->value), KDP_F_STR("origin", p->origin),
                                             KDP_F_STR("reason", "not a decimal integer in range"),
                                             KDP_F_INT("min", min), KDP_F_INT("max", max));
        }

        *ret = v;
        return 0;
}

int kdp_backend_param_bool(const kdp_backend_ctx *ctx, const char *name, bool *ret) {
        static const char *const yes[] = { "true", "yes", "on", "1" };
        static const char *const no[] = { "false", "no", "off", "0" };
        _cleanup_free_ char *key = NULL;
        const kdp_backend_ctx_param *p;
        int r;

        if (!ctx || !name || !ret)
                return -EINVAL;
        r = param_with_value(ctx, name, &p);
        if (r < 0)
                return r;

        for (size_t i = 0; i < KDP_ELEMENTSOF(yes); i++) {
                if (strcasecmp(p->value, yes[i]) == 0) {
                        *ret = true;
                        return 0;
                }
                if (strcasecmp(p->value, no[i]) == 0) {
                        *ret = false;
                        return 0;
                }
        }

        key = param_key(ctx, name);
        return kdp_backend_log_error(ctx, -EINVAL, "Rejected config value", KDP_F_STR("key", key ?: name),
                                     KDP_F_STR("value", p->value), KDP_F_STR("origin", p->origin),
                                     KDP_F_STR("reason", "not one of true/false/yes/no/on/off/1/0"));
}

int kdp_backend_param_resource(const kdp_backend_ctx *ctx, const char *name, const char **ret) {
        _cleanup_free_ char *key = NULL;
        const kdp_backend_ctx_param *p;
        int r;

        if (!ctx || !name || !ret)
                return -EINVAL;
        r = param_with_value(ctx, name, &p);
        if (r < 0)
                return r;
        if (kdp_device_resource_name_is_valid(p->value)) {
                *ret = p->value;
                return 0;
        }

        key = param_key(ctx, name);
        return kdp_backend_log_error(ctx, -EINVAL, "Rejected config value", KDP_F_STR("key", key ?: name),
                                     KDP_F_STR("value", p->value), KDP_F_STR("origin", p->origin),
                                     KDP_F_STR("reason", "not an extended resource name <domain>/<name> "
                                                         "the kubelet accepts"));
}

int kdp_backend_path(const kdp_backend_ctx *ctx, kdp_path_kind kind, const char *rel, char **ret) {
        const char *root;
        size_t root_len;
        char *s;

        if (!ctx || !rel || !ret || (int) kind < 0 || kind >= _KDP_PATH_KIND_MAX)
                return -EINVAL;

        /*
         * exactly one '/' at the join: trailing ones of the root and leading ones of rel are
         * dropped; "" is the root itself. rel is not otherwise normalised.
         */
        root = ctx->roots[kind];
        root_len = strlen(root);
        while (root_len > 0 && root[root_len - 1] == '/')
                root_len--;
        while (*rel == '/')
                rel++;

        if (*rel == '\0')      /* the root itself */
                s = root_len > 0 ? strndup(root, root_len) : strdup("/");
        else if (asprintf(&s, "%.*s/%s", (int) root_len, root, rel) < 0)
                s = NULL;
        if (!s)
                return -ENOMEM;

        *ret = s;
        return 0;
}

const kdp_log_field *kdp_backend_log_field(const kdp_backend_ctx *ctx) {
        static const kdp_log_field none = { .key = "backend", .type = KDP_LOG_FIELD_NONE };

        return ctx ? &ctx->log_field : &none;
}

void kdp_backend_ctx_set_host(kdp_backend_ctx *ctx, const kdp_backend_host *host, void *data) {
        ctx->host = host;
        ctx->host_data = data;
}

void kdp_backend_ctx_set_unlocker(kdp_backend_ctx *ctx,
                                  int (*run_unlocked)(void *data, kdp_backend_unlocked_fn fn, void *userdata),
                                  void *data) {
        ctx->run_unlocked = run_unlocked;
        ctx->unlock_data = data;
}

int kdp_backend_run_unlocked(kdp_backend_ctx *ctx, kdp_backend_unlocked_fn fn, void *userdata) {
        if (!ctx || !fn)
                return -EINVAL;
        if (!ctx->run_unlocked)
                return fn(userdata);
        return ctx->run_unlocked(ctx->unlock_data, fn, userdata);
}

void kdp_backend_ctx_set_clock(kdp_backend_ctx *ctx, kdp_backend_clock_fn fn, void *data) {
        ctx->clock = fn;
        ctx->clock_data = data;
}

uint64_t kdp_backend_now_usec(const kdp_backend_ctx *ctx) {
        struct timespec ts;

        if (ctx && ctx->clock)
                return ctx->clock(ctx->clock_data);
        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

int kdp_backend_watch_fd(kdp_backend_ctx *ctx, int fd, kdp_backend_fd_fn fn) {
        if (!ctx || fd < 0 || !fn)
                return -EINVAL;
        if (!ctx->host)
                return -EOPNOTSUPP;
        return ctx->host->watch_fd(ctx->host_data, fd, fn);
}

void kdp_backend_unwatch_fd(kdp_backend_ctx *ctx, int fd) {
        if (ctx && ctx->host && fd >= 0)
                ctx->host->unwatch_fd(ctx->host_data, fd);
}

int kdp_backend_rescan_after(kdp_backend_ctx *ctx, uint32_t ms) {
        if (!ctx)
                return -EINVAL;
        if (!ctx->host)
                return -EOPNOTSUPP;
        return ctx->host->rescan_after(ctx->host_data, ms);
}
