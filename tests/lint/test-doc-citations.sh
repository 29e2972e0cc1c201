#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The citation checker itself: on a small tree it must pass good citations and
# name each broken one (a missing section, a range end, a missing document).
set -euo pipefail
D=docs          # the citations below are built from $D so that the lint of the tree skips them
CHECK="$(dirname "$0")/check-doc-citations.py"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/$D" "$T/src"
printf '# A\n## 1. One\n### 1.6 Six\n## 3. Three\n' >"$T/$D/a.md"
fail=0
expect() {      # expect RC OUTPUT-LINE... : run the checker, compare exit code and output
        local rc=$1 out; shift
        out=$(python3 "$CHECK" "$T" 2>/dev/null) && got=0 || got=$?
        if [ "$got" != "$rc" ] || [ "$out" != "$(printf '%s\n' "$@")" ]; then
                echo "FAIL: expected rc=$rc and:"; printf '%s\n' "$@"; echo "got rc=$got and:"; echo "$out"
                fail=1
        fi
}
echo "/* $D/a.md §1.6, §3 and $D/a.md §1–§3 */" >"$T/src/ok.c"
expect 0 "doc-citations: 4 section citations, all present"
echo "# \`$D/a.md\` §1, §2 and §1.6" >"$T/src/bad.sh"
expect 1 "src/bad.sh:1: $D/a.md has no §2"
echo "see $D/a.md §1.6–1.7" >"$T/src/bad.sh"
expect 1 "src/bad.sh:1: $D/a.md has no §1.7"
echo "see $D/b.md §1" >"$T/src/bad.sh"
expect 1 "src/bad.sh:1: $D/b.md does not exist"
printf " * see $D/a.md\n * §2, wrapped\n" >"$T/src/bad.sh"
expect 1 "src/bad.sh:1: $D/a.md has no §2"
mkdir -p "$T/plugins/sriov"
printf '/* bare sections: §1.6 and §3 */\n' >"$T/plugins/sriov/x.h"
printf '# S\n## 1. One\n' >"$T/$D/hardware-sriov.md"
expect 1 "plugins/sriov/x.h:1: $D/hardware-sriov.md (cited bare) has no §1.6" \
         "plugins/sriov/x.h:1: $D/hardware-sriov.md (cited bare) has no §3" "src/bad.sh:1: $D/a.md has no §2"
exit $fail
