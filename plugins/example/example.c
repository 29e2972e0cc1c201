/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * example: the template a vendor copies, and the framework's test double. Serves
 * `devices` widgets "widget-<N>" of `resource`, each /dev/null seen as /dev/widget<N>.
 * Copy to plugins/<kind>/<kind>.c, rename example_ to <kind>_ and replace example_scan's
 * loop by discovery under kdp_backend_path() roots (tests run on fixture trees).
 * Threads: hooks run under this backend's lock, so the state needs none; scan and probe
 * must not block, allocate and preferred answer in microseconds, pre_start may take up
 * to 30 s. Ownership: what we hand the framework is borrowed for the call (it copies);
 * what it hands us is borrowed (ctx until fini returns). Errors are -errno; an optional
 * hook returns -EOPNOTSUPP, or is NULL, for the framework's default.
 */
#define _GNU_SOURCE 1   /* asprintf(); same value as the build's -D_GNU_SOURCE, so no redefinition */

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <kdp/backend.h>
#include <kdp/cleanup.h>

/* A CDI name "<resource>=<id>": a resource name of 253 + 1 + 63 characters, '=', an ID. */
#define EXAMPLE_CDI_MAX (253 + 1 + 63 + 1 + KDP_DEVICE_ID_MAX + 1)

typedef struct example_state {
        kdp_backend_ctx *ctx;           /* borrowed, valid until fini returns */
        const char *resource;           /* borrowed from ctx's params */
        int64_t n_devices, n_numa_nodes, prestart_delay_ms;
        bool cdi;                       /* each widget gets a CDI name, and kdpd writes its spec */
        bool *unhealthy;                /* owned, [n_devices] */
        bool *not_served;               /* owned, [n_devices]: looked at and skipped */
} example_state;

/* The index of canonical "widget-<i>" (not "widget-01"), i < n_devices; else -ENOENT. */
static int example_parse_id(const example_state *s, const char *id, size_t *ret) {
        char canonical[32];
        unsigned i;

        if (sscanf(id, "widget-%u", &i) != 1 || i >= s->n_devices ||
            snprintf(canonical, sizeof(canonical), "widget-%u", i) < 0 || strcmp(canonical, id) != 0)
                return -ENOENT;
        *ret = i;
        return 0;
}

/* required: frees everything init made; called with NULL or a half-built state too. */
static void example_fini(void *state) {
        example_state *s = state;

        if (s) {
                free(s->unhealthy);
                free(s->not_served);
        }
        free(s);
}
KDP_DEFINE_CLEANUP_FUNC(example_state, example_fini)

/* Sets marks[i] for each widget ID listed in param `name`; an unknown ID is logged and ignored. */
static int example_mark(example_state *s, const char *name, bool **ret_marks) {
        _cleanup_free_ char *list = strdup(kdp_backend_param(s->ctx, name) ?: "");
        bool *marks = calloc((size_t) s->n_devices + 1, sizeof(bool));
        char *save = NULL;
        size_t i;

        if (!marks || !list) {
                free(marks);
                return -ENOMEM;
        }
        for (char *id = strtok_r(list, ",", &save); id; id = strtok_r(NULL, ",", &save)) {
                if (example_parse_id(s, id, &i) < 0)
                        kdp_backend_log_warning(s->ctx, "Ignored unknown device in a list of widgets",
                                                KDP_F_STR("key", name), KDP_F_STR("device", id));
                else
                        marks[i] = true;
        }
        *ret_marks = marks;
        return 0;
}

