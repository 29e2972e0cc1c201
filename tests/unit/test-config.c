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

#include "config.h"

#include "kdp-test.h"

/* ---- helpers ---- */

static char *write_yaml(const char *content) {
        return kdp_test_write_temp("config", ".yaml", content, strlen(content));
}

/* Expects exactly one "Rejected config file" error line with the given fields (printf-formatted path). */
static void expect_file_error(const char **text, const char *path, const char *fields) {
        _cleanup_free_ char *body = NULL;

        ck_assert_int_ge(asprintf(&body, "\"Rejected config file\" path=\"%s\" %s err=\"Invalid argument\"", path,
                                  fields), 0);
        kdp_test_expect_line(text, 'E', "config.c", body);
}

/* Loads `path`, which must fail with -EINVAL, leaving *ret alone; returns the log (free()). */
static char *load_fails(const char *path, int expect) {
        kdp_config *c = (kdp_config *) 0x1;
        kdp_test_capture cap;
        char *log;

        kdp_test_capture_begin(&cap);
        ck_assert_int_eq(kdp_config_load(path, &c), expect);
        log = kdp_test_capture_end(&cap);
        ck_assert_ptr_eq(c, (kdp_config *) 0x1);
        return log;
}

static void expect_value(const kdp_config *c, const char *section, const char *key, const char *value,
                         const char *origin) {
        const char *o = NULL;

        ck_assert_str_eq(kdp_config_get(c, section, key, &o), value);
        ck_assert_str_eq(o, origin);
}

static void expect_origin_line(const kdp_config *c, const char *section, const char *key, const char *value,
                               const char *path, int line) {
        _cleanup_free_ char *origin = NULL;

        ck_assert_int_ge(asprintf(&origin, "%s:%d", path, line), 0);
        expect_value(c, section, key, value, origin);
}

/* ---- loading ---- */

START_TEST(test_config_load_reads_sections_keys_and_origins) {
        _cleanup_(kdp_test_unlink_freep) char *path = write_yaml(
                "# kdpd config\n"
                "example:\n"
                "  devices: 16\n"
                "  resource: example.com/widget\n"
                "  verbose: true\n"
                "gpu:\n"
                "  hex: 0x10\n"
                "  quoted: \"a b\"\n"
                "  single: 'it''s'\n"
                "  multi: |\n"
                "    line1\n"
                "    line2\n");
        _cleanup_(kdp_config_freep) kdp_config *c = NULL;

        ck_assert_int_eq(kdp_config_load(path, &c), 0);
        ck_assert_str_eq(c->path, path);
        ck_assert_uint_eq(c->n_entries, 7);

        expect_origin_line(c, "example", "devices", "16", path, 3);
        expect_origin_line(c, "example", "resource", "example.com/widget", path, 4);
        expect_origin_line(c, "example", "verbose", "true", path, 5);
        expect_origin_line(c, "gpu", "hex", "0x10", path, 7);
        expect_origin_line(c, "gpu", "quoted", "a b", path, 8);
        expect_origin_line(c, "gpu", "single", "it's", path, 9);
        expect_origin_line(c, "gpu", "multi", "line1\nline2\n", path, 10);

        ck_assert_str_eq(c->entries[0].section, "example");
        ck_assert_str_eq(c->entries[0].key, "devices");
        ck_assert_ptr_null(kdp_config_get(c, "example", "hex", NULL));
        ck_assert_ptr_null(kdp_config_get(c, "other", "devices", NULL));
        ck_assert_str_eq(kdp_config_get(c, "gpu", "hex", NULL), "0x10");
}
END_TEST

START_TEST(test_config_load_without_path_is_empty) {
        _cleanup_(kdp_config_freep) kdp_config *c = NULL;

        ck_assert_int_eq(kdp_config_load(NULL, &c), 0);
        ck_assert_ptr_null(c->path);
        ck_assert_uint_eq(c->n_entries, 0);
        ck_assert_ptr_null(kdp_config_get(c, "example", "devices", NULL));
        ck_assert_int_eq(kdp_config_load("/x", NULL), -EINVAL);
        ck_assert_ptr_null(kdp_config_free(NULL));
}
END_TEST

static const char *const empty_documents[] = {
        "",
        "# nothing but a comment\n",
        "---\n",
        "---\n...\n",
        "~\n",
        "null\n",
        "\n\n   \n",
};

START_TEST(test_config_load_treats_empty_file_and_empty_document_as_empty_config) {
        _cleanup_(kdp_test_unlink_freep) char *path = write_yaml(empty_documents[_i]);
        _cleanup_(kdp_config_freep) kdp_config *c = NULL;

        ck_assert_int_eq(kdp_config_load(path, &c), 0);
        ck_assert_uint_eq(c->n_entries, 0);
        ck_assert_str_eq(c->path, path);
}
END_TEST

START_TEST(test_config_load_treats_empty_json_file_as_empty_config) {
        _cleanup_(kdp_test_unlink_freep) char *empty = kdp_test_write_temp("config", ".json", "", 0),
                                              *object = kdp_test_write_temp("config", ".json", "{}", 2),
                                              *null = kdp_test_write_temp("config", ".json", "null\n", 5);
        _cleanup_(kdp_config_freep) kdp_config *a = NULL, *b = NULL, *c = NULL;

        ck_assert_int_eq(kdp_config_load(empty, &a), 0);
        ck_assert_uint_eq(a->n_entries, 0);
        ck_assert_int_eq(kdp_config_load(object, &b), 0);
        ck_assert_uint_eq(b->n_entries, 0);
        ck_assert_int_eq(kdp_config_load(null, &c), 0);
        ck_assert_uint_eq(c->n_entries, 0);
}
END_TEST

START_TEST(test_config_load_stores_null_values_as_empty_strings) {
        _cleanup_(kdp_test_unlink_freep) char *path = write_yaml(
                "example:\n"
                "  bare:\n"
                "  tilde: ~\n"
                "  word: null\n"
                "  upper: NULL\n"
                "  quoted: \"null\"\n"
                "  empty: ''\n"
                "empty_section:\n"
                "null_section: ~\n"
                "flow_section: {}\n");
        _cleanup_(kdp_config_freep) kdp_config *c = NULL;

        ck_assert_int_eq(kdp_config_load(path, &c), 0);
        ck_assert_uint_eq(c->n_entries, 6);
        expect_origin_line(c, "example", "bare", "", path, 2);
        expect_origin_line(c, "example", "tilde", "", path, 3);
        expect_origin_line(c, "example", "word", "", path, 4);
        expect_origin_line(c, "example", "upper", "", path, 5);
        expect_origin_line(c, "example", "quoted", "null", path, 6);
        expect_origin_line(c, "example", "empty", "", path, 7);
}
END_TEST

