#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench/metrics.sh [BUILD_DIR]: what kdpd's metrics endpoint (--metrics-address)
# costs, with the example backend, outside sim-node. Not part of ctest: it
# takes a minute or two and its numbers depend on the machine.
#
#   n<N>_off_r<R>_*, n<N>_on_r<R>_*   Allocate of 1 device, one caller
#        (kdp-bench, KDP_BENCH_CALLS (5000) timed calls), with N devices: the
#        endpoint off, then on and scraped every second (GET /metrics, with
#        --metrics-device-health at N = 4096: the largest scrape), alternated
#        for KDP_BENCH_ROUNDS (3) rounds, each in a fresh session
#   n<N>_<mode>_r<R>_cpu_us       kdpd's CPU time per Allocate over the run (its
#        threads' scheduler ns: the scrapes' share included when on)
#   n<N>_off_p50_us ...           the median of the rounds' figures, and _min their least
#        (on a busy host, the round least disturbed)
#   scrape_n<N>_<kind>_bytes      the size of one GET /metrics (kind: plain, or
#        device_health with --metrics-device-health)
#   scrape_n<N>_<kind>_p50_ms, _p99_ms   the time of one scrape at the client,
#        from the request to the last byte, KDP_BENCH_SCRAPES (200) in a row
#   scrape_n<N>_<kind>_cpu_us     kdpd's CPU time per scrape over those
set -u

. "$(dirname "$0")/lib.sh"
calls=${KDP_BENCH_CALLS:-5000}
rounds=${KDP_BENCH_ROUNDS:-3}
scrapes=${KDP_BENCH_SCRAPES:-200}
need kdpd bench/kdp-bench tests/interop/kubelet-go plugins/kdp-backend-example.so

# metrics_address NAME: the endpoint session NAME's kdpd serves
metrics_address() {
        sed -n 's/.*"Serving metrics" address="\([^"]*\)".*/\1/p' "$work/$1/kdpd.err"
}

# scrape_every_second ADDRESS: GET /metrics once a second, until killed (its pid in scraper_pid)
scrape_every_second() {
        /usr/bin/python3 -c '
import sys, time, urllib.request
while True:
    urllib.request.urlopen("http://" + sys.argv[1] + "/metrics", timeout=10).read()
    time.sleep(1)' "$1" &
        scraper_pid=$!
}

# scrape_times ADDRESS N: N scrapes in a row; prints "BYTES P50_MS P99_MS"
scrape_times() {
        /usr/bin/python3 -c '
import sys, time, urllib.request
url, n = "http://" + sys.argv[1] + "/metrics", int(sys.argv[2])
times, size = [], 0
for _ in range(n):
    t = time.perf_counter()
    size = len(urllib.request.urlopen(url, timeout=10).read())
    times.append((time.perf_counter() - t) * 1000)
times.sort()
print(size, "%.2f" % times[n // 2], "%.2f" % times[min(n - 1, n * 99 // 100)])' "$1" "$2"
}

# allocate_round N MODE R: one session, Allocate measured; MODE off or on (scraped every second)
allocate_round() {
        local n=$1 mode=$2 r=$3 name=n$1_$2_r$3 extra=() t0 t1
        if [ "$mode" = on ]; then
                extra=(--metrics-address 127.0.0.1:0)
                [ "$n" -ge 4096 ] && extra+=(--metrics-device-health)
        fi
        session "$name" plain --backend example -o "example.devices=$n" "${extra[@]}" || return 1
        scraper_pid=
        [ "$mode" = on ] && scrape_every_second "$(metrics_address "$name")"
        t0=$(sched_ns "$kdpd_pid")
        run_bench "$name" --calls "$calls" --concurrency 1
        t1=$(sched_ns "$kdpd_pid")
        echo "${name}_cpu_us=$(awk -v d=$(( t1 - t0 )) -v n="$calls" 'BEGIN { printf "%.1f", d / 1000 / n }')"
        stop "$scraper_pid"
        stop_session
}

# median FILE KEY: the median of KEY's values in FILE (lines KEY=VALUE)
median() {
        sed -n "s/^$2=//p" "$1" | sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'
}

# scrape_figures N KIND ARGS...: a session with the endpoint (and ARGS), its scrapes measured
scrape_figures() {
        local n=$1 kind=$2 name=scrape_n$1_$2 addr t0 t1 figures
        shift 2
        session "$name" plain --backend example -o "example.devices=$n" --metrics-address 127.0.0.1:0 "$@" || return 1
        addr=$(metrics_address "$name")
        t0=$(sched_ns "$kdpd_pid")
        read -r -a figures <<<"$(scrape_times "$addr" "$scrapes")"
        t1=$(sched_ns "$kdpd_pid")
        echo "${name}_bytes=${figures[0]}"
        echo "${name}_p50_ms=${figures[1]}"
        echo "${name}_p99_ms=${figures[2]}"
        echo "${name}_cpu_us=$(awk -v d=$(( t1 - t0 )) -v n="$scrapes" 'BEGIN { printf "%.0f", d / 1000 / n }')"
        stop_session
}

report_start
echo "scrapes=$scrapes"
echo "rounds=$rounds"
out=$work/figures
for n in 8 4096; do
        for r in $(seq "$rounds"); do
                for mode in off on; do
                        allocate_round "$n" "$mode" "$r" >>"$out"
                        tail -n 3 "$out"
                done
        done
        for mode in off on; do
                for f in p50_us p99_us cpu_us; do
                        sed -n "s/^n${n}_${mode}_r[0-9]*_$f=/n${n}_${mode}_$f=/p" "$out" >"$out.$n.$mode.$f"
                        echo "n${n}_${mode}_$f=$(median "$out.$n.$mode.$f" "n${n}_${mode}_$f")"
                        echo "n${n}_${mode}_${f}_min=$(sed -n "s/^n${n}_${mode}_$f=//p" "$out.$n.$mode.$f" | sort -n | head -n 1)"
                done
        done
done
for n in 8 4096; do
        scrape_figures "$n" plain
        scrape_figures "$n" device_health --metrics-device-health
done
report_end
