# SPDX-License-Identifier: GPL-2.0-or-later
# GPUs the GPU backend looks at and does not serve, on the simulated HGX node
# (tests/fixtures/nodes/gpu-h100x8): before kdpd starts, sim-node takes one GPU out of NVIDIA's
# procfs, writes a malformed `information` for another and "GPU Excluded: Yes" for a third,
# unbinds one and binds one to vfio-pci; the config denies one more. At --v 0 each gets one line
# with its address and reason, the 1 s rescans and udev events add none, `kdpctl not-served`
# lists them, and a reason that changes, a GPU that becomes served or goes away is logged once.
# Then two conditions that hold across rescans are logged once when they start and once when they
# end: a GPU whose numa_node is -1 (NUMA affinity dropped) and two GPUs reporting one UUID.
. "$(dirname "$0")/lib.sh"

SIM="$KDP_SOURCE_DIR/tests/sim-node/sim-node"
NODES="$KDP_SOURCE_DIR/tests/fixtures/nodes"
RES=nvidia.com/gpu
G1=GPU-5264ed78-cbf9-0162-2418-d9eaadde9f39     # 0000:19:00.0, /dev/nvidia1
G3=GPU-a6b80bb6-17d8-167a-1800-dbd44ba4af78     # 0000:3b:00.0
G6=GPU-7f2be42a-1dc0-9880-c66d-1d570a6c8325     # 0000:ba:00.0, NUMA 1, /dev/nvidia6
G7=GPU-2f9885ef-6659-ebc4-1750-e75cdbc10a17     # 0000:bb:00.0, NUMA 1, /dev/nvidia7
STATE="$T/state"
LOG="$T/kdpd.err"

mkfifo "$T/ctl"
exec 9<>"$T/ctl"
ctl() {
        echo "$*" >&9
}
# information BDF MINOR UUID EXCLUDED: an NVIDIA `information` file, C-escaped for `write` ("" UUID: none cached)
information() {
        local uuid=""
        [ -n "$3" ] && uuid="GPU UUID: \\t $3\\n"
        printf 'Model: \\t\\t NVIDIA H100 80GB HBM3\\n%sBus Location: \\t %s\\nDevice Minor: \\t %s\\nGPU Excluded:\\t %s' \
                "$uuid" "$1" "$2" "$4"
}
# once REGEX WHAT: waits for the line, then asserts there is exactly one
once() {
        wait_line "$LOG" "$1"
        assert_eq "$(count_lines "$LOG" "$1")" 1 "$2: one line"
}
# still_once REGEX... : each line is there exactly once (after rescans)
still_once() {
        local re
        for re in "$@"; do
                assert_eq "$(count_lines "$LOG" "$re")" 1 "still one line: $re"
        done
}
# wait_more REGEX N WHAT: waits until more than N lines of the log match
wait_more() {
        local end=$(($(now_ms) + 10000 * SLOW))
        while [ "$(count_lines "$LOG" "$1")" -le "$2" ]; do
                [ "$(now_ms)" -lt "$end" ] || fail "$3"
                sleep 0.05
        done
}
# rescans [UUID NODE]: a GPU (default GPU 6) loses its /dev node and gets it back, after a udev event;
# each step needs a scan after the one before
rescans() {
        local uuid=${1:-$G6} node=${2:-nvidia6}
        local bad="\"Device became unhealthy\" resource=\"$RES\" device=\"$uuid\" reason=\"device node /dev/$node missing\""
        local good="\"Device recovered\" resource=\"$RES\" device=\"$uuid\""
        local n_bad n_good
        n_bad=$(count_lines "$LOG" "$bad")
        n_good=$(count_lines "$LOG" "$good")
        ctl uevent 0000:ba:00.0 move
        ctl rm "dev/$node"
        wait_more "$bad" "$n_bad" "GPU $uuid did not lose /dev/$node"
        ctl write "dev/$node" ""
        wait_more "$good" "$n_good" "GPU $uuid did not recover"
        ctl uevent 0000:ba:00.0 change
}
not_served() {
        "$KDPCTL" not-served --state-dir "$STATE"
}

