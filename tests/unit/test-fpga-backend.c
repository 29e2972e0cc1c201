/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The built FPGA backend (kdp-backend-fpga.so) through its ABI, on plain sysfs and /dev trees
 * (tests/unit/kdp-test-fpga.h): discovery of DFL, OPAE and XRT cards and of DFL ports on VFs,
 * the names of each mode, every health reason and its recovery, the hold-off of passing
 * states on the backend's clock, what it declares not served, its config errors, Allocate and
 * PreStartContainer's afu_id check. The scenarios with events are the e2e tests (test-fpga-*.sh).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <kdp/backend.h>

#include "alloc.h"
#include "backend-ctx.h"
#include "config.h"
#include "device-tree.h"
#include "fpga.h"
#include "kdp-test.h"
#include "kdp-test-sysfs.h"
#include "kdp-test-backend.h"
#include "kdp-test-fpga.h"

#define FPGA_SO KDP_BUILD_DIR "/plugins/kdp-backend-fpga.so"
#define AF_NLB0 "fpga.intel.com/af-bfa.d84.v6xNhR7oVv6MlYZc4buqLdhCTcSko8QT-J5DNoP5BAs"
#define AF_NLB3 "fpga.intel.com/af-bfa.f7d.v6xNhR7oVv6MlYZc4buqLfffQFy9es9yIvFEsLk6zRg"
#define REGION "fpga.intel.com/region-bfac4d851ee856fe8c95865ce1bbaa2d"
#define U250 "amd.com/xilinx_u250_gen3x16_xdma_shell_4_1-0"
#define CARD0 "pci0000:3a/0000:3a:00.0/0000:3b:00.0"
#define CARD1 "pci0000:d7/0000:d7:00.0/0000:d8:00.0"
#define PORT1 CARD1 "/fpga_region/region2/dfl-port.1"
#define FME1 CARD1 "/fpga_region/region2/dfl-fme.1"

/* The devices of a resource, one a line: "<id> <Healthy|Unhealthy (reason)> numa=<n> <container nodes>" (free()). */
static char *devices_text(const kdp_test_backend *b, const char *resource) {
        const kdp_device_list *l = kdp_test_backend_resource(b, resource);
        char *buf = NULL;
        size_t len = 0;
        FILE *m;

        if (!l)
                return strdup("(no resource)");
        m = open_memstream(&buf, &len);
        ck_assert_ptr_nonnull(m);
        for (size_t i = 0; i < l->n_devices; i++) {
                const kdp_device *d = &l->devices[i];

                fprintf(m, "%s %s", d->id, d->health == KDP_HEALTHY ? "Healthy" : "Unhealthy");
                if (d->health_reason)
                        fprintf(m, " (%s)", d->health_reason);
                fprintf(m, " numa=%d", d->n_numa_nodes ? d->numa_nodes[0] : -1);
                for (size_t k = 0; k < d->n_dev_nodes; k++)
                        fprintf(m, " %s:%s", d->dev_nodes[k].container_path, d->dev_nodes[k].permissions);
                fprintf(m, "\n");
        }
        ck_assert_int_eq(fclose(m), 0);
        return buf;
}

static void expect_devices(const kdp_test_backend *b, const char *resource, const char *want) {
        _cleanup_free_ char *got = devices_text(b, resource);

        ck_assert_str_eq(got, want);
}

static void expect_not_served(const kdp_test_backend *b, const char *want) {
        _cleanup_free_ char *got = kdp_test_not_served_text(b->tree);

        ck_assert_str_eq(got, want);
}

static void open_ok(kdp_test_backend *b, const char *root, const char *const *overrides) {
        ck_assert_int_eq(kdp_test_backend_open(b, FPGA_SO, "fpga", root, overrides), 0);
}

static char *two_d5005(void) {
        char *root = kdp_test_tree_new("fpga");

        kdp_test_fpga_d5005(root, 0, CARD0, "0", KDP_TEST_FPGA_NLB0);
        kdp_test_fpga_d5005(root, 1, CARD1, "1", KDP_TEST_FPGA_NLB0);
        return root;
}

static char *two_u250(void) {
        char *root = kdp_test_tree_new("fpga");

        kdp_test_fpga_u250(root, "pci0000:3a/0000:3a:00.0", "0000:3b:00", 15104, 128, "0");
        kdp_test_fpga_u250(root, "pci0000:d7/0000:d7:00.0", "0000:d8:00", 55296, 129, "1");
        return root;
}

/* ---- discovery and names ---- */

START_TEST(test_fpga_af_mode_serves_ports_by_afu) {
        _cleanup_(kdp_test_rm_rfp) char *root = two_d5005();
        kdp_test_backend b;

        open_ok(&b, root, NULL);
        kdp_test_backend_scan(&b, root);
        ck_assert_uint_eq(b.tree->n_resources, 1);
        expect_devices(&b, AF_NLB0, "dfl-port.0 Healthy numa=0 /dev/dfl-port.0:rw\n"
                                    "dfl-port.1 Healthy numa=1 /dev/dfl-port.1:rw\n");
        expect_not_served(&b, "");
        kdp_test_backend_done(&b);
}
END_TEST

