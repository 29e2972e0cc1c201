/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The built GPU backend (kdp-backend-gpu.so) through its ABI, on plain
 * sysfs/procfs/dev trees: what it discovers, what it refuses to serve, the
 * Xids that the kernel log held before kdpd started (replay), which Xids a
 * rebind ends, and its config errors. The scenarios with events are the e2e
 * tests (test-gpu-*.sh).
 */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdp/backend.h>

#include "alloc.h"
#include "backend-ctx.h"
#include "config.h"
#include "device-tree.h"
#include "preferred.h"
#include "kdp-test.h"
#include "kdp-test-sysfs.h"
#include "kdp-test-backend.h"

#define GPU_SO KDP_BUILD_DIR "/plugins/kdp-backend-gpu.so"

typedef kdp_test_backend gpu_run;

#define FAKE_NOW_USEC KDP_TEST_BACKEND_NOW_USEC

/* Loads the backend with roots under `root` and "gpu.key=value" overrides; init's result. */
static int gpu_open(gpu_run *run, const char *root, const char *const *overrides) {
        return kdp_test_backend_open(run, GPU_SO, "gpu", root, overrides);
}

static void gpu_scan(gpu_run *run, const char *root) {
        kdp_test_backend_scan(run, root);
}

static void gpu_done(gpu_run *run) {
        kdp_test_backend_done(run);
}

static const kdp_device_list *resource(const gpu_run *run, const char *name) {
        return kdp_test_backend_resource(run, name);
}

/* The last scan's not-served notes are `expected` ("<address>: <reason>\n" each). */
#define CHECK_NOT_SERVED(run, expected)                                         \
        do {                                                                    \
                _cleanup_free_ char *ns_ = kdp_test_not_served_text((run)->tree); \
                                                                                \
                ck_assert_str_eq(ns_, (expected));                              \
        } while (0)

static const kdp_test_pci_dev h100_a = {
        .path = "pci0000:15/0000:15:01.0/0000:18:00.0", .vendor = "0x10de", .device = "0x2330",
        .class_code = "0x030200", .numa_node = "0", .driver = "nvidia", .enable = "1",
};
static const kdp_test_pci_dev h100_b = {
        .path = "pci0000:15/0000:15:01.0/0000:19:00.0", .vendor = "0x10de", .device = "0x2330",
        .class_code = "0x030200", .numa_node = "1", .driver = "nvidia", .enable = "1",
};
static const kdp_test_pci_dev nvswitch = {       /* class 0x0680: not a GPU */
        .path = "pci0000:c0/0000:c0:01.0/0000:c4:00.0", .vendor = "0x10de", .device = "0x22a3",
        .class_code = "0x068000", .numa_node = "1", .driver = "nvidia-nvswitch", .enable = "1",
};
static const kdp_test_pci_dev bmc_vga = {        /* ASPEED: a VGA, not a GPU we serve */
        .path = "pci0000:00/0000:00:1c.0/0000:02:00.0", .vendor = "0x1a03", .device = "0x2000",
        .class_code = "0x030000", .numa_node = "0", .driver = "ast", .enable = "1",
};
static const kdp_test_pci_dev vfio_gpu = {       /* handed to a VM: not ours */
        .path = "pci0000:15/0000:15:01.0/0000:1a:00.0", .vendor = "0x10de", .device = "0x2330",
        .class_code = "0x030200", .numa_node = "0", .driver = "vfio-pci", .enable = "1",
};

#define UUID_A "GPU-5f1b3a7e-0c2d-4e8f-9a61-3b7c2d9e0f14"
#define UUID_B "GPU-0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9"

static void write_information(const char *root, const char *bdf, const char *uuid, int minor, const char *excluded) {
        _cleanup_free_ char *rel = NULL, *text = NULL;

        ck_assert_int_ge(asprintf(&rel, "proc/driver/nvidia/gpus/%s/information", bdf), 0);
        ck_assert_int_ge(asprintf(&text, "Model: \t\t NVIDIA H100 80GB HBM3\nGPU UUID: \t %s\nBus Location: \t %s\n"
                                         "Device Minor: \t %d\nGPU Excluded:\t %s\n", uuid, bdf, minor, excluded), 0);
        kdp_test_tree_write(root, rel, text);
}

/* Two H100s, an NVSwitch, the BMC's VGA and a GPU on vfio-pci; NVIDIA's procfs and nodes. */
static char *hgx_tree(void) {
        char *root = kdp_test_tree_new("gpu");

        kdp_test_pci_add(root, &h100_a);
        kdp_test_pci_add(root, &h100_b);
        kdp_test_pci_add(root, &nvswitch);
        kdp_test_pci_add(root, &bmc_vga);
        kdp_test_pci_add(root, &vfio_gpu);
        write_information(root, "0000:18:00.0", UUID_A, 0, "No");
        write_information(root, "0000:19:00.0", UUID_B, 1, "No");
        write_information(root, "0000:1a:00.0", "GPU-ffffffff-ffff-ffff-ffff-ffffffffffff", 2, "No");
        kdp_test_tree_write(root, "dev/nvidia0", "");
        kdp_test_tree_write(root, "dev/nvidia1", "");
        kdp_test_tree_write(root, "dev/nvidiactl", "");
        kdp_test_tree_write(root, "dev/nvidia-uvm", "");
        kdp_test_tree_write(root, "dev/kmsg", "");
        return root;
}

START_TEST(test_gpu_discovers_only_gpus_of_its_drivers) {
        _cleanup_(kdp_test_rm_rfp) char *root = hgx_tree();
        gpu_run run;
        const kdp_device_list *l;

        ck_assert_int_eq(gpu_open(&run, root, NULL), 0);
        gpu_scan(&run, root);
        ck_assert_uint_eq(run.tree->n_resources, 1);
        l = resource(&run, "nvidia.com/gpu");
        ck_assert_ptr_nonnull(l);
        ck_assert_uint_eq(l->n_devices, 2);
        ck_assert_str_eq(l->devices[0].id, UUID_B);     /* sorted by ID */
        ck_assert_str_eq(l->devices[1].id, UUID_A);
        ck_assert_int_eq(l->devices[1].health, KDP_HEALTHY);
        ck_assert_str_eq(l->devices[1].pci_address, "0000:18:00.0");
        ck_assert_uint_eq(l->devices[1].n_numa_nodes, 1);
        ck_assert_int_eq(l->devices[1].numa_nodes[0], 0);
        ck_assert_int_eq(l->devices[0].numa_nodes[0], 1);
        /* its own node, then the node-wide ones that exist (no uvm-tools, no modeset here) */
        ck_assert_uint_eq(l->devices[1].n_dev_nodes, 3);
        ck_assert_str_eq(l->devices[1].dev_nodes[0].container_path, "/dev/nvidia0");
        ck_assert_str_eq(l->devices[1].dev_nodes[1].container_path, "/dev/nvidiactl");
        ck_assert_str_eq(l->devices[1].dev_nodes[2].container_path, "/dev/nvidia-uvm");
        ck_assert_uint_eq(l->devices[1].n_cdi_devices, 0);
        ck_assert_int_ge(run.watched_fd, 0);            /* the kernel log is watched */
        gpu_done(&run);
}
END_TEST

START_TEST(test_gpu_excluded_and_unknown_uuid_are_not_served) {
        _cleanup_(kdp_test_rm_rfp) char *root = hgx_tree();
        gpu_run run;

        write_information(root, "0000:19:00.0", UUID_B, 1, "Yes");
        kdp_test_tree_write(root, "proc/driver/nvidia/gpus/0000:18:00.0/information",
                            "Bus Location: \t 0000:18:00.0\nDevice Minor: \t 0\n");     /* no UUID cached yet */
        ck_assert_int_eq(gpu_open(&run, root, NULL), 0);
        gpu_scan(&run, root);
        ck_assert_uint_eq(run.tree->n_resources, 0);
        write_information(root, "0000:18:00.0", UUID_A, 0, "No");
        gpu_scan(&run, root);
        ck_assert_uint_eq(resource(&run, "nvidia.com/gpu")->n_devices, 1);
        gpu_done(&run);
}
END_TEST

