#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# cluster/gpu: the GPU backend installed from deploy/gpu/unprivileged on cluster.sh's real
# two-node cluster (Kubernetes v1.37.2), node 1 a simulated DGX H100 (tests/fixtures/nodes/
# gpu-h100x8: 8 H100s). A test image, kdp's files plus sim-node, umockdev's preload and the
# fixture (packed from the build tree by kdp-image.sh), runs kdpd under sim-node through the
# overlay gpu/. Node 1 gets the fixture's NVIDIA device nodes (its major:minor numbers) in its own
# /dev, which neither the host nor node 2 sees. Node 1 alone carries the NFD label the
# DaemonSet's affinity selects (cluster.sh up puts it): the DaemonSet wants exactly one pod, on
# node 1, which becomes Ready (the kubelet's startup, readiness and liveness probes on /readyz and
# /healthz); node 1 offers exactly 8 nvidia.com/gpu, and a Deployment of 2 GPUs, placed by the scheduler,
# gets two distinct fixture UUIDs in NVIDIA_VISIBLE_DEVICES and: with the shipped ConfigMap no
# device node; with nvidia_device_specs the GPUs' and the node-wide nodes through DeviceSpecs;
# with cdi the same nodes, injected by containerd from the spec kdpd wrote into the node's
# /var/run/cdi. A pod asking for 9 stays Pending on "Insufficient nvidia.com/gpu" of both nodes, and
# cluster.sh down leaves nothing behind. Usage: test-cluster-gpu.sh (KDP_BUILD_DIR: the build tree)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/../procs.sh"

build=${KDP_BUILD_DIR:?KDP_BUILD_DIR: the build tree}
PRELOAD=/usr/lib/x86_64-linux-gnu/libumockdev-preload.so.0
[ -e "$PRELOAD" ] || { echo "SKIP: no $PRELOAD (umockdev)"; exit 77; }
[ -x "$build/tests/sim-node/sim-node" ] || { echo "SKIP: sim-node is not built"; exit 77; }
# the nodes are made in node 1's /dev, over the host's: a host with NVIDIA's driver has them
[ ! -e /dev/nvidiactl ] || { echo "SKIP: this machine has NVIDIA device nodes of its own"; exit 77; }

NODE=127.0.0.1                          # the GPU node, node 1 (cluster.sh's NODE1)
FIXTURE=$root/tests/fixtures/nodes/gpu-h100x8
RES=nvidia.com/gpu
DS=kdp-gpu
SEL=app.kubernetes.io/component=gpu-device-plugin

kc() { cluster kubectl "$@"; }
failure_report() {
        kc get pods -A -o wide
        kc -n kube-system describe pods -l "$SEL"
        kc -n kube-system logs "ds/$DS" --tail 30
        kc describe pods -l app=gpu-2
}
CLUSTER_TOOLS=ldd
. "$here/lib.sh"
T=$(( $(wait_s 120) * SLOW ))s          # each wait's deadline

