/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Stand-in kubelet (docs/kubelet.md §1–§5; see ctl-kubelet.h).
 *
 *   main thread   blocks SIGINT/SIGTERM before grpc_init, starts everything,
 *                 waits on a signalfd, an eventfd (admissions done) and
 *                 --duration, then stops: stop listening and remove
 *                 kubelet.sock, cancel registrations, join them, finish the
 *                 server shutdown (docs/stack.md §1 order)
 *   cq thread     serves kubelet.sock and never blocks: a valid Register gets
 *                 a registration thread, anything else is answered at once
 *   reg threads   one per Register: dial back, GetDevicePluginOptions, answer
 *                 Register, follow ListAndWatch, run the admissions
 *   watcher       (--plugins-registry, docs/kubelet.md §1.7) the plugin watcher:
 *                 walks the registry at start, then follows it with inotify;
 *                 each socket found gets a reg thread, each socket gone or
 *                 replaced is deregistered, and a refused socket is tried
 *                 again 0.5 s, 1 s, 2 s, 4 s, then every 8 s while it stays
 *
 *   Register ───────> cq thread ─> reg thread: ─────────────────> dial endpoint,
 *                                                                 GetDevicePluginOptions,
 *   <registry>/x.sock ─> watcher ─> reg thread: dial x.sock,      answer (Register reply |
 *     (inotify, walk)               GetInfo (1 s), type and       NotifyRegistrationStatus),
 *                                   ValidatePlugin ─────────────> ListAndWatch, admissions
 *
 * Both paths share the connection, the events on stdout, the resources and
 * what a newer registration of a resource does to the older one (closes it,
 * or with --duplicate-registration keep-old keeps it, its updates applied,
 * until its stream's end disconnects whichever is registered then: the
 * kubelet 1.25-1.36 handler.go runClient, k/k#121994); only the way in and
 * the answer differ. A watcher reg dials the endpoint GetInfo
 * names, or the registry socket itself, and prints that path as its endpoint.
 *
 * Ownership: the kubelet owns every Register reg (list `regs`; joined when a
 * later Register finds it finished, or at shutdown) and every resource; the
 * watcher thread owns its plugins (list `plugins`), each its latest reg, and
 * joins them. A reg owns its clients and, until it answers it, the Register
 * call; the reply's completion on the cq thread frees the call. k->lock
 * guards the lists of regs, the resource state, the admissions, each reg's
 * `client`/`info`/`cancelled`/`validated`/`finished` and stdout, so a
 * resource's events print in the order its state changed.
 */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include <kdp/backend.h>
#include <kdp/cleanup.h>
#include <kdp/log.h>

#include "ctl-client.h"
#include "ctl-kubelet.h"
#include "pluginregistration/v1/api.pb-c.h"
#include "podresources/v1/api.pb-c.h"

#define KUBELET_SOCKET "kubelet.sock"
#define CHECKPOINT_FILE "kubelet_internal_checkpoint"
#define REGISTER_METHOD "/v1beta1.Registration/Register"
#define REGISTRATION_SERVICE "v1beta1.Registration"
#define DIAL_TIMEOUT_MS 10000
#define PRESTART_TIMEOUT_MS 30000
#define SHUTDOWN_GRACE_MS 1000
#define MAX_REGS 256                            /* live registration threads */
/* The plugin watcher (pkg/kubelet/pluginmanager, the device manager's handler) */
#define PLUGIN_TYPE "DevicePlugin"
#define INFO_TIMEOUT_MS 1000
#define NOTIFY_TIMEOUT_MS 5000
#define RETRY_FIRST_MS 500                      /* the reconciler's back-off, doubling */
#define RETRY_MAX_MS 8000
#define REGISTER_FAILED "RegisterPlugin error -- plugin registration failed with err: "

#define container_of(p, type, member) ((type *) ((char *) (p) - offsetof(type, member)))

typedef struct kubelet kubelet;
typedef struct reg reg;
typedef struct plugin plugin;

/* Every completion-queue tag: the cq loop only calls on_done. */
typedef struct ctl_tag {
        void (*on_done)(struct ctl_tag *t, bool ok);
} ctl_tag;

/* One call on kubelet.sock, from request_*call until its reply completed. */
typedef struct srv_call {
        ctl_tag tag_new, tag_reply;
        kubelet *k;
        bool generic;
        grpc_call *call;
        gpr_timespec deadline;                  /* Register only */
        grpc_byte_buffer *payload;              /* Register only */
        grpc_call_details details;              /* catch-all only */
        grpc_metadata_array md;
        grpc_byte_buffer *reply;
        int cancelled;
} srv_call;

typedef struct strv {
        char **v;
        size_t n, size;
} strv;

typedef struct resource {
        char *name;
        reg *current;                           /* the live registration, borrowed */
        strv healthy, unhealthy;                /* sorted, unique */
        strv numa;                              /* "id\x01n1,n2", sorted */
        strv allocated;                         /* by earlier admissions */
        struct resource *next;
} resource;

typedef struct admission {
        const char *resource;                   /* borrowed from the config */
        unsigned n;
        bool claimed;
        strv pod;                               /* the devices its pod holds (sorted); none once it ended */
} admission;

struct reg {
        kubelet *k;
        srv_call *rq;                           /* Register: until answered */
        plugin *plugin;                         /* watcher: the socket it came from, borrowed */
        kdp_ctl_client *info;                   /* watcher: of that socket, until NotifyRegistrationStatus */
        char *resource, *endpoint, *path;
        gpr_timespec deadline;                  /* dial and GetDevicePluginOptions */
        kdp_ctl_client *client;
        bool cancelled, finished;
        bool superseded;                        /* keep-old: a newer one has the resource, this one stays */
        bool validated;                         /* watcher: passed ValidatePlugin */
        bool refused;                           /* printed as register-rejected (watcher: read once joined) */
        bool retry;                             /* watcher: refused so that the reconciler tries again */
        bool pre_start, preferred;
        pthread_t thread;
        reg *next;
};

/* A socket the watcher found in the registry (the plugin manager's desired state). */
struct plugin {
        kubelet *k;
        char *path;                             /* <registry>/<name> */
        dev_t dev;
        ino_t ino;
        reg *g;                                 /* its latest registration, owned */
        bool running;                           /* g's thread not joined yet */
        bool removed;                           /* its file is gone or replaced */
        int64_t retry_at_ms;                    /* the next attempt; -1: none */
        int64_t backoff_ms;
        plugin *next;
};

struct kubelet {
        const kdp_ctl_kubelet_config *cfg;
        char *dir, *socket_path;
        grpc_completion_queue *cq;
        grpc_server *server;
        void *register_method;
        pthread_t cq_thread;
        ctl_tag tag_shutdown;
        int event_fd;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool stopping, shutdown_done;
        reg *regs;
        size_t n_regs;
        resource *resources;
        admission *admits;
        size_t n_admits_done, n_admits_failed;
        unsigned drops_before_stream;           /* of cfg->drop_before_stream, done */
        unsigned dial_backs_failed;             /* of cfg->fail_dial_back, done */
        char *registry;                         /* the plugins registry, resolved; NULL: no watcher */
        int inotify_fd, wake_fd;                /* the watcher's; wake_fd: a reg of its ended, or stop */
        pthread_t pw_thread;
        bool pw_started;
        plugin *plugins;                        /* the watcher thread's */
};

/* ---- string sets ---- */

static void strv_clear(strv *s) {
        for (size_t i = 0; i < s->n; i++)
                free(s->v[i]);
        s->n = 0;
}

static void strv_done(strv *s) {
        strv_clear(s);
        free(s->v);
        *s = (strv){ 0 };
}

static int strv_push(strv *s, const char *x) {
        char *d;

        if (s->n == s->size) {
                size_t size = s->size ? s->size * 2 : 8;
                char **v = reallocarray(s->v, size, sizeof(*v));

                if (!v)
                        return -ENOMEM;
                s->v = v;
                s->size = size;
        }
        d = strdup(x);
        if (!d)
                return -ENOMEM;
        s->v[s->n++] = d;
        return 0;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static void strv_sort_unique(strv *s) {
        size_t j = 0;

        if (s->n == 0)
                return;
        qsort(s->v, s->n, sizeof(*s->v), cmp_str);
        for (size_t i = 1; i < s->n; i++) {
                if (strcmp(s->v[i], s->v[j]) == 0)
                        free(s->v[i]);
                else
                        s->v[++j] = s->v[i];
        }
        s->n = j + 1;
}

/* `s` must be sorted. */
static bool strv_has(const strv *s, const char *x) {
        return s->n > 0 && bsearch(&x, s->v, s->n, sizeof(*s->v), cmp_str);
}

static bool strv_has_unsorted(const strv *s, const char *x) {
        for (size_t i = 0; i < s->n; i++)
                if (strcmp(s->v[i], x) == 0)
                        return true;
        return false;
}

static int strv_merge(strv *dst, const strv *src) {
        for (size_t i = 0; i < src->n; i++)
                if (strv_push(dst, src->v[i]) < 0)
                        return -ENOMEM;
        strv_sort_unique(dst);
        return 0;
}

static kdp_ctl_client_ids strv_ids(const strv *s) {
        return (kdp_ctl_client_ids){ .v = s->v, .n = s->n };
}

/* ---- resource names and Go-style texts ---- */

static bool lower_alnum(char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool any_alnum(char c) {
        return lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])? */
static bool dns1123_label(const char *s, size_t n) {
        if (n == 0 || !lower_alnum(s[0]) || !lower_alnum(s[n - 1]))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!lower_alnum(s[i]) && s[i] != '-')
                        return false;
        return true;
}

static bool dns1123_subdomain(const char *s, size_t n) {
        size_t start = 0;

        if (n == 0 || n > 253)
                return false;
        for (size_t i = 0; i <= n; i++) {
                if (i < n && s[i] != '.')
                        continue;
                if (!dns1123_label(s + start, i - start))
                        return false;
                start = i + 1;
        }
        return true;
}

/* The name part of a qualified name: ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], at most 63. */
static bool qualified_name_part(const char *s) {
        size_t n = strlen(s);

        if (n == 0 || n > 63 || !any_alnum(s[0]) || !any_alnum(s[n - 1]))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!any_alnum(s[i]) && !strchr("-_.", s[i]))
                        return false;
        return true;
}

bool kdp_ctl_kubelet_resource_name_valid(const char *name) {
        static const char requests[] = "requests.";
        const char *slash = strchr(name, '/');
        char prefix[256];
        size_t n;

        if (!slash || strstr(name, "kubernetes.io/") || strncmp(name, requests, strlen(requests)) == 0)
                return false;
        if (strchr(slash + 1, '/'))
                return false;
        /* IsQualifiedName("requests." + name) */
        n = strlen(requests) + (size_t) (slash - name);
        if (n > 253)
                return false;
        (void) snprintf(prefix, sizeof(prefix), "%s%.*s", requests, (int) (slash - name), name);
        return dns1123_subdomain(prefix, n) && qualified_name_part(slash + 1);
}

