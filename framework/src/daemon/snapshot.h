/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * An immutable, reference-counted view of one resource's devices: what every
 * gRPC call and ListAndWatch stream reads. The loop thread builds a new one
 * after each scan that changed something; readers take a reference under the
 * resource server's lock and never see it change. Built once per change: the
 * sorted device list, the locality index for GetPreferredAllocation and the
 * packed ListAndWatchResponse every stream sends as is.
 */
#pragma once

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <grpc/slice.h>

#include "device.h"
#include "preferred.h"

/* The kubelet's grpc-go client refuses messages over 4 MiB (docs/kubelet.md §2.2). */
#define KDP_SNAPSHOT_MAX_MESSAGE (4u * 1024 * 1024)

typedef struct kdp_snapshot {
        atomic_uint refs;
        uint64_t generation;            /* a stream sends a snapshot of a generation it has not sent */
        kdp_device_list list;
        kdp_preferred_index *pref;
        grpc_slice law_slice;           /* packed ListAndWatchResponse, shared by every send */
        size_t law_size;
        size_t n_healthy;
        /* kdp_metrics_now_ns() of the device event or scan that made this list differ from the last one
           the kubelet saw; 0: none (a first list). Set by the builder before it is published. */
        uint64_t changed_ns;
} kdp_snapshot;

/* Takes over *list (left empty). -EMSGSIZE if the packed list exceeds 4 MiB. */
int kdp_snapshot_new(kdp_device_list *list, uint64_t generation, kdp_snapshot **ret);
kdp_snapshot *kdp_snapshot_ref(kdp_snapshot *s);
kdp_snapshot *kdp_snapshot_unref(kdp_snapshot *s);
KDP_DEFINE_CLEANUP_FUNC(kdp_snapshot, kdp_snapshot_unref)

/* Index of the device with `id`, or -1. */
ssize_t kdp_snapshot_find(const kdp_snapshot *s, const char *id);
