/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The built SR-IOV backend (kdp-backend-sriov.so) through its ABI, on plain sysfs/dev trees
 * shaped as docs/hardware-sriov.md §14 (E810: iavf, vfio-pci and igb_uio VFs) and §15 (ConnectX-6 Dx
 * RDMA VFs) with a config.json in the tree: the pools it serves and what it does not serve,
 * health and its reasons, Allocate and GetPreferredAllocation through the ops, and what the
 * hardware does next (a VF unbound and rebound, sriov_numvfs 8 -> 0, a netdev moved into a pod,
 * device nodes going away, config.json rewritten).
 *
 * Every test runs in a network namespace of its own when it may (root; kdp-test-netns.h), so that
 * no link or route of the machine reaches the backend's rtnetlink view. The link tests (root
 * only; skipped otherwise, with a note) build veth pairs named like the fixture's netdevs there
 * and run the backend's rtnetlink fd callback as kdpd's loop does, scanning only when it asks
 * for a scan, until the devices show what each step must give (a generous deadline, no timing
 * asserted).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kdp/backend.h>
#include <kdp/cleanup.h>

#include "alloc.h"
#include "backend-ctx.h"
#include "config.h"
#include "device-tree.h"

#include "kdp-test.h"
#include "kdp-test-sysfs.h"
#include "kdp-test-sriov.h"
#include "kdp-test-backend.h"
#include "kdp-test-netns.h"

#define SRIOV_SO KDP_BUILD_DIR "/plugins/kdp-backend-sriov.so"

#define NETDEV "intel.com/e810_netdev"
#define VFIO "intel.com/e810_vfio"
#define RDMA "nvidia.com/cx6_rdma"
#define QAT "intel.com/qat"

/* Four pools: iavf VFs, vfio-pci VFs, RDMA VFs, and an accelerator pool nothing on the node fits. */
static const char config_json[] =
        "{\n"
        "  \"resourceList\": [\n"
        "    {\n"
        "      \"resourceName\": \"e810_netdev\",\n"
        "      \"selectors\": [{ \"vendors\": [\"8086\"], \"devices\": [\"1889\"], \"drivers\": [\"iavf\"] }]\n"
        "    },\n"
        "    {\n"
        "      \"resourceName\": \"e810_vfio\",\n"
        "      \"selectors\": [{ \"vendors\": [\"8086\"], \"devices\": [\"1889\"], \"drivers\": [\"vfio-pci\"] }]\n"
        "    },\n"
        "    {\n"
        "      \"resourceName\": \"cx6_rdma\", \"resourcePrefix\": \"nvidia.com\",\n"
        "      \"selectors\": [{ \"vendors\": [\"15b3\"], \"devices\": [\"101e\"], \"drivers\": [\"mlx5_core\"],\n"
        "                       \"isRdma\": true }]\n"
        "    },\n"
        "    {\n"
        "      \"resourceName\": \"qat\", \"deviceType\": \"accelerator\",\n"
        "      \"selectors\": [{ \"vendors\": [\"8086\"], \"devices\": [\"4941\"] }]\n"
        "    }\n"
        "  ]\n"
        "}\n";

typedef struct run {
        char *root;
        kdp_test_backend b;
        bool opened;
} run;

static void run_done(run *r) {
        if (r->opened)
                kdp_test_backend_done(&r->b);
        kdp_test_rm_rfp(&r->root);
}

/* §14 and §15 in one tree, with `config` at <root>/config.json. */
static char *node_tree(const char *config) {
        char *root = kdp_test_tree_new("sriov-backend");

        kdp_test_sriov_e810_tree(root);
        kdp_test_sriov_cx6_tree(root, false);
        kdp_test_tree_write(root, "config.json", config);
        return root;
}

/*
 * init with config_file=<root>/config.json, devinfo_dir=<root>/devinfo and one more
 * "sriov.key=value" (may be NULL; it overrides those two).
 */
static int run_open(run *r, const char *extra) {
        _cleanup_free_ char *file = NULL, *devinfo = NULL;
        int ret;

        ck_assert_int_ge(asprintf(&file, "sriov.config_file=%s/config.json", r->root), 0);
        ck_assert_int_ge(asprintf(&devinfo, "sriov.devinfo_dir=%s/devinfo", r->root), 0);
        ret = kdp_test_backend_open(&r->b, SRIOV_SO, "sriov", r->root,
                                    (const char *const[]){ file, devinfo, extra, NULL });
        r->opened = true;
        return ret;
}

static void run_scan(run *r) {
        kdp_test_backend_scan(&r->b, r->root);
}

/* A net uevent (a rename is "move"), as kdpd hands it over before the scan it triggers. */
static void run_net_event(run *r, const char *action, const char *ifname) {
        r->b.ops->device_event(r->b.state, &(kdp_device_event){ .action = action, .subsystem = "net",
                                                                .sysname = ifname });
}

/* A pci uevent, as kdpd hands it over before the scan it triggers. */
static void run_event(run *r, const char *action, const char *address) {
        r->b.ops->device_event(r->b.state, &(kdp_device_event){ .action = action, .subsystem = "pci",
                                                                .sysname = address });
}

/* ops->allocate of `ids` of `resource` into a fresh *resp (emptied first); its result. */
static int run_allocate(run *r, const char *resource, const char *const *ids, size_t n, kdp_alloc_response *resp) {
        kdp_alloc_response_done(resp);
        kdp_alloc_response_init(resp, NULL);
        return r->b.ops->allocate(r->b.state,
                                  &(kdp_alloc_request){ .resource = resource, .device_ids = ids, .n_device_ids = n },
                                  resp);
}

/*
 * A resource's devices, one a line: "<id> <numa node or -> <Healthy|Unhealthy>[: <reason>]", with
 * the tree root in reasons written as "ROOT".
 */
static char *devices_text(const run *r, const char *resource) {
        const kdp_device_list *l = kdp_test_backend_resource(&r->b, resource);
        char *buf = NULL;
        size_t len = 0;
        FILE *m;

        ck_assert_msg(l, "%s is not declared", resource);
        m = open_memstream(&buf, &len);
        ck_assert_ptr_nonnull(m);
        for (size_t i = 0; i < l->n_devices; i++) {
                const kdp_device *d = &l->devices[i];
                const char *reason = d->health_reason, *at;

                ck_assert_str_eq(d->pci_address, d->id);
                fprintf(m, "%s ", d->id);
                if (d->n_numa_nodes == 1)
                        fprintf(m, "%d ", d->numa_nodes[0]);
                else
                        fprintf(m, "- ");
                fprintf(m, "%s", d->health == KDP_HEALTHY ? "Healthy" : "Unhealthy");
                ck_assert_int_eq(d->health == KDP_HEALTHY, reason == NULL);
                if (reason) {
                        fprintf(m, ": ");
                        while ((at = strstr(reason, r->root))) {
                                fprintf(m, "%.*sROOT", (int) (at - reason), reason);
                                reason = at + strlen(r->root);
                        }
                        fprintf(m, "%s", reason);
                }
                fprintf(m, "\n");
        }
        ck_assert_int_eq(fclose(m), 0);
        return buf;
}

static void expect_devices(const run *r, const char *resource, const char *want) {
        _cleanup_free_ char *text = devices_text(r, resource);

        ck_assert_str_eq(text, want);
}

static void expect_not_served(const run *r, const char *want) {
        _cleanup_free_ char *text = kdp_test_not_served_text(r->b.tree);

        ck_assert_str_eq(text, want);
}

#define E810_NETDEV_ALL                                                                          \
        "0000:8a:01.0 1 Healthy\n0000:8a:01.1 1 Healthy\n0000:8a:01.2 1 Healthy\n"               \
        "0000:8a:01.3 1 Healthy\n0000:8a:01.4 1 Healthy\n0000:8a:01.5 1 Healthy\n"
#define E810_VFIO_ALL "0000:8a:01.6 1 Healthy\n0000:8a:01.7 1 Healthy\n"
#define CX6_RDMA_ALL \
        "0000:3b:00.2 0 Healthy\n0000:3b:00.3 0 Healthy\n0000:3b:00.4 0 Healthy\n0000:3b:00.5 0 Healthy\n"
#define NOT_SERVED_ALL                                                                           \
        "0000:3b:00.0: PF with VFs enabled\n0000:8a:00.0: PF with VFs enabled\n"                 \
        "0000:8a:00.1: PF with VFs enabled\n0000:8a:05.0: no pool's selectors take it\n"

/* The VF at `address` (below the E810 port), its PF0 VF index `index`. */
#define E810_VF_PATH(fn) KDP_TEST_E810_PORT "/0000:8a:01." #fn

/* ---- what it serves ---- */

START_TEST(test_sriov_backend_serves_every_pool_and_names_what_it_does_not) {
        _cleanup_(run_done) run r = { .root = node_tree(config_json) };
        const kdp_device_list *l;

        ck_assert_int_eq(run_open(&r, NULL), 0);
        run_scan(&r);
        ck_assert_uint_eq(r.b.tree->n_resources, 4);
        expect_devices(&r, NETDEV, E810_NETDEV_ALL);
        expect_devices(&r, VFIO, E810_VFIO_ALL);
        expect_devices(&r, RDMA, CX6_RDMA_ALL);
        /* declared although empty: the kubelet keeps seeing it, with capacity 0 */
        ck_assert_uint_eq(kdp_test_backend_resource(&r.b, QAT)->n_devices, 0);
        /* PFs with VFs are excluded; the igb_uio VF is of a class the pools look at; the bridge is not */
        expect_not_served(&r, NOT_SERVED_ALL);
        /* no CDI unless asked for, and no nodes in the records: Allocate answers */
        l = kdp_test_backend_resource(&r.b, VFIO);
        ck_assert_uint_eq(l->devices[0].n_cdi_devices, 0);
        ck_assert_uint_eq(l->devices[0].n_dev_nodes, 0);
        ck_assert_uint_eq(l->devices[0].n_envs, 0);
        /* a scan that finds nothing new changes nothing */
        run_scan(&r);
        expect_devices(&r, NETDEV, E810_NETDEV_ALL);
        expect_not_served(&r, NOT_SERVED_ALL);
}
END_TEST

/* excludeTopology: the pool's devices carry no NUMA node (sriovdp's rule). */
START_TEST(test_sriov_backend_exclude_topology_drops_the_numa_node) {
        _cleanup_(run_done) run r = {
                .root = node_tree("{\"resourceList\": [{\"resourceName\": \"e810_vfio\", \"excludeTopology\": true,\n"
                                  "  \"selectors\": [{\"drivers\": [\"vfio-pci\"]}]}]}\n"),
        };

        ck_assert_int_eq(run_open(&r, NULL), 0);
        run_scan(&r);
        expect_devices(&r, VFIO, "0000:8a:01.6 - Healthy\n0000:8a:01.7 - Healthy\n");
}
END_TEST

/* The netdev pool of config_json while VF 1 is unbound. */
#define E810_NETDEV_VF1_UNBOUND                                                                  \
        "0000:8a:01.0 1 Healthy\n0000:8a:01.1 1 Unhealthy: driver unbound\n"                     \
        "0000:8a:01.2 1 Healthy\n0000:8a:01.3 1 Healthy\n0000:8a:01.4 1 Healthy\n0000:8a:01.5 1 Healthy\n"

/* VF 1 (0000:8a:01.1) left by iavf: its netdev goes with the driver; the event kdpd hands over. */
static void vf1_unbind(run *r) {
        kdp_test_sriov_net_remove(r->root, E810_VF_PATH(1), "ens3f0v1");
        kdp_test_tree_remove(r->root, "sys/devices/" E810_VF_PATH(1) "/driver");
        run_event(r, "unbind", "0000:8a:01.1");
}

/* VF 1, without a driver, bound to iavf: its netdev comes back. */
static void vf1_bind_iavf(run *r) {
        kdp_test_pci_sys_link(r->root, &(kdp_test_pci_dev){ .path = E810_VF_PATH(1) }, "driver",
                              "bus/pci/drivers/iavf");
        kdp_test_sriov_net_add(r->root, E810_VF_PATH(1), "ens3f0v1", "1", NULL, NULL);
        run_event(r, "bind", "0000:8a:01.1");
}

/* The fake clock moves past the time after which the periodic scan is a full one again. */
static void run_full_scan_due(run *r) {
        r->b.now_usec += 30 * 1000 * 1000;
}

/* ---- health ---- */

START_TEST(test_sriov_backend_missing_vfio_and_rdma_nodes_are_unhealthy_until_back) {
        _cleanup_(run_done) run r = { .root = node_tree(config_json) };

        ck_assert_int_eq(run_open(&r, NULL), 0);
        run_scan(&r);
        kdp_test_tree_remove(r.root, "dev/vfio/107");
        kdp_test_tree_remove(r.root, "dev/infiniband/uverbs3");
        kdp_test_tree_remove(r.root, "dev/infiniband/umad3");
        run_scan(&r);           /* no event: the periodic scan sees it */
        expect_devices(&r, VFIO, "0000:8a:01.6 1 Healthy\n"
                                 "0000:8a:01.7 1 Unhealthy: device node ROOT/dev/vfio/107 missing\n");
        expect_devices(&r, RDMA, "0000:3b:00.2 0 Healthy\n"
                                 "0000:3b:00.3 0 Unhealthy: device node ROOT/dev/infiniband/umad3 missing; "
                                 "device node ROOT/dev/infiniband/uverbs3 missing\n"
                                 "0000:3b:00.4 0 Healthy\n0000:3b:00.5 0 Healthy\n");
        expect_not_served(&r, NOT_SERVED_ALL);

        kdp_test_tree_write(r.root, "dev/vfio/107", "");
        kdp_test_tree_write(r.root, "dev/infiniband/uverbs3", "");
        kdp_test_tree_write(r.root, "dev/infiniband/umad3", "");
        run_scan(&r);
        expect_devices(&r, VFIO, E810_VFIO_ALL);
        expect_devices(&r, RDMA, CX6_RDMA_ALL);
}
END_TEST

/*
 * The periodic scan between device events (a health-only one) reads again what sends no event
 * and no more: a vfio group node removed makes its VF Unhealthy at the next scan, and back, it
 * is Healthy at the one after. VF 7's group turned no-IOMMU in sysfs without a uevent (its node
 * is then vfio/noiommu-107, which is missing) is not seen until the periodic scan is a full one
 * again, 30 s after the last.
 */
