# SPDX-License-Identifier: GPL-2.0-or-later
# A local peer that speaks raw HTTP/2 (h2-abuse.py, which never acks SETTINGS)
# on a plugin socket while the stand-in kubelet is connected:
#  - open-streams: Allocate HEADERS never followed by their message. kdpd
#    counts each unary call from its headers and holds at most 256 per socket;
#    each new call past them cancels the oldest one that waits on its peer, so
#    the peer gets RST_STREAM for all but its newest 256 streams and kdpd's
#    memory goes back down while the peer still holds them.
#  - unread-answers: complete Allocates whose answers are never read: the
#    same limit cancels the oldest answered calls.
#  - ping-flood on 4 connections whose acks are never read: no GOAWAY for
#    pings (whose path held ~90 MB per connection), the core stops reading
#    once its acks back up, and each connection, with no call, is closed
#    after 10 s idle.
#  - rst-flood: HEADERS + RST_STREAM pairs on new streams. gRPC 1.51 parses
#    all it reads and queues each call (~14 KB) until kdpd takes it: 10k pairs
#    took kdpd to 140 MB, 100k to 1.3 GB. kdpd's gate passes a peer's new
#    streams only as fast as kdpd takes them as calls.
#  - 68 connections each holding a stream beside the kubelet's: past 64 on
#    the socket, each new
#    one closes the oldest connection without a ListAndWatch stream, logged
#    with the peer's pid and uid.
# After each, a real Allocate gets the same answer as before, and the
# kubelet's connection (its ListAndWatch stream) was never touched: one
# registration only. The memory bounds are checked outside valgrind and
# sanitizers (their own memory would dominate); the log lines and frame
# counts everywhere, and they fail on a kdpd without the limits too.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
"$PY" -c 'import h2' 2>/dev/null || { echo "skip: python3-h2 missing"; exit 77; }
ABUSE=("${DIE_WITH_US[@]}" "$PY" "$KDP_SOURCE_DIR/tests/e2e/h2-abuse.py")
MEMCHECK=1
[ "${KDP_VALGRIND:-0}" = 1 ] || [ "${KDP_SANITIZED:-0}" = 1 ] && MEMCHECK=0
LIMIT=256
BOUND_KB=$((64 * 1024))

# calls of an attack that log K + 1 eviction lines (at the 1st and every 1024th),
# the last one at the last eviction: so its end is seen
calls() {
        echo $((LIMIT + 1024 * $1 + 1))
}
last_evicted() {
        echo $((1024 * $1 + 1))
}
# open: a size the old code took above 300 MB; small under valgrind
if [ "$MEMCHECK" = 1 ]; then K_OPEN=29; else K_OPEN=2; fi

rss_kb() {
        awk -v f="$1:" '$1 == f { print $2 }' "/proc/$KDPD_PID/status"
}

# wait_rss_below KB: waits until kdpd's VmRSS is below KB (when MEMCHECK)
wait_rss_below() {
        local end
        [ "$MEMCHECK" = 1 ] || return 0
        end=$(deadline_ms "$(wait_s)")
        while [ "$(rss_kb VmRSS)" -ge "$1" ] && [ "$(now_ms)" -lt "$end" ]; do
                sleep 0.1
        done
        [ "$(rss_kb VmRSS)" -lt "$1" ] || fail "kdpd's VmRSS $(rss_kb VmRSS) kB not below $1 kB"
}

start_session() {
        start_kubelet kubelet
        start_kdpd kdpd --backend example --v 1
        wait_line "$T/kubelet.out" '^registered resource=example.com/widget '
        S=$(plugin_socket widget)
        BEFORE=$("$KDPCTL" allocate --socket "$S" widget-2) || fail "allocate before the attack"
        grep -qx 'env WIDGET_2=widget-2' <<<"$BEFORE" || fail "allocate answer: $BEFORE"
}