/* required: reads the params (defaults come from example_params), writes *ret_state only on success. */
static int example_init(kdp_backend_ctx *ctx, void **ret_state) {
        _cleanup_(example_finip) example_state *s = calloc(1, sizeof(example_state));
        int r;

        if (!s)
                return -ENOMEM;
        s->ctx = ctx;
        r = kdp_backend_param_resource(ctx, "resource", &s->resource);
        if (r >= 0)
                r = kdp_backend_param_int(ctx, "devices", 0, 65536, &s->n_devices);
        if (r >= 0)
                r = kdp_backend_param_int(ctx, "numa_nodes", 0, 1024, &s->n_numa_nodes);
        if (r >= 0)
                r = kdp_backend_param_int(ctx, "prestart_delay_ms", 0, 60000, &s->prestart_delay_ms);
        if (r >= 0)
                r = kdp_backend_param_bool(ctx, "cdi", &s->cdi);
        if (r < 0)
                return r;       /* already logged with the value's origin */
        r = example_mark(s, "unhealthy", &s->unhealthy);
        if (r >= 0)
                r = example_mark(s, "not_served", &s->not_served);
        if (r < 0)
                return r;
        kdp_backend_log_info(ctx, "Configured widgets", KDP_F_STR("resource", s->resource),
                             KDP_F_INT("devices", s->n_devices), KDP_F_INT("numaNodes", s->n_numa_nodes));
        *ret_state = KDP_TAKE_PTR(s);
        return 0;
}

/* Tests only: a scan stuck in the kernel, while the file param scan_hold_file names exists (120 s at most). */
static void example_hold(const example_state *s) {
        const char *path = kdp_backend_param(s->ctx, "scan_hold_file");
        struct timespec tick = { 0, 10 * 1000000 };

        for (int i = 0; path && *path && i < 12000 && access(path, F_OK) == 0; i++)
                (void) nanosleep(&tick, NULL);
}

/* required: adds the whole current set of devices; the framework diffs snapshots. Must not block. */
static int example_scan(void *state, kdp_device_tree *tree) {
        example_state *s = state;
        int r;

        example_hold(s);
        r = kdp_device_tree_add_resource(tree, s->resource);   /* kept at 0 devices too */
        for (int64_t i = 0; r >= 0 && i < s->n_devices; i++) {
                char id[32], container_path[32], env_key[32], cdi[EXAMPLE_CDI_MAX];
                const char *cdis[] = { cdi, NULL };

                (void) snprintf(id, sizeof(id), "widget-%" PRId64, i);
                if (s->not_served[i]) {
                        /* looked at and skipped: say so (a PCI backend names the PCI address) and why */
                        r = kdp_device_tree_not_served(tree, id, "listed in example.not_served");
                        continue;
                }
                (void) snprintf(container_path, sizeof(container_path), "/dev/widget%" PRId64, i);
                (void) snprintf(env_key, sizeof(env_key), "WIDGET_%" PRId64, i);
                (void) snprintf(cdi, sizeof(cdi), "%s=%s", s->resource, id);   /* CDI kind: the resource */
                /* the host path is the real host's (the runtime opens it), not under the dev root */
                r = kdp_device_tree_add(tree, s->resource, &(kdp_device_info){
                        .id = id,
                        .health = s->unhealthy[i] ? KDP_UNHEALTHY : KDP_HEALTHY,
                        .health_reason = s->unhealthy[i] ? "configured unhealthy" : NULL,
                        .numa_nodes = { s->n_numa_nodes > 0 ? (int) (i % s->n_numa_nodes) : 0 },
                        .n_numa_nodes = s->n_numa_nodes > 0 ? 1 : 0,
                        .dev_nodes = (const kdp_dev_node[]){ { "/dev/null", container_path, "rw" }, { 0 } },
                        .envs = (const kdp_kv[]){ { env_key, id }, { 0 } },
                        .cdi_devices = s->cdi ? cdis : NULL,    /* kdpd writes the spec of each name */
                });
                kdp_backend_log_v(s->ctx, 4, "Scanned device", KDP_F_STR("device", id));
        }
        return r < 0 ? r : 0;
}

/* With example.cdi: widget `id` by its CDI name alone; its node and env are in the spec kdpd
 * wrote, and named twice the runtime would get them twice. */
static int example_add_cdi(const example_state *s, kdp_alloc_response *resp, const char *id) {
        char cdi[EXAMPLE_CDI_MAX];
        size_t i;

        if (example_parse_id(s, id, &i) < 0)
                return -ENOENT;
        (void) snprintf(cdi, sizeof(cdi), "%s=%s", s->resource, id);   /* fits: see EXAMPLE_CDI_MAX */
        return kdp_alloc_response_add_cdi_device(resp, cdi);
}

