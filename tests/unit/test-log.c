/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <kdp/cleanup.h>
#include <kdp/log.h>

#include "kdp-test.h"

/* ---- helpers ---- */

/*
 * Asserts that `line` is one klog line "Lmmdd hh:mm:ss.uuuuuu PID file:line] body\n"
 * written by this process with the given level, file and line, and returns
 * the body (without the newline; free()).
 */
static char *klog_body(const char *line, char level, const char *file, int lineno) {
        static const char *const pattern =
                "^([IWE])([0-9]{2})([0-9]{2}) ([0-9]{2}):([0-9]{2}):([0-9]{2})\\.([0-9]{6}) (.{7}) ([^ :]+):([0-9]+)\\] ([^\n]*)\n$";
        char pid[16], where[256];
        regmatch_t m[12];
        regex_t re;
        int month, day, hour, min, sec;

        ck_assert_int_eq(regcomp(&re, pattern, REG_EXTENDED), 0);
        ck_assert_msg(regexec(&re, line, 12, m, 0) == 0, "not a klog line: '%s'", line);
        regfree(&re);

        ck_assert_int_eq(line[0], level);
        ck_assert_int_eq(sscanf(line + 1, "%2d%2d %2d:%2d:%2d", &month, &day, &hour, &min, &sec), 5);
        ck_assert(month >= 1 && month <= 12);
        ck_assert(day >= 1 && day <= 31);
        ck_assert(hour <= 23 && min <= 59 && sec <= 60);

        (void) snprintf(pid, sizeof(pid), "%7d", (int) getpid());
        ck_assert_int_eq(m[8].rm_eo - m[8].rm_so, 7);
        ck_assert(strncmp(line + m[8].rm_so, pid, 7) == 0);

        (void) snprintf(where, sizeof(where), "%s:%d", file, lineno);
        ck_assert_int_eq(m[10].rm_eo - m[9].rm_so, (regoff_t) strlen(where));
        ck_assert(strncmp(line + m[9].rm_so, where, strlen(where)) == 0);

        return strndup(line + m[11].rm_so, (size_t) (m[11].rm_eo - m[11].rm_so));
}

/* Emits one line through kdp_log_emit_fd into a memfd and returns its body. */
static char *emit_body(kdp_log_level level, int err, const char *msg, const kdp_log_field *prefix, size_t n_prefix,
                       const kdp_log_field *fields, size_t n_fields, char expect_level) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *text = NULL;

        fd = memfd_create("log", MFD_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(kdp_log_emit_fd(fd, level, err, "/src/framework/src/daemon/server.c", 88, msg,
                                         prefix, n_prefix, fields, n_fields), err);
        text = kdp_test_fd_text(fd);
        return klog_body(text, expect_level, "server.c", 88);
}

static void teardown(void) {
        kdp_log_set_verbosity(0);
}

/* ---- format ---- */

START_TEST(test_log_emit_fd_writes_klog_header_quoted_message_and_fields) {
        _cleanup_free_ char *body = NULL;
        const kdp_log_field fields[] = {
                KDP_F_STR("resource", "example.com/gpu"),
                KDP_F_STR("socket", "kdp-gpu.sock"),
        };

        body = emit_body(KDP_LOG_INFO, 0, "Registered with kubelet", NULL, 0, fields, 2, 'I');
        ck_assert_str_eq(body, "\"Registered with kubelet\" resource=\"example.com/gpu\" socket=\"kdp-gpu.sock\"");
}
END_TEST

