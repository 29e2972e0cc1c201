#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""bench/fpga_node.py DIR: writes the simulated node of bench/fpga.sh's 8-card figures into DIR.

    DIR/fpga-d5005x8.umockdev (+ .files/)   8 PAC D5005 on dfl-pci, 4 per NUMA node: card k
                                            is 0000:<0x11 + 0x18k>:00.0 with dfl-fme.k and
                                            dfl-port.k carrying NLB0, the D5005 interface ID;
                                            every FME answers a PR at once (SIM_FPGA_PR=good 0)

The cards are generate.py's d5005_card (the same records and formats as fpga-d5005); it is
written at bench time, not committed.
"""
import importlib.util
import os
import re
import sys

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "fpga-d5005x8"
CARDS = 8


def root_bus(k):
    return 0x10 + 0x18 * k


def write(out):
    """Writes the node into out; returns the record file's path."""
    spec = importlib.util.spec_from_file_location("generate", os.path.join(SRC, "tests/fixtures/nodes/generate.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    gen.OUT = out
    os.makedirs(out, exist_ok=True)
    n = gen.Node(224, gen.INTEL_CPUS)
    f = gen.fpga_files(NAME, "§1–§5 and §12",
                       "What it models: eight Intel PAC D5005 cards on the in-tree DFL driver, four per\n"
                       "socket, for bench/fpga.sh (written by bench/fpga_node.py at bench time).\n",
                       [(gen.DFL_PORT_MAJOR, "dfl-port"), (gen.DFL_FME_MAJOR, "dfl-fme")])
    for k in range(CARDS):
        gen.d5005_card(n, f, k, root_bus(k), k // 4, 40 + 10 * k, 60 + 10 * k, gen.NLB0)
    n.numa_nodes()
    n.write(f"{NAME}.umockdev", f)
    # every FME answers a PR at once (sim-node's SIM_FPGA_PR): the figures are kdp's, not a delay
    path = os.path.join(out, f"{NAME}.umockdev")
    out_lines = []
    with open(path) as src:
        for line in src.read().split("\n"):
            out_lines.append(line)
            if re.match(r"^P: .*/dfl-fme\.[0-9]+$", line):
                out_lines.append("E: SIM_FPGA_PR=good 0")
    with open(path, "w") as dst:
        dst.write("\n".join(out_lines))
    return path


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    write(os.path.abspath(sys.argv[1]))
