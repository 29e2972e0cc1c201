# SPDX-License-Identifier: GPL-2.0-or-later
# Registration through the kubelet's plugin watcher (docs/kubelet.md §1.7): kdpd
# puts its sockets in plugins_registry and never calls Register; the stand-in
# kubelet finds them, asks GetInfo, connects and says
# NotifyRegistrationStatus. In turn:
#   auto        --registration auto picks the watcher because plugins_registry
#               exists, and says why
#   no message  a NotifyRegistrationStatus call with no request message (a
#               kubelet killed in the middle of one) is answered
#               INVALID_ARGUMENT and is not taken for a refusal
#   restart     a kubelet that restarts (SIGTERM, then SIGKILL) finds the very
#               same socket again: kdpd re-serves nothing
#   gone        a kubelet killed before its watcher found the socket: when
#               the 10 s wait for its stream ends, no kubelet listens, so kdpd
#               serves no fresh socket and warns of nothing; the next kubelet
#               finds the same socket
#   dropped     a live kubelet that drops the stream: kdpd serves a fresh
#               socket, which the watcher registers as a new plugin
#   dir gone    plugins_registry removed and made again by the next kubelet:
#               kdpd serves anew in the new directory
#   stop        kdpd's exit removes its socket: the kubelet deregisters it
#   refused     a kubelet whose dial-back failed refuses the socket and never tries
#               it again: kdpd serves a fresh one (twice, with back-off)
#   auto, no dir  without plugins_registry, auto registers on kubelet.sock
. "$(dirname "$0")/lib.sh"

mkdir -p "$REG"
WIDGETS='^devices resource=example.com/widget capacity=8 allocatable=8 '

# kubelet NAME: a stand-in kubelet with the plugin watcher on $REG
kubelet() {
        start_kubelet "$1" --plugins-registry "$REG"
}

# endpoints NAME: the endpoints of kubelet NAME's registrations, one a line
endpoints() {
        sed -n 's/^registered resource=example.com\/widget endpoint=\([^ ]*\).*/\1/p' "$T/$1.out"
}

# devices_since_registered NAME ERE: waits until a line of kubelet NAME after its last
# `registered` line matches ERE (the full list came over the newest registration)
devices_since_registered() {
        local end
        end=$(deadline_ms "$(wait_s)")
        while [ "$(now_ms)" -lt "$end" ]; do
                awk '/^registered /{buf=""} {buf=buf $0 "\n"} END{printf "%s", buf}' "$T/$1.out" |
                        grep -Eq -- "$2" && return 0
                sleep 0.05
        done
        fail "no line matching '$2' after the last registration of $1"
}

kubelet k1
start_kdpd kdpd --backend example --v 1
wait_line "$T/k1.out" "$WIDGETS"
wait_line "$T/kdpd.err" '"Registering through the kubelet.s plugin watcher" dir="'"$REG"'" reason="the plugin watcher.s directory exists"'
wait_line "$T/kdpd.err" '"Registered with kubelet through its plugin watcher" resource="example.com/widget"'
first=$(endpoints k1)
assert_eq "$(dirname "$first")" "$REG" "the socket's directory"
[ -S "$first" ] || fail "no socket $first"
assert_eq "$(find "$DIR" -name 'kdp-*' | wc -l)" 0 "kdpd's sockets in the device-plugins dir"
assert_eq "$(count_lines "$T/kdpd.err" '"Registered with kubelet" ')" 0 "Register calls on kubelet.sock"
pass "auto: the watcher registered kdpd's socket in plugins_registry; no Register"

if /usr/bin/python3 -c 'import h2' 2>/dev/null; then
        "${DIE_WITH_US[@]}" /usr/bin/python3 "$KDP_SOURCE_DIR/tests/e2e/h2-abuse.py" "$first" no-message 1 \
                --path /pluginregistration.Registration/NotifyRegistrationStatus --wait-close 2 >"$T/no-message.out"
        assert_eq "$(grep '^status ' "$T/no-message.out")" \
                "status conn=0 stream=1 grpc-status=3 grpc-message=no request message" "the answer to a Notify without a message"
        wait_line "$T/kdpd.err" '"Call ended before its request message" resource="example.com/widget" method="/pluginregistration.Registration/NotifyRegistrationStatus" reason="no request message"'
        assert_eq "$(count_lines "$T/kdpd.err" '^W')" 0 "warnings of kdpd"
        assert_eq "$(ls "$REG")" "$(basename "$first")" "the sockets in plugins_registry"
        pass "a Notify without a request message: INVALID_ARGUMENT, no refusal, no fresh socket"
else
        echo "skipped the Notify without a message: python3-h2 missing"
fi