/* Go's %q for the strings kubelet errors quote. */
static void put_go_quoted(FILE *f, const char *s) {
        putc('"', f);
        for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
                const char *esc = NULL;

                switch (*p) {
                case '"': esc = "\\\""; break;
                case '\\': esc = "\\\\"; break;
                case '\a': esc = "\\a"; break;
                case '\b': esc = "\\b"; break;
                case '\f': esc = "\\f"; break;
                case '\n': esc = "\\n"; break;
                case '\r': esc = "\\r"; break;
                case '\t': esc = "\\t"; break;
                case '\v': esc = "\\v"; break;
                default: break;
                }
                if (esc)
                        fputs(esc, f);
                else if (*p < 0x20 || *p == 0x7f)
                        fprintf(f, "\\x%02x", *p);
                else
                        putc(*p, f);
        }
        putc('"', f);
}

/* The text a memstream `f` wrote into `buf`; NULL without memory. */
static char *text_close(FILE *f, char *const *buf) {
        if (fclose(f) != 0) {
                free(*buf);
                return NULL;
        }
        return *buf;
}

/* `before`, then `quoted` as Go's %q, then `after`: a new string, NULL without memory. */
static char *text_quoted(const char *before, const char *quoted, const char *after) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        fputs(before, f);
        put_go_quoted(f, quoted);
        fputs(after, f);
        return text_close(f, &buf);
}

/* errInvalidResourceName, after `prefix` (a literal) */
#define TEXT_NAME_INVALID(prefix, name) text_quoted(prefix "the ResourceName ", (name), " is invalid")

/* "requested API version ..." or "the ResourceName ... is invalid"; 0 if the request is valid. */
static int register_validate(const V1beta1__RegisterRequest *req, char **ret_err) {
        char *err;

        if (strcmp(req->version, "v1beta1") != 0)
                err = text_quoted("requested API version ", req->version,
                                  " is not supported by kubelet. Supported version is [\"v1beta1\"]");
        else if (!kdp_ctl_kubelet_resource_name_valid(req->resource_name))
                err = TEXT_NAME_INVALID("", req->resource_name);
        else
                return 0;
        if (!err)
                return -ENOMEM;
        *ret_err = err;
        return -EINVAL;
}

/* Go's "manager version, v1beta1, is not among plugin supported versions %v" of the []string. */
static char *text_versions(char *const *versions, size_t n_versions) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        fputs("manager version, v1beta1, is not among plugin supported versions [", f);
        for (size_t i = 0; i < n_versions; i++)
                fprintf(f, "%s%s", i > 0 ? " " : "", versions[i]);
        putc(']', f);
        return text_close(f, &buf);
}

/* The device manager's ValidatePlugin (docs/kubelet.md §1.7); 0 if the plugin is valid. */
static int plugin_validate(const Pluginregistration__PluginInfo *info, char **ret_err) {
        bool v1beta1 = false;
        char *err;

        for (size_t i = 0; i < info->n_supported_versions; i++)
                v1beta1 = v1beta1 || strcmp(info->supported_versions[i], "v1beta1") == 0;
        if (!v1beta1)
                err = text_versions(info->supported_versions, info->n_supported_versions);
        else if (!kdp_ctl_kubelet_resource_name_valid(info->name))
                err = TEXT_NAME_INVALID("invalid name of device plugin socket: ", info->name);
        else
                return 0;
        if (!err)
                return -ENOMEM;
        *ret_err = err;
        return -EINVAL;
}

/*
 * ---- events on stdout (k->lock held) ----
 * stdout is fully buffered and flushed after each event, so an event of
 * several lines (an admission) reaches a reader in one write.
 */

static void event_rejected(const char *name, const char *err) {
        fputs("register-rejected resource=", stdout);
        kdp_ctl_client_put_value(stdout, name);
        fputs(" error=", stdout);
        kdp_ctl_client_put_value(stdout, err);
        putc('\n', stdout);
        (void) fflush(stdout);
}

static void event_registered(const reg *g) {
        fprintf(stdout, "registered resource=%s endpoint=", g->resource);
        kdp_ctl_client_put_value(stdout, g->endpoint);
        fprintf(stdout, " pre_start_required=%s preferred_available=%s\n", g->pre_start ? "true" : "false",
                g->preferred ? "true" : "false");
        (void) fflush(stdout);
}

static void put_numa(const strv *numa) {
        for (size_t i = 0; i < numa->n; i++) {
                const char *sep = strchr(numa->v[i], '\x01');
                _cleanup_free_ char *id = strndup(numa->v[i], (size_t) (sep - numa->v[i]));

                if (i > 0)
                        putc(';', stdout);
                kdp_ctl_client_put_value(stdout, id ? id : "");
                fprintf(stdout, ":%s", sep + 1);
        }
}

static void event_devices(const resource *res) {
        fprintf(stdout, "devices resource=%s capacity=%zu allocatable=%zu healthy=", res->name,
                res->healthy.n + res->unhealthy.n, res->healthy.n);
        kdp_ctl_client_put_ids(stdout, res->healthy.v, res->healthy.n);
        fputs(" unhealthy=", stdout);
        kdp_ctl_client_put_ids(stdout, res->unhealthy.v, res->unhealthy.n);
        fputs(" numa=", stdout);
        put_numa(&res->numa);
        putc('\n', stdout);
        (void) fflush(stdout);
}

static void event_stream_ended(const resource *res, const kdp_ctl_client_status *st) {
        fprintf(stdout, "stream-ended resource=%s status=%s message=", res->name,
                kdp_ctl_client_code_name(st->code, false));
        kdp_ctl_client_put_value(stdout, st->message);
        putc('\n', stdout);
        (void) fflush(stdout);
}

static void event_admit_failed(const char *name, const char *err) {
        fprintf(stdout, "admit-failed resource=%s error=", name);
        kdp_ctl_client_put_value(stdout, err);
        putc('\n', stdout);
        (void) fflush(stdout);
}

/* ---- resources (k->lock held) ---- */

static resource *resource_free(resource *res) {
        if (!res)
                return NULL;
        strv_done(&res->healthy);
        strv_done(&res->unhealthy);
        strv_done(&res->numa);
        strv_done(&res->allocated);
        free(res->name);
        free(res);
        return NULL;
}

static resource *resource_find(kubelet *k, const char *name, bool create) {
        resource *res;

        for (res = k->resources; res; res = res->next)
                if (strcmp(res->name, name) == 0)
                        return res;
        if (!create)
                return NULL;
        res = calloc(1, sizeof(*res));
        if (!res || !(res->name = strdup(name)))
                return resource_free(res);
        res->next = k->resources;
        k->resources = res;
        return res;
}

static int numa_push(strv *numa, const V1beta1__Device *d) {
        _cleanup_free_ char *nodes = NULL, *entry = NULL;
        int r;

        r = kdp_ctl_client_numa_string(d, &nodes);
        if (r < 0 || !nodes)
                return r;
        if (asprintf(&entry, "%s\x01%s", d->id, nodes) < 0)
                return -ENOMEM;
        return strv_push(numa, entry);
}

/* Every message replaces the device set (docs/kubelet.md §2.2); health is exactly "Healthy" or not. */
static int resource_update(resource *res, const V1beta1__ListAndWatchResponse *m) {
        int r = 0;

        strv_clear(&res->healthy);
        strv_clear(&res->unhealthy);
        strv_clear(&res->numa);
        for (size_t i = 0; r >= 0 && i < m->n_devices; i++) {
                const V1beta1__Device *d = m->devices[i];

                r = strv_push(strcmp(d->health, "Healthy") == 0 ? &res->healthy : &res->unhealthy, d->id);
                if (r >= 0)
                        r = numa_push(&res->numa, d);
        }
        strv_sort_unique(&res->healthy);
        strv_sort_unique(&res->unhealthy);
        strv_sort_unique(&res->numa);
        return r;
}

/* Stream end: every device unhealthy, capacity kept (markResourceUnhealthy). */
static int resource_mark_unhealthy(resource *res) {
        int r = strv_merge(&res->unhealthy, &res->healthy);

        strv_clear(&res->healthy);
        return r;
}

static int64_t now_ms(void) {
        return (int64_t) (kdp_backend_now_usec(NULL) / 1000);
}

/* ---- kubelet.sock calls (cq thread, except srv_reply) ---- */

static void on_register_call(ctl_tag *t, bool ok);
static void on_generic_call(ctl_tag *t, bool ok);
static void on_reply_done(ctl_tag *t, bool ok);
static int reg_start(kubelet *k, srv_call *sc, const V1beta1__RegisterRequest *req);

static srv_call *srv_call_free(srv_call *sc) {
        if (!sc)
                return NULL;
        if (sc->call)
                grpc_call_unref(sc->call);
        if (sc->payload)
                grpc_byte_buffer_destroy(sc->payload);
        if (sc->reply)
                grpc_byte_buffer_destroy(sc->reply);
        if (sc->generic)
                grpc_call_details_destroy(&sc->details);
        grpc_metadata_array_destroy(&sc->md);
        free(sc);
        return NULL;
}

static srv_call *srv_call_new(kubelet *k, bool generic) {
        srv_call *sc = calloc(1, sizeof(*sc));

        if (!sc)
                return NULL;
        sc->k = k;
        sc->generic = generic;
        sc->tag_new.on_done = generic ? on_generic_call : on_register_call;
        sc->tag_reply.on_done = on_reply_done;
        grpc_metadata_array_init(&sc->md);
        if (generic)
                grpc_call_details_init(&sc->details);
        return sc;
}

static void arm_call(kubelet *k, bool generic) {
        srv_call *sc = srv_call_new(k, generic);
        grpc_call_error e;

        if (!sc) {
                (void) kdp_log_error(-ENOMEM, "Failed to accept calls");
                return;
        }
        if (generic)
                e = grpc_server_request_call(k->server, &sc->call, &sc->details, &sc->md, k->cq, k->cq,
                                             &sc->tag_new);
        else
                e = grpc_server_request_registered_call(k->server, k->register_method, &sc->call,
                                                        &sc->deadline, &sc->md, &sc->payload, k->cq, k->cq,
                                                        &sc->tag_new);
        if (e != GRPC_CALL_OK)
                sc = srv_call_free(sc);
}

/* Answers the call with `reply` (taken; NULL: an Empty message); its completion frees `sc`. Once per call. */
static void srv_reply_message(srv_call *sc, grpc_status_code code, const char *text, grpc_byte_buffer *reply) {
        grpc_slice details = grpc_slice_from_copied_string(text ? text : "");
        grpc_op ops[4] = { 0 }, *op = ops;
        grpc_call_error e;

        op->op = GRPC_OP_SEND_INITIAL_METADATA;
        op++;
        if (code == GRPC_STATUS_OK) {
                grpc_slice empty = grpc_empty_slice();   /* an Empty message is zero bytes */

                sc->reply = reply ? reply : grpc_raw_byte_buffer_create(&empty, 1);
                reply = NULL;
                op->op = GRPC_OP_SEND_MESSAGE;
                op->data.send_message.send_message = sc->reply;
                op++;
        }
        op->op = GRPC_OP_SEND_STATUS_FROM_SERVER;
        op->data.send_status_from_server.status = code;
        op->data.send_status_from_server.status_details = &details;
        op++;
        op->op = GRPC_OP_RECV_CLOSE_ON_SERVER;
        op->data.recv_close_on_server.cancelled = &sc->cancelled;
        op++;
        e = grpc_call_start_batch(sc->call, ops, (size_t) (op - ops), &sc->tag_reply, NULL);
        grpc_slice_unref(details);
        if (reply)
                grpc_byte_buffer_destroy(reply);
        if (e != GRPC_CALL_OK)
                sc = srv_call_free(sc);
}

