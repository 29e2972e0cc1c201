# SPDX-License-Identifier: GPL-2.0-or-later
# The FPGA backend on a simulated node with 2 Intel PAC D5005 (tests/fixtures/nodes/fpga-d5005),
# in each of its modes: the exact resource names of Intel's plugin, ports (af) or FMEs (region,
# regiondevel) as device IDs, NUMA, Allocate answers; then, in af mode, health polled from sysfs
# (a port error raised and cleared, a crashed AFU), a port reprogrammed to another AFU (it moves
# resource; PreStartContainer passes), and an unplug.
. "$(dirname "$0")/lib.sh"

NODE="$KDP_SOURCE_DIR/tests/fixtures/nodes/fpga-d5005.umockdev"
. "$(dirname "$0")/fpga-lib.sh"
AF=fpga.intel.com/af-bfa.d84.v6xNhR7oVv6MlYZc4buqLdhCTcSko8QT-J5DNoP5BAs
AF3=fpga.intel.com/af-bfa.f7d.v6xNhR7oVv6MlYZc4buqLfffQFy9es9yIvFEsLk6zRg
REGION=fpga.intel.com/region-bfac4d851ee856fe8c95865ce1bbaa2d
PORT1=sys/devices/pci0000:d7/0000:d7:00.0/0000:d8:00.0/fpga_region/region2/dfl-port.1
FME1=/devices/pci0000:d7/0000:d7:00.0/0000:d8:00.0/fpga_region/region2/dfl-fme.1

# ---- af (the default) ----
run_node af
wait_line "$KUBELET_OUT" "^devices resource=$AF "
grep -q 'sim-node: .*preload\|not built' "$T/kdpd-af.err" && { echo "skip: no simulated node"; exit 77; }
wait_devices $AF "^devices resource=$AF capacity=2 allocatable=2 healthy=dfl-port.0,dfl-port.1 unhealthy= numa=dfl-port.0:0;dfl-port.1:1$"
assert_eq "$(grep -c '^registered ' "$KUBELET_OUT")" 1 "one resource registered"
pass "af: 2 ports under Intel's af name, NUMA 0 and 1"

S=$(socket_of $AF)
assert_eq "$("$KDPCTL" allocate --socket "$S" dfl-port.1 | tr '\n' '|')" \
        "env KDP_FPGA_PCI_ADDRESSES=0000:d8:00.0|device /dev/dfl-port.1 /dev/dfl-port.1 rw|" "allocate port 1"
assert_eq "$("$KDPCTL" allocate --socket "$S" dfl-port.0 dfl-port.1 | tr '\n' '|')" \
        "env KDP_FPGA_PCI_ADDRESSES=0000:3b:00.0,0000:d8:00.0|device /dev/dfl-port.0 /dev/dfl-port.0 rw|device /dev/dfl-port.1 /dev/dfl-port.1 rw|" \
        "allocate both ports"
pass "af: Allocate gives the port nodes rw and the PCI addresses"

# polled health: a port error, then a crashed AFU (afu_id all f); each clears by itself
echo "set /${PORT1#sys/} errors/errors 0x4" >&9
wait_devices $AF "allocatable=1 healthy=dfl-port.0 unhealthy=dfl-port.1 "
wait_line "$T/kdpd-af.err" "\"Device became unhealthy\" resource=\"$AF\" device=\"dfl-port.1\" reason=\"port errors/errors 0x4\""
echo "set /${PORT1#sys/} errors/errors 0x0" >&9
wait_devices $AF "allocatable=2 healthy=dfl-port.0,dfl-port.1 unhealthy= "
echo "set $FME1 errors/catfatal_errors 0x1" >&9
wait_devices $AF "allocatable=1 healthy=dfl-port.0 unhealthy=dfl-port.1 "
wait_line "$T/kdpd-af.err" "\"Device became unhealthy\" resource=\"$AF\" device=\"dfl-port.1\" reason=\"card: FME errors/catfatal_errors 0x1\""
echo "set $FME1 errors/catfatal_errors 0x0" >&9
wait_devices $AF "allocatable=2 healthy=dfl-port.0,dfl-port.1 unhealthy= "
pass "af: a port error and a fatal FME error make the port unhealthy, with the reason; both recover"

