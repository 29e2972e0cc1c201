/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Client of one device-plugin socket (see ctl-client.h).
 *
 *   kdp_ctl_client  owns  grpc_channel, pluck cq
 *        calls[]    borrowed pointers to the calls now running, so that
 *                   kdp_ctl_client_cancel() (any thread) can cancel them
 *   unary call      a kdp_unary (unary.h) on a call of ours, plucked by the calling thread
 *   stream          tags send / recv / status, plucked by the reading thread
 *
 * A call is created and unref'd by one thread; it leaves calls[] (under the
 * lock) before its unref, so a cancel never touches a released call.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/time.h>

#include <kdp/cleanup.h>

#include "ctl-client.h"
#include "proto-conv.h"
#include "unary.h"

#define WAIT_SLICE_MS 100                      /* kdp_ctl_client_wait_ready() looks for a cancel this often */

struct kdp_ctl_client {
        grpc_channel *channel;
        grpc_completion_queue *cq;
        pthread_mutex_t lock;                   /* guards cancelled, calls */
        bool cancelled;
        grpc_call *calls[KDP_CTL_CLIENT_MAX_CALLS];
};

struct kdp_ctl_client_stream {
        kdp_ctl_client *client;                 /* borrowed */
        grpc_call *call;                        /* NULL once the stream has ended */
        grpc_byte_buffer *request;
        grpc_metadata_array initial_md;
        grpc_metadata_array trailing_md;
        grpc_status_code status;
        grpc_slice details;
        bool send_pending, status_pending, got_initial_md, ended;
        kdp_ctl_client_status final;
        char tag_send, tag_recv, tag_status;    /* their addresses are the tags */
};

