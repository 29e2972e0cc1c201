/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A DevicePlugin server's start on its socket: the mode it gets, and a socket
 * removed between grpc's bind and the mode (a kubelet starting clears its
 * directory) failing with ENOENT instead of destroying a grpc server that has a
 * listener, which grpc aborts on. The program is linked with -Wl,--wrap=chmod
 * (tests/unit/CMakeLists.txt): __wrap_chmod removes the socket first when asked.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <grpc/grpc.h>

#include "server.h"
#include "snapshot.h"

#include "kdp-test.h"

int __real_chmod(const char *path, mode_t mode);
int __wrap_chmod(const char *path, mode_t mode);

static bool unlink_before_chmod;

int __wrap_chmod(const char *path, mode_t mode) {
        if (unlink_before_chmod)
                ck_assert_int_eq(unlink(path), 0);
        return __real_chmod(path, mode);
}

static kdp_snapshot *empty_snapshot(void) {
        kdp_snapshot *s = NULL;
        kdp_device_list l;

        ck_assert_int_eq(kdp_device_list_init(&l, "example.com/widget"), 0);
        ck_assert_int_eq(kdp_snapshot_new(&l, 1, &s), 0);
        return s;
}

static char *socket_in(const char *dir) {
        char *path = NULL;

        ck_assert_int_ge(asprintf(&path, "%s/widget.sock", dir), 0);
        return path;
}

/* Serves the empty widget list on dir/widget.sock: kdp_server_new's result. */
static int serve(kdp_server_runtime *rt, const char *path, kdp_server **ret) {
        _cleanup_(kdp_snapshot_unrefp) kdp_snapshot *snap = empty_snapshot();

        return kdp_server_new(rt, "example.com/widget", path, NULL, snap, NULL, NULL, ret);
}

START_TEST(test_server_socket_is_0600_while_serving_and_gone_after) {
        _cleanup_(kdp_test_rm_rfp) char *dir = strdup("/tmp/kdp-test-server-XXXXXX");
        _cleanup_free_ char *path = NULL;
        kdp_server_runtime *rt = NULL;
        kdp_server *s = NULL;
        struct stat st;

        grpc_init();
        ck_assert_ptr_nonnull(mkdtemp(dir));
        path = socket_in(dir);
        ck_assert_int_eq(kdp_server_runtime_new(NULL, NULL, &rt), 0);
        ck_assert_int_eq(serve(rt, path, &s), 0);
        ck_assert_int_eq(lstat(path, &st), 0);
        ck_assert(S_ISSOCK(st.st_mode));
        ck_assert_int_eq(st.st_mode & 07777, 0600);
        kdp_server_stop(s);
        ck_assert_ptr_null(kdp_server_runtime_free(rt));
        ck_assert_int_eq(lstat(path, &st), -1);
        ck_assert_int_eq(errno, ENOENT);
        grpc_shutdown();
}
END_TEST

START_TEST(test_server_socket_removed_after_bind_fails_with_enoent_and_serves_again) {
        _cleanup_(kdp_test_rm_rfp) char *dir = strdup("/tmp/kdp-test-server-XXXXXX");
        _cleanup_free_ char *path = NULL;
        kdp_server_runtime *rt = NULL;
        kdp_server *s = NULL;
        struct stat st;

        grpc_init();
        ck_assert_ptr_nonnull(mkdtemp(dir));
        path = socket_in(dir);
        ck_assert_int_eq(kdp_server_runtime_new(NULL, NULL, &rt), 0);
        unlink_before_chmod = true;
        ck_assert_int_eq(serve(rt, path, &s), -ENOENT);
        unlink_before_chmod = false;
        ck_assert_ptr_null(s);
        ck_assert_int_eq(lstat(path, &st), -1);
        /* the next attempt, as kdpd's retry makes it, serves */
        ck_assert_int_eq(serve(rt, path, &s), 0);
        ck_assert_int_eq(lstat(path, &st), 0);
        ck_assert(S_ISSOCK(st.st_mode));
        kdp_server_stop(s);
        ck_assert_ptr_null(kdp_server_runtime_free(rt));
        grpc_shutdown();
}
END_TEST

static Suite *server_suite(void) {
        Suite *suite = suite_create("server");
        TCase *tc = tcase_create("socket");

        tcase_add_test(tc, test_server_socket_is_0600_while_serving_and_gone_after);
        tcase_add_test(tc, test_server_socket_removed_after_bind_fails_with_enoent_and_serves_again);
        suite_add_tcase(suite, tc);
        return suite;
}

int main(void) {
        return kdp_test_run(server_suite());
}
