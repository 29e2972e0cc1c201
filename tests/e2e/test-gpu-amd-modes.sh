# SPDX-License-Identifier: GPL-2.0-or-later
# The GPU backend on the MI300-class nodes whose GPUs are cut in 2 or 4 (tests/fixtures/nodes, see
# their README's "Partition modes"): in each, KFD names only some XCPs' render nodes, and the
# others must go to no one.
#   gpu-mi300x4-dpx  4 MI300X in DPX/NPS1: 2 partitions a GPU (the PCI device's DRM device and
#                    amdgpu_xcp_<7g>); whole, single and mixed (amd.com/dpx_nps1)
#   gpu-mi300x4-qpx  4 MI300X in QPX/NPS4: 4 partitions a GPU; whole, single and mixed
#                    (amd.com/qpx_nps4)
#   gpu-mi308x4-cpx  4 MI308X (1002:74a2, 4 XCCs) in CPX/NPS4: 4 partitions a GPU; mixed
#                    (amd.com/cpx_nps4), and whole under its model_resources entry
. "$(dirname "$0")/lib.sh"

NODES="$KDP_SOURCE_DIR/tests/fixtures/nodes"
. "$(dirname "$0")/amd-lib.sh"
ALL4="0 1 2 3"

# ---- DPX/NPS1: 2 partitions a GPU, 96 GiB each
NODE="$NODES/gpu-mi300x4-dpx.umockdev"
run_node dpx-whole -o gpu.amd_partitions=whole
wait_line "$T/kubelet.out" "^devices resource=amd.com/gpu "
grep -q 'sim-node: .*preload\|not built' "$T/dpx-whole.err" && { echo "skip: no simulated node"; exit 77; }
devices_match amd.com/gpu "^devices resource=amd.com/gpu capacity=4 allocatable=4 healthy=${GPUS// /,} unhealthy= numa=$(gpus_numa)$"
S=$(plugin_socket amd.com_gpu)
alloc_match "$S" "env KDP_GPU_PCI_ADDRESSES=0000:27:00.0|$(specs card9 card10 renderD136 renderD137)" 0000:27:00.0
alloc_match "$S" "env KDP_GPU_PCI_ADDRESSES=0000:a7:00.0,0000:05:00.0|$(specs card1 card2 card25 card26 renderD128 renderD129 renderD152 renderD153)" \
        0000:a7:00.0 0000:05:00.0
assert_eq "$(grep -c '^registered ' "$T/kubelet.out")" 1 "only amd.com/gpu registered"
pass "DPX whole: 4 GPUs, each with its 2 partitions' card and render node (not its 6 unnamed XCPs'), /dev/kfd"
end_node

run_node dpx-single -o gpu.amd_partitions=single
devices_match amd.com/gpu "^devices resource=amd.com/gpu capacity=8 allocatable=8 healthy=$(ids "$ALL4" "0 1") unhealthy= numa=$(numa_of "$ALL4" "0 1")$"
S=$(plugin_socket amd.com_gpu)
alloc_match "$S" "env KDP_GPU_PARTITIONS=0000:85:00.0-p1|env KDP_GPU_PCI_ADDRESSES=0000:85:00.0|$(specs card18 renderD145)" 0000:85:00.0-p1
alloc_match "$S" "env KDP_GPU_PARTITIONS=0000:85:00.0-p0,0000:85:00.0-p1|env KDP_GPU_PCI_ADDRESSES=0000:85:00.0|$(specs card17 card18 renderD144 renderD145)" \
        0000:85:00.0-p0 0000:85:00.0-p1
pass "DPX single: 8 partitions of amd.com/gpu; partition 1 is amdgpu_xcp_<7g>'s card and render node"
end_node

run_node dpx-mixed -o gpu.amd_partitions=mixed
devices_match amd.com/dpx_nps1 "^devices resource=amd.com/dpx_nps1 capacity=8 allocatable=8 healthy=$(ids "$ALL4" "0 1") unhealthy= numa=$(numa_of "$ALL4" "0 1")$"
assert_eq "$(grep -c '^registered ' "$T/kubelet.out")" 1 "only amd.com/dpx_nps1 registered"
S=$(plugin_socket amd.com_dpx_nps1)
alloc_match "$S" "env KDP_GPU_PARTITIONS=0000:a7:00.0-p1,0000:05:00.0-p0|env KDP_GPU_PCI_ADDRESSES=0000:a7:00.0,0000:05:00.0|$(specs card1 card26 renderD128 renderD153)" \
        0000:a7:00.0-p1 0000:05:00.0-p0
