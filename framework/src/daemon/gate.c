/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The gate in front of the plugin sockets (see gate.h for what it bounds and
 * who calls what).
 *
 *   peer ──► peer_fd ─[in: scan, pass]─► core_fd ═ socketpair ═ gRPC's fd
 *   peer ◄── peer_fd ◄────[out]───────── core_fd
 *
 * One gate thread, level-triggered epoll over the listeners, both ends of
 * every connection and an eventfd. After each wake-up every connection
 * changed is pumped (read what may be read, pass what may pass, write what
 * waits) and its epoll interest set again from its buffers:
 *   peer_fd   IN while `in` has room and `out` is empty enough; OUT while
 *             `out` has bytes
 *   core_fd   IN while `out` has room; OUT while `in` has bytes that may pass
 * The peer's end of file, error or hang-up ends the connection: both fds
 * are closed (gRPC sees its end close and drops the transport and its
 * calls). gRPC closing its end (a GOAWAY, then close) leaves the connection
 * lingering: what gRPC wrote still goes to the peer, for up to LINGER_MS.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <grpc/grpc_posix.h>
#include <grpc/grpc_security.h>

#include <kdp/cleanup.h>
#include <kdp/log.h>

#include "gate.h"
#include "log-limit.h"

#define GATE_BUF 16384                  /* each direction of each connection */
#define ACCEPT_PAUSE_MS 100             /* after accept4() ran out of fds or memory */
#define LINGER_MS 10000                 /* for the peer to take gRPC's last bytes (its GOAWAY) */
#define EVENTS_MAX 64
#define FRAME_HEADER 9
#define FRAME_HEADERS 0x1
#define PREFACE_SIZE 24                 /* "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" */
#define LINES_PER_WINDOW 5
#define LINE_WINDOW_USEC (10u * 1000000u)

typedef enum end_kind {
        END_WAKE,
        END_LISTENER,
        END_PEER,
        END_CORE,
} end_kind;

/* What an epoll registration points at. */
typedef struct gate_end {
        end_kind kind;
        void *owner;
        uint32_t events;                /* the interest set now */
} gate_end;

typedef struct gate_conn gate_conn;

struct kdp_gate_listener {
        gate_end end;
        int fd;
        char *path;
        dev_t dev;
        ino_t ino;
        char *resource;
        grpc_server *server;
        bool closed;                    /* under the gate's lock */
        uint64_t paused_until;          /* ms; accepting paused after EMFILE and the like */
        unsigned n_conns;               /* under the gate's lock */
        kdp_log_limit closes;           /* "Closed the oldest connection" lines */
        kdp_log_limit accept_errors;
        kdp_gate_listener *next;        /* the gate's list, under its lock */
};

struct gate_conn {
        gate_end peer_end, core_end;
        uint64_t id;
        kdp_gate_listener *listener;
        int peer_fd, core_fd;
        int grpc_fd;                    /* gRPC's end: its calls' peer is "fd:<grpc_fd>"; -1 once the
                                         * number went to a newer connection (under the gate's lock) */
        pid_t pid;
        uid_t uid;
        bool registrar;                 /* a GetInfo came on it (under the gate's lock) */
        bool dead;                      /* ended: on the gate's `ended` list */
        bool core_closed;               /* gRPC closed or shut its end: lingering */
        bool core_eof;                  /* and everything it wrote was read */
        uint64_t linger_until;          /* ms */
        kdp_gate_scan scan;
        uint8_t in[GATE_BUF];
        size_t in_len, in_pass;         /* bytes held; of them, scanned and free to pass */
        uint8_t out[GATE_BUF];
        size_t out_len;
        /* under the gate's lock */
        uint64_t unseen_at[KDP_GATE_MAX_UNSEEN];        /* when each unseen stream passed, oldest first */
        unsigned unseen_first, n_unseen;
        unsigned n_streams;             /* ListAndWatch streams open */
        gate_conn *prev, *next;
};