START_TEST(test_sriov_backend_periodic_scan_between_events_reads_health_only) {
        _cleanup_(run_done) run r = { .root = node_tree(config_json) };

        ck_assert_int_eq(run_open(&r, NULL), 0);
        run_scan(&r);
        kdp_test_tree_remove(r.root, "dev/vfio/106");
        kdp_test_tree_write(r.root, "sys/kernel/iommu_groups/107/name", "vfio-noiommu\n");
        r.b.now_usec += 2 * 1000 * 1000;
        run_scan(&r);
        expect_devices(&r, VFIO, "0000:8a:01.6 1 Unhealthy: device node ROOT/dev/vfio/106 missing\n"
                                 "0000:8a:01.7 1 Healthy\n");
        expect_devices(&r, NETDEV, E810_NETDEV_ALL);
        expect_devices(&r, RDMA, CX6_RDMA_ALL);
        expect_not_served(&r, NOT_SERVED_ALL);

        kdp_test_tree_write(r.root, "dev/vfio/106", "");
        r.b.now_usec += 2 * 1000 * 1000;
        run_scan(&r);
        expect_devices(&r, VFIO, E810_VFIO_ALL);

        /* 26 s after the full scan: still health-only; 30 s: full */
        r.b.now_usec += 22 * 1000 * 1000;
        run_scan(&r);
        expect_devices(&r, VFIO, E810_VFIO_ALL);
        r.b.now_usec += 4 * 1000 * 1000;
        run_scan(&r);
        expect_devices(&r, VFIO, "0000:8a:01.6 1 Healthy\n"
                                 "0000:8a:01.7 1 Unhealthy: device node ROOT/dev/vfio/noiommu-107 missing\n");
        expect_devices(&r, NETDEV, E810_NETDEV_ALL);
        expect_not_served(&r, NOT_SERVED_ALL);

        /* the group an IOMMU one again, with a uevent: the next scan is full at once */
        kdp_test_tree_remove(r.root, "sys/kernel/iommu_groups/107/name");
        r.b.ops->device_event(r.b.state, &(kdp_device_event){ .action = "change", .subsystem = "vfio",
                                                              .sysname = "107" });
        run_scan(&r);
        expect_devices(&r, VFIO, E810_VFIO_ALL);
}
END_TEST

/* Writes VF `fn`'s AER counter file as the kernel prints it, TOTAL_ERR_<FATAL|NONFATAL> `total`. */
static void e810_vf_aer(const run *r, int fn, bool fatal, unsigned total) {
        _cleanup_free_ char *rel = NULL, *text = NULL;

        ck_assert_int_ge(asprintf(&rel, "sys/devices/" KDP_TEST_E810_PORT "/0000:8a:01.%d/%s", fn,
                                  fatal ? "aer_dev_fatal" : "aer_dev_nonfatal"), 0);
        ck_assert_int_ge(asprintf(&text,
                                  "Undefined 0\nDLP 0\nSDES 0\nTLP 0\nFCP 0\nCmpltTO 0\nCmpltAbrt 0\nUnxCmplt 0\n"
                                  "RxOF 0\nMalfTLP %u\nECRC 0\nUnsupReq 0\nACSViol 0\nUncorrIntErr 0\n"
                                  "TOTAL_ERR_%s %u\n", total, fatal ? "FATAL" : "NONFATAL", total), 0);
        kdp_test_tree_write(r->root, rel, text);
}

#define NETDEV_VF3_AER                                                                           \
        "0000:8a:01.0 1 Healthy\n0000:8a:01.1 1 Healthy\n0000:8a:01.2 1 Healthy\n"               \
        "0000:8a:01.3 1 Unhealthy: AER non-fatal errors rose from 0 to 1\n"                      \
        "0000:8a:01.4 1 Healthy\n0000:8a:01.5 1 Healthy\n"
#define VFIO_VF6_AER "0000:8a:01.6 1 Unhealthy: AER fatal errors rose from 0 to 2\n0000:8a:01.7 1 Healthy\n"

/*
 * AER counters send no event: a rise between device events is seen by the next periodic scan (a
 * health-only one), and stays until the function is bound again (its counters start anew).
 */
START_TEST(test_sriov_backend_aer_rise_without_an_event_seen_by_the_next_scan) {
        _cleanup_(run_done) run r = { .root = node_tree(config_json) };

        e810_vf_aer(&r, 3, true, 0);
        e810_vf_aer(&r, 3, false, 0);
        e810_vf_aer(&r, 6, true, 0);
        ck_assert_int_eq(run_open(&r, NULL), 0);
        run_scan(&r);
        expect_devices(&r, NETDEV, E810_NETDEV_ALL);
        expect_devices(&r, VFIO, E810_VFIO_ALL);

        e810_vf_aer(&r, 3, false, 1);
        e810_vf_aer(&r, 6, true, 2);
        r.b.now_usec += 2 * 1000 * 1000;
        run_scan(&r);
        expect_devices(&r, NETDEV, NETDEV_VF3_AER);
        expect_devices(&r, VFIO, VFIO_VF6_AER);
        expect_not_served(&r, NOT_SERVED_ALL);
        r.b.now_usec += 2 * 1000 * 1000;
        run_scan(&r);
        expect_devices(&r, VFIO, VFIO_VF6_AER);

        run_event(&r, "bind", "0000:8a:01.6");
        run_scan(&r);
        expect_devices(&r, VFIO, E810_VFIO_ALL);
        expect_devices(&r, NETDEV, NETDEV_VF3_AER);
}
END_TEST

/*
 * A served VF unbound stays Unhealthy in its pool; bound to vfio-pci it joins the vfio pool
 * (Unhealthy while its group's node is missing) and stays Unhealthy in the netdev pool; bound
 * back to iavf, it is Healthy in the netdev pool again and Unhealthy in the vfio pool.
 */
START_TEST(test_sriov_backend_vf_unbound_then_rebound) {
        _cleanup_(run_done) run r = { .root = node_tree(config_json) };
        const kdp_test_pci_dev vf1 = { .path = E810_VF_PATH(1) };

        ck_assert_int_eq(run_open(&r, NULL), 0);
        run_scan(&r);

        vf1_unbind(&r);
        run_scan(&r);
        expect_devices(&r, NETDEV, E810_NETDEV_VF1_UNBOUND);
        expect_devices(&r, VFIO, E810_VFIO_ALL);
        expect_not_served(&r, NOT_SERVED_ALL);  /* it is in its pool's list, not among these */

        kdp_test_pci_sys_link(r.root, &vf1, "driver", "bus/pci/drivers/vfio-pci");
        run_event(&r, "bind", "0000:8a:01.1");
        run_scan(&r);
        expect_devices(&r, NETDEV, "0000:8a:01.0 1 Healthy\n0000:8a:01.1 1 Unhealthy: bound to vfio-pci\n"
                                   "0000:8a:01.2 1 Healthy\n0000:8a:01.3 1 Healthy\n"
                                   "0000:8a:01.4 1 Healthy\n0000:8a:01.5 1 Healthy\n");
        expect_devices(&r, VFIO, "0000:8a:01.1 1 Unhealthy: device node ROOT/dev/vfio/101 missing\n"
                                 E810_VFIO_ALL);
        kdp_test_tree_write(r.root, "dev/vfio/101", "");
        run_scan(&r);
        expect_devices(&r, VFIO, "0000:8a:01.1 1 Healthy\n" E810_VFIO_ALL);

        kdp_test_tree_remove(r.root, "sys/devices/" E810_VF_PATH(1) "/driver");
        vf1_bind_iavf(&r);
        run_scan(&r);
        expect_devices(&r, NETDEV, E810_NETDEV_ALL);
        expect_devices(&r, VFIO, "0000:8a:01.1 1 Unhealthy: bound to iavf\n" E810_VFIO_ALL);
        expect_not_served(&r, NOT_SERVED_ALL);
}
END_TEST

/* iavf VFs first, then every E810 VF whatever its driver: a pool whose selectors name no driver. */
static const char config_driverless[] =
        "{\"resourceList\": [\n"
        "  {\"resourceName\": \"e810_netdev\", \"selectors\": [{\"drivers\": [\"iavf\"]}]},\n"
        "  {\"resourceName\": \"e810_any\", \"selectors\": [{\"vendors\": [\"8086\"], \"devices\": [\"1889\"]}]}\n"
        "]}\n";
#define ANY "intel.com/e810_any"
#define ANY_ALL E810_VFIO_ALL "0000:8a:05.0 1 Healthy\n"    /* vfio-pci and igb_uio */
#define ANY_CX6                                                                                  \
        "0000:3b:00.0: PF with VFs enabled\n0000:3b:00.2: no pool's selectors take it\n"            \
        "0000:3b:00.3: no pool's selectors take it\n0000:3b:00.4: no pool's selectors take it\n"    \
        "0000:3b:00.5: no pool's selectors take it\n"
#define ANY_NOT_SERVED ANY_CX6 "0000:8a:00.0: PF with VFs enabled\n0000:8a:00.1: PF with VFs enabled\n"

/*
 * A VF between its "add" and its driver's probe is unbound: no pool takes it, not even one whose
 * selectors name no driver (sriovdp makes no device of a function without a driver). So whether
 * a scan fell into that gap changes nothing: once iavf binds, the pools are what a backend
 * started on the final node shows, with no member kept "bound to iavf" in the driverless pool.
 */
START_TEST(test_sriov_backend_a_vf_before_its_probe_is_in_no_pool) {
        _cleanup_(run_done) run r = { .root = node_tree(config_driverless) };
        _cleanup_(run_done) run fresh = { .root = node_tree(config_driverless) };
        _cleanup_free_ char *netdev = NULL, *any = NULL, *not_served = NULL;

        /* VF 1 just added: on the bus, no driver yet, no netdev */
        ck_assert_int_eq(run_open(&r, NULL), 0);
        vf1_unbind(&r);
        run_event(&r, "add", "0000:8a:01.1");
        run_scan(&r);
        expect_devices(&r, NETDEV, "0000:8a:01.0 1 Healthy\n0000:8a:01.2 1 Healthy\n0000:8a:01.3 1 Healthy\n"
                                   "0000:8a:01.4 1 Healthy\n0000:8a:01.5 1 Healthy\n");
        expect_devices(&r, ANY, ANY_ALL);
        expect_not_served(&r, ANY_CX6 "0000:8a:00.0: PF with VFs enabled\n0000:8a:00.1: PF with VFs enabled\n"
                              "0000:8a:01.1: driver unbound\n");
        run_scan(&r);           /* a later scan in the same gap: still in no pool */
        expect_devices(&r, ANY, ANY_ALL);

        /* iavf's probe: the iavf pool takes it, and the driverless pool never had it */
        vf1_bind_iavf(&r);
        run_scan(&r);
        expect_devices(&r, NETDEV, E810_NETDEV_ALL);
        expect_devices(&r, ANY, ANY_ALL);
        expect_not_served(&r, ANY_NOT_SERVED);

        /* the same as a backend that starts on the final node */
        ck_assert_int_eq(run_open(&fresh, NULL), 0);
        run_scan(&fresh);
        netdev = devices_text(&fresh, NETDEV);
        any = devices_text(&fresh, ANY);
        not_served = kdp_test_not_served_text(fresh.b.tree);
        expect_devices(&r, NETDEV, netdev);
        expect_devices(&r, ANY, any);
        expect_not_served(&r, not_served);

        /* a member unbound later is kept, Unhealthy "driver unbound"; the driverless pool does not take it */
        vf1_unbind(&r);
        run_scan(&r);
        expect_devices(&r, NETDEV, E810_NETDEV_VF1_UNBOUND);
        expect_devices(&r, ANY, ANY_ALL);
        expect_not_served(&r, ANY_NOT_SERVED);
}
END_TEST

/* Removes the VF at 0000:8a:01.<fn> from the bus, and, with `from_pf`, from its PF's virtfn links. */
static void e810_vf_remove(const char *root, int fn, bool from_pf) {
        _cleanup_free_ char *bus = NULL, *virtfn = NULL;

        ck_assert_int_ge(asprintf(&bus, "sys/bus/pci/devices/0000:8a:01.%d", fn), 0);
        kdp_test_tree_remove(root, bus);
        if (!from_pf)
                return;
        ck_assert_int_ge(asprintf(&virtfn, "sys/devices/%s/virtfn%d", KDP_TEST_E810_PF0, fn), 0);
        kdp_test_tree_remove(root, virtfn);
}

/*
 * A member whose driver stays but whose pool's selectors no longer fit it (its PF renamed away from
 * the pool's pfNames) is kept, Unhealthy with that reason, and Healthy again once they fit; a
 * backend started on the renamed node has no such member and names the VFs not served.
 */
START_TEST(test_sriov_backend_a_member_its_selectors_no_longer_take) {
        static const char config[] =
                "{\"resourceList\": [{\"resourceName\": \"e810_netdev\",\n"
                "  \"selectors\": [{\"drivers\": [\"iavf\"], \"pfNames\": [\"ens3f0np0\"]}]}]}\n";
        _cleanup_(run_done) run r = { .root = node_tree(config) };
        _cleanup_(run_done) run fresh = { .root = node_tree(config) };
        _cleanup_free_ char *not_served = NULL;

        ck_assert_int_eq(run_open(&r, NULL), 0);
        run_scan(&r);
        expect_devices(&r, NETDEV, E810_NETDEV_ALL);

        kdp_test_sriov_net_remove(r.root, KDP_TEST_E810_PF0, "ens3f0np0");
        kdp_test_sriov_net_add(r.root, KDP_TEST_E810_PF0, "ens3f0", "1", "p0", NULL);
        run_net_event(&r, "move", "ens3f0");
        run_scan(&r);
        expect_devices(&r, NETDEV,
                       "0000:8a:01.0 1 Unhealthy: its pool's selectors no longer take it\n"
                       "0000:8a:01.1 1 Unhealthy: its pool's selectors no longer take it\n"
                       "0000:8a:01.2 1 Unhealthy: its pool's selectors no longer take it\n"
                       "0000:8a:01.3 1 Unhealthy: its pool's selectors no longer take it\n"
                       "0000:8a:01.4 1 Unhealthy: its pool's selectors no longer take it\n"
                       "0000:8a:01.5 1 Unhealthy: its pool's selectors no longer take it\n");

        kdp_test_sriov_net_remove(fresh.root, KDP_TEST_E810_PF0, "ens3f0np0");
        kdp_test_sriov_net_add(fresh.root, KDP_TEST_E810_PF0, "ens3f0", "1", "p0", NULL);
        ck_assert_int_eq(run_open(&fresh, NULL), 0);
        run_scan(&fresh);
        expect_devices(&fresh, NETDEV, "");
        not_served = kdp_test_not_served_text(fresh.b.tree);
        ck_assert_ptr_nonnull(strstr(not_served, "0000:8a:01.0: no pool's selectors take it\n"));
        ck_assert_ptr_nonnull(strstr(not_served, "0000:8a:01.5: no pool's selectors take it\n"));

        kdp_test_sriov_net_remove(r.root, KDP_TEST_E810_PF0, "ens3f0");
        kdp_test_sriov_net_add(r.root, KDP_TEST_E810_PF0, "ens3f0np0", "1", "p0", NULL);
        run_net_event(&r, "move", "ens3f0np0");
        run_scan(&r);
        expect_devices(&r, NETDEV, E810_NETDEV_ALL);
}
END_TEST