START_TEST(test_config_load_reads_json_by_extension) {
        static const char json[] =
                "{\n"
                "  \"example\": {\n"
                "    \"devices\": 16,\n"
                "    \"resource\": \"example.com/widget\",\n"
                "    \"enabled\": false,\n"
                "    \"unset\": null,\n"
                "    \"escaped\": \"a\\tb\"\n"
                "  },\n"
                "  \"gpu\": {}\n"
                "}\n";
        _cleanup_(kdp_test_unlink_freep) char *path = kdp_test_write_temp("config", ".json", json, strlen(json));
        _cleanup_(kdp_config_freep) kdp_config *c = NULL;

        ck_assert_int_eq(kdp_config_load(path, &c), 0);
        ck_assert_uint_eq(c->n_entries, 5);
        expect_origin_line(c, "example", "devices", "16", path, 3);
        expect_origin_line(c, "example", "resource", "example.com/widget", path, 4);
        expect_origin_line(c, "example", "enabled", "false", path, 5);
        expect_origin_line(c, "example", "unset", "", path, 6);
        expect_origin_line(c, "example", "escaped", "a\tb", path, 7);
}
END_TEST

START_TEST(test_config_load_rejects_yaml_only_syntax_in_a_json_file) {
        static const char json[] = "example:\n  devices: 16\n";
        _cleanup_(kdp_test_unlink_freep) char *path = kdp_test_write_temp("config", ".json", json, strlen(json));
        _cleanup_free_ char *log = load_fails(path, -EINVAL);
        const char *p = log;

        expect_file_error(&p, path, "line=1 column=1 reason=\"Invalid JSON plain scalar\"");
        ck_assert_str_eq(p, "");
}
END_TEST

START_TEST(test_config_load_rejects_json_syntax_error_naming_line_and_column) {
        static const char json[] = "{\"example\": {\"devices\": 16,}}";
        _cleanup_(kdp_test_unlink_freep) char *path = kdp_test_write_temp("config", ".json", json, strlen(json));
        _cleanup_free_ char *log = load_fails(path, -EINVAL);
        const char *p = log;

        expect_file_error(&p, path, "line=1 column=27 reason=\"JSON disallows trailing comma before closing brace\"");
        ck_assert_str_eq(p, "");
}
END_TEST

START_TEST(test_config_load_rejects_yaml_syntax_error_naming_line_and_column) {
        _cleanup_(kdp_test_unlink_freep) char *path = write_yaml("example:\n  devices: 16\n  a: b: c\n");
        _cleanup_free_ char *log = load_fails(path, -EINVAL);
        const char *p = log;

        expect_file_error(&p, path, "line=3 column=7 reason=\"invalid nested block mapping on the same line\"");
        ck_assert_str_eq(p, "");
}
END_TEST

START_TEST(test_config_load_rejects_tab_indentation) {
        _cleanup_(kdp_test_unlink_freep) char *path = write_yaml("example:\n\tdevices: 16\n");
        _cleanup_free_ char *log = load_fails(path, -EINVAL);
        const char *p = log;

        expect_file_error(&p, path, "line=2 column=1 reason=\"a tab (indent and separate with spaces)\"");
        ck_assert_str_eq(p, "");
}
END_TEST

START_TEST(test_config_load_rejects_duplicate_key_naming_line_and_key) {
        _cleanup_(kdp_test_unlink_freep) char *path = write_yaml(
                "example:\n"
                "  devices: 1\n"
                "  resource: example.com/widget\n"
                "  devices: 2\n");
        _cleanup_free_ char *log = load_fails(path, -EINVAL);
        const char *p = log;

        expect_file_error(&p, path, "line=4 key=\"example.devices\" reason=\"duplicate key\"");
        ck_assert_str_eq(p, "");
}
END_TEST

START_TEST(test_config_load_rejects_duplicate_key_in_json) {
        static const char json[] = "{\n  \"example\": {\n    \"a\": 1,\n    \"a\": 2\n  }\n}\n";
        _cleanup_(kdp_test_unlink_freep) char *path = kdp_test_write_temp("config", ".json", json, strlen(json));
        _cleanup_free_ char *log = load_fails(path, -EINVAL);
        const char *p = log;

        expect_file_error(&p, path, "line=4 key=\"example.a\" reason=\"duplicate key\"");
        ck_assert_str_eq(p, "");
}
END_TEST

START_TEST(test_config_load_rejects_duplicate_section) {
        _cleanup_(kdp_test_unlink_freep) char *path = write_yaml(
                "example:\n"
                "  a: 1\n"
                "gpu:\n"
                "  b: 2\n"
                "example:\n"
                "  c: 3\n");
        _cleanup_free_ char *log = load_fails(path, -EINVAL);
        const char *p = log;

        expect_file_error(&p, path, "line=5 key=\"example\" reason=\"duplicate section\"");
        ck_assert_str_eq(p, "");
}
END_TEST

START_TEST(test_config_load_rejects_value_that_is_not_a_scalar) {
        _cleanup_(kdp_test_unlink_freep) char *path = write_yaml(
                "example:\n"
                "  list: [1, 2]\n"
                "  fine: 1\n"
                "  map:\n"
                "    x: 1\n"
                "  block:\n"
                "    - 1\n");
        _cleanup_free_ char *log = load_fails(path, -EINVAL);
        const char *p = log;

        expect_file_error(&p, path, "line=2 key=\"example.list\" reason=\"value must be a scalar\"");
        expect_file_error(&p, path, "line=4 key=\"example.map\" reason=\"value must be a scalar\"");
        expect_file_error(&p, path, "line=6 key=\"example.block\" reason=\"value must be a scalar\"");
        ck_assert_str_eq(p, "");
}
END_TEST

