# SPDX-License-Identifier: GPL-2.0-or-later
# A kubelet that hangs: its kubelet.sock accepts connections but never
# answers (a kubelet stuck or dying). kdpd's Register waits; when a new kubelet
# replaces the socket, kdpd must register with it at once instead of queueing
# behind the connection that will never complete.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
[ -x "$PY" ] || { echo "skip: $PY missing"; exit 77; }

"$PY" -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(64); time.sleep(60)' "$DIR/kubelet.sock" &
PIDS+=($!)
while [ ! -S "$DIR/kubelet.sock" ]; do sleep 0.01; done

start_kdpd kdpd --backend example --v 2
sleep 1                                        # its Register now waits on the hung kubelet
t0=$(now_ms)
start_kubelet kubelet                          # cleans the directory, serves a new kubelet.sock
wait_line "$T/kubelet.out" '^devices resource=example.com/widget capacity=8 allocatable=8 ' 10
dt=$(($(now_ms) - t0))
within_ms "$dt" 1000 "registration with the kubelet that replaced a hung one"
pass "registered ${dt} ms after a hung kubelet was replaced"
stop_kdpd
