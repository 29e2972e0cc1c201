#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Packs files into a one-layer OCI image archive (oci-layout, index.json, the
# manifest, the config and an uncompressed layer under blobs/sha256/), the form
# `ctr images import` reads. Every blob is deterministic: the same inputs give
# the same digests.
#
# Usage: oci-image.sh OUT.tar NAME ENTRYPOINT SRC:DEST...
#   NAME        the image reference, e.g. kdp.local/pause:1
#   ENTRYPOINT  the entrypoint path inside the image (one argument, no args)
#   SRC:DEST    a file to copy to DEST (absolute, in the image), mode kept; a directory SRC is
#               copied with everything in it (links as links) as the directory DEST
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: oci-image.sh OUT.tar NAME ENTRYPOINT SRC:DEST..." >&2; exit 2; }
out=$1 name=$2 entry=$3; shift 3

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/rootfs" "$work/image/blobs/sha256"
for f in "$@"; do
        src=${f%%:*} dest=${f#*:}
        case $dest in /*) ;; *) echo "oci-image.sh: $dest is not absolute" >&2; exit 2 ;; esac
        mkdir -p "$work/rootfs$(dirname "$dest")"
        if [ -d "$src" ]; then
                mkdir -p "$work/rootfs$dest"
                cp -a "$src/." "$work/rootfs$dest"
        else
                cp -p "$src" "$work/rootfs$dest"
        fi
done

# put FILE as a blob; prints "DIGEST SIZE"
blob() {
        local d s
        d=$(sha256sum "$1" | cut -d' ' -f1); s=$(stat -c %s "$1")
        mv "$1" "$work/image/blobs/sha256/$d"
        echo "$d $s"
}

tar -C "$work/rootfs" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
        --format=posix --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
        -cf "$work/layer.tar" .
read -r layer layer_size < <(blob "$work/layer.tar")

printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":["%s"],"Env":["PATH=/bin"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
        "$entry" "$layer" > "$work/config.json"
read -r config config_size < <(blob "$work/config.json")

printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
        "$config" "$config_size" "$layer" "$layer_size" > "$work/manifest.json"
read -r manifest manifest_size < <(blob "$work/manifest.json")

printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
        "$manifest" "$manifest_size" "$name" "${name##*:}" > "$work/image/index.json"
printf '{"imageLayoutVersion":"1.0.0"}' > "$work/image/oci-layout"

tar -C "$work/image" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf "$out" oci-layout index.json blobs
