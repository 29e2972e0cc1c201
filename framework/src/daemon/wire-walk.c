/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The wire walk (see wire-walk.h): one recursive function per message
 * instance, counting into one `walk` on the caller's stack.
 */
#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>

#include <kdp/config-file.h>

#include "wire-walk.h"

/* Deeper than any message of our schemas nests (none is recursive). */
#define DEPTH_MAX 16

typedef struct walk {
        const kdp_wire_limits *limits;
        const ProtobufCMessageDescriptor *root;
        uint64_t counts[KDP_WIRE_BOUNDS_MAX];
        uint64_t n_unknown;
        char *err;
        size_t err_size;
} walk;

/* Reads a varint at *p (before end); false if cut off or longer than 10 bytes. */
static bool read_varint(const uint8_t **p, const uint8_t *end, uint64_t *ret) {
        uint64_t v = 0;

        for (unsigned shift = 0; *p < end && shift < 70; shift += 7) {
                uint8_t b = *(*p)++;

                v |= (uint64_t) (b & 0x7f) << shift;
                if (!(b & 0x80)) {
                        *ret = v;
                        return true;
                }
        }
        return false;
}

/* Bytes of a value of wire type `wt` after its tag (the length prefix read); -1 for a type without values. */
static int skip_value(const uint8_t **p, const uint8_t *end, unsigned wt, uint64_t *ret_len) {
        uint64_t n;

        switch (wt) {
        case 0:
                *ret_len = 0;
                return read_varint(p, end, &n) ? 0 : -EBADMSG;
        case 1:
                *ret_len = 8;
                break;
        case 5:
                *ret_len = 4;
                break;
        case 2:
                if (!read_varint(p, end, ret_len))
                        return -EBADMSG;
                break;
        default:
                return -EBADMSG;
        }
        return *ret_len <= (uint64_t) (end - *p) ? 0 : -EBADMSG;
}

/* Values in a packed run of `len` bytes of field `f`; 1 when `f` is not a packable scalar. */
static uint64_t packed_count(const ProtobufCFieldDescriptor *f, const uint8_t *p, uint64_t len) {
        uint64_t n = 0;

        switch (f->type) {
        case PROTOBUF_C_TYPE_FIXED32:
        case PROTOBUF_C_TYPE_SFIXED32:
        case PROTOBUF_C_TYPE_FLOAT:
                return len / 4;
        case PROTOBUF_C_TYPE_FIXED64:
        case PROTOBUF_C_TYPE_SFIXED64:
        case PROTOBUF_C_TYPE_DOUBLE:
                return len / 8;
        case PROTOBUF_C_TYPE_STRING:
        case PROTOBUF_C_TYPE_BYTES:
        case PROTOBUF_C_TYPE_MESSAGE:
                return 1;
        default:                        /* varints: one per byte without the continuation bit */
                for (uint64_t i = 0; i < len; i++)
                        n += !(p[i] & 0x80);
                return n;
        }
}

/* Counts `n` elements of field `id` of `d` against the bound naming it. */
static int count(walk *w, const ProtobufCMessageDescriptor *d, const ProtobufCFieldDescriptor *f, uint64_t n) {
        for (size_t b = 0; b < w->limits->n_bounds; b++) {
                const kdp_wire_bound *bound = &w->limits->bounds[b];

                for (size_t i = 0; i < KDP_WIRE_BOUND_FIELDS; i++) {
                        if (bound->fields[i].message != d || bound->fields[i].id != f->id)
                                continue;
                        w->counts[b] += n;
                        if (w->counts[b] <= bound->max)
                                return 0;
                        (void) snprintf(w->err, w->err_size, "more than %" PRIu32 " %s in one %s (field %s)",
                                        bound->max, bound->what, w->root->short_name, f->name);
                        return -E2BIG;
                }
        }
        return 0;
}

static int walk_message(walk *w, const ProtobufCMessageDescriptor *d, const uint8_t *p, const uint8_t *end,
                        unsigned depth);

/* One occurrence of known field `f` of `d`, its value at p[0..len). */
static int walk_field(walk *w, const ProtobufCMessageDescriptor *d, const ProtobufCFieldDescriptor *f,
                      unsigned wt, const uint8_t *p, uint64_t len, unsigned depth) {
        kdp_config_file_error e = {};
        int r;

        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
                r = count(w, d, f, wt == 2 ? packed_count(f, p, len) : 1);
                if (r < 0)
                        return r;
        }
        if (wt != 2)
                return 0;
        if (f->type == PROTOBUF_C_TYPE_STRING && kdp_config_file_check_text((const char *) p, (size_t) len, &e) < 0) {
                (void) snprintf(w->err, w->err_size, "%s in string field %s", e.reason, f->name);
                return -EILSEQ;
        }
        if (f->type == PROTOBUF_C_TYPE_MESSAGE)
                return walk_message(w, f->descriptor, p, p + len, depth + 1);
        return 0;
}

static int walk_message(walk *w, const ProtobufCMessageDescriptor *d, const uint8_t *p, const uint8_t *end,
                        unsigned depth) {
        uint64_t seen = 0;      /* fields (by index, the first 64) that are not repeated, seen once */

        if (depth > DEPTH_MAX)
                return -EBADMSG;
        while (p < end) {
                const ProtobufCFieldDescriptor *f;
                uint64_t tag, len;
                const uint8_t *value;
                int r;

                if (!read_varint(&p, end, &tag) || tag >> 3 == 0 || tag >> 3 > UINT32_MAX)
                        return -EBADMSG;
                r = skip_value(&p, end, (unsigned) (tag & 7), &len);
                if (r < 0)
                        return r;
                value = p;
                p += len;
                f = protobuf_c_message_descriptor_get_field(d, (unsigned) (tag >> 3));
                if (!f) {
                        if (++w->n_unknown > w->limits->max_unknown) {
                                (void) snprintf(w->err, w->err_size,
                                                "more than %" PRIu32 " unknown fields in one %s (field number %" PRIu64
                                                " of %s)", w->limits->max_unknown, w->root->short_name, tag >> 3,
                                                d->short_name);
                                return -E2BIG;
                        }
                        continue;
                }
                if (f->label != PROTOBUF_C_LABEL_REPEATED && f - d->fields < 64) {
                        uint64_t bit = UINT64_C(1) << (f - d->fields);

                        if (seen & bit) {
                                (void) snprintf(w->err, w->err_size, "field %s given twice in one %s", f->name,
                                                d->short_name);
                                return -E2BIG;
                        }
                        seen |= bit;
                }
                r = walk_field(w, d, f, (unsigned) (tag & 7), value, len, depth);
                if (r < 0)
                        return r;
        }
        return 0;
}

int kdp_wire_walk_message(const ProtobufCMessageDescriptor *d, const kdp_wire_limits *limits, const uint8_t *data,
                          size_t size, char *err, size_t err_size) {
        char buf[1];
        walk w = {
                .limits = limits,
                .root = d,
                .err = err && err_size ? err : buf,
                .err_size = err && err_size ? err_size : sizeof(buf),
        };

        return walk_message(&w, d, data, data + size, 0);
}
