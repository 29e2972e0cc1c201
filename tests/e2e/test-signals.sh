# SPDX-License-Identifier: GPL-2.0-or-later
# SIGTERM: kdpd ends its streams, removes its sockets and exits 0.
# SIGHUP: the config is reloaded; only the backend whose section changed
# re-registers its resources; a broken config keeps the running one. Every
# backend not restarted gets its reload hook once per SIGHUP, then a scan
# (the reloader test backend adds one device per reload); a restarted one
# does not, and a broken kdpd config still reaches the hooks.
. "$(dirname "$0")/lib.sh"

RELOADER=reloader.example.com/thing

cfg="$T/config.yaml"
cat >"$cfg" <<YAML
example:
  devices: 4
twin:
  label: a
YAML
start_kubelet kubelet
start_kdpd kdpd --config "$cfg" --backend example --backend "$KDP_BUILD_DIR/tests/backends/kdp-backend-twin.so" \
        --backend "$KDP_BUILD_DIR/tests/backends/kdp-backend-reloader.so"
wait_line "$T/kubelet.out" '^devices resource=example.com/widget capacity=4 '
wait_line "$T/kubelet.out" '^devices resource=twin.example.com/gadget '
wait_line "$T/kubelet.out" "^devices resource=$RELOADER capacity=1 "
assert_eq "$(count_lines "$T/kubelet.out" '^registered ')" 3 "registrations at start"

cat >"$cfg" <<YAML
example:
  devices: 4
twin:
  label: b
YAML
kill -HUP "$KDPD_PID"
wait_line "$T/kdpd.err" '"Reloaded config" changedBackends=1 reloadedBackends=1$'
wait_count "$T/kubelet.out" '^registered resource=twin.example.com/gadget ' 2
# the new socket's first list: its registration is over, and no third one came before it
wait_count "$T/kubelet.out" '^devices resource=twin.example.com/gadget capacity=2 allocatable=2 ' 2
assert_eq "$(count_lines "$T/kubelet.out" '^registered resource=twin.example.com/gadget ')" 2 "twin registrations"
assert_eq "$(count_lines "$T/kubelet.out" '^registered resource=example.com/widget ')" 1 "example registrations"
pass "SIGHUP re-registered only the resource whose config changed"
devices_match $RELOADER '^devices resource=reloader\.example\.com/thing capacity=2 '
wait_count "$T/kdpd.err" '"Reloaded own files" backend="reloader"' 1
wait_count "$T/kdpd.err" '"Reloaded own files" backend="reloader" reloads=1$' 1
assert_eq "$(count_lines "$T/kubelet.out" "^registered resource=$RELOADER ")" 1 "reloader registrations"
pass "SIGHUP called the reload hook of the backend whose section did not change, once, then scanned it"

cat >"$cfg" <<YAML
example:
  devices: 6
twin:
  label: b
YAML
kill -HUP "$KDPD_PID"
wait_line "$T/kubelet.out" '^devices resource=example.com/widget capacity=6 allocatable=6 '
pass "SIGHUP applied a new device count"
wait_count "$T/kdpd.err" '"Reloaded config" changedBackends=1 reloadedBackends=1$' 2
devices_match $RELOADER '^devices resource=reloader\.example\.com/thing capacity=3 '
wait_count "$T/kdpd.err" '"Reloaded own files" backend="reloader"' 2
wait_count "$T/kdpd.err" '"Reloaded own files" backend="reloader" reloads=2$' 1
pass "a second SIGHUP called the reload hook once more"

# the reloader's own section changed: it is restarted (a fresh state, 5 devices) and not reloaded
cat >"$cfg" <<YAML
example:
  devices: 6
twin:
  label: b
reloader:
  devices: 5
YAML
kill -HUP "$KDPD_PID"
wait_count "$T/kdpd.err" '"Reloaded config" changedBackends=1 reloadedBackends=0$' 1
devices_match $RELOADER '^devices resource=reloader\.example\.com/thing capacity=5 '
assert_eq "$(count_lines "$T/kdpd.err" '"Reloaded own files" backend="reloader"')" 2 "reload calls after its restart"
pass "SIGHUP did not call the reload hook of the backend it restarted"

