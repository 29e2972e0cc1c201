# SPDX-License-Identifier: GPL-2.0-or-later
# The kubelet answers Register, then drops its connection to the plugin before
# it opens ListAndWatch (a dial-back that broke, or k/k#121994 closing a new
# client): no stream of kdpd's ever ends, so only the missing stream can tell.
# kdpd waits 10 s for it, asks whether the kubelet is alive, and registers
# again on a fresh socket (through the plugin watcher: serves a fresh socket,
# which the watcher registers); a kubelet that opened its stream is left alone.
. "$(dirname "$0")/lib.sh"

start_kubelet kubelet --drop-before-stream 1
start_kdpd kdpd --backend example
wait_line "$T/kubelet.out" '^dropped resource=example.com/widget before its stream$'
first=$(sed -n 's/^registered .* endpoint=\([^ ]*\) .*/\1/p' "$T/kubelet.out")
wait_count "$T/kubelet.out" '^registered resource=example.com/widget ' 2
wait_line "$T/kubelet.out" '^devices resource=example.com/widget capacity=8 allocatable=8 '
second=$(sed -n 's/^registered .* endpoint=\([^ ]*\) .*/\1/p' "$T/kubelet.out" | tail -n 1)
[ "$first" != "$second" ] || fail "registered again on the same socket $first"
[ -e "$(endpoint_path "$first")" ] && fail "the first socket $first is still there"
if watcher_mode; then    # the plugin watcher's socket is replaced without asking
        warning="No ListAndWatch from the kubelet's plugin watcher; serving a fresh socket"
        reregistered=0
else
        warning="No ListAndWatch from the kubelet since registering; asking whether it dropped us"
        reregistered=1
fi
assert_eq "$(count_lines "$T/kdpd.err" "^W.*\"$warning\" resource=\"example.com/widget\" socket=\"$(basename "$first")\" waitedMs=10000\$")" 1 \
        "warnings naming the first socket"
assert_eq "$(count_lines "$T/kdpd.err" '"Re-registering after the kubelet dropped its stream" resource="example.com/widget"')" \
        "$reregistered" "re-registrations logged"
pass "a registration the kubelet dropped before its stream is made again on a fresh socket"

# the second registration has its stream: past the wait nothing more happens
sleep 12
assert_eq "$(count_lines "$T/kdpd.err" '"No ListAndWatch from the kubelet')" 1 "warnings after the stream opened"
assert_eq "$(count_lines "$T/kubelet.out" '^registered ')" 2 "registrations after the stream opened"
pass "a registration whose stream is open is not questioned"
stop_kdpd
