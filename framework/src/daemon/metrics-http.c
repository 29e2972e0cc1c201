/* SPDX-License-Identifier: GPL-2.0-or-later */
/* kdpd's HTTP endpoint on libmicrohttpd (see metrics-http.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include <kdp/log.h>

#include "metrics-http.h"
#include "unix-socket.h"

#define MAX_CONNECTIONS 16
#define MAX_PER_IP 4
#define HEAD_S 5
#define IDLE_S 10
#define CLOSING_SLOTS 16                /* closed by us, not yet cleaned up by MHD (it accepts 10 at a time) */
#define SLOTS (MAX_CONNECTIONS + CLOSING_SLOTS)
#define MEMORY_LIMIT (16 * 1024)
#define BACKLOG 16
#define TEXT "text/plain; charset=utf-8"
#define EXPOSITION "text/plain; version=0.0.4; charset=utf-8"

/* A connection MHD serves, as the guard sees it (under the guard's lock). */
typedef struct guarded {
        bool used;
        bool closing;                   /* shut down by us: MHD closes it at its next turn */
        bool answering;                 /* its request head came whole; until the answer is sent */
        int fd;                         /* our own duplicate: shutdown() never meets a reused number */
        struct sockaddr_storage peer;   /* AF_UNSPEC for a unix peer (no address: the total only) */
        uint64_t since_ms;              /* accepted, or its last answer sent: its head is due HEAD_S after */
        uint64_t order;                 /* of since_ms, ties broken */
} guarded;

/* Which connections to close: past HEAD_S without a whole head, or the oldest when a new one needs room. */
typedef struct guard {
        pthread_mutex_t lock;
        pthread_cond_t wake;
        pthread_t thread;               /* closes heads past HEAD_S */
        bool ready, thread_started, stopping;
        uint64_t order;
        guarded slots[SLOTS];
} guard;

struct kdp_metrics_http {
        kdp_metrics *m;
        struct MHD_Daemon *daemon;
        guard g;
        char *path;                     /* the unix socket, removed at the end if still ours */
        dev_t dev;
        ino_t ino;
        char bound[300];
};

/* ---- the address ---- */

static int parse_port(const char *s, kdp_metrics_http_address *a) {
        char *end;
        unsigned long v;

        errno = 0;
        v = strtoul(s, &end, 10);
        if (*s < '0' || *s > '9' || *end != '\0' || errno || v > 65535)
                return -EINVAL;
        snprintf(a->port, sizeof(a->port), "%lu", v);
        return 0;
}

int kdp_metrics_http_parse_address(const char *text, kdp_metrics_http_address *ret) {
        kdp_metrics_http_address a = { 0 };
        const char *colon, *host = text;
        size_t host_len;

        if (text[0] == '/') {
                if (strlen(text) >= sizeof(a.path))
                        return -EINVAL;
                a.unix_socket = true;
                strcpy(a.path, text);
                *ret = a;
                return 0;
        }
        colon = strrchr(text, ':');
        if (!colon)
                return -EINVAL;
        host_len = (size_t) (colon - text);
        if (text[0] == '[') {           /* [IPv6]:PORT */
                if (host_len < 2 || colon[-1] != ']')
                        return -EINVAL;
                host++;
                host_len -= 2;
        } else if (memchr(text, ':', host_len))
                return -EINVAL;         /* an IPv6 literal without brackets */
        if (host_len >= sizeof(a.host) || memchr(host, ']', host_len) || memchr(host, '[', host_len))
                return -EINVAL;
        memcpy(a.host, host, host_len);
        if (parse_port(colon + 1, &a) < 0)
                return -EINVAL;
        *ret = a;
        return 0;
}

/* "ip:port" or "[ip6]:port" of a bound socket, for the log. */
static void format_bound(int fd, char *buf, size_t size) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof(ss);
        char host[INET6_ADDRSTRLEN] = "?", port[8] = "?";

        if (getsockname(fd, (struct sockaddr *) &ss, &len) == 0)
                (void) getnameinfo((struct sockaddr *) &ss, len, host, sizeof(host), port, sizeof(port),
                                   NI_NUMERICHOST | NI_NUMERICSERV);
        snprintf(buf, size, ss.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, port);
}

