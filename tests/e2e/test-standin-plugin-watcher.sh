# SPDX-License-Identifier: GPL-2.0-or-later
# The stand-in kubelet's plugin watcher (--plugins-registry, docs/kubelet.md §1.7),
# driven by watcher-plugin (a device plugin that registers through it):
#   - a socket already in the registry at start registers, and the connection
#     serves admissions and PodResources as a Register's does;
#   - a socket created later registers: GetInfo, GetDevicePluginOptions, then
#     NotifyRegistrationStatus(registered), with the Register path's events;
#   - the wrong type, no v1beta1 and a bad resource name are refused with the
#     kubelet's texts, told to the plugin and printed, and tried again after
#     0.5 s, 1 s, 2 s;
#   - a failed GetInfo is not told to the plugin, and the retry registers;
#   - an endpoint named by GetInfo is dialled instead of the registry socket;
#   - a failed connection (after validation) is told and printed, and not
#     retried: the kubelet counts the plugin registered until its socket goes;
#   - a socket removed deregisters (its stream cancelled, devices unhealthy);
#     one replaced by a rename deregisters, then the new one registers; names
#     starting with '.' are ignored;
#   - a second socket of a resource replaces the first, as a second Register
#     does; SIGUSR1 drops it;
#   - a stand-in killed and started again registers the sockets it finds, and
#     --drop-before-stream applies to them; SIGTERM ends their streams.
# kubelet.sock is served all along (start_kubelet waits for it).
. "$(dirname "$0")/lib.sh"

PLUGIN="$KDP_BUILD_DIR/tests/e2e/watcher-plugin"
REG="$T/plugins_registry"
[ -x "$PLUGIN" ] || fail "$PLUGIN is not built"
mkdir -p "$REG"
declare -A PLUGIN_PID=()

# start_plugin NAME SOCKET [ARGS...]: watcher-plugin on SOCKET, its events in $T/NAME.out
start_plugin() {
        local name=$1
        shift
        "${DIE_WITH_US[@]}" "$PLUGIN" "$@" >"$T/$name.out" 2>"$T/$name.err" &
        PIDS+=($!)
        PLUGIN_PID[$name]=$!
        wait_line "$T/$name.out" '^listening$'
}

# stop_plugin NAME: SIGTERM; the plugin removes its sockets and exits
stop_plugin() {
        kill_tree "${PLUGIN_PID[$1]}"
}

# wait_at_least FILE REGEX N: waits until at least N lines of FILE match
wait_at_least() {
        local end
        end=$(deadline_ms "$(wait_s)")
        while [ "$(count_lines "$1" "$2")" -lt "$3" ] && [ "$(now_ms)" -lt "$end" ]; do
                sleep 0.02
        done
        [ "$(count_lines "$1" "$2")" -ge "$3" ] || fail "fewer than $3 lines matching '$2' in $1"
}

# prefixed FILE PREFIX: the lines of FILE that start with the fixed string PREFIX
prefixed() {
        awk -v p="$2" 'index($0, p) == 1' "$1"
}

# ---- a socket present at start; its connection admits a pod and PodResources lists it ----
start_plugin early "$REG/early.sock" --name example.com/early
start_kubelet kubelet --plugins-registry "$REG" --admit example.com/early=1 --pod-resources "$T/pod-resources.sock"
wait_line "$T/kubelet.err" '"Watching plugin registry"'
wait_line "$T/kubelet.out" '^admitted resource=example.com/early '
assert_eq "$(prefixed "$T/kubelet.out" 'registered resource=example.com/early ')" \
        "registered resource=example.com/early endpoint=$REG/early.sock pre_start_required=false preferred_available=false" \
        "registration of a socket present at start"
assert_eq "$(prefixed "$T/kubelet.out" 'devices resource=example.com/early ')" \
        "devices resource=example.com/early capacity=2 allocatable=2 healthy=dev-0,dev-1 unhealthy= numa=" \
        "device list through the watcher's connection"
assert_eq "$(grep -v '^listening$' "$T/early.out")" "$(printf 'info\noptions\nnotify registered=true error=\nstream-opened\nallocate ids=dev-0')" \
        "what the plugin present at start saw"
assert_eq "$(prefixed "$T/kubelet.out" 'admitted resource=example.com/early ')" \
        "admitted resource=example.com/early n=1 preferred= allocated=dev-0" "admission"
assert_eq "$(prefixed "$T/kubelet.out" 'alloc resource=example.com/early ')" \
        "alloc resource=example.com/early env WATCHER_PLUGIN=dev-0" "allocate response"
