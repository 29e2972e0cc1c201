/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The SR-IOV backend's view of links and default routes (plugins/sriov/link.c)
 * against the real kernel. Each test runs in a network namespace of its own
 * (kdp-test-netns.h: unshare(CLONE_NEWNET) in the test's process, so root is
 * needed: else the program exits 77), where it builds veth pairs and routes
 * with ip(8), then runs the module's fd callback, as kdpd's loop would, until the state each
 * step must give is seen (a generous deadline, no timing asserted). A "pod" is
 * a child process in a further namespace that a veth end is moved into (§6).
 * Messages the kernel would not send (an unknown attribute, a malformed one,
 * a bridge port event) are sent to the module's socket from a socket of the
 * test.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <kdp/backend.h>
#include <kdp/cleanup.h>
#include <kdp/log.h>

#include "backend-ctx.h"
#include "kdp-test.h"
#include "kdp-test-netns.h"
#include "sriov.h"

#define DEADLINE_MS 120000      /* a loaded machine, valgrind: the kernel answers in microseconds anyway */
#define FAKE_NOW_USEC UINT64_C(5000000000)

/* ---- the module as the backend runs it, with kdpd's loop and clock faked ---- */

typedef struct link_run {
        kdp_backend_ctx *ctx;
        sriov_link *link;
        int watched_fd;                 /* what the module asked the loop to watch; -1: nothing */
        kdp_backend_fd_fn on_fd;
        unsigned n_watches, n_unwatches;
        int64_t rescan_ms;              /* the last kdp_backend_rescan_after(); -1: none */
        uint64_t now_usec;
        int changed;                    /* the callback's results since the last reset, ORed */
} link_run;

static uint64_t fake_clock(void *data) {
        return ((link_run *) data)->now_usec;
}

static int host_watch_fd(void *data, int fd, kdp_backend_fd_fn fn) {
        link_run *run = data;

        ck_assert_int_eq(run->watched_fd, -1);
        run->watched_fd = fd;
        run->on_fd = fn;
        run->n_watches++;
        return 0;
}

static void host_unwatch_fd(void *data, int fd) {
        link_run *run = data;

        ck_assert_int_eq(fd, run->watched_fd);
        run->watched_fd = -1;
        run->n_unwatches++;
}

static int host_rescan_after(void *data, uint32_t ms) {
        ((link_run *) data)->rescan_ms = ms;
        return 0;
}

static const kdp_backend_host host = {
        .watch_fd = host_watch_fd, .unwatch_fd = host_unwatch_fd, .rescan_after = host_rescan_after,
};

/* The backend's fd callback: its state holds the sriov_link. */
static int backend_on_link_fd(void *state, int fd) {
        link_run *run = state;

        ck_assert_int_eq(fd, sriov_link_fd(run->link));
        return sriov_link_dispatch(run->link);
}

static void run_open(link_run *run, bool with_host) {
        const char *roots[_KDP_PATH_KIND_MAX] = { 0 };

        *run = (link_run){ .watched_fd = -1, .rescan_ms = -1, .now_usec = FAKE_NOW_USEC };
        ck_assert_int_eq(kdp_backend_ctx_new("sriov", roots, NULL, NULL, &run->ctx), 0);
        if (with_host)
                kdp_backend_ctx_set_host(run->ctx, &host, run);
        kdp_backend_ctx_set_clock(run->ctx, fake_clock, run);
        ck_assert_int_eq(sriov_link_new(run->ctx, backend_on_link_fd, &run->link), 0);
        ck_assert_int_ge(sriov_link_fd(run->link), 0);
        if (with_host) {
                ck_assert_uint_eq(run->n_watches, 1);
                ck_assert_int_eq(run->watched_fd, sriov_link_fd(run->link));
                ck_assert_ptr_eq(run->on_fd, backend_on_link_fd);
        }
}

static void run_close(link_run *run) {
        unsigned expected = run->n_unwatches + (run->watched_fd >= 0 ? 1 : 0);

        run->link = sriov_link_free(run->link);
        ck_assert_int_eq(run->watched_fd, -1);          /* free ended the watch */
        ck_assert_uint_eq(run->n_unwatches, expected);
        run->ctx = kdp_backend_ctx_free(run->ctx);
}

/* One turn of kdpd's loop: the callback when there is a watch, else the caller's own dispatch. */
static void run_dispatch(link_run *run) {
        int r = run->watched_fd >= 0 ? run->on_fd(run, run->watched_fd) : sriov_link_dispatch(run->link);

        ck_assert_int_ge(r, 0);
        ck_assert_int_le(r, 1);
        run->changed |= r;
}

