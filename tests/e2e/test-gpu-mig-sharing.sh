# SPDX-License-Identifier: GPL-2.0-or-later
# MIG devices shared (gpu.replicas) and their preferred allocation, on the simulated HGX node
# gpu-h100x8-mig with the fake libnvidia-ml.so.1 (tests/nvml), re-cut here: GPU 0 as the node has it
# (3g.40gb + 3 × 1g.10gb), GPU 1 with 2 × 1g.10gb, GPU 2 with 1 × 1g.10gb, GPUs 3-7 with MIG off.
#   mixed + replicas   <MIG UUID>::<k> IDs for one profile's resource only; Allocate maps them back
#                      to each MIG device once, with its caps nodes; one CDI device per MIG device;
#                      spread and pack over MIG devices; a replica's health is its MIG device's;
#                      a destroyed MIG device takes its replicas along
#   mixed              preferred without replicas: the framework's locality keeps a request on one
#                      GPU, the one it fills best; must_include keeps its GPU
#   single + replicas  MIG devices and whole GPUs shared under nvidia.com/gpu
#   single             preferred: whole GPUs and MIG devices are alike to the framework
. "$(dirname "$0")/lib.sh"

NODES="$KDP_SOURCE_DIR/tests/fixtures/nodes"
LIB="$KDP_BUILD_DIR/tests/nvml/libnvidia-ml.so.1"
[ -f "$LIB" ] || fail "no fake NVML at $LIB (build the kdp-fake-nvml target)"
G3=GPU-2a33cb91-f983-13d2-3788-7027d4a0bac8     # 0000:3b:00.0, minor 3
G4=GPU-08e93318-9d82-dca8-001f-d1abb2dd3557     # 0000:9a:00.0
G5=GPU-e15ff69a-1402-160a-ee49-d735aa8b30cd     # 0000:9b:00.0
G6=GPU-8e0b591c-eaca-4f51-9063-ed6d32f9c323     # 0000:ba:00.0
G7=GPU-93f2f779-cfb9-ba01-e2a6-5b26f5c93230     # 0000:bb:00.0
M2=MIG-d18142c1-46bf-1902-b13e-596f4dd717a1     # GPU 0 (0000:18:00.0), GI 2, 3g.40gb: caps 21, 22
M9=MIG-9e5e016c-8dbe-e1db-aaad-8733c5bb1821     # GPU 0, GI 9, 1g.10gb: caps 84, 85
M10=MIG-e3751502-0bb9-b911-ca44-20b3128fad47    # GPU 0, GI 10, 1g.10gb: caps 93, 94
M11=MIG-75922d22-d653-0213-caf1-a4994ca03f4c    # GPU 0, GI 11, 1g.10gb: caps 102, 103
A7=MIG-5b0c1f7a-2e41-4d8a-9c3b-7a1e0d2f6c07     # GPU 1 (0000:19:00.0), GI 7, 1g.10gb: caps 201, 202
A8=MIG-5b0c1f7a-2e41-4d8a-9c3b-7a1e0d2f6c08     # GPU 1, GI 8, 1g.10gb: caps 210, 211
B7=MIG-c4e2a913-8d5f-4b76-a0e1-92f3b6d4e807     # GPU 2 (0000:3a:00.0), GI 7, 1g.10gb: caps 336, 337
# mig-1g.10gb's IDs in the order kdpd sends them (sorted): GPU 1's, GPU 0's, GPU 2's, GPU 0's
ONEG="$A7 $A8 $M11 $M9 $B7 $M10"
SHARED="device /dev/nvidia-modeset /dev/nvidia-modeset rw|device /dev/nvidia-uvm /dev/nvidia-uvm rw|device /dev/nvidia-uvm-tools /dev/nvidia-uvm-tools rw"

nvml_fifos
# GPU 2 in MIG mode, and the instances of GPUs 1 and 2, in what the fake NVML answers
sed -e 's/^\(gpu 0000:3a:00.0 [^ ]*\) /\1 mig=1 /' "$NODES/gpu-h100x8-mig.nvml" >"$T/nvml.layout"
printf 'mig 0000:19:00.0 7 0 %s 1 9984\nmig 0000:19:00.0 8 0 %s 1 9984\nmig 0000:3a:00.0 7 0 %s 1 9984\n' \
        "$A7" "$A8" "$B7" >>"$T/nvml.layout"
