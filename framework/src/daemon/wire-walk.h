/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One pass over a protobuf message's wire bytes before protobuf-c unpacks
 * it. protobuf-c allocates for every field occurrence it scans (a record of
 * ~32 bytes, until the message is built), for every element of a repeated
 * field and for every unknown field it keeps, so a 4 MiB message of 2-byte
 * elements costs it hundreds of MB. The walk counts what the message holds,
 * at every depth, against the bounds it is given, and refuses it before any
 * of that is allocated. It also checks every string field: protobuf-c hands a
 * proto3 string over as a C string, so a NUL inside would cut it short
 * ("widget-1\0evil" read as "widget-1"), and proto3 strings are UTF-8.
 *
 * The walk is linear in the bytes (a nested message is walked once, at its
 * own depth; a packed field's elements are counted, not decoded), recurses
 * only into message fields of the descriptor (depth bounded by the schema)
 * and allocates nothing. Pure: no I/O, no state between calls.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

/* A field of a message type, by its number. */
typedef struct kdp_wire_field {
        const ProtobufCMessageDescriptor *message;
        uint32_t id;
} kdp_wire_field;

#define KDP_WIRE_BOUND_FIELDS 2
#define KDP_WIRE_BOUNDS_MAX 16

/*
 * At most `max` elements of the fields named, all their occurrences in one
 * message together (at every depth: a field of a nested type counts in every
 * instance). An element is an occurrence, or one value of a packed field.
 */
typedef struct kdp_wire_bound {
        const char *what;               /* for the error: "container requests" */
        uint32_t max;
        kdp_wire_field fields[KDP_WIRE_BOUND_FIELDS];   /* unused ones { NULL } */
} kdp_wire_bound;

typedef struct kdp_wire_limits {
        const kdp_wire_bound *bounds;
        size_t n_bounds;                /* at most KDP_WIRE_BOUNDS_MAX */
        uint32_t max_unknown;           /* fields the descriptors do not know, at every depth together */
} kdp_wire_limits;

/*
 * Walks the `size` bytes at `data` as a message of `d`. Besides the bounds,
 * a field that is not repeated may occur once in each message (protobuf
 * would take the last, or merge messages; no kubelet sends one twice).
 *   0          within every bound (the bytes may still not be a message of `d`:
 *              a field with the wire type of another is left to protobuf-c)
 *   -EBADMSG   not protobuf: a varint cut off or over 10 bytes, a length past
 *              the end, a group or a wire type 6 or 7, field number 0
 *   -EILSEQ    a string field holds a NUL byte or bytes that are not UTF-8
 *   -E2BIG     a bound, the unknown-field bound or the once rule is broken
 * For -EILSEQ and -E2BIG, `err` names the field and the limit, e.g. "more
 * than 64 container requests in one AllocateRequest (field
 * container_requests)" or "a NUL byte in string field devices_ids".
 */
int kdp_wire_walk_message(const ProtobufCMessageDescriptor *d, const kdp_wire_limits *limits, const uint8_t *data,
                          size_t size, char *err, size_t err_size);
