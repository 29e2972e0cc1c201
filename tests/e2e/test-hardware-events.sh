# SPDX-License-Identifier: GPL-2.0-or-later
# The hardware layer end to end, on a simulated 2-socket node with 8 H100
# GPUs behind 4 PCIe switches (tests/fixtures/nodes/two-socket-switches):
# kdpd with the pcitest backend (libkdp's PCI discovery and health checks)
# follows hot-unplug, hot-add, unbind, rebind and AER counters through udev
# events and probes, debounces a flapping device, and its preferred
# allocation keeps GPUs behind one switch, then on one socket.
. "$(dirname "$0")/lib.sh"

SIM="$KDP_SOURCE_DIR/tests/sim-node/sim-node"
FIX="$KDP_SOURCE_DIR/tests/fixtures/nodes/two-socket-switches.umockdev"
RES=test.example.com/pci
ALL=0000:18:00.0,0000:19:00.0,0000:3a:00.0,0000:3b:00.0,0000:9a:00.0,0000:9b:00.0,0000:ba:00.0,0000:bb:00.0

# A device back within the hold time after a removal or failure is held unhealthy (debounce), the
# hold counted from when kdpd saw it go: long enough that a loaded machine's slower scans still
# fall within it, and stretched with them (SLOW).
HOLD_MS=$((2000 * SLOW))

mkfifo "$T/ctl"
exec 9<>"$T/ctl"                                  # keep the FIFO open between commands
start_kubelet kubelet
"${DIE_WITH_US[@]}" "$SIM" "$FIX" --control "$T/ctl" -- "${KDPD_RUN[@]}" --kubelet-dir "$DIR" --state-dir "$T/state" --v 2 --health-hold-ms "$HOLD_MS" \
        --backend "$KDP_BUILD_DIR/tests/backends/kdp-backend-pcitest.so" \
        -o pcitest.vendor=10de -o pcitest.device=2330 -o pcitest.driver=nvidia \
        >"$T/kdpd.out" 2>"$T/kdpd.err" &
KDPD_PID=$!
PIDS+=($KDPD_PID)
wait_line "$T/kubelet.out" "^devices resource=$RES "
grep -q 'sim-node: .*preload\|not built' "$T/kdpd.err" && { echo "skip: no simulated node"; exit 77; }

# devices LINE-REGEX: waits for the newest `devices` line to match
devices() {
        devices_match "$RES" "$1"
}
# n_lists: how many `devices` lines the kubelet has had
n_lists() {
        grep -c "^devices resource=$RES " "$T/kubelet.out"
}
# devices_since N LINE-REGEX: waits for a `devices` line after the first N to match: a state that
# lasts a hold time can be over before a look at the newest line, on a loaded machine
devices_since() {
        local end=$(($(now_ms) + 10000 * SLOW))
        until grep "^devices resource=$RES " "$T/kubelet.out" | tail -n +"$(($1 + 1))" | grep -Eq -- "$2"; do
                [ "$(now_ms)" -lt "$end" ] || { fail "no devices line after the first $1 matches '$2'"; return; }
                sleep 0.02
        done
}
ctl() {
        echo "$*" >&9
}

devices "capacity=8 allocatable=8 healthy=$ALL unhealthy= numa=0000:18:00.0:0;0000:19:00.0:0;0000:3a:00.0:0;0000:3b:00.0:0;0000:9a:00.0:1;0000:9b:00.0:1;0000:ba:00.0:1;0000:bb:00.0:1$"
pass "8 GPUs discovered with their NUMA nodes"

S=$(plugin_socket pci)
assert_eq "$("$KDPCTL" preferred --socket "$S" --size 2)" "preferred 0000:18:00.0,0000:19:00.0" "2 GPUs"
assert_eq "$("$KDPCTL" preferred --socket "$S" --size 2 --must 0000:9b:00.0)" "preferred 0000:9b:00.0,0000:9a:00.0" \
        "2 GPUs with one given"
assert_eq "$("$KDPCTL" preferred --socket "$S" --size 4)" \
        "preferred 0000:18:00.0,0000:19:00.0,0000:3a:00.0,0000:3b:00.0" "4 GPUs"
pass "preferred allocation: same switch first, then same socket"

ctl unplug 0000:3a:00.0
devices "capacity=7 allocatable=7 healthy=0000:18:00.0,0000:19:00.0,0000:3b:00.0,"
grep -q '"Removed device" resource="test.example.com/pci" device="0000:3a:00.0"' "$T/kdpd.err" || fail "removal not logged"
pass "hot-unplug: the GPU left the list"

