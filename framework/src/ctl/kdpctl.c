/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kdpctl: a client of any v1beta1 device-plugin socket, and a stand-in kubelet.
 *
 * main() parses one command, runs it and returns its exit code: 0 success,
 * 1 failure (an RPC error, a time-out, no PCI bus; a message on stderr), 2
 * usage. Client commands run on the main thread (ctl-client.c); `who` asks
 * the kubelet's PodResources API and plugin sockets (ctl-who.c); `kubelet`
 * owns its threads (ctl-kubelet.c); `discover` only reads sysfs
 * (ctl-discover.c). `args` owns what parsing allocated; the rest of what it
 * points to is borrowed from argv.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/grpc.h>

#include <kdp/cleanup.h>
#include <kdp/log.h>

#include "ctl-client.h"
#include "ctl-discover.h"
#include "ctl-kubelet.h"
#include "ctl-who.h"
#include "not-served.h"
#include "pluginregistration/v1/api.pb-c.h"

#define EXIT_FAILED 1
#define EXIT_USAGE 2
#define CONTINUE (-1)
#define DEFAULT_TIMEOUT_MS 10000
#define MAX_ITEMS 4096                          /* --container, --must, --available, --admit, --socket */

enum {
        OPT_SOCKET = 1,
        OPT_TIMEOUT,
        OPT_COUNT,
        OPT_CONTAINER,
        OPT_IDS_FILE,
        OPT_SIZE,
        OPT_MUST,
        OPT_AVAILABLE,
        OPT_DIR,
        OPT_ADMIT,
        OPT_EXIT_AFTER_ADMIT,
        OPT_DURATION,
        OPT_SYSFS_ROOT,
        OPT_STATE_DIR,
        OPT_BACKEND,
        OPT_POD_RESOURCES,
        OPT_DROP_BEFORE_STREAM,
        OPT_FAIL_DIAL_BACK,
        OPT_GET_ALLOCATABLE,
        OPT_POD_LIST,
        OPT_PLUGINS_REGISTRY,
        OPT_DUPLICATE_REGISTRATION,
        OPT_OUTPUT,
        OPT_V,
        OPT_HELP,
};

#define OPT_BIT(o) (1u << (o))
#define OPTS_COMMON (OPT_BIT(OPT_V) | OPT_BIT(OPT_HELP))
#define OPTS_CLIENT (OPTS_COMMON | OPT_BIT(OPT_SOCKET) | OPT_BIT(OPT_TIMEOUT))

static const struct option long_options[] = {
        { "socket", required_argument, NULL, OPT_SOCKET },
        { "timeout", required_argument, NULL, OPT_TIMEOUT },
        { "count", required_argument, NULL, OPT_COUNT },
        { "container", required_argument, NULL, OPT_CONTAINER },
        { "ids-file", required_argument, NULL, OPT_IDS_FILE },
        { "size", required_argument, NULL, OPT_SIZE },
        { "must", required_argument, NULL, OPT_MUST },
        { "available", required_argument, NULL, OPT_AVAILABLE },
        { "dir", required_argument, NULL, OPT_DIR },
        { "admit", required_argument, NULL, OPT_ADMIT },
        { "exit-after-admit", no_argument, NULL, OPT_EXIT_AFTER_ADMIT },
        { "duration", required_argument, NULL, OPT_DURATION },
        { "sysfs-root", required_argument, NULL, OPT_SYSFS_ROOT },
        { "state-dir", required_argument, NULL, OPT_STATE_DIR },
        { "backend", required_argument, NULL, OPT_BACKEND },
        { "pod-resources", required_argument, NULL, OPT_POD_RESOURCES },
        { "drop-before-stream", required_argument, NULL, OPT_DROP_BEFORE_STREAM },
        { "fail-dial-back", required_argument, NULL, OPT_FAIL_DIAL_BACK },
        { "get-allocatable", required_argument, NULL, OPT_GET_ALLOCATABLE },
        { "pod-list", required_argument, NULL, OPT_POD_LIST },
        { "plugins-registry", required_argument, NULL, OPT_PLUGINS_REGISTRY },
        { "duplicate-registration", required_argument, NULL, OPT_DUPLICATE_REGISTRATION },
        { "output", required_argument, NULL, OPT_OUTPUT },
        { "v", required_argument, NULL, OPT_V },
        { "help", no_argument, NULL, OPT_HELP },
        {},
};

