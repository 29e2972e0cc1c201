#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Checks a sim-node script against a fixture without running sim-node:

    check-script.py FIXTURE.umockdev [SCRIPT...] [FIXTURE.umockdev [SCRIPT...]]...
                    (a fixture without SCRIPT: one script on stdin)

It follows the fixture's devices through the script, line by line, by sim-node's rules
(tests/sim-node/sim-node.c: sim_unplug, sim_replug, sim_bind, sim_unbind, sim_sriov, sim_rm),
and names the first line sim-node would refuse: an unplug of a device already unplugged, a
replug of a present device or one under an unplugged parent, a bind of a bound device, an
unbind of an unbound one, set or uevent on an unplugged device, an sriov write without a
driver or while other VFs are enabled (the same count again is fine: it does nothing), a VF
that is not enabled, an rm of a path that is not there. The lines of test-converge.sh's own
("restore PATH" and "exclude PATH" write PATH; "nvml NAME") are taken as it takes them.

Each script starts from the fixture as sim-node loads it. Exit 0 when sim-node would take every
line of every script; 1 with "SCRIPT: line N: LINE: why" on stdout for each script at its first
line sim-node would refuse; 2 for a usage error or a command this checker does not know.
"""
import copy
import os
import re
import sys


class Device:
    def __init__(self, devpath):
        self.devpath = devpath
        self.env = {}
        self.attrs = {}
        self.links = {}
        self.node = None
        self.present = True
        self.driver = None

    @property
    def subsystem(self):
        return self.env.get("SUBSYSTEM", "")

    @property
    def is_pci(self):
        return self.subsystem == "pci"

    @property
    def record_driver(self):
        return self.env.get("DRIVER")

    def under(self, other):
        return self.devpath.startswith(other.devpath + "/")


def read_records(record_file):
    """The devices of a umockdev record file: P: starts one, E:, A:, L: and N: lines fill it"""
    devs = []
    with open(record_file) as f:
        for line in f:
            kind, value = line[:3], line[3:].rstrip("\n")
            if kind == "P: ":
                devs.append(Device(value))
                continue
            if not devs:
                continue
            key, _, v = value.partition("=")
            if kind == "E: ":
                devs[-1].env[key] = v
            elif kind == "A: ":
                devs[-1].attrs[key] = v
            elif kind == "L: ":
                devs[-1].links[key] = v
            elif kind == "N: ":
                devs[-1].node = key
    return devs


class Node:
    """The fixture's devices and files, and what the script has done to them so far. Files are
    those of FIXTURE.files/ and the present records' attributes and nodes, with what rm and write
    do to them (an unplug's sysfs directories going is not followed)."""

    def __init__(self, record_file):
        self.devs = read_records(record_file)
        self.numvfs = {d.devpath: self.enabled_by_record(d) for d in self.devs if d.is_pci}
        self.owners = {}
        for d in self.devs:
            self.owners[d.devpath] = self.find_owner(d)
        self.kept_back = {d.devpath for d in self.devs if self.find_held_back(d)}
        self.children = {d.devpath: [c for c in self.devs if not c.is_pci and c.under(d) and self.owner(c) is d]
                         for d in self.devs if d.is_pci}
        for d in self.devs:
            d.driver = d.record_driver if d.is_pci else None
            d.present = d.subsystem != "vfio" and not self.held_back(d)
        self.paths = set()
        files = record_file[:-len(".umockdev")] + ".files"
        for top in ("dev", "proc", "sys", "run"):
            for root, dirs, names in os.walk(os.path.join(files, top)):
                for name in dirs + names:
                    self.paths.add(os.path.relpath(os.path.join(root, name), files))
        for d in self.devs:
            if d.present:
                self.paths.update(f"sys{d.devpath}/{a}" for a in list(d.attrs) + list(d.links))
                if d.node:
                    self.paths.add(f"dev/{d.node}")

    def owner(self, d):
        return self.owners[d.devpath]

    def find_owner(self, d):
        """The PCI function d is or belongs to"""
        best = None
        for p in self.devs:
            if p.is_pci and (p is d or d.under(p)) and (best is None or len(p.devpath) > len(best.devpath)):
                best = p
        return best

    def slot(self, d):
        return d.env.get("PCI_SLOT_NAME", d.devpath.rsplit("/", 1)[-1])

    def vfs_of(self, pf):
        """The PF's VFs in address order (sim_vfs_of)"""
        name = "../" + self.slot(pf)
        return sorted((d for d in self.devs if d.links.get("physfn") == name), key=self.slot)

    def pf_of(self, vf):
        target = vf.links.get("physfn")
        return next((d for d in self.devs if d.is_pci and target == "../" + self.slot(d)), None) if target else None

    def held_back(self, d):
        return d.devpath in self.kept_back

    def find_held_back(self, d):
        """A VF the PF's record does not enable, or a device of such a VF"""
        o = self.owner(d)
        pf = self.pf_of(o) if o else None
        return pf is not None and self.vfs_of(pf).index(o) >= self.enabled_by_record(pf)

    @staticmethod
    def enabled_by_record(pf):
        """The VFs the PF's record enables: its sriov_numvfs"""
        value = pf.attrs.get("sriov_numvfs", "0").replace("\\n", "")
        return int(value) if value.isdigit() else 0

    def class_children(self, d):
        return self.children.get(d.devpath, [])

    def state(self):
        return copy.deepcopy(([(d.present, d.driver) for d in self.devs], self.numvfs, self.paths))

    def restore(self, state):
        devs, numvfs, paths = copy.deepcopy(state)
        for d, (present, driver) in zip(self.devs, devs):
            d.present, d.driver = present, driver
        self.numvfs, self.paths = numvfs, paths

    def resolve(self, addr):
        if addr.startswith("/sys/devices/"):
            addr = addr[4:]
        if addr.startswith("/devices/"):
            found = [d for d in self.devs if d.devpath == addr.rstrip("/")]
        elif "/" in addr:
            sub, name = addr.split("/", 1)
            found = [d for d in self.devs if d.subsystem == sub and d.devpath.rsplit("/", 1)[-1] == name]
        else:
            m = re.fullmatch(r"(?:([0-9a-fA-F]+):)?([0-9a-fA-F]+):([0-9a-fA-F]+)\.([0-7])", addr)
            if not m:
                return None
            bdf = "%04x:%02x:%02x.%x" % (int(m.group(1) or "0", 16), int(m.group(2), 16),
                                         int(m.group(3), 16), int(m.group(4), 16))
            found = [d for d in self.devs if d.is_pci and self.slot(d) == bdf]
        return found[0] if found else None

    # -- the commands: each returns None when sim-node would take it, else why not

    def appear(self, d, bound):
        d.present = True
        d.driver = d.record_driver if bound and d.is_pci else None
        if d.is_pci and (d.driver or not d.record_driver):
            for c in self.class_children(d):
                c.present = True

    def gone(self, d):
        d.present = False
        d.driver = None

    def unplug(self, d):
        if not d.present:
            return "already unplugged"
        for c in self.devs:
            if (c is d or c.under(d)) and c.present:
                self.gone(c)
        return None

    def replug(self, d):
        if d.present:
            return "present: unplug it first"
        if any(d.under(a) and not a.present for a in self.devs):
            return "its parent is unplugged"
        if not d.is_pci:
            d.present = True
            return None
        for c in self.devs:
            if (c is d or c.under(d)) and c.is_pci and not self.held_back(c):
                self.appear(c, True)
        self.numvfs[d.devpath] = self.enabled_by_record(d)
        for i, vf in enumerate(self.vfs_of(d)):
            if not vf.present and i < self.enabled_by_record(d):
                self.appear(vf, True)
        return None

    def unbind(self, d):
        if not d.present:
            return "unplugged"
        if not d.driver:
            return "has no driver"
        d.driver = None
        for c in self.class_children(d):
            c.present = False
        return None

    def bind(self, d, driver):
        if not d.present:
            return "unplugged"
        if d.driver:
            return f"already bound to {d.driver}"
        d.driver = driver
        if driver == d.record_driver:
            for c in self.class_children(d):
                c.present = True
        return None

    def sriov(self, pf, n):
        if not pf.present:
            return "unplugged"
        if pf.devpath not in self.numvfs or "sriov_numvfs" not in pf.attrs:
            return "not an SR-IOV PF"
        now = self.numvfs[pf.devpath]
        vfs = self.vfs_of(pf)
        if n == now:
            return None
        if not pf.driver:
            return "no driver to enable VFs (the kernel gives ENOENT)"
        if n > 0 and now > 0:
            return f"{now} VFs enabled: write 0 first (the kernel gives EBUSY)"
        if n > len(vfs):
            return f"the records declare {len(vfs)} VFs"
        self.numvfs[pf.devpath] = n
        if n == 0:
            for vf in vfs[:now]:
                if vf.present:
                    self.unplug(vf)
        for vf in vfs[:n]:
            if vf.present:
                return f"the VF {self.slot(vf)} is present already"
            self.appear(vf, True)
        return None

    def exists(self, path):
        return any(p == path or p.startswith(path + "/") for p in self.paths)

    def rm(self, path):
        if not self.exists(path):
            return "no such file"
        self.paths = {p for p in self.paths if p != path and not p.startswith(path + "/")}
        return None


def check(node, lines):
    """The first line sim-node would refuse: (number, line, why), or None"""
    for n, line in enumerate(lines, 1):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        verb, args = words[0], words[1:]
        why = None
        if verb in ("unplug", "replug", "unbind", "bind", "set", "uevent", "sriov", "drift"):
            d = node.resolve(args[0]) if args else None
            if d is None:
                why = "names no device of the fixture"
            elif verb == "unplug":
                why = node.unplug(d)
            elif verb == "replug":
                why = node.replug(d)
            elif verb == "unbind":
                why = node.unbind(d)
            elif verb == "bind":
                why = node.bind(d, args[1]) if len(args) == 2 else "usage: bind ADDR DRIVER"
            elif verb == "sriov":
                why = node.sriov(d, int(args[1])) if len(args) == 2 and args[1].isdigit() else "usage: sriov ADDR N"
            elif not d.present:
                why = "unplugged"
        elif verb == "rm":
            why = node.rm(args[0].rstrip("/")) if args else "usage: rm PATH"
        elif verb in ("write", "mkdir", "restore", "exclude"):
            node.paths.add(args[0].rstrip("/"))
        elif verb not in ("wait", "wait-listeners", "sleep", "echo", "kmsg", "fpga-pr", "nvml"):
            print(f"line {n}: {line}: unknown command {verb}")
            sys.exit(2)
        if why:
            return n, line, why
    return None


def check_scripts(fixture, scripts):
    """How many of the scripts sim-node would refuse on fixture; each one said on stdout"""
    node = Node(fixture)
    loaded = node.state()
    refused = 0
    for script in scripts or ["-"]:
        node.restore(loaded)
        with (open(script) if script != "-" else sys.stdin) as f:
            bad = check(node, f.read().splitlines())
        if bad:
            print(f"{script}: " + "line %d: %s: %s" % bad)
            refused += 1
    return refused


def main():
    if len(sys.argv) < 2 or not sys.argv[1].endswith(".umockdev"):
        sys.exit(__doc__)
    groups = []
    for arg in sys.argv[1:]:
        if arg.endswith(".umockdev"):
            groups.append((arg, []))
        else:
            groups[-1][1].append(arg)
    refused = sum(check_scripts(fixture, scripts) for fixture, scripts in groups)
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
