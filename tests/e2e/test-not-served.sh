# SPDX-License-Identifier: GPL-2.0-or-later
# A backend's devices not served, through the framework alone (the example backend's not_served
# param): one info line per device when it starts being skipped, none on the rescans after it, one
# when a reload serves it again; `kdpctl not-served` shows the list kdpd keeps in --state-dir and
# fails once kdpd is gone. At --v 2 every RPC of the plugin API is logged.
. "$(dirname "$0")/lib.sh"

STATE="$T/state"
LOG="$T/kdpd.err"
RES=example.com/widget
printf 'example:\n  devices: 4\n  not_served: widget-2\n' >"$T/config.yaml"

start_kubelet kubelet
start_kdpd kdpd --backend example --config "$T/config.yaml" --state-dir "$STATE" --v 4
devices_match $RES "^devices resource=$RES capacity=3 allocatable=3 healthy=widget-0,widget-1,widget-3 unhealthy= " 10

L2='"Device not served" backend="example" address="widget-2" reason="listed in example.not_served"$'
wait_line "$LOG" "$L2"
assert_eq "$(count_lines "$LOG" "$L2")" 1 "one line for widget-2"
assert_eq "$("$KDPCTL" not-served --state-dir "$STATE")" "not served: widget-2 listed in example.not_served" \
        "kdpctl not-served"
assert_eq "$("$KDPCTL" not-served --state-dir "$STATE" --backend example)" \
        "not served: widget-2 listed in example.not_served" "kdpctl not-served --backend"
pass "a widget the backend skips: one line, listed by kdpctl not-served"

# the probe timer rescans every 5 s; --v 4 shows each scan
SCANNED='"Scanned device" backend="example" device="widget-0"'
n=$(count_lines "$LOG" "$SCANNED")
end=$(($(now_ms) + 30000 * SLOW))
while [ "$(count_lines "$LOG" "$SCANNED")" -lt $((n + 2)) ]; do
        [ "$(now_ms)" -lt "$end" ] || fail "no two rescans"
        sleep 0.1
done
assert_eq "$(count_lines "$LOG" '"Device not served')" 1 "no skip line added by two rescans"
pass "two rescans later, still one line"

S=$(plugin_socket widget)
"$KDPCTL" options --socket "$S" >/dev/null || fail "options"
pref=$("$KDPCTL" preferred --socket "$S" --size 1) || fail "preferred"
"$KDPCTL" allocate --socket "$S" widget-0 >/dev/null || fail "allocate"
"$KDPCTL" prestart --socket "$S" widget-0 >/dev/null || fail "prestart"
wait_line "$LOG" '"Answered device plugin options" resource="example.com/widget" preStartRequired="true" getPreferredAllocationAvailable="true"$'
wait_line "$LOG" "\"Chose preferred devices\" resource=\"$RES\" container=0 size=1 devices=\"${pref#preferred }\"$"
wait_line "$LOG" "\"Allocated devices\" resource=\"$RES\" containers=1$"
wait_line "$LOG" "\"Prepared devices for a container\" resource=\"$RES\" devices=1 backendHook=\"done\"$"
wait_line "$LOG" "\"Opened ListAndWatch stream\" resource=\"$RES\"$"
pass "every RPC logged at --v 2 (options, preferred with its choice, allocate, prestart, ListAndWatch)"

printf 'example:\n  devices: 4\n  not_served: widget-3\n' >"$T/config.yaml"
kill -HUP "$KDPD_PID"
L3='"Device not served" backend="example" address="widget-3" reason="listed in example.not_served"$'
S2='"Device served now" backend="example" address="widget-2" previousReason="listed in example.not_served"$'
wait_line "$LOG" "$L3"
wait_line "$LOG" "$S2"
devices_match $RES "^devices resource=$RES capacity=3 allocatable=3 healthy=widget-0,widget-1,widget-2 unhealthy= "
assert_eq "$(count_lines "$LOG" "$L3")" 1 "one line for widget-3"
assert_eq "$(count_lines "$LOG" "$S2")" 1 "one line for widget-2 served"
assert_eq "$(count_lines "$LOG" "$L2")" 1 "widget-2's first line not repeated by the reload"
assert_eq "$("$KDPCTL" not-served --state-dir "$STATE")" "not served: widget-3 listed in example.not_served" \
        "kdpctl not-served after the reload"
pass "a reload that serves widget-2 and skips widget-3: one line each"

stop_kdpd
[ -e "$STATE/example.not-served" ] && fail "the list outlived kdpd"
out=$("$KDPCTL" not-served --state-dir "$STATE" 2>&1) && fail "kdpctl not-served succeeded without kdpd"
assert_eq "$out" "kdpctl: no $STATE/*.not-served: kdpd writes it while it runs a backend with --state-dir $STATE" \
        "kdpctl not-served without kdpd"
pass "kdpd removed its list at stop; kdpctl not-served then fails, saying why"