struct kdp_gate {
        pthread_t thread;
        bool thread_started;
        int epoll_fd, wake_fd;
        gate_end wake_end;
        grpc_server_credentials *creds;
        kdp_metrics_heartbeat *beat;    /* stamped each time the thread wakes; NULL: none */
        uint64_t beat_ms;               /* its longest wait then; 0: no bound */
        pthread_mutex_t lock;
        bool quit;                      /* under lock */
        uint64_t next_id;
        kdp_gate_listener *listeners;   /* under lock */
        kdp_gate_listener *closed;      /* freed once their connections are gone, under lock */
        gate_conn *conns_head, *conns_tail;     /* oldest first; changed under lock, by the gate thread only */
        gate_conn *ended;               /* gate thread: freed after the events at hand */
};

static uint64_t now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000u + (uint64_t) ts.tv_nsec / 1000000u;
}

/* ---- the frame scan ---- */

void kdp_gate_scan_init(kdp_gate_scan *sc) {
        *sc = (kdp_gate_scan){ .preface_left = PREFACE_SIZE };
}

static uint32_t read_u24(const uint8_t *p) {
        return (uint32_t) p[0] << 16 | (uint32_t) p[1] << 8 | p[2];
}

static uint32_t read_stream_id(const uint8_t *p) {
        return ((uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3]) & 0x7fffffffu;
}

size_t kdp_gate_scan_bytes(kdp_gate_scan *sc, const uint8_t *buf, size_t len, unsigned credits,
                           unsigned *ret_opened) {
        size_t pos = 0;
        unsigned opened = 0;

        if (sc->preface_left > 0) {
                size_t n = len < sc->preface_left ? len : sc->preface_left;

                sc->preface_left -= (uint32_t) n;
                pos = n;
        }
        while (pos < len && sc->preface_left == 0) {
                if (sc->payload_left > 0) {
                        size_t n = len - pos < sc->payload_left ? len - pos : sc->payload_left;

                        sc->payload_left -= (uint32_t) n;
                        pos += n;
                        continue;
                }
                if (len - pos < FRAME_HEADER)
                        break;
                if (buf[pos + 3] == FRAME_HEADERS) {
                        uint32_t id = read_stream_id(buf + pos + 5);

                        if (id > sc->last_stream) {
                                if (opened == credits)
                                        break;
                                sc->last_stream = id;
                                opened++;
                        }
                }
                sc->payload_left = read_u24(buf + pos);
                pos += FRAME_HEADER;
        }
        *ret_opened = opened;
        return pos;
}

/* ---- unseen streams (under the gate's lock) ---- */

static void unseen_push(gate_conn *c, uint64_t at) {
        assert(c->n_unseen < KDP_GATE_MAX_UNSEEN);
        c->unseen_at[(c->unseen_first + c->n_unseen) % KDP_GATE_MAX_UNSEEN] = at;
        c->n_unseen++;
}

static void unseen_pop(gate_conn *c) {
        if (c->n_unseen == 0)
                return;
        c->unseen_first = (c->unseen_first + 1) % KDP_GATE_MAX_UNSEEN;
        c->n_unseen--;
}

/* Forgets the streams that passed KDP_GATE_UNSEEN_MS ago and are still unseen. */
static void unseen_expire(gate_conn *c, uint64_t now) {
        while (c->n_unseen > 0 && c->unseen_at[c->unseen_first] + KDP_GATE_UNSEEN_MS <= now)
                unseen_pop(c);
}

/* ---- epoll ---- */

static void end_watch(kdp_gate *g, gate_end *e, int fd, uint32_t events) {
        struct epoll_event ev = { .events = events, .data.ptr = e };

        if (e->events == events)
                return;
        /* EPOLL_CTL_MOD cannot fail on a registered fd but for ENOMEM; the connection then stalls until it ends */
        (void) epoll_ctl(g->epoll_fd, EPOLL_CTL_MOD, fd, &ev);
        e->events = events;
}

