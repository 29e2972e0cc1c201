# SPDX-License-Identifier: GPL-2.0-or-later
# A slow PreStartContainer blocks nothing else: while one waits (the gated test
# backend holds it, without the backend's lock, until the test removes a file),
# Allocate of the same and of the backend's other resource, and PreStarts of
# other devices, are answered; a second PreStart of the held device waits for
# the first; a restart of the backend at reload waits until the held one returns.
# Every assertion is on the order of events, none on time.
. "$(dirname "$0")/lib.sh"

HOLD="$T/hold"
mkdir -p "$HOLD"
cfg="$T/config.yaml"
cat >"$cfg" <<YAML
gated:
  hold_dir: $HOLD
YAML
start_kubelet kubelet
start_kdpd kdpd --config "$cfg" --backend "$KDP_BUILD_DIR/tests/backends/kdp-backend-gated.so" --v 2
wait_line "$T/kubelet.out" '^devices resource=gated.example.com/slow capacity=2 '
wait_line "$T/kubelet.out" '^devices resource=gated.example.com/fast capacity=2 '
wait_line "$T/kdpd.err" '"Ran unlocked outside pre-start" backend="gated" result=-1$'
pass "kdp_backend_run_unlocked() outside pre_start refused with -EPERM"
SLOW_S=$(plugin_socket slow)
FAST_S=$(plugin_socket fast)

# prestart_bg NAME ID: a PreStartContainer of ID on the slow resource in the background, output in $T/NAME.out
prestart_bg() {
        "${DIE_WITH_US[@]}" "$KDPCTL" prestart --socket "$SLOW_S" --timeout 0 "$2" >"$T/$1.out" 2>&1 &
        PIDS+=($!)
        eval "$1_PID=$!"
}

touch "$HOLD/slow-0"
prestart_bg held slow-0
wait_line "$T/kdpd.err" '"Holding pre-start" backend="gated" device="slow-0"'
assert_eq "$("$KDPCTL" allocate --socket "$FAST_S" fast-0 | grep '^env TINY_LABEL')" "env TINY_LABEL=a" \
        "Allocate of the backend's other resource"
assert_eq "$("$KDPCTL" allocate --socket "$SLOW_S" slow-1 | grep '^env TINY_LABEL')" "env TINY_LABEL=a" \
        "Allocate of the held resource"
assert_eq "$("$KDPCTL" prestart --socket "$FAST_S" fast-1)" "prestart ok" "PreStart of the other resource"
assert_eq "$("$KDPCTL" prestart --socket "$SLOW_S" slow-1)" "prestart ok" "PreStart of another device"
wait_count "$T/kdpd.err" '"Prepared devices" backend="gated"' 2
proc_alive "$held_PID" || fail "the held PreStart ended before its file was removed: $(cat "$T/held.out")"
assert_eq "$(cat "$T/held.out")" "" "held PreStart output while held"
pass "Allocate of both resources and PreStarts of other devices answered while a PreStart was held"

prestart_bg again slow-0
wait_line "$T/kdpd.err" '"Deferred PreStartContainer behind one of the same device" resource="gated.example.com/slow" device="slow-0"'
rm "$HOLD/slow-0"
wait_line "$T/held.out" '^prestart ok$'
wait_line "$T/again.out" '^prestart ok$'
assert_eq "$(grep -oE '"(Holding|Released) pre-start" backend="gated" device="slow-0"|"Prepared devices" backend="gated" resource="[^"]*" device="slow-0"' \
        "$T/kdpd.err" | tr '\n' '|')" \
        '"Holding pre-start" backend="gated" device="slow-0"|"Released pre-start" backend="gated" device="slow-0"|"Prepared devices" backend="gated" resource="gated.example.com/slow" device="slow-0"|"Prepared devices" backend="gated" resource="gated.example.com/slow" device="slow-0"|' \
        "the second PreStart of slow-0 ran after the first, without holding"
assert_eq "$(grep -c '"Released pre-start" backend="gated" device="slow-0" result=0$' "$T/kdpd.err")" 1 "released once"
pass "a second PreStart of a held device waited for the first"

# a restart of the backend (its config section changed) waits for the held PreStart
touch "$HOLD/slow-1"
prestart_bg restart slow-1
wait_line "$T/kdpd.err" '"Holding pre-start" backend="gated" device="slow-1"'
cat >"$cfg" <<YAML
gated:
  hold_dir: $HOLD
  label: b
YAML
kill -HUP "$KDPD_PID"
wait_line "$T/kdpd.err" '"Waiting for PreStartContainer calls before stopping backend" backend="gated" preStarts=1$'
proc_alive "$restart_PID" || fail "the held PreStart ended before its file was removed"
assert_eq "$(grep -c '"Stopped backend" backend="gated"' "$T/kdpd.err")" 0 "fini while a PreStart is held"
rm "$HOLD/slow-1"
wait_line "$T/kdpd.err" '"Stopped backend" backend="gated" preStarts=5$'
assert_eq "$(grep -oE '"Released pre-start" backend="gated" device="slow-1"|"Stopped backend"' "$T/kdpd.err" | tr '\n' '|')" \
        '"Released pre-start" backend="gated" device="slow-1"|"Stopped backend"|' "fini after the held PreStart returned"
wait_line "$T/restart.out" '^prestart ok$'
# the restarted backend's resources re-register, serving its new config
wait_count "$T/kubelet.out" '^registered resource=gated.example.com/fast ' 2
assert_eq "$("$KDPCTL" allocate --socket "$(plugin_socket fast)" fast-1 | grep '^env TINY_LABEL')" "env TINY_LABEL=b" \
        "Allocate after the restart"
pass "a backend restart at reload waited for the held PreStart before fini"
stop_kdpd
