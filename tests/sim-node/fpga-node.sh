# SPDX-License-Identifier: GPL-2.0-or-later
# write_fpga_node FILE: a minimal DFL node for the FPGA programming tests, three cards on one
# PCI bus: card 0 (dfl-fme.0, port dfl-port.0 id 0) answers PR calls "good" unless told otherwise;
# card 1 (dfl-fme.1, port dfl-port.1) is declared failing (E: SIM_FPGA_PR=fail), card 2
# (dfl-fme.2, port dfl-port.2) slow (E: SIM_FPGA_PR=slow 1500), card 3 (dfl-fme.3, port
# dfl-port.3) holds every call until a "fpga-pr dfl-fme.3 good 0" (slow 3600000). All carry the
# D5005 interface ID bfac4d851ee856fe8c95865ce1bbaa2d in their PR region and NLB0
# (d8424dc4a4a3c413f89e433683f9040b) in afu_id. No driver links, no hwmon: only what programming
# reads. The full D5005 node is tests/fixtures/nodes' business.
write_fpga_node() {
        local card pf fme mode
        : >"$1"
        for card in 0 1 2 3; do
                mode=""
                [ $card = 1 ] && mode="E: SIM_FPGA_PR=fail"$'\n'
                [ $card = 2 ] && mode="E: SIM_FPGA_PR=slow 1500"$'\n'
                [ $card = 3 ] && mode="E: SIM_FPGA_PR=slow 3600000"$'\n'
                pf=/devices/pci0000:3b/0000:3b:0$card.0
                fme=$pf/fpga_region/region$((card * 2))/dfl-fme.$card
                cat >>"$1" <<REC
P: $pf
E: SUBSYSTEM=pci
E: DRIVER=dfl-pci
E: PCI_CLASS=120000
E: PCI_ID=8086:0B2B
E: PCI_SLOT_NAME=0000:3b:0$card.0
A: vendor=0x8086\\n
A: device=0x0b2b\\n
A: class=0x120000\\n
A: numa_node=0\\n

P: $pf/fpga_region/region$((card * 2))
E: SUBSYSTEM=fpga_region

P: $fme
E: SUBSYSTEM=platform
E: DRIVER=dfl-fme
E: DEVNAME=dfl-fme.$card
${mode}A: dev=509:$card\\n
A: ports_num=1\\n
N: dfl-fme.$card

P: $fme/dfl-fme-region.$card/fpga_region/region$((card * 2 + 1))
E: SUBSYSTEM=fpga_region
A: compat_id=bfac4d851ee856fe8c95865ce1bbaa2d\\n

P: $pf/fpga_region/region$((card * 2))/dfl-port.$card
E: SUBSYSTEM=platform
E: DRIVER=dfl-port
E: DEVNAME=dfl-port.$card
A: dev=508:$card\\n
A: id=0\\n
A: afu_id=d8424dc4a4a3c413f89e433683f9040b\\n
N: dfl-port.$card

REC
        done
}
