/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The GPU backend's internal interfaces (one per module):
 *
 *   gpu.c     ops, the table of GPUs seen since start, scan, health, Allocate
 *   config.c  params -> gpu_config; which functions are ours, resource names, replicas
 *   nvidia.c  /proc/driver/nvidia/gpus/<bdf>/information, the NVIDIA nodes
 *   amd.c     the KFD topology: which GPUs the compute driver serves
 *   share.c   replicas: "<id>::<k>" IDs, Allocate, GetPreferredAllocation
 *   xid.c     Xid errors from the kernel log (xid.h)
 *   nvml.c    NVML loaded at run time, its Xid events (nvml.h)
 *   nvlink.c  NVLink links from NVML, and the preferred allocation that weighs them
 *   mig.c     NVIDIA MIG devices: NVML's layout, profile names, capability files (mig.h)
 *
 * Everything runs under the backend's lock (kdp/backend.h): scan and the Xid
 * callback on the loop thread, allocate and preferred on the gRPC thread.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kdp/backend.h>
#include <kdp/health.h>
#include <kdp/pci.h>

#include "xid.h"

typedef enum gpu_vendor {
        GPU_NVIDIA,
        GPU_AMD,
        GPU_INTEL,
        _GPU_VENDOR_MAX,
        _GPU_VENDOR_INVALID = -EINVAL,
} gpu_vendor;

#define GPU_NODES_MAX 20                /* an MI300X: 8 cards and 8 render nodes */
#define GPU_PARTS_MAX 8                 /* MI300 compute partitions (CPX) */
#define GPU_RESOURCE_MAX 128
#define GPU_UUID_MAX 48

/* ---- config.c ---- */

typedef enum gpu_replica_policy {
        GPU_REPLICAS_SPREAD,            /* distinct GPUs first */
        GPU_REPLICAS_PACK,              /* fill the GPUs already in use first */
        _GPU_REPLICA_POLICY_MAX,
        _GPU_REPLICA_POLICY_INVALID = -EINVAL,
} gpu_replica_policy;

typedef enum gpu_amd_partitions {
        GPU_AMD_WHOLE,                  /* a GPU is one device with the nodes of all its partitions */
        GPU_AMD_SINGLE,                 /* a partition is one device, under amd_resource */
        GPU_AMD_MIXED,                  /* a partition is one device, under <domain>/<compute>_<memory> */
        _GPU_AMD_PARTITIONS_MAX,
        _GPU_AMD_PARTITIONS_INVALID = -EINVAL,
} gpu_amd_partitions;

typedef enum gpu_mig_strategy {
        GPU_MIG_NONE,                   /* a GPU in MIG mode is served whole */
        GPU_MIG_SINGLE,                 /* each MIG device is a device of the GPU's resource */
        GPU_MIG_MIXED,                  /* each MIG device is a device of <domain>/mig-<profile> */
        _GPU_MIG_STRATEGY_MAX,
        _GPU_MIG_STRATEGY_INVALID = -EINVAL,
} gpu_mig_strategy;

typedef struct model_resource {
        uint16_t vendor, device;
        char *resource;
} model_resource;

typedef struct resource_replicas {
        char *resource;                         /* NULL: every resource */
        unsigned n;
} resource_replicas;

typedef struct gpu_config {
        const kdp_backend_ctx *ctx;             /* its params live as long as the ctx */
        bool vendor_on[_GPU_VENDOR_MAX];
        char **allow, **deny;                   /* NULL-terminated filter entries */
        model_resource *models;
        size_t n_models;
        resource_replicas *replicas;
        size_t n_replicas;
        gpu_replica_policy policy;
        gpu_amd_partitions amd_partitions;
        gpu_mig_strategy mig_strategy;
        bool device_specs, cdi;
        gpu_xid_set xid_ignore;
        bool xid_off;                           /* xid_ignore: all */
        uint64_t xid_recovery_ms;               /* 0: only a reset or rebind recovers */
} gpu_config;

