# SPDX-License-Identifier: GPL-2.0-or-later
# What the FPGA scenarios (test-fpga-*.sh) share; source it after lib.sh, with NODE set to the
# fixture's record file. The node's control FIFO is $T/ctl, open on fd 9 (echo "..." >&9).

SIM="$KDP_SOURCE_DIR/tests/sim-node/sim-node"
mkfifo "$T/ctl"
exec 9<>"$T/ctl"

# run_node NAME [KDPD ARGS...]: kdpd --backend fpga on $NODE under sim-node (with the options in
# the array SIM_OPTS, if set) and a fresh stand-in kubelet; its output in $T/kubelet-NAME.out
# ($KUBELET_OUT), kdpd's in $T/kdpd-NAME.{out,err}
run_node() {
        local name=$1
        shift
        rm -rf "$DIR" "$T/state"
        mkdir -p "$DIR"
        start_kubelet "kubelet-$name"
        KUBELET_OUT="$T/kubelet-$name.out"
        "${DIE_WITH_US[@]}" "$SIM" "$NODE" --control "$T/ctl" ${SIM_OPTS[@]+"${SIM_OPTS[@]}"} -- "${KDPD_RUN[@]}" \
                --kubelet-dir "$DIR" --state-dir "$T/state" --cdi-dir "$T/cdi" --v 2 --health-hold-ms 300 \
                --backend fpga "$@" >"$T/kdpd-$name.out" 2>"$T/kdpd-$name.err" &
        KDPD_PID=$!
        PIDS+=($KDPD_PID)
}

# node_serves NAME RESOURCE: waits for the first device list of RESOURCE of run_node NAME, and
# skips the scenario (exit 77) when sim-node could not run; sets ERR to kdpd's log
node_serves() {
        ERR="$T/kdpd-$1.err"
        wait_line "$KUBELET_OUT" "^devices resource=$2 "
        grep -q 'sim-node: .*preload\|not built' "$ERR" && { echo "skip: no simulated node"; exit 77; }
        return 0
}

# last_devices RESOURCE: the stand-in kubelet's newest `devices` line of RESOURCE
last_devices() {
        grep "^devices resource=$1 " "$KUBELET_OUT" | tail -n 1
}

# wait_devices RESOURCE REGEX: waits until last_devices RESOURCE matches REGEX
wait_devices() {
        local res=$1 re=$2 end
        end=$(deadline_ms "$(wait_s)")
        while [ "$(now_ms)" -lt "$end" ]; do
                last_devices "$res" | grep -Eq -- "$re" && return 0
                sleep 0.02
        done
        fail "last devices line of $res does not match '$re': $(last_devices "$res")"
}

# socket_of RESOURCE: the socket the newest registration of RESOURCE named
socket_of() {
        echo "$DIR/$(grep "^registered resource=$1 " "$KUBELET_OUT" | tail -n 1 | sed 's/.* endpoint=\([^ ]*\).*/\1/')"
}

. "$(dirname "${BASH_SOURCE[0]}")/fpga-gbs.sh"
