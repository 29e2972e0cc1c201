/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * skip-log.c: a warning about a skipped entry is written when the problem
 * starts or changes, its end is reported once, and nothing repeats while it
 * lasts; scopes are separate; without a log every warning is written.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdp/cleanup.h>
#include <kdp/log.h>

#include "skip-log.h"

#include "kdp-test.h"

static const kdp_log_field prefix = KDP_F_STR("backend", "gpu");

/* Collects the keys kdp_skip_log_end() reports, "a,b," */
typedef struct ended_keys {
        char text[256];
} ended_keys;

static void on_ended(const char *key, void *userdata) {
        ended_keys *e = userdata;
        size_t n = strlen(e->text);

        (void) snprintf(e->text + n, sizeof(e->text) - n, "%s,", key);
}

/*
 * One pass over `scope` that warns about each key of `keys` ("a b", one problem each: "unreadable"
 * unless `problem` says otherwise for key "a"); returns the log, and the ended keys in *ended.
 */
static char *pass(kdp_skip_log *s, const char *scope, const char *const *keys, const char *problem,
                  ended_keys *ended) {
        kdp_test_capture c;

        *ended = (ended_keys){ 0 };
        kdp_test_capture_begin(&c);
        kdp_skip_log_begin(s, scope);
        for (size_t i = 0; keys && keys[i]; i++)
                KDP_SKIP_LOG_WARN(s, scope, keys[i], &prefix, strcmp(keys[i], "c") == 0 ? -ENOENT : 0,
                                  "Skipped thing", KDP_F_STR("thing", keys[i]),
                                  KDP_F_STR("reason", strcmp(keys[i], "a") == 0 && problem ? problem : "unreadable"),
                                  KDP_F_INT("tries", 1));
        kdp_skip_log_end(s, scope, on_ended, ended);
        return kdp_test_capture_end(&c);
}

START_TEST(test_skip_log_warns_once_and_reports_the_end_once) {
        _cleanup_(kdp_skip_log_freep) kdp_skip_log *s = NULL;
        _cleanup_free_ char *log = NULL;
        ended_keys ended;
        const char *p;

        ck_assert_int_eq(kdp_skip_log_new(&s), 0);
        log = pass(s, "pci", (const char *const[]){ "a", "b", "c", NULL }, NULL, &ended);
        p = log;
        kdp_test_expect_line(&p, 'W', "test-skip-log.c",
                             "\"Skipped thing\" backend=\"gpu\" thing=\"a\" reason=\"unreadable\" tries=1");
        kdp_test_expect_line(&p, 'W', "test-skip-log.c",
                             "\"Skipped thing\" backend=\"gpu\" thing=\"b\" reason=\"unreadable\" tries=1");
        kdp_test_expect_line(&p, 'W', "test-skip-log.c",
                             "\"Skipped thing\" backend=\"gpu\" thing=\"c\" reason=\"unreadable\" tries=1 "
                             "err=\"No such file or directory\"");
        ck_assert_str_eq(p, "");
        ck_assert_str_eq(ended.text, "");

        /* the same problems twice more: nothing */
        for (int i = 0; i < 2; i++) {
                free(log);
                log = pass(s, "pci", (const char *const[]){ "c", "b", "a", NULL }, NULL, &ended);
                ck_assert_str_eq(log, "");
                ck_assert_str_eq(ended.text, "");
        }

        /* b and c are over (in the order they were first warned about); a has another problem */
        free(log);
        log = pass(s, "pci", (const char *const[]){ "a", NULL }, "malformed", &ended);
        p = log;
        kdp_test_expect_line(&p, 'W', "test-skip-log.c",
                             "\"Skipped thing\" backend=\"gpu\" thing=\"a\" reason=\"malformed\" tries=1");
        ck_assert_str_eq(p, "");
        ck_assert_str_eq(ended.text, "b,c,");

        /* b comes back: warned about again */
        free(log);
        log = pass(s, "pci", (const char *const[]){ "a", "b", NULL }, "malformed", &ended);
        p = log;
        kdp_test_expect_line(&p, 'W', "test-skip-log.c",
                             "\"Skipped thing\" backend=\"gpu\" thing=\"b\" reason=\"unreadable\" tries=1");
        ck_assert_str_eq(p, "");
        ck_assert_str_eq(ended.text, "");

        /* all over, then nothing more */
        free(log);
        log = pass(s, "pci", NULL, NULL, &ended);
        ck_assert_str_eq(log, "");
        ck_assert_str_eq(ended.text, "a,b,");
        free(log);
        log = pass(s, "pci", NULL, NULL, &ended);
        ck_assert_str_eq(log, "");
        ck_assert_str_eq(ended.text, "");
}
END_TEST

