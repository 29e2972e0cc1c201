/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The kdp backend ABI: what a hardware backend (.so) implements.
 *
 * A backend is one shared object, kdp-backend-<name>.so, exporting exactly one
 * symbol, kdp_backend_entry(), which returns a kdp_backend_ops table:
 *
 *   static const kdp_backend_ops foo_ops = {
 *           .abi_major = KDP_BACKEND_ABI_MAJOR,
 *           .struct_size = sizeof(kdp_backend_ops),
 *           .name = "foo",
 *           .init = foo_init, .scan = foo_scan, .fini = foo_fini,
 *   };
 *   KDP_BACKEND_REGISTER(foo_ops);
 *
 * Threads. Every hook of one backend runs with that backend's lock held, so a
 * backend never sees two hooks at once and needs no locks of its own. init,
 * scan, probe, device_event, allocated, fini and the callbacks of watched fds run on the
 * event loop; allocate and preferred on a worker thread, one call of a
 * backend at a time, and should answer in microseconds (they wait for the
 * lock while a scan holds it, and the kubelet waits for them); pre_start on
 * one of a few worker threads and may take up to the kubelet's 30 s.
 *
 * PreStartContainer. Up to 8 PreStarts run at once, of any resources; two that
 * share a device ID of one backend run one after the other, in arrival order.
 * The hook holds the lock like every other, so whatever is slow in it (a reset,
 * programming a device) belongs in kdp_backend_run_unlocked(): the other hooks
 * of the backend (Allocate, scans, other PreStarts) run meanwhile, and the
 * backend is not stopped (fini) before the slow part returned.
 *
 *   pre_start (locked)          read the state, copy what the slow part needs
 *     run_unlocked(fn, job)     fn sees only `job`: no state, no ctx calls
 *   (locked again)              record the outcome; the state may have changed
 *                               (scans ran) so look devices up again
 *
 * An answer past the kubelet's 30 s deadline is lost, and the container start
 * fails: keep pre_start well under it.
 *
 * Events. A scan runs at start, after each burst of device events of the
 * declared udev subsystems (device_event sees every event first), when a
 * watched fd's callback asks for one, when kdp_backend_rescan_after() comes
 * due, every rescan/probe interval, and at reload.
 *
 * Reload (kdpd's SIGHUP). kdpd reads its own config again; a backend whose
 * section changed is restarted (fini, then init with the new section: it
 * reads everything anew). Every other running backend gets its reload hook,
 * when it has one, then a scan: "re-read the files you own" (a config file
 * of its own, a device database). That happens also when kdpd's own config
 * fails to load and is kept. reload runs on the event loop; what it cannot
 * read it logs, and it keeps serving what it had.
 *
 * Ownership across the .so boundary.
 *   1. Strings and arrays in kdp_backend_ops have static storage.
 *   2. What a backend passes to the framework (device info, response fields)
 *      is borrowed for the duration of the call; the framework copies it.
 *   3. What the framework passes to a hook (requests, ctx, paths) is borrowed
 *      until the hook returns; ctx lives from init until fini returns.
 *   4. A char ** result belongs to the receiver and is released with free().
 *
 * Errors are negative errno values. An optional hook returns -EOPNOTSUPP to
 * ask for the framework's default behaviour.
 *
 * Versioning. Fields are only ever appended to kdp_backend_ops. The loader
 * reads a field only if struct_size covers it, and refuses a backend whose
 * abi_major differs from its own.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kdp/device.h>
#include <kdp/log.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KDP_BACKEND_ABI_MAJOR 1
#define KDP_BACKEND_ENTRY_SYMBOL "kdp_backend_entry"

typedef struct kdp_backend_ctx kdp_backend_ctx;

/* A key of the backend's config section, also settable as -o <backend>.<name>=<value>. */
typedef struct kdp_param_spec {
        const char *name;
        const char *default_value;      /* NULL: unset unless configured */
        const char *help;
} kdp_param_spec;

/* One container's Allocate request: IDs are known to the resource. */
typedef struct kdp_alloc_request {
        const char *resource;
        const char *const *device_ids;
        size_t n_device_ids;
} kdp_alloc_request;

typedef struct kdp_alloc_response kdp_alloc_response;

/* One container's GetPreferredAllocation request. */
typedef struct kdp_pref_request {
        const char *resource;
        const char *const *available;
        size_t n_available;
        const char *const *must_include;
        size_t n_must_include;
        size_t size;
} kdp_pref_request;

typedef struct kdp_pref_response kdp_pref_response;

/* A device event of a declared subsystem, as udevd (or the kernel) sent it. */
typedef struct kdp_device_event {
        const char *action;             /* add remove change bind unbind move online offline */
        const char *subsystem;          /* pci, drm, net, ... */
        const char *devpath;            /* /devices/... */
        const char *sysname;            /* 0000:3b:00.0, renderD128, ens1f0 */
        const char *driver;             /* DRIVER= of the event; NULL when it carries none */
} kdp_device_event;

typedef struct kdp_prestart_request {
        const char *resource;
        const char *const *device_ids;
        size_t n_device_ids;
} kdp_prestart_request;

/*
 * What the kubelet reports in use (PodResources List, docs/kubelet.md §8) for the
 * resources of one backend: the IDs assigned to the containers of its active
 * pods. A resource of the backend absent from `resources` has none in use.
 * The kubelet learns of an allocation when Allocate answers and reports it
 * only while the pod is active: an ID given out just before the List started
 * may be missing from it, and one is missing for good once its pod ended.
 */
typedef struct kdp_allocated_resource {
        const char *resource;
        const char *const *device_ids;          /* sorted, unique */
        size_t n_device_ids;
} kdp_allocated_resource;

typedef struct kdp_allocated {
        uint64_t started_usec;                  /* when the List was sent, in kdp_backend_now_usec()'s clock */
        const kdp_allocated_resource *resources;
        size_t n_resources;
} kdp_allocated;

typedef struct kdp_backend_ops {
        uint32_t abi_major;                     /* KDP_BACKEND_ABI_MAJOR */
        uint32_t struct_size;                   /* sizeof(kdp_backend_ops) as the backend saw it */
        const char *name;                       /* must match the file name kdp-backend-<name>.so */
        const char *const *udev_subsystems;     /* NULL-terminated; events of these trigger a scan */
        const kdp_param_spec *params;           /* { 0 }-terminated config keys */

        /* required: set up; *ret_state is written only on success */
        int (*init)(kdp_backend_ctx *ctx, void **ret_state);
        /* required: add every resource and device to `tree`; must not block */
        int (*scan)(void *state, kdp_device_tree *tree);
        /* required: release everything; state may be NULL */
        void (*fini)(void *state);

        /* optional: fill `resp` for one container; -EOPNOTSUPP = build it from the device records */
        int (*allocate)(void *state, const kdp_alloc_request *req, kdp_alloc_response *resp);
        /* optional: choose req->size IDs; -EOPNOTSUPP or an invalid answer = the framework's choice */
        int (*preferred)(void *state, const kdp_pref_request *req, kdp_pref_response *resp);
        /* optional: prepare devices before a container starts; makes pre_start_required true;
         * worker thread, slow parts in kdp_backend_run_unlocked() (see Threads above) */
        int (*pre_start)(void *state, const kdp_prestart_request *req);
        /* optional: returns KDP_HEALTHY or KDP_UNHEALTHY (with *ret_reason, free()d by the caller) or <0 */
        int (*probe)(void *state, const char *resource, const char *device_id, char **ret_reason);
        uint32_t probe_interval_ms;             /* 0: the framework default (5000) */
        uint32_t rescan_interval_ms;            /* 0: scan only at start, on udev events and on reload */
        /* optional: sees each device event of udev_subsystems before the scan it triggers */
        void (*device_event)(void *state, const kdp_device_event *ev);
        /* optional: kdpd got SIGHUP and kept this backend running: re-read the files it owns; a scan follows */
        void (*reload)(void *state);
        /* optional, loop thread: what the kubelet reports in use, after each List that succeeded */
        void (*allocated)(void *state, const kdp_allocated *a);
        /* append new fields here only */
} kdp_backend_ops;

/* True if a backend compiled against `ops` has `field` (reads within struct_size only). */
#define KDP_OPS_HAS(ops, field) \
        ((ops)->struct_size >= offsetof(kdp_backend_ops, field) + sizeof((ops)->field))

#define KDP_BACKEND_REGISTER(ops)                                               \
        __attribute__((visibility("default"))) const kdp_backend_ops *kdp_backend_entry(void); \
        __attribute__((visibility("default"))) const kdp_backend_ops *kdp_backend_entry(void) { \
                return &(ops);                                                   \
        }

typedef const kdp_backend_ops *(*kdp_backend_entry_fn)(void);

/* ---- the context a backend gets in init() ---- */

typedef enum kdp_path_kind {
        KDP_PATH_SYSFS,         /* --sysfs-root, default /sys */
        KDP_PATH_DEV,           /* --dev-root, default /dev */
        KDP_PATH_PROC,          /* --proc-root, default /proc */
        KDP_PATH_CDI,           /* --cdi-dir, default /var/run/cdi */
        _KDP_PATH_KIND_MAX,
        _KDP_PATH_KIND_INVALID = -EINVAL,
} kdp_path_kind;

const char *kdp_backend_name(const kdp_backend_ctx *ctx);

/* The configured value of a declared param, or its default; NULL if unset or undeclared. */
const char *kdp_backend_param(const kdp_backend_ctx *ctx, const char *name);
/* Where that value came from: "FILE:LINE", "-o BACKEND.KEY=VALUE" or "default"; for error messages. */
const char *kdp_backend_param_origin(const kdp_backend_ctx *ctx, const char *name);

/*
 * Parses a param as a decimal integer in [min, max], or a boolean
 * (true/false/yes/no/on/off/1/0). Returns 0, -ENOENT when unset, -EINVAL when
 * malformed or out of range; the error is logged naming where the value came
 * from (file and line, or the -o flag) and the key.
 */
int kdp_backend_param_int(const kdp_backend_ctx *ctx, const char *name, int64_t min, int64_t max,
                          int64_t *ret);
int kdp_backend_param_bool(const kdp_backend_ctx *ctx, const char *name, bool *ret);
/*
 * A param that names an extended resource ("example.com/widget"): *ret is the
 * value (owned by ctx) when the kubelet would accept it as a resource name;
 * else -EINVAL, logged with the key, the value and where it came from. -ENOENT
 * when unset.
 */
int kdp_backend_param_resource(const kdp_backend_ctx *ctx, const char *name, const char **ret);

/*
 * Reads a sysfs or procfs file to its end into *ret (free()), without trailing
 * newlines: such files report a size of 4096 or 0, never their length. At most
 * 64 KiB (-EFBIG); otherwise the -errno of open or read.
 */
int kdp_sysfs_read_text(const char *path, char **ret);

/* Builds "<root of kind>/<rel>" into *ret (free()). */
int kdp_backend_path(const kdp_backend_ctx *ctx, kdp_path_kind kind, const char *rel, char **ret);

/*
 * Watching an fd the backend owns (a kernel log, a vendor event channel) on
 * kdpd's loop. `fn` runs on the loop thread, under the backend's lock, while
 * `fd` is readable: it must read until EAGAIN, and returns >0 to ask for a
 * scan, 0 for none, <0 to stop watching (logged). Allowed in init and in any
 * loop-thread hook or callback (a callback may unwatch its own fd). Every
 * watch ends before fini runs; the fd stays the backend's to close.
 * -EOPNOTSUPP when the backend runs outside kdpd (unit tests).
 */
typedef int (*kdp_backend_fd_fn)(void *state, int fd);
int kdp_backend_watch_fd(kdp_backend_ctx *ctx, int fd, kdp_backend_fd_fn fn);
void kdp_backend_unwatch_fd(kdp_backend_ctx *ctx, int fd);

/*
 * From inside pre_start only: releases the backend's lock, runs fn(userdata) on
 * the calling worker thread, takes the lock again and returns fn's result.
 * Meanwhile other hooks of the backend may run, so fn must not touch the
 * backend's state or call kdp_backend_* functions on its ctx: it works on what
 * userdata holds, owned by the caller. The backend is not stopped while fn
 * runs: a restart at reload, or kdpd's exit, waits for it. -EPERM anywhere but
 * directly in pre_start (in fn too). Outside kdpd (unit tests) fn simply runs.
 */
typedef int (*kdp_backend_unlocked_fn)(void *userdata);
int kdp_backend_run_unlocked(kdp_backend_ctx *ctx, kdp_backend_unlocked_fn fn, void *userdata);

/* Asks for one scan `ms` from now, for state that expires; a later call replaces the request. */
int kdp_backend_rescan_after(kdp_backend_ctx *ctx, uint32_t ms);

/*
 * The time a backend goes by, in µs of CLOCK_MONOTONIC: the clock the kernel stamps
 * its log records with (µs since boot), so a record's age is now minus its stamp.
 * A backend reads time only through this call, never clock_gettime(), so that its
 * unit tests can run it against a fake clock (timestamps relative to a fake "now").
 */
uint64_t kdp_backend_now_usec(const kdp_backend_ctx *ctx);

/* The backend="<name>" field that the backend log macros prefix. */
const kdp_log_field *kdp_backend_log_field(const kdp_backend_ctx *ctx);

#define KDP_BACKEND_LOG_(ctx, level, err, msg, ...)                                              \
        kdp_log_emit((level), (err), __FILE__, __LINE__, (msg), kdp_backend_log_field(ctx), 1,  \
                     KDP_LOG_FIELDS_(__VA_ARGS__) + 1, KDP_LOG_NFIELDS_(__VA_ARGS__))
#define kdp_backend_log_info(ctx, msg, ...) ((void) KDP_BACKEND_LOG_(ctx, KDP_LOG_INFO, 0, msg, ##__VA_ARGS__))
#define kdp_backend_log_warning(ctx, msg, ...) ((void) KDP_BACKEND_LOG_(ctx, KDP_LOG_WARNING, 0, msg, ##__VA_ARGS__))
#define kdp_backend_log_error(ctx, r, msg, ...) KDP_BACKEND_LOG_(ctx, KDP_LOG_ERROR, (r), msg, ##__VA_ARGS__)
#define kdp_backend_log_v(ctx, v, msg, ...) \
        ((void) ((v) <= kdp_log_get_verbosity() ? KDP_BACKEND_LOG_(ctx, KDP_LOG_INFO, 0, msg, ##__VA_ARGS__) : 0))

/* ---- building responses (valid only inside the hook that received them) ---- */

/* Adds everything the device record of `device_id` carries (the default Allocate). -ENOENT if unknown. */
int kdp_alloc_response_add_device(kdp_alloc_response *resp, const char *device_id);
/* Sets an env var; a later value for the same key replaces the earlier one. */
int kdp_alloc_response_add_env(kdp_alloc_response *resp, const char *key, const char *value);
/* Adds a device node; a second node with the same container path is dropped (returns 0). */
int kdp_alloc_response_add_dev_node(kdp_alloc_response *resp, const kdp_dev_node *node);
/* Adds a mount; a second mount with the same container path is dropped (returns 0). */
int kdp_alloc_response_add_mount(kdp_alloc_response *resp, const kdp_mount *mount);
int kdp_alloc_response_add_annotation(kdp_alloc_response *resp, const char *key, const char *value);
/* Adds a CDI device name ("vendor.com/class=name", else -EINVAL); duplicates are dropped. */
int kdp_alloc_response_add_cdi_device(kdp_alloc_response *resp, const char *name);

/* Appends one ID to the preferred set (-EINVAL if not available, duplicates are dropped). */
int kdp_pref_response_add(kdp_pref_response *resp, const char *device_id);

#ifdef __cplusplus
}
#endif
