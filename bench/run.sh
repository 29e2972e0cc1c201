#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench/run.sh [BUILD_DIR]: the figures the README quotes, for kdpd with the
# example backend and for the Go baseline (bench/go-plugin), each with N = 8
# and N = 4096 devices. Not part of ctest: it takes a minute and its numbers
# depend on the machine.
#
# Per plugin and N, in a fresh directory with a fresh kubelet stand-in:
#   register_ms          plugin process start -> the kubelet has dialled back,
#                        got the options and answered Register
#   law_first_msg_ms     plugin process start -> first ListAndWatch message at
#                        the kubelet
#   law_warm_p50_us      a new ListAndWatch on a connected channel -> its first
#                        message (kdp-bench)
#   rss_idle_kb, anon_idle_kb   VmRSS and anonymous memory once registered
#   allocate_c1_*, allocate_c16_*   Allocate of 1 device over one shared
#                        connection, 1 and 16 concurrent callers (kdp-bench)
#   cpu_us_per_allocate  the plugin's own CPU time per Allocate at concurrency 1
#   anon_settled_kb      anonymous memory 3 s after the load
#   vmhwm_kb, rss_kb, anon_kb, threads   after the load: peak RSS (VmHWM),
#                        VmRSS, anonymous memory (smaps_rollup), thread count
# then ratio_n<N>_<figure>_kdpd_over_go for the main figures.
#
# The kubelet stand-in is tests/interop/kubelet-go (it timestamps its events);
# without it, `kdpctl kubelet` with the timestamps added here.
# Environment: KDP_BENCH_SIZES ("8 4096"), KDP_BENCH_CALLS (5000),
# KDP_BENCH_PLUGINS ("kdpd go").
set -u

. "$(dirname "$0")/lib.sh"      # stop, proc_kb, cpu_ticks, bench_field; its cleanup is replaced below
sizes=${KDP_BENCH_SIZES:-8 4096}
calls=${KDP_BENCH_CALLS:-5000}
plugins=${KDP_BENCH_PLUGINS:-kdpd go}
res=example.com/widget

[ -x "$bench" ] || { echo "run.sh: $bench not built" >&2; exit 2; }

plugin_pid=

cleanup() {
        stop "$plugin_pid"
        stop "$kubelet_pid"
        rm -rf "$work"
}
trap cleanup EXIT

now_us() { echo "${EPOCHREALTIME/./}"; }

# wait_for FILE ERE SECONDS
wait_for() {
        local deadline=$(( $(now_us) + $3 * 1000000 ))
        until grep -qE -- "$2" "$1" 2>/dev/null; do
                [ "$(now_us)" -lt "$deadline" ] || return 1
                sleep 0.005
        done
}

# start_kubelet DIR OUT: events with a leading "<s>.<µs> " stamp in OUT
start_kubelet() {
        if [ -x "$build/tests/interop/kubelet-go" ]; then
                "$build/tests/interop/kubelet-go" -dir "$1" -timestamps > "$2" 2> "$2.err" &
        else
                # $! must be kdpctl itself, so the stamping loop is a process
                # substitution; it ends when kdpctl closes its stdout
                "$build/kdpctl" kubelet --dir "$1" 2> "$2.err" \
                        > >(while IFS= read -r line; do echo "$EPOCHREALTIME $line"; done > "$2") &
        fi
        kubelet_pid=$!
        for _ in $(seq 500); do
                [ -S "$1/kubelet.sock" ] && return 0
                sleep 0.01
        done
        echo "run.sh: the kubelet stand-in did not start" >&2
        return 1
}

# stamp_us OUT ERE: the time of the first event matching ERE, in epoch µs
stamp_us() {
        grep -m1 -E -- "^[0-9]+\.[0-9]+ $2" "$1" | cut -d' ' -f1 | tr -d .
}

# emit NAME VALUE: one figure, kept for the ratios
declare -A fig
emit() {
        fig[$1]=$2
        echo "$1=$2"
}

