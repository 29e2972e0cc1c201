# SPDX-License-Identifier: GPL-2.0-or-later
# PreStartContainer programming on the simulated 2× PAC D5005 node (tests/fixtures/nodes/fpga-d5005,
# whose FME nodes sim-node emulates): a port reprogrammed behind kdp's back stays under its resource
# and is programmed back from bitstream_dir before the container starts; without the bitstream it
# is Unhealthy and the start fails, naming the card and both AFU IDs; a slow programming of one card shows its port
# Unhealthy "programming" while Allocate and PreStart of the other card answer. Then `program`:
# a declared card programmed at start, again at a reload after a drift (slowly: "programming"
# meanwhile), and a failing programming leaving the port Unhealthy until the next reload; the same
# in region modes, where the card's FME is the unit that is Unhealthy meanwhile and after a failure.
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

# drift_reload OUT PR_MODE TAG: card 1's port drifts to NLB0, its FME answers PR_MODE, then a reload
drift_reload() {
        echo "drift platform/dfl-port.1 $NLB0" >&9
        echo "fpga-pr dfl-fme.1 $2" >&9
        echo "echo $3" >&9
        wait_line "$1" "^$3\$"
        kill -HUP "$KDPD_PID"
}

run_node prog -o fpga.bitstream_dir="$BITS"
node_serves prog $AF
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
wait_line "$ERR" "\"Device (became unhealthy|unhealthy for another reason)\" resource=\"$AF\" device=\"dfl-port.1\" reason=\"carries AFU $NLB3; no bitstream $BITS/$IFID/$NLB0.gbs\"$"
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

# a PreStart whose deadline passes while it waits in the queue (behind a programming of the same
# port) never runs the hook: its caller gets DEADLINE_EXCEEDED, kdpd logs it once, and after the
# first programming fails, only a later PreStart programs the card again
PROGRAMMING="\"Programming the port before the container start\" backend=\"fpga\" device=\"dfl-port.1\""
before=$(count_lines "$ERR" "$PROGRAMMING")
echo "drift platform/dfl-port.1 $NLB3" >&9
echo "fpga-pr dfl-fme.1 slow 3600000" >&9
echo "echo drifted-q" >&9
wait_line "$T/kdpd-prog.out" '^drifted-q$'
"${DIE_WITH_US[@]}" "$KDPCTL" prestart --socket "$S" --timeout 0 dfl-port.1 >"$T/first.out" 2>&1 &
PIDS+=($!)
wait_count "$ERR" "$PROGRAMMING" $((before + 1))
assert_eq "$("$KDPCTL" prestart --socket "$S" --timeout $((2 * SLOW)) dfl-port.1 2>&1)" \
        "error: code=DEADLINE_EXCEEDED message=Deadline Exceeded" "PreStart whose deadline passed in the queue"
DROPPED="\"Dropped PreStartContainer cancelled or past its deadline while queued\" resource=\"$AF\" device=\"dfl-port.1\" devices=1$"
wait_line "$ERR" "$DROPPED"
echo "fpga-pr dfl-fme.1 fail 0" >&9
wait_line "$T/first.out" '^error: code=INTERNAL message=PreStartContainer failed: Input/output error$'
echo "fpga-pr dfl-fme.1 good" >&9
echo "echo good-q" >&9
wait_line "$T/kdpd-prog.out" '^good-q$'
assert_eq "$("$KDPCTL" prestart --socket "$S" dfl-port.1 2>&1)" "prestart ok" "PreStart after the failed programming"
assert_eq "$(count_lines "$ERR" "$PROGRAMMING")" $((before + 2)) "programmings: the first and the last PreStart's"
assert_eq "$(count_lines "$ERR" "Dropped PreStartContainer")" 1 "dropped lines"
pass "a PreStart whose deadline passed while queued is answered DEADLINE_EXCEEDED and never programs"
stop_kdpd
stop_kubelet

# ---- program: card 1 declared to carry NLB3, programmed at start and at each reload ----
write_gbs "$BITS" $IFID $NLB3
run_node decl --stop-timeout-ms 3000 -o fpga.bitstream_dir="$BITS" -o fpga.program=0000:d8:00.0=$NLB3
ERR="$T/kdpd-decl.err"
PROGRAMMED="\"Programmed the declared AFU\" backend=\"fpga\" device=\"dfl-port.1\" card=\"0000:d8:00.0\" afu=\"$NLB3\"$"
wait_line "$ERR" "\"Programming the declared AFU\" backend=\"fpga\" device=\"dfl-port.1\" card=\"0000:d8:00.0\" want=\"$NLB3\" have=\"$NLB0\" bitstream=\"$BITS/$IFID/$NLB3.gbs\"$"
wait_line "$ERR" "$PROGRAMMED"
wait_devices $AF3 "^devices resource=$AF3 capacity=1 allocatable=1 healthy=dfl-port.1 unhealthy= numa=dfl-port.1:1$"
wait_devices $AF "^devices resource=$AF capacity=1 allocatable=1 healthy=dfl-port.0 unhealthy= numa=dfl-port.0:0$"
pass "a declared card is programmed at start and its port appears under its new AFU's resource"