/* Runs the callback until `ifname` is `state` and its default route is `dr` (-1: either, for both). */
static void wait_for(link_run *run, const char *ifname, int state, int dr) {
        int64_t deadline = kdp_test_monotonic_ms() + DEADLINE_MS;

        for (;;) {
                struct pollfd p = { .fd = sriov_link_fd(run->link), .events = POLLIN };
                int64_t left;
                int r;

                run_dispatch(run);
                if ((state < 0 || (int) sriov_link_get_state(run->link, ifname) == state) &&
                    (dr < 0 || sriov_link_has_default_route(run->link, ifname) == (dr == 1)))
                        return;
                left = deadline - kdp_test_monotonic_ms();
                ck_assert_msg(left > 0, "%s: still %s, default route %d; waited for %s, %d", ifname,
                              sriov_link_state_to_string(sriov_link_get_state(run->link, ifname)),
                              sriov_link_has_default_route(run->link, ifname),
                              state < 0 ? "any" : sriov_link_state_to_string(state), dr);
                r = poll(&p, 1, (int) left);
                ck_assert_int_ge(r, 0);
        }
}

static void wait_route(link_run *run, const char *ifname, bool dr) {
        wait_for(run, ifname, -1, dr);
}

/* ---- ip(8) ---- */

/* A veth pair a/b, both admin-up, seen up. */
static void veth_up(link_run *run, const char *a, const char *b) {
        kdp_test_sh("ip link add %s type veth peer name %s && ip link set %s up && ip link set %s up", a, b, a, b);
        wait_for(run, a, SRIOV_LINK_UP, -1);
        wait_for(run, b, SRIOV_LINK_UP, -1);
}

/* ---- messages sent to the module's socket by another socket ---- */

typedef struct injector {
        int fd;
        unsigned dst;                   /* the module's port id */
        char buf[4096];
} injector;

static void injector_open(injector *in, const link_run *run) {
        struct sockaddr_nl addr;
        socklen_t len = sizeof(addr);

        in->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
        ck_assert_int_ge(in->fd, 0);
        ck_assert_int_eq(getsockname(sriov_link_fd(run->link), (struct sockaddr *) &addr, &len), 0);
        in->dst = addr.nl_pid;
}

static struct nlmsghdr *injector_link_msg(injector *in, uint16_t type, uint8_t family, int ifindex, unsigned flags) {
        struct nlmsghdr *nlh;
        struct ifinfomsg *ifi;

        memset(in->buf, 0, sizeof(in->buf));            /* the attributes' padding too */
        nlh = mnl_nlmsg_put_header(in->buf);
        nlh->nlmsg_type = type;
        ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
        ifi->ifi_family = family;
        ifi->ifi_index = ifindex;
        ifi->ifi_flags = flags;
        return nlh;
}

static void injector_send(injector *in, const struct nlmsghdr *nlh) {
        struct sockaddr_nl addr = { .nl_family = AF_NETLINK, .nl_pid = in->dst };

        ck_assert_int_eq(sendto(in->fd, nlh, nlh->nlmsg_len, 0, (struct sockaddr *) &addr, sizeof(addr)),
                         (ssize_t) nlh->nlmsg_len);
}

/* ---- link state ---- */

START_TEST(test_sriov_link_state_follows_admin_state_and_carrier) {
        socklen_t len = sizeof(int);
        link_run run;
        int size;

        kdp_test_netns_enter();
        run_open(&run, true);
        /* a receive buffer for bursts of events: 4 MiB, which the kernel doubles for its overhead */
        ck_assert_int_eq(getsockopt(sriov_link_fd(run.link), SOL_SOCKET, SO_RCVBUF, &size, &len), 0);
        ck_assert_int_eq(size, 8 << 20);
        /* what the dump at open saw: lo, down */
        ck_assert_int_eq(sriov_link_get_state(run.link, "lo"), SRIOV_LINK_DOWN);
        ck_assert_int_eq(sriov_link_get_state(run.link, "vA"), SRIOV_LINK_UNKNOWN);

        kdp_test_sh("ip link add vA type veth peer name vB");
        wait_for(&run, "vA", SRIOV_LINK_DOWN, 0);
        wait_for(&run, "vB", SRIOV_LINK_DOWN, 0);
        /* admin-up with its peer down: no carrier, operstate lowerlayerdown */
        kdp_test_sh("ip link set vA up");
        /* lo: operstate "unknown" (its driver does not tell), carrier on: up; and an event after vA's */
        kdp_test_sh("ip link set lo up");
        wait_for(&run, "lo", SRIOV_LINK_UP, 0);
        ck_assert_int_eq(sriov_link_get_state(run.link, "vA"), SRIOV_LINK_DOWN);
        kdp_test_sh("ip link set vB up");
        wait_for(&run, "vA", SRIOV_LINK_UP, 0);
        wait_for(&run, "vB", SRIOV_LINK_UP, 0);
        /* the peer down takes vA's carrier */
        kdp_test_sh("ip link set vB down");
        wait_for(&run, "vA", SRIOV_LINK_DOWN, 0);
        wait_for(&run, "vB", SRIOV_LINK_DOWN, 0);
        kdp_test_sh("ip link set lo down");
        wait_for(&run, "lo", SRIOV_LINK_DOWN, 0);
        ck_assert_int_eq(sriov_link_get_state(run.link, "nosuch0"), SRIOV_LINK_UNKNOWN);
        ck_assert(!sriov_link_has_default_route(run.link, "nosuch0"));
        run_close(&run);
}
END_TEST

