# SPDX-License-Identifier: GPL-2.0-or-later
# Requests of 4 MB whose every element is tiny (`kdpctl raw @FILE`): 2M empty
# container requests to Allocate and to GetPreferredAllocation, 2M empty
# device IDs in one container of each, 2M unknown fields. protobuf-c would
# allocate for each element (the first took kdpd to 190 MB, the second to 255
# MB); kdpd walks the wire bytes first and refuses each with INVALID_ARGUMENT
# naming the field and the limit, stays below 40 MB, and answers a real
# Allocate exactly as before. The memory bound is checked outside valgrind and
# sanitizers (their own memory would dominate); the answers everywhere.
. "$(dirname "$0")/lib.sh"

MEMCHECK=1
[ "${KDP_VALGRIND:-0}" = 1 ] || [ "${KDP_SANITIZED:-0}" = 1 ] && MEMCHECK=0
BOUND_KB=$((40 * 1024))
N=2000000

# containers.bin, ids.bin, unknown.bin: see wire-bytes.py
/usr/bin/python3 "$KDP_SOURCE_DIR/tests/e2e/wire-bytes.py" requests "$T" "$N" || fail "writing the requests"
for f in containers ids unknown; do
        size=$(stat -c %s "$T/$f.bin")
        [ "$size" -gt 3900000 ] && [ "$size" -le 4194304 ] || fail "$f.bin is $size bytes"
done

start_kubelet kubelet
start_kdpd kdpd --backend example
wait_line "$T/kubelet.out" '^registered resource=example.com/widget '
S=$(plugin_socket widget)
BEFORE=$("$KDPCTL" allocate --socket "$S" widget-2) || fail "allocate before the attacks"
grep -qx 'env WIDGET_2=widget-2' <<<"$BEFORE" || fail "allocate answer: $BEFORE"

hwm_kb() {
        awk '$1 == "VmHWM:" { print $2 }' "/proc/$KDPD_PID/status"
}

# attack NAME METHOD FILE MESSAGE: refused with INVALID_ARGUMENT and exactly MESSAGE; kdpd's peak below the
# bound; the same Allocate answer after it
attack() {
        local out hwm
        out=$("$KDPCTL" raw --socket "$S" --timeout "$((30 * SLOW))" "$2" "@$3" 2>&1) && fail "$1: accepted"
        assert_eq "$out" "error: code=INVALID_ARGUMENT message=request refused before decoding: $4" "$1: answer"
        if [ "$MEMCHECK" = 1 ]; then
                hwm=$(hwm_kb)
                [ "$hwm" -lt "$BOUND_KB" ] || fail "$1: kdpd's VmHWM $hwm kB, not below $BOUND_KB kB"
        fi
        out=$("$KDPCTL" allocate --socket "$S" widget-2) || fail "$1: allocate after it"
        assert_eq "$out" "$BEFORE" "$1: allocate answer after it"
        pass "$1: refused before decoding, kdpd below $((BOUND_KB / 1024)) MB, still serving"
}

attack "Allocate of $N container requests" allocate "$T/containers.bin" \
        "more than 64 container requests in one AllocateRequest (field container_requests)"
attack "GetPreferredAllocation of $N container requests" preferred "$T/containers.bin" \
        "more than 64 container requests in one PreferredAllocationRequest (field container_requests)"
attack "Allocate of one container with $((N - 3)) device IDs" allocate "$T/ids.bin" \
        "more than 65536 device IDs in one AllocateRequest (field devices_ids)"
attack "GetPreferredAllocation of one container with $((N - 3)) available IDs" preferred "$T/ids.bin" \
        "more than 65536 available device IDs in one PreferredAllocationRequest (field available_deviceIDs)"
attack "Allocate of $N unknown fields" allocate "$T/unknown.bin" \
        "more than 64 unknown fields in one AllocateRequest (field number 15 of AllocateRequest)"

# each refusal one warning; the kubelet's connection never touched
assert_eq "$(grep -c '"Refused call" .*reason="request refused before decoding: ' "$T/kdpd.err")" 5 "refusals logged"
assert_eq "$(count_lines "$T/kubelet.out" '^registered ')" 1 "registrations"
stop_kdpd
