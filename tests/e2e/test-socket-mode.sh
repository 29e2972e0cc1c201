# SPDX-License-Identifier: GPL-2.0-or-later
# Plugin sockets are 0600 whatever kdpd's umask (000 here, which would make
# them 0777: anyone on the node could call Allocate), or 0660 and of the
# group given with --socket-group NAME|GID. A group that does not exist is
# refused at start with a clear error.
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
