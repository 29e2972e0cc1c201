# SPDX-License-Identifier: GPL-2.0-or-later
# Garbage on the socket, half-open connections, oversized messages, 200
# concurrent Allocates and cancelled streams: kdpd keeps serving exactly.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
[ -x "$PY" ] || { echo "skip: $PY missing"; exit 77; }

start_kubelet kubelet
start_kdpd kdpd --backend example
wait_line "$T/kubelet.out" '^devices resource=example.com/widget capacity=8 '
S=$(plugin_socket widget)

# garbage bytes, a half-open connection held open, an HTTP/2 preface followed by junk
"${DIE_WITH_US[@]}" "$PY" - "$S" <<'PY' &
import os, socket, sys, time
path = sys.argv[1]
held = []
for i in range(20):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.sendall(os.urandom(4096))
    s.close()
for i in range(10):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    held.append(s)                      # never sends a byte
s = socket.socket(socket.AF_UNIX)
s.connect(path)
s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + os.urandom(2048))
held.append(s)
time.sleep(3)
PY
GARBAGE=$!
PIDS+=($GARBAGE)
sleep 0.5
assert_eq "$("$KDPCTL" list --socket "$S" | tail -n 1)" "total=8 healthy=8 unhealthy=0" "list during garbage"
assert_eq "$("$KDPCTL" allocate --socket "$S" widget-3 | grep EXAMPLE)" "env EXAMPLE_WIDGETS=widget-3" \
        "allocate while half-open connections are held"
wait "$GARBAGE"
pass "garbage bytes and half-open connections do not disturb serving"

ids=$(printf 'widget-1 %.0s' $(seq 1 2000))
"$KDPCTL" allocate --socket "$S" $ids >"$T/many.out" 2>&1 || true
assert_eq "$(grep -c '^device ' "$T/many.out")" 1 "2000 copies of one ID give one device node"
pass "duplicate IDs in one request are merged"

# 200 concurrent Allocates from 20 clients
for c in $(seq 1 20); do
        (for i in $(seq 1 10); do
                "$KDPCTL" allocate --socket "$S" "widget-$((i % 8))" | grep -c '^device ' || echo fail
        done >"$T/conc.$c") &
done
wait_for=$(deadline_ms 60)
while [ "$(cat "$T"/conc.* 2>/dev/null | wc -l)" -lt 200 ] && [ "$(now_ms)" -lt "$wait_for" ]; do
        sleep 0.1
done
assert_eq "$(cat "$T"/conc.* | grep -cx 1)" 200 "successful concurrent Allocates"
pass "200 concurrent Allocates all answered"

# a client that cancels its stream; a new stream gets the full list
for i in $(seq 1 10); do
        "$KDPCTL" list --socket "$S" --count 1 >/dev/null || fail "list $i"
done
assert_eq "$("$KDPCTL" list --socket "$S" | tail -n 1)" "total=8 healthy=8 unhealthy=0" "list after cancels"
pass "cancelled streams leave the server serving full lists"

# the kubelet's own stream is still the one it opened at registration
assert_eq "$(count_lines "$T/kubelet.out" '^stream-ended ')" 0 "kubelet stream ends"
assert_eq "$(count_lines "$T/kubelet.out" '^registered ')" 1 "registrations"
pass "the kubelet stream survived all of it"
stop_kdpd