/* optional: one container's response. add_device() adds the device record (all a NULL hook
 * would do: its node and env); with example.cdi the widget's CDI name stands for them. We add
 * to it. IDs are known (so at most 63 characters); envs are per container. */
static int example_allocate(void *state, const kdp_alloc_request *req, kdp_alloc_response *resp) {
        example_state *s = state;
        _cleanup_free_ char *joined = calloc(req->n_device_ids + 1, KDP_DEVICE_ID_MAX + 1);
        char *p = joined;
        int r;

        if (!joined)
                return -ENOMEM;
        for (size_t i = 0; i < req->n_device_ids; i++) {
                r = s->cdi ? example_add_cdi(s, resp, req->device_ids[i])
                           : kdp_alloc_response_add_device(resp, req->device_ids[i]);
                if (r < 0)
                        return r;
                p = stpcpy(stpcpy(p, i > 0 ? "," : ""), req->device_ids[i]);
        }
        r = kdp_alloc_response_add_env(resp, "EXAMPLE_WIDGETS", joined);
        return r < 0 ? r : kdp_alloc_response_add_annotation(resp, "example.com/widgets", joined);
}

/* optional: pick req->size of req->available. The default (must_include, one NUMA node,
 * nearest PCI subtree) knows all widgets know; implement it only with more (NVLink...),
 * calling kdp_pref_response_add() per ID. An invalid answer is replaced by the default. */
static int example_preferred(void *state, const kdp_pref_request *req, kdp_pref_response *resp) {
        return -EOPNOTSUPP;
}

/* optional: runs before every container start on a worker thread; may block (30 s budget). */
static int example_pre_start(void *state, const kdp_prestart_request *req) {
        example_state *s = state;
        struct timespec t = { s->prestart_delay_ms / 1000, s->prestart_delay_ms % 1000 * 1000000 };

        while (nanosleep(&t, &t) < 0 && errno == EINTR)
                ;
        return 0;
}

/* optional: periodic health of one device, for what raises no udev event; reason is ours to allocate. */
static int example_probe(void *state, const char *resource, const char *device_id, char **ret_reason) {
        example_state *s = state;
        size_t i;

        if (strcmp(resource, s->resource) != 0 || example_parse_id(s, device_id, &i) < 0)
                return -ENOENT;
        if (!s->unhealthy[i])
                return KDP_HEALTHY;
        *ret_reason = strdup("configured unhealthy");
        return *ret_reason ? KDP_UNHEALTHY : -ENOMEM;
}

static const kdp_param_spec example_params[] = {
        { "devices", "8", "Number of widgets (0..65536)" },
        { "numa_nodes", "2", "NUMA nodes the widgets are spread over round-robin (0: no topology)" },
        { "resource", "example.com/widget", "Extended resource name of the widgets" },
        { "unhealthy", "", "Comma-separated widget IDs to report Unhealthy" },
        { "prestart_delay_ms", "0", "Milliseconds each PreStartContainer takes (0..60000)" },
        { "cdi", "false", "write CDI specs into --cdi-dir and return CDI device names" },
        { "not_served", "", "Comma-separated widget IDs to look at and not serve (kdpctl not-served lists them)" },
        { "scan_hold_file", "", "Tests: while this file exists, each scan waits for it to go (120 s at most)" },
        { 0 },
};

static const kdp_backend_ops example_ops = {    /* static: the framework keeps pointers */
        .abi_major = KDP_BACKEND_ABI_MAJOR,
        .struct_size = sizeof(kdp_backend_ops),
        .name = "example",                                      /* file: kdp-backend-example.so */
        .udev_subsystems = (const char *const[]){ NULL },       /* no hardware; a PCI backend: "pci" */
        .params = example_params,
        .init = example_init,
        .scan = example_scan,
        .fini = example_fini,
        .allocate = example_allocate,
        .preferred = example_preferred,
        .pre_start = example_pre_start,
        .probe = example_probe,                                 /* every probe_interval_ms (0: 5000) */
};
KDP_BACKEND_REGISTER(example_ops);