START_TEST(test_sriov_link_state_follows_renames_and_deletions) {
        link_run run;

        kdp_test_netns_enter();
        run_open(&run, true);
        veth_up(&run, "vA", "vB");
        kdp_test_sh("ip link set vA down && ip link set vA name vC && ip link set vC up");
        wait_for(&run, "vA", SRIOV_LINK_UNKNOWN, 0);
        wait_for(&run, "vC", SRIOV_LINK_UP, 0);
        /* a new link takes the old name */
        kdp_test_sh("ip link add vA type veth peer name vD");
        wait_for(&run, "vA", SRIOV_LINK_DOWN, 0);
        /* deleting one end of a pair deletes both */
        kdp_test_sh("ip link del vC");
        wait_for(&run, "vC", SRIOV_LINK_UNKNOWN, 0);
        wait_for(&run, "vB", SRIOV_LINK_UNKNOWN, 0);
        ck_assert_int_eq(sriov_link_get_state(run.link, "vA"), SRIOV_LINK_DOWN);
        run_close(&run);
}
END_TEST

START_TEST(test_sriov_link_moved_into_a_pod_is_unknown_not_down) {
        _cleanup_free_ char *back = NULL;
        link_run run;
        kdp_test_pod p;

        kdp_test_netns_enter();
        run_open(&run, true);
        veth_up(&run, "vA", "vB");
        ck_assert_int_eq(sriov_link_set_served(run.link, (const char *const[]){ "vB" }, 1), 0);
        kdp_test_pod_start(&p);

        run.changed = 0;
        kdp_test_sh("ip link set vB netns %d", (int) p.pid);
        wait_for(&run, "vB", SRIOV_LINK_UNKNOWN, 0);
        ck_assert_int_eq(run.changed, 1);
        /* its peer stays here and loses its carrier */
        wait_for(&run, "vA", SRIOV_LINK_DOWN, 0);

        /* back from the pod: known again, admin-down as a moved link is */
        run.changed = 0;
        ck_assert_int_ge(asprintf(&back, "nsenter --net=/proc/%d/ns/net ip link set vB netns %d", (int) p.pid,
                                  (int) getpid()), 0);
        kdp_test_sh("%s", back);
        wait_for(&run, "vB", SRIOV_LINK_DOWN, 0);
        ck_assert_int_eq(run.changed, 1);
        kdp_test_sh("ip link set vB up");
        wait_for(&run, "vB", SRIOV_LINK_UP, 0);
        wait_for(&run, "vA", SRIOV_LINK_UP, 0);
        kdp_test_pod_stop(&p);
        run_close(&run);
}
END_TEST

