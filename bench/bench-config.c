/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench-config: how long kdp_config_load() and a reload's comparison take on
 * the largest files it takes (in process, no kdpd): 1000 and 4096 keys in one
 * section (KDP_CONFIG_SHAPE_ENTRIES_MAX), 4000 sections of one key, and 2048 and
 * 4096 duplicate keys (an error; its log goes to /dev/null). Prints one line per case: keys, file size, best of 5 load
 * times and the time of kdp_config_section_equal() over the loaded file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <kdp/cleanup.h>
#include <kdp/config-shape.h>

#include "config.h"

static double now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

/* kind 0: keys of one section; 1: one key per section; 2: one key repeated */
static int write_file(const char *path, int kind, int n, long *ret_size) {
        FILE *f = fopen(path, "we");

        if (!f)
                return -errno;
        if (kind != 1)
                fputs("example:\n", f);
        for (int i = 0; i < n; i++) {
                if (kind == 0)
                        fprintf(f, "  k%d: %d\n", i, i);
                else if (kind == 1)
                        fprintf(f, "s%d:\n  a: %d\n", i, i);
                else
                        fprintf(f, "  devices: %d\n", i);
        }
        *ret_size = ftell(f);
        return fclose(f) == 0 ? 0 : -errno;
}

static void run(const char *name, int kind, int n) {
        char path[] = "/tmp/kdp-bench-config-XXXXXX.yaml";
        double best = 1e18, cmp_ms = 0;
        int fd = mkstemps(path, 5), saved, r = 0;
        long size = 0;

        if (fd < 0 || close(fd) < 0 || write_file(path, kind, n, &size) < 0) {
                fprintf(stderr, "bench-config: cannot write %s\n", path);
                exit(1);
        }
        saved = dup(STDERR_FILENO);
        fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
        (void) dup2(fd, STDERR_FILENO);
        (void) close(fd);
        for (int i = 0; i < 5; i++) {
                _cleanup_(kdp_config_freep) kdp_config *a = NULL, *b = NULL;
                double t0 = now_ms(), t1;

                r = kdp_config_load(path, &a);
                t1 = now_ms() - t0;
                if (t1 < best)
                        best = t1;
                if (r == 0 && kdp_config_load(path, &b) == 0) {
                        t0 = now_ms();
                        (void) kdp_config_section_equal(a, b, kind == 1 ? "s0" : "example");
                        cmp_ms = now_ms() - t0;
                }
        }
        (void) dup2(saved, STDERR_FILENO);
        (void) close(saved);
        (void) unlink(path);
        printf("%-16s keys=%d bytes=%ld load_ms=%.1f result=%s section_equal_ms=%.2f\n", name, n, size, best,
               r == 0 ? "ok" : strerror(-r), cmp_ms);
}

int main(void) {
        run("keys", 0, 1000);
        run("keys", 0, KDP_CONFIG_SHAPE_ENTRIES_MAX);
        run("sections", 1, 4000);       /* 4 values each: within KDP_CONFIG_SHAPE_VALUES_MAX */
        run("duplicate-keys", 2, KDP_CONFIG_SHAPE_ENTRIES_MAX / 2);
        run("duplicate-keys", 2, KDP_CONFIG_SHAPE_ENTRIES_MAX);
        return 0;
}
