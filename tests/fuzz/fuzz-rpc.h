/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The RPC targets' server (header-only; include fuzz.h first): the example backend, started with
 * 8 widgets over 2 NUMA nodes and widget-3 unhealthy, and a snapshot of its scan, as kdpd serves
 * them. fuzz_rpc_answer() hands one input to kdp_server_answer() as the request message of a
 * method: decoding, the checks of IDs and sizes, the backend's hooks and the reply's encoding.
 */
#pragma once

#include <grpc/byte_buffer.h>
#include <grpc/grpc.h>

#include <kdp/log.h>

#include "config.h"
#include "device-tree.h"
#include "registry.h"
#include "server.h"
#include "snapshot.h"

#define FUZZ_RPC_RESOURCE "example.com/widget"

static kdp_backend *fuzz_rpc_backend;
static kdp_snapshot *fuzz_rpc_snap;

static inline void fuzz_rpc_init(void) {
        static const char *const overrides[] = { "example.devices=8", "example.numa_nodes=2",
                                                 "example.unhealthy=widget-3" };
        const char *const dirs[] = { KDP_BUILD_BACKEND_DIR, NULL };
        const char *roots[_KDP_PATH_KIND_MAX] = { 0 };
        _cleanup_(kdp_device_tree_freep) kdp_device_tree *tree = NULL;
        _cleanup_(kdp_config_freep) kdp_config *c = NULL;
        kdp_device_list *l;

        grpc_init();
        if (kdp_config_load(NULL, &c) < 0)
                abort();
        for (size_t i = 0; i < sizeof(overrides) / sizeof(overrides[0]); i++)
                if (kdp_config_add_override(c, overrides[i]) < 0)
                        abort();
        if (kdp_registry_load("example", dirs, &fuzz_rpc_backend) < 0 ||
            kdp_registry_start(fuzz_rpc_backend, c, roots) < 0 || kdp_registry_scan(fuzz_rpc_backend, NULL, &tree) < 0)
                abort();
        l = kdp_device_tree_find(tree, FUZZ_RPC_RESOURCE);
        if (!l || l->n_devices != 8 || kdp_snapshot_new(l, 1, &fuzz_rpc_snap) < 0)
                abort();
}

/* Answers data[0..size) as a request of `method` ("Allocate"); checks what every answer must hold. */
static inline void fuzz_rpc_answer(const char *method, const uint8_t *data, size_t size) {
        grpc_byte_buffer *reply = NULL;
        char path[128], details[256];
        grpc_status_code status;

        snprintf(path, sizeof(path), "/v1beta1.DevicePlugin/%s", method);
        status = kdp_server_answer(FUZZ_RPC_RESOURCE, fuzz_rpc_backend, fuzz_rpc_snap, path, data, size, details,
                                   sizeof(details), &reply);
        /* an answer is a reply or a reason, never both, never neither */
        if ((status == GRPC_STATUS_OK) != (reply != NULL) || (status != GRPC_STATUS_OK && !details[0]))
                abort();
        if (reply)
                grpc_byte_buffer_destroy(reply);
}