START_TEST(test_sriov_link_reports_changes_of_served_links_only) {
        link_run run;

        kdp_test_netns_enter();
        run_open(&run, true);
        veth_up(&run, "vA", "vB");
        veth_up(&run, "vC", "vD");
        ck_assert_int_eq(sriov_link_set_served(run.link, (const char *const[]){ "vA", "vZ" }, 2), 0);

        /* vC, vD are not served: nothing to rescan for */
        run.changed = 0;
        kdp_test_sh("ip link set vD down");
        wait_for(&run, "vC", SRIOV_LINK_DOWN, -1);
        kdp_test_sh("ip route add default dev vC");
        wait_for(&run, "vC", SRIOV_LINK_DOWN, 1);       /* no carrier, but admin-up: the route stays */
        kdp_test_sh("ip link set vD up");
        wait_for(&run, "vC", SRIOV_LINK_UP, 1);
        ck_assert_int_eq(run.changed, 0);

        /* vA's link state */
        kdp_test_sh("ip link set vB down");
        wait_for(&run, "vA", SRIOV_LINK_DOWN, 0);
        ck_assert_int_eq(run.changed, 1);
        run.changed = 0;
        kdp_test_sh("ip link set vB up");
        wait_for(&run, "vA", SRIOV_LINK_UP, 0);
        ck_assert_int_eq(run.changed, 1);
        /* vA's default route */
        run.changed = 0;
        kdp_test_sh("ip route add default dev vA metric 10");
        wait_for(&run, "vA", SRIOV_LINK_UP, 1);
        ck_assert_int_eq(run.changed, 1);
        /* vZ appears */
        run.changed = 0;
        kdp_test_sh("ip link add vZ type veth peer name vY");
        wait_for(&run, "vZ", SRIOV_LINK_DOWN, 0);
        ck_assert_int_eq(run.changed, 1);

        /* a new served set: vA no longer counts */
        ck_assert_int_eq(sriov_link_set_served(run.link, (const char *const[]){ "vC" }, 1), 0);
        run.changed = 0;
        kdp_test_sh("ip link set vB down");
        wait_for(&run, "vA", SRIOV_LINK_DOWN, 1);
        ck_assert_int_eq(run.changed, 0);
        ck_assert_int_eq(sriov_link_set_served(run.link, NULL, 0), 0);
        run_close(&run);
}
END_TEST

START_TEST(test_sriov_link_without_kdpd_is_dispatched_by_its_owner) {
        link_run run;

        kdp_test_netns_enter();
        run_open(&run, false);
        ck_assert_uint_eq(run.n_watches, 0);
        kdp_test_sh("ip link add vA type veth peer name vB");
        wait_for(&run, "vA", SRIOV_LINK_DOWN, 0);
        run_close(&run);
}
END_TEST

/* ---- messages the kernel would not send ---- */

START_TEST(test_sriov_link_ignores_unknown_attributes_and_skips_malformed_messages) {
        link_run run;
        injector in;
        struct nlmsghdr *nlh;

        kdp_test_netns_enter();
        run_open(&run, true);
        injector_open(&in, &run);

        /* an attribute newer than our headers, between known ones */
        nlh = injector_link_msg(&in, RTM_NEWLINK, AF_UNSPEC, 9001, IFF_UP);
        mnl_attr_put_strz(nlh, IFLA_IFNAME, "fake0");
        mnl_attr_put_u32(nlh, IFLA_MAX + 7, 42);
        mnl_attr_put_u8(nlh, IFLA_OPERSTATE, 6 /* IF_OPER_UP */);
        injector_send(&in, nlh);
        wait_for(&run, "fake0", SRIOV_LINK_UP, 0);

        /* an operstate of 4 bytes, a name without its NUL, a message without a name: skipped */
        nlh = injector_link_msg(&in, RTM_NEWLINK, AF_UNSPEC, 9002, IFF_UP);
        mnl_attr_put_strz(nlh, IFLA_IFNAME, "fake1");
        mnl_attr_put_u32(nlh, IFLA_OPERSTATE, 6);
        injector_send(&in, nlh);
        nlh = injector_link_msg(&in, RTM_NEWLINK, AF_UNSPEC, 9003, IFF_UP);
        mnl_attr_put(nlh, IFLA_IFNAME, 5, "fake2");
        injector_send(&in, nlh);
        nlh = injector_link_msg(&in, RTM_NEWLINK, AF_UNSPEC, 9004, IFF_UP);
        mnl_attr_put_u8(nlh, IFLA_OPERSTATE, 6);
        injector_send(&in, nlh);
        /* a truncated header */
        nlh = mnl_nlmsg_put_header(in.buf);
        nlh->nlmsg_type = RTM_NEWLINK;
        mnl_nlmsg_put_extra_header(nlh, 4);
        injector_send(&in, nlh);
        /* a bridge port leaving its bridge: not the link going away */
        nlh = injector_link_msg(&in, RTM_DELLINK, AF_BRIDGE, 9001, IFF_UP);
        mnl_attr_put_strz(nlh, IFLA_IFNAME, "fake0");
        injector_send(&in, nlh);
        /* then a good one: all above were read by the time it is seen */
        nlh = injector_link_msg(&in, RTM_NEWLINK, AF_UNSPEC, 9005, 0);
        mnl_attr_put_strz(nlh, IFLA_IFNAME, "fake5");
        injector_send(&in, nlh);
        wait_for(&run, "fake5", SRIOV_LINK_DOWN, 0);
        ck_assert_int_eq(sriov_link_get_state(run.link, "fake1"), SRIOV_LINK_UNKNOWN);
        ck_assert_int_eq(sriov_link_get_state(run.link, "fake2"), SRIOV_LINK_UNKNOWN);
        ck_assert_int_eq(sriov_link_get_state(run.link, "fake0"), SRIOV_LINK_UP);

        /* the real deletion */
        nlh = injector_link_msg(&in, RTM_DELLINK, AF_UNSPEC, 9001, 0);
        mnl_attr_put_strz(nlh, IFLA_IFNAME, "fake0");
        injector_send(&in, nlh);
        wait_for(&run, "fake0", SRIOV_LINK_UNKNOWN, 0);
        (void) close(in.fd);
        run_close(&run);
}
END_TEST

