/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The NVML loader and its Xid event worker (plugins/gpu/nvml.c) against the fake library
 * (tests/nvml/fake-nvml.c, KDP_FAKE_NVML_LIB) and its fixture files.
 */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kdp/cleanup.h>

#include "nvml.h"

#include "kdp-test.h"

#define BDF0 "0000:18:00.0"
#define BDF1 "0000:3a:00.0"
#define UUID0 "GPU-7e22a81e-6b76-b0ca-e885-cc1f6ba67a93"
#define UUID1 "GPU-2c119aa3-e093-cdf7-cc30-8b33c4369abc"

static const char base_fixture[] =
        "# two H100s; the first in MIG mode with two MIG devices and two NVLinks\n"
        "gpu " BDF0 " " UUID0 " mig=1 pending=0 maxmig=7\n"
        "gpu " BDF1 " " UUID1 " maxmig=7\n"
        "mig " BDF0 " 1 0 MIG-11111111-2222-3333-4444-555555555555 3 40192\n"
        "mig " BDF0 " 5 0 MIG-66666666-7777-8888-9999-000000000000 1 9984\n"
        "nvlink " BDF0 " 0 up 0000:c4:00.0\n"
        "nvlink " BDF0 " 1 down 0000:c5:00.0\n";

/* Writes base_fixture + `more` to a temp file and points $KDP_FAKE_NVML at it; returns the path. */
static char *use_fixture(const char *more) {
        _cleanup_free_ char *text = NULL;
        char *path;

        ck_assert_int_ge(asprintf(&text, "%s%s", base_fixture, more), 0);
        path = kdp_test_write_temp("nvml", ".fixture", text, strlen(text));
        ck_assert_int_eq(setenv("KDP_FAKE_NVML", path, 1), 0);
        return path;
}

/* ---- loading ---- */

START_TEST(test_gpu_nvml_open_reports_a_missing_library) {
        gpu_nvml *n = (gpu_nvml *) 0x1;
        const char *why = NULL;

        ck_assert_int_eq(gpu_nvml_open("/nonexistent/libnvidia-ml.so.1", &n, &why), -ENOENT);
        ck_assert_ptr_eq(n, (gpu_nvml *) 0x1);  /* untouched */
        ck_assert_ptr_nonnull(why);
        ck_assert_ptr_nonnull(strstr(why, "/nonexistent/libnvidia-ml.so.1"));
}
END_TEST

START_TEST(test_gpu_nvml_open_names_the_first_missing_function) {
        _cleanup_free_ char *lib = NULL;
        gpu_nvml *n = NULL;
        const char *why = NULL;

        /* a loadable library without NVML's functions: one of the test backends */
        ck_assert_int_ge(asprintf(&lib, "%s/kdp-backend-noentry.so", KDP_TEST_BACKEND_DIR), 0);
        ck_assert_int_eq(gpu_nvml_open(lib, &n, &why), -ENOSYS);
        ck_assert_ptr_null(n);
        ck_assert_str_eq(why, "nvmlInit_v2");
}
END_TEST

START_TEST(test_gpu_nvml_open_fails_without_the_driver) {
        gpu_nvml *n = NULL;
        const char *why = NULL;

        ck_assert_int_eq(unsetenv("KDP_FAKE_NVML"), 0);         /* the fake's "no driver loaded" */
        ck_assert_int_eq(gpu_nvml_open(KDP_FAKE_NVML_LIB, &n, &why), -ENXIO);
        ck_assert_ptr_null(n);
        ck_assert_str_eq(why, "DRIVER_NOT_LOADED");
}
END_TEST

