// SPDX-License-Identifier: GPL-2.0-or-later

package main

// The event lines on stdout. They are those of the C stand-in (`kdpctl
// kubelet`, framework/src/ctl/ctl-kubelet.c), so the e2e scripts parse
// either:
//
//   registered resource=R endpoint=E pre_start_required=B preferred_available=B
//   register-rejected resource=R error=TEXT
//   devices resource=R capacity=C allocatable=A healthy=ID,.. unhealthy=ID,.. numa=ID:N;ID:N,N
//   stream-ended resource=R status=CODE message=TEXT
//   admitted resource=R n=N preferred=ID,.. allocated=ID,..
//   alloc resource=R env K=V
//   alloc resource=R device HOST CONTAINER PERMISSIONS
//   alloc resource=R mount HOST CONTAINER ro|rw
//   alloc resource=R annotation K=V
//   alloc resource=R cdi NAME
//   prestart resource=R ok
//   admit-failed resource=R error=TEXT
//
// ID lists are sorted byte-wise without duplicates and comma-joined (empty
// when there are none); numa lists only devices that report a topology, a
// device on several nodes as ID:0,1. CODE is the gRPC C-core code name (OK,
// CANCELLED, UNAVAILABLE, ...); a clean end of stream is status=OK. The alloc
// lines come in the order env, device, mount, annotation, cdi, each group
// sorted; an empty path or permission prints as "-". After a stream ends
// every device turns unhealthy, so a devices line with allocatable=0 follows.
// An admission prints admitted, its alloc lines and prestart together once
// it has fully succeeded, or one admit-failed line. Control characters in
// values print as \n, \r, \t or \xNN. With -timestamps every line starts with
// "<seconds since the epoch>.<µs> ".

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
)

// printer writes whole lines to stdout, one write per line, so concurrent
// goroutines never interleave and a reader polling the file sees complete
// events.
type printer struct {
	mu     sync.Mutex
	stamps bool
	muted  bool
}

func (p *printer) event(format string, args ...interface{}) {
	p.lines(fmt.Sprintf(format, args...))
}

// lines prints several events in one go, with nothing in between.
func (p *printer) lines(lines ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.muted {
		return
	}
	var b strings.Builder
	for _, l := range lines {
		if p.stamps {
			now := time.Now()
			fmt.Fprintf(&b, "%d.%06d ", now.Unix(), now.Nanosecond()/1000)
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	os.Stdout.WriteString(b.String())
}

// mute drops every later event: used at exit so teardown noise (streams
// broken by our own exit) does not look like plugin behaviour.
func (p *printer) mute() {
	p.mu.Lock()
	p.muted = true
	p.mu.Unlock()
}

// esc makes a value safe for a one-line event, as the C stand-in does.
func esc(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// sortedSet returns the strings sorted byte-wise without duplicates, leaving
// the caller's slice untouched.
func sortedSet(v []string) []string {
	s := append([]string(nil), v...)
	sort.Strings(s)
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// joinIDs is sortedSet, escaped and comma-joined.
func joinIDs(ids []string) string {
	s := sortedSet(ids)
	for i := range s {
		s[i] = esc(s[i])
	}
	return strings.Join(s, ",")
}

// codeName is the gRPC C-core name of a status code, as the C stand-in
// prints it (grpc-go's own String() says "Canceled", "Unavailable").
func codeName(c codes.Code) string {
	names := [...]string{
		codes.OK:                 "OK",
		codes.Canceled:           "CANCELLED",
		codes.Unknown:            "UNKNOWN",
		codes.InvalidArgument:    "INVALID_ARGUMENT",
		codes.DeadlineExceeded:   "DEADLINE_EXCEEDED",
		codes.NotFound:           "NOT_FOUND",
		codes.AlreadyExists:      "ALREADY_EXISTS",
		codes.PermissionDenied:   "PERMISSION_DENIED",
		codes.ResourceExhausted:  "RESOURCE_EXHAUSTED",
		codes.FailedPrecondition: "FAILED_PRECONDITION",
		codes.Aborted:            "ABORTED",
		codes.OutOfRange:         "OUT_OF_RANGE",
		codes.Unimplemented:      "UNIMPLEMENTED",
		codes.Internal:           "INTERNAL",
		codes.Unavailable:        "UNAVAILABLE",
		codes.DataLoss:           "DATA_LOSS",
		codes.Unauthenticated:    "UNAUTHENTICATED",
	}
	if int(c) < len(names) {
		return names[c]
	}
	return "UNKNOWN"
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
