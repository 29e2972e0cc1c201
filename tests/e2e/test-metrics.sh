# SPDX-License-Identifier: GPL-2.0-or-later
# kdpd's metrics endpoint (--metrics-address): exact counts in /metrics after
# known actions, what promtool says of a scrape, /readyz before the kubelet,
# with its stream, after the kubelet dropped it and after a kubelet restart,
# /healthz while the event loop and the gRPC thread are stuck behind a scan,
# 404/405, a scraper that misbehaves, the unix socket form, and (on a
# simulated node) device events and the event -> ListAndWatch latency.
. "$(dirname "$0")/lib.sh"

RES=example.com/widget
HTTP="$KDP_SOURCE_DIR/tests/e2e/metrics-http.py"
HOLD="$T/hold"
STALL_MS=$((1500 * SLOW))
command -v promtool >/dev/null || { echo "skip: no promtool (Debian prometheus)"; exit 77; }

# http PATH [METHOD]: the status code on the first line, then the body
http() {
        python3 "$HTTP" "$ADDR" get "$@"
}

# scrape: /metrics into $T/scrape (the status line checked)
scrape() {
        http /metrics >"$T/scrape.http" || fail "no answer to GET /metrics"
        assert_eq "$(head -n 1 "$T/scrape.http")" 200 "status of GET /metrics"
        tail -n +2 "$T/scrape.http" >"$T/scrape"
}

# value SERIES: its value in the last scrape ("absent" when it has none)
value() {
        awk -v s="$1" 'substr($0, 1, length(s) + 1) == s " " { print substr($0, length(s) + 2); found = 1; exit }
                       END { if (!found) print "absent" }' "$T/scrape"
}

# expect SERIES VALUE: in the last scrape
expect() {
        assert_eq "$(value "$1")" "$2" "$1"
}

# wait_http PATH STATUS BODY-REGEX: waits until GET PATH answers STATUS with a body matching BODY-REGEX
wait_http() {
        local end out
        end=$(deadline_ms "$(wait_s)")
        while [ "$(now_ms)" -lt "$end" ]; do
                out=$(http "$1" 2>/dev/null)
                if [ "$(head -n 1 <<<"$out")" = "$2" ] && tail -n +2 <<<"$out" | grep -Eq -- "$3"; then
                        return 0
                fi
                sleep 0.05
        done
        fail "GET $1: no $2 matching '$3'; last: $(tr '\n' '|' <<<"$out")"
}

# promtool_clean: promtool check metrics finds nothing to say of the last scrape
promtool_clean() {
        local out
        out=$(promtool check metrics <"$T/scrape" 2>&1) || fail "promtool check metrics failed: $out"
        assert_eq "$out" "" "what promtool check metrics says"
}

# start_metrics_kdpd NAME ARGS...: kdpd with the example backend and ARGS; ADDR is its endpoint
start_metrics_kdpd() {
        local name=$1
        shift
        start_kdpd "$name" --backend example -o example.unhealthy=widget-3 -o example.scan_hold_file="$HOLD" \
                --metrics-stall-ms "$STALL_MS" "$@"
        wait_line "$T/$name.err" '"Serving metrics"'
        ADDR=$(sed -n 's/.*"Serving metrics" address="\([^"]*\)".*/\1/p' "$T/$name.err" | tail -n 1)
}

# ---- before the kubelet ----
start_metrics_kdpd kdpd --metrics-address 127.0.0.1:0 --v 2
if watcher_mode; then    # the plugin watcher's: no attempt of kdpd's own to name
        wait_http /readyz 503 "^$RES: not registered with the kubelet$"
else
        wait_http /readyz 503 "^$RES: not registered with the kubelet \(last attempt: kubelet_absent\)$"
fi
wait_http /healthz 200 '^ok$'
pass "/readyz 503 naming the resource before a kubelet exists; /healthz 200"

# ---- a kubelet admits a pod; known calls ----
start_kubelet kubelet --admit "$RES=2"
wait_line "$T/kubelet.out" "^admitted resource=$RES n=2 "
wait_http /readyz 200 '^ok$'
S=$(plugin_socket widget)
for id in widget-0 widget-1 widget-2 widget-4 widget-5; do
        "$KDPCTL" allocate --socket "$S" "$id" >/dev/null || fail "allocate $id"
