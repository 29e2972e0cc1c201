# SPDX-License-Identifier: GPL-2.0-or-later
# Allocate, GetPreferredAllocation and PreStartContainer answered exactly,
# through `kdpctl` on the plugin socket and through the stand-in kubelet's
# admission flow (preferred → Allocate → PreStart).
. "$(dirname "$0")/lib.sh"

start_kubelet kubelet --admit example.com/widget=2
start_kdpd kdpd --backend example
wait_line "$T/kubelet.out" '^prestart resource=example.com/widget ok'
assert_eq "$(grep '^admitted' "$T/kubelet.out")" \
        "admitted resource=example.com/widget n=2 preferred=widget-0,widget-2 allocated=widget-0,widget-2" \
        "admission of 2 devices (same NUMA node preferred)"
assert_eq "$(grep '^alloc ' "$T/kubelet.out" | tr '\n' '|')" \
        "alloc resource=example.com/widget env EXAMPLE_WIDGETS=widget-0,widget-2|alloc resource=example.com/widget env WIDGET_0=widget-0|alloc resource=example.com/widget env WIDGET_2=widget-2|alloc resource=example.com/widget device /dev/null /dev/widget0 rw|alloc resource=example.com/widget device /dev/null /dev/widget2 rw|alloc resource=example.com/widget annotation example.com/widgets=widget-0,widget-2|" \
        "allocate response seen by the kubelet"
pass "kubelet admission flow"
# the example backend takes no PodResources answers: the kubelet is not asked
assert_eq "$(grep -c '"Following pod resources"' "$T/kdpd.err")" 0 "no PodResources List without an allocated hook"

S=$(plugin_socket widget)
out=$("$KDPCTL" allocate --socket "$S" widget-7) || fail "allocate one"
assert_eq "$(echo "$out" | tr '\n' '|')" \
        "env EXAMPLE_WIDGETS=widget-7|env WIDGET_7=widget-7|device /dev/null /dev/widget7 rw|annotation example.com/widgets=widget-7|" \
        "allocate one"
pass "allocate one device"

all=widget-0,widget-1,widget-2,widget-3,widget-4,widget-5,widget-6,widget-7
out=$("$KDPCTL" allocate --socket "$S" --container "$all") || fail "allocate all"
assert_eq "$(echo "$out" | grep -c '^device ')" 8 "device nodes when allocating all"
assert_eq "$(echo "$out" | grep '^env EXAMPLE_WIDGETS=')" "env EXAMPLE_WIDGETS=$all" "env when allocating all"
pass "allocate all devices"

out=$("$KDPCTL" allocate --socket "$S" widget-1 widget-99 2>&1) && fail "unknown ID accepted"
assert_eq "$out" 'error: code=INVALID_ARGUMENT message=unknown device "widget-99" of resource example.com/widget' \
        "unknown device error"
pass "unknown ID refused with INVALID_ARGUMENT naming it"

long=$(printf 'x%.0s' $(seq 1 64))
out=$("$KDPCTL" allocate --socket "$S" "$long" 2>&1) && fail "64-character ID accepted"
assert_eq "$out" "error: code=INVALID_ARGUMENT message=device ID longer than 63 characters" "long ID error"
pass "over-long ID refused"

out=$("$KDPCTL" allocate --socket "$S" 2>&1) && fail "empty request accepted"
assert_eq "$out" "error: code=INVALID_ARGUMENT message=an AllocateRequest needs 1 to 64 container requests, got 0" \
        "empty request error"
pass "empty AllocateRequest refused"

# limits on what one peer can make kdpd allocate, each with its own error
seq -f 'widget-%g' 0 65536 | sed 's/widget-\([0-9]*\)/widget-0/' >"$T/ids"       # 65537 IDs
out=$("$KDPCTL" allocate --socket "$S" --ids-file "$T/ids" 2>&1) && fail "65537 IDs accepted"
assert_eq "$out" "error: code=INVALID_ARGUMENT message=request refused before decoding: more than 65536 device IDs in one AllocateRequest (field devices_ids)" \
        "too many IDs"
head -c 5000000 /dev/zero | tr '\0' 'w' | fold -w 60 >"$T/big"                  # a 5 MB request
out=$("$KDPCTL" allocate --socket "$S" --ids-file "$T/big" 2>&1) && fail "5 MB request accepted"
case "$out" in
"error: code=RESOURCE_EXHAUSTED message="*) ;;
*) fail "5 MB request: $out" ;;
esac
args=()
for i in $(seq 0 64); do args+=(--container widget-1); done
out=$("$KDPCTL" allocate --socket "$S" "${args[@]}" 2>&1) && fail "65 containers accepted"
assert_eq "$out" "error: code=INVALID_ARGUMENT message=request refused before decoding: more than 64 container requests in one AllocateRequest (field container_requests)" \
        "too many containers"
