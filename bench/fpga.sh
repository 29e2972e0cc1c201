#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench/fpga.sh [BUILD_DIR]: figures for `kdpd --backend fpga` on the simulated nodes with 2 PAC
# D5005 (tests/fixtures/nodes/fpga-d5005.umockdev, af mode) and 2 Alveo U250 (fpga-u250), under
# sim-node as in bench/gpu.sh. Not part of ctest: its numbers depend on the machine.
#
#   d5005_allocate_c1_*, d5005_allocate_c16_*   Allocate of 1 port, 1 and 16 concurrent
#        callers (kdp-bench, KDP_BENCH_CALLS (5000) timed calls each)
#   d5005_cpu_us_per_allocate   kdpd's CPU time per Allocate at concurrency 1
#   d5005_vmhwm_kb, d5005_anon_kb   peak RSS and anonymous memory 3 s after the load
#   d5005_idle_cpu_ms_per_s, d5005_idle_cpu_sched_ms_per_s   kdpd's CPU per second over
#        KDP_BENCH_IDLE_S (10) idle seconds: the backend reads every card's health files every 2 s
#   u250_*   the same on the Alveo node
set -u

build=$(cd "${1:-${KDP_BUILD_DIR:-build}}" && pwd) || exit 2
src=$(cd "$(dirname "$0")/.." && pwd)
calls=${KDP_BENCH_CALLS:-5000}
idle_s=${KDP_BENCH_IDLE_S:-10}

work=$(mktemp -d /tmp/kdp-bench-fpga.XXXXXX)
. "$src/bench/lib.sh"
need kdpd bench/kdp-bench tests/interop/kubelet-go tests/sim-node/sim-node plugins/kdp-backend-fpga.so

host_info
echo "allocate_calls=$calls"
for node in d5005 u250; do
        fixture=$src/tests/fixtures/nodes/fpga-$node.umockdev
        if session "$node" sim --backend fpga --health-hold-ms 0; then
                t0=$(cpu_ticks "$kdpd_pid")
                run_bench "${node}_allocate_c1" --calls "$calls" --concurrency 1 --law-samples 0
                echo "${node}_cpu_us_per_allocate=$(awk -v t=$(( $(cpu_ticks "$kdpd_pid") - t0 )) \
                        -v hz="$(getconf CLK_TCK)" -v n="$calls" 'BEGIN { printf "%.1f", t * 1e6 / hz / n }')"
                run_bench "${node}_allocate_c16" --calls "$calls" --concurrency 16 --law-samples 0
                memory_and_idle "${node}_"
                stop_session
        fi
done
echo "host_load_end=$(cut -d' ' -f1 /proc/loadavg)"
