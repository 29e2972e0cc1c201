# SPDX-License-Identifier: GPL-2.0-or-later
# The real kernel: writing "change" into a real sysfs uevent file (the
# loopback interface's) makes the kernel send a uevent, and kdpd's monitor
# receives it and rescans the backend that declared the subsystem. Skipped
# (77) where the kernel does not let us write it (no root, read-only sysfs).
. "$(dirname "$0")/lib.sh"

ue=/sys/class/net/lo/uevent
[ -w "$ue" ] || { echo "skip: $ue not writable"; exit 77; }

start_kubelet kubelet
start_kdpd kdpd --backend "$KDP_BUILD_DIR/tests/backends/kdp-backend-netwatch.so" --udev-source kernel --v 2
wait_line "$T/kubelet.out" '^devices resource=netwatch.example.com/thing '
wait_line "$T/kdpd.err" '"Watching device events" source="kernel" subsystems="net"'
echo change >"$ue" 2>/dev/null || { echo "skip: the kernel refused a write to $ue"; exit 77; }
wait_line "$T/kdpd.err" '"Received device event" action="change" subsystem="net" device="lo"'
pass "a real kernel uevent reached kdpd's monitor"
stop_kdpd
