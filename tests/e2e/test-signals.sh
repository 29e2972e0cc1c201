# SPDX-License-Identifier: GPL-2.0-or-later
# SIGTERM: kdpd ends its streams, removes its sockets and exits 0.
# SIGHUP: the config is reloaded; only the backend whose section changed
# re-registers its resources; a broken config keeps the running one.
. "$(dirname "$0")/lib.sh"

cfg="$T/config.yaml"
cat >"$cfg" <<YAML
example:
  devices: 4
twin:
  label: a
YAML
start_kubelet kubelet
start_kdpd kdpd --config "$cfg" --backend example --backend "$KDP_BUILD_DIR/tests/backends/kdp-backend-twin.so"
wait_line "$T/kubelet.out" '^devices resource=example.com/widget capacity=4 '
wait_line "$T/kubelet.out" '^devices resource=twin.example.com/gadget '
assert_eq "$(count_lines "$T/kubelet.out" '^registered ')" 2 "registrations at start"

cat >"$cfg" <<YAML
example:
  devices: 4
twin:
  label: b
YAML
kill -HUP "$KDPD_PID"
wait_line "$T/kdpd.err" '"Reloaded config" changedBackends=1'
wait_line "$T/kubelet.out" '^registered resource=twin.example.com/gadget .*' 5
sleep 0.3
assert_eq "$(count_lines "$T/kubelet.out" '^registered resource=twin.example.com/gadget ')" 2 "twin registrations"
assert_eq "$(count_lines "$T/kubelet.out" '^registered resource=example.com/widget ')" 1 "example registrations"
pass "SIGHUP re-registered only the resource whose config changed"

cat >"$cfg" <<YAML
example:
  devices: 6
twin:
  label: b
YAML
kill -HUP "$KDPD_PID"
wait_line "$T/kubelet.out" '^devices resource=example.com/widget capacity=6 allocatable=6 '
pass "SIGHUP applied a new device count"

printf 'example:\n  devices: [1\n' >"$cfg"
kill -HUP "$KDPD_PID"
wait_line "$T/kdpd.err" '"Kept the running config after a failed reload"'
grep -q "\"Rejected config file\" path=\"$cfg\" line=3" "$T/kdpd.err" || fail "reload error does not name file and line"
S=$(plugin_socket widget)
assert_eq "$("$KDPCTL" list --socket "$S" | tail -n 1)" "total=6 healthy=6 unhealthy=0" "still serving after a bad reload"
pass "a broken config on SIGHUP keeps the running one"

socks_before=$(ls "$DIR" | grep -c '^kdp-')
assert_eq "$socks_before" 2 "kdpd sockets while running"
stop_kdpd
assert_eq "$(ls "$DIR" | grep -c '^kdp-')" 0 "kdpd sockets after SIGTERM"
wait_line "$T/kubelet.out" '^stream-ended resource=example.com/widget status=OK'
pass "SIGTERM: streams ended with OK, sockets removed, exit 0"
