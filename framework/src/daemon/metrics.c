/* SPDX-License-Identifier: GPL-2.0-or-later */
/* kdpd's metrics (see metrics.h for who writes what, and the drawing of who owns it). */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <grpc/grpc.h>
#include <microhttpd.h>

#include "exposition.h"
#include "metrics.h"
#include "process-metrics.h"

#define REASON_MAX_LEN 64
#define N_STATUS 17                     /* gRPC status codes 0 (OK) to 16 (UNAUTHENTICATED) */

typedef enum event_action { A_ADD, A_REMOVE, A_CHANGE, A_MOVE, A_BIND, A_UNBIND, A_ONLINE, A_OFFLINE, A_OTHER, _A_MAX } event_action;

static const char *const action_names[_A_MAX] = {
        "add", "remove", "change", "move", "bind", "unbind", "online", "offline", "other",
};

static const char *const status_names[N_STATUS] = {
        "ok", "cancelled", "unknown", "invalid_argument", "deadline_exceeded", "not_found", "already_exists",
        "permission_denied", "resource_exhausted", "failed_precondition", "aborted", "out_of_range",
        "unimplemented", "internal", "unavailable", "data_loss", "unauthenticated",
};

static const char *const registration_reasons[_KDP_METRICS_REGISTRATION_MAX] = {
        [KDP_METRICS_REGISTERED] = "none",
        [KDP_METRICS_REGISTER_NO_KUBELET] = "kubelet_absent",
        [KDP_METRICS_REGISTER_ENDPOINT_GONE] = "endpoint_gone",
        [KDP_METRICS_REGISTER_NOT_STARTED] = "not_started",
        [KDP_METRICS_REGISTER_UNAVAILABLE] = "unavailable",
        [KDP_METRICS_REGISTER_DEADLINE] = "deadline_exceeded",
        [KDP_METRICS_REGISTER_REJECTED] = "rejected",
};

/* Bucket bounds: a call answered from memory (µs), and what waits on a scan or the kernel (ms to s). */
static const uint64_t call_bounds_ns[] = {
        10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000, 25000000, 100000000,
        1000000000,
};
static const uint64_t scan_bounds_ns[] = {
        100000, 500000, 1000000, 5000000, 10000000, 25000000, 50000000, 100000000, 250000000, 500000000,
        1000000000, 2500000000, 10000000000,
};

struct kdp_metrics_backend {
        char *name;
        char *path;
        unsigned abi;
        kdp_histogram scans;
};

typedef struct subsystem_events {
        char *name;
        atomic_uint_least64_t events[_A_MAX];
} subsystem_events;

struct kdp_metrics_heartbeat {
        kdp_metrics *m;
        char *what;
        atomic_uint_least64_t at_ns;
};

typedef struct reason_count {
        char *name;                     /* appended under the lock; NULL for "other" */
        atomic_uint_least64_t count;
} reason_count;

struct kdp_metrics_resource {
        atomic_uint refs;
        kdp_metrics *m;
        char *name;
        kdp_metrics_resource *next;     /* m's list, under m->lock */
        kdp_snapshot *snap;             /* under m->lock */
        reason_count reasons[KDP_METRICS_MAX_REASONS + 1];    /* the last: "other" */
        size_t n_reasons;               /* changed under m->lock, by the loop only */
        atomic_uint_least64_t allocations[N_STATUS];
        atomic_uint_least64_t registrations[_KDP_METRICS_REGISTRATION_MAX];
        atomic_int last_failure;        /* of the registrations since the last success; -1: none */
        atomic_bool registered;
        atomic_uint streams;
        kdp_histogram allocate, preferred, update;
};