/* ---- default routes ---- */

START_TEST(test_sriov_link_default_route_ipv4) {
        link_run run;

        kdp_test_netns_enter();
        run_open(&run, true);
        veth_up(&run, "vA", "vB");
        veth_up(&run, "vC", "vD");

        kdp_test_sh("ip route add default dev vA");
        wait_route(&run, "vA", true);
        ck_assert(!sriov_link_has_default_route(run.link, "vB"));
        kdp_test_sh("ip route del default dev vA");
        wait_route(&run, "vA", false);

        /* through a gateway */
        kdp_test_sh("ip addr add 10.7.0.2/24 dev vB && ip route add default via 10.7.0.1 metric 20");
        wait_route(&run, "vB", true);
        ck_assert(!sriov_link_has_default_route(run.link, "vA"));

        /* other tables and other prefixes do not count: seen once a later default route is */
        kdp_test_sh("ip route add default dev vA table 100 && ip route add 10.9.0.0/16 dev vA && "
           "ip route add 0.0.0.0/1 dev vA && ip route add default dev vC metric 30");
        wait_route(&run, "vC", true);
        ck_assert(!sriov_link_has_default_route(run.link, "vA"));
        kdp_test_sh("ip route del default via 10.7.0.1 metric 20");
        wait_route(&run, "vB", false);
        ck_assert(sriov_link_has_default_route(run.link, "vC"));

        /* multipath: every nexthop's link carries it */
        kdp_test_sh("ip route add default metric 40 nexthop dev vA nexthop via 10.7.0.1 dev vB");
        wait_route(&run, "vA", true);
        wait_route(&run, "vB", true);
        kdp_test_sh("ip route del default metric 40");
        wait_route(&run, "vA", false);
        wait_route(&run, "vB", false);
        ck_assert(sriov_link_has_default_route(run.link, "vC"));
        run_close(&run);
}
END_TEST

START_TEST(test_sriov_link_default_route_ipv6) {
        link_run run;

        kdp_test_netns_enter();
        run_open(&run, true);
        veth_up(&run, "vA", "vB");

        kdp_test_sh("ip -6 route add default dev vA");
        wait_route(&run, "vA", true);
        ck_assert(!sriov_link_has_default_route(run.link, "vB"));
        kdp_test_sh("ip -6 route del default dev vA");
        wait_route(&run, "vA", false);

        kdp_test_sh("ip -6 route add default via fe80::1 dev vB");
        wait_route(&run, "vB", true);
        kdp_test_sh("ip -6 route del default via fe80::1 dev vB");
        wait_route(&run, "vB", false);

        kdp_test_sh("ip -6 route add default metric 5 nexthop via fe80::1 dev vA nexthop via fe80::2 dev vB");
        wait_route(&run, "vA", true);
        wait_route(&run, "vB", true);
        /* one nexthop removed: the route is re-read */
        kdp_test_sh("ip -6 route del default metric 5 via fe80::1 dev vA");
        wait_route(&run, "vA", false);
        ck_assert(sriov_link_has_default_route(run.link, "vB"));
        kdp_test_sh("ip -6 route del default metric 5");
        wait_route(&run, "vB", false);

        /* a table other than main does not count */
        kdp_test_sh("ip -6 route add default dev vA table 100 && ip -6 route add default dev vB metric 9");
        wait_route(&run, "vB", true);
        ck_assert(!sriov_link_has_default_route(run.link, "vA"));
        run_close(&run);
}
END_TEST

