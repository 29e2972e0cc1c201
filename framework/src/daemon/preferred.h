/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The default GetPreferredAllocation: which `size` devices of the available
 * ones to hand a container.
 *
 * Locality is a tree precomputed once per snapshot (kdp_preferred_index_new):
 *
 *   root ─ NUMA node ─ host bridge ─ root port ─ switch port ... ─ device(s)
 *
 * built from each device's NUMA nodes (first node; "none" for no affinity) and
 * the components of its pci_path. Two devices are the closer the deeper their
 * common ancestor: same switch < same root port < same host bridge < same NUMA
 * node < anything. Devices without pci_path hang directly under their NUMA node.
 *
 * A pick (kdp_preferred_pick) counts the available devices per tree node, then
 * takes every must_include device, then fills the rest from the smallest
 * subtree that contains all must_include devices and enough free ones,
 * descending into the child subtree that fits best (the smallest one that still
 * holds what is missing; subtrees holding must_include devices first; ties by
 * lowest device index). It never fails: with fewer devices than asked it
 * returns all of them, and without memory for its scratch array it returns a
 * valid set without locality. Cost is O(n_available × depth) plus sorting the
 * children of the nodes it descends through; it allocates one scratch array
 * per call and never writes to the index, so picks may run concurrently on
 * one index.
 */
#pragma once

#include <stddef.h>

#include "device.h"

typedef struct kdp_preferred_index kdp_preferred_index;

/* Builds the locality tree of devs[0..n); keeps no pointer into devs. */
int kdp_preferred_index_new(const kdp_device *devs, size_t n, kdp_preferred_index **ret);
kdp_preferred_index *kdp_preferred_index_free(kdp_preferred_index *idx);
KDP_DEFINE_CLEANUP_FUNC(kdp_preferred_index, kdp_preferred_index_free)

/*
 * Picks min(size, |available ∪ must_include|) device indices into ret_picked
 * (room for `size` entries): every must_include index first (in the given
 * order, duplicates dropped, at most `size`), then the fill in ascending
 * index order. Indices refer to
 * the devs the index was built from; out-of-range and duplicate indices in
 * `available` are ignored. Returns the number written.
 */
size_t kdp_preferred_pick(const kdp_preferred_index *idx,
                          const size_t *available, size_t n_available,
                          const size_t *must_include, size_t n_must_include,
                          size_t size, size_t *ret_picked);

/*
 * Tree edges between the two devices' locations (their last pci_path
 * component, or their NUMA node without one): 0 for the same location, 2 for
 * two functions behind one port, and so on up to twice the depth across NUMA
 * nodes (for tests and logs). Both indices must be in range.
 */
unsigned kdp_preferred_distance(const kdp_preferred_index *idx, size_t a, size_t b);
