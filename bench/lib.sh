# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench/lib.sh: what the benchmarks (run.sh, gpu.sh, sriov.sh) share; sourced, as
# `. "$(dirname "$0")/lib.sh"`, with the script's arguments. It sets:
#   build    the build dir (absolute): the script's first argument, else $KDP_BUILD_DIR, else build
#   src      the source dir (absolute)
#   work     a scratch dir, /tmp/kdp-bench-<script>.XXXXXX (cleanup removes it)
#   pcalls   KDP_BENCH_PREFERRED_CALLS (2000), idle_s KDP_BENCH_IDLE_S (10)
# installs the EXIT, INT and TERM traps (cleanup stops what it started) and prints nothing.
# The script sets, before `session ... sim`, `fixture`: the node's record file, and may set
# `sim_control`: a FIFO sim-node reads commands from (--control).
# session_wait_s (30; the script may set it first) bounds the wait for kdpd's first ListAndWatch
# message: a large node takes umockdev long to load.

me=${0##*/}
build=$(cd "${1:-${KDP_BUILD_DIR:-build}}" && pwd) || exit 2
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d "/tmp/kdp-bench-${me%.sh}.XXXXXX") || exit 2
pcalls=${KDP_BENCH_PREFERRED_CALLS:-2000}
idle_s=${KDP_BENCH_IDLE_S:-10}
bench=$build/bench/kdp-bench
session_wait_s=${session_wait_s:-30}
kubelet_pid=
sim_pid=
kdpd_pid=
fg_pid=
endpoint=

# stop PID [S]: SIGTERM, then SIGKILL after S (5) seconds; returns the exit status
# (braces: bash reports a crashed job on the shell's stderr, not wait's)
stop() {
        local pid=$1
        [ -n "$pid" ] || return 0
        kill -TERM "$pid" 2>/dev/null
        for _ in $(seq $(( ${2:-5} * 100 ))); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.01
        done
        { kill -KILL "$pid"; wait "$pid"; } 2>/dev/null
}

# run CMD...: runs CMD in the background and waits, so that a signal reaches
# the traps at once (bash runs them only once a foreground command is done)
run() {
        "$@" &
        fg_pid=$!
        wait "$fg_pid"
        local rc=$?
        fg_pid=
        return "$rc"
}

# kdpd first (sim-node exits with it), then sim-node, then the kubelet
stop_session() {
        stop "$kdpd_pid"; kdpd_pid=
        stop "$sim_pid"; sim_pid=
        stop "$kubelet_pid"; kubelet_pid=
}

cleanup() {
        stop "$fg_pid" 15       # events.py stops its own processes, 5 s each at most
        stop_session
        rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
export KDP_BUILD_DIR=$build

# need FILE...: each FILE (relative to the build dir) is built, or the script exits 2
need() {
        local f
        for f in "$@"; do
                [ -e "$build/$f" ] || { echo "$me: $build/$f not built" >&2; exit 2; }
        done
}

# report_start: the machine and the load when the run starts, and the call counts (of a script
# that sets `calls`)
report_start() {
        echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
        echo "host_cpus=$(nproc)"
        echo "host_cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
        echo "host_kernel=$(uname -r)"
        echo "host_load_start=$(cut -d' ' -f1 /proc/loadavg)"
        [ -z "${calls:-}" ] && return 0
        echo "allocate_calls=$calls"
        echo "preferred_calls=$pcalls"
}

# report_end: the load when the run ends
report_end() {
        echo "host_load_end=$(cut -d' ' -f1 /proc/loadavg)"
}

proc_kb() {
        awk -v f="$3:" '$1 == f { print $2; exit }' "/proc/$1/$2"
}

cpu_ticks() {
        awk '{ print $14 + $15 }' "/proc/$1/stat"
}

# sched_ns PID: ns on the CPU, summed over the process's threads
sched_ns() {
        cat "/proc/$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s }'
}

bench_field() {
        sed -n "s/^$2=//p" "$1"
}

# session NAME sim|plain KDPD-ARGS...: a kubelet stand-in, then kdpd (under
# sim-node on the fixture, or not); sets kdpd_pid and endpoint
session() {
        local name=$1 mode=$2 dir=$work/$1 p
        shift 2
        mkdir -p "$dir/device-plugins"
        "$build/tests/interop/kubelet-go" -dir "$dir/device-plugins" -timestamps > "$dir/kubelet.out" \
                2> "$dir/kubelet.err" &
        kubelet_pid=$!
        for _ in $(seq 500); do
                [ -S "$dir/device-plugins/kubelet.sock" ] && break
                sleep 0.01
        done
        set -- "$build/kdpd" --kubelet-dir "$dir/device-plugins" --cdi-dir "$dir/cdi" --state-dir "$dir/state" "$@"
        if [ "$mode" = sim ]; then
                "$src/tests/sim-node/sim-node" "$fixture" ${sim_control:+--control "$sim_control"} -- "$@" \
                        > "$dir/kdpd.out" 2> "$dir/kdpd.err" &
                sim_pid=$!
        else
                "$@" > "$dir/kdpd.out" 2> "$dir/kdpd.err" &
                kdpd_pid=$!
        fi
        for _ in $(seq $(( session_wait_s * 100 ))); do
                grep -q " devices resource=" "$dir/kubelet.out" 2>/dev/null && break
                sleep 0.01
        done
        endpoint=$(grep -m1 " registered resource=" "$dir/kubelet.out" | sed -E 's/.* endpoint=([^ ]+) .*/\1/')
        if [ -z "$endpoint" ] || ! grep -q " devices resource=" "$dir/kubelet.out"; then
                echo "$me: $name: kdpd did not register within $session_wait_s s" >&2
                tail -n 20 "$dir/kdpd.err" >&2
                stop_session
                return 1
        fi
        endpoint=$dir/device-plugins/$endpoint
        # under sim-node, kdpd is sim-node's child (the only one once it serves)
        if [ "$mode" = sim ]; then
                for p in $(cat "/proc/$sim_pid/task/$sim_pid/children"); do
                        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = kdpd ] && kdpd_pid=$p
                done
        fi
        if [ -z "$kdpd_pid" ] || [ ! -e "/proc/$kdpd_pid/stat" ]; then
                echo "$me: $name: kdpd's process not found" >&2
                stop_session
                return 1
        fi
}

