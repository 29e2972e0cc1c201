/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A fake libnvidia-ml.so.1 for the tests: the NVML calls kdp uses (plugins/gpu/nvml.h declares
 * them), answering from the fixture file that $KDP_FAKE_NVML names. nvmlInit_v2 reads it; one line
 * each, '#' starts a comment, BDFs are "0000:18:00.0":
 *
 *   gpu BDF UUID [device=0x2330] [mig=0|1] [pending=0|1] [maxmig=N] [mem=MB]
 *                                              mem: nvmlDeviceGetMemoryInfo's total (default
 *                                              81559, an H100 80GB)
 *   mig BDF GI CI UUID SLICES MEMORY_MB [profile=ID] [cislices=N]
 *                                              a MIG device of GPU BDF (in order of index) in GPU
 *                                              instance GI (SLICES slices, MEMORY_MB; profile: its
 *                                              NVML_GPU_INSTANCE_PROFILE_* ID in hex, by default the plain
 *                                              one of SLICES) and compute instance CI (cislices:
 *                                              its slices, default SLICES)
 *   nvlink BDF LINK up|down REMOTE_BDF         link LINK of GPU BDF; a later line for the same
 *                                              BDF and LINK replaces it (a link that goes down)
 *   fail FUNCTION CODE [BDF]                   FUNCTION (its exported name) returns CODE, e.g.
 *                                              "fail nvmlDeviceGetUUID GPU_IS_LOST 0000:18:00.0";
 *                                              "fail nvmlInit_v2 NO_PERMISSION"
 *   clear FUNCTION                             drops the fail lines of FUNCTION
 *   event BDF XID [GI CI]                      a critical Xid that nvmlEventSetWait_v2 returns
 *   events FIFO                                more lines (event, fail, clear, nvlink) are read from FIFO
 *                                              while nvmlEventSetWait_v2 waits
 *
 * The file is read again when it changed (size, time or inode) at the next nvmlDeviceGetCount_v2
 * or nvmlDeviceGetHandleByPciBusId_v2, as the real library sees MIG instances created and destroyed
 * while it runs: gpu, mig, nvlink, fail and clear lines are taken anew (keep the gpu lines in
 * their order: a GPU's handle is its line's place), event and events lines only at nvmlInit_v2.
 *
 * CODE is an nvmlReturn_t name without NVML_ERROR_ (SUCCESS, NOT_SUPPORTED, GPU_IS_LOST, ...) or
 * a number. Without $KDP_FAKE_NVML, nvmlInit_v2 returns DRIVER_NOT_LOADED; a malformed fixture
 * gives UNKNOWN (and a message on stderr). Calls before nvmlInit_v2 or after the last
 * nvmlShutdown return UNINITIALIZED, as the real library does.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nvml.h"

#define EXPORT __attribute__((visibility("default")))
/* our declarations of the ABI: a signature here that differs from nvml.h's does not compile */
#define FAKE_PROTOTYPE(name, ret, args) EXPORT ret name args;
GPU_NVML_FUNCTIONS(FAKE_PROTOTYPE)
#undef FAKE_PROTOTYPE

#define MAX_GPUS 16
#define MAX_MIGS 64
#define MAX_LINKS 64
#define MAX_FAILS 64
#define MAX_EVENTS 256

typedef struct nvmlDevice_st {
        int gpu;                        /* index in gpus[] */
        int mig;                        /* index in migs[], -1 for a GPU */
} fake_handle;

typedef struct fake_gpu {
        char bdf[32], uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
        unsigned device_id, mig, pending, maxmig;
        unsigned long long mem_mb;
        fake_handle handle;
        bool registered;
} fake_gpu;

struct nvmlGpuInstance_st {
        int gpu;
        unsigned id, profile;
};

typedef struct fake_mig {
        int gpu;
        unsigned gi, ci, slices, ci_slices;
        unsigned long long memory_mb;
        char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
        fake_handle handle;
        struct nvmlGpuInstance_st instance;
} fake_mig;

