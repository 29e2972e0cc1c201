/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The health an FPGA shows only in sysfs (README.md, "Health"): nothing sends an event when
 * an error register, afu_id, an XRT status file or a hwmon alarm changes, so fpga.c reads
 * these at every scan (a periodic one included). Each function fills an fpga_health: the
 * reasons of what is wrong, "; "-joined, and apart from them what passes by itself (afu_id
 * busy while the port is disabled for PR or reset, XRT's dev_offline, rom.* re-created in a
 * reset), which fpga.c holds off for busy_hold_s. Reads only; never opens a device node.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdp/backend.h>
#include <kdp/cleanup.h>
#include <kdp/health.h>
#include <kdp/pci.h>

#include "fpga.h"

void fpga_health_add(char reason[FPGA_REASON_MAX], const char *text) {
        size_t n = strlen(reason), k;

        if (n && n + 2 < FPGA_REASON_MAX) {
                memcpy(reason + n, "; ", 2);
                n += 2;
        }
        k = strnlen(text, FPGA_REASON_MAX - 1 - n);
        memcpy(reason + n, text, k);
        reason[n + k] = '\0';
}

static void transient(fpga_health *h, const char *text) {
        h->transient = true;
        fpga_health_add(h->transient_reason, text);
}

/* A number sysfs printed ("0x4", "1"): 0 and the value, or -EINVAL. */
static int parse_number(const char *text, unsigned long long *ret) {
        char *end;
        unsigned long long v;

        errno = 0;
        v = strtoull(text, &end, 0);
        if (errno || end == text || *end)
                return -EINVAL;
        *ret = v;
        return 0;
}

/* An error mask of <rel>/<file>: reported when readable and not 0; a missing file is no check. */
static void check_mask(const kdp_backend_ctx *ctx, const char *rel, const char *file, const char *what,
                       fpga_health *h) {
        _cleanup_free_ char *text = NULL;
        unsigned long long v;
        char msg[FPGA_REASON_MAX];

        if (fpga_discover_read_attr(ctx, rel, file, &text) < 0 || parse_number(text, &v) < 0 || v == 0)
                return;
        snprintf(msg, sizeof(msg), "%s %s 0x%llx", what, file, v);
        fpga_health_add(h->reason, msg);
}

/* The device node, relative to the dev root, checked as kdp_health_check_dev_node() does. */
static void check_node(const kdp_backend_ctx *ctx, const char *host_path, fpga_health *h) {
        _cleanup_free_ char *root = NULL, *why = NULL;
        size_t n;

        if (!host_path[0] || kdp_backend_path(ctx, KDP_PATH_DEV, "", &root) < 0)
                return;
        n = strlen(root);
        while (n > 0 && root[n - 1] == '/')
                n--;
        if (strncmp(host_path, root, n) != 0 || host_path[n] != '/')
                return;
        if (kdp_health_check_dev_node(ctx, host_path + n + 1, &why) == KDP_UNHEALTHY && why)
                fpga_health_add(h->reason, why);
}

static void check_hwmon(const kdp_backend_ctx *ctx, const fpga_fme *fme, fpga_health *h) {
        fpga_discover_names mons = { 0 };
        char rel[FPGA_DEVPATH_MAX + 16];

        snprintf(rel, sizeof(rel), "%s/hwmon", fme->devpath);
        if (fpga_discover_list(ctx, rel, "hwmon", &mons) < 0)
                return;
        for (size_t i = 0; i < mons.n; i++) {
                static const char *const alarms[] = { "temp1_crit_alarm", "power1_crit_alarm" };
                char mon[FPGA_DEVPATH_MAX + 2 * FPGA_SYSNAME_MAX];
                _cleanup_free_ char *name = NULL;

                snprintf(mon, sizeof(mon), "%s/%s", rel, mons.names[i]);
                (void) fpga_discover_read_attr(ctx, mon, "name", &name);
                for (size_t k = 0; k < KDP_ELEMENTSOF(alarms); k++) {
                        _cleanup_free_ char *text = NULL;
                        char msg[FPGA_REASON_MAX];

                        if (fpga_discover_read_attr(ctx, mon, alarms[k], &text) < 0 || strcmp(text, "1") != 0)
                                continue;
                        snprintf(msg, sizeof(msg), "%s %s 1", name ? name : mons.names[i], alarms[k]);
                        fpga_health_add(h->reason, msg);
                }
        }
        fpga_discover_names_done(&mons);
}