/* Every code nvmlInit_v2 can give, as the errno gpu_nvml_open returns and the text it names. */
START_TEST(test_gpu_nvml_open_maps_every_init_error) {
        static const struct {
                const char *code;
                int r;
        } cases[] = {
                { "UNINITIALIZED", -ENXIO },          { "INVALID_ARGUMENT", -EINVAL },
                { "NOT_SUPPORTED", -EOPNOTSUPP },     { "NO_PERMISSION", -EACCES },
                { "ALREADY_INITIALIZED", -EIO },      { "NOT_FOUND", -ENOENT },
                { "INSUFFICIENT_SIZE", -ENOBUFS },    { "INSUFFICIENT_POWER", -EIO },
                { "DRIVER_NOT_LOADED", -ENXIO },      { "TIMEOUT", -ETIMEDOUT },
                { "IRQ_ISSUE", -EIO },                { "LIBRARY_NOT_FOUND", -EIO },
                { "FUNCTION_NOT_FOUND", -EIO },       { "CORRUPTED_INFOROM", -EIO },
                { "GPU_IS_LOST", -ENODEV },           { "RESET_REQUIRED", -EAGAIN },
                { "OPERATING_SYSTEM", -EIO },         { "LIB_RM_VERSION_MISMATCH", -EPROTO },
                { "IN_USE", -EBUSY },                 { "MEMORY", -ENOMEM },
                { "NO_DATA", -EIO },                  { "VGPU_ECC_NOT_ENABLED", -EIO },
                { "INSUFFICIENT_RESOURCES", -EIO },   { "FREQ_NOT_SUPPORTED", -EIO },
                { "ARGUMENT_VERSION_MISMATCH", -EIO }, { "DEPRECATED", -EIO },
                { "NOT_READY", -EAGAIN },             { "GPU_NOT_FOUND", -ENOENT },
                { "INVALID_STATE", -EIO },            { "UNKNOWN", -EIO },
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                _cleanup_(kdp_test_unlink_freep) char *path = NULL;
                _cleanup_free_ char *line = NULL;
                gpu_nvml *n = NULL;
                const char *why = NULL;
                int r;

                ck_assert_int_ge(asprintf(&line, "fail nvmlInit_v2 %s\n", cases[i].code), 0);
                path = use_fixture(line);
                r = gpu_nvml_open(KDP_FAKE_NVML_LIB, &n, &why);
                ck_assert_msg(r == cases[i].r, "%s: %d, expected %d", cases[i].code, r, cases[i].r);
                ck_assert_ptr_null(n);
                ck_assert_str_eq(why, cases[i].code);
        }
}
END_TEST

START_TEST(test_gpu_nvml_errno_maps_success_and_unlisted_codes) {
        ck_assert_int_eq(gpu_nvml_errno(NVML_SUCCESS), 0);
        ck_assert_int_eq(gpu_nvml_errno((nvmlReturn_t) 12345), -EIO);
        ck_assert_str_eq(gpu_nvml_strerror(NULL, NVML_ERROR_GPU_IS_LOST), "unknown NVML error");
}
END_TEST

/* A fixture the fake cannot read makes nvmlInit_v2 fail, and the loader says so. */
START_TEST(test_gpu_nvml_open_fails_on_a_malformed_fixture) {
        _cleanup_(kdp_test_unlink_freep) char *path = use_fixture("gpu\n");
        gpu_nvml *n = NULL;
        const char *why = NULL;

        ck_assert_int_eq(gpu_nvml_open(KDP_FAKE_NVML_LIB, &n, &why), -EIO);
        ck_assert_str_eq(why, "UNKNOWN");
}
END_TEST

START_TEST(test_gpu_nvml_bdf_normalises_the_bus_id) {
        nvmlPciInfo_t pci = { .busId = "00000000:3A:00.0" };
        char bdf[KDP_PCI_ADDRESS_MAX] = "";

        ck_assert_int_eq(gpu_nvml_bdf(&pci, bdf), 0);
        ck_assert_str_eq(bdf, BDF1);
        snprintf(pci.busId, sizeof(pci.busId), "00010000:C4:1F.7");
        ck_assert_int_eq(gpu_nvml_bdf(&pci, bdf), 0);
        ck_assert_str_eq(bdf, "10000:c4:1f.7");
        snprintf(pci.busId, sizeof(pci.busId), "0000:18:00");
        ck_assert_int_eq(gpu_nvml_bdf(&pci, bdf), -EINVAL);
        snprintf(pci.busId, sizeof(pci.busId), "0000:18:20.0");
        ck_assert_int_eq(gpu_nvml_bdf(&pci, bdf), -EINVAL);
        snprintf(pci.busId, sizeof(pci.busId), "0000:18:00.0x");
        ck_assert_int_eq(gpu_nvml_bdf(&pci, bdf), -EINVAL);
        ck_assert_str_eq(bdf, "10000:c4:1f.7");        /* untouched on error */
}
END_TEST