START_TEST(test_log_emit_fd_uses_local_time_now) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *text = NULL, *body = NULL;
        char before[32], after[32];
        struct timespec ts;
        struct tm tm;

        ck_assert_int_eq(setenv("TZ", "IST-5:30", 1), 0);       /* UTC+05:30 without tzdata: not UTC */
        tzset();

        fd = memfd_create("log", MFD_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(clock_gettime(CLOCK_REALTIME, &ts), 0);
        ck_assert_ptr_nonnull(localtime_r(&ts.tv_sec, &tm));
        ck_assert_uint_gt(strftime(before, sizeof(before), "%m%d %H:%M:%S", &tm), 0);
        (void) kdp_log_emit_fd(fd, KDP_LOG_INFO, 0, "t.c", 1, "Started", NULL, 0, NULL, 0);
        ck_assert_int_eq(clock_gettime(CLOCK_REALTIME, &ts), 0);
        ck_assert_ptr_nonnull(localtime_r(&ts.tv_sec, &tm));
        ck_assert_uint_gt(strftime(after, sizeof(after), "%m%d %H:%M:%S", &tm), 0);

        text = kdp_test_fd_text(fd);
        body = klog_body(text, 'I', "t.c", 1);
        ck_assert_str_eq(body, "\"Started\"");
        /* the seconds printed are those of before or after */
        ck_assert_msg(strncmp(text + 1, before, 13) == 0 || strncmp(text + 1, after, 13) == 0,
                      "'%.14s' is neither '%s' nor '%s'", text + 1, before, after);
}
END_TEST

START_TEST(test_log_emit_fd_uses_basename_of_file) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *text = NULL, *body = NULL;

        fd = memfd_create("log", MFD_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        (void) kdp_log_emit_fd(fd, KDP_LOG_WARNING, 0, "plain.c", 7, "Skipped device without driver", NULL, 0,
                               NULL, 0);
        text = kdp_test_fd_text(fd);
        body = klog_body(text, 'W', "plain.c", 7);
        ck_assert_str_eq(body, "\"Skipped device without driver\"");
}
END_TEST

START_TEST(test_log_emit_fd_prints_unknown_file_as_question_marks) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *text = NULL, *body = NULL;

        fd = memfd_create("log", MFD_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        (void) kdp_log_emit_fd(fd, KDP_LOG_INFO, 0, NULL, 9, "Started", NULL, 0, NULL, 0);
        text = kdp_test_fd_text(fd);
        body = klog_body(text, 'I', "???", 9);
        ck_assert_str_eq(body, "\"Started\"");
}
END_TEST

START_TEST(test_log_emit_fd_prints_int_fields_unquoted) {
        _cleanup_free_ char *body = NULL;
        const kdp_log_field fields[] = {
                KDP_F_INT("numaNode", 0),
                KDP_F_INT("delta", -42),
                KDP_F_INT("min", INT64_MIN),
                KDP_F_INT("max", INT64_MAX),
        };

        body = emit_body(KDP_LOG_INFO, 0, "Scanned device", NULL, 0, fields, 4, 'I');
        ck_assert_str_eq(body, "\"Scanned device\" numaNode=0 delta=-42 min=-9223372036854775808 "
                               "max=9223372036854775807");
}
END_TEST

START_TEST(test_log_emit_fd_puts_prefix_then_fields_then_err) {
        _cleanup_free_ char *body = NULL;
        const kdp_log_field prefix[] = { KDP_F_STR("backend", "gpu") };
        const kdp_log_field fields[] = { KDP_F_STR("path", "/dev/dri"), KDP_F_INT("n", 3) };

        body = emit_body(KDP_LOG_ERROR, -ENOENT, "Failed to open device directory", prefix, 1, fields, 2, 'E');
        ck_assert_str_eq(body, "\"Failed to open device directory\" backend=\"gpu\" path=\"/dev/dri\" n=3 "
                               "err=\"No such file or directory\"");
}
END_TEST

