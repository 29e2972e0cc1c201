/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Asking the kubelet which devices are in use: PodResources v1 `List`
 * (docs/kubelet.md §8) on <kubelet root>/pod-resources/kubelet.sock. The kubelet
 * never tells a plugin that a device was freed (there is no Deallocate); a
 * device missing from List is no longer assigned to an active pod.
 *
 *   loop thread   timers: every `period_ms`, and once a few seconds after
 *                 kdp_pod_resources_soon() (an Allocate: coalesced); starts at
 *                 most one List at a time, only while the socket exists
 *   CQ thread     the List completed → posted back to the loop, which unpacks
 *                 it (proto-conv.c) and hands the result to `fn`
 *
 * A List is unary, async on kdpd's one completion queue (as Register is), on
 * a fresh channel, with a 10 s deadline and answers of at most 16 MiB (the
 * kubelet's own client sets a receive limit the same way), whose bytes are
 * walked against the bounds of one node (pods, containers, devices:
 * kdp_proto_conv_limits()) before they are unpacked. A failure keeps
 * the previous state everywhere: `fn` runs only after a List that worked. The
 * first failure is logged as a warning, the return to working at info; the
 * failures in between only at --v=2.
 *
 * The owner (daemon.c) frees it before the CQ is shut down; a List then in
 * flight is cancelled and its completion freed on the loop.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <grpc/grpc.h>

#include <kdp/cleanup.h>

#include "loop.h"

#define KDP_POD_RESOURCES_SOCKET "pod-resources/kubelet.sock"
#define KDP_POD_RESOURCES_MAX_MESSAGE (16 << 20)
#define KDP_POD_RESOURCES_DEADLINE_MS 10000
#define KDP_POD_RESOURCES_AFTER_ALLOCATE_MS 5000
#define KDP_POD_RESOURCES_PERIOD_MS 60000

/* The IDs of one resource that List reports assigned, to app and (restartable) init containers. */
typedef struct kdp_pod_devices {
        char *resource;
        char **ids;                     /* sorted, unique */
        size_t n_ids;
} kdp_pod_devices;

typedef struct kdp_pod_resources_list {
        kdp_pod_devices *resources;     /* sorted by resource */
        size_t n_resources;
} kdp_pod_resources_list;

void kdp_pod_resources_list_done(kdp_pod_resources_list *l);
/* The entry of `resource`, NULL when List reports none of its devices. */
const kdp_pod_devices *kdp_pod_resources_list_find(const kdp_pod_resources_list *l, const char *resource);

/* Loop thread, after each List that worked; `started_usec`: CLOCK_MONOTONIC µs when it was sent. */
typedef void (*kdp_pod_resources_fn)(const kdp_pod_resources_list *l, uint64_t started_usec, void *userdata);

typedef struct kdp_pod_resources kdp_pod_resources;

/* `period_ms` 0: KDP_POD_RESOURCES_PERIOD_MS. The first List runs at once. */
int kdp_pod_resources_new(kdp_loop *loop, grpc_completion_queue *cq, const char *socket_path, uint64_t period_ms,
                          kdp_pod_resources_fn fn, void *userdata, kdp_pod_resources **ret);
/* Cancels a List in flight; must be called before the CQ is shut down. NULL is fine. */
kdp_pod_resources *kdp_pod_resources_free(kdp_pod_resources *pr);

/* A List KDP_POD_RESOURCES_AFTER_ALLOCATE_MS from now, unless one is due sooner already. */
void kdp_pod_resources_soon(kdp_pod_resources *pr);
