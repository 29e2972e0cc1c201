/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The gate in front of the plugin sockets: its reading of a peer's HTTP/2
 * frames (where bytes may pass, how many streams they open), and a live gate
 * relaying a connection to a grpc server and closing its socket, and telling
 * the calls of a new connection from a lingering one that had its fd number.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <grpc/grpc.h>

#include "gate.h"
#include "metrics.h"

#include "kdp-test.h"

#define PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

/* Appends a frame header (type, flags 0, stream) and `len` payload bytes of 'x' at buf + *pos. */
static void put_frame(uint8_t *buf, size_t *pos, uint8_t type, uint32_t stream, uint32_t len) {
        uint8_t *p = buf + *pos;

        p[0] = (uint8_t) (len >> 16);
        p[1] = (uint8_t) (len >> 8);
        p[2] = (uint8_t) len;
        p[3] = type;
        p[4] = 0;
        p[5] = (uint8_t) (stream >> 24);
        p[6] = (uint8_t) (stream >> 16);
        p[7] = (uint8_t) (stream >> 8);
        p[8] = (uint8_t) stream;
        memset(p + 9, 'x', len);
        *pos += 9 + len;
}

START_TEST(test_gate_scan_counts_new_streams_and_stops_before_the_one_past_the_credits) {
        uint8_t buf[512];
        size_t len = 0, headers3;
        unsigned opened = 99;
        kdp_gate_scan sc;

        memcpy(buf, PREFACE, 24);
        len = 24;
        put_frame(buf, &len, 0x4, 0, 6);        /* SETTINGS */
        put_frame(buf, &len, 0x1, 1, 20);       /* HEADERS: stream 1 */
        put_frame(buf, &len, 0x0, 1, 5);        /* DATA */
        put_frame(buf, &len, 0x1, 1, 4);        /* HEADERS on stream 1 again: opens nothing */
        put_frame(buf, &len, 0x3, 1, 4);        /* RST_STREAM */
        headers3 = len;
        put_frame(buf, &len, 0x1, 3, 20);       /* HEADERS: stream 3 */
        put_frame(buf, &len, 0x6, 0, 8);        /* PING */

        kdp_gate_scan_init(&sc);
        /* one credit: everything up to stream 3's HEADERS */
        ck_assert_uint_eq(kdp_gate_scan_bytes(&sc, buf, len, 1, &opened), headers3);
        ck_assert_uint_eq(opened, 1);
        ck_assert_uint_eq(sc.last_stream, 1);
        /* no credit: nothing more */
        ck_assert_uint_eq(kdp_gate_scan_bytes(&sc, buf + headers3, len - headers3, 0, &opened), 0);
        ck_assert_uint_eq(opened, 0);
        /* a credit back: the rest */
        ck_assert_uint_eq(kdp_gate_scan_bytes(&sc, buf + headers3, len - headers3, 1, &opened), len - headers3);
        ck_assert_uint_eq(opened, 1);
        ck_assert_uint_eq(sc.last_stream, 3);
}
END_TEST

START_TEST(test_gate_scan_takes_bytes_split_anywhere) {
        uint8_t buf[512];
        size_t len = 0, pos = 0;
        unsigned opened, total = 0;
        kdp_gate_scan sc;

        memcpy(buf, PREFACE, 24);
        len = 24;
        put_frame(buf, &len, 0x1, 1, 30);
        put_frame(buf, &len, 0x1, 5, 0);
        put_frame(buf, &len, 0x0, 5, 100);
        put_frame(buf, &len, 0x1, 7, 3);

        kdp_gate_scan_init(&sc);
        /* the bytes arrive 1..7 at a time; a frame header not yet whole stays unscanned */
        for (size_t chunk = 1, have = 0; pos < len; chunk = chunk % 7 + 1) {
                have = have + chunk < len ? have + chunk : len;
                pos += kdp_gate_scan_bytes(&sc, buf + pos, have - pos, 16, &opened);
                total += opened;
                ck_assert_uint_lt(have - pos, 9);
        }
        ck_assert_uint_eq(pos, len);
        ck_assert_uint_eq(total, 3);
        ck_assert_uint_eq(sc.last_stream, 7);
        ck_assert_uint_eq(sc.payload_left, 0);
}
END_TEST

