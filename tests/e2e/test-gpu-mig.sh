# SPDX-License-Identifier: GPL-2.0-or-later
# NVIDIA MIG devices (gpu.mig_strategy) on the simulated HGX node gpu-h100x8-mig, with the fake
# libnvidia-ml.so.1 (tests/nvml) answering from the node's NVML fixture
# (tests/fixtures/nodes/gpu-h100x8-mig.nvml): GPU 0 cut into 3g.40gb + 3 × 1g.10gb, GPU 1 in MIG
# mode without instances, GPUs 2-7 with MIG off.
#   mixed   one resource per profile, the whole GPUs under nvidia.com/gpu, GPU 1 not served (logged
#           once); Allocate: the MIG UUIDs, the caps nodes of each MIG device, CDI names and specs
#   layout  instances destroyed and created while kdpd runs are followed within a scan
#   single  every MIG device and whole GPU under nvidia.com/gpu
#   none    (default) and a strategy without NVML (one error line): every GPU whole
. "$(dirname "$0")/lib.sh"

SIM="$KDP_SOURCE_DIR/tests/sim-node/sim-node"
NODES="$KDP_SOURCE_DIR/tests/fixtures/nodes"
LIB="$KDP_BUILD_DIR/tests/nvml/libnvidia-ml.so.1"
[ -f "$LIB" ] || fail "no fake NVML at $LIB (build the kdp-fake-nvml target)"
G0=GPU-6a54ed2d-90d3-2c7a-6e68-56c029d0da55     # 0000:18:00.0, minor 0, MIG
G1=GPU-2db733ae-a86f-cdaf-9c99-44c56c3f0cb7     # 0000:19:00.0, minor 1, MIG without instances
G2=GPU-3dfd8c72-4a42-2302-c03e-6be261d2f260     # 0000:3a:00.0
G3=GPU-2a33cb91-f983-13d2-3788-7027d4a0bac8     # 0000:3b:00.0
G4=GPU-08e93318-9d82-dca8-001f-d1abb2dd3557     # 0000:9a:00.0
G5=GPU-e15ff69a-1402-160a-ee49-d735aa8b30cd     # 0000:9b:00.0
G6=GPU-8e0b591c-eaca-4f51-9063-ed6d32f9c323     # 0000:ba:00.0
G7=GPU-93f2f779-cfb9-ba01-e2a6-5b26f5c93230     # 0000:bb:00.0
M2=MIG-d18142c1-46bf-1902-b13e-596f4dd717a1     # GPU 0, GI 2 CI 0, 3g.40gb: caps 21, 22
M9=MIG-9e5e016c-8dbe-e1db-aaad-8733c5bb1821     # GPU 0, GI 9 CI 0, 1g.10gb: caps 84, 85
M10=MIG-e3751502-0bb9-b911-ca44-20b3128fad47    # GPU 0, GI 10 CI 0, 1g.10gb: caps 93, 94
M11=MIG-75922d22-d653-0213-caf1-a4994ca03f4c    # GPU 0, GI 11 CI 0, 1g.10gb: caps 102, 103
M0=MIG-3c0e94c6-1d7a-4c4e-8d55-0a1b2c3d4e5f     # GPU 1, GI 0 CI 0, 7g.80gb (created below): caps 138, 139
SHARED="device /dev/nvidia-modeset /dev/nvidia-modeset rw|device /dev/nvidia-uvm /dev/nvidia-uvm rw|device /dev/nvidia-uvm-tools /dev/nvidia-uvm-tools rw"

mkfifo "$T/ctl" "$T/nvml-events"
exec 9<>"$T/ctl" 8<>"$T/nvml-events"
# ctl LINE: a sim-node command; nvml LINE: a line the fake NVML reads while kdpd's event worker
# waits (event BDF XID [GI CI])
ctl() { echo "$*" >&9; }
nvml() { echo "$*" >&8; }
{ cat "$NODES/gpu-h100x8-mig.nvml"; echo "events $T/nvml-events"; } >"$T/nvml.fixture"
export KDP_FAKE_NVML="$T/nvml.fixture"