struct kdp_metrics {
        pthread_mutex_t lock;
        kdp_metrics_options o;
        kdp_metrics_resource *resources;        /* under lock */
        kdp_metrics_backend backends[KDP_METRICS_MAX_BACKENDS];
        size_t n_backends;                      /* under lock */
        subsystem_events subsystems[KDP_METRICS_MAX_SUBSYSTEMS];
        size_t n_subsystems;                    /* under lock */
        kdp_metrics_heartbeat heartbeats[KDP_METRICS_MAX_HEARTBEATS];
        size_t n_heartbeats;                    /* under lock */
        atomic_uint_least64_t kubelet_restarts;
        atomic_bool started;
};

uint64_t kdp_metrics_now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static uint64_t clock_now(const kdp_metrics *m) {
        return m->o.clock_ns ? m->o.clock_ns() : kdp_metrics_now_ns();
}

static void inc(atomic_uint_least64_t *c) {
        atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

static uint64_t get(const atomic_uint_least64_t *c) {
        return atomic_load_explicit(c, memory_order_relaxed);
}

/* ---- the registry ---- */

int kdp_metrics_new(const kdp_metrics_options *o, kdp_metrics **ret) {
        kdp_metrics *m = calloc(1, sizeof(*m));

        if (!m)
                return -ENOMEM;
        pthread_mutex_init(&m->lock, NULL);
        m->o = *o;
        *ret = m;
        return 0;
}

kdp_metrics *kdp_metrics_free(kdp_metrics *m) {
        if (!m)
                return NULL;
        while (m->resources)
                kdp_metrics_resource_remove(m->resources);
        for (size_t i = 0; i < m->n_backends; i++) {
                free(m->backends[i].name);
                free(m->backends[i].path);
        }
        for (size_t i = 0; i < m->n_subsystems; i++)
                free(m->subsystems[i].name);
        for (size_t i = 0; i < m->n_heartbeats; i++)
                free(m->heartbeats[i].what);
        pthread_mutex_destroy(&m->lock);
        free(m);
        return NULL;
}

uint64_t kdp_metrics_beat_ms(const kdp_metrics *m) {
        uint64_t ms = m->o.stall_ms / 4;

        if (m->o.stall_ms == 0)
                return 0;
        return ms < 1 ? 1 : ms > 1000 ? 1000 : ms;
}

int kdp_metrics_add_backend(kdp_metrics *m, const char *name, unsigned abi, const char *path,
                            kdp_metrics_backend **ret) {
        kdp_metrics_backend *b;

        if (m->n_backends >= KDP_METRICS_MAX_BACKENDS)
                return -E2BIG;
        b = &m->backends[m->n_backends];
        b->name = strdup(name);
        b->path = strdup(path);
        b->abi = abi;
        kdp_exposition_histogram_init(&b->scans, scan_bounds_ns, KDP_ELEMENTSOF(scan_bounds_ns));
        if (!b->name || !b->path) {
                free(b->name);
                free(b->path);
                return -ENOMEM;
        }
        pthread_mutex_lock(&m->lock);
        m->n_backends++;
        pthread_mutex_unlock(&m->lock);
        *ret = b;
        return 0;
}

void kdp_metrics_backend_scanned(kdp_metrics_backend *b, uint64_t ns) {
        if (b)
                kdp_exposition_histogram_observe(&b->scans, ns);
}

int kdp_metrics_add_subsystem(kdp_metrics *m, const char *name) {
        subsystem_events *s;

        if (m->n_subsystems >= KDP_METRICS_MAX_SUBSYSTEMS)
                return -E2BIG;
        s = &m->subsystems[m->n_subsystems];
        s->name = strdup(name);
        if (!s->name)
                return -ENOMEM;
        for (size_t i = 0; i < _A_MAX; i++)
                atomic_init(&s->events[i], 0);
        pthread_mutex_lock(&m->lock);
        m->n_subsystems++;
        pthread_mutex_unlock(&m->lock);
        return 0;
}

void kdp_metrics_device_event(kdp_metrics *m, const char *subsystem, const char *action) {
        size_t a = 0;

        while (a < A_OTHER && (!action || strcmp(action, action_names[a]) != 0))
                a++;
        for (size_t i = 0; i < m->n_subsystems; i++)
                if (strcmp(m->subsystems[i].name, subsystem) == 0) {
                        inc(&m->subsystems[i].events[a]);
                        return;
                }
}

void kdp_metrics_kubelet_restarted(kdp_metrics *m) {
        inc(&m->kubelet_restarts);
}

int kdp_metrics_add_heartbeat(kdp_metrics *m, const char *what, kdp_metrics_heartbeat **ret) {
        kdp_metrics_heartbeat *h;

        *ret = NULL;
        if (m->o.stall_ms == 0)
                return 0;
        pthread_mutex_lock(&m->lock);
        if (m->n_heartbeats >= KDP_METRICS_MAX_HEARTBEATS) {
                pthread_mutex_unlock(&m->lock);
                return -E2BIG;
        }
        h = &m->heartbeats[m->n_heartbeats];
        h->m = m;
        h->what = strdup(what);
        atomic_init(&h->at_ns, clock_now(m));
        if (h->what)
                m->n_heartbeats++;
        pthread_mutex_unlock(&m->lock);
        if (!h->what)
                return -ENOMEM;
        *ret = h;
        return 0;
}

void kdp_metrics_heartbeat_beat(kdp_metrics_heartbeat *h) {
        if (h)
                atomic_store_explicit(&h->at_ns, clock_now(h->m), memory_order_relaxed);
}

/* ---- resources ---- */

int kdp_metrics_resource_add(kdp_metrics *m, const char *name, kdp_metrics_resource **ret) {
        kdp_metrics_resource *r = calloc(1, sizeof(*r));

        if (!r || !(r->name = strdup(name))) {
                free(r);
                return -ENOMEM;
        }
        atomic_init(&r->refs, 1);
        r->m = m;
        atomic_init(&r->last_failure, -1);
        kdp_exposition_histogram_init(&r->allocate, call_bounds_ns, KDP_ELEMENTSOF(call_bounds_ns));
        kdp_exposition_histogram_init(&r->preferred, call_bounds_ns, KDP_ELEMENTSOF(call_bounds_ns));
        kdp_exposition_histogram_init(&r->update, scan_bounds_ns, KDP_ELEMENTSOF(scan_bounds_ns));
        pthread_mutex_lock(&m->lock);
        r->next = m->resources;
        m->resources = r;
        pthread_mutex_unlock(&m->lock);
        *ret = r;
        return 0;
}

void kdp_metrics_resource_remove(kdp_metrics_resource *r) {
        kdp_metrics *m;

        if (!r)
                return;
        m = r->m;
        pthread_mutex_lock(&m->lock);
        for (kdp_metrics_resource **p = &m->resources; *p; p = &(*p)->next)
                if (*p == r) {
                        *p = r->next;
                        break;
                }
        pthread_mutex_unlock(&m->lock);
        kdp_metrics_resource_unref(r);
}

kdp_metrics_resource *kdp_metrics_resource_ref(kdp_metrics_resource *r) {
        if (r)
                atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
        return r;
}

kdp_metrics_resource *kdp_metrics_resource_unref(kdp_metrics_resource *r) {
        if (!r || atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) != 1)
                return NULL;
        for (size_t i = 0; i < r->n_reasons; i++)
                free(r->reasons[i].name);
        kdp_snapshot_unref(r->snap);
        free(r->name);
        free(r);
        return NULL;
}

