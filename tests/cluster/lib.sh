# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced by the cluster tests (after tests/procs.sh, with $here their directory): the skip
# when the machine cannot run a cluster, a cluster directory D of their own, taken down on every exit, and what cluster.sh down must leave as
# it found it.
#   cluster CMD ARGS...     cluster.sh CMD D ARGS...
#   fail MESSAGE            exit 1; on exit, unless passed=1: the test's own failure_report (if
#                           it defines one) while the cluster is up, then the logs' tails, D kept
#   pod POD RES N [SCRIPT]  a hostNetwork pod POD (namespace default, restartPolicy Never) of
#                           kdp.local/busybox:1 limited to N of RES, running `sh -c SCRIPT`
#                           (default true)
#   insufficient POD RES N  pod POD RES N stays Pending, the scheduler saying exactly that both
#                           nodes have too little of RES (deadline: $T)
#   check_down              cluster.sh down, then fail on any process of the cluster (its pods',
#                           shims' and forwarders' included), process naming D, process in a
#                           node's network namespace, mount under D, or difference from before
#                           sourcing (host paths, sysctls, cgroups, the machine's links, addresses,
#                           routes and iptables rules)
#   cluster_up              cluster.sh up, then fail unless the apiserver is v1.37.2 (the k8s
#                           set's pin)
#   kdp_report DAEMONSET    for a failure_report: every pod, kdp's pods described, the last 30
#                           lines of kube-system/DAEMONSET's log
#   until_is WANT WHAT CMD...  runs CMD until it prints exactly WANT, every 0.5 s; fail, naming
#                           WHAT and CMD's last output, after wait_s 60 (times SLOW)
#   widgets [NODE]          NODE's allocatable example.com/widget (default NODE1)
#   example_serving         waits for kube-system/kdp-example's rollout, its one pod (the
#                           DaemonSet's only one: on NODE1, the one node labelled
#                           example.com/widgets=true) Ready (sets pod to pod/NAME), and exactly 8
#                           example.com/widget allocatable on NODE1
#   NODE1 NODE2             the nodes' names (and InternalIPs)
# skipped (77) unless root, with the tools every cluster needs and those the test names in
# CLUSTER_TOOLS
[ "$(id -u)" = 0 ] || { echo "SKIP: a kubelet and containerd need root"; exit 77; }
for t in unshare nsenter runc gcc openssl curl busybox socat ip ${CLUSTER_TOOLS:-}; do
        command -v "$t" >/dev/null || { echo "SKIP: no $t (scripts/install-deps)"; exit 77; }