typedef struct fake_link {
        int gpu;
        unsigned link;
        bool up;
        char remote[32];
} fake_link;

typedef struct fake_fail {
        char function[64];
        int gpu;                        /* -1: every call */
        nvmlReturn_t code;
} fake_fail;

typedef struct fake_event {
        int gpu;
        unsigned xid, gi, ci;
} fake_event;

struct nvmlEventSet_st {
        int unused;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int n_init;
static fake_gpu gpus[MAX_GPUS];
static fake_mig migs[MAX_MIGS];
static fake_link links[MAX_LINKS];
static fake_fail fails[MAX_FAILS];
static fake_event events[MAX_EVENTS];
static size_t n_gpus, n_migs, n_links, n_fails, n_events, next_event;
static int fifo = -1;
static bool reloading;                  /* reading the file again: no event or events lines */
static struct stat loaded;              /* the file as last read */
static char fifo_buf[4096];
static size_t fifo_len;

static const struct {
        const char *name;
        nvmlReturn_t code;
} codes[] = {
        { "SUCCESS", NVML_SUCCESS },
        { "UNINITIALIZED", NVML_ERROR_UNINITIALIZED },
        { "INVALID_ARGUMENT", NVML_ERROR_INVALID_ARGUMENT },
        { "NOT_SUPPORTED", NVML_ERROR_NOT_SUPPORTED },
        { "NO_PERMISSION", NVML_ERROR_NO_PERMISSION },
        { "ALREADY_INITIALIZED", NVML_ERROR_ALREADY_INITIALIZED },
        { "NOT_FOUND", NVML_ERROR_NOT_FOUND },
        { "INSUFFICIENT_SIZE", NVML_ERROR_INSUFFICIENT_SIZE },
        { "INSUFFICIENT_POWER", NVML_ERROR_INSUFFICIENT_POWER },
        { "DRIVER_NOT_LOADED", NVML_ERROR_DRIVER_NOT_LOADED },
        { "TIMEOUT", NVML_ERROR_TIMEOUT },
        { "IRQ_ISSUE", NVML_ERROR_IRQ_ISSUE },
        { "LIBRARY_NOT_FOUND", NVML_ERROR_LIBRARY_NOT_FOUND },
        { "FUNCTION_NOT_FOUND", NVML_ERROR_FUNCTION_NOT_FOUND },
        { "CORRUPTED_INFOROM", NVML_ERROR_CORRUPTED_INFOROM },
        { "GPU_IS_LOST", NVML_ERROR_GPU_IS_LOST },
        { "RESET_REQUIRED", NVML_ERROR_RESET_REQUIRED },
        { "OPERATING_SYSTEM", NVML_ERROR_OPERATING_SYSTEM },
        { "LIB_RM_VERSION_MISMATCH", NVML_ERROR_LIB_RM_VERSION_MISMATCH },
        { "IN_USE", NVML_ERROR_IN_USE },
        { "MEMORY", NVML_ERROR_MEMORY },
        { "NO_DATA", NVML_ERROR_NO_DATA },
        { "VGPU_ECC_NOT_ENABLED", NVML_ERROR_VGPU_ECC_NOT_ENABLED },
        { "INSUFFICIENT_RESOURCES", NVML_ERROR_INSUFFICIENT_RESOURCES },
        { "FREQ_NOT_SUPPORTED", NVML_ERROR_FREQ_NOT_SUPPORTED },
        { "ARGUMENT_VERSION_MISMATCH", NVML_ERROR_ARGUMENT_VERSION_MISMATCH },
        { "DEPRECATED", NVML_ERROR_DEPRECATED },
        { "NOT_READY", NVML_ERROR_NOT_READY },
        { "GPU_NOT_FOUND", NVML_ERROR_GPU_NOT_FOUND },
        { "INVALID_STATE", NVML_ERROR_INVALID_STATE },
        { "UNKNOWN", NVML_ERROR_UNKNOWN },
};

static int parse_code(const char *text, nvmlReturn_t *ret) {
        char *end;
        long v;

        for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
                if (strcmp(text, codes[i].name) == 0) {
                        *ret = codes[i].code;
                        return 0;
                }
        v = strtol(text, &end, 0);
        if (!*text || *end || v < 0)
                return -EINVAL;
        *ret = (nvmlReturn_t) v;
        return 0;
}

static int find_gpu(const char *bdf) {
        for (size_t i = 0; i < n_gpus; i++)
                if (strcasecmp(gpus[i].bdf, bdf) == 0)
                        return (int) i;
        return -1;
}

/* One fixture line; -EINVAL when malformed. Called with the lock held. */
static int parse_line(char *line) {
        char *w[12] = { 0 }, *state = NULL;
        size_t n = 0;

        if (strchr(line, '#'))
                *strchr(line, '#') = '\0';
        for (char *t = strtok_r(line, " \t\r\n", &state); t && n < 12; t = strtok_r(NULL, " \t\r\n", &state))
                w[n++] = t;
        if (n == 0)
                return 0;
        if (strcmp(w[0], "gpu") == 0 && n >= 3 && n_gpus < MAX_GPUS) {
                fake_gpu *g = &gpus[n_gpus];

                *g = (fake_gpu){ .device_id = 0x2330, .mem_mb = 81559, .handle = { .gpu = (int) n_gpus, .mig = -1 } };
                snprintf(g->bdf, sizeof(g->bdf), "%s", w[1]);
                snprintf(g->uuid, sizeof(g->uuid), "%s", w[2]);
                for (size_t i = 3; i < n; i++)
                        if (sscanf(w[i], "device=%x", &g->device_id) != 1 && sscanf(w[i], "mig=%u", &g->mig) != 1 &&
                            sscanf(w[i], "pending=%u", &g->pending) != 1 && sscanf(w[i], "maxmig=%u", &g->maxmig) != 1 &&
                            sscanf(w[i], "mem=%llu", &g->mem_mb) != 1)
                                return -EINVAL;
                n_gpus++;
                return 0;
        }
        if (strcmp(w[0], "mig") == 0 && n >= 7 && n_migs < MAX_MIGS && find_gpu(w[1]) >= 0) {
                static const unsigned plain[9] = { 0, NVML_GPU_INSTANCE_PROFILE_1_SLICE, NVML_GPU_INSTANCE_PROFILE_2_SLICE,
                                                   NVML_GPU_INSTANCE_PROFILE_3_SLICE, NVML_GPU_INSTANCE_PROFILE_4_SLICE,
                                                   0, NVML_GPU_INSTANCE_PROFILE_6_SLICE,
                                                   NVML_GPU_INSTANCE_PROFILE_7_SLICE, NVML_GPU_INSTANCE_PROFILE_8_SLICE };
                fake_mig *m = &migs[n_migs];

                *m = (fake_mig){ .gpu = find_gpu(w[1]), .handle = { .gpu = find_gpu(w[1]), .mig = (int) n_migs } };
                m->gi = (unsigned) strtoul(w[2], NULL, 10);
                m->ci = (unsigned) strtoul(w[3], NULL, 10);
                snprintf(m->uuid, sizeof(m->uuid), "%s", w[4]);
                m->slices = m->ci_slices = (unsigned) strtoul(w[5], NULL, 10);
                m->memory_mb = strtoull(w[6], NULL, 10);
                m->instance = (struct nvmlGpuInstance_st){ .gpu = m->gpu, .id = m->gi,
                                                           .profile = m->slices < 9 ? plain[m->slices] : 0 };
                for (size_t i = 7; i < n; i++)
                        if (sscanf(w[i], "profile=%x", &m->instance.profile) != 1 &&
                            sscanf(w[i], "cislices=%u", &m->ci_slices) != 1)
                                return -EINVAL;
                n_migs++;
                return 0;
        }
        if (strcmp(w[0], "nvlink") == 0 && n == 5 && find_gpu(w[1]) >= 0) {
                fake_link l = { .gpu = find_gpu(w[1]), .link = (unsigned) strtoul(w[2], NULL, 10),
                                .up = strcmp(w[3], "up") == 0 };
                size_t i = 0;

                while (i < n_links && (links[i].gpu != l.gpu || links[i].link != l.link))
                        i++;            /* a later line for the same link replaces the earlier one */
                if (i == MAX_LINKS)
                        return -EINVAL;
                snprintf(l.remote, sizeof(l.remote), "%s", w[4]);
                links[i] = l;
                n_links += i == n_links;
                return 0;
        }
        if (strcmp(w[0], "fail") == 0 && (n == 3 || n == 4) && n_fails < MAX_FAILS) {
                fake_fail *f = &fails[n_fails];

                *f = (fake_fail){ .gpu = n == 4 ? find_gpu(w[3]) : -1 };
                snprintf(f->function, sizeof(f->function), "%s", w[1]);
                if (parse_code(w[2], &f->code) < 0 || (n == 4 && f->gpu < 0))
                        return -EINVAL;
                n_fails++;
                return 0;
        }
        if (strcmp(w[0], "clear") == 0 && n == 2) {
                size_t k = 0;

                for (size_t i = 0; i < n_fails; i++)
                        if (strcmp(fails[i].function, w[1]) != 0)
                                fails[k++] = fails[i];
                n_fails = k;
                return 0;
        }
        if (reloading && (strcmp(w[0], "event") == 0 || strcmp(w[0], "events") == 0))
                return 0;
        if (strcmp(w[0], "event") == 0 && (n == 3 || n == 5) && n_events < MAX_EVENTS && find_gpu(w[1]) >= 0) {
                events[n_events++] = (fake_event){
                        .gpu = find_gpu(w[1]), .xid = (unsigned) strtoul(w[2], NULL, 10),
                        .gi = n == 5 ? (unsigned) strtoul(w[3], NULL, 10) : GPU_NVML_NO_INSTANCE,
                        .ci = n == 5 ? (unsigned) strtoul(w[4], NULL, 10) : GPU_NVML_NO_INSTANCE,
                };
                return 0;
        }
        if (strcmp(w[0], "events") == 0 && n == 2) {
                fifo = open(w[1], O_RDWR | O_NONBLOCK | O_CLOEXEC);   /* read-write: never end-of-file */
                return fifo < 0 ? -errno : 0;
        }
        return -EINVAL;
}

static void reset(void) {
        if (fifo >= 0)
                (void) close(fifo);
        fifo = -1;
        fifo_len = 0;
        n_gpus = n_migs = n_links = n_fails = n_events = next_event = 0;
}

static nvmlReturn_t load(void) {
        const char *path = getenv("KDP_FAKE_NVML");
        char line[512];
        unsigned no = 0;
        FILE *f;

        if (!path || !*path)
                return NVML_ERROR_DRIVER_NOT_LOADED;
        f = fopen(path, "re");
        if (!f) {
                fprintf(stderr, "fake-nvml: %s: %s\n", path, strerror(errno));
                return NVML_ERROR_UNKNOWN;
        }
        if (fstat(fileno(f), &loaded) < 0)
                loaded = (struct stat){ 0 };
        while (fgets(line, sizeof(line), f)) {
                no++;
                if (parse_line(line) < 0) {
                        fprintf(stderr, "fake-nvml: %s:%u: malformed line\n", path, no);
                        fclose(f);
                        reset();
                        return NVML_ERROR_UNKNOWN;
                }
        }
        fclose(f);
        return NVML_SUCCESS;
}

/*
 * Reads the file again when it changed since it was read: the GPUs, MIG devices, links and fail
 * lines it holds now (a GPU keeps its registration for events). A file that cannot be read or
 * parsed now leaves the last state. Lock held, after init.
 */
static void reload(void) {
        const char *path = getenv("KDP_FAKE_NVML");
        bool registered[MAX_GPUS] = { false };
        char bdfs[MAX_GPUS][32];
        size_t n_was = n_gpus;
        char line[512];
        struct stat st;
        FILE *f;

        if (!path || stat(path, &st) < 0 ||
            (st.st_ino == loaded.st_ino && st.st_size == loaded.st_size &&
             st.st_mtim.tv_sec == loaded.st_mtim.tv_sec && st.st_mtim.tv_nsec == loaded.st_mtim.tv_nsec))
                return;
        f = fopen(path, "re");
        if (!f)
                return;
        loaded = st;
        for (size_t i = 0; i < n_gpus; i++) {
                registered[i] = gpus[i].registered;
                memcpy(bdfs[i], gpus[i].bdf, sizeof(bdfs[i]));
        }
        n_gpus = n_migs = n_links = n_fails = 0;
        reloading = true;
        while (fgets(line, sizeof(line), f))
                if (parse_line(line) < 0)
                        fprintf(stderr, "fake-nvml: %s: malformed line on reload\n", path);
        reloading = false;
        fclose(f);
        for (size_t i = 0; i < n_gpus && i < n_was; i++)
                gpus[i].registered = strcmp(gpus[i].bdf, bdfs[i]) == 0 && registered[i];
}

/* The code a `fail` line gives this call, else NVML_SUCCESS; UNINITIALIZED before init. Lock held. */
static nvmlReturn_t failing(const char *function, int gpu) {
        if (n_init == 0)
                return NVML_ERROR_UNINITIALIZED;
        for (size_t i = 0; i < n_fails; i++)
                if (strcmp(fails[i].function, function) == 0 && (fails[i].gpu < 0 || fails[i].gpu == gpu))
                        return fails[i].code;
        return NVML_SUCCESS;
}

static int handle_gpu(nvmlDevice_t d) {
        return d ? d->gpu : -1;
}

#define ENTER(gpu) \
        nvmlReturn_t r_; \
        pthread_mutex_lock(&lock); \
        r_ = failing(__func__, (gpu)); \
        if (r_ != NVML_SUCCESS) { \
                pthread_mutex_unlock(&lock); \
                return r_; \
        }
#define LEAVE(code) \
        do { \
                pthread_mutex_unlock(&lock); \
                return (code); \
        } while (0)

EXPORT nvmlReturn_t nvmlInit_v2(void) {
        nvmlReturn_t r;

        pthread_mutex_lock(&lock);
        if (n_init > 0) {
                n_init++;
                LEAVE(NVML_SUCCESS);
        }
        r = load();
        if (r == NVML_SUCCESS) {
                n_init = 1;                     /* a fail line for nvmlInit_v2 counts once it is read */
                r = failing(__func__, -1);
                if (r != NVML_SUCCESS) {
                        n_init = 0;
                        reset();
                }
        }
        LEAVE(r);
}

EXPORT nvmlReturn_t nvmlShutdown(void) {
        ENTER(-1);
        if (--n_init == 0)
                reset();
        LEAVE(NVML_SUCCESS);
}

EXPORT const char *nvmlErrorString(nvmlReturn_t result) {
        for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
                if (codes[i].code == result)
                        return codes[i].name;
        return "Unknown Error";
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
        pthread_mutex_lock(&lock);
        if (n_init > 0)
                reload();
        pthread_mutex_unlock(&lock);
        ENTER(-1);
        if (!count)
                LEAVE(NVML_ERROR_INVALID_ARGUMENT);
        *count = (unsigned) n_gpus;
        LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
        ENTER(index < n_gpus ? (int) index : -1);
        if (!device || index >= n_gpus)
                LEAVE(NVML_ERROR_INVALID_ARGUMENT);
        *device = &gpus[index].handle;
        LEAVE(NVML_SUCCESS);
}

/* "00000000:18:00.0" or "0000:18:00.0" as a GPU index; -1 when none. */
static int gpu_by_bus_id(const char *id) {
        unsigned long domain;
        unsigned bus, dev, fn;
        char bdf[32];

        if (sscanf(id, "%lx:%x:%x.%x", &domain, &bus, &dev, &fn) != 4)
                return -1;
        snprintf(bdf, sizeof(bdf), "%04lx:%02x:%02x.%x", domain, bus, dev, fn);
        return find_gpu(bdf);
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device) {
        int g;

        pthread_mutex_lock(&lock);
        if (n_init > 0)
                reload();
        pthread_mutex_unlock(&lock);
        ENTER(pciBusId ? gpu_by_bus_id(pciBusId) : -1);
        if (!pciBusId || !device)
                LEAVE(NVML_ERROR_INVALID_ARGUMENT);
        g = gpu_by_bus_id(pciBusId);
        if (g < 0)
                LEAVE(NVML_ERROR_NOT_FOUND);
        *device = &gpus[g].handle;
        LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
        const char *u;
        ENTER(handle_gpu(device));
        if (!device || !uuid)
                LEAVE(NVML_ERROR_INVALID_ARGUMENT);
        u = device->mig >= 0 ? migs[device->mig].uuid : gpus[device->gpu].uuid;
        if (strlen(u) + 1 > length)
                LEAVE(NVML_ERROR_INSUFFICIENT_SIZE);
        memcpy(uuid, u, strlen(u) + 1);
        LEAVE(NVML_SUCCESS);
}

static void fill_pci(const char *bdf, unsigned device_id, nvmlPciInfo_t *pci) {
        unsigned long domain = 0;
        unsigned bus = 0, dev = 0, fn = 0;

        (void) sscanf(bdf, "%lx:%x:%x.%x", &domain, &bus, &dev, &fn);
        *pci = (nvmlPciInfo_t){ .domain = (unsigned) domain, .bus = bus, .device = dev,
                                .pciDeviceId = device_id << 16 | 0x10de, .pciSubSystemId = 0x16c110de };
        snprintf(pci->busId, sizeof(pci->busId), "%08lX:%02X:%02X.%X", domain, bus, dev, fn);
        snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04lX:%02X:%02X.%X", domain, bus, dev, fn);
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci) {
        ENTER(handle_gpu(device));
        if (!device || !pci)
                LEAVE(NVML_ERROR_INVALID_ARGUMENT);
        fill_pci(gpus[device->gpu].bdf, gpus[device->gpu].device_id, pci);
        LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode) {
        ENTER(handle_gpu(device));
        if (!device || device->mig >= 0 || !currentMode || !pendingMode)
                LEAVE(NVML_ERROR_INVALID_ARGUMENT);
        if (gpus[device->gpu].maxmig == 0)
                LEAVE(NVML_ERROR_NOT_SUPPORTED);
        *currentMode = gpus[device->gpu].mig;
        *pendingMode = gpus[device->gpu].pending;
        LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count) {
        ENTER(handle_gpu(device));
        if (!device || device->mig >= 0 || !count)
                LEAVE(NVML_ERROR_INVALID_ARGUMENT);
        *count = gpus[device->gpu].maxmig;
        LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index, nvmlDevice_t *migDevice) {
        unsigned k = 0;
        ENTER(handle_gpu(device));
        if (!device || device->mig >= 0 || !migDevice || index >= gpus[device->gpu].maxmig)
                LEAVE(NVML_ERROR_INVALID_ARGUMENT);
        if (!gpus[device->gpu].mig)
                LEAVE(NVML_ERROR_NOT_SUPPORTED);
        for (size_t i = 0; i < n_migs; i++)
                if (migs[i].gpu == device->gpu && k++ == index) {
                        *migDevice = &migs[i].handle;
                        LEAVE(NVML_SUCCESS);
                }
        LEAVE(NVML_ERROR_NOT_FOUND);
}

EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id) {
        ENTER(handle_gpu(device));
        if (!device || !id)
                LEAVE(NVML_ERROR_INVALID_ARGUMENT);
        if (device->mig < 0)
                LEAVE(NVML_ERROR_NOT_SUPPORTED);
        *id = migs[device->mig].gi;
        LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id) {
        ENTER(handle_gpu(device));
        if (!device || !id)
                LEAVE(NVML_ERROR_INVALID_ARGUMENT);
        if (device->mig < 0)
                LEAVE(NVML_ERROR_NOT_SUPPORTED);
        *id = migs[device->mig].ci;
        LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device, nvmlDeviceAttributes_t *attributes) {
        ENTER(handle_gpu(device));
        if (!device || !attributes)
                LEAVE(NVML_ERROR_INVALID_ARGUMENT);
        if (device->mig < 0)
                LEAVE(NVML_ERROR_NOT_SUPPORTED);
        *attributes = (nvmlDeviceAttributes_t){ .gpuInstanceSliceCount = migs[device->mig].slices,
                                                .computeInstanceSliceCount = migs[device->mig].ci_slices,
                                                .memorySizeMB = migs[device->mig].memory_mb };
        LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
        ENTER(handle_gpu(device));
        if (!device || !memory)
                LEAVE(NVML_ERROR_INVALID_ARGUMENT);
        if (device->mig >= 0)
                *memory = (nvmlMemory_t){ .total = migs[device->mig].memory_mb << 20 };
        else
                *memory = (nvmlMemory_t){ .total = gpus[device->gpu].mem_mb << 20 };
        memory->free = memory->total;
        LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id, nvmlGpuInstance_t *gpuInstance) {
        ENTER(handle_gpu(device));
        if (!device || device->mig >= 0 || !gpuInstance)
                LEAVE(NVML_ERROR_INVALID_ARGUMENT);
        if (!gpus[device->gpu].mig)
                LEAVE(NVML_ERROR_INVALID_STATE);
        for (size_t i = 0; i < n_migs; i++)
                if (migs[i].gpu == device->gpu && migs[i].gi == id) {
                        *gpuInstance = &migs[i].instance;
                        LEAVE(NVML_SUCCESS);
                }
        LEAVE(NVML_ERROR_NOT_FOUND);
}

