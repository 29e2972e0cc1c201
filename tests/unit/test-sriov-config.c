/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * plugins/sriov/config.c: sriovdp's config.json examples (tests/fixtures/sriov/configs, one per
 * example of its README and docs) give the pools they describe, each pool takes the functions
 * sriovdp would give it, what sriovdp refuses fails the load and what it drops is accepted with
 * a warning naming file, line and key. Messages are asserted as whole lines.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdp/cleanup.h>
#include <kdp/config-shape.h>

#include "sriov.h"

#include "kdp-test.h"

#define CONFIGS KDP_SOURCE_DIR "/tests/fixtures/sriov/configs/"

/* ---- the functions the pools are tried on ---- */

/* E810 VF 0 of PF ens3f0np0, on iavf */
static const sriov_func e810_iavf = {
        .address = "0000:8a:01.0", .vendor = "8086", .device = "1889", .class_code = 0x020000,
        .driver = "iavf", .numa_node = 1, .pf_address = "0000:8a:00.0", .vf_index = 0,
        .pf_name = "ens3f0np0", .netdev = "ens3f0v0", .link_type = "ether", .iommu_group = 100,
        .uio_index = -1,
};

/* E810 VF 6 of the same PF, on vfio-pci (no netdev) */
static const sriov_func e810_vfio = {
        .address = "0000:8a:01.6", .vendor = "8086", .device = "1889", .class_code = 0x020000,
        .driver = "vfio-pci", .numa_node = 1, .pf_address = "0000:8a:00.0", .vf_index = 6,
        .pf_name = "ens3f0np0", .link_type = "ether", .iommu_group = 106, .uio_index = -1,
};

/* ConnectX-6 Dx VF 0 with its RDMA device */
static const sriov_func cx6_rdma = {
        .address = "0000:3b:00.2", .vendor = "15b3", .device = "101e", .class_code = 0x020000,
        .driver = "mlx5_core", .numa_node = 0, .pf_address = "0000:3b:00.0", .vf_index = 0,
        .pf_name = "ens1f0np0", .netdev = "ens1f0v0", .link_type = "ether", .iommu_group = 40,
        .uio_index = -1, .rdma_dev = "mlx5_2",
};

/* ConnectX-6 Dx VF 1 with a vhost vDPA device */
static const sriov_func cx6_vdpa = {
        .address = "0000:3b:00.3", .vendor = "15b3", .device = "101e", .class_code = 0x020000,
        .driver = "mlx5_core", .numa_node = 0, .pf_address = "0000:3b:00.0", .vf_index = 1,
        .pf_name = "ens1f0np0", .link_type = "ether", .iommu_group = 41, .uio_index = -1,
        .vdpa_type = "vhost", .vdpa_path = "/dev/vhost-vdpa-0",
};

/* X710 VF 0 of PF ens785f0, on iavf */
static const sriov_func x710_vf = {
        .address = "0000:18:02.0", .vendor = "8086", .device = "154c", .class_code = 0x020000,
        .driver = "iavf", .numa_node = 0, .pf_address = "0000:18:00.0", .vf_index = 0,
        .pf_name = "ens785f0", .netdev = "ens785f0v0", .link_type = "ether", .iommu_group = 20,
        .uio_index = -1,
};

/* a processing accelerator (base class 0x12), no PF */
static const sriov_func accel = {
        .address = "0000:f7:00.0", .vendor = "8086", .device = "0d90", .class_code = 0x120000,
        .driver = "dfl-pci", .numa_node = 1, .vf_index = -1, .iommu_group = 70, .uio_index = -1,
};

/* the E810 PF, with its VFs enabled */
static const sriov_func pf_with_vfs = {
        .address = "0000:8a:00.0", .vendor = "8086", .device = "1593", .class_code = 0x020000,
        .driver = "ice", .numa_node = 1, .is_pf_with_vfs = true, .vf_index = -1, .netdev = "ens3f0np0",
        .link_type = "ether", .iommu_group = 90, .uio_index = -1,
};

/* a QAT PF (base class 0x12) with its VFs enabled */
static const sriov_func accel_pf_with_vfs = {
        .address = "0000:6b:00.0", .vendor = "8086", .device = "4940", .class_code = 0x120000,
        .driver = "4xxx", .numa_node = 0, .is_pf_with_vfs = true, .vf_index = -1, .iommu_group = 80,
        .uio_index = -1,
};

/* a virtio RNG (class 0x00ff00), for deviceType pci */
static const sriov_func rng = {
        .address = "0000:00:05.0", .vendor = "1af4", .device = "1044", .class_code = 0x00ff00,
        .driver = "virtio-pci", .numa_node = -1, .vf_index = -1, .iommu_group = 5, .uio_index = -1,
};

/* ---- helpers ---- */

/* Loads `path` with stderr captured; returns the load's result and what it logged (free()). */
static int load_path(const char *path, sriov_config *c, char **ret_log) {
        kdp_test_capture cap;
        int r;

        kdp_test_capture_begin(&cap);
        r = sriov_config_load(NULL, path, NULL, c);
        *ret_log = kdp_test_capture_end(&cap);
        return r;
}

/* Loads fixture `name`, which must load without any message. */
static void load_fixture_clean(const char *name, sriov_config *c) {
        _cleanup_free_ char *log = NULL;
        char path[512];

        (void) snprintf(path, sizeof(path), CONFIGS "%s", name);
        ck_assert_int_eq(load_path(path, c, &log), 0);
        ck_assert_str_eq(log, "");
        ck_assert_str_eq(c->path, path);
}

/* Writes `json` to a temp file, loads it; *ret_path (free()) is the file, already removed. */
static int load_text(const char *json, sriov_config *c, char **ret_log, char **ret_path) {
        _cleanup_(kdp_test_unlink_freep) char *path = kdp_test_write_temp("sriov-config", ".json", json, strlen(json));
        int r;

        r = load_path(path, c, ret_log);
        *ret_path = strdup(path);
        ck_assert_ptr_nonnull(*ret_path);
        return r;
}

static void expect_match(const sriov_config *c, const sriov_func *f, int pool, size_t selector) {
        size_t sel = SIZE_MAX;
        int r = sriov_config_match(c, f, &sel);

        ck_assert_msg(r == pool, "%s: pool %d, want %d", f->address, r, pool);
        if (pool >= 0)
                ck_assert_uint_eq(sel, selector);
}

static void expect_no_match(const sriov_config *c, const sriov_func *f) {
        expect_match(c, f, -1, 0);
}

static void expect_pool(const sriov_pool *p, const char *resource, sriov_device_type type, size_t n_selectors) {
        ck_assert_str_eq(p->resource, resource);
        ck_assert_int_eq(p->type, type);
        ck_assert_uint_eq(p->n_selectors, n_selectors);
}

static void expect_strings(const sriov_strings *s, const char *const *want) {
        size_t n = 0;

        while (want[n])
                n++;
        ck_assert_uint_eq(s->n, n);
        for (size_t i = 0; i < n; i++)
                ck_assert_str_eq(s->v[i], want[i]);
}

#define STRS(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define NO_STRS ((const char *const[]){ NULL })

/* A warning or error line of config.c, for kdp_test_expect_line(); free() */
static char *problem_line(bool error, const char *path, int line, const char *key, const char *reason) {
        char *s, lf[32] = "", kf[512] = "";

        if (line > 0)
                (void) snprintf(lf, sizeof(lf), " line=%d", line);
        if (key)
                (void) snprintf(kf, sizeof(kf), " key=\"%s\"", key);
        ck_assert_int_ge(asprintf(&s, "\"%s\" path=\"%s\"%s%s reason=\"%s\"%s",
                                  error ? "Rejected SR-IOV config file" : "Accepted SR-IOV config file with a problem",
                                  path, lf, kf, reason, error ? " err=\"Invalid argument\"" : ""), 0);
        return s;
}

static void expect_problem(const char **log, bool error, const char *path, int line, const char *key,
                           const char *reason) {
        _cleanup_free_ char *body = problem_line(error, path, line, key, reason);

        kdp_test_expect_line(log, error ? 'E' : 'W', "config.c", body);
}

/* Loads `json`, which must fail with -EINVAL logging exactly one error; a failure names `name`. */
static void expect_refused(const char *name, const char *json, int line, const char *key, const char *reason) {
        _cleanup_(sriov_config_done) sriov_config c = {};
        _cleanup_free_ char *log = NULL, *path = NULL, *want = NULL;
        const char *body;
        int r;

        r = load_text(json, &c, &log, &path);
        want = problem_line(true, path, line, key, reason);
        body = kdp_test_line_body(log, 'E', "config.c");
        ck_assert_msg(r == -EINVAL && body && strncmp(body, want, strlen(want)) == 0 &&
                      strcmp(body + strlen(want), "\n") == 0,
                      "%s: the load returned %d and logged '%s'; want %d and the one error '%s'", name, r, log,
                      -EINVAL, want);
}

/* Loads `json`, which must load logging exactly one warning; the config stays in *c. */
static void expect_warned(const char *json, sriov_config *c, int line, const char *key, const char *reason) {
        _cleanup_free_ char *log = NULL, *path = NULL;
        const char *p;

        ck_assert_int_eq(load_text(json, c, &log, &path), 0);
        p = log;
        expect_problem(&p, false, path, line, key, reason);
        ck_assert_str_eq(p, "");
}

typedef struct problem_want {
        bool error;
        int line;
        const char *key;
        const char *reason;
} problem_want;

/* Loads `json`, which must return `want_r` and log exactly the problems `want`, in order. */
static void expect_problems(const char *json, int want_r, const problem_want *want, size_t n) {
        _cleanup_(sriov_config_done) sriov_config c = {};
        _cleanup_free_ char *log = NULL, *path = NULL;
        const char *l;

        ck_assert_int_eq(load_text(json, &c, &log, &path), want_r);
        l = log;
        for (size_t i = 0; i < n; i++)
                expect_problem(&l, want[i].error, path, want[i].line, want[i].key, want[i].reason);
        ck_assert_str_eq(l, "");
}

/* ---- the README and docs examples ---- */

