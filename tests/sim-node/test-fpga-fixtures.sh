#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# sim-node/fpga-fixtures: the FPGA nodes of tests/fixtures/nodes/ (fpga-*.umockdev) as a backend
# sees them under sim-node, and their event scripts end to end. For each node: the PCI tree
# (kdpctl discover), then the plain reads a backend makes with exact values: the fpga_region
# class with the PR regions' interface IDs (the base region has none), the DFL FMEs and ports on
# the platform bus with their dev numbers, /dev nodes, errors, hwmon, manager and bridge, the
# /sys/dev/char and /dev/char links Intel's plugin resolves; the OPAE driver's fpga class; the Alveo user and management PFs
# with XRT's status files, the shell's rom.*, the DRM and xclmgmt nodes. For each script: the
# exact uevents between its "echo" marks, what sysfs shows at each mark, and the end state
# (kdpctl discover). The tables are the ones tests/fixtures/README.md gives. Exit 77 = skipped.
# ok() never fails, so "[ ... ] && ok ... || fail ..." is an if-then-else.
# shellcheck disable=SC2015,SC2016
set -u

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "${KDP_BUILD_DIR:-$(dirname "${BASH_SOURCE[0]}")/../../build}/kdpctl"
kdpctl=$build/kdpctl

table='
lnk() { if [ -L "$1" ]; then readlink "$1"; else echo -; fi; }
rd() { cat "$1" 2>/dev/null || echo -; }
for r in /sys/class/fpga_region/*; do
        [ -e "$r" ] || continue
        echo "region ${r##*/} -> $(readlink $r | sed "s|^\.\./\.\./devices/||") compat_id=$(rd $r/compat_id)"
done
for d in /sys/bus/platform/devices/dfl-fme.* /sys/bus/platform/devices/dfl-port.*; do
        [ -e "$d" ] || continue
        n=${d##*/}; p=$(readlink -f $d)
        case $n in
        dfl-fme.*) echo "fme $n pci=$(basename $(dirname $(dirname $(dirname $p)))) dev=$(cat $p/dev) node=$(stat -c %t:%T /dev/$n) ports=$(cat $p/ports_num) errors=$(cat $p/errors/catfatal_errors),$(cat $p/errors/nonfatal_errors),$(cat $p/errors/fme_errors),$(cat $p/errors/pcie0_errors),$(cat $p/errors/pcie1_errors) hwmon=$(for h in $p/hwmon/*; do echo -n "${h##*/}:$(cat $h/name) "; done)mgr=$(cat $p/dfl-fme-mgr.*/fpga_manager/*/state)/$(cat $p/dfl-fme-mgr.*/fpga_manager/*/status) bridge=$(cat $p/dfl-fme-bridge.*/fpga_bridge/*/state)" ;;
        dfl-port.*) echo "port $n dev=$(cat $p/dev) node=$(stat -c %t:%T /dev/$n) id=$(cat $p/id) afu_id=$(cat $p/afu_id) errors=$(cat $p/errors/errors) driver=$(basename $(readlink $p/driver))" ;;
        esac
