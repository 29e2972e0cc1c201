#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# sim-node/random-scripts: the event scripts of sim-node/converge are ones sim-node takes, line by
# line, on their fixtures, without running sim-node (check-script.py follows the fixture's
# devices through a script by sim-node's rules):
#   - the random scripts (random-script.sh) of every fixture converge gives one, for seeds 1 to
#     KDP_RANDOM_SEEDS (default 20; 3 for the SR-IOV ones, whose generator is slow) and the seed
#     converge runs, so that a model of the node that drifts from sim-node's shows in a seed
#     converge does not run;
#   - every hand-written event script (tests/sim-node/converge/FIXTURE.NAME.script and
#     tests/fixtures/nodes/FIXTURE-NAME.script);
#   - and the checker refuses what sim-node refuses, with its reason.
# Needs bash and python3. Exit 77 = skipped.
set -u

src=${KDP_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
nodes=$src/tests/fixtures/nodes
checker=$src/tests/sim-node/check-script.py
command -v python3 > /dev/null || { echo "SKIP: no python3"; exit 77; }
. "$src/tests/sim-node/random-script.sh"
tmp=$(mktemp -d /tmp/kdp-random-scripts.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failures=0

# check WHAT ARGS...: check-script.py takes every script of ARGS (FIXTURE SCRIPT... groups)
check() {
        local what=$1
        shift
        if python3 "$checker" "$@" > "$tmp/refused" 2>&1; then
                echo "ok: $what"
        else
                echo "FAIL: $what; sim-node would refuse:"
                sed 's/^/    /' "$tmp/refused"
                failures=$((failures + 1))
        fi
}

# the random scripts
args=()
n_scripts=0
for i in "${!converge_fixtures[@]}"; do
        f=${converge_fixtures[i]}
        last=${KDP_RANDOM_SEEDS:-20}
        [[ $f == sriov-* ]] && last=3
        args+=("$nodes/$f.umockdev")
        for seed in $(seq 1 "$last") $((i + 1)); do
                [ -f "$tmp/$f.$seed" ] && continue
                random_script_of "$f" "$seed" > "$tmp/$f.$seed"
                args+=("$tmp/$f.$seed")
                n_scripts=$((n_scripts + 1))
        done
done
check "$n_scripts random scripts of ${#converge_fixtures[@]} fixtures" "${args[@]}"

# the hand-written ones: converge's cases and the fixtures' own scripts (not those of a fixture
# whose name extends the fixture's: gpu-mi300x4-cpx-repartition.script is gpu-mi300x4-cpx's)
args=()
n_scripts=0
for fixture in "$nodes"/*.umockdev; do
        f=$(basename "$fixture" .umockdev)
        for script in "$src/tests/sim-node/converge/$f".*.script "$nodes/$f"-*.script; do
                [ -f "$script" ] || continue
                name=${script##*/"$f"-}
                [ "$name" != "$script" ] && [ -f "$nodes/$f-${name%%-*}.umockdev" ] && continue
                args+=("$fixture" "$script")
                n_scripts=$((n_scripts + 1))
        done
done
check "$n_scripts hand-written event scripts" "${args[@]}"

# the checker refuses what sim-node refuses: each script below ends at the line sim-node stops at
flex=$nodes/gpu-flex170x2.umockdev
refuse() {
        local want=$1 got
        got=$(python3 "$checker" "$flex")
        if [ "$got" = "-: $want" ]; then
                echo "ok: refused: $want"
        else
                echo "FAIL: expected '-: $want', got '$got'"
                failures=$((failures + 1))
        fi
}
# what the generator once wrote (gpu-flex170x2, seed 5): writing the VF count already enabled
# does nothing, so the VF unbound before it has no driver to unbind
refuse "line 4: unbind 0000:ca:00.1: has no driver" <<'EOF'
sriov 0000:ca:00.0 4
unbind 0000:ca:00.1
sriov 0000:ca:00.0 4
unbind 0000:ca:00.1
EOF
refuse "line 2: sriov 0000:4d:00.0 2: 4 VFs enabled: write 0 first (the kernel gives EBUSY)" <<'EOF'
sriov 0000:4d:00.0 4
sriov 0000:4d:00.0 2
EOF
refuse "line 2: sriov 0000:4d:00.0 4: no driver to enable VFs (the kernel gives ENOENT)" <<'EOF'
unbind 0000:4d:00.0
sriov 0000:4d:00.0 4
EOF
refuse "line 3: bind 0000:4d:00.2 vfio-pci: unplugged" <<'EOF'
sriov 0000:4d:00.0 4
sriov 0000:4d:00.0 0
bind 0000:4d:00.2 vfio-pci
EOF
refuse "line 2: replug 0000:4c:01.0: present: unplug it first" <<'EOF'
unplug 0000:4d:00.0
replug 0000:4c:01.0
EOF
refuse "line 3: replug 0000:4d:00.0: its parent is unplugged" <<'EOF'
unplug 0000:4d:00.0
unplug 0000:4c:01.0
replug 0000:4d:00.0
EOF
refuse "line 3: bind 0000:ca:00.0 i915: already bound to vfio-pci" <<'EOF'
unbind 0000:ca:00.0
bind 0000:ca:00.0 vfio-pci
bind 0000:ca:00.0 i915
EOF
refuse "line 2: uevent 0000:ca:00.0 change: unplugged" <<'EOF'
unplug 0000:ca:00.0
uevent 0000:ca:00.0 change
EOF
refuse "line 2: rm dev/kmsg: no such file" <<'EOF'
rm dev/kmsg
rm dev/kmsg
EOF

if [ $failures -gt 0 ]; then
        echo "$failures check(s) failed"
        exit 1
fi
echo "all checks passed"