START_TEST(test_sriov_config_readme_example_gives_its_ten_pools) {
        _cleanup_(sriov_config_done) sriov_config c = {};
        _cleanup_free_ char *log = NULL;
        const sriov_pool *p;
        const char *l;

        ck_assert_int_eq(load_path(CONFIGS "readme.json", &c, &log), 0);
        l = log;
        expect_problem(&l, false, CONFIGS "readme.json", 58, "resourceList[6].deviceType",
                       "auxNetDevice pools hold auxiliary devices, which this backend does not serve: "
                       "the pool stays empty");
        ck_assert_str_eq(l, "");

        ck_assert_uint_eq(c.n_pools, 10);
        expect_pool(&c.pools[0], "intel.com/nic_kernel", SRIOV_NET_DEVICE, 1);
        expect_pool(&c.pools[1], "intel.com/nic_dpdk", SRIOV_NET_DEVICE, 1);
        expect_pool(&c.pools[2], "mellanox.com/mlx_rdma", SRIOV_NET_DEVICE, 1);
        expect_pool(&c.pools[3], "intel.com/ib_rdma", SRIOV_NET_DEVICE, 1);
        expect_pool(&c.pools[4], "intel.com/cx6dx_vdpa_vhost", SRIOV_NET_DEVICE, 1);
        expect_pool(&c.pools[5], "intel.com/fpga", SRIOV_ACCELERATOR, 1);
        expect_pool(&c.pools[6], "nvidia.com/bf2_sf", SRIOV_AUX_NET_DEVICE, 1);
        expect_pool(&c.pools[7], "intel.com/nic_kernel_token", SRIOV_NET_DEVICE, 1);
        expect_pool(&c.pools[8], "broadcom.com/bnxt_vf", SRIOV_NET_DEVICE, 1);
        expect_pool(&c.pools[9], "intel.com/nic_kernel_object", SRIOV_NET_DEVICE, 1);
        ck_assert_str_eq(c.pools[0].resource_name, "nic_kernel");
        ck_assert_str_eq(c.pools[0].resource_prefix, "intel.com");
        ck_assert_uint_eq(c.pools[0].line, 3);
        ck_assert_uint_eq(c.pools[9].line, 89);

        p = &c.pools[0];
        expect_strings(&p->selectors[0].vendors, STRS("8086"));
        expect_strings(&p->selectors[0].devices, STRS("154c", "10ed", "1889"));
        expect_strings(&p->selectors[0].drivers, STRS("i40evf", "ixgbevf", "iavf"));
        expect_strings(&p->selectors[0].pci_addresses, NO_STRS);
        ck_assert(!p->selectors[0].is_rdma && !p->selectors[0].need_vhost_net);
        ck_assert_uint_eq(p->n_info, 0);

        p = &c.pools[1];
        ck_assert_uint_eq(p->selectors[0].n_pf_names, 2);
        ck_assert_str_eq(p->selectors[0].pf_names[0].pf, "ens3f0np0");
        ck_assert(p->selectors[0].pf_names[0].all_vfs);
        ck_assert_str_eq(p->selectors[0].pf_names[1].pf, "ens3f1np1");
        ck_assert(p->selectors[0].pf_names[1].all_vfs);
        ck_assert(p->selectors[0].need_vhost_net);

        ck_assert(c.pools[2].selectors[0].is_rdma);
        expect_strings(&c.pools[3].selectors[0].link_types, STRS("infiniband"));
        ck_assert(c.pools[3].selectors[0].is_rdma);
        ck_assert_str_eq(c.pools[4].selectors[0].vdpa_type, "vhost");

        p = &c.pools[6];
        expect_strings(&p->selectors[0].aux_types, STRS("sf"));
        ck_assert_uint_eq(p->selectors[0].n_pf_names, 1);
        ck_assert_str_eq(p->selectors[0].pf_names[0].pf, "p0");
        ck_assert(!p->selectors[0].pf_names[0].all_vfs);
        ck_assert_uint_eq(p->selectors[0].pf_names[0].n_vf_words, 1);
        ck_assert_uint_eq(p->selectors[0].pf_names[0].vf_bits[0], 0x3e);    /* VFs 1..5 */

        p = &c.pools[7];
        ck_assert_uint_eq(p->n_info, 1);
        ck_assert_str_eq(p->info[0].key, "*");
        expect_strings(&p->info[0].keys, STRS("token"));
        expect_strings(&p->info[0].values, STRS("5b1c7e2a-pool-token"));

        /* the first pool that matches takes a function: nic_kernel_token repeats nic_kernel's selector */
        expect_match(&c, &e810_iavf, 0, 0);
        expect_match(&c, &x710_vf, 0, 0);
        expect_match(&c, &e810_vfio, 1, 0);
        expect_match(&c, &cx6_vdpa, 4, 0);
        expect_match(&c, &accel, 5, 0);
        expect_no_match(&c, &cx6_rdma);         /* 101e: not mlx_rdma's 1018; ether, not infiniband */
        expect_no_match(&c, &pf_with_vfs);
        expect_no_match(&c, &rng);

        {
                sriov_func cx5 = cx6_rdma, ib = cx6_rdma, bnxt = x710_vf, routed = e810_iavf, other_pf = e810_vfio;

                strcpy(cx5.device, "1018");
                strcpy(cx5.driver, "mlx5_ib");
                expect_match(&c, &cx5, 2, 0);
                strcpy(ib.link_type, "infiniband");
                expect_match(&c, &ib, 3, 0);
                ib.rdma_dev[0] = '\0';
                expect_no_match(&c, &ib);       /* isRdma wants an RDMA device */
                strcpy(bnxt.vendor, "14e4");
                strcpy(bnxt.device, "1750");
                strcpy(bnxt.driver, "bnxt_en");
                expect_match(&c, &bnxt, 8, 0);
                routed.default_route = true;
                expect_no_match(&c, &routed);
                strcpy(other_pf.pf_name, "ens2f0");
                expect_no_match(&c, &other_pf);
                strcpy(other_pf.pf_name, "ENS3F1NP1");  /* PF names compare case-insensitively */
                expect_match(&c, &other_pf, 1, 0);
        }
}
END_TEST

START_TEST(test_sriov_config_readme_example_as_published_is_not_json) {
        _cleanup_(sriov_config_done) sriov_config c = {};
        _cleanup_free_ char *log = NULL;
        const char *l;

        ck_assert_int_eq(load_path(CONFIGS "readme-as-published.json", &c, &log), -EINVAL);
        l = log;
        expect_problem(&l, true, CONFIGS "readme-as-published.json", 86, NULL,
                       "not JSON: JSON disallows trailing comma before closing brace (column 15)");
        ck_assert_str_eq(l, "");
        ck_assert_uint_eq(c.n_pools, 0);
}
END_TEST

START_TEST(test_sriov_config_readme_selector_syntaxes) {
        _cleanup_(sriov_config_done) sriov_config one = {}, list = {}, swapped = {};

        /* a single object is one selector */
        load_fixture_clean("readme-selectors-object.json", &one);
        ck_assert_uint_eq(one.n_pools, 1);
        expect_pool(&one.pools[0], "intel.com/x710_vf", SRIOV_NET_DEVICE, 1);
        expect_match(&one, &x710_vf, 0, 0);
        expect_no_match(&one, &e810_iavf);

        /* 154c goes to the first object, without needVhostNet; other 8086 functions to the second */
        load_fixture_clean("readme-selectors-list.json", &list);
        expect_pool(&list.pools[0], "intel.com/intel_vf", SRIOV_NET_DEVICE, 2);
        ck_assert(!list.pools[0].selectors[0].need_vhost_net);
        ck_assert(list.pools[0].selectors[1].need_vhost_net);
        expect_match(&list, &x710_vf, 0, 0);
        expect_match(&list, &e810_iavf, 0, 1);
        expect_match(&list, &e810_vfio, 0, 1);
        expect_no_match(&list, &cx6_rdma);

        /* swapped: the first object takes everything, the second is never reached */
        load_fixture_clean("readme-selectors-list-swapped.json", &swapped);
        expect_pool(&swapped.pools[0], "intel.com/intel_vf", SRIOV_NET_DEVICE, 2);
        expect_match(&swapped, &x710_vf, 0, 0);
        expect_match(&swapped, &e810_iavf, 0, 0);
        expect_match(&swapped, &accel, -1, 0);  /* an 8086 accelerator is not a netDevice */

        ck_assert(!sriov_config_pool_equal(&list.pools[0], &swapped.pools[0]));
}
END_TEST

START_TEST(test_sriov_config_readme_additional_info) {
        _cleanup_(sriov_config_done) sriov_config extra = {}, over = {};

        load_fixture_clean("readme-info-extra.json", &extra);
        ck_assert_uint_eq(extra.pools[0].n_info, 2);
        ck_assert_str_eq(extra.pools[0].info[0].key, "*");
        expect_strings(&extra.pools[0].info[0].keys, STRS("token"));
        expect_strings(&extra.pools[0].info[0].values, STRS("5b1c7e2a-pool-token"));
        ck_assert_str_eq(extra.pools[0].info[1].key, "0000:8a:01.6");
        expect_strings(&extra.pools[0].info[1].keys, STRS("additional-token"));
        expect_strings(&extra.pools[0].info[1].values, STRS("9d4e0f31-device-token"));
        expect_match(&extra, &e810_vfio, 0, 0);

        load_fixture_clean("readme-info-override.json", &over);
        ck_assert_uint_eq(over.pools[0].n_info, 2);
        expect_strings(&over.pools[0].info[0].values, STRS("original"));
        ck_assert_str_eq(over.pools[0].info[1].key, "0000:8a:01.6");
        expect_strings(&over.pools[0].info[1].keys, STRS("token"));
        expect_strings(&over.pools[0].info[1].values, STRS("specific"));

        /* same selectors, other additionalInfo: another answer */
        ck_assert(!sriov_config_pool_equal(&extra.pools[0], &over.pools[0]));
}
END_TEST

START_TEST(test_sriov_config_readme_ranges_select_exactly_their_vfs) {
        _cleanup_(sriov_config_done) sriov_config c = {};
        static const int by_name[] = { 1, 0, 1, 1, 1, 1, 1, 1, 0, 1, 0, 0 };   /* #0,2-7,9 */
        static const int by_root[] = { 1, 1, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0 };   /* #0-1,3,4 */

        load_fixture_clean("readme-ranges.json", &c);
        ck_assert_uint_eq(c.n_pools, 2);
        expect_pool(&c.pools[0], "intel.com/by_pf_name", SRIOV_NET_DEVICE, 1);
        expect_pool(&c.pools[1], "intel.com/by_pf_address", SRIOV_NET_DEVICE, 1);
        ck_assert_uint_eq(c.pools[0].selectors[0].pf_names[0].vf_bits[0], 0x2fd);
        ck_assert_uint_eq(c.pools[1].selectors[0].root_devices[0].vf_bits[0], 0x1b);

        for (int i = 0; i < (int) KDP_ELEMENTSOF(by_name); i++) {
                sriov_func f = e810_iavf;

                (void) snprintf(f.address, sizeof(f.address), "0000:01:10.%d", i % 8);
                strcpy(f.pf_name, "enp1s0f0");
                strcpy(f.pf_address, "0000:01:00.0");
                f.vf_index = i;
                expect_match(&c, &f, by_name[i] ? 0 : -1, 0);

                strcpy(f.pf_name, "ens86f0");
                strcpy(f.pf_address, "0000:86:00.0");
                expect_match(&c, &f, by_root[i] ? 1 : -1, 0);

                /* a device without a PF never matches pfNames or rootDevices */
                f.vf_index = -1;
                f.pf_address[0] = '\0';
                f.pf_name[0] = '\0';
                expect_no_match(&c, &f);
        }
}
END_TEST