# the node as kdpd first sees it (applied before kdpd starts: it waits for $T/go)
ctl rm proc/driver/nvidia/gpus/0000:18:00.0
ctl write proc/driver/nvidia/gpus/0000:19:00.0/information 'Model: \t\t NVIDIA H100 80GB HBM3\nBus Location: \t 0000:19:00.0'
ctl write proc/driver/nvidia/gpus/0000:3a:00.0/information "$(information 0000:3a:00.0 2 "" Yes)"
ctl unbind 0000:3b:00.0
ctl unbind 0000:9a:00.0
ctl bind 0000:9a:00.0 vfio-pci
ctl echo applied

start_kubelet kubelet
"$SIM" "$NODES/gpu-h100x8.umockdev" --control "$T/ctl" -- \
        bash -c 'while [ ! -e "$0" ]; do sleep 0.02; done; exec "$@"' "$T/go" \
        "${KDPD_RUN[@]}" --kubelet-dir "$DIR" --cdi-dir "$T/cdi" --state-dir "$STATE" --health-hold-ms 300 \
        --backend gpu -o gpu.deny=0000:9b:00.0 >"$T/kdpd.out" 2>"$LOG" &
KDPD_PID=$!
PIDS+=($KDPD_PID)
wait_line "$T/kdpd.out" '^applied$' 60    # sim-node builds the testbed first (slow under ASan)
grep -q 'sim-node: .*preload\|not built' "$LOG" && { echo "skip: no simulated node"; exit 77; }
touch "$T/go"
wait_line "$T/kubelet.out" "^devices resource=$RES " 60

devices_match $RES "^devices resource=$RES capacity=2 allocatable=2 healthy=$G7,$G6 unhealthy= "
L18='"Device not served" backend="gpu" address="0000:18:00.0" reason="not listed in /proc/driver/nvidia/gpus"$'
L19='"Device not served" backend="gpu" address="0000:19:00.0" reason="its /proc/driver/nvidia information is malformed: no Device Minor line"$'
L3A='"Device not served" backend="gpu" address="0000:3a:00.0" reason="excluded by the driver \(NVreg_ExcludedGpus\)"$'
L3B='"Device not served" backend="gpu" address="0000:3b:00.0" reason="driver unbound"$'
L9A='"Device not served" backend="gpu" address="0000:9a:00.0" reason="bound to vfio-pci, not nvidia"$'
L9B='"Device not served" backend="gpu" address="0000:9b:00.0" reason="filtered out by the config \(in gpu.deny\)"$'
for re in "$L18" "$L19" "$L3A" "$L3B" "$L9A" "$L9B"; do
        once "$re" "skipped GPU"
        grep -E -- "$re" "$LOG" | grep -q '^I' || fail "not an info line: $re"
done
assert_eq "$(count_lines "$LOG" '"Device not served')" 6 "six skip lines in all"
assert_eq "$(not_served)" "not served: 0000:18:00.0 not listed in /proc/driver/nvidia/gpus
not served: 0000:19:00.0 its /proc/driver/nvidia information is malformed: no Device Minor line
not served: 0000:3a:00.0 excluded by the driver (NVreg_ExcludedGpus)
not served: 0000:3b:00.0 driver unbound
not served: 0000:9a:00.0 bound to vfio-pci, not nvidia
not served: 0000:9b:00.0 filtered out by the config (in gpu.deny)" "kdpctl not-served"
pass "6 GPUs not served: one info line each at --v 0 with address and reason; kdpctl not-served lists them"

rescans
rescans
still_once "$L18" "$L19" "$L3A" "$L3B" "$L9A" "$L9B"
assert_eq "$(count_lines "$LOG" '"Device not served')" 6 "no skip line added by rescans"
pass "rescans (1 s timer, udev events) add no line"

