#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# sim-node/gpu-fixtures: the GPU nodes of tests/fixtures/nodes/ (gpu-*.umockdev and their .files
# trees) as a backend sees them under sim-node: the PCI tree with NUMA nodes and drivers
# (kdpctl discover), the NVIDIA procfs and /dev side, the KFD topology and its joins to PCI and
# DRM, the DRM minors and by-path links, and the fall-off-the-bus script end to end (uevents,
# kernel log, procfs). The tables checked here are the ones tests/fixtures/README.md gives.
# Exit 77 = skipped. ok() never fails, so "[ ... ] && ok ... || fail ..." is an if-then-else; the
# single-quoted bash -c scripts expand their $0 $1 ... in the child, as intended.
# shellcheck disable=SC2015,SC2016
set -u

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "${KDP_BUILD_DIR:-$(dirname "${BASH_SOURCE[0]}")/../../build}/kdpctl"
kdpctl=$build/kdpctl

# ---------------------------------------------------------------------------------------------
# The PCI trees: addresses, IDs, classes, drivers, NUMA nodes, IOMMU groups

run "h100x8 discover" gpu-h100x8 "$kdpctl" discover
expect "gpu-h100x8: 8 H100 behind 4 switches, 4 NVSwitches, the BMC" "$tmp/out" <<'EOF'
ADDRESS             ID         CLASS   DRIVER           NUMA  IOMMU  SRIOV
0000:00:1c.0        8086:a190  060400  pcieport         0     10
  0000:01:00.0      1a03:1150  060400  -                0     11
    0000:02:00.0    1a03:2000  030000  ast              0     11
0000:15:01.0        8086:352a  060400  pcieport         0     20
  0000:16:00.0      1000:c030  060400  pcieport         0     21
    0000:17:00.0    1000:c030  060400  pcieport         0     22
      0000:18:00.0  10de:2330  030200  nvidia           0     30
    0000:17:01.0    1000:c030  060400  pcieport         0     23
      0000:19:00.0  10de:2330  030200  nvidia           0     31
0000:37:01.0        8086:352a  060400  pcieport         0     36
  0000:38:00.0      1000:c030  060400  pcieport         0     37
    0000:39:00.0    1000:c030  060400  pcieport         0     38
      0000:3a:00.0  10de:2330  030200  nvidia           0     40
    0000:39:01.0    1000:c030  060400  pcieport         0     39
      0000:3b:00.0  10de:2330  030200  nvidia           0     41
0000:97:01.0        8086:352a  060400  pcieport         1     60
  0000:98:00.0      1000:c030  060400  pcieport         1     61
    0000:99:00.0    1000:c030  060400  pcieport         1     62
      0000:9a:00.0  10de:2330  030200  nvidia           1     70
    0000:99:01.0    1000:c030  060400  pcieport         1     63
      0000:9b:00.0  10de:2330  030200  nvidia           1     71
0000:b7:01.0        8086:352a  060400  pcieport         1     76
  0000:b8:00.0      1000:c030  060400  pcieport         1     77
    0000:b9:00.0    1000:c030  060400  pcieport         1     78
      0000:ba:00.0  10de:2330  030200  nvidia           1     80
    0000:b9:01.0    1000:c030  060400  pcieport         1     79
      0000:bb:00.0  10de:2330  030200  nvidia           1     81
0000:c0:01.0        8086:352a  060400  pcieport         1     90
  0000:c4:00.0      10de:22a3  068000  nvidia-nvswitch  1     91
0000:c0:02.0        8086:352a  060400  pcieport         1     92
  0000:c5:00.0      10de:22a3  068000  nvidia-nvswitch  1     93
0000:c0:03.0        8086:352a  060400  pcieport         1     94
  0000:c6:00.0      10de:22a3  068000  nvidia-nvswitch  1     95
0000:c0:04.0        8086:352a  060400  pcieport         1     96
  0000:c7:00.0      10de:22a3  068000  nvidia-nvswitch  1     97
EOF

# the PCI tree of the MI300X nodes (gpu-mi300x4*; gpu-mi308x4-cpx with 1002:74a2), whatever mode
mi300_pci='ADDRESS           ID         CLASS   DRIVER    NUMA  IOMMU  SRIOV
0000:00:01.1      1022:14ba  060400  pcieport  0     12
  0000:05:00.0    1002:74a1  120000  amdgpu    0     13
0000:00:1c.0      1022:14ba  060400  pcieport  0     10
  0000:01:00.0    1a03:1150  060400  -         0     11
    0000:02:00.0  1a03:2000  030000  ast       0     11
0000:20:01.1      1022:14ba  060400  pcieport  0     22
  0000:27:00.0    1002:74a1  120000  amdgpu    0     23
0000:80:01.1      1022:14ba  060400  pcieport  1     32
  0000:85:00.0    1002:74a1  120000  amdgpu    1     33
0000:a0:01.1      1022:14ba  060400  pcieport  1     42
  0000:a7:00.0    1002:74a1  120000  amdgpu    1     43'
run "mi300x4 discover" gpu-mi300x4 "$kdpctl" discover
expect "gpu-mi300x4: 4 MI300X on their own root ports, the BMC" "$tmp/out" <<< "$mi300_pci"

run "flex170x2 discover" gpu-flex170x2 "$kdpctl" discover
expect "gpu-flex170x2: 2 Flex 170 behind their on-card bridges, SR-IOV off, the BMC" "$tmp/out" <<'EOF'
ADDRESS             ID         CLASS   DRIVER    NUMA  IOMMU  SRIOV
0000:00:1c.0        8086:a190  060400  pcieport  0     10
  0000:01:00.0      1a03:1150  060400  -         0     11
    0000:02:00.0    1a03:2000  030000  ast       0     11
0000:4a:01.0        8086:352a  060400  pcieport  0     30
  0000:4b:00.0      8086:4fa0  060400  pcieport  0     31
    0000:4c:01.0    8086:4fa4  060400  pcieport  0     32
      0000:4d:00.0  8086:56c0  038000  i915      0     33     vfs=0/31
