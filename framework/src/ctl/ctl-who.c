/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `kdpctl who` (see ctl-who.h): the calls, one after the other on the main
 * thread, all under the one deadline of --timeout; then the join.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <kdp/cleanup.h>

#include "ctl-client.h"
#include "ctl-who-table.h"
#include "ctl-who.h"

typedef struct who {
        const kdp_ctl_who_config *cfg;
        gpr_timespec deadline;
        kdp_ctl_who_input in;                   /* in.allocatable NULL: the kubelet does not serve it */
} who;

static void who_done(who *w) {
        kdp_ctl_who_input_done(&w->in);
}

static int failed(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int failed(const char *fmt, ...) {
        va_list ap;

        fputs("kdpctl who: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        putc('\n', stderr);
        return -EIO;
}

/* The peer's status as "code=NAME message=TEXT" on stderr, without a newline. */
static void put_status(const kdp_ctl_client_status *st) {
        fprintf(stderr, "code=%s message=", kdp_ctl_client_code_name(st->code, false));
        kdp_ctl_client_put_value(stderr, st->message);
}

/* A call that returned `r` (kdp_ctl_client_call()) with `st`. */
static int call_failed(const who *w, int r, const char *method, const char *path, const kdp_ctl_client_status *st) {
        if (r == -EMSGSIZE)
                return failed("the answer to %s on %s is larger than %d MiB, the most kdpctl who reads (%s)", method,
                              path, KDP_CTL_WHO_MAX_MESSAGE >> 20, st->message);
        if (r == -E2BIG)
                return failed("the answer to %s on %s holds more than kdpctl who reads: %s", method, path,
                              st->message);
        if (st->code == GRPC_STATUS_DEADLINE_EXCEEDED && w->cfg->timeout_ms > 0)
                return failed("no answer to %s on %s within %g s", method, path,
                              (double) w->cfg->timeout_ms / 1000);
        fprintf(stderr, "kdpctl who: %s on %s failed: ", method, path);
        put_status(st);
        putc('\n', stderr);
        return -EIO;
}

/* 0 if `path` (or unix:path) is a socket; else says why not, `hint` after a missing one. */
static int check_socket(const char *what, const char *path, const char *hint) {
        const char *file = strncmp(path, "unix:", 5) == 0 ? path + 5 : path;
        struct stat st;

        if (stat(file, &st) < 0) {
                int e = errno;

                if (e == ENOENT)
                        return failed("no %s at %s%s", what, file, hint);
                return failed("cannot reach the %s at %s: %s", what, file, strerror(e));
        }
        if (!S_ISSOCK(st.st_mode))
                return failed("%s is not a socket (the %s)", file, what);
        return 0;
}

static bool allocatable_not_served(const kdp_ctl_client_status *st) {
        return st->code == GRPC_STATUS_UNIMPLEMENTED ||
               (st->code == GRPC_STATUS_UNKNOWN &&
                strcmp(st->message, KDP_CTL_CLIENT_POD_ALLOCATABLE_DISABLED) == 0);
}

static int ask_allocatable(who *w, kdp_ctl_client *c, const char *path) {
        V1__AllocatableResourcesRequest req = V1__ALLOCATABLE_RESOURCES_REQUEST__INIT;
        kdp_ctl_client_status st;
        ProtobufCMessage *m;

        int r;

        r = kdp_ctl_client_call(c, KDP_CTL_CLIENT_METHOD_POD_ALLOCATABLE, &req.base,
                                &v1__allocatable_resources_response__descriptor, w->deadline, 0, &m, &st);
        if (r >= 0) {
                w->in.allocatable = (V1__AllocatableResourcesResponse *) m;
                return 0;
        }
        if (r != -EREMOTEIO || !allocatable_not_served(&st))
                return call_failed(w, r, "GetAllocatableResources", path, &st);
        fputs("kdpctl who: the kubelet does not serve GetAllocatableResources (", stderr);
        put_status(&st);
        fputs("): a kubelet before 1.21, or one with the KubeletPodResourcesGetAllocatable feature gate off; "
              "the devices no pod holds are shown only from the plugin sockets given\n",
              stderr);
        return 0;
}

static int ask_kubelet(who *w) {
        const char *path = w->cfg->pod_resources;
        V1__ListPodResourcesRequest req = V1__LIST_POD_RESOURCES_REQUEST__INIT;
        _cleanup_(kdp_ctl_client_freep) kdp_ctl_client *c = NULL;
        kdp_ctl_client_status st;
        ProtobufCMessage *m;
        int r;

        r = check_socket("PodResources socket", path,
                         " (is the kubelet running? --pod-resources names its socket under another --root-dir)");
        if (r < 0)
                return r;
        r = kdp_ctl_client_new_max_message(path, KDP_CTL_WHO_MAX_MESSAGE, &c);
        if (r < 0)
                return failed("%s", strerror(-r));
        r = kdp_ctl_client_call(c, KDP_CTL_CLIENT_METHOD_POD_LIST, &req.base,
                                &v1__list_pod_resources_response__descriptor, w->deadline, 0, &m, &st);
        if (r < 0)
                return call_failed(w, r, "List", path, &st);
        w->in.pods = (V1__ListPodResourcesResponse *) m;
        return ask_allocatable(w, c, path);
}

/* The plugin's first ListAndWatch message. */
static int ask_plugin(who *w, kdp_ctl_who_plugin *p) {
        _cleanup_(kdp_ctl_client_freep) kdp_ctl_client *c = NULL;
        _cleanup_(kdp_ctl_client_stream_freep) kdp_ctl_client_stream *s = NULL;
        kdp_ctl_client_status st;
        int r;

        r = check_socket("plugin socket", p->path, "");
        if (r < 0)
                return r;
        r = kdp_ctl_client_new(p->path, &c);
        if (r < 0)
                return failed("%s", strerror(-r));
        if (kdp_ctl_client_watch(c, w->deadline, 0, &s, &st) < 0)
                return call_failed(w, -EREMOTEIO, "ListAndWatch", p->path, &st);
        if (kdp_ctl_client_stream_next(s, &p->list, &st) > 0)
                return 0;
        if (st.code == GRPC_STATUS_OK)
                return failed("ListAndWatch on %s ended without a device list", p->path);
        return call_failed(w, -EREMOTEIO, "ListAndWatch", p->path, &st);
}

static int join_failed(const who *w, int r, size_t bad) {
        const kdp_ctl_who_plugin *p = &w->in.plugins[bad];

        if (r == -ENXIO)
                return failed("cannot tell the resource of %s: not a kdpd socket name, and its %zu device IDs "
                              "are not those of one resource the kubelet reports; give it as --socket RESOURCE=%s",
                              p->path, p->list ? p->list->n_devices : 0, p->path);
        for (size_t i = 0; r == -EEXIST && i < bad; i++)
                if (strcmp(w->in.plugins[i].resource, p->resource) == 0)
                        return failed("%s and %s both serve %s", w->in.plugins[i].path, p->path, p->resource);
        return failed("%s", strerror(-r));
}

static int join_and_print(who *w) {
        _cleanup_(kdp_ctl_who_table_freep) kdp_ctl_who_table *t = NULL;
        size_t bad = 0;
        int r;

        r = kdp_ctl_who_table_build(&w->in, &t, &bad);
        if (r < 0)
                return join_failed(w, r, bad);
        r = w->cfg->json ? kdp_ctl_who_table_print_json(stdout, t) : kdp_ctl_who_table_print(stdout, t);
        if (r < 0)
                return failed("%s", strerror(-r));
        return 0;
}

int kdp_ctl_who_run(const kdp_ctl_who_config *cfg) {
        _cleanup_(who_done) who w = { .cfg = cfg, .deadline = kdp_ctl_client_deadline(cfg->timeout_ms) };
        kdp_ctl_who_input *in = &w.in;
        int r;

        in->plugins = calloc(cfg->n_sockets ? cfg->n_sockets : 1, sizeof(*in->plugins));
        r = in->plugins ? 0 : -ENOMEM;
        for (; r >= 0 && in->n_plugins < cfg->n_sockets; in->n_plugins++)
                r = kdp_ctl_who_table_parse_socket(cfg->sockets[in->n_plugins], &in->plugins[in->n_plugins]);
        if (r < 0)
                r = failed("%s", strerror(-r));
        if (r >= 0)
                r = ask_kubelet(&w);
        for (size_t i = 0; r >= 0 && i < in->n_plugins; i++)
                r = ask_plugin(&w, &in->plugins[i]);
        if (r >= 0)
                r = join_and_print(&w);
        return r < 0;
}
