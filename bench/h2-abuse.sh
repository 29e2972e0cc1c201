#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench/h2-abuse.sh [BUILD_DIR]: what one hostile local HTTP/2 peer
# (tests/e2e/h2-abuse.py, which never acks SETTINGS) costs kdpd, and what it
# does to a legitimate Allocate meanwhile. Not part of ctest: a few minutes,
# numbers depend on the machine.
#
# For each attack, a fresh kdpd (example backend, 8 devices) with the
# kubelet stand-in (tests/interop/kubelet-go); the attack starts, and at
# once kdp-bench runs KDP_BENCH_CALLS (2000) Allocates, one at a time, over
# its own connection, as the kubelet calls:
#   <attack>_vmhwm_kb     kdpd's peak RSS over the attack (VmHWM)
#   <attack>_rss_held_kb  its VmRSS while the attacker still holds its
#                         connection, 2 s after its last frame
#   <attack>_allocate_p50_us, _p99_us, _max_us, _errors   the Allocates
#   <attack>_peer         what the attacker got back (h2-abuse.py result line)
# Attacks (sizes by KDP_BENCH_H2_SCALE, 1 = as below):
#   idle            no attack (the baseline)
#   rst10k, rst100k HEADERS + RST_STREAM pairs on one connection
#   open30k         Allocate HEADERS never followed by their message
#   unread30k       complete Allocates whose answers are never read
#   ping4x          PINGs on 4 connections, acks never read (1M each asked;
#                   the peer stops when kdpd stops reading it)
set -u

. "$(dirname "$0")/lib.sh"
calls=${KDP_BENCH_CALLS:-2000}
scale=${KDP_BENCH_H2_SCALE:-1}
abuse=$src/tests/e2e/h2-abuse.py
need kdpd bench/kdp-bench tests/interop/kubelet-go
/usr/bin/python3 -c 'import h2' 2>/dev/null || { echo "$me: python3-h2 missing" >&2; exit 2; }

attack_pid=

cleanup_attack() {
        [ -n "$attack_pid" ] && { kill "$attack_pid" 2>/dev/null; wait "$attack_pid" 2>/dev/null; }
        attack_pid=
}
trap 'cleanup_attack; cleanup' EXIT

# one NAME MODE N CONNS: an attack and the Allocates beside it
one() {
        local name=$1 mode=$2 n=$3 conns=$4 d b
        session "$name" plain --backend example || return 0
        d=$work/$name
        b=$d/bench
        if [ "$mode" != none ]; then
                # a flood kdpd takes at its own pace: the attacker waits for it as long as it takes
                stall=3
                [ "$mode" = rst-flood ] && stall=600
                /usr/bin/python3 "$abuse" "$endpoint" "$mode" "$n" --conns "$conns" --hold "$d/release" \
                        --stall "$stall" > "$d/abuse.out" 2> "$d/abuse.err" &
                attack_pid=$!
        fi
        run "$bench" --socket "$endpoint" --calls "$calls" --warmup 0 --law-samples 0 > "$b" 2> "$b.err"
        if [ "$mode" != none ]; then
                for _ in $(seq 1200); do
                        grep -q '^held' "$d/abuse.out" && break
                        sleep 0.1
                done
                run sleep 2
                echo "${name}_rss_held_kb=$(proc_kb "$kdpd_pid" status VmRSS)"
        fi
        echo "${name}_vmhwm_kb=$(proc_kb "$kdpd_pid" status VmHWM)"
        for f in p50_us p99_us max_us errors; do
                echo "${name}_allocate_$f=$(bench_field "$b" "allocate_$f")"
        done
        if [ "$mode" != none ]; then
                touch "$d/release"
                wait "$attack_pid"
                attack_pid=
                grep '^result' "$d/abuse.out" | head -n 1 | sed "s/^result /${name}_peer=/"
        fi
        stop_session
}

report_start
one idle none 0 1
one rst10k rst-flood $((10000 * scale)) 1
one rst100k rst-flood $((100000 * scale)) 1
one open30k open-streams $((30000 * scale)) 1
one unread30k unread-answers $((30000 * scale)) 1
one ping4x ping-flood $((1000000 * scale)) 4
report_end
