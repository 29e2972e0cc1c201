/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Link state and default routes of this netns, from rtnetlink (sriov.h, link.c
 * section; docs/hardware-sriov.md §6, §9, §11).
 *
 * One socket carries both the multicast events (RTNLGRP_LINK, RTNLGRP_IPV4_ROUTE,
 * RTNLGRP_IPV6_ROUTE) and the answers to our dumps; messages are told apart by
 * sequence number and port: a dump answer has the seq of our last request and
 * our port id, an event has those of whoever made the change (0 for the kernel).
 * A socket runs at most one dump at a time, so dumps are queued: want_links,
 * want_routes, started one after the other as each ends (NLMSG_DONE).
 *
 * Links: each RTM_NEWLINK (dump or event) carries the whole state of one link
 * and replaces what the table had for its ifindex (a rename drops the old name).
 * A link dump stamps each link it reports with a new generation; at its end the
 * links it did not report, nor any event since it started, are gone (their
 * RTM_DELLINK was lost).
 *
 * Routes: the default routes of the main table are read only from dumps, into
 * a fresh list swapped in at the dump's end; any default-route event (add,
 * delete, change, a multipath nexthop appended) asks for a new dump, which is
 * exact whatever the kernel's way of telling about multipath routes. What the
 * kernel removes without telling is modelled: a link's RTM_DELLINK is sent
 * after every route through it is gone, so its ifindex leaves every route; an
 * IPv4 route whose every nexthop link went admin-down is flushed silently, so
 * it is dropped when that happens, and a dump racing with that flush does not
 * bring it back.
 *
 * Parsing: libmnl's callbacks and attribute parsers only (mnl_cb_run2,
 * mnl_attr_parse, mnl_attr_validate); the nexthops of RTA_MULTIPATH are walked
 * with the kernel header's RTNH_OK/RTNH_NEXT, as libmnl has no walker for them.
 */
#include "sriov.h"  /* first: <net/if.h> before <linux/if.h> */

#include <assert.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/if.h>         /* after <net/if.h> (sriov.h): IFF_LOWER_UP, IF_OPER_* */
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <kdp/backend.h>
#include <kdp/cleanup.h>
#include <kdp/log.h>

#define RECV_BUFFER_SIZE 32768          /* the kernel sizes dump datagrams by it; one message is a few KiB */
#define SOCKET_BUFFER_SIZE (4 << 20)    /* events queued while the loop is busy: pod churn makes many */
#define SETTLE_TIMEOUT_MS 10000         /* the dumps at open: the kernel answers at once */
#define BACKOFF_MIN_MS 1000
#define BACKOFF_MAX_MS 60000

typedef struct link_entry {
        char name[IF_NAMESIZE];
        int ifindex;
        unsigned flags;                 /* ifi_flags: IFF_UP, IFF_LOWER_UP... */
        uint8_t operstate;              /* IF_OPER_*; unknown when the message had none */
        bool carrier;                   /* IFLA_CARRIER, else IFF_LOWER_UP */
        unsigned gen;                   /* the link dump that reported it, or the one running at its last event */
} link_entry;

typedef struct route_entry {
        uint8_t family;                 /* AF_INET, AF_INET6 */
        int *oifs;                      /* the links it goes out through (owned) */
        size_t n_oifs;
} route_entry;

typedef struct route_list {
        route_entry *v;
        size_t n;
} route_list;

typedef struct served_entry {
        char name[IF_NAMESIZE];
        sriov_link_state state;         /* as last reported */
        bool default_route;
} served_entry;

typedef enum dump_kind {
        DUMP_NONE,
        DUMP_LINKS,
        DUMP_ROUTES,
} dump_kind;

struct sriov_link {
        kdp_backend_ctx *ctx;           /* borrowed: lives from init to fini */
        kdp_backend_fd_fn on_fd;
        struct mnl_socket *nl;          /* owned; NULL while failed */
        bool watched;                   /* nl's fd is on the ctx's loop */
        unsigned portid;
        unsigned seq;                   /* of the last dump request */
        dump_kind dump;                 /* the dump running */
        bool dump_interrupted;          /* it saw NLM_F_DUMP_INTR: run it again */
        bool want_links, want_routes;   /* dumps to start once it ends */
        int error;                      /* a failure while reading (a dump refused): ends the socket */