static int end_add(kdp_gate *g, gate_end *e, int fd, uint32_t events) {
        struct epoll_event ev = { .events = events, .data.ptr = e };

        if (epoll_ctl(g->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0)
                return -errno;
        e->events = events;
        return 0;
}

static void wake(kdp_gate *g) {
        uint64_t one = 1;

        (void) !write(g->wake_fd, &one, sizeof(one));
}

/* ---- connections (gate thread) ---- */

static void conn_unlink(kdp_gate *g, gate_conn *c) {
        if (c->prev)
                c->prev->next = c->next;
        else
                g->conns_head = c->next;
        if (c->next)
                c->next->prev = c->prev;
        else
                g->conns_tail = c->prev;
        c->listener->n_conns--;
        c->prev = c->next = NULL;
}

/*
 * Ends a connection: what gRPC wrote goes to the peer once, then both fds
 * close. Freed once the events at hand are handled (they may still name it).
 */
static void conn_end(kdp_gate *g, gate_conn *c) {
        if (c->dead)
                return;
        if (c->out_len > 0)
                (void) !send(c->peer_fd, c->out, c->out_len, MSG_NOSIGNAL | MSG_DONTWAIT);
        c->dead = true;
        pthread_mutex_lock(&g->lock);
        conn_unlink(g, c);
        pthread_mutex_unlock(&g->lock);
        /* out of the epoll set first: a forked child may hold the same files a while */
        (void) epoll_ctl(g->epoll_fd, EPOLL_CTL_DEL, c->peer_fd, NULL);
        (void) epoll_ctl(g->epoll_fd, EPOLL_CTL_DEL, c->core_fd, NULL);
        close(c->peer_fd);
        close(c->core_fd);
        c->next = g->ended;
        g->ended = c;
}

static void free_ended(kdp_gate *g) {
        while (g->ended) {
                gate_conn *c = g->ended;

                g->ended = c->next;
                free(c);
        }
}

/* Reads what `fd` has into buf[*len..size); false at end of file or an error. */
static bool fill(int fd, uint8_t *buf, size_t *len, size_t size) {
        ssize_t n;

        if (*len == size)
                return true;
        n = recv(fd, buf + *len, size - *len, MSG_DONTWAIT);
        if (n > 0) {
                *len += (size_t) n;
                return true;
        }
        return n < 0 && (errno == EAGAIN || errno == EINTR);
}

/* Writes buf[0..n) to `fd` as far as it takes it and drops what was written; false on an error. */
static bool drain(int fd, uint8_t *buf, size_t *len, size_t n) {
        ssize_t w;

        if (n == 0)
                return true;
        w = send(fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0)
                return errno == EAGAIN || errno == EINTR;
        memmove(buf, buf + w, *len - (size_t) w);
        *len -= (size_t) w;
        return true;
}

/* Scans what the peer sent and lets through what may pass now. */
static void conn_pass(kdp_gate *g, gate_conn *c) {
        unsigned opened;
        uint64_t now;
        size_t n;

        if (c->in_pass == c->in_len)
                return;
        now = now_ms();
        pthread_mutex_lock(&g->lock);
        unseen_expire(c, now);
        n = kdp_gate_scan_bytes(&c->scan, c->in + c->in_pass, c->in_len - c->in_pass,
                                KDP_GATE_MAX_UNSEEN - c->n_unseen, &opened);
        for (unsigned i = 0; i < opened; i++)
                unseen_push(c, now);
        pthread_mutex_unlock(&g->lock);
        c->in_pass += n;
}

/* gRPC closed its end: what it wrote still goes to the peer, for up to LINGER_MS. */
static void conn_core_closed(kdp_gate *g, gate_conn *c) {
        if (c->core_closed)
                return;
        c->core_closed = true;
        c->linger_until = now_ms() + LINGER_MS;
        /* at its end the fd would be reported forever: it is read from now on as the peer takes bytes */
        (void) epoll_ctl(g->epoll_fd, EPOLL_CTL_DEL, c->core_fd, NULL);
        c->core_end.events = 0;
}

/*
 * Moves what can move. `read_peer`, `read_core`: whether to try reading each
 * end (an event said it is readable; both after a wake-up): a read that
 * would find nothing costs a system call on every Allocate.
 */
static void conn_pump(kdp_gate *g, gate_conn *c, bool read_peer, bool read_core) {
        if (c->dead)
                return;
        if (!c->core_closed) {
                size_t before;

                /* the peer is read only while its answers do not wait for it */
                if (read_peer && c->out_len == 0 && !fill(c->peer_fd, c->in, &c->in_len, GATE_BUF)) {
                        conn_end(g, c);
                        return;
                }
                conn_pass(g, c);
                before = c->in_len;
                if (drain(c->core_fd, c->in, &c->in_len, c->in_pass))
                        c->in_pass -= before - c->in_len;
                else
                        conn_core_closed(g, c);
        }
        for (;;) {
                size_t before = c->out_len, filled;

                if ((read_core || c->core_closed) && !c->core_eof && !fill(c->core_fd, c->out, &c->out_len, GATE_BUF)) {
                        c->core_eof = true;
                        conn_core_closed(g, c);
                }
                filled = c->out_len;
                if (!drain(c->peer_fd, c->out, &c->out_len, c->out_len)) {
                        conn_end(g, c);
                        return;
                }
                /*
                 * Lingering, gRPC's end is out of the epoll set: read on while the peer takes it all
                 * (a round that neither read nor wrote is the end of what is there now).
                 */
                if (!c->core_closed || c->core_eof || c->out_len > 0 || (filled == before && c->out_len == filled))
                        break;
        }
        if (c->core_closed && ((c->core_eof && c->out_len == 0) || now_ms() >= c->linger_until))
                conn_end(g, c);
}

static void conn_watch(kdp_gate *g, gate_conn *c) {
        uint32_t peer = EPOLLRDHUP, core = 0;

        if (c->dead)
                return;
        if (c->core_closed) {
                end_watch(g, &c->peer_end, c->peer_fd, c->out_len > 0 ? EPOLLOUT : 0);
                return;
        }
        if (c->in_len < GATE_BUF && c->out_len == 0)
                peer |= EPOLLIN;
        if (c->out_len > 0)
                peer |= EPOLLOUT;
        if (c->out_len < GATE_BUF)
                core |= EPOLLIN;
        if (c->in_pass > 0)
                core |= EPOLLOUT;
        end_watch(g, &c->peer_end, c->peer_fd, peer);
        end_watch(g, &c->core_end, c->core_fd, core);
}

/* Under the gate's lock: the oldest connection of `l` without a ListAndWatch stream, or NULL. */
static gate_conn *oldest_idle(kdp_gate *g, kdp_gate_listener *l) {
        for (gate_conn *c = g->conns_head; c; c = c->next)
                if (c->listener == l && c->n_streams == 0)
                        return c;
        return NULL;
}

static void log_close(kdp_gate_listener *l, const gate_conn *victim) {
        uint64_t suppressed;

        if (!kdp_log_limit_allow(&l->closes, now_ms() * 1000u, &suppressed))
                return;
        if (suppressed > 0)
                kdp_log_warning("Suppressed closed connection lines", KDP_F_STR("resource", l->resource),
                                KDP_F_INT("suppressed", suppressed));
        kdp_log_warning("Closed the oldest connection: too many on this socket", KDP_F_STR("resource", l->resource),
                        KDP_F_INT("limit", KDP_GATE_MAX_CONNECTIONS), KDP_F_INT("pid", victim->pid),
                        KDP_F_INT("uid", victim->uid));
}

/* Makes room for one more connection of `l`; false when every one has a ListAndWatch stream. */
static bool make_room(kdp_gate *g, kdp_gate_listener *l) {
        gate_conn *victim;
        bool full;

        pthread_mutex_lock(&g->lock);
        full = l->n_conns >= KDP_GATE_MAX_CONNECTIONS;
        victim = full ? oldest_idle(g, l) : NULL;
        pthread_mutex_unlock(&g->lock);
        if (victim) {
                log_close(l, victim);
                conn_end(g, victim);
        }
        return !full || victim;
}

/* A connection for `peer_fd` over the socketpair `pair` (its own end, gRPC's). */
static int conn_new(kdp_gate_listener *l, int peer_fd, const int pair[2], gate_conn **ret) {
        struct ucred cred = { .pid = 0, .uid = (uid_t) -1 };
        socklen_t cred_len = sizeof(cred);
        gate_conn *c;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        (void) getsockopt(peer_fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len);
        c->peer_end = (gate_end){ .kind = END_PEER, .owner = c };
        c->core_end = (gate_end){ .kind = END_CORE, .owner = c };
        c->listener = l;
        c->peer_fd = peer_fd;
        c->core_fd = pair[0];
        c->grpc_fd = pair[1];
        c->pid = cred.pid;
        c->uid = cred.uid;
        kdp_gate_scan_init(&c->scan);
        *ret = c;
        return 0;
}

/*
 * Under the gate's lock (a closing listener waits for it): one connection,
 * handed to gRPC, or with no `room` closed at once.
 */
static int accept_one(kdp_gate *g, kdp_gate_listener *l, bool room) {
        gate_conn *c = NULL;
        int pair[2] = { -1, -1 }, fd, r;

        /*
         * The socketpair first: a connection is taken only with the fds to serve
         * it. Out of fds, it stays queued on the socket for the next try; taken
         * and closed, its client would fail at once.
         */
        if (room && socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) < 0)
                return -errno;
        fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
                r = -errno;
                if (room) {
                        close(pair[0]);
                        close(pair[1]);
                }
                return r;
        }
        if (!room) {
                close(fd);
                kdp_log_v(1, "Refused a connection: every connection on this socket has a ListAndWatch stream",
                          KDP_F_STR("resource", l->resource), KDP_F_INT("limit", KDP_GATE_MAX_CONNECTIONS));
                return 0;
        }
        r = conn_new(l, fd, pair, &c);
        if (r < 0) {
                close(fd);
                close(pair[0]);
                close(pair[1]);
                return r;
        }
        if (end_add(g, &c->peer_end, c->peer_fd, EPOLLIN | EPOLLRDHUP) < 0 ||
            end_add(g, &c->core_end, c->core_fd, EPOLLIN | EPOLLRDHUP) < 0) {
                close(c->peer_fd);
                close(c->core_fd);
                close(c->grpc_fd);
                free(c);
                return -ENOMEM;
        }
        /*
         * The kernel just gave out these numbers, so any older connection
         * still naming one as gRPC's end (lingering, or not yet seen closed)
         * lost it: it is no longer the connection calls from "fd:<n>" come on.
         */
        for (gate_conn *o = g->conns_head; o; o = o->next)
                if (o->grpc_fd == pair[0] || o->grpc_fd == pair[1])
                        o->grpc_fd = -1;
        c->id = ++g->next_id;
        c->prev = g->conns_tail;
        if (g->conns_tail)
                g->conns_tail->next = c;
        else
                g->conns_head = c;
        g->conns_tail = c;
        l->n_conns++;
        /* gRPC owns grpc_fd from here, and closes it with the transport */
        grpc_server_add_channel_from_fd(l->server, c->grpc_fd, g->creds);
        kdp_log_v(2, "Accepted a connection", KDP_F_STR("resource", l->resource), KDP_F_INT("pid", c->pid),
                  KDP_F_INT("uid", c->uid));
        return 0;
}

