/* SPDX-License-Identifier: GPL-2.0-or-later */
/* PodResources List answers as kdpd reads them: IDs per resource, and what it refuses. */
#include <check.h>
#include <errno.h>
#include <string.h>

#include <grpc/grpc.h>

#include "podresources/v1/api.pb-c.h"
#include "pod-resources.h"
#include "proto-conv.h"

#include "kdp-test.h"

static grpc_byte_buffer *bytes(const void *data, size_t size) {
        grpc_byte_buffer *bb = kdp_proto_conv_buffer(data, size);

        ck_assert_ptr_nonnull(bb);
        return bb;
}

static grpc_byte_buffer *pack(const V1__ListPodResourcesResponse *m) {
        size_t size = v1__list_pod_resources_response__get_packed_size(m);
        uint8_t *buf = malloc(size ? size : 1);
        grpc_byte_buffer *bb;

        ck_assert_ptr_nonnull(buf);
        ck_assert_uint_eq(v1__list_pod_resources_response__pack(m, buf), size);
        bb = bytes(buf, size);
        free(buf);
        return bb;
}

static V1__ContainerDevices devices(const char *resource, char **ids, size_t n) {
        V1__ContainerDevices d = V1__CONTAINER_DEVICES__INIT;

        d.resource_name = (char *) resource;
        d.device_ids = ids;
        d.n_device_ids = n;
        return d;
}

/* "<resource>: id,id" per entry, one a line. */
static char *text(const kdp_pod_resources_list *l) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        ck_assert_ptr_nonnull(f);
        for (size_t i = 0; i < l->n_resources; i++) {
                fprintf(f, "%s:", l->resources[i].resource);
                for (size_t j = 0; j < l->resources[i].n_ids; j++)
                        fprintf(f, "%s%s", j ? "," : " ", l->resources[i].ids[j]);
                fputc('\n', f);
        }
        fclose(f);
        return buf;
}

/*
 * Two pods: one container with devices of two resources (one entry per NUMA node, as the
 * kubelet splits them), another pod with two containers sharing an ID of the first resource
 * (listed once), an entry without a resource name and an empty ID (dropped); a pod without
 * containers. Exact result, sorted.
 */
START_TEST(test_pod_resources_groups_ids_per_resource) {
        char *x0[] = { "vf-9", "vf-2" }, *x1[] = { "vf-5" }, *y0[] = { "gpu-0" }, *x2[] = { "vf-2", "" },
             *z0[] = { "zz" };
        V1__ContainerDevices d[] = {
                devices("example.com/x", x0, 2), devices("example.com/x", x1, 1),
                devices("example.com/y", y0, 1), devices("example.com/x", x2, 2), devices("", z0, 1),
        };
        V1__ContainerDevices *c0_devs[] = { &d[0], &d[1], &d[2] }, *c1_devs[] = { &d[3] }, *c2_devs[] = { &d[4] };
        V1__ContainerResources c[3] = { V1__CONTAINER_RESOURCES__INIT, V1__CONTAINER_RESOURCES__INIT,
                                        V1__CONTAINER_RESOURCES__INIT };
        V1__ContainerResources *p0_ctrs[] = { &c[0] }, *p1_ctrs[] = { &c[1], &c[2] };
        V1__PodResources p[3] = { V1__POD_RESOURCES__INIT, V1__POD_RESOURCES__INIT, V1__POD_RESOURCES__INIT };
        V1__PodResources *pods[] = { &p[0], &p[1], &p[2] };
        V1__ListPodResourcesResponse m = V1__LIST_POD_RESOURCES_RESPONSE__INIT;
        kdp_pod_resources_list l = { 0 };
        grpc_byte_buffer *bb;
        char *got;

        c[0].devices = c0_devs;
        c[0].n_devices = 3;
        c[1].devices = c1_devs;
        c[1].n_devices = 1;
        c[2].devices = c2_devs;
        c[2].n_devices = 1;
        p[0].name = "a";
        p[0].containers = p0_ctrs;
        p[0].n_containers = 1;
        p[1].name = "b";
        p[1].containers = p1_ctrs;
        p[1].n_containers = 2;
        p[2].name = "c";
        m.pod_resources = pods;
        m.n_pod_resources = 3;
        bb = pack(&m);
        ck_assert_int_eq(kdp_proto_conv_unpack_pod_resources(bb, KDP_POD_RESOURCES_MAX_MESSAGE, &l, NULL, 0), 0);
        grpc_byte_buffer_destroy(bb);
        got = text(&l);
        ck_assert_str_eq(got, "example.com/x: vf-2,vf-5,vf-9\nexample.com/y: gpu-0\n");
        free(got);
        ck_assert_ptr_eq(kdp_pod_resources_list_find(&l, "example.com/y"), &l.resources[1]);
        ck_assert_ptr_null(kdp_pod_resources_list_find(&l, "example.com/z"));
        kdp_pod_resources_list_done(&l);
        ck_assert_uint_eq(l.n_resources, 0);
}
END_TEST