        link_entry *links;              /* sorted by name, unique names and ifindexes */
        size_t n_links;
        unsigned gen;

        route_list routes;              /* the default routes of the main table */
        route_list next_routes;         /* being read by the route dump */

        served_entry *served;
        size_t n_served;
        bool route_changed;             /* a served ifname's default route changed, not taken yet */

        int failure;                    /* -errno of the socket's last failure; 0 while it is open */
        uint64_t retry_usec;            /* when sriov_link_retry() may try again */
        uint32_t backoff_ms;            /* the wait after the next failure */
        bool lost_logged;               /* the ENOBUFS warning was given */

        char *buf;                      /* RECV_BUFFER_SIZE bytes */
};

static const char *const state_names[_SRIOV_LINK_STATE_MAX] = {
        [SRIOV_LINK_UNKNOWN] = "unknown",
        [SRIOV_LINK_DOWN] = "down",
        [SRIOV_LINK_UP] = "up",
};

const char *sriov_link_state_to_string(sriov_link_state s) {
        return s >= 0 && s < _SRIOV_LINK_STATE_MAX ? state_names[s] : NULL;
}

/* ---- the link table ---- */

static int compare_link_name(const void *key, const void *elem) {
        return strcmp(key, ((const link_entry *) elem)->name);
}

static link_entry *link_by_name(const sriov_link *l, const char *name) {
        return l->n_links > 0 ? bsearch(name, l->links, l->n_links, sizeof(link_entry), compare_link_name) : NULL;
}

static link_entry *link_by_index(const sriov_link *l, int ifindex) {
        for (size_t i = 0; i < l->n_links; i++)
                if (l->links[i].ifindex == ifindex)
                        return &l->links[i];
        return NULL;
}

static void link_remove(sriov_link *l, link_entry *e) {
        size_t i = (size_t) (e - l->links);

        memmove(e, e + 1, (l->n_links - i - 1) * sizeof(*e));
        l->n_links--;
}

/* A new entry named `name` at its sorted place (its other fields zero); NULL when out of memory. */
static link_entry *link_insert(sriov_link *l, const char *name) {
        link_entry *v = realloc(l->links, (l->n_links + 1) * sizeof(*v));
        size_t i = 0;

        if (!v)
                return NULL;
        l->links = v;
        while (i < l->n_links && strcmp(v[i].name, name) < 0)
                i++;
        memmove(&v[i + 1], &v[i], (l->n_links - i) * sizeof(*v));
        l->n_links++;
        v[i] = (link_entry){ 0 };
        (void) snprintf(v[i].name, sizeof(v[i].name), "%s", name);
        return &v[i];
}

static sriov_link_state entry_state(const link_entry *e) {
        if (!e)
                return SRIOV_LINK_UNKNOWN;
        if (!(e->flags & IFF_UP))
                return SRIOV_LINK_DOWN;
        /* operstate "unknown" is a driver that does not report it (ifb, dummy): the carrier says */
        if (e->operstate == IF_OPER_UP || (e->operstate == IF_OPER_UNKNOWN && e->carrier))
                return SRIOV_LINK_UP;
        return SRIOV_LINK_DOWN;
}

/* ---- the default routes ---- */

static void route_list_done(route_list *rl) {
        for (size_t i = 0; i < rl->n; i++)
                free(rl->v[i].oifs);
        free(rl->v);
        *rl = (route_list){ 0 };
}

static bool route_has_oif(const route_entry *r, int ifindex) {
        for (size_t i = 0; i < r->n_oifs; i++)
                if (r->oifs[i] == ifindex)
                        return true;
        return false;
}

static void route_remove(route_list *rl, size_t i) {
        free(rl->v[i].oifs);
        memmove(&rl->v[i], &rl->v[i + 1], (rl->n - i - 1) * sizeof(rl->v[0]));
        rl->n--;
}

