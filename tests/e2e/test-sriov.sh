# SPDX-License-Identifier: GPL-2.0-or-later
# The SR-IOV backend on simulated nodes (tests/fixtures/nodes/sriov-*), driven through the
# stand-in kubelet with a config.json written here:
#   - E810 (2 PFs x 8 VFs, iavf and vfio-pci): pools chosen by rootDevices and pfNames with
#     #ranges, vendors, devices, drivers, pciAddresses, acpiIndexes, needVhostNet; the exact
#     lists (IDs, NUMA), Allocate answers (env with _INFO, DeviceSpecs) of a vfio VF and of an
#     iavf VF with needVhostNet, the not-served list with its reasons; the fixture's scripts
#     (sriov_numvfs changes, a rebind, a PF unplugged and back, a netdev moved into a pod) and
#     VFs disabled on the PF with an acpi_index; a config.json rewrite that touches one pool.
#   - ConnectX-6 Dx (RDMA VFs, switchdev uplink): isRdma, linkTypes, pfNames of the uplink,
#     the RDMA Allocate answer, and its sriov_numvfs script; its config.json in a ConfigMap
#     volume's layout, updated as the kubelet does (the ..data swap): only the changed pool's
#     stream sees it; kdpd's SIGHUP reads it again; a broken one keeps the pools until fixed.
#   - no-IOMMU E810: the vfio answer with the host's noiommu-<N> node.
#   - ConnectX-6 in InfiniBand mode: pKeys (exact per-pkey VF sets), linkTypes infiniband, the
#     RDMA answer on IB, an auxNetDevice pool (empty, with its warnings).
#   - vDPA on the ConnectX-6 Dx: vdpaType vhost and virtio, the vdpa provider, vhost-vdpa
#     DeviceSpecs and device-info files of type vdpa; a missing vhost-vdpa node.
#   - device-info files for Multus (in $T/devinfo-NAME): written at Allocate with their exact
#     JSON, gone with their VFs (sriov_numvfs script), with their pool (config.json), and when
#     kdpd stops.
#   - device-info files and the kubelet's PodResources List ($T/pod-resources/kubelet.sock, the
#     default beside the kubelet dir): a pod's files stay while List names its devices and go
#     once the pod ended; List failing (socket gone, then refusing) keeps them, with one warning;
#     List back (a kubelet that does not know the device) removes them.
#   - E810 once more: the uio provider (a VF bound to igb_uio, its /dev/uio0 missing for a
#     while) and the extra provider (additionalInfo).
# It runs in a network namespace of its own (root; skipped otherwise), where the fixtures' PF
# netdevs are links it makes: kdpd's rtnetlink view (PF link state, default routes) holds them
# and nothing of the machine's, and PF0's link going down makes its VFs Unhealthy.
. "$(dirname "$0")/../procs.sh"
in_private_netns "$0" "$@"
. "$(dirname "$0")/lib.sh"

SIM="$KDP_SOURCE_DIR/tests/sim-node/sim-node"
NODES="$KDP_SOURCE_DIR/tests/fixtures/nodes"
VFIO=example.com/e810_vfio
PF0=intel.com/e810_pf0
PF1=intel.com/e810_pf1
PORT=intel.com/e810_port
KUBELET_ARGS=()         # more args for the next node's stand-in kubelet
KDPD_ARGS=()            # and for its kdpd

# the PF netdevs of the fixtures, up (the VFs' own netdevs are no reason: plugins/sriov/README.md)
for link in ens3f0np0 ens3f1np1 ens1f0np0 ens1f1np1 ibp216s0; do
        netns_link_add "$link" >"$T/ip.out" 2>&1 || fail "cannot make link $link: $(cat "$T/ip.out")"
done

# node NAME FIXTURE [CONFIG]: a stand-in kubelet (its output in $T/kubelet.out) and kdpd with the
# SR-IOV backend on the simulated node, config in CONFIG (default $T/NAME.json); sim-node's stdout
# (the scripts' marks) in $T/NAME.out, kdpd's log in $T/NAME.err, its state in $T/state-NAME; fd 9
# is its control FIFO
node() {
        local config=${3:-$T/$1.json}
        NAME=$1
        DIR="$T/dp-$1"
        mkdir -p "$DIR"
        start_kubelet kubelet "${KUBELET_ARGS[@]}"
        mkfifo "$T/ctl-$1"
        exec 9<>"$T/ctl-$1"
        "${DIE_WITH_US[@]}" "$SIM" "$NODES/$2.umockdev" --control "$T/ctl-$1" -- "${KDPD_RUN[@]}" --kubelet-dir "$DIR" \
                --state-dir "$T/state-$1" --cdi-dir "$T/cdi" --backend sriov -o sriov.config_file="$config" \
                -o sriov.devinfo_dir="$T/devinfo-$1" --health-hold-ms 300 "${KDPD_ARGS[@]}" \
                >"$T/$1.out" 2>"$T/$1.err" &
        KDPD_PID=$!
        PIDS+=("$KDPD_PID")
        wait_line "$T/$1.err" '"Finished the first scan"|sim-node: .*preload|not built'
        grep -q 'sim-node: .*preload\|not built' "$T/$1.err" && { echo "skip: no simulated node"; exit 77; }
}

# node_done: kdpd stops cleanly (exit 0, valgrind clean) and leaves no device-info file, then the
# kubelet; its output is kept aside
node_done() {
        stop_kdpd
        assert_eq "$(ls -A "$T/devinfo-$NAME" 2>/dev/null)" "" "device-info files left after kdpd stopped"
        stop_kubelet
        exec 9>&-
        mv "$T/kubelet.out" "$T/kubelet-$NAME.log"
}

ctl() {
        echo "$*" >&9
}

# script FILE: a fixture's event script (its wait-listeners is over: kdpd listens), fed one
# part at a time by mark: each part ends with its "echo", and the next goes only once the test
# checked the state the mark names
script() {
        sed '/^#/d; /^wait-listeners/d; s/^wait$/wait 60000/' "$1" >"$T/script"
        SCRIPT_DONE=0
}

# mark TEXT: the script's lines up to "echo TEXT" went to sim-node, which printed TEXT
mark() {
        awk -v from="$SCRIPT_DONE" -v m="echo $1" 'NR > from { print } NR > from && $0 == m { exit }' "$T/script" >&9
        SCRIPT_DONE=$(awk -v from="$SCRIPT_DONE" -v m="echo $1" 'NR > from && $0 == m { print NR; exit }' "$T/script")
        [ -n "$SCRIPT_DONE" ] || fail "no mark '$1' in the script"
        printed "$1"
}

# printed TEXT: sim-node printed TEXT (after a "wait" of ours, or a script's mark)
printed() {
        wait_line "$T/$NAME.out" "^$1\$"
}

# sync TEXT: every uevent sent so far was read by kdpd, then TEXT is printed
sync() {
        ctl "wait 60000"
        ctl "echo $1"
        printed "$1"
}

# want RESOURCE NUMA HEALTHY [UNHEALTHY]: waits until the kubelet's newest list of RESOURCE is
# exactly these IDs (comma-separated, in this order), every one on NUMA node NUMA (the numa=
# field lists them in the order of the devices, by address)
want() {
        local res=$1 numa=$2 h=$3 u=${4:-} id n=0 nodes="" re
        for id in $(echo "$h,$u" | tr ',' '\n' | sort); do
                n=$((n + 1))
                nodes="$nodes;$id:$numa"
        done
        re="^devices resource=$res capacity=$n allocatable=$(($(echo "$h" | tr ',' '\n' | grep -c .))) healthy=$h unhealthy=$u numa=${nodes#;}\$"
        devices_match "$res" "${re//./\\.}"
}

