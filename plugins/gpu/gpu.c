/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpu: NVIDIA, AMD and Intel GPUs as the resources pods already ask for
 * (nvidia.com/gpu, amd.com/gpu, gpu.intel.com/i915|xe). See README.md for
 * every path it reads and every config key.
 *
 *   init   params -> state
 *   scan   PCI list -> the table of GPUs seen since start (gpus[]) -> devices; at the first
 *          NVIDIA GPU, loads NVML when the node has it and starts its Xid events, else opens
 *          the kernel log, reads what it holds; kdpd watches the one that serves Xids
 *   kmsg   readable -> Xids -> a critical one marks its GPU and asks for a scan
 *   nvml   the event worker's eventfd readable -> Xids -> the same on_xid() as kmsg
 *   device_event (pci add/bind/change) -> the GPU was reset: its Xid is cleared
 *   allocate / preferred -> from gpus[] (gRPC thread, under the backend lock); with NVML, every
 *          scan reads each NVIDIA GPU's active NVLinks, which preferred weighs (nvlink.c)
 *
 * A GPU it looks at and does not take (another vendor's driver or none, vfio-pci, filtered out by
 * allow/deny or vendors, procfs missing or malformed, excluded, an Intel PF with VFs), and a PCI
 * function libkdp could not read that may be a GPU, is declared with kdp_device_tree_not_served()
 * and its reason at every scan: kdpd logs it once, when that starts or changes, and
 * `kdpctl not-served` lists it.
 *
 * A GPU once seen stays in the table: when it is unbound, excluded or removed
 * it is reported Unhealthy with the reason instead of vanishing, so capacity
 * stays honest and the kubelet stops admitting pods onto it. SR-IOV re-cuts a
 * GPU instead of losing it, and so leaves the table: a PF whose VFs were
 * enabled (the VFs are served in its place, as a kdpd started now would), and
 * a VF that went with its PF's sriov_numvfs change (the PF, or the new VFs,
 * are the silicon now; keeping both would count it twice). The table holds
 * only what was read; every scan reads sysfs/procfs again (udev events and a
 * periodic rescan for what sends no event: AER counters, procfs, /dev nodes).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <kdp/backend.h>
#include <kdp/cleanup.h>
#include <kdp/health.h>
#include <kdp/pci.h>
#include <kdp/subsystem.h>

#include "gpu.h"
#include "mig.h"
#include "nvml.h"
#include "xid.h"

#define REASON_MAX 256
#define PCI_RELIST_MS 30000     /* the PCI list is read again at least this often, events or not */

#define NODE_MAX 32                     /* "dri/renderD128", relative to the dev root */
#define PART_NODES_MAX 4

/*
 * A part of a GPU served as a device of its own: an AMD compute partition (amd_partitions single or
 * mixed) or an NVIDIA MIG device (mig_strategy single or mixed).
 */
typedef struct gpu_part {
        char id[GPU_MIG_UUID_MAX];              /* the PCI address (one partition), "<address>-p<index>", "MIG-..." */
        char nodes[PART_NODES_MAX][NODE_MAX];   /* its card and render node; /dev/nvidia<minor> and its 2 caps nodes */
        size_t n_nodes;
        char resource[GPU_RESOURCE_MAX];        /* "": the GPU's; mig_strategy mixed: <domain>/mig-<profile> */
        bool mig;
        unsigned gi, ci;                        /* MIG: its GPU and compute instance */
        char profile[GPU_MIG_PROFILE_MAX];      /* MIG: "1g.10gb" */
        char why[128];                          /* MIG: what is wrong with it alone ("" when nothing) */
        unsigned xid;                           /* MIG: the last critical Xid of its instance, 0: none */
        uint64_t xid_at_ms;                     /* CLOCK_MONOTONIC when it was logged */
} gpu_part;

typedef struct gpu {
        char bdf[KDP_PCI_ADDRESS_MAX];
        gpu_vendor vendor;
        char resource[GPU_RESOURCE_MAX];
        char driver[64];                        /* the driver it is served with */
        char id[GPU_UUID_MAX];                  /* UUID (NVIDIA) or PCI address */
        char nodes[GPU_NODES_MAX][NODE_MAX];    /* its own nodes, relative to the dev root */
        size_t n_nodes;
        unsigned nv_minor;                      /* NVIDIA: /dev/nvidia<minor>, as procfs last said */
        gpu_part parts[GPU_PARTS_MAX];          /* AMD partitions, NVIDIA MIG devices: its devices */
        size_t n_parts;                         /* 0: the GPU is the device */
        int numa_node;
        kdp_health_pci pci;
        bool bound;                             /* bound to its driver at the last scan */
        bool rebound;                           /* a bind/add event came since the last scan */
        char physfn[KDP_PCI_ADDRESS_MAX];       /* a VF: its PF; "" otherwise */
        int pf_numvfs;                          /* a VF: its PF's sriov_numvfs (> 0) when last seen */
        bool recut;                             /* SR-IOV re-cut it: it leaves the table after this scan */
        unsigned xid;                           /* the last critical Xid, 0: none */
        uint64_t xid_at_ms;                     /* CLOCK_MONOTONIC when it was logged */
        uint64_t xid_scan;                      /* gpu_state.n_scans when the Xid was read */
        uint64_t unbound_scan;                  /* the n_scans of the last scan that found it unbound or gone */
        char reason[REASON_MAX];                /* "" when healthy */
        char nvlink[GPU_NVLINKS_MAX][KDP_PCI_ADDRESS_MAX];      /* NVIDIA: each active NVLink's remote */
        size_t n_nvlink;
} gpu;

typedef struct gpu_state {
        kdp_backend_ctx *ctx;
        gpu_config cfg;
        gpu_kmsg *kmsg;
        bool kmsg_opened;                       /* tried once, when the first NVIDIA GPU was seen */
        gpu_nvml *nvml;                         /* NVML when the node has it, else NULL */
        gpu_nvml_events *nvml_events;           /* its Xid events: when set, the kernel log is not read */
        nvmlReturn_t nvml_wait_error;           /* of the last failed event wait, logged when it changes */
        bool kmsg_replayed;                     /* the log's earlier records were read */
        uint64_t n_scans;                       /* scans started: orders Xids against what scans found */
        char *dev_root;                         /* --dev-root without a trailing '/' */
        bool nvidia_shared_present[8];          /* of nvidia_shared_nodes, at the last scan */
        kdp_pci_list_cache pci;                 /* the PCI functions as last listed */
        gpu *gpus;
        size_t n_gpus;
        int kfd_error;                          /* reading the KFD topology failed so at the last scan */
        size_t n_nvswitch;                      /* NVIDIA NVSwitches on the PCI bus at the last scan */
} gpu_state;

/* The framework's clock (CLOCK_MONOTONIC, which printk stamps kernel log records with) in µs. */
static uint64_t now_usec(const gpu_state *s) {
        return kdp_backend_now_usec(s->ctx);
}

static uint64_t now_ms(const gpu_state *s) {
        return now_usec(s) / 1000;
}

/* ---- the kernel log ---- */

static gpu *find_gpu(gpu_state *s, const char *bdf) {
        for (size_t i = 0; i < s->n_gpus; i++)
                if (strcmp(s->gpus[i].bdf, bdf) == 0)
                        return &s->gpus[i];
        return NULL;
}

/*
 * An Xid that names a MIG instance (NVML's gpuInstanceId/computeInstanceId, the kernel log's
 * "GPU-I:nn GPU-CI:nn") marks the MIG devices served of that GPU instance (and compute instance,
 * when named); true when it marked one. An Xid of the whole GPU, or naming an instance no MIG
 * device served is of, marks the GPU (all its devices).
 */
static bool mark_mig_xid(gpu_state *s, gpu *g, const gpu_xid *x, uint64_t at_ms, bool replay) {
        bool marked = false;

        if (x->gpu_instance < 0)
                return false;
        for (size_t i = 0; i < g->n_parts; i++) {
                gpu_part *p = &g->parts[i];

                if (!p->mig || p->gi != (unsigned) x->gpu_instance ||
                    (x->compute_instance >= 0 && p->ci != (unsigned) x->compute_instance))
                        continue;
                p->xid = x->code;
                p->xid_at_ms = at_ms;
                marked = true;
                kdp_backend_log_warning(s->ctx, "MIG device reported a critical Xid", KDP_F_STR("pci", x->bdf),
                                        KDP_F_STR("uuid", p->id), KDP_F_INT("gpuInstance", p->gi),
                                        KDP_F_INT("computeInstance", p->ci), KDP_F_INT("xid", x->code),
                                        KDP_F_STR("bucket", gpu_xid_bucket(x->code)),
                                        KDP_F_STR("replay", replay ? "true" : "false"));
        }
        return marked;
}