void kdp_metrics_resource_publish(kdp_metrics_resource *r, kdp_snapshot *snap) {
        kdp_snapshot *old;

        if (!r)
                return;
        pthread_mutex_lock(&r->m->lock);
        old = r->snap;
        r->snap = kdp_snapshot_ref(snap);
        pthread_mutex_unlock(&r->m->lock);
        kdp_snapshot_unref(old);
}

/* The label of a reason: its first clause, digit runs as "N", printable ASCII, at most REASON_MAX_LEN. */
static void fold_reason(const char *reason, char *buf) {
        size_t n = 0;

        for (const char *p = reason ? reason : ""; *p && n < REASON_MAX_LEN && strncmp(p, "; ", 2) != 0; p++) {
                if (isdigit((unsigned char) *p)) {
                        while (isdigit((unsigned char) p[1]))
                                p++;
                        buf[n++] = 'N';
                } else
                        buf[n++] = *p >= 0x20 && *p < 0x7f ? *p : '?';
        }
        buf[n] = '\0';
        if (n == 0)
                strcpy(buf, "unknown");
}

void kdp_metrics_resource_unhealthy(kdp_metrics_resource *r, const char *reason) {
        char label[REASON_MAX_LEN + 1];
        size_t i = 0;
        char *name;

        if (!r)
                return;
        fold_reason(reason, label);
        while (i < r->n_reasons && strcmp(r->reasons[i].name, label) != 0)
                i++;
        if (i == r->n_reasons && i < KDP_METRICS_MAX_REASONS && (name = strdup(label))) {
                pthread_mutex_lock(&r->m->lock);
                r->reasons[i].name = name;
                r->n_reasons++;
                pthread_mutex_unlock(&r->m->lock);
        }
        inc(&r->reasons[i < r->n_reasons ? i : KDP_METRICS_MAX_REASONS].count);
}