static void srv_reply(srv_call *sc, grpc_status_code code, const char *text) {
        srv_reply_message(sc, code, text, NULL);
}

/*
 * ---- PodResources answers (k->lock held) ----
 * Built on the heap, every part malloc'ed, and released with
 * *__free_unpacked, which frees exactly such a tree.
 */

/* An ID against an "id\x01n1,n2" of res->numa, in the order strcmp sorted them ('\x01' sorts first). */
static int cmp_numa_id(const void *key, const void *elem) {
        const char *id = key, *e = *(char *const *) elem;
        size_t n = strcspn(e, "\x01");
        int c = strncmp(id, e, n);

        return c != 0 ? c : id[n] != '\0';
}

/* "n1,n2" of `id` in res->numa; NULL when it has no topology (or `res` is NULL). */
static const char *resource_numa(const resource *res, const char *id) {
        char **e = res && res->numa.n > 0 ? bsearch(id, res->numa.v, res->numa.n, sizeof(*res->numa.v), cmp_numa_id)
                                          : NULL;

        return e ? *e + strlen(id) + 1 : NULL;
}

/* A message of `desc`, initialised; NULL on allocation failure. */
static void *message_new(const ProtobufCMessageDescriptor *desc) {
        ProtobufCMessage *m = calloc(1, desc->sizeof_message);

        if (m)
                protobuf_c_message_init(desc, m);
        return m;
}

static V1__TopologyInfo *topology_new(int64_t node) {
        V1__TopologyInfo *t = message_new(&v1__topology_info__descriptor);

        if (!t)
                return NULL;
        t->nodes = calloc(1, sizeof(*t->nodes));
        if (t->nodes && (t->nodes[0] = message_new(&v1__numanode__descriptor))) {
                t->nodes[0]->id = node;
                t->n_nodes = 1;
                return t;
        }
        v1__topology_info__free_unpacked(t, NULL);
        return NULL;
}

/* One device on one NUMA node (`node` < 0: without topology). */
static V1__ContainerDevices *devices_new(const char *name, const char *id, int64_t node) {
        V1__ContainerDevices *d = message_new(&v1__container_devices__descriptor);

        if (!d)
                return NULL;
        d->resource_name = strdup(name);
        d->device_ids = calloc(1, sizeof(*d->device_ids));
        if (d->device_ids && (d->device_ids[0] = strdup(id)))
                d->n_device_ids = 1;
        if (node >= 0)
                d->topology = topology_new(node);
        if (d->resource_name && d->n_device_ids == 1 && (node < 0 || d->topology))
                return d;
        v1__container_devices__free_unpacked(d, NULL);
        return NULL;
}

static int devices_push(V1__ContainerDevices ***v, size_t *n, V1__ContainerDevices *d) {
        V1__ContainerDevices **nv;

        if (!d)
                return -ENOMEM;
        nv = reallocarray(*v, *n + 1, sizeof(*nv));
        if (!nv) {
                v1__container_devices__free_unpacked(d, NULL);
                return -ENOMEM;
        }
        nv[(*n)++] = d;
        *v = nv;
        return 0;
}

/* One ContainerDevices per NUMA node of `id`, or one without topology, as the kubelet splits them. */
static int devices_append(V1__ContainerDevices ***v, size_t *n, const resource *res, const char *name,
                          const char *id) {
        const char *nodes = resource_numa(res, id);
        int r = 0;

        if (!nodes)
                return devices_push(v, n, devices_new(name, id, -1));
        for (const char *p = nodes; r >= 0 && *p;) {
                char *end;
                long long node = strtoll(p, &end, 10);

                r = devices_push(v, n, devices_new(name, id, node));
                p = *end ? end + 1 : end;
        }
        return r;
}

/* pod-<i> in namespace default, one container c0 without devices. */
static V1__PodResources *pod_new(size_t i) {
        V1__PodResources *p = message_new(&v1__pod_resources__descriptor);
        V1__ContainerResources *c = NULL;

        if (!p)
                return NULL;
        p->containers = calloc(1, sizeof(*p->containers));
        if (p->containers && (c = message_new(&v1__container_resources__descriptor))) {
                p->containers[0] = c;
                p->n_containers = 1;
                c->name = strdup("c0");
        }
        if (asprintf(&p->name, "pod-%zu", i) < 0)
                p->name = NULL;
        p->namespace_ = strdup("default");
        if (c && c->name && p->name && p->namespace_)
                return p;
        v1__pod_resources__free_unpacked(p, NULL);
        return NULL;
}

/* List: one pod per admission whose pod runs, its one container holding the pod's devices. */
static int pod_list_fill(kubelet *k, ProtobufCMessage *m, size_t *ret_n) {
        V1__ListPodResourcesResponse *resp = (V1__ListPodResourcesResponse *) m;
        int r = 0;

        resp->pod_resources = calloc(k->cfg->n_admits ? k->cfg->n_admits : 1, sizeof(*resp->pod_resources));
        if (!resp->pod_resources)
                return -ENOMEM;
        for (size_t i = 0; r >= 0 && i < k->cfg->n_admits; i++) {
                const admission *a = &k->admits[i];
                const resource *res = resource_find(k, a->resource, false);
                V1__ContainerResources *c;

                if (a->pod.n == 0)
                        continue;
                resp->pod_resources[resp->n_pod_resources] = pod_new(i);
                if (!resp->pod_resources[resp->n_pod_resources])
                        return -ENOMEM;
                c = resp->pod_resources[resp->n_pod_resources++]->containers[0];
                for (size_t j = 0; r >= 0 && j < a->pod.n; j++)
                        r = devices_append(&c->devices, &c->n_devices, res, a->resource, a->pod.v[j]);
        }
        *ret_n = resp->n_pod_resources;
        return r;
}

/* GetAllocatableResources: the healthy devices of every resource. */
static int allocatable_fill(kubelet *k, ProtobufCMessage *m, size_t *ret_n) {
        V1__AllocatableResourcesResponse *resp = (V1__AllocatableResourcesResponse *) m;
        int r = 0;

        *ret_n = 0;
        for (const resource *res = k->resources; r >= 0 && res; res = res->next)
                for (size_t i = 0; r >= 0 && i < res->healthy.n; i++, (*ret_n)++)
                        r = devices_append(&resp->devices, &resp->n_devices, res, res->name, res->healthy.v[i]);
        return r;
}

/* Answers with a message of `desc` that `fill` builds (k->lock held), after printing "<event>=N". */
static void pod_resources_reply(kubelet *k, srv_call *sc, const ProtobufCMessageDescriptor *desc,
                                int (*fill)(kubelet *k, ProtobufCMessage *m, size_t *ret_n), const char *event) {
        ProtobufCMessage *m = message_new(desc);
        grpc_byte_buffer *bb = NULL;
        size_t n = 0;
        int r = -ENOMEM;

        (void) pthread_mutex_lock(&k->lock);
        if (m)
                r = fill(k, m, &n);
        if (r >= 0 && !k->stopping) {
                printf("%s=%zu\n", event, n);
                (void) fflush(stdout);
        }
        (void) pthread_mutex_unlock(&k->lock);
        if (r >= 0)
                bb = kdp_ctl_client_pack_buffer(m);
        if (m)
                protobuf_c_message_free_unpacked(m, NULL);
        if (r < 0)
                srv_reply(sc, GRPC_STATUS_INTERNAL, strerror(-r));
        else
                srv_reply_message(sc, GRPC_STATUS_OK, NULL, bb);
}

/* Answers a PodResources call; false for a method this kubelet does not serve. */
/* List answered with the bytes given. */
static void pod_list_reply_bytes(kubelet *k, srv_call *sc) {
        grpc_slice slice = grpc_slice_from_copied_buffer((const char *) k->cfg->pod_list, k->cfg->pod_list_size);
        grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&slice, 1);

        grpc_slice_unref(slice);
        printf("listed bytes=%zu\n", k->cfg->pod_list_size);
        (void) fflush(stdout);
        srv_reply_message(sc, GRPC_STATUS_OK, NULL, bb);
}

static bool pod_resources_answer(kubelet *k, srv_call *sc, const char *method) {
        if (strcmp(method, KDP_CTL_CLIENT_METHOD_POD_LIST) == 0 && k->cfg->pod_list) {
                pod_list_reply_bytes(k, sc);
                return true;
        }
        if (strcmp(method, KDP_CTL_CLIENT_METHOD_POD_LIST) == 0) {
                pod_resources_reply(k, sc, &v1__list_pod_resources_response__descriptor, pod_list_fill,
                                    "listed pods");
                return true;
        }
        if (strcmp(method, KDP_CTL_CLIENT_METHOD_POD_ALLOCATABLE) != 0 ||
            k->cfg->get_allocatable == KDP_CTL_KUBELET_ALLOCATABLE_UNIMPLEMENTED)
                return false;
        if (k->cfg->get_allocatable == KDP_CTL_KUBELET_ALLOCATABLE_DISABLED)
                srv_reply(sc, GRPC_STATUS_UNKNOWN, KDP_CTL_CLIENT_POD_ALLOCATABLE_DISABLED);
        else
                pod_resources_reply(k, sc, &v1__allocatable_resources_response__descriptor, allocatable_fill,
                                    "allocatable devices");
        return true;
}

static void on_reply_done(ctl_tag *t, bool ok) {
        (void) srv_call_free(container_of(t, srv_call, tag_reply));
}

static V1beta1__RegisterRequest *register_decode(grpc_byte_buffer *bb) {
        grpc_byte_buffer_reader reader;
        V1beta1__RegisterRequest *req;
        grpc_slice s;

        if (!bb || !grpc_byte_buffer_reader_init(&reader, bb))
                return NULL;
        s = grpc_byte_buffer_reader_readall(&reader);
        grpc_byte_buffer_reader_destroy(&reader);
        req = v1beta1__register_request__unpack(NULL, GRPC_SLICE_LENGTH(s), GRPC_SLICE_START_PTR(s));
        grpc_slice_unref(s);
        return req;
}

static void register_reply_error(srv_call *sc, int r) {
        if (r == -ESHUTDOWN)
                srv_reply(sc, GRPC_STATUS_UNAVAILABLE, "kubelet is shutting down");
        else if (r == -EAGAIN)
                srv_reply(sc, GRPC_STATUS_UNKNOWN, "too many registrations in progress");
        else
                srv_reply(sc, GRPC_STATUS_UNKNOWN, strerror(-r));
}