static void log_accept_error(kdp_gate_listener *l, int r) {
        uint64_t suppressed;

        if (!kdp_log_limit_allow(&l->accept_errors, now_ms() * 1000u, &suppressed))
                return;
        kdp_log_error(r, "Failed to accept a connection", KDP_F_STR("resource", l->resource),
                      KDP_F_INT("retryMs", ACCEPT_PAUSE_MS), KDP_F_INT("suppressed", suppressed));
}

static void on_listener(kdp_gate *g, kdp_gate_listener *l) {
        bool closed, room;
        int r;

        pthread_mutex_lock(&g->lock);
        closed = l->closed;
        pthread_mutex_unlock(&g->lock);
        if (closed)
                return;
        room = make_room(g, l);
        pthread_mutex_lock(&g->lock);
        r = l->closed ? 0 : accept_one(g, l, room);
        if (r == -EMFILE || r == -ENFILE || r == -ENOBUFS || r == -ENOMEM) {
                /* level-triggered: the listener stays readable, so it is left alone for a while */
                l->paused_until = now_ms() + ACCEPT_PAUSE_MS;
                end_watch(g, &l->end, l->fd, 0);
        }
        pthread_mutex_unlock(&g->lock);
        if (r == -EMFILE || r == -ENFILE || r == -ENOBUFS || r == -ENOMEM)
                log_accept_error(l, r);
}

