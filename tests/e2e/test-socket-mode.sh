# SPDX-License-Identifier: GPL-2.0-or-later
# Plugin sockets are 0600 whatever kdpd's umask (000 here, which would make
# them 0777: anyone on the node could call Allocate), or 0660 and of the
# group given with --socket-group NAME|GID. A group that does not exist is
# refused at start with a clear error. So is a socket directory others may
# write without a sticky bit (they could swap names in it); a sticky one
# (/tmp's 1777) is taken.
. "$(dirname "$0")/lib.sh"

start_kubelet kubelet
umask 000
start_kdpd kdpd --backend example
wait_line "$T/kubelet.out" '^registered resource=example.com/widget '
S=$(plugin_socket widget)
assert_eq "$(stat -c '%a %g' "$S")" "600 $(id -g)" "mode and group of a socket under umask 000"
stop_kdpd

# a group other than ours that we may give a file: any as root, else one we are in
gid=
if [ "$(id -u)" = 0 ]; then
        gid=4242
else
        for g in $(id -G); do
                [ "$g" != "$(id -g)" ] && gid=$g && break
        done
fi
if [ -n "$gid" ]; then
        start_kdpd kdpd-group --backend example --socket-group "$gid"
        wait_count "$T/kubelet.out" '^registered resource=example.com/widget ' 2
        S=$(plugin_socket widget)
        assert_eq "$(stat -c '%a %g' "$S")" "660 $gid" "mode and group with --socket-group $gid"
        stop_kdpd
        pass "0660 and group $gid with --socket-group"
else
        echo "skip: no group other than our own to give a socket"
fi
umask 022

"$KDPD" --kubelet-dir "$DIR" --backend example --socket-group no-such-group-kdp 2>"$T/bad.err" && fail "unknown group accepted"
assert_eq "$(cat "$T/bad.err")" "kdpd: --socket-group: no group 'no-such-group-kdp'" "error for an unknown group"
"$KDPD" --help | grep -q -- '--socket-group NAME|GID' || fail "--socket-group not in --help"
pass "sockets 0600 under umask 000; unknown group refused"

# refused_start NAME ARGS...: kdpd with ARGS must exit 1 within 30 s (stretched), its stderr in $T/NAME.err
refused_start() {
        local name=$1 rc
        shift
        start_kdpd "$name" "$@"
        wait_gone 30 "$KDPD_PID"
        proc_alive "$KDPD_PID" && fail "$name: kdpd still runs with $*"
        wait "$KDPD_PID"
        rc=$?
        forget_pid "$KDPD_PID"
        assert_eq "$rc" 1 "$name: exit code"
}

# a directory others may write and without a sticky bit: refused at start, naming it and its mode
OPEN="$T/open"
mkdir -p "$OPEN/device-plugins" "$OPEN/sticky"
chmod 0777 "$OPEN/device-plugins"
chmod 1777 "$OPEN/sticky"
refused_start open --kubelet-dir "$OPEN/device-plugins" --backend example --registration kubelet-sock
assert_eq "$(count_lines "$T/open.err" "\"Refused socket directory: others may write it and it has no sticky bit\" dir=\"$OPEN/device-plugins\" mode=\"0777\" err=\"Operation not permitted\"$")" 1 \
        "the refusal of the kubelet directory"
refused_start open-metrics --backend example --metrics-address "$OPEN/device-plugins/metrics.sock"
assert_eq "$(count_lines "$T/open-metrics.err" "\"Refused socket directory: others may write it and it has no sticky bit\" dir=\"$OPEN/device-plugins\" mode=\"0777\" err=\"Operation not permitted\"$")" 1 \
        "the refusal of the metrics socket's directory"
assert_eq "$(ls -A "$OPEN/device-plugins")" "" "what the refused kdpds left in the open directory"
check_valgrind
start_kdpd kdpd-sticky --backend example --metrics-address "$OPEN/sticky/metrics.sock"
wait_line "$T/kdpd-sticky.err" '"Serving metrics"'
assert_eq "$(stat -c '%a %F' "$OPEN/sticky/metrics.sock")" "660 socket" "the metrics socket in a sticky directory"
assert_eq "$(ls -A "$OPEN/sticky")" "metrics.sock" "what the sticky directory holds"
stop_kdpd
pass "a directory others may write refused with its name and mode; a sticky one taken"