/* Xids the log held before the start count while younger than xid_recovery_s, by the backend's clock. */
START_TEST(test_gpu_replays_recent_xids_only) {
        _cleanup_(kdp_test_rm_rfp) char *root = hgx_tree();
        _cleanup_free_ char *log = NULL;
        const uint64_t now = FAKE_NOW_USEC;
        const kdp_device_list *l;
        gpu_run run;

        /* GPU A: Xid 79 ten seconds ago (counts); GPU B: Xid 48 1000 s ago (over), Xid 13 now
         * (ignored) and Xid 79 stamped after "now" (no age to judge by: skipped) */
        ck_assert_int_ge(asprintf(&log,
                                  "4,100,%" PRIu64 ",c;NVRM: Xid (PCI:0000:19:00): 48, pid=1, An uncorrectable double bit error\n"
                                  "4,101,%" PRIu64 ",c;NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus.\n"
                                  "4,102,%" PRIu64 ",c;NVRM: Xid (PCI:0000:19:00): 13, pid=2, name=python3, Graphics SM\n"
                                  "4,103,%" PRIu64 ",c;NVRM: Xid (PCI:0000:19:00): 79, pid=0, GPU has fallen off the bus.\n",
                                  now - UINT64_C(1000000000), now - UINT64_C(10000000), now, now + UINT64_C(1000000)), 0);
        kdp_test_tree_write(root, "dev/kmsg", log);
        ck_assert_int_eq(gpu_open(&run, root, NULL), 0);
        gpu_scan(&run, root);
        l = resource(&run, "nvidia.com/gpu");
        ck_assert_int_eq(l->devices[1].health, KDP_UNHEALTHY);
        ck_assert_str_eq(l->devices[1].id, UUID_A);
        ck_assert_str_eq(l->devices[1].health_reason, "Xid 79 (RESTART_BM)");
        ck_assert_int_eq(l->devices[0].health, KDP_HEALTHY);
        ck_assert_int_eq(run.rescan_ms, 290000);        /* when it is 300 s old (the default) */

        /* 1 ms before that nothing changes; at 300 s the Xid is over */
        run.now_usec = now + UINT64_C(289999000);
        gpu_scan(&run, root);
        ck_assert_int_eq(resource(&run, "nvidia.com/gpu")->devices[1].health, KDP_UNHEALTHY);
        ck_assert_int_eq(run.rescan_ms, 1);
        run.now_usec = now + UINT64_C(290000000);
        run.rescan_ms = -1;
        gpu_scan(&run, root);
        l = resource(&run, "nvidia.com/gpu");
        ck_assert_int_eq(l->devices[1].health, KDP_HEALTHY);
        ck_assert_int_eq(run.rescan_ms, -1);            /* nothing left to expire */
        gpu_done(&run);

        /* with xid_recovery_s 0 (only a reset clears an Xid) nothing from before the start counts */
        ck_assert_int_eq(gpu_open(&run, root, (const char *const[]){ "gpu.xid_recovery_s=0", NULL }), 0);
        gpu_scan(&run, root);
        l = resource(&run, "nvidia.com/gpu");
        ck_assert_int_eq(l->devices[1].health, KDP_HEALTHY);
        gpu_done(&run);
}
END_TEST

/* xid_ignore entries that are no numbers are skipped with a warning, as NVIDIA's plugin skips them; "all" in a list is all. */
START_TEST(test_gpu_xid_ignore_skips_entries_that_are_no_numbers) {
        _cleanup_(kdp_test_rm_rfp) char *root = hgx_tree();
        _cleanup_free_ char *log = NULL, *err = NULL;
        const uint64_t now = FAKE_NOW_USEC;
        const kdp_device_list *l;
        kdp_test_capture c;
        gpu_run run;

        /* GPU A: Xid 48 (not ignored); GPU B: Xid 94 (ignored by the list) */
        ck_assert_int_ge(asprintf(&log,
                                  "4,100,%" PRIu64 ",c;NVRM: Xid (PCI:0000:18:00): 48, pid=1, An uncorrectable double bit error\n"
                                  "4,101,%" PRIu64 ",c;NVRM: Xid (PCI:0000:19:00): 94, pid=2, Contained ECC error\n",
                                  now - UINT64_C(2000000), now - UINT64_C(1000000)), 0);
        kdp_test_tree_write(root, "dev/kmsg", log);
        kdp_test_capture_begin(&c);
        ck_assert_int_eq(gpu_open(&run, root, (const char *const[]){ "gpu.xid_ignore=94,abc, 0x1f", NULL }), 0);
        err = kdp_test_capture_end(&c);
        ck_assert_msg(strstr(err, "\"Skipped xid_ignore entries that are no Xid numbers\" backend=\"gpu\" "
                                  "key=\"gpu.xid_ignore\" skipped=\"abc,0x1f\" origin=\"-o gpu.xid_ignore=94,abc, 0x1f\""),
                      "%s", err);
        gpu_scan(&run, root);
        l = resource(&run, "nvidia.com/gpu");
        ck_assert_str_eq(l->devices[1].id, UUID_A);
        ck_assert_str_eq(l->devices[1].health_reason, "Xid 48 (WORKFLOW_XID_48)");
        ck_assert_int_eq(l->devices[0].health, KDP_HEALTHY);
        gpu_done(&run);

        /* "all" as one entry: no Xid health */
        ck_assert_int_eq(gpu_open(&run, root, (const char *const[]){ "gpu.xid_ignore=13,all", NULL }), 0);
        gpu_scan(&run, root);
        l = resource(&run, "nvidia.com/gpu");
        ck_assert_int_eq(l->devices[0].health, KDP_HEALTHY);
        ck_assert_int_eq(l->devices[1].health, KDP_HEALTHY);
        ck_assert_int_eq(run.watched_fd, -1);           /* the kernel log is not read */
        gpu_done(&run);
}
END_TEST

/* Right after boot the clock is small: an Xid 5 s after boot, 3 s ago, still counts. */
START_TEST(test_gpu_replays_xids_right_after_boot) {
        _cleanup_(kdp_test_rm_rfp) char *root = hgx_tree();
        gpu_run run;

        kdp_test_tree_write(root, "dev/kmsg", "4,7,5000000,c;NVRM: Xid (PCI:0000:19:00): 79, pid=0, GPU has fallen off the bus.\n");
        ck_assert_int_eq(gpu_open(&run, root, (const char *const[]){ "gpu.xid_recovery_s=4", NULL }), 0);
        run.now_usec = 8000000;
        gpu_scan(&run, root);
        ck_assert_int_eq(resource(&run, "nvidia.com/gpu")->devices[0].health, KDP_UNHEALTHY);
        ck_assert_str_eq(resource(&run, "nvidia.com/gpu")->devices[0].health_reason, "Xid 79 (RESTART_BM)");
        ck_assert_int_eq(run.rescan_ms, 1000);
        gpu_done(&run);
}
END_TEST

/* A pci uevent for the backend, as kdpd hands it over. */
static void gpu_event(gpu_run *run, const char *action, const char *bdf) {
        kdp_device_event ev = { .action = action, .subsystem = "pci", .sysname = bdf };

        run->ops->device_event(run->state, &ev);
}

/* Appends one record to the tree's kernel log, stamped now, and has the backend read it. */
static void gpu_log_xid(gpu_run *run, const char *root, unsigned seq, const char *text) {
        _cleanup_free_ char *path = kdp_test_tree_path(root, "dev/kmsg"), *record = NULL;
        FILE *f;

        ck_assert_int_ge(asprintf(&record, "4,%u,%" PRIu64 ",c;%s\n", seq, run->now_usec, text), 0);
        f = fopen(path, "ae");
        ck_assert_ptr_nonnull(f);
        ck_assert_int_ge(fputs(record, f), 0);
        ck_assert_int_eq(fclose(f), 0);
        ck_assert_int_gt(run->on_fd(run->state, run->watched_fd), 0);
}

