/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * FPGA cards as plain sysfs and /dev trees for the unit tests (header-only; include kdp-test.h
 * and kdp-test-sysfs.h first), in the shapes of docs/hardware-fpga.md §12 (PAC D5005, DFL), §8 (the
 * OPAE driver) and §13 (Alveo U250 under XRT):
 *
 *   kdp_test_fpga_d5005(root, 0, "pci0000:3a/0000:3a:00.0/0000:3b:00.0", "0", NLB0);
 *   kdp_test_fpga_u250(root, "pci0000:3a/0000:3a:00.0", "0000:3b:00", 15104, 128, "0");
 */
#pragma once

#include <stdio.h>

#define KDP_TEST_FPGA_D5005_IFID "bfac4d851ee856fe8c95865ce1bbaa2d"
#define KDP_TEST_FPGA_NLB0 "d8424dc4a4a3c413f89e433683f9040b"
#define KDP_TEST_FPGA_NLB3 "f7df405cbd7acf7222f144b0b93acd18"
#define KDP_TEST_FPGA_U250_VBNV "xilinx_u250_gen3x16_xdma_shell_4_1"

/* Writes <root>/sys/devices/<dir>/<file> = value + "\n". */
static inline void kdp_test_fpga_attr(const char *root, const char *dir, const char *file, const char *value) {
        char *rel = NULL, *text = NULL;

        ck_assert_int_ge(asprintf(&rel, "sys/devices/%s/%s", dir, file), 0);
        ck_assert_int_ge(asprintf(&text, "%s\n", value), 0);
        kdp_test_tree_write(root, rel, text);
        free(rel);
        free(text);
}

/* A char device's uevent and dev file, and its node under <root>/dev. */
static inline void kdp_test_fpga_node(const char *root, const char *dir, const char *devname, int major, int minor) {
        char *text = NULL, *rel = NULL;

        ck_assert_int_ge(asprintf(&text, "MAJOR=%d\nMINOR=%d\nDEVNAME=%s", major, minor, devname), 0);
        kdp_test_fpga_attr(root, dir, "uevent", text);
        free(text);
        ck_assert_int_ge(asprintf(&text, "%d:%d", major, minor), 0);
        kdp_test_fpga_attr(root, dir, "dev", text);
        free(text);
        ck_assert_int_ge(asprintf(&rel, "dev/%s", devname), 0);
        kdp_test_tree_write(root, rel, "");
        free(rel);
}

/*
 * One PAC D5005 (8086:0b2b, dfl-pci) at `path` as card k: base region region<2k> with
 * dfl-fme.<k> and dfl-port.<k>, the PR region region<2k+1> with the D5005 interface ID, the
 * port carrying `afu_id`; all error masks 0x0, hwmon alarms 0, the manager's status empty.
 */
static inline void kdp_test_fpga_d5005(const char *root, int k, const char *path, const char *numa,
                                       const char *afu_id) {
        char base[512], fme[600], port[600], dir[800];
        static const char *const fme_errors[] = { "fme_errors", "pcie0_errors", "pcie1_errors", "nonfatal_errors",
                                                  "catfatal_errors", "first_error", "next_error" };

        kdp_test_pci_add(root, &(kdp_test_pci_dev){
                .path = path, .vendor = "0x8086", .device = "0x0b2b", .class_code = "0x120000",
                .subsystem_vendor = "0x8086", .subsystem_device = "0x0000", .numa_node = numa,
                .driver = "dfl-pci", .enable = "1", .sriov_totalvfs = "1", .sriov_numvfs = "0",
        });
        snprintf(base, sizeof(base), "%s/fpga_region/region%d", path, 2 * k);
        snprintf(fme, sizeof(fme), "%s/dfl-fme.%d", base, k);
        snprintf(port, sizeof(port), "%s/dfl-port.%d", base, k);
        snprintf(dir, sizeof(dir), "dfl-fme.%d", k);
        kdp_test_fpga_node(root, fme, dir, 509, k);
        kdp_test_fpga_attr(root, fme, "ports_num", "1");
        kdp_test_fpga_attr(root, fme, "bitstream_id", "0x23000410010309");
        for (size_t i = 0; i < sizeof(fme_errors) / sizeof(fme_errors[0]); i++) {
                snprintf(dir, sizeof(dir), "errors/%s", fme_errors[i]);
                kdp_test_fpga_attr(root, fme, dir, "0x0");
        }
        snprintf(dir, sizeof(dir), "%s/hwmon/hwmon%d", fme, 3 + 2 * k);
        kdp_test_fpga_attr(root, dir, "name", "dfl_fme_thermal");
        kdp_test_fpga_attr(root, dir, "temp1_input", "45000");
        kdp_test_fpga_attr(root, dir, "temp1_crit_alarm", "0");
        snprintf(dir, sizeof(dir), "%s/hwmon/hwmon%d", fme, 4 + 2 * k);
        kdp_test_fpga_attr(root, dir, "name", "dfl_fme_power");
        kdp_test_fpga_attr(root, dir, "power1_crit_alarm", "0");
        snprintf(dir, sizeof(dir), "%s/dfl-fme-mgr.%d/fpga_manager/fpga%d", fme, k, k);
        kdp_test_fpga_attr(root, dir, "state", "operating");
        snprintf(dir, sizeof(dir), "sys/devices/%s/dfl-fme-mgr.%d/fpga_manager/fpga%d/status", fme, k, k);
        kdp_test_tree_write(root, dir, "");
        snprintf(dir, sizeof(dir), "%s/dfl-fme-region.%d/fpga_region/region%d", fme, k, 2 * k + 1);
        kdp_test_fpga_attr(root, dir, "compat_id", KDP_TEST_FPGA_D5005_IFID);
        snprintf(dir, sizeof(dir), "dfl-port.%d", k);
        kdp_test_fpga_node(root, port, dir, 508, k);
        kdp_test_fpga_attr(root, port, "id", "0");
        kdp_test_fpga_attr(root, port, "afu_id", afu_id);
        kdp_test_fpga_attr(root, port, "power_state", "0");
        kdp_test_fpga_attr(root, port, "errors/errors", "0x0");
        kdp_test_fpga_attr(root, port, "errors/first_error", "0x0");
}

