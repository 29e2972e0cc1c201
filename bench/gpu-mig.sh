#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench/gpu-mig.sh [BUILD_DIR]: what NVML's MIG queries add to the GPU backend's rescan (every
# second), on the simulated HGX node gpu-h100x8-mig (GPU 0 cut into 3g.40gb + 3 × 1g.10gb, GPU 1
# in MIG mode without instances, GPUs 2-7 with MIG off) with the fake libnvidia-ml.so.1
# (tests/nvml) answering from the node's NVML fixture. Not part of ctest: its numbers depend on
# the machine, and the fake answers from memory where the real library asks the driver.
#
# MODES, each one bench-scan run (sim-node, under umockdev's preload as kdpd runs in the tests)
# of KDP_BENCH_SCAN_REPS (100) full scans after one warm-up (scan, finish, snapshots; the PCI list
# cached as between events), the modes taking turns for KDP_BENCH_ROUNDS (5) rounds so that a
# change in the machine's load falls on all of them alike:
#   nvml_off   gpu.nvml empty: no NVML, Xids from the kernel log, every GPU whole
#   none       NVML loaded (its Xid events, NVLink polling), mig_strategy none: every GPU whole
#   single     mig_strategy single: NVML asked for every GPU's MIG layout at every scan
#   mixed      mig_strategy mixed: the same, one resource per profile
#   MODE_scan_cpu_p50_us   the scanning thread's CPU time per scan: the median over the rounds of
#        each run's median, with the lowest and highest run's in MODE_scan_cpu_p50_range
#   MODE_scan_p50_us       the same for the wall time of a scan
#   mig_cpu_us_per_scan    what the MIG queries add: mixed's scan_cpu_p50 minus none's of the same
#        round, the median over the rounds (_range: the lowest and highest round)
set -u

. "$(dirname "$0")/lib.sh"
scan_reps=${KDP_BENCH_SCAN_REPS:-100}
rounds=${KDP_BENCH_ROUNDS:-5}
fixture=$src/tests/fixtures/nodes/gpu-h100x8-mig.umockdev
lib=$build/tests/nvml/libnvidia-ml.so.1
need bench/bench-scan tests/sim-node/sim-node plugins/kdp-backend-gpu.so tests/nvml/libnvidia-ml.so.1
export KDP_FAKE_NVML=$src/tests/fixtures/nodes/gpu-h100x8-mig.nvml
modes="nvml_off none single mixed"

# opts MODE: the gpu backend's options of MODE into the array OPTS (KEY=VALUE)
opts() {
        case $1 in
        nvml_off) OPTS=("gpu.nvml=") ;;
        none) OPTS=("gpu.nvml=$lib") ;;
        *) OPTS=("gpu.nvml=$lib" "gpu.mig_strategy=$1") ;;
        esac
}

# median FILE: the median of the numbers in FILE (one a line), then " [lowest-highest]"
median() {
        sort -n "$1" | awk '{ v[NR] = $1 } END { printf "%.1f [%.1f-%.1f]", v[int((NR + 1) / 2)], v[1], v[NR] }'
}

report_start
echo "scan_reps=$scan_reps"
echo "rounds=$rounds"
for round in $(seq "$rounds"); do
        for mode in $modes; do
                opts "$mode"
                out=$work/$mode.$round
                if ! run "$src/tests/sim-node/sim-node" "$fixture" -- "$build/bench/bench-scan" "$scan_reps" gpu scan \
                        "${OPTS[@]}" > "$out" 2> "$out.err"; then
                        echo "$me: bench-scan $mode failed" >&2
                        tail -n 5 "$out.err" >&2
                        continue
                fi
                bench_field "$out" scan_cpu_p50_us >> "$work/$mode.cpu"
                bench_field "$out" scan_p50_us >> "$work/$mode.wall"
                [ "$round" = 1 ] && echo "${mode}_devices=$(bench_field "$out" scan_devices)"
        done
        awk -v m="$(bench_field "$work/mixed.$round" scan_cpu_p50_us)" \
                -v n="$(bench_field "$work/none.$round" scan_cpu_p50_us)" 'BEGIN { printf "%.1f\n", m - n }' >> "$work/mig.cpu"
done
for mode in $modes; do
        read -r med range < <(median "$work/$mode.cpu")
        echo "${mode}_scan_cpu_p50_us=$med"
        echo "${mode}_scan_cpu_p50_range=$range"
        echo "${mode}_scan_p50_us=$(median "$work/$mode.wall" | cut -d' ' -f1)"
done
read -r med range < <(median "$work/mig.cpu")
echo "mig_cpu_us_per_scan=$med"
echo "mig_cpu_us_per_scan_range=$range"
report_end