/* Points the fake NVML at a fixture of the two H100s plus `more`; returns the fixture's path. */
static char *nvml_fixture(const char *more) {
        _cleanup_free_ char *text = NULL;
        char *path;

        ck_assert_int_ge(asprintf(&text, "gpu 0000:18:00.0 " UUID_A "\ngpu 0000:19:00.0 " UUID_B "\n%s", more), 0);
        path = kdp_test_write_temp("gpu-nvml", ".fixture", text, strlen(text));
        ck_assert_int_eq(setenv("KDP_FAKE_NVML", path, 1), 0);
        return path;
}

/* NVML's Xid events take the kernel log's path: the same ignore list, reason and reset. */
START_TEST(test_gpu_takes_xids_from_nvml_events) {
        _cleanup_(kdp_test_rm_rfp) char *root = hgx_tree();
        _cleanup_(kdp_test_unlink_freep) char *fixture = nvml_fixture("event 0000:19:00.0 79\nevent 0000:18:00.0 13\n");
        const kdp_test_backend_watch *w;
        const kdp_device_list *l;
        gpu_run run;

        /* in the log, but not read: NVML serves Xids */
        kdp_test_tree_write(root, "dev/kmsg", "4,7,1233000000,c;NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus.\n");
        ck_assert_int_eq(gpu_open(&run, root, (const char *const[]){ "gpu.nvml=" KDP_FAKE_NVML_LIB, NULL }), 0);
        gpu_scan(&run, root);
        ck_assert_uint_eq(run.n_watches, 1);
        w = kdp_test_backend_find_watch(&run, "anon_inode:[eventfd]");
        ck_assert_ptr_nonnull(w);
        for (int i = 0; i < 600; i++) {
                struct pollfd p = { .fd = w->fd, .events = POLLIN };

                if (poll(&p, 1, 100) > 0) {
                        ck_assert_int_ge(w->fn(run.state, w->fd), 0);
                        gpu_scan(&run, root);
                        if (resource(&run, "nvidia.com/gpu")->devices[0].health == KDP_UNHEALTHY)
                                break;
                }
        }
        l = resource(&run, "nvidia.com/gpu");
        ck_assert_str_eq(l->devices[0].id, UUID_B);
        ck_assert_int_eq(l->devices[0].health, KDP_UNHEALTHY);
        ck_assert_str_eq(l->devices[0].health_reason, "Xid 79 (RESTART_BM)");
        ck_assert_int_eq(l->devices[1].health, KDP_HEALTHY);    /* its Xid 13 is ignored; the log's 79 unread */
        gpu_event(&run, "change", "0000:19:00.0");
        gpu_scan(&run, root);
        ck_assert_int_eq(resource(&run, "nvidia.com/gpu")->devices[0].health, KDP_HEALTHY);
        gpu_done(&run);
}
END_TEST

/* NVML there but failing to initialise: the kernel log serves Xids, as without it. */
START_TEST(test_gpu_reads_the_kernel_log_when_nvml_fails) {
        _cleanup_(kdp_test_rm_rfp) char *root = hgx_tree();
        _cleanup_(kdp_test_unlink_freep) char *fixture = nvml_fixture("fail nvmlInit_v2 NO_PERMISSION\n");
        _cleanup_free_ char *kmsg = kdp_test_tree_path(root, "dev/kmsg");
        gpu_run run;

        ck_assert_int_eq(gpu_open(&run, root, (const char *const[]){ "gpu.nvml=" KDP_FAKE_NVML_LIB, NULL }), 0);
        gpu_scan(&run, root);
        ck_assert_uint_eq(run.n_watches, 1);
        ck_assert_ptr_nonnull(kdp_test_backend_find_watch(&run, kmsg));
        gpu_log_xid(&run, root, 8, "NVRM: Xid (PCI:0000:19:00): 79, pid=0, GPU has fallen off the bus.");
        gpu_scan(&run, root);
        ck_assert_str_eq(resource(&run, "nvidia.com/gpu")->devices[0].health_reason, "Xid 79 (RESTART_BM)");
        gpu_done(&run);
}
END_TEST

static void set_bound(const char *root, const kdp_test_pci_dev *d, bool bound) {
        _cleanup_free_ char *rel = kdp_test_pci_rel(d, "driver");

        if (bound)
                kdp_test_pci_sys_link(root, d, "driver", "bus/pci/drivers/nvidia");
        else
                kdp_test_tree_remove(root, rel);
}

/* Scans; GPU A's health reason then, "" when it is healthy. */
static const char *scan_reason_a(gpu_run *run, const char *root) {
        const kdp_device_list *l;

        gpu_scan(run, root);
        l = resource(run, "nvidia.com/gpu");
        ck_assert_str_eq(l->devices[1].id, UUID_A);
        return l->devices[1].health == KDP_HEALTHY ? "" : l->devices[1].health_reason;
}

/* GPU A unbound, with its event; its reason after the scan. */
static const char *unbind_a(gpu_run *run, const char *root) {
        set_bound(root, &h100_a, false);
        gpu_event(run, "unbind", "0000:18:00.0");
        return scan_reason_a(run, root);
}

START_TEST(test_gpu_rebind_ends_only_the_xids_before_it) {
        _cleanup_(kdp_test_rm_rfp) char *root = hgx_tree();
        gpu_run run;

        ck_assert_int_eq(gpu_open(&run, root, NULL), 0);
        ck_assert_str_eq(scan_reason_a(&run, root), "");

        /* an Xid after a rebind whose scan has not run yet is the new binding's: the scan keeps it */
        ck_assert_str_eq(unbind_a(&run, root), "driver unbound");
        set_bound(root, &h100_a, true);
        gpu_event(&run, "bind", "0000:18:00.0");
        gpu_log_xid(&run, root, 1, "NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus.");
        ck_assert_str_eq(scan_reason_a(&run, root), "Xid 79 (RESTART_BM)");

        /* a rebind seen by a scan only (its events lost): the Xid from before the unbind is over */
        ck_assert_str_eq(unbind_a(&run, root), "driver unbound; Xid 79 (RESTART_BM)");
        set_bound(root, &h100_a, true);
        gpu_event(&run, "add", "0000:c4:00.1");         /* another function: the PCI list is read again */
        ck_assert_str_eq(scan_reason_a(&run, root), "");

        /* ... and an Xid read after the scan that found it unbound is the new binding's */
        ck_assert_str_eq(unbind_a(&run, root), "driver unbound");
        set_bound(root, &h100_a, true);
        gpu_log_xid(&run, root, 2, "NVRM: Xid (PCI:0000:18:00): 48, pid=0, An uncorrectable double bit error");
        gpu_event(&run, "add", "0000:c4:00.1");
        ck_assert_str_eq(scan_reason_a(&run, root), "Xid 48 (WORKFLOW_XID_48)");
        gpu_done(&run);
}
END_TEST

START_TEST(test_gpu_modes_shape_the_records) {
        _cleanup_(kdp_test_rm_rfp) char *root = hgx_tree();
        const kdp_device_list *l;
        gpu_run run;

        ck_assert_int_eq(gpu_open(&run, root, (const char *const[]){
                                 "gpu.cdi=true", "gpu.replicas=3", "gpu.model_resources=10de:2330=nvidia.com/h100",
                                 "gpu.deny=0000:19:00.0", NULL }), 0);
        gpu_scan(&run, root);
        ck_assert_uint_eq(run.tree->n_resources, 1);
        l = resource(&run, "nvidia.com/h100");
        ck_assert_ptr_nonnull(l);
        ck_assert_uint_eq(l->n_devices, 3);
        ck_assert_str_eq(l->devices[0].id, UUID_A "::0");
        ck_assert_str_eq(l->devices[2].id, UUID_A "::2");
        ck_assert_uint_eq(l->devices[2].n_cdi_devices, 1);
        ck_assert_str_eq(l->devices[2].cdi_devices[0], "nvidia.com/h100=" UUID_A);
        gpu_done(&run);

        ck_assert_int_eq(gpu_open(&run, root, (const char *const[]){ "gpu.vendors=amd,intel", NULL }), 0);
        gpu_scan(&run, root);
        ck_assert_uint_eq(run.tree->n_resources, 0);
        ck_assert_int_eq(run.watched_fd, -1);           /* no NVIDIA: no kernel log */
        gpu_done(&run);
}
END_TEST

