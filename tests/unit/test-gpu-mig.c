/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * MIG devices (plugins/gpu/mig.c): the capability files' parser, NVIDIA's profile names and the
 * mixed resources, and the MIG layout NVML gives, against the fake library (tests/nvml) with
 * the return codes a MIG call can give.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdp/cleanup.h>

#include "mig.h"
#include "nvml.h"

#include "kdp-test.h"

#define BDF0 "0000:18:00.0"
#define BDF1 "0000:19:00.0"
#define BDF2 "0000:3a:00.0"
#define MIG_A "MIG-0b7bd8c2-4c5e-5f3a-9a57-1d1e2b3c4d01"
#define MIG_B "MIG-0b7bd8c2-4c5e-5f3a-9a57-1d1e2b3c4d02"
#define MIG_C "MIG-0b7bd8c2-4c5e-5f3a-9a57-1d1e2b3c4d03"
#define MIG_D "MIG-0b7bd8c2-4c5e-5f3a-9a57-1d1e2b3c4d04"

/* ---- capability files ---- */

START_TEST(test_gpu_mig_parse_access_reads_the_minor) {
        const char *why = "untouched";
        unsigned minor = 0;

        ck_assert_int_eq(gpu_mig_parse_access("DeviceFileMinor: 12\nDeviceFileMode: 292\nDeviceFileModify: 1\n", &minor,
                                              &why), 0);
        ck_assert_uint_eq(minor, 12);
        ck_assert_str_eq(why, "untouched");
        /* no trailing newline, a tab, the last minor of the table, the largest a minor can be */
        ck_assert_int_eq(gpu_mig_parse_access("DeviceFileMode: 292\nDeviceFileMinor:\t4322", &minor, NULL), 0);
        ck_assert_uint_eq(minor, 4322);
        ck_assert_int_eq(gpu_mig_parse_access("DeviceFileMinor: 1048575 \r\n", &minor, NULL), 0);
        ck_assert_uint_eq(minor, 1048575);
}
END_TEST

START_TEST(test_gpu_mig_parse_access_refuses_odd_content) {
        static const struct {
                const char *text, *why;
        } cases[] = {
                { "", "no DeviceFileMinor line" },
                { "DeviceFileMode: 292\nDeviceFileModify: 1\n", "no DeviceFileMinor line" },
                { "DeviceFileMinor: 12\nDeviceFileMinor: 13\n", "two DeviceFileMinor lines" },
                { "DeviceFileMinor: \n", "its DeviceFileMinor is not a number from 0 to 1048575" },
                { "DeviceFileMinor: -1\n", "its DeviceFileMinor is not a number from 0 to 1048575" },
                { "DeviceFileMinor: +3\n", "its DeviceFileMinor is not a number from 0 to 1048575" },
                { "DeviceFileMinor: 12a\n", "its DeviceFileMinor is not a number from 0 to 1048575" },
                { "DeviceFileMinor: 1048576\n", "its DeviceFileMinor is not a number from 0 to 1048575" },
                { "DeviceFileMinor: 99999999999999999999999\n", "its DeviceFileMinor is not a number from 0 to 1048575" },
                { " DeviceFileMinor: 12\n", "no DeviceFileMinor line" },
        };
        unsigned minor = 77;

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const char *why = NULL;

                ck_assert_msg(gpu_mig_parse_access(cases[i].text, &minor, &why) == -EBADMSG, "case %zu", i);
                ck_assert_str_eq(why, cases[i].why);
                ck_assert_uint_eq(minor, 77);
        }
        ck_assert_int_eq(gpu_mig_parse_access(NULL, &minor, NULL), -EBADMSG);
}
END_TEST

/* ---- profile names and resources ---- */

#define H100_80GB (81559ULL << 20)      /* nvmlDeviceGetMemoryInfo's total of an H100 80GB HBM3 */
#define A100_40GB (40536ULL << 20)

/* gpu_mig_profile_name()'s answer, or its error as text */
static const char *name_of(unsigned profile, unsigned gi_slices, unsigned ci_slices, unsigned long long mib,
                           unsigned long long total) {
        static char name[GPU_MIG_PROFILE_MAX];
        int r = gpu_mig_profile_name(profile, gi_slices, ci_slices, mib, total, name, sizeof(name));

        return r < 0 ? strerror(-r) : name;
}

