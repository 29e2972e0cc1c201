/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Talking to the kubelet: Register calls and watching its directory.
 *
 *   loop thread   inotify on the device-plugins dir: kubelet.sock created
 *                 → ev->restarted(); starts Register attempts and back-off timers
 *   CQ thread     a Register call completed → posted back to the loop
 *
 * Register is asynchronous: the kubelet dials the plugin back and calls
 * GetDevicePluginOptions before it answers (docs/kubelet.md §1.5), so the CQ thread
 * must keep serving meanwhile. A failed attempt is retried after 5 ms, then
 * with doubling delays up to 5 s, forever; each attempt uses a fresh channel
 * so grpc's own reconnect back-off never delays a retry. No keepalive is set
 * on the channel (docs/kubelet.md §1.1). The call itself is a kdp_unary (unary.h),
 * which the registration embeds and owns.
 *
 * A kubelet instance is one kubelet.sock file. Each attempt opens the file
 * kubelet.sock names when it starts with O_PATH and dials exactly that file
 * (through /proc/self/fd), never whatever the path names by the time grpc
 * connects: an attempt meant for a dead kubelet cannot land on its successor,
 * whose start-up cleanup has deleted the endpoint it names (docs/kubelet.md §3.1).
 * The registration keeps that fd while the attempt is in flight and after it
 * succeeded. Held open, the file cannot hand its inode number to a newer
 * kubelet.sock (ext4 gives a freed number to the next file at once), so
 * "kubelet.sock is still the file we registered with" is an exact test, and
 * fstat's st_nlink == 0 says that file was deleted.
 *
 * The rule, applied by daemon.c with the functions below: exactly one
 * successful Register per resource per kubelet instance, on an endpoint that
 * exists when that kubelet dials back. So:
 *   - kubelet.sock appeared: a resource whose registration is already with
 *     it (an attempt in flight or done, begun after the file appeared but
 *     before its event was read) on an endpoint still intact keeps it; every
 *     other resource is re-served on a fresh socket and registers once.
 *   - a ListAndWatch stream was cancelled: re-register only if the kubelet it
 *     registered with still is kubelet.sock and is alive (a live kubelet
 *     dropped us: k/k#121994, docs/kubelet.md §1.6). A kubelet that stops or is
 *     killed ends its streams too; its successor's kubelet.sock event
 *     re-registers instead. Alive means it answers a connection with its
 *     HTTP/2 settings, which grpc-go and grpc core send on accepting: an
 *     exiting kubelet may still have its listener for a moment after its
 *     streams ended, but then closes it with our connection unaccepted, and a
 *     killed one leaves kubelet.sock behind, refusing.
 *   - registered, but no ListAndWatch stream within 10 s (a kubelet that
 *     dropped its connection to us before opening it): taken as a stream lost.
 *   - an attempt is not started while its endpoint is gone (the kubelet
 *     could only fail to dial it back); the event of the kubelet.sock whose
 *     cleanup deleted it re-serves.
 *   - no kubelet.sock yet (kdpd started first), a stale one refusing, or a
 *     kubelet that accepts and never answers: attempts go on with back-off,
 *     and the next kubelet.sock's event replaces them at once (the attempt
 *     in flight is cancelled with its registration).
 *   - the directory removed (rm -rf) or moved away (mv dp dp.old): its
 *     parent, watched too, tells at once (the directory's own IN_DELETE_SELF
 *     waits until every socket bound in it is closed). While it is gone its
 *     nearest existing ancestor and that one's parent are watched; when it is
 *     back, ev->restarted() fires as for a new kubelet: every endpoint went
 *     with the old directory, so every resource is re-served in the new one.
 *   - failed attempts inside a restart are ordinary (--v 1); a registration
 *     still failing after its retry budget (16 attempts, ~30 s) warns, then
 *     every 60th attempt.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include <grpc/grpc.h>

#include <kdp/cleanup.h>

#include "loop.h"
#include "metrics.h"

#define KDP_KUBELET_SOCKET "kubelet.sock"

typedef struct kdp_kubelet_client kdp_kubelet_client;
typedef struct kdp_registration kdp_registration;

typedef struct kdp_kubelet_client_events {
        /* loop thread: kubelet.sock appeared (a kubelet (re)started) */
        void (*restarted)(void *userdata);
        /* loop thread: `resource` was registered (for tests and metrics; may be NULL) */
        void (*registered)(const char *resource, void *userdata);
        /* loop thread: an attempt to register `resource` failed, and why (for metrics; may be NULL) */
        void (*failed)(const char *resource, kdp_metrics_registration why, void *userdata);
        /*
         * loop thread: the kubelet `reg` registered with dropped its stream
         * and is alive (the late answer of kdp_kubelet_client_stream_lost());
         * the callee may cancel `reg`
         */
        void (*dropped)(kdp_registration *reg, const char *resource, void *userdata);
} kdp_kubelet_client_events;

/* Creates `dir` (0750) if missing and watches it. */
int kdp_kubelet_client_new(kdp_loop *loop, grpc_completion_queue *cq, const char *dir,
                           const kdp_kubelet_client_events *ev, void *userdata, kdp_kubelet_client **ret);
/* Cancels every registration; must be called before the CQ is shut down. */
kdp_kubelet_client *kdp_kubelet_client_free(kdp_kubelet_client *k);

const char *kdp_kubelet_client_dir(const kdp_kubelet_client *k);

/* Starts registering `endpoint` (a socket just bound in the dir) for `resource` now. */
int kdp_kubelet_client_register(kdp_kubelet_client *k, const char *resource, const char *endpoint,
                                bool pre_start_required, kdp_registration **ret);
/*
 * A registration the kubelet's plugin watcher made itself (it found
 * `socket_path` in its plugins_registry, asked GetInfo and said it
 * registered): no Register call, and taken as done with the kubelet.sock of
 * now, so kdp_kubelet_client_stream_lost() and the _is_current() and
 * _endpoint_intact() tests apply to it as to one made by Register.
 */
int kdp_kubelet_client_adopt(kdp_kubelet_client *k, const char *resource, const char *socket_path,
                             kdp_registration **ret);
/* Stops retrying and releases the registration (safe with a call in flight). NULL is fine. */
void kdp_kubelet_client_cancel(kdp_registration *reg);

/* True if reg's attempt in flight, or its success, is with the file kubelet.sock names now. */
bool kdp_kubelet_client_is_current(const kdp_registration *reg);
/* True if reg's endpoint is still the socket file it was when the registration began. */
bool kdp_kubelet_client_endpoint_intact(const kdp_registration *reg);
/*
 * The server of reg's endpoint lost its last ListAndWatch stream to a peer.
 * If reg succeeded with the file kubelet.sock still names, the kubelet is
 * asked whether it is alive, and ev->dropped fires if it is: re-serve and
 * register again. True means "alive" at once (it could not be asked, or its
 * backlog is full). With an attempt in flight the question waits for its
 * success (a 1.25+ kubelet opens the stream before it answers Register, and
 * may drop it in between). Nothing happens between attempts.
 */
bool kdp_kubelet_client_stream_lost(kdp_registration *reg);
/*
 * True if a kubelet listens on kubelet.sock now (a connection is accepted
 * into its backlog, or the backlog is full); false if the file is missing or
 * refuses (a kubelet that stopped or was killed).
 */
bool kdp_kubelet_client_listening(const kdp_kubelet_client *k);
