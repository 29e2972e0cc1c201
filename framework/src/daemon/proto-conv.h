/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The only place (with server.c) that knows protobuf-c: our types to and from
 * wire bytes. Messages are built on the stack or in short-lived arrays whose
 * strings are borrowed from the caller's objects, packed once, and dropped;
 * nothing built here is ever given to *_free_unpacked. What comes in is
 * walked on its wire bytes against the bounds below (wire-walk.h) before
 * protobuf-c unpacks it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <grpc/byte_buffer.h>
#include <protobuf-c/protobuf-c.h>

#include "alloc.h"
#include "device.h"
#include "pod-resources.h"
#include "wire-walk.h"

/* ListAndWatchResponse for every device of `l`, into a malloc()ed buffer. */
int kdp_proto_conv_pack_list(const kdp_device_list *l, uint8_t **ret, size_t *ret_size);

/* A byte buffer holding a copy of data[0..size). NULL on allocation failure. */
grpc_byte_buffer *kdp_proto_conv_buffer(const uint8_t *data, size_t size);

int kdp_proto_conv_pack_options(bool pre_start_required, bool preferred_available, grpc_byte_buffer **ret);
int kdp_proto_conv_pack_empty(grpc_byte_buffer **ret);
/* The plugin watcher's PluginInfo of `resource`: a DevicePlugin of API v1beta1 served on the socket asked. */
int kdp_proto_conv_pack_plugin_info(const char *resource, grpc_byte_buffer **ret);
int kdp_proto_conv_pack_register(const char *resource, const char *endpoint, bool pre_start_required,
                            bool preferred_available, grpc_byte_buffer **ret);
/* AllocateResponse with one ContainerAllocateResponse per element of `containers`. */
int kdp_proto_conv_pack_allocate(const kdp_alloc_response *containers, size_t n, grpc_byte_buffer **ret);
/* PreferredAllocationResponse with one container per element. */
int kdp_proto_conv_pack_preferred(const kdp_pref_response *containers, size_t n, grpc_byte_buffer **ret);

/*
 * What one message may hold, checked on its wire bytes before protobuf-c
 * unpacks it (wire-walk.h): requests as the kubelet sends them (it sends one
 * container request; a node has far fewer devices than the IDs bound), the
 * kubelet's PodResources answers as one node has pods, devices and CPUs.
 */
#define KDP_PROTO_CONV_MAX_CONTAINERS 64        /* container requests per Allocate, GetPreferredAllocation */
#define KDP_PROTO_CONV_MAX_IDS 65536            /* device IDs per field and message; PodResources entries */
#define KDP_PROTO_CONV_MAX_UNKNOWN 64           /* unknown fields in a request */
#define KDP_PROTO_CONV_MAX_PODS 2048            /* pods in a PodResources List answer */

/* The bounds kdp_proto_conv_unpack_checked() walks a message of `desc` with (only unknown fields if none). */
const kdp_wire_limits *kdp_proto_conv_limits(const ProtobufCMessageDescriptor *desc);

/*
 * Unpacks `bb` (NULL: an empty message) after walking its bytes with
 * kdp_proto_conv_limits(desc). -EBADMSG when it is not a message of `desc`;
 * -EILSEQ when a string field, at any depth, holds a NUL byte (which
 * protobuf-c's char * would silently cut off) or is not UTF-8; -E2BIG when it
 * holds more than a bound allows: then `err` (may be NULL) names the problem
 * and the field, e.g. "a NUL byte in string field devices_ids" or "more than
 * 64 container requests in one AllocateRequest (field container_requests)".
 */
int kdp_proto_conv_unpack_checked(grpc_byte_buffer *bb, const ProtobufCMessageDescriptor *desc, ProtobufCMessage **ret,
                                  char *err, size_t err_size);
int kdp_proto_conv_unpack(grpc_byte_buffer *bb, const ProtobufCMessageDescriptor *desc, ProtobufCMessage **ret);
/* The same on `size` bytes at `data` (NULL with 0: an empty message). */
int kdp_proto_conv_unpack_bytes(const uint8_t *data, size_t size, const ProtobufCMessageDescriptor *desc,
                                ProtobufCMessage **ret, char *err, size_t err_size);

/*
 * ListPodResourcesResponse → the IDs per resource that its pods' containers
 * hold (sorted, unique; entries without a resource name or ID dropped).
 * -EMSGSIZE if `bb` is over max_size bytes; else as
 * kdp_proto_conv_unpack_checked(), with `err` (may be NULL) saying why.
 */
int kdp_proto_conv_unpack_pod_resources(grpc_byte_buffer *bb, size_t max_size, kdp_pod_resources_list *ret,
                                        char *err, size_t err_size);
