#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# sim-node/converge: what a node shows must not depend on when kdpd started. For each fixture of
# tests/fixtures/nodes and each event script, kdpd #1 runs on the simulated node from the start
# and follows the script; then kdpd #2 starts on the same node, in its final state. Their
# ListAndWatch lists (kdpctl list: ID, health, NUMA) must be equal, but for the devices the GPU,
# SR-IOV and FPGA backends keep because they saw them (plugins/gpu/README.md,
# plugins/sriov/README.md and plugins/fpga/README.md, "Served and seen"): such a device is
# Unhealthy in #1, absent from #2,
# and the reason kdpd #1 last logged for it is one of the seen reasons. Allocate of every device healthy in both must give the same answer (nodes, env).
#
#   KDP_CONVERGE_ONLY=REGEX    run only the cases whose name matches (name: FIXTURE/SCRIPT)
#   KDP_VALGRIND=1             both kdpds under valgrind (a leak or error fails the case); a
#                              case takes about a minute then, so without KDP_CONVERGE_ONLY only
#                              the cases of $valgrind_cases run (the rest are listed as skipped):
#                              KDP_CONVERGE_ONLY=. runs them all
#   KDP_CONVERGE_KEY_CASES=1   only the cases of $valgrind_cases, without valgrind too (the
#                              sanitized build's stage of scripts/test; the normal one runs all)
#
# Case scripts: tests/sim-node/converge/FIXTURE.NAME.script, lines for sim-node (see sim-node.c)
# fed through its control FIFO once kdpd #1 has registered its first list, plus this harness's
# own line "restore PATH" (a write of PATH with the fixture's text: NVIDIA's information file,
# a KFD node's properties) and "exclude PATH" (the same text with "GPU Excluded: Yes"); a case
# with the line "# converge: keeps nothing" fails when kdpd #1 keeps any device as seen. A
# fixture with an NVML fixture beside it (tests/fixtures/nodes/FIXTURE.nvml: gpu-h100x8-mig,
# gpu-h100nvl) runs its kdpds with the fake libnvidia-ml.so.1 (tests/nvml) answering from a copy
# of it; a script line "nvml NAME" replaces that copy with tests/sim-node/converge/NAME once the
# lines before it are done (MIG instances created or destroyed, NVLinks down: NVML's side of
# what the lines before wrote). Where that fixture has NVLinks, which weigh only in
# GetPreferredAllocation, the two kdpds must also give the same preferred sets. Each
# fixture also gets a random script (fixed seed, random-script.sh), and gpu-h100x8 runs the
# fixture's own gpu-h100x8-fall-off-bus.script. The SR-IOV fixtures (backend sriov, its
# config.json tests/sim-node/converge/FIXTURE.config.json) run each event script of their own
# as a case (tests/fixtures/nodes/sriov-e810-numvfs.script: sriov-e810/numvfs), each in a
# network namespace of its own whose links are the fixture's PF netdevs (a script's "set
# net/<PF> carrier V" is mirrored there once it ran); without root they are skipped, named.
# Exit 77 = skipped. ok() never fails, so "[ ... ] && ok ... || fail ..." is an if-then-else.
# shellcheck disable=SC2015
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
b=${KDP_BUILD_DIR:-$here/../../build}
. "$here/lib.sh" "$b/kdpd" "$b/kdpctl" "$b/tests/backends/kdp-backend-pcitest.so"
kdpctl=$build/kdpctl
pcitest=$build/tests/backends/kdp-backend-pcitest.so
cases=$src/tests/sim-node/converge
. "$here/random-script.sh"

# deadlines are for hangs, never for speed (tests/procs.sh stretches them by SLOW); settle_s is
# two of the GPU backend's rescans, for which a kdpd under valgrind takes longer
settle_s=2
[ "${KDP_VALGRIND:-}" = 1 ] && settle_s=8
kdpd_run=("$build/kdpd")
if [ "${KDP_VALGRIND:-}" = 1 ]; then
        command -v valgrind > /dev/null || { echo "SKIP: KDP_VALGRIND=1 but no valgrind"; exit 77; }
        kdpd_run=(valgrind --quiet --leak-check=full --errors-for-leak-kinds=definite,indirect
                  --show-leak-kinds=definite,indirect --error-exitcode=99
                  --suppressions="$src/tests/valgrind/grpc-absl.supp"
                  --log-file="$tmp/valgrind.%p.log" "$build/kdpd")
