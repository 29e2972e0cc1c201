# SPDX-License-Identifier: GPL-2.0-or-later
# `kdpctl who`: which pod holds which device, from the stand-in kubelet's
# PodResources List and GetAllocatableResources, joined with kdpd's own view
# (health, NUMA) of each plugin socket given; exact table and JSON, free and
# unhealthy devices included, and every failure with its own message.
. "$(dirname "$0")/lib.sh"

PR="$T/pod-resources/kubelet.sock"

# who ARGS...: kdpctl who on the stand-in kubelet's PodResources socket; stdout in $OUT, stderr in
# $ERR, exit code in $RC
who() {
        "$KDPCTL" who --pod-resources "$PR" "$@" >"$T/who.stdout" 2>"$T/who.stderr"
        RC=$?
        OUT=$(cat "$T/who.stdout")
        ERR=$(cat "$T/who.stderr")
}

# who_fails MESSAGE ARGS...: who exits 1 with MESSAGE alone on stderr and nothing on stdout
who_fails() {
        local message=$1
        shift
        who "$@"
        assert_eq "$RC" 1 "exit code of who $*"
        assert_eq "$OUT" "" "stdout of who $*"
        assert_eq "$ERR" "$message" "stderr of who $*"
}

start_kubelet kubelet --pod-resources "$PR" \
        --admit example.com/widget=2 --admit example.com/widget=1 --admit example.com/gadget=1
# 8 widgets on NUMA nodes 0 and 1, widget-5 unhealthy; 3 gadgets (IDs widget-0..2) without topology
start_kdpd kdpd --backend example -o example.unhealthy=widget-5
KDPD_WIDGET=$KDPD_PID
start_kdpd kdpd-gadget --backend example --state-dir "$T/state-gadget" -o example.resource=example.com/gadget \
        -o example.devices=3 -o example.numa_nodes=0
wait_count "$T/kubelet.out" '^prestart resource=example.com/widget ok$' 2
wait_count "$T/kubelet.out" '^prestart resource=example.com/gadget ok$' 1
assert_eq "$(grep '^admitted' "$T/kubelet.out" | sort)" \
        "admitted resource=example.com/gadget n=1 preferred=widget-0 allocated=widget-0
admitted resource=example.com/widget n=1 preferred=widget-7 allocated=widget-7
admitted resource=example.com/widget n=2 preferred=widget-1,widget-3 allocated=widget-1,widget-3" \
        "admissions: pod-0 two widgets, pod-1 one widget, pod-2 one gadget"
W=$(plugin_socket widget)
G=$(plugin_socket gadget)
[ -S "$W" ] && [ -S "$G" ] || fail "plugin sockets: '$W' '$G'"

# what kdpd's view adds to the kubelet's: widget-5, Unhealthy
TABLE="RESOURCE            DEVICE    HEALTH     NUMA  NAMESPACE  POD    CONTAINER
example.com/gadget  widget-0  Healthy    -     default    pod-2  c0
example.com/gadget  widget-1  Healthy    -     -          -      -
example.com/gadget  widget-2  Healthy    -     -          -      -
example.com/widget  widget-0  Healthy    0     -          -      -
example.com/widget  widget-1  Healthy    1     default    pod-0  c0
example.com/widget  widget-2  Healthy    0     -          -      -
example.com/widget  widget-3  Healthy    1     default    pod-0  c0
example.com/widget  widget-4  Healthy    0     -          -      -
example.com/widget  widget-5  Unhealthy  1     -          -      -
example.com/widget  widget-6  Healthy    0     -          -      -
example.com/widget  widget-7  Healthy    1     default    pod-1  c0"

# ---- the kubelet's view alone: unhealthy widget-5 is neither allocatable nor held, so not shown ----
who
assert_eq "$RC" 0 "who exit code"
assert_eq "$ERR" "" "who stderr"
# TABLE without widget-5, its HEALTH column two narrower (the widest cell is "Healthy")
assert_eq "$OUT" "$(echo "$TABLE" | grep -v ' widget-5 ' | sed -E 's/^(.{37})  /\1/')" "table from the kubelet alone"
assert_eq "$(echo "$OUT" | sed -n 2p)" "example.com/gadget  widget-0  Healthy  -     default    pod-2  c0" \
        "a row of the kubelet's table"
assert_eq "$(tail -n 1 "$T/kubelet.out")" "allocatable devices=10" "GetAllocatableResources answered"
pass "table from PodResources List and GetAllocatableResources: holders, free devices, NUMA"