export KDP_FAKE_NVML="$T/nvml.fixture"

# caps MINOR GI FIRST: the capability files of GI (and its CI 0) of the GPU of MINOR, and their
# /dev/nvidia-caps nodes FIRST and FIRST+1, as the driver and nvidia-modprobe make them
caps() {
        local p=proc/driver/nvidia/capabilities/gpu$1/mig/gi$2
        ctl "write $p/access DeviceFileMinor: $3\nDeviceFileMode: 292\nDeviceFileModify: 1"
        ctl "write $p/ci0/access DeviceFileMinor: $(($3 + 1))\nDeviceFileMode: 292\nDeviceFileModify: 1"
        ctl "write dev/nvidia-caps/nvidia-cap$3 "
        ctl "write dev/nvidia-caps/nvidia-cap$(($3 + 1)) "
}

# run_kdpd CONFIG: kdpd on the node with the fake NVML and the config file CONFIG (YAML of the gpu
# section), beside a new stand-in kubelet; the new instances' files are made as it starts
run_kdpd() {
        [ -n "${KUBELET_PID:-}" ] && stop_kubelet
        start_kubelet kubelet
        printf 'gpu:\n  nvml: "%s"\n%s\n' "$LIB" "$1" >"$T/config.yaml"
        cp "$T/nvml.layout" "$T/nvml.fixture"
        echo "events $T/nvml-events" >>"$T/nvml.fixture"
        start_sim_kdpd "$NODES/gpu-h100x8-mig.umockdev" --control "$T/ctl" -- --v 2 --health-hold-ms 300 --backend gpu \
                --config "$T/config.yaml"
        caps 1 7 201
        caps 1 8 210
        caps 2 7 336
        wait_line "$T/kubelet.out" "^devices resource=nvidia.com/gpu "
        grep -q 'sim-node: .*preload\|not built' "$T/kdpd.err" && { echo "skip: no simulated node"; exit 77; }
}

# replica_ids K LIST: "id::0,...,id::K-1" of each ID of LIST (space-separated), in the order given
replica_ids() {
        local out= id k
        for id in $2; do
                for k in $(seq 0 $(($1 - 1))); do out="$out,$id::$k"; done
        done
        echo "${out#,}"
}
# prefer SOCKET ARGS... EXPECTED: kdpctl preferred's answer. A socket kdpd replaced meanwhile (a
# fresh socket after the kubelet dropped a stream, e.g. right after a reload's re-registration) is
# followed to the resource's newest socket, once, as the kubelet follows the newest registration;
# the resource may have no socket for a moment while kdpd replaces it (seen under valgrind), so
# the new one is waited for.
prefer() {
        local s=$1 want=${*: -1} out res end
        shift
        if ! out=$("$KDPCTL" preferred --socket "$s" "${@:1:$#-1}" 2>&1) && [ ! -S "$s" ]; then
                res=$(basename "$s" | sed -E 's/^kdp-gpu-//; s/\.[0-9]+\.[0-9]+\.sock$//')
                end=$(deadline_ms "$(wait_s)")
                until s=$(plugin_socket "$res") && [ -S "$s" ]; do
                        [ "$(now_ms)" -lt "$end" ] || fail "no socket of $res after kdpd replaced $1"
                        sleep 0.05
                done
                out=$("$KDPCTL" preferred --socket "$s" "${@:1:$#-1}" 2>&1)
        fi
        assert_eq "$out" "preferred $want" "preferred ${*:1:$#-1}"
}

# ---- mixed, 2 replicas of each 1g.10gb ----
run_kdpd '  mig_strategy: mixed
  replicas: "nvidia.com/mig-1g.10gb=2"
  cdi: true
  nvidia_device_specs: true'
R=$(replica_ids 2 "$ONEG")
devices_match nvidia.com/mig-1g.10gb "^devices resource=nvidia.com/mig-1g.10gb capacity=12 allocatable=12 healthy=$R unhealthy= "
devices_match nvidia.com/mig-3g.40gb "^devices resource=nvidia.com/mig-3g.40gb capacity=1 allocatable=1 healthy=$M2 unhealthy= "
devices_match nvidia.com/gpu "^devices resource=nvidia.com/gpu capacity=5 allocatable=5 healthy=$G4,$G3,$G6,$G7,$G5 unhealthy= "
pass "mixed: 6 × 1g.10gb on 3 GPUs as 12 IDs <MIG UUID>::0 and ::1; the 3g.40gb and the whole GPUs unshared"