/* The kernel flushes an IPv4 route, without a message, once every link it goes out through is admin-down. */
static bool route_flushed(const sriov_link *l, const route_entry *r) {
        if (r->family != AF_INET || r->n_oifs == 0)
                return false;
        for (size_t i = 0; i < r->n_oifs; i++) {
                const link_entry *e = link_by_index(l, r->oifs[i]);

                if (!e || (e->flags & IFF_UP))
                        return false;
        }
        return true;
}

static void routes_drop_flushed(sriov_link *l) {
        for (size_t i = l->routes.n; i > 0; i--)
                if (route_flushed(l, &l->routes.v[i - 1]))
                        route_remove(&l->routes, i - 1);
}

/* A link is gone: so is every nexthop through it (the kernel removed them before saying so). */
static void routes_drop_oif(route_list *rl, int ifindex) {
        for (size_t i = rl->n; i > 0; i--) {
                route_entry *r = &rl->v[i - 1];
                size_t k = 0;

                for (size_t j = 0; j < r->n_oifs; j++)
                        if (r->oifs[j] != ifindex)
                                r->oifs[k++] = r->oifs[j];
                r->n_oifs = k;
                if (k == 0)
                        route_remove(rl, i - 1);
        }
}

static bool has_default_route(const sriov_link *l, const link_entry *e) {
        if (!e)
                return false;
        for (size_t i = 0; i < l->routes.n; i++)
                if (route_has_oif(&l->routes.v[i], e->ifindex))
                        return true;
        return false;
}

/* ---- dumps ---- */

static int dump_start(sriov_link *l, dump_kind kind) {
        union {
                struct nlmsghdr h;
                char bytes[NLMSG_SPACE(sizeof(struct ifinfomsg)) + NLMSG_SPACE(sizeof(struct rtmsg))];
        } req = { 0 };
        struct nlmsghdr *nlh = mnl_nlmsg_put_header(req.bytes);

        nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
        nlh->nlmsg_seq = ++l->seq;
        if (kind == DUMP_LINKS) {
                struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));

                nlh->nlmsg_type = RTM_GETLINK;
                ifi->ifi_family = AF_UNSPEC;
        } else {
                struct rtmsg *rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));

                nlh->nlmsg_type = RTM_GETROUTE;
                rtm->rtm_family = AF_UNSPEC;
        }
        /* a table without a socket (sriov_link_new_unopened()) awaits the answer from what it is fed */
        if (l->nl && mnl_socket_sendto(l->nl, nlh, nlh->nlmsg_len) < 0)
                return -errno;
        l->dump = kind;
        l->dump_interrupted = false;
        if (kind == DUMP_LINKS)
                l->gen++;
        else
                route_list_done(&l->next_routes);
        return 0;
}

/* Starts the next dump wanted, unless one is running; a failure is kept in l->error. */
static void dump_next(sriov_link *l) {
        int r = 0;

        if (l->dump != DUMP_NONE || l->error < 0)
                return;
        if (l->want_links) {
                l->want_links = false;
                r = dump_start(l, DUMP_LINKS);
        } else if (l->want_routes) {
                l->want_routes = false;
                r = dump_start(l, DUMP_ROUTES);
        }
        if (r < 0)
                l->error = r;
}

static void want_dumps(sriov_link *l, bool links, bool routes) {
        l->want_links = l->want_links || links;
        l->want_routes = l->want_routes || routes;
        dump_next(l);
}

static void dump_finish(sriov_link *l) {
        if (l->dump == DUMP_LINKS) {
                for (size_t i = l->n_links; i > 0; i--)
                        if (l->links[i - 1].gen != l->gen)
                                link_remove(l, &l->links[i - 1]);
                l->want_links = l->want_links || l->dump_interrupted;
        } else if (l->dump == DUMP_ROUTES) {
                route_list_done(&l->routes);
                l->routes = l->next_routes;
                l->next_routes = (route_list){ 0 };
                routes_drop_flushed(l);
                l->want_routes = l->want_routes || l->dump_interrupted;
        }
        l->dump = DUMP_NONE;
        dump_next(l);
}

/* Events lost (ENOBUFS): read everything again. */
static void events_lost(sriov_link *l) {
        if (!l->lost_logged)
                kdp_backend_log_warning(l->ctx, "Lost rtnetlink events, re-reading links and routes");
        else
                kdp_backend_log_v(l->ctx, 4, "Lost rtnetlink events, re-reading links and routes");
        l->lost_logged = true;
        want_dumps(l, true, true);
}