START_TEST(test_fpga_region_modes_serve_fmes_with_their_ports) {
        _cleanup_(kdp_test_rm_rfp) char *root = two_d5005();
        kdp_test_backend b;

        open_ok(&b, root, (const char *const[]){ "fpga.mode=region", NULL });
        kdp_test_backend_scan(&b, root);
        expect_devices(&b, REGION, "dfl-fme.0 Healthy numa=0 /dev/dfl-port.0:rw\n"
                                   "dfl-fme.1 Healthy numa=1 /dev/dfl-port.1:rw\n");
        kdp_test_backend_done(&b);

        open_ok(&b, root, (const char *const[]){ "fpga.mode=regiondevel", NULL });
        kdp_test_backend_scan(&b, root);
        expect_devices(&b, REGION, "dfl-fme.0 Healthy numa=0 /dev/dfl-port.0:rw /dev/dfl-fme.0:rw\n"
                                   "dfl-fme.1 Healthy numa=1 /dev/dfl-port.1:rw /dev/dfl-fme.1:rw\n");
        kdp_test_backend_done(&b);
}
END_TEST

START_TEST(test_fpga_opae_layout_and_port_on_vf) {
        _cleanup_(kdp_test_rm_rfp) char *root = kdp_test_tree_new("fpga");
        const char *card = "pci0000:00/0000:00:03.2/0000:06:00.0";
        const char *dev = "pci0000:00/0000:00:03.2/0000:06:00.0/fpga/intel-fpga-dev.0";
        kdp_test_backend b;
        char vf_port[256];

        /* the out-of-tree driver: interface ID in the FME's pr/interface_id */
        kdp_test_pci_add(root, &(kdp_test_pci_dev){
                .path = card, .vendor = "0x8086", .device = "0x09c4", .class_code = "0x120000", .numa_node = "0",
                .driver = "intel-fpga-pci", .enable = "1",
        });
        kdp_test_fpga_attr(root, dev, "intel-fpga-fme.0/pr/interface_id", "69528db6-eb31-577a-8c36-68f9faa081f6");
        kdp_test_fpga_node(root, "pci0000:00/0000:00:03.2/0000:06:00.0/fpga/intel-fpga-dev.0/intel-fpga-fme.0",
                           "intel-fpga-fme.0", 510, 0);
        kdp_test_fpga_attr(root, dev, "intel-fpga-port.0/afu_id", KDP_TEST_FPGA_NLB0);
        kdp_test_fpga_node(root, "pci0000:00/0000:00:03.2/0000:06:00.0/fpga/intel-fpga-dev.0/intel-fpga-port.0",
                           "intel-fpga-port.0", 511, 0);
        /* a D5005 whose port went to its VF (bound to dfl-pci on the host): a region with the port only */
        kdp_test_fpga_d5005(root, 0, CARD0, "0", KDP_TEST_FPGA_NLB3);
        kdp_test_pci_add(root, &(kdp_test_pci_dev){
                .path = "pci0000:3a/0000:3a:00.0/0000:3b:00.1", .vendor = "0x8086", .device = "0x0b2c",
                .class_code = "0x120000", .numa_node = "0", .driver = "dfl-pci", .enable = "1",
                .physfn = "0000:3b:00.0", .vf_index = 0,
        });
        snprintf(vf_port, sizeof(vf_port), "%s", "pci0000:3a/0000:3a:00.0/0000:3b:00.1/fpga_region/region4/dfl-port.1");
        kdp_test_fpga_node(root, vf_port, "dfl-port.1", 508, 1);
        kdp_test_fpga_attr(root, vf_port, "afu_id", KDP_TEST_FPGA_NLB0);
        kdp_test_fpga_attr(root, vf_port, "errors/errors", "0x0");

        open_ok(&b, root, NULL);
        kdp_test_backend_scan(&b, root);
        expect_devices(&b, "fpga.intel.com/af-695.d84.aVKNtusxV3qMNmj5-qCB9thCTcSko8QT-J5DNoP5BAs",
                       "intel-fpga-port.0 Healthy numa=0 /dev/intel-fpga-port.0:rw\n");
        expect_devices(&b, AF_NLB3, "dfl-port.0 Healthy numa=0 /dev/dfl-port.0:rw\n");
        expect_devices(&b, AF_NLB0, "dfl-port.1 Healthy numa=0 /dev/dfl-port.1:rw\n");
        kdp_test_backend_done(&b);

        /* region mode: the VF's port is one of its PF's FME's */
        open_ok(&b, root, (const char *const[]){ "fpga.mode=region", NULL });
        kdp_test_backend_scan(&b, root);
        expect_devices(&b, REGION, "dfl-fme.0 Healthy numa=0 /dev/dfl-port.0:rw /dev/dfl-port.1:rw\n");
        expect_devices(&b, "fpga.intel.com/region-69528db6eb31577a8c3668f9faa081f6",
                       "intel-fpga-fme.0 Healthy numa=0 /dev/intel-fpga-port.0:rw\n");
        kdp_test_backend_done(&b);
}
END_TEST

