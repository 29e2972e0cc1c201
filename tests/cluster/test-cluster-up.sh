#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# cluster/up: cluster.sh brings a real one-node cluster up (Kubernetes v1.37.2, node Ready), a
# hostNetwork pod of a locally built image runs and logs exactly its line, and cluster.sh down
# leaves no process, mount, cgroup, sysctl change or host directory behind.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../procs.sh"


. "$here/lib.sh"

cluster_up
ready=$(cluster kubectl get node 127.0.0.1 -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')
[ "$ready" = True ] || fail "node Ready is '$ready'"

# busybox-static's binary as an image, the pod runs it on the host's network
"$here/oci-image.sh" "$D/busybox.tar" kdp.local/busybox:1 /bin/busybox "$(command -v busybox):/bin/busybox"
cluster ctr images import "$D/busybox.tar" >/dev/null 2>&1
line="kdp cluster: hello from a hostNetwork pod"
cluster kubectl apply -f - <<YAML
apiVersion: v1
kind: Pod
metadata: {name: echo, namespace: default}
spec:
  hostNetwork: true
  restartPolicy: Never
  automountServiceAccountToken: false
  containers:
  - name: echo
    image: kdp.local/busybox:1
    imagePullPolicy: Never
    command: ["/bin/busybox", "echo", "$line"]
YAML
cluster kubectl wait pod/echo --for=jsonpath='{.status.phase}'=Succeeded --timeout="$(( $(wait_s 120) * SLOW ))s"
log=$(cluster kubectl logs echo)
[ "$log" = "$line" ] || fail "the pod logged '$log', not '$line'"
echo "pod log: $log"

check_down
passed=1
