#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# sim-node/sriov-fixtures: the SR-IOV nodes of tests/fixtures/nodes/ (sriov-*.umockdev) as a
# backend sees them under sim-node, and their event scripts end to end. For each node: the PCI
# tree (kdpctl discover), then plain reads a backend makes (readlink of virtfn<N>/physfn/driver/
# iommu_group, cat of the sriov_* files, ls of net/ and /dev/vfio, stat of the /dev nodes, the
# RDMA class devices joined to their PCI function) with exact values: VF addresses per PF,
# drivers, iommu groups and vfio nodes, NUMA nodes, netdevs, RDMA devices and their char
# devices, switchdev uplink and representors, IPoIB netdevs and InfiniBand ports (pkeys), vDPA
# devices with their vhost-vdpa nodes or virtio devices. For each script: the exact uevents between its
# "echo" marks, what sysfs and /dev show at each mark, and the end state (kdpctl discover).
# The tables are the ones tests/fixtures/README.md gives. Exit 77 = skipped.
# ok() never fails, so "[ ... ] && ok ... || fail ..." is an if-then-else; the single-quoted
# bash -c scripts expand their $0 $1 ... in the child, as intended.
# shellcheck disable=SC2015,SC2016
set -u

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "${KDP_BUILD_DIR:-$(dirname "${BASH_SOURCE[0]}")/../../build}/kdpctl"
kdpctl=$build/kdpctl