void kdp_metrics_resource_registration(kdp_metrics_resource *r, kdp_metrics_registration what) {
        if (!r)
                return;
        inc(&r->registrations[what]);
        atomic_store(&r->last_failure, what == KDP_METRICS_REGISTERED ? -1 : (int) what);
        if (what == KDP_METRICS_REGISTERED)
                atomic_store(&r->registered, true);
}

void kdp_metrics_resource_unregistered(kdp_metrics_resource *r) {
        if (r)
                atomic_store(&r->registered, false);
}

void kdp_metrics_resource_stream(kdp_metrics_resource *r, bool opened) {
        if (!r)
                return;
        if (opened)
                atomic_fetch_add(&r->streams, 1);
        else
                atomic_fetch_sub(&r->streams, 1);
}

void kdp_metrics_resource_allocated(kdp_metrics_resource *r, int status, uint64_t ns) {
        if (!r)
                return;
        inc(&r->allocations[status >= 0 && status < N_STATUS ? status : 2]);   /* 2: unknown */
        kdp_exposition_histogram_observe(&r->allocate, ns);
}

void kdp_metrics_resource_preferred(kdp_metrics_resource *r, uint64_t ns) {
        if (r)
                kdp_exposition_histogram_observe(&r->preferred, ns);
}

void kdp_metrics_resource_update_sent(kdp_metrics_resource *r, uint64_t ns) {
        if (r)
                kdp_exposition_histogram_observe(&r->update, ns);
}

void kdp_metrics_started(kdp_metrics *m) {
        atomic_store(&m->started, true);
}

/* ---- a scrape ---- */

typedef struct scrape_item {
        kdp_metrics_resource *r;
        kdp_snapshot *snap;             /* NULL before the first publish */
        size_t n_reasons;
} scrape_item;

typedef struct scrape {
        scrape_item *items;
        size_t n, n_backends, n_subsystems, n_heartbeats;
} scrape;

static int compare_items(const void *a, const void *b) {
        return strcmp(((const scrape_item *) a)->r->name, ((const scrape_item *) b)->r->name);
}