/* A socket bound to `ai` and listening, or -errno. */
static int bind_one(const struct addrinfo *ai, bool any) {
        _cleanup_close_ int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        int on = 1, off = 0;

        if (fd < 0)
                return -errno;
        (void) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
        if (any && ai->ai_family == AF_INET6)
                (void) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));   /* IPv4 too */
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, BACKLOG) < 0)
                return -errno;
        return KDP_TAKE_FD(fd);
}

/* The first address of `a` that binds; with no host, IPv6 (with IPv4) before IPv4 alone. */
static int bind_inet(const kdp_metrics_http_address *a, int *ret_fd) {
        struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV | AI_PASSIVE }, *list;
        bool any = a->host[0] == '\0';
        int r = -EADDRNOTAVAIL, e;

        e = getaddrinfo(any ? NULL : a->host, a->port, &hints, &list);
        if (e != 0)
                return kdp_log_error(-EADDRNOTAVAIL, "Failed to resolve the metrics address",
                                     KDP_F_STR("host", a->host), KDP_F_STR("reason", gai_strerror(e)));
        for (int pass = 0; pass < 2 && r < 0; pass++)
                for (const struct addrinfo *ai = list; ai && r < 0; ai = ai->ai_next)
                        if ((ai->ai_family == AF_INET6) == (pass == 0))
                                r = bind_one(ai, any);
        freeaddrinfo(list);
        if (r < 0)
                return r;
        *ret_fd = r;
        return 0;
}

static int bind_unix(kdp_metrics_http *h, const char *path, gid_t gid, int *ret_fd) {
        _cleanup_close_ int fd = -1;
        struct stat st;
        int r;

        r = kdp_unix_socket_listen(path, gid, 0660, &fd);
        if (r < 0)
                return r;
        if (lstat(path, &st) < 0 || !(h->path = strdup(path))) {
                r = -errno;
                (void) unlink(path);
                return r;
        }
        h->dev = st.st_dev;
        h->ino = st.st_ino;
        *ret_fd = KDP_TAKE_FD(fd);
        return 0;
}

/* ---- the guard ---- */

