/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The DevicePlugin gRPC servers: one grpc_server per resource, each on its own
 * unix socket, all on one completion queue served by one CQ thread.
 * Each socket also serves the kubelet plugin watcher's Registration service
 * (GetInfo: a DevicePlugin named after the resource, API v1beta1, endpoint ""
 * = this socket; NotifyRegistrationStatus: handed to ev->watcher_status when
 * it comes on a connection a GetInfo came on, or from the same pid and uid as
 * the last GetInfo, and no other process has a ListAndWatch open, else
 * refused PERMISSION_DENIED), so in plugins_registry one socket is both the
 * registration and the endpoint.
 *
 *   loop thread      kdp_server_new / _publish / _stop / runtime_cancel_overdue
 *   CQ thread        every RPC: Options, and Allocate and GetPreferredAllocation
 *                    of a backend without that hook, answered from the snapshot
 *                    in microseconds without the backend's lock; stream sends;
 *                    Register completions of kubelet-client.c (same queue).
 *                    With heartbeats (metrics.h) it waits on the queue at most
 *                    kdp_metrics_beat_ms() and stamps its heartbeat each time
 *                    it wakes; without, it waits with no deadline
 *   worker threads   PreStartContainer, Allocate and GetPreferredAllocation
 *                    when the backend has that hook (up to 8 at once, a
 *                    backend's Allocate and Preferred one at a time, see
 *                    server.c's drawing); a worker answers the call itself
 *                    when the hook returns, so a backend holding its lock (a
 *                    slow scan) never stalls the CQ thread
 *
 * Ownership: a kdp_server is reference counted: the creator holds one until
 * kdp_server_stop(), every call in flight holds one, and the pending shutdown
 * holds one. It holds a reference on its resource's metrics series (may be
 * NULL), which its CQ thread and workers count Allocate and GetPreferredAllocation calls,
 * streams and update latencies in, until it is freed. The server's lock guards its snapshot pointer and its stream list.
 * Each ListAndWatch stream has at most one send in flight; a publish while it
 * is busy is coalesced and the newest snapshot follows when the send completes
 * (docs/stack.md §1: a second send poisons the call).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <grpc/grpc.h>

#include "metrics.h"
#include "registry.h"
#include "snapshot.h"

/* Unary calls one server holds at once (the kubelet's bursts are ~100), see call_track() in server.c. */
#define KDP_SERVER_MAX_CALLS 256

typedef struct kdp_server_runtime kdp_server_runtime;
typedef struct kdp_server kdp_server;

typedef struct kdp_server_events {
        /* CQ thread: a peer cancelled the last open ListAndWatch stream of a running server */
        void (*stream_lost)(void *userdata);
        /* CQ thread or a worker: an Allocate was answered with success (may be NULL) */
        void (*allocated)(void *userdata);
        /*
         * CQ thread: the kubelet's plugin watcher told how registering this
         * socket went (NotifyRegistrationStatus); `error` is "" when it
         * registered (may be NULL: kdpd does not register through the
         * plugin watcher, and NotifyRegistrationStatus is refused UNIMPLEMENTED)
         */
        void (*watcher_status)(bool registered, const char *error, void *userdata);
        /* CQ thread, or kdp_server_stop()'s: a stopped server is gone (socket removed); userdata may be freed now */
        void (*stopped)(void *userdata);
} kdp_server_events;

/*
 * `on_busy` (may be NULL) runs on the CQ thread at the first call after
 * kdp_server_runtime_idle(): a burst of calls began. kdpd uses it to give
 * the memory of a burst back to the system once the burst is over.
 * `metrics` (may be NULL) gets a heartbeat per CQ thread; it outlives the runtime.
 */
int kdp_server_runtime_new(void (*on_busy)(void *userdata), void *userdata, kdp_metrics *metrics,
                           kdp_server_runtime **ret);
/* Re-arms on_busy. Thread-safe. */
void kdp_server_runtime_idle(kdp_server_runtime *rt);
/*
 * Plugin sockets are made 0600 whatever the umask, or, with a group set here
 * before the first server, 0660 and owned by that group. (gid_t) -1: 0600.
 */
void kdp_server_runtime_set_socket_group(kdp_server_runtime *rt, gid_t gid);
grpc_completion_queue *kdp_server_runtime_cq(kdp_server_runtime *rt);
/* Cancels the calls of servers stopped more than 500 ms ago (call from a timer after a stop). */
void kdp_server_runtime_cancel_overdue(kdp_server_runtime *rt);
/* Waits for every stopped server to finish (cancelling overdue calls), then ends the threads and the queue. */
kdp_server_runtime *kdp_server_runtime_free(kdp_server_runtime *rt);

/*
 * Serves `resource` on unix socket `socket_path` (removed first if stale).
 * Takes a reference on `snap`, and on `series` (may be NULL). Fails, unlogged, with the real errno: -EEXIST
 * when something that is not a socket has the name (a symlink, even broken,
 * a directory), -EADDRINUSE when a live socket has it, bind's own error else
 * (-EACCES, -EROFS, -ENOENT ...).
 */
int kdp_server_new(kdp_server_runtime *rt, const char *resource, const char *socket_path,
                   kdp_backend *backend, kdp_snapshot *snap, kdp_metrics_resource *series,
                   const kdp_server_events *ev, void *userdata, kdp_server **ret);

/*
 * Makes `snap` current (takes a reference) and wakes every stream. A
 * snapshot with changed_ns set is measured to each stream's send of it, or of
 * a later one sent in its place (kdp_metrics_resource_update_sent()).
 */
void kdp_server_publish(kdp_server *s, kdp_snapshot *snap);

/* Number of ListAndWatch streams open now. */
unsigned kdp_server_n_streams(kdp_server *s);

/*
 * Ends every stream with status OK, stops accepting calls and drops the
 * creator's reference; ev->stopped fires when the server is gone. Calls still
 * running 500 ms later are cancelled by kdp_server_runtime_cancel_overdue().
 */
void kdp_server_stop(kdp_server *s);

/*
 * The answer to one unary call, without a transport: `data` is the request message of `method_path`
 * ("/v1beta1.DevicePlugin/Allocate"), decoded and handled by the functions a server of `resource`
 * answers its calls with, from snapshot `snap` and with `backend`'s hooks; a PreStartContainer's
 * hook runs in the calling thread. Returns the status; with OK *ret_reply is the reply message
 * (the caller's), else `details` the message for the peer. kdp's fuzz targets drive it.
 */
grpc_status_code kdp_server_answer(const char *resource, kdp_backend *backend, kdp_snapshot *snap,
                                   const char *method_path, const uint8_t *data, size_t size, char *details,
                                   size_t details_size, grpc_byte_buffer **ret_reply);

/* The one errno → gRPC status mapping (docs/style.md §3). */
grpc_status_code kdp_server_status_from_errno(int r);
