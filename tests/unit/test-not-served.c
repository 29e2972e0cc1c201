/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * not-served.c and `kdpctl not-served`: the lists kdpd writes, as kdpctl shows them.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <kdp/cleanup.h>

#include "not-served.h"

#include "kdp-test.h"

/* Runs `kdpctl not-served --state-dir DIR ARGS` and returns its stdout and stderr, in that order (free()). */
static char *run_kdpctl(const char *dir, const char *args, int *ret_status) {
        _cleanup_free_ char *cmd = NULL;

        ck_assert_int_ge(asprintf(&cmd, "%s/kdpctl not-served --state-dir '%s' %s 2>&1", KDP_BUILD_DIR, dir, args), 0);
        return kdp_test_command_output(cmd, ret_status);
}

/* Expects `kdpctl not-served` with `args` to succeed and print `expect`. */
static void expect_kdpctl(const char *dir, const char *args, const char *expect) {
        _cleanup_free_ char *out = NULL;
        int status;

        out = run_kdpctl(dir, args, &status);
        ck_assert_int_eq(status, 0);
        ck_assert_str_eq(out, expect);
}

static char *read_file(const char *dir, const char *name) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -1;

        ck_assert_int_ge(asprintf(&path, "%s/%s", dir, name), 0);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        return kdp_test_fd_text(fd);
}

START_TEST(test_not_served_write_makes_the_file_kdpctl_prints) {
        _cleanup_(kdp_test_rm_rfp) char *root = strdup("/tmp/kdp-test-not-served-XXXXXX");
        _cleanup_free_ char *dir = NULL, *file = NULL;
        struct stat st;

        ck_assert_ptr_nonnull(mkdtemp(root));
        ck_assert_int_ge(asprintf(&dir, "%s/run/kdp", root), 0);      /* made with its parents */
        ck_assert_int_eq(kdp_not_served_write(dir, "gpu", (const kdp_not_served_entry[]){
                { "0000:18:00.0", "bound to vfio-pci, not nvidia" },
                { "0000:3b:00.0", "its /proc/driver/nvidia information is malformed: no \"Device Minor\" line" },
        }, 2), 0);
        ck_assert_int_eq(kdp_not_served_write(dir, "example", (const kdp_not_served_entry[]){
                { "widget-1", "marked not served by example.not_served" },
        }, 1), 0);
        ck_assert_int_eq(kdp_not_served_write(dir, "sriov", NULL, 0), 0);

        file = read_file(dir, "gpu.not-served");
        ck_assert_str_eq(file, "# kdpd not-served v1 backend=gpu\n"
                               "0000:18:00.0\tbound to vfio-pci, not nvidia\n"
                               "0000:3b:00.0\tits /proc/driver/nvidia information is malformed: no \"Device Minor\" line\n");
        ck_assert_int_eq(stat(dir, &st), 0);
        ck_assert_uint_eq(st.st_mode & 07777, 0755);

        /* backends in name order, devices in address order */
        expect_kdpctl(dir, "", "not served: widget-1 marked not served by example.not_served\n"
                               "not served: 0000:18:00.0 bound to vfio-pci, not nvidia\n"
                               "not served: 0000:3b:00.0 its /proc/driver/nvidia information is malformed: no "
                               "\"Device Minor\" line\n");
        expect_kdpctl(dir, "--backend example", "not served: widget-1 marked not served by example.not_served\n");
        /* a backend that skips nothing has an empty list: no output, success */
        expect_kdpctl(dir, "--backend sriov", "");

        /* a rewrite replaces the whole list; a removed list is gone */
        ck_assert_int_eq(kdp_not_served_write(dir, "gpu", (const kdp_not_served_entry[]){
                { "0000:3b:00.0", "driver unbound" } }, 1), 0);
        ck_assert_int_eq(kdp_not_served_remove(dir, "example"), 0);
        ck_assert_int_eq(kdp_not_served_remove(dir, "example"), 0);
        expect_kdpctl(dir, "", "not served: 0000:3b:00.0 driver unbound\n");
}
END_TEST

START_TEST(test_not_served_kdpctl_without_a_list_fails) {
        _cleanup_(kdp_test_rm_rfp) char *dir = strdup("/tmp/kdp-test-not-served-XXXXXX");
        _cleanup_free_ char *out = NULL, *expect = NULL;
        int status;

        ck_assert_ptr_nonnull(mkdtemp(dir));
        out = run_kdpctl(dir, "", &status);
        ck_assert(WIFEXITED(status));
        ck_assert_int_eq(WEXITSTATUS(status), 1);
        ck_assert_int_ge(asprintf(&expect, "kdpctl: no %s/*.not-served: kdpd writes it while it runs a backend with "
                                           "--state-dir %s\n", dir, dir), 0);
        ck_assert_str_eq(out, expect);
        ck_assert_int_eq(kdp_not_served_print(dir, NULL, stdout), -ENOENT);
        ck_assert_int_eq(kdp_not_served_print(dir, "gpu", stdout), -ENOENT);

        free(out);
        out = run_kdpctl(dir, "--backend a/b", &status);
        ck_assert_int_eq(WEXITSTATUS(status), 2);
}
END_TEST

static Suite *not_served_suite(void) {
        Suite *s = suite_create("not-served");
        TCase *tc = tcase_create("files");

        tcase_set_timeout(tc, 20);
        tcase_add_test(tc, test_not_served_write_makes_the_file_kdpctl_prints);
        tcase_add_test(tc, test_not_served_kdpctl_without_a_list_fails);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return kdp_test_run(not_served_suite());
}