static void status_set(kdp_ctl_client_status *st, grpc_status_code code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static void status_set(kdp_ctl_client_status *st, grpc_status_code code, const char *fmt, ...) {
        va_list ap;

        st->code = code;
        va_start(ap, fmt);
        (void) vsnprintf(st->message, sizeof(st->message), fmt, ap);
        va_end(ap);
}

static void status_from_slice(kdp_ctl_client_status *st, grpc_status_code code, grpc_slice s) {
        size_t n = GRPC_SLICE_LENGTH(s);

        if (n >= sizeof(st->message))
                n = sizeof(st->message) - 1;
        st->code = code;
        memcpy(st->message, GRPC_SLICE_START_PTR(s), n);
        st->message[n] = '\0';
}

/* A local failure as a status: cancelled calls look like grpc's own. */
static int status_local(kdp_ctl_client_status *st, int r) {
        if (r == -ECANCELED)
                status_set(st, GRPC_STATUS_CANCELLED, "Cancelled");
        else
                status_set(st, GRPC_STATUS_INTERNAL, "%s", strerror(-r));
        return r;
}

int kdp_ctl_client_new(const char *socket_path, kdp_ctl_client **ret) {
        return kdp_ctl_client_new_max_message(socket_path, 0, ret);
}

int kdp_ctl_client_new_max_message(const char *socket_path, size_t max_receive, kdp_ctl_client **ret) {
        grpc_arg arg[3] = {
                {
                        .type = GRPC_ARG_STRING,
                        .key = (char *) GRPC_ARG_DEFAULT_AUTHORITY,
                        .value.string = (char *) "localhost",
                },
                /*
                 * a connection of its own, as each grpc-go ClientConn has: from the global pool, a
                 * new channel to a path would reuse a live connection to the socket that was there
                 * before (a plugin's socket replaced at the same path)
                 */
                {
                        .type = GRPC_ARG_INTEGER,
                        .key = (char *) GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL,
                        .value.integer = 1,
                },
                {
                        .type = GRPC_ARG_INTEGER,
                        .key = (char *) GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
                        .value.integer = max_receive > INT_MAX ? INT_MAX : (int) max_receive,
                },
        };
        grpc_channel_args args = { .num_args = max_receive > 0 ? 3 : 2, .args = arg };
        _cleanup_free_ char *target = NULL;
        grpc_channel_credentials *creds;
        kdp_ctl_client *c;

        if (strncmp(socket_path, "unix:", 5) == 0)
                target = strdup(socket_path);
        else if (asprintf(&target, "unix:%s", socket_path) < 0)
                target = NULL;
        if (!target)
                return -ENOMEM;
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        creds = grpc_insecure_credentials_create();
        c->channel = grpc_channel_create(target, creds, &args);
        grpc_channel_credentials_release(creds);
        c->cq = grpc_completion_queue_create_for_pluck(NULL);
        (void) pthread_mutex_init(&c->lock, NULL);
        *ret = c;
        return 0;
}

kdp_ctl_client *kdp_ctl_client_free(kdp_ctl_client *c) {
        if (!c)
                return NULL;
        grpc_channel_destroy(c->channel);
        grpc_completion_queue_shutdown(c->cq);
        while (grpc_completion_queue_pluck(c->cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
               GRPC_QUEUE_SHUTDOWN)
                ;
        grpc_completion_queue_destroy(c->cq);
        (void) pthread_mutex_destroy(&c->lock);
        free(c);
        return NULL;
}

void kdp_ctl_client_cancel(kdp_ctl_client *c) {
        (void) pthread_mutex_lock(&c->lock);
        c->cancelled = true;
        for (size_t i = 0; i < KDP_ELEMENTSOF(c->calls); i++)
                if (c->calls[i])
                        (void) grpc_call_cancel(c->calls[i], NULL);
        (void) pthread_mutex_unlock(&c->lock);
}

bool kdp_ctl_client_is_ready(kdp_ctl_client *c) {
        return grpc_channel_check_connectivity_state(c->channel, 0) == GRPC_CHANNEL_READY;
}

static void client_pluck(kdp_ctl_client *c, void *tag);

static bool client_cancelled(kdp_ctl_client *c) {
        bool cancelled;

        (void) pthread_mutex_lock(&c->lock);
        cancelled = c->cancelled;
        (void) pthread_mutex_unlock(&c->lock);
        return cancelled;
}

int kdp_ctl_client_wait_ready(kdp_ctl_client *c, gpr_timespec deadline) {
        char tag;

        for (;;) {
                grpc_connectivity_state s = grpc_channel_check_connectivity_state(c->channel, 1);

                if (s == GRPC_CHANNEL_READY)
                        return 0;
                if (client_cancelled(c))
                        return -ECANCELED;
                if (gpr_time_cmp(gpr_now(GPR_CLOCK_MONOTONIC), deadline) >= 0)
                        return -ETIMEDOUT;
                /* in slices, so that a cancel is seen soon */
                grpc_channel_watch_connectivity_state(c->channel, s,
                                                      gpr_time_min(deadline, kdp_ctl_client_deadline(WAIT_SLICE_MS)),
                                                      c->cq, &tag);
                client_pluck(c, &tag);
        }
}

gpr_timespec kdp_ctl_client_deadline(int64_t ms) {
        if (ms <= 0)
                return gpr_inf_future(GPR_CLOCK_MONOTONIC);
        return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(ms, GPR_TIMESPAN));
}

static int client_call_create(kdp_ctl_client *c, const char *method, gpr_timespec deadline,
                              grpc_call **ret) {
        int r = -EBUSY;

        (void) pthread_mutex_lock(&c->lock);
        if (c->cancelled)
                r = -ECANCELED;
        for (size_t i = 0; r == -EBUSY && i < KDP_ELEMENTSOF(c->calls); i++) {
                if (c->calls[i])
                        continue;
                c->calls[i] = grpc_channel_create_call(c->channel, NULL, GRPC_PROPAGATE_DEFAULTS, c->cq,
                                                       grpc_slice_from_static_string(method), NULL,
                                                       deadline, NULL);
                *ret = c->calls[i];
                r = 0;
        }
        (void) pthread_mutex_unlock(&c->lock);
        return r;
}

static void client_call_release(kdp_ctl_client *c, grpc_call *call) {
        (void) pthread_mutex_lock(&c->lock);
        for (size_t i = 0; i < KDP_ELEMENTSOF(c->calls); i++)
                if (c->calls[i] == call)
                        c->calls[i] = NULL;
        (void) pthread_mutex_unlock(&c->lock);
        grpc_call_unref(call);
}

static void client_pluck(kdp_ctl_client *c, void *tag) {
        (void) grpc_completion_queue_pluck(c->cq, tag, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
}

grpc_byte_buffer *kdp_ctl_client_pack_buffer(const ProtobufCMessage *m) {
        grpc_slice slice = grpc_slice_malloc(protobuf_c_message_get_packed_size(m));
        grpc_byte_buffer *bb;

        (void) protobuf_c_message_pack(m, GRPC_SLICE_START_PTR(slice));
        bb = grpc_raw_byte_buffer_create(&slice, 1);
        grpc_slice_unref(slice);
        return bb;
}

static ProtobufCMessage *unpack_buffer(const ProtobufCMessageDescriptor *d, grpc_byte_buffer *bb) {
        grpc_byte_buffer_reader reader;
        ProtobufCMessage *m;
        grpc_slice s;

        if (!grpc_byte_buffer_reader_init(&reader, bb))
                return NULL;
        s = grpc_byte_buffer_reader_readall(&reader);
        grpc_byte_buffer_reader_destroy(&reader);
        m = protobuf_c_message_unpack(d, NULL, GRPC_SLICE_LENGTH(s), GRPC_SLICE_START_PTR(s));
        grpc_slice_unref(s);
        return m;
}

/* ---- unary calls ---- */

/*
 * A unary response *bb, walked against its bounds (proto-conv.h) and decoded;
 * the byte buffer is released once read, before decoding, so its bytes are
 * held only once meanwhile.
 */
static int decode_response(grpc_byte_buffer **bb, const ProtobufCMessageDescriptor *desc, ProtobufCMessage **ret,
                           kdp_ctl_client_status *reterr_status) {
        grpc_byte_buffer_reader reader;
        char why[sizeof(reterr_status->message) - 64] = "";
        grpc_slice s;
        int r;

        if (!*bb || !grpc_byte_buffer_reader_init(&reader, *bb)) {
                status_set(reterr_status, GRPC_STATUS_INTERNAL, "failed to decode %s", desc->short_name);
                return -EBADMSG;
        }
        s = grpc_byte_buffer_reader_readall(&reader);
        grpc_byte_buffer_reader_destroy(&reader);
        grpc_byte_buffer_destroy(*bb);
        *bb = NULL;
        r = kdp_proto_conv_unpack_bytes(GRPC_SLICE_START_PTR(s), GRPC_SLICE_LENGTH(s), desc, ret, why, sizeof(why));
        grpc_slice_unref(s);
        if (r == -E2BIG)
                status_set(reterr_status, GRPC_STATUS_INTERNAL, "%s", why);
        else if (r < 0)
                status_set(reterr_status, GRPC_STATUS_INTERNAL, "failed to decode %s%s%s", desc->short_name,
                           *why ? ": " : "", why);
        return r == -E2BIG ? r : r < 0 ? -EBADMSG : 0;
}

static int unary_result(kdp_unary *u, const ProtobufCMessageDescriptor *resp_desc, ProtobufCMessage **ret_resp,
                        kdp_ctl_client_status *reterr_status) {
        if (u->status != GRPC_STATUS_OK) {
                status_from_slice(reterr_status, u->status, u->details);
                /* gRPC's own receive limit, past the channel's max message size */
                if (u->status == GRPC_STATUS_RESOURCE_EXHAUSTED &&
                    strncmp(reterr_status->message, "Received message larger than max", 32) == 0)
                        return -EMSGSIZE;
                return -EREMOTEIO;
        }
        return decode_response(&u->response, resp_desc, ret_resp, reterr_status);
}

/* One unary call sending `request` (taken). */
static int call_buffer(kdp_ctl_client *c, const char *method, grpc_byte_buffer *request,
                       const ProtobufCMessageDescriptor *resp_desc, gpr_timespec deadline, unsigned flags,
                       ProtobufCMessage **ret_resp, kdp_ctl_client_status *reterr_status) {
        grpc_call_error e;
        grpc_call *call;
        kdp_unary u;
        int r;

        r = client_call_create(c, method, deadline, &call);
        if (r < 0) {
                grpc_byte_buffer_destroy(request);
                return status_local(reterr_status, r);
        }
        kdp_unary_init(&u);
        u.request = request;
        e = kdp_unary_batch(&u, call,
                            (flags & KDP_CTL_CLIENT_WAIT_FOR_READY) ? GRPC_INITIAL_METADATA_WAIT_FOR_READY : 0, &u);
        if (e == GRPC_CALL_OK) {
                client_pluck(c, &u);
                r = unary_result(&u, resp_desc, ret_resp, reterr_status);
        } else {
                status_set(reterr_status, GRPC_STATUS_INTERNAL, "%s", grpc_call_error_to_string(e));
                r = -EIO;
        }
        client_call_release(c, call);
        kdp_unary_done(&u);
        return r;
}

int kdp_ctl_client_call(kdp_ctl_client *c, const char *method, const ProtobufCMessage *req,
                        const ProtobufCMessageDescriptor *resp_desc, gpr_timespec deadline,
                        unsigned flags, ProtobufCMessage **ret_resp,
                        kdp_ctl_client_status *reterr_status) {
        return call_buffer(c, method, kdp_ctl_client_pack_buffer(req), resp_desc, deadline, flags, ret_resp,
                           reterr_status);
}

int kdp_ctl_client_call_raw(kdp_ctl_client *c, const char *method, const uint8_t *req, size_t size,
                            const ProtobufCMessageDescriptor *resp_desc, gpr_timespec deadline,
                            ProtobufCMessage **ret_resp, kdp_ctl_client_status *reterr_status) {
        grpc_slice slice = grpc_slice_from_copied_buffer((const char *) req, size);
        grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&slice, 1);

        grpc_slice_unref(slice);
        return call_buffer(c, method, bb, resp_desc, deadline, 0, ret_resp, reterr_status);
}

/* ---- the DevicePlugin RPCs ---- */

int kdp_ctl_client_options(kdp_ctl_client *c, gpr_timespec deadline, unsigned flags,
                           V1beta1__DevicePluginOptions **ret, kdp_ctl_client_status *reterr_status) {
        V1beta1__Empty req = V1BETA1__EMPTY__INIT;

        return kdp_ctl_client_call(c, KDP_CTL_CLIENT_METHOD_OPTIONS, &req.base,
                                   &v1beta1__device_plugin_options__descriptor, deadline, flags,
                                   (ProtobufCMessage **) ret, reterr_status);
}

int kdp_ctl_client_preferred(kdp_ctl_client *c, const kdp_ctl_client_ids *available,
                             const kdp_ctl_client_ids *must_include, int32_t size, gpr_timespec deadline,
                             V1beta1__PreferredAllocationResponse **ret,
                             kdp_ctl_client_status *reterr_status) {
        V1beta1__ContainerPreferredAllocationRequest creq = V1BETA1__CONTAINER_PREFERRED_ALLOCATION_REQUEST__INIT;
        V1beta1__ContainerPreferredAllocationRequest *creqs[] = { &creq };
        V1beta1__PreferredAllocationRequest req = V1BETA1__PREFERRED_ALLOCATION_REQUEST__INIT;

        creq.n_available_deviceids = available->n;
        creq.available_deviceids = available->v;
        creq.n_must_include_deviceids = must_include->n;
        creq.must_include_deviceids = must_include->v;
        creq.allocation_size = size;
        req.n_container_requests = 1;
        req.container_requests = creqs;
        return kdp_ctl_client_call(c, KDP_CTL_CLIENT_METHOD_PREFERRED, &req.base,
                                   &v1beta1__preferred_allocation_response__descriptor, deadline, 0,
                                   (ProtobufCMessage **) ret, reterr_status);
}

int kdp_ctl_client_allocate(kdp_ctl_client *c, const kdp_ctl_client_ids *containers, size_t n_containers,
                            gpr_timespec deadline, V1beta1__AllocateResponse **ret,
                            kdp_ctl_client_status *reterr_status) {
        _cleanup_free_ V1beta1__ContainerAllocateRequest *creqs = NULL;
        _cleanup_free_ V1beta1__ContainerAllocateRequest **ptrs = NULL;
        V1beta1__AllocateRequest req = V1BETA1__ALLOCATE_REQUEST__INIT;

        creqs = calloc(n_containers ? n_containers : 1, sizeof(*creqs));
        ptrs = calloc(n_containers ? n_containers : 1, sizeof(*ptrs));
        if (!creqs || !ptrs)
                return status_local(reterr_status, -ENOMEM);
        for (size_t i = 0; i < n_containers; i++) {
                v1beta1__container_allocate_request__init(&creqs[i]);
                creqs[i].n_devices_ids = containers[i].n;
                creqs[i].devices_ids = containers[i].v;
                ptrs[i] = &creqs[i];
        }
        req.n_container_requests = n_containers;
        req.container_requests = ptrs;
        return kdp_ctl_client_call(c, KDP_CTL_CLIENT_METHOD_ALLOCATE, &req.base,
                                   &v1beta1__allocate_response__descriptor, deadline, 0,
                                   (ProtobufCMessage **) ret, reterr_status);
}

int kdp_ctl_client_prestart(kdp_ctl_client *c, const kdp_ctl_client_ids *ids, gpr_timespec deadline,
                            kdp_ctl_client_status *reterr_status) {
        V1beta1__PreStartContainerRequest req = V1BETA1__PRE_START_CONTAINER_REQUEST__INIT;
        ProtobufCMessage *resp = NULL;
        int r;

        req.n_devices_ids = ids->n;
        req.devices_ids = ids->v;
        r = kdp_ctl_client_call(c, KDP_CTL_CLIENT_METHOD_PRESTART, &req.base,
                                &v1beta1__pre_start_container_response__descriptor, deadline, 0, &resp,
                                reterr_status);
        if (r >= 0)
                protobuf_c_message_free_unpacked(resp, NULL);
        return r;
}

/* ---- ListAndWatch ---- */

static grpc_call_error stream_start_send(kdp_ctl_client_stream *s, unsigned flags) {
        grpc_op ops[3] = { 0 }, *op = ops;

        op->op = GRPC_OP_SEND_INITIAL_METADATA;
        op->flags = (flags & KDP_CTL_CLIENT_WAIT_FOR_READY) ? GRPC_INITIAL_METADATA_WAIT_FOR_READY : 0;
        op++;
        op->op = GRPC_OP_SEND_MESSAGE;
        op->data.send_message.send_message = s->request;
        op++;
        op->op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
        op++;
        return grpc_call_start_batch(s->call, ops, (size_t) (op - ops), &s->tag_send, NULL);
}

static grpc_call_error stream_start_status(kdp_ctl_client_stream *s) {
        grpc_op op = { .op = GRPC_OP_RECV_STATUS_ON_CLIENT };

        op.data.recv_status_on_client.trailing_metadata = &s->trailing_md;
        op.data.recv_status_on_client.status = &s->status;
        op.data.recv_status_on_client.status_details = &s->details;
        return grpc_call_start_batch(s->call, &op, 1, &s->tag_status, NULL);
}

/* Waits for the pending batches, records the final status and releases the call. */
static void stream_end(kdp_ctl_client_stream *s) {
        if (s->ended)
                return;
        if (s->send_pending)
                client_pluck(s->client, &s->tag_send);
        if (s->status_pending) {
                client_pluck(s->client, &s->tag_status);
                status_from_slice(&s->final, s->status, s->details);
        }
        s->send_pending = s->status_pending = false;
        client_call_release(s->client, s->call);
        s->call = NULL;
        s->ended = true;
}

int kdp_ctl_client_watch(kdp_ctl_client *c, gpr_timespec deadline, unsigned flags,
                         kdp_ctl_client_stream **ret, kdp_ctl_client_status *reterr_status) {
        V1beta1__Empty empty = V1BETA1__EMPTY__INIT;
        kdp_ctl_client_stream *s;
        int r;

        s = calloc(1, sizeof(*s));
        if (!s)
                return status_local(reterr_status, -ENOMEM);
        s->client = c;
        s->details = grpc_empty_slice();
        grpc_metadata_array_init(&s->initial_md);
        grpc_metadata_array_init(&s->trailing_md);
        status_set(&s->final, GRPC_STATUS_INTERNAL, "failed to start ListAndWatch");
        r = client_call_create(c, KDP_CTL_CLIENT_METHOD_LIST, deadline, &s->call);
        if (r < 0) {
                s->ended = true;
                (void) kdp_ctl_client_stream_free(s);
                return status_local(reterr_status, r);
        }
        s->request = kdp_ctl_client_pack_buffer(&empty.base);
        s->status_pending = stream_start_status(s) == GRPC_CALL_OK;
        s->send_pending = stream_start_send(s, flags) == GRPC_CALL_OK;
        if (!s->send_pending || !s->status_pending) {
                (void) grpc_call_cancel(s->call, NULL);
                stream_end(s);
                *reterr_status = s->final;
                (void) kdp_ctl_client_stream_free(s);
                return -EIO;
        }
        *ret = s;
        return 0;
}

static int stream_recv(kdp_ctl_client_stream *s, grpc_byte_buffer **ret) {
        grpc_op ops[2] = { 0 }, *op = ops;
        grpc_event ev;

        if (!s->got_initial_md) {
                op->op = GRPC_OP_RECV_INITIAL_METADATA;
                op->data.recv_initial_metadata.recv_initial_metadata = &s->initial_md;
                op++;
        }
        op->op = GRPC_OP_RECV_MESSAGE;
        op->data.recv_message.recv_message = ret;
        op++;
        if (grpc_call_start_batch(s->call, ops, (size_t) (op - ops), &s->tag_recv, NULL) != GRPC_CALL_OK)
                return -EIO;
        ev = grpc_completion_queue_pluck(s->client->cq, &s->tag_recv, gpr_inf_future(GPR_CLOCK_REALTIME),
                                         NULL);
        s->got_initial_md = true;
        return ev.success ? 0 : -EPIPE;
}

int kdp_ctl_client_stream_next(kdp_ctl_client_stream *s, V1beta1__ListAndWatchResponse **ret_msg,
                               kdp_ctl_client_status *ret_status) {
        grpc_byte_buffer *bb = NULL;
        ProtobufCMessage *m;
        int r;

        r = s->ended ? -EPIPE : stream_recv(s, &bb);
        if (r >= 0 && bb) {
                m = unpack_buffer(&v1beta1__list_and_watch_response__descriptor, bb);
                grpc_byte_buffer_destroy(bb);
                if (m) {
                        *ret_msg = (V1beta1__ListAndWatchResponse *) m;
                        return 1;
                }
                (void) grpc_call_cancel(s->call, NULL);
                stream_end(s);
                status_set(&s->final, GRPC_STATUS_INTERNAL, "failed to decode ListAndWatchResponse");
        } else if (bb)
                grpc_byte_buffer_destroy(bb);
        if (r == -EIO)
                (void) grpc_call_cancel(s->call, NULL);
        stream_end(s);
        *ret_status = s->final;
        return 0;
}

kdp_ctl_client_stream *kdp_ctl_client_stream_free(kdp_ctl_client_stream *s) {
        if (!s)
                return NULL;
        if (!s->ended) {
                (void) grpc_call_cancel(s->call, NULL);
                stream_end(s);
        }
        if (s->request)
                grpc_byte_buffer_destroy(s->request);
        grpc_metadata_array_destroy(&s->initial_md);
        grpc_metadata_array_destroy(&s->trailing_md);
        grpc_slice_unref(s->details);
        free(s);
        return NULL;
}

/* ---- names and errors ---- */

static const char *const code_names[][2] = {
        [GRPC_STATUS_OK] = { "OK", "OK" },
        [GRPC_STATUS_CANCELLED] = { "CANCELLED", "Canceled" },
        [GRPC_STATUS_UNKNOWN] = { "UNKNOWN", "Unknown" },
        [GRPC_STATUS_INVALID_ARGUMENT] = { "INVALID_ARGUMENT", "InvalidArgument" },
        [GRPC_STATUS_DEADLINE_EXCEEDED] = { "DEADLINE_EXCEEDED", "DeadlineExceeded" },
        [GRPC_STATUS_NOT_FOUND] = { "NOT_FOUND", "NotFound" },
        [GRPC_STATUS_ALREADY_EXISTS] = { "ALREADY_EXISTS", "AlreadyExists" },
        [GRPC_STATUS_PERMISSION_DENIED] = { "PERMISSION_DENIED", "PermissionDenied" },
        [GRPC_STATUS_RESOURCE_EXHAUSTED] = { "RESOURCE_EXHAUSTED", "ResourceExhausted" },
        [GRPC_STATUS_FAILED_PRECONDITION] = { "FAILED_PRECONDITION", "FailedPrecondition" },
        [GRPC_STATUS_ABORTED] = { "ABORTED", "Aborted" },
        [GRPC_STATUS_OUT_OF_RANGE] = { "OUT_OF_RANGE", "OutOfRange" },
        [GRPC_STATUS_UNIMPLEMENTED] = { "UNIMPLEMENTED", "Unimplemented" },
        [GRPC_STATUS_INTERNAL] = { "INTERNAL", "Internal" },
        [GRPC_STATUS_UNAVAILABLE] = { "UNAVAILABLE", "Unavailable" },
        [GRPC_STATUS_DATA_LOSS] = { "DATA_LOSS", "DataLoss" },
        [GRPC_STATUS_UNAUTHENTICATED] = { "UNAUTHENTICATED", "Unauthenticated" },
};

const char *kdp_ctl_client_code_name(grpc_status_code code, bool go) {
        if (code < 0 || (size_t) code >= KDP_ELEMENTSOF(code_names))
                return go ? "Unknown" : "UNKNOWN";
        return code_names[code][go];
}

void kdp_ctl_client_format_go_error(const kdp_ctl_client_status *st, char *buf, size_t size) {
        const char *desc = st->message;

        /* grpc-go reports a client-side deadline or cancel as the context error */
        if (st->code == GRPC_STATUS_DEADLINE_EXCEEDED && strcmp(desc, "Deadline Exceeded") == 0)
                desc = "context deadline exceeded";
        else if (st->code == GRPC_STATUS_CANCELLED && strcmp(desc, "Cancelled") == 0)
                desc = "context canceled";
        (void) snprintf(buf, size, "rpc error: code = %s desc = %s", kdp_ctl_client_code_name(st->code, true),
                        desc);
}

/* ---- printing ---- */

void kdp_ctl_client_put_value(FILE *f, const char *s) {
        for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
                if (*p == '\n')
                        fputs("\\n", f);
                else if (*p == '\r')
                        fputs("\\r", f);
                else if (*p == '\t')
                        fputs("\\t", f);
                else if (*p < 0x20 || *p == 0x7f)
                        fprintf(f, "\\x%02x", *p);
                else
                        putc(*p, f);
        }
}

