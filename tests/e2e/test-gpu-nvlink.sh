# SPDX-License-Identifier: GPL-2.0-or-later
# NVLink in GetPreferredAllocation on the simulated H100 NVL node (tests/fixtures/nodes/gpu-h100nvl:
# 7 cards, 3 behind one switch, 2 behind another, on NUMA 0; 2 behind a switch on NUMA 1), with
# the fake libnvidia-ml.so.1 (tests/nvml) reporting the NVLink bridges: 0000:19:00.0-0000:1a:00.0
# with 12 active links, 0000:3a:00.0-0000:3b:00.0 with 8 of 12 (one bridge down). The answers
# prefer NVLink pairs, more links first, then switch siblings, then the NUMA node; links that go
# down (written to the fake through its events FIFO) change the answers at the next scan,
# without a restart; with no link left the framework's PCIe answer is back. On the HGX node
# (gpu-h100x8), whose NVSwitches join every GPU alike, NVLink weighs nothing.
. "$(dirname "$0")/lib.sh"

NODES="$KDP_SOURCE_DIR/tests/fixtures/nodes"
LIB="$KDP_BUILD_DIR/tests/nvml/libnvidia-ml.so.1"
RES=nvidia.com/gpu
# IDs sort G0 G3 G2 G5 G1 G6 G4: the framework's order for ties and for the devices it adds
G0=GPU-0db832dd-214c-599c-8ea6-27bb2f6f30a7     # 0000:18:00.0  switch A (NUMA 0)
G1=GPU-d5c4444e-d5fd-4a28-0b71-2c292f91b4d7     # 0000:19:00.0  switch A, NVLink to G2
G2=GPU-4c53e4dc-d0fd-2b33-a4af-05fdd26adc24     # 0000:1a:00.0  switch A, NVLink to G1
G3=GPU-26017218-df5d-a2d0-d13c-aded252014c3     # 0000:3a:00.0  switch B (NUMA 0), NVLink to G4
G4=GPU-fc42e711-29c1-60ee-b946-2ee2fac1b52d     # 0000:3b:00.0  switch B, NVLink to G3
G5=GPU-5a25d721-f284-666a-7b94-de51cb0b247b     # 0000:9a:00.0  switch C (NUMA 1)
G6=GPU-dcd10830-e363-ea0e-b550-db9aa3ef0ec5     # 0000:9b:00.0  switch C
[ -f "$LIB" ] || fail "no fake NVML at $LIB (build the kdp-fake-nvml target)"

