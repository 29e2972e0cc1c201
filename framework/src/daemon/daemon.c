/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kdpd's state machine (see daemon.h). Everything here runs on the loop
 * thread; the CQ thread reaches it only through kdp_loop_post().
 */
#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <kdp/backend.h>
#include <kdp/log.h>

#include "cdi.h"
#include "conditions.h"
#include "daemon.h"
#include "debounce.h"
#include "health-log.h"
#include "kubelet-client.h"
#include "loop.h"
#include "metrics-http.h"
#include "metrics.h"
#include "not-served.h"
#include "pod-resources.h"
#include "registry.h"
#include "server.h"
#include "snapshot.h"
#include "stop-watch.h"
#include "udev-monitor.h"
#include "unix-socket.h"

#define SOCKET_PREFIX "kdp-"
#define TRIM_AFTER_MS 2000
#define SERVE_BACKOFF_FIRST_MS 5
#define SERVE_BACKOFF_MAX_MS 5000
#define SERVE_WARN_AFTER_VANISHED 16     /* failures in a row, as REGISTER_WARN_AFTER */
#define WATCHER_REFUSED_FIRST_MS 1000   /* a socket the plugin watcher refused is replaced after this, at the least */
#define STREAM_WAIT_MS 10000             /* registered, no ListAndWatch yet: ask whether the kubelet dropped us */
#define STOP_TIMEOUT_MS 20000           /* below the kubelet's 30 s grace period of a pod */
#define UNIX_PATH_MAX_LEN 107

typedef struct backend_slot backend_slot;

/* An fd a backend asked the loop to watch (kdp_backend_watch_fd()). */
typedef struct fd_watch {
        backend_slot *slot;
        int fd;
        kdp_backend_fd_fn fn;
        kdp_loop_source *source;
        struct fd_watch *next;
} fd_watch;

struct backend_slot {
        kdp_daemon *d;
        kdp_backend *b;
        kdp_loop_source *timer;         /* rescan/probe timer, NULL if neither */
        kdp_loop_source *recheck;       /* rescan when a held device may recover */
        kdp_loop_source *expiry;        /* rescan the backend asked for (kdp_backend_rescan_after()) */
        fd_watch *watches;
        bool dirty;                     /* a device event asks for a scan */
        bool restarted;                 /* restarted by this SIGHUP's config diff: its reload hook is not called */
        kdp_conditions conditions;      /* of its last scan: devices not served, refusals, NUMA dropped */
        bool list_tried;                /* its not-served list was written, or tried, since start */
        bool listed;                    /* ... and written: removed at exit */
        int list_error;                 /* the error of the last try, 0: none */
        int scan_error;                 /* the error of its last scan, 0: it succeeded */
        kdp_metrics_backend *metrics;   /* its scan histogram */
        uint64_t event_ns;              /* the first device event since its last scan (kdp_metrics_now_ns()), 0: none */
        uint64_t cause_ns;              /* during a scan: what a change it finds is measured from */
};

typedef struct kdp_resource kdp_resource;
struct kdp_resource {
        kdp_daemon *d;
        char *name;
        backend_slot *owner;
        kdp_snapshot *snap;
        kdp_cdi_specs *cdi;             /* the CDI spec files its devices' CDI names need */
        kdp_server *server;
        char *socket_name;
        kdp_registration *reg;
        kdp_metrics_resource *series;   /* the metrics list's reference */
        kdp_health_log health;          /* its devices' health problems, as logged */
        kdp_loop_source *serve_retry;   /* serving failed: the next socket name after a back-off */
        kdp_loop_source *stream_wait;   /* registered: STREAM_WAIT_MS for the kubelet's ListAndWatch */
        unsigned watcher_refusals;      /* the plugin watcher refused its sockets, in a row */
        bool yielded;                   /* left its registration to a newer kdpd: logged */
        unsigned serve_attempts;        /* failed in a row */
        unsigned incarnation;
        uint64_t seen_in_scan;          /* the last scan of its backend that listed it */
        kdp_resource *next;
};

struct kdp_daemon {
        kdp_loop *loop;
        uint64_t stop_timeout_ms;       /* a step of the stop longer than this is abandoned (stop-watch.h) */
        kdp_server_runtime *rt;
        kdp_kubelet_client *kubelet;
        kdp_config *config;
        char *config_path;
        char **overrides;
        char *kubelet_dir;
        char *plugins_registry;
        kdp_registration_mode registration;     /* as chosen: never AUTO */
        const char *socket_dir;         /* where the plugin sockets go: kubelet_dir or plugins_registry */
        char *state_dir;                /* where the not-served lists go */
        char *roots[_KDP_PATH_KIND_MAX];
        backend_slot *slots;
        size_t n_slots;
        kdp_resource *resources;
        uint64_t generation;
        uint64_t scans;
        unsigned socket_seq;
        int signal_fd;
        kdp_loop_source *signal_source;
        kdp_loop_source *cancel_timer;  /* cancels calls of servers stopped long enough ago */
        kdp_loop_source *trim_timer;    /* gives a burst's memory back after it */
        kdp_debounce *debounce;
        kdp_udev_monitor *udev;
        bool scan_posted;               /* dirty slots will be scanned soon */
        kdp_pod_resources *pod_resources;       /* NULL: the kubelet is not asked */
        atomic_bool allocate_posted;    /* CQ thread → loop: an Allocate asks for a List soon */
        kdp_metrics *metrics;           /* counted in always; served with --metrics-address */
        kdp_metrics_http *http;         /* the endpoint, NULL without --metrics-address */
        kdp_metrics_heartbeat *loop_beat;
        kdp_loop_source *beat_timer;    /* stamps loop_beat, with heartbeats on */
};

static char **strv_copy(const char *const *v) {
        size_t n = 0;
        char **copy;

        while (v && v[n])
                n++;
        copy = calloc(n + 1, sizeof(char *));
        for (size_t i = 0; copy && i < n; i++)
                if (!(copy[i] = strdup(v[i])))
                        return NULL;
        return copy;
}

static void strv_free(char **v) {
        for (size_t i = 0; v && v[i]; i++)
                free(v[i]);
        free(v);
}

static void strv_freep(char ***v) {
        strv_free(*v);
}

/* ---- config ---- */

static int load_config(kdp_daemon *d, kdp_config **ret) {
        _cleanup_(kdp_config_freep) kdp_config *c = NULL;
        int r;

        r = kdp_config_load(d->config_path, &c);
        if (r < 0)
                return r;
        for (size_t i = 0; d->overrides && d->overrides[i]; i++) {
                r = kdp_config_add_override(c, d->overrides[i]);
                if (r < 0)
                        return r;
        }
        *ret = KDP_TAKE_PTR(c);
        return 0;
}

static backend_slot *find_slot(kdp_daemon *d, const char *name) {
        for (size_t i = 0; i < d->n_slots; i++)
                if (strcmp(d->slots[i].b->name, name) == 0)
                        return &d->slots[i];
        return NULL;
}

/* The first few keys of sections without a backend are named, the rest counted in one line. */
static void warn_unknown_sections(kdp_daemon *d, const kdp_config *c) {
        size_t n = 0;

        for (size_t i = 0; i < c->n_entries; i++) {
                const kdp_config_entry *e = &c->entries[i];

                if (find_slot(d, e->section) || ++n > KDP_CONFIG_LINES_PER_KIND)
                        continue;
                kdp_log_warning("Ignored config of a backend that is not loaded",
                                KDP_F_STR("key", e->key), KDP_F_STR("section", e->section),
                                KDP_F_STR("origin", e->origin));
        }
        if (n > KDP_CONFIG_LINES_PER_KIND)
                kdp_log_warning("Omitted more config of backends that are not loaded",
                                KDP_F_INT("omitted", n - KDP_CONFIG_LINES_PER_KIND));
}

/* ---- resources ---- */

static kdp_resource *find_resource(kdp_daemon *d, const char *name) {
        for (kdp_resource *res = d->resources; res; res = res->next)
                if (strcmp(res->name, name) == 0)
                        return res;
        return NULL;
}

/* "kdp-<backend>-<resource, '/' → '_'>.": how every socket of `res` begins, whichever kdpd serves it. */
static char *socket_prefix(const kdp_resource *res) {
        _cleanup_free_ char *sane = strdup(res->name);
        char *p;

        if (!sane)
                return NULL;
        for (char *c = sane; *c; c++)
                if (*c == '/')
                        *c = '_';
        return asprintf(&p, SOCKET_PREFIX "%s-%s.", res->owner->b->name, sane) < 0 ? NULL : p;
}