void kdp_ctl_client_put_ids(FILE *f, char *const *ids, size_t n_ids) {
        for (size_t i = 0; i < n_ids; i++) {
                if (i > 0)
                        putc(',', f);
                kdp_ctl_client_put_value(f, ids[i]);
        }
}

static int cmp_int64(const void *a, const void *b) {
        int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;

        return (x > y) - (x < y);
}

int kdp_ctl_client_numa_string(const V1beta1__Device *d, char **ret) {
        _cleanup_free_ int64_t *ids = NULL;
        char *buf = NULL;
        size_t size = 0;
        FILE *f;
        size_t n;

        n = d->topology ? d->topology->n_nodes : 0;
        if (n == 0) {
                *ret = NULL;
                return 0;
        }
        ids = calloc(n, sizeof(*ids));
        f = ids ? open_memstream(&buf, &size) : NULL;
        if (!f)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                ids[i] = d->topology->nodes[i] ? d->topology->nodes[i]->id : 0;
        qsort(ids, n, sizeof(*ids), cmp_int64);
        for (size_t i = 0; i < n; i++)
                fprintf(f, "%s%lld", i > 0 ? "," : "", (long long) ids[i]);
        if (fclose(f) != 0) {
                free(buf);
                return -ENOMEM;
        }
        *ret = buf;
        return 0;
}