START_TEST(test_gate_scan_of_a_large_payload_counts_only_headers) {
        static uint8_t buf[70000];
        size_t len = 24;
        unsigned opened;
        kdp_gate_scan sc;

        memcpy(buf, PREFACE, 24);
        /* a DATA frame whose payload holds bytes that look like a HEADERS frame header */
        put_frame(buf, &len, 0x0, 1, 60000);
        buf[24 + 9 + 100 + 3] = 0x1;
        kdp_gate_scan_init(&sc);
        ck_assert_uint_eq(kdp_gate_scan_bytes(&sc, buf, 24 + 9 + 1000, 0, &opened), 24 + 9 + 1000);
        ck_assert_uint_eq(opened, 0);
        ck_assert_uint_eq(sc.payload_left, 59000);
        ck_assert_uint_eq(kdp_gate_scan_bytes(&sc, buf + 1033, len - 1033, 0, &opened), len - 1033);
        ck_assert_uint_eq(opened, 0);
        ck_assert_uint_eq(sc.payload_left, 0);
}
END_TEST

START_TEST(test_gate_call_seen_knows_only_its_own_peers) {
        kdp_gate *g = NULL;

        grpc_init();
        ck_assert_int_eq(kdp_gate_new(NULL, &g), 0);
        ck_assert_uint_eq(kdp_gate_call_seen(g, NULL, false, NULL), 0);
        ck_assert_uint_eq(kdp_gate_call_seen(g, "unix:/run/x.sock", false, NULL), 0);
        ck_assert_uint_eq(kdp_gate_call_seen(g, "fd:0", true, NULL), 0);
        ck_assert_uint_eq(kdp_gate_call_seen(g, "fd:12x", false, NULL), 0);
        ck_assert_uint_eq(kdp_gate_call_seen(g, "fd:-1", false, NULL), 0);
        kdp_gate_stream_end(g, 0);
        kdp_gate_stream_end(g, 12345);
        kdp_gate_set_registrar(g, 0);
        kdp_gate_set_registrar(g, 12345);
        ck_assert(!kdp_gate_is_registrar(g, 0));
        ck_assert(!kdp_gate_is_registrar(g, 12345));
        ck_assert_ptr_null(kdp_gate_free(g));
        grpc_shutdown();
}
END_TEST

static int listen_at(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

        ck_assert_int_ge(fd, 0);
        strcpy(sa.sun_path, path);
        ck_assert_int_eq(bind(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        ck_assert_int_eq(listen(fd, 16), 0);
        return fd;
}

static int connect_to(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        ck_assert_int_ge(fd, 0);
        strcpy(sa.sun_path, path);
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                int r = -errno;

                close(fd);
                return r;
        }
        return fd;
}

START_TEST(test_gate_relays_a_connection_and_its_close_removes_the_socket) {
        _cleanup_free_ char *dir = strdup("/tmp/kdp-test-gate-XXXXXX"), *path = NULL;
        grpc_completion_queue *cq;
        kdp_gate_listener *l = NULL;
        kdp_gate *g = NULL;
        grpc_server *server;
        struct pollfd pfd;
        uint8_t head[9];
        struct stat st;
        int fd;

        grpc_init();
        ck_assert_ptr_nonnull(mkdtemp(dir));
        ck_assert_int_ge(asprintf(&path, "%s/widget.sock", dir), 0);
        cq = grpc_completion_queue_create_for_next(NULL);
        server = grpc_server_create(NULL, NULL);
        grpc_server_register_completion_queue(server, cq, NULL);
        grpc_server_start(server);
        ck_assert_int_eq(kdp_gate_new(NULL, &g), 0);
        ck_assert_int_eq(kdp_gate_listen(g, listen_at(path), path, server, "example.com/widget", &l), 0);

        /* the server's first frame, its SETTINGS, reaches the peer through the gate */
        fd = connect_to(path);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, PREFACE, 24), 24);
        pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
        ck_assert_int_eq(poll(&pfd, 1, 30000), 1);
        ck_assert_int_eq(recv(fd, head, sizeof(head), MSG_WAITALL), 9);
        ck_assert_uint_eq(head[3], 0x4);
        ck_assert_uint_eq(head[5] | head[6] | head[7] | head[8], 0);
        close(fd);

        /* closed: the socket file is gone and nobody accepts there */
        kdp_gate_close(g, l);
        ck_assert_int_eq(lstat(path, &st), -1);
        ck_assert_int_eq(errno, ENOENT);
        ck_assert_int_eq(connect_to(path), -ENOENT);

        grpc_server_shutdown_and_notify(server, cq, NULL);
        grpc_server_cancel_all_calls(server);
        ck_assert_int_eq(grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type,
                         GRPC_OP_COMPLETE);
        grpc_server_destroy(server);
        ck_assert_ptr_null(kdp_gate_free(g));
        grpc_completion_queue_shutdown(cq);
        while (grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type != GRPC_QUEUE_SHUTDOWN)
                ;
        grpc_completion_queue_destroy(cq);
        ck_assert_int_eq(rmdir(dir), 0);
        grpc_shutdown();
}
END_TEST