START_TEST(test_sriov_link_default_route_goes_with_its_link) {
        _cleanup_free_ char *routes = NULL;
        link_run run;
        kdp_test_pod p;

        kdp_test_netns_enter();
        run_open(&run, true);
        veth_up(&run, "vA", "vB");
        veth_up(&run, "vC", "vD");

        /* the kernel drops an IPv4 route whose link goes admin-down, and says nothing */
        kdp_test_sh("ip route add default dev vA");
        wait_route(&run, "vA", true);
        kdp_test_sh("ip link set vA down");
        wait_for(&run, "vA", SRIOV_LINK_DOWN, 0);
        kdp_test_sh("ip link set vA up");
        wait_for(&run, "vA", SRIOV_LINK_UP, 0);

        /* multipath: it stays while one of its links is up, and goes with the last one */
        kdp_test_sh("ip route add default nexthop dev vA nexthop dev vC");
        wait_route(&run, "vA", true);
        wait_route(&run, "vC", true);
        kdp_test_sh("ip link set vA down");
        wait_for(&run, "vA", SRIOV_LINK_DOWN, -1);
        routes = kdp_test_sh_output("ip -4 route show default");
        ck_assert_msg(strstr(routes, "nexthop dev vA") && strstr(routes, "nexthop dev vC"), "%s", routes);
        ck_assert(sriov_link_has_default_route(run.link, "vA"));
        ck_assert(sriov_link_has_default_route(run.link, "vC"));
        kdp_test_sh("ip link set vC down");
        wait_for(&run, "vC", SRIOV_LINK_DOWN, 0);
        ck_assert(!sriov_link_has_default_route(run.link, "vA"));
        free(routes);
        routes = kdp_test_sh_output("ip -4 route show default");
        ck_assert_str_eq(routes, "");

        /* a link carrying IPv6 and IPv4 default routes moved into a pod: gone with it, and back without */
        kdp_test_sh("ip link set vA up && ip link set vC up && ip route add default dev vD && "
                    "ip -6 route add default dev vD");
        wait_for(&run, "vD", SRIOV_LINK_UP, 1);
        kdp_test_pod_start(&p);
        kdp_test_sh("ip link set vD netns %d", (int) p.pid);
        wait_for(&run, "vD", SRIOV_LINK_UNKNOWN, 0);
        kdp_test_sh("nsenter --net=/proc/%d/ns/net ip link set vD netns %d", (int) p.pid, (int) getpid());
        kdp_test_sh("ip link set vD up");
        wait_for(&run, "vD", SRIOV_LINK_UP, 0);
        kdp_test_pod_stop(&p);
        run_close(&run);
}
END_TEST

/* ---- recovery ---- */

/* A burst of `n` flips of vA's admin state, then the changes `tail`, by one ip -batch (no read between). */
static void burst(const char *tail, int n) {
        _cleanup_(kdp_test_unlink_freep) char *path = NULL;
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        ck_assert_ptr_nonnull(f);
        for (int i = 0; i < n; i++)
                fprintf(f, "link set vA %s\n", i % 2 ? "up" : "down");
        fputs(tail, f);
        ck_assert_int_eq(fclose(f), 0);
        path = kdp_test_write_temp("sriov-link-burst", ".ip", text, size);
        free(text);
        kdp_test_sh("ip -batch %s", path);
}

START_TEST(test_sriov_link_rereads_everything_after_lost_events) {
        kdp_test_capture c;
        _cleanup_free_ char *log = NULL, *log2 = NULL;
        const char *p;
        int size = 2048;                /* the kernel's minimum: a few messages */
        link_run run;

        kdp_test_netns_enter();
        run_open(&run, true);
        veth_up(&run, "vA", "vB");
        veth_up(&run, "vC", "vD");
        kdp_test_sh("ip link add vE type veth peer name vF");
        wait_for(&run, "vE", SRIOV_LINK_DOWN, 0);
        ck_assert_int_eq(setsockopt(sriov_link_fd(run.link), SOL_SOCKET, SO_RCVBUF, &size, sizeof(size)), 0);

        /* the tail's events come after the socket overflowed: only the re-read can show them */
        kdp_test_capture_begin(&c);
        burst("link set vA up\nlink set vC down\nroute add default dev vA\nlink del vE\n", 400);
        wait_for(&run, "vE", SRIOV_LINK_UNKNOWN, 0);
        wait_for(&run, "vF", SRIOV_LINK_UNKNOWN, 0);
        wait_for(&run, "vC", SRIOV_LINK_DOWN, 0);
        wait_for(&run, "vA", SRIOV_LINK_UP, 1);
        log = kdp_test_capture_end(&c);
        p = log;
        kdp_test_expect_line(&p, 'W', "link.c", "\"Lost rtnetlink events, re-reading links and routes\" backend=\"sriov\"");
        ck_assert_msg(!strstr(p, "Lost rtnetlink events"), "warned twice: %s", log);

        /* a second overflow: handled the same, told only at --v=4 (vA's first flip flushed its route) */
        kdp_log_set_verbosity(4);
        kdp_test_capture_begin(&c);
        burst("link set vA up\nlink set vC up\n", 400);
        wait_for(&run, "vC", SRIOV_LINK_UP, 0);
        wait_for(&run, "vA", SRIOV_LINK_UP, 0);
        log2 = kdp_test_capture_end(&c);
        kdp_log_set_verbosity(0);
        p = log2;
        kdp_test_expect_line(&p, 'I', "link.c", "\"Lost rtnetlink events, re-reading links and routes\" backend=\"sriov\"");
        ck_assert_msg(log2[0] != 'W' && !strstr(log2, "\nW"), "warned again: %s", log2);
        run_close(&run);
}
END_TEST

