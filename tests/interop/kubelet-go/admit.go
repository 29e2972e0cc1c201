// SPDX-License-Identifier: GPL-2.0-or-later

package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	pb "kdp/interop/deviceplugin/v1beta1"
)

// The kubelet's limit on PreStartContainer (KubeletPreStartContainerRPCTimeoutInSecs).
const preStartTimeout = 30 * time.Second

// admitSpec is what one -admit flag asks for.
type admitSpec struct {
	resource string
	n        int
}

// admit plays the device manager's part of admitting one container with
// topology-manager policy "none" (the kubelet default), so every free device
// is a candidate and none is "aligned" (docs/kubelet.md §4.2 step 9, §5, §6):
//
//  1. available = healthy − allocated by earlier admissions; none healthy,
//     or fewer than asked, fails admission;
//  2. GetPreferredAllocation(available, must_include = {}, size = n) if the
//     plugin advertised it; its answer ∩ available is taken first, in its
//     order;
//  3. the rest comes from available, in sorted order;
//  4. Allocate with exactly one container request; an error or an empty
//     response fails admission; only the first container response counts;
//  5. PreStartContainer with every allocated ID if the plugin requires it
//     (in the kubelet this runs later, before the container starts).
//
// The outcome is printed once the whole admission is done.
func (k *kubelet) admit(c *pluginClient, a *admission) {
	lines, err := k.runAdmission(c, a)

	k.mu.Lock()
	defer k.mu.Unlock()
	if err != nil {
		k.out.event("admit-failed resource=%s error=%s", esc(a.resource), esc(err.Error()))
		k.nFailed++
	} else {
		k.out.lines(lines...)
	}
	if k.nDone++; k.nDone == len(k.admits) {
		close(k.admitsDone)
	}
}

// runAdmission does steps 1-5 and returns the event lines of a success.
func (k *kubelet) runAdmission(c *pluginClient, a *admission) ([]string, error) {
	available, err := k.available(a)
	if err != nil {
		return nil, err
	}

	var preferred []string
	if c.opts.GetPreferredAllocationAvailable {
		// No deadline: the kubelet uses context.Background() here.
		resp, err := c.api.GetPreferredAllocation(context.Background(), &pb.PreferredAllocationRequest{
			ContainerRequests: []*pb.ContainerPreferredAllocationRequest{{
				AvailableDeviceIDs: available,
				AllocationSize:     int32(a.n),
			}},
		})
		if err != nil {
			return nil, fmt.Errorf("device plugin GetPreferredAllocation rpc failed with err: %v", err)
		}
		if len(resp.ContainerResponses) > 0 {
			preferred = resp.ContainerResponses[0].DeviceIDs
		}
	}
	chosen := choose(available, preferred, a.n)
	if len(chosen) < a.n {
		return nil, fmt.Errorf("unexpectedly allocated less resources than required. Requested: %d, Got: %d",
			a.n, len(chosen))
	}

	resp, err := c.api.Allocate(context.Background(), &pb.AllocateRequest{
		ContainerRequests: []*pb.ContainerAllocateRequest{{DevicesIds: chosen}},
	})
	if err != nil {
		return nil, err
	}
	if len(resp.ContainerResponses) == 0 {
		return nil, errors.New("no containers return in allocation response")
	}
	k.mu.Lock()
	for _, id := range chosen {
		k.resources[a.resource].allocated[id] = true
	}
	k.mu.Unlock()

	if c.opts.PreStartRequired {
		ctx, cancel := context.WithTimeout(context.Background(), preStartTimeout)
		defer cancel()
		if _, err := c.api.PreStartContainer(ctx, &pb.PreStartContainerRequest{DevicesIds: chosen}); err != nil {
			return nil, fmt.Errorf("device plugin PreStartContainer rpc failed with err: %v", err)
		}
	}

	lines := []string{fmt.Sprintf("admitted resource=%s n=%d preferred=%s allocated=%s",
		esc(a.resource), a.n, joinIDs(preferred), joinIDs(chosen))}
	for _, l := range allocLines(resp.ContainerResponses[0]) {
		lines = append(lines, fmt.Sprintf("alloc resource=%s %s", esc(a.resource), l))
	}
	if c.opts.PreStartRequired {
		lines = append(lines, fmt.Sprintf("prestart resource=%s ok", esc(a.resource)))
	}
	return lines, nil
}

// available returns the healthy devices of the resource no earlier
// admission took, sorted.
func (k *kubelet) available(a *admission) ([]string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	res := k.resources[a.resource]
	if res == nil || len(res.healthy) == 0 {
		return nil, fmt.Errorf("no healthy devices present; cannot allocate unhealthy devices %s", a.resource)
	}
	var available []string
	for _, id := range res.healthy {
		if !res.allocated[id] {
			available = append(available, id)
		}
	}
	if len(available) < a.n {
		return nil, fmt.Errorf("requested number of devices unavailable for %s. Requested: %d, Available: %d",
			a.resource, a.n, len(available))
	}
	return available, nil
}

// choose takes preferred ∩ available first, in the plugin's order, then the
// rest of available, n in all; the result is sorted.
func choose(available, preferred []string, n int) []string {
	isAvailable := map[string]bool{}
	for _, id := range available {
		isAvailable[id] = true
	}
	var chosen []string
	taken := map[string]bool{}
	for _, list := range [][]string{preferred, available} {
		for _, id := range list {
			if len(chosen) < n && isAvailable[id] && !taken[id] {
				taken[id] = true
				chosen = append(chosen, id)
			}
		}
	}
	sort.Strings(chosen)
	return chosen
}

// allocLines renders one container response as the text after
// "alloc resource=R ": env, device, mount, annotation, cdi, each group
// sorted, values escaped, empty fields as "-".
func allocLines(r *pb.ContainerAllocateResponse) []string {
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	groups := make([][]string, 5)
	for _, key := range sortedKeys(r.Envs) {
		groups[0] = append(groups[0], fmt.Sprintf("env %s=%s", key, r.Envs[key]))
	}
	for _, d := range r.Devices {
		groups[1] = append(groups[1], fmt.Sprintf("device %s %s %s", dash(d.HostPath), dash(d.ContainerPath), dash(d.Permissions)))
	}
	for _, m := range r.Mounts {
		mode := "rw"
		if m.ReadOnly {
			mode = "ro"
		}
		groups[2] = append(groups[2], fmt.Sprintf("mount %s %s %s", dash(m.HostPath), dash(m.ContainerPath), mode))
	}
	for _, key := range sortedKeys(r.Annotations) {
		groups[3] = append(groups[3], fmt.Sprintf("annotation %s=%s", key, r.Annotations[key]))
	}
	for _, cdi := range r.CdiDevices {
		groups[4] = append(groups[4], "cdi "+dash(cdi.Name))
	}
	var lines []string
	for _, g := range groups {
		sort.Strings(g)
		for _, l := range g {
			lines = append(lines, esc(l))
		}
	}
	return lines
}
