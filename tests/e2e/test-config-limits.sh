# SPDX-License-Identifier: GPL-2.0-or-later
# Config files of a hostile shape, as one ConfigMap edit would bring them to every node at once,
# against kdpd serving the SR-IOV backend on the simulated E810 node (two pools):
#   - kdpd's --config, reloaded by SIGHUP: a megabyte of nested brackets and a list of 140 000
#     entries (what fits kdpd's 1 MiB) are refused before a document is built, naming line,
#     column, key and the limit; the running config stays;
#   - the backend's config.json, changed (inotify) and then SIGHUP: the same two shapes, 129
#     pools and a file of 1 MiB + 1 byte are refused, the running pools stay (registered once, read back unchanged when the
#     good file returns);
#   - kdpd's peak RSS (VmHWM) stays under 40 MB through all of it (not under ASan or valgrind,
#     whose own memory it would measure). Before the shape limits, the brackets alone cost
#     kdpd ~300 MB and the list ~100 MB.
. "$(dirname "$0")/../procs.sh"
in_private_netns "$0" "$@"
. "$(dirname "$0")/lib.sh"

SIM="$KDP_SOURCE_DIR/tests/sim-node/sim-node"
NODES="$KDP_SOURCE_DIR/tests/fixtures/nodes"
BOUND_KB=$((40 * 1024))
MEMCHECK=1
[ "${KDP_VALGRIND:-0}" = 1 ] || [ "${KDP_SANITIZED:-0}" = 1 ] && MEMCHECK=0

for link in ens3f0np0 ens3f1np1; do
        netns_link_add "$link" >"$T/ip.out" 2>&1 || fail "cannot make link $link: $(cat "$T/ip.out")"
done

mkdir -p "$T/cm" "$T/dp"
DIR="$T/dp"
GOOD='{"resourceList": [
  {"resourceName": "a", "selectors": [{"drivers": ["iavf"]}]},
  {"resourceName": "b", "selectors": [{"drivers": ["vfio-pci"]}]}
]}'
echo "$GOOD" >"$T/cm/config.json"
KDP_CONFIG="sriov:
  config_file: $T/cm/config.json
  devinfo_dir: $T/devinfo
"
echo "$KDP_CONFIG" >"$T/kdp.yaml"

start_kubelet kubelet
"${DIE_WITH_US[@]}" "$SIM" "$NODES/sriov-e810.umockdev" -- "${KDPD_RUN[@]}" --kubelet-dir "$DIR" \
        --state-dir "$T/state" --cdi-dir "$T/cdi" --backend sriov --config "$T/kdp.yaml" \
        >"$T/kdpd.out" 2>"$T/kdpd.err" &
KDPD_PID=$!
PIDS+=("$KDPD_PID")
wait_line "$T/kdpd.err" '"Finished the first scan"|sim-node: .*preload|not built'
grep -q 'sim-node: .*preload\|not built' "$T/kdpd.err" && { echo "skip: no simulated node"; exit 77; }
wait_line "$T/kubelet.out" '^registered resource=intel.com/a '
wait_line "$T/kubelet.out" '^registered resource=intel.com/b '
KDPD=$(pgrep -P "$KDPD_PID")
[ -n "$KDPD" ] || fail "no kdpd under sim-node"

# brackets N: N '[' then N ']'
brackets() {
        head -c "$1" /dev/zero | tr '\0' '['
        head -c "$1" /dev/zero | tr '\0' ']'
}

# entries N: N comma-separated "8086"
entries() {
        awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) printf "%s\"8086\"", i ? "," : "" }'
}

# ---- kdpd's own config, SIGHUP ----------------------------------------------------------------

# replace FILE CONTENT-FILE: FILE swapped for CONTENT-FILE by rename, as a ConfigMap update does
replace() {
        cp "$2" "$1.new"
        mv "$1.new" "$1"
}

brackets 524000 >"$T/nested.yaml"
replace "$T/kdp.yaml" "$T/nested.yaml"
kill -HUP "$KDPD"
wait_line "$T/kdpd.err" "\"Rejected config file\" path=\"$T/kdp.yaml\" line=1 column=17 key=\"(\[0\]){16}\" reason=\"nested deeper than 16 levels\" err=\"Invalid argument\"\$"
wait_count "$T/kdpd.err" '"Kept the running config after a failed reload"' 1
pass "kdpd's config: a megabyte of brackets refused at the 17th, the running config kept"

{ printf 'sriov:\n  vendors: ['; entries 140000; printf ']\n'; } >"$T/long.yaml"     # 980 KB: within 1 MiB
replace "$T/kdp.yaml" "$T/long.yaml"
kill -HUP "$KDPD"
wait_line "$T/kdpd.err" "\"Rejected config file\" path=\"$T/kdp.yaml\" line=2 column=$((13 + 7 * 4096)) key=\"sriov.vendors\" reason=\"a list of more than 4096 entries\" err=\"Invalid argument\"\$"
wait_count "$T/kdpd.err" '"Kept the running config after a failed reload"' 2
pass "kdpd's config: a list of 140 000 entries refused at the 4097th, the running config kept"