START_TEST(test_sriov_config_docs_ddp_profiles) {
        _cleanup_(sriov_config_done) sriov_config c = {};
        sriov_func f = e810_iavf, x = x710_vf;

        load_fixture_clean("ddp.json", &c);
        ck_assert_uint_eq(c.n_pools, 4);
        expect_pool(&c.pools[0], "intel.com/e810_ddp_default", SRIOV_NET_DEVICE, 1);
        expect_pool(&c.pools[1], "intel.com/e810_ddp_comms", SRIOV_NET_DEVICE, 1);
        expect_pool(&c.pools[2], "intel.com/x710_ddp_gtp", SRIOV_NET_DEVICE, 1);
        expect_pool(&c.pools[3], "intel.com/x710_ddp_pppoe", SRIOV_NET_DEVICE, 1);
        expect_strings(&c.pools[2].selectors[0].ddp_profiles, STRS("GTPv1-C/U IPv4/IPv6 payload"));

        expect_no_match(&c, &f);                /* no profile known */
        strcpy(f.ddp_profile, "ICE COMMS Package");
        expect_match(&c, &f, 1, 0);
        strcpy(f.ddp_profile, "ICE OS Default Package");
        expect_match(&c, &f, 0, 0);
        strcpy(x.ddp_profile, "E710 PPPoE and PPPoL2TPv2");
        expect_match(&c, &x, 3, 0);
}
END_TEST

START_TEST(test_sriov_config_docs_subfunctions) {
        _cleanup_(sriov_config_done) sriov_config bf2 = {}, cx6 = {};
        _cleanup_free_ char *log = NULL;
        const char *l;

        ck_assert_int_eq(load_path(CONFIGS "subfunctions-bf2.json", &bf2, &log), 0);
        l = log;
        expect_problem(&l, false, CONFIGS "subfunctions-bf2.json", 6, "resourceList[0].deviceType",
                       "auxNetDevice pools hold auxiliary devices, which this backend does not serve: "
                       "the pool stays empty");
        ck_assert_str_eq(l, "");
        expect_pool(&bf2.pools[0], "nvidia.com/bf2_sf", SRIOV_AUX_NET_DEVICE, 1);
        {
                sriov_func sf_parent = cx6_rdma;

                strcpy(sf_parent.device, "a2d6");
                strcpy(sf_parent.pf_name, "p0");
                sf_parent.vf_index = 1;
                expect_no_match(&bf2, &sf_parent);      /* a PCI function is never an SF */
        }

        free(log);
        ck_assert_int_eq(load_path(CONFIGS "subfunctions-cx6dx.json", &cx6, &log), 0);
        l = log;
        expect_problem(&l, false, CONFIGS "subfunctions-cx6dx.json", 14, "resourceList[1].deviceType",
                       "auxNetDevice pools hold auxiliary devices, which this backend does not serve: "
                       "the pool stays empty");
        ck_assert_str_eq(l, "");
        expect_pool(&cx6.pools[0], "nvidia.com/cx6dx_vf", SRIOV_NET_DEVICE, 1);
        expect_pool(&cx6.pools[1], "nvidia.com/cx6dx_sf", SRIOV_AUX_NET_DEVICE, 1);
        expect_match(&cx6, &cx6_rdma, 0, 0);
        expect_match(&cx6, &cx6_vdpa, 0, 0);
}
END_TEST

START_TEST(test_sriov_config_docs_per_node_file) {
        _cleanup_(sriov_config_done) sriov_config c = {};
        _cleanup_free_ char *log = NULL;
        const char *l;
        sriov_func vf9 = e810_iavf;

        ck_assert_int_eq(load_path(CONFIGS "per-node.json", &c, &log), 0);
        l = log;
        expect_problem(&l, false, CONFIGS "per-node.json", 1, "resourceList[0].SelectorObj",
                       "unknown key: ignored, as in sriovdp");
        ck_assert_str_eq(l, "");
        expect_pool(&c.pools[0], "intel.com/vf_pool", SRIOV_NET_DEVICE, 1);
        ck_assert(!c.pools[0].selectors[0].is_rdma);            /* "IsRdma" is isRdma */
        ck_assert(!c.pools[0].selectors[0].need_vhost_net);
        expect_match(&c, &e810_iavf, 0, 0);                     /* ens3f0np0#0-4 */
        expect_no_match(&c, &e810_vfio);                        /* VF 6 */
        strcpy(vf9.pf_name, "ens3f1np1");
        vf9.vf_index = 9;
        expect_match(&c, &vf9, 0, 0);                           /* ens3f1np1#0-9 */
        vf9.vf_index = 10;
        expect_no_match(&c, &vf9);
}
END_TEST

START_TEST(test_sriov_config_docs_rdma_and_dpdk) {
        _cleanup_(sriov_config_done) sriov_config rdma = {}, dpdk = {}, mlnx = {}, deploy = {};
        sriov_func cx5 = cx6_rdma, e810_rdma = e810_iavf, x710_vfio = x710_vf;

        strcpy(cx5.device, "1018");
        strcpy(e810_rdma.rdma_dev, "rocep138s0f0v0");
        strcpy(x710_vfio.driver, "vfio-pci");

        load_fixture_clean("rdma.json", &rdma);
        ck_assert_uint_eq(rdma.n_pools, 2);
        expect_pool(&rdma.pools[0], "mellanox.com/mlx_rdma", SRIOV_NET_DEVICE, 1);
        expect_pool(&rdma.pools[1], "intel.com/e810_rdma", SRIOV_NET_DEVICE, 1);
        expect_match(&rdma, &cx5, 0, 0);
        expect_match(&rdma, &e810_rdma, 1, 0);
        expect_no_match(&rdma, &e810_iavf);     /* no RDMA device */
        expect_no_match(&rdma, &cx6_rdma);      /* 101e */

        load_fixture_clean("dpdk.json", &dpdk);
        expect_pool(&dpdk.pools[0], "intel.com/x710_vfio", SRIOV_NET_DEVICE, 1);
        expect_match(&dpdk, &x710_vfio, 0, 0);
        expect_no_match(&dpdk, &x710_vf);
        expect_no_match(&dpdk, &e810_vfio);

        load_fixture_clean("mlnx-dpdk.json", &mlnx);
        expect_pool(&mlnx.pools[0], "intel.com/cx4_vf", SRIOV_NET_DEVICE, 1);
        expect_pool(&mlnx.pools[1], "intel.com/cx5_vf", SRIOV_NET_DEVICE, 1);
        expect_match(&mlnx, &cx5, 1, 0);
        strcpy(cx5.device, "1016");
        expect_match(&mlnx, &cx5, 0, 0);

        load_fixture_clean("deployments.json", &deploy);
        ck_assert_uint_eq(deploy.n_pools, 3);
        expect_pool(&deploy.pools[2], "intel.com/mlx_rdma_vf", SRIOV_NET_DEVICE, 1);
        expect_no_match(&deploy, &x710_vf);     /* iavf is not in i40evf, ixgbevf */
        strcpy(x710_vfio.pf_name, "ens785f1");
        expect_match(&deploy, &x710_vfio, 1, 0);
        strcpy(x710_vfio.pf_name, "ens785f2");
        expect_no_match(&deploy, &x710_vfio);
}
END_TEST

START_TEST(test_sriov_config_docs_vdpa_and_virtual) {
        _cleanup_(sriov_config_done) sriov_config vdpa = {}, virt = {};
        sriov_func virtio = cx6_vdpa, guest_vf = x710_vf;

        load_fixture_clean("vdpa.json", &vdpa);
        expect_pool(&vdpa.pools[0], "intel.com/cx6dx_vdpa_virtio", SRIOV_NET_DEVICE, 1);
        expect_pool(&vdpa.pools[1], "intel.com/cx6dx_vdpa_vhost", SRIOV_NET_DEVICE, 1);
        expect_match(&vdpa, &cx6_vdpa, 1, 0);
        strcpy(virtio.vdpa_type, "virtio");
        expect_match(&vdpa, &virtio, 0, 0);
        expect_no_match(&vdpa, &cx6_rdma);      /* no vDPA device */

        /* in a VM a VF has no PF: pciAddresses pick it */
        load_fixture_clean("dpdk-virt.json", &virt);
        expect_pool(&virt.pools[0], "intel.com/radio_downlink", SRIOV_NET_DEVICE, 1);
        expect_pool(&virt.pools[1], "intel.com/radio_uplink", SRIOV_NET_DEVICE, 1);
        strcpy(guest_vf.address, "0000:00:0a.0");
        strcpy(guest_vf.driver, "vfio-pci");
        guest_vf.vf_index = -1;
        guest_vf.pf_name[0] = guest_vf.pf_address[0] = '\0';
        expect_match(&virt, &guest_vf, 0, 0);
        strcpy(guest_vf.address, "0000:00:07.0");
        expect_match(&virt, &guest_vf, 1, 0);
        strcpy(guest_vf.address, "0000:00:0b.0");
        expect_no_match(&virt, &guest_vf);
}
END_TEST

/* Two E810 PFs with 8 VFs each: VFs 0-5 / 0-3 on iavf, the rest on vfio-pci. */
START_TEST(test_sriov_config_e810_ranges_split_sixteen_vfs) {
        _cleanup_(sriov_config_done) sriov_config c = {};
        unsigned n_kernel = 0, n_vfio = 0;

        load_fixture_clean("e810-ranges.json", &c);
        expect_pool(&c.pools[0], "example.com/e810_kernel", SRIOV_NET_DEVICE, 1);
        expect_pool(&c.pools[1], "example.com/e810_vfio", SRIOV_NET_DEVICE, 1);
        for (int pf = 0; pf < 2; pf++)
                for (int vf = 0; vf < 8; vf++) {
                        sriov_func f = e810_iavf;
                        bool kernel = vf < (pf == 0 ? 6 : 4);
                        size_t sel;
                        int r;

                        (void) snprintf(f.address, sizeof(f.address), "0000:8a:0%d.%d", pf == 0 ? 1 : 5, vf);
                        (void) snprintf(f.pf_address, sizeof(f.pf_address), "0000:8a:00.%d", pf);
                        (void) snprintf(f.pf_name, sizeof(f.pf_name), "ens3f%dnp%d", pf, pf);
                        f.vf_index = vf;
                        strcpy(f.driver, kernel ? "iavf" : "vfio-pci");
                        r = sriov_config_match(&c, &f, &sel);
                        ck_assert_int_eq(r, kernel ? 0 : 1);
                        ck_assert_uint_eq(sel, 0);
                        n_kernel += r == 0;
                        n_vfio += r == 1;
                }
        ck_assert_uint_eq(n_kernel, 10);
        ck_assert_uint_eq(n_vfio, 6);
        expect_no_match(&c, &pf_with_vfs);
}
END_TEST