# run_kdpd ARGS...: kdpd on the node with the fake NVML and ARGS, beside a new stand-in kubelet
run_kdpd() {
        [ -n "${KUBELET_PID:-}" ] && stop_kubelet
        start_kubelet kubelet
        : >"$T/kdpd.err"
        "${DIE_WITH_US[@]}" "$SIM" "$NODES/gpu-h100x8-mig.umockdev" --control "$T/ctl" -- "${KDPD_RUN[@]}" \
                --kubelet-dir "$DIR" --state-dir "$T/state" --cdi-dir "$T/cdi" --v 2 --health-hold-ms 300 \
                --backend gpu -o gpu.nvml="$LIB" "$@" >"$T/kdpd.out" 2>"$T/kdpd.err" &
        KDPD_PID=$!
        PIDS+=($KDPD_PID)
        wait_line "$T/kubelet.out" "^devices resource=nvidia.com/gpu "
        grep -q 'sim-node: .*preload\|not built' "$T/kdpd.err" && { echo "skip: no simulated node"; exit 77; }
}

# sorted_ids LIST: the IDs of LIST in the order a devices line has them
sorted_ids() {
        tr ',' '\n' <<<"$1" | sort | paste -sd,
}
# numa0 LIST: the numa= field of LIST's devices, all on NUMA node 0
numa0() {
        local out= id
        for id in $(tr ',' ' ' <<<"$(sorted_ids "$1")"); do out="$out;$id:0"; done
        echo "${out#;}"
}

WHOLE=$(sorted_ids "$G2,$G3,$G4,$G5,$G6,$G7")

run_kdpd -o gpu.mig_strategy=mixed -o gpu.cdi=true -o gpu.nvidia_device_specs=true
ONEG=$(sorted_ids "$M9,$M10,$M11")
devices_match nvidia.com/mig-1g.10gb "^devices resource=nvidia.com/mig-1g.10gb capacity=3 allocatable=3 healthy=$ONEG unhealthy= numa=$(numa0 "$ONEG")$"
devices_match nvidia.com/mig-3g.40gb "^devices resource=nvidia.com/mig-3g.40gb capacity=1 allocatable=1 healthy=$M2 unhealthy= numa=$M2:0$"
devices_match nvidia.com/gpu "^devices resource=nvidia.com/gpu capacity=6 allocatable=6 healthy=$WHOLE unhealthy= "
assert_eq "$(grep -c '^registered ' "$T/kubelet.out")" 3 "3 resources: nvidia.com/gpu and one per MIG profile"
wait_line "$T/kdpd.err" '"MIG devices from NVML" backend="gpu" strategy="mixed"$'
wait_line "$T/kdpd.err" "\"GPU in MIG mode: its MIG devices are served, not the GPU\" backend=\"gpu\" pci=\"0000:18:00.0\" uuid=\"$G0\" migDevices=4 profiles=\"3g.40gb,1g.10gb,1g.10gb,1g.10gb\"$"
wait_line "$T/kdpd.err" '"Device not served" backend="gpu" address="0000:19:00.0" reason="in MIG mode without MIG devices \(no GPU and compute instances\)"$'
pass "mixed: 3 × mig-1g.10gb and 1 × mig-3g.40gb of GPU 0 (NUMA 0), GPUs 2-7 whole, GPU 1 (MIG, no instances) not served"

S=$(plugin_socket nvidia.com_mig-1g.10gb)
assert_eq "$("$KDPCTL" allocate --socket "$S" "$M11" "$M9" | tr '\n' '|')" \
        "env NVIDIA_VISIBLE_DEVICES=$M11,$M9|device /dev/nvidia-caps/nvidia-cap102 /dev/nvidia-caps/nvidia-cap102 rw|device /dev/nvidia-caps/nvidia-cap103 /dev/nvidia-caps/nvidia-cap103 rw|device /dev/nvidia-caps/nvidia-cap84 /dev/nvidia-caps/nvidia-cap84 rw|device /dev/nvidia-caps/nvidia-cap85 /dev/nvidia-caps/nvidia-cap85 rw|$SHARED|device /dev/nvidia0 /dev/nvidia0 rw|device /dev/nvidiactl /dev/nvidiactl rw|cdi nvidia.com/mig-1g.10gb=$M11|cdi nvidia.com/mig-1g.10gb=$M9|" \
        "allocate 2 MIG devices"
S3=$(plugin_socket nvidia.com_mig-3g.40gb)
assert_eq "$("$KDPCTL" allocate --socket "$S3" "$M2" | tr '\n' '|')" \
        "env NVIDIA_VISIBLE_DEVICES=$M2|device /dev/nvidia-caps/nvidia-cap21 /dev/nvidia-caps/nvidia-cap21 rw|device /dev/nvidia-caps/nvidia-cap22 /dev/nvidia-caps/nvidia-cap22 rw|$SHARED|device /dev/nvidia0 /dev/nvidia0 rw|device /dev/nvidiactl /dev/nvidiactl rw|cdi nvidia.com/mig-3g.40gb=$M2|" \
        "allocate the 3g.40gb"
