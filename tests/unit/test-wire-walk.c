/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The wire walk before unpacking: exact counts at each bound and one past it, nesting, unknown fields, bad bytes. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "deviceplugin/v1beta1/api.pb-c.h"
#include "podresources/v1/api.pb-c.h"
#include "proto-conv.h"
#include "wire-walk.h"

#include "kdp-test.h"

/* A growing buffer of wire bytes. */
typedef struct wire {
        uint8_t *v;
        size_t n, size;
} wire;

static void wire_done(wire *w) {
        free(w->v);
        *w = (wire){ 0 };
}

static void put(wire *w, const void *data, size_t n) {
        if (w->n + n > w->size) {
                w->size = (w->n + n) * 2;
                w->v = realloc(w->v, w->size);
                ck_assert_ptr_nonnull(w->v);
        }
        memcpy(w->v + w->n, data, n);
        w->n += n;
}

static void varint(wire *w, uint64_t v) {
        do {
                uint8_t b = (uint8_t) (v & 0x7f);

                v >>= 7;
                if (v)
                        b |= 0x80;
                put(w, &b, 1);
        } while (v);
}

/* Field `id` as a varint. */
static void put_varint(wire *w, uint32_t id, uint64_t v) {
        varint(w, (uint64_t) id << 3);
        varint(w, v);
}

/* Field `id`, length-delimited, holding `inner`'s bytes. */
static void put_bytes(wire *w, uint32_t id, const void *data, size_t n) {
        varint(w, (uint64_t) id << 3 | 2);
        varint(w, n);
        put(w, data, n);
}

static void put_message(wire *w, uint32_t id, const wire *inner) {
        put_bytes(w, id, inner->v, inner->n);
}

/* *w emptied, then field `id` holding `inner`. */
static void rewrap(wire *w, uint32_t id, const wire *inner) {
        wire_done(w);
        put_message(w, id, inner);
}

/* `n` times field `id` holding `s`. */
static void put_strings(wire *w, uint32_t id, const char *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                put_bytes(w, id, s, strlen(s));
}

typedef struct result {
        int r;
        char err[256];
} result;

/* Walks `w` as kdp_proto_conv_unpack_checked() does; then unpacks it when the walk passed. */
static result walk(const ProtobufCMessageDescriptor *d, const wire *w) {
        result res = { 0 };

        res.r = kdp_wire_walk_message(d, kdp_proto_conv_limits(d), w->v, w->n, res.err, sizeof(res.err));
        if (res.r == 0) {
                ProtobufCMessage *m = protobuf_c_message_unpack(d, NULL, w->n, w->v);

                ck_assert_ptr_nonnull(m);
                protobuf_c_message_free_unpacked(m, NULL);
        }
        return res;
}

static void assert_refused(result res, int r, const char *err) {
        ck_assert_int_eq(res.r, r);
        ck_assert_str_eq(res.err, err);
}

static const ProtobufCMessageDescriptor *const ALLOCATE = &v1beta1__allocate_request__descriptor;
static const ProtobufCMessageDescriptor *const PREFERRED = &v1beta1__preferred_allocation_request__descriptor;
static const ProtobufCMessageDescriptor *const LIST = &v1__list_pod_resources_response__descriptor;

/* ---- bounds ---- */

START_TEST(test_wire_walk_containers_at_the_limit_and_one_past) {
        _cleanup_(wire_done) wire w = { 0 };

        for (int i = 0; i < 64; i++)
                put_bytes(&w, 1, "", 0);
        ck_assert_int_eq(walk(ALLOCATE, &w).r, 0);
        ck_assert_int_eq(walk(PREFERRED, &w).r, 0);
        put_bytes(&w, 1, "", 0);
        assert_refused(walk(ALLOCATE, &w), -E2BIG,
                       "more than 64 container requests in one AllocateRequest (field container_requests)");
        assert_refused(walk(PREFERRED, &w), -E2BIG,
                       "more than 64 container requests in one PreferredAllocationRequest (field container_requests)");
}
END_TEST

