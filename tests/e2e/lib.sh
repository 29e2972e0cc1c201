# SPDX-License-Identifier: GPL-2.0-or-later
# Shared helpers of the e2e scenarios: each scenario sources this file, starts
# a stand-in kubelet (`kdpctl kubelet`) and kdpd in a private temp dir, and
# asserts exact lines of their output. On every exit path (exit, SIGINT,
# SIGTERM, SIGHUP) everything the scenario started is stopped; what it
# starts through start_kubelet/start_kdpd or with "${DIE_WITH_US[@]}" in
# front dies with it even when the scenario is SIGKILLed (a ctest timeout).
#
# KDP_VALGRIND=1 runs kdpd under valgrind and fails the scenario on any
# definite or indirect leak or memory error. Deadlines are stretched under
# valgrind and in sanitized builds (SLOW, see tests/procs.sh).

set -u

: "${KDP_BUILD_DIR:?}" "${KDP_SOURCE_DIR:?}"
. "$KDP_SOURCE_DIR/tests/procs.sh"
KDPD="$KDP_BUILD_DIR/kdpd"
KDPCTL="$KDP_BUILD_DIR/kdpctl"
T=$(mktemp -d /tmp/kdp-e2e.XXXXXX)
DIR="$T/device-plugins"
mkdir -p "$DIR"
# KDP_E2E_REGISTRATION=plugin-watcher runs a scenario through the kubelet's plugin watcher: the
# stand-in kubelets watch $REG (plugins_registry beside the first $DIR) too, so kdpd's
# --registration auto takes it. sock_dir says where kdpd's sockets are in either mode (a scenario
# may point DIR elsewhere).
REG="$T/plugins_registry"
watcher_mode() {
        [ "${KDP_E2E_REGISTRATION:-}" = plugin-watcher ]
}
sock_dir() {
        if watcher_mode; then
                echo "$REG"
        else
                echo "$DIR"
        fi
}
watcher_mode && mkdir -p "$REG"
export TMPDIR="$T"              # sim-node's testbed too: gone with $T even when sim-node was SIGKILLed
PIDS=()
FAILED=0
VALGRIND_LOG="$T/valgrind.log"

cleanup() {
        local rest

        [ -n "${KDPD_HELD:-}" ] && kill -CONT "$KDPD_HELD" 2>/dev/null
        kill_tree "${PIDS[@]}"
        rest=$(proc_descendants $$)
        # shellcheck disable=SC2086
        kill_tree $rest
        if [ "$FAILED" = 0 ]; then
                rm -rf "$T"
        else
                echo "kept $T for inspection"
        fi
}
on_exit cleanup

