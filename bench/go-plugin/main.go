// SPDX-License-Identifier: GPL-2.0-or-later

// Command go-plugin is the benchmark's baseline: a device plugin written the
// usual way, in Go on grpc-go, doing the job kdpd does with its example
// backend (N widgets on 2 NUMA nodes, the same Allocate answer, same-NUMA-first
// GetPreferredAllocation, a PreStartContainer hook). Its lifecycle follows the
// kubelet's expectations (docs/kubelet.md §1, §3):
//
//   - serve the plugin socket first, then Register, retrying quickly while
//     the kubelet is not there yet;
//   - when the kubelet re-creates kubelet.sock (a kubelet restart, which also
//     deleted our socket), serve again on a fresh socket name and re-register;
//   - on SIGINT/SIGTERM end the streams cleanly and remove the socket.
//
// Unlike kdpd it does not re-register when only its stream breaks while
// kubelet.sock stays (docs/kubelet.md §1.6); the benchmark never needs that.
//
// It is built like the kubelet stand-in (tests/interop/KdpGo.cmake).
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"google.golang.org/grpc"

	pb "kdp/interop/deviceplugin/v1beta1"
)

const kubeletSocket = "kubelet.sock"

func main() {
	dir := flag.String("dir", "/var/lib/kubelet/device-plugins", "device-plugins directory (kubelet.sock lives there)")
	n := flag.Int("devices", 8, "number of widgets")
	flag.Parse()
	if *n < 0 || flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*dir, exampleDevices(*n)); err != nil {
		fmt.Fprintf(os.Stderr, "go-plugin: %v\n", err)
		os.Exit(1)
	}
}

func run(dir string, devs *deviceTable) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	// Watch before the first registration so no kubelet restart is missed.
	created, err := watchCreate(dir, kubeletSocket)
	if err != nil {
		return err
	}

	inst, err := startInstance(dir, devs)
	if err != nil {
		return err
	}
	for {
		select {
		case <-created:
			fmt.Fprintf(os.Stderr, "go-plugin: %s created, re-registering\n", kubeletSocket)
			inst.shutdown()
			if inst, err = startInstance(dir, devs); err != nil {
				return err
			}
		case <-sigs:
			inst.shutdown()
			return nil
		}
	}
}

// instance is one serving generation: a gRPC server on its own socket and the
// registration that announces it.
type instance struct {
	socket string
	srv    *grpc.Server
	stop   chan struct{}      // closes the ListAndWatch streams
	cancel context.CancelFunc // stops a registration still retrying
	done   chan struct{}      // closed when the registration goroutine ends
}

// startInstance serves a fresh socket, then registers in the background. A
// new name per start keeps a registration from ever being confused with its
// predecessor (docs/kubelet.md §1.6).
func startInstance(dir string, devs *deviceTable) (*instance, error) {
	name := fmt.Sprintf("go-plugin-%s-%d.sock", strings.NewReplacer("/", "_", ".", "_").Replace(exampleResource), time.Now().UnixNano())
	inst := &instance{socket: filepath.Join(dir, name), stop: make(chan struct{}), done: make(chan struct{})}
	lis, err := net.Listen("unix", inst.socket)
	if err != nil {
		return nil, err
	}
	inst.srv = grpc.NewServer()
	pb.RegisterDevicePluginServer(inst.srv, &plugin{devs: devs, stop: inst.stop})
	go inst.srv.Serve(lis)

	ctx, cancel := context.WithCancel(context.Background())
	inst.cancel = cancel
	go func() {
		defer close(inst.done)
		if err := register(ctx, filepath.Join(dir, kubeletSocket), name); err != nil {
			fmt.Fprintf(os.Stderr, "go-plugin: registration abandoned: %v\n", err)
		}
	}()
	return inst, nil
}

// shutdown ends the streams with status OK, lets the other calls finish (1 s
// at most), and removes the socket.
func (inst *instance) shutdown() {
	inst.cancel()
	<-inst.done
	close(inst.stop)
	stopped := make(chan struct{})
	go func() { inst.srv.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(time.Second):
		inst.srv.Stop()
	}
	os.Remove(inst.socket)
}

// register calls Registration.Register until it succeeds. Every attempt uses
// a new connection, so grpc's reconnect back-off (1 s at first) never delays
// us; our own back-off starts at 10 ms and doubles up to 1 s.
func register(ctx context.Context, kubelet, endpoint string) error {
	req := &pb.RegisterRequest{Version: "v1beta1", Endpoint: endpoint, ResourceName: exampleResource, Options: options}
	backoff := 10 * time.Millisecond
	for {
		err := registerOnce(ctx, kubelet, req)
		if err == nil {
			fmt.Fprintf(os.Stderr, "go-plugin: registered %s at %s\n", req.ResourceName, endpoint)
			return nil
		}
		fmt.Fprintf(os.Stderr, "go-plugin: register: %v (retrying in %v)\n", err, backoff)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		if backoff *= 2; backoff > time.Second {
			backoff = time.Second
		}
	}
}

func registerOnce(ctx context.Context, kubelet string, req *pb.RegisterRequest) error {
	conn, err := grpc.Dial(kubelet, grpc.WithInsecure(),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", addr)
		}))
	if err != nil {
		return err
	}
	defer conn.Close()
	// The kubelet dials back and asks for our options before it answers;
	// leave it its 10 s and some.
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	_, err = pb.NewRegistrationClient(conn).Register(ctx, req)
	return err
}

// watchCreate reports on the returned channel every time `name` is created
// in dir (inotify IN_CREATE; the standard library's syscall package is enough).
func watchCreate(dir, name string) (<-chan struct{}, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("inotify_init1: %w", err)
	}
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_CREATE); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("inotify_add_watch %s: %w", dir, err)
	}
	ch := make(chan struct{}, 1)
	go func() {
		buf := make([]byte, 64*(syscall.SizeofInotifyEvent+syscall.NAME_MAX+1))
		for {
			n, err := syscall.Read(fd, buf)
			if err == syscall.EINTR {
				continue
			}
			if err != nil || n <= 0 {
				fmt.Fprintf(os.Stderr, "go-plugin: inotify read: %v\n", err)
				return
			}
			for off := 0; off+syscall.SizeofInotifyEvent <= n; {
				ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
				raw := buf[off+syscall.SizeofInotifyEvent : off+syscall.SizeofInotifyEvent+int(ev.Len)]
				off += syscall.SizeofInotifyEvent + int(ev.Len)
				if strings.TrimRight(string(raw), "\x00") == name {
					select {
					case ch <- struct{}{}:
					default: // one pending notice is enough
					}
				}
			}
		}
	}()
	return ch, nil
}