START_TEST(test_gpu_mig_profile_names_follow_nvidia) {
        /* GPU instance profile ID, its slices, the compute instance's, MiB; on an H100 80GB (an A100 40GB) */
        static const unsigned long long h100[][4] = {
                { 0x0, 1, 1, 9984 }, { 0x9, 1, 1, 19968 }, { 0x1, 2, 2, 20096 }, { 0x2, 3, 3, 40320 }, { 0x2, 3, 1, 40320 },
                { 0x3, 4, 4, 40320 }, { 0x4, 7, 7, 80896 }, { 0x7, 1, 1, 9984 }, { 0xf, 1, 1, 9984 }, { 0xd, 1, 1, 9984 },
                { 0xb, 2, 2, 20096 }, { 0x40, 2, 2, 20096 },
        }, a100[][4] = { { 0x0, 1, 1, 4864 }, { 0x2, 3, 3, 19968 } };
        char names[512] = "";

        for (size_t i = 0; i < sizeof(h100) / sizeof(h100[0]); i++)
                strcat(strcat(names, name_of(h100[i][0], h100[i][1], h100[i][2], h100[i][3], H100_80GB)), " ");
        for (size_t i = 0; i < sizeof(a100) / sizeof(a100[0]); i++)
                strcat(strcat(names, name_of(a100[i][0], a100[i][1], a100[i][2], a100[i][3], A100_40GB)), " ");
        /* the variants of a size by the profile ID (0x7 REV1, 0xf ALL_ME, 0xd NO_ME, 0xb 2_SLICE_GFX); an
         * ID this build does not know (0x40): the slices NVML gives, no suffix */
        ck_assert_str_eq(names, "1g.10gb 1g.20gb 2g.20gb 3g.40gb 1c.3g.40gb 4g.40gb 7g.80gb 1g.10gb+me 1g.10gb+me.all "
                                "1g.10gb-me 2g.20gb+gfx 2g.20gb 1g.5gb 3g.20gb ");
        ck_assert_int_eq(NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 0x7);
        ck_assert_int_eq(NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME, 0xf);
        /* nothing to name: no slices, no memory, more memory than the GPU has */
        ck_assert_str_eq(name_of(0x40, 0, 1, 9984, H100_80GB), strerror(EINVAL));
        ck_assert_str_eq(name_of(0x0, 1, 0, 9984, H100_80GB), strerror(EINVAL));
        ck_assert_str_eq(name_of(0x0, 1, 1, 0, H100_80GB), strerror(EINVAL));
        ck_assert_str_eq(name_of(0x0, 1, 1, 9984, 0), strerror(EINVAL));
        ck_assert_str_eq(name_of(0x0, 1, 1, 90000, H100_80GB), strerror(EINVAL));
        ck_assert_int_eq(gpu_mig_profile_name(0, 1, 1, 9984, H100_80GB, (char[8]){ 0 }, 7), -ENAMETOOLONG);
}
END_TEST

static const char *resource_of(const char *base, const char *profile) {
        static char res[GPU_RESOURCE_MAX];

        return gpu_mig_resource(base, profile, res, sizeof(res)) < 0 ? "error" : res;
}

START_TEST(test_gpu_mig_resource_names_are_valid_resource_names) {
        ck_assert_str_eq(resource_of("nvidia.com/gpu", "1g.10gb"), "nvidia.com/mig-1g.10gb");
        ck_assert_str_eq(resource_of("nvidia.com/gpu", "1c.3g.40gb"), "nvidia.com/mig-1c.3g.40gb");
        ck_assert_str_eq(resource_of("example.org/accel", "1g.10gb+me.all"), "example.org/mig-1g.10gb.me.all");
        ck_assert_str_eq(resource_of("nvidia.com/gpu", "1g.10gb-me"), "nvidia.com/mig-1g.10gb-me");
        ck_assert_int_eq(gpu_mig_resource("nvidia.com/gpu", "1g.10gb", (char[16]){ 0 }, 12), -ENAMETOOLONG);
}
END_TEST

/* ---- NVML's layout ---- */

/* H100 80GB: GPU 0 in MIG mode with 1g.10gb x3 + 3g.40gb, GPU 1 in MIG mode without instances, GPU 2 off */
static const char layout_fixture[] =
        "gpu " BDF0 " GPU-7e22a81e-6b76-b0ca-e885-cc1f6ba67a93 mig=1 maxmig=7\n"
        "gpu " BDF1 " GPU-5264ed78-cbf9-0162-2418-d9eaadde9f39 mig=1 maxmig=7\n"
        "gpu " BDF2 " GPU-2c119aa3-e093-cdf7-cc30-8b33c4369abc maxmig=7\n"
        "mig " BDF0 " 2 0 " MIG_A " 3 40320\n"
        "mig " BDF0 " 9 0 " MIG_B " 1 9984\n"
        "mig " BDF0 " 10 0 " MIG_C " 1 9984 profile=7\n"
        "mig " BDF0 " 11 0 " MIG_D " 1 9984\n";

