#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# sim-node/fpga-pr: sim-node answers the ioctls of a DFL FME node as the kernel does (API
# version, extensions, ENOTTY, EINVAL for a short argsz) and emulates partial reconfiguration:
# the image's AFU ID shows in the port's afu_id when the call returns (good), a failing card
# answers EIO and keeps its AFU (the fixture's SIM_FPGA_PR=fail), a slow call holds while another
# card's call is answered and a second call on its own card fails with EBUSY, and ends when told,
# an image without an AFU ID fails with EIO, a port id the card lacks with EINVAL, and "drift"
# changes afu_id behind the client's back. The client
# is sim-check (plain open + ioctl), driven through a request FIFO; every check is on order and
# outcome, none on time. Exit 77 = skipped.
# shellcheck disable=SC2015,SC2016
set -u

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$src/tests/sim-node/fpga-node.sh"

node=$tmp/fpga.umockdev
write_fpga_node "$node"
PORT0=/sys/devices/pci0000:3b/0000:3b:00.0/fpga_region/region0/dfl-port.0
PORT1=/sys/devices/pci0000:3b/0000:3b:01.0/fpga_region/region2/dfl-port.1
NLB0=d8424dc4a4a3c413f89e433683f9040b
NLB3=f7df405cbd7acf7222f144b0b93acd18
printf 'SIM-BITSTREAM afu_id=%s\n\001\002\003' "$NLB3" >"$tmp/nlb3.bin"
printf 'SIM-BITSTREAM afu_id=%s\nbits' "$NLB0" >"$tmp/nlb0.bin"
printf 'not a simulated image\n' >"$tmp/junk.bin"

# The child runs each line of the request FIFO as a shell command, then prints "done N".
mkfifo "$tmp/ctl" "$tmp/req"
exec 3<>"$tmp/ctl" 4<>"$tmp/req"
"${DIE_WITH_US[@]}" "$simnode" -v "$node" --control "$tmp/ctl" -- \
        bash -c 'n=0; echo ready; while read -r line; do eval "$line"; n=$((n + 1)); echo "done $n"; done' \
        < "$tmp/req" > "$tmp/out" 2> "$tmp/simerr" 3>&- 4>&- &
sim_pid=$!
wait_text "$tmp/out" '^ready$'
n=0

# ask COMMAND: runs COMMAND in the child and waits until it is done; its output is in $tmp/step
ask() {
        local before
        before=$(wc -l <"$tmp/out")
        printf '%s\n' "$1" >&4
        n=$((n + 1))
        wait_text "$tmp/out" "^done $n\$"
        tail -n +$((before + 1)) "$tmp/out" | grep -v "^done $n\$" >"$tmp/step"
}

ask "$check fpga /dev/dfl-fme.0"
expect "the FME node answers the kernel's ioctls" "$tmp/step" <<EOF
api 0
extension 0
unknown errno=ENOTTY
short-argsz errno=EINVAL
EOF

ask "$check fpga /dev/dfl-fme.0 0 $tmp/nlb3.bin | grep ^pr; cat $PORT0/afu_id"
expect "good: the image's AFU ID is in afu_id when the call returns" "$tmp/step" <<EOF
pr ok
$NLB3
EOF

ask "$check fpga /dev/dfl-fme.1 0 $tmp/nlb3.bin | grep ^pr; cat $PORT1/afu_id"
expect "fail (the fixture's SIM_FPGA_PR): EIO, the card keeps its AFU" "$tmp/step" <<EOF
pr errno=EIO
$NLB0
EOF

ask "$check fpga /dev/dfl-fme.0 0 $tmp/junk.bin | grep ^pr; $check fpga /dev/dfl-fme.0 3 $tmp/nlb0.bin | grep ^pr; cat $PORT0/afu_id"
expect "an image without an AFU ID fails with EIO, a port the card lacks with EINVAL" "$tmp/step" <<EOF
pr errno=EIO
pr errno=EINVAL
$NLB3
EOF

# slow: card 0's call holds (an hour) while card 1's is answered; "good 0" ends it
printf 'fpga-pr dfl-fme.0 slow 3600000\necho slow-set\n' >&3
wait_text "$tmp/out" '^slow-set$'
ask "$check fpga /dev/dfl-fme.0 0 $tmp/nlb0.bin > $tmp/held 2>&1 &"
wait_text "$tmp/simerr" "^sim-node: dfl-fme.0: PR of port 0 with afu_id $NLB0, slow\$"
ask "$check fpga /dev/dfl-fme.1 0 $tmp/nlb0.bin | grep ^pr; grep -c '^pr' $tmp/held; cat $PORT0/afu_id"
expect "slow: another card's call is answered while card 0's holds, its afu_id unchanged" "$tmp/step" <<EOF
pr errno=EIO
0
$NLB3
EOF
ask "$check fpga /dev/dfl-fme.0 0 $tmp/nlb3.bin | grep ^pr; grep -c '^pr' $tmp/held"
expect "busy: a second call on card 0 while its first holds fails with EBUSY; the first goes on" "$tmp/step" <<EOF
pr errno=EBUSY
0
EOF
printf 'fpga-pr dfl-fme.0 good 0\n' >&3
wait_text "$tmp/held" '^pr '
ask "grep ^pr $tmp/held; cat $PORT0/afu_id"
expect "slow: the held call ends when told, with the image's AFU ID" "$tmp/step" <<EOF
pr ok
$NLB0
EOF

printf 'drift platform/dfl-port.0 %s\necho drifted\n' "${NLB3^^}" >&3
wait_text "$tmp/out" '^drifted$'
ask "cat $PORT0/afu_id"
expect "drift: afu_id changes behind the client's back (lower case)" "$tmp/step" <<EOF
$NLB3
EOF

printf 'drift platform/dfl-port.0 xyz\n' >&3
wait_text "$tmp/simerr" "drift: 'xyz' is not an AFU ID"
wait "$sim_pid"
rc=$?
sim_pid=
[ $rc = 2 ] && ok "drift refuses a malformed AFU ID: a sim-node error (exit 2)" || fail "sim-node exit $rc"

printf 'fpga-pr dfl-fme.9 good\n' >"$tmp/bad.script"
"${DIE_WITH_US[@]}" "$simnode" "$node" --script "$tmp/bad.script" -- sleep 600 > /dev/null 2> "$tmp/err"
rc=$?
[ $rc = 2 ] && grep -q "fpga-pr: dfl-fme.9 is not an FME node of the fixtures" "$tmp/err" &&
        ok "fpga-pr of a node that is no FME: a sim-node error (exit 2)" || fail "fpga-pr dfl-fme.9: exit $rc: $(cat "$tmp/err")"

if [ $failures -gt 0 ]; then
        echo "$failures check(s) failed"
        exit 1
fi
echo "all checks passed"