START_TEST(test_sriov_config_pci_type_takes_any_class) {
        _cleanup_(sriov_config_done) sriov_config c = {};
        sriov_func accel_vfio = accel;

        load_fixture_clean("pci.json", &c);
        expect_pool(&c.pools[0], "example.com/virtio_rng", SRIOV_PCI, 1);
        ck_assert(c.pools[0].exclude_topology);
        expect_pool(&c.pools[1], "example.com/any_vfio", SRIOV_PCI, 1);
        ck_assert(!c.pools[1].exclude_topology);
        expect_match(&c, &rng, 0, 0);
        expect_match(&c, &e810_vfio, 1, 0);     /* a net function on vfio-pci */
        strcpy(accel_vfio.driver, "vfio-pci");
        expect_match(&c, &accel_vfio, 1, 0);    /* an accelerator on vfio-pci */
        expect_no_match(&c, &e810_iavf);
        expect_no_match(&c, &accel);
        expect_no_match(&c, &pf_with_vfs);
}
END_TEST

/* sriovdp's accelerator provider keeps every class-0x12 function; only netDevice drops a PF with VFs */
START_TEST(test_sriov_config_accelerator_pools_take_a_pf_with_vfs) {
        _cleanup_(sriov_config_done) sriov_config c = {}, no_accel = {};
        _cleanup_(kdp_test_unlink_freep) char *path = NULL, *path2 = NULL;
        static const char json[] = "{\"resourceList\": [\n"
                                   "  {\"resourceName\": \"all\", \"deviceType\": \"pci\", \"selectors\": [{\"vendors\": [\"1af4\"]}]},\n"
                                   "  {\"resourceName\": \"qat\", \"deviceType\": \"accelerator\",\n"
                                   "   \"selectors\": [{\"devices\": [\"4940\"]}]}]}";
        static const char pci_only[] = "{\"resourceList\": [{\"resourceName\": \"all\", \"deviceType\": \"pci\",\n"
                                       "  \"selectors\": [{}]}]}";
        sriov_func unbound = accel_pf_with_vfs;

        path = kdp_test_write_temp("sriov-config", ".json", json, strlen(json));
        ck_assert_int_eq(sriov_config_load(NULL, path, NULL, &c), 0);
        expect_match(&c, &accel_pf_with_vfs, 1, 0);
        expect_no_match(&c, &pf_with_vfs);
        unbound.driver[0] = '\0';
        expect_no_match(&c, &unbound);
        /* kdp's pci pools keep the rule of netDevice ones */
        path2 = kdp_test_write_temp("sriov-config", ".json", pci_only, strlen(pci_only));
        ck_assert_int_eq(sriov_config_load(NULL, path2, NULL, &no_accel), 0);
        expect_no_match(&no_accel, &accel_pf_with_vfs);
        expect_match(&no_accel, &accel, 0, 0);
}
END_TEST

/* ---- what is excluded whatever the config ---- */

START_TEST(test_sriov_config_excluded_functions) {
        _cleanup_(sriov_config_done) sriov_config c = {};
        _cleanup_(kdp_test_unlink_freep) char *path = NULL;
        static const char json[] = "{\"resourceList\": [{\"resourceName\": \"any\", \"selectors\": [{}]},\n"
                                   "  {\"resourceName\": \"all\", \"deviceType\": \"pci\", \"selectors\": [{}]}]}";
        sriov_func routed = e810_iavf, unbound = e810_iavf, unbound_rng = rng;

        ck_assert_str_eq(sriov_config_excluded(&pf_with_vfs), "PF with VFs enabled");
        routed.default_route = true;
        ck_assert_str_eq(sriov_config_excluded(&routed), "carries the default route");
        ck_assert_ptr_null(sriov_config_excluded(&e810_iavf));
        ck_assert_ptr_null(sriov_config_excluded(&accel));
        ck_assert_ptr_null(sriov_config_excluded(&rng));
        /* no driver: sriovdp makes no device of it, so a selector that names no driver takes nothing */
        unbound.driver[0] = '\0';
        unbound_rng.driver[0] = '\0';
        ck_assert_str_eq(sriov_config_excluded(&unbound), "driver unbound");
        ck_assert_str_eq(sriov_config_excluded(&unbound_rng), "driver unbound");
        path = kdp_test_write_temp("sriov-config", ".json", json, strlen(json));
        ck_assert_int_eq(sriov_config_load(NULL, path, NULL, &c), 0);
        expect_match(&c, &e810_iavf, 0, 0);
        expect_match(&c, &rng, 1, 0);
        expect_no_match(&c, &unbound);
        expect_no_match(&c, &unbound_rng);
}
END_TEST

START_TEST(test_sriov_config_device_type_names) {
        ck_assert_str_eq(sriov_config_device_type_to_string(SRIOV_NET_DEVICE), "netDevice");
        ck_assert_str_eq(sriov_config_device_type_to_string(SRIOV_ACCELERATOR), "accelerator");
        ck_assert_str_eq(sriov_config_device_type_to_string(SRIOV_AUX_NET_DEVICE), "auxNetDevice");
        ck_assert_str_eq(sriov_config_device_type_to_string(SRIOV_PCI), "pci");
        ck_assert_ptr_null(sriov_config_device_type_to_string(_SRIOV_DEVICE_TYPE_MAX));
        ck_assert_ptr_null(sriov_config_device_type_to_string(_SRIOV_DEVICE_TYPE_INVALID));
}
END_TEST

/* ---- what sriovdp refuses ---- */

/* A file sriovdp refuses: the load fails with -EINVAL and logs exactly this one error. */
typedef struct refused_case {
        const char *name;
        const char *json;
        int line;
        const char *key;
        const char *reason;
} refused_case;

#define INVALID_NAME(n) "invalid resourceName '" n "': sriovdp allows only letters, digits, '_' and '-'"
#define NO_RESOURCE "no resource: sriovdp does not start without one"

static const refused_case refused_cases[] = {
        { "missing resourceName", "{\"resourceList\": [\n"
          "  {\"selectors\": [{\"vendors\": [\"8086\"]}]}\n"
          "]}\n",
          2, "resourceList[0]", "missing resourceName" },
        { "resourceName with a space", "{\"resourceList\": [\n"
          "  {\"resourceName\": \"e810 vfio\",\n"
          "   \"selectors\": [{\"vendors\": [\"8086\"]}]}\n"
          "]}\n",
          2, "resourceList[0].resourceName", INVALID_NAME("e810 vfio") },
        { "empty resourceName", "{\"resourceList\": [{\"resourceName\": \"\", \"selectors\": [{}]}]}",
          1, "resourceList[0].resourceName", INVALID_NAME("") },
        { "vdpaType with isRdma", "{\"resourceList\": [{\n"
          "  \"resourceName\": \"cx6\",\n"
          "  \"selectors\": [{\"vendors\": [\"15b3\"]}, {\n"
          "    \"isRdma\": true,\n"
          "    \"vdpaType\": \"vhost\"}]\n"
          "}]}\n",
          5, "resourceList[0].selectors[1].vdpaType",
          "vdpaType together with isRdma (line 4): sriovdp refuses the pair" },
        { "excludeTopology a number", "{\"resourceList\": [{\"resourceName\": \"a\", \"selectors\": [{}],\n"
          "  \"excludeTopology\": 1}]}\n",
          2, "resourceList[0].excludeTopology", "wrong type: want a boolean, got a number" },
        { "resourceName a number", "{\"resourceList\": [{\"resourceName\": 7}]}",
          1, "resourceList[0].resourceName", "wrong type: want a string, got a number" },
        { "additionalInfo value a number", "{\"resourceList\": [{\"resourceName\": \"a\", \"selectors\": [{}],\n"
          "  \"additionalInfo\": {\"*\": {\"vlan\": 100}}}]}",
          2, "resourceList[0].additionalInfo.*.vlan", "wrong type: want a string, got a number" },
        { "resourceList an object", "{\"resourceList\": {\"resourceName\": \"a\"}}",
          1, "resourceList", "wrong type: want a list of resource objects, got an object" },
        { "top level a list", "[{\"resourceName\": \"a\"}]",
          1, NULL, "wrong type: want an object with a resourceList, got a list" },
        { "NUL in a string", "{\"resourceList\": [{\"resourceName\": \"a\\u0000b\", \"selectors\": [{}]}]}",
          1, "resourceList[0].resourceName", "string holds a NUL character" },
        { "unknown deviceType", "{\"resourceList\": [{\"resourceName\": \"a\",\n"
          "  \"deviceType\": \"NetDevice\", \"selectors\": [{}]}]}",
          2, "resourceList[0].deviceType",
          "unknown deviceType 'NetDevice': want netDevice, accelerator, auxNetDevice or pci" },
        { "auxNetDevice without auxTypes", "{\"resourceList\": [{\"resourceName\": \"sf\",\n"
          "  \"deviceType\": \"auxNetDevice\",\n"
          "  \"selectors\": [{\"auxTypes\": [\"sf\"]}, {\"vendors\": [\"15b3\"]}]}]}",
          3, "resourceList[0].selectors[1]", "no auxTypes: sriovdp refuses an auxNetDevice selector without them" },
        { "auxNetDevice with empty auxTypes", "{\"resourceList\": [{\"resourceName\": \"sf\",\n"
          "  \"deviceType\": \"auxNetDevice\", \"selectors\": {\"auxTypes\": []}}]}",
          2, "resourceList[0].selectors.auxTypes",
          "no auxTypes: sriovdp refuses an auxNetDevice selector without them" },
        { "auxNetDevice with an auxType other than sf", "{\"resourceList\": [{\"resourceName\": \"sf\",\n"
          "  \"deviceType\": \"auxNetDevice\", \"selectors\": [{\"auxTypes\": [\"sf\", \"eth\"]}]}]}",
          2, "resourceList[0].selectors[0].auxTypes[1]", "auxTypes 'eth': sriovdp supports only 'sf'" },
        { "a comment", "{\"resourceList\": [\n"
          "  # a comment\n"
          "]}\n",
          2, NULL, "not JSON: plain scalar cannot start with '#' (column 3)" },
        { "unquoted key", "{resourceList: []}", 1, NULL, "not JSON: Invalid JSON plain scalar (column 2)" },
        { "empty file", "", 1, NULL, "not JSON: JSON does not allow empty root content (column 1)" },
        { "two documents", "{\"resourceList\": []} {}", 1, NULL, "not JSON: missing document start (column 22)" },
        { "a byte not UTF-8 after the value", "{\"resourceList\": []}\xe9", 1, NULL,
          "not JSON: a byte that is not UTF-8 (column 21)" },
        { "a byte not UTF-8 in a string", "{\"resourceList\": [{\"resourceName\": \"caf\xe9\", \"selectors\": [{}]}]}", 1,
          NULL, "not JSON: a byte that is not UTF-8 (column 40)" },
        { "a UTF-8 byte order mark", "\xef\xbb\xbf{\"resourceList\": [{\"resourceName\": \"a\", \"selectors\": [{}]}]}",
          1, NULL, "not JSON: a UTF-8 byte order mark (column 1)" },
        { "empty resourceList", "{\"resourceList\": []}", 1, "resourceList", NO_RESOURCE },
        { "no resourceList", "{}", 0, "resourceList", NO_RESOURCE },
        { "null", "null", 0, "resourceList", NO_RESOURCE },
};

