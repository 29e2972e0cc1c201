/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kdp/cleanup.h>
#include <kdp/config-file.h>
#include <kdp/config-shape.h>

#include "kdp-test.h"

#define TEXT(t) t, sizeof(t) - 1
#define KDP_STRINGIFY_TEST_(x) #x
#define KDP_STRINGIFY_TEST(x) KDP_STRINGIFY_TEST_(x)

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


/* ---- shape ---- */

/* `text` is refused by the shape check with exactly this reason, place and key. */
static void expect_shape_refused(const char *text, bool json, const char *reason, unsigned line, unsigned column,
                                 const char *key) {
        kdp_config_file_error e = {};
        char k[KDP_CONFIG_SHAPE_KEY_MAX] = "untouched";

        ck_assert_int_eq(kdp_config_shape_check(text, strlen(text), json, &e, k), -E2BIG);
        ck_assert_str_eq(e.reason, reason);
        ck_assert_uint_eq(e.line, line);
        ck_assert_uint_eq(e.column, column);
        ck_assert_str_eq(k, key);
}

static void expect_shape_ok(const char *text, bool json) {
        kdp_config_file_error e = { .reason = "untouched" };
        char k[KDP_CONFIG_SHAPE_KEY_MAX] = "untouched";

        ck_assert_int_eq(kdp_config_shape_check(text, strlen(text), json, &e, k), 0);
        ck_assert_str_eq(e.reason, "untouched");
        ck_assert_str_eq(k, "untouched");
}

/* `n` copies of `s` (free()) */
static char *repeat(const char *s, size_t n) {
        char *t = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&t, &size);

        ck_assert_ptr_nonnull(f);
        for (size_t i = 0; i < n; i++)
                fputs(s, f);
        ck_assert_int_eq(fclose(f), 0);
        return t;
}

static char *join3(const char *a, const char *b, const char *c) {
        char *t;

        ck_assert_int_ge(asprintf(&t, "%s%s%s", a, b, c), 0);
        return t;
}

START_TEST(test_config_file_shape_refuses_nesting_past_the_limit) {
        const size_t max = KDP_CONFIG_SHAPE_DEPTH_MAX;
        _cleanup_free_ char *open_max = repeat("[", max), *close_max = repeat("]", max);
        _cleanup_free_ char *open_past = repeat("[", max + 1), *close_past = repeat("]", max + 1);
        _cleanup_free_ char *at = join3(open_max, "", close_max), *past = join3(open_past, "", close_past);
        _cleanup_free_ char *key = repeat("[0]", max), *block_at = NULL, *block_past = NULL;
        _cleanup_free_ char *million = repeat("[", 1024 * 1024);

        ck_assert_str_eq(KDP_STRINGIFY_TEST(KDP_CONFIG_SHAPE_DEPTH_MAX), "16");
        expect_shape_ok(at, true);
        expect_shape_ok(at, false);
        expect_shape_refused(past, true, "nested deeper than 16 levels", 1, 17, key);
        expect_shape_refused(past, false, "nested deeper than 16 levels", 1, 17, key);
        /* a megabyte of brackets stops at the 17th, not at libfyaml's own depth limit after a document */
        expect_shape_refused(million, true, "nested deeper than 16 levels", 1, 17, key);

        /* block style: one mapping per indented line, the 17th is refused at its first key */
        {
                FILE *f;
                size_t size = 0;

                f = open_memstream(&block_at, &size);
                for (size_t i = 0; i < max; i++)
                        fprintf(f, "%*sk%zu:%s\n", (int) (2 * i), "", i, i + 1 == max ? " v" : "");
                ck_assert_int_eq(fclose(f), 0);
                f = open_memstream(&block_past, &size);
                for (size_t i = 0; i <= max; i++)
                        fprintf(f, "%*sk%zu:%s\n", (int) (2 * i), "", i, i == max ? " v" : "");
                ck_assert_int_eq(fclose(f), 0);
        }
        expect_shape_ok(block_at, false);
        expect_shape_refused(block_past, false, "nested deeper than 16 levels", 17, 33,
                             "k0.k1.k2.k3.k4.k5.k6.k7.k8.k9.k10.k11.k12.k13.k14.k15");
}
END_TEST

