// SPDX-License-Identifier: GPL-2.0-or-later

package main

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "kdp/interop/deviceplugin/v1beta1"
)

// plugin implements v1beta1.DevicePlugin for one resource. The device table
// never changes after start, so the handlers share it without locks, as
// kdpd's handlers share an immutable snapshot.
type plugin struct {
	pb.UnimplementedDevicePluginServer

	devs *deviceTable
	// Closed when the serving instance stops: open ListAndWatch streams
	// then end with status OK instead of being cut.
	stop <-chan struct{}
}

// options are sent both in RegisterRequest and by GetDevicePluginOptions.
var options = &pb.DevicePluginOptions{PreStartRequired: true, GetPreferredAllocationAvailable: true}

func (p *plugin) GetDevicePluginOptions(context.Context, *pb.Empty) (*pb.DevicePluginOptions, error) {
	return options, nil
}

// ListAndWatch sends the full list at once and then holds the stream open:
// the devices never change, and the stream must not end while we run.
func (p *plugin) ListAndWatch(_ *pb.Empty, s pb.DevicePlugin_ListAndWatchServer) error {
	if err := s.Send(&pb.ListAndWatchResponse{Devices: p.devs.list}); err != nil {
		return err
	}
	select {
	case <-p.stop:
		return nil
	case <-s.Context().Done():
		return s.Context().Err()
	}
}

func (p *plugin) GetPreferredAllocation(_ context.Context, r *pb.PreferredAllocationRequest) (*pb.PreferredAllocationResponse, error) {
	resp := &pb.PreferredAllocationResponse{}
	for _, c := range r.ContainerRequests {
		if c.AllocationSize < 0 {
			return nil, status.Errorf(codes.InvalidArgument, "negative allocation size %d", c.AllocationSize)
		}
		ids := p.devs.preferred(c.AvailableDeviceIDs, c.MustIncludeDeviceIDs, int(c.AllocationSize))
		resp.ContainerResponses = append(resp.ContainerResponses, &pb.ContainerPreferredAllocationResponse{DeviceIDs: ids})
	}
	return resp, nil
}

func (p *plugin) Allocate(_ context.Context, r *pb.AllocateRequest) (*pb.AllocateResponse, error) {
	resp := &pb.AllocateResponse{}
	for _, c := range r.ContainerRequests {
		if err := p.devs.check(c.DevicesIds); err != nil {
			return nil, err
		}
		resp.ContainerResponses = append(resp.ContainerResponses, p.devs.exampleResponse(c.DevicesIds))
	}
	return resp, nil
}

func (p *plugin) PreStartContainer(_ context.Context, r *pb.PreStartContainerRequest) (*pb.PreStartContainerResponse, error) {
	if err := p.devs.check(r.DevicesIds); err != nil {
		return nil, err
	}
	return &pb.PreStartContainerResponse{}, nil
}

// check refuses a request naming a device we do not have (NOT_FOUND, as
// kdpd maps -ENOENT).
func (t *deviceTable) check(ids []string) error {
	for _, id := range ids {
		if _, ok := t.index[id]; !ok {
			return status.Error(codes.NotFound, fmt.Sprintf("unknown device %q", id))
		}
	}
	return nil
}
