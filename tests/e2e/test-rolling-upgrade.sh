# SPDX-License-Identifier: GPL-2.0-or-later
# A rolling upgrade with a surge, on one node (deploy/README.md, "Upgrade"): a second kdpd serves
# and registers the same resource while the first still serves, then the first gets SIGTERM, as
# the old pod of a DaemonSet updated with maxSurge 1 does. From the stand-in kubelet's lines: the
# resource's capacity never drops below the full count (so never to 0) through the handover, and
# it ends at the full count, all allocatable, with the second kdpd's socket the one registered.
# The stand-in replaces a registration of a resource by a newer one at once, closing the old
# one's stream, as a kubelet before 1.25 does. The first kdpd sees that a newer kdpd serves the
# resource and leaves the registration to it instead of registering again (else the two would
# take turns, dozens of registrations a second, until the first exits): two registrations in
# all, and one warning from the first.
#
# KDP_E2E_DUPLICATE_REGISTRATION=keep-old (e2e/rolling-upgrade-1.25) runs it against the stand-in
# as a kubelet 1.25-1.36 (docs/kubelet.md §1.6, k/k#121994): the second registration overwrites the
# first, whose stream stays open, so the first kdpd has nothing to yield and no warning. Its
# SIGTERM ends that stream, which makes the kubelet disconnect the second kdpd's connection: every
# device unhealthy (the capacity stays 8, allocatable drops to 0) until the second kdpd, its stream
# cancelled while kubelet.sock stays, registers again: three registrations in all, in exactly this
# order of events.
. "$(dirname "$0")/lib.sh"

MODE=${KDP_E2E_DUPLICATE_REGISTRATION:-replace}
# the plugin watcher's deregistration of the first socket is not modelled as 1.25-1.36's (by name)
[ "$MODE" = keep-old ] && watcher_mode && exit 77

RES=example.com/widget
FULL="^devices resource=$RES capacity=8 allocatable=8 healthy=widget-0,widget-1,widget-2,widget-3,widget-4,widget-5,widget-6,widget-7 "

# endpoint_re PID: a socket name of the kdpd of PID (kdp-<backend>-<resource>.<pid>.<n>.sock)
endpoint_re() {
        echo "(.*/)?kdp-example-example\\.com_widget\\.$1\\.[0-9]+\\.sock"
}

# last_registered: the endpoint of the stand-in's newest registration of the resource
last_registered() {
        sed -n "s|^registered resource=$RES endpoint=\\([^ ]*\\) .*|\\1|p" "$T/kubelet.out" | tail -n 1
}

start_kubelet kubelet --duplicate-registration "$MODE"
start_kdpd first --backend example
FIRST=$KDPD_PID
wait_line "$T/kubelet.out" "$FULL"

start_kdpd second --backend example --state-dir "$T/state-second"
SECOND=$KDPD_PID
wait_line "$T/kubelet.out" "^registered resource=$RES endpoint=$(endpoint_re "$SECOND") "
proc_alive "$FIRST" || fail "the first kdpd exited before the second registered"
pass "the second kdpd registered $RES while the first still served it"
if [ "$MODE" = replace ]; then
        wait_line "$T/first.err" '"Another kdpd serves the resource on a newer socket; leaving the registration to it" resource="'"$RES"'"'
        WARNINGS=1
        WHY="the first kdpd left the registration to the newer one"
        REGISTRATIONS=2
else
        wait_count "$T/kubelet.out" "^devices resource=$RES " 2     # the second kdpd's first list
        WARNINGS=0
        WHY="the first kdpd's stream stayed open: nothing to leave"
        REGISTRATIONS=3
fi
sleep 1         # what taking turns would have done by now
assert_eq "$(count_lines "$T/kubelet.out" "^registered resource=$RES ")" 2 "registrations while both kdpd serve"
assert_eq "$(count_lines "$T/first.err" '"Another kdpd serves the resource')" $WARNINGS "warnings of the first kdpd"
pass "$WHY: no taking turns"

KDPD_PID=$FIRST
stop_kdpd
KDPD_PID=$SECOND
if [ "$MODE" = keep-old ]; then
        wait_line "$T/second.err" '"Re-registering after the kubelet dropped its stream" resource="'"$RES"'"'
        wait_count "$T/kubelet.out" "^registered resource=$RES " 3
fi
end=$(deadline_ms "$(wait_s)")
until last_registered | grep -Eqx "$(endpoint_re "$SECOND")" &&
      grep "^devices resource=$RES " "$T/kubelet.out" | tail -n 1 | grep -Eq "$FULL"; do
        [ "$(now_ms)" -lt "$end" ] || fail "the second kdpd is not the one serving $RES: last registered $(last_registered)"
        sleep 0.02
done
[ -S "$(endpoint_path "$(last_registered)")" ] || fail "the registered endpoint $(last_registered) is not served"
assert_eq "$(find "$(sock_dir)" -name "kdp-example-*.$FIRST.*.sock" | wc -l)" 0 "sockets of the first kdpd left behind"
pass "after the first kdpd's SIGTERM, $RES is served by the second: capacity=8 allocatable=8"

assert_eq "$(grep "^devices resource=$RES " "$T/kubelet.out" | grep -cv " capacity=8 ")" 0 \
        "devices lines of $RES with a capacity other than 8"
pass "the capacity of $RES stayed 8 on all $(grep -c "^devices resource=$RES " "$T/kubelet.out") devices lines of the handover"
assert_eq "$(count_lines "$T/kubelet.out" "^registered resource=$RES ")" $REGISTRATIONS "registrations of $RES in all"
if [ "$MODE" = keep-old ]; then
        assert_eq "$(count_lines "$T/second.err" '"Re-registering after the kubelet dropped its stream"')" 1 \
                "re-registrations of the second kdpd"
        assert_eq "$(count_lines "$T/first.err" '"Re-registering')" 0 "re-registrations of the first kdpd"
        ids=widget-0,widget-1,widget-2,widget-3,widget-4,widget-5,widget-6,widget-7
        numa="numa=widget-0:0;widget-1:1;widget-2:0;widget-3:1;widget-4:0;widget-5:1;widget-6:0;widget-7:1"
        full="devices resource=$RES capacity=8 allocatable=8 healthy=$ids unhealthy= $numa"
        opts="pre_start_required=true preferred_available=true"
        ep="kdp-example-example.com_widget"
        expected="registered resource=$RES endpoint=$ep.FIRST.1.sock $opts
$full
registered resource=$RES endpoint=$ep.SECOND.1.sock $opts
$full
stream-ended resource=$RES status=OK message=
devices resource=$RES capacity=8 allocatable=0 healthy= unhealthy=$ids $numa
registered resource=$RES endpoint=$ep.SECOND.2.sock $opts
$full"
        assert_eq "$(sed -e "s/\.$FIRST\./.FIRST./" -e "s/\.$SECOND\./.SECOND./" "$T/kubelet.out")" "$expected" \
                "the stand-in's events (pids as FIRST and SECOND)"
        pass "the first kdpd's stream end disconnected the second, which registered again: all healthy"
fi
stop_kdpd