static void register_handle(kubelet *k, srv_call *sc) {
        _cleanup_free_ char *err = NULL;
        V1beta1__RegisterRequest *req;
        int r;

        req = register_decode(sc->payload);
        if (!req) {
                srv_reply(sc, GRPC_STATUS_INTERNAL, "grpc: error unmarshalling request");
                return;
        }
        r = register_validate(req, &err);
        if (r == -EINVAL) {
                (void) pthread_mutex_lock(&k->lock);
                if (!k->stopping)
                        event_rejected(req->resource_name, err);
                (void) pthread_mutex_unlock(&k->lock);
                srv_reply(sc, GRPC_STATUS_UNKNOWN, err);
        } else if (r >= 0)
                r = reg_start(k, sc, req);
        if (r < 0 && r != -EINVAL)
                register_reply_error(sc, r);
        v1beta1__register_request__free_unpacked(req, NULL);
}

static void on_register_call(ctl_tag *t, bool ok) {
        srv_call *sc = container_of(t, srv_call, tag_new);

        if (!ok) {                              /* the server is shutting down */
                (void) srv_call_free(sc);
                return;
        }
        arm_call(sc->k, false);
        register_handle(sc->k, sc);
}

/* The service `method` names if this kubelet serves it ("/SERVICE/NAME"), else NULL. */
static const char *method_service(const kubelet *k, const char *method) {
        const char *const services[] = { REGISTRATION_SERVICE,
                                         k->cfg->pod_resources ? KDP_CTL_CLIENT_POD_RESOURCES_SERVICE : NULL };

        for (size_t i = 0; i < KDP_ELEMENTSOF(services); i++) {
                size_t n = services[i] ? strlen(services[i]) : 0;

                if (n > 0 && method[0] == '/' && strncmp(method + 1, services[i], n) == 0 && method[n + 1] == '/')
                        return services[i];
        }
        return NULL;
}

/* Any other method: what grpc-go (the kubelet's server) answers. */
static void on_generic_call(ctl_tag *t, bool ok) {
        srv_call *sc = container_of(t, srv_call, tag_new);
        _cleanup_free_ char *method = NULL, *text = NULL;
        const char *service;
        char *slash;
        int r;

        if (!ok) {
                (void) srv_call_free(sc);
                return;
        }
        arm_call(sc->k, true);
        method = grpc_slice_to_c_string(sc->details.method);
        if (method && sc->k->cfg->pod_resources && pod_resources_answer(sc->k, sc, method))
                return;
        slash = method ? strrchr(method, '/') : NULL;
        service = method ? method_service(sc->k, method) : NULL;
        if (slash && slash != method && service)
                r = asprintf(&text, "unknown method %s for service %s", slash + 1, service);
        else {
                if (slash)
                        *slash = '\0';
                r = asprintf(&text, "unknown service %s", method ? method + (method[0] == '/') : "");
        }
        if (r < 0)
                text = NULL;
        srv_reply(sc, GRPC_STATUS_UNIMPLEMENTED, text ? text : "unknown method");
}

static void on_shutdown(ctl_tag *t, bool ok) {
        kubelet *k = container_of(t, kubelet, tag_shutdown);

        (void) pthread_mutex_lock(&k->lock);
        k->shutdown_done = true;
        (void) pthread_cond_broadcast(&k->cond);
        (void) pthread_mutex_unlock(&k->lock);
}

static void *cq_thread(void *userdata) {
        kubelet *k = userdata;

        for (;;) {
                grpc_event ev = grpc_completion_queue_next(k->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);

                if (ev.type == GRPC_QUEUE_SHUTDOWN)
                        return NULL;
                if (ev.type == GRPC_OP_COMPLETE) {
                        ctl_tag *t = ev.tag;

                        t->on_done(t, ev.success);
                }
        }
}

/* ---- registrations ---- */

static reg *reg_free(reg *g) {
        if (!g)
                return NULL;
        assert(!g->client && !g->info);
        free(g->resource);
        free(g->endpoint);
        free(g->path);
        free(g);
        return NULL;
}

/* k->lock held. */
static void reg_cancel(reg *g) {
        g->cancelled = true;
        if (g->client)
                kdp_ctl_client_cancel(g->client);
        if (g->info)
                kdp_ctl_client_cancel(g->info);
}

/* Puts `c` in g's `*slot`, where reg_cancel() reaches it. */
static void reg_adopt(reg *g, kdp_ctl_client **slot, kdp_ctl_client *c) {
        (void) pthread_mutex_lock(&g->k->lock);
        *slot = c;
        if (g->cancelled)
                kdp_ctl_client_cancel(c);
        (void) pthread_mutex_unlock(&g->k->lock);
}

static void plugin_notify(reg *g, const char *err);

/* Tells the plugin how it went (`err` NULL: registered): Register's reply, or NotifyRegistrationStatus. */
static void reg_answer(reg *g, const char *err) {
        if (g->rq)
                srv_reply(KDP_TAKE_PTR(g->rq), err ? GRPC_STATUS_UNKNOWN : GRPC_STATUS_OK, err);
        else if (g->plugin)
                plugin_notify(g, err);
}

/* Prints the rejection, unless the kubelet is stopping or (the watcher's) the socket went meanwhile. */
static void reg_print_rejected(reg *g, const char *text) {
        kubelet *k = g->k;

        (void) pthread_mutex_lock(&k->lock);
        if (!k->stopping && !g->cancelled)
                event_rejected(g->resource, text);
        (void) pthread_mutex_unlock(&k->lock);
}

static int reg_refuse(reg *g, const char *text) {
        g->refused = true;
        reg_print_rejected(g, text);
        reg_answer(g, text);
        return -ECONNREFUSED;
}

