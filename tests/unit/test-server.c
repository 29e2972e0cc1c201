/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A DevicePlugin server's start on its socket: the mode it gets, and a socket
 * removed between its bind and its rename into place (a kubelet starting
 * clears its directory) failing with ENOENT, then served at the next attempt.
 * The program is linked with -Wl,--wrap=renameat2 (tests/unit/CMakeLists.txt):
 * __wrap_renameat2 removes the bound socket first when asked.
 *
 * And a stop racing its own shutdown: a server with no listener of gRPC's own
 * and no channel completes its shutdown inside grpc_server_shutdown_and_notify(),
 * so the CQ thread can take the tag and destroy the grpc_server while that call
 * still reads it. Wrapped (--wrap), the call lingers 20 ms after gRPC's own
 * and counts a grpc_server_destroy() of its server meanwhile.
 *
 * And whose NotifyRegistrationStatus a server believes: not before a GetInfo,
 * then from the GetInfo caller's process on another connection too (a client
 * that reconnected); every connection here is this process's.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <time.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <grpc/grpc.h>

#include "ctl-client.h"
#include "pluginregistration/v1/api.pb-c.h"
#include "server.h"
#include "snapshot.h"

#include "kdp-test.h"

int __real_renameat2(int old_dir, const char *old_path, int new_dir, const char *new_path, unsigned flags);
int __wrap_renameat2(int old_dir, const char *old_path, int new_dir, const char *new_path, unsigned flags);

static bool unlink_before_rename;

void __real_grpc_server_shutdown_and_notify(grpc_server *server, grpc_completion_queue *cq, void *tag);
void __wrap_grpc_server_shutdown_and_notify(grpc_server *server, grpc_completion_queue *cq, void *tag);
void __real_grpc_server_destroy(grpc_server *server);
void __wrap_grpc_server_destroy(grpc_server *server);

static _Atomic(grpc_server *) shutting_down;   /* inside grpc_server_shutdown_and_notify() */
static atomic_uint destroyed_during_shutdown;

void __wrap_grpc_server_shutdown_and_notify(grpc_server *server, grpc_completion_queue *cq, void *tag) {
        const struct timespec linger = { .tv_nsec = 20 * 1000 * 1000 };

        atomic_store(&shutting_down, server);
        __real_grpc_server_shutdown_and_notify(server, cq, tag);
        nanosleep(&linger, NULL);
        atomic_store(&shutting_down, NULL);
}

void __wrap_grpc_server_destroy(grpc_server *server) {
        if (atomic_load(&shutting_down) == server)
                atomic_fetch_add(&destroyed_during_shutdown, 1);
        __real_grpc_server_destroy(server);
}

int __wrap_renameat2(int old_dir, const char *old_path, int new_dir, const char *new_path, unsigned flags) {
        if (unlink_before_rename)
                ck_assert_int_eq(unlinkat(old_dir, old_path, 0), 0);
        return __real_renameat2(old_dir, old_path, new_dir, new_path, flags);
}

static kdp_snapshot *empty_snapshot(void) {
        kdp_snapshot *s = NULL;
        kdp_device_list l;

        ck_assert_int_eq(kdp_device_list_init(&l, "example.com/widget"), 0);
        ck_assert_int_eq(kdp_snapshot_new(&l, 1, &s), 0);
        return s;
}

/* What each test starts from: grpc, a temp dir with the socket's path in it, a server runtime. */
typedef struct rig {
        char *dir, *path;
        kdp_server_runtime *rt;
} rig;

static void rig_start(rig *g) {
        grpc_init();
        g->dir = strdup("/tmp/kdp-test-server-XXXXXX");
        ck_assert_ptr_nonnull(g->dir);
        ck_assert_ptr_nonnull(mkdtemp(g->dir));
        ck_assert_int_ge(asprintf(&g->path, "%s/widget.sock", g->dir), 0);
        ck_assert_int_eq(kdp_server_runtime_new(NULL, NULL, NULL, &g->rt), 0);
}

/* Waits for every stopped server (kdp_server_runtime_free()), then undoes rig_start(). */
static void rig_end(rig *g) {
        ck_assert_ptr_null(kdp_server_runtime_free(g->rt));
        free(g->path);
        kdp_test_rm_rfp(&g->dir);
        grpc_shutdown();
}

/* Serves the empty widget list on the rig's socket: kdp_server_new's result. */
static int serve(rig *g, kdp_server **ret) {
        _cleanup_(kdp_snapshot_unrefp) kdp_snapshot *snap = empty_snapshot();

        return kdp_server_new(g->rt, "example.com/widget", g->path, NULL, snap, NULL, NULL, NULL, ret);
}

START_TEST(test_server_socket_is_0600_while_serving_and_gone_after) {
        kdp_server *s = NULL;
        struct stat st;
        rig g = {};

        rig_start(&g);
        ck_assert_int_eq(serve(&g, &s), 0);
        ck_assert_int_eq(lstat(g.path, &st), 0);
        ck_assert(S_ISSOCK(st.st_mode));
        ck_assert_int_eq(st.st_mode & 07777, 0600);
        kdp_server_stop(s);
        ck_assert_ptr_null(kdp_server_runtime_free(g.rt));
        g.rt = NULL;
        ck_assert_int_eq(lstat(g.path, &st), -1);
        ck_assert_int_eq(errno, ENOENT);
        rig_end(&g);
}
END_TEST

