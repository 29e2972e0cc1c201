#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""bench/sriov_node.py DIR: writes the simulated node of bench/sriov.sh into DIR.

    DIR/sriov-e810x4.umockdev (+ .files/)   a 4-port Intel E810 (ice), 4 PFs x 64 VFs, every
                                            VF on iavf with a netdev: 256 VFs 8086:1889
    DIR/sriov-e810x4.json                   sriovdp's config.json with one pool taking them all,
                                            example.com/e810 (devices 1889, driver iavf)

The node is the E810 of tests/fixtures/nodes (generate.py's e810_node, the same records and
formats) with more PFs and VFs; it is written at bench time, not committed (about 1 MB).
Imported by bench/events.py, which uses the names below.
"""
import importlib.util
import json
import os
import sys

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "sriov-e810x4"
RESOURCE = "example.com/e810"
VFS = 64
# (function, PF netdev, phys_port_name, sriov_offset, first VF iommu group); offsets put the
# VFs of each PF right after those of the one before, PF3's last 8 on bus 0x8b [C]
PFS = [(fn, f"ens3f{fn}np{fn}", f"p{fn}", 8 + 63 * fn, 1000 + 100 * fn) for fn in range(4)]


def pf_address(fn):
    return f"0000:8a:00.{fn}"


def write(out):
    """Writes the node and its config into out; returns the record file's path."""
    spec = importlib.util.spec_from_file_location("generate", os.path.join(SRC, "tests/fixtures/nodes/generate.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    gen.OUT = out
    os.makedirs(out, exist_ok=True)
    node = gen.e810_node([(fn, ifname, port, offset, grp, VFS, ()) for fn, ifname, port, offset, grp in PFS],
                         vfs=VFS, vf_ifindex=lambda fn, i: 100 + VFS * fn + i)
    node.write(f"{NAME}.umockdev", gen.sriov_files(
        NAME, "§1–§6, §14 and §16",
        "What it models: a 4-port Intel E810 with 4 PFs on ice and 64 VFs each, every VF on iavf\n"
        "with a netdev, for bench/sriov.sh (written by bench/sriov_node.py at bench time).\n"))
    prefix, name = RESOURCE.split("/")
    with open(os.path.join(out, f"{NAME}.json"), "w") as f:
        json.dump({"resourceList": [{"resourceName": name, "resourcePrefix": prefix,
                                     "selectors": [{"vendors": ["8086"], "devices": ["1889"],
                                                    "drivers": ["iavf"]}]}]}, f)
    return os.path.join(out, f"{NAME}.umockdev")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    write(os.path.abspath(sys.argv[1]))