/* ---- the calls, through the resolved pointers ---- */

START_TEST(test_gpu_nvml_answers_gpus_mig_and_nvlinks) {
        _cleanup_(kdp_test_unlink_freep) char *path = use_fixture("");
        _cleanup_(gpu_nvml_freep) gpu_nvml *n = NULL;
        char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE], bdf[KDP_PCI_ADDRESS_MAX];
        unsigned count = 0, cur = 9, pending = 9, id = 0;
        nvmlDevice_t d0, d1, by_bus, m0, m1, none;
        nvmlDeviceAttributes_t attr;
        nvmlEnableState_t state;
        nvmlPciInfo_t pci;

        ck_assert_int_eq(gpu_nvml_open(KDP_FAKE_NVML_LIB, &n, NULL), 0);
        ck_assert_int_eq(n->nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
        ck_assert_uint_eq(count, 2);
        ck_assert_int_eq(n->nvmlDeviceGetHandleByIndex_v2(0, &d0), NVML_SUCCESS);
        ck_assert_int_eq(n->nvmlDeviceGetHandleByIndex_v2(1, &d1), NVML_SUCCESS);
        ck_assert_int_eq(n->nvmlDeviceGetHandleByIndex_v2(2, &none), NVML_ERROR_INVALID_ARGUMENT);
        ck_assert_int_eq(n->nvmlDeviceGetHandleByPciBusId_v2("00000000:3A:00.0", &by_bus), NVML_SUCCESS);
        ck_assert_ptr_eq(by_bus, d1);
        ck_assert_int_eq(n->nvmlDeviceGetHandleByPciBusId_v2("0000:99:00.0", &none), NVML_ERROR_NOT_FOUND);

        ck_assert_int_eq(n->nvmlDeviceGetUUID(d1, uuid, sizeof(uuid)), NVML_SUCCESS);
        ck_assert_str_eq(uuid, UUID1);
        ck_assert_int_eq(n->nvmlDeviceGetUUID(d1, uuid, 10), NVML_ERROR_INSUFFICIENT_SIZE);
        ck_assert_int_eq(n->nvmlDeviceGetPciInfo_v3(d0, &pci), NVML_SUCCESS);
        ck_assert_str_eq(pci.busId, "00000000:18:00.0");
        ck_assert_uint_eq(pci.pciDeviceId, 0x233010de);
        ck_assert_int_eq(gpu_nvml_bdf(&pci, bdf), 0);
        ck_assert_str_eq(bdf, BDF0);

        ck_assert_int_eq(n->nvmlDeviceGetMigMode(d0, &cur, &pending), NVML_SUCCESS);
        ck_assert_uint_eq(cur, NVML_DEVICE_MIG_ENABLE);
        ck_assert_uint_eq(pending, 0);
        ck_assert_int_eq(n->nvmlDeviceGetMigMode(d1, &cur, &pending), NVML_SUCCESS);
        ck_assert_uint_eq(cur, 0);
        ck_assert_int_eq(n->nvmlDeviceGetMaxMigDeviceCount(d0, &count), NVML_SUCCESS);
        ck_assert_uint_eq(count, 7);
        ck_assert_int_eq(n->nvmlDeviceGetMigDeviceHandleByIndex(d0, 0, &m0), NVML_SUCCESS);
        ck_assert_int_eq(n->nvmlDeviceGetMigDeviceHandleByIndex(d0, 1, &m1), NVML_SUCCESS);
        ck_assert_int_eq(n->nvmlDeviceGetMigDeviceHandleByIndex(d0, 2, &none), NVML_ERROR_NOT_FOUND);
        ck_assert_int_eq(n->nvmlDeviceGetMigDeviceHandleByIndex(d1, 0, &none), NVML_ERROR_NOT_SUPPORTED);
        ck_assert_int_eq(n->nvmlDeviceGetGpuInstanceId(m1, &id), NVML_SUCCESS);
        ck_assert_uint_eq(id, 5);
        ck_assert_int_eq(n->nvmlDeviceGetComputeInstanceId(m1, &id), NVML_SUCCESS);
        ck_assert_uint_eq(id, 0);
        ck_assert_int_eq(n->nvmlDeviceGetGpuInstanceId(d0, &id), NVML_ERROR_NOT_SUPPORTED);
        ck_assert_int_eq(n->nvmlDeviceGetUUID(m0, uuid, sizeof(uuid)), NVML_SUCCESS);
        ck_assert_str_eq(uuid, "MIG-11111111-2222-3333-4444-555555555555");
        ck_assert_int_eq(n->nvmlDeviceGetAttributes_v2(m0, &attr), NVML_SUCCESS);
        ck_assert_uint_eq(attr.gpuInstanceSliceCount, 3);
        ck_assert_uint_eq(attr.memorySizeMB, 40192);
        ck_assert_int_eq(n->nvmlDeviceGetAttributes_v2(d0, &attr), NVML_ERROR_NOT_SUPPORTED);

        ck_assert_int_eq(n->nvmlDeviceGetNvLinkState(d0, 0, &state), NVML_SUCCESS);
        ck_assert_int_eq(state, NVML_FEATURE_ENABLED);
        ck_assert_int_eq(n->nvmlDeviceGetNvLinkState(d0, 1, &state), NVML_SUCCESS);
        ck_assert_int_eq(state, NVML_FEATURE_DISABLED);
        ck_assert_int_eq(n->nvmlDeviceGetNvLinkState(d0, 2, &state), NVML_ERROR_NOT_SUPPORTED);
        ck_assert_int_eq(n->nvmlDeviceGetNvLinkState(d0, NVML_NVLINK_MAX_LINKS, &state), NVML_ERROR_INVALID_ARGUMENT);
        ck_assert_int_eq(n->nvmlDeviceGetNvLinkRemotePciInfo_v2(d0, 0, &pci), NVML_SUCCESS);
        ck_assert_str_eq(pci.busId, "00000000:C4:00.0");
        ck_assert_str_eq(gpu_nvml_strerror(n, NVML_ERROR_GPU_IS_LOST), "GPU_IS_LOST");
}
END_TEST