static int reg_reject(reg *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A failed connection; the watcher's RegisterPlugin wraps its error. */
static int reg_reject(reg *g, const char *fmt, ...) {
        char text[1024];
        int n = 0;
        va_list ap;

        if (g->plugin)
                n = snprintf(text, sizeof(text), "%s", REGISTER_FAILED);
        va_start(ap, fmt);
        (void) vsnprintf(text + n, sizeof(text) - (size_t) n, fmt, ap);
        va_end(ap);
        return reg_refuse(g, text);
}

/* The kubelet's texts: a failed dial, or GetDevicePluginOptions failing on a live connection. */
static int reg_reject_options(reg *g, const kdp_ctl_client_status *st) {
        char err[700];

        kdp_ctl_client_format_go_error(st, err, sizeof(err));
        if (kdp_ctl_client_is_ready(g->client))
                return reg_reject(g, "failed to get device plugin options: %s", err);
        if (st->code == GRPC_STATUS_DEADLINE_EXCEEDED)
                return reg_reject(g, "failed to dial device plugin: context deadline exceeded");
        if (st->code == GRPC_STATUS_CANCELLED)
                return reg_reject(g, "failed to dial device plugin: context canceled");
        return reg_reject(g, "failed to dial device plugin: %s", err);
}

/*
 * Registered: this registration replaces any older one of its resource, which
 * is closed, or (keep-old) only loses the resource name and stays connected.
 */
static int reg_activate(reg *g) {
        kubelet *k = g->k;
        resource *res;

        (void) pthread_mutex_lock(&k->lock);
        if (g->plugin && g->cancelled) {        /* deregistered while it connected */
                (void) pthread_mutex_unlock(&k->lock);
                return -ECANCELED;
        }
        res = resource_find(k, g->resource, true);
        if (res && res->current && res->current != g) {
                if (k->cfg->duplicate_registration == KDP_CTL_KUBELET_DUPLICATE_KEEP_OLD) {
                        kdp_log_info("Overwrote registration; the older client stays connected",
                                     KDP_F_STR("resource", g->resource), KDP_F_STR("endpoint", res->current->endpoint));
                        res->current->superseded = true;
                } else {
                        kdp_log_info("Replaced registration", KDP_F_STR("resource", g->resource),
                                     KDP_F_STR("endpoint", res->current->endpoint));
                        reg_cancel(res->current);
                }
        }
        if (res)
                res->current = g;
        if (!k->stopping)
                event_registered(g);
        (void) pthread_mutex_unlock(&k->lock);
        reg_answer(g, NULL);
        return 0;
}

/* --fail-dial-back: true if g's dial-back is one of the first N, failed as a dial that timed out. */
static bool reg_fail_dial_back(reg *g) {
        kubelet *k = g->k;
        bool fail;

        (void) pthread_mutex_lock(&k->lock);
        fail = k->dial_backs_failed < k->cfg->fail_dial_back;
        if (fail)
                k->dial_backs_failed++;
        (void) pthread_mutex_unlock(&k->lock);
        return fail;
}

static int reg_connect(reg *g) {
        V1beta1__DevicePluginOptions *o = NULL;
        kdp_ctl_client_status st;
        kdp_ctl_client *c;
        int r;

        if (reg_fail_dial_back(g))
                return reg_reject(g, "failed to dial device plugin: %s", "context deadline exceeded");
        r = kdp_ctl_client_new(g->path, &c);
        if (r < 0)
                return reg_reject(g, "failed to dial device plugin: %s", strerror(-r));
        reg_adopt(g, &g->client, c);
        r = kdp_ctl_client_options(c, g->deadline, KDP_CTL_CLIENT_WAIT_FOR_READY, &o, &st);
        if (r < 0)
                return reg_reject_options(g, &st);
        g->pre_start = o->pre_start_required;
        g->preferred = o->get_preferred_allocation_available;
        v1beta1__device_plugin_options__free_unpacked(o, NULL);
        return reg_activate(g);
}

/* k->lock held: the resource if `g` is still its live registration. */
static resource *reg_resource(reg *g) {
        resource *res = resource_find(g->k, g->resource, false);

        return res && res->current == g && !g->cancelled ? res : NULL;
}

/* k->lock held: the resource if `g` still feeds it, live or (keep-old) superseded but connected. */
static resource *reg_fed(reg *g) {
        if (g->superseded && !g->cancelled)
                return resource_find(g->k, g->resource, false);
        return reg_resource(g);
}

static void reg_on_list(reg *g, const V1beta1__ListAndWatchResponse *m) {
        kubelet *k = g->k;
        resource *res;

        (void) pthread_mutex_lock(&k->lock);
        res = reg_fed(g);
        if (res) {
                if (resource_update(res, m) < 0)
                        (void) kdp_log_error(-ENOMEM, "Failed to update devices", KDP_F_STR("resource", res->name));
                if (!k->stopping)
                        event_devices(res);
        }
        (void) pthread_mutex_unlock(&k->lock);
}

/*
 * The end of g's stream disconnects the client registered under its resource
 * name: g itself, or (keep-old, g superseded) the newer one, whose connection
 * is closed. One the stand-in cancelled (closed) itself disconnects nothing.
 */
static void reg_on_end(reg *g, const kdp_ctl_client_status *st) {
        kubelet *k = g->k;
        resource *res;

        (void) pthread_mutex_lock(&k->lock);
        res = reg_resource(g);
        if (!res && (res = reg_fed(g))) {       /* superseded: getClient(name) is the newest */
                reg *cur = res->current;

                if (cur && !cur->cancelled) {
                        kdp_log_info("Older client's stream ended; disconnecting the client registered now",
                                     KDP_F_STR("resource", res->name), KDP_F_STR("older", g->endpoint),
                                     KDP_F_STR("endpoint", cur->endpoint));
                        reg_cancel(cur);
                        res->current = NULL;
                } else {
                        res = NULL;
                }
        }
        if (res && !k->stopping) {
                event_stream_ended(res, st);
                (void) resource_mark_unhealthy(res);
                event_devices(res);
        }
        (void) pthread_mutex_unlock(&k->lock);
}

static void reg_admit_pending(reg *g);

/*
 * --drop-before-stream: the registration is dropped before its ListAndWatch,
 * as a kubelet whose dial-back broke right after GetDevicePluginOptions does
 * (or one that disconnects a plugin's new client, k/k#121994): the connection
 * closes with no stream ever opened. True if `g` is dropped so.
 */
static bool reg_drop_before_stream(reg *g) {
        kubelet *k = g->k;
        resource *res;
        bool drop;

        (void) pthread_mutex_lock(&k->lock);
        res = reg_resource(g);
        drop = res && k->drops_before_stream < k->cfg->drop_before_stream;
        if (drop) {
                k->drops_before_stream++;
                res->current = NULL;
                printf("dropped resource=%s before its stream\n", res->name);
                (void) resource_mark_unhealthy(res);
                event_devices(res);
        }
        (void) pthread_mutex_unlock(&k->lock);
        return drop;
}

static void reg_follow(reg *g) {
        V1beta1__ListAndWatchResponse *m;
        kdp_ctl_client_stream *s = NULL;
        kdp_ctl_client_status st;

        if (reg_drop_before_stream(g))
                return;
        if (kdp_ctl_client_watch(g->client, kdp_ctl_client_deadline(0), 0, &s, &st) >= 0) {
                while (kdp_ctl_client_stream_next(s, &m, &st) > 0) {
                        reg_on_list(g, m);
                        v1beta1__list_and_watch_response__free_unpacked(m, NULL);
                        reg_admit_pending(g);
                }
                s = kdp_ctl_client_stream_free(s);
        }
        reg_on_end(g, &st);
}

static void reg_finish(reg *g) {
        kubelet *k = g->k;
        kdp_ctl_client *c, *info;
        resource *res;

        (void) pthread_mutex_lock(&k->lock);
        res = resource_find(k, g->resource, false);
        if (res && res->current == g)
                res->current = NULL;
        c = KDP_TAKE_PTR(g->client);
        info = KDP_TAKE_PTR(g->info);
        (void) pthread_mutex_unlock(&k->lock);
        if (g->rq)
                srv_reply(KDP_TAKE_PTR(g->rq), GRPC_STATUS_UNKNOWN, "registration failed");
        c = kdp_ctl_client_free(c);
        info = kdp_ctl_client_free(info);
        (void) pthread_mutex_lock(&k->lock);
        g->finished = true;
        (void) pthread_mutex_unlock(&k->lock);
}

static int plugin_info(reg *g);

/* A Register's, or a watcher's registration, which asks the plugin first (plugin_info). */
static void *reg_thread(void *userdata) {
        reg *g = userdata;

        if ((!g->plugin || plugin_info(g) >= 0) && reg_connect(g) >= 0)
                reg_follow(g);
        reg_finish(g);
        if (g->plugin)
                (void) eventfd_write(g->k->wake_fd, 1);
        return NULL;
}

/* k->lock held: unlinks the registrations whose threads have returned. */
static reg *regs_take_finished(kubelet *k) {
        reg *done = NULL, **p = &k->regs;

        while (*p) {
                reg *g = *p;

                if (!g->finished) {
                        p = &g->next;
                        continue;
                }
                *p = g->next;
                g->next = done;
                done = g;
                k->n_regs--;
        }
        return done;
}

static void regs_join(reg *list) {
        while (list) {
                reg *next = list->next;

                (void) pthread_join(list->thread, NULL);
                (void) reg_free(list);
                list = next;
        }
}

static int reg_new(kubelet *k, srv_call *sc, const V1beta1__RegisterRequest *req, reg **ret) {
        gpr_timespec dial = kdp_ctl_client_deadline(DIAL_TIMEOUT_MS);
        reg *g = calloc(1, sizeof(*g));

        if (!g)
                return -ENOMEM;
        g->k = k;
        g->rq = sc;
        g->resource = strdup(req->resource_name);
        g->endpoint = strdup(req->endpoint);
        if (!g->resource || !g->endpoint || asprintf(&g->path, "%s/%s", k->dir, req->endpoint) < 0) {
                g->path = NULL;
                (void) reg_free(g);
                return -ENOMEM;
        }
        /* 1.34+: the plugin's own Register deadline also bounds the dial-back */
        g->deadline = gpr_time_min(dial, gpr_convert_clock_type(sc->deadline, GPR_CLOCK_MONOTONIC));
        *ret = g;
        return 0;
}

/* cq thread: hands `sc` to a new registration thread, or returns an error and keeps it. */
static int reg_start(kubelet *k, srv_call *sc, const V1beta1__RegisterRequest *req) {
        reg *g, *finished;
        int r;

        r = reg_new(k, sc, req, &g);
        if (r < 0)
                return r;
        (void) pthread_mutex_lock(&k->lock);
        finished = regs_take_finished(k);
        if (k->stopping)
                r = -ESHUTDOWN;
        else if (k->n_regs >= MAX_REGS)
                r = -EAGAIN;
        else
                r = -pthread_create(&g->thread, NULL, reg_thread, g);
        if (r >= 0) {
                g->next = k->regs;
                k->regs = g;
                k->n_regs++;
        }
        (void) pthread_mutex_unlock(&k->lock);
        regs_join(finished);
        if (r < 0)
                g = reg_free(g);
        return r;
}

/*
 * ---- the plugin watcher (docs/kubelet.md §1.7; pluginmanager's operation_generator.go) ----
 * A reg thread's part first, then the watcher thread's.
 */

/* NotifyRegistrationStatus on the registry socket, whose client is then closed (its conn.Close()). */
static void plugin_notify(reg *g, const char *err) {
        Pluginregistration__RegistrationStatus req = PLUGINREGISTRATION__REGISTRATION_STATUS__INIT;
        ProtobufCMessage *resp = NULL;
        kdp_ctl_client_status st;
        kdp_ctl_client *c;
        char text[700];
        int r;

        req.plugin_registered = !err;
        req.error = (char *) (err ? err : "");
        r = kdp_ctl_client_call(g->info, KDP_CTL_CLIENT_METHOD_NOTIFY, &req.base,
                                &pluginregistration__registration_status_response__descriptor,
                                kdp_ctl_client_deadline(NOTIFY_TIMEOUT_MS), 0, &resp, &st);
        if (resp)
                protobuf_c_message_free_unpacked(resp, NULL);
        if (r < 0 && r != -ECANCELED) {
                kdp_ctl_client_format_go_error(&st, text, sizeof(text));
                kdp_log_warning("Failed to notify plugin", KDP_F_STR("socket", g->plugin->path),
                                KDP_F_STR("err", text));
        }
        (void) pthread_mutex_lock(&g->k->lock);
        c = KDP_TAKE_PTR(g->info);
        (void) pthread_mutex_unlock(&g->k->lock);
        c = kdp_ctl_client_free(c);
}

static int plugin_reject(reg *g, bool notify, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A refusal before the plugin is in the actual state: the reconciler tries it again. */
static int plugin_reject(reg *g, bool notify, const char *fmt, ...) {
        char text[1024];
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        g->retry = true;
        if (notify)
                return reg_refuse(g, text);
        g->refused = true;
        reg_print_rejected(g, text);
        return -ECONNREFUSED;
}

/* A blocking dial of the registry socket, 10 s at most. */
static int plugin_dial(reg *g) {
        const char *path = g->plugin->path;
        kdp_ctl_client *c;
        int r;

        r = kdp_ctl_client_new(path, &c);
        if (r >= 0) {
                reg_adopt(g, &g->info, c);
                r = kdp_ctl_client_wait_ready(c, kdp_ctl_client_deadline(DIAL_TIMEOUT_MS));
        }
        if (r < 0)
                return plugin_reject(g, false, "RegisterPlugin error -- dial failed at socket %s, err: "
                                     "failed to dial socket %s, err: %s", path, path,
                                     r == -ETIMEDOUT ? "context deadline exceeded" :
                                     r == -ECANCELED ? "context canceled" : strerror(-r));
        return 0;
}

/* g takes the plugin's name, and dials `endpoint` (printed as is). */
static int plugin_name(reg *g, const char *name, const char *endpoint) {
        char *n = strdup(name), *e = strdup(endpoint), *p = strdup(endpoint);

        if (!n || !e || !p) {
                free(n);
                free(e);
                free(p);
                return -ENOMEM;
        }
        free(g->resource);
        g->resource = n;
        g->endpoint = e;
        g->path = p;
        return 0;
}

/* The type and ValidatePlugin; then g is named after the plugin and dials its endpoint. */
static int plugin_accept(reg *g, const Pluginregistration__PluginInfo *info) {
        const char *endpoint = *info->endpoint ? info->endpoint : g->plugin->path;
        _cleanup_free_ char *err = NULL;
        int r;

        if (plugin_name(g, info->name, endpoint) < 0)
                return plugin_reject(g, false, "%s", strerror(ENOMEM));
        if (strcmp(info->type, PLUGIN_TYPE) != 0)
                return plugin_reject(g, true, "RegisterPlugin error -- no handler registered for plugin type: "
                                     "%s at socket %s", info->type, g->plugin->path);
        r = plugin_validate(info, &err);
        if (r < 0)
                return plugin_reject(g, true, "RegisterPlugin error -- plugin validation failed with err: %s",
                                     err ? err : strerror(-r));
        (void) pthread_mutex_lock(&g->k->lock);
        g->validated = true;
        (void) pthread_mutex_unlock(&g->k->lock);
        g->deadline = kdp_ctl_client_deadline(DIAL_TIMEOUT_MS);
        return 0;
}

/* Dial the registry socket, GetInfo (1 s), check the type and validate: what comes before RegisterPlugin. */
static int plugin_info(reg *g) {
        Pluginregistration__InfoRequest req = PLUGINREGISTRATION__INFO_REQUEST__INIT;
        Pluginregistration__PluginInfo *info = NULL;
        kdp_ctl_client_status st;
        char err[700];
        int r;

        r = plugin_dial(g);
        if (r < 0)
                return r;
        r = kdp_ctl_client_call(g->info, KDP_CTL_CLIENT_METHOD_GET_INFO, &req.base,
                                &pluginregistration__plugin_info__descriptor, kdp_ctl_client_deadline(INFO_TIMEOUT_MS),
                                0, (ProtobufCMessage **) &info, &st);
        if (r < 0) {
                kdp_ctl_client_format_go_error(&st, err, sizeof(err));
                return plugin_reject(g, false, "RegisterPlugin error -- failed to get plugin info using RPC GetInfo "
                                     "at socket %s, err: %s", g->plugin->path, err);
        }
        r = plugin_accept(g, info);
        pluginregistration__plugin_info__free_unpacked(info, NULL);
        return r;
}

/* k->lock held: DeRegisterPlugin, which disconnects the plugin's client as the end of its stream would. */
static void plugin_deregister(reg *g) {
        resource *res = resource_find(g->k, g->resource, false);

        fprintf(stdout, "deregistered resource=%s endpoint=", g->resource);
        kdp_ctl_client_put_value(stdout, g->endpoint);
        putc('\n', stdout);
        if (res && res->current == g) {
                res->current = NULL;
                (void) resource_mark_unhealthy(res);
                event_devices(res);
        }
        (void) fflush(stdout);
}

/* Its reg must have been joined. Returns NULL. */
static plugin *plugin_free(plugin *p) {
        if (!p)
                return NULL;
        (void) reg_free(p->g);
        free(p->path);
        free(p);
        return NULL;
}

static plugin *plugin_find(kubelet *k, const char *path) {
        for (plugin *p = k->plugins; p; p = p->next)
                if (!p->removed && strcmp(p->path, path) == 0)
                        return p;
        return NULL;
}

/* The next attempt, after the back-off, which doubles up to RETRY_MAX_MS. */
static void plugin_schedule(plugin *p) {
        p->retry_at_ms = now_ms() + p->backoff_ms;
        kdp_log_info("Scheduled plugin registration retry", KDP_F_STR("socket", p->path),
                     KDP_F_INT("delayMs", p->backoff_ms));
        p->backoff_ms = p->backoff_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : p->backoff_ms * 2;
}

/* Starts a registration of p's socket on a thread of its own; p's previous one has been joined. */
static void plugin_attempt(plugin *p) {
        reg *g = calloc(1, sizeof(*g));
        int r = -ENOMEM;

        p->retry_at_ms = -1;
        if (g) {
                *g = (reg){ .k = p->k, .plugin = p, .resource = strdup("") };
                r = g->resource ? -pthread_create(&g->thread, NULL, reg_thread, g) : -ENOMEM;
        }
        if (r < 0) {
                (void) reg_free(g);
                (void) kdp_log_error(r, "Failed to start plugin registration", KDP_F_STR("socket", p->path));
                plugin_schedule(p);
                return;
        }
        (void) reg_free(p->g);
        p->g = g;
        p->running = true;
}

static void plugin_add(kubelet *k, char *path, const struct stat *st) {
        plugin *p = calloc(1, sizeof(*p));

        if (!p) {
                free(path);
                (void) kdp_log_error(-ENOMEM, "Failed to add plugin");
                return;
        }
        *p = (plugin){ .k = k, .path = path, .dev = st->st_dev, .ino = st->st_ino, .retry_at_ms = -1,
                       .backoff_ms = RETRY_FIRST_MS, .next = k->plugins };
        k->plugins = p;
        kdp_log_info("Found plugin socket", KDP_F_STR("socket", path));
        plugin_attempt(p);
}

/* Its file is gone or replaced: no more attempts, its registration cancelled and, if validated, deregistered. */
static void plugin_lose(plugin *p) {
        kubelet *k = p->k;

        p->removed = true;
        p->retry_at_ms = -1;
        kdp_log_info("Lost plugin socket", KDP_F_STR("socket", p->path));
        if (!p->g)
                return;
        (void) pthread_mutex_lock(&k->lock);
        reg_cancel(p->g);
        if (p->g->validated && !k->stopping)
                plugin_deregister(p->g);
        (void) pthread_mutex_unlock(&k->lock);
}

/* Brings the plugin at <registry>/name in line with the file there now (names starting with '.' are ignored). */
static void plugin_sync(kubelet *k, const char *name) {
        _cleanup_free_ char *path = NULL;
        struct stat st;
        plugin *p;
        bool have;

        if (name[0] == '.' || name[0] == '\0')
                return;
        if (asprintf(&path, "%s/%s", k->registry, name) < 0) {
                (void) kdp_log_error(-ENOMEM, "Failed to add plugin");
                return;
        }
        have = lstat(path, &st) >= 0 && S_ISSOCK(st.st_mode);
        p = plugin_find(k, path);
        if (p && (!have || p->dev != st.st_dev || p->ino != st.st_ino)) {
                plugin_lose(p);
                p = NULL;
        }
        if (have && !p)
                plugin_add(k, KDP_TAKE_PTR(path), &st);
}

/* Every socket now in the registry, and every plugin known: at start, and after an inotify overflow. */
static void watcher_walk(kubelet *k) {
        _cleanup_closedir_ DIR *d = opendir(k->registry);
        struct dirent *de;

        if (!d) {
                (void) kdp_log_error(-errno, "Failed to read plugin registry", KDP_F_STR("path", k->registry));
                return;
        }
        while ((de = readdir(d)))
                plugin_sync(k, de->d_name);
        for (plugin *p = k->plugins; p; p = p->next)
                if (!p->removed)
                        plugin_sync(k, strrchr(p->path, '/') + 1);
}

static void watcher_read(kubelet *k) {
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        ssize_t n;

        while ((n = read(k->inotify_fd, buf, sizeof(buf))) > 0)
                for (char *e = buf; e < buf + n;) {
                        const struct inotify_event *ev = (const struct inotify_event *) e;

                        if (ev->mask & IN_Q_OVERFLOW)
                                watcher_walk(k);
                        else if (ev->len > 0)
                                plugin_sync(k, ev->name);
                        e += sizeof(*ev) + ev->len;
                }
}

/*
 * Its registration ended. Refused before it was validated, it is tried again;
 * refused after (its connection failed), it stays in the kubelet's actual
 * state of the world, so the reconciler leaves it until its socket changes.
 */
static void plugin_ended(plugin *p) {
        if (p->removed || !p->g->refused)
                return;
        if (p->g->retry)
                plugin_schedule(p);
        else
                kdp_log_info("Skipped plugin registration retry", KDP_F_STR("socket", p->path),
                             KDP_F_STR("reason", "refused after validation: registered until its socket changes"));
}

static bool reg_finished(reg *g) {
        bool finished;

        (void) pthread_mutex_lock(&g->k->lock);
        finished = g->finished;
        (void) pthread_mutex_unlock(&g->k->lock);
        return finished;
}

/* Joins the registrations that ended, schedules the retries, frees the plugins gone. */
static void watcher_reap(kubelet *k) {
        plugin **pp = &k->plugins;

        while (*pp) {
                plugin *p = *pp;

                if (p->running && reg_finished(p->g)) {
                        (void) pthread_join(p->g->thread, NULL);
                        p->running = false;
                        plugin_ended(p);
                }
                if (p->removed && !p->running) {
                        *pp = p->next;
                        (void) plugin_free(p);
                        continue;
                }
                pp = &p->next;
        }
}

/* A retry is scheduled. */
static bool plugin_waiting(const plugin *p) {
        return !p->removed && !p->running && p->retry_at_ms >= 0;
}

/* The poll timeout until the next retry, -1: none. */
static int watcher_timeout(kubelet *k) {
        int64_t now = now_ms(), next = -1;

        for (const plugin *p = k->plugins; p; p = p->next)
                if (plugin_waiting(p) && (next < 0 || p->retry_at_ms < next))
                        next = p->retry_at_ms;
        return next < 0 ? -1 : next <= now ? 0 : next - now > INT_MAX ? INT_MAX : (int) (next - now);
}

/* Waits for an inotify event, a registration's end or the next retry; false once the kubelet stops. */
static bool watcher_wait(kubelet *k) {
        struct pollfd p[2] = { { .fd = k->inotify_fd, .events = POLLIN }, { .fd = k->wake_fd, .events = POLLIN } };
        eventfd_t v;
        bool stopping;

        if (poll(p, 2, watcher_timeout(k)) < 0 && errno != EINTR) {
                (void) kdp_log_error(-errno, "Failed to wait");
                return false;
        }
        if (p[1].revents)
                (void) eventfd_read(k->wake_fd, &v);
        (void) pthread_mutex_lock(&k->lock);
        stopping = k->stopping;
        (void) pthread_mutex_unlock(&k->lock);
        return !stopping;
}

static void watcher_shutdown(kubelet *k) {
        (void) pthread_mutex_lock(&k->lock);
        for (plugin *p = k->plugins; p; p = p->next)
                if (p->running)
                        reg_cancel(p->g);
        (void) pthread_mutex_unlock(&k->lock);
        while (k->plugins) {
                plugin *p = k->plugins;

                k->plugins = p->next;
                if (p->running)
                        (void) pthread_join(p->g->thread, NULL);
                (void) plugin_free(p);
        }
}

static void *watcher_thread(void *userdata) {
        kubelet *k = userdata;

        watcher_walk(k);
        while (watcher_wait(k)) {
                int64_t now;

                watcher_read(k);
                watcher_reap(k);
                now = now_ms();
                for (plugin *p = k->plugins; p; p = p->next)
                        if (plugin_waiting(p) && p->retry_at_ms <= now)
                                plugin_attempt(p);
        }
        watcher_shutdown(k);
        return NULL;
}

/* The watch is in place before the thread walks the registry, so no socket falls between. */
static int watcher_start(kubelet *k) {
        int r;

        if (!k->registry)
                return 0;
        k->inotify_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        if (k->inotify_fd < 0 ||
            inotify_add_watch(k->inotify_fd, k->registry, IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO) < 0)
                return kdp_log_error(-errno, "Failed to watch plugin registry", KDP_F_STR("path", k->registry));
        k->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (k->wake_fd < 0)
                return kdp_log_error(-errno, "Failed to create eventfd");
        r = -pthread_create(&k->pw_thread, NULL, watcher_thread, k);
        if (r < 0)
                return kdp_log_error(r, "Failed to start thread");
        k->pw_started = true;
        kdp_log_info("Watching plugin registry", KDP_F_STR("path", k->registry));
        return 0;
}

/* k->stopping is set: the watcher cancels and joins its registrations. */
static void watcher_stop(kubelet *k) {
        if (!k->pw_started)
                return;
        (void) eventfd_write(k->wake_fd, 1);
        (void) pthread_join(k->pw_thread, NULL);
        k->pw_started = false;
}

/* ---- admissions (docs/kubelet.md §4.2, §5, §6) ---- */

typedef struct admit_run {
        reg *g;
        admission *a;
        strv available, preferred, chosen;
        V1beta1__AllocateResponse *resp;
        char *err;
} admit_run;

static void admit_run_done(admit_run *x) {
        strv_done(&x->available);
        strv_done(&x->preferred);
        strv_done(&x->chosen);
        if (x->resp)
                v1beta1__allocate_response__free_unpacked(x->resp, NULL);
        free(x->err);
}

static int admit_fail(admit_run *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int admit_fail(admit_run *x, const char *fmt, ...) {
        va_list ap;

        free(x->err);
        va_start(ap, fmt);
        if (vasprintf(&x->err, fmt, ap) < 0)
                x->err = NULL;
        va_end(ap);
        return -EIO;
}

/* available = healthy − allocated by earlier admissions. */
static int admit_available(admit_run *x) {
        kubelet *k = x->g->k;
        resource *res;
        int r = 0;

        (void) pthread_mutex_lock(&k->lock);
        res = resource_find(k, x->a->resource, false);
        if (!res || res->healthy.n == 0)
                r = admit_fail(x, "no healthy devices present; cannot allocate unhealthy devices %s",
                               x->a->resource);
        for (size_t i = 0; r >= 0 && i < res->healthy.n; i++)
                if (!strv_has(&res->allocated, res->healthy.v[i]))
                        r = strv_push(&x->available, res->healthy.v[i]);
        (void) pthread_mutex_unlock(&k->lock);
        if (r >= 0 && x->available.n < x->a->n)
                r = admit_fail(x, "requested number of devices unavailable for %s. Requested: %u, Available: %zu",
                               x->a->resource, x->a->n, x->available.n);
        return r;
}

static int admit_preferred(admit_run *x) {
        kdp_ctl_client_ids available = strv_ids(&x->available), none = { 0 };
        V1beta1__PreferredAllocationResponse *resp = NULL;
        kdp_ctl_client_status st;
        char err[700];
        int r;

        r = kdp_ctl_client_preferred(x->g->client, &available, &none, (int32_t) x->a->n,
                                     kdp_ctl_client_deadline(0), &resp, &st);
        if (r < 0) {
                kdp_ctl_client_format_go_error(&st, err, sizeof(err));
                return admit_fail(x, "device plugin GetPreferredAllocation rpc failed with err: %s", err);
        }
        if (resp->n_container_responses > 0)
                for (size_t i = 0; r >= 0 && i < resp->container_responses[0]->n_deviceids; i++)
                        r = strv_push(&x->preferred, resp->container_responses[0]->deviceids[i]);
        v1beta1__preferred_allocation_response__free_unpacked(resp, NULL);
        return r;
}

/* preferred ∩ available first, in the plugin's order, then the rest of available. */
static int admit_choose(admit_run *x) {
        unsigned n = x->a->n;
        int r = 0;

        for (size_t i = 0; r >= 0 && i < x->preferred.n && x->chosen.n < n; i++)
                if (strv_has(&x->available, x->preferred.v[i]) &&
                    !strv_has_unsorted(&x->chosen, x->preferred.v[i]))
                        r = strv_push(&x->chosen, x->preferred.v[i]);
        for (size_t i = 0; r >= 0 && i < x->available.n && x->chosen.n < n; i++)
                if (!strv_has_unsorted(&x->chosen, x->available.v[i]))
                        r = strv_push(&x->chosen, x->available.v[i]);
        if (r >= 0 && x->chosen.n < n)
                r = admit_fail(x, "unexpectedly allocated less resources than required. Requested: %u, Got: %zu",
                               n, x->chosen.n);
        strv_sort_unique(&x->chosen);
        return r;
}

static int admit_allocate(admit_run *x) {
        kdp_ctl_client_ids ids = strv_ids(&x->chosen);
        kubelet *k = x->g->k;
        kdp_ctl_client_status st;
        resource *res;
        char err[700];
        int r;

        r = kdp_ctl_client_allocate(x->g->client, &ids, 1, kdp_ctl_client_deadline(0), &x->resp, &st);
        if (r < 0) {
                kdp_ctl_client_format_go_error(&st, err, sizeof(err));
                return admit_fail(x, "%s", err);
        }
        if (x->resp->n_container_responses == 0)
                return admit_fail(x, "no containers return in allocation response");
        (void) pthread_mutex_lock(&k->lock);
        res = resource_find(k, x->a->resource, false);
        r = res ? strv_merge(&res->allocated, &x->chosen) : 0;
        if (r >= 0)
                r = strv_merge(&x->a->pod, &x->chosen);
        (void) pthread_mutex_unlock(&k->lock);
        return r;
}

static int admit_prestart(admit_run *x) {
        kdp_ctl_client_ids ids = strv_ids(&x->chosen);
        kdp_ctl_client_status st;
        char err[700];
        int r;

        r = kdp_ctl_client_prestart(x->g->client, &ids, kdp_ctl_client_deadline(PRESTART_TIMEOUT_MS), &st);
        if (r < 0) {
                kdp_ctl_client_format_go_error(&st, err, sizeof(err));
                return admit_fail(x, "device plugin PreStartContainer rpc failed with err: %s", err);
        }
        return 0;
}

static void event_admitted(admit_run *x) {
        _cleanup_free_ char *prefix = NULL;
        const char *res = x->a->resource;

        strv_sort_unique(&x->preferred);
        fprintf(stdout, "admitted resource=%s n=%u preferred=", res, x->a->n);
        kdp_ctl_client_put_ids(stdout, x->preferred.v, x->preferred.n);
        fputs(" allocated=", stdout);
        kdp_ctl_client_put_ids(stdout, x->chosen.v, x->chosen.n);
        putc('\n', stdout);
        if (asprintf(&prefix, "alloc resource=%s ", res) < 0)
                prefix = NULL;
        (void) kdp_ctl_client_print_container(stdout, prefix ? prefix : "alloc ", x->resp->container_responses[0]);
        if (x->g->pre_start)
                fprintf(stdout, "prestart resource=%s ok\n", res);
        (void) fflush(stdout);
}

/* Prints the outcome (nothing once stopping) and counts the admission done. */
static void admit_report(admit_run *x, int r) {
        kubelet *k = x->g->k;

        (void) pthread_mutex_lock(&k->lock);
        if (k->stopping)
                ;
        else if (r < 0)
                event_admit_failed(x->a->resource, x->err ? x->err : strerror(-r));
        else
                event_admitted(x);
        k->n_admits_done++;
        k->n_admits_failed += r < 0;
        if (k->n_admits_done == k->cfg->n_admits)
                (void) eventfd_write(k->event_fd, 1);
        (void) pthread_mutex_unlock(&k->lock);
}

/*
 * One pod of a->n devices, as the device manager admits it with topology
 * policy "none": every free device is a candidate, none is "aligned". An
 * admission cut short by a newer registration fails, as the kubelet's would.
 */
static void admit(reg *g, admission *a) {
        _cleanup_(admit_run_done) admit_run x = { .g = g, .a = a };
        int r;

        r = admit_available(&x);
        if (r >= 0 && g->preferred)
                r = admit_preferred(&x);
        if (r >= 0)
                r = admit_choose(&x);
        if (r >= 0)
                r = admit_allocate(&x);
        if (r >= 0 && g->pre_start)
                r = admit_prestart(&x);
        admit_report(&x, r);
}

/* The next admission of g's resource nobody has started, claimed for g. */
static admission *admit_claim(reg *g) {
        kubelet *k = g->k;
        admission *a = NULL;

        (void) pthread_mutex_lock(&k->lock);
        for (size_t i = 0; !a && reg_resource(g) && i < k->cfg->n_admits; i++)
                if (!k->admits[i].claimed && strcmp(k->admits[i].resource, g->resource) == 0) {
                        a = &k->admits[i];
                        a->claimed = true;
                }
        (void) pthread_mutex_unlock(&k->lock);
        return a;
}

static void reg_admit_pending(reg *g) {
        admission *a;

        while ((a = admit_claim(g)))
                admit(g, a);
}

/* ---- start-up and shutdown (main thread) ---- */

static int mkdir_p(const char *path, mode_t mode) {
        _cleanup_free_ char *p = strdup(path);

        if (!p)
                return -ENOMEM;
        for (char *s = p + 1;; s++) {
                char c = *s;

                if (c != '/' && c != '\0')
                        continue;
                *s = '\0';
                if (mkdir(p, mode) < 0 && errno != EEXIST)
                        return -errno;
                *s = c;
                if (c == '\0')
                        return 0;
        }
}

/* docs/kubelet.md §3.1: remove every socket but keep the checkpoint, files and directories. */
static int cleanup_dir(const char *dir) {
        _cleanup_closedir_ DIR *d = opendir(dir);
        struct dirent *de;
        int r = 0;

        if (!d)
                return kdp_log_error(-errno, "Failed to open device-plugins directory", KDP_F_STR("path", dir));
        while ((de = readdir(d))) {
                struct stat st;

                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
                    strcmp(de->d_name, CHECKPOINT_FILE) == 0)
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, 0) < 0 || !S_ISSOCK(st.st_mode))
                        continue;
                if (unlinkat(dirfd(d), de->d_name, 0) < 0) {
                        r = kdp_log_error(-errno, "Failed to remove stale socket", KDP_F_STR("path", de->d_name));
                        continue;
                }
                kdp_log_info("Removed stale socket", KDP_F_STR("path", de->d_name));
        }
        return r;
}

