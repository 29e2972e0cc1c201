/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench-fpga-program REPS FME_NODE COMPAT_ID AFU_ID GBS_A GBS_B: the programming itself, as
 * kdpd's PreStart runs it (plugins/fpga/program.c's fpga_program_run(): the GBS file read and
 * checked, compat_id read, the PR call on the FME node, afu_id read back), REPS times, loading
 * GBS_A and GBS_B in turn so that each one changes the port; one untimed call first. Run by
 * bench/fpga.sh under sim-node, whose emulated FME answers at once ("fpga-pr ... good 0").
 * Prints program_p50_us, _p99_us, _max_us.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench-stats.h"
#include "program.h"

int main(int argc, char **argv) {
        fpga_program_card card;
        unsigned reps;
        uint64_t *t;

        if (argc != 7) {
                fprintf(stderr, "usage: bench-fpga-program REPS FME_NODE COMPAT_ID AFU_ID GBS_A GBS_B\n");
                return 2;
        }
        reps = (unsigned) strtoul(argv[1], NULL, 10);
        t = calloc(reps ? reps : 1, sizeof(*t));
        if (!reps || !t)
                return 2;
        card = (fpga_program_card){ .name = "bench", .fme_node = argv[2], .compat_id_path = argv[3],
                                    .afu_id_path = argv[4], .port_id = 0 };
        for (unsigned i = 0; i <= reps; i++) {
                char *why = NULL;
                uint64_t t0 = bench_stats_now_ns();
                int r = fpga_program_run(&card, argv[5 + i % 2], NULL, &why);

                if (r < 0) {
                        fprintf(stderr, "bench-fpga-program: %s\n", why ? why : "failed");
                        free(why);
                        free(t);
                        return 1;
                }
                if (i > 0)
                        t[i - 1] = bench_stats_now_ns() - t0;
        }
        qsort(t, reps, sizeof(*t), bench_stats_cmp_u64);
        printf("program_p50_us=%.1f\n", bench_stats_pct(t, reps, 50) / 1e3);
        printf("program_p99_us=%.1f\n", bench_stats_pct(t, reps, 99) / 1e3);
        printf("program_max_us=%.1f\n", t[reps - 1] / 1e3);
        free(t);
        return 0;
}