/* A started server on `cq` that acks every PING (as kdpd's), for the gate's connections. */
static grpc_server *ping_server(grpc_completion_queue *cq) {
        grpc_arg arg = { .type = GRPC_ARG_INTEGER, .key = (char *) GRPC_ARG_HTTP2_MAX_PING_STRIKES,
                         .value.integer = 0 };
        grpc_channel_args args = { .num_args = 1, .args = &arg };
        grpc_server *server = grpc_server_create(&args, NULL);

        grpc_server_register_completion_queue(server, cq, NULL);
        grpc_server_start(server);
        return server;
}

static atomic_uint servers_ended;

/* Polls `cq` (the servers' reads and writes happen there) until it is shut down, counting the shutdowns. */
static void *poll_cq(void *userdata) {
        grpc_completion_queue *cq = userdata;

        while (grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type != GRPC_QUEUE_SHUTDOWN)
                atomic_fetch_add(&servers_ended, 1);
        return NULL;
}

static void server_shut(grpc_server *server, grpc_completion_queue *cq) {
        grpc_server_shutdown_and_notify(server, cq, NULL);
        grpc_server_cancel_all_calls(server);
}

/* Waits until `n` servers shut down with server_shut() are done. */
static void servers_wait(unsigned n) {
        for (int i = 0; i < 3000 && atomic_load(&servers_ended) < n; i++)
                usleep(10000);
        ck_assert_uint_eq(atomic_load(&servers_ended), n);
}

/*
 * Connects socket `fd` to `path` and waits for the server's first frame, its
 * SETTINGS: the gate took the connection.
 */