START_TEST(test_log_emit_fd_returns_err_and_omits_err_field_when_zero) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *text = NULL, *body = NULL;

        fd = memfd_create("log", MFD_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(kdp_log_emit_fd(fd, KDP_LOG_ERROR, -EBUSY, "a.c", 1, "Failed", NULL, 0, NULL, 0), -EBUSY);
        ck_assert_int_eq(kdp_log_emit_fd(-1, KDP_LOG_ERROR, -EIO, "a.c", 1, "Failed", NULL, 0, NULL, 0), -EIO);
        text = kdp_test_fd_text(fd);
        body = klog_body(text, 'E', "a.c", 1);
        ck_assert_str_eq(body, "\"Failed\" err=\"Device or resource busy\"");

        free(body);
        body = emit_body(KDP_LOG_INFO, 0, "Done", NULL, 0, NULL, 0, 'I');
        ck_assert_str_eq(body, "\"Done\"");
}
END_TEST

START_TEST(test_log_emit_fd_prints_null_strings_as_empty) {
        _cleanup_free_ char *body = NULL;
        const kdp_log_field fields[] = { KDP_F_STR("device", NULL) };

        body = emit_body(KDP_LOG_INFO, 0, NULL, NULL, 0, fields, 1, 'I');
        ck_assert_str_eq(body, "\"\" device=\"\"");
}
END_TEST

START_TEST(test_log_emit_fd_skips_fields_of_type_none) {
        _cleanup_free_ char *body = NULL;
        const kdp_log_field fields[] = {
                KDP_F_STR("a", "1"),
                { .key = "line", .type = KDP_LOG_FIELD_NONE, .num = 3 },
                KDP_F_INT("b", 2),
        };

        body = emit_body(KDP_LOG_INFO, 0, "Loaded", NULL, 0, fields, 3, 'I');
        ck_assert_str_eq(body, "\"Loaded\" a=\"1\" b=2");
}
END_TEST

START_TEST(test_log_emit_fd_maps_unknown_level_to_error) {
        _cleanup_free_ char *body = NULL;

        body = emit_body((kdp_log_level) 'X', 0, "Odd", NULL, 0, NULL, 0, 'E');
        ck_assert_str_eq(body, "\"Odd\"");
}
END_TEST