START_TEST(test_sriov_config_refuses) {
        const refused_case *t = &refused_cases[_i];

        expect_refused(t->name, t->json, t->line, t->key, t->reason);
}
END_TEST

START_TEST(test_sriov_config_refuses_duplicate_resource) {
        _cleanup_(sriov_config_done) sriov_config c = {};
        _cleanup_free_ char *log = NULL, *path = NULL;

        expect_refused("duplicate resource",
                       "{\"resourceList\": [\n"
                       "  {\"resourceName\": \"vf\", \"selectors\": [{\"drivers\": [\"iavf\"]}]},\n"
                       "  {\"resourceName\": \"vf\", \"resourcePrefix\": \"intel.com\",\n"
                       "   \"selectors\": [{\"drivers\": [\"vfio-pci\"]}]}\n"
                       "]}\n",
                       3, "resourceList[1].resourceName",
                       "duplicate resource 'intel.com/vf': resourceList[0] (line 2) has it already");

        /* the same name under another prefix is another resource */
        ck_assert_int_eq(load_text("{\"resourceList\": [\n"
                                   "  {\"resourceName\": \"vf\", \"selectors\": [{\"drivers\": [\"iavf\"]}]},\n"
                                   "  {\"resourceName\": \"vf\", \"resourcePrefix\": \"example.com\",\n"
                                   "   \"selectors\": [{\"drivers\": [\"vfio-pci\"]}]}\n"
                                   "]}\n", &c, &log, &path), 0);
        ck_assert_str_eq(log, "");
        ck_assert_str_eq(c.pools[0].resource, "intel.com/vf");
        ck_assert_str_eq(c.pools[1].resource, "example.com/vf");
        expect_match(&c, &e810_iavf, 0, 0);
        expect_match(&c, &e810_vfio, 1, 0);
}
END_TEST

START_TEST(test_sriov_config_refuses_missing_file) {
        _cleanup_(sriov_config_done) sriov_config c = {};
        _cleanup_free_ char *log = NULL;
        const char *l;

        ck_assert_int_eq(load_path(CONFIGS "no-such-file.json", &c, &log), -ENOENT);
        l = log;
        kdp_test_expect_line(&l, 'E', "config.c",
                             "\"Failed to read SR-IOV config file\" path=\"" CONFIGS "no-such-file.json\" "
                             "err=\"No such file or directory\"");
        ck_assert_str_eq(l, "");
}
END_TEST

START_TEST(test_sriov_config_refuses_raw_nul_byte) {
        static const char json[] = "{\"resourceList\": [{\"resourceName\": \"a\", \"selectors\": [{}]}]}\n\0{}";
        _cleanup_(kdp_test_unlink_freep) char *path = kdp_test_write_temp("sriov-config", ".json", json, sizeof(json) - 1);
        _cleanup_(sriov_config_done) sriov_config c = {};
        _cleanup_free_ char *log = NULL;
        const char *l;

        ck_assert_int_eq(load_path(path, &c, &log), -EINVAL);
        l = log;
        expect_problem(&l, true, path, 2, NULL, "not JSON: a NUL byte (column 1)");
        ck_assert_str_eq(l, "");
}
END_TEST

START_TEST(test_sriov_config_refuses_fifo_and_device_without_blocking) {
        _cleanup_(sriov_config_done) sriov_config c = {}, d = {};
        _cleanup_free_ char *log = NULL, *log2 = NULL, *fifo = NULL, *want = NULL;
        char dir[] = "/tmp/kdp-test-sriov-config-XXXXXX";
        const char *l;

        ck_assert_ptr_nonnull(mkdtemp(dir));
        ck_assert_int_ge(asprintf(&fifo, "%s/config.json", dir), 0);
        ck_assert_int_eq(mkfifo(fifo, 0600), 0);
        ck_assert_int_eq(load_path(fifo, &c, &log), -EINVAL);
        ck_assert_int_eq(load_path("/dev/zero", &d, &log2), -EINVAL);
        ck_assert_int_eq(unlink(fifo), 0);
        ck_assert_int_eq(rmdir(dir), 0);

        l = log;
        ck_assert_int_ge(asprintf(&want, "\"Failed to read SR-IOV config file\" path=\"%s\" "
                                         "reason=\"a FIFO, not a regular file\" err=\"Invalid argument\"", fifo), 0);
        kdp_test_expect_line(&l, 'E', "config.c", want);
        ck_assert_str_eq(l, "");
        l = log2;
        kdp_test_expect_line(&l, 'E', "config.c", "\"Failed to read SR-IOV config file\" path=\"/dev/zero\" "
                                                  "reason=\"a character device, not a regular file\" "
                                                  "err=\"Invalid argument\"");
        ck_assert_str_eq(l, "");
}
END_TEST

/* `n` pools, one a line from line 2: {"resourceName": "p<i>", "selectors": [{"drivers": ["iavf"]}]} (free()) */
static char *pools_json(size_t n) {
        char *t = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&t, &size);

        ck_assert_ptr_nonnull(f);
        fputs("{\"resourceList\": [\n", f);
        for (size_t i = 0; i < n; i++)
                fprintf(f, "  {\"resourceName\": \"p%zu\", \"selectors\": [{\"drivers\": [\"iavf\"]}]}%s\n", i,
                        i + 1 < n ? "," : "");
        fputs("]}\n", f);
        ck_assert_int_eq(fclose(f), 0);
        return t;
}

START_TEST(test_sriov_config_refuses_more_pools_than_the_limit) {
        _cleanup_(sriov_config_done) sriov_config c = {};
        _cleanup_free_ char *at = pools_json(SRIOV_POOLS_MAX), *past = pools_json(SRIOV_POOLS_MAX + 1);
        _cleanup_free_ char *log = NULL, *path = NULL;

        ck_assert_int_eq(SRIOV_POOLS_MAX, 128);
        ck_assert_int_eq(load_text(at, &c, &log, &path), 0);
        ck_assert_str_eq(log, "");
        ck_assert_uint_eq(c.n_pools, 128);
        ck_assert_str_eq(c.pools[127].resource, "intel.com/p127");
        expect_refused("129 pools", past, 130, "resourceList",
                       "more than 128 resources: kdpd serves at most 128 from one config file");
}
END_TEST

/* A list past the framework's entry limit is refused before a document is built, naming its path. */
START_TEST(test_sriov_config_refuses_a_list_past_the_entry_limit) {
        _cleanup_free_ char *at = NULL, *past = NULL, *path = NULL, *log = NULL;
        _cleanup_(sriov_config_done) sriov_config c = {};
        char *t = NULL;
        size_t size = 0;
        FILE *f;

        for (int n = KDP_CONFIG_SHAPE_ENTRIES_MAX; n <= KDP_CONFIG_SHAPE_ENTRIES_MAX + 1; n++) {
                f = open_memstream(&t, &size);
                fputs("{\"resourceList\": [{\"resourceName\": \"a\", \"selectors\": [{\"vendors\": [\n", f);
                for (int i = 0; i < n; i++)
                        fprintf(f, "  \"%04x\"%s\n", i, i + 1 < n ? "," : "");
                fputs("]}]}]}\n", f);
                ck_assert_int_eq(fclose(f), 0);
                if (n == KDP_CONFIG_SHAPE_ENTRIES_MAX)
                        at = t;
                else
                        past = t;
        }
        ck_assert_int_eq(load_text(at, &c, &log, &path), 0);
        ck_assert_str_eq(log, "");
        ck_assert_uint_eq(c.pools[0].selectors[0].vendors.n, 4096);
        expect_refused("4097 vendors", past, 4098, "resourceList[0].selectors[0].vendors",
                       "a list of more than 4096 entries (column 3)");
        expect_refused("17 levels", "{\"resourceList\": [[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]}", 1,
                       "resourceList[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]",
                       "nested deeper than 16 levels (column 33)");
}
END_TEST

START_TEST(test_sriov_config_reports_every_problem_of_a_file) {
        _cleanup_(sriov_config_done) sriov_config c = {};
        _cleanup_free_ char *log = NULL, *path = NULL;
        const char *l;

        ck_assert_int_eq(load_text("{\"resourceList\": [\n"
                                   "  {\"resourceName\": \"a b\", \"selectors\": [{}]},\n"
                                   "  {\"resourceName\": \"c\", \"colour\": \"red\", \"selectors\": [{}]},\n"
                                   "  {\"resourceName\": \"d\", \"deviceType\": \"gpu\", \"selectors\": [{}]}\n"
                                   "]}\n", &c, &log, &path), -EINVAL);
        l = log;
        expect_problem(&l, true, path, 2, "resourceList[0].resourceName",
                       "invalid resourceName 'a b': sriovdp allows only letters, digits, '_' and '-'");
        expect_problem(&l, false, path, 3, "resourceList[1].colour", "unknown key: ignored, as in sriovdp");
        expect_problem(&l, true, path, 4, "resourceList[2].deviceType",
                       "unknown deviceType 'gpu': want netDevice, accelerator, auxNetDevice or pci");
        ck_assert_str_eq(l, "");
}
END_TEST

/* ---- a pool whose selectors do not decode: dropped, the others served ---- */

typedef struct dropped_case {
        const char *name;
        const char *selectors;  /* pool "a"'s selectors value, on line 2 */
        const char *key;
        const char *reason;
} dropped_case;

static const dropped_case dropped_cases[] = {
        { "vendors a string", "[{\"vendors\": \"8086\"}]", "resourceList[0].selectors[0].vendors",
          "wrong type: want a list of strings, got a string" },
        { "a device a number", "[{\"devices\": [\"1889\", 4242]}]", "resourceList[0].selectors[0].devices[1]",
          "wrong type: want a string, got a number" },
        { "isRdma a string", "[{\"isRdma\": \"true\"}]", "resourceList[0].selectors[0].isRdma",
          "wrong type: want a boolean, got a string" },
        { "selectors a string", "\"all\"", "resourceList[0].selectors",
          "wrong type: want a list of selector objects or one selector object, got a string" },
        { "a selector a list", "[[]]", "resourceList[0].selectors[0]",
          "wrong type: want a selector object, got a list" },
        { "a pfNames entry an object, in the second selector", "[{\"vendors\": [\"8086\"]}, {\"pfNames\": [{}]}]",
          "resourceList[0].selectors[1].pfNames[0]", "wrong type: want a string, got an object" },
        { "the older one-object syntax", "{\"drivers\": true}", "resourceList[0].selectors.drivers",
          "wrong type: want a list of strings, got a boolean" },
};

/* sriovdp's readConfig decodes each pool's selectors on their own and drops (warns) the pool they
 * do not decode for; the invalid name and vdpaType with isRdma of that pool are never checked. */