/* Under the lock only: a reference on each resource and its snapshot, sorted by name. */
static int scrape_begin(kdp_metrics *m, scrape *s) {
        size_t n = 0;

        *s = (scrape){ 0 };
        pthread_mutex_lock(&m->lock);
        for (kdp_metrics_resource *r = m->resources; r; r = r->next)
                n++;
        s->items = calloc(n + 1, sizeof(*s->items));
        for (kdp_metrics_resource *r = m->resources; s->items && r; r = r->next)
                s->items[s->n++] = (scrape_item){
                        .r = kdp_metrics_resource_ref(r), .snap = kdp_snapshot_ref(r->snap), .n_reasons = r->n_reasons,
                };
        s->n_backends = m->n_backends;
        s->n_subsystems = m->n_subsystems;
        s->n_heartbeats = m->n_heartbeats;
        pthread_mutex_unlock(&m->lock);
        if (!s->items)
                return -ENOMEM;
        qsort(s->items, s->n, sizeof(*s->items), compare_items);
        return 0;
}

static void scrape_end(scrape *s) {
        for (size_t i = 0; i < s->n; i++) {
                kdp_snapshot_unref(s->items[i].snap);
                kdp_metrics_resource_unref(s->items[i].r);
        }
        free(s->items);
}

static void write_info(const kdp_metrics *m, const scrape *s, FILE *f) {
        kdp_exposition_family(f, "kdp_build_info", "gauge", "kdpd's version and the library versions it runs with (1).");
        kdp_exposition_u64(f, "kdp_build_info", (const kdp_exposition_label[]){
                { "version", KDP_VERSION }, { "grpc", grpc_version_string() },
                { "microhttpd", MHD_get_version() }, { 0 } }, 1);
        kdp_exposition_family(f, "kdp_backend_info", "gauge", "Each backend loaded, its ABI and its file (1).");
        for (size_t i = 0; i < s->n_backends; i++) {
                const kdp_metrics_backend *b = &m->backends[i];
                char abi[16];

                snprintf(abi, sizeof(abi), "%u", b->abi);
                kdp_exposition_u64(f, "kdp_backend_info", (const kdp_exposition_label[]){
                        { "backend", b->name }, { "abi", abi }, { "path", b->path }, { 0 } }, 1);
        }
}

static void write_devices(const kdp_metrics *m, const scrape *s, FILE *f) {
        kdp_exposition_family(f, "kdp_devices", "gauge", "Devices served, by resource and health.");
        for (size_t i = 0; i < s->n; i++) {
                const kdp_snapshot *snap = s->items[i].snap;
                size_t healthy = snap ? snap->n_healthy : 0, all = snap ? snap->list.n_devices : 0;
                const char *res = s->items[i].r->name;

                kdp_exposition_u64(f, "kdp_devices", (const kdp_exposition_label[]){
                        { "resource", res }, { "health", "healthy" }, { 0 } }, healthy);
                kdp_exposition_u64(f, "kdp_devices", (const kdp_exposition_label[]){
                        { "resource", res }, { "health", "unhealthy" }, { 0 } }, all - healthy);
        }
        if (!m->o.device_health)
                return;
        kdp_exposition_family(f, "kdp_device_health", "gauge", "Each device: 1 healthy, 0 unhealthy.");
        for (size_t i = 0; i < s->n; i++)
                for (size_t d = 0; s->items[i].snap && d < s->items[i].snap->list.n_devices; d++) {
                        const kdp_device *dev = &s->items[i].snap->list.devices[d];

                        kdp_exposition_u64(f, "kdp_device_health", (const kdp_exposition_label[]){
                                { "resource", s->items[i].r->name }, { "device", dev->id }, { 0 } },
                                dev->health == KDP_HEALTHY);
                }
}

/* The success series from the start; every other one from its first count. */
static void write_allocations(const scrape *s, FILE *f) {
        kdp_exposition_family(f, "kdp_allocations_total", "counter",
                              "Allocate calls answered, by resource and result (the gRPC status).");
        for (size_t i = 0; i < s->n; i++)
                for (size_t st = 0; st < N_STATUS; st++) {
                        uint64_t v = get(&s->items[i].r->allocations[st]);

                        if (st == 0 || v > 0)
                                kdp_exposition_u64(f, "kdp_allocations_total", (const kdp_exposition_label[]){
                                        { "resource", s->items[i].r->name }, { "result", status_names[st] }, { 0 } }, v);
                }
}