START_TEST(test_fpga_xrt_cards_by_shell) {
        _cleanup_(kdp_test_rm_rfp) char *root = two_u250();
        kdp_test_backend b;

        open_ok(&b, root, NULL);
        kdp_test_backend_scan(&b, root);
        ck_assert_uint_eq(b.tree->n_resources, 1);
        expect_devices(&b, U250, "0000:3b:00.1 Healthy numa=0 /dev/dri/renderD128:rwm\n"
                                 "0000:d8:00.1 Healthy numa=1 /dev/dri/renderD129:rwm\n");
        expect_not_served(&b, "");
        kdp_test_backend_done(&b);

        open_ok(&b, root, (const char *const[]){ "fpga.xilinx_mgmt_node=true", "fpga.xilinx_prefix=xilinx.com/fpga-",
                                                 NULL });
        kdp_test_backend_scan(&b, root);
        expect_devices(&b, "xilinx.com/fpga-xilinx_u250_gen3x16_xdma_shell_4_1-0",
                       "0000:3b:00.1 Healthy numa=0 /dev/dri/renderD128:rwm /dev/xclmgmt15104:rwm\n"
                       "0000:d8:00.1 Healthy numa=1 /dev/dri/renderD129:rwm /dev/xclmgmt55296:rwm\n");
        kdp_test_backend_done(&b);

        /* the VM view: user PFs only */
        kdp_test_tree_remove(root, "sys/bus/pci/devices/0000:3b:00.0");
        kdp_test_tree_remove(root, "sys/bus/pci/devices/0000:d8:00.0");
        open_ok(&b, root, (const char *const[]){ "fpga.xilinx_mgmt_node=true", NULL });
        kdp_test_backend_scan(&b, root);
        expect_devices(&b, U250, "0000:3b:00.1 Healthy numa=0 /dev/dri/renderD128:rwm\n"
                                 "0000:d8:00.1 Healthy numa=1 /dev/dri/renderD129:rwm\n");
        kdp_test_backend_done(&b);
}
END_TEST

/* `program` by address for an Alveo card: the loaded xclbin's logic UUID must be the declared one. */
START_TEST(test_fpga_xrt_declared_xclbin) {
        _cleanup_(kdp_test_rm_rfp) char *root = two_u250();
        kdp_test_backend b;

        open_ok(&b, root, (const char *const[]){ "fpga.program=3b:00.1=3C3FBE4B-0BC4-A4D7-E1E3-D7C1F2A9E1DC, "
                                                 "0000:d8:00.0=" KDP_TEST_FPGA_NLB0, NULL });
        kdp_test_backend_scan(&b, root);
        expect_devices(&b, U250, "0000:3b:00.1 Healthy numa=0 /dev/dri/renderD128:rwm\n"
                                 "0000:d8:00.1 Unhealthy (xclbin logic UUID 3c3fbe4b0bc4a4d7e1e3d7c1f2a9e1dc, not "
                                 "the declared " KDP_TEST_FPGA_NLB0 ") numa=1 /dev/dri/renderD129:rwm\n");
        /* another xclbin loaded on card 0 (by XRT's tools), card 1's unreadable */
        kdp_test_fpga_attr(root, "pci0000:3a/0000:3a:00.0/0000:3b:00.1", "logic_uuids",
                           "3c3fbe4b0bc4a4d7e1e3d7c1f2a9e1dc\n" KDP_TEST_FPGA_NLB3);
        kdp_test_tree_remove(root, "sys/devices/pci0000:d7/0000:d7:00.0/0000:d8:00.1/logic_uuids");
        kdp_test_backend_scan(&b, root);
        expect_devices(&b, U250, "0000:3b:00.1 Unhealthy (xclbin logic UUID " KDP_TEST_FPGA_NLB3 ", not the declared "
                                 "3c3fbe4b0bc4a4d7e1e3d7c1f2a9e1dc) numa=0 /dev/dri/renderD128:rwm\n"
                                 "0000:d8:00.1 Unhealthy (no xclbin logic UUID readable, the declared is "
                                 KDP_TEST_FPGA_NLB0 ") numa=1 /dev/dri/renderD129:rwm\n");
        kdp_test_backend_done(&b);
}
END_TEST

START_TEST(test_fpga_model_resources_and_filters) {
        _cleanup_(kdp_test_rm_rfp) char *root = two_d5005();
        kdp_test_backend b;

        kdp_test_fpga_u250(root, "pci0000:80/0000:80:01.0", "0000:81:00", 33024, 128, "1");
        open_ok(&b, root, (const char *const[]){ "fpga.model_resources=10ee:5005=example.com/u250",
                                                 "fpga.deny=0000:3b:00.0", NULL });
        kdp_test_backend_scan(&b, root);
        expect_devices(&b, "example.com/u250", "0000:81:00.1 Healthy numa=1 /dev/dri/renderD128:rwm\n");
        expect_devices(&b, AF_NLB0, "dfl-port.1 Healthy numa=1 /dev/dfl-port.1:rw\n");
        expect_not_served(&b, "0000:3b:00.0: in fpga.deny\n");
        kdp_test_backend_done(&b);

        open_ok(&b, root, (const char *const[]){ "fpga.allow=10ee:*", NULL });
        kdp_test_backend_scan(&b, root);
        expect_devices(&b, AF_NLB0, "(no resource)");
        expect_not_served(&b, "0000:3b:00.0: not in fpga.allow\n0000:d8:00.0: not in fpga.allow\n");
        kdp_test_backend_done(&b);
}
END_TEST

