# SPDX-License-Identifier: GPL-2.0-or-later
# The GPU backend on 4 AMD Instinct MI300X in CPX/NPS4 (tests/fixtures/nodes/gpu-mi300x4-cpx: 8
# compute partitions per GPU, partitions 1-7 on amdgpu_xcp_<k> platform devices that KFD names):
#   amd_partitions whole            a GPU is one device with the card and render node of each
#                                   of its 8 partitions, and /dev/kfd
#   amd_partitions single (default) each partition one device of amd.com/gpu ("<address>-p<i>"),
#                                   as AMD's plugin, whose default is single too
#   amd_partitions mixed            each partition one device of amd.com/cpx_nps4 (AMD's names)
# and a repartition while kdpd runs (gpu-mi300x4-cpx-repartition.script: GPU 0 to SPX/NPS1 and
# back), followed without a restart.
. "$(dirname "$0")/lib.sh"

NODE="$KDP_SOURCE_DIR/tests/fixtures/nodes/gpu-mi300x4-cpx.umockdev"
. "$(dirname "$0")/amd-lib.sh"

ALL8="0 1 2 3 4 5 6 7"
REPART="$KDP_SOURCE_DIR/tests/fixtures/nodes/gpu-mi300x4-cpx-repartition.script"

# to_spx, back_to_cpx: the repartition script to its "spx" mark (GPU 0 in SPX/NPS1), and the
# rest, which the test sends once it has checked the SPX state (the script pauses only 500 ms)
to_spx() {
        echo "$(sed -n '/^wait-listeners/,/^echo spx$/p' "$REPART")" >&9
}
back_to_cpx() {
        echo "$(sed '1,/^echo spx$/d' "$REPART")" >&9
}
GPU1_NODES="card10 card11 card12 card13 card14 card15 card16 card9 renderD136 renderD137 renderD138 renderD139 renderD140 renderD141 renderD142 renderD143"
GPU0_NODES="card1 card2 card3 card4 card5 card6 card7 card8 renderD128 renderD129 renderD130 renderD131 renderD132 renderD133 renderD134 renderD135"

# ---- whole GPUs: every partition's card and render node
run_node whole -o gpu.amd_partitions=whole
wait_line "$T/kubelet.out" "^devices resource=amd.com/gpu "
grep -q 'sim-node: .*preload\|not built' "$T/whole.err" && { echo "skip: no simulated node"; exit 77; }
devices_match amd.com/gpu "^devices resource=amd.com/gpu capacity=4 allocatable=4 healthy=${GPUS// /,} unhealthy= numa=$(gpus_numa)$"
assert_eq "$(grep -c '^registered ' "$T/kubelet.out")" 1 "only amd.com/gpu registered"
pass "whole: 4 GPUs of 8 partitions each, one device each, NUMA of their sockets"
S=$(plugin_socket amd.com_gpu)
alloc_match "$S" "env KDP_GPU_PCI_ADDRESSES=0000:27:00.0|$(specs $GPU1_NODES)" 0000:27:00.0
alloc_match "$S" "env KDP_GPU_PCI_ADDRESSES=0000:05:00.0,0000:27:00.0|$(specs $GPU0_NODES $GPU1_NODES)" \
        0000:05:00.0 0000:27:00.0
pass "whole: Allocate gives the 8 cards and 8 render nodes of each GPU (PCI device and amdgpu_xcp_*), /dev/kfd once"

# the repartition: GPU 0 to SPX/NPS1 (one KFD node: its PCI device's pair only), then back
to_spx
wait_line "$T/whole.out" '^spx$'
alloc_match "$S" "env KDP_GPU_PCI_ADDRESSES=0000:05:00.0|$(specs card1 renderD128)" 0000:05:00.0
devices_match amd.com/gpu "^devices resource=amd.com/gpu capacity=4 allocatable=4 healthy=${GPUS// /,} unhealthy= "
back_to_cpx
wait_line "$T/whole.out" '^cpx$'
alloc_match "$S" "env KDP_GPU_PCI_ADDRESSES=0000:05:00.0|$(specs $GPU0_NODES)" 0000:05:00.0
devices_match amd.com/gpu "^devices resource=amd.com/gpu capacity=4 allocatable=4 healthy=${GPUS// /,} unhealthy= "
pass "whole: after CPX -> SPX a GPU has 1 card and render node, after SPX -> CPX 8 again, no restart"
end_node

