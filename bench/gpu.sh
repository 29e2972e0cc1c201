#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench/gpu.sh [BUILD_DIR]: figures for `kdpd --backend gpu` on the simulated
# HGX 8x H100 node (tests/fixtures/nodes/gpu-h100x8.umockdev, under sim-node).
# Not part of ctest: it takes under a minute and its numbers depend on the
# machine. kdpd runs inside the simulated node, under umockdev's preload (as
# in the hardware tests): every sysfs, procfs and /dev access it makes goes
# through the preload's path redirection. kdp-bench and the kubelet stand-in
# (tests/interop/kubelet-go) run outside it.
#
#   allocate_c1_*, allocate_c16_*   Allocate of 1 GPU over one shared
#        connection, 1 and 16 concurrent callers (kdp-bench, KDP_BENCH_CALLS
#        (5000) timed calls each)
#   cpu_us_per_allocate   kdpd's own CPU time per Allocate at concurrency 1
#   preferred_s2_*, preferred_s4_*   GetPreferredAllocation of 2 and of 4 out
#        of the 8 GPUs, one caller (kdp-bench --method preferred,
#        KDP_BENCH_PREFERRED_CALLS (2000) calls each)
#   preferred_r4_s4_*     the same for 4 out of 32 with -o gpu.replicas=4
#   vmhwm_kb, anon_kb     kdpd's peak RSS (VmHWM) and anonymous memory
#        (smaps_rollup) 3 s after the Allocate load
#   idle_cpu_ms_per_s     kdpd's CPU time (utime + stime of /proc/PID/stat,
#        clock ticks) per second over KDP_BENCH_IDLE_S (10) idle seconds right
#        after that: the backend rescans every second
#   idle_cpu_sched_ms_per_s   the same from the scheduler's ns counters
#        (/proc/PID/task/*/schedstat): a tick is 10 ms, 1 ms/s over 10 s
#   xid_*, reset_*        Xid -> ListAndWatch and reset -> ListAndWatch at the
#        kubelet, KDP_BENCH_XIDS (200) cycles (bench/events.py gpu)
#   example_plain_*, example_sim_*   the Allocate, memory and idle figures of
#        kdpd with the example backend (8 devices), outside sim-node and under
#        sim-node on the same fixture: under sim-node kdpd also holds
#        umockdev's preload library (libumockdev-preload, which needs only libc;
#        GLib is in sim-node, not in kdpd), so the GPU backend's own share is
#        gpu - example_sim, and example_sim - example_plain is the preload's
set -u

build=$(cd "${1:-${KDP_BUILD_DIR:-build}}" && pwd) || exit 2
src=$(cd "$(dirname "$0")/.." && pwd)
calls=${KDP_BENCH_CALLS:-5000}
pcalls=${KDP_BENCH_PREFERRED_CALLS:-2000}
xids=${KDP_BENCH_XIDS:-200}
idle_s=${KDP_BENCH_IDLE_S:-10}
fixture=$src/tests/fixtures/nodes/gpu-h100x8.umockdev
bench=$build/bench/kdp-bench

for f in kdpd bench/kdp-bench tests/interop/kubelet-go tests/sim-node/sim-node \
         plugins/kdp-backend-gpu.so plugins/kdp-backend-example.so; do
        [ -e "$build/$f" ] || { echo "gpu.sh: $build/$f not built" >&2; exit 2; }
done

work=$(mktemp -d /tmp/kdp-bench-gpu.XXXXXX)
kubelet_pid=
sim_pid=
kdpd_pid=
fg_pid=

