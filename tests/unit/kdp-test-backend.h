/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A built backend (.so) run through its ABI outside kdpd, for the unit tests (header-only, like
 * kdp-test.h; include that and kdp-test-sysfs.h first). The backend gets roots under a fixture
 * tree, a fake host (watched fds and rescan requests are recorded, not run) and a fake clock:
 * it never sees the machine's uptime.
 *
 *   kdp_test_backend b;
 *   ck_assert_int_eq(kdp_test_backend_open(&b, SO, "gpu", root, overrides), 0);   init's result
 *   kdp_test_backend_scan(&b, root);           b.tree: the scan's finished tree
 *   l = kdp_test_backend_resource(&b, "nvidia.com/gpu");
 *   kdp_test_backend_done(&b);
 */
#pragma once

#include <check.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <kdp/backend.h>

#include "backend-ctx.h"
#include "config.h"
#include "device-tree.h"

/* Any "now": the backend sees only this clock, never the machine's uptime. */
#define KDP_TEST_BACKEND_WATCHES_MAX 8

/* One fd the backend has kdpd's loop watch, with its handler. */
typedef struct kdp_test_backend_watch {
        int fd;
        kdp_backend_fd_fn fn;
} kdp_test_backend_watch;

#define KDP_TEST_BACKEND_NOW_USEC UINT64_C(1234000000)

typedef struct kdp_test_backend {
        void *handle;
        const kdp_backend_ops *ops;
        kdp_config *config;
        kdp_backend_ctx *ctx;
        void *state;
        kdp_device_tree *tree;
        int watched_fd;                 /* the last kdp_backend_watch_fd(), -1: none */
        kdp_backend_fd_fn on_fd;        /* its handler */
        kdp_test_backend_watch watches[KDP_TEST_BACKEND_WATCHES_MAX];   /* every fd watched now */
        size_t n_watches;
        uint64_t now_usec;              /* the fake clock the backend reads */
        int64_t rescan_ms;              /* the last kdp_backend_rescan_after(), -1: none */
} kdp_test_backend;

static inline uint64_t kdp_test_backend_clock(void *data) {
        return ((kdp_test_backend *) data)->now_usec;
}

/* What the fake host's watch answers: 0 records the watch; a test sets a -errno to refuse watches. */
static int kdp_test_backend_watch_result;

static inline int kdp_test_backend_watch_fd(void *data, int fd, kdp_backend_fd_fn fn) {
        kdp_test_backend *b = data;

        if (kdp_test_backend_watch_result < 0)
                return kdp_test_backend_watch_result;
        ck_assert_uint_lt(b->n_watches, KDP_TEST_BACKEND_WATCHES_MAX);
        for (size_t i = 0; i < b->n_watches; i++)
                ck_assert_int_ne(b->watches[i].fd, fd);         /* kdpd refuses a second watch of an fd */
        b->watches[b->n_watches++] = (kdp_test_backend_watch){ .fd = fd, .fn = fn };
        b->watched_fd = fd;
        b->on_fd = fn;
        return 0;
}

/* Ends the watch of `fd` (watched_fd, the last one asked for, stays as it was). */
static inline void kdp_test_backend_unwatch_fd(void *data, int fd) {
        kdp_test_backend *b = data;

        for (size_t i = 0; i < b->n_watches; i++)
                if (b->watches[i].fd == fd) {
                        b->watches[i] = b->watches[--b->n_watches];
                        return;
                }
}

/*
 * The watch whose fd is of `kind`, as /proc/self/fd names it: "socket:" (a netlink socket),
 * "anon_inode:inotify", "anon_inode:[timerfd]"...; NULL when the backend watches none.
 */
static inline const kdp_test_backend_watch *kdp_test_backend_find_watch(const kdp_test_backend *b, const char *kind) {
        for (size_t i = 0; i < b->n_watches; i++) {
                char link[64], target[128];
                ssize_t n;

                (void) snprintf(link, sizeof(link), "/proc/self/fd/%d", b->watches[i].fd);
                n = readlink(link, target, sizeof(target) - 1);
                ck_assert_int_gt(n, 0);
                target[n] = '\0';
                if (strncmp(target, kind, strlen(kind)) == 0)
                        return &b->watches[i];
        }
        return NULL;
}