START_TEST(test_fpga_declares_what_it_does_not_serve) {
        _cleanup_(kdp_test_rm_rfp) char *root = kdp_test_tree_new("fpga");
        kdp_test_backend b;

        kdp_test_pci_add(root, &(kdp_test_pci_dev){      /* a D5005 without a driver */
                .path = CARD0, .vendor = "0x8086", .device = "0x0b2b", .class_code = "0x120000", .numa_node = "0",
        });
        kdp_test_pci_add(root, &(kdp_test_pci_dev){      /* dfl-pci, but no region (yet) */
                .path = CARD1, .vendor = "0x8086", .device = "0x0b2b", .class_code = "0x120000", .numa_node = "1",
                .driver = "dfl-pci",
        });
        kdp_test_pci_add(root, &(kdp_test_pci_dev){      /* an Alveo user PF passed to a VM */
                .path = "pci0000:80/0000:80:01.0/0000:81:00.1", .vendor = "0x10ee", .device = "0x5005",
                .class_code = "0x120000", .numa_node = "1", .driver = "vfio-pci",
        });
        kdp_test_pci_add(root, &(kdp_test_pci_dev){      /* its management PF */
                .path = "pci0000:80/0000:80:01.0/0000:81:00.0", .vendor = "0x10ee", .device = "0x5004",
                .class_code = "0x120000", .numa_node = "1", .driver = "xclmgmt",
        });
        kdp_test_pci_add(root, &(kdp_test_pci_dev){      /* an Intel NIC: not looked at */
                .path = "pci0000:90/0000:90:01.0/0000:91:00.0", .vendor = "0x8086", .device = "0x0d58",
                .class_code = "0x020000", .numa_node = "1", .driver = "i40e",
        });
        kdp_test_fpga_u250(root, "pci0000:a0/0000:a0:01.0", "0000:a1:00", 41216, 129, "1");
        kdp_test_tree_remove(root, "sys/devices/pci0000:a0/0000:a0:01.0/0000:a1:00.1/rom.u.1/VBNV");

        open_ok(&b, root, NULL);
        kdp_test_backend_scan(&b, root);
        expect_not_served(&b, "0000:3b:00.0: no driver bound (dfl-pci serves DFL cards)\n"
                              "0000:81:00.0: Alveo management PF without its user PF (xocl) on this host\n"
                              "0000:81:00.1: bound to vfio-pci, not xocl or xclmgmt\n"
                              "0000:d8:00.0: dfl-pci bound, but no FPGA region with an FME or port under it\n"
                              "0000:a1:00.1: shell ROM (rom.*) unreadable: No such file or directory\n");
        ck_assert_uint_eq(b.tree->n_resources, 0);
        kdp_test_backend_done(&b);
}
END_TEST

/* ---- health ---- */

static const struct {
        const char *file, *value, *reason;
} port_health[] = {
        { PORT1 "/afu_id", "ffffffffffffffffffffffffffffffff", "no AFU loaded (afu_id all f)" },
        { PORT1 "/errors/errors", "0x4", "port errors/errors 0x4" },
        { FME1 "/errors/catfatal_errors", "0x1", "card: FME errors/catfatal_errors 0x1" },
        { FME1 "/errors/pcie0_errors", "0x10", "card: FME errors/pcie0_errors 0x10" },
        { FME1 "/hwmon/hwmon5/temp1_crit_alarm", "1", "card: dfl_fme_thermal temp1_crit_alarm 1" },
        { FME1 "/hwmon/hwmon6/power1_crit_alarm", "1", "card: dfl_fme_power power1_crit_alarm 1" },
        { FME1 "/dfl-fme-region.1/fpga_region/region3/compat_id", "ffffffffffffffffffffffffffffffff",
          "card: PR region interface ID all f (firmware crashed)" },
        { FME1 "/dfl-fme-mgr.1/fpga_manager/fpga1/status", "reconfig incompatible image",
          "card: last partial reconfiguration failed: reconfig incompatible image" },
};

START_TEST(test_fpga_port_health_reasons_and_recovery) {
        _cleanup_(kdp_test_rm_rfp) char *root = two_d5005();
        _cleanup_free_ char *want = NULL;
        kdp_test_backend b;

        open_ok(&b, root, NULL);
        kdp_test_backend_scan(&b, root);
        for (size_t i = 0; i < KDP_ELEMENTSOF(port_health); i++) {
                _cleanup_free_ char *expected = NULL, *old = NULL, *rel = NULL;

                ck_assert_int_ge(asprintf(&rel, "sys/devices/%s", port_health[i].file), 0);
                old = kdp_test_tree_path(root, rel);
                ck_assert_int_eq(kdp_sysfs_read_text(old, &expected), 0);
                free(old);
                old = expected;
                expected = NULL;
                kdp_test_fpga_attr(root, "", port_health[i].file, port_health[i].value);
                kdp_test_backend_scan(&b, root);
                ck_assert_int_ge(asprintf(&expected, "dfl-port.0 Healthy numa=0 /dev/dfl-port.0:rw\n"
                                                     "dfl-port.1 Unhealthy (%s) numa=1 /dev/dfl-port.1:rw\n",
                                          port_health[i].reason), 0);
                expect_devices(&b, AF_NLB0, expected);
                kdp_test_fpga_attr(root, "", port_health[i].file, old);
                kdp_test_backend_scan(&b, root);
                expect_devices(&b, AF_NLB0, "dfl-port.0 Healthy numa=0 /dev/dfl-port.0:rw\n"
                                            "dfl-port.1 Healthy numa=1 /dev/dfl-port.1:rw\n");
        }
        /* the node gone, the card unplugged */
        kdp_test_tree_remove(root, "dev/dfl-port.1");
        kdp_test_backend_scan(&b, root);
        ck_assert_int_ge(asprintf(&want, "dfl-port.0 Healthy numa=0 /dev/dfl-port.0:rw\n"
                                         "dfl-port.1 Unhealthy (device node %s/dev/dfl-port.1 missing) numa=1 "
                                         "/dev/dfl-port.1:rw\n", root), 0);
        expect_devices(&b, AF_NLB0, want);
        /* the kernel removes the function's attributes before its directory: a scan then keeps its node */
        kdp_test_tree_remove(root, "sys/devices/" CARD1 "/numa_node");
        b.ops->device_event(b.state, &(kdp_device_event){ .action = "unbind", .subsystem = "pci",
                                                          .devpath = "/devices/" CARD1, .sysname = "0000:d8:00.0" });
        kdp_test_backend_scan(&b, root);
        expect_devices(&b, AF_NLB0, want);
        kdp_test_tree_remove(root, "sys/bus/pci/devices/0000:d8:00.0");
        b.ops->device_event(b.state, &(kdp_device_event){ .action = "remove", .subsystem = "pci",
                                                          .devpath = "/devices/" CARD1, .sysname = "0000:d8:00.0" });
        kdp_test_backend_scan(&b, root);
        expect_devices(&b, AF_NLB0, "dfl-port.0 Healthy numa=0 /dev/dfl-port.0:rw\n"
                                    "dfl-port.1 Unhealthy (removed from the PCI bus) numa=1 /dev/dfl-port.1:rw\n");
        kdp_test_backend_done(&b);
}
END_TEST

