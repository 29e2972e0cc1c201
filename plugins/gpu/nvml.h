/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NVIDIA's management library (NVML), loaded at run time when the node has it.
 *
 *   gpu.c --gpu_nvml_open(path)--> dlopen(libnvidia-ml.so.1) + dlsym + nvmlInit_v2 --> gpu_nvml
 *   gpu.c --gpu_nvml_events_start()--> worker thread: nvmlEventSetWait_v2 --queue + eventfd-->
 *         kdpd's loop (gpu.c watches the fd) --gpu_nvml_events_drain()--> gpu_xid records
 *
 * kdp has no build-time dependency on NVML: the few types, constants and
 * entry points it uses are declared below from NVML's public API reference
 * (nvml.h of the CUDA toolkit, "NVML API Reference Guide"): names, argument
 * lists, struct layouts and return codes must match the library's ABI
 * exactly, so never reorder or resize them. The fake library of the tests
 * (tests/nvml/fake-nvml.c) implements the same declarations.
 *
 * gpu_nvml owns the dlopen handle and NVML's initialisation (one nvmlInit_v2,
 * one nvmlShutdown). gpu_nvml_events owns its event set, its thread, its
 * eventfd and its queue; it borrows the gpu_nvml, which must outlive it. The
 * worker thread calls only nvmlEventSetWait_v2 and touches only the queue
 * (under its mutex); everything else runs on the loop thread.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kdp/cleanup.h>
#include <kdp/pci.h>

#include "xid.h"

/* ---- the NVML ABI (our declarations) ---- */

typedef enum nvmlReturn_enum {
        NVML_SUCCESS = 0,
        NVML_ERROR_UNINITIALIZED = 1,
        NVML_ERROR_INVALID_ARGUMENT = 2,
        NVML_ERROR_NOT_SUPPORTED = 3,
        NVML_ERROR_NO_PERMISSION = 4,
        NVML_ERROR_ALREADY_INITIALIZED = 5,
        NVML_ERROR_NOT_FOUND = 6,
        NVML_ERROR_INSUFFICIENT_SIZE = 7,
        NVML_ERROR_INSUFFICIENT_POWER = 8,
        NVML_ERROR_DRIVER_NOT_LOADED = 9,
        NVML_ERROR_TIMEOUT = 10,
        NVML_ERROR_IRQ_ISSUE = 11,
        NVML_ERROR_LIBRARY_NOT_FOUND = 12,
        NVML_ERROR_FUNCTION_NOT_FOUND = 13,
        NVML_ERROR_CORRUPTED_INFOROM = 14,
        NVML_ERROR_GPU_IS_LOST = 15,
        NVML_ERROR_RESET_REQUIRED = 16,
        NVML_ERROR_OPERATING_SYSTEM = 17,
        NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
        NVML_ERROR_IN_USE = 19,
        NVML_ERROR_MEMORY = 20,
        NVML_ERROR_NO_DATA = 21,
        NVML_ERROR_VGPU_ECC_NOT_ENABLED = 22,
        NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
        NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
        NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
        NVML_ERROR_DEPRECATED = 26,
        NVML_ERROR_NOT_READY = 27,
        NVML_ERROR_GPU_NOT_FOUND = 28,
        NVML_ERROR_INVALID_STATE = 29,
        NVML_ERROR_UNKNOWN = 999,
} nvmlReturn_t;

typedef struct nvmlDevice_st *nvmlDevice_t;            /* opaque handles */
typedef struct nvmlEventSet_st *nvmlEventSet_t;
typedef struct nvmlGpuInstance_st *nvmlGpuInstance_t;

typedef enum nvmlEnableState_enum {
        NVML_FEATURE_DISABLED = 0,
        NVML_FEATURE_ENABLED = 1,
} nvmlEnableState_t;

#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32          /* busId: "00000000:18:00.0" */
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_NVLINK_MAX_LINKS 18
#define NVML_DEVICE_MIG_ENABLE 1