"$KDPCTL" allocate --socket "$S" "$M2" >"$T/refused" 2>&1 && fail "allocate of the 3g.40gb on mig-1g.10gb's socket: $(cat "$T/refused")"
pass "Allocate: the MIG UUIDs in request order, each device's GPU- and compute-instance caps nodes, its GPU's and the node-wide nodes, CDI names"

spec_nodes() {
        python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(d["cdiVersion"], d["kind"], len(d["devices"]))
for x in d["devices"]:
    print(x["name"], " ".join(n["path"] for n in x["containerEdits"]["deviceNodes"]))
' "$1" | tr '\n' '|'
}
N="/dev/nvidiactl /dev/nvidia-uvm /dev/nvidia-uvm-tools /dev/nvidia-modeset"
assert_eq "$(spec_nodes "$T/cdi/kdp-nvidia.com-mig-1g.10gb.json")" \
        "0.6.0 nvidia.com/mig-1g.10gb 3|$M11 /dev/nvidia0 /dev/nvidia-caps/nvidia-cap102 /dev/nvidia-caps/nvidia-cap103 $N|$M9 /dev/nvidia0 /dev/nvidia-caps/nvidia-cap84 /dev/nvidia-caps/nvidia-cap85 $N|$M10 /dev/nvidia0 /dev/nvidia-caps/nvidia-cap93 /dev/nvidia-caps/nvidia-cap94 $N|" \
        "CDI spec of mig-1g.10gb"
assert_eq "$(spec_nodes "$T/cdi/kdp-nvidia.com-mig-3g.40gb.json")" \
        "0.6.0 nvidia.com/mig-3g.40gb 1|$M2 /dev/nvidia0 /dev/nvidia-caps/nvidia-cap21 /dev/nvidia-caps/nvidia-cap22 $N|" \
        "CDI spec of mig-3g.40gb"
pass "CDI specs: one per MIG resource, each MIG device with its caps nodes"

assert_eq "$("$KDPCTL" not-served --state-dir "$T/state")" \
        "not served: 0000:19:00.0 in MIG mode without MIG devices (no GPU and compute instances)" "kdpctl not-served"
sleep 3         # three rescans: nothing is logged again
assert_eq "$(grep -c '"GPU in MIG mode' "$T/kdpd.err")" 1 "GPU 0's MIG devices logged once"
assert_eq "$(grep -c '"Device not served"' "$T/kdpd.err")" 1 "GPU 1 logged once"
pass "what is served and what is not is logged once, not at every rescan; kdpctl not-served names GPU 1"

# health: an Xid of a MIG instance marks that MIG device; one of the GPU, and the GPU's own state, all
nvml "event 0000:18:00.0 94 9 0"
devices_match nvidia.com/mig-1g.10gb "^devices resource=nvidia.com/mig-1g.10gb capacity=3 allocatable=2 healthy=$(sorted_ids "$M10,$M11") unhealthy=$M9 "
wait_line "$T/kdpd.err" "\"Device became unhealthy\" resource=\"nvidia.com/mig-1g.10gb\" device=\"$M9\" reason=\"Xid 94 \\(RESTART_APP\\)\""
wait_line "$T/kdpd.err" "\"MIG device reported a critical Xid\" backend=\"gpu\" pci=\"0000:18:00.0\" uuid=\"$M9\" gpuInstance=9 computeInstance=0 xid=94 bucket=\"RESTART_APP\" replay=\"false\""
devices_match nvidia.com/mig-3g.40gb "^devices resource=nvidia.com/mig-3g.40gb capacity=1 allocatable=1 healthy=$M2 unhealthy= "
nvml "event 0000:18:00.0 79"
devices_match nvidia.com/mig-1g.10gb "^devices resource=nvidia.com/mig-1g.10gb capacity=3 allocatable=0 healthy= unhealthy=$(sorted_ids "$M9,$M10,$M11") "
devices_match nvidia.com/mig-3g.40gb "^devices resource=nvidia.com/mig-3g.40gb capacity=1 allocatable=0 healthy= unhealthy=$M2 "
wait_line "$T/kdpd.err" "\"Device became unhealthy\" resource=\"nvidia.com/mig-3g.40gb\" device=\"$M2\" reason=\"Xid 79 \\(RESTART_BM\\)\""
ctl "uevent 0000:18:00.0 change"
devices_match nvidia.com/mig-1g.10gb "^devices resource=nvidia.com/mig-1g.10gb capacity=3 allocatable=3 healthy=$(sorted_ids "$M9,$M10,$M11") unhealthy= "
devices_match nvidia.com/mig-3g.40gb "^devices resource=nvidia.com/mig-3g.40gb capacity=1 allocatable=1 healthy=$M2 unhealthy= "
pass "NVML Xid 94 of GI 9/CI 0 marked that MIG device only; Xid 79 of the GPU all four; the GPU's reset cleared both"