/*
 * One Alveo U250 under XRT: the management PF <slot>.0 (xclmgmt, instance `inst`) and the user
 * PF <slot>.1 (xocl) below the root port `rport`, rom.u.1 with the 2RP shell's VBNV and
 * timestamp 0, and renderD<render>.
 */
static inline void kdp_test_fpga_u250(const char *root, const char *rport, const char *slot, unsigned inst,
                                      int render, const char *numa) {
        char mgmt[256], user[256], dir[512], name[64];

        snprintf(mgmt, sizeof(mgmt), "%s/%s.0", rport, slot);
        snprintf(user, sizeof(user), "%s/%s.1", rport, slot);
        kdp_test_pci_add(root, &(kdp_test_pci_dev){
                .path = mgmt, .vendor = "0x10ee", .device = "0x5004", .class_code = "0x120000",
                .numa_node = numa, .driver = "xclmgmt", .enable = "1",
        });
        kdp_test_pci_add(root, &(kdp_test_pci_dev){
                .path = user, .vendor = "0x10ee", .device = "0x5005", .class_code = "0x120000",
                .numa_node = numa, .driver = "xocl", .enable = "1",
        });
        snprintf(dir, sizeof(dir), "sys/devices/%s/mgmt_pf", mgmt);
        kdp_test_tree_write(root, dir, "");
        snprintf(name, sizeof(name), "%u", inst);
        kdp_test_fpga_attr(root, mgmt, "instance", name);
        kdp_test_fpga_attr(root, mgmt, "ready", "1");
        kdp_test_fpga_attr(root, mgmt, "dev_offline", "0");
        snprintf(dir, sizeof(dir), "dev/xclmgmt%u", inst);
        kdp_test_tree_write(root, dir, "");
        snprintf(dir, sizeof(dir), "sys/devices/%s/user_pf", user);
        kdp_test_tree_write(root, dir, "");
        kdp_test_fpga_attr(root, user, "ready", "0x1");
        kdp_test_fpga_attr(root, user, "dev_offline", "0");
        kdp_test_fpga_attr(root, user, "device_bad_state", "0");
        kdp_test_fpga_attr(root, user, "mig_calibration", "0x1");
        kdp_test_fpga_attr(root, user, "logic_uuids", "3c3fbe4b0bc4a4d7e1e3d7c1f2a9e1dc");
        kdp_test_fpga_attr(root, user, "rom.u.1/VBNV", KDP_TEST_FPGA_U250_VBNV);
        kdp_test_fpga_attr(root, user, "rom.u.1/timestamp", "0");
        snprintf(dir, sizeof(dir), "%s/drm/renderD%d", user, render);
        snprintf(name, sizeof(name), "dri/renderD%d", render);
        kdp_test_fpga_node(root, dir, name, 226, render);
}
