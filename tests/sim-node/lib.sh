# SPDX-License-Identifier: GPL-2.0-or-later
# What the rig's test scripts share; source it first. It sets src, build (exported as
# KDP_BUILD_DIR), simnode, check (sim-check), nodes (tests/fixtures/nodes) and tmp (removed on exit
# with fds 3 and 4 closed and $sim_pid killed), skips (exit 77) when sim-node is not built or
# umockdev's preload does not run here, and defines ok, fail (counted in $failures), expect,
# run (a command on a fixture's node), wait_text and run_script (an event script, step by step).
# ok() never fails, so "[ ... ] && ok ... || fail ..." is an if-then-else.
# On every exit path (exit, SIGINT, SIGTERM, SIGHUP) $sim_pid and everything else the script
# started is stopped; start sim-node in the background with "${DIE_WITH_US[@]}" in front so that
# it dies with the script even when the script is SIGKILLed. tests/procs.sh gives now_ms,
# deadline_ms and SLOW (deadlines stretched in sanitized builds).
# shellcheck disable=SC2034
src=${KDP_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
build=${KDP_BUILD_DIR:-$src/build}
export KDP_BUILD_DIR=$build
simnode=$src/tests/sim-node/sim-node
check=$build/tests/sim-node/sim-check
nodes=$src/tests/fixtures/nodes
. "$src/tests/procs.sh"

for f in "$check" "$build/tests/sim-node/sim-node" "$@"; do
        if [ ! -x "$f" ]; then
                echo "SKIP: $f is not built"
                exit 77
        fi
done
tmp=$(mktemp -d /tmp/kdp-sim-node.XXXXXX)
export TMPDIR=$tmp              # sim-node's testbeds too: gone with $tmp even when sim-node was SIGKILLed
sim_pid=
cleanup() {
        local rest

        exec 3>&- 4>&- 2>/dev/null
        # shellcheck disable=SC2086
        kill_tree $sim_pid
        rest=$(proc_descendants $$)
        # shellcheck disable=SC2086
        kill_tree $rest
        rm -rf "$tmp"
}
on_exit cleanup

# does this machine run umockdev's preload at all?
"$simnode" "$nodes/flapping-device.umockdev" -- true
if [ $? = 77 ]; then
        echo "SKIP: umockdev's preload is not available"
        exit 77
fi

failures=0
fail() {
        echo "FAIL: $*"
        failures=$((failures + 1))
}
ok() {
        echo "ok: $*"
}
# expect NAME FILE: FILE must equal stdin exactly
expect() {
        local name=$1 file=${2:?expect NAME FILE}
        if diff -u <(cat) "$file" > "$tmp/diff"; then
                ok "$name"
        else
                fail "$name"
                sed 's/^/    /' "$tmp/diff"
        fi
}

# run NAME FIXTURE COMMAND...: COMMAND on the fixture's node, its stdout in $tmp/out; sim-node or
# COMMAND failing, or anything on stderr, is a failure
run() {
        local name=$1 fixture=$2 rc
        shift 2
        "${DIE_WITH_US[@]}" "$simnode" "$nodes/$fixture.umockdev" -- "$@" > "$tmp/out" 2> "$tmp/err"
        rc=$?
        [ $rc = 0 ] && [ ! -s "$tmp/err" ] || fail "$name: exit $rc: $(cat "$tmp/err")"
}

# wait_text FILE REGEX: until a line of FILE matches (deadline 60 s, stretched by SLOW); else a
# failure that shows FILE and $tmp/simerr (sim-node's stderr, where a script writes it), and exit
wait_text() {
        local file=$1 re=$2 end
        end=$(deadline_ms 60)
        while [ "$(now_ms)" -lt "$end" ]; do
                grep -qE -- "$re" "$file" 2>/dev/null && return 0
                sleep 0.02
        done
        fail "timed out waiting for /$re/ in $(basename "$file")"
        sed 's/^/    /' "$file" "$tmp/simerr" 2>/dev/null
        exit 1
}

# run_script FIXTURE SCRIPT REQUEST...: sim-node runs FIXTURE with a "udev" monitor (sim-check) in the child; SCRIPT goes to the control FIFO one part at a time, each part
# ending at an "echo MARK" line (its waits get a deadline of 60 s). At each mark the REQUESTs go
# to sim-check, then "mark MARK". $tmp/events: the events and answers; $tmp/end: kdpctl discover
# of the node at the end ($kdpctl, which the test sets), which the child runs once the monitor is done.

run_script() {
        local fixture=$1 script=$2 part rc
        shift 2
        rm -f "$tmp/ctl" "$tmp/req" "$tmp/events" "$tmp/simout" "$tmp/end" "$tmp"/part.*
        awk -v dir="$tmp" '/^wait$/ { $0 = "wait 60000" } /^wait-listeners$/ { $0 = "wait-listeners 1 60000" }
                { print > (dir "/part." sprintf("%02d", n)) } /^echo / { close(dir "/part." sprintf("%02d", n)); n++ }' \
                "$nodes/$script"
        mkfifo "$tmp/ctl" "$tmp/req"
        exec 3<>"$tmp/ctl" 4<>"$tmp/req"
        "${DIE_WITH_US[@]}" "$simnode" "$nodes/$fixture.umockdev" --control "$tmp/ctl" -- \
                bash -c '"$0" monitor udev < "$1" > "$2"; exec "$3" discover > "$4"' \
                "$check" "$tmp/req" "$tmp/events" "$kdpctl" "$tmp/end" > "$tmp/simout" 2> "$tmp/simerr" 3>&- 4>&- &
        sim_pid=$!
        for part in "$tmp"/part.*; do
                mark=$(sed -n 's/^echo //p' "$part")
                [ -n "$mark" ] || { fail "$script: $(basename "$part") ends without an echo"; continue; }
                cat "$part" >&3
                wait_text "$tmp/simout" "^$mark\$"
                printf '%s\n' "$@" "mark $mark" >&4
                wait_text "$tmp/events" "^mark $mark\$"
        done
        exec 4>&-
        wait "$sim_pid"
        rc=$?
        sim_pid=
        exec 3>&-
        [ $rc = 0 ] && [ ! -s "$tmp/simerr" ] && ok "$script: sim-node exits 0, nothing on stderr" ||
                fail "$script: rc=$rc $(cat "$tmp/simerr")"
}
