# SPDX-License-Identifier: GPL-2.0-or-later
# PreStartContainer programming on the simulated 2× PAC D5005 node (tests/fixtures/nodes/fpga-d5005,
# whose FME nodes sim-node emulates): a port reprogrammed behind kdp's back stays under its resource
# and is programmed back from bitstream_dir before the container starts; without the bitstream it
# is Unhealthy and the start fails, naming the card and both AFU IDs; a slow programming of one card shows its port
# Unhealthy "programming" while Allocate and PreStart of the other card answer.
. "$(dirname "$0")/lib.sh"

NODE="$KDP_SOURCE_DIR/tests/fixtures/nodes/fpga-d5005.umockdev"
. "$(dirname "$0")/fpga-lib.sh"
AF=fpga.intel.com/af-bfa.d84.v6xNhR7oVv6MlYZc4buqLdhCTcSko8QT-J5DNoP5BAs
AF3=fpga.intel.com/af-bfa.f7d.v6xNhR7oVv6MlYZc4buqLfffQFy9es9yIvFEsLk6zRg
IFID=bfac4d851ee856fe8c95865ce1bbaa2d
NLB0=d8424dc4a4a3c413f89e433683f9040b
NLB3=f7df405cbd7acf7222f144b0b93acd18
BITS="$T/bitstreams"
write_gbs "$BITS" $IFID $NLB0

run_node prog -o fpga.bitstream_dir="$BITS"
ERR="$T/kdpd-prog.err"
wait_line "$KUBELET_OUT" "^devices resource=$AF "
grep -q 'sim-node: .*preload\|not built' "$ERR" && { echo "skip: no simulated node"; exit 77; }
wait_devices $AF "^devices resource=$AF capacity=2 allocatable=2 healthy=dfl-port.0,dfl-port.1 unhealthy= numa=dfl-port.0:0;dfl-port.1:1$"
S=$(socket_of $AF)

# drifted: with bitstream_dir the port stays under AF, and PreStart programs NLB0 back
echo "drift platform/dfl-port.1 $NLB3" >&9
echo "echo drifted-1" >&9
wait_line "$T/kdpd-prog.out" '^drifted-1$'
assert_eq "$("$KDPCTL" prestart --socket "$S" dfl-port.1 2>&1)" "prestart ok" "PreStart of a drifted port"
wait_line "$ERR" "\"Programming the port before the container start\" backend=\"fpga\" device=\"dfl-port.1\" card=\"0000:d8:00.0\" want=\"$NLB0\" have=\"$NLB3\" bitstream=\"$BITS/$IFID/$NLB0.gbs\"$"
wait_line "$ERR" "\"Programmed the port before the container start\" backend=\"fpga\" device=\"dfl-port.1\" card=\"0000:d8:00.0\" afu=\"$NLB0\"$"
assert_eq "$(grep -c '^registered ' "$KUBELET_OUT")" 1 "no other resource registered"
assert_eq "$(grep -c 'FPGA moved to another resource' "$ERR")" 0 "the port never moved"
pass "a drifted port stays under its resource and is programmed back in PreStart"

# no bitstream for the promised AFU: Unhealthy with why, and the start fails naming the card and both IDs
rm "$BITS/$IFID/$NLB0.gbs"
echo "drift platform/dfl-port.1 $NLB3" >&9
wait_line "$ERR" "\"Device became unhealthy\" resource=\"$AF\" device=\"dfl-port.1\" reason=\"carries AFU $NLB3; no bitstream $BITS/$IFID/$NLB0.gbs\"$"
wait_devices $AF "^devices resource=$AF capacity=2 allocatable=1 healthy=dfl-port.0 unhealthy=dfl-port.1 "
assert_eq "$("$KDPCTL" prestart --socket "$S" dfl-port.1 2>&1)" "error: code=NOT_FOUND message=PreStartContainer failed: No such file or directory" \
        "PreStart of a drifted port without its bitstream"
wait_line "$ERR" "\"Cannot program the port before the container start\" backend=\"fpga\" device=\"dfl-port.1\" card=\"0000:d8:00.0\" want=\"$NLB0\" have=\"$NLB3\" reason=\"card 0000:d8:00.0 port dfl-port.1 carries AFU $NLB3, not AFU $NLB0, and there is no bitstream $BITS/$IFID/$NLB0.gbs\" err=\"No such file or directory\"$"
pass "without its bitstream a drifted port is Unhealthy and fails the start, naming the card and both AFU IDs"

# slow: card 1 programs until told to finish; card 0 answers meanwhile
write_gbs "$BITS" $IFID $NLB0
echo "fpga-pr dfl-fme.1 slow 3600000" >&9
"${DIE_WITH_US[@]}" "$KDPCTL" prestart --socket "$S" --timeout 0 dfl-port.1 >"$T/slow.out" 2>&1 &
SLOW_PID=$!
PIDS+=($SLOW_PID)
wait_line "$ERR" "\"Device (became unhealthy|unhealthy for another reason)\" resource=\"$AF\" device=\"dfl-port.1\" reason=\"programming\""
assert_eq "$("$KDPCTL" allocate --socket "$S" dfl-port.0 | tr '\n' '|')" \
        "env KDP_FPGA_PCI_ADDRESSES=0000:3b:00.0|device /dev/dfl-port.0 /dev/dfl-port.0 rw|" "Allocate of card 0 meanwhile"
assert_eq "$("$KDPCTL" prestart --socket "$S" dfl-port.0 2>&1)" "prestart ok" "PreStart of card 0 meanwhile"
[ -s "$T/slow.out" ] && fail "PreStart of card 1 answered before its programming ended: $(cat "$T/slow.out")"
echo "fpga-pr dfl-fme.1 good 0" >&9
wait_line "$T/slow.out" '^prestart ok$'
wait_devices $AF "^devices resource=$AF capacity=2 allocatable=2 healthy=dfl-port.0,dfl-port.1 unhealthy= "
pass "a slow programming holds only its card: Allocate and PreStart of the other answer, the port is Unhealthy \"programming\" meanwhile"
stop_kdpd
pass "kdpd stopped cleanly"