/* ---- messages ---- */

static bool is_dump_answer(const sriov_link *l, const struct nlmsghdr *nlh) {
        return l->dump != DUMP_NONE && nlh->nlmsg_seq == l->seq && nlh->nlmsg_pid == l->portid;
}

static void skipped(const sriov_link *l, const struct nlmsghdr *nlh) {
        kdp_backend_log_v(l->ctx, 4, "Skipped malformed rtnetlink message", KDP_F_INT("type", nlh->nlmsg_type));
}

/* What attr_keep() keeps of a message: each attribute type up to `max` with its libmnl type. */
typedef struct attr_table {
        uint16_t max;                                   /* IFLA_MAX, RTA_MAX */
        const enum mnl_attr_data_type *kept;            /* [0..max]: MNL_TYPE_UNSPEC for one not read */
        const struct nlattr **tb;                       /* [0..max]: the attributes kept */
} attr_table;

static const enum mnl_attr_data_type link_attrs[IFLA_MAX + 1] = {
        [IFLA_IFNAME] = MNL_TYPE_NUL_STRING, [IFLA_OPERSTATE] = MNL_TYPE_U8, [IFLA_CARRIER] = MNL_TYPE_U8,
};

static const enum mnl_attr_data_type route_attrs[RTA_MAX + 1] = {
        [RTA_TABLE] = MNL_TYPE_U32, [RTA_OIF] = MNL_TYPE_U32, [RTA_MULTIPATH] = MNL_TYPE_BINARY,
};

/* mnl_attr_parse()'s callback: a kept attribute of a malformed size fails the message. */
static int attr_keep(const struct nlattr *a, void *data) {
        const attr_table *t = data;
        uint16_t type = mnl_attr_get_type(a);

        if (mnl_attr_type_valid(a, t->max) < 0 || t->kept[type] == MNL_TYPE_UNSPEC)
                return MNL_CB_OK;       /* newer than our headers, or not ours to read */
        if (mnl_attr_validate(a, t->kept[type]) < 0)
                return MNL_CB_ERROR;
        t->tb[type] = a;
        return MNL_CB_OK;
}

static void on_link(sriov_link *l, const struct nlmsghdr *nlh) {
        const struct nlattr *tb[IFLA_MAX + 1] = { 0 };
        const struct ifinfomsg *ifi;
        link_entry *e;
        const char *name;
        bool was_up;

        if (mnl_nlmsg_get_payload_len(nlh) < sizeof(*ifi)) {
                skipped(l, nlh);
                return;
        }
        ifi = mnl_nlmsg_get_payload(nlh);
        if (ifi->ifi_family != AF_UNSPEC)
                return;         /* AF_BRIDGE: a port joined or left a bridge, the link itself is as it was */
        if (mnl_attr_parse(nlh, sizeof(*ifi), attr_keep, &(attr_table){ IFLA_MAX, link_attrs, tb }) != MNL_CB_OK ||
            !tb[IFLA_IFNAME] || ifi->ifi_index <= 0) {
                skipped(l, nlh);
                return;
        }
        name = mnl_attr_get_str(tb[IFLA_IFNAME]);
        if (strlen(name) >= IF_NAMESIZE || !*name) {
                skipped(l, nlh);
                return;
        }

        e = link_by_index(l, ifi->ifi_index);
        if (nlh->nlmsg_type == RTM_DELLINK) {
                if (e)
                        link_remove(l, e);
                routes_drop_oif(&l->routes, ifi->ifi_index);
                routes_drop_oif(&l->next_routes, ifi->ifi_index);
                return;
        }

        was_up = e && (e->flags & IFF_UP);
        if (e && strcmp(e->name, name) != 0) {
                link_remove(l, e);      /* renamed */
                e = NULL;
        }
        if (!e) {
                e = link_by_name(l, name);
                if (e)
                        link_remove(l, e);      /* the name's former link, whose RTM_DELLINK was lost */
                e = link_insert(l, name);
                if (!e) {
                        l->error = -ENOMEM;
                        return;
                }
        }
        e->ifindex = ifi->ifi_index;
        e->flags = ifi->ifi_flags;
        e->operstate = tb[IFLA_OPERSTATE] ? mnl_attr_get_u8(tb[IFLA_OPERSTATE]) : IF_OPER_UNKNOWN;
        e->carrier = tb[IFLA_CARRIER] ? mnl_attr_get_u8(tb[IFLA_CARRIER]) != 0 : (ifi->ifi_flags & IFF_LOWER_UP) != 0;
        e->gen = l->gen;
        if (was_up && !(e->flags & IFF_UP))
                routes_drop_flushed(l);
}

