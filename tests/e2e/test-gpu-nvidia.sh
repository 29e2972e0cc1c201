# SPDX-License-Identifier: GPL-2.0-or-later
# The GPU backend on a simulated HGX node (tests/fixtures/nodes/gpu-h100x8: 8 H100s behind 4
# PCIe switches on 2 NUMA nodes, 4 NVSwitches and the BMC's VGA): names, IDs and NUMA as the
# NVIDIA procfs gives them, Allocate, switch-local preferred sets, Xid health from the kernel
# log (ignored, critical, MIG, faked from user space, cleared by a reset or by time),
# unbind/rebind, a missing /dev node, and a GPU that falls off the bus and comes back.
. "$(dirname "$0")/lib.sh"

SIM="$KDP_SOURCE_DIR/tests/sim-node/sim-node"
NODES="$KDP_SOURCE_DIR/tests/fixtures/nodes"
RES=nvidia.com/gpu
G0=GPU-7e22a81e-6b76-b0ca-e885-cc1f6ba67a93     # 0000:18:00.0, NUMA 0, /dev/nvidia0
G1=GPU-5264ed78-cbf9-0162-2418-d9eaadde9f39     # 0000:19:00.0, NUMA 0
G2=GPU-2c119aa3-e093-cdf7-cc30-8b33c4369abc     # 0000:3a:00.0, NUMA 0
G3=GPU-a6b80bb6-17d8-167a-1800-dbd44ba4af78     # 0000:3b:00.0, NUMA 0
G4=GPU-f537d6f5-8b34-75f5-822d-43e3d472ae3d     # 0000:9a:00.0, NUMA 1
G5=GPU-8e5c8664-88e3-6075-a95c-812f25881d56     # 0000:9b:00.0, NUMA 1
G6=GPU-7f2be42a-1dc0-9880-c66d-1d570a6c8325     # 0000:ba:00.0, NUMA 1
G7=GPU-2f9885ef-6659-ebc4-1750-e75cdbc10a17     # 0000:bb:00.0, NUMA 1
SEQ=9000

mkfifo "$T/ctl"
exec 9<>"$T/ctl"
ctl() {
        echo "$*" >&9
}
# kmsg TEXT: one kernel log record as the NVIDIA driver writes it (priority 4, flag c)
kmsg() {
        SEQ=$((SEQ + 1))
        ctl "kmsg 4,$SEQ,$((SEQ * 1000)),c;$*"
}
healthy() {
        devices_match $RES "allocatable=$1 healthy=$2 unhealthy=$3 " "${4:-30}"
}

start_kubelet kubelet
"${DIE_WITH_US[@]}" "$SIM" "$NODES/gpu-h100x8.umockdev" --control "$T/ctl" -- "${KDPD_RUN[@]}" --kubelet-dir "$DIR" --state-dir "$T/state" --cdi-dir "$T/cdi" \
        --v 2 --health-hold-ms 300 --backend gpu -o gpu.xid_recovery_s=2 -o gpu.nvml= >"$T/kdpd.out" 2>"$T/kdpd.err" &
KDPD_PID=$!
PIDS+=($KDPD_PID)
wait_line "$T/kubelet.out" "^devices resource=$RES "
grep -q 'sim-node: .*preload\|not built' "$T/kdpd.err" && { echo "skip: no simulated node"; exit 77; }

ALL="$G2,$G7,$G1,$G0,$G6,$G5,$G3,$G4"
devices_match $RES "^devices resource=$RES capacity=8 allocatable=8 healthy=$ALL unhealthy= numa=$G2:0;$G7:1;$G1:0;$G0:0;$G6:1;$G5:1;$G3:0;$G4:1$"
assert_eq "$(grep -c '^registered ' "$T/kubelet.out")" 1 "one resource registered (NVSwitches and the BMC are not GPUs)"
pass "8 H100s by UUID with their NUMA nodes; NVSwitches and the BMC VGA left out"

