#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A one-node Kubernetes cluster on loopback, every file of it under DIR:
#
#   cluster.sh up DIR       certificates, kubeconfigs, etcd, kube-apiserver, kube-controller-manager,
#                           kube-scheduler, containerd and one kubelet; returns once the node is Ready
#                           and the default ServiceAccount exists (exit 1 naming what did not come up)
#   cluster.sh down DIR     stops all of it and undoes what it changed on the machine; works after a
#                           failed or partial up, and when nothing is up
#   cluster.sh kubectl DIR ARGS...   kubectl as the cluster's admin
#   cluster.sh ctr DIR ARGS...       ctr on the node's containerd, namespace k8s.io (the kubelet's):
#                           `ctr DIR images import IMAGE.tar` makes an image of oci-image.sh usable
#   cluster.sh node DIR CMD...       CMD in the node's mount namespace: `node DIR mknod /dev/x c 1 2`
#                           adds a device node that only the node's /dev shows
#
# Ports (127.0.0.1 only) start at KDP_CLUSTER_PORT (default 26400): etcd client +0, etcd peer +1,
# kube-apiserver +2, controller-manager +3, scheduler +4, kubelet +5, kubelet healthz +6.
# What up changes outside DIR, and down undoes (recorded under DIR/run):
#   - cgroup v1: /kdp-<id> under each hierarchy, the kubelet's cgroup root (pods go below it)
#   - the sysctls the kubelet and the CNI bridge set (SYSCTLS): restored
#   - the empty directories NODE_BINDS needs as mount points, where missing: removed
#   - the CNI bridge kdpcni0 of pods that are not hostNetwork: deleted
# containerd (with its shims and pods) and the kubelet run in a mount namespace of their own, in
# which the paths they use whatever their configuration show directories under DIR (NODE_BINDS)
# and /dev is the host's with a layer of the node's own over it (node_ns); their mounts stay in
# it, unseen by the host, and go with its last process.
# Binaries: scripts/cluster-build (built once, cached).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$root/tests/procs.sh"

K8S_VERSION=v1.37.2
PORT=${KDP_CLUSTER_PORT:-26400}
NODE=127.0.0.1          # the node's name: an IP, so its InternalIP is loopback (see README.md)
PAUSE_IMAGE=kdp.local/pause:1
SYSCTLS=(net.ipv4.ip_forward vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
         kernel.keys.root_maxkeys kernel.keys.root_maxbytes)
# the order of starting; down stops them in reverse
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet)
# what up makes under DIR
STATE_DIRS=(logs run etcd controller-manager pod-logs pki images containerd cdi cni kubelet log-containers kube-cache
            udev node-dev
            admin.kubeconfig controller-manager.kubeconfig scheduler.kubeconfig kubelet.kubeconfig
            kubelet.yaml)
# SRC:DEST, DIR's SRC bound on DEST in the node's mount namespace: the kubelet's root-dir (given
# as /var/lib/kubelet, its default: the device-plugin socket and checkpoint are there whatever
# --root-dir says, and DaemonSets mount hostPaths under it), its symlinks to the pod logs,
# the shims' sockets (under /run/containerd whatever containerd's state dir), the CNI
# library's cache of results (/var/lib/cni, not configurable in containerd), and two that
# deploy/'s DaemonSets mount as hostPaths: the CDI directory they write specs into
# (/var/run/cdi, containerd's default; its cdi_spec_dirs names DIR/cdi, the same directory) and
# udevd's /run/udev (DirectoryOrCreate: the node's own, empty, never the host's)
node_binds() {
        NODE_BINDS=("$D/kubelet:/var/lib/kubelet"
                    "$D/log-containers:/var/log/containers"
                    "$D/containerd/run:/run/containerd"
                    "$D/cni/cache:/var/lib/cni"
                    "$D/cdi:/var/run/cdi"
                    "$D/udev:/run/udev")
}

say() { echo "cluster: $*" >&2; }
die() { say "$*"; exit 1; }

# ---- binaries and images ---------------------------------------------------------------------