/* replicas: a name without a domain is in nvidia_resource's; any count up to the devices one resource may have. */
START_TEST(test_gpu_replicas_take_nvidias_names_and_large_counts) {
        _cleanup_(kdp_test_rm_rfp) char *root = hgx_tree();
        const kdp_device_list *l;
        gpu_run run;

        ck_assert_int_eq(gpu_open(&run, root, (const char *const[]){ "gpu.replicas=gpu=2", NULL }), 0);
        gpu_scan(&run, root);
        l = resource(&run, "nvidia.com/gpu");
        ck_assert_uint_eq(l->n_devices, 4);
        ck_assert_str_eq(l->devices[0].id, UUID_B "::0");
        ck_assert_str_eq(l->devices[3].id, UUID_A "::1");
        gpu_done(&run);

        /* more than 64: 2 GPUs as 2 x 1000 IDs */
        ck_assert_int_eq(gpu_open(&run, root, (const char *const[]){ "gpu.replicas=nvidia.com/gpu=1000", NULL }), 0);
        gpu_scan(&run, root);
        l = resource(&run, "nvidia.com/gpu");
        ck_assert_uint_eq(l->n_devices, 2000);
        ck_assert_str_eq(l->devices[1999].id, UUID_A "::999");
        gpu_done(&run);

        /* 2 x 8200 would make more than 16384 devices: not served, and said so */
        ck_assert_int_eq(gpu_open(&run, root, (const char *const[]){ "gpu.replicas=8200", NULL }), 0);
        gpu_scan(&run, root);
        ck_assert_uint_eq(resource(&run, "nvidia.com/gpu")->n_devices, 0);
        CHECK_NOT_SERVED(&run, "0000:1a:00.0: bound to vfio-pci, not nvidia\n"
                               "0000:18:00.0: 8200 replicas of each of the 2 devices of nvidia.com/gpu would make more "
                               "than 16384\n"
                               "0000:19:00.0: 8200 replicas of each of the 2 devices of nvidia.com/gpu would make more "
                               "than 16384\n");
        gpu_done(&run);

        /* 8192 of each: exactly the most */
        ck_assert_int_eq(gpu_open(&run, root, (const char *const[]){ "gpu.replicas=8192", NULL }), 0);
        gpu_scan(&run, root);
        ck_assert_uint_eq(resource(&run, "nvidia.com/gpu")->n_devices, 16384);
        gpu_done(&run);
}
END_TEST

START_TEST(test_gpu_rejects_bad_values_naming_where_they_came_from) {
        _cleanup_(kdp_test_rm_rfp) char *root = hgx_tree();
        static const char *const bad[] = {
                "gpu.vendors=nvidia,3dfx", "gpu.allow=10de", "gpu.deny=0000:18:00", "gpu.model_resources=10de:2330",
                "gpu.model_resources=nvidia:2330=x.com/y", "gpu.replicas=0", "gpu.replicas=nvidia.com/gpu=16385",
                "gpu.replicas=$invalid$=2", "gpu.replicas=nvidia.com/gpu/x=2", "gpu.replicas=kubernetes.io/gpu=2",
                "gpu.replica_policy=random", "gpu.xid_recovery_s=-1",
                "gpu.nvidia_device_specs=maybe", "gpu.cdi=2", "gpu.amd_partitions=cpx", "gpu.amd_partitions=",
        };

        for (size_t i = 0; i < KDP_ELEMENTSOF(bad); i++) {
                _cleanup_free_ char *log = NULL, *origin = NULL;
                kdp_test_capture c;
                gpu_run run;

                kdp_test_capture_begin(&c);
                ck_assert_msg(gpu_open(&run, root, (const char *const[]){ bad[i], NULL }) == -EINVAL, "%s", bad[i]);
                log = kdp_test_capture_end(&c);
                ck_assert_int_ge(asprintf(&origin, "origin=\"-o %s\"", bad[i]), 0);
                ck_assert_msg(strstr(log, origin), "%s: the error does not name its origin: %s", bad[i], log);
                run.state = NULL;
                gpu_done(&run);
        }
}
END_TEST

static const kdp_test_pci_dev flex_pf_with_vfs = {      /* SR-IOV on: its VFs are the GPUs to serve */
        .path = "pci0000:4a/0000:4a:01.0/0000:4d:00.0", .vendor = "0x8086", .device = "0x56c0",
        .class_code = "0x038000", .numa_node = "0", .driver = "i915", .enable = "1",
        .sriov_totalvfs = "31", .sriov_numvfs = "4",
};
static const kdp_test_pci_dev flex = {
        .path = "pci0000:c7/0000:c7:01.0/0000:ca:00.0", .vendor = "0x8086", .device = "0x56c0",
        .class_code = "0x038000", .numa_node = "1", .driver = "i915", .enable = "1",
        .sriov_totalvfs = "31", .sriov_numvfs = "0",
};

START_TEST(test_gpu_intel_pf_with_vfs_is_not_served) {
        _cleanup_(kdp_test_rm_rfp) char *root = kdp_test_tree_new("gpu");
        const kdp_device_list *l;
        gpu_run run;

        kdp_test_pci_add(root, &flex_pf_with_vfs);
        kdp_test_pci_add(root, &flex);
        ck_assert_int_eq(gpu_open(&run, root, NULL), 0);
        gpu_scan(&run, root);
        l = resource(&run, "gpu.intel.com/i915");
        ck_assert_ptr_nonnull(l);
        ck_assert_uint_eq(l->n_devices, 1);
        ck_assert_str_eq(l->devices[0].id, "0000:ca:00.0");
        /* no drm/ directory in this tree: listed, but not healthy */
        ck_assert_int_eq(l->devices[0].health, KDP_UNHEALTHY);
        ck_assert_str_eq(l->devices[0].health_reason, "no DRM card and render nodes");
        gpu_done(&run);
}
END_TEST

/* A node its drm/ directory names but /dev lacks: Unhealthy, naming the node, until the node is there. */
START_TEST(test_gpu_intel_without_its_dri_nodes_is_unhealthy) {
        _cleanup_(kdp_test_rm_rfp) char *root = kdp_test_tree_new("gpu");
        _cleanup_free_ char *reason = NULL;
        const kdp_device_list *l;
        gpu_run run;

        kdp_test_pci_add(root, &flex);
        kdp_test_tree_write(root, "sys/devices/pci0000:c7/0000:c7:01.0/0000:ca:00.0/drm/card1/uevent",
                            "MAJOR=226\nMINOR=1\nDEVNAME=dri/card1\nDEVTYPE=drm_minor\n");
        kdp_test_tree_write(root, "sys/devices/pci0000:c7/0000:c7:01.0/0000:ca:00.0/drm/renderD128/uevent",
                            "MAJOR=226\nMINOR=128\nDEVNAME=dri/renderD128\nDEVTYPE=drm_minor\n");
        kdp_test_tree_write(root, "dev/dri/card1", "");
        ck_assert_int_eq(gpu_open(&run, root, NULL), 0);
        gpu_scan(&run, root);
        l = resource(&run, "gpu.intel.com/i915");
        ck_assert_uint_eq(l->n_devices, 1);
        ck_assert_int_eq(l->devices[0].health, KDP_UNHEALTHY);
        ck_assert_int_ge(asprintf(&reason, "device node %s/dev/dri/renderD128 missing", root), 0);
        ck_assert_str_eq(l->devices[0].health_reason, reason);

        kdp_test_tree_write(root, "dev/dri/renderD128", "");
        gpu_scan(&run, root);
        l = resource(&run, "gpu.intel.com/i915");
        ck_assert_int_eq(l->devices[0].health, KDP_HEALTHY);
        ck_assert_ptr_null(l->devices[0].health_reason);
        gpu_done(&run);
}
END_TEST