S=$(plugin_socket nvidia.com_gpu)
assert_eq "$("$KDPCTL" allocate --socket "$S" "$G2" "$G0")" "env NVIDIA_VISIBLE_DEVICES=$G2,$G0" "allocate 2 GPUs"
assert_eq "$("$KDPCTL" allocate --socket "$S" --container "$G5" --container "$G4,$G7" | tr '\n' '|')" \
        "container 0|env NVIDIA_VISIBLE_DEVICES=$G5|container 1|env NVIDIA_VISIBLE_DEVICES=$G4,$G7|" "allocate for 2 containers"
pass "Allocate: NVIDIA_VISIBLE_DEVICES with the UUIDs, per container"

assert_eq "$("$KDPCTL" preferred --socket "$S" --size 2)" "preferred $G2,$G3" "2 GPUs: one switch"
assert_eq "$("$KDPCTL" preferred --socket "$S" --size 2 --must "$G6")" "preferred $G6,$G7" "2 GPUs with one given"
assert_eq "$("$KDPCTL" preferred --socket "$S" --size 4 --must "$G5" | tr ' ,' '\n\n' | sort | tr '\n' ' ')" \
        "$(printf '%s\n' preferred "$G5" "$G4" "$G6" "$G7" | sort | tr '\n' ' ')" "4 GPUs with one given: socket 1"
pass "preferred allocation: behind one PCIe switch, then on one socket"

# Xid 13 (an application's fault) changes nothing; a line written from user space is never an Xid
ctl "kmsg 12,1,1,-;NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus."
kmsg "NVRM: Xid (PCI:0000:18:00): 13, pid=4242, name=python3, Graphics SM Warp Exception on (GPC 1, TPC 2, SM 0): Out Of Range Address"
wait_line "$T/kdpd.err" '"Ignored an application Xid" backend="gpu" pci="0000:18:00.0" xid=13 bucket="RESTART_APP"'
healthy 8 "$ALL" ""
grep -q "Device became unhealthy.*$G0" "$T/kdpd.err" && fail "an ignored or faked Xid made GPU 0 unhealthy"
pass "Xid 13 ignored; a user-space record claiming Xid 79 ignored"

kmsg "NVRM: Xid (PCI:0000:3a:00): 79, pid=0, GPU has fallen off the bus."
healthy 7 "$G7,$G1,$G0,$G6,$G5,$G3,$G4" "$G2"
wait_line "$T/kdpd.err" "\"Device became unhealthy\" resource=\"$RES\" device=\"$G2\" reason=\"Xid 79 \\(RESTART_BM\\)\""
ctl uevent 0000:3a:00.0 change
healthy 8 "$ALL" ""
wait_line "$T/kdpd.err" '"GPU recovered: reset or rebound after its Xid" backend="gpu" pci="0000:3a:00.0" xid=79 event="change"'
pass "Xid 79 made GPU 2 unhealthy at once; its reset (a PCI change event) made it healthy again"

kmsg "NVRM: Xid (PCI:0000:9a:00 GPU-I:05): 94, pid=7194, Contained: CE User Channel (0x9). RST: No, D-RST: No"
devices_seen $RES "allocatable=7 healthy=$G2,$G7,$G1,$G0,$G6,$G5,$G3 unhealthy=$G4 "     # for 2 s only
wait_line "$T/kdpd.err" "\"Device became unhealthy\" resource=\"$RES\" device=\"$G4\" reason=\"Xid 94 \\(RESTART_APP\\)\""
healthy 8 "$ALL" ""
wait_line "$T/kdpd.err" '"GPU recovered: its Xid is older than xid_recovery_s" backend="gpu" pci="0000:9a:00.0" xid=94'
pass "a MIG instance's Xid 94 marks its GPU; it clears by itself after xid_recovery_s (2 s), never stays"

