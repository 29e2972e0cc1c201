/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * PodResources List (see pod-resources.h).
 *
 * A pod_call is one List: the loop thread creates it, the CQ thread sees its
 * completion and only posts it back to the loop (it touches nothing else);
 * the loop unpacks it and frees it. `pr` is cleared, on the loop thread, when
 * the owner frees the client with the call in flight: the completion is then
 * just freed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <kdp/backend.h>
#include <kdp/log.h>

#include "pod-resources.h"
#include "proto-conv.h"
#include "tag.h"
#include "unary.h"

#define LIST_METHOD "/v1.PodResourcesLister/List"

typedef struct pod_call pod_call;

struct kdp_pod_resources {
        kdp_loop *loop;
        grpc_completion_queue *cq;
        char *socket_path;
        uint64_t period_ms;
        kdp_pod_resources_fn fn;
        void *userdata;
        kdp_loop_source *period_timer;
        kdp_loop_source *soon_timer;
        bool soon_armed;
        bool again;                     /* a List was asked for while one was in flight */
        pod_call *call;                 /* in flight */
        int failing;                    /* 0: the last List worked (or none ran yet); else its error */
};

struct pod_call {
        kdp_tag tag;
        kdp_loop *loop;
        kdp_pod_resources *pr;          /* NULL once the client is gone */
        uint64_t started_usec;
        kdp_unary rpc;
};

/* ---- the result ---- */

void kdp_pod_resources_list_done(kdp_pod_resources_list *l) {
        for (size_t i = 0; i < l->n_resources; i++) {
                for (size_t j = 0; j < l->resources[i].n_ids; j++)
                        free(l->resources[i].ids[j]);
                free(l->resources[i].ids);
                free(l->resources[i].resource);
        }
        free(l->resources);
        *l = (kdp_pod_resources_list){ 0 };
}

const kdp_pod_devices *kdp_pod_resources_list_find(const kdp_pod_resources_list *l, const char *resource) {
        for (size_t i = 0; i < l->n_resources; i++)
                if (strcmp(l->resources[i].resource, resource) == 0)
                        return &l->resources[i];
        return NULL;
}

/* ---- one List ---- */

static pod_call *call_free(pod_call *c) {
        if (!c)
                return NULL;
        kdp_unary_done(&c->rpc);
        free(c);
        return NULL;
}

static void start_list(kdp_pod_resources *pr);

/* The state of the kubelet's List changed: logged once per change, not once per period. */
static void note_outcome(kdp_pod_resources *pr, int r, const char *why) {
        if (r == 0 && pr->failing != 0)
                kdp_log_info("Listed pod resources again", KDP_F_STR("socket", pr->socket_path));
        else if (r != 0 && pr->failing == 0)
                kdp_log_warning_errno(r, "Failed to list pod resources; keeping what the last list said, retrying",
                                      KDP_F_STR("socket", pr->socket_path), KDP_F_STR("reason", why),
                                      KDP_F_INT("periodMs", pr->period_ms));
        else if (r != 0)
                kdp_log_v(2, "Failed to list pod resources", KDP_F_STR("socket", pr->socket_path),
                          KDP_F_STR("reason", why));
        pr->failing = r;
}

static void list_finished(kdp_pod_resources *pr, pod_call *c, bool ok) {
        _cleanup_free_ char *details = grpc_slice_to_c_string(c->rpc.details);
        kdp_pod_resources_list l = { 0 };
        char why[300];
        int r;

        if (!ok) {
                note_outcome(pr, -EIO, "the call failed");
                return;
        }
        if (c->rpc.status != GRPC_STATUS_OK) {
                snprintf(why, sizeof(why), "status %d: %s", (int) c->rpc.status, details ? details : "");
                note_outcome(pr, c->rpc.status == GRPC_STATUS_RESOURCE_EXHAUSTED ? -EMSGSIZE : -ECOMM, why);
                return;
        }
        r = kdp_proto_conv_unpack_pod_resources(c->rpc.response, KDP_POD_RESOURCES_MAX_MESSAGE, &l, why, sizeof(why));
        if (r == -EMSGSIZE)
                snprintf(why, sizeof(why), "answer over 16 MiB");
        else if (r == -EBADMSG || r == -ENOMEM)
                snprintf(why, sizeof(why), r == -ENOMEM ? "out of memory" : "malformed ListPodResourcesResponse");
        if (r < 0) {
                note_outcome(pr, r, why);
                return;
        }
        note_outcome(pr, 0, NULL);
        kdp_log_v(4, "Listed pod resources", KDP_F_INT("resources", l.n_resources));
        pr->fn(&l, c->started_usec, pr->userdata);
        kdp_pod_resources_list_done(&l);
}

typedef struct call_done {
        pod_call *c;
        bool ok;
} call_done;

static void on_list_posted(kdp_loop *loop, void *userdata) {
        call_done *done = userdata;
        pod_call *c = done->c;
        kdp_pod_resources *pr = c->pr;
        bool ok = done->ok;

        free(done);
        if (pr) {
                pr->call = NULL;
                list_finished(pr, c, ok);
        }
        call_free(c);
        if (pr && pr->again) {
                pr->again = false;
                start_list(pr);
        }
}

