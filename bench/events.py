#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""bench/events.py BUILD_DIR WORK_DIR [N]: device event -> ListAndWatch latency.

Run by bench/hardware.sh. Starts the kubelet stand-in (kubelet-go -timestamps,
outside the simulated node), then kdpd with the pcitest backend under sim-node
on tests/fixtures/nodes/flapping-device.umockdev (two A100s), and drives N
events through sim-node's control FIFO, one at a time, alternating
`unbind 0000:01:00.0` and `bind 0000:01:00.0 nvidia`. For each: the wall time
just before the command is written, then the kubelet's own timestamp on its
next `devices` line whose allocatable changed (1 after unbind, 2 after bind).
Prints events_n, events_p50_us, events_p99_us, events_max_us.
"""
import os
import select
import signal
import subprocess
import sys
import time

RES = "test.example.com/pci"
ADDR = "0000:01:00.0"


def fail(msg):
    print(f"events.py: {msg}", file=sys.stderr)
    sys.exit(1)


def pct(v, p):
    """nearest-rank percentile of a sorted list"""
    i = (len(v) * p + 99) // 100
    return v[max(i, 1) - 1]


class Kubelet:
    """kubelet-go's stdout, read line by line with a deadline."""

    def __init__(self, proc):
        self.proc = proc
        self.fd = proc.stdout.fileno()
        self.buf = b""
        self.log = open(os.path.join(work, "kubelet.out"), "wb")

    def line(self, timeout):
        end = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = end - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                return None
            chunk = os.read(self.fd, 65536)
            if not chunk:
                return None
            self.log.write(chunk)
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode(errors="replace")

    def allocatable(self, timeout):
        """(stamp in µs, allocatable) of the next devices line for RES, or None"""
        end = time.monotonic() + timeout
        while True:
            line = self.line(max(end - time.monotonic(), 0))
            if line is None:
                return None
            stamp, _, ev = line.partition(" ")
            f = ev.split(" ")
            if f[0] != "devices" or f"resource={RES}" not in f:
                continue
            alloc = next((int(x.split("=", 1)[1]) for x in f if x.startswith("allocatable=")), None)
            return int(stamp.replace(".", "")), alloc


build, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
n = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
kdir = os.path.join(work, "device-plugins")
ctl = os.path.join(work, "ctl")
os.makedirs(kdir, exist_ok=True)
os.mkfifo(ctl)
procs = []


def stop_all():
    # kdpd first (sim-node exits with it), then sim-node, then the kubelet
    for p in reversed(procs):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


try:
    kubelet = subprocess.Popen([os.path.join(build, "tests/interop/kubelet-go"), "-dir", kdir, "-timestamps"],
                               stdout=subprocess.PIPE, stderr=open(os.path.join(work, "kubelet.err"), "wb"))
    procs.append(kubelet)
    k = Kubelet(kubelet)
    for _ in range(500):
        if os.path.exists(os.path.join(kdir, "kubelet.sock")):
            break
        time.sleep(0.01)
    else:
        fail("the kubelet stand-in did not start")
    # O_RDWR: the FIFO stays open between commands and the open does not block
    cfd = os.open(ctl, os.O_RDWR)
    env = dict(os.environ, KDP_BUILD_DIR=build)
    sim = subprocess.Popen([os.path.join(src, "tests/sim-node/sim-node"),
                            os.path.join(src, "tests/fixtures/nodes/flapping-device.umockdev"),
                            "--control", ctl, "--",
                            os.path.join(build, "kdpd"), "--kubelet-dir", kdir, "--health-hold-ms", "0",
                            "--backend", os.path.join(build, "tests/backends/kdp-backend-pcitest.so"),
                            "-o", "pcitest.vendor=10de", "-o", "pcitest.driver=nvidia"],
                           env=env, stdout=open(os.path.join(work, "kdpd.out"), "wb"),
                           stderr=open(os.path.join(work, "kdpd.err"), "wb"))
    procs.append(sim)
    os.write(cfd, b"wait-listeners 1\n")
    first = k.allocatable(30)
    if first is None or first[1] != 2:
        fail(f"kdpd did not list 2 allocatable devices: {first} (see {work}/kdpd.err)")
    # the listener exists once the monitor is open; make sure sim-node got past wait-listeners
    os.write(cfd, b"echo ready\n")
    out = os.path.join(work, "kdpd.out")
    end = time.monotonic() + 15
    while b"ready" not in open(out, "rb").read():
        if time.monotonic() > end or sim.poll() is not None:
            fail(f"sim-node did not get past wait-listeners (see {work}/kdpd.err)")
        time.sleep(0.01)

    lat = []
    for i in range(n):
        cmd, want = (f"unbind {ADDR}\n", 1) if i % 2 == 0 else (f"bind {ADDR} nvidia\n", 2)
        t0 = time.time_ns() // 1000
        os.write(cfd, cmd.encode())
        while True:
            got = k.allocatable(10)
            if got is None:
                fail(f"event {i} ({cmd.strip()}): no devices line with allocatable={want} within 10 s")
            if got[1] == want:
                lat.append(got[0] - t0)
                break
    lat.sort()
    print(f"events_n={len(lat)}")
    print(f"events_p50_us={pct(lat, 50)}")
    print(f"events_p99_us={pct(lat, 99)}")
    print(f"events_max_us={lat[-1]}")
finally:
    stop_all()
