# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# The random event scripts of tests/sim-node/test-converge.sh, sourced by it and by
# test-random-scripts.sh (which checks every line they write against sim-node's rules, with
# check-script.py). Needs $nodes (tests/fixtures/nodes). Scripts are sim-node lines (see
# sim-node.c) and the converge harness's own "restore PATH".

# The fixtures test-converge.sh gives a random script, in its order: the i-th (from 1) has seed
# i. A new fixture goes last, so that the others keep their seeds, and so their scripts.
converge_fixtures=(gpu-h100x8 gpu-mi300x4 gpu-mi300x4-cpx gpu-flex170x2 gpu-mixed two-socket-switches
        flapping-device sriov-e810 sriov-cx6dx sriov-noiommu sriov-cx6-ib fpga-d5005 fpga-u250 fpga-opae
        fpga-ofs gpu-h100x8-mig gpu-mi300x4-dpx gpu-mi300x4-qpx gpu-mi308x4-cpx gpu-h100nvl)

# random_script_of FIXTURE SEED: the random script test-converge.sh runs on FIXTURE (30 steps)
random_script_of() {
        case $1 in
        sriov-*) random_sriov_script "$1" 30 "$2" ;;
        gpu-*) random_script "$1" gpu 30 "$2" ;;
        fpga-*) random_script "$1" fpga 30 "$2" ;;
        *) random_script "$1" pcitest 30 "$2" ;;
        esac
}

# The random script of a fixture: a fixed seed, a small LCG (the same sequence on every bash),
# and a model of the node so that every command is valid where it comes. A GPU is plugged or
# not, bound to its driver, to none or to vfio-pci; NVIDIA's driver makes and drops its
# /proc/driver/nvidia/gpus/<bdf> entry with the binding; an Intel PF has 0 or 4 VFs; Xids,
# resets (a "change" uevent), procfs and KFD glitches come in between.

rng=1
rand() {                                # rand N: a number in 0..N-1 in $r
        rng=$(((rng * 1103515245 + 12345) % 2147483648))
        r=$(((rng / 65536) % $1))
}