done
NODE1=127.0.0.1 NODE2=127.0.0.2
D=$(mktemp -d /tmp/kdp-cluster.XXXXXX)
cluster() { "$here/cluster.sh" "$1" "$D" "${@:2}"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
passed=0
finish() {
        [ "$passed" = 1 ] || ! declare -F failure_report >/dev/null || failure_report >&2 || true
        cluster down >/dev/null 2>&1 || true
        if [ "$passed" = 1 ]; then rm -rf "$D"; else
                echo "cluster logs kept in $D/logs" >&2
                for f in "$D"/logs/*.log; do echo "--- $f"; tail -n 15 "$f"; done >&2
        fi
}
on_exit finish

cluster_up() {
        local v
        cluster up
        v=$(cluster kubectl version -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])')
        echo "Kubernetes $v"
        [ "$v" = v1.37.2 ] || fail "server version $v, not v1.37.2"
}

kdp_report() {
        cluster kubectl get pods -A -o wide
        cluster kubectl -n kube-system describe pods -l app.kubernetes.io/name=kdp
        cluster kubectl -n kube-system logs "ds/$1" --tail 30
}

until_is() {
        local want=$1 what=$2 end
        shift 2
        end=$(deadline_ms "$(( $(wait_s 60) * SLOW ))")
        until [ "$("$@")" = "$want" ]; do
                [ "$(now_ms)" -lt "$end" ] || fail "$what is '$("$@")', not '$want'"
                sleep 0.5
        done
}

widgets() { cluster kubectl get node "${1:-$NODE1}" -o 'jsonpath={.status.allocatable.example\.com/widget}'; }

example_serving() {
        local t=$(( $(wait_s 120) * SLOW ))s on n
        cluster kubectl -n kube-system rollout status ds/kdp-example --timeout="$t"
        pod=$(cluster kubectl -n kube-system get pods -l app.kubernetes.io/component=example-device-plugin -o name)
        cluster kubectl -n kube-system wait "$pod" --for=condition=Ready --timeout="$t"
        on=$(cluster kubectl -n kube-system get "$pod" -o 'jsonpath={.spec.nodeName}')
        [ "$on" = "$NODE1" ] || fail "the DaemonSet's pod runs on '$on', not $NODE1"
        n=$(cluster kubectl -n kube-system get ds/kdp-example -o 'jsonpath={.status.desiredNumberScheduled}')
        [ "$n" = 1 ] || fail "the DaemonSet wants $n pods, not 1 (only $NODE1 is labelled)"
        echo "DaemonSet pod $pod Ready on $NODE1: the kubelet's probes on /readyz answered"
        until_is 8 "node $NODE1's allocatable example.com/widget" widgets
        echo "node allocatable: example.com/widget: $(widgets) on $NODE1"
}

pod() {
        cluster kubectl apply -f - <<YAML
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
    command: ["/bin/busybox", "sh", "-c", "${4:-true}"]
    resources: {limits: {$2: $3}}
YAML
}

insufficient() {
        local msg phase want
        pod "$1" "$2" "$3"
        cluster kubectl wait "pod/$1" --timeout="$T" \
                --for=jsonpath='{.status.conditions[?(@.type=="PodScheduled")].reason}'=Unschedulable
        msg=$(cluster kubectl get "pod/$1" -o 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].message}')
        phase=$(cluster kubectl get "pod/$1" -o 'jsonpath={.status.phase}')
        [ "$phase" = Pending ] || fail "$1 is $phase, not Pending"
        want="0/2 nodes are available: 2 Insufficient $2. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
        [ "$msg" = "$want" ] || fail "$1 PodScheduled says '$msg', not '$want'"
        echo "$1 Pending: $msg"
}

HOST_PATHS=(/var/lib/kubelet /var/log/containers /run/containerd /var/lib/cni /usr/libexec/kubernetes
            /root/.kube /var/run/netns /run/cdi /run/udev)
host_state() {
        local p
        for p in "${HOST_PATHS[@]}"; do [ -e "$p" ] && echo "exists $p"; done
        sysctl net.ipv4.ip_forward vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops \
                kernel.keys.root_maxkeys kernel.keys.root_maxbytes
        awk '$3 == "cgroup" { print $2 }' /proc/mounts | while read -r m; do ls "$m" | grep '^kdp-' | sed "s|^|$m/|"; done
        ip -o link show | awk '{ print "link", $2 }'
        ip -o addr show | awk '{ print "addr", $2, $4 }'
        ip route show table all | sed 's/^/route /; s/ expires [0-9]*sec//'
        # the rules, without their packet counters
        ! command -v iptables-save >/dev/null || iptables-save | grep -v '^#' | sed 's/ \[[0-9]*:[0-9]*\]$//'
        true
}

check_down() {
        local pids p f args m after netns=()
        pids=$(cat "$D"/run/*.pid; find /sys/fs/cgroup/pids/kdp-* -name cgroup.procs -exec cat {} + 2>/dev/null || true)
        for f in "$D"/run/containerd-*.pid; do
                netns+=("$(readlink "/proc/$(cat "$f")/ns/net")") || fail "no network namespace of $f"
        done
        [ "$(readlink /proc/self/ns/net)" != "${netns[0]}" ] || fail "node 1 runs in the machine's network namespace"
        cluster down
        for p in $pids; do proc_alive "$p" && fail "process $p ($(tr '\0' ' ' < /proc/$p/cmdline)) outlived down"; done
        for f in /proc/[0-9]*/cmdline; do
                mapfile -d '' args 2>/dev/null < "$f" || continue
                [[ "${args[*]}" == *"$D/"* ]] && fail "process ${f//[!0-9]/} (${args[*]}) names $D after down"
        done
        for f in /proc/[0-9]*/ns/net; do
                p=$(readlink "$f" 2>/dev/null) || continue
                for m in "${netns[@]}"; do
                        [ "$p" != "$m" ] || fail "process ${f//[!0-9]/} is in a node's network namespace ($m) after down"
                done
        done
        m=$(grep -F " $D/" /proc/self/mountinfo || true)
        [ -z "$m" ] || fail "mounts under $D after down: $m"
        after=$(host_state)
        [ "$before" = "$after" ] || fail "the machine differs after down: $(diff <(echo "$before") <(echo "$after"))"
        echo "down: no process, network namespace, mount, cgroup, sysctl, link, route, iptables rule or host directory left"
}
before=$(host_state)
