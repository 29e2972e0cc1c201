# SPDX-License-Identifier: GPL-2.0-or-later
# The kubelet closes its connection to the plugin while kubelet.sock stays
# (k/k#121994: a kubelet that mixed up two registrations of one resource).
# kdpd notices its stream was cancelled and registers again, on a fresh
# socket, so capacity comes back without a kubelet or plugin restart.
. "$(dirname "$0")/lib.sh"

start_kubelet kubelet
start_kdpd kdpd --backend example
wait_line "$T/kubelet.out" '^devices resource=example.com/widget capacity=8 allocatable=8 '
first=$(sed -n 's/^registered .* endpoint=\([^ ]*\) .*/\1/p' "$T/kubelet.out")

for round in 1 2 3; do
        kill -USR1 "$KUBELET_PID"
        wait_line "$T/kubelet.out" "^dropped resource=example.com/widget"
        wait_line "$T/kubelet.out" "^registered resource=example.com/widget .*" 30
        end=$(deadline_ms "$(wait_s)")
        while [ "$(count_lines "$T/kubelet.out" '^registered ')" -lt $((round + 1)) ] && [ "$(now_ms)" -lt "$end" ]; do
                sleep 0.02
        done
        assert_eq "$(count_lines "$T/kubelet.out" '^registered ')" $((round + 1)) "registrations after drop $round"
done
wait_line "$T/kubelet.out" '^devices resource=example.com/widget capacity=8 allocatable=8 '
assert_eq "$(tail -n 1 "$T/kubelet.out" | cut -d' ' -f1-4)" "devices resource=example.com/widget capacity=8 allocatable=8" \
        "capacity after the last re-registration"
last=$(sed -n 's/^registered .* endpoint=\([^ ]*\) .*/\1/p' "$T/kubelet.out" | tail -n 1)
assert_eq "$(sed -n 's/^registered .* endpoint=\([^ ]*\) .*/\1/p' "$T/kubelet.out" | sort -u | wc -l)" 4 \
        "distinct endpoints of the 4 registrations"
[ -S "$(endpoint_path "$last")" ] || fail "the new endpoint $last is not served"
[ -e "$(endpoint_path "$first")" ] && fail "the old socket $first is still there"
assert_eq "$(count_lines "$T/kdpd.err" '"Re-registering after the kubelet dropped its stream"')" 3 "re-registrations logged"
pass "a dropped stream with kubelet.sock unchanged re-registers on a fresh socket (3 rounds)"

# an operator's kdpctl list ending its own stream does not make kdpd re-register
S=$(plugin_socket widget)
"$KDPCTL" list --socket "$S" >/dev/null || fail "list"
sleep 0.3
assert_eq "$(count_lines "$T/kubelet.out" '^registered ')" 4 "registrations after a client's own stream ended"
pass "a client closing its own stream while the kubelet's is open changes nothing"
stop_kdpd