who=$("$KDPCTL" who --pod-resources "$T/pod-resources.sock" | awk '$1 == "example.com/early"' | tr -s ' ')
assert_eq "$who" "$(printf 'example.com/early dev-0 Healthy - default pod-0 c0\nexample.com/early dev-1 Healthy - - - -')" \
        "PodResources of the watcher's plugin"
pass "a socket present at start registers; admission, Allocate and PodResources work on it"

# ---- a socket created later ----
start_plugin good "$REG/good.sock" --name example.com/good --devices g-0,g-1,g-2
wait_line "$T/kubelet.out" '^devices resource=example.com/good '
assert_eq "$(prefixed "$T/kubelet.out" 'registered resource=example.com/good ')" \
        "registered resource=example.com/good endpoint=$REG/good.sock pre_start_required=false preferred_available=false" \
        "registration of a new socket"
assert_eq "$(prefixed "$T/kubelet.out" 'devices resource=example.com/good ')" \
        "devices resource=example.com/good capacity=3 allocatable=3 healthy=g-0,g-1,g-2 unhealthy= numa=" \
        "device list of the new socket"
wait_line "$T/good.out" '^stream-opened$'
assert_eq "$(grep -v '^listening$' "$T/good.out" | sort)" "$(printf 'info\nnotify registered=true error=\noptions\nstream-opened')" \
        "what the new plugin saw"
assert_eq "$(sed -n '2,3p' "$T/good.out")" "$(printf 'info\noptions')" "GetInfo, then GetDevicePluginOptions"
pass "a new socket registers: GetInfo, GetDevicePluginOptions, NotifyRegistrationStatus(registered=true)"

# ---- refusals, told to the plugin and printed with the kubelet's texts, then retried ----
refused() {
        local name=$1 resource=$2 text=$3
        wait_line "$T/$name.out" '^notify '
        assert_eq "$(grep -m1 '^notify ' "$T/$name.out")" "notify registered=false error=$text" "what $name was told"
        wait_line "$T/kubelet.out" "^register-rejected resource=$resource "
        assert_eq "$(prefixed "$T/kubelet.out" "register-rejected resource=$resource " | head -n 1)" \
                "register-rejected resource=$resource error=$text" "rejection of $name printed"
}
start_plugin csi "$REG/csi.sock" --type CSIPlugin --name example.com/csi
start_plugin old "$REG/old.sock" --name example.com/old --versions v1alpha1,v2
start_plugin bad "$REG/bad.sock" --name example.com/-bad
refused csi example.com/csi "RegisterPlugin error -- no handler registered for plugin type: CSIPlugin at socket $REG/csi.sock"
refused old example.com/old "RegisterPlugin error -- plugin validation failed with err: manager version, v1beta1, is not among plugin supported versions [v1alpha1 v2]"
refused bad example.com/-bad 'RegisterPlugin error -- plugin validation failed with err: invalid name of device plugin socket: the ResourceName "example.com/-bad" is invalid'
pass "wrong type, no v1beta1 and a bad name: refused with the kubelet's texts, to the plugin and on stdout"

wait_at_least "$T/csi.out" '^notify registered=false ' 3
assert_eq "$(grep -F "\"Scheduled plugin registration retry\" socket=\"$REG/csi.sock\"" "$T/kubelet.err" |
        sed 's/.*delayMs=//' | head -n 3 | tr '\n' ' ')" "500 1000 2000 " "back-off of the retries"
assert_eq "$(count_lines "$T/csi.out" '^options$')" 0 "GetDevicePluginOptions calls of a refused plugin"
stop_plugin csi
stop_plugin old
stop_plugin bad
wait_line "$T/kubelet.err" "\"Lost plugin socket\" socket=\"$REG/bad.sock\""
assert_eq "$(count_lines "$T/kubelet.out" '^deregistered resource=example.com/(csi|old|-bad) ')" 0 \
        "deregistrations of refused plugins"
pass "a refused socket is tried again after 0.5 s, 1 s, 2 s; gone, it is not deregistered"

# ---- a failed GetInfo is retried, and not told to the plugin ----
start_plugin late "$REG/late.sock" --name example.com/late --fail-info 1
wait_line "$T/kubelet.out" '^devices resource=example.com/late '
assert_eq "$(grep -F "at socket $REG/late.sock" "$T/kubelet.out")" \
        "register-rejected resource= error=RegisterPlugin error -- failed to get plugin info using RPC GetInfo at socket $REG/late.sock, err: rpc error: code = Unavailable desc = not ready yet" \
        "a failed GetInfo printed"
