/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NVML at run time (nvml.h): the loader, the errno mapping and the Xid event
 * worker. The worker blocks in nvmlEventSetWait_v2 (bounded by wait_ms so a
 * stop is noticed), queues what it gets under a mutex and writes the eventfd
 * that kdpd's loop watches; the loop thread drains the queue.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "nvml.h"

/* ---- loader ---- */

gpu_nvml *gpu_nvml_free(gpu_nvml *n) {
        if (!n)
                return NULL;
        if (n->initialised)
                (void) n->nvmlShutdown();
        if (n->dl)
                (void) dlclose(n->dl);
        free(n);
        return NULL;
}

static __thread char init_error[128];

int gpu_nvml_open(const char *path, gpu_nvml **ret, const char **reterr_why) {
        _cleanup_(gpu_nvml_freep) gpu_nvml *n = calloc(1, sizeof(*n));
        const char *why = NULL;
        nvmlReturn_t nr;

        if (!n)
                return -ENOMEM;
        n->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!n->dl) {
                if (reterr_why)
                        *reterr_why = dlerror();
                return -ENOENT;
        }
#define GPU_NVML_RESOLVE(name, r, args) \
        if (!why && !(n->name = (r(*) args) dlsym(n->dl, #name))) \
                why = #name;
        GPU_NVML_FUNCTIONS(GPU_NVML_RESOLVE)
#undef GPU_NVML_RESOLVE
        if (why) {
                if (reterr_why)
                        *reterr_why = why;
                return -ENOSYS;
        }
        nr = n->nvmlInit_v2();
        if (nr != NVML_SUCCESS) {
                /* the library's text goes with the library: copy it */
                snprintf(init_error, sizeof(init_error), "%s", gpu_nvml_strerror(n, nr));
                if (reterr_why)
                        *reterr_why = init_error;
                return gpu_nvml_errno(nr) ?: -EIO;
        }
        n->initialised = true;
        *ret = KDP_TAKE_PTR(n);
        return 0;
}

int gpu_nvml_errno(nvmlReturn_t r) {
        switch (r) {
        case NVML_SUCCESS:
                return 0;
        case NVML_ERROR_NOT_SUPPORTED:
                return -EOPNOTSUPP;
        case NVML_ERROR_NO_PERMISSION:
                return -EACCES;
        case NVML_ERROR_NOT_FOUND:
        case NVML_ERROR_GPU_NOT_FOUND:
                return -ENOENT;
        case NVML_ERROR_GPU_IS_LOST:
                return -ENODEV;
        case NVML_ERROR_TIMEOUT:
                return -ETIMEDOUT;
        case NVML_ERROR_UNINITIALIZED:
        case NVML_ERROR_DRIVER_NOT_LOADED:
                return -ENXIO;
        case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
                return -EPROTO;
        case NVML_ERROR_INSUFFICIENT_SIZE:
                return -ENOBUFS;
        case NVML_ERROR_MEMORY:
                return -ENOMEM;
        case NVML_ERROR_INVALID_ARGUMENT:
                return -EINVAL;
        case NVML_ERROR_IN_USE:
                return -EBUSY;
        case NVML_ERROR_NOT_READY:
        case NVML_ERROR_RESET_REQUIRED:
                return -EAGAIN;
        default:
                return -EIO;
        }
}

const char *gpu_nvml_strerror(const gpu_nvml *n, nvmlReturn_t r) {
        const char *s = n && n->nvmlErrorString ? n->nvmlErrorString(r) : NULL;

        return s && *s ? s : "unknown NVML error";
}

int gpu_nvml_bdf(const nvmlPciInfo_t *pci, char ret[KDP_PCI_ADDRESS_MAX]) {
        unsigned long domain;
        unsigned bus, dev, fn;
        int end = -1;

        /* hex digits, ':' and '.' only (sscanf's %x would take "0x" prefixes and signs) */
        if (!memchr(pci->busId, '\0', sizeof(pci->busId)) ||
            pci->busId[strspn(pci->busId, "0123456789abcdefABCDEF:.")] != '\0' ||
            sscanf(pci->busId, "%lx:%x:%x.%x%n", &domain, &bus, &dev, &fn, &end) != 4 ||
            pci->busId[end] != '\0' || domain > 0xffffffffUL || bus > 0xff || dev > 0x1f || fn > 7)
                return -EINVAL;
        snprintf(ret, KDP_PCI_ADDRESS_MAX, "%04lx:%02x:%02x.%x", domain, bus, dev, fn);
        return 0;
}

/* ---- events ---- */

typedef struct event_gpu {
        nvmlDevice_t device;
        char bdf[KDP_PCI_ADDRESS_MAX];
} event_gpu;

struct gpu_nvml_events {
        gpu_nvml *nvml;
        nvmlEventSet_t set;
        event_gpu *gpus;
        size_t n_gpus;
        unsigned wait_ms;
        int fd;
        pthread_t thread;
        bool started;
        atomic_bool stop;

        pthread_mutex_t lock;                   /* guards the fields below */
        nvmlEventData_t *queue;
        size_t n_queue;
        nvmlReturn_t wait_error;
        uint64_t n_events;
};

static void wake(gpu_nvml_events *e) {
        uint64_t one = 1;

        (void) !write(e->fd, &one, sizeof(one));
}

#define QUEUE_MAX 4096          /* a storm beyond this is dropped: one Xid per GPU is all the health needs */

static void *events_thread(void *userdata) {
        gpu_nvml_events *e = userdata;
        bool errored = false;

        while (!atomic_load(&e->stop)) {
                nvmlEventData_t d = { 0 };
                nvmlReturn_t r = e->nvml->nvmlEventSetWait_v2(e->set, &d, e->wait_ms);

                if (r == NVML_ERROR_TIMEOUT)
                        continue;
                pthread_mutex_lock(&e->lock);
                if (r != NVML_SUCCESS) {
                        e->wait_error = r;
                } else if (d.eventType & nvmlEventTypeXidCriticalError && e->n_queue < QUEUE_MAX) {
                        nvmlEventData_t *q = realloc(e->queue, (e->n_queue + 1) * sizeof(*q));

                        if (q) {
                                e->queue = q;
                                e->queue[e->n_queue++] = d;
                        }
                }
                pthread_mutex_unlock(&e->lock);
                if (r == NVML_SUCCESS || !errored)
                        wake(e);
                errored = r != NVML_SUCCESS;
                if (errored)
                        (void) usleep(e->wait_ms * 1000u);     /* a wait that fails at once must not spin */
        }
        return NULL;
}

gpu_nvml_events *gpu_nvml_events_free(gpu_nvml_events *e) {
        if (!e)
                return NULL;
        if (e->started) {
                atomic_store(&e->stop, true);
                (void) pthread_join(e->thread, NULL);
        }
        if (e->set)
                (void) e->nvml->nvmlEventSetFree(e->set);
        if (e->fd >= 0)
                (void) close(e->fd);
        pthread_mutex_destroy(&e->lock);
        free(e->queue);
        free(e->gpus);
        free(e);
        return NULL;
}

/* Registers GPU `index`; 0 or the failing call's NVML code. */
static nvmlReturn_t register_gpu(gpu_nvml_events *e, unsigned index) {
        nvmlPciInfo_t pci;
        nvmlDevice_t dev;
        nvmlReturn_t r;
        event_gpu *g;

        r = e->nvml->nvmlDeviceGetHandleByIndex_v2(index, &dev);
        if (r == NVML_SUCCESS)
                r = e->nvml->nvmlDeviceGetPciInfo_v3(dev, &pci);
        if (r != NVML_SUCCESS)
                return r;
        g = &e->gpus[e->n_gpus];
        if (gpu_nvml_bdf(&pci, g->bdf) < 0)
                return NVML_ERROR_UNKNOWN;
        r = e->nvml->nvmlDeviceRegisterEvents(dev, nvmlEventTypeXidCriticalError, e->set);
        if (r != NVML_SUCCESS)
                return r;
        g->device = dev;
        e->n_gpus++;
        return NVML_SUCCESS;
}

int gpu_nvml_events_start(gpu_nvml *n, unsigned wait_ms, gpu_nvml_events **ret, unsigned *ret_skipped) {
        _cleanup_(gpu_nvml_events_freep) gpu_nvml_events *e = calloc(1, sizeof(*e));
        nvmlReturn_t r, first = NVML_SUCCESS;
        unsigned count = 0, skipped = 0;
        int err;

        if (!e)
                return -ENOMEM;
        e->nvml = n;
        e->fd = -1;
        e->wait_ms = wait_ms;
        pthread_mutex_init(&e->lock, NULL);
        r = n->nvmlDeviceGetCount_v2(&count);
        if (r != NVML_SUCCESS)
                return gpu_nvml_errno(r);
        r = n->nvmlEventSetCreate(&e->set);
        if (r != NVML_SUCCESS) {
                e->set = NULL;
                return gpu_nvml_errno(r);
        }
        e->gpus = calloc(count + 1, sizeof(*e->gpus));
        if (!e->gpus)
                return -ENOMEM;
        for (unsigned i = 0; i < count; i++) {
                r = register_gpu(e, i);
                if (r != NVML_SUCCESS) {
                        skipped++;
                        if (first == NVML_SUCCESS)
                                first = r;
                }
        }
        if (e->n_gpus == 0)
                return first != NVML_SUCCESS ? gpu_nvml_errno(first) : -ENODEV;
        e->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (e->fd < 0)
                return -errno;
        err = pthread_create(&e->thread, NULL, events_thread, e);
        if (err)
                return -err;
        e->started = true;
        *ret_skipped = skipped;
        *ret = KDP_TAKE_PTR(e);
        return 0;
}

int gpu_nvml_events_fd(const gpu_nvml_events *e) {
        return e->fd;
}

size_t gpu_nvml_events_n_gpus(const gpu_nvml_events *e) {
        return e->n_gpus;
}

static int instance_id(unsigned id) {
        return id == GPU_NVML_NO_INSTANCE || id > INT32_MAX ? -1 : (int) id;
}

int gpu_nvml_events_drain(gpu_nvml_events *e, gpu_xid_fn fn, void *userdata, nvmlReturn_t *ret_wait_error) {
        _cleanup_free_ nvmlEventData_t *queue = NULL;
        uint64_t counter;
        size_t n;
        int seen = 0;

        (void) !read(e->fd, &counter, sizeof(counter));
        pthread_mutex_lock(&e->lock);
        queue = KDP_TAKE_PTR(e->queue);
        n = e->n_queue;
        e->n_queue = 0;
        *ret_wait_error = e->wait_error;
        e->wait_error = NVML_SUCCESS;
        pthread_mutex_unlock(&e->lock);

        for (size_t i = 0; i < n; i++) {
                const event_gpu *g = NULL;
                gpu_xid x;

                for (size_t k = 0; k < e->n_gpus && !g; k++)
                        if (e->gpus[k].device == queue[i].device)
                                g = &e->gpus[k];
                if (!g || queue[i].eventData > UINT32_MAX)
                        continue;               /* not a GPU we registered, or no Xid number */
                x = (gpu_xid){
                        .code = (unsigned) queue[i].eventData,
                        .gpu_instance = instance_id(queue[i].gpuInstanceId),
                        .compute_instance = instance_id(queue[i].computeInstanceId),
                        .seq = ++e->n_events,
                };
                snprintf(x.bdf, sizeof(x.bdf), "%s", g->bdf);
                seen++;
                if (fn)
                        fn(userdata, &x, false);
        }
        return seen;
}