fi

bg=()                                   # kubelets and sim-node of the running case
case_dir=                               # its dir: the kdpds' pids are in case_dir/pids
sim_pgid=                               # sim-node's process group: it, converge-node.sh, the kdpds

# stop_all: ends every process of the case on every path, sim-node dead or alive: SIGTERM to the
# kubelets and sim-node (which passes it to converge-node.sh, which stops the kdpds and waits for
# them), a bounded wait, then SIGKILL to whatever is left of sim-node's process group (a wrapper
# shell whose sim-node died, a kdpd that hangs) and the reaping of our own children
stop_all() {
        local p i pids=()
        exec 9>&- 2>/dev/null
        [ -n "$case_dir" ] && [ -f "$case_dir/pids" ] && read -ra pids <<< "$(tr '\n' ' ' < "$case_dir/pids")"
        for p in "${bg[@]}"; do
                kill -TERM "$p" 2>/dev/null
        done
        for p in "${bg[@]}" "${pids[@]}"; do
                for ((i = 0; i < 200 * SLOW; i++)); do
                        proc_alive "$p" || break
                        sleep 0.05
                done
        done
        # only while the group has a member: an empty group's number may name another's by now
        [ -n "$sim_pgid" ] && pgrep -g "$sim_pgid" > /dev/null && kill -KILL -- "-$sim_pgid" 2>/dev/null
        for p in "${bg[@]}"; do
                kill -KILL "$p" 2>/dev/null
                wait "$p" 2>/dev/null
        done
        bg=()
        sim_pid= sim_pgid= case_dir=
}
trap 'stop_all; cleanup' EXIT
trap 'exit 143' TERM INT HUP

# wait_for WHAT SECONDS COMMAND...: until COMMAND succeeds; a case failure after SECONDS (at
# least 30, stretched by SLOW)
wait_for() {
        local what=$1 end
        end=$(deadline_ms "$(wait_s "$2")")
        shift 2
        until "$@"; do
                if [ "$(now_ms)" -gt "$end" ]; then
                        fail "$case_name: timed out waiting for $what"
                        return 1
                fi
                sleep 0.05
        done
}

# ---------------------------------------------------------------------------------------------
# Script lines of the harness's own

# text_escaped FILE: FILE as one "write" value (\\, \t, \n; the last newline is sim-node's)
text_escaped() {
        sed -e 's/\\/\\\\/g' -e 's/\t/\\t/g' "$1" | awk 'NR > 1 { printf "\\n" } { printf "%s", $0 }'
}

# restore_text FIXTURE PATH: the fixture's text of PATH (a file of its .files tree, or a KFD
# attribute of its records), escaped for "write"
restore_text() {
        local fixture=$1 path=$2 attr
        if [ -f "$nodes/$fixture.files/$path" ]; then
                text_escaped "$nodes/$fixture.files/$path"
                return
        fi
        attr=${path#sys/devices/virtual/kfd/kfd/}
        grep -m1 "^A: $attr=" "$nodes/$fixture.umockdev" | sed -e "s|^A: $attr=||" -e 's/\\n$//'
}

# expand FIXTURE < SCRIPT: the script with "restore" and "exclude" lines made "write" lines
expand() {
        local fixture=$1 verb path rest
        while IFS= read -r line; do
                read -r verb path rest <<< "$line"
                case $verb in
                restore) echo "write $path $(restore_text "$fixture" "$path")" ;;
                exclude) echo "write $path $(restore_text "$fixture" "$path" | sed 's/GPU Excluded:\\t No/GPU Excluded:\\t Yes/')" ;;
                *) printf '%s\n' "$line" ;;
                esac
        done
}

# ---------------------------------------------------------------------------------------------
# One case