static const kdp_test_pci_dev mi300x = {
        .path = "pci0000:c0/0000:c0:01.1/0000:c1:00.0", .vendor = "0x1002", .device = "0x74a1",
        .class_code = "0x120000", .numa_node = "1", .driver = "amdgpu", .enable = "1",
};

/* Each GPU looked at and not taken is declared with its reason; functions that are no GPUs are not. */
START_TEST(test_gpu_declares_every_gpu_it_does_not_serve) {
        _cleanup_(kdp_test_rm_rfp) char *root = hgx_tree();
        _cleanup_free_ char *text = NULL;
        gpu_run run;

        kdp_test_pci_add(root, &flex_pf_with_vfs);
        kdp_test_pci_add(root, &mi300x);
        ck_assert_int_eq(gpu_open(&run, root, (const char *const[]){ "gpu.vendors=nvidia,intel",
                                                                     "gpu.deny=0000:19:00.0", NULL }), 0);
        gpu_scan(&run, root);
        ck_assert_uint_eq(resource(&run, "nvidia.com/gpu")->n_devices, 1);
        text = kdp_test_not_served_text(run.tree);
        ck_assert_str_eq(text, "0000:19:00.0: filtered out by the config (in gpu.deny)\n"
                               "0000:1a:00.0: bound to vfio-pci, not nvidia\n"
                               "0000:4d:00.0: SR-IOV PF with 4 VFs enabled (its VFs are served instead)\n"
                               "0000:c1:00.0: its vendor (amd) is not in gpu.vendors\n");
        gpu_done(&run);

        /* allow lets through only what it names; procfs that cannot be parsed says what is wrong */
        kdp_test_tree_write(root, "proc/driver/nvidia/gpus/0000:18:00.0/information",
                            "Bus Location: \t 0000:18:00.0\nDevice Minor: \t 300\n");
        ck_assert_int_eq(gpu_open(&run, root, (const char *const[]){ "gpu.allow=10de:*", NULL }), 0);
        gpu_scan(&run, root);
        ck_assert_uint_eq(resource(&run, "nvidia.com/gpu")->n_devices, 1);
        free(text);
        text = kdp_test_not_served_text(run.tree);
        ck_assert_str_eq(text, "0000:18:00.0: its /proc/driver/nvidia information is malformed: its Device Minor "
                               "is not a number from 0 to 247\n"
                               "0000:1a:00.0: bound to vfio-pci, not nvidia\n"
                               "0000:4d:00.0: filtered out by the config (not in gpu.allow)\n"
                               "0000:c1:00.0: filtered out by the config (not in gpu.allow)\n");
        gpu_done(&run);
}
END_TEST

/* A pci event: the backend reads the PCI list again at its next scan. */
static void pci_event(gpu_run *run, const char *action, const char *address) {
        run->ops->device_event(run->state, &(kdp_device_event){ .action = action, .subsystem = "pci",
                                                                 .sysname = address });
}

/* After a pci event on `address`: a scan, its log dropped; the nvidia.com/gpu list. */
static const kdp_device_list *rescan_after(gpu_run *run, const char *root, const char *action, const char *address) {
        kdp_test_capture c;

        pci_event(run, action, address);
        kdp_test_capture_begin(&c);
        gpu_scan(run, root);
        free(kdp_test_capture_end(&c));
        return resource(run, "nvidia.com/gpu");
}

/*
 * PCI functions libkdp could not read: one not seen before that may be a GPU (vendor not read) is
 * declared not served with the reason, another vendor's is no GPU; a GPU already served stays,
 * Unhealthy with the reason (not "removed"), and is healthy again once it can be read.
 */
START_TEST(test_gpu_handles_pci_functions_that_cannot_be_read) {
        _cleanup_(kdp_test_rm_rfp) char *root = hgx_tree();
        _cleanup_free_ char *text = NULL, *want = NULL, *log = NULL;
        const char *class_b = "sys/devices/pci0000:15/0000:15:01.0/0000:19:00.0/class";
        const kdp_device_list *l;
        kdp_test_capture c;
        gpu_run run;

        kdp_test_pci_add(root, &(kdp_test_pci_dev){ .path = "pci0000:15/0000:15:01.0/0000:1b:00.0",
                                                    .device = "0x2330", .class_code = "0x030200" });
        kdp_test_pci_add(root, &(kdp_test_pci_dev){ .path = "pci0000:00/0000:00:1c.0/0000:03:00.0",
                                                    .vendor = "0x1a03", .device = "0x2000",
                                                    .class_code = "0x1234567" });
        ck_assert_int_eq(gpu_open(&run, root, NULL), 0);
        kdp_test_capture_begin(&c);
        gpu_scan(&run, root);
        log = kdp_test_capture_end(&c);
        ck_assert_ptr_nonnull(strstr(log, "\"Skipped PCI device\" backend=\"gpu\" pciAddress=\"0000:1b:00.0\""));
        text = kdp_test_not_served_text(run.tree);
        ck_assert_int_ge(asprintf(&want, "0000:1a:00.0: bound to vfio-pci, not nvidia\n"
                                         "0000:1b:00.0: libpci cannot read it: Cannot open "
                                         "%s/sys/bus/pci/devices/0000:1b:00.0/vendor: No such file or directory\n",
                                  root), 0);
        ck_assert_str_eq(text, want);
        ck_assert_uint_eq(resource(&run, "nvidia.com/gpu")->n_devices, 2);

        /* a served GPU whose class file turns malformed, until it is fixed */
        kdp_test_tree_write(root, class_b, "0x1234567\n");
        l = rescan_after(&run, root, "unbind", "0000:19:00.0");
        ck_assert_uint_eq(l->n_devices, 2);
        ck_assert_str_eq(l->devices[0].id, UUID_B);
        ck_assert_int_eq(l->devices[0].health, KDP_UNHEALTHY);
        ck_assert_str_eq(l->devices[0].health_reason, "its sysfs file class cannot be read: Bad message");
        ck_assert_int_eq(l->devices[1].health, KDP_HEALTHY);
        free(text);
        text = kdp_test_not_served_text(run.tree);
        ck_assert_str_eq(text, want);

        kdp_test_tree_write(root, class_b, "0x030200\n");
        l = rescan_after(&run, root, "bind", "0000:19:00.0");
        ck_assert_int_eq(l->devices[0].health, KDP_HEALTHY);
        gpu_done(&run);
}
END_TEST

/*
 * A scan in the middle of a hot-unplug finds the GPU without its numa_node file (the kernel
 * removes the attributes before the directory): the GPU keeps its node, kept after the unplug
 * too, as a kdpd started later would list its peers. A numa_node that reads -1 is taken.
 */
START_TEST(test_gpu_keeps_its_numa_node_while_the_file_is_absent) {
        _cleanup_(kdp_test_rm_rfp) char *root = hgx_tree();
        const char *numa_b = "sys/devices/pci0000:15/0000:15:01.0/0000:19:00.0/numa_node";
        const kdp_device_list *l;
        gpu_run run;

        ck_assert_int_eq(gpu_open(&run, root, NULL), 0);
        gpu_scan(&run, root);
        l = resource(&run, "nvidia.com/gpu");
        ck_assert_str_eq(l->devices[0].id, UUID_B);
        ck_assert_uint_eq(l->devices[0].n_numa_nodes, 1);
        ck_assert_int_eq(l->devices[0].numa_nodes[0], 1);

        /* the firmware reports no affinity: taken (the event has the PCI list read again) */
        kdp_test_tree_write(root, numa_b, "-1\n");
        l = rescan_after(&run, root, "bind", "0000:19:00.0");
        ck_assert_uint_eq(l->devices[0].n_numa_nodes, 0);
        kdp_test_tree_write(root, numa_b, "1\n");
        l = rescan_after(&run, root, "bind", "0000:19:00.0");
        ck_assert_uint_eq(l->devices[0].n_numa_nodes, 1);
        ck_assert_int_eq(l->devices[0].numa_nodes[0], 1);

        /* mid-unplug: the file is gone, the function still listed */
        kdp_test_tree_remove(root, numa_b);
        l = rescan_after(&run, root, "unbind", "0000:19:00.0");
        ck_assert_str_eq(l->devices[0].id, UUID_B);
        ck_assert_uint_eq(l->devices[0].n_numa_nodes, 1);
        ck_assert_int_eq(l->devices[0].numa_nodes[0], 1);

        /* then the function is gone: kept, Unhealthy, on its node */
        kdp_test_tree_remove(root, "sys/bus/pci/devices/0000:19:00.0");
        l = rescan_after(&run, root, "remove", "0000:19:00.0");
        ck_assert_uint_eq(l->n_devices, 2);
        ck_assert_str_eq(l->devices[0].id, UUID_B);
        ck_assert_int_eq(l->devices[0].health, KDP_UNHEALTHY);
        ck_assert_str_eq(l->devices[0].health_reason, "removed from the PCI bus");
        ck_assert_uint_eq(l->devices[0].n_numa_nodes, 1);
        ck_assert_int_eq(l->devices[0].numa_nodes[0], 1);
        ck_assert_uint_eq(l->devices[1].n_numa_nodes, 1);
        ck_assert_int_eq(l->devices[1].numa_nodes[0], 0);
        gpu_done(&run);
}
END_TEST

