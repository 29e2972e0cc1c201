/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sriov: pools of PCI functions (SR-IOV VFs above all) as resources, configured by the SR-IOV
 * network device plugin's config.json and answering Allocate as it does (README.md).
 *
 *   init   params -> config.json -> pools (config.c)
 *   scan   config.json changed (watch.c: an inotify event, settled, or its identity)? -> read
 *          again; PCI list -> each function a pool may want (discover.c) -> its pool
 *          (sriov_config_match) -> the table of members (members[]) -> devices; every pool
 *          declared, also when empty
 *   device_event (pci add/remove/bind/unbind) -> the PCI list is read again; a bind or add
 *          starts a member's AER counters anew
 *   the rtnetlink fd (link.c) -> a PF link or a default route that matters changed: scan; when
 *          only link states changed since the last full scan (no device event, no default route,
 *          config.json as it was), a link-only scan: the table as it stands, only the PF-link
 *          part of each member's health evaluated again, no file read (scan_link_only)
 *   the periodic scan (every 2 s) when nothing changed since the last full scan (no device
 *          event, no link or default route change, config.json as it was, rtnetlink read) and
 *          that one is less than 30 s old: a health-only scan: the table as it stands, each taken
 *          member's health evaluated again from what sends no event (`enable`, AER counters, its
 *          device nodes), no function's other files read (scan_health_only); else a full one
 *   the inotify fd (watch.c) -> an event naming config.json: a scan once settled
 *   reload (kdpd's SIGHUP) -> config.json read now; kdpd scans next
 *   allocate -> sriov_answer (answer.c) for the members named, and each one's device-info file
 *          for Multus (devinfo_dir); preferred -> VFs of one PF
 *   after each scan, the device-info file of a device gone from the bus or from its pool goes;
 *          allocated (the kubelet's PodResources List) -> the file of a device it no longer
 *          lists goes; at fini every file written goes; at init those a previous run left
 *
 * A member is one function served in one pool: the pair (address, resource). A member once
 * served stays in the table while the function is there or lost: removed, unbound, bound to a
 * driver its pool's selectors do not take, or no longer taken for another reason (excluded), it
 * is Unhealthy with the reason, and Healthy again by itself when its pool takes it again. The
 * pool that takes the function now gets its own member, so a VF rebound from iavf to vfio-pci
 * is Healthy in the vfio pool and Unhealthy ("bound to vfio-pci") in the netdevice pool.
 * SR-IOV re-cuts a function instead of losing it, and so it leaves the table: a PF whose VFs
 * were enabled (excluded, as a kdpd started now would), a VF that went with its PF's
 * sriov_numvfs change. A config.json change that alters a pool drops that pool's members
 * (they are the new pool's to take); an unchanged pool keeps its members and its stream.
 *
 * A VF whose netdev a CNI moved into a pod's network namespace (its net/ empty) is not gone:
 * its member keeps the netdev facts read while it was free (netdev name, link type, PF name,
 * pkey, RDMA device and nodes), so its pool's selectors still take it and it stays Healthy.
 *
 * Link state (link.c, rtnetlink): a VF's PF netdev whose link is down (admin-down, no carrier,
 * operstate not up) makes every member of that PF Unhealthy, "PF <name> link down", and Healthy
 * again once it is up (param pf_link_down=unhealthy, the default; =ignore leaves them be). A PF
 * netdev this netns does not have (UNKNOWN: gone, renamed, moved) is not down. A VF's own netdev
 * being down is no reason: a CNI or a pod may hold it admin-down legitimately, before use or
 * inside the pod. A function whose own netdev (the one in this netns now, not the name kept
 * while it is in a pod) carries a default route is excluded, "carries the default route", as
 * sriovdp excludes it; it is served again once the route is gone. The scan tells link.c which
 * names matter (the PF netdevs of the members, the netdevs of the functions looked at), and the
 * socket's fd callback asks kdpd for a scan when one of those changes, so a carrier change
 * reaches the kubelet at once, not at the next periodic scan. When rtnetlink cannot be read,
 * the backend serves without it (nothing is down, no route known) and each scan retries it.
 *
 * Every function of a class a pool considers (base class 0x02 for netDevice pools, 0x12 for
 * accelerator pools, the vendors/devices of pci pools) that no pool takes is declared not
 * served, with the reason: excluded (a PF with VFs enabled, a netdev carrying the default route,
 * no driver bound) or "no pool's selectors take it". A function without a driver is in no pool
 * (sriovdp makes no device of it), so a VF seen between its "add" and its driver's probe is
 * taken by the pool its driver makes it fit, never first by one whose selectors name no driver.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kdp/atomic-file.h>
#include <kdp/backend.h>
#include <kdp/cleanup.h>
#include <kdp/health.h>
#include <kdp/pci.h>

#include "sriov.h"

#define REASON_MAX 256
#define PCI_RELIST_MS 30000     /* the PCI list is read again at least this often, events or not */
#define FULL_SCAN_MS PCI_RELIST_MS      /* and every function's files, at least this often */
#define NODES_MAX (SRIOV_RDMA_NODES_MAX + 4)

typedef struct member {
        sriov_func f;                           /* as last read, netdev facts kept while in a pod */
        char resource[2 * SRIOV_NAME_MAX];      /* the pool it is served in */
        size_t selector;                        /* of that pool, the selector that took it */
        char driver[64];                        /* the driver its pool took it with */
        kdp_health_pci pci;
        bool taken;                             /* its pool took it at the last scan */
        bool rebound;                           /* a bind/add event came since the last scan */
        bool present;                           /* listed in this scan */
        int pf_numvfs;                          /* a VF: its PF's sriov_numvfs (> 0) when last seen */
        bool recut;                             /* SR-IOV re-cut it: it leaves the table after this scan */
        char reason[REASON_MAX];                /* "" when healthy */
        size_t link_at;                         /* taken: where the PF link's part of reason starts */
} member;

/* A function declared not served by the last full scan: a link-only scan declares it again. */
typedef struct not_served_note {
        char address[KDP_PCI_ADDRESS_MAX];
        char reason[REASON_MAX];
} not_served_note;

/* A device-info file written at Allocate: removed once its member is gone or freed, and at fini. */
typedef struct devinfo_file {
        char resource[2 * SRIOV_NAME_MAX];
        char id[KDP_PCI_ADDRESS_MAX];
        uint64_t written_usec;                  /* kdp_backend_now_usec() of its last write */
} devinfo_file;

typedef struct sriov_state {
        kdp_backend_ctx *ctx;
        char *config_path;
        char *prefix;
        bool cdi;
        sriov_config cfg;
        sriov_watch *cfg_watch;                 /* when to read config.json again (watch.c) */
        char *dev_root;                         /* --dev-root without a trailing '/' */
        kdp_pci_list_cache pci;                 /* the PCI functions as last listed */
        member *members;
        size_t n_members;
        sriov_link *link;                       /* rtnetlink: link state, default routes */
        bool pf_link_down_unhealthy;            /* pf_link_down=unhealthy */
        char (*watch)[IF_NAMESIZE];             /* the netdevs the scan found that matter (no duplicates) */
        size_t n_watch;
        bool full_scan_due;                     /* a device event (or init) since the last full scan */
        uint64_t full_scan_usec;                /* kdp_backend_now_usec() of the last full scan */
        bool link_changed;                      /* the rtnetlink callback asked for a scan for link states */
        not_served_note *not_served;            /* what the last full scan declared not served */
        size_t n_not_served;
        char *devinfo_dir;                      /* where device-info files go; NULL: none are written */
        devinfo_file *devinfo;                  /* the files written and not removed yet */
        size_t n_devinfo;
        uint64_t devinfo_grace_usec;            /* a List must start this long after a write to free it */
} sriov_state;

static const kdp_param_spec sriov_params[] = {
        { "config_file", "/etc/pcidp/config.json", "the SR-IOV network device plugin's config.json: the pools" },
        { "resource_prefix", "intel.com", "resourcePrefix of pools without one (sriovdp's -resource-prefix)" },
        { "cdi", "false", "give each device a CDI name <resource>=<address> and write CDI specs into --cdi-dir" },
        { "pf_link_down", "unhealthy",
          "a PF whose link is down makes its VFs Unhealthy (unhealthy) or leaves them Healthy (ignore)" },
        { "devinfo_dir", "/var/run/k8s.cni.cncf.io/devinfo/dp",
          "where Allocate writes each device's device-info file for Multus; empty: none" },
        { "devinfo_grace_ms", "10000",
          "a device-info file goes when the kubelet's PodResources List, started this long after the file "
          "was written, no longer lists its device" },
        { 0 },
};

static void devinfo_remove(sriov_state *s, size_t i, const char *why);
static void devinfo_remove_stale(sriov_state *s);

/* ---- the link state (link.c) ---- */

typedef struct link_facts {
        sriov_link_state state;
        bool default_route;                     /* the netdev carries a default route */
} link_facts;

/* What rtnetlink said of netdev `ifname` (unknown, no route: "" or no socket yet). */
static link_facts link_facts_read(const sriov_state *s, const char *ifname) {
        if (!s->link || !ifname[0])
                return (link_facts){ .state = SRIOV_LINK_UNKNOWN };
        return (link_facts){ .state = sriov_link_get_state(s->link, ifname),
                             .default_route = sriov_link_has_default_route(s->link, ifname) };
}

/* The function's own netdev's facts go into `f`: a netdev carrying the default route is excluded. */
static void link_facts_apply(sriov_func *f, const link_facts *own) {
        f->default_route = own->default_route;
}

/* Why a member is Unhealthy for its PF's link, into `why` (size); false unless the link is known down. */
static bool link_facts_pf_down(const sriov_state *s, const sriov_func *f, const link_facts *pf, char *why,
                               size_t size) {
        if (!s->pf_link_down_unhealthy || !f->pf_name[0] || pf->state != SRIOV_LINK_DOWN)
                return false;
        snprintf(why, size, "PF %s link down", f->pf_name);
        return true;
}

/* Adds `ifname` ("" adds nothing) to the netdevs whose changes ask for a scan. */
static int link_watch_add(sriov_state *s, const char *ifname) {
        char (*v)[IF_NAMESIZE];

        if (!ifname[0])
                return 0;
        for (size_t i = 0; i < s->n_watch; i++)
                if (strcmp(s->watch[i], ifname) == 0)
                        return 0;
        v = realloc(s->watch, (s->n_watch + 1) * sizeof(*v));
        if (!v)
                return -ENOMEM;
        s->watch = v;
        snprintf(s->watch[s->n_watch++], IF_NAMESIZE, "%s", ifname);
        return 0;
}

/* Hands link.c the netdevs this scan found that matter: a change of one of them asks for a scan. */
static void link_watch_commit(sriov_state *s) {
        _cleanup_free_ const char **names = NULL;

        if (!s->link)
                return;
        names = calloc(s->n_watch + 1, sizeof(*names));
        if (!names)
                return;         /* the previous set stays; the periodic scan still sees every change */
        for (size_t i = 0; i < s->n_watch; i++)
                names[i] = s->watch[i];
        (void) sriov_link_set_served(s->link, names, s->n_watch);
}

/* The rtnetlink socket is readable (kdpd's loop): >0 asks for a scan. */
static int link_on_fd(void *state, int fd) {
        sriov_state *s = state;
        int r;

        (void) fd;
        r = sriov_link_dispatch(s->link);
        if (r > 0 && sriov_link_take_route_change(s->link))
                s->full_scan_due = true;        /* a default route may change what is excluded */
        else if (r > 0)
                s->link_changed = true;
        return r;
}

/* ---- the config ---- */

/* The config file's directory is readable (kdpd's loop): an event naming the file asks for a rescan once settled. */
static int config_on_fd(void *state, int fd) {
        sriov_state *s = state;

        (void) fd;
        return sriov_watch_dispatch(s->cfg_watch);
}

static const sriov_pool *pool_of(const sriov_config *c, const char *resource) {
        for (size_t i = 0; i < c->n_pools; i++)
                if (strcmp(c->pools[i].resource, resource) == 0)
                        return &c->pools[i];
        return NULL;
}

static void log_pools(const sriov_state *s) {
        for (size_t i = 0; i < s->cfg.n_pools; i++) {
                const sriov_pool *p = &s->cfg.pools[i];

                kdp_backend_log_info(s->ctx, "Configured pool", KDP_F_STR("resource", p->resource),
                                     KDP_F_STR("deviceType", sriov_config_device_type_to_string(p->type)),
                                     KDP_F_INT("selectors", (int64_t) p->n_selectors));
                if (p->type == SRIOV_AUX_NET_DEVICE)
                        kdp_backend_log_warning(s->ctx, "Pool serves no device: auxiliary devices are not discovered",
                                                KDP_F_STR("resource", p->resource),
                                                KDP_F_STR("path", s->config_path));
        }
}

/*
 * Reads config.json again when watch.c says so (`asked`: kdpd's SIGHUP, read now). A file that
 * fails to load leaves the running pools as they are (config.c logged why, naming file:line:key)
 * until it changes again. A pool that did not change keeps its members; the members of a
 * changed or dropped pool leave.
 */
static void reload_config(sriov_state *s, bool asked) {
        const char *trigger = sriov_watch_check(s->cfg_watch, asked);
        sriov_config next;
        size_t k = 0, kept = 0;
        int r;

        if (!trigger)
                return;
        r = sriov_config_load(s->ctx, s->config_path, s->prefix, &next);
        if (r < 0) {
                sriov_config_done(&next);
                kdp_backend_log_error(s->ctx, r, "Kept the running pools after a failed reload of the config file",
                                      KDP_F_STR("path", s->config_path), KDP_F_STR("trigger", trigger));
                return;
        }
        for (size_t i = 0; i < s->cfg.n_pools; i++) {
                const sriov_pool *now = pool_of(&next, s->cfg.pools[i].resource);

                kept += now && sriov_config_pool_equal(&s->cfg.pools[i], now);
        }
        for (size_t i = 0; i < s->n_members; i++) {
                const sriov_pool *was = pool_of(&s->cfg, s->members[i].resource);
                const sriov_pool *now = pool_of(&next, s->members[i].resource);

                if (was && now && sriov_config_pool_equal(was, now))
                        s->members[k++] = s->members[i];
        }
        s->n_members = k;
        sriov_config_done(&s->cfg);
        s->cfg = next;
        kdp_backend_log_info(s->ctx, "Reloaded the config file", KDP_F_STR("path", s->config_path),
                             KDP_F_INT("pools", (int64_t) s->cfg.n_pools), KDP_F_INT("unchangedPools", (int64_t) kept),
                             KDP_F_STR("trigger", trigger));
        if (kept < s->cfg.n_pools)
                log_pools(s);
}

/* kdpd's SIGHUP: config.json is read now; the scan that follows serves what it says. */
static void sriov_reload(void *state) {
        sriov_state *s = state;

        reload_config(s, true);
        s->full_scan_due = true;        /* the pools it read take their functions in a full scan */
}

/* ---- ops: init, fini ---- */

/* pf_link_down: "unhealthy" or "ignore"; anything else is logged with where it was set. */
static int parse_pf_link_down(const kdp_backend_ctx *ctx, bool *ret) {
        const char *v = kdp_backend_param(ctx, "pf_link_down");
        const char *origin = kdp_backend_param_origin(ctx, "pf_link_down");

        if (v && strcmp(v, "unhealthy") == 0)
                *ret = true;
        else if (v && strcmp(v, "ignore") == 0)
                *ret = false;
        else
                return kdp_backend_log_error(ctx, -EINVAL, "Rejected config value",
                                             KDP_F_STR("key", "sriov.pf_link_down"), KDP_F_STR("value", v ? v : ""),
                                             KDP_F_STR("origin", origin ? origin : "?"),
                                             KDP_F_STR("reason", "neither unhealthy nor ignore"));
        return 0;
}

static void sriov_fini(void *state) {
        sriov_state *s = state;

        if (!s)
                return;
        while (s->n_devinfo > 0)        /* the spec: a device plugin removes its files when it stops */
                devinfo_remove(s, s->n_devinfo - 1, "stopped");
        free(s->devinfo);
        free(s->devinfo_dir);
        s->link = sriov_link_free(s->link);
        s->cfg_watch = sriov_watch_free(s->cfg_watch);
        free(s->watch);
        free(s->not_served);
        kdp_pci_list_cache_done(&s->pci);
        sriov_config_done(&s->cfg);
        free(s->members);
        free(s->dev_root);
        free(s->prefix);
        free(s->config_path);
        free(s);
}

static int sriov_init(kdp_backend_ctx *ctx, void **ret_state) {
        sriov_state *s = calloc(1, sizeof(*s));
        const char *path = kdp_backend_param(ctx, "config_file"), *prefix = kdp_backend_param(ctx, "resource_prefix");
        const char *devinfo = kdp_backend_param(ctx, "devinfo_dir");
        int r;

        if (!s)
                return -ENOMEM;
        s->ctx = ctx;
        s->full_scan_due = true;
        if (!path || !*path || !prefix || !*prefix) {
                sriov_fini(s);
                return kdp_backend_log_error(ctx, -EINVAL, "Refused an empty config_file or resource_prefix",
                                             KDP_F_STR("origin", kdp_backend_param_origin(ctx, path && *path ?
                                                                                              "resource_prefix" :
                                                                                              "config_file")));
        }
        s->config_path = strdup(path);
        s->prefix = strdup(prefix);
        r = s->config_path && s->prefix ? 0 : -ENOMEM;
        if (r >= 0)
                r = kdp_backend_param_bool(ctx, "cdi", &s->cdi);
        if (r >= 0)
                r = parse_pf_link_down(ctx, &s->pf_link_down_unhealthy);
        if (r >= 0 && devinfo && *devinfo && !(s->devinfo_dir = strdup(devinfo)))
                r = -ENOMEM;
        if (r >= 0) {
                int64_t grace;

                r = kdp_backend_param_int(ctx, "devinfo_grace_ms", 0, 3600000, &grace);
                s->devinfo_grace_usec = (uint64_t) grace * 1000;
        }
        if (r >= 0)
                r = kdp_backend_path(ctx, KDP_PATH_DEV, "", &s->dev_root);
        if (r >= 0) {
                size_t n = strlen(s->dev_root);

                while (n > 1 && s->dev_root[n - 1] == '/')
                        s->dev_root[--n] = '\0';
                r = sriov_watch_new(ctx, s->config_path, config_on_fd, &s->cfg_watch);
        }
        if (r >= 0)
                r = sriov_config_load(ctx, s->config_path, s->prefix, &s->cfg);
        /* a socket that fails is logged and retried at each scan: only -ENOMEM ends init */
        if (r >= 0)
                r = sriov_link_new(ctx, link_on_fd, &s->link);
        if (r < 0) {
                sriov_fini(s);
                return r;
        }
        log_pools(s);
        devinfo_remove_stale(s);
        *ret_state = s;
        return 0;
}

/* ---- the table ---- */

static void reason_add(member *m, const char *text) {
        size_t n = strlen(m->reason);

        snprintf(m->reason + n, sizeof(m->reason) - n, "%s%s", n ? "; " : "", text);
}

static member *member_find(sriov_state *s, const char *address, const char *resource) {
        for (size_t i = 0; i < s->n_members; i++)
                if (strcmp(s->members[i].f.address, address) == 0 && strcmp(s->members[i].resource, resource) == 0)
                        return &s->members[i];
        return NULL;
}

static member *member_add(sriov_state *s, const sriov_func *f, const char *resource, size_t selector) {
        member *n = realloc(s->members, (s->n_members + 1) * sizeof(*n));
        member *m;

        if (!n)
                return NULL;
        s->members = n;
        m = &s->members[s->n_members++];
        *m = (member){ .f = *f, .selector = selector };
        snprintf(m->resource, sizeof(m->resource), "%s", resource);
        return m;
}

/* Whether a pool looks at functions like `p` at all: their class (netDevice, accelerator) or IDs (pci). */
static bool considered(const sriov_config *c, const kdp_pci_device *p) {
        char vendor[5], device[5];

        if (p->is_bridge)
                return false;
        snprintf(vendor, sizeof(vendor), "%04x", p->vendor_id);
        snprintf(device, sizeof(device), "%04x", p->device_id);
        for (size_t i = 0; i < c->n_pools; i++) {
                const sriov_pool *pool = &c->pools[i];

                if ((pool->type == SRIOV_NET_DEVICE && (p->class_code >> 16) == 0x02) ||
                    (pool->type == SRIOV_ACCELERATOR && (p->class_code >> 16) == 0x12))
                        return true;
                if (pool->type != SRIOV_PCI)
                        continue;
                for (size_t j = 0; j < pool->n_selectors; j++) {
                        const sriov_selector *sel = &pool->selectors[j];
                        bool v = sel->vendors.n == 0, d = sel->devices.n == 0;

                        for (size_t k = 0; k < sel->vendors.n && !v; k++)
                                v = strcmp(sel->vendors.v[k], vendor) == 0;
                        for (size_t k = 0; k < sel->devices.n && !d; k++)
                                d = strcmp(sel->devices.v[k], device) == 0;
                        if (v && d)
                                return true;
                }
        }
        return false;
}

/* The PF's sriov_numvfs of a VF, -1 when the PF is not listed. */
static int pf_numvfs(const kdp_pci_list *l, const char *pf_address) {
        const kdp_pci_device *pf = pf_address[0] ? kdp_pci_list_find(l, pf_address) : NULL;

        return pf ? pf->sriov_numvfs : -1;
}

#define KEEP_FIELD(dst, src, field)                                                    \
        do {                                                                          \
                if (!(dst)->field[0])                                                 \
                        snprintf((dst)->field, sizeof((dst)->field), "%s", (src)->field); \
        } while (0)

/*
 * A VF whose netdev left (net/ empty: moved into a pod) keeps what was read while it was free,
 * taken from a member that saw it with its netdev and the same driver.
 */
static void keep_pod_facts(const sriov_state *s, sriov_func *f) {
        if (f->netdev[0])
                return;
        for (size_t i = 0; i < s->n_members; i++) {
                const sriov_func *was = &s->members[i].f;

                if (strcmp(was->address, f->address) != 0 || !was->netdev[0] || strcmp(was->driver, f->driver) != 0)
                        continue;
                KEEP_FIELD(f, was, netdev);
                KEEP_FIELD(f, was, link_type);
                KEEP_FIELD(f, was, pf_name);
                KEEP_FIELD(f, was, pkey);
                if (!f->rdma_dev[0] && was->rdma_dev[0]) {
                        memcpy(f->rdma_dev, was->rdma_dev, sizeof(f->rdma_dev));
                        memcpy(f->rdma_nodes, was->rdma_nodes, sizeof(f->rdma_nodes));
                        f->n_rdma_nodes = was->n_rdma_nodes;
                }
                return;
        }
}

static void check_node(const sriov_state *s, member *m, const char *path) {
        _cleanup_free_ char *why = NULL;

        if (strncmp(path, "/dev/", 5) == 0)
                path += 5;
        if (kdp_health_check_dev_node(s->ctx, path, &why) == KDP_UNHEALTHY && why)
                reason_add(m, why);
}

/* The node a vfio function's group has under the dev root: vfio/<N>, or vfio/noiommu-<N>. */
static void vfio_group_node(const sriov_func *f, char *buf, size_t size) {
        snprintf(buf, size, "vfio/%s%d", f->noiommu ? "noiommu-" : "", f->iommu_group);
}

/* A taken member's reason from link_at on (its PF link's part, last): written anew from `pf`. */
static void link_reason_set(const sriov_state *s, member *m, const link_facts *pf) {
        char text[REASON_MAX];

        m->reason[m->link_at] = '\0';
        if (link_facts_pf_down(s, &m->f, pf, text, sizeof(text)))
                reason_add(m, text);
}

/*
 * The health of a taken member from its facts as they stand, appended to its reason: what sends
 * no event (its PCI `enable` and AER counters, the nodes its Allocate answer hands out) read now,
 * and the PF link last (from link_at on).
 */
static void check_taken(const sriov_state *s, member *m, const link_facts *pf) {
        const sriov_pool *pool = pool_of(&s->cfg, m->resource);
        const sriov_selector *sel = pool && m->selector < pool->n_selectors ? &pool->selectors[m->selector] : NULL;
        unsigned checks = KDP_HEALTH_PCI_ENABLED | KDP_HEALTH_PCI_AER_FATAL | KDP_HEALTH_PCI_AER_NONFATAL;
        _cleanup_free_ char *why = NULL;
        char text[REASON_MAX];

        if (kdp_health_pci_check(s->ctx, m->f.address, NULL, checks, &m->pci, &why) == KDP_UNHEALTHY && why)
                reason_add(m, why);
        if (strcmp(m->f.driver, "vfio-pci") == 0) {
                if (m->f.iommu_group < 0)
                        reason_add(m, "bound to vfio-pci without an IOMMU group");
                else {
                        check_node(s, m, "vfio/vfio");
                        vfio_group_node(&m->f, text, sizeof(text));
                        check_node(s, m, text);
                }
        }
        if (m->f.uio_index >= 0) {
                snprintf(text, sizeof(text), "uio%d", m->f.uio_index);
                check_node(s, m, text);
        }
        if (sel && sel->is_rdma && !sel->vdpa_type[0]) {
                if (!m->f.rdma_dev[0])
                        reason_add(m, "no RDMA device");
                for (size_t i = 0; i < m->f.n_rdma_nodes; i++)
                        check_node(s, m, m->f.rdma_nodes[i]);
        }
        if (sel && strcmp(sel->vdpa_type, "vhost") == 0 && m->f.vdpa_path[0])
                check_node(s, m, m->f.vdpa_path);
        m->link_at = strlen(m->reason);
        link_reason_set(s, m, pf);
}

/* A member its pool takes (now, or again): its health. A (re)bound function's AER counters start anew. */
static void refresh_taken(const sriov_state *s, member *m, const link_facts *pf) {
        if (!m->taken || m->rebound || strcmp(m->driver, m->f.driver) != 0) {
                (void) kdp_health_pci_rebase(s->ctx, m->f.address, &m->pci);
                snprintf(m->driver, sizeof(m->driver), "%s", m->f.driver);
        }
        m->taken = true;
        m->rebound = false;
        check_taken(s, m, pf);
}

/* Why a member's pool does not take its function now. */
static void refresh_not_taken(member *m, const char *excluded) {
        char text[96];

        m->taken = false;
        if (excluded)
                reason_add(m, excluded);
        else if (!m->f.driver[0])
                reason_add(m, "driver unbound");
        else if (strcmp(m->f.driver, m->driver) != 0) {
                snprintf(text, sizeof(text), "bound to %s", m->f.driver);
                reason_add(m, text);
        } else
                reason_add(m, "its pool's selectors no longer take it");
}

/* Declares a function not served, and notes it for the link-only scans until the next full one. */
static void not_served_add(sriov_state *s, kdp_device_tree *tree, const char *address, const char *reason) {
        not_served_note *v = realloc(s->not_served, (s->n_not_served + 1) * sizeof(*v));

        (void) kdp_device_tree_not_served(tree, address, reason);
        if (!v) {
                s->full_scan_due = true;        /* the notes are short of this one: no link-only scan */
                return;
        }
        s->not_served = v;
        v = &s->not_served[s->n_not_served++];
        snprintf(v->address, sizeof(v->address), "%s", address);
        snprintf(v->reason, sizeof(v->reason), "%s", reason);
}

/*
 * One PCI function: its members are refreshed, the pool that takes it gets a member if it has
 * none; a function a pool looks at and none takes, with no member, is declared not served.
 */
static void scan_function(sriov_state *s, kdp_device_tree *tree, const kdp_pci_device *p) {
        const char *why = NULL, *excluded, *resource = NULL;
        bool known = false, has_member = false;
        size_t selector = 0;
        link_facts own, pf;
        sriov_func f;
        int r, pool;

        for (size_t i = 0; i < s->n_members && !known; i++)
                known = strcmp(s->members[i].f.address, p->address) == 0;
        if (!known && !considered(&s->cfg, p))
                return;
        r = sriov_discover(s->ctx, p, &f, &why);
        if (r == -ENOENT)
                return;                 /* going away: as if not listed */
        if (r < 0) {
                char text[REASON_MAX];

                snprintf(text, sizeof(text), "%s", why ? why : strerror(-r));
                for (size_t i = 0; i < s->n_members; i++) {
                        member *m = &s->members[i];

                        if (strcmp(m->f.address, p->address) != 0)
                                continue;
                        m->present = true;
                        m->taken = false;
                        reason_add(m, text);
                }
                if (!known)
                        not_served_add(s, tree, p->address, text);
                return;
        }
        /* its netdev in this netns now: not the name kept while it is in a pod */
        own = link_facts_read(s, f.netdev);
        (void) link_watch_add(s, f.netdev);     /* out of memory: the periodic scan still sees it */
        keep_pod_facts(s, &f);
        pf = link_facts_read(s, f.pf_name);
        link_facts_apply(&f, &own);
        excluded = sriov_config_excluded(&f);
        pool = sriov_config_match(&s->cfg, &f, &selector);
        if (pool >= 0)
                resource = s->cfg.pools[pool].resource;

        for (size_t i = 0; i < s->n_members; i++) {
                member *m = &s->members[i];
                int numvfs;

                if (strcmp(m->f.address, p->address) != 0 || m->recut)
                        continue;
                if (f.is_pf_with_vfs && !(resource && strcmp(m->resource, resource) == 0)) {
                        /* its VFs are served in its place (an accelerator pool keeps it: as sriovdp) */
                        kdp_backend_log_info(s->ctx, "Function left the list: SR-IOV VFs are served in its place",
                                             KDP_F_STR("pciAddress", p->address), KDP_F_STR("resource", m->resource),
                                             KDP_F_INT("numVFs", p->sriov_numvfs));
                        m->recut = true;
                        continue;
                }
                has_member = true;
                m->present = true;
                f.numa_node = kdp_pci_numa_node(p, m->f.numa_node);
                m->f = f;
                numvfs = pf_numvfs(s->pci.list, f.pf_address);
                if (numvfs > 0)
                        m->pf_numvfs = numvfs;          /* the cut it belongs to */
                if (resource && strcmp(m->resource, resource) == 0) {
                        m->selector = selector;
                        refresh_taken(s, m, &pf);
                } else
                        refresh_not_taken(m, excluded);
        }
        if (resource && !member_find(s, p->address, resource)) {
                member *m = member_add(s, &f, resource, selector);

                if (m) {
                        int numvfs = pf_numvfs(s->pci.list, f.pf_address);

                        m->present = true;
                        m->pf_numvfs = numvfs > 0 ? numvfs : 0;
                        refresh_taken(s, m, &pf);
                        has_member = true;
                }
        }
        if (!has_member && considered(&s->cfg, p))
                not_served_add(s, tree, p->address, excluded ? excluded : "no pool's selectors take it");
}

/* A PCI function libkdp could not read: its members stay, Unhealthy with the reason; else one a pool may want. */
static void scan_skipped(sriov_state *s, kdp_device_tree *tree, const kdp_pci_skipped *k) {
        kdp_pci_device p = { .vendor_id = k->vendor_id, .device_id = k->device_id, .class_code = 0x020000 };
        bool known = false;

        for (size_t i = 0; i < s->n_members; i++) {
                member *m = &s->members[i];

                if (strcmp(m->f.address, k->address) != 0 || m->recut)
                        continue;
                known = true;
                m->present = true;
                m->taken = false;
                reason_add(m, k->reason);
        }
        snprintf(p.address, sizeof(p.address), "%s", k->address);
        if (!known && k->vendor_id && considered(&s->cfg, &p))
                not_served_add(s, tree, k->address, k->reason);
}

/* ---- device-info files (answer.c's header: names and content) ---- */

static int devinfo_path(const sriov_state *s, const char *resource, const char *id, char **ret) {
        _cleanup_free_ char *name = NULL;
        int r = sriov_answer_devinfo_name(resource, id, &name);

        if (r < 0)
                return r;
        return asprintf(ret, "%s/%s", s->devinfo_dir, name) < 0 ? -ENOMEM : 0;
}

/* Removes the file of entry i and drops it from the table (the last entry takes its place). */
static void devinfo_remove(sriov_state *s, size_t i, const char *why) {
        _cleanup_free_ char *path = NULL;
        devinfo_file *e = &s->devinfo[i];

        if (devinfo_path(s, e->resource, e->id, &path) >= 0) {
                if (unlink(path) < 0 && errno != ENOENT)
                        kdp_backend_log_warning(s->ctx, "Cannot remove a device-info file", KDP_F_STR("path", path),
                                                KDP_F_STR("err", strerror(errno)));
                else
                        kdp_backend_log_info(s->ctx, "Removed a device-info file", KDP_F_STR("resource", e->resource),
                                             KDP_F_STR("device", e->id), KDP_F_STR("reason", why));
        }
        s->devinfo[i] = s->devinfo[--s->n_devinfo];
}

/*
 * Writes the device-info file of member `m` (a new one over an older one, by rename: a reader
 * sees one or the other) and remembers it. A failure is logged: the container still gets its
 * device, only Multus finds no device-info for it.
 */
static void devinfo_write(sriov_state *s, const member *m, const sriov_selector *sel) {
        _cleanup_free_ char *path = NULL, *tmp = NULL, *json = NULL, *name = NULL;
        devinfo_file *v;
        int r;

        if (!s->devinfo_dir)
                return;
        r = sriov_answer_devinfo_name(m->resource, m->f.address, &name);
        if (r >= 0)
                r = asprintf(&path, "%s/%s", s->devinfo_dir, name) < 0 ? -ENOMEM : 0;
        if (r >= 0)
                r = asprintf(&tmp, "%s/.%s.XXXXXX", s->devinfo_dir, name) < 0 ? -ENOMEM : 0;
        if (r >= 0)
                r = sriov_answer_devinfo(s->ctx, sel, &m->f, &json);
        if (r >= 0)
                r = kdp_atomic_file_mkdir_p(s->devinfo_dir, 0755);
        if (r >= 0)
                r = kdp_atomic_file_write(path, tmp, json, strlen(json), 0444);
        if (r < 0) {
                kdp_backend_log_error(s->ctx, r, "Cannot write a device-info file", KDP_F_STR("resource", m->resource),
                                      KDP_F_STR("device", m->f.address), KDP_F_STR("path", path ? path : s->devinfo_dir));
                return;
        }
        for (size_t i = 0; i < s->n_devinfo; i++)
                if (strcmp(s->devinfo[i].id, m->f.address) == 0 && strcmp(s->devinfo[i].resource, m->resource) == 0) {
                        s->devinfo[i].written_usec = kdp_backend_now_usec(s->ctx);
                        return;
                }
        v = realloc(s->devinfo, (s->n_devinfo + 1) * sizeof(*v));
        if (!v) {
                (void) unlink(path);    /* not remembered: it would never be removed */
                kdp_backend_log_error(s->ctx, -ENOMEM, "Cannot write a device-info file",
                                      KDP_F_STR("resource", m->resource), KDP_F_STR("device", m->f.address),
                                      KDP_F_STR("path", path));
                return;
        }
        s->devinfo = v;
        v = &s->devinfo[s->n_devinfo++];
        snprintf(v->resource, sizeof(v->resource), "%s", m->resource);
        snprintf(v->id, sizeof(v->id), "%s", m->f.address);
        v->written_usec = kdp_backend_now_usec(s->ctx);
}

static bool allocated_has(const kdp_allocated *a, const char *resource, const char *id) {
        for (size_t i = 0; i < a->n_resources; i++) {
                if (strcmp(a->resources[i].resource, resource) != 0)
                        continue;
                for (size_t j = 0; j < a->resources[i].n_device_ids; j++)
                        if (strcmp(a->resources[i].device_ids[j], id) == 0)
                                return true;
        }
        return false;
}

/*
 * The kubelet's List: a file whose device it no longer lists was freed (its pod ended) and goes.
 * Only a List that started devinfo_grace_ms after the file's last write counts: the kubelet
 * records an allocation when Allocate has answered, so a List begun just before or around the
 * write may not show it yet (nor a List answered from a kubelet's state of that moment).
 */
static void sriov_allocated(void *state, const kdp_allocated *a) {
        sriov_state *s = state;

        for (size_t i = s->n_devinfo; i > 0; i--) {
                const devinfo_file *e = &s->devinfo[i - 1];

                if (a->started_usec >= e->written_usec + s->devinfo_grace_usec &&
                    !allocated_has(a, e->resource, e->id))
                        devinfo_remove(s, i - 1, "freed: the kubelet lists it in no pod");
        }
}

/*
 * After a scan: the file of a device no longer on the bus (removed, its VFs re-cut) or no longer
 * in its pool (the pool dropped or renamed, or changed and no longer taking it) goes.
 */
static void devinfo_sweep(sriov_state *s) {
        for (size_t i = s->n_devinfo; i > 0; i--) {
                const devinfo_file *e = &s->devinfo[i - 1];
                const member *m = member_find(s, e->id, e->resource);

                if (!m)
                        devinfo_remove(s, i - 1, "no longer in its pool");
                else if (!m->present)
                        devinfo_remove(s, i - 1, "removed from the PCI bus");
        }
}

/* True if `s` is a PCI address "<hex>:<hex>:<hex>.<hex>" (the IDs this backend gives). */
static bool is_pci_address(const char *s, size_t n) {
        size_t colons = 0, dots = 0;

        for (size_t i = 0; i < n; i++) {
                if (s[i] == ':' && dots == 0)
                        colons++;
                else if (s[i] == '.' && colons == 2)
                        dots++;
                else if (!strchr("0123456789abcdef", s[i]) || s[i] == '\0')
                        return false;
        }
        return n > 0 && colons == 2 && dots == 1 && s[n - 1] != '.';
}

/*
 * At init: device-info files of the pools' resources a previous run left (it ended without its
 * fini) describe allocations nobody tracks; they go. Only "<resource>-<PCI address>-device.json"
 * of a configured pool is touched, never another plugin's file.
 */
static void devinfo_remove_stale(sriov_state *s) {
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;

        if (!s->devinfo_dir)
                return;
        d = opendir(s->devinfo_dir);
        if (!d)
                return;
        while ((de = readdir(d))) {
                const char *suffix = "-device.json";
                size_t len = strlen(de->d_name), slen = strlen(suffix);

                if (len <= slen || strcmp(de->d_name + len - slen, suffix) != 0)
                        continue;
                for (size_t i = 0; i < s->cfg.n_pools; i++) {
                        _cleanup_free_ char *prefix = NULL, *path = NULL;
                        size_t plen;

                        if (sriov_answer_devinfo_name(s->cfg.pools[i].resource, "x", &prefix) < 0)
                                continue;
                        plen = strlen(prefix) - strlen("x-device.json");
                        if (len <= plen + slen || strncmp(de->d_name, prefix, plen) != 0 ||
                            !is_pci_address(de->d_name + plen, len - plen - slen))
                                continue;
                        if (asprintf(&path, "%s/%s", s->devinfo_dir, de->d_name) < 0)
                                return;
                        if (unlinkat(dirfd(d), de->d_name, 0) == 0)
                                kdp_backend_log_info(s->ctx, "Removed a device-info file a previous run left",
                                                     KDP_F_STR("path", path));
                        break;
                }
        }
}

/* ---- devices ---- */

/* A member's nodes as its Allocate answer hands them out (for CDI specs), with the strings they point at. */
typedef struct node_set {
        char host[NODES_MAX][SRIOV_PATH_MAX + 64];
        char container[NODES_MAX][SRIOV_PATH_MAX];
        kdp_dev_node nodes[NODES_MAX + 1];      /* { 0 }-terminated */
        size_t n;
} node_set;

static void node_set_add(node_set *ns, const sriov_state *s, const char *host_rel, const char *container) {
        if (ns->n >= NODES_MAX)
                return;
        if (strncmp(host_rel, "/dev/", 5) == 0)
                host_rel += 5;
        snprintf(ns->host[ns->n], sizeof(ns->host[0]), "%s/%s", s->dev_root, host_rel);
        snprintf(ns->container[ns->n], sizeof(ns->container[0]), "%s", container);
        ns->nodes[ns->n] = (kdp_dev_node){ .host_path = ns->host[ns->n], .container_path = ns->container[ns->n],
                                           .permissions = "rw" };
        ns->nodes[++ns->n] = (kdp_dev_node){ 0 };
}

static void node_set_fill(node_set *ns, const sriov_state *s, const member *m) {
        const sriov_pool *pool = pool_of(&s->cfg, m->resource);
        const sriov_selector *sel = pool && m->selector < pool->n_selectors ? &pool->selectors[m->selector] : NULL;
        char rel[64], container[64];

        *ns = (node_set){ 0 };
        if (strcmp(m->f.driver, "vfio-pci") == 0 && m->f.iommu_group >= 0) {
                node_set_add(ns, s, "vfio/vfio", "/dev/vfio/vfio");
                vfio_group_node(&m->f, rel, sizeof(rel));
                snprintf(container, sizeof(container), "/dev/vfio/%d", m->f.iommu_group);
                node_set_add(ns, s, rel, container);
        }
        if (m->f.uio_index >= 0) {
                snprintf(rel, sizeof(rel), "uio%d", m->f.uio_index);
                snprintf(container, sizeof(container), "/dev/uio%d", m->f.uio_index);
                node_set_add(ns, s, rel, container);
        }
        if (sel && strcmp(sel->vdpa_type, "vhost") == 0 && m->f.vdpa_path[0])
                node_set_add(ns, s, m->f.vdpa_path, m->f.vdpa_path);
        if (sel && sel->is_rdma && !sel->vdpa_type[0])
                for (size_t i = 0; i < m->f.n_rdma_nodes; i++)
                        node_set_add(ns, s, m->f.rdma_nodes[i], m->f.rdma_nodes[i]);
}

static void cdi_name(const member *m, char *buf, size_t size) {
        snprintf(buf, size, "%s=%s", m->resource, m->f.address);
}

static int emit_member(const sriov_state *s, kdp_device_tree *tree, const member *m) {
        const sriov_pool *pool = pool_of(&s->cfg, m->resource);
        char cdi[2 * SRIOV_NAME_MAX + KDP_PCI_ADDRESS_MAX + 2];
        const char *cdis[2] = { cdi, NULL };
        kdp_device_info info = {
                .id = m->f.address,
                .health = m->reason[0] ? KDP_UNHEALTHY : KDP_HEALTHY,
                .health_reason = m->reason[0] ? m->reason : NULL,
                .pci_address = m->f.address,
        };
        _cleanup_free_ node_set *ns = NULL;

        if (m->f.numa_node >= 0 && pool && !pool->exclude_topology) {
                info.numa_nodes[0] = m->f.numa_node;
                info.n_numa_nodes = 1;
        }
        if (s->cdi) {
                ns = malloc(sizeof(*ns));
                if (!ns)
                        return -ENOMEM;
                node_set_fill(ns, s, m);
                info.dev_nodes = ns->nodes;
                cdi_name(m, cdi, sizeof(cdi));
                info.cdi_devices = cdis;
        }
        return kdp_device_tree_add(tree, m->resource, &info);
}

/* Members not listed: re-cut with their PF's sriov_numvfs change, or lost (removed, Unhealthy). */
static void scan_absent(sriov_state *s) {
        for (size_t i = 0; i < s->n_members; i++) {
                member *m = &s->members[i];
                int n;

                if (m->present || m->recut)
                        continue;
                n = pf_numvfs(s->pci.list, m->f.pf_address);
                if (m->f.pf_address[0] && (n == 0 || (n > 0 && n != m->pf_numvfs))) {
                        kdp_backend_log_info(s->ctx, "Function left the list: its PF's SR-IOV VFs changed",
                                             KDP_F_STR("pciAddress", m->f.address), KDP_F_STR("resource", m->resource),
                                             KDP_F_STR("physfn", m->f.pf_address), KDP_F_INT("numVFs", n));
                        m->recut = true;
                        continue;
                }
                m->taken = false;
                reason_add(m, "removed from the PCI bus");
        }
}

static void forget_recut(sriov_state *s) {
        size_t k = 0;

        for (size_t i = 0; i < s->n_members; i++)
                if (!s->members[i].recut)
                        s->members[k++] = s->members[i];
        s->n_members = k;
}

/* The pools, and every member with its health as the table has it now. */
static void scan_emit(const sriov_state *s, kdp_device_tree *tree) {
        for (size_t i = 0; i < s->cfg.n_pools; i++)
                (void) kdp_device_tree_add_resource(tree, s->cfg.pools[i].resource);
        for (size_t i = 0; i < s->n_members; i++)
                (void) emit_member(s, tree, &s->members[i]);   /* a refused device is noted by the tree */
}

/*
 * Whether this scan may be a link-only one: the rtnetlink callback asked for it because the link
 * state of a served netdev changed, and since the last full scan no device event came, no
 * default route changed, config.json did not change and nothing else (the periodic scan, a
 * retry) asked for a scan. Consumes the callback's request.
 */
static bool scan_link_only(sriov_state *s) {
        bool link_changed = s->link_changed;

        s->link_changed = false;
        if (!link_changed || s->full_scan_due || !s->link || sriov_link_fd(s->link) < 0)
                return false;
        return s->cfg_watch && sriov_watch_unchanged(s->cfg_watch);
}

/*
 * Whether this scan may be a health-only one: since the last full scan, which is less than
 * FULL_SCAN_MS old, no device event came, no default route changed, config.json did not change
 * (nor is an event of it settling) and rtnetlink is read (a failed socket is retried by a full
 * scan). What is left to change unseen is what sends no event: the periodic scan, or a rescan
 * asked for by nothing that needs a full one.
 */
static bool scan_health_only(sriov_state *s) {
        if (s->full_scan_due || !s->link || sriov_link_fd(s->link) < 0 ||
            kdp_backend_now_usec(s->ctx) - s->full_scan_usec >= (uint64_t) FULL_SCAN_MS * 1000)
                return false;
        return s->cfg_watch && sriov_watch_unchanged(s->cfg_watch);
}

/*
 * A scan that reuses the facts the last full scan read from sysfs (a change there comes with its
 * device event, which makes the next scan a full one). A link-only scan evaluates only the PF
 * link's part of each taken member's health again, from link.c's table, and reads no file; a
 * health-only scan (`health`) evaluates each taken member's health again whole (check_taken):
 * its PCI `enable` and AER counters and its device nodes read now, which send no event.
 */
static void scan_reusing(sriov_state *s, kdp_device_tree *tree, bool health) {
        for (size_t i = 0; i < s->n_members; i++) {
                member *m = &s->members[i];
                link_facts pf;

                if (!m->taken)
                        continue;
                pf = link_facts_read(s, m->f.pf_name);
                if (health) {
                        m->reason[0] = '\0';
                        check_taken(s, m, &pf);
                } else
                        link_reason_set(s, m, &pf);
        }
        for (size_t i = 0; i < s->n_not_served; i++)
                (void) kdp_device_tree_not_served(tree, s->not_served[i].address, s->not_served[i].reason);
        scan_emit(s, tree);
}

static int sriov_scan(void *state, kdp_device_tree *tree) {
        sriov_state *s = state;
        kdp_pci_list *l;
        int r;

        if (scan_link_only(s)) {
                scan_reusing(s, tree, false);
                return 0;
        }
        if (scan_health_only(s)) {
                scan_reusing(s, tree, true);
                return 0;
        }
        s->full_scan_due = false;
        s->full_scan_usec = kdp_backend_now_usec(s->ctx);
        s->n_not_served = 0;
        reload_config(s, false);
        if (s->link)
                (void) sriov_link_retry(s->link);       /* a failed socket, once its backoff passed */
        r = kdp_pci_list_cache_refresh(s->ctx, &s->pci, PCI_RELIST_MS);
        if (r < 0) {
                s->full_scan_due = true;
                return r;
        }
        s->n_watch = 0;
        l = s->pci.list;
        for (size_t i = 0; i < s->n_members; i++) {
                s->members[i].present = false;
                s->members[i].reason[0] = '\0';
        }
        for (size_t i = 0; i < kdp_pci_list_size(l); i++)
                scan_function(s, tree, kdp_pci_list_get(l, i));
        for (size_t i = 0; i < kdp_pci_list_skipped_size(l); i++)
                scan_skipped(s, tree, kdp_pci_list_skipped_get(l, i));
        scan_absent(s);
        forget_recut(s);
        devinfo_sweep(s);
        for (size_t i = 0; s->pf_link_down_unhealthy && i < s->n_members; i++)
                (void) link_watch_add(s, s->members[i].f.pf_name);
        link_watch_commit(s);
        scan_emit(s, tree);
        return 0;
}

/* A function came, went or changed driver: list again. A bind or add starts its AER counters anew. */
static void sriov_device_event(void *state, const kdp_device_event *ev) {
        sriov_state *s = state;
        bool bind;

        s->full_scan_due = true;        /* any of its subsystems may change what sysfs says */
        if (strcmp(ev->subsystem, "pci") != 0 || strcmp(ev->action, "change") == 0)
                return;
        s->pci.dirty = true;
        bind = strcmp(ev->action, "bind") == 0 || strcmp(ev->action, "add") == 0;
        for (size_t i = 0; bind && ev->sysname && i < s->n_members; i++)
                if (strcmp(s->members[i].f.address, ev->sysname) == 0)
                        s->members[i].rebound = true;
}

/* ---- Allocate and GetPreferredAllocation ---- */

static int sriov_allocate(void *state, const kdp_alloc_request *req, kdp_alloc_response *resp) {
        sriov_state *s = state;
        const sriov_pool *pool = pool_of(&s->cfg, req->resource);
        _cleanup_free_ const sriov_func **funcs = NULL;
        _cleanup_free_ size_t *selectors = NULL;
        char cdi[2 * SRIOV_NAME_MAX + KDP_PCI_ADDRESS_MAX + 2];
        int r;

        if (!pool)
                return kdp_backend_log_error(s->ctx, -EINVAL, "Refused Allocate of a resource no pool serves",
                                             KDP_F_STR("resource", req->resource));
        if (req->n_device_ids == 0)
                return -EOPNOTSUPP;
        funcs = calloc(req->n_device_ids, sizeof(*funcs));
        selectors = calloc(req->n_device_ids, sizeof(*selectors));
        if (!funcs || !selectors)
                return -ENOMEM;
        for (size_t i = 0; i < req->n_device_ids; i++) {
                const member *m = member_find(s, req->device_ids[i], req->resource);

                if (!m)
                        return kdp_backend_log_error(s->ctx, -EINVAL, "Refused Allocate of an unknown device",
                                                     KDP_F_STR("resource", req->resource),
                                                     KDP_F_STR("device", req->device_ids[i]));
                funcs[i] = &m->f;
                selectors[i] = m->selector;
        }
        r = sriov_answer(s->ctx, pool, funcs, selectors, req->n_device_ids, resp);
        for (size_t i = 0; r >= 0 && s->cdi && i < req->n_device_ids; i++) {
                snprintf(cdi, sizeof(cdi), "%s=%s", req->resource, req->device_ids[i]);
                r = kdp_alloc_response_add_cdi_device(resp, cdi);
        }
        /* sriovdp's accelerator pools write no device-info: Multus reads it for network attachments */
        for (size_t i = 0; r >= 0 && pool->type != SRIOV_ACCELERATOR && i < req->n_device_ids; i++) {
                const member *m = member_find(s, req->device_ids[i], req->resource);

                devinfo_write(s, m, &pool->selectors[m->selector]);
        }
        return r;
}

/* qsort/bsearch of an array of strings (const char *). */
static int compare_strings(const void *a, const void *b) {
        return strcmp(*(const char *const *) a, *(const char *const *) b);
}

static int compare_member_address(const void *a, const void *b) {
        return strcmp((*(const member *const *) a)->f.address, (*(const member *const *) b)->f.address);
}

/* bsearch of a member index by address: the key is the address. */
static int compare_address_member(const void *key, const void *elem) {
        return strcmp(key, (*(const member *const *) elem)->f.address);
}

/* The members of `resource` sorted by address (free()), their number in *ret_n; NULL on -ENOMEM. */
static const member **members_by_address(const sriov_state *s, const char *resource, size_t *ret_n) {
        const member **v = calloc(s->n_members + 1, sizeof(*v));
        size_t n = 0;

        if (!v)
                return NULL;
        for (size_t i = 0; i < s->n_members; i++)
                if (strcmp(s->members[i].resource, resource) == 0)
                        v[n++] = &s->members[i];
        qsort(v, n, sizeof(*v), compare_member_address);
        *ret_n = n;
        return v;
}

/* The PF of an ID ("" for a function that is no VF); NULL when the ID is not a member. */
static const char *pf_of(const member *const *by_address, size_t n, const char *id) {
        const member *const *m = bsearch(id, by_address, n, sizeof(*by_address), compare_address_member);

        return m ? (*m)->f.pf_address : NULL;
}

/*
 * The PF with the fewest of `pfs` (n, sorted) that are at least `need`, the lowest address on a
 * tie; only `want_pf` when not NULL. NULL when none has enough.
 */
static const char *best_pf(const char *const *pfs, size_t n, const char *want_pf, size_t need) {
        const char *best = NULL;
        size_t best_n = 0;

        for (size_t i = 0, run; i < n; i += run) {
                for (run = 1; i + run < n && strcmp(pfs[i + run], pfs[i]) == 0; run++)
                        ;
                if (!pfs[i][0] || (want_pf && strcmp(pfs[i], want_pf) != 0))
                        continue;
                if (run >= need && (!best || run < best_n || (run == best_n && strcmp(pfs[i], best) < 0))) {
                        best = pfs[i];
                        best_n = run;
                }
        }
        return best;
}

/*
 * VFs of one PF: when every must_include ID is of one PF (or there is none) and one PF has enough
 * available VFs for the rest, its VFs are picked (the must_include PF, else the PF with the
 * fewest that suffice, the lowest address on a tie), in available order. Anything else is the
 * framework's PCI locality. IDs are looked up in sorted copies (bsearch) and the VFs of each PF
 * counted in a sorted list of the PFs: O(n log n) in the IDs and members.
 */
static int sriov_preferred(void *state, const kdp_pref_request *req, kdp_pref_response *resp) {
        sriov_state *s = state;
        _cleanup_free_ const member **by_address = NULL;
        _cleanup_free_ const char **must = NULL;        /* must_include, sorted */
        _cleanup_free_ const char **pfs = NULL;         /* of available[i]; NULL: in must_include */
        _cleanup_free_ const char **sorted = NULL;      /* the non-NULL pfs, sorted */
        const char *want_pf = NULL, *best;
        size_t need, n_members = 0, n_sorted = 0;
        int r;

        if (req->n_must_include >= req->size)
                return -EOPNOTSUPP;
        by_address = members_by_address(s, req->resource, &n_members);
        must = calloc(req->n_must_include + 1, sizeof(*must));
        pfs = calloc(req->n_available + 1, sizeof(*pfs));
        sorted = calloc(req->n_available + 1, sizeof(*sorted));
        if (!by_address || !must || !pfs || !sorted)
                return -EOPNOTSUPP;
        for (size_t i = 0; i < req->n_must_include; i++) {
                const char *pf = pf_of(by_address, n_members, req->must_include[i]);

                if (!pf || !pf[0] || (want_pf && strcmp(pf, want_pf) != 0))
                        return -EOPNOTSUPP;
                want_pf = pf;
                must[i] = req->must_include[i];
        }
        qsort(must, req->n_must_include, sizeof(*must), compare_strings);
        for (size_t i = 0; i < req->n_available; i++) {
                if (bsearch(&req->available[i], must, req->n_must_include, sizeof(*must), compare_strings))
                        continue;
                pfs[i] = pf_of(by_address, n_members, req->available[i]);
                if (!pfs[i])
                        return -EOPNOTSUPP;
                sorted[n_sorted++] = pfs[i];
        }
        qsort(sorted, n_sorted, sizeof(*sorted), compare_strings);
        need = req->size - req->n_must_include;
        best = best_pf(sorted, n_sorted, want_pf, need);
        if (!best)
                return -EOPNOTSUPP;
        for (size_t i = 0; i < req->n_must_include; i++) {
                r = kdp_pref_response_add(resp, req->must_include[i]);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < req->n_available && need > 0; i++) {
                if (!pfs[i] || strcmp(pfs[i], best) != 0)
                        continue;
                r = kdp_pref_response_add(resp, req->available[i]);
                if (r < 0)
                        return r;
                need--;
        }
        return 0;
}

static const char *const sriov_subsystems[] = { "pci", "net", "infiniband", "vfio", NULL };

static const kdp_backend_ops sriov_ops = {
        .abi_major = KDP_BACKEND_ABI_MAJOR,
        .struct_size = sizeof(kdp_backend_ops),
        .name = "sriov",
        .udev_subsystems = sriov_subsystems,
        .params = sriov_params,
        .init = sriov_init,
        .scan = sriov_scan,
        .fini = sriov_fini,
        .allocate = sriov_allocate,
        .preferred = sriov_preferred,
        .rescan_interval_ms = 2000,     /* AER counters and /dev nodes send no uevent */
        .device_event = sriov_device_event,
        .reload = sriov_reload,
        .allocated = sriov_allocated,
};

KDP_BACKEND_REGISTER(sriov_ops);
