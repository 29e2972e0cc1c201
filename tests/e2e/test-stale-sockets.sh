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