static inline int kdp_test_backend_rescan_after(void *data, uint32_t ms) {
        ((kdp_test_backend *) data)->rescan_ms = ms;
        return 0;
}

/*
 * dlopens `so`, whose backend is `name`, with roots <root>/sys, dev, proc, cdi and
 * "<name>.key=value" overrides (NULL-terminated, may be NULL); returns init's result.
 */
static inline int kdp_test_backend_open(kdp_test_backend *b, const char *so, const char *name, const char *root,
                                        const char *const *overrides) {
        static const kdp_backend_host host = {
                .watch_fd = kdp_test_backend_watch_fd,
                .unwatch_fd = kdp_test_backend_unwatch_fd,
                .rescan_after = kdp_test_backend_rescan_after,
        };
        char *sys = kdp_test_tree_path(root, "sys"), *dev = kdp_test_tree_path(root, "dev"),
             *proc = kdp_test_tree_path(root, "proc"), *cdi = kdp_test_tree_path(root, "cdi");
        const char *roots[_KDP_PATH_KIND_MAX] = {
                [KDP_PATH_SYSFS] = sys, [KDP_PATH_DEV] = dev, [KDP_PATH_PROC] = proc, [KDP_PATH_CDI] = cdi,
        };
        kdp_backend_entry_fn entry;

        *b = (kdp_test_backend){ .watched_fd = -1, .now_usec = KDP_TEST_BACKEND_NOW_USEC, .rescan_ms = -1 };
        b->handle = dlopen(so, RTLD_NOW | RTLD_LOCAL);
        ck_assert_msg(b->handle, "dlopen %s: %s", so, dlerror());
        entry = (kdp_backend_entry_fn) dlsym(b->handle, KDP_BACKEND_ENTRY_SYMBOL);
        ck_assert_ptr_nonnull(entry);
        b->ops = entry();
        ck_assert_int_eq(kdp_config_load(NULL, &b->config), 0);
        for (size_t i = 0; overrides && overrides[i]; i++)
                ck_assert_int_eq(kdp_config_add_override(b->config, overrides[i]), 0);
        ck_assert_int_eq(kdp_backend_ctx_new(name, roots, b->ops->params, b->config, &b->ctx), 0);
        free(sys);
        free(dev);
        free(proc);
        free(cdi);
        kdp_backend_ctx_set_host(b->ctx, &host, b);
        kdp_backend_ctx_set_clock(b->ctx, kdp_test_backend_clock, b);
        return b->ops->init(b->ctx, &b->state);
}

/* One scan into a fresh tree (b->tree), finished as kdpd finishes it; no device may be refused. */
static inline void kdp_test_backend_scan(kdp_test_backend *b, const char *root) {
        char *sys = kdp_test_tree_path(root, "sys");

        b->tree = kdp_device_tree_free(b->tree);
        ck_assert_int_eq(kdp_device_tree_new(sys, &b->tree), 0);
        free(sys);
        ck_assert_int_eq(b->ops->scan(b->state, b->tree), 0);
        kdp_device_tree_finish(b->tree);
        ck_assert_uint_eq(b->tree->n_rejected, 0);
}

/* fini (when init succeeded: b->state set), then everything else; b->handle is closed. */
static inline void kdp_test_backend_done(kdp_test_backend *b) {
        b->tree = kdp_device_tree_free(b->tree);
        if (b->state)
                b->ops->fini(b->state);
        b->ctx = kdp_backend_ctx_free(b->ctx);
        b->config = kdp_config_free(b->config);
        if (b->handle)
                ck_assert_int_eq(dlclose(b->handle), 0);
}

/* The last scan's list of `name`; NULL when it did not declare it. */
static inline const kdp_device_list *kdp_test_backend_resource(const kdp_test_backend *b, const char *name) {
        for (size_t i = 0; i < b->tree->n_resources; i++)
                if (strcmp(b->tree->resources[i].resource, name) == 0)
                        return &b->tree->resources[i];
        return NULL;
}

