# SPDX-License-Identifier: GPL-2.0-or-later
# The FPGA backend on a simulated node with 2 Alveo U250 under XRT (tests/fixtures/nodes/fpga-u250):
# AMD's plugin's resource name from the shell's VBNV and timestamp, the user PF as device ID,
# NUMA, the render node (and with xilinx_mgmt_node the management node) as rwm DeviceSpecs; XRT's
# readiness polled from sysfs; a shell reset (dev_offline, rom.* gone and back under another
# number) that keeps the card; the older xilinx.com/ names.
. "$(dirname "$0")/lib.sh"

NODE="$KDP_SOURCE_DIR/tests/fixtures/nodes/fpga-u250.umockdev"
. "$(dirname "$0")/fpga-lib.sh"
RES=amd.com/xilinx_u250_gen3x16_xdma_shell_4_1-0
USER_B=/devices/pci0000:d7/0000:d7:00.0/0000:d8:00.1

run_node amd -o fpga.busy_hold_s=600
wait_line "$KUBELET_OUT" "^devices resource=$RES "
grep -q 'sim-node: .*preload\|not built' "$T/kdpd-amd.err" && { echo "skip: no simulated node"; exit 77; }
wait_devices $RES "^devices resource=$RES capacity=2 allocatable=2 healthy=0000:3b:00.1,0000:d8:00.1 unhealthy= numa=0000:3b:00.1:0;0000:d8:00.1:1$"
assert_eq "$(grep -c '^registered ' "$KUBELET_OUT")" 1 "one resource registered"
pass "2 U250 by user PF under AMD's name, NUMA 0 and 1"

S=$(socket_of $RES)
assert_eq "$("$KDPCTL" allocate --socket "$S" 0000:d8:00.1 | tr '\n' '|')" \
        "env KDP_FPGA_PCI_ADDRESSES=0000:d8:00.1|device /dev/dri/renderD129 /dev/dri/renderD129 rwm|" "allocate card B"
assert_eq "$("$KDPCTL" prestart --socket "$S" 0000:d8:00.1 2>&1)" "prestart ok" "PreStart of an Alveo card"
pass "Allocate: the user PF's render node rwm, no management node by default"

echo "set $USER_B ready 0x0" >&9
wait_devices $RES "allocatable=1 healthy=0000:3b:00.1 unhealthy=0000:d8:00.1 "
wait_line "$T/kdpd-amd.err" "\"Device became unhealthy\" resource=\"$RES\" device=\"0000:d8:00.1\" reason=\"not ready \\(ready 0x0\\)\""
echo "set $USER_B ready 0x1" >&9
wait_devices $RES "allocatable=2 healthy=0000:3b:00.1,0000:d8:00.1 unhealthy= "
pass "a card whose mailbox is not ready is unhealthy until it is"

# the shell reset: a long hold-off (busy_hold_s=600) keeps the card healthy through the window
echo "set $USER_B dev_offline 1" >&9
echo "unplug $USER_B/rom.u.9" >&9
echo "echo offline" >&9
sleep 3
assert_eq "$(grep "^devices resource=$RES " "$KUBELET_OUT" | tail -n 1 | cut -d' ' -f3-5)" \
        "capacity=2 allocatable=2 healthy=0000:3b:00.1,0000:d8:00.1" "the card is kept through the reset"
echo "write sys$USER_B/rom.u.12/VBNV xilinx_u250_gen3x16_xdma_shell_4_1" >&9
echo "write sys$USER_B/rom.u.12/timestamp 0" >&9
echo "set $USER_B dev_offline 0" >&9
echo "echo reset-done" >&9
sleep 3
assert_eq "$(grep "^devices resource=$RES " "$KUBELET_OUT" | tail -n 1 | cut -d' ' -f3-5)" \
        "capacity=2 allocatable=2 healthy=0000:3b:00.1,0000:d8:00.1" "the card is back under its name"
grep -q '"Device not served".*0000:d8:00.1' "$T/kdpd-amd.err" && fail "the card was dropped during its reset"
echo "unbind 0000:d8:00.1" >&9
wait_devices $RES "allocatable=1 healthy=0000:3b:00.1 unhealthy=0000:d8:00.1 "
wait_line "$T/kdpd-amd.err" "\"Device (became unhealthy|unhealthy for another reason)\" resource=\"$RES\" device=\"0000:d8:00.1\" reason=\"driver unbound \\(expected xocl\\)\""
echo "bind 0000:d8:00.1 xocl" >&9
wait_devices $RES "allocatable=2 healthy=0000:3b:00.1,0000:d8:00.1 unhealthy= "
pass "a shell reset (dev_offline, rom.* re-created under another number) keeps the card; unbind and bind follow"
stop_kdpd
stop_kubelet

run_node old -o fpga.xilinx_prefix=xilinx.com/fpga- -o fpga.xilinx_mgmt_node=true
OLD=xilinx.com/fpga-xilinx_u250_gen3x16_xdma_shell_4_1-0
wait_devices $OLD "^devices resource=$OLD capacity=2 allocatable=2 healthy=0000:3b:00.1,0000:d8:00.1 unhealthy= "
S=$(socket_of $OLD)
assert_eq "$("$KDPCTL" allocate --socket "$S" 0000:3b:00.1 | tr '\n' '|')" \
        "env KDP_FPGA_PCI_ADDRESSES=0000:3b:00.1|device /dev/dri/renderD128 /dev/dri/renderD128 rwm|device /dev/xclmgmt15104 /dev/xclmgmt15104 rwm|" \
        "allocate card A with its management node"
pass "xilinx_prefix and xilinx_mgmt_node: the older names, and /dev/xclmgmt<instance>"
stop_kdpd
pass "kdpd stopped cleanly"
