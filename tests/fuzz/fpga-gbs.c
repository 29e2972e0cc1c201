/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuzz/fpga-gbs: a GBS image (header, JSON metadata, bitstream) as the fpga backend parses it (fpga_program_gbs_parse()). */
#include "fuzz.h"
#include "program.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        uint8_t *copy = malloc(size ? size : 1);
        fpga_program_gbs g;
        char *why = NULL;
        int r;

        if (!copy)
                abort();
        memcpy(copy, data, size);
        r = fpga_program_gbs_parse(copy, size, &g, &why);
        if (r == 0)
                fpga_program_gbs_done(&g);      /* it took copy */
        else {
                if (r == -EBADMSG && !why)
                        abort();
                free(copy);
                free(why);
        }
        return 0;
}
