#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# sim-node/fixtures-generated: the committed fixtures of tests/fixtures/nodes/ are exactly what
# generate.py writes (nobody edited an output by hand, nobody forgot to run it), and the
# generator is deterministic (two runs, byte-identical trees, links included). Exit 77 = skipped.
set -u

src=${KDP_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
nodes=$src/tests/fixtures/nodes
command -v python3 > /dev/null || { echo "SKIP: no python3"; exit 77; }
tmp=$(mktemp -d /tmp/kdp-fixtures-generated.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

failures=0
for run in a b; do
        if ! python3 "$nodes/generate.py" --out "$tmp/$run" > "$tmp/$run.log" 2>&1; then
                echo "FAIL: generate.py --out failed:"; sed 's/^/    /' "$tmp/$run.log"
                exit 1
        fi
done
if diff -r --no-dereference "$tmp/a" "$tmp/b" > "$tmp/diff"; then
        echo "ok: two runs of generate.py write byte-identical trees"
else
        echo "FAIL: generate.py is not deterministic:"; sed 's/^/    /' "$tmp/diff"
        failures=$((failures + 1))
fi
if diff -r --no-dereference -x generate.py -x __pycache__ "$tmp/a" "$nodes" > "$tmp/diff"; then
        echo "ok: the committed fixtures are what generate.py writes"
else
        echo "FAIL: tests/fixtures/nodes differs from what generate.py writes (run it, commit its output):"
        sed 's/^/    /' "$tmp/diff" | head -40
        failures=$((failures + 1))
fi
[ $failures = 0 ] && echo "all checks passed"
[ $failures = 0 ]
