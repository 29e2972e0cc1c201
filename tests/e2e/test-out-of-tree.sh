# SPDX-License-Identifier: GPL-2.0-or-later
# A vendor's flow: install kdp, build a backend out of tree with
# `pkg-config kdp-backend` only, and have the installed kdpd serve it.
. "$(dirname "$0")/lib.sh"

prefix="$T/prefix"
cmake --install "$KDP_BUILD_DIR" --prefix "$prefix" >"$T/install.out" 2>&1 || fail "cmake --install"
pc=$(dirname "$(find "$prefix" -name kdp-backend.pc)")
[ -n "$pc" ] || fail "kdp-backend.pc not installed"
export PKG_CONFIG_PATH="$pc"
flags=$(pkg-config --cflags --libs kdp-backend) || fail "pkg-config kdp-backend"
backenddir=$(pkg-config --variable=backenddir kdp-backend)

mkdir -p "$T/vendor"
sed 's/example\.com\/widget/vendor.example.org\/gizmo/' "$KDP_SOURCE_DIR/plugins/example/example.c" >"$T/vendor/example.c"
cc -std=gnu11 -shared -fPIC -Wall -Werror -o "$T/vendor/kdp-backend-example.so" "$T/vendor/example.c" $flags ||
        fail "out-of-tree backend build"
assert_eq "$(nm -D --defined-only "$T/vendor/kdp-backend-example.so" | awk '{print $3}' | grep -v '^_' | tr '\n' ' ')" \
        "kdp_backend_entry " "symbols the backend exports"
cp "$T/vendor/kdp-backend-example.so" "$backenddir/kdp-backend-example.so"
pass "backend built against the installed headers with pkg-config"

start_kubelet kubelet
KDPD="$(find "$prefix" -name kdpd -type f)"
LD_LIBRARY_PATH="$prefix/$(pkg-config --variable=libdir kdp-backend | sed "s|^$prefix/||")" start_kdpd kdpd --backend example -o example.devices=2 --v 2
wait_line "$T/kubelet.out" '^devices resource=vendor.example.org/gizmo capacity=2 allocatable=2 '
# kdpd finds its backends beside itself (<bindir>/../lib/kdp/backends): that is the directory
# pkg-config names to the vendor
loaded=$(sed -n 's/.*"Loaded backend" backend="example" path="\(.*\)"$/\1/p' "$T/kdpd.err")
assert_eq "$(realpath "$loaded")" "$(realpath "$backenddir/kdp-backend-example.so")" \
        "the backend kdpd loaded, the one installed in pkg-config's backenddir"
pass "the installed kdpd found the installed backend by name and served it"
stop_kdpd
