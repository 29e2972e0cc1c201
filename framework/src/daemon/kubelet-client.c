/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Registration with the kubelet (see kubelet-client.h).
 *
 * A kdp_registration lives on the loop thread, except that the completion of
 * its call arrives on the CQ thread. Its lock guards `cancelled` and `state`:
 * the CQ thread frees a cancelled registration itself; otherwise it posts the
 * result to the loop, which frees it if it was cancelled meanwhile.
 * `kubelet_fd`, `lost_in_flight`, `probe_*` and `endpoint_*` belong to the
 * loop thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <kdp/log.h>

#include "deviceplugin/v1beta1/api.pb-c.h"
#include "kubelet-client.h"
#include "proto-conv.h"
#include "tag.h"
#include "unary.h"
#include "unix-socket.h"

#define REGISTER_METHOD "/v1beta1.Registration/Register"
#define REGISTER_DEADLINE_MS 15000
#define BACKOFF_FIRST_MS 5
#define BACKOFF_MAX_MS 5000
/*
 * The retry budget: attempts that fail inside a kubelet restart (refused
 * before it listens, cut when it is killed, deleted endpoints) are ordinary
 * and logged at --v 2; a registration still failing at this attempt (about
 * 30 s of back-off) warns, then every 60th attempt (5 minutes).
 */
#define REGISTER_WARN_AFTER 16
#define REGISTER_WARN_EVERY 60

struct kdp_kubelet_client {
        kdp_loop *loop;
        grpc_completion_queue *cq;
        char *dir;
        char *socket_path;
        bool dial_pinned;               /* /proc/self/fd works: dial the file an attempt opened */
        int inotify_fd;
        int dir_wd;                     /* the watch on dir, -1 while dir is gone */
        dev_t dir_dev;                  /* the directory watched */
        ino_t dir_ino;
        int ancestor_wd;                /* the watch on dir's parent, or while dir is gone on its nearest existing ancestor */
        int upper_wd;                   /* the watch on that one's parent */
        char *ancestor;                 /* ... and that ancestor's path */
        kdp_loop_source *inotify_source;
        kdp_kubelet_client_events ev;
        void *userdata;
        kdp_registration *regs;         /* every live registration */
};

typedef enum reg_state { REG_IDLE, REG_IN_FLIGHT, REG_POSTED } reg_state;

struct kdp_registration {
        kdp_tag tag;
        kdp_kubelet_client *k;
        pthread_mutex_t lock;
        bool cancelled;
        reg_state state;
        char *resource;
        char *endpoint;                 /* as registered: a name in dir, or a plugin watcher's socket path */
        char *endpoint_path;
        bool pre_start_required;
        unsigned attempts;
        bool registered;
        int kubelet_fd;                 /* O_PATH: the kubelet.sock of the attempt in flight or of the success */
        bool lost_in_flight;            /* the endpoint's stream was lost while the attempt was in flight */
        int probe_fd;                   /* a connection asking the kubelet registered with if it is alive */
        kdp_loop_source *probe_source;
        dev_t endpoint_dev;             /* the endpoint's socket file when the registration began */
        ino_t endpoint_ino;
        kdp_loop_source *retry;
        kdp_unary rpc;          /* the call in flight */
        kdp_registration *prev, *next;
};

/* An O_PATH fd on the socket file kubelet.sock names now: -ENOENT before a kubelet ever started. */
static int kubelet_open(const kdp_kubelet_client *k, int *ret_fd) {
        _cleanup_close_ int fd = open(k->socket_path, O_PATH | O_CLOEXEC);
        struct stat st;

        if (fd < 0 || fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISSOCK(st.st_mode))
                return -ENOTSOCK;
        *ret_fd = KDP_TAKE_FD(fd);
        return 0;
}