/* A VF lost alone stays, Unhealthy; the VFs of a sriov_numvfs 8 -> 0 leave; the PF is seen again. */
START_TEST(test_sriov_backend_numvfs_to_zero_takes_the_vfs_away) {
        _cleanup_(run_done) run r = { .root = node_tree(config_json) };

        ck_assert_int_eq(run_open(&r, NULL), 0);
        run_scan(&r);

        e810_vf_remove(r.root, 7, false);       /* the PF still has 8 VFs: this one is lost */
        run_event(&r, "remove", "0000:8a:01.7");
        run_scan(&r);
        expect_devices(&r, VFIO, "0000:8a:01.6 1 Healthy\n0000:8a:01.7 1 Unhealthy: removed from the PCI bus\n");

        for (int i = 0; i < 7; i++)
                e810_vf_remove(r.root, i, true);
        kdp_test_tree_remove(r.root, "sys/devices/" KDP_TEST_E810_PF0 "/virtfn7");
        kdp_test_sriov_write(r.root, KDP_TEST_E810_PF0, "sriov_numvfs", "0");
        run_event(&r, "remove", "0000:8a:01.0");
        run_scan(&r);
        expect_devices(&r, NETDEV, "");
        expect_devices(&r, VFIO, "");
        expect_devices(&r, RDMA, CX6_RDMA_ALL);
        /* PF0 is no longer excluded, and no pool takes an ice PF */
        expect_not_served(&r, "0000:3b:00.0: PF with VFs enabled\n0000:8a:00.0: no pool's selectors take it\n"
                              "0000:8a:00.1: PF with VFs enabled\n0000:8a:05.0: no pool's selectors take it\n");
}
END_TEST

/* A PF served in a pool leaves it when its VFs are enabled (they are served in its place), and comes back. */
/* PF1 with sriov_numvfs 0: its VF (0000:8a:05.0) is not in the tree. */
static void pf1_vf_remove(run *r) {
        kdp_test_tree_remove(r->root, "sys/bus/pci/devices/0000:8a:05.0");
        kdp_test_tree_remove(r->root, "sys/devices/" KDP_TEST_E810_PF1 "/virtfn0");
        kdp_test_sriov_write(r->root, KDP_TEST_E810_PF1, "sriov_numvfs", "0");
}

/* echo 1 > PF1's sriov_numvfs: its VF comes back, with its uevent. */
static void pf1_vf_enable(run *r) {
        kdp_test_tree_link(r->root, "sys/bus/pci/devices/0000:8a:05.0",
                           "../../../devices/" KDP_TEST_E810_PORT "/0000:8a:05.0");
        kdp_test_tree_link(r->root, "sys/devices/" KDP_TEST_E810_PF1 "/virtfn0", "../0000:8a:05.0");
        kdp_test_sriov_write(r->root, KDP_TEST_E810_PF1, "sriov_numvfs", "1");
        run_event(r, "add", "0000:8a:05.0");
}

START_TEST(test_sriov_backend_pf_leaves_when_its_vfs_are_enabled) {
        _cleanup_(run_done) run r = {
                .root = node_tree("{\"resourceList\": [\n"
                                  "  {\"resourceName\": \"e810_pf\", \"selectors\": [{\"devices\": [\"1593\"]}]},\n"
                                  "  {\"resourceName\": \"e810_uio\", \"selectors\": [{\"drivers\": [\"igb_uio\"]}]}\n"
                                  "]}\n"),
        };

        /* PF1 without its VF */
        pf1_vf_remove(&r);
        ck_assert_int_eq(run_open(&r, NULL), 0);
        run_scan(&r);
        expect_devices(&r, "intel.com/e810_pf", "0000:8a:00.1 1 Healthy\n");
        expect_devices(&r, "intel.com/e810_uio", "");

        /* echo 1 > sriov_numvfs: the VF comes, the PF leaves */
        pf1_vf_enable(&r);
        run_scan(&r);
        expect_devices(&r, "intel.com/e810_pf", "");
        expect_devices(&r, "intel.com/e810_uio", "0000:8a:05.0 1 Healthy\n");
        expect_not_served(&r, "0000:3b:00.0: PF with VFs enabled\n"
                              "0000:3b:00.2: no pool's selectors take it\n0000:3b:00.3: no pool's selectors take it\n"
                              "0000:3b:00.4: no pool's selectors take it\n0000:3b:00.5: no pool's selectors take it\n"
                              "0000:8a:00.0: PF with VFs enabled\n0000:8a:00.1: PF with VFs enabled\n"
                              "0000:8a:01.0: no pool's selectors take it\n0000:8a:01.1: no pool's selectors take it\n"
                              "0000:8a:01.2: no pool's selectors take it\n0000:8a:01.3: no pool's selectors take it\n"
                              "0000:8a:01.4: no pool's selectors take it\n0000:8a:01.5: no pool's selectors take it\n"
                              "0000:8a:01.6: no pool's selectors take it\n0000:8a:01.7: no pool's selectors take it\n");
}
END_TEST

/* The node with PF1 made a processing accelerator (class 0x12), in an accelerator pool "pf_accel"
 * (device 1593), and its igb_uio VF in a netDevice pool "e810_uio". */
static char *accel_pf1_tree(void) {
        char *root = node_tree("{\"resourceList\": [\n"
                               "  {\"resourceName\": \"pf_accel\", \"deviceType\": \"accelerator\",\n"
                               "   \"selectors\": [{\"devices\": [\"1593\"]}]},\n"
                               "  {\"resourceName\": \"e810_uio\", \"selectors\": [{\"drivers\": [\"igb_uio\"]}]}\n"
                               "]}\n");

        kdp_test_sriov_write(root, KDP_TEST_E810_PF1, "class", "0x120000");
        return root;
}

/* An accelerator pool keeps a PF whose VFs get enabled, beside its VFs (sriovdp's accelerator
 * provider drops no PF). */
START_TEST(test_sriov_backend_accelerator_pf_stays_when_its_vfs_are_enabled) {
        _cleanup_(run_done) run r = {
                .root = accel_pf1_tree(),
        };

        pf1_vf_remove(&r);
        ck_assert_int_eq(run_open(&r, NULL), 0);
        run_scan(&r);
        expect_devices(&r, "intel.com/pf_accel", "0000:8a:00.1 1 Healthy\n");
        expect_devices(&r, "intel.com/e810_uio", "");

        pf1_vf_enable(&r);
        run_scan(&r);
        expect_devices(&r, "intel.com/pf_accel", "0000:8a:00.1 1 Healthy\n");
        expect_devices(&r, "intel.com/e810_uio", "0000:8a:05.0 1 Healthy\n");
}
END_TEST

/*
 * A CNI moved the VFs' netdevs (and, in exclusive RDMA mode, the RDMA device) into pods: the
 * VFs stay Healthy in their pools, and Allocate still hands out the RDMA nodes.
 */
START_TEST(test_sriov_backend_netdev_moved_into_a_pod_stays) {
        _cleanup_(run_done) run r = { .root = node_tree(config_json) };
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response resp = { 0 };
        const char *const ids[] = { "0000:3b:00.2" };

        ck_assert_int_eq(run_open(&r, NULL), 0);
        run_scan(&r);

        kdp_test_sriov_net_remove(r.root, E810_VF_PATH(0), "ens3f0v0");
        kdp_test_sriov_net_remove(r.root, KDP_TEST_CX6_PORT "/0000:3b:00.2", "ens1f0v0");
        kdp_test_sriov_rdma_remove(r.root, KDP_TEST_CX6_PORT "/0000:3b:00.2", "mlx5_2");
        run_scan(&r);
        expect_devices(&r, NETDEV, E810_NETDEV_ALL);
        expect_devices(&r, RDMA, CX6_RDMA_ALL);
        expect_not_served(&r, NOT_SERVED_ALL);

        ck_assert_int_eq(run_allocate(&r, RDMA, ids, 1, &resp), 0);
        kdp_test_sriov_expect_env(&resp, "PCIDEVICE_NVIDIA_COM_CX6_RDMA", "0000:3b:00.2",
                                  "{\"0000:3b:00.2\":{\"generic\":{\"deviceID\":\"0000:3b:00.2\"},"
                                  "\"rdma\":{\"issm\":\"/dev/infiniband/issm2\","
                                  "\"rdma_cm\":\"/dev/infiniband/rdma_cm\","
                                  "\"rdma_dev\":\"mlx5_2\",\"umad\":\"/dev/infiniband/umad2\","
                                  "\"uverbs\":\"/dev/infiniband/uverbs2\"}}}");
        KDP_TEST_SRIOV_EXPECT_NODES(&resp, r.root, { "infiniband/issm2", "/dev/infiniband/issm2" },
                                    { "infiniband/umad2", "/dev/infiniband/umad2" },
                                    { "infiniband/uverbs2", "/dev/infiniband/uverbs2" },
                                    { "infiniband/rdma_cm", "/dev/infiniband/rdma_cm" });
}
END_TEST

/* ---- Allocate ---- */

START_TEST(test_sriov_backend_allocate_answers_as_sriovdp) {
        _cleanup_(run_done) run r = { .root = node_tree(config_json) };
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response resp = { 0 };
        const char *const ids[] = { "0000:8a:01.7", "0000:8a:01.6" };

        ck_assert_int_eq(run_open(&r, NULL), 0);
        run_scan(&r);

        ck_assert_int_eq(run_allocate(&r, VFIO, ids, 2, &resp), 0);
        kdp_test_sriov_expect_env(&resp, "PCIDEVICE_INTEL_COM_E810_VFIO", "0000:8a:01.7,0000:8a:01.6",
                                  "{\"0000:8a:01.6\":{\"generic\":{\"deviceID\":\"0000:8a:01.6\"},"
                                  "\"vfio\":{\"dev-mount\":\"/dev/vfio/106\",\"mount\":\"/dev/vfio/vfio\"}},"
                                  "\"0000:8a:01.7\":{\"generic\":{\"deviceID\":\"0000:8a:01.7\"},"
                                  "\"vfio\":{\"dev-mount\":\"/dev/vfio/107\",\"mount\":\"/dev/vfio/vfio\"}}}");
        KDP_TEST_SRIOV_EXPECT_NODES(&resp, r.root, { "vfio/vfio", "/dev/vfio/vfio" }, { "vfio/107", "/dev/vfio/107" },
                                    { "vfio/106", "/dev/vfio/106" });
        ck_assert_uint_eq(resp.n_cdi_devices, 0);

        ck_assert_int_eq(run_allocate(&r, NETDEV, ids, 1, &resp), -EINVAL);
}
END_TEST

/* An ID the pool does not hold is refused, naming it; so is a resource no pool serves. */
START_TEST(test_sriov_backend_allocate_refuses_an_unknown_id) {
        _cleanup_(run_done) run r = { .root = node_tree(config_json) };
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response resp = { 0 };
        _cleanup_free_ char *log = NULL;
        const char *const ids[] = { "0000:8a:01.0", "0000:99:00.0" };
        static const char *const want[] = {
                "\"Refused Allocate of an unknown device\" backend=\"sriov\" resource=\"intel.com/e810_netdev\" "
                "device=\"0000:99:00.0\" err=\"Invalid argument\"",
                "\"Refused Allocate of a resource no pool serves\" backend=\"sriov\" resource=\"intel.com/gone\" "
                "err=\"Invalid argument\"",
        };
        kdp_test_capture c;
        const char *p;

        ck_assert_int_eq(run_open(&r, NULL), 0);
        run_scan(&r);
        kdp_test_capture_begin(&c);
        ck_assert_int_eq(run_allocate(&r, NETDEV, ids, 2, &resp), -EINVAL);
        ck_assert_int_eq(run_allocate(&r, "intel.com/gone", ids, 1, &resp), -EINVAL);
        log = kdp_test_capture_end(&c);
        p = log;
        for (size_t i = 0; i < KDP_ELEMENTSOF(want); i++)
                kdp_test_expect_line(&p, 'E', "sriov.c", want[i]);
        ck_assert_str_eq(p, "");
}
END_TEST

/* ---- GetPreferredAllocation ---- */

/* ops->preferred's answer as "a,b,c", or "default" for -EOPNOTSUPP. */
static char *preferred(run *r, const char *const *available, size_t n_available, const char *const *must,
                       size_t n_must, size_t size) {
        kdp_pref_request req = { .resource = "intel.com/e810", .available = available, .n_available = n_available,
                                 .must_include = must, .n_must_include = n_must, .size = size };
        kdp_pref_response resp;
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);
        int ret;

        ck_assert_ptr_nonnull(m);
        kdp_pref_response_init(&resp, &req);
        ret = r->b.ops->preferred(r->b.state, &req, &resp);
        ck_assert_msg(ret == 0 || ret == -EOPNOTSUPP, "preferred: %d", ret);
        if (ret < 0)
                fprintf(m, "default");
        for (size_t i = 0; ret >= 0 && i < resp.n_ids; i++)
                fprintf(m, "%s%s", i ? "," : "", resp.ids[i]);
        kdp_pref_response_done(&resp);
        ck_assert_int_eq(fclose(m), 0);
        return buf;
}

