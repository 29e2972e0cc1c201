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
} tiny_state;

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
        *s = (tiny_state){ .ctx = ctx, .n_devices = n, .label = kdp_backend_param(ctx, "label") };
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

/* unused in the TINY_NO_SCAN variant */
__attribute__((unused)) static int tiny_scan(void *state, kdp_device_tree *tree) {
        tiny_state *s = state;
        int r;

        r = kdp_device_tree_add_resource(tree, TINY_RESOURCE);
        for (int64_t i = 0; r >= 0 && i < s->n_devices + tiny_extra(s); i++) {
                char id[KDP_DEVICE_ID_MAX + 1];

                (void) snprintf(id, sizeof(id), "%s-%" PRId64, TINY_PREFIX, i);
                r = kdp_device_tree_add(tree, TINY_RESOURCE, &(kdp_device_info){
                        .id = id,
                        .health = KDP_HEALTHY,
                        .envs = (const kdp_kv[]){ { "TINY_LABEL", tiny_label(s) }, { 0 } },
                });
        }
        return r < 0 ? r : 0;
}

static void tiny_fini(void *state) {
        free(state);
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