ctl "unbind 0000:18:00.0"
devices_match nvidia.com/mig-1g.10gb "^devices resource=nvidia.com/mig-1g.10gb capacity=3 allocatable=0 healthy= unhealthy=$(sorted_ids "$M9,$M10,$M11") "
wait_line "$T/kdpd.err" "\"Device (became unhealthy|unhealthy for another reason)\" resource=\"nvidia.com/mig-3g.40gb\" device=\"$M2\" reason=\"driver unbound; disabled \\(enable=0\\)\""
ctl "bind 0000:18:00.0 nvidia"
devices_match nvidia.com/mig-1g.10gb "^devices resource=nvidia.com/mig-1g.10gb capacity=3 allocatable=3 healthy=$(sorted_ids "$M9,$M10,$M11") unhealthy= "
devices_match nvidia.com/mig-3g.40gb "^devices resource=nvidia.com/mig-3g.40gb capacity=1 allocatable=1 healthy=$M2 unhealthy= "
pass "GPU 0 unbound: its MIG devices stay, Unhealthy (driver unbound); bound again: healthy"

# the layout changes while kdpd runs: GPU 0's GIs 2 (3g) and 10 go, GPU 1 gets a 7g.80gb (GI 0)
hold_kdpd
P=proc/driver/nvidia/capabilities
ctl "rm $P/gpu0/mig/gi2"
ctl "rm $P/gpu0/mig/gi10"
ctl "write $P/gpu1/mig/gi0/access DeviceFileMinor: 138\nDeviceFileMode: 292\nDeviceFileModify: 1"
ctl "write $P/gpu1/mig/gi0/ci0/access DeviceFileMinor: 139\nDeviceFileMode: 292\nDeviceFileModify: 1"
ctl "echo procfs-changed"
sed -e '/ 2 0 MIG-/d' -e '/ 10 0 MIG-/d' "$NODES/gpu-h100x8-mig.nvml" >"$T/nvml.next"
echo "mig 0000:19:00.0 0 0 $M0 7 80896" >>"$T/nvml.next"
wait_line "$T/kdpd.out" '^procfs-changed$'
mv "$T/nvml.next" "$T/nvml.fixture"
release_kdpd
ONEG=$(sorted_ids "$M9,$M11")
devices_match nvidia.com/mig-1g.10gb "^devices resource=nvidia.com/mig-1g.10gb capacity=2 allocatable=2 healthy=$ONEG unhealthy= numa=$(numa0 "$ONEG")$"
devices_match nvidia.com/mig-3g.40gb "^devices resource=nvidia.com/mig-3g.40gb capacity=0 allocatable=0 healthy= unhealthy= "
devices_match nvidia.com/mig-7g.80gb "^devices resource=nvidia.com/mig-7g.80gb capacity=1 allocatable=1 healthy=$M0 unhealthy= numa=$M0:0$"
devices_match nvidia.com/gpu "^devices resource=nvidia.com/gpu capacity=6 allocatable=6 healthy=$WHOLE unhealthy= "
wait_line "$T/kdpd.err" "\"GPU in MIG mode: its MIG devices are served, not the GPU\" backend=\"gpu\" pci=\"0000:18:00.0\" uuid=\"$G0\" migDevices=2 profiles=\"1g.10gb,1g.10gb\"$"
wait_line "$T/kdpd.err" "\"GPU in MIG mode: its MIG devices are served, not the GPU\" backend=\"gpu\" pci=\"0000:19:00.0\" uuid=\"$G1\" migDevices=1 profiles=\"7g.80gb\"$"
wait_line "$T/kdpd.err" '"Device served now" backend="gpu" address="0000:19:00.0"'
S7=$(plugin_socket nvidia.com_mig-7g.80gb)
assert_eq "$("$KDPCTL" allocate --socket "$S7" "$M0" | tr '\n' '|')" \
        "env NVIDIA_VISIBLE_DEVICES=$M0|device /dev/nvidia-caps/nvidia-cap138 /dev/nvidia-caps/nvidia-cap138 rw|device /dev/nvidia-caps/nvidia-cap139 /dev/nvidia-caps/nvidia-cap139 rw|$SHARED|device /dev/nvidia1 /dev/nvidia1 rw|device /dev/nvidiactl /dev/nvidiactl rw|cdi nvidia.com/mig-7g.80gb=$M0|" \
        "allocate GPU 1's new 7g.80gb"