done
for c in /sys/dev/char/*; do
        [ -e "$c" ] || continue
        echo "sys/dev/char ${c##*/} -> $(readlink $c | sed "s|.*/||") /dev/char -> $(readlink /dev/char/${c##*/})"
done
for d in /sys/bus/pci/devices/*; do
        b=${d##*/}
        if [ -e $d/user_pf ]; then
                r=$(ls $d/drm | grep renderD)
                echo "user $b driver=$(basename $(readlink $d/driver)) ready=$(cat $d/ready) offline=$(cat $d/dev_offline) bad=$(cat $d/device_bad_state) mig=$(cat $d/mig_calibration) logic=$(cat $d/logic_uuids) rom=$(for r in $d/rom.*; do echo -n "${r##*/}:$(cat $r/VBNV):$(cat $r/timestamp)"; done) xmc=$(cat $d/xmc.*/serial_num) drm=$(ls $d/drm | paste -sd,) $r=$(stat -c %t:%T /dev/dri/$r) devname=$(sed -n "s/^DEVNAME=//p" $d/drm/$r/uevent)"
        fi
        if [ -e $d/mgmt_pf ]; then
                echo "mgmt $b driver=$(basename $(readlink $d/driver)) instance=$(cat $d/instance) ready=$(cat $d/ready) class=$(ls $d/xrt_mgmt) node=$(stat -c %t:%T /dev/xclmgmt$(cat $d/instance))"
        fi
done
for c in /sys/class/fpga/*; do
        [ -e "$c" ] || continue
        echo "opae ${c##*/} -> $(readlink $c | sed "s|^\.\./\.\./devices/||")"
        for x in $c/intel-fpga-*; do
                echo "  ${x##*/} dev=$(cat $x/dev) node=$(stat -c %t:%T /dev/${x##*/}) driver=$(basename $(readlink $x/driver)) ids=$(cat $x/afu_id $x/pr/interface_id 2>/dev/null) errors=$(cat $x/errors/errors $x/errors/catfatal_errors 2>/dev/null)"
        done
done
echo "numa: $(ls -d /sys/devices/system/node/node* | sed "s|.*/||" | paste -sd" ") online=$(cat /sys/devices/system/node/online)"
'

run "fpga-d5005 discover" fpga-d5005 "$kdpctl" discover
expect "fpga-d5005: 2 PAC D5005 on dfl-pci, one per NUMA node, SR-IOV capable and off" "$tmp/out" <<'EOF2'
ADDRESS         ID         CLASS   DRIVER    NUMA  IOMMU  SRIOV
0000:3a:00.0    8086:352a  060400  pcieport  0     40
  0000:3b:00.0  8086:0b2b  120000  dfl-pci   0     41     vfs=0/1
0000:d7:00.0    8086:352a  060400  pcieport  1     80
  0000:d8:00.0  8086:0b2b  120000  dfl-pci   1     81     vfs=0/1
EOF2
cp "$tmp/out" "$tmp/d5005.load"

run "fpga-d5005 table" fpga-d5005 bash -c "$table"
expect "fpga-d5005: base and PR regions, FMEs and ports with their nodes, errors clean, hwmon, manager, bridge, char links" "$tmp/out" <<'EOF2'
region region0 -> pci0000:3a/0000:3a:00.0/0000:3b:00.0/fpga_region/region0 compat_id=-
region region1 -> pci0000:3a/0000:3a:00.0/0000:3b:00.0/fpga_region/region0/dfl-fme.0/dfl-fme-region.0/fpga_region/region1 compat_id=bfac4d851ee856fe8c95865ce1bbaa2d
region region2 -> pci0000:d7/0000:d7:00.0/0000:d8:00.0/fpga_region/region2 compat_id=-
region region3 -> pci0000:d7/0000:d7:00.0/0000:d8:00.0/fpga_region/region2/dfl-fme.1/dfl-fme-region.1/fpga_region/region3 compat_id=bfac4d851ee856fe8c95865ce1bbaa2d
fme dfl-fme.0 pci=0000:3b:00.0 dev=509:0 node=1fd:0 ports=1 errors=0x0,0x0,0x0,0x0,0x0 hwmon=hwmon3:dfl_fme_thermal hwmon4:dfl_fme_power mgr=operating/ bridge=enabled
fme dfl-fme.1 pci=0000:d8:00.0 dev=509:1 node=1fd:1 ports=1 errors=0x0,0x0,0x0,0x0,0x0 hwmon=hwmon5:dfl_fme_thermal hwmon6:dfl_fme_power mgr=operating/ bridge=enabled
port dfl-port.0 dev=508:0 node=1fc:0 id=0 afu_id=d8424dc4a4a3c413f89e433683f9040b errors=0x0 driver=dfl-port
port dfl-port.1 dev=508:1 node=1fc:1 id=0 afu_id=d8424dc4a4a3c413f89e433683f9040b errors=0x0 driver=dfl-port
sys/dev/char 508:0 -> dfl-port.0 /dev/char -> ../dfl-port.0
sys/dev/char 508:1 -> dfl-port.1 /dev/char -> ../dfl-port.1
sys/dev/char 509:0 -> dfl-fme.0 /dev/char -> ../dfl-fme.0
sys/dev/char 509:1 -> dfl-fme.1 /dev/char -> ../dfl-fme.1
numa: node0 node1 online=0-1
EOF2

run "fpga-u250 discover" fpga-u250 "$kdpctl" discover
expect "fpga-u250: 2 Alveo U250, management PF on xclmgmt and user PF on xocl, one card per NUMA node; the BMC" "$tmp/out" <<'EOF2'
ADDRESS           ID         CLASS   DRIVER    NUMA  IOMMU  SRIOV
0000:00:1c.0      8086:a190  060400  pcieport  0     10
  0000:01:00.0    1a03:1150  060400  -         0     11
    0000:02:00.0  1a03:2000  030000  ast       0     11
0000:3a:00.0      8086:352a  060400  pcieport  0     40
  0000:3b:00.0    10ee:5004  120000  xclmgmt   0     41
  0000:3b:00.1    10ee:5005  120000  xocl      0     41
0000:d7:00.0      8086:352a  060400  pcieport  1     80
  0000:d8:00.0    10ee:5004  120000  xclmgmt   1     81
  0000:d8:00.1    10ee:5005  120000  xocl      1     81
EOF2
cp "$tmp/out" "$tmp/u250.load"

run "fpga-u250 table" fpga-u250 bash -c "$table"
expect "fpga-u250: XRT's markers and status files, the shell's rom, the render and xclmgmt nodes" "$tmp/out" <<'EOF2'
mgmt 0000:3b:00.0 driver=xclmgmt instance=15104 ready=1 class=xclmgmt15104 node=f0:0
user 0000:3b:00.1 driver=xocl ready=0x1 offline=0 bad=0 mig=0x1 logic=80a3514f3e07b502094b1fe34622eb8c rom=rom.u.1:xilinx_u250_gen3x16_xdma_shell_4_1:0 xmc=21320733400D drm=card1,renderD128 renderD128=e2:80 devname=dri/renderD128
mgmt 0000:d8:00.0 driver=xclmgmt instance=55296 ready=1 class=xclmgmt55296 node=f0:1
user 0000:d8:00.1 driver=xocl ready=0x1 offline=0 bad=0 mig=0x1 logic=e74d76218cdfc61b64cc74a913d0ef8f rom=rom.u.9:xilinx_u250_gen3x16_xdma_shell_4_1:0 xmc=21320733401A drm=card2,renderD129 renderD129=e2:81 devname=dri/renderD129
numa: node0 node1 online=0-1
EOF2

run "fpga-opae discover" fpga-opae "$kdpctl" discover
expect "fpga-opae: an Arria 10 PAC on intel-fpga-pci" "$tmp/out" <<'EOF2'
ADDRESS         ID         CLASS   DRIVER          NUMA  IOMMU  SRIOV
0000:00:03.2    8086:352a  060400  pcieport        0     20
  0000:06:00.0  8086:09c4  120000  intel-fpga-pci  0     21     vfs=0/1
EOF2

run "fpga-opae table" fpga-opae bash -c "$table"
expect "fpga-opae: the fpga class container with its FME (DCP 1.2 interface) and port (NLB0)" "$tmp/out" <<'EOF2'
sys/dev/char 510:0 -> intel-fpga-port.0 /dev/char -> ../intel-fpga-port.0
sys/dev/char 511:0 -> intel-fpga-fme.0 /dev/char -> ../intel-fpga-fme.0
opae intel-fpga-dev.0 -> pci0000:00/0000:00:03.2/0000:06:00.0/fpga/intel-fpga-dev.0
  intel-fpga-fme.0 dev=511:0 node=1ff:0 driver=intel-fpga-fme ids=69528db6eb31577a8c3668f9faa081f6 errors=0x0
  intel-fpga-port.0 dev=510:0 node=1fe:0 driver=intel-fpga-afu ids=d8424dc4a4a3c413f89e433683f9040b errors=0x0
numa: node0 node1 online=0-1
EOF2

run "fpga-ofs discover" fpga-ofs "$kdpctl" discover
expect "fpga-ofs: an N3000 behind its switch beside 2 XXV710, an N6001 with its VF on dfl-pci" "$tmp/out" <<'EOF2'
ADDRESS             ID         CLASS   DRIVER    NUMA  IOMMU  SRIOV
0000:1c:00.0        8086:352a  060400  pcieport  0     30
  0000:1d:00.0      10b5:8747  060400  pcieport  0     31
    0000:1e:08.0    10b5:8747  060400  pcieport  0     32
      0000:1f:00.0  8086:0b30  120000  dfl-pci   0     35
    0000:1e:09.0    10b5:8747  060400  pcieport  0     33
      0000:20:00.0  8086:0d58  020000  i40e      0     36
      0000:20:00.1  8086:0d58  020000  i40e      0     36
    0000:1e:10.0    10b5:8747  060400  pcieport  0     34
      0000:21:00.0  8086:0d58  020000  i40e      0     37
      0000:21:00.1  8086:0d58  020000  i40e      0     37
0000:b0:00.0        8086:352a  060400  pcieport  1     60
  0000:b1:00.0      8086:bcce  120000  dfl-pci   1     61     vfs=1/1
  0000:b1:00.1      8086:bccf  120000  dfl-pci   1     62     pf=0000:b1:00.0
EOF2

run "fpga-ofs table" fpga-ofs bash -c "$table"
expect "fpga-ofs: the N6001's FME on the PF, its port in the VF's own base region" "$tmp/out" <<'EOF2'
region region0 -> pci0000:1c/0000:1c:00.0/0000:1d:00.0/0000:1e:08.0/0000:1f:00.0/fpga_region/region0 compat_id=-
region region1 -> pci0000:1c/0000:1c:00.0/0000:1d:00.0/0000:1e:08.0/0000:1f:00.0/fpga_region/region0/dfl-fme.0/dfl-fme-region.0/fpga_region/region1 compat_id=4cf24e3e1e1478dd865133c715349da9
region region2 -> pci0000:b0/0000:b0:00.0/0000:b1:00.0/fpga_region/region2 compat_id=-
region region3 -> pci0000:b0/0000:b0:00.0/0000:b1:00.0/fpga_region/region2/dfl-fme.1/dfl-fme-region.1/fpga_region/region3 compat_id=ad1a6421f6248f42134a3cc54413496a
region region4 -> pci0000:b0/0000:b0:00.0/0000:b1:00.1/fpga_region/region4 compat_id=-
fme dfl-fme.0 pci=0000:1f:00.0 dev=509:0 node=1fd:0 ports=1 errors=0x0,0x0,0x0,0x0,0x0 hwmon=hwmon3:dfl_fme_thermal hwmon4:dfl_fme_power mgr=operating/ bridge=enabled
fme dfl-fme.1 pci=0000:b1:00.0 dev=509:1 node=1fd:1 ports=1 errors=0x0,0x0,0x0,0x0,0x0 hwmon=hwmon5:dfl_fme_thermal hwmon6:dfl_fme_power mgr=operating/ bridge=enabled
port dfl-port.0 dev=508:0 node=1fc:0 id=0 afu_id=d8424dc4a4a3c413f89e433683f9040b errors=0x0 driver=dfl-port
port dfl-port.1 dev=508:1 node=1fc:1 id=0 afu_id=f7df405cbd7acf7222f144b0b93acd18 errors=0x0 driver=dfl-port
sys/dev/char 508:0 -> dfl-port.0 /dev/char -> ../dfl-port.0
sys/dev/char 508:1 -> dfl-port.1 /dev/char -> ../dfl-port.1
sys/dev/char 509:0 -> dfl-fme.0 /dev/char -> ../dfl-fme.0
sys/dev/char 509:1 -> dfl-fme.1 /dev/char -> ../dfl-fme.1
numa: node0 node1 online=0-1
EOF2
cp "$tmp/out" "$tmp/ofs.table"

# ---------------------------------------------------------------------------------------------
# The event scripts (run_script: tests/sim-node/lib.sh)

P1=/sys/devices/pci0000:d7/0000:d7:00.0/0000:d8:00.0/fpga_region/region2/dfl-port.1
run_script fpga-d5005 fpga-d5005-reprogram.script "file $P1/afu_id"
expect "d5005 reprogram: afu_id unreadable while busy, then NLB3; no uevent" "$tmp/events" <<EOT
ready udev
file $P1/afu_id dir:
mark busy
file $P1/afu_id text=f7df405cbd7acf7222f144b0b93acd18\\n
mark reprogrammed
EOT
expect "reprogram: the PCI tree is the one at load" "$tmp/end" < "$tmp/d5005.load"

run_script fpga-d5005 fpga-d5005-port-error.script "file $P1/errors/errors"
expect "d5005 port error: raised and cleared; no uevent" "$tmp/events" <<EOT
ready udev
file $P1/errors/errors text=0x4\\n
mark raised
file $P1/errors/errors text=0x0\\n
mark cleared
EOT

C1=/devices/pci0000:d7/0000:d7:00.0/0000:d8:00.0
F1=$C1/fpga_region/region2/dfl-fme.1
run_script fpga-d5005 fpga-d5005-unplug.script "file /sys/bus/pci/devices/0000:d8:00.0" "file /sys/class/fpga_region" \
        "file /dev/dfl-port.1" "file /dev/dfl-port.0"
expect "d5005 unplug: the DFL devices leave before the PF is unbound, children first; all come back before bind" \
        "$tmp/events" <<EOT
ready udev
event remove platform $C1/fpga_region/region2/dfl-port.1 DRIVER=dfl-port
event remove hwmon $F1/hwmon/hwmon6 DRIVER=-
event remove hwmon $F1/hwmon/hwmon5 DRIVER=-
event remove fpga_region $F1/dfl-fme-region.1/fpga_region/region3 DRIVER=-
event remove platform $F1/dfl-fme-region.1 DRIVER=dfl-fme-region
event remove fpga_manager $F1/dfl-fme-mgr.1/fpga_manager/fpga1 DRIVER=-
event remove platform $F1/dfl-fme-mgr.1 DRIVER=dfl-fme-mgr
event remove fpga_bridge $F1/dfl-fme-bridge.1.auto/fpga_bridge/br1 DRIVER=-
event remove platform $F1/dfl-fme-bridge.1.auto DRIVER=dfl-fme-bridge
event remove platform $F1 DRIVER=dfl-fme
event remove fpga_region $C1/fpga_region/region2 DRIVER=-
event unbind pci $C1 DRIVER=-
event remove pci $C1 DRIVER=-
file /sys/bus/pci/devices/0000:d8:00.0 missing
file /sys/class/fpga_region dir: region0 region1
file /dev/dfl-port.1 missing
file /dev/dfl-port.0 char 508:0
mark gone
event add pci $C1 DRIVER=-
event add fpga_region $C1/fpga_region/region2 DRIVER=-
event add platform $F1 DRIVER=dfl-fme
event add platform $F1/dfl-fme-bridge.1.auto DRIVER=dfl-fme-bridge
event add fpga_bridge $F1/dfl-fme-bridge.1.auto/fpga_bridge/br1 DRIVER=-
event add platform $F1/dfl-fme-mgr.1 DRIVER=dfl-fme-mgr
event add fpga_manager $F1/dfl-fme-mgr.1/fpga_manager/fpga1 DRIVER=-
event add platform $F1/dfl-fme-region.1 DRIVER=dfl-fme-region
event add fpga_region $F1/dfl-fme-region.1/fpga_region/region3 DRIVER=-
event add hwmon $F1/hwmon/hwmon5 DRIVER=-
event add hwmon $F1/hwmon/hwmon6 DRIVER=-
event add platform $C1/fpga_region/region2/dfl-port.1 DRIVER=dfl-port
event bind pci $C1 DRIVER=dfl-pci
file /sys/bus/pci/devices/0000:d8:00.0 link -> ../../../devices/pci0000:d7/0000:d7:00.0/0000:d8:00.0
file /sys/class/fpga_region dir: region0 region1 region2 region3
file /dev/dfl-port.1 char 508:1
file /dev/dfl-port.0 char 508:0
mark back
EOT
expect "unplug: the end state is the node at load" "$tmp/end" < "$tmp/d5005.load"

U=/sys/devices/pci0000:d7/0000:d7:00.0/0000:d8:00.1
run_script fpga-u250 fpga-u250-reset.script "file $U/dev_offline" "file $U/rom.u.9" "file $U/rom.u.12/VBNV"
expect "u250 reset: dev_offline 1 and rom.u.9 removed (its only uevent), then rom.u.12 and dev_offline 0" \
        "$tmp/events" <<EOT
ready udev
event remove platform ${U#/sys}/rom.u.9 DRIVER=rom.u
file $U/dev_offline text=1\\n
file $U/rom.u.9 missing
file $U/rom.u.12/VBNV missing
mark offline
file $U/dev_offline text=0\\n
file $U/rom.u.9 missing
file $U/rom.u.12/VBNV text=xilinx_u250_gen3x16_xdma_shell_4_1\\n
mark back
EOT
expect "reset: the PCI tree is the one at load" "$tmp/end" < "$tmp/u250.load"

VF=/devices/pci0000:b0/0000:b0:00.0/0000:b1:00.1
run_script fpga-ofs fpga-ofs-vf-off.script "file /sys/bus/pci/devices/0000:b1:00.0/sriov_numvfs" \
        "file /sys/class/fpga_region" "file /dev/dfl-port.1"
expect "ofs vf-off: the VF's port and base region go before the VF (no PF event)" "$tmp/events" <<EOT
ready udev
event remove platform $VF/fpga_region/region4/dfl-port.1 DRIVER=dfl-port
event remove fpga_region $VF/fpga_region/region4 DRIVER=-
event unbind pci $VF DRIVER=-
event remove pci $VF DRIVER=-
file /sys/bus/pci/devices/0000:b1:00.0/sriov_numvfs text=0\\n
file /sys/class/fpga_region dir: region0 region1 region2 region3
file /dev/dfl-port.1 missing
mark vf-off
EOT

# What the card holds outlives an unbind/bind or unplug/replug of its PCI function: the AFU a PR
# loaded (the emulated hardware's afu_id) and the fpga_manager's status of the last PR ("reconfig
# incompatible image" after a failed one, empty after a good one). The child runs each line of
# the request FIFO, then prints "done N"; the control FIFO drives sim-node.
# live FIXTURE: starts sim-node on FIXTURE with that child
live() {
        rm -f "$tmp/ctl" "$tmp/req" "$tmp/simout" "$tmp/simerr"
        mkfifo "$tmp/ctl" "$tmp/req"
        exec 3<>"$tmp/ctl" 4<>"$tmp/req"
        "${DIE_WITH_US[@]}" "$simnode" "$nodes/$1.umockdev" --control "$tmp/ctl" -- \
                bash -c 'n=0; echo ready; while read -r line; do eval "$line"; n=$((n + 1)); echo "done $n"; done' \
                < "$tmp/req" > "$tmp/simout" 2> "$tmp/simerr" 3>&- 4>&- &
        sim_pid=$!
        wait_text "$tmp/simout" '^ready$'
        asked=0
}
# ask COMMAND: runs COMMAND in the child, its output in $tmp/step
ask() {
        local before
        before=$(wc -l <"$tmp/simout")
        printf '%s\n' "$1" >&4
        asked=$((asked + 1))
        wait_text "$tmp/simout" "^done $asked\$"
        tail -n +$((before + 1)) "$tmp/simout" | grep -v "^done $asked\$" >"$tmp/step"
}
# control MARK LINE...: the LINEs to sim-node, then waits for "echo MARK"
control() {
        local mark=$1
        shift
        printf '%s\n' "$@" "echo $mark" >&3
        wait_text "$tmp/simout" "^$mark\$"
}
# stop_live: the child ends, sim-node exits 0 with nothing on stderr
stop_live() {
        local rc
        exec 4>&-
        wait "$sim_pid"
        rc=$?
        sim_pid=
        exec 3>&-
        [ $rc = 0 ] && [ ! -s "$tmp/simerr" ] && ok "$1: sim-node exits 0, nothing on stderr" ||
                fail "$1: rc=$rc $(cat "$tmp/simerr")"
}

NLB3=f7df405cbd7acf7222f144b0b93acd18
printf 'SIM-BITSTREAM afu_id=%s\nbits' "$NLB3" >"$tmp/nlb3.bin"
ports='for p in /sys/bus/platform/devices/dfl-port.*; do echo "${p##*/} $(cat $p/afu_id) $(basename $(readlink $p/driver))"; done; for m in /sys/class/fpga_manager/*; do echo "${m##*/} status=[$(cat $m/status)]"; done; ls /sys/bus/platform/devices | paste -sd" "; ls /dev | grep dfl | paste -sd" "'
live fpga-d5005
ask "$check fpga /dev/dfl-fme.1 0 $tmp/nlb3.bin | grep ^pr"
expect "fpga-d5005: a good PR of card 1" "$tmp/step" <<<"pr ok"
control rebound-1 "unbind 0000:d8:00.0" "bind 0000:d8:00.0 dfl-pci"
ask "$ports"
expect "fpga-d5005: unbind/bind of card 1 restores its platform devices and nodes, with the AFU its PR loaded" "$tmp/step" <<EOF2
dfl-port.0 d8424dc4a4a3c413f89e433683f9040b dfl-port
dfl-port.1 $NLB3 dfl-port
fpga0 status=[]
fpga1 status=[]
dfl-fme-bridge.0.auto dfl-fme-bridge.1.auto dfl-fme-mgr.0 dfl-fme-mgr.1 dfl-fme-region.0 dfl-fme-region.1 dfl-fme.0 dfl-fme.1 dfl-port.0 dfl-port.1
dfl-fme.0 dfl-fme.1 dfl-port.0 dfl-port.1
EOF2
control fail-1 "fpga-pr dfl-fme.1 fail"
ask "$check fpga /dev/dfl-fme.1 0 $tmp/nlb3.bin | grep ^pr; cat /sys/class/fpga_manager/fpga1/status"
expect "fpga-d5005: a failed PR leaves the manager's status as the kernel does" "$tmp/step" <<EOF2
pr errno=EIO
reconfig incompatible image
EOF2
control rebound-2 "unbind 0000:d8:00.0" "bind 0000:d8:00.0 dfl-pci" "unplug 0000:3b:00.0" "replug 0000:3b:00.0"
ask "$ports"
expect "fpga-d5005: the failed PR's status and the loaded AFU outlive unbind/bind; unplug/replug of card 0 restores it" "$tmp/step" <<EOF2
dfl-port.0 d8424dc4a4a3c413f89e433683f9040b dfl-port
dfl-port.1 $NLB3 dfl-port
fpga0 status=[]
fpga1 status=[reconfig incompatible image]
dfl-fme-bridge.0.auto dfl-fme-bridge.1.auto dfl-fme-mgr.0 dfl-fme-mgr.1 dfl-fme-region.0 dfl-fme-region.1 dfl-fme.0 dfl-fme.1 dfl-port.0 dfl-port.1
dfl-fme.0 dfl-fme.1 dfl-port.0 dfl-port.1
EOF2
control good-1 "fpga-pr dfl-fme.1 good 0"
ask "$check fpga /dev/dfl-fme.1 0 $tmp/nlb3.bin | grep ^pr; cat /sys/class/fpga_manager/fpga1/status | wc -c"
expect "fpga-d5005: the next good PR clears the status" "$tmp/step" <<EOF2
pr ok
0
EOF2
stop_live fpga-d5005-rebind

# the last /dev/dri node leaving takes /dev/dri with it (the BMC's by-path link removed first);
# a replug brings both back
live fpga-u250
control unplugged "rm dev/dri/by-path/pci-0000:02:00.0-card" "rm dev/dri/by-path" \
        "unplug 0000:02:00.0" "unplug 0000:3b:00.1" "unplug 0000:d8:00.1"
ask "ls /dev/dri 2>&1 | sed 's/.*: //'"
expect "fpga-u250: no DRM node left, no /dev/dri" "$tmp/step" <<<"No such file or directory"
control replugged "replug 0000:d8:00.1" "replug 0000:3b:00.1" "replug 0000:02:00.0"
ask "ls /dev/dri | paste -sd' '; stat -L -c %t:%T /dev/dri/renderD128 /dev/dri/renderD129"
expect "fpga-u250: replug brings back /dev/dri and its nodes" "$tmp/step" <<EOF2
by-path card0 card1 card2 renderD128 renderD129
e2:80
e2:81
EOF2
stop_live fpga-u250-replug

if [ $failures -gt 0 ]; then
        echo "$failures check(s) failed"
        exit 1
fi
echo "all checks passed"