/* A fail line hits its function, on its GPU only; the others answer. */
START_TEST(test_gpu_nvml_fixture_fails_one_call_of_one_gpu) {
        _cleanup_(kdp_test_unlink_freep) char *path =
                use_fixture("fail nvmlDeviceGetUUID GPU_IS_LOST " BDF0 "\n"
                            "fail nvmlDeviceGetNvLinkState NO_PERMISSION\n"
                            "fail nvmlDeviceGetMigMode 3\n");
        _cleanup_(gpu_nvml_freep) gpu_nvml *n = NULL;
        char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
        unsigned cur, pending;
        nvmlEnableState_t state;
        nvmlDevice_t d0, d1;

        ck_assert_int_eq(gpu_nvml_open(KDP_FAKE_NVML_LIB, &n, NULL), 0);
        ck_assert_int_eq(n->nvmlDeviceGetHandleByIndex_v2(0, &d0), NVML_SUCCESS);
        ck_assert_int_eq(n->nvmlDeviceGetHandleByIndex_v2(1, &d1), NVML_SUCCESS);
        ck_assert_int_eq(n->nvmlDeviceGetUUID(d0, uuid, sizeof(uuid)), NVML_ERROR_GPU_IS_LOST);
        ck_assert_int_eq(gpu_nvml_errno(NVML_ERROR_GPU_IS_LOST), -ENODEV);
        ck_assert_int_eq(n->nvmlDeviceGetUUID(d1, uuid, sizeof(uuid)), NVML_SUCCESS);
        ck_assert_int_eq(n->nvmlDeviceGetNvLinkState(d1, 0, &state), NVML_ERROR_NO_PERMISSION);
        ck_assert_int_eq(n->nvmlDeviceGetMigMode(d0, &cur, &pending), NVML_ERROR_NOT_SUPPORTED);
}
END_TEST