#define PREFERRED(r, available, must, n_must, size, want)                                                     \
        do {                                                                                                 \
                _cleanup_free_ char *got_ = preferred((r), (available), KDP_ELEMENTSOF(available), (must),   \
                                                      (n_must), (size));                                     \
                ck_assert_str_eq(got_, (want));                                                              \
        } while (0)

/* One pool of PF0's eight VFs and PF1's one: VFs of one PF first, best fit, else the framework's locality. */
START_TEST(test_sriov_backend_preferred_keeps_to_one_pf) {
        _cleanup_(run_done) run r = {
                .root = node_tree("{\"resourceList\": [{\"resourceName\": \"e810\",\n"
                                  "  \"selectors\": [{\"vendors\": [\"8086\"], \"devices\": [\"1889\"]}]}]}\n"),
        };
        const char *const avail[] = { "0000:8a:05.0", "0000:8a:01.0", "0000:8a:01.1", "0000:8a:01.2" };
        const char *const avail_unknown[] = { "0000:8a:01.0", "0000:8a:01.1", "0000:99:00.0" };
        const char *const must_vf2[] = { "0000:8a:01.2" };
        const char *const must_both[] = { "0000:8a:01.2", "0000:8a:05.0" };

        ck_assert_int_eq(run_open(&r, NULL), 0);
        run_scan(&r);
        expect_devices(&r, "intel.com/e810",
                       "0000:8a:01.0 1 Healthy\n0000:8a:01.1 1 Healthy\n0000:8a:01.2 1 Healthy\n"
                       "0000:8a:01.3 1 Healthy\n0000:8a:01.4 1 Healthy\n0000:8a:01.5 1 Healthy\n"
                       "0000:8a:01.6 1 Healthy\n0000:8a:01.7 1 Healthy\n0000:8a:05.0 1 Healthy\n");

        /* two: only PF0 has two */
        PREFERRED(&r, avail, NULL, 0, 2, "0000:8a:01.0,0000:8a:01.1");
        /* one: PF1's single VF is the best fit, PF0's three stay together */
        PREFERRED(&r, avail, NULL, 0, 1, "0000:8a:05.0");
        /* must_include first, then its PF's VFs */
        PREFERRED(&r, avail, must_vf2, 1, 3, "0000:8a:01.2,0000:8a:01.0,0000:8a:01.1");
        /* no PF has four, must_include of two PFs, an unknown ID: the framework's locality */
        PREFERRED(&r, avail, NULL, 0, 4, "default");
        PREFERRED(&r, avail, must_both, 2, 3, "default");
        PREFERRED(&r, avail_unknown, NULL, 0, 2, "default");
}
END_TEST

/* Four E810 PFs at 0000:8a:00.<k>, 64 iavf VFs each (no netdevs), in one pool intel.com/e810. */
static char *node_tree_256(void) {
        char *root = kdp_test_tree_new("sriov-backend-256");
        char pf_path[96], pf[16], vf_path[128];

        kdp_test_pci_add(root, &(kdp_test_pci_dev){ .path = KDP_TEST_E810_PORT, .vendor = "0x8086", .device = "0x347a",
                                                    .class_code = "0x060400", .numa_node = "1",
                                                    .driver = "pcieport" });
        for (int k = 0; k < 4; k++) {
                (void) snprintf(pf, sizeof(pf), "0000:8a:00.%d", k);
                (void) snprintf(pf_path, sizeof(pf_path), KDP_TEST_E810_PORT "/%s", pf);
                kdp_test_pci_add(root, &(kdp_test_pci_dev){
                                               .path = pf_path, .vendor = "0x8086", .device = "0x1593",
                                               .class_code = "0x020000", .numa_node = "1", .driver = "ice",
                                               .sriov_totalvfs = "128", .sriov_numvfs = "64" });
                kdp_test_sriov_pf_files(root, pf_path, "8", "1889");
                for (int i = 0; i < 64; i++) {
                        (void) snprintf(vf_path, sizeof(vf_path), KDP_TEST_E810_PORT "/0000:8b:%02x.%d",
                                        k * 8 + i / 8, i % 8);
                        kdp_test_pci_add(root, &(kdp_test_pci_dev){
                                                       .path = vf_path, .vendor = "0x8086", .device = "0x1889",
                                                       .class_code = "0x020000", .numa_node = "1",
                                                       .driver = "iavf", .physfn = pf, .vf_index = i });
                }
        }
        kdp_test_tree_write(root, "config.json",
                            "{\"resourceList\": [{\"resourceName\": \"e810\",\n"
                            "  \"selectors\": [{\"vendors\": [\"8086\"], \"devices\": [\"1889\"]}]}]}\n");
        return root;
}

/* The address of VF `i` of PF `k` in node_tree_256(), into `buf` (16 bytes). */
static char *vf256(char *buf, int k, int i) {
        (void) snprintf(buf, 16, "0000:8b:%02x.%d", k * 8 + i / 8, i % 8);
        return buf;
}

/* "a,b,c" of VFs `from`..`to` (inclusive) of PF `k`, after `prefix` (free()). */
static char *vf256_list(const char *prefix, int k, int from, int to) {
        char *buf = NULL, addr[16];
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);

        ck_assert_ptr_nonnull(m);
        fprintf(m, "%s", prefix);
        for (int i = from; i <= to; i++)
                fprintf(m, "%s%s", i > from || prefix[0] ? "," : "", vf256(addr, k, i));
        ck_assert_int_eq(fclose(m), 0);
        return buf;
}

/*
 * 256 VFs offered, 64 of each of 4 PFs, interleaved (PF 3 to 0 for each VF index): a tie picks the
 * lowest PF, in offered order; must_include keeps to its PF; one more than a PF has is the
 * framework's. 100 offered (PF0's 64, PF1's first 36): the PF with the fewest that suffice.
 */
START_TEST(test_sriov_backend_preferred_among_256_vfs_of_4_pfs) {
        _cleanup_(run_done) run r = { .root = node_tree_256() };
        _cleanup_free_ char *pf0_all = vf256_list("", 0, 0, 63), *pf2_head = vf256_list("0000:8b:10.5", 2, 0, 4);
        _cleanup_free_ char *pf2_all = vf256_list(pf2_head, 2, 6, 63), *pf1_30 = vf256_list("", 1, 0, 29);
        _cleanup_free_ char *pf0_40 = vf256_list("", 0, 0, 39);
        char ids[256][16];
        const char *avail[256], *some[100];
        const char *const must[] = { "0000:8b:10.5" };  /* PF2's VF 5 */
        const kdp_device_list *l;

        ck_assert_int_eq(run_open(&r, NULL), 0);
        run_scan(&r);
        l = kdp_test_backend_resource(&r.b, "intel.com/e810");
        ck_assert_ptr_nonnull(l);
        ck_assert_uint_eq(l->n_devices, 256);
        for (int i = 0, n = 0; i < 64; i++)
                for (int k = 3; k >= 0; k--, n++)
                        avail[n] = vf256(ids[n], k, i);
        for (int i = 0; i < 100; i++)
                some[i] = i < 64 ? avail[4 * i + 3] : avail[4 * (i - 64) + 2];  /* PF0's 64, then PF1's 36 */

        PREFERRED(&r, avail, NULL, 0, 2, "0000:8b:00.0,0000:8b:00.1");
        PREFERRED(&r, avail, NULL, 0, 64, pf0_all);
        PREFERRED(&r, avail, must, 1, 4, "0000:8b:10.5,0000:8b:10.0,0000:8b:10.1,0000:8b:10.2");
        PREFERRED(&r, avail, must, 1, 64, pf2_all);
        PREFERRED(&r, avail, NULL, 0, 65, "default");
        PREFERRED(&r, some, NULL, 0, 30, pf1_30);
        PREFERRED(&r, some, NULL, 0, 40, pf0_40);
}
END_TEST

/* ---- CDI ---- */

START_TEST(test_sriov_backend_cdi_names_each_device) {
        _cleanup_(run_done) run r = { .root = node_tree(config_json) };
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response resp = { 0 };
        _cleanup_free_ char *host_vfio = NULL, *host_group = NULL;
        const char *const ids[] = { "0000:8a:01.6" };
        const kdp_device *d;

        ck_assert_int_eq(run_open(&r, "sriov.cdi=true"), 0);
        run_scan(&r);
        d = &kdp_test_backend_resource(&r.b, VFIO)->devices[0];
        ck_assert_str_eq(d->id, "0000:8a:01.6");
        ck_assert_uint_eq(d->n_cdi_devices, 1);
        ck_assert_str_eq(d->cdi_devices[0], "intel.com/e810_vfio=0000:8a:01.6");
        /* the nodes its Allocate hands out, for the CDI spec kdpd writes */
        ck_assert_int_ge(asprintf(&host_vfio, "%s/dev/vfio/vfio", r.root), 0);
        ck_assert_int_ge(asprintf(&host_group, "%s/dev/vfio/106", r.root), 0);
        ck_assert_uint_eq(d->n_dev_nodes, 2);
        ck_assert_str_eq(d->dev_nodes[0].host_path, host_vfio);
        ck_assert_str_eq(d->dev_nodes[0].container_path, "/dev/vfio/vfio");
        ck_assert_str_eq(d->dev_nodes[1].host_path, host_group);
        ck_assert_str_eq(d->dev_nodes[1].container_path, "/dev/vfio/106");
        d = &kdp_test_backend_resource(&r.b, RDMA)->devices[1];
        ck_assert_str_eq(d->cdi_devices[0], "nvidia.com/cx6_rdma=0000:3b:00.3");
        ck_assert_uint_eq(d->n_dev_nodes, 5);   /* ucm3, issm3, umad3, uverbs3, rdma_cm */
        ck_assert_str_eq(d->dev_nodes[0].container_path, "/dev/infiniband/ucm3");
        ck_assert_str_eq(d->dev_nodes[4].container_path, "/dev/infiniband/rdma_cm");

        ck_assert_int_eq(run_allocate(&r, VFIO, ids, 1, &resp), 0);
        ck_assert_uint_eq(resp.n_cdi_devices, 1);
        ck_assert_str_eq(resp.cdi_devices[0], "intel.com/e810_vfio=0000:8a:01.6");
        ck_assert_uint_eq(resp.n_envs, 2);
        ck_assert_uint_eq(resp.n_dev_nodes, 2);
}
END_TEST

/* ---- config ---- */

START_TEST(test_sriov_backend_init_fails_on_a_bad_config) {
        _cleanup_(run_done) run r = {
                .root = node_tree("{\"resourceList\": [\n  {\"resourceName\": \"bad name!\"}\n]}\n"),
        };
        _cleanup_free_ char *log = NULL, *want = NULL;
        kdp_test_capture c;

        kdp_test_capture_begin(&c);
        ck_assert_int_eq(run_open(&r, NULL), -EINVAL);
        log = kdp_test_capture_end(&c);
        r.b.state = NULL;
        ck_assert_int_ge(asprintf(&want, "path=\"%s/config.json\" line=2 key=\"resourceList[0].resourceName\"",
                                  r.root), 0);
        ck_assert_msg(strstr(log, want), "the error does not name %s: %s", want, log);

        kdp_test_backend_done(&r.b);
        r.opened = false;
        kdp_test_tree_remove(r.root, "config.json");
        kdp_test_capture_begin(&c);
        ck_assert_int_eq(run_open(&r, NULL), -ENOENT);
        free(kdp_test_capture_end(&c));
        r.b.state = NULL;
}
END_TEST

/* A pf_link_down value other than unhealthy or ignore fails init, naming the key, the value and where it was set. */
START_TEST(test_sriov_backend_init_fails_on_a_bad_pf_link_down) {
        _cleanup_(run_done) run r = { .root = node_tree(config_json) };
        _cleanup_free_ char *log = NULL;
        const char *p;
        kdp_test_capture c;

        kdp_test_capture_begin(&c);
        ck_assert_int_eq(run_open(&r, "sriov.pf_link_down=sometimes"), -EINVAL);
        log = kdp_test_capture_end(&c);
        r.b.state = NULL;
        p = log;
        kdp_test_expect_line(&p, 'E', "sriov.c",
                             "\"Rejected config value\" backend=\"sriov\" key=\"sriov.pf_link_down\" "
                             "value=\"sometimes\" origin=\"-o sriov.pf_link_down=sometimes\" "
                             "reason=\"neither unhealthy nor ignore\" err=\"Invalid argument\"");
        ck_assert_str_eq(p, "");
}
END_TEST

/* Runs the callback of the backend's watch on the config file's directory, as kdpd's loop does. */
static int run_config_events(run *r) {
        const kdp_test_backend_watch *w = kdp_test_backend_find_watch(&r->b, "anon_inode:inotify");

        ck_assert_ptr_nonnull(w);
        return w->fn(r->b.state, w->fd);
}

/* The fake clock moves past the settle time of the config file's events. */
static void run_settle(run *r) {
        r->b.now_usec += 100 * 1000;
}

/* How many lines of `log` contain `text`. */
static unsigned count_in(const char *log, const char *text) {
        unsigned n = 0;

        for (const char *p = strstr(log, text); p; p = strstr(p + 1, text))
                n++;
        return n;
}

/* e810_vfio as config_json has it; e810_netdev takes VFs 0-2 only; cx6_rdma and qat gone; igb_uio new */
static const char config_json_changed[] =
        "{\"resourceList\": [\n"
        "  {\"resourceName\": \"e810_netdev\",\n"
        "   \"selectors\": [{\"vendors\": [\"8086\"], \"devices\": [\"1889\"],\n"
        "                   \"drivers\": [\"iavf\"],\n"
        "                   \"pfNames\": [\"ens3f0np0#0-2\"]}]},\n"
        "  {\"resourceName\": \"e810_vfio\",\n"
        "   \"selectors\": [{ \"vendors\": [\"8086\"], \"devices\": [\"1889\"],\n"
        "                    \"drivers\": [\"vfio-pci\"] }]},\n"
        "  {\"resourceName\": \"e810_uio\", \"selectors\": [{\"drivers\": [\"igb_uio\"]}]}\n"
        "]}\n";