/* A reset or rebind ends the Xids of a GPU's MIG devices too. */
static void clear_mig_xids(gpu *g) {
        for (size_t i = 0; i < g->n_parts; i++)
                g->parts[i].xid = 0;
}

typedef struct xid_batch {
        gpu_state *s;
        bool changed;
} xid_batch;

static void on_xid(void *userdata, const gpu_xid *x, bool replay) {
        xid_batch *b = userdata;
        gpu_state *s = b->s;
        gpu *g = find_gpu(s, x->bdf);
        uint64_t now_us = now_usec(s), age_ms;

        if (!g || g->vendor != GPU_NVIDIA)
                return;
        if (gpu_xid_set_has(&s->cfg.xid_ignore, x->code)) {
                kdp_backend_log_v(s->ctx, 2, "Ignored an application Xid", KDP_F_STR("pci", x->bdf),
                                  KDP_F_INT("xid", x->code), KDP_F_STR("bucket", gpu_xid_bucket(x->code)));
                return;
        }
        age_ms = x->ts_usec <= now_us ? (now_us - x->ts_usec) / 1000 : 0;
        if (replay && (!s->cfg.xid_recovery_ms || x->ts_usec > now_us || age_ms >= s->cfg.xid_recovery_ms))
                return;                 /* logged before we started and already over (or unbounded) */
        b->changed = true;
        if (mark_mig_xid(s, g, x, now_us / 1000 - (replay ? age_ms : 0), replay))
                return;
        g->xid = x->code;
        g->xid_at_ms = now_us / 1000 - (replay ? age_ms : 0);
        g->xid_scan = s->n_scans;
        b->changed = true;
        kdp_backend_log_warning(s->ctx, "GPU reported a critical Xid", KDP_F_STR("pci", x->bdf),
                                KDP_F_STR("uuid", g->id), KDP_F_INT("xid", x->code),
                                KDP_F_STR("bucket", gpu_xid_bucket(x->code)), KDP_F_STR("replay", replay ? "true" : "false"));
}

/* Reads the kernel log to its end; >0 when a GPU got a critical Xid. */
static int drain_kmsg(gpu_state *s) {
        xid_batch b = { .s = s };
        int r = gpu_kmsg_drain(s->kmsg, on_xid, &b);

        return r < 0 ? r : b.changed;
}

static int on_kmsg(void *state, int fd) {
        gpu_state *s = state;

        (void) fd;
        if (!s->kmsg_replayed)
                return 1;               /* the first scan reads it, once it knows the GPUs */
        return drain_kmsg(s);
}

static int on_nvml_events(void *state, int fd) {
        gpu_state *s = state;
        xid_batch b = { .s = s };
        nvmlReturn_t err;
        int r;

        (void) fd;
        r = gpu_nvml_events_drain(s->nvml_events, on_xid, &b, &err);
        if (err != NVML_SUCCESS && err != s->nvml_wait_error)
                kdp_backend_log_warning(s->ctx, "NVML event wait failed", KDP_F_INT("nvmlReturn", err),
                                        KDP_F_STR("err", gpu_nvml_strerror(s->nvml, err)));
        s->nvml_wait_error = err;
        return r < 0 ? r : b.changed;
}

#define NVML_WAIT_MS 500        /* bounds how long stopping the event worker takes */

/*
 * Loads NVML into s->nvml. False (logged) without it: no library (the normal case without
 * NVIDIA's driver), or one that cannot be used; *ret_why then says why.
 */
static bool load_nvml(gpu_state *s, const char **ret_why) {
        const char *lib = kdp_backend_param(s->ctx, "nvml"), *why = NULL;
        int r;

        *ret_why = "gpu.nvml is empty";
        if (!lib || !*lib)
                return false;
        r = gpu_nvml_open(lib, &s->nvml, &why);
        *ret_why = why ? why : "?";
        if (r == -ENOENT) {
                kdp_backend_log_v(s->ctx, 2, "NVML not loaded", KDP_F_STR("library", lib),
                                  KDP_F_STR("reason", why ? why : "?"));
                return false;
        }
        if (r < 0) {
                kdp_backend_log_warning(s->ctx, "NVML library unusable", KDP_F_STR("library", lib),
                                        KDP_F_STR("reason", why ? why : "?"), KDP_F_STR("err", strerror(-r)));
                return false;
        }
        return true;
}

/* Starts NVML's Xid events. Returns true when NVML serves Xids, false (logged) when the kernel log has to. */
static bool start_nvml_events(gpu_state *s) {
        const char *lib = kdp_backend_param(s->ctx, "nvml");
        unsigned skipped = 0;
        int r;

        r = gpu_nvml_events_start(s->nvml, NVML_WAIT_MS, &s->nvml_events, &skipped);
        if (r >= 0) {
                r = kdp_backend_watch_fd(s->ctx, gpu_nvml_events_fd(s->nvml_events), on_nvml_events);
                if (r < 0)
                        s->nvml_events = gpu_nvml_events_free(s->nvml_events);
        }
        if (r < 0) {
                kdp_backend_log_warning(s->ctx, "NVML Xid events unavailable", KDP_F_STR("library", lib),
                                        KDP_F_STR("err", strerror(-r)));
                return false;
        }
        if (skipped)
                kdp_backend_log_warning(s->ctx, "NVML Xid events unavailable for some GPUs",
                                        KDP_F_INT("skipped", skipped));
        return true;
}

static void open_kmsg(gpu_state *s) {
        _cleanup_free_ char *path = NULL;
        const char *rel = kdp_backend_param(s->ctx, "kmsg");
        int r;

        if (!s->cfg.vendor_on[GPU_NVIDIA] || s->cfg.xid_off || !*rel)
                return;
        r = rel[0] == '/' ? ((path = strdup(rel)) ? 0 : -ENOMEM) : kdp_backend_path(s->ctx, KDP_PATH_DEV, rel, &path);
        if (r >= 0)
                r = gpu_kmsg_open(path, &s->kmsg);
        if (r >= 0)
                r = kdp_backend_watch_fd(s->ctx, gpu_kmsg_fd(s->kmsg), on_kmsg);
        if (r < 0) {
                kdp_backend_log_warning(s->ctx, "NVIDIA Xid health is off: cannot read the kernel log",
                                        KDP_F_STR("path", path ? path : rel), KDP_F_STR("err", strerror(-r)));
                s->kmsg = gpu_kmsg_free(s->kmsg);
                return;
        }
        /* what the log already holds is read by the first scan, once the GPUs it names are known */
}

/*
 * At the first NVIDIA GPU: NVML when the node has it (MIG devices, NVLink in preferred
 * allocation and, unless every Xid is ignored, Xids from its events), else Xids from the kernel
 * log; says once which serves what. A MIG strategy without NVML is logged once as an error and
 * works as none.
 */
static void open_nvidia_sources(gpu_state *s) {
        bool xid = !s->cfg.xid_off, mig = s->cfg.mig_strategy != GPU_MIG_NONE, nvml_xid = false;
        const char *why = NULL;

        if (!s->cfg.vendor_on[GPU_NVIDIA])
                return;
        if (load_nvml(s, &why) && xid)
                nvml_xid = start_nvml_events(s);
        if (mig && !s->nvml)
                kdp_backend_log_error(s->ctx, -ENOPKG, "MIG strategy needs NVML: GPUs in MIG mode are served whole, as with none",
                                      KDP_F_STR("strategy", gpu_mig_strategy_names[s->cfg.mig_strategy]),
                                      KDP_F_STR("reason", why ? why : "?"));
        else if (mig)
                kdp_backend_log_info(s->ctx, "MIG devices from NVML",
                                     KDP_F_STR("strategy", gpu_mig_strategy_names[s->cfg.mig_strategy]));
        if (xid && !nvml_xid)
                open_kmsg(s);
        if (nvml_xid)
                kdp_backend_log_info(s->ctx, "NVIDIA sources chosen", KDP_F_STR("xid", "nvml"), KDP_F_STR("nvlink", "nvml"),
                                     KDP_F_STR("discovery", "sysfs+procfs"),
                                     KDP_F_INT("nvmlGpus", gpu_nvml_events_n_gpus(s->nvml_events)));
        else
                kdp_backend_log_info(s->ctx, "NVIDIA sources chosen", KDP_F_STR("xid", s->kmsg ? "kmsg" : "none"),
                                     KDP_F_STR("nvlink", s->nvml ? "nvml" : "none"),
                                     KDP_F_STR("discovery", "sysfs+procfs"));
}

/* ---- ops ---- */

static void gpu_fini(void *state) {
        gpu_state *s = state;

        if (!s)
                return;
        s->kmsg = gpu_kmsg_free(s->kmsg);
        s->nvml_events = gpu_nvml_events_free(s->nvml_events);
        s->nvml = gpu_nvml_free(s->nvml);
        kdp_pci_list_cache_done(&s->pci);
        gpu_config_done(&s->cfg);
        free(s->gpus);
        free(s->dev_root);
        free(s);
}

