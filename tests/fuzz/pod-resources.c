/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz/pod-resources: a ListPodResourcesResponse as the kubelet's PodResources service answers it,
 * turned into the IDs each resource's containers hold (kdp_proto_conv_unpack_pod_resources()).
 */
#include <grpc/byte_buffer.h>
#include <grpc/grpc.h>

#include "fuzz.h"
#include "pod-resources.h"
#include "proto-conv.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        grpc_init();
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        grpc_byte_buffer *bb = kdp_proto_conv_buffer(data, size);
        kdp_pod_resources_list l = { 0 };
        int r;

        if (!bb)
                abort();
        r = kdp_proto_conv_unpack_pod_resources(bb, 1024 * 1024, &l, NULL, 0);
        grpc_byte_buffer_destroy(bb);
        if (r == 0)
                kdp_pod_resources_list_done(&l);
        return 0;
}