assert_eq "$(prefixed "$T/kubelet.out" 'registered resource=example.com/late ')" \
        "registered resource=example.com/late endpoint=$REG/late.sock pre_start_required=false preferred_available=false" \
        "registration after the retry"
wait_line "$T/late.out" '^stream-opened$'
assert_eq "$(grep -v '^listening$' "$T/late.out" | head -n 3)" "$(printf 'info-failed\ninfo\noptions')" "GetInfo failed, then retried"
assert_eq "$(grep '^notify ' "$T/late.out")" "notify registered=true error=" "notifications after a failed GetInfo"
grep -qF "\"Scheduled plugin registration retry\" socket=\"$REG/late.sock\" delayMs=500" "$T/kubelet.err" ||
        fail "no retry after 0.5 s scheduled for late.sock"
stop_plugin late
wait_line "$T/kubelet.out" '^deregistered resource=example.com/late '
pass "a failed GetInfo is retried after 0.5 s and then registers"

# ---- an endpoint elsewhere ----
start_plugin ep "$REG/ep.sock" --name example.com/ep --endpoint "$T/ep-dp.sock" --devices e-0,e-1
wait_line "$T/kubelet.out" '^devices resource=example.com/ep '
assert_eq "$(prefixed "$T/kubelet.out" 'registered resource=example.com/ep ')" \
        "registered resource=example.com/ep endpoint=$T/ep-dp.sock pre_start_required=false preferred_available=false" \
        "registration on the endpoint GetInfo named"
pass "the endpoint GetInfo names is dialled"

# ---- a failed connection is told, and not retried: the kubelet counts the plugin registered ----
start_plugin nopts "$REG/nopts.sock" --name example.com/nopts --fail-options
refused nopts example.com/nopts "RegisterPlugin error -- plugin registration failed with err: failed to get device plugin options: rpc error: code = Unavailable desc = no options"
wait_line "$T/kubelet.err" "\"Skipped plugin registration retry\" socket=\"$REG/nopts.sock\""
assert_eq "$(grep -cF "\"Scheduled plugin registration retry\" socket=\"$REG/nopts.sock\"" "$T/kubelet.err")" 0 \
        "retries of a plugin whose connection failed"
assert_eq "$(grep -v '^listening$' "$T/nopts.out" | head -n 3)" \
        "$(printf '%s\n' info options "notify registered=false error=RegisterPlugin error -- plugin registration failed with err: failed to get device plugin options: rpc error: code = Unavailable desc = no options")" \
        "what the plugin whose connection failed saw"
rm "$REG/nopts.sock"
wait_line "$T/kubelet.out" '^deregistered resource=example.com/nopts '
assert_eq "$(prefixed "$T/kubelet.out" 'deregistered resource=example.com/nopts ')" \
        "deregistered resource=example.com/nopts endpoint=$REG/nopts.sock" "deregistration of a plugin whose connection failed"
assert_eq "$(count_lines "$T/kubelet.out" '^devices resource=example.com/nopts ')" 0 "device lists of a plugin never connected"
stop_plugin nopts
pass "a failed connection is told to the plugin and not retried; its socket removed, it deregisters"

# ---- removal deregisters ----
rm "$REG/good.sock"
wait_line "$T/kubelet.out" '^deregistered resource=example.com/good '
assert_eq "$(prefixed "$T/kubelet.out" 'deregistered resource=example.com/good ')" \
        "deregistered resource=example.com/good endpoint=$REG/good.sock" "deregistration"
assert_eq "$(prefixed "$T/kubelet.out" 'devices resource=example.com/good ' | tail -n 1)" \
        "devices resource=example.com/good capacity=3 allocatable=0 healthy= unhealthy=g-0,g-1,g-2 numa=" \
        "devices of a deregistered plugin"
wait_line "$T/good.out" '^stream-cancelled$'
pass "a removed socket deregisters: its stream cancelled, its devices unhealthy"

# ---- a socket replaced by a rename; a name starting with '.' is ignored ----
start_plugin r1 "$REG/r.sock" --name example.com/r --devices r1-0
wait_line "$T/kubelet.out" '^devices resource=example.com/r '
start_plugin r2 "$REG/.r2.sock" --name example.com/r --devices r2-0
mv "$REG/.r2.sock" "$REG/r.sock"
wait_line "$T/kubelet.out" '^devices resource=example.com/r capacity=1 allocatable=1 healthy=r2-0 '
assert_eq "$(grep -E '^(registered|deregistered|devices) resource=example.com/r ' "$T/kubelet.out" | cut -d' ' -f1-4)" \
        "$(printf '%s\n' "registered resource=example.com/r endpoint=$REG/r.sock pre_start_required=false" \
                "devices resource=example.com/r capacity=1 allocatable=1" \
                "deregistered resource=example.com/r endpoint=$REG/r.sock" \
                "devices resource=example.com/r capacity=1 allocatable=0" \
                "registered resource=example.com/r endpoint=$REG/r.sock pre_start_required=false" \
                "devices resource=example.com/r capacity=1 allocatable=1")" \
        "events of a socket replaced by a rename"