done
"$KDPCTL" allocate --socket "$S" widget-99 >/dev/null 2>&1 && fail "unknown widget-99 allocated"
scrape
expect "kdp_allocations_total{resource=\"$RES\",result=\"ok\"}" 6
expect "kdp_allocations_total{resource=\"$RES\",result=\"invalid_argument\"}" 1
expect "kdp_allocate_duration_seconds_count{resource=\"$RES\"}" 7
expect "kdp_allocate_duration_seconds_bucket{resource=\"$RES\",le=\"+Inf\"}" 7
expect "kdp_preferred_allocation_duration_seconds_count{resource=\"$RES\"}" 1
expect "kdp_registrations_total{resource=\"$RES\",result=\"success\",reason=\"none\"}" 1
expect "kdp_registered{resource=\"$RES\"}" 1
expect "kdp_listandwatch_streams{resource=\"$RES\"}" 1
expect "kdp_devices{resource=\"$RES\",health=\"healthy\"}" 7
expect "kdp_devices{resource=\"$RES\",health=\"unhealthy\"}" 1
expect "kdp_unhealthy_transitions_total{resource=\"$RES\",reason=\"configured unhealthy\"}" 1
expect "kdp_kubelet_restarts_total" 1
expect "kdp_listandwatch_update_latency_seconds_count{resource=\"$RES\"}" 0
expect "kdp_backend_info{backend=\"example\",abi=\"1\",path=\"$KDP_BUILD_DIR/plugins/kdp-backend-example.so\"}" 1
assert_eq "$(grep -c '^kdp_build_info{version="[0-9.]*",grpc="[0-9.]*",microhttpd="[0-9.]*"} 1$' "$T/scrape")" 1 \
        "kdp_build_info"
assert_eq "$(grep -c 'kdp_device_health' "$T/scrape")" 0 "per-device series without --metrics-device-health"
for m in process_cpu_seconds_total process_resident_memory_bytes process_virtual_memory_bytes process_open_fds \
         process_max_fds process_start_time_seconds; do
        assert_eq "$(grep -Ec "^$m [0-9.e+]+$" "$T/scrape")" 1 "$m"
done
# valgrind keeps some fds for itself, and says so to getrlimit()
[ "${KDP_VALGRIND:-}" = 1 ] ||
        expect process_max_fds "$(awk '$1 == "Max" && $2 == "open" { print $4 }' "/proc/$KDPD_PID/limits")"
promtool_clean
pass "6 allocations, 1 refused, 1 preferred, 1 registration, 7+1 devices, 1 kubelet start: exact; promtool clean"

# ---- the kubelet drops the stream ----
# kubelet.sock goes first, so that kdpd waits for the next kubelet instead of registering again
rm "$DIR/kubelet.sock"
kill -USR1 "$KUBELET_PID"
wait_line "$T/kubelet.out" "^dropped resource=$RES"
wait_http /readyz 503 "^$RES: registered, but no ListAndWatch stream open$"
scrape
expect "kdp_listandwatch_streams{resource=\"$RES\"}" 0
pass "/readyz 503 once the kubelet dropped the stream"

stop_kubelet
start_kubelet kubelet
wait_http /readyz 200 '^ok$'
scrape
expect "kdp_kubelet_restarts_total" 2
expect "kdp_registrations_total{resource=\"$RES\",result=\"success\",reason=\"none\"}" 2
expect "kdp_listandwatch_streams{resource=\"$RES\"}" 1
pass "a new kubelet: 2 kubelet starts seen, 2 registrations, /readyz 200 again"

# ---- a scan stuck in the kernel: the loop; an Allocate for the backend's hook waits on a worker ----
touch "$HOLD"
wait_http /healthz 503 '^event loop has not run for [0-9]+\.[0-9] s$'
scrape                                          # the endpoint does not wait on the loop
"$KDPCTL" allocate --socket "$(plugin_socket widget)" --timeout 300 widget-6 >"$T/held-allocate.out" 2>&1 &
held_pid=$!
wait_line "$T/kdpd.err" '"Queued call for the backend'\''s hook" resource="example.com/widget" method="/v1beta1.DevicePlugin/Allocate"'
assert_eq "$("$KDPCTL" list --socket "$(plugin_socket widget)" | tail -n 1)" "total=8 healthy=7 unhealthy=1" \
        "ListAndWatch while the scan holds the backend's lock"
assert_eq "$(http /healthz | grep 'has not run' | sed 's/ for .*//')" "event loop has not run" \
        "the thread /healthz names while the scan is held"
proc_alive "$held_pid" || fail "the allocate held behind the scan ended: $(cat "$T/held-allocate.out")"
rm "$HOLD"
wait "$held_pid" || fail "the allocate held behind the scan failed: $(cat "$T/held-allocate.out")"
wait_http /healthz 200 '^ok$'
pass "/healthz 503 naming the stuck event loop, not the gRPC thread; 200 once the scan ended"

# ---- what is not served, and a scraper that misbehaves ----
out=$(http /nope)
assert_eq "$(head -n 1 <<<"$out")" 404 "GET /nope"
out=$(http /metrics POST)
assert_eq "$(head -n 1 <<<"$out")" 405 "POST /metrics"
out=$(http /metrics DELETE)
assert_eq "$(head -n 1 <<<"$out")" 405 "DELETE /metrics"
out=$(http /readyz HEAD)
assert_eq "$(tr '\n' '|' <<<"$out")" "200|" "HEAD /readyz: status, no body"
python3 "$HTTP" "$ADDR" abuse $((30 * SLOW)) >"$T/abuse.out" 2>&1 || fail "abuse: $(cat "$T/abuse.out")"
assert_eq "$(tr '\n' '|' <<<"$(cat "$T/abuse.out")")" \
        "junk closed|huge 431|other-peer 200|slow 200|held 4|oldest-closed yes|while-held 200|head-closed 4|" \
        "what a misbehaving scraper got"