#define NOT_SERVED_CHANGED                                                                                     \
        "0000:3b:00.0: PF with VFs enabled\n"                                                                  \
        "0000:3b:00.2: no pool's selectors take it\n0000:3b:00.3: no pool's selectors take it\n"               \
        "0000:3b:00.4: no pool's selectors take it\n0000:3b:00.5: no pool's selectors take it\n"               \
        "0000:8a:00.0: PF with VFs enabled\n0000:8a:00.1: PF with VFs enabled\n"                               \
        "0000:8a:01.3: no pool's selectors take it\n0000:8a:01.4: no pool's selectors take it\n"               \
        "0000:8a:01.5: no pool's selectors take it\n"

/* What a scan shows under config_json_changed, with VF 7 removed before it. */
static void expect_changed(const run *r) {
        ck_assert_uint_eq(r->b.tree->n_resources, 3);
        expect_devices(r, NETDEV, "0000:8a:01.0 1 Healthy\n0000:8a:01.1 1 Healthy\n0000:8a:01.2 1 Healthy\n");
        expect_devices(r, VFIO, "0000:8a:01.6 1 Healthy\n0000:8a:01.7 1 Unhealthy: removed from the PCI bus\n");
        expect_devices(r, "intel.com/e810_uio", "0000:8a:05.0 1 Healthy\n");
        ck_assert_ptr_null(kdp_test_backend_resource(&r->b, RDMA));
        expect_not_served(r, NOT_SERVED_CHANGED);
}

/* Writes `content` to <root>/<rel>.tmp and renames it over <root>/<rel>, as editors and tools do. */
static void rename_over(const run *r, const char *rel, const char *content) {
        _cleanup_free_ char *tmp = NULL, *from = NULL, *to = NULL;

        ck_assert_int_ge(asprintf(&tmp, "%s.tmp", rel), 0);
        kdp_test_tree_write(r->root, tmp, content);
        from = kdp_test_tree_path(r->root, tmp);
        to = kdp_test_tree_path(r->root, rel);
        ck_assert_int_eq(rename(from, to), 0);
}

/*
 * config.json written in place: the watch on its directory sees it, and it is read once settled
 * (not before, even by a scan, which reads the events waiting itself); an unchanged pool keeps its members (the lost VF stays,
 * Unhealthy), a changed pool is taken anew, a dropped pool goes, a new one comes. A broken file
 * keeps the pools, logged once with file:line:key; fixed (renamed over, as an editor does), it is
 * read again.
 */
START_TEST(test_sriov_backend_config_change_takes_effect_once_settled) {
        _cleanup_(run_done) run r = { .root = node_tree(config_json) };
        _cleanup_free_ char *log = NULL, *log2 = NULL, *log3 = NULL;
        kdp_test_capture c;

        ck_assert_int_eq(run_open(&r, NULL), 0);
        run_scan(&r);
        e810_vf_remove(r.root, 7, false);
        run_event(&r, "remove", "0000:8a:01.7");
        run_scan(&r);
        expect_devices(&r, VFIO, "0000:8a:01.6 1 Healthy\n0000:8a:01.7 1 Unhealthy: removed from the PCI bus\n");

        kdp_test_tree_write(r.root, "config.json", config_json_changed);
        r.b.rescan_ms = -1;
        ck_assert_int_eq(run_config_events(&r), 0);
        ck_assert_int_eq(r.b.rescan_ms, 100);           /* a scan once settled */
        run_scan(&r);
        ck_assert_uint_eq(r.b.tree->n_resources, 4);    /* not settled yet */
        run_settle(&r);
        kdp_test_capture_begin(&c);
        run_scan(&r);
        log = kdp_test_capture_end(&c);
        expect_changed(&r);
        ck_assert_int_eq(count_in(log, "\"Reloaded the config file\" backend=\"sriov\" path=\""), 1);
        ck_assert_ptr_nonnull(strstr(log, "/config.json\" pools=3 unchangedPools=1 trigger=\"inotify\"\n"));

        /* broken: logged with file:line:key, the running pools stay, and it is not read again unchanged */
        kdp_test_tree_write(r.root, "config.json", "{\"resourceList\": [\n  {\"resourceName\": 7}\n]}\n");
        kdp_test_capture_begin(&c);
        run_scan(&r);           /* before the loop ran the callback: the scan reads the events, waits to settle */
        log2 = kdp_test_capture_end(&c);
        ck_assert_str_eq(log2, "");
        free(log2);
        kdp_test_capture_begin(&c);
        run_settle(&r);
        run_scan(&r);
        run_scan(&r);
        run_settle(&r);
        run_scan(&r);
        log2 = kdp_test_capture_end(&c);
        ck_assert_int_eq(count_in(log2, "config.json\" line=2 key=\"resourceList[0].resourceName\""), 1);
        ck_assert_int_eq(count_in(log2, "\"Kept the running pools after a failed reload of the config file\" "
                                        "backend=\"sriov\" path=\""), 1);
        ck_assert_int_eq(count_in(log2, "\"Reloaded the config file\""), 0);
        expect_changed(&r);

        /* fixed, renamed over it: read again */
        rename_over(&r, "config.json", config_json);
        ck_assert_int_eq(run_config_events(&r), 0);
        run_settle(&r);
        kdp_test_capture_begin(&c);
        run_scan(&r);
        log3 = kdp_test_capture_end(&c);
        ck_assert_int_eq(count_in(log3, "\"Reloaded the config file\""), 1);
        ck_assert_ptr_nonnull(strstr(log3, " pools=4 unchangedPools=1 trigger=\"inotify\"\n"));
        ck_assert_uint_eq(r.b.tree->n_resources, 4);
        expect_devices(&r, NETDEV, E810_NETDEV_ALL);
        expect_devices(&r, RDMA, CX6_RDMA_ALL);
}
END_TEST

#define CM_OLD "cm/..2024_01_01_00_00_00.000000001"
#define CM_NEW "cm/..2024_01_01_00_05_00.000000002"

/* A ConfigMap volume as the kubelet lays it out: cm/..<ts>/config.json, cm/..data -> ..<ts>, cm/config.json -> ..data/config.json. */
static void config_map_new(const run *r, const char *content) {
        kdp_test_tree_write(r->root, CM_OLD "/config.json", content);
        kdp_test_tree_link(r->root, "cm/..data", CM_OLD + 3);
        kdp_test_tree_link(r->root, "cm/config.json", "..data/config.json");
}

/*
 * The kubelet's atomic update of a ConfigMap volume, step by step: the new files in a new
 * ..<timestamp> directory, a ..data_tmp symlink to it renamed over ..data, the old directory
 * removed.
 */
static void config_map_update(const run *r, const char *content) {
        _cleanup_free_ char *tmp = kdp_test_tree_path(r->root, "cm/..data_tmp"),
                            *data = kdp_test_tree_path(r->root, "cm/..data");

        kdp_test_tree_write(r->root, CM_NEW "/config.json", content);
        ck_assert_int_eq(symlink(CM_NEW + 3, tmp), 0);
        ck_assert_int_eq(rename(tmp, data), 0);
        kdp_test_tree_remove(r->root, CM_OLD "/config.json");
        kdp_test_tree_remove(r->root, CM_OLD);
}

/*
 * A ConfigMap update (the ..data swap) is read once settled; files of other names written in
 * the directory (an editor's swap file) read nothing; config.json's path is the one logged.
 */
START_TEST(test_sriov_backend_config_map_update_is_read_once_settled) {
        _cleanup_(run_done) run r = { .root = node_tree("{}") };
        _cleanup_free_ char *file = NULL, *log = NULL, *want = NULL;
        kdp_test_capture c;

        config_map_new(&r, config_json);
        ck_assert_int_ge(asprintf(&file, "sriov.config_file=%s/cm/config.json", r.root), 0);
        r.opened = true;
        ck_assert_int_eq(kdp_test_backend_open(&r.b, SRIOV_SO, "sriov", r.root, (const char *const[]){ file, NULL }),
                         0);
        run_scan(&r);
        e810_vf_remove(r.root, 7, false);
        run_event(&r, "remove", "0000:8a:01.7");
        run_scan(&r);

        /* other names: no read, no scan asked for */
        kdp_test_tree_write(r.root, "cm/.config.json.swp", "x");
        rename_over(&r, "cm/notes", "y");
        r.b.rescan_ms = -1;
        ck_assert_int_eq(run_config_events(&r), 0);
        ck_assert_int_eq(r.b.rescan_ms, -1);
        run_settle(&r);
        kdp_test_capture_begin(&c);
        run_scan(&r);
        free(kdp_test_capture_end(&c));
        ck_assert_uint_eq(r.b.tree->n_resources, 4);

        config_map_update(&r, config_json_changed);
        ck_assert_int_eq(run_config_events(&r), 0);
        ck_assert_int_eq(r.b.rescan_ms, 100);
        run_scan(&r);
        ck_assert_uint_eq(r.b.tree->n_resources, 4);    /* not settled yet */
        run_settle(&r);
        kdp_test_capture_begin(&c);
        run_scan(&r);
        log = kdp_test_capture_end(&c);
        expect_changed(&r);
        ck_assert_int_ge(asprintf(&want, "\"Reloaded the config file\" backend=\"sriov\" path=\"%s/cm/config.json\" "
                                         "pools=3 unchangedPools=1 trigger=\"inotify\"\n", r.root), 0);
        ck_assert_int_eq(count_in(log, "\"Reloaded the config file\""), 1);
        ck_assert_msg(strstr(log, want), "no line %s in %s", want, log);
}
END_TEST

/*
 * kdpd's SIGHUP (the reload op) reads config.json at once, changed or not; the scan that follows
 * serves it and does not read it again.
 */
START_TEST(test_sriov_backend_reload_reads_the_config_now) {
        _cleanup_(run_done) run r = { .root = node_tree(config_json) };
        _cleanup_free_ char *log = NULL, *log2 = NULL;
        kdp_test_capture c;

        ck_assert_int_eq(run_open(&r, NULL), 0);
        ck_assert_ptr_nonnull(r.b.ops->reload);
        run_scan(&r);
        kdp_test_capture_begin(&c);
        r.b.ops->reload(r.b.state);
        run_scan(&r);
        log = kdp_test_capture_end(&c);
        ck_assert_int_eq(count_in(log, "\"Reloaded the config file\""), 1);
        ck_assert_ptr_nonnull(strstr(log, "/config.json\" pools=4 unchangedPools=4 trigger=\"SIGHUP\"\n"));
        ck_assert_int_eq(count_in(log, "\"Configured pool\""), 0);      /* nothing changed */

        e810_vf_remove(r.root, 7, false);
        run_event(&r, "remove", "0000:8a:01.7");
        run_scan(&r);
        kdp_test_tree_write(r.root, "config.json", config_json_changed);
        kdp_test_capture_begin(&c);
        r.b.ops->reload(r.b.state);
        run_scan(&r);
        run_settle(&r);
        run_scan(&r);
        log2 = kdp_test_capture_end(&c);
        ck_assert_int_eq(count_in(log2, "\"Reloaded the config file\""), 1);
        ck_assert_ptr_nonnull(strstr(log2, " pools=3 unchangedPools=1 trigger=\"SIGHUP\"\n"));
        expect_changed(&r);
}
END_TEST

/*
 * config.json a symlink to a file in another directory: the watch on its own directory cannot
 * see that file change; the scan sees its identity change and reads it.
 */
START_TEST(test_sriov_backend_config_elsewhere_is_read_when_a_scan_sees_it_changed) {
        _cleanup_(run_done) run r = { .root = node_tree("{}") };
        _cleanup_free_ char *file = NULL, *log = NULL;
        kdp_test_capture c;

        kdp_test_tree_write(r.root, "elsewhere/real.json", config_json);
        kdp_test_tree_link(r.root, "etc/config.json", "../elsewhere/real.json");
        ck_assert_int_ge(asprintf(&file, "sriov.config_file=%s/etc/config.json", r.root), 0);
        r.opened = true;
        ck_assert_int_eq(kdp_test_backend_open(&r.b, SRIOV_SO, "sriov", r.root, (const char *const[]){ file, NULL }),
                         0);
        run_scan(&r);
        e810_vf_remove(r.root, 7, false);
        run_event(&r, "remove", "0000:8a:01.7");
        run_scan(&r);
        rename_over(&r, "elsewhere/real.json", config_json_changed);
        r.b.rescan_ms = -1;
        ck_assert_int_eq(run_config_events(&r), 0);
        ck_assert_int_eq(r.b.rescan_ms, -1);            /* the watch saw nothing of it */
        kdp_test_capture_begin(&c);
        run_scan(&r);
        log = kdp_test_capture_end(&c);
        ck_assert_int_eq(count_in(log, "\"Reloaded the config file\""), 1);
        ck_assert_ptr_nonnull(strstr(log, "/etc/config.json\" pools=3 unchangedPools=1 trigger=\"scan\"\n"));
        expect_changed(&r);
}
END_TEST

/* ---- link state and default routes (rtnetlink) ---- */

#define LINK_DEADLINE_MS 120000 /* a loaded machine, valgrind: the kernel answers in microseconds anyway */

/* One resource's devices as devices_text() writes them; a NULL resource: the not-served notes. */
typedef struct shown {
        const char *resource;
        const char *text;
} shown;

/*
 * `want` as text, each resource under "== <resource>" (free()); with `actual`, what the last scan
 * shows of those resources instead of the texts of `want`.
 */
static char *shown_text(const run *r, const shown *want, size_t n, bool actual) {
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);

        ck_assert_ptr_nonnull(m);
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *text = !actual ? strdup(want[i].text) :
                                            want[i].resource ? devices_text(r, want[i].resource) :
                                                               kdp_test_not_served_text(r->b.tree);

                ck_assert_ptr_nonnull(text);
                fprintf(m, "== %s\n%s", want[i].resource ? want[i].resource : "not served", text);
        }
        ck_assert_int_eq(fclose(m), 0);
        return buf;
}

/*
 * Runs the backend's rtnetlink callback as kdpd's loop does, and a scan each time it asks for one
 * (and only then), until the last scan shows `want`.
 */