# endpoints KUBELET-OUT: "RESOURCE ENDPOINT" per resource, the newest registration of each
endpoints() {
        sed -n 's/^registered resource=\([^ ]*\) endpoint=\([^ ]*\) .*/\1 \2/p' "$1" |
                awk '{ e[$1] = $2 } END { for (r in e) print r, e[r] }' | sort
}

# the rows of a resource's current list ("ID HEALTH NUMA"), or nothing when not served
list_rows() {
        local kdir=$1 ep=$2
        [ -n "$ep" ] || return 0
        "$kdpctl" list --socket "$kdir/$ep" 2> /dev/null | sed -e '1d' -e '$d'
}

# seen_reason DIR RESOURCE ID: the reason kdpd #1 last logged for the device, if it is one the
# GPU, SR-IOV or FPGA backend keeps a seen device for (their README.md, "Served and seen")
seen_reason() {
        local reason
        reason=$(grep -E "\"(Device became unhealthy|Device unhealthy for another reason)\" resource=\"$2\" device=\"$3\" " \
                "$1/kdpd1.err" | tail -n 1 | sed -n 's/.* reason="\([^"]*\)".*/\1/p')
        case ${reason%%;*} in
        "removed from the PCI bus" | "driver unbound" | "driver unbound (expected "*")" | "bound to "* | \
                "excluded by the driver"* | "not listed in /proc/driver/nvidia/gpus" | *" gone from sysfs" | \
                "its pool's selectors no longer take it" | "carries the default route" | \
                "NVML cannot list its MIG devices: "*)
                echo "$reason" ;;
        *) return 1 ;;
        esac
}

# physfn_of ADDRESS: the PF of a VF of the fixture's records (L: physfn=), or nothing
physfn_of() {
        awk -v a="E: PCI_SLOT_NAME=$1" '$0 == a { vf = 1 } /^$/ { vf = 0 } vf && /^L: physfn=/ { sub(/^L: physfn=..\//, ""); print; exit }' \
                "$nodes/$case_fixture.umockdev"
}

# compare DIR: kdpd #1's lists against kdpd #2's; 0 when they agree (the kept devices aside),
# with the kept devices in DIR/kept and the differences in DIR/diff
compare() {
        local d=$1 res ep1 ep2 id h1 n1 h2 n2 reason pf ok=0
        rm -f "$d"/rows2.*
        while read -r res ep2; do
                list_rows "$d/k2" "$ep2" > "$d/rows2.${res//\//_}"
        done < <(endpoints "$d/kubelet2.out")
        : > "$d/kept"
        : > "$d/diff"
        endpoints "$d/kubelet1.out" > "$d/ep1"
        endpoints "$d/kubelet2.out" > "$d/ep2"
        for res in $(cut -d' ' -f1 "$d/ep1" "$d/ep2" | sort -u); do
                ep1=$(awk -v r="$res" '$1 == r { print $2 }' "$d/ep1")
                ep2=$(awk -v r="$res" '$1 == r { print $2 }' "$d/ep2")
                list_rows "$d/k1" "$ep1" > "$d/rows1" || return 1
                list_rows "$d/k2" "$ep2" > "$d/rows2" || return 1
                while read -r id h1 n1; do
                        read -r h2 n2 <<< "$(awk -v i="$id" '$1 == i { print $2, $3 }' "$d/rows2")"
                        [ "$h1 $n1" = "$h2 $n2" ] && continue
                        # a VF kept beside its PF, both in the list, counts the silicon twice
                        pf=$(physfn_of "$id")
                        if [ -z "$h2" ] && [ "$h1" = Unhealthy ] && reason=$(seen_reason "$d" "$res" "$id") &&
                                { [ -z "$pf" ] || ! grep -q "^$pf " "$d"/rows2.*; }; then
                                echo "$res $id ($reason)" >> "$d/kept"
                                continue
                        fi
                        ok=1
                done < "$d/rows1"
                while read -r id h2 n2; do
                        grep -q "^$id " "$d/rows1" || ok=1
                done < "$d/rows2"
                diff -u --label "kdpd #2 (started on the final node) $res" --label "kdpd #1 (followed the script) $res" \
                        "$d/rows2" "$d/rows1" >> "$d/diff"
        done
        return $ok
}