START_TEST(test_wire_walk_ids_counted_across_nested_containers) {
        _cleanup_(wire_done) wire w = { 0 }, a = { 0 }, b = { 0 };

        put_strings(&a, 1, "w", 40000);
        put_strings(&b, 1, "w", 65536 - 40000);
        put_message(&w, 1, &a);
        put_message(&w, 1, &b);
        ck_assert_int_eq(walk(ALLOCATE, &w).r, 0);
        wire_done(&w);
        put_bytes(&b, 1, "", 0);
        put_message(&w, 1, &a);
        put_message(&w, 1, &b);
        assert_refused(walk(ALLOCATE, &w), -E2BIG,
                       "more than 65536 device IDs in one AllocateRequest (field devices_ids)");
}
END_TEST

START_TEST(test_wire_walk_each_id_field_has_its_own_bound) {
        _cleanup_(wire_done) wire w = { 0 }, c = { 0 };

        put_strings(&c, 1, "w", 65536);
        put_strings(&c, 2, "w", 65536);
        put_varint(&c, 3, 2);
        put_message(&w, 1, &c);
        ck_assert_int_eq(walk(PREFERRED, &w).r, 0);
        put_strings(&c, 2, "w", 1);
        rewrap(&w, 1, &c);
        assert_refused(walk(PREFERRED, &w), -E2BIG,
                       "more than 65536 must_include device IDs in one PreferredAllocationRequest "
                       "(field must_include_deviceIDs)");
}
END_TEST

START_TEST(test_wire_walk_prestart_ids) {
        _cleanup_(wire_done) wire w = { 0 };

        put_strings(&w, 1, "", 65536);
        ck_assert_int_eq(walk(&v1beta1__pre_start_container_request__descriptor, &w).r, 0);
        put_strings(&w, 1, "", 1);
        assert_refused(walk(&v1beta1__pre_start_container_request__descriptor, &w), -E2BIG,
                       "more than 65536 device IDs in one PreStartContainerRequest (field devices_ids)");
}
END_TEST

START_TEST(test_wire_walk_pods_at_the_limit_and_one_past) {
        _cleanup_(wire_done) wire w = { 0 }, pod = { 0 };

        put_bytes(&pod, 1, "pod-0", 5);
        for (int i = 0; i < 2048; i++)
                put_message(&w, 1, &pod);
        ck_assert_int_eq(walk(LIST, &w).r, 0);
        put_message(&w, 1, &pod);
        assert_refused(walk(LIST, &w), -E2BIG,
                       "more than 2048 pods in one ListPodResourcesResponse (field pod_resources)");
}
END_TEST

/* pods > containers > devices > IDs: counted at the depth they sit, over every instance */
START_TEST(test_wire_walk_list_devices_deep_inside) {
        _cleanup_(wire_done) wire w = { 0 }, pod = { 0 }, container = { 0 }, devices = { 0 };

        put_bytes(&devices, 1, "example.com/widget", 18);
        put_strings(&devices, 2, "w", 16);
        for (int i = 0; i < 64; i++)
                put_message(&container, 2, &devices);
        for (int i = 0; i < 8; i++)
                put_message(&pod, 3, &container);
        for (int i = 0; i < 8; i++)
                put_message(&w, 1, &pod);
        ck_assert_int_eq(walk(LIST, &w).r, 0);         /* 8 * 8 * 64 * 16 = 65536 IDs */
        put_message(&w, 1, &pod);
        assert_refused(walk(LIST, &w), -E2BIG,
                       "more than 65536 device IDs in one ListPodResourcesResponse (field device_ids)");
}
END_TEST