/* <prefix><pid>.<seq>.sock: fresh per process start and per re-serve. */
static int socket_name(kdp_daemon *d, const kdp_resource *res, char **ret) {
        _cleanup_free_ char *name = NULL, *prefix = socket_prefix(res);

        if (!prefix)
                return -ENOMEM;
        if (asprintf(&name, "%s%d.%u.sock", prefix, (int) getpid(), ++d->socket_seq) < 0)
                return -ENOMEM;
        if (strlen(d->socket_dir) + 1 + strlen(name) > UNIX_PATH_MAX_LEN) {
                free(name);
                if (asprintf(&name, SOCKET_PREFIX "%s-%d.%u.sock", res->owner->b->name, (int) getpid(),
                             d->socket_seq) < 0)
                        return -ENOMEM;
        }
        *ret = KDP_TAKE_PTR(name);
        return 0;
}

static char *socket_path(kdp_daemon *d, const char *name) {
        char *p;

        return asprintf(&p, "%s/%s", d->socket_dir, name) < 0 ? NULL : p;
}

/* `name` in the directory that holds the kubelet dir ("<root>/device-plugins" → "<root>/name"). */
static char *beside_kubelet_dir(const char *kubelet_dir, const char *name) {
        size_t n = strlen(kubelet_dir);
        char *p;

        while (n > 1 && kubelet_dir[n - 1] == '/')
                n--;
        while (n > 0 && kubelet_dir[n - 1] != '/')
                n--;
        return asprintf(&p, "%.*s%s", (int) n, n > 0 ? kubelet_dir : "./", name) < 0 ? NULL : p;
}

/* What a server tells the loop about; lives as long as the server (freed by its stopped event). */
typedef struct server_note {
        kdp_daemon *d;
        char *resource;
        unsigned incarnation;
} server_note;

static void server_note_free(server_note *note) {
        if (!note)
                return;
        free(note->resource);
        free(note);
}

static server_note *server_note_new(kdp_daemon *d, const char *resource, unsigned incarnation) {
        server_note *note = calloc(1, sizeof(*note));

        if (!note)
                return NULL;
        *note = (server_note){ .d = d, .resource = strdup(resource), .incarnation = incarnation };
        if (!note->resource) {
                free(note);
                return NULL;
        }
        return note;
}

static int serve_resource(kdp_resource *res);

static bool timespec_after(const struct timespec *a, const struct timespec *b) {
        return a->tv_sec > b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec > b->tv_nsec);
}

/*
 * True if another process serves `res` on a socket made after ours, in the
 * same directory: a newer kdpd (a rolling upgrade's surge pod) whose
 * registration replaced ours. Pids in names mean nothing across pod PID
 * namespaces, so "serves" is "accepts a connection".
 */
static bool newer_server_of(kdp_resource *res) {
        _cleanup_free_ char *prefix = socket_prefix(res), *ours = socket_path(res->d, res->socket_name);
        _cleanup_closedir_ DIR *dir = opendir(res->d->socket_dir);
        struct stat own, st;
        struct dirent *e;

        if (!prefix || !ours || !dir || stat(ours, &own) < 0)
                return false;
        while ((e = readdir(dir))) {
                _cleanup_free_ char *path = NULL;

                if (strncmp(e->d_name, prefix, strlen(prefix)) != 0 || strcmp(e->d_name, res->socket_name) == 0 ||
                    !(path = socket_path(res->d, e->d_name)))
                        continue;
                if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && timespec_after(&st.st_mtim, &own.st_mtim) &&
                    kdp_unix_socket_served(path)) {
                        if (!res->yielded)
                                kdp_log_warning("Another kdpd serves the resource on a newer socket; leaving the "
                                                "registration to it", KDP_F_STR("resource", res->name),
                                                KDP_F_STR("socket", res->socket_name), KDP_F_STR("newer", e->d_name));
                        res->yielded = true;
                        return true;
                }
        }
        return false;
}

/*
 * Re-serves `res` for the live kubelet that dropped its stream (docs/kubelet.md
 * §1.6, k/k#121994), unless a newer kdpd's registration of it replaced ours:
 * re-registering then would take it back, and the two would take turns until
 * the older exits. A kubelet restart registers us again in any case.
 */
static void reregister_dropped(kdp_resource *res) {
        if (!res->server || kdp_server_n_streams(res->server) > 0)
                return;                 /* a stream opened meanwhile: the kubelet has us */
        if (newer_server_of(res))
                return;
        kdp_log_info("Re-registering after the kubelet dropped its stream", KDP_F_STR("resource", res->name));
        (void) serve_resource(res);
}

/* Only the kubelet registered with, still kubelet.sock and alive, makes us re-register (kubelet-client.h). */
static void on_stream_lost_posted(kdp_loop *loop, void *userdata) {
        server_note *note = userdata;
        kdp_resource *res = find_resource(note->d, note->resource);

        if (res && res->incarnation == note->incarnation && kdp_kubelet_client_stream_lost(res->reg))
                reregister_dropped(res);
        server_note_free(note);
}

/* The kubelet that dropped a stream of `reg` turned out alive (kdp_kubelet_client_stream_lost()). */
static void on_kubelet_dropped(kdp_registration *reg, const char *resource, void *userdata) {
        kdp_resource *res = find_resource(userdata, resource);

        if (res && res->reg == reg)
                reregister_dropped(res);
}

/*
 * A kubelet opens ListAndWatch right after it answers Register (docs/kubelet.md
 * §1.5). One that dropped its connection to us before (k/k#121994, a dial-back
 * that broke) ended no stream of ours: nothing else would tell. So a resource
 * registered STREAM_WAIT_MS ago without a stream is handled as a stream lost.
 */
static void resource_registered(kdp_resource *res) {
        kdp_metrics_resource_registration(res->series, KDP_METRICS_REGISTERED);
        (void) kdp_loop_timer_arm(res->stream_wait, STREAM_WAIT_MS, 0);
}

static void on_registered(const char *resource, void *userdata) {
        kdp_resource *res = find_resource(userdata, resource);

        if (res)
                resource_registered(res);
}

static void on_register_failed(const char *resource, kdp_metrics_registration why, void *userdata) {
        kdp_resource *res = find_resource(userdata, resource);

        if (res)
                kdp_metrics_resource_registration(res->series, why);
}

static void on_stream_wait(kdp_loop *loop, void *userdata) {
        kdp_resource *res = userdata;

        if (!res->server || kdp_server_n_streams(res->server) > 0)
                return;
        if (res->d->registration == KDP_REGISTRATION_PLUGIN_WATCHER) {
                /* no kubelet now: the next one's start arms the wait again (watcher_kubelet_restarted) */
                if (!kdp_kubelet_client_listening(res->d->kubelet)) {
                        kdp_log_v(1, "No kubelet listens; its successor's plugin watcher will find the socket",
                                  KDP_F_STR("resource", res->name), KDP_F_STR("socket", res->socket_name));
                        return;
                }
                /* a fresh socket is a new plugin to the watcher: it connects anew */
                kdp_log_warning("No ListAndWatch from the kubelet's plugin watcher; serving a fresh socket",
                                KDP_F_STR("resource", res->name), KDP_F_STR("socket", res->socket_name),
                                KDP_F_INT("waitedMs", STREAM_WAIT_MS));
                (void) serve_resource(res);
                return;
        }
        kdp_log_warning("No ListAndWatch from the kubelet since registering; asking whether it dropped us",
                        KDP_F_STR("resource", res->name), KDP_F_STR("socket", res->socket_name),
                        KDP_F_INT("waitedMs", STREAM_WAIT_MS));
        if (kdp_kubelet_client_stream_lost(res->reg))
                reregister_dropped(res);
}

/* CQ thread: hands a copy of the note to the loop. */
static void on_stream_lost(void *userdata) {
        const server_note *note = userdata;
        server_note *copy = server_note_new(note->d, note->resource, note->incarnation);

        if (copy && kdp_loop_post(note->d->loop, on_stream_lost_posted, copy) < 0)
                server_note_free(copy);
}

static void on_watcher_status(bool registered, const char *error, void *userdata);

static void on_allocated_posted(kdp_loop *loop, void *userdata) {
        kdp_daemon *d = userdata;

        atomic_store(&d->allocate_posted, false);
        kdp_pod_resources_soon(d->pod_resources);       /* NULL once stopping */
}