START_TEST(test_server_socket_removed_after_bind_fails_with_enoent_and_serves_again) {
        kdp_server *s = NULL;
        struct stat st;
        rig g = {};

        rig_start(&g);
        unlink_before_rename = true;
        ck_assert_int_eq(serve(&g, &s), -ENOENT);
        unlink_before_rename = false;
        ck_assert_ptr_null(s);
        ck_assert_int_eq(lstat(g.path, &st), -1);
        /* the next attempt, as kdpd's retry makes it, serves */
        ck_assert_int_eq(serve(&g, &s), 0);
        ck_assert_int_eq(lstat(g.path, &st), 0);
        ck_assert(S_ISSOCK(st.st_mode));
        kdp_server_stop(s);
        rig_end(&g);
}
END_TEST

START_TEST(test_server_stop_keeps_its_grpc_server_until_the_shutdown_call_returned) {
        unsigned destroyed;
        rig g = {};

        rig_start(&g);
        for (int i = 0; i < 5; i++) {
                kdp_server *s = NULL;

                ck_assert_int_eq(serve(&g, &s), 0);
                kdp_server_stop(s);
        }
        rig_end(&g);
        destroyed = atomic_load(&destroyed_during_shutdown);
        ck_assert_uint_eq(destroyed, 0);
}
END_TEST

static atomic_uint notified;   /* NotifyRegistrationStatus calls handed to the server's events */

static void on_watcher_status(bool registered, const char *error, void *userdata) {
        ck_assert(registered);
        ck_assert_str_eq(error, "");
        atomic_fetch_add(&notified, 1);
}

/* One call of `method` with request `req` (`size` bytes) on client c: its status code. */
static grpc_status_code call(kdp_ctl_client *c, const char *method, const char *req, size_t size,
                             const ProtobufCMessageDescriptor *resp_desc) {
        ProtobufCMessage *resp = NULL;
        kdp_ctl_client_status st = { 0 };

        if (kdp_ctl_client_call_raw(c, method, (const uint8_t *) req, size, resp_desc, kdp_ctl_client_deadline(30000),
                                    &resp, &st) < 0)
                return st.code;
        protobuf_c_message_free_unpacked(resp, NULL);
        return GRPC_STATUS_OK;
}

START_TEST(test_server_notify_taken_after_getinfo_from_its_process_on_another_connection) {
        static const kdp_server_events ev = { .watcher_status = on_watcher_status };
        const ProtobufCMessageDescriptor *status_resp = &pluginregistration__registration_status_response__descriptor;
        _cleanup_(kdp_snapshot_unrefp) kdp_snapshot *snap = empty_snapshot();
        _cleanup_(kdp_ctl_client_freep) kdp_ctl_client *info = NULL, *other = NULL;
        kdp_server *s = NULL;
        rig g = {};

        rig_start(&g);
        ck_assert_int_eq(kdp_server_new(g.rt, "example.com/widget", g.path, NULL, snap, NULL, &ev, NULL, &s), 0);
        ck_assert_int_eq(kdp_ctl_client_new(g.path, &info), 0);
        ck_assert_int_eq(kdp_ctl_client_new(g.path, &other), 0);
        ck_assert_int_eq(call(other, KDP_CTL_CLIENT_METHOD_NOTIFY, "\x08\x01", 2, status_resp),
                         GRPC_STATUS_PERMISSION_DENIED);
        ck_assert_int_eq(call(info, KDP_CTL_CLIENT_METHOD_GET_INFO, "", 0, &pluginregistration__plugin_info__descriptor),
                         GRPC_STATUS_OK);
        ck_assert_int_eq(call(other, KDP_CTL_CLIENT_METHOD_NOTIFY, "\x08\x01", 2, status_resp), GRPC_STATUS_OK);
        ck_assert_int_eq(call(info, KDP_CTL_CLIENT_METHOD_NOTIFY, "\x08\x01", 2, status_resp), GRPC_STATUS_OK);
        ck_assert_uint_eq(atomic_load(&notified), 2);
        info = kdp_ctl_client_free(info);
        other = kdp_ctl_client_free(other);
        kdp_server_stop(s);
        rig_end(&g);
}
END_TEST

static Suite *server_suite(void) {
        Suite *suite = suite_create("server");
        TCase *tc = tcase_create("socket");

        tcase_add_test(tc, test_server_socket_is_0600_while_serving_and_gone_after);
        tcase_add_test(tc, test_server_socket_removed_after_bind_fails_with_enoent_and_serves_again);
        tcase_add_test(tc, test_server_stop_keeps_its_grpc_server_until_the_shutdown_call_returned);
        suite_add_tcase(suite, tc);
        tc = tcase_create("plugin watcher");
        tcase_add_test(tc, test_server_notify_taken_after_getinfo_from_its_process_on_another_connection);
        suite_add_tcase(suite, tc);
        return suite;
}

int main(void) {
        return kdp_test_run(server_suite());
}