ctl write proc/driver/nvidia/gpus/0000:19:00.0/information "$(information 0000:19:00.0 1 "" No)"
LR='"Device not served, for another reason" backend="gpu" address="0000:19:00.0" reason="its /proc/driver/nvidia information has no GPU UUID yet" previousReason="its /proc/driver/nvidia information is malformed: no Device Minor line"$'
once "$LR" "reason change"
rescans
still_once "$LR"
ctl write proc/driver/nvidia/gpus/0000:19:00.0/information "$(information 0000:19:00.0 1 "$G1" No)"
LS19='"Device served now" backend="gpu" address="0000:19:00.0" previousReason="its /proc/driver/nvidia information has no GPU UUID yet"$'
once "$LS19" "GPU 1 served"
ctl bind 0000:3b:00.0 nvidia
LS3B='"Device served now" backend="gpu" address="0000:3b:00.0" previousReason="driver unbound"$'
once "$LS3B" "GPU 3 served"
devices_match $RES "^devices resource=$RES capacity=4 allocatable=4 healthy=$G7,$G1,$G6,$G3 unhealthy= "
ctl unplug 0000:9a:00.0
ctl uevent 0000:ba:00.0 move    # the PCI list is read again once the unplug is over
# the unplug unbinds first, then its sysfs files go: a scan in between sees it unbound or half
# gone (one more line, as on a real node)
LG9A='"Device not served is gone" backend="gpu" address="0000:9a:00.0" previousReason="(bound to vfio-pci, not nvidia|driver unbound|libpci cannot read it: [^"]*)"$'
once "$LG9A" "GPU 4 gone"
rescans
still_once "$LR" "$LS19" "$LS3B" "$LG9A"
assert_eq "$(not_served)" "not served: 0000:18:00.0 not listed in /proc/driver/nvidia/gpus
not served: 0000:3a:00.0 excluded by the driver (NVreg_ExcludedGpus)
not served: 0000:9b:00.0 filtered out by the config (in gpu.deny)" "kdpctl not-served after the changes"
pass "a new reason, a GPU served at last (procfs fixed; bound), a GPU unplugged: one line each"

# one GPU without NUMA affinity: the resource reports none while it lasts
ctl set 0000:bb:00.0 numa_node -1
ctl uevent 0000:bb:00.0 move
LN='"Dropped NUMA affinity of a resource that mixes devices with and without it" resource="nvidia.com/gpu" withTopology=3 withoutTopology=1$'
once "$LN" "NUMA dropped"
grep -E -- "$LN" "$LOG" | grep -q '^W' || fail "not a warning: $LN"
devices_match $RES "^devices resource=$RES capacity=4 allocatable=4 healthy=$G7,$G1,$G6,$G3 unhealthy= numa=$"
rescans
rescans
still_once "$LN"
ctl set 0000:bb:00.0 numa_node 1
ctl uevent 0000:bb:00.0 move
LNE='"Resource no longer mixes devices with and without NUMA affinity" resource="nvidia.com/gpu"$'
once "$LNE" "NUMA back"
devices_match $RES "numa=$G7:1;$G1:0;$G6:1;$G3:0$"
rescans
still_once "$LN" "$LNE"
pass "numa_node -1 on one GPU: NUMA affinity dropped logged once at start and once at end"

# two GPUs reporting one UUID: the second (by the table's order) is refused, by address
ctl write proc/driver/nvidia/gpus/0000:ba:00.0/information "$(information 0000:ba:00.0 6 "$G7" No)"
LD='"Device not served" backend="gpu" address="0000:bb:00.0" reason="duplicate ID \\"'"$G7"'\\" in nvidia.com/gpu: already served for 0000:ba:00.0"$'
once "$LD" "duplicate UUID"
rescans "$G3" nvidia3
rescans "$G3" nvidia3
still_once "$LD"
assert_eq "$(not_served | grep bb:00)" "not served: 0000:bb:00.0 duplicate ID \"$G7\" in nvidia.com/gpu: already served for 0000:ba:00.0" \
        "kdpctl not-served names the refused address"
ctl write proc/driver/nvidia/gpus/0000:ba:00.0/information "$(information 0000:ba:00.0 6 "$G6" No)"
LDE='"Device served now" backend="gpu" address="0000:bb:00.0" previousReason="duplicate ID \\"'"$G7"'\\" in nvidia.com/gpu: already served for 0000:ba:00.0"$'
once "$LDE" "duplicate UUID over"
devices_match $RES "^devices resource=$RES capacity=4 allocatable=4 healthy=$G7,$G1,$G6,$G3 unhealthy= "
rescans
still_once "$LD" "$LDE"
pass "two GPUs with one UUID: the refused one named by PCI address, logged once at start and once at end"

stop_kdpd
[ -e "$STATE/gpu.not-served" ] && fail "the not-served list outlived kdpd"
pass "kdpd stopped cleanly and removed its not-served list"