# not_served_same DIR: every device kdpd #1 does not serve, kdpd #2 does not serve either, for the
# same reason; prints the lines #2 lacks. (#2 may list more: a device #1 saw and keeps as
# Unhealthy is not "not served" for it.) The count of #1's lines goes to DIR/not-served1.
not_served_same() {
        "$kdpctl" not-served --state-dir "$1/s1" > "$1/not-served1" || return 1
        "$kdpctl" not-served --state-dir "$1/s2" > "$1/not-served2" || return 1
        ! grep -vxF -f "$1/not-served2" "$1/not-served1"
}

# allocate_same DIR: Allocate of each device healthy in both gives the same answer
allocate_same() {
        local d=$1 res ep1 ep2 id a1 a2 ok=0
        while read -r res ep1; do
                ep2=$(awk -v r="$res" '$1 == r { print $2 }' "$d/ep2")
                [ -n "$ep2" ] || continue
                for id in $(list_rows "$d/k2" "$ep2" | awk '$2 == "Healthy" { print $1 }'); do
                        a1=$("$kdpctl" allocate --socket "$d/k1/$ep1" "$id" 2>&1)
                        a2=$("$kdpctl" allocate --socket "$d/k2/$ep2" "$id" 2>&1)
                        if [ "$a1" != "$a2" ]; then
                                echo "Allocate $res $id: kdpd #2 answered"
                                echo "$a2" | sed 's/^/    /'
                                echo "  kdpd #1 answered"
                                echo "$a1" | sed 's/^/    /'
                                ok=1
                        fi
                        echo "$res $id" >> "$d/allocated"
                done
        done < "$d/ep1"
        return $ok
}

# preferred_same DIR: GetPreferredAllocation among the devices healthy in both kdpds gives the
# same answer in both, for each size from 2 to all but one, and for size 2 with each of them as
# must_include; each request goes to DIR/preferred
preferred_same() {
        local d=$1 res ep1 ep2 size must id a1 a2 ok=0
        local -a ids avail req
        while read -r res ep1; do
                ep2=$(awk -v r="$res" '$1 == r { print $2 }' "$d/ep2")
                [ -n "$ep2" ] || continue
                read -ra ids <<< "$(comm -12 <(list_rows "$d/k1" "$ep1" | awk '$2 == "Healthy" { print $1 }' | sort) \
                        <(list_rows "$d/k2" "$ep2" | awk '$2 == "Healthy" { print $1 }' | sort) | tr '\n' ' ')"
                avail=()
                for id in "${ids[@]}"; do
                        avail+=(--available "$id")
                done
                for ((size = 2; size < ${#ids[@]}; size++)); do
                        for must in "" "${ids[@]}"; do
                                [ -z "$must" ] || [ "$size" = 2 ] || continue
                                req=(--size "$size" "${avail[@]}")
                                [ -z "$must" ] || req+=(--must "$must")
                                a1=$("$kdpctl" preferred --socket "$d/k1/$ep1" "${req[@]}" 2>&1)
                                a2=$("$kdpctl" preferred --socket "$d/k2/$ep2" "${req[@]}" 2>&1)
                                if [ "$a1" != "$a2" ]; then
                                        echo "GetPreferredAllocation $res size $size${must:+ must $must}: kdpd #2 answered $a2, kdpd #1 $a1"
                                        ok=1
                                fi
                                echo "$res $size $must" >> "$d/preferred"
                        done
                done
        done < "$d/ep1"
        return $ok
}

# registered KUBELET-OUT KDPD-ERR: kdpd finished its first scan and each resource it serves has
# its first list at the stand-in kubelet
registered() {
        local n
        n=$(sed -n 's/.*"Finished the first scan" resources=\([0-9]*\).*/\1/p' "$2" 2> /dev/null | head -n 1)
        [ -n "$n" ] && [ "$(sed -n 's/^devices resource=\([^ ]*\) .*/\1/p' "$1" | sort -u | wc -l)" -ge "$n" ]
}
sim_running() {
        kill -0 "$sim_pid" 2>/dev/null
}
script_done() {
        grep -q '^converge-script-done$' "$1" 2>/dev/null || { sim_running || return 0; return 1; }
}

# both_alive DIR: sim-node and both kdpds run
both_alive() {
        local p n=0
        sim_running || return 1
        for p in $(cat "$1/pids" 2> /dev/null); do
                proc_alive "$p" || return 1
                n=$((n + 1))
        done
        [ $n = 2 ]
}

show_logs() {
        local f
        for f in sim.err kdpd1.err kdpd2.err; do
                [ -s "$1/$f" ] || continue
                echo "    ---- $f (last 15 lines)"
                tail -n 15 "$1/$f" | sed 's/^/    /'
        done
}

# bash reads a script as it runs it: a wrapper edited in place while a case runs would go on
# from the old offset in the new text (a syntax error, exit 2, kdpds left behind). Every case
# runs this run's copy; the matrix below is one function, read whole before it starts.
wrapper=$tmp/converge-node.sh
cp "$here/converge-node.sh" "$here/asan-runtime" "$tmp/"

# Under valgrind: each fixture's random script (every kind of event its GPUs get), the Xid cases,
# the switch that goes and comes back (the longest burst of uevents), SR-IOV off and on, and the
# SR-IOV backend's VFs going and coming with sriov_numvfs
valgrind_cases='/random-seed[0-9]+$|^gpu-h100x8/(xid|fall-off-bus|unplug-replug)$|^gpu-h100x8-mig/layout$|^gpu-flex170x2/sriov-(disable|vfs)$|^sriov-e810/numvfs$'
only=${KDP_CONVERGE_ONLY:-.}
{ [ "${KDP_VALGRIND:-}" = 1 ] || [ "${KDP_CONVERGE_KEY_CASES:-}" = 1 ]; } && [ -z "${KDP_CONVERGE_ONLY:-}" ] &&
        only=$valgrind_cases
skipped=()

# The SR-IOV cases run sim-node (and both kdpds) in a network namespace of their own, whose
# links are the fixture's PF netdevs, up: rtnetlink (PF link state, default routes) shows them
# and nothing of the machine's. Where no namespace can be made they are skipped, with the reason.
netns_skipped=()
netns_why=
netns_usable || netns_why=$NETNS_WHY

# pf_links FIXTURE: the netdevs of the fixture's PFs
pf_links() {
        case $1 in
        sriov-e810) echo ens3f0np0 ens3f1np1 ;;
        sriov-cx6dx) echo ens1f0np0 ens1f1np1 ;;
        sriov-noiommu) echo ens3f0np0 ;;
        sriov-cx6-ib) echo ibp216s0 ;;
        esac
}