assert_eq "$("$KDPCTL" allocate --socket "$S" widget-2 | grep EXAMPLE)" "env EXAMPLE_WIDGETS=widget-2" "serving after limits"
pass "limits: IDs per request, message size and containers refused with clear errors; still serving"

out=$("$KDPCTL" allocate --socket "$S" --container widget-1 --container widget-3,widget-5) || fail "multi-container"
assert_eq "$(echo "$out" | grep -E '^(container|env EXAMPLE)' | tr '\n' '|')" \
        "container 0|env EXAMPLE_WIDGETS=widget-1|container 1|env EXAMPLE_WIDGETS=widget-3,widget-5|" \
        "multi-container response"
pass "one response per container"

assert_eq "$("$KDPCTL" preferred --socket "$S" --size 2)" "preferred widget-0,widget-2" "preferred of all"
assert_eq "$("$KDPCTL" preferred --socket "$S" --size 2 --must widget-3)" "preferred widget-3,widget-1" \
        "preferred with must_include on NUMA 1"
assert_eq "$("$KDPCTL" preferred --socket "$S" --size 3 --available widget-0 --available widget-1 --available widget-3)" \
        "preferred widget-0,widget-1,widget-3" "preferred with a constrained available set"
assert_eq "$("$KDPCTL" preferred --socket "$S" --size 9)" \
        "preferred widget-0,widget-1,widget-2,widget-3,widget-4,widget-5,widget-6,widget-7" "preferred larger than available"
assert_eq "$("$KDPCTL" preferred --socket "$S" --size 2147483647 --must widget-5)" \
        "preferred widget-5,widget-0,widget-1,widget-2,widget-3,widget-4,widget-6,widget-7" "preferred of the largest size"
pass "GetPreferredAllocation honours NUMA, must_include and size"

assert_eq "$("$KDPCTL" prestart --socket "$S" widget-1 widget-2)" "prestart ok" "prestart"
out=$("$KDPCTL" prestart --socket "$S" widget-42 2>&1) && fail "prestart of an unknown ID accepted"
assert_eq "$out" 'error: code=INVALID_ARGUMENT message=unknown device "widget-42" of resource example.com/widget' \
        "prestart unknown"
pass "PreStartContainer"

assert_eq "$("$KDPCTL" options --socket "$S")" "pre_start_required=true get_preferred_allocation_available=true" \
        "options"
pass "GetDevicePluginOptions"
stop_kdpd
assert_eq "$(ls "$T/cdi" 2>/dev/null)" "" "CDI specs without example.cdi"
pass "without example.cdi: no CDI name in an answer, no CDI spec"

# example.cdi: kdpd writes the widgets' CDI spec, and Allocate names them by it alone (a runtime
# that resolves CDI names, containerd 2 or CRI-O, finds every name it is given)
start_kdpd kdpd-cdi --backend example -o example.devices=2 -o example.cdi=true
wait_count "$T/kubelet.out" '^devices resource=example.com/widget capacity=2 ' 1
S=$(plugin_socket widget)
out=$("$KDPCTL" allocate --socket "$S" widget-1) || fail "allocate with CDI"
assert_eq "$(echo "$out" | tr '\n' '|')" \
        "env EXAMPLE_WIDGETS=widget-1|annotation example.com/widgets=widget-1|cdi example.com/widget=widget-1|" \
        "allocate with example.cdi"
assert_eq "$(ls "$T/cdi")" "kdp-example.com-widget.json" "CDI spec files"
assert_eq "$(python3 -c '
import json, sys
spec = json.load(open(sys.argv[1]))
print(spec["kind"])
for d in spec["devices"]:
    e = d["containerEdits"]
    print(d["name"], ",".join(e.get("env", [])),
          ",".join("%s:%s" % (n["path"], n.get("hostPath", "")) for n in e.get("deviceNodes", [])))
' "$T/cdi/kdp-example.com-widget.json" | tr '\n' '|')" \
        "example.com/widget|widget-0 WIDGET_0=widget-0 /dev/widget0:/dev/null|widget-1 WIDGET_1=widget-1 /dev/widget1:/dev/null|" \
        "the CDI spec of the widgets"
pass "with example.cdi: the spec written, the answer names the widgets by it"
stop_kdpd