0000:c7:01.0        8086:352a  060400  pcieport  1     70
  0000:c8:00.0      8086:4fa0  060400  pcieport  1     71
    0000:c9:01.0    8086:4fa4  060400  pcieport  1     72
      0000:ca:00.0  8086:56c0  038000  i915      1     73     vfs=0/31
EOF

run "mixed discover" gpu-mixed "$kdpctl" discover
expect "gpu-mixed: 2 L40S on NUMA 0, a Flex 170 on xe on NUMA 1, the BMC" "$tmp/out" <<'EOF'
ADDRESS             ID         CLASS   DRIVER    NUMA  IOMMU  SRIOV
0000:00:1c.0        8086:a190  060400  pcieport  0     10
  0000:01:00.0      1a03:1150  060400  -         0     11
    0000:02:00.0    1a03:2000  030000  ast       0     11
0000:3c:01.0        8086:352a  060400  pcieport  0     30
  0000:3d:00.0      10de:26b9  030200  nvidia    0     31
0000:4e:01.0        8086:352a  060400  pcieport  0     40
  0000:4f:00.0      10de:26b9  030200  nvidia    0     41
0000:d7:01.0        8086:352a  060400  pcieport  1     70
  0000:d8:00.0      8086:4fa0  060400  pcieport  1     71
    0000:d9:01.0    8086:4fa4  060400  pcieport  1     72
      0000:da:00.0  8086:56c0  038000  xe        1     73     vfs=0/31
EOF

# ---------------------------------------------------------------------------------------------
# NVIDIA: information files joined to PCI and /dev, as a backend joins them (docs/hardware-gpu.md §9)

# one line per GPU: BDF, minor, the /dev node's number, NUMA node, capability dir, UUID shape
nv_table='
for f in /proc/driver/nvidia/gpus/*/information; do
        d=${f%/information}; bdf=${d##*/}
        loc=$(sed -n "s/^Bus Location: \t //p" "$f"); minor=$(sed -n "s/^Device Minor: \t //p" "$f")
        uuid=$(sed -n "s/^GPU UUID: \t //p" "$f"); excl=$(sed -n "s/^GPU Excluded:\t //p" "$f")
        [[ $uuid =~ ^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$ ]] && shape=ok || shape=bad
        [ -d /proc/driver/nvidia/capabilities/gpu$minor/mig ] && caps=ok || caps=missing
        echo "$bdf loc=$loc minor=$minor dev=$(stat -c %t:%T /dev/nvidia$minor) numa=$(cat /sys/bus/pci/devices/$bdf/numa_node) driver=$(basename "$(readlink /sys/bus/pci/devices/$bdf/driver)") caps=$caps uuid=$shape excluded=$excl"
        echo "$uuid" >> "$0"
done
for n in ctl -modeset -uvm -uvm-tools -caps/nvidia-cap1 -caps/nvidia-cap2; do echo "/dev/nvidia$n $(stat -c %t:%T /dev/nvidia$n)"; done
echo "mig-minors lines=$(wc -l < /proc/driver/nvidia-caps/mig-minors) $(grep -E "^(config|monitor|gpu0/gi1/access|gpu0/gi1/ci0/access|gpu1/gi1/access|gpu1/gi1/ci0/access|gpu31/gi14/ci7/access) " /proc/driver/nvidia-caps/mig-minors | tr "\n" " ")"
'
run "h100x8 nvidia table" gpu-h100x8 bash -c "$nv_table" "$tmp/uuids"
expect "gpu-h100x8: information ↔ PCI ↔ /dev (stat numbers in hex), MIG minors by the closed form" "$tmp/out" <<'EOF'
0000:18:00.0 loc=0000:18:00.0 minor=0 dev=c3:0 numa=0 driver=nvidia caps=ok uuid=ok excluded=No
0000:19:00.0 loc=0000:19:00.0 minor=1 dev=c3:1 numa=0 driver=nvidia caps=ok uuid=ok excluded=No
0000:3a:00.0 loc=0000:3a:00.0 minor=2 dev=c3:2 numa=0 driver=nvidia caps=ok uuid=ok excluded=No
0000:3b:00.0 loc=0000:3b:00.0 minor=3 dev=c3:3 numa=0 driver=nvidia caps=ok uuid=ok excluded=No
0000:9a:00.0 loc=0000:9a:00.0 minor=4 dev=c3:4 numa=1 driver=nvidia caps=ok uuid=ok excluded=No
0000:9b:00.0 loc=0000:9b:00.0 minor=5 dev=c3:5 numa=1 driver=nvidia caps=ok uuid=ok excluded=No
0000:ba:00.0 loc=0000:ba:00.0 minor=6 dev=c3:6 numa=1 driver=nvidia caps=ok uuid=ok excluded=No
0000:bb:00.0 loc=0000:bb:00.0 minor=7 dev=c3:7 numa=1 driver=nvidia caps=ok uuid=ok excluded=No
/dev/nvidiactl c3:ff
/dev/nvidia-modeset c3:fe
/dev/nvidia-uvm ea:0
/dev/nvidia-uvm-tools ea:1
/dev/nvidia-caps/nvidia-cap1 ed:1
/dev/nvidia-caps/nvidia-cap2 ed:2
mig-minors lines=4322 config 1 monitor 2 gpu0/gi1/access 12 gpu0/gi1/ci0/access 13 gpu1/gi1/access 147 gpu1/gi1/ci0/access 148 gpu31/gi14/ci7/access 4322 
EOF
[ "$(sort -u "$tmp/uuids" | wc -l)" = 8 ] && ok "gpu-h100x8: 8 distinct GPU UUIDs" || fail "UUIDs: $(cat "$tmp/uuids")"

