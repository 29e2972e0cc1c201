#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench/cluster-up.sh [RUNS]: how long tests/cluster/cluster.sh up and down take on this
# machine, RUNS times (default 3) in a fresh directory each: the first run's up is the
# coldest a machine gets once scripts/cluster-build's binaries are cached (page cache aside).
# Prints one line per run:  run=N up_s=S down_s=S
# and the binaries' build seconds as scripts/cluster-build recorded them (build_s_<set>).
# Not part of ctest: numbers depend on the machine. Needs root.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-3}
"$root/scripts/cluster-build" k8s etcd containerd | while read -r set dir; do
        echo "build_s_$set=$(cat "$dir/.build-seconds")"
done
ms() { local up; read -r up _ </proc/uptime; echo $((10#${up/./} * 10)); }
for ((i = 1; i <= runs; i++)); do
        d=$(mktemp -d /tmp/kdp-cluster-bench.XXXXXX)
        trap '"$root/tests/cluster/cluster.sh" down "$d" >/dev/null 2>&1; rm -rf "$d"' EXIT
        t0=$(ms); "$root/tests/cluster/cluster.sh" up "$d" 2>/dev/null
        t1=$(ms); "$root/tests/cluster/cluster.sh" down "$d" 2>/dev/null
        t2=$(ms)
        rm -rf "$d"; trap - EXIT
        printf 'run=%d up_s=%d.%02d down_s=%d.%02d\n' "$i" $(((t1 - t0) / 1000)) $(((t1 - t0) % 1000 / 10)) \
                $(((t2 - t1) / 1000)) $(((t2 - t1) % 1000 / 10))
done