static int connect_settled(int fd, const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct pollfd pfd;
        uint8_t head[9];

        ck_assert_int_ge(fd, 0);
        strcpy(sa.sun_path, path);
        ck_assert_int_eq(connect(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        ck_assert_int_eq(write(fd, PREFACE, 24), 24);
        pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
        ck_assert_int_eq(poll(&pfd, 1, 30000), 1);
        ck_assert_int_eq(recv(fd, head, sizeof(head), MSG_WAITALL), 9);
        ck_assert_uint_eq(head[3], 0x4);
        return fd;
}

/* The gate connection whose gRPC end is "fd:<n>": its id in *ret_id, n returned; -1 if none. */
static int find_grpc_fd(kdp_gate *g, uint64_t *ret_id) {
        for (int n = 0; n < 4096; n++) {
                char peer[32];
                uint64_t id;

                (void) snprintf(peer, sizeof(peer), "fd:%d", n);
                id = kdp_gate_call_seen(g, peer, false, NULL);
                if (id != 0) {
                        *ret_id = id;
                        return n;
                }
        }
        return -1;
}

/* Bytes waiting to be read at `fd`. */
static int queued(int fd) {
        int n = 0;

        ck_assert_int_eq(ioctl(fd, FIONREAD, &n), 0);
        return n;
}

/*
 * PINGs at `fd`, a few at a time, until the acks the gate relays stop
 * coming: this peer reads none, so the gate holds the last ones, while the
 * server, which wrote little past them, is not held.
 */
static void flood_pings(int fd) {
        static uint8_t buf[17 * 64];
        size_t len = 0;
        int last = -1;

        put_frame(buf, &len, 0x4, 0, 0);                /* SETTINGS, none changed */
        ck_assert_int_eq(send(fd, buf, len, MSG_NOSIGNAL), (ssize_t) len);
        len = 0;
        for (int i = 0; i < 64; i++)
                put_frame(buf, &len, 0x6, 0, 8);
        for (;;) {
                int now;

                ck_assert_int_eq(send(fd, buf, len, MSG_NOSIGNAL), (ssize_t) len);
                for (int i = 0; i < 100; i++) { /* the acks of these, or none for a second: held */
                        usleep(10000);
                        now = queued(fd);
                        if (now != last)
                                break;
                }
                if (now == last)
                        return;
                last = now;
        }
}

/*
 * A connection whose gRPC end was closed lingers while its peer has not taken
 * gRPC's last bytes; a new connection whose gRPC end gets the same fd number
 * is the one its calls name, not the lingering one.
 */
START_TEST(test_gate_credits_a_reused_grpc_fd_to_the_new_connection) {
        _cleanup_free_ char *dir = strdup("/tmp/kdp-test-gate-XXXXXX"), *path_a = NULL, *path_b = NULL;
        kdp_gate_listener *la = NULL, *lb = NULL;
        grpc_server *server_a, *server_b;
        grpc_completion_queue *cq;
        int spare, fd_a, fd_b, n, held[4096], n_held = 0;
        uint64_t id_a = 0, id_b = 0;
        kdp_gate *g = NULL;
        pthread_t poller;

        grpc_init();
        ck_assert_ptr_nonnull(mkdtemp(dir));
        ck_assert_int_ge(asprintf(&path_a, "%s/a.sock", dir), 0);
        ck_assert_int_ge(asprintf(&path_b, "%s/b.sock", dir), 0);
        cq = grpc_completion_queue_create_for_next(NULL);
        server_a = ping_server(cq);
        server_b = ping_server(cq);
        ck_assert_int_eq(pthread_create(&poller, NULL, poll_cq, cq), 0);
        ck_assert_int_eq(kdp_gate_new(NULL, &g), 0);
        ck_assert_int_eq(kdp_gate_listen(g, listen_at(path_a), path_a, server_a, "example.com/a", &la), 0);
        ck_assert_int_eq(kdp_gate_listen(g, listen_at(path_b), path_b, server_b, "example.com/b", &lb), 0);
        spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
        ck_assert_int_ge(spare, 0);

        fd_a = connect_settled(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), path_a);
        fd_b = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);  /* before the fds B's socketpair is to get */
        n = find_grpc_fd(g, &id_a);
        ck_assert_int_gt(n, spare);
        kdp_gate_set_registrar(g, id_a);
        flood_pings(fd_a);

        /* gRPC closes its end of A; A lingers, its acks unread */
        server_shut(server_a, cq);
        for (int i = 0; i < 3000 && fcntl(n, F_GETFD) >= 0; i++)
                usleep(10000);
        ck_assert_int_eq(fcntl(n, F_GETFD), -1);
        ck_assert(kdp_gate_is_registrar(g, id_a));

        /* the lowest free fds are `spare` and n: B's socketpair gets them, gRPC's end is n */
        for (int f; (f = open("/dev/null", O_RDONLY | O_CLOEXEC)) != n;) {
                ck_assert_int_ge(f, 0);
                ck_assert_int_lt(n_held, 4096);
                held[n_held++] = f;
        }
        close(n);
        close(spare);
        fd_b = connect_settled(fd_b, path_b);
        ck_assert(kdp_gate_is_registrar(g, id_a));      /* still lingering */
        ck_assert_int_eq(find_grpc_fd(g, &id_b), n);
        ck_assert_uint_eq(id_b, id_a + 1);
        ck_assert(!kdp_gate_is_registrar(g, id_b));

        for (int i = 0; i < n_held; i++)
                close(held[i]);
        close(fd_a);
        close(fd_b);
        kdp_gate_close(g, la);
        kdp_gate_close(g, lb);
        server_shut(server_b, cq);
        servers_wait(2);
        grpc_server_destroy(server_a);
        grpc_server_destroy(server_b);
        ck_assert_ptr_null(kdp_gate_free(g));
        grpc_completion_queue_shutdown(cq);
        ck_assert_int_eq(pthread_join(poller, NULL), 0);
        grpc_completion_queue_destroy(cq);
        ck_assert_int_eq(rmdir(dir), 0);
        grpc_shutdown();
}
END_TEST

