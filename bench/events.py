#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""bench/events.py BUILD_DIR WORK_DIR [N] [pci|gpu|sriov-numvfs|sriov-link]: device event -> ListAndWatch latency.

Starts the kubelet stand-in (kubelet-go -timestamps, outside the simulated
node), then kdpd with --health-hold-ms 0 under sim-node, and drives N cycles
through sim-node's control FIFO (or rtnetlink), one command at a time. For each
command: the wall time just before it is written, then the kubelet's own
timestamp on its next `devices` line whose allocatable is the expected one. For a FIFO command
also the time sim-node took to carry it out (every uevent sent), from an
`echo` mark written after it: <figure>_sim_*, the simulator's own share.

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
  sriov-numvfs (bench/sriov.sh): the SR-IOV backend on the node of
      bench/sriov_node.py (4 PFs x 64 VFs on iavf, one pool of 256), written
      into WORK_DIR; each cycle is `sriov 0000:8a:00.0 0` until allocatable
      192, then `sriov 0000:8a:00.0 64` (sim-node's 64 VF adds, each with its
      change, net add and bind, then the PF's change) until 256. Prints
      numvfs_off_* and numvfs_on_*.
  sriov-link (bench/sriov.sh, in a network namespace of its own: `unshare -n`;
      it refuses to run where there is a link but `lo`): the same node, with a veth pair per PF
      whose end is named like the PF's netdev (ens3f0np0 ...), both ends up,
      as the backend unit tests build them. Each cycle sets, with one
      RTM_NEWLINK each (the time is taken just before the send), ens3f0np0
      admin-down until allocatable 192 (its 64 VFs Unhealthy), up until 256,
      then its peer down (ens3f0np0 loses its carrier) until 192, and up until
      256. Prints link_down_*, link_up_*, carrier_down_*, carrier_up_*.
"""
import contextlib
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

import sriov_node                       # bench/sriov_node.py, beside this script

XID = "NVRM: Xid (PCI:0000:3a:00): 79, pid=0, GPU has fallen off the bus."
FIRST_SEQ = 100000


def pci_steps(i):
    addr = "0000:01:00.0"
    return ((f"unbind {addr}\n", 1, "events"),) if i % 2 == 0 else ((f"bind {addr} nvidia\n", 2, "events"),)


def gpu_steps(i):
    ts = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
    return ((f"kmsg 4,{FIRST_SEQ + i},{ts},c;{XID}\n", 7, "xid"),
            ("uevent 0000:3a:00.0 change\n", 8, "reset"))


def sriov_numvfs_steps(i):
    pf = sriov_node.pf_address(0)
    return ((f"sriov {pf} 0\n", 3 * sriov_node.VFS, "numvfs_off"),
            (f"sriov {pf} {sriov_node.VFS}\n", 4 * sriov_node.VFS, "numvfs_on"))


IFF_UP = 0x1
RTM_NEWLINK = 16
NLM_F_REQUEST, NLM_F_ACK = 0x1, 0x4
NLMSG_ERROR = 2


def set_link(name, up):
    """One RTM_NEWLINK that sets or clears IFF_UP of link name; the kernel's answer is awaited
    (after the send, which is what is timed)."""
    def act():
        msg = struct.pack("=BxHiII", socket.AF_UNSPEC, 0, socket.if_nametoindex(name), IFF_UP if up else 0, IFF_UP)
        with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC, socket.NETLINK_ROUTE) as nl:
            nl.send(struct.pack("=IHHII", 16 + len(msg), RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK, 1, 0) + msg)
            ans = nl.recv(4096)
        kind, = struct.unpack_from("=H", ans, 4)
        err, = struct.unpack_from("=i", ans, 16)
        if kind != NLMSG_ERROR or err:
            fail(f"RTM_NEWLINK {name} {'up' if up else 'down'}: {os.strerror(-err) if err else kind}")
    return act


def sriov_link_steps(i):
    pf, peer, all_vfs = sriov_node.PFS[0][1], "pf0peer", 4 * sriov_node.VFS
    return ((set_link(pf, False), all_vfs - sriov_node.VFS, "link_down"), (set_link(pf, True), all_vfs, "link_up"),
            (set_link(peer, False), all_vfs - sriov_node.VFS, "carrier_down"), (set_link(peer, True), all_vfs, "carrier_up"))


def sriov_node_in(work):
    """The bench's SR-IOV node and its config.json, written into work (generate.py's output on stderr)."""
    with contextlib.redirect_stdout(sys.stderr):
        fixture = sriov_node.write(work)
    return fixture, ["--backend", "sriov", "-o", f"sriov.config_file={fixture[:-len('.umockdev')]}.json"]


def sriov_link_node(work):
    """sriov_node_in, and a veth pair per PF netdev, both ends up, in this process's own netns."""
    if [name for _i, name in socket.if_nameindex() if name != "lo"]:
        fail("sriov-link builds links named like the node's PFs: run it in a fresh network namespace, "
             "with `lo` only (unshare -n)")
    for k, (_fn, ifname, *_rest) in enumerate(sriov_node.PFS):
        subprocess.run(["ip", "link", "add", ifname, "type", "veth", "peer", "name", f"pf{k}peer"], check=True)
        subprocess.run(["ip", "link", "set", ifname, "up"], check=True)
        subprocess.run(["ip", "link", "set", f"pf{k}peer", "up"], check=True)
    return sriov_node_in(work)


