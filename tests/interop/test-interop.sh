#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# interop/kubelet-go: kdpd with the example backend against kubelet-go, a
# kubelet stand-in on grpc-go (the kubelet's own gRPC library).
#
#   1. registration: kubelet-go dials kdpd back and asks for its options;
#   2. the first ListAndWatch message: 8 widgets, 2 NUMA nodes round robin;
#   3. one admission of 2 widgets: GetPreferredAllocation keeps them on one
#      NUMA node, Allocate returns the example env, PreStartContainer runs;
#   4. a kubelet restart (SIGKILL, then a new kubelet that deletes every socket
#      and creates kubelet.sock): kdpd must register again;
#   5. SIGTERM to kdpd: it exits 0 and leaves no socket behind.
#
# Needs KDP_BUILD_DIR. Exit 77 (skipped) when kubelet-go was not built, i.e. no
# Go toolchain. KDP_INTEROP_PLUGIN replaces the plugin command (the directory
# is appended), e.g. "$KDP_BUILD_DIR/bench/go-plugin -dir" to check the test
# itself against the Go baseline plugin. Waits are for events, with deadlines of
# 30 s stretched in sanitized builds (tests/procs.sh); whatever the script
# started is stopped on every exit path and dies with it even on SIGKILL.
set -u
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/procs.sh"

build=${KDP_BUILD_DIR:?KDP_BUILD_DIR must name the build tree}
kubelet=$build/tests/interop/kubelet-go
res=example.com/widget

if [ ! -x "$kubelet" ]; then
        echo "SKIP: $kubelet not built (no Go toolchain)"
        exit 77
fi
work=$(mktemp -d /tmp/kdp-interop.XXXXXX)
if [ -n "${KDP_INTEROP_PLUGIN:-}" ]; then
        read -r -a plugin <<< "$KDP_INTEROP_PLUGIN"
else
        for f in "$build/kdpd" "$build/plugins/kdp-backend-example.so"; do
                [ -e "$f" ] || { echo "FAIL: $f is missing"; exit 1; }
        done
        plugin=("$build/kdpd" --backend example --cdi-dir "$work/cdi" --state-dir "$work/state" --kubelet-dir)
fi

dir=$work/device-plugins
mkdir "$dir"
kubelet_pid=
plugin_pid=

cleanup() {
        local rest

        # shellcheck disable=SC2086
        kill_tree $plugin_pid $kubelet_pid
        rest=$(proc_descendants $$)
        # shellcheck disable=SC2086
        kill_tree $rest
        rm -rf "$work"
}
on_exit cleanup

fail() {
        echo "FAIL: $*"
        for f in "$work"/*.out "$work"/*.err "$work"/*.log; do
                [ -s "$f" ] || continue
                echo "---- ${f##*/}"
                tail -n 40 "$f"
        done
        exit 1
}

# wait_for FILE ERE: until a line of FILE matches ERE (deadline 30 s, stretched by SLOW).
wait_for() {
        local deadline
        deadline=$(deadline_ms 30)
        until grep -qE -- "$2" "$1" 2>/dev/null; do
                [ "$(now_ms)" -lt "$deadline" ] || return 1
                sleep 0.01
        done
}

# expect FILE LINE: LINE must be a whole line of FILE.
expect() {
        grep -qxF -- "$2" "$1" || fail "missing line in ${1##*/}: $2"
}

# start_kubelet NAME [ARGS...]: kubelet-go with events in $work/NAME.out;
# the events, without the -timestamps prefix, in $work/NAME.events.
start_kubelet() {
        local name=$1
        shift
        "${DIE_WITH_US[@]}" "$kubelet" -dir "$dir" -timestamps "$@" > "$work/$name.out" 2> "$work/$name.err" &
        kubelet_pid=$!
}

events() {
        sed -E 's/^[0-9]+\.[0-9]+ //' "$work/$1.out" > "$work/$1.events"
}

devices_line="devices resource=$res capacity=8 allocatable=8"
devices_line+=" healthy=widget-0,widget-1,widget-2,widget-3,widget-4,widget-5,widget-6,widget-7 unhealthy="
devices_line+=" numa=widget-0:0;widget-1:1;widget-2:0;widget-3:1;widget-4:0;widget-5:1;widget-6:0;widget-7:1"
registered_re="^registered resource=$res endpoint=[^ /]+ pre_start_required=true preferred_available=true\$"