static int gpu_init(kdp_backend_ctx *ctx, void **ret_state) {
        gpu_state *s = calloc(1, sizeof(*s));
        int r;

        if (!s)
                return -ENOMEM;
        s->ctx = ctx;
        r = kdp_backend_path(ctx, KDP_PATH_DEV, "", &s->dev_root);
        for (size_t n = r >= 0 ? strlen(s->dev_root) : 0; n > 1 && s->dev_root[n - 1] == '/'; n--)
                s->dev_root[n - 1] = '\0';
        if (r >= 0)
                r = gpu_config_parse(ctx, &s->cfg);
        if (r < 0) {
                gpu_fini(s);
                return r;
        }
        *ret_state = s;
        return 0;
}

/* ---- discovery ---- */

static void reason_add(gpu *g, const char *text) {
        size_t n = strlen(g->reason);

        snprintf(g->reason + n, sizeof(g->reason) - n, "%s%s", n ? "; " : "", text);
}

static gpu *gpu_add(gpu_state *s, const kdp_pci_device *p, gpu_vendor v) {
        gpu *n = realloc(s->gpus, (s->n_gpus + 1) * sizeof(*n));
        gpu *g;

        if (!n)
                return NULL;
        s->gpus = n;
        g = &s->gpus[s->n_gpus++];
        *g = (gpu){ .vendor = v, .numa_node = -1 };
        snprintf(g->bdf, sizeof(g->bdf), "%s", p->address);
        snprintf(g->resource, sizeof(g->resource), "%s", gpu_config_resource(&s->cfg, v, p));
        snprintf(g->driver, sizeof(g->driver), "%s", p->driver);
        if (v != GPU_NVIDIA)
                snprintf(g->id, sizeof(g->id), "%s", p->address);
        return g;
}

static void node_add(gpu *g, const char *rel) {
        if (g->n_nodes < GPU_NODES_MAX)
                snprintf(g->nodes[g->n_nodes++], sizeof(g->nodes[0]), "%s", rel);
}

/* A DRM minor's node relative to the dev root; NULL for controlD*, connectors, nodes outside it. */
static const char *drm_rel(const gpu_state *s, const char *name, const char *node) {
        size_t root_len = strlen(s->dev_root);

        if ((strncmp(name, "card", 4) != 0 && strncmp(name, "renderD", 7) != 0) ||
            strspn(name + (name[0] == 'c' ? 4 : 7), "0123456789") != strlen(name + (name[0] == 'c' ? 4 : 7)) ||
            strncmp(node, s->dev_root, root_len) != 0 || node[root_len] != '/')
                return NULL;
        return node + root_len + 1;
}

/* card* and renderD* of the PCI device's drm/ directory (never computed from each other). */
static void read_drm_nodes(gpu_state *s, gpu *g) {
        _cleanup_free_ kdp_pci_child *children = NULL;
        size_t n = 0;

        if (kdp_pci_children(s->ctx, g->bdf, "drm", &children, &n) < 0)
                return;
        g->n_nodes = 0;
        for (size_t i = 0; i < n; i++) {
                const char *rel = drm_rel(s, children[i].name, children[i].devnode);

                if (rel)
                        node_add(g, rel);
        }
}

static bool has_node(const gpu *g, const char *prefix) {
        for (size_t i = 0; i < g->n_nodes; i++)
                if (strncmp(g->nodes[i], prefix, strlen(prefix)) == 0)
                        return true;
        return false;
}

static void check_node(gpu_state *s, gpu *g, const char *rel) {
        _cleanup_free_ char *why = NULL;

        if (kdp_health_check_dev_node(s->ctx, rel, &why) == KDP_UNHEALTHY && why)
                reason_add(g, why);
}

/* What keeps procfs from naming the GPU: `r` and `bad` from nvidia_read_information(). */
static void nvidia_problem(int r, const char *bad, char *why, size_t size) {
        if (r == -ENOENT)
                snprintf(why, size, "not listed in /proc/driver/nvidia/gpus");
        else if (r == -EBADMSG)
                snprintf(why, size, "its /proc/driver/nvidia information is malformed: %s", bad ? bad : "unparsable");
        else if (r < 0)
                snprintf(why, size, "its /proc/driver/nvidia information is unreadable: %s", strerror(-r));
        else
                snprintf(why, size, "its /proc/driver/nvidia information has no GPU UUID yet");
}

/*
 * NVIDIA: UUID and minor from procfs. Returns false when the GPU cannot be served (no ID yet,
 * excluded); `why` then says why.
 */
static bool refresh_nvidia(gpu_state *s, gpu *g, bool is_new, char *why, size_t why_size) {
        const char *bad = NULL;
        nvidia_info info;
        char rel[32];
        int r = nvidia_read_information(s->ctx, g->bdf, &info, &bad);

        if (r >= 0 && info.excluded) {         /* whether or not the driver cached its UUID */
                snprintf(why, why_size, "excluded by the driver (NVreg_ExcludedGpus)");
                if (!is_new)
                        reason_add(g, why);
                return !is_new;
        }
        if (r < 0 || !info.uuid[0]) {
                nvidia_problem(r, bad, why, why_size);
                if (is_new || !g->id[0])
                        return false;
                reason_add(g, why);
                return true;
        }
        snprintf(g->id, sizeof(g->id), "%s", info.uuid);
        g->nv_minor = info.minor;
        snprintf(rel, sizeof(rel), "nvidia%u", info.minor);    /* the minor may change after a rescan */
        g->n_nodes = 0;
        node_add(g, rel);
        check_node(s, g, rel);
        return true;
}

/* A MIG device's capability node (ci < 0: its GPU instance's) into p->nodes; what is wrong into p->why. */
static void mig_cap_node(gpu_state *s, const gpu *g, gpu_part *p, int ci) {
        _cleanup_free_ char *bad_node = NULL;
        const char *bad = NULL;
        char file[64], rel[NODE_MAX];
        unsigned minor;
        size_t n = strlen(p->why);
        int r = gpu_mig_read_access(s->ctx, g->nv_minor, p->gi, ci, &minor, &bad);

        if (ci < 0)
                snprintf(file, sizeof(file), "gpu%u/mig/gi%u/access", g->nv_minor, p->gi);
        else
                snprintf(file, sizeof(file), "gpu%u/mig/gi%u/ci%d/access", g->nv_minor, p->gi, ci);
        if (r < 0) {
                snprintf(p->why + n, sizeof(p->why) - n, "%sits capability file %s is %s%s%s", n ? "; " : "", file,
                         r == -ENOENT ? "missing" : r == -EBADMSG ? "malformed: " : "unreadable: ",
                         r == -EBADMSG ? (bad ? bad : "?") : "", r != -ENOENT && r != -EBADMSG ? strerror(-r) : "");
                return;
        }
        snprintf(rel, sizeof(rel), "nvidia-caps/nvidia-cap%u", minor);
        snprintf(p->nodes[p->n_nodes++], NODE_MAX, "%s", rel);
        if (kdp_health_check_dev_node(s->ctx, rel, &bad_node) == KDP_UNHEALTHY && bad_node)
                snprintf(p->why + n, sizeof(p->why) - n, "%s%s", n ? "; " : "", bad_node);
}

/* Logs the MIG devices a GPU is served as, when that starts or they change. */
static void log_mig_layout(gpu_state *s, const gpu *g, const gpu_mig_layout *l) {
        char profiles[GPU_MIG_MAX * (GPU_MIG_PROFILE_MAX + 1)] = "";
        bool same = g->n_parts == l->n;

        for (size_t i = 0; i < l->n; i++) {
                same = same && g->parts[i].mig && strcmp(g->parts[i].id, l->devices[i].uuid) == 0;
                snprintf(profiles + strlen(profiles), sizeof(profiles) - strlen(profiles), "%s%s", i ? "," : "",
                         l->devices[i].profile);
        }
        if (!same)
                kdp_backend_log_info(s->ctx, "GPU in MIG mode: its MIG devices are served, not the GPU",
                                     KDP_F_STR("pci", g->bdf), KDP_F_STR("uuid", g->id), KDP_F_INT("migDevices", l->n),
                                     KDP_F_STR("profiles", profiles));
}

/*
 * mig_strategy single or mixed, with NVML: a GPU in MIG mode is served as its MIG devices (parts),
 * never whole. Returns false when the GPU is not served at all (`why` says why): MIG mode without
 * MIG devices, or NVML cannot tell a new GPU's MIG mode. A GPU seen before whose MIG devices NVML
 * cannot list now keeps what it was served as (its MIG devices, or itself), Unhealthy with the reason.
 */