# drifted, then a reload: programmed again, slowly; the port is Unhealthy "programming" meanwhile
S=$(socket_of $AF)
drift_reload "$T/kdpd-decl.out" "slow 3600000" drifted-2
wait_line "$ERR" "\"Device became unhealthy\" resource=\"$AF3\" device=\"dfl-port.1\" reason=\"programming\"$"
assert_eq "$("$KDPCTL" allocate --socket "$S" dfl-port.0 | tr '\n' '|')" \
        "env KDP_FPGA_PCI_ADDRESSES=0000:3b:00.0|device /dev/dfl-port.0 /dev/dfl-port.0 rw|" "Allocate of card 0 meanwhile"
assert_eq "$(count_lines "$ERR" "$PROGRAMMED")" 1 "still programming"
echo "fpga-pr dfl-fme.1 good 0" >&9
wait_count "$ERR" "$PROGRAMMED" 2
wait_devices $AF3 "^devices resource=$AF3 capacity=1 allocatable=1 healthy=dfl-port.1 unhealthy= "
pass "at reload a drifted declared card is programmed again, Unhealthy \"programming\" meanwhile"

# a failing programming leaves the port Unhealthy with the reason, until a reload retries
drift_reload "$T/kdpd-decl.out" "fail" drifted-3
wait_line "$ERR" "\"Cannot program the declared AFU\" backend=\"fpga\" device=\"dfl-port.1\" card=\"0000:d8:00.0\" want=\"$NLB3\" have=\"$NLB0\" reason=\"programming card 0000:d8:00.0 port 0 with AFU $NLB3 \(interface $IFID\) from $BITS/$IFID/$NLB3.gbs through /dev/dfl-fme.1 failed: Input/output error\" err=\"Input/output error\"$"
wait_line "$ERR" "\"Device (became unhealthy|unhealthy for another reason)\" resource=\"$AF3\" device=\"dfl-port.1\" reason=\"programming the declared AFU $NLB3 failed: Input/output error; card: last partial reconfiguration failed: reconfig incompatible image\"$"
wait_devices $AF3 "^devices resource=$AF3 capacity=1 allocatable=0 healthy= unhealthy=dfl-port.1 "
echo "fpga-pr dfl-fme.1 good" >&9
echo "echo good-3" >&9
wait_line "$T/kdpd-decl.out" '^good-3$'
kill -HUP "$KDPD_PID"
wait_count "$ERR" "$PROGRAMMED" 3
wait_devices $AF3 "^devices resource=$AF3 capacity=1 allocatable=1 healthy=dfl-port.1 unhealthy= "
pass "a failed programming leaves the port Unhealthy with the reason; the next reload retries"

# a programming stuck in the kernel at SIGTERM: the stop gives up on it after --stop-timeout-ms
# (run_node decl set 3000), says so and exits with 1; the sockets went before that step
drift_reload "$T/kdpd-decl.out" "slow 3600000" drifted-4
wait_count "$ERR" "\"Device became unhealthy\" resource=\"$AF3\" device=\"dfl-port.1\" reason=\"programming\"$" 3
kill -TERM "$KDPD_PID"
wait_gone 30 "$KDPD_PID"
proc_alive "$KDPD_PID" && fail "kdpd did not exit within $((30 * SLOW))s of SIGTERM with a programming stuck"
wait "$KDPD_PID"
assert_eq "$?" 1 "kdpd exit code after an abandoned stop"
assert_eq "$(grep -c 'Abandoned the stop' "$ERR")" 1 "one line says the stop was abandoned"
wait_line "$ERR" "\"Abandoned the stop: a step outlasted the stop timeout\" step=\"backend stop\" backend=\"fpga\" timeoutMs=3000 err=\"Connection timed out\"$"
assert_eq "$(find "$DIR" -name 'kdp-*.sock' | wc -l)" 0 "plugin sockets removed before the stuck step"
rm -f "$VALGRIND_LOG".*         # a process ended on purpose with a thread in the kernel leaves its memory
pass "a programming stuck at SIGTERM: the stop is abandoned after the stop timeout, exit status 1"
stop_kubelet