# pf_carriers DIR: the script's last "set net/<PF> carrier V" of each PF link, as its link state
# in the case's namespace (kdpd reads rtnetlink, not the sysfs file the script wrote)
pf_carriers() {
        local link v
        for link in $(pf_links "$case_fixture"); do
                v=$(awk -v a="net/$link" '$1 == "set" && $2 == a && $3 == "carrier" { v = $4 } END { print v }' "$1/script")
                [ -n "$v" ] || continue
                [ "$v" = 0 ] && v=down || v=up
                nsenter --net="/proc/$sim_pid/ns/net" ip link set "$link" "$v" || return 1
        done
}

n_cases=0
# feed_script DIR: DIR/script to sim-node's control FIFO (fd 9); at each "nvml NAME" line, once
# sim-node has done the lines before it, DIR/nvml.fixture (what the fake NVML reads) becomes NAME
feed_script() {
        local d=$1 n=0 line
        : > "$d/segment"
        while IFS= read -r line; do
                if [[ $line != "nvml "* ]]; then
                        printf '%s\n' "$line" >> "$d/segment"
                        continue
                fi
                n=$((n + 1))
                printf 'wait\necho converge-nvml-%s\n' "$n" >> "$d/segment"
                cat "$d/segment" >&9
                : > "$d/segment"
                wait_for "the script's lines before its nvml line $n" 120 grep -qx "converge-nvml-$n" "$d/sim.out" || return 1
                cp "$cases/${line#nvml }" "$d/nvml.next" && mv "$d/nvml.next" "$d/nvml.fixture" || return 1
        done < "$d/script"
        cat "$d/segment" >&9
}