/* Before nvmlInit_v2 (and after the last nvmlShutdown) every call gives UNINITIALIZED. */
START_TEST(test_gpu_nvml_calls_before_init_are_uninitialized) {
        _cleanup_(kdp_test_unlink_freep) char *path = use_fixture("");
        gpu_nvml *n = NULL;
        unsigned count;
        nvmlReturn_t (*get_count)(unsigned *);
        void *dl = dlopen(KDP_FAKE_NVML_LIB, RTLD_NOW | RTLD_LOCAL);

        ck_assert_ptr_nonnull(dl);
        get_count = (nvmlReturn_t(*)(unsigned *)) dlsym(dl, "nvmlDeviceGetCount_v2");
        ck_assert_ptr_nonnull(get_count);
        ck_assert_int_eq(get_count(&count), NVML_ERROR_UNINITIALIZED);
        ck_assert_int_eq(gpu_nvml_errno(NVML_ERROR_UNINITIALIZED), -ENXIO);
        ck_assert_int_eq(gpu_nvml_open(KDP_FAKE_NVML_LIB, &n, NULL), 0);
        ck_assert_int_eq(get_count(&count), NVML_SUCCESS);
        ck_assert_uint_eq(count, 2);
        n = gpu_nvml_free(n);                   /* nvmlShutdown */
        ck_assert_int_eq(get_count(&count), NVML_ERROR_UNINITIALIZED);
        ck_assert_int_eq(dlclose(dl), 0);
}
END_TEST

/* ---- Xid events ---- */

typedef struct seen {
        gpu_xid x[8];
        size_t n;
} seen;

static void collect(void *userdata, const gpu_xid *x, bool replay) {
        seen *s = userdata;

        ck_assert(!replay);
        ck_assert_uint_lt(s->n, 8);
        s->x[s->n++] = *x;
}

/* Waits (generously) until the worker has queued `want` Xids, or a wait error; drains them into *s. */
static nvmlReturn_t wait_events(gpu_nvml_events *e, seen *s, size_t want) {
        nvmlReturn_t err = NVML_SUCCESS;

        for (int i = 0; i < 600 && s->n < want && err == NVML_SUCCESS; i++) {
                struct pollfd p = { .fd = gpu_nvml_events_fd(e), .events = POLLIN };

                if (poll(&p, 1, 100) > 0)
                        ck_assert_int_ge(gpu_nvml_events_drain(e, collect, s, &err), 0);
        }
        return err;
}

START_TEST(test_gpu_nvml_events_deliver_scripted_xids) {
        _cleanup_(kdp_test_unlink_freep) char *path =
                use_fixture("event " BDF1 " 79\n"
                            "event " BDF0 " 94 5 0\n");
        _cleanup_(gpu_nvml_freep) gpu_nvml *n = NULL;
        _cleanup_(gpu_nvml_events_freep) gpu_nvml_events *e = NULL;
        unsigned skipped = 9;
        seen s = { 0 };

        ck_assert_int_eq(gpu_nvml_open(KDP_FAKE_NVML_LIB, &n, NULL), 0);
        ck_assert_int_eq(gpu_nvml_events_start(n, 50, &e, &skipped), 0);
        ck_assert_uint_eq(skipped, 0);
        ck_assert_uint_eq(gpu_nvml_events_n_gpus(e), 2);
        ck_assert_int_eq(wait_events(e, &s, 2), NVML_SUCCESS);
        ck_assert_uint_eq(s.n, 2);
        ck_assert_str_eq(s.x[0].bdf, BDF1);
        ck_assert_uint_eq(s.x[0].code, 79);
        ck_assert_int_eq(s.x[0].gpu_instance, -1);
        ck_assert_int_eq(s.x[0].compute_instance, -1);
        ck_assert_uint_eq(s.x[0].seq, 1);
        ck_assert_str_eq(s.x[1].bdf, BDF0);
        ck_assert_uint_eq(s.x[1].code, 94);
        ck_assert_int_eq(s.x[1].gpu_instance, 5);
        ck_assert_int_eq(s.x[1].compute_instance, 0);
        ck_assert_uint_eq(s.x[1].seq, 2);
        e = gpu_nvml_events_free(e);            /* stops the worker before NVML goes */
}
END_TEST

