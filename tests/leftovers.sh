#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# leftovers.sh before|after BUILD_DIR: the CTest fixture that checks that no process of this
# build tree outlives the tests (tests/CMakeLists.txt: every test requires it, so "before" runs
# first and "after" once all tests have ended).
#
# A process is of this build tree when its executable, or its argv[0], lies under BUILD_DIR/
# (kdpd, kdpctl, sim-node, sim-check, kubelet-go, a unit test), or when it is valgrind running
# a program under BUILD_DIR/ (a valgrind'ed kdpd). Other checkouts and other build trees of this
# checkout (build-asan/ is not build/) never match. Processes below another ctest that is
# running now belong to that run and are left alone, as are this script and its ancestors.
# Only a process started by the suite is touched: every test runs with KDP_TEST_RUN=BUILD_DIR
# (tests/CMakeLists.txt), which its processes inherit; a kdpd started by hand from BUILD_DIR
# has no such variable and is neither named nor killed.
#
#   before  kills what an earlier, interrupted run left behind and names it; passes, as that
#           is no fault of this run
#   after   names each survivor (pid and command line), kills it and fails
set -u

mode=${1:?before|after}
build=${2:?BUILD_DIR}
build=${build%/}
real=$(cd "$build" 2>/dev/null && pwd -P) || real=$build

declare -A parent comm
for f in /proc/[0-9]*/stat; do
        { read -r line <"$f"; } 2>/dev/null || continue
        pid=${line%% *}
        name=${line#*(}
        comm[$pid]=${name%)*}
        rest=${line##*) }
        rest=${rest#* }
        parent[$pid]=${rest%% *}
done

# this run: our ancestors, and the ctest among them
declare -A mine
our_ctest=
p=$$
while [ -n "$p" ] && [ "$p" != 0 ]; do
        mine[$p]=1
        [ -z "$our_ctest" ] && [ "${comm[$p]:-}" = ctest ] && our_ctest=$p
        p=${parent[$p]:-}
done

# under_other_ctest PID: an ancestor of PID is a ctest other than ours
under_other_ctest() {
        local p=${parent[$1]:-}
        while [ -n "$p" ] && [ "$p" != 0 ] && [ "$p" != 1 ]; do
                [ "${comm[$p]:-}" = ctest ] && [ "$p" != "$our_ctest" ] && return 0
                p=${parent[$p]:-}
        done
        return 1
}

under_build() {
        case $1 in
        "$build"/* | "$real"/*) return 0 ;;
        esac
        return 1
}

# started_by_suite PID: PID's environment holds KDP_TEST_RUN=BUILD_DIR
started_by_suite() {
        local -a env
        local var
        mapfile -d '' -t env 2>/dev/null <"/proc/$1/environ" || return 1
        for var in "${env[@]}"; do
                [ "$var" = "KDP_TEST_RUN=$build" ] && return 0
        done
        return 1
}

# in_tree PID: PID runs a program of this build tree (sets CMDLINE)
in_tree() {
        local exe arg valgrind=
        local -a argv

        exe=$(readlink "/proc/$1/exe" 2>/dev/null) || return 1
        mapfile -d '' -t argv <"/proc/$1/cmdline" 2>/dev/null || return 1
        [ ${#argv[@]} -gt 0 ] || return 1
        CMDLINE=${argv[*]}
        under_build "$exe" && return 0
        under_build "${argv[0]}" && return 0
        case $exe in
        */valgrind | */valgrind/*) valgrind=1 ;;
        esac
        [ -n "$valgrind" ] || return 1
        for arg in "${argv[@]}"; do
                under_build "$arg" && return 0
        done
        return 1
}

# of_tree PID: PID is a process of this build tree that the suite started (sets CMDLINE)
of_tree() { in_tree "$1" && started_by_suite "$1"; }

find_survivors() {
        local pid
        survivors=()
        for pid in "${!parent[@]}"; do
                [ -n "${mine[$pid]:-}" ] && continue
                [ -d "/proc/$pid" ] || continue
                of_tree "$pid" || continue
                under_other_ctest "$pid" && continue
                survivors+=("$pid")
                cmdlines[$pid]=$CMDLINE
        done
}

declare -A cmdlines
find_survivors
if [ "$mode" = after ] && [ ${#survivors[@]} -gt 0 ]; then
        # what is still on its way out (a parent just died) gets 3 s
        for _ in $(seq 30); do
                alive=()
                for pid in "${survivors[@]}"; do
                        [ -d "/proc/$pid" ] && of_tree "$pid" && alive+=("$pid")
                done
                survivors=("${alive[@]}")
                [ ${#survivors[@]} -eq 0 ] && break
                sleep 0.1
        done
fi

if [ ${#survivors[@]} -eq 0 ]; then
        echo "ok: no process of $build is running"
        exit 0
fi
for pid in "${survivors[@]}"; do
        if [ "$mode" = after ]; then
                echo "FAIL: a process of $build outlived the tests: pid=$pid cmdline='${cmdlines[$pid]}'"
        else
                echo "killed a process of $build left by an earlier run: pid=$pid cmdline='${cmdlines[$pid]}'"
        fi
done
kill -TERM "${survivors[@]}" 2>/dev/null
for _ in $(seq 20); do
        alive=
        for pid in "${survivors[@]}"; do
                [ -d "/proc/$pid" ] && alive=1
        done
        [ -z "$alive" ] && break
        sleep 0.1
done
kill -KILL "${survivors[@]}" 2>/dev/null
[ "$mode" = after ] && exit 1
exit 0