/* ---- the gate thread ---- */

/*
 * Under the gate's lock: when a connection whose unseen streams hold its
 * peer back gets one back by age, a lingering one ends, or a paused listener
 * may accept again; 0 when nothing is due.
 */
static uint64_t next_due(kdp_gate *g) {
        uint64_t due = 0;

        for (gate_conn *c = g->conns_head; c; c = c->next) {
                uint64_t d = c->core_closed ? c->linger_until
                             : c->n_unseen == KDP_GATE_MAX_UNSEEN ? c->unseen_at[c->unseen_first] + KDP_GATE_UNSEEN_MS
                                                                 : 0;

                if (d && (!due || d < due))
                        due = d;
        }
        for (kdp_gate_listener *l = g->listeners; l; l = l->next)
                if (l->paused_until && (!due || l->paused_until < due))
                        due = l->paused_until;
        return due;
}

static void resume_listeners(kdp_gate *g, uint64_t now) {
        pthread_mutex_lock(&g->lock);
        for (kdp_gate_listener *l = g->listeners; l; l = l->next)
                if (l->paused_until && l->paused_until <= now) {
                        l->paused_until = 0;
                        end_watch(g, &l->end, l->fd, EPOLLIN);
                }
        pthread_mutex_unlock(&g->lock);
}

