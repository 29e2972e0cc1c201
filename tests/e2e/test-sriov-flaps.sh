# SPDX-License-Identifier: GPL-2.0-or-later
# A flapping PF link logs each VF's health problem once when it starts and once when it ends,
# however many flaps come between (framework/src/daemon/health-log.h), while the kubelet's
# ListAndWatch sees what it always did: the SR-IOV backend on the simulated E810
# (tests/fixtures/nodes/sriov-e810), one pool of PF0's 8 VFs (pfNames ens3f0np0), in a network
# namespace of its own where ens3f0np0 is a link the test takes down and up (rtnetlink).
#   - FLAPS (200) flaps within the hold (--health-hold-ms): per VF exactly one "Device became
#     unhealthy" and one "Device recovered" with flaps=FLAPS, no other health line; the kubelet
#     got three lists: all Healthy, all Unhealthy, all Healthy.
#   - a reason of another cause on the way (a VF unbound while the link is down, bound again) is
#     logged, each change once; the end line counts that one flap.
# Each edge waits for kdpd to have applied it: the --v=2 line of a reason changed for the same
# cause (kdpd's per-flap lines before the fix, which the counts below refuse). The hold is long
# enough for an edge on a loaded machine: a hold that ran out between two flaps would show as a
# "Device recovered" too early.
. "$(dirname "$0")/../procs.sh"
in_private_netns "$0" "$@"
. "$(dirname "$0")/lib.sh"

FLAPS=${KDP_TEST_FLAPS:-200}
HOLD_MS=$((10000 * SLOW))
RES=intel.com/e810_pf0
PF=ens3f0np0
VFS=$(printf '0000:8a:01.%s,' 0 1 2 3 4 5 6 7)
VFS=${VFS%,}
NUMA=$(printf '0000:8a:01.%s:1;' 0 1 2 3 4 5 6 7)
NUMA=${NUMA%;}
LOG=$T/kdpd.err
DOWN="reason=\"PF $PF link down\""
HELD="reason=\"recovering: PF $PF link down\""
HEALTH='"Device (became unhealthy|unhealthy for another reason|recovered)"'

for link in ens3f0np0 ens3f1np1; do
        netns_link_add "$link" >"$T/ip.out" 2>&1 || fail "cannot make link $link: $(cat "$T/ip.out")"
done
cat >"$T/pf0.json" <<EOF
{"resourceList": [{"resourceName": "e810_pf0", "selectors": [{"pfNames": ["$PF"]}]}]}
EOF
start_kubelet kubelet
mkfifo "$T/ctl"
exec 9<>"$T/ctl"
start_sim_kdpd "$KDP_SOURCE_DIR/tests/fixtures/nodes/sriov-e810.umockdev" --control "$T/ctl" -- \
        --backend sriov -o sriov.config_file="$T/pf0.json" --health-hold-ms "$HOLD_MS" --v 2
wait_line "$LOG" '"Finished the first scan"|sim-node: .*preload|not built'
grep -q 'sim-node: .*preload\|not built' "$LOG" && { echo "skip: no simulated node"; exit 77; }

# lists: the kubelet's lists of the pool, one line each
lists() {
        grep "^devices resource=$RES " "$T/kubelet.out"
}
healthy="devices resource=$RES capacity=8 allocatable=8 healthy=$VFS unhealthy= numa=$NUMA"
unhealthy="devices resource=$RES capacity=8 allocatable=0 healthy= unhealthy=$VFS numa=$NUMA"
wait_count "$T/kubelet.out" "^devices resource=$RES " 1
assert_eq "$(lists)" "$healthy" "the kubelet's first list"

# health_lines DEVICE: kdpd's health lines of DEVICE at the default verbosity, without their header
health_lines() {
        grep -E "$HEALTH resource=\"$RES\" device=\"$1\"" "$LOG" | sed 's/^[^]]*] //'
}

# flap I: ens3f0np0 down, then up; each waits for the 8 VFs' reasons (the I-th time)
flap() {
        ip link set "$PF" down
        wait_count "$LOG" "$DOWN" $((8 * $1))
        ip link set "$PF" up
        wait_count "$LOG" "$HELD" $((8 * $1))
}

for i in $(seq "$FLAPS"); do
        flap "$i"
done
wait_count "$LOG" '"Device recovered"' 8
assert_eq "$(count_lines "$LOG" "$HEALTH")" 16 "health lines of $FLAPS flaps of 8 VFs"
for vf in ${VFS//,/ }; do
        assert_eq "$(health_lines "$vf")" "\"Device became unhealthy\" resource=\"$RES\" device=\"$vf\" $DOWN
\"Device recovered\" resource=\"$RES\" device=\"$vf\" flaps=$FLAPS" "the health lines of $vf"
done
assert_eq "$(lists)" "$healthy
$unhealthy
$healthy" "the kubelet's lists through the flaps"
pass "$FLAPS flaps of a PF's link: one line per VF when it fails, one when it recovered (flaps=$FLAPS); the kubelet saw one change each way"

# another cause on the way: 01.0 unbound while the link is down, then bound again
ip link set "$PF" down
wait_count "$LOG" "$DOWN" $((8 * FLAPS + 8))
ctl unbind 0000:8a:01.0
wait_line "$LOG" "\"Device unhealthy for another reason\" resource=\"$RES\" device=\"0000:8a:01\\.0\" reason=\"driver unbound\"$"
ctl bind 0000:8a:01.0 iavf
wait_count "$LOG" "device=\"0000:8a:01\\.0\" $DOWN" $((FLAPS + 2))
ip link set "$PF" up
wait_count "$LOG" '"Device recovered"' 16
assert_eq "$(health_lines 0000:8a:01.0 | tail -n 4)" "\"Device became unhealthy\" resource=\"$RES\" device=\"0000:8a:01.0\" $DOWN
\"Device unhealthy for another reason\" resource=\"$RES\" device=\"0000:8a:01.0\" reason=\"driver unbound\"
\"Device unhealthy for another reason\" resource=\"$RES\" device=\"0000:8a:01.0\" $DOWN
\"Device recovered\" resource=\"$RES\" device=\"0000:8a:01.0\" flaps=1" "the health lines of 01.0 unbound while its PF was down"
assert_eq "$(count_lines "$LOG" "$HEALTH")" 34 "health lines after one more failure with another cause"
assert_eq "$(lists)" "$healthy
$unhealthy
$healthy
$unhealthy
$healthy" "the kubelet's lists"
pass "a reason of another cause while unhealthy is logged, and its way back; the end line counts one flap"

stop_kdpd
stop_kubelet
