/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `kdpctl who`: which pod holds which device. Asks the kubelet's
 * PodResources v1 API (List, then GetAllocatableResources) and each plugin
 * socket given (its first ListAndWatch message), joins the answers
 * (ctl-who-table.h) and prints the table or the JSON on stdout.
 *
 * A kubelet without GetAllocatableResources (UNIMPLEMENTED: before 1.21;
 * "Pod Resources API GetAllocatableResources disabled": 1.21-1.27 with the
 * KubeletPodResourcesGetAllocatable gate off) is said so on stderr and the
 * rest is printed. Anything else that fails (a socket missing, no answer by
 * the deadline, an RPC error, a plugin socket whose resource cannot be told)
 * prints nothing on stdout and one line on stderr, "kdpctl who: ...".
 *
 * Memory: it runs in kdpd's container (64 MiB in deploy/), through kubectl
 * exec. Each PodResources answer is at most KDP_CTL_WHO_MAX_MESSAGE bytes
 * (a plugin's ListAndWatch message gRPC's 4 MiB) and is walked against
 * kdp_proto_conv_limits() before it is decoded, so what protobuf-c builds is
 * bounded too; the table is written cell by cell from the joined rows.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pod-resources.h"

/* The most bytes of one PodResources answer `who` reads; a node of a few hundred pods answers far less. */
#define KDP_CTL_WHO_MAX_MESSAGE (4 << 20)

#define KDP_CTL_WHO_POD_RESOURCES_DEFAULT "/var/lib/kubelet/" KDP_POD_RESOURCES_SOCKET

typedef struct kdp_ctl_who_config {
        const char *pod_resources;              /* the kubelet's PodResources socket */
        char *const *sockets;                   /* borrowed: "[RESOURCE=]PATH" of plugin sockets */
        size_t n_sockets;
        int64_t timeout_ms;                     /* for the whole command; 0 = none */
        bool json;
} kdp_ctl_who_config;

/* Between grpc_init() and grpc_shutdown(). Returns the exit code: 0, or 1 after a message on stderr. */
int kdp_ctl_who_run(const kdp_ctl_who_config *cfg);
