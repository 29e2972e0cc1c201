# SPDX-License-Identifier: GPL-2.0-or-later
# At start kdpd removes sockets a crashed kdpd left behind, but never a
# socket another live process serves, nor anything that is not ours.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
[ -x "$PY" ] || { echo "skip: $PY missing"; exit 77; }

start_kubelet kubelet
stale="$DIR/kdp-example-example.com_widget.1.1.sock"
live="$DIR/kdp-example-example.com_widget.2.1.sock"
foreign="$DIR/other-plugin.sock"
"$PY" -c '
import socket, sys
for p in sys.argv[1:]:
    socket.socket(socket.AF_UNIX).bind(p)   # bound, never served: stale' "$stale" "$foreign"
"${DIE_WITH_US[@]}" "$PY" -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8); time.sleep(600)' "$live" &
PIDS+=($!)
touch "$DIR/kdp-example-notes.txt"
wait_socket "$live"

start_kdpd kdpd --backend example
wait_line "$T/kubelet.out" '^devices resource=example.com/widget '
[ -e "$stale" ] && fail "stale socket of ours kept"
[ -S "$live" ] || fail "a live socket was removed"
[ -S "$foreign" ] || fail "someone else's socket removed"
[ -f "$DIR/kdp-example-notes.txt" ] || fail "a regular file was removed"
grep -q "\"Removed stale socket\" path=\"$stale\"" "$T/kdpd.err" || fail "removal not logged"
pass "stale own socket removed; live, foreign sockets and plain files kept"
stop_kdpd

# ---- a listener that never accepts, its backlog full: served, kept, and nothing waits on it ----
# plant_full_backlog PATH: a socket listening with a backlog of 0 and two connections to it, never accepted
plant_full_backlog() {
        "${DIE_WITH_US[@]}" "$PY" -c '
import errno, socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(0)
held = [socket.socket(socket.AF_UNIX) for _ in range(2)]
held[0].connect(sys.argv[1])
held[1].setblocking(False)
assert held[1].connect_ex(sys.argv[1]) == errno.EAGAIN      # full: a blocking connect would wait here
print("full", flush=True)
time.sleep(600)' "$1" >"$T/plant-$(basename "$1").out" &
        PIDS+=($!)
        wait_line "$T/plant-$(basename "$1").out" '^full$'
}
busy="$DIR/kdp-example-example.com_widget.3.1.sock"
plant_full_backlog "$busy"
reg_busy=
if watcher_mode; then
        reg_busy="$REG/kdp-example-example.com_widget.3.1.sock"
        plant_full_backlog "$reg_busy"
fi
start_kdpd kdpd-busy --backend example --metrics-address 127.0.0.1:0
wait_line "$T/kdpd-busy.err" '"Serving metrics"'
ADDR=$(sed -n 's/.*"Serving metrics" address="\([^"]*\)".*/\1/p' "$T/kdpd-busy.err")
wait_count "$T/kubelet.out" '^registered resource=example.com/widget ' 2
assert_eq "$(count_lines "$T/kdpd-busy.err" "\"Kept a socket that is served\" path=\"$busy\" listener=\"backlog full\"$")" 1 \
        "what kdpd decided of the full listener"
assert_eq "$(count_lines "$T/kdpd-busy.err" "\"Kept a socket that is served\" path=\"$live\" listener=\"accepts\"$")" 1 \
        "what kdpd decided of the live listener"
if [ -n "$reg_busy" ]; then
        assert_eq "$(count_lines "$T/kdpd-busy.err" \
                "\"Kept a socket that is served\" path=\"$reg_busy\" listener=\"backlog full\"$")" 1 \
                "what kdpd decided of the full listener in the plugin watcher's directory"
fi
"$KDPCTL" allocate --socket "$(plugin_socket widget)" widget-0 >"$T/busy-allocate.out" 2>&1 ||
        fail "Allocate beside a full listener: $(cat "$T/busy-allocate.out")"
assert_eq "$(python3 "$KDP_SOURCE_DIR/tests/e2e/metrics-http.py" "$ADDR" get /healthz | tr '\n' '|')" "200|ok|" \
        "/healthz beside a full listener"
pass "a listener whose backlog is full is kept, logged, and kdpd serves: Allocate, /healthz 200"
stop_kdpd

# the metrics socket's path held by such a listener: refused at once, nothing registered
plant_full_backlog "$T/metrics.sock"
start_kdpd kdpd-metrics-busy --backend example --metrics-address "$T/metrics.sock"
wait "$KDPD_PID"
assert_eq "$?" 1 "exit code of a kdpd whose metrics socket has a full listener"
assert_eq "$(count_lines "$T/kdpd-metrics-busy.err" \
        "\"Failed to listen on the metrics address\" address=\"$T/metrics.sock\" err=\"Address already in use\"$")" 1 \
        "the refusal logged"
assert_eq "$(count_lines "$T/kdpd-metrics-busy.err" '"Serving resource"')" 0 "resources served by the refused kdpd"
check_valgrind
pass "a metrics socket path with a full listener refused at once"