# ---- program in region mode: the declared card's ports are programmed; its FME is the unit ----
REGION=fpga.intel.com/region-$IFID
run_node region -o fpga.mode=region -o fpga.bitstream_dir="$BITS" -o fpga.program=0000:d8:00.0=$NLB3
ERR="$T/kdpd-region.err"
PROGRAMMED="\"Programmed the declared AFU\" backend=\"fpga\" device=\"dfl-port.1\" card=\"0000:d8:00.0\" afu=\"$NLB3\"$"
wait_line "$ERR" "\"Programming the declared AFU\" backend=\"fpga\" device=\"dfl-port.1\" card=\"0000:d8:00.0\" want=\"$NLB3\" have=\"$NLB0\" bitstream=\"$BITS/$IFID/$NLB3.gbs\"$"
wait_line "$ERR" "$PROGRAMMED"
wait_devices $REGION "^devices resource=$REGION capacity=2 allocatable=2 healthy=dfl-fme.0,dfl-fme.1 unhealthy= numa=dfl-fme.0:0;dfl-fme.1:1$"
assert_eq "$(grep -c 'Programming the declared AFU' "$ERR")" 1 "only the declared card is programmed"
assert_eq "$(grep -c '^registered ' "$KUBELET_OUT")" 1 "region: one resource, whatever the AFU"
pass "region: a declared card is programmed at start and stays under its region resource"

S=$(socket_of $REGION)
drift_reload "$T/kdpd-region.out" "slow 3600000" drifted-r
wait_line "$ERR" "\"Device became unhealthy\" resource=\"$REGION\" device=\"dfl-fme.1\" reason=\"programming\"$"
wait_devices $REGION "^devices resource=$REGION capacity=2 allocatable=1 healthy=dfl-fme.0 unhealthy=dfl-fme.1 "
assert_eq "$("$KDPCTL" allocate --socket "$S" dfl-fme.0 | tr '\n' '|')" \
        "env KDP_FPGA_PCI_ADDRESSES=0000:3b:00.0|device /dev/dfl-port.0 /dev/dfl-port.0 rw|" "region: Allocate of card 0 meanwhile"
assert_eq "$(count_lines "$ERR" "$PROGRAMMED")" 1 "region: still programming"
echo "fpga-pr dfl-fme.1 good 0" >&9
wait_count "$ERR" "$PROGRAMMED" 2
wait_devices $REGION "^devices resource=$REGION capacity=2 allocatable=2 healthy=dfl-fme.0,dfl-fme.1 unhealthy= "
pass "region: at reload a drifted declared card is programmed again, its FME Unhealthy \"programming\" meanwhile"

drift_reload "$T/kdpd-region.out" "fail" drifted-rf
wait_line "$ERR" "\"Cannot program the declared AFU\" backend=\"fpga\" device=\"dfl-port.1\" card=\"0000:d8:00.0\" want=\"$NLB3\" have=\"$NLB0\" reason=\"programming card 0000:d8:00.0 port 0 with AFU $NLB3 \(interface $IFID\) from $BITS/$IFID/$NLB3.gbs through /dev/dfl-fme.1 failed: Input/output error\" err=\"Input/output error\"$"
wait_line "$ERR" "\"Device (became unhealthy|unhealthy for another reason)\" resource=\"$REGION\" device=\"dfl-fme.1\" reason=\"dfl-port.1: programming the declared AFU $NLB3 failed: Input/output error; last partial reconfiguration failed: reconfig incompatible image\"$"
wait_devices $REGION "^devices resource=$REGION capacity=2 allocatable=1 healthy=dfl-fme.0 unhealthy=dfl-fme.1 "
echo "fpga-pr dfl-fme.1 good" >&9
echo "echo good-r" >&9
wait_line "$T/kdpd-region.out" '^good-r$'
kill -HUP "$KDPD_PID"
wait_count "$ERR" "$PROGRAMMED" 3
wait_devices $REGION "^devices resource=$REGION capacity=2 allocatable=2 healthy=dfl-fme.0,dfl-fme.1 unhealthy= "
pass "region: a failed programming leaves the FME Unhealthy with the port and the reason; the next reload retries"
stop_kdpd
stop_kubelet

# ---- regiondevel: card 0 programmed at start; card 1 declared an AFU without a bitstream: Unhealthy with why ----
NOBITS=0123456789abcdef0123456789abcdef
run_node regiondevel -o fpga.mode=regiondevel -o fpga.bitstream_dir="$BITS" -o fpga.program=0000:3b:00.0=$NLB3,0000:d8:00.0=$NOBITS
ERR="$T/kdpd-regiondevel.err"
wait_line "$ERR" "\"Programmed the declared AFU\" backend=\"fpga\" device=\"dfl-port.0\" card=\"0000:3b:00.0\" afu=\"$NLB3\"$"
wait_line "$ERR" "\"Cannot program the declared AFU\" backend=\"fpga\" device=\"dfl-fme.1\" card=\"0000:d8:00.0\" want=\"$NOBITS\" have=\"$NLB0\" reason=\"card 0000:d8:00.0 port dfl-port.1 carries AFU $NLB0, not AFU $NOBITS, and there is no bitstream $BITS/$IFID/$NOBITS.gbs\" err=\"No such file or directory\"$"
wait_devices $REGION "^devices resource=$REGION capacity=2 allocatable=1 healthy=dfl-fme.0 unhealthy=dfl-fme.1 "
pass "regiondevel: a declared card is programmed at start; a missing bitstream leaves its FME Unhealthy with why"
stop_kdpd
pass "kdpd stopped cleanly"
