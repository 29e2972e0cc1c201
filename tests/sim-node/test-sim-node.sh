#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# sim-node/rig: the simulated-node rig end to end. sim-check runs under sim-node on each fixture
# in tests/fixtures/nodes/ and must see (a) exactly the modelled devices through libudev and
# libpci, and (b) exactly the uevents, in the kernel's order, that the script drives through
# sim-node's --control FIFO and --script, with sysfs changing to match; (c) and (d) check
# sim-node's own contract and a umockdev limit, (d') a listener that falls behind; (e) the plain
# files beside a fixture (FIXTURE.files/) in /proc, /dev and /sys, the /dev/kmsg FIFO byte for
# byte, and rm / write / mkdir as the child sees them. Exit 77 = skipped.
# ok() never fails, so "[ ... ] && ok ... || fail ..." is an if-then-else; the single-quoted
# bash -c scripts expand their $0 $1 ... in the child, as intended.
# shellcheck disable=SC2015,SC2016
set -u

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
fixtures=$nodes
two=$fixtures/two-socket-switches.umockdev
flap=$fixtures/flapping-device.umockdev

# wait_for FILE REGEX [SECONDS]: deadline 30 s, stretched by SLOW
wait_for() {
        local file=$1 re=$2 end
        end=$(deadline_ms "${3:-30}")
        while [ "$(now_ms)" -lt "$end" ]; do
                grep -qE -- "$re" "$file" 2>/dev/null && return 0
                sleep 0.02
        done
        fail "timed out waiting for /$re/ in $(basename "$file")"
        echo "--- $file"; sed 's/^/    /' "$file" 2>/dev/null
        echo "--- sim-node stderr"; sed 's/^/    /' "$tmp/simerr" 2>/dev/null
        exit 1
}

# ---------------------------------------------------------------------------------------------
# (a) enumeration

"${DIE_WITH_US[@]}" "$simnode" "$two" -- "$check" enum > "$tmp/enum-two" 2> "$tmp/enum-two.err"
rc=$?
[ $rc = 0 ] || fail "sim-check enum on two-socket-switches exited $rc: $(cat "$tmp/enum-two.err")"

expect "two-socket-switches: libpci sees the 34 functions" <(grep '^libpci ' "$tmp/enum-two") <<'EOF'
libpci 0000:15:01.0 8086:352a class=0604 numa=0 driver=pcieport iommu=20
libpci 0000:16:00.0 1000:c030 class=0604 numa=0 driver=pcieport iommu=21
libpci 0000:17:00.0 1000:c030 class=0604 numa=0 driver=pcieport iommu=22
libpci 0000:17:01.0 1000:c030 class=0604 numa=0 driver=pcieport iommu=23
libpci 0000:17:02.0 1000:c030 class=0604 numa=0 driver=pcieport iommu=24
libpci 0000:18:00.0 10de:2330 class=0302 numa=0 driver=nvidia iommu=30
libpci 0000:19:00.0 10de:2330 class=0302 numa=0 driver=nvidia iommu=31
libpci 0000:1a:00.0 15b3:101d class=0200 numa=0 driver=mlx5_core iommu=32
libpci 0000:1a:00.2 15b3:101e class=0200 numa=0 driver=mlx5_core iommu=33
libpci 0000:1a:00.3 15b3:101e class=0200 numa=0 driver=mlx5_core iommu=34
libpci 0000:26:01.0 8086:352a class=0604 numa=0 driver=pcieport iommu=25
libpci 0000:27:00.0 144d:a80a class=0108 numa=0 driver=nvme iommu=35
libpci 0000:37:01.0 8086:352a class=0604 numa=0 driver=pcieport iommu=36
libpci 0000:38:00.0 1000:c030 class=0604 numa=0 driver=pcieport iommu=37
libpci 0000:39:00.0 1000:c030 class=0604 numa=0 driver=pcieport iommu=38
libpci 0000:39:01.0 1000:c030 class=0604 numa=0 driver=pcieport iommu=39
libpci 0000:3a:00.0 10de:2330 class=0302 numa=0 driver=nvidia iommu=40
libpci 0000:3b:00.0 10de:2330 class=0302 numa=0 driver=nvidia iommu=41
libpci 0000:97:01.0 8086:352a class=0604 numa=1 driver=pcieport iommu=60
libpci 0000:98:00.0 1000:c030 class=0604 numa=1 driver=pcieport iommu=61
libpci 0000:99:00.0 1000:c030 class=0604 numa=1 driver=pcieport iommu=62
libpci 0000:99:01.0 1000:c030 class=0604 numa=1 driver=pcieport iommu=63
libpci 0000:99:02.0 1000:c030 class=0604 numa=1 driver=pcieport iommu=64
libpci 0000:9a:00.0 10de:2330 class=0302 numa=1 driver=nvidia iommu=70
libpci 0000:9b:00.0 10de:2330 class=0302 numa=1 driver=nvidia iommu=71
libpci 0000:9c:00.0 15b3:101d class=0200 numa=1 driver=mlx5_core iommu=72
libpci 0000:9c:00.2 15b3:101e class=0200 numa=1 driver=mlx5_core iommu=73
libpci 0000:9c:00.3 15b3:101e class=0200 numa=1 driver=mlx5_core iommu=74
libpci 0000:b7:01.0 8086:352a class=0604 numa=1 driver=pcieport iommu=76
libpci 0000:b8:00.0 1000:c030 class=0604 numa=1 driver=pcieport iommu=77
libpci 0000:b9:00.0 1000:c030 class=0604 numa=1 driver=pcieport iommu=78
libpci 0000:b9:01.0 1000:c030 class=0604 numa=1 driver=pcieport iommu=79
libpci 0000:ba:00.0 10de:2330 class=0302 numa=1 driver=nvidia iommu=80
libpci 0000:bb:00.0 10de:2330 class=0302 numa=1 driver=nvidia iommu=81
EOF

# libudev must agree with libpci function by function (same IDs, NUMA node, driver, group),
# every /sys/bus/pci/devices/<bdf> must resolve to the directory libudev enumerated, and every
# driver link must resolve to /sys/bus/pci/drivers/<driver>
grep '^udev-pci ' "$tmp/enum-two" | sort | awk '{
        split($4, c, "="); cls = substr(c[2], 3, 4)
        printf "libpci %s %s class=%s %s %s %s\n", $2, $3, cls, $5, $6, $7 }' |
        expect "two-socket-switches: libudev agrees with libpci" <(grep '^libpci ' "$tmp/enum-two")
n=$(grep '^udev-pci ' "$tmp/enum-two" | grep -c ' bus-link=ok driver-dir=/sys/bus/pci/drivers/')
[ "$n" = 34 ] && ok "two-socket-switches: bus links and driver links resolve inside the testbed" ||
        fail "only $n of 34 udev-pci lines have bus-link=ok and a resolved driver dir"
n=$(grep -c '^udev-pci .* 10de:2330 class=0x030200 numa=0 driver=nvidia .*PCI_ID=10DE:2330 ' "$tmp/enum-two")
m=$(grep -c '^udev-pci .* 10de:2330 class=0x030200 numa=1 driver=nvidia .*PCI_ID=10DE:2330 ' "$tmp/enum-two")
[ "$n/$m" = 4/4 ] && ok "two-socket-switches: 4 H100 per NUMA node" || fail "H100 per NUMA node: $n/$m, want 4/4"

