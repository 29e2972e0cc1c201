# SPDX-License-Identifier: GPL-2.0-or-later
# A device event and SIGTERM read in one wake-up: kdpd (the GPU backend on the simulated HGX
# node) is held with SIGSTOP while the node unbinds a GPU and SIGTERM is sent to it, then
# released. The event's scan is posted to the loop, the signal ends the loop, and the scan still
# posted runs while kdpd frees itself: it must find no backend (they are gone) and kdpd exits 0
# with no error logged after "Stopping" (under ASan or valgrind, a read of a freed backend is
# an error of its own).
. "$(dirname "$0")/lib.sh"

NODES="$KDP_SOURCE_DIR/tests/fixtures/nodes"
mkfifo "$T/ctl"
exec 9<>"$T/ctl"

start_kubelet kubelet
start_sim_kdpd "$NODES/gpu-h100x8.umockdev" --control "$T/ctl" -- --v 2 --backend gpu -o gpu.nvml=
wait_line "$T/kubelet.out" '^devices resource=nvidia.com/gpu capacity=8 allocatable=8 '
grep -q 'sim-node: .*preload\|not built' "$T/kdpd.err" && { echo "skip: no simulated node"; exit 77; }

for round in 1 2 3; do
        hold_kdpd
        echo "unbind 0000:9b:00.0" >&9
        echo "echo unbound-$round" >&9
        wait_line "$T/kdpd.out" "^unbound-$round\$"
        kill -TERM "$KDPD_HELD"
        release_kdpd
        wait_gone 30 "$KDPD_PID"
        wait "$KDPD_PID"
        assert_eq "$?" 0 "round $round: kdpd's exit code (through sim-node) after the event and SIGTERM in one wake-up"
        assert_eq "$(sed -n '/"Stopping"/,$p' "$T/kdpd.err" | grep -c '^E')" 0 \
                "round $round: errors logged after \"Stopping\""
        grep -q '"Received device event" action="unbind" subsystem="pci" device="0000:9b:00.0"' "$T/kdpd.err" ||
                fail "round $round: kdpd never read the unbind before it stopped"
        check_valgrind
        [ "$round" = 3 ] && break
        start_sim_kdpd "$NODES/gpu-h100x8.umockdev" --control "$T/ctl" -- --v 2 --backend gpu -o gpu.nvml=
        wait_line "$T/kdpd.err" '"Finished the first scan"'
done
pass "a device event and SIGTERM in one wake-up: kdpd frees its backends before the scan still posted, and exits 0"