static void listener_free(kdp_gate_listener *l) {
        kdp_log_limit_done(&l->closes);
        kdp_log_limit_done(&l->accept_errors);
        free(l->path);
        free(l->resource);
        free(l);
}

/* Frees the closed listeners none of whose connections is left. */
static void free_closed(kdp_gate *g) {
        pthread_mutex_lock(&g->lock);
        for (kdp_gate_listener **p = &g->closed; *p;) {
                kdp_gate_listener *l = *p;

                if (l->n_conns > 0) {
                        p = &l->next;
                        continue;
                }
                *p = l->next;
                listener_free(l);
        }
        pthread_mutex_unlock(&g->lock);
}

/* Pumps every connection (streams came back) and sets its interest. The list changes on this thread only. */
static void pump_all(kdp_gate *g) {
        for (gate_conn *c = g->conns_head, *next; c; c = next) {
                next = c->next;
                conn_pump(g, c, true, true);
                conn_watch(g, c);
        }
}

static void on_conn_event(kdp_gate *g, gate_end *e, uint32_t events) {
        gate_conn *c = e->owner;

        if (c->dead)
                return;
        if (e->kind == END_PEER && (events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP))) {
                conn_end(g, c);
                return;
        }
        if (e->kind == END_CORE && (events & (EPOLLHUP | EPOLLERR)))
                conn_core_closed(g, c);
        conn_pump(g, c, e->kind == END_PEER && (events & EPOLLIN), e->kind == END_CORE && (events & EPOLLIN));
        conn_watch(g, c);
}

/* Handles a batch of events; true if the gate was woken (streams came back, a listener closed). */
static bool handle_events(kdp_gate *g, const struct epoll_event *evs, int n) {
        bool woken = false;

        for (int i = 0; i < n; i++) {
                gate_end *e = evs[i].data.ptr;

                switch (e->kind) {
                case END_WAKE: {
                        uint64_t v;

                        (void) !read(g->wake_fd, &v, sizeof(v));
                        woken = true;
                        break;
                }
                case END_LISTENER:
                        on_listener(g, e->owner);
                        break;
                default:
                        on_conn_event(g, e, evs[i].events);
                }
        }
        return woken;
}

/* How long the thread may sleep: until the next thing due, and at most a heartbeat's period. */
static int wait_ms(const kdp_gate *g, uint64_t due, uint64_t now) {
        uint64_t ms = !due ? UINT64_MAX : due > now ? due - now : 0;

        if (g->beat_ms && ms > g->beat_ms)
                ms = g->beat_ms;
        return ms == UINT64_MAX ? -1 : ms > INT_MAX ? INT_MAX : (int) ms;
}

