# SPDX-License-Identifier: GPL-2.0-or-later
# The next socket names kdpd would serve on are taken: a broken symlink, a
# symlink to a live socket of another process, a directory. kdpd leaves them
# alone, logs the real reason (not "Address already in use"), and retries on
# the name after each with back-off until one is free; then it registers.
# The kubelet asks for it by dropping the stream (SIGUSR1 of the stand-in),
# which keeps kubelet.sock and deletes nothing in the directory. Through the
# plugin watcher (e2e-watcher/socket-obstacles) the names are in
# plugins_registry, which the stand-in watches: it finds the new socket
# itself (the obstacles are no sockets of kdpd's: none of them registers).
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
[ -x "$PY" ] || { echo "skip: $PY missing"; exit 77; }

start_kubelet kubelet
start_kdpd kdpd --backend example --v 2
wait_line "$T/kubelet.out" "^registered resource=example.com/widget endpoint=$(printed_endpoint "kdp-example-example.com_widget.$KDPD_PID.1.sock") "
# the stream is open (SIGUSR1 drops only an open one)
wait_line "$T/kubelet.out" '^devices resource=example.com/widget capacity=8 allocatable=8 '
name() { echo "$(sock_dir)/kdp-example-example.com_widget.$KDPD_PID.$1.sock"; }

foreign="$T/foreign.sock"
"${DIE_WITH_US[@]}" "$PY" -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8); time.sleep(600)' "$foreign" &
PIDS+=($!)
wait_socket "$foreign"
ln -s "$T/nowhere" "$(name 2)"
ln -s "$foreign" "$(name 3)"
mkdir "$(name 4)"

kill -USR1 "$KUBELET_PID"
wait_line "$T/kubelet.out" "^registered resource=example.com/widget endpoint=$(printed_endpoint "kdp-example-example.com_widget.$KDPD_PID.5.sock") "
devices_match example.com/widget 'capacity=8 allocatable=8 '
assert_eq "$(count_lines "$T/kubelet.out" '^registered resource=example.com/widget ')" 2 "registrations"
grep -q "\"Failed to serve resource; retrying on the next socket name\" resource=\"example.com/widget\" socket=\"$(name 2)\" attempts=1 err=\"File exists\"" \
        "$T/kdpd.err" || fail "the first failure is not a warning naming the broken symlink and EEXIST"
for n in 3 4; do
        grep -q "\"Failed to serve resource\" resource=\"example.com/widget\" socket=\"$(name $n)\" err=\"File exists\" attempts=$((n - 1))" \
                "$T/kdpd.err" || fail "no retry logged for $(name $n)"
done
grep -q "\"Serving resource again\" resource=\"example.com/widget\" socket=\"$(name 5)\" attempts=4" "$T/kdpd.err" ||
        fail "recovery not logged"
assert_eq "$(count_lines "$T/kdpd.err" 'Address already in use')" 0 "lines blaming a used address"
[ -L "$(name 2)" ] && [ -L "$(name 3)" ] && [ -d "$(name 4)" ] || fail "an obstacle was removed"
[ -S "$foreign" ] || fail "the foreign socket was removed"
out=$("$KDPCTL" allocate --socket "$(name 5)" widget-3) || fail "allocate on the new socket"
grep -q 'widget-3' <<<"$out" || fail "allocate answer: $out"
pass "broken symlink, symlink to a live socket and directory skipped with their real error; served on the next free name"
stop_kdpd