static const char usage_text[] =
        "Usage:\n"
        "  kdpctl list      --socket S [--count K] [--timeout SEC]\n"
        "  kdpctl options   --socket S [--timeout SEC]\n"
        "  kdpctl allocate  --socket S [--timeout SEC] [--container ID,ID...]... [--ids-file F]... | [ID...]\n"
        "  kdpctl preferred --socket S --size N [--must ID]... [--available ID]... [--timeout SEC]\n"
        "  kdpctl prestart  --socket S [--timeout SEC] ID...\n"
        "  kdpctl raw       --socket S [--timeout SEC] METHOD HEX|@FILE [METHOD HEX|@FILE]...\n"
        "                   (METHOD options, allocate, preferred, prestart, or the plugin watcher's info\n"
        "                   (GetInfo) or notify (NotifyRegistrationStatus), with a request given as its\n"
        "                   wire bytes in hex or the bytes of FILE, as a peer that is not the kubelet may\n"
        "                   send it; each pair in turn on one connection, printing \"raw ok\" for each,\n"
        "                   until one fails)\n"
        "  kdpctl who       [--pod-resources SOCKET] [--socket [RESOURCE=]S]... [-o json] [--timeout SEC]\n"
        "                   (who holds which device: one row per device and holder, RESOURCE DEVICE\n"
        "                   HEALTH NUMA NAMESPACE POD CONTAINER, \"-\" when free or not known, from the\n"
        "                   kubelet's PodResources List and GetAllocatableResources (the free devices),\n"
        "                   joined with each --socket's first ListAndWatch (health, NUMA nodes, and the\n"
        "                   unhealthy devices the kubelet does not count). -o json: {\"allocatableKnown\":\n"
        "                   B, \"devices\": [{\"resource\", \"id\", \"health\", \"numa\": [N...], \"allocatable\",\n"
        "                   \"namespace\", \"pod\", \"container\"}...]}, null when not known or free)\n"
        "  kdpctl kubelet   --dir D [--admit RESOURCE=N]... [--exit-after-admit] [--duration SEC]\n"
        "                   [--pod-resources SOCKET [--get-allocatable MODE] [--pod-list FILE]]\n"
        "                   [--drop-before-stream N] [--fail-dial-back N] [--plugins-registry RDIR]\n"
        "                   [--duplicate-registration MODE]\n"
        "                   (--pod-list: List answered with FILE's bytes, a ListPodResourcesResponse as\n"
        "                   it is on the wire, instead of the pods admitted)\n"
        "                   (SIGUSR1 drops every plugin connection, as a kubelet that lost them would;\n"
        "                   SIGUSR2 ends every admitted pod: its devices are free again)\n"
        "  kdpctl discover  [--sysfs-root DIR]\n"
        "                   (the PCI tree as kdp sees it: address, vendor:device, class, driver, NUMA node,\n"
        "                   IOMMU group, vfs=enabled/total on SR-IOV PFs, pf=ADDR on VFs)\n"
        "  kdpctl not-served [--state-dir DIR] [--backend NAME]\n"
        "                   (\"not served: ADDRESS REASON\" for each device a running kdpd's backends\n"
        "                   looked at and do not serve, whatever its --v; from DIR/BACKEND.not-served)\n"
        "\n"
        "  --socket S   a device-plugin socket (path, or unix:PATH); (who) RESOURCE=S names its\n"
        "               resource, else kdpd's socket name or the device IDs the kubelet reports tell it\n"
        "  --timeout    seconds for the whole command, 0 = none (default 10)\n"
        "  --count K    ListAndWatch messages to print, 0 = until the timeout (default 1)\n"
        "  --sysfs-root the sysfs tree to read (default /sys)\n"
        "  --state-dir  kdpd's --state-dir (default /run/kdp)\n"
        "  --pod-resources SOCKET  (kubelet) serve PodResources v1 there too: List (the admitted pods\n"
        "               and their devices) and GetAllocatableResources (each resource's healthy devices);\n"
        "               (who) the kubelet's, default " KDP_CTL_WHO_POD_RESOURCES_DEFAULT "\n"
        "  --get-allocatable MODE  served (default), unimplemented (a kubelet before 1.21) or disabled\n"
        "               (1.21-1.27 with its feature gate off: code Unknown)\n"
        "  -o, --output json|table  who's format (default table)\n"
        "  --drop-before-stream N  drop the first N registrations before their ListAndWatch (the\n"
        "               connection closes with no stream opened)\n"
        "  --fail-dial-back N  the first N registrations fail to dial the plugin back (refused with\n"
        "               \"failed to dial device plugin: context deadline exceeded\")\n"
        "  --plugins-registry RDIR  (kubelet) the plugin watcher too: each socket in RDIR, at start and\n"
        "               as it appears, is asked GetInfo; a DevicePlugin supporting v1beta1 is connected\n"
        "               to as a Register would be (its endpoint, or that socket) and then told\n"
        "               NotifyRegistrationStatus; a refusal (printed as register-rejected) is retried after\n"
        "               0.5 s doubling to 8 s while the socket stays; removing or replacing the socket\n"
        "               prints \"deregistered resource=R endpoint=P\" and drops that connection\n"
        "  --duplicate-registration MODE  (kubelet) what a second registration of a resource does to\n"
        "               the first: replace (default; a kubelet before 1.25) closes the first at once;\n"
        "               keep-old (1.25-1.36, k/k#121994) leaves it connected, its device lists still\n"
        "               applied, and when its stream ends disconnects the newer one: \"stream-ended\",\n"
        "               every device unhealthy, the newer connection closed\n"
        "  --v N        log verbosity on stderr\n"
        "Exit: 0 success, 1 RPC error, time-out, (who) a socket missing or its resource not told,\n"
        "      (discover) no PCI bus or (not-served) no list, 2 usage.\n";

typedef struct ptrv {
        char **v;
        size_t n;
} ptrv;