typedef struct nvmlPciInfo_st {
        char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
        unsigned int domain;
        unsigned int bus;
        unsigned int device;
        unsigned int pciDeviceId;                       /* device ID << 16 | vendor ID */
        unsigned int pciSubSystemId;
        char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

/* A MIG device's share of its GPU (nvmlDeviceGetAttributes on a MIG handle). */
typedef struct nvmlDeviceAttributes_st {
        unsigned int multiprocessorCount;
        unsigned int sharedCopyEngineCount;
        unsigned int sharedDecoderCount;
        unsigned int sharedEncoderCount;
        unsigned int sharedJpegCount;
        unsigned int sharedOfaCount;
        unsigned int gpuInstanceSliceCount;
        unsigned int computeInstanceSliceCount;
        unsigned long long memorySizeMB;
} nvmlDeviceAttributes_t;

typedef struct nvmlMemory_st {
        unsigned long long total;                       /* bytes */
        unsigned long long free;
        unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlGpuInstancePlacement_st {
        unsigned int start;
        unsigned int size;
} nvmlGpuInstancePlacement_t;

/* A GPU instance (nvmlGpuInstanceGetInfo): its profile ID says which variant of a size it is. */
typedef struct nvmlGpuInstanceInfo_st {
        nvmlDevice_t device;                            /* the parent GPU */
        unsigned int id;
        unsigned int profileId;                         /* NVML_GPU_INSTANCE_PROFILE_* */
        nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;

/* The GPU instance profile IDs (nvmlGpuInstanceInfo_t.profileId). */
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE 0x0
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE 0x1
#define NVML_GPU_INSTANCE_PROFILE_3_SLICE 0x2
#define NVML_GPU_INSTANCE_PROFILE_4_SLICE 0x3
#define NVML_GPU_INSTANCE_PROFILE_7_SLICE 0x4
#define NVML_GPU_INSTANCE_PROFILE_8_SLICE 0x5
#define NVML_GPU_INSTANCE_PROFILE_6_SLICE 0x6
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 0x7      /* with media extensions: "+me" */
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1 0x8      /* "+me" */
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 0x9      /* twice the memory, no suffix */
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX 0xA       /* "+gfx" */
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX 0xB
#define NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX 0xC
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME 0xD     /* "-me" */
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME 0xE
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME 0xF    /* "+me.all" */
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME 0x10

#define nvmlEventTypeXidCriticalError 0x0000000000000008ULL

typedef struct nvmlEventData_st {
        nvmlDevice_t device;
        unsigned long long eventType;
        unsigned long long eventData;                   /* the Xid, for nvmlEventTypeXidCriticalError */
        unsigned int gpuInstanceId;                     /* MIG; 0xFFFFFFFF when the event is the whole GPU's */
        unsigned int computeInstanceId;
} nvmlEventData_t;

#define GPU_NVML_NO_INSTANCE 0xFFFFFFFFu

/* The exported names (the _v2/_v3 suffixes are the ABI versions nvml.h maps the short names to). */
#define GPU_NVML_FUNCTIONS(X) \
        X(nvmlInit_v2, nvmlReturn_t, (void)) \
        X(nvmlShutdown, nvmlReturn_t, (void)) \
        X(nvmlErrorString, const char *, (nvmlReturn_t result)) \
        X(nvmlDeviceGetCount_v2, nvmlReturn_t, (unsigned int *deviceCount)) \
        X(nvmlDeviceGetHandleByIndex_v2, nvmlReturn_t, (unsigned int index, nvmlDevice_t *device)) \
        X(nvmlDeviceGetHandleByPciBusId_v2, nvmlReturn_t, (const char *pciBusId, nvmlDevice_t *device)) \
        X(nvmlDeviceGetUUID, nvmlReturn_t, (nvmlDevice_t device, char *uuid, unsigned int length)) \
        X(nvmlDeviceGetPciInfo_v3, nvmlReturn_t, (nvmlDevice_t device, nvmlPciInfo_t *pci)) \
        X(nvmlDeviceGetMigMode, nvmlReturn_t, (nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode)) \
        X(nvmlDeviceGetMaxMigDeviceCount, nvmlReturn_t, (nvmlDevice_t device, unsigned int *count)) \
        X(nvmlDeviceGetMigDeviceHandleByIndex, nvmlReturn_t, (nvmlDevice_t device, unsigned int index, nvmlDevice_t *migDevice)) \
        X(nvmlDeviceGetGpuInstanceId, nvmlReturn_t, (nvmlDevice_t device, unsigned int *id)) \
        X(nvmlDeviceGetComputeInstanceId, nvmlReturn_t, (nvmlDevice_t device, unsigned int *id)) \
        X(nvmlDeviceGetAttributes_v2, nvmlReturn_t, (nvmlDevice_t device, nvmlDeviceAttributes_t *attributes)) \
        X(nvmlDeviceGetMemoryInfo, nvmlReturn_t, (nvmlDevice_t device, nvmlMemory_t *memory)) \
        X(nvmlDeviceGetGpuInstanceById, nvmlReturn_t, (nvmlDevice_t device, unsigned int id, nvmlGpuInstance_t *gpuInstance)) \
        X(nvmlGpuInstanceGetInfo, nvmlReturn_t, (nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t *info)) \
        X(nvmlEventSetCreate, nvmlReturn_t, (nvmlEventSet_t *set)) \
        X(nvmlDeviceRegisterEvents, nvmlReturn_t, (nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set)) \
        X(nvmlEventSetWait_v2, nvmlReturn_t, (nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)) \
        X(nvmlEventSetFree, nvmlReturn_t, (nvmlEventSet_t set)) \
        X(nvmlDeviceGetNvLinkState, nvmlReturn_t, (nvmlDevice_t device, unsigned int link, nvmlEnableState_t *isActive)) \
        X(nvmlDeviceGetNvLinkRemotePciInfo_v2, nvmlReturn_t, (nvmlDevice_t device, unsigned int link, nvmlPciInfo_t *pci))

/* ---- the loader ---- */

#define GPU_NVML_DEFAULT_LIBRARY "libnvidia-ml.so.1"

typedef struct gpu_nvml {
        void *dl;
        bool initialised;                       /* nvmlInit_v2 succeeded: free calls nvmlShutdown */
#define GPU_NVML_MEMBER(name, ret, args) ret (*name) args;
        GPU_NVML_FUNCTIONS(GPU_NVML_MEMBER)
#undef GPU_NVML_MEMBER
} gpu_nvml;

/*
 * dlopen()s `path` (a bare name goes through the loader's search path, as
 * libnvidia-ml.so.1 does on a node with NVIDIA's driver), resolves every
 * function above and calls nvmlInit_v2. Errors: -ENOENT when the library
 * cannot be loaded (no driver: the normal case on most nodes), -ENOSYS when
 * it lacks one of the functions (a driver older than the ABI we use), and
 * gpu_nvml_errno() of nvmlInit_v2's code when it fails. *reterr_why (may be
 * NULL) then points at text that says why: dlerror()'s text, the missing
 * symbol's name or a copy of nvmlErrorString()'s text; it stays valid until
 * the thread's next call.
 */
int gpu_nvml_open(const char *path, gpu_nvml **ret, const char **reterr_why);
/* nvmlShutdown + dlclose; NULL-safe, returns NULL. */
gpu_nvml *gpu_nvml_free(gpu_nvml *n);
KDP_DEFINE_CLEANUP_FUNC(gpu_nvml, gpu_nvml_free)

/*
 * An NVML code as a negative errno (0 for NVML_SUCCESS): NOT_SUPPORTED ->
 * -EOPNOTSUPP, NO_PERMISSION -> -EACCES, NOT_FOUND/GPU_NOT_FOUND -> -ENOENT,
 * GPU_IS_LOST -> -ENODEV, TIMEOUT -> -ETIMEDOUT, UNINITIALIZED/
 * DRIVER_NOT_LOADED -> -ENXIO, LIB_RM_VERSION_MISMATCH -> -EPROTO,
 * INSUFFICIENT_SIZE -> -ENOBUFS, MEMORY -> -ENOMEM, INVALID_ARGUMENT ->
 * -EINVAL, IN_USE -> -EBUSY, NOT_READY/RESET_REQUIRED -> -EAGAIN, anything else -> -EIO.
 */
int gpu_nvml_errno(nvmlReturn_t r);
/* The library's text for `r`, or "unknown NVML error" when it has none. */
const char *gpu_nvml_strerror(const gpu_nvml *n, nvmlReturn_t r);

/* A PCI address "0000:18:00.0" (kdp_pci_device.address form) from NVML's busId ("00000000:18:00.0"). -EINVAL when unparsable. */
int gpu_nvml_bdf(const nvmlPciInfo_t *pci, char ret[KDP_PCI_ADDRESS_MAX]);

/* ---- Xid events ---- */

typedef struct gpu_nvml_events gpu_nvml_events;

/*
 * Creates an event set, registers every GPU NVML lists for critical Xid
 * events and starts the worker thread. A GPU whose registration fails (not
 * supported, lost, ...) is skipped and counted in *ret_skipped; -ENODEV (no
 * set returned) when no GPU could be registered, else the code of the first
 * failing call. Waits at most `wait_ms` per nvmlEventSetWait_v2 call, which
 * bounds how long gpu_nvml_events_free() takes.
 */
int gpu_nvml_events_start(gpu_nvml *n, unsigned wait_ms, gpu_nvml_events **ret, unsigned *ret_skipped);
/* Stops and joins the thread, frees the set; NULL-safe, returns NULL. */
gpu_nvml_events *gpu_nvml_events_free(gpu_nvml_events *e);
KDP_DEFINE_CLEANUP_FUNC(gpu_nvml_events, gpu_nvml_events_free)
/* The eventfd that becomes readable when events (or a wait error) are queued. */
int gpu_nvml_events_fd(const gpu_nvml_events *e);
/* How many GPUs are registered. */
size_t gpu_nvml_events_n_gpus(const gpu_nvml_events *e);

/*
 * Takes what the thread queued: fn(userdata, xid, false) for each Xid event,
 * in order (bdf from the registered GPU, code, MIG instance IDs or -1,
 * seq = event number from 1, ts_usec 0). Returns the number of Xids, and
 * the NVML code of the last wait that failed with anything but a timeout
 * since the previous drain in *ret_wait_error (NVML_SUCCESS: none).
 */
int gpu_nvml_events_drain(gpu_nvml_events *e, gpu_xid_fn fn, void *userdata, nvmlReturn_t *ret_wait_error);
