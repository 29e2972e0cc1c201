# SPDX-License-Identifier: GPL-2.0-or-later
# kdpd refuses, with a clear error and exit code 1, backends that cannot work
# and configs that are wrong (naming file, line and key).
. "$(dirname "$0")/lib.sh"

B="$KDP_BUILD_DIR/tests/backends"

# refuse NAME EXPECTED-LOG-REGEX ARGS...
refuse() {
        local name=$1 re=$2 rc
        shift 2
        "$KDPD" --kubelet-dir "$DIR" --state-dir "$T/state" "$@" >"$T/$name.out" 2>"$T/$name.err"
        rc=$?
        assert_eq "$rc" 1 "$name: exit code"
        grep -Eq -- "$re" "$T/$name.err" || fail "$name: no log line matching '$re'"
        pass "$name refused"
}

refuse missing '"Refused backend" backend="nosuch" reason="file not found"' --backend nosuch
refuse noentry '"Refused backend" path=".*kdp-backend-noentry.so" reason="no kdp_backend_entry symbol"' --backend "$B/kdp-backend-noentry.so"
refuse badabi '"Refused backend" path=".*kdp-backend-badabi.so" reason="ABI major version mismatch" backendAbi=99 kdpAbi=1' --backend "$B/kdp-backend-badabi.so"
refuse nohook 'reason="missing required hook \(name, init, scan or fini\)"' --backend "$B/kdp-backend-nohook.so"
refuse badname 'reason="ops name does not match the file name"' --backend "$B/kdp-backend-badname.so"
refuse dupres '"Refused resource served by another backend" resource="example.com/widget" backend="dupres" servedBy="example"' --backend example --backend "$B/kdp-backend-dupres.so"
refuse twice '"Refused backend loaded twice" backend="example"' --backend example --backend example
refuse initfail '"Failed to start backend" backend="initfail" err="No such device"' --backend "$B/kdp-backend-initfail.so"
refuse nobackend '"No backend given; use --backend NAME\|PATH"'

cfg="$T/bad.yaml"
printf 'example:\n  devices: 4\n  colour: blue\n' >"$cfg"
refuse unknownkey "\"Unknown config key\".*(origin=\"$cfg:3\".*key=\"example.colour\"|key=\"example.colour\".*origin=\"$cfg:3\")" --config "$cfg" --backend example
printf 'example:\n  devices: many\n' >"$cfg"
refuse badint "\"Rejected config value\" backend=\"example\" key=\"example.devices\" value=\"many\" origin=\"$cfg:2\"" --config "$cfg" --backend example
printf 'example:\n  devices: [1\n' >"$cfg"
refuse syntax "\"Rejected config file\" path=\"$cfg\" line=3 column=1 reason=\"flow sequence without a closing bracket\"" --config "$cfg" --backend example
printf 'example:\n  devices: 4\n  devices: 5\n' >"$cfg"
refuse duplicate "\"Rejected config file\" path=\"$cfg\" line=3 key=\"example.devices\" reason=\"duplicate key\"" --config "$cfg" --backend example
refuse badvalue '"Rejected config value" backend="example" key="example.devices" value="x" origin="-o example.devices=x"' -o example.devices=x --backend example
refuse badoverride '"Rejected config override" override="example" reason="not of the form BACKEND.KEY=VALUE"' -o example --backend example
refuse nofile "path=\"$T/none.yaml\"" --config "$T/none.yaml" --backend example

assert_eq "$(ls "$DIR" | grep -c '^kdp-')" 0 "sockets left by refused starts"
pass "no socket left behind"