/* CQ thread: an Allocate succeeded; one post per burst (d->pod_resources is the loop's to read). */
static void on_allocated(void *userdata) {
        const server_note *note = userdata;
        kdp_daemon *d = note->d;

        if (!atomic_exchange(&d->allocate_posted, true) && kdp_loop_post(d->loop, on_allocated_posted, d) < 0)
                atomic_store(&d->allocate_posted, false);
}

static void on_server_stopped(void *userdata) {
        server_note_free(userdata);
}

static void stop_serving(kdp_resource *res) {
        (void) kdp_loop_timer_disarm(res->stream_wait);
        kdp_metrics_resource_unregistered(res->series);
        kdp_kubelet_client_cancel(res->reg);
        res->reg = NULL;
        if (res->server) {
                kdp_server_stop(res->server);
                (void) kdp_loop_timer_arm(res->d->cancel_timer, 600, 0);
        }
        res->server = NULL;
        free(res->socket_name);
        res->socket_name = NULL;
}

/* One try on the next socket name: serve, then register. */
static int serve_once(kdp_resource *res, char **ret_path) {
        static const kdp_server_events events = {
                .stream_lost = on_stream_lost,
                .allocated = on_allocated,
                .watcher_status = on_watcher_status,
                .stopped = on_server_stopped,
        };
        kdp_daemon *d = res->d;
        kdp_server_events ev = events;
        _cleanup_free_ char *name = NULL;
        kdp_server *server;
        server_note *note;
        int r;

        r = socket_name(d, res, &name);
        if (r < 0)
                return r;
        *ret_path = socket_path(d, name);
        if (!*ret_path)
                return -ENOMEM;
        note = server_note_new(d, res->name, ++res->incarnation);
        if (!note)
                return -ENOMEM;
        if (d->registration != KDP_REGISTRATION_PLUGIN_WATCHER)
                ev.watcher_status = NULL;       /* no plugin watcher: nobody may say it registered us */
        r = kdp_server_new(d->rt, res->name, *ret_path, res->owner->b, res->snap, res->series, &ev, note,
                           &server);
        if (r < 0) {
                server_note_free(note);
                return r;
        }
        res->server = server;
        res->socket_name = KDP_TAKE_PTR(name);
        res->yielded = false;
        if (d->registration == KDP_REGISTRATION_PLUGIN_WATCHER)
                return 0;               /* the kubelet's plugin watcher finds the socket */
        return kdp_kubelet_client_register(d->kubelet, res->name, res->socket_name,
                                           res->owner->b->pre_start != NULL, &res->reg);
}

static uint64_t serve_backoff_ms(unsigned attempts) {
        uint64_t ms = SERVE_BACKOFF_FIRST_MS;

        for (unsigned i = 1; i < attempts && ms < SERVE_BACKOFF_MAX_MS; i++)
                ms *= 2;
        return ms < SERVE_BACKOFF_MAX_MS ? ms : SERVE_BACKOFF_MAX_MS;
}

/*
 * Whether a failure to serve at this attempt warns. A socket that vanished as it
 * was made (ENOENT: a restarting kubelet's start-up cleaning removes every file
 * of the directory, ours just bound among them) is part of a restart: it warns
 * only at the 16th attempt in a row (~30 s), as Register's retries within a
 * restart. Any other failure (the name taken by something not ours, the
 * directory unwritable) warns when its streak starts. Both warn every 60th try after.
 */
static bool serve_failure_warns(int r, unsigned attempts) {
        unsigned first = r == -ENOENT ? SERVE_WARN_AFTER_VANISHED : 1;

        return attempts == first || (attempts > first && (attempts - first) % 60 == 0);
}

/*
 * Serves on the next socket name; a failure (the name taken by something not
 * ours, the directory unwritable or gone) is retried on the name after it
 * with the back-off of Register, forever. Logged as a warning as
 * serve_failure_warns() says, at --v 2 between.
 */
static int serve_try(kdp_resource *res) {
        _cleanup_free_ char *path = NULL;
        int r;

        r = serve_once(res, &path);
        if (r >= 0) {
                if (res->serve_attempts > 0)
                        kdp_log_info("Serving resource again", KDP_F_STR("resource", res->name),
                                     KDP_F_STR("socket", path), KDP_F_INT("attempts", res->serve_attempts + 1));
                res->serve_attempts = 0;
                return 0;
        }
        stop_serving(res);
        res->serve_attempts++;
        if (serve_failure_warns(r, res->serve_attempts))
                kdp_log_warning_errno(r, "Failed to serve resource; retrying on the next socket name",
                                      KDP_F_STR("resource", res->name), KDP_F_STR("socket", path),
                                      KDP_F_INT("attempts", res->serve_attempts));
        else
                kdp_log_v(2, "Failed to serve resource", KDP_F_STR("resource", res->name), KDP_F_STR("socket", path),
                          KDP_F_STR("err", strerror(-r)), KDP_F_INT("attempts", res->serve_attempts));
        return kdp_loop_timer_arm(res->serve_retry, serve_backoff_ms(res->serve_attempts), 0);
}

static void on_serve_retry(kdp_loop *loop, void *userdata) {
        kdp_resource *res = userdata;

        if (res->server)
                (void) serve_resource(res);     /* its socket was refused by the plugin watcher */
        else
                (void) serve_try(res);
}

/* (Re)serves on a fresh socket, then registers. The old server's streams end first. */
static int serve_resource(kdp_resource *res) {
        stop_serving(res);
        (void) kdp_loop_timer_disarm(res->serve_retry);
        res->serve_attempts = 0;
        return serve_try(res);
}

/* What the plugin watcher said of one socket, posted from the CQ thread to the loop. */
typedef struct watcher_note {
        server_note *note;
        bool registered;
        char *error;
} watcher_note;

static void watcher_note_free(watcher_note *w) {
        server_note_free(w->note);
        free(w->error);
        free(w);
}

/*
 * The plugin watcher refused the socket. A kubelet that got as far as
 * connecting (dial-back or GetDevicePluginOptions failed) holds the plugin
 * as registered and never tries that socket again: after the back-off of
 * serving (at least WATCHER_REFUSED_FIRST_MS, so the kubelet is done with
 * the old socket), a fresh socket replaces it. Warned when a streak
 * starts and every 60th refusal.
 */
static void watcher_refused(kdp_resource *res, const char *path, const char *error) {
        uint64_t ms;

        res->watcher_refusals++;
        if (serve_failure_warns(-EPERM, res->watcher_refusals))
                kdp_log_warning("The kubelet's plugin watcher refused the resource; serving a fresh socket",
                                KDP_F_STR("resource", res->name), KDP_F_STR("socket", path), KDP_F_STR("err", error),
                                KDP_F_INT("refusals", res->watcher_refusals));
        else
                kdp_log_v(1, "The kubelet's plugin watcher refused the resource", KDP_F_STR("resource", res->name),
                          KDP_F_STR("socket", path), KDP_F_STR("err", error),
                          KDP_F_INT("refusals", res->watcher_refusals));
        kdp_metrics_resource_registration(res->series, KDP_METRICS_REGISTER_REJECTED);
        ms = serve_backoff_ms(res->watcher_refusals);
        (void) kdp_loop_timer_arm(res->serve_retry, ms > WATCHER_REFUSED_FIRST_MS ? ms : WATCHER_REFUSED_FIRST_MS, 0);
}

/* The kubelet took the socket: the registration is its own, adopted as done. */
static void on_watcher_status_posted(kdp_loop *loop, void *userdata) {
        watcher_note *w = userdata;
        kdp_resource *res = find_resource(w->note->d, w->note->resource);
        _cleanup_free_ char *path = NULL;

        if (!res || res->incarnation != w->note->incarnation || !res->server ||
            !(path = socket_path(res->d, res->socket_name))) {
                watcher_note_free(w);
                return;
        }
        if (!w->registered) {
                watcher_refused(res, path, w->error);
                watcher_note_free(w);
                return;
        }
        kdp_kubelet_client_cancel(res->reg);
        res->reg = NULL;
        if (kdp_kubelet_client_adopt(res->d->kubelet, res->name, path, &res->reg) < 0)
                kdp_log_error(-ENOMEM, "Failed to note a registration", KDP_F_STR("resource", res->name));
        kdp_log_info("Registered with kubelet through its plugin watcher", KDP_F_STR("resource", res->name),
                     KDP_F_STR("socket", path));
        res->watcher_refusals = 0;
        resource_registered(res);
        watcher_note_free(w);
}

