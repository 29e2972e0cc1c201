/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NVIDIA MIG devices (gpu.mig_strategy single or mixed): what NVML lists of a
 * GPU's MIG layout, the profile names, and the capability files that give a
 * MIG device's /dev/nvidia-caps nodes.
 *
 *   gpu.c --gpu_mig_query(nvml, bdf)--> NVML: MIG mode, each MIG device's UUID,
 *         GPU/compute instance IDs, profile --> gpu_mig_layout (the caller's)
 *   gpu.c --gpu_mig_read_access(minor, gi, ci)--> <proc>/driver/nvidia/capabilities/
 *         gpu<minor>/mig/gi<G>[/ci<C>]/access --> the nvidia-cap<N> minor
 *
 * Nothing here keeps state: the NVML handles live for one call, the caller
 * owns every result.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <kdp/backend.h>

#include "gpu.h"
#include "nvml.h"

#define GPU_MIG_MAX 8                   /* nvmlDeviceGetMaxMigDeviceCount: 7 on A100, H100, B200 */
#define GPU_MIG_PROFILE_MAX 32          /* "1c.3g.40gb+me.all" */
/*
 * A MIG UUID as NVML gives it, up to NVML's largest: "MIG-<uuid>" (40 characters) since R470,
 * "MIG-GPU-<GPU uuid>/<gi>/<ci>" (48 and more) from R450 to R465.
 */
#define GPU_MIG_UUID_MAX NVML_DEVICE_UUID_V2_BUFFER_SIZE

typedef struct gpu_mig_device {
        char uuid[GPU_MIG_UUID_MAX];            /* "MIG-...", "MIG-GPU-.../<gi>/<ci>" */
        unsigned gi, ci;                        /* GPU instance and compute instance IDs */
        char profile[GPU_MIG_PROFILE_MAX];      /* NVIDIA's name: "1g.10gb", "1c.3g.40gb", "1g.10gb+me" */
} gpu_mig_device;

typedef struct gpu_mig_layout {
        bool enabled;                           /* MIG mode is on now (not just pending) */
        gpu_mig_device devices[GPU_MIG_MAX];    /* by MIG index */
        size_t n;
} gpu_mig_layout;

/*
 * The MIG layout of the GPU at PCI address `bdf`. A GPU that does not support
 * MIG (nvmlDeviceGetMigMode NOT_SUPPORTED) has it off. On failure returns
 * gpu_nvml_errno() of the failing call and sets *reterr_call to its name and
 * *reterr_code to its NVML code; for an answer that is not one we can serve
 * (NVML said SUCCESS) -EBADMSG, *reterr_code NVML_ERROR_UNKNOWN and *reterr_why
 * what is wrong with it (static text; NULL for a failed call). Each may be NULL.
 */
int gpu_mig_query(const gpu_nvml *n, const char *bdf, gpu_mig_layout *ret, const char **reterr_call,
                  nvmlReturn_t *reterr_code, const char **reterr_why);

/*
 * NVIDIA's profile name of a MIG device: "[<C>c.]<G>g.<GB>gb[+me|+me.all|+gfx|-me]" from its GPU
 * instance's profile ID (the slices and the suffix; an unknown ID: `gi_slices`, no suffix), its
 * compute instance's slices, its memory (MiB) and its GPU's total memory (bytes), the memory
 * rounded as nvidia-smi and NVIDIA's device plugin do (up to an eighth of the GPU, times the
 * GPU's GiB rounded up, to the nearest GB). -EINVAL for zero slices or memory, -ENAMETOOLONG.
 */
int gpu_mig_profile_name(unsigned gi_profile, unsigned gi_slices, unsigned ci_slices, unsigned long long mig_mib,
                         unsigned long long total_bytes, char *ret, size_t size);

/*
 * The resource of a MIG profile under mig_strategy mixed: "<domain of nvidia_resource>/mig-<profile>"
 * with '+' as '.' ('+' is not allowed in a resource name): "nvidia.com/mig-1g.10gb.me".
 */
int gpu_mig_resource(const char *nvidia_resource, const char *profile, char *ret, size_t size);

/*
 * A capability file's text ("DeviceFileMinor: 12\nDeviceFileMode: 292\nDeviceFileModify: 1\n"):
 * its minor. -EBADMSG when the DeviceFileMinor line is missing, repeated or not a number up to
 * 1048575 (then *reterr_why, may be NULL, says what is wrong: static text).
 */
int gpu_mig_parse_access(const char *text, unsigned *ret_minor, const char **reterr_why);

/*
 * Reads <proc>/driver/nvidia/capabilities/gpu<gpu_minor>/mig/gi<gi>/access (ci < 0) or
 * .../gi<gi>/ci<ci>/access: the minor of /dev/nvidia-caps/nvidia-cap<minor>. -ENOENT when the
 * instance has no such file; -EBADMSG as gpu_mig_parse_access().
 */
int gpu_mig_read_access(const kdp_backend_ctx *ctx, unsigned gpu_minor, unsigned gi, int ci, unsigned *ret_minor,
                        const char **reterr_why);