static int cmp_device(const void *a, const void *b) {
        const V1beta1__Device *x = *(V1beta1__Device *const *) a, *y = *(V1beta1__Device *const *) b;

        return strcmp(x->id, y->id);
}

static void print_device_row(FILE *f, const V1beta1__Device *d) {
        _cleanup_free_ char *numa = NULL;

        (void) kdp_ctl_client_numa_string(d, &numa);
        kdp_ctl_client_put_value(f, d->id[0] ? d->id : "\"\"");
        fputs("  ", f);
        kdp_ctl_client_put_value(f, d->health[0] ? d->health : "-");
        fprintf(f, "  %s\n", numa ? numa : "-");
}

void kdp_ctl_client_print_list(FILE *f, const V1beta1__ListAndWatchResponse *m) {
        _cleanup_free_ V1beta1__Device **sorted = NULL;
        size_t healthy = 0;

        if (m->n_devices > 0) {
                sorted = calloc(m->n_devices, sizeof(*sorted));
                if (sorted) {
                        memcpy(sorted, m->devices, m->n_devices * sizeof(*sorted));
                        qsort(sorted, m->n_devices, sizeof(*sorted), cmp_device);
                }
        }
        fputs("ID  HEALTH  NUMA\n", f);
        for (size_t i = 0; i < m->n_devices; i++) {
                const V1beta1__Device *d = sorted ? sorted[i] : m->devices[i];

                print_device_row(f, d);
                healthy += strcmp(d->health, "Healthy") == 0;
        }
        fprintf(f, "total=%zu healthy=%zu unhealthy=%zu\n", m->n_devices, healthy, m->n_devices - healthy);
}

