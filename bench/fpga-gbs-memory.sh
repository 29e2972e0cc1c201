#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench/fpga-gbs-memory.sh [BUILD_DIR]: what programming a large bitstream costs kdpd in memory, on
# the simulated 2× PAC D5005 node (tests/fixtures/nodes/fpga-d5005.umockdev) as in bench/fpga.sh.
# A GBS of KDP_BENCH_GBS_MB (60) MB of raw bitstream is put in bitstream_dir, card 1's port drifts
# to another AFU, and a PreStartContainer programs it back while sim-node's FME holds the PR call
# for 2 s; kdpd's RssAnon is sampled every 10 ms until the PreStart answers. Not part of ctest.
#
#   gbs_mb                  the raw bitstream's size
#   gbs_anon_before_kb      kdpd's RssAnon before the PreStart
#   gbs_anon_peak_kb        the largest RssAnon sampled while it programs
#   gbs_vmhwm_before_kb, gbs_vmhwm_after_kb   VmHWM (peak RSS, file pages included) before and
#                           after: a mapped bitstream's pages the emulated FME read count here
set -u

build=$(cd "${1:-${KDP_BUILD_DIR:-build}}" && pwd) || exit 2
src=$(cd "$(dirname "$0")/.." && pwd)
mb=${KDP_BENCH_GBS_MB:-60}

. "$src/bench/lib.sh"
need kdpd kdpctl tests/interop/kubelet-go tests/sim-node/sim-node plugins/kdp-backend-fpga.so
. "$src/tests/e2e/fpga-gbs.sh"
IFID=bfac4d851ee856fe8c95865ce1bbaa2d
NLB0=d8424dc4a4a3c413f89e433683f9040b
NLB3=f7df405cbd7acf7222f144b0b93acd18

report_start
echo "gbs_mb=$mb"
fixture=$src/tests/fixtures/nodes/fpga-d5005.umockdev
write_gbs "$work/bits" $IFID $NLB0
head -c $((mb * 1000 * 1000)) /dev/urandom >> "$work/bits/$IFID/$NLB0.gbs"
mkfifo "$work/ctl"
exec 9<>"$work/ctl"
sim_control=$work/ctl
if session gbs sim --backend fpga --health-hold-ms 0 -o fpga.bitstream_dir="$work/bits"; then
        printf 'drift platform/dfl-port.1 %s\nfpga-pr dfl-fme.1 slow 2000\necho drifted\n' $NLB3 >&9
        for _ in $(seq 1000); do
                grep -q '^drifted$' "$work/gbs/kdpd.out" && break
                sleep 0.01
        done
        echo "gbs_anon_before_kb=$(proc_kb "$kdpd_pid" status RssAnon)"
        echo "gbs_vmhwm_before_kb=$(proc_kb "$kdpd_pid" status VmHWM)"
        "$build/kdpctl" prestart --socket "$endpoint" --timeout 60 dfl-port.1 > "$work/prestart.out" 2>&1 &
        prestart_pid=$!
        peak=0
        while kill -0 "$prestart_pid" 2>/dev/null; do
                a=$(proc_kb "$kdpd_pid" status RssAnon)
                [ "${a:-0}" -gt "$peak" ] && peak=$a
                sleep 0.01
        done
        wait "$prestart_pid"
        grep -q '^prestart ok$' "$work/prestart.out" || { echo "$me: PreStart failed: $(cat "$work/prestart.out")" >&2; }
        echo "gbs_anon_peak_kb=$peak"
        echo "gbs_vmhwm_after_kb=$(proc_kb "$kdpd_pid" status VmHWM)"
        stop_session
fi
report_end