# stop PID [S]: SIGTERM, then SIGKILL after S (5) seconds
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
                "$src/tests/sim-node/sim-node" "$fixture" -- "$@" > "$dir/kdpd.out" 2> "$dir/kdpd.err" &
                sim_pid=$!
        else
                "$@" > "$dir/kdpd.out" 2> "$dir/kdpd.err" &
                kdpd_pid=$!
        fi
        for _ in $(seq 3000); do
                grep -q " devices resource=" "$dir/kubelet.out" 2>/dev/null && break
                sleep 0.01
        done
        endpoint=$(grep -m1 " registered resource=" "$dir/kubelet.out" | sed -E 's/.* endpoint=([^ ]+) .*/\1/')
        if [ -z "$endpoint" ] || ! grep -q " devices resource=" "$dir/kubelet.out"; then
                echo "gpu.sh: $name: kdpd did not register within 30 s" >&2
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
                echo "gpu.sh: $name: kdpd's process not found" >&2
                stop_session
                return 1
        fi
}

# run_bench PREFIX ARGS...: kdp-bench on the session's socket; prints
# PREFIX_p50_us and PREFIX_p99_us
run_bench() {
        local p=$1 b=$work/bench-$1 m
        shift
        if ! run "$bench" --socket "$endpoint" "$@" > "$b" 2> "$b.err"; then
                echo "gpu.sh: kdp-bench $* failed" >&2
                tail -n 5 "$b.err" >&2
        fi
        m=allocate
        case " $* " in *" preferred "*) m=preferred ;; esac
        echo "${p}_p50_us=$(bench_field "$b" "${m}_p50_us")"
        echo "${p}_p99_us=$(bench_field "$b" "${m}_p99_us")"
}

# allocate_load [PREFIX]: Allocate of 1 device, 1 then 16 callers; kdpd's CPU per call
allocate_load() {
        local t0
        t0=$(cpu_ticks "$kdpd_pid")
        run_bench "${1:-}allocate_c1" --calls "$calls" --concurrency 1 --law-samples 0
        echo "${1:-}cpu_us_per_allocate=$(awk -v t=$(( $(cpu_ticks "$kdpd_pid") - t0 )) \
                -v hz="$(getconf CLK_TCK)" -v n="$calls" 'BEGIN { printf "%.1f", t * 1e6 / hz / n }')"
        run_bench "${1:-}allocate_c16" --calls "$calls" --concurrency 16 --law-samples 0
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

echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "host_cpus=$(nproc)"
echo "host_cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
echo "host_kernel=$(uname -r)"
echo "host_load_start=$(cut -d' ' -f1 /proc/loadavg)"
echo "allocate_calls=$calls"
echo "preferred_calls=$pcalls"

# 1, 4, 5. the GPU backend: Allocate, memory, idle CPU; 2. GetPreferredAllocation
if session gpu sim --backend gpu --health-hold-ms 0; then
        echo "gpus=$(grep -m1 " devices resource=nvidia.com/gpu " "$work/gpu/kubelet.out" |
                sed -E 's/.* capacity=([0-9]+) .*/\1/')"
        allocate_load
        memory_and_idle
        run_bench preferred_s2 --method preferred --size 2 --calls "$pcalls" --law-samples 0
        run_bench preferred_s4 --method preferred --size 4 --calls "$pcalls" --law-samples 0
        stop_session
fi
if session replicas sim --backend gpu --health-hold-ms 0 -o gpu.replicas=4; then
        echo "preferred_r4_available=$(grep -m1 " devices resource=nvidia.com/gpu " "$work/replicas/kubelet.out" |
                sed -E 's/.* capacity=([0-9]+) .*/\1/')"
        run_bench preferred_r4_s4 --method preferred --size 4 --calls "$pcalls" --law-samples 0
        stop_session
fi

# 4, 5 for comparison: the example backend, outside and under sim-node
for mode in plain sim; do
        if session "example_$mode" "$mode" --backend example -o example.devices=8; then
                allocate_load "example_${mode}_"
                memory_and_idle "example_${mode}_"
                stop_session
        fi
done

# 3. Xid -> ListAndWatch, reset -> ListAndWatch
mkdir "$work/events"
run /usr/bin/python3 "$src/bench/events.py" "$build" "$work/events" "$xids" gpu ||
        { echo "gpu.sh: events.py failed; kdpd's log:" >&2; tail -n 20 "$work/events/kdpd.err" >&2; }
echo "host_load_end=$(cut -d' ' -f1 /proc/loadavg)"