START_TEST(test_config_load_rejects_top_level_that_is_not_a_mapping) {
        _cleanup_(kdp_test_unlink_freep) char *seq = write_yaml("# a list\n- example\n- gpu\n");
        _cleanup_(kdp_test_unlink_freep) char *scalar = write_yaml("\n\nexample\n");
        _cleanup_(kdp_test_unlink_freep) char *empty_seq = write_yaml("[]\n");
        _cleanup_free_ char *log1 = load_fails(seq, -EINVAL), *log2 = load_fails(scalar, -EINVAL),
                            *log3 = load_fails(empty_seq, -EINVAL);
        const char *p;

        p = log1;
        expect_file_error(&p, seq, "line=2 reason=\"top level is not a mapping\"");
        ck_assert_str_eq(p, "");
        p = log2;
        expect_file_error(&p, scalar, "line=3 reason=\"top level is not a mapping\"");
        ck_assert_str_eq(p, "");
        p = log3;       /* an empty flow sequence has no line to name */
        expect_file_error(&p, empty_seq, "reason=\"top level is not a mapping\"");
        ck_assert_str_eq(p, "");
}
END_TEST

START_TEST(test_config_load_rejects_section_that_is_not_a_mapping) {
        _cleanup_(kdp_test_unlink_freep) char *path = write_yaml(
                "example: 5\n"
                "gpu: [a]\n"
                "fpga: \"\"\n"
                "ok:\n"
                "  a: 1\n");
        _cleanup_free_ char *log = load_fails(path, -EINVAL);
        const char *p = log;

        expect_file_error(&p, path, "line=1 key=\"example\" reason=\"section is not a mapping\"");
        expect_file_error(&p, path, "line=2 key=\"gpu\" reason=\"section is not a mapping\"");
        expect_file_error(&p, path, "line=3 key=\"fpga\" reason=\"section is not a mapping\"");
        ck_assert_str_eq(p, "");
}
END_TEST

START_TEST(test_config_load_rejects_aliases_and_merge_keys) {
        _cleanup_(kdp_test_unlink_freep) char *path = write_yaml(
                "base: &base\n"
                "  x: 1\n"
                "example:\n"
                "  a: &v 1\n"
                "  b: *v\n"
                "gpu:\n"
                "  <<: *base\n"
                "fpga: *base\n");
        _cleanup_free_ char *log = load_fails(path, -EINVAL);
        const char *p = log;

        expect_file_error(&p, path, "line=5 key=\"example.b\" reason=\"aliases are not supported\"");
        expect_file_error(&p, path, "line=7 key=\"gpu.<<\" reason=\"aliases are not supported\"");
        expect_file_error(&p, path, "line=8 key=\"fpga\" reason=\"aliases are not supported\"");
        ck_assert_str_eq(p, "");
}
END_TEST

START_TEST(test_config_load_rejects_bad_keys) {
        _cleanup_(kdp_test_unlink_freep) char *path = write_yaml(
                "example:\n"
                "  \"\": 1\n"
                "  ? [a, b]\n"
                "  : 2\n"
                "  \"nul\\0key\": 3\n"
                "\"\":\n"
                "  a: 1\n");
        _cleanup_free_ char *log = load_fails(path, -EINVAL);
        const char *p = log;

        expect_file_error(&p, path, "line=2 key=\"example\" reason=\"empty key\"");
        expect_file_error(&p, path, "line=3 key=\"example\" reason=\"key is not a scalar\"");
        expect_file_error(&p, path, "line=5 key=\"example\" reason=\"contains a NUL byte\"");
        expect_file_error(&p, path, "line=6 reason=\"empty section name\"");
        ck_assert_str_eq(p, "");
}
END_TEST

START_TEST(test_config_load_rejects_nul_byte_in_value) {
        _cleanup_(kdp_test_unlink_freep) char *path = write_yaml("example:\n  a: \"x\\0y\"\n");
        _cleanup_free_ char *log = load_fails(path, -EINVAL);
        const char *p = log;

        expect_file_error(&p, path, "line=2 key=\"example.a\" reason=\"contains a NUL byte\"");
        ck_assert_str_eq(p, "");
}
END_TEST

START_TEST(test_config_load_rejects_more_than_one_document) {
        _cleanup_(kdp_test_unlink_freep) char *path = write_yaml("example:\n  a: 1\n---\ngpu:\n  b: 2\n");
        _cleanup_free_ char *log = load_fails(path, -EINVAL);
        const char *p = log;

        expect_file_error(&p, path, "line=3 reason=\"more than one document\"");
        ck_assert_str_eq(p, "");
}
END_TEST

START_TEST(test_config_load_reports_every_problem_of_the_file) {
        _cleanup_(kdp_test_unlink_freep) char *path = write_yaml(
                "example:\n"
                "  a: [1]\n"
                "  b: 2\n"
                "  b: 3\n"
                "gpu: 7\n");
        _cleanup_free_ char *log = load_fails(path, -EINVAL);
        const char *p = log;

        expect_file_error(&p, path, "line=2 key=\"example.a\" reason=\"value must be a scalar\"");
        expect_file_error(&p, path, "line=4 key=\"example.b\" reason=\"duplicate key\"");
        expect_file_error(&p, path, "line=5 key=\"gpu\" reason=\"section is not a mapping\"");
        ck_assert_str_eq(p, "");
}
END_TEST

/*
 * Found by fuzz/config-yaml: libfyaml 0.8 crashes freeing its parser after this input (tabs within
 * its lines, a form feed); no tab reaches it.
 */
START_TEST(test_config_load_refuses_tabs_before_libfyaml_sees_them) {
        static const char yaml[] = "\n?\n o: \t?\n\t\t\t\td:\n?\n : eLe0\n? e| \f\t\t\t\t\t\t\t\td:\n?\n : eLe0\n? h: ";
        _cleanup_(kdp_test_unlink_freep) char *path = write_yaml(yaml);
        _cleanup_(kdp_test_unlink_freep) char *inner = write_yaml("example:\n  devices:\t16\n");
        _cleanup_free_ char *log = load_fails(path, -EINVAL), *log2 = load_fails(inner, -EINVAL);
        const char *p = log;

        expect_file_error(&p, path, "line=3 column=5 reason=\"a tab (indent and separate with spaces)\"");
        ck_assert_str_eq(p, "");
        p = log2;
        expect_file_error(&p, inner, "line=2 column=11 reason=\"a tab (indent and separate with spaces)\"");
        ck_assert_str_eq(p, "");
}
END_TEST