static void write_registrations(const scrape *s, FILE *f) {
        kdp_exposition_family(f, "kdp_registrations_total", "counter",
                              "Register calls to the kubelet, by resource, result and reason of a failure.");
        for (size_t i = 0; i < s->n; i++)
                for (size_t w = 0; w < _KDP_METRICS_REGISTRATION_MAX; w++) {
                        uint64_t v = get(&s->items[i].r->registrations[w]);

                        if (w == KDP_METRICS_REGISTERED || v > 0)
                                kdp_exposition_u64(f, "kdp_registrations_total", (const kdp_exposition_label[]){
                                        { "resource", s->items[i].r->name },
                                        { "result", w == KDP_METRICS_REGISTERED ? "success" : "failure" },
                                        { "reason", registration_reasons[w] }, { 0 } }, v);
                }
}

static void write_connection(const scrape *s, FILE *f) {
        kdp_exposition_family(f, "kdp_registered", "gauge",
                              "1 when the resource's last Register call on its socket succeeded.");
        for (size_t i = 0; i < s->n; i++)
                kdp_exposition_u64(f, "kdp_registered", (const kdp_exposition_label[]){
                        { "resource", s->items[i].r->name }, { 0 } }, atomic_load(&s->items[i].r->registered));
        kdp_exposition_family(f, "kdp_listandwatch_streams", "gauge", "ListAndWatch streams open.");
        for (size_t i = 0; i < s->n; i++)
                kdp_exposition_u64(f, "kdp_listandwatch_streams", (const kdp_exposition_label[]){
                        { "resource", s->items[i].r->name }, { 0 } }, atomic_load(&s->items[i].r->streams));
}

static void write_unhealthy(const scrape *s, FILE *f) {
        kdp_exposition_family(f, "kdp_unhealthy_transitions_total", "counter",
                              "Devices that became unhealthy, by resource and reason (digits as N, "
                              "beyond 8 reasons a resource: other).");
        for (size_t i = 0; i < s->n; i++) {
                const kdp_metrics_resource *r = s->items[i].r;

                for (size_t k = 0; k < s->items[i].n_reasons; k++)
                        kdp_exposition_u64(f, "kdp_unhealthy_transitions_total", (const kdp_exposition_label[]){
                                { "resource", r->name }, { "reason", r->reasons[k].name }, { 0 } },
                                get(&r->reasons[k].count));
                if (get(&r->reasons[KDP_METRICS_MAX_REASONS].count) > 0)
                        kdp_exposition_u64(f, "kdp_unhealthy_transitions_total", (const kdp_exposition_label[]){
                                { "resource", r->name }, { "reason", "other" }, { 0 } },
                                get(&r->reasons[KDP_METRICS_MAX_REASONS].count));
        }
}

/* One histogram family of the resources: the one at `offset` in each. */
static void write_resource_histograms(const scrape *s, FILE *f, const char *name, size_t offset, const char *help) {
        kdp_exposition_family(f, name, "histogram", help);
        for (size_t i = 0; i < s->n; i++)
                kdp_exposition_histogram(f, name, (const kdp_exposition_label[]){ { "resource", s->items[i].r->name }, { 0 } },
                                         (const kdp_histogram *) ((const char *) s->items[i].r + offset));
}

