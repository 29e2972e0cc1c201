#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench/metrics-probes.sh [BUILD_DIR]: the kubelet's livenessProbe on /healthz
# during an attack on the metrics endpoint, with the example backend. Not part
# of ctest: it takes KDP_BENCH_PROBES seconds and its times depend on the machine.
# The attack and the probes are tests/e2e/metrics-http.py's `probes`: request
# heads sent a byte a second and never whole, held past every limit (6 from
# 127.0.0.1, the kubelet's own address, and 4 from each of 127.0.0.2-6),
# reopened whenever kdpd closes them; a probe a second on a new connection from
# 127.0.0.1 with the kubelet's 1 s timeout.
#
#   probes, answered        probes made and answered 200 within 1 s
#   longest_failure_run     most failed in a row (3 make the kubelet restart kdpd)
#   probe_p50_ms, probe_max_ms   a probe's time at the client
#   attack_connections      attacking connections opened (each one kdpd closed, opened again)
set -u

. "$(dirname "$0")/lib.sh"
probes=${KDP_BENCH_PROBES:-60}
need kdpd tests/interop/kubelet-go plugins/kdp-backend-example.so

report_start
echo "probes_asked=$probes"
session probes plain --backend example --metrics-address 127.0.0.1:0 || exit 1
addr=$(sed -n 's/.*"Serving metrics" address="\([^"]*\)".*/\1/p' "$work/probes/kdpd.err")
/usr/bin/python3 "$src/tests/e2e/metrics-http.py" "$addr" probes "$probes" 1 >"$work/probes.out" 2>"$work/probes.err"
sed -n 's/^probes /probes=/p; s/^answered /answered=/p; s/^longest-failure-run /longest_failure_run=/p' "$work/probes.out"
tr ' ' '\n' <"$work/probes.err"
stop_session
report_end