def fixture_node(name, backend):
    """A committed node of tests/fixtures/nodes, with kdpd's backend arguments."""
    return lambda work: (os.path.join(src, "tests/fixtures/nodes", name), backend)


# scenario: resource, node (work dir -> fixture, kdpd's backend arguments), allocatable at start,
# cycles by default, commands of cycle i (text for the control FIFO, or a callable that acts)
SCENARIOS = {
    "pci": ("test.example.com/pci", fixture_node("flapping-device.umockdev",
            ["--backend", "tests/backends/kdp-backend-pcitest.so", "-o", "pcitest.vendor=10de",
             "-o", "pcitest.driver=nvidia"]), 2, 1000, pci_steps),
    "gpu": ("nvidia.com/gpu", fixture_node("gpu-h100x8.umockdev", ["--backend", "gpu", "-o", "gpu.nvml="]), 8, 200, gpu_steps),
    "sriov-numvfs": (sriov_node.RESOURCE, sriov_node_in, 4 * sriov_node.VFS, 20, sriov_numvfs_steps),
    "sriov-link": (sriov_node.RESOURCE, sriov_link_node, 4 * sriov_node.VFS, 100, sriov_link_steps),
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


class Marks:
    """sim-node's stdout (its `echo` marks), copied to WORK/kdpd.out by a thread that notes
    when each line arrived."""

    def __init__(self, pipe):
        self.seen = {}
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self.read, args=(pipe,), daemon=True)
        self.thread.start()

    def read(self, pipe):
        with open(os.path.join(work, "kdpd.out"), "wb") as log:
            for line in pipe:
                stamp = time.time_ns() // 1000
                log.write(line)
                log.flush()
                with self.cond:
                    self.seen[line.decode(errors="replace").rstrip("\n")] = stamp
                    self.cond.notify_all()

    def wait(self, text, timeout):
        """the wall time in µs at which the line text arrived, or None"""
        with self.cond:
            self.cond.wait_for(lambda: text in self.seen, timeout)
            return self.seen.get(text)


build, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RES, NODE, START, N, steps_of = SCENARIOS[sys.argv[4] if len(sys.argv) > 4 else "pci"]
n = int(sys.argv[3]) if len(sys.argv) > 3 else N
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
    fixture, backend = NODE(work)
    BACKEND = [os.path.join(build, a) if a.startswith("tests/") else a for a in backend]
    sim = subprocess.Popen([os.path.join(src, "tests/sim-node/sim-node"), fixture,
                            "--control", ctl, "--",
                            os.path.join(build, "kdpd"), *BACKEND, "--kubelet-dir", kdir, "--state-dir", os.path.join(os.path.dirname(kdir), "state"),
                            "--cdi-dir", os.path.join(work, "cdi"), "--health-hold-ms", "0"],
                           env=env, stdout=subprocess.PIPE, stderr=open(os.path.join(work, "kdpd.err"), "wb"))
    procs.append(sim)
    marks = Marks(sim.stdout)
    os.write(cfd, b"wait-listeners 1\n")
    first = k.allocatable(600)          # umockdev takes minutes to load the 782 records of the SR-IOV node on a busy VM
    if first is None or first[1] != START:
        fail(f"kdpd did not list {START} allocatable devices: {first} (see {work}/kdpd.err)")
    os.write(cfd, b"echo ready\n")
    if marks.wait("ready", 15) is None:
        fail(f"sim-node did not get past wait-listeners (see {work}/kdpd.err)")

    lat = {}
    for i in range(n):
        for cmd, want, fig in steps_of(i):
            t0 = time.time_ns() // 1000
            mark = f"emitted {i} {fig}"
            if callable(cmd):
                cmd()
            else:
                os.write(cfd, f"{cmd}echo {mark}\n".encode())
            while True:
                got = k.allocatable(60)
                if got is None:
                    fail(f"cycle {i} ({fig}): no devices line with allocatable={want} within 60 s "
                         f"(see {work}/kdpd.err)")
                if got[1] == want:
                    lat.setdefault(fig, []).append(got[0] - t0)
                    break
            if not callable(cmd):
                t1 = marks.wait(mark, 60)
                if t1 is None:
                    fail(f"cycle {i} ({fig}): sim-node did not get through the command within 60 s")
                lat.setdefault(f"{fig}_sim", []).append(t1 - t0)
    for fig, v in lat.items():
        v.sort()
        print(f"{fig}_n={len(v)}")
        print(f"{fig}_p50_us={pct(v, 50)}")
        print(f"{fig}_p99_us={pct(v, 99)}")
        print(f"{fig}_max_us={v[-1]}")
finally:
    stop_all()