binaries() {
        local set dir
        while read -r set dir; do
                case $set in
                k8s) K8S_BIN=$dir ;; etcd) ETCD_BIN=$dir ;; containerd) CONTAINERD_BIN=$dir ;;
                esac
        done < <("$root/scripts/cluster-build" k8s etcd containerd)
        [ -n "${K8S_BIN:-}" ] && [ -n "${ETCD_BIN:-}" ] && [ -n "${CONTAINERD_BIN:-}" ] ||
                die "scripts/cluster-build gave no binaries"
        command -v runc >/dev/null || die "no runc on the PATH (scripts/install-deps installs it)"
        [ -x /usr/lib/cni/bridge ] || die "no /usr/lib/cni/bridge (containernetworking-plugins)"
}

# pause.tar: the sandbox image, a static pause program
images() {
        mkdir -p "$D/images"
        gcc -static -O2 -o "$D/images/pause" "$here/pause.c"
        "$here/oci-image.sh" "$D/images/pause.tar" "$PAUSE_IMAGE" /pause "$D/images/pause:/pause"
}

# ---- certificates and kubeconfigs ------------------------------------------------------------

# cert NAME SUBJECT EXT: a key and a certificate signed by the cluster CA, with extensions EXT
cert() {
        local p=$D/pki
        openssl req -new -newkey rsa:2048 -nodes -keyout "$p/$1.key" -subj "$2" -out "$p/$1.csr" 2>/dev/null
        printf '%s\n' "$3" > "$p/$1.ext"
        openssl x509 -req -in "$p/$1.csr" -CA "$p/ca.crt" -CAkey "$p/ca.key" -CAcreateserial \
                -days 30 -sha256 -extfile "$p/$1.ext" -out "$p/$1.crt" 2>/dev/null
}

pki() {
        local p=$D/pki client server
        mkdir -p "$p"
        openssl req -x509 -new -newkey rsa:2048 -nodes -keyout "$p/ca.key" -subj "/CN=kdp-cluster-ca" \
                -days 30 -sha256 -out "$p/ca.crt" 2>/dev/null
        client=$'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth'
        server=$'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth'
        cert apiserver "/CN=kube-apiserver" "$server"$'\nsubjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc'
        cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "$client"
        cert admin "/O=system:masters/CN=kdp-admin" "$client"
        cert controller-manager "/CN=system:kube-controller-manager" "$client"
        cert scheduler "/CN=system:kube-scheduler" "$client"
        cert kubelet-client "/O=system:nodes/CN=system:node:$NODE" "$client"
        cert kubelet-server "/CN=$NODE" "$server"$'\nsubjectAltName=IP:127.0.0.1,DNS:localhost'
        openssl genrsa -out "$p/sa.key" 2048 2>/dev/null
        openssl rsa -in "$p/sa.key" -pubout -out "$p/sa.pub" 2>/dev/null
}

# kubeconfig NAME CERT: DIR/NAME.kubeconfig, authenticating with pki/CERT.{crt,key}
kubeconfig() {
        local f=$D/$1.kubeconfig k=$K8S_BIN/kubectl
        "$k" --kubeconfig "$f" config set-cluster kdp --server "https://127.0.0.1:$((PORT + 2))" \
                --certificate-authority "$D/pki/ca.crt" --embed-certs >/dev/null
        "$k" --kubeconfig "$f" config set-credentials "$2" --client-certificate "$D/pki/$2.crt" \
                --client-key "$D/pki/$2.key" --embed-certs >/dev/null
        "$k" --kubeconfig "$f" config set-context kdp --cluster kdp --user "$2" >/dev/null
        "$k" --kubeconfig "$f" config use-context kdp >/dev/null
}

# ---- configuration files ---------------------------------------------------------------------