/* CQ thread. */
static void on_watcher_status(bool registered, const char *error, void *userdata) {
        const server_note *note = userdata;
        watcher_note *w = calloc(1, sizeof(*w));

        if (!w)
                return;
        w->registered = registered;
        w->note = server_note_new(note->d, note->resource, note->incarnation);
        w->error = strdup(error);
        if (!w->note || !w->error || kdp_loop_post(note->d->loop, on_watcher_status_posted, w) < 0)
                watcher_note_free(w);
}

static const char *cdi_dir(const kdp_daemon *d) {
        return d->roots[KDP_PATH_CDI];
}

/* The CDI specs go to disk first, so no name reaches the kubelet before its spec exists. */
static int make_snapshot(kdp_resource *res, kdp_device_list *list, kdp_snapshot **ret) {
        kdp_daemon *d = res->d;
        int r;

        (void) kdp_cdi_sync(cdi_dir(d), list, &res->cdi);      /* logged; retried at the next change */
        r = kdp_snapshot_new(list, ++d->generation, ret);
        if (r < 0)
                return kdp_log_error(r, "Failed to build device snapshot", KDP_F_STR("resource", res->name));
        (void) kdp_loop_timer_arm(d->trim_timer, TRIM_AFTER_MS, 0);    /* the table it replaces */
        return 0;
}

static int add_resource(backend_slot *slot, kdp_device_list *list, uint64_t scan) {
        kdp_daemon *d = slot->d;
        kdp_resource *res;
        int r;

        res = calloc(1, sizeof(*res));
        if (!res)
                return -ENOMEM;
        res->d = d;
        res->owner = slot;
        res->seen_in_scan = scan;
        res->name = strdup(list->resource);
        r = res->name ? kdp_metrics_resource_add(d->metrics, res->name, &res->series) : -ENOMEM;
        if (r >= 0) {
                kdp_health_log_update(&res->health, res->name, NULL, list, res->series);
                r = kdp_loop_add_timer(d->loop, on_serve_retry, res, &res->serve_retry);
        }
        if (r >= 0)
                r = kdp_loop_add_timer(d->loop, on_stream_wait, res, &res->stream_wait);
        if (r >= 0)
                r = make_snapshot(res, list, &res->snap);
        if (r < 0) {
                kdp_loop_remove(res->serve_retry);
                kdp_loop_remove(res->stream_wait);
                kdp_cdi_remove(cdi_dir(d), &res->cdi);
                kdp_metrics_resource_remove(res->series);
                kdp_health_log_done(&res->health);
                free(res->name);
                free(res);
                return r;
        }
        kdp_metrics_resource_publish(res->series, res->snap);
        res->next = d->resources;
        d->resources = res;
        kdp_log_info("Serving resource", KDP_F_STR("resource", res->name), KDP_F_STR("backend", slot->b->name),
                     KDP_F_INT("devices", res->snap->list.n_devices), KDP_F_INT("healthy", res->snap->n_healthy));
        return serve_resource(res);
}

/* The resource's CDI spec files stay: a container that restarts may still need them. */
static void free_resource(kdp_resource *res) {
        stop_serving(res);
        kdp_loop_remove(res->serve_retry);
        kdp_loop_remove(res->stream_wait);
        kdp_cdi_specs_free(res->cdi);
        kdp_snapshot_unref(res->snap);
        kdp_metrics_resource_remove(res->series);
        kdp_health_log_done(&res->health);
        free(res->name);
        free(res);
}

static int update_resource(kdp_resource *res, kdp_device_list *list, bool reserve) {
        kdp_snapshot *snap;
        int r;

        if (kdp_device_list_equal(&res->snap->list, list)) {
                kdp_device_list_done(list);
                return reserve ? serve_resource(res) : 0;
        }
        kdp_health_log_update(&res->health, res->name, &res->snap->list, list, res->series);
        r = make_snapshot(res, list, &snap);
        if (r < 0)
                return r;
        /* a change the kubelet cannot see (a reason, what Allocate answers): no stream sends it */
        if (grpc_slice_eq(snap->law_slice, res->snap->law_slice))
                snap->generation = res->snap->generation;
        else
                snap->changed_ns = res->owner->cause_ns;
        kdp_snapshot_unref(res->snap);
        res->snap = snap;
        kdp_metrics_resource_publish(res->series, snap);
        if (reserve)
                return serve_resource(res);
        if (res->server)
                kdp_server_publish(res->server, snap);
        return 0;
}

/* Tells the kubelet the resource is empty, then stops serving it. */
static void retire_resource(kdp_daemon *d, kdp_resource *res) {
        kdp_device_list empty = { 0 };
        kdp_snapshot *snap;

        kdp_log_info("Retired resource", KDP_F_STR("resource", res->name));
        if (res->server && kdp_device_list_init(&empty, res->name) >= 0 &&
            kdp_snapshot_new(&empty, ++d->generation, &snap) >= 0) {
                kdp_server_publish(res->server, snap);
                kdp_snapshot_unref(snap);
        }
        kdp_device_list_done(&empty);
        kdp_cdi_remove(cdi_dir(d), &res->cdi);
        for (kdp_resource **p = &d->resources; *p; p = &(*p)->next)
                if (*p == res) {
                        *p = res->next;
                        break;
                }
        free_resource(res);
        (void) kdp_loop_timer_arm(d->trim_timer, TRIM_AFTER_MS, 0);    /* the table it held */
}

/* A resource another backend serves: noted (logged once) with each of its devices, none of them served. */
static void refuse_list(backend_slot *slot, kdp_device_tree *tree, const kdp_device_list *list, const char *served_by) {
        _cleanup_free_ char *why = NULL;

        (void) kdp_device_tree_note(tree, KDP_TREE_NOTE_REFUSED_RESOURCE, list->resource, served_by, 0, 0);
        if (asprintf(&why, "its resource %s is served by backend %s", list->resource, served_by) < 0)
                return;
        for (size_t i = 0; i < list->n_devices; i++) {
                const kdp_device *dev = &list->devices[i];

                (void) kdp_device_tree_note(tree, KDP_TREE_NOTE_NOT_SERVED,
                                            dev->pci_address ? dev->pci_address : dev->id, why, 0, 0);
        }
}

/* Whether a device of `slot`, by PCI address or ID, is in one of its resources now. */
static bool slot_serves(const char *address, void *userdata) {
        backend_slot *slot = userdata;

        for (kdp_resource *res = slot->d->resources; res; res = res->next) {
                const kdp_device_list *l = &res->snap->list;

                if (res->owner != slot)
                        continue;
                if (kdp_device_list_find(l, address))
                        return true;
                for (size_t i = 0; i < l->n_devices; i++)
                        if (l->devices[i].pci_address && strcmp(l->devices[i].pci_address, address) == 0)
                                return true;
        }
        return false;
}

/*
 * Rewrites the backend's not-served list for `kdpctl not-served`. A failure is
 * retried at the next change of the list and logged when it is not the last
 * failure's error (so not at every change of a state dir that stays unwritable).
 */
static void write_not_served(backend_slot *slot) {
        _cleanup_free_ kdp_not_served_entry *v = NULL;
        size_t n = 0;
        int r;

        slot->list_tried = true;
        r = kdp_conditions_not_served(&slot->conditions, &v, &n);
        if (r >= 0)
                r = kdp_not_served_write(slot->d->state_dir, slot->b->name, v, n);
        if (r < 0 && r != slot->list_error)
                kdp_log_error(r, "Failed to write the list of devices not served", KDP_F_STR("backend", slot->b->name),
                              KDP_F_STR("stateDir", slot->d->state_dir));
        else if (r >= 0 && slot->list_error)
                kdp_log_info("Wrote the list of devices not served again", KDP_F_STR("backend", slot->b->name),
                             KDP_F_STR("stateDir", slot->d->state_dir));
        slot->list_error = r < 0 ? r : 0;
        if (r >= 0)
                slot->listed = true;
}