wait_line "$T/r1.out" '^stream-cancelled$'
assert_eq "$(grep '^notify ' "$T/r2.out")" "notify registered=true error=" "the new plugin at the same path"
assert_eq "$(count_lines "$T/kubelet.err" '\.r2\.sock')" 0 "log lines about the hidden socket"
pass "a replaced socket deregisters the old plugin, then registers the new; '.' names are ignored"

# ---- two sockets of one resource: the newer replaces the older, as a second Register does ----
start_plugin dup "$REG/dup.sock" --name example.com/ep --devices d-0
wait_line "$T/kubelet.out" '^devices resource=example.com/ep capacity=1 allocatable=1 healthy=d-0 '
assert_eq "$(prefixed "$T/kubelet.out" 'registered resource=example.com/ep ' | tail -n 1)" \
        "registered resource=example.com/ep endpoint=$REG/dup.sock pre_start_required=false preferred_available=false" \
        "second socket of a resource"
wait_line "$T/ep.out" '^stream-cancelled$'
grep -qF "\"Replaced registration\" resource=\"example.com/ep\" endpoint=\"$T/ep-dp.sock\"" "$T/kubelet.err" ||
        fail "replacement not logged"
rm "$REG/ep.sock"
wait_line "$T/kubelet.out" '^deregistered resource=example.com/ep '
assert_eq "$(grep -A1 '^deregistered resource=example.com/ep ' "$T/kubelet.out" | grep -c '^devices resource=example.com/ep ')" 0 \
        "device lists after the replaced socket went"
assert_eq "$(prefixed "$T/kubelet.out" 'devices resource=example.com/ep ' | tail -n 1)" \
        "devices resource=example.com/ep capacity=1 allocatable=1 healthy=d-0 unhealthy= numa=" \
        "devices of the resource after its replaced socket went"
pass "a second socket of a resource replaces the first; removing the first then changes nothing"

# ---- SIGUSR1 drops the watcher's connections too ----
kill -USR1 "$KUBELET_PID"
wait_line "$T/kubelet.out" '^dropped resource=example.com/ep$'
wait_line "$T/dup.out" '^stream-cancelled$'
wait_line "$T/kubelet.out" '^dropped resource=example.com/early$'
pass "SIGUSR1 drops a watcher-registered plugin"

# ---- restart: killed, started again, it registers the sockets it finds ----
stop_plugin dup
stop_plugin r2
stop_plugin r1
stop_plugin ep
kill -KILL "$KUBELET_PID"
wait "$KUBELET_PID" 2>/dev/null
assert_eq "$(ls "$REG")" "early.sock" "sockets left in the registry"
start_kubelet kubelet2 --plugins-registry "$REG"
wait_line "$T/kubelet2.out" '^devices resource=example.com/early '
assert_eq "$(cat "$T/kubelet2.out")" \
        "$(printf '%s\n' "registered resource=example.com/early endpoint=$REG/early.sock pre_start_required=false preferred_available=false" \
                "devices resource=example.com/early capacity=2 allocatable=2 healthy=dev-0,dev-1 unhealthy= numa=")" \
        "events of the restarted stand-in"
wait_count "$T/early.out" '^notify registered=true error=$' 2
wait_count "$T/early.out" '^stream-opened$' 2
kill -TERM "$KUBELET_PID"
wait "$KUBELET_PID"
assert_eq "$?" 0 "exit code of the stand-in after SIGTERM"
wait_count "$T/early.out" '^stream-cancelled$' 2
pass "a restarted stand-in registers the sockets in the registry; SIGTERM ends their streams"

start_kubelet kubelet3 --plugins-registry "$REG" --drop-before-stream 1
wait_line "$T/kubelet3.out" '^dropped resource=example.com/early before its stream$'
assert_eq "$(head -n 1 "$T/kubelet3.out")" \
        "registered resource=example.com/early endpoint=$REG/early.sock pre_start_required=false preferred_available=false" \
        "registration before the drop"
wait_count "$T/early.out" '^notify registered=true error=$' 3
stop_kubelet
pass "--drop-before-stream applies to the watcher's registrations"