/* True if kubelet.sock still names the file `fd` holds (held open, its inode number is not reused). */
static bool kubelet_is_current(const kdp_kubelet_client *k, int fd) {
        struct stat held, now;

        if (fd < 0 || fstat(fd, &held) < 0 || held.st_nlink == 0)
                return false;
        return stat(k->socket_path, &now) == 0 && now.st_dev == held.st_dev && now.st_ino == held.st_ino;
}

/* Where to dial the kubelet.sock file `fd` holds: that very file, or by name without /proc. */
static void kubelet_address(const kdp_kubelet_client *k, int fd, char *buf, size_t size, const char *scheme) {
        if (k->dial_pinned)
                (void) snprintf(buf, size, "%s/proc/self/fd/%d", scheme, fd);
        else
                (void) snprintf(buf, size, "%s%s", scheme, k->socket_path);
}

static void kubelet_release(kdp_registration *reg) {
        if (reg->kubelet_fd >= 0)
                (void) close(reg->kubelet_fd);
        reg->kubelet_fd = -1;
}

/* True if the endpoint is still the socket file it was when the registration began. */
static bool endpoint_intact(const kdp_registration *reg) {
        struct stat st;

        if (reg->endpoint_ino == 0)
                return false;
        return lstat(reg->endpoint_path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == reg->endpoint_dev &&
               st.st_ino == reg->endpoint_ino;
}

static void endpoint_note(kdp_registration *reg) {
        struct stat st;

        if (lstat(reg->endpoint_path, &st) < 0 || !S_ISSOCK(st.st_mode))
                return;
        reg->endpoint_dev = st.st_dev;
        reg->endpoint_ino = st.st_ino;
}

static void probe_stop(kdp_registration *reg) {
        kdp_loop_remove(reg->probe_source);
        reg->probe_source = NULL;
        if (reg->probe_fd >= 0)
                (void) close(reg->probe_fd);
        reg->probe_fd = -1;
}

static void reg_free(kdp_registration *reg) {
        kdp_unary_done(&reg->rpc);
        kubelet_release(reg);
        probe_stop(reg);
        kdp_loop_remove(reg->retry);
        pthread_mutex_destroy(&reg->lock);
        free(reg->resource);
        free(reg->endpoint);
        free(reg->endpoint_path);
        free(reg);
}

static void reg_unlink(kdp_registration *reg) {
        kdp_kubelet_client *k = reg->k;

        if (!k)
                return;
        if (reg->prev)
                reg->prev->next = reg->next;
        else
                k->regs = reg->next;
        if (reg->next)
                reg->next->prev = reg->prev;
        reg->k = NULL;
}

static void on_register_posted(kdp_loop *loop, void *userdata);

/* CQ thread. */
static void on_register_done(kdp_tag *tag, bool ok) {
        kdp_registration *reg = KDP_CONTAINER_OF(tag, kdp_registration, tag);
        kdp_loop *loop = NULL;
        bool cancelled;

        pthread_mutex_lock(&reg->lock);
        cancelled = reg->cancelled;
        reg->state = REG_POSTED;
        if (!cancelled)
                loop = reg->k->loop;
        pthread_mutex_unlock(&reg->lock);
        if (cancelled)
                reg_free(reg);          /* nobody else holds it once cancelled */
        else if (kdp_loop_post(loop, on_register_posted, reg) < 0)
                kdp_log_error(-ENOMEM, "Lost a registration result", KDP_F_STR("resource", reg->resource));
}

static int start_attempt(kdp_registration *reg) {
        kdp_kubelet_client *k = reg->k;
        char target[PATH_MAX + 8];

        /*
         * The kubelet creates kubelet.sock a moment before it accepts on it
         * (docs/kubelet.md §3.2): a connect refused then must be retried within
         * milliseconds, not after grpc's default 1 s reconnect back-off. And
         * every attempt gets its own subchannel, so it never reuses connection
         * state of an earlier attempt that may belong to a kubelet now gone.
         */
        grpc_arg args[] = {
                { .type = GRPC_ARG_INTEGER, .key = (char *) GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, .value.integer = 1 },
                { .type = GRPC_ARG_INTEGER, .key = (char *) GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, .value.integer = 10 },
                { .type = GRPC_ARG_INTEGER, .key = (char *) GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, .value.integer = 10 },
                { .type = GRPC_ARG_INTEGER, .key = (char *) GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, .value.integer = 200 },
        };
        grpc_channel_args cargs = { .num_args = KDP_ELEMENTSOF(args), .args = args };
        int r;

        /* a doomed Register only makes the kubelet log a failed dial: the next kubelet.sock re-serves */
        if (!endpoint_intact(reg))
                return -ESTALE;
        r = kubelet_open(k, &reg->kubelet_fd);
        if (r < 0)
                return r;
        reg->lost_in_flight = false;
        kubelet_address(k, reg->kubelet_fd, target, sizeof(target), "unix:");
        r = kdp_proto_conv_pack_register(reg->resource, reg->endpoint, reg->pre_start_required, true,
                                         &reg->rpc.request);
        if (r < 0)
                return r;
        reg->tag.on_done = on_register_done;
        /* before the batch starts: its completion may come at once, on the CQ thread */
        pthread_mutex_lock(&reg->lock);
        reg->state = REG_IN_FLIGHT;
        pthread_mutex_unlock(&reg->lock);
        r = kdp_unary_start(&reg->rpc, target, &cargs, k->cq, REGISTER_METHOD, REGISTER_DEADLINE_MS, &reg->tag);
        if (r < 0) {
                pthread_mutex_lock(&reg->lock);
                reg->state = REG_IDLE;
                pthread_mutex_unlock(&reg->lock);
                return r;
        }
        reg->attempts++;
        return 0;
}

static uint64_t backoff_ms(unsigned attempts) {
        uint64_t ms = BACKOFF_FIRST_MS;

        for (unsigned i = 1; i < attempts && ms < BACKOFF_MAX_MS; i++)
                ms *= 2;
        return ms < BACKOFF_MAX_MS ? ms : BACKOFF_MAX_MS;
}

/* A failure at this attempt warns: past the retry budget (and then now and then). */
static bool over_budget(unsigned attempts) {
        return attempts == REGISTER_WARN_AFTER ||
               (attempts > REGISTER_WARN_AFTER && (attempts - REGISTER_WARN_AFTER) % REGISTER_WARN_EVERY == 0);
}

/* Why an attempt that could not start failed (start_attempt()'s error), for metrics. */
static kdp_metrics_registration start_failure(int r) {
        return r == -ENOENT || r == -ENOTSOCK ? KDP_METRICS_REGISTER_NO_KUBELET
               : r == -ESTALE                ? KDP_METRICS_REGISTER_ENDPOINT_GONE
                                             : KDP_METRICS_REGISTER_NOT_STARTED;
}

/* Why an attempt the kubelet did not accept failed, from its status, for metrics. */
static kdp_metrics_registration call_failure(grpc_status_code status) {
        switch (status) {
        case GRPC_STATUS_UNAVAILABLE:
        case GRPC_STATUS_CANCELLED:
                return KDP_METRICS_REGISTER_UNAVAILABLE;
        case GRPC_STATUS_DEADLINE_EXCEEDED:
                return KDP_METRICS_REGISTER_DEADLINE;
        default:
                return KDP_METRICS_REGISTER_REJECTED;
        }
}

static void attempt_or_retry(kdp_registration *reg) {
        int r = start_attempt(reg);

        if (r >= 0)
                return;
        if (reg->k->ev.failed)
                reg->k->ev.failed(reg->resource, start_failure(r), reg->k->userdata);
        kdp_unary_done(&reg->rpc);
        kubelet_release(reg);
        if (r == -ENOENT || r == -ENOTSOCK)
                kdp_log_v(2, "Waiting for kubelet.sock", KDP_F_STR("resource", reg->resource),
                          KDP_F_INT("attempts", reg->attempts + 1));
        else if (r == -ESTALE)
                kdp_log_v(2, "Skipped registering a deleted socket", KDP_F_STR("resource", reg->resource),
                          KDP_F_STR("socket", reg->endpoint));
        else if (over_budget(reg->attempts + 1))
                kdp_log_warning_errno(r, "Failed to start registration", KDP_F_STR("resource", reg->resource),
                                      KDP_F_INT("attempts", reg->attempts + 1));
        else
                kdp_log_v(1, "Failed to start registration", KDP_F_STR("resource", reg->resource),
                          KDP_F_STR("err", strerror(-r)), KDP_F_INT("attempts", reg->attempts + 1));
        (void) kdp_loop_timer_arm(reg->retry, backoff_ms(++reg->attempts), 0);
}

static void on_retry(kdp_loop *loop, void *userdata) {
        attempt_or_retry(userdata);
}

static void register_finished(kdp_registration *reg) {
        _cleanup_free_ char *details = grpc_slice_to_c_string(reg->rpc.details);
        grpc_status_code status = reg->rpc.status;
        kdp_kubelet_client *k = reg->k;

        kdp_unary_done(&reg->rpc);
        if (status == GRPC_STATUS_OK) {
                reg->registered = true;        /* kubelet_fd keeps that kubelet's file */
                kdp_log_info("Registered with kubelet", KDP_F_STR("resource", reg->resource),
                             KDP_F_STR("socket", reg->endpoint), KDP_F_INT("attempts", reg->attempts));
                if (k->ev.registered)
                        k->ev.registered(reg->resource, k->userdata);
                /* last: the callee may cancel reg */
                if (reg->lost_in_flight && kdp_kubelet_client_stream_lost(reg) && k->ev.dropped)
                        k->ev.dropped(reg, reg->resource, k->userdata);
                return;
        }
        kubelet_release(reg);
        if (k->ev.failed)
                k->ev.failed(reg->resource, call_failure(status), k->userdata);
        /* within the retry budget a failure is part of a kubelet restart; past it, a warning now and then */
        if (over_budget(reg->attempts))
                kdp_log_warning("Failed to register with kubelet", KDP_F_STR("resource", reg->resource),
                                KDP_F_INT("code", status), KDP_F_STR("message", details),
                                KDP_F_INT("attempts", reg->attempts));
        else
                kdp_log_v(1, "Failed to register with kubelet", KDP_F_STR("resource", reg->resource),
                          KDP_F_INT("code", status), KDP_F_STR("message", details),
                          KDP_F_INT("attempts", reg->attempts));
        (void) kdp_loop_timer_arm(reg->retry, backoff_ms(reg->attempts), 0);
}

static void on_register_posted(kdp_loop *loop, void *userdata) {
        kdp_registration *reg = userdata;
        bool cancelled;

        pthread_mutex_lock(&reg->lock);
        cancelled = reg->cancelled;
        reg->state = REG_IDLE;
        pthread_mutex_unlock(&reg->lock);
        if (cancelled)
                reg_free(reg);
        else
                register_finished(reg);
}

/* A registration of `resource` on `endpoint`, linked into k's list; the endpoint's file noted. */
static int reg_new(kdp_kubelet_client *k, const char *resource, const char *endpoint, const char *endpoint_path,
                   kdp_registration **ret) {
        kdp_registration *reg;
        int r;

        reg = calloc(1, sizeof(*reg));
        if (!reg)
                return -ENOMEM;
        pthread_mutex_init(&reg->lock, NULL);
        reg->k = k;
        kdp_unary_init(&reg->rpc);
        reg->resource = strdup(resource);
        reg->endpoint = strdup(endpoint);
        reg->endpoint_path = strdup(endpoint_path);
        reg->kubelet_fd = -1;
        reg->probe_fd = -1;
        r = reg->resource && reg->endpoint && reg->endpoint_path ?
                    kdp_loop_add_timer(k->loop, on_retry, reg, &reg->retry) : -ENOMEM;
        if (r < 0) {
                reg_free(reg);
                return r;
        }
        reg->next = k->regs;
        if (k->regs)
                k->regs->prev = reg;
        k->regs = reg;
        endpoint_note(reg);
        *ret = reg;
        return 0;
}

int kdp_kubelet_client_register(kdp_kubelet_client *k, const char *resource, const char *endpoint,
                                bool pre_start_required, kdp_registration **ret) {
        _cleanup_free_ char *path = NULL;
        kdp_registration *reg;
        int r;

        if (asprintf(&path, "%s/%s", k->dir, endpoint) < 0)
                return -ENOMEM;
        r = reg_new(k, resource, endpoint, path, &reg);
        if (r < 0)
                return r;
        reg->pre_start_required = pre_start_required;
        attempt_or_retry(reg);
        *ret = reg;
        return 0;
}

int kdp_kubelet_client_adopt(kdp_kubelet_client *k, const char *resource, const char *socket_path,
                             kdp_registration **ret) {
        kdp_registration *reg;
        int r;

        r = reg_new(k, resource, socket_path, socket_path, &reg);
        if (r < 0)
                return r;
        /* the kubelet that just called: kubelet.sock now (none: no kubelet to ask about a lost stream) */
        (void) kubelet_open(k, &reg->kubelet_fd);
        reg->registered = true;
        *ret = reg;
        return 0;
}

void kdp_kubelet_client_cancel(kdp_registration *reg) {
        reg_state state;

        if (!reg)
                return;
        /*
         * All under the lock: the CQ thread reads reg->k only while it sees
         * the registration not cancelled, and once it sees it cancelled it
         * frees it, so nothing here may touch reg after the unlock but an
         * IDLE registration, which no completion can reach.
         */
        pthread_mutex_lock(&reg->lock);
        reg->cancelled = true;
        reg_unlink(reg);
        kdp_loop_remove(reg->retry);
        reg->retry = NULL;
        probe_stop(reg);
        state = reg->state;
        if (state == REG_IN_FLIGHT)
                grpc_call_cancel(reg->rpc.call, NULL);
        pthread_mutex_unlock(&reg->lock);
        if (state == REG_IDLE)
                reg_free(reg);
        /* IN_FLIGHT: the CQ thread frees it; POSTED: the posted function does */
}

bool kdp_kubelet_client_is_current(const kdp_registration *reg) {
        return reg && reg->k && kubelet_is_current(reg->k, reg->kubelet_fd);
}

bool kdp_kubelet_client_endpoint_intact(const kdp_registration *reg) {
        return reg && reg->k && endpoint_intact(reg);
}

/*
 * Loop thread: the kubelet answered the probe. A live one (grpc-go as much as
 * grpc core) sends its HTTP/2 settings as soon as it accepts; one that is
 * exiting closes its listener with our connection unaccepted: end of file.
 */
static void on_probe(kdp_loop *loop, int fd, uint32_t events, void *userdata) {
        kdp_registration *reg = userdata;
        kdp_kubelet_client *k = reg->k;
        char byte;
        ssize_t n = recv(fd, &byte, sizeof(byte), MSG_DONTWAIT);

        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        probe_stop(reg);
        if (n <= 0 || !kubelet_is_current(k, reg->kubelet_fd)) {
                kdp_log_v(2, "Kubelet that ended the stream is gone", KDP_F_STR("resource", reg->resource),
                          KDP_F_STR("reason", n <= 0 ? "closed unanswered" : "kubelet.sock replaced"));
                return;
        }
        if (k->ev.dropped)
                k->ev.dropped(reg, reg->resource, k->userdata);        /* last: the callee may cancel reg */
}

/* Asks the kubelet reg registered with if it is alive; true if it must be taken for live now. */
static bool probe_start(kdp_registration *reg) {
        kdp_kubelet_client *k = reg->k;
        char path[sizeof(((struct sockaddr_un *) NULL)->sun_path)];
        _cleanup_close_ int fd = -1;
        int r;

        if (reg->probe_fd >= 0)
                return false;           /* asked already */
        kubelet_address(k, reg->kubelet_fd, path, sizeof(path), "");
        r = kdp_unix_socket_connect(path, &fd);
        /* a killed kubelet leaves kubelet.sock behind, refusing; a full backlog is a busy one */
        if (r == -EAGAIN)
                return true;
        if (kdp_unix_socket_untold(r)) {
                kdp_log_warning_errno(r, "Failed to ask the kubelet if it is alive; taken for alive",
                                      KDP_F_STR("resource", reg->resource));
                return true;            /* a needless registration costs less than a lost one */
        }
        if (r < 0) {
                kdp_log_v(2, "Kubelet that ended the stream is gone", KDP_F_STR("resource", reg->resource),
                          KDP_F_STR("reason", strerror(-r)));
                return false;
        }
        r = kdp_loop_add_fd(k->loop, fd, EPOLLIN | EPOLLRDHUP, on_probe, reg, &reg->probe_source);
        if (r < 0) {
                kdp_log_warning_errno(r, "Failed to ask the kubelet if it is alive; taken for alive",
                                      KDP_F_STR("resource", reg->resource));
                return true;
        }
        reg->probe_fd = KDP_TAKE_FD(fd);
        return false;
}

bool kdp_kubelet_client_listening(const kdp_kubelet_client *k) {
        /* a killed kubelet leaves kubelet.sock behind, refusing; a full backlog is a busy one, alive */
        return kdp_unix_socket_served(k->socket_path) != 0;
}

bool kdp_kubelet_client_stream_lost(kdp_registration *reg) {
        if (!reg || !reg->k || reg->kubelet_fd < 0)
                return false;           /* between attempts: no kubelet has us */
        if (!reg->registered) {
                reg->lost_in_flight = true;
                return false;
        }
        if (!kubelet_is_current(reg->k, reg->kubelet_fd)) {
                kdp_log_v(2, "Kubelet that ended the stream is gone", KDP_F_STR("resource", reg->resource),
                          KDP_F_STR("reason", "kubelet.sock replaced"));
                return false;
        }
        return probe_start(reg);
}

const char *kdp_kubelet_client_dir(const kdp_kubelet_client *k) {
        return k->dir;
}

/*
 * The directory's own events come late when it is removed: kdpd's and the
 * kubelet's bound sockets pin it until they close, so IN_DELETE_SELF waits
 * for them. Its parent reports the removal (or the move) of its entry at once:
 * the parent is watched too, and any news of the entry is checked against the
 * inode watched. While the directory is gone, its nearest existing ancestor is
 * watched for whatever leads back to it.
 */
#define DIR_WATCH (IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
#define ANCESTOR_WATCH (IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

/* The parent of `path` ("." for a bare name, "/" for "/x"), newly allocated. */
static char *parent_of(const char *path) {
        size_t n = strlen(path);

        while (n > 1 && path[n - 1] == '/')
                n--;
        while (n > 0 && path[n - 1] != '/')
                n--;
        if (n == 0)
                return strdup(".");
        while (n > 1 && path[n - 1] == '/')
                n--;
        return strndup(path, n);
}

static void ancestor_unwatch(kdp_kubelet_client *k) {
        if (k->ancestor_wd >= 0)
                (void) inotify_rm_watch(k->inotify_fd, k->ancestor_wd);
        if (k->upper_wd >= 0)
                (void) inotify_rm_watch(k->inotify_fd, k->upper_wd);
        k->ancestor_wd = k->upper_wd = -1;
        free(k->ancestor);
        k->ancestor = NULL;
}

/*
 * Watches the nearest existing ancestor of `path`, and its parent, which sees
 * the ancestor go at once; sets *ret_child to the path below the ancestor.
 */
static int ancestor_watch(kdp_kubelet_client *k, const char *path, char **ret_child) {
        _cleanup_free_ char *child = strdup(path), *up = parent_of(path);
        int wd = -1;

        ancestor_unwatch(k);
        while (child && up) {
                wd = inotify_add_watch(k->inotify_fd, up, ANCESTOR_WATCH);
                if (wd >= 0 || strcmp(up, "/") == 0 || strcmp(up, ".") == 0)
                        break;
                free(child);
                child = KDP_TAKE_PTR(up);
                up = parent_of(child);
        }
        if (!child || !up)
                return -ENOMEM;
        if (wd < 0)
                return -errno;
        k->ancestor_wd = wd;
        if (strcmp(up, "/") != 0 && strcmp(up, ".") != 0) {
                _cleanup_free_ char *upper = parent_of(up);

                if (upper)
                        k->upper_wd = inotify_add_watch(k->inotify_fd, upper, ANCESTOR_WATCH);
        }
        k->ancestor = KDP_TAKE_PTR(up);
        if (ret_child)
                *ret_child = KDP_TAKE_PTR(child);
        return 0;
}

/*
 * Watches dir and its parent if dir exists (true), else its nearest existing
 * ancestor, for the creation (or arrival) of whatever leads back to dir
 * (false). Each ancestor is watched before dir is looked for again, so a dir
 * (or a parent of it) made meanwhile is never missed.
 */
static bool dir_rewatch(kdp_kubelet_client *k) {
        struct stat st;

        ancestor_unwatch(k);
        for (unsigned tries = 0;; tries++) {
                _cleanup_free_ char *child = NULL;
                int error, r;

                k->dir_wd = inotify_add_watch(k->inotify_fd, k->dir, DIR_WATCH);
                if (k->dir_wd >= 0) {
                        if (stat(k->dir, &st) == 0) {
                                k->dir_dev = st.st_dev;
                                k->dir_ino = st.st_ino;
                        }
                        r = ancestor_watch(k, k->dir, NULL);
                        if (r < 0)
                                kdp_log_warning_errno(r, "Failed to watch the parent of the kubelet directory",
                                                      KDP_F_STR("path", k->dir));
                        return true;
                }
                error = -errno;
                r = ancestor_watch(k, k->dir, &child);
                if (r < 0) {
                        kdp_log_error(r, "Failed to watch for the kubelet directory", KDP_F_STR("path", k->dir));
                        return false;
                }
                /*
                 * dir (or a parent of it) made, or the ancestor removed, before
                 * the watches were in place: look again (a while; then the next event)
                 */
                if (tries >= 8 || ((error != -ENOENT || access(child, F_OK) < 0) && access(k->ancestor, F_OK) == 0))
                        return false;
        }
}

/* True if dir is still the directory watched. */
static bool dir_present(const kdp_kubelet_client *k) {
        struct stat st;

        return stat(k->dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_dev == k->dir_dev && st.st_ino == k->dir_ino;
}

/* dir was removed or moved away: its watch ends, its ancestor is watched for its return. True: back already. */
static bool dir_lost(kdp_kubelet_client *k) {
        (void) inotify_rm_watch(k->inotify_fd, k->dir_wd);     /* it would follow a moved dir */
        k->dir_wd = -1;
        kdp_log_warning("Kubelet directory is gone; waiting for it to return", KDP_F_STR("path", k->dir));
        if (dir_rewatch(k)) {
                kdp_log_info("Kubelet directory is back", KDP_F_STR("path", k->dir));
                return true;
        }
        kdp_log_v(2, "Watching for the kubelet directory", KDP_F_STR("path", k->dir),
                  KDP_F_STR("watched", k->ancestor));
        return false;
}

static void on_inotify(kdp_loop *loop, int fd, uint32_t events, void *userdata) {
        kdp_kubelet_client *k = userdata;
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        bool restarted = false, returned = false, check = false;
        ssize_t n;

        while ((n = read(fd, buf, sizeof(buf))) > 0)
                for (char *p = buf; p < buf + n;) {
                        const struct inotify_event *e = (const struct inotify_event *) p;

                        p += sizeof(*e) + e->len;
                        if (k->dir_wd >= 0 && e->wd == k->dir_wd) {
                                if (e->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED))
                                        check = true;
                                else if (e->len > 0 && strcmp(e->name, KDP_KUBELET_SOCKET) == 0 &&
                                         (e->mask & (IN_CREATE | IN_MOVED_TO)))
                                        restarted = true;
                        } else if (e->wd >= 0 && (e->wd == k->ancestor_wd || e->wd == k->upper_wd)) {
                                if (k->dir_wd >= 0) {
                                        /* the parents: any news of their entries, or of themselves */
                                        check = check || (e->mask & (IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF |
                                                                     IN_MOVE_SELF | IN_IGNORED));
                                        continue;
                                }
                                /* any change there may lead back to dir, or take the ancestor away */
                                if (!dir_rewatch(k))
                                        continue;
                                kdp_log_info("Kubelet directory is back", KDP_F_STR("path", k->dir));
                                returned = true;
                        }
                }
        if (check && k->dir_wd >= 0 && !dir_present(k))
                returned = dir_lost(k) || returned;
        /* the endpoints of every registration went with the old dir: re-served as for a new kubelet */
        if (returned)
                restarted = true;
        if (!restarted)
                return;
        if (!returned)
                kdp_log_info("Noticed kubelet restart", KDP_F_STR("socket", k->socket_path));
        if (k->ev.restarted)
                k->ev.restarted(k->userdata);
}

static int make_dir(const char *dir) {
        if (mkdir(dir, 0750) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

int kdp_kubelet_client_new(kdp_loop *loop, grpc_completion_queue *cq, const char *dir,
                           const kdp_kubelet_client_events *ev, void *userdata, kdp_kubelet_client **ret) {
        kdp_kubelet_client *k;
        int r;

        k = calloc(1, sizeof(*k));
        if (!k)
                return -ENOMEM;
        k->loop = loop;
        k->cq = cq;
        k->inotify_fd = -1;
        k->dir_wd = k->ancestor_wd = k->upper_wd = -1;
        if (ev)
                k->ev = *ev;
        k->userdata = userdata;
        if (!(k->dir = strdup(dir)) || asprintf(&k->socket_path, "%s/" KDP_KUBELET_SOCKET, dir) < 0) {
                kdp_kubelet_client_free(k);
                return -ENOMEM;
        }
        k->dial_pinned = access("/proc/self/fd", X_OK) == 0;
        if (!k->dial_pinned)
                kdp_log_warning("Dialing kubelet.sock by name: /proc is not mounted",
                                KDP_F_STR("socket", k->socket_path));
        r = make_dir(dir);
        if (r < 0) {
                kdp_kubelet_client_free(k);
                return kdp_log_error(r, "Failed to create kubelet directory", KDP_F_STR("path", dir));
        }
        k->inotify_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        if (k->inotify_fd < 0 || !dir_rewatch(k) ||
            kdp_loop_add_fd(loop, k->inotify_fd, EPOLLIN, on_inotify, k, &k->inotify_source) < 0) {
                r = -errno;
                kdp_kubelet_client_free(k);
                return kdp_log_error(r, "Failed to watch kubelet directory", KDP_F_STR("path", dir));
        }
        *ret = k;
        return 0;
}

kdp_kubelet_client *kdp_kubelet_client_free(kdp_kubelet_client *k) {
        if (!k)
                return NULL;
        while (k->regs)
                kdp_kubelet_client_cancel(k->regs);
        kdp_loop_remove(k->inotify_source);
        if (k->inotify_fd >= 0)
                (void) close(k->inotify_fd);
        free(k->ancestor);
        free(k->dir);
        free(k->socket_path);
        free(k);
        return NULL;
}
