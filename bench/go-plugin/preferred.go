// SPDX-License-Identifier: GPL-2.0-or-later

package main

import "sort"

// preferred chooses size devices the way kdpd's default GetPreferredAllocation
// does (framework/src/daemon/preferred.h) on a tree of two levels, NUMA node
// and device, which is all the example devices have (they carry no PCI path):
//
//   - every must_include device first;
//   - then, if the must_include devices share one NUMA node and it has enough
//     free devices, the rest from there;
//   - otherwise the best-fitting node: the one with the fewest free devices
//     that still holds all that is missing (nodes with must_include devices
//     first, ties by lowest device index);
//   - if no node holds enough, whole nodes in the order must-holding, most
//     free, lowest device index, until the count is reached;
//   - inside a node, the lowest device indices.
//
// It never fails: with fewer candidates than size it returns them all.
// Unknown IDs are ignored.
func (t *deviceTable) preferred(available, mustInclude []string, size int) []string {
	var picked []string
	seen := map[int]bool{}
	mustNodes := map[int64]bool{}
	for _, id := range mustInclude {
		i, ok := t.index[id]
		if !ok || seen[i] || len(picked) >= size {
			continue
		}
		seen[i] = true
		mustNodes[t.numa[i]] = true
		picked = append(picked, id)
	}
	need := size - len(picked)
	if need <= 0 {
		return picked
	}

	// Free devices per NUMA node, each list in index order.
	free := map[int64][]int{}
	for _, id := range available {
		i, ok := t.index[id]
		if !ok || seen[i] {
			continue
		}
		seen[i] = true
		free[t.numa[i]] = append(free[t.numa[i]], i)
	}
	type group struct {
		node int64
		devs []int
		must bool
	}
	var groups []group
	for node, devs := range free {
		sort.Ints(devs)
		groups = append(groups, group{node, devs, mustNodes[node]})
	}
	takeFrom := func(g group, k int) {
		for _, i := range g.devs[:k] {
			picked = append(picked, t.ids[i])
		}
	}

	// The must_include devices' own node, when it alone can finish the job.
	if len(mustNodes) == 1 {
		for _, g := range groups {
			if g.must && len(g.devs) >= need {
				takeFrom(g, need)
				return picked
			}
		}
	}

	sort.Slice(groups, func(a, b int) bool {
		x, y := groups[a], groups[b]
		if x.must != y.must {
			return x.must
		}
		if len(x.devs) != len(y.devs) {
			return len(x.devs) > len(y.devs)
		}
		return x.devs[0] < y.devs[0]
	})
	for i := 0; i < len(groups) && need > 0; i++ {
		g := groups[i]
		if len(g.devs) < need {
			takeFrom(g, len(g.devs))
			need -= len(g.devs)
			continue
		}
		// Best fit within this group (same must-ness): the fitting node
		// with the fewest free devices, lowest device index on ties.
		best := i
		for j := i + 1; j < len(groups) && groups[j].must == g.must && len(groups[j].devs) >= need; j++ {
			if len(groups[j].devs) < len(groups[best].devs) ||
				(len(groups[j].devs) == len(groups[best].devs) && groups[j].devs[0] < groups[best].devs[0]) {
				best = j
			}
		}
		takeFrom(groups[best], need)
		need = 0
	}
	return picked
}