# end_session NAME: the same Allocate answer, one registration, a clean stop
end_session() {
        local out
        out=$("$KDPCTL" allocate --socket "$S" widget-2) || fail "$1: allocate after the attack"
        assert_eq "$out" "$BEFORE" "$1: allocate answer after the attack"
        assert_eq "$(count_lines "$T/kubelet.out" '^registered ')" 1 "$1: registrations"
        stop_kdpd
        stop_kubelet
        rm -f "$T/release"
}

# ---- open streams
N=$(calls $K_OPEN) LAST=$(last_evicted $K_OPEN)
start_session
"${ABUSE[@]}" "$S" open-streams "$N" --hold "$T/release" >"$T/open.out" 2>"$T/open.err" &
PIDS+=($!)
ATTACK=$!
wait_line "$T/open.out" '^held$'
wait_line "$T/kdpd.err" "\"Cancelled calls whose peer did not go on\" resource=\"example.com/widget\" limit=$LIMIT cancelled=$LAST\$" 60
wait_rss_below "$BOUND_KB"
# a real Allocate while the peer holds its streams: answered, and one more of its streams cancelled
out=$("$KDPCTL" allocate --socket "$S" widget-2) || fail "allocate during the attack"
assert_eq "$out" "$BEFORE" "allocate answer while $LIMIT streams are held open"
touch "$T/release"
wait "$ATTACK" || fail "h2-abuse open-streams"
assert_eq "$(grep '^result' "$T/open.out")" \
        "result conn=0 goaway=none last_stream=- rst=$((N - LIMIT + 1)) rst_codes=NO_ERROR closed=no" \
        "open-streams: what the peer got"
pass "open-streams $N: all but the newest $LIMIT cancelled, Allocate answered meanwhile"
end_session open-streams

# ---- answers never read
# Two bounds hold such a peer, whichever comes first: more than LIMIT calls
# answered and unread get the oldest cancelled (trailers and RST_STREAM, unread
# too), and once the answers fill the socket the core stops reading this peer.
# Which one depends on how fast kdpd answers beside the peer's sending: on a
# loaded machine each call is answered before the next arrives, the socket
# fills first, and no call is cancelled (the peer then could not send all).
N=2305
start_session
"${ABUSE[@]}" "$S" unread-answers "$N" --hold "$T/release" >"$T/unread.out" 2>"$T/unread.err" &
PIDS+=($!)
ATTACK=$!
wait_line "$T/unread.out" '^held$'
wait_rss_below "$BOUND_KB"
out=$("$KDPCTL" allocate --socket "$S" widget-2) || fail "allocate during the attack"
assert_eq "$out" "$BEFORE" "allocate answer while $N answers are not read"
touch "$T/release"
wait "$ATTACK" || fail "h2-abuse unread-answers"
sent=$(sed -n 's/^sent conn=0 frames=\([0-9]*\) of=.*/\1/p' "$T/unread.out")
if grep -q '"Cancelled calls whose peer did not go on"' "$T/kdpd.err"; then
        wait_line "$T/kdpd.err" "\"Cancelled calls whose peer did not go on\" resource=\"example.com/widget\" limit=$LIMIT cancelled=1\$"
        grep -Eq '^result conn=0 goaway=none last_stream=- rst=[1-9][0-9]* rst_codes=NO_ERROR closed=no$' "$T/unread.out" ||
                fail "unread-answers: $(cat "$T/unread.out")"
        bound="the oldest answered calls cancelled"
else
        [ "${sent:-0}" -lt "$N" ] || fail "unread-answers: all $N calls sent, none cancelled: $(cat "$T/unread.out")"
        grep -Eq '^result conn=0 goaway=none last_stream=- rst=0 rst_codes=- closed=no$' "$T/unread.out" ||
                fail "unread-answers: $(cat "$T/unread.out")"
        bound="kdpd stopped reading the peer after $sent of $N calls"
fi
pass "unread-answers $N: $bound, memory bounded, Allocate answered meanwhile"
end_session unread-answers