static uint64_t now_ms(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

/* The same IP address (a port apart); unix peers have none. */
static bool same_ip(const struct sockaddr_storage *a, const struct sockaddr_storage *b) {
        if (a->ss_family != b->ss_family)
                return false;
        if (a->ss_family == AF_INET)
                return memcmp(&((const struct sockaddr_in *) a)->sin_addr, &((const struct sockaddr_in *) b)->sin_addr,
                              sizeof(struct in_addr)) == 0;
        if (a->ss_family == AF_INET6)
                return memcmp(&((const struct sockaddr_in6 *) a)->sin6_addr,
                              &((const struct sockaddr_in6 *) b)->sin6_addr, sizeof(struct in6_addr)) == 0;
        return false;
}

/* The address of a peer at `sa` (whose size its family says), AF_UNSPEC for one without. */
static void peer_of(const struct sockaddr *sa, struct sockaddr_storage *ret) {
        memset(ret, 0, sizeof(*ret));
        if (sa && sa->sa_family == AF_INET)
                memcpy(ret, sa, sizeof(struct sockaddr_in));
        else if (sa && sa->sa_family == AF_INET6)
                memcpy(ret, sa, sizeof(struct sockaddr_in6));
        else
                ret->ss_family = AF_UNSPEC;
}

/* Under the lock: shuts `c` down (MHD sees its end and closes it), once. */
static void close_guarded(guarded *c, const char *reason) {
        c->closing = true;
        (void) shutdown(c->fd, SHUT_RDWR);
        kdp_log_v(2, "Closed a metrics connection", KDP_F_STR("reason", reason));
}

/*
 * Under the lock: the open connections (of `peer`'s address if given) and the
 * one to close for room: the one waiting for its head longest, else the one
 * answering longest. A new connection is younger than every other: it is closed
 * only after all of them.
 */
static unsigned count_open(guard *g, const struct sockaddr_storage *peer, guarded **ret_oldest) {
        guarded *oldest = NULL;
        unsigned n = 0;

        for (size_t i = 0; i < SLOTS; i++) {
                guarded *c = &g->slots[i];

                if (!c->used || c->closing || (peer && !same_ip(peer, &c->peer)))
                        continue;
                n++;
                if (!oldest || (oldest->answering && !c->answering) ||
                    (oldest->answering == c->answering && c->order < oldest->order))
                        oldest = c;
        }
        *ret_oldest = oldest;
        return n;
}

/* MHD's thread, before it takes a connection: room is made for it; refused only without a free slot. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *sa, socklen_t len) {
        kdp_metrics_http *h = cls;
        struct sockaddr_storage peer;
        guarded *oldest;
        bool free_slot = false;

        peer_of(len > 0 ? sa : NULL, &peer);
        pthread_mutex_lock(&h->g.lock);
        if (peer.ss_family != AF_UNSPEC && count_open(&h->g, &peer, &oldest) >= MAX_PER_IP)
                close_guarded(oldest, "too many from its address");
        if (count_open(&h->g, NULL, &oldest) >= MAX_CONNECTIONS)
                close_guarded(oldest, "too many");
        for (size_t i = 0; i < SLOTS && !free_slot; i++)
                free_slot = !h->g.slots[i].used;
        pthread_mutex_unlock(&h->g.lock);
        if (!free_slot)
                kdp_log_v(2, "Refused a metrics connection: no free slot");
        return free_slot ? MHD_YES : MHD_NO;
}

/* Under the lock: `c` waits for a request head from now on. */
static void wait_head(guard *g, guarded *c) {
        c->answering = false;
        c->since_ms = now_ms();
        c->order = ++g->order;
        pthread_cond_signal(&g->wake);
}

static guarded *guarded_of(struct MHD_Connection *conn) {
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

        return info ? info->socket_context : NULL;
}

/* MHD's thread: a connection taken or ended. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode what) {
        kdp_metrics_http *h = cls;
        const union MHD_ConnectionInfo *fd_info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD),
                                       *addr_info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        guarded *c = *socket_context;

        pthread_mutex_lock(&h->g.lock);
        if (what == MHD_CONNECTION_NOTIFY_CLOSED && c) {
                (void) close(c->fd);
                *c = (guarded){ .used = false };
        } else if (what == MHD_CONNECTION_NOTIFY_STARTED) {
                for (size_t i = 0; i < SLOTS && !c; i++)
                        if (!h->g.slots[i].used)
                                c = &h->g.slots[i];
                if (c && fd_info && (c->fd = fcntl(fd_info->connect_fd, F_DUPFD_CLOEXEC, 3)) >= 0) {
                        c->used = true;
                        peer_of(addr_info ? addr_info->client_addr : NULL, &c->peer);
                        wait_head(&h->g, c);
                        *socket_context = c;
                } else if (fd_info)
                        (void) shutdown(fd_info->connect_fd, SHUT_RDWR);  /* cannot be guarded: not served */
        }
        pthread_mutex_unlock(&h->g.lock);
}

/* MHD's thread: an answer was sent (or the request ended): the next head is due HEAD_S from now. */
static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls, enum MHD_RequestTerminationCode toe) {
        kdp_metrics_http *h = cls;
        guarded *c = guarded_of(conn);

        if (!c)
                return;
        pthread_mutex_lock(&h->g.lock);
        wait_head(&h->g, c);
        pthread_mutex_unlock(&h->g.lock);
}

