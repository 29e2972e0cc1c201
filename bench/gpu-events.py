#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""bench/gpu-events.py BUILD_DIR WORK_DIR [N]: Xid -> ListAndWatch and reset -> ListAndWatch latency.

Run by bench/gpu.sh. Starts the kubelet stand-in (kubelet-go -timestamps,
outside the simulated node), then kdpd --backend gpu --health-hold-ms 0 under
sim-node on tests/fixtures/nodes/gpu-h100x8.umockdev (8 H100s), and drives N
cycles through sim-node's control FIFO, one command at a time:
  1. `kmsg` of a critical Xid of GPU 2 (0000:3a:00.0) as the driver logs it
     (priority 4, the next sequence number, the monotonic clock in µs):
     timed until the kubelet's next `devices` line with allocatable 7;
  2. `uevent 0000:3a:00.0 change`, which the backend takes for a reset that
     clears the Xid: timed until the next line with allocatable 8.
For each: the wall time just before the command is written, then the
kubelet's own timestamp on its line (as bench/events.py does). Prints xid_n,
xid_p50_us, xid_p99_us, xid_max_us, reset_n, reset_p50_us, reset_p99_us and
reset_max_us.
"""
import os
import select
import signal
import subprocess
import sys
import time

RES = "nvidia.com/gpu"
ADDR = "0000:3a:00.0"
XID = "NVRM: Xid (PCI:0000:3a:00): 79, pid=0, GPU has fallen off the bus."
FIRST_SEQ = 100000


def fail(msg):
    print(f"gpu-events.py: {msg}", file=sys.stderr)
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
n = int(sys.argv[3]) if len(sys.argv) > 3 else 200
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
                            os.path.join(src, "tests/fixtures/nodes/gpu-h100x8.umockdev"),
                            "--control", ctl, "--",
                            os.path.join(build, "kdpd"), "--backend", "gpu", "--kubelet-dir", kdir,
                            "--cdi-dir", os.path.join(work, "cdi"), "--health-hold-ms", "0"],
                           env=env, stdout=open(os.path.join(work, "kdpd.out"), "wb"),
                           stderr=open(os.path.join(work, "kdpd.err"), "wb"))
    procs.append(sim)
    os.write(cfd, b"wait-listeners 1\n")
    first = k.allocatable(30)
    if first is None or first[1] != 8:
        fail(f"kdpd did not list 8 allocatable GPUs: {first} (see {work}/kdpd.err)")
    os.write(cfd, b"echo ready\n")
    out = os.path.join(work, "kdpd.out")
    end = time.monotonic() + 15
    while b"ready" not in open(out, "rb").read():
        if time.monotonic() > end or sim.poll() is not None:
            fail(f"sim-node did not get past wait-listeners (see {work}/kdpd.err)")
        time.sleep(0.01)

    lat = {"xid": [], "reset": []}
    for i in range(n):
        ts = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        steps = ((f"kmsg 4,{FIRST_SEQ + i},{ts},c;{XID}\n", 7, "xid"),
                 (f"uevent {ADDR} change\n", 8, "reset"))
        for cmd, want, fig in steps:
            t0 = time.time_ns() // 1000
            os.write(cfd, cmd.encode())
            while True:
                got = k.allocatable(10)
                if got is None:
                    fail(f"cycle {i} ({fig}): no devices line with allocatable={want} within 10 s "
                         f"(see {work}/kdpd.err)")
                if got[1] == want:
                    lat[fig].append(got[0] - t0)
                    break
    for fig, v in lat.items():
        v.sort()
        print(f"{fig}_n={len(v)}")
        print(f"{fig}_p50_us={pct(v, 50)}")
        print(f"{fig}_p99_us={pct(v, 99)}")
        print(f"{fig}_max_us={v[-1]}")
finally:
    stop_all()
