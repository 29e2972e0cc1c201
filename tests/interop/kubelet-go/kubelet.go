// SPDX-License-Identifier: GPL-2.0-or-later

package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "kdp/interop/deviceplugin/v1beta1"
)

const (
	kubeletSocket    = "kubelet.sock"
	checkpointFile   = "kubelet_internal_checkpoint"
	supportedVersion = "v1beta1"
	healthy          = "Healthy"
	// The kubelet's blocking dial-back limit (plugin/v1beta1/client.go).
	dialTimeout = 10 * time.Second
)

// kubelet is the device manager: the Registration service, the resources it
// has heard of and the admissions it was asked to play.
type kubelet struct {
	pb.UnimplementedRegistrationServer

	dir    string
	out    *printer
	srv    *grpc.Server
	served chan error // Serve's result

	// mu guards everything below and every resource; events that report
	// a resource's state are printed under it, in the order of the changes.
	mu        sync.Mutex
	resources map[string]*resource
	admits    []*admission
	// Closed when every admission has run (see run's -exit-after-admit).
	admitsDone chan struct{}
	nDone      int
	nFailed    int
}

// resource is what the kubelet knows of one extended resource. It outlives
// registrations: devices allocated under one stay allocated under the next.
type resource struct {
	name      string
	current   *pluginClient // the live registration, nil after its stream ended
	healthy   []string      // sorted, unique
	unhealthy []string      // sorted, unique
	numa      []string      // "ID:n,m" per device with a topology, sorted
	allocated map[string]bool
}

// admission is one pod with one container asking for n devices of resource.
type admission struct {
	resource string
	n        int
	claimed  bool
}

// pluginClient is one registration: the connection back to the plugin.
type pluginClient struct {
	resource string
	endpoint string
	conn     *grpc.ClientConn
	api      pb.DevicePluginClient
	opts     *pb.DevicePluginOptions
}

func newKubelet(dir string, out *printer, admits []admitSpec) *kubelet {
	k := &kubelet{dir: dir, out: out, resources: map[string]*resource{}, admitsDone: make(chan struct{})}
	for _, a := range admits {
		k.admits = append(k.admits, &admission{resource: a.resource, n: a.n})
	}
	if len(k.admits) == 0 {
		close(k.admitsDone)
	}
	return k
}

// Register follows the kubelet's (*server).Register from 1.25 on: validate,
// dial back, ask for the options, and answer only then. Errors are plain
// errors, so the plugin sees code Unknown with the kubelet's own text.
func (k *kubelet) Register(ctx context.Context, r *pb.RegisterRequest) (*pb.Empty, error) {
	if r.Version != supportedVersion {
		return nil, k.reject(r, fmt.Errorf("requested API version %q is not supported by kubelet. Supported version is %q",
			r.Version, []string{supportedVersion}))
	}
	if !isExtendedResourceName(r.ResourceName) {
		return nil, k.reject(r, fmt.Errorf("the ResourceName %q is invalid", r.ResourceName))
	}
	// The endpoint is joined to the directory and nothing else is checked.
	// From 1.34 the Register call's own context bounds the dial-back and
	// GetDevicePluginOptions, on top of the 10 s dial limit.
	conn, err := dialPlugin(ctx, filepath.Join(k.dir, r.Endpoint))
	if err != nil {
		return nil, k.reject(r, fmt.Errorf("failed to dial device plugin: %v", err))
	}
	api := pb.NewDevicePluginClient(conn)
	opts, err := api.GetDevicePluginOptions(ctx, &pb.Empty{})
	if err != nil {
		conn.Close()
		return nil, k.reject(r, fmt.Errorf("failed to get device plugin options: %v", err))
	}
	c := &pluginClient{resource: r.ResourceName, endpoint: r.Endpoint, conn: conn, api: api, opts: opts}

	k.mu.Lock()
	res := k.resources[c.resource]
	if res == nil {
		res = &resource{name: c.resource, allocated: map[string]bool{}}
		k.resources[c.resource] = res
	}
	if old := res.current; old != nil {
		// The newer registration of a resource replaces the older
		// one, which is dropped quietly.
		fmt.Fprintf(os.Stderr, "kubelet-go: registration of %s at %s replaced\n", old.resource, old.endpoint)
		old.conn.Close()
	}
	res.current = c
	k.out.event("registered resource=%s endpoint=%s pre_start_required=%t preferred_available=%t",
		esc(c.resource), esc(c.endpoint), opts.PreStartRequired, opts.GetPreferredAllocationAvailable)
	k.mu.Unlock()
	// As in connectClient, ListAndWatch starts in the background, possibly
	// before the plugin has read this reply.
	go k.runClient(c)
	return &pb.Empty{}, nil
}