/* Applies a finished scan of `slot`; `reserve` re-serves and re-registers its surviving resources. */
static int apply_tree(backend_slot *slot, kdp_device_tree *tree, bool reserve) {
        kdp_daemon *d = slot->d;
        uint64_t scan = ++d->scans, now = kdp_backend_now_usec(NULL) / 1000, next, recheck_at = 0;
        int r, ret = 0;

        for (size_t i = 0; i < tree->n_resources; i++) {
                kdp_device_list *list = &tree->resources[i];
                kdp_resource *res = find_resource(d, list->resource);

                if (res && res->owner != slot) {
                        refuse_list(slot, tree, list, res->owner->b->name);
                        ret = -EEXIST;
                        continue;
                }
                if (res)
                        res->seen_in_scan = scan;
                next = kdp_debounce_apply(d->debounce, res ? &res->snap->list : NULL, list, now);
                if (next && (!recheck_at || next < recheck_at))
                        recheck_at = next;
                r = res ? update_resource(res, list, reserve) : add_resource(slot, list, scan);
                if (r < 0 && ret >= 0)
                        ret = r;
        }
        for (kdp_resource *res = d->resources, *following; res; res = following) {
                following = res->next;
                if (res->owner == slot && res->seen_in_scan != scan)
                        retire_resource(d, res);
        }
        if (recheck_at)
                (void) kdp_loop_timer_arm(slot->recheck, recheck_at - now, 0);
        if (kdp_conditions_update(&slot->conditions, slot->b->name, tree, slot_serves, slot) > 0 || !slot->list_tried)
                write_not_served(slot);
        return ret;
}

/* A failing scan is logged when it starts failing or fails otherwise, and when it works again. */
static int rescan(backend_slot *slot, bool reserve) {
        _cleanup_(kdp_device_tree_freep) kdp_device_tree *tree = NULL;
        uint64_t started = kdp_metrics_now_ns();
        int r;

        /* a change this scan finds is measured from the device event that asked for it, else from now */
        slot->cause_ns = slot->event_ns ? slot->event_ns : started;
        slot->event_ns = 0;
        r = kdp_registry_scan(slot->b, slot->d->roots[KDP_PATH_SYSFS], &tree);
        kdp_metrics_backend_scanned(slot->metrics, kdp_metrics_now_ns() - started);
        if (r < 0) {
                if (r != slot->scan_error)
                        kdp_log_error(r, "Failed to scan devices", KDP_F_STR("backend", slot->b->name));
                slot->scan_error = r;
                return r;
        }
        if (slot->scan_error)
                kdp_log_info("Scanned devices again after failing", KDP_F_STR("backend", slot->b->name));
        slot->scan_error = 0;
        return apply_tree(slot, tree, reserve);
}

/*
 * Every timer of a slot (interval, recheck of a held device, the backend's own request) rescans
 * it. The device events already queued are read first: a timer that fires in the same wake-up
 * as a uevent (a kdpd stopped for a while, a busy node) would otherwise scan what the backend
 * cached before the event, and log a reason that leaves out what the event changed.
 */
static void on_slot_timer(kdp_loop *loop, void *userdata) {
        backend_slot *slot = userdata;

        kdp_udev_monitor_drain(slot->d->udev);
        slot->dirty = false;            /* this scan is the one an event just asked for */
        (void) rescan(slot, false);
}

/* ---- device events ---- */

static bool slot_wants(const backend_slot *slot, const char *subsystem) {
        const char *const *subs = slot->b->ops->udev_subsystems;

        for (size_t i = 0; subs && subs[i]; i++)
                if (strcmp(subs[i], subsystem) == 0)
                        return true;
        return false;
}

static void scan_dirty_slots(kdp_loop *loop, void *userdata) {
        kdp_daemon *d = userdata;

        d->scan_posted = false;
        for (size_t i = 0; i < d->n_slots; i++)
                if (d->slots[i].dirty) {
                        d->slots[i].dirty = false;
                        (void) rescan(&d->slots[i], false);
                }
}

/* Asks for a scan of `slot` once the loop has read what is pending (a burst gives one scan). */
static void mark_dirty(backend_slot *slot) {
        kdp_daemon *d = slot->d;

        slot->dirty = true;
        if (!slot->event_ns)
                slot->event_ns = kdp_metrics_now_ns();
        if (!d->scan_posted && kdp_loop_post(d->loop, scan_dirty_slots, d) >= 0)
                d->scan_posted = true;
}

/* Every event of a burst reaches its backends and marks them; one scan each follows once the burst is read. */
static void on_device_event(const kdp_udev_event *ev, void *userdata) {
        kdp_daemon *d = userdata;
        const kdp_device_event event = {
                .action = ev->action, .subsystem = ev->subsystem, .devpath = ev->devpath,
                .sysname = ev->sysname, .driver = ev->driver,
        };

        kdp_metrics_device_event(d->metrics, ev->subsystem, ev->action);
        for (size_t i = 0; i < d->n_slots; i++)
                if (slot_wants(&d->slots[i], ev->subsystem)) {
                        kdp_registry_device_event(d->slots[i].b, &event);
                        mark_dirty(&d->slots[i]);
                }
}

/* ---- what a backend asks of the loop (kdp_backend_host) ---- */

static fd_watch **find_watch(backend_slot *slot, int fd) {
        fd_watch **w = &slot->watches;

        while (*w && (*w)->fd != fd)
                w = &(*w)->next;
        return w;
}

static void host_unwatch_fd(void *data, int fd) {
        fd_watch **link = find_watch(data, fd), *w = *link;

        if (!w)
                return;
        *link = w->next;
        kdp_loop_remove(w->source);
        free(w);
}

static void on_watched_fd(kdp_loop *loop, int fd, uint32_t events, void *userdata) {
        fd_watch *w = userdata;
        backend_slot *slot = w->slot;   /* the callback may unwatch, freeing w */
        int r = kdp_registry_fd_ready(slot->b, w->fn, fd);

        if (r < 0) {
                kdp_log_error(r, "Stopped watching a backend's fd", KDP_F_STR("backend", slot->b->name),
                              KDP_F_INT("fd", fd));
                host_unwatch_fd(slot, fd);
        } else if (r > 0)
                mark_dirty(slot);
}

static int host_watch_fd(void *data, int fd, kdp_backend_fd_fn fn) {
        backend_slot *slot = data;
        fd_watch *w;
        int r;

        if (*find_watch(slot, fd))
                return -EEXIST;
        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        *w = (fd_watch){ .slot = slot, .fd = fd, .fn = fn, .next = slot->watches };
        r = kdp_loop_add_fd(slot->d->loop, fd, EPOLLIN, on_watched_fd, w, &w->source);
        if (r < 0) {
                free(w);
                return r;
        }
        slot->watches = w;
        return 0;
}

static int host_rescan_after(void *data, uint32_t ms) {
        backend_slot *slot = data;
        int r;

        if (!slot->expiry) {
                r = kdp_loop_add_timer(slot->d->loop, on_slot_timer, slot, &slot->expiry);
                if (r < 0)
                        return r;
        }
        return kdp_loop_timer_arm(slot->expiry, ms, 0);
}

static const kdp_backend_host backend_host = {
        .watch_fd = host_watch_fd,
        .unwatch_fd = host_unwatch_fd,
        .rescan_after = host_rescan_after,
};

/* Ends what the backend asked of the loop, then stops it (fini closes what was watched). */
static void stop_backend(backend_slot *slot) {
        while (slot->watches)
                host_unwatch_fd(slot, slot->watches->fd);
        if (slot->expiry)
                (void) kdp_loop_timer_disarm(slot->expiry);
        kdp_registry_stop(slot->b);
}

/* Starts the backend; what a failed init asked of the loop is undone. */
static int start_backend(backend_slot *slot, const kdp_config *config) {
        int r;

        kdp_registry_set_host(slot->b, &backend_host, slot);
        r = kdp_registry_start(slot->b, config, (const char *const *) slot->d->roots);
        if (r < 0)
                stop_backend(slot);
        return r;
}

static int watch_devices(kdp_daemon *d, const char *source) {
        const char *subs[64];
        size_t n = 0;

        for (size_t i = 0; i < d->n_slots; i++)
                for (const char *const *s = d->slots[i].b->ops->udev_subsystems; s && *s; s++) {
                        bool dup = false;

                        for (size_t j = 0; j < n && !dup; j++)
                                dup = strcmp(subs[j], *s) == 0;
                        if (!dup && n + 1 < KDP_ELEMENTSOF(subs))
                                subs[n++] = *s;
                }
        if (n == 0)
                return 0;
        subs[n] = NULL;
        for (size_t i = 0; i < n; i++) {
                int r = kdp_metrics_add_subsystem(d->metrics, subs[i]);

                if (r < 0)
                        return r;
        }
        return kdp_udev_monitor_new(d->loop, subs, source, on_device_event, d, &d->udev);
}