nvml_fifos
# links A B FIRST LAST STATE: links FIRST..LAST of the bridge between A and B, both ends
links() {
        local i
        for ((i = $3; i <= $4; i++)); do
                nvml "nvlink $1 $i $5 $2"
                nvml "nvlink $2 $i $5 $1"
        done
}
# prefer ARGS... EXPECTED: kdpctl preferred's answer
prefer() {
        local want=${*: -1}
        assert_eq "$("$KDPCTL" preferred --socket "$S" "${@:1:$#-1}")" "preferred $want" "preferred ${*:1:$#-1}"
}
{
        echo "gpu 0000:18:00.0 $G0 device=0x2321"
        echo "gpu 0000:19:00.0 $G1 device=0x2321"
        echo "gpu 0000:1a:00.0 $G2 device=0x2321"
        echo "gpu 0000:3a:00.0 $G3 device=0x2321"
        echo "gpu 0000:3b:00.0 $G4 device=0x2321"
        echo "gpu 0000:9a:00.0 $G5 device=0x2321"
        echo "gpu 0000:9b:00.0 $G6 device=0x2321"
        for i in $(seq 0 11); do
                echo "nvlink 0000:19:00.0 $i up 0000:1a:00.0"
                echo "nvlink 0000:1a:00.0 $i up 0000:19:00.0"
                state=up
                [ "$i" -ge 8 ] && state=down
                echo "nvlink 0000:3a:00.0 $i $state 0000:3b:00.0"
                echo "nvlink 0000:3b:00.0 $i $state 0000:3a:00.0"
        done
        echo "events $T/nvml-events"
} >"$T/nvml.fixture"
export KDP_FAKE_NVML="$T/nvml.fixture"

start_kubelet kubelet
start_sim_kdpd "$NODES/gpu-h100nvl.umockdev" --control "$T/ctl" -- --v 2 --health-hold-ms 300 --backend gpu \
        -o gpu.nvml="$LIB"
wait_line "$T/kubelet.out" "^devices resource=$RES "
grep -q 'sim-node: .*preload\|not built' "$T/kdpd.err" && { echo "skip: no simulated node"; exit 77; }
devices_match $RES "allocatable=7 healthy=$G0,$G3,$G2,$G5,$G1,$G6,$G4 unhealthy= "
wait_line "$T/kdpd.err" '"NVIDIA sources chosen" backend="gpu" xid="nvml" nvlink="nvml" discovery="sysfs\+procfs" nvmlGpus=7$'
for p in "0000:19:00.0 12 0000:1a:00.0" "0000:1a:00.0 12 0000:19:00.0" "0000:3a:00.0 8 0000:3b:00.0" \
         "0000:3b:00.0 8 0000:3a:00.0"; do
        set -- $p
        wait_line "$T/kdpd.err" "\"NVLink links changed\" backend=\"gpu\" pci=\"$1\" activeLinks=$2 peers=\"$3=$2\"$"
done
grep -q '"NVSwitches changed' "$T/kdpd.err" && fail "NVSwitches reported on a node without any"
S=$(plugin_socket nvidia.com_gpu)
pass "the NVLink bridges read from NVML at the first scan: 12 links and 8 active links"

prefer --size 2 "$G2,$G1"                       # the pair with 12 links
prefer --size 2 --must "$G4" "$G4,$G3"          # its NVLink partner, not G4's NUMA node's others
prefer --size 2 --must "$G0" "$G0,$G2"          # no NVLink: a switch sibling
prefer --size 2 --must "$G5" "$G5,$G6"
prefer --size 3 --must "$G3" "$G3,$G2,$G1"      # the pair with more links, on G3's NUMA node
prefer --size 3 "$G0,$G2,$G1"                   # a whole switch, its NVLink pair in it
prefer --size 4 "$G3,$G2,$G1,$G4"               # both NVLink pairs
prefer --size 1 "$G5"                           # a GPU of no pair: the pairs stay whole
prefer --size 3 --must "$G4" --must "$G3" "$G4,$G3,$G0"        # M first; G0 breaks no pair
prefer --size 2 --available "$G0" --available "$G2" --available "$G3" --available "$G4" --available "$G5" \
        --must "$G2" "$G2,$G0"                  # G1 gone: G2's switch sibling
pass "NVLink pairs first (more links first), then switch siblings, then the NUMA node"

# what leaves no choice is answered as before
prefer --size 7 "$G0,$G3,$G2,$G5,$G1,$G6,$G4"
prefer --size 9 "$G0,$G3,$G2,$G5,$G1,$G6,$G4"
prefer --size 2 --must "$G5" --must "$G1" "$G5,$G1"
grep -q '"Replaced backend preferred allocation by the default"' "$T/kdpd.err" && fail "an answer of the backend was refused"
pass "every GPU, more than there are, must_include of the size: the answers they had"

# an Unhealthy GPU's links are not read (a GPU off the bus can stall NVML); they are again once
# it is reset
nvml "event 0000:19:00.0 79"
wait_line "$T/kdpd.err" '"NVLink links changed" backend="gpu" pci="0000:19:00.0" activeLinks=0 peers=""$'
devices_match $RES "allocatable=6 healthy=$G0,$G3,$G2,$G5,$G6,$G4 unhealthy=$G1 "
prefer --size 2 --available "$G0" --available "$G2" --available "$G3" --available "$G4" --available "$G5" \
        --available "$G6" "$G3,$G4"
ctl uevent 0000:19:00.0 change
wait_line "$T/kdpd.err" '"GPU recovered: reset or rebound after its Xid" backend="gpu" pci="0000:19:00.0" xid=79 event="change"'
wait_count "$T/kdpd.err" '"NVLink links changed" backend="gpu" pci="0000:19:00.0" activeLinks=12 peers="0000:1a:00.0=12"$' 2
devices_match $RES "allocatable=7 healthy=$G0,$G3,$G2,$G5,$G1,$G6,$G4 unhealthy= "
prefer --size 2 "$G2,$G1"
pass "an Xid: the GPU's links were left unread until its reset"

# one of G1-G2's three bridges goes down (both ends): 4 links against G3-G4's 8
links 0000:19:00.0 0000:1a:00.0 0 7 down
wait_line "$T/kdpd.err" '"NVLink links changed" backend="gpu" pci="0000:19:00.0" activeLinks=4 peers="0000:1a:00.0=4"$'
wait_line "$T/kdpd.err" '"NVLink links changed" backend="gpu" pci="0000:1a:00.0" activeLinks=4 peers="0000:19:00.0=4"$'
prefer --size 2 "$G3,$G4"
prefer --size 3 --must "$G3" "$G3,$G0,$G4"
prefer --size 2 --must "$G1" "$G1,$G2"
pass "a bridge down: the pair with more links now is G3-G4, read at the next scan without a restart"

# the last links of G1-G2 go down
links 0000:19:00.0 0000:1a:00.0 8 11 down
wait_line "$T/kdpd.err" '"NVLink links changed" backend="gpu" pci="0000:19:00.0" activeLinks=0 peers=""$'
wait_line "$T/kdpd.err" '"NVLink links changed" backend="gpu" pci="0000:1a:00.0" activeLinks=0 peers=""$'
prefer --size 2 --must "$G1" "$G1,$G0"          # a link down counts as absent: switch siblings alike
prefer --size 2 "$G3,$G4"
pass "G1-G2 without active links: switch siblings like any other"

# and G3-G4's: no NVLink left, the framework's PCIe answer
links 0000:3a:00.0 0000:3b:00.0 0 7 down
wait_line "$T/kdpd.err" '"NVLink links changed" backend="gpu" pci="0000:3a:00.0" activeLinks=0 peers=""$'
wait_line "$T/kdpd.err" '"NVLink links changed" backend="gpu" pci="0000:3b:00.0" activeLinks=0 peers=""$'
prefer --size 2 "$G5,$G6"                       # the switch whose taking leaves the most together
prefer --size 2 --must "$G3" "$G3,$G4"
prefer --size 3 "$G0,$G2,$G1"
pass "no active NVLink left: the framework's PCIe locality answers"
stop_kdpd
pass "kdpd stopped cleanly"

# every Xid ignored: NVML still serves NVLink (and no Xid)
start_sim_kdpd "$NODES/gpu-h100nvl.umockdev" --v 2 --backend gpu -o gpu.nvml="$LIB" -o gpu.xid_ignore=all
wait_line "$T/kdpd.err" '"NVIDIA sources chosen" backend="gpu" xid="none" nvlink="nvml" discovery="sysfs\+procfs"$'
wait_line "$T/kdpd.err" '"NVLink links changed" backend="gpu" pci="0000:3b:00.0" activeLinks=8 peers="0000:3a:00.0=8"$'
wait_count "$T/kubelet.out" '^registered ' 2
S=$(plugin_socket nvidia.com_gpu)
prefer --size 2 "$G2,$G1"
prefer --size 2 --must "$G4" "$G4,$G3"
stop_kdpd
pass "xid_ignore: all: NVLink still weighs, read from NVML"

# The HGX node: 4 NVSwitches join every GPU at full bandwidth; a GPU-to-GPU link NVML reports
# changes nothing
cat >"$T/nvml.fixture" <<EOF
gpu 0000:18:00.0 GPU-7e22a81e-6b76-b0ca-e885-cc1f6ba67a93
gpu 0000:3a:00.0 GPU-2c119aa3-e093-cdf7-cc30-8b33c4369abc
nvlink 0000:18:00.0 0 up 0000:3a:00.0
nvlink 0000:3a:00.0 0 up 0000:18:00.0
EOF
start_sim_kdpd "$NODES/gpu-h100x8.umockdev" --v 2 --backend gpu -o gpu.nvml="$LIB"
wait_line "$T/kdpd.err" '"NVSwitches changed: NVLink weighs in preferred allocation only without them" backend="gpu" nvSwitches=4$'
wait_line "$T/kdpd.err" '"NVLink links changed" backend="gpu" pci="0000:18:00.0" activeLinks=1 peers="0000:3a:00.0=1"$'
wait_count "$T/kubelet.out" '^registered ' 3
S=$(plugin_socket nvidia.com_gpu)
# 0000:18:00.0's switch sibling 0000:19:00.0, not its NVLink peer 0000:3a:00.0
prefer --size 2 --must GPU-7e22a81e-6b76-b0ca-e885-cc1f6ba67a93 \
        "GPU-7e22a81e-6b76-b0ca-e885-cc1f6ba67a93,GPU-5264ed78-cbf9-0162-2418-d9eaadde9f39"
stop_kdpd
pass "with NVSwitches NVLink weighs nothing: the framework's answer"
