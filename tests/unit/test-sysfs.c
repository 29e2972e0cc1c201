/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The file reader backends use for sysfs and procfs (kdp_sysfs_read_text(), src/lib/sysfs.c). */
#include <check.h>
#include <errno.h>
#include <string.h>

#include <kdp/backend.h>
#include <kdp/cleanup.h>

#include "kdp-test-sysfs.h"
#include "kdp-test.h"

START_TEST(test_sysfs_read_text_reads_to_the_end_without_trailing_newlines) {
        _cleanup_(kdp_test_rm_rfp) char *root = kdp_test_tree_new("sysfs");
        _cleanup_free_ char *path = kdp_test_tree_path(root, "information"), *big = NULL, *bigpath = NULL;
        _cleanup_free_ char *text = NULL, *missing = NULL;
        char *none = NULL;

        kdp_test_tree_write(root, "information", "Bus Location: \t 0000:18:00.0\nDevice Minor: \t 0\n\n");
        ck_assert_int_eq(kdp_sysfs_read_text(path, &text), 0);
        ck_assert_str_eq(text, "Bus Location: \t 0000:18:00.0\nDevice Minor: \t 0");

        missing = kdp_test_tree_path(root, "gone");
        ck_assert_int_eq(kdp_sysfs_read_text(missing, &none), -ENOENT);
        ck_assert_ptr_null(none);

        big = malloc(70 * 1024 + 1);
        ck_assert_ptr_nonnull(big);
        memset(big, 'x', 70 * 1024);
        big[70 * 1024] = '\0';
        kdp_test_tree_write(root, "big", big);
        bigpath = kdp_test_tree_path(root, "big");
        ck_assert_int_eq(kdp_sysfs_read_text(bigpath, &none), -EFBIG);
        ck_assert_ptr_null(none);
}
END_TEST

static Suite *sysfs_suite(void) {
        Suite *s = suite_create("sysfs");
        TCase *tc = tcase_create("core");

        tcase_add_test(tc, test_sysfs_read_text_reads_to_the_end_without_trailing_newlines);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return kdp_test_run(sysfs_suite());
}
