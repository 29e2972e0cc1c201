// SPDX-License-Identifier: GPL-2.0-or-later

package main

import (
	"fmt"
	"strings"

	pb "kdp/interop/deviceplugin/v1beta1"
)

// What kdpd's example backend (plugins/example) serves, rebuilt in Go so the
// benchmark compares the frameworks and not the work done per call. Keep this
// file in step with plugins/example/example.c.

const exampleResource = "example.com/widget"

// exampleNUMANodes is how many NUMA nodes the widgets are spread over, round
// robin: widget-0 on node 0, widget-1 on node 1, widget-2 on node 0, ...
const exampleNUMANodes = 2

// deviceTable is the immutable device list of one resource, with the lookups
// the handlers need.
type deviceTable struct {
	ids   []string       // by index
	numa  []int64        // first NUMA node, by index
	index map[string]int // ID -> index
	list  []*pb.Device   // the ListAndWatch payload
}

func exampleDevices(n int) *deviceTable {
	t := &deviceTable{index: make(map[string]int, n)}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("widget-%d", i)
		node := int64(i % exampleNUMANodes)
		t.ids = append(t.ids, id)
		t.numa = append(t.numa, node)
		t.index[id] = i
		t.list = append(t.list, &pb.Device{
			ID:       id,
			Health:   "Healthy",
			Topology: &pb.TopologyInfo{Nodes: []*pb.NUMANode{{ID: node}}},
		})
	}
	return t
}

// exampleResponse is the example backend's answer for one container (its
// default, without CDI): every widget's own record (a device node and its
// WIDGET_<n> variable), plus the request-wide EXAMPLE_WIDGETS variable and
// annotation.
func (t *deviceTable) exampleResponse(ids []string) *pb.ContainerAllocateResponse {
	r := &pb.ContainerAllocateResponse{
		Envs:        map[string]string{"EXAMPLE_WIDGETS": strings.Join(ids, ",")},
		Annotations: map[string]string{"example.com/widgets": strings.Join(ids, ",")},
	}
	for _, id := range ids {
		n := strings.TrimPrefix(id, "widget-")
		r.Envs["WIDGET_"+n] = id
		r.Devices = append(r.Devices, &pb.DeviceSpec{
			HostPath:      "/dev/null",
			ContainerPath: "/dev/widget" + n,
			Permissions:   "rw",
		})
	}
	return r
}
