/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libkdp internal: the response builders a backend's allocate() and
 * preferred() hooks fill (public API in <kdp/backend.h>).
 *
 * kdp_alloc_response owns copies of everything added to it. Keys are unique
 * (env, annotations: last value wins; dev nodes and mounts: first container
 * path wins; CDI names: de-duplicated), because protobuf-c does not
 * de-duplicate map keys and the kubelet keeps only one per container path.
 */
#pragma once

#include <kdp/backend.h>

#include "device.h"

struct kdp_alloc_response {
        const kdp_device_list *devices; /* borrowed: where add_device() looks IDs up */
        kdp_kv *envs;
        size_t n_envs;
        kdp_dev_node *dev_nodes;
        size_t n_dev_nodes;
        kdp_mount *mounts;
        size_t n_mounts;
        kdp_kv *annotations;
        size_t n_annotations;
        char **cdi_devices;
        size_t n_cdi_devices;
};

void kdp_alloc_response_init(kdp_alloc_response *r, const kdp_device_list *devices);
void kdp_alloc_response_done(kdp_alloc_response *r);

struct kdp_pref_response {
        const kdp_pref_request *req;    /* borrowed: answers must come from req->available */
        const char **ids;               /* borrowed from req->available */
        size_t n_ids;
        size_t n_allocated;
};

void kdp_pref_response_init(kdp_pref_response *r, const kdp_pref_request *req);
void kdp_pref_response_done(kdp_pref_response *r);
