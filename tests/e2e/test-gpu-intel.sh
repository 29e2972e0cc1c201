# SPDX-License-Identifier: GPL-2.0-or-later
# The GPU backend on Intel and mixed nodes: 2 Data Center GPU Flex 170 on i915
# (tests/fixtures/nodes/gpu-flex170x2), then a node with 2 NVIDIA L40S and a Flex 170 on xe
# (gpu-mixed) served by one kdpd as two resources, with per-model resource names.
. "$(dirname "$0")/lib.sh"

SIM="$KDP_SOURCE_DIR/tests/sim-node/sim-node"
NODES="$KDP_SOURCE_DIR/tests/fixtures/nodes"

start_kubelet kubelet
"${DIE_WITH_US[@]}" "$SIM" "$NODES/gpu-flex170x2.umockdev" -- "${KDPD_RUN[@]}" --kubelet-dir "$DIR" --state-dir "$T/state" --cdi-dir "$T/cdi" --v 2 \
        --backend gpu >"$T/kdpd.out" 2>"$T/kdpd.err" &
KDPD_PID=$!
PIDS+=($KDPD_PID)
wait_line "$T/kubelet.out" "^devices resource=gpu.intel.com/i915 "
grep -q 'sim-node: .*preload\|not built' "$T/kdpd.err" && { echo "skip: no simulated node"; exit 77; }
devices_match gpu.intel.com/i915 "^devices resource=gpu.intel.com/i915 capacity=2 allocatable=2 healthy=0000:4d:00.0,0000:ca:00.0 unhealthy= numa=0000:4d:00.0:0;0000:ca:00.0:1$"
S=$(plugin_socket gpu.intel.com_i915)
assert_eq "$("$KDPCTL" allocate --socket "$S" 0000:ca:00.0 | tr '\n' '|')" \
        "env KDP_GPU_PCI_ADDRESSES=0000:ca:00.0|device /dev/dri/card2 /dev/dri/card2 rw|device /dev/dri/renderD129 /dev/dri/renderD129 rw|" \
        "allocate a Flex 170"
pass "2 Flex 170 on i915 as gpu.intel.com/i915; Allocate gives the card and render node of the GPU's own drm/"
stop_kdpd

"${DIE_WITH_US[@]}" "$SIM" "$NODES/gpu-mixed.umockdev" -- "${KDPD_RUN[@]}" --kubelet-dir "$DIR" --state-dir "$T/state" --cdi-dir "$T/cdi" --v 2 --backend gpu \
        -o gpu.model_resources=10de:26b9=nvidia.com/l40s >"$T/kdpd.out" 2>"$T/kdpd.err" &
KDPD_PID=$!
PIDS+=($KDPD_PID)
wait_line "$T/kubelet.out" "^devices resource=gpu.intel.com/xe "
wait_line "$T/kubelet.out" "^devices resource=nvidia.com/l40s "
L0=GPU-134811c1-9005-63ee-e786-a6fccf6a22c3
L1=GPU-eb9ce7b3-4dbb-4e96-c041-bdad68aecd01
devices_match gpu.intel.com/xe "^devices resource=gpu.intel.com/xe capacity=1 allocatable=1 healthy=0000:da:00.0 unhealthy= numa=0000:da:00.0:1$"
devices_match nvidia.com/l40s "^devices resource=nvidia.com/l40s capacity=2 allocatable=2 healthy=$L0,$L1 unhealthy= numa=$L0:0;$L1:0$"
assert_eq "$(grep -c "^registered resource=\(gpu.intel.com/xe\|nvidia.com/l40s\) " "$T/kubelet.out")" 2 "two resources registered"
assert_eq "$("$KDPCTL" allocate --socket "$(plugin_socket gpu.intel.com_xe)" 0000:da:00.0 | tr '\n' '|')" \
        "env KDP_GPU_PCI_ADDRESSES=0000:da:00.0|device /dev/dri/card1 /dev/dri/card1 rw|device /dev/dri/renderD128 /dev/dri/renderD128 rw|" \
        "allocate the Flex 170 on xe"
assert_eq "$("$KDPCTL" allocate --socket "$(plugin_socket nvidia.com_l40s)" "$L1")" "env NVIDIA_VISIBLE_DEVICES=$L1" \
        "allocate an L40S"
pass "one kdpd serves NVIDIA and Intel GPUs as two resources; xe by its driver; L40S under its model's name"
stop_kdpd