containerd_config() {
        local c=$D/containerd
        mkdir -p "$c" "$D/cdi" "$D/cni/net.d"
        cat > "$c/config.toml" <<EOF
version = 4
root = '$c/root'
state = '$c/state'
temp = '$c/tmp'
imports = []
disabled_plugins = ['io.containerd.nri.v1.nri', 'io.containerd.internal.v1.opt']

[plugins.'io.containerd.server.v1.grpc']
  address = '$c/containerd.sock'
[plugins.'io.containerd.server.v1.ttrpc']
  address = '$c/containerd.sock.ttrpc'

[plugins.'io.containerd.cri.v1.images']
  snapshotter = '${SNAPSHOTTER:-overlayfs}'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = '$PAUSE_IMAGE'

[plugins.'io.containerd.cri.v1.runtime']
  # CDI is always on in containerd 2.4 (its enable_cdi is gone: ignored, with a warning)
  # no CAP_SYS_RESOURCE here: a sandbox's oom_score_adj of -998 would fail runc's create
  restrict_oom_score_adj = true
  cdi_spec_dirs = ['$D/cdi']
  netns_mounts_under_state_dir = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = 'runc'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = 'io.containerd.runc.v2'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = '$(command -v runc)'
        Root = '$c/runc'
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ['/usr/lib/cni']
    conf_dir = '$D/cni/net.d'

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = '127.0.0.1'
  stream_server_port = '0'
EOF
        # a private bridge for pods that are not hostNetwork: no masquerade, no route out
        cat > "$D/cni/net.d/10-kdp.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "kdp",
  "plugins": [
    { "type": "bridge", "bridge": "kdpcni0", "isGateway": true, "ipMasq": false,
      "ipam": { "type": "host-local", "dataDir": "$D/cni/ipam",
                "ranges": [[{ "subnet": "10.222.0.0/24" }]] } },
    { "type": "loopback" }
  ]
}
EOF
}

kubelet_config() {
        cat > "$D/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $((PORT + 5))
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $((PORT + 6))
tlsCertFile: $D/pki/kubelet-server.crt
tlsPrivateKeyFile: $D/pki/kubelet-server.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $D/pki/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$D/containerd/containerd.sock
cgroupDriver: cgroupfs
cgroupRoot: $CGROUP_ROOT
cgroupsPerQOS: true
failCgroupV1: false
podLogsDir: $D/pod-logs
volumePluginDir: $D/kubelet/volume-plugins
makeIPTablesUtilChains: false
rotateCertificates: false
serverTLSBootstrap: false
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
EOF
}

# ---- processes -------------------------------------------------------------------------------

# start NAME CMD...: CMD in a session of its own, output in DIR/logs/NAME.log, pid in DIR/run/NAME.pid
start() {
        local name=$1; shift
        setsid "$@" >"$D/logs/$name.log" 2>&1 </dev/null &
        echo $! > "$D/run/$name.pid"
}

# alive NAME: the component NAME is running
alive() {
        local pid
        pid=$(cat "$D/run/$1.pid" 2>/dev/null) && proc_alive "$pid"
}

# wait_until WHAT SECONDS COMMAND...: COMMAND succeeds before the deadline, while every started
# component runs; else the reason, the log's tail and exit 1
wait_until() {
        local what=$1 secs=$2 end c; end=$(deadline_ms "$2"); shift 2
        until "$@" >/dev/null 2>&1; do
                for c in "${COMPONENTS[@]}"; do
                        [ -e "$D/run/$c.pid" ] && ! alive "$c" && {
                                tail -n 20 "$D/logs/$c.log" >&2; die "$c exited while waiting for $what"; }
                done
                [ "$(now_ms)" -lt "$end" ] || die "no $what within $secs s (SLOW=$SLOW): $*"
                sleep 0.5
        done
}

kc() { "$K8S_BIN/kubectl" --kubeconfig "$D/admin.kubeconfig" --cache-dir "$D/kube-cache" "$@"; }

https_ok() { curl -sf --cacert "$D/pki/ca.crt" --cert "$D/pki/admin.crt" --key "$D/pki/admin.key" "$1"; }

node_ready() {
        [ "$(kc get node "$NODE" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')" = True ]
}

# ---- what up changes on the machine ----------------------------------------------------------

# each cgroup v1 hierarchy's mount point
cgroup_mounts() { awk '$3 == "cgroup" { print $2 }' /proc/mounts; }

