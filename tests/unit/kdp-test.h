/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers shared by the Check unit tests (tests/unit/test-*.c).
 *
 * Header-only on purpose: every helper is static inline, so each test program
 * compiles what it uses and tests/unit/CMakeLists.txt (one program per
 * test-*.c) needs no extra source. Helpers fail the running test through
 * ck_assert, so call them only from inside a test.
 *
 *   kdp_test_capture c;
 *   kdp_test_capture_begin(&c);                 stderr goes to a memfd
 *   ...code that logs...
 *   log = kdp_test_capture_end(&c);             stderr restored; what was written (free())
 *   p = log;
 *   kdp_test_expect_line(&p, 'W', "device-tree.c", "\"Rejected resource\" resource=\"\" err=\"...\"");
 *
 *   int main(void) {
 *           return kdp_test_run(foo_suite());
 *   }
 */
#pragma once

#include <check.h>
#include <fcntl.h>
#include <ftw.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "device-tree.h"

/* ---- files ---- */

/* Reads everything written to `fd` (a memfd or regular file) from offset 0, NUL-terminated (free()). */
static inline char *kdp_test_fd_text(int fd) {
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);
        char chunk[4096];
        off_t off = 0;
        ssize_t n;

        ck_assert_ptr_nonnull(m);
        while ((n = pread(fd, chunk, sizeof(chunk), off)) > 0) {
                ck_assert_uint_eq(fwrite(chunk, 1, (size_t) n, m), (size_t) n);
                off += n;
        }
        ck_assert_int_eq(n, 0);
        ck_assert_int_eq(fclose(m), 0);
        return buf;
}

/*
 * Writes `len` bytes of `content` to a new file /tmp/kdp-test-<name>-XXXXXX<suffix> and returns its path
 * (free(); pair with _cleanup_(kdp_test_unlink_freep)).
 */
static inline char *kdp_test_write_temp(const char *name, const char *suffix, const char *content, size_t len) {
        char *path = NULL;
        int fd;

        ck_assert_int_ge(asprintf(&path, "/tmp/kdp-test-%s-XXXXXX%s", name, suffix), 0);
        fd = mkostemps(path, (int) strlen(suffix), O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, content, len), (ssize_t) len);
        ck_assert_int_eq(close(fd), 0);
        return path;
}

/* For _cleanup_(): unlinks the file *path names, if any, and frees the path. */
static inline void kdp_test_unlink_freep(char **path) {
        if (*path)
                (void) unlink(*path);
        free(*path);
}

static inline int kdp_test_rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

/* For _cleanup_(): removes the directory tree *dir names, if any (asserting that worked), and frees the path. */
static inline void kdp_test_rm_rfp(char **dir) {
        if (*dir)
                ck_assert_int_eq(nftw(*dir, kdp_test_rm_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
        free(*dir);
}

/* ---- stderr capture ---- */

typedef struct kdp_test_capture {
        int fd;         /* the memfd stderr points at meanwhile */
        int saved;      /* the real stderr */
} kdp_test_capture;

/* Points stderr at a fresh memfd until kdp_test_capture_end(). */
static inline void kdp_test_capture_begin(kdp_test_capture *c) {
        c->fd = memfd_create("stderr", MFD_CLOEXEC);
        ck_assert_int_ge(c->fd, 0);
        c->saved = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
        ck_assert_int_ge(c->saved, 0);
        ck_assert_int_eq(dup2(c->fd, STDERR_FILENO), STDERR_FILENO);
}

/* The not-served notes of a finished scan's tree, one a line: "<address>: <reason>" (free()). */
static inline char *kdp_test_not_served_text(const kdp_device_tree *tree) {
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);

        ck_assert_ptr_nonnull(m);
        for (size_t i = 0; i < tree->n_notes; i++) {
                ck_assert_int_eq(tree->notes[i].kind, KDP_TREE_NOTE_NOT_SERVED);
                fprintf(m, "%s: %s\n", tree->notes[i].key, tree->notes[i].text);
        }
        ck_assert_int_eq(fclose(m), 0);
        return buf;
}

/* Restores stderr and returns what was written meanwhile (free()). */
static inline char *kdp_test_capture_end(kdp_test_capture *c) {
        char *text;

        ck_assert_int_eq(dup2(c->saved, STDERR_FILENO), STDERR_FILENO);
        (void) close(c->saved);
        text = kdp_test_fd_text(c->fd);
        (void) close(c->fd);
        return text;
}

/* ---- log lines ---- */

/*
 * If `text` starts with a klog line "Lmmdd hh:mm:ss.uuuuuu PID file:line] body\n" of `level` from `file`
 * (any line number), where its body starts; else NULL.
 */
static inline const char *kdp_test_line_body(const char *text, char level, const char *file) {
        char pattern[512];
        regmatch_t m[1];
        regex_t re;
        int r;

        (void) snprintf(pattern, sizeof(pattern),
                        "^%c[0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{6} [ 0-9]{6}[0-9] %s:[0-9]+\\] ", level, file);
        ck_assert_int_eq(regcomp(&re, pattern, REG_EXTENDED), 0);
        r = regexec(&re, text, 1, m, 0);
        regfree(&re);
        return r == 0 ? text + m[0].rm_eo : NULL;
}

/*
 * Checks that *text starts with one klog line of `level` from `file` (see kdp_test_line_body()) whose
 * body is exactly `body`, and moves *text past it.
 */
static inline void kdp_test_expect_line(const char **text, char level, const char *file, const char *body) {
        const char *b = kdp_test_line_body(*text, level, file), *nl;

        ck_assert_msg(b, "'%s' does not start with a klog line of level %c from %s", *text, level, file);
        nl = strchr(b, '\n');
        ck_assert_ptr_nonnull(nl);
        ck_assert_msg(strncmp(b, body, strlen(body)) == 0 && b + strlen(body) == nl,
                      "'%.*s' is not '%s'", (int) (nl - b), b, body);
        *text = nl + 1;
}

/* ---- commands ---- */

/* Runs `cmd` with sh and returns what it wrote on stdout (free()); *ret_status as pclose() gives it. */
static inline char *kdp_test_command_output(const char *cmd, int *ret_status) {
        char *out = NULL, buf[4096];
        size_t size = 0, n;
        FILE *p = popen(cmd, "re"), *m;

        ck_assert_ptr_nonnull(p);
        m = open_memstream(&out, &size);
        ck_assert_ptr_nonnull(m);
        while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
                ck_assert_uint_eq(fwrite(buf, 1, n, m), n);
        ck_assert_int_eq(fclose(m), 0);
        *ret_status = pclose(p);
        return out;
}

/* ---- main ---- */

/*
 * Runs every test of `s` (fork mode and verbosity from CK_FORK and CK_VERBOSITY, as Check reads them)
 * and returns main()'s exit code: EXIT_SUCCESS when none failed.
 */
static inline int kdp_test_run(Suite *s) {
        SRunner *sr = srunner_create(s);
        int failed;

        srunner_run_all(sr, CK_ENV);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
