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
printf 'example:\n  devices: 1\0006\n' >"$cfg"
refuse nulbyte "^E.* \"Rejected config file\" path=\"$cfg\" line=2 column=13 reason=\"a NUL byte\" err=\"Invalid argument\"$" --config "$cfg" --backend example
printf 'example:\n  devices: 2 # \377\n' >"$cfg"
refuse notutf8 "^E.* \"Rejected config file\" path=\"$cfg\" line=2 column=16 reason=\"a byte that is not UTF-8\" err=\"Invalid argument\"$" --config "$cfg" --backend example
mkfifo "$T/fifo.yaml"
refuse fifo "^E.* \"Failed to open config file\" path=\"$T/fifo.yaml\" reason=\"a FIFO, not a regular file\" err=\"Invalid argument\"$" --config "$T/fifo.yaml" --backend example
refuse devzero '^E.* "Failed to open config file" path="/dev/zero" reason="a character device, not a regular file" err="Invalid argument"$' --config /dev/zero --backend example
refuse directory "^E.* \"Failed to open config file\" path=\"$T\" reason=\"a directory, not a regular file\" err=\"Is a directory\"$" --config "$T" --backend example
head -c 1048577 /dev/zero | tr '\0' '#' >"$T/big.yaml"
refuse big "^E.* \"Failed to open config file\" path=\"$T/big.yaml\" reason=\"larger than the size limit\" maxBytes=1048576 err=\"File too large\"$" --config "$T/big.yaml" --backend example
printf 'example:\n  resource: "not a name"\n' >"$cfg"
refuse badresource "^E.* \"Rejected config value\" backend=\"example\" key=\"example.resource\" value=\"not a name\" origin=\"$cfg:2\" reason=\"not an extended resource name <domain>/<name> the kubelet accepts\" err=\"Invalid argument\"$" --config "$cfg" --backend example

# 4096 keys (the most a section holds): each kind of problem is logged three times and then
# counted in one line; one key more is refused before the file is built
many() {        # many FILE N HEAD FORMAT: HEAD, then FORMAT (printf, one %d used twice) for 0..N-1
        { printf '%b' "$3"; seq 0 $(($2 - 1)) | awk -v f="$4" '{ printf f, $1, $1 }'; } >"$1"
}
many "$T/keys.yaml" 4096 'example:\n' '  k%d: %d\n'
refuse manykeys '"Omitted more unknown config keys" section="example" omitted=4093 err="Invalid argument"$' --config "$T/keys.yaml" --backend example
assert_eq "$(count_lines "$T/manykeys.err" '"Unknown config key"')" 3 "unknown key lines of 4096"
assert_eq "$(count_lines "$T/manykeys.err" "\"Unknown config key\" key=\"example.k2\" origin=\"$T/keys.yaml:4\" err=\"Invalid argument\"$")" 1 "third unknown key named"
assert_eq "$(wc -l <"$T/manykeys.err")" 7 "log lines for 4096 unknown keys (start, the open file limit, 3, the count, exit)"
many "$T/dups.yaml" 2048 'example:\n' '  devices: %d\n  x%d: [1]\n'
refuse manydups "\"Omitted more problems of the config file\" path=\"$T/dups.yaml\" reason=\"duplicate key\" omitted=2044 err=\"Invalid argument\"$" --config "$T/dups.yaml" --backend example
assert_eq "$(count_lines "$T/manydups.err" "\"Omitted more problems of the config file\" path=\"$T/dups.yaml\" reason=\"value must be a scalar\" omitted=2045 err=\"Invalid argument\"$")" 1 "lists counted"
assert_eq "$(count_lines "$T/manydups.err" 'reason="duplicate key" err=')" 3 "duplicate key lines"
assert_eq "$(count_lines "$T/manydups.err" 'reason="value must be a scalar" err=')" 3 "list value lines"
assert_eq "$(wc -l <"$T/manydups.err")" 11 "log lines for 4096 problems of two kinds (start, the open file limit, 2 × (3, the count), exit)"
pass "4096 problems give three lines and a count per kind"
many "$T/keys.yaml" 4097 'example:\n' '  k%d: %d\n'
refuse toomanykeys "^E.* \"Rejected config file\" path=\"$T/keys.yaml\" line=4098 column=3 key=\"example\" reason=\"a mapping of more than 4096 keys\" err=\"Invalid argument\"$" --config "$T/keys.yaml" --backend example
assert_eq "$(wc -l <"$T/toomanykeys.err")" 4 "log lines for 4097 keys (start, the open file limit, the refusal, exit)"
pass "4097 keys in a section: refused with one line naming the limit"

refuse badvalue '"Rejected config value" backend="example" key="example.devices" value="x" origin="-o example.devices=x"' -o example.devices=x --backend example
refuse badoverride '"Rejected config override" override="example" reason="not of the form BACKEND.KEY=VALUE"' -o example --backend example
refuse nofile "path=\"$T/none.yaml\"" --config "$T/none.yaml" --backend example

assert_eq "$(ls "$DIR" | grep -c '^kdp-')" 0 "sockets left by refused starts"
pass "no socket left behind"
