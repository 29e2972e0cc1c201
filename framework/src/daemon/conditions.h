/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What a backend's scans report besides its devices (the notes of the device
 * tree: devices not served, refused resource names, resources whose NUMA
 * affinity was dropped, resources another backend serves), logged as
 * conditions: one line when a condition starts, one when it changes (another
 * reason, other counts) and one when it ends, nothing on a scan that finds
 * it unchanged. So a rescan every second logs nothing while nothing changes.
 *
 * The daemon keeps one kdp_conditions per backend and owns it; everything
 * runs on the loop thread.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "device-tree.h"
#include "not-served.h"

typedef struct kdp_conditions {
        kdp_tree_note *notes;           /* owned; sorted by kdp_device_tree_note_compare() */
        size_t n;
} kdp_conditions;

/* Whether the device named `address` (a PCI address or ID) is served now; tells "served" from "gone". */
typedef bool (*kdp_conditions_served_fn)(const char *address, void *userdata);

/*
 * Takes the notes of `tree` (leaving it none), logs each condition that
 * started, changed or ended since the previous update of `c`, and keeps them.
 * Levels do not depend on --v: a device not served and every end is info, a
 * refused resource name and dropped NUMA affinity a warning, a resource
 * another backend serves an error. `served` may be NULL (every device that
 * stops being not served is then reported gone).
 * Returns 1 when the set of devices not served changed, else 0.
 */
int kdp_conditions_update(kdp_conditions *c, const char *backend, kdp_device_tree *tree,
                          kdp_conditions_served_fn served, void *userdata);

/* The devices not served, by address; the array is the caller's (free()), its strings point into `c`. */
int kdp_conditions_not_served(const kdp_conditions *c, kdp_not_served_entry **ret, size_t *ret_n);

void kdp_conditions_done(kdp_conditions *c);