/* ---- container responses ---- */

typedef struct item {
        int group;                              /* print order: env, device, mount, annotation, cdi */
        char *text;                             /* owned */
} item;

typedef struct items {
        item *v;
        size_t n;
} items;

static void items_done(items *it) {
        for (size_t i = 0; i < it->n; i++)
                free(it->v[i].text);
        free(it->v);
}

static int items_add(items *it, int group, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int items_add(items *it, int group, const char *fmt, ...) {
        char *text;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&text, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        it->v[it->n++] = (item){ .group = group, .text = text };
        return 0;
}

static int cmp_item(const void *a, const void *b) {
        const item *x = a, *y = b;

        if (x->group != y->group)
                return x->group - y->group;
        return strcmp(x->text, y->text);
}

static const char *dash(const char *s) {
        return s && *s ? s : "-";
}

/* protobuf-c keeps duplicate map keys; grpc-go (the kubelet) keeps the last one. */
static bool env_shadowed(V1beta1__ContainerAllocateResponse__EnvsEntry **e, size_t n, size_t i) {
        for (size_t j = i + 1; j < n; j++)
                if (strcmp(e[j]->key, e[i]->key) == 0)
                        return true;
        return false;
}

static bool annotation_shadowed(V1beta1__ContainerAllocateResponse__AnnotationsEntry **e, size_t n, size_t i) {
        for (size_t j = i + 1; j < n; j++)
                if (strcmp(e[j]->key, e[i]->key) == 0)
                        return true;
        return false;
}

static int collect_maps(items *it, const V1beta1__ContainerAllocateResponse *r) {
        int k = 0;

        for (size_t i = 0; k >= 0 && i < r->n_envs; i++)
                if (!env_shadowed(r->envs, r->n_envs, i))
                        k = items_add(it, 0, "env %s=%s", r->envs[i]->key, r->envs[i]->value);
        for (size_t i = 0; k >= 0 && i < r->n_annotations; i++)
                if (!annotation_shadowed(r->annotations, r->n_annotations, i))
                        k = items_add(it, 3, "annotation %s=%s", r->annotations[i]->key,
                                      r->annotations[i]->value);
        return k;
}

static int collect_lists(items *it, const V1beta1__ContainerAllocateResponse *r) {
        int k = 0;

        for (size_t i = 0; k >= 0 && i < r->n_devices; i++)
                k = items_add(it, 1, "device %s %s %s", dash(r->devices[i]->host_path),
                              dash(r->devices[i]->container_path), dash(r->devices[i]->permissions));
        for (size_t i = 0; k >= 0 && i < r->n_mounts; i++)
                k = items_add(it, 2, "mount %s %s %s", dash(r->mounts[i]->host_path),
                              dash(r->mounts[i]->container_path), r->mounts[i]->read_only ? "ro" : "rw");
        for (size_t i = 0; k >= 0 && i < r->n_cdi_devices; i++)
                k = items_add(it, 4, "cdi %s", dash(r->cdi_devices[i]->name));
        return k;
}

int kdp_ctl_client_print_container(FILE *f, const char *prefix, const V1beta1__ContainerAllocateResponse *r) {
        size_t total = r->n_envs + r->n_devices + r->n_mounts + r->n_annotations + r->n_cdi_devices;
        items it = { 0 };
        int k;

        it.v = calloc(total ? total : 1, sizeof(*it.v));
        if (!it.v)
                return -ENOMEM;
        k = collect_maps(&it, r);
        if (k >= 0)
                k = collect_lists(&it, r);
        if (k >= 0) {
                qsort(it.v, it.n, sizeof(*it.v), cmp_item);
                for (size_t i = 0; i < it.n; i++) {
                        fputs(prefix, f);
                        kdp_ctl_client_put_value(f, it.v[i].text);
                        putc('\n', f);
                }
        }
        items_done(&it);
        return k;
}
