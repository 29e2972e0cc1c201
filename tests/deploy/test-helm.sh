#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# deploy/helm-lint and deploy/helm-template: the chart deploy/helm/kdp, with the helm that
# scripts/cluster-build builds (set helm: helm.sh/helm/v4 at the version tests/cluster/helm/go.mod
# pins; built once per machine, then cached).
#
#   test-helm.sh SRCDIR lint        helm is that version; `helm lint --strict` passes the chart
#                                   with each backend
#   test-helm.sh SRCDIR template    helm-template.js: each overlay of deploy/ and its values
#                                   render the same objects (KDP_KUBECTL: the kubectl, as for
#                                   deploy/schema)
#
# Skipped (77) when Go is not installed (no helm can be built) or, for template, node. helm's
# cache, config and data directories are a temporary directory's.
set -euo pipefail
src=${1:?usage: test-helm.sh SRCDIR lint|template}
{ command -v go || [ -x /usr/local/go/bin/go ]; } >/dev/null || { echo "SKIP: no Go to build helm with"; exit 77; }
helm=$("$src/scripts/cluster-build" helm | awk '$1 == "helm" { print $2 "/helm" }')
chart=$src/deploy/helm/kdp
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HELM_CACHE_HOME=$tmp/cache HELM_CONFIG_HOME=$tmp/config HELM_DATA_HOME=$tmp/data

case $2 in
lint)
        want=$(awk '$1 == "helm.sh/helm/v4" { print $2 }' "$src/tests/cluster/helm/go.mod")
        v=$("$helm" version --template '{{.Version}}')
        failed=0
        if [ "$v" = "$want" ]; then echo "ok   helm $v"; else echo "FAIL helm is $v, not $want"; failed=1; fi
        for b in gpu sriov fpga example; do
                if out=$("$helm" lint --strict --set backend="$b" "$chart" 2>&1) &&
                   [ "$(tail -n 1 <<<"$out")" = "1 chart(s) linted, 0 chart(s) failed" ]; then
                        echo "ok   helm lint --strict --set backend=$b"
                else
                        echo "FAIL helm lint --strict --set backend=$b"; sed 's/^/       /' <<<"$out"; failed=1
                fi
        done
        exit $failed ;;
template)
        node=$(command -v node || command -v nodejs) || { echo "SKIP: node is not installed"; exit 77; }
        exec "$node" "$src/tests/deploy/helm-template.js" "$src" "$helm" ;;
*) echo "test-helm.sh: lint or template, not $2" >&2; exit 2 ;;
esac