# ---- 1-3: registration, devices, one admission ----
start_kubelet k1 -admit "$res=2"
wait_for "$work/k1.err" "serving" || fail "kubelet-go did not start"
"${DIE_WITH_US[@]}" "${plugin[@]}" "$dir" > "$work/plugin.log" 2>&1 &
plugin_pid=$!

wait_for "$work/k1.out" " (prestart|admit-failed) resource=$res " || fail "no admission"
events k1
if grep -qE '^(admit-failed|register-rejected) ' "$work/k1.events"; then
        fail "unexpected event: $(grep -m1 -E '^(admit-failed|register-rejected) ' "$work/k1.events")"
fi
grep -qE -- "$registered_re" "$work/k1.events" || fail "no registered line of the expected shape"
endpoint1=$(grep -m1 '^registered ' "$work/k1.events" | sed -E 's/.* endpoint=([^ ]+) .*/\1/')
[ -S "$dir/$endpoint1" ] || fail "endpoint $endpoint1 is not a socket in $dir"
expect "$work/k1.events" "$devices_line"
expect "$work/k1.events" "admitted resource=$res n=2 preferred=widget-0,widget-2 allocated=widget-0,widget-2"
# the whole response, in the stand-ins' order (env, device, mount, annotation, cdi)
alloc_want="alloc resource=$res env EXAMPLE_WIDGETS=widget-0,widget-2
alloc resource=$res env WIDGET_0=widget-0
alloc resource=$res env WIDGET_2=widget-2
alloc resource=$res device /dev/null /dev/widget0 rw
alloc resource=$res device /dev/null /dev/widget2 rw
alloc resource=$res annotation example.com/widgets=widget-0,widget-2"
alloc_got=$(grep '^alloc ' "$work/k1.events")
[ "$alloc_got" = "$alloc_want" ] || fail "Allocate response differs:
$(diff <(echo "$alloc_want") <(echo "$alloc_got"))"
expect "$work/k1.events" "prestart resource=$res ok"
if grep -qE '^(stream-ended|admit-failed|register-rejected) ' "$work/k1.events"; then
        fail "unexpected event: $(grep -m1 -E '^(stream-ended|admit-failed|register-rejected) ' "$work/k1.events")"
fi

# ---- 4: kubelet restart ----
# (braces: bash reports a killed job on the shell's stderr, not wait's)
{ kill -KILL "$kubelet_pid"; wait "$kubelet_pid"; } 2>/dev/null
kubelet_pid=
# a real restart takes a while; the plugin may be backing off meanwhile
sleep 1
start_kubelet k2
wait_for "$work/k2.out" " devices resource=$res " || fail "no re-registration"
events k2
grep -qE -- "$registered_re" "$work/k2.events" || fail "no registered line of the expected shape after the restart"
expect "$work/k2.events" "$devices_line"
endpoint2=$(grep -m1 '^registered ' "$work/k2.events" | sed -E 's/.* endpoint=([^ ]+) .*/\1/')
[ -S "$dir/$endpoint2" ] || fail "endpoint $endpoint2 is not a socket in $dir after the restart"
if [ "$endpoint2" != "$endpoint1" ] && [ -e "$dir/$endpoint1" ]; then
        fail "the old socket $endpoint1 survived the kubelet's cleanup"
fi

# ---- 5: SIGTERM ----
kill -TERM "$plugin_pid"
wait_gone 30 "$plugin_pid"
proc_alive "$plugin_pid" && fail "the plugin did not exit within $((30 * SLOW)) s of SIGTERM"
{ wait "$plugin_pid"; } 2>/dev/null
rc=$?
plugin_pid=
[ "$rc" -eq 0 ] || fail "the plugin exited with status $rc after SIGTERM"
left=$(find "$dir" -type s ! -name kubelet.sock)
[ -z "$left" ] || fail "sockets left after SIGTERM: $left"
wait_for "$work/k2.out" " stream-ended resource=$res " || fail "the kubelet saw no end of the stream"
wait_for "$work/k2.out" " devices resource=$res capacity=8 allocatable=0 " ||
        fail "the devices did not turn unhealthy at the end of the stream"
events k2
grep -m1 "^stream-ended " "$work/k2.events"

echo "PASS"