/* Appends the ifindex to r->oifs unless there; false when out of memory. */
static bool route_add_oif(route_entry *r, int ifindex) {
        int *v;

        if (ifindex <= 0 || route_has_oif(r, ifindex))
                return true;
        v = realloc(r->oifs, (r->n_oifs + 1) * sizeof(*v));
        if (!v)
                return false;
        r->oifs = v;
        r->oifs[r->n_oifs++] = ifindex;
        return true;
}

/* The links of a default route's dump message into `r`; -EBADMSG when RTA_MULTIPATH is malformed. */
static int route_read_oifs(const struct nlattr *const *tb, route_entry *r) {
        if (tb[RTA_OIF] && !route_add_oif(r, (int) mnl_attr_get_u32(tb[RTA_OIF])))
                return -ENOMEM;
        if (tb[RTA_MULTIPATH]) {
                const struct rtnexthop *nh = mnl_attr_get_payload(tb[RTA_MULTIPATH]);
                int len = (int) mnl_attr_get_payload_len(tb[RTA_MULTIPATH]);

                while (len >= (int) sizeof(*nh) && RTNH_OK(nh, len)) {
                        if (!route_add_oif(r, nh->rtnh_ifindex))
                                return -ENOMEM;
                        len -= (int) RTNH_ALIGN(nh->rtnh_len);
                        nh = RTNH_NEXT(nh);
                }
                if (len != 0)
                        return -EBADMSG;
        }
        return 0;
}

static void on_route(sriov_link *l, const struct nlmsghdr *nlh) {
        const struct nlattr *tb[RTA_MAX + 1] = { 0 };
        const struct rtmsg *rtm;
        route_entry r = { 0 };
        route_entry *v;
        uint32_t table;
        int k;

        if (mnl_nlmsg_get_payload_len(nlh) < sizeof(*rtm)) {
                skipped(l, nlh);
                return;
        }
        rtm = mnl_nlmsg_get_payload(nlh);
        if ((rtm->rtm_family != AF_INET && rtm->rtm_family != AF_INET6) || rtm->rtm_dst_len != 0 ||
            rtm->rtm_type != RTN_UNICAST)
                return;
        if (mnl_attr_parse(nlh, sizeof(*rtm), attr_keep, &(attr_table){ RTA_MAX, route_attrs, tb }) != MNL_CB_OK) {
                skipped(l, nlh);
                return;
        }
        table = tb[RTA_TABLE] ? mnl_attr_get_u32(tb[RTA_TABLE]) : rtm->rtm_table;
        if (table != RT_TABLE_MAIN)
                return;

        if (!is_dump_answer(l, nlh) || l->dump != DUMP_ROUTES) {
                /* a default route came, went or changed: read them again */
                want_dumps(l, false, true);
                return;
        }
        if (nlh->nlmsg_type != RTM_NEWROUTE)
                return;
        r.family = rtm->rtm_family;
        k = route_read_oifs(tb, &r);
        if (k < 0 || r.n_oifs == 0) {
                free(r.oifs);
                if (k == -ENOMEM)
                        l->error = k;
                else if (k < 0)
                        skipped(l, nlh);
                return;
        }
        v = realloc(l->next_routes.v, (l->next_routes.n + 1) * sizeof(*v));
        if (!v) {
                free(r.oifs);
                l->error = -ENOMEM;
                return;
        }
        l->next_routes.v = v;
        v[l->next_routes.n++] = r;
}