pass "layout change followed within a scan: destroyed MIG devices leave, GPU 1's new 7g.80gb is served with its nodes"

# a GPU whose MIG devices NVML cannot list any more keeps those it had, Unhealthy with the reason
printf 'fail nvmlDeviceGetMigMode GPU_IS_LOST 0000:18:00.0\nfail nvmlDeviceGetMigMode NO_PERMISSION 0000:3a:00.0\n' >>"$T/nvml.fixture"
devices_match nvidia.com/mig-1g.10gb "^devices resource=nvidia.com/mig-1g.10gb capacity=2 allocatable=0 healthy= unhealthy=$ONEG "
wait_line "$T/kdpd.err" "\"Device became unhealthy\" resource=\"nvidia.com/mig-1g.10gb\" device=\"$M9\" reason=\"NVML cannot list its MIG devices: nvmlDeviceGetMigMode: GPU_IS_LOST\""
devices_match nvidia.com/gpu "^devices resource=nvidia.com/gpu capacity=6 allocatable=5 healthy=$(sorted_ids "$G3,$G4,$G5,$G6,$G7") unhealthy=$G2 "
wait_line "$T/kdpd.err" "\"Device became unhealthy\" resource=\"nvidia.com/gpu\" device=\"$G2\" reason=\"NVML cannot list its MIG devices: nvmlDeviceGetMigMode: NO_PERMISSION\""
sed -i '/^fail /d' "$T/nvml.fixture"
devices_match nvidia.com/mig-1g.10gb "^devices resource=nvidia.com/mig-1g.10gb capacity=2 allocatable=2 healthy=$ONEG unhealthy= "
devices_match nvidia.com/gpu "^devices resource=nvidia.com/gpu capacity=6 allocatable=6 healthy=$WHOLE unhealthy= "
pass "NVML losing GPU 0 (GPU_IS_LOST) and refused GPU 2 (NO_PERMISSION): GPU 0's MIG devices and GPU 2 stay, Unhealthy with NVML's error, and come back"

# a GPU whose MIG mode NVML cannot tell at first sight is not served: kdpd started again with it so
stop_kdpd
echo "fail nvmlDeviceGetMigMode NOT_READY 0000:3b:00.0" >>"$T/nvml.fixture"
run_kdpd -o gpu.mig_strategy=mixed
devices_match nvidia.com/gpu "^devices resource=nvidia.com/gpu capacity=5 allocatable=5 healthy=$(sorted_ids "$G2,$G4,$G5,$G6,$G7") unhealthy= "
wait_line "$T/kdpd.err" '"Device not served" backend="gpu" address="0000:3b:00.0" reason="NVML cannot list its MIG devices: nvmlDeviceGetMigMode: NOT_READY"$'
sed -i '/^fail /d' "$T/nvml.fixture"
devices_match nvidia.com/gpu "^devices resource=nvidia.com/gpu capacity=6 allocatable=6 healthy=$WHOLE unhealthy= "
wait_line "$T/kdpd.err" '"Device served now" backend="gpu" address="0000:3b:00.0"'
pass "GPU 3's MIG mode unknown at start (NOT_READY): not served, with NVML's error; served once NVML answers"
stop_kdpd