START_TEST(test_skip_log_keeps_scopes_apart) {
        _cleanup_(kdp_skip_log_freep) kdp_skip_log *s = NULL;
        _cleanup_free_ char *log = NULL;
        ended_keys ended;
        const char *p;

        ck_assert_int_eq(kdp_skip_log_new(&s), 0);
        free(pass(s, "pci 0000:3d:00.0 drm", (const char *const[]){ "a", NULL }, NULL, &ended));
        /* the same key in another scope is another entry */
        log = pass(s, "pci 0000:3e:00.0 drm", (const char *const[]){ "a", NULL }, NULL, &ended);
        p = log;
        kdp_test_expect_line(&p, 'W', "test-skip-log.c",
                             "\"Skipped thing\" backend=\"gpu\" thing=\"a\" reason=\"unreadable\" tries=1");
        ck_assert_str_eq(p, "");

        /* a pass over one scope ends nothing of the other */
        free(log);
        log = pass(s, "pci 0000:3e:00.0 drm", NULL, NULL, &ended);
        ck_assert_str_eq(ended.text, "a,");
        free(log);
        log = pass(s, "pci 0000:3d:00.0 drm", (const char *const[]){ "a", NULL }, NULL, &ended);
        ck_assert_str_eq(log, "");
        ck_assert_str_eq(ended.text, "");
}
END_TEST

/* A pass that stops before its end (out of memory mid-way) ends nothing; the next full one does. */
START_TEST(test_skip_log_unfinished_pass_ends_nothing) {
        _cleanup_(kdp_skip_log_freep) kdp_skip_log *s = NULL;
        _cleanup_free_ char *log = NULL;
        ended_keys ended;

        ck_assert_int_eq(kdp_skip_log_new(&s), 0);
        free(pass(s, "pci", (const char *const[]){ "a", NULL }, NULL, &ended));
        kdp_skip_log_begin(s, "pci");           /* and no end */
        log = pass(s, "pci", (const char *const[]){ "a", NULL }, NULL, &ended);
        ck_assert_str_eq(log, "");
        ck_assert_str_eq(ended.text, "");

        free(log);
        log = pass(s, "pci", NULL, NULL, &ended);
        ck_assert_str_eq(log, "");
        ck_assert_str_eq(ended.text, "a,");
}
END_TEST

START_TEST(test_skip_log_null_warns_every_time) {
        _cleanup_free_ char *log = NULL;
        ended_keys ended;
        const char *p;

        for (int i = 0; i < 2; i++) {
                free(log);
                log = pass(NULL, "pci", (const char *const[]){ "a", NULL }, NULL, &ended);
                p = log;
                kdp_test_expect_line(&p, 'W', "test-skip-log.c",
                                     "\"Skipped thing\" backend=\"gpu\" thing=\"a\" reason=\"unreadable\" tries=1");
                ck_assert_str_eq(p, "");
                ck_assert_str_eq(ended.text, "");
        }
}
END_TEST

/* Past KDP_SKIP_LOG_MAX entries, warnings are written every time (and nothing is lost before). */
START_TEST(test_skip_log_remembers_a_bounded_number) {
        _cleanup_(kdp_skip_log_freep) kdp_skip_log *s = NULL;
        _cleanup_free_ char *log = NULL;
        kdp_test_capture c;
        char key[32];
        const char *p;

        ck_assert_int_eq(kdp_skip_log_new(&s), 0);
        for (int round = 0; round < 2; round++) {
                free(log);
                kdp_test_capture_begin(&c);
                kdp_skip_log_begin(s, "pci");
                for (int i = 0; i <= KDP_SKIP_LOG_MAX; i++) {
                        (void) snprintf(key, sizeof(key), "k%d", i);
                        KDP_SKIP_LOG_WARN(s, "pci", key, NULL, 0, "Skipped thing", KDP_F_STR("thing", key));
                }
                kdp_skip_log_end(s, "pci", NULL, NULL);
                log = kdp_test_capture_end(&c);
                p = log;
                if (round == 0) {
                        /* all of them the first time */
                        for (int i = 0; i < KDP_SKIP_LOG_MAX; i++)
                                p = strchr(p, '\n') + 1;
                }
                (void) snprintf(key, sizeof(key), "\"Skipped thing\" thing=\"k%d\"", KDP_SKIP_LOG_MAX);
                kdp_test_expect_line(&p, 'W', "test-skip-log.c", key);
                ck_assert_str_eq(p, "");
        }
}
END_TEST

static Suite *skip_log_suite(void) {
        Suite *s = suite_create("skip-log");
        TCase *tc = tcase_create("core");

        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_skip_log_warns_once_and_reports_the_end_once);
        tcase_add_test(tc, test_skip_log_keeps_scopes_apart);
        tcase_add_test(tc, test_skip_log_unfinished_pass_ends_nothing);
        tcase_add_test(tc, test_skip_log_null_warns_every_time);
        tcase_add_test(tc, test_skip_log_remembers_a_bounded_number);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return kdp_test_run(skip_log_suite());
}