/* ---- MIG devices shared (replicas) and their preferred allocation ---- */

/* GPU A (0000:18:00.0, NUMA 0): 1g.10gb in GPU instances 9 and 10, 1g.10gb+me in 11; GPU B (0000:19:00.0,
 * NUMA 1): 1g.10gb in 9, 10 and 12; each with compute instance 0 */
#define MA9 "MIG-a0000000-0000-4000-8000-000000000009"
#define MA10 "MIG-a0000000-0000-4000-8000-000000000010"
#define MA11 "MIG-a0000000-0000-4000-8000-000000000011"
#define MB9 "MIG-b0000000-0000-4000-8000-000000000009"
#define MB10 "MIG-b0000000-0000-4000-8000-000000000010"
#define MB12 "MIG-b0000000-0000-4000-8000-000000000012"

/* The capability files and /dev/nvidia-caps nodes of GPU instance `gi` (and its CI 0) of the GPU of `minor`. */
static void mig_caps(const char *root, unsigned minor, unsigned gi) {
        unsigned m = 3 + 135 * minor + 9 * gi;          /* the driver's mig-minors table */

        for (unsigned k = 0; k < 2; k++) {
                _cleanup_free_ char *file = NULL, *text = NULL, *node = NULL;

                ck_assert_int_ge(asprintf(&file, "proc/driver/nvidia/capabilities/gpu%u/mig/gi%u%s/access", minor, gi,
                                          k ? "/ci0" : ""), 0);
                ck_assert_int_ge(asprintf(&text, "DeviceFileMinor: %u\nDeviceFileMode: 292\n", m + k), 0);
                ck_assert_int_ge(asprintf(&node, "dev/nvidia-caps/nvidia-cap%u", m + k), 0);
                kdp_test_tree_write(root, file, text);
                kdp_test_tree_write(root, node, "");
        }
}

/* hgx_tree() with both H100s in MIG mode, and the fake NVML's fixture of it (its path into *ret_fixture). */
static char *mig_tree(char **ret_fixture) {
        static const char nvml[] = "gpu 0000:18:00.0 " UUID_A " mig=1 maxmig=7\n"
                                   "gpu 0000:19:00.0 " UUID_B " mig=1 maxmig=7\n"
                                   "mig 0000:18:00.0 9 0 " MA9 " 1 9984\n"
                                   "mig 0000:18:00.0 10 0 " MA10 " 1 9984\n"
                                   "mig 0000:18:00.0 11 0 " MA11 " 1 9984 profile=7\n"
                                   "mig 0000:19:00.0 9 0 " MB9 " 1 9984\n"
                                   "mig 0000:19:00.0 10 0 " MB10 " 1 9984\n"
                                   "mig 0000:19:00.0 12 0 " MB12 " 1 9984\n";
        char *root = hgx_tree();

        for (unsigned gi = 9; gi <= 12; gi++) {
                if (gi != 12)
                        mig_caps(root, 0, gi);
                if (gi != 11)
                        mig_caps(root, 1, gi);
        }
        *ret_fixture = kdp_test_write_temp("gpu-nvml", ".fixture", nvml, strlen(nvml));
        ck_assert_int_eq(setenv("KDP_FAKE_NVML", *ret_fixture, 1), 0);
        return root;
}

#define STRS(...) ((const char *const[]){ __VA_ARGS__ }), KDP_ELEMENTSOF(((const char *const[]){ __VA_ARGS__ }))
#define NO_STRS NULL, 0

/* The fake NVML, then the overrides given. */
#define MIG_OPTS(...) ((const char *const[]){ "gpu.nvml=" KDP_FAKE_NVML_LIB, __VA_ARGS__, NULL })

/* The IDs of a resource's list, "a,b,c" (sorted, as kdpd sends them), an unhealthy one's with "-" after it. */
static char *ids_text(const kdp_device_list *l) {
        char *out = calloc(l->n_devices * 64 + 1, 1);

        ck_assert_ptr_nonnull(out);
        for (size_t i = 0; i < l->n_devices; i++)
                sprintf(out + strlen(out), "%s%s%s", i ? "," : "", l->devices[i].id,
                        l->devices[i].health == KDP_HEALTHY ? "" : "-");
        return out;
}

#define CHECK_IDS(run, res, expected)                                          \
        do {                                                                    \
                const kdp_device_list *l_ = resource((run), (res));             \
                _cleanup_free_ char *got_ = NULL;                               \
                                                                                \
                ck_assert_ptr_nonnull(l_);                                      \
                got_ = ids_text(l_);                                            \
                ck_assert_str_eq(got_, (expected));                             \
        } while (0)

/* Allocate of `ids` in `res`: its env and the container paths of its nodes, "K=V|/dev/a /dev/b" ("error N"). */
static char *allocate_text(gpu_run *run, const char *res, const char *const *ids, size_t n) {
        _cleanup_(kdp_alloc_response_done) kdp_alloc_response resp;
        kdp_alloc_request req = { .resource = res, .device_ids = ids, .n_device_ids = n };
        char *out = calloc(4096, 1);
        int r;

        ck_assert_ptr_nonnull(out);
        kdp_alloc_response_init(&resp, resource(run, res));
        r = run->ops->allocate(run->state, &req, &resp);
        if (r < 0) {
                sprintf(out, "error %d", r);
                return out;
        }
        for (size_t i = 0; i < resp.n_envs; i++)
                sprintf(out + strlen(out), "%s%s=%s", i ? " " : "", resp.envs[i].key, resp.envs[i].value);
        strcat(out, "|");
        for (size_t i = 0; i < resp.n_dev_nodes; i++)
                sprintf(out + strlen(out), "%s%s", i ? " " : "", resp.dev_nodes[i].container_path);
        return out;
}

