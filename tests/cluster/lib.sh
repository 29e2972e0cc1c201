# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced by the cluster tests (after tests/procs.sh, with $here their directory): a cluster
# directory D of their own, taken down on every exit, and what cluster.sh down must leave as
# it found it.
#   cluster CMD ARGS...     cluster.sh CMD D ARGS...
#   fail MESSAGE            exit 1; on exit, unless passed=1: the test's own failure_report (if
#                           it defines one) while the cluster is up, then the logs' tails, D kept
#   check_down              cluster.sh down, then fail on any process of the cluster (its pods',
#                           shims' and forwarders' included), process naming D, process in a
#                           node's network namespace, mount under D, or difference from before
#                           sourcing (host paths, sysctls, cgroups, the machine's links, addresses,
#                           routes and iptables rules)
#   NODE1 NODE2             the nodes' names (and InternalIPs)
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

HOST_PATHS=(/var/lib/kubelet /var/log/containers /run/containerd /var/lib/cni /usr/libexec/kubernetes
            /root/.kube /var/run/netns)
NODE1=127.0.0.1 NODE2=127.0.0.2
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