static _Atomic uint64_t fake_now;

static uint64_t fake_clock(void) {
        return fake_now;
}

/* Whether /healthz is fine now; its text, if not, in `text` (free()). */
static bool healthy(kdp_metrics *m, char **text) {
        size_t size = 0;
        FILE *f = open_memstream(text, &size);
        bool ok;

        ck_assert_ptr_nonnull(f);
        ok = kdp_metrics_healthy(m, f);
        ck_assert_int_eq(fclose(f), 0);
        return ok;
}

/* The gate thread stamps its heartbeat while it runs (it wakes for it when idle), and only then. */
START_TEST(test_gate_thread_has_a_heartbeat_healthz_watches) {
        kdp_metrics *m = NULL;
        kdp_gate *g = NULL;
        char *text = NULL;
        bool ok = false;

        grpc_init();
        fake_now = 100 * 1000000000ull;
        ck_assert_int_eq(kdp_metrics_new(&(kdp_metrics_options){ .stall_ms = 10000, .clock_ns = fake_clock }, &m), 0);
        ck_assert_int_eq(kdp_gate_new(m, &g), 0);
        fake_now += 20 * 1000000000ull;         /* past the bound: only a stamp since mends it */
        for (int i = 0; i < 3000 && !ok; i++) {  /* the thread wakes every second: 30 s at most */
                free(text);
                text = NULL;
                ok = healthy(m, &text);
                if (!ok)
                        usleep(10000);
        }
        ck_assert_msg(ok, "the idle gate thread never stamped its heartbeat: %s", text);
        ck_assert_str_eq(text, "ok\n");
        free(text);
        text = NULL;
        ck_assert_ptr_null(kdp_gate_free(g));   /* its thread ended: nothing stamps any more */
        fake_now += 12300000000ull;
        ck_assert(!healthy(m, &text));
        ck_assert_str_eq(text, "plugin socket gate thread has not run for 12.3 s\n");
        free(text);
        ck_assert_ptr_null(kdp_metrics_free(m));
        grpc_shutdown();
}
END_TEST

static Suite *gate_suite(void) {
        Suite *s = suite_create("gate");
        TCase *tc = tcase_create("scan");

        tcase_add_test(tc, test_gate_scan_counts_new_streams_and_stops_before_the_one_past_the_credits);
        tcase_add_test(tc, test_gate_scan_takes_bytes_split_anywhere);
        tcase_add_test(tc, test_gate_scan_of_a_large_payload_counts_only_headers);
        suite_add_tcase(s, tc);
        tc = tcase_create("live");
        tcase_add_test(tc, test_gate_call_seen_knows_only_its_own_peers);
        tcase_add_test(tc, test_gate_relays_a_connection_and_its_close_removes_the_socket);
        tcase_add_test(tc, test_gate_thread_has_a_heartbeat_healthz_watches);
        tcase_add_test(tc, test_gate_credits_a_reused_grpc_fd_to_the_new_connection);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return kdp_test_run(gate_suite());
}
