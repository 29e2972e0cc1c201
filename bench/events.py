#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""bench/events.py BUILD_DIR WORK_DIR [N] [pci|gpu]: device event -> ListAndWatch latency.

Starts the kubelet stand-in (kubelet-go -timestamps, outside the simulated
node), then kdpd with --health-hold-ms 0 under sim-node, and drives N cycles
through sim-node's control FIFO, one command at a time. For each command: the
wall time just before it is written, then the kubelet's own timestamp on its
next `devices` line whose allocatable is the expected one.

  pci (bench/hardware.sh): the pcitest backend on flapping-device.umockdev
      (two A100s); commands alternate `unbind 0000:01:00.0` (allocatable 1)
      and `bind 0000:01:00.0 nvidia` (2). Prints events_n, events_p50_us,
      events_p99_us, events_max_us.
  gpu (bench/gpu.sh): the GPU backend on gpu-h100x8.umockdev (8 H100s); each
      cycle is `kmsg` of a critical Xid of GPU 2 (0000:3a:00.0) as the driver
      logs it (priority 4, the next sequence number, the monotonic clock in
      µs) until allocatable 7, then `uevent 0000:3a:00.0 change`, which the
      backend takes for a reset that clears the Xid, until 8. Prints xid_* and
      reset_* (n, p50_us, p99_us, max_us).
"""
import os
import select
import signal
import subprocess
import sys
import time

XID = "NVRM: Xid (PCI:0000:3a:00): 79, pid=0, GPU has fallen off the bus."
FIRST_SEQ = 100000


def pci_steps(i):
    addr = "0000:01:00.0"
    return ((f"unbind {addr}\n", 1, "events"),) if i % 2 == 0 else ((f"bind {addr} nvidia\n", 2, "events"),)


def gpu_steps(i):
    ts = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
    return ((f"kmsg 4,{FIRST_SEQ + i},{ts},c;{XID}\n", 7, "xid"),
            ("uevent 0000:3a:00.0 change\n", 8, "reset"))


# scenario: resource, fixture, kdpd's backend arguments, allocatable at start, commands of cycle i
SCENARIOS = {
    "pci": ("test.example.com/pci", "flapping-device.umockdev",
            ["--backend", "tests/backends/kdp-backend-pcitest.so", "-o", "pcitest.vendor=10de",
             "-o", "pcitest.driver=nvidia"], 2, 1000, pci_steps),
    "gpu": ("nvidia.com/gpu", "gpu-h100x8.umockdev", ["--backend", "gpu"], 8, 200, gpu_steps),
}


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
RES, FIXTURE, BACKEND, START, N, steps_of = SCENARIOS[sys.argv[4] if len(sys.argv) > 4 else "pci"]
BACKEND = [os.path.join(os.path.abspath(sys.argv[1]), a) if a.startswith("tests/") else a for a in BACKEND]
n = int(sys.argv[3]) if len(sys.argv) > 3 else N
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


signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
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
                            os.path.join(src, "tests/fixtures/nodes", FIXTURE),
                            "--control", ctl, "--",
                            os.path.join(build, "kdpd"), *BACKEND, "--kubelet-dir", kdir, "--state-dir", os.path.join(os.path.dirname(kdir), "state"),
                            "--cdi-dir", os.path.join(work, "cdi"), "--health-hold-ms", "0"],
                           env=env, stdout=open(os.path.join(work, "kdpd.out"), "wb"),
                           stderr=open(os.path.join(work, "kdpd.err"), "wb"))
    procs.append(sim)
    os.write(cfd, b"wait-listeners 1\n")
    first = k.allocatable(30)
    if first is None or first[1] != START:
        fail(f"kdpd did not list {START} allocatable devices: {first} (see {work}/kdpd.err)")
    os.write(cfd, b"echo ready\n")
    out = os.path.join(work, "kdpd.out")
    end = time.monotonic() + 15
    while b"ready" not in open(out, "rb").read():
        if time.monotonic() > end or sim.poll() is not None:
            fail(f"sim-node did not get past wait-listeners (see {work}/kdpd.err)")
        time.sleep(0.01)

    lat = {}
    for i in range(n):
        for cmd, want, fig in steps_of(i):
            t0 = time.time_ns() // 1000
            os.write(cfd, cmd.encode())
            while True:
                got = k.allocatable(10)
                if got is None:
                    fail(f"cycle {i} ({fig}): no devices line with allocatable={want} within 10 s "
                         f"(see {work}/kdpd.err)")
                if got[1] == want:
                    lat.setdefault(fig, []).append(got[0] - t0)
                    break
    for fig, v in lat.items():
        v.sort()
        print(f"{fig}_n={len(v)}")
        print(f"{fig}_p50_us={pct(v, 50)}")
        print(f"{fig}_p99_us={pct(v, 99)}")
        print(f"{fig}_max_us={v[-1]}")
finally:
    stop_all()