make_cgroups() {
        local m g
        : > "$D/run/cgroups"
        for m in $(cgroup_mounts); do
                g=$m$CGROUP_ROOT
                [ -d "$g" ] && continue
                mkdir "$g"
                echo "$g" >> "$D/run/cgroups"
                if [ -e "$g/cpuset.cpus" ]; then
                        cat "$m/cpuset.cpus" > "$g/cpuset.cpus"
                        cat "$m/cpuset.mems" > "$g/cpuset.mems"
                fi
        done
}

save_host_state() {
        local s
        [ -e "$D/run/sysctls" ] || for s in "${SYSCTLS[@]}"; do
                echo "$s $(sysctl -n "$s")"
        done > "$D/run/sysctls"
}

# the sources and mount points of NODE_BINDS; each host directory made is listed in DIR/run/dirs
make_bind_dirs() {
        local b dest made=()
        for b in "${NODE_BINDS[@]}"; do
                mkdir -p "${b%%:*}"
                dest=${b#*:}
                while [ ! -d "$dest" ]; do made=("$dest" "${made[@]}"); dest=$(dirname "$dest"); done
        done
        for dest in "${made[@]}"; do mkdir "$dest" && echo "$dest" >> "$D/run/dirs"; done
}

# NODE_NS: a command prefix; what follows it runs in a new mount namespace where /dev is an
# overlay (the host's /dev below, a tmpfs on DIR/node-dev above: a device node made in the
# node's /dev exists in the node only, and goes with it; the host's submounts of /dev, pts and
# shm, bound again on top) and NODE_BINDS are bound (the same pid: each step execs the next)
node_ns() {
        NODE_NS=(unshare --mount --propagation slave -- bash -c 'set -e
                d=$1; shift
                mount -t tmpfs -o mode=755 kdp-node-dev "$d"
                mkdir "$d/host" "$d/upper" "$d/work"
                mount --rbind /dev "$d/host"
                mount -t overlay -o "lowerdir=$d/host,upperdir=$d/upper,workdir=$d/work" kdp-node-dev /dev
                for m in $(awk -v p="$d/host/" "index(\$5, p) == 1 { print substr(\$5, length(p) + 1) }" \
                                /proc/self/mountinfo | grep -v / | sort -u); do
                        mount --rbind "$d/host/$m" "/dev/$m"
                done
                while [ "$1" != -- ]; do mount --bind "${1%%:*}" "${1#*:}"; shift; done
                shift; exec "$@"' node-ns "$D/node-dev" "${NODE_BINDS[@]}" --)
}

# ---- up --------------------------------------------------------------------------------------

up() {
        [ -e "$D/run" ] && die "$D/run exists: the cluster is up or was not taken down; run: $0 down $D"
        [ -z "$(mounts_under)" ] && [ -z "$(dir_pids)" ] || die "mounts or processes under $D: run: $0 down $D"
        # a cluster of its own each time: what an earlier up left goes (its logs with it)
        rm -rf "${STATE_DIRS[@]/#/$D/}"
        mkdir -p "$D/logs" "$D/run" "$D/etcd" "$D/pod-logs"
        local port
        for ((port = PORT; port <= PORT + 6; port++)); do
                [ -z "$(ss -ltnH "sport = :$port")" ] ||
                        die "port $port is taken: the cluster needs $PORT-$((PORT + 6)) (KDP_CLUSTER_PORT)"
        done
        binaries
        CGROUP_ROOT=/kdp-$(echo -n "$D" | sha256sum | cut -c1-8)
        echo "$CGROUP_ROOT" > "$D/run/cgroup-root"
        save_host_state
        make_cgroups
        mkdir -p "$D/node-dev"
        node_binds; make_bind_dirs; node_ns
        pki; images
        kubeconfig admin admin
        kubeconfig controller-manager controller-manager
        kubeconfig scheduler scheduler
        kubeconfig kubelet kubelet-client
        containerd_config; kubelet_config

        start etcd "$ETCD_BIN/etcd" --name kdp --data-dir "$D/etcd" \
                --listen-client-urls "http://127.0.0.1:$PORT" --advertise-client-urls "http://127.0.0.1:$PORT" \
                --listen-peer-urls "http://127.0.0.1:$((PORT + 1))" \
                --initial-advertise-peer-urls "http://127.0.0.1:$((PORT + 1))" \
                --initial-cluster "kdp=http://127.0.0.1:$((PORT + 1))"
        # containerd finds containerd-shim-runc-v2 on its PATH
        PATH=$CONTAINERD_BIN:$PATH start containerd "${NODE_NS[@]}" "$CONTAINERD_BIN/containerd" \
                --config "$D/containerd/config.toml"
        wait_until "etcd health" 60 curl -sf "http://127.0.0.1:$PORT/health"

        local p=$D/pki
        start kube-apiserver "$K8S_BIN/kube-apiserver" \
                --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port $((PORT + 2)) \
                --etcd-servers "http://127.0.0.1:$PORT" \
                --tls-cert-file "$p/apiserver.crt" --tls-private-key-file "$p/apiserver.key" \
                --client-ca-file "$p/ca.crt" \
                --kubelet-client-certificate "$p/apiserver-kubelet-client.crt" \
                --kubelet-client-key "$p/apiserver-kubelet-client.key" \
                --kubelet-certificate-authority "$p/ca.crt" \
                --kubelet-preferred-address-types InternalIP \
                --service-account-issuer https://kubernetes.default.svc \
                --service-account-key-file "$p/sa.pub" --service-account-signing-key-file "$p/sa.key" \
                --service-cluster-ip-range 10.223.0.0/24 --endpoint-reconciler-type none \
                --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
                --allow-privileged=true
        wait_until "kube-apiserver /readyz" 120 https_ok "https://127.0.0.1:$((PORT + 2))/readyz"

        start kube-controller-manager "$K8S_BIN/kube-controller-manager" \
                --bind-address 127.0.0.1 --secure-port $((PORT + 3)) \
                --kubeconfig "$D/controller-manager.kubeconfig" \
                --authentication-kubeconfig "$D/controller-manager.kubeconfig" \
                --authorization-kubeconfig "$D/controller-manager.kubeconfig" \
                --service-account-private-key-file "$p/sa.key" --root-ca-file "$p/ca.crt" \
                --use-service-account-credentials --leader-elect=false \
                --flex-volume-plugin-dir "$D/controller-manager/volume-plugins"
        start kube-scheduler "$K8S_BIN/kube-scheduler" \
                --bind-address 127.0.0.1 --secure-port $((PORT + 4)) \
                --kubeconfig "$D/scheduler.kubeconfig" \
                --authentication-kubeconfig "$D/scheduler.kubeconfig" \
                --authorization-kubeconfig "$D/scheduler.kubeconfig" --leader-elect=false

        local ctr=("$CONTAINERD_BIN/ctr" --address "$D/containerd/containerd.sock" -n k8s.io)
        wait_until "containerd" 60 "${ctr[@]}" version
        "${ctr[@]}" images import "$D/images/pause.tar" >>"$D/logs/ctr.log" 2>&1 ||
                { cat "$D/logs/ctr.log" >&2; die "ctr could not import the pause image"; }

        # the kubelet joins containerd's mount namespace: the pods' volumes are its mounts
        start kubelet nsenter --mount="/proc/$(cat "$D/run/containerd.pid")/ns/mnt" -- \
                "$K8S_BIN/kubelet" --config "$D/kubelet.yaml" --kubeconfig "$D/kubelet.kubeconfig" \
                --root-dir /var/lib/kubelet --hostname-override "$NODE" --v 2
        wait_until "node $NODE Ready" 180 node_ready
        wait_until "ServiceAccount default/default" 60 kc get serviceaccount default -n default
        say "up: node $NODE Ready (kubectl: $0 kubectl $D ...)"
}

# ---- down ------------------------------------------------------------------------------------

# stop PID...: SIGTERM, then SIGKILL after 20 s; returns once each is gone
stop() {
        local pid end
        for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
        end=$(deadline_ms 20)
        for pid in "$@"; do
                while proc_alive "$pid" && [ "$(now_ms)" -lt "$end" ]; do sleep 0.2; done
                if proc_alive "$pid"; then
                        say "down: $pid ($(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | cut -c1-60)) outlived SIGTERM by 20 s: SIGKILL"
                        kill -KILL "$pid" 2>/dev/null || true
                fi
        done
        for pid in "$@"; do
                while [ -e "/proc/$pid" ] && proc_alive "$pid"; do sleep 0.1; done
        done
}

# the pids in the cgroups under the kubelet's cgroup root: the pods' processes
cgroup_pids() {
        local g
        for g in $(cat "$D/run/cgroups" 2>/dev/null); do
                find "$g" -name cgroup.procs -exec cat {} + 2>/dev/null
        done | sort -un
}

# processes with an argument naming a path under DIR (DIR/x or --flag=DIR/x): the shims
# (-address DIR/containerd/...), and what a killed component left; not this script, nor whoever
# called it with DIR (or DIR/) as an argument
dir_pids() {
        local f pid args a
        for f in /proc/[0-9]*/cmdline; do
                pid=${f#/proc/}; pid=${pid%/cmdline}
                [ "$pid" = $$ ] && continue
                mapfile -d '' args 2>/dev/null < "$f" || continue
                for a in "${args[@]}"; do
                        [[ $a == "$D/"?* || $a == *"=$D/"?* ]] && { echo "$pid"; break; }
                done
        done
        true
}

mounts_under() { awk -v d="$D/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r; }

down() {
        [ -d "$D" ] || { say "down: no $D"; return 0; }
        local c i pids m g s v
        for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do
                c=${COMPONENTS[i]}
                if [ "$c" = containerd ]; then
                        # the pods go first (SIGKILL: a container's pid 1 may ignore SIGTERM),
                        # then the shims that watch them
                        pids=$(cgroup_pids); [ -z "$pids" ] || { kill -KILL $pids 2>/dev/null; stop $pids; }
                        pids=$(dir_pids | grep -vxF -f <(cat "$D"/run/*.pid 2>/dev/null; echo x) || true)
                        [ -z "$pids" ] || stop $pids
                fi
                alive "$c" && stop "$(cat "$D/run/$c.pid")"
                rm -f "$D/run/$c.pid"
        done
        pids=$(dir_pids); [ -z "$pids" ] || stop $pids

        for m in $(mounts_under); do umount "$m" 2>/dev/null || umount -l "$m"; done
        for m in $(mounts_under); do umount -l "$m" 2>/dev/null || true; done
        for g in $(tac "$D/run/cgroups" 2>/dev/null); do
                [ -d "$g" ] && find "$g" -depth -type d -exec rmdir {} + 2>/dev/null || true
                [ -d "$g" ] && say "down: cannot remove cgroup $g"
        done
        rm -f "$D/run/cgroups"
        [ -e "$D/run/sysctls" ] && while read -r s v; do
                [ "$(sysctl -n "$s")" = "$v" ] || sysctl -qw "$s=$v"
        done < "$D/run/sysctls"
        rm -f "$D/run/sysctls"
        for s in $(tac "$D/run/dirs" 2>/dev/null); do
                rmdir "$s" || say "down: cannot remove $s"
        done
        rm -f "$D/run/dirs"
        ip link show kdpcni0 >/dev/null 2>&1 && ip link del kdpcni0
        rm -rf "$D/run"
        say "down: $D stopped"
}

usage="usage: $0 up|down DIR | kubectl|ctr|node DIR ARGS..."
[ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }
cmd=$1 D=$(realpath -m "$2"); shift 2
case $cmd in
up) up ;;
down) down ;;
kubectl) binaries; kc "$@" ;;
ctr) binaries; "$CONTAINERD_BIN/ctr" --address "$D/containerd/containerd.sock" -n k8s.io "$@" ;;
node) alive containerd || die "node: $D's containerd is not running"
      nsenter --mount="/proc/$(cat "$D/run/containerd.pid")/ns/mnt" -- "$@" ;;
*) echo "$usage" >&2; exit 2 ;;
esac
