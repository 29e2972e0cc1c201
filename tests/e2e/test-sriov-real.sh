# SPDX-License-Identifier: GPL-2.0-or-later
# The SR-IOV backend on this machine's real /sys and /dev (no simulated node): a `deviceType:
# pci` pool (kdp's own type) of the virtio functions that carry no traffic, virtio-rng
# (1af4:1044) and virtio-balloon (1af4:1045), served to the stand-in kubelet and one of them
# allocated. The expected IDs, NUMA nodes and drivers are read from /sys here; the devices are
# only read, never bound, unbound or written. Skipped (77) where the machine has no such
# function.
. "$(dirname "$0")/lib.sh"

RES=example.com/virtio_quiet
ENV=PCIDEVICE_EXAMPLE_COM_VIRTIO_QUIET

# what /sys shows: the functions in address order, those bound to a driver (a pool takes no
# function without one: plugins/sriov/README.md), their NUMA nodes
funcs=() healthy=() unbound=() numa=()
for dev in /sys/bus/pci/devices/*; do
        [ "$(cat "$dev/vendor" 2>/dev/null)" = 0x1af4 ] || continue
        case $(cat "$dev/device" 2>/dev/null) in
        0x1044 | 0x1045) funcs+=("${dev##*/}") ;;
        esac
done
[ ${#funcs[@]} -gt 0 ] || { echo "skip: no virtio-rng (1af4:1044) or virtio-balloon (1af4:1045) function in /sys/bus/pci/devices"; exit 77; }
for a in $(printf '%s\n' "${funcs[@]}" | sort); do
        if [ -e "/sys/bus/pci/devices/$a/driver" ]; then
                healthy+=("$a")
                n=$(cat "/sys/bus/pci/devices/$a/numa_node" 2>/dev/null || echo -1)
                [ "$n" -ge 0 ] && numa+=("$a:$n")
        else
                unbound+=("$a")
        fi
done
[ ${#healthy[@]} -gt 0 ] || { echo "skip: no virtio-rng or virtio-balloon function is bound to a driver"; exit 77; }
join() {
        local IFS=$1
        shift
        echo "$*"
}

cat >"$T/real.json" <<'EOF'
{"resourceList": [
 {"resourceName": "virtio_quiet", "resourcePrefix": "example.com", "deviceType": "pci",
  "selectors": [{"vendors": ["1af4"], "devices": ["1044", "1045"]}]}
]}
EOF
start_kubelet kubelet
start_kdpd kdpd --backend sriov -o sriov.config_file="$T/real.json" --v 2
wait_line "$T/kdpd.err" '"Finished the first scan" resources=1$'
re="^devices resource=$RES capacity=${#healthy[@]} allocatable=${#healthy[@]} healthy=$(join , "${healthy[@]}") unhealthy= numa=$(join ';' "${numa[@]}")\$"
devices_match "$RES" "${re//./\\.}"
assert_eq "$(count_lines "$T/kubelet.out" '^registered ')" 1 "one pool registered"
want_ns=""
for a in "${unbound[@]}"; do
        want_ns+="not served: $a driver unbound"$'\n'
done
assert_eq "$("$KDPCTL" not-served --state-dir "$T/state" 2>&1)" "${want_ns%$'\n'}" "kdpctl not-served"
pass "deviceType pci on the real /sys: the bound virtio-rng/balloon functions ($(join ' ' "${healthy[@]}")), Healthy, with their NUMA nodes"

a=${healthy[0]}
assert_eq "$("$KDPCTL" allocate --socket "$(plugin_socket "${RES/\//_}")" "$a" 2>&1)" "env $ENV=$a
env ${ENV}_INFO={\"$a\":{\"generic\":{\"deviceID\":\"$a\"}}}" "Allocate of $a"
assert_eq "$("$KDPCTL" allocate --socket "$(plugin_socket "${RES/\//_}")" 0000:ff:1f.7 2>&1)" \
        "error: code=INVALID_ARGUMENT message=unknown device \"0000:ff:1f.7\" of resource $RES" "Allocate of an ID not served"
pass "Allocate of $a: the PCIDEVICE_ env and its _INFO JSON, no DeviceSpecs ($(readlink "/sys/bus/pci/devices/$a/driver" | sed 's|.*/||') needs no node)"
stop_kdpd
