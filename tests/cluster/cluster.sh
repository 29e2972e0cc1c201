#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A two-node Kubernetes cluster on loopback, every file of it under DIR:
#
#   cluster.sh up DIR       certificates, kubeconfigs, etcd, kube-apiserver, kube-controller-manager,
#                           kube-scheduler, and per node a containerd and a kubelet; returns once both
#                           nodes are Ready with their hardware labels and the default ServiceAccount
#                           exists (exit 1 naming what did not come up)
#   cluster.sh down DIR     stops all of it and undoes what it changed on the machine; works after a
#                           failed or partial up, and when nothing is up
#   cluster.sh kubectl DIR ARGS...   kubectl as the cluster's admin
#   cluster.sh ctr DIR [--node N] ARGS...   ctr on node N's containerd (default 1), namespace k8s.io
#                           (the kubelet's): `ctr DIR images import IMAGE.tar` makes an image of
#                           oci-image.sh usable on that node
#   cluster.sh node DIR [--node N] CMD...   CMD in node N's mount and network namespaces (default 1):
#                           `node DIR mknod /dev/x c 1 2` adds a device node that only node 1's /dev
#                           shows
#
# The nodes (NODES): node N is named 127.0.0.N, its InternalIP. Each runs its containerd (with its
# shims and pods) and kubelet in a mount and a network namespace of its own; their files are under
# DIR/nodeN. The control plane listens on 127.0.0.1 of the machine; a node reaches the apiserver
# and the apiserver reaches a node's kubelet through socat forwarders over unix sockets in
# DIR/nodeN (README.md, "The nodes' namespaces").
# Ports on 127.0.0.1 start at KDP_CLUSTER_PORT (default 26400): etcd client +0, etcd peer +1,
# kube-apiserver +2, controller-manager +3, scheduler +4; node N's kubelet +3+2N on 127.0.0.N
# (a forwarder on the machine, the kubelet in the node), its healthz +4+2N in the node only.
# What up changes outside DIR, and down undoes (recorded under DIR/run):
#   - cgroup v1: /kdp-<id>-N under each hierarchy, node N's kubelet's cgroup root (pods go below it)
#   - the sysctls the kubelet sets outside the network namespace (SYSCTLS): restored
#   - the empty directories NODE_BINDS needs as mount points, where missing: removed
# The nodes' namespaces go with their last process: their mounts (NODE_BINDS, and /dev, the
# host's with a layer of the node's own over it: node_ns), unseen by the host, and their network
# (their CNI bridges, the pods' links and addresses), which has no name.
# Binaries: scripts/cluster-build (built once, cached).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$root/tests/procs.sh"

K8S_VERSION=v1.37.2
PORT=${KDP_CLUSTER_PORT:-26400}
NODES=(1 2)             # node N is named 127.0.0.N: an IP, its InternalIP (see README.md)
SERVICE_CIDR=10.223.0.0/24
SERVICE_IP=10.223.0.1   # the kubernetes Service's ClusterIP: served in each node's namespace
PAUSE_IMAGE=kdp.local/pause:1
SYSCTLS=(net.ipv4.ip_forward vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
         kernel.keys.root_maxkeys kernel.keys.root_maxbytes)
# the node labels Node Feature Discovery would put for the hardware each node stands for, as
# deploy/'s DaemonSets select nodes by them: node 1 is a DGX H100 (tests/fixtures/nodes/gpu-h100x8:
# NVIDIA 3D controllers, class 0302), the GPU DaemonSet's; node 2 has an SR-IOV NIC (sriov-e810:
# sriov_totalvfs > 0) and an Intel FPGA card (fpga-d5005: processing accelerator, class 1200),
# the SR-IOV and FPGA DaemonSets'
NFD=feature.node.kubernetes.io
NODE_LABELS_1=("$NFD/pci-0302_10de.present=true")
NODE_LABELS_2=("$NFD/network-sriov.capable=true" "$NFD/pci-1200_8086.present=true")
# the order of starting; down stops them in reverse. A node's forwarders: api-N (machine: DIR/nodeN/
# apiserver.sock to the apiserver), api-in-N and svc-in-N (node: 127.0.0.1:PORT+2 and SERVICE_IP:443
# to that socket), kubelet-in-N (node: DIR/nodeN/kubelet.sock to its kubelet), kubelet-fwd-N
# (machine: 127.0.0.N's kubelet port to that socket)
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler)
for n in "${NODES[@]}"; do
        COMPONENTS+=("containerd-$n" "api-$n" "api-in-$n" "svc-in-$n" "kubelet-in-$n" "kubelet-fwd-$n")
done
for n in "${NODES[@]}"; do COMPONENTS+=("kubelet-$n"); done
# what up makes under DIR
STATE_DIRS=(logs run etcd controller-manager pki images kube-cache "${NODES[@]/#/node}"
            admin.kubeconfig controller-manager.kubeconfig scheduler.kubeconfig)