/* mig_strategy's values by gpu_mig_strategy ("none", "single", "mixed"). */
extern const char *const gpu_mig_strategy_names[];
/* The { 0 }-terminated params of the backend (its ops table's .params). */
extern const kdp_param_spec gpu_params[];

/* Parses every param; -EINVAL (logged with key, value and origin) for a bad one. */
int gpu_config_parse(const kdp_backend_ctx *ctx, gpu_config *ret);
void gpu_config_done(gpu_config *c);
/* The vendor of a PCI function that is a GPU of an enabled vendor, else -ENOENT. */
int gpu_config_vendor(const gpu_config *c, const kdp_pci_device *p);
/* Whether a PCI function that could not be read may be a GPU: its vendor ID (0: not read) is a GPU vendor's. */
bool gpu_config_may_be_gpu(uint16_t vendor_id);
/* The vendor's name ("amd") of a GPU whose vendor gpu.vendors leaves out, else NULL. */
const char *gpu_config_vendor_off(const gpu_config *c, const kdp_pci_device *p);
/* allow (empty: all) and not deny. */
bool gpu_config_allows(const gpu_config *c, const kdp_pci_device *p);
/* Why allow/deny filter the GPU out ("not in gpu.allow", "in gpu.deny"), NULL when they let it through. */
const char *gpu_config_filtered(const gpu_config *c, const kdp_pci_device *p);
/* The driver a vendor's GPUs are served with (Intel: i915 or xe). */
bool gpu_driver_expected(gpu_vendor v, const char *driver);
/* The resource of a GPU: its model's, else its vendor's (Intel: by driver). */
const char *gpu_config_resource(const gpu_config *c, gpu_vendor v, const kdp_pci_device *p);
/*
 * The resource of an AMD partition in mixed mode: "<domain of amd_resource>/<mode>" ("amd.com/cpx_nps4")
 * into ret; -ENAMETOOLONG when it does not fit.
 */
int gpu_config_mixed_resource(const gpu_config *c, const char *mode, char *ret, size_t size);
/*
 * The most devices replicas make of one resource (its GPUs, partitions or MIG devices times their
 * replicas): 16384 IDs of up to 63 characters keep a ListAndWatch answer well under the 4 MiB the
 * kubelet takes in one message (docs/kubelet.md).
 */
#define GPU_REPLICA_DEVICES_MAX 16384
/* How many IDs each GPU of `resource` is advertised as (1: no sharing). */
unsigned gpu_config_replicas(const gpu_config *c, const char *resource);

/* ---- nvidia.c ---- */

typedef struct nvidia_info {
        char uuid[GPU_UUID_MAX];        /* "GPU-5f1b3a7e-..."; "" when the driver has none cached */
        unsigned minor;                 /* /dev/nvidia<minor> */
        bool excluded;                  /* "GPU Excluded: Yes" (NVreg_ExcludedGpus) */
} nvidia_info;

/*
 * Parses the text of an `information` file. -EBADMSG without "Bus Location"/"Device Minor" or when they
 * disagree with `bdf`; then *reterr_why (may be NULL) says what is wrong (static text).
 */
int nvidia_parse_information(const char *text, const char *bdf, nvidia_info *ret, const char **reterr_why);
/* Reads <proc root>/<rel> (a procfs file of the NVIDIA driver) into *ret; -ENOENT when there is none. */
int nvidia_read_proc(const kdp_backend_ctx *ctx, const char *rel, char **ret);
/* Reads <proc root>/driver/nvidia/gpus/<bdf>/information; -ENOENT when the driver lists no such GPU. */
int nvidia_read_information(const kdp_backend_ctx *ctx, const char *bdf, nvidia_info *ret, const char **reterr_why);
/* The node-wide NVIDIA nodes a container needs beside /dev/nvidia<minor>, in this order. */
extern const char *const nvidia_shared_nodes[];

/* ---- amd.c ---- */

typedef struct amd_kfd_node {
        char bdf[KDP_PCI_ADDRESS_MAX];          /* its GPU's PCI address (function 0) */
        unsigned partition;                     /* location_id & 7: the compute partition (0 in SPX) */
        unsigned render_minor;                  /* drm_render_minor: /dev/dri/renderD<minor> */
} amd_kfd_node;