# the fixture's GPUs, from its procfs: UUID -> device minor
declare -A MINOR
for f in "$FIXTURE.files"/proc/driver/nvidia/gpus/*/information; do
        MINOR[$(sed -n 's/^GPU UUID: \t //p' "$f")]=$(sed -n 's/^Device Minor: \t //p' "$f")
done
[ "${#MINOR[@]}" = 8 ] || fail "the fixture lists ${#MINOR[@]} GPUs, not 8"

cluster_up

# what runc needs on the node for the device nodes Allocate and the CDI spec name: the fixture's
# NVIDIA nodes at its numbers (dev/.node/<name, '/' as '_'> -> MAJOR:MINOR), in node 1's /dev
# only (cluster.sh's overlay; there is no driver behind them, and nothing opens them)
for l in "$FIXTURE.files"/dev/.node/nvidia*; do
        n=${l##*/}; n=/dev/${n//_//}; num=$(readlink "$l")
        cluster node --node 1 mkdir -p "$(dirname "$n")"
        cluster node --node 1 mknod -m 666 "$n" c "${num%:*}" "${num#*:}"
done
[ "$(cluster node --node 1 stat -c %t:%T /dev/nvidia3 /dev/nvidia-uvm)" = $'c3:3\nea:0' ] ||
        fail "node 1's /dev/nvidia3 and /dev/nvidia-uvm are not 195:3 and 234:0"
[ ! -e /dev/nvidia0 ] || fail "node 1's /dev/nvidia0 shows on the host"
cluster node --node 2 test ! -e /dev/nvidia0 || fail "node 1's /dev/nvidia0 shows on node 2"

"$here/kdp-image.sh" "$build" "$D/kdp-sim.tar" kdp.local/kdp-sim:test \
        "$build/tests/sim-node/sim-node:/opt/kdp/sim/sim-node" "$(realpath "$PRELOAD"):$PRELOAD" \
        "$FIXTURE.umockdev:/opt/kdp/sim/nodes/gpu-h100x8.umockdev" \
        "$FIXTURE.files:/opt/kdp/sim/nodes/gpu-h100x8.files"
"$here/oci-image.sh" "$D/busybox.tar" kdp.local/busybox:1 /bin/busybox "$(command -v busybox):/bin/busybox"
for i in kdp-sim busybox; do cluster ctr images import "$D/$i.tar" >/dev/null 2>&1 || fail "ctr could not import $i.tar"; done

# the operator's step (NFD's label for an NVIDIA 3D controller, class 0302 vendor 10de, is on
# node 1 since cluster.sh up): apply
kc apply -k "$here/gpu"

gpus() { kc get node "$NODE" -o "jsonpath={.status.allocatable.nvidia\.com/gpu}"; }
# ready: the DaemonSet rolled out, wanting one pod (NODE's: node 2 has no GPU label), that pod
# on NODE Ready, the node offering 8 GPUs
ready() {
        local end n
        kc -n kube-system rollout status "ds/$DS" --timeout="$T"
        n=$(kc -n kube-system get "ds/$DS" -o 'jsonpath={.status.desiredNumberScheduled}')
        [ "$n" = 1 ] || fail "the DaemonSet wants $n pods, not 1 (only $NODE is labelled)"
        end=$(deadline_ms "$(( $(wait_s 60) * SLOW ))")
        until [ "$(kc -n kube-system get pods -l "$SEL" -o name | wc -l)" = 1 ]; do
                [ "$(now_ms)" -lt "$end" ] || fail "the old kdp-gpu pod is still there"
                sleep 0.5
        done
        POD=$(kc -n kube-system get pods -l "$SEL" -o name)
        kc -n kube-system wait "$POD" --for=condition=Ready --timeout="$T"
        n=$(kc -n kube-system get "$POD" -o 'jsonpath={.spec.nodeName}')
        [ "$n" = "$NODE" ] || fail "$POD runs on '$n', not $NODE"
        until [ "$(gpus)" = 8 ]; do
                [ "$(now_ms)" -lt "$end" ] || fail "node allocatable $RES is '$(gpus)', not 8"
                sleep 0.5
        done
}
ready
echo "DaemonSet pod $POD Ready on $NODE: the kubelet's probes on /readyz answered"
echo "node allocatable: $RES: $(gpus)"

# config YAML: the ConfigMap's config.yaml edited, the DaemonSet restarted (as its comment says)
config() {
        kc -n kube-system patch configmap kdp-gpu-config --type merge \
                -p "$(python3 -c 'import json,sys; print(json.dumps({"data": {"config.yaml": sys.argv[1]}}))' "$1")"
        kc -n kube-system rollout restart "ds/$DS"
        ready
        echo "config '${1//$'\n'/ }': $POD Ready, $RES: $(gpus)"
}

# gpu2 NODES: a Deployment of busybox limited to 2 GPUs; its container's NVIDIA_VISIBLE_DEVICES
# must hold two distinct UUIDs of the fixture, and its /dev/nvidia* be those two GPUs' nodes and
# the node-wide ones (NODES=yes) or none (NODES=no)
gpu2() {
        local pod log end ids want m
        kc apply -f - <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: gpu-2, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: gpu-2}}
  template:
    metadata: {labels: {app: gpu-2}}
    spec:
      hostNetwork: true
      automountServiceAccountToken: false
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: kdp.local/busybox:1
        imagePullPolicy: Never
        command: ["/bin/busybox", "sh", "-c", "echo NVIDIA_VISIBLE_DEVICES=\$NVIDIA_VISIBLE_DEVICES; for f in /dev/nvidia*; do [ -e \$f ] && /bin/busybox stat -c '%n %F %t:%T' \$f; done; echo end; exec /bin/busybox sleep 1000000"]
        resources: {limits: {nvidia.com/gpu: 2}}
