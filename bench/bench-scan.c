/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench-scan [REPS]: the cost of one full rescan as kdpd does it, in process:
 * kdp_registry_scan() (the backend's scan() and probe() of every device, then
 * kdp_device_tree_finish()) and kdp_snapshot_new() for each resource (sorted
 * list, locality index, packed ListAndWatchResponse). With the example backend
 * at example.devices=8 and 4096; prints rescan_n<N>_p50_us, _p99_us, _max_us.
 * Run by bench/hardware.sh.
 *
 * bench-scan REPS BACKEND PREFIX [KEY=VALUE...]: the same for BACKEND with those
 * options, on the machine it runs on (bench/fpga.sh, gpu-mig.sh run it under
 * sim-node); prints PREFIX_devices (all resources) and PREFIX_p50_us, _p99_us,
 * _max_us, and the CPU time of the scanning thread per scan, PREFIX_cpu_p50_us,
 * _cpu_p99_us, _cpu_mean_us. The backend gets a host as kdpd's: the fds it asks
 * to have watched are taken (never read), so it starts what it starts under
 * kdpd (the GPU backend: NVML's Xid events rather than the kernel log).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <grpc/grpc.h>

#include "backend-ctx.h"
#include "bench-stats.h"
#include "registry.h"
#include "snapshot.h"

static const char *const dirs[] = { KDP_BUILD_DIR "/plugins", NULL };

/* kdpd's loop as far as a scan needs it: watches are taken, nothing is read. */
static int host_watch_fd(void *data, int fd, kdp_backend_fd_fn fn) {
        (void) data;
        (void) fd;
        (void) fn;
        return 0;
}

static void host_unwatch_fd(void *data, int fd) {
        (void) data;
        (void) fd;
}

static int host_rescan_after(void *data, uint32_t ms) {
        (void) data;
        (void) ms;
        return 0;
}

static const kdp_backend_host host = {
        .watch_fd = host_watch_fd,
        .unwatch_fd = host_unwatch_fd,
        .rescan_after = host_rescan_after,
};

static uint64_t thread_cpu_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/* `reps` scans of `backend` with the options; `n` devices per resource expected (0: any). */
static int run(const char *backend, char *const *opts, const char *prefix, unsigned n, unsigned reps) {
        const char *roots[_KDP_PATH_KIND_MAX] = { 0 };
        kdp_config *c = NULL;
        kdp_backend *b = NULL;
        uint64_t *t = calloc(reps, sizeof(*t)), *cpu = calloc(reps, sizeof(*cpu)), gen = 0, cpu_sum = 0;
        size_t devices = 0;
        int r;

        if (!t || !cpu) {
                free(t);
                free(cpu);
                return -ENOMEM;
        }
        r = kdp_config_load(NULL, &c);
        for (size_t i = 0; r >= 0 && opts[i]; i++)
                r = kdp_config_add_override(c, opts[i]);
        if (r >= 0 && (r = kdp_registry_load(backend, dirs, &b)) >= 0)
                kdp_registry_set_host(b, &host, NULL);
        if (r < 0 || (r = kdp_registry_start(b, c, roots)) < 0) {
                fprintf(stderr, "bench-scan: cannot start the %s backend: %s\n", backend, strerror(-r));
                goto out;
        }
        /* one warm-up round, not counted */
        for (unsigned i = 0; i <= reps; i++) {
                kdp_device_tree *tree = NULL;
                uint64_t t0 = bench_stats_now_ns(), c0 = thread_cpu_ns();

                r = kdp_registry_scan(b, NULL, &tree);
                if (r < 0) {
                        fprintf(stderr, "bench-scan: scan failed: %s\n", strerror(-r));
                        goto out;
                }
                for (size_t k = 0; k < tree->n_resources; k++) {
                        kdp_snapshot *s = NULL;

                        if (i == 0)
                                devices += tree->resources[k].n_devices;
                        if (i == 0 && n && tree->resources[k].n_devices != n)
                                fprintf(stderr, "bench-scan: %zu devices, expected %u\n",
                                        tree->resources[k].n_devices, n);
                        r = kdp_snapshot_new(&tree->resources[k], ++gen, &s);
                        if (r < 0) {
                                fprintf(stderr, "bench-scan: snapshot failed: %s\n", strerror(-r));
                                kdp_device_tree_free(tree);
                                goto out;
                        }
                        kdp_snapshot_unref(s);
                }
                if (i > 0) {
                        t[i - 1] = bench_stats_now_ns() - t0;
                        cpu[i - 1] = thread_cpu_ns() - c0;
                        cpu_sum += cpu[i - 1];
                }
                kdp_device_tree_free(tree);
        }
        qsort(t, reps, sizeof(*t), bench_stats_cmp_u64);
        if (!n)
                printf("%s_devices=%zu\n", prefix, devices);
        printf("%s_p50_us=%.1f\n", prefix, bench_stats_pct(t, reps, 50) / 1e3);
        printf("%s_p99_us=%.1f\n", prefix, bench_stats_pct(t, reps, 99) / 1e3);
        printf("%s_max_us=%.1f\n", prefix, t[reps - 1] / 1e3);
        qsort(cpu, reps, sizeof(*cpu), bench_stats_cmp_u64);
        printf("%s_cpu_p50_us=%.1f\n", prefix, bench_stats_pct(cpu, reps, 50) / 1e3);
        printf("%s_cpu_p99_us=%.1f\n", prefix, bench_stats_pct(cpu, reps, 99) / 1e3);
        printf("%s_cpu_mean_us=%.1f\n", prefix, (double) cpu_sum / reps / 1e3);
        r = 0;
out:
        if (b)
                kdp_registry_stop(b);
        kdp_registry_free(b);
        kdp_config_free(c);
        free(t);
        free(cpu);
        return r;
}

int main(int argc, char **argv) {
        unsigned reps = argc > 1 ? (unsigned) strtoul(argv[1], NULL, 10) : 50;
        int r = 0;

        if (reps == 0)
                reps = 50;
        grpc_init();
        printf("rescan_reps=%u\n", reps);
        fflush(stdout);
        if (argc > 3) {
                if (run(argv[2], argv + 4, argv[3], 0, reps) < 0)
                        r = 1;
        } else {
                char o8[] = "example.devices=8", o4096[] = "example.devices=4096";
                char *opts8[] = { o8, NULL }, *opts4096[] = { o4096, NULL };

                if (run("example", opts8, "rescan_n8", 8, reps) < 0 || run("example", opts4096, "rescan_n4096", 4096, reps) < 0)
                        r = 1;
        }
        grpc_shutdown();
        return r;
}
