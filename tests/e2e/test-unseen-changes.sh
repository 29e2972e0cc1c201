# SPDX-License-Identifier: GPL-2.0-or-later
# A change of a device record the kubelet cannot see (its env, its health reason: what
# Allocate answers and what kdpd logs) sends no ListAndWatch message: the stream carries
# a list only when its bytes change. Allocate answers from the new records at once.
# The quiet test backend's first reload changes only the env TINY_LABEL; its second adds
# a device, the list after which is the barrier: a message the first made would be before it.
. "$(dirname "$0")/lib.sh"

R=quiet.example.com/thing
start_kubelet kubelet
start_kdpd kdpd --backend "$KDP_BUILD_DIR/tests/backends/kdp-backend-quiet.so"
devices_match $R '^devices resource=quiet\.example\.com/thing capacity=1 allocatable=1 healthy=thing-0 '
S=$(plugin_socket quiet)
assert_eq "$("$KDPCTL" allocate --socket "$S" thing-0)" "env TINY_LABEL=a" "Allocate before the reload"

kill -HUP "$KDPD_PID"
wait_line "$T/kdpd.err" '"Reloaded own files" backend="quiet" reloads=1$'
wait_count "$T/kdpd.err" '"Reloaded config" changedBackends=0 reloadedBackends=1$' 1
assert_eq "$("$KDPCTL" allocate --socket "$S" thing-0)" "env TINY_LABEL=reloaded" "Allocate after the reload"
pass "a change of what Allocate answers reached Allocate"

kill -HUP "$KDPD_PID"
devices_match $R '^devices resource=quiet\.example\.com/thing capacity=2 allocatable=2 healthy=thing-0,thing-1 '
assert_eq "$(count_lines "$T/kubelet.out" "^devices resource=$R ")" 2 "lists the kubelet got"
pass "no list for a change the kubelet cannot see; the next visible change, one list"
stop_kdpd
