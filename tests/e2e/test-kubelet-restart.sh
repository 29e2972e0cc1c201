# SPDX-License-Identifier: GPL-2.0-or-later
# Kubelet restarts, as the kubelet does them: the new kubelet deletes every
# socket in the directory (kubelet.sock and kdpd's included), then creates
# kubelet.sock. Each kubelet must see exactly one registration per resource,
# on an endpoint that exists when it dials back (no rejected Register), and
# get the full device lists back; kdpd must never take the end of the old
# kubelet's streams for a live kubelet dropping them. The old kubelet goes,
# in turn:
#   term    SIGTERM: the stand-in stops listening, removes kubelet.sock, then
#           its connections end; kubelet-go (grpc-go) exits at once and
#           leaves kubelet.sock behind, as the kubelet does
#   kill    SIGKILL: everything ends at once and kubelet.sock stays behind,
#           refusing connections
#   frozen  SIGKILL while kdpd is stopped (SIGSTOP), and the new kubelet is
#           up before kdpd runs again: kdpd reads the end of the old streams
#           only once the new kubelet.sock exists. On ext4 a file created
#           right after one was deleted usually gets its inode number (a
#           kdpd that compared inode numbers took the new kubelet for the old
#           one); kdpd holds the file it registered with open, so the number
#           stays taken. The test reports how often it was reused.
# 200 restarts of the stand-in (30 under valgrind), then 30 of kubelet-go
# (9 under valgrind) when it is built. Then kdpd started before any kubelet
# registers once kubelet.sock appears.
#
# Through the plugin watcher (KDP_E2E_REGISTRATION=plugin-watcher) kdpd's
# sockets are in plugins_registry, which the restart's cleaning leaves alone:
# the new stand-in finds them by walking the registry at start. The same must
# hold, and more: kdpd re-serves nothing, so every kubelet registers the very
# sockets the first one did; taking the end of the old streams for a drop
# would show as a fresh socket (an extra registration, or another endpoint).
# kubelet-go has no plugin watcher: its rounds are skipped. kdpd started
# before any kubelet serves in plugins_registry at once, and the late kubelet
# registers that socket.
. "$(dirname "$0")/lib.sh"

ROUNDS=200
GO_ROUNDS=30
if [ "${KDP_VALGRIND:-}" = 1 ]; then
        ROUNDS=30
        GO_ROUNDS=9
fi
KUBELET_GO="$KDP_BUILD_DIR/tests/interop/kubelet-go"
TWIN="$KDP_BUILD_DIR/tests/backends/kdp-backend-twin.so"
WIDGETS='^devices resource=example.com/widget capacity=8 allocatable=8 '
GADGETS='^devices resource=twin.example.com/gadget capacity=2 allocatable=2 '
KPID=
KIND=c

# a stopped kdpd would ignore the SIGTERM of lib.sh's cleanup
trap '[ -n "${KDPD_PID:-}" ] && kill -CONT "$KDPD_PID" 2>/dev/null; cleanup' EXIT

# Line checks without a process per check: 200 rounds of grep, sed and date
# add up to minutes on a busy machine.

# await FILE ERE [TIMEOUT_S]: waits until a (whole) line of FILE matches
await() {
        local line end=$((${EPOCHREALTIME/./} + ${3:-20} * 1000000 * SLOW))
        while :; do
                if [ -f "$1" ]; then
                        while IFS= read -r line; do
                                [[ $line =~ $2 ]] && return 0
                        done <"$1"
                fi
                [ "${EPOCHREALTIME/./}" -lt "$end" ] || fail "no line matching '$2' in $1 after ${3:-20}s"
                sleep 0.02
        done
}

# count FILE ERE: sets N to the number of lines of FILE that match
count() {
        local line
        N=0
        while IFS= read -r line; do
                [[ $line =~ $2 ]] && N=$((N + 1))
        done <"$1"
}

# endpoint NAME RESOURCE: sets EP to the endpoint of RESOURCE's first registration with kubelet NAME
endpoint() {
        local line re="^registered resource=$2 endpoint=([^ ]+) "
        EP=
        while IFS= read -r line; do
                if [[ $line =~ $re ]]; then
                        EP=${BASH_REMATCH[1]}
                        return
                fi
        done <"$T/$1.out"
}

# launch NAME: a kubelet of $KIND (c: the stand-in, with the plugin watcher in watcher mode; go:
# kubelet-go), output in $T/NAME.{out,err}, once it listens
launch() {
        if [ "$KIND" = c ]; then
                start_kubelet "$1"
                KPID=$KUBELET_PID
                return
        fi
        "${DIE_WITH_US[@]}" "$KUBELET_GO" -dir "$DIR" >"$T/$1.out" 2>"$T/$1.err" &
        KPID=$!
        PIDS+=("$KPID")
        await "$T/$1.err" '^kubelet-go: serving '
}

# end SIGNAL: ends the kubelet and forgets its pid (no later kill may reach a reused pid)
end() {
        { kill -"$1" "$KPID"; wait "$KPID"; } 2>/dev/null     # braces: bash reports a killed job on its stderr
        forget_pid "$KPID"
        KPID=
}