START_TEST(test_sriov_link_reopens_a_failed_socket_after_a_backoff) {
        kdp_test_capture c;
        _cleanup_free_ char *log = NULL;
        const char *p;
        link_run run;
        int pipefd[2];
        int old;

        kdp_test_netns_enter();
        run_open(&run, true);
        veth_up(&run, "vA", "vB");
        ck_assert_int_eq(sriov_link_set_served(run.link, (const char *const[]){ "vB" }, 1), 0);

        /* the socket's fd now reads as no socket at all */
        old = sriov_link_fd(run.link);
        ck_assert_int_eq(pipe2(pipefd, O_CLOEXEC), 0);
        ck_assert_int_eq(dup2(pipefd[0], old), old);
        (void) close(pipefd[0]);
        (void) close(pipefd[1]);
        kdp_test_capture_begin(&c);
        ck_assert_int_eq(run.on_fd(&run, old), 0);
        log = kdp_test_capture_end(&c);
        p = log;
        kdp_test_expect_line(&p, 'E', "link.c",
                             "\"Failed to read rtnetlink, retrying later\" backend=\"sriov\" retryMs=1000 "
                             "err=\"Socket operation on non-socket\"");
        ck_assert_str_eq(p, "");
        ck_assert_uint_eq(run.n_unwatches, 1);
        ck_assert_int_eq(run.watched_fd, -1);
        ck_assert_int_eq(sriov_link_fd(run.link), -1);
        ck_assert_int_eq(run.rescan_ms, 1000);
        /* the last table still answers */
        ck_assert_int_eq(sriov_link_get_state(run.link, "vB"), SRIOV_LINK_UP);
        ck_assert_int_eq(sriov_link_dispatch(run.link), 0);

        /* meanwhile vB goes down; before the backoff has passed, no new socket */
        kdp_test_sh("ip link set vB down");
        run.rescan_ms = -1;
        ck_assert_int_eq(sriov_link_retry(run.link), -ENOTSOCK);
        ck_assert_int_eq(run.rescan_ms, 1000);
        run.now_usec += 400000;
        ck_assert_int_eq(sriov_link_retry(run.link), -ENOTSOCK);
        ck_assert_int_eq(run.rescan_ms, 600);
        ck_assert_uint_eq(run.n_watches, 1);
        ck_assert_int_eq(sriov_link_get_state(run.link, "vB"), SRIOV_LINK_UP);

        /* then a new socket, which reads the links and routes at once */
        run.now_usec += 600000;
        kdp_test_capture_begin(&c);
        ck_assert_int_eq(sriov_link_retry(run.link), 0);
        free(log);
        log = kdp_test_capture_end(&c);
        p = log;
        kdp_test_expect_line(&p, 'I', "link.c", "\"Reopened rtnetlink socket\" backend=\"sriov\"");
        ck_assert_uint_eq(run.n_watches, 2);
        ck_assert_int_ge(run.watched_fd, 0);
        ck_assert_int_eq(run.watched_fd, sriov_link_fd(run.link));
        ck_assert_int_eq(sriov_link_get_state(run.link, "vB"), SRIOV_LINK_DOWN);
        ck_assert_int_eq(sriov_link_retry(run.link), 0);
        /* the change is reported by the next callback, and events flow again */
        ck_assert_int_eq(run.on_fd(&run, run.watched_fd), 1);
        ck_assert_int_eq(run.on_fd(&run, run.watched_fd), 0);
        run.changed = 0;
        kdp_test_sh("ip link set vB up");
        wait_for(&run, "vB", SRIOV_LINK_UP, 0);
        ck_assert_int_eq(run.changed, 1);

        /* a new failure waits the shortest backoff again */
        old = sriov_link_fd(run.link);
        ck_assert_int_eq(pipe2(pipefd, O_CLOEXEC), 0);
        ck_assert_int_eq(dup2(pipefd[0], old), old);
        (void) close(pipefd[0]);
        (void) close(pipefd[1]);
        kdp_test_capture_begin(&c);
        ck_assert_int_eq(run.on_fd(&run, old), 0);
        free(log);
        log = kdp_test_capture_end(&c);
        ck_assert_ptr_nonnull(strstr(log, "retryMs=1000 "));
        ck_assert_int_eq(run.rescan_ms, 1000);
        run_close(&run);
}
END_TEST