typedef struct amd_kfd {
        amd_kfd_node *nodes;                    /* GPU nodes of the topology */
        size_t n;
        bool present;                           /* the topology directory exists (amdgpu loaded with KFD) */
} amd_kfd;

/* Parses one KFD node `properties` text: 1 and *ret for a GPU node, 0 for a CPU node, -ENOENT/-EBADMSG. */
int amd_kfd_parse_properties(const char *text, amd_kfd_node *ret);
/* Reads <sysfs>/class/kfd/kfd/topology/nodes/<n>/properties for every node. */
int amd_kfd_read(const kdp_backend_ctx *ctx, amd_kfd *ret);
bool amd_kfd_has(const amd_kfd *kfd, const char *bdf);
/* The nodes of GPU `bdf`, one per partition, by partition index (at most `max`); their number. */
size_t amd_kfd_partitions(const amd_kfd *kfd, const char *bdf, const amd_kfd_node **ret, size_t max);
void amd_kfd_done(amd_kfd *kfd);
/*
 * "cpx_nps4" of current_compute_partition "CPX" and current_memory_partition "NPS4" (the name
 * AMD's device plugin gives the resource of such partitions); -EBADMSG for a mode it does not know.
 */
int amd_partition_mode(const char *compute, const char *memory, char *ret, size_t size);

/* ---- share.c ---- */

#define GPU_REPLICA_SEP "::"

/* The physical ID of a (replica) ID: length of the part before "::" (the whole length without one). */
size_t gpu_replica_base_len(const char *id);


/*
 * Chooses req->size IDs of req->available (must_include first) by `policy`
 * and appends them to resp. Only for resources with replicas; -EINVAL when
 * the request cannot be met (the framework then chooses).
 */
int gpu_replicas_preferred(gpu_replica_policy policy, const kdp_pref_request *req, kdp_pref_response *resp);

/* ---- nvlink.c ---- */

#define GPU_NVLINKS_MAX 18              /* NVML_NVLINK_MAX_LINKS */
/* The most score steps of one pick (candidate sets × devices added): 15 GPUs, 7 of them, fit. */
#define GPU_NVLINK_SETS_MAX 65536

typedef struct gpu_nvml gpu_nvml;

/*
 * The remote PCI address of each active NVLink of GPU `bdf` (one entry per link, so a peer
 * joined by 4 links is there 4 times), at most `max`, into ret; a link that is down, or whose
 * state or remote NVML cannot say, is left out. The gpu_nvml_errno() of the handle lookup.
 */
int gpu_nvlink_read(gpu_nvml *n, const char *bdf, char (*ret)[KDP_PCI_ADDRESS_MAX], size_t max, size_t *ret_n);

/* A candidate of a pick: what places it (borrowed). */
typedef struct gpu_nvlink_gpu {
        const char *id;                 /* its device ID: the framework orders devices by it */
        int numa_node;                  /* -1: none */
        const char *pci_path;           /* "pci0000:15/0000:15:01.0/..."; NULL: unknown */
} gpu_nvlink_gpu;

/*
 * The framework's objective (framework/src/daemon/preferred.h) with NVLink: gpus[0, n_must)
 * are M, gpus[n_must, n) are A, links[i * n + j] the active links joining gpus i and j
 * (symmetric, 0 on the diagonal). Writes the m indices of the best F, by ascending ID, to ret.
 * A pair is closer by more links, then by the framework's closeness (NUMA node, then the PCI
 * path components in common); the sets compare by 1. their worst pair, 2. the links, 3. the
 * closeness summed over their pairs, 4. the links, then the closeness, summed over the pairs of
 * A \ F (what stays free), 5. the lowest IDs. Without links that is the framework's answer.
 * -EINVAL unless 0 < m < n - n_must; -E2BIG when the sets to weigh exceed GPU_NVLINK_SETS_MAX;
 * -ENOMEM.
 */
int gpu_nvlink_pick(const gpu_nvlink_gpu *gpus, size_t n, size_t n_must, const unsigned *links, size_t m,
                    size_t *ret);