static void wait_shown(run *r, const shown *want, size_t n) {
        int64_t deadline = kdp_test_monotonic_ms() + LINK_DEADLINE_MS;
        _cleanup_free_ char *expected = shown_text(r, want, n, false);
        const kdp_test_backend_watch *w = kdp_test_backend_find_watch(&r->b, "socket:");

        ck_assert_ptr_nonnull(w);               /* init put the rtnetlink socket on the loop */
        for (;;) {
                struct pollfd pfd = { .fd = w->fd, .events = POLLIN };
                _cleanup_free_ char *got = NULL;
                int64_t left;
                int ret = w->fn(r->b.state, w->fd);

                ck_assert_int_ge(ret, 0);
                if (ret > 0)
                        run_scan(r);
                got = shown_text(r, want, n, true);
                if (strcmp(got, expected) == 0)
                        return;
                left = deadline - kdp_test_monotonic_ms();
                if (left <= 0)
                        ck_assert_str_eq(got, expected);
                ck_assert_int_ge(poll(&pfd, 1, (int) left), 0);
        }
}
#define WAIT_SHOWN(r, ...) \
        wait_shown((r), (const shown[]){ __VA_ARGS__ }, KDP_ELEMENTSOF(((const shown[]){ __VA_ARGS__ })))

/* A veth pair `name`/`peer`, both admin-up. */
static void veth_add(const char *name, const char *peer) {
        kdp_test_sh("ip link add %s type veth peer name %s && ip link set %s up && ip link set %s up", name, peer,
                    name, peer);
}

#define PF0_DOWN "Unhealthy: PF ens3f0np0 link down\n"
#define E810_NETDEV_PF0_DOWN                                                             \
        "0000:8a:01.0 1 " PF0_DOWN "0000:8a:01.1 1 " PF0_DOWN "0000:8a:01.2 1 " PF0_DOWN \
        "0000:8a:01.3 1 " PF0_DOWN "0000:8a:01.4 1 " PF0_DOWN "0000:8a:01.5 1 " PF0_DOWN
#define E810_VFIO_PF0_DOWN "0000:8a:01.6 1 " PF0_DOWN "0000:8a:01.7 1 " PF0_DOWN
#define CX6_DOWN "Unhealthy: PF ens1f0np0 link down\n"
#define CX6_RDMA_DOWN \
        "0000:3b:00.2 0 " CX6_DOWN "0000:3b:00.3 0 " CX6_DOWN "0000:3b:00.4 0 " CX6_DOWN "0000:3b:00.5 0 " CX6_DOWN

/*
 * A PF's link down (its carrier lost, or itself admin-down) makes each VF of that PF Unhealthy,
 * in every pool, at once (the rtnetlink callback asks for the scan: no uevent comes), and
 * Healthy again when it is up; the other PF's VFs stay Healthy.
 */
START_TEST(test_sriov_backend_pf_link_down_makes_its_vfs_unhealthy_until_up) {
        _cleanup_(run_done) run r = { .root = node_tree(config_json) };

        veth_add("ens3f0np0", "e810peer");
        veth_add("ens1f0np0", "cx6peer");
        ck_assert_int_eq(run_open(&r, NULL), 0);
        run_scan(&r);
        WAIT_SHOWN(&r, { NETDEV, E810_NETDEV_ALL }, { VFIO, E810_VFIO_ALL }, { RDMA, CX6_RDMA_ALL },
                   { NULL, NOT_SERVED_ALL });

        /* the peer down: ens3f0np0 is admin-up without a carrier */
        kdp_test_sh("ip link set e810peer down");
        WAIT_SHOWN(&r, { NETDEV, E810_NETDEV_PF0_DOWN }, { VFIO, E810_VFIO_PF0_DOWN }, { RDMA, CX6_RDMA_ALL },
                   { NULL, NOT_SERVED_ALL });
        kdp_test_sh("ip link set e810peer up");
        WAIT_SHOWN(&r, { NETDEV, E810_NETDEV_ALL }, { VFIO, E810_VFIO_ALL }, { RDMA, CX6_RDMA_ALL });

        /* the PF itself admin-down */
        kdp_test_sh("ip link set ens1f0np0 down");
        WAIT_SHOWN(&r, { NETDEV, E810_NETDEV_ALL }, { VFIO, E810_VFIO_ALL }, { RDMA, CX6_RDMA_DOWN });
        kdp_test_sh("ip link set ens1f0np0 up");
        WAIT_SHOWN(&r, { NETDEV, E810_NETDEV_ALL }, { VFIO, E810_VFIO_ALL }, { RDMA, CX6_RDMA_ALL });
}
END_TEST

/*
 * A pool that does not look at the PF itself (kdp's pci type, by the VFs' device ID) still hears
 * of its link: the PF netdevs of the members are what the rtnetlink callback reports.
 */
START_TEST(test_sriov_backend_pf_link_down_reaches_a_pool_blind_to_the_pf) {
        _cleanup_(run_done) run r = {
                .root = node_tree("{\"resourceList\": [{\"resourceName\": \"e810_pci\", \"deviceType\": \"pci\",\n"
                                  "  \"selectors\": [{\"vendors\": [\"8086\"], \"devices\": [\"1889\"],\n"
                                  "                  \"drivers\": [\"vfio-pci\"]}]}]}\n"),
        };

        veth_add("ens3f0np0", "e810peer");
        ck_assert_int_eq(run_open(&r, NULL), 0);
        run_scan(&r);
        WAIT_SHOWN(&r, { "intel.com/e810_pci", E810_VFIO_ALL });
        kdp_test_sh("ip link set ens3f0np0 down");
        WAIT_SHOWN(&r, { "intel.com/e810_pci", E810_VFIO_PF0_DOWN });
        kdp_test_sh("ip link set ens3f0np0 up");
        WAIT_SHOWN(&r, { "intel.com/e810_pci", E810_VFIO_ALL });
}
END_TEST

/*
 * pf_link_down=ignore: a PF down changes nothing. A default route added after it (on the same
 * socket, so seen after the PF's change) shows when the backend has seen both.
 */
START_TEST(test_sriov_backend_pf_link_down_ignored) {
        _cleanup_(run_done) run r = { .root = node_tree(config_json) };

        veth_add("ens3f0np0", "e810peer");
        veth_add("ens3f0v5", "vf5peer");
        ck_assert_int_eq(run_open(&r, "sriov.pf_link_down=ignore"), 0);
        run_scan(&r);
        WAIT_SHOWN(&r, { NETDEV, E810_NETDEV_ALL }, { VFIO, E810_VFIO_ALL });

        kdp_test_sh("ip link set ens3f0np0 down");
        kdp_test_sh("ip route add default dev ens3f0v5");
        WAIT_SHOWN(&r,
                   { NETDEV, "0000:8a:01.0 1 Healthy\n0000:8a:01.1 1 Healthy\n0000:8a:01.2 1 Healthy\n"
                             "0000:8a:01.3 1 Healthy\n0000:8a:01.4 1 Healthy\n"
                             "0000:8a:01.5 1 Unhealthy: carries the default route\n" },
                   { VFIO, E810_VFIO_ALL }, { NULL, NOT_SERVED_ALL });
}
END_TEST

/*
 * A VF whose own netdev carries a default route is not served (as sriovdp), and is served once
 * the route is gone; a route added to a served VF's netdev makes it Unhealthy (its pool no
 * longer takes it) until removed. A VF's own netdev down is no reason.
 */
START_TEST(test_sriov_backend_default_route_on_a_vf_netdev_excludes_it) {
        _cleanup_(run_done) run r = { .root = node_tree(config_json) };

        veth_add("ens3f0np0", "e810peer");
        veth_add("ens3f0v1", "vf1peer");
        veth_add("ens3f0v2", "vf2peer");
        kdp_test_sh("ip route add default dev ens3f0v1");
        ck_assert_int_eq(run_open(&r, NULL), 0);
        run_scan(&r);
        WAIT_SHOWN(&r,
                   { NETDEV, "0000:8a:01.0 1 Healthy\n0000:8a:01.2 1 Healthy\n0000:8a:01.3 1 Healthy\n"
                             "0000:8a:01.4 1 Healthy\n0000:8a:01.5 1 Healthy\n" },
                   { VFIO, E810_VFIO_ALL },
                   { NULL, "0000:3b:00.0: PF with VFs enabled\n0000:8a:00.0: PF with VFs enabled\n"
                           "0000:8a:00.1: PF with VFs enabled\n0000:8a:01.1: carries the default route\n"
                           "0000:8a:05.0: no pool's selectors take it\n" });

        kdp_test_sh("ip route del default dev ens3f0v1");
        WAIT_SHOWN(&r, { NETDEV, E810_NETDEV_ALL }, { VFIO, E810_VFIO_ALL }, { NULL, NOT_SERVED_ALL });

        /* VF 2's netdev admin-down, then a route on VF 1's (seen after it): only the route counts */
        kdp_test_sh("ip link set ens3f0v2 down");
        kdp_test_sh("ip route add default dev ens3f0v1");
        WAIT_SHOWN(&r,
                   { NETDEV, "0000:8a:01.0 1 Healthy\n0000:8a:01.1 1 Unhealthy: carries the default route\n"
                             "0000:8a:01.2 1 Healthy\n0000:8a:01.3 1 Healthy\n"
                             "0000:8a:01.4 1 Healthy\n0000:8a:01.5 1 Healthy\n" },
                   { NULL, NOT_SERVED_ALL });
        kdp_test_sh("ip route del default dev ens3f0v1");
        WAIT_SHOWN(&r, { NETDEV, E810_NETDEV_ALL }, { NULL, NOT_SERVED_ALL });
}
END_TEST

/*
 * rtnetlink failing at start (here kdpd's loop refuses to watch the socket) fails nothing: it is
 * logged, the backend serves, and a scan once the backoff has passed opens it again.
 */
START_TEST(test_sriov_backend_serves_while_rtnetlink_fails_and_retries_it) {
        _cleanup_(run_done) run r = { .root = node_tree(config_json) };
        _cleanup_free_ char *log = NULL, *log2 = NULL, *watch_line = NULL;
        const char *p;
        kdp_test_capture c;
        int ret;

        veth_add("ens3f0np0", "e810peer");
        kdp_test_backend_watch_result = -ENOSPC;
        kdp_test_capture_begin(&c);
        ret = run_open(&r, NULL);
        log = kdp_test_capture_end(&c);
        kdp_test_backend_watch_result = 0;
        ck_assert_int_eq(ret, 0);
        p = log;
        ck_assert_int_ge(asprintf(&watch_line, "\"Cannot watch the config file's directory: its changes are seen at "
                                               "scans\" backend=\"sriov\" path=\"%s\" err=\"No space left on device\"",
                                  r.root), 0);
        kdp_test_expect_line(&p, 'W', "watch.c", watch_line);
        kdp_test_expect_line(&p, 'E', "link.c",
                             "\"Failed to read rtnetlink, retrying later\" backend=\"sriov\" retryMs=1000 "
                             "err=\"No space left on device\"");
        ck_assert_uint_eq(r.b.n_watches, 0);    /* neither rtnetlink nor the config file's directory */
        ck_assert_int_eq(r.b.rescan_ms, 1000);
        run_scan(&r);
        expect_devices(&r, NETDEV, E810_NETDEV_ALL);
        ck_assert_ptr_null(kdp_test_backend_find_watch(&r.b, "socket:"));      /* not before the backoff has passed */
        ck_assert_ptr_nonnull(kdp_test_backend_find_watch(&r.b, "anon_inode:inotify"));   /* at each scan */

        /* the backoff has passed: the next scan opens a socket, which kdpd's loop watches */
        r.b.now_usec += 1000000;
        kdp_test_capture_begin(&c);
        run_scan(&r);
        log2 = kdp_test_capture_end(&c);
        p = log2;
        kdp_test_expect_line(&p, 'I', "link.c", "\"Reopened rtnetlink socket\" backend=\"sriov\"");
        ck_assert_str_eq(p, "");
        ck_assert_ptr_nonnull(kdp_test_backend_find_watch(&r.b, "socket:"));
        kdp_test_sh("ip link set ens3f0np0 down");
        WAIT_SHOWN(&r, { NETDEV, E810_NETDEV_PF0_DOWN }, { VFIO, E810_VFIO_PF0_DOWN });
}
END_TEST

/*
 * A PF netdev this netns does not have is not down: ens1f0np0 never exists here (its VFs stay
 * Healthy), and ens3f0np0, admin-down, then moved into a pod's netns, no longer counts.
 */
START_TEST(test_sriov_backend_pf_link_not_in_this_netns_is_not_down) {
        _cleanup_(run_done) run r = { .root = node_tree(config_json) };
        kdp_test_pod p;

        veth_add("ens3f0np0", "e810peer");
        kdp_test_sh("ip link set ens3f0np0 down");
        ck_assert_int_eq(run_open(&r, NULL), 0);
        run_scan(&r);
        WAIT_SHOWN(&r, { NETDEV, E810_NETDEV_PF0_DOWN }, { VFIO, E810_VFIO_PF0_DOWN }, { RDMA, CX6_RDMA_ALL });

        kdp_test_pod_start(&p);
        kdp_test_sh("ip link set ens3f0np0 netns %d", (int) p.pid);
        WAIT_SHOWN(&r, { NETDEV, E810_NETDEV_ALL }, { VFIO, E810_VFIO_ALL }, { RDMA, CX6_RDMA_ALL },
                   { NULL, NOT_SERVED_ALL });
        kdp_test_pod_stop(&p);
}
END_TEST

/*
 * wait_shown(), then a scan kdpd would make for another reason (the periodic one: a full scan,
 * reading every file again) must show the same.
 */
static void wait_shown_as_full_scan(run *r, const shown *want, size_t n) {
        _cleanup_free_ char *expected = shown_text(r, want, n, false), *got = NULL;

        wait_shown(r, want, n);
        run_full_scan_due(r);
        run_scan(r);
        got = shown_text(r, want, n, true);
        ck_assert_str_eq(got, expected);
}
#define WAIT_SHOWN_AS_FULL_SCAN(r, ...)                                                                       \
        wait_shown_as_full_scan((r), (const shown[]){ __VA_ARGS__ },                                        \
                                KDP_ELEMENTSOF(((const shown[]){ __VA_ARGS__ })))

#define NETDEV_VF1_UNBOUND_PF0(health)                                                                       \
        "0000:8a:01.0 1 " health "0000:8a:01.1 1 Unhealthy: driver unbound\n0000:8a:01.2 1 " health         \
        "0000:8a:01.3 1 " health "0000:8a:01.4 1 " health "0000:8a:01.5 1 " health

/*
 * Link flaps between device events: a scan the rtnetlink callback asks for when only link states
 * changed reuses what the last full scan read; a sysfs change comes with its uevent, and the scan
 * after it reads everything again, whatever link messages came with it. After each step the
 * lists are exact, and a full scan shows the same.
 */