START_TEST(test_sriov_link_drops_a_socket_given_a_message_longer_than_its_buffer) {
        kdp_test_capture c;
        _cleanup_free_ char *log = NULL, *big = calloc(1, 40000);
        struct sockaddr_nl addr;
        struct nlmsghdr *nlh = (struct nlmsghdr *) big;
        const char *p;
        link_run run;
        injector in;

        kdp_test_netns_enter();
        run_open(&run, true);
        injector_open(&in, &run);
        ck_assert_ptr_nonnull(big);
        nlh->nlmsg_len = 40000;
        nlh->nlmsg_type = RTM_NEWLINK;
        addr = (struct sockaddr_nl){ .nl_family = AF_NETLINK, .nl_pid = in.dst };
        ck_assert_int_eq(sendto(in.fd, big, 40000, 0, (struct sockaddr *) &addr, sizeof(addr)), 40000);

        kdp_test_capture_begin(&c);
        ck_assert_int_eq(run.on_fd(&run, run.watched_fd), 0);
        log = kdp_test_capture_end(&c);
        p = log;
        kdp_test_expect_line(&p, 'E', "link.c",
                             "\"Failed to read rtnetlink, retrying later\" backend=\"sriov\" retryMs=1000 "
                             "err=\"Message too long\"");
        ck_assert_int_eq(sriov_link_fd(run.link), -1);
        ck_assert_int_eq(run.rescan_ms, 1000);
        run.now_usec += 1000000;
        kdp_test_capture_begin(&c);
        ck_assert_int_eq(sriov_link_retry(run.link), 0);
        free(kdp_test_capture_end(&c));
        kdp_test_sh("ip link add vA type veth peer name vB");
        wait_for(&run, "vA", SRIOV_LINK_DOWN, 0);
        (void) close(in.fd);
        run_close(&run);
}
END_TEST

START_TEST(test_sriov_link_state_names) {
        ck_assert_str_eq(sriov_link_state_to_string(SRIOV_LINK_UNKNOWN), "unknown");
        ck_assert_str_eq(sriov_link_state_to_string(SRIOV_LINK_DOWN), "down");
        ck_assert_str_eq(sriov_link_state_to_string(SRIOV_LINK_UP), "up");
        ck_assert_ptr_null(sriov_link_state_to_string(_SRIOV_LINK_STATE_MAX));
        ck_assert_ptr_null(sriov_link_state_to_string(_SRIOV_LINK_STATE_INVALID));
}
END_TEST

static Suite *sriov_link_suite(void) {
        Suite *s = suite_create("sriov-link");
        TCase *tc;

        tc = tcase_create("state");
        tcase_set_timeout(tc, 240);
        tcase_add_test(tc, test_sriov_link_state_follows_admin_state_and_carrier);
        tcase_add_test(tc, test_sriov_link_state_follows_renames_and_deletions);
        tcase_add_test(tc, test_sriov_link_moved_into_a_pod_is_unknown_not_down);
        tcase_add_test(tc, test_sriov_link_reports_changes_of_served_links_only);
        tcase_add_test(tc, test_sriov_link_without_kdpd_is_dispatched_by_its_owner);
        tcase_add_test(tc, test_sriov_link_state_names);
        suite_add_tcase(s, tc);

        tc = tcase_create("messages");
        tcase_set_timeout(tc, 240);
        tcase_add_test(tc, test_sriov_link_ignores_unknown_attributes_and_skips_malformed_messages);
        suite_add_tcase(s, tc);

        tc = tcase_create("routes");
        tcase_set_timeout(tc, 240);
        tcase_add_test(tc, test_sriov_link_default_route_ipv4);
        tcase_add_test(tc, test_sriov_link_default_route_ipv6);
        tcase_add_test(tc, test_sriov_link_default_route_goes_with_its_link);
        suite_add_tcase(s, tc);

        tc = tcase_create("recovery");
        tcase_set_timeout(tc, 240);
        tcase_add_test(tc, test_sriov_link_rereads_everything_after_lost_events);
        tcase_add_test(tc, test_sriov_link_reopens_a_failed_socket_after_a_backoff);
        tcase_add_test(tc, test_sriov_link_drops_a_socket_given_a_message_longer_than_its_buffer);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        if (!kdp_test_netns_usable()) {
                fprintf(stderr, "unit/sriov-link: skipped: needs root, to make network namespaces\n");
                return 77;
        }
        return kdp_test_run(sriov_link_suite());
}