static gpu_nvml *open_fake(const char *more, char **ret_path) {
        _cleanup_free_ char *text = NULL;
        gpu_nvml *n = NULL;
        const char *why = NULL;

        ck_assert_int_ge(asprintf(&text, "%s%s", layout_fixture, more), 0);
        *ret_path = kdp_test_write_temp("nvml-mig", ".fixture", text, strlen(text));
        ck_assert_int_eq(setenv("KDP_FAKE_NVML", *ret_path, 1), 0);
        ck_assert_int_eq(gpu_nvml_open(KDP_FAKE_NVML_LIB, &n, &why), 0);
        return n;
}

START_TEST(test_gpu_mig_query_lists_the_layout) {
        _cleanup_(kdp_test_unlink_freep) char *path = NULL;
        _cleanup_(gpu_nvml_freep) gpu_nvml *n = open_fake("", &path);
        gpu_mig_layout l;

        ck_assert_int_eq(gpu_mig_query(n, BDF0, &l, NULL, NULL, NULL), 0);
        ck_assert(l.enabled);
        ck_assert_uint_eq(l.n, 4);
        ck_assert_str_eq(l.devices[0].uuid, MIG_A);
        ck_assert_uint_eq(l.devices[0].gi, 2);
        ck_assert_uint_eq(l.devices[0].ci, 0);
        ck_assert_str_eq(l.devices[0].profile, "3g.40gb");
        ck_assert_str_eq(l.devices[1].uuid, MIG_B);
        ck_assert_uint_eq(l.devices[1].gi, 9);
        ck_assert_str_eq(l.devices[1].profile, "1g.10gb");
        ck_assert_str_eq(l.devices[2].profile, "1g.10gb+me");
        ck_assert_str_eq(l.devices[3].uuid, MIG_D);
        ck_assert_uint_eq(l.devices[3].gi, 11);

        ck_assert_int_eq(gpu_mig_query(n, BDF1, &l, NULL, NULL, NULL), 0);
        ck_assert(l.enabled);
        ck_assert_uint_eq(l.n, 0);
        ck_assert_int_eq(gpu_mig_query(n, BDF2, &l, NULL, NULL, NULL), 0);
        ck_assert(!l.enabled);
        ck_assert_uint_eq(l.n, 0);
}
END_TEST

START_TEST(test_gpu_mig_query_of_a_gpu_without_mig_is_off) {
        _cleanup_(kdp_test_unlink_freep) char *path = NULL;
        /* maxmig=0: nvmlDeviceGetMigMode answers NOT_SUPPORTED, as on a GPU without MIG (an L40S) */
        _cleanup_(gpu_nvml_freep) gpu_nvml *n = open_fake("gpu 0000:9a:00.0 GPU-f537d6f5-8b34-75f5-822d-43e3d472ae3d\n"
                                                          "fail nvmlDeviceGetMigMode NOT_SUPPORTED " BDF2 "\n",
                                                          &path);
        gpu_mig_layout l = { .enabled = true };

        ck_assert_int_eq(gpu_mig_query(n, "0000:9a:00.0", &l, NULL, NULL, NULL), 0);
        ck_assert(!l.enabled);
        l.enabled = true;
        ck_assert_int_eq(gpu_mig_query(n, BDF2, &l, NULL, NULL, NULL), 0);
        ck_assert(!l.enabled);
}
END_TEST