static bool refresh_mig(gpu_state *s, gpu *g, bool is_new, char *why, size_t why_size) {
        gpu_part parts[GPU_PARTS_MAX];
        const char *call = "?", *bad = NULL;
        nvmlReturn_t code = NVML_ERROR_UNKNOWN;
        gpu_mig_layout l;
        int r = gpu_mig_query(s->nvml, g->bdf, &l, &call, &code, &bad);

        if (r < 0) {
                snprintf(why, why_size, "NVML cannot list its MIG devices: %s: %s", call,
                         bad ?: gpu_nvml_strerror(s->nvml, code));
                if (is_new)
                        return false;
                reason_add(g, why);
                return true;
        }
        if (!l.enabled) {
                if (g->n_parts > 0)
                        kdp_backend_log_info(s->ctx, "GPU left MIG mode: served whole", KDP_F_STR("pci", g->bdf),
                                             KDP_F_STR("uuid", g->id));
                g->n_parts = 0;
                return true;
        }
        if (l.n == 0) {
                snprintf(why, why_size, "in MIG mode without MIG devices (no GPU and compute instances)");
                return false;
        }
        log_mig_layout(s, g, &l);
        for (size_t i = 0; i < l.n; i++) {
                gpu_part *p = &parts[i];

                *p = (gpu_part){ .mig = true, .gi = l.devices[i].gi, .ci = l.devices[i].ci };
                for (size_t k = 0; k < g->n_parts; k++)
                        if (g->parts[k].mig && strcmp(g->parts[k].id, l.devices[i].uuid) == 0) {
                                p->xid = g->parts[k].xid;       /* the same MIG device: its Xid stays */
                                p->xid_at_ms = g->parts[k].xid_at_ms;
                        }
                snprintf(p->id, sizeof(p->id), "%s", l.devices[i].uuid);
                snprintf(p->profile, sizeof(p->profile), "%s", l.devices[i].profile);
                if (s->cfg.mig_strategy == GPU_MIG_MIXED &&
                    gpu_mig_resource(kdp_backend_param(s->ctx, "nvidia_resource"), p->profile, p->resource,
                                     sizeof(p->resource)) < 0)
                        snprintf(p->why, sizeof(p->why), "its resource name is too long");
                snprintf(p->nodes[p->n_nodes++], NODE_MAX, "nvidia%u", g->nv_minor);
                mig_cap_node(s, g, p, -1);
                mig_cap_node(s, g, p, (int) p->ci);
        }
        memcpy(g->parts, parts, sizeof(parts));
        g->n_parts = l.n;
        return true;
}

/* What a scan reads once for every AMD GPU: the KFD topology and the DRM minors (for the XCPs'). */
typedef struct amd_view {
        amd_kfd kfd;
        kdp_subsystem_device *drm;
        size_t n_drm;
} amd_view;

/* The render minor of a GPU's own DRM device; UINT_MAX without one. */
static unsigned own_render_minor(const gpu *g) {
        for (size_t i = 0; i < g->n_nodes; i++)
                if (strncmp(g->nodes[i], "dri/renderD", 11) == 0)
                        return (unsigned) strtoul(g->nodes[i] + 11, NULL, 10);
        return UINT_MAX;
}

/*
 * The card and render node of the XCP platform device whose render minor is `minor` (its drm/
 * directory, never a computed minor) into nodes; their number, 0 when no XCP has that minor.
 */
static size_t xcp_nodes(const gpu_state *s, const amd_view *amd, unsigned minor, char (*nodes)[NODE_MAX], size_t max) {
        char name[32];
        size_t dir_len = 0, n = 0;
        const char *dir = NULL;

        snprintf(name, sizeof(name), "renderD%u", minor);
        for (size_t i = 0; i < amd->n_drm && !dir; i++) {
                const char *drm = strstr(amd->drm[i].devpath, "/drm/");

                if (strcmp(amd->drm[i].name, name) == 0 && strncmp(amd->drm[i].devpath, "platform/amdgpu_xcp_", 20) == 0 &&
                    drm) {
                        dir = amd->drm[i].devpath;
                        dir_len = (size_t) (drm - dir) + 5;
                }
        }
        for (size_t i = 0; dir && i < amd->n_drm && n < max; i++) {
                const char *rel = drm_rel(s, amd->drm[i].name, amd->drm[i].devnode);

                if (rel && strncmp(amd->drm[i].devpath, dir, dir_len) == 0 && !strchr(amd->drm[i].devpath + dir_len, '/'))
                        snprintf(nodes[n++], NODE_MAX, "%s", rel);
        }
        return n;
}

/* mixed: the resource of the GPU's partition mode ("amd.com/cpx_nps4"); unchanged while it cannot be read. */
static void refresh_amd_resource(gpu_state *s, gpu *g) {
        _cleanup_free_ char *compute = NULL, *memory = NULL;
        char mode[32], res[GPU_RESOURCE_MAX];

        if (kdp_pci_read_attr(s->ctx, g->bdf, "current_compute_partition", &compute) < 0 ||
            kdp_pci_read_attr(s->ctx, g->bdf, "current_memory_partition", &memory) < 0 ||
            amd_partition_mode(compute, memory, mode, sizeof(mode)) < 0 ||
            gpu_config_mixed_resource(&s->cfg, mode, res, sizeof(res)) < 0 || strcmp(res, g->resource) == 0)
                return;
        kdp_backend_log_info(s->ctx, "GPU's partition mode gives it another resource", KDP_F_STR("pci", g->bdf),
                             KDP_F_STR("from", g->resource), KDP_F_STR("to", res));
        snprintf(g->resource, sizeof(g->resource), "%s", res);
}

/*
 * Partitions as devices: one per KFD node of the GPU, with its own card and render node. A GPU
 * that KFD lists no more keeps the partitions it had (Unhealthy: not in the KFD topology); one
 * never listed is one device with its own nodes.
 */
static void refresh_amd_parts(gpu_state *s, gpu *g, const amd_view *amd, const amd_kfd_node **kn, size_t n_kn,
                              unsigned own) {
        if (s->cfg.amd_partitions == GPU_AMD_MIXED)
                refresh_amd_resource(s, g);
        if (n_kn == 0 && g->n_parts > 0)
                return;
        g->n_parts = n_kn ? n_kn : 1;
        for (size_t i = 0; i < g->n_parts; i++) {
                gpu_part *p = &g->parts[i];

                if (g->n_parts == 1)
                        snprintf(p->id, sizeof(p->id), "%s", g->bdf);
                else
                        snprintf(p->id, sizeof(p->id), "%s-p%u", g->bdf, kn[i]->partition);
                p->n_nodes = 0;
                if (n_kn == 0 || kn[i]->render_minor == own)
                        for (size_t k = 0; k < g->n_nodes && p->n_nodes < PART_NODES_MAX; k++)
                                snprintf(p->nodes[p->n_nodes++], NODE_MAX, "%s", g->nodes[k]);
                else
                        p->n_nodes = xcp_nodes(s, amd, kn[i]->render_minor, p->nodes, PART_NODES_MAX);
        }
}

static void refresh_amd(gpu_state *s, gpu *g, const amd_view *amd) {
        const amd_kfd_node *kn[GPU_PARTS_MAX];
        size_t n_kn;
        unsigned own;

        read_drm_nodes(s, g);
        own = own_render_minor(g);
        if (own == UINT_MAX)
                reason_add(g, "no DRM render node");
        if (!amd->kfd.present)
                reason_add(g, "no KFD topology (amdgpu without compute support)");
        else if (!amd_kfd_has(&amd->kfd, g->bdf))
                reason_add(g, "not in the KFD topology");
        check_node(s, g, "kfd");
        n_kn = amd_kfd_partitions(&amd->kfd, g->bdf, kn, GPU_PARTS_MAX);
        if (s->cfg.amd_partitions != GPU_AMD_WHOLE) {
                refresh_amd_parts(s, g, amd, kn, n_kn, own);
                return;
        }
        /* the whole GPU: the nodes of every partition KFD lists (XCP 0 is the PCI device's own) */
        for (size_t i = 0; i < n_kn; i++) {
                char nodes[PART_NODES_MAX][NODE_MAX], why[64];
                size_t n;

                if (kn[i]->render_minor == own)
                        continue;
                n = xcp_nodes(s, amd, kn[i]->render_minor, nodes, PART_NODES_MAX);
                if (n == 0 && own != UINT_MAX) {
                        snprintf(why, sizeof(why), "no DRM render node for partition %u", kn[i]->partition);
                        reason_add(g, why);
                }
                for (size_t k = 0; k < n; k++)
                        node_add(g, nodes[k]);
        }
}

/* Its card and render node, as its drm/ directory names them; each must exist under the dev root. */
static void refresh_intel(gpu_state *s, gpu *g) {
        read_drm_nodes(s, g);
        if (!has_node(g, "dri/card") || !has_node(g, "dri/renderD"))
                reason_add(g, "no DRM card and render nodes");
        for (size_t i = 0; i < g->n_nodes; i++)
                check_node(s, g, g->nodes[i]);
}

