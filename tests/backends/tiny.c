/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tiny: the source of every small backend the loader and reload tests load
 * (tests/backends/CMakeLists.txt builds one kdp-backend-<name>.so per variant).
 * Compile definitions pick the variant:
 *
 *   TINY_NAME="x"          ops name (default: the variant's file name)
 *   TINY_ABI=n             abi_major (default KDP_BACKEND_ABI_MAJOR)
 *   TINY_NO_ENTRY          no kdp_backend_entry symbol
 *   TINY_NO_SCAN           scan hook NULL
 *   TINY_INIT_ERROR=-e     init fails with -e
 *   TINY_RESOURCE="r"      resource of the devices
 *   TINY_PREFIX="p"        device IDs "<p>-0", "<p>-1", ...
 *   TINY_DEVICES="n"       default of the `devices` param
 *   TINY_SUBSYSTEM="s"     udev subsystem whose events trigger a scan (default none)
 *   TINY_RELOAD            a reload hook: each call is logged ("Reloaded own files"
 *                          reloads=<n>) and adds one device, so the scan that follows shows it
 *   TINY_OLD_OPS           struct_size ends before `reload`, as in a backend built
 *                          before that hook existed (the table still sets it)
 *   TINY_QUIET_RELOAD      with TINY_RELOAD: the first reload changes only what the kubelet
 *                          cannot see (TINY_LABEL becomes "reloaded"), each later one adds a device
 *   TINY_RESOURCE2="r"     a second resource with as many devices, IDs "<TINY_PREFIX2>-<i>"
 *   TINY_PRE_START         a pre_start hook and the param `hold_dir`: a PreStart of a device
 *                          whose file <hold_dir>/<ID> exists logs "Holding pre-start" and
 *                          waits, without the backend's lock, until the file is gone
 *                          ("Released pre-start"); then "Prepared devices" with the
 *                          count of PreStarts so far. Init logs what
 *                          kdp_backend_run_unlocked() returns outside pre_start, fini logs
 *                          "Stopped backend".
 *   TINY_SCAN_HOLD         param `hold_dir`: a scan while <hold_dir>/scan exists logs
 *                          "Holding scan" and waits, with the backend's lock, until the
 *                          file is gone ("Released scan")
 *   TINY_ALLOCATE          an allocate hook: each device as the default gives it, and the
 *                          env TINY_HOOK=allocate; logs "Allocated by hook" with the count
 *
 * Every variant declares the params `devices` (0..1024) and `label` (default
 * "a"); each device carries the env TINY_LABEL=<label>, so a reload that only
 * changes `label` changes every device record but no ID.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <kdp/backend.h>

#ifndef TINY_ABI
#define TINY_ABI KDP_BACKEND_ABI_MAJOR
#endif
#ifndef TINY_INIT_ERROR
#define TINY_INIT_ERROR 0
#endif

typedef struct tiny_state {
        kdp_backend_ctx *ctx;
        int64_t n_devices;
        int64_t reloads;        /* reload calls since init */
        const char *label;      /* borrowed from the ctx, valid until fini */
        const char *hold_dir;   /* borrowed from the ctx; NULL: no PreStart waits */
        int64_t pre_starts;     /* PreStarts answered since init */
        int64_t allocates;      /* allocate hook calls since init */
} tiny_state;

/* unused unless TINY_PRE_START */
__attribute__((unused)) static int tiny_nothing(void *userdata) {
        (void) userdata;
        return 0;
}

static int tiny_init(kdp_backend_ctx *ctx, void **ret_state) {
        tiny_state *s;
        int64_t n;
        int r;

        if (TINY_INIT_ERROR < 0)
                return TINY_INIT_ERROR;
        r = kdp_backend_param_int(ctx, "devices", 0, 1024, &n);
        if (r < 0)
                return r;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        *s = (tiny_state){ .ctx = ctx, .n_devices = n, .label = kdp_backend_param(ctx, "label"),
                           .hold_dir = kdp_backend_param(ctx, "hold_dir") };
#ifdef TINY_PRE_START
        kdp_backend_log_info(ctx, "Ran unlocked outside pre-start",
                             KDP_F_INT("result", kdp_backend_run_unlocked(ctx, tiny_nothing, NULL)));
#endif
        *ret_state = s;
        return 0;
}

/* The devices reloads added, and the TINY_LABEL every device carries. */
static int64_t tiny_extra(const tiny_state *s) {
#ifdef TINY_QUIET_RELOAD
        return s->reloads > 1 ? s->reloads - 1 : 0;
#else
        return s->reloads;
#endif
}

static const char *tiny_label(const tiny_state *s) {
#ifdef TINY_QUIET_RELOAD
        if (s->reloads > 0)
                return "reloaded";
#endif
        return s->label;
}

/* Adds the devices of one resource, "<prefix>-<i>". */
__attribute__((unused)) static int tiny_add(const tiny_state *s, kdp_device_tree *tree, const char *resource,
                                            const char *prefix) {
        int r = kdp_device_tree_add_resource(tree, resource);

        for (int64_t i = 0; r >= 0 && i < s->n_devices + tiny_extra(s); i++) {
                char id[KDP_DEVICE_ID_MAX + 1];

                (void) snprintf(id, sizeof(id), "%s-%" PRId64, prefix, i);
                r = kdp_device_tree_add(tree, resource, &(kdp_device_info){
                        .id = id,
                        .health = KDP_HEALTHY,
                        .envs = (const kdp_kv[]){ { "TINY_LABEL", tiny_label(s) }, { 0 } },
                });
        }
        return r;
}

/* unused unless TINY_SCAN_HOLD: waits while <hold_dir>/scan exists, with the lock the scan runs under */
__attribute__((unused)) static int tiny_hold_scan(const tiny_state *s) {
        char *path;

        if (!s->hold_dir)
                return 0;
        if (asprintf(&path, "%s/scan", s->hold_dir) < 0)
                return -ENOMEM;
        if (access(path, F_OK) == 0) {
                kdp_backend_log_info(s->ctx, "Holding scan");
                while (access(path, F_OK) == 0)
                        (void) usleep(10 * 1000);
                kdp_backend_log_info(s->ctx, "Released scan");
        }
        free(path);
        return 0;
}

/* unused in the TINY_NO_SCAN variant */
__attribute__((unused)) static int tiny_scan(void *state, kdp_device_tree *tree) {
        tiny_state *s = state;
        int r;

#ifdef TINY_SCAN_HOLD
        r = tiny_hold_scan(s);
        if (r < 0)
                return r;
#endif
        r = tiny_add(s, tree, TINY_RESOURCE, TINY_PREFIX);
#ifdef TINY_RESOURCE2
        if (r >= 0)
                r = tiny_add(s, tree, TINY_RESOURCE2, TINY_PREFIX2);
#endif
        return r < 0 ? r : 0;
}

static void tiny_fini(void *state) {
#ifdef TINY_PRE_START
        tiny_state *s = state;

        kdp_backend_log_info(s->ctx, "Stopped backend", KDP_F_INT("preStarts", s->pre_starts));
#endif
        free(state);
}

/* unused unless TINY_PRE_START: runs without the backend's lock, sees only its path */
__attribute__((unused)) static int tiny_hold(void *userdata) {
        const char *path = userdata;

        while (access(path, F_OK) == 0)
                (void) usleep(10 * 1000);
        return 0;
}

/* unused unless TINY_PRE_START */
__attribute__((unused)) static int tiny_pre_start(void *state, const kdp_prestart_request *req) {
        tiny_state *s = state;

        for (size_t i = 0; s->hold_dir && i < req->n_device_ids; i++) {
                char *path;
                int r;

                if (asprintf(&path, "%s/%s", s->hold_dir, req->device_ids[i]) < 0)
                        return -ENOMEM;
                if (access(path, F_OK) == 0) {
                        kdp_backend_log_info(s->ctx, "Holding pre-start", KDP_F_STR("device", req->device_ids[i]));
                        r = kdp_backend_run_unlocked(s->ctx, tiny_hold, path);
                        kdp_backend_log_info(s->ctx, "Released pre-start", KDP_F_STR("device", req->device_ids[i]),
                                             KDP_F_INT("result", r));
                }
                free(path);
        }
        s->pre_starts++;
        kdp_backend_log_info(s->ctx, "Prepared devices", KDP_F_STR("resource", req->resource),
                             KDP_F_STR("device", req->n_device_ids > 0 ? req->device_ids[0] : ""),
                             KDP_F_INT("preStarts", s->pre_starts));
        return 0;
}

/* unused unless TINY_ALLOCATE */
__attribute__((unused)) static int tiny_allocate(void *state, const kdp_alloc_request *req, kdp_alloc_response *resp) {
        tiny_state *s = state;
        int r = 0;

        for (size_t i = 0; r >= 0 && i < req->n_device_ids; i++)
                r = kdp_alloc_response_add_device(resp, req->device_ids[i]);
        if (r >= 0)
                r = kdp_alloc_response_add_env(resp, "TINY_HOOK", "allocate");
        if (r < 0)
                return r;
        s->allocates++;
        kdp_backend_log_info(s->ctx, "Allocated by hook", KDP_F_STR("resource", req->resource),
                             KDP_F_INT("allocates", s->allocates));
        return 0;
}

/* unused unless TINY_RELOAD */
__attribute__((unused)) static void tiny_reload(void *state) {
        tiny_state *s = state;

        s->reloads++;
        kdp_backend_log_info(s->ctx, "Reloaded own files", KDP_F_INT("reloads", s->reloads));
}

static const kdp_param_spec tiny_params[] = {
        { "devices", TINY_DEVICES, "Number of devices" },
        { "label", "a", "Value of TINY_LABEL in every device" },
        { "hold_dir", NULL, "PreStarts of devices with a file here wait until it is gone (scans: the file scan)" },
        { 0 },
};

static const kdp_backend_ops tiny_ops = {
        .abi_major = TINY_ABI,
#ifdef TINY_OLD_OPS
        .struct_size = offsetof(kdp_backend_ops, reload),
#else
        .struct_size = sizeof(kdp_backend_ops),
#endif
        .name = TINY_NAME,
#ifdef TINY_SUBSYSTEM
        .udev_subsystems = (const char *const[]){ TINY_SUBSYSTEM, NULL },
#endif
        .params = tiny_params,
        .init = tiny_init,
#ifndef TINY_NO_SCAN
        .scan = tiny_scan,
#endif
        .fini = tiny_fini,
#ifdef TINY_RELOAD
        .reload = tiny_reload,
#endif
#ifdef TINY_PRE_START
        .pre_start = tiny_pre_start,
#endif
#ifdef TINY_ALLOCATE
        .allocate = tiny_allocate,
#endif
};

#ifdef TINY_NO_ENTRY
/* Exported under another name, so the .so is otherwise a normal backend. */
__attribute__((visibility("default"))) const kdp_backend_ops *tiny_entry(void);
__attribute__((visibility("default"))) const kdp_backend_ops *tiny_entry(void) {
        return &tiny_ops;
}
#else
KDP_BACKEND_REGISTER(tiny_ops);
#endif