printf 'example:\n  devices: [1\n' >"$cfg"
kill -HUP "$KDPD_PID"
wait_line "$T/kdpd.err" '"Kept the running config after a failed reload"'
grep -q "\"Rejected config file\" path=\"$cfg\" line=3" "$T/kdpd.err" || fail "reload error does not name file and line"
S=$(plugin_socket widget)
assert_eq "$("$KDPCTL" list --socket "$S" | tail -n 1)" "total=6 healthy=6 unhealthy=0" "still serving after a bad reload"
pass "a broken config on SIGHUP keeps the running one"
wait_line "$T/kdpd.err" '"Reloaded the backends'"'"' own files" reloadedBackends=1$'
devices_match $RELOADER '^devices resource=reloader\.example\.com/thing capacity=6 '
wait_count "$T/kdpd.err" '"Reloaded own files" backend="reloader" reloads=1$' 2
assert_eq "$(count_lines "$T/kdpd.err" '"Reloaded own files" backend="reloader"')" 3 "reload calls in all"
pass "a broken kdpd config on SIGHUP still has the backends re-read their own files"

# bytes libfyaml would silently stop at: the reload fails, the running config (6 widgets) stays
printf 'example:\n  devices: 1\0006\ntwin:\n  label: b\n' >"$cfg"
kill -HUP "$KDPD_PID"
wait_count "$T/kdpd.err" '"Kept the running config after a failed reload"' 2
assert_eq "$(count_lines "$T/kdpd.err" "\"Rejected config file\" path=\"$cfg\" line=2 column=13 reason=\"a NUL byte\" err=\"Invalid argument\"$")" 1 \
        "NUL byte named with line and column"
assert_eq "$("$KDPCTL" list --socket "$S" | tail -n 1)" "total=6 healthy=6 unhealthy=0" "still 6 widgets after a NUL byte"
printf 'example:\n  devices: 2\n# caf\351\ntwin:\n  label: b\n' >"$cfg"
kill -HUP "$KDPD_PID"
wait_count "$T/kdpd.err" '"Kept the running config after a failed reload"' 3
assert_eq "$(count_lines "$T/kdpd.err" "\"Rejected config file\" path=\"$cfg\" line=3 column=6 reason=\"a byte that is not UTF-8\" err=\"Invalid argument\"$")" 1 \
        "byte that is not UTF-8 in a comment named with line and column"
assert_eq "$("$KDPCTL" list --socket "$S" | tail -n 1)" "total=6 healthy=6 unhealthy=0" "still 6 widgets after a bad comment"
pass "a reload that libfyaml could not read whole keeps the running config"

# the config path becomes a FIFO nobody writes: the reload is refused at once, SIGTERM still works below
rm -f "$cfg"
mkfifo "$cfg"
kill -HUP "$KDPD_PID"
wait_count "$T/kdpd.err" '"Kept the running config after a failed reload"' 4
assert_eq "$(count_lines "$T/kdpd.err" "\"Failed to open config file\" path=\"$cfg\" reason=\"a FIFO, not a regular file\" err=\"Invalid argument\"$")" 1 \
        "FIFO refused"
assert_eq "$("$KDPCTL" list --socket "$S" | tail -n 1)" "total=6 healthy=6 unhealthy=0" "still 6 widgets after a FIFO"
pass "a config that became a FIFO is refused on SIGHUP without waiting for a writer"

# 4000 sections of backends that are not loaded (16 009 values: within the shape limits): three
# warnings and a count, the rest applies
rm -f "$cfg"
{ printf 'example:\n  devices: 5\ntwin:\n  label: b\n'; seq 0 3999 | awk '{ printf "s%d:\n  a: %d\n", $1, $1 }'; } >"$cfg"
kill -HUP "$KDPD_PID"
wait_line "$T/kubelet.out" '^devices resource=example.com/widget capacity=5 allocatable=5 '
wait_line "$T/kdpd.err" '"Omitted more config of backends that are not loaded" omitted=3997$'
assert_eq "$(count_lines "$T/kdpd.err" '"Ignored config of a backend that is not loaded"')" 3 "warnings for 4000 sections"
assert_eq "$(count_lines "$T/kdpd.err" "\"Ignored config of a backend that is not loaded\" key=\"a\" section=\"s2\" origin=\"$cfg:10\"$")" 1 \
        "third section named"
pass "SIGHUP with 4000 unknown sections: three warnings and a count, the known section applied"

socks_before=$(ls "$(sock_dir)" | grep -c '^kdp-')
assert_eq "$socks_before" 3 "kdpd sockets while running"
stop_kdpd
assert_eq "$(ls "$(sock_dir)" | grep -c '^kdp-')" 0 "kdpd sockets after SIGTERM"
# the plugin watcher may see the socket go first, and then closes the connection itself
if watcher_mode; then
        wait_line "$T/kubelet.out" '^(stream-ended resource=example.com/widget status=OK|deregistered resource=example.com/widget )'
else
        wait_line "$T/kubelet.out" '^stream-ended resource=example.com/widget status=OK'
fi
pass "SIGTERM: streams ended with OK, sockets removed, exit 0"
