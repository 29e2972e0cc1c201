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
#   d5005x8_*   8 PAC D5005 (bench/fpga_node.py writes the node; every FME answers a PR at once):
#     d5005x8_scan_p50_us, _p99_us   one full scan of the fpga backend in process, as kdpd's
#        periodic rescan runs it (bench-scan: scan, probe, finish, snapshots; the PCI list cached
#        as between events), KDP_BENCH_SCAN_REPS (200) after one warm-up, under sim-node
#     d5005x8_program_p50_us, _p99_us   the programming itself (bench-fpga-program: GBS read
#        and checked, compat_id, the PR call on the emulated FME, afu_id read back),
#        KDP_BENCH_PRESTART (100) times
#     d5005x8_prestart_p50_us, _p99_us   PreStartContainer of one port that carries its AFU (the
#        afu_id check only), KDP_BENCH_PRESTART calls over kdp-bench's channel
#     d5005x8_prestart_drift_p50_us, _p99_us   PreStartContainer of a port drifted just before
#        (sim-node's `drift`), programmed back from bitstream_dir: KDP_BENCH_PRESTART calls, one
#        kdp-bench each; _programmed counts the programmings kdpd logged
#     d5005x8_prestart_overhead_p50_us, _p99_us   prestart_drift minus program at the same
#        percentile: what PreStart adds on top of the programming
set -u

build=$(cd "${1:-${KDP_BUILD_DIR:-build}}" && pwd) || exit 2
src=$(cd "$(dirname "$0")/.." && pwd)
calls=${KDP_BENCH_CALLS:-5000}
idle_s=${KDP_BENCH_IDLE_S:-10}

. "$src/bench/lib.sh"
need kdpd bench/kdp-bench bench/bench-scan bench/bench-fpga-program tests/interop/kubelet-go tests/sim-node/sim-node \
        plugins/kdp-backend-fpga.so
. "$src/tests/e2e/fpga-gbs.sh"
scan_reps=${KDP_BENCH_SCAN_REPS:-200}
prestarts=${KDP_BENCH_PRESTART:-100}

report_start
echo "scan_reps=$scan_reps"
echo "prestarts=$prestarts"
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
# ---- 8 cards ----
IFID=bfac4d851ee856fe8c95865ce1bbaa2d
NLB0=d8424dc4a4a3c413f89e433683f9040b
NLB3=f7df405cbd7acf7222f144b0b93acd18
PORT0=/sys/devices/pci0000:10/0000:10:00.0/0000:11:00.0/fpga_region/region0/dfl-port.0
COMPAT0=/sys/devices/pci0000:10/0000:10:00.0/0000:11:00.0/fpga_region/region0/dfl-fme.0/dfl-fme-region.0/fpga_region/region1/compat_id
/usr/bin/python3 "$src/bench/fpga_node.py" "$work/node" > /dev/null || exit 2
fixture=$work/node/fpga-d5005x8.umockdev
write_gbs "$work/bits" $IFID $NLB0
write_gbs "$work/bits" $IFID $NLB3
# p PCT FILE: nearest-rank percentile of the numbers in FILE
p() {
        sort -n "$2" | awk -v p="$1" '{ v[NR] = $1 } END { i = int((NR * p + 99) / 100); printf "%.1f", v[i < 1 ? 1 : i] }'
}

run "$src/tests/sim-node/sim-node" "$fixture" -- "$build/bench/bench-scan" "$scan_reps" fpga d5005x8_scan \
        > "$work/scan.out" 2> "$work/scan.err" || { echo "$me: bench-scan fpga failed" >&2; tail -n 5 "$work/scan.err" >&2; }
grep -v '^rescan_reps=' "$work/scan.out"
run "$src/tests/sim-node/sim-node" "$fixture" -- "$build/bench/bench-fpga-program" "$prestarts" /dev/dfl-fme.0 \
        "$COMPAT0" "$PORT0/afu_id" "$work/bits/$IFID/$NLB3.gbs" "$work/bits/$IFID/$NLB0.gbs" \
        > "$work/program.out" 2> "$work/program.err" ||
        { echo "$me: bench-fpga-program failed" >&2; tail -n 5 "$work/program.err" >&2; }
sed 's/^/d5005x8_/' "$work/program.out"

mkfifo "$work/ctl"
exec 9<>"$work/ctl"
sim_control=$work/ctl
if session d5005x8 sim --backend fpga --health-hold-ms 0 -o fpga.bitstream_dir="$work/bits"; then
        echo "d5005x8_ports=$(capacity d5005x8 "$(grep -m1 ' registered resource=' "$work/d5005x8/kubelet.out" |
                sed -E 's/.* resource=([^ ]+) .*/\1/')")"
        run_bench d5005x8_prestart --method prestart --calls "$prestarts" --concurrency 1 --law-samples 0
        : > "$work/drift.txt"
        for i in $(seq "$prestarts"); do
                printf 'drift platform/dfl-port.0 %s\necho drifted-%s\n' $NLB3 "$i" >&9
                for _ in $(seq 1000); do
                        grep -q "^drifted-$i\$" "$work/d5005x8/kdpd.out" && break
                        sleep 0.01
                done
                run "$bench" --socket "$endpoint" --method prestart --calls 1 --warmup 0 --law-samples 0 \
                        > "$work/one" 2> "$work/one.err" || { echo "$me: PreStart $i failed" >&2; tail -n 3 "$work/one.err" >&2; }
                bench_field "$work/one" prestart_p50_us >> "$work/drift.txt"
        done
        echo "d5005x8_prestart_drift_p50_us=$(p 50 "$work/drift.txt")"
        echo "d5005x8_prestart_drift_p99_us=$(p 99 "$work/drift.txt")"
        echo "d5005x8_prestart_drift_programmed=$(grep -c '"Programmed the port before the container start"' \
                "$work/d5005x8/kdpd.err")"
        for q in 50 99; do
                echo "d5005x8_prestart_overhead_p${q}_us=$(awk -v a="$(p $q "$work/drift.txt")" \
                        -v b="$(bench_field "$work/program.out" "program_p${q}_us")" 'BEGIN { printf "%.1f", a - b }')"
        done
        stop_session
fi
report_end