START_TEST(test_fpga_busy_afu_id_is_held_off_then_unhealthy) {
        _cleanup_(kdp_test_rm_rfp) char *root = two_d5005();
        kdp_test_backend b;
        char path[512];

        open_ok(&b, root, (const char *const[]){ "fpga.busy_hold_s=10", NULL });
        kdp_test_backend_scan(&b, root);
        /* a read that fails (EBUSY on a port disabled for PR; here EISDIR) */
        kdp_test_tree_remove(root, "sys/devices/" PORT1 "/afu_id");
        kdp_test_tree_mkdir(root, "sys/devices/" PORT1 "/afu_id");
        b.rescan_ms = -1;
        kdp_test_backend_scan(&b, root);
        expect_devices(&b, AF_NLB0, "dfl-port.0 Healthy numa=0 /dev/dfl-port.0:rw\n"
                                    "dfl-port.1 Healthy numa=1 /dev/dfl-port.1:rw\n");
        ck_assert_int_eq(b.rescan_ms, 10000);
        b.now_usec += 4000000;
        kdp_test_backend_scan(&b, root);
        expect_devices(&b, AF_NLB0, "dfl-port.0 Healthy numa=0 /dev/dfl-port.0:rw\n"
                                    "dfl-port.1 Healthy numa=1 /dev/dfl-port.1:rw\n");
        ck_assert_int_eq(b.rescan_ms, 6000);
        b.now_usec += 6000000;
        kdp_test_backend_scan(&b, root);
        expect_devices(&b, AF_NLB0, "dfl-port.0 Healthy numa=0 /dev/dfl-port.0:rw\n"
                                    "dfl-port.1 Unhealthy (afu_id unreadable: Is a directory; for 10 s) numa=1 "
                                    "/dev/dfl-port.1:rw\n");
        snprintf(path, sizeof(path), "sys/devices/%s/afu_id", PORT1);
        kdp_test_tree_remove(root, path);
        kdp_test_fpga_attr(root, PORT1, "afu_id", KDP_TEST_FPGA_NLB0);
        kdp_test_backend_scan(&b, root);
        expect_devices(&b, AF_NLB0, "dfl-port.0 Healthy numa=0 /dev/dfl-port.0:rw\n"
                                    "dfl-port.1 Healthy numa=1 /dev/dfl-port.1:rw\n");
        kdp_test_backend_done(&b);
}
END_TEST

START_TEST(test_fpga_reprogrammed_port_moves_to_its_afu) {
        _cleanup_(kdp_test_rm_rfp) char *root = two_d5005();
        kdp_test_backend b;

        open_ok(&b, root, NULL);
        kdp_test_backend_scan(&b, root);
        kdp_test_fpga_attr(root, PORT1, "afu_id", KDP_TEST_FPGA_NLB3);
        kdp_test_backend_scan(&b, root);
        expect_devices(&b, AF_NLB0, "dfl-port.0 Healthy numa=0 /dev/dfl-port.0:rw\n");
        expect_devices(&b, AF_NLB3, "dfl-port.1 Healthy numa=1 /dev/dfl-port.1:rw\n");
        kdp_test_fpga_attr(root, CARD0 "/fpga_region/region0/dfl-port.0", "afu_id", KDP_TEST_FPGA_NLB3);
        kdp_test_backend_scan(&b, root);
        expect_devices(&b, AF_NLB0, "");        /* declared, empty: the kubelet keeps seeing it */
        expect_devices(&b, AF_NLB3, "dfl-port.0 Healthy numa=0 /dev/dfl-port.0:rw\n"
                                    "dfl-port.1 Healthy numa=1 /dev/dfl-port.1:rw\n");
        kdp_test_backend_done(&b);
}
END_TEST