# ---- ping flood on 4 connections, acks never read
start_session
"${ABUSE[@]}" "$S" ping-flood 100000 --conns 4 --wait-close "$((60 * SLOW))" \
        >"$T/ping.out" 2>"$T/ping.err" &
PIDS+=($!)
ATTACK=$!
wait "$ATTACK" || fail "h2-abuse ping-flood"
for i in 0 1 2 3; do
        assert_eq "$(grep "^result conn=$i " "$T/ping.out")" \
                "result conn=$i goaway=INTERNAL_ERROR last_stream=0 rst=0 rst_codes=- closed=yes" \
                "ping-flood: connection $i"
done
if [ "$MEMCHECK" = 1 ]; then
        hwm=$(rss_kb VmHWM)
        [ "$hwm" -lt "$BOUND_KB" ] || fail "ping-flood: kdpd's VmHWM $hwm kB, not below $BOUND_KB kB"
fi
pass "ping-flood on 4 connections: no GOAWAY for pings, each closed once idle"
end_session ping-flood

# ---- HEADERS + RST_STREAM bursts
if [ "$MEMCHECK" = 1 ]; then N=100000; else N=3000; fi
start_session
# kdpd takes the pairs at its pace: the peer waits for it as long as it takes
"${ABUSE[@]}" "$S" rst-flood "$N" --stall "$((60 * SLOW))" >"$T/rst.out" 2>"$T/rst.err" &
PIDS+=($!)
ATTACK=$!
out=$("$KDPCTL" allocate --socket "$S" widget-2) || fail "allocate during the rst flood"
assert_eq "$out" "$BEFORE" "allocate answer during the rst flood"
wait "$ATTACK" || fail "h2-abuse rst-flood"
assert_eq "$(grep '^sent' "$T/rst.out")" "sent conn=0 frames=$N of=$N" "rst-flood: frames kdpd took"
grep -Eq '^result conn=0 goaway=none last_stream=- rst=[0-9]+ rst_codes=[A-Z_,-]+ closed=no$' "$T/rst.out" ||
        fail "rst-flood: $(cat "$T/rst.out")"
if [ "$MEMCHECK" = 1 ]; then
        hwm=$(rss_kb VmHWM)
        [ "$hwm" -lt "$BOUND_KB" ] || fail "rst-flood: kdpd's VmHWM $hwm kB, not below $BOUND_KB kB"
fi
pass "rst-flood $N pairs: taken at kdpd's pace, Allocate answered meanwhile"
end_session rst-flood

# ---- more connections than a socket takes
CONNS=68
start_session
"${ABUSE[@]}" "$S" open-streams 1 --conns "$CONNS" --hold "$T/release" >"$T/conns.out" 2>"$T/conns.err" &
PIDS+=($!)
ATTACK=$!
wait_line "$T/conns.out" '^held$'
wait_count "$T/kdpd.err" '"Closed the oldest connection: too many on this socket"' 5
assert_eq "$(grep -c "\"Closed the oldest connection: too many on this socket\" resource=\"example.com/widget\" limit=64 pid=$ATTACK uid=$(id -u)\$" "$T/kdpd.err")" 5 \
        "connections closed, with the peer's pid and uid"
out=$("$KDPCTL" allocate --socket "$S" widget-2) || fail "allocate with the socket full"
assert_eq "$out" "$BEFORE" "allocate answer with $CONNS connections held"
touch "$T/release"
wait "$ATTACK" || fail "h2-abuse connections"
# the Allocate's own connection closed one more
assert_eq "$(grep -c '^result .* closed=yes$' "$T/conns.out")" 6 "connections closed"
for i in 0 1 2 3 4 5; do
        grep -q "^result conn=$i .* closed=yes\$" "$T/conns.out" || fail "connection $i not closed: $(cat "$T/conns.out")"
done
pass "$CONNS connections: the oldest closed, the kubelet's kept"
end_session connections