static void write_events(kdp_metrics *m, const scrape *s, FILE *f) {
        kdp_exposition_family(f, "kdp_kubelet_restarts_total", "counter",
                              "kubelet.sock (re)created, or the kubelet directory back: a kubelet (re)started.");
        kdp_exposition_u64(f, "kdp_kubelet_restarts_total", NULL, get(&m->kubelet_restarts));
        kdp_exposition_family(f, "kdp_device_events_total", "counter",
                              "Device events of the subsystems the backends watch, by subsystem and action.");
        for (size_t i = 0; i < s->n_subsystems; i++)
                for (size_t a = 0; a < _A_MAX; a++)
                        if (get(&m->subsystems[i].events[a]) > 0)
                                kdp_exposition_u64(f, "kdp_device_events_total", (const kdp_exposition_label[]){
                                        { "subsystem", m->subsystems[i].name }, { "action", action_names[a] }, { 0 } },
                                        get(&m->subsystems[i].events[a]));
        kdp_exposition_family(f, "kdp_scan_duration_seconds", "histogram",
                              "How long each scan of a backend took (its scan and probe hooks).");
        for (size_t i = 0; i < s->n_backends; i++)
                kdp_exposition_histogram(f, "kdp_scan_duration_seconds", (const kdp_exposition_label[]){
                        { "backend", m->backends[i].name }, { 0 } }, &m->backends[i].scans);
}

int kdp_metrics_write(kdp_metrics *m, FILE *f) {
        scrape s;
        int r = scrape_begin(m, &s);

        if (r < 0)
                return r;
        write_info(m, &s, f);
        write_devices(m, &s, f);
        write_allocations(&s, f);
        write_resource_histograms(&s, f, "kdp_allocate_duration_seconds", offsetof(kdp_metrics_resource, allocate),
                                  "Allocate calls, from the request message read to the answer encoded.");
        write_resource_histograms(&s, f, "kdp_preferred_allocation_duration_seconds",
                                  offsetof(kdp_metrics_resource, preferred),
                                  "GetPreferredAllocation calls, from the request message read to the answer "
                                  "encoded.");
        write_registrations(&s, f);
        write_connection(&s, f);
        write_unhealthy(&s, f);
        write_resource_histograms(&s, f, "kdp_listandwatch_update_latency_seconds", offsetof(kdp_metrics_resource, update),
                                  "From a device event, or the scan that saw a change, to its ListAndWatch message "
                                  "sent, per stream.");
        write_events(m, &s, f);
        scrape_end(&s);
        kdp_process_metrics_write(f);
        return ferror(f) ? -ENOMEM : 0;
}

/* ---- the probes ---- */

bool kdp_metrics_healthy(kdp_metrics *m, FILE *f) {
        uint64_t now = clock_now(m), bound = m->o.stall_ms * 1000000u;
        size_t n;
        bool ok = true;

        pthread_mutex_lock(&m->lock);
        n = m->n_heartbeats;
        pthread_mutex_unlock(&m->lock);
        for (size_t i = 0; i < n; i++) {
                uint64_t at = atomic_load_explicit(&m->heartbeats[i].at_ns, memory_order_relaxed);

                if (now > at && now - at > bound) {
                        fprintf(f, "%s has not run for %.1f s\n", m->heartbeats[i].what, (double) (now - at) / 1e9);
                        ok = false;
                }
        }
        if (ok)
                fputs("ok\n", f);
        return ok;
}

bool kdp_metrics_ready(kdp_metrics *m, FILE *f) {
        scrape s;
        bool ok = true;

        if (!atomic_load(&m->started)) {
                fputs("starting: the first scan of the backends is not done\n", f);
                return false;
        }
        if (scrape_begin(m, &s) < 0) {
                fputs("out of memory\n", f);
                return false;
        }
        for (size_t i = 0; i < s.n; i++) {
                const kdp_metrics_resource *r = s.items[i].r;
                int failure = atomic_load(&r->last_failure);

                if (!atomic_load(&r->registered)) {
                        fprintf(f, "%s: not registered with the kubelet%s%s%s\n", r->name,
                                failure >= 0 ? " (last attempt: " : "", failure >= 0 ? registration_reasons[failure] : "",
                                failure >= 0 ? ")" : "");
                        ok = false;
                } else if (atomic_load(&r->streams) == 0) {
                        fprintf(f, "%s: registered, but no ListAndWatch stream open\n", r->name);
                        ok = false;
                }
        }
        scrape_end(&s);
        if (ok)
                fputs("ok\n", f);
        return ok;
}
