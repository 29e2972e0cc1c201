/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One unary gRPC call in one batch (see unary.h).
 */
#include <errno.h>

#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include <kdp/cleanup.h>

#include "unary.h"

void kdp_unary_init(kdp_unary *u) {
        *u = (kdp_unary){ .status = GRPC_STATUS_OK, .details = grpc_empty_slice() };
        grpc_metadata_array_init(&u->initial_md);
        grpc_metadata_array_init(&u->trailing_md);
}

grpc_call_error kdp_unary_batch(kdp_unary *u, grpc_call *call, uint32_t md_flags, void *tag) {
        grpc_op ops[] = {
                { .op = GRPC_OP_SEND_INITIAL_METADATA, .flags = md_flags },
                { .op = GRPC_OP_SEND_MESSAGE, .data.send_message.send_message = u->request },
                { .op = GRPC_OP_SEND_CLOSE_FROM_CLIENT },
                { .op = GRPC_OP_RECV_INITIAL_METADATA,
                  .data.recv_initial_metadata.recv_initial_metadata = &u->initial_md },
                { .op = GRPC_OP_RECV_MESSAGE, .data.recv_message.recv_message = &u->response },
                { .op = GRPC_OP_RECV_STATUS_ON_CLIENT,
                  .data.recv_status_on_client = { .trailing_metadata = &u->trailing_md, .status = &u->status,
                                                  .status_details = &u->details } },
        };

        return grpc_call_start_batch(call, ops, KDP_ELEMENTSOF(ops), tag, NULL);
}

int kdp_unary_start(kdp_unary *u, const char *target, const grpc_channel_args *args, grpc_completion_queue *cq,
                    const char *method, int64_t deadline_ms, void *tag) {
        grpc_channel_credentials *creds = grpc_insecure_credentials_create();
        gpr_timespec deadline = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                             gpr_time_from_millis(deadline_ms, GPR_TIMESPAN));

        u->channel = grpc_channel_create(target, creds, args);
        grpc_channel_credentials_release(creds);
        u->call = grpc_channel_create_call(u->channel, NULL, GRPC_PROPAGATE_DEFAULTS, cq,
                                           grpc_slice_from_static_string(method), NULL, deadline, NULL);
        if (!u->call || kdp_unary_batch(u, u->call, 0, tag) != GRPC_CALL_OK)
                return -EIO;
        return 0;
}

void kdp_unary_done(kdp_unary *u) {
        if (u->call)
                grpc_call_unref(u->call);
        if (u->channel)
                grpc_channel_destroy(u->channel);
        if (u->request)
                grpc_byte_buffer_destroy(u->request);
        if (u->response)
                grpc_byte_buffer_destroy(u->response);
        grpc_metadata_array_destroy(&u->initial_md);
        grpc_metadata_array_destroy(&u->trailing_md);
        grpc_slice_unref(u->details);
        kdp_unary_init(u);
}