/* The FPGA manager's status after a PR: empty unless the last one failed. */
static void check_manager(const kdp_backend_ctx *ctx, const fpga_fme *fme, fpga_health *h) {
        fpga_discover_names mgrs = { 0 };

        if (fpga_discover_list(ctx, fme->devpath, "dfl-fme-mgr.", &mgrs) < 0)
                return;
        for (size_t i = 0; i < mgrs.n; i++) {
                char rel[FPGA_DEVPATH_MAX + FPGA_SYSNAME_MAX + 16];
                fpga_discover_names fpgas = { 0 };

                snprintf(rel, sizeof(rel), "%s/%s/fpga_manager", fme->devpath, mgrs.names[i]);
                if (fpga_discover_list(ctx, rel, "fpga", &fpgas) < 0)
                        continue;
                for (size_t k = 0; k < fpgas.n; k++) {
                        char dev[sizeof(rel) + FPGA_SYSNAME_MAX];
                        _cleanup_free_ char *status = NULL;
                        char msg[FPGA_REASON_MAX];

                        snprintf(dev, sizeof(dev), "%s/%s", rel, fpgas.names[k]);
                        if (fpga_discover_read_attr(ctx, dev, "status", &status) < 0 || !status[0])
                                continue;
                        for (char *p = status; *p; p++)
                                if (*p == '\n')
                                        *p = ',';
                        snprintf(msg, sizeof(msg), "last partial reconfiguration failed: %s", status);
                        fpga_health_add(h->reason, msg);
                }
                fpga_discover_names_done(&fpgas);
        }
        fpga_discover_names_done(&mgrs);
}

void fpga_health_fme(const kdp_backend_ctx *ctx, const fpga_fme *fme, fpga_health *h) {
        static const char *const masks[] = { "errors/catfatal_errors", "errors/nonfatal_errors", "errors/fme_errors",
                                             "errors/pcie0_errors", "errors/pcie1_errors" };
        char msg[FPGA_REASON_MAX];

        for (size_t i = 0; i < KDP_ELEMENTSOF(masks); i++)
                check_mask(ctx, fme->devpath, masks[i], "FME", h);
        if (fme->interface_err < 0) {
                snprintf(msg, sizeof(msg), "PR region interface ID unreadable: %s", strerror(-fme->interface_err));
                fpga_health_add(h->reason, msg);
        } else if (fpga_name_id_all_f(fme->interface_id))
                fpga_health_add(h->reason, "PR region interface ID all f (firmware crashed)");
        check_hwmon(ctx, fme, h);
        check_manager(ctx, fme, h);
        check_node(ctx, fme->devnode, h);
}

void fpga_health_port(const kdp_backend_ctx *ctx, const fpga_port *port, fpga_health *h) {
        char msg[FPGA_REASON_MAX];

        if (port->afu_err == -ENOENT)
                fpga_health_add(h->reason, "afu_id missing");
        else if (port->afu_err < 0) {
                snprintf(msg, sizeof(msg), "afu_id unreadable: %s", strerror(-port->afu_err));
                transient(h, msg);      /* EBUSY while the port is disabled for PR or a reset */
        } else if (fpga_name_id_all_f(port->afu_id))
                fpga_health_add(h->reason, "no AFU loaded (afu_id all f)");
        check_mask(ctx, port->devpath, "errors/errors", "port", h);
        if (!port->devnode[0])
                fpga_health_add(h->reason, "no device node");
        check_node(ctx, port->devnode, h);
}

/* An XRT status file of a PCI function as a number; -errno when unreadable or malformed. */
static int read_xrt_number(const kdp_backend_ctx *ctx, const char *address, const char *attr,
                           unsigned long long *ret) {
        _cleanup_free_ char *text = NULL;
        int r = kdp_pci_read_attr(ctx, address, attr, &text);

        return r < 0 ? r : parse_number(text, ret);
}

void fpga_health_xrt(const kdp_backend_ctx *ctx, const fpga_xrt *x, bool want_mgmt, fpga_health *h) {
        unsigned long long v;
        char msg[FPGA_REASON_MAX];

        if (read_xrt_number(ctx, x->user, "dev_offline", &v) >= 0 && v)
                transient(h, "offline (dev_offline 1: reset or hot plug in progress)");
        else if (x->mgmt[0] && read_xrt_number(ctx, x->mgmt, "dev_offline", &v) >= 0 && v)
                transient(h, "management PF offline (dev_offline 1)");
        if (read_xrt_number(ctx, x->user, "ready", &v) >= 0 && !v)
                fpga_health_add(h->reason, "not ready (ready 0x0)");
        if (x->mgmt[0] && read_xrt_number(ctx, x->mgmt, "ready", &v) >= 0 && !v)
                fpga_health_add(h->reason, "management PF not ready (ready 0)");
        if (read_xrt_number(ctx, x->user, "device_bad_state", &v) >= 0 && v)
                fpga_health_add(h->reason, "kernel scheduler in a bad state (device_bad_state 1)");
        if (read_xrt_number(ctx, x->user, "mig_calibration", &v) >= 0 && !v)
                fpga_health_add(h->reason, "DDR not calibrated (mig_calibration 0x0)");
        if (x->rom_err < 0) {
                snprintf(msg, sizeof(msg), "shell ROM (rom.*) unreadable: %s", strerror(-x->rom_err));
                transient(h, msg);      /* re-created with a new number around a reset */
        }
        if (!x->render_node[0])
                fpga_health_add(h->reason, "no DRM render node");
        check_node(ctx, x->render_node, h);
        if (want_mgmt)
                check_node(ctx, x->mgmt_node, h);
}
