# SPDX-License-Identifier: GPL-2.0-or-later
# The GPU backend on a simulated node with 4 AMD Instinct MI300X (tests/fixtures/nodes/gpu-mi300x4):
# PCI addresses as IDs, NUMA, the render/card nodes of each GPU's own drm/ directory (the 28 XCP
# partition nodes are not GPUs), /dev/kfd, and health from the KFD topology. In SPX each GPU is one
# partition: under the default amd_partitions (single) its device is the GPU's.
. "$(dirname "$0")/lib.sh"

SIM="$KDP_SOURCE_DIR/tests/sim-node/sim-node"
RES=amd.com/gpu
ALL=0000:05:00.0,0000:27:00.0,0000:85:00.0,0000:a7:00.0

mkfifo "$T/ctl"
exec 9<>"$T/ctl"
start_kubelet kubelet
"${DIE_WITH_US[@]}" "$SIM" "$KDP_SOURCE_DIR/tests/fixtures/nodes/gpu-mi300x4.umockdev" --control "$T/ctl" -- "${KDPD_RUN[@]}" \
        --kubelet-dir "$DIR" --state-dir "$T/state" --cdi-dir "$T/cdi" --v 2 --health-hold-ms 300 --backend gpu \
        >"$T/kdpd.out" 2>"$T/kdpd.err" &
KDPD_PID=$!
PIDS+=($KDPD_PID)
wait_line "$T/kubelet.out" "^devices resource=$RES "
grep -q 'sim-node: .*preload\|not built' "$T/kdpd.err" && { echo "skip: no simulated node"; exit 77; }

devices_match $RES "^devices resource=$RES capacity=4 allocatable=4 healthy=$ALL unhealthy= numa=0000:05:00.0:0;0000:27:00.0:0;0000:85:00.0:1;0000:a7:00.0:1$"
assert_eq "$(grep -c '^registered ' "$T/kubelet.out")" 1 "only amd.com/gpu registered (the BMC VGA is no GPU)"
pass "4 MI300X by PCI address with their NUMA nodes"

S=$(plugin_socket amd.com_gpu)
assert_eq "$("$KDPCTL" allocate --socket "$S" 0000:85:00.0 | tr '\n' '|')" \
        "env KDP_GPU_PARTITIONS=0000:85:00.0|env KDP_GPU_PCI_ADDRESSES=0000:85:00.0|device /dev/dri/card17 /dev/dri/card17 rw|device /dev/dri/renderD144 /dev/dri/renderD144 rw|device /dev/kfd /dev/kfd rw|" \
        "allocate one GPU"
assert_eq "$("$KDPCTL" allocate --socket "$S" 0000:05:00.0 0000:27:00.0 | tr '\n' '|')" \
        "env KDP_GPU_PARTITIONS=0000:05:00.0,0000:27:00.0|env KDP_GPU_PCI_ADDRESSES=0000:05:00.0,0000:27:00.0|device /dev/dri/card1 /dev/dri/card1 rw|device /dev/dri/card9 /dev/dri/card9 rw|device /dev/dri/renderD128 /dev/dri/renderD128 rw|device /dev/dri/renderD136 /dev/dri/renderD136 rw|device /dev/kfd /dev/kfd rw|" \
        "allocate two GPUs: /dev/kfd once"
pass "Allocate: each GPU's card and render node, /dev/kfd once, the addresses in KDP_GPU_PCI_ADDRESSES"

assert_eq "$("$KDPCTL" preferred --socket "$S" --size 2 --must 0000:a7:00.0)" "preferred 0000:a7:00.0,0000:85:00.0" \
        "2 GPUs with one given: the same NUMA node"
pass "preferred allocation keeps to one NUMA node"

# GPU 1's KFD node (3) goes: amdgpu serves it no more for compute
echo "rm sys/devices/virtual/kfd/kfd/topology/nodes/3" >&9
devices_match $RES "allocatable=3 healthy=0000:05:00.0,0000:85:00.0,0000:a7:00.0 unhealthy=0000:27:00.0 "
wait_line "$T/kdpd.err" '"Device became unhealthy" resource="amd.com/gpu" device="0000:27:00.0" reason="not in the KFD topology"'
pass "a GPU missing from the KFD topology is unhealthy"

echo "unbind 0000:85:00.0" >&9
devices_match $RES "allocatable=2 healthy=0000:05:00.0,0000:a7:00.0 unhealthy=0000:27:00.0,0000:85:00.0 "
wait_line "$T/kdpd.err" '"Device became unhealthy" resource="amd.com/gpu" device="0000:85:00.0" reason="[^"]*no DRM render node"'
echo "bind 0000:85:00.0 amdgpu" >&9
devices_match $RES "allocatable=3 healthy=0000:05:00.0,0000:85:00.0,0000:a7:00.0 unhealthy=0000:27:00.0 "
pass "unbind drops the render node and makes the GPU unhealthy; rebind restores it"
stop_kdpd
pass "kdpd stopped cleanly"
