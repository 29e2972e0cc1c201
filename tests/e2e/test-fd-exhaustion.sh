# SPDX-License-Identifier: GPL-2.0-or-later
# kdpd raises its open file limit (soft to hard) at start and logs both. When
# connections exhaust its fds anyway, kdpd's accept4() on the plugin socket
# fails with EMFILE: kdpd logs it at error level, leaves the socket alone for
# 100 ms (it would be reported readable forever) and tries again. Once the
# connections are gone it accepts on the same socket: no new socket, no new
# registration, and an Allocate succeeds there. (gRPC core's own listener
# stopped accepting for good after one EMFILE; kdpd accepts itself.)
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
[ -x "$PY" ] || { echo "skip: $PY missing"; exit 77; }

start_kubelet kubelet
start_kdpd kdpd --backend example --v 2
wait_line "$T/kubelet.out" '^registered resource=example.com/widget '
S=$(plugin_socket widget)

# the limit a little above what kdpd holds now: its next accepts run out
n=$(ls "/proc/$KDPD_PID/fd" | wc -l)
limit=$((n + 6))
prlimit --pid "$KDPD_PID" --nofile="$limit:$limit" || fail "prlimit"

# connections held open until $T/release exists: more than kdpd can accept
"${DIE_WITH_US[@]}" "$PY" -c '
import os, socket, sys, time
conns = []
for i in range(40):
    c = socket.socket(socket.AF_UNIX); c.connect(sys.argv[1]); conns.append(c)
print("held", len(conns), flush=True)
while not os.path.exists(sys.argv[2]):
    time.sleep(0.05)' "$S" "$T/release" >"$T/hold.out" 2>"$T/hold.err" &
HOLD=$!
PIDS+=("$HOLD")
wait_line "$T/hold.out" '^held 40$'
wait_line "$T/kdpd.err" '^E.*"Failed to accept a connection" resource="example.com/widget" retryMs=100 suppressed=[0-9]+ err="Too many open files"$'
touch "$T/release"
wait "$HOLD"

out=$("$KDPCTL" allocate --socket "$S" widget-2) || fail "allocate once the connections are gone"
grep -qx 'env WIDGET_2=widget-2' <<<"$out" || fail "allocate answer: $out"
assert_eq "$(plugin_socket widget)" "$S" "the plugin socket after EMFILE"
assert_eq "$(count_lines "$T/kubelet.out" '^registered ')" 1 "registrations"
assert_eq "$(count_lines "$T/kdpd.err" 'Plugin socket stopped accepting')" 0 "listener replacements"
devices_match example.com/widget 'capacity=8 allocatable=8 '
pass "EMFILE on accept logged, the same socket accepts again once fds are free"
stop_kdpd

# the soft limit goes up to the hard one at start, both logged
prlimit --nofile=256:4096 "$KDPD" --kubelet-dir "$DIR" --cdi-dir "$T/cdi" --state-dir "$T/state" \
        --backend example >/dev/null 2>"$T/kdpd-limit.err" &
KDPD_PID=$!
PIDS+=("$KDPD_PID")
wait_line "$T/kdpd-limit.err" '"Open file limit" soft=256 raisedTo=4096 hard=4096'
assert_eq "$(awk '/^Max open files/ { print $4 " " $5 }' "/proc/$KDPD_PID/limits")" "4096 4096" "open file limit of kdpd"
pass "open file limit raised from 256 to the hard 4096 at start"
stop_kdpd
