#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# leftovers/marker: leftovers.sh touches only what the suite started. In a scratch "build
# tree" two copies of sleep run, one with KDP_TEST_RUN naming that tree (as every test's
# processes have it) and one without (a program a developer started by hand): "after" names and
# kills the first and fails, and leaves the second running, unnamed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d) || exit 1
by_hand=
cleanup() {
        [ -n "$by_hand" ] && kill "$by_hand" 2>/dev/null && wait "$by_hand" 2>/dev/null
        rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

mkdir "$T/build"
cp "$(command -v sleep)" "$T/build/sleep"
KDP_TEST_RUN="$T/build" "$T/build/sleep" 300 &
by_suite=$!
env -u KDP_TEST_RUN "$T/build/sleep" 301 &
by_hand=$!
# both have exec'd the copy before leftovers.sh looks
for _ in $(seq 100); do
        [ "$(readlink /proc/$by_suite/exe)" = "$T/build/sleep" ] &&
                [ "$(readlink /proc/$by_hand/exe)" = "$T/build/sleep" ] && break
        sleep 0.05
done

out=$(bash "$here/leftovers.sh" after "$T/build")
rc=$?
[ "$rc" = 1 ] || fail "leftovers.sh after exited $rc, not 1: $out"
expected="FAIL: a process of $T/build outlived the tests: pid=$by_suite cmdline='$T/build/sleep 300'"
[ "$out" = "$expected" ] || fail "leftovers.sh said '$out', not '$expected'"
wait "$by_suite"
status=$?
[ "$status" = 143 ] || fail "the suite's process ended with status $status, not 143 (SIGTERM)"
kill -0 "$by_hand" 2>/dev/null || fail "leftovers.sh killed the process started by hand"
echo "ok: the suite's process named and killed, the one started by hand left running"

out=$(bash "$here/leftovers.sh" before "$T/build")
[ "$out" = "ok: no process of $T/build is running" ] || fail "before: '$out'"
kill -0 "$by_hand" 2>/dev/null || fail "leftovers.sh before killed the process started by hand"
echo "ok: before leaves the process started by hand alone too"