/* No pods (an empty message: zero bytes, or no message at all) is an empty list, not an error. */
START_TEST(test_pod_resources_empty_answer_is_an_empty_list) {
        kdp_pod_resources_list l = { .n_resources = 7 };
        grpc_byte_buffer *bb = bytes("", 0);

        ck_assert_int_eq(kdp_proto_conv_unpack_pod_resources(bb, KDP_POD_RESOURCES_MAX_MESSAGE, &l, NULL, 0), 0);
        grpc_byte_buffer_destroy(bb);
        ck_assert_uint_eq(l.n_resources, 0);
        ck_assert_ptr_null(l.resources);
        l.n_resources = 7;
        ck_assert_int_eq(kdp_proto_conv_unpack_pod_resources(NULL, KDP_POD_RESOURCES_MAX_MESSAGE, &l, NULL, 0), 0);
        ck_assert_uint_eq(l.n_resources, 0);
}
END_TEST

/* Bytes that are no ListPodResourcesResponse: -EBADMSG, and *ret is left alone. */
START_TEST(test_pod_resources_garbage_refused) {
        static const uint8_t truncated[] = { 0x0a, 0x10, 0x0a, 0x01 };         /* pod_resources: 16 bytes, 2 there */
        static const uint8_t wrong_type[] = { 0x0a, 0x02, 0x1a, 0x05 };        /* containers: a varint, not bytes */
        kdp_pod_resources_list l = { .n_resources = 7 };
        grpc_byte_buffer *bb;

        bb = bytes(truncated, sizeof(truncated));
        ck_assert_int_eq(kdp_proto_conv_unpack_pod_resources(bb, KDP_POD_RESOURCES_MAX_MESSAGE, &l, NULL, 0), -EBADMSG);
        grpc_byte_buffer_destroy(bb);
        bb = bytes(wrong_type, sizeof(wrong_type));
        ck_assert_int_eq(kdp_proto_conv_unpack_pod_resources(bb, KDP_POD_RESOURCES_MAX_MESSAGE, &l, NULL, 0), -EBADMSG);
        grpc_byte_buffer_destroy(bb);
        ck_assert_uint_eq(l.n_resources, 7);
}
END_TEST

/* An answer over the limit: -EMSGSIZE before it is parsed (at the limit: read). */
START_TEST(test_pod_resources_oversized_refused) {
        char *ids[] = { "vf-1" };
        V1__ContainerDevices d = devices("example.com/x", ids, 1), *devs[] = { &d };
        V1__ContainerResources c = V1__CONTAINER_RESOURCES__INIT, *ctrs[] = { &c };
        V1__PodResources p = V1__POD_RESOURCES__INIT, *pods[] = { &p };
        V1__ListPodResourcesResponse m = V1__LIST_POD_RESOURCES_RESPONSE__INIT;
        kdp_pod_resources_list l = { 0 };
        grpc_byte_buffer *bb;
        size_t size;

        c.devices = devs;
        c.n_devices = 1;
        p.containers = ctrs;
        p.n_containers = 1;
        m.pod_resources = pods;
        m.n_pod_resources = 1;
        size = v1__list_pod_resources_response__get_packed_size(&m);
        bb = pack(&m);
        ck_assert_int_eq(kdp_proto_conv_unpack_pod_resources(bb, size - 1, &l, NULL, 0), -EMSGSIZE);
        ck_assert_int_eq(kdp_proto_conv_unpack_pod_resources(bb, size, &l, NULL, 0), 0);
        grpc_byte_buffer_destroy(bb);
        ck_assert_uint_eq(l.n_resources, 1);
        kdp_pod_resources_list_done(&l);
}
END_TEST

/* More pods than a node runs: refused on the wire bytes, before protobuf-c allocates one per pod, saying so. */
START_TEST(test_pod_resources_too_many_pods_refused) {
        V1__PodResources pod = V1__POD_RESOURCES__INIT;
        V1__PodResources *pods[KDP_PROTO_CONV_MAX_PODS + 1];
        V1__ListPodResourcesResponse m = V1__LIST_POD_RESOURCES_RESPONSE__INIT;
        kdp_pod_resources_list l = { 0 };
        grpc_byte_buffer *bb;
        char err[200] = "";

        for (size_t i = 0; i < KDP_ELEMENTSOF(pods); i++)
                pods[i] = &pod;
        m.pod_resources = pods;
        m.n_pod_resources = KDP_PROTO_CONV_MAX_PODS;
        bb = pack(&m);
        ck_assert_int_eq(kdp_proto_conv_unpack_pod_resources(bb, KDP_POD_RESOURCES_MAX_MESSAGE, &l, err, sizeof(err)), 0);
        grpc_byte_buffer_destroy(bb);
        kdp_pod_resources_list_done(&l);
        m.n_pod_resources++;
        bb = pack(&m);
        ck_assert_int_eq(kdp_proto_conv_unpack_pod_resources(bb, KDP_POD_RESOURCES_MAX_MESSAGE, &l, err, sizeof(err)),
                         -E2BIG);
        grpc_byte_buffer_destroy(bb);
        ck_assert_str_eq(err, "more than 2048 pods in one ListPodResourcesResponse (field pod_resources)");
}
END_TEST

static Suite *pod_resources_suite(void) {
        Suite *s = suite_create("pod-resources");
        TCase *tc = tcase_create("unpack");

        tcase_add_test(tc, test_pod_resources_groups_ids_per_resource);
        tcase_add_test(tc, test_pod_resources_empty_answer_is_an_empty_list);
        tcase_add_test(tc, test_pod_resources_garbage_refused);
        tcase_add_test(tc, test_pod_resources_oversized_refused);
        tcase_add_test(tc, test_pod_resources_too_many_pods_refused);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return kdp_test_run(pod_resources_suite());
}