/* Each MIG call failing for GPU 0: the errno, the call and the code; the other GPUs answer. */
START_TEST(test_gpu_mig_query_reports_the_failing_call) {
        static const struct {
                const char *call, *code;
                int r;
        } cases[] = {
                { "nvmlDeviceGetHandleByPciBusId_v2", "GPU_IS_LOST", -ENODEV }, { "nvmlDeviceGetMigMode", "GPU_IS_LOST", -ENODEV },
                { "nvmlDeviceGetMigMode", "NO_PERMISSION", -EACCES }, { "nvmlDeviceGetMaxMigDeviceCount", "NOT_SUPPORTED", -EOPNOTSUPP },
                { "nvmlDeviceGetMemoryInfo", "GPU_IS_LOST", -ENODEV }, { "nvmlDeviceGetMigDeviceHandleByIndex", "NO_PERMISSION", -EACCES },
                { "nvmlDeviceGetMigDeviceHandleByIndex", "UNKNOWN", -EIO }, { "nvmlDeviceGetUUID", "GPU_IS_LOST", -ENODEV },
                { "nvmlDeviceGetGpuInstanceId", "NOT_SUPPORTED", -EOPNOTSUPP },
                { "nvmlDeviceGetComputeInstanceId", "NO_PERMISSION", -EACCES },
                { "nvmlDeviceGetAttributes_v2", "NOT_SUPPORTED", -EOPNOTSUPP },
                { "nvmlDeviceGetGpuInstanceById", "NO_PERMISSION", -EACCES }, { "nvmlGpuInstanceGetInfo", "INSUFFICIENT_SIZE", -ENOBUFS },
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                _cleanup_(kdp_test_unlink_freep) char *path = NULL;
                _cleanup_free_ char *line = NULL;
                _cleanup_(gpu_nvml_freep) gpu_nvml *n = NULL;
                gpu_mig_layout l = { .n = 99 };
                const char *call = NULL, *why = "untouched";
                nvmlReturn_t code = NVML_SUCCESS;

                ck_assert_int_ge(asprintf(&line, "fail %s %s " BDF0 "\n", cases[i].call, cases[i].code), 0);
                n = open_fake(line, &path);
                ck_assert_msg(gpu_mig_query(n, BDF0, &l, &call, &code, &why) == cases[i].r, "%s %s", cases[i].call,
                              cases[i].code);
                ck_assert_str_eq(call, cases[i].call);
                ck_assert_ptr_null(why);                /* a failed call: its code says it */
                ck_assert_str_eq(gpu_nvml_strerror(n, code), cases[i].code);
                ck_assert_uint_eq(l.n, 99);             /* untouched */
                ck_assert_int_eq(gpu_mig_query(n, BDF2, &l, NULL, NULL, NULL), 0);
        }
}
END_TEST

/* Drivers R450 to R465 name a MIG device "MIG-GPU-<GPU uuid>/<gi>/<ci>": kept as NVML gives it. */
START_TEST(test_gpu_mig_query_keeps_legacy_mig_uuids) {
        _cleanup_(kdp_test_unlink_freep) char *path = NULL;
        _cleanup_(gpu_nvml_freep) gpu_nvml *n =
                open_fake("gpu 0000:9a:00.0 GPU-5c89852c-d268-c3f3-1b07-005d5ae1dc3f mig=1 maxmig=7\n"
                          "mig 0000:9a:00.0 7 0 MIG-GPU-5c89852c-d268-c3f3-1b07-005d5ae1dc3f/7/0 1 4864\n"
                          "mig 0000:9a:00.0 11 0 MIG-GPU-5c89852c-d268-c3f3-1b07-005d5ae1dc3f/11/0 1 4864\n",
                          &path);
        gpu_mig_layout l;

        ck_assert_int_eq(gpu_mig_query(n, "0000:9a:00.0", &l, NULL, NULL, NULL), 0);
        ck_assert_uint_eq(l.n, 2);
        ck_assert_str_eq(l.devices[0].uuid, "MIG-GPU-5c89852c-d268-c3f3-1b07-005d5ae1dc3f/7/0");
        ck_assert_str_eq(l.devices[1].uuid, "MIG-GPU-5c89852c-d268-c3f3-1b07-005d5ae1dc3f/11/0");
        ck_assert_uint_eq(strlen(l.devices[1].uuid), 49);
        ck_assert_uint_eq(l.devices[1].gi, 11);
        ck_assert_str_eq(l.devices[1].profile, "1g.10gb");
}
END_TEST