START_TEST(test_gpu_mig_replicas_map_back_to_their_mig_devices) {
        _cleanup_(kdp_test_unlink_freep) char *fixture = NULL;
        _cleanup_(kdp_test_rm_rfp) char *root = mig_tree(&fixture);
        _cleanup_free_ char *alloc = NULL, *refused = NULL;
        gpu_run run;

        /* mixed: 2 replicas of each 1g.10gb, 3 of the 1g.10gb+me named as NVIDIA's plugin names its resource */
        ck_assert_int_eq(gpu_open(&run, root, MIG_OPTS("gpu.mig_strategy=mixed", "gpu.nvidia_device_specs=true",
                                                       "gpu.replicas=nvidia.com/mig-1g.10gb=2,"
                                                       "nvidia.com/mig-1g.10gb+me=3")), 0);
        gpu_scan(&run, root);
        ck_assert_uint_eq(run.tree->n_resources, 2);
        CHECK_IDS(&run, "nvidia.com/mig-1g.10gb", MA9 "::0," MA9 "::1," MA10 "::0," MA10 "::1," MB9 "::0," MB9 "::1,"
                  MB10 "::0," MB10 "::1," MB12 "::0," MB12 "::1");
        CHECK_IDS(&run, "nvidia.com/mig-1g.10gb.me", MA11 "::0," MA11 "::1," MA11 "::2");

        /* each MIG device once, in request order, with its GPU's node and its two caps nodes; each node once */
        alloc = allocate_text(&run, "nvidia.com/mig-1g.10gb", STRS(MB9 "::1", MA10 "::0", MB9 "::0"));
        ck_assert_str_eq(alloc, "NVIDIA_VISIBLE_DEVICES=" MB9 "," MA10 "|/dev/nvidia1 /dev/nvidia-caps/nvidia-cap219 "
                                "/dev/nvidia-caps/nvidia-cap220 /dev/nvidiactl /dev/nvidia-uvm /dev/nvidia0 "
                                "/dev/nvidia-caps/nvidia-cap93 /dev/nvidia-caps/nvidia-cap94");
        refused = allocate_text(&run, "nvidia.com/mig-1g.10gb", STRS(MA11 "::0"));
        ck_assert_str_eq(refused, "error -95");         /* the +me device is another resource's */

        /* a replica's health is its MIG device's: GI 10's compute instance file gone */
        kdp_test_tree_remove(root, "proc/driver/nvidia/capabilities/gpu0/mig/gi10/ci0/access");
        gpu_scan(&run, root);
        CHECK_IDS(&run, "nvidia.com/mig-1g.10gb", MA9 "::0," MA9 "::1," MA10 "::0-," MA10 "::1-," MB9 "::0," MB9 "::1,"
                  MB10 "::0," MB10 "::1," MB12 "::0," MB12 "::1");
        ck_assert_str_eq(resource(&run, "nvidia.com/mig-1g.10gb")->devices[3].health_reason,
                         "its capability file gpu0/mig/gi10/ci0/access is missing");
        gpu_done(&run);

        /* single: every MIG device's replicas under nvidia.com/gpu, the +me one too */
        ck_assert_int_eq(gpu_open(&run, root, MIG_OPTS("gpu.mig_strategy=single", "gpu.replicas=2")), 0);
        mig_caps(root, 0, 10);
        gpu_scan(&run, root);
        ck_assert_uint_eq(run.tree->n_resources, 1);
        CHECK_IDS(&run, "nvidia.com/gpu", MA9 "::0," MA9 "::1," MA10 "::0," MA10 "::1," MA11 "::0," MA11 "::1,"
                  MB9 "::0," MB9 "::1," MB10 "::0," MB10 "::1," MB12 "::0," MB12 "::1");
        gpu_done(&run);
}
END_TEST

/* A driver of R450 to R465 names MIG devices "MIG-GPU-<GPU uuid>/<gi>/<ci>" (49 characters here): served as such. */
START_TEST(test_gpu_mig_serves_legacy_mig_uuids) {
        static const char nvml[] = "gpu 0000:18:00.0 " UUID_A " mig=1 maxmig=7\n"
                                   "gpu 0000:19:00.0 " UUID_B "\n"
                                   "mig 0000:18:00.0 9 0 MIG-" UUID_A "/9/0 1 9984\n"
                                   "mig 0000:18:00.0 10 0 MIG-" UUID_A "/10/0 1 9984\n";
        _cleanup_(kdp_test_unlink_freep) char *fixture = kdp_test_write_temp("gpu-nvml", ".fixture", nvml, strlen(nvml));
        _cleanup_(kdp_test_rm_rfp) char *root = hgx_tree();
        _cleanup_free_ char *alloc = NULL, *sys = NULL;
        gpu_run run;

        mig_caps(root, 0, 9);
        mig_caps(root, 0, 10);
        ck_assert_int_eq(setenv("KDP_FAKE_NVML", fixture, 1), 0);
        ck_assert_int_eq(gpu_open(&run, root, MIG_OPTS("gpu.mig_strategy=mixed")), 0);
        gpu_scan(&run, root);
        CHECK_NOT_SERVED(&run, "0000:1a:00.0: bound to vfio-pci, not nvidia\n");              /* not GPU A */
        CHECK_IDS(&run, "nvidia.com/mig-1g.10gb", "MIG-" UUID_A "/10/0,MIG-" UUID_A "/9/0");
        CHECK_IDS(&run, "nvidia.com/gpu", UUID_B);
        alloc = allocate_text(&run, "nvidia.com/mig-1g.10gb", STRS("MIG-" UUID_A "/9/0", "MIG-" UUID_A "/10/0"));
        ck_assert_str_eq(alloc, "NVIDIA_VISIBLE_DEVICES=MIG-" UUID_A "/9/0,MIG-" UUID_A "/10/0|");
        gpu_done(&run);

        /* a CDI device name holds no '/': with cdi, kdpd refuses them and says why */
        ck_assert_int_eq(gpu_open(&run, root, MIG_OPTS("gpu.mig_strategy=mixed", "gpu.cdi=true")), 0);
        sys = kdp_test_tree_path(root, "sys");
        ck_assert_int_eq(kdp_device_tree_new(sys, &run.tree), 0);
        ck_assert_int_eq(run.ops->scan(run.state, run.tree), 0);
        kdp_device_tree_finish(run.tree);
        ck_assert_uint_eq(run.tree->n_rejected, 1);            /* the first; the GPU's others are not tried */
        CHECK_NOT_SERVED(&run, "0000:1a:00.0: bound to vfio-pci, not nvidia\n"
                               "0000:18:00.0: refused by kdpd for nvidia.com/mig-1g.10gb: CDI device name is not "
                               "\"vendor/class=name\"\n");
        gpu_done(&run);
}
END_TEST

/* The backend's answer for `res` ("a b c"; "error N" when it leaves the answer to the framework). */
static char *preferred_text(gpu_run *run, const char *res, const char *const *avail, size_t n_avail,
                            const char *const *must, size_t n_must, size_t size) {
        kdp_pref_request req = { .resource = res, .available = avail, .n_available = n_avail, .must_include = must,
                                 .n_must_include = n_must, .size = size };
        kdp_pref_response resp;
        char *out = calloc(4096, 1);
        int r;

        ck_assert_ptr_nonnull(out);
        kdp_pref_response_init(&resp, &req);
        r = run->ops->preferred(run->state, &req, &resp);
        if (r < 0)
                sprintf(out, "error %d", r);
        for (size_t i = 0; r >= 0 && i < resp.n_ids; i++)
                sprintf(out + strlen(out), "%s%s", i ? " " : "", resp.ids[i]);
        kdp_pref_response_done(&resp);
        return out;
}

#define CHECK_PREF(run, avail, must, size, expected)                                                    \
        do {                                                                                            \
                _cleanup_free_ char *got_ = preferred_text((run), "nvidia.com/mig-1g.10gb", avail, must, (size)); \
                ck_assert_str_eq(got_, (expected));                                                     \
        } while (0)

/* With replicas a MIG device is what is shared: spread and pack weigh MIG devices as they weigh GPUs. */
START_TEST(test_gpu_mig_replicas_preferred_spread_and_pack) {
        _cleanup_(kdp_test_unlink_freep) char *fixture = NULL;
        _cleanup_(kdp_test_rm_rfp) char *root = mig_tree(&fixture);
        gpu_run run;

        ck_assert_int_eq(gpu_open(&run, root, MIG_OPTS("gpu.mig_strategy=mixed", "gpu.replicas=2")), 0);
        gpu_scan(&run, root);
#define ALL_R STRS(MA9 "::0", MA9 "::1", MA10 "::0", MA10 "::1", MB9 "::0", MB9 "::1", MB10 "::0", MB10 "::1", \
                   MB12 "::0", MB12 "::1")