static void refresh_pci_health(gpu_state *s, gpu *g, const kdp_pci_device *p) {
        _cleanup_free_ char *why = NULL;
        unsigned checks = KDP_HEALTH_PCI_PRESENT | KDP_HEALTH_PCI_ENABLED | KDP_HEALTH_PCI_AER_FATAL |
                          KDP_HEALTH_PCI_AER_NONFATAL;
        bool bound = strcmp(p->driver, g->driver) == 0;

        if (bound && (!g->bound || g->rebound)) {
                (void) kdp_health_pci_rebase(s->ctx, g->bdf, &g->pci);  /* (re)bound: counters start anew */
                /*
                 * The rebind ended the Xid before it. When it came as an event, gpu_device_event
                 * ended that Xid then, and one read since is the new binding's: it stays. A rebind
                 * only this scan sees came after the last scan that found the GPU unbound: an Xid
                 * read before that scan is over, one read after it is the new binding's.
                 */
                if (!g->rebound && g->xid_scan < g->unbound_scan) {
                        g->xid = 0;
                        clear_mig_xids(g);
                }
        }
        g->bound = bound;
        g->rebound = false;
        if (!bound) {
                char text[96];

                g->unbound_scan = s->n_scans;
                snprintf(text, sizeof(text), "%s%s", p->driver[0] ? "bound to " : "driver unbound", p->driver);
                reason_add(g, text);
        }
        if (kdp_health_pci_check(s->ctx, g->bdf, NULL, checks, &g->pci, &why) == KDP_UNHEALTHY && why)
                reason_add(g, why);
        g->numa_node = kdp_pci_numa_node(p, g->numa_node);
}

/* The Xids of a GPU's MIG devices: over after xid_recovery_s (their text is added when emitted). */
static void refresh_mig_xids(gpu_state *s, gpu *g, uint64_t now, uint64_t *next_expiry) {
        for (size_t i = 0; i < g->n_parts; i++) {
                gpu_part *p = &g->parts[i];
                uint64_t due = p->xid_at_ms + s->cfg.xid_recovery_ms;

                if (!p->xid || !s->cfg.xid_recovery_ms)
                        continue;
                if (now >= due) {
                        kdp_backend_log_info(s->ctx, "MIG device recovered: its Xid is older than xid_recovery_s",
                                             KDP_F_STR("pci", g->bdf), KDP_F_STR("uuid", p->id), KDP_F_INT("xid", p->xid));
                        p->xid = 0;
                } else if (!*next_expiry || due < *next_expiry)
                        *next_expiry = due;
        }
}

static void refresh_xid(gpu_state *s, gpu *g, uint64_t now, uint64_t *next_expiry) {
        char text[64];
        uint64_t due;

        refresh_mig_xids(s, g, now, next_expiry);
        if (!g->xid)
                return;
        due = g->xid_at_ms + s->cfg.xid_recovery_ms;
        if (s->cfg.xid_recovery_ms && now >= due) {
                kdp_backend_log_info(s->ctx, "GPU recovered: its Xid is older than xid_recovery_s",
                                     KDP_F_STR("pci", g->bdf), KDP_F_INT("xid", g->xid));
                g->xid = 0;
                return;
        }
        snprintf(text, sizeof(text), "Xid %u (%s)", g->xid, gpu_xid_bucket(g->xid));
        reason_add(g, text);
        if (s->cfg.xid_recovery_ms && (!*next_expiry || due < *next_expiry))
                *next_expiry = due;
}

/* The PF's sriov_numvfs of a VF, -1 when the PF is not listed. */
static int pf_numvfs(const kdp_pci_list *l, const char *physfn) {
        const kdp_pci_device *pf = physfn[0] ? kdp_pci_list_find(l, physfn) : NULL;

        return pf ? pf->sriov_numvfs : -1;
}

/* Why a GPU not seen before is not ours, into `why`; false when it is ours. */
static bool gpu_skipped(const gpu_state *s, const kdp_pci_device *p, gpu_vendor v, char *why, size_t size) {
        const char *filtered = gpu_config_filtered(&s->cfg, p);

        if (filtered)
                snprintf(why, size, "filtered out by the config (%s)", filtered);
        else if (!p->driver[0])
                snprintf(why, size, "driver unbound");
        else if (!gpu_driver_expected(v, p->driver))
                snprintf(why, size, "bound to %s, not %s", p->driver,
                         v == GPU_NVIDIA ? "nvidia" : v == GPU_AMD ? "amdgpu" : "i915 or xe");
        else if (v == GPU_INTEL && p->sriov_numvfs > 0)
                snprintf(why, size, "SR-IOV PF with %d VFs enabled (its VFs are served instead)", p->sriov_numvfs);
        else
                return false;
        return true;
}

/*
 * One PCI function: a GPU of ours (new or known) is refreshed. A GPU that is not ours is declared
 * not served with the reason (kdpd logs it when that starts or changes); other functions are no GPUs.
 */
static void scan_function(gpu_state *s, kdp_device_tree *tree, const kdp_pci_list *l, const kdp_pci_device *p,
                          const amd_view *amd, bool *present) {
        int v = gpu_config_vendor(&s->cfg, p);
        char why[REASON_MAX];
        const char *off;
        gpu *g;
        bool is_new;

        if (v < 0 || p->is_bridge) {
                if ((off = gpu_config_vendor_off(&s->cfg, p))) {
                        snprintf(why, sizeof(why), "its vendor (%s) is not in gpu.vendors", off);
                        (void) kdp_device_tree_not_served(tree, p->address, why);
                }
                return;
        }
        g = find_gpu(s, p->address);
        is_new = !g;
        if (g && v == GPU_INTEL && p->sriov_numvfs > 0 && !g->recut) {
                /* its VFs are served in its place: a PF seen before they were enabled leaves */
                kdp_backend_log_info(s->ctx, "GPU left the list: SR-IOV VFs are served in its place",
                                     KDP_F_STR("pci", g->bdf), KDP_F_INT("numVFs", p->sriov_numvfs));
                g->recut = true;
        }
        if ((is_new || g->recut) && gpu_skipped(s, p, v, why, sizeof(why))) {
                (void) kdp_device_tree_not_served(tree, p->address, why);
                return;
        }
        if (v == GPU_NVIDIA && !s->kmsg_opened) {
                s->kmsg_opened = true;          /* NVML, when MIG devices need it, before the first GPU is read */
                open_nvidia_sources(s);
        }
        if (is_new && !(g = gpu_add(s, p, v)))
                return;
        present[g - s->gpus] = true;
        snprintf(g->physfn, sizeof(g->physfn), "%s", p->physfn);
        if (pf_numvfs(l, p->physfn) > 0)
                g->pf_numvfs = pf_numvfs(l, p->physfn);        /* the cut it belongs to (0: being torn down) */
        g->reason[0] = '\0';
        refresh_pci_health(s, g, p);
        if (v == GPU_NVIDIA && !refresh_nvidia(s, g, is_new, why, sizeof(why))) {
                if (is_new) {
                        s->n_gpus--;    /* no UUID yet: try again next scan */
                        (void) kdp_device_tree_not_served(tree, p->address, why);
                }
                return;
        }
        if (v == GPU_NVIDIA && s->nvml && s->cfg.mig_strategy != GPU_MIG_NONE && g->bound &&
            !refresh_mig(s, g, is_new, why, sizeof(why))) {
                if (is_new)
                        s->n_gpus--;
                else {
                        /* re-cut, not lost: a kdpd started now would not list it either */
                        kdp_backend_log_info(s->ctx, "GPU left the list: in MIG mode without MIG devices it serves none",
                                             KDP_F_STR("pci", g->bdf), KDP_F_STR("reason", why));
                        g->recut = true;
                }
                (void) kdp_device_tree_not_served(tree, p->address, why);
                return;
        }
        if (v == GPU_AMD)
                refresh_amd(s, g, amd);
        else if (v == GPU_INTEL)
                refresh_intel(s, g);
}

/*
 * A PCI function libkdp could not read (kdp_pci_list_skipped_get()): a GPU of ours stays in the
 * table, Unhealthy with the reason (it is still there, not removed); one not seen before that may
 * be a GPU is declared not served; other vendors' functions are no GPUs.
 */
static void scan_skipped(gpu_state *s, kdp_device_tree *tree, const kdp_pci_skipped *k, bool *present) {
        gpu *g = find_gpu(s, k->address);

        if (!g) {
                if (gpu_config_may_be_gpu(k->vendor_id))
                        (void) kdp_device_tree_not_served(tree, k->address, k->reason);
                return;
        }
        present[g - s->gpus] = true;
        g->reason[0] = '\0';
        g->bound = false;               /* read again: its counters start anew */
        reason_add(g, k->reason);
}

