# SPDX-License-Identifier: GPL-2.0-or-later
# Xid health from NVML on the simulated HGX node (tests/fixtures/nodes/gpu-h100x8), with the fake
# libnvidia-ml.so.1 (tests/nvml) answering from a fixture written here: its Xid events go through
# the same decisions as the kernel log's records in e2e/gpu-nvidia (ignored, critical, MIG,
# cleared by a reset or by time), with the same reasons. A failed event wait is logged and the
# events go on. When NVML cannot be initialised, the kernel log serves Xids instead.
. "$(dirname "$0")/lib.sh"

SIM="$KDP_SOURCE_DIR/tests/sim-node/sim-node"
NODES="$KDP_SOURCE_DIR/tests/fixtures/nodes"
LIB="$KDP_BUILD_DIR/tests/nvml/libnvidia-ml.so.1"
RES=nvidia.com/gpu
G0=GPU-7e22a81e-6b76-b0ca-e885-cc1f6ba67a93     # 0000:18:00.0
G1=GPU-5264ed78-cbf9-0162-2418-d9eaadde9f39     # 0000:19:00.0
G2=GPU-2c119aa3-e093-cdf7-cc30-8b33c4369abc     # 0000:3a:00.0
G3=GPU-a6b80bb6-17d8-167a-1800-dbd44ba4af78     # 0000:3b:00.0
G4=GPU-f537d6f5-8b34-75f5-822d-43e3d472ae3d     # 0000:9a:00.0
G5=GPU-8e5c8664-88e3-6075-a95c-812f25881d56     # 0000:9b:00.0
G6=GPU-7f2be42a-1dc0-9880-c66d-1d570a6c8325     # 0000:ba:00.0
G7=GPU-2f9885ef-6659-ebc4-1750-e75cdbc10a17     # 0000:bb:00.0
ALL="$G2,$G7,$G1,$G0,$G6,$G5,$G3,$G4"
[ -f "$LIB" ] || fail "no fake NVML at $LIB (build the kdp-fake-nvml target)"

nvml_fifos
healthy() {
        devices_match $RES "allocatable=$1 healthy=$2 unhealthy=$3 " "${4:-30}"
}
cat >"$T/nvml.fixture" <<EOF
gpu 0000:18:00.0 $G0
gpu 0000:19:00.0 $G1
gpu 0000:3a:00.0 $G2
gpu 0000:3b:00.0 $G3
gpu 0000:9a:00.0 $G4 mig=1 maxmig=7
gpu 0000:9b:00.0 $G5
gpu 0000:ba:00.0 $G6
gpu 0000:bb:00.0 $G7
events $T/nvml-events
EOF
export KDP_FAKE_NVML="$T/nvml.fixture"

start_kubelet kubelet
kdpd_command
"${DIE_WITH_US[@]}" "$SIM" "$NODES/gpu-h100x8.umockdev" --control "$T/ctl" -- "${KDPD_RUN[@]}" --kubelet-dir "$DIR" \
        --state-dir "$T/state" --cdi-dir "$T/cdi" --v 2 --health-hold-ms 300 --backend gpu \
        -o gpu.xid_recovery_s=2 -o gpu.nvml="$LIB" >"$T/kdpd.out" 2>"$T/kdpd.err" &
KDPD_PID=$!
PIDS+=($KDPD_PID)
wait_line "$T/kubelet.out" "^devices resource=$RES "
grep -q 'sim-node: .*preload\|not built' "$T/kdpd.err" && { echo "skip: no simulated node"; exit 77; }
healthy 8 "$ALL" ""
wait_line "$T/kdpd.err" '"NVIDIA sources chosen" backend="gpu" xid="nvml" nvlink="nvml" discovery="sysfs\+procfs" nvmlGpus=8$'
assert_eq "$(grep -c '"NVIDIA sources chosen"' "$T/kdpd.err")" 1 "the sources are logged once"
pass "NVML loaded from $LIB: it serves Xids for the 8 GPUs, sysfs and procfs the rest"

# the kernel log is not read while NVML serves Xids
ctl "kmsg 4,9001,9001000,c;NVRM: Xid (PCI:0000:19:00): 79, pid=0, GPU has fallen off the bus."
nvml "event 0000:18:00.0 13"
wait_line "$T/kdpd.err" '"Ignored an application Xid" backend="gpu" pci="0000:18:00.0" xid=13 bucket="RESTART_APP"'
healthy 8 "$ALL" ""
grep -q "Device became unhealthy.*\($G0\|$G1\)" "$T/kdpd.err" && fail "an ignored Xid or a kernel log record made a GPU unhealthy"
pass "NVML Xid 13 ignored, as from the kernel log; the kernel log's Xid 79 not read"

