# SPDX-License-Identifier: GPL-2.0-or-later
# Requests no kubelet sends, given as wire bytes where kdpctl cannot build them
# (`kdpctl raw`): device IDs with a NUL byte (protobuf-c would cut them short:
# "widget-1\0evil" read as "widget-1"), not UTF-8 or not printable, and
# GetPreferredAllocation's edges. Each is refused with INVALID_ARGUMENT naming
# the problem, or answered best effort as documented; each refusal is one
# warning at --v 0.
. "$(dirname "$0")/lib.sh"

start_kubelet kubelet
start_kdpd kdpd --backend example
wait_line "$T/kubelet.out" '^devices resource=example.com/widget capacity=8 '
S=$(plugin_socket widget)

# expect_refused NAME MESSAGE COMMAND...: the call fails with exactly "error: code=INVALID_ARGUMENT message=MESSAGE"
expect_refused() {
        local name=$1 msg=$2 out
        shift 2
        out=$("$@" 2>&1) && fail "$name: accepted"
        assert_eq "$out" "error: code=INVALID_ARGUMENT message=$msg" "$name"
}

hex() { printf '%s' "$1" | od -An -v -tx1 | tr -d ' \n'; }
len() { printf '%02x' $(($(printf '%s' "$1" | wc -c) / 2)); }
# field N (length-delimited) holding hex bytes B: tag, length, bytes
field() { local b=$2; printf '%02x%s%s' $(($1 << 3 | 2)) "$(len "$b")" "$b"; }

W1=$(hex widget-1)
NUL_ID="${W1}006576696c"                        # widget-1 \0 evil
BAD_UTF8="$(hex widget-)e931"                   # widget- 0xe9 1

# AllocateRequest { container_requests { devices_ids } }
alloc() { field 1 "$(field 1 "$1")"; }
assert_eq "$("$KDPCTL" raw --socket "$S" allocate "$(alloc "$W1")")" "raw ok" "a plain ID as wire bytes"
expect_refused "NUL in an Allocate ID" "malformed request message: a NUL byte in string field devices_ids" \
        "$KDPCTL" raw --socket "$S" allocate "$(alloc "$NUL_ID")"
expect_refused "Allocate ID not UTF-8" "malformed request message: a byte that is not UTF-8 in string field devices_ids" \
        "$KDPCTL" raw --socket "$S" allocate "$(alloc "$BAD_UTF8")"
expect_refused "Allocate ID with a control character" \
        'device ID "widget\x01" is not 1 to 63 printable ASCII characters without spaces' \
        "$KDPCTL" allocate --socket "$S" "$(printf 'widget\001')"
expect_refused "Allocate ID with a space" \
        'device ID "widget 1" is not 1 to 63 printable ASCII characters without spaces' \
        "$KDPCTL" allocate --socket "$S" "widget 1"
pass "Allocate refuses IDs with a NUL, not UTF-8 or not printable"

# PreStartContainerRequest { devices_ids }
expect_refused "NUL in a PreStart ID" "malformed request message: a NUL byte in string field devices_ids" \
        "$KDPCTL" raw --socket "$S" prestart "$(field 1 "$NUL_ID")"
pass "PreStartContainer refuses an ID with a NUL"

# PreferredAllocationRequest { container_requests { available_deviceIDs=1 must_include_deviceIDs=2 allocation_size=3 } }
expect_refused "NUL in a must_include ID" "malformed request message: a NUL byte in string field must_include_deviceIDs" \
        "$KDPCTL" raw --socket "$S" preferred "$(field 1 "$(field 1 "$W1")$(field 2 "$NUL_ID")1801")"
expect_refused "size -1" "allocation size -1: at least 1 device must be asked for" \
        "$KDPCTL" raw --socket "$S" preferred "$(field 1 "$(field 1 "$W1")18ffffffffffffffffff01")"
expect_refused "size 0" "allocation size 0: at least 1 device must be asked for" \
        "$KDPCTL" preferred --socket "$S" --size 0
expect_refused "more must_include than size" "2 must_include devices but an allocation size of 1" \
        "$KDPCTL" preferred --socket "$S" --size 1 --must widget-1 --must widget-2
expect_refused "must_include not available" 'must_include device "widget-1" is not among the available devices' \
        "$KDPCTL" preferred --socket "$S" --size 2 --must widget-1 --available widget-2 --available widget-3
pass "GetPreferredAllocation refuses a size below 1, more must_include than the size, a must_include not available"

assert_eq "$("$KDPCTL" preferred --socket "$S" --size 3 --available widget-2 --available widget-3)" \
        "preferred widget-2,widget-3" "size above available: all of them"
assert_eq "$("$KDPCTL" preferred --socket "$S" --size 2 --available widget-2 --available widget-99 --available widget-3)" \
        "preferred widget-2,widget-3" "an available ID unknown here is left out"
assert_eq "$("$KDPCTL" preferred --socket "$S" --size 2 --must widget-5 --available widget-5 --available widget-4 \
        --available widget-1)" "preferred widget-5,widget-1" "must_include within size and available"
pass "GetPreferredAllocation answers best effort above the available count and without unknown IDs"

# every refusal above: one warning at --v 0 naming method, status and reason (5 per method is within the limit)
refused() {     # refused METHOD REASON: how many warning lines
        count_lines "$T/kdpd.err" "^W.* \"Refused call\" resource=\"example.com/widget\" method=\"/v1beta1.DevicePlugin/$1\" status=\"INVALID_ARGUMENT\" reason=\"$2\" pid=[0-9]+ uid=$(id -u)$"
}
assert_eq "$(refused Allocate 'malformed request message: a NUL byte in string field devices_ids')" 1 "NUL Allocate logged"
assert_eq "$(refused Allocate 'malformed request message: a byte that is not UTF-8 in string field devices_ids')" 1 "UTF-8 Allocate logged"
assert_eq "$(refused Allocate 'device ID \\"widget\\x01\\" is not 1 to 63 printable ASCII characters without spaces')" 1 "control character logged"
assert_eq "$(refused Allocate 'device ID \\"widget 1\\" is not 1 to 63 printable ASCII characters without spaces')" 1 "space logged"
assert_eq "$(refused PreStartContainer 'malformed request message: a NUL byte in string field devices_ids')" 1 "NUL PreStart logged"
assert_eq "$(refused GetPreferredAllocation 'malformed request message: a NUL byte in string field must_include_deviceIDs')" 1 "NUL preferred logged"
assert_eq "$(refused GetPreferredAllocation 'allocation size -1: at least 1 device must be asked for')" 1 "size -1 logged"
assert_eq "$(refused GetPreferredAllocation 'allocation size 0: at least 1 device must be asked for')" 1 "size 0 logged"
assert_eq "$(refused GetPreferredAllocation '2 must_include devices but an allocation size of 1')" 1 "must over size logged"
assert_eq "$(refused GetPreferredAllocation 'must_include device \\"widget-1\\" is not among the available devices')" 1 "must not available logged"
assert_eq "$(count_lines "$T/kdpd.err" '"Refused call"')" 10 "refusal lines in all"
pass "each refused call is one warning at --v 0"

assert_eq "$("$KDPCTL" list --socket "$S" | tail -n 1)" "total=8 healthy=8 unhealthy=0" "still serving"
assert_eq "$(count_lines "$T/kubelet.out" '^stream-ended ')" 0 "kubelet stream ends"
stop_kdpd
