# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced by the cluster tests: what cluster.sh down must leave as it found it.
#   before=$(host_state)    before cluster.sh up
#   check_down              cluster.sh down, then fail (the caller's fail) on any process of the
#                           cluster (its pods' and shims' included), process naming D, mount
#                           under D, or difference from $before (host paths, sysctls, cgroups)
HOST_PATHS=(/var/lib/kubelet /var/log/containers /run/containerd /var/lib/cni /usr/libexec/kubernetes
            /root/.kube /var/run/netns)
host_state() {
        local p
        for p in "${HOST_PATHS[@]}"; do [ -e "$p" ] && echo "exists $p"; done
        sysctl net.ipv4.ip_forward vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops \
                kernel.keys.root_maxkeys kernel.keys.root_maxbytes
        awk '$3 == "cgroup" { print $2 }' /proc/mounts | while read -r m; do ls "$m" | grep '^kdp-' | sed "s|^|$m/|"; done
        true
}

check_down() {
        local pids p f args m after
        pids=$(cat "$D"/run/*.pid; find /sys/fs/cgroup/pids/kdp-* -name cgroup.procs -exec cat {} + 2>/dev/null || true)
        cluster down
        for p in $pids; do proc_alive "$p" && fail "process $p ($(tr '\0' ' ' < /proc/$p/cmdline)) outlived down"; done
        for f in /proc/[0-9]*/cmdline; do
                mapfile -d '' args 2>/dev/null < "$f" || continue
                [[ "${args[*]}" == *"$D/"* ]] && fail "process ${f//[!0-9]/} (${args[*]}) names $D after down"
        done
        m=$(grep -F " $D/" /proc/self/mountinfo || true)
        [ -z "$m" ] || fail "mounts under $D after down: $m"
        after=$(host_state)
        [ "$before" = "$after" ] || fail "the machine differs after down: $(diff <(echo "$before") <(echo "$after"))"
        echo "down: no process, mount, cgroup, sysctl or host directory left"
}
