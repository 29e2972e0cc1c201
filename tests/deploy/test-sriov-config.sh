#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# deploy/sriov-config: kdpd run as deploy/sriov/unprivileged says, on simulated nodes. The
# config.json of the rendered ConfigMap and the DaemonSet's own args (only the pod's paths swapped for the test's:
# sriov.config_file, --state-dir; the pod IP of --metrics-address for 127.0.0.1 and its port for
# one the kernel picks; the kubelet and CDI dirs added) go to kdpd with the SR-IOV
# backend on the E810 node (iavf and vfio-pci VFs) and on the ConnectX-6 Dx node (RDMA VFs):
# the backend's parser takes the file without a warning, and every pool lists exactly the VFs it
# should, with their NUMA node, the others none; what no pool takes is exactly the PFs; the
# DaemonSet's startup, readiness and liveness probes, asked at the metrics address, answer 200.
# --registration=auto stays in the args when kdpd knows the flag (with --plugins-registry at a
# directory that does not exist, so that it registers through the stand-in kubelet's
# kubelet.sock), and is left out when it does not yet.
# Skipped (77) when node or the simulated nodes are missing.
. "${KDP_SOURCE_DIR:?}/tests/e2e/lib.sh"

NODE_JS=$(command -v node || command -v nodejs) || { echo "skip: node is not installed"; exit 77; }
SIM="$KDP_SOURCE_DIR/tests/sim-node/sim-node"
NODES="$KDP_SOURCE_DIR/tests/fixtures/nodes"
DEPLOY="$KDP_SOURCE_DIR/deploy/sriov/unprivileged"
NETDEV=intel.com/e810_netdevice
VFIO=intel.com/e810_vfio
RDMA=nvidia.com/cx6_rdma

"$NODE_JS" "$KDP_SOURCE_DIR/tests/deploy/manifest.js" data "$DEPLOY" kdp-sriov-config config.json >"$T/config.json" ||
        fail "no config.json in the ConfigMap"