static int on_message(const struct nlmsghdr *nlh, void *data) {
        sriov_link *l = data;

        switch (nlh->nlmsg_type) {
        case RTM_NEWLINK:
        case RTM_DELLINK:
                on_link(l, nlh);
                break;
        case RTM_NEWROUTE:
        case RTM_DELROUTE:
                on_route(l, nlh);
                break;
        default:
                break;
        }
        return MNL_CB_OK;
}

static int on_done(const struct nlmsghdr *nlh, void *data) {
        sriov_link *l = data;

        if (!is_dump_answer(l, nlh))
                return MNL_CB_OK;
        /* a dump that failed midway says so in NLMSG_DONE's payload */
        if (mnl_nlmsg_get_payload_len(nlh) >= sizeof(int) && *(const int *) mnl_nlmsg_get_payload(nlh) < 0)
                l->error = *(const int *) mnl_nlmsg_get_payload(nlh);
        else
                dump_finish(l);
        return MNL_CB_OK;
}

static int on_error(const struct nlmsghdr *nlh, void *data) {
        sriov_link *l = data;
        const struct nlmsgerr *err = mnl_nlmsg_get_payload(nlh);

        /* a refused dump request; an acknowledgement (error 0) asks nothing of us */
        if (is_dump_answer(l, nlh) && mnl_nlmsg_get_payload_len(nlh) >= sizeof(*err) && err->error < 0)
                l->error = err->error;
        return MNL_CB_OK;
}

static int on_noop(const struct nlmsghdr *nlh, void *data) {
        (void) nlh;
        (void) data;
        return MNL_CB_OK;
}

static mnl_cb_t control_cbs[NLMSG_MIN_TYPE] = {
        [NLMSG_NOOP] = on_noop,
        [NLMSG_ERROR] = on_error,
        [NLMSG_DONE] = on_done,
        [NLMSG_OVERRUN] = on_noop,
};

/*
 * NLM_F_DUMP_INTR (the dump saw the tables change): noted, to dump again at its end, and cleared,
 * since mnl_cb_run2() would stop at it, leaving the rest of the datagram (NLMSG_DONE too) unread.
 */
static void mark_interrupted(sriov_link *l, size_t n) {
        int len = (int) n;

        for (struct nlmsghdr *nlh = (struct nlmsghdr *) l->buf; mnl_nlmsg_ok(nlh, len);
             nlh = mnl_nlmsg_next(nlh, &len))
                if (nlh->nlmsg_flags & NLM_F_DUMP_INTR) {
                        if (is_dump_answer(l, nlh))
                                l->dump_interrupted = true;
                        nlh->nlmsg_flags &= (uint16_t) ~NLM_F_DUMP_INTR;
                }
}

/*
 * The bytes of the datagram of n bytes in l->buf up to its first message whose length does not
 * fit. libmnl's walk (mnl_nlmsg_ok(), mnl_nlmsg_next()) takes an nlmsg_len of 2^31 or more as
 * fitting (a signed comparison) and then steps by MNL_ALIGN() of it, 0 for one near 2^32: forever.
 */
static size_t framed_size(const sriov_link *l, size_t n) {
        size_t off = 0;

        while (n - off >= sizeof(struct nlmsghdr)) {
                const struct nlmsghdr *nlh = (const struct nlmsghdr *) (l->buf + off);

                if (nlh->nlmsg_len < sizeof(*nlh) || nlh->nlmsg_len > n - off)
                        break;
                off += MNL_ALIGN(nlh->nlmsg_len);
                if (off >= n)
                        return n;       /* the last message, its padding cut */
        }
        return off;
}

/* Applies the datagram of n bytes in l->buf; what follows a message of a length that does not fit is dropped. */
static void apply(sriov_link *l, size_t n) {
        n = framed_size(l, n);
        mark_interrupted(l, n);
        /* seq and port 0: events and dump answers alike; on_message tells them apart */
        (void) mnl_cb_run2(l->buf, n, 0, 0, on_message, l, control_cbs, NLMSG_MIN_TYPE);
}

