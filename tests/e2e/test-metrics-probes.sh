# SPDX-License-Identifier: GPL-2.0-or-later
# The kubelet's livenessProbe on /healthz is answered while connections that
# send their request head a byte a second, never whole, are held open past
# every limit of the metrics endpoint: from the node's own address (the
# kubelet probes from it too) and from four more addresses (pods). The
# probes are made as the kubelet makes them: a new connection each, a 1 s
# timeout (stretched under sanitizers and valgrind), one a second; 3 failed
# in a row would restart kdpd. Every one must be answered 200.
. "$(dirname "$0")/lib.sh"

HTTP="$KDP_SOURCE_DIR/tests/e2e/metrics-http.py"
N=25

start_kdpd kdpd --backend example --metrics-address 127.0.0.1:0
wait_line "$T/kdpd.err" '"Serving metrics"'
ADDR=$(sed -n 's/.*"Serving metrics" address="\([^"]*\)".*/\1/p' "$T/kdpd.err")
assert_eq "$(python3 "$HTTP" "$ADDR" get /healthz | tr '\n' '|')" "200|ok|" "/healthz before the attack"

python3 "$HTTP" "$ADDR" probes "$N" "$SLOW" >"$T/probes.out" 2>"$T/probes.err" || fail "probes: $(cat "$T/probes.err")"
assert_eq "$(tr '\n' '|' <"$T/probes.out")" "probes $N|answered $N|longest-failure-run 0|attack-closed yes|" \
        "the kubelet's probes during the attack"
proc_alive "$KDPD_PID" || fail "kdpd died"
assert_eq "$(python3 "$HTTP" "$ADDR" get /healthz | tr '\n' '|')" "200|ok|" "/healthz after the attack"
pass "$N of $N probes answered 200 while slow request heads held every limit"
stop_kdpd