# ---- joined with kdpd's view ----
who --socket "$W" --socket "$G"
assert_eq "$RC:$ERR" "0:" "who with both sockets: exit code and stderr"
assert_eq "$OUT" "$TABLE" "table joined with both plugin sockets"
pass "table joined with kdpd's view: the unhealthy device the kubelet does not count"

who --socket "unix:$G" --socket "$W" -o json
assert_eq "$RC:$ERR" "0:" "who -o json: exit code and stderr"
assert_eq "$OUT" '{
  "allocatableKnown": true,
  "devices": [
    {"resource": "example.com/gadget", "id": "widget-0", "health": "Healthy", "numa": [], "allocatable": true, "namespace": "default", "pod": "pod-2", "container": "c0"},
    {"resource": "example.com/gadget", "id": "widget-1", "health": "Healthy", "numa": [], "allocatable": true, "namespace": null, "pod": null, "container": null},
    {"resource": "example.com/gadget", "id": "widget-2", "health": "Healthy", "numa": [], "allocatable": true, "namespace": null, "pod": null, "container": null},
    {"resource": "example.com/widget", "id": "widget-0", "health": "Healthy", "numa": [0], "allocatable": true, "namespace": null, "pod": null, "container": null},
    {"resource": "example.com/widget", "id": "widget-1", "health": "Healthy", "numa": [1], "allocatable": true, "namespace": "default", "pod": "pod-0", "container": "c0"},
    {"resource": "example.com/widget", "id": "widget-2", "health": "Healthy", "numa": [0], "allocatable": true, "namespace": null, "pod": null, "container": null},
    {"resource": "example.com/widget", "id": "widget-3", "health": "Healthy", "numa": [1], "allocatable": true, "namespace": "default", "pod": "pod-0", "container": "c0"},
    {"resource": "example.com/widget", "id": "widget-4", "health": "Healthy", "numa": [0], "allocatable": true, "namespace": null, "pod": null, "container": null},
    {"resource": "example.com/widget", "id": "widget-5", "health": "Unhealthy", "numa": [1], "allocatable": false, "namespace": null, "pod": null, "container": null},
    {"resource": "example.com/widget", "id": "widget-6", "health": "Healthy", "numa": [0], "allocatable": true, "namespace": null, "pod": null, "container": null},
    {"resource": "example.com/widget", "id": "widget-7", "health": "Healthy", "numa": [1], "allocatable": true, "namespace": "default", "pod": "pod-1", "container": "c0"}
  ]
}' "JSON joined with both plugin sockets"
if command -v python3 >/dev/null; then
        python3 -c 'import json, sys; json.load(sys.stdin)' <"$T/who.stdout" || fail "who -o json is not JSON"
fi
pass "JSON: the same rows, raw facts (plugin health, allocatable, null when free)"

# ---- a socket's resource: from kdpd's socket name, from shared device IDs, or given ----
ln -s "$W" "$T/widgets.sock"
ln -s "$G" "$T/gadgets.sock"
who --socket "$T/widgets.sock" --socket "$G"
assert_eq "$RC:$ERR" "0:" "who with a socket not named by kdpd"
assert_eq "$OUT" "$TABLE" "resource told by the device IDs the kubelet reports"
who --socket "$W" --socket "example.com/gadget=$T/gadgets.sock"
assert_eq "$RC:$ERR" "0:" "who with --socket RESOURCE=PATH"
assert_eq "$OUT" "$TABLE" "resource given with the socket"
# the gadgets' IDs widget-0..2 are IDs of both resources: which one is not told
who_fails "kdpctl who: cannot tell the resource of $T/gadgets.sock: not a kdpd socket name, and its 3 device IDs are not those of one resource the kubelet reports; give it as --socket RESOURCE=$T/gadgets.sock" \
        --socket "$W" --socket "$T/gadgets.sock"
who_fails "kdpctl who: $W and $T/widgets.sock both serve example.com/widget" --socket "$W" --socket "$T/widgets.sock"
pass "a socket's resource from its kdpd name, the kubelet's device IDs or RESOURCE=; ambiguity refused"

# ---- failures, each with its own message ----
who_fails "kdpctl who: no PodResources socket at $T/nowhere.sock (is the kubelet running? --pod-resources names its socket under another --root-dir)" \
        --pod-resources "$T/nowhere.sock"
