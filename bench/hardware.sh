#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench/hardware.sh [BUILD_DIR]: figures for the hardware layer, on the
# simulated nodes of tests/fixtures/nodes (sim-node, umockdev). Not part of
# ctest: it takes about a minute and its numbers depend on the machine.
#
#   events_n, events_p50_us, events_p99_us, events_max_us
#        device event -> ListAndWatch message at the kubelet (bench/events.py):
#        kdpd with the pcitest backend and --health-hold-ms 0 on
#        flapping-device.umockdev, kubelet-go -timestamps outside the node;
#        KDP_BENCH_EVENTS (1000) events alternating `unbind 0000:01:00.0` and
#        `bind 0000:01:00.0 nvidia` through the control FIFO, one at a time:
#        wall time before the command is written -> the kubelet's stamp on
#        its next `devices` line whose allocatable changed
#   rescan_n8_*, rescan_n4096_*   one full rescan as kdpd does it, in process
#        (bench/bench-scan: scan + probe + finish + snapshot, example backend,
#        50 repetitions after one warm-up)
#   discover_<fixture>_p50_ms, discover_<fixture>_devices
#        `kdpctl discover` on each fixture, KDP_BENCH_DISCOVER (20) runs inside
#        one sim-node session (the fixture load is not counted); devices is
#        the number of PCI functions it listed
set -u

build=$(cd "${1:-${KDP_BUILD_DIR:-build}}" && pwd) || exit 2
src=$(cd "$(dirname "$0")/.." && pwd)
events=${KDP_BENCH_EVENTS:-1000}
runs=${KDP_BENCH_DISCOVER:-20}

for f in kdpd kdpctl bench/bench-scan tests/interop/kubelet-go tests/sim-node/sim-node \
         tests/backends/kdp-backend-pcitest.so; do
        [ -e "$build/$f" ] || { echo "hardware.sh: $build/$f not built" >&2; exit 2; }
done

work=$(mktemp -d /tmp/kdp-bench-hw.XXXXXX)
trap 'rm -rf "$work"' EXIT
export KDP_BUILD_DIR=$build

echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "host_cpus=$(nproc)"
echo "host_cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
echo "host_kernel=$(uname -r)"

# 1. event -> ListAndWatch latency
mkdir "$work/events"
/usr/bin/python3 "$src/bench/events.py" "$build" "$work/events" "$events" ||
        { echo "hardware.sh: events.py failed; kdpd's log:" >&2; tail -n 20 "$work/events/kdpd.err" >&2; }

# 2. full rescan, in process
"$build/bench/bench-scan" 50 2> "$work/bench-scan.err" ||
        { echo "hardware.sh: bench-scan failed" >&2; cat "$work/bench-scan.err" >&2; }

# 3. kdpctl discover, one sim-node session per fixture; each run's start and
# end ($EPOCHREALTIME) on one line of times.txt
for fix in "$src"/tests/fixtures/nodes/*.umockdev; do
        name=$(basename "$fix" .umockdev)
        key=${name//-/_}
        d=$work/discover-$name
        mkdir "$d"
        if ! "$src/tests/sim-node/sim-node" "$fix" -- /bin/bash -c '
                for i in $(seq "$1"); do
                        t0=$EPOCHREALTIME
                        "$2" discover > "$3/out.$i" || exit 1
                        t1=$EPOCHREALTIME
                        echo "$t0 $t1"
                done > "$3/times.txt"' discover "$runs" "$build/kdpctl" "$d" 2> "$d/err"; then
                echo "hardware.sh: kdpctl discover on $name failed" >&2
                tail -n 5 "$d/err" >&2
                continue
        fi
        # nearest-rank p50 of (t1 - t0) in ms
        echo "discover_${key}_p50_ms=$(awk '{ print ($2 - $1) * 1000 }' "$d/times.txt" | sort -n |
                awk '{ v[NR] = $1 } END { i = int((NR * 50 + 99) / 100); printf "%.2f", v[i < 1 ? 1 : i] }')"
        echo "discover_${key}_devices=$(( $(wc -l < "$d/out.1") - 1 ))"
done