START_TEST(test_config_file_shape_counts_no_bracket_of_a_comment_or_a_string) {
        _cleanup_free_ char *brackets = repeat("[{", 100);
        _cleanup_free_ char *yaml = NULL, *json = NULL;

        ck_assert_int_ge(asprintf(&yaml, "# %s\na: '%s'\nb: \"%s\"\nc: %s\nd: |\n  %s\n", brackets, brackets,
                                  brackets, "x[{", brackets), 0);
        ck_assert_int_ge(asprintf(&json, "{\"a\": \"%s\", \"%s\": 1}", brackets, brackets), 0);
        expect_shape_ok(yaml, false);
        expect_shape_ok(json, true);
        free(yaml);
        free(json);

        /* quotes escaped inside quotes, brackets inside a plain scalar of block context, an anchored flow list */
        ck_assert_int_ge(asprintf(&yaml, "a: ['it''s %s', \"\\\"%s\"]\nb: x %s\n- c: &x [1, %s]\n", brackets,
                                  brackets, brackets, "\"]\""), 0);
        ck_assert_int_ge(asprintf(&json, "{\"a\": [\"\\\"%s\\\\\", \"%s\"]}", brackets, brackets), 0);
        expect_shape_ok(yaml, false);
        expect_shape_ok(json, true);
}
END_TEST

START_TEST(test_config_file_shape_refuses_a_list_or_mapping_past_the_limit) {
        const size_t max = KDP_CONFIG_SHAPE_ENTRIES_MAX;
        _cleanup_free_ char *items_at = repeat("\"x\",", max - 1), *items_past = repeat("\"x\",", max);
        _cleanup_free_ char *list_at = join3("{\"a\": {\"vendors\": [", items_at, "\"x\"]}}");
        _cleanup_free_ char *list_past = join3("{\"a\": {\"vendors\": [", items_past, "\"x\"]}}");
        _cleanup_free_ char *yaml_at = repeat("  - x\n", max), *yaml_past = NULL;
        _cleanup_free_ char *keys_at = NULL, *keys_past = NULL;
        size_t size = 0;
        FILE *f;

        ck_assert_uint_eq(max, 4096);
        expect_shape_ok(list_at, true);
        /* the 4097th entry, at column 20 + 4 * 4096 */
        expect_shape_refused(list_past, true, "a list of more than 4096 entries", 1, 20 + 4 * 4096, "a.vendors");

        yaml_past = join3("top:\n  l:\n", yaml_at, "");
        expect_shape_ok(yaml_past, false);
        free(yaml_past);
        yaml_past = join3("top:\n  l:\n", yaml_at, "  - y\n");
        expect_shape_refused(yaml_past, false, "a list of more than 4096 entries", 4096 + 3, 5, "top.l");

        f = open_memstream(&keys_at, &size);
        fputs("s:\n", f);
        for (size_t i = 0; i < max; i++)
                fprintf(f, "  k%zu: %zu\n", i, i);
        ck_assert_int_eq(fclose(f), 0);
        expect_shape_ok(keys_at, false);
        keys_past = join3(keys_at, "  extra: 1\n", "");
        expect_shape_refused(keys_past, false, "a mapping of more than 4096 keys", 4096 + 2, 3, "s");
}
END_TEST

/* 4 lists of entries under one: 1 + 3 * 4096 + (1 + last) values */
static char *lists(size_t last) {
        char *t = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&t, &size);

        ck_assert_ptr_nonnull(f);
        fputs("[\n", f);
        for (size_t i = 0; i < 4; i++) {
                size_t n = i < 3 ? KDP_CONFIG_SHAPE_ENTRIES_MAX - 1 : last;

                fputs("[", f);
                for (size_t j = 0; j < n; j++)
                        fprintf(f, "%s1", j > 0 ? "," : "");
                fputs(i < 3 ? "],\n" : "]\n", f);
        }
        fputs("]\n", f);
        ck_assert_int_eq(fclose(f), 0);
        return t;
}