/* ---- devices ---- */

#define NODE_SET_MAX (GPU_NODES_MAX + 5)

/* A GPU's nodes as kdp_dev_node, with the strings they point at. */
typedef struct node_set {
        char host[NODE_SET_MAX][256];
        char container[NODE_SET_MAX][64];
        kdp_dev_node nodes[NODE_SET_MAX + 1];   /* { 0 }-terminated */
        size_t n;
} node_set;

static void node_set_add(node_set *ns, const gpu_state *s, const char *rel) {
        if (ns->n >= NODE_SET_MAX)
                return;
        snprintf(ns->host[ns->n], sizeof(ns->host[0]), "%s/%s", s->dev_root, rel);
        snprintf(ns->container[ns->n], sizeof(ns->container[0]), "/dev/%s", rel);
        ns->nodes[ns->n] = (kdp_dev_node){ .host_path = ns->host[ns->n], .container_path = ns->container[ns->n],
                                           .permissions = "rw" };
        ns->nodes[++ns->n] = (kdp_dev_node){ 0 };
}

/* A device's own nodes, then the node-wide ones it needs (NVIDIA's control nodes that exist, AMD's /dev/kfd). */
static void node_set_fill(node_set *ns, const gpu_state *s, const gpu *g, const char (*nodes)[NODE_MAX], size_t n) {
        *ns = (node_set){ 0 };
        for (size_t i = 0; i < n; i++)
                node_set_add(ns, s, nodes[i]);
        if (g->vendor == GPU_NVIDIA)
                for (size_t i = 0; nvidia_shared_nodes[i]; i++) {
                        if (s->nvidia_shared_present[i])
                                node_set_add(ns, s, nvidia_shared_nodes[i]);
                }
        else if (g->vendor == GPU_AMD)
                node_set_add(ns, s, "kfd");
}

/* The device of a request's ID: a GPU, or one of its partitions. */
typedef struct gpu_unit {
        const gpu *g;
        const gpu_part *part;                   /* NULL: the whole GPU */
} gpu_unit;

static const char *unit_id(const gpu_unit *u) {
        return u->part ? u->part->id : u->g->id;
}

/* The resource of a device: a MIG device's under mig_strategy mixed, else its GPU's. */
static const char *unit_resource(const gpu_unit *u) {
        return u->part && u->part->resource[0] ? u->part->resource : u->g->resource;
}

static void unit_node_set(node_set *ns, const gpu_state *s, const gpu_unit *u) {
        if (u->part)
                node_set_fill(ns, s, u->g, (const char (*)[NODE_MAX]) u->part->nodes, u->part->n_nodes);
        else
                node_set_fill(ns, s, u->g, (const char (*)[NODE_MAX]) u->g->nodes, u->g->n_nodes);
}

static void refresh_shared_nodes(gpu_state *s) {
        for (size_t i = 0; nvidia_shared_nodes[i]; i++) {
                _cleanup_free_ char *why = NULL;

                s->nvidia_shared_present[i] =
                        kdp_health_check_dev_node(s->ctx, nvidia_shared_nodes[i], &why) == KDP_HEALTHY;
        }
}

static bool part_has_render(const gpu_part *p) {
        for (size_t i = 0; i < p->n_nodes; i++)
                if (strncmp(p->nodes[i], "dri/renderD", 11) == 0)
                        return true;
        return false;
}

/* The devices of `resource` this scan serves (GPUs, partitions, MIG devices), before replicas. */
static size_t count_units(const gpu_state *s, const char *resource) {
        size_t n = 0;

        for (size_t i = 0; i < s->n_gpus; i++) {
                gpu_unit u = { .g = &s->gpus[i] };

                if (u.g->recut)
                        continue;
                if (u.g->n_parts == 0)
                        n += strcmp(unit_resource(&u), resource) == 0;
                for (size_t k = 0; k < u.g->n_parts; k++) {
                        u.part = &u.g->parts[k];
                        n += strcmp(unit_resource(&u), resource) == 0;
                }
        }
        return n;
}

/* One device (with its replicas) of a GPU or of a partition. */
static int emit_unit(const gpu_state *s, kdp_device_tree *tree, const gpu_unit *u) {
        char cdi[GPU_RESOURCE_MAX + GPU_MIG_UUID_MAX + 2], id[GPU_MIG_UUID_MAX + 16], reason[REASON_MAX + 32];
        const char *cdis[2] = { cdi, NULL };
        const gpu *g = u->g;
        kdp_device_info info = {
                .id = unit_id(u),
                .pci_address = g->bdf,
        };
        const char *resource = unit_resource(u);
        unsigned n = gpu_config_replicas(&s->cfg, resource);
        node_set ns;
        int r = 0;

        snprintf(reason, sizeof(reason), "%s", g->reason);
        if (u->part && u->part->why[0])
                snprintf(reason + strlen(reason), sizeof(reason) - strlen(reason), "%s%s", reason[0] ? "; " : "",
                         u->part->why);
        if (u->part && u->part->xid)
                snprintf(reason + strlen(reason), sizeof(reason) - strlen(reason), "%sXid %u (%s)", reason[0] ? "; " : "",
                         u->part->xid, gpu_xid_bucket(u->part->xid));
        if (u->part && !u->part->mig && !part_has_render(u->part) && !strstr(reason, "no DRM render node"))
                snprintf(reason + strlen(reason), sizeof(reason) - strlen(reason), "%sno DRM render node",
                         reason[0] ? "; " : "");
        info.health = reason[0] ? KDP_UNHEALTHY : KDP_HEALTHY;
        info.health_reason = reason[0] ? reason : NULL;
        unit_node_set(&ns, s, u);
        info.dev_nodes = ns.nodes;
        if (g->numa_node >= 0) {
                info.numa_nodes[0] = g->numa_node;
                info.n_numa_nodes = 1;
        }
        if (s->cfg.cdi) {
                snprintf(cdi, sizeof(cdi), "%s=%s", resource, unit_id(u));
                info.cdi_devices = cdis;
        }
        if (n == 1)
                return kdp_device_tree_add(tree, resource, &info);
        if (count_units(s, resource) > GPU_REPLICA_DEVICES_MAX / n) {
                snprintf(reason, sizeof(reason), "%u replicas of each of the %zu devices of %s would make more than %u",
                         n, count_units(s, resource), resource, GPU_REPLICA_DEVICES_MAX);
                return kdp_device_tree_not_served(tree, g->bdf, reason);
        }
        info.id = id;
        for (unsigned k = 0; k < n && r >= 0; k++) {
                snprintf(id, sizeof(id), "%s" GPU_REPLICA_SEP "%u", unit_id(u), k);
                r = kdp_device_tree_add(tree, resource, &info);
        }
        return r;
}

static int emit_gpu(const gpu_state *s, kdp_device_tree *tree, const gpu *g) {
        gpu_unit u = { .g = g };
        int r = 0;

        if (g->n_parts == 0)
                return emit_unit(s, tree, &u);
        for (size_t i = 0; i < g->n_parts && r >= 0; i++) {
                u.part = &g->parts[i];
                r = emit_unit(s, tree, &u);
        }
        return r;
}

static bool has_nvidia(const gpu_state *s) {
        for (size_t i = 0; i < s->n_gpus; i++)
                if (s->gpus[i].vendor == GPU_NVIDIA)
                        return true;
        return false;
}

/* The KFD topology; failing to read it is logged when it starts or changes and when it ends. */
static void read_kfd(gpu_state *s, amd_kfd *kfd) {
        int r = amd_kfd_read(s->ctx, kfd);

        if (r < 0 && r != s->kfd_error)
                kdp_backend_log_warning(s->ctx, "Cannot read the KFD topology", KDP_F_STR("err", strerror(-r)));
        else if (r >= 0 && s->kfd_error)
                kdp_backend_log_info(s->ctx, "Read the KFD topology again");
        s->kfd_error = r < 0 ? r : 0;
}

/* Drops the GPUs SR-IOV re-cut: they are not in this scan's tree, so they leave the list. */
static void forget_recut(gpu_state *s) {
        size_t k = 0;

        for (size_t i = 0; i < s->n_gpus; i++)
                if (!s->gpus[i].recut)
                        s->gpus[k++] = s->gpus[i];
        s->n_gpus = k;
}

/* NVIDIA's NVSwitches: bridges of class 0x0680 (docs/hardware-gpu.md §1.2), whether a driver holds them or not. */
static size_t count_nvswitches(const kdp_pci_list *l) {
        size_t n = 0;

        for (size_t i = 0; i < kdp_pci_list_size(l); i++) {
                const kdp_pci_device *p = kdp_pci_list_get(l, i);

                n += p->vendor_id == 0x10de && p->class_code >> 8 == 0x0680;
        }
        return n;
}