START_TEST(test_fpga_xrt_health_and_reset_window) {
        _cleanup_(kdp_test_rm_rfp) char *root = two_u250();
        const char *user = "pci0000:d7/0000:d7:00.0/0000:d8:00.1";
        kdp_test_backend b;

        open_ok(&b, root, NULL);
        kdp_test_backend_scan(&b, root);
        kdp_test_fpga_attr(root, user, "ready", "0x0");
        kdp_test_fpga_attr(root, user, "device_bad_state", "1");
        kdp_test_backend_scan(&b, root);
        expect_devices(&b, U250, "0000:3b:00.1 Healthy numa=0 /dev/dri/renderD128:rwm\n"
                                 "0000:d8:00.1 Unhealthy (not ready (ready 0x0); kernel scheduler in a bad state "
                                 "(device_bad_state 1)) numa=1 /dev/dri/renderD129:rwm\n");
        kdp_test_fpga_attr(root, user, "ready", "0x1");
        kdp_test_fpga_attr(root, user, "device_bad_state", "0");
        kdp_test_backend_scan(&b, root);
        expect_devices(&b, U250, "0000:3b:00.1 Healthy numa=0 /dev/dri/renderD128:rwm\n"
                                 "0000:d8:00.1 Healthy numa=1 /dev/dri/renderD129:rwm\n");
        /* a reset: dev_offline, rom.* gone; then back with another rom number */
        kdp_test_fpga_attr(root, user, "dev_offline", "1");
        kdp_test_tree_remove(root, "sys/devices/pci0000:d7/0000:d7:00.0/0000:d8:00.1/rom.u.1/VBNV");
        kdp_test_tree_remove(root, "sys/devices/pci0000:d7/0000:d7:00.0/0000:d8:00.1/rom.u.1/timestamp");
        kdp_test_tree_remove(root, "sys/devices/pci0000:d7/0000:d7:00.0/0000:d8:00.1/rom.u.1");
        kdp_test_backend_scan(&b, root);
        expect_devices(&b, U250, "0000:3b:00.1 Healthy numa=0 /dev/dri/renderD128:rwm\n"
                                 "0000:d8:00.1 Healthy numa=1 /dev/dri/renderD129:rwm\n");
        b.now_usec += 31000000;
        kdp_test_backend_scan(&b, root);
        expect_devices(&b, U250, "0000:3b:00.1 Healthy numa=0 /dev/dri/renderD128:rwm\n"
                                 "0000:d8:00.1 Unhealthy (offline (dev_offline 1: reset or hot plug in progress); "
                                 "shell ROM (rom.*) unreadable: No such file or directory; for 30 s) numa=1 "
                                 "/dev/dri/renderD129:rwm\n");
        kdp_test_fpga_attr(root, user, "dev_offline", "0");
        kdp_test_fpga_attr(root, user, "rom.u.4/VBNV", KDP_TEST_FPGA_U250_VBNV);
        kdp_test_fpga_attr(root, user, "rom.u.4/timestamp", "0");
        kdp_test_backend_scan(&b, root);
        expect_devices(&b, U250, "0000:3b:00.1 Healthy numa=0 /dev/dri/renderD128:rwm\n"
                                 "0000:d8:00.1 Healthy numa=1 /dev/dri/renderD129:rwm\n");
        kdp_test_backend_done(&b);
}
END_TEST

/* ---- config, Allocate, PreStartContainer ---- */

START_TEST(test_fpga_rejects_bad_config) {
        _cleanup_(kdp_test_rm_rfp) char *root = kdp_test_tree_new("fpga");
        static const char *const bad[] = {
                "fpga.mode=afu", "fpga.allow=8086", "fpga.deny=0000:3b", "fpga.model_resources=10ee:5005",
                "fpga.model_resources=10ee=amd.com/x", "fpga.model_resources=10ee:5005=nodomain",
                "fpga.xilinx_prefix=amd.com", "fpga.busy_hold_s=-1", "fpga.cdi=maybe",
                "fpga.bitstream_dir=srv/fpga", "fpga.program=0000:3b:00.0", "fpga.program==" KDP_TEST_FPGA_NLB0,
                "fpga.program=0000:3b:00.0=nlb0", "fpga.program=3b:00=" KDP_TEST_FPGA_NLB0,
                "fpga.program=" KDP_TEST_FPGA_D5005_IFID "=" KDP_TEST_FPGA_NLB0,
        };

        for (size_t i = 0; i < KDP_ELEMENTSOF(bad); i++) {
                kdp_test_backend b;

                ck_assert_msg(kdp_test_backend_open(&b, FPGA_SO, "fpga", root, (const char *const[]){ bad[i], NULL }) ==
                              -EINVAL, "%s", bad[i]);
                kdp_test_backend_done(&b);
        }
}
END_TEST