START_TEST(test_sriov_backend_link_flaps_between_device_events_list_as_full_scans) {
        _cleanup_(run_done) run r = { .root = node_tree(config_json) };
        const kdp_test_pci_dev vf1 = { .path = E810_VF_PATH(1) };

        veth_add("ens3f0np0", "e810peer");
        veth_add("ens1f0np0", "cx6peer");
        ck_assert_int_eq(run_open(&r, NULL), 0);
        run_scan(&r);
        WAIT_SHOWN_AS_FULL_SCAN(&r, { NETDEV, E810_NETDEV_ALL }, { VFIO, E810_VFIO_ALL }, { RDMA, CX6_RDMA_ALL },
                                { NULL, NOT_SERVED_ALL });
        kdp_test_sh("ip link set ens3f0np0 down");
        WAIT_SHOWN_AS_FULL_SCAN(&r, { NETDEV, E810_NETDEV_PF0_DOWN }, { VFIO, E810_VFIO_PF0_DOWN },
                                { RDMA, CX6_RDMA_ALL }, { NULL, NOT_SERVED_ALL });

        /* VF 1 unbound (its uevent), then PF0 up and the CX6 PF down: one scan may see them all */
        kdp_test_sriov_net_remove(r.root, E810_VF_PATH(1), "ens3f0v1");
        kdp_test_tree_remove(r.root, "sys/devices/" E810_VF_PATH(1) "/driver");
        run_event(&r, "unbind", "0000:8a:01.1");
        kdp_test_sh("ip link set ens3f0np0 up");
        kdp_test_sh("ip link set ens1f0np0 down");
        WAIT_SHOWN_AS_FULL_SCAN(&r, { NETDEV, NETDEV_VF1_UNBOUND_PF0("Healthy\n") }, { VFIO, E810_VFIO_ALL },
                                { RDMA, CX6_RDMA_DOWN }, { NULL, NOT_SERVED_ALL });

        /* flaps alone: the unbound VF keeps its reason, without the PF's */
        kdp_test_sh("ip link set ens3f0np0 down");
        kdp_test_sh("ip link set ens1f0np0 up");
        WAIT_SHOWN_AS_FULL_SCAN(&r, { NETDEV, NETDEV_VF1_UNBOUND_PF0(PF0_DOWN) }, { VFIO, E810_VFIO_PF0_DOWN },
                                { RDMA, CX6_RDMA_ALL }, { NULL, NOT_SERVED_ALL });

        /* VF 1 bound to iavf again while PF0 is down, then a flap of the CX6 PF */
        kdp_test_pci_sys_link(r.root, &vf1, "driver", "bus/pci/drivers/iavf");
        kdp_test_sriov_net_add(r.root, E810_VF_PATH(1), "ens3f0v1", "1", NULL, NULL);
        run_event(&r, "bind", "0000:8a:01.1");
        kdp_test_sh("ip link set ens1f0np0 down");
        WAIT_SHOWN_AS_FULL_SCAN(&r, { NETDEV, E810_NETDEV_PF0_DOWN }, { VFIO, E810_VFIO_PF0_DOWN },
                                { RDMA, CX6_RDMA_DOWN }, { NULL, NOT_SERVED_ALL });
        kdp_test_sh("ip link set ens3f0np0 up");
        kdp_test_sh("ip link set ens1f0np0 up");
        WAIT_SHOWN_AS_FULL_SCAN(&r, { NETDEV, E810_NETDEV_ALL }, { VFIO, E810_VFIO_ALL }, { RDMA, CX6_RDMA_ALL },
                                { NULL, NOT_SERVED_ALL });
}
END_TEST

/*
 * A scan asked for by a link change alone reads no file: VF 2 disabled in sysfs without a uevent
 * (enable=0) is not seen by the link-only scans, only by the next full one (the periodic scan);
 * enabled again without a uevent, the link-only scans keep the full scan's reason and only the
 * PF link's part of it follows the link.
 */
START_TEST(test_sriov_backend_link_only_scan_reads_no_file) {
        _cleanup_(run_done) run r = { .root = node_tree(config_json) };

        veth_add("ens3f0np0", "e810peer");
        ck_assert_int_eq(run_open(&r, NULL), 0);
        run_scan(&r);
        WAIT_SHOWN(&r, { NETDEV, E810_NETDEV_ALL }, { VFIO, E810_VFIO_ALL });

        kdp_test_sriov_write(r.root, E810_VF_PATH(2), "enable", "0");
        kdp_test_sh("ip link set ens3f0np0 down");
        WAIT_SHOWN(&r, { NETDEV, E810_NETDEV_PF0_DOWN }, { VFIO, E810_VFIO_PF0_DOWN });
        run_scan(&r);
        expect_devices(&r, NETDEV,
                       "0000:8a:01.0 1 " PF0_DOWN "0000:8a:01.1 1 " PF0_DOWN
                       "0000:8a:01.2 1 Unhealthy: disabled (enable=0); PF ens3f0np0 link down\n"
                       "0000:8a:01.3 1 " PF0_DOWN "0000:8a:01.4 1 " PF0_DOWN "0000:8a:01.5 1 " PF0_DOWN);

        kdp_test_sriov_write(r.root, E810_VF_PATH(2), "enable", "1");
        kdp_test_sh("ip link set ens3f0np0 up");
        WAIT_SHOWN(&r,
                   { NETDEV, "0000:8a:01.0 1 Healthy\n0000:8a:01.1 1 Healthy\n"
                             "0000:8a:01.2 1 Unhealthy: disabled (enable=0)\n0000:8a:01.3 1 Healthy\n"
                             "0000:8a:01.4 1 Healthy\n0000:8a:01.5 1 Healthy\n" },
                   { VFIO, E810_VFIO_ALL }, { NULL, NOT_SERVED_ALL });
        run_scan(&r);
        expect_devices(&r, NETDEV, E810_NETDEV_ALL);
        expect_not_served(&r, NOT_SERVED_ALL);
}
END_TEST

/*
 * kdpd's SIGHUP read a changed config.json (reload), and a PF link went down before the scan
 * that follows: that scan is a full one, where the changed pool takes its functions again
 * (a link-only scan would list it empty).
 */
START_TEST(test_sriov_backend_link_scan_after_a_reload_is_full) {
        _cleanup_(run_done) run r = { .root = node_tree(config_json) };

        veth_add("ens3f0np0", "e810peer");
        ck_assert_int_eq(run_open(&r, NULL), 0);
        run_scan(&r);
        WAIT_SHOWN(&r, { NETDEV, E810_NETDEV_ALL }, { VFIO, E810_VFIO_ALL });

        kdp_test_tree_write(r.root, "config.json", config_json_changed);
        r.b.ops->reload(r.b.state);
        kdp_test_sh("ip link set ens3f0np0 down");
        WAIT_SHOWN(&r, { NETDEV, "0000:8a:01.0 1 " PF0_DOWN "0000:8a:01.1 1 " PF0_DOWN "0000:8a:01.2 1 " PF0_DOWN },
                   { VFIO, E810_VFIO_PF0_DOWN });
}
END_TEST

static bool netns_usable;

/* Each test in a netns of its own when it may: the machine's links and routes stay out of it. */
static void netns_setup(void) {
        if (netns_usable)
                kdp_test_netns_enter();
}

/* ---- device-info files ---- */

static int name_cmp(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The names in <root>/devinfo, sorted, one a line ("" when it is empty or missing). */
static char *devinfo_list(const run *r) {
        _cleanup_free_ char *dir = kdp_test_tree_path(r->root, "devinfo");
        _cleanup_closedir_ DIR *d = opendir(dir);
        char *names[64], *buf = NULL;
        size_t n = 0, len = 0;
        struct dirent *de;
        FILE *m;

        while (d && (de = readdir(d)))
                if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
                        ck_assert_uint_lt(n, KDP_ELEMENTSOF(names));
                        names[n++] = strdup(de->d_name);
                }
        qsort(names, n, sizeof(*names), name_cmp);
        m = open_memstream(&buf, &len);
        ck_assert_ptr_nonnull(m);
        for (size_t i = 0; i < n; i++) {
                fprintf(m, "%s\n", names[i]);
                free(names[i]);
        }
        ck_assert_int_eq(fclose(m), 0);
        return buf;
}

static void expect_devinfo_list(const run *r, const char *want) {
        _cleanup_free_ char *got = devinfo_list(r);

        ck_assert_str_eq(got, want);
}

/* <root>/devinfo/<name> holds exactly `want`, read-only for all (0444, as Multus' own library writes it). */
static void expect_devinfo_file(const run *r, const char *name, const char *want) {
        _cleanup_free_ char *rel = NULL, *path = NULL, *text = NULL;
        _cleanup_close_ int fd = -1;
        struct stat st;

        ck_assert_int_ge(asprintf(&rel, "devinfo/%s", name), 0);
        path = kdp_test_tree_path(r->root, rel);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
        ck_assert_int_eq(fstat(fd, &st), 0);
        ck_assert_uint_eq(st.st_mode & 07777, 0444);
        text = kdp_test_fd_text(fd);
        ck_assert_str_eq(text, want);
}

#define DEVINFO_VFIO6 "intel.com-e810_vfio-0000:8a:01.6-device.json"
#define DEVINFO_VFIO7 "intel.com-e810_vfio-0000:8a:01.7-device.json"
#define DEVINFO_NETDEV0 "intel.com-e810_netdev-0000:8a:01.0-device.json"
#define DEVINFO_RDMA3 "nvidia.com-cx6_rdma-0000:3b:00.3-device.json"
#define DEVINFO_PCI(vf, pf) \
        "{\"type\":\"pci\",\"version\":\"1.1.0\",\"pci\":{\"pci-address\":\"" vf "\",\"pf-pci-address\":\"" pf "\"}}"

/* An accelerator pool's Allocate writes no device-info file (sriovdp's accelerator pools store
 * none); a netDevice pool's beside it does. */
START_TEST(test_sriov_backend_devinfo_none_for_accelerator_pools) {
        _cleanup_(run_done) run r = {
                .root = accel_pf1_tree(),
        };
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response resp = { 0 };
        const char *const accel[] = { "0000:8a:00.1" }, *const uio[] = { "0000:8a:05.0" };

        ck_assert_int_eq(run_open(&r, NULL), 0);
        run_scan(&r);
        expect_devices(&r, "intel.com/pf_accel", "0000:8a:00.1 1 Healthy\n");
        ck_assert_int_eq(run_allocate(&r, "intel.com/pf_accel", accel, 1, &resp), 0);
        expect_devinfo_list(&r, "");
        ck_assert_int_eq(run_allocate(&r, "intel.com/e810_uio", uio, 1, &resp), 0);
        expect_devinfo_list(&r, "intel.com-e810_uio-0000:8a:05.0-device.json\n");
}
END_TEST

/*
 * Allocate writes one file per device; a device gone from the bus, or from its pool (pool
 * dropped, or changed and no longer taking it), loses its file at the next scan; fini removes
 * the rest.
 */
START_TEST(test_sriov_backend_devinfo_follows_allocate_and_the_devices) {
        _cleanup_(run_done) run r = { .root = node_tree(config_json) };
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response resp = { 0 };
        const char *const vfio[] = { "0000:8a:01.7", "0000:8a:01.6" }, *const netdev[] = { "0000:8a:01.0" },
                          *const rdma[] = { "0000:3b:00.3" };

        ck_assert_int_eq(run_open(&r, NULL), 0);
        run_scan(&r);
        expect_devinfo_list(&r, "");            /* nothing before Allocate */

        ck_assert_int_eq(run_allocate(&r, VFIO, vfio, 2, &resp), 0);
        ck_assert_int_eq(run_allocate(&r, NETDEV, netdev, 1, &resp), 0);
        ck_assert_int_eq(run_allocate(&r, RDMA, rdma, 1, &resp), 0);
        expect_devinfo_list(&r, DEVINFO_NETDEV0 "\n" DEVINFO_VFIO6 "\n" DEVINFO_VFIO7 "\n" DEVINFO_RDMA3 "\n");
        expect_devinfo_file(&r, DEVINFO_VFIO6, DEVINFO_PCI("0000:8a:01.6", "0000:8a:00.0"));
        expect_devinfo_file(&r, DEVINFO_VFIO7, DEVINFO_PCI("0000:8a:01.7", "0000:8a:00.0"));
        expect_devinfo_file(&r, DEVINFO_NETDEV0, DEVINFO_PCI("0000:8a:01.0", "0000:8a:00.0"));
        expect_devinfo_file(&r, DEVINFO_RDMA3,
                            "{\"type\":\"pci\",\"version\":\"1.1.0\",\"pci\":{\"pci-address\":\"0000:3b:00.3\","
                            "\"rdma-device\":\"mlx5_3\",\"pf-pci-address\":\"0000:3b:00.0\"}}");

        /* allocated again (the kubelet freed it and gave it to another pod): written over, no temp file left */
        ck_assert_int_eq(run_allocate(&r, VFIO, vfio + 1, 1, &resp), 0);
        run_scan(&r);
        expect_devinfo_list(&r, DEVINFO_NETDEV0 "\n" DEVINFO_VFIO6 "\n" DEVINFO_VFIO7 "\n" DEVINFO_RDMA3 "\n");
        expect_devinfo_file(&r, DEVINFO_VFIO6, DEVINFO_PCI("0000:8a:01.6", "0000:8a:00.0"));

        /* a VF removed from the bus: its member stays, Unhealthy, its file goes */
        e810_vf_remove(r.root, 7, false);
        run_event(&r, "remove", "0000:8a:01.7");
        run_scan(&r);
        expect_devices(&r, VFIO, "0000:8a:01.6 1 Healthy\n0000:8a:01.7 1 Unhealthy: removed from the PCI bus\n");
        expect_devinfo_list(&r, DEVINFO_NETDEV0 "\n" DEVINFO_VFIO6 "\n" DEVINFO_RDMA3 "\n");

        /* cx6_rdma dropped, e810_netdev changed to VFs 1-2: both files go; e810_vfio is as it was */
        kdp_test_tree_write(r.root, "config.json",
                            "{\"resourceList\": [\n"
                            "  {\"resourceName\": \"e810_netdev\",\n"
                            "   \"selectors\": [{\"drivers\": [\"iavf\"], \"pfNames\": [\"ens3f0np0#1-2\"]}]},\n"
                            "  {\"resourceName\": \"e810_vfio\",\n"
                            "   \"selectors\": [{ \"vendors\": [\"8086\"], \"devices\": [\"1889\"],\n"
                            "                    \"drivers\": [\"vfio-pci\"] }]}\n"
                            "]}\n");
        run_scan(&r);           /* the write seen */
        run_settle(&r);
        run_scan(&r);           /* and read */
        expect_devices(&r, NETDEV, "0000:8a:01.1 1 Healthy\n0000:8a:01.2 1 Healthy\n");
        ck_assert_ptr_null(kdp_test_backend_resource(&r.b, RDMA));
        expect_devinfo_list(&r, DEVINFO_VFIO6 "\n");

        /* the backend stops: its files go (the spec's rule for a device plugin that stops) */
        kdp_test_backend_done(&r.b);
        r.opened = false;
        expect_devinfo_list(&r, "");
}
END_TEST