S=$(plugin_socket nvidia.com_mig-1g.10gb)
assert_eq "$("$KDPCTL" allocate --socket "$S" "$M9::1" "$A7::0" "$M9::0" "$B7::1" | tr '\n' '|')" \
        "env NVIDIA_VISIBLE_DEVICES=$M9,$A7,$B7|device /dev/nvidia-caps/nvidia-cap201 /dev/nvidia-caps/nvidia-cap201 rw|device /dev/nvidia-caps/nvidia-cap202 /dev/nvidia-caps/nvidia-cap202 rw|device /dev/nvidia-caps/nvidia-cap336 /dev/nvidia-caps/nvidia-cap336 rw|device /dev/nvidia-caps/nvidia-cap337 /dev/nvidia-caps/nvidia-cap337 rw|device /dev/nvidia-caps/nvidia-cap84 /dev/nvidia-caps/nvidia-cap84 rw|device /dev/nvidia-caps/nvidia-cap85 /dev/nvidia-caps/nvidia-cap85 rw|$SHARED|device /dev/nvidia0 /dev/nvidia0 rw|device /dev/nvidia1 /dev/nvidia1 rw|device /dev/nvidia2 /dev/nvidia2 rw|device /dev/nvidiactl /dev/nvidiactl rw|cdi nvidia.com/mig-1g.10gb=$A7|cdi nvidia.com/mig-1g.10gb=$M9|cdi nvidia.com/mig-1g.10gb=$B7|" \
        "allocate 4 replicas of 3 MIG devices"
pass "Allocate maps replicas to their MIG devices: each MIG UUID once, its caps nodes and its GPU's node once, CDI names"

assert_eq "$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(d["kind"], len(d["devices"]), " ".join(x["name"] for x in d["devices"]))
' "$T/cdi/kdp-nvidia.com-mig-1g.10gb.json")" "nvidia.com/mig-1g.10gb 6 $ONEG" "CDI spec of mig-1g.10gb"
pass "CDI spec: one device per MIG device, not per replica"

prefer "$S" --size 3 "$A7::0,$A8::0,$M11::0"
prefer "$S" --size 2 --must "$M9::1" "$M9::1,$A7::0"
prefer "$S" --size 2 --available "$A7::1" --available "$A8::0" --available "$A8::1" "$A8::0,$A7::1"
prefer "$S" --size 12 "$(replica_ids 1 "$ONEG"),$(replica_ids 1 "$ONEG" | sed 's/::0/::1/g')"
pass "preferred (spread): distinct MIG devices first, the least shared first; must_include first"

# a replica's health is its MIG device's: an Xid of GI 9 marks M9's two replicas
nvml "event 0000:18:00.0 94 9 0"
U="$M9::0,$M9::1"
devices_match nvidia.com/mig-1g.10gb "^devices resource=nvidia.com/mig-1g.10gb capacity=12 allocatable=10 healthy=$(replica_ids 2 "$A7 $A8 $M11 $B7 $M10") unhealthy=$U "
ctl "uevent 0000:18:00.0 change"
devices_match nvidia.com/mig-1g.10gb "^devices resource=nvidia.com/mig-1g.10gb capacity=12 allocatable=12 healthy=$R unhealthy= "
pass "an Xid of M9's instance made both its replicas Unhealthy, and only those; the GPU's reset cleared them"

# GPU 1's GI 8 destroyed: A8's replicas leave with it
hold_kdpd
ctl "rm proc/driver/nvidia/capabilities/gpu1/mig/gi8"
ctl "echo procfs-changed"
wait_line "$T/kdpd.out" '^procfs-changed$'
grep -v " 8 0 $A8 " "$T/nvml.fixture" >"$T/nvml.next"
mv "$T/nvml.next" "$T/nvml.fixture"
release_kdpd
devices_match nvidia.com/mig-1g.10gb "^devices resource=nvidia.com/mig-1g.10gb capacity=10 allocatable=10 healthy=$(replica_ids 2 "$A7 $M11 $M9 $B7 $M10") unhealthy= "
pass "a MIG device destroyed while kdpd runs takes its replicas along"

