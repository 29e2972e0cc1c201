/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The SR-IOV backend's link table (plugins/sriov/link.c) fed rtnetlink datagrams built here,
 * without a socket (sriov_link_new_unopened(), sriov_link_feed()): what the fuzz target
 * fuzz/sriov-link reads through, and the inputs it found. No namespace, no root.
 */
#include <check.h>
#include <net/if.h>
#include <libmnl/libmnl.h>
#include <linux/if.h>         /* after <net/if.h>: IFF_LOWER_UP, IF_OPER_* */
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <string.h>
#include <sys/socket.h>

#include <kdp/cleanup.h>

#include "backend-ctx.h"
#include "kdp-test.h"
#include "sriov.h"

typedef struct datagram {
        char buf[4096];
        size_t len;
} datagram;

/* Appends an RTM_NEWLINK/RTM_DELLINK of `name` with the flags, operstate and carrier given. */
static void put_link(datagram *d, uint16_t type, int index, const char *name, unsigned flags, uint8_t oper,
                     uint8_t carrier) {
        struct nlmsghdr *nlh = mnl_nlmsg_put_header(d->buf + d->len);
        struct ifinfomsg *ifi;

        nlh->nlmsg_type = type;
        ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
        ifi->ifi_family = AF_UNSPEC;
        ifi->ifi_index = index;
        ifi->ifi_flags = flags;
        mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
        mnl_attr_put_u8(nlh, IFLA_OPERSTATE, oper);
        mnl_attr_put_u8(nlh, IFLA_CARRIER, carrier);
        d->len += MNL_ALIGN(nlh->nlmsg_len);
        ck_assert_uint_le(d->len, sizeof(d->buf));
}

typedef struct fed {
        kdp_backend_ctx *ctx;
        sriov_link *link;
} fed;

static void fed_open(fed *f) {
        static const char *const served[] = { "ens1f0", "ens1f1" };
        const char *roots[_KDP_PATH_KIND_MAX] = { 0 };

        ck_assert_int_eq(kdp_backend_ctx_new("sriov", roots, NULL, NULL, &f->ctx), 0);
        ck_assert_int_eq(sriov_link_new_unopened(f->ctx, &f->link), 0);
        ck_assert_int_eq(sriov_link_fd(f->link), -1);
        ck_assert_int_eq(sriov_link_set_served(f->link, served, 2), 0);
}

static void fed_close(fed *f) {
        sriov_link_free(f->link);
        kdp_backend_ctx_free(f->ctx);
}

START_TEST(test_sriov_link_fed_applies_events) {
        fed f;
        datagram d = { .len = 0 };

        fed_open(&f);
        ck_assert_int_eq(sriov_link_get_state(f.link, "ens1f0"), SRIOV_LINK_UNKNOWN);
        put_link(&d, RTM_NEWLINK, 4, "ens1f0", IFF_UP | IFF_LOWER_UP, IF_OPER_UP, 1);
        put_link(&d, RTM_NEWLINK, 5, "ens1f1", IFF_UP, IF_OPER_DOWN, 0);
        ck_assert_int_eq(sriov_link_feed(f.link, d.buf, d.len), 1);
        ck_assert_int_eq(sriov_link_get_state(f.link, "ens1f0"), SRIOV_LINK_UP);
        ck_assert_int_eq(sriov_link_get_state(f.link, "ens1f1"), SRIOV_LINK_DOWN);
        ck_assert_int_eq(sriov_link_feed(f.link, d.buf, d.len), 0);    /* nothing new */

        d.len = 0;
        put_link(&d, RTM_DELLINK, 4, "ens1f0", 0, IF_OPER_DOWN, 0);
        ck_assert_int_eq(sriov_link_feed(f.link, d.buf, d.len), 1);
        ck_assert_int_eq(sriov_link_get_state(f.link, "ens1f0"), SRIOV_LINK_UNKNOWN);
        ck_assert_int_eq(sriov_link_feed(f.link, d.buf, 40000), -EMSGSIZE);
        fed_close(&f);
}
END_TEST

/*
 * Found by fuzz/sriov-link: a message whose nlmsg_len is near 2^32 made libmnl's walk step by 0
 * forever (the table hung). The messages before it are applied, it and what follows dropped.
 */
START_TEST(test_sriov_link_fed_drops_a_message_of_a_length_past_2gib) {
        fed f;
        datagram d = { .len = 0 };
        struct nlmsghdr *bad;

        fed_open(&f);
        put_link(&d, RTM_NEWLINK, 4, "ens1f0", IFF_UP | IFF_LOWER_UP, IF_OPER_UP, 1);
        bad = (struct nlmsghdr *) (d.buf + d.len);
        memset(bad, 0xff, 48);
        bad->nlmsg_type = RTM_NEWLINK;
        d.len += 48;
        put_link(&d, RTM_NEWLINK, 5, "ens1f1", IFF_UP | IFF_LOWER_UP, IF_OPER_UP, 1);
        ck_assert_int_eq(sriov_link_feed(f.link, d.buf, d.len), 1);
        ck_assert_int_eq(sriov_link_get_state(f.link, "ens1f0"), SRIOV_LINK_UP);
        ck_assert_int_eq(sriov_link_get_state(f.link, "ens1f1"), SRIOV_LINK_UNKNOWN);

        /* 2^31 exactly, and a length past the datagram's end */
        bad->nlmsg_len = UINT32_C(1) << 31;
        ck_assert_int_eq(sriov_link_feed(f.link, d.buf, d.len), 0);
        bad->nlmsg_len = (uint32_t) (d.len * 2);
        ck_assert_int_eq(sriov_link_feed(f.link, d.buf, d.len), 0);
        ck_assert_int_eq(sriov_link_get_state(f.link, "ens1f1"), SRIOV_LINK_UNKNOWN);
        fed_close(&f);
}
END_TEST

static Suite *sriov_link_fed_suite(void) {
        Suite *s = suite_create("sriov-link-fed");
        TCase *tc = tcase_create("feed");

        tcase_add_test(tc, test_sriov_link_fed_applies_events);
        tcase_add_test(tc, test_sriov_link_fed_drops_a_message_of_a_length_past_2gib);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return kdp_test_run(sriov_link_fed_suite());
}