EXPORT nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t *info) {
        ENTER(gpuInstance ? gpuInstance->gpu : -1);
        if (!gpuInstance || !info)
                LEAVE(NVML_ERROR_INVALID_ARGUMENT);
        *info = (nvmlGpuInstanceInfo_t){ .device = &gpus[gpuInstance->gpu].handle, .id = gpuInstance->id,
                                         .profileId = gpuInstance->profile };
        LEAVE(NVML_SUCCESS);
}

static struct nvmlEventSet_st the_set;

EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set) {
        ENTER(-1);
        if (!set)
                LEAVE(NVML_ERROR_INVALID_ARGUMENT);
        for (size_t i = 0; i < n_gpus; i++)
                gpus[i].registered = false;
        *set = &the_set;
        LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set) {
        ENTER(handle_gpu(device));
        if (!device || set != &the_set || device->mig >= 0)
                LEAVE(NVML_ERROR_INVALID_ARGUMENT);
        if (eventTypes & nvmlEventTypeXidCriticalError)
                gpus[device->gpu].registered = true;
        LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
        ENTER(-1);
        if (set != &the_set)
                LEAVE(NVML_ERROR_INVALID_ARGUMENT);
        for (size_t i = 0; i < n_gpus; i++)
                gpus[i].registered = false;
        LEAVE(NVML_SUCCESS);
}