static int prepare_dir(kubelet *k, const char *dir) {
        int r;

        if (!*dir)
                return kdp_log_error(-EINVAL, "Missing device-plugins directory");
        r = mkdir_p(dir, 0750);
        if (r < 0)
                return kdp_log_error(r, "Failed to create device-plugins directory", KDP_F_STR("path", dir));
        k->dir = realpath(dir, NULL);
        if (!k->dir)
                return kdp_log_error(-errno, "Failed to resolve device-plugins directory", KDP_F_STR("path", dir));
        if (asprintf(&k->socket_path, "%s/%s", k->dir, KUBELET_SOCKET) < 0) {
                k->socket_path = NULL;
                return -ENOMEM;
        }
        return cleanup_dir(k->dir);
}

/* The plugin watcher's directory exists (it removes nothing: the sockets there are registered at start). */
static int prepare_registry(kubelet *k, const char *dir) {
        int r;

        if (!dir)
                return 0;
        r = mkdir_p(dir, 0755);
        if (r < 0)
                return kdp_log_error(r, "Failed to create plugin registry", KDP_F_STR("path", dir));
        k->registry = realpath(dir, NULL);
        if (!k->registry)
                return kdp_log_error(-errno, "Failed to resolve plugin registry", KDP_F_STR("path", dir));
        return 0;
}

