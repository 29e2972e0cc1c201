# SPDX-License-Identifier: GPL-2.0-or-later
# NotifyRegistrationStatus from a local client that is not the kubelet's plugin watcher
# (`kdpctl raw notify`, its own process and connection) changes nothing, in either registration
# mode:
#   plugin watcher  a Notify(false) and a Notify(true) on a connection no GetInfo came on, and from
#                   another pid than the last GetInfo's (even after that client asked GetInfo
#                   itself, in a process of its own), are refused PERMISSION_DENIED, and so is one
#                   on the very connection the client asked GetInfo on, while the kubelet's
#                   ListAndWatch is open; each with a warning naming the client's pid and uid. The
#                   socket the kubelet registered is kept, its stream stays open with all 8
#                   devices, nothing is registered again
#   kubelet.sock    no plugin watcher: a Notify is refused UNIMPLEMENTED, and kdpd never says it
#                   registered through one
# The stand-in kubelet's own GetInfo and Notify (one client connection, as the kubelet's) still
# register the socket.
. "$(dirname "$0")/lib.sh"

WIDGETS='^devices resource=example.com/widget capacity=8 allocatable=8 '
REFUSED='"Refused call" resource="example.com/widget" method="/pluginregistration.Registration/NotifyRegistrationStatus"'
NOT_WATCHER="NotifyRegistrationStatus is taken only from the plugin watcher that asked GetInfo"
STREAM_OPEN="NotifyRegistrationStatus is not taken while another process has a ListAndWatch stream open"
NO_WATCHER="NotifyRegistrationStatus is taken only when kdpd registers through the kubelet's plugin watcher (--registration plugin-watcher)"

# foreign NAME SOCKET METHOD HEX...: `kdpctl raw` as a process of its own (the pairs on one
# connection); its output in $T/NAME.raw, its pid in FOREIGN_PID
foreign() {
        local name=$1 socket=$2
        shift 2
        "$KDPCTL" raw --socket "$socket" "$@" >"$T/$name.raw" 2>&1 &
        FOREIGN_PID=$!
        wait "$FOREIGN_PID"
}

# refused NAME SOCKET HEX STATUS REASON [FIRST]: a foreign Notify (request HEX; after a GetInfo on
# its connection with FIRST=info) is refused with STATUS and REASON, and kdpd warns of it with the
# client's pid and uid
refused() {
        local first=()
        [ "${6:-}" = info ] && first=(info "")
        foreign "$1" "$2" ${first[@]+"${first[@]}"} notify "$3"
        assert_eq "$(tail -n 1 "$T/$1.raw")" "error: code=$4 message=$5" "$1: the answer"
        wait_line "$T/$KDPD_NAME.err" "^W.* $REFUSED status=\"$4\" reason=\"$(sed 's/[().]/\\&/g' <<<"$5")\" pid=$FOREIGN_PID uid=$(id -u)\$"
}

# before_stop OUT: kubelet output OUT, once kdpd's stop ended its stream or deregistered its socket
# (which comes first is a race), holds one registration (a fresh socket would be a second), and
# before that end only device lists with all 8 widgets
before_stop() {
        sed -E '/^(stream-ended|deregistered) /,$d' "$1" >"$1.before"
        assert_eq "$(count_lines "$1" '^registered ')" 1 "$1: registrations"
        assert_eq "$(count_lines "$1.before" '^devices ')" "$(count_lines "$1.before" "$WIDGETS")" \
                "$1: device lists before the stop, of them with all 8"
}

# ---- through the plugin watcher ----
mkdir -p "$REG"
start_kubelet k1 --plugins-registry "$REG"
KDPD_NAME=kdpd
start_kdpd kdpd --backend example --registration plugin-watcher
wait_line "$T/k1.out" "$WIDGETS"
wait_line "$T/kdpd.err" '"Registered with kubelet through its plugin watcher" resource="example.com/widget"'
S=$(sed -n 's/^registered resource=example.com\/widget endpoint=\([^ ]*\).*/\1/p' "$T/k1.out")
[ -S "$S" ] || fail "no socket $S"
pass "the stand-in kubelet's GetInfo and Notify register the socket"

refused false "$S" 0800 PERMISSION_DENIED "$NOT_WATCHER"
refused true "$S" 0801 PERMISSION_DENIED "$NOT_WATCHER"
foreign info "$S" info ""
assert_eq "$(cat "$T/info.raw")" "raw ok" "a foreign GetInfo"
refused after-info "$S" 0800 PERMISSION_DENIED "$NOT_WATCHER"
refused same-conn "$S" 0800 PERMISSION_DENIED "$STREAM_OPEN" info
assert_eq "$(head -n 1 "$T/same-conn.raw")" "raw ok" "GetInfo before the Notify on one connection"
assert_eq "$(count_lines "$T/kdpd.err" "$REFUSED")" 4 "refused Notify lines"
assert_eq "$(count_lines "$T/kdpd.err" 'refused the resource')" 0 "refusals taken from a foreign client"
assert_eq "$(count_lines "$T/kdpd.err" '"Registered with kubelet through its plugin watcher"')" 1 "registrations kdpd logged"
pass "a foreign Notify(false|true) is refused PERMISSION_DENIED with a warning naming its pid and uid"

# until kdpd's stop removes its socket, the kubelet saw one registration, one stream, 8 devices
stop_kdpd
wait_line "$T/k1.out" "^deregistered resource=example.com/widget endpoint=$S\$"
before_stop "$T/k1.out"
pass "the kubelet's registration, socket and stream stayed through the foreign calls"
stop_kubelet

# ---- on kubelet.sock ----
rm -rf "$REG"
start_kubelet k2
KDPD_NAME=kdpd2
start_kdpd kdpd2 --backend example --registration kubelet-sock
wait_line "$T/k2.out" "$WIDGETS"
wait_line "$T/kdpd2.err" '"Registered with kubelet" resource="example.com/widget"'
S2="$DIR/$(sed -n 's/^registered resource=example.com\/widget endpoint=\([^ ]*\).*/\1/p' "$T/k2.out")"
refused sock-true "$S2" 0801 UNIMPLEMENTED "$NO_WATCHER"
refused sock-false "$S2" 0800 UNIMPLEMENTED "$NO_WATCHER"
assert_eq "$(count_lines "$T/kdpd2.err" 'plugin watcher"|refused the resource')" 0 "plugin watcher lines without one"
stop_kdpd
wait_line "$T/k2.out" '^stream-ended resource=example.com/widget status=OK '
before_stop "$T/k2.out"
pass "without a plugin watcher a Notify is refused UNIMPLEMENTED and taken for nothing"
