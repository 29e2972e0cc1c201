# SPDX-License-Identifier: GPL-2.0-or-later
# Programming a 60 MB bitstream (a real size: a Stratix 10 GBS is tens of MB) on the simulated
# 2× PAC D5005 node costs kdpd no anonymous memory of its size: the FME is handed the file's
# read-only mapping, whose pages are the page cache's, not kdpd's heap (the DaemonSet's limit is
# 64 MiB). kdpd's RssAnon is read while the emulated FME holds the PR call (`slow`), when a copy of
# the file would still be held; then the PR ends, and the image the FME was given is exactly the
# file's raw bitstream (its size and SHA-256, as sim-node -v logs them).
. "$(dirname "$0")/lib.sh"

NODE="$KDP_SOURCE_DIR/tests/fixtures/nodes/fpga-d5005.umockdev"
. "$(dirname "$0")/fpga-lib.sh"
AF=fpga.intel.com/af-bfa.d84.v6xNhR7oVv6MlYZc4buqLdhCTcSko8QT-J5DNoP5BAs
IFID=bfac4d851ee856fe8c95865ce1bbaa2d
NLB0=d8424dc4a4a3c413f89e433683f9040b
NLB3=f7df405cbd7acf7222f144b0b93acd18
BITS="$T/bitstreams"
GBS="$BITS/$IFID/$NLB0.gbs"
RAW_MB=60
GROWTH_MAX_KB=$((16 * 1024))    # kdpd's anonymous memory may grow this much while it programs
ANON_MAX_KB=$((24 * 1024))      # and be at most this (builds without sanitizers or valgrind)

write_gbs "$BITS" $IFID $NLB0
head -c $((RAW_MB * 1000 * 1000)) /dev/urandom >>"$GBS"
meta=$(od -An -tu4 -j16 -N4 "$GBS" | tr -d ' ')
tail -c +$((20 + meta + 1)) "$GBS" >"$T/raw.bin"
raw_bytes=$(stat -c %s "$T/raw.bin")
raw_sha=$(sha256sum "$T/raw.bin" | cut -d' ' -f1)
rm "$T/raw.bin"

# rss_anon PID: RssAnon of PID in kB
rss_anon() {
        awk '/^RssAnon:/ { print $2 }' "/proc/$1/status"
}

SIM_OPTS=(-v)
run_node big -o fpga.bitstream_dir="$BITS"
node_serves big $AF
wait_devices $AF "^devices resource=$AF capacity=2 allocatable=2 healthy=dfl-port.0,dfl-port.1 unhealthy= "
S=$(socket_of $AF)
pid=$(awk '/"Starting kdpd"/ { print $3; exit }' "$ERR")
[ -r "/proc/$pid/status" ] || fail "no kdpd process $pid"

echo "drift platform/dfl-port.1 $NLB3" >&9
echo "fpga-pr dfl-fme.1 slow 3600000" >&9
echo "echo drifted" >&9
wait_line "$T/kdpd-big.out" '^drifted$'
before=$(rss_anon "$pid")
"${DIE_WITH_US[@]}" "$KDPCTL" prestart --socket "$S" --timeout 0 dfl-port.1 >"$T/prestart.out" 2>&1 &
PIDS+=($!)
IMAGE="sim-node: dfl-fme.1: PR image of port [0-9]+: $raw_bytes bytes, sha256 $raw_sha\$"
wait_line "$ERR" "sim-node: dfl-fme.1: PR image of port [0-9]+: " 60
during=$(rss_anon "$pid")
echo "RssAnon of kdpd: ${before} kB before, ${during} kB while the FME programs ${RAW_MB} MB"
[ -s "$T/prestart.out" ] && fail "PreStart answered before its programming ended: $(cat "$T/prestart.out")"
[ $((during - before)) -lt $GROWTH_MAX_KB ] ||
        fail "kdpd's anonymous memory grew by $((during - before)) kB programming ${RAW_MB} MB (limit $GROWTH_MAX_KB kB)"
if [ "${KDP_SANITIZED:-0}" != 1 ] && [ "${KDP_VALGRIND:-0}" != 1 ]; then
        [ "$during" -lt $ANON_MAX_KB ] || fail "kdpd's anonymous memory is $during kB while programming (limit $ANON_MAX_KB kB)"
fi
pass "programming ${RAW_MB} MB holds no copy of the bitstream in kdpd's anonymous memory"

echo "fpga-pr dfl-fme.1 good 0" >&9
wait_line "$T/prestart.out" '^prestart ok$'
assert_eq "$(count_lines "$ERR" "$IMAGE")" 1 "images the FME got that are the file's raw bitstream"
wait_line "$ERR" "\"Programmed the port before the container start\" backend=\"fpga\" device=\"dfl-port.1\" card=\"0000:d8:00.0\" afu=\"$NLB0\"$"
wait_devices $AF "^devices resource=$AF capacity=2 allocatable=2 healthy=dfl-port.0,dfl-port.1 unhealthy= "
pass "the FME got the file's raw bitstream byte for byte ($raw_bytes bytes) and the port carries its AFU"
stop_kdpd
stop_kubelet