/* The PodResources socket's directory exists, and a stale socket there is gone (the kubelet's own start). */
static int prepare_pod_resources(const char *path) {
        _cleanup_free_ char *dir = NULL;
        char *slash;
        int r;

        if (!path)
                return 0;
        dir = strdup(path);
        if (!dir)
                return -ENOMEM;
        slash = strrchr(dir, '/');
        if (slash && slash != dir) {
                *slash = '\0';
                r = mkdir_p(dir, 0750);
                if (r < 0)
                        return kdp_log_error(r, "Failed to create pod resources directory", KDP_F_STR("path", dir));
        }
        if (unlink(path) < 0 && errno != ENOENT)
                return kdp_log_error(-errno, "Failed to remove stale socket", KDP_F_STR("path", path));
        return 0;
}

static int kubelet_init(kubelet *k, const kdp_ctl_kubelet_config *cfg) {
        pthread_condattr_t attr;
        int r;

        *k = (kubelet){ .cfg = cfg, .event_fd = -1, .inotify_fd = -1, .wake_fd = -1 };
        k->tag_shutdown.on_done = on_shutdown;
        (void) pthread_mutex_init(&k->lock, NULL);
        (void) pthread_condattr_init(&attr);
        (void) pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        (void) pthread_cond_init(&k->cond, &attr);
        (void) pthread_condattr_destroy(&attr);
        k->event_fd = eventfd(0, EFD_CLOEXEC);
        if (k->event_fd < 0)
                return kdp_log_error(-errno, "Failed to create eventfd");
        k->admits = calloc(cfg->n_admits ? cfg->n_admits : 1, sizeof(*k->admits));
        if (!k->admits)
                return -ENOMEM;
        for (size_t i = 0; i < cfg->n_admits; i++)
                k->admits[i] = (admission){ .resource = cfg->admits[i].resource, .n = cfg->admits[i].n };
        r = prepare_dir(k, cfg->dir);
        if (r >= 0)
                r = prepare_registry(k, cfg->plugins_registry);
        return r < 0 ? r : prepare_pod_resources(cfg->pod_resources);
}