# pack, after a SIGHUP: the MIG device already shared first
echo '  replica_policy: pack' >>"$T/config.yaml"
kill -HUP "$KDPD_PID"
wait_count "$T/kdpd.err" '"Serving resource" resource="nvidia.com/mig-1g.10gb" socket=' 2
S=$(plugin_socket nvidia.com_mig-1g.10gb)
prefer "$S" --size 2 --must "$A7::1" "$A7::1,$A7::0"
prefer "$S" --size 1 --available "$M9::0" --available "$M9::1" --available "$B7::0" "$B7::0"
stop_kdpd
pass "preferred (pack): the MIG device with the fewest free replicas first"

# ---- mixed without replicas: the framework's locality ----
run_kdpd '  mig_strategy: mixed'
devices_match nvidia.com/mig-1g.10gb "^devices resource=nvidia.com/mig-1g.10gb capacity=6 allocatable=6 healthy=$(tr ' ' ',' <<<"$ONEG") unhealthy= "
S=$(plugin_socket nvidia.com_mig-1g.10gb)
prefer "$S" --size 1 "$B7"                              # GPU 2's only one: fills that GPU
prefer "$S" --size 2 "$A7,$A8"                          # one GPU: GPU 1 (2 free) before GPU 0 (3)
prefer "$S" --size 3 "$M11,$M9,$M10"                    # only GPU 0 holds 3
prefer "$S" --size 4 "$A7,$M11,$M9,$M10"                # GPU 0 and its switch sibling GPU 1
prefer "$S" --size 2 --must "$M9" "$M9,$M11"            # must_include's GPU
prefer "$S" --size 2 --must "$B7" "$B7,$A7"             # GPU 2 has no other: the GPU with fewest free
prefer "$S" --size 2 --must "$M10" --must "$B7" "$M10,$B7"   # size reached by must_include
prefer "$S" --size 2 --available "$M10" --available "$A7" --available "$M9" "$M9,$M10"
prefer "$S" --size 7 "$(tr ' ' ',' <<<"$ONEG")"          # more than there are: all
grep -q '"Replaced backend preferred allocation by the default"' "$T/kdpd.err" && fail "an answer of the backend was refused"
stop_kdpd
pass "preferred without replicas: one GPU's MIG devices together, on the GPU they fill best"

# ---- single, 2 replicas of everything under nvidia.com/gpu ----
run_kdpd '  mig_strategy: single
  replicas: "2"
  nvidia_device_specs: true'
ALL="$G4 $G3 $G6 $G7 $G5 $A7 $A8 $M11 $M9 $B7 $M2 $M10"
devices_match nvidia.com/gpu "^devices resource=nvidia.com/gpu capacity=24 allocatable=24 healthy=$(replica_ids 2 "$ALL") unhealthy= "
S=$(plugin_socket nvidia.com_gpu)
assert_eq "$("$KDPCTL" allocate --socket "$S" "$M2::1" "$G3::0" "$M2::0" | tr '\n' '|')" \
        "env NVIDIA_VISIBLE_DEVICES=$M2,$G3|device /dev/nvidia-caps/nvidia-cap21 /dev/nvidia-caps/nvidia-cap21 rw|device /dev/nvidia-caps/nvidia-cap22 /dev/nvidia-caps/nvidia-cap22 rw|$SHARED|device /dev/nvidia0 /dev/nvidia0 rw|device /dev/nvidia3 /dev/nvidia3 rw|device /dev/nvidiactl /dev/nvidiactl rw|" \
        "allocate replicas of a MIG device and of a whole GPU"
prefer "$S" --size 3 "$G4::0,$G3::0,$G6::0"
prefer "$S" --size 2 --must "$B7::0" "$B7::0,$G4::0"
stop_kdpd
pass "single: MIG devices and whole GPUs shared alike under nvidia.com/gpu"

# ---- single without replicas: whole GPUs and MIG devices alike ----
run_kdpd '  mig_strategy: single'
devices_match nvidia.com/gpu "^devices resource=nvidia.com/gpu capacity=12 allocatable=12 healthy=$(tr ' ' ',' <<<"$ALL") unhealthy= "
S=$(plugin_socket nvidia.com_gpu)
prefer "$S" --size 1 "$G4"                              # a whole GPU: one device as any other
prefer "$S" --size 2 "$A7,$A8"                          # GPU 1's two MIG devices
prefer "$S" --size 2 --must "$B7" "$B7,$G3"             # GPU 2's switch sibling, whole
stop_kdpd
pass "single: preferred weighs whole GPUs and MIG devices alike, one GPU's MIG devices together"