START_TEST(test_sriov_config_drops_pool_with_selectors_of_a_wrong_type) {
        const dropped_case *t = &dropped_cases[_i];
        _cleanup_(sriov_config_done) sriov_config c = {};
        _cleanup_free_ char *log = NULL, *path = NULL, *json = NULL, *reason = NULL;
        const char *l;

        ck_assert_int_ge(asprintf(&json, "{\"resourceList\": [\n"
                                         "  {\"resourceName\": \"a\", \"selectors\": %s},\n"
                                         "  {\"resourceName\": \"e810_iavf\", \"selectors\": [{\"drivers\": [\"iavf\"]}]}\n"
                                         "]}\n", t->selectors), 0);
        ck_assert_msg(load_text(json, &c, &log, &path) == 0, "%s: %s", t->name, log);
        ck_assert_int_ge(asprintf(&reason, "%s: the pool a is dropped, the others are served, as in sriovdp",
                                  t->reason), 0);
        l = log;
        expect_problem(&l, false, path, 2, t->key, reason);
        ck_assert_str_eq(l, "");
        ck_assert_uint_eq(c.n_pools, 1);
        expect_pool(&c.pools[0], "intel.com/e810_iavf", SRIOV_NET_DEVICE, 1);
        expect_match(&c, &e810_iavf, 0, 0);
}
END_TEST

/* sriovdp exits when no pool is left ("no resource configuration") */
START_TEST(test_sriov_config_refuses_file_whose_every_pool_is_dropped) {
        expect_problems("{\"resourceList\": [{\"resourceName\": \"a\",\n"
                        "  \"selectors\": [{\"vendors\": \"8086\"}]}]}\n", -EINVAL, (const problem_want[]){
                { false, 2, "resourceList[0].selectors[0].vendors",
                  "wrong type: want a list of strings, got a string: the pool a is dropped, the others are served, "
                  "as in sriovdp" },
                { true, 1, "resourceList",
                  "no resource left once the pools whose selectors do not load were dropped: sriovdp does not "
                  "start without one" } }, 2);
}
END_TEST

START_TEST(test_sriov_config_dropped_pool_is_not_validated_and_keeps_indexes) {
        expect_problems("{\"resourceList\": [\n"
                        "  {\"resourceName\": \"b\", \"selectors\": [{}]},\n"
                        "  {\"resourceName\": \"not valid\", \"selectors\": [{\"isRdma\": true,\n"
                        "   \"vdpaType\": \"vhost\", \"vendors\": 8086}]},\n"
                        "  {\"resourceName\": \"b\", \"selectors\": [{}]}\n"
                        "]}\n", -EINVAL, (const problem_want[]){
                { false, 4, "resourceList[1].selectors[0].vendors",
                  "wrong type: want a list of strings, got a number: the pool not valid is dropped, the others are "
                  "served, as in sriovdp" },
                { true, 5, "resourceList[2].resourceName",
                  "duplicate resource 'intel.com/b': resourceList[0] (line 2) has it already" } }, 2);
}
END_TEST

/* ---- what sriovdp silently drops or mis-parses: accepted, with a warning ---- */

START_TEST(test_sriov_config_warns_unknown_keys) {
        _cleanup_(sriov_config_done) sriov_config top = {}, pool = {}, sel = {};

        expect_warned("{\"resourceList\": [{\"resourceName\": \"a\", \"selectors\": [{}]}],\n"
                      " \"version\": 2}",
                      &top, 2, "version", "unknown key: ignored, as in sriovdp");
        ck_assert_uint_eq(top.n_pools, 1);
        expect_warned("{\"resourceList\": [{\"resourceName\": \"a\", \"selectors\": [{}],\n"
                      "  \"mtu\": 9000}]}",
                      &pool, 2, "resourceList[0].mtu", "unknown key: ignored, as in sriovdp");
        ck_assert_str_eq(pool.pools[0].resource, "intel.com/a");
        expect_warned("{\"resourceList\": [{\"resourceName\": \"a\", \"selectors\": [{\n"
                      "  \"vendors\": [\"8086\"],\n"
                      "  \"vendor\": [\"15b3\"]}]}]}",
                      &sel, 3, "resourceList[0].selectors[0].vendor", "unknown key: ignored, as in sriovdp");
        expect_strings(&sel.pools[0].selectors[0].vendors, STRS("8086"));
        expect_match(&sel, &e810_iavf, 0, 0);
        expect_no_match(&sel, &cx6_rdma);
}
END_TEST

START_TEST(test_sriov_config_warns_acpi_indexes_on_accelerators) {
        _cleanup_(sriov_config_done) sriov_config c = {};
        sriov_func f = accel;

        expect_warned("{\"resourceList\": [{\"resourceName\": \"fpga\", \"deviceType\": \"accelerator\",\n"
                      "  \"selectors\": [{\"vendors\": [\"8086\"],\n"
                      "                 \"acpiIndexes\": [\"101\"]}]}]}",
                      &c, 3, "resourceList[0].selectors[0].acpiIndexes",
                      "acpiIndexes does not apply to accelerator pools: ignored, as in sriovdp");
        expect_strings(&c.pools[0].selectors[0].acpi_indexes, NO_STRS);
        expect_match(&c, &f, 0, 0);             /* whatever its acpi_index */
        strcpy(f.acpi_index, "7");
        expect_match(&c, &f, 0, 0);
}
END_TEST

START_TEST(test_sriov_config_applies_acpi_indexes_on_net_devices) {
        _cleanup_(sriov_config_done) sriov_config c = {};
        _cleanup_free_ char *log = NULL, *path = NULL;
        sriov_func f = e810_iavf;

        ck_assert_int_eq(load_text("{\"resourceList\": [{\"resourceName\": \"onboard\",\n"
                                   "  \"selectors\": [{\"acpiIndexes\": [\"101\"]}]}]}", &c, &log, &path), 0);
        ck_assert_str_eq(log, "");
        expect_no_match(&c, &f);
        strcpy(f.acpi_index, "101");
        expect_match(&c, &f, 0, 0);
}
END_TEST

START_TEST(test_sriov_config_warns_fields_other_types_do_not_apply) {
        _cleanup_(sriov_config_done) sriov_config c = {};
        _cleanup_free_ char *log = NULL, *path = NULL;
        const char *l;

        ck_assert_int_eq(load_text("{\"resourceList\": [{\"resourceName\": \"rng\", \"deviceType\": \"pci\",\n"
                                   "  \"selectors\": [{\"vendors\": [\"1af4\"],\n"
                                   "                 \"pfNames\": [\"ens3f0np0\"],\n"
                                   "                 \"isRdma\": true}]}]}", &c, &log, &path), 0);
        l = log;
        expect_problem(&l, false, path, 3, "resourceList[0].selectors[0].pfNames",
                       "pfNames does not apply to pci pools: ignored, as in sriovdp");
        expect_problem(&l, false, path, 4, "resourceList[0].selectors[0].isRdma",
                       "isRdma does not apply to pci pools: ignored, as in sriovdp");
        ck_assert_str_eq(l, "");
        ck_assert_uint_eq(c.pools[0].selectors[0].n_pf_names, 0);
        ck_assert(!c.pools[0].selectors[0].is_rdma);
        expect_match(&c, &rng, 0, 0);
}
END_TEST

/* Go drops a key its struct lacks before looking at the value: no type check there. */
START_TEST(test_sriov_config_ignored_fields_are_not_type_checked) {
        _cleanup_(sriov_config_done) sriov_config c = {};

        expect_warned("{\"resourceList\": [{\"resourceName\": \"fpga\", \"deviceType\": \"accelerator\",\n"
                      "  \"selectors\": [{\"pfNames\": 5}]}]}",
                      &c, 2, "resourceList[0].selectors[0].pfNames",
                      "pfNames does not apply to accelerator pools: ignored, as in sriovdp");
        expect_match(&c, &accel, 0, 0);
}
END_TEST

START_TEST(test_sriov_config_warns_malformed_range_and_stops_there) {
        _cleanup_(sriov_config_done) sriov_config c = {};
        _cleanup_free_ char *log = NULL, *path = NULL;
        const char *l;
        sriov_func f = e810_iavf;

        ck_assert_int_eq(load_text("{\"resourceList\": [{\"resourceName\": \"a\",\n"
                                   "  \"selectors\": [{\"pfNames\": [\"ens3f0np0#1,3-\",\n"
                                   "                              \"ens1f0np0#x\",\n"
                                   "                              \"ens785f0#0#1\"]}]}]}", &c, &log, &path), 0);
        l = log;
        expect_problem(&l, false, path, 2, "resourceList[0].selectors[0].pfNames[0]",
                       "malformed VF range '3-' in 'ens3f0np0#1,3-': it and the ranges after it select no VF, "
                       "as in sriovdp");
        expect_problem(&l, false, path, 3, "resourceList[0].selectors[0].pfNames[1]",
                       "malformed VF range 'x' in 'ens1f0np0#x': it and the ranges after it select no VF, "
                       "as in sriovdp");
        expect_problem(&l, false, path, 4, "resourceList[0].selectors[0].pfNames[2]",
                       "more than one '#' in 'ens785f0#0#1': the entry selects no VF, as in sriovdp");
        ck_assert_str_eq(l, "");

        ck_assert(c.pools[0].selectors[0].pf_names[0].malformed);
        f.vf_index = 1;
        expect_match(&c, &f, 0, 0);             /* tried before the bad range */
        f.vf_index = 3;
        expect_no_match(&c, &f);
        f.vf_index = 0;
        expect_no_match(&c, &f);
        expect_no_match(&c, &cx6_rdma);
        expect_no_match(&c, &x710_vf);
}
END_TEST

START_TEST(test_sriov_config_reads_ranges_as_go_atoi_does) {
        _cleanup_(sriov_config_done) sriov_config c = {};
        _cleanup_free_ char *log = NULL, *path = NULL;
        sriov_func f = e810_iavf;

        /* "+2" is 2 for strconv.Atoi; "6-4" is empty, not malformed; 70000 is past any VF */
        ck_assert_int_eq(load_text("{\"resourceList\": [{\"resourceName\": \"a\",\n"
                                   "  \"selectors\": [{\"rootDevices\": [\"0000:8A:00.0#+2,6-4,007,70-70000\"]}]}]}",
                                   &c, &log, &path), 0);
        ck_assert_str_eq(log, "");
        for (int i = 0; i < 80; i++) {
                f.vf_index = i;
                expect_match(&c, &f, i == 2 || i == 7 || i >= 70 ? 0 : -1, 0);
        }
        f.vf_index = 65535;
        expect_match(&c, &f, 0, 0);
}
END_TEST

START_TEST(test_sriov_config_warns_second_entry_for_a_pf) {
        _cleanup_(sriov_config_done) sriov_config c = {};
        sriov_func f = e810_iavf;

        expect_warned("{\"resourceList\": [{\"resourceName\": \"a\",\n"
                      "  \"selectors\": [{\"pfNames\": [\"ens3f0np0#0-3\",\n"
                      "                              \"ENS3F0NP0#4-7\"]}]}]}",
                      &c, 3, "resourceList[0].selectors[0].pfNames[1]",
                      "'ENS3F0NP0' names the PF of entry 0 again: sriovdp reads only the first entry of a PF, "
                      "so this one selects no VF");
        f.vf_index = 3;
        expect_match(&c, &f, 0, 0);
        f.vf_index = 5;
        expect_no_match(&c, &f);
}
END_TEST