/* the same values in block style: 1 + 3 * 4096 + (1 + last) */
static char *block_lists(size_t last) {
        char *t = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&t, &size);

        ck_assert_ptr_nonnull(f);
        for (size_t i = 0; i < 4; i++) {
                size_t n = i < 3 ? KDP_CONFIG_SHAPE_ENTRIES_MAX - 1 : last;

                for (size_t j = 0; j < n; j++)
                        fprintf(f, "%s 1\n", j == 0 ? "- -" : "  -");
        }
        ck_assert_int_eq(fclose(f), 0);
        return t;
}

START_TEST(test_config_file_shape_refuses_more_values_than_the_limit) {
        _cleanup_free_ char *at = lists(KDP_CONFIG_SHAPE_ENTRIES_MAX - 2), *past = lists(KDP_CONFIG_SHAPE_ENTRIES_MAX - 1);
        _cleanup_free_ char *block_at = block_lists(KDP_CONFIG_SHAPE_ENTRIES_MAX - 2);
        _cleanup_free_ char *block_past = block_lists(KDP_CONFIG_SHAPE_ENTRIES_MAX - 1);

        ck_assert_uint_eq(1 + 3 * KDP_CONFIG_SHAPE_ENTRIES_MAX + 1 + KDP_CONFIG_SHAPE_ENTRIES_MAX - 2,
                          KDP_CONFIG_SHAPE_VALUES_MAX);
        expect_shape_ok(at, true);
        expect_shape_ok(at, false);
        /* the last 1 of the last list: line 5, column 2 + 2 * 4094; the key names its list */
        expect_shape_refused(past, true, "more than 16384 values in the file", 5, 2 + 2 * 4094, "[3]");
        expect_shape_refused(past, false, "more than 16384 values in the file", 5, 2 + 2 * 4094, "[3]");
        expect_shape_ok(block_at, false);
        expect_shape_refused(block_past, false, "more than 16384 values in the file", 4 * 4095, 5, "[3]");
}
END_TEST

/* libfyaml holds a token for each anchor, tag or alias of a line: they count as values, also in one line */
START_TEST(test_config_file_shape_counts_anchors_tags_and_aliases) {
        _cleanup_free_ char *anchors = repeat("&a ", KDP_CONFIG_SHAPE_VALUES_MAX + 1);
        _cleanup_free_ char *aliases = repeat("*a ", KDP_CONFIG_SHAPE_VALUES_MAX + 1);
        _cleanup_free_ char *tags = repeat("!t ", KDP_CONFIG_SHAPE_VALUES_MAX + 1);
        _cleanup_free_ char *flow = join3("a: [", anchors, "]");

        expect_shape_refused(anchors, false, "more than 16384 values in the file", 1, 1 + 3 * 16384, "");
        expect_shape_refused(aliases, false, "more than 16384 values in the file", 1, 1 + 3 * 16384, "");
        expect_shape_refused(tags, false, "more than 16384 values in the file", 1, 1 + 3 * 16384, "");
        expect_shape_refused(flow, false, "more than 16384 values in the file", 1, 5 + 3 * 16383, "a");
}
END_TEST

START_TEST(test_config_file_shape_passes_syntax_errors_to_the_parser) {
        expect_shape_ok("a: [1, 2\n", false);
        expect_shape_ok("{\"a\": }", true);
        expect_shape_ok("", true);
        expect_shape_ok("# only a comment\n", false);
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

        tc = tcase_create("shape");
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, test_config_file_shape_refuses_nesting_past_the_limit);
        tcase_add_test(tc, test_config_file_shape_counts_no_bracket_of_a_comment_or_a_string);
        tcase_add_test(tc, test_config_file_shape_refuses_a_list_or_mapping_past_the_limit);
        tcase_add_test(tc, test_config_file_shape_refuses_more_values_than_the_limit);
        tcase_add_test(tc, test_config_file_shape_counts_anchors_tags_and_aliases);
        tcase_add_test(tc, test_config_file_shape_passes_syntax_errors_to_the_parser);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return kdp_test_run(config_file_suite());
}
