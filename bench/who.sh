#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench/who.sh [BUILD_DIR]: `kdpctl who`'s peak RSS on large PodResources List
# answers, served by `kdpctl kubelet --pod-list` (tests/e2e/wire-bytes.py
# writes them). Not part of ctest: numbers depend on the machine.
#   <answer>_bytes      the answer's size
#   <answer>_rows       lines who printed (header included)
#   <answer>_maxrss_kb  who's peak RSS (getrusage of the child)
#   <answer>_exit       who's exit code
# KDPCTL_WHO=PATH runs another kdpctl as the client (e.g. one built before the
# bounds), this build's as the stand-in kubelet. Answers:
#   large      2048 pods x 4 containers x 8 devices, IDs padded to ~28 characters (4.15 MB)
#   small      the same with IDs of ~12 characters (2.84 MB)
#   smallest   at the bounds (65536 device entries) with the smallest elements (1.45 MB)
set -u

. "$(dirname "$0")/lib.sh"
need kdpctl
client=${KDPCTL_WHO:-$build/kdpctl}
gen=$src/tests/e2e/wire-bytes.py
kubelet_pid=

# one NAME KIND ARGS...: wire-bytes.py KIND FILE ARGS... as the answer
one() {
        local name=$1 kind=$2 d=$work/$1 rc
        shift 2
        mkdir -p "$d/dp"
        /usr/bin/python3 "$gen" "$kind" "$d/list" "$@" >/dev/null || exit 2
        "$build/kdpctl" kubelet --dir "$d/dp" --pod-resources "$d/pr.sock" --pod-list "$d/list" \
                >"$d/kubelet.out" 2>"$d/kubelet.err" &
        kubelet_pid=$!
        for _ in $(seq 500); do
                grep -q '"Serving kubelet socket"' "$d/kubelet.err" 2>/dev/null && break
                sleep 0.01
        done
        /usr/bin/python3 "$src/tests/e2e/peak-rss.py" "$d/who" "$client" who --pod-resources "$d/pr.sock" --timeout 120
        rc=$?
        echo "${name}_bytes=$(stat -c %s "$d/list")"
        echo "${name}_rows=$(wc -l <"$d/who.stdout")"
        echo "${name}_maxrss_kb=$(cat "$d/who.rss")"
        echo "${name}_exit=$rc"
        stop "$kubelet_pid"
        kubelet_pid=
}

report_start
one large pod-list 2048 4 8 20
one small pod-list 2048 4 8 0
one smallest pod-list-smallest
report_end