START_TEST(test_sriov_config_warns_several_link_types) {
        _cleanup_(sriov_config_done) sriov_config c = {};
        sriov_func ib = cx6_rdma;

        expect_warned("{\"resourceList\": [{\"resourceName\": \"a\",\n"
                      "  \"selectors\": [{\n"
                      "    \"LinkTypes\": [\"ether\", \"infiniband\"]}]}]}",
                      &c, 3, "resourceList[0].selectors[0].LinkTypes",
                      "more than one linkTypes value: any of them matches, sriovdp warns the same");
        expect_match(&c, &cx6_rdma, 0, 0);
        strcpy(ib.link_type, "infiniband");
        expect_match(&c, &ib, 0, 0);
        ib.link_type[0] = '\0';
        expect_no_match(&c, &ib);
}
END_TEST

START_TEST(test_sriov_config_warns_hyphen_in_resource_name) {
        _cleanup_(sriov_config_done) sriov_config c = {};

        expect_warned("{\"resourceList\": [{\"resourceName\": \"e810-vfio\", \"resourcePrefix\": \"example.com\",\n"
                      "  \"selectors\": [{\"drivers\": [\"vfio-pci\"]}]}]}",
                      &c, 1, "resourceList[0].resourceName",
                      "'-' in resourceName: the env key PCIDEVICE_EXAMPLE_COM_E810-VFIO is not a shell identifier");
        ck_assert_str_eq(c.pools[0].resource, "example.com/e810-vfio");
        expect_match(&c, &e810_vfio, 0, 0);
}
END_TEST

START_TEST(test_sriov_config_keys_fold_case_and_the_last_one_wins) {
        _cleanup_(sriov_config_done) sriov_config c = {};
        _cleanup_free_ char *log = NULL, *path = NULL;
        const char *l;

        ck_assert_int_eq(load_text("{\"ResourceList\": [{\"RESOURCENAME\": \"a\",\n"
                                   "  \"Selectors\": [{\"isRdma\": false,\n"
                                   "                 \"ISRDMA\": true,\n"
                                   "                 \"Vendors\": [\"15b3\"]}]}]}", &c, &log, &path), 0);
        l = log;
        expect_problem(&l, false, path, 2, "resourceList[0].Selectors[0].isRdma",
                       "key given again at line 3: the later one is used, as in sriovdp");
        ck_assert_str_eq(l, "");
        ck_assert_str_eq(c.pools[0].resource, "intel.com/a");
        ck_assert(c.pools[0].selectors[0].is_rdma);
        expect_strings(&c.pools[0].selectors[0].vendors, STRS("15b3"));
        expect_match(&c, &cx6_rdma, 0, 0);
        expect_no_match(&c, &cx6_vdpa);         /* no RDMA device */
}
END_TEST

START_TEST(test_sriov_config_warns_unusable_pools) {
        _cleanup_(sriov_config_done) sriov_config none = {}, empty = {}, vdpa = {};

        expect_warned("{\"resourceList\": [{\"resourceName\": \"a\"}]}",
                      &none, 1, "resourceList[0].selectors", "no selector object: the pool takes no device");
        ck_assert_uint_eq(none.pools[0].n_selectors, 0);
        expect_no_match(&none, &e810_iavf);
        expect_warned("{\"resourceList\": [{\"resourceName\": \"a\",\n  \"selectors\": []}]}",
                      &empty, 2, "resourceList[0].selectors", "no selector object: the pool takes no device");
        expect_no_match(&empty, &e810_iavf);
        expect_warned("{\"resourceList\": [{\"resourceName\": \"a\",\n  \"selectors\": [{\"vdpaType\": \"VHOST\"}]}]}",
                      &vdpa, 2, "resourceList[0].selectors[0].vdpaType",
                      "vdpaType 'VHOST' is neither 'virtio' nor 'vhost': the selector takes no device, as in sriovdp");
        expect_no_match(&vdpa, &cx6_vdpa);
}
END_TEST

START_TEST(test_sriov_config_null_is_the_zero_value) {
        _cleanup_(sriov_config_done) sriov_config c = {};
        _cleanup_free_ char *log = NULL, *path = NULL;

        ck_assert_int_eq(load_text("{\"resourceList\": [{\"resourceName\": \"a\", \"resourcePrefix\": null,\n"
                                   "  \"deviceType\": null, \"excludeTopology\": null, \"additionalInfo\": null,\n"
                                   "  \"selectors\": [{\"vendors\": null, \"isRdma\": null, \"drivers\": [null]}]}]}",
                                   &c, &log, &path), 0);
        ck_assert_str_eq(log, "");
        expect_pool(&c.pools[0], "intel.com/a", SRIOV_NET_DEVICE, 1);
        expect_strings(&c.pools[0].selectors[0].vendors, NO_STRS);
        expect_strings(&c.pools[0].selectors[0].drivers, STRS(""));
        ck_assert(!c.pools[0].selectors[0].is_rdma);
        {
                sriov_func unbound = e810_iavf;

                /* [null] is [""], a driver no bound function has; an unbound one is excluded */
                unbound.driver[0] = '\0';
                expect_no_match(&c, &unbound);
                expect_no_match(&c, &e810_iavf);
        }
}
END_TEST

/* additionalInfo {} is a map (Go: non-nil, so sriovdp's extra provider answers); null and absent are none */
START_TEST(test_sriov_config_empty_additional_info_is_kept) {
        _cleanup_(sriov_config_done) sriov_config c = {};
        _cleanup_(kdp_test_unlink_freep) char *path = NULL;
        static const char json[] = "{\"resourceList\": [\n"
                                   "  {\"resourceName\": \"a\", \"selectors\": [{}], \"additionalInfo\": {}},\n"
                                   "  {\"resourceName\": \"b\", \"selectors\": [{}], \"additionalInfo\": null},\n"
                                   "  {\"resourceName\": \"c\", \"selectors\": [{}]}]}";
        sriov_pool without;

        path = kdp_test_write_temp("sriov-config", ".json", json, strlen(json));
        ck_assert_int_eq(sriov_config_load(NULL, path, NULL, &c), 0);
        ck_assert_uint_eq(c.n_pools, 3);
        ck_assert(c.pools[0].has_info);
        ck_assert_uint_eq(c.pools[0].n_info, 0);
        ck_assert(!c.pools[1].has_info);
        ck_assert(!c.pools[2].has_info);
        /* a reload from {} to none changes the pool's answer */
        without = c.pools[0];
        without.has_info = false;
        ck_assert(sriov_config_pool_equal(&c.pools[0], &c.pools[0]));
        ck_assert(!sriov_config_pool_equal(&c.pools[0], &without));
}
END_TEST

START_TEST(test_sriov_config_default_prefix_comes_from_the_caller) {
        _cleanup_(sriov_config_done) sriov_config c = {};
        _cleanup_(kdp_test_unlink_freep) char *path = NULL;
        static const char json[] = "{\"resourceList\": [{\"resourceName\": \"a\", \"selectors\": [{}]},\n"
                                   "  {\"resourceName\": \"b\", \"resourcePrefix\": \"\", \"selectors\": [{}]}]}";

        path = kdp_test_write_temp("sriov-config", ".json", json, strlen(json));
        ck_assert_int_eq(sriov_config_load(NULL, path, "example.org", &c), 0);
        ck_assert_str_eq(c.pools[0].resource, "example.org/a");
        ck_assert_str_eq(c.pools[1].resource, "example.org/b");
}
END_TEST

/* ---- pools that advertise and answer the same ---- */

START_TEST(test_sriov_config_pool_equal) {
        _cleanup_(sriov_config_done) sriov_config a = {}, b = {}, d = {};
        _cleanup_free_ char *log = NULL, *path = NULL;

        ck_assert_int_eq(load_path(CONFIGS "readme.json", &a, &log), 0);
        free(log);
        ck_assert_int_eq(load_path(CONFIGS "readme.json", &b, &log), 0);
        for (size_t i = 0; i < a.n_pools; i++)
                for (size_t j = 0; j < b.n_pools; j++)
                        ck_assert_msg(sriov_config_pool_equal(&a.pools[i], &b.pools[j]) == (i == j),
                                      "pools %zu and %zu", i, j);

        /* the same pool on other lines, in a file that says it another way */
        free(log);
        ck_assert_int_eq(load_text("{\"resourceList\": [\n\n\n"
                                   "{\"selectors\": {\"drivers\": [\"i40evf\", \"ixgbevf\", \"iavf\"],\n"
                                   "  \"devices\": [\"154c\", \"10ed\", \"1889\"], \"vendors\": [\"8086\"]},\n"
                                   " \"resourcePrefix\": \"intel.com\", \"resourceName\": \"nic_kernel\"},\n"
                                   "{\"resourceName\": \"nic_kernel_token\",\n"
                                   " \"selectors\": [{\"vendors\": [\"8086\"],\n"
                                   "  \"devices\": [\"154c\", \"10ed\", \"1889\"],\n"
                                   "  \"drivers\": [\"i40evf\", \"ixgbevf\", \"iavf\"]}],\n"
                                   " \"additionalInfo\": {\"*\": {\"token\": \"another\"}}},\n"
                                   "{\"resourceName\": \"nic_kernel_object\", \"excludeTopology\": true,\n"
                                   " \"selectors\": {\"vendors\": [\"8086\"],\n"
                                   "  \"devices\": [\"154c\", \"10ed\", \"1889\"],\n"
                                   "  \"drivers\": [\"i40evf\", \"ixgbevf\", \"iavf\"]}}\n"
                                   "]}", &d, &log, &path), 0);
        ck_assert_str_eq(log, "");
        ck_assert(sriov_config_pool_equal(&a.pools[0], &d.pools[0]));
        ck_assert(!sriov_config_pool_equal(&a.pools[7], &d.pools[1]));         /* another token */
        ck_assert(!sriov_config_pool_equal(&a.pools[9], &d.pools[2]));         /* excludeTopology */
}
END_TEST