func (k *kubelet) reject(r *pb.RegisterRequest, err error) error {
	k.out.event("register-rejected resource=%s error=%s", esc(r.ResourceName), esc(err.Error()))
	return err
}

// dialPlugin is the kubelet's dial (plugin/v1beta1/client.go): the raw socket
// path as target, :authority "localhost", no transport security, blocking
// for at most 10 s, through a unix-socket dialer.
func dialPlugin(ctx context.Context, socket string) (*grpc.ClientConn, error) {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	return grpc.DialContext(ctx, socket,
		grpc.WithAuthority("localhost"),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithBlock(),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", addr)
		}),
	)
}

// current returns the resource if c is still its live registration (mu held).
func (k *kubelet) current(c *pluginClient) *resource {
	if res := k.resources[c.resource]; res != nil && res.current == c {
		return res
	}
	return nil
}

// runClient reads ListAndWatch until the stream ends, then drops the
// registration, as the kubelet's client.Run and runClient do: any end, a
// clean one included, means the plugin is gone, and its devices turn
// unhealthy (markResourceUnhealthy). Pending admissions of the resource run
// here after each message, one after the other.
func (k *kubelet) runClient(c *pluginClient) {
	// No deadline: the kubelet uses context.TODO() here.
	stream, err := c.api.ListAndWatch(context.Background(), &pb.Empty{})
	if err == nil {
		for {
			var resp *pb.ListAndWatchResponse
			if resp, err = stream.Recv(); err != nil {
				break
			}
			k.update(c, resp.Devices)
			for a := k.claim(c); a != nil; a = k.claim(c) {
				k.admit(c, a)
			}
		}
	}
	st := status.Convert(err)
	if err == io.EOF {
		st = status.New(codes.OK, "")
	}
	c.conn.Close()

	k.mu.Lock()
	defer k.mu.Unlock()
	res := k.current(c)
	if res == nil {
		return // replaced by a newer registration
	}
	res.current = nil
	k.out.event("stream-ended resource=%s status=%s message=%s", esc(res.name), codeName(st.Code()), esc(st.Message()))
	res.unhealthy = sortedSet(append(res.unhealthy, res.healthy...))
	res.healthy = nil
	k.printDevices(res)
}

// update handles one ListAndWatch message: a full replacement of the
// resource's device set. Health is "Healthy" exactly, or unhealthy.
func (k *kubelet) update(c *pluginClient, devs []*pb.Device) {
	var good, bad, numa []string
	for _, d := range devs {
		if d.Health == healthy {
			good = append(good, d.ID)
		} else {
			bad = append(bad, d.ID)
		}
		if nodes := d.GetTopology().GetNodes(); len(nodes) > 0 {
			ids := make([]int64, len(nodes))
			for i, n := range nodes {
				ids[i] = n.ID
			}
			sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
			s := make([]string, len(ids))
			for i, id := range ids {
				s[i] = strconv.FormatInt(id, 10)
			}
			// \x01 sorts below every printable byte: the list sorts by ID
			numa = append(numa, d.ID+"\x01"+strings.Join(s, ","))
		}
	}

	k.mu.Lock()
	defer k.mu.Unlock()
	res := k.current(c)
	if res == nil {
		return
	}
	res.healthy, res.unhealthy, res.numa = sortedSet(good), sortedSet(bad), sortedSet(numa)
	k.printDevices(res)
}

// printDevices prints the devices event of res (mu held). Capacity counts
// every device, allocatable only the healthy ones (GetCapacity).
func (k *kubelet) printDevices(res *resource) {
	numa := make([]string, len(res.numa))
	for i, e := range res.numa {
		sep := strings.IndexByte(e, '\x01')
		numa[i] = esc(e[:sep]) + ":" + e[sep+1:]
	}
	k.out.event("devices resource=%s capacity=%d allocatable=%d healthy=%s unhealthy=%s numa=%s",
		esc(res.name), len(res.healthy)+len(res.unhealthy), len(res.healthy),
		joinIDs(res.healthy), joinIDs(res.unhealthy), strings.Join(numa, ";"))
}

// claim takes the next admission of c's resource that nobody has run yet,
// while c is still the resource's live registration.
func (k *kubelet) claim(c *pluginClient) *admission {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.current(c) == nil {
		return nil
	}
	for _, a := range k.admits {
		if !a.claimed && a.resource == c.resource {
			a.claimed = true
			return a
		}
	}
	return nil
}