rm -f "$tmp/uuids"
run "mixed nvidia table" gpu-mixed bash -c "$nv_table" "$tmp/uuids"
expect "gpu-mixed: the two L40S in procfs and /dev" <(head -2 "$tmp/out") <<'EOF'
0000:3d:00.0 loc=0000:3d:00.0 minor=0 dev=c3:0 numa=0 driver=nvidia caps=ok uuid=ok excluded=No
0000:4f:00.0 loc=0000:4f:00.0 minor=1 dev=c3:1 numa=0 driver=nvidia caps=ok uuid=ok excluded=No
EOF
[ "$(sort -u "$tmp/uuids" | wc -l)" = 2 ] && ok "gpu-mixed: 2 distinct GPU UUIDs" || fail "UUIDs: $(cat "$tmp/uuids")"

# the switches and the BMC are gpu-h100x8's (above); its GPUs, and the first switch's third port
run "h100nvl discover" gpu-h100nvl bash -c '"$0" discover | grep -e " 10de:" -e "0000:17:02.0" -e "0000:b7:01.0"' "$kdpctl"
expect "gpu-h100nvl: 7 H100 NVL behind 3 switches (no fourth), no NVSwitch" "$tmp/out" <<'EOF'
      0000:18:00.0  10de:2321  030200  nvidia    0     30
      0000:19:00.0  10de:2321  030200  nvidia    0     31
    0000:17:02.0    1000:c030  060400  pcieport  0     24
      0000:1a:00.0  10de:2321  030200  nvidia    0     32
      0000:3a:00.0  10de:2321  030200  nvidia    0     40
      0000:3b:00.0  10de:2321  030200  nvidia    0     41
      0000:9a:00.0  10de:2321  030200  nvidia    1     70
      0000:9b:00.0  10de:2321  030200  nvidia    1     71
EOF
# its procfs and /dev are served end to end by e2e/gpu-nvlink (every GPU Healthy with its UUID)

P=/proc/driver/nvidia
run "h100x8 files" gpu-h100x8 "$check" files $P/gpus/0000:18:00.0/information $P/capabilities/mig/config \
        $P/capabilities/mig/monitor /proc/driver/nvidia-caps/nvlink-minors /proc/driver/nvidia-caps/sys-minors \
        /sys/module/nvidia/version /dev/dri /dev/nvidia-nvswitch3 /dev/nvidia-nvswitchctl /dev/kmsg \
        /sys/devices/system/node/online /sys/class/drm/version
sed -i 's/GPU-[0-9a-f-]*/GPU-UUID/' "$tmp/out"
expect "gpu-h100x8: exact procfs text, no DRM minor but the BMC's, NVSwitch nodes, kmsg" "$tmp/out" <<'EOF'
file /proc/driver/nvidia/gpus/0000:18:00.0/information text=Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 108\nGPU UUID: \t GPU-UUID\nVideo BIOS: \t 96.00.99.00.01\nBus Type: \t PCIe\nDMA Size: \t 52 bits\nDMA Mask: \t 0xfffffffffffff\nBus Location: \t 0000:18:00.0\nDevice Minor: \t 0\nGPU Firmware: \t 595.45.04\nGPU Excluded:\t No\n
file /proc/driver/nvidia/capabilities/mig/config text=DeviceFileMinor: 1\nDeviceFileMode: 256\nDeviceFileModify: 1\n
file /proc/driver/nvidia/capabilities/mig/monitor text=DeviceFileMinor: 2\nDeviceFileMode: 292\nDeviceFileModify: 1\n
file /proc/driver/nvidia-caps/nvlink-minors text=fabric-mgmt 0\n
file /proc/driver/nvidia-caps/sys-minors text=fabric-imex-mgmt 4323\n
file /sys/module/nvidia/version text=595.45.04\n
file /dev/dri dir: by-path card0
file /dev/nvidia-nvswitch3 char 239:3
file /dev/nvidia-nvswitchctl char 239:255
file /dev/kmsg char 1:11
file /sys/devices/system/node/online text=0-1\n
file /sys/class/drm/version text=drm 1.1.0 20060810\n
EOF

# ---------------------------------------------------------------------------------------------
# AMD: KFD node ↔ BDF ↔ render minor, the way docs/hardware-gpu.md §4.2 joins them; the XCPs' minors
# belong to no KFD node