# serving NAME: kubelet NAME has both device lists and both endpoints exist; in watcher mode they
# are the sockets the first kubelet registered (FIRST_EP), as kdpd re-serves nothing
declare -A FIRST_EP
serving() {
        local res
        await "$T/$1.out" "$WIDGETS"
        await "$T/$1.out" "$GADGETS"
        for res in example.com/widget twin.example.com/gadget; do
                endpoint "$1" "$res"
                [ -n "$EP" ] && [ -S "$(endpoint_path "$EP")" ] || fail "$1: endpoint '$EP' of $res is not a socket"
                watcher_mode || continue
                [ -n "${FIRST_EP[$res]:-}" ] || FIRST_EP[$res]=$EP
                assert_eq "$EP" "${FIRST_EP[$res]}" "$1: endpoint of $res"
        done
}

# settled NAME: once kubelet NAME is gone, what it saw is final
settled() {
        local res
        for res in example.com/widget twin.example.com/gadget; do
                count "$T/$1.out" "^registered resource=$res "
                assert_eq "$N" 1 "$1: registrations of $res"
        done
        count "$T/$1.out" '^register-rejected '
        assert_eq "$N" 0 "$1: rejected registrations"
}

# restarts PREFIX N: N restarts of the running kubelet $PREFIX-0, term, kill and frozen in turn
restarts() {
        local i mode old_ino new_ino prev reused=0 frozen=0
        for i in $(seq 1 "$2"); do
                prev=$1-$((i - 1))
                case $((i % 3)) in
                0) mode=term ;;
                1) mode=kill ;;
                2) mode=frozen ;;
                esac
                if [ "$mode" = frozen ]; then
                        frozen=$((frozen + 1))
                        old_ino=$(stat -c %i "$DIR/kubelet.sock")
                        kill -STOP "$KDPD_PID"
                fi
                if [ "$mode" = term ]; then
                        end TERM
                else
                        end KILL
                fi
                settled "$prev"
                launch "$1-$i"
                if [ "$mode" = frozen ]; then
                        new_ino=$(stat -c %i "$DIR/kubelet.sock")
                        [ "$new_ino" = "$old_ino" ] && reused=$((reused + 1))
                        kill -CONT "$KDPD_PID"
                fi
                serving "$1-$i"
        done
        end TERM
        settled "$1-$2"
        echo "$KIND: kubelet.sock got the inode number of the one before in $reused of $frozen frozen restarts"
}

launch k-0
start_kdpd kdpd --backend example --backend "$TWIN" --v 2
serving k-0
restarts k "$ROUNDS"
if watcher_mode; then
        GO_ROUNDS=0
        echo "skip: kubelet-go has no plugin watcher"
elif [ -x "$KUBELET_GO" ]; then
        KIND=go
        launch go-0
        serving go-0
        restarts go "$GO_ROUNDS"
else
        echo "skip: $KUBELET_GO not built (no Go toolchain)"
fi
stop_kdpd                                      # its log is final now
assert_eq "$(count_lines "$T/kdpd.err" '"Re-registering after the kubelet dropped its stream"')" 0 \
        "re-registrations for a dropped stream"
assert_eq "$(count_lines "$T/kdpd.err" '"No ListAndWatch from the kubelet')" 0 "registrations left without a stream"
assert_eq "$(count_lines "$T/kdpd.err" '"The kubelet.s plugin watcher refused')" 0 "refusals by the plugin watcher"
if watcher_mode; then
        pass "kubelet restarts through the plugin watcher (term, kill, frozen; $ROUNDS of the stand-in): one registration per resource and kubelet, on the sockets served from the start, full lists back"
else
        pass "kubelet restarts (term, kill, frozen; $ROUNDS of the stand-in, $GO_ROUNDS of kubelet-go if built): one registration per resource and kubelet, endpoints served, full lists back"
fi

# kdpd started before the kubelet: it registers once kubelet.sock appears
# (through the plugin watcher: it serves in plugins_registry at once, and the kubelet finds the socket)
KIND=c
rm -f "$DIR/kubelet.sock"
start_kdpd kdpd-early --backend example --v 2
if watcher_mode; then
        early="kdp-example-example.com_widget.$KDPD_PID.1.sock"
        wait_socket "$REG/$early"
        assert_eq "$(find "$REG" -name 'kdp-*' | wc -l)" 1 "kdpd's sockets in plugins_registry before the kubelet"
else
        wait_line "$T/kdpd-early.err" '"Waiting for kubelet.sock"' 20
fi
launch late
await "$T/late.out" "$WIDGETS"
end TERM
count "$T/late.out" '^registered resource=example.com/widget '
assert_eq "$N" 1 "registrations of a late kubelet"
if watcher_mode; then
        endpoint late example.com/widget
        assert_eq "$EP" "$(printed_endpoint "$early")" "the endpoint the late kubelet registered"
fi
pass "kdpd started before the kubelet registered once the kubelet came"
stop_kdpd
