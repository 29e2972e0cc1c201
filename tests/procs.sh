# SPDX-License-Identifier: GPL-2.0-or-later
# What every test script that starts processes shares (tests/e2e/lib.sh, tests/sim-node/lib.sh
# and tests/interop/test-interop.sh source it):
#
#   now_ms             a monotonic clock in ms (only differences between two reads mean anything)
#   SLOW               how many times the deadlines are stretched: 3 in a sanitized build
#                      (KDP_SANITIZED=1, which CMake sets), times 4 under valgrind (KDP_VALGRIND=1)
#   deadline_ms S      now_ms + S seconds, stretched by SLOW
#   wait_s [S]         S, but at least 30: what a wait for an event gets before it fails
#   DIE_WITH_US        a command prefix: what it starts gets SIGKILL when this shell dies, even when
#                      the shell itself is SIGKILLed (a ctest timeout); empty without setpriv
#   drop_pid ARRAY PID removes PID from the array named ARRAY: once PID is reaped, a cleanup must
#                      not signal it (a later process may have its number)
#   kill_tree PID...   SIGTERM to each PID, SIGTERM then SIGKILL to everything still below it and
#                      to the PIDs themselves after a grace; reaps what is this shell's child. A PID
#                      that is not below this shell (any more) is left alone: once reaped, its
#                      number may be reused by another test's process
#   on_exit FN         runs FN once when the shell ends: exit, or SIGINT/SIGTERM/SIGHUP
#   netns_usable       true when this shell may make network namespaces (root, unshare(1), ip(8));
#                      else false, with the reason in NETNS_WHY
#   in_private_netns SCRIPT [ARGS...]   runs SCRIPT again, in place of this shell (exec: the same
#                      PID, so whatever waits for it still does), in a network namespace of its
#                      own, and returns at once in that run; exits 77 (skip) saying why when
#                      netns_usable is false. Call it before anything else starts: the namespace
#                      holds `lo` and the links the test makes, none of the machine's, and goes
#                      with the test's last process
#   netns_link_add NAME   a link NAME, up, in this shell's namespace: a dummy link, or where the
#                      kernel has no dummy driver one end of a veth pair (its peer kdppeer<N> up,
#                      so NAME has its carrier); `ip link set NAME down` takes it down
#
# Waits in the tests are for events, with deadlines meant to be reached only when something is
# broken: a loaded machine, a sanitizer or valgrind makes a step slower, never wrong.