expect "two-socket-switches: class devices and counts" <(grep -E '^(net|node|nvme|block|counts) ' "$tmp/enum-two") <<'EOF'
net ens1f0np0 parent=0000:1a:00.0 device-link=ok operstate=up carrier=1
net ens1f0v0 parent=0000:1a:00.2 device-link=ok operstate=up carrier=1
net ens1f0v1 parent=0000:1a:00.3 device-link=ok operstate=up carrier=1
net ens2f0np0 parent=0000:9c:00.0 device-link=ok operstate=up carrier=1
net ens2f0v0 parent=0000:9c:00.2 device-link=ok operstate=up carrier=1
net ens2f0v1 parent=0000:9c:00.3 device-link=ok operstate=up carrier=1
node node0 cpulist=0-55,112-167
node node1 cpulist=56-111,168-223
nvme nvme0 parent=0000:27:00.0 devnode=/dev/nvme0 type=char
block nvme0n1 parent=nvme0 devnode=/dev/nvme0n1 type=block
counts udev-pci=34 libpci=34 net=6 node=2 nvme=1 block=1
EOF

"${DIE_WITH_US[@]}" "$simnode" "$flap" -- "$check" enum > "$tmp/enum-flap" 2> "$tmp/enum-flap.err"
rc=$?
[ $rc = 0 ] || fail "sim-check enum on flapping-device exited $rc: $(cat "$tmp/enum-flap.err")"
expect "flapping-device: libudev and libpci see the VM's 5 functions" "$tmp/enum-flap" <<'EOF'
udev-pci 0000:00:00.0 8086:29c0 class=0x060000 numa=-1 driver=- iommu=- PCI_ID=8086:29C0 bus-link=ok driver-dir=-
udev-pci 0000:00:01.0 1b36:000c class=0x060400 numa=-1 driver=pcieport iommu=- PCI_ID=1B36:000C bus-link=ok driver-dir=/sys/bus/pci/drivers/pcieport
udev-pci 0000:01:00.0 10de:20f1 class=0x030200 numa=-1 driver=nvidia iommu=- PCI_ID=10DE:20F1 bus-link=ok driver-dir=/sys/bus/pci/drivers/nvidia
udev-pci 0000:00:02.0 1b36:000c class=0x060400 numa=-1 driver=pcieport iommu=- PCI_ID=1B36:000C bus-link=ok driver-dir=/sys/bus/pci/drivers/pcieport
udev-pci 0000:02:00.0 10de:20f1 class=0x030200 numa=-1 driver=nvidia iommu=- PCI_ID=10DE:20F1 bus-link=ok driver-dir=/sys/bus/pci/drivers/nvidia
libpci 0000:00:00.0 8086:29c0 class=0600 numa=-1 driver=- iommu=-
libpci 0000:00:01.0 1b36:000c class=0604 numa=-1 driver=pcieport iommu=-
libpci 0000:00:02.0 1b36:000c class=0604 numa=-1 driver=pcieport iommu=-
libpci 0000:01:00.0 10de:20f1 class=0302 numa=-1 driver=nvidia iommu=-
libpci 0000:02:00.0 10de:20f1 class=0302 numa=-1 driver=nvidia iommu=-
counts udev-pci=5 libpci=5 net=0 node=0 nvme=0 block=0
EOF

# ---------------------------------------------------------------------------------------------
# (b) events through --control, on two-socket-switches, with a "udev" monitor in the child

R=/devices/pci0000:15/0000:15:01.0
USP=$R/0000:16:00.0
G0=$USP/0000:17:00.0/0000:18:00.0
PF=$USP/0000:17:02.0/0000:1a:00.0

mkfifo "$tmp/ctl" "$tmp/req"
exec 3<>"$tmp/ctl" 4<>"$tmp/req"       # read-write opens never block
"${DIE_WITH_US[@]}" "$simnode" "$two" --control "$tmp/ctl" -- \
        bash -c 'exec "$0" monitor udev < "$1" > "$2"' "$check" "$tmp/req" "$tmp/events" \
        > "$tmp/simout" 2> "$tmp/simerr" 3>&- 4>&- &
sim_pid=$!
wait_for "$tmp/events" '^ready udev$'

