/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Network namespaces for the unit tests that need a real rtnetlink (header-only, like
 * kdp-test.h; include that first): a test enters a fresh netns of its own, builds links and
 * routes there with ip(8), and may start "pods", child processes in a further netns that a
 * link is moved into (docs/hardware-sriov.md §6). Root is needed (unshare(CLONE_NEWNET)); a program
 * checks kdp_test_netns_usable() first.
 *
 *   kdp_test_netns_enter();                    this test's process: a netns with `lo` only (down)
 *   kdp_test_sh("ip link add %s type veth peer name %s", a, b);   asserts success
 *   kdp_test_pod p;
 *   kdp_test_pod_start(&p);  kdp_test_sh("ip link set %s netns %d", a, (int) p.pid);  kdp_test_pod_stop(&p);
 *
 * A pod ends with its test whatever happens: kdp_test_pod_stop(), or the test's process ending.
 */
#pragma once

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <kdp/cleanup.h>

/* Whether this process may make network namespaces (root; a child tries, so that this one stays). */
static inline bool kdp_test_netns_usable(void) {
        int status;
        pid_t pid;

        if (geteuid() != 0)
                return false;
        pid = fork();
        if (pid < 0)
                return false;
        if (pid == 0)
                _exit(unshare(CLONE_NEWNET) == 0 ? 0 : 1);
        return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* A fresh network namespace for the calling process, with `lo` only (down). */
static inline void kdp_test_netns_enter(void) {
        ck_assert_msg(unshare(CLONE_NEWNET) == 0, "unshare(CLONE_NEWNET): %s", strerror(errno));
}

/* CLOCK_MONOTONIC in ms, for deadlines only (never asserted on). */
static inline int64_t kdp_test_monotonic_ms(void) {
        struct timespec ts;

        ck_assert_int_eq(clock_gettime(CLOCK_MONOTONIC, &ts), 0);
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Runs "sh -c `command`" and asserts it succeeded, showing what it printed if not. */
static inline void kdp_test_sh(const char *format, ...) __attribute__((format(printf, 1, 2)));
static inline void kdp_test_sh(const char *format, ...) {
        _cleanup_free_ char *cmd = NULL, *full = NULL, *out = NULL;
        va_list ap;
        int status;

        va_start(ap, format);
        ck_assert_int_ge(vasprintf(&cmd, format, ap), 0);
        va_end(ap);
        ck_assert_int_ge(asprintf(&full, "%s 2>&1", cmd), 0);
        out = kdp_test_command_output(full, &status);
        ck_assert_msg(status == 0, "'%s' failed (%d): %s", cmd, status, out);
}

/* What "sh -c `command`" prints, which must succeed (free()). */
static inline char *kdp_test_sh_output(const char *command) {
        int status;
        char *out = kdp_test_command_output(command, &status);

        ck_assert_msg(status == 0, "'%s' failed (%d): %s", command, status, out);
        return out;
}

/* ---- a pod: a process in a netns of its own ---- */

typedef struct kdp_test_pod {
        pid_t pid;
        int hold;                       /* the pod lives until this pipe end closes */
} kdp_test_pod;

static inline void kdp_test_pod_start(kdp_test_pod *p) {
        int ready[2], hold[2];
        char c;
        pid_t pid;

        ck_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
        ck_assert_int_eq(pipe2(hold, O_CLOEXEC), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                /*
                 * Ends with the test whatever happens: cat sees EOF on the pipe, or the parent dies.
                 * An exec, not code of ours, so that a leak checker has nothing to say of this copy.
                 */
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (dup2(hold[0], STDIN_FILENO) < 0 || unshare(CLONE_NEWNET) < 0 || write(ready[1], "r", 1) != 1)
                        _exit(1);
                execlp("cat", "cat", (char *) NULL);
                _exit(127);
        }
        (void) close(ready[1]);
        (void) close(hold[0]);
        ck_assert_int_eq(read(ready[0], &c, 1), 1);
        (void) close(ready[0]);
        *p = (kdp_test_pod){ .pid = pid, .hold = hold[1] };
}

static inline void kdp_test_pod_stop(kdp_test_pod *p) {
        int status;

        (void) close(p->hold);
        ck_assert_int_eq(waitpid(p->pid, &status, 0), p->pid);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "pod ended with status 0x%x", status);
}