/* Each bad `program` or `bitstream_dir` is logged with the key, the value, where it was set and why. */
START_TEST(test_fpga_program_config_errors_name_key_value_origin) {
        _cleanup_(kdp_test_rm_rfp) char *root = kdp_test_tree_new("fpga");
        static const struct {
                const char *set[3];
                const char *line;
        } cases[] = {
                { { "fpga.bitstream_dir=srv/fpga" },
                  "\"Rejected config value\" backend=\"fpga\" key=\"fpga.bitstream_dir\" value=\"srv/fpga\" "
                  "origin=\"-o fpga.bitstream_dir=srv/fpga\" reason=\"not an absolute path\" err=\"Invalid argument\"" },
                { { "fpga.program=0000:3b:00.0" },
                  "\"Rejected config value\" backend=\"fpga\" key=\"fpga.program\" value=\"0000:3b:00.0\" "
                  "origin=\"-o fpga.program=0000:3b:00.0\" reason=\"expected <PCI address or interface ID>=<AFU ID>\" "
                  "err=\"Invalid argument\"" },
                { { "fpga.bitstream_dir=/srv/fpga", "fpga.program=3b:00.0=" KDP_TEST_FPGA_NLB0 ", card=" KDP_TEST_FPGA_NLB3 },
                  "\"Rejected config value\" backend=\"fpga\" key=\"fpga.program\" value=\"card=" KDP_TEST_FPGA_NLB3 "\" "
                  "origin=\"-o fpga.program=3b:00.0=" KDP_TEST_FPGA_NLB0 ", card=" KDP_TEST_FPGA_NLB3 "\" "
                  "reason=\"the card is neither a PCI address nor an interface ID (32 to 64 hex digits)\" "
                  "err=\"Invalid argument\"" },
                { { "fpga.program=0000:3b:00.0=nlb0" },
                  "\"Rejected config value\" backend=\"fpga\" key=\"fpga.program\" value=\"0000:3b:00.0=nlb0\" "
                  "origin=\"-o fpga.program=0000:3b:00.0=nlb0\" reason=\"the AFU ID is not 32 to 64 hex digits\" "
                  "err=\"Invalid argument\"" },
                { { "fpga.program=" KDP_TEST_FPGA_D5005_IFID "=" KDP_TEST_FPGA_NLB0 },
                  "\"Rejected config value\" backend=\"fpga\" key=\"fpga.program\" "
                  "value=\"" KDP_TEST_FPGA_D5005_IFID "=" KDP_TEST_FPGA_NLB0 "\" "
                  "origin=\"-o fpga.program=" KDP_TEST_FPGA_D5005_IFID "=" KDP_TEST_FPGA_NLB0 "\" "
                  "reason=\"programming by interface ID needs fpga.bitstream_dir\" err=\"Invalid argument\"" },
                { { "fpga.program=3b:00.0=" KDP_TEST_FPGA_NLB0 ",0000:3B:00.0=" KDP_TEST_FPGA_NLB3 },
                  "\"Rejected config value\" backend=\"fpga\" key=\"fpga.program\" "
                  "value=\"0000:3B:00.0=" KDP_TEST_FPGA_NLB3 "\" "
                  "origin=\"-o fpga.program=3b:00.0=" KDP_TEST_FPGA_NLB0 ",0000:3B:00.0=" KDP_TEST_FPGA_NLB3 "\" "
                  "reason=\"the card is declared twice\" err=\"Invalid argument\"" },
        };

        for (size_t i = 0; i < KDP_ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *log = NULL;
                kdp_test_backend b;
                kdp_test_capture c;
                const char *p;

                kdp_test_capture_begin(&c);
                ck_assert_int_eq(kdp_test_backend_open(&b, FPGA_SO, "fpga", root, cases[i].set), -EINVAL);
                log = kdp_test_capture_end(&c);
                p = log;
                kdp_test_expect_line(&p, 'E', "config.c", cases[i].line);
                ck_assert_str_eq(p, "");
                kdp_test_backend_done(&b);
        }
}
END_TEST

/* `program` by address beats by interface ID; IDs and addresses are canonical. */
START_TEST(test_fpga_program_config_declares_by_address_then_interface) {
        _cleanup_(kdp_test_rm_rfp) char *root = kdp_test_tree_new("fpga");
        kdp_test_backend b;
        fpga_config c;

        open_ok(&b, root, (const char *const[]){
                "fpga.bitstream_dir=/srv/fpga",
                "fpga.program=BFAC4D85-1EE8-56FE-8C95-865CE1BBAA2D=" KDP_TEST_FPGA_NLB0 ", d8:00.0=F7DF405C-BD7A-CF72-"
                "22F1-44B0B93ACD18",
                NULL });
        ck_assert_int_eq(fpga_config_parse(b.ctx, &c), 0);
        ck_assert_str_eq(c.bitstream_dir, "/srv/fpga");
        ck_assert_uint_eq(c.n_programs, 2);
        ck_assert_str_eq(fpga_config_declared(&c, "0000:d8:00.0", KDP_TEST_FPGA_D5005_IFID), KDP_TEST_FPGA_NLB3);
        ck_assert_str_eq(fpga_config_declared(&c, "0000:3b:00.0", KDP_TEST_FPGA_D5005_IFID), KDP_TEST_FPGA_NLB0);
        ck_assert_ptr_null(fpga_config_declared(&c, "0000:3b:00.0", "69528db6eb31577a8c3668f9faa081f6"));
        ck_assert_ptr_null(fpga_config_declared(&c, "0000:3b:00.0", NULL));
        fpga_config_done(&c);
        kdp_test_backend_done(&b);
}
END_TEST

static char *allocate_text(kdp_test_backend *b, const char *resource, const char *const *ids, size_t n, int *ret) {
        kdp_alloc_response resp;
        char *buf = NULL;
        size_t len = 0;
        FILE *m;

        kdp_alloc_response_init(&resp, kdp_test_backend_resource(b, resource));
        *ret = b->ops->allocate(b->state, &(kdp_alloc_request){ .resource = resource, .device_ids = ids,
                                                                .n_device_ids = n }, &resp);
        m = open_memstream(&buf, &len);
        ck_assert_ptr_nonnull(m);
        for (size_t i = 0; i < resp.n_envs; i++)
                fprintf(m, "env %s=%s\n", resp.envs[i].key, resp.envs[i].value);
        for (size_t i = 0; i < resp.n_dev_nodes; i++)
                fprintf(m, "device %s %s\n", resp.dev_nodes[i].container_path, resp.dev_nodes[i].permissions);
        for (size_t i = 0; i < resp.n_cdi_devices; i++)
                fprintf(m, "cdi %s\n", resp.cdi_devices[i]);
        ck_assert_int_eq(fclose(m), 0);
        kdp_alloc_response_done(&resp);
        return buf;
}