run_one() {
        local impl=$1 n=$2 p="$1_n$2" dir out cmd t0 t_reg t_law endpoint b rc
        dir=$work/$p/device-plugins
        out=$work/$p/kubelet.out
        mkdir -p "$dir"
        case $impl in
        kdpd)   cmd=("$build/kdpd" --backend example -o "example.devices=$n" --cdi-dir "$work/$p/cdi" --state-dir "$work/$p/state" --kubelet-dir "$dir") ;;
        go)     cmd=("$build/bench/go-plugin" -devices "$n" -dir "$dir") ;;
        esac
        if [ ! -x "${cmd[0]}" ]; then
                echo "run.sh: ${cmd[0]} not built, $p skipped" >&2
                return 0
        fi
        start_kubelet "$dir" "$out" || return 1

        # the subshell notes the time and becomes the plugin: t0 is its exec
        ( echo "$EPOCHREALTIME" > "$work/$p/t0"; exec "${cmd[@]}" ) > "$work/$p/plugin.log" 2>&1 &
        plugin_pid=$!
        if ! wait_for "$out" " devices resource=$res " 60; then
                echo "run.sh: $p: no ListAndWatch message within 60 s" >&2
                tail -n 20 "$out" "$work/$p/plugin.log" >&2
                stop "$plugin_pid"; plugin_pid=
                stop "$kubelet_pid"; kubelet_pid=
                return 1
        fi
        t0=$(tr -d . < "$work/$p/t0")
        t_reg=$(stamp_us "$out" "registered resource=$res ")
        t_law=$(stamp_us "$out" "devices resource=$res ")
        emit "${p}_register_ms" "$(awk -v d=$(( t_reg - t0 )) 'BEGIN { printf "%.1f", d / 1000 }')"
        emit "${p}_law_first_msg_ms" "$(awk -v d=$(( t_law - t0 )) 'BEGIN { printf "%.1f", d / 1000 }')"
        emit "${p}_rss_idle_kb" "$(proc_kb "$plugin_pid" status VmRSS)"
        emit "${p}_anon_idle_kb" "$(proc_kb "$plugin_pid" smaps_rollup Anonymous)"

        endpoint=$(grep -m1 -E " registered resource=$res " "$out" | sed -E 's/.* endpoint=([^ ]+) .*/\1/')
        for c in 1 16; do
                b=$work/$p/bench-c$c
                ticks=$(cpu_ticks "$plugin_pid")
                if ! "$bench" --socket "$dir/$endpoint" --calls "$calls" --concurrency "$c" > "$b" 2> "$b.err"; then
                        echo "run.sh: $p: kdp-bench failed at concurrency $c" >&2
                        tail -n 5 "$b.err" >&2
                fi
                # the plugin's own CPU per call (warm-up and ListAndWatch samples included)
                [ "$c" = 1 ] && emit "${p}_cpu_us_per_allocate" "$(awk -v t=$(( $(cpu_ticks "$plugin_pid") - ticks )) \
                        -v hz="$(getconf CLK_TCK)" -v n="$calls" 'BEGIN { printf "%.1f", t * 1e6 / hz / n }')"
                [ "$c" = 1 ] && emit "${p}_law_warm_p50_us" "$(bench_field "$b" law_first_msg_p50_us)"
                emit "${p}_allocate_c${c}_p50_us" "$(bench_field "$b" allocate_p50_us)"
                emit "${p}_allocate_c${c}_p99_us" "$(bench_field "$b" allocate_p99_us)"
                emit "${p}_allocate_c${c}_calls_per_s" "$(bench_field "$b" allocate_calls_per_s)"
        done
        emit "${p}_vmhwm_kb" "$(proc_kb "$plugin_pid" status VmHWM)"
        emit "${p}_rss_kb" "$(proc_kb "$plugin_pid" status VmRSS)"
        emit "${p}_anon_kb" "$(proc_kb "$plugin_pid" smaps_rollup Anonymous)"
        sleep 3         # after a burst: what each keeps (kdpd trims its heap 2 s after one, Go scavenges)
        emit "${p}_anon_settled_kb" "$(proc_kb "$plugin_pid" smaps_rollup Anonymous)"
        emit "${p}_threads" "$(awk '$1 == "Threads:" { print $2 }' "/proc/$plugin_pid/status")"

        stop "$plugin_pid"
        rc=$?
        plugin_pid=
        [ "$rc" -eq 0 ] || echo "run.sh: $p: the plugin exited with status $rc after SIGTERM" >&2
        stop "$kubelet_pid"; kubelet_pid=
}

# ratio N FIGURE: kdpd's figure over Go's, when both exist
ratio() {
        local a=${fig[kdpd_n$1_$2]:-} b=${fig[go_n$1_$2]:-}
        [ -n "$a" ] && [ -n "$b" ] || return 0
        echo "ratio_n$1_$2_kdpd_over_go=$(awk -v a="$a" -v b="$b" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "nan" }')"
}

echo "host_cpus=$(nproc)"
echo "allocate_calls=$calls"
for n in $sizes; do
        for impl in $plugins; do
                run_one "$impl" "$n"
        done
done
for n in $sizes; do
        for f in anon anon_settled anon_idle vmhwm rss register_ms law_first_msg_ms law_warm_p50_us \
                 allocate_c1_p50_us allocate_c1_p99_us allocate_c16_p50_us allocate_c16_p99_us cpu_us_per_allocate; do
                case $f in
                anon|vmhwm|rss) ratio "$n" "${f}_kb" ;;
                anon_idle)      ratio "$n" anon_idle_kb ;;
                anon_settled)   ratio "$n" anon_settled_kb ;;
                *)              ratio "$n" "$f" ;;
                esac
        done
done