fail() {
        FAILED=1
        echo "FAIL: $*" >&2
        for f in "$T"/*.out "$T"/*.err; do
                [ -f "$f" ] || continue
                echo "---- $f" >&2
                tail -n 40 "$f" >&2
        done
        exit 1
}

pass() {
        echo "ok: $*"
}

# wait_line FILE REGEX [TIMEOUT_S]: waits until a line of FILE matches (deadline TIMEOUT_S, at least
# and by default 30 s, stretched by SLOW; the same for every wait below).
wait_line() {
        local file=$1 re=$2 timeout end
        timeout=$(wait_s "${3:-}")
        end=$(deadline_ms "$timeout")
        while [ "$(now_ms)" -lt "$end" ]; do
                if grep -Eq -- "$re" "$file" 2>/dev/null; then
                        return 0
                fi
                sleep 0.02
        done
        fail "no line matching '$re' in $file after $((timeout * SLOW))s"
}

# wait_count FILE REGEX N: waits until N lines of FILE match REGEX (and no more than N)
wait_count() {
        local end
        end=$(deadline_ms "$(wait_s)")
        while [ "$(count_lines "$1" "$2")" -lt "$3" ] && [ "$(now_ms)" -lt "$end" ]; do
                sleep 0.02
        done
        assert_eq "$(count_lines "$1" "$2")" "$3" "lines matching '$2' in $1"
}

# count_lines FILE REGEX
count_lines() {
        grep -Ec -- "$2" "$1" 2>/dev/null || true
}

assert_eq() {
        [ "$1" = "$2" ] || fail "$3: expected '$2', got '$1'"
}

# devices_match RESOURCE REGEX [TIMEOUT_S]: waits until the stand-in kubelet's newest `devices`
# line of RESOURCE (in $T/kubelet.out) matches REGEX
devices_match() {
        local res=$1 re=$2 end
        end=$(deadline_ms "$(wait_s "${3:-}")")
        while [ "$(now_ms)" -lt "$end" ]; do
                grep "^devices resource=$res " "$T/kubelet.out" | tail -n 1 | grep -Eq -- "$re" && return 0
                sleep 0.02
        done
        fail "last devices line of $res does not match '$re': $(grep "^devices resource=$res " "$T/kubelet.out" | tail -n 1)"
}

# devices_seen RESOURCE REGEX [TIMEOUT_S]: waits until any `devices` line of RESOURCE matches REGEX,
# for a state that lasts only a while
devices_seen() {
        local res=$1 re=$2 end
        end=$(deadline_ms "$(wait_s "${3:-}")")
        while [ "$(now_ms)" -lt "$end" ]; do
                grep "^devices resource=$res " "$T/kubelet.out" | grep -Eq -- "$re" && return 0
                sleep 0.02
        done
        fail "no devices line of $res matches '$re'"
}

# wait_socket PATH [TIMEOUT_S]: waits until PATH is a socket
wait_socket() {
        local timeout end
        timeout=$(wait_s "${2:-}")
        end=$(deadline_ms "$timeout")
        while [ ! -S "$1" ] && [ "$(now_ms)" -lt "$end" ]; do
                sleep 0.01
        done
        [ -S "$1" ] || fail "no socket $1 after $((timeout * SLOW))s"
}

# forget_pid PID: PID is reaped; cleanup must not signal it (a later process may reuse the number)
forget_pid() {
        drop_pid PIDS "$1"
}

# kubelet_command: sets KUBELET_RUN to the stand-in kubelet on $DIR (and in watcher mode its
# plugin watcher on $REG), for scenarios that start it themselves
kubelet_command() {
        KUBELET_RUN=("$KDPCTL" kubelet --dir "$DIR")
        watcher_mode && KUBELET_RUN+=(--plugins-registry "$REG")
        return 0
}

# start_kubelet NAME [ARGS...]: a stand-in kubelet on $DIR, output in $T/NAME.out
start_kubelet() {
        local name=$1
        shift

        kubelet_command
        "${DIE_WITH_US[@]}" "${KUBELET_RUN[@]}" "$@" >"$T/$name.out" 2>"$T/$name.err" &
        PIDS+=($!)
        KUBELET_PID=$!
        wait_line "$T/$name.err" '"Serving kubelet socket"'
        wait_socket "$DIR/kubelet.sock"
}

# stop_kubelet: SIGTERM to the stand-in kubelet (SIGKILL if it does not exit), reaped
stop_kubelet() {
        kill_tree "$KUBELET_PID"
}

# kdpd_command: sets KDPD_RUN to the command that runs $KDPD, under valgrind when KDP_VALGRIND=1
# (one log per process); scenarios that start kdpd themselves (inside sim-node) use it as is,
# and check_valgrind after kdpd ended
kdpd_command() {
        KDPD_RUN=("$KDPD")
        [ "${KDP_VALGRIND:-}" = 1 ] || return 0
        KDPD_RUN=(valgrind --quiet --leak-check=full --errors-for-leak-kinds=definite,indirect
                  --show-leak-kinds=definite,indirect --error-exitcode=99
                  --suppressions="$KDP_SOURCE_DIR/tests/valgrind/grpc-absl.supp"
                  --log-file="$VALGRIND_LOG.%p" "$KDPD")
}
kdpd_command

# start_kdpd NAME [ARGS...]: $KDPD serving $DIR (CDI specs into $T/cdi), stderr (klog) in $T/NAME.err
start_kdpd() {
        local name=$1
        shift
        kdpd_command
        "${DIE_WITH_US[@]}" "${KDPD_RUN[@]}" --kubelet-dir "$DIR" --cdi-dir "$T/cdi" --state-dir "$T/state" "$@" \
                >"$T/$name.out" 2>"$T/$name.err" &
        KDPD_PID=$!
        PIDS+=($KDPD_PID)
}

# start_sim_kdpd FIXTURE [SIM-NODE ARGS... --] [ARGS...]: $KDPD_RUN with ARGS on the simulated node
# FIXTURE (tests/fixtures/nodes/*.umockdev) serving $DIR, stdout and stderr (klog) in $T/kdpd.out
# and $T/kdpd.err (with KDPD_LOG=NAME set: $T/NAME.out and $T/NAME.err)
start_sim_kdpd() {
        local sim=("$1")
        shift
        if [[ " $* " == *" -- "* ]]; then
                while [ "$1" != -- ]; do
                        sim+=("$1")
                        shift
                done
                shift
        fi
        "${DIE_WITH_US[@]}" "$KDP_SOURCE_DIR/tests/sim-node/sim-node" "${sim[@]}" -- "${KDPD_RUN[@]}" \
                --kubelet-dir "$DIR" --state-dir "$T/state" --cdi-dir "$T/cdi" "$@" \
                >"$T/${KDPD_LOG:-kdpd}.out" 2>"$T/${KDPD_LOG:-kdpd}.err" &
        KDPD_PID=$!
        PIDS+=($KDPD_PID)
}

# nvml_fifos: $T/ctl (for sim-node's --control) open on fd 9 and $T/nvml-events (for the fake
# NVML's `events` line) on fd 8; `ctl LINE` is a sim-node command, `nvml LINE` a line to the fake
# NVML (event, fail, clear, nvlink), read while kdpd's NVML event worker waits
nvml_fifos() {
        mkfifo "$T/ctl" "$T/nvml-events"
        exec 9<>"$T/ctl" 8<>"$T/nvml-events"
}
ctl() {
        echo "$*" >&9
}
nvml() {
        echo "$*" >&8
}

# check_valgrind: fails on any valgrind report of the kdpd processes that ended so far
check_valgrind() {
        local f
        [ "${KDP_VALGRIND:-}" = 1 ] || return 0
        for f in "$VALGRIND_LOG".*; do
                if [ -s "$f" ]; then
                        fail "valgrind reported errors: $(head -c 3000 "$f")"
                fi
        done
        return 0
}

# stop_kdpd: SIGTERM to $KDPD_PID (kdpd, or the sim-node it runs in) and expect exit 0 within
# 30 s (stretched by SLOW), and a clean valgrind run
stop_kdpd() {
        local rc
        kill -TERM "$KDPD_PID"
        wait_gone 30 "$KDPD_PID"
        proc_alive "$KDPD_PID" && fail "kdpd did not exit within $((30 * SLOW))s of SIGTERM"
        wait "$KDPD_PID"
        rc=$?
        assert_eq "$rc" 0 "kdpd exit code after SIGTERM"
        check_valgrind
}

# hold_kdpd / release_kdpd: SIGSTOP and SIGCONT the kdpd that sim-node ($KDPD_PID) runs, so that
# no scan starts between changes made meanwhile. A scan under way when held ends after the release
# with some of them: assert what the scans after it see, never that one scan saw them all.
hold_kdpd() {
        KDPD_HELD=$(pgrep -P "$KDPD_PID")
        [ -n "$KDPD_HELD" ] || fail "no kdpd under sim-node $KDPD_PID to hold"
        kill -STOP "$KDPD_HELD"
}

release_kdpd() {
        kill -CONT "$KDPD_HELD"
        KDPD_HELD=
}

# plugin_socket RESOURCE_PART: the newest socket kdpd serves for a resource
plugin_socket() {
        ls -t "$(sock_dir)"/kdp-*"$1"* 2>/dev/null | head -n 1
}

# printed_endpoint NAME: how the stand-in prints the endpoint of kdpd's socket NAME (the name
# Register gave, or the path the plugin watcher dialled)
printed_endpoint() {
        if watcher_mode; then
                echo "$REG/$1"
        else
                echo "$1"
        fi
}

# endpoint_path EP: the socket file of an endpoint the stand-in printed (a name in $DIR after a
# Register, the path the plugin watcher dialled)
endpoint_path() {
        case $1 in
        /*) echo "$1" ;;
        *) echo "$DIR/$1" ;;
        esac
}