/*
 * Found by fuzz/config-yaml: libfyaml 0.8 leaks the text it builds for a single-quoted scalar with
 * several escaped quotes (''). Such a key or value is refused before its text is read; one escape,
 * an empty scalar and double quotes still read.
 */
START_TEST(test_config_load_refuses_escaped_quotes_libfyaml_leaks) {
        _cleanup_(kdp_test_unlink_freep) char *found = write_yaml("\n'''''''''''''''''''''''''''''''''''''''''''''''''''''''''''''''''''''''''''''''''''''''''''''''': m");
        _cleanup_(kdp_test_unlink_freep) char *path = write_yaml(
                "example:\n"
                "  'it''s ''x''': 1\n"
                "  a: 'x\n"
                "    ''y'' z'\n"
                "  b: 'it''s'\n");
        _cleanup_(kdp_test_unlink_freep) char *fine = write_yaml(
                "example:\n"
                "  'it''s': ''\n"
                "  b: \"''''''\"\n");
        _cleanup_free_ char *log = load_fails(found, -EINVAL), *log2 = load_fails(path, -EINVAL);
        _cleanup_(kdp_config_freep) kdp_config *c = NULL;
        const char *p = log;

        expect_file_error(&p, found, "line=2 reason=\"more than one escaped quote ('') in single quotes "
                                     "(write the value in double quotes)\"");
        ck_assert_str_eq(p, "");
        p = log2;
        expect_file_error(&p, path, "line=2 key=\"example\" reason=\"more than one escaped quote ('') in single "
                                    "quotes (write the value in double quotes)\"");
        expect_file_error(&p, path, "line=3 key=\"example.a\" reason=\"more than one escaped quote ('') in single "
                                    "quotes (write the value in double quotes)\"");
        ck_assert_str_eq(p, "");

        ck_assert_int_eq(kdp_config_load(fine, &c), 0);
        ck_assert_uint_eq(c->n_entries, 2);
        expect_origin_line(c, "example", "it's", "", fine, 2);
        expect_origin_line(c, "example", "b", "''''''", fine, 3);
}
END_TEST

/* Found by fuzz/config-yaml: libfyaml 0.7 loops forever on a byte that is not UTF-8 in a directive. */
START_TEST(test_config_load_refuses_a_directive_that_is_not_utf8) {
        _cleanup_(kdp_test_unlink_freep) char *path = write_yaml("example:\n%\xec");
        _cleanup_free_ char *log = load_fails(path, -EINVAL);
        const char *p = log;

        expect_file_error(&p, path, "line=2 column=2 reason=\"a byte that is not UTF-8\"");
        ck_assert_str_eq(p, "");
}
END_TEST

START_TEST(test_config_load_fails_on_missing_file_or_directory) {
        _cleanup_free_ char *log1 = load_fails("/nonexistent/kdp.yaml", -ENOENT), *log2 = load_fails("/tmp", -EISDIR);
        const char *p;

        p = log1;
        kdp_test_expect_line(&p, 'E', "config.c",
                             "\"Failed to open config file\" path=\"/nonexistent/kdp.yaml\" "
                             "err=\"No such file or directory\"");
        ck_assert_str_eq(p, "");
        p = log2;
        kdp_test_expect_line(&p, 'E', "config.c",
                             "\"Failed to open config file\" path=\"/tmp\" reason=\"a directory, not a regular file\" "
                             "err=\"Is a directory\"");
        ck_assert_str_eq(p, "");
}
END_TEST

START_TEST(test_config_load_fails_on_unreadable_file_with_eacces) {
        _cleanup_(kdp_test_unlink_freep) char *path = write_yaml("example:\n  a: 1\n");
        _cleanup_free_ char *log = NULL, *body = NULL;
        const char *p;

        ck_assert_int_eq(chmod(path, 0), 0);
        if (access(path, R_OK) == 0)
                return;         /* root (CAP_DAC_OVERRIDE) reads it anyway: nothing to test */

        log = load_fails(path, -EACCES);
        ck_assert_int_ge(asprintf(&body, "\"Failed to open config file\" path=\"%s\" err=\"Permission denied\"",
                                  path), 0);
        p = log;
        kdp_test_expect_line(&p, 'E', "config.c", body);
        ck_assert_str_eq(p, "");
}
END_TEST

/* ---- overrides ---- */

START_TEST(test_config_add_override_adds_keys_and_later_values_win) {
        _cleanup_(kdp_test_unlink_freep) char *path =
                write_yaml("example:\n  devices: 16\n  resource: example.com/widget\n");
        _cleanup_(kdp_config_freep) kdp_config *c = NULL;

        ck_assert_int_eq(kdp_config_load(path, &c), 0);
        ck_assert_int_eq(kdp_config_add_override(c, "example.devices=4"), 0);
        ck_assert_int_eq(kdp_config_add_override(c, "example.path=/a=b.c"), 0);
        ck_assert_int_eq(kdp_config_add_override(c, "gpu.sysfs.path=/x"), 0);
        ck_assert_int_eq(kdp_config_add_override(c, "gpu.empty="), 0);
        ck_assert_int_eq(kdp_config_add_override(c, "example.devices=8"), 0);

        expect_value(c, "example", "devices", "8", "-o example.devices=8");
        expect_origin_line(c, "example", "resource", "example.com/widget", path, 3);
        expect_value(c, "example", "path", "/a=b.c", "-o example.path=/a=b.c");
        expect_value(c, "gpu", "sysfs.path", "/x", "-o gpu.sysfs.path=/x");
        expect_value(c, "gpu", "empty", "", "-o gpu.empty=");
        ck_assert_ptr_null(kdp_config_get(c, "gpu", "sysfs", NULL));
}
END_TEST

START_TEST(test_config_add_override_works_without_a_file) {
        _cleanup_(kdp_config_freep) kdp_config *c = NULL;

        ck_assert_int_eq(kdp_config_load(NULL, &c), 0);
        ck_assert_int_eq(kdp_config_add_override(c, "example.devices=2"), 0);
        ck_assert_uint_eq(c->n_entries, 1);
        expect_value(c, "example", "devices", "2", "-o example.devices=2");
}
END_TEST