# reprogrammed behind our back: the next scan moves the port (unit/fpga-backend: PreStart meanwhile)
echo "write $PORT1/afu_id f7df405cbd7acf7222f144b0b93acd18" >&9
wait_devices $AF3 "^devices resource=$AF3 capacity=1 allocatable=1 healthy=dfl-port.1 unhealthy= numa=dfl-port.1:1$"
wait_devices $AF "^devices resource=$AF capacity=1 allocatable=1 healthy=dfl-port.0 unhealthy= numa=dfl-port.0:0$"
wait_line "$T/kdpd-af.err" "\"FPGA moved to another resource\" backend=\"fpga\" device=\"dfl-port.1\" pciAddress=\"0000:d8:00.0\" from=\"$AF\" to=\"$AF3\""
pass "af: a reprogrammed port moves to its new AFU's resource; the old one stays registered"

S3=$(socket_of $AF3)
assert_eq "$("$KDPCTL" prestart --socket "$S3" dfl-port.1 2>&1)" "prestart ok" "PreStart of a port carrying its AFU"
echo "unplug 0000:d8:00.0" >&9
wait_devices $AF "allocatable=1 healthy=dfl-port.0 unhealthy= "
wait_devices $AF3 "^devices resource=$AF3 capacity=1 allocatable=0 healthy= unhealthy=dfl-port.1 "
wait_line "$T/kdpd-af.err" "\"Device (became unhealthy|unhealthy for another reason)\" resource=\"$AF3\" device=\"dfl-port.1\" reason=\"removed from the PCI bus\""
echo "replug 0000:d8:00.0" >&9
wait_devices $AF "^devices resource=$AF capacity=2 allocatable=2 healthy=dfl-port.0,dfl-port.1 unhealthy= "
pass "af: an unplugged card stays listed, unhealthy, and comes back whole"
stop_kdpd
stop_kubelet

# ---- region ----
run_node region -o fpga.mode=region
wait_devices $REGION "^devices resource=$REGION capacity=2 allocatable=2 healthy=dfl-fme.0,dfl-fme.1 unhealthy= numa=dfl-fme.0:0;dfl-fme.1:1$"
S=$(socket_of $REGION)
assert_eq "$("$KDPCTL" allocate --socket "$S" dfl-fme.1 | tr '\n' '|')" \
        "env KDP_FPGA_PCI_ADDRESSES=0000:d8:00.0|device /dev/dfl-port.1 /dev/dfl-port.1 rw|" "region: allocate FME 1"
echo "set /${PORT1#sys/} errors/errors 0x4" >&9
wait_devices $REGION "allocatable=1 healthy=dfl-fme.0 unhealthy=dfl-fme.1 "
wait_line "$T/kdpd-region.err" "\"Device became unhealthy\" resource=\"$REGION\" device=\"dfl-fme.1\" reason=\"dfl-port.1: port errors/errors 0x4\""
echo "set /${PORT1#sys/} errors/errors 0x0" >&9
wait_devices $REGION "allocatable=2 healthy=dfl-fme.0,dfl-fme.1 unhealthy= "
pass "region: FMEs under Intel's region name, every port node, a port's error names the port"
stop_kdpd
stop_kubelet

# ---- regiondevel ----
run_node regiondevel -o fpga.mode=regiondevel
wait_devices $REGION "^devices resource=$REGION capacity=2 allocatable=2 healthy=dfl-fme.0,dfl-fme.1 unhealthy= numa=dfl-fme.0:0;dfl-fme.1:1$"
S=$(socket_of $REGION)
assert_eq "$("$KDPCTL" allocate --socket "$S" dfl-fme.0 | tr '\n' '|')" \
        "env KDP_FPGA_PCI_ADDRESSES=0000:3b:00.0|device /dev/dfl-fme.0 /dev/dfl-fme.0 rw|device /dev/dfl-port.0 /dev/dfl-port.0 rw|" \
        "regiondevel: allocate FME 0"
pass "regiondevel: the FME node too"
stop_kdpd
pass "kdpd stopped cleanly"