/* The guard's thread: closes each connection whose head is not whole HEAD_S after it was due to start. */
static void *guard_run(void *userdata) {
        kdp_metrics_http *h = userdata;
        guard *g = &h->g;

        pthread_mutex_lock(&g->lock);
        while (!g->stopping) {
                uint64_t now = now_ms(), next = UINT64_MAX;
                struct timespec until;

                for (size_t i = 0; i < SLOTS; i++) {
                        guarded *c = &g->slots[i];

                        if (!c->used || c->closing || c->answering)
                                continue;
                        if (now >= c->since_ms + HEAD_S * 1000)
                                close_guarded(c, "request head not whole in time");
                        else if (c->since_ms + HEAD_S * 1000 < next)
                                next = c->since_ms + HEAD_S * 1000;
                }
                if (next == UINT64_MAX) {
                        pthread_cond_wait(&g->wake, &g->lock);
                        continue;
                }
                until = (struct timespec){ .tv_sec = (time_t) (next / 1000), .tv_nsec = (long) (next % 1000) * 1000000 };
                (void) pthread_cond_timedwait(&g->wake, &g->lock, &until);
        }
        pthread_mutex_unlock(&g->lock);
        return NULL;
}

static int guard_start(kdp_metrics_http *h) {
        pthread_condattr_t attr;
        int r;

        (void) pthread_mutex_init(&h->g.lock, NULL);
        (void) pthread_condattr_init(&attr);
        (void) pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        (void) pthread_cond_init(&h->g.wake, &attr);
        (void) pthread_condattr_destroy(&attr);
        h->g.ready = true;
        r = pthread_create(&h->g.thread, NULL, guard_run, h);
        if (r != 0)
                return -r;
        h->g.thread_started = true;
        return 0;
}

/* After MHD stopped: the guard's thread joined, its duplicates closed. */
static void guard_stop(kdp_metrics_http *h) {
        if (!h->g.ready)
                return;
        if (h->g.thread_started) {
                pthread_mutex_lock(&h->g.lock);
                h->g.stopping = true;
                pthread_cond_signal(&h->g.wake);
                pthread_mutex_unlock(&h->g.lock);
                (void) pthread_join(h->g.thread, NULL);
        }
        for (size_t i = 0; i < SLOTS; i++)
                if (h->g.slots[i].used)
                        (void) close(h->g.slots[i].fd);  /* none unless MHD stopped without telling */
        (void) pthread_cond_destroy(&h->g.wake);
        (void) pthread_mutex_destroy(&h->g.lock);
}

/* ---- requests ---- */

/* Queues `status` with `text` (malloc()ed; MHD frees it) as `type`. */
static enum MHD_Result answer(struct MHD_Connection *conn, unsigned status, const char *type, char *text, size_t size) {
        struct MHD_Response *resp = MHD_create_response_from_buffer_with_free_callback(size, text, free);
        enum MHD_Result r;

        if (!resp) {
                free(text);
                return MHD_NO;
        }
        if (MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type) != MHD_YES ||
            (status == MHD_HTTP_METHOD_NOT_ALLOWED &&
             MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD") != MHD_YES)) {
                MHD_destroy_response(resp);
                return MHD_NO;
        }
        r = MHD_queue_response(conn, status, resp);
        MHD_destroy_response(resp);
        return r;
}

/* The answer to a GET or HEAD of `url`, written to `f`: its status and content type. */
static unsigned route(kdp_metrics *m, const char *url, FILE *f, const char **ret_type) {
        *ret_type = TEXT;
        if (strcmp(url, "/metrics") == 0) {
                *ret_type = EXPOSITION;
                return kdp_metrics_write(m, f) < 0 ? MHD_HTTP_INTERNAL_SERVER_ERROR : MHD_HTTP_OK;
        }
        if (strcmp(url, "/healthz") == 0)
                return kdp_metrics_healthy(m, f) ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE;
        if (strcmp(url, "/readyz") == 0)
                return kdp_metrics_ready(m, f) ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE;
        fputs("not found: /metrics, /healthz and /readyz are served\n", f);
        return MHD_HTTP_NOT_FOUND;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **req_cls) {
        kdp_metrics_http *h = cls;
        const char *type = TEXT;
        char *text = NULL;
        size_t size = 0;
        unsigned status;
        guarded *c = guarded_of(conn);
        FILE *f;

        if (c) {
                pthread_mutex_lock(&h->g.lock);
                c->answering = true;    /* its head came whole: out of the guard's bound */
                pthread_mutex_unlock(&h->g.lock);
        }
        f = open_memstream(&text, &size);
        if (!f)
                return MHD_NO;
        if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
                fputs("method not allowed: GET and HEAD are\n", f);
                status = MHD_HTTP_METHOD_NOT_ALLOWED;
        } else
                status = route(h->m, url, f, &type);
        if (fclose(f) != 0) {
                free(text);
                return MHD_NO;
        }
        return answer(conn, status, type, text, size);
}