run_case() {
        local fixture=$1 name=$2 script=$3 d k extra=() netns=() t0
        shift 3
        case_name=$fixture/$name case_fixture=$fixture
        if ! [[ $case_name =~ $only ]]; then
                [[ $case_name =~ ${KDP_CONVERGE_ONLY:-.} ]] && skipped+=("$case_name")
                return 0
        fi
        if [ "$1" = sriov ]; then
                if [ -n "$netns_why" ]; then
                        netns_skipped+=("$case_name")
                        return 0
                fi
                # shellcheck disable=SC2016
                netns=(unshare --net -- bash -c '. "$1"; shift
                        while [ "$1" != -- ]; do netns_link_add "$1" || exit 2; shift; done
                        shift; exec "$@"' netns "$src/tests/procs.sh" $(pf_links "$fixture") --)
        fi
        n_cases=$((n_cases + 1))
        t0=$(now_ms)
        d=$tmp/$n_cases case_dir=$tmp/$n_cases
        mkdir -p "$d/k1" "$d/k2"
        { expand "$fixture" < "$script"; printf 'wait\necho converge-script-done\n'; } > "$d/script"
        for k in 1 2; do
                "${DIE_WITH_US[@]}" "$kdpctl" kubelet --dir "$d/k$k" > "$d/kubelet$k.out" 2> "$d/kubelet$k.err" &
                bg+=($!)
        done
        wait_for "the stand-in kubelets" 10 test -S "$d/k1/kubelet.sock" -a -S "$d/k2/kubelet.sock" || { stop_all; return; }
        mkfifo "$d/ctl"
        [ "$1" = gpu ] && export CONVERGE_KMSG_PARAM=gpu.kmsg || unset CONVERGE_KMSG_PARAM
        unset KDP_FAKE_NVML
        case $1 in
        gpu) extra=(--backend gpu -o gpu.nvml=) ;;         # Xids from the scripted kernel log, never the host's NVML
        esac
        if [ "$1" = gpu ] && [ -f "$nodes/$fixture.nvml" ]; then
                # the node's NVML: the fake library, answering from a copy of the fixture's (and serving Xids)
                cp "$nodes/$fixture.nvml" "$d/nvml.fixture"
                export KDP_FAKE_NVML=$d/nvml.fixture
                extra=(--backend gpu -o gpu.nvml="$build/tests/nvml/libnvidia-ml.so.1")
        fi
        case $1 in
        gpu) ;;
        sriov | fpga) extra=(--backend "$1") ;;
        *) extra=(--backend "$pcitest") ;;
        esac
        # a process group of its own, for stop_all to sweep (setsid does not fork: not a group leader)
        "${DIE_WITH_US[@]}" setsid "${netns[@]}" "$simnode" "$nodes/$fixture.umockdev" --control "$d/ctl" -- bash "$wrapper" "$d" \
                "${kdpd_run[@]}" -- --health-hold-ms 0 --cdi-dir "$d/cdi" "${extra[@]}" "${@:2}" \
                > "$d/sim.out" 2> "$d/sim.err" &
        sim_pid=$! sim_pgid=$!
        bg+=($sim_pid)
        exec 9<> "$d/ctl"
        wait_for "kdpd #1's first list" 60 registered "$d/kubelet1.out" "$d/kdpd1.err" || { show_logs "$d"; stop_all; return; }
        feed_script "$d" || { show_logs "$d"; stop_all; return; }
        wait_for "the script's end" 120 script_done "$d/sim.out" || { show_logs "$d"; stop_all; return; }
        if ! sim_running; then
                fail "$case_name: sim-node stopped during the script"
                show_logs "$d"
                stop_all
                return
        fi
        if [ ${#netns[@]} -gt 0 ] && ! pf_carriers "$d"; then
                fail "$case_name: cannot set the PF links as the script left their carriers"
                stop_all
                return
        fi
        touch "$d/go2"
        wait_for "kdpd #2's first list" 60 registered "$d/kubelet2.out" "$d/kdpd2.err" || { show_logs "$d"; stop_all; return; }
        # kdpd #1 has read every uevent ("wait"); what it shows once its scans caught up must stay
        local end agreed=0
        end=$(deadline_ms 60)
        while :; do
                if compare "$d" > /dev/null; then
                        agreed=$((agreed + 1))
                        [ $agreed -ge 2 ] && break
                        sleep "$settle_s"
                        continue
                fi
                agreed=0
                [ "$(now_ms)" -gt "$end" ] && break
                sleep 0.2
        done
        # a kdpd that died answers no kdpctl, and two lists that cannot be read look alike
        if ! both_alive "$d"; then
                fail "$case_name: sim-node or a kdpd ended before the comparison did"
                show_logs "$d"
                stop_all
                return
        fi
        if [ $agreed -ge 2 ] && [ -s "$d/kept" ] && grep -qx '# converge: keeps nothing' "$script"; then
                fail "$case_name: the lists agree but kdpd #1 keeps devices the case says it must not"
                sed 's/^/    kept: /' "$d/kept"
                show_logs "$d"
        elif [ $agreed -ge 2 ]; then
                if [ -s "$d/kept" ]; then
                        ok "$case_name: the lists agree; kept as seen by kdpd #1: $(sed 's/ (.*//' "$d/kept" | awk '{ print $2 }' | tr '\n' ' ')"
                else
                        ok "$case_name: the lists agree"
                fi
                sed 's/^/    kept: /' "$d/kept"
        else
                fail "$case_name: kdpd #1 (followed the script) and kdpd #2 (started on the final node) differ"
                sed 's/^/    /' "$d/diff"
                sed 's/^/    kept (allowed): /' "$d/kept"
                show_logs "$d"
        fi
        if not_served_same "$d" > "$d/not-served.diff"; then
                ok "$case_name: kdpd #2 does not serve the $(wc -l < "$d/not-served1") device(s) kdpd #1 does not serve, for the same reasons"
        else
                fail "$case_name: kdpd #1 does not serve these, kdpd #2 serves them or says another reason"
                sed 's/^/    /' "$d/not-served.diff"
                sed 's/^/    kdpd #2: /' "$d/not-served2"
        fi
        : > "$d/preferred"
        if ! grep -qs '^nvlink ' "$nodes/$fixture.nvml"; then
                :
        elif preferred_same "$d" > "$d/preferred.diff"; then
                ok "$case_name: GetPreferredAllocation gives the same answer to $(wc -l < "$d/preferred") requests"
        else
                fail "$case_name: GetPreferredAllocation answers differ"
                sed 's/^/    /' "$d/preferred.diff"
        fi
        : > "$d/allocated"
        if allocate_same "$d" > "$d/alloc.diff"; then
                ok "$case_name: Allocate gives the same answer for $(wc -l < "$d/allocated") healthy devices"
        else
                fail "$case_name: Allocate answers differ"
                sed 's/^/    /' "$d/alloc.diff"
        fi
        touch "$d/stop"
        exec 9>&-
        wait "$sim_pid"
        k=$?
        drop_pid bg "$sim_pid"             # reaped: stop_all must not signal its number
        if [ $k != 0 ] || [ "$(cat "$d/rc" 2>/dev/null)" != "0 0" ]; then
                fail "$case_name: sim-node exit $k, kdpd exit codes '$(cat "$d/rc" 2>/dev/null)' (expected 0 0)"
                show_logs "$d"
        fi
        for f in "$tmp"/valgrind.*.log; do
                [ -s "$f" ] || continue
                fail "$case_name: valgrind: $f"
                sed 's/^/    /' "$f" | head -n 40
                rm -f "$f"
        done
        rm -f "$tmp"/valgrind.*.log
        sim_pid=
        stop_all
        echo "    ($(( ($(now_ms) - t0) / 1000 )) s)"
}

# ---------------------------------------------------------------------------------------------
# The matrix: every fixture with the backend that serves something on it

backend_of() {
        case $1 in
        gpu-h100x8-mig) echo "gpu -o gpu.mig_strategy=mixed" ;;
        gpu-*) echo gpu ;;
        two-socket-switches) echo "pcitest -o pcitest.vendor=10de -o pcitest.device=2330 -o pcitest.driver=nvidia" ;;
        flapping-device) echo "pcitest -o pcitest.vendor=10de -o pcitest.device=20f1 -o pcitest.driver=nvidia" ;;
        sriov-*) echo "sriov -o sriov.config_file=$cases/$1.config.json -o sriov.devinfo_dir=" ;;
        fpga-*) echo fpga ;;
        esac
}