#define BUT_MA9_0 STRS(MA9 "::1", MA10 "::0", MA10 "::1", MB9 "::0", MB9 "::1", MB10 "::0", MB10 "::1", MB12 "::0", \
                       MB12 "::1")
        CHECK_PREF(&run, ALL_R, NO_STRS, 3, MA9 "::0 " MA10 "::0 " MB9 "::0");         /* 3 distinct MIG devices */
        CHECK_PREF(&run, BUT_MA9_0, NO_STRS, 2, MA10 "::0 " MB9 "::0");                 /* the least shared first */
        CHECK_PREF(&run, ALL_R, STRS(MB12 "::1"), 2, MB12 "::1 " MA9 "::0");            /* must_include, then another */
        CHECK_PREF(&run, ALL_R, STRS(MB12 "::1", MB12 "::0"), 2, MB12 "::1 " MB12 "::0");       /* size reached */
        CHECK_PREF(&run, ALL_R, NO_STRS, 10, MA9 "::0 " MA10 "::0 " MB9 "::0 " MB10 "::0 " MB12 "::0 " MA9 "::1 "
                   MA10 "::1 " MB9 "::1 " MB10 "::1 " MB12 "::1");
        CHECK_PREF(&run, ALL_R, NO_STRS, 11, "error -22");      /* more than available: the framework answers */
        CHECK_PREF(&run, ALL_R, STRS(MA11 "::0"), 2, "error -22");      /* another resource's ID */
        gpu_done(&run);

        ck_assert_int_eq(gpu_open(&run, root, MIG_OPTS("gpu.mig_strategy=mixed", "gpu.replicas=2",
                                                       "gpu.replica_policy=pack")), 0);
        gpu_scan(&run, root);
        CHECK_PREF(&run, BUT_MA9_0, NO_STRS, 3, MA9 "::1 " MA10 "::0 " MA10 "::1");     /* the shared one first */
        /* MB12 and MA9 both have one free left then: the first in the request */
        CHECK_PREF(&run, BUT_MA9_0, STRS(MB12 "::0"), 2, MB12 "::0 " MA9 "::1");
        gpu_done(&run);
#undef ALL_R
#undef BUT_MA9_0
}
END_TEST

/* The framework's pick of `size` from the MIG devices `avail` (indices into the sorted list), must first; "a b". */
static char *framework_text(const kdp_device_list *l, const size_t *avail, size_t n_avail, const size_t *must,
                            size_t n_must, size_t size) {
        _cleanup_(kdp_preferred_index_freep) kdp_preferred_index *idx = NULL;
        size_t picked[16], n;
        char *out = calloc(1024, 1);

        ck_assert_ptr_nonnull(out);
        ck_assert_int_eq(kdp_preferred_index_new(l->devices, l->n_devices, &idx), 0);
        n = kdp_preferred_pick(idx, avail, n_avail, must, n_must, size, picked);
        for (size_t i = 0; i < n; i++)
                sprintf(out + strlen(out), "%s%s", i ? " " : "", l->devices[picked[i]].id);
        return out;
}

#define IDX(...) ((const size_t[]){ __VA_ARGS__ }), KDP_ELEMENTSOF(((const size_t[]){ __VA_ARGS__ }))
#define NO_IDX NULL, 0
#define CHECK_PICK(l, avail, must, size, expected)                                              \
        do {                                                                                    \
                _cleanup_free_ char *got_ = framework_text((l), avail, must, (size));           \
                ck_assert_str_eq(got_, (expected));                                             \
        } while (0)

/*
 * Without replicas the backend leaves MIG devices to the framework, whose locality keeps them
 * together: a GPU's MIG devices share its place in the PCI tree, so a request one GPU can hold
 * goes on one GPU, the one it fills best (fewest free), and must_include keeps its GPU.
 */
START_TEST(test_gpu_mig_preferred_keeps_a_gpus_devices_together) {
        _cleanup_(kdp_test_unlink_freep) char *fixture = NULL;
        _cleanup_(kdp_test_rm_rfp) char *root = mig_tree(&fixture);
        _cleanup_free_ char *answer = NULL;
        const kdp_device_list *l;
        gpu_run run;

        ck_assert_int_eq(gpu_open(&run, root, MIG_OPTS("gpu.mig_strategy=mixed")), 0);
        gpu_scan(&run, root);
        l = resource(&run, "nvidia.com/mig-1g.10gb");
        CHECK_IDS(&run, "nvidia.com/mig-1g.10gb", MA9 "," MA10 "," MB9 "," MB10 "," MB12);
        answer = preferred_text(&run, "nvidia.com/mig-1g.10gb", STRS(MA9, MA10, MB9, MB10, MB12), NO_STRS, 1);
        ck_assert_str_eq(answer, "error -95");          /* not the backend's to answer */
        /* 0 MA9, 1 MA10 on GPU A; 2 MB9, 3 MB10, 4 MB12 on GPU B */
        CHECK_PICK(l, IDX(0, 1, 2, 3, 4), NO_IDX, 1, MA9);                      /* GPU A: 2 free of 5 */
        CHECK_PICK(l, IDX(0, 1, 2, 3, 4), NO_IDX, 2, MA9 " " MA10);             /* fits A and B: A */
        CHECK_PICK(l, IDX(0, 1, 2, 3, 4), NO_IDX, 3, MB9 " " MB10 " " MB12);    /* only B holds 3 */
        CHECK_PICK(l, IDX(1, 2, 3, 4), NO_IDX, 1, MA10);                        /* MA9 in use: A's last */
        CHECK_PICK(l, IDX(0, 1, 2, 3, 4), IDX(2), 2, MB9 " " MB10);             /* must_include's GPU */
        CHECK_PICK(l, IDX(0, 1, 2, 3, 4), IDX(0), 3, MA9 " " MA10 " " MB9);     /* its GPU first, then B */
        CHECK_PICK(l, IDX(0, 1, 2, 3, 4), IDX(4, 0), 2, MB12 " " MA9);          /* size reached by must_include */
        CHECK_PICK(l, IDX(0, 1, 2, 3, 4), NO_IDX, 4, MA9 " " MB9 " " MB10 " " MB12);
        CHECK_PICK(l, IDX(0, 1, 2, 3, 4), NO_IDX, 6, MA9 " " MA10 " " MB9 " " MB10 " " MB12); /* all there are */
        gpu_done(&run);
}
END_TEST

static Suite *gpu_backend_suite(void) {
        Suite *s = suite_create("gpu-backend");
        TCase *tc = tcase_create("core");

        tcase_add_test(tc, test_gpu_discovers_only_gpus_of_its_drivers);
        tcase_add_test(tc, test_gpu_excluded_and_unknown_uuid_are_not_served);
        tcase_add_test(tc, test_gpu_replays_recent_xids_only);
        tcase_add_test(tc, test_gpu_xid_ignore_skips_entries_that_are_no_numbers);
        tcase_add_test(tc, test_gpu_replays_xids_right_after_boot);
        tcase_add_test(tc, test_gpu_takes_xids_from_nvml_events);
        tcase_add_test(tc, test_gpu_reads_the_kernel_log_when_nvml_fails);
        tcase_add_test(tc, test_gpu_rebind_ends_only_the_xids_before_it);
        tcase_add_test(tc, test_gpu_modes_shape_the_records);
        tcase_add_test(tc, test_gpu_rejects_bad_values_naming_where_they_came_from);
        tcase_add_test(tc, test_gpu_replicas_take_nvidias_names_and_large_counts);
        tcase_add_test(tc, test_gpu_intel_pf_with_vfs_is_not_served);
        tcase_add_test(tc, test_gpu_intel_without_its_dri_nodes_is_unhealthy);
        tcase_add_test(tc, test_gpu_declares_every_gpu_it_does_not_serve);
        tcase_add_test(tc, test_gpu_handles_pci_functions_that_cannot_be_read);
        tcase_add_test(tc, test_gpu_keeps_its_numa_node_while_the_file_is_absent);
        suite_add_tcase(s, tc);

        tc = tcase_create("mig-share");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_gpu_mig_replicas_map_back_to_their_mig_devices);
        tcase_add_test(tc, test_gpu_mig_serves_legacy_mig_uuids);
        tcase_add_test(tc, test_gpu_mig_replicas_preferred_spread_and_pack);
        tcase_add_test(tc, test_gpu_mig_preferred_keeps_a_gpus_devices_together);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return kdp_test_run(gpu_backend_suite());
}
