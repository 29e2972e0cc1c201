#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench/sriov.sh [BUILD_DIR]: figures for `kdpd --backend sriov` on a simulated
# node with a 256-VF pool: a 4-port Intel E810, 4 PFs x 64 VFs (8086:1889) on
# iavf (bench/sriov_node.py writes it, from tests/fixtures/nodes/generate.py's
# E810; one pool, example.com/e810). Not part of ctest: umockdev alone takes
# 20 s to a minute or more to load the node's 782 records, and the numbers depend
# on the machine. kdpd runs inside the node under umockdev's preload (as in
# gpu.sh), with --health-hold-ms 0; kdp-bench and the kubelet stand-in
# (tests/interop/kubelet-go) run outside it. Root is needed for the link
# figures (a network namespace of their own).
#
#   vfs                   the pool's capacity at the kubelet (256)
#   law_message_bytes     the ListAndWatch message that lists them
#   allocate_s<S>_*       Allocate of S = 1, 8, 64 VFs per container over one
#        connection, one caller (kdp-bench --devices-per-call S,
#        KDP_BENCH_CALLS (2000) timed calls each)
#   preferred_s<S>_*      GetPreferredAllocation of S = 1, 8, 64 out of the
#        256 (kdp-bench --method preferred --size S, KDP_BENCH_PREFERRED_CALLS
#        (2000) calls each)
#   vmhwm_kb, anon_kb     kdpd's peak RSS (VmHWM) and anonymous memory
#        (smaps_rollup) 3 s after that load
#   idle_cpu_*            kdpd's CPU per second over KDP_BENCH_IDLE_S (10) idle
#        seconds: the backend scans every 2 s
#   numvfs_off_*, numvfs_on_*   sim-node's `sriov 0000:8a:00.0 0` -> the
#        kubelet's list at 192, then `sriov 0000:8a:00.0 64` (the uevents of
#        64 VFs added, probed and bound, then the PF's change) -> all 256 back
#        (allocatable 256), KDP_BENCH_NUMVFS (20) cycles (bench/events.py
#        sriov-numvfs)
#   link_down_*, link_up_*, carrier_down_*, carrier_up_*   in a network
#        namespace of their own (unshare -n) with a veth pair per PF named like
#        its netdev: RTM_NEWLINK admin-down of ens3f0np0 -> its 64 VFs
#        Unhealthy at the kubelet (allocatable 192), up -> Healthy (256); then
#        its peer down (ens3f0np0 loses its carrier) and up, the same;
#        KDP_BENCH_LINKS (100) cycles (bench/events.py sriov-link)
set -u

session_wait_s=600
. "$(dirname "$0")/lib.sh"
calls=${KDP_BENCH_CALLS:-2000}
numvfs=${KDP_BENCH_NUMVFS:-20}
links=${KDP_BENCH_LINKS:-100}
need kdpd bench/kdp-bench tests/interop/kubelet-go tests/sim-node/sim-node plugins/kdp-backend-sriov.so
/usr/bin/python3 "$src/bench/sriov_node.py" "$work/node" > /dev/null || exit 2
fixture=$work/node/sriov-e810x4.umockdev

report_start

# 1. Allocate and GetPreferredAllocation of 1, 8, 64 VFs; memory, idle CPU
if session sriov sim --backend sriov -o sriov.config_file="$work/node/sriov-e810x4.json" --health-hold-ms 0; then
        echo "vfs=$(capacity sriov example.com/e810)"
        for s in 1 8 64; do
                run_bench "allocate_s$s" --calls "$calls" --devices-per-call "$s" --law-samples 0
        done
        echo "law_message_bytes=$(bench_field "$work/bench-allocate_s1" law_message_bytes)"
        for s in 1 8 64; do
                run_bench "preferred_s$s" --method preferred --size "$s" --calls "$pcalls" --law-samples 0
        done
        memory_and_idle
        stop_session
fi

# 2. sriov_numvfs 0 -> 64 on PF0 -> all 64 VFs at the kubelet
events sriov-numvfs "$numvfs"
# 3. PF0's link down -> its VFs Unhealthy at the kubelet
events sriov-link "$links" unshare -n
report_end
