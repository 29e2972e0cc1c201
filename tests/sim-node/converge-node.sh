#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The command test-converge.sh runs on the simulated node (sim-node -- bash converge-node.sh ...):
#
#   converge-node.sh DIR KDPD-COMMAND... -- KDPD-ARGS...
#
# starts kdpd #1 (KDPD-COMMAND KDPD-ARGS --kubelet-dir DIR/k1 --state-dir DIR/s1) at once, so
# that it sees the node before the event script does anything; when DIR/go2 appears (the script
# has run), starts kdpd #2 on the same node, now in its final state (--kubelet-dir DIR/k2
# --state-dir DIR/s2); when DIR/stop appears, stops both with SIGTERM and writes their exit codes
# to DIR/rc ("RC1 RC2"). Their stdout and stderr go to DIR/kdpd1.{out,err} and DIR/kdpd2.{out,err}.
#
# The kernel log: sim-node's /dev/kmsg is a FIFO that gave kdpd #1 each record, so kdpd #2 gets
# the log a fresh reader of the kernel's would get, every record the script wrote
# ($UMOCKDEV_DIR/kmsg.log), through a FIFO of its own: with CONVERGE_KMSG_PARAM set (the
# backend's parameter naming its kernel log, e.g. gpu.kmsg), it is given "-o PARAM=DIR/kmsg2".
#
# A signal (sim-node passes SIGTERM on) stops whichever kdpd runs; nothing is left behind. If
# sim-node itself dies (nothing would pass a signal on), the kdpds are stopped the same way.
set -u

dir=$1
shift
cmd=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
        cmd+=("$1")
        shift
done
shift
args=("$@")
p1= p2=
die_with_us=()                          # a kdpd dies with this shell, even a SIGKILLed one
setpriv --pdeathsig KILL true 2>/dev/null && die_with_us=(setpriv --pdeathsig KILL)
asan=$("$(dirname "${BASH_SOURCE[0]}")/asan-runtime" "${cmd[0]}")
case ":${LD_PRELOAD:-}:" in         # an ASan-built kdpd: its runtime first (see asan-runtime)
*":$asan:"*) ;;
*) [ -n "$asan" ] && export LD_PRELOAD=$asan${LD_PRELOAD:+:$LD_PRELOAD} ;;
esac

stop() {
        [ -n "$p1" ] && kill -TERM "$p1" 2>/dev/null
        [ -n "$p2" ] && kill -TERM "$p2" 2>/dev/null
}
# the signal is named on sim-node's stderr, which the harness shows when a case fails
ended_by() {
        echo "converge-node.sh: SIG$1; stopping the kdpds" >&2
        stop
        wait
        exit 143
}
trap 'ended_by TERM' TERM
trap 'ended_by INT' INT
trap 'ended_by HUP' HUP

# wait_file FILE: until FILE exists (the harness outside has the deadlines; it kills sim-node),
# or until sim-node, our parent, is gone (we have another parent then)
parent=$PPID
wait_file() {
        local ppid
        while [ ! -e "$1" ]; do
                read -r _ _ _ ppid _ < "/proc/$$/stat"
                if [ "$ppid" != "$parent" ]; then
                        stop
                        wait
                        exit 129
                fi
                sleep 0.05
        done
}

"${die_with_us[@]}" "${cmd[@]}" "${args[@]}" --kubelet-dir "$dir/k1" --state-dir "$dir/s1" > "$dir/kdpd1.out" 2> "$dir/kdpd1.err" &
p1=$!
echo "$p1" >> "$dir/pids"               # the harness waits for them too if this shell is killed
wait_file "$dir/go2"

args2=("${args[@]}")
if [ -n "${CONVERGE_KMSG_PARAM:-}" ]; then
        mkfifo "$dir/kmsg2"
        exec 7<> "$dir/kmsg2"           # open until the end: a FIFO nobody holds drops its data
        [ -f "$UMOCKDEV_DIR/kmsg.log" ] && cat "$UMOCKDEV_DIR/kmsg.log" >&7
        args2+=(-o "$CONVERGE_KMSG_PARAM=$dir/kmsg2")
fi
"${die_with_us[@]}" "${cmd[@]}" "${args2[@]}" --kubelet-dir "$dir/k2" --state-dir "$dir/s2" > "$dir/kdpd2.out" 2> "$dir/kdpd2.err" 7>&- &
p2=$!
echo "$p2" >> "$dir/pids"
wait_file "$dir/stop"

stop
wait "$p1"
rc1=$?
wait "$p2"
rc2=$?
p1= p2=
echo "$rc1 $rc2" > "$dir/rc"
