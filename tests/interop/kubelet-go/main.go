// SPDX-License-Identifier: GPL-2.0-or-later

// Command kubelet-go stands in for the kubelet's device manager in interop
// tests. It is written on grpc-go, the gRPC library the kubelet itself uses
// (at the version tests/interop/go.mod pins), and copies the kubelet's behaviour
// wherever a device plugin can observe it (docs/kubelet.md §1–§4):
//
//   - at start it removes stale sockets from the directory, then serves
//     v1beta1.Registration on <dir>/kubelet.sock with a default grpc.Server;
//   - Register validates the version and resource name, dials the plugin back
//     (blocking, 10 s, :authority "localhost") and calls
//     GetDevicePluginOptions before it answers;
//   - it then runs ListAndWatch for the registration, forever;
//   - -admit RESOURCE=N plays one pod admission after the resource's first
//     device list: GetPreferredAllocation (if advertised), Allocate,
//     PreStartContainer (if required).
//
// Exit status: 0; 1 on a start-up failure, or with -exit-after-admit when an
// admission failed or was still pending when -duration ran out.
//
// Everything it observes is printed on stdout, one event per line, in the
// shapes documented in events.go. Diagnostics go to stderr.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"

	pb "kdp/interop/deviceplugin/v1beta1"
)

// admitList collects the repeatable -admit RESOURCE=N flag.
type admitList []admitSpec

func (a *admitList) String() string {
	parts := make([]string, 0, len(*a))
	for _, s := range *a {
		parts = append(parts, fmt.Sprintf("%s=%d", s.resource, s.n))
	}
	return strings.Join(parts, ",")
}

func (a *admitList) Set(v string) error {
	i := strings.LastIndex(v, "=")
	if i <= 0 {
		return fmt.Errorf("want RESOURCE=N, got %q", v)
	}
	n, err := strconv.Atoi(v[i+1:])
	if err != nil || n <= 0 {
		return fmt.Errorf("want a positive device count in %q", v)
	}
	*a = append(*a, admitSpec{resource: v[:i], n: n})
	return nil
}

func main() {
	dir := flag.String("dir", "/var/lib/kubelet/device-plugins", "device-plugins directory: kubelet.sock and the plugin sockets")
	duration := flag.Float64("duration", 0, "exit after this many seconds (0: run until SIGINT or SIGTERM)")
	stamps := flag.Bool("timestamps", false, "prefix every event line with the wall-clock time (seconds since the epoch, µs resolution)")
	exitAfterAdmit := flag.Bool("exit-after-admit", false, "exit once every -admit has run (status 1 if one failed)")
	var admits admitList
	flag.Var(&admits, "admit", "admit one pod asking for N devices of RESOURCE after its first device list (RESOURCE=N, repeatable)")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "kubelet-go: unexpected argument %q\n", flag.Arg(0))
		os.Exit(2)
	}
	k, err := start(*dir, &printer{stamps: *stamps}, admits)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubelet-go: %v\n", err)
		os.Exit(1)
	}
	os.Exit(k.wait(time.Duration(*duration*float64(time.Second)), *exitAfterAdmit))
}

// start prepares the directory and serves kubelet.sock.
func start(dir string, out *printer, admits []admitSpec) (*kubelet, error) {
	// The kubelet refuses a relative socket path; resolving it here is kinder.
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0750); err != nil {
		return nil, err
	}
	// Like the kubelet's server.Start: every socket in the directory goes,
	// plugin sockets included, which is how plugins learn of a restart.
	if err := cleanupPluginDirectory(dir); err != nil {
		return nil, err
	}
	socket := filepath.Join(dir, kubeletSocket)
	if err := os.Remove(socket); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	lis, err := net.Listen("unix", socket)
	if err != nil {
		return nil, err
	}
	// A kubelet that dies leaves kubelet.sock behind; so do we.
	lis.(*net.UnixListener).SetUnlinkOnClose(false)

	k := newKubelet(dir, out, admits)
	k.srv = grpc.NewServer() // the kubelet passes no server options
	pb.RegisterRegistrationServer(k.srv, k)
	k.served = make(chan error, 1)
	go func() { k.served <- k.srv.Serve(lis) }()
	fmt.Fprintf(os.Stderr, "kubelet-go: serving %s\n", socket)
	return k, nil
}

// wait runs until a signal, the duration, or (with exitAfterAdmit) the last
// admission, and returns the exit status. It then exits without goodbyes,
// as a stopped kubelet does: the plugins see their ListAndWatch streams
// break, and kubelet.sock stays behind.
func (k *kubelet) wait(duration time.Duration, exitAfterAdmit bool) int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	var timeout <-chan time.Time
	if duration > 0 {
		timeout = time.After(duration)
	}
	var admitted <-chan struct{}
	if exitAfterAdmit {
		admitted = k.admitsDone
	}
	status := 0
	select {
	case err := <-k.served:
		fmt.Fprintf(os.Stderr, "kubelet-go: serving failed: %v\n", err)
		status = 1
	case s := <-sigs:
		fmt.Fprintf(os.Stderr, "kubelet-go: exiting on %v\n", s)
	case <-timeout:
		fmt.Fprintf(os.Stderr, "kubelet-go: exiting after %v\n", duration)
		k.mu.Lock()
		if exitAfterAdmit && k.nDone < len(k.admits) {
			fmt.Fprintf(os.Stderr, "kubelet-go: timed out waiting for admissions\n")
			status = 1
		}
		k.mu.Unlock()
	case <-admitted:
		k.mu.Lock()
		if k.nFailed > 0 {
			status = 1
		}
		fmt.Fprintf(os.Stderr, "kubelet-go: finished admissions, %d failed\n", k.nFailed)
		k.mu.Unlock()
	}
	k.out.mute()
	return status
}

// cleanupPluginDirectory removes every socket in dir, as the kubelet's
// CleanupPluginDirectory does: it keeps the checkpoint file, directories,
// entries it cannot stat and anything that is not a socket.
func cleanupPluginDirectory(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var failed []string
	for _, e := range entries {
		if e.Name() == checkpointFile {
			continue
		}
		path := filepath.Join(dir, e.Name())
		st, err := os.Stat(path)
		if err != nil || st.IsDir() || st.Mode()&os.ModeSocket == 0 {
			continue
		}
		if err := os.RemoveAll(path); err != nil {
			failed = append(failed, err.Error())
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("cleaning %s: %s", dir, strings.Join(failed, "; "))
	}
	return nil
}
