/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One unary gRPC call from the client side, in one batch of six ops: send the
 * initial metadata, the request and the close; receive the initial metadata,
 * the response and the status. Every client in kdp makes its unary calls with
 * it: Register (kubelet-client.c), PodResources List (pod-resources.c) and
 * kdpctl's calls to a plugin (ctl-client.c).
 *
 * A kdp_unary owns all that is in it, and is its caller's (embedded in the
 * caller's record of the call):
 *   kdp_unary_init()   leaves it empty: no channel, no call, no buffers,
 *                      empty metadata and details, status OK.
 *   the caller         packs the request into `request`; it is the struct's.
 *   kdp_unary_start()  opens `channel` on a target, creates `call` on a
 *                      completion queue and starts the batch on it. A failure
 *                      leaves what it created in the struct, for _done.
 *   kdp_unary_batch()  starts the batch on a call the caller made and keeps
 *                      (kdpctl's calls share one channel): `channel` and `call`
 *                      stay NULL.
 *   the completion     `response` (NULL if none came), `status` and `details`
 *                      are the answer; they stay the struct's, so a caller
 *                      that keeps any of them copies it.
 *   kdp_unary_done()   releases all of it and leaves the struct as _init did,
 *                      ready for another call or a second _done. Not while the
 *                      batch is in flight: only after its completion, or if it
 *                      did not start.
 */
#pragma once

#include <stdint.h>

#include <grpc/grpc.h>

typedef struct kdp_unary {
        grpc_channel *channel;
        grpc_call *call;
        grpc_byte_buffer *request;
        grpc_byte_buffer *response;
        grpc_metadata_array initial_md, trailing_md;
        grpc_status_code status;
        grpc_slice details;
} kdp_unary;

void kdp_unary_init(kdp_unary *u);
/*
 * Opens an insecure channel on `target` ("unix:PATH") with `args`, creates the call of `method`
 * (static storage) on `cq` with a deadline `deadline_ms` from now, and starts the batch; `tag`
 * completes on `cq`. Returns 0 or -EIO.
 */
int kdp_unary_start(kdp_unary *u, const char *target, const grpc_channel_args *args, grpc_completion_queue *cq,
                    const char *method, int64_t deadline_ms, void *tag);
/* Starts the batch on `call`, the caller's; `md_flags` go with the initial metadata. */
grpc_call_error kdp_unary_batch(kdp_unary *u, grpc_call *call, uint32_t md_flags, void *tag);
void kdp_unary_done(kdp_unary *u);