scrape
promtool_clean
proc_alive "$KDPD_PID" || fail "kdpd died"
pass "404, 405, junk, a huge head, a slow client, connections past the per-address limit and heads never sent: kdpd kept serving"
stop_kdpd

# ---- a unix socket: a stale one is replaced; per-device health ----
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$T/metrics.sock"
start_metrics_kdpd kdpd-unix --metrics-address "$T/metrics.sock" --metrics-device-health
assert_eq "$ADDR" "$T/metrics.sock" "the unix socket served"
assert_eq "$(stat -c '%a %F' "$T/metrics.sock")" "660 socket" "mode of the metrics socket"
wait_http /readyz 200 '^ok$'
scrape
expect "kdp_device_health{resource=\"$RES\",device=\"widget-3\"}" 0
expect "kdp_device_health{resource=\"$RES\",device=\"widget-7\"}" 1
assert_eq "$(grep -c '^kdp_device_health{' "$T/scrape")" 8 "per-device series"
promtool_clean
# a live socket is another process's: a second kdpd refuses to start, registering nothing
first=$KDPD_PID
start_kdpd kdpd-second --backend example --metrics-address "$T/metrics.sock"
wait "$KDPD_PID"
assert_eq "$?" 1 "exit code of a kdpd whose metrics socket is taken"
assert_eq "$(grep -c '"Failed to listen on the metrics address" .*err="Address already in use"' "$T/kdpd-second.err")" 1 \
        "the refusal logged"
assert_eq "$(grep -c '"Serving resource"' "$T/kdpd-second.err")" 0 "resources served by the refused kdpd"
check_valgrind
KDPD_PID=$first
stop_kdpd
[ -e "$T/metrics.sock" ] && fail "the metrics socket is left after the stop"
pass "a unix socket (stale one replaced, 0660, removed at the stop), per-device health, a taken socket refused"

# ---- a simulated node: device events and the event -> ListAndWatch latency ----
SIM="$KDP_SOURCE_DIR/tests/sim-node/sim-node"
PCI=test.example.com/pci
mkfifo "$T/ctl"
exec 9<>"$T/ctl"
"${DIE_WITH_US[@]}" "$SIM" "$KDP_SOURCE_DIR/tests/fixtures/nodes/two-socket-switches.umockdev" --control "$T/ctl" -- \
        "${KDPD_RUN[@]}" --kubelet-dir "$DIR" --state-dir "$T/state-sim" --cdi-dir "$T/cdi" --health-hold-ms 0 \
        --backend "$KDP_BUILD_DIR/tests/backends/kdp-backend-pcitest.so" -o pcitest.vendor=10de \
        -o pcitest.device=2330 -o pcitest.driver=nvidia --metrics-address 127.0.0.1:0 >"$T/sim.out" 2>"$T/sim.err" &
KDPD_PID=$!
PIDS+=($KDPD_PID)
wait_line "$T/sim.err" '"Serving metrics"|sim-node: .*preload|not built'
if grep -q 'sim-node: .*preload\|not built' "$T/sim.err"; then
        echo "skip: no simulated node for the device events part"
        stop_kdpd
        exit 0
fi
ADDR=$(sed -n 's/.*"Serving metrics" address="\([^"]*\)".*/\1/p' "$T/sim.err")
devices_match "$PCI" "capacity=8 allocatable=8 "
echo "unbind 0000:9b:00.0" >&9
devices_match "$PCI" "capacity=8 allocatable=7 .*unhealthy=0000:9b:00.0 "
echo "bind 0000:9b:00.0 nvidia" >&9
devices_match "$PCI" "capacity=8 allocatable=8 "
scrape
expect "kdp_device_events_total{subsystem=\"pci\",action=\"unbind\"}" 1
expect "kdp_device_events_total{subsystem=\"pci\",action=\"bind\"}" 1
expect "kdp_unhealthy_transitions_total{resource=\"$PCI\",reason=\"driver unbound (expected nvidia)\"}" 1
# every message after a stream's first is a change, each measured once
assert_eq "$(value "kdp_listandwatch_update_latency_seconds_count{resource=\"$PCI\"}")" \
        "$(($(grep -c "^devices resource=$PCI " "$T/kubelet.out") - 1))" "changes measured to the stream"
[ "$(value "kdp_scan_duration_seconds_count{backend=\"pcitest\"}")" -ge 3 ] || fail "scans of pcitest not counted"
promtool_clean
stop_kdpd
pass "device events by subsystem and action, the unhealthy reason, each change's latency to the stream"
