/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libkdp internal: the kdp_backend_ctx handed to a backend's init(). It holds
 * the backend's resolved params (config file, -o overrides, defaults), the
 * path roots and what libkdp's enumerations have warned about for this
 * backend (skip-log.h). Created by the daemon's registry, freed after the
 * backend's fini(); it owns all of these. The public accessors
 * (kdp_backend_param() ...) live in backend-ctx.c.
 *
 * Backends get the ctx as const: the skip log is reached through a pointer,
 * so the enumerations that take a const ctx can still update it. Like every
 * use of the ctx, that happens in the backend's hooks, under its lock.
 */
#pragma once

#include <kdp/backend.h>
#include <kdp/cleanup.h>

#include "config.h"
#include "skip-log.h"

typedef struct kdp_backend_ctx_param {
        const char *name;       /* borrowed from the spec (static in the backend) */
        char *value;            /* NULL: unset */
        char *origin;           /* "file:line", "-o ...", or "default" */
} kdp_backend_ctx_param;

/* What kdpd offers a running backend (fd watches, timed rescans); see <kdp/backend.h>. */
typedef struct kdp_backend_host {
        int (*watch_fd)(void *data, int fd, kdp_backend_fd_fn fn);
        void (*unwatch_fd)(void *data, int fd);
        int (*rescan_after)(void *data, uint32_t ms);
} kdp_backend_host;

/* A clock in µs of CLOCK_MONOTONIC (tests: a fake one); see kdp_backend_now_usec(). */
typedef uint64_t (*kdp_backend_clock_fn)(void *data);

struct kdp_backend_ctx {
        char *name;
        kdp_log_field log_field;        /* backend="<name>" */
        char *roots[_KDP_PATH_KIND_MAX];
        kdp_backend_ctx_param *params;
        size_t n_params;
        const kdp_backend_host *host;   /* NULL outside kdpd */
        void *host_data;
        kdp_skip_log *skips;            /* owned; what kdp_pci_list_scan() & co. have warned about */
        kdp_backend_clock_fn clock;     /* NULL: CLOCK_MONOTONIC */
        void *clock_data;
        /* kdpd's registry: releases the backend's lock around fn; NULL outside kdpd */
        int (*run_unlocked)(void *data, kdp_backend_unlocked_fn fn, void *userdata);
        void *unlock_data;
};

/*
 * Resolves every param of `specs` from `config` (may be NULL). Returns -EINVAL
 * (logged) if the config section has keys the backend does not declare.
 * `roots` are copied; a NULL root means the default for its kind.
 */
int kdp_backend_ctx_new(const char *name, const char *const roots[_KDP_PATH_KIND_MAX],
                        const kdp_param_spec *specs, const kdp_config *config,
                        kdp_backend_ctx **ret);
kdp_backend_ctx *kdp_backend_ctx_free(kdp_backend_ctx *ctx);
/* "/sys", "/dev", "/proc", "/var/run/cdi": the root of a kind when none is configured. */
const char *kdp_backend_default_root(kdp_path_kind kind);
void kdp_backend_ctx_set_host(kdp_backend_ctx *ctx, const kdp_backend_host *host, void *data);
/* What kdp_backend_run_unlocked() of `ctx` calls (kdpd's registry); NULL: fn runs as is. */
void kdp_backend_ctx_set_unlocker(kdp_backend_ctx *ctx,
                                  int (*run_unlocked)(void *data, kdp_backend_unlocked_fn fn, void *userdata),
                                  void *data);
/* Points kdp_backend_now_usec() of `ctx` at `fn` (unit tests' fake clock); NULL: CLOCK_MONOTONIC. */
void kdp_backend_ctx_set_clock(kdp_backend_ctx *ctx, kdp_backend_clock_fn fn, void *data);
KDP_DEFINE_CLEANUP_FUNC(kdp_backend_ctx, kdp_backend_ctx_free)