# the unbind and the procfs entry gone: a scan may fall between the steps (naming some of the
# reasons, as "became unhealthy"); the scan after the last one names them all
ctl rm proc/driver/nvidia/gpus/0000:9b:00.0
ctl unbind 0000:9b:00.0
healthy 7 "$G2,$G7,$G1,$G0,$G6,$G3,$G4" "$G5"
wait_line "$T/kdpd.err" "\"Device (became unhealthy|unhealthy for another reason)\" resource=\"$RES\" device=\"$G5\" reason=\"driver unbound; disabled \\(enable=0\\); not listed in /proc/driver/nvidia/gpus\""
ctl write proc/driver/nvidia/gpus/0000:9b:00.0/information "$(printf 'Model: \\t\\t NVIDIA H100 80GB HBM3\\nGPU UUID: \\t %s\\nBus Location: \\t 0000:9b:00.0\\nDevice Minor: \\t 5\\nGPU Excluded:\\t No' "$G5")"
ctl bind 0000:9b:00.0 nvidia
healthy 8 "$ALL" ""
pass "unbind: GPU 5 stays listed as unhealthy with its reasons; rebind: healthy again"

ctl rm dev/nvidia6
healthy 7 "$G2,$G7,$G1,$G0,$G5,$G3,$G4" "$G6"
wait_line "$T/kdpd.err" "device=\"$G6\" reason=\"device node /dev/nvidia6 missing\""
ctl write dev/nvidia6 ""
healthy 8 "$ALL" ""
pass "a missing /dev/nvidia6 (no uevent: found by the 1 s rescan) and its return"

# a fatal AER error counted on GPU 4 (no uevent: the 1 s rescan finds it); a rebind is a fresh start
ctl set 0000:9a:00.0 aer_dev_fatal 'Undefined 0\nDLP 0\nSDES 0\nTLP 0\nFCP 0\nCmpltTO 1\nCmpltAbrt 0\nUnxCmplt 0\nRxOF 0\nMalfTLP 0\nECRC 0\nUnsupReq 0\nACSViol 0\nUncorrIntErr 0\nBlockedTLP 0\nAtomicOpBlocked 0\nTLPBlockedErr 0\nPoisonTLPBlocked 0\nTOTAL_ERR_FATAL 1'
healthy 7 "$G2,$G7,$G1,$G0,$G6,$G5,$G3" "$G4"
wait_line "$T/kdpd.err" "device=\"$G4\" reason=\"AER fatal errors rose from 0 to 1\""
ctl unbind 0000:9a:00.0
ctl bind 0000:9a:00.0 nvidia
healthy 8 "$ALL" ""
pass "a rising AER fatal counter made GPU 4 unhealthy; after a rebind its counters start anew"

# the fixture's own scenario: Xid 79, the proc entry and the device vanish, then all come back;
# its second half (after its pause) goes once the gone state was seen
script="$NODES/gpu-h100x8-fall-off-bus.script"
sed -n '/^sleep [0-9]*$/q; /^#\|^wait-listeners/!p' "$script" | sed 's/^wait$/wait 60000/' >&9
wait_line "$T/kdpd.out" '^gone$'
healthy 7 "$G7,$G1,$G0,$G6,$G5,$G3,$G4" "$G2"
wait_line "$T/kdpd.err" "device=\"$G2\" reason=\"Xid 79 \\(RESTART_BM\\)\""
devices_match $RES "capacity=8 "
sed '1,/^sleep [0-9]*$/d; /^#/d; s/^wait$/wait 60000/' "$script" >&9
wait_line "$T/kdpd.out" '^back$'
healthy 8 "$ALL" ""
pass "a GPU that fell off the bus stays listed as unhealthy while gone and is healthy once back"

assert_eq "$(grep -c '^devices resource=nvidia.com/gpu capacity=8 ' "$T/kubelet.out")" \
        "$(grep -c '^devices resource=nvidia.com/gpu ' "$T/kubelet.out")" "capacity never dropped"
pass "capacity stayed 8 throughout"
stop_kdpd
pass "kdpd stopped cleanly"