who_fails "kdpctl who: $DIR is not a socket (the PodResources socket)" --pod-resources "$DIR"
who_fails "kdpctl who: no plugin socket at $T/nowhere.sock" --socket "$W" --socket "$T/nowhere.sock"
# sockets that serve something else: the peer's own status
who_fails "kdpctl who: ListAndWatch on $PR failed: code=UNIMPLEMENTED message=unknown service v1beta1.DevicePlugin" \
        --socket "$PR"
who_fails "kdpctl who: List on $W failed: code=UNIMPLEMENTED message=unknown method" --pod-resources "$W"
kill -STOP "$KUBELET_PID"
who_fails "kdpctl who: no answer to List on $PR within 1 s" --timeout 1
kill -CONT "$KUBELET_PID"
kill -STOP "$KDPD_PID"                         # the gadget kdpd
who_fails "kdpctl who: no answer to ListAndWatch on $G within 1.5 s" --socket "$G" --timeout 1.5
kill -CONT "$KDPD_PID"
pass "missing sockets, sockets of another service, a hung kubelet and a hung plugin: exit 1 with a message, nothing on stdout"

"$KDPCTL" who extra >/dev/null 2>&1
assert_eq "$?" 2 "who with an argument"
"$KDPCTL" who -o yaml >/dev/null 2>&1
assert_eq "$?" 2 "who -o yaml"
"$KDPCTL" kubelet --dir "$T/x" --get-allocatable disabled >/dev/null 2>&1
assert_eq "$?" 2 "kubelet --get-allocatable without --pod-resources"
pass "usage errors exit 2"

# ---- older kubelets: GetAllocatableResources not served; List's view and kdpd's still printed ----
for mode in unimplemented disabled; do
        mkdir -p "$T/dp-$mode"
        "${DIE_WITH_US[@]}" "$KDPCTL" kubelet --dir "$T/dp-$mode" --pod-resources "$T/pr-$mode.sock" \
                --get-allocatable "$mode" >"$T/kubelet-$mode.out" 2>"$T/kubelet-$mode.err" &
        PIDS+=($!)
        wait_line "$T/kubelet-$mode.err" '"Serving kubelet socket"'
done
NOTE="): a kubelet before 1.21, or one with the KubeletPodResourcesGetAllocatable feature gate off; the devices no pod holds are shown only from the plugin sockets given"
"$KDPCTL" who --pod-resources "$T/pr-unimplemented.sock" --socket "$G" >"$T/who.stdout" 2>"$T/who.stderr"
assert_eq "$?" 0 "who on a kubelet without GetAllocatableResources"
assert_eq "$(cat "$T/who.stderr")" \
        "kdpctl who: the kubelet does not serve GetAllocatableResources (code=UNIMPLEMENTED message=unknown method GetAllocatableResources for service v1.PodResourcesLister$NOTE" \
        "note on a kubelet before 1.21"
assert_eq "$(cat "$T/who.stdout")" "RESOURCE            DEVICE    HEALTH   NUMA  NAMESPACE  POD  CONTAINER
example.com/gadget  widget-0  Healthy  -     -          -    -
example.com/gadget  widget-1  Healthy  -     -          -    -
example.com/gadget  widget-2  Healthy  -     -          -    -" "table without GetAllocatableResources"
"$KDPCTL" who --pod-resources "$T/pr-disabled.sock" -o json >"$T/who.stdout" 2>"$T/who.stderr"
assert_eq "$?" 0 "who on a kubelet with GetAllocatableResources disabled"
assert_eq "$(cat "$T/who.stderr")" \
        "kdpctl who: the kubelet does not serve GetAllocatableResources (code=UNKNOWN message=Pod Resources API GetAllocatableResources disabled$NOTE" \
        "note on a kubelet with the feature gate off"
assert_eq "$(cat "$T/who.stdout")" '{
  "allocatableKnown": false,
  "devices": []
}' "JSON without GetAllocatableResources and no pods"
pass "a kubelet without GetAllocatableResources (before 1.21, or its gate off): said on stderr, the rest printed"

# ---- pods end: their devices are free in the next answer ----
kill -USR2 "$KUBELET_PID"
wait_count "$T/kubelet.out" '^freed ' 3
who --socket "$W"
assert_eq "$RC:$ERR" "0:" "who after the pods ended"
assert_eq "$(echo "$OUT" | awk '{ print $1, $2, $5 }' | tr '\n' '|')" \
        "RESOURCE DEVICE NAMESPACE|example.com/gadget widget-0 -|example.com/gadget widget-1 -|example.com/gadget widget-2 -|example.com/widget widget-0 -|example.com/widget widget-1 -|example.com/widget widget-2 -|example.com/widget widget-3 -|example.com/widget widget-4 -|example.com/widget widget-5 -|example.com/widget widget-6 -|example.com/widget widget-7 -|" \
        "every device free once the pods ended"
