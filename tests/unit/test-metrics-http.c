/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The metrics endpoint: addresses, and its answers on a unix socket of a temp dir. */
#include <check.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <kdp/cleanup.h>

#include "metrics-http.h"

#include "kdp-test.h"

START_TEST(test_metrics_http_parses_addresses) {
        kdp_metrics_http_address a;

        ck_assert_int_eq(kdp_metrics_http_parse_address("127.0.0.1:9400", &a), 0);
        ck_assert(!a.unix_socket);
        ck_assert_str_eq(a.host, "127.0.0.1");
        ck_assert_str_eq(a.port, "9400");
        ck_assert_int_eq(kdp_metrics_http_parse_address("[::1]:0", &a), 0);
        ck_assert_str_eq(a.host, "::1");
        ck_assert_str_eq(a.port, "0");
        ck_assert_int_eq(kdp_metrics_http_parse_address(":65535", &a), 0);
        ck_assert_str_eq(a.host, "");
        ck_assert_int_eq(kdp_metrics_http_parse_address("node-1.example.com:009", &a), 0);
        ck_assert_str_eq(a.host, "node-1.example.com");
        ck_assert_str_eq(a.port, "9");
        ck_assert_int_eq(kdp_metrics_http_parse_address("/run/kdp/metrics.sock", &a), 0);
        ck_assert(a.unix_socket);
        ck_assert_str_eq(a.path, "/run/kdp/metrics.sock");
}
END_TEST

START_TEST(test_metrics_http_refuses_what_is_no_address) {
        static const char *const bad[] = {
                "", "9400", "host:", "host:65536", "host:-1", "host:+1", "host:9x", "::1:9400", "[::1]9400",
                "[::1:9400", "::1]:9400", "a[b]:1", "relative/path.sock",
        };
        char long_path[200];
        kdp_metrics_http_address a;

        for (size_t i = 0; i < KDP_ELEMENTSOF(bad); i++)
                ck_assert_msg(kdp_metrics_http_parse_address(bad[i], &a) == -EINVAL, "accepted '%s'", bad[i]);
        memset(long_path, 'p', sizeof(long_path) - 1);
        long_path[0] = '/';
        long_path[sizeof(long_path) - 1] = '\0';
        ck_assert_int_eq(kdp_metrics_http_parse_address(long_path, &a), -EINVAL);
}
END_TEST

typedef struct rig {
        char dir[64];
        char path[128];
        kdp_metrics *m;
        kdp_metrics_http *h;
} rig;

static void rig_init(rig *g) {
        snprintf(g->dir, sizeof(g->dir), "/tmp/kdp-test-metrics-http-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(g->dir));
        snprintf(g->path, sizeof(g->path), "%s/metrics.sock", g->dir);
        ck_assert_int_eq(kdp_metrics_new(&(kdp_metrics_options){ .stall_ms = 10000 }, &g->m), 0);
        kdp_metrics_started(g->m);
}

static void rig_done(rig *g) {
        g->h = kdp_metrics_http_free(g->h);
        ck_assert_int_eq(access(g->path, F_OK), -1);    /* its socket went with it */
        g->m = kdp_metrics_free(g->m);
        ck_assert_int_eq(rmdir(g->dir), 0);
}

/* A new unix stream socket, and the address of `path` in *sa. */
static int unix_socket(const char *path, struct sockaddr_un *sa) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        ck_assert_int_ge(fd, 0);
        *sa = (struct sockaddr_un){ .sun_family = AF_UNIX };
        strcpy(sa->sun_path, path);
        return fd;
}