/* a packed field's values count one by one: 3 bytes of varints 1, 300 are 2 values */
START_TEST(test_wire_walk_packed_values_counted) {
        _cleanup_(wire_done) wire w = { 0 }, pod = { 0 }, container = { 0 }, packed = { 0 };

        for (int i = 0; i < 65535; i++)
                varint(&packed, i % 2 ? 300 : 1);
        put_message(&container, 3, &packed);
        put_varint(&container, 3, 7);                  /* one value, not packed */
        put_message(&pod, 3, &container);
        put_message(&w, 1, &pod);
        ck_assert_int_eq(walk(LIST, &w).r, 0);
        put_varint(&container, 3, 8);
        rewrap(&pod, 3, &container);
        rewrap(&w, 1, &pod);
        assert_refused(walk(LIST, &w), -E2BIG,
                       "more than 65536 CPU IDs in one ListPodResourcesResponse (field cpu_ids)");
}
END_TEST

/* ---- unknown fields and fields given twice ---- */

START_TEST(test_wire_walk_unknown_fields_at_every_depth) {
        _cleanup_(wire_done) wire w = { 0 }, c = { 0 };

        put_strings(&c, 1, "w", 1);
        for (int i = 0; i < 32; i++)
                put_varint(&c, 15, 0);                 /* unknown in ContainerAllocateRequest */
        put_message(&w, 1, &c);
        for (int i = 0; i < 32; i++)
                put_bytes(&w, 9, "x", 1);              /* unknown in AllocateRequest */
        ck_assert_int_eq(walk(ALLOCATE, &w).r, 0);
        put_varint(&c, 16, 0);
        rewrap(&w, 1, &c);
        for (int i = 0; i < 32; i++)
                put_bytes(&w, 9, "x", 1);
        assert_refused(walk(ALLOCATE, &w), -E2BIG,
                       "more than 64 unknown fields in one AllocateRequest (field number 9 of AllocateRequest)");
        wire_done(&w);
        for (int i = 0; i < 65; i++)
                put_varint(&w, 5, 1);
        assert_refused(walk(&v1beta1__empty__descriptor, &w), -E2BIG,
                       "more than 64 unknown fields in one Empty (field number 5 of Empty)");
}
END_TEST

START_TEST(test_wire_walk_singular_field_given_twice) {
        _cleanup_(wire_done) wire w = { 0 }, c = { 0 };

        put_varint(&c, 3, 1);
        put_message(&w, 1, &c);
        put_message(&w, 1, &c);                         /* once in each container: fine */
        ck_assert_int_eq(walk(PREFERRED, &w).r, 0);
        put_varint(&c, 3, 2);
        rewrap(&w, 1, &c);
        assert_refused(walk(PREFERRED, &w), -E2BIG,
                       "field allocation_size given twice in one ContainerPreferredAllocationRequest");
}
END_TEST

/* ---- strings and bytes that are not protobuf ---- */

START_TEST(test_wire_walk_strings_checked_when_nested) {
        _cleanup_(wire_done) wire w = { 0 }, c = { 0 };

        put_bytes(&c, 2, "widget-1\0evil", 13);
        put_message(&w, 1, &c);
        assert_refused(walk(PREFERRED, &w), -EILSEQ, "a NUL byte in string field must_include_deviceIDs");
}
END_TEST

START_TEST(test_wire_walk_malformed_refused) {
        static const struct {
                const char *name;
                size_t n;
                uint8_t bytes[16];
        } cases[] = {
                { "varint of 11 bytes", 14, { 0x0a, 0x0c, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                              0xff, 0xff, 0x01 } },
                { "tag varint of 11 bytes", 11, { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                                  0x01 } },
                { "varint cut off", 2, { 0x08, 0x80 } },
                { "length past the end", 3, { 0x0a, 0x05, 0x00 } },
                { "nested length past its message", 4, { 0x0a, 0x02, 0x0a, 0x05 } },
                { "start group", 1, { 0x0b } },
                { "wire type 6", 2, { 0x0e, 0x00 } },
                { "field number 0", 2, { 0x00, 0x00 } },
                { "fixed64 cut off", 4, { 0x09, 0x00, 0x00, 0x00 } },
        };

        for (size_t i = 0; i < KDP_ELEMENTSOF(cases); i++) {
                wire w = { .v = (uint8_t *) cases[i].bytes, .n = cases[i].n };

                int r = kdp_wire_walk_message(ALLOCATE, kdp_proto_conv_limits(ALLOCATE), w.v, w.n, NULL, 0);

                ck_assert_msg(r == -EBADMSG, "%s: %d", cases[i].name, r);
                ck_assert_msg(!protobuf_c_message_unpack(ALLOCATE, NULL, w.n, w.v), "%s: unpacked", cases[i].name);
        }
}
END_TEST

