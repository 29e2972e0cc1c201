# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# What the AMD partition scenarios (test-gpu-amd-*.sh) share; source it after lib.sh, and set NODE
# to the fixture's record file before run_node. The node's control FIFO is $T/ctl, open on fd 9
# (echo "..." >&9).

# the GPUs of the MI300-class nodes (gpu-mi300x4*, gpu-mi308x4-cpx: one board) and their NUMA nodes
GPUS="0000:05:00.0 0000:27:00.0 0000:85:00.0 0000:a7:00.0"
NUMA=(0 0 1 1)

# run_node NAME [KDPD-ARGS...]: a fresh stand-in kubelet, and kdpd --backend gpu on $NODE
# (output in $T/NAME.out and $T/NAME.err), back once kdpd has sent its first list. sim-node
# builds the node's testbed (some 200 devices of four MI300-class GPUs) before kdpd starts,
# which takes tens of seconds on a loaded 2-core machine: that first wait is 120 s.
run_node() {
        local name=$1
        shift
        rm -f "$T/ctl"
        mkfifo "$T/ctl"
        exec 9<>"$T/ctl"
        start_kubelet kubelet
        KDPD_LOG=$name start_sim_kdpd "$NODE" --control "$T/ctl" -- --v 2 --health-hold-ms 300 --backend gpu "$@"
        wait_line "$T/kubelet.out" '^devices resource=' 120
}

# end_node: kdpd stops cleanly, then the kubelet
end_node() {
        stop_kdpd
        stop_kubelet
        exec 9>&-
}

# devices SEP FORMAT GPU-INDEXES [PARTITIONS]: FORMAT (printf, with a device's ID and its GPU's
# NUMA node) for each of those GPUs, or each of their partitions, joined by SEP
devices() {
        local sep=$1 fmt=$2 g p one out=() gpus
        read -ra gpus <<< "$GPUS"
        for g in $3; do
                for p in ${4:--}; do
                        [ "$p" = - ] && p= || p=-p$p
                        # shellcheck disable=SC2059
                        printf -v one "$fmt" "${gpus[g]}$p" "${NUMA[g]}"
                        out+=("$one")
                done
        done
        (IFS=$sep; echo "${out[*]}")
}

# ids GPU-INDEXES PARTITIONS: "<address>-p<i>" of those GPUs' partitions, comma-separated
ids() {
        devices , '%s%.0s' "$1" "$2"
}

# numa_of GPU-INDEXES PARTITIONS: the devices line's numa= field for those partitions
numa_of() {
        devices ';' '%s:%s' "$1" "$2"
}

# gpus_numa: the devices line's numa= field for the whole GPUs
gpus_numa() {
        devices ';' '%s:%s' "0 1 2 3"
}

# alloc_match SOCKET EXPECTED ID...: until Allocate of the IDs gives EXPECTED (its lines joined by "|")
alloc_match() {
        local sock=$1 want=$2 got end
        shift 2
        end=$(deadline_ms "$(wait_s)")
        while :; do
                got=$("$KDPCTL" allocate --socket "$sock" "$@" 2>&1 | tr '\n' '|')
                [ "$got" = "$want" ] && return 0
                [ "$(now_ms)" -gt "$end" ] && fail "Allocate of $*: expected '$want', got '$got'"
                sleep 0.1
        done
}

# specs MINOR...: the DeviceSpec lines of those DRM minors and /dev/kfd, in kdpd's order (by path)
specs() {
        printf 'device /dev/dri/%s /dev/dri/%s rw\n' $(printf '%s\n' "$@" | LC_ALL=C sort | sed 'p') | tr '\n' '|'
        echo "device /dev/kfd /dev/kfd rw|"
}