/* Reads and applies everything waiting; 0 at EAGAIN, -errno when the socket failed. */
static int drain(sriov_link *l) {
        for (;;) {
                ssize_t n = mnl_socket_recvfrom(l->nl, l->buf, RECV_BUFFER_SIZE);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN || errno == EWOULDBLOCK)
                                return 0;
                        if (errno == ENOSPC)
                                return -EMSGSIZE;       /* longer than any message we know: not worth a loop */
                        if (errno == ENOBUFS) {
                                events_lost(l);
                                if (l->error < 0)
                                        return l->error;
                                continue;
                        }
                        return -errno;
                }
                if (n == 0)
                        return -ECONNRESET;
                apply(l, (size_t) n);
                if (l->error < 0)
                        return l->error;
        }
}

/* ---- the socket ---- */

static void socket_close(sriov_link *l) {
        if (!l->nl)
                return;
        if (l->watched)
                kdp_backend_unwatch_fd(l->ctx, mnl_socket_get_fd(l->nl));
        l->watched = false;
        (void) mnl_socket_close(l->nl);
        l->nl = NULL;
        l->dump = DUMP_NONE;
        l->want_links = l->want_routes = false;
        l->error = 0;
        route_list_done(&l->next_routes);
}

/* Drains until the dumps asked for are read (poll: the fd is non-blocking); -ETIMEDOUT when the kernel stalls. */
static int settle(sriov_link *l) {
        for (;;) {
                struct pollfd p = { .fd = mnl_socket_get_fd(l->nl), .events = POLLIN };
                int r = drain(l);

                if (r < 0)
                        return r;
                if (l->dump == DUMP_NONE && !l->want_links && !l->want_routes)
                        return 0;
                r = poll(&p, 1, SETTLE_TIMEOUT_MS);
                if (r < 0 && errno != EINTR)
                        return -errno;
                if (r == 0)
                        return -ETIMEDOUT;
        }
}

