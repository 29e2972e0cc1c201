#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# cluster/example: kdp installed the way an operator installs it, on cluster.sh's real
# two-node cluster (Kubernetes v1.37.2). kdp's image, packed from the build tree by kdp-image.sh,
# is imported into node 1's containerd, the node labelled example.com/widgets=true;
# deploy/example/unprivileged is rendered by the cluster's own kubectl through the overlay
# example/ (the local image tag, imagePullPolicy Never) and applied. The DaemonSet's one pod runs
# on node 1 and becomes Ready (the kubelet's startup and readiness probes on /readyz answered),
# node 1 offers exactly 8 example.com/widget and node 2 none, a pod limited to 2 gets
# EXAMPLE_WIDGETS and its /dev/widget* nodes from kdpd's Allocate, a pod asking for 9 stays
# Pending on the scheduler's "Insufficient example.com/widget", and cluster.sh down leaves
# nothing behind. Usage: test-cluster-example.sh (KDP_BUILD_DIR: the build tree)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../procs.sh"

build=${KDP_BUILD_DIR:?KDP_BUILD_DIR: the build tree}

kc() { cluster kubectl "$@"; }
failure_report() { kdp_report kdp-example; }
CLUSTER_TOOLS=ldd
. "$here/lib.sh"
T=$(( $(wait_s 120) * SLOW ))s          # each wait's deadline

cluster_up

"$here/kdp-image.sh" "$build" "$D/kdp.tar" kdp.local/kdp:test
"$here/oci-image.sh" "$D/busybox.tar" kdp.local/busybox:1 /bin/busybox "$(command -v busybox):/bin/busybox"
for i in kdp busybox; do cluster ctr images import "$D/$i.tar" >/dev/null 2>&1 || fail "ctr could not import $i.tar"; done

# the operator's steps: label the node, apply the kustomization
kc label node "$NODE1" example.com/widgets=true
kc apply -k "$here/example"
example_serving
[ -z "$(widgets "$NODE2")" ] || fail "node $NODE2 offers '$(widgets "$NODE2")' example.com/widget, not none"
echo "node $NODE2 offers no example.com/widget"

pod widgets-2 example.com/widget 2 'echo EXAMPLE_WIDGETS=$EXAMPLE_WIDGETS; /bin/busybox ls /dev/widget*'
kc wait pod/widgets-2 --for=jsonpath='{.status.phase}'=Succeeded --timeout="$T"
log=$(kc logs widgets-2)
# the example backend lists the IDs in Allocate's order, and the kubelet sends its set unsorted
# (devicemanager/manager.go: allocDevices.UnsortedList()): either order, nothing else
want=$'EXAMPLE_WIDGETS=widget-0,widget-2\n/dev/widget0\n/dev/widget2'
other=$'EXAMPLE_WIDGETS=widget-2,widget-0\n/dev/widget0\n/dev/widget2'
[ "$log" = "$want" ] || [ "$log" = "$other" ] || fail "widgets-2 logged '$log', not '$want' (IDs in either order)"
echo "widgets-2 log: ${log//$'\n'/ | }"
# what the kubelet allocated, from its device-manager checkpoint (a set: sorted here): the two widgets of NUMA node 0
# that kdpd's GetPreferredAllocation chose out of the eight available (widget-N is on NUMA node
# N % 2 at the default numa_nodes 2)
uid=$(kc get pod widgets-2 -o 'jsonpath={.metadata.uid}')
got=$(python3 -c 'import json,sys
for e in json.load(open(sys.argv[1]))["Data"]["PodDeviceEntries"]:
    if e["PodUID"] == sys.argv[2]: print(e["ContainerName"], e["ResourceName"], json.dumps({n: sorted(ids) for n, ids in e["DeviceIDs"].items()}))' \
        "$D/node1/kubelet/device-plugins/kubelet_internal_checkpoint" "$uid")
want='main example.com/widget {"0": ["widget-0", "widget-2"]}'
[ "$got" = "$want" ] || fail "the kubelet's checkpoint has '$got' for widgets-2, not '$want'"
echo "kubelet checkpoint: $got"

insufficient widgets-9 example.com/widget 9

# the liveness probe on /healthz never failed the pod: its container never restarted
restarts=$(kc -n kube-system get "$pod" -o 'jsonpath={.status.containerStatuses[0].restartCount}')
[ "$restarts" = 0 ] || fail "kdpd restarted $restarts times"

check_down
passed=1