static void *gate_main(void *userdata) {
        kdp_gate *g = userdata;
        struct epoll_event evs[EVENTS_MAX];

        for (;;) {
                uint64_t due, now = now_ms();
                bool quit, woken;
                int n;

                pthread_mutex_lock(&g->lock);
                due = next_due(g);
                pthread_mutex_unlock(&g->lock);
                n = epoll_wait(g->epoll_fd, evs, EVENTS_MAX, wait_ms(g, due, now));
                kdp_metrics_heartbeat_beat(g->beat);
                if (n < 0 && errno != EINTR) {
                        /* EBADF, EFAULT, EINVAL: nothing a retry would mend */
                        kdp_log_error(-errno, "Stopped accepting on the plugin sockets");
                        return NULL;
                }
                pthread_mutex_lock(&g->lock);
                quit = g->quit;
                pthread_mutex_unlock(&g->lock);
                if (quit)
                        return NULL;
                woken = handle_events(g, evs, n > 0 ? n : 0);
                now = now_ms();
                resume_listeners(g, now);
                if (woken || (due && due <= now))
                        pump_all(g);
                free_ended(g);
                free_closed(g);
        }
}

/* ---- the API ---- */

int kdp_gate_new(kdp_metrics *metrics, kdp_gate **ret) {
        kdp_gate *g;

        g = calloc(1, sizeof(*g));
        if (!g)
                return -ENOMEM;
        pthread_mutex_init(&g->lock, NULL);
        if (metrics) {
                g->beat_ms = kdp_metrics_beat_ms(metrics);
                if (kdp_metrics_add_heartbeat(metrics, "plugin socket gate thread", &g->beat) < 0) {
                        kdp_gate_free(g);
                        return -ENOMEM;
                }
        }
        g->wake_end = (gate_end){ .kind = END_WAKE, .owner = g };
        g->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
        g->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        g->creds = grpc_insecure_server_credentials_create();
        if (g->epoll_fd < 0 || g->wake_fd < 0 || !g->creds || end_add(g, &g->wake_end, g->wake_fd, EPOLLIN) < 0 ||
            pthread_create(&g->thread, NULL, gate_main, g) != 0) {
                kdp_gate_free(g);
                return -ENOMEM;
        }
        g->thread_started = true;
        *ret = g;
        return 0;
}

kdp_gate *kdp_gate_free(kdp_gate *g) {
        if (!g)
                return NULL;
        if (g->thread_started) {
                pthread_mutex_lock(&g->lock);
                g->quit = true;
                pthread_mutex_unlock(&g->lock);
                wake(g);
                pthread_join(g->thread, NULL);
        }
        while (g->conns_head)
                conn_end(g, g->conns_head);
        free_ended(g);
        for (kdp_gate_listener *l = g->listeners, *next; l; l = next) {
                next = l->next;
                close(l->fd);
                listener_free(l);
        }
        free_closed(g);
        if (g->creds)
                grpc_server_credentials_release(g->creds);
        if (g->wake_fd >= 0)
                close(g->wake_fd);
        if (g->epoll_fd >= 0)
                close(g->epoll_fd);
        pthread_mutex_destroy(&g->lock);
        free(g);
        return NULL;
}

int kdp_gate_listen(kdp_gate *g, int fd, const char *path, grpc_server *server, const char *resource,
                    kdp_gate_listener **ret) {
        kdp_gate_listener *l;
        struct stat st;
        int r;

        /* the file's own inode (fstat() of the socket tells the socket's) */
        if (lstat(path, &st) < 0) {
                r = -errno;
                close(fd);
                return r;
        }
        l = calloc(1, sizeof(*l));
        if (!l) {
                close(fd);
                return -ENOMEM;
        }
        l->end = (gate_end){ .kind = END_LISTENER, .owner = l };
        l->fd = fd;
        l->dev = st.st_dev;
        l->ino = st.st_ino;
        l->server = server;
        l->path = strdup(path);
        l->resource = strdup(resource);
        kdp_log_limit_init(&l->closes, LINES_PER_WINDOW, LINE_WINDOW_USEC);
        kdp_log_limit_init(&l->accept_errors, LINES_PER_WINDOW, LINE_WINDOW_USEC);
        if (!l->path || !l->resource) {
                close(fd);
                listener_free(l);
                return -ENOMEM;
        }
        pthread_mutex_lock(&g->lock);
        r = end_add(g, &l->end, fd, EPOLLIN);
        if (r == 0) {
                l->next = g->listeners;
                g->listeners = l;
        }
        pthread_mutex_unlock(&g->lock);
        if (r < 0) {
                close(fd);
                listener_free(l);
                return r;
        }
        *ret = l;
        return 0;
}