/* ops->allocated: a List started `after_usec` after the fake clock's now, listing `ids` of `resource`. */
static void run_listed(run *r, uint64_t after_usec, const char *resource, const char *const *ids, size_t n) {
        const kdp_allocated_resource res = { .resource = resource, .device_ids = ids, .n_device_ids = n };

        r->b.ops->allocated(r->b.state, &(kdp_allocated){ .started_usec = r->b.now_usec + after_usec,
                                                          .resources = &res, .n_resources = resource ? 1 : 0 });
}

/*
 * A file goes when the kubelet's List no longer names its device, but only a List that started
 * devinfo_grace_ms (10 s by default) or more after the file's last write counts: one begun
 * earlier may not show the allocation yet. A device named under another resource is not "in use".
 */
START_TEST(test_sriov_backend_devinfo_freed_when_the_kubelet_lists_it_no_more) {
        _cleanup_(run_done) run r = { .root = node_tree(config_json) };
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response resp = { 0 };
        const char *const vfio[] = { "0000:8a:01.6", "0000:8a:01.7" }, *const netdev[] = { "0000:8a:01.0" };

        ck_assert_int_eq(run_open(&r, NULL), 0);
        run_scan(&r);
        ck_assert_int_eq(run_allocate(&r, VFIO, vfio, 2, &resp), 0);
        ck_assert_int_eq(run_allocate(&r, NETDEV, netdev, 1, &resp), 0);
        expect_devinfo_list(&r, DEVINFO_NETDEV0 "\n" DEVINFO_VFIO6 "\n" DEVINFO_VFIO7 "\n");

        /* an empty List begun 9.999999 s after the writes: too early, everything stays */
        run_listed(&r, 9999999, NULL, NULL, 0);
        expect_devinfo_list(&r, DEVINFO_NETDEV0 "\n" DEVINFO_VFIO6 "\n" DEVINFO_VFIO7 "\n");

        /* 10 s after: 01.6 still listed stays; 01.7 and the netdev VF (listed under the vfio pool) go */
        run_listed(&r, 10000000, VFIO, (const char *const[]){ "0000:8a:01.0", "0000:8a:01.6" }, 2);
        expect_devinfo_list(&r, DEVINFO_VFIO6 "\n");

        /* allocated again: the write starts the grace anew */
        r.b.now_usec += 60000000;
        ck_assert_int_eq(run_allocate(&r, VFIO, vfio + 1, 1, &resp), 0);
        run_listed(&r, 5000000, VFIO, vfio, 1);
        expect_devinfo_list(&r, DEVINFO_VFIO6 "\n" DEVINFO_VFIO7 "\n");
        run_listed(&r, 10000000, NULL, NULL, 0);
        expect_devinfo_list(&r, "");
}
END_TEST

/* devinfo_grace_ms=0: the first List that misses the device removes its file. */
START_TEST(test_sriov_backend_devinfo_grace_zero_frees_at_the_first_list) {
        _cleanup_(run_done) run r = { .root = node_tree(config_json) };
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response resp = { 0 };
        const char *const vfio[] = { "0000:8a:01.6" };

        ck_assert_int_eq(run_open(&r, "sriov.devinfo_grace_ms=0"), 0);
        run_scan(&r);
        ck_assert_int_eq(run_allocate(&r, VFIO, vfio, 1, &resp), 0);
        run_listed(&r, 0, VFIO, vfio, 1);
        expect_devinfo_list(&r, DEVINFO_VFIO6 "\n");
        run_listed(&r, 0, NULL, NULL, 0);
        expect_devinfo_list(&r, "");
}
END_TEST

/* devinfo_grace_ms out of range: init refuses it. */
START_TEST(test_sriov_backend_devinfo_grace_out_of_range_refused) {
        _cleanup_(run_done) run r = { .root = node_tree(config_json) };

        ck_assert_int_eq(run_open(&r, "sriov.devinfo_grace_ms=3600001"), -EINVAL);
}
END_TEST

/* A changed pool that still takes the device keeps its file; VFs re-cut by sriov_numvfs lose theirs. */
START_TEST(test_sriov_backend_devinfo_kept_by_a_changed_pool_gone_with_numvfs) {
        _cleanup_(run_done) run r = { .root = node_tree(config_json) };
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response resp = { 0 };
        const char *const netdev[] = { "0000:8a:01.0", "0000:8a:01.1" };

        ck_assert_int_eq(run_open(&r, NULL), 0);
        run_scan(&r);
        ck_assert_int_eq(run_allocate(&r, NETDEV, netdev, 2, &resp), 0);
        kdp_test_tree_write(r.root, "config.json",
                            "{\"resourceList\": [\n"
                            "  {\"resourceName\": \"e810_netdev\",\n"
                            "   \"selectors\": [{\"drivers\": [\"iavf\"], \"pfNames\": [\"ens3f0np0#0\"]}]}\n"
                            "]}\n");
        run_scan(&r);           /* the write seen */
        run_settle(&r);
        run_scan(&r);           /* and read */
        expect_devices(&r, NETDEV, "0000:8a:01.0 1 Healthy\n");
        expect_devinfo_list(&r, DEVINFO_NETDEV0 "\n");
        expect_devinfo_file(&r, DEVINFO_NETDEV0, DEVINFO_PCI("0000:8a:01.0", "0000:8a:00.0"));

        for (int i = 0; i < 8; i++)
                e810_vf_remove(r.root, i, true);
        kdp_test_sriov_write(r.root, KDP_TEST_E810_PF0, "sriov_numvfs", "0");
        run_event(&r, "remove", "0000:8a:01.0");
        run_scan(&r);
        expect_devices(&r, NETDEV, "");
        expect_devinfo_list(&r, "");
}
END_TEST

/*
 * At start, files of the pools' resources a previous run left ("<resource>-<PCI address>-
 * device.json") go; another resource's files, and names that are no such pair, stay.
 */
START_TEST(test_sriov_backend_devinfo_left_by_a_previous_run_goes_at_start) {
        _cleanup_(run_done) run r = { .root = node_tree(config_json) };

        kdp_test_tree_write(r.root, "devinfo/" DEVINFO_VFIO6, "{}");
        kdp_test_tree_write(r.root, "devinfo/" DEVINFO_RDMA3, "{}");
        kdp_test_tree_write(r.root, "devinfo/intel.com-e810_vfio-x-0000:8a:01.6-device.json", "{}");
        kdp_test_tree_write(r.root, "devinfo/example.com-other-0000:8a:01.6-device.json", "{}");
        kdp_test_tree_write(r.root, "devinfo/intel.com-e810_vfio-0000:8a:01.6-device.json.old", "{}");
        ck_assert_int_eq(run_open(&r, NULL), 0);
        expect_devinfo_list(&r, "example.com-other-0000:8a:01.6-device.json\n"
                                "intel.com-e810_vfio-0000:8a:01.6-device.json.old\n"
                                "intel.com-e810_vfio-x-0000:8a:01.6-device.json\n");
}
END_TEST

/* devinfo_dir empty: none written; a directory that cannot be made: logged, Allocate still answers. */
START_TEST(test_sriov_backend_devinfo_off_or_failing_leaves_allocate_alone) {
        _cleanup_(run_done) run r = { .root = node_tree(config_json) };
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response resp = { 0 };
        _cleanup_free_ char *bad = NULL, *log = NULL;
        const char *const vfio[] = { "0000:8a:01.6" };
        kdp_test_capture c;

        ck_assert_int_eq(run_open(&r, "sriov.devinfo_dir="), 0);
        run_scan(&r);
        ck_assert_int_eq(run_allocate(&r, VFIO, vfio, 1, &resp), 0);
        ck_assert_uint_eq(resp.n_envs, 2);
        expect_devinfo_list(&r, "");
        run_done(&r);

        r = (run){ .root = node_tree(config_json) };
        ck_assert_int_ge(asprintf(&bad, "sriov.devinfo_dir=%s/config.json/dp", r.root), 0);
        ck_assert_int_eq(run_open(&r, bad), 0);
        run_scan(&r);
        kdp_test_capture_begin(&c);
        ck_assert_int_eq(run_allocate(&r, VFIO, vfio, 1, &resp), 0);
        log = kdp_test_capture_end(&c);
        ck_assert_uint_eq(resp.n_envs, 2);
        ck_assert_ptr_nonnull(strstr(log, "\"Cannot write a device-info file\" backend=\"sriov\" resource=\"" VFIO
                                          "\" device=\"0000:8a:01.6\""));
        ck_assert_ptr_nonnull(strstr(log, "err=\"Not a directory\""));
}
END_TEST

static Suite *sriov_backend_suite(void) {
        Suite *s = suite_create("sriov-backend");
        TCase *tc = tcase_create("core");

        tcase_add_checked_fixture(tc, netns_setup, NULL);
        tcase_set_timeout(tc, 240);            /* two node trees a test, on a loaded machine */
        tcase_add_test(tc, test_sriov_backend_serves_every_pool_and_names_what_it_does_not);
        tcase_add_test(tc, test_sriov_backend_exclude_topology_drops_the_numa_node);
        tcase_add_test(tc, test_sriov_backend_missing_vfio_and_rdma_nodes_are_unhealthy_until_back);
        tcase_add_test(tc, test_sriov_backend_periodic_scan_between_events_reads_health_only);
        tcase_add_test(tc, test_sriov_backend_aer_rise_without_an_event_seen_by_the_next_scan);
        tcase_add_test(tc, test_sriov_backend_vf_unbound_then_rebound);
        tcase_add_test(tc, test_sriov_backend_a_vf_before_its_probe_is_in_no_pool);
        tcase_add_test(tc, test_sriov_backend_numvfs_to_zero_takes_the_vfs_away);
        tcase_add_test(tc, test_sriov_backend_a_member_its_selectors_no_longer_take);
        tcase_add_test(tc, test_sriov_backend_pf_leaves_when_its_vfs_are_enabled);
        tcase_add_test(tc, test_sriov_backend_accelerator_pf_stays_when_its_vfs_are_enabled);
        tcase_add_test(tc, test_sriov_backend_netdev_moved_into_a_pod_stays);
        tcase_add_test(tc, test_sriov_backend_allocate_answers_as_sriovdp);
        tcase_add_test(tc, test_sriov_backend_allocate_refuses_an_unknown_id);
        tcase_add_test(tc, test_sriov_backend_preferred_keeps_to_one_pf);
        tcase_add_test(tc, test_sriov_backend_preferred_among_256_vfs_of_4_pfs);
        tcase_add_test(tc, test_sriov_backend_cdi_names_each_device);
        tcase_add_test(tc, test_sriov_backend_init_fails_on_a_bad_config);
        tcase_add_test(tc, test_sriov_backend_init_fails_on_a_bad_pf_link_down);
        tcase_add_test(tc, test_sriov_backend_config_change_takes_effect_once_settled);
        tcase_add_test(tc, test_sriov_backend_config_map_update_is_read_once_settled);
        tcase_add_test(tc, test_sriov_backend_reload_reads_the_config_now);
        tcase_add_test(tc, test_sriov_backend_config_elsewhere_is_read_when_a_scan_sees_it_changed);
        tcase_add_test(tc, test_sriov_backend_devinfo_follows_allocate_and_the_devices);
        tcase_add_test(tc, test_sriov_backend_devinfo_none_for_accelerator_pools);
        tcase_add_test(tc, test_sriov_backend_devinfo_kept_by_a_changed_pool_gone_with_numvfs);
        tcase_add_test(tc, test_sriov_backend_devinfo_left_by_a_previous_run_goes_at_start);
        tcase_add_test(tc, test_sriov_backend_devinfo_off_or_failing_leaves_allocate_alone);
        tcase_add_test(tc, test_sriov_backend_devinfo_freed_when_the_kubelet_lists_it_no_more);
        tcase_add_test(tc, test_sriov_backend_devinfo_grace_zero_frees_at_the_first_list);
        tcase_add_test(tc, test_sriov_backend_devinfo_grace_out_of_range_refused);
        suite_add_tcase(s, tc);

        if (netns_usable) {
                tc = tcase_create("link");
                tcase_add_checked_fixture(tc, netns_setup, NULL);
                tcase_set_timeout(tc, 240);
                tcase_add_test(tc, test_sriov_backend_pf_link_down_makes_its_vfs_unhealthy_until_up);
                tcase_add_test(tc, test_sriov_backend_pf_link_down_reaches_a_pool_blind_to_the_pf);
                tcase_add_test(tc, test_sriov_backend_pf_link_down_ignored);
                tcase_add_test(tc, test_sriov_backend_default_route_on_a_vf_netdev_excludes_it);
                tcase_add_test(tc, test_sriov_backend_pf_link_not_in_this_netns_is_not_down);
                tcase_add_test(tc, test_sriov_backend_link_flaps_between_device_events_list_as_full_scans);
                tcase_add_test(tc, test_sriov_backend_link_only_scan_reads_no_file);
                tcase_add_test(tc, test_sriov_backend_link_scan_after_a_reload_is_full);
                tcase_add_test(tc, test_sriov_backend_serves_while_rtnetlink_fails_and_retries_it);
                suite_add_tcase(s, tc);
        } else
                fprintf(stderr, "unit/sriov-backend: link tests skipped: they need root, to make network namespaces\n");
        return s;
}

int main(void) {
        netns_usable = kdp_test_netns_usable();
        return kdp_test_run(sriov_backend_suite());
}