START_TEST(test_sriov_config_pool_equal_sees_ranges_and_flags) {
        static const char *const variants[] = {
                "{\"pfNames\": [\"ens3f0np0#0-3\"]}",
                "{\"pfNames\": [\"ens3f0np0#0-4\"]}",
                "{\"pfNames\": [\"ens3f0np0\"]}",
                "{\"pfNames\": [\"ens3f0np0#0-3,x\"]}",
                "{\"rootDevices\": [\"ens3f0np0#0-3\"]}",
                "{\"pfNames\": [\"ens3f0np0#0-3\"], \"needVhostNet\": true}",
                "{\"pfNames\": [\"ens3f0np0#0-3\"], \"isRdma\": true}",
                "{\"pfNames\": [\"ens3f0np0#0-3\"], \"vdpaType\": \"vhost\"}",
                "{\"pfNames\": [\"ens3f0np0#0-3\"], \"linkTypes\": [\"ether\"]}",
        };
        sriov_config c[KDP_ELEMENTSOF(variants)] = {};

        for (size_t i = 0; i < KDP_ELEMENTSOF(variants); i++) {
                _cleanup_free_ char *json = NULL, *log = NULL, *path = NULL;

                ck_assert_int_ge(asprintf(&json, "{\"resourceList\": [{\"resourceName\": \"a\", \"selectors\": [%s]}]}",
                                          variants[i]), 0);
                ck_assert_int_eq(load_text(json, &c[i], &log, &path), 0);
        }
        for (size_t i = 0; i < KDP_ELEMENTSOF(variants); i++)
                for (size_t j = 0; j < KDP_ELEMENTSOF(variants); j++)
                        ck_assert_msg(sriov_config_pool_equal(&c[i].pools[0], &c[j].pools[0]) == (i == j),
                                      "variants %zu and %zu", i, j);
        for (size_t i = 0; i < KDP_ELEMENTSOF(variants); i++)
                sriov_config_done(&c[i]);
}
END_TEST

/* ---- property: the first pool, and in it the first selector object, that takes a function gets it ---- */

static uint32_t rnd_next(uint32_t *state) {
        *state = *state * 1103515245u + 12345u;
        return (*state >> 16) & 0x7fff;
}

static const char *const rnd_fields[] = {
        "\"vendors\": [\"8086\"]",
        "\"vendors\": [\"15b3\", \"8086\"]",
        "\"devices\": [\"1889\"]",
        "\"devices\": [\"101e\", \"154c\"]",
        "\"drivers\": [\"iavf\"]",
        "\"drivers\": [\"vfio-pci\", \"mlx5_core\"]",
        "\"pfNames\": [\"ens3f0np0#0-3\"]",
        "\"pfNames\": [\"ENS1F0NP0\", \"ens785f0#1\"]",
        "\"rootDevices\": [\"0000:8a:00.0#5-7\"]",
        "\"isRdma\": true",
        "\"linkTypes\": [\"ether\"]",
};

/* One random selector object into `out` (a few of rnd_fields). */
static void rnd_selector(uint32_t *state, char *out, size_t size) {
        unsigned n = rnd_next(state) % 3;
        size_t len;

        len = (size_t) snprintf(out, size, "{");
        for (unsigned i = 0; i < n; i++)
                len += (size_t) snprintf(out + len, size - len, "%s%s", i ? ", " : "",
                                         rnd_fields[rnd_next(state) % KDP_ELEMENTSOF(rnd_fields)]);
        (void) snprintf(out + len, size - len, "}");
}

static void load_quiet(const char *json, sriov_config *c) {
        _cleanup_free_ char *log = NULL, *path = NULL;

        ck_assert_int_eq(load_text(json, c, &log, &path), 0);
}

START_TEST(test_sriov_config_first_match_wins_across_pools_and_selectors) {
        const sriov_func *funcs[] = { &e810_iavf, &e810_vfio, &cx6_rdma, &cx6_vdpa, &x710_vf, &accel, &rng };
        uint32_t state = 20261201;
        unsigned n_later = 0, n_shadowed = 0, n_none = 0;

        for (int iter = 0; iter < 60; iter++) {
                _cleanup_(sriov_config_done) sriov_config all = {};
                char sel[4][3][256], *json = NULL;
                size_t json_size = 0, n_sel[4];
                bool takes[4][3][KDP_ELEMENTSOF(funcs)];
                bool pci[4];
                unsigned n_pools = 1 + rnd_next(&state) % 4;
                FILE *m = open_memstream(&json, &json_size);

                ck_assert_ptr_nonnull(m);
                fprintf(m, "{\"resourceList\": [");
                for (unsigned i = 0; i < n_pools; i++) {
                        n_sel[i] = 1 + rnd_next(&state) % 3;
                        pci[i] = rnd_next(&state) % 5 == 0;
                        fprintf(m, "%s{\"resourceName\": \"p%u\", \"deviceType\": \"%s\", \"selectors\": [",
                                i ? ", " : "", i, pci[i] ? "pci" : "netDevice");
                        for (size_t j = 0; j < n_sel[i]; j++) {
                                _cleanup_(sriov_config_done) sriov_config one = {};
                                _cleanup_free_ char *one_json = NULL;

                                do
                                        rnd_selector(&state, sel[i][j], sizeof(sel[i][j]));
                                while (pci[i] && (strstr(sel[i][j], "pfNames") || strstr(sel[i][j], "rootDevices") ||
                                                  strstr(sel[i][j], "isRdma") || strstr(sel[i][j], "linkTypes")));
                                fprintf(m, "%s%s", j ? ", " : "", sel[i][j]);

                                /* what this selector object takes on its own */
                                ck_assert_int_ge(asprintf(&one_json, "{\"resourceList\": [{\"resourceName\": \"x\", "
                                                          "\"deviceType\": \"%s\", \"selectors\": [%s]}]}",
                                                          pci[i] ? "pci" : "netDevice", sel[i][j]), 0);
                                load_quiet(one_json, &one);
                                for (size_t k = 0; k < KDP_ELEMENTSOF(funcs); k++)
                                        takes[i][j][k] = sriov_config_match(&one, funcs[k], NULL) == 0;
                        }
                        fprintf(m, "]}");
                }
                fprintf(m, "]}");
                ck_assert_int_eq(fclose(m), 0);
                load_quiet(json, &all);
                free(json);

                for (size_t k = 0; k < KDP_ELEMENTSOF(funcs); k++) {
                        int want_pool = -1, got;
                        size_t want_sel = 0, got_sel = SIZE_MAX, n_takers = 0;

                        for (unsigned i = 0; i < n_pools; i++)
                                for (size_t j = 0; j < n_sel[i]; j++)
                                        if (takes[i][j][k]) {
                                                if (n_takers++ == 0) {
                                                        want_pool = (int) i;
                                                        want_sel = j;
                                                }
                                        }
                        got = sriov_config_match(&all, funcs[k], &got_sel);
                        ck_assert_int_eq(got, want_pool);
                        if (want_pool >= 0)
                                ck_assert_uint_eq(got_sel, want_sel);
                        n_later += want_pool > 0 || want_sel > 0;
                        n_shadowed += n_takers > 1;
                        n_none += want_pool < 0;
                }
        }
        /* the draw exercised each case */
        ck_assert_uint_gt(n_later, 20);
        ck_assert_uint_gt(n_shadowed, 20);
        ck_assert_uint_gt(n_none, 20);
}
END_TEST

static Suite *sriov_config_suite(void) {
        Suite *s = suite_create("sriov-config");
        TCase *tc;

        tc = tcase_create("examples");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_sriov_config_readme_example_gives_its_ten_pools);
        tcase_add_test(tc, test_sriov_config_readme_example_as_published_is_not_json);
        tcase_add_test(tc, test_sriov_config_readme_selector_syntaxes);
        tcase_add_test(tc, test_sriov_config_readme_additional_info);
        tcase_add_test(tc, test_sriov_config_readme_ranges_select_exactly_their_vfs);
        tcase_add_test(tc, test_sriov_config_docs_ddp_profiles);
        tcase_add_test(tc, test_sriov_config_docs_subfunctions);
        tcase_add_test(tc, test_sriov_config_docs_per_node_file);
        tcase_add_test(tc, test_sriov_config_docs_rdma_and_dpdk);
        tcase_add_test(tc, test_sriov_config_docs_vdpa_and_virtual);
        tcase_add_test(tc, test_sriov_config_e810_ranges_split_sixteen_vfs);
        tcase_add_test(tc, test_sriov_config_pci_type_takes_any_class);
        tcase_add_test(tc, test_sriov_config_excluded_functions);
        tcase_add_test(tc, test_sriov_config_accelerator_pools_take_a_pf_with_vfs);
        tcase_add_test(tc, test_sriov_config_device_type_names);
        suite_add_tcase(s, tc);

        tc = tcase_create("refused");
        tcase_set_timeout(tc, 60);
        tcase_add_loop_test(tc, test_sriov_config_refuses, 0, (int) KDP_ELEMENTSOF(refused_cases));
        tcase_add_test(tc, test_sriov_config_refuses_duplicate_resource);
        tcase_add_test(tc, test_sriov_config_refuses_missing_file);
        tcase_add_test(tc, test_sriov_config_refuses_raw_nul_byte);
        tcase_add_test(tc, test_sriov_config_refuses_fifo_and_device_without_blocking);
        tcase_add_test(tc, test_sriov_config_refuses_more_pools_than_the_limit);
        tcase_add_test(tc, test_sriov_config_refuses_a_list_past_the_entry_limit);
        tcase_add_test(tc, test_sriov_config_reports_every_problem_of_a_file);
        tcase_add_loop_test(tc, test_sriov_config_drops_pool_with_selectors_of_a_wrong_type, 0,
                            (int) KDP_ELEMENTSOF(dropped_cases));
        tcase_add_test(tc, test_sriov_config_dropped_pool_is_not_validated_and_keeps_indexes);
        tcase_add_test(tc, test_sriov_config_refuses_file_whose_every_pool_is_dropped);
        suite_add_tcase(s, tc);

        tc = tcase_create("accepted");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_sriov_config_warns_unknown_keys);
        tcase_add_test(tc, test_sriov_config_warns_acpi_indexes_on_accelerators);
        tcase_add_test(tc, test_sriov_config_applies_acpi_indexes_on_net_devices);
        tcase_add_test(tc, test_sriov_config_warns_fields_other_types_do_not_apply);
        tcase_add_test(tc, test_sriov_config_ignored_fields_are_not_type_checked);
        tcase_add_test(tc, test_sriov_config_warns_malformed_range_and_stops_there);
        tcase_add_test(tc, test_sriov_config_reads_ranges_as_go_atoi_does);
        tcase_add_test(tc, test_sriov_config_warns_second_entry_for_a_pf);
        tcase_add_test(tc, test_sriov_config_warns_several_link_types);
        tcase_add_test(tc, test_sriov_config_warns_hyphen_in_resource_name);
        tcase_add_test(tc, test_sriov_config_keys_fold_case_and_the_last_one_wins);
        tcase_add_test(tc, test_sriov_config_warns_unusable_pools);
        tcase_add_test(tc, test_sriov_config_null_is_the_zero_value);
        tcase_add_test(tc, test_sriov_config_default_prefix_comes_from_the_caller);
        tcase_add_test(tc, test_sriov_config_empty_additional_info_is_kept);
        suite_add_tcase(s, tc);

        tc = tcase_create("equal");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_sriov_config_pool_equal);
        tcase_add_test(tc, test_sriov_config_pool_equal_sees_ranges_and_flags);
        suite_add_tcase(s, tc);

        tc = tcase_create("first-match");
        tcase_set_timeout(tc, 300);
        tcase_add_test(tc, test_sriov_config_first_match_wins_across_pools_and_selectors);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return kdp_test_run(sriov_config_suite());
}
