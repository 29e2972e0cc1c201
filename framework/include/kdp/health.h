/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Health checks a backend's probe() can run on a PCI device, under the
 * configured roots. Each returns KDP_HEALTHY, or KDP_UNHEALTHY with a reason a
 * person can act on in *ret_reason (free()), or a negative errno when the
 * check itself could not run.
 *
 * AER counters only count up, so the check compares with a baseline the
 * backend keeps per device (kdp_health_pci): a fatal count that rose since
 * the baseline is Unhealthy until the device is reset (the baseline is
 * re-taken then: kdp_health_pci_rebase()). A count below the baseline means
 * the device was re-added with fresh counters; the baseline follows it.
 *
 * *ret_reason is set to NULL when the result is KDP_HEALTHY.
 */
#pragma once

#include <stdint.h>

#include <kdp/backend.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kdp_health_pci_checks {
        KDP_HEALTH_PCI_PRESENT = 1 << 0,         /* the device is still in sysfs */
        KDP_HEALTH_PCI_DRIVER = 1 << 1,          /* bound to the expected driver */
        KDP_HEALTH_PCI_ENABLED = 1 << 2,         /* `enable` is not 0 */
        KDP_HEALTH_PCI_AER_FATAL = 1 << 3,       /* aer_dev_fatal TOTAL_ERR_FATAL has not risen */
        KDP_HEALTH_PCI_AER_NONFATAL = 1 << 4,    /* aer_dev_nonfatal TOTAL_ERR_NONFATAL has not risen */
        KDP_HEALTH_PCI_ALL = (1 << 5) - 1,
} kdp_health_pci_checks;

typedef struct kdp_health_pci {
        uint64_t aer_fatal_base;                /* TOTAL_ERR_FATAL at the baseline */
        uint64_t aer_nonfatal_base;
        int based;                              /* 0 until the first check took the baseline */
} kdp_health_pci;

/*
 * Runs `checks` (KDP_HEALTH_PCI_*) and reports every failure, joined with
 * "; ": "driver unbound (expected nvidia)", "bound to vfio-pci instead of
 * nvidia", "disabled (enable=0)", "AER fatal errors rose from 0 to 2". A
 * device gone from sysfs is only "device removed" (any non-zero `checks`). A
 * missing `enable` or AER file skips that check. The first AER check takes the
 * baseline. `state` may be NULL when no AER check is asked for.
 * `expected_driver` NULL: any driver counts as bound.
 */
int kdp_health_pci_check(const kdp_backend_ctx *ctx, const char *address, const char *expected_driver,
                         unsigned checks, kdp_health_pci *state, char **ret_reason);
/* Takes the current counters as the new baseline (after a reset or rebind). */
int kdp_health_pci_rebase(const kdp_backend_ctx *ctx, const char *address, kdp_health_pci *state);

/*
 * KDP_HEALTHY if <dev root>/<rel> exists and is a character device. When the
 * dev root is not a device filesystem (its `null` is not a character device:
 * a plain fixture tree), a regular file counts as a node too.
 * Reasons: "device node <path> missing", "device node <path> is not a character device".
 */
int kdp_health_check_dev_node(const kdp_backend_ctx *ctx, const char *rel, char **ret_reason);
/*
 * KDP_HEALTHY if the network interface's carrier is up (class/net/<ifname>/carrier
 * is 1 and operstate is "up", or "unknown" for drivers that do not track it).
 * Otherwise "link down (carrier 0, operstate down)"; a value that cannot be read
 * (carrier while administratively down) shows as "unreadable". -ENOENT when
 * the interface is not there (a VF's netdev moves into the pod's namespace).
 */
int kdp_health_check_net_link(const kdp_backend_ctx *ctx, const char *ifname, char **ret_reason);

#ifdef __cplusplus
}
#endif
