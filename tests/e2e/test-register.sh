# SPDX-License-Identifier: GPL-2.0-or-later
# kdpd registers each resource with the kubelet and its first ListAndWatch
# message carries every device, its health and its NUMA node.
. "$(dirname "$0")/lib.sh"

start_kubelet kubelet
start_kdpd kdpd --backend example -o example.unhealthy=widget-5
wait_line "$T/kubelet.out" '^devices resource=example.com/widget '

reg=$(grep '^registered ' "$T/kubelet.out")
case "$reg" in
"registered resource=example.com/widget endpoint=$(printed_endpoint "kdp-example-example.com_widget.$KDPD_PID.1.sock") pre_start_required=true preferred_available=true") ;;
*) fail "registration line: $reg" ;;
esac
pass "registered with a fresh socket name and identical options"

assert_eq "$(grep -m1 '^devices ' "$T/kubelet.out")" \
        "devices resource=example.com/widget capacity=8 allocatable=7 healthy=widget-0,widget-1,widget-2,widget-3,widget-4,widget-6,widget-7 unhealthy=widget-5 numa=widget-0:0;widget-1:1;widget-2:0;widget-3:1;widget-4:0;widget-5:1;widget-6:0;widget-7:1" \
        "first device list"
pass "first list: 8 devices, widget-5 unhealthy, NUMA round robin"

grep -q 'Device became unhealthy.*device="widget-5".*reason="configured unhealthy"' "$T/kdpd.err" ||
        fail "unhealthy transition not logged with its reason"
pass "unhealthy device logged with its reason"

# a known but unhealthy ID is still answered (the kubelet re-sends checkpointed IDs), with a warning
S=$(plugin_socket widget)
assert_eq "$("$KDPCTL" allocate --socket "$S" widget-5 | grep EXAMPLE)" "env EXAMPLE_WIDGETS=widget-5" \
        "allocate of an unhealthy device"
wait_line "$T/kdpd.err" '^W.*"Allocated unhealthy device" resource="example.com/widget" device="widget-5" reason="configured unhealthy"'
pass "an unhealthy device is allocated with a warning"

# klog format on every line kdpd writes
bad=$(grep -Evc '^[IWE][0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6} +[0-9]+ [a-z_.-]+:[0-9]+\] "' "$T/kdpd.err")
assert_eq "$bad" 0 "lines of kdpd's log not in klog format"
pass "every log line is klog-formatted"

# the config's resource name and device count
stop_kdpd
start_kdpd kdpd2 --backend example -o example.devices=3 -o example.numa_nodes=0 -o example.resource=acme.io/thing
wait_line "$T/kubelet.out" '^devices resource=acme.io/thing '
assert_eq "$(grep -m1 '^devices resource=acme.io/thing' "$T/kubelet.out")" \
        "devices resource=acme.io/thing capacity=3 allocatable=3 healthy=widget-0,widget-1,widget-2 unhealthy= numa=" \
        "list of a configured resource without topology"
pass "params devices, numa_nodes and resource applied"
stop_kdpd
