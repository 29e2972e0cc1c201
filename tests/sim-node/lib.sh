# SPDX-License-Identifier: GPL-2.0-or-later
# What the rig's test scripts share; source it first. It sets src, build (exported as
# KDP_BUILD_DIR), simnode, check (sim-check), nodes (tests/fixtures/nodes) and tmp (removed on exit
# with fds 3 and 4 closed and $sim_pid killed), skips (exit 77) when sim-node is not built or
# umockdev's preload does not run here, and defines ok, fail (counted in $failures) and expect.
# ok() never fails, so "[ ... ] && ok ... || fail ..." is an if-then-else.
# shellcheck disable=SC2034
src=${KDP_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
build=${KDP_BUILD_DIR:-$src/build}
export KDP_BUILD_DIR=$build
simnode=$src/tests/sim-node/sim-node
check=$build/tests/sim-node/sim-check
nodes=$src/tests/fixtures/nodes

for f in "$check" "$build/tests/sim-node/sim-node" "$@"; do
        if [ ! -x "$f" ]; then
                echo "SKIP: $f is not built"
                exit 77
        fi
done
tmp=$(mktemp -d /tmp/kdp-sim-node.XXXXXX)
sim_pid=
cleanup() {
        exec 3>&- 4>&- 2>/dev/null
        [ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null
        rm -rf "$tmp"
}
trap cleanup EXIT

# does this machine run umockdev's preload at all?
"$simnode" "$nodes/flapping-device.umockdev" -- true
if [ $? = 77 ]; then
        echo "SKIP: umockdev's preload is not available"
        exit 77
fi

failures=0
fail() {
        echo "FAIL: $*"
        failures=$((failures + 1))
}
ok() {
        echo "ok: $*"
}
# expect NAME FILE: FILE must equal stdin exactly
expect() {
        local name=$1 file=${2:?expect NAME FILE}
        if diff -u <(cat) "$file" > "$tmp/diff"; then
                ok "$name"
        else
                fail "$name"
                sed 's/^/    /' "$tmp/diff"
        fi
}
