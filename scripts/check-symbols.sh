#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The docs/style.md §10 lint. Usage: scripts/check-symbols.sh BUILD_DIR
#
#  (a) symbols: every global symbol an object of framework/src/lib or
#      framework/src/daemon defines starts with kdp_<file stem, - as _>_
#      (device-tree.c -> kdp_device_tree_*), apart from the exceptions below;
#  (a2) backend modules: every global symbol of plugins/<kind>/<stem>.c in the registered
#      backends' kdp_<kind>_core libraries starts with <kind>_<stem>_ (sriov: config.c ->
#      sriov_config_*);
#  (b) backends: each BUILD_DIR/plugins/*.so exports only kdp_backend_entry;
#  (c) source: in framework/ and plugins/ *.c *.h, no exit( (nor _exit, _Exit,
#      quick_exit), no goto, no // comments, every open( / openat( call has
#      O_CLOEXEC on the same line, and every fopen( mode has "e".
#      (c) looks at code only: comments and string literals are blanked first,
#      except the fopen mode, which is read from the literal.
#
# Uses $NM if set (CMake passes CMAKE_NM), else nm. Prints one line per violation and exits 1
# if there was any, 0 otherwise.
set -euo pipefail

if [[ $# -ne 1 || ! -d $1 ]]; then
        echo "usage: $0 BUILD_DIR" >&2
        exit 2
fi
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
nm=${NM:-nm}
failed=0

fail() {
        echo "$*"
        failed=1
}

# Exceptions to the file-stem rule: public ABI names that include/kdp/*.h fix, implemented in a
# file whose stem is narrower or different. Keep this table small; a new module gets a new file.
#   backend-ctx.c   kdp_backend_*            (backend.h: kdp_backend_path(), kdp_backend_param*(), ...)
#   alloc.c         kdp_alloc_response_*     (alloc.h; already inside kdp_alloc_*)
#                   kdp_pref_response_*      (alloc.h)
#   device.c        kdp_device_*             (device.h; this is just the stem rule, kdp_device_list_* included)
#   main.c          main, and nothing else   (the only file without the kdp_ prefix)
declare -A extra_globs=(
        [backend-ctx]="kdp_backend_*"
        [alloc]="kdp_alloc_response_* kdp_pref_response_*"
)

# ---- (a) global symbols of the framework objects ----

mapfile -t objects < <(find "$build" -path '*/CMakeFiles/*' \
        \( -path '*/src/lib/*.c.o' -o -path '*/src/daemon/*.c.o' \) -type f | sort)
if [[ ${#objects[@]} -eq 0 ]]; then
        fail "$build: no objects of framework/src/lib or framework/src/daemon under CMakeFiles (build first)"
fi
for obj in "${objects[@]}"; do
        source_file=framework/src/${obj##*/src/}
        source_file=${source_file%.o}
        [[ -f $src/$source_file ]] || continue          # stale object of a removed file
        stem=$(basename "$source_file" .c)
        if [[ $stem == main ]]; then
                globs=(main)
        else
                globs=("kdp_${stem//-/_}_*")
                read -r -a more <<< "${extra_globs[$stem]:-}"
                globs+=("${more[@]}")
        fi
        # "<addr> <type> <name>[\t<file>:<line>]" with -l when the object has debug info
        while IFS=$'\t' read -r entry where; do
                read -r _ type name <<< "$entry"
                ok=0
                for g in "${globs[@]}"; do
                        # shellcheck disable=SC2053 # $g is a glob on purpose
                        if [[ $name == $g ]]; then
                                ok=1
                                break
                        fi
                done
                if [[ $ok -eq 0 ]]; then
                        where=${where#"$src"/}
                        fail "${where:-$source_file}: global symbol '$name' ($type) is not ${globs[*]}"
                fi
        done < <("$nm" -g -l --defined-only "$obj")
done

# ---- (a2) global symbols of the registered backends' module libraries ----
#
# A backend split into modules (plugins/<kind>/<stem>.c, one header) builds them as the static
# library kdp_<kind>_core, which its .so and its unit tests link. Each module's globals start with
# <kind>_<stem>_ (or are <kind>_<stem> itself), so a name says which file defines it. Register a
# backend here once its modules follow the rule.
plugin_modules=(sriov fpga)

for kind in "${plugin_modules[@]}"; do
        mapfile -t objects_of_kind < <(find "$build/plugins/$kind/CMakeFiles/kdp_${kind}_core.dir" \
                -name '*.c.o' -type f 2>/dev/null | sort)
        for obj in "${objects_of_kind[@]}"; do
                stem=$(basename "$obj" .c.o)
                [[ -f $src/plugins/$kind/$stem.c ]] || continue         # stale object of a removed file
                prefix="${kind}_${stem//-/_}"
                while IFS=$'\t' read -r entry where; do
                        read -r _ type name <<< "$entry"
                        if [[ $name != "$prefix" && $name != "${prefix}_"* ]]; then
                                where=${where#"$src"/}
                                fail "${where:-plugins/$kind/$stem.c}: global symbol '$name' ($type) is not ${prefix}_*"
                        fi
                done < <("$nm" -g -l --defined-only "$obj")
        done
done

# ---- (b) what each backend exports ----

shopt -s nullglob
backends=("$build"/plugins/*.so)
shopt -u nullglob
if [[ ${#backends[@]} -eq 0 ]]; then
        fail "$build/plugins: no backend .so (build first)"
fi
for so in "${backends[@]}"; do
        n_entry=0
        while read -r _ type name; do
                case $name in
                kdp_backend_entry)
                        n_entry=1
                        continue
                        ;;
                _init | _fini | _edata | _end | __bss_start | _DYNAMIC | _GLOBAL_OFFSET_TABLE_)
                        continue                        # the linker's, not the backend's
                        ;;
                esac
                [[ $type == A ]] && continue            # version nodes
                fail "plugins/${so##*/}: exports '$name' ($type); a backend exports only kdp_backend_entry"
        done < <("$nm" -D --defined-only "$so")
        if [[ $n_entry -eq 0 ]]; then
                fail "plugins/${so##*/}: does not export kdp_backend_entry"
        fi
done

# ---- (c) source checks ----

mapfile -t sources < <(cd "$src" && find framework plugins -type f \( -name '*.c' -o -name '*.h' \) | sort)
(cd "$src" && awk '
# The code of one line: /* */ comments and the text of string and char literals become blanks (so
# columns still match the raw line); a // comment is kept as is so it can be reported.
function code_of(line,    out, i, c, n) {
        out = ""
        n = length(line)
        i = 1
        while (i <= n) {
                c = substr(line, i, 1)
                if (in_comment) {
                        if (substr(line, i, 2) == "*/") {
                                out = out "  "
                                in_comment = 0
                                i += 2
                        } else {
                                out = out " "
                                i++
                        }
                } else if (substr(line, i, 2) == "/*") {
                        out = out "  "
                        in_comment = 1
                        i += 2
                } else if (substr(line, i, 2) == "//") {
                        return out substr(line, i)
                } else if (c == "\"" || c == "\047") {
                        quote = c
                        out = out c
                        i++
                        while (i <= n && substr(line, i, 1) != quote) {
                                if (substr(line, i, 1) == "\\") {
                                        out = out " "
                                        i++
                                }
                                out = out " "
                                i++
                        }
                        if (i <= n)
                                out = out quote
                        i++
                } else {
                        out = out c
                        i++
                }
        }
        return out
}

# "open (" -> "open"
function call_name(s) {
        sub(/[ \t]*\($/, "", s)
        return s
}

function report(msg) {
        print FILENAME ":" FNR ": " msg
        bad = 1
}

FNR == 1 { in_comment = 0 }

{
        raw = $0
        code = code_of(raw)
        # the same text with a blank on either side, so [^A-Za-z0-9_] also matches at the line ends
        padded = " " code " "

        if (match(padded, /[^A-Za-z0-9_](exit|_exit|_Exit|quick_exit)[ \t]*\(/))
                report("calls " call_name(substr(padded, RSTART + 1, RLENGTH - 1)) "(); " \
                       "only main.c ends the process, by returning from main()")
        if (match(padded, /[^A-Za-z0-9_]goto[^A-Za-z0-9_]/))
                report("uses goto; use _cleanup_ instead")
        if (index(code, "//"))
                report("has a // comment; use /* */")
        if (match(padded, /[^A-Za-z0-9_.>](open|openat)[ \t]*\(/) && code !~ /O_CLOEXEC/)
                report("calls " call_name(substr(padded, RSTART + 1, RLENGTH - 1)) "() " \
                       "without O_CLOEXEC on the same line")
        if (match(padded, /[^A-Za-z0-9_.>]fopen[ \t]*\(/)) {
                # the mode is the last string literal on the line (fopen(path, "re"))
                rest = substr(raw, RSTART + RLENGTH - 1)
                mode = ""
                while (match(rest, /"[^"]*"/)) {
                        mode = substr(rest, RSTART + 1, RLENGTH - 2)
                        rest = substr(rest, RSTART + RLENGTH)
                }
                if (mode == "")
                        report("calls fopen() without a literal mode on the same line; " \
                               "use a mode with \"e\" (O_CLOEXEC)")
                else if (index(mode, "e") == 0)
                        report("calls fopen() with mode \"" mode "\" without \"e\" (O_CLOEXEC)")
        }
}

END { exit bad }
' "${sources[@]}") || failed=1

if [[ $failed -ne 0 ]]; then
        echo "check-symbols: FAILED (docs/style.md §2, §3, §4, §10)" >&2
        exit 1
fi
echo "check-symbols: ok (${#objects[@]} objects, ${#backends[@]} backends, ${#sources[@]} sources)"
