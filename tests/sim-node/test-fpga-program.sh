#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# sim-node/fpga-program: plugins/fpga/program.c programs cards of a simulated node through
# sim-node's emulated FME nodes (tests/sim-node/fpga-node.sh: card 0 good, card 1 failing, card 2
# slow, card 3 held until told): the unit test test-fpga-program with its sim-node cases
# (KDP_TEST_FPGA_SIM=1) runs under sim-node. Exit 77 = skipped.
set -u

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$KDP_BUILD_DIR/tests/unit/test-fpga-program"
. "$src/tests/sim-node/fpga-node.sh"

write_fpga_node "$tmp/fpga.umockdev"
# the control FIFO: the test releases card 3's held call through it (KDP_TEST_FPGA_CTL)
mkfifo "$tmp/ctl"
exec 3<>"$tmp/ctl"
# the test program right after "--": sim-node's wrapper puts an ASan build's runtime first for it
KDP_TEST_FPGA_SIM=1 KDP_TEST_FPGA_CTL="$tmp/ctl" "${DIE_WITH_US[@]}" "$simnode" "$tmp/fpga.umockdev" \
        --control "$tmp/ctl" -- "$build/tests/unit/test-fpga-program" > "$tmp/out" 2>&1 3>&-
rc=$?
exec 3>&-
cat "$tmp/out"
grep -q '^100%: Checks: 10, Failures: 0, Errors: 0' "$tmp/out" || fail "not all 10 checks (4 on the simulated node) ran and passed"
[ $rc = 0 ] && ok "program.c on the simulated node" || fail "test-fpga-program exited $rc"
[ $failures = 0 ] || exit 1
