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

. "$(dirname "$0")/lib.sh"
calls=${KDP_BENCH_CALLS:-5000}
xids=${KDP_BENCH_XIDS:-200}
fixture=$src/tests/fixtures/nodes/gpu-h100x8.umockdev
need kdpd bench/kdp-bench tests/interop/kubelet-go tests/sim-node/sim-node \
     plugins/kdp-backend-gpu.so plugins/kdp-backend-example.so

# allocate_load [PREFIX]: Allocate of 1 device, 1 then 16 callers; kdpd's CPU per call
allocate_load() {
        local t0
        t0=$(cpu_ticks "$kdpd_pid")
        run_bench "${1:-}allocate_c1" --calls "$calls" --concurrency 1 --law-samples 0
        echo "${1:-}cpu_us_per_allocate=$(awk -v t=$(( $(cpu_ticks "$kdpd_pid") - t0 )) \
                -v hz="$(getconf CLK_TCK)" -v n="$calls" 'BEGIN { printf "%.1f", t * 1e6 / hz / n }')"
        run_bench "${1:-}allocate_c16" --calls "$calls" --concurrency 16 --law-samples 0
}

report_start

# 1, 4, 5. the GPU backend: Allocate, memory, idle CPU; 2. GetPreferredAllocation
if session gpu sim --backend gpu --health-hold-ms 0; then
        echo "gpus=$(capacity gpu nvidia.com/gpu)"
        allocate_load
        memory_and_idle
        run_bench preferred_s2 --method preferred --size 2 --calls "$pcalls" --law-samples 0
        run_bench preferred_s4 --method preferred --size 4 --calls "$pcalls" --law-samples 0
        stop_session
fi
if session replicas sim --backend gpu --health-hold-ms 0 -o gpu.replicas=4; then
        echo "preferred_r4_available=$(capacity replicas nvidia.com/gpu)"
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
events gpu "$xids"
report_end