now_ms() {
        local up
        read -r up _ </proc/uptime
        echo $((10#${up/./} * 10))
}

SLOW=1
[ "${KDP_SANITIZED:-0}" = 1 ] && SLOW=3
[ "${KDP_VALGRIND:-0}" = 1 ] && SLOW=$((SLOW * 4))

deadline_ms() {
        echo $(($(now_ms) + $1 * 1000 * SLOW))
}

# wait_s [S]: the seconds a wait for an event may take before it fails: S, at least 30 (the
# default), as no event is expected to take that long; deadline_ms stretches it further
wait_s() {
        local s=${1:-30}
        [ "$s" -ge 30 ] || s=30
        echo "$s"
}

DIE_WITH_US=()
if setpriv --pdeathsig KILL true 2>/dev/null; then
        DIE_WITH_US=(setpriv --pdeathsig KILL)
fi

# proc_alive PID: PID exists and is no zombie
proc_alive() {
        local line
        { read -r line <"/proc/$1/stat"; } 2>/dev/null || return 1
        line=${line##*) }
        [ "${line%% *}" != Z ]
}

# proc_descendants PID...: every process below the PIDs, parents before their children
proc_descendants() {
        local -A kids=()
        local f line pid ppid queue=("$@") out=()

        for f in /proc/[0-9]*/stat; do
                { read -r line <"$f"; } 2>/dev/null || continue
                pid=${line%% *}
                ppid=${line##*) }
                ppid=${ppid#* }
                ppid=${ppid%% *}
                [ -n "$ppid" ] && kids[$ppid]+=" $pid"
        done
        while [ ${#queue[@]} -gt 0 ]; do
                pid=${queue[0]}
                queue=("${queue[@]:1}")
                [ -n "$pid" ] || continue       # a caller's PID variable that was never set
                for f in ${kids[$pid]:-}; do
                        out+=("$f")
                        queue+=("$f")
                done
        done
        echo "${out[@]}"
}

# any_alive PID...: true while one of the PIDs is alive
any_alive() {
        local p
        for p in "$@"; do
                proc_alive "$p" && return 0
        done
        return 1
}

# wait_gone S PID...: until none of the PIDs is alive, S seconds (stretched by SLOW) at most
wait_gone() {
        local end
        end=$(deadline_ms "$1")
        shift
        while any_alive "$@" && [ "$(now_ms)" -lt "$end" ]; do
                sleep 0.05
        done
}

# drop_pid ARRAY PID: see above
drop_pid() {
        local -n drop_pid_list=$1
        local p keep=()

        for p in "${drop_pid_list[@]}"; do
                [ "$p" = "$2" ] || keep+=("$p")
        done
        drop_pid_list=("${keep[@]}")
}

# kill_tree PID...: see above
kill_tree() {
        local p
        local -a below more mine ours=()

        # a PID no longer below this shell was reaped: its number may be another test's process now
        read -r -a mine <<<"$(proc_descendants $$)"
        for p in "$@"; do
                [[ " ${mine[*]} " == *" $p "* ]] && ours+=("$p")
        done
        set -- "${ours[@]}"
        [ $# -gt 0 ] || return 0
        read -r -a below <<<"$(proc_descendants "$@")"
        kill -TERM "$@" 2>/dev/null
        wait_gone 10 "$@"
        read -r -a more <<<"$(proc_descendants "$@")"
        below+=("${more[@]}")
        if [ ${#below[@]} -gt 0 ] && any_alive "${below[@]}"; then
                kill -TERM "${below[@]}" 2>/dev/null
                wait_gone 1 "${below[@]}"
        fi
        for p in "${below[@]}" "$@"; do
                proc_alive "$p" && kill -KILL "$p" 2>/dev/null
        done
        for p in "$@"; do
                wait "$p" 2>/dev/null
        done
        return 0
}

on_exit() {
        ON_EXIT_FN=$1
        trap 'on_exit_run' EXIT
        trap 'exit 129' HUP
        trap 'exit 130' INT
        trap 'exit 143' TERM
}

on_exit_run() {
        local rc=$? fn=${ON_EXIT_FN:-}

        ON_EXIT_FN=
        [ -n "$fn" ] && "$fn"
        return $rc
}

netns_usable() {
        NETNS_WHY=
        if [ "$(id -u)" != 0 ]; then
                NETNS_WHY="not root: a network namespace of its own needs root"
        elif ! command -v unshare >/dev/null || ! command -v ip >/dev/null; then
                NETNS_WHY="no unshare(1) or ip(8)"
        elif ! unshare --net true 2>/dev/null; then
                NETNS_WHY="unshare --net failed: no network namespaces here"
        fi
        [ -z "$NETNS_WHY" ]
}

in_private_netns() {
        [ "${KDP_PRIVATE_NETNS:-}" = "$$" ] && return 0
        netns_usable || { echo "skip: $NETNS_WHY"; exit 77; }
        KDP_PRIVATE_NETNS=$$ exec unshare --net -- bash "$@"
}

netns_link_add() {
        if ! ip link add "$1" type dummy 2>/dev/null; then
                NETNS_PEERS=$((${NETNS_PEERS:-0} + 1))
                ip link add "$1" type veth peer name "kdppeer$NETNS_PEERS" &&
                        ip link set "kdppeer$NETNS_PEERS" up || return 1
        fi
        ip link set "$1" up
}
