#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# kdp's image from a build tree, without a registry: kdpd and kdpctl in /opt/kdp/bin and every
# backend (BUILD/plugins/*.so) in /opt/kdp/lib/kdp/backends, the paths of deploy/Dockerfile's
# image (kdpd finds its backends in ../lib/kdp/backends beside itself), plus exactly the shared
# libraries they load, as ldd resolves them, and the dynamic loader, each at its real path (the
# build tree's RUNPATH included: libkdp.so stays where kdpd looks for it). Entrypoint
# /opt/kdp/bin/kdpd, as deploy/Dockerfile's. Each further SRC:DEST is packed too (a file or a
# directory, see oci-image.sh); a file that is an ELF object (a program, a preload library) brings
# the libraries it loads, as kdpd's do: a test image is kdp's plus what a test runs beside it.
#
# Usage: kdp-image.sh BUILD OUT.tar TAG [SRC:DEST...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 3 ] || { echo "usage: kdp-image.sh BUILD OUT.tar TAG [SRC:DEST...]" >&2; exit 2; }
build=$(realpath "$1") out=$2 tag=$3; shift 3

files=("$build/kdpd:/opt/kdp/bin/kdpd" "$build/kdpctl:/opt/kdp/bin/kdpctl")
objs=("$build/kdpd" "$build/kdpctl")
for so in "$build"/plugins/*.so; do
        files+=("$so:/opt/kdp/lib/kdp/backends/${so##*/}")
        objs+=("$so")
done
for o in "${objs[@]}"; do
        [ -f "$o" ] || { echo "kdp-image.sh: no $o (build $build first)" >&2; exit 1; }
done
for f in "$@"; do
        src=${f%%:*}
        [ -e "$src" ] || { echo "kdp-image.sh: no $src" >&2; exit 1; }
        files+=("$f")
        if [ -f "$src" ] && [ "$(head -c 4 "$src")" = $'\x7fELF' ]; then objs+=("$src"); fi
done
# ldd's lines: "libx.so.1 => /path/libx.so.1 (0x...)", "/lib64/ld-linux-x86-64.so.2 (0x...)",
# "linux-vdso.so.1 (0x...)" (the kernel's, no file); a library it cannot find stops the image
deps=$(for o in "${objs[@]}"; do ldd "$o" | sed "s|^|$o: |"; done)
if grep -F '=> not found' <<<"$deps" >&2; then echo "kdp-image.sh: a library above is not found" >&2; exit 1; fi
libs=$(awk '$3 == "=>" && $4 ~ /^\// { print $4; next } $2 ~ /^\// { print $2 }' <<<"$deps" | sort -u)
for l in $libs; do files+=("$(realpath "$l"):$l"); done
"$here/oci-image.sh" "$out" "$tag" /opt/kdp/bin/kdpd "${files[@]}"
