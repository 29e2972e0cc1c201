/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A resource's device changes, logged (added, removed, health), each health
 * problem as one condition: a device that keeps failing for one cause is
 * logged when it becomes unhealthy and when it has recovered, not at every
 * flap in between.
 *
 * The cause of a reason is its text, but for the hold's "recovering: "
 * (debounce.h): a device back from a failure is held Unhealthy with the
 * reason it failed for, so "PF ens3f0np0 link down" and "recovering: PF
 * ens3f0np0 link down" are one cause, of every backend alike. A flap is one
 * failure of the device: the one that made it unhealthy, and each time it
 * fails again while held. Logged, whatever --v says:
 *
 *   "Device became unhealthy" (warning)   healthy (or new) -> unhealthy
 *   "Device unhealthy for another reason"  its cause changed
 *   "Device recovered" flaps=N             unhealthy -> healthy, N flaps since it became unhealthy
 *   "Removed device"                       gone from the list
 *
 * and at --v=2 "Device health reason changed for the same cause" with its
 * reason and flaps so far (a held device failing again, or held again).
 * A device that became unhealthy is counted in the resource's metrics.
 *
 * The daemon keeps one kdp_health_log per resource and owns it; everything
 * runs on the loop thread. It remembers the devices unhealthy in the list
 * logged last (their flaps), nothing of the healthy ones.
 */
#pragma once

#include <stddef.h>

#include "device.h"
#include "metrics.h"

typedef struct kdp_health_spell kdp_health_spell;

typedef struct kdp_health_log {
        kdp_health_spell *spells;       /* owned; the unhealthy devices of the last list, by ID (strcmp) */
        size_t n;
} kdp_health_log;

/*
 * Logs what changed from `old` (NULL: the resource's first list) to `new`,
 * both sorted, and keeps the flaps of `new`'s unhealthy devices. `series`
 * (may be NULL) counts the devices that became unhealthy. Out of memory,
 * the lines are still written and the flaps counted anew.
 */
void kdp_health_log_update(kdp_health_log *h, const char *resource, const kdp_device_list *old,
                           const kdp_device_list *new, kdp_metrics_resource *series);

void kdp_health_log_done(kdp_health_log *h);