mapfile -t ARGS < <("$NODE_JS" "$KDP_SOURCE_DIR/tests/deploy/manifest.js" args "$DEPLOY" kdp-sriov)
[ ${#ARGS[@]} -gt 0 ] || fail "no args in the DaemonSet"
# "KIND PATH PORT" of each probe of the DaemonSet
PROBES=()
for kind in startupProbe readinessProbe livenessProbe; do
        probe=$("$NODE_JS" "$KDP_SOURCE_DIR/tests/deploy/manifest.js" probe "$DEPLOY" kdp-sriov "$kind") ||
                fail "no $kind in the DaemonSet"
        PROBES+=("$kind $probe")
done
HTTP="$KDP_SOURCE_DIR/tests/e2e/metrics-http.py"

# knows FLAG: the kdpd under test has FLAG (--registration and --plugins-registry came to the
# manifests before they came to kdpd)
knows() {
        "$KDPD" --help 2>&1 | grep -Eq -- "^ +(-[a-z], )?$1( |\$)"
}

# run_args NAME: the DaemonSet's args with the pod's paths replaced by the test's, in RUN; each
# path replaced must be there exactly as the pod has it
run_args() {
        local a config=0 state=0 registration=0 metrics=0 prev=
        RUN=()
        for a in "${ARGS[@]}"; do
                case "$prev $a" in
                "-o sriov.config_file=/etc/pcidp/config.json")
                        a="sriov.config_file=$T/config.json"
                        config=$((config + 1)) ;;
                "--state-dir /run/kdp")
                        a="$T/state-$1"
                        state=$((state + 1)) ;;
                *" --registration=auto")
                        registration=$((registration + 1))
                        knows --registration || { prev=$a; continue; } ;;
                *' --metrics-address=[$(POD_IP)]:'*)
                        [[ ${a##*]:} =~ ^[0-9]+$ ]] && metrics=$((metrics + 1))
                        a='--metrics-address=[127.0.0.1]:0' ;;
                esac
                RUN+=("$a")
                prev=$a
        done
        assert_eq "$config $state $registration $metrics" "1 1 1 1" \
                "sriov.config_file=/etc/pcidp/config.json, --state-dir /run/kdp, --registration=auto and --metrics-address=[\$(POD_IP)]:PORT in the args"
        # no plugins registry here: auto registers through kubelet.sock
        ! knows --registration || ! knows --plugins-registry || RUN+=(--plugins-registry "$T/no-plugins-registry")
        # the device-info files (the default is the host's Multus directory): the test's own
        RUN+=(--kubelet-dir "$DIR" --cdi-dir "$T/cdi" -o sriov.devinfo_dir="$T/devinfo-$1")
}

# node NAME FIXTURE: the stand-in kubelet and kdpd (the DaemonSet's args) on the simulated node;
# kdpd's log in $T/NAME.err
node() {
        NAME=$1
        run_args "$1"
        # it serves PodResources where kdpd looks by default, beside the device-plugins dir, as a node's kubelet does
        start_kubelet kubelet --pod-resources "$T/pod-resources/kubelet.sock"
        "${DIE_WITH_US[@]}" "$SIM" "$NODES/$2.umockdev" -- "${KDPD_RUN[@]}" "${RUN[@]}" >"$T/$1.out" 2>"$T/$1.err" &
        KDPD_PID=$!
        PIDS+=("$KDPD_PID")
        wait_line "$T/$1.err" '"Finished the first scan"|sim-node: .*preload|not built'
        grep -q 'sim-node: .*preload\|not built' "$T/$1.err" && { echo "skip: no simulated node"; exit 77; }
}

# node_done: peak RSS of kdpd printed (not under valgrind), kdpd stopped cleanly, then the kubelet
node_done() {
        local pid
        pid=$(pgrep -P "$KDPD_PID" | head -n 1)
        if [ "${KDP_VALGRIND:-}" != 1 ] && [ -n "$pid" ]; then
                echo "measured: $NAME: kdpd $(grep VmHWM "/proc/$pid/status" | tr -s ' \t' ' ')"
        fi
        stop_kdpd
        stop_kubelet
        mv "$T/kubelet.out" "$T/kubelet-$NAME.log"
}

# pool RESOURCE NUMA ID...: the kubelet's newest list of RESOURCE is exactly these IDs, all
# Healthy, all on NUMA node NUMA (IDs in address order)
pool() {
        local res=$1 numa=$2 ids nodes=
        shift 2
        ids=$(IFS=,; echo "$*")
        for id in "$@"; do
                nodes="$nodes;$id:$numa"
        done
        devices_match "$res" "$(printf '^devices resource=%s capacity=%d allocatable=%d healthy=%s unhealthy= numa=%s$' \
                "$res" $# $# "$ids" "${nodes#;}" | sed 's/\./\\./g')"
}

# only_pfs_not_served PF...: waits until `kdpctl not-served` lists exactly these PFs, "PF with VFs
# enabled"
only_pfs_not_served() {
        local want got end
        want=$(printf 'not served: %s PF with VFs enabled\n' "$@")
        end=$(deadline_ms "$(wait_s)")
        while got=$("$KDPCTL" not-served --state-dir "$T/state-$NAME" 2>&1); [ "$got" != "$want" ]; do
                [ "$(now_ms)" -lt "$end" ] || assert_eq "$got" "$want" "not served on $NAME"
                sleep 0.1
        done
}

# probes_ok: each probe of the DaemonSet, asked at the port it names (metrics: the one of
# --metrics-address), answers 200 "ok" once the pools are registered and streaming
probes_ok() {
        local addr p kind path port out end
        addr=$(sed -n 's/.*"Serving metrics" address="\([^"]*\)".*/\1/p' "$T/$NAME.err" | tail -n 1)
        [[ $addr =~ ^127\.0\.0\.1:[0-9]+$ ]] || fail "kdpd on $NAME logged no metrics address on 127.0.0.1: '$addr'"
        for p in "${PROBES[@]}"; do
                read -r kind path port <<<"$p"
                assert_eq "$port" metrics "the port $kind asks"
                end=$(deadline_ms "$(wait_s)")
                while out=$(python3 "$HTTP" "$addr" get "$path" 2>&1 | tr '\n' ' '); [ "$out" != "200 ok " ]; do
                        [ "$(now_ms)" -lt "$end" ] || assert_eq "$out" "200 ok " "$kind (GET $path) on $NAME"
                        sleep 0.1
                done
        done
}

# config_quiet: the backend logged no warning or error (config.c warns of what sriovdp would
# drop or mis-parse), and registered exactly the three pools once each
config_quiet() {
        assert_eq "$(grep -E '^[WE][0-9]{4} ' "$T/$NAME.err")" "" "warnings or errors of kdpd on $NAME"
        assert_eq "$(grep '^registered ' "$T/kubelet.out" | sed 's/^registered resource=\([^ ]*\) .*/\1/' | LC_ALL=C sort | tr '\n' ' ')" \
                "$NETDEV $VFIO $RDMA " "resources registered on $NAME"
}

# E810, 2 PFs x 8 VFs on NUMA 1: PF0 VFs 0-5 and PF1 VFs 0-3 iavf, the others vfio-pci
node e810 sriov-e810
pool $NETDEV 1 0000:8a:01.0 0000:8a:01.1 0000:8a:01.2 0000:8a:01.3 0000:8a:01.4 0000:8a:01.5 \
        0000:8a:05.0 0000:8a:05.1 0000:8a:05.2 0000:8a:05.3
pool $VFIO 1 0000:8a:01.6 0000:8a:01.7 0000:8a:05.4 0000:8a:05.5 0000:8a:05.6 0000:8a:05.7
pool $RDMA 0
only_pfs_not_served 0000:8a:00.0 0000:8a:00.1
config_quiet
probes_ok
node_done
pass "E810 node: the iavf VFs in $NETDEV, the vfio-pci VFs in $VFIO, $RDMA empty; only the PFs not served; probes 200"

# ConnectX-6 Dx, 2 PFs x 4 VFs on NUMA 0, every VF with its RDMA device
node cx6dx sriov-cx6dx
pool $NETDEV 0
pool $VFIO 0
pool $RDMA 0 0000:3b:00.2 0000:3b:00.3 0000:3b:00.4 0000:3b:00.5 0000:3b:01.2 0000:3b:01.3 0000:3b:01.4 0000:3b:01.5
only_pfs_not_served 0000:3b:00.0 0000:3b:00.1
config_quiet
probes_ok
node_done
pass "ConnectX-6 Dx node: every RDMA VF in $RDMA, the E810 pools empty; only the PFs not served; probes 200"