static const char *const bad_overrides[] = {
        "example", "example.devices", ".devices=1", "example.=1", "=1", "devices=example.1", "", "example=.x",
};

START_TEST(test_config_add_override_rejects_assignment_of_the_wrong_shape) {
        _cleanup_(kdp_config_freep) kdp_config *c = NULL;
        _cleanup_free_ char *log = NULL, *body = NULL;
        const char *p;
        kdp_test_capture cap;

        ck_assert_int_eq(kdp_config_load(NULL, &c), 0);
        kdp_test_capture_begin(&cap);
        ck_assert_int_eq(kdp_config_add_override(c, bad_overrides[_i]), -EINVAL);
        log = kdp_test_capture_end(&cap);
        ck_assert_uint_eq(c->n_entries, 0);

        ck_assert_int_ge(asprintf(&body, "\"Rejected config override\" override=\"%s\" "
                                         "reason=\"not of the form BACKEND.KEY=VALUE\" err=\"Invalid argument\"",
                                  bad_overrides[_i]), 0);
        p = log;
        kdp_test_expect_line(&p, 'E', "config.c", body);
        ck_assert_str_eq(p, "");
}
END_TEST

START_TEST(test_config_add_override_and_get_reject_null_arguments) {
        _cleanup_(kdp_config_freep) kdp_config *c = NULL;
        const char *origin = "untouched";

        ck_assert_int_eq(kdp_config_load(NULL, &c), 0);
        ck_assert_int_eq(kdp_config_add_override(NULL, "a.b=c"), -EINVAL);
        ck_assert_int_eq(kdp_config_add_override(c, NULL), -EINVAL);
        ck_assert_ptr_null(kdp_config_get(NULL, "a", "b", &origin));
        ck_assert_ptr_null(kdp_config_get(c, NULL, "b", &origin));
        ck_assert_ptr_null(kdp_config_get(c, "a", NULL, &origin));
        ck_assert_ptr_null(kdp_config_get(c, "a", "b", &origin));
        ck_assert_str_eq(origin, "untouched");
}
END_TEST

/* ---- checking a section ---- */

static const kdp_param_spec example_specs[] = {
        { "devices", "4", "how many widgets" },
        { "resource", NULL, "resource name" },
        { 0 },
};

START_TEST(test_config_check_section_accepts_declared_keys_and_ignores_other_sections) {
        _cleanup_(kdp_test_unlink_freep) char *path = write_yaml("example:\n  devices: 16\ngpu:\n  anything: 1\n");
        _cleanup_(kdp_config_freep) kdp_config *c = NULL;

        ck_assert_int_eq(kdp_config_load(path, &c), 0);
        ck_assert_int_eq(kdp_config_add_override(c, "example.resource=example.com/w"), 0);
        ck_assert_int_eq(kdp_config_check_section(c, "example", example_specs), 0);
        ck_assert_int_eq(kdp_config_check_section(c, "fpga", NULL), 0);
        ck_assert_int_eq(kdp_config_check_section(NULL, "example", example_specs), 0);
        ck_assert_int_eq(kdp_config_check_section(c, NULL, example_specs), -EINVAL);
}
END_TEST

START_TEST(test_config_check_section_rejects_unknown_keys_naming_each_origin) {
        _cleanup_(kdp_test_unlink_freep) char *path = write_yaml("example:\n  devices: 16\n  devcies: 3\n  typo: x\n");
        _cleanup_(kdp_config_freep) kdp_config *c = NULL;
        _cleanup_free_ char *log = NULL, *body = NULL;
        const char *p;
        kdp_test_capture cap;

        ck_assert_int_eq(kdp_config_load(path, &c), 0);
        ck_assert_int_eq(kdp_config_add_override(c, "example.resorce=x"), 0);
        kdp_test_capture_begin(&cap);
        ck_assert_int_eq(kdp_config_check_section(c, "example", example_specs), -EINVAL);
        log = kdp_test_capture_end(&cap);

        p = log;
        ck_assert_int_ge(asprintf(&body, "\"Unknown config key\" key=\"example.devcies\" origin=\"%s:3\" "
                                         "err=\"Invalid argument\"", path), 0);
        kdp_test_expect_line(&p, 'E', "config.c", body);
        free(body);
        ck_assert_int_ge(asprintf(&body, "\"Unknown config key\" key=\"example.typo\" origin=\"%s:4\" "
                                         "err=\"Invalid argument\"", path), 0);
        kdp_test_expect_line(&p, 'E', "config.c", body);
        kdp_test_expect_line(&p, 'E', "config.c", "\"Unknown config key\" key=\"example.resorce\" "
                                                  "origin=\"-o example.resorce=x\" err=\"Invalid argument\"");
        ck_assert_str_eq(p, "");
}
END_TEST

START_TEST(test_config_check_section_without_specs_rejects_every_key) {
        _cleanup_(kdp_config_freep) kdp_config *c = NULL;
        _cleanup_free_ char *log = NULL;
        const char *p;
        kdp_test_capture cap;

        ck_assert_int_eq(kdp_config_load(NULL, &c), 0);
        ck_assert_int_eq(kdp_config_add_override(c, "example.devices=1"), 0);
        kdp_test_capture_begin(&cap);
        ck_assert_int_eq(kdp_config_check_section(c, "example", NULL), -EINVAL);
        ck_assert_int_eq(kdp_config_check_section(c, "example", (const kdp_param_spec[]) { { 0 } }), -EINVAL);
        log = kdp_test_capture_end(&cap);

        p = log;
        kdp_test_expect_line(&p, 'E', "config.c", "\"Unknown config key\" key=\"example.devices\" "
                                                  "origin=\"-o example.devices=1\" err=\"Invalid argument\"");
        kdp_test_expect_line(&p, 'E', "config.c", "\"Unknown config key\" key=\"example.devices\" "
                                                  "origin=\"-o example.devices=1\" err=\"Invalid argument\"");
        ck_assert_str_eq(p, "");
}
END_TEST

/* ---- comparing sections ---- */

