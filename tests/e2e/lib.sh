# SPDX-License-Identifier: GPL-2.0-or-later
# Shared helpers of the e2e scenarios: each scenario sources this file, starts
# a stand-in kubelet (`kdpctl kubelet`) and kdpd in a private temp dir, and
# asserts exact lines of their output. Everything is killed on exit.
#
# KDP_VALGRIND=1 runs kdpd under valgrind and fails the scenario on any
# definite or indirect leak or memory error.

set -u

: "${KDP_BUILD_DIR:?}" "${KDP_SOURCE_DIR:?}"
KDPD="$KDP_BUILD_DIR/kdpd"
KDPCTL="$KDP_BUILD_DIR/kdpctl"
T=$(mktemp -d /tmp/kdp-e2e.XXXXXX)
DIR="$T/device-plugins"
mkdir -p "$DIR"
PIDS=()
FAILED=0
VALGRIND_LOG="$T/valgrind.log"

cleanup() {
        local p
        for p in "${PIDS[@]}"; do
                kill -TERM "$p" 2>/dev/null
        done
        for p in "${PIDS[@]}"; do
                wait "$p" 2>/dev/null
        done
        if [ "$FAILED" = 0 ]; then
                rm -rf "$T"
        else
                echo "kept $T for inspection"
        fi
}
trap cleanup EXIT

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

now_ms() {
        date +%s%3N
}

# waits last SLOW times longer under valgrind
SLOW=1
[ "${KDP_VALGRIND:-}" = 1 ] && SLOW=4

# wait_line FILE REGEX [TIMEOUT_S]: waits until a line of FILE matches.
wait_line() {
        local file=$1 re=$2 timeout=${3:-10} end
        end=$(($(now_ms) + timeout * 1000 * SLOW))
        while [ "$(now_ms)" -lt "$end" ]; do
                if grep -Eq -- "$re" "$file" 2>/dev/null; then
                        return 0
                fi
                sleep 0.02
        done
        fail "no line matching '$re' in $file after ${timeout}s"
}

# count_lines FILE REGEX
count_lines() {
        grep -Ec -- "$2" "$1" 2>/dev/null || true
}

# within_ms DT LIMIT WHAT: a functional bound (not a benchmark); not enforced under valgrind
within_ms() {
        [ "${KDP_VALGRIND:-}" = 1 ] && return 0
        [ "$1" -lt "$2" ] || fail "$3 took $1 ms (limit $2 ms)"
}

assert_eq() {
        [ "$1" = "$2" ] || fail "$3: expected '$2', got '$1'"
}

# devices_match RESOURCE REGEX [TIMEOUT_S]: waits until the stand-in kubelet's newest `devices`
# line of RESOURCE (in $T/kubelet.out) matches REGEX
devices_match() {
        local res=$1 re=$2 end=$(($(now_ms) + ${3:-5} * 1000 * SLOW))
        while [ "$(now_ms)" -lt "$end" ]; do
                grep "^devices resource=$res " "$T/kubelet.out" | tail -n 1 | grep -Eq -- "$re" && return 0
                sleep 0.02
        done
        fail "last devices line of $res does not match '$re': $(grep "^devices resource=$res " "$T/kubelet.out" | tail -n 1)"
}

# start_kubelet NAME [ARGS...]: a stand-in kubelet on $DIR, output in $T/NAME.out
start_kubelet() {
        local name=$1
        shift
        "$KDPCTL" kubelet --dir "$DIR" "$@" >"$T/$name.out" 2>"$T/$name.err" &
        PIDS+=($!)
        KUBELET_PID=$!
        wait_line "$T/$name.err" "Serving Registration|listening|kubelet.sock" 5 2>/dev/null || true
        local end=$(($(now_ms) + 5000))
        while [ ! -S "$DIR/kubelet.sock" ] && [ "$(now_ms)" -lt "$end" ]; do
                sleep 0.01
        done
        [ -S "$DIR/kubelet.sock" ] || fail "stand-in kubelet did not create kubelet.sock"
}

stop_kubelet() {
        kill -TERM "$KUBELET_PID" 2>/dev/null
        wait "$KUBELET_PID" 2>/dev/null
}

# kdpd_command: sets KDPD_RUN to the command that runs $KDPD, under valgrind when KDP_VALGRIND=1
# (one log per process); scenarios that start kdpd themselves (inside sim-node) use it as is
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
        "${KDPD_RUN[@]}" --kubelet-dir "$DIR" --cdi-dir "$T/cdi" "$@" >"$T/$name.out" 2>"$T/$name.err" &
        KDPD_PID=$!
        PIDS+=($KDPD_PID)
}

# stop_kdpd: SIGTERM and expect exit 0 (and a clean valgrind run)
stop_kdpd() {
        local rc
        kill -TERM "$KDPD_PID"
        wait "$KDPD_PID"
        rc=$?
        assert_eq "$rc" 0 "kdpd exit code after SIGTERM"
        if [ "${KDP_VALGRIND:-}" = 1 ]; then
                for f in "$VALGRIND_LOG".*; do
                        if [ -s "$f" ]; then
                                fail "valgrind reported errors: $(head -c 3000 "$f")"
                        fi
                done
        fi
        return 0
}

# plugin_socket RESOURCE_PART: the newest socket kdpd serves for a resource
plugin_socket() {
        ls -t "$DIR"/kdp-*"$1"* 2>/dev/null | head -n 1
}