START_TEST(test_fpga_allocate_answers) {
        _cleanup_(kdp_test_rm_rfp) char *root = two_d5005();
        kdp_test_backend b;
        char *text;
        int r;

        kdp_test_fpga_u250(root, "pci0000:80/0000:80:01.0", "0000:81:00", 33024, 128, "1");
        open_ok(&b, root, (const char *const[]){ "fpga.xilinx_mgmt_node=yes", NULL });
        kdp_test_backend_scan(&b, root);
        text = allocate_text(&b, AF_NLB0, (const char *const[]){ "dfl-port.1", "dfl-port.0" }, 2, &r);
        ck_assert_int_eq(r, 0);
        ck_assert_str_eq(text, "env KDP_FPGA_PCI_ADDRESSES=0000:d8:00.0,0000:3b:00.0\n"
                               "device /dev/dfl-port.1 rw\ndevice /dev/dfl-port.0 rw\n");
        free(text);
        text = allocate_text(&b, U250, (const char *const[]){ "0000:81:00.1" }, 1, &r);
        ck_assert_int_eq(r, 0);
        ck_assert_str_eq(text, "env KDP_FPGA_PCI_ADDRESSES=0000:81:00.1\n"
                               "device /dev/dri/renderD128 rwm\ndevice /dev/xclmgmt33024 rwm\n");
        free(text);
        text = allocate_text(&b, U250, (const char *const[]){ "0000:99:00.1" }, 1, &r);
        ck_assert_int_eq(r, -EOPNOTSUPP);
        free(text);
        kdp_test_backend_done(&b);

        open_ok(&b, root, (const char *const[]){ "fpga.mode=region", "fpga.cdi=true", NULL });
        kdp_test_backend_scan(&b, root);
        text = allocate_text(&b, REGION, (const char *const[]){ "dfl-fme.0" }, 1, &r);
        ck_assert_int_eq(r, 0);
        ck_assert_str_eq(text, "env KDP_FPGA_PCI_ADDRESSES=0000:3b:00.0\n"
                               "cdi " REGION "=dfl-fme.0\n");
        free(text);
        kdp_test_backend_done(&b);
}
END_TEST

START_TEST(test_fpga_pre_start_checks_the_afu) {
        _cleanup_(kdp_test_rm_rfp) char *root = two_d5005();
        kdp_test_backend b;
        kdp_test_capture c;
        _cleanup_free_ char *log = NULL;
        const char *p;

        open_ok(&b, root, NULL);
        kdp_test_backend_scan(&b, root);
        ck_assert_int_eq(b.ops->pre_start(b.state, &(kdp_prestart_request){
                .resource = AF_NLB0, .device_ids = (const char *const[]){ "dfl-port.0", "dfl-port.1" },
                .n_device_ids = 2 }), 0);
        /* reprogrammed behind our back since the last scan */
        kdp_test_fpga_attr(root, PORT1, "afu_id", KDP_TEST_FPGA_NLB3);
        kdp_test_capture_begin(&c);
        ck_assert_int_eq(b.ops->pre_start(b.state, &(kdp_prestart_request){
                .resource = AF_NLB0, .device_ids = (const char *const[]){ "dfl-port.0", "dfl-port.1" },
                .n_device_ids = 2 }), -EIO);
        log = kdp_test_capture_end(&c);
        p = log;
        kdp_test_expect_line(&p, 'E', "fpga.c",
                             "\"Port carries another AFU than its resource promises\" backend=\"fpga\" "
                             "device=\"dfl-port.1\" pciAddress=\"0000:d8:00.0\" resource=\"" AF_NLB0 "\" "
                             "want=\"" KDP_TEST_FPGA_NLB0 "\" have=\"" KDP_TEST_FPGA_NLB3 "\" err=\"Input/output error\"");
        kdp_test_backend_done(&b);
}
END_TEST

static Suite *fpga_backend_suite(void) {
        Suite *s = suite_create("fpga-backend");
        TCase *tc = tcase_create("discovery");

        tcase_add_test(tc, test_fpga_af_mode_serves_ports_by_afu);
        tcase_add_test(tc, test_fpga_region_modes_serve_fmes_with_their_ports);
        tcase_add_test(tc, test_fpga_opae_layout_and_port_on_vf);
        tcase_add_test(tc, test_fpga_xrt_cards_by_shell);
        tcase_add_test(tc, test_fpga_model_resources_and_filters);
        tcase_add_test(tc, test_fpga_declares_what_it_does_not_serve);
        suite_add_tcase(s, tc);
        tc = tcase_create("health");
        tcase_add_test(tc, test_fpga_port_health_reasons_and_recovery);
        tcase_add_test(tc, test_fpga_busy_afu_id_is_held_off_then_unhealthy);
        tcase_add_test(tc, test_fpga_reprogrammed_port_moves_to_its_afu);
        tcase_add_test(tc, test_fpga_xrt_health_and_reset_window);
        suite_add_tcase(s, tc);
        tc = tcase_create("config-and-rpcs");
        tcase_add_test(tc, test_fpga_rejects_bad_config);
        tcase_add_test(tc, test_fpga_xrt_declared_xclbin);
        tcase_add_test(tc, test_fpga_program_config_errors_name_key_value_origin);
        tcase_add_test(tc, test_fpga_program_config_declares_by_address_then_interface);
        tcase_add_test(tc, test_fpga_allocate_answers);
        tcase_add_test(tc, test_fpga_pre_start_checks_the_afu);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return kdp_test_run(fpga_backend_suite());
}