START_TEST(test_config_section_equal_compares_effective_values) {
        _cleanup_(kdp_test_unlink_freep) char *pa =
                write_yaml("example:\n  devices: 16\n  resource: r\ngpu:\n  x: 1\n");
        _cleanup_(kdp_test_unlink_freep) char *pb =
                write_yaml("# reordered\nexample:\n  resource: r\n  devices: 16\n");
        _cleanup_(kdp_config_freep) kdp_config *a = NULL, *b = NULL, *empty = NULL;

        ck_assert_int_eq(kdp_config_load(pa, &a), 0);
        ck_assert_int_eq(kdp_config_load(pb, &b), 0);
        ck_assert_int_eq(kdp_config_load(NULL, &empty), 0);

        /* same values from other lines; other sections do not matter */
        ck_assert(kdp_config_section_equal(a, b, "example"));
        ck_assert(!kdp_config_section_equal(a, b, "gpu"));
        ck_assert(kdp_config_section_equal(a, b, "fpga"));
        ck_assert(kdp_config_section_equal(empty, NULL, "example"));
        ck_assert(!kdp_config_section_equal(a, NULL, "example"));
        ck_assert(!kdp_config_section_equal(a, b, NULL));

        /* an override changes the effective value ... */
        ck_assert_int_eq(kdp_config_add_override(b, "example.devices=8"), 0);
        ck_assert(!kdp_config_section_equal(a, b, "example"));
        /* ... and a later one can make it equal again */
        ck_assert_int_eq(kdp_config_add_override(b, "example.devices=16"), 0);
        ck_assert(kdp_config_section_equal(a, b, "example"));
        ck_assert(kdp_config_section_equal(b, a, "example"));

        /* a key only one side has */
        ck_assert_int_eq(kdp_config_add_override(b, "example.extra="), 0);
        ck_assert(!kdp_config_section_equal(a, b, "example"));
        ck_assert(!kdp_config_section_equal(b, a, "example"));
}
END_TEST

/* libfyaml ends its input at a raw NUL or a byte that is not UTF-8: the rest of the file is not lost silently */
#define UNREAD(suffix, text, fields) { suffix, text, sizeof(text) - 1, fields }
static const struct {
        const char *suffix;
        const char *text;
        size_t len;
        const char *fields;
} unread_bytes[] = {
        UNREAD(".yaml", "example:\n  devices: 1\0006\n  x: 2\n", "line=2 column=13 reason=\"a NUL byte\""),
        UNREAD(".yaml", "example:\n  devices: 1\n# caf\xe9\n  x: 2\n", "line=3 column=6 reason=\"a byte that is not UTF-8\""),
        UNREAD(".yaml", "example:\r\n  a: 1 # \xc3\xa9\xc3\r\n", "line=2 column=11 reason=\"a byte that is not UTF-8\""),
        UNREAD(".yaml", "\0\0\0\0", "line=1 column=1 reason=\"a NUL byte\""),
        UNREAD(".json", "{\"example\": {\"devices\": 1}}\0 junk", "line=1 column=28 reason=\"a NUL byte\""),
        UNREAD(".json", "{\"example\": {\"a\": \"\xed\xa0\x80\"}}", "line=1 column=20 reason=\"a byte that is not UTF-8\""),
};

START_TEST(test_config_load_rejects_bytes_the_parser_would_not_read) {
        _cleanup_(kdp_test_unlink_freep) char *path = kdp_test_write_temp("config", unread_bytes[_i].suffix,
                                                                          unread_bytes[_i].text, unread_bytes[_i].len);
        _cleanup_free_ char *log = load_fails(path, -EINVAL);
        const char *p = log;

        expect_file_error(&p, path, unread_bytes[_i].fields);
        ck_assert_str_eq(p, "");
}
END_TEST

START_TEST(test_config_load_refuses_fifo_and_character_device_without_blocking) {
        _cleanup_free_ char *fifo = NULL, *log1 = NULL, *log2 = NULL, *body = NULL;
        const char *p;
        char dir[] = "/tmp/kdp-test-config-XXXXXX";

        ck_assert_ptr_nonnull(mkdtemp(dir));
        ck_assert_int_ge(asprintf(&fifo, "%s/config.yaml", dir), 0);
        ck_assert_int_eq(mkfifo(fifo, 0600), 0);

        log1 = load_fails(fifo, -EINVAL);       /* nobody writes the FIFO: it must not block */
        log2 = load_fails("/dev/zero", -EINVAL);
        ck_assert_int_eq(unlink(fifo), 0);
        ck_assert_int_eq(rmdir(dir), 0);

        p = log1;
        ck_assert_int_ge(asprintf(&body, "\"Failed to open config file\" path=\"%s\" "
                                         "reason=\"a FIFO, not a regular file\" err=\"Invalid argument\"", fifo), 0);
        kdp_test_expect_line(&p, 'E', "config.c", body);
        ck_assert_str_eq(p, "");
        p = log2;
        kdp_test_expect_line(&p, 'E', "config.c", "\"Failed to open config file\" path=\"/dev/zero\" "
                                                  "reason=\"a character device, not a regular file\" "
                                                  "err=\"Invalid argument\"");
        ck_assert_str_eq(p, "");
}
END_TEST

START_TEST(test_config_load_refuses_file_over_the_size_limit) {
        size_t n = KDP_CONFIG_FILE_SIZE_MAX + 1;
        _cleanup_free_ char *text = malloc(n), *log = NULL, *body = NULL;
        _cleanup_(kdp_test_unlink_freep) char *path = NULL;
        const char *p;

        ck_assert_ptr_nonnull(text);
        memset(text, '#', n);
        path = kdp_test_write_temp("config", ".yaml", text, n);
        log = load_fails(path, -EFBIG);
        p = log;
        ck_assert_int_ge(asprintf(&body, "\"Failed to open config file\" path=\"%s\" reason=\"larger than the size "
                                         "limit\" maxBytes=1048576 err=\"File too large\"", path), 0);
        kdp_test_expect_line(&p, 'E', "config.c", body);
        ck_assert_str_eq(p, "");
}
END_TEST

START_TEST(test_config_load_reads_file_at_the_size_limit) {
        size_t n = KDP_CONFIG_FILE_SIZE_MAX;
        static const char head[] = "example:\n  a: 1\n";
        _cleanup_free_ char *text = malloc(n);
        _cleanup_(kdp_test_unlink_freep) char *path = NULL;
        _cleanup_(kdp_config_freep) kdp_config *c = NULL;

        ck_assert_ptr_nonnull(text);
        memset(text, '#', n);
        memcpy(text, head, strlen(head));
        text[n - 1] = '\n';
        path = kdp_test_write_temp("config", ".yaml", text, n);
        ck_assert_int_eq(kdp_config_load(path, &c), 0);
        ck_assert_str_eq(kdp_config_get(c, "example", "a", NULL), "1");
}
END_TEST

