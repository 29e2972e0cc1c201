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

[ "$(id -u)" = 0 ] || { echo "SKIP: a kubelet and containerd need root"; exit 77; }
for t in unshare nsenter runc gcc openssl curl busybox ldd socat ip; do
        command -v "$t" >/dev/null || { echo "SKIP: no $t (scripts/install-deps)"; exit 77; }
done
build=${KDP_BUILD_DIR:?KDP_BUILD_DIR: the build tree}

kc() { cluster kubectl "$@"; }
failure_report() {
        kc get pods -A -o wide
        kc -n kube-system describe pods -l app.kubernetes.io/name=kdp
        kc -n kube-system logs ds/kdp-example --tail 30
}
. "$here/lib.sh"
T=$(( $(wait_s 120) * SLOW ))s          # each wait's deadline

cluster up
v=$(kc version -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])')
echo "Kubernetes $v"
[ "$v" = v1.37.2 ] || fail "server version $v, not v1.37.2"

"$here/kdp-image.sh" "$build" "$D/kdp.tar" kdp.local/kdp:test
"$here/oci-image.sh" "$D/busybox.tar" kdp.local/busybox:1 /bin/busybox "$(command -v busybox):/bin/busybox"
for i in kdp busybox; do cluster ctr images import "$D/$i.tar" >/dev/null 2>&1 || fail "ctr could not import $i.tar"; done

# the operator's steps: label the node, apply the kustomization
kc label node "$NODE1" example.com/widgets=true
kc apply -k "$here/example"
kc -n kube-system rollout status ds/kdp-example --timeout="$T"
pod=$(kc -n kube-system get pods -l app.kubernetes.io/component=example-device-plugin -o name)
kc -n kube-system wait "$pod" --for=condition=Ready --timeout="$T"
on=$(kc -n kube-system get "$pod" -o 'jsonpath={.spec.nodeName}')
[ "$on" = "$NODE1" ] || fail "the DaemonSet's pod runs on '$on', not $NODE1"
n=$(kc -n kube-system get ds/kdp-example -o 'jsonpath={.status.desiredNumberScheduled}')
[ "$n" = 1 ] || fail "the DaemonSet wants $n pods, not 1 (only $NODE1 is labelled)"
echo "DaemonSet pod $pod Ready: the kubelet's probes on /readyz answered"

# widgets NODE: its allocatable example.com/widget
widgets() { kc get node "$1" -o 'jsonpath={.status.allocatable.example\.com/widget}'; }
end=$(deadline_ms "$(( $(wait_s 60) * SLOW ))")
until [ "$(widgets "$NODE1")" = 8 ]; do
        [ "$(now_ms)" -lt "$end" ] || fail "node allocatable example.com/widget is '$(widgets "$NODE1")', not 8"
        sleep 0.5
done
[ -z "$(widgets "$NODE2")" ] || fail "node $NODE2 offers '$(widgets "$NODE2")' example.com/widget, not none"
echo "node allocatable: example.com/widget: $(widgets "$NODE1") on $NODE1, none on $NODE2"

# pod NAME WIDGETS: a pod of busybox limited to WIDGETS example widgets
pod() {
        kc apply -f - <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: default}
spec:
  hostNetwork: true
  restartPolicy: Never
  automountServiceAccountToken: false
  containers:
  - name: main
    image: kdp.local/busybox:1
    imagePullPolicy: Never
    command: ["/bin/busybox", "sh", "-c", "echo EXAMPLE_WIDGETS=\$EXAMPLE_WIDGETS; /bin/busybox ls /dev/widget*"]
    resources: {limits: {example.com/widget: $2}}
YAML
}
pod widgets-2 2
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

pod widgets-9 9
kc wait pod/widgets-9 --for=jsonpath='{.status.conditions[?(@.type=="PodScheduled")].reason}'=Unschedulable --timeout="$T"
msg=$(kc get pod widgets-9 -o 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].message}')
phase=$(kc get pod widgets-9 -o 'jsonpath={.status.phase}')
[ "$phase" = Pending ] || fail "widgets-9 is $phase, not Pending"
want="0/2 nodes are available: 2 Insufficient example.com/widget. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
[ "$msg" = "$want" ] || fail "widgets-9 PodScheduled says '$msg', not '$want'"
echo "widgets-9 Pending: $msg"

# the liveness probe on /healthz never failed the pod: its container never restarted
restarts=$(kc -n kube-system get "$pod" -o 'jsonpath={.status.containerStatuses[0].restartCount}')
[ "$restarts" = 0 ] || fail "kdpd restarted $restarts times"

check_down
passed=1