# ---- single (the default): each partition a device of amd.com/gpu
run_node single
devices_match amd.com/gpu "^devices resource=amd.com/gpu capacity=32 allocatable=32 healthy=$(ids "0 1 2 3" "$ALL8") unhealthy= numa=$(numa_of "0 1 2 3" "$ALL8")$"
pass "single: 32 partitions of amd.com/gpu, each with its GPU's NUMA node"
S=$(plugin_socket amd.com_gpu)
alloc_match "$S" "env KDP_GPU_PARTITIONS=0000:27:00.0-p0|env KDP_GPU_PCI_ADDRESSES=0000:27:00.0|$(specs card9 renderD136)" 0000:27:00.0-p0
alloc_match "$S" "env KDP_GPU_PARTITIONS=0000:27:00.0-p3|env KDP_GPU_PCI_ADDRESSES=0000:27:00.0|$(specs card12 renderD139)" 0000:27:00.0-p3
alloc_match "$S" "env KDP_GPU_PARTITIONS=0000:a7:00.0-p7,0000:a7:00.0-p6,0000:05:00.0-p1|env KDP_GPU_PCI_ADDRESSES=0000:a7:00.0,0000:05:00.0|$(specs card2 card31 card32 renderD129 renderD158 renderD159)" \
        0000:a7:00.0-p7 0000:a7:00.0-p6 0000:05:00.0-p1
pass "single: a partition gets its own card and render node (partition 0: the PCI device's, others: their XCP's) and /dev/kfd"
end_node

# ---- mixed: AMD's names, amd.com/<compute>_<memory>; the repartition moves GPU 0 between them
run_node mixed -o gpu.amd_partitions=mixed
devices_match amd.com/cpx_nps4 "^devices resource=amd.com/cpx_nps4 capacity=32 allocatable=32 healthy=$(ids "0 1 2 3" "$ALL8") unhealthy= numa=$(numa_of "0 1 2 3" "$ALL8")$"
assert_eq "$(grep -c '^registered ' "$T/kubelet.out")" 1 "only amd.com/cpx_nps4 registered"
S=$(plugin_socket amd.com_cpx_nps4)
alloc_match "$S" "env KDP_GPU_PARTITIONS=0000:85:00.0-p5|env KDP_GPU_PCI_ADDRESSES=0000:85:00.0|$(specs card22 renderD149)" 0000:85:00.0-p5
pass "mixed: 32 partitions of amd.com/cpx_nps4"
to_spx
wait_line "$T/mixed.out" '^spx$'
devices_match amd.com/spx_nps1 "^devices resource=amd.com/spx_nps1 capacity=1 allocatable=1 healthy=0000:05:00.0 unhealthy= numa=0000:05:00.0:0$"
devices_match amd.com/cpx_nps4 "^devices resource=amd.com/cpx_nps4 capacity=24 allocatable=24 healthy=$(ids "1 2 3" "$ALL8") unhealthy= numa=$(numa_of "1 2 3" "$ALL8")$"
alloc_match "$(plugin_socket amd.com_spx_nps1)" "env KDP_GPU_PARTITIONS=0000:05:00.0|env KDP_GPU_PCI_ADDRESSES=0000:05:00.0|$(specs card1 renderD128)" 0000:05:00.0
# a scan may fall between the script's compute and memory writes (SPX with NPS4 for a moment):
# the last move is to spx_nps1, from whichever resource that scan saw
wait_line "$T/mixed.err" '"GPU.s partition mode gives it another resource" backend="gpu" pci="0000:05:00.0" from="amd.com/(cpx|spx)_nps4" to="amd.com/spx_nps1"'
pass "mixed: GPU 0 in SPX/NPS1 is one device of amd.com/spx_nps1, its 8 partitions left amd.com/cpx_nps4"
back_to_cpx
wait_line "$T/mixed.out" '^cpx$'
devices_match amd.com/spx_nps1 "^devices resource=amd.com/spx_nps1 capacity=0 allocatable=0 healthy= unhealthy= numa=$"
devices_match amd.com/cpx_nps4 "^devices resource=amd.com/cpx_nps4 capacity=32 allocatable=32 healthy=$(ids "0 1 2 3" "$ALL8") unhealthy= "
alloc_match "$S" "env KDP_GPU_PARTITIONS=0000:05:00.0-p4|env KDP_GPU_PCI_ADDRESSES=0000:05:00.0|$(specs card5 renderD132)" 0000:05:00.0-p4
pass "mixed: back in CPX/NPS4, GPU 0's 8 partitions are devices of amd.com/cpx_nps4 again"
end_node