static void line_dup_and_list(FILE *f, size_t i) {
        fprintf(f, "  devices: %zu\n  x%zu: [1]\n", i, i);
}

static void line_key_string(FILE *f, size_t i) {
        fprintf(f, "  k%zu: v%zu\n", i, i);
}

static void line_key_number(FILE *f, size_t i) {
        fprintf(f, "  k%zu: %zu\n", i, i);
}

/* `head` and then what line() writes for 0..n-1, as a temp file */
static char *write_many(const char *head, void (*line)(FILE *f, size_t i), size_t n) {
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        char *path;

        ck_assert_ptr_nonnull(f);
        fputs(head, f);
        for (size_t i = 0; i < n; i++)
                line(f, i);
        ck_assert_int_eq(fclose(f), 0);
        path = kdp_test_write_temp("config", ".yaml", text, size);
        return path;
}

START_TEST(test_config_load_logs_a_few_lines_per_problem_kind_and_counts_the_rest) {
        _cleanup_(kdp_test_unlink_freep) char *path = write_many("example:\n  devices: 1\n", line_dup_and_list, 1000);
        _cleanup_free_ char *log = load_fails(path, -EINVAL), *body = NULL;
        const char *p = log;

        /* file order, three of each kind, then one count per kind in order of first appearance */
        expect_file_error(&p, path, "line=3 key=\"example.devices\" reason=\"duplicate key\"");
        expect_file_error(&p, path, "line=4 key=\"example.x0\" reason=\"value must be a scalar\"");
        expect_file_error(&p, path, "line=5 key=\"example.devices\" reason=\"duplicate key\"");
        expect_file_error(&p, path, "line=6 key=\"example.x1\" reason=\"value must be a scalar\"");
        expect_file_error(&p, path, "line=7 key=\"example.devices\" reason=\"duplicate key\"");
        expect_file_error(&p, path, "line=8 key=\"example.x2\" reason=\"value must be a scalar\"");
        ck_assert_int_ge(asprintf(&body, "\"Omitted more problems of the config file\" path=\"%s\" reason=\"duplicate "
                                         "key\" omitted=997 err=\"Invalid argument\"", path), 0);
        kdp_test_expect_line(&p, 'E', "config.c", body);
        free(body);
        ck_assert_int_ge(asprintf(&body, "\"Omitted more problems of the config file\" path=\"%s\" reason=\"value "
                                         "must be a scalar\" omitted=997 err=\"Invalid argument\"", path), 0);
        kdp_test_expect_line(&p, 'E', "config.c", body);
        ck_assert_str_eq(p, "");
}
END_TEST

START_TEST(test_config_finds_every_key_of_a_large_file) {
        _cleanup_(kdp_test_unlink_freep) char *path = write_many("example:\n", line_key_string, KDP_CONFIG_SHAPE_ENTRIES_MAX);
        _cleanup_(kdp_config_freep) kdp_config *c = NULL;
        _cleanup_(kdp_config_freep) kdp_config *d = NULL;

        ck_assert_int_eq(kdp_config_load(path, &c), 0);
        ck_assert_int_eq(c->n_entries, KDP_CONFIG_SHAPE_ENTRIES_MAX);
        for (size_t i = 0; i < KDP_CONFIG_SHAPE_ENTRIES_MAX; i++) {
                char key[32], value[32];

                snprintf(key, sizeof(key), "k%zu", i);
                snprintf(value, sizeof(value), "v%zu", i);
                expect_origin_line(c, "example", key, value, path, (int) i + 2);
        }
        ck_assert_ptr_null(kdp_config_get(c, "example", "k4096", NULL));
        ck_assert_ptr_null(kdp_config_get(c, "exampl", "k1", NULL));

        /* overrides added later still win, also over one another */
        ck_assert_int_eq(kdp_config_add_override(c, "example.k777=a"), 0);
        ck_assert_int_eq(kdp_config_add_override(c, "example.k777=b"), 0);
        expect_value(c, "example", "k777", "b", "-o example.k777=b");

        ck_assert_int_eq(kdp_config_load(path, &d), 0);
        ck_assert(!kdp_config_section_equal(c, d, "example"));
        ck_assert_int_eq(kdp_config_add_override(d, "example.k777=b"), 0);
        ck_assert(kdp_config_section_equal(c, d, "example"));
}
END_TEST

/* The largest section the shape check lets through, and one key more, logged with where and which limit. */
START_TEST(test_config_load_refuses_a_section_past_the_entry_limit) {
        _cleanup_(kdp_test_unlink_freep) char *path = write_many("example:\n", line_key_string,
                                                                KDP_CONFIG_SHAPE_ENTRIES_MAX + 1);
        _cleanup_free_ char *log = load_fails(path, -EINVAL);
        const char *p = log;

        expect_file_error(&p, path, "line=4098 column=3 key=\"example\" reason=\"a mapping of more than 4096 keys\"");
        ck_assert_str_eq(p, "");
}
END_TEST

/* 16 levels reach "value must be a scalar" (the document is built); 17 are refused before it is. */
START_TEST(test_config_load_refuses_nesting_past_the_depth_limit) {
        _cleanup_(kdp_test_unlink_freep) char *at = write_yaml("example:\n  a: [[[[[[[[[[[[[[1]]]]]]]]]]]]]]\n");
        _cleanup_(kdp_test_unlink_freep) char *past = write_yaml("example:\n  a: [[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]\n");
        _cleanup_free_ char *log_at = load_fails(at, -EINVAL), *log_past = load_fails(past, -EINVAL);
        const char *p = log_at;

        expect_file_error(&p, at, "line=2 key=\"example.a\" reason=\"value must be a scalar\"");
        ck_assert_str_eq(p, "");
        p = log_past;
        expect_file_error(&p, past, "line=2 column=20 key=\"example.a[0][0][0][0][0][0][0][0][0][0][0][0][0][0]\" "
                                    "reason=\"nested deeper than 16 levels\"");
        ck_assert_str_eq(p, "");
}
END_TEST