n=$(n_lists)
ctl replug 0000:3a:00.0
devices_since "$n" "capacity=8 allocatable=7 .*unhealthy=0000:3a:00.0 "
devices "capacity=8 allocatable=8 "
pass "hot-add: the GPU came back, held unhealthy for the hold time first"

ctl unbind 0000:9b:00.0
devices "capacity=8 allocatable=7 .*unhealthy=0000:9b:00.0 "
wait_line "$T/kdpd.err" '"Device became unhealthy" resource="test.example.com/pci" device="0000:9b:00.0" reason="driver unbound \(expected nvidia\)'
ctl bind 0000:9b:00.0 nvidia
devices "capacity=8 allocatable=8 "
wait_line "$T/kdpd.err" '"Device recovered" resource="test.example.com/pci" device="0000:9b:00.0"'
pass "unbind made the GPU unhealthy with its reason; rebind made it healthy again"

ctl set 0000:ba:00.0 aer_dev_fatal 'Undefined 0\nDLP 0\nSDES 0\nTLP 0\nFCP 0\nCmpltTO 1\nCmpltAbrt 0\nUnxCmplt 0\nRxOF 0\nMalfTLP 0\nECRC 0\nUnsupReq 0\nACSViol 0\nUncorrIntErr 0\nBlockedTLP 0\nAtomicOpBlocked 0\nTLPBlockedErr 0\nPoisonTLPBlocked 0\nTOTAL_ERR_FATAL 1'
devices "capacity=8 allocatable=7 .*unhealthy=0000:ba:00.0 "
wait_line "$T/kdpd.err" 'device="0000:ba:00.0" reason="AER fatal errors rose from 0 to 1"'
pass "a rising AER fatal counter (no uevent) made the GPU unhealthy within a probe"

# a flapping GPU: 6 unbind/bind cycles 50 ms apart; the kubelet sees it go down once and up once
before=$(grep -c "^devices " "$T/kubelet.out")
for i in 1 2 3 4 5 6; do
        ctl unbind 0000:bb:00.0
        ctl sleep 50
        ctl bind 0000:bb:00.0 nvidia
        ctl sleep 50
done
devices_since "$before" "capacity=8 allocatable=6 .*unhealthy=0000:ba:00.0,0000:bb:00.0 "
devices "capacity=8 allocatable=7 .*unhealthy=0000:ba:00.0 "
# from the last list before the flapping on: a message may repeat a state (a reason changed), never flip it
changes=$(grep "^devices " "$T/kubelet.out" | tail -n +"$before" | cut -d' ' -f4 | uniq | tr '\n' ' ')
assert_eq "$changes" "allocatable=7 allocatable=6 allocatable=7 " "allocatable as the kubelet saw it during the flapping"
pass "a flapping GPU was reported down once and up once"

# a whole PCIe switch (2 GPUs) pulled and put back 5 times as fast as the events go: devices
# vanish while kdpd scans; it keeps serving and ends with every GPU back. Each cycle is some
# 20 events and as many scans, and sim-node re-adds the switch's records: in a sanitized build
# two cycles, under valgrind one (devices still vanish mid-scan).
storm=5
if [ "${KDP_VALGRIND:-}" = 1 ]; then
        storm=1
        echo "valgrind: the switch storm is reduced from 5 unplug/replug cycles to $storm"
elif [ "${KDP_SANITIZED:-}" = 1 ]; then
        storm=2
        echo "sanitized build: the switch storm is reduced from 5 unplug/replug cycles to $storm"
fi
for i in $(seq 1 $storm); do
        ctl unplug 0000:16:00.0
        ctl replug 0000:16:00.0
done
ctl echo storm-done                             # sim-node prints it once every line before ran
wait_line "$T/kdpd.out" '^storm-done$' 120
devices "capacity=8 allocatable=7 healthy=0000:18:00.0,0000:19:00.0,0000:3a:00.0,0000:3b:00.0,0000:9a:00.0,0000:9b:00.0,0000:bb:00.0 unhealthy=0000:ba:00.0 "
proc_alive "$KDPD_PID" || fail "kdpd died"      # sim-node ends when kdpd does
assert_eq "$("$KDPCTL" list --socket "$(plugin_socket pci)" | tail -n 1)" "total=8 healthy=7 unhealthy=1" "list after the storm"
pass "devices vanishing during scans: kdpd kept serving and every GPU came back"

stop_kdpd                                       # sim-node passes SIGTERM on and exits with kdpd's status
pass "kdpd stopped cleanly on the simulated node"