/* "0000:1a:00.0=12,0000:3a:00.0=2": each peer once, with its links, in link order. */
static void nvlink_peers_text(const gpu *g, char *out, size_t size) {
        size_t len = 0;

        out[0] = '\0';
        for (size_t i = 0; i < g->n_nvlink; i++) {
                size_t count = 0;
                bool seen = false;

                for (size_t j = 0; j < i && !seen; j++)
                        seen = strcmp(g->nvlink[j], g->nvlink[i]) == 0;
                for (size_t j = i; j < g->n_nvlink && !seen; j++)
                        count += strcmp(g->nvlink[j], g->nvlink[i]) == 0;
                if (!seen && len < size)
                        len += (size_t) snprintf(out + len, size - len, "%s%s=%zu", len ? "," : "", g->nvlink[i], count);
        }
}

/*
 * Every scan reads the active NVLinks of each healthy NVIDIA GPU anew (NVML sends no event when a
 * link trains or drops), and counts the NVSwitches; a change is logged, and the next
 * GetPreferredAllocation weighs what was read.
 */
static void refresh_nvlinks(gpu_state *s, const bool *present) {
        size_t n_switches = count_nvswitches(s->pci.list);

        if (n_switches != s->n_nvswitch)
                kdp_backend_log_info(s->ctx, "NVSwitches changed: NVLink weighs in preferred allocation only without them",
                                     KDP_F_INT("nvSwitches", n_switches));
        s->n_nvswitch = n_switches;
        for (size_t i = 0; i < s->n_gpus; i++) {
                gpu *g = &s->gpus[i];
                char old[GPU_NVLINKS_MAX][KDP_PCI_ADDRESS_MAX], peers[GPU_NVLINKS_MAX * (KDP_PCI_ADDRESS_MAX + 4)];
                size_t n_old = g->n_nvlink;

                if (g->vendor != GPU_NVIDIA || g->recut)
                        continue;
                memcpy(old, g->nvlink, sizeof(old));
                g->n_nvlink = 0;
                /* an Unhealthy GPU is not asked: one that fell off the bus can stall NVML */
                if (s->nvml && present[i] && g->bound && !g->reason[0] &&
                    gpu_nvlink_read(s->nvml, g->bdf, g->nvlink, GPU_NVLINKS_MAX, &g->n_nvlink) < 0)
                        g->n_nvlink = 0;
                if (g->n_nvlink == n_old && memcmp(old, g->nvlink, n_old * sizeof(old[0])) == 0)
                        continue;
                nvlink_peers_text(g, peers, sizeof(peers));
                kdp_backend_log_info(s->ctx, "NVLink links changed", KDP_F_STR("pci", g->bdf),
                                     KDP_F_INT("activeLinks", g->n_nvlink), KDP_F_STR("peers", peers));
        }
}

static int gpu_scan(void *state, kdp_device_tree *tree) {
        _cleanup_free_ bool *present = NULL;
        gpu_state *s = state;
        amd_view amd = { 0 };
        uint64_t now = now_ms(s), next_expiry = 0;
        kdp_pci_list *l;
        int r;

        s->n_scans++;
        r = kdp_pci_list_cache_refresh(s->ctx, &s->pci, PCI_RELIST_MS);
        if (r < 0)
                return r;
        l = s->pci.list;
        if (s->cfg.vendor_on[GPU_AMD])
                read_kfd(s, &amd.kfd);
        if (amd.kfd.n > 0 && kdp_subsystem_enumerate(s->ctx, "drm", &amd.drm, &amd.n_drm) < 0)
                amd.n_drm = 0;          /* no XCP minors: partitions other than 0 show without nodes */
        present = calloc(s->n_gpus + kdp_pci_list_size(l) + 1, sizeof(bool));
        if (!present) {
                amd_kfd_done(&amd.kfd);
                free(amd.drm);
                return -ENOMEM;
        }
        for (size_t i = 0; i < kdp_pci_list_size(l); i++)
                scan_function(s, tree, l, kdp_pci_list_get(l, i), &amd, present);
        for (size_t i = 0; i < kdp_pci_list_skipped_size(l); i++)
                scan_skipped(s, tree, kdp_pci_list_skipped_get(l, i), present);
        amd_kfd_done(&amd.kfd);
        free(amd.drm);

        if (has_nvidia(s)) {
                refresh_shared_nodes(s);        /* only NVIDIA GPUs' records carry them */
                if (!s->kmsg_opened) {
                        s->kmsg_opened = true;  /* no NVML nor kernel log to read on a node without NVIDIA GPUs */
                        open_nvidia_sources(s);
                }
        }
        if (s->kmsg && !s->kmsg_replayed) {
                /* Xids logged before kdpd started count while younger than xid_recovery_s */
                s->kmsg_replayed = true;
                (void) drain_kmsg(s);
        }
        for (size_t i = 0; i < s->n_gpus; i++) {
                gpu *g = &s->gpus[i];

                if (!present[i] && g->physfn[0] && !g->recut) {
                        int n = pf_numvfs(l, g->physfn);

                        /* gone with its PF's sriov_numvfs change: re-cut, not lost (its PF is listed;
                         * a VF gone with its PF is lost capacity, and stays as removed) */
                        if (n == 0 || (n > 0 && n != g->pf_numvfs)) {
                                kdp_backend_log_info(s->ctx, "GPU left the list: its PF's SR-IOV VFs changed",
                                                     KDP_F_STR("pci", g->bdf), KDP_F_STR("physfn", g->physfn),
                                                     KDP_F_INT("numVFs", n));
                                g->recut = true;
                        }
                }
                if (g->recut)
                        continue;
                if (!present[i]) {
                        g->reason[0] = '\0';
                        g->bound = false;
                        g->unbound_scan = s->n_scans;
                        reason_add(g, "removed from the PCI bus");
                }
                refresh_xid(s, g, now, &next_expiry);
                /* a refused resource name or device is noted by the tree, under the GPU's address; a GPU
                 * served as MIG devices of their own resources (mixed) declares none of its own */
                if (g->n_parts == 0 || !g->parts[0].resource[0])
                        (void) kdp_device_tree_add_resource(tree, g->resource);
                (void) emit_gpu(s, tree, g);
        }
        refresh_nvlinks(s, present);
        forget_recut(s);
        if (next_expiry)
                (void) kdp_backend_rescan_after(s->ctx, (uint32_t) (next_expiry - now));
        return 0;
}

/*
 * A reset shows as a PCI change or (re)bind event: the GPU's Xid is over. A bind or add also
 * starts its AER counters anew, even when the unbind before it fell between two scans.
 */
static void gpu_device_event(void *state, const kdp_device_event *ev) {
        gpu_state *s = state;
        bool bind;
        gpu *g;

        if (strcmp(ev->subsystem, "pci") != 0)
                return;
        if (strcmp(ev->action, "change") != 0)
                s->pci.dirty = true;    /* a function came, went, or changed driver */
        if (!ev->sysname || !(g = find_gpu(s, ev->sysname)))
                return;
        bind = strcmp(ev->action, "bind") == 0 || strcmp(ev->action, "add") == 0;
        if (bind)
                g->rebound = true;
        if (!bind && strcmp(ev->action, "change") != 0)
                return;
        clear_mig_xids(g);
        if (!g->xid)
                return;
        kdp_backend_log_info(s->ctx, "GPU recovered: reset or rebound after its Xid", KDP_F_STR("pci", g->bdf),
                             KDP_F_INT("xid", g->xid), KDP_F_STR("event", ev->action));
        g->xid = 0;
}

/* ---- Allocate and GetPreferredAllocation ---- */

static bool id_is(const char *candidate, const char *id, size_t n) {
        return strlen(candidate) == n && strncmp(candidate, id, n) == 0;
}

/* The device of `id` (a replica's: its base) in `resource`; false when none is ours. */
static bool unit_by_id(const gpu_state *s, const char *resource, const char *id, gpu_unit *ret) {
        size_t n = gpu_replica_base_len(id);

        for (size_t i = 0; i < s->n_gpus; i++) {
                const gpu *g = &s->gpus[i];

                if (g->n_parts == 0 && strcmp(g->resource, resource) == 0 && id_is(g->id, id, n)) {
                        *ret = (gpu_unit){ .g = g };
                        return true;
                }
                for (size_t k = 0; k < g->n_parts; k++) {
                        gpu_unit u = { .g = g, .part = &g->parts[k] };

                        if (strcmp(unit_resource(&u), resource) == 0 && id_is(g->parts[k].id, id, n)) {
                                *ret = u;
                                return true;
                        }
                }
        }
        return false;
}

