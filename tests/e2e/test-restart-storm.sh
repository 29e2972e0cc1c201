# SPDX-License-Identifier: GPL-2.0-or-later
# A storm of kubelet restarts: each kubelet is killed (SIGKILL, or SIGTERM
# then SIGKILL if it does not end) 0-90 ms after it was started, often before
# or while kdpd registers with it. Registration attempts that fail inside a restart are ordinary: kdpd
# logs them at --v 1, and not one warning at --v 0. The last kubelet gets
# every resource registered once. Through the plugin watcher
# (e2e-watcher/restart-storm) every kubelet of the storm watches
# plugins_registry too, as the kubelet does: one that finds kdpd's sockets
# before it dies calls GetInfo, connects and may say it registered.
. "$(dirname "$0")/lib.sh"

ROUNDS=60
[ "${KDP_VALGRIND:-}" = 1 ] && ROUNDS=20
TWIN="$KDP_BUILD_DIR/tests/backends/kdp-backend-twin.so"

start_kubelet k-0
start_kdpd kdpd --backend example --backend "$TWIN"
wait_line "$T/k-0.out" '^devices resource=example.com/widget capacity=8 '
wait_line "$T/k-0.out" '^devices resource=twin.example.com/gadget capacity=2 '
stop_kubelet
kubelet_command
for i in $(seq 1 "$ROUNDS"); do
        "${DIE_WITH_US[@]}" "${KUBELET_RUN[@]}" >"$T/storm.out" 2>"$T/storm.err" &
        pid=$!
        PIDS+=("$pid")
        sleep "0.0$(((i * 37) % 90 / 10))$(((i * 37) % 10))"
        if [ $((i % 2)) = 0 ]; then
                kill_tree "$pid"        # SIGTERM; SIGKILL if the stand-in does not end
        else
                { kill -KILL "$pid"; wait "$pid"; } 2>/dev/null
        fi
        forget_pid "$pid"
done
start_kubelet last
for res in example.com/widget twin.example.com/gadget; do
        wait_line "$T/last.out" "^registered resource=$res "
done
wait_line "$T/last.out" '^devices resource=example.com/widget capacity=8 allocatable=8 '
wait_line "$T/last.out" '^devices resource=twin.example.com/gadget capacity=2 allocatable=2 '
stop_kubelet
stop_kdpd
for res in example.com/widget twin.example.com/gadget; do
        assert_eq "$(count_lines "$T/last.out" "^registered resource=$res ")" 1 "registrations of $res with the last kubelet"
done
assert_eq "$(count_lines "$T/kdpd.err" '^W')" 0 "warnings of kdpd through $ROUNDS kubelet restarts: $(grep '^W' "$T/kdpd.err" | head -n 3)"
assert_eq "$(count_lines "$T/kdpd.err" '^E')" 0 "errors of kdpd"
pass "$ROUNDS kubelet restarts killed 0-90 ms after start: no warning, every resource registered with the last kubelet"