START_TEST(test_config_check_section_logs_a_few_unknown_keys_and_counts_the_rest) {
        _cleanup_(kdp_test_unlink_freep) char *path = write_many("example:\n", line_key_number, 100);
        _cleanup_(kdp_config_freep) kdp_config *c = NULL;
        static const kdp_param_spec specs[] = { { "devices", "1", "" }, { 0 } };
        _cleanup_free_ char *log = NULL, *body = NULL;
        kdp_test_capture cap;
        const char *p;

        ck_assert_int_eq(kdp_config_load(path, &c), 0);
        kdp_test_capture_begin(&cap);
        ck_assert_int_eq(kdp_config_check_section(c, "example", specs), -EINVAL);
        log = kdp_test_capture_end(&cap);
        p = log;
        for (int i = 0; i < 3; i++) {
                free(body);
                ck_assert_int_ge(asprintf(&body, "\"Unknown config key\" key=\"example.k%d\" origin=\"%s:%d\" "
                                                 "err=\"Invalid argument\"", i, path, i + 2), 0);
                kdp_test_expect_line(&p, 'E', "config.c", body);
        }
        kdp_test_expect_line(&p, 'E', "config.c", "\"Omitted more unknown config keys\" section=\"example\" omitted=97 "
                                                  "err=\"Invalid argument\"");
        ck_assert_str_eq(p, "");
}
END_TEST

static Suite *config_suite(void) {
        Suite *s = suite_create("config");
        TCase *tc;

        tc = tcase_create("load");
        tcase_set_timeout(tc, 10);
        tcase_add_test(tc, test_config_load_reads_sections_keys_and_origins);
        tcase_add_test(tc, test_config_load_without_path_is_empty);
        tcase_add_loop_test(tc, test_config_load_treats_empty_file_and_empty_document_as_empty_config, 0,
                            (int) KDP_ELEMENTSOF(empty_documents));
        tcase_add_test(tc, test_config_load_treats_empty_json_file_as_empty_config);
        tcase_add_test(tc, test_config_load_stores_null_values_as_empty_strings);
        tcase_add_test(tc, test_config_load_reads_json_by_extension);
        suite_add_tcase(s, tc);

        tc = tcase_create("load-errors");
        tcase_set_timeout(tc, 10);
        tcase_add_test(tc, test_config_load_rejects_yaml_only_syntax_in_a_json_file);
        tcase_add_test(tc, test_config_load_rejects_json_syntax_error_naming_line_and_column);
        tcase_add_test(tc, test_config_load_rejects_yaml_syntax_error_naming_line_and_column);
        tcase_add_test(tc, test_config_load_rejects_tab_indentation);
        tcase_add_test(tc, test_config_load_rejects_duplicate_key_naming_line_and_key);
        tcase_add_test(tc, test_config_load_rejects_duplicate_key_in_json);
        tcase_add_test(tc, test_config_load_rejects_duplicate_section);
        tcase_add_test(tc, test_config_load_rejects_value_that_is_not_a_scalar);
        tcase_add_test(tc, test_config_load_rejects_top_level_that_is_not_a_mapping);
        tcase_add_test(tc, test_config_load_rejects_section_that_is_not_a_mapping);
        tcase_add_test(tc, test_config_load_rejects_aliases_and_merge_keys);
        tcase_add_test(tc, test_config_load_rejects_bad_keys);
        tcase_add_test(tc, test_config_load_rejects_nul_byte_in_value);
        tcase_add_test(tc, test_config_load_rejects_more_than_one_document);
        tcase_add_test(tc, test_config_load_reports_every_problem_of_the_file);
        tcase_add_test(tc, test_config_load_refuses_a_directive_that_is_not_utf8);
        tcase_add_test(tc, test_config_load_refuses_tabs_before_libfyaml_sees_them);
        tcase_add_test(tc, test_config_load_refuses_escaped_quotes_libfyaml_leaks);
        tcase_add_test(tc, test_config_load_fails_on_missing_file_or_directory);
        tcase_add_test(tc, test_config_load_fails_on_unreadable_file_with_eacces);
        tcase_add_loop_test(tc, test_config_load_rejects_bytes_the_parser_would_not_read, 0,
                            (int) KDP_ELEMENTSOF(unread_bytes));
        tcase_add_test(tc, test_config_load_refuses_fifo_and_character_device_without_blocking);
        tcase_add_test(tc, test_config_load_refuses_file_over_the_size_limit);
        tcase_add_test(tc, test_config_load_reads_file_at_the_size_limit);
        tcase_add_test(tc, test_config_load_logs_a_few_lines_per_problem_kind_and_counts_the_rest);
        suite_add_tcase(s, tc);

        tc = tcase_create("large");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_config_finds_every_key_of_a_large_file);
        tcase_add_test(tc, test_config_load_refuses_a_section_past_the_entry_limit);
        tcase_add_test(tc, test_config_load_refuses_nesting_past_the_depth_limit);
        tcase_add_test(tc, test_config_check_section_logs_a_few_unknown_keys_and_counts_the_rest);
        suite_add_tcase(s, tc);

        tc = tcase_create("override");
        tcase_set_timeout(tc, 10);
        tcase_add_test(tc, test_config_add_override_adds_keys_and_later_values_win);
        tcase_add_test(tc, test_config_add_override_works_without_a_file);
        tcase_add_loop_test(tc, test_config_add_override_rejects_assignment_of_the_wrong_shape, 0,
                            (int) KDP_ELEMENTSOF(bad_overrides));
        tcase_add_test(tc, test_config_add_override_and_get_reject_null_arguments);
        suite_add_tcase(s, tc);

        tc = tcase_create("section");
        tcase_set_timeout(tc, 10);
        tcase_add_test(tc, test_config_check_section_accepts_declared_keys_and_ignores_other_sections);
        tcase_add_test(tc, test_config_check_section_rejects_unknown_keys_naming_each_origin);
        tcase_add_test(tc, test_config_check_section_without_specs_rejects_every_key);
        tcase_add_test(tc, test_config_section_equal_compares_effective_values);
        suite_add_tcase(s, tc);

        return s;
}

int main(void) {
        return kdp_test_run(config_suite());
}
