/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The snapshot and the protobuf conversions: exactly what goes on the wire. */
#include <check.h>
#include <errno.h>
#include <string.h>

#include <grpc/grpc.h>
#include <grpc/byte_buffer_reader.h>

#include "deviceplugin/v1beta1/api.pb-c.h"
#include "proto-conv.h"
#include "server.h"
#include "snapshot.h"

#include "kdp-test.h"

static void add(kdp_device_list *l, const kdp_device_info *info) {
        kdp_device d;

        ck_assert_int_eq(kdp_device_from_info(info, NULL, &d), 0);
        ck_assert_int_eq(kdp_device_list_append(l, &d), 0);
}

static void three_devices(kdp_device_list *l) {
        ck_assert_int_eq(kdp_device_list_init(l, "example.com/widget"), 0);
        add(l, &(kdp_device_info){ .id = "w-2", .health = KDP_HEALTHY, .numa_nodes = { 1 }, .n_numa_nodes = 1 });
        add(l, &(kdp_device_info){ .id = "w-0", .health = KDP_HEALTHY, .numa_nodes = { 0, 1 }, .n_numa_nodes = 2,
                                   .dev_nodes = (const kdp_dev_node[]){ { .host_path = "/dev/w0" }, { 0 } },
                                   .envs = (const kdp_kv[]){ { "W", "0" }, { 0 } } });
        add(l, &(kdp_device_info){ .id = "w-1", .health = KDP_UNHEALTHY, .health_reason = "gone" });
        kdp_device_list_sort(l);
}

static ProtobufCMessage *unpack_bb(grpc_byte_buffer *bb, const ProtobufCMessageDescriptor *desc) {
        ProtobufCMessage *m = NULL;

        ck_assert_int_eq(kdp_proto_conv_unpack(bb, desc, &m), 0);
        grpc_byte_buffer_destroy(bb);
        return m;
}

START_TEST(test_snapshot_packs_the_list_as_the_kubelet_reads_it) {
        _cleanup_(kdp_snapshot_unrefp) kdp_snapshot *s = NULL;
        kdp_device_list l;
        V1beta1__ListAndWatchResponse *resp;

        grpc_init();
        three_devices(&l);
        ck_assert_int_eq(kdp_snapshot_new(&l, 7, &s), 0);
        ck_assert_ptr_null(l.devices);          /* moved */
        ck_assert_int_eq(s->generation, 7);
        ck_assert_int_eq(s->n_healthy, 2);
        ck_assert_int_eq(kdp_snapshot_find(s, "w-1"), 1);
        ck_assert_int_eq(kdp_snapshot_find(s, "w-9"), -1);

        resp = v1beta1__list_and_watch_response__unpack(NULL, GRPC_SLICE_LENGTH(s->law_slice),
                                                        GRPC_SLICE_START_PTR(s->law_slice));
        ck_assert_ptr_nonnull(resp);
        ck_assert_int_eq(resp->n_devices, 3);
        ck_assert_str_eq(resp->devices[0]->id, "w-0");
        ck_assert_str_eq(resp->devices[0]->health, "Healthy");
        ck_assert_int_eq(resp->devices[0]->topology->n_nodes, 2);
        ck_assert_int_eq(resp->devices[0]->topology->nodes[0]->id, 0);
        ck_assert_int_eq(resp->devices[0]->topology->nodes[1]->id, 1);
        ck_assert_str_eq(resp->devices[1]->id, "w-1");
        ck_assert_str_eq(resp->devices[1]->health, "Unhealthy");
        ck_assert_ptr_null(resp->devices[1]->topology);        /* no affinity: no field */
        ck_assert_str_eq(resp->devices[2]->id, "w-2");
        ck_assert_int_eq(resp->devices[2]->topology->nodes[0]->id, 1);
        v1beta1__list_and_watch_response__free_unpacked(resp, NULL);
        s = kdp_snapshot_unref(s);
        grpc_shutdown();
}
END_TEST