static int connect_unix(const char *path) {
        struct sockaddr_un sa;
        int fd = unix_socket(path, &sa);

        ck_assert_int_eq(connect(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        return fd;
}

/* The whole answer to `request` (free()): the endpoint closes an HTTP/1.0 connection after it. */
static char *ask(const char *path, const char *request) {
        _cleanup_close_ int fd = connect_unix(path);
        char *text = NULL, buf[4096];
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        ssize_t n;

        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(write(fd, request, strlen(request)), (ssize_t) strlen(request));
        while ((n = read(fd, buf, sizeof(buf))) > 0)
                fwrite(buf, 1, (size_t) n, f);
        ck_assert_int_eq(n, 0);
        ck_assert_int_eq(fclose(f), 0);
        return text;
}

/* The status line and the body of an answer (the headers between them dropped), "STATUS\nBODY". */
static char *status_and_body(const char *answer) {
        const char *eol = strstr(answer, "\r\n"), *body = strstr(answer, "\r\n\r\n");
        char *out = NULL;

        ck_assert_ptr_nonnull(eol);
        ck_assert_ptr_nonnull(body);
        ck_assert_int_ge(asprintf(&out, "%.*s\n%s", (int) (eol - answer), answer, body + 4), 0);
        return out;
}

START_TEST(test_metrics_http_answers_on_a_unix_socket) {
        _cleanup_free_ char *metrics = NULL, *healthz = NULL, *readyz = NULL, *missing = NULL, *post = NULL;
        _cleanup_free_ char *head = NULL, *a = NULL, *b = NULL, *c = NULL, *d = NULL;
        kdp_metrics_resource *r;
        struct stat st;
        rig g;

        rig_init(&g);
        ck_assert_int_eq(kdp_metrics_resource_add(g.m, "example.com/widget", &r), 0);
        ck_assert_int_eq(kdp_metrics_http_new(g.m, g.path, (gid_t) -1, &g.h), 0);
        ck_assert_int_eq(lstat(g.path, &st), 0);
        ck_assert(S_ISSOCK(st.st_mode));
        ck_assert_int_eq(st.st_mode & 07777, 0660);

        metrics = ask(g.path, "GET /metrics HTTP/1.0\r\n\r\n");
        ck_assert_msg(strncmp(metrics, "HTTP/1.1 200 OK\r\n", 17) == 0, "%s", metrics);
        ck_assert_ptr_nonnull(strstr(metrics, "\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
        ck_assert_ptr_nonnull(strstr(metrics, "\nkdp_registered{resource=\"example.com/widget\"} 0\n"));
        healthz = ask(g.path, "GET /healthz HTTP/1.0\r\n\r\n");
        a = status_and_body(healthz);
        ck_assert_str_eq(a, "HTTP/1.1 200 OK\nok\n");
        readyz = ask(g.path, "GET /readyz HTTP/1.0\r\n\r\n");
        b = status_and_body(readyz);
        ck_assert_str_eq(b, "HTTP/1.1 503 Service Unavailable\nexample.com/widget: not registered with the kubelet\n");
        missing = ask(g.path, "GET /metricsz HTTP/1.0\r\n\r\n");
        c = status_and_body(missing);
        ck_assert_str_eq(c, "HTTP/1.1 404 Not Found\nnot found: /metrics, /healthz and /readyz are served\n");
        post = ask(g.path, "POST /metrics HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc");
        d = status_and_body(post);
        ck_assert_str_eq(d, "HTTP/1.1 405 Method Not Allowed\nmethod not allowed: GET and HEAD are\n");
        ck_assert_ptr_nonnull(strstr(post, "\r\nAllow: GET, HEAD\r\n"));
        head = ask(g.path, "HEAD /readyz HTTP/1.0\r\n\r\n");
        ck_assert_ptr_nonnull(strstr(head, "HTTP/1.1 503 Service Unavailable\r\n"));
        ck_assert_str_eq(strstr(head, "\r\n\r\n"), "\r\n\r\n");        /* no body */
        kdp_metrics_resource_remove(r);
        rig_done(&g);
}
END_TEST

/* A unix socket bound at `path` whose listener is gone: a stale one. */
static void make_stale_socket(const char *path) {
        struct sockaddr_un sa;
        int fd = unix_socket(path, &sa);

        ck_assert_int_eq(bind(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        ck_assert_int_eq(close(fd), 0);
}

START_TEST(test_metrics_http_takes_a_stale_socket_and_refuses_what_is_not_one) {
        kdp_metrics_http *second = NULL;
        _cleanup_free_ char *answer = NULL;
        rig g;

        rig_init(&g);
        make_stale_socket(g.path);
        ck_assert_int_eq(kdp_metrics_http_new(g.m, g.path, (gid_t) -1, &g.h), 0);
        answer = ask(g.path, "GET /healthz HTTP/1.0\r\n\r\n");
        ck_assert_msg(strncmp(answer, "HTTP/1.1 200 OK\r\n", 17) == 0, "%s", answer);
        /* a live socket is another process's: left alone */
        ck_assert_int_eq(kdp_metrics_http_new(g.m, g.path, (gid_t) -1, &second), -EADDRINUSE);
        g.h = kdp_metrics_http_free(g.h);
        /* a file that is no socket is not ours to remove */
        ck_assert_int_eq(close(open(g.path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600)), 0);
        ck_assert_int_eq(kdp_metrics_http_new(g.m, g.path, (gid_t) -1, &second), -EEXIST);
        ck_assert_int_eq(unlink(g.path), 0);
        rig_done(&g);
}
END_TEST

START_TEST(test_metrics_http_refuses_a_bad_address) {
        kdp_metrics_http *h = NULL;
        kdp_metrics *m = NULL;

        ck_assert_int_eq(kdp_metrics_new(&(kdp_metrics_options){ 0 }, &m), 0);
        ck_assert_int_eq(kdp_metrics_http_new(m, "9400", (gid_t) -1, &h), -EINVAL);
        ck_assert_int_eq(kdp_metrics_http_new(m, "192.0.2.1:0", (gid_t) -1, &h), -EADDRNOTAVAIL);   /* no address here */
        ck_assert_ptr_null(h);
        kdp_metrics_free(m);
}
END_TEST

/* GET /healthz over TCP to `host` (a literal) and the port of `bound` ("HOST:PORT", "[HOST]:PORT"): the status line. */
static char *healthz_over_tcp(int family, const char *host, const char *bound) {
        struct sockaddr_storage ss = { .ss_family = (sa_family_t) family };
        struct sockaddr_in *in = (struct sockaddr_in *) &ss;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) &ss;
        const char *req = "GET /healthz HTTP/1.0\r\n\r\n";
        uint16_t port = (uint16_t) atoi(strrchr(bound, ':') + 1);
        _cleanup_close_ int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        char buf[256] = "";

        ck_assert_int_ge(fd, 0);
        if (family == AF_INET) {
                in->sin_port = htons(port);
                ck_assert_int_eq(inet_pton(AF_INET, host, &in->sin_addr), 1);
        } else {
                in6->sin6_port = htons(port);
                ck_assert_int_eq(inet_pton(AF_INET6, host, &in6->sin6_addr), 1);
        }
        ck_assert_int_eq(connect(fd, (struct sockaddr *) &ss, sizeof(ss)), 0);
        ck_assert_int_eq(write(fd, req, strlen(req)), (ssize_t) strlen(req));
        ck_assert_int_gt(read(fd, buf, sizeof(buf) - 1), 0);
        *strstr(buf, "\r\n") = '\0';
        return strdup(buf);
}

START_TEST(test_metrics_http_serves_tcp_on_ipv4_and_ipv6) {
        _cleanup_free_ char *v4 = NULL, *v6 = NULL;
        kdp_metrics_http *h = NULL;
        kdp_metrics *m = NULL;
        int r;

        ck_assert_int_eq(kdp_metrics_new(&(kdp_metrics_options){ .stall_ms = 10000 }, &m), 0);
        ck_assert_int_eq(kdp_metrics_http_new(m, "127.0.0.1:0", (gid_t) -1, &h), 0);
        ck_assert_int_eq(strncmp(kdp_metrics_http_bound(h), "127.0.0.1:", 10), 0);
        v4 = healthz_over_tcp(AF_INET, "127.0.0.1", kdp_metrics_http_bound(h));
        ck_assert_str_eq(v4, "HTTP/1.1 200 OK");
        h = kdp_metrics_http_free(h);
        r = kdp_metrics_http_new(m, "[::1]:0", (gid_t) -1, &h);
        if (r == -EADDRNOTAVAIL)
                fprintf(stderr, "no IPv6 loopback here: its half skipped\n");
        else {
                ck_assert_int_eq(r, 0);
                ck_assert_int_eq(strncmp(kdp_metrics_http_bound(h), "[::1]:", 6), 0);
                v6 = healthz_over_tcp(AF_INET6, "::1", kdp_metrics_http_bound(h));
                ck_assert_str_eq(v6, "HTTP/1.1 200 OK");
        }
        kdp_metrics_http_free(h);
        kdp_metrics_free(m);
}
END_TEST

static Suite *metrics_http_suite(void) {
        Suite *s = suite_create("metrics-http");
        TCase *address = tcase_create("address"), *serve = tcase_create("serve");

        tcase_set_timeout(address, 10);
        tcase_add_test(address, test_metrics_http_parses_addresses);
        tcase_add_test(address, test_metrics_http_refuses_what_is_no_address);
        suite_add_tcase(s, address);
        tcase_set_timeout(serve, 30);
        tcase_add_test(serve, test_metrics_http_answers_on_a_unix_socket);
        tcase_add_test(serve, test_metrics_http_takes_a_stale_socket_and_refuses_what_is_not_one);
        tcase_add_test(serve, test_metrics_http_refuses_a_bad_address);
        tcase_add_test(serve, test_metrics_http_serves_tcp_on_ipv4_and_ipv6);
        suite_add_tcase(s, serve);
        return s;
}

int main(void) {
        return kdp_test_run(metrics_http_suite());
}