static int arm_slot_timer(backend_slot *slot) {
        uint32_t ms = slot->b->rescan_interval_ms;
        int r;

        if (slot->b->probe_interval_ms && (!ms || slot->b->probe_interval_ms < ms))
                ms = slot->b->probe_interval_ms;
        if (!ms)
                return 0;
        if (!slot->timer) {
                r = kdp_loop_add_timer(slot->d->loop, on_slot_timer, slot, &slot->timer);
                if (r < 0)
                        return r;
        }
        return kdp_loop_timer_arm(slot->timer, ms, ms);
}

static void on_cancel_timer(kdp_loop *loop, void *userdata) {
        kdp_daemon *d = userdata;

        kdp_server_runtime_cancel_overdue(d->rt);
}

/*
 * Memory a burst of calls took (grpc buffers, responses), or a replaced device
 * table, is freed but stays in the heap; 2 s after the first call of a burst,
 * or after a scan, it goes back to the system.
 */
static void on_trim_timer(kdp_loop *loop, void *userdata) {
        kdp_daemon *d = userdata;

        kdp_server_runtime_idle(d->rt);
        (void) malloc_trim(0);
}

static void on_busy_posted(kdp_loop *loop, void *userdata) {
        kdp_daemon *d = userdata;

        (void) kdp_loop_timer_arm(d->trim_timer, TRIM_AFTER_MS, 0);
}

/* CQ thread, once per burst. */
static void on_runtime_busy(void *userdata) {
        kdp_daemon *d = userdata;

        (void) kdp_loop_post(d->loop, on_busy_posted, d);
}

/* ---- kubelet events ---- */

/* What the kubelet's List says is in use: each backend with an allocated hook gets its own resources' IDs. */
static void on_pod_resources(const kdp_pod_resources_list *l, uint64_t started_usec, void *userdata) {
        kdp_daemon *d = userdata;

        for (size_t i = 0; i < d->n_slots; i++) {
                backend_slot *slot = &d->slots[i];
                _cleanup_free_ kdp_allocated_resource *v = NULL;
                size_t n = 0, max = 0;

                if (!slot->b->allocated)
                        continue;
                for (const kdp_resource *res = d->resources; res; res = res->next)
                        max += res->owner == slot;
                if (max > 0 && !(v = calloc(max, sizeof(*v)))) {
                        kdp_log_error(-ENOMEM, "Failed to hand pod resources to a backend",
                                      KDP_F_STR("backend", slot->b->name));
                        continue;
                }
                for (const kdp_resource *res = d->resources; res; res = res->next) {
                        const kdp_pod_devices *p = res->owner == slot ? kdp_pod_resources_list_find(l, res->name) : NULL;

                        if (p)
                                v[n++] = (kdp_allocated_resource){
                                        .resource = p->resource,
                                        .device_ids = (const char *const *) p->ids,
                                        .n_device_ids = p->n_ids,
                                };
                }
                kdp_registry_allocated(slot->b, &(kdp_allocated){
                        .started_usec = started_usec, .resources = v, .n_resources = n });
        }
}

/*
 * The PodResources socket: given, or beside the device-plugins dir as the kubelet puts it
 * (docs/kubelet.md §8). Asked only when a backend takes the answers (its allocated hook): the
 * backends are fixed at start, a restart reloads the same file.
 */
static int follow_pod_resources(kdp_daemon *d, const kdp_daemon_options *o) {
        _cleanup_free_ char *path = NULL;
        bool wanted = false;

        for (size_t i = 0; i < d->n_slots; i++)
                wanted = wanted || d->slots[i].b->allocated;
        if (!wanted || (o->pod_resources_socket && !*o->pod_resources_socket))
                return 0;
        path = o->pod_resources_socket ? strdup(o->pod_resources_socket) :
                                         beside_kubelet_dir(d->kubelet_dir, KDP_POD_RESOURCES_SOCKET);
        if (!path)
                return -ENOMEM;
        return kdp_pod_resources_new(d->loop, kdp_server_runtime_cq(d->rt), path, o->pod_resources_period_ms,
                                     on_pod_resources, d, &d->pod_resources);
}