static const struct {
        const char *in;
        const char *out;
} quote_table[] = {
        { "plain", "\"plain\"" },
        { "say \"hi\"", "\"say \\\"hi\\\"\"" },
        { "back\\slash", "\"back\\\\slash\"" },
        { "two\nlines", "\"two\\nlines\"" },
        { "tab\there", "\"tab\\there\"" },
        { "cr\r", "\"cr\\r\"" },
        { "\a\b\f\v", "\"\\a\\b\\f\\v\"" },
        { "\x01\x1f", "\"\\x01\\x1f\"" },
        { "del\x7f", "\"del\\x7f\"" },
        { "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"" },
        { "bad\xff", "\"bad\\xff\"" },
        { "trunc\xe2\x82", "\"trunc\\xe2\\x82\"" },
        { "overlong\xc0\xaf", "\"overlong\\xc0\\xaf\"" },
        { "surrogate\xed\xa0\x80", "\"surrogate\\xed\\xa0\\x80\"" },
        { "c1\xc2\x85", "\"c1\\u0085\"" },
        { "ls\xe2\x80\xa8", "\"ls\\u2028\"" },
        { "", "\"\"" },
};

START_TEST(test_log_emit_fd_quotes_strings_like_go_percent_q) {
        _cleanup_free_ char *body = NULL, *expect = NULL;
        const kdp_log_field fields[] = { KDP_F_STR("v", quote_table[_i].in) };

        body = emit_body(KDP_LOG_INFO, 0, quote_table[_i].in, NULL, 0, fields, 1, 'I');
        ck_assert_int_ge(asprintf(&expect, "%s v=%s", quote_table[_i].out, quote_table[_i].out), 0);
        ck_assert_str_eq(body, expect);
}
END_TEST

START_TEST(test_log_emit_fd_writes_a_long_line_whole_in_one_write) {
        _cleanup_free_ char *value = NULL, *buf = NULL, *body = NULL, *expect = NULL;
        const size_t n = 20000;
        int sv[2];
        ssize_t len;

        /* SOCK_SEQPACKET keeps write boundaries: one recv() is one write() */
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        value = malloc(n + 1);
        ck_assert_ptr_nonnull(value);
        memset(value, 'x', n);
        value[n - 1] = '\n';            /* escaped as two characters */
        value[n] = '\0';
        buf = malloc(4 * n);
        ck_assert_ptr_nonnull(buf);

        (void) kdp_log_emit_fd(sv[0], KDP_LOG_INFO, 0, "/x/server.c", 88, "Dumped", NULL, 0,
                               &KDP_F_STR("value", value), 1);
        len = recv(sv[1], buf, 4 * n, MSG_DONTWAIT);
        ck_assert_int_gt(len, (ssize_t) n);
        buf[len] = '\0';
        ck_assert_int_eq(recv(sv[1], buf + len + 1, 16, MSG_DONTWAIT), -1);
        ck_assert_int_eq(errno, EAGAIN);

        body = klog_body(buf, 'I', "server.c", 88);
        value[n - 1] = '\0';
        ck_assert_int_ge(asprintf(&expect, "\"Dumped\" value=\"%s\\n\"", value), 0);
        ck_assert_str_eq(body, expect);

        (void) close(sv[0]);
        (void) close(sv[1]);
}
END_TEST

START_TEST(test_log_emit_fd_preserves_errno) {
        _cleanup_close_ int fd = -1;

        fd = memfd_create("log", MFD_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        errno = ENOTTY;
        (void) kdp_log_emit_fd(fd, KDP_LOG_ERROR, -EIO, "a.c", 1, "Failed", NULL, 0, NULL, 0);
        ck_assert_int_eq(errno, ENOTTY);
        errno = ENOTTY;
        (void) kdp_log_emit_fd(999, KDP_LOG_ERROR, -EIO, "a.c", 1, "Failed", NULL, 0, NULL, 0);   /* EBADF */
        ck_assert_int_eq(errno, ENOTTY);
}
END_TEST

/* ---- macros and verbosity ---- */

START_TEST(test_log_verbosity_defaults_to_zero_and_is_settable) {
        ck_assert_int_eq(kdp_log_get_verbosity(), 0);
        kdp_log_set_verbosity(4);
        ck_assert_int_eq(kdp_log_get_verbosity(), 4);
        kdp_log_set_verbosity(0);
        ck_assert_int_eq(kdp_log_get_verbosity(), 0);
}
END_TEST

START_TEST(test_log_macros_write_to_stderr_with_caller_file_and_line) {
        _cleanup_free_ char *text = NULL, *body = NULL;
        kdp_test_capture c;
        int r, line;

        kdp_test_capture_begin(&c);
        r = kdp_log_error(-EACCES, "Failed to read config", KDP_F_STR("path", "/etc/kdp.yaml")); line = __LINE__;
        text = kdp_test_capture_end(&c);

        ck_assert_int_eq(r, -EACCES);
        body = klog_body(text, 'E', "test-log.c", line);
        ck_assert_str_eq(body, "\"Failed to read config\" path=\"/etc/kdp.yaml\" err=\"Permission denied\"");
}
END_TEST

START_TEST(test_log_info_and_warning_macros_take_no_fields) {
        _cleanup_free_ char *text = NULL, *body = NULL;
        char *second;
        kdp_test_capture c;
        int l1, l2;

        kdp_test_capture_begin(&c);
        kdp_log_info("Started"); l1 = __LINE__;
        kdp_log_warning("Stopped", KDP_F_INT("signal", 15)); l2 = __LINE__;
        text = kdp_test_capture_end(&c);

        second = strchr(text, '\n');
        ck_assert_ptr_nonnull(second);
        second = strdup(second + 1);
        strchr(text, '\n')[1] = '\0';

        body = klog_body(text, 'I', "test-log.c", l1);
        ck_assert_str_eq(body, "\"Started\"");
        free(body);
        body = klog_body(second, 'W', "test-log.c", l2);
        ck_assert_str_eq(body, "\"Stopped\" signal=15");
        free(second);
}
END_TEST

START_TEST(test_log_warning_errno_macro_adds_err_and_returns_r) {
        _cleanup_free_ char *text = NULL, *body = NULL;
        kdp_test_capture c;
        int r, line;

        kdp_test_capture_begin(&c);
        r = kdp_log_warning_errno(-EEXIST, "Rejected device", KDP_F_STR("device", "d0")); line = __LINE__;
        text = kdp_test_capture_end(&c);

        ck_assert_int_eq(r, -EEXIST);
        body = klog_body(text, 'W', "test-log.c", line);
        ck_assert_str_eq(body, "\"Rejected device\" device=\"d0\" err=\"File exists\"");
}
END_TEST

START_TEST(test_log_v_drops_messages_above_verbosity) {
        _cleanup_free_ char *text = NULL, *body = NULL;
        kdp_test_capture c;
        int line;

        kdp_test_capture_begin(&c);
        kdp_log_v(4, "Scanned device", KDP_F_STR("device", "hidden"));
        kdp_log_set_verbosity(4);
        kdp_log_v(5, "Scanned device", KDP_F_STR("device", "hidden"));
        kdp_log_v(4, "Scanned device", KDP_F_STR("device", "shown")); line = __LINE__;
        text = kdp_test_capture_end(&c);

        body = klog_body(text, 'I', "test-log.c", line);
        ck_assert_str_eq(body, "\"Scanned device\" device=\"shown\"");
}
END_TEST

static Suite *log_suite(void) {
        Suite *s = suite_create("log");
        TCase *tc;

        tc = tcase_create("format");
        tcase_set_timeout(tc, 10);
        tcase_add_test(tc, test_log_emit_fd_writes_klog_header_quoted_message_and_fields);
        tcase_add_test(tc, test_log_emit_fd_uses_local_time_now);
        tcase_add_test(tc, test_log_emit_fd_uses_basename_of_file);
        tcase_add_test(tc, test_log_emit_fd_prints_unknown_file_as_question_marks);
        tcase_add_test(tc, test_log_emit_fd_prints_int_fields_unquoted);
        tcase_add_test(tc, test_log_emit_fd_puts_prefix_then_fields_then_err);
        tcase_add_test(tc, test_log_emit_fd_returns_err_and_omits_err_field_when_zero);
        tcase_add_test(tc, test_log_emit_fd_prints_null_strings_as_empty);
        tcase_add_test(tc, test_log_emit_fd_skips_fields_of_type_none);
        tcase_add_test(tc, test_log_emit_fd_maps_unknown_level_to_error);
        tcase_add_loop_test(tc, test_log_emit_fd_quotes_strings_like_go_percent_q, 0, (int) KDP_ELEMENTSOF(quote_table));
        tcase_add_test(tc, test_log_emit_fd_writes_a_long_line_whole_in_one_write);
        tcase_add_test(tc, test_log_emit_fd_preserves_errno);
        suite_add_tcase(s, tc);

        tc = tcase_create("macros");
        tcase_set_timeout(tc, 10);
        tcase_add_checked_fixture(tc, NULL, teardown);
        tcase_add_test(tc, test_log_verbosity_defaults_to_zero_and_is_settable);
        tcase_add_test(tc, test_log_macros_write_to_stderr_with_caller_file_and_line);
        tcase_add_test(tc, test_log_info_and_warning_macros_take_no_fields);
        tcase_add_test(tc, test_log_warning_errno_macro_adds_err_and_returns_r);
        tcase_add_test(tc, test_log_v_drops_messages_above_verbosity);
        suite_add_tcase(s, tc);

        return s;
}

int main(void) {
        return kdp_test_run(log_suite());
}
