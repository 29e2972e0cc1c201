# SPDX-License-Identifier: GPL-2.0-or-later
# The GPU backend on 4 AMD Instinct MI300X in CPX/NPS4 (tests/fixtures/nodes/gpu-mi300x4-cpx: 8
# compute partitions per GPU, partitions 1-7 on amdgpu_xcp_<k> platform devices that KFD names):
#   amd_partitions whole (default)  a GPU is one device with the card and render node of each
#                                   of its 8 partitions, and /dev/kfd
#   amd_partitions single           each partition one device of amd.com/gpu ("<address>-p<i>")
#   amd_partitions mixed            each partition one device of amd.com/cpx_nps4 (AMD's names)
# and a repartition while kdpd runs (gpu-mi300x4-cpx-repartition.script: GPU 0 to SPX/NPS1 and
# back), followed without a restart.
. "$(dirname "$0")/lib.sh"

SIM="$KDP_SOURCE_DIR/tests/sim-node/sim-node"
NODE="$KDP_SOURCE_DIR/tests/fixtures/nodes/gpu-mi300x4-cpx.umockdev"
GPUS="0000:05:00.0 0000:27:00.0 0000:85:00.0 0000:a7:00.0"
NUMA=(0 0 1 1)

# run_node NAME [KDPD-ARGS...]: a fresh stand-in kubelet, and kdpd on the node (control FIFO $T/ctl)
run_node() {
        local name=$1
        shift
        rm -f "$T/ctl"
        mkfifo "$T/ctl"
        exec 9<>"$T/ctl"
        start_kubelet kubelet
        "${DIE_WITH_US[@]}" "$SIM" "$NODE" --control "$T/ctl" -- "${KDPD_RUN[@]}" \
                --kubelet-dir "$DIR" --state-dir "$T/state" --cdi-dir "$T/cdi" --v 2 --health-hold-ms 300 \
                --backend gpu "$@" >"$T/$name.out" 2>"$T/$name.err" &
        KDPD_PID=$!
        PIDS+=($KDPD_PID)
}

# end_node: kdpd stops cleanly, then the kubelet
end_node() {
        stop_kdpd
        stop_kubelet
        exec 9>&-
}

# ids GPU-INDEXES PARTITIONS: "<address>-p<i>" of those GPUs' partitions, comma-separated
ids() {
        local g p out=() gpus
        read -ra gpus <<< "$GPUS"
        for g in $1; do
                for p in $2; do
                        out+=("${gpus[g]}-p$p")
                done
        done
        (IFS=,; echo "${out[*]}")
}

# numa_of GPU-INDEXES PARTITIONS: the devices line's numa= field for those partitions
numa_of() {
        local g p out=() gpus
        read -ra gpus <<< "$GPUS"
        for g in $1; do
                for p in $2; do
                        out+=("${gpus[g]}-p$p:${NUMA[g]}")
                done
        done
        (IFS=';'; echo "${out[*]}")
}

ALL8="0 1 2 3 4 5 6 7"

# ---- whole GPUs: every partition's nodes
run_node whole
wait_line "$T/kubelet.out" "^devices resource=amd.com/gpu "
grep -q 'sim-node: .*preload\|not built' "$T/whole.err" && { echo "skip: no simulated node"; exit 77; }
devices_match amd.com/gpu "^devices resource=amd.com/gpu capacity=4 allocatable=4 healthy=${GPUS// /,} unhealthy= numa=0000:05:00.0:0;0000:27:00.0:0;0000:85:00.0:1;0000:a7:00.0:1$"
pass "whole: 4 GPUs of 8 partitions each, one device each"
S=$(plugin_socket amd.com_gpu)
"$KDPCTL" allocate --socket "$S" 0000:27:00.0 | tr '\n' '|' > "$T/alloc"; echo >> "$T/alloc"
cat "$T/alloc"
end_node