/* ---- the tables ---- */

static bool bounded(const kdp_wire_limits *l, const ProtobufCMessageDescriptor *d, uint32_t id) {
        for (size_t b = 0; b < l->n_bounds; b++)
                for (size_t i = 0; i < KDP_WIRE_BOUND_FIELDS; i++)
                        if (l->bounds[b].fields[i].message == d && l->bounds[b].fields[i].id == id)
                                return true;
        return false;
}

/* Every repeated field a message of `d` holds, at any depth, is under a bound of `l`. */
static void assert_all_bounded(const kdp_wire_limits *l, const ProtobufCMessageDescriptor *d) {
        ck_assert_uint_le(d->n_fields, 64);
        for (unsigned i = 0; i < d->n_fields; i++) {
                const ProtobufCFieldDescriptor *f = &d->fields[i];

                if (f->label == PROTOBUF_C_LABEL_REPEATED)
                        ck_assert_msg(bounded(l, d, f->id), "%s.%s has no bound", d->name, f->name);
                if (f->type == PROTOBUF_C_TYPE_MESSAGE)
                        assert_all_bounded(l, f->descriptor);
        }
}

START_TEST(test_wire_walk_every_repeated_field_bounded) {
        const ProtobufCMessageDescriptor *roots[] = {
                ALLOCATE, PREFERRED, &v1beta1__pre_start_container_request__descriptor, LIST,
                &v1__allocatable_resources_response__descriptor,
        };

        for (size_t i = 0; i < KDP_ELEMENTSOF(roots); i++) {
                ck_assert_uint_le(kdp_proto_conv_limits(roots[i])->n_bounds, KDP_WIRE_BOUNDS_MAX);
                assert_all_bounded(kdp_proto_conv_limits(roots[i]), roots[i]);
        }
}
END_TEST

static Suite *wire_walk_suite(void) {
        Suite *s = suite_create("wire-walk");
        TCase *bounds = tcase_create("bounds"), *fields = tcase_create("fields"), *bytes = tcase_create("bytes");

        tcase_add_test(bounds, test_wire_walk_containers_at_the_limit_and_one_past);
        tcase_add_test(bounds, test_wire_walk_ids_counted_across_nested_containers);
        tcase_add_test(bounds, test_wire_walk_each_id_field_has_its_own_bound);
        tcase_add_test(bounds, test_wire_walk_prestart_ids);
        tcase_add_test(bounds, test_wire_walk_pods_at_the_limit_and_one_past);
        tcase_add_test(bounds, test_wire_walk_list_devices_deep_inside);
        tcase_add_test(bounds, test_wire_walk_packed_values_counted);
        tcase_add_test(bounds, test_wire_walk_every_repeated_field_bounded);
        suite_add_tcase(s, bounds);
        tcase_add_test(fields, test_wire_walk_unknown_fields_at_every_depth);
        tcase_add_test(fields, test_wire_walk_singular_field_given_twice);
        suite_add_tcase(s, fields);
        tcase_add_test(bytes, test_wire_walk_strings_checked_when_nested);
        tcase_add_test(bytes, test_wire_walk_malformed_refused);
        suite_add_tcase(s, bytes);
        return s;
}

int main(void) {
        return kdp_test_run(wire_walk_suite());
}
