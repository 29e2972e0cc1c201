/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The backend loader and the one place that calls backend hooks.
 *
 *   kdp_registry_load()   dlopen + checks (file, entry symbol, ABI, hooks, name)
 *   kdp_registry_start()  ctx from config, ops->init       (loop thread)
 *   kdp_registry_scan()   ops->scan into a fresh tree       (loop thread)
 *   kdp_registry_*()      allocate/preferred/pre_start: a gRPC worker
 *   kdp_registry_reload() ops->reload at SIGHUP             (loop thread)
 *   kdp_registry_stop()   ops->fini, ctx freed              (loop thread)
 *
 * Every hook runs under the backend's mutex, so a backend never sees two hooks
 * at once. The hook pointers are set at load and never change, so a caller
 * may test them without the mutex; allocate and preferred without their hook
 * return -EOPNOTSUPP without taking it. The one exception is the slow part of a pre_start, which runs in
 * kdp_backend_run_unlocked() without it: n_unlocked counts those, and
 * kdp_registry_stop() waits for them (cond `unlocked`) before fini, turning new
 * pre_starts away meanwhile (`stopping`). The daemon owns each kdp_backend;
 * resources borrow it.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>

#include <kdp/backend.h>

#include "alloc.h"
#include "backend-ctx.h"
#include "config.h"
#include "device-tree.h"

typedef struct kdp_backend {
        char *name;
        char *path;
        void *dl;
        const kdp_backend_ops *ops;
        pthread_mutex_t lock;
        pthread_cond_t unlocked;        /* n_unlocked dropped to 0 */
        unsigned n_unlocked;            /* under lock: pre_starts in kdp_backend_run_unlocked() */
        bool stopping;                  /* under lock: kdp_registry_stop() waits for n_unlocked */
        kdp_backend_ctx *ctx;           /* NULL while stopped */
        void *state;
        bool started;
        /* optional hooks, NULL when the backend's struct_size does not cover them */
        int (*allocate)(void *state, const kdp_alloc_request *req, kdp_alloc_response *resp);
        int (*preferred)(void *state, const kdp_pref_request *req, kdp_pref_response *resp);
        int (*pre_start)(void *state, const kdp_prestart_request *req);
        int (*probe)(void *state, const char *resource, const char *device_id, char **ret_reason);
        void (*device_event)(void *state, const kdp_device_event *ev);
        void (*reload)(void *state);
        void (*allocated)(void *state, const kdp_allocated *a);
        uint32_t probe_interval_ms;
        uint32_t rescan_interval_ms;
        const kdp_backend_host *host;   /* handed to every ctx; NULL: none */
        void *host_data;
} kdp_backend;

/*
 * `name_or_path`: a path if it contains '/', else a name searched in
 * `search_dirs` (NULL-terminated) as kdp-backend-<name>.so.
 * Returns 0; -ENOENT (file missing), -ELIBBAD (dlopen failed), -ENOEXEC (no
 * entry symbol), -EPROTO (ABI major, struct size, missing required hook,
 * name not matching the file). Each refusal is logged with its reason.
 */
int kdp_registry_load(const char *name_or_path, const char *const *search_dirs, kdp_backend **ret);
kdp_backend *kdp_registry_free(kdp_backend *b);
KDP_DEFINE_CLEANUP_FUNC(kdp_backend, kdp_registry_free)

/* Where kdpd looks for backends by name: plugins/ beside the binary (build tree), ../LIBDIR/kdp/backends from it (an install anywhere), the configured install dir. */
int kdp_registry_default_dirs(char ***ret);

/* What the next kdp_registry_start() hands the backend's ctx (fd watches, timed rescans). */
void kdp_registry_set_host(kdp_backend *b, const kdp_backend_host *host, void *data);
int kdp_registry_start(kdp_backend *b, const kdp_config *config, const char *const roots[_KDP_PATH_KIND_MAX]);
void kdp_registry_stop(kdp_backend *b);

/* Runs scan() and probe() for every device; *ret is finished (sorted, topology checked). Not logged. */
int kdp_registry_scan(kdp_backend *b, const char *sysfs_root, kdp_device_tree **ret);

/* -EOPNOTSUPP without the hook (the mutex not taken) or while stopped. */
int kdp_registry_allocate(kdp_backend *b, const kdp_alloc_request *req, kdp_alloc_response *resp);
int kdp_registry_preferred(kdp_backend *b, const kdp_pref_request *req, kdp_pref_response *resp);
/* Worker thread: ops->pre_start; 0 without the hook, -EAGAIN while the backend is being stopped. */
int kdp_registry_pre_start(kdp_backend *b, const kdp_prestart_request *req);
/* Loop thread: a device event for device_event(), a readable watched fd for its fn (-ESRCH when stopped). */
void kdp_registry_device_event(kdp_backend *b, const kdp_device_event *ev);
/* Loop thread: what the kubelet reports in use, for allocated() (nothing when it has none or is stopped). */
void kdp_registry_allocated(kdp_backend *b, const kdp_allocated *a);
int kdp_registry_fd_ready(kdp_backend *b, kdp_backend_fd_fn fn, int fd);
/* Loop thread: ops->reload (kdpd's SIGHUP); -EOPNOTSUPP when the backend has none, -ESRCH when stopped. */
int kdp_registry_reload(kdp_backend *b);