random_script() {
        local fixture=$1 vendor=$2 steps=$3 i g act
        local -a gpus=() drv=() plugged=() bound=() procfs=() kfd=() vfs=() vfdrv=() kfdnode=() xid=()
        local -a pool
        rng=$4
        case $fixture in
        gpu-h100x8 | gpu-h100x8-mig) gpus=(0000:18:00.0 0000:19:00.0 0000:3a:00.0 0000:3b:00.0 0000:9a:00.0 0000:9b:00.0 0000:ba:00.0 0000:bb:00.0) ;;
        gpu-mi300x4) gpus=(0000:05:00.0 0000:27:00.0 0000:85:00.0 0000:a7:00.0); kfdnode=(2 3 4 5) ;;
        gpu-mi300x4-cpx) gpus=(0000:05:00.0 0000:27:00.0 0000:85:00.0 0000:a7:00.0); kfdnode=(2 10 18 26) ;;
        gpu-mi300x4-dpx) gpus=(0000:05:00.0 0000:27:00.0 0000:85:00.0 0000:a7:00.0); kfdnode=(2 4 6 8) ;;
        gpu-mi300x4-qpx | gpu-mi308x4-cpx) gpus=(0000:05:00.0 0000:27:00.0 0000:85:00.0 0000:a7:00.0); kfdnode=(2 6 10 14) ;;
        gpu-h100nvl) gpus=(0000:18:00.0 0000:19:00.0 0000:1a:00.0 0000:3a:00.0 0000:3b:00.0 0000:9a:00.0 0000:9b:00.0) ;;
        gpu-flex170x2) gpus=(0000:4d:00.0 0000:ca:00.0) ;;
        gpu-mixed) gpus=(0000:3d:00.0 0000:4f:00.0 0000:da:00.0) ;;
        two-socket-switches) gpus=(0000:18:00.0 0000:19:00.0 0000:3a:00.0 0000:3b:00.0 0000:9a:00.0 0000:9b:00.0 0000:ba:00.0 0000:bb:00.0) ;;
        flapping-device) gpus=(0000:01:00.0 0000:02:00.0) ;;
        fpga-d5005) gpus=(0000:3b:00.0 0000:d8:00.0) ;;
        fpga-u250) gpus=(0000:3b:00.1 0000:d8:00.1) ;;
        fpga-opae) gpus=(0000:06:00.0) ;;
        fpga-ofs) gpus=(0000:1f:00.0 0000:b1:00.1) ;;
        esac
        for i in "${!gpus[@]}"; do
                case $fixture:${gpus[i]} in
                gpu-mi30*) drv[i]=amdgpu ;;
                gpu-flex170x2:*) drv[i]=i915 ;;
                gpu-mixed:0000:da:00.0) drv[i]=xe ;;
                fpga-d5005:* | fpga-ofs:*) drv[i]=dfl-pci ;;
                fpga-opae:*) drv[i]=intel-fpga-pci ;;
                fpga-u250:*) drv[i]=xocl ;;
                *) drv[i]=nvidia ;;
                esac
                plugged[i]=1 bound[i]=${drv[i]} procfs[i]=1 kfd[i]=1 vfs[i]=0 xid[i]=0
        done
        echo "# random: seed $4, $steps steps"
        local seq=9000
        for ((step = 0; step < steps; step++)); do
                rand "${#gpus[@]}"
                i=$r g=${gpus[i]}
                pool=()
                if [ "${xid[i]}" = 1 ]; then
                        # a critical Xid stays: a reset or rebind would end it for kdpd #1 only
                        # (plugins/gpu/README.md: a fresh kdpd counts what the log holds)
                        continue
                elif [ "${plugged[i]}" = 1 ]; then
                        [ "${vfs[i]}" = 0 ] && pool+=(unplug)
                        [ -n "${bound[i]}" ] && [ "${vfs[i]}" = 0 ] && pool+=(unbind)
                        [ -z "${bound[i]}" ] && pool+=(bind bind vfio)
                        [ "${drv[i]}" = nvidia ] && [ "${bound[i]}" = nvidia ] && [ "$vendor" = gpu ] &&
                                pool+=(xid xid reset procfs)
                        [ "${drv[i]}" = amdgpu ] && pool+=(kfd)
                        [ "${drv[i]}" = i915 ] && [ "${bound[i]}" = i915 ] && pool+=(sriov)
                        [ "${vfs[i]}" != 0 ] && pool+=(vf vf)
                else
                        pool+=(replug)
                fi
                rand "${#pool[@]}"
                act=${pool[r]}
                case $act in
                unplug)
                        [ "${bound[i]}" = nvidia ] && [ "$vendor" = gpu ] && [ "${procfs[i]}" = 1 ] &&
                                echo "rm proc/driver/nvidia/gpus/$g"
                        echo "unplug $g"
                        plugged[i]=0 bound[i]= procfs[i]=0 ;;
                replug)
                        [ "${drv[i]}" = nvidia ] && [ "$vendor" = gpu ] && echo "restore proc/driver/nvidia/gpus/$g/information" &&
                                procfs[i]=1
                        echo "replug $g"
                        plugged[i]=1 bound[i]=${drv[i]} ;;
                unbind)
                        [ "${bound[i]}" = nvidia ] && [ "$vendor" = gpu ] && [ "${procfs[i]}" = 1 ] &&
                                echo "rm proc/driver/nvidia/gpus/$g" && procfs[i]=0
                        echo "unbind $g"
                        bound[i]= ;;
                bind)
                        [ "${drv[i]}" = nvidia ] && [ "$vendor" = gpu ] && [ "${procfs[i]}" = 0 ] &&
                                echo "restore proc/driver/nvidia/gpus/$g/information" && procfs[i]=1
                        echo "bind $g ${drv[i]}"
                        bound[i]=${drv[i]} ;;
                vfio)
                        echo "bind $g vfio-pci"
                        bound[i]=vfio-pci ;;
                xid)
                        seq=$((seq + 1))
                        rand 4
                        local codes=(79 48 94 13)
                        # after kdpd #1 has read the uevents before it: the log and the uevents are
                        # two channels, and a bind read after a later Xid would end that Xid
                        echo "wait"
                        echo "kmsg 4,$seq,@,c;NVRM: Xid (PCI:${g%.*}): ${codes[r]}, pid=0, test record"
                        [ "${codes[r]}" != 13 ] && xid[i]=1 ;;
                reset)
                        echo "uevent $g change" ;;
                procfs)
                        if [ "${procfs[i]}" = 1 ]; then
                                echo "rm proc/driver/nvidia/gpus/$g"
                                procfs[i]=0
                        else
                                echo "restore proc/driver/nvidia/gpus/$g/information"
                                procfs[i]=1
                        fi ;;
                kfd)
                        if [ "${kfd[i]}" = 1 ]; then
                                echo "rm sys/devices/virtual/kfd/kfd/topology/nodes/${kfdnode[i]}"
                                kfd[i]=0
                        else
                                echo "restore sys/devices/virtual/kfd/kfd/topology/nodes/${kfdnode[i]}/properties"
                                kfd[i]=1
                        fi ;;
                sriov)
                        # with VFs enabled, the same count again changes nothing (the kernel returns
                        # at once): the VFs keep the drivers they have
                        echo "sriov $g 4"
                        [ "${vfs[i]}" = 0 ] || continue
                        vfs[i]=4
                        vfdrv[i * 4]=i915 vfdrv[i * 4 + 1]=i915 vfdrv[i * 4 + 2]=i915 vfdrv[i * 4 + 3]=i915 ;;
                vf)
                        rand 5
                        if [ "$r" = 4 ]; then
                                echo "sriov $g 0"
                                vfs[i]=0
                        else
                                local k=$((i * 4 + r)) vf="${g%.*}.$((r + 1))"
                                case ${vfdrv[k]} in
                                "") echo "bind $vf vfio-pci"; vfdrv[k]=vfio-pci ;;
                                *) echo "unbind $vf"; vfdrv[k]= ;;
                                esac
                        fi ;;
                esac
        done
}