# The plain reads, one line per fact: PFs with their sriov_* files and virtfn<N> links, VFs with
# physfn, driver, group and vfio node, netdevs (carrier "-" when the read fails: admin down),
# RDMA devices with their char devices ("!" if one's device link is not the function), iommu
# groups, the host-wide nodes, the drivers' directories and the NUMA nodes. Every modalias must
# have the kernel's shape and agree with vendor and device (ghw drops the whole list otherwise).
table='
mod_re="^pci:v[0-9A-F]{8}d[0-9A-F]{8}sv[0-9A-F]{8}sd[0-9A-F]{8}bc[0-9A-F]{2}sc[0-9A-F]{2}i[0-9A-F]{2}$"
n=0; good=0
for d in /sys/bus/pci/devices/*; do
        n=$((n + 1)); m=$(cat $d/modalias); v=$(cat $d/vendor); p=$(cat $d/device)
        [[ $m =~ $mod_re ]] && [ "${m:5:8}" = "$(printf %08X $v)" ] && [ "${m:14:8}" = "$(printf %08X $p)" ] && good=$((good + 1))
done
echo "modalias: $good of $n PCI functions"
lnk() { if [ -L "$1" ]; then basename "$(readlink "$1")"; else echo -; fi; }
rd() { cat "$1" 2>/dev/null || echo -; }
for d in /sys/bus/pci/devices/*; do
        bdf=${d##*/}; grp=$(lnk $d/iommu_group); net=$(ls $d/net 2>/dev/null | paste -sd,)
        if [ -e $d/sriov_numvfs ]; then
                vfs=; for ((i = 0; i < $(cat $d/sriov_numvfs); i++)); do vfs+=" $(lnk $d/virtfn$i)"; done
                echo "pf $bdf $(cat $d/vendor):$(cat $d/device) driver=$(lnk $d/driver) numa=$(cat $d/numa_node) group=$grp acpi_index=$(rd $d/acpi_index) vfs=$(cat $d/sriov_numvfs)/$(cat $d/sriov_totalvfs) offset=$(cat $d/sriov_offset) stride=$(cat $d/sriov_stride) vf_device=$(cat $d/sriov_vf_device) autoprobe=$(cat $d/sriov_drivers_autoprobe) msix=$(cat $d/sriov_vf_total_msix) virtfn:$vfs"
        elif [ -L $d/physfn ]; then
                dev=-; [ -e /dev/vfio/$grp ] && dev=$(stat -c %t:%T /dev/vfio/$grp)
                [ -e /dev/vfio/noiommu-$grp ] && dev=noiommu:$(stat -c %t:%T /dev/vfio/noiommu-$grp)
                echo "vf $bdf $(cat $d/vendor):$(cat $d/device) physfn=$(lnk $d/physfn) driver=$(lnk $d/driver) numa=$(cat $d/numa_node) group=$grp vfio=$dev net=${net:--}"
        fi
        for i in ${net//,/ }; do
                c=/sys/class/net/$i
                echo "  net $i device=$(lnk $c/device) type=$(cat $c/type) operstate=$(cat $c/operstate) carrier=$(rd $c/carrier) ifindex=$(cat $c/ifindex) address=$(cat $c/address) port=$(rd $c/phys_port_name) switch=$(rd $c/phys_switch_id)"
                [ -e $c/pkey ] && echo "    ipoib pkey=$(cat $c/pkey) mode=$(cat $c/mode) mtu=$(cat $c/mtu) addr_len=$(cat $c/addr_len) broadcast=$(cat $c/broadcast)"
        done
        for ib in $(ls $d/infiniband 2>/dev/null); do
                c=/sys/class/infiniband/$ib; p=$c/ports/1
                [ -L $c ] && kind=link || kind=not-a-link
                chars=; for cd in /sys/class/infiniband_verbs/* /sys/class/infiniband_mad/*; do
                        [ "$(cat $cd/ibdev)" = $ib ] && chars+=" ${cd##*/}=$(stat -c %t:%T /dev/infiniband/${cd##*/})$([ "$(lnk $cd/device)" = $bdf ] || echo "!")"
                done
                echo "  rdma $ib class=$kind device=$(lnk $c/device) state=$(cat $p/state) phys=$(cat $p/phys_state) layer=$(cat $p/link_layer) ndev=$(rd $p/gid_attrs/ndevs/0) guid=$(cat $c/node_guid)$chars"
                [ "$(cat $p/link_layer)" = InfiniBand ] && echo "    ib lid=$(cat $p/lid) sm_lid=$(cat $p/sm_lid) rate=$(cat $p/rate) pkeys=$(for k in $(ls $p/pkeys | sort -n); do printf %s, "$(cat $p/pkeys/$k)"; done)"
        done
        for v in $(ls -d $d/vdpa* 2>/dev/null); do
                vh=$(ls -d $v/vhost-vdpa-* 2>/dev/null); vh=${vh##*/}
                echo "  vdpa ${v##*/} bus=$(lnk /sys/bus/vdpa/devices/${v##*/}) driver=$(lnk $v/driver) override=$(cat $v/driver_override) vhost=${vh:--}$([ -n "$vh" ] && echo " dev=$(cat $v/$vh/dev) node=$(stat -c %t:%T /dev/$vh)")"
        done
        for v in $(ls -d $d/virtio* 2>/dev/null); do
                echo "  virtio ${v##*/} driver=$(lnk $v/driver) device=$(cat $v/device) vendor=$(cat $v/vendor) modalias=$(cat $v/modalias) net=$(ls $v/net | paste -sd,)"
        done
done
for g in $(ls /sys/kernel/iommu_groups | sort -n); do
        echo "group $g: $(ls /sys/kernel/iommu_groups/$g/devices | paste -sd" ") name=$(rd /sys/kernel/iommu_groups/$g/name)"
done
echo "/dev/vfio: $(ls /dev/vfio | paste -sd" ")"
for n in /dev/vfio/vfio /dev/vhost-net /dev/net/tun /dev/infiniband/rdma_cm; do [ -e $n ] && echo "$n $(stat -c %t:%T $n)"; done
echo "drivers: $(ls /sys/bus/pci/drivers | paste -sd" ")"
echo "numa: $(ls -d /sys/devices/system/node/node* | sed "s|.*/||" | paste -sd" ") online=$(cat /sys/devices/system/node/online)"
'

# ---------------------------------------------------------------------------------------------
# The nodes at load: the PCI tree, then the plain reads

run "sriov-e810 discover" sriov-e810 "$kdpctl" discover
expect "sriov-e810: 2 E810 PFs × 8 VFs: VFs beside their PF under the root port, iavf and vfio-pci" "$tmp/out" <<'EOF'
ADDRESS         ID         CLASS   DRIVER    NUMA  IOMMU  SRIOV
0000:89:02.0    8086:352a  060400  pcieport  1     89
  0000:8a:00.0  8086:1593  020000  ice       1     90     vfs=8/128
  0000:8a:00.1  8086:1593  020000  ice       1     90     vfs=8/128
  0000:8a:01.0  8086:1889  020000  iavf      1     100    pf=0000:8a:00.0
  0000:8a:01.1  8086:1889  020000  iavf      1     101    pf=0000:8a:00.0
  0000:8a:01.2  8086:1889  020000  iavf      1     102    pf=0000:8a:00.0
  0000:8a:01.3  8086:1889  020000  iavf      1     103    pf=0000:8a:00.0
  0000:8a:01.4  8086:1889  020000  iavf      1     104    pf=0000:8a:00.0
  0000:8a:01.5  8086:1889  020000  iavf      1     105    pf=0000:8a:00.0
  0000:8a:01.6  8086:1889  020000  vfio-pci  1     106    pf=0000:8a:00.0
  0000:8a:01.7  8086:1889  020000  vfio-pci  1     107    pf=0000:8a:00.0
  0000:8a:05.0  8086:1889  020000  iavf      1     110    pf=0000:8a:00.1
  0000:8a:05.1  8086:1889  020000  iavf      1     111    pf=0000:8a:00.1
  0000:8a:05.2  8086:1889  020000  iavf      1     112    pf=0000:8a:00.1
  0000:8a:05.3  8086:1889  020000  iavf      1     113    pf=0000:8a:00.1
  0000:8a:05.4  8086:1889  020000  vfio-pci  1     114    pf=0000:8a:00.1
  0000:8a:05.5  8086:1889  020000  vfio-pci  1     115    pf=0000:8a:00.1
  0000:8a:05.6  8086:1889  020000  vfio-pci  1     116    pf=0000:8a:00.1
  0000:8a:05.7  8086:1889  020000  vfio-pci  1     117    pf=0000:8a:00.1
EOF
cp "$tmp/out" "$tmp/e810.load"

run "sriov-noiommu discover" sriov-noiommu "$kdpctl" discover
expect "sriov-noiommu: one E810 PF × 8 VFs, no IOMMU: only the vfio-pci VFs are in groups" "$tmp/out" <<'EOF'
ADDRESS         ID         CLASS   DRIVER    NUMA  IOMMU  SRIOV
0000:89:02.0    8086:352a  060400  pcieport  1     -
  0000:8a:00.0  8086:1593  020000  ice       1     -      vfs=8/128
  0000:8a:01.0  8086:1889  020000  iavf      1     -      pf=0000:8a:00.0
  0000:8a:01.1  8086:1889  020000  iavf      1     -      pf=0000:8a:00.0
  0000:8a:01.2  8086:1889  020000  iavf      1     -      pf=0000:8a:00.0
  0000:8a:01.3  8086:1889  020000  iavf      1     -      pf=0000:8a:00.0
  0000:8a:01.4  8086:1889  020000  iavf      1     -      pf=0000:8a:00.0
  0000:8a:01.5  8086:1889  020000  iavf      1     -      pf=0000:8a:00.0
  0000:8a:01.6  8086:1889  020000  vfio-pci  1     106    pf=0000:8a:00.0
  0000:8a:01.7  8086:1889  020000  vfio-pci  1     107    pf=0000:8a:00.0
EOF

run "sriov-cx6dx discover" sriov-cx6dx "$kdpctl" discover
expect "sriov-cx6dx: 2 ConnectX-6 Dx PFs × 4 VFs on mlx5_core, PF1's VFs 4-7 held back" "$tmp/out" <<'EOF'
ADDRESS         ID         CLASS   DRIVER     NUMA  IOMMU  SRIOV
0000:3a:02.0    8086:352a  060400  pcieport   0     40
  0000:3b:00.0  15b3:101d  020000  mlx5_core  0     41     vfs=4/8
  0000:3b:00.1  15b3:101d  020000  mlx5_core  0     42     vfs=4/8
  0000:3b:00.2  15b3:101e  020000  mlx5_core  0     50     pf=0000:3b:00.0
  0000:3b:00.3  15b3:101e  020000  mlx5_core  0     51     pf=0000:3b:00.0
  0000:3b:00.4  15b3:101e  020000  mlx5_core  0     52     pf=0000:3b:00.0
  0000:3b:00.5  15b3:101e  020000  mlx5_core  0     53     pf=0000:3b:00.0
  0000:3b:01.2  15b3:101e  020000  mlx5_core  0     60     pf=0000:3b:00.1
  0000:3b:01.3  15b3:101e  020000  mlx5_core  0     61     pf=0000:3b:00.1
  0000:3b:01.4  15b3:101e  020000  mlx5_core  0     62     pf=0000:3b:00.1
  0000:3b:01.5  15b3:101e  020000  mlx5_core  0     63     pf=0000:3b:00.1
EOF

run "e810 table" sriov-e810 bash -c "$table"
expect "sriov-e810: virtfn/physfn, drivers, groups (PFs share 90), /dev/vfio for vfio-pci VFs only, netdevs, NUMA 1" "$tmp/out" <<'EOT'
modalias: 19 of 19 PCI functions
pf 0000:8a:00.0 0x8086:0x1593 driver=ice numa=1 group=90 acpi_index=3 vfs=8/128 offset=8 stride=1 vf_device=1889 autoprobe=1 msix=1024 virtfn: 0000:8a:01.0 0000:8a:01.1 0000:8a:01.2 0000:8a:01.3 0000:8a:01.4 0000:8a:01.5 0000:8a:01.6 0000:8a:01.7
  net ens3f0np0 device=0000:8a:00.0 type=1 operstate=up carrier=1 ifindex=4 address=b4:96:91:a5:c8:40 port=p0 switch=-
pf 0000:8a:00.1 0x8086:0x1593 driver=ice numa=1 group=90 acpi_index=- vfs=8/128 offset=39 stride=1 vf_device=1889 autoprobe=1 msix=1024 virtfn: 0000:8a:05.0 0000:8a:05.1 0000:8a:05.2 0000:8a:05.3 0000:8a:05.4 0000:8a:05.5 0000:8a:05.6 0000:8a:05.7
  net ens3f1np1 device=0000:8a:00.1 type=1 operstate=up carrier=1 ifindex=5 address=b4:96:91:a5:c8:41 port=p1 switch=-
vf 0000:8a:01.0 0x8086:0x1889 physfn=0000:8a:00.0 driver=iavf numa=1 group=100 vfio=- net=ens3f0v0
  net ens3f0v0 device=0000:8a:01.0 type=1 operstate=up carrier=1 ifindex=10 address=02:e8:10:8a:00:00 port=- switch=-
vf 0000:8a:01.1 0x8086:0x1889 physfn=0000:8a:00.0 driver=iavf numa=1 group=101 vfio=- net=ens3f0v1
  net ens3f0v1 device=0000:8a:01.1 type=1 operstate=up carrier=1 ifindex=11 address=02:e8:10:8a:00:01 port=- switch=-
vf 0000:8a:01.2 0x8086:0x1889 physfn=0000:8a:00.0 driver=iavf numa=1 group=102 vfio=- net=ens3f0v2
  net ens3f0v2 device=0000:8a:01.2 type=1 operstate=up carrier=1 ifindex=12 address=02:e8:10:8a:00:02 port=- switch=-
vf 0000:8a:01.3 0x8086:0x1889 physfn=0000:8a:00.0 driver=iavf numa=1 group=103 vfio=- net=ens3f0v3
  net ens3f0v3 device=0000:8a:01.3 type=1 operstate=up carrier=1 ifindex=13 address=02:e8:10:8a:00:03 port=- switch=-
vf 0000:8a:01.4 0x8086:0x1889 physfn=0000:8a:00.0 driver=iavf numa=1 group=104 vfio=- net=ens3f0v4
  net ens3f0v4 device=0000:8a:01.4 type=1 operstate=up carrier=1 ifindex=14 address=02:e8:10:8a:00:04 port=- switch=-
vf 0000:8a:01.5 0x8086:0x1889 physfn=0000:8a:00.0 driver=iavf numa=1 group=105 vfio=- net=ens3f0v5
  net ens3f0v5 device=0000:8a:01.5 type=1 operstate=up carrier=1 ifindex=15 address=02:e8:10:8a:00:05 port=- switch=-
vf 0000:8a:01.6 0x8086:0x1889 physfn=0000:8a:00.0 driver=vfio-pci numa=1 group=106 vfio=ec:6 net=-
vf 0000:8a:01.7 0x8086:0x1889 physfn=0000:8a:00.0 driver=vfio-pci numa=1 group=107 vfio=ec:7 net=-
vf 0000:8a:05.0 0x8086:0x1889 physfn=0000:8a:00.1 driver=iavf numa=1 group=110 vfio=- net=ens3f1v0
  net ens3f1v0 device=0000:8a:05.0 type=1 operstate=up carrier=1 ifindex=20 address=02:e8:10:8a:01:00 port=- switch=-
vf 0000:8a:05.1 0x8086:0x1889 physfn=0000:8a:00.1 driver=iavf numa=1 group=111 vfio=- net=ens3f1v1
  net ens3f1v1 device=0000:8a:05.1 type=1 operstate=up carrier=1 ifindex=21 address=02:e8:10:8a:01:01 port=- switch=-
vf 0000:8a:05.2 0x8086:0x1889 physfn=0000:8a:00.1 driver=iavf numa=1 group=112 vfio=- net=ens3f1v2
  net ens3f1v2 device=0000:8a:05.2 type=1 operstate=up carrier=1 ifindex=22 address=02:e8:10:8a:01:02 port=- switch=-
vf 0000:8a:05.3 0x8086:0x1889 physfn=0000:8a:00.1 driver=iavf numa=1 group=113 vfio=- net=ens3f1v3
  net ens3f1v3 device=0000:8a:05.3 type=1 operstate=down carrier=- ifindex=23 address=02:e8:10:8a:01:03 port=- switch=-
vf 0000:8a:05.4 0x8086:0x1889 physfn=0000:8a:00.1 driver=vfio-pci numa=1 group=114 vfio=ec:c net=-
vf 0000:8a:05.5 0x8086:0x1889 physfn=0000:8a:00.1 driver=vfio-pci numa=1 group=115 vfio=ec:d net=-
vf 0000:8a:05.6 0x8086:0x1889 physfn=0000:8a:00.1 driver=vfio-pci numa=1 group=116 vfio=ec:e net=-
vf 0000:8a:05.7 0x8086:0x1889 physfn=0000:8a:00.1 driver=vfio-pci numa=1 group=117 vfio=ec:f net=-
group 89: 0000:89:02.0 name=-
group 90: 0000:8a:00.0 0000:8a:00.1 name=-
group 100: 0000:8a:01.0 name=-
group 101: 0000:8a:01.1 name=-
group 102: 0000:8a:01.2 name=-
group 103: 0000:8a:01.3 name=-
group 104: 0000:8a:01.4 name=-
group 105: 0000:8a:01.5 name=-
group 106: 0000:8a:01.6 name=-
group 107: 0000:8a:01.7 name=-
group 110: 0000:8a:05.0 name=-
group 111: 0000:8a:05.1 name=-
group 112: 0000:8a:05.2 name=-
group 113: 0000:8a:05.3 name=-
group 114: 0000:8a:05.4 name=-
group 115: 0000:8a:05.5 name=-
group 116: 0000:8a:05.6 name=-
group 117: 0000:8a:05.7 name=-
/dev/vfio: 106 107 114 115 116 117 vfio
/dev/vfio/vfio a:c4
/dev/vhost-net a:ee
/dev/net/tun a:c8
drivers: iavf ice pcieport vfio-pci
numa: node0 node1 online=0-1
EOT

run "noiommu table" sriov-noiommu bash -c "$table"
expect "sriov-noiommu: groups vfio-noiommu only for the vfio-pci VFs, /dev/vfio/noiommu-<N>" "$tmp/out" <<'EOT'
modalias: 10 of 10 PCI functions
pf 0000:8a:00.0 0x8086:0x1593 driver=ice numa=1 group=- acpi_index=3 vfs=8/128 offset=8 stride=1 vf_device=1889 autoprobe=1 msix=1024 virtfn: 0000:8a:01.0 0000:8a:01.1 0000:8a:01.2 0000:8a:01.3 0000:8a:01.4 0000:8a:01.5 0000:8a:01.6 0000:8a:01.7
  net ens3f0np0 device=0000:8a:00.0 type=1 operstate=up carrier=1 ifindex=4 address=b4:96:91:a5:c8:40 port=p0 switch=-
vf 0000:8a:01.0 0x8086:0x1889 physfn=0000:8a:00.0 driver=iavf numa=1 group=- vfio=- net=ens3f0v0
  net ens3f0v0 device=0000:8a:01.0 type=1 operstate=up carrier=1 ifindex=10 address=02:e8:10:8a:00:00 port=- switch=-
vf 0000:8a:01.1 0x8086:0x1889 physfn=0000:8a:00.0 driver=iavf numa=1 group=- vfio=- net=ens3f0v1
  net ens3f0v1 device=0000:8a:01.1 type=1 operstate=up carrier=1 ifindex=11 address=02:e8:10:8a:00:01 port=- switch=-
vf 0000:8a:01.2 0x8086:0x1889 physfn=0000:8a:00.0 driver=iavf numa=1 group=- vfio=- net=ens3f0v2
  net ens3f0v2 device=0000:8a:01.2 type=1 operstate=up carrier=1 ifindex=12 address=02:e8:10:8a:00:02 port=- switch=-
vf 0000:8a:01.3 0x8086:0x1889 physfn=0000:8a:00.0 driver=iavf numa=1 group=- vfio=- net=ens3f0v3
  net ens3f0v3 device=0000:8a:01.3 type=1 operstate=up carrier=1 ifindex=13 address=02:e8:10:8a:00:03 port=- switch=-
vf 0000:8a:01.4 0x8086:0x1889 physfn=0000:8a:00.0 driver=iavf numa=1 group=- vfio=- net=ens3f0v4
  net ens3f0v4 device=0000:8a:01.4 type=1 operstate=up carrier=1 ifindex=14 address=02:e8:10:8a:00:04 port=- switch=-
vf 0000:8a:01.5 0x8086:0x1889 physfn=0000:8a:00.0 driver=iavf numa=1 group=- vfio=- net=ens3f0v5
  net ens3f0v5 device=0000:8a:01.5 type=1 operstate=up carrier=1 ifindex=15 address=02:e8:10:8a:00:05 port=- switch=-
vf 0000:8a:01.6 0x8086:0x1889 physfn=0000:8a:00.0 driver=vfio-pci numa=1 group=106 vfio=noiommu:ec:0 net=-
vf 0000:8a:01.7 0x8086:0x1889 physfn=0000:8a:00.0 driver=vfio-pci numa=1 group=107 vfio=noiommu:ec:1 net=-
group 106: 0000:8a:01.6 name=vfio-noiommu
group 107: 0000:8a:01.7 name=vfio-noiommu
/dev/vfio: noiommu-106 noiommu-107 vfio
/dev/vfio/vfio a:c4
/dev/vhost-net a:ee
/dev/net/tun a:c8
drivers: iavf ice pcieport vfio-pci
numa: node0 node1 online=0-1
EOT

run "cx6dx table" sriov-cx6dx bash -c "$table"
expect "sriov-cx6dx: RDMA per function (class links, uverbs/umad/issm nodes), switchdev uplink and representors on PF0, vDPA on PF0's VFs 1-3" "$tmp/out" <<'EOT'
modalias: 11 of 11 PCI functions
pf 0000:3b:00.0 0x15b3:0x101d driver=mlx5_core numa=0 group=41 acpi_index=- vfs=4/8 offset=2 stride=1 vf_device=101e autoprobe=1 msix=1024 virtfn: 0000:3b:00.2 0000:3b:00.3 0000:3b:00.4 0000:3b:00.5
  net ens1f0np0 device=0000:3b:00.0 type=1 operstate=up carrier=1 ifindex=6 address=b8:3f:d2:b6:3b:10 port=p0 switch=1c34da0300a1b2c3
  net ens1f0r0 device=0000:3b:00.0 type=1 operstate=up carrier=1 ifindex=8 address=4a:1f:6c:3b:00:00 port=pf0vf0 switch=1c34da0300a1b2c3
  net ens1f0r1 device=0000:3b:00.0 type=1 operstate=up carrier=1 ifindex=9 address=4a:1f:6c:3b:00:01 port=pf0vf1 switch=1c34da0300a1b2c3
  net ens1f0r2 device=0000:3b:00.0 type=1 operstate=up carrier=1 ifindex=10 address=4a:1f:6c:3b:00:02 port=pf0vf2 switch=1c34da0300a1b2c3
  net ens1f0r3 device=0000:3b:00.0 type=1 operstate=up carrier=1 ifindex=11 address=4a:1f:6c:3b:00:03 port=pf0vf3 switch=1c34da0300a1b2c3
  rdma mlx5_0 class=link device=0000:3b:00.0 state=4: ACTIVE phys=5: LinkUp layer=Ethernet ndev=ens1f0np0 guid=b83f:d203:00b6:3b10 uverbs0=e7:c0 issm0=e7:40 umad0=e7:0
pf 0000:3b:00.1 0x15b3:0x101d driver=mlx5_core numa=0 group=42 acpi_index=- vfs=4/8 offset=9 stride=1 vf_device=101e autoprobe=1 msix=1024 virtfn: 0000:3b:01.2 0000:3b:01.3 0000:3b:01.4 0000:3b:01.5
  net ens1f1np1 device=0000:3b:00.1 type=1 operstate=up carrier=1 ifindex=7 address=b8:3f:d2:b6:3b:11 port=p1 switch=-
  rdma mlx5_1 class=link device=0000:3b:00.1 state=4: ACTIVE phys=5: LinkUp layer=Ethernet ndev=ens1f1np1 guid=b83f:d203:00b6:3b11 uverbs1=e7:c1 issm1=e7:41 umad1=e7:1
vf 0000:3b:00.2 0x15b3:0x101e physfn=0000:3b:00.0 driver=mlx5_core numa=0 group=50 vfio=- net=ens1f0v0
  net ens1f0v0 device=0000:3b:00.2 type=1 operstate=up carrier=1 ifindex=12 address=02:3b:00:00:00:00 port=- switch=-
  rdma mlx5_2 class=link device=0000:3b:00.2 state=4: ACTIVE phys=5: LinkUp layer=Ethernet ndev=ens1f0v0 guid=b83f:d203:00b6:3c00 uverbs2=e7:c2 issm2=e7:42 umad2=e7:2
vf 0000:3b:00.3 0x15b3:0x101e physfn=0000:3b:00.0 driver=mlx5_core numa=0 group=51 vfio=- net=ens1f0v1
  net ens1f0v1 device=0000:3b:00.3 type=1 operstate=up carrier=1 ifindex=13 address=02:3b:00:00:00:01 port=- switch=-
  rdma mlx5_3 class=link device=0000:3b:00.3 state=4: ACTIVE phys=5: LinkUp layer=Ethernet ndev=ens1f0v1 guid=b83f:d203:00b6:3c01 uverbs3=e7:c3 issm3=e7:43 umad3=e7:3
  vdpa vdpa0 bus=vdpa0 driver=vhost_vdpa override=(null) vhost=vhost-vdpa-0 dev=508:0 node=1fc:0
vf 0000:3b:00.4 0x15b3:0x101e physfn=0000:3b:00.0 driver=mlx5_core numa=0 group=52 vfio=- net=ens1f0v2
  net ens1f0v2 device=0000:3b:00.4 type=1 operstate=up carrier=1 ifindex=14 address=02:3b:00:00:00:02 port=- switch=-
  rdma mlx5_4 class=link device=0000:3b:00.4 state=4: ACTIVE phys=5: LinkUp layer=Ethernet ndev=ens1f0v2 guid=b83f:d203:00b6:3c02 uverbs4=e7:c4 issm4=e7:44 umad4=e7:4
  vdpa vdpa1 bus=vdpa1 driver=vhost_vdpa override=(null) vhost=vhost-vdpa-1 dev=508:1 node=1fc:1
vf 0000:3b:00.5 0x15b3:0x101e physfn=0000:3b:00.0 driver=mlx5_core numa=0 group=53 vfio=- net=ens1f0v3
  net ens1f0v3 device=0000:3b:00.5 type=1 operstate=up carrier=1 ifindex=15 address=02:3b:00:00:00:03 port=- switch=-
  rdma mlx5_5 class=link device=0000:3b:00.5 state=4: ACTIVE phys=5: LinkUp layer=Ethernet ndev=ens1f0v3 guid=b83f:d203:00b6:3c03 uverbs5=e7:c5 issm5=e7:45 umad5=e7:5
  vdpa vdpa2 bus=vdpa2 driver=virtio_vdpa override=(null) vhost=-
  virtio virtio0 driver=virtio_net device=0x0001 vendor=0x15b3 modalias=virtio:d00000001v000015B3 net=eth0
vf 0000:3b:01.2 0x15b3:0x101e physfn=0000:3b:00.1 driver=mlx5_core numa=0 group=60 vfio=- net=ens1f1v0
  net ens1f1v0 device=0000:3b:01.2 type=1 operstate=up carrier=1 ifindex=16 address=02:3b:01:00:00:00 port=- switch=-
  rdma mlx5_6 class=link device=0000:3b:01.2 state=4: ACTIVE phys=5: LinkUp layer=Ethernet ndev=ens1f1v0 guid=b83f:d203:00b6:3d00 uverbs6=e7:c6 issm6=e7:46 umad6=e7:6
vf 0000:3b:01.3 0x15b3:0x101e physfn=0000:3b:00.1 driver=mlx5_core numa=0 group=61 vfio=- net=ens1f1v1
  net ens1f1v1 device=0000:3b:01.3 type=1 operstate=up carrier=1 ifindex=17 address=02:3b:01:00:00:01 port=- switch=-
  rdma mlx5_7 class=link device=0000:3b:01.3 state=4: ACTIVE phys=5: LinkUp layer=Ethernet ndev=ens1f1v1 guid=b83f:d203:00b6:3d01 uverbs7=e7:c7 issm7=e7:47 umad7=e7:7
vf 0000:3b:01.4 0x15b3:0x101e physfn=0000:3b:00.1 driver=mlx5_core numa=0 group=62 vfio=- net=ens1f1v2
  net ens1f1v2 device=0000:3b:01.4 type=1 operstate=up carrier=1 ifindex=18 address=02:3b:01:00:00:02 port=- switch=-
  rdma mlx5_8 class=link device=0000:3b:01.4 state=4: ACTIVE phys=5: LinkUp layer=Ethernet ndev=ens1f1v2 guid=b83f:d203:00b6:3d02 uverbs8=e7:c8 issm8=e7:48 umad8=e7:8
vf 0000:3b:01.5 0x15b3:0x101e physfn=0000:3b:00.1 driver=mlx5_core numa=0 group=63 vfio=- net=ens1f1v3
  net ens1f1v3 device=0000:3b:01.5 type=1 operstate=up carrier=1 ifindex=19 address=02:3b:01:00:00:03 port=- switch=-
  rdma mlx5_9 class=link device=0000:3b:01.5 state=4: ACTIVE phys=5: LinkUp layer=Ethernet ndev=ens1f1v3 guid=b83f:d203:00b6:3d03 uverbs9=e7:c9 issm9=e7:49 umad9=e7:9
group 40: 0000:3a:02.0 name=-
group 41: 0000:3b:00.0 name=-
group 42: 0000:3b:00.1 name=-
group 50: 0000:3b:00.2 name=-
group 51: 0000:3b:00.3 name=-
group 52: 0000:3b:00.4 name=-
group 53: 0000:3b:00.5 name=-
group 60: 0000:3b:01.2 name=-
group 61: 0000:3b:01.3 name=-
group 62: 0000:3b:01.4 name=-
group 63: 0000:3b:01.5 name=-
/dev/vfio: vfio
/dev/vfio/vfio a:c4
/dev/vhost-net a:ee
/dev/net/tun a:c8
/dev/infiniband/rdma_cm a:78
drivers: mlx5_core pcieport
numa: node0 node1 online=0-1
EOT

run "sriov-cx6-ib discover" sriov-cx6-ib "$kdpctl" discover
expect "sriov-cx6-ib: one ConnectX-6 PF x 4 VFs in InfiniBand mode (class 0207)" "$tmp/out" <<'EOF'
ADDRESS         ID         CLASS   DRIVER     NUMA  IOMMU  SRIOV
0000:d7:02.0    8086:352a  060400  pcieport   1     70
  0000:d8:00.0  15b3:101b  020700  mlx5_core  1     71     vfs=4/8
  0000:d8:00.1  15b3:101c  020700  mlx5_core  1     80     pf=0000:d8:00.0
  0000:d8:00.2  15b3:101c  020700  mlx5_core  1     81     pf=0000:d8:00.0
  0000:d8:00.3  15b3:101c  020700  mlx5_core  1     82     pf=0000:d8:00.0
  0000:d8:00.4  15b3:101c  020700  mlx5_core  1     83     pf=0000:d8:00.0
EOF

run "cx6-ib table" sriov-cx6-ib bash -c "$table"
expect "sriov-cx6-ib: IPoIB netdevs (type 32, pkey), InfiniBand ports with LIDs and pkey tables" "$tmp/out" <<'EOT'
modalias: 6 of 6 PCI functions
pf 0000:d8:00.0 0x15b3:0x101b driver=mlx5_core numa=1 group=71 acpi_index=- vfs=4/8 offset=1 stride=1 vf_device=101c autoprobe=1 msix=1024 virtfn: 0000:d8:00.1 0000:d8:00.2 0000:d8:00.3 0000:d8:00.4
  net ibp216s0 device=0000:d8:00.0 type=32 operstate=up carrier=1 ifindex=4 address=00:00:10:49:fe:80:00:00:00:00:00:00:b8:3f:d2:03:00:c4:5a:10 port=- switch=-
    ipoib pkey=0xffff mode=datagram mtu=4092 addr_len=20 broadcast=00:ff:ff:ff:ff:12:40:1b:ff:ff:00:00:00:00:00:00:ff:ff:ff:ff
  rdma mlx5_0 class=link device=0000:d8:00.0 state=4: ACTIVE phys=5: LinkUp layer=InfiniBand ndev=- guid=b83f:d203:00c4:5a10 uverbs0=e7:c0 issm0=e7:40 umad0=e7:0
    ib lid=0x1a sm_lid=0x1 rate=200 Gb/sec (4X HDR) pkeys=0xffff,0x8001,
vf 0000:d8:00.1 0x15b3:0x101c physfn=0000:d8:00.0 driver=mlx5_core numa=1 group=80 vfio=- net=ibp216s0v0
  net ibp216s0v0 device=0000:d8:00.1 type=32 operstate=up carrier=1 ifindex=5 address=00:00:11:00:fe:80:00:00:00:00:00:00:b8:3f:d2:03:00:c4:5b:00 port=- switch=-
    ipoib pkey=0xffff mode=datagram mtu=4092 addr_len=20 broadcast=00:ff:ff:ff:ff:12:40:1b:ff:ff:00:00:00:00:00:00:ff:ff:ff:ff
  rdma mlx5_1 class=link device=0000:d8:00.1 state=4: ACTIVE phys=5: LinkUp layer=InfiniBand ndev=- guid=b83f:d203:00c4:5b00 uverbs1=e7:c1 issm1=e7:41 umad1=e7:1
    ib lid=0x1b sm_lid=0x1 rate=200 Gb/sec (4X HDR) pkeys=0xffff,
vf 0000:d8:00.2 0x15b3:0x101c physfn=0000:d8:00.0 driver=mlx5_core numa=1 group=81 vfio=- net=ibp216s0v1
  net ibp216s0v1 device=0000:d8:00.2 type=32 operstate=up carrier=1 ifindex=6 address=00:00:11:40:fe:80:00:00:00:00:00:00:b8:3f:d2:03:00:c4:5b:01 port=- switch=-
    ipoib pkey=0xffff mode=datagram mtu=4092 addr_len=20 broadcast=00:ff:ff:ff:ff:12:40:1b:ff:ff:00:00:00:00:00:00:ff:ff:ff:ff
  rdma mlx5_2 class=link device=0000:d8:00.2 state=4: ACTIVE phys=5: LinkUp layer=InfiniBand ndev=- guid=b83f:d203:00c4:5b01 uverbs2=e7:c2 issm2=e7:42 umad2=e7:2
    ib lid=0x1c sm_lid=0x1 rate=200 Gb/sec (4X HDR) pkeys=0xffff,
vf 0000:d8:00.3 0x15b3:0x101c physfn=0000:d8:00.0 driver=mlx5_core numa=1 group=82 vfio=- net=ibp216s0v2
  net ibp216s0v2 device=0000:d8:00.3 type=32 operstate=up carrier=1 ifindex=7 address=00:00:11:80:fe:80:00:00:00:00:00:00:b8:3f:d2:03:00:c4:5b:02 port=- switch=-
    ipoib pkey=0x8001 mode=datagram mtu=4092 addr_len=20 broadcast=00:ff:ff:ff:ff:12:40:1b:80:01:00:00:00:00:00:00:ff:ff:ff:ff
  rdma mlx5_3 class=link device=0000:d8:00.3 state=4: ACTIVE phys=5: LinkUp layer=InfiniBand ndev=- guid=b83f:d203:00c4:5b02 uverbs3=e7:c3 issm3=e7:43 umad3=e7:3
    ib lid=0x1d sm_lid=0x1 rate=200 Gb/sec (4X HDR) pkeys=0x8001,
vf 0000:d8:00.4 0x15b3:0x101c physfn=0000:d8:00.0 driver=mlx5_core numa=1 group=83 vfio=- net=ibp216s0v3
  net ibp216s0v3 device=0000:d8:00.4 type=32 operstate=up carrier=1 ifindex=8 address=00:00:11:c0:fe:80:00:00:00:00:00:00:b8:3f:d2:03:00:c4:5b:03 port=- switch=-
    ipoib pkey=0x8001 mode=datagram mtu=4092 addr_len=20 broadcast=00:ff:ff:ff:ff:12:40:1b:80:01:00:00:00:00:00:00:ff:ff:ff:ff
  rdma mlx5_4 class=link device=0000:d8:00.4 state=4: ACTIVE phys=5: LinkUp layer=InfiniBand ndev=- guid=b83f:d203:00c4:5b03 uverbs4=e7:c4 issm4=e7:44 umad4=e7:4
    ib lid=0x1e sm_lid=0x1 rate=200 Gb/sec (4X HDR) pkeys=0x8001,
group 70: 0000:d7:02.0 name=-
group 71: 0000:d8:00.0 name=-
group 80: 0000:d8:00.1 name=-
group 81: 0000:d8:00.2 name=-
group 82: 0000:d8:00.3 name=-
group 83: 0000:d8:00.4 name=-
/dev/vfio: vfio
/dev/vfio/vfio a:c4
/dev/vhost-net a:ee
/dev/net/tun a:c8
/dev/infiniband/rdma_cm a:78
drivers: mlx5_core pcieport
numa: node0 node1 online=0-1
EOT

# ---------------------------------------------------------------------------------------------
# The event scripts (run_script: tests/sim-node/lib.sh)

E=/devices/pci0000:89/0000:89:02.0
# the events of one E810 VF: vf_off|vf_on BDF DRIVER NETDEV|GROUP
vf_off() {
        if [ "$2" = iavf ]; then echo "event remove net $E/$1/net/$3 DRIVER=-"; else echo "event remove vfio /devices/virtual/vfio/$3 DRIVER=-"; fi
        echo "event unbind pci $E/$1 DRIVER=-"
        echo "event remove pci $E/$1 DRIVER=-"
}
vf_on() {
        echo "event add pci $E/$1 DRIVER=-"
        echo "event change pci $E/$1 DRIVER=-"
        if [ "$2" = iavf ]; then echo "event add net $E/$1/net/$3 DRIVER=-"; else echo "event add vfio /devices/virtual/vfio/$3 DRIVER=-"; fi
        echo "event bind pci $E/$1 DRIVER=$2"
}
# PF1's VFs, VF i at 0000:8a:05.i: 0-3 on iavf (ens3f1v<i>), 4-7 on vfio-pci (group 110+i)
pf1_vfs() {
        local verb=$1 n=$2 i
        for ((i = 0; i < n; i++)); do
                if [ $i -lt 4 ]; then $verb 0000:8a:05.$i iavf ens3f1v$i; else $verb 0000:8a:05.$i vfio-pci $((110 + i)); fi
        done
}
D=/sys/bus/pci/devices
numvfs_requests=("file $D/0000:8a:00.1/sriov_numvfs" "file $D/0000:8a:00.1/virtfn0" "file $D/0000:8a:00.1/virtfn3"
        "file $D/0000:8a:00.1/virtfn4" "file $D/0000:8a:00.1/virtfn7" "file $D/0000:8a:05.3/physfn"
        "file $D/0000:8a:05.3/net" "file $D/0000:8a:05.4/iommu_group" "file /dev/vfio" count)
# numvfs_state N: the answers to numvfs_requests with N VFs on PF1
numvfs_state() {
        local n=$1 i
        echo "file $D/0000:8a:00.1/sriov_numvfs text=$n\\n"
        for i in 0 3 4 7; do
                [ $i -lt "$n" ] && echo "file $D/0000:8a:00.1/virtfn$i link -> ../0000:8a:05.$i" ||
                        echo "file $D/0000:8a:00.1/virtfn$i missing"
        done
        if [ "$n" -gt 3 ]; then
                echo "file $D/0000:8a:05.3/physfn link -> ../0000:8a:00.1"
                echo "file $D/0000:8a:05.3/net dir: ens3f1v3"
        else
                echo "file $D/0000:8a:05.3/physfn missing"
                echo "file $D/0000:8a:05.3/net missing"
        fi
        [ "$n" -gt 4 ] && echo "file $D/0000:8a:05.4/iommu_group link -> ../../../../kernel/iommu_groups/114" ||
                echo "file $D/0000:8a:05.4/iommu_group missing"
        case $n in
        0|4) echo "file /dev/vfio dir: 106 107 vfio" ;;
        8) echo "file /dev/vfio dir: 106 107 114 115 116 117 vfio" ;;
        esac
        echo "count udev-pci=$((11 + n)) libpci=$((11 + n))"
}

run_script sriov-e810 sriov-e810-numvfs.script "${numvfs_requests[@]}"
{
        echo "ready udev"
        pf1_vfs vf_off 8; numvfs_state 0; echo "mark numvfs 0"
        pf1_vfs vf_on 8; echo "event change pci $E/0000:8a:00.1 DRIVER=ice"; numvfs_state 8; echo "mark numvfs 8"
        pf1_vfs vf_off 8; pf1_vfs vf_on 4; echo "event change pci $E/0000:8a:00.1 DRIVER=ice"; numvfs_state 4
        echo "mark numvfs 4"
} > "$tmp/want"
expect "numvfs 8 -> 0 -> 8 -> 4 on PF1: per VF net/vfio remove, unbind, remove; add, change, net/vfio add, bind; PF change only on enable" \
        "$tmp/events" < "$tmp/want"
expect "numvfs: the end state has PF1 with VFs 0000:8a:05.0-3 on iavf" "$tmp/end" <<'EOT'
ADDRESS         ID         CLASS   DRIVER    NUMA  IOMMU  SRIOV
0000:89:02.0    8086:352a  060400  pcieport  1     89
  0000:8a:00.0  8086:1593  020000  ice       1     90     vfs=8/128
  0000:8a:00.1  8086:1593  020000  ice       1     90     vfs=4/128
  0000:8a:01.0  8086:1889  020000  iavf      1     100    pf=0000:8a:00.0
  0000:8a:01.1  8086:1889  020000  iavf      1     101    pf=0000:8a:00.0
  0000:8a:01.2  8086:1889  020000  iavf      1     102    pf=0000:8a:00.0
  0000:8a:01.3  8086:1889  020000  iavf      1     103    pf=0000:8a:00.0
  0000:8a:01.4  8086:1889  020000  iavf      1     104    pf=0000:8a:00.0
  0000:8a:01.5  8086:1889  020000  iavf      1     105    pf=0000:8a:00.0
  0000:8a:01.6  8086:1889  020000  vfio-pci  1     106    pf=0000:8a:00.0
  0000:8a:01.7  8086:1889  020000  vfio-pci  1     107    pf=0000:8a:00.0
  0000:8a:05.0  8086:1889  020000  iavf      1     110    pf=0000:8a:00.1
  0000:8a:05.1  8086:1889  020000  iavf      1     111    pf=0000:8a:00.1
  0000:8a:05.2  8086:1889  020000  iavf      1     112    pf=0000:8a:00.1
  0000:8a:05.3  8086:1889  020000  iavf      1     113    pf=0000:8a:00.1
EOT

V5=$E/0000:8a:01.5
rebind_requests=("file $D/0000:8a:01.5/driver" "file $D/0000:8a:01.5/net" "file /sys/class/net/ens3f0v5"
        "file /dev/vfio" "file /dev/vfio/105" "file /sys/kernel/iommu_groups/105/devices")
run_script sriov-e810 sriov-e810-rebind.script "${rebind_requests[@]}"
expect "rebind VF 0000:8a:01.5 iavf -> vfio-pci -> iavf: netdev and /dev/vfio/105 swap places, the group stays" "$tmp/events" <<EOT
ready udev
event remove net $V5/net/ens3f0v5 DRIVER=-
event unbind pci $V5 DRIVER=-
event add vfio /devices/virtual/vfio/105 DRIVER=-
event bind pci $V5 DRIVER=vfio-pci
file $D/0000:8a:01.5/driver link -> ../../../../bus/pci/drivers/vfio-pci
file $D/0000:8a:01.5/net missing
file /sys/class/net/ens3f0v5 missing
file /dev/vfio dir: 105 106 107 114 115 116 117 vfio
file /dev/vfio/105 char 236:5
file /sys/kernel/iommu_groups/105/devices dir: 0000:8a:01.5
mark vfio-pci
event remove vfio /devices/virtual/vfio/105 DRIVER=-
event unbind pci $V5 DRIVER=-
event add net $V5/net/ens3f0v5 DRIVER=-
event bind pci $V5 DRIVER=iavf
file $D/0000:8a:01.5/driver link -> ../../../../bus/pci/drivers/iavf
file $D/0000:8a:01.5/net dir: ens3f0v5
file /sys/class/net/ens3f0v5 link -> ../../devices/pci0000:89/0000:89:02.0/0000:8a:01.5/net/ens3f0v5
file /dev/vfio dir: 106 107 114 115 116 117 vfio
file /dev/vfio/105 missing
file /sys/kernel/iommu_groups/105/devices dir: 0000:8a:01.5
mark iavf
EOT
expect "rebind: the end state is the node at load" "$tmp/end" < "$tmp/e810.load"

P1=$E/0000:8a:00.1
unplug_requests=("file $D/0000:8a:00.1" "file $D/0000:8a:05.0" "file $D/0000:8a:05.7/iommu_group"
        "file /sys/class/net/ens3f1np1" "file /sys/kernel/iommu_groups/90/devices" "file /dev/vfio" count)
run_script sriov-e810 sriov-e810-unplug-pf.script "${unplug_requests[@]}"
{
        echo "ready udev"
        pf1_vfs vf_off 8
        echo "event remove net $P1/net/ens3f1np1 DRIVER=-"
        echo "event unbind pci $P1 DRIVER=-"
        echo "event remove pci $P1 DRIVER=-"
        echo "file $D/0000:8a:00.1 missing"
        echo "file $D/0000:8a:05.0 missing"
        echo "file $D/0000:8a:05.7/iommu_group missing"
        echo "file /sys/class/net/ens3f1np1 missing"
        echo "file /sys/kernel/iommu_groups/90/devices dir: 0000:8a:00.0"
        echo "file /dev/vfio dir: 106 107 vfio"
        echo "count udev-pci=10 libpci=10"
        echo "mark gone"
        echo "event add pci $P1 DRIVER=-"
        for i in 0 1 2 3 4 5 6 7; do echo "event add pci $E/0000:8a:05.$i DRIVER=-"; done
        echo "event add net $P1/net/ens3f1np1 DRIVER=-"
        echo "event bind pci $P1 DRIVER=ice"
        for i in 0 1 2 3; do echo "event add net $E/0000:8a:05.$i/net/ens3f1v$i DRIVER=-"; echo "event bind pci $E/0000:8a:05.$i DRIVER=iavf"; done
        for i in 4 5 6 7; do echo "event add vfio /devices/virtual/vfio/11$i DRIVER=-"; echo "event bind pci $E/0000:8a:05.$i DRIVER=vfio-pci"; done
        echo "file $D/0000:8a:00.1 link -> ../../../devices/pci0000:89/0000:89:02.0/0000:8a:00.1"
        echo "file $D/0000:8a:05.0 link -> ../../../devices/pci0000:89/0000:89:02.0/0000:8a:05.0"
        echo "file $D/0000:8a:05.7/iommu_group link -> ../../../../kernel/iommu_groups/117"
        echo "file /sys/class/net/ens3f1np1 link -> ../../devices/pci0000:89/0000:89:02.0/0000:8a:00.1/net/ens3f1np1"
        echo "file /sys/kernel/iommu_groups/90/devices dir: 0000:8a:00.0 0000:8a:00.1"
        echo "file /dev/vfio dir: 106 107 114 115 116 117 vfio"
        echo "count udev-pci=19 libpci=19"
        echo "mark back"
} > "$tmp/want"
expect "unplug PF1: SR-IOV off (VF by VF), then its netdev, unbind, remove; replug: PF and its 8 VFs added, then probed" \
        "$tmp/events" < "$tmp/want"
expect "unplug-pf: the end state is the node at load" "$tmp/end" < "$tmp/e810.load"

V1=$E/0000:8a:01.1
pod_requests=("file $D/0000:8a:01.1/net" "file /sys/class/net/ens3f0v1" "file $D/0000:8a:01.1/driver"
        "file /sys/class/net/ens3f0np0/operstate" "file /sys/class/net/ens3f0np0/carrier" count)
run_script sriov-e810 sriov-e810-pod.script "${pod_requests[@]}"
expect "pod: the VF netdev leaves (net remove only; the PCI VF and its driver stay) and returns; carrier flip sends nothing" \
        "$tmp/events" <<EOT
ready udev
event remove net $V1/net/ens3f0v1 DRIVER=-
file $D/0000:8a:01.1/net missing
file /sys/class/net/ens3f0v1 missing
file $D/0000:8a:01.1/driver link -> ../../../../bus/pci/drivers/iavf
file /sys/class/net/ens3f0np0/operstate text=up\\n
file /sys/class/net/ens3f0np0/carrier text=1\\n
count udev-pci=19 libpci=19
mark in-pod
event add net $V1/net/ens3f0v1 DRIVER=-
file $D/0000:8a:01.1/net dir: ens3f0v1
file /sys/class/net/ens3f0v1 link -> ../../devices/pci0000:89/0000:89:02.0/0000:8a:01.1/net/ens3f0v1
file $D/0000:8a:01.1/driver link -> ../../../../bus/pci/drivers/iavf
file /sys/class/net/ens3f0np0/operstate text=up\\n
file /sys/class/net/ens3f0np0/carrier text=1\\n
count udev-pci=19 libpci=19
mark back
file $D/0000:8a:01.1/net dir: ens3f0v1
file /sys/class/net/ens3f0v1 link -> ../../devices/pci0000:89/0000:89:02.0/0000:8a:01.1/net/ens3f0v1
file $D/0000:8a:01.1/driver link -> ../../../../bus/pci/drivers/iavf
file /sys/class/net/ens3f0np0/operstate text=down\\n
file /sys/class/net/ens3f0np0/carrier text=0\\n
count udev-pci=19 libpci=19
mark carrier-down
EOT

C=/devices/pci0000:3a/0000:3a:02.0
# cx6_vf_off|cx6_vf_on BDF K NETDEV: the events of an mlx5 VF with ibdev mlx5_K; the driver's
# remove() deletes its class devices deepest (last in devpath order) first, probe() adds them
cx6_vf_off() {
        echo "event remove net $C/$1/net/$3 DRIVER=-"
        echo "event remove infiniband_verbs $C/$1/infiniband_verbs/uverbs$2 DRIVER=-"
        echo "event remove infiniband_mad $C/$1/infiniband_mad/umad$2 DRIVER=-"
        echo "event remove infiniband_mad $C/$1/infiniband_mad/issm$2 DRIVER=-"
        echo "event remove infiniband $C/$1/infiniband/mlx5_$2 DRIVER=-"
        echo "event unbind pci $C/$1 DRIVER=-"
        echo "event remove pci $C/$1 DRIVER=-"
}
cx6_vf_on() {
        echo "event add pci $C/$1 DRIVER=-"
        echo "event change pci $C/$1 DRIVER=-"
        echo "event add infiniband $C/$1/infiniband/mlx5_$2 DRIVER=-"
        echo "event add infiniband_mad $C/$1/infiniband_mad/issm$2 DRIVER=-"
        echo "event add infiniband_mad $C/$1/infiniband_mad/umad$2 DRIVER=-"
        echo "event add infiniband_verbs $C/$1/infiniband_verbs/uverbs$2 DRIVER=-"
        echo "event add net $C/$1/net/$3 DRIVER=-"
        echo "event bind pci $C/$1 DRIVER=mlx5_core"
}
# PF1's VFs: VF i at 0000:3b:01.2 + i (0000:3b:02.0, 02.1 for 6, 7), mlx5_<6+i>, ens1f1v<i>
cx6_pf1_vfs() {
        local verb=$1 n=$2 i
        for ((i = 0; i < n; i++)); do
                $verb "$(printf '0000:3b:%02x.%x' $(((10 + i) >> 3)) $(((10 + i) & 7)))" $((6 + i)) ens1f1v$i
        done
}
cx6_requests=("file $D/0000:3b:00.1/sriov_numvfs" "file $D/0000:3b:00.1/virtfn7" "file $D/0000:3b:02.1/physfn"
        "file $D/0000:3b:02.1/infiniband" "file /sys/class/infiniband/mlx5_13" "file /sys/class/infiniband_verbs/uverbs13/ibdev"
        "file /dev/infiniband/uverbs13" "file /dev/infiniband/umad13" "file /dev/infiniband/issm13" "file /sys/class/net/ens1f1v7/device")
run_script sriov-cx6dx sriov-cx6dx-numvfs.script "${cx6_requests[@]}"
{
        echo "ready udev"
        cx6_pf1_vfs cx6_vf_off 4
        echo "file $D/0000:3b:00.1/sriov_numvfs text=0\\n"
        for r in "${cx6_requests[@]:1}"; do echo "${r} missing"; done
        echo "mark numvfs 0"
        cx6_pf1_vfs cx6_vf_on 8
        echo "event change pci $C/0000:3b:00.1 DRIVER=mlx5_core"
        echo "file $D/0000:3b:00.1/sriov_numvfs text=8\\n"
        echo "file $D/0000:3b:00.1/virtfn7 link -> ../0000:3b:02.1"
        echo "file $D/0000:3b:02.1/physfn link -> ../0000:3b:00.1"
        echo "file $D/0000:3b:02.1/infiniband dir: mlx5_13"
        echo "file /sys/class/infiniband/mlx5_13 link -> ../../devices/pci0000:3a/0000:3a:02.0/0000:3b:02.1/infiniband/mlx5_13"
        echo "file /sys/class/infiniband_verbs/uverbs13/ibdev text=mlx5_13\\n"
        echo "file /dev/infiniband/uverbs13 char 231:205"
        echo "file /dev/infiniband/umad13 char 231:13"
        echo "file /dev/infiniband/issm13 char 231:77"
        echo "file /sys/class/net/ens1f1v7/device link -> ../../../0000:3b:02.1"
        echo "mark numvfs 8"
} > "$tmp/want"
expect "cx6dx numvfs 4 -> 0 -> 8 on PF1: VFs 4-7 appear with netdev, RDMA device and uverbs/umad/issm nodes" \
        "$tmp/events" < "$tmp/want"
expect "cx6dx numvfs: the end state has 8 VFs on PF1, in address order across the device boundary" "$tmp/end" <<'EOT'
ADDRESS         ID         CLASS   DRIVER     NUMA  IOMMU  SRIOV
0000:3a:02.0    8086:352a  060400  pcieport   0     40
  0000:3b:00.0  15b3:101d  020000  mlx5_core  0     41     vfs=4/8
  0000:3b:00.1  15b3:101d  020000  mlx5_core  0     42     vfs=8/8
  0000:3b:00.2  15b3:101e  020000  mlx5_core  0     50     pf=0000:3b:00.0
  0000:3b:00.3  15b3:101e  020000  mlx5_core  0     51     pf=0000:3b:00.0
  0000:3b:00.4  15b3:101e  020000  mlx5_core  0     52     pf=0000:3b:00.0
  0000:3b:00.5  15b3:101e  020000  mlx5_core  0     53     pf=0000:3b:00.0
  0000:3b:01.2  15b3:101e  020000  mlx5_core  0     60     pf=0000:3b:00.1
  0000:3b:01.3  15b3:101e  020000  mlx5_core  0     61     pf=0000:3b:00.1
  0000:3b:01.4  15b3:101e  020000  mlx5_core  0     62     pf=0000:3b:00.1
  0000:3b:01.5  15b3:101e  020000  mlx5_core  0     63     pf=0000:3b:00.1
  0000:3b:01.6  15b3:101e  020000  mlx5_core  0     64     pf=0000:3b:00.1
  0000:3b:01.7  15b3:101e  020000  mlx5_core  0     65     pf=0000:3b:00.1
  0000:3b:02.0  15b3:101e  020000  mlx5_core  0     66     pf=0000:3b:00.1
  0000:3b:02.1  15b3:101e  020000  mlx5_core  0     67     pf=0000:3b:00.1
EOT

I=/sys/class/infiniband
link_requests=("file /sys/class/net/ens1f1np1/operstate" "file /sys/class/net/ens1f1np1/carrier"
        "file $I/mlx5_1/ports/1/state" "file $I/mlx5_1/ports/1/phys_state" "file /sys/class/net/ens1f1v3/operstate"
        "file $I/mlx5_9/ports/1/state" "file $I/mlx5_9/ports/1/phys_state" "file /sys/class/net/ens1f0np0/operstate"
        "file $I/mlx5_2/ports/1/state")
run_script sriov-cx6dx sriov-cx6dx-link-down.script "${link_requests[@]}"
expect "cx6dx link-down: PF1's netdevs and RDMA ports (PF and VFs) go down, PF0's stay up; no uevent" "$tmp/events" <<EOT
ready udev
file /sys/class/net/ens1f1np1/operstate text=down\\n
file /sys/class/net/ens1f1np1/carrier text=0\\n
file $I/mlx5_1/ports/1/state text=1: DOWN\\n
file $I/mlx5_1/ports/1/phys_state text=3: Disabled\\n
file /sys/class/net/ens1f1v3/operstate text=down\\n
file $I/mlx5_9/ports/1/state text=1: DOWN\\n
file $I/mlx5_9/ports/1/phys_state text=3: Disabled\\n
file /sys/class/net/ens1f0np0/operstate text=up\\n
file $I/mlx5_2/ports/1/state text=4: ACTIVE\\n
mark link-down
EOT

if [ $failures -gt 0 ]; then
        echo "$failures check(s) failed"
        exit 1
fi
echo "all checks passed"
