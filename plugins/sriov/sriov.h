/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The SR-IOV backend's internal interfaces (one per module). It serves pools of
 * PCI functions (SR-IOV VFs above all) as resources, configured by the SR-IOV
 * network device plugin's own config.json, and answers Allocate as that plugin
 * does (the env and DeviceSpecs a CNI and the pod's software expect).
 *
 *   sriov.c     ops; the table of members (a function served in a pool, kept
 *               while lost), scan, pools -> device tree, health, Allocate,
 *               preferred, config.json re-read when it changes; what link.c
 *               says acts there (link_facts_*): a PF link down makes its VFs
 *               Unhealthy (pf_link_down), a netdev carrying the default route
 *               is excluded, and the rtnetlink fd callback asks for a scan
 *   config.c    config.json -> sriov_config: pools, selectors, ranges; which
 *               pool a function goes to (sriov_config_match)
 *   discover.c  sysfs -> sriov_func: what a function is (VF index, PF name,
 *               netdev, link type, IOMMU group, uio, RDMA nodes, vDPA...)
 *   answer.c    the Allocate answer of a pool: env (PCIDEVICE_..., ..._INFO),
 *               DeviceSpecs, and the device-info files a CNI reads
 *   link.c      rtnetlink -> link up/down/unknown of a netdev, and whether the
 *               default route goes out through it (§9, §11)
 *   watch.c     when to read config.json again: inotify on its directory (a
 *               ConfigMap's "..data" swap, a rename over it, a write), its
 *               identity at each scan, kdpd's SIGHUP
 *
 * Ownership: sriov.c owns the sriov_config (replaced whole on reload) and the
 * member table (an array of sriov_func copies with their pool, kept across
 * scans, refreshed by each one, dropped with a changed pool). config.c and
 * discover.c fill structs the caller owns and frees with their *_done()
 * functions; answer.c reads both and writes into the caller's
 * kdp_alloc_response. sriov.c owns the table of device-info files it wrote (written at
 * Allocate, removed when a scan no longer finds their member present), the sriov_link (its
 * socket, fd watch and tables) and the sriov_watch (its inotify fd and fd watch). Everything
 * runs under the backend's lock
 * (kdp/backend.h): scan on the loop thread, allocate on the gRPC thread.
 *
 * Facts: docs/hardware-sriov.md (sections cited as §N).
 */
#pragma once

#include <errno.h>
#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kdp/backend.h>
#include <kdp/cleanup.h>
#include <kdp/pci.h>

/* Pools (resources) one config file may declare: each costs kdpd a socket, a gRPC server and ~4 fds. */
#define SRIOV_POOLS_MAX 128
#define SRIOV_NAME_MAX 128              /* resourceName, resourcePrefix, ibdev, driver names */
#define SRIOV_PATH_MAX 256
#define SRIOV_RDMA_NODES_MAX 5          /* ucm, issm, umad, uverbs, rdma_cm (§7) */

/* ---- discover.c: one PCI function as the pools see it ---- */

typedef struct sriov_func {
        char address[KDP_PCI_ADDRESS_MAX];      /* "0000:8a:01.0" */
        char vendor[5];                         /* lower-case hex, no "0x": "8086" (§12 vendors) */
        char device[5];                         /* "1889" */
        uint32_t class_code;                    /* 24 bits; base class 0x02 net, 0x12 accelerator */
        char driver[64];                        /* basename of the driver link; "" when unbound */
        int numa_node;                          /* -1: none */
        char acpi_index[16];                    /* trimmed acpi_index; "" when absent */

        /* SR-IOV */
        bool is_pf_with_vfs;                    /* sriov_totalvfs present and sriov_numvfs > 0: excluded */
        char pf_address[KDP_PCI_ADDRESS_MAX];   /* a VF's PF (physfn); "" for any other function */
        int vf_index;                           /* from the PF's virtfn<N> links; -1 when not a VF */
        char pf_name[IF_NAMESIZE];              /* the PF's netdev (switchdev: its uplink, §10); "" */

        /* net */
        char netdev[IF_NAMESIZE];               /* its netdev now; "" (vfio, or moved into a pod: §6) */
        char link_type[16];                     /* "ether", "infiniband"; "" when unknown */
        bool default_route;                     /* its netdev carries the default route: excluded */
        char pkey[16];                          /* IB default pkey "0x7fff"; "" */
        char ddp_profile[64];                   /* "" when none or unknown */

        /* what a container gets */
        int iommu_group;                        /* -1: none */
        bool noiommu;                           /* iommu_groups/<N>/name is "vfio-noiommu" (§5) */
        int uio_index;                          /* <BDF>/uio/uio<M>: M; -1 when none */
        char rdma_dev[SRIOV_NAME_MAX];          /* "mlx5_2"; "" when it has no RDMA device */
        char rdma_nodes[SRIOV_RDMA_NODES_MAX][SRIOV_PATH_MAX];  /* "/dev/infiniband/uverbs2", ... in §7's order */
        size_t n_rdma_nodes;
        char vdpa_type[16];                     /* "virtio", "vhost"; "" when it has no vDPA device */
        char vdpa_dev[SRIOV_PATH_MAX];          /* its name on the vdpa bus, "vdpa0" (any sysfs name fits); "" */
        char vdpa_path[SRIOV_PATH_MAX];         /* the vhost-vdpa node for "vhost"; "" */
} sriov_func;

/* ---- config.c: sriovdp's config.json ---- */

typedef enum sriov_device_type {
        SRIOV_NET_DEVICE,                       /* "netDevice" (the default) */
        SRIOV_ACCELERATOR,                      /* "accelerator" */
        SRIOV_AUX_NET_DEVICE,                   /* "auxNetDevice" */
        SRIOV_PCI,                              /* "pci": kdp's own, any class, vfio/uio providers */
        _SRIOV_DEVICE_TYPE_MAX,
        _SRIOV_DEVICE_TYPE_INVALID = -EINVAL,
} sriov_device_type;

/* "<PF name or BDF>[#<i>,<a>-<b>,...]" (§12 Ranges) */
typedef struct sriov_pf_match {
        char *pf;                               /* a PF name (compared case-insensitively) or a BDF */
        bool all_vfs;                           /* no '#': every VF */
        uint64_t *vf_bits;                      /* VF i selected: bit i % 64 of vf_bits[i / 64] */
        size_t n_vf_words;
        bool malformed;                         /* a bad range: it and the ranges after it select nothing
                                                   (sriovdp stops reading there); vf_bits holds those before */
} sriov_pf_match;

typedef struct sriov_strings {
        char **v;
        size_t n;                               /* 0: the field is absent (no filter) */
} sriov_strings;

/* One selector object: fields ANDed, values of a field ORed (§12). */
typedef struct sriov_selector {
        sriov_strings vendors, devices, drivers, pci_addresses, acpi_indexes, link_types, ddp_profiles,
                pkeys, aux_types;
        sriov_pf_match *pf_names, *root_devices;
        size_t n_pf_names, n_root_devices;
        bool is_rdma;
        bool need_vhost_net;
        char vdpa_type[16];                     /* "" when absent */
} sriov_selector;

/* additionalInfo: "*" and per-BDF maps of strings */
typedef struct sriov_info_entry {
        char *key;                              /* "*" or a BDF */
        sriov_strings keys, values;             /* same n */
} sriov_info_entry;

typedef struct sriov_pool {
        char resource_name[SRIOV_NAME_MAX];     /* "e810_vfio" */
        char resource_prefix[SRIOV_NAME_MAX];   /* "intel.com" or the pool's resourcePrefix */
        char resource[2 * SRIOV_NAME_MAX];      /* "<prefix>/<name>", what the kubelet sees */
        sriov_device_type type;
        bool exclude_topology;
        sriov_selector *selectors;
        size_t n_selectors;
        sriov_info_entry *info;
        size_t n_info;
        bool has_info;                          /* additionalInfo an object, {} too: "extra" in _INFO */
        unsigned line;                          /* of its resourceList entry, for messages */
} sriov_pool;

typedef struct sriov_config {
        char *path;                             /* the file read */
        sriov_pool *pools;                      /* config order: the first match wins */
        size_t n_pools;
} sriov_config;

/*
 * Reads config.json at `path` into *ret (zeroed first; sriov_config_done() frees it, also after
 * a failure). `default_prefix` is the resourcePrefix of pools without one ("intel.com" by
 * default, as sriovdp's -resource-prefix). What sriovdp refuses (a missing or invalid
 * resourceName, a duplicate resource, vdpaType with isRdma, an auxNetDevice selector without
 * auxTypes or with one other than "sf", a wrong type outside the selectors) fails with -EINVAL
 * after logging an error naming path:line and the key; what sriovdp silently ignores or
 * mis-parses (an unknown key, acpiIndexes on an accelerator pool, a malformed VF range) is
 * accepted with a warning naming path:line and the key, and behaves as it does there. A pool
 * whose selectors hold a wrong type is dropped with such a warning, as sriovdp drops it, and
 * the others are loaded (none left: -EINVAL). ctx may
 * be NULL (tests): messages then go to stderr.
 */
int sriov_config_load(const kdp_backend_ctx *ctx, const char *path, const char *default_prefix,
                      sriov_config *ret);
void sriov_config_done(sriov_config *c);

/*
 * Why no pool may take `f` whatever the config (a PF with VFs enabled, a netdev carrying the
 * default route, no driver bound: sriovdp makes no device of a function without a driver), as
 * a reason for kdp_device_tree_not_served(); NULL when a pool may. accelerator pools, as
 * sriovdp's, take a PF with VFs enabled all the same (only an unbound one is excluded there),
 * so the reason stands only when no pool took the function. A function between its
 * "add" and its driver's probe is unbound: no pool takes it then, so what a pool holds never
 * depends on whether a scan fell into that gap.
 */
const char *sriov_config_excluded(const sriov_func *f);

/*
 * The pool `f` goes to: the first pool (config order) one of whose selectors takes it, with the
 * fields that apply to the pool's device type and its class filter (§12); -1 when none, also for
 * a function sriov_config_excluded() names a reason for, unless an accelerator pool takes it
 * (a PF with VFs enabled). An auxNetDevice pool takes no PCI
 * function (its devices are auxiliary ones).
 * *ret_selector (may be NULL) is the selector that took it (its isRdma, needVhostNet and
 * vdpaType shape the answer).
 */
int sriov_config_match(const sriov_config *c, const sriov_func *f, size_t *ret_selector);

/* Two pools that would advertise and answer the same (a reload keeps such a pool's stream). */
bool sriov_config_pool_equal(const sriov_pool *a, const sriov_pool *b);

/* "netDevice", "accelerator", "auxNetDevice", "pci"; NULL when out of range. */
const char *sriov_config_device_type_to_string(sriov_device_type t);

/* ---- discover.c ---- */

/*
 * What `p` (one function of the ctx's PCI scan) is, read from sysfs and /dev under the ctx's
 * roots into *ret. A file a function may lack (acpi_index, net/, uio/, infiniband/, the PF's
 * net/) leaves its field empty; -ENOENT when the function went away meanwhile, another
 * negative errno with *ret_why (a static string or NULL) saying which file could not be read.
 * The default route is not read here (it is rtnetlink's, not sysfs's): default_route is false
 * (sriov.c sets it from link.c).
 *
 * *ret is written only on success. *ret_why (ret_why may be NULL) is NULL on success; after a
 * failure it names the file ("its sysfs file net/ens1f0v0/type is malformed") in storage of
 * the calling thread, valid until its next sriov_discover(). rdma_nodes and vdpa_path are
 * "/dev/<name>", the path a container sees; the host's node is <name> under the dev root.
 * ddp_profile stays "" (devlink's, not sysfs's). The files read: discover.c's header.
 */
int sriov_discover(const kdp_backend_ctx *ctx, const kdp_pci_device *p, sriov_func *ret,
                   const char **ret_why);

/* ---- answer.c ---- */

/*
 * The Allocate answer of `pool` for the functions funcs[0..n) (request order, as the kubelet
 * sent the IDs), each taken by selector selectors[i] of the pool, into `resp` (§13):
 * PCIDEVICE_<PREFIX>_<NAME> with the BDFs and <key>_INFO with the providers' JSON (sorted keys),
 * and the DeviceSpecs (vfio, uio, RDMA, vhost-net + tun, vDPA) de-duplicated by host path, "rw".
 */
int sriov_answer(const kdp_backend_ctx *ctx, const sriov_pool *pool, const sriov_func *const *funcs,
                 const size_t *selectors, size_t n, kdp_alloc_response *resp);

/*
 * The device-info file of function `f` taken by selector `sel` (NULL: none) for a CNI, as
 * Multus reads it (Device Information Specification 1.1.0; answer.c's header has every byte):
 * its JSON into *ret (free()), {"type":"pci",...} or {"type":"vdpa",...}.
 */
int sriov_answer_devinfo(const kdp_backend_ctx *ctx, const sriov_selector *sel, const sriov_func *f, char **ret);

/* Its file name: "<resource>-<id>-device.json", every '/' replaced by '-'. */
int sriov_answer_devinfo_name(const char *resource, const char *id, char **ret);

/* The env key of a pool: "PCIDEVICE_" + prefix + "_" + name, upper-cased, '.' -> '_'. */
int sriov_answer_env_key(const sriov_pool *pool, char **ret);

/* ---- link.c: link state and the default route, from rtnetlink ---- */

/*
 * One NETLINK_ROUTE socket subscribed to RTNLGRP_LINK, RTNLGRP_IPV4_ROUTE and RTNLGRP_IPV6_ROUTE,
 * and what it says about the netdevs of this netns: a table keyed by ifname (and ifindex) of
 * admin flags, operstate (IFLA_OPERSTATE) and carrier (IFLA_CARRIER), and the default routes of
 * the main table (dst_len 0, unicast, IPv4 and IPv6) with the links they go out through (RTA_OIF,
 * and every nexthop of RTA_MULTIPATH, dead or not: the route is still configured through it; a
 * route using a nexthop object counts through the RTA_OIF/RTA_MULTIPATH the kernel adds to it in
 * its default net.ipv4.nexthop_compat_mode=1).
 *
 * Sources (§9): the kernel sends no uevent on a carrier or operstate change, only RTM_NEWLINK.
 * A netdev moved into a pod's netns gives RTM_DELLINK here (§6): its link becomes UNKNOWN (not
 * DOWN; the VF is still there). RTM_NEWLINK/RTM_DELLINK of family AF_BRIDGE (bridge port
 * events) say nothing about the link itself and are ignored. Routes are re-read by a dump after
 * each default-route event; an IPv4 route whose every nexthop link went admin-down is dropped at
 * once, as the kernel flushes it without a message. ENOBUFS (events lost) re-reads links and
 * routes (a warning the first time, then at --v=4). An unknown attribute is ignored; a
 * malformed message is skipped (--v=4).
 *
 * Ownership and threads: the sriov_link is its creator's (sriov.c's state), as are its socket
 * and its fd watch on the ctx; sriov_link_free() ends both. Every call runs under the backend's
 * lock (kdp/backend.h): sriov_link_new() in init, sriov_link_dispatch() from the backend's fd
 * callback on the loop thread, sriov_link_retry() and the queries from scan/probe. The queries
 * read the table as of the last dispatch; they never block. sriov_link_new() and
 * sriov_link_retry() read the dumps synchronously (the kernel answers at once; at most 10 s).
 *
 * The socket asks for a 4 MiB receive buffer (past net.core.rmem_max with CAP_NET_ADMIN), so
 * that bursts of events (pod churn) rarely overflow it.
 *
 * A socket error (not ENOBUFS; a message longer than 32 KiB is one) is logged, the socket closed
 * and unwatched, and a rescan asked for after a backoff (1 s, doubling up to 60 s, back to 1 s
 * once a socket works) through kdp_backend_rescan_after(); the scan then calls
 * sriov_link_retry(), which opens a new socket once the backoff has passed. Meanwhile the
 * queries answer from the last table.
 */
typedef struct sriov_link sriov_link;

typedef enum sriov_link_state {
        SRIOV_LINK_UNKNOWN,                     /* no such netdev here (moved into a pod, gone, not seen) */
        SRIOV_LINK_DOWN,                        /* admin-down, no carrier, or operstate not up */
        SRIOV_LINK_UP,                          /* admin-up, and operstate up (or unknown with carrier) */
        _SRIOV_LINK_STATE_MAX,
        _SRIOV_LINK_STATE_INVALID = -EINVAL,
} sriov_link_state;

/*
 * Opens the socket, reads the links and routes, and watches the socket on ctx's loop with
 * `on_fd`: the backend's own callback, which finds its sriov_link in its state and returns
 * sriov_link_dispatch() of it. When kdpd is not there to watch (-EOPNOTSUPP: tools, tests),
 * the caller calls sriov_link_dispatch() when sriov_link_fd() is readable. A socket failure is
 * logged and retried as described above (*ret is still made): -ENOMEM only.
 */
int sriov_link_new(kdp_backend_ctx *ctx, kdp_backend_fd_fn on_fd, sriov_link **ret);
sriov_link *sriov_link_free(sriov_link *l);

/*
 * A table without a socket, fed only by sriov_link_feed(): one datagram (at most 32 KiB) applied
 * as if read from the socket; returns as sriov_link_dispatch(), or the -errno of a failed dump
 * (the table is then as it was left). A dump it wants is not asked for but awaited: messages of
 * port 0 with the dump's sequence number (1, 2, ... from the first) answer it. The fuzz targets
 * read messages through it.
 */
int sriov_link_new_unopened(kdp_backend_ctx *ctx, sriov_link **ret);
int sriov_link_feed(sriov_link *l, const void *data, size_t size);

/*
 * Reads every message waiting on the socket and applies it. Returns 1 when the state or the
 * default route of a served ifname (sriov_link_set_served()) changed since the last time it was
 * reported (the fd callback's "scan please"), 0 otherwise; never fails (a socket error is
 * handled as described above).
 */
int sriov_link_dispatch(sriov_link *l);

/*
 * Whether, among the changes sriov_link_dispatch() reported since the last call, the default
 * route of a served ifname changed (not only link states); the next call says false until
 * another such change is reported.
 */
bool sriov_link_take_route_change(sriov_link *l);

/*
 * For the scan: when the socket failed and its backoff has passed, opens a new one (reading the
 * dumps). 0 when the socket is open; else the -errno of the last failure, and a rescan is
 * asked for when the next try is due.
 */
int sriov_link_retry(sriov_link *l);

/* The socket's fd; -1 while it failed. */
int sriov_link_fd(const sriov_link *l);

/*
 * The ifnames whose changes sriov_link_dispatch() reports (sriov.c: the netdevs the functions a
 * scan looked at have in this netns, and the PF netdevs of the members), copied; replaces the
 * previous set. What the table says of them now is the reference the next changes are measured
 * from.
 */
int sriov_link_set_served(sriov_link *l, const char *const *ifnames, size_t n);

sriov_link_state sriov_link_get_state(const sriov_link *l, const char *ifname);
/* Whether a default route of the main table goes out through `ifname`; false when unknown. */
bool sriov_link_has_default_route(const sriov_link *l, const char *ifname);

/* "unknown", "down", "up"; NULL when out of range. */
const char *sriov_link_state_to_string(sriov_link_state s);

KDP_DEFINE_CLEANUP_FUNC(sriov_link, sriov_link_free)

/* ---- watch.c: when to read config.json again ---- */

/*
 * config.json changes in three ways, each seen by an inotify watch on the file's directory
 * (never on the file's inode, which the first two replace):
 *   - a ConfigMap volume (kubelet's atomic writer): a new "..<timestamp>" directory with the
 *     files, a "..data_tmp" symlink to it renamed over "..data"; config.json itself is a
 *     symlink "..data/config.json", so the event names "..data" (the first component of the
 *     file's symlink target, read again after each read of the file);
 *   - an editor or a tool writing a temporary file and renaming it over config.json;
 *   - a write in place (IN_CLOSE_WRITE), a chmod or touch (IN_ATTRIB), a removal.
 * An event that names the file (or "..data"), or an overflowed queue, asks for a read once
 * SRIOV_WATCH_SETTLE_MS passed without another such event, through kdp_backend_rescan_after():
 * a file created empty and then written is read once, whole. Events of other names (an
 * editor's swap file, kdpd's own files beside it) are read and dropped.
 *
 * At each scan the file's identity (device, inode, size, mtime, ctime through its symlinks) is
 * compared too, which sees what the watch cannot: a symlink to a file in another directory, a
 * filesystem whose changes inotify does not report (NFS, some FUSE), a watch that failed
 * (fs.inotify.max_user_instances or max_user_watches reached: logged once, tried again at each
 * sriov_watch_check(), i.e. each full scan) or whose directory went away. The events waiting on the watch are read right after
 * that stat(), so a change in the watched directory is always the watch's, read once settled.
 *
 * Ownership and threads: the sriov_watch is its creator's (sriov.c's state), as are its
 * inotify fd and its fd watch on the ctx; sriov_watch_free() ends both. Every call runs under
 * the backend's lock: sriov_watch_dispatch() from the backend's fd callback on the loop thread,
 * sriov_watch_check() from scan and reload.
 */
#define SRIOV_WATCH_SETTLE_MS 100

typedef struct sriov_watch sriov_watch;

/*
 * Watches `path`'s directory on ctx's loop with `on_fd` (the backend's callback, which returns
 * sriov_watch_dispatch() of its sriov_watch), and notes the file's identity as read now. A
 * watch that fails is logged and tried again at each sriov_watch_check(): -ENOMEM only.
 */
int sriov_watch_new(kdp_backend_ctx *ctx, const char *path, kdp_backend_fd_fn on_fd, sriov_watch **ret);
sriov_watch *sriov_watch_free(sriov_watch *w);

/* Reads the waiting events (the fd callback); an event naming the file asks for a rescan once settled. Returns 0. */
int sriov_watch_dispatch(sriov_watch *w);

/*
 * Whether to read the file now, and why: "SIGHUP" when `asked` (kdpd's reload), "inotify" when
 * an event named it and has settled, "scan" when its identity changed; NULL: not now. Watches
 * the directory again first when the watch failed or went.
 */
const char *sriov_watch_check(sriov_watch *w, bool asked);

/* True when nothing says the file changed since it was read: no event waiting or pending, its identity the same. */
bool sriov_watch_unchanged(sriov_watch *w);

/* The inotify fd; -1 while not watching. */
int sriov_watch_fd(const sriov_watch *w);

KDP_DEFINE_CLEANUP_FUNC(sriov_watch, sriov_watch_free)