static void kubelet_done(kubelet *k) {
        while (k->resources) {
                resource *next = k->resources->next;

                (void) resource_free(k->resources);
                k->resources = next;
        }
        for (size_t i = 0; k->admits && i < k->cfg->n_admits; i++)
                strv_done(&k->admits[i].pod);
        free(k->admits);
        free(k->dir);
        free(k->socket_path);
        free(k->registry);
        if (k->event_fd >= 0)
                (void) close(k->event_fd);
        if (k->inotify_fd >= 0)
                (void) close(k->inotify_fd);
        if (k->wake_fd >= 0)
                (void) close(k->wake_fd);
        (void) pthread_cond_destroy(&k->cond);
        (void) pthread_mutex_destroy(&k->lock);
}

/* A server that never started: destroy it and its queue. */
static int server_abandon(kubelet *k, int r) {
        grpc_server_destroy(k->server);
        grpc_completion_queue_shutdown(k->cq);
        while (grpc_completion_queue_next(k->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
               GRPC_QUEUE_SHUTDOWN)
                ;
        grpc_completion_queue_destroy(k->cq);
        k->server = NULL;
        k->cq = NULL;
        return r;
}

static int server_start(kubelet *k) {
        _cleanup_free_ char *addr = NULL;
        grpc_server_credentials *creds;
        int ok, r;

        if (asprintf(&addr, "unix:%s", k->socket_path) < 0)
                return -ENOMEM;
        k->cq = grpc_completion_queue_create_for_next(NULL);
        k->server = grpc_server_create(NULL, NULL);
        grpc_server_register_completion_queue(k->server, k->cq, NULL);
        k->register_method = grpc_server_register_method(k->server, REGISTER_METHOD, NULL,
                                                         GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
        creds = grpc_insecure_server_credentials_create();
        ok = grpc_server_add_http2_port(k->server, addr, creds);
        if (ok && k->cfg->pod_resources) {
                free(addr);
                ok = asprintf(&addr, "unix:%s", k->cfg->pod_resources) >= 0 &&
                     grpc_server_add_http2_port(k->server, addr, creds);
                if (!ok)
                        addr = NULL;
        }
        grpc_server_credentials_release(creds);
        if (!ok || !k->register_method)
                return server_abandon(k, kdp_log_error(-EADDRNOTAVAIL, "Failed to listen",
                                                       KDP_F_STR("socket", k->socket_path)));
        grpc_server_start(k->server);
        arm_call(k, false);
        arm_call(k, true);
        r = -pthread_create(&k->cq_thread, NULL, cq_thread, k);
        if (r < 0) {
                /* without a cq thread nothing can drain the queue: shut down inline */
                grpc_server_shutdown_and_notify(k->server, k->cq, &k->tag_shutdown);
                grpc_server_cancel_all_calls(k->server);
                return server_abandon(k, kdp_log_error(r, "Failed to start thread"));
        }
        if (k->cfg->pod_resources)
                kdp_log_info("Serving pod resources", KDP_F_STR("socket", k->cfg->pod_resources));
        kdp_log_info("Serving kubelet socket", KDP_F_STR("socket", k->socket_path));
        return 0;
}

/*
 * Stops accepting on kubelet.sock and removes it, as grpc-go's Server.Stop
 * closes its listeners (a Go unix listener removes its file) before any
 * connection: a kubelet going down never drops a plugin while it still
 * accepts registrations. (A killed kubelet drops everything at once and
 * leaves kubelet.sock behind.)
 */
static void server_stop_listening(kubelet *k) {
        if (unlink(k->socket_path) < 0 && errno != ENOENT)
                (void) kdp_log_warning_errno(-errno, "Failed to remove socket", KDP_F_STR("socket", k->socket_path));
        if (k->cfg->pod_resources && unlink(k->cfg->pod_resources) < 0 && errno != ENOENT)
                (void) kdp_log_warning_errno(-errno, "Failed to remove socket",
                                             KDP_F_STR("socket", k->cfg->pod_resources));
        grpc_server_shutdown_and_notify(k->server, k->cq, &k->tag_shutdown);
}

/* Waits for the calls still running (cancelled after a grace period), then frees the server. */
static void server_stop(kubelet *k) {
        struct timespec until;

        (void) clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += SHUTDOWN_GRACE_MS / 1000;
        (void) pthread_mutex_lock(&k->lock);
        while (!k->shutdown_done && pthread_cond_timedwait(&k->cond, &k->lock, &until) != ETIMEDOUT)
                ;
        if (!k->shutdown_done)
                grpc_server_cancel_all_calls(k->server);
        while (!k->shutdown_done)
                (void) pthread_cond_wait(&k->cond, &k->lock);
        (void) pthread_mutex_unlock(&k->lock);
        grpc_server_destroy(k->server);
        grpc_completion_queue_shutdown(k->cq);
        (void) pthread_join(k->cq_thread, NULL);
        grpc_completion_queue_destroy(k->cq);
}

static void kubelet_stop(kubelet *k) {
        reg *list;

        (void) pthread_mutex_lock(&k->lock);
        k->stopping = true;
        (void) pthread_mutex_unlock(&k->lock);
        server_stop_listening(k);
        (void) pthread_mutex_lock(&k->lock);
        for (reg *g = k->regs; g; g = g->next)
                reg_cancel(g);
        list = KDP_TAKE_PTR(k->regs);
        k->n_regs = 0;
        (void) pthread_mutex_unlock(&k->lock);
        watcher_stop(k);
        regs_join(list);
        server_stop(k);
        kdp_log_info("Stopped kubelet");
}

static int kubelet_on_timeout(kubelet *k) {
        size_t pending;

        (void) pthread_mutex_lock(&k->lock);
        pending = k->cfg->exit_after_admit ? k->cfg->n_admits - k->n_admits_done : 0;
        (void) pthread_mutex_unlock(&k->lock);
        if (pending == 0)
                return 0;
        (void) kdp_log_error(0, "Timed out waiting for admissions", KDP_F_INT("pending", pending));
        return 1;
}

static int kubelet_on_admitted(kubelet *k) {
        size_t failed;

        (void) pthread_mutex_lock(&k->lock);
        failed = k->n_admits_failed;
        (void) pthread_mutex_unlock(&k->lock);
        kdp_log_info("Finished admissions", KDP_F_INT("failed", failed));
        return failed > 0;
}

/*
 * SIGUSR1: the kubelet closes its connection to every plugin while kubelet.sock
 * stays (what k/k#121994 does to a replaced plugin): each resource is
 * disconnected and marked unhealthy, and waits for its plugin to register again.
 */
static void kubelet_drop_plugins(kubelet *k) {
        (void) pthread_mutex_lock(&k->lock);
        for (resource *res = k->resources; res; res = res->next) {
                if (!res->current)
                        continue;
                reg_cancel(res->current);
                res->current = NULL;
                printf("dropped resource=%s\n", res->name);
                (void) resource_mark_unhealthy(res);
                event_devices(res);
        }
        (void) fflush(stdout);
        (void) pthread_mutex_unlock(&k->lock);
}

/* SIGUSR2: every admitted pod ends; its devices are free for later admissions and List drops them. */
static void kubelet_end_pods(kubelet *k) {
        (void) pthread_mutex_lock(&k->lock);
        for (size_t i = 0; i < k->cfg->n_admits; i++) {
                admission *a = &k->admits[i];
                resource *res = resource_find(k, a->resource, false);
                strv keep = { 0 };

                if (a->pod.n == 0)
                        continue;
                for (size_t j = 0; res && j < res->allocated.n; j++)
                        if (!strv_has(&a->pod, res->allocated.v[j]))
                                (void) strv_push(&keep, res->allocated.v[j]);
                if (res) {
                        strv_done(&res->allocated);
                        res->allocated = keep;
                }
                printf("freed resource=%s ids=", a->resource);
                kdp_ctl_client_put_ids(stdout, a->pod.v, a->pod.n);
                putc('\n', stdout);
                strv_done(&a->pod);
        }
        (void) fflush(stdout);
        (void) pthread_mutex_unlock(&k->lock);
}

/* Waits for a signal, the duration or (with exit_after_admit) the last admission; returns the exit code. */
static int kubelet_wait(kubelet *k, int sig_fd) {
        struct pollfd p[2] = { { .fd = sig_fd, .events = POLLIN }, { .fd = k->event_fd, .events = POLLIN } };
        int64_t end = k->cfg->duration_ms > 0 ? now_ms() + k->cfg->duration_ms : -1;

        for (;;) {
                struct signalfd_siginfo si;
                int timeout = -1, r;

                if (end >= 0) {
                        int64_t left = end - now_ms();

                        timeout = left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int) left;
                }
                r = poll(p, k->cfg->exit_after_admit ? 2 : 1, timeout);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0) {
                        (void) kdp_log_error(-errno, "Failed to wait");
                        return 1;
                }
                if (r == 0)
                        return kubelet_on_timeout(k);
                if (p[0].revents) {
                        if (read(sig_fd, &si, sizeof(si)) != (ssize_t) sizeof(si))
                                continue;
                        kdp_log_info("Received signal", KDP_F_STR("signal", strsignal((int) si.ssi_signo)));
                        if (si.ssi_signo == SIGUSR1) {
                                kubelet_drop_plugins(k);
                                continue;
                        }
                        if (si.ssi_signo == SIGUSR2) {
                                kubelet_end_pods(k);
                                continue;
                        }
                        return 0;
                }
                if (p[1].revents)
                        return kubelet_on_admitted(k);
        }
}

int kdp_ctl_kubelet_run(const kdp_ctl_kubelet_config *cfg) {
        _cleanup_close_ int sig_fd = -1;
        sigset_t mask;
        kubelet k;
        int r, rc;

        (void) setvbuf(stdout, NULL, _IOFBF, 1 << 16);
        (void) sigemptyset(&mask);
        (void) sigaddset(&mask, SIGINT);
        (void) sigaddset(&mask, SIGTERM);
        (void) sigaddset(&mask, SIGUSR1);
        (void) sigaddset(&mask, SIGUSR2);
        (void) pthread_sigmask(SIG_BLOCK, &mask, NULL);  /* before grpc_init: its threads inherit it */
        sig_fd = signalfd(-1, &mask, SFD_CLOEXEC);
        if (sig_fd < 0) {
                (void) kdp_log_error(-errno, "Failed to create signalfd");
                return 1;
        }
        r = kubelet_init(&k, cfg);
        if (r < 0) {
                kubelet_done(&k);
                return 1;
        }
        grpc_init();
        r = server_start(&k);
        if (r >= 0)
                r = watcher_start(&k);
        rc = r < 0 ? 1 : kubelet_wait(&k, sig_fd);
        if (k.server)
                kubelet_stop(&k);
        grpc_shutdown();
        kubelet_done(&k);
        return rc;
}