# the kubelet after the SIGKILL is "kubelet", for devices_match
for how in TERM KILL; do
        name=k-TERM
        [ "$how" = KILL ] && name=kubelet
        kill -"$how" "$KUBELET_PID"
        wait_gone 30 "$KUBELET_PID"
        kubelet "$name"
        wait_line "$T/$name.out" "$WIDGETS"
        assert_eq "$(endpoints "$name")" "$first" "the endpoint the kubelet restarted by SIG$how found"
done
assert_eq "$(count_lines "$T/kdpd.err" '"Re-registering after')" 0 "re-serves through two kubelet restarts"
pass "a restarted kubelet (SIGTERM, SIGKILL) finds the same socket; nothing re-served"

kill -KILL "$KUBELET_PID"
wait_gone 30 "$KUBELET_PID"
restarts=$(count_lines "$T/kdpd.err" '"Noticed kubelet restart"')
start_kubelet k-gone            # kubelet.sock only: no watcher finds the socket
wait_count "$T/kdpd.err" '"Noticed kubelet restart"' $((restarts + 1))
kill -KILL "$KUBELET_PID"       # kubelet.sock stays behind, refusing
wait_gone 30 "$KUBELET_PID"
wait_line "$T/kdpd.err" '"No kubelet listens; its successor.s plugin watcher will find the socket" resource="example.com/widget"' 60
assert_eq "$(count_lines "$T/kdpd.err" '^W')" 0 "warnings of kdpd"
kubelet kubelet
wait_line "$T/kubelet.out" "$WIDGETS"
assert_eq "$(endpoints kubelet)" "$first" "the endpoint the kubelet after the one gone found"
pass "a kubelet gone before its watcher found the socket: no fresh socket, no warning; the next finds the same"

kill -USR1 "$KUBELET_PID"
wait_line "$T/kubelet.out" '^dropped resource=example.com/widget'
wait_count "$T/kubelet.out" '^registered resource=example.com/widget ' 2
wait_line "$T/kubelet.out" "^deregistered resource=example.com/widget endpoint=$first\$"
second=$(endpoints kubelet | tail -n 1)
[ "$second" != "$first" ] || fail "the dropped stream was registered again on the same socket"
[ -e "$first" ] && fail "the old socket $first is still there"
devices_since_registered kubelet "$WIDGETS"
assert_eq "$(count_lines "$T/kdpd.err" '"Re-registering after the kubelet dropped its stream"')" 1 "re-serves logged"
pass "a live kubelet dropping the stream: a fresh socket, registered as a new plugin"

stop_kubelet
rm -rf "$REG"
mkdir -p "$REG"
kubelet k3
wait_line "$T/k3.out" "$WIDGETS"
third=$(endpoints k3)
assert_eq "$(dirname "$third")" "$REG" "the socket's directory after it was made anew"
[ "$third" != "$second" ] || fail "no new socket after plugins_registry was made anew"
pass "plugins_registry removed and made again: kdpd serves in the new one"

stop_kdpd
wait_line "$T/k3.out" "^deregistered resource=example.com/widget endpoint=$third\$"
assert_eq "$(find "$REG" -name 'kdp-*' | wc -l)" 0 "kdpd's sockets left in plugins_registry"
pass "kdpd's exit deregisters its socket"

stop_kubelet
start_kubelet k5 --plugins-registry "$REG" --fail-dial-back 2
start_kdpd kdpd3 --backend example
wait_line "$T/k5.out" "$WIDGETS"
assert_eq "$(count_lines "$T/k5.out" '^register-rejected resource=example.com/widget ')" 2 "refusals by the watcher"
assert_eq "$(count_lines "$T/k5.out" '^registered resource=example.com/widget ')" 1 "registrations after two refusals"
assert_eq "$(count_lines "$T/kdpd3.err" '"The kubelet.s plugin watcher refused the resource; serving a fresh socket" resource="example.com/widget" .*err="RegisterPlugin error -- plugin registration failed with err: failed to dial device plugin: context deadline exceeded" refusals=1')" 1 \
        "the first refusal's warning"
assert_eq "$(ls "$REG" | wc -l)" 1 "sockets in plugins_registry after two refusals"
assert_eq "$(endpoints k5)" "$REG/$(ls "$REG")" "the socket registered"
assert_eq "$(count_lines "$T/k5.err" 'Failed to notify')" 0 "Notify calls that failed"
pass "a socket refused after a failed dial-back is replaced by a fresh one until registered"
stop_kdpd
stop_kubelet

rm -rf "$REG"
start_kubelet k4
start_kdpd kdpd2 --backend example
wait_line "$T/k4.out" "$WIDGETS"
wait_line "$T/kdpd2.err" '"Registering on kubelet.sock" dir="'"$DIR"'" reason="no plugin watcher.s directory"'
wait_line "$T/kdpd2.err" '"Registered with kubelet" resource="example.com/widget"'
[ -e "$REG" ] && fail "auto made plugins_registry"
pass "auto without plugins_registry registers on kubelet.sock"
stop_kdpd
