# SPDX-License-Identifier: GPL-2.0-or-later
# The FPGA backend on two more Intel nodes: an Arria 10 PAC on the out-of-tree OPAE driver
# (tests/fixtures/nodes/fpga-opae: Intel's own worked example of an af name; a declared AFU it
# cannot be programmed with leaves the port Unhealthy, saying why), and an N3000 beside
# its XXV710 NICs with an N6001 whose port runs on its SR-IOV VF (fpga-ofs): the VF's port takes
# its interface ID from the PF's FME, the NICs are not looked at, region mode hands out the VF's
# port under the PF's FME, and the port stays listed, unhealthy, when the VF is disabled.
. "$(dirname "$0")/lib.sh"

NODE="$KDP_SOURCE_DIR/tests/fixtures/nodes/fpga-opae.umockdev"
. "$(dirname "$0")/fpga-lib.sh"
DCP=fpga.intel.com/af-695.d84.aVKNtusxV3qMNmj5-qCB9thCTcSko8QT-J5DNoP5BAs
N3000=fpga.intel.com/af-4cf.d84.TPJOPh4UeN2GUTPHFTSdqdhCTcSko8QT-J5DNoP5BAs
N6001=fpga.intel.com/af-ad1.f7d.rRpkIfYkj0ITSjzFRBNJavffQFy9es9yIvFEsLk6zRg
N6001_REGION=fpga.intel.com/region-ad1a6421f6248f42134a3cc54413496a

run_node opae
wait_line "$KUBELET_OUT" "^devices resource=$DCP "
grep -q 'sim-node: .*preload\|not built' "$T/kdpd-opae.err" && { echo "skip: no simulated node"; exit 77; }
wait_devices $DCP "^devices resource=$DCP capacity=1 allocatable=1 healthy=intel-fpga-port.0 unhealthy= numa=intel-fpga-port.0:0$"
assert_eq "$("$KDPCTL" allocate --socket "$(socket_of $DCP)" intel-fpga-port.0 | tr '\n' '|')" \
        "env KDP_FPGA_PCI_ADDRESSES=0000:06:00.0|device /dev/intel-fpga-port.0 /dev/intel-fpga-port.0 rw|" "allocate the OPAE port"
pass "OPAE driver: the port under Intel's worked-example name, its node"
stop_kdpd
stop_kubelet

# the OPAE driver has no dfl-fme node to program through: a declared AFU leaves the port Unhealthy, saying so
DCP_IFID=69528db6eb31577a8c3668f9faa081f6
NLB0=d8424dc4a4a3c413f89e433683f9040b
NLB3=f7df405cbd7acf7222f144b0b93acd18
write_gbs "$T/bitstreams" $DCP_IFID $NLB3
run_node opae-program -o fpga.bitstream_dir="$T/bitstreams" -o fpga.program=0000:06:00.0=$NLB3
NOT_DFL="card 0000:06:00.0 port intel-fpga-port.0 carries AFU $NLB0, not AFU $NLB3, and cannot be programmed: not a DFL card"
wait_line "$T/kdpd-opae-program.err" "\"Cannot program the declared AFU\" backend=\"fpga\" device=\"intel-fpga-port.0\" card=\"0000:06:00.0\" want=\"$NLB3\" have=\"$NLB0\" reason=\"$NOT_DFL\" err=\"Operation not supported\"$"
wait_devices $DCP "^devices resource=$DCP capacity=1 allocatable=0 healthy= unhealthy=intel-fpga-port.0 numa=intel-fpga-port.0:0$"
wait_line "$T/kdpd-opae-program.err" "\"Device became unhealthy\" resource=\"$DCP\" device=\"intel-fpga-port.0\" reason=\"$NOT_DFL\"$"
pass "OPAE driver: a declared AFU cannot be programmed; the port is Unhealthy with the exact reason"
stop_kdpd
stop_kubelet

NODE="$KDP_SOURCE_DIR/tests/fixtures/nodes/fpga-ofs.umockdev"
run_node ofs
wait_devices $N3000 "^devices resource=$N3000 capacity=1 allocatable=1 healthy=dfl-port.0 unhealthy= numa=dfl-port.0:0$"
wait_devices $N6001 "^devices resource=$N6001 capacity=1 allocatable=1 healthy=dfl-port.1 unhealthy= numa=dfl-port.1:1$"
assert_eq "$(grep -c '^registered ' "$KUBELET_OUT")" 2 "two resources registered"
assert_eq "$("$KDPCTL" allocate --socket "$(socket_of $N6001)" dfl-port.1 | tr '\n' '|')" \
        "env KDP_FPGA_PCI_ADDRESSES=0000:b1:00.1|device /dev/dfl-port.1 /dev/dfl-port.1 rw|" "allocate the VF's port"
assert_eq "$("$KDPCTL" not-served --state-dir "$T/state" | grep -c 0000:2)" 0 "the N3000's NICs are not looked at"
pass "af: the N3000's port and the N6001 VF's port, each under its card's interface ID"

echo "sriov 0000:b1:00.0 0" >&9
wait_devices $N6001 "^devices resource=$N6001 capacity=1 allocatable=0 healthy= unhealthy=dfl-port.1 "
wait_line "$T/kdpd-ofs.err" "\"Device (became unhealthy|unhealthy for another reason)\" resource=\"$N6001\" device=\"dfl-port.1\" reason=\"removed from the PCI bus\""
pass "af: the VF disabled, its port stays listed, unhealthy"
stop_kdpd
stop_kubelet

run_node ofs-region -o fpga.mode=region
wait_devices $N6001_REGION "^devices resource=$N6001_REGION capacity=1 allocatable=1 healthy=dfl-fme.1 unhealthy= numa=dfl-fme.1:1$"
assert_eq "$("$KDPCTL" allocate --socket "$(socket_of $N6001_REGION)" dfl-fme.1 | tr '\n' '|')" \
        "env KDP_FPGA_PCI_ADDRESSES=0000:b1:00.0|device /dev/dfl-port.1 /dev/dfl-port.1 rw|" "allocate the N6001's FME"
pass "region: the N6001's FME hands out the port of its VF"
stop_kdpd
pass "kdpd stopped cleanly"