static int socket_open(sriov_link *l) {
        static const unsigned groups[] = { RTNLGRP_LINK, RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE };
        int size = SOCKET_BUFFER_SIZE, r;

        l->nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (!l->nl)
                return -errno;
        if (mnl_socket_bind(l->nl, 0, MNL_SOCKET_AUTOPID) < 0)
                return -errno;
        for (size_t i = 0; i < KDP_ELEMENTSOF(groups); i++) {
                unsigned g = groups[i];

                if (mnl_socket_setsockopt(l->nl, NETLINK_ADD_MEMBERSHIP, &g, sizeof(g)) < 0)
                        return -errno;
        }
        /* CAP_NET_ADMIN may go past net.core.rmem_max; else as far as it allows */
        if (setsockopt(mnl_socket_get_fd(l->nl), SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
                (void) setsockopt(mnl_socket_get_fd(l->nl), SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
        l->portid = mnl_socket_get_portid(l->nl);
        want_dumps(l, true, true);
        r = settle(l);
        if (r < 0)
                return r;
        r = kdp_backend_watch_fd(l->ctx, mnl_socket_get_fd(l->nl), l->on_fd);
        if (r < 0 && r != -EOPNOTSUPP)
                return r;
        l->watched = r == 0;
        return 0;
}

/* Ends the socket after a failure and asks for the rescan that will retry it. */
static void socket_failed(sriov_link *l, int r) {
        (void) kdp_backend_log_error(l->ctx, r, "Failed to read rtnetlink, retrying later",
                                     KDP_F_INT("retryMs", l->backoff_ms));
        socket_close(l);
        l->failure = r;
        l->retry_usec = kdp_backend_now_usec(l->ctx) + (uint64_t) l->backoff_ms * 1000;
        (void) kdp_backend_rescan_after(l->ctx, l->backoff_ms);
        l->backoff_ms = l->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : l->backoff_ms * 2;
}

/* ---- served names ---- */

static bool served_changed(sriov_link *l) {
        bool changed = false;

        for (size_t i = 0; i < l->n_served; i++) {
                served_entry *s = &l->served[i];
                const link_entry *e = link_by_name(l, s->name);
                sriov_link_state state = entry_state(e);
                bool dr = has_default_route(l, e);

                if (state != s->state || dr != s->default_route) {
                        l->route_changed = l->route_changed || dr != s->default_route;
                        s->state = state;
                        s->default_route = dr;
                        changed = true;
                }
        }
        return changed;
}

int sriov_link_set_served(sriov_link *l, const char *const *ifnames, size_t n) {
        served_entry *v = NULL;

        assert(l);
        if (n > 0) {
                v = calloc(n, sizeof(*v));
                if (!v)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                const link_entry *e = link_by_name(l, ifnames[i]);

                (void) snprintf(v[i].name, sizeof(v[i].name), "%s", ifnames[i]);
                v[i].state = entry_state(e);
                v[i].default_route = has_default_route(l, e);
        }
        free(l->served);
        l->served = v;
        l->n_served = n;
        return 0;
}

/* ---- the module's interface ---- */

/* A link table without a socket. */
static int link_alloc(kdp_backend_ctx *ctx, kdp_backend_fd_fn on_fd, sriov_link **ret) {
        _cleanup_(sriov_link_freep) sriov_link *l = NULL;

        l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        *l = (sriov_link){ .ctx = ctx, .on_fd = on_fd, .backoff_ms = BACKOFF_MIN_MS };
        l->buf = malloc(RECV_BUFFER_SIZE);
        if (!l->buf)
                return -ENOMEM;
        *ret = KDP_TAKE_PTR(l);
        return 0;
}

int sriov_link_new_unopened(kdp_backend_ctx *ctx, sriov_link **ret) {
        assert(ctx && ret);
        return link_alloc(ctx, NULL, ret);
}

int sriov_link_feed(sriov_link *l, const void *data, size_t size) {
        assert(l && !l->nl && (data || size == 0));
        if (size > RECV_BUFFER_SIZE)
                return -EMSGSIZE;
        memcpy(l->buf, data, size);
        l->error = 0;
        apply(l, size);
        if (l->error < 0)
                return l->error;
        return served_changed(l) ? 1 : 0;
}

int sriov_link_new(kdp_backend_ctx *ctx, kdp_backend_fd_fn on_fd, sriov_link **ret) {
        _cleanup_(sriov_link_freep) sriov_link *l = NULL;
        int r;

        assert(ctx && on_fd && ret);
        r = link_alloc(ctx, on_fd, &l);
        if (r < 0)
                return r;
        r = socket_open(l);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                socket_failed(l, r);
        *ret = KDP_TAKE_PTR(l);
        return 0;
}

sriov_link *sriov_link_free(sriov_link *l) {
        if (!l)
                return NULL;
        socket_close(l);
        free(l->links);
        route_list_done(&l->routes);
        route_list_done(&l->next_routes);
        free(l->served);
        free(l->buf);
        free(l);
        return NULL;
}

int sriov_link_dispatch(sriov_link *l) {
        int r;

        assert(l);
        if (l->nl) {
                r = drain(l);
                if (r < 0)
                        socket_failed(l, r);
        }
        return served_changed(l) ? 1 : 0;
}

bool sriov_link_take_route_change(sriov_link *l) {
        bool changed;

        assert(l);
        changed = l->route_changed;
        l->route_changed = false;
        return changed;
}

int sriov_link_retry(sriov_link *l) {
        uint64_t now;
        int r;

        assert(l);
        if (l->nl)
                return 0;
        now = kdp_backend_now_usec(l->ctx);
        if (now < l->retry_usec) {
                (void) kdp_backend_rescan_after(l->ctx, (uint32_t) ((l->retry_usec - now + 999) / 1000));
                return l->failure;
        }
        r = socket_open(l);
        if (r < 0) {
                socket_failed(l, r);
                return r;
        }
        kdp_backend_log_info(l->ctx, "Reopened rtnetlink socket");
        l->failure = 0;
        l->backoff_ms = BACKOFF_MIN_MS;
        return 0;
}

int sriov_link_fd(const sriov_link *l) {
        return l && l->nl ? mnl_socket_get_fd(l->nl) : -1;
}

sriov_link_state sriov_link_get_state(const sriov_link *l, const char *ifname) {
        assert(l && ifname);
        return entry_state(link_by_name(l, ifname));
}

bool sriov_link_has_default_route(const sriov_link *l, const char *ifname) {
        assert(l && ifname);
        return has_default_route(l, link_by_name(l, ifname));
}