START_TEST(test_snapshot_of_an_empty_resource_is_an_empty_list) {
        _cleanup_(kdp_snapshot_unrefp) kdp_snapshot *s = NULL;
        kdp_device_list l;

        grpc_init();
        ck_assert_int_eq(kdp_device_list_init(&l, "example.com/widget"), 0);
        ck_assert_int_eq(kdp_snapshot_new(&l, 1, &s), 0);
        ck_assert_int_eq(s->law_size, 0);
        ck_assert_int_eq(s->n_healthy, 0);
        s = kdp_snapshot_unref(s);
        grpc_shutdown();
}
END_TEST

START_TEST(test_snapshot_refuses_a_list_over_four_mib) {
        kdp_snapshot *s = NULL;
        kdp_device_list l;
        char id[64];

        grpc_init();
        ck_assert_int_eq(kdp_device_list_init(&l, "example.com/widget"), 0);
        for (int i = 0; i < 60000; i++) {       /* 60000 × ~80 bytes > 4 MiB */
                snprintf(id, sizeof(id), "%055d", i);
                add(&l, &(kdp_device_info){ .id = id, .health = KDP_HEALTHY, .numa_nodes = { 3 }, .n_numa_nodes = 1 });
        }
        kdp_device_list_sort(&l);
        ck_assert_int_eq(kdp_snapshot_new(&l, 1, &s), -EMSGSIZE);
        ck_assert_ptr_null(s);
        grpc_shutdown();
}
END_TEST

START_TEST(test_proto_allocate_response_carries_every_field) {
        kdp_device_list l;
        kdp_alloc_response r[2];
        grpc_byte_buffer *bb = NULL;
        V1beta1__AllocateResponse *resp;

        grpc_init();
        three_devices(&l);
        kdp_alloc_response_init(&r[0], &l);
        kdp_alloc_response_init(&r[1], &l);
        ck_assert_int_eq(kdp_alloc_response_add_device(&r[0], "w-0"), 0);
        ck_assert_int_eq(kdp_alloc_response_add_mount(&r[0], &(kdp_mount){ "/opt/lib", "/lib/x", 1 }), 0);
        ck_assert_int_eq(kdp_alloc_response_add_annotation(&r[0], "a", "b"), 0);
        ck_assert_int_eq(kdp_alloc_response_add_cdi_device(&r[0], "example.com/widget=w-0"), 0);
        ck_assert_int_eq(kdp_proto_conv_pack_allocate(r, 2, &bb), 0);
        resp = (V1beta1__AllocateResponse *) unpack_bb(bb, &v1beta1__allocate_response__descriptor);
        ck_assert_int_eq(resp->n_container_responses, 2);
        ck_assert_int_eq(resp->container_responses[0]->n_envs, 1);
        ck_assert_str_eq(resp->container_responses[0]->envs[0]->key, "W");
        ck_assert_str_eq(resp->container_responses[0]->envs[0]->value, "0");
        ck_assert_int_eq(resp->container_responses[0]->n_devices, 1);
        ck_assert_str_eq(resp->container_responses[0]->devices[0]->host_path, "/dev/w0");
        ck_assert_str_eq(resp->container_responses[0]->devices[0]->container_path, "/dev/w0");
        ck_assert_str_eq(resp->container_responses[0]->devices[0]->permissions, "rw");
        ck_assert_int_eq(resp->container_responses[0]->n_mounts, 1);
        ck_assert_str_eq(resp->container_responses[0]->mounts[0]->host_path, "/opt/lib");
        ck_assert_str_eq(resp->container_responses[0]->mounts[0]->container_path, "/lib/x");
        ck_assert(resp->container_responses[0]->mounts[0]->read_only);
        ck_assert_str_eq(resp->container_responses[0]->annotations[0]->key, "a");
        ck_assert_str_eq(resp->container_responses[0]->cdi_devices[0]->name, "example.com/widget=w-0");
        ck_assert_int_eq(resp->container_responses[1]->n_envs, 0);
        ck_assert_int_eq(resp->container_responses[1]->n_devices, 0);
        v1beta1__allocate_response__free_unpacked(resp, NULL);
        kdp_alloc_response_done(&r[0]);
        kdp_alloc_response_done(&r[1]);
        kdp_device_list_done(&l);
        grpc_shutdown();
}
END_TEST

