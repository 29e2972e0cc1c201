# SPDX-License-Identifier: GPL-2.0-or-later
# The GPU backend's modes on the simulated HGX node (tests/fixtures/nodes/gpu-h100x8): replicas
# (<uuid>::<k>, mapped back to the GPUs, spread or packed, switched by SIGHUP), NVIDIA DeviceSpecs,
# CDI names and the CDI spec file kept in step with hot-plug, and config errors naming file,
# line and key.
. "$(dirname "$0")/lib.sh"

SIM="$KDP_SOURCE_DIR/tests/sim-node/sim-node"
FIX="$KDP_SOURCE_DIR/tests/fixtures/nodes/gpu-h100x8.umockdev"
RES=nvidia.com/gpu
G0=GPU-7e22a81e-6b76-b0ca-e885-cc1f6ba67a93     # 0000:18:00.0, /dev/nvidia0
G1=GPU-5264ed78-cbf9-0162-2418-d9eaadde9f39     # 0000:19:00.0
G2=GPU-2c119aa3-e093-cdf7-cc30-8b33c4369abc     # 0000:3a:00.0, /dev/nvidia2
G3=GPU-a6b80bb6-17d8-167a-1800-dbd44ba4af78
G4=GPU-f537d6f5-8b34-75f5-822d-43e3d472ae3d
G5=GPU-8e5c8664-88e3-6075-a95c-812f25881d56
G6=GPU-7f2be42a-1dc0-9880-c66d-1d570a6c8325
G7=GPU-2f9885ef-6659-ebc4-1750-e75cdbc10a17     # 0000:bb:00.0, /dev/nvidia7

# config errors stop the start and name the file, line and key
printf 'gpu:\n  vendors: nvidia\n  replica_policy: sideways\n' >"$T/bad.yaml"
"$KDPD" --kubelet-dir "$DIR" --state-dir "$T/state" --backend gpu --config "$T/bad.yaml" 2>"$T/bad.err" && fail "a bad replica_policy was accepted"
grep -q "\"Rejected config value\" backend=\"gpu\" key=\"gpu.replica_policy\" value=\"sideways\" origin=\"$T/bad.yaml:3\" reason=\"not spread or pack\"" "$T/bad.err" ||
        fail "bad value not reported with file and line: $(cat "$T/bad.err")"
"$KDPD" --kubelet-dir "$DIR" --state-dir "$T/state" --backend gpu -o gpu.xid_ignor=13 2>"$T/bad.err" && fail "an unknown key was accepted"
grep -q '"Unknown config key" key="gpu.xid_ignor" origin="-o gpu.xid_ignor=13"' "$T/bad.err" || fail "unknown key not reported"
pass "a bad value and an unknown key are refused, naming where they were set"

mkfifo "$T/ctl"
exec 9<>"$T/ctl"
printf 'gpu:\n  replicas: "nvidia.com/gpu=2"\n  cdi: true\n  nvidia_device_specs: true\n' >"$T/config.yaml"
start_kubelet kubelet
"${DIE_WITH_US[@]}" "$SIM" "$FIX" --control "$T/ctl" -- "${KDPD_RUN[@]}" --kubelet-dir "$DIR" --state-dir "$T/state" --cdi-dir "$T/cdi" --v 2 --health-hold-ms 300 \
        --backend gpu --config "$T/config.yaml" >"$T/kdpd.out" 2>"$T/kdpd.err" &
KDPD_PID=$!
PIDS+=($KDPD_PID)
wait_line "$T/kubelet.out" "^devices resource=$RES "
grep -q 'sim-node: .*preload\|not built' "$T/kdpd.err" && { echo "skip: no simulated node"; exit 77; }

ids=""
for g in $G2 $G7 $G1 $G0 $G6 $G5 $G3 $G4; do ids="$ids,$g::0,$g::1"; done
devices_match $RES "^devices resource=$RES capacity=16 allocatable=16 healthy=${ids#,} unhealthy= "
pass "replicas: 8 GPUs advertised as 16 IDs <uuid>::0 and <uuid>::1"

S=$(plugin_socket nvidia.com_gpu)
out=$("$KDPCTL" allocate --socket "$S" "$G2::1" "$G0::0" "$G2::0")
assert_eq "$(echo "$out" | tr '\n' '|')" \
        "env NVIDIA_VISIBLE_DEVICES=$G2,$G0|device /dev/nvidia-modeset /dev/nvidia-modeset rw|device /dev/nvidia-uvm /dev/nvidia-uvm rw|device /dev/nvidia-uvm-tools /dev/nvidia-uvm-tools rw|device /dev/nvidia0 /dev/nvidia0 rw|device /dev/nvidia2 /dev/nvidia2 rw|device /dev/nvidiactl /dev/nvidiactl rw|cdi nvidia.com/gpu=$G2|cdi nvidia.com/gpu=$G0|" \
        "allocate 3 replicas of 2 GPUs"
