# SPDX-License-Identifier: GPL-2.0-or-later
# A kubelet restart (every socket deleted, kubelet.sock created anew) makes
# kdpd serve on a fresh socket and register again within 1 s — 20 times in a
# row, with the full device list each time.
. "$(dirname "$0")/lib.sh"

start_kubelet kubelet0
start_kdpd kdpd --backend example --v 2
wait_line "$T/kubelet0.out" '^devices resource=example.com/widget capacity=8 allocatable=8 '

worst=0
for i in $(seq 1 20); do
        stop_kubelet
        t0=$(now_ms)
        start_kubelet "kubelet$i"
        wait_line "$T/kubelet$i.out" '^devices resource=example.com/widget capacity=8 allocatable=8 ' 5
        dt=$(($(now_ms) - t0))
        [ "$dt" -gt "$worst" ] && worst=$dt
        within_ms "$dt" 1000 "restart $i: re-registration"
        assert_eq "$(count_lines "$T/kubelet$i.out" '^registered resource=example.com/widget ')" 1 \
                "registrations seen by kubelet $i"
        ep=$(sed -n 's/^registered .* endpoint=\([^ ]*\) .*/\1/p' "$T/kubelet$i.out")
        [ -S "$DIR/$ep" ] || fail "restart $i: endpoint $ep is not a socket"
done
pass "20 kubelet restarts, each re-registered within 1 s (worst ${worst} ms)"

# kdpd started before the kubelet: it retries until kubelet.sock appears
stop_kdpd
stop_kubelet
rm -f "$DIR/kubelet.sock"
start_kdpd kdpd-early --backend example
sleep 0.5
t0=$(now_ms)
start_kubelet late
wait_line "$T/late.out" '^devices resource=example.com/widget capacity=8 ' 5
dt=$(($(now_ms) - t0))
within_ms "$dt" 1000 "registration after a late kubelet"
pass "kdpd started before the kubelet registered ${dt} ms after kubelet.sock appeared"
stop_kdpd
