/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * plugins/fpga/name.c: the resource names pods of Intel's and AMD's plugins ask for, byte for
 * byte (Intel's two worked examples among them), canonical IDs, and the kubelet's length limit.
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "fpga.h"
#include "kdp-test.h"

static const struct {
        const char *text, *canonical;
        int r;
} ids[] = {
        { "bfac4d851ee856fe8c95865ce1bbaa2d", "bfac4d851ee856fe8c95865ce1bbaa2d", 0 },
        { " BFAC4D85-1EE8-56FE-8C95-865CE1BBAA2D\n", "bfac4d851ee856fe8c95865ce1bbaa2d", 0 },
        { "40007c0623210742000ebc58df6f5343e668b03a", "40007c0623210742000ebc58df6f5343e668b03a", 0 },
        { "", NULL, -EINVAL },
        { "   ", NULL, -EINVAL },
        { "bfac4d85 1ee8", NULL, -EINVAL },
        { "xyz", NULL, -EINVAL },
        { "00000000000000000000000000000000000000000000000000000000000000001", NULL, -EINVAL },  /* 65 digits */
};

START_TEST(test_fpga_name_canonical_ids) {
        for (size_t i = 0; i < KDP_ELEMENTSOF(ids); i++) {
                char out[FPGA_ID_MAX] = "unchanged";

                ck_assert_msg(fpga_name_canonical_id(ids[i].text, out) == ids[i].r, "case %zu", i);
                ck_assert_str_eq(out, ids[i].canonical ? ids[i].canonical : "unchanged");
        }
        ck_assert(fpga_name_id_all_f("ffffffffffffffffffffffffffffffff"));
        ck_assert(!fpga_name_id_all_f("fffffffffffffffffffffffffffffffe"));
        ck_assert(!fpga_name_id_all_f(""));
}
END_TEST

static const struct {
        const char *ifid, *afu, *name;
        int r;
} afs[] = {
        /* Intel's webhook README: Arria 10 DCP 1.2 with NLB0 */
        { "69528db6eb31577a8c3668f9faa081f6", "d8424dc4a4a3c413f89e433683f9040b",
          "fpga.intel.com/af-695.d84.aVKNtusxV3qMNmj5-qCB9thCTcSko8QT-J5DNoP5BAs", 0 },
        /* D5005 with NLB0, and with NLB3 */
        { "bfac4d851ee856fe8c95865ce1bbaa2d", "d8424dc4a4a3c413f89e433683f9040b",
          "fpga.intel.com/af-bfa.d84.v6xNhR7oVv6MlYZc4buqLdhCTcSko8QT-J5DNoP5BAs", 0 },
        { "bfac4d851ee856fe8c95865ce1bbaa2d", "f7df405cbd7acf7222f144b0b93acd18",
          "fpga.intel.com/af-bfa.f7d.v6xNhR7oVv6MlYZc4buqLfffQFy9es9yIvFEsLk6zRg", 0 },
        /* an OpenCL AFU ID of 40 digits: 36 bytes, 48 characters of base64 */
        { "bfac4d851ee856fe8c95865ce1bbaa2d", "40007c0623210742000ebc58df6f5343e668b03a",
          "fpga.intel.com/af-bfa.400.v6xNhR7oVv6MlYZc4buqLUAAfAYjIQdCAA68WN9vU0PmaLA6", 0 },
        /* a byte count that leaves 1 and 2 bytes over: base64 without padding */
        { "abc", "def0", NULL, -EINVAL },                                       /* 7 digits */
        { "abcd", "ef01", "fpga.intel.com/af-abc.ef0.q83vAQ", 0 },              /* 4 bytes */
        { "abcd", "ef0123", "fpga.intel.com/af-abc.ef0.q83vASM", 0 },           /* 5 bytes */
        /* past 63 characters after the domain */
        { "bfac4d851ee856fe8c95865ce1bbaa2d", "d8424dc4a4a3c413f89e433683f9040bd8424dc4a4a3c413", NULL,
          -ENAMETOOLONG },
};

START_TEST(test_fpga_name_af_matches_intel_byte_for_byte) {
        for (size_t i = 0; i < KDP_ELEMENTSOF(afs); i++) {
                char out[FPGA_RESOURCE_MAX] = "unchanged";

                ck_assert_msg(fpga_name_af(afs[i].ifid, afs[i].afu, out) == afs[i].r, "case %zu", i);
                ck_assert_str_eq(out, afs[i].name ? afs[i].name : "unchanged");
                if (afs[i].name)
                        ck_assert_uint_le(strlen(strchr(out, '/') + 1), 63);
        }
}
END_TEST

START_TEST(test_fpga_name_region_and_xilinx) {
        char out[FPGA_RESOURCE_MAX];

        ck_assert_int_eq(fpga_name_region("bfac4d851ee856fe8c95865ce1bbaa2d", out), 0);
        ck_assert_str_eq(out, "fpga.intel.com/region-bfac4d851ee856fe8c95865ce1bbaa2d");
        ck_assert_int_eq(fpga_name_xilinx("amd.com/", "xilinx_u250_gen3x16_xdma_shell_4_1", "0", out), 0);
        ck_assert_str_eq(out, "amd.com/xilinx_u250_gen3x16_xdma_shell_4_1-0");
        ck_assert_int_eq(fpga_name_xilinx("amd.com/", "xilinx_u250_xdma_201830_1", "1543284427", out), 0);
        ck_assert_str_eq(out, "amd.com/xilinx_u250_xdma_201830_1-1543284427");
        ck_assert_int_eq(fpga_name_xilinx("xilinx.com/fpga-", "xilinx_u250_xdma_201830_1", "1543284427", out), 0);
        ck_assert_str_eq(out, "xilinx.com/fpga-xilinx_u250_xdma_201830_1-1543284427");
        strcpy(out, "unchanged");
        ck_assert_int_eq(fpga_name_xilinx("amd.com/", "bad vbnv", "0", out), -EINVAL);
        ck_assert_int_eq(fpga_name_xilinx("amd.com", "xilinx_u250", "0", out), -EINVAL);
        ck_assert_int_eq(fpga_name_xilinx("amd.com/", "", "0", out), -EINVAL);
        ck_assert_int_eq(fpga_name_xilinx("amd.com/", "xilinx_u250_gen3x16_xdma_shell_4_1_and_a_long_tail_of_words",
                                          "1543284427", out), -ENAMETOOLONG);
        ck_assert_str_eq(out, "unchanged");
}
END_TEST

static Suite *fpga_name_suite(void) {
        Suite *s = suite_create("fpga-name");
        TCase *tc = tcase_create("names");

        tcase_add_test(tc, test_fpga_name_canonical_ids);
        tcase_add_test(tc, test_fpga_name_af_matches_intel_byte_for_byte);
        tcase_add_test(tc, test_fpga_name_region_and_xilinx);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return kdp_test_run(fpga_name_suite());
}