/* True if the socket `res` serves is still in the directory. */
static bool socket_present(kdp_resource *res) {
        _cleanup_free_ char *path = NULL;
        struct stat st;

        if (res->reg)
                return kdp_kubelet_client_endpoint_intact(res->reg);
        path = res->socket_name ? socket_path(res->d, res->socket_name) : NULL;
        return path && lstat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

/*
 * A kubelet started with the plugin watcher: it finds every socket in
 * plugins_registry itself (nothing deletes them), so only a resource whose
 * socket is gone (the directory was removed) is re-served. The others wait
 * for it to connect; one it has not found in STREAM_WAIT_MS (a watcher whose
 * directory was replaced under it) gets a fresh socket then.
 */
static void watcher_kubelet_restarted(kdp_daemon *d) {
        for (kdp_resource *res = d->resources; res; res = res->next) {
                if (!res->server)
                        continue;       /* serving is being retried */
                if (!socket_present(res))
                        (void) serve_resource(res);
                else
                        (void) kdp_loop_timer_arm(res->stream_wait, STREAM_WAIT_MS, 0);
        }
}

/*
 * kubelet.sock appeared. A resource registered (or registering) with that very
 * file on a socket its start-up cleanup left intact keeps its registration;
 * every other one is re-served on a fresh socket, as the cleanup deleted its
 * socket, and registers once. A fresh socket even when ours survived: the old
 * kubelet's streams on it could end late and look like the new one dropping us.
 */
static void on_kubelet_restarted(void *userdata) {
        kdp_daemon *d = userdata;

        kdp_metrics_kubelet_restarted(d->metrics);
        if (d->registration == KDP_REGISTRATION_PLUGIN_WATCHER) {
                watcher_kubelet_restarted(d);
                return;
        }
        for (kdp_resource *res = d->resources; res; res = res->next)
                if (!kdp_kubelet_client_is_current(res->reg) || !kdp_kubelet_client_endpoint_intact(res->reg))
                        (void) serve_resource(res);
}

/* ---- signals and reload ---- */

static int restart_backend(kdp_daemon *d, backend_slot *slot, const kdp_config *config) {
        int r;

        stop_backend(slot);
        r = start_backend(slot, config);
        if (r >= 0)
                return 0;
        kdp_log_error(r, "Kept the previous config of a backend that refused the new one",
                      KDP_F_STR("backend", slot->b->name));
        return start_backend(slot, d->config);
}

/*
 * SIGHUP, after kdpd's own config: every running backend that was not restarted re-reads the
 * files it owns (its reload hook), then is scanned; the scan's diff re-registers only the
 * resources whose lists changed. Returns how many were told.
 */
static unsigned reload_backend_files(kdp_daemon *d) {
        unsigned told = 0;

        for (size_t i = 0; i < d->n_slots; i++) {
                backend_slot *slot = &d->slots[i];

                if (slot->restarted) {
                        slot->restarted = false;
                        continue;
                }
                if (kdp_registry_reload(slot->b) < 0)
                        continue;       /* no hook, or stopped */
                told++;
                (void) rescan(slot, false);
        }
        return told;
}

static void reload(kdp_daemon *d) {
        _cleanup_(kdp_config_freep) kdp_config *c = NULL;
        unsigned changed = 0, told;
        int r;

        r = load_config(d, &c);
        if (r < 0) {
                kdp_log_error(r, "Kept the running config after a failed reload");
                told = reload_backend_files(d);
                kdp_log_info("Reloaded the backends' own files", KDP_F_INT("reloadedBackends", told));
                return;
        }
        warn_unknown_sections(d, c);
        for (size_t i = 0; i < d->n_slots; i++) {
                backend_slot *slot = &d->slots[i];

                if (kdp_config_section_equal(d->config, c, slot->b->name))
                        continue;
                changed++;
                slot->restarted = true;
                kdp_log_info("Reloading backend with its changed config", KDP_F_STR("backend", slot->b->name));
                if (restart_backend(d, slot, c) >= 0) {
                        (void) rescan(slot, true);
                        (void) arm_slot_timer(slot);
                }
        }
        kdp_config_free(d->config);
        d->config = KDP_TAKE_PTR(c);
        told = reload_backend_files(d);
        kdp_log_info("Reloaded config", KDP_F_INT("changedBackends", changed), KDP_F_INT("reloadedBackends", told));
}

static void on_signal(kdp_loop *loop, int fd, uint32_t events, void *userdata) {
        kdp_daemon *d = userdata;
        struct signalfd_siginfo si;

        while (read(fd, &si, sizeof(si)) == sizeof(si)) {
                if (si.ssi_signo == SIGHUP) {
                        reload(d);
                        continue;
                }
                kdp_log_info("Stopping", KDP_F_STR("signal", strsignal((int) si.ssi_signo)));
                kdp_loop_quit(loop, 0);
        }
}

static int watch_signals(kdp_daemon *d) {
        sigset_t mask;

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        d->signal_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        if (d->signal_fd < 0)
                return -errno;
        return kdp_loop_add_fd(d->loop, d->signal_fd, EPOLLIN, on_signal, d, &d->signal_source);
}

/* ---- start-up ---- */

/*
 * Removes sockets in `dir_path` named after our backends that nobody serves
 * (a crashed earlier kdpd, in either registration mode); one that is served,
 * if only by a listener whose backlog is full, is kept, and said so.
 */
static void remove_stale_sockets(kdp_daemon *d, const char *dir_path) {
        _cleanup_closedir_ DIR *dir = opendir(dir_path);
        struct dirent *e;

        while (dir && (e = readdir(dir))) {
                _cleanup_free_ char *path = NULL;
                struct stat st;
                bool ours = false;
                int served;

                for (size_t i = 0; i < d->n_slots && !ours; i++) {
                        size_t n = strlen(SOCKET_PREFIX) + strlen(d->slots[i].b->name);

                        ours = strncmp(e->d_name, SOCKET_PREFIX, strlen(SOCKET_PREFIX)) == 0 &&
                               strncmp(e->d_name + strlen(SOCKET_PREFIX), d->slots[i].b->name,
                                       strlen(d->slots[i].b->name)) == 0 &&
                               e->d_name[n] == '-';
                }
                if (asprintf(&path, "%s/%s", dir_path, e->d_name) < 0)
                        path = NULL;
                if (!ours || !path || lstat(path, &st) < 0 || !S_ISSOCK(st.st_mode))
                        continue;
                served = kdp_unix_socket_served(path);
                if (served)
                        kdp_log_info("Kept a socket that is served", KDP_F_STR("path", path),
                                     KDP_F_STR("listener", served == 2 ? "backlog full" : "accepts"));
                else if (unlink(path) == 0)
                        kdp_log_info("Removed stale socket", KDP_F_STR("path", path));
        }
}

static int load_backends(kdp_daemon *d, const kdp_daemon_options *o) {
        _cleanup_(strv_freep) char **default_dirs = NULL;
        const char *const *dirs = o->backend_dirs;
        size_t n = 0;
        int r;

        if (!dirs) {
                r = kdp_registry_default_dirs(&default_dirs);
                if (r < 0)
                        return r;
                dirs = (const char *const *) default_dirs;
        }
        while (o->backends && o->backends[n])
                n++;
        if (n == 0)
                return kdp_log_error(-EINVAL, "No backend given; use --backend NAME|PATH");
        d->slots = calloc(n, sizeof(*d->slots));
        if (!d->slots)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                kdp_backend *b;

                r = kdp_registry_load(o->backends[i], dirs, &b);
                if (r < 0)
                        return r;
                d->slots[d->n_slots++] = (backend_slot){ .d = d, .b = b };
                if (find_slot(d, b->name) != &d->slots[d->n_slots - 1])
                        return kdp_log_error(-EEXIST, "Refused backend loaded twice", KDP_F_STR("backend", b->name));
                r = kdp_metrics_add_backend(d->metrics, b->name, b->ops->abi_major, b->path,
                                            &d->slots[d->n_slots - 1].metrics);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int start_backends(kdp_daemon *d) {
        size_t n = 0;
        int r;

        for (size_t i = 0; i < d->n_slots; i++) {
                r = kdp_loop_add_timer(d->loop, on_slot_timer, &d->slots[i], &d->slots[i].recheck);
                if (r < 0)
                        return r;
                r = start_backend(&d->slots[i], d->config);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < d->n_slots; i++) {
                r = rescan(&d->slots[i], false);
                if (r < 0)
                        return r;       /* a resource claimed twice is a configuration error at start */
                r = arm_slot_timer(&d->slots[i]);
                if (r < 0)
                        return r;
        }
        for (const kdp_resource *res = d->resources; res; res = res->next)
                n++;
        kdp_log_info("Finished the first scan", KDP_F_INT("resources", n));
        return 0;
}

/*
 * Every connection costs kdpd three fds (its own, and a socketpair to gRPC,
 * see gate.h). The soft limit goes up to the hard one, logged with both.
 */
static void raise_fd_limit(void) {
        struct rlimit rl;
        rlim_t before;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
                kdp_log_warning_errno(-errno, "Failed to read the open file limit");
                return;
        }
        before = rl.rlim_cur;
        if (rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
                        kdp_log_warning_errno(-errno, "Failed to raise the open file limit",
                                              KDP_F_INT("soft", before), KDP_F_INT("hard", rl.rlim_max));
                        return;
                }
        }
        kdp_log_info("Open file limit", KDP_F_INT("soft", before), KDP_F_INT("raisedTo", rl.rlim_cur),
                     KDP_F_INT("hard", rl.rlim_max));
}

static void on_beat_timer(kdp_loop *loop, void *userdata) {
        kdp_daemon *d = userdata;

        kdp_metrics_heartbeat_beat(d->loop_beat);
}

/* The registry, always counted in; with an endpoint, heartbeats: the loop's timer stamps its own. */
static int start_metrics(kdp_daemon *d, const kdp_daemon_options *o) {
        kdp_metrics_options mo = {
                .device_health = o->metrics_device_health,
                .stall_ms = !o->metrics_address ? 0 : o->metrics_stall_ms ? o->metrics_stall_ms : KDP_METRICS_STALL_MS,
        };
        int r;

        r = kdp_metrics_new(&mo, &d->metrics);
        if (r < 0)
                return r;
        r = kdp_metrics_add_heartbeat(d->metrics, "event loop", &d->loop_beat);
        if (r < 0 || !d->loop_beat)
                return r;
        r = kdp_loop_add_timer(d->loop, on_beat_timer, d, &d->beat_timer);
        if (r < 0)
                return r;
        return kdp_loop_timer_arm(d->beat_timer, kdp_metrics_beat_ms(d->metrics), kdp_metrics_beat_ms(d->metrics));
}

/*
 * --registration: the plugin watcher when asked, or for auto when its
 * directory exists (every kubelet since 1.12 makes it at start; a DaemonSet
 * without its mount has none), else Register on kubelet.sock. *ret_why says
 * why, for log_registration() once the config was taken.
 */
static int choose_registration(kdp_daemon *d, kdp_registration_mode asked, const char **ret_why) {
        struct stat st;
        bool present = stat(d->plugins_registry, &st) == 0 && S_ISDIR(st.st_mode);
        const char *why = asked != KDP_REGISTRATION_AUTO ? "--registration" :
                          present ? "the plugin watcher's directory exists" :
                                    "no plugin watcher's directory";

        *ret_why = why;
        d->registration = asked != KDP_REGISTRATION_AUTO ? asked :
                          present ? KDP_REGISTRATION_PLUGIN_WATCHER : KDP_REGISTRATION_KUBELET_SOCK;
        if (d->registration == KDP_REGISTRATION_PLUGIN_WATCHER) {
                d->socket_dir = d->plugins_registry;
                /* made 0750 if missing, as the kubelet would: it may start after us */
                if (!present && mkdir(d->plugins_registry, 0750) < 0 && errno != EEXIST)
                        return kdp_log_error(-errno, "Failed to create the plugin watcher's directory",
                                             KDP_F_STR("dir", d->plugins_registry));
                return 0;
        }
        d->socket_dir = d->kubelet_dir;
        return 0;
}

static void log_registration(const kdp_daemon *d, const char *why) {
        if (d->registration == KDP_REGISTRATION_PLUGIN_WATCHER)
                kdp_log_info("Registering through the kubelet's plugin watcher", KDP_F_STR("dir", d->socket_dir),
                             KDP_F_STR("reason", why));
        else
                kdp_log_info("Registering on kubelet.sock", KDP_F_STR("dir", d->socket_dir), KDP_F_STR("reason", why));
}

