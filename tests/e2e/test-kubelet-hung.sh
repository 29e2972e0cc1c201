# SPDX-License-Identifier: GPL-2.0-or-later
# A kubelet that hangs: its kubelet.sock accepts a connection but never
# answers (a kubelet stuck or dying). kdpd's Register waits; when a new kubelet
# replaces the socket, kdpd must register with it at once instead of queueing
# behind the call that will never complete: exactly once, on the fresh socket
# it serves after the new kubelet's cleanup deleted its first one.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
[ -x "$PY" ] || { echo "skip: $PY missing"; exit 77; }

"${DIE_WITH_US[@]}" "$PY" -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(64)
c, _ = s.accept(); print("accepted", flush=True); time.sleep(120)' "$DIR/kubelet.sock" >"$T/hung.out" &
PIDS+=($!)
wait_socket "$DIR/kubelet.sock"

start_kdpd kdpd --backend example --v 2
wait_line "$T/hung.out" '^accepted$' 30        # kdpd's Register now waits on the hung kubelet
start_kubelet kubelet                          # cleans the directory, serves a new kubelet.sock
wait_line "$T/kubelet.out" '^devices resource=example.com/widget capacity=8 allocatable=8 ' 30
wait_line "$T/kdpd.err" '"Registered with kubelet"' 30
stop_kdpd                                      # what both saw is final now
assert_eq "$(count_lines "$T/kubelet.out" '^registered resource=example.com/widget ')" 1 "registrations"
assert_eq "$(sed -n 's/^registered .* endpoint=\([^ ]*\) .*/\1/p' "$T/kubelet.out")" \
        "kdp-example-example.com_widget.$KDPD_PID.2.sock" "endpoint registered with the new kubelet"
assert_eq "$(count_lines "$T/kdpd.err" '"Registered with kubelet"')" 1 "registrations logged by kdpd"
pass "registered once with the kubelet that replaced a hung one"