kfd_table='
t=/sys/class/kfd/kfd/topology
echo "generation_id $(cat $t/generation_id) /dev/kfd $(stat -c %t:%T /dev/kfd)"
for n in $(ls $t/nodes | sort -n); do
        p=$t/nodes/$n/properties
        v() { sed -n "s/^$1 //p" "$p"; }
        loc=$(v location_id) minor=$(v drm_render_minor) simd=$(v simd_count)
        links=$(for l in $t/nodes/$n/io_links/*/properties; do sed -n "s/^type //p; s/^node_to //p" "$l" | tr "\n" ">"; echo -n " "; done)
        if [ "$(cat $t/nodes/$n/gpu_id)" = 0 ]; then echo "node $n cpu cores=$(v cpu_cores_count) links: $links"; continue; fi
        bdf=$(printf "%04x:%02x:%02x.0" "$(v domain)" $(( (loc >> 8) & 255 )) $(( (loc >> 3) & 31 )))
        dev=$(basename "$(readlink -f /sys/class/drm/renderD$minor/device)")
        echo "node $n gpu bdf=$bdf renderD$minor device=$dev numa=$(cat /sys/bus/pci/devices/$bdf/numa_node) simd=$simd xcc=$(v num_xcc) hive=$(v hive_id) links: $links"
done
for bdf in 0000:05:00.0 0000:27:00.0 0000:85:00.0 0000:a7:00.0; do
        d=/sys/bus/pci/devices/$bdf
        echo "$bdf drm: $(ls $d/drm | tr "\n" " ")partition=$(cat $d/current_compute_partition)/$(cat $d/current_memory_partition) xgmi_physical_id=$(cat $d/xgmi_physical_id) hive=$(cat $d/xgmi_hive_info/xgmi_hive_id) by-path=$(readlink /dev/dri/by-path/pci-$bdf-render)"
done
echo "hive members: $(for i in 0 1 2 3; do basename "$(readlink -f /sys/bus/pci/devices/0000:27:00.0/xgmi_hive_info/node$i)"; done | tr "\n" " ")"
echo "xcp: $(ls -d /sys/devices/platform/amdgpu_xcp_* | wc -l) platform devices; amdgpu_xcp_0: $(ls /sys/devices/platform/amdgpu_xcp_0/drm | tr "\n" " ")amdgpu_xcp_27: $(ls /sys/devices/platform/amdgpu_xcp_27/drm | tr "\n" " ")"
echo "drm: $(ls /sys/class/drm | grep -c "^card[0-9]*$") cards, $(ls /sys/class/drm | grep -c "^renderD[0-9]*$") render nodes, /dev/dri/renderD159 $(stat -c %t:%T /dev/dri/renderD159)"
echo "module: $(ls /sys/module/amdgpu/drivers/pci:amdgpu/ | grep -c "^0000:") bound GPUs"
'
run "mi300x4 kfd table" gpu-mi300x4 bash -c "$kfd_table"
expect "gpu-mi300x4: KFD nodes join PCI and DRM; 28 XCPs with 56 minors outside KFD" "$tmp/out" <<'EOF'
generation_id 1 /dev/kfd eb:0
node 0 cpu cores=96 links: 1>1> 2>2> 2>3> 2>4> 2>5> 
node 1 cpu cores=96 links: 1>0> 2>2> 2>3> 2>4> 2>5> 
node 2 gpu bdf=0000:05:00.0 renderD128 device=0000:05:00.0 numa=0 simd=1216 xcc=8 hive=15188982192727901047 links: 2>0> 11>3> 11>4> 11>5> 
node 3 gpu bdf=0000:27:00.0 renderD136 device=0000:27:00.0 numa=0 simd=1216 xcc=8 hive=15188982192727901047 links: 2>0> 11>2> 11>4> 11>5> 
node 4 gpu bdf=0000:85:00.0 renderD144 device=0000:85:00.0 numa=1 simd=1216 xcc=8 hive=15188982192727901047 links: 2>1> 11>2> 11>3> 11>5> 
node 5 gpu bdf=0000:a7:00.0 renderD152 device=0000:a7:00.0 numa=1 simd=1216 xcc=8 hive=15188982192727901047 links: 2>1> 11>2> 11>3> 11>4> 
0000:05:00.0 drm: card1 renderD128 partition=SPX/NPS1 xgmi_physical_id=0 hive=15188982192727901047 by-path=../renderD128
0000:27:00.0 drm: card9 renderD136 partition=SPX/NPS1 xgmi_physical_id=1 hive=15188982192727901047 by-path=../renderD136
0000:85:00.0 drm: card17 renderD144 partition=SPX/NPS1 xgmi_physical_id=2 hive=15188982192727901047 by-path=../renderD144
0000:a7:00.0 drm: card25 renderD152 partition=SPX/NPS1 xgmi_physical_id=3 hive=15188982192727901047 by-path=../renderD152
hive members: 0000:05:00.0 0000:27:00.0 0000:85:00.0 0000:a7:00.0 
xcp: 28 platform devices; amdgpu_xcp_0: card2 renderD129 amdgpu_xcp_27: card32 renderD159 
drm: 33 cards, 32 render nodes, /dev/dri/renderD159 e2:9f
module: 4 bound GPUs
EOF

# the partition modes: one KFD node per partition, location_id's low bits the partition, each
# render minor that of the PCI device (partition 0) or of its XCP; the XCPs no node names; each
# GPU's modes as amdgpu shows them (the modes it takes in the current memory partition)
part_table='
t=/sys/class/kfd/kfd/topology
echo "generation_id $(cat $t/generation_id)"
named=" "
for n in $(ls $t/nodes | sort -n); do
        p=$t/nodes/$n/properties
        v() { sed -n "s/^$1 //p" "$p"; }
        [ "$(cat $t/nodes/$n/gpu_id)" = 0 ] && continue
        loc=$(v location_id) minor=$(v drm_render_minor)
        named="$named$minor "
        bdf=$(printf "%04x:%02x:%02x.0" "$(v domain)" $(( (loc >> 8) & 255 )) $(( (loc >> 3) & 31 )))
        echo "node $n $bdf p$((loc & 7)) renderD$minor $(basename "$(readlink -f /sys/class/drm/renderD$minor/device)") dev=$(v device_id) xcc=$(v num_xcc) simd=$(v simd_count) queues=$(v num_cp_queues) sdma=$(v num_sdma_xgmi_engines) links=$(v io_links_count) mem=$(sed -n "s/^size_in_bytes //p" $t/nodes/$n/mem_banks/0/properties)"
done
for bdf in 0000:05:00.0 0000:27:00.0 0000:85:00.0 0000:a7:00.0; do
        d=/sys/bus/pci/devices/$bdf
        echo "$bdf $(cat $d/current_compute_partition)/$(cat $d/current_memory_partition) available: $(cat $d/available_compute_partition) / $(cat $d/available_memory_partition)"
done
echo "XCP render nodes no KFD node names: $(for r in /sys/devices/platform/amdgpu_xcp_*/drm/renderD*; do m=${r##*renderD}; case "$named" in *" $m "*) ;; *) echo "$m" ;; esac; done | sort -n | tr "\n" " ")"
'
run "mi300x4-cpx kfd partitions" gpu-mi300x4-cpx bash -c "$part_table"
expect "gpu-mi300x4-cpx: 8 KFD nodes per GPU of 24 GiB (an NPS4 quarter, 2 on it), partitions 1-7 on amdgpu_xcp_*, every XCP named" "$tmp/out" <<'EOF'
generation_id 1
node 2 0000:05:00.0 p0 renderD128 0000:05:00.0 dev=29857 xcc=1 simd=152 queues=24 sdma=0 links=32 mem=25769803776
node 3 0000:05:00.0 p1 renderD129 amdgpu_xcp_0 dev=29857 xcc=1 simd=152 queues=24 sdma=0 links=32 mem=25769803776
node 4 0000:05:00.0 p2 renderD130 amdgpu_xcp_1 dev=29857 xcc=1 simd=152 queues=24 sdma=0 links=32 mem=25769803776
node 5 0000:05:00.0 p3 renderD131 amdgpu_xcp_2 dev=29857 xcc=1 simd=152 queues=24 sdma=0 links=32 mem=25769803776
node 6 0000:05:00.0 p4 renderD132 amdgpu_xcp_3 dev=29857 xcc=1 simd=152 queues=24 sdma=0 links=32 mem=25769803776
node 7 0000:05:00.0 p5 renderD133 amdgpu_xcp_4 dev=29857 xcc=1 simd=152 queues=24 sdma=0 links=32 mem=25769803776
node 8 0000:05:00.0 p6 renderD134 amdgpu_xcp_5 dev=29857 xcc=1 simd=152 queues=24 sdma=0 links=32 mem=25769803776
node 9 0000:05:00.0 p7 renderD135 amdgpu_xcp_6 dev=29857 xcc=1 simd=152 queues=24 sdma=0 links=32 mem=25769803776
node 10 0000:27:00.0 p0 renderD136 0000:27:00.0 dev=29857 xcc=1 simd=152 queues=24 sdma=0 links=32 mem=25769803776
node 11 0000:27:00.0 p1 renderD137 amdgpu_xcp_7 dev=29857 xcc=1 simd=152 queues=24 sdma=0 links=32 mem=25769803776
node 12 0000:27:00.0 p2 renderD138 amdgpu_xcp_8 dev=29857 xcc=1 simd=152 queues=24 sdma=0 links=32 mem=25769803776
node 13 0000:27:00.0 p3 renderD139 amdgpu_xcp_9 dev=29857 xcc=1 simd=152 queues=24 sdma=0 links=32 mem=25769803776
node 14 0000:27:00.0 p4 renderD140 amdgpu_xcp_10 dev=29857 xcc=1 simd=152 queues=24 sdma=0 links=32 mem=25769803776
node 15 0000:27:00.0 p5 renderD141 amdgpu_xcp_11 dev=29857 xcc=1 simd=152 queues=24 sdma=0 links=32 mem=25769803776
node 16 0000:27:00.0 p6 renderD142 amdgpu_xcp_12 dev=29857 xcc=1 simd=152 queues=24 sdma=0 links=32 mem=25769803776
node 17 0000:27:00.0 p7 renderD143 amdgpu_xcp_13 dev=29857 xcc=1 simd=152 queues=24 sdma=0 links=32 mem=25769803776
node 18 0000:85:00.0 p0 renderD144 0000:85:00.0 dev=29857 xcc=1 simd=152 queues=24 sdma=0 links=32 mem=25769803776
node 19 0000:85:00.0 p1 renderD145 amdgpu_xcp_14 dev=29857 xcc=1 simd=152 queues=24 sdma=0 links=32 mem=25769803776
node 20 0000:85:00.0 p2 renderD146 amdgpu_xcp_15 dev=29857 xcc=1 simd=152 queues=24 sdma=0 links=32 mem=25769803776
node 21 0000:85:00.0 p3 renderD147 amdgpu_xcp_16 dev=29857 xcc=1 simd=152 queues=24 sdma=0 links=32 mem=25769803776
node 22 0000:85:00.0 p4 renderD148 amdgpu_xcp_17 dev=29857 xcc=1 simd=152 queues=24 sdma=0 links=32 mem=25769803776
node 23 0000:85:00.0 p5 renderD149 amdgpu_xcp_18 dev=29857 xcc=1 simd=152 queues=24 sdma=0 links=32 mem=25769803776
node 24 0000:85:00.0 p6 renderD150 amdgpu_xcp_19 dev=29857 xcc=1 simd=152 queues=24 sdma=0 links=32 mem=25769803776
node 25 0000:85:00.0 p7 renderD151 amdgpu_xcp_20 dev=29857 xcc=1 simd=152 queues=24 sdma=0 links=32 mem=25769803776
node 26 0000:a7:00.0 p0 renderD152 0000:a7:00.0 dev=29857 xcc=1 simd=152 queues=24 sdma=0 links=32 mem=25769803776
node 27 0000:a7:00.0 p1 renderD153 amdgpu_xcp_21 dev=29857 xcc=1 simd=152 queues=24 sdma=0 links=32 mem=25769803776
node 28 0000:a7:00.0 p2 renderD154 amdgpu_xcp_22 dev=29857 xcc=1 simd=152 queues=24 sdma=0 links=32 mem=25769803776
node 29 0000:a7:00.0 p3 renderD155 amdgpu_xcp_23 dev=29857 xcc=1 simd=152 queues=24 sdma=0 links=32 mem=25769803776
node 30 0000:a7:00.0 p4 renderD156 amdgpu_xcp_24 dev=29857 xcc=1 simd=152 queues=24 sdma=0 links=32 mem=25769803776
node 31 0000:a7:00.0 p5 renderD157 amdgpu_xcp_25 dev=29857 xcc=1 simd=152 queues=24 sdma=0 links=32 mem=25769803776
node 32 0000:a7:00.0 p6 renderD158 amdgpu_xcp_26 dev=29857 xcc=1 simd=152 queues=24 sdma=0 links=32 mem=25769803776
node 33 0000:a7:00.0 p7 renderD159 amdgpu_xcp_27 dev=29857 xcc=1 simd=152 queues=24 sdma=0 links=32 mem=25769803776
0000:05:00.0 CPX/NPS4 available: QPX, CPX / NPS1, NPS4
0000:27:00.0 CPX/NPS4 available: QPX, CPX / NPS1, NPS4
0000:85:00.0 CPX/NPS4 available: QPX, CPX / NPS1, NPS4
0000:a7:00.0 CPX/NPS4 available: QPX, CPX / NPS1, NPS4
XCP render nodes no KFD node names: 
EOF

# the other modes: the node's PCI tree (the MI308X's GPUs are 1002:74a2), then its partitions
run "mi300x4-dpx" gpu-mi300x4-dpx bash -c "\"\$0\" discover; echo ----; $part_table" "$kdpctl"
{ echo "$mi300_pci"; echo ----; cat; } > "$tmp/want" <<'EOF'
generation_id 1
node 2 0000:05:00.0 p0 renderD128 0000:05:00.0 dev=29857 xcc=4 simd=608 queues=96 sdma=6 links=8 mem=103079215104
node 3 0000:05:00.0 p1 renderD129 amdgpu_xcp_0 dev=29857 xcc=4 simd=608 queues=96 sdma=6 links=8 mem=103079215104
node 4 0000:27:00.0 p0 renderD136 0000:27:00.0 dev=29857 xcc=4 simd=608 queues=96 sdma=6 links=8 mem=103079215104
node 5 0000:27:00.0 p1 renderD137 amdgpu_xcp_7 dev=29857 xcc=4 simd=608 queues=96 sdma=6 links=8 mem=103079215104
node 6 0000:85:00.0 p0 renderD144 0000:85:00.0 dev=29857 xcc=4 simd=608 queues=96 sdma=6 links=8 mem=103079215104
node 7 0000:85:00.0 p1 renderD145 amdgpu_xcp_14 dev=29857 xcc=4 simd=608 queues=96 sdma=6 links=8 mem=103079215104
node 8 0000:a7:00.0 p0 renderD152 0000:a7:00.0 dev=29857 xcc=4 simd=608 queues=96 sdma=6 links=8 mem=103079215104
node 9 0000:a7:00.0 p1 renderD153 amdgpu_xcp_21 dev=29857 xcc=4 simd=608 queues=96 sdma=6 links=8 mem=103079215104
0000:05:00.0 DPX/NPS1 available: SPX, DPX, QPX, CPX / NPS1, NPS4
0000:27:00.0 DPX/NPS1 available: SPX, DPX, QPX, CPX / NPS1, NPS4
0000:85:00.0 DPX/NPS1 available: SPX, DPX, QPX, CPX / NPS1, NPS4
0000:a7:00.0 DPX/NPS1 available: SPX, DPX, QPX, CPX / NPS1, NPS4
XCP render nodes no KFD node names: 130 131 132 133 134 135 138 139 140 141 142 143 146 147 148 149 150 151 154 155 156 157 158 159 
EOF
expect "gpu-mi300x4-dpx: DPX/NPS1, 2 KFD nodes per GPU of 4 XCCs and 96 GiB, 6 XCPs a GPU unnamed" "$tmp/out" < "$tmp/want"

run "mi300x4-qpx" gpu-mi300x4-qpx bash -c "\"\$0\" discover; echo ----; $part_table" "$kdpctl"
{ echo "$mi300_pci"; echo ----; cat; } > "$tmp/want" <<'EOF'
generation_id 1
node 2 0000:05:00.0 p0 renderD128 0000:05:00.0 dev=29857 xcc=2 simd=304 queues=48 sdma=2 links=16 mem=51539607552
node 3 0000:05:00.0 p1 renderD129 amdgpu_xcp_0 dev=29857 xcc=2 simd=304 queues=48 sdma=2 links=16 mem=51539607552
node 4 0000:05:00.0 p2 renderD130 amdgpu_xcp_1 dev=29857 xcc=2 simd=304 queues=48 sdma=2 links=16 mem=51539607552
node 5 0000:05:00.0 p3 renderD131 amdgpu_xcp_2 dev=29857 xcc=2 simd=304 queues=48 sdma=2 links=16 mem=51539607552
node 6 0000:27:00.0 p0 renderD136 0000:27:00.0 dev=29857 xcc=2 simd=304 queues=48 sdma=2 links=16 mem=51539607552
node 7 0000:27:00.0 p1 renderD137 amdgpu_xcp_7 dev=29857 xcc=2 simd=304 queues=48 sdma=2 links=16 mem=51539607552
node 8 0000:27:00.0 p2 renderD138 amdgpu_xcp_8 dev=29857 xcc=2 simd=304 queues=48 sdma=2 links=16 mem=51539607552
node 9 0000:27:00.0 p3 renderD139 amdgpu_xcp_9 dev=29857 xcc=2 simd=304 queues=48 sdma=2 links=16 mem=51539607552
node 10 0000:85:00.0 p0 renderD144 0000:85:00.0 dev=29857 xcc=2 simd=304 queues=48 sdma=2 links=16 mem=51539607552
node 11 0000:85:00.0 p1 renderD145 amdgpu_xcp_14 dev=29857 xcc=2 simd=304 queues=48 sdma=2 links=16 mem=51539607552
node 12 0000:85:00.0 p2 renderD146 amdgpu_xcp_15 dev=29857 xcc=2 simd=304 queues=48 sdma=2 links=16 mem=51539607552
node 13 0000:85:00.0 p3 renderD147 amdgpu_xcp_16 dev=29857 xcc=2 simd=304 queues=48 sdma=2 links=16 mem=51539607552
node 14 0000:a7:00.0 p0 renderD152 0000:a7:00.0 dev=29857 xcc=2 simd=304 queues=48 sdma=2 links=16 mem=51539607552
node 15 0000:a7:00.0 p1 renderD153 amdgpu_xcp_21 dev=29857 xcc=2 simd=304 queues=48 sdma=2 links=16 mem=51539607552
node 16 0000:a7:00.0 p2 renderD154 amdgpu_xcp_22 dev=29857 xcc=2 simd=304 queues=48 sdma=2 links=16 mem=51539607552
node 17 0000:a7:00.0 p3 renderD155 amdgpu_xcp_23 dev=29857 xcc=2 simd=304 queues=48 sdma=2 links=16 mem=51539607552
0000:05:00.0 QPX/NPS4 available: QPX, CPX / NPS1, NPS4
0000:27:00.0 QPX/NPS4 available: QPX, CPX / NPS1, NPS4
0000:85:00.0 QPX/NPS4 available: QPX, CPX / NPS1, NPS4
0000:a7:00.0 QPX/NPS4 available: QPX, CPX / NPS1, NPS4
XCP render nodes no KFD node names: 132 133 134 135 140 141 142 143 148 149 150 151 156 157 158 159 
EOF
expect "gpu-mi300x4-qpx: QPX/NPS4, 4 KFD nodes per GPU of 2 XCCs and 48 GiB, 4 XCPs a GPU unnamed" "$tmp/out" < "$tmp/want"

run "mi308x4-cpx" gpu-mi308x4-cpx bash -c "\"\$0\" discover; echo ----; $part_table" "$kdpctl"
{ echo "${mi300_pci//1002:74a1/1002:74a2}"; echo ----; cat; } > "$tmp/want" <<'EOF'
generation_id 1
node 2 0000:05:00.0 p0 renderD128 0000:05:00.0 dev=29858 xcc=1 simd=80 queues=24 sdma=0 links=16 mem=51539607552
node 3 0000:05:00.0 p1 renderD129 amdgpu_xcp_0 dev=29858 xcc=1 simd=80 queues=24 sdma=0 links=16 mem=51539607552
node 4 0000:05:00.0 p2 renderD130 amdgpu_xcp_1 dev=29858 xcc=1 simd=80 queues=24 sdma=0 links=16 mem=51539607552
node 5 0000:05:00.0 p3 renderD131 amdgpu_xcp_2 dev=29858 xcc=1 simd=80 queues=24 sdma=0 links=16 mem=51539607552
node 6 0000:27:00.0 p0 renderD136 0000:27:00.0 dev=29858 xcc=1 simd=80 queues=24 sdma=0 links=16 mem=51539607552
node 7 0000:27:00.0 p1 renderD137 amdgpu_xcp_7 dev=29858 xcc=1 simd=80 queues=24 sdma=0 links=16 mem=51539607552
node 8 0000:27:00.0 p2 renderD138 amdgpu_xcp_8 dev=29858 xcc=1 simd=80 queues=24 sdma=0 links=16 mem=51539607552
node 9 0000:27:00.0 p3 renderD139 amdgpu_xcp_9 dev=29858 xcc=1 simd=80 queues=24 sdma=0 links=16 mem=51539607552
node 10 0000:85:00.0 p0 renderD144 0000:85:00.0 dev=29858 xcc=1 simd=80 queues=24 sdma=0 links=16 mem=51539607552
node 11 0000:85:00.0 p1 renderD145 amdgpu_xcp_14 dev=29858 xcc=1 simd=80 queues=24 sdma=0 links=16 mem=51539607552
node 12 0000:85:00.0 p2 renderD146 amdgpu_xcp_15 dev=29858 xcc=1 simd=80 queues=24 sdma=0 links=16 mem=51539607552
node 13 0000:85:00.0 p3 renderD147 amdgpu_xcp_16 dev=29858 xcc=1 simd=80 queues=24 sdma=0 links=16 mem=51539607552
node 14 0000:a7:00.0 p0 renderD152 0000:a7:00.0 dev=29858 xcc=1 simd=80 queues=24 sdma=0 links=16 mem=51539607552
node 15 0000:a7:00.0 p1 renderD153 amdgpu_xcp_21 dev=29858 xcc=1 simd=80 queues=24 sdma=0 links=16 mem=51539607552
node 16 0000:a7:00.0 p2 renderD154 amdgpu_xcp_22 dev=29858 xcc=1 simd=80 queues=24 sdma=0 links=16 mem=51539607552
node 17 0000:a7:00.0 p3 renderD155 amdgpu_xcp_23 dev=29858 xcc=1 simd=80 queues=24 sdma=0 links=16 mem=51539607552
0000:05:00.0 CPX/NPS4 available: CPX / NPS1, NPS4
0000:27:00.0 CPX/NPS4 available: CPX / NPS1, NPS4
0000:85:00.0 CPX/NPS4 available: CPX / NPS1, NPS4
0000:a7:00.0 CPX/NPS4 available: CPX / NPS1, NPS4
XCP render nodes no KFD node names: 132 133 134 135 140 141 142 143 148 149 150 151 156 157 158 159 
EOF
expect "gpu-mi308x4-cpx: 4 MI308X (1002:74a2) in CPX/NPS4, 4 KFD nodes per GPU of 1 XCC, 4 XCPs a GPU unnamed" "$tmp/out" < "$tmp/want"

# ---------------------------------------------------------------------------------------------
# Intel: the DRM minors of each PCI function, by-path links, tiles and GTs per driver

intel_table='
for d in /sys/bus/pci/devices/*; do
        [ "$(cat $d/vendor)" = 0x8086 ] && [ "$(cat $d/class)" = 0x038000 ] || continue
        bdf=${d##*/}; drv=$(basename "$(readlink $d/driver)")
        card=$(ls $d/drm | grep "^card"); render=$(ls $d/drm | grep "^renderD")
        tiles=$(ls -d $d/tile?/gt* /sys/class/drm/$card/gt/gt* 2>/dev/null | sed "s|.*/\(tile[0-9]*/gt[0-9]*\)$|\1|; s|.*/\(gt/gt[0-9]*\)$|card/\1|" | tr "\n" " ")
        echo "$bdf driver=$drv numa=$(cat $d/numa_node) $card $(stat -c %t:%T /dev/dri/$card) $render $(stat -c %t:%T /dev/dri/$render) by-path=$(readlink /dev/dri/by-path/pci-$bdf-card),$(readlink /dev/dri/by-path/pci-$bdf-render) vfs=$(cat $d/sriov_numvfs)/$(cat $d/sriov_totalvfs) gts: $tiles"
done
echo "bmc: $(ls /sys/bus/pci/devices/0000:02:00.0/drm | tr "\n" " ")boot_vga=$(cat /sys/bus/pci/devices/0000:02:00.0/boot_vga) /dev/dri: $(ls /dev/dri | tr "\n" " ")"
'
run "flex170x2 table" gpu-flex170x2 bash -c "$intel_table"
expect "gpu-flex170x2: card/render per GPU (stat numbers in hex), by-path links, i915 GTs" "$tmp/out" <<'EOF'
0000:4d:00.0 driver=i915 numa=0 card1 e2:1 renderD128 e2:80 by-path=../card1,../renderD128 vfs=0/31 gts: card/gt/gt0 
0000:ca:00.0 driver=i915 numa=1 card2 e2:2 renderD129 e2:81 by-path=../card2,../renderD129 vfs=0/31 gts: card/gt/gt0 
bmc: card0 boot_vga=1 /dev/dri: by-path card0 card1 card2 renderD128 renderD129 
EOF
run "mixed intel table" gpu-mixed bash -c "$intel_table"
expect "gpu-mixed: the Flex 170 on xe has tile0/gt0 under the PCI device" "$tmp/out" <<'EOF'
0000:da:00.0 driver=xe numa=1 card1 e2:1 renderD128 e2:80 by-path=../card1,../renderD128 vfs=0/31 gts: tile0/gt0 
bmc: card0 boot_vga=1 /dev/dri: by-path card0 card1 renderD128 
EOF

# ---------------------------------------------------------------------------------------------
# gpu-h100x8-fall-off-bus.script: its uevents, kernel log and procfs changes, in order. The
# script goes to sim-node's control FIFO in two halves split at its pause, the second half only
# once the gone state is checked; its waits get a deadline of 60 s.

script=$nodes/gpu-h100x8-fall-off-bus.script
[ "$(grep -c '^sleep [0-9]*$' "$script")" = 1 ] || fail "the script has no single pause to split at"
long_waits='s/^wait$/wait 60000/; s/^wait-listeners$/wait-listeners 1 60000/'
sed -n '/^sleep [0-9]*$/q; p' "$script" | sed "$long_waits" > "$tmp/fall.1"
sed '1,/^sleep [0-9]*$/d' "$script" | sed "$long_waits" > "$tmp/fall.2"
info=$nodes/gpu-h100x8.files/proc/driver/nvidia/gpus/0000:3a:00.0/information
uuid=$(sed -n 's/^GPU UUID: \t //p' "$info")
printf '%s\n' "4,8811,91234567890,c;NVRM: GPU at PCI:0000:3a:00: $uuid" \
        '4,8812,91234570700,c;NVRM: Xid (PCI:0000:3a:00): 79, pid=0, GPU has fallen off the bus.' \
        '4,8813,91234570701,c;NVRM: GPU 0000:3a:00.0: GPU has fallen off the bus.' > "$tmp/kmsg.want"
mkfifo "$tmp/req" "$tmp/ctl"
exec 3<>"$tmp/ctl" 4<>"$tmp/req"
"${DIE_WITH_US[@]}" "$simnode" "$nodes/gpu-h100x8.umockdev" --control "$tmp/ctl" -- \
        bash -c '"$0" kmsg "$1" > "$2" & exec "$0" monitor udev < "$3" > "$4"' \
        "$check" "$(wc -c < "$tmp/kmsg.want")" "$tmp/kmsg" "$tmp/req" "$tmp/events" \
        > "$tmp/simout" 2> "$tmp/simerr" 3>&- 4>&- &
sim_pid=$!
cat "$tmp/fall.1" >&3
G2=/devices/pci0000:37/0000:37:01.0/0000:38:00.0/0000:39:00.0/0000:3a:00.0
requests="file $P/gpus
file $P/gpus/0000:3a:00.0/information
file /dev/nvidia2
check /sys$G2
count"
wait_text "$tmp/simout" '^gone$'
printf '%s\nmark gone\n' "$requests" >&4
wait_text "$tmp/events" '^mark gone$'
cat "$tmp/fall.2" >&3
wait_text "$tmp/simout" '^back$'
printf '%s\nmark back\n' "$requests" >&4
wait_text "$tmp/events" '^mark back$'
exec 4>&-
wait "$sim_pid"
rc=$?
sim_pid=
exec 3>&-
back=$(sed 's/\\/\\\\/g; s/\t/\\t/g' "$info" | tr '\n' '\001' | sed 's/\x01/\\n/g')
expect "fall-off-bus: unbind+remove, proc entry gone, /dev/nvidia2 stays; then add+bind, entry back" "$tmp/events" <<EOF
ready udev
event unbind pci $G2 DRIVER=-
event remove pci $G2 DRIVER=-
file $P/gpus dir: 0000:18:00.0 0000:19:00.0 0000:3b:00.0 0000:9a:00.0 0000:9b:00.0 0000:ba:00.0 0000:bb:00.0
file $P/gpus/0000:3a:00.0/information missing
file /dev/nvidia2 char 195:2
check /sys$G2 exists=0 link=0 driver=- DRIVER=- enable=-
count udev-pci=34 libpci=34
mark gone
event add pci $G2 DRIVER=-
event bind pci $G2 DRIVER=nvidia
file $P/gpus dir: 0000:18:00.0 0000:19:00.0 0000:3a:00.0 0000:3b:00.0 0000:9a:00.0 0000:9b:00.0 0000:ba:00.0 0000:bb:00.0
file $P/gpus/0000:3a:00.0/information text=$back
file /dev/nvidia2 char 195:2
check /sys$G2 exists=1 link=1 driver=nvidia DRIVER=nvidia enable=1
count udev-pci=35 libpci=35
mark back
EOF
printf 'kmsg text=%s\n' "$(sed 's/\\/\\\\/g' "$tmp/kmsg.want" | tr '\n' '\001' | sed 's/\x01/\\n/g')" > "$tmp/kmsg.text"
expect "fall-off-bus: the three NVRM records arrive on /dev/kmsg as the script writes them" "$tmp/kmsg" < "$tmp/kmsg.text"
[ $rc = 0 ] && [ ! -s "$tmp/simerr" ] && ok "fall-off-bus: sim-node exits 0, nothing on stderr" ||
        fail "fall-off-bus: rc=$rc $(cat "$tmp/simerr")"

if [ $failures -gt 0 ]; then
        echo "$failures check(s) failed"
        exit 1
fi
echo "all checks passed"