# capacity NAME RESOURCE: RESOURCE's capacity in the first ListAndWatch message of session NAME
capacity() {
        grep -m1 " devices resource=$2 " "$work/$1/kubelet.out" | sed -E 's/.* capacity=([0-9]+) .*/\1/'
}

# run_bench PREFIX ARGS...: kdp-bench on the session's socket; prints
# PREFIX_p50_us and PREFIX_p99_us
run_bench() {
        local p=$1 b=$work/bench-$1 m
        shift
        if ! run "$bench" --socket "$endpoint" "$@" > "$b" 2> "$b.err"; then
                echo "$me: kdp-bench $* failed" >&2
                tail -n 5 "$b.err" >&2
        fi
        m=allocate
        case " $* " in *" preferred "*) m=preferred ;; *" prestart "*) m=prestart ;; esac
        echo "${p}_p50_us=$(bench_field "$b" "${m}_p50_us")"
        echo "${p}_p99_us=$(bench_field "$b" "${m}_p99_us")"
}

# memory_and_idle [PREFIX]: 3 s after the load, VmHWM and anonymous memory;
# then the CPU time over idle_s seconds
memory_and_idle() {
        local t0 s0 w0 t1 s1 w1
        run sleep 3
        echo "${1:-}vmhwm_kb=$(proc_kb "$kdpd_pid" status VmHWM)"
        echo "${1:-}anon_kb=$(proc_kb "$kdpd_pid" smaps_rollup Anonymous)"
        t0=$(cpu_ticks "$kdpd_pid"); s0=$(sched_ns "$kdpd_pid"); w0=${EPOCHREALTIME/./}
        run sleep "$idle_s"
        t1=$(cpu_ticks "$kdpd_pid"); s1=$(sched_ns "$kdpd_pid"); w1=${EPOCHREALTIME/./}
        echo "${1:-}idle_cpu_ms_per_s=$(awk -v t=$(( t1 - t0 )) -v hz="$(getconf CLK_TCK)" -v w=$(( w1 - w0 )) \
                'BEGIN { printf "%.1f", t * 1000 / hz / (w / 1e6) }')"
        echo "${1:-}idle_cpu_sched_ms_per_s=$(awk -v s="$s0" -v e="$s1" -v w=$(( w1 - w0 )) \
                'BEGIN { printf "%.2f", (e - s) / 1e6 / (w / 1e6) }')"
}

# events SCENARIO N [WRAPPER...]: bench/events.py SCENARIO with N cycles, in $work/events-SCENARIO,
# run through WRAPPER (e.g. unshare -n) when given
events() {
        local scenario=$1 n=$2 d=$work/events-$1
        shift 2
        mkdir "$d"
        run "$@" /usr/bin/python3 "$src/bench/events.py" "$build" "$d" "$n" "$scenario" ||
                { echo "$me: events.py $scenario failed; kdpd's log:" >&2; tail -n 20 "$d/kdpd.err" >&2; }
}
