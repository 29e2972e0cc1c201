# SPDX-License-Identifier: GPL-2.0-or-later
# A backend whose scan holds its lock stalls only the calls that need its
# hooks: while the stall test backend's scan waits (until the test removes a
# file), with one of its hook-backed Allocates waiting behind it, the other
# backend's Allocate is answered and a new ListAndWatch of it gets its list;
# once the scan returns, the held Allocate is answered by the hook. Every
# assertion is on the order of events, none on time.
. "$(dirname "$0")/lib.sh"

HOLD="$T/hold"
QUEUED='"Queued call for the backend'\''s hook" resource="stall.example.com/thing" method="/v1beta1.DevicePlugin/Allocate"'
mkdir -p "$HOLD"
cfg="$T/config.yaml"
cat >"$cfg" <<YAML
stall:
  hold_dir: $HOLD
YAML
start_kubelet kubelet
start_kdpd kdpd --config "$cfg" --backend "$KDP_BUILD_DIR/tests/backends/kdp-backend-stall.so" \
        --backend "$KDP_BUILD_DIR/tests/backends/kdp-backend-twin.so" --v 2
wait_line "$T/kubelet.out" '^devices resource=stall.example.com/thing capacity=1 '
wait_line "$T/kubelet.out" '^devices resource=twin.example.com/gadget capacity=2 '
STALL_S=$(plugin_socket stall)
TWIN_S=$(plugin_socket twin)
assert_eq "$("$KDPCTL" allocate --socket "$STALL_S" thing-0 | grep '^env TINY_')" \
        "$(printf 'env TINY_HOOK=allocate\nenv TINY_LABEL=a')" "Allocate by the hook before the hold"
wait_count "$T/kdpd.err" "$QUEUED" 1

# a reload scans the backend again (its reload hook adds a device); the scan waits for the file
touch "$HOLD/scan"
kill -HUP "$KDPD_PID"
wait_line "$T/kdpd.err" '"Holding scan" backend="stall"'
"${DIE_WITH_US[@]}" "$KDPCTL" allocate --socket "$STALL_S" --timeout 0 thing-0 >"$T/held.out" 2>&1 &
PIDS+=($!)
HELD_PID=$!
wait_count "$T/kdpd.err" "$QUEUED" 2
assert_eq "$("$KDPCTL" allocate --socket "$TWIN_S" gadget-1 | grep '^env TINY_')" "env TINY_LABEL=a" \
        "Allocate of the other backend while the scan is held"
assert_eq "$("$KDPCTL" list --socket "$TWIN_S" | tail -n 1)" "total=2 healthy=2 unhealthy=0" \
        "a new ListAndWatch of the other backend while the scan is held"
proc_alive "$HELD_PID" || fail "the held Allocate ended before the scan was released: $(cat "$T/held.out")"
assert_eq "$(cat "$T/held.out")" "" "held Allocate output while the scan is held"
assert_eq "$(grep -c '"Allocated by hook" backend="stall"' "$T/kdpd.err")" 1 "hook calls while the scan is held"
pass "the other backend's Allocate and ListAndWatch answered while a scan held its backend's lock"

rm "$HOLD/scan"
wait_line "$T/kdpd.err" '"Released scan" backend="stall"'
wait_line "$T/held.out" '^env TINY_HOOK=allocate$'
wait "$HELD_PID"
assert_eq "$?" 0 "held Allocate exit code"
wait_line "$T/kdpd.err" '"Allocated by hook" backend="stall" resource="stall.example.com/thing" allocates=2$'
assert_eq "$(grep -oE '"(Holding|Released) scan" backend="stall"|"Allocated by hook" backend="stall"' "$T/kdpd.err" |
        tr '\n' '|')" \
        '"Allocated by hook" backend="stall"|"Holding scan" backend="stall"|"Released scan" backend="stall"|"Allocated by hook" backend="stall"|' \
        "the held Allocate's hook ran after the scan"
wait_line "$T/kubelet.out" '^devices resource=stall.example.com/thing capacity=2 '
assert_eq "$("$KDPCTL" allocate --socket "$STALL_S" thing-1 | grep '^env TINY_HOOK')" "env TINY_HOOK=allocate" \
        "Allocate by the hook of the device the released scan found"
pass "the held backend's hook-backed Allocate answered after its scan returned"
stop_kdpd