YAML
        kc rollout status deploy/gpu-2 --timeout="$T"
        pod=$(kc get pods -l app=gpu-2 -o name)
        [ "$(kc get "$pod" -o 'jsonpath={.spec.nodeName}')" = "$NODE" ] || fail "$pod was not scheduled onto $NODE"
        end=$(deadline_ms "$(( $(wait_s 60) * SLOW ))")
        until log=$(kc logs "$pod") && [ "${log##*$'\n'}" = end ]; do
                [ "$(now_ms)" -lt "$end" ] || fail "$pod logged '$log', without its last line 'end'"
                sleep 0.5
        done
        ids=$(head -n 1 <<<"$log")
        ids=${ids#NVIDIA_VISIBLE_DEVICES=}
        IFS=, read -r -a U <<<"$ids"
        [ "${#U[@]}" = 2 ] && [ "${U[0]}" != "${U[1]}" ] && [ -n "${MINOR[${U[0]}]:-}" ] && [ -n "${MINOR[${U[1]}]:-}" ] ||
                fail "$pod has NVIDIA_VISIBLE_DEVICES='$ids', not two distinct GPUs of the fixture"
        want="NVIDIA_VISIBLE_DEVICES=$ids"
        if [ "$1" = yes ]; then
                want+=$'\n'$( { for m in "${MINOR[${U[0]}]}" "${MINOR[${U[1]}]}"; do
                                        printf '/dev/nvidia%s character special file c3:%x\n' "$m" "$m"; done
                                printf '%s\n' '/dev/nvidia-modeset character special file c3:fe' \
                                        '/dev/nvidia-uvm character special file ea:0' \
                                        '/dev/nvidia-uvm-tools character special file ea:1' \
                                        '/dev/nvidiactl character special file c3:ff'; } | LC_ALL=C sort)
        fi
        want+=$'\nend'
        log=$( { head -n 1 <<<"$log"; sed '1d;$d' <<<"$log" | LC_ALL=C sort; echo end; } )
        [ "$log" = "$want" ] || fail "$pod logged (nodes sorted) '$log', not '$want'"
        echo "$pod on $NODE: ${log//$'\n'/ | }"
        kc delete deploy/gpu-2 --wait=true
        kc wait "$pod" --for=delete --timeout="$T"
}

# the shipped ConfigMap: the UUIDs only (the NVIDIA container runtime would add the nodes)
gpu2 no
# DeviceSpecs: the kubelet hands them to containerd, which stats each host path in the node
config $'gpu:\n  nvidia_device_specs: true\n'
gpu2 yes
# CDI: Allocate names nvidia.com/gpu=<UUID>, containerd resolves them in DIR/node1/cdi (node 1's
# /var/run/cdi, where the DaemonSet's hostPath puts kdpd's spec) and injects the nodes
config $'gpu:\n  cdi: true\n'
spec=$D/node1/cdi/kdp-nvidia.com-gpu.json
n=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["kind"], len(s["devices"]))' "$spec") ||
        fail "no CDI spec $spec"
[ "$n" = "nvidia.com/gpu 8" ] || fail "the CDI spec has kind and devices '$n', not 'nvidia.com/gpu 8'"
echo "CDI spec $spec: kind $n devices"
gpu2 yes

insufficient gpu-9 $RES 9

# the liveness probe on /healthz never failed the last kdpd: its container never restarted
restarts=$(kc -n kube-system get "$POD" -o 'jsonpath={.status.containerStatuses[0].restartCount}')
[ "$restarts" = 0 ] || fail "kdpd restarted $restarts times"

check_down
[ ! -e /dev/nvidia0 ] || fail "/dev/nvidia0 on the host after down"
passed=1
