/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuzz/fpga-gbs: a GBS image (header, JSON metadata, bitstream) as the fpga backend parses it (fpga_program_gbs_parse()). */
#include "fuzz.h"
#include "program.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        fpga_program_gbs g;
        char *why = NULL;
        int r;

        r = fpga_program_gbs_parse(data, size, &g, &why);      /* borrows data */
        if (r == 0 && (g.bitstream < data || g.bitstream + g.bitstream_size != data + size))
                abort();
        if (r == -EBADMSG && !why)
                abort();
        free(why);
        return 0;
}