/* Reads what the FIFO holds and parses its complete lines. Lock held. */
static void read_fifo(void) {
        ssize_t n;
        char *nl;

        while ((n = read(fifo, fifo_buf + fifo_len, sizeof(fifo_buf) - 1 - fifo_len)) > 0)
                fifo_len += (size_t) n;
        fifo_buf[fifo_len] = '\0';
        while ((nl = strchr(fifo_buf, '\n'))) {
                *nl = '\0';
                if (parse_line(fifo_buf) < 0)
                        fprintf(stderr, "fake-nvml: events: malformed line\n");
                fifo_len -= (size_t) (nl + 1 - fifo_buf);
                memmove(fifo_buf, nl + 1, fifo_len + 1);
        }
        if (fifo_len == sizeof(fifo_buf) - 1)
                fifo_len = 0;                   /* a line longer than the buffer: dropped */
}

/* The next scripted event of a registered GPU into *data; false when none. Lock held. */
static bool next(nvmlEventData_t *data) {
        while (next_event < n_events) {
                const fake_event *e = &events[next_event++];

                if (!gpus[e->gpu].registered)
                        continue;
                *data = (nvmlEventData_t){ .device = &gpus[e->gpu].handle, .eventType = nvmlEventTypeXidCriticalError,
                                           .eventData = e->xid, .gpuInstanceId = e->gi, .computeInstanceId = e->ci };
                return true;
        }
        return false;
}

