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
 * depth); large m under a wide subtree would cost up to O(n × m²) time and
 * O(d × m²) words of tables, hence the limits below. A pick allocates its
 * scratch per call and never writes to the index, so picks may run
 * concurrently on one index. It never fails: with fewer devices than asked
 * it returns all of them, and without memory for its scratch it returns a
 * valid set without locality.
 *
 * Limits. kdpd answers GetPreferredAllocation on its completion queue
 * thread, to any local client of the plugin socket, under a memory limit
 * that the OOM killer enforces (64 MiB in deploy/): one pick may neither
 * allocate nor compute without bound. Before allocating any table, a pick
 * computes from the counts the bytes of tables and the score operations
 * (score sums of merges, table rows and set entries written) each method
 * needs below the candidates, and takes the first that fits both
 * KDP_PREFERRED_TABLE_BYTES_MAX and KDP_PREFERRED_OPERATIONS_MAX:
 *   exact   the tables with sets described above: criteria 1 to 4. The
 *           steps of tie comparisons are counted as they are made too; a
 *           pick whose count passes the limit drops its tables and goes on
 *           to the scored method;
 *   scored  tables of scores only, O(d × m), and for each merge below the
 *           candidate taken the count its child gets for each count (4
 *           bytes each), traced back from the candidate's table. Criteria 1
 *           to 3 are exact. Criterion 4 only as far as two local rules go:
 *           of the tied candidates the one with the lowest free device, and
 *           of the tied splits of a merge the one giving more to the side
 *           with the lowest free device; the answer is a best set by 1 to 3,
 *           not always the lowest one;
 *   greedy  no tables, O(n log n) time: for each candidate a fill that takes
 *           children whole while they fit, those holding most of M and A
 *           first, and puts the rest into one more child (most of M, then
 *           fewest free, then lowest device), followed down, or into the
 *           node's own bag when no child is left or when one device is left
 *           and no child holds a device of M; of the candidates, the one
 *           whose fill scores best by criteria 2 and 3, then the one with the
 *           lowest free device. Criterion 1 is exact: the set lies below a
 *           deepest candidate. Criteria 2 to 4 are not promised.
 * Answered exactly without tables, whatever the limits: size 0, |M| = size,
 * no more free devices than asked (all of them), m = 1 (one walk), a single
 * candidate holding exactly m (taken whole), and candidates that are all
 * single bags (the best one's lowest m: a bag is filled one way only).
 * Measured at 4096 devices on bench-preferred's trees (GPUs 8 per switch,
 * VFs 64 per PF), every m with every device available and with a random
 * half: exact up to m = 512 (all available) and 474 (half), scored above,
 * never greedy; one pick took at most 2.2 MB of heap and 19 ms of CPU here.
 * unit/preferred asserts the exact method for GPUs 1 to 16 and VFs 1 to 64,
 * with and without must_include, on every device and on random halves. At
 * 32768 devices of the same shape, m = 1000 to 30000 went greedy, each in
 * under 2 ms. Besides the tables a pick allocates arrays linear in the
 * index: at most 17 bytes per device and 184 per kept node (about 180 KB at
 * 4096 devices). kdp_preferred_pick_limited takes other limits and tells
 * which method answered.
 */
#pragma once

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "device.h"

typedef struct kdp_preferred_index kdp_preferred_index;

/*
 * The most bytes of tables one pick allocates: a thirtieth of the 64 MiB
 * the DaemonSet grants kdpd, whose peak RSS is about 12 MB at 4096 devices;
 * enough for the exact method up to about 500 devices picked on such a node.
 */
#define KDP_PREFERRED_TABLE_BYTES_MAX ((size_t) 2 << 20)
/*
 * The most score operations one method of a pick makes (a pick tries at
 * most two methods with tables): 16.8 million, 1.3 to 2 ns each here, so
 * that the completion queue thread answers other calls within tens of ms;
 * enough for the scored method on any request at 4096 devices measured.
 */
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
