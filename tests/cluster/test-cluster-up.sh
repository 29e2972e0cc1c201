#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# cluster/up: cluster.sh brings a real two-node cluster up (Kubernetes v1.37.2): nodes 127.0.0.1
# and 127.0.0.2 Ready, each with that InternalIP and exactly the Node Feature Discovery labels
# deploy/'s DaemonSets select (node 1 the GPU one's, node 2 the SR-IOV and FPGA ones'), each in a
# network namespace of its own with its CNI bridge, the machine's links untouched. A pod of a
# locally built busybox image pinned to each node gets the first address of that node's pod
# subnet, reaches the apiserver at the kubernetes Service's ClusterIP (its answer to plain HTTP on
# its TLS port), logs exactly its lines
# (read through the apiserver from that node's kubelet) and exits 0; cluster.sh down leaves no
# process, network namespace, mount, cgroup, sysctl change, link, route or host directory.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../procs.sh"

kc() { cluster kubectl "$@"; }
failure_report() { kc get nodes -o wide --show-labels; kc get pods -A -o wide; kc describe pods; }
. "$here/lib.sh"
T=$(( $(wait_s 120) * SLOW ))s          # each wait's deadline

links_before=$(ip -o link show | awk '{ print $2 }')
cluster_up
nodes=$(kc get nodes -o 'jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}' | sort)
[ "$nodes" = $'127.0.0.1\n127.0.0.2' ] || fail "the nodes are '$nodes', not 127.0.0.1 and 127.0.0.2"

# node_labels NAME: the node's feature.node.kubernetes.io labels, one KEY=VALUE a line, sorted
node_labels() {
        kc get node "$1" -o json | python3 -c 'import json,sys
l = json.load(sys.stdin)["metadata"]["labels"]
print("\n".join(sorted(k + "=" + v for k, v in l.items() if k.startswith("feature.node.kubernetes.io/"))))'
}
nfd=feature.node.kubernetes.io
want_labels_1="$nfd/pci-0302_10de.present=true"
want_labels_2="$nfd/network-sriov.capable=true"$'\n'"$nfd/pci-1200_8086.present=true"
id=$(echo -n "$D" | sha256sum | cut -c1-8)
for n in 1 2; do
        node=127.0.0.$n
        ready=$(kc get node "$node" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')
        [ "$ready" = True ] || fail "node $node Ready is '$ready'"
        ip=$(kc get node "$node" -o 'jsonpath={.status.addresses[?(@.type=="InternalIP")].address}')
        [ "$ip" = "$node" ] || fail "node $node's InternalIP is '$ip', not $node"
        want=want_labels_$n; got=$(node_labels "$node")
        [ "$got" = "${!want}" ] || fail "node $node's labels are '$got', not '${!want}'"
        # the node's own network namespace: lo, its bridge (once a pod is up), nothing of the machine's
        pid=$(cat "$D/run/containerd-$n.pid")
        [ "$(readlink "/proc/$pid/ns/net")" != "$(readlink /proc/self/ns/net)" ] ||
                fail "node $node's containerd is in the machine's network namespace"
        echo "node $node Ready, InternalIP $ip, labels ${got//$'\n'/ }"
done

# busybox-static's binary as an image, imported on both nodes; a pod on each node's pod network
"$here/oci-image.sh" "$D/busybox.tar" kdp.local/busybox:1 /bin/busybox "$(command -v busybox):/bin/busybox"
for n in 1 2; do
        cluster ctr --node "$n" images import "$D/busybox.tar" >/dev/null 2>&1 || fail "ctr could not import busybox.tar on node $n"
done
answer="wget: server returned error: HTTP/1.0 400 Bad Request"
for n in 1 2; do
        kc apply -f - <<YAML
apiVersion: v1
kind: Pod
metadata: {name: hello-$n, namespace: default}
spec:
  nodeName: 127.0.0.$n
  restartPolicy: Never
  automountServiceAccountToken: false
  containers:
  - name: hello
    image: kdp.local/busybox:1
    imagePullPolicy: Never
    env:
    - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    command:
    - /bin/busybox
    - sh
    - -c
    - |
      read name < /etc/hostname
      echo pod \$name \$POD_IP
      echo kubernetes \$KUBERNETES_SERVICE_HOST:\$KUBERNETES_SERVICE_PORT
      # plain HTTP at the apiserver's TLS port: Go's TLS server answers it with a 400 (busybox's
      # wget has no TLS client to check the certificate with); the pod exits 0 on that answer only
      answer=\$(/bin/busybox wget -q -O - http://\$KUBERNETES_SERVICE_HOST:\$KUBERNETES_SERVICE_PORT/version 2>&1)
      echo "\$answer"
      [ "\$answer" = "$answer" ]
YAML
done
for n in 1 2; do
        kc wait pod/hello-$n --for=jsonpath='{.status.phase}'=Succeeded --timeout="$T" ||
                fail "hello-$n is $(kc get pod hello-$n -o 'jsonpath={.status.phase}'), not Succeeded"
        on=$(kc get pod hello-$n -o 'jsonpath={.spec.nodeName}')
        [ "$on" = 127.0.0.$n ] || fail "hello-$n ran on '$on', not 127.0.0.$n"
        code=$(kc get pod hello-$n -o 'jsonpath={.status.containerStatuses[0].state.terminated.exitCode}')
        [ "$code" = 0 ] || fail "hello-$n exited $code"
        log=$(kc logs hello-$n)
        want="pod hello-$n 10.222.$((n - 1)).2"$'\n'"kubernetes 10.223.0.1:443"$'\n'"$answer"
        [ "$log" = "$want" ] || fail "hello-$n logged '$log', not '$want'"
        echo "hello-$n on 127.0.0.$n: ${log//$'\n'/ | }"
        # its bridge, in the node's namespace
        br=$(nsenter --net="/proc/$(cat "$D/run/containerd-$n.pid")/ns/net" ip -o -4 addr show dev "kdp-$id-$n" | awk '{ print $4 }')
        [ "$br" = "10.222.$((n - 1)).1/24" ] || fail "node $n's bridge kdp-$id-$n has '$br', not 10.222.$((n - 1)).1/24"
done
links=$(ip -o link show | awk '{ print $2 }')
[ "$links" = "$links_before" ] || fail "the machine's links changed: $(diff <(echo "$links_before") <(echo "$links"))"
echo "the machine's links: unchanged (the bridges and the pods' veths are in the nodes' namespaces)"

check_down
passed=1