# single: every MIG device and every whole GPU under nvidia.com/gpu; NVML's Xid events cannot start
# (no GPU registers), so the kernel log serves Xids, NVML still the MIG devices
{ cat "$NODES/gpu-h100x8-mig.nvml"; echo "fail nvmlDeviceRegisterEvents NOT_SUPPORTED"; } >"$T/nvml.fixture"
run_kdpd -o gpu.mig_strategy=single -o gpu.nvidia_device_specs=true
ALL=$(sorted_ids "$WHOLE,$M2,$M9,$M10,$M11")
devices_match nvidia.com/gpu "^devices resource=nvidia.com/gpu capacity=10 allocatable=10 healthy=$ALL unhealthy= "
wait_line "$T/kdpd.err" '"Device not served" backend="gpu" address="0000:19:00.0" reason="in MIG mode without MIG devices \(no GPU and compute instances\)"$'
assert_eq "$(grep -c '^registered ' "$T/kubelet.out")" 1 "one resource"
S=$(plugin_socket nvidia.com_gpu)
assert_eq "$("$KDPCTL" allocate --socket "$S" "$M2" "$G3" | tr '\n' '|')" \
        "env NVIDIA_VISIBLE_DEVICES=$M2,$G3|device /dev/nvidia-caps/nvidia-cap21 /dev/nvidia-caps/nvidia-cap21 rw|device /dev/nvidia-caps/nvidia-cap22 /dev/nvidia-caps/nvidia-cap22 rw|$SHARED|device /dev/nvidia0 /dev/nvidia0 rw|device /dev/nvidia3 /dev/nvidia3 rw|device /dev/nvidiactl /dev/nvidiactl rw|" \
        "allocate a MIG device and a whole GPU"
pass "single: 4 MIG devices and 6 whole GPUs as nvidia.com/gpu; GPU 1 not served"

wait_line "$T/kdpd.err" '"NVIDIA sources chosen" backend="gpu" xid="kmsg" nvlink="nvml" discovery="sysfs\+procfs"$'
ctl "kmsg 4,9001,9001000,c;NVRM: Xid (PCI:0000:18:00 GPU-I:02 GPU-CI:00): 94, pid=7194, Contained: CE User Channel (0x9). RST: No, D-RST: No"
devices_match nvidia.com/gpu "^devices resource=nvidia.com/gpu capacity=10 allocatable=9 healthy=$(sorted_ids "$WHOLE,$M9,$M10,$M11") unhealthy=$M2 "
ctl "kmsg 4,9002,9002000,c;NVRM: Xid (PCI:0000:18:00 GPU-I:10): 95, pid=7062, Uncontained: LTC TAG (0x2, 0x1). RST: Yes, D-RST: No"
devices_match nvidia.com/gpu "^devices resource=nvidia.com/gpu capacity=10 allocatable=8 healthy=$(sorted_ids "$WHOLE,$M9,$M11") unhealthy=$(sorted_ids "$M2,$M10") "
wait_line "$T/kdpd.err" "\"Device became unhealthy\" resource=\"nvidia.com/gpu\" device=\"$M10\" reason=\"Xid 95 \\(RESET_GPU\\)\""
ctl "uevent 0000:18:00.0 change"
devices_match nvidia.com/gpu "^devices resource=nvidia.com/gpu capacity=10 allocatable=10 healthy=$ALL unhealthy= "
stop_kdpd
pass "kernel log Xids with GPU-I (and GPU-CI) marked only those MIG devices; the reset cleared them"

# none (the default), with NVML: every GPU whole, MIG or not
run_kdpd
ALL=$(sorted_ids "$WHOLE,$G0,$G1")
devices_match nvidia.com/gpu "^devices resource=nvidia.com/gpu capacity=8 allocatable=8 healthy=$ALL unhealthy= "
grep -q 'MIG' "$T/kdpd.err" && fail "none: MIG logged: $(grep MIG "$T/kdpd.err")"
stop_kdpd
pass "none: the 8 GPUs whole, nothing about MIG"

# a MIG strategy without NVML: one error, and the GPUs whole as with none
run_kdpd -o gpu.mig_strategy=mixed -o gpu.nvml=
devices_match nvidia.com/gpu "^devices resource=nvidia.com/gpu capacity=8 allocatable=8 healthy=$ALL unhealthy= "
wait_line "$T/kdpd.err" '^E.*"MIG strategy needs NVML: GPUs in MIG mode are served whole, as with none" backend="gpu" strategy="mixed" reason="gpu.nvml is empty"'
sleep 2
assert_eq "$(grep -c 'MIG strategy needs NVML' "$T/kdpd.err")" 1 "logged once"
assert_eq "$(grep -c '^registered ' "$T/kubelet.out")" 1 "only nvidia.com/gpu"
stop_kdpd
pass "mixed without NVML: one error line, the GPUs whole"