main() {
        local fixture script name seed=1
        local -a backend
        for fixture in "${converge_fixtures[@]}"; do          # the i-th has seed i
                read -ra backend <<< "$(backend_of "$fixture")"
                for script in "$cases/$fixture".*.script; do
                        [ -f "$script" ] || continue
                        name=${script##*/$fixture.}
                        run_case "$fixture" "${name%.script}" "$script" "${backend[@]}"
                done
                # its records carry fixed stamps (~25 h after boot), which a fresh kdpd would
                # count or not by the machine's uptime; with xid_recovery_s=0 none is replayed,
                # and the live Xid 79 is over with the GPU's return, as before
                [ "$fixture" = gpu-h100x8 ] &&
                        run_case "$fixture" fall-off-bus "$nodes/gpu-h100x8-fall-off-bus.script" "${backend[@]}" \
                                -o gpu.xid_recovery_s=0
                # the fixture's own event scripts (sriov-e810-numvfs.script: case sriov-e810/numvfs),
                # not those of a fixture whose name extends it (gpu-mi300x4-cpx-*.script)
                for script in "$nodes/$fixture"-*.script; do
                        [ -f "$script" ] && [ "$fixture" != gpu-h100x8 ] || continue
                        name=${script##*/"$fixture"-}
                        [ -f "$nodes/$fixture-${name%%-*}.umockdev" ] && continue
                        run_case "$fixture" "${name%.script}" "$script" "${backend[@]}"
                done
                # AMD partitions as devices (single, the default, in the runs above and below):
                # the repartition moves GPU 0 between resources (mixed) and changes its nodes
                # (whole); the random script whole too, and with partitions under mixed on the
                # nodes cut in 2 and 4
                # MIG devices as one resource: the layout change under single too
                [ "$fixture" = gpu-h100x8-mig ] &&
                        run_case "$fixture" layout-single "$cases/$fixture.layout.script" "${backend[@]}" \
                                -o gpu.mig_strategy=single
                random_script_of "$fixture" "$seed" > "$tmp/random.$fixture.script"
                if [ "$fixture" = gpu-mi300x4-cpx ]; then
                        run_case "$fixture" repartition-mixed "$nodes/$fixture-repartition.script" "${backend[@]}" \
                                -o gpu.amd_partitions=mixed
                        run_case "$fixture" repartition-whole "$nodes/$fixture-repartition.script" "${backend[@]}" \
                                -o gpu.amd_partitions=whole
                        run_case "$fixture" "random-seed$seed-whole" "$tmp/random.$fixture.script" "${backend[@]}" \
                                -o gpu.amd_partitions=whole
                fi
                case $fixture in
                gpu-mi300x4-dpx | gpu-mi300x4-qpx | gpu-mi308x4-cpx)
                        run_case "$fixture" "random-seed$seed-mixed" "$tmp/random.$fixture.script" "${backend[@]}" \
                                -o gpu.amd_partitions=mixed ;;
                esac
                run_case "$fixture" "random-seed$seed" "$tmp/random.$fixture.script" "${backend[@]}"
                seed=$((seed + 1))
        done

        echo "$n_cases cases"
        if [ ${#netns_skipped[@]} -gt 0 ]; then
                echo "${#netns_skipped[@]} SR-IOV cases were not run ($netns_why):"
                printf '    %s\n' "${netns_skipped[@]}"
                [ $n_cases = 0 ] && exit 77
        fi
        if [ ${#skipped[@]} -gt 0 ]; then
                echo "${#skipped[@]} cases were not run, only the key cases (KDP_CONVERGE_ONLY=. runs them):"
                printf '    %s\n' "${skipped[@]}"
        fi
        if [ $failures -gt 0 ]; then
                echo "$failures check(s) failed"
                exit 1
        fi
        echo "all checks passed"
}

main
exit
