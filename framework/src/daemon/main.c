/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kdpd: serves hardware backends' devices to the kubelet.
 *
 * Threads: this one runs the event loop (daemon.c); server.c adds the gRPC
 * completion-queue thread and the PreStart worker; gate.c the thread that
 * relays the plugin sockets; metrics-http.c, with --metrics-address, the
 * metrics thread (libmicrohttpd's); grpc adds its own. Signals
 * are blocked before grpc_init() so every thread inherits the mask and only
 * the loop's signalfd sees them.
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/grpc.h>

#include <kdp/log.h>

#include "daemon.h"

#define MAX_LIST 64

typedef struct args {
        const char *backends[MAX_LIST + 1];
        size_t n_backends;
        const char *overrides[MAX_LIST + 1];
        size_t n_overrides;
        kdp_daemon_options opts;
        bool help;
} args;

static void usage(FILE *f) {
        fputs("Usage: kdpd --backend NAME|PATH [--backend ...] [OPTIONS]\n"
              "\n"
              "Serves the devices of hardware backends to the kubelet (device plugin API v1beta1).\n"
              "\n"
              "  -b, --backend NAME|PATH   load kdp-backend-NAME.so (from the build tree or the install dir) or a file\n"
              "  -c, --config FILE         YAML or JSON config, one section per backend (SIGHUP reloads it)\n"
              "  -o, --option B.KEY=VALUE  set a backend param, overriding the config file\n"
              "      --kubelet-dir DIR     kubelet device-plugins dir (default /var/lib/kubelet/device-plugins)\n"
              "      --registration MODE   how the kubelet learns of kdpd's sockets: 'kubelet-sock' (Register\n"
              "                            on kubelet.sock), 'plugin-watcher' (sockets in the plugins\n"
              "                            registry, found by the kubelet) or 'auto' (default: the plugin\n"
              "                            watcher when its directory exists)\n"
              "      --plugins-registry DIR\n"
              "                            the kubelet plugin watcher's directory (default: plugins_registry\n"
              "                            beside the kubelet dir, /var/lib/kubelet/plugins_registry)\n"
              "      --sysfs-root DIR      sysfs root (default /sys)\n"
              "      --dev-root DIR        /dev root (default /dev)\n"
              "      --proc-root DIR       procfs root (default /proc)\n"
              "      --cdi-dir DIR         CDI spec dir (default /var/run/cdi)\n"
              "      --state-dir DIR       where kdpd lists the devices each backend does not serve, for\n"
              "                            `kdpctl not-served` (default /run/kdp; never the kubelet dir)\n"
              "      --health-hold-ms MS   a device that failed is reported healthy again only after\n"
              "                            staying healthy this long (default 5000; 0 = at once)\n"
              "      --udev-source S       device events from 'udev' or 'kernel' (default: udev when\n"
              "                            udevd runs, else kernel)\n"
              "      --pod-resources-socket PATH\n"
              "                            the kubelet's PodResources socket, asked which devices are in\n"
              "                            use (default: pod-resources/kubelet.sock beside the kubelet\n"
              "                            dir, /var/lib/kubelet/pod-resources/kubelet.sock; '' = never)\n"
              "      --pod-resources-period-ms MS\n"
              "                            ask it this often, and 5 s after Allocate (default 60000)\n"
              "      --socket-group NAME|GID\n"
              "                            plugin sockets 0660 and of this group (default: 0600, only the\n"
              "                            user kdpd runs as may connect), whatever the umask\n"
              "      --stop-timeout-ms MS  at SIGTERM, a step of the stop that takes longer (a device\n"
              "                            programming stuck in the kernel) is abandoned: kdpd logs it\n"
              "                            and exits with status 1 (default 20000, below the kubelet's\n"
              "                            30 s grace period)\n"
              "      --metrics-address HOST:PORT|/PATH\n"
              "                            serve GET /metrics (Prometheus), /healthz and /readyz there:\n"
              "                            an IPv4 address, [IPv6], a name or nothing (every address),\n"
              "                            and a port; or a unix socket kdpd makes, mode 0660 (and of\n"
              "                            --socket-group). Default: not served\n"
              "      --metrics-device-health\n"
              "                            add kdp_device_health{resource,device}: a series per device\n"
              "      --metrics-stall-ms MS /healthz answers 503 when the event loop or a gRPC completion-\n"
              "                            queue thread has not run for this long (default 10000)\n"
              "  -v, --v N                 log verbosity, as klog (default 0)\n"
              "  -h, --help                this help, plus the params of the backends given before it\n",
              f);
}

static int push(const char **list, size_t *n, const char *v) {
        if (*n >= MAX_LIST) {
                fprintf(stderr, "kdpd: too many values (limit %d)\n", MAX_LIST);
                return -E2BIG;
        }
        list[(*n)++] = v;
        return 0;
}

static int parse_verbosity(const char *s) {
        char *end;
        long v = strtol(s, &end, 10);

        if (*s == '\0' || *end != '\0' || v < 0 || v > 10) {
                fprintf(stderr, "kdpd: --v takes a number from 0 to 10, not '%s'\n", s);
                return -EINVAL;
        }
        kdp_log_set_verbosity((int) v);
        return 0;
}

/* A number of milliseconds from min to max for option `name`. */
static int parse_ms(const char *name, const char *s, unsigned long long min, unsigned long long max, uint64_t *ret) {
        char *end;
        unsigned long long v;

        errno = 0;
        v = strtoull(s, &end, 10);
        if (*s == '\0' || *s == '-' || *end != '\0' || errno || v < min || v > max) {
                fprintf(stderr, "kdpd: --%s takes milliseconds from %llu to %llu, not '%s'\n", name, min, max, s);
                return -EINVAL;
        }
        *ret = v;
        return 0;
}

/* A group name, or a number (a GID the system may not name). */
static int parse_group(const char *s, kdp_daemon_options *o) {
        char buf[16384], *end;
        struct group gr, *found = NULL;
        unsigned long v;
        int r;

        errno = 0;
        v = strtoul(s, &end, 10);
        if (*s != '\0' && *s != '-' && *end == '\0' && errno == 0 && v < (gid_t) -1) {
                o->socket_gid = (gid_t) v;
                o->socket_group_set = true;
                return 0;
        }
        r = getgrnam_r(s, &gr, buf, sizeof(buf), &found);
        if (r != 0 || !found) {
                fprintf(stderr, "kdpd: --socket-group: no group '%s'%s%s\n", s, r ? ": " : "", r ? strerror(r) : "");
                return -EINVAL;
        }
        o->socket_gid = gr.gr_gid;
        o->socket_group_set = true;
        return 0;
}

static int parse_udev_source(const char *s, const char **ret) {
        if (strcmp(s, "udev") != 0 && strcmp(s, "kernel") != 0) {
                fprintf(stderr, "kdpd: --udev-source takes 'udev' or 'kernel', not '%s'\n", s);
                return -EINVAL;
        }
        *ret = s;
        return 0;
}

static int parse_registration(const char *s, kdp_registration_mode *ret) {
        if (strcmp(s, "auto") == 0)
                *ret = KDP_REGISTRATION_AUTO;
        else if (strcmp(s, "kubelet-sock") == 0)
                *ret = KDP_REGISTRATION_KUBELET_SOCK;
        else if (strcmp(s, "plugin-watcher") == 0)
                *ret = KDP_REGISTRATION_PLUGIN_WATCHER;
        else {
                fprintf(stderr, "kdpd: --registration takes 'auto', 'kubelet-sock' or 'plugin-watcher', not '%s'\n",
                        s);
                return -EINVAL;
        }
        return 0;
}

static int parse_args(int argc, char **argv, args *a) {
        enum { OPT_KUBELET_DIR = 256, OPT_SYSFS, OPT_DEV, OPT_PROC, OPT_CDI, OPT_HOLD, OPT_UDEV, OPT_STATE,
               OPT_PODRES, OPT_PODRES_PERIOD, OPT_SOCKET_GROUP, OPT_STOP_TIMEOUT, OPT_METRICS, OPT_DEVICE_HEALTH,
               OPT_STALL, OPT_REGISTRATION, OPT_REGISTRY };
        static const struct option options[] = {
                { "backend", required_argument, NULL, 'b' },     { "config", required_argument, NULL, 'c' },
                { "option", required_argument, NULL, 'o' },      { "kubelet-dir", required_argument, NULL, OPT_KUBELET_DIR },
                { "sysfs-root", required_argument, NULL, OPT_SYSFS }, { "dev-root", required_argument, NULL, OPT_DEV },
                { "proc-root", required_argument, NULL, OPT_PROC }, { "cdi-dir", required_argument, NULL, OPT_CDI },
                { "health-hold-ms", required_argument, NULL, OPT_HOLD },
                { "udev-source", required_argument, NULL, OPT_UDEV },
                { "state-dir", required_argument, NULL, OPT_STATE },
                { "pod-resources-socket", required_argument, NULL, OPT_PODRES },
                { "pod-resources-period-ms", required_argument, NULL, OPT_PODRES_PERIOD },
                { "socket-group", required_argument, NULL, OPT_SOCKET_GROUP },
                { "stop-timeout-ms", required_argument, NULL, OPT_STOP_TIMEOUT },
                { "metrics-address", required_argument, NULL, OPT_METRICS },
                { "metrics-device-health", no_argument, NULL, OPT_DEVICE_HEALTH },
                { "metrics-stall-ms", required_argument, NULL, OPT_STALL },
                { "registration", required_argument, NULL, OPT_REGISTRATION },
                { "plugins-registry", required_argument, NULL, OPT_REGISTRY },
                { "v", required_argument, NULL, 'v' },           { "help", no_argument, NULL, 'h' },
                {},
        };
        int c, r = 0;

        while (r >= 0 && (c = getopt_long(argc, argv, "b:c:o:v:h", options, NULL)) >= 0)
                switch (c) {
                case 'b': r = push(a->backends, &a->n_backends, optarg); break;
                case 'c': a->opts.config_path = optarg; break;
                case 'o': r = push(a->overrides, &a->n_overrides, optarg); break;
                case OPT_KUBELET_DIR: a->opts.kubelet_dir = optarg; break;
                case OPT_SYSFS: a->opts.roots[KDP_PATH_SYSFS] = optarg; break;
                case OPT_DEV: a->opts.roots[KDP_PATH_DEV] = optarg; break;
                case OPT_PROC: a->opts.roots[KDP_PATH_PROC] = optarg; break;
                case OPT_CDI: a->opts.roots[KDP_PATH_CDI] = optarg; break;
                case OPT_HOLD: r = parse_ms("health-hold-ms", optarg, 0, 3600000, &a->opts.health_hold_ms); break;
                case OPT_UDEV: r = parse_udev_source(optarg, &a->opts.udev_source); break;
                case OPT_STATE: a->opts.state_dir = optarg; break;
                case OPT_PODRES: a->opts.pod_resources_socket = optarg; break;
                case OPT_PODRES_PERIOD:
                        r = parse_ms("pod-resources-period-ms", optarg, 100, 86400000, &a->opts.pod_resources_period_ms);
                        break;
                case OPT_SOCKET_GROUP: r = parse_group(optarg, &a->opts); break;
                case OPT_STOP_TIMEOUT: r = parse_ms("stop-timeout-ms", optarg, 100, 3600000, &a->opts.stop_timeout_ms); break;
                case OPT_METRICS: a->opts.metrics_address = optarg; break;
                case OPT_DEVICE_HEALTH: a->opts.metrics_device_health = true; break;
                case OPT_STALL: r = parse_ms("metrics-stall-ms", optarg, 100, 3600000, &a->opts.metrics_stall_ms); break;
                case OPT_REGISTRATION: r = parse_registration(optarg, &a->opts.registration); break;
                case OPT_REGISTRY: a->opts.plugins_registry = optarg; break;
                case 'v': r = parse_verbosity(optarg); break;
                case 'h': a->help = true; break;
                default: usage(stderr); return -EINVAL;
                }
        if (r >= 0 && optind < argc) {
                fprintf(stderr, "kdpd: unexpected argument '%s'\n", argv[optind]);
                return -EINVAL;
        }
        a->opts.backends = a->backends;
        a->opts.overrides = a->overrides;
        return r;
}

static int run(const kdp_daemon_options *opts) {
        kdp_daemon *d = NULL;
        int r, s;

        r = kdp_daemon_new(opts, &d);
        if (r < 0)
                return r;
        r = kdp_daemon_run(d);
        s = kdp_daemon_stop(d);
        return r < 0 ? r : s;
}

int main(int argc, char **argv) {
        args a = { .opts.health_hold_ms = 5000 };
        sigset_t mask;
        int r;

        if (parse_args(argc, argv, &a) < 0)
                return 2;
        if (a.help) {
                usage(stdout);
                return kdp_daemon_print_params(a.opts.backends, NULL) < 0 ? 1 : 0;
        }
        /*
         * One malloc arena for every thread: kdpd's threads allocate little
         * and briefly, and per-thread arenas cost more memory than the lock
         * contention they avoid (measured under 16 concurrent Allocate callers).
         */
        (void) mallopt(M_ARENA_MAX, 1);
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        pthread_sigmask(SIG_BLOCK, &mask, NULL);
        signal(SIGPIPE, SIG_IGN);

        grpc_init();
        kdp_log_info("Starting kdpd", KDP_F_INT("backends", a.n_backends));
        r = run(&a.opts);
        if (r != -ETIMEDOUT)
                grpc_shutdown();        /* an abandoned stop left gRPC objects to the thread stuck in it */
        if (r < 0) {
                kdp_log_error(r, "Exited with an error");
                return 1;
        }
        kdp_log_info("Stopped kdpd");
        return 0;
}
