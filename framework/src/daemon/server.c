/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * DevicePlugin servers (see server.h for threads and ownership).
 *
 * Life of a call (one kdp_call each, tags embedded):
 *   request_tag   a registered method (or the catch-all) matched a new call;
 *                 the next request for that method is armed at once
 *   unary         handle → one batch [initial md, message, status, recv close]
 *                 → reply_tag → freed
 *   ListAndWatch  batch [recv close] → reply_tag when the peer goes away;
 *                 sends [initial md +] message → send_tag; freed when closed
 *                 and no send is in flight
 *   PreStart      batch [recv close] (close_tag) and queued for the worker
 *                 pool; a worker takes the first job sharing no device ID
 *                 with a running one of the same backend, runs the hook (its
 *                 slow part without the backend's lock, kdp_backend_run_unlocked)
 *                 and starts the reply batch [initial md, message, status].
 *                 A queued job whose call is cancelled (close_tag) or whose
 *                 deadline passed (seen when a worker looks) never runs the
 *                 hook: it is answered DEADLINE_EXCEEDED. Freed when both
 *                 close_tag and reply_tag are done
 *   hook call     an Allocate or GetPreferredAllocation of a backend with an
 *                 allocate or preferred hook: decoded on the CQ thread, then a
 *                 job like a PreStart's (same batches, same dropping, same
 *                 freeing). The worker takes the server's snapshot as it is
 *                 then, answers (the hook under the backend's lock) and starts
 *                 the reply batch. A backend's hook calls run one at a time, as
 *                 its lock would make them anyway, so a backend whose lock is
 *                 held (a slow scan) keeps at most one worker waiting for them.
 *                 Without the hook the CQ thread answers from the snapshot and
 *                 never takes the backend's lock
 *
 * What one local peer can make a server hold (gRPC core 1.51 bounds little
 * of it itself; measured with tests/e2e/h2-abuse.py, bench/h2-abuse.sh):
 *   bytes         kdpd accepts on the socket itself and hands gRPC each
 *                 connection through the gate (gate.h): a peer's new streams
 *                 pass only as fast as kdpd takes them as calls, and a peer
 *                 whose answers wait for it is not read; at most 64
 *                 connections a socket
 *   calls         unary methods are registered without their payload, so a
 *                 call is counted from its headers. Each server keeps its
 *                 unary calls in arrival order (live_head, under s->lock;
 *                 counted on the CQ thread in on_request, uncounted by
 *                 whichever thread frees the call). Past
 *                 KDP_SERVER_MAX_CALLS, the oldest call that waits on its
 *                 peer (for its message, or to take its answer) is
 *                 cancelled with RESOURCE_EXHAUSTED; a peer that reads its
 *                 answers, as the kubelet does, holds a call for
 *                 microseconds. ListAndWatch streams are not counted.
 *   pings         acked, never answered with GOAWAY (max_ping_strikes 0):
 *                 the core's GOAWAY path held ~90 MB per flooding
 *                 connection, while without it the core stops reading a
 *                 peer whose acks back up (its queue of induced frames)
 *   connections   with no call for CONNECTION_IDLE_MS, closed by the core
 *                 (the kubelet always has its ListAndWatch open)
 *
 * Threads:
 *
 *   CQ thread ──► Options: answered at once
 *        │        Allocate, Preferred, PreStart of a backend without that
 *        │        hook: answered at once from the snapshot, no backend lock
 *        └─────► Allocate, Preferred, PreStart with a hook ─► jobs (FIFO, rt->lock)
 *                                          │ a job waits while a running one
 *                                          │ of its backend is a PreStart
 *                                          │ sharing an ID, or, for an Allocate
 *                                          │ or Preferred, is one of those
 *                worker 1..WORKERS_MAX ◄───┘ (started when the queue outgrows
 *                  the idle workers; they live until the runtime is freed)
 *                  pre_start: backend lock ─ run_unlocked: no lock ─ lock
 *                  allocate, preferred: snapshot, backend lock ─ hook ─ unlock
 *                  └► reply batch ─► CQ thread frees the call
 *
 * A hook call's owner: the job list (rt->lock), then the worker that took it
 * (its running slot) until it starts the reply batch, then gRPC until both
 * close_tag and reply_tag are done, when the CQ thread frees it. Cancelled
 * while queued, it is answered DEADLINE_EXCEEDED without the hook; cancelled
 * while the hook runs, the hook's answer goes to a dead call and is dropped
 * with it. The call holds a reference on its server, so a resource removed
 * meanwhile keeps its server and snapshot until the call is freed; the backend
 * outlives every server (kdp_server_runtime_free() first). A backend stopped
 * or restarted at reload waits for a running hook (its lock); a queued one
 * then runs against the restarted backend, or, stopped, gets the default.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

#include <kdp/log.h>

#include "deviceplugin/v1beta1/api.pb-c.h"
#include "gate.h"
#include "pluginregistration/v1/api.pb-c.h"
#include "log-limit.h"
#include "proto-conv.h"
#include "server.h"
#include "tag.h"
#include "unix-socket.h"

#define CANCEL_AFTER_MS 500
#define CONNECTION_IDLE_MS 10000
#define REFUSALS_PER_WINDOW 5
#define REFUSAL_WINDOW_USEC (10u * 1000000u)
#define METHOD_PREFIX "/v1beta1.DevicePlugin/"
#define WATCHER_PREFIX "/pluginregistration.Registration/"

typedef enum method {
        M_OPTIONS,
        M_LIST_AND_WATCH,
        M_PREFERRED,
        M_ALLOCATE,
        M_PRE_START,
        M_GET_INFO,                     /* the plugin watcher's (docs/kubelet.md §1.7) */
        M_NOTIFY,
        _M_REGISTERED,
        M_UNKNOWN = _M_REGISTERED,
        _M_MAX,
} method;

static const char *const method_names[_M_REGISTERED] = {
        [M_OPTIONS] = METHOD_PREFIX "GetDevicePluginOptions",
        [M_LIST_AND_WATCH] = METHOD_PREFIX "ListAndWatch",
        [M_PREFERRED] = METHOD_PREFIX "GetPreferredAllocation",
        [M_ALLOCATE] = METHOD_PREFIX "Allocate",
        [M_PRE_START] = METHOD_PREFIX "PreStartContainer",
        [M_GET_INFO] = WATCHER_PREFIX "GetInfo",
        [M_NOTIFY] = WATCHER_PREFIX "NotifyRegistrationStatus",
};

/* Where a unary call is, for the call limit (under the server lock). */
typedef enum call_phase {
        P_UNTRACKED,                    /* ListAndWatch, or not yet counted */
        P_READING,                      /* waiting for its request message: may be evicted */
        P_RUNNING,                      /* being answered (a backend hook may run long) */
        P_ANSWERED,                     /* answer handed to grpc, waiting for the peer: may be evicted */
} call_phase;

typedef struct kdp_call kdp_call;
struct kdp_call {
        kdp_tag request_tag;
        kdp_tag message_tag;
        kdp_tag reply_tag;
        kdp_tag send_tag;
        kdp_server *server;
        method m;
        grpc_call *call;
        gpr_timespec deadline;
        grpc_metadata_array md;
        grpc_call_details details;
        grpc_byte_buffer *payload;
        grpc_byte_buffer *reply;
        grpc_byte_buffer *send_buf;
        int cancelled;
        /* ListAndWatch, under the server lock */
        bool closed, send_busy, ended, status_pending, md_sent;
        uint64_t sent_generation;
        uint64_t changed_ns;            /* the oldest change published and not yet sent (metrics), 0: none */
        uint64_t sending_changed_ns;    /* ... of the send in flight */
        kdp_call *prev, *next;
        /* a job (PreStart, or an Allocate or Preferred for a hook), under rt->lock */
        ProtobufCMessage *request;
        uint64_t started_ns;            /* its request message came (metrics) */
        kdp_call *next_job;
        bool deferred;                  /* logged once as waiting for an earlier job of its IDs */
        bool queued;                    /* in rt's job list */
        bool close_armed;               /* close_tag's batch started: the reply batch has no recv close */
        unsigned n_pending;             /* of close_tag and reply_tag, while close_armed */
        kdp_tag close_tag;
        /* the call limit, under the server lock */
        call_phase phase;
        bool evicted;
        kdp_call *live_prev, *live_next;
        uint64_t conn;                  /* the gate's connection, 0 if unknown */
        kdp_gate_peer cred;             /* its peer, for refusals and the plugin watcher's calls */
};

struct kdp_server {
        kdp_server_runtime *rt;
        pthread_mutex_t lock;
        unsigned refs;                  /* under lock */
        char *resource;
        char *socket_path;
        grpc_server *server;
        kdp_gate_listener *listener;    /* the socket, until the stop */
        void *methods[_M_REGISTERED];
        kdp_backend *backend;
        kdp_snapshot *snap;             /* under lock */
        kdp_metrics_resource *series;   /* own reference; may be NULL */
        kdp_call *streams;              /* under lock */
        unsigned n_streams;
        kdp_call *live_head, *live_tail;        /* unary calls by arrival, under lock */
        unsigned n_live;                /* of them not evicted, under lock */
        uint64_t n_evicted;             /* under lock */
        bool started, stopping;
        gpr_timespec cancel_at;
        kdp_tag shutdown_tag;
        kdp_server_events ev;
        void *userdata;
        kdp_server *next_stopping;      /* runtime list, under rt->lock */
        kdp_log_limit refusals[_M_MAX]; /* "Refused call" lines, per method */
        bool info_asked;                /* under lock: a GetInfo was answered, by info_cred */
        kdp_gate_peer info_cred;        /* the peer of the last GetInfo answered (under lock) */
};

/*
 * One thread serves the queue. Measured with 10000 sequential Allocates (how
 * the kubelet calls): 1 thread 98 us p50 and 51 us of kdpd CPU per call; 2
 * threads 170 us and 119 us, the threads taking turns polling one pollset.
 * A second thread only pays off under 16 concurrent callers (p50 1050 -> 600 us).
 */
#define CQ_THREADS 1

/* A CQ thread and its heartbeat (NULL without heartbeats). */
typedef struct cq_thread {
        kdp_server_runtime *rt;
        pthread_t thread;
        kdp_metrics_heartbeat *beat;
} cq_thread;

/*
 * PreStarts that run at once, whatever their resources: one per card
 * programmed in parallel on a large FPGA node. A job past them waits for a
 * free worker, within the kubelet's 30 s.
 */
#define WORKERS_MAX 8

struct kdp_server_runtime {
        grpc_completion_queue *cq;
        kdp_gate *gate;                 /* every server's socket */
        cq_thread cq_threads[CQ_THREADS];
        pthread_t workers[WORKERS_MAX];
        unsigned n_cq_threads;
        uint64_t beat_ms;               /* a CQ thread's longest wait on the queue; 0: no deadline */
        pthread_mutex_t lock;
        pthread_cond_t cond;
        unsigned n_servers;             /* alive, under lock */
        kdp_server *stopping;           /* under lock */
        /* the worker pool, under lock */
        kdp_call *jobs_head, *jobs_tail;
        unsigned n_jobs, n_workers, n_idle;
        kdp_call *running[WORKERS_MAX];
        bool worker_quit;
        atomic_bool busy;               /* a call came since kdp_server_runtime_idle() */
        void (*on_busy)(void *userdata);
        void *busy_userdata;
        gid_t socket_gid;               /* (gid_t) -1: sockets 0600, else 0660 and this group */
};

grpc_status_code kdp_server_status_from_errno(int r) {
        switch (r) {
        case 0:
                return GRPC_STATUS_OK;
        case -EINVAL:
        case -EBADMSG:
                return GRPC_STATUS_INVALID_ARGUMENT;
        case -ENOENT:
        case -ENODEV:
                return GRPC_STATUS_NOT_FOUND;
        case -EBUSY:
        case -EAGAIN:
                return GRPC_STATUS_UNAVAILABLE;
        case -ENOMEM:
        case -E2BIG:
        case -EMSGSIZE:
                return GRPC_STATUS_RESOURCE_EXHAUSTED;
        case -EOPNOTSUPP:
                return GRPC_STATUS_UNIMPLEMENTED;
        case -EPERM:
                return GRPC_STATUS_PERMISSION_DENIED;
        default:
                return GRPC_STATUS_INTERNAL;
        }
}

/* ---- reference counting ---- */

static kdp_server *server_ref(kdp_server *s) {
        pthread_mutex_lock(&s->lock);
        s->refs++;
        pthread_mutex_unlock(&s->lock);
        return s;
}

static void server_unref(kdp_server *s) {
        kdp_server_runtime *rt = s->rt;
        unsigned left;

        pthread_mutex_lock(&s->lock);
        left = --s->refs;
        pthread_mutex_unlock(&s->lock);
        if (left > 0)
                return;
        if (s->server)
                grpc_server_destroy(s->server);
        if (s->ev.stopped)
                s->ev.stopped(s->userdata);
        kdp_snapshot_unref(s->snap);
        kdp_metrics_resource_unref(s->series);
        pthread_mutex_destroy(&s->lock);
        for (size_t i = 0; i < _M_MAX; i++)
                kdp_log_limit_done(&s->refusals[i]);
        free(s->resource);
        free(s->socket_path);
        free(s);
        pthread_mutex_lock(&rt->lock);
        rt->n_servers--;
        pthread_cond_broadcast(&rt->cond);
        pthread_mutex_unlock(&rt->lock);
}

static kdp_snapshot *server_snapshot(kdp_server *s) {
        kdp_snapshot *snap;

        pthread_mutex_lock(&s->lock);
        snap = kdp_snapshot_ref(s->snap);
        pthread_mutex_unlock(&s->lock);
        return snap;
}

/* ---- calls ---- */

static void call_untrack(kdp_call *c);

static void call_free(kdp_call *c) {
        call_untrack(c);
        if (c->m == M_LIST_AND_WATCH)
                kdp_gate_stream_end(c->server->rt->gate, c->conn);
        if (c->call)
                grpc_call_unref(c->call);
        grpc_metadata_array_destroy(&c->md);
        grpc_call_details_destroy(&c->details);
        if (c->payload)
                grpc_byte_buffer_destroy(c->payload);
        if (c->reply)
                grpc_byte_buffer_destroy(c->reply);
        if (c->send_buf)
                grpc_byte_buffer_destroy(c->send_buf);
        if (c->request)
                protobuf_c_message_free_unpacked(c->request, NULL);
        server_unref(c->server);
        free(c);
}

static void on_request(kdp_tag *tag, bool ok);

static int arm_request(kdp_server *s, method m) {
        grpc_completion_queue *cq = s->rt->cq;
        grpc_call_error e;
        kdp_call *c;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->request_tag.on_done = on_request;
        c->server = server_ref(s);
        c->m = m;
        grpc_metadata_array_init(&c->md);
        grpc_call_details_init(&c->details);
        if (m == M_UNKNOWN)
                e = grpc_server_request_call(s->server, &c->call, &c->details, &c->md, cq, cq, &c->request_tag);
        else
                e = grpc_server_request_registered_call(s->server, s->methods[m], &c->call, &c->deadline,
                                                        &c->md, NULL, cq, cq, &c->request_tag);
        if (e != GRPC_CALL_OK) {
                call_free(c);
                return -EIO;
        }
        return 0;
}

/* Under no lock: one of a PreStart job's two batches ended; the call is freed after both. */
static void job_batch_done(kdp_call *c) {
        kdp_server_runtime *rt = c->server->rt;
        bool last;

        pthread_mutex_lock(&rt->lock);
        last = --c->n_pending == 0;
        pthread_mutex_unlock(&rt->lock);
        if (last)
                call_free(c);
}

static void on_reply_done(kdp_tag *tag, bool ok) {
        kdp_call *c = KDP_CONTAINER_OF(tag, kdp_call, reply_tag);

        if (c->close_armed)
                job_batch_done(c);
        else
                call_free(c);
}

static void call_set_phase(kdp_call *c, call_phase phase);

/* Answers a unary call: `reply` (may be NULL) is sent when status is OK. */
static void reply_unary(kdp_call *c, grpc_status_code status, const char *details) {
        grpc_slice slice = grpc_slice_from_copied_string(details ? details : "");
        grpc_op ops[4] = { 0 };
        grpc_op *op = ops;
        grpc_call_error e;

        op->op = GRPC_OP_SEND_INITIAL_METADATA;
        op++;
        if (status == GRPC_STATUS_OK && c->reply) {
                op->op = GRPC_OP_SEND_MESSAGE;
                op->data.send_message.send_message = c->reply;
                op++;
        }
        op->op = GRPC_OP_SEND_STATUS_FROM_SERVER;
        op->data.send_status_from_server.status = status;
        op->data.send_status_from_server.status_details = details ? &slice : NULL;
        op++;
        if (!c->close_armed) {
                op->op = GRPC_OP_RECV_CLOSE_ON_SERVER;
                op->data.recv_close_on_server.cancelled = &c->cancelled;
                op++;
        }
        c->reply_tag.on_done = on_reply_done;
        call_set_phase(c, P_ANSWERED);
        e = grpc_call_start_batch(c->call, ops, (size_t) (op - ops), &c->reply_tag, NULL);
        grpc_slice_unref(slice);
        if (e != GRPC_CALL_OK) {
                kdp_log_warning("Failed to answer call", KDP_F_STR("resource", c->server->resource),
                                KDP_F_STR("grpcError", grpc_call_error_to_string(e)));
                on_reply_done(&c->reply_tag, false);
        }
}

/* The names of the codes kdp_server_status_from_errno() gives, as gRPC spells them. */
static const char *status_name(grpc_status_code status) {
        switch (status) {
        case GRPC_STATUS_OK:
                return "OK";
        case GRPC_STATUS_INVALID_ARGUMENT:
                return "INVALID_ARGUMENT";
        case GRPC_STATUS_NOT_FOUND:
                return "NOT_FOUND";
        case GRPC_STATUS_UNAVAILABLE:
                return "UNAVAILABLE";
        case GRPC_STATUS_RESOURCE_EXHAUSTED:
                return "RESOURCE_EXHAUSTED";
        case GRPC_STATUS_UNIMPLEMENTED:
                return "UNIMPLEMENTED";
        case GRPC_STATUS_PERMISSION_DENIED:
                return "PERMISSION_DENIED";
        default:
                return "INTERNAL";
        }
}

static uint64_t monotonic_usec(void) {
        gpr_timespec t = gpr_now(GPR_CLOCK_MONOTONIC);

        return (uint64_t) t.tv_sec * 1000000u + (uint64_t) t.tv_nsec / 1000u;
}

/*
 * Every refused call is a warning, since a peer that is not the kubelet or a
 * kubelet out of step is worth an operator's look; a peer can refuse itself
 * at will, so each method of each resource logs at most REFUSALS_PER_WINDOW
 * lines per window and then counts, and the count is logged before its next line.
 * The line names the peer (pid, uid: SO_PEERCRED of its connection; 0 and
 * -1 when not known), so an operator can find a client that is not the kubelet.
 */
static void reply_error(kdp_call *c, int r, const char *details) {
        const char *name = c->m < _M_REGISTERED ? method_names[c->m] : "unknown";
        grpc_status_code status = kdp_server_status_from_errno(r);
        uint64_t suppressed = 0;

        if (kdp_log_limit_allow(&c->server->refusals[c->m], monotonic_usec(), &suppressed)) {
                if (suppressed > 0)
                        kdp_log_warning("Suppressed refused call lines", KDP_F_STR("resource", c->server->resource),
                                        KDP_F_STR("method", name), KDP_F_INT("suppressed", suppressed));
                kdp_log_warning("Refused call", KDP_F_STR("resource", c->server->resource), KDP_F_STR("method", name),
                                KDP_F_STR("status", status_name(status)), KDP_F_STR("reason", details),
                                KDP_F_INT("pid", c->cred.pid), KDP_F_INT("uid", (int) c->cred.uid));
        }
        reply_unary(c, status, details);
}

/*
 * A unary call whose peer went, or ended its side, before the request
 * message: nothing was asked, so nothing is refused or warned of (a kubelet
 * killed in the middle of a call does this).
 */
static void reply_without_request(kdp_call *c, int r, const char *details) {
        kdp_log_v(1, "Call ended before its request message", KDP_F_STR("resource", c->server->resource),
                  KDP_F_STR("method", c->m < _M_REGISTERED ? method_names[c->m] : "unknown"),
                  KDP_F_STR("reason", details));
        reply_unary(c, kdp_server_status_from_errno(r), details);
}

static void reply_message(kdp_call *c, int r, grpc_byte_buffer *bb) {
        if (r < 0) {
                reply_error(c, r, "failed to encode the response");
                return;
        }
        c->reply = bb;
        reply_unary(c, GRPC_STATUS_OK, NULL);
}

static int answer_empty(char *err, size_t err_size, grpc_byte_buffer **ret) {
        int r = kdp_proto_conv_pack_empty(ret);

        if (r < 0)
                snprintf(err, err_size, "failed to encode the response");
        return r;
}

/* ---- the methods ---- */

/*
 * Each answer_*() answers one decoded request of a server of `resource`: 0 and the reply in *ret,
 * or a -errno with the message for the peer in err. handle_unary() and kdp_server_answer() call them.
 */

static int answer_options(const char *resource, const kdp_backend *backend, char *err, size_t err_size,
                          grpc_byte_buffer **ret) {
        bool pre_start = backend->pre_start != NULL;
        int r = kdp_proto_conv_pack_options(pre_start, true, ret);

        if (r < 0) {
                snprintf(err, err_size, "failed to encode the response");
                return r;
        }
        kdp_log_v(2, "Answered device plugin options", KDP_F_STR("resource", resource),
                  KDP_F_STR("preStartRequired", pre_start ? "true" : "false"),
                  KDP_F_STR("getPreferredAllocationAvailable", "true"));
        return 0;
}

/* "a,b,c" for a log line (free()); NULL when out of memory. */
static char *ids_text(const char *const *ids, size_t n) {
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        if (!f)
                return NULL;
        for (size_t i = 0; i < n; i++)
                fprintf(f, "%s%s", i > 0 ? "," : "", ids[i]);
        if (fclose(f) != 0) {
                free(text);
                return NULL;
        }
        return text;
}

/* Checks every ID of a request; on failure writes a message for the peer into err. */
static int check_ids(const char *resource, const kdp_snapshot *snap, char *const *ids, size_t n,
                     bool warn_unhealthy, char *err, size_t err_size) {
        for (size_t i = 0; i < n; i++) {
                ssize_t idx;

                if (strlen(ids[i]) > KDP_DEVICE_ID_MAX) {
                        snprintf(err, err_size, "device ID longer than %d characters", KDP_DEVICE_ID_MAX);
                        return -EINVAL;
                }
                if (!kdp_device_id_is_valid(ids[i])) {
                        snprintf(err, err_size, "device ID \"%s\" is not 1 to %d printable ASCII characters without "
                                 "spaces", ids[i], KDP_DEVICE_ID_MAX);
                        return -EINVAL;
                }
                idx = kdp_snapshot_find(snap, ids[i]);
                if (idx < 0) {
                        snprintf(err, err_size, "unknown device \"%s\" of resource %s", ids[i], resource);
                        return -EINVAL;
                }
                if (warn_unhealthy && snap->list.devices[idx].health != KDP_HEALTHY)
                        kdp_log_warning("Allocated unhealthy device", KDP_F_STR("resource", resource),
                                        KDP_F_STR("device", ids[i]),
                                        KDP_F_STR("reason", snap->list.devices[idx].health_reason));
        }
        return 0;
}

static int allocate_container(const char *resource, kdp_backend *backend, const kdp_snapshot *snap,
                              const V1beta1__ContainerAllocateRequest *cr, kdp_alloc_response *resp) {
        kdp_alloc_request req = {
                .resource = resource,
                .device_ids = (const char *const *) cr->devices_ids,
                .n_device_ids = cr->n_devices_ids,
        };
        int r;

        kdp_alloc_response_init(resp, &snap->list);
        r = kdp_registry_allocate(backend, &req, resp);
        if (r != -EOPNOTSUPP)
                return r;
        for (size_t i = 0; i < cr->n_devices_ids; i++) {
                r = kdp_alloc_response_add_device(resp, cr->devices_ids[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int answer_allocate(const char *resource, kdp_backend *backend, const kdp_snapshot *snap,
                           const V1beta1__AllocateRequest *req, char *err, size_t err_size, grpc_byte_buffer **ret) {
        _cleanup_free_ kdp_alloc_response *resps = NULL;
        size_t n = req->n_container_requests, done = 0;
        int r = 0;

        if (n == 0) {   /* more are refused before decoding */
                snprintf(err, err_size, "an AllocateRequest needs 1 to %d container requests, got %zu",
                         KDP_PROTO_CONV_MAX_CONTAINERS, n);
                return -EINVAL;
        }
        for (size_t i = 0; i < n && r >= 0; i++)
                r = check_ids(resource, snap, req->container_requests[i]->devices_ids,
                              req->container_requests[i]->n_devices_ids, true, err, err_size);
        if (r < 0)
                return r;
        resps = calloc(n, sizeof(*resps));
        if (!resps) {
                snprintf(err, err_size, "out of memory");
                return -ENOMEM;
        }
        for (; done < n && r >= 0; done++)
                r = allocate_container(resource, backend, snap, req->container_requests[done], &resps[done]);
        if (r >= 0)
                r = kdp_proto_conv_pack_allocate(resps, n, ret);
        for (size_t i = 0; i < done; i++)
                kdp_alloc_response_done(&resps[i]);
        if (r < 0) {
                snprintf(err, err_size, "allocation failed: %s", strerror(-r));
                return r;
        }
        kdp_log_v(2, "Allocated devices", KDP_F_STR("resource", resource), KDP_F_INT("containers", n));
        return 0;
}

/* IDs of `ids` known to the snapshot, as indices; unknown ones are dropped (the kubelet does the same). */
static size_t known_indices(const kdp_snapshot *snap, char *const *ids, size_t n, size_t *ret) {
        size_t k = 0;

        for (size_t i = 0; i < n; i++) {
                ssize_t idx = kdp_snapshot_find(snap, ids[i]);

                if (idx >= 0)
                        ret[k++] = (size_t) idx;
        }
        return k;
}

static int compare_strp(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/*
 * What a kubelet never asks, refused with INVALID_ARGUMENT naming it: a size
 * below 1, more must_include IDs than the size, a must_include ID that is not
 * among the available ones (the kubelet's available set always holds them).
 * A size above the number of available IDs is answered best effort, with all
 * of them, and IDs unknown here (a device just gone) are left out: the kubelet
 * fills a short answer itself, while an error would fail the pod's admission.
 */
static int check_preferred(const V1beta1__ContainerPreferredAllocationRequest *cr, char *err, size_t err_size) {
        _cleanup_free_ char **sorted = NULL;
        size_t na = cr->n_available_deviceids, nm = cr->n_must_include_deviceids;

        if (cr->allocation_size < 1) {
                snprintf(err, err_size, "allocation size %" PRId32 ": at least 1 device must be asked for",
                         cr->allocation_size);
                return -EINVAL;
        }
        if (nm > (size_t) cr->allocation_size) {
                snprintf(err, err_size, "%zu must_include devices but an allocation size of %" PRId32, nm,
                         cr->allocation_size);
                return -EINVAL;
        }
        if (nm == 0)
                return 0;

        sorted = calloc(na + 1, sizeof(char *));
        if (!sorted)
                return -ENOMEM;
        if (na > 0)     /* none available: protobuf-c leaves the array NULL, which memcpy may not take */
                memcpy(sorted, cr->available_deviceids, na * sizeof(char *));
        qsort(sorted, na, sizeof(char *), compare_strp);
        for (size_t i = 0; i < nm; i++)
                if (!bsearch(&cr->must_include_deviceids[i], sorted, na, sizeof(char *), compare_strp)) {
                        snprintf(err, err_size, "must_include device \"%s\" is not among the available devices",
                                 cr->must_include_deviceids[i]);
                        return -EINVAL;
                }
        return 0;
}

/* The backend's answer is used only if it is exactly what the kubelet asked for. */
static bool pref_answer_valid(const kdp_pref_response *resp, const kdp_pref_request *req, size_t want) {
        if (resp->n_ids != want)
                return false;
        for (size_t i = 0; i < req->n_must_include; i++) {
                bool found = false;

                for (size_t j = 0; j < resp->n_ids && !found; j++)
                        found = strcmp(resp->ids[j], req->must_include[i]) == 0;
                if (!found)
                        return false;
        }
        return true;
}

static int prefer_container(const char *resource, kdp_backend *backend, const kdp_snapshot *snap,
                            const V1beta1__ContainerPreferredAllocationRequest *cr, kdp_pref_request *req,
                            kdp_pref_response *resp) {
        size_t na = cr->n_available_deviceids, nm = cr->n_must_include_deviceids;
        _cleanup_free_ size_t *avail = calloc(na + 1, sizeof(size_t));
        _cleanup_free_ size_t *must = calloc(nm + 1, sizeof(size_t));
        _cleanup_free_ size_t *picked = NULL;
        size_t size = cr->allocation_size > 0 ? (size_t) cr->allocation_size : 0, pick_size = size;
        size_t n_avail, n_must, n_picked;
        int r;

        if (!avail || !must)
                return -ENOMEM;
        *req = (kdp_pref_request){
                .resource = resource,
                .available = (const char *const *) cr->available_deviceids,
                .n_available = na,
                .must_include = (const char *const *) cr->must_include_deviceids,
                .n_must_include = nm,
                .size = size,
        };
        kdp_pref_response_init(resp, req);
        n_avail = known_indices(snap, cr->available_deviceids, na, avail);
        n_must = known_indices(snap, cr->must_include_deviceids, nm, must);
        /* no more can be picked than are named: the same answer, without room for a size of 2^31 */
        if (pick_size > n_avail + n_must)
                pick_size = n_avail + n_must;
        picked = calloc(pick_size + 1, sizeof(size_t));
        if (!picked)
                return -ENOMEM;
        n_picked = kdp_preferred_pick(snap->pref, avail, n_avail, must, n_must, pick_size, picked);
        r = kdp_registry_preferred(backend, req, resp);
        if (r >= 0 && pref_answer_valid(resp, req, n_picked))
                return 0;
        if (r >= 0 || r != -EOPNOTSUPP)
                kdp_log_warning("Replaced backend preferred allocation by the default",
                                KDP_F_STR("resource", resource), KDP_F_INT("err", r));
        kdp_pref_response_done(resp);
        kdp_pref_response_init(resp, req);
        resp->ids = calloc(n_picked + 1, sizeof(char *));
        if (!resp->ids)
                return -ENOMEM;
        for (size_t i = 0; i < n_picked; i++)
                resp->ids[i] = snap->list.devices[picked[i]].id;
        resp->n_ids = resp->n_allocated = n_picked;
        return 0;
}

static int answer_preferred(const char *resource, kdp_backend *backend, const kdp_snapshot *snap,
                            const V1beta1__PreferredAllocationRequest *req, char *err, size_t err_size,
                            grpc_byte_buffer **ret) {
        _cleanup_free_ kdp_pref_response *resps = NULL;
        _cleanup_free_ kdp_pref_request *reqs = NULL;
        size_t n = req->n_container_requests, done = 0;
        int r = 0;

        for (size_t i = 0; i < n; i++) {
                r = check_preferred(req->container_requests[i], err, err_size);
                if (r == -ENOMEM)
                        snprintf(err, err_size, "out of memory");
                if (r < 0)
                        return r;
        }
        resps = calloc(n + 1, sizeof(*resps));
        reqs = calloc(n + 1, sizeof(*reqs));
        if (!resps || !reqs) {
                snprintf(err, err_size, "out of memory");
                return -ENOMEM;
        }
        for (; done < n && r >= 0; done++)
                r = prefer_container(resource, backend, snap, req->container_requests[done], &reqs[done],
                                     &resps[done]);
        if (r >= 0)
                r = kdp_proto_conv_pack_preferred(resps, n, ret);
        for (size_t i = 0; r >= 0 && i < n && kdp_log_get_verbosity() >= 2; i++) {
                _cleanup_free_ char *ids = ids_text((const char *const *) resps[i].ids, resps[i].n_ids);

                kdp_log_v(2, "Chose preferred devices", KDP_F_STR("resource", resource),
                          KDP_F_INT("container", i), KDP_F_INT("size", reqs[i].size), KDP_F_STR("devices", ids));
        }
        for (size_t i = 0; i < done; i++)
                kdp_pref_response_done(&resps[i]);
        if (r < 0)
                snprintf(err, err_size, "failed to encode the response");
        return r;
}

/*
 * A PreStartContainer's check: a -errno (err set) for IDs the server cannot take, 1 when the
 * backend's hook is to run (kdp_registry_pre_start()), else 0 and the empty answer in *ret.
 */
static int answer_pre_start(const char *resource, const kdp_backend *backend, const kdp_snapshot *snap,
                            const V1beta1__PreStartContainerRequest *req, char *err, size_t err_size,
                            grpc_byte_buffer **ret) {
        int r = check_ids(resource, snap, req->devices_ids, req->n_devices_ids, false, err, err_size);

        if (r < 0)
                return r;
        if (backend->pre_start)
                return 1;
        kdp_log_v(2, "Prepared devices for a container", KDP_F_STR("resource", resource),
                  KDP_F_INT("devices", req->n_devices_ids), KDP_F_STR("backendHook", "none"));
        return answer_empty(err, err_size, ret);
}

/* What the hook's result `r` answers: 0 and the empty answer in *ret, or r with err set. */
static int answer_pre_started(const char *resource, const V1beta1__PreStartContainerRequest *req, int r,
                              char *err, size_t err_size, grpc_byte_buffer **ret) {
        if (r < 0) {
                kdp_log_warning_errno(r, "Failed to prepare devices for a container", KDP_F_STR("resource", resource));
                snprintf(err, err_size, "PreStartContainer failed: %s", strerror(-r));
                return r;
        }
        kdp_log_v(2, "Prepared devices for a container", KDP_F_STR("resource", resource),
                  KDP_F_INT("devices", req->n_devices_ids), KDP_F_STR("backendHook", "done"));
        return answer_empty(err, err_size, ret);
}

static int answer_get_info(const char *resource, char *err, size_t err_size, grpc_byte_buffer **ret) {
        int r = kdp_proto_conv_pack_plugin_info(resource, ret);

        if (r < 0) {
                snprintf(err, err_size, "failed to encode the response");
                return r;
        }
        kdp_log_v(2, "Answered the plugin watcher's GetInfo", KDP_F_STR("resource", resource));
        return 0;
}

/* One decoded request `m` of method `m`: as answer_*(); 1 for a PreStart whose hook is to run. */
static int answer_unary(const char *resource, kdp_backend *backend, const kdp_snapshot *snap, method mt,
                        const ProtobufCMessage *m, char *err, size_t err_size, grpc_byte_buffer **ret) {
        switch (mt) {
        case M_OPTIONS:
                return answer_options(resource, backend, err, err_size, ret);
        case M_ALLOCATE:
                return answer_allocate(resource, backend, snap, (const V1beta1__AllocateRequest *) m, err, err_size,
                                       ret);
        case M_PREFERRED:
                return answer_preferred(resource, backend, snap, (const V1beta1__PreferredAllocationRequest *) m,
                                        err, err_size, ret);
        case M_PRE_START:
                return answer_pre_start(resource, backend, snap, (const V1beta1__PreStartContainerRequest *) m, err,
                                        err_size, ret);
        case M_GET_INFO:
                return answer_get_info(resource, err, err_size, ret);
        case M_NOTIFY:                  /* handle_unary() tells the loop what it says */
                return answer_empty(err, err_size, ret);
        default:
                snprintf(err, err_size, "unknown method");
                return -EOPNOTSUPP;
        }
}

static void *worker_main(void *userdata);

/* Under rt->lock: one more worker, if the queue outgrows the idle ones and the pool has room. */
static void grow_pool(kdp_server_runtime *rt) {
        int r;

        if (rt->worker_quit || rt->n_workers >= WORKERS_MAX || rt->n_jobs <= rt->n_idle)
                return;
        r = pthread_create(&rt->workers[rt->n_workers], NULL, worker_main, rt);
        if (r != 0) {
                kdp_log_warning_errno(-r, "Failed to start a PreStartContainer worker",
                                      KDP_F_INT("workers", rt->n_workers));
                return;         /* the running workers take the job in turn */
        }
        rt->n_workers++;
}

static void on_job_closed(kdp_tag *tag, bool ok);

/*
 * Queues a PreStart job and starts its [recv close] batch, which completes when
 * the call ends: at once if the caller cancels it or its deadline passes, else
 * after the reply. Without that batch (it failed to start) the reply batch
 * receives the close, as for the other unary calls.
 */
static void queue_job(kdp_server_runtime *rt, kdp_call *c) {
        grpc_op op = { .op = GRPC_OP_RECV_CLOSE_ON_SERVER };

        op.data.recv_close_on_server.cancelled = &c->cancelled;
        c->close_tag.on_done = on_job_closed;
        pthread_mutex_lock(&rt->lock);
        if (rt->jobs_tail)
                rt->jobs_tail->next_job = c;
        else
                rt->jobs_head = c;
        rt->jobs_tail = c;
        rt->n_jobs++;
        c->queued = true;
        /* under the lock: the close may complete on another thread before this returns */
        c->n_pending = 2;
        c->close_armed = grpc_call_start_batch(c->call, &op, 1, &c->close_tag, NULL) == GRPC_CALL_OK;
        grow_pool(rt);
        pthread_cond_broadcast(&rt->cond);
        pthread_mutex_unlock(&rt->lock);
}

/* Under rt->lock: takes queued job `c` out of the queue. */
static void unqueue_job(kdp_server_runtime *rt, kdp_call *c, kdp_call *prev) {
        if (prev)
                prev->next_job = c->next_job;
        else
                rt->jobs_head = c->next_job;
        if (rt->jobs_tail == c)
                rt->jobs_tail = prev;
        c->next_job = NULL;
        c->queued = false;
        rt->n_jobs--;
}

/* A job that will not run: its caller gave up (deadline passed or cancelled) while it was queued. */
static void drop_job(kdp_call *c) {
        const V1beta1__PreStartContainerRequest *req = (const V1beta1__PreStartContainerRequest *) c->request;

        if (c->m != M_PRE_START) {
                kdp_log_warning("Dropped call for a backend hook cancelled or past its deadline while queued",
                                KDP_F_STR("resource", c->server->resource), KDP_F_STR("method", method_names[c->m]));
                reply_unary(c, GRPC_STATUS_DEADLINE_EXCEEDED, "call dropped: cancelled or past its deadline "
                                                              "before the backend's hook ran");
                return;
        }
        kdp_log_warning("Dropped PreStartContainer cancelled or past its deadline while queued",
                        KDP_F_STR("resource", c->server->resource),
                        KDP_F_STR("device", req->n_devices_ids > 0 ? req->devices_ids[0] : ""),
                        KDP_F_INT("devices", req->n_devices_ids));
        reply_unary(c, GRPC_STATUS_DEADLINE_EXCEEDED, "PreStartContainer dropped: cancelled or past its "
                                                      "deadline before it ran");
}

/* CQ thread: the call of a PreStart job ended; still queued, the job is dropped. */
static void on_job_closed(kdp_tag *tag, bool ok) {
        kdp_call *c = KDP_CONTAINER_OF(tag, kdp_call, close_tag);
        kdp_server_runtime *rt = c->server->rt;
        bool drop = false;

        pthread_mutex_lock(&rt->lock);
        if (c->queued && c->cancelled) {
                kdp_call *prev = NULL;

                for (kdp_call *q = rt->jobs_head; q != c; q = q->next_job)
                        prev = q;
                unqueue_job(rt, c, prev);
                drop = true;
        }
        pthread_mutex_unlock(&rt->lock);
        if (drop)
                drop_job(c);
        job_batch_done(c);
}

static bool job_expired(const kdp_call *c) {
        return gpr_time_cmp(gpr_now(c->deadline.clock_type), c->deadline) >= 0;
}

static const V1beta1__PreStartContainerRequest *job_request(const kdp_call *c) {
        return (const V1beta1__PreStartContainerRequest *) c->request;
}

/*
 * Must job `b` wait for running job `a`? Two PreStarts of one backend naming a
 * device in common, or two hook calls (Allocate, Preferred) of one backend.
 */
static bool jobs_overlap(const kdp_call *a, const kdp_call *b) {
        const V1beta1__PreStartContainerRequest *ra = job_request(a), *rb = job_request(b);

        if (a->server->backend != b->server->backend)
                return false;
        if ((a->m == M_PRE_START) != (b->m == M_PRE_START))
                return false;
        if (a->m != M_PRE_START)
                return true;
        for (size_t i = 0; i < ra->n_devices_ids; i++)
                for (size_t j = 0; j < rb->n_devices_ids; j++)
                        if (strcmp(ra->devices_ids[i], rb->devices_ids[j]) == 0)
                                return true;
        return false;
}

/* Under rt->lock: the job in flight that `c` must wait for, or NULL. */
static const kdp_call *job_blocker(const kdp_server_runtime *rt, const kdp_call *c) {
        for (unsigned i = 0; i < WORKERS_MAX; i++)
                if (rt->running[i] && jobs_overlap(rt->running[i], c))
                        return rt->running[i];
        return NULL;
}

/*
 * Under rt->lock: unlinks and returns the oldest job whose deadline passed (*ret_expired
 * set), else the oldest that can run now, into running slot `slot`.
 */
static kdp_call *take_job(kdp_server_runtime *rt, unsigned slot, bool *ret_expired) {
        kdp_call *prev = NULL;

        for (kdp_call *c = rt->jobs_head; c; prev = c, c = c->next_job)
                if (job_expired(c)) {
                        unqueue_job(rt, c, prev);
                        *ret_expired = true;
                        return c;
                }
        prev = NULL;
        for (kdp_call *c = rt->jobs_head; c; prev = c, c = c->next_job) {
                if (job_blocker(rt, c)) {
                        if (!c->deferred && c->m == M_PRE_START) {
                                c->deferred = true;
                                kdp_log_v(2, "Deferred PreStartContainer behind one of the same device",
                                          KDP_F_STR("resource", c->server->resource),
                                          KDP_F_STR("device", job_request(c)->devices_ids[0]));
                        }
                        continue;
                }
                unqueue_job(rt, c, prev);
                rt->running[slot] = c;
                *ret_expired = false;
                return c;
        }
        return NULL;
}

static void run_pre_start(kdp_server_runtime *rt, unsigned slot, kdp_call *c) {
        const V1beta1__PreStartContainerRequest *req = job_request(c);
        kdp_prestart_request pr = {
                .resource = c->server->resource,
                .device_ids = (const char *const *) req->devices_ids,
                .n_device_ids = req->n_devices_ids,
        };
        grpc_byte_buffer *bb = NULL;
        char err[160];
        int r;

        r = kdp_registry_pre_start(c->server->backend, &pr);
        /* out of the running set before the answer: the CQ thread may free the call then */
        pthread_mutex_lock(&rt->lock);
        rt->running[slot] = NULL;
        pthread_cond_broadcast(&rt->cond);
        pthread_mutex_unlock(&rt->lock);
        r = answer_pre_started(c->server->resource, req, r, err, sizeof(err), &bb);
        if (r < 0)
                reply_error(c, r, err);
        else
                reply_message(c, 0, bb);
}

static void count_call(const kdp_call *c, int r, uint64_t started_ns);
static void answer_decoded(kdp_call *c, int r, const char *err, grpc_byte_buffer *bb);

/* An Allocate or Preferred for its backend's hook: answered from the snapshot of now. */
static void run_hook_call(kdp_server_runtime *rt, unsigned slot, kdp_call *c) {
        _cleanup_(kdp_snapshot_unrefp) kdp_snapshot *snap = server_snapshot(c->server);
        grpc_byte_buffer *bb = NULL;
        char err[256];
        int r;

        r = answer_unary(c->server->resource, c->server->backend, snap, c->m, c->request, err, sizeof(err), &bb);
        pthread_mutex_lock(&rt->lock);
        rt->running[slot] = NULL;
        pthread_cond_broadcast(&rt->cond);
        pthread_mutex_unlock(&rt->lock);
        answer_decoded(c, r, err, bb);
}

/* Under rt->lock: a free running slot; there is one per worker, so one is free for a worker without a job. */
static unsigned free_slot(const kdp_server_runtime *rt) {
        unsigned i = 0;

        while (i < WORKERS_MAX - 1 && rt->running[i])
                i++;
        return i;
}

/* Runs jobs until the runtime ends and the queue is empty. */
static void *worker_main(void *userdata) {
        kdp_server_runtime *rt = userdata;

        for (;;) {
                kdp_call *c;
                unsigned slot;
                bool expired = false;

                pthread_mutex_lock(&rt->lock);
                for (;;) {
                        slot = free_slot(rt);
                        c = take_job(rt, slot, &expired);
                        if (c || (rt->worker_quit && !rt->jobs_head))
                                break;
                        rt->n_idle++;
                        pthread_cond_wait(&rt->cond, &rt->lock);
                        rt->n_idle--;
                }
                pthread_mutex_unlock(&rt->lock);
                if (!c)
                        return NULL;
                if (expired)
                        drop_job(c);
                else if (c->m == M_PRE_START)
                        run_pre_start(rt, slot, c);
                else
                        run_hook_call(rt, slot, c);
        }
}

static const ProtobufCMessageDescriptor *request_descriptor(method m) {
        switch (m) {
        case M_ALLOCATE:
                return &v1beta1__allocate_request__descriptor;
        case M_PREFERRED:
                return &v1beta1__preferred_allocation_request__descriptor;
        case M_PRE_START:
                return &v1beta1__pre_start_container_request__descriptor;
        case M_GET_INFO:
                return &pluginregistration__info_request__descriptor;
        case M_NOTIFY:
                return &pluginregistration__registration_status__descriptor;
        default:
                return &v1beta1__empty__descriptor;
        }
}

/*
 * Decodes a request of method `mt`: as kdp_proto_conv_unpack_checked(), with err set on failure; what the
 * walk refuses (a bad string, more than a bound allows) is -EINVAL.
 */
static int unpack_request(grpc_byte_buffer *bb, method mt, ProtobufCMessage **ret, char *err, size_t err_size) {
        char why[200] = "";
        int r = kdp_proto_conv_unpack_checked(bb, request_descriptor(mt), ret, why, sizeof(why));

        if (r == -EILSEQ)
                snprintf(err, err_size, "malformed request message: %s", why);
        else if (r == -E2BIG)
                snprintf(err, err_size, "request refused before decoding: %s", why);
        else if (r < 0)
                snprintf(err, err_size, "malformed request message");
        return r == -EILSEQ || r == -E2BIG ? -EINVAL : r;
}

/* An Allocate or GetPreferredAllocation answered with `r`, `started_ns` after its request message came. */
static void count_call(const kdp_call *c, int r, uint64_t started_ns) {
        uint64_t ns = kdp_metrics_now_ns() - started_ns;

        if (c->m == M_ALLOCATE)
                kdp_metrics_resource_allocated(c->server->series, (int) kdp_server_status_from_errno(r), ns);
        else if (c->m == M_PREFERRED)
                kdp_metrics_resource_preferred(c->server->series, ns);
}

/*
 * A GetInfo answered: its connection is the plugin watcher's for this
 * socket, and its peer the one a Notify that comes on another connection
 * (the kubelet's client reconnected meanwhile) must share.
 */
static void note_registrar(kdp_call *c) {
        kdp_server *s = c->server;

        kdp_gate_set_registrar(s->rt->gate, c->conn);
        pthread_mutex_lock(&s->lock);
        s->info_asked = true;
        s->info_cred = c->cred;
        pthread_mutex_unlock(&s->lock);
}

static bool same_peer(const kdp_gate_peer *a, const kdp_gate_peer *b) {
        return a->pid == b->pid && a->uid == b->uid;
}

/*
 * Whether a NotifyRegistrationStatus is the plugin watcher's: taken only when
 * kdpd registers through it (ev.watcher_status set), only on the connection
 * a GetInfo came on (the kubelet asks both on one client connection,
 * docs/kubelet.md §1.7) or at least from the same pid and uid as the last
 * GetInfo, and never while another process has a ListAndWatch open (the
 * kubelet's watcher and its streams are one process). Anyone else could
 * drop the kubelet's registration at will.
 */
static int check_notify(kdp_call *c, char *err, size_t err_size) {
        kdp_server *s = c->server;
        bool watcher, streamed = false;

        if (!s->ev.watcher_status) {
                snprintf(err, err_size, "NotifyRegistrationStatus is taken only when kdpd registers through the "
                         "kubelet's plugin watcher (--registration plugin-watcher)");
                return -EOPNOTSUPP;
        }
        pthread_mutex_lock(&s->lock);
        for (const kdp_call *l = s->streams; l && !streamed; l = l->next)
                streamed = !same_peer(&l->cred, &c->cred);
        watcher = s->info_asked && same_peer(&s->info_cred, &c->cred);
        pthread_mutex_unlock(&s->lock);
        if (!watcher && !kdp_gate_is_registrar(s->rt->gate, c->conn)) {
                snprintf(err, err_size, "NotifyRegistrationStatus is taken only from the plugin watcher that asked "
                         "GetInfo");
                return -EPERM;
        }
        if (streamed) {
                snprintf(err, err_size, "NotifyRegistrationStatus is not taken while another process has a "
                         "ListAndWatch stream open");
                return -EPERM;
        }
        return 0;
}

/* The kubelet's plugin watcher says whether it took the plugin (CQ thread). */
static void notify_status(kdp_server *s, const Pluginregistration__RegistrationStatus *st) {
        const char *error = st->error ? st->error : "";

        if (s->ev.watcher_status)
                s->ev.watcher_status(st->plugin_registered, error, s->userdata);
}

/* Does a call of method `mt` run a hook of `backend` (on a worker)? Hooks are fixed at load. */
static bool runs_hook(method mt, const kdp_backend *backend) {
        return (mt == M_ALLOCATE && backend->allocate) || (mt == M_PREFERRED && backend->preferred);
}

/* Counts and answers a call that answer_unary() answered with `r` (bb on success, err on failure). */
static void answer_decoded(kdp_call *c, int r, const char *err, grpc_byte_buffer *bb) {
        count_call(c, r, c->started_ns);        /* before the answer: once handed to gRPC, the call may be freed */
        if (r < 0) {
                reply_error(c, r, err);
                return;
        }
        if (c->m == M_ALLOCATE && c->server->ev.allocated)
                c->server->ev.allocated(c->server->userdata);
        reply_message(c, 0, bb);
}

static void handle_unary(kdp_call *c) {
        _cleanup_(kdp_snapshot_unrefp) kdp_snapshot *snap = NULL;
        ProtobufCMessage *m = NULL;
        grpc_byte_buffer *bb = NULL;
        char err[256];
        int r;

        c->started_ns = kdp_metrics_now_ns();
        r = unpack_request(c->payload, c->m, &m, err, sizeof(err));
        if (r >= 0 && c->m == M_NOTIFY) {
                r = check_notify(c, err, sizeof(err));
                if (r < 0)
                        protobuf_c_message_free_unpacked(m, NULL);
        }
        if (r >= 0 && runs_hook(c->m, c->server->backend)) {
                c->request = m;                 /* a worker answers it, the hook under the backend's lock */
                kdp_log_v(2, "Queued call for the backend's hook", KDP_F_STR("resource", c->server->resource),
                          KDP_F_STR("method", method_names[c->m]));
                queue_job(c->server->rt, c);
                return;
        }
        if (r >= 0) {
                snap = server_snapshot(c->server);
                r = answer_unary(c->server->resource, c->server->backend, snap, c->m, m, err, sizeof(err), &bb);
                if (r == 1) {
                        c->request = m;         /* the worker runs the hook and answers */
                        queue_job(c->server->rt, c);
                        return;
                }
                if (r >= 0 && c->m == M_NOTIFY)
                        notify_status(c->server, (const Pluginregistration__RegistrationStatus *) m);
                if (r >= 0 && c->m == M_GET_INFO)
                        note_registrar(c);
                protobuf_c_message_free_unpacked(m, NULL);
        }
        answer_decoded(c, r, err, bb);
}

grpc_status_code kdp_server_answer(const char *resource, kdp_backend *backend, kdp_snapshot *snap,
                                   const char *method_path, const uint8_t *data, size_t size, char *details,
                                   size_t details_size, grpc_byte_buffer **ret_reply) {
        grpc_byte_buffer *payload;
        ProtobufCMessage *m = NULL;
        grpc_byte_buffer *bb = NULL;
        method mt = M_UNKNOWN;
        int r;

        assert(resource && backend && snap && method_path && (data || size == 0) && details && ret_reply);
        for (method i = 0; i < _M_REGISTERED; i++)
                if (i != M_LIST_AND_WATCH && strcmp(method_path, method_names[i]) == 0)
                        mt = i;
        snprintf(details, details_size, "%s", "");
        payload = kdp_proto_conv_buffer(data, size);
        if (!payload) {
                snprintf(details, details_size, "out of memory");
                return kdp_server_status_from_errno(-ENOMEM);
        }
        r = unpack_request(payload, mt, &m, details, details_size);
        grpc_byte_buffer_destroy(payload);
        if (r < 0)
                return kdp_server_status_from_errno(r);
        r = answer_unary(resource, backend, snap, mt, m, details, details_size, &bb);
        if (r == 1) {
                const V1beta1__PreStartContainerRequest *req = (const V1beta1__PreStartContainerRequest *) m;
                kdp_prestart_request pr = {
                        .resource = resource,
                        .device_ids = (const char *const *) req->devices_ids,
                        .n_device_ids = req->n_devices_ids,
                };

                r = answer_pre_started(resource, req, kdp_registry_pre_start(backend, &pr), details, details_size,
                                       &bb);
        }
        protobuf_c_message_free_unpacked(m, NULL);
        if (r >= 0)
                *ret_reply = bb;
        return kdp_server_status_from_errno(r < 0 ? r : 0);
}

/* ---- ListAndWatch streams (all under the server lock) ---- */

static void stream_maybe_free(kdp_call *c, bool *ret_free) {
        *ret_free = c->closed && !c->send_busy;
}

static void stream_send_status(kdp_call *c) {
        grpc_op ops[2] = { 0 };
        grpc_op *op = ops;

        if (!c->md_sent) {
                op->op = GRPC_OP_SEND_INITIAL_METADATA;
                op++;
                c->md_sent = true;
        }
        op->op = GRPC_OP_SEND_STATUS_FROM_SERVER;
        op->data.send_status_from_server.status = GRPC_STATUS_OK;
        op++;
        c->ended = true;
        c->status_pending = false;
        if (grpc_call_start_batch(c->call, ops, (size_t) (op - ops), &c->send_tag, NULL) == GRPC_CALL_OK)
                c->send_busy = true;
}

static void stream_push(kdp_call *c) {
        kdp_server *s = c->server;
        grpc_op ops[2] = { 0 };
        grpc_op *op = ops;
        grpc_call_error e;
        grpc_slice slice;

        if (c->send_busy || c->ended || c->closed)
                return;
        if (c->status_pending || s->stopping) {
                stream_send_status(c);
                return;
        }
        if (c->md_sent && c->sent_generation == s->snap->generation)
                return;
        slice = grpc_slice_ref(s->snap->law_slice);
        c->send_buf = grpc_raw_byte_buffer_create(&slice, 1);
        grpc_slice_unref(slice);
        if (!c->md_sent) {
                op->op = GRPC_OP_SEND_INITIAL_METADATA;
                op++;
        }
        op->op = GRPC_OP_SEND_MESSAGE;
        op->data.send_message.send_message = c->send_buf;
        op++;
        e = grpc_call_start_batch(c->call, ops, (size_t) (op - ops), &c->send_tag, NULL);
        if (e != GRPC_CALL_OK) {
                kdp_log_warning("Failed to send device list", KDP_F_STR("resource", s->resource),
                                KDP_F_STR("grpcError", grpc_call_error_to_string(e)));
                grpc_byte_buffer_destroy(c->send_buf);
                c->send_buf = NULL;
                c->ended = true;
                grpc_call_cancel(c->call, NULL);
                return;
        }
        c->md_sent = true;
        c->send_busy = true;
        c->sent_generation = s->snap->generation;
        c->sending_changed_ns = c->changed_ns;
        c->changed_ns = 0;
}

static void on_stream_sent(kdp_tag *tag, bool ok) {
        kdp_call *c = KDP_CONTAINER_OF(tag, kdp_call, send_tag);
        kdp_server *s = c->server;
        bool do_free;

        pthread_mutex_lock(&s->lock);
        c->send_busy = false;
        if (ok && c->sending_changed_ns)
                kdp_metrics_resource_update_sent(s->series, kdp_metrics_now_ns() - c->sending_changed_ns);
        c->sending_changed_ns = 0;
        if (c->send_buf) {
                grpc_byte_buffer_destroy(c->send_buf);
                c->send_buf = NULL;
        }
        if (!ok)
                c->ended = true;        /* the peer is gone; RECV_CLOSE tells the rest */
        stream_push(c);
        stream_maybe_free(c, &do_free);
        pthread_mutex_unlock(&s->lock);
        if (do_free)
                call_free(c);
}

static void stream_unlink(kdp_server *s, kdp_call *c) {
        if (c->prev)
                c->prev->next = c->next;
        else
                s->streams = c->next;
        if (c->next)
                c->next->prev = c->prev;
        s->n_streams--;
}

static void on_stream_closed(kdp_tag *tag, bool ok) {
        kdp_call *c = KDP_CONTAINER_OF(tag, kdp_call, reply_tag);
        kdp_server *s = c->server;
        bool do_free, lost;

        pthread_mutex_lock(&s->lock);
        c->closed = true;
        stream_unlink(s, c);
        kdp_metrics_resource_stream(s->series, false);
        lost = !s->stopping && c->cancelled && s->n_streams == 0;
        stream_maybe_free(c, &do_free);
        pthread_mutex_unlock(&s->lock);
        kdp_log_v(2, "Closed ListAndWatch stream", KDP_F_STR("resource", s->resource),
                  KDP_F_INT("cancelled", c->cancelled));
        if (lost && s->ev.stream_lost)
                s->ev.stream_lost(s->userdata);
        if (do_free)
                call_free(c);
}

static void start_stream(kdp_call *c) {
        kdp_server *s = c->server;
        grpc_op op = { .op = GRPC_OP_RECV_CLOSE_ON_SERVER };

        op.data.recv_close_on_server.cancelled = &c->cancelled;
        c->reply_tag.on_done = on_stream_closed;
        c->send_tag.on_done = on_stream_sent;
        if (grpc_call_start_batch(c->call, &op, 1, &c->reply_tag, NULL) != GRPC_CALL_OK) {
                call_free(c);
                return;
        }
        pthread_mutex_lock(&s->lock);
        c->next = s->streams;
        if (s->streams)
                s->streams->prev = c;
        s->streams = c;
        s->n_streams++;
        kdp_metrics_resource_stream(s->series, true);
        stream_push(c);
        pthread_mutex_unlock(&s->lock);
        kdp_log_v(2, "Opened ListAndWatch stream", KDP_F_STR("resource", s->resource));
}

/* ---- the call limit ---- */

static void call_set_phase(kdp_call *c, call_phase phase) {
        kdp_server *s = c->server;

        pthread_mutex_lock(&s->lock);
        if (c->phase != P_UNTRACKED)
                c->phase = phase;
        pthread_mutex_unlock(&s->lock);
}

static void call_untrack(kdp_call *c) {
        kdp_server *s = c->server;

        pthread_mutex_lock(&s->lock);
        if (c->phase != P_UNTRACKED) {
                if (c->live_prev)
                        c->live_prev->live_next = c->live_next;
                else
                        s->live_head = c->live_next;
                if (c->live_next)
                        c->live_next->live_prev = c->live_prev;
                else
                        s->live_tail = c->live_prev;
                if (!c->evicted)
                        s->n_live--;
                c->phase = P_UNTRACKED;
        }
        pthread_mutex_unlock(&s->lock);
}

/*
 * Counts a new unary call. At the limit, the oldest call that waits on its
 * peer (for its request message, or to take its answer) is cancelled with
 * RESOURCE_EXHAUSTED to make room: a peer that reads its answers, as the
 * kubelet does, holds a call for microseconds, so the calls that pile up are
 * those of a peer that does not. False when every call is being answered:
 * the new one is refused.
 */
static bool call_track(kdp_call *c) {
        kdp_server *s = c->server;
        kdp_call *victim = NULL;
        uint64_t n_evicted = 0;

        pthread_mutex_lock(&s->lock);
        if (s->n_live >= KDP_SERVER_MAX_CALLS) {
                for (kdp_call *v = s->live_head; v && !victim; v = v->live_next)
                        if (!v->evicted && (v->phase == P_READING || v->phase == P_ANSWERED))
                                victim = v;
                if (!victim) {
                        pthread_mutex_unlock(&s->lock);
                        return false;
                }
                victim->evicted = true;
                s->n_live--;
                n_evicted = ++s->n_evicted;
                /* thread-safe, completes the victim's batch through the queue; it is freed there */
                grpc_call_cancel_with_status(victim->call, GRPC_STATUS_RESOURCE_EXHAUSTED,
                                             "cancelled: too many calls in flight on this socket", NULL);
        }
        c->phase = P_READING;
        c->live_prev = s->live_tail;
        if (s->live_tail)
                s->live_tail->live_next = c;
        else
                s->live_head = c;
        s->live_tail = c;
        s->n_live++;
        pthread_mutex_unlock(&s->lock);
        /* the first eviction and every 1024th after: a peer that does not read its answers */
        if (n_evicted % 1024 == 1)
                kdp_log_warning("Cancelled calls whose peer did not go on", KDP_F_STR("resource", s->resource),
                                KDP_F_INT("limit", KDP_SERVER_MAX_CALLS), KDP_F_INT("cancelled", n_evicted));
        return true;
}

static void on_message(kdp_tag *tag, bool ok) {
        kdp_call *c = KDP_CONTAINER_OF(tag, kdp_call, message_tag);

        call_set_phase(c, P_RUNNING);
        if (!ok) {                      /* cancelled (by the peer, or evicted): answering fails at once */
                reply_without_request(c, -ECANCELED, "call cancelled before its request message");
                return;
        }
        if (!c->payload) {              /* the peer ended its side with no message: not an empty one */
                reply_without_request(c, -EINVAL, "no request message");
                return;
        }
        handle_unary(c);
}

/* The request message of a unary call: read here, not with the call, so that a call is counted from its headers. */
static void read_message(kdp_call *c) {
        grpc_op op = { .op = GRPC_OP_RECV_MESSAGE };

        op.data.recv_message.recv_message = &c->payload;
        c->message_tag.on_done = on_message;
        if (grpc_call_start_batch(c->call, &op, 1, &c->message_tag, NULL) != GRPC_CALL_OK)
                reply_error(c, -EIO, "failed to read the request message");
}

/* Tells the gate a call of its connection came through (see gate.h). */
static void call_seen(kdp_call *c) {
        char *peer = grpc_call_get_peer(c->call);

        c->cred = (kdp_gate_peer){ .pid = 0, .uid = (uid_t) -1 };
        c->conn = kdp_gate_call_seen(c->server->rt->gate, peer, c->m == M_LIST_AND_WATCH, &c->cred);
        gpr_free(peer);
}

static void on_request(kdp_tag *tag, bool ok) {
        kdp_call *c = KDP_CONTAINER_OF(tag, kdp_call, request_tag);
        kdp_server *s = c->server;
        bool stopping;

        if (!ok) {                      /* the server is shutting down */
                call_free(c);
                return;
        }
        call_seen(c);
        if (!atomic_exchange(&s->rt->busy, true) && s->rt->on_busy)
                s->rt->on_busy(s->rt->busy_userdata);
        pthread_mutex_lock(&s->lock);
        stopping = s->stopping;
        pthread_mutex_unlock(&s->lock);
        if (!stopping && arm_request(s, c->m) < 0)
                kdp_log_error(-EIO, "Failed to wait for the next call", KDP_F_STR("resource", s->resource));
        if (c->m == M_LIST_AND_WATCH) {
                start_stream(c);
                return;
        }
        if (!call_track(c)) {
                reply_error(c, -EAGAIN, "too many calls in flight on this socket");
                return;
        }
        if (c->m == M_UNKNOWN)
                reply_error(c, -EOPNOTSUPP, "unknown method");
        else
                read_message(c);
}

/* ---- servers ---- */

static void on_shutdown(kdp_tag *tag, bool ok) {
        kdp_server *s = KDP_CONTAINER_OF(tag, kdp_server, shutdown_tag);
        kdp_server_runtime *rt = s->rt;

        pthread_mutex_lock(&rt->lock);
        for (kdp_server **p = &rt->stopping; *p; p = &(*p)->next_stopping)
                if (*p == s) {
                        *p = s->next_stopping;
                        break;
                }
        pthread_mutex_unlock(&rt->lock);
        kdp_log_v(2, "Stopped serving resource", KDP_F_STR("resource", s->resource),
                  KDP_F_STR("socket", s->socket_path));
        server_unref(s);
}

static int server_listen(kdp_server *s) {
        grpc_arg args[] = {
                { .type = GRPC_ARG_INTEGER, .key = (char *) GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
                  .value.integer = (int) KDP_SNAPSHOT_MAX_MESSAGE },
                /* a PING is always acked, never a GOAWAY: see the header comment */
                { .type = GRPC_ARG_INTEGER, .key = (char *) GRPC_ARG_HTTP2_MAX_PING_STRIKES, .value.integer = 0 },
                { .type = GRPC_ARG_INTEGER, .key = (char *) GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                  .value.integer = CONNECTION_IDLE_MS },
        };
        grpc_channel_args cargs = { .num_args = KDP_ELEMENTSOF(args), .args = args };
        gid_t gid = s->rt->socket_gid;  /* --socket-group: 0660 and of it, else 0600 */
        _cleanup_close_ int fd = -1;
        int r;

        /* its connections go through the gate, gate.h */
        r = kdp_unix_socket_listen(s->socket_path, gid, gid != (gid_t) -1 ? 0660 : 0600, &fd);
        if (r < 0)
                return r;
        s->server = grpc_server_create(&cargs, NULL);
        grpc_server_register_completion_queue(s->server, s->rt->cq, NULL);
        for (int m = 0; m < _M_REGISTERED; m++) {
                s->methods[m] = grpc_server_register_method(
                        s->server, method_names[m], NULL,
                        GRPC_SRM_PAYLOAD_NONE, 0);
                if (!s->methods[m])
                        return -EIO;
        }
        grpc_server_start(s->server);
        s->started = true;
        for (int m = 0; m < _M_MAX; m++) {
                r = arm_request(s, (method) m);
                if (r < 0) {
                        (void) unlink(s->socket_path);
                        return r;
                }
        }
        r = kdp_gate_listen(s->rt->gate, KDP_TAKE_FD(fd), s->socket_path, s->server, s->resource, &s->listener);
        if (r < 0) {
                (void) unlink(s->socket_path);
                return r;
        }
        return 0;
}

int kdp_server_new(kdp_server_runtime *rt, const char *resource, const char *socket_path,
                   kdp_backend *backend, kdp_snapshot *snap, kdp_metrics_resource *series,
                   const kdp_server_events *ev, void *userdata, kdp_server **ret) {
        kdp_server *s;
        int r;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        pthread_mutex_init(&s->lock, NULL);
        for (size_t i = 0; i < _M_MAX; i++)
                kdp_log_limit_init(&s->refusals[i], REFUSALS_PER_WINDOW, REFUSAL_WINDOW_USEC);
        s->rt = rt;
        s->refs = 1;
        s->resource = strdup(resource);
        s->socket_path = strdup(socket_path);
        s->backend = backend;
        s->snap = kdp_snapshot_ref(snap);
        s->series = kdp_metrics_resource_ref(series);
        s->shutdown_tag.on_done = on_shutdown;
        if (ev)
                s->ev = *ev;
        s->userdata = userdata;
        pthread_mutex_lock(&rt->lock);
        rt->n_servers++;
        pthread_mutex_unlock(&rt->lock);
        if (!s->resource || !s->socket_path)
                r = -ENOMEM;
        else
                r = server_listen(s);
        if (r < 0) {
                s->ev.stopped = NULL;   /* the caller learns from r */
                if (!s->started && s->server) {
                        grpc_server_destroy(s->server);
                        s->server = NULL;
                }
                kdp_server_stop(s);
                return r;
        }
        kdp_log_v(2, "Serving resource", KDP_F_STR("resource", resource), KDP_F_STR("socket", socket_path));
        *ret = s;
        return 0;
}

void kdp_server_publish(kdp_server *s, kdp_snapshot *snap) {
        kdp_snapshot *old;

        pthread_mutex_lock(&s->lock);
        old = s->snap;
        s->snap = kdp_snapshot_ref(snap);
        for (kdp_call *c = s->streams; c; c = c->next) {
                if (!c->changed_ns)
                        c->changed_ns = snap->changed_ns;
                stream_push(c);
        }
        pthread_mutex_unlock(&s->lock);
        kdp_snapshot_unref(old);
}

unsigned kdp_server_n_streams(kdp_server *s) {
        unsigned n;

        pthread_mutex_lock(&s->lock);
        n = s->n_streams;
        pthread_mutex_unlock(&s->lock);
        return n;
}

void kdp_server_stop(kdp_server *s) {
        kdp_server_runtime *rt = s->rt;

        pthread_mutex_lock(&s->lock);
        s->stopping = true;
        for (kdp_call *c = s->streams; c; c = c->next) {
                if (c->send_busy)
                        c->status_pending = true;
                else
                        stream_push(c);
        }
        pthread_mutex_unlock(&s->lock);
        if (s->listener) {
                kdp_gate_close(rt->gate, s->listener);
                s->listener = NULL;
        }
        if (!s->server) {
                server_unref(s);
                return;
        }
        s->cancel_at = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                    gpr_time_from_millis(CANCEL_AFTER_MS, GPR_TIMESPAN));
        pthread_mutex_lock(&rt->lock);
        s->next_stopping = rt->stopping;
        rt->stopping = s;
        pthread_mutex_unlock(&rt->lock);
        /*
         * The creator's reference becomes the shutdown tag's. With no listener of
         * gRPC's own (the gate accepts) and no channel, the shutdown completes inside
         * the call: the CQ thread may take the tag and drop that reference before the
         * call returns, so s (and its grpc_server) is held until it has.
         */
        server_ref(s);
        grpc_server_shutdown_and_notify(s->server, rt->cq, &s->shutdown_tag);
        server_unref(s);
}

/* ---- the runtime: CQ thread and worker ---- */

void kdp_server_runtime_cancel_overdue(kdp_server_runtime *rt) {
        gpr_timespec now = gpr_now(GPR_CLOCK_MONOTONIC);

        pthread_mutex_lock(&rt->lock);
        for (kdp_server *s = rt->stopping; s; s = s->next_stopping)
                if (gpr_time_cmp(now, s->cancel_at) >= 0) {
                        grpc_server_cancel_all_calls(s->server);
                        s->cancel_at = gpr_inf_future(GPR_CLOCK_MONOTONIC);
                }
        pthread_mutex_unlock(&rt->lock);
}

/*
 * Without heartbeats, blocks in the queue with no deadline: an idle kdpd
 * never wakes up. With them, wakes at least every beat_ms and stamps its own.
 */
static void *cq_main(void *userdata) {
        cq_thread *t = userdata;
        kdp_server_runtime *rt = t->rt;

        for (;;) {
                gpr_timespec until = rt->beat_ms == 0 ? gpr_inf_future(GPR_CLOCK_MONOTONIC)
                                                      : gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                                                     gpr_time_from_millis((int64_t) rt->beat_ms,
                                                                                          GPR_TIMESPAN));
                grpc_event ev = grpc_completion_queue_next(rt->cq, until, NULL);
                kdp_tag *tag;

                kdp_metrics_heartbeat_beat(t->beat);
                if (ev.type == GRPC_QUEUE_SHUTDOWN)
                        return NULL;
                if (ev.type != GRPC_OP_COMPLETE)
                        continue;
                tag = ev.tag;
                tag->on_done(tag, ev.success != 0);
        }
}

static void runtime_stop_threads(kdp_server_runtime *rt) {
        unsigned n_workers;

        pthread_mutex_lock(&rt->lock);
        rt->worker_quit = true;
        n_workers = rt->n_workers;
        pthread_cond_broadcast(&rt->cond);
        pthread_mutex_unlock(&rt->lock);
        for (unsigned i = 0; i < n_workers; i++)
                pthread_join(rt->workers[i], NULL);
        rt->gate = kdp_gate_free(rt->gate);
        grpc_completion_queue_shutdown(rt->cq);
        for (unsigned i = 0; i < rt->n_cq_threads; i++)
                pthread_join(rt->cq_threads[i].thread, NULL);
        grpc_completion_queue_destroy(rt->cq);
}

/* The next CQ thread, with its heartbeat when `metrics` keeps them. */
static int start_cq_thread(kdp_server_runtime *rt, kdp_metrics *metrics) {
        cq_thread *t = &rt->cq_threads[rt->n_cq_threads];
        char what[64];

        *t = (cq_thread){ .rt = rt };
        if (CQ_THREADS > 1)
                snprintf(what, sizeof(what), "completion queue thread %u", rt->n_cq_threads + 1);
        else
                snprintf(what, sizeof(what), "completion queue thread");
        if (metrics && kdp_metrics_add_heartbeat(metrics, what, &t->beat) < 0)
                return -ENOMEM;
        if (pthread_create(&t->thread, NULL, cq_main, t) != 0)
                return -EAGAIN;
        rt->n_cq_threads++;
        return 0;
}

int kdp_server_runtime_new(void (*on_busy)(void *userdata), void *userdata, kdp_metrics *metrics,
                           kdp_server_runtime **ret) {
        kdp_server_runtime *rt;

        rt = calloc(1, sizeof(*rt));
        if (!rt)
                return -ENOMEM;
        rt->on_busy = on_busy;
        rt->busy_userdata = userdata;
        rt->socket_gid = (gid_t) -1;
        atomic_init(&rt->busy, false);
        pthread_mutex_init(&rt->lock, NULL);
        pthread_cond_init(&rt->cond, NULL);
        rt->beat_ms = metrics ? kdp_metrics_beat_ms(metrics) : 0;
        rt->cq = grpc_completion_queue_create_for_next(NULL);
        if (kdp_gate_new(metrics, &rt->gate) < 0)
                rt->gate = NULL;
        while (rt->gate && rt->n_cq_threads < CQ_THREADS && start_cq_thread(rt, metrics) >= 0)
                ;
        if (rt->n_cq_threads == CQ_THREADS && pthread_create(&rt->workers[0], NULL, worker_main, rt) == 0)
                rt->n_workers = 1;
        if (rt->n_workers == 0) {
                runtime_stop_threads(rt);
                pthread_cond_destroy(&rt->cond);
                pthread_mutex_destroy(&rt->lock);
                free(rt);
                return -EAGAIN;
        }
        *ret = rt;
        return 0;
}

void kdp_server_runtime_idle(kdp_server_runtime *rt) {
        atomic_store(&rt->busy, false);
}

void kdp_server_runtime_set_socket_group(kdp_server_runtime *rt, gid_t gid) {
        rt->socket_gid = gid;
}

grpc_completion_queue *kdp_server_runtime_cq(kdp_server_runtime *rt) {
        return rt->cq;
}

kdp_server_runtime *kdp_server_runtime_free(kdp_server_runtime *rt) {
        if (!rt)
                return NULL;
        pthread_mutex_lock(&rt->lock);
        while (rt->n_servers > 0) {
                struct timespec until;

                clock_gettime(CLOCK_REALTIME, &until);
                until.tv_nsec += 100 * 1000000L;
                if (until.tv_nsec >= 1000000000L) {
                        until.tv_sec++;
                        until.tv_nsec -= 1000000000L;
                }
                if (pthread_cond_timedwait(&rt->cond, &rt->lock, &until) == ETIMEDOUT) {
                        pthread_mutex_unlock(&rt->lock);
                        kdp_server_runtime_cancel_overdue(rt);
                        pthread_mutex_lock(&rt->lock);
                }
        }
        pthread_mutex_unlock(&rt->lock);
        runtime_stop_threads(rt);
        pthread_cond_destroy(&rt->cond);
        pthread_mutex_destroy(&rt->lock);
        free(rt);
        return NULL;
}
