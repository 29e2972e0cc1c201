# SPDX-License-Identifier: GPL-2.0-or-later
# A kubelet directory kdpd may not write to: serving fails with the real
# error ("Permission denied", not "Address already in use"), is retried on
# the next name with back-off, and succeeds once the directory is writable
# again; then kdpd registers. As root, kdpd runs in a user namespace of its
# own (unshare -U) where it keeps its uid but no power over the host's files,
# so the directory's mode binds it as it would bind any user. Through the
# plugin watcher (e2e-watcher/socket-errors) the directory is plugins_registry.
. "$(dirname "$0")/lib.sh"

ns=()
if [ "$(id -u)" = 0 ]; then
        unshare -U true 2>/dev/null || { echo "skip: no user namespaces"; exit 77; }
        ns=(unshare -U)
fi

start_kubelet kubelet
kdpd_command
"${DIE_WITH_US[@]}" "${ns[@]}" "${KDPD_RUN[@]}" --kubelet-dir "$DIR" --cdi-dir "$T/cdi" --state-dir "$T/state" \
        --backend example --v 2 >"$T/kdpd.out" 2>"$T/kdpd.err" &
KDPD_PID=$!
PIDS+=("$KDPD_PID")
wait_line "$T/kubelet.out" '^registered resource=example.com/widget '
# the stream is open (SIGUSR1 drops only an open one)
wait_line "$T/kubelet.out" '^devices resource=example.com/widget capacity=8 allocatable=8 '

chmod 0555 "$(sock_dir)"
kill -USR1 "$KUBELET_PID"      # the kubelet drops the stream: kdpd serves anew
wait_line "$T/kdpd.err" "^W.*\"Failed to serve resource; retrying on the next socket name\" resource=\"example.com/widget\" socket=\"$(sock_dir)/kdp-example-example.com_widget\.$KDPD_PID\.2\.sock\" attempts=1 err=\"Permission denied\""
chmod 0755 "$(sock_dir)"
wait_line "$T/kdpd.err" '"Serving resource again" resource="example.com/widget"'
wait_count "$T/kubelet.out" '^registered resource=example.com/widget ' 2
devices_match example.com/widget 'capacity=8 allocatable=8 '
assert_eq "$(count_lines "$T/kdpd.err" 'Address already in use')" 0 "lines blaming a used address"
pass "an unwritable directory reported as 'Permission denied'; served and registered once writable"
stop_kdpd