/* A GPU that cannot be registered is skipped and counted; none registered is an error. */
START_TEST(test_gpu_nvml_events_skip_gpus_that_cannot_register) {
        _cleanup_(gpu_nvml_freep) gpu_nvml *n = NULL;
        _cleanup_(gpu_nvml_events_freep) gpu_nvml_events *e = NULL;
        unsigned skipped = 0;
        seen s = { 0 };

        {
                _cleanup_(kdp_test_unlink_freep) char *path =
                        use_fixture("fail nvmlDeviceRegisterEvents NOT_SUPPORTED " BDF0 "\n"
                                    "event " BDF0 " 48\n"
                                    "event " BDF1 " 48\n");

                ck_assert_int_eq(gpu_nvml_open(KDP_FAKE_NVML_LIB, &n, NULL), 0);
        }
        ck_assert_int_eq(gpu_nvml_events_start(n, 50, &e, &skipped), 0);
        ck_assert_uint_eq(skipped, 1);
        ck_assert_uint_eq(gpu_nvml_events_n_gpus(e), 1);
        ck_assert_int_eq(wait_events(e, &s, 1), NVML_SUCCESS);
        ck_assert_uint_eq(s.n, 1);
        ck_assert_str_eq(s.x[0].bdf, BDF1);     /* the unregistered GPU's event never comes */
        e = gpu_nvml_events_free(e);
        n = gpu_nvml_free(n);

        {
                _cleanup_(kdp_test_unlink_freep) char *path = use_fixture("fail nvmlDeviceRegisterEvents GPU_IS_LOST\n");

                ck_assert_int_eq(gpu_nvml_open(KDP_FAKE_NVML_LIB, &n, NULL), 0);
        }
        ck_assert_int_eq(gpu_nvml_events_start(n, 50, &e, &skipped), -ENODEV);
        ck_assert_ptr_null(e);
        n = gpu_nvml_free(n);

        {
                _cleanup_(kdp_test_unlink_freep) char *path = use_fixture("fail nvmlEventSetCreate NO_PERMISSION\n");

                ck_assert_int_eq(gpu_nvml_open(KDP_FAKE_NVML_LIB, &n, NULL), 0);
        }
        ck_assert_int_eq(gpu_nvml_events_start(n, 50, &e, &skipped), -EACCES);
        n = gpu_nvml_free(n);

        {
                _cleanup_(kdp_test_unlink_freep) char *path = use_fixture("fail nvmlDeviceGetCount_v2 UNINITIALIZED\n");

                ck_assert_int_eq(gpu_nvml_open(KDP_FAKE_NVML_LIB, &n, NULL), 0);
        }
        ck_assert_int_eq(gpu_nvml_events_start(n, 50, &e, &skipped), -ENXIO);
}
END_TEST