/* One look at the script: what the FIFO holds is read first, so that a "clear" ends a "fail". Lock held. */
static nvmlReturn_t take(nvmlEventData_t *data) {
        nvmlReturn_t r;

        if (n_init > 0 && fifo >= 0)
                read_fifo();
        r = failing("nvmlEventSetWait_v2", -1);
        if (r != NVML_SUCCESS)
                return r;
        return next(data) ? NVML_SUCCESS : NVML_ERROR_TIMEOUT;
}

EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms) {
        struct pollfd p;
        nvmlReturn_t r;
        int fd;

        if (set != &the_set || !data)
                return NVML_ERROR_INVALID_ARGUMENT;
        pthread_mutex_lock(&lock);
        r = take(data);
        fd = fifo;
        pthread_mutex_unlock(&lock);
        if (r != NVML_ERROR_TIMEOUT)
                return r;
        if (fd < 0) {
                (void) usleep(timeoutms * 1000u);
                return NVML_ERROR_TIMEOUT;
        }
        p = (struct pollfd){ .fd = fd, .events = POLLIN };
        if (poll(&p, 1, (int) timeoutms) <= 0)
                return NVML_ERROR_TIMEOUT;
        pthread_mutex_lock(&lock);
        r = take(data);
        pthread_mutex_unlock(&lock);
        return r;
}

static const fake_link *find_link(int gpu, unsigned link) {
        for (size_t i = 0; i < n_links; i++)
                if (links[i].gpu == gpu && links[i].link == link)
                        return &links[i];
        return NULL;
}

EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, nvmlEnableState_t *isActive) {
        const fake_link *l;
        ENTER(handle_gpu(device));
        if (!device || !isActive || link >= NVML_NVLINK_MAX_LINKS)
                LEAVE(NVML_ERROR_INVALID_ARGUMENT);
        l = find_link(device->gpu, link);
        if (!l)
                LEAVE(NVML_ERROR_NOT_SUPPORTED);
        *isActive = l->up ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
        LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link, nvmlPciInfo_t *pci) {
        const fake_link *l;
        ENTER(handle_gpu(device));
        if (!device || !pci || link >= NVML_NVLINK_MAX_LINKS)
                LEAVE(NVML_ERROR_INVALID_ARGUMENT);
        l = find_link(device->gpu, link);
        if (!l)
                LEAVE(NVML_ERROR_NOT_SUPPORTED);
        fill_pci(l->remote, 0x22a3, pci);
        LEAVE(NVML_SUCCESS);
}