pass "Allocate maps replicas to their GPUs: each UUID once, DeviceSpecs for their nodes, CDI names"

assert_eq "$("$KDPCTL" preferred --socket "$S" --size 3)" "preferred $G2::0,$G7::0,$G1::0" "spread: 3 distinct GPUs"
assert_eq "$("$KDPCTL" preferred --socket "$S" --size 2 --must "$G5::1")" "preferred $G5::1,$G2::0" \
        "spread with one given: another GPU"
printf 'gpu:\n  replicas: "nvidia.com/gpu=2"\n  replica_policy: pack\n  cdi: true\n  nvidia_device_specs: true\n' \
        >"$T/config.yaml"
kill -HUP "$KDPD_PID"
wait_line "$T/kdpd.err" '"Serving resource" resource="nvidia.com/gpu" socket=.*\.2\.sock'
S=$(plugin_socket nvidia.com_gpu)
assert_eq "$("$KDPCTL" preferred --socket "$S" --size 2 --must "$G5::1")" "preferred $G5::1,$G5::0" \
        "pack with one given: the same GPU"
pass "preferred replicas: spread over distinct GPUs, or packed after a SIGHUP switched the policy"

# the CDI spec: one device per GPU (not per replica), its own node and the node-wide ones
spec="$T/cdi/kdp-nvidia.com-gpu.json"
[ -f "$spec" ] || fail "no CDI spec at $spec"
assert_eq "$(stat -c %a "$spec")" 644 "spec file mode"
assert_eq "$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(d["cdiVersion"], d["kind"], len(d["devices"]))
for x in d["devices"]:
    print(x["name"], " ".join(n["path"] + ":" + n["hostPath"] + ":" + n["permissions"] for n in x["containerEdits"]["deviceNodes"]))
' "$spec" | tr '\n' '|')" \
"0.6.0 nvidia.com/gpu 8|$(for p in "$G2 2" "$G7 7" "$G1 1" "$G0 0" "$G6 6" "$G5 5" "$G3 3" "$G4 4"; do set -- $p
        printf '%s /dev/nvidia%s:/dev/nvidia%s:rw' "$1" "$2" "$2"
        for n in nvidiactl nvidia-uvm nvidia-uvm-tools nvidia-modeset; do printf ' /dev/%s:/dev/%s:rw' $n $n; done
        printf '|'; done)" "CDI spec content"
pass "CDI spec: cdiVersion 0.6.0, kind nvidia.com/gpu, one device per GPU with its nodes"

# hot-plug: GPU 7 leaves and comes back as /dev/nvidia9 (the driver hands out minors in probe order)
echo "rm proc/driver/nvidia/gpus/0000:bb:00.0" >&9
echo "unplug 0000:bb:00.0" >&9
devices_match $RES "capacity=16 allocatable=14 .*unhealthy=$G7::0,$G7::1 "
echo "write dev/nvidia9 " >&9
printf 'write proc/driver/nvidia/gpus/0000:bb:00.0/information Model: \\t\\t NVIDIA H100 80GB HBM3\\nGPU UUID: \\t %s\\nBus Location: \\t 0000:bb:00.0\\nDevice Minor: \\t 9\\nGPU Excluded:\\t No\n' "$G7" >&9
echo "replug 0000:bb:00.0" >&9
devices_match $RES "capacity=16 allocatable=16 "
end=$(deadline_ms 30)
until python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if any(n["path"]=="/dev/nvidia9" for x in d["devices"] for n in x["containerEdits"]["deviceNodes"]) else 1)' "$spec"; do
        [ "$(now_ms)" -lt "$end" ] || fail "the CDI spec did not follow GPU 7 to /dev/nvidia9"
        sleep 0.05
done
grep -q '"/dev/nvidia7"' "$spec" && fail "the CDI spec still names /dev/nvidia7"
assert_eq "$("$KDPCTL" allocate --socket "$S" "$G7::0" | grep '^device /dev/nvidia9')" \
        "device /dev/nvidia9 /dev/nvidia9 rw" "Allocate uses the new minor"
pass "hot-plug: the GPU came back with another minor; the CDI spec and Allocate follow it"

stop_kdpd
[ -f "$spec" ] || fail "the CDI spec was removed at shutdown"
pass "the CDI spec stays after kdpd stops, for containers that restart"