/* NVML answered SUCCESS with what cannot be served: -EBADMSG, the call, and what is wrong (not "UNKNOWN"). */
START_TEST(test_gpu_mig_query_says_what_is_wrong_with_an_answer) {
        static const struct {
                const char *mig, *call, *why;
        } cases[] = {
                { "mig 0000:9a:00.0 7 0 GPU-5c89852c-d268-c3f3-1b07-005d5ae1dc3f 1 4864\n", "nvmlDeviceGetUUID",
                  "its answer is no MIG UUID" },
                { "mig 0000:9a:00.0 7 0 MIG-5c89852c,d268 1 4864\n", "nvmlDeviceGetUUID", "its answer is no MIG UUID" },
                { "mig 0000:9a:00.0 7 0 MIG-5c89852c-d268-c3f3-1b07-005d5ae1dc3f 0 4864\n", "nvmlDeviceGetAttributes_v2",
                  "its slices and memory make no MIG profile" },
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                _cleanup_(kdp_test_unlink_freep) char *path = NULL;
                _cleanup_free_ char *more = NULL;
                _cleanup_(gpu_nvml_freep) gpu_nvml *n = NULL;
                gpu_mig_layout l = { .n = 99 };
                const char *call = NULL, *why = NULL;
                nvmlReturn_t code = NVML_SUCCESS;

                ck_assert_int_ge(asprintf(&more, "gpu 0000:9a:00.0 GPU-5c89852c-d268-c3f3-1b07-005d5ae1dc3f mig=1 "
                                                 "maxmig=7\n%s", cases[i].mig), 0);
                n = open_fake(more, &path);
                ck_assert_int_eq(gpu_mig_query(n, "0000:9a:00.0", &l, &call, &code, &why), -EBADMSG);
                ck_assert_str_eq(call, cases[i].call);
                ck_assert_str_eq(why, cases[i].why);
                ck_assert_int_eq(code, NVML_ERROR_UNKNOWN);
                ck_assert_uint_eq(l.n, 99);
        }
}
END_TEST

/* The fake reads its file again when it changed: instances created and destroyed while NVML runs. */
START_TEST(test_gpu_mig_query_follows_a_changed_layout) {
        _cleanup_(kdp_test_unlink_freep) char *path = NULL;
        _cleanup_(gpu_nvml_freep) gpu_nvml *n = open_fake("", &path);
        static const char changed[] =
                "gpu " BDF0 " GPU-7e22a81e-6b76-b0ca-e885-cc1f6ba67a93 mig=1 maxmig=7\n"
                "gpu " BDF1 " GPU-5264ed78-cbf9-0162-2418-d9eaadde9f39 mig=1 maxmig=7\n"
                "gpu " BDF2 " GPU-2c119aa3-e093-cdf7-cc30-8b33c4369abc maxmig=7\n"
                "mig " BDF1 " 1 0 " MIG_A " 7 80896\n";
        _cleanup_fclose_ FILE *f = NULL;
        gpu_mig_layout l;
        unsigned count = 0;

        ck_assert_int_eq(gpu_mig_query(n, BDF0, &l, NULL, NULL, NULL), 0);
        ck_assert_uint_eq(l.n, 4);
        f = fopen(path, "we");
        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(fputs(changed, f) >= 0, 1);
        ck_assert_int_eq(fclose(KDP_TAKE_PTR(f)), 0);
        ck_assert_int_eq(n->nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
        ck_assert_uint_eq(count, 3);
        ck_assert_int_eq(gpu_mig_query(n, BDF0, &l, NULL, NULL, NULL), 0);
        ck_assert(l.enabled);
        ck_assert_uint_eq(l.n, 0);
        ck_assert_int_eq(gpu_mig_query(n, BDF1, &l, NULL, NULL, NULL), 0);
        ck_assert_uint_eq(l.n, 1);
        ck_assert_str_eq(l.devices[0].profile, "7g.80gb");
}
END_TEST

static Suite *gpu_mig_suite(void) {
        Suite *s = suite_create("gpu-mig");
        TCase *tc;

        tc = tcase_create("parse");
        tcase_add_test(tc, test_gpu_mig_parse_access_reads_the_minor);
        tcase_add_test(tc, test_gpu_mig_parse_access_refuses_odd_content);
        tcase_add_test(tc, test_gpu_mig_profile_names_follow_nvidia);
        tcase_add_test(tc, test_gpu_mig_resource_names_are_valid_resource_names);
        suite_add_tcase(s, tc);

        tc = tcase_create("nvml");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_gpu_mig_query_lists_the_layout);
        tcase_add_test(tc, test_gpu_mig_query_of_a_gpu_without_mig_is_off);
        tcase_add_test(tc, test_gpu_mig_query_reports_the_failing_call);
        tcase_add_test(tc, test_gpu_mig_query_keeps_legacy_mig_uuids);
        tcase_add_test(tc, test_gpu_mig_query_says_what_is_wrong_with_an_answer);
        tcase_add_test(tc, test_gpu_mig_query_follows_a_changed_layout);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return kdp_test_run(gpu_mig_suite());
}