static int copy_options(kdp_daemon *d, const kdp_daemon_options *o) {
        d->stop_timeout_ms = o->stop_timeout_ms ? o->stop_timeout_ms : STOP_TIMEOUT_MS;
        d->kubelet_dir = strdup(o->kubelet_dir ? o->kubelet_dir : "/var/lib/kubelet/device-plugins");
        if (!d->kubelet_dir)
                return -ENOMEM;
        d->plugins_registry = o->plugins_registry ? strdup(o->plugins_registry) :
                                                    beside_kubelet_dir(d->kubelet_dir, "plugins_registry");
        if (!d->plugins_registry)
                return -ENOMEM;
        d->state_dir = strdup(o->state_dir ? o->state_dir : KDP_NOT_SERVED_DEFAULT_DIR);
        d->config_path = o->config_path ? strdup(o->config_path) : NULL;
        d->overrides = strv_copy(o->overrides);
        if (!d->kubelet_dir || !d->state_dir || (o->config_path && !d->config_path) || !d->overrides)
                return -ENOMEM;
        /* every root is set, so the device tree resolves PCI paths (locality) under the default /sys too */
        for (int k = 0; k < _KDP_PATH_KIND_MAX; k++)
                if (!(d->roots[k] = strdup(o->roots[k] ? o->roots[k] : kdp_backend_default_root(k))))
                        return -ENOMEM;
        return 0;
}

int kdp_daemon_new(const kdp_daemon_options *o, kdp_daemon **ret) {
        static const kdp_kubelet_client_events kubelet_events = {
                .restarted = on_kubelet_restarted,
                .registered = on_registered,
                .failed = on_register_failed,
                .dropped = on_kubelet_dropped,
        };
        _cleanup_(kdp_daemon_freep) kdp_daemon *d = NULL;
        const char *registration_why = NULL;
        int r;

        d = calloc(1, sizeof(*d));
        if (!d)
                return -ENOMEM;
        d->signal_fd = -1;
        raise_fd_limit();
        r = copy_options(d, o);
        if (r < 0)
                return r;
        r = kdp_loop_new(&d->loop);
        if (r < 0)
                return r;
        r = start_metrics(d, o);
        if (r < 0)
                return r;
        r = load_config(d, &d->config);
        if (r < 0)
                return r;
        r = load_backends(d, o);
        if (r < 0)
                return r;
        warn_unknown_sections(d, d->config);
        r = watch_signals(d);
        if (r < 0)
                return kdp_log_error(r, "Failed to watch signals");
        r = kdp_loop_add_timer(d->loop, on_trim_timer, d, &d->trim_timer);
        if (r < 0)
                return r;
        r = kdp_server_runtime_new(on_runtime_busy, d, d->metrics, &d->rt);
        if (r < 0)
                return r;
        kdp_server_runtime_set_socket_group(d->rt, o->socket_group_set ? o->socket_gid : (gid_t) -1);
        r = kdp_loop_add_timer(d->loop, on_cancel_timer, d, &d->cancel_timer);
        if (r < 0)
                return r;
        /* before the kubelet hears of us: a bad address fails the start with nothing registered */
        if (o->metrics_address) {
                r = kdp_metrics_http_new(d->metrics, o->metrics_address,
                                         o->socket_group_set ? o->socket_gid : (gid_t) -1, &d->http);
                if (r < 0)
                        return r;
        }
        r = choose_registration(d, o->registration, &registration_why);
        if (r < 0)
                return r;
        r = kdp_unix_socket_check_dir(d->socket_dir);  /* a missing one may come later */
        if (r == -EPERM)
                return r;
        r = kdp_kubelet_client_new(d->loop, kdp_server_runtime_cq(d->rt), d->kubelet_dir, &kubelet_events, d,
                                   &d->kubelet);
        if (r < 0)
                return r;
        remove_stale_sockets(d, d->kubelet_dir);
        remove_stale_sockets(d, d->plugins_registry);
        r = kdp_debounce_new(o->health_hold_ms, &d->debounce);
        if (r < 0)
                return r;
        /* watch before the first scan, so nothing that happens during it is missed */
        r = watch_devices(d, o->udev_source);
        if (r < 0)
                return kdp_log_error(r, "Failed to watch device events");
        r = start_backends(d);
        if (r < 0)
                return r;
        log_registration(d, registration_why);
        kdp_metrics_started(d->metrics);
        r = follow_pod_resources(d, o);
        if (r < 0)
                return kdp_log_error(r, "Failed to follow pod resources");
        *ret = KDP_TAKE_PTR(d);
        return 0;
}

int kdp_daemon_run(kdp_daemon *d) {
        return kdp_loop_run(d->loop);
}

/* Frees d, naming on `watch` (may be NULL) each step that may wait on something outside kdpd. */
static void daemon_free_watched(kdp_daemon *d, kdp_stop_watch *watch) {
        d->http = kdp_metrics_http_free(d->http);      /* first: a scrape reads what follows */
        while (d->resources) {
                kdp_resource *res = d->resources;

                d->resources = res->next;
                free_resource(res);
        }
        d->kubelet = kdp_kubelet_client_free(d->kubelet);
        d->pod_resources = kdp_pod_resources_free(d->pod_resources);
        kdp_stop_watch_step(watch, "calls in progress", NULL);
        d->rt = kdp_server_runtime_free(d->rt);        /* waits until every server is gone */
        d->udev = kdp_udev_monitor_free(d->udev);
        for (size_t i = 0; i < d->n_slots; i++) {
                kdp_stop_watch_step(watch, "backend stop", d->slots[i].b->name);
                d->slots[i].dirty = false;      /* a scan posted meanwhile runs at kdp_loop_free(): not of it */
                stop_backend(&d->slots[i]);
                if (d->slots[i].listed)
                        (void) kdp_not_served_remove(d->state_dir, d->slots[i].b->name);
                kdp_conditions_done(&d->slots[i].conditions);
                kdp_loop_remove(d->slots[i].timer);
                kdp_loop_remove(d->slots[i].recheck);
                kdp_loop_remove(d->slots[i].expiry);
                kdp_registry_free(d->slots[i].b);
        }
        d->debounce = kdp_debounce_free(d->debounce);
        kdp_loop_remove(d->signal_source);
        kdp_loop_remove(d->cancel_timer);
        kdp_loop_remove(d->trim_timer);
        kdp_loop_remove(d->beat_timer);
        d->loop = kdp_loop_free(d->loop);
        d->metrics = kdp_metrics_free(d->metrics);     /* last: every server that counted in it is gone */
        if (d->signal_fd >= 0)
                (void) close(d->signal_fd);
        free(d->slots);
        kdp_config_free(d->config);
        free(d->config_path);
        strv_free(d->overrides);
        free(d->kubelet_dir);
        free(d->plugins_registry);
        free(d->state_dir);
        for (int k = 0; k < _KDP_PATH_KIND_MAX; k++)
                free(d->roots[k]);
        free(d);
}

kdp_daemon *kdp_daemon_free(kdp_daemon *d) {
        if (d)
                daemon_free_watched(d, NULL);
        return NULL;
}

static void stop_watched(void *userdata, kdp_stop_watch *watch) {
        daemon_free_watched(userdata, watch);
}

int kdp_daemon_stop(kdp_daemon *d) {
        if (!d)
                return 0;
        return kdp_stop_watch_run(d->stop_timeout_ms, stop_watched, d);
}

int kdp_daemon_print_params(const char *const *backends, const char *const *backend_dirs) {
        _cleanup_(strv_freep) char **default_dirs = NULL;
        int r;

        if (!backend_dirs) {
                r = kdp_registry_default_dirs(&default_dirs);
                if (r < 0)
                        return r;
                backend_dirs = (const char *const *) default_dirs;
        }
        for (size_t i = 0; backends && backends[i]; i++) {
                _cleanup_(kdp_registry_freep) kdp_backend *b = NULL;

                r = kdp_registry_load(backends[i], backend_dirs, &b);
                if (r < 0)
                        return r;
                printf("\nBackend %s (%s), set with -o %s.KEY=VALUE or in the config section '%s':\n", b->name,
                       b->path, b->name, b->name);
                for (const kdp_param_spec *p = b->ops->params; p && p->name; p++)
                        printf("  %-20s %s (default: %s)\n", p->name, p->help ? p->help : "",
                               p->default_value ? p->default_value : "unset");
        }
        return 0;
}