/* CQ thread: only hands the call back to the loop. */
static void on_list_done(kdp_tag *tag, bool ok) {
        pod_call *c = KDP_CONTAINER_OF(tag, pod_call, tag);
        call_done *done = malloc(sizeof(*done));

        if (done)
                *done = (call_done){ .c = c, .ok = ok };
        if (!done || kdp_loop_post(c->loop, on_list_posted, done) < 0) {
                free(done);
                kdp_log_error(-ENOMEM, "Lost a pod resources answer");
        }
}

static int call_start(kdp_pod_resources *pr, pod_call *c) {
        _cleanup_free_ char *target = NULL;
        grpc_arg args[] = {
                { .type = GRPC_ARG_INTEGER, .key = (char *) GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, .value.integer = 1 },
                { .type = GRPC_ARG_INTEGER, .key = (char *) GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
                  .value.integer = KDP_POD_RESOURCES_MAX_MESSAGE },
        };
        grpc_channel_args cargs = { .num_args = KDP_ELEMENTSOF(args), .args = args };
        int r;

        if (asprintf(&target, "unix:%s", pr->socket_path) < 0)
                return -ENOMEM;
        r = kdp_proto_conv_pack_empty(&c->rpc.request);    /* ListPodResourcesRequest has no fields */
        if (r < 0)
                return r;
        c->tag.on_done = on_list_done;
        return kdp_unary_start(&c->rpc, target, &cargs, pr->cq, LIST_METHOD, KDP_POD_RESOURCES_DEADLINE_MS,
                               &c->tag);
}

static void start_list(kdp_pod_resources *pr) {
        struct stat st;
        pod_call *c;
        int r;

        if (pr->call) {
                pr->again = true;
                return;
        }
        if (stat(pr->socket_path, &st) < 0) {
                note_outcome(pr, -errno, "no socket");
                return;
        }
        if (!S_ISSOCK(st.st_mode)) {
                note_outcome(pr, -ENOTSOCK, "no socket");
                return;
        }
        c = calloc(1, sizeof(*c));
        if (!c) {
                note_outcome(pr, -ENOMEM, "out of memory");
                return;
        }
        c->loop = pr->loop;
        c->pr = pr;
        kdp_unary_init(&c->rpc);
        c->started_usec = kdp_backend_now_usec(NULL);
        r = call_start(pr, c);
        if (r < 0) {
                call_free(c);
                note_outcome(pr, r, "the call could not start");
                return;
        }
        pr->call = c;
}

static void on_period(kdp_loop *loop, void *userdata) {
        start_list(userdata);
}

static void on_soon(kdp_loop *loop, void *userdata) {
        kdp_pod_resources *pr = userdata;

        pr->soon_armed = false;
        start_list(pr);
}

void kdp_pod_resources_soon(kdp_pod_resources *pr) {
        if (!pr || pr->soon_armed)
                return;
        if (kdp_loop_timer_arm(pr->soon_timer, KDP_POD_RESOURCES_AFTER_ALLOCATE_MS, 0) >= 0)
                pr->soon_armed = true;
}

int kdp_pod_resources_new(kdp_loop *loop, grpc_completion_queue *cq, const char *socket_path, uint64_t period_ms,
                          kdp_pod_resources_fn fn, void *userdata, kdp_pod_resources **ret) {
        kdp_pod_resources *pr = calloc(1, sizeof(*pr));
        int r;

        if (!pr)
                return -ENOMEM;
        *pr = (kdp_pod_resources){
                .loop = loop,
                .cq = cq,
                .period_ms = period_ms ? period_ms : KDP_POD_RESOURCES_PERIOD_MS,
                .fn = fn,
                .userdata = userdata,
                .socket_path = strdup(socket_path),
        };
        r = pr->socket_path ? 0 : -ENOMEM;
        if (r >= 0)
                r = kdp_loop_add_timer(loop, on_period, pr, &pr->period_timer);
        if (r >= 0)
                r = kdp_loop_add_timer(loop, on_soon, pr, &pr->soon_timer);
        if (r >= 0)
                r = kdp_loop_timer_arm(pr->period_timer, 0, pr->period_ms);
        if (r < 0) {
                kdp_pod_resources_free(pr);
                return r;
        }
        kdp_log_info("Following pod resources", KDP_F_STR("socket", pr->socket_path),
                     KDP_F_INT("periodMs", pr->period_ms));
        *ret = pr;
        return 0;
}

kdp_pod_resources *kdp_pod_resources_free(kdp_pod_resources *pr) {
        if (!pr)
                return NULL;
        if (pr->call) {
                pr->call->pr = NULL;            /* its completion, posted to the loop, frees it */
                grpc_call_cancel(pr->call->rpc.call, NULL);
        }
        kdp_loop_remove(pr->period_timer);
        kdp_loop_remove(pr->soon_timer);
        free(pr->socket_path);
        free(pr);
        return NULL;
}