typedef struct args {
        const char *cmd;
        const char *socket;                     /* the last --socket */
        ptrv sockets;                           /* every --socket, borrowed */
        int64_t timeout_ms;
        unsigned long count;
        unsigned long size;
        bool have_size;
        ptrv must, available;                   /* borrowed strings */
        kdp_ctl_client_ids *containers;         /* owned, with owned strings */
        size_t n_containers;
        const char *dir;
        kdp_ctl_kubelet_admit *admits;          /* owned, with owned resource names */
        size_t n_admits;
        bool exit_after_admit;
        int64_t duration_ms;
        unsigned long drop_before_stream;
        unsigned long fail_dial_back;
        const char *sysfs_root;
        const char *state_dir;
        const char *backend;
        const char *pod_resources;
        const char *pod_list;
        const char *plugins_registry;
        kdp_ctl_kubelet_allocatable get_allocatable;
        kdp_ctl_kubelet_duplicate duplicate_registration;
        bool json;
        char **positional;                      /* borrowed */
        size_t n_positional;
} args;

typedef struct command {
        const char *name;
        unsigned options;                       /* OPT_BIT()s accepted */
        unsigned required;                      /* OPT_BIT()s that must be given */
        bool grpc;                              /* run between grpc_init and grpc_shutdown */
        int (*run)(args *a);
} command;

static void args_done(args *a) {
        for (size_t i = 0; i < a->n_containers; i++) {
                for (size_t j = 0; j < a->containers[i].n; j++)
                        free(a->containers[i].v[j]);
                free(a->containers[i].v);
        }
        free(a->containers);
        for (size_t i = 0; i < a->n_admits; i++)
                free((char *) a->admits[i].resource);
        free(a->admits);
        free(a->must.v);
        free(a->available.v);
        free(a->sockets.v);
}

