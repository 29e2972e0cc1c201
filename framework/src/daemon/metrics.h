/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kdpd's metrics and the answers of its probes: what the threads count, and
 * the text a scrape reads (Prometheus text format, exposition.h). Only
 * metrics-http.c serves them; every other module counts.
 *
 * Who writes what, and who owns it:
 *
 *   kdp_metrics   the daemon's; freed last, after the endpoint and the servers
 *   │ lock ─ taken by the loop thread and by a scrape, never by a CQ or worker thread
 *   ├─ resources ──► kdp_metrics_resource   one per served resource, reference counted:
 *   │  (list, under lock)   the list holds one (the loop: _resource_add, _remove),
 *   │                       each kdp_server serving it one (dropped by whichever
 *   │                       thread frees the server), a scrape one while it writes
 *   │     counters, histograms, streams, registered:
 *   │            relaxed atomics updated in place, by the CQ thread (allocations,
 *   │            latencies, streams) or the loop (registrations, unhealthy)
 *   │     snapshot, reason names: set and appended by the loop under the lock;
 *   │            a name, once appended, stays until the resource is freed
 *   ├─ backends[], subsystems[]   appended by the loop at start under the lock,
 *   │            in fixed arrays; their histograms and counters atomic
 *   ├─ kubelet restarts           atomic, the loop
 *   └─ heartbeats[]               added before the endpoint starts; each stamped by its
 *                thread (the loop's beat timer, a CQ thread woken by its deadline)
 *
 * A scrape takes the lock, takes a reference on each resource and its
 * snapshot and notes how many reason names it has, lets the lock go, then
 * writes: the loop waits at most for that copy, the CQ threads never.
 *
 * Bounded labels: resource, backend and subsystem are the daemon's (fixed by
 * its config); results and actions are fixed sets. A backend's unhealthy
 * reason is free text, often with a count or a device in it ("AER fatal
 * errors rose from 0 to 2", "device node /dev/nvidia3 missing"), so the label
 * is its first clause (before "; ") with each run of digits as "N", at most 64
 * characters; a resource keeps the first KDP_METRICS_MAX_REASONS such values
 * and counts the rest as "other". Devices appear as labels only with
 * device_health (kdp_device_health, one series per device, opted into).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <kdp/cleanup.h>

#include "snapshot.h"

#define KDP_METRICS_MAX_BACKENDS 64
#define KDP_METRICS_MAX_SUBSYSTEMS 64
#define KDP_METRICS_MAX_HEARTBEATS 8
#define KDP_METRICS_MAX_REASONS 8
#define KDP_METRICS_STALL_MS 10000

typedef struct kdp_metrics kdp_metrics;
typedef struct kdp_metrics_resource kdp_metrics_resource;
typedef struct kdp_metrics_backend kdp_metrics_backend;
typedef struct kdp_metrics_heartbeat kdp_metrics_heartbeat;

/* The outcome of one Register attempt: result="success" reason="none", or result="failure" and: */
typedef enum kdp_metrics_registration {
        KDP_METRICS_REGISTERED,
        KDP_METRICS_REGISTER_NO_KUBELET,        /* kubelet_absent: kubelet.sock missing or not a socket */
        KDP_METRICS_REGISTER_ENDPOINT_GONE,     /* endpoint_gone: our socket was deleted, not attempted */
        KDP_METRICS_REGISTER_NOT_STARTED,       /* not_started: the call could not start */
        KDP_METRICS_REGISTER_UNAVAILABLE,       /* unavailable: refused, cut off or cancelled */
        KDP_METRICS_REGISTER_DEADLINE,          /* deadline_exceeded: no answer in time */
        KDP_METRICS_REGISTER_REJECTED,          /* rejected: the kubelet answered with an error */
        _KDP_METRICS_REGISTRATION_MAX,
} kdp_metrics_registration;

typedef struct kdp_metrics_options {
        bool device_health;             /* kdp_device_health{resource,device}: one series per device */
        uint64_t stall_ms;              /* a heartbeat older fails /healthz; 0: no heartbeats at all */
        uint64_t (*clock_ns)(void);     /* the heartbeats' clock; NULL: CLOCK_MONOTONIC (tests: a fake) */
} kdp_metrics_options;

int kdp_metrics_new(const kdp_metrics_options *o, kdp_metrics **ret);
/* Once no scrape runs, every resource is removed and every server that held one is gone. */
kdp_metrics *kdp_metrics_free(kdp_metrics *m);
KDP_DEFINE_CLEANUP_FUNC(kdp_metrics, kdp_metrics_free)

/* CLOCK_MONOTONIC in ns: what latencies are measured with. */
uint64_t kdp_metrics_now_ns(void);
/* How often a heartbeat is to be stamped (a quarter of the stall bound, at most 1 s); 0: never. */
uint64_t kdp_metrics_beat_ms(const kdp_metrics *m);

/* Loop thread. A backend's scan histogram, a watched subsystem's event counters: at start. */
int kdp_metrics_add_backend(kdp_metrics *m, const char *name, unsigned abi, const char *path,
                            kdp_metrics_backend **ret);
void kdp_metrics_backend_scanned(kdp_metrics_backend *b, uint64_t ns);
int kdp_metrics_add_subsystem(kdp_metrics *m, const char *name);
/* A device event; its action out of add remove change move bind unbind online offline is "other". */
void kdp_metrics_device_event(kdp_metrics *m, const char *subsystem, const char *action);
void kdp_metrics_kubelet_restarted(kdp_metrics *m);

/* Before the endpoint starts: a thread /healthz watches, named `what` there. NULL *ret without heartbeats. */
int kdp_metrics_add_heartbeat(kdp_metrics *m, const char *what, kdp_metrics_heartbeat **ret);
/* Its own thread: it ran now. NULL is fine. */
void kdp_metrics_heartbeat_beat(kdp_metrics_heartbeat *h);

/* Loop thread: the series of a resource; *ret is the list's reference, until _remove. */
int kdp_metrics_resource_add(kdp_metrics *m, const char *name, kdp_metrics_resource **ret);
void kdp_metrics_resource_remove(kdp_metrics_resource *r);
/* Any thread; NULL is fine. */
kdp_metrics_resource *kdp_metrics_resource_ref(kdp_metrics_resource *r);
kdp_metrics_resource *kdp_metrics_resource_unref(kdp_metrics_resource *r);

/* Loop thread; each NULL-safe. The devices now (a reference is taken). */
void kdp_metrics_resource_publish(kdp_metrics_resource *r, kdp_snapshot *snap);
void kdp_metrics_resource_unhealthy(kdp_metrics_resource *r, const char *reason);
void kdp_metrics_resource_registration(kdp_metrics_resource *r, kdp_metrics_registration what);
/* Served again on a fresh socket, or stopped: not registered until the next success. */
void kdp_metrics_resource_unregistered(kdp_metrics_resource *r);

/* CQ thread; each NULL-safe. `status` is the call's gRPC status code. */
void kdp_metrics_resource_stream(kdp_metrics_resource *r, bool opened);
void kdp_metrics_resource_allocated(kdp_metrics_resource *r, int status, uint64_t ns);
void kdp_metrics_resource_preferred(kdp_metrics_resource *r, uint64_t ns);
/* A change reached a ListAndWatch stream `ns` after the event or scan that made it. */
void kdp_metrics_resource_update_sent(kdp_metrics_resource *r, uint64_t ns);

/* Loop thread: the first scan is done; /readyz looked at no resource before. */
void kdp_metrics_started(kdp_metrics *m);

/* A scrape (any thread): every family; 0 or -ENOMEM. */
int kdp_metrics_write(kdp_metrics *m, FILE *f);
/* /healthz: true and "ok", or false and a line per thread that has not run for longer than the bound. */
bool kdp_metrics_healthy(kdp_metrics *m, FILE *f);
/*
 * /readyz: true and "ok" when the first scan is done and every resource is registered and has
 * a stream; else false and why: "starting", or a line per resource.
 */
bool kdp_metrics_ready(kdp_metrics *m, FILE *f);
