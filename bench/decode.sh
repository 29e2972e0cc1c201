#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench/decode.sh [BUILD_DIR]: kdpd's peak RSS for one request of 4 MB whose
# every element is tiny (the attacks of e2e/decode-bounds), sent with
# `kdpctl raw @FILE`. Not part of ctest: numbers depend on the machine.
#
# For each attack a fresh kdpd (example backend, 8 devices) with the kubelet
# stand-in (tests/interop/kubelet-go), then one request:
#   <attack>_vmhwm_kb   kdpd's VmHWM once the request is answered
#   <attack>_answer     what kdpctl printed (the refusal)
# and idle_vmhwm_kb, the same kdpd without a request. KDPD=PATH benches
# another kdpd binary (e.g. one built before the wire walk) with this build's
# kdpctl. Attacks:
#   alloc2m_containers   Allocate of 2M empty container_requests
#   pref2m_containers    GetPreferredAllocation of 2M empty container_requests
#   alloc2m_ids          Allocate of one container with 2M empty device IDs
#   pref2m_ids           GetPreferredAllocation of one container with 2M empty available IDs
#   alloc2m_unknown      Allocate of 2M unknown fields
set -u

. "$(dirname "$0")/lib.sh"
need kdpd kdpctl tests/interop/kubelet-go
if [ -n "${KDPD:-}" ]; then
        mkdir -p "$work/alt"
        ln -s "$build/kdpctl" "$work/alt/kdpctl"
        ln -s "$build/tests" "$work/alt/tests"
        ln -s "$build/plugins" "$work/alt/plugins"      # kdpd finds the backends beside itself
        cp "$KDPD" "$work/alt/kdpd" || exit 2
        build=$work/alt
fi
n=2000000

/usr/bin/python3 "$src/tests/e2e/wire-bytes.py" requests "$work" "$n" || exit 2

# one NAME METHOD FILE: a fresh kdpd, one request (none for METHOD -), its peak RSS
one() {
        local name=$1 out
        session "$name" plain --backend example || return 0
        if [ "$2" != - ]; then
                out=$(run "$build/kdpctl" raw --socket "$endpoint" --timeout 60 "$2" "@$work/$3.bin" 2>&1)
                echo "${name}_answer=$out"
        fi
        echo "${name}_vmhwm_kb=$(proc_kb "$kdpd_pid" status VmHWM)"
        stop_session
}

report_start
one idle - -
one alloc2m_containers allocate containers
one pref2m_containers preferred containers
one alloc2m_ids allocate ids
one pref2m_ids preferred ids
one alloc2m_unknown allocate unknown
report_end