/* Removes the socket file if it is still the one bound, not a newer one at the same path. */
static void remove_socket_file(const kdp_gate_listener *l) {
        struct stat st;

        if (lstat(l->path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == l->dev && st.st_ino == l->ino)
                (void) unlink(l->path);
}

void kdp_gate_close(kdp_gate *g, kdp_gate_listener *l) {
        pthread_mutex_lock(&g->lock);
        for (kdp_gate_listener **p = &g->listeners; *p; p = &(*p)->next)
                if (*p == l) {
                        *p = l->next;
                        break;
                }
        l->closed = true;
        remove_socket_file(l);
        (void) epoll_ctl(g->epoll_fd, EPOLL_CTL_DEL, l->fd, NULL);
        close(l->fd);
        l->next = g->closed;
        g->closed = l;
        pthread_mutex_unlock(&g->lock);
        wake(g);
}

/* Under the gate's lock. */
static gate_conn *conn_by_grpc_fd(kdp_gate *g, int fd) {
        for (gate_conn *c = g->conns_head; c && fd >= 0; c = c->next)
                if (c->grpc_fd == fd)
                        return c;
        return NULL;
}

uint64_t kdp_gate_call_seen(kdp_gate *g, const char *peer, bool stream, kdp_gate_peer *ret_cred) {
        bool was_full = false;
        uint64_t id = 0;
        gate_conn *c;
        int fd, end;

        if (!peer || sscanf(peer, "fd:%d%n", &fd, &end) != 1 || peer[end] != '\0')
                return 0;
        pthread_mutex_lock(&g->lock);
        c = conn_by_grpc_fd(g, fd);
        if (c) {
                was_full = c->n_unseen == KDP_GATE_MAX_UNSEEN;
                unseen_pop(c);
                if (stream)
                        c->n_streams++;
                id = c->id;
                if (ret_cred)
                        *ret_cred = (kdp_gate_peer){ .pid = c->pid, .uid = c->uid };
        }
        pthread_mutex_unlock(&g->lock);
        if (was_full)
                wake(g);
        return id;
}

/* Under the gate's lock; NULL for 0 or a connection gone. */
static gate_conn *conn_by_id(kdp_gate *g, uint64_t conn_id) {
        for (gate_conn *c = g->conns_head; c && conn_id != 0; c = c->next)
                if (c->id == conn_id)
                        return c;
        return NULL;
}

void kdp_gate_set_registrar(kdp_gate *g, uint64_t conn_id) {
        gate_conn *c;

        pthread_mutex_lock(&g->lock);
        c = conn_by_id(g, conn_id);
        if (c)
                c->registrar = true;
        pthread_mutex_unlock(&g->lock);
}

bool kdp_gate_is_registrar(kdp_gate *g, uint64_t conn_id) {
        gate_conn *c;
        bool yes;

        pthread_mutex_lock(&g->lock);
        c = conn_by_id(g, conn_id);
        yes = c && c->registrar;
        pthread_mutex_unlock(&g->lock);
        return yes;
}

void kdp_gate_stream_end(kdp_gate *g, uint64_t conn_id) {
        gate_conn *c;

        if (conn_id == 0)
                return;
        pthread_mutex_lock(&g->lock);
        c = conn_by_id(g, conn_id);
        if (c && c->n_streams > 0)
                c->n_streams--;
        pthread_mutex_unlock(&g->lock);
}