echo "$KDP_CONFIG" >"$T/kdp-good.yaml"
replace "$T/kdp.yaml" "$T/kdp-good.yaml"
kill -HUP "$KDPD"
wait_line "$T/kdpd.err" '"Reloaded config" changedBackends=0 reloadedBackends=1$'
wait_line "$T/kdpd.err" "\"Reloaded the config file\" backend=\"sriov\" path=\"$T/cm/config.json\" pools=2 unchangedPools=2 trigger=\"SIGHUP\"\$"
pass "kdpd's config back: no backend changed, the running pools unchanged"

# ---- the backend's config.json: inotify, then SIGHUP -------------------------------------------

# refused FILE LINE-REGEX: config.json becomes FILE; the change and then a SIGHUP each refuse it
# with LINE-REGEX and keep the running pools
KEPT='"Kept the running pools after a failed reload of the config file" backend="sriov"'
N_KEPT=0
refused() {
        replace "$T/cm/config.json" "$1"
        N_KEPT=$((N_KEPT + 1))
        wait_count "$T/kdpd.err" "$KEPT path=\"$T/cm/config.json\" trigger=\"inotify\"" "$N_KEPT"
        kill -HUP "$KDPD"
        wait_count "$T/kdpd.err" "$KEPT path=\"$T/cm/config.json\" trigger=\"SIGHUP\"" "$N_KEPT"
        wait_count "$T/kdpd.err" "$2" 2
}

REJECTED="\"Rejected SR-IOV config file\" backend=\"sriov\" path=\"$T/cm/config.json\""
brackets 524000 >"$T/nested.json"
refused "$T/nested.json" "$REJECTED line=1 key=\"(\[0\]){16}\" reason=\"nested deeper than 16 levels \(column 17\)\" err=\"Invalid argument\"\$"
pass "config.json: a megabyte of brackets refused (inotify and SIGHUP), the pools kept"

{ printf '{"resourceList": [{"resourceName": "a", "selectors": [{"vendors": [\n'; entries 140000; printf ']}]}]}\n'; } \
        >"$T/long.json"
refused "$T/long.json" "$REJECTED line=2 key=\"resourceList\[0\]\.selectors\[0\]\.vendors\" reason=\"a list of more than 4096 entries \(column $((1 + 7 * 4096))\)\" err=\"Invalid argument\"\$"
pass "config.json: a list of 140 000 entries refused (inotify and SIGHUP), the pools kept"

awk 'BEGIN { print "{\"resourceList\": ["; for (i = 0; i < 129; i++)
        printf "  {\"resourceName\": \"p%d\", \"selectors\": [{\"drivers\": [\"iavf\"]}]}%s\n", i, i < 128 ? "," : ""
        print "]}" }' >"$T/pools.json"
refused "$T/pools.json" "$REJECTED line=130 key=\"resourceList\" reason=\"more than 128 resources: kdpd serves at most 128 from one config file\" err=\"Invalid argument\"\$"
pass "config.json: 129 pools refused (inotify and SIGHUP), the pools kept"

# one byte past what a ConfigMap holds: refused by its size, before it is parsed
{ printf '{"resourceList": []}'; head -c $((1024 * 1024 - 19)) /dev/zero | tr '\0' ' '; } >"$T/big.json"
refused "$T/big.json" "\"Failed to read SR-IOV config file\" backend=\"sriov\" path=\"$T/cm/config.json\" reason=\"larger than the size limit\" maxBytes=1048576 err=\"File too large\"\$"
pass "config.json: 1 MiB + 1 byte refused (inotify and SIGHUP), the pools kept"

echo "$GOOD" >"$T/good.json"
replace "$T/cm/config.json" "$T/good.json"
wait_line "$T/kdpd.err" "\"Reloaded the config file\" backend=\"sriov\" path=\"$T/cm/config.json\" pools=2 unchangedPools=2 trigger=\"inotify\"\$"
assert_eq "$(count_lines "$T/kubelet.out" '^registered resource=intel.com/a ')" 1 "intel.com/a registrations"
assert_eq "$(count_lines "$T/kubelet.out" '^registered resource=intel.com/b ')" 1 "intel.com/b registrations"
assert_eq "$(count_lines "$T/kubelet.out" '^registered ')" 2 "registrations"
pass "config.json back: the same two pools, each registered once"

if [ "$MEMCHECK" = 1 ]; then
        hwm=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$KDPD/status")
        echo "measured: kdpd VmHWM ${hwm} kB"
        [ "$hwm" -lt "$BOUND_KB" ] || fail "kdpd's VmHWM $hwm kB, not below $BOUND_KB kB"
        pass "kdpd's peak RSS ${hwm} kB, below $BOUND_KB kB"
fi

stop_kdpd
stop_kubelet
pass "config limits"