# step NAME COMMANDS... -- REQUESTS...: runs the commands through the FIFO, waits until sim-node
# has done them, sends the requests to sim-check, and leaves what sim-check printed since the
# previous step (events first, then the answers) in $tmp/step. sim-check writes to $events.
mark=0
events=$tmp/events
step() {
        local name=$1 prev=$mark
        shift
        while [ $# -gt 0 ] && [ "$1" != -- ]; do
                printf '%s\n' "$1" >&3
                shift
        done
        [ $# -gt 0 ] && shift
        mark=$((mark + 1))
        printf 'wait 60000\necho done %s\n' $mark >&3
        wait_for "$tmp/simout" "^done $mark\$"
        while [ $# -gt 0 ]; do
                printf '%s\n' "$1" >&4
                shift
        done
        printf 'mark %s\n' $mark >&4
        wait_for "$events" "^mark $mark\$"
        awk -v a="mark $prev" -v b="mark $mark" '$0 == b { exit } p { print } $0 == a { p = 1 }' \
                "$events" > "$tmp/step"
        [ $prev = 0 ] && sed -i '/^ready udev$/d' "$tmp/step"
        cat > "$tmp/step.want"
        expect "$name" "$tmp/step" < "$tmp/step.want"
}
printf 'mark 0\n' >&4
wait_for "$tmp/events" '^mark 0$'

step "unbind: driver link and DRIVER= gone, enable 0, one unbind without DRIVER" \
        "unbind 0000:18:00.0" -- "check /sys$G0" <<EOF
event unbind pci $G0 DRIVER=-
check /sys$G0 exists=1 link=1 driver=- DRIVER=- enable=0
EOF

step "bind: the link is back at the record's depth, bind carries DRIVER=nvidia" \
        "bind 18:00.0 nvidia" -- "check /sys$G0" "attr /sys$G0 uevent" <<EOF
event bind pci $G0 DRIVER=nvidia
check /sys$G0 exists=1 link=1 driver=nvidia DRIVER=nvidia enable=1
attr /sys$G0 uevent=SUBSYSTEM=pci\\nDRIVER=nvidia\\nPCI_CLASS=30200\\nPCI_ID=10DE:2330\\nPCI_SUBSYS_ID=10DE:16C1\\nPCI_SLOT_NAME=0000:18:00.0\\nMODALIAS=pci:v000010DEd00002330sv000010DEsd000016C1bc03sc02i00\\n
EOF

step "unplug GPU: unbind then remove; directory, bus link and libpci entry gone" \
        "unplug 0000:18:00.0" -- "check /sys$G0" count <<EOF
event unbind pci $G0 DRIVER=-
event remove pci $G0 DRIVER=-
check /sys$G0 exists=0 link=0 driver=- DRIVER=- enable=-
count udev-pci=33 libpci=33
EOF

step "replug GPU: add without a driver, then bind" \
        "replug 0000:18:00.0" -- "check /sys$G0" count <<EOF
event add pci $G0 DRIVER=-
event bind pci $G0 DRIVER=nvidia
check /sys$G0 exists=1 link=1 driver=nvidia DRIVER=nvidia enable=1
count udev-pci=34 libpci=34
EOF

step "unbind NIC PF: its netdev goes first" \
        "unbind 0000:1a:00.0" -- "check /sys$PF" "check /sys$PF/net/ens1f0np0" <<EOF
event remove net $PF/net/ens1f0np0 DRIVER=-
event unbind pci $PF DRIVER=-
check /sys$PF exists=1 link=1 driver=- DRIVER=- enable=0
check /sys$PF/net/ens1f0np0 exists=0 link=0 driver=- DRIVER=- enable=-
EOF

step "bind NIC PF: probe adds the netdev before bind" \
        "bind 0000:1a:00.0 mlx5_core" -- "check /sys$PF/net/ens1f0np0" <<EOF
event add net $PF/net/ens1f0np0 DRIVER=-
event bind pci $PF DRIVER=mlx5_core
check /sys$PF/net/ens1f0np0 exists=1 link=1 driver=- DRIVER=- enable=-
EOF

VF0=$USP/0000:17:02.0/0000:1a:00.2
step "rebind a VF to vfio-pci: its netdev goes and stays away" \
        "unbind 0000:1a:00.2" "bind 0000:1a:00.2 vfio-pci" -- "check /sys$VF0" "check /sys$VF0/net/ens1f0v0" <<EOF
event remove net $VF0/net/ens1f0v0 DRIVER=-
event unbind pci $VF0 DRIVER=-
event bind pci $VF0 DRIVER=vfio-pci
check /sys$VF0 exists=1 link=1 driver=vfio-pci DRIVER=vfio-pci enable=1
check /sys$VF0/net/ens1f0v0 exists=0 link=0 driver=- DRIVER=- enable=-
EOF

step "back to mlx5_core: the netdev returns before bind" \
        "unbind 1a:00.2" "bind 1a:00.2 mlx5_core" -- "check /sys$VF0" <<EOF
event unbind pci $VF0 DRIVER=-
event add net $VF0/net/ens1f0v0 DRIVER=-
event bind pci $VF0 DRIVER=mlx5_core
check /sys$VF0 exists=1 link=1 driver=mlx5_core DRIVER=mlx5_core enable=1
EOF

VF1=$USP/0000:17:02.0/0000:1a:00.3
step "a netdev alone leaves (moved to another netns): net remove, the VF and its driver stay" \
        "unplug net/ens1f0v1" -- "check /sys$VF1" "check /sys$VF1/net/ens1f0v1" <<EOF
event remove net $VF1/net/ens1f0v1 DRIVER=-
check /sys$VF1 exists=1 link=1 driver=mlx5_core DRIVER=mlx5_core enable=1
check /sys$VF1/net/ens1f0v1 exists=0 link=0 driver=- DRIVER=- enable=-
EOF

step "the netdev returns: net add only" \
        "replug net/ens1f0v1" -- "check /sys$VF1/net/ens1f0v1" <<EOF
event add net $VF1/net/ens1f0v1 DRIVER=-
check /sys$VF1/net/ens1f0v1 exists=1 link=1 driver=- DRIVER=- enable=-
EOF

step "SR-IOV off, then the PF unplugged: the VFs go first, then the PF" \
        "sriov 0000:1a:00.0 0" "unplug 0000:1a:00.0" -- "check /sys$VF0" "check /sys$PF" count <<EOF
event remove net $VF0/net/ens1f0v0 DRIVER=-
event unbind pci $VF0 DRIVER=-
event remove pci $VF0 DRIVER=-
event remove net $VF1/net/ens1f0v1 DRIVER=-
event unbind pci $VF1 DRIVER=-
event remove pci $VF1 DRIVER=-
event remove net $PF/net/ens1f0np0 DRIVER=-
event unbind pci $PF DRIVER=-
event remove pci $PF DRIVER=-
check /sys$VF0 exists=0 link=0 driver=- DRIVER=- enable=-
check /sys$PF exists=0 link=0 driver=- DRIVER=- enable=-
count udev-pci=31 libpci=31
EOF

step "replug the PF: the VFs its record enables come with it (added after it, probed after it)" \
        "replug 0000:1a:00.0" -- "check /sys$VF1" "attr /sys$PF sriov_numvfs" count <<EOF
event add pci $PF DRIVER=-
event add pci $VF0 DRIVER=-
event add pci $VF1 DRIVER=-
event add net $PF/net/ens1f0np0 DRIVER=-
event bind pci $PF DRIVER=mlx5_core
event add net $VF0/net/ens1f0v0 DRIVER=-
event bind pci $VF0 DRIVER=mlx5_core
event add net $VF1/net/ens1f0v1 DRIVER=-
event bind pci $VF1 DRIVER=mlx5_core
check /sys$VF1 exists=1 link=1 driver=mlx5_core DRIVER=mlx5_core enable=1
attr /sys$PF sriov_numvfs=2\\n
count udev-pci=34 libpci=34
EOF

S=$USP/0000:17
: > "$tmp/switch-events"                # the two switch steps' events, for (d') below
step "unplug a whole switch: drivers stop children-first, then the devices go" \
        "unplug 0000:16:00.0" -- "check /sys$USP" "check /sys$G0" count <<EOF
event remove net ${S}:02.0/0000:1a:00.3/net/ens1f0v1 DRIVER=-
event unbind pci ${S}:02.0/0000:1a:00.3 DRIVER=-
event remove net ${S}:02.0/0000:1a:00.2/net/ens1f0v0 DRIVER=-
event unbind pci ${S}:02.0/0000:1a:00.2 DRIVER=-
event remove net ${S}:02.0/0000:1a:00.0/net/ens1f0np0 DRIVER=-
event unbind pci ${S}:02.0/0000:1a:00.0 DRIVER=-
event unbind pci ${S}:02.0 DRIVER=-
event unbind pci ${S}:01.0/0000:19:00.0 DRIVER=-
event unbind pci ${S}:01.0 DRIVER=-
event unbind pci ${S}:00.0/0000:18:00.0 DRIVER=-
event unbind pci ${S}:00.0 DRIVER=-
event unbind pci $USP DRIVER=-
event remove pci ${S}:02.0/0000:1a:00.3 DRIVER=-
event remove pci ${S}:02.0/0000:1a:00.2 DRIVER=-
event remove pci ${S}:02.0/0000:1a:00.0 DRIVER=-
event remove pci ${S}:02.0 DRIVER=-
event remove pci ${S}:01.0/0000:19:00.0 DRIVER=-
event remove pci ${S}:01.0 DRIVER=-
event remove pci ${S}:00.0/0000:18:00.0 DRIVER=-
event remove pci ${S}:00.0 DRIVER=-
event remove pci $USP DRIVER=-
check /sys$USP exists=0 link=0 driver=- DRIVER=- enable=-
check /sys$G0 exists=0 link=0 driver=- DRIVER=- enable=-
count udev-pci=25 libpci=25
EOF
grep '^event ' "$tmp/step" >> "$tmp/switch-events"

step "replug a whole switch: rescan adds bus by bus, then drivers probe bus by bus" \
        "replug 0000:16:00.0" -- "check /sys$USP" "check /sys$G0" "check /sys$PF/net/ens1f0np0" count <<EOF
event add pci $USP DRIVER=-
event add pci ${S}:00.0 DRIVER=-
event add pci ${S}:01.0 DRIVER=-
event add pci ${S}:02.0 DRIVER=-
event add pci ${S}:00.0/0000:18:00.0 DRIVER=-
event add pci ${S}:01.0/0000:19:00.0 DRIVER=-
event add pci ${S}:02.0/0000:1a:00.0 DRIVER=-
event add pci ${S}:02.0/0000:1a:00.2 DRIVER=-
event add pci ${S}:02.0/0000:1a:00.3 DRIVER=-
event bind pci $USP DRIVER=pcieport
event bind pci ${S}:00.0 DRIVER=pcieport
event bind pci ${S}:01.0 DRIVER=pcieport
event bind pci ${S}:02.0 DRIVER=pcieport
event bind pci ${S}:00.0/0000:18:00.0 DRIVER=nvidia
event bind pci ${S}:01.0/0000:19:00.0 DRIVER=nvidia
event add net ${S}:02.0/0000:1a:00.0/net/ens1f0np0 DRIVER=-
event bind pci ${S}:02.0/0000:1a:00.0 DRIVER=mlx5_core
event add net ${S}:02.0/0000:1a:00.2/net/ens1f0v0 DRIVER=-
event bind pci ${S}:02.0/0000:1a:00.2 DRIVER=mlx5_core
event add net ${S}:02.0/0000:1a:00.3/net/ens1f0v1 DRIVER=-
event bind pci ${S}:02.0/0000:1a:00.3 DRIVER=mlx5_core
check /sys$USP exists=1 link=1 driver=pcieport DRIVER=pcieport enable=1
check /sys$G0 exists=1 link=1 driver=nvidia DRIVER=nvidia enable=1
check /sys$PF/net/ens1f0np0 exists=1 link=1 driver=- DRIVER=- enable=-
count udev-pci=34 libpci=34
EOF

grep '^event ' "$tmp/step" >> "$tmp/switch-events"

step "set: attributes change with no uevent (AER counter, link state)" \
        'set 0000:18:00.0 aer_dev_fatal Undefined 0\nDLP 0\nSDES 0\nTLP 0\nFCP 0\nCmpltTO 1\nCmpltAbrt 0\nUnxCmplt 0\nRxOF 0\nMalfTLP 0\nECRC 0\nUnsupReq 0\nACSViol 0\nUncorrIntErr 0\nBlockedTLP 0\nAtomicOpBlocked 0\nTLPBlockedErr 0\nPoisonTLPBlocked 0\nTOTAL_ERR_FATAL 1' \
        "set net/ens1f0np0 operstate down" "set net/ens1f0np0 carrier 0" -- \
        "attr /sys$G0 aer_dev_fatal" "attr /sys$PF/net/ens1f0np0 operstate" \
        "attr /sys$PF/net/ens1f0np0 carrier" <<EOF
attr /sys$G0 aer_dev_fatal=Undefined 0\\nDLP 0\\nSDES 0\\nTLP 0\\nFCP 0\\nCmpltTO 1\\nCmpltAbrt 0\\nUnxCmplt 0\\nRxOF 0\\nMalfTLP 0\\nECRC 0\\nUnsupReq 0\\nACSViol 0\\nUncorrIntErr 0\\nBlockedTLP 0\\nAtomicOpBlocked 0\\nTLPBlockedErr 0\\nPoisonTLPBlocked 0\\nTOTAL_ERR_FATAL 1\\n
attr /sys$PF/net/ens1f0np0 operstate=down\\n
attr /sys$PF/net/ens1f0np0 carrier=0\\n
EOF

step "uevent: AER recovery change events carry their keys once; the uevent file keeps none" \
        "uevent 0000:18:00.0 change ERROR_EVENT=BEGIN_RECOVERY DEVICE_ONLINE=0" \
        "uevent /sys$G0 change ERROR_EVENT=SUCCESSFUL_RECOVERY DEVICE_ONLINE=1" \
        "uevent net/ens1f0np0 change" -- "attr /sys$G0 uevent" <<EOF
event change pci $G0 DRIVER=nvidia ERROR_EVENT=BEGIN_RECOVERY DEVICE_ONLINE=0
event change pci $G0 DRIVER=nvidia ERROR_EVENT=SUCCESSFUL_RECOVERY DEVICE_ONLINE=1
event change net $PF/net/ens1f0np0 DRIVER=-
attr /sys$G0 uevent=SUBSYSTEM=pci\\nDRIVER=nvidia\\nPCI_CLASS=30200\\nPCI_ID=10DE:2330\\nPCI_SUBSYS_ID=10DE:16C1\\nPCI_SLOT_NAME=0000:18:00.0\\nMODALIAS=pci:v000010DEd00002330sv000010DEsd000016C1bc03sc02i00\\n
EOF

grep -q '^error' "$tmp/events" && fail "sim-check reported: $(grep '^error' "$tmp/events")"
exec 4>&-                               # sim-check sees EOF and exits 0
wait "$sim_pid"
rc=$?
sim_pid=
[ $rc = 0 ] && ok "control session: sim-node exits with the child's status" || fail "control session exit $rc"
[ -s "$tmp/simerr" ] && fail "sim-node wrote to stderr: $(cat "$tmp/simerr")"
exec 3>&-

# ---------------------------------------------------------------------------------------------
# (b') a scripted flap with sleeps, a "kernel" monitor, on flapping-device

cat > "$tmp/flap.script" <<'EOF'
# flap the GPU at 0000:01:00.0 three times; 0000:02:00.0 stays
wait-listeners 1 60000
unplug 0000:01:00.0
sleep 30
replug 0000:01:00.0
sleep 30
unplug 01:00.0
replug 01:00.0
unplug /sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0
sleep 10
replug /devices/pci0000:00/0000:00:01.0/0000:01:00.0
wait 60000
echo flapped
EOF
mkfifo "$tmp/req2"
exec 4<>"$tmp/req2"
"${DIE_WITH_US[@]}" "$simnode" "$flap" --script "$tmp/flap.script" -- \
        bash -c 'exec "$0" monitor kernel < "$1" > "$2"' "$check" "$tmp/req2" "$tmp/events2" \
        > "$tmp/simout" 2> "$tmp/simerr" 4>&- &
sim_pid=$!
wait_for "$tmp/simout" '^flapped$'
printf 'count\ncheck /sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0\nmark end\n' >&4
wait_for "$tmp/events2" '^mark end$'
exec 4>&-
wait "$sim_pid"
rc=$?
sim_pid=
F=/devices/pci0000:00/0000:00:01.0/0000:01:00.0
expect "script: three flaps of one GPU, exact events, the other GPU untouched" "$tmp/events2" <<EOF
ready kernel
event unbind pci $F DRIVER=-
event remove pci $F DRIVER=-
event add pci $F DRIVER=-
event bind pci $F DRIVER=nvidia
event unbind pci $F DRIVER=-
event remove pci $F DRIVER=-
event add pci $F DRIVER=-
event bind pci $F DRIVER=nvidia
event unbind pci $F DRIVER=-
event remove pci $F DRIVER=-
event add pci $F DRIVER=-
event bind pci $F DRIVER=nvidia
count udev-pci=5 libpci=5
check /sys$F exists=1 link=1 driver=nvidia DRIVER=nvidia enable=1
mark end
EOF
[ $rc = 0 ] && ok "script session exits 0" || fail "script session exit $rc: $(cat "$tmp/simerr")"

# ---------------------------------------------------------------------------------------------
# (c) sim-node's own contract: exit codes and messages

"${DIE_WITH_US[@]}" "$simnode" "$flap" -- sh -c 'exit 7'
rc=$?
[ $rc = 7 ] && ok "the child's exit code comes back" || fail "child exit 7 came back as $rc"

"${DIE_WITH_US[@]}" "$simnode" "$flap" -- sh -c 'kill -TERM $$'
rc=$?
[ $rc = 143 ] && ok "a child killed by SIGTERM gives 143" || fail "SIGTERM child gave $rc"

# SIGTERM to sim-node goes on to the child; a child that ignores it is SIGKILLed (at a second
# SIGTERM, or 30 s after the first if the two arrive as one): sim-node then exits 137
"${DIE_WITH_US[@]}" "$simnode" "$flap" -- bash -c 'trap "" TERM; echo "$$"; exec sleep 600' \
        > "$tmp/out" 2> "$tmp/err" &
sim_pid=$!
wait_for "$tmp/out" '^[0-9]+$'
child=$(cat "$tmp/out")
kill -TERM "$sim_pid"
sleep 0.2
kill -TERM "$sim_pid"
wait_gone 60 "$sim_pid"
wait "$sim_pid"
rc=$?
sim_pid=
[ $rc = 137 ] && ! proc_alive "$child" && ok "a child that ignores SIGTERM is SIGKILLed: 137" ||
        fail "child ignoring SIGTERM: rc=$rc, child $(proc_alive "$child" && echo alive || echo gone)"

# the child dies with sim-node, even when sim-node is SIGKILLed
"${DIE_WITH_US[@]}" "$simnode" "$flap" -- bash -c 'echo "$$"; exec sleep 600' > "$tmp/out" 2> "$tmp/err" &
sim_pid=$!
wait_for "$tmp/out" '^[0-9]+$'
child=$(cat "$tmp/out")
kill -KILL "$sim_pid"
{ wait "$sim_pid"; } 2>/dev/null
sim_pid=
wait_gone 30 "$child"
proc_alive "$child" && fail "the child outlived a SIGKILLed sim-node" || ok "the child dies with a SIGKILLed sim-node"

printf 'unplug 0000:01:00.0\nfrobnicate 0000:01:00.0\n' > "$tmp/bad.script"
"${DIE_WITH_US[@]}" "$simnode" "$flap" --script "$tmp/bad.script" -- sh -c 'echo child-ran' > "$tmp/out" 2> "$tmp/err"
rc=$?
[ $rc = 2 ] && [ ! -s "$tmp/out" ] && grep -q "line 2: unknown command 'frobnicate'" "$tmp/err" &&
        ok "a bad script line fails before the child starts (exit 2)" ||
        fail "bad script: rc=$rc out=$(cat "$tmp/out") err=$(cat "$tmp/err")"

printf 'unplug 0000:05:00.0\n' > "$tmp/bad.script"
"${DIE_WITH_US[@]}" "$simnode" "$flap" --script "$tmp/bad.script" -- sleep 30 2> "$tmp/err"
rc=$?
[ $rc = 2 ] && grep -q "no device '0000:05:00.0'" "$tmp/err" &&
        ok "an unknown address stops the child and exits 2" || fail "unknown address: rc=$rc $(cat "$tmp/err")"

printf 'unbind 0000:00:00.0\n' > "$tmp/bad.script"
"${DIE_WITH_US[@]}" "$simnode" "$flap" --script "$tmp/bad.script" -- sleep 30 2> "$tmp/err"
rc=$?
[ $rc = 2 ] && grep -q "unbind: /devices/pci0000:00/0000:00:00.0 has no driver" "$tmp/err" &&
        ok "unbinding a device without a driver exits 2" || fail "unbind unbound: rc=$rc $(cat "$tmp/err")"

# a record with virtfn links but sriov_numvfs 0: enabling VFs is refused by name, not a SIGTRAP
# from umockdev's symlink
sed '/^P: .*0000:1a:00.0$/,/^$/s/^A: sriov_numvfs=2/A: sriov_numvfs=0/' "$two" > "$tmp/inconsistent.umockdev"
printf 'sriov 0000:1a:00.0 1\n' > "$tmp/bad.script"
"${DIE_WITH_US[@]}" "$simnode" "$tmp/inconsistent.umockdev" --script "$tmp/bad.script" -- sleep 30 2> "$tmp/err"
rc=$?
[ $rc = 2 ] && grep -qx "sim-node: sriov: $USP/0000:17:02.0/0000:1a:00.0 has virtfn0 already while sriov_numvfs was 0 (its record is inconsistent)" "$tmp/err" &&
        ok "enabling VFs over a record's own virtfn links exits 2, naming the link" ||
        fail "inconsistent PF record: rc=$rc $(cat "$tmp/err")"

printf 'wait-listeners 1 200\n' > "$tmp/bad.script"
"${DIE_WITH_US[@]}" "$simnode" "$flap" --script "$tmp/bad.script" -- sleep 30 2> "$tmp/err"
rc=$?
[ $rc = 2 ] && grep -q "wait-listeners: 0 of 1 listener(s) after 200 ms" "$tmp/err" &&
        ok "wait-listeners times out with exit 2" || fail "wait-listeners: rc=$rc $(cat "$tmp/err")"

{ echo '# a comment'; cat "$flap"; } > "$tmp/commented.umockdev"
"${DIE_WITH_US[@]}" "$simnode" "$tmp/commented.umockdev" -- true 2> "$tmp/err"
rc=$?
[ $rc = 2 ] && grep -q "comments are not part of the umockdev 0.17 record format" "$tmp/err" &&
        ok "a '#' line in a fixture is refused with exit 2" || fail "comment: rc=$rc $(cat "$tmp/err")"

"${DIE_WITH_US[@]}" "$simnode" "$tmp/missing.umockdev" -- true 2> "$tmp/err"
rc=$?
[ $rc = 2 ] && grep -q "cannot read fixture" "$tmp/err" && ok "a missing fixture exits 2" ||
        fail "missing fixture: rc=$rc $(cat "$tmp/err")"

"${DIE_WITH_US[@]}" "$simnode" "$flap" -- /nonexistent/program 2> "$tmp/err"
rc=$?
[ $rc = 2 ] && grep -q "cannot run '/nonexistent/program'" "$tmp/err" && ok "a command that cannot run exits 2" ||
        fail "exec failure: rc=$rc $(cat "$tmp/err")"

env -u LD_PRELOAD "$build/tests/sim-node/sim-node" "$flap" -- true 2> "$tmp/err"
rc=$?
[ $rc = 77 ] && grep -q "preload library is not loaded" "$tmp/err" && ok "without the preload: exit 77" ||
        fail "no preload: rc=$rc $(cat "$tmp/err")"

# two fixtures load side by side into one testbed
"${DIE_WITH_US[@]}" "$simnode" -f "$flap" -f "$two" -- "$check" enum > "$tmp/out" 2> "$tmp/err"
grep -q '^counts udev-pci=39 libpci=39 net=6 node=2 nvme=1 block=1$' "$tmp/out" &&
        ok "-f twice: both fixtures in one testbed" || fail "two fixtures: $(tail -1 "$tmp/out") $(cat "$tmp/err")"

# a listener that reads nothing for a while: umockdev would exit sim-node at the 11th unread uevent
# (the kernel's datagram queue is full); sim-node holds the rest back until the listener has read
mkfifo "$tmp/req5" "$tmp/ctl5"
exec 3<>"$tmp/ctl5" 4<>"$tmp/req5"
"${DIE_WITH_US[@]}" "$simnode" "$two" --control "$tmp/ctl5" -- \
        bash -c 'echo "$$" > "$3"; exec "$0" monitor udev < "$1" > "$2"' "$check" "$tmp/req5" "$tmp/events5" \
        "$tmp/pid5" > "$tmp/simout" 2> "$tmp/simerr" 3>&- 4>&- &
sim_pid=$!
wait_for "$tmp/events5" '^ready udev$'
listener=$(cat "$tmp/pid5")
kill -STOP "$listener"
printf 'unplug 0000:16:00.0\nreplug 0000:16:00.0\necho stormed\n' >&3
sleep 1                                         # sim-node sends up to the limit meanwhile
kill -CONT "$listener"
wait_for "$tmp/simout" '^stormed$'
printf 'wait 60000\necho drained\n' >&3
wait_for "$tmp/simout" '^drained$'
n=$(grep -c '^event ' "$tmp/events5")
exec 4>&-
wait "$sim_pid"
rc=$?
sim_pid=
exec 3>&-
[ $rc = 0 ] && [ "$n" = 42 ] && ! grep -q sendmsg "$tmp/simerr" &&
        ok "a listener that stops reading gets all 42 events of a switch unplug and replug, late" ||
        fail "a listener that stops reading: rc=$rc, $n events, $(cat "$tmp/simerr")"

# ---------------------------------------------------------------------------------------------
# (c') vfio group devices follow vfio-pci: /dev/vfio/<N> exists while a member of group N is on
# vfio-pci. Group 5 is shared by 00:01.0 (vfio-pci) and 00:02.0 (foo), group 6 holds 00:03.0 (foo).

vfio_fn() {     # vfio_fn DEV DRIVER GROUP
        printf 'P: /devices/pci0000:00/0000:00:%s\nE: SUBSYSTEM=pci\nE: DRIVER=%s\nE: PCI_SLOT_NAME=0000:00:%s\nA: vendor=0x8086\\n\nA: device=0x1889\\n\nA: class=0x020000\\n\nL: driver=../../../bus/pci/drivers/%s\nL: iommu_group=../../../kernel/iommu_groups/%s\n\n' \
                "$1" "$2" "$1" "$2" "$3"
}
{
        vfio_fn 01.0 vfio-pci 5; vfio_fn 02.0 foo 5; vfio_fn 03.0 foo 6
        for g in 5 6; do
                printf 'P: /devices/virtual/vfio/%s\nE: SUBSYSTEM=vfio\nE: MAJOR=236\nE: MINOR=%s\nE: DEVNAME=vfio/%s\nA: dev=236:%s\\n\nN: vfio/%s\n\n' \
                        $g $g $g $g $g
        done
} > "$tmp/vfio.umockdev"
cat > "$tmp/vfio.script" <<'EOF'
wait-listeners 1 60000
unbind 0000:00:03.0
bind 0000:00:03.0 vfio-pci
unbind 0000:00:02.0
bind 0000:00:02.0 vfio-pci
unbind 0000:00:01.0
unbind 0000:00:02.0
unbind 0000:00:03.0
wait 60000
echo vfio-done
EOF
mkfifo "$tmp/req6"
exec 4<>"$tmp/req6"
"${DIE_WITH_US[@]}" "$simnode" "$tmp/vfio.umockdev" --script "$tmp/vfio.script" -- \
        bash -c 'ls /dev/vfio > "$3"; exec "$0" monitor udev < "$1" > "$2"' "$check" "$tmp/req6" "$tmp/events6" \
        "$tmp/vfio.load" > "$tmp/simout" 2> "$tmp/simerr" 4>&- &
sim_pid=$!
wait_for "$tmp/simout" '^vfio-done$'
printf 'file /dev/vfio\nfile /sys/devices/virtual/vfio\nmark end\n' >&4
wait_for "$tmp/events6" '^mark end$'
exec 4>&-
wait "$sim_pid"
rc=$?
sim_pid=
V=/devices/pci0000:00/0000:00
echo 5 | expect "vfio groups: at load only group 5 (a member on vfio-pci) has its node" "$tmp/vfio.load"
expect "vfio groups: the node comes before the first vfio-pci bind of its group, goes before the last unbind" "$tmp/events6" <<EOF
ready udev
event unbind pci $V:03.0 DRIVER=-
event add vfio /devices/virtual/vfio/6 DRIVER=-
event bind pci $V:03.0 DRIVER=vfio-pci
event unbind pci $V:02.0 DRIVER=-
event bind pci $V:02.0 DRIVER=vfio-pci
event unbind pci $V:01.0 DRIVER=-
event remove vfio /devices/virtual/vfio/5 DRIVER=-
event unbind pci $V:02.0 DRIVER=-
event remove vfio /devices/virtual/vfio/6 DRIVER=-
event unbind pci $V:03.0 DRIVER=-
file /dev/vfio missing
file /sys/devices/virtual/vfio missing
mark end
EOF
[ $rc = 0 ] && [ ! -s "$tmp/simerr" ] && ok "vfio session exits 0, nothing on stderr" || fail "vfio session: rc=$rc $(cat "$tmp/simerr")"

# ---------------------------------------------------------------------------------------------
# (d) the umockdev limit "wait" reports: monitors on the same fd number in two processes

mkfifo "$tmp/ra" "$tmp/rb" "$tmp/ctl2"
exec 3<>"$tmp/ctl2" 4<>"$tmp/ra" 5<>"$tmp/rb"
# one after the other: opened at the same moment, the second bind() can even fail (EADDRINUSE)
"${DIE_WITH_US[@]}" "$simnode" "$flap" --control "$tmp/ctl2" -- bash -c '
        "$0" monitor udev < "$1" > "$2" &
        until grep -q "^ready" "$2" 2>/dev/null; do sleep 0.01; done
        "$0" monitor udev < "$3" > "$4" &
        wait' "$check" "$tmp/ra" "$tmp/ea" "$tmp/rb" "$tmp/eb" > "$tmp/simout" 2> "$tmp/simerr" 3>&- 4>&- 5>&- &
sim_pid=$!
wait_for "$tmp/ea" '^ready udev$'
wait_for "$tmp/eb" '^ready udev$'
printf 'uevent 0000:02:00.0 change\nwait 60000\necho sent\n' >&3
wait_for "$tmp/simout" '^sent$'
printf 'mark x\n' >&4
printf 'mark x\n' >&5
wait_for "$tmp/ea" '^mark x$'
wait_for "$tmp/eb" '^mark x$'
exec 3>&- 4>&- 5>&-
wait "$sim_pid"
sim_pid=
na=$(grep -c '^event ' "$tmp/ea")
nb=$(grep -c '^event ' "$tmp/eb")
[ $((na + nb)) = 1 ] && grep -q 'two uevent listeners were bound to .*/event' "$tmp/simerr" &&
        ok "same fd number in two processes: one of them gets the event, and wait says so" ||
        fail "shadowed listeners: a=$na b=$nb stderr=$(cat "$tmp/simerr")"

# ---------------------------------------------------------------------------------------------
# (d') a listener that falls behind: its socket holds 11 unread uevents (net.unix.max_dgram_qlen
# + 1) and umockdev's sender aborts on the next; sim-node waits for the reader instead, and the
# reader gets every uevent, in order. The switch's unplug and replug are 42 uevents.

mkfifo "$tmp/ctl3" "$tmp/req4"
exec 3<>"$tmp/ctl3" 4<>"$tmp/req4"
"$simnode" -v "$two" --control "$tmp/ctl3" -- \
        bash -c 'exec "$0" monitor udev < "$1" > "$2"' "$check" "$tmp/req4" "$tmp/events4" \
        > "$tmp/simout" 2> "$tmp/simerr" 3>&- 4>&- &
sim_pid=$!
wait_for "$tmp/events4" '^ready udev$'
printf 'hold %s\n' "$tmp/release" >&4
wait_for "$tmp/events4" '^held$'
printf 'unplug 0000:16:00.0\nreplug 0000:16:00.0\nwait\necho sent\n' >&3
wait_for "$tmp/simerr" '^sim-node: flow control: 1 listener\(s\) hold unread uevents' 60
touch "$tmp/release"
wait_for "$tmp/simout" '^sent$' 60
printf 'mark y\n' >&4
wait_for "$tmp/events4" '^mark y$'
exec 3>&- 4>&-
wait "$sim_pid"
rc=$?
sim_pid=
[ $rc = 0 ] && ok "a listener that falls behind: sim-node waits for it and exits with the child's status" ||
        fail "slow listener: sim-node exit $rc: $(grep -v '^sim-node: \(uevent\|add\|remove\) ' "$tmp/simerr")"
expect "a listener that falls behind gets all 42 uevents of the switch's unplug and replug, in order" \
        "$tmp/switch-events" < <(grep '^event ' "$tmp/events4")
grep -q '^error' "$tmp/events4" && fail "sim-check reported: $(grep '^error' "$tmp/events4")"

# ---------------------------------------------------------------------------------------------
# (e) plain files beside a fixture (FIXTURE.files/), /dev/kmsg, and rm / write / mkdir

fdir=$tmp/files
mkdir -p "$fdir/node.files/proc/driver/nvidia/gpus/0000:01:00.0" \
        "$fdir/node.files/proc/driver/nvidia/gpus/0000:02:00.0" \
        "$fdir/node.files/proc/driver/nvidia/capabilities/gpu0/mig" \
        "$fdir/node.files/dev/.node" "$fdir/node.files/sys/module/nvidia"
cp "$flap" "$fdir/node.umockdev"
info() {        # info MINOR BDF: an information file as the driver prints it (docs/hardware-gpu.md §3.1)
        printf 'Model: \t\t NVIDIA A100-PCIE-40GB\nBus Location: \t %s\nDevice Minor: \t %s\nGPU Excluded:\t No\n' "$2" "$1"
}
info 0 0000:01:00.0 > "$fdir/node.files/proc/driver/nvidia/gpus/0000:01:00.0/information"
info 1 0000:02:00.0 > "$fdir/node.files/proc/driver/nvidia/gpus/0000:02:00.0/information"
: > "$fdir/node.files/proc/driver/nvidia/capabilities/gpu0/mig/.gitkeep"
ln -s gpus/0000:02:00.0 "$fdir/node.files/proc/driver/nvidia/latest"
: > "$fdir/node.files/dev/nvidia0"
: > "$fdir/node.files/dev/nvidiactl"
: > "$fdir/node.files/dev/kmsg"
ln -s 195:0 "$fdir/node.files/dev/.node/nvidia0"
ln -s 195:255 "$fdir/node.files/dev/.node/nvidiactl"
ln -s 1:11 "$fdir/node.files/dev/.node/kmsg"
printf '595.45.04\n' > "$fdir/node.files/sys/module/nvidia/version"
echo "notes, not copied" > "$fdir/node.files/SOURCE.md"
node=$fdir/node.umockdev
P=/proc/driver/nvidia
INFO0='Model: \t\t NVIDIA A100-PCIE-40GB\nBus Location: \t 0000:01:00.0\nDevice Minor: \t 0\nGPU Excluded:\t No'
INFO1='Model: \t\t NVIDIA A100-PCIE-40GB\nBus Location: \t 0000:02:00.0\nDevice Minor: \t 1\nGPU Excluded:\t No'

"${DIE_WITH_US[@]}" "$simnode" "$node" -- bash -c '"$0" files "$@"; [ -e "$UMOCKDEV_DIR/SOURCE.md" ] && echo SOURCE.md copied
        [ -r /proc/self/status ] || echo "/proc/self/status hidden"' "$check" $P/gpus \
        $P/gpus/0000:01:00.0/information $P/gpus/0000:02:00.0/information $P/latest \
        $P/capabilities/gpu0/mig /dev/nvidia0 /dev/nvidiactl /dev/kmsg /sys/module/nvidia/version \
        > "$tmp/out" 2> "$tmp/err"
expect "files: the copied tree is what the child sees in /proc, /dev and /sys" "$tmp/out" <<EOF
file $P/gpus dir: 0000:01:00.0 0000:02:00.0
file $P/gpus/0000:01:00.0/information text=$INFO0\\n
file $P/gpus/0000:02:00.0/information text=$INFO1\\n
file $P/latest link -> gpus/0000:02:00.0
file $P/capabilities/gpu0/mig dir:
file /dev/nvidia0 char 195:0
file /dev/nvidiactl char 195:255
file /dev/kmsg char 1:11
file /sys/module/nvidia/version text=595.45.04\\n
EOF
[ -s "$tmp/err" ] && fail "files: stderr: $(cat "$tmp/err")"

"${DIE_WITH_US[@]}" "$simnode" "$two" -- "$check" files /dev/nvme0 /dev/nvme0n1 > "$tmp/out" 2>&1
expect "records: a /dev node made from an N: line has the record's device number" "$tmp/out" <<'EOF'
file /dev/nvme0 char 240:0
file /dev/nvme0n1 block 259:0
EOF

"${DIE_WITH_US[@]}" "$simnode" "$node" -- "$check" kmsg 0 > "$tmp/out" 2>&1
expect "kmsg: a reader of the empty log gets EAGAIN, never EOF" "$tmp/out" <<'EOF'
kmsg empty
EOF

# exact bytes: a record, one with continuation lines (\n), one whose other backslashes stay
cat > "$tmp/kmsg.script" <<'EOF'
kmsg 4,8820,91234570700,c;NVRM: Xid (PCI:0000:01:00): 79, pid=0, GPU has fallen off the bus.
kmsg 4,2105,88123456,-;pcieport 0000:00:01.0: AER: Corrected error received: 0000:01:00.0\n SUBSYSTEM=pci\n DEVICE=+pci:0000:00:01.0
kmsg 6,2106,88123457,-;a \t and a \\ and \x0a stay, so do trailing blanks  
echo sent
EOF
printf '%s\n' '4,8820,91234570700,c;NVRM: Xid (PCI:0000:01:00): 79, pid=0, GPU has fallen off the bus.' \
        '4,2105,88123456,-;pcieport 0000:00:01.0: AER: Corrected error received: 0000:01:00.0' \
        ' SUBSYSTEM=pci' ' DEVICE=+pci:0000:00:01.0' \
        '6,2106,88123457,-;a \t and a \\ and \x0a stay, so do trailing blanks  ' > "$tmp/kmsg.want"
"${DIE_WITH_US[@]}" "$simnode" "$node" --script "$tmp/kmsg.script" -- "$check" kmsg "$(wc -c < "$tmp/kmsg.want")" \
        > "$tmp/out" 2> "$tmp/err"
rc=$?
# sim-check prints the bytes with \n \t \\ escapes
{ printf 'kmsg text='; sed 's/\\/\\\\/g' "$tmp/kmsg.want" | awk '{ printf "%s\\n", $0 } END { print "" }'; echo sent; } \
        > "$tmp/kmsg.text"
expect "kmsg: records arrive through the FIFO as exact bytes; only \\n becomes a newline" "$tmp/kmsg.text" \
        < <(sort "$tmp/out")
[ $rc = 0 ] && [ ! -s "$tmp/err" ] && ok "kmsg session exits 0" || fail "kmsg session: rc=$rc $(cat "$tmp/err")"

# rm / write / mkdir through --control, seen by a child that stays
mkfifo "$tmp/ctl3" "$tmp/req3"
exec 3<>"$tmp/ctl3" 4<>"$tmp/req3"
events=$tmp/events3
"${DIE_WITH_US[@]}" "$simnode" "$node" --control "$tmp/ctl3" -- \
        bash -c 'exec "$0" monitor udev < "$1" > "$2"' "$check" "$tmp/req3" "$events" \
        > "$tmp/simout" 2> "$tmp/simerr" 3>&- 4>&- &
sim_pid=$!
wait_for "$events" '^ready udev$'
mark=0
printf 'mark 0\n' >&4
wait_for "$events" '^mark 0$'
G1=/devices/pci0000:00/0000:00:01.0/0000:01:00.0

step "rm: the proc entry of an unbound GPU vanishes, its /dev node stays" \
        "unbind 0000:01:00.0" "rm proc/driver/nvidia/gpus/0000:01:00.0" -- \
        "file $P/gpus" "file $P/gpus/0000:01:00.0/information" "file /dev/nvidia0" <<EOF
event unbind pci $G1 DRIVER=-
file $P/gpus dir: 0000:02:00.0
file $P/gpus/0000:01:00.0/information missing
file /dev/nvidia0 char 195:0
EOF

step "write: the entry comes back on bind (parents created, escapes expanded, newline appended)" \
        "bind 0000:01:00.0 nvidia" "write proc/driver/nvidia/gpus/0000:01:00.0/information $INFO0" -- \
        "file $P/gpus" "file $P/gpus/0000:01:00.0/information" <<EOF
event bind pci $G1 DRIVER=nvidia
file $P/gpus dir: 0000:01:00.0 0000:02:00.0
file $P/gpus/0000:01:00.0/information text=$INFO0\\n
EOF

step "mkdir and write: a MIG instance appears, a file's text is replaced" \
        "mkdir proc/driver/nvidia/capabilities/gpu0/mig/gi1/ci0" \
        'write proc/driver/nvidia/capabilities/gpu0/mig/gi1/access DeviceFileMinor: 12\nDeviceFileMode: 292\nDeviceFileModify: 1' \
        "write sys/module/nvidia/version 595.58.02" -- \
        "file $P/capabilities/gpu0/mig/gi1" "file $P/capabilities/gpu0/mig/gi1/access" \
        "file /sys/module/nvidia/version" <<EOF
file $P/capabilities/gpu0/mig/gi1 dir: access ci0
file $P/capabilities/gpu0/mig/gi1/access text=DeviceFileMinor: 12\\nDeviceFileMode: 292\\nDeviceFileModify: 1\\n
file /sys/module/nvidia/version text=595.58.02\\n
EOF

step "rm: a link goes, not its target; a directory goes with everything in it" \
        "rm proc/driver/nvidia/latest" "rm proc/driver/nvidia/capabilities" -- \
        "file $P" "file $P/gpus/0000:02:00.0/information" <<EOF
file $P dir: gpus
file $P/gpus/0000:02:00.0/information text=$INFO1\\n
EOF

grep -q '^error' "$events" && fail "sim-check reported: $(grep '^error' "$events")"
exec 4>&-
wait "$sim_pid"
rc=$?
sim_pid=
[ $rc = 0 ] && [ ! -s "$tmp/simerr" ] && ok "files session exits 0, nothing on stderr" ||
        fail "files session: rc=$rc $(cat "$tmp/simerr")"
exec 3>&-

# bad paths fail before the child starts; a missing one when the command runs
for cmd in "rm /etc/hostname" "write proc/../../x y" "mkdir ../x" "rm ." "rm"; do
        printf '%s\n' "$cmd" > "$tmp/bad.script"
        "${DIE_WITH_US[@]}" "$simnode" "$node" --script "$tmp/bad.script" -- sh -c 'echo child-ran' > "$tmp/out" 2> "$tmp/err"
        rc=$?
        [ $rc = 2 ] && [ ! -s "$tmp/out" ] &&
                grep -qE "is not a path below the testbed root|usage: rm PATH" "$tmp/err" &&
                ok "'$cmd' is refused before the child starts (exit 2)" ||
                fail "'$cmd': rc=$rc out=$(cat "$tmp/out") err=$(cat "$tmp/err")"
done
printf 'rm proc/driver/nvidia/nothing\n' > "$tmp/bad.script"
"${DIE_WITH_US[@]}" "$simnode" "$node" --script "$tmp/bad.script" -- sleep 30 2> "$tmp/err"
rc=$?
[ $rc = 2 ] && grep -q "rm: proc/driver/nvidia/nothing: No such file or directory" "$tmp/err" &&
        ok "rm of a missing path exits 2" || fail "rm missing: rc=$rc $(cat "$tmp/err")"
printf 'kmsg 4,1,1,-;x\n' > "$tmp/bad.script"
"${DIE_WITH_US[@]}" "$simnode" "$flap" --script "$tmp/bad.script" -- sleep 30 2> "$tmp/err"
rc=$?
[ $rc = 2 ] && grep -q "kmsg: the testbed has no dev/kmsg FIFO" "$tmp/err" &&
        ok "kmsg without a dev/kmsg placeholder exits 2" || fail "kmsg without FIFO: rc=$rc $(cat "$tmp/err")"
ln -s /etc/hostname "$fdir/node.files/proc/abs"
"${DIE_WITH_US[@]}" "$simnode" "$node" -- sh -c 'echo child-ran' > "$tmp/out" 2> "$tmp/err"
rc=$?
[ $rc = 2 ] && [ ! -s "$tmp/out" ] && grep -q "absolute link target '/etc/hostname'" "$tmp/err" &&
        ok "an absolute link in a files tree is refused (exit 2)" || fail "absolute link: rc=$rc $(cat "$tmp/err")"
rm "$fdir/node.files/proc/abs"
mkdir -p "$fdir/node.files/sys/bus/pci/devices"
: > "$fdir/node.files/sys/bus/pci/devices/0000:01:00.0"
"${DIE_WITH_US[@]}" "$simnode" "$node" -- sh -c 'echo child-ran' > "$tmp/out" 2> "$tmp/err"
rc=$?
[ $rc = 2 ] && [ ! -s "$tmp/out" ] && grep -q "sys/bus/pci/devices/0000:01:00.0 is already in the testbed" "$tmp/err" &&
        ok "a files tree never overwrites what the records made (exit 2)" || fail "collision: rc=$rc $(cat "$tmp/err")"
rm -r "$fdir/node.files/sys/bus"

if [ $failures -gt 0 ]; then
        echo "$failures check(s) failed"
        exit 1
fi
echo "all checks passed"
