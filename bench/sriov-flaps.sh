#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench/sriov-flaps.sh [BUILD_DIR]: what a flapping PF link costs kdpd's log. kdpd
# --backend sriov on the simulated E810 (tests/fixtures/nodes/sriov-e810), one pool of
# PF0's 8 VFs (pfNames ens3f0np0), the default --health-hold-ms (5000) and --v; in a
# network namespace of its own (root: unshare -n), where ens3f0np0 is a dummy link (or one end of a veth pair).
# KDP_BENCH_FLAPS (1000) times: ens3f0np0 down, KDP_BENCH_FLAP_MS (20) ms, up, the same
# again; then the wait for the 8 VFs' "Device recovered" (the hold after the last flap).
# Not part of ctest: the figures depend on the machine. Prints:
#
#   flaps, flap_ms       what was sent
#   flaps_seen           the flaps kdpd told apart (its end lines' flaps=, at most
#        `flaps`: a down and up between two of its scans is no flap it sees); without
#        that field, the reason changes it logged per VF, halved, plus one
#   log_lines, log_bytes       what kdpd wrote to stderr from the first flap to the end
#   health_lines               of them, the devices' health lines
#   kubelet_lists              the pool's ListAndWatch messages meanwhile (2: all
#        Unhealthy, then all Healthy)
set -u

if [ "${KDP_BENCH_NETNS:-}" != "$$" ]; then
        [ "$(id -u)" = 0 ] || { echo "${0##*/}: needs root (a network namespace of its own)" >&2; exit 2; }
        KDP_BENCH_NETNS=$$ exec unshare --net -- bash "$0" "$@"
fi

. "$(dirname "$0")/lib.sh"
flaps=${KDP_BENCH_FLAPS:-1000}
flap_ms=${KDP_BENCH_FLAP_MS:-20}
pf=ens3f0np0
res=intel.com/e810_pf0
health='"Device (became unhealthy|unhealthy for another reason|recovered)"'
need kdpd tests/interop/kubelet-go tests/sim-node/sim-node plugins/kdp-backend-sriov.so
fixture=$src/tests/fixtures/nodes/sriov-e810.umockdev
ip link set lo up
k=0
for link in ens3f0np0 ens3f1np1; do
        k=$((k + 1))
        # a veth pair where the kernel has no dummy links, its peer up: the link has its carrier
        ip link add "$link" type dummy 2> /dev/null ||
                { ip link add "$link" type veth peer name "pf${k}peer" && ip link set "pf${k}peer" up; } || exit 2
        ip link set "$link" up || exit 2
done
echo "{\"resourceList\": [{\"resourceName\": \"e810_pf0\", \"selectors\": [{\"pfNames\": [\"$pf\"]}]}]}" \
        > "$work/pf0.json"

# count FILE REGEX
count() {
        grep -Ec -- "$2" "$1"
}

# wait_for FILE REGEX N: until N lines of FILE match REGEX, 120 s at most
wait_for() {
        for _ in $(seq 12000); do
                [ "$(count "$1" "$2")" -ge "$3" ] && return 0
                sleep 0.01
        done
        echo "$me: no $3 lines matching $2 in $1" >&2
        return 1
}

report_start
session_wait_s=120
session flaps sim --backend sriov -o sriov.config_file="$work/pf0.json" || exit 1
log=$work/flaps/kdpd.err
kubelet=$work/flaps/kubelet.out
wait_for "$kubelet" " devices resource=$res capacity=8 allocatable=8 " 1 || exit 1
lines0=$(wc -l < "$log")
bytes0=$(wc -c < "$log")
lists0=$(count "$kubelet" " devices resource=$res ")
pause=$(awk -v ms="$flap_ms" 'BEGIN { printf "%.3f", ms / 1000 }')
for _ in $(seq "$flaps"); do
        ip link set "$pf" down
        sleep "$pause"
        ip link set "$pf" up
        sleep "$pause"
done
wait_for "$log" '"Device recovered"' 8 || exit 1
wait_for "$kubelet" " devices resource=$res " $((lists0 + 2)) || exit 1
tail -n +$((lines0 + 1)) "$log" > "$work/during"
seen=$(sed -n 's/.*"Device recovered" .* flaps=\([0-9]*\).*/\1/p' "$work/during" | sort -n | tail -n 1)
[ -n "$seen" ] || seen=$(( $(count "$work/during" '"Device unhealthy for another reason"') / 16 + 1 ))
echo "flaps=$flaps"
echo "flap_ms=$flap_ms"
echo "flaps_seen=$seen"
echo "log_lines=$(( $(wc -l < "$log") - lines0 ))"
echo "log_bytes=$(( $(wc -c < "$log") - bytes0 ))"
echo "health_lines=$(count "$work/during" "$health")"
echo "kubelet_lists=$(( $(count "$kubelet" " devices resource=$res ") - lists0 ))"
stop_session
report_end