static int usage_error(const args *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int usage_error(const args *a, const char *fmt, ...) {
        va_list ap;

        fprintf(stderr, "kdpctl%s%s: ", a->cmd ? " " : "", a->cmd ? a->cmd : "");
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputs("\nRun 'kdpctl --help' for usage.\n", stderr);
        return EXIT_USAGE;
}

/* ---- option values ---- */

static int parse_ulong(const char *s, unsigned long max, unsigned long *ret) {
        unsigned long v;
        char *end;

        if (*s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno != 0 || *end != '\0' || v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

static int parse_seconds(const char *s, int64_t *ret_ms) {
        char *end;
        double v;

        errno = 0;
        v = strtod(s, &end);
        if (errno != 0 || end == s || *end != '\0' || !(v >= 0 && v <= 1e9))
                return -EINVAL;
        *ret_ms = (int64_t) (v * 1000 + 0.5);
        return 0;
}

static int ptrv_add(ptrv *p, char *s) {
        char **v;

        if (p->n >= MAX_ITEMS)
                return -E2BIG;
        v = reallocarray(p->v, p->n + 1, sizeof(*v));
        if (!v)
                return -ENOMEM;
        v[p->n++] = s;
        p->v = v;
        return 0;
}

/* Room for one more ID in c: the array doubles (its size is c->n rounded up to a power of two). */
static int ids_reserve(kdp_ctl_client_ids *c) {
        char **ids;

        if (c->n & (c->n - 1))
                return 0;
        ids = reallocarray(c->v, c->n ? c->n * 2 : 1, sizeof(*ids));
        if (!ids)
                return -ENOMEM;
        c->v = ids;
        return 0;
}

/* "a,b,c" -> one container asking a, b and c (empty pieces are skipped). */
static int add_container(args *a, const char *list) {
        _cleanup_free_ char *copy = strdup(list);
        kdp_ctl_client_ids *v, *c;
        char *state = NULL;

        if (!copy)
                return -ENOMEM;
        if (a->n_containers >= MAX_ITEMS)
                return -E2BIG;
        v = reallocarray(a->containers, a->n_containers + 1, sizeof(*v));
        if (!v)
                return -ENOMEM;
        a->containers = v;
        c = &v[a->n_containers++];
        *c = (kdp_ctl_client_ids){ 0 };
        for (char *id = strtok_r(copy, ",", &state); id; id = strtok_r(NULL, ",", &state)) {
                if (ids_reserve(c) < 0)
                        return -ENOMEM;
                c->v[c->n] = strdup(id);
                if (!c->v[c->n])
                        return -ENOMEM;
                c->n++;
        }
        return 0;
}

/* One container whose IDs are the words of a file (for requests too big for a command line). */
static int add_container_file(args *a, const char *path) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        _cleanup_free_ char *text = NULL;
        size_t size = 0;

        if (!f)
                return -errno;
        if (getdelim(&text, &size, '\0', f) < 0)
                return feof(f) ? 0 : -errno;
        for (char *p = text; *p; p++)
                if (*p == ' ' || *p == '\n' || *p == '\t')
                        *p = ',';
        return add_container(a, text);
}

/* "vendor.com/res=N", N >= 1. */
static int add_admit(args *a, const char *spec) {
        const char *eq = strrchr(spec, '=');
        kdp_ctl_kubelet_admit *v;
        unsigned long n;
        char *resource;

        if (!eq || parse_ulong(eq + 1, 1000000, &n) < 0 || n == 0)
                return -EINVAL;
        if (a->n_admits >= MAX_ITEMS)
                return -E2BIG;
        resource = strndup(spec, (size_t) (eq - spec));
        if (!resource)
                return -ENOMEM;
        /* only a valid extended resource name can ever register */
        if (!kdp_ctl_kubelet_resource_name_valid(resource)) {
                free(resource);
                return -EINVAL;
        }
        v = reallocarray(a->admits, a->n_admits + 1, sizeof(*v));
        if (!v) {
                free(resource);
                return -ENOMEM;
        }
        a->admits = v;
        v[a->n_admits++] = (kdp_ctl_kubelet_admit){ .resource = resource, .n = (unsigned) n };
        return 0;
}

/* The index of `s` in `names` (n entries), or -EINVAL. */
static int name_index(const char *const *names, size_t n, const char *s) {
        for (size_t i = 0; i < n; i++)
                if (strcmp(s, names[i]) == 0)
                        return (int) i;
        return -EINVAL;
}

static int parse_allocatable(const char *s, kdp_ctl_kubelet_allocatable *ret) {
        static const char *const names[] = {
                [KDP_CTL_KUBELET_ALLOCATABLE_SERVED] = "served",
                [KDP_CTL_KUBELET_ALLOCATABLE_UNIMPLEMENTED] = "unimplemented",
                [KDP_CTL_KUBELET_ALLOCATABLE_DISABLED] = "disabled",
        };
        int i = name_index(names, KDP_ELEMENTSOF(names), s);

        if (i < 0)
                return i;
        *ret = (kdp_ctl_kubelet_allocatable) i;
        return 0;
}

static int parse_duplicate(const char *s, kdp_ctl_kubelet_duplicate *ret) {
        static const char *const names[] = {
                [KDP_CTL_KUBELET_DUPLICATE_REPLACE] = "replace",
                [KDP_CTL_KUBELET_DUPLICATE_KEEP_OLD] = "keep-old",
        };
        int i = name_index(names, KDP_ELEMENTSOF(names), s);

        if (i < 0)
                return i;
        *ret = (kdp_ctl_kubelet_duplicate) i;
        return 0;
}

static int set_option(args *a, int opt, char *value) {
        unsigned long v;

        switch (opt) {
        case OPT_SOCKET: a->socket = value; return ptrv_add(&a->sockets, value);
        case OPT_TIMEOUT: return parse_seconds(value, &a->timeout_ms);
        case OPT_COUNT: return parse_ulong(value, ULONG_MAX, &a->count);
        case OPT_CONTAINER: return add_container(a, value);
        case OPT_IDS_FILE: return add_container_file(a, value);
        case OPT_SIZE: a->have_size = true; return parse_ulong(value, INT32_MAX, &a->size);
        case OPT_MUST: return ptrv_add(&a->must, value);
        case OPT_AVAILABLE: return ptrv_add(&a->available, value);
        case OPT_DIR: a->dir = value; return 0;
        case OPT_ADMIT: return add_admit(a, value);
        case OPT_EXIT_AFTER_ADMIT: a->exit_after_admit = true; return 0;
        case OPT_DURATION: return parse_seconds(value, &a->duration_ms);
        case OPT_DROP_BEFORE_STREAM: return parse_ulong(value, UINT_MAX, &a->drop_before_stream);
        case OPT_FAIL_DIAL_BACK: return parse_ulong(value, UINT_MAX, &a->fail_dial_back);
        case OPT_GET_ALLOCATABLE: return parse_allocatable(value, &a->get_allocatable);
        case OPT_DUPLICATE_REGISTRATION: return parse_duplicate(value, &a->duplicate_registration);
        case OPT_OUTPUT:
                if (strcmp(value, "json") != 0 && strcmp(value, "table") != 0)
                        return -EINVAL;
                a->json = strcmp(value, "json") == 0;
                return 0;
        case OPT_POD_LIST: a->pod_list = value; return 0;
        case OPT_POD_RESOURCES:
        case OPT_PLUGINS_REGISTRY:
                if (!*value)
                        return -EINVAL;
                *(opt == OPT_POD_RESOURCES ? &a->pod_resources : &a->plugins_registry) = value;
                return 0;
        case OPT_SYSFS_ROOT:
                if (!*value)
                        return -EINVAL;
                a->sysfs_root = value;
                return 0;
        case OPT_STATE_DIR:
        case OPT_BACKEND:
                if (!*value || (opt == OPT_BACKEND && strchr(value, '/')))
                        return -EINVAL;
                *(opt == OPT_STATE_DIR ? &a->state_dir : &a->backend) = value;
                return 0;
        case OPT_V:
                if (parse_ulong(value, 100, &v) < 0)
                        return -EINVAL;
                kdp_log_set_verbosity((int) v);
                return 0;
        default: return -EINVAL;
        }
}

static const char *option_name(int opt) {
        for (const struct option *o = long_options; o->name; o++)
                if (o->val == opt)
                        return o->name;
        return "?";
}

/* Returns CONTINUE, or the exit code when parsing already decided it. */
static int parse(args *a, const command *cmd, int argc, char **argv) {
        unsigned given = 0;
        int opt, r;

        optind = 1;
        opterr = 0;
        while ((opt = getopt_long(argc, argv, ":o:", long_options, NULL)) != -1) {
                if (opt == 'o')
                        opt = OPT_OUTPUT;
                if (opt == '?')
                        return usage_error(a, "unknown option '%s'", argv[optind - 1]);
                if (opt == ':')
                        return usage_error(a, "option '%s' needs a value", argv[optind - 1]);
                if (opt == OPT_HELP) {
                        fputs(usage_text, stdout);
                        return 0;
                }
                if (!(cmd->options & OPT_BIT(opt)))
                        return usage_error(a, "option '--%s' does not apply", option_name(opt));
                given |= OPT_BIT(opt);
                r = set_option(a, opt, optarg);
                if (r < 0)
                        return usage_error(a, "invalid value '%s' for '--%s'%s", optarg, option_name(opt),
                                           r == -E2BIG ? " (too many)" : "");
        }
        a->positional = argv + optind;
        a->n_positional = (size_t) (argc - optind);
        for (int o = 0; o < OPT_HELP; o++)
                if ((cmd->required & OPT_BIT(o)) && !(given & OPT_BIT(o)))
                        return usage_error(a, "--%s is required", option_name(o));
        return CONTINUE;
}

/* ---- client commands ---- */

static const char *bool_str(protobuf_c_boolean b) {
        return b ? "true" : "false";
}

static int rpc_error(const kdp_ctl_client_status *st) {
        fprintf(stderr, "error: code=%s message=", kdp_ctl_client_code_name(st->code, false));
        kdp_ctl_client_put_value(stderr, st->message);
        putc('\n', stderr);
        return EXIT_FAILED;
}

static int client_open(const args *a, kdp_ctl_client **ret) {
        int r = kdp_ctl_client_new(a->socket, ret);

        if (r < 0)
                fprintf(stderr, "error: %s\n", strerror(-r));
        return r;
}

static int cmd_options(args *a) {
        _cleanup_(kdp_ctl_client_freep) kdp_ctl_client *c = NULL;
        V1beta1__DevicePluginOptions *o;
        kdp_ctl_client_status st;

        if (a->n_positional > 0)
                return usage_error(a, "unexpected argument '%s'", a->positional[0]);
        if (client_open(a, &c) < 0)
                return EXIT_FAILED;
        if (kdp_ctl_client_options(c, kdp_ctl_client_deadline(a->timeout_ms), 0, &o, &st) < 0)
                return rpc_error(&st);
        printf("pre_start_required=%s get_preferred_allocation_available=%s\n", bool_str(o->pre_start_required),
               bool_str(o->get_preferred_allocation_available));
        v1beta1__device_plugin_options__free_unpacked(o, NULL);
        return 0;
}

static int list_failed(const kdp_ctl_client_status *st, unsigned long n) {
        if (st->code == GRPC_STATUS_DEADLINE_EXCEEDED) {
                fputs("error: timed out\n", stderr);
                return EXIT_FAILED;
        }
        if (st->code == GRPC_STATUS_OK) {
                fprintf(stderr, "error: stream ended after %lu messages\n", n);
                return EXIT_FAILED;
        }
        return rpc_error(st);
}

static int cmd_list(args *a) {
        _cleanup_(kdp_ctl_client_freep) kdp_ctl_client *c = NULL;
        _cleanup_(kdp_ctl_client_stream_freep) kdp_ctl_client_stream *s = NULL;
        gpr_timespec deadline = kdp_ctl_client_deadline(a->timeout_ms);
        V1beta1__ListAndWatchResponse *m;
        V1beta1__DevicePluginOptions *o;
        kdp_ctl_client_status st;

        if (a->n_positional > 0)
                return usage_error(a, "unexpected argument '%s'", a->positional[0]);
        if (client_open(a, &c) < 0)
                return EXIT_FAILED;
        if (kdp_ctl_client_options(c, deadline, 0, &o, &st) < 0)
                return list_failed(&st, 0);
        v1beta1__device_plugin_options__free_unpacked(o, NULL);
        if (kdp_ctl_client_watch(c, deadline, 0, &s, &st) < 0)
                return list_failed(&st, 0);
        for (unsigned long n = 0; a->count == 0 || n < a->count; n++) {
                if (kdp_ctl_client_stream_next(s, &m, &st) == 0)
                        return list_failed(&st, n);
                kdp_ctl_client_print_list(stdout, m);
                (void) fflush(stdout);
                v1beta1__list_and_watch_response__free_unpacked(m, NULL);
        }
        return 0;
}

static int cmd_allocate(args *a) {
        _cleanup_(kdp_ctl_client_freep) kdp_ctl_client *c = NULL;
        kdp_ctl_client_ids one = { .v = a->positional, .n = a->n_positional };
        V1beta1__AllocateResponse *resp;
        kdp_ctl_client_status st;
        int r = 0;

        if (a->n_containers > 0 && a->n_positional > 0)
                return usage_error(a, "give device IDs either with --container or as arguments");
        if (client_open(a, &c) < 0)
                return EXIT_FAILED;
        /* no IDs at all sends a request without containers: the plugin's answer is the test */
        if (kdp_ctl_client_allocate(c, a->n_containers ? a->containers : &one,
                                    a->n_containers ? a->n_containers : a->n_positional ? 1 : 0,
                                    kdp_ctl_client_deadline(a->timeout_ms), &resp, &st) < 0)
                return rpc_error(&st);
        for (size_t i = 0; r >= 0 && i < resp->n_container_responses; i++) {
                if (resp->n_container_responses > 1)
                        printf("container %zu\n", i);
                r = kdp_ctl_client_print_container(stdout, "", resp->container_responses[i]);
        }
        v1beta1__allocate_response__free_unpacked(resp, NULL);
        if (r < 0)
                fprintf(stderr, "error: %s\n", strerror(-r));
        return r < 0 ? EXIT_FAILED : 0;
}

/* The healthy IDs of the first ListAndWatch message; they point into *ret_msg. */
static int first_healthy(kdp_ctl_client *c, gpr_timespec deadline, V1beta1__ListAndWatchResponse **ret_msg,
                         ptrv *ret_ids, kdp_ctl_client_status *st) {
        _cleanup_(kdp_ctl_client_stream_freep) kdp_ctl_client_stream *s = NULL;
        V1beta1__ListAndWatchResponse *m;

        if (kdp_ctl_client_watch(c, deadline, 0, &s, st) < 0)
                return -EIO;
        if (kdp_ctl_client_stream_next(s, &m, st) == 0)
                return -EPIPE;
        *ret_msg = m;
        for (size_t i = 0; i < m->n_devices; i++)
                if (strcmp(m->devices[i]->health, "Healthy") == 0 && ptrv_add(ret_ids, m->devices[i]->id) < 0)
                        return -ENOMEM;
        return 0;
}

static int print_preferred(const V1beta1__PreferredAllocationResponse *resp) {
        fputs("preferred ", stdout);
        if (resp->n_container_responses > 0)
                kdp_ctl_client_put_ids(stdout, resp->container_responses[0]->deviceids,
                                       resp->container_responses[0]->n_deviceids);
        putc('\n', stdout);
        return 0;
}

static int cmd_preferred(args *a) {
        _cleanup_(kdp_ctl_client_freep) kdp_ctl_client *c = NULL;
        gpr_timespec deadline = kdp_ctl_client_deadline(a->timeout_ms);
        V1beta1__ListAndWatchResponse *list = NULL;
        V1beta1__PreferredAllocationResponse *resp;
        kdp_ctl_client_status st = { .code = GRPC_STATUS_INTERNAL, .message = "out of memory" };
        kdp_ctl_client_ids available, must;
        int r = 0;

        if (!a->have_size)
                return usage_error(a, "--size is required");
        if (a->n_positional > 0)
                return usage_error(a, "unexpected argument '%s'", a->positional[0]);
        if (client_open(a, &c) < 0)
                return EXIT_FAILED;
        if (a->available.n == 0)
                r = first_healthy(c, deadline, &list, &a->available, &st);
        available = (kdp_ctl_client_ids){ .v = a->available.v, .n = a->available.n };
        must = (kdp_ctl_client_ids){ .v = a->must.v, .n = a->must.n };
        if (r >= 0)
                r = kdp_ctl_client_preferred(c, &available, &must, (int32_t) a->size, deadline, &resp, &st);
        if (r >= 0) {
                r = print_preferred(resp);
                v1beta1__preferred_allocation_response__free_unpacked(resp, NULL);
        }
        if (list)
                v1beta1__list_and_watch_response__free_unpacked(list, NULL);
        if (r == -EPIPE)
                return list_failed(&st, 0);
        return r < 0 ? rpc_error(&st) : 0;
}

static int cmd_prestart(args *a) {
        _cleanup_(kdp_ctl_client_freep) kdp_ctl_client *c = NULL;
        kdp_ctl_client_ids ids = { .v = a->positional, .n = a->n_positional };
        kdp_ctl_client_status st;

        if (a->n_positional == 0)
                return usage_error(a, "no device IDs given");
        if (client_open(a, &c) < 0)
                return EXIT_FAILED;
        if (kdp_ctl_client_prestart(c, &ids, kdp_ctl_client_deadline(a->timeout_ms), &st) < 0)
                return rpc_error(&st);
        puts("prestart ok");
        return 0;
}

static const struct {
        const char *name, *method;
        const ProtobufCMessageDescriptor *response;
} raw_methods[] = {
        { "options", KDP_CTL_CLIENT_METHOD_OPTIONS, &v1beta1__device_plugin_options__descriptor },
        { "allocate", KDP_CTL_CLIENT_METHOD_ALLOCATE, &v1beta1__allocate_response__descriptor },
        { "preferred", KDP_CTL_CLIENT_METHOD_PREFERRED, &v1beta1__preferred_allocation_response__descriptor },
        { "prestart", KDP_CTL_CLIENT_METHOD_PRESTART, &v1beta1__pre_start_container_response__descriptor },
        { "info", KDP_CTL_CLIENT_METHOD_GET_INFO, &pluginregistration__plugin_info__descriptor },
        { "notify", KDP_CTL_CLIENT_METHOD_NOTIFY, &pluginregistration__registration_status_response__descriptor },
};

static int hex_digit(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* The bytes of file `path` (malloc'ed, *ret_n of them). */
static int read_bytes(const char *path, uint8_t **ret, size_t *ret_n) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        _cleanup_free_ uint8_t *v = NULL;
        size_t n = 0, size = 0;

        if (!f)
                return -errno;
        for (;;) {
                if (n == size) {
                        uint8_t *w = realloc(v, size ? size * 2 : 65536);

                        if (!w)
                                return -ENOMEM;
                        v = w;
                        size = size ? size * 2 : 65536;
                }
                n += fread(v + n, 1, size - n, f);
                if (ferror(f))
                        return -EIO;
                if (feof(f))
                        break;
        }
        *ret = KDP_TAKE_PTR(v);
        *ret_n = n;
        return 0;
}

/* HEX, or @FILE: the request's bytes. 0, or the exit code of a usage error. */
static int raw_request(const args *a, const char *hex, uint8_t **ret, size_t *ret_n) {
        _cleanup_free_ uint8_t *bytes = NULL;
        size_t n = strlen(hex);
        int r;

        if (hex[0] == '@') {
                r = read_bytes(hex + 1, ret, ret_n);
                return r < 0 ? usage_error(a, "cannot read %s: %s", hex + 1, strerror(-r)) : 0;
        }
        if (n % 2 != 0)
                return usage_error(a, "HEX has an odd number of digits");
        bytes = malloc(n / 2 + 1);
        if (!bytes)
                return EXIT_FAILED;
        for (size_t i = 0; i < n / 2; i++) {
                int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);

                if (hi < 0 || lo < 0)
                        return usage_error(a, "HEX holds a character that is not a hex digit");
                bytes[i] = (uint8_t) (hi << 4 | lo);
        }
        *ret = KDP_TAKE_PTR(bytes);
        *ret_n = n / 2;
        return 0;
}

/* One METHOD HEX|@FILE pair of `raw` on client c: CONTINUE when answered ("raw ok"), else the exit code. */
static int raw_call(const args *a, kdp_ctl_client *c, const char *name, const char *hex) {
        _cleanup_free_ uint8_t *bytes = NULL;
        ProtobufCMessage *resp = NULL;
        kdp_ctl_client_status st;
        size_t n = 0, k = SIZE_MAX;
        int r;

        for (size_t i = 0; i < KDP_ELEMENTSOF(raw_methods); i++)
                if (strcmp(name, raw_methods[i].name) == 0)
                        k = i;
        if (k == SIZE_MAX)
                return usage_error(a, "unknown method '%s'", name);
        r = raw_request(a, hex, &bytes, &n);
        if (r != 0)
                return r;
        if (kdp_ctl_client_call_raw(c, raw_methods[k].method, bytes, n, raw_methods[k].response,
                                    kdp_ctl_client_deadline(a->timeout_ms), &resp, &st) < 0)
                return rpc_error(&st);
        protobuf_c_message_free_unpacked(resp, NULL);
        puts("raw ok");
        (void) fflush(stdout);
        return CONTINUE;
}

/* Each METHOD HEX pair in turn, on one client connection; stops at the first error. */
static int cmd_raw(args *a) {
        _cleanup_(kdp_ctl_client_freep) kdp_ctl_client *c = NULL;
        int r = CONTINUE;

        if (a->n_positional == 0 || a->n_positional % 2 != 0)
                return usage_error(a, "raw wants METHOD and HEX, one pair or more");
        if (client_open(a, &c) < 0)
                return EXIT_FAILED;
        for (size_t i = 0; i + 1 < a->n_positional && r == CONTINUE; i += 2)
                r = raw_call(a, c, a->positional[i], a->positional[i + 1]);
        return r == CONTINUE ? 0 : r;
}

/* ---- who holds which device ---- */

static int cmd_who(args *a) {
        kdp_ctl_who_config cfg = {
                .pod_resources = a->pod_resources ? a->pod_resources : KDP_CTL_WHO_POD_RESOURCES_DEFAULT,
                .sockets = a->sockets.v,
                .n_sockets = a->sockets.n,
                .timeout_ms = a->timeout_ms,
                .json = a->json,
        };

        if (a->n_positional > 0)
                return usage_error(a, "unexpected argument '%s'", a->positional[0]);
        return kdp_ctl_who_run(&cfg);
}

/* ---- the stand-in kubelet ---- */

static int cmd_kubelet(args *a) {
        _cleanup_free_ uint8_t *pod_list = NULL;
        size_t pod_list_size = 0;
        int r;
        kdp_ctl_kubelet_config cfg = {
                .dir = a->dir,
                .admits = a->admits,
                .n_admits = a->n_admits,
                .exit_after_admit = a->exit_after_admit,
                .duration_ms = a->duration_ms,
                .pod_resources = a->pod_resources,
                .drop_before_stream = (unsigned) a->drop_before_stream,
                .fail_dial_back = (unsigned) a->fail_dial_back,
                .get_allocatable = a->get_allocatable,
                .plugins_registry = a->plugins_registry,
                .duplicate_registration = a->duplicate_registration,
        };

        if (a->n_positional > 0)
                return usage_error(a, "unexpected argument '%s'", a->positional[0]);
        if (a->exit_after_admit && a->n_admits == 0)
                return usage_error(a, "--exit-after-admit needs --admit");
        if (a->get_allocatable != KDP_CTL_KUBELET_ALLOCATABLE_SERVED && !a->pod_resources)
                return usage_error(a, "--get-allocatable needs --pod-resources");
        if (a->pod_list && !a->pod_resources)
                return usage_error(a, "--pod-list needs --pod-resources");
        if (a->pod_list) {
                r = read_bytes(a->pod_list, &pod_list, &pod_list_size);
                if (r < 0)
                        return usage_error(a, "cannot read %s: %s", a->pod_list, strerror(-r));
                cfg.pod_list = pod_list;
                cfg.pod_list_size = pod_list_size;
        }
        return kdp_ctl_kubelet_run(&cfg);
}

/* ---- sysfs ---- */

static int cmd_discover(args *a) {
        if (a->n_positional > 0)
                return usage_error(a, "unexpected argument '%s'", a->positional[0]);
        return kdp_ctl_discover_run(a->sysfs_root ? a->sysfs_root : "/sys");
}

/* ---- kdpd's lists of devices not served ---- */

static int cmd_not_served(args *a) {
        const char *dir = a->state_dir ? a->state_dir : KDP_NOT_SERVED_DEFAULT_DIR;
        int r;

        if (a->n_positional > 0)
                return usage_error(a, "unexpected argument '%s'", a->positional[0]);
        r = kdp_not_served_print(dir, a->backend, stdout);
        if (r == -ENOENT) {
                fprintf(stderr, "kdpctl: no %s/%s.not-served: kdpd writes it while it runs %s with --state-dir %s\n",
                        dir, a->backend ? a->backend : "*", a->backend ? a->backend : "a backend", dir);
                return EXIT_FAILED;
        }
        if (r < 0) {
                fprintf(stderr, "kdpctl: cannot read the lists of devices not served in %s: %s\n", dir, strerror(-r));
                return EXIT_FAILED;
        }
        return 0;
}

#define NEEDS_SOCKET OPT_BIT(OPT_SOCKET)

static const command commands[] = {
        { "list", OPTS_CLIENT | OPT_BIT(OPT_COUNT), NEEDS_SOCKET, true, cmd_list },
        { "options", OPTS_CLIENT, NEEDS_SOCKET, true, cmd_options },
        { "allocate", OPTS_CLIENT | OPT_BIT(OPT_CONTAINER) | OPT_BIT(OPT_IDS_FILE), NEEDS_SOCKET, true,
          cmd_allocate },
        { "preferred", OPTS_CLIENT | OPT_BIT(OPT_SIZE) | OPT_BIT(OPT_MUST) | OPT_BIT(OPT_AVAILABLE), NEEDS_SOCKET,
          true, cmd_preferred },
        { "prestart", OPTS_CLIENT, NEEDS_SOCKET, true, cmd_prestart },
        { "raw", OPTS_CLIENT, NEEDS_SOCKET, true, cmd_raw },
        { "who", OPTS_CLIENT | OPT_BIT(OPT_POD_RESOURCES) | OPT_BIT(OPT_OUTPUT), 0, true, cmd_who },
        { "kubelet",
          OPTS_COMMON | OPT_BIT(OPT_DIR) | OPT_BIT(OPT_ADMIT) | OPT_BIT(OPT_EXIT_AFTER_ADMIT) |
                  OPT_BIT(OPT_DURATION) | OPT_BIT(OPT_POD_RESOURCES) | OPT_BIT(OPT_DROP_BEFORE_STREAM) | OPT_BIT(OPT_FAIL_DIAL_BACK) |
                  OPT_BIT(OPT_GET_ALLOCATABLE) | OPT_BIT(OPT_POD_LIST) | OPT_BIT(OPT_PLUGINS_REGISTRY) |
                  OPT_BIT(OPT_DUPLICATE_REGISTRATION),
          OPT_BIT(OPT_DIR), false, cmd_kubelet },
        { "discover", OPTS_COMMON | OPT_BIT(OPT_SYSFS_ROOT), 0, false, cmd_discover },
        { "not-served", OPTS_COMMON | OPT_BIT(OPT_STATE_DIR) | OPT_BIT(OPT_BACKEND), 0, false, cmd_not_served },
};

int main(int argc, char *argv[]) {
        _cleanup_(args_done) args a = { .timeout_ms = DEFAULT_TIMEOUT_MS, .count = 1 };
        const command *cmd = NULL;
        int rc;

        if (argc < 2)
                return usage_error(&a, "missing command");
        if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
                fputs(usage_text, stdout);
                return 0;
        }
        for (size_t i = 0; i < KDP_ELEMENTSOF(commands); i++)
                if (strcmp(argv[1], commands[i].name) == 0)
                        cmd = &commands[i];
        if (!cmd)
                return usage_error(&a, "unknown command '%s'", argv[1]);
        a.cmd = cmd->name;
        rc = parse(&a, cmd, argc - 1, argv + 1);
        if (rc != CONTINUE)
                return rc;
        if (cmd->grpc)
                grpc_init();
        rc = cmd->run(&a);
        if (cmd->grpc)
                grpc_shutdown();
        return rc;
}
