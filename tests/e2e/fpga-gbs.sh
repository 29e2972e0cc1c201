# SPDX-License-Identifier: GPL-2.0-or-later
# write_gbs, for the FPGA scenarios (through fpga-lib.sh) and bench/fpga.sh; source it.

# write_gbs DIR IFID AFU: DIR/IFID/AFU.gbs, a GBS file (header, metadata naming IFID and AFU) whose
# raw bitstream is what sim-node's emulated FME takes the AFU ID from (SIM-BITSTREAM afu_id=AFU)
write_gbs() {
        local dir=$1/$2 json len
        json="{\"version\": 1, \"afu-image\": {\"interface-uuid\": \"$2\", \"accelerator-clusters\": [{\"name\": \"nlb\", \"accelerator-type-uuid\": \"$3\"}]}}"
        len=${#json}
        mkdir -p "$dir"
        {
                printf 'XeonFPGA\267GBSv001'
                printf "$(printf '\\%03o\\%03o\\%03o\\%03o' $((len & 255)) $((len >> 8 & 255)) 0 0)"
                printf '%s' "$json"
                printf 'SIM-BITSTREAM afu_id=%s\n\001\002\003' "$3"
        } >"$dir/$3.gbs"
}
