/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Health hysteresis: a device that flaps is reported Unhealthy at its first
 * failure and Healthy again only after it has stayed healthy for the hold
 * time, so the kubelet sees one transition each way, not one per flap. A
 * device that disappears counts as a failure ("removed"), so one that comes
 * back within the hold time is held too (a link that drops and retrains). A
 * device never seen failing is reported as it is.
 *
 * A held device's reason is "recovering: <its last reason>": the cause it
 * failed for, still in force for the kubelet (kdp_debounce_held_cause()).
 *
 * Owned by the daemon, used on the loop thread only. Keys are (resource, ID);
 * an entry is forgotten once its hold time is over.
 */
#pragma once

#include <stdint.h>

#include <kdp/cleanup.h>

#include "device.h"

typedef struct kdp_debounce kdp_debounce;

int kdp_debounce_new(uint64_t hold_ms, kdp_debounce **ret);
kdp_debounce *kdp_debounce_free(kdp_debounce *db);
KDP_DEFINE_CLEANUP_FUNC(kdp_debounce, kdp_debounce_free)

/*
 * Rewrites, in a finished (sorted) list, the health of devices still inside
 * their hold time to Unhealthy, with the reason "recovering: <last reason>".
 * `old` (may be NULL) is the list reported before, to notice removals.
 * `now_ms` and the result are in ms of kdp_backend_now_usec()'s clock. Returns
 * the time at which the next held device may be reported healthy (the caller
 * rescans then), or 0 if none is held.
 */
uint64_t kdp_debounce_apply(kdp_debounce *db, const kdp_device_list *old, kdp_device_list *list,
                            uint64_t now_ms);

/* The reason a held device failed for: `reason` without the hold's "recovering: "; NULL when it is no held reason. */
const char *kdp_debounce_held_cause(const char *reason);
