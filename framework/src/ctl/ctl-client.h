/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A client of one v1beta1 device-plugin socket (or of any gRPC service on a
 * unix socket, through kdp_ctl_client_call: the PodResources API): one
 * channel, one pluck completion queue, blocking unary calls and a blocking
 * ListAndWatch reader, plus the printers kdpctl and the stand-in kubelet share.
 *
 * Threads: each call blocks the calling thread until it ends. Up to
 * KDP_CTL_CLIENT_MAX_CALLS calls may run at once on one client (from different
 * threads). kdp_ctl_client_cancel() may be called from any thread: it ends
 * every running call and makes later calls fail at once with CANCELLED.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <grpc/grpc.h>

#include <kdp/cleanup.h>

#include "deviceplugin/v1beta1/api.pb-c.h"

#define KDP_CTL_CLIENT_MAX_CALLS 8
#define KDP_CTL_CLIENT_WAIT_FOR_READY (1u << 0)

#define KDP_CTL_CLIENT_METHOD_OPTIONS "/v1beta1.DevicePlugin/GetDevicePluginOptions"
#define KDP_CTL_CLIENT_METHOD_LIST "/v1beta1.DevicePlugin/ListAndWatch"
#define KDP_CTL_CLIENT_METHOD_PREFERRED "/v1beta1.DevicePlugin/GetPreferredAllocation"
#define KDP_CTL_CLIENT_METHOD_ALLOCATE "/v1beta1.DevicePlugin/Allocate"
#define KDP_CTL_CLIENT_METHOD_PRESTART "/v1beta1.DevicePlugin/PreStartContainer"
/* The plugin watcher's Registration service (proto/pluginregistration/v1/api.proto) */
#define KDP_CTL_CLIENT_METHOD_GET_INFO "/pluginregistration.Registration/GetInfo"
#define KDP_CTL_CLIENT_METHOD_NOTIFY "/pluginregistration.Registration/NotifyRegistrationStatus"
/* The kubelet's PodResources API (proto/podresources/v1/api.proto) */
#define KDP_CTL_CLIENT_POD_RESOURCES_SERVICE "v1.PodResourcesLister"
#define KDP_CTL_CLIENT_METHOD_POD_LIST "/v1.PodResourcesLister/List"
#define KDP_CTL_CLIENT_METHOD_POD_ALLOCATABLE "/v1.PodResourcesLister/GetAllocatableResources"
/* What a kubelet 1.21-1.27 with the KubeletPodResourcesGetAllocatable gate off answers it (code Unknown) */
#define KDP_CTL_CLIENT_POD_ALLOCATABLE_DISABLED "Pod Resources API GetAllocatableResources disabled"

typedef struct kdp_ctl_client kdp_ctl_client;
typedef struct kdp_ctl_client_stream kdp_ctl_client_stream;

/* How a call ended. `message` is the peer's status details, truncated. */
typedef struct kdp_ctl_client_status {
        grpc_status_code code;
        char message[512];
} kdp_ctl_client_status;

/* `socket_path` is a file path, or a target already starting with "unix:". */
int kdp_ctl_client_new(const char *socket_path, kdp_ctl_client **ret);
/* The same, taking responses of up to `max_receive` bytes (0: gRPC's default, 4 MiB). */
int kdp_ctl_client_new_max_message(const char *socket_path, size_t max_receive, kdp_ctl_client **ret);
/* Cancels nothing: every call and stream must have ended. Returns NULL. */
kdp_ctl_client *kdp_ctl_client_free(kdp_ctl_client *c);
void kdp_ctl_client_cancel(kdp_ctl_client *c);
/* True if the channel has a live connection right now. */
bool kdp_ctl_client_is_ready(kdp_ctl_client *c);

/*
 * Connects, as a blocking dial does: waits until the channel is ready, retrying a refused or
 * failed connection, until `deadline`. Returns 0, -ETIMEDOUT, or -ECANCELED once the client
 * was cancelled (seen within 100 ms).
 */
int kdp_ctl_client_wait_ready(kdp_ctl_client *c, gpr_timespec deadline);

/* Absolute deadline `ms` from now; ms <= 0 means none. */
gpr_timespec kdp_ctl_client_deadline(int64_t ms);

/*
 * One unary call. Returns 0 and the decoded response (free with
 * protobuf_c_message_free_unpacked) when the status is OK; otherwise returns
 * -EREMOTEIO (the peer's status), -EMSGSIZE (the answer was over the
 * channel's max message size: RESOURCE_EXHAUSTED from gRPC), -E2BIG (the
 * answer holds more than kdp_proto_conv_limits() allows: INTERNAL naming the
 * bound), -EBADMSG (undecodable response, as INTERNAL) or -ECANCELED (client
 * cancelled), always with *reterr_status filled.
 */