/* Events and failures written to the fixture's FIFO while the worker waits; a failed wait is reported. */
START_TEST(test_gpu_nvml_events_read_the_fifo_and_report_wait_errors) {
        char fifo[] = "/tmp/kdp-test-nvml-fifo-XXXXXX";
        _cleanup_free_ char *line = NULL;
        _cleanup_(gpu_nvml_freep) gpu_nvml *n = NULL;
        _cleanup_(gpu_nvml_events_freep) gpu_nvml_events *e = NULL;
        _cleanup_close_ int w = -1;
        unsigned skipped;
        seen s = { 0 };
        const char *script;

        ck_assert_ptr_nonnull(mkdtemp(fifo));
        ck_assert_int_ge(asprintf(&line, "events %s/events\n", fifo), 0);
        {
                _cleanup_free_ char *p = NULL;
                _cleanup_(kdp_test_unlink_freep) char *path = NULL;

                ck_assert_int_ge(asprintf(&p, "%s/events", fifo), 0);
                ck_assert_int_eq(mkfifo(p, 0600), 0);
                path = use_fixture(line);
                ck_assert_int_eq(gpu_nvml_open(KDP_FAKE_NVML_LIB, &n, NULL), 0);
                w = open(p, O_WRONLY | O_CLOEXEC);
                ck_assert_int_ge(w, 0);
                ck_assert_int_eq(unlink(p), 0);
                ck_assert_int_eq(rmdir(fifo), 0);
        }
        ck_assert_int_eq(gpu_nvml_events_start(n, 50, &e, &skipped), 0);

        script = "event " BDF0 " 63\n";
        ck_assert_int_eq(write(w, script, strlen(script)), (ssize_t) strlen(script));
        ck_assert_int_eq(wait_events(e, &s, 1), NVML_SUCCESS);
        ck_assert_uint_eq(s.n, 1);
        ck_assert_str_eq(s.x[0].bdf, BDF0);
        ck_assert_uint_eq(s.x[0].code, 63);

        script = "fail nvmlEventSetWait_v2 GPU_IS_LOST\n";
        ck_assert_int_eq(write(w, script, strlen(script)), (ssize_t) strlen(script));
        ck_assert_int_eq(wait_events(e, &s, 2), NVML_ERROR_GPU_IS_LOST);
        ck_assert_uint_eq(s.n, 1);

        script = "clear nvmlEventSetWait_v2\nevent " BDF1 " 74\n";
        ck_assert_int_eq(write(w, script, strlen(script)), (ssize_t) strlen(script));
        ck_assert_int_eq(wait_events(e, &s, 2), NVML_SUCCESS);
        ck_assert_uint_eq(s.n, 2);
        ck_assert_str_eq(s.x[1].bdf, BDF1);
        ck_assert_uint_eq(s.x[1].code, 74);
        e = gpu_nvml_events_free(e);
}
END_TEST

static Suite *gpu_nvml_suite(void) {
        Suite *s = suite_create("gpu-nvml");
        TCase *tc;

        tc = tcase_create("loader");
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, test_gpu_nvml_open_reports_a_missing_library);
        tcase_add_test(tc, test_gpu_nvml_open_names_the_first_missing_function);
        tcase_add_test(tc, test_gpu_nvml_open_fails_without_the_driver);
        tcase_add_test(tc, test_gpu_nvml_open_maps_every_init_error);
        tcase_add_test(tc, test_gpu_nvml_errno_maps_success_and_unlisted_codes);
        tcase_add_test(tc, test_gpu_nvml_open_fails_on_a_malformed_fixture);
        tcase_add_test(tc, test_gpu_nvml_bdf_normalises_the_bus_id);
        tcase_add_test(tc, test_gpu_nvml_answers_gpus_mig_and_nvlinks);
        tcase_add_test(tc, test_gpu_nvml_fixture_fails_one_call_of_one_gpu);
        tcase_add_test(tc, test_gpu_nvml_calls_before_init_are_uninitialized);
        suite_add_tcase(s, tc);

        tc = tcase_create("events");
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, test_gpu_nvml_events_deliver_scripted_xids);
        tcase_add_test(tc, test_gpu_nvml_events_skip_gpus_that_cannot_register);
        tcase_add_test(tc, test_gpu_nvml_events_read_the_fifo_and_report_wait_errors);
        suite_add_tcase(s, tc);

        return s;
}

int main(void) {
        return kdp_test_run(gpu_nvml_suite());
}