START_TEST(test_proto_register_request_has_options_and_version) {
        grpc_byte_buffer *bb = NULL;
        V1beta1__RegisterRequest *req;

        grpc_init();
        ck_assert_int_eq(kdp_proto_conv_pack_register("example.com/widget", "kdp-x.sock", true, true, &bb), 0);
        req = (V1beta1__RegisterRequest *) unpack_bb(bb, &v1beta1__register_request__descriptor);
        ck_assert_str_eq(req->version, "v1beta1");
        ck_assert_str_eq(req->endpoint, "kdp-x.sock");
        ck_assert_str_eq(req->resource_name, "example.com/widget");
        ck_assert(req->options->pre_start_required);
        ck_assert(req->options->get_preferred_allocation_available);
        v1beta1__register_request__free_unpacked(req, NULL);
        grpc_shutdown();
}
END_TEST

START_TEST(test_proto_unpack_rejects_garbage) {
        static const uint8_t junk[] = { 0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01 };
        ProtobufCMessage *m = (ProtobufCMessage *) 0x1;
        grpc_byte_buffer *bb;

        grpc_init();
        bb = kdp_proto_conv_buffer(junk, sizeof(junk));
        ck_assert_int_eq(kdp_proto_conv_unpack(bb, &v1beta1__allocate_request__descriptor, &m), -EBADMSG);
        ck_assert_ptr_eq(m, (ProtobufCMessage *) 0x1);  /* untouched on failure */
        grpc_byte_buffer_destroy(bb);
        ck_assert_int_eq(kdp_proto_conv_unpack(NULL, &v1beta1__empty__descriptor, &m), 0);
        protobuf_c_message_free_unpacked(m, NULL);
        grpc_shutdown();
}
END_TEST

START_TEST(test_server_status_mapping_is_the_documented_table) {
        ck_assert_int_eq(kdp_server_status_from_errno(0), GRPC_STATUS_OK);
        ck_assert_int_eq(kdp_server_status_from_errno(-EINVAL), GRPC_STATUS_INVALID_ARGUMENT);
        ck_assert_int_eq(kdp_server_status_from_errno(-EBADMSG), GRPC_STATUS_INVALID_ARGUMENT);
        ck_assert_int_eq(kdp_server_status_from_errno(-ENOENT), GRPC_STATUS_NOT_FOUND);
        ck_assert_int_eq(kdp_server_status_from_errno(-ENODEV), GRPC_STATUS_NOT_FOUND);
        ck_assert_int_eq(kdp_server_status_from_errno(-EBUSY), GRPC_STATUS_UNAVAILABLE);
        ck_assert_int_eq(kdp_server_status_from_errno(-EAGAIN), GRPC_STATUS_UNAVAILABLE);
        ck_assert_int_eq(kdp_server_status_from_errno(-ENOMEM), GRPC_STATUS_RESOURCE_EXHAUSTED);
        ck_assert_int_eq(kdp_server_status_from_errno(-E2BIG), GRPC_STATUS_RESOURCE_EXHAUSTED);
        ck_assert_int_eq(kdp_server_status_from_errno(-EOPNOTSUPP), GRPC_STATUS_UNIMPLEMENTED);
        ck_assert_int_eq(kdp_server_status_from_errno(-EIO), GRPC_STATUS_INTERNAL);
}
END_TEST

static Suite *snapshot_suite(void) {
        Suite *s = suite_create("snapshot");
        TCase *tc = tcase_create("wire");

        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_snapshot_packs_the_list_as_the_kubelet_reads_it);
        tcase_add_test(tc, test_snapshot_of_an_empty_resource_is_an_empty_list);
        tcase_add_test(tc, test_snapshot_refuses_a_list_over_four_mib);
        tcase_add_test(tc, test_proto_allocate_response_carries_every_field);
        tcase_add_test(tc, test_proto_register_request_has_options_and_version);
        tcase_add_test(tc, test_proto_unpack_rejects_garbage);
        tcase_add_test(tc, test_server_status_mapping_is_the_documented_table);
        suite_add_tcase(s, tc);

        return s;
}

int main(void) {
        return kdp_test_run(snapshot_suite());
}
