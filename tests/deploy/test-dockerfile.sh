#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# deploy/dockerfile: what deploy/Dockerfile installs is what the binaries need.
#
#   test-dockerfile.sh SRCDIR ELF|DIR...  (kdpd, kdpctl, libkdp; a DIR stands for
#                                          every kdp-backend-*.so in it)
#
# No image is built (no Docker daemon is needed): it is checked through dpkg,
# offline:
# - every runtime package of the final stage is a Debian package installed on
#   this machine (the -dev packages the build uses pull each of them in);
# - every shared library the ELF files load (ldd) belongs to a package that
#   the image has: a runtime package, one of their dependencies, or one that
#   debian:bookworm-slim already holds (Essential or Priority required, with
#   their dependencies);
# - every build-stage package is one scripts/install-deps installs too;
# - the entry point is kdpd.
# Skipped (77) where dpkg is missing.
set -u
src=${1:?usage: test-dockerfile.sh SRCDIR ELF...}
shift
dockerfile=$src/deploy/Dockerfile
if ! command -v dpkg-query >/dev/null || ! command -v ldd >/dev/null; then
        echo "SKIP: needs dpkg-query and ldd"
        exit 77
fi

passed=0 failed=0
check() {       # check OK|FAIL WHAT
        if [ "$1" = ok ]; then
                echo "ok   $2"; passed=$((passed + 1))
        else
                echo "FAIL $2"; failed=$((failed + 1))
        fi
}

# The package names of a stage's `apt-get install` (one per continuation line).
stage_packages() {      # stage_packages N: packages of the Nth FROM (1-based)
        awk -v want="$1" '
                /^FROM / { stage++; inst = 0; next }
                stage != want { next }
                /apt-get install/ { inst = 1; next }
                inst && /^[[:space:]]*&&/ { inst = 0 }
                inst && /^[[:space:]]+[a-z0-9][a-z0-9.+-]*[[:space:]]*\\$/ { print $1 }
        ' "$dockerfile"
}
mapfile -t build_pkgs < <(stage_packages 1)
mapfile -t runtime_pkgs < <(stage_packages 2)
[ ${#build_pkgs[@]} -gt 0 ] && [ ${#runtime_pkgs[@]} -gt 0 ] && r=ok || r=FAIL
check "$r" "deploy/Dockerfile: ${#build_pkgs[@]} build and ${#runtime_pkgs[@]} runtime packages found"

# One dpkg-query for the whole database: status, Essential, Priority and dependencies.
declare -A installed=() depends=()
base=()
while IFS=$'\t' read -r pkg status essential priority deps; do
        [ "$status" = "install ok installed" ] || continue
        installed[$pkg]=1
        depends[$pkg]=$deps
        [ "$essential" = yes ] || [ "$priority" = required ] && base+=("$pkg")
done < <(dpkg-query -W -f='${Package}\t${Status}\t${Essential}\t${Priority}\t${Depends}, ${Pre-Depends}\n')

# closure PKG...: the packages and, recursively, what they Depend/Pre-Depend on
# (of alternatives, those installed here).
declare -A in_image=()
closure() {
        local queue=("$@") p d alt
        while [ ${#queue[@]} -gt 0 ]; do
                p=${queue[-1]}; unset 'queue[-1]'
                [ -n "${in_image[$p]:-}" ] || [ -z "${installed[$p]:-}" ] && continue
                in_image[$p]=1
                IFS=',' read -ra ds <<<"${depends[$p]}"
                for d in "${ds[@]}"; do
                        IFS='|' read -ra alts <<<"$d"
                        for alt in "${alts[@]}"; do
                                alt=${alt%%(*}; alt=${alt%%:*}; alt=${alt// /}
                                [ -n "$alt" ] && [ -n "${installed[$alt]:-}" ] && queue+=("$alt")
                        done
                done
        done
}

for p in "${runtime_pkgs[@]}"; do
        [ -n "${installed[$p]:-}" ] && r=ok || r=FAIL
        check "$r" "runtime package $p is a Debian package (installed here)"
done
closure "${base[@]}" "${runtime_pkgs[@]}"

elves=()
for a in "$@"; do
        if [ -d "$a" ]; then
                n=${#elves[@]}
                for so in "$a"/kdp-backend-*.so; do
                        [ -e "$so" ] && elves+=("$so")
                done
                [ ${#elves[@]} -gt "$n" ] && r=ok || r=FAIL
                check "$r" "backends built in $a: $(( ${#elves[@]} - n ))"
        elif [ -e "$a" ]; then
                elves+=("$a")
        else
                check FAIL "$a exists"
        fi
done

# Every library the ELF files load (ldd: the whole tree), but ours.
declare -A libs=()
while read -r lib path; do
        case $lib in libkdp.so.*) continue ;; esac
        libs[$lib]=$path
done < <(for e in "${elves[@]}"; do ldd "$e"; done |
         awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 } $1 ~ /^\// { print $1, $1 }' | sort -u)
# Who owns each: one dpkg-query -S over every spelling of every path (usrmerge:
# dpkg may know /lib/... while ldd says /usr/lib/..., or the other way round).
declare -A owner_of=()
cands=()
for lib in "${!libs[@]}"; do
        path=${libs[$lib]}; real=$(readlink -f "$path")
        for c in "$path" "$real"; do
                cands+=("$c" "${c#/usr}" "/usr${c#/usr}")
        done
done
while IFS= read -r line; do
        owner=${line%%:*}                       # "libc6:amd64: /path", "a, b: /path"
        owner_of[${line#*: }]=${owner%%,*}
done < <(dpkg-query -S "${cands[@]}" 2>/dev/null)
declare -A by_pkg=()
for lib in "${!libs[@]}"; do
        path=${libs[$lib]}; real=$(readlink -f "$path"); owner=
        for c in "$path" "$real" "${path#/usr}" "${real#/usr}" "/usr${path#/usr}" "/usr${real#/usr}"; do
                owner=${owner_of[$c]:-} && [ -n "$owner" ] && break
        done
        if [ -z "$owner" ]; then
                check FAIL "$lib ($path): no Debian package owns it"
        else
                by_pkg[$owner]+=" $lib"
        fi
done
for owner in $(printf '%s\n' "${!by_pkg[@]}" | sort); do
        read -ra l <<<"${by_pkg[$owner]}"
        what="$owner: ${#l[@]} of the libraries loaded (${l[0]}$([ ${#l[@]} -gt 1 ] && echo ", ..."))"
        if [ -n "${in_image[$owner]:-}" ]; then
                check ok "$what, in the image"
        else
                check FAIL "$what, not in the image: add $owner to the runtime stage of deploy/Dockerfile"
        fi
done

mapfile -t deps_pkgs < <(sed -n '/^PACKAGES=(/,/^)/p' "$src/scripts/install-deps" | sed 's/#.*//' | tr ' ' '\n' | grep -E '^[a-z0-9][a-z0-9.+-]+$')
for p in "${build_pkgs[@]}"; do
        printf '%s\n' "${deps_pkgs[@]}" | grep -qx "$p" && r=ok || r=FAIL
        check "$r" "build package $p is one scripts/install-deps installs"
done

grep -Eq '^ENTRYPOINT \["[^"]*/kdpd"\]' "$dockerfile" && r=ok || r=FAIL
check "$r" "ENTRYPOINT is kdpd"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