# not_served LINE...: waits until `kdpctl not-served` lists exactly these (address and reason)
not_served() {
        local want got end
        want=$(printf 'not served: %s\n' "$@")
        end=$(deadline_ms "$(wait_s)")
        while :; do
                got=$("$KDPCTL" not-served --state-dir "$T/state-$NAME" 2>&1)
                [ "$got" = "$want" ] && return 0
                [ "$(now_ms)" -lt "$end" ] || fail "not-served: expected
$want
got
$got"
                sleep 0.1
        done
}

# unhealthy RESOURCE ID REASON: kdpd logged it (when it became Unhealthy, or later)
unhealthy() {
        local re="\"Device (became unhealthy|unhealthy for another reason)\" resource=\"$1\" device=\"$2\" reason=\"$3\""
        wait_line "$T/$NAME.err" "${re//./\\.}"
}

# allocate RESOURCE ID...: kdpctl allocate's answer, one line each
allocate() {
        local res=$1
        shift
        "$KDPCTL" allocate --socket "$(plugin_socket "${res/\//_}")" "$@" 2>&1
}

# devinfo NAME...: waits until the node's device-info directory holds exactly these files
devinfo() {
        local want got end
        want=$(printf '%s\n' "$@" | sed '/^$/d' | sort)
        end=$(deadline_ms "$(wait_s)")
        while :; do
                got=$(ls -A "$T/devinfo-$NAME" 2>/dev/null | sort)
                [ "$got" = "$want" ] && return 0
                [ "$(now_ms)" -lt "$end" ] || fail "device-info files: expected
$want
got
$got"
                sleep 0.1
        done
}

# devinfo_json FILE: a device-info file's content (with a check that it is read-only, 0444)
devinfo_json() {
        assert_eq "$(stat -c %a "$T/devinfo-$NAME/$1")" 444 "mode of $1"
        cat "$T/devinfo-$NAME/$1"
}

# registrations RESOURCE: how many times the kubelet saw RESOURCE register
registrations() {
        count_lines "$T/kubelet.out" "^registered resource=$1 "
}

# lists RESOURCE: how many lists the kubelet got on RESOURCE's streams
lists() {
        count_lines "$T/kubelet.out" "^devices resource=$1 "
}

# config_map DIR FILE: DIR holds FILE as config.json the way the kubelet lays out a ConfigMap
# volume (DIR/..<timestamp>/config.json, DIR/..data -> ..<timestamp>, DIR/config.json ->
# ..data/config.json); again on a DIR that has one, FILE replaces it as the kubelet's atomic
# writer does: the new ..<timestamp> directory, a ..data_tmp symlink to it renamed over ..data,
# the old directory removed
CM_SEQ=0
config_map() {
        local dir=$1 old new
        CM_SEQ=$((CM_SEQ + 1))
        new=..2024_01_01_00_00_00.$CM_SEQ
        mkdir -p "$dir/$new"
        cp "$2" "$dir/$new/config.json"
        if [ ! -L "$dir/..data" ]; then
                ln -s "$new" "$dir/..data"
                ln -s ..data/config.json "$dir/config.json"
                return
        fi
        old=$(readlink "$dir/..data")
        ln -s "$new" "$dir/..data_tmp"
        mv -T "$dir/..data_tmp" "$dir/..data"
        rm -rf "${dir:?}/$old"
}

# ---------------------------------------------------------------------------------------------
# E810

cat >"$T/e810.json" <<'EOF'
{"resourceList": [
 {"resourceName": "e810_vfio", "resourcePrefix": "example.com",
  "selectors": [{"drivers": ["vfio-pci"], "rootDevices": ["0000:8a:00.0#5-7", "0000:8a:00.1#4,5"]}]},
 {"resourceName": "e810_pf0",
  "selectors": [{"vendors": ["8086"], "devices": ["1889"], "drivers": ["iavf"], "pfNames": ["ens3f0np0#0-2,5"],
                 "needVhostNet": true}]},
 {"resourceName": "e810_pf1",
  "selectors": [{"pciAddresses": ["0000:8a:05.0", "0000:8a:05.1", "0000:8a:05.6"]}]},
 {"resourceName": "e810_port",
  "selectors": [{"acpiIndexes": ["3"]}]}
]}
EOF
node e810 sriov-e810
# the node at load: PF0 VFs 0-5 (01.0-01.5) iavf, 6-7 (01.6, 01.7) vfio-pci; PF1 VFs 0-3 (05.0-05.3)
# iavf, 4-7 (05.4-05.7) vfio-pci; all on NUMA 1
E810_VFIO=0000:8a:01.6,0000:8a:01.7,0000:8a:05.4,0000:8a:05.5
E810_PF0=0000:8a:01.0,0000:8a:01.1,0000:8a:01.2,0000:8a:01.5
E810_PF1=0000:8a:05.0,0000:8a:05.1,0000:8a:05.6
VFIO_U=                 # Unhealthy members of the vfio pool (kept after the rebind below)
E810_NOT_SERVED=("0000:8a:00.0 PF with VFs enabled" "0000:8a:00.1 PF with VFs enabled"
                 "0000:8a:01.3 no pool's selectors take it" "0000:8a:01.4 no pool's selectors take it"
                 "0000:8a:05.2 no pool's selectors take it" "0000:8a:05.3 no pool's selectors take it"
                 "0000:8a:05.7 no pool's selectors take it")
e810_at_load() {
        want $VFIO 1 $E810_VFIO "$VFIO_U"
        want $PF0 1 $E810_PF0
        want $PF1 1 $E810_PF1
        want $PORT 1 ""
        not_served "${E810_NOT_SERVED[@]}"
}
e810_at_load
for res in $VFIO $PF0 $PF1 $PORT; do
        assert_eq "$(registrations "$res")" 1 "$res registered once"
done
assert_eq "$(count_lines "$T/kubelet.out" '^registered ')" 4 "four pools registered"
pass "E810: rootDevices and pfNames with #ranges, vendors, devices, drivers, pciAddresses; acpiIndexes takes nothing (its PF has VFs)"
pass "E810: the PFs with VFs and the functions no selector takes are not served, with their reasons"

assert_eq "$(allocate $VFIO 0000:8a:05.5 0000:8a:01.6)" "env PCIDEVICE_EXAMPLE_COM_E810_VFIO=0000:8a:05.5,0000:8a:01.6
env PCIDEVICE_EXAMPLE_COM_E810_VFIO_INFO={\"0000:8a:01.6\":{\"generic\":{\"deviceID\":\"0000:8a:01.6\"},\"vfio\":{\"dev-mount\":\"/dev/vfio/106\",\"mount\":\"/dev/vfio/vfio\"}},\"0000:8a:05.5\":{\"generic\":{\"deviceID\":\"0000:8a:05.5\"},\"vfio\":{\"dev-mount\":\"/dev/vfio/115\",\"mount\":\"/dev/vfio/vfio\"}}}
device /dev/vfio/106 /dev/vfio/106 rw
device /dev/vfio/115 /dev/vfio/115 rw
device /dev/vfio/vfio /dev/vfio/vfio rw" "Allocate of two vfio-pci VFs"
assert_eq "$(allocate $PF0 0000:8a:01.1)" "env PCIDEVICE_INTEL_COM_E810_PF0=0000:8a:01.1
env PCIDEVICE_INTEL_COM_E810_PF0_INFO={\"0000:8a:01.1\":{\"generic\":{\"deviceID\":\"0000:8a:01.1\"},\"vhost\":{\"net-mount\":\"/dev/vhost-net\",\"tun-mount\":\"/dev/net/tun\"}}}
device /dev/net/tun /dev/net/tun rw
device /dev/vhost-net /dev/vhost-net rw" "Allocate of an iavf VF with needVhostNet"
assert_eq "$(allocate $PF1 0000:8a:05.6)" "env PCIDEVICE_INTEL_COM_E810_PF1=0000:8a:05.6
env PCIDEVICE_INTEL_COM_E810_PF1_INFO={\"0000:8a:05.6\":{\"generic\":{\"deviceID\":\"0000:8a:05.6\"},\"vfio\":{\"dev-mount\":\"/dev/vfio/116\",\"mount\":\"/dev/vfio/vfio\"}}}
device /dev/vfio/116 /dev/vfio/116 rw
device /dev/vfio/vfio /dev/vfio/vfio rw" "Allocate of a vfio-pci VF taken by its address"
assert_eq "$(allocate $PF1 0000:8a:01.1)" \
        "error: code=INVALID_ARGUMENT message=unknown device \"0000:8a:01.1\" of resource $PF1" "Allocate of a VF of another pool"
pass "Allocate: PCIDEVICE_ env with its _INFO JSON and the DeviceSpecs (vfio, vhost-net and tun)"

DI_VFIO6=example.com-e810_vfio-0000:8a:01.6-device.json
DI_VFIO55=example.com-e810_vfio-0000:8a:05.5-device.json
DI_PF01=intel.com-e810_pf0-0000:8a:01.1-device.json
DI_PF156=intel.com-e810_pf1-0000:8a:05.6-device.json
devinfo $DI_VFIO6 $DI_VFIO55 $DI_PF01 $DI_PF156
assert_eq "$(devinfo_json $DI_VFIO6)" '{"type":"pci","version":"1.1.0","pci":{"pci-address":"0000:8a:01.6","pf-pci-address":"0000:8a:00.0"}}' \
        "device-info of a vfio-pci VF"
assert_eq "$(devinfo_json $DI_VFIO55)" '{"type":"pci","version":"1.1.0","pci":{"pci-address":"0000:8a:05.5","pf-pci-address":"0000:8a:00.1"}}' \
        "device-info of a vfio-pci VF of PF1"
assert_eq "$(devinfo_json $DI_PF01)" '{"type":"pci","version":"1.1.0","pci":{"pci-address":"0000:8a:01.1","vhost-net":"/dev/vhost-net","pf-pci-address":"0000:8a:00.0"}}' \
        "device-info of an iavf VF with needVhostNet"
assert_eq "$(devinfo_json $DI_PF156)" '{"type":"pci","version":"1.1.0","pci":{"pci-address":"0000:8a:05.6","pf-pci-address":"0000:8a:00.1"}}' \
        "device-info of a VF taken by its address"
pass "device-info: one file per allocated device, <resource>-<ID>-device.json with the spec's JSON; none for a refused Allocate"

# sriov-e810-rebind: VF 5 of PF0 iavf -> vfio-pci -> iavf
script "$NODES/sriov-e810-rebind.script"
mark vfio-pci
want $VFIO 1 0000:8a:01.5,$E810_VFIO "$VFIO_U"
want $PF0 1 0000:8a:01.0,0000:8a:01.1,0000:8a:01.2 0000:8a:01.5
unhealthy $PF0 0000:8a:01.5 "bound to vfio-pci"
not_served "${E810_NOT_SERVED[@]}"
assert_eq "$(allocate $VFIO 0000:8a:01.5 | head -n 1)" "env PCIDEVICE_EXAMPLE_COM_E810_VFIO=0000:8a:01.5" "Allocate of the rebound VF"
assert_eq "$(allocate $VFIO 0000:8a:01.5 | grep '^device /dev/vfio/1')" "device /dev/vfio/105 /dev/vfio/105 rw" \
        "the rebound VF's group node"
mark iavf
want $PF0 1 $E810_PF0
want $VFIO 1 $E810_VFIO 0000:8a:01.5
unhealthy $VFIO 0000:8a:01.5 "bound to iavf"
VFIO_U=0000:8a:01.5
not_served "${E810_NOT_SERVED[@]}"
pass "rebind: the VF moves to the vfio pool and back; the pool it left keeps it Unhealthy with the reason"

# sriov-e810-pod: ens3f0v1's netdev moves into a pod and back; the VF stays served (pfNames
# still takes it). 01.0 unbound afterwards: once kdpd shows that, it has scanned the pod's move.
script "$NODES/sriov-e810-pod.script"
mark in-pod
ctl unbind 0000:8a:01.0
want $PF0 1 0000:8a:01.1,0000:8a:01.2,0000:8a:01.5 0000:8a:01.0
unhealthy $PF0 0000:8a:01.0 "driver unbound"
assert_eq "$(count_lines "$T/e810.err" 'device="0000:8a:01.1"')" 0 "log lines about the VF in the pod"
assert_eq "$(allocate $PF0 0000:8a:01.1 | head -n 1)" "env PCIDEVICE_INTEL_COM_E810_PF0=0000:8a:01.1" \
        "Allocate of the VF whose netdev is in a pod"
mark back
mark carrier-down
ctl bind 0000:8a:01.0 iavf
want $PF0 1 $E810_PF0
not_served "${E810_NOT_SERVED[@]}"
pass "a VF whose netdev is in a pod stays Healthy and allocatable in its pfNames pool"

# PF0's link down (rtnetlink; the script's sysfs carrier is not what kdpd reads): every VF of
# PF0 is Unhealthy in every pool, PF1's stay Healthy; up again, all is as before
ip link set ens3f0np0 down
want $PF0 1 "" $E810_PF0
want $VFIO 1 0000:8a:05.4,0000:8a:05.5 0000:8a:01.5,0000:8a:01.6,0000:8a:01.7
want $PF1 1 $E810_PF1
unhealthy $PF0 0000:8a:01.0 "PF ens3f0np0 link down"
unhealthy $VFIO 0000:8a:01.6 "PF ens3f0np0 link down"
unhealthy $PF0 0000:8a:01.5 "PF ens3f0np0 link down"
not_served "${E810_NOT_SERVED[@]}"
ip link set ens3f0np0 up
want $PF0 1 $E810_PF0
want $VFIO 1 $E810_VFIO "$VFIO_U"
pass "a PF's link down makes its VFs Unhealthy in every pool, and Healthy again once it is up"

# sriov-e810-numvfs: PF1 8 -> 0 -> 8 -> 4 VFs
script "$NODES/sriov-e810-numvfs.script"
mark "numvfs 0"
want $VFIO 1 0000:8a:01.6,0000:8a:01.7 "$VFIO_U"
want $PF1 1 ""
want $PF0 1 $E810_PF0
not_served "0000:8a:00.0 PF with VFs enabled" "0000:8a:00.1 no pool's selectors take it" \
        "0000:8a:01.3 no pool's selectors take it" "0000:8a:01.4 no pool's selectors take it"
devinfo $DI_VFIO6 $DI_PF01 example.com-e810_vfio-0000:8a:01.5-device.json
pass "device-info: the files of the VFs sriov_numvfs 0 destroyed are gone; the rebound VF's stays"
mark "numvfs 8"
e810_at_load
mark "numvfs 4"
want $VFIO 1 0000:8a:01.6,0000:8a:01.7 "$VFIO_U"
want $PF1 1 0000:8a:05.0,0000:8a:05.1
not_served "0000:8a:00.0 PF with VFs enabled" "0000:8a:00.1 PF with VFs enabled" \
        "0000:8a:01.3 no pool's selectors take it" "0000:8a:01.4 no pool's selectors take it" \
        "0000:8a:05.2 no pool's selectors take it" "0000:8a:05.3 no pool's selectors take it"
ctl "sriov 0000:8a:00.1 0"
ctl "sriov 0000:8a:00.1 8"
e810_at_load
pass "sriov_numvfs: the VFs of a disabled PF leave their pools, the PF is looked at again; enabled, they come back"

# sriov-e810-unplug-pf: PF1 hot-removed (SR-IOV off first) and back
script "$NODES/sriov-e810-unplug-pf.script"
mark gone
want $VFIO 1 0000:8a:01.6,0000:8a:01.7 "$VFIO_U"
want $PF1 1 ""
not_served "0000:8a:00.0 PF with VFs enabled" \
        "0000:8a:01.3 no pool's selectors take it" "0000:8a:01.4 no pool's selectors take it"
mark back
e810_at_load
pass "a PF unplugged: its VFs leave, it is no longer named; replugged, all is as at load"

# SR-IOV off on PF0: its VFs leave, and PF0 itself (acpi_index 3) is served by acpiIndexes
ctl "sriov 0000:8a:00.0 0"
VFIO_U=                 # 01.5, kept Unhealthy in the vfio pool, leaves with its PF's VFs
want $PORT 1 0000:8a:00.0
want $PF0 1 ""
want $VFIO 1 0000:8a:05.4,0000:8a:05.5 "$VFIO_U"
not_served "0000:8a:00.1 PF with VFs enabled" "0000:8a:05.2 no pool's selectors take it" \
        "0000:8a:05.3 no pool's selectors take it" "0000:8a:05.7 no pool's selectors take it"
assert_eq "$(allocate $PORT 0000:8a:00.0)" "env PCIDEVICE_INTEL_COM_E810_PORT=0000:8a:00.0
env PCIDEVICE_INTEL_COM_E810_PORT_INFO={\"0000:8a:00.0\":{\"generic\":{\"deviceID\":\"0000:8a:00.0\"}}}" "Allocate of the PF"
devinfo intel.com-e810_port-0000:8a:00.0-device.json
assert_eq "$(devinfo_json intel.com-e810_port-0000:8a:00.0-device.json)" \
        '{"type":"pci","version":"1.1.0","pci":{"pci-address":"0000:8a:00.0"}}' "device-info of a PF"
ctl "sriov 0000:8a:00.0 8"
want $VFIO 1 $E810_VFIO "$VFIO_U"
want $PF0 1 $E810_PF0
want $PF1 1 $E810_PF1
want $PORT 1 ""
not_served "${E810_NOT_SERVED[@]}"
devinfo
pass "acpiIndexes: PF0 is served while its VFs are off, and leaves its pool when they are enabled"
pass "device-info: the files of PF0's VFs went with them, the PF's when its VFs came back"

# config.json rewritten: only e810_pf1 changes (it takes 05.2 too); the other pools keep their
# registration and stream, and get no new list
n_lists=$(count_lines "$T/kubelet.out" '^devices ')
n_pf1=$(count_lines "$T/kubelet.out" "^devices resource=$PF1 ")
sed 's/"0000:8a:05.6"\]/"0000:8a:05.6", "0000:8a:05.2"]/' "$T/e810.json" >"$T/e810.json.new"
mv "$T/e810.json.new" "$T/e810.json"
want $PF1 1 0000:8a:05.0,0000:8a:05.1,0000:8a:05.2,0000:8a:05.6
wait_line "$T/e810.err" '"Reloaded the config file" backend="sriov" path="[^"]*/e810\.json" pools=4 unchangedPools=3 trigger="inotify"$'
not_served "0000:8a:00.0 PF with VFs enabled" "0000:8a:00.1 PF with VFs enabled" \
        "0000:8a:01.3 no pool's selectors take it" "0000:8a:01.4 no pool's selectors take it" \
        "0000:8a:05.3 no pool's selectors take it" "0000:8a:05.7 no pool's selectors take it"
# an event after the reload: once its list is there, a list the reload made would be too
ctl unbind 0000:8a:01.2
want $PF0 1 0000:8a:01.0,0000:8a:01.1,0000:8a:01.5 0000:8a:01.2
assert_eq "$(count_lines "$T/kubelet.out" '^devices ')" $((n_lists + 2)) "new lists after the reload and one unbind"
assert_eq "$(count_lines "$T/kubelet.out" "^devices resource=$PF1 ")" $((n_pf1 + 1)) "new lists of the changed pool"
for res in $VFIO $PF0 $PF1 $PORT; do
        assert_eq "$(registrations "$res")" 1 "$res registered once"
done
assert_eq "$(count_lines "$T/kubelet.out" '^stream-ended ')" 0 "streams ended"
pass "config.json rewritten: the changed pool gets its new list on its stream; the others are untouched"

# a pool renamed: its resource goes (its stream ends), the new one registers; the rest stay
sed 's/"e810_port"/"e810_uplink"/' "$T/e810.json" >"$T/e810.json.new"
mv "$T/e810.json.new" "$T/e810.json"
wait_line "$T/kubelet.out" '^registered resource=intel\.com/e810_uplink '
want intel.com/e810_uplink 1 ""
wait_line "$T/kubelet.out" "^stream-ended resource=$PORT "
for res in $VFIO $PF0 $PF1 $PORT; do
        assert_eq "$(registrations "$res")" 1 "$res registered once"
done
assert_eq "$(count_lines "$T/kubelet.out" '^stream-ended ')" 1 "streams ended"
assert_eq "$(ls "$DIR" | grep -c '^kdp-')" 4 "plugin sockets"
[ -S "$(plugin_socket intel.com_e810_port)" ] && fail "the retired pool's socket is still there"
pass "a pool renamed: only its resource is retired and registered anew"

# a pool dropped from config.json: the device-info files of its devices go
assert_eq "$(allocate $PF1 0000:8a:05.0 | head -n 1)" "env PCIDEVICE_INTEL_COM_E810_PF1=0000:8a:05.0" "Allocate of a VF of PF1"
devinfo intel.com-e810_pf1-0000:8a:05.0-device.json
sed '/"e810_pf1"/,+1d' "$T/e810.json" >"$T/e810.json.new"
mv "$T/e810.json.new" "$T/e810.json"
wait_line "$T/kubelet.out" "^stream-ended resource=$PF1 "
devinfo
pass "device-info: the files of a pool dropped from config.json are gone"
node_done

# ---------------------------------------------------------------------------------------------
# ConnectX-6 Dx: RDMA VFs below a switchdev uplink (PF0) and a legacy PF1, all on NUMA 0

RDMA=nvidia.com/cx6_rdma
ETH=nvidia.com/cx6_eth
IB=nvidia.com/cx6_ib
cat >"$T/cx6.json" <<'END'
{"resourceList": [
 {"resourceName": "cx6_ib", "resourcePrefix": "nvidia.com",
  "selectors": [{"vendors": ["15b3"], "linkTypes": ["infiniband"]}]},
 {"resourceName": "cx6_rdma", "resourcePrefix": "nvidia.com",
  "selectors": [{"vendors": ["15b3"], "devices": ["101e"], "isRdma": true, "pfNames": ["ens1f0np0"]}]},
 {"resourceName": "cx6_eth", "resourcePrefix": "nvidia.com",
  "selectors": [{"linkTypes": ["ether"], "rootDevices": ["0000:3b:00.1#1-3"]}]}
]}
END
config_map "$T/cm-cx6" "$T/cx6.json"
node cx6 sriov-cx6dx "$T/cm-cx6/config.json"
want $IB 0 ""
want $RDMA 0 0000:3b:00.2,0000:3b:00.3,0000:3b:00.4,0000:3b:00.5
want $ETH 0 0000:3b:01.3,0000:3b:01.4,0000:3b:01.5
not_served "0000:3b:00.0 PF with VFs enabled" "0000:3b:00.1 PF with VFs enabled" "0000:3b:01.2 no pool's selectors take it"
assert_eq "$(count_lines "$T/kubelet.out" '^registered ')" 3 "three pools registered"
pass "ConnectX-6 Dx: isRdma with the switchdev uplink's pfNames, linkTypes (no infiniband VF), rootDevices range; representors are no functions"

assert_eq "$(allocate $RDMA 0000:3b:00.2 0000:3b:00.5)" "env PCIDEVICE_NVIDIA_COM_CX6_RDMA=0000:3b:00.2,0000:3b:00.5
env PCIDEVICE_NVIDIA_COM_CX6_RDMA_INFO={\"0000:3b:00.2\":{\"generic\":{\"deviceID\":\"0000:3b:00.2\"},\"rdma\":{\"issm\":\"/dev/infiniband/issm2\",\"rdma_cm\":\"/dev/infiniband/rdma_cm\",\"rdma_dev\":\"mlx5_2\",\"umad\":\"/dev/infiniband/umad2\",\"uverbs\":\"/dev/infiniband/uverbs2\"}},\"0000:3b:00.5\":{\"generic\":{\"deviceID\":\"0000:3b:00.5\"},\"rdma\":{\"issm\":\"/dev/infiniband/issm5\",\"rdma_cm\":\"/dev/infiniband/rdma_cm\",\"rdma_dev\":\"mlx5_5\",\"umad\":\"/dev/infiniband/umad5\",\"uverbs\":\"/dev/infiniband/uverbs5\"}}}
device /dev/infiniband/issm2 /dev/infiniband/issm2 rw
device /dev/infiniband/issm5 /dev/infiniband/issm5 rw
device /dev/infiniband/rdma_cm /dev/infiniband/rdma_cm rw
device /dev/infiniband/umad2 /dev/infiniband/umad2 rw
device /dev/infiniband/umad5 /dev/infiniband/umad5 rw
device /dev/infiniband/uverbs2 /dev/infiniband/uverbs2 rw
device /dev/infiniband/uverbs5 /dev/infiniband/uverbs5 rw" "Allocate of two RDMA VFs"
assert_eq "$(allocate $ETH 0000:3b:01.4)" "env PCIDEVICE_NVIDIA_COM_CX6_ETH=0000:3b:01.4
env PCIDEVICE_NVIDIA_COM_CX6_ETH_INFO={\"0000:3b:01.4\":{\"generic\":{\"deviceID\":\"0000:3b:01.4\"}}}" \
        "Allocate of a VF of a pool without isRdma: no RDMA nodes"
pass "Allocate: the rdma provider's _INFO and the RDMA DeviceSpecs"

# sriov-cx6dx-numvfs: PF1 4 -> 0 -> 8
script "$NODES/sriov-cx6dx-numvfs.script"
mark "numvfs 0"
want $ETH 0 ""
want $RDMA 0 0000:3b:00.2,0000:3b:00.3,0000:3b:00.4,0000:3b:00.5
not_served "0000:3b:00.0 PF with VFs enabled" "0000:3b:00.1 no pool's selectors take it"
mark "numvfs 8"
want $ETH 0 0000:3b:01.3,0000:3b:01.4,0000:3b:01.5
not_served "0000:3b:00.0 PF with VFs enabled" "0000:3b:00.1 PF with VFs enabled" \
        "0000:3b:01.2 no pool's selectors take it" "0000:3b:01.6 no pool's selectors take it" \
        "0000:3b:01.7 no pool's selectors take it" "0000:3b:02.0 no pool's selectors take it" \
        "0000:3b:02.1 no pool's selectors take it"
want $IB 0 ""
pass "sriov_numvfs 4 -> 0 -> 8 on PF1: the range takes VFs 1-3, the VFs beyond it are not served"

# the ConfigMap updated: cx6_eth's range becomes #1-2; cx6_rdma and cx6_ib keep their
# registration, socket and stream, and get no new list
socks=$(ls "$DIR" | grep '^kdp-')
n_rdma=$(lists $RDMA) n_ib=$(lists $IB) n_eth=$(lists $ETH)
sed 's/#1-3/#1-2/' "$T/cx6.json" >"$T/cx6-eth12.json"
config_map "$T/cm-cx6" "$T/cx6-eth12.json"
want $ETH 0 0000:3b:01.3,0000:3b:01.4
wait_line "$T/cx6.err" '"Reloaded the config file" backend="sriov" path="[^"]*/cm-cx6/config\.json" pools=3 unchangedPools=2 trigger="inotify"$'
assert_eq "$(lists $ETH)" $((n_eth + 1)) "new lists of the changed pool"

# kdpd's SIGHUP, its own config unchanged: config.json is read again, nothing else happens
kill -HUP "$(pgrep -P "$KDPD_PID")"
wait_line "$T/cx6.err" '"Reloaded config" changedBackends=0 reloadedBackends=1$'
wait_line "$T/cx6.err" '"Reloaded the config file" backend="sriov" path="[^"]*/cm-cx6/config\.json" pools=3 unchangedPools=3 trigger="SIGHUP"$'
pass "SIGHUP with kdpd's config unchanged: the backend read config.json again"
ctl unbind 0000:3b:01.4         # an event after both: once its list is there, a list they made would be too
want $ETH 0 0000:3b:01.3 0000:3b:01.4
for res in $RDMA $IB $ETH; do
        assert_eq "$(registrations "$res")" 1 "$res registered once"
done
assert_eq "$(lists $RDMA)" "$n_rdma" "lists of the unchanged cx6_rdma"
assert_eq "$(lists $IB)" "$n_ib" "lists of the unchanged cx6_ib"
assert_eq "$(lists $ETH)" $((n_eth + 2)) "lists of the changed pool (the update, the unbind)"
assert_eq "$(count_lines "$T/kubelet.out" '^stream-ended ')" 0 "streams ended"
assert_eq "$(ls "$DIR" | grep '^kdp-')" "$socks" "plugin sockets"
pass "ConfigMap update (..data swap): only the changed pool's stream got a list; the others kept registration, socket and stream"

# a broken config.json through the ConfigMap: logged with file:line:key, the pools stay; fixed, read again
printf '{"resourceList": [\n {"resourceName": 7}\n]}\n' >"$T/cx6-bad.json"
config_map "$T/cm-cx6" "$T/cx6-bad.json"
wait_line "$T/cx6.err" '"Rejected SR-IOV config file" backend="sriov" path="[^"]*/cm-cx6/config\.json" line=2 key="resourceList\[0\]\.resourceName"'
wait_line "$T/cx6.err" '"Kept the running pools after a failed reload of the config file" backend="sriov" path="[^"]*/cm-cx6/config\.json" trigger="inotify"'
ctl bind 0000:3b:01.4 mlx5_core
want $ETH 0 0000:3b:01.3,0000:3b:01.4
want $RDMA 0 0000:3b:00.2,0000:3b:00.3,0000:3b:00.4,0000:3b:00.5
config_map "$T/cm-cx6" "$T/cx6.json"
want $ETH 0 0000:3b:01.3,0000:3b:01.4,0000:3b:01.5
wait_count "$T/cx6.err" '"Reloaded the config file" backend="sriov" path="[^"]*/cm-cx6/config\.json" pools=3 unchangedPools=2 trigger="inotify"$' 2
for res in $RDMA $IB $ETH; do
        assert_eq "$(registrations "$res")" 1 "$res registered once"
done
assert_eq "$(lists $RDMA)" "$n_rdma" "lists of the unchanged cx6_rdma"
assert_eq "$(count_lines "$T/cx6.err" '"Kept the running pools after a failed reload')" 1 "failed reloads"
pass "a broken config.json keeps the running pools, named file:line:key; fixed, it is read again"
node_done

# ---------------------------------------------------------------------------------------------
# no-IOMMU: the host node is /dev/vfio/noiommu-<N>, the container's /dev/vfio/<N>

NOIOMMU=intel.com/vfio_noiommu
echo '{"resourceList": [{"resourceName": "vfio_noiommu", "selectors": [{"drivers": ["vfio-pci"]}]}]}' >"$T/noiommu.json"
node noiommu sriov-noiommu
want $NOIOMMU 1 0000:8a:01.6,0000:8a:01.7
not_served "0000:8a:00.0 PF with VFs enabled" "0000:8a:01.0 no pool's selectors take it" \
        "0000:8a:01.1 no pool's selectors take it" "0000:8a:01.2 no pool's selectors take it" \
        "0000:8a:01.3 no pool's selectors take it" "0000:8a:01.4 no pool's selectors take it" \
        "0000:8a:01.5 no pool's selectors take it"
assert_eq "$(allocate $NOIOMMU 0000:8a:01.7 0000:8a:01.6)" "env PCIDEVICE_INTEL_COM_VFIO_NOIOMMU=0000:8a:01.7,0000:8a:01.6
env PCIDEVICE_INTEL_COM_VFIO_NOIOMMU_INFO={\"0000:8a:01.6\":{\"generic\":{\"deviceID\":\"0000:8a:01.6\"},\"vfio\":{\"dev-mount\":\"/dev/vfio/106\",\"mount\":\"/dev/vfio/vfio\"}},\"0000:8a:01.7\":{\"generic\":{\"deviceID\":\"0000:8a:01.7\"},\"vfio\":{\"dev-mount\":\"/dev/vfio/107\",\"mount\":\"/dev/vfio/vfio\"}}}
device /dev/vfio/noiommu-106 /dev/vfio/106 rw
device /dev/vfio/noiommu-107 /dev/vfio/107 rw
device /dev/vfio/vfio /dev/vfio/vfio rw" "Allocate on the no-IOMMU node"
pass "no-IOMMU: the vfio group nodes noiommu-<N> on the host, /dev/vfio/<N> in the container"
node_done

# ---------------------------------------------------------------------------------------------
# PodResources: the stand-in kubelet admits a pod of 2 vfio VFs and answers List on the socket
# kdpd finds by default beside the kubelet dir ($T/pod-resources/kubelet.sock, as
# /var/lib/kubelet/pod-resources is beside /var/lib/kubelet/device-plugins). kdpd lists every
# 500 ms (-v 2 logs each failed List); a file goes only by a List begun 3 s after its write.

PODRES="$T/pod-resources/kubelet.sock"
cat >"$T/podres.json" <<'END'
{"resourceList": [
 {"resourceName": "e810_vfio", "resourcePrefix": "example.com",
  "selectors": [{"drivers": ["vfio-pci"]}]}
]}
END
KUBELET_ARGS=(--admit $VFIO=2 --pod-resources "$PODRES")
KDPD_ARGS=(--pod-resources-period-ms 500 -o sriov.devinfo_grace_ms=3000 --v 2)
node podres sriov-e810
KUBELET_ARGS=()
KDPD_ARGS=()
wait_line "$T/kubelet.out" "^admitted resource=$VFIO "
assert_eq "$(grep "^admitted resource=$VFIO " "$T/kubelet.out")" \
        "admitted resource=$VFIO n=2 preferred=0000:8a:01.6,0000:8a:01.7 allocated=0000:8a:01.6,0000:8a:01.7" \
        "the pod's admission"
DI_POD6=example.com-e810_vfio-0000:8a:01.6-device.json
DI_POD7=example.com-e810_vfio-0000:8a:01.7-device.json
devinfo $DI_POD6 $DI_POD7
# lists_after N: waits until the stand-in answered N more Lists naming exactly 1 pod after the
# admission. Lists come every 500 ms (plus one 5 s after the Allocate): the 10th began at least
# 4 s after the first, and so more than 3 s after the files were written
lists_after() {
        local end
        end=$(deadline_ms "$(wait_s 60)")
        while [ "$(count_lines "$T/kubelet.out" '^listed pods=1$')" -lt "$1" ]; do
                [ "$(now_ms)" -lt "$end" ] || fail "fewer than $1 Lists naming the pod"
                sleep 0.05
        done
}
lists_after 10
devinfo $DI_POD6 $DI_POD7
pass "PodResources: a running pod's device-info files stay while the kubelet lists its devices"

kill -USR2 "$KUBELET_PID"
wait_line "$T/kubelet.out" "^freed resource=$VFIO ids=0000:8a:01.6,0000:8a:01.7\$"
wait_line "$T/kubelet.out" '^listed pods=0$'
devinfo
assert_eq "$(count_lines "$T/podres.err" '"Removed a device-info file" .*reason="freed: the kubelet lists it in no pod"')" 2 \
        "files removed as freed"
pass "PodResources: the pod ended, List no longer names its devices: their device-info files go"

# the kubelet stops (its sockets go): List fails; a device allocated meanwhile keeps its file
stop_kubelet
assert_eq "$(allocate $VFIO 0000:8a:05.4 | head -n 1)" "env PCIDEVICE_EXAMPLE_COM_E810_VFIO=0000:8a:05.4" \
        "Allocate with no kubelet"
devinfo example.com-e810_vfio-0000:8a:05.4-device.json
failed_lists() {
        count_lines "$T/podres.err" '"Failed to list pod resources" socket='
}
n=$(failed_lists)
wait_count() {
        local end
        end=$(deadline_ms "$(wait_s 60)")
        while [ "$(failed_lists)" -lt "$1" ]; do
                [ "$(now_ms)" -lt "$end" ] || fail "fewer than $1 failed Lists"
                sleep 0.05
        done
}
# 10 failed Lists after the write: the last began more than 3 s after it
wait_count $((n + 10))
# a socket nobody accepts on: refused, the same
/usr/bin/python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$PODRES"
n=$(failed_lists)
wait_count $((n + 4))
grep -q '"Failed to list pod resources" .*reason="status 14: ' "$T/podres.err" ||
        fail "no failed List with status UNAVAILABLE (14) from the refusing socket"
assert_eq "$(count_lines "$T/podres.err" '^W.*"Failed to list pod resources; keeping what the last list said, retrying" socket="'"$PODRES"'"')" 1 \
        "one warning for the whole failing time"
devinfo example.com-e810_vfio-0000:8a:05.4-device.json
assert_eq "$(allocate $VFIO 0000:8a:05.5 | head -n 1)" "env PCIDEVICE_EXAMPLE_COM_E810_VFIO=0000:8a:05.5" \
        "kdpd still answers Allocate"
pass "PodResources: List failing (no socket, then refused) keeps the files, with one warning; kdpd keeps serving"

# a kubelet again, which knows no pod: List works again, both files go
start_kubelet kubelet --pod-resources "$PODRES"
wait_line "$T/podres.err" '"Listed pod resources again"'
devinfo
pass "PodResources: List back: the files of devices it does not name go"
node_done

# ---------------------------------------------------------------------------------------------
# E810 again, for the two providers the node itself does not show: uio (VF 3 bound to igb_uio
# here, with the uio class device and node its probe makes) and extra (additionalInfo)

UIO=intel.com/e810_uio
EXTRA=intel.com/e810_extra
cat >"$T/e810-more.json" <<'END'
{"resourceList": [
 {"resourceName": "e810_uio", "selectors": [{"drivers": ["igb_uio"]}]},
 {"resourceName": "e810_extra", "selectors": [{"pciAddresses": ["0000:8a:05.0", "0000:8a:05.6"]}],
  "additionalInfo": {"*": {"owner": "net-team", "mtu": "9000"}, "0000:8a:05.6": {"mtu": "1500", "vlan": "42"}}}
]}
END
node e810-more sriov-e810
want $UIO 1 ""
want $EXTRA 1 0000:8a:05.0,0000:8a:05.6
assert_eq "$(allocate $EXTRA 0000:8a:05.0 0000:8a:05.6)" "env PCIDEVICE_INTEL_COM_E810_EXTRA=0000:8a:05.0,0000:8a:05.6
env PCIDEVICE_INTEL_COM_E810_EXTRA_INFO={\"0000:8a:05.0\":{\"extra\":{\"mtu\":\"9000\",\"owner\":\"net-team\"},\"generic\":{\"deviceID\":\"0000:8a:05.0\"}},\"0000:8a:05.6\":{\"extra\":{\"mtu\":\"1500\",\"owner\":\"net-team\",\"vlan\":\"42\"},\"generic\":{\"deviceID\":\"0000:8a:05.6\"},\"vfio\":{\"dev-mount\":\"/dev/vfio/116\",\"mount\":\"/dev/vfio/vfio\"}}}
device /dev/vfio/116 /dev/vfio/116 rw
device /dev/vfio/vfio /dev/vfio/vfio rw" "Allocate with additionalInfo: the \"*\" entry, the function's own over it"
pass "additionalInfo: the extra provider's _INFO"

VF3=sys/devices/pci0000:89/0000:89:02.0/0000:8a:01.3
ctl unbind 0000:8a:01.3
ctl write "$VF3/uio/uio0/name" igb_uio
ctl write dev/uio0 ""
ctl bind 0000:8a:01.3 igb_uio
want $UIO 1 0000:8a:01.3
assert_eq "$(allocate $UIO 0000:8a:01.3)" "env PCIDEVICE_INTEL_COM_E810_UIO=0000:8a:01.3
env PCIDEVICE_INTEL_COM_E810_UIO_INFO={\"0000:8a:01.3\":{\"generic\":{\"deviceID\":\"0000:8a:01.3\"},\"uio\":{\"mount\":\"/dev/uio0\"}}}
device /dev/uio0 /dev/uio0 rw" "Allocate of an igb_uio VF"
ctl rm dev/uio0
want $UIO 1 "" 0000:8a:01.3
unhealthy $UIO 0000:8a:01.3 "device node /dev/uio0 missing"
ctl write dev/uio0 ""
want $UIO 1 0000:8a:01.3
pass "a VF bound to igb_uio: the uio provider's _INFO and /dev/uio0; Unhealthy while /dev/uio0 is missing"
node_done

# ---------------------------------------------------------------------------------------------
# ConnectX-6 in InfiniBand mode (sriov-cx6-ib): the VFs' default pkeys are 0xffff (VFs 0, 1:
# 0000:d8:00.1, 00.2) and 0x8001 (VFs 2, 3: 00.3, 00.4), their netdevs IPoIB (type 32); all on
# NUMA 1. pKeys match the file's text exactly ("0x1" is not "0x0001", as with sriovdp). An
# auxNetDevice pool is declared but stays empty, with a warning.

IB_P1=nvidia.com/ib_part1
IB_DEF=nvidia.com/ib_default
IB_SHORT=nvidia.com/ib_short
IB_ETH=nvidia.com/ib_eth
AUX=nvidia.com/ib_sf
cat >"$T/ib.json" <<'END'
{"resourceList": [
 {"resourceName": "ib_part1", "resourcePrefix": "nvidia.com",
  "selectors": [{"pKeys": ["0x8001"], "isRdma": true}]},
 {"resourceName": "ib_default", "resourcePrefix": "nvidia.com",
  "selectors": [{"vendors": ["15b3"], "devices": ["101c"], "linkTypes": ["infiniband"], "pKeys": ["0xffff"]}]},
 {"resourceName": "ib_short", "resourcePrefix": "nvidia.com",
  "selectors": [{"pKeys": ["0x1", "0xFFFF"]}]},
 {"resourceName": "ib_eth", "resourcePrefix": "nvidia.com",
  "selectors": [{"linkTypes": ["ether"]}]},
 {"resourceName": "ib_sf", "resourcePrefix": "nvidia.com", "deviceType": "auxNetDevice",
  "selectors": [{"vendors": ["15b3"], "auxTypes": ["sf"]}]}
]}
END
node ib sriov-cx6-ib
want $IB_P1 1 0000:d8:00.3,0000:d8:00.4
want $IB_DEF 1 0000:d8:00.1,0000:d8:00.2
want $IB_SHORT 1 ""
want $IB_ETH 1 ""
want $AUX 1 ""
not_served "0000:d8:00.0 PF with VFs enabled"
assert_eq "$(count_lines "$T/kubelet.out" '^registered ')" 5 "five pools registered"
wait_line "$T/ib.err" '^W.*"auxNetDevice pools hold auxiliary devices, which this backend does not serve: the pool stays empty"'
wait_line "$T/ib.err" '^W.*"Pool serves no device: auxiliary devices are not discovered" backend="sriov" resource="nvidia\.com/ib_sf"'
pass "InfiniBand: pKeys takes the VFs whose default pkey it names (exactly), with linkTypes infiniband (IPoIB); no VF is ether"
pass "auxNetDevice: the pool is registered and stays empty, with a warning"

assert_eq "$(allocate $IB_P1 0000:d8:00.4 0000:d8:00.3)" "env PCIDEVICE_NVIDIA_COM_IB_PART1=0000:d8:00.4,0000:d8:00.3
env PCIDEVICE_NVIDIA_COM_IB_PART1_INFO={\"0000:d8:00.3\":{\"generic\":{\"deviceID\":\"0000:d8:00.3\"},\"rdma\":{\"issm\":\"/dev/infiniband/issm3\",\"rdma_cm\":\"/dev/infiniband/rdma_cm\",\"rdma_dev\":\"mlx5_3\",\"umad\":\"/dev/infiniband/umad3\",\"uverbs\":\"/dev/infiniband/uverbs3\"}},\"0000:d8:00.4\":{\"generic\":{\"deviceID\":\"0000:d8:00.4\"},\"rdma\":{\"issm\":\"/dev/infiniband/issm4\",\"rdma_cm\":\"/dev/infiniband/rdma_cm\",\"rdma_dev\":\"mlx5_4\",\"umad\":\"/dev/infiniband/umad4\",\"uverbs\":\"/dev/infiniband/uverbs4\"}}}
device /dev/infiniband/issm3 /dev/infiniband/issm3 rw
device /dev/infiniband/issm4 /dev/infiniband/issm4 rw
device /dev/infiniband/rdma_cm /dev/infiniband/rdma_cm rw
device /dev/infiniband/umad3 /dev/infiniband/umad3 rw
device /dev/infiniband/umad4 /dev/infiniband/umad4 rw
device /dev/infiniband/uverbs3 /dev/infiniband/uverbs3 rw
device /dev/infiniband/uverbs4 /dev/infiniband/uverbs4 rw" "Allocate of two VFs of partition 0x8001 with isRdma"
assert_eq "$(allocate $IB_DEF 0000:d8:00.2)" "env PCIDEVICE_NVIDIA_COM_IB_DEFAULT=0000:d8:00.2
env PCIDEVICE_NVIDIA_COM_IB_DEFAULT_INFO={\"0000:d8:00.2\":{\"generic\":{\"deviceID\":\"0000:d8:00.2\"}}}" \
        "Allocate of a VF of the default partition (no isRdma: no RDMA nodes)"
devinfo nvidia.com-ib_part1-0000:d8:00.3-device.json nvidia.com-ib_part1-0000:d8:00.4-device.json \
        nvidia.com-ib_default-0000:d8:00.2-device.json
assert_eq "$(devinfo_json nvidia.com-ib_part1-0000:d8:00.3-device.json)" \
        '{"type":"pci","version":"1.1.0","pci":{"pci-address":"0000:d8:00.3","rdma-device":"mlx5_3","pf-pci-address":"0000:d8:00.0"}}' \
        "device-info of an InfiniBand VF"
assert_eq "$(devinfo_json nvidia.com-ib_default-0000:d8:00.2-device.json)" \
        '{"type":"pci","version":"1.1.0","pci":{"pci-address":"0000:d8:00.2","pf-pci-address":"0000:d8:00.0"}}' \
        "device-info of an InfiniBand VF of a pool without isRdma: no rdma-device"
pass "Allocate on InfiniBand: the rdma provider's _INFO and nodes for isRdma, generic only without; device-info with rdma-device for isRdma only"

# VF 3 (00.4) rebound to vfio-pci: no IPoIB netdev and no RDMA device, so no pkey (the PF's
# link type, infiniband, stands for it); it leaves the 0x8001 pool. Back on mlx5_core, it returns.
ctl unbind 0000:d8:00.4
ctl bind 0000:d8:00.4 vfio-pci
want $IB_P1 1 0000:d8:00.3 0000:d8:00.4
unhealthy $IB_P1 0000:d8:00.4 "bound to vfio-pci"
ctl unbind 0000:d8:00.4
ctl bind 0000:d8:00.4 mlx5_core
want $IB_P1 1 0000:d8:00.3,0000:d8:00.4
pass "InfiniBand: a VF rebound to vfio-pci (no pkey then) leaves its pkey pool Unhealthy, and is back once on mlx5_core"
node_done

# ---------------------------------------------------------------------------------------------
# vDPA on the ConnectX-6 Dx (sriov-cx6dx): PF0's VF 1 (0000:3b:00.3) has vdpa0 and VF 2 (00.4)
# vdpa1 on vhost_vdpa (/dev/vhost-vdpa-0, -1), VF 3 (00.5) vdpa2 on virtio_vdpa; VF 0 (00.2)
# none. All on NUMA 0.

VHOST=nvidia.com/vdpa_vhost
VIRTIO=nvidia.com/vdpa_virtio
PLAIN=nvidia.com/cx6_plain
cat >"$T/vdpa.json" <<'END'
{"resourceList": [
 {"resourceName": "vdpa_vhost", "resourcePrefix": "nvidia.com",
  "selectors": [{"vendors": ["15b3"], "devices": ["101e"], "drivers": ["mlx5_core"], "vdpaType": "vhost"}]},
 {"resourceName": "vdpa_virtio", "resourcePrefix": "nvidia.com",
  "selectors": [{"vdpaType": "virtio"}]},
 {"resourceName": "cx6_plain", "resourcePrefix": "nvidia.com",
  "selectors": [{"pfNames": ["ens1f0np0"]}]}
]}
END
node vdpa sriov-cx6dx
want $VHOST 0 0000:3b:00.3,0000:3b:00.4
want $VIRTIO 0 0000:3b:00.5
want $PLAIN 0 0000:3b:00.2
pass "vdpaType: vhost and virtio take the VFs whose vDPA device is bound to vhost_vdpa and virtio_vdpa"

assert_eq "$(allocate $VHOST 0000:3b:00.4 0000:3b:00.3)" "env PCIDEVICE_NVIDIA_COM_VDPA_VHOST=0000:3b:00.4,0000:3b:00.3
env PCIDEVICE_NVIDIA_COM_VDPA_VHOST_INFO={\"0000:3b:00.3\":{\"generic\":{\"deviceID\":\"0000:3b:00.3\"},\"vdpa\":{\"mount\":\"/dev/vhost-vdpa-0\"}},\"0000:3b:00.4\":{\"generic\":{\"deviceID\":\"0000:3b:00.4\"},\"vdpa\":{\"mount\":\"/dev/vhost-vdpa-1\"}}}
device /dev/vhost-vdpa-0 /dev/vhost-vdpa-0 rw
device /dev/vhost-vdpa-1 /dev/vhost-vdpa-1 rw" "Allocate of two vhost vDPA VFs"
assert_eq "$(allocate $VIRTIO 0000:3b:00.5)" "env PCIDEVICE_NVIDIA_COM_VDPA_VIRTIO=0000:3b:00.5
env PCIDEVICE_NVIDIA_COM_VDPA_VIRTIO_INFO={\"0000:3b:00.5\":{\"generic\":{\"deviceID\":\"0000:3b:00.5\"},\"vdpa\":{}}}" \
        "Allocate of a virtio vDPA VF: an empty vdpa provider, no device node"
devinfo nvidia.com-vdpa_vhost-0000:3b:00.3-device.json nvidia.com-vdpa_vhost-0000:3b:00.4-device.json \
        nvidia.com-vdpa_virtio-0000:3b:00.5-device.json
assert_eq "$(devinfo_json nvidia.com-vdpa_vhost-0000:3b:00.3-device.json)" \
        '{"type":"vdpa","version":"1.1.0","vdpa":{"parent-device":"vdpa0","driver":"vhost","path":"/dev/vhost-vdpa-0","pci-address":"0000:3b:00.3","pf-pci-address":"0000:3b:00.0"}}' \
        "device-info of a vhost vDPA VF"
assert_eq "$(devinfo_json nvidia.com-vdpa_vhost-0000:3b:00.4-device.json)" \
        '{"type":"vdpa","version":"1.1.0","vdpa":{"parent-device":"vdpa1","driver":"vhost","path":"/dev/vhost-vdpa-1","pci-address":"0000:3b:00.4","pf-pci-address":"0000:3b:00.0"}}' \
        "device-info of the other vhost vDPA VF"
assert_eq "$(devinfo_json nvidia.com-vdpa_virtio-0000:3b:00.5-device.json)" \
        '{"type":"vdpa","version":"1.1.0","vdpa":{"parent-device":"vdpa2","driver":"virtio","pci-address":"0000:3b:00.5","pf-pci-address":"0000:3b:00.0"}}' \
        "device-info of a virtio vDPA VF: no path"
pass "Allocate of vDPA VFs: the vdpa provider (mount for vhost), the vhost-vdpa DeviceSpecs, device-info of type vdpa"

# the vhost-vdpa node goes: its VF is Unhealthy until it is back
ctl rm dev/vhost-vdpa-0
want $VHOST 0 0000:3b:00.4 0000:3b:00.3
unhealthy $VHOST 0000:3b:00.3 "device node /dev/vhost-vdpa-0 missing"
ctl write dev/vhost-vdpa-0 ""
want $VHOST 0 0000:3b:00.3,0000:3b:00.4
# VF 1 unbound: its vDPA device goes with it (and so its vhost-vdpa-0); it is kept Unhealthy
ctl unbind 0000:3b:00.3
want $VHOST 0 0000:3b:00.4 0000:3b:00.3
unhealthy $VHOST 0000:3b:00.3 "driver unbound"
pass "vDPA: a missing vhost-vdpa node or an unbound VF makes the member Unhealthy"
node_done