pass "devices of ended pods are free"

# who's ListAndWatch streams are not the kubelet's: nothing re-registered
assert_eq "$(count_lines "$T/kubelet.out" '^registered ')" 2 "registrations"
stop_kdpd                                       # the gadget kdpd
KDPD_PID=$KDPD_WIDGET
stop_kdpd

# ---- large answers: what who reads is bounded, and its memory with it ----
# (tests/e2e/wire-bytes.py pod-list writes a List answer and prints the table who makes of it)
MEMCHECK=1
[ "${KDP_VALGRIND:-0}" = 1 ] || [ "${KDP_SANITIZED:-0}" = 1 ] && MEMCHECK=0
BOUND_KB=$((46 * 1024))
# list_kubelet NAME PODS CONTAINERS DEVICES [PAD]: a stand-in kubelet answering List with such an answer
# on $T/pr-NAME.sock; the table expected in $T/NAME.table
list_kubelet() {
        local name=$1
        shift
        /usr/bin/python3 "$KDP_SOURCE_DIR/tests/e2e/wire-bytes.py" pod-list "$T/$name.list" "$@" >"$T/$name.table" ||
                fail "wire-bytes.py pod-list $*"
        mkdir -p "$T/dp-$name"
        "${DIE_WITH_US[@]}" "$KDPCTL" kubelet --dir "$T/dp-$name" --pod-resources "$T/pr-$name.sock" \
                --pod-list "$T/$name.list" >"$T/kubelet-$name.out" 2>"$T/kubelet-$name.err" &
        PIDS+=($!)
        wait_line "$T/kubelet-$name.err" '"Serving kubelet socket"'
}
# who_rss NAME: who on list_kubelet NAME's socket; stdout in $T/who.stdout, stderr in $ERR, exit code in
# $RC, its peak RSS in kB in $RSS_KB
who_rss() {
        /usr/bin/python3 "$KDP_SOURCE_DIR/tests/e2e/peak-rss.py" "$T/who" "$KDPCTL" who --pod-resources "$T/pr-$1.sock" --timeout "$((60 * SLOW))"
        RC=$?
        ERR=$(cat "$T/who.stderr")
        RSS_KB=$(cat "$T/who.rss")
}

# 2048 pods of 4 containers holding 8 devices each: 65536 rows from a 4.15 MB answer
list_kubelet large 2048 4 8 20
who_rss large
assert_eq "$RC:$ERR" "0:" "who on a large answer: exit code and stderr"
cmp -s "$T/who.stdout" "$T/large.table" || fail "who on a large answer: table differs: $(diff "$T/who.stdout" "$T/large.table" | head -n 5)"
assert_eq "$(wc -l <"$T/who.stdout")" 65537 "rows of the large table"
if [ "$MEMCHECK" = 1 ]; then
        [ "$RSS_KB" -lt "$BOUND_KB" ] || fail "who on a 4 MB answer: peak RSS $RSS_KB kB, not below $BOUND_KB kB"
fi
pass "a 4 MB List answer of 65536 held devices: the exact table, below $((BOUND_KB / 1024)) MB"

# 13 devices a container: 4.57 MB, past the 4 MiB who reads
list_kubelet over 2048 4 13
who_rss over
assert_eq "$RC:$(cat "$T/who.stdout")" "1:" "who on an answer over 4 MiB: exit code and stdout"
assert_eq "$ERR" "kdpctl who: the answer to List on $T/pr-over.sock is larger than 4 MiB, the most kdpctl who reads (Received message larger than max ($(stat -c %s "$T/over.list") vs. 4194304))" \
        "who on an answer over 4 MiB"
# 9 devices a container: 3.2 MB, but 73728 device entries
list_kubelet many 2048 4 9
who_rss many
assert_eq "$RC:$(cat "$T/who.stdout")" "1:" "who on an answer of 73728 device entries: exit code and stdout"
assert_eq "$ERR" "kdpctl who: the answer to List on $T/pr-many.sock holds more than kdpctl who reads: more than 65536 device entries in one ListPodResourcesResponse (field devices)" \
        "who on an answer of 73728 device entries"
pass "answers over 4 MiB or over the bounds of one node refused, naming the limit"