int kdp_ctl_client_call(kdp_ctl_client *c, const char *method, const ProtobufCMessage *req,
                        const ProtobufCMessageDescriptor *resp_desc, gpr_timespec deadline,
                        unsigned flags, ProtobufCMessage **ret_resp,
                        kdp_ctl_client_status *reterr_status);

/* The same with the request given as wire bytes, as a peer that is not the kubelet might send them. */
int kdp_ctl_client_call_raw(kdp_ctl_client *c, const char *method, const uint8_t *req, size_t size,
                            const ProtobufCMessageDescriptor *resp_desc, gpr_timespec deadline,
                            ProtobufCMessage **ret_resp, kdp_ctl_client_status *reterr_status);

/* `m` packed into a new byte buffer (the caller's to destroy). */
grpc_byte_buffer *kdp_ctl_client_pack_buffer(const ProtobufCMessage *m);

/* A list of device IDs; the strings are borrowed. */
typedef struct kdp_ctl_client_ids {
        char **v;
        size_t n;
} kdp_ctl_client_ids;

/* The four unary RPCs, built from plain ID lists; results and errors as kdp_ctl_client_call. */
int kdp_ctl_client_options(kdp_ctl_client *c, gpr_timespec deadline, unsigned flags,
                           V1beta1__DevicePluginOptions **ret, kdp_ctl_client_status *reterr_status);
int kdp_ctl_client_preferred(kdp_ctl_client *c, const kdp_ctl_client_ids *available,
                             const kdp_ctl_client_ids *must_include, int32_t size, gpr_timespec deadline,
                             V1beta1__PreferredAllocationResponse **ret,
                             kdp_ctl_client_status *reterr_status);
/* One ContainerAllocateRequest per element of `containers`. */
int kdp_ctl_client_allocate(kdp_ctl_client *c, const kdp_ctl_client_ids *containers, size_t n_containers,
                            gpr_timespec deadline, V1beta1__AllocateResponse **ret,
                            kdp_ctl_client_status *reterr_status);
int kdp_ctl_client_prestart(kdp_ctl_client *c, const kdp_ctl_client_ids *ids, gpr_timespec deadline,
                            kdp_ctl_client_status *reterr_status);

/* Starts ListAndWatch. Same errors as kdp_ctl_client_call. */
int kdp_ctl_client_watch(kdp_ctl_client *c, gpr_timespec deadline, unsigned flags,
                         kdp_ctl_client_stream **ret, kdp_ctl_client_status *reterr_status);
/*
 * Waits for the next message: returns 1 and the message (free with
 * v1beta1__list_and_watch_response__free_unpacked), or 0 once the stream has
 * ended, with its final status in *ret_status.
 */
int kdp_ctl_client_stream_next(kdp_ctl_client_stream *s, V1beta1__ListAndWatchResponse **ret_msg,
                               kdp_ctl_client_status *ret_status);
/* Cancels the stream if it is still open and releases it. Returns NULL. */
kdp_ctl_client_stream *kdp_ctl_client_stream_free(kdp_ctl_client_stream *s);

KDP_DEFINE_CLEANUP_FUNC(kdp_ctl_client, kdp_ctl_client_free)
KDP_DEFINE_CLEANUP_FUNC(kdp_ctl_client_stream, kdp_ctl_client_stream_free)

/* "INVALID_ARGUMENT"; grpc-go's spelling "InvalidArgument" with go = true. */
const char *kdp_ctl_client_code_name(grpc_status_code code, bool go);
/* The error text a grpc-go caller sees: "rpc error: code = Unknown desc = ...". */
void kdp_ctl_client_format_go_error(const kdp_ctl_client_status *st, char *buf, size_t size);

/* Writes `s` with control characters escaped (\n, \t, \xNN), so output stays one line. */
void kdp_ctl_client_put_value(FILE *f, const char *s);
/* IDs joined by ','. */
void kdp_ctl_client_put_ids(FILE *f, char *const *ids, size_t n_ids);
/* The device's NUMA IDs sorted, joined by ','; *ret = NULL when it has no topology. */
int kdp_ctl_client_numa_string(const V1beta1__Device *d, char **ret);
/* The ListAndWatch table: header, one row per device sorted by ID, totals. */
void kdp_ctl_client_print_list(FILE *f, const V1beta1__ListAndWatchResponse *m);
/* One sorted line per item (env, device, mount, annotation, cdi), each after `prefix`. */
int kdp_ctl_client_print_container(FILE *f, const char *prefix,
                                   const V1beta1__ContainerAllocateResponse *r);
