/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The default GetPreferredAllocation: which `size` devices of the available
 * ones to hand a container.
 *
 * Locality is a tree precomputed once per snapshot (kdp_preferred_index_new):
 *
 *   root ─ NUMA node ─ host bridge ─ root port ─ switch port ... ─ location
 *
 * built from each device's NUMA nodes (first node; "none" for no affinity) and
 * the components of its pci_path. A device sits at its location: the node of
 * its last pci_path component, or its NUMA node without pci_path; several
 * devices may share one. The root has depth 0, a NUMA node 1, a host bridge 2,
 * and so on down. The closeness of two devices is the depth of their lowest
 * common ancestor (two devices at one location: the depth of that location):
 * same switch > same root port > same host bridge > same NUMA node > across
 * NUMA nodes (0). Their distance is D − closeness for any constant D.
 *
 * The objective. M is must_include with out-of-range indices and duplicates
 * dropped, cut to its first `size`; A is the in-range available devices not
 * in M; k = min(size, |M| + |A|). If |M| = size the answer is M. Otherwise it
 * is the one set S = M ∪ F, F ⊆ A, |S| = k, that is best by these criteria,
 * each one deciding only among the sets tied on all before it:
 *   1. closest worst pair: maximise the least closeness of a pair in S (the
 *      worst pairwise distance is least), which is the depth of the lowest
 *      common ancestor of S; with k < 2 there is no pair and all sets tie;
 *   2. closest in total: maximise P = Σ closeness(a, b) over the pairs {a, b}
 *      of S (the total pairwise distance is least). A pair counts one for each
 *      non-root node above both of them, so P = Σ C(n_v, 2) over the non-root
 *      tree nodes v, n_v = |S below v|;
 *   3. best fit: maximise Q = Σ closeness(a, b) over the pairs of A \ F, what
 *      stays free, = Σ C(a_v − f_v, 2) over the non-root v with a_v = |A below
 *      v| and f_v = |F below v|: a request that fits where devices are already
 *      taken goes there and leaves whole switches, root ports and NUMA nodes
 *      to later ones;
 *   4. lowest indices: the lexicographically smallest S sorted ascending (the
 *      answer is unique).
 *
 * How (preferred.c): the index compresses the tree. A chain of nodes that
 * hold the same devices becomes one node weighted by its length, and a device
 * alone below some node goes into the bag of the lowest node above it that
 * holds two or more; devices of one bag differ only by index, so the best n of
 * a bag are its n lowest. A pick counts the available and must_include
 * devices below each node. The candidates for criterion 1 are the deepest
 * nodes that hold M and m = k − |M| devices of A: with M, the one on M's path;
 * without, every deepest node holding m; for k = 1, the root. Below a
 * candidate, a dynamic programme over (node, count ≤ m) takes each node's best
 * (P, Q) for each count from its children's. Both are sums over nodes of a
 * term fixed by the count at that node, and adding a pair keeps the
 * lexicographic order of (P, Q) pairs, so a best set is made of best sets of
 * the children. For criterion 4 each (node, count) also keeps its smallest
 * best set: for subtrees that share no device, X ≤ Y implies X ∪ Z ≤ Y ∪ Z,
 * and two unions compare by the lowest device in one and not the other. With
 * m = 1 both sums run along one path, so one walk finds the best bag.
 * Several candidates are scored without sets, highest upper bound of P first
 * and only while the bound reaches the best score (a candidate whose subtree
 * holds the same counts as the one scored before it takes its score); sets
 * are then built for the best, lowest free device first, and for another only
 * while its lowest free device is below the first device found.
 *
 * Cost of a pick, n devices, depth d, m as above: O(n) to clear and count
 * (each device once, each node once), then, under the candidates scored, a
 * merge of child c into parent p takes O(t_p × t_c) score sums, t = min(m,
 * devices of A below), and with sets also O(t_p²) to write them and O(t) per
 * tie compared. A candidate that is one bag (a switch's GPUs, one PF's VFs, a
 * resource without topology) costs O(m); one that holds exactly m is taken
 * whole. So up to a switch or a PF's worth a pick is O(n + candidates ×
 * depth); large m under a wide subtree costs up to O(n × m²) time and O(d ×
 * m²) words of scratch (bench/bench-preferred.c measures it). A pick
 * allocates its scratch per call and never writes to the index, so picks may
 * run concurrently on one index. It never fails: with fewer devices than
 * asked it returns all of them, and without memory for its scratch it
 * returns a valid set without locality.
 */
#pragma once

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "device.h"

typedef struct kdp_preferred_index kdp_preferred_index;

#define KDP_PREFERRED_TABLE_BYTES_MAX ((size_t) 2 << 20)
#define KDP_PREFERRED_OPERATIONS_MAX ((uint64_t) 1 << 24)

/* Builds the locality tree of devs[0..n); keeps no pointer into devs. */
int kdp_preferred_index_new(const kdp_device *devs, size_t n, kdp_preferred_index **ret);
kdp_preferred_index *kdp_preferred_index_free(kdp_preferred_index *idx);
KDP_DEFINE_CLEANUP_FUNC(kdp_preferred_index, kdp_preferred_index_free)

/*
 * Picks the best k device indices by the objective above into ret_picked
 * (room for `size` entries): M first (in the given order), then F in
 * ascending index order. Indices refer to the devs the index was built from;
 * out-of-range and duplicate indices in `available` are ignored. Returns k.
 */
size_t kdp_preferred_pick(const kdp_preferred_index *idx,
                          const size_t *available, size_t n_available,
                          const size_t *must_include, size_t n_must_include,
                          size_t size, size_t *ret_picked);

/* How a pick found its answer (see the limits above). */
typedef enum kdp_preferred_method {
        KDP_PREFERRED_EXACT,            /* criteria 1 to 4 */
        KDP_PREFERRED_SCORED,           /* criteria 1 to 3 */
        KDP_PREFERRED_GREEDY,           /* criterion 1 */
        KDP_PREFERRED_NO_MEMORY,        /* none: M, then A in the order given */
        _KDP_PREFERRED_METHOD_MAX,
        _KDP_PREFERRED_METHOD_INVALID = -EINVAL,
} kdp_preferred_method;

typedef struct kdp_preferred_limits {
        size_t table_bytes;             /* the tables' memory */
        uint64_t operations;            /* score operations */
        kdp_preferred_method method;    /* the most exact method to try */
} kdp_preferred_limits;

/*
 * kdp_preferred_pick under other limits than KDP_PREFERRED_TABLE_BYTES_MAX
 * and KDP_PREFERRED_OPERATIONS_MAX (for tests and bench-preferred); the
 * method taken goes into *ret_method (may be NULL).
 */
size_t kdp_preferred_pick_limited(const kdp_preferred_index *idx,
                                  const size_t *available, size_t n_available,
                                  const size_t *must_include, size_t n_must_include,
                                  size_t size, const kdp_preferred_limits *limits,
                                  size_t *ret_picked, kdp_preferred_method *ret_method);

/*
 * Tree edges between the two devices' locations: 0 for the same location, 2
 * for two functions behind one port, and so on up to twice the depth across
 * NUMA nodes (for tests and logs; the objective uses closeness, which depends
 * only on the common ancestor). Both indices must be in range.
 */
unsigned kdp_preferred_distance(const kdp_preferred_index *idx, size_t a, size_t b);
