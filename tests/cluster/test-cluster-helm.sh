#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# cluster/helm: kdp installed with Helm, the chart deploy/helm/kdp, on cluster.sh's real two-node
# cluster (Kubernetes v1.37.2), with the helm scripts/cluster-build builds. kdp's image, packed
# from the build tree by kdp-image.sh, is imported into node 1's containerd, the node labelled
# example.com/widgets=true; `helm install` with backend example and the image's tag and
# pullPolicy Never as values. The release is deployed, the DaemonSet's one pod runs on node 1 and
# becomes Ready, node 1 offers exactly 8 example.com/widget and node 2 none;
# `helm uninstall` removes the DaemonSet, its pod and its ConfigMap, and node 1's allocatable
# example.com/widget drops to 0 (the kubelet keeps the capacity of a plugin that went for 5
# minutes, docs/kubelet.md §2.3, with no device allocatable). cluster.sh down leaves nothing
# behind. Usage: test-cluster-helm.sh (KDP_BUILD_DIR: the build tree)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../procs.sh"

[ "$(id -u)" = 0 ] || { echo "SKIP: a kubelet and containerd need root"; exit 77; }
build=${KDP_BUILD_DIR:?KDP_BUILD_DIR: the build tree}
chart=$here/../../deploy/helm/kdp
# before the cluster is up: a first build takes minutes
helm_bin=$("$here/../../scripts/cluster-build" helm | awk '$1 == "helm" { print $2 "/helm" }')

kc() { cluster kubectl "$@"; }
# helm on this cluster; its caches and the client's discovery cache under D
helm() {
        HELM_CACHE_HOME="$D/helm/cache" HELM_CONFIG_HOME="$D/helm/config" HELM_DATA_HOME="$D/helm/data" \
                KUBECACHEDIR="$D/kube-cache" "$helm_bin" --kubeconfig "$D/admin.kubeconfig" "$@"
}
failure_report() {
        helm -n kube-system list
        kdp_report kdp-example
}
CLUSTER_TOOLS=ldd
. "$here/lib.sh"
T=$(( $(wait_s 120) * SLOW ))s          # each wait's deadline

cluster_up
echo "helm $(helm version --template '{{.Version}}')"

"$here/kdp-image.sh" "$build" "$D/kdp.tar" kdp.local/kdp:test
cluster ctr --node 1 images import "$D/kdp.tar" >/dev/null 2>&1 || fail "ctr could not import kdp.tar"

# the operator's steps: label the node, install the chart
kc label node "$NODE1" example.com/widgets=true
helm install kdp-example "$chart" --namespace kube-system --set backend=example \
        --set image.repository=kdp.local/kdp --set image.tag=test --set image.pullPolicy=Never
status=$(helm -n kube-system status kdp-example -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["info"]["status"])')
[ "$status" = deployed ] || fail "release kdp-example is $status, not deployed"
image=$(kc -n kube-system get ds/kdp-example -o 'jsonpath={.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].imagePullPolicy}')
[ "$image" = "kdp.local/kdp:test Never" ] || fail "the DaemonSet runs '$image', not 'kdp.local/kdp:test Never'"
secrets=$(kc -n kube-system get secrets -l owner=helm -o name)
[ "$secrets" = secret/sh.helm.release.v1.kdp-example.v1 ] || fail "helm's release secrets: '$secrets'"
echo "release kdp-example deployed: $image"
# what helm install adds to the chart's objects: its managed-by label and the release's annotations
labels=$(kc -n kube-system get ds/kdp-example -o 'jsonpath={.metadata.labels}')
want='{"app.kubernetes.io/component":"example-device-plugin","app.kubernetes.io/managed-by":"Helm","app.kubernetes.io/name":"kdp"}'
[ "$labels" = "$want" ] || fail "the DaemonSet's labels are $labels, not $want"
release=$(kc -n kube-system get ds/kdp-example -o 'jsonpath={.metadata.annotations.meta\.helm\.sh/release-name} {.metadata.annotations.meta\.helm\.sh/release-namespace}')
[ "$release" = "kdp-example kube-system" ] || fail "the DaemonSet's release annotations say '$release'"
example_serving
[ -z "$(widgets "$NODE2")" ] || fail "node $NODE2 offers '$(widgets "$NODE2")' example.com/widget, not none"

out=$(helm uninstall kdp-example --namespace kube-system)
[ "$out" = 'release "kdp-example" uninstalled' ] || fail "helm uninstall said '$out'"
kc -n kube-system wait "$pod" --for=delete --timeout="$T"
left=$(kc -n kube-system get ds,configmap,pods -l app.kubernetes.io/name=kdp -o name)
[ -z "$left" ] || fail "left after helm uninstall: $left"
# helm keeps each release's revisions in Secrets of its namespace, labelled owner=helm
releases=$(helm -n kube-system list -q; kc -n kube-system get secrets -l owner=helm -o name)
[ -z "$releases" ] || fail "releases after helm uninstall: $releases"
echo "helm uninstall: no DaemonSet, pod, ConfigMap or release left"
until_is 0 "node allocatable example.com/widget after uninstall" widgets
echo "node allocatable after uninstall: example.com/widget: $(widgets)"

check_down
passed=1