/* The distinct devices of a request, in request order (replicas of one device count once). */
static int request_units(const gpu_state *s, const kdp_alloc_request *req, gpu_unit **ret, size_t *ret_n) {
        gpu_unit *list = calloc(req->n_device_ids + 1, sizeof(*list));
        size_t n = 0;

        if (!list)
                return -ENOMEM;
        for (size_t i = 0; i < req->n_device_ids; i++) {
                gpu_unit u;
                bool dup = false;

                if (!unit_by_id(s, req->resource, req->device_ids[i], &u)) {
                        free(list);
                        return -EOPNOTSUPP;     /* not ours any more: the device records answer */
                }
                for (size_t j = 0; j < n && !dup; j++)
                        dup = list[j].g == u.g && list[j].part == u.part;
                if (!dup)
                        list[n++] = u;
        }
        *ret = list;
        *ret_n = n;
        return 0;
}

/* "a,b,c" of the devices' IDs, or of their GPUs' PCI addresses (each once). */
static char *join_ids(const gpu_unit *list, size_t n, bool addresses) {
        size_t len = 1;
        char *out;

        for (size_t i = 0; i < n; i++)
                len += strlen(addresses ? list[i].g->bdf : unit_id(&list[i])) + 1;
        out = calloc(len, 1);
        if (!out)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                bool seen = false;

                for (size_t j = 0; j < i && addresses && !seen; j++)
                        seen = list[j].g == list[i].g;
                if (seen)
                        continue;
                if (*out)
                        strcat(out, ",");
                strcat(out, addresses ? list[i].g->bdf : unit_id(&list[i]));
        }
        return out;
}

static int add_unit_edits(const gpu_state *s, const gpu_unit *u, kdp_alloc_response *resp) {
        char cdi[GPU_RESOURCE_MAX + GPU_MIG_UUID_MAX + 2];
        bool nodes = u->g->vendor == GPU_NVIDIA ? s->cfg.device_specs : !s->cfg.cdi;
        node_set ns;
        int r = 0;

        if (nodes) {
                unit_node_set(&ns, s, u);
                for (size_t i = 0; i < ns.n && r >= 0; i++)
                        r = kdp_alloc_response_add_dev_node(resp, &ns.nodes[i]);
        }
        if (r >= 0 && s->cfg.cdi) {
                snprintf(cdi, sizeof(cdi), "%s=%s", unit_resource(u), unit_id(u));
                r = kdp_alloc_response_add_cdi_device(resp, cdi);
        }
        return r;
}

static int gpu_allocate(void *state, const kdp_alloc_request *req, kdp_alloc_response *resp) {
        _cleanup_free_ gpu_unit *list = NULL;
        _cleanup_free_ char *ids = NULL, *parts = NULL;
        const gpu_state *s = state;
        size_t n = 0;
        int r;

        r = request_units(s, req, &list, &n);
        if (r < 0 || n == 0)
                return r < 0 ? r : -EOPNOTSUPP;
        for (size_t i = 0; i < n; i++) {
                r = add_unit_edits(s, &list[i], resp);
                if (r < 0)
                        return r;
        }
        if (list[0].part && !list[0].part->mig) {
                parts = join_ids(list, n, false);
                if (!parts)
                        return -ENOMEM;
                r = kdp_alloc_response_add_env(resp, "KDP_GPU_PARTITIONS", parts);
                if (r < 0)
                        return r;
        }
        ids = join_ids(list, n, list[0].g->vendor != GPU_NVIDIA);
        if (!ids)
                return -ENOMEM;
        return kdp_alloc_response_add_env(resp,
                                          list[0].g->vendor == GPU_NVIDIA ? "NVIDIA_VISIBLE_DEVICES" : "KDP_GPU_PCI_ADDRESSES",
                                          ids);
}

/* The whole NVIDIA GPU an ID of the request names, else NULL. */
static const gpu *whole_nvidia_gpu(const gpu_state *s, const char *resource, const char *id) {
        gpu_unit u;

        if (!unit_by_id(s, resource, id, &u) || u.part || u.g->vendor != GPU_NVIDIA)
                return NULL;
        return u.g;
}

static size_t count_peer(const gpu *g, const char *bdf) {
        size_t n = 0;

        for (size_t i = 0; i < g->n_nvlink; i++)
                n += strcmp(g->nvlink[i], bdf) == 0;
        return n;
}

/* The links joining two GPUs: those both ends report active. */
static unsigned links_between(const gpu *a, const gpu *b) {
        size_t x = count_peer(a, b->bdf), y = count_peer(b, a->bdf);

        return (unsigned) (x < y ? x : y);
}

static bool has_gpu(const gpu *const *list, size_t n, const gpu *g) {
        for (size_t i = 0; i < n; i++)
                if (list[i] == g)
                        return true;
        return false;
}

/*
 * Whole NVIDIA GPUs, with NVML and without NVSwitches, when NVLink joins two of the request's
 * GPUs and there is a choice to make (gpu_nvlink_pick); -EOPNOTSUPP otherwise: the framework's
 * answer, which is the same when no link joins them.
 */
static int nvlink_preferred(const gpu_state *s, const kdp_pref_request *req, kdp_pref_response *resp) {
        _cleanup_free_ const gpu **cand = NULL;
        _cleanup_free_ gpu_nvlink_gpu *gpus = NULL;
        _cleanup_free_ unsigned *links = NULL;
        _cleanup_free_ size_t *picked = NULL;
        size_t n = 0, n_must = 0, total = 0;
        int r = 0;

        if (!s->nvml || s->n_nvswitch > 0)
                return -EOPNOTSUPP;     /* without NVML no links are known; with NVSwitches all GPUs are alike */
        cand = calloc(req->n_must_include + req->n_available + 1, sizeof(*cand));
        if (!cand)
                return -ENOMEM;
        for (size_t i = 0; i < req->n_must_include + req->n_available; i++) {
                bool must = i < req->n_must_include;
                const gpu *g = whole_nvidia_gpu(s, req->resource,
                                                must ? req->must_include[i] : req->available[i - req->n_must_include]);

                if (!g)
                        return -EOPNOTSUPP;
                if ((!must || n < req->size) && !has_gpu(cand, n, g))
                        cand[n++] = g;
                if (must)
                        n_must = n;     /* M: deduplicated, cut to its first req->size */
        }
        if (n_must >= req->size || req->size - n_must >= n - n_must)
                return -EOPNOTSUPP;     /* no choice: M, or every GPU */
        links = calloc(n * n, sizeof(unsigned));
        gpus = calloc(n, sizeof(*gpus));
        picked = calloc(req->size - n_must, sizeof(size_t));
        if (!links || !gpus || !picked)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const kdp_pci_device *p = s->pci.list ? kdp_pci_list_find(s->pci.list, cand[i]->bdf) : NULL;

                gpus[i] = (gpu_nvlink_gpu){ .id = cand[i]->id, .numa_node = cand[i]->numa_node,
                                            .pci_path = p ? p->path : NULL };
                for (size_t j = 0; j < i; j++) {
                        links[i * n + j] = links[j * n + i] = links_between(cand[i], cand[j]);
                        total += links[i * n + j];
                }
        }
        if (total == 0)
                return -EOPNOTSUPP;
        r = gpu_nvlink_pick(gpus, n, n_must, links, req->size - n_must, picked);
        if (r == -E2BIG) {
                kdp_backend_log_v(s->ctx, 4, "Left NVLink out of a preferred allocation: too many sets to weigh",
                                  KDP_F_STR("resource", req->resource), KDP_F_INT("gpus", n));
                return -EOPNOTSUPP;
        }
        for (size_t i = 0; r >= 0 && i < n_must; i++)
                r = kdp_pref_response_add(resp, cand[i]->id);
        for (size_t i = 0; r >= 0 && i < req->size - n_must; i++)
                r = kdp_pref_response_add(resp, cand[picked[i]]->id);
        return r < 0 ? r : 0;
}

static int gpu_preferred(void *state, const kdp_pref_request *req, kdp_pref_response *resp) {
        const gpu_state *s = state;

        if (gpu_config_replicas(&s->cfg, req->resource) == 1)
                return nvlink_preferred(s, req, resp);  /* whole GPUs: NVLink, else the framework's PCIe locality */
        return gpu_replicas_preferred(s->cfg.policy, req, resp);
}

static const char *const gpu_subsystems[] = { "pci", "drm", NULL };

static const kdp_backend_ops gpu_ops = {
        .abi_major = KDP_BACKEND_ABI_MAJOR,
        .struct_size = sizeof(kdp_backend_ops),
        .name = "gpu",
        .udev_subsystems = gpu_subsystems,
        .params = gpu_params,
        .init = gpu_init,
        .scan = gpu_scan,
        .fini = gpu_fini,
        .allocate = gpu_allocate,
        .preferred = gpu_preferred,
        .rescan_interval_ms = 1000,     /* AER counters, procfs and NVIDIA's /dev nodes send no uevent */
        .device_event = gpu_device_event,
};

KDP_BACKEND_REGISTER(gpu_ops);
