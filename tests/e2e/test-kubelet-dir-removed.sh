# SPDX-License-Identifier: GPL-2.0-or-later
# The kubelet directory removed while kdpd serves, then made again with a new
# kubelet in it: `rm -rf` of the directory, then `mv DIR DIR.old` (the
# directory and kdpd's sockets live on under the other name). The old kubelet
# stays up through the removal and the directory's return, holding its
# streams on the old sockets. kdpd notices the directory go, watches its
# parent for its return, serves every resource again in the new directory and
# registers each once with the new kubelet, on an endpoint that exists there;
# the old kubelet's stream on the old socket is ended, not taken for a
# registration. A parent made again too (DIR's parent removed with it) works
# the same.
. "$(dirname "$0")/lib.sh"

TWIN="$KDP_BUILD_DIR/tests/backends/kdp-backend-twin.so"
RESOURCES="example.com/widget twin.example.com/gadget"

# registered_once NAME: kubelet NAME got one registration per resource, on a socket in $DIR, and the full lists
registered_once() {
        local res ep
        wait_line "$T/$1.out" '^devices resource=example.com/widget capacity=8 allocatable=8 '
        wait_line "$T/$1.out" '^devices resource=twin.example.com/gadget capacity=2 allocatable=2 '
        for res in $RESOURCES; do
                assert_eq "$(count_lines "$T/$1.out" "^registered resource=$res ")" 1 "$1: registrations of $res"
                ep=$(grep -m1 "^registered resource=$res " "$T/$1.out" | sed 's/.* endpoint=\([^ ]*\).*/\1/')
                [ -S "$DIR/$ep" ] || fail "$1: endpoint '$ep' of $res is not a socket in $DIR"
        done
        assert_eq "$(count_lines "$T/$1.out" '^register-rejected ')" 0 "$1: rejected registrations"
}

# round NAME HOW: the directory goes (HOW: rm or mv) under kubelet NAME, comes back, kubelet NAME-new starts
round() {
        local res gone back
        gone=$(count_lines "$T/kdpd.err" '"Kubelet directory is gone; waiting for it to return"')
        back=$(count_lines "$T/kdpd.err" '"Kubelet directory is back"')
        if [ "$2" = rm ]; then
                rm -rf "$DIR"
        else
                rm -rf "$DIR.old"
                mv "$DIR" "$DIR.old"
        fi
        wait_count "$T/kdpd.err" '"Kubelet directory is gone; waiting for it to return"' $((gone + 1))
        mkdir "$DIR"
        wait_count "$T/kdpd.err" '"Kubelet directory is back"' $((back + 1))
        # the old kubelet's streams on the old sockets end: they register nothing
        for res in $RESOURCES; do
                wait_line "$T/$1.out" "^stream-ended resource=$res "
        done
        stop_kubelet
        start_kubelet "$1-new"
        registered_once "$1-new"
        for res in $RESOURCES; do
                assert_eq "$(count_lines "$T/$1.out" "^registered resource=$res ")" 1 "$1: registrations of $res"
        done
        pass "$2: every resource registered once with the kubelet in the new directory"
}

start_kubelet k1
start_kdpd kdpd --backend example --backend "$TWIN" --v 2
registered_once k1
round k1 rm
round k1-new mv
[ -d "$DIR.old" ] || fail "the moved directory is gone"

# the parent goes too: the nearest existing ancestor is watched
PARENT="$T/deep/er"
stop_kdpd
DIR="$PARENT/device-plugins"
mkdir -p "$DIR"
start_kubelet p1
start_kdpd kdpd-deep --backend example --backend "$TWIN" --v 2
registered_once p1
stop_kubelet
rm -rf "$T/deep"
wait_line "$T/kdpd-deep.err" '"Kubelet directory is gone; waiting for it to return"'
mkdir -p "$DIR"
wait_line "$T/kdpd-deep.err" '"Kubelet directory is back"'
start_kubelet p2
registered_once p2
pass "the directory and its parents removed and made again: registered in the new one"
stop_kdpd
assert_eq "$(count_lines "$T/kdpd.err" '"Re-registering after the kubelet dropped its stream"')" 0 \
        "re-registrations for a dropped stream"
