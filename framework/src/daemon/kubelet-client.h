/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Talking to the kubelet: Register calls and watching its directory.
 *
 *   loop thread   inotify on the device-plugins dir: kubelet.sock created
 *                 → ev->restarted(); starts Register attempts and back-off timers
 *   CQ thread     a Register call completed → posted back to the loop
 *
 * Register is asynchronous: the kubelet dials the plugin back and calls
 * GetDevicePluginOptions before it answers (KUBELET.md §1.5), so the CQ thread
 * must keep serving meanwhile. A failed attempt is retried after 5 ms, then
 * with doubling delays up to 5 s, forever; each attempt uses a fresh channel
 * so grpc's own reconnect back-off never delays a retry. No keepalive is set
 * on the channel (KUBELET.md §1.1).
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include <grpc/grpc.h>

#include <kdp/cleanup.h>

#include "loop.h"

#define KDP_KUBELET_SOCKET "kubelet.sock"

typedef struct kdp_kubelet_client kdp_kubelet_client;
typedef struct kdp_registration kdp_registration;

typedef struct kdp_kubelet_client_events {
        /* loop thread: kubelet.sock appeared (a kubelet (re)started) */
        void (*restarted)(void *userdata);
        /* loop thread: `resource` was registered (for tests and metrics; may be NULL) */
        void (*registered)(const char *resource, void *userdata);
} kdp_kubelet_client_events;

/* Creates `dir` (0750) if missing and watches it. */
int kdp_kubelet_client_new(kdp_loop *loop, grpc_completion_queue *cq, const char *dir,
                           const kdp_kubelet_client_events *ev, void *userdata, kdp_kubelet_client **ret);
/* Cancels every registration; must be called before the CQ is shut down. */
kdp_kubelet_client *kdp_kubelet_client_free(kdp_kubelet_client *k);

const char *kdp_kubelet_client_dir(const kdp_kubelet_client *k);

/* Starts registering `endpoint` (a file name in the dir) for `resource` now. */
int kdp_kubelet_client_register(kdp_kubelet_client *k, const char *resource, const char *endpoint,
                                bool pre_start_required, kdp_registration **ret);
/* Stops retrying and releases the registration (safe with a call in flight). NULL is fine. */
void kdp_kubelet_client_cancel(kdp_registration *reg);

/* True if `reg` succeeded and kubelet.sock is still the file it succeeded with. */
bool kdp_kubelet_client_still_registered(const kdp_registration *reg);