pass "DPX mixed: 8 partitions of amd.com/dpx_nps1, nothing else registered"
end_node

# ---- QPX/NPS4: 4 partitions a GPU, 48 GiB each
NODE="$NODES/gpu-mi300x4-qpx.umockdev"
run_node qpx-whole -o gpu.amd_partitions=whole
devices_match amd.com/gpu "^devices resource=amd.com/gpu capacity=4 allocatable=4 healthy=${GPUS// /,} unhealthy= numa=$(gpus_numa)$"
S=$(plugin_socket amd.com_gpu)
alloc_match "$S" "env KDP_GPU_PCI_ADDRESSES=0000:05:00.0|$(specs card1 card2 card3 card4 renderD128 renderD129 renderD130 renderD131)" 0000:05:00.0
pass "QPX whole: 4 GPUs, each with its 4 partitions' card and render node (not its 4 unnamed XCPs'), /dev/kfd"
end_node

run_node qpx-single -o gpu.amd_partitions=single
devices_match amd.com/gpu "^devices resource=amd.com/gpu capacity=16 allocatable=16 healthy=$(ids "$ALL4" "$ALL4") unhealthy= numa=$(numa_of "$ALL4" "$ALL4")$"
S=$(plugin_socket amd.com_gpu)
alloc_match "$S" "env KDP_GPU_PARTITIONS=0000:27:00.0-p3|env KDP_GPU_PCI_ADDRESSES=0000:27:00.0|$(specs card12 renderD139)" 0000:27:00.0-p3
pass "QPX single: 16 partitions of amd.com/gpu; partition 3 is amdgpu_xcp_<7g+2>'s card and render node"
end_node

run_node qpx-mixed -o gpu.amd_partitions=mixed
devices_match amd.com/qpx_nps4 "^devices resource=amd.com/qpx_nps4 capacity=16 allocatable=16 healthy=$(ids "$ALL4" "$ALL4") unhealthy= numa=$(numa_of "$ALL4" "$ALL4")$"
assert_eq "$(grep -c '^registered ' "$T/kubelet.out")" 1 "only amd.com/qpx_nps4 registered"
S=$(plugin_socket amd.com_qpx_nps4)
alloc_match "$S" "env KDP_GPU_PARTITIONS=0000:85:00.0-p2,0000:85:00.0-p3|env KDP_GPU_PCI_ADDRESSES=0000:85:00.0|$(specs card19 card20 renderD146 renderD147)" \
        0000:85:00.0-p2 0000:85:00.0-p3
pass "QPX mixed: 16 partitions of amd.com/qpx_nps4, a GPU's address once for two of its partitions"
end_node

# ---- MI308X in CPX/NPS4: 4 partitions of 1 XCC a GPU
NODE="$NODES/gpu-mi308x4-cpx.umockdev"
run_node mi308x-mixed -o gpu.amd_partitions=mixed
devices_match amd.com/cpx_nps4 "^devices resource=amd.com/cpx_nps4 capacity=16 allocatable=16 healthy=$(ids "$ALL4" "$ALL4") unhealthy= numa=$(numa_of "$ALL4" "$ALL4")$"
S=$(plugin_socket amd.com_cpx_nps4)
alloc_match "$S" "env KDP_GPU_PARTITIONS=0000:a7:00.0-p3|env KDP_GPU_PCI_ADDRESSES=0000:a7:00.0|$(specs card28 renderD155)" 0000:a7:00.0-p3
pass "MI308X mixed: 16 partitions of amd.com/cpx_nps4"
end_node

run_node mi308x-whole -o gpu.amd_partitions=whole -o gpu.model_resources=1002:74a2=amd.com/mi308x
devices_match amd.com/mi308x "^devices resource=amd.com/mi308x capacity=4 allocatable=4 healthy=${GPUS// /,} unhealthy= numa=$(gpus_numa)$"
assert_eq "$(grep -c '^registered ' "$T/kubelet.out")" 1 "only amd.com/mi308x registered"
S=$(plugin_socket amd.com_mi308x)
alloc_match "$S" "env KDP_GPU_PCI_ADDRESSES=0000:85:00.0|$(specs card17 card18 card19 card20 renderD144 renderD145 renderD146 renderD147)" 0000:85:00.0
pass "MI308X whole: 1002:74a2 under its model_resources entry, each GPU with its 4 partitions' nodes"
end_node