nvml "event 0000:3a:00.0 79"
healthy 7 "$G7,$G1,$G0,$G6,$G5,$G3,$G4" "$G2"
wait_line "$T/kdpd.err" "\"Device became unhealthy\" resource=\"$RES\" device=\"$G2\" reason=\"Xid 79 \\(RESTART_BM\\)\""
wait_line "$T/kdpd.err" '"GPU reported a critical Xid" backend="gpu" pci="0000:3a:00.0" uuid="'"$G2"'" xid=79 bucket="RESTART_BM" replay="false"'
ctl uevent 0000:3a:00.0 change
healthy 8 "$ALL" ""
wait_line "$T/kdpd.err" '"GPU recovered: reset or rebound after its Xid" backend="gpu" pci="0000:3a:00.0" xid=79 event="change"'
pass "NVML Xid 79 made GPU 2 unhealthy with the kernel log's reason; its reset made it healthy again"

nvml "event 0000:9a:00.0 94 5 0"
devices_seen $RES "allocatable=7 healthy=$G2,$G7,$G1,$G0,$G6,$G5,$G3 unhealthy=$G4 "     # for 2 s only
wait_line "$T/kdpd.err" "\"Device became unhealthy\" resource=\"$RES\" device=\"$G4\" reason=\"Xid 94 \\(RESTART_APP\\)\""
healthy 8 "$ALL" ""
wait_line "$T/kdpd.err" '"GPU recovered: its Xid is older than xid_recovery_s" backend="gpu" pci="0000:9a:00.0" xid=94'
pass "a MIG instance's NVML Xid 94 marks its GPU; it clears by itself after xid_recovery_s (2 s)"

nvml "fail nvmlEventSetWait_v2 GPU_IS_LOST"
wait_line "$T/kdpd.err" '"NVML event wait failed" backend="gpu" nvmlReturn=15 err="GPU_IS_LOST"'
nvml "clear nvmlEventSetWait_v2"
nvml "event 0000:bb:00.0 48"
healthy 7 "$G2,$G1,$G0,$G6,$G5,$G3,$G4" "$G7"
wait_line "$T/kdpd.err" "\"Device became unhealthy\" resource=\"$RES\" device=\"$G7\" reason=\"Xid 48 \\(WORKFLOW_XID_48\\)\""
assert_eq "$(grep -c '"NVML event wait failed"' "$T/kdpd.err")" 1 "a failing wait is logged once"
pass "a failed NVML event wait was logged once; the events went on after it"

stop_kdpd
pass "kdpd stopped cleanly with NVML's event worker running"

# NVML there but refusing (a container without the NVIDIA control device, say): the kernel log serves
cat >"$T/nvml.fixture" <<EOF
gpu 0000:18:00.0 $G0
fail nvmlInit_v2 NO_PERMISSION
EOF
: >"$T/kdpd.err"
"${DIE_WITH_US[@]}" "$SIM" "$NODES/gpu-h100x8.umockdev" --control "$T/ctl" -- "${KDPD_RUN[@]}" --kubelet-dir "$DIR" \
        --state-dir "$T/state" --cdi-dir "$T/cdi" --v 2 --health-hold-ms 300 --backend gpu \
        -o gpu.nvml="$LIB" >"$T/kdpd.out" 2>"$T/kdpd.err" &
KDPD_PID=$!
PIDS+=($KDPD_PID)
wait_line "$T/kdpd.err" '"NVML library unusable" backend="gpu" library="[^"]*libnvidia-ml.so.1" reason="NO_PERMISSION" err="Permission denied"'
wait_line "$T/kdpd.err" '"NVIDIA sources chosen" backend="gpu" xid="kmsg" nvlink="none" discovery="sysfs\+procfs"$'
wait_count "$T/kubelet.out" '^registered ' 2        # its first scan (which reads what the log held) is over
ctl "kmsg 4,9101,9101000,c;NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus."
wait_line "$T/kdpd.err" "\"Device became unhealthy\" resource=\"$RES\" device=\"$G3\" reason=\"Xid 79 \\(RESTART_BM\\)\""
stop_kdpd
pass "NVML refusing to initialise: logged, and the kernel log served Xids"