# SRC:DEST, node N's SRC (under its directory N) bound on DEST in its mount namespace: the
# kubelet's root-dir (given as /var/lib/kubelet, its default: the device-plugin socket and
# checkpoint are there whatever --root-dir says, and DaemonSets mount hostPaths under it), its
# symlinks to the pod logs, the shims' sockets (under /run/containerd whatever containerd's state
# dir), the CNI library's cache of results (/var/lib/cni, not configurable in containerd), and two
# that deploy/'s DaemonSets mount as hostPaths: the CDI directory they write specs into
# (/var/run/cdi, containerd's default; its cdi_spec_dirs names N/cdi, the same directory) and
# udevd's /run/udev (DirectoryOrCreate: the node's own, empty, never the host's)
node_binds() {
        NODE_BINDS=("$N/kubelet:/var/lib/kubelet"
                    "$N/log-containers:/var/log/containers"
                    "$N/containerd/run:/run/containerd"
                    "$N/cni/cache:/var/lib/cni"
                    "$N/cdi:/var/run/cdi"
                    "$N/udev:/run/udev")
}

# node N: NODE its name and address, N its directory, KUBELET_PORT, HEALTHZ_PORT, CGROUP_ROOT,
# BRIDGE (the pods' CNI bridge in its namespace), POD_SUBNET, NODE_BINDS, NODE_LABELS
node() {
        NODE_NR=$1 NODE=127.0.0.$1 N=$D/node$1
        KUBELET_PORT=$((PORT + 3 + 2 * $1)) HEALTHZ_PORT=$((PORT + 4 + 2 * $1))
        CGROUP_ROOT=/kdp-$ID-$1 BRIDGE=kdp-$ID-$1 POD_SUBNET=10.222.$(($1 - 1)).0/24
        local l="NODE_LABELS_$1[@]"; NODE_LABELS=("${!l}")
        node_binds
}
# the ports up needs free on the machine
LAST_PORT=$((PORT + 3 + 2 * ${#NODES[@]}))

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
        cert apiserver "/CN=kube-apiserver" "$server"$'\nsubjectAltName=IP:127.0.0.1,IP:'"$SERVICE_IP"',DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc'
        cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "$client"
        cert admin "/O=system:masters/CN=kdp-admin" "$client"
        cert controller-manager "/CN=system:kube-controller-manager" "$client"
        cert scheduler "/CN=system:kube-scheduler" "$client"
        for n in "${NODES[@]}"; do
                node "$n"
                cert "kubelet-client-$n" "/O=system:nodes/CN=system:node:$NODE" "$client"
                cert "kubelet-server-$n" "/CN=$NODE" "$server"$'\nsubjectAltName=IP:'"$NODE"
        done
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

# containerd_config, kubelet_config: node N's (after node N)
containerd_config() {
        local c=$N/containerd
        mkdir -p "$c" "$N/cdi" "$N/cni/net.d"
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
  cdi_spec_dirs = ['$N/cdi']
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
    conf_dir = '$N/cni/net.d'

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = '127.0.0.1'
  stream_server_port = '0'
EOF
        # a private bridge for pods that are not hostNetwork, in the node's namespace: no masquerade,
        # and the namespace has no route out; a pod's one route beyond its subnet is to the Services
        # (svc-in-N), through the bridge (no default route: the bridge plugin's isGateway only
        # addresses the bridge)
        cat > "$N/cni/net.d/10-kdp.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "kdp",
  "plugins": [
    { "type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false,
      "ipam": { "type": "host-local", "dataDir": "$N/cni/ipam",
                "ranges": [[{ "subnet": "$POD_SUBNET" }]], "routes": [{ "dst": "$SERVICE_CIDR" }] } },
    { "type": "loopback" }
  ]
}
EOF
}

kubelet_config() {
        cat > "$N/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $HEALTHZ_PORT
tlsCertFile: $D/pki/kubelet-server-$NODE_NR.crt
tlsPrivateKeyFile: $D/pki/kubelet-server-$NODE_NR.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $D/pki/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$N/containerd/containerd.sock
cgroupDriver: cgroupfs
cgroupRoot: $CGROUP_ROOT
cgroupsPerQOS: true
failCgroupV1: false
podLogsDir: $N/pod-logs
volumePluginDir: $N/kubelet/volume-plugins
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

# node_ready NAME
node_ready() {
        [ "$(kc get node "$1" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')" = True ]
}

# ---- what up changes on the machine ----------------------------------------------------------

# each cgroup v1 hierarchy's mount point
cgroup_mounts() { awk '$3 == "cgroup" { print $2 }' /proc/mounts; }

# node N's cgroup root under each hierarchy, listed in DIR/run/cgroups
make_cgroups() {
        local m g
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

# NODE_NS: a command prefix; what follows it runs in a new network namespace: lo up (127.0.0.0/8,
# the node's own), SERVICE_IP on lo for svc-in-N, no other link until the CNI bridge; and a new
# mount namespace where /dev is an overlay (the host's /dev below, a tmpfs on N/node-dev above: a
# device node made in the node's /dev exists in that node only, and goes with it; the host's
# submounts of /dev, pts and shm, bound again on top) and NODE_BINDS are bound (the same pid: each
# step execs the next)
node_ns() {
        NODE_NS=(unshare --mount --net --propagation slave -- bash -c 'set -e
                ip link set lo up; ip addr add "$1/32" dev lo; shift
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
                shift; exec "$@"' node-ns "$SERVICE_IP" "$N/node-dev" "${NODE_BINDS[@]}" --)
}

# in_node: a command prefix, node N's network namespace (its containerd's)
in_node() { IN_NODE=(nsenter --net="/proc/$(cat "$D/run/containerd-$NODE_NR.pid")/ns/net" --); }

# the node's namespace is made and lo serves in it: a forwarder can be put there
node_ns_up() { in_node; "${IN_NODE[@]}" ip -o addr show dev lo | grep -qF " $SERVICE_IP/32 "; }

# node N's forwarders (COMPONENTS), over its unix sockets between the machine and the node
forwarders() {
        local s=(socat "-lpsocat-$NODE_NR") api=$N/apiserver.sock kubelet=$N/kubelet.sock
        in_node
        start "api-$NODE_NR" "${s[@]}" "UNIX-LISTEN:$api,fork,mode=600" "TCP:127.0.0.1:$((PORT + 2))"
        start "api-in-$NODE_NR" "${IN_NODE[@]}" "${s[@]}" \
                "TCP-LISTEN:$((PORT + 2)),bind=127.0.0.1,reuseaddr,fork" "UNIX-CONNECT:$api"
        start "svc-in-$NODE_NR" "${IN_NODE[@]}" "${s[@]}" \
                "TCP-LISTEN:443,bind=$SERVICE_IP,reuseaddr,fork" "UNIX-CONNECT:$api"
        start "kubelet-in-$NODE_NR" "${IN_NODE[@]}" "${s[@]}" \
                "UNIX-LISTEN:$kubelet,fork,mode=600" "TCP:$NODE:$KUBELET_PORT"
        start "kubelet-fwd-$NODE_NR" "${s[@]}" \
                "TCP-LISTEN:$KUBELET_PORT,bind=$NODE,reuseaddr,fork" "UNIX-CONNECT:$kubelet"
}

# ---- up --------------------------------------------------------------------------------------

up() {
        [ -e "$D/run" ] && die "$D/run exists: the cluster is up or was not taken down; run: $0 down $D"
        [ -z "$(mounts_under)" ] && [ -z "$(dir_pids)" ] || die "mounts or processes under $D: run: $0 down $D"
        # a cluster of its own each time: what an earlier up left goes (its logs with it)
        rm -rf "${STATE_DIRS[@]/#/$D/}"
        mkdir -p "$D/logs" "$D/run" "$D/etcd"
        local port n
        for ((port = PORT; port <= LAST_PORT; port++)); do
                [ -z "$(ss -ltnH "sport = :$port")" ] ||
                        die "port $port is taken: the cluster needs $PORT-$LAST_PORT (KDP_CLUSTER_PORT)"
        done
        binaries
        save_host_state
        : > "$D/run/cgroups"
        for n in "${NODES[@]}"; do
                node "$n"; make_cgroups; make_bind_dirs
                mkdir -p "$N/pod-logs" "$N/node-dev"
        done
        pki; images
        kubeconfig admin admin
        kubeconfig controller-manager controller-manager
        kubeconfig scheduler scheduler
        for n in "${NODES[@]}"; do
                node "$n"
                kubeconfig "node$n/kubelet" "kubelet-client-$n"
                containerd_config; kubelet_config; node_ns
                # containerd finds containerd-shim-runc-v2 on its PATH
                PATH=$CONTAINERD_BIN:$PATH start "containerd-$n" "${NODE_NS[@]}" "$CONTAINERD_BIN/containerd" \
                        --config "$N/containerd/config.toml"
        done

        start etcd "$ETCD_BIN/etcd" --name kdp --data-dir "$D/etcd" \
                --listen-client-urls "http://127.0.0.1:$PORT" --advertise-client-urls "http://127.0.0.1:$PORT" \
                --listen-peer-urls "http://127.0.0.1:$((PORT + 1))" \
                --initial-advertise-peer-urls "http://127.0.0.1:$((PORT + 1))" \
                --initial-cluster "kdp=http://127.0.0.1:$((PORT + 1))"
        for n in "${NODES[@]}"; do
                node "$n"
                wait_until "node $n's namespace" 60 node_ns_up
                forwarders
        done
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
                --service-cluster-ip-range "$SERVICE_CIDR" --endpoint-reconciler-type none \
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

        for n in "${NODES[@]}"; do
                node "$n"
                local ctr=("$CONTAINERD_BIN/ctr" --address "$N/containerd/containerd.sock" -n k8s.io)
                wait_until "node $n's containerd" 60 "${ctr[@]}" version
                "${ctr[@]}" images import "$D/images/pause.tar" >>"$D/logs/ctr.log" 2>&1 ||
                        { cat "$D/logs/ctr.log" >&2; die "ctr could not import the pause image on node $n"; }
                # the kubelet joins containerd's namespaces: the pods' volumes are its mounts
                start "kubelet-$n" nsenter --mount="/proc/$(cat "$D/run/containerd-$n.pid")/ns/mnt" \
                        --net="/proc/$(cat "$D/run/containerd-$n.pid")/ns/net" -- \
                        "$K8S_BIN/kubelet" --config "$N/kubelet.yaml" --kubeconfig "$N/kubelet.kubeconfig" \
                        --root-dir /var/lib/kubelet --hostname-override "$NODE" --v 2
        done
        for n in "${NODES[@]}"; do
                node "$n"
                wait_until "node $NODE Ready" 180 node_ready "$NODE"
                kc label node "$NODE" "${NODE_LABELS[@]}" >/dev/null
        done
        wait_until "ServiceAccount default/default" 60 kc get serviceaccount default -n default
        say "up: nodes $(for n in "${NODES[@]}"; do echo -n "127.0.0.$n "; done)Ready (kubectl: $0 kubectl $D ...)"
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

# processes with an argument naming a path under DIR (DIR/x, --flag=DIR/x or ADDRESS:DIR/x): the
# shims (-address DIR/nodeN/containerd/...), the forwarders' children (one a connection), and what
# a killed component left; not this script, nor whoever called it with DIR (or DIR/) as an argument
dir_pids() {
        local f pid args a
        for f in /proc/[0-9]*/cmdline; do
                pid=${f#/proc/}; pid=${pid%/cmdline}
                [ "$pid" = $$ ] && continue
                mapfile -d '' args 2>/dev/null < "$f" || continue
                for a in "${args[@]}"; do
                        [[ $a == "$D/"?* || $a == *[=:]"$D/"?* ]] && { echo "$pid"; break; }
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
                if [[ $c == containerd-* ]]; then
                        # the pods go first (SIGKILL: a container's pid 1 may ignore SIGTERM),
                        # then the shims that watch them
                        pids=$(cgroup_pids); [ -z "$pids" ] || { kill -KILL $pids 2>/dev/null; stop $pids; }
                        pids=$(dir_pids | grep -vxF -f <(cat "$D"/run/*.pid 2>/dev/null; echo x) || true)
                        [ -z "$pids" ] || stop $pids
                fi
                # a forwarder's children (a connection each) are in its session: they go with it
                [[ $c == containerd-* || $c == kubelet-? ]] || ! alive "$c" ||
                        kill -TERM -- "-$(cat "$D/run/$c.pid")" 2>/dev/null || true
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
        rm -rf "$D/run"
        say "down: $D stopped"
}

usage="usage: $0 up|down DIR | kubectl DIR ARGS... | ctr|node DIR [--node N] ARGS..."
[ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }
cmd=$1 D=$(realpath -m "$2"); shift 2
ID=$(echo -n "$D" | sha256sum | cut -c1-8)     # names what this cluster makes outside DIR
# node_arg ARGS...: n, the node of a leading "--node N" (default 1); SHIFT, the arguments it took
node_arg() {
        n=1 SHIFT=0
        [ "${1:-}" != --node ] || { n=${2:-} SHIFT=2; }
        [[ " ${NODES[*]} " == *" $n "* ]] && [ $# -ge "$SHIFT" ] || { echo "$usage (N: ${NODES[*]})" >&2; exit 2; }
}
case $cmd in
up) up ;;
down) down ;;
kubectl) binaries; kc "$@" ;;
ctr)
        node_arg "$@"; shift "$SHIFT"
        binaries; node "$n"
        "$CONTAINERD_BIN/ctr" --address "$N/containerd/containerd.sock" -n k8s.io "$@" ;;
node)
        node_arg "$@"; shift "$SHIFT"
        node "$n"
        alive "containerd-$n" || die "node: $D's node $n (its containerd) is not running"
        nsenter --mount="/proc/$(cat "$D/run/containerd-$n.pid")/ns/mnt" \
                --net="/proc/$(cat "$D/run/containerd-$n.pid")/ns/net" -- "$@" ;;
*) echo "$usage" >&2; exit 2 ;;
esac