# The random script of an SR-IOV fixture: a PF is plugged or not and has its VFs enabled or
# not (SR-IOV off before an unplug, as the PF drivers do; a replug or an enable brings the VFs
# its record enables, on their records' drivers); a present VF is bound to its driver, to none
# or to vfio-pci, and its netdev is on the host or in a pod.
random_sriov_script() {
        local fixture=$1 steps=$2 i k act
        local -a pfs=() pf_on=() pf_fixed=() pf_plugged=() pf_n=() vfs=() vf_pf=() vf_idx=() vf_rec=() vf_net=()
        local -a vf_drv=() vf_pod=() pool=()
        rng=$3
        # sriov_vfs PF-INDEX ADDRESS-PREFIX FUNCTIONS DRIVERS NETDEV-PREFIX N-NETDEVS
        sriov_vfs() {
                local p=$1 j=0 f
                for f in $3; do
                        vfs+=("$2$f") vf_pf+=("$p") vf_idx+=("$j")
                        vf_rec+=("$(echo "$4" | cut -d' ' -f$((j + 1)))")
                        if [ "$j" -lt "$6" ]; then vf_net+=("$5$j"); else vf_net+=(""); fi
                        j=$((j + 1))
                done
        }
        case $fixture in
        sriov-e810)
                pfs=(0000:8a:00.0 0000:8a:00.1) pf_on=(8 8) pf_fixed=(0 0)
                sriov_vfs 0 0000:8a:01. "0 1 2 3 4 5 6 7" "iavf iavf iavf iavf iavf iavf vfio-pci vfio-pci" ens3f0v 6
                sriov_vfs 1 0000:8a:05. "0 1 2 3 4 5 6 7" "iavf iavf iavf iavf vfio-pci vfio-pci vfio-pci vfio-pci" ens3f1v 4 ;;
        sriov-noiommu)
                pfs=(0000:8a:00.0) pf_on=(8) pf_fixed=(0)
                sriov_vfs 0 0000:8a:01. "0 1 2 3 4 5 6 7" "iavf iavf iavf iavf iavf iavf vfio-pci vfio-pci" ens3f0v 6 ;;
        sriov-cx6dx)
                # PF0's representors are its own class devices, which sim-node's sriov does not
                # make or drop (mlx5 would): its VF count stays
                pfs=(0000:3b:00.0 0000:3b:00.1) pf_on=(4 8) pf_fixed=(1 0)
                sriov_vfs 0 0000:3b:00. "2 3 4 5" "mlx5_core mlx5_core mlx5_core mlx5_core" ens1f0v 4
                sriov_vfs 1 0000:3b: "01.2 01.3 01.4 01.5 01.6 01.7 02.0 02.1" \
                        "mlx5_core mlx5_core mlx5_core mlx5_core mlx5_core mlx5_core mlx5_core mlx5_core" ens1f1v 8 ;;
        sriov-cx6-ib)
                pfs=(0000:d8:00.0) pf_on=(4) pf_fixed=(0)
                sriov_vfs 0 0000:d8:00. "1 2 3 4" "mlx5_core mlx5_core mlx5_core mlx5_core" ibp216s0v 4 ;;
        esac
        for i in "${!pfs[@]}"; do
                pf_plugged[i]=1
                pf_n[i]=$(awk -v a="E: PCI_SLOT_NAME=${pfs[i]}" '$0 == a { p = 1 } /^$/ { p = 0 }
                        p && /^A: sriov_numvfs=/ { sub(/^A: sriov_numvfs=/, ""); sub(/\\n$/, ""); print; exit }' \
                        "$nodes/$fixture.umockdev")
        done
        # vfs_reset PF-INDEX: its VFs as the records make them
        vfs_reset() {
                for k in "${!vfs[@]}"; do
                        [ "${vf_pf[k]}" = "$1" ] && vf_drv[k]=${vf_rec[k]} vf_pod[k]=0
                done
        }
        for i in "${!pfs[@]}"; do
                vfs_reset "$i"
        done
        echo "# random: seed $3, $steps steps"
        for ((step = 0; step < steps; step++)); do
                pool=()
                for i in "${!pfs[@]}"; do
                        [ "${pf_fixed[i]}" = 1 ] && continue
                        # four times each: a PF has one or two, its VFs eight
                        if [ "${pf_plugged[i]}" = 0 ]; then
                                pool+=("replug $i" "replug $i" "replug $i" "replug $i")
                                continue
                        fi
                        pool+=("unplug $i" "unplug $i")
                        if [ "${pf_n[i]}" = 0 ]; then
                                pool+=("enable $i" "enable $i" "enable $i" "enable $i")
                        else
                                pool+=("disable $i" "disable $i" "disable $i" "disable $i")
                        fi
                done
                for k in "${!vfs[@]}"; do
                        i=${vf_pf[k]}
                        [ "${pf_plugged[i]}" = 1 ] && [ "${vf_idx[k]}" -lt "${pf_n[i]}" ] || continue
                        if [ -z "${vf_drv[k]}" ]; then
                                pool+=("bind $k")
                                [ "${vf_rec[k]}" != vfio-pci ] && pool+=("vfio $k")
                        else
                                pool+=("unbind $k")
                                [ "${vf_drv[k]}" = "${vf_rec[k]}" ] && [ -n "${vf_net[k]}" ] && pool+=("pod $k")
                        fi
                done
                rand "${#pool[@]}"
                read -r act k <<< "${pool[r]}"
                case $act in
                replug)
                        echo "replug ${pfs[k]}"
                        pf_plugged[k]=1
                        pf_n[k]=$(awk -v a="E: PCI_SLOT_NAME=${pfs[k]}" '$0 == a { p = 1 } /^$/ { p = 0 }
                                p && /^A: sriov_numvfs=/ { sub(/^A: sriov_numvfs=/, ""); sub(/\\n$/, ""); print; exit }' \
                                "$nodes/$fixture.umockdev")
                        vfs_reset "$k" ;;
                unplug)
                        [ "${pf_n[k]}" != 0 ] && echo "sriov ${pfs[k]} 0"
                        echo "unplug ${pfs[k]}"
                        pf_plugged[k]=0 pf_n[k]=0 ;;
                enable)
                        echo "sriov ${pfs[k]} ${pf_on[k]}"
                        pf_n[k]=${pf_on[k]}
                        vfs_reset "$k" ;;
                disable)
                        echo "sriov ${pfs[k]} 0"
                        pf_n[k]=0 ;;
                bind)
                        echo "bind ${vfs[k]} ${vf_rec[k]}"
                        vf_drv[k]=${vf_rec[k]} vf_pod[k]=0 ;;
                vfio)
                        echo "bind ${vfs[k]} vfio-pci"
                        vf_drv[k]=vfio-pci ;;
                unbind)
                        echo "unbind ${vfs[k]}"
                        vf_drv[k]= vf_pod[k]=0 ;;
                pod)
                        if [ "${vf_pod[k]}" = 0 ]; then
                                echo "unplug net/${vf_net[k]}"
                                vf_pod[k]=1
                        else
                                echo "replug net/${vf_net[k]}"
                                vf_pod[k]=0
                        fi ;;
                esac
        done
}
