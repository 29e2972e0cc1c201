/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kdp/cleanup.h>
#include <kdp/config-file.h>

#include "kdp-test.h"

#define TEXT(t) t, sizeof(t) - 1

static const struct {
        const char *text;
        size_t len;
        const char *reason;     /* NULL: accepted */
        unsigned line, column;
} texts[] = {
        { TEXT(""), NULL, 0, 0 },
        { TEXT("a: 1\n# caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf\n"), NULL, 0, 0 },
        { TEXT("a\0"), "a NUL byte", 1, 2 },
        { TEXT("\xc3\xa9\xc3\xa9\x80"), "a byte that is not UTF-8", 1, 3 },       /* a lone continuation byte */
        { TEXT("x\n\xc0\xaf"), "a byte that is not UTF-8", 2, 1 },                /* overlong '/' */
        { TEXT("x\n\xe0\x80\xaf"), "a byte that is not UTF-8", 2, 1 },            /* overlong, 3 bytes */
        { TEXT("x\n\xf0\x80\x80\xaf"), "a byte that is not UTF-8", 2, 1 },        /* overlong, 4 bytes */
        { TEXT("x\r\n\r\nab\xed\xa0\x80"), "a byte that is not UTF-8", 3, 3 },    /* a surrogate; CR LF is one break */
        { TEXT("x\ry\r\xf4\x90\x80\x80"), "a byte that is not UTF-8", 3, 1 },     /* above U+10FFFF; lone CR breaks */
        { TEXT("x\xf5\x80\x80\x80"), "a byte that is not UTF-8", 1, 2 },
        { TEXT("x\xe2\x82"), "a byte that is not UTF-8", 1, 2 },                  /* cut off at the end */
        { TEXT("\xff"), "a byte that is not UTF-8", 1, 1 },
};

START_TEST(test_config_file_check_text_names_the_first_bad_byte) {
        kdp_config_file_error e = { .reason = "untouched" };
        int r = kdp_config_file_check_text(texts[_i].text, texts[_i].len, &e);

        if (!texts[_i].reason) {
                ck_assert_int_eq(r, 0);
                ck_assert_str_eq(e.reason, "untouched");
                return;
        }
        ck_assert_int_eq(r, -EILSEQ);
        ck_assert_str_eq(e.reason, texts[_i].reason);
        ck_assert_uint_eq(e.line, texts[_i].line);
        ck_assert_uint_eq(e.column, texts[_i].column);
}
END_TEST

/* Every byte's line and column: CR LF is one break (its LF on the CR's line), a lone CR breaks. */
START_TEST(test_config_file_position_counts_lines_and_characters) {
        static const char text[] = "ab\r\nc\xc3\xa9" "d\re";
        static const unsigned want[][2] = { { 1, 1 }, { 1, 2 }, { 1, 3 }, { 1, 3 }, { 2, 1 },
                                            { 2, 2 }, { 2, 3 }, { 2, 3 }, { 2, 4 }, { 3, 1 } };

        for (size_t i = 0; i < KDP_ELEMENTSOF(want); i++) {
                unsigned line = 0, column = 0;

                kdp_config_file_position(text, i, &line, &column);
                ck_assert_msg(line == want[i][0] && column == want[i][1], "byte %zu: %u:%u, want %u:%u", i,
                              line, column, want[i][0], want[i][1]);
        }
}
END_TEST

START_TEST(test_config_file_read_returns_text_with_a_terminator) {
        _cleanup_(kdp_test_unlink_freep) char *path = kdp_test_write_temp("config-file", ".yaml", "a: 1\n", 5);
        _cleanup_free_ char *text = NULL;
        size_t size = 0;

        ck_assert_int_eq(kdp_config_file_read(path, 5, &text, &size, NULL), 0);
        ck_assert_uint_eq(size, 5);
        ck_assert_str_eq(text, "a: 1\n");
}
END_TEST

START_TEST(test_config_file_read_refuses_what_is_not_a_small_regular_file) {
        _cleanup_(kdp_test_unlink_freep) char *path = kdp_test_write_temp("config-file", ".yaml", "a: 1\n", 5);
        _cleanup_free_ char *fifo = NULL;
        char *text = (char *) 0x1;
        char dir[] = "/tmp/kdp-test-config-file-XXXXXX";
        kdp_config_file_error e = {};
        size_t size = 7;

        ck_assert_int_eq(kdp_config_file_read(path, 4, &text, &size, &e), -EFBIG);
        ck_assert_str_eq(e.reason, "larger than the size limit");
        ck_assert_uint_eq(e.line, 0);

        ck_assert_int_eq(kdp_config_file_read("/dev/null", 4, &text, &size, &e), -EINVAL);
        ck_assert_str_eq(e.reason, "a character device, not a regular file");
        ck_assert_int_eq(kdp_config_file_read("/tmp", 4, &text, &size, &e), -EISDIR);
        ck_assert_str_eq(e.reason, "a directory, not a regular file");

        ck_assert_ptr_nonnull(mkdtemp(dir));
        ck_assert_int_ge(asprintf(&fifo, "%s/fifo", dir), 0);
        ck_assert_int_eq(mkfifo(fifo, 0600), 0);
        ck_assert_int_eq(kdp_config_file_read(fifo, 4, &text, &size, &e), -EINVAL);
        ck_assert_str_eq(e.reason, "a FIFO, not a regular file");
        ck_assert_int_eq(unlink(fifo), 0);
        ck_assert_int_eq(rmdir(dir), 0);

        ck_assert_int_eq(kdp_config_file_read("/nonexistent/x.yaml", 4, &text, &size, &e), -ENOENT);
        ck_assert_ptr_null(e.reason);
        ck_assert_int_eq(kdp_config_file_read(NULL, 4, &text, &size, &e), -EINVAL);
        ck_assert_int_eq(kdp_config_file_read(path, 0, &text, &size, &e), -EINVAL);

        /* nothing written on failure */
        ck_assert_ptr_eq(text, (char *) 0x1);
        ck_assert_uint_eq(size, 7);
}
END_TEST

static Suite *config_file_suite(void) {
        Suite *s = suite_create("config-file");
        TCase *tc;

        tc = tcase_create("check-text");
        tcase_set_timeout(tc, 10);
        tcase_add_loop_test(tc, test_config_file_check_text_names_the_first_bad_byte, 0, (int) KDP_ELEMENTSOF(texts));
        suite_add_tcase(s, tc);

        tc = tcase_create("read");
        tcase_set_timeout(tc, 10);
        tcase_add_test(tc, test_config_file_position_counts_lines_and_characters);
        tcase_add_test(tc, test_config_file_read_returns_text_with_a_terminator);
        tcase_add_test(tc, test_config_file_read_refuses_what_is_not_a_small_regular_file);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return kdp_test_run(config_file_suite());
}
