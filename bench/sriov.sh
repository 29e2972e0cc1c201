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
#   pools<P>_vmrss_kb, pools<P>_vmhwm_kb, pools<P>_fds   kdpd serving P = 1, 64, 128
#        (SRIOV_POOLS_MAX) empty pools on the small E810 node (tests/fixtures/nodes/
#        sriov-e810), 3 s after the kubelet saw every registration: RSS, peak RSS and
#        open fds; pool_rss_kb and pool_fds: what one more pool costs, from 1 to 128.
#        KDP_BENCH_POOLS_ONLY=1 runs this part alone
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
pools_only=${KDP_BENCH_POOLS_ONLY:-0}

# pools N: config.json of N pools that take no device
pools_config() {
        awk -v n="$1" 'BEGIN { print "{\"resourceList\": ["; for (i = 0; i < n; i++)
                printf "  {\"resourceName\": \"p%d\", \"selectors\": [{\"pciAddresses\": [\"none\"]}]}%s\n", i,
                        i + 1 < n ? "," : ""
                print "]}" }'
}

# 4. what a pool costs: RSS and fds at 1, 64, 128 pools
pools() {
        local big_fixture=$fixture n rss1 fds1 rss fds
        fixture=$src/tests/fixtures/nodes/sriov-e810.umockdev
        for n in 1 64 128; do
                pools_config "$n" > "$work/pools$n.json"
                session "pools$n" sim --backend sriov -o sriov.config_file="$work/pools$n.json" || continue
                for _ in $(seq 6000); do
                        [ "$(grep -c " registered resource=" "$work/pools$n/kubelet.out")" -ge "$n" ] && break
                        sleep 0.01
                done
                run sleep 3
                rss=$(proc_kb "$kdpd_pid" status VmRSS)
                fds=$(ls "/proc/$kdpd_pid/fd" | wc -l)
                echo "pools${n}_registered=$(grep -c " registered resource=" "$work/pools$n/kubelet.out")"
                echo "pools${n}_vmrss_kb=$rss"
                echo "pools${n}_vmhwm_kb=$(proc_kb "$kdpd_pid" status VmHWM)"
                echo "pools${n}_fds=$fds"
                [ "$n" = 1 ] && { rss1=$rss; fds1=$fds; }
                stop_session
        done
        if [ -n "${rss1:-}" ] && [ -n "${rss:-}" ]; then
                echo "pool_rss_kb=$(awk -v a="$rss1" -v b="$rss" 'BEGIN { printf "%.1f", (b - a) / 127 }')"
                echo "pool_fds=$(awk -v a="$fds1" -v b="$fds" 'BEGIN { printf "%.2f", (b - a) / 127 }')"
        fi
        fixture=$big_fixture
}
if [ "$pools_only" = 1 ]; then
        pools
        report_end
        exit 0
fi

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
pools
report_end