/* What libmicrohttpd reports (a client's broken request, mostly), at --v 2. */
__attribute__((format(printf, 2, 0))) static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
        char line[256];
        size_t n;

        vsnprintf(line, sizeof(line), fmt, ap);
        n = strlen(line);
        while (n > 0 && line[n - 1] == '\n')
                line[--n] = '\0';
        kdp_log_v(2, "Metrics endpoint reported", KDP_F_STR("message", line));
}

/* ---- the endpoint ---- */

static int start_daemon(kdp_metrics_http *h, int fd) {
        int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);    /* MHD's own: it closes it, whatever happens */

        int r;

        if (dup_fd < 0)
                return -errno;
        r = guard_start(h);
        if (r < 0) {
                (void) close(dup_fd);
                return r;
        }
        /* the limits are the guard's (on_accept); MHD's own only bounds what is left closing */
        h->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0,
                                     on_accept, h, on_request, h,
                                     MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, h,
                                     MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
                                     MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                                     MHD_OPTION_LISTEN_SOCKET, (MHD_socket) dup_fd,
                                     MHD_OPTION_CONNECTION_LIMIT, (unsigned) SLOTS,
                                     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned) IDLE_S,
                                     MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t) MEMORY_LIMIT,
                                     MHD_OPTION_END);
        return h->daemon ? 0 : -EIO;
}

int kdp_metrics_http_new(kdp_metrics *m, const char *address, gid_t socket_gid, kdp_metrics_http **ret) {
        _cleanup_(kdp_metrics_http_freep) kdp_metrics_http *h = NULL;
        _cleanup_close_ int fd = -1;
        kdp_metrics_http_address a;
        int r;

        if (kdp_metrics_http_parse_address(address, &a) < 0)
                return kdp_log_error(-EINVAL, "Refused metrics address: not HOST:PORT, [IPV6]:PORT or /PATH",
                                     KDP_F_STR("address", address));
        h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        h->m = m;
        r = a.unix_socket ? bind_unix(h, a.path, socket_gid, &fd) : bind_inet(&a, &fd);
        if (r < 0)
                return kdp_log_error(r, "Failed to listen on the metrics address", KDP_F_STR("address", address));
        if (a.unix_socket)
                snprintf(h->bound, sizeof(h->bound), "%s", a.path);
        else
                format_bound(fd, h->bound, sizeof(h->bound));
        r = start_daemon(h, fd);
        if (r < 0)
                return kdp_log_error(r, "Failed to start the metrics endpoint", KDP_F_STR("address", h->bound));
        kdp_log_info("Serving metrics", KDP_F_STR("address", h->bound));
        *ret = KDP_TAKE_PTR(h);
        return 0;
}

const char *kdp_metrics_http_bound(const kdp_metrics_http *h) {
        return h->bound;
}

kdp_metrics_http *kdp_metrics_http_free(kdp_metrics_http *h) {
        struct stat st;

        if (!h)
                return NULL;
        if (h->daemon)
                MHD_stop_daemon(h->daemon);
        guard_stop(h);
        if (h->path && lstat(h->path, &st) == 0 && st.st_dev == h->dev && st.st_ino == h->ino)
                (void) unlink(h->path);
        free(h->path);
        free(h);
        return NULL;
}
