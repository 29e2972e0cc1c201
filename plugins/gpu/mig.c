/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * MIG devices (mig.h): NVML's view of a GPU's MIG layout, NVIDIA's profile
 * names, and the capability files of /proc/driver/nvidia/capabilities
 * (docs/hardware-gpu.md §3.3) that give the minors of a MIG device's
 * /dev/nvidia-caps/nvidia-cap<N> nodes. Never computed: the minors are read
 * from the files the driver writes while an instance exists.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdp/cleanup.h>

#include "mig.h"

/* ---- NVML ---- */

typedef struct mig_call {
        const char *name;
        nvmlReturn_t code;
        const char *why;                /* NVML answered SUCCESS, but not with what we can serve */
} mig_call;

/* An answer of `name` that NVML gave as SUCCESS but that we cannot serve: `why` says what is wrong. */
static bool bad_answer(mig_call *c, const char *name, const char *why) {
        *c = (mig_call){ name, NVML_ERROR_UNKNOWN, why };
        return false;
}

/* Keeps the first failure; true while none. */
static bool ok(mig_call *c, const char *name, nvmlReturn_t r) {
        if (r == NVML_SUCCESS)
                return true;
        c->name = name;
        c->code = r;
        return false;
}

/* The slices and the name suffix of a GPU instance profile; 0 slices for an ID we do not know. */
static unsigned profile_slices(unsigned id, const char **ret_suffix) {
        static const struct {
                unsigned id, slices;
                const char *suffix;
        } table[] = {
                { NVML_GPU_INSTANCE_PROFILE_1_SLICE, 1, "" },
                { NVML_GPU_INSTANCE_PROFILE_2_SLICE, 2, "" },
                { NVML_GPU_INSTANCE_PROFILE_3_SLICE, 3, "" },
                { NVML_GPU_INSTANCE_PROFILE_4_SLICE, 4, "" },
                { NVML_GPU_INSTANCE_PROFILE_7_SLICE, 7, "" },
                { NVML_GPU_INSTANCE_PROFILE_8_SLICE, 8, "" },
                { NVML_GPU_INSTANCE_PROFILE_6_SLICE, 6, "" },
                { NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 1, "+me" },
                { NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1, 2, "+me" },
                { NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, 1, "" },
                { NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX, 1, "+gfx" },
                { NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX, 2, "+gfx" },
                { NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX, 4, "+gfx" },
                { NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME, 1, "-me" },
                { NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME, 2, "-me" },
                { NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME, 1, "+me.all" },
                { NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME, 2, "+me.all" },
        };

        for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
                if (table[i].id == id) {
                        *ret_suffix = table[i].suffix;
                        return table[i].slices;
                }
        *ret_suffix = "";
        return 0;
}

int gpu_mig_profile_name(unsigned gi_profile, unsigned gi_slices, unsigned ci_slices, unsigned long long mig_mib,
                         unsigned long long total_bytes, char *ret, size_t size) {
        const char *suffix;
        unsigned g = profile_slices(gi_profile, &suffix);
        unsigned long long eighths, total_gib, gb;
        int n;

        if (g == 0)
                g = gi_slices;
        if (g == 0 || ci_slices == 0 || mig_mib == 0 || total_bytes == 0 || mig_mib > (total_bytes >> 20))
                return -EINVAL;
        /* the share of the GPU, up to the next eighth; the GPU's GiB rounded up; the product to the nearest */
        eighths = ((mig_mib << 20) * 8 + total_bytes - 1) / total_bytes;
        total_gib = (total_bytes + (1ULL << 30) - 1) >> 30;
        gb = (eighths * total_gib + 4) / 8;
        if (ci_slices == g)
                n = snprintf(ret, size, "%ug.%llugb%s", g, gb, suffix);
        else
                n = snprintf(ret, size, "%uc.%ug.%llugb%s", ci_slices, g, gb, suffix);
        return n < 0 || (size_t) n >= size ? -ENAMETOOLONG : 0;
}

int gpu_mig_resource(const char *nvidia_resource, const char *profile, char *ret, size_t size) {
        const char *slash = strchr(nvidia_resource, '/');
        int len = slash ? (int) (slash - nvidia_resource) : (int) strlen(nvidia_resource);
        int n = snprintf(ret, size, "%.*s/mig-%s", len, nvidia_resource, profile);

        if (n < 0 || (size_t) n >= size)
                return -ENAMETOOLONG;
        for (char *p = ret + len; *p; p++)
                if (*p == '+')
                        *p = '.';
        return 0;
}

/* One MIG device of `gpu` (handle `m`) into *ret; false (and *c) when a call fails. */
static bool query_device(const gpu_nvml *n, nvmlDevice_t gpu, nvmlDevice_t m, unsigned long long total_bytes,
                         gpu_mig_device *ret, mig_call *c) {
        nvmlDeviceAttributes_t attrs = { 0 };
        nvmlGpuInstanceInfo_t info = { 0 };
        nvmlGpuInstance_t gi = NULL;
        char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = "";

        if (!ok(c, "nvmlDeviceGetUUID", n->nvmlDeviceGetUUID(m, uuid, sizeof(uuid))) ||
            !ok(c, "nvmlDeviceGetGpuInstanceId", n->nvmlDeviceGetGpuInstanceId(m, &ret->gi)) ||
            !ok(c, "nvmlDeviceGetComputeInstanceId", n->nvmlDeviceGetComputeInstanceId(m, &ret->ci)) ||
            !ok(c, "nvmlDeviceGetAttributes_v2", n->nvmlDeviceGetAttributes_v2(m, &attrs)) ||
            !ok(c, "nvmlDeviceGetGpuInstanceById", n->nvmlDeviceGetGpuInstanceById(gpu, ret->gi, &gi)) ||
            !ok(c, "nvmlGpuInstanceGetInfo", n->nvmlGpuInstanceGetInfo(gi, &info)))
                return false;
        /* the UUID as NVML gives it, either form ("MIG-<uuid>", "MIG-GPU-<uuid>/<gi>/<ci>"), when it is one */
        if (!memchr(uuid, '\0', sizeof(uuid)))
                return bad_answer(c, "nvmlDeviceGetUUID", "its MIG UUID is not terminated");
        if (strncmp(uuid, "MIG-", 4) != 0 || uuid[strcspn(uuid, " \t\n,;=")] != '\0')
                return bad_answer(c, "nvmlDeviceGetUUID", "its answer is no MIG UUID");
        if (gpu_mig_profile_name(info.profileId, attrs.gpuInstanceSliceCount, attrs.computeInstanceSliceCount,
                                 attrs.memorySizeMB, total_bytes, ret->profile, sizeof(ret->profile)) < 0)
                return bad_answer(c, "nvmlDeviceGetAttributes_v2", "its slices and memory make no MIG profile");
        memcpy(ret->uuid, uuid, sizeof(ret->uuid));         /* both NVML's largest */
        return true;
}

int gpu_mig_query(const gpu_nvml *n, const char *bdf, gpu_mig_layout *ret, const char **reterr_call,
                  nvmlReturn_t *reterr_code, const char **reterr_why) {
        gpu_mig_layout l = { 0 };
        mig_call c = { 0 };
        nvmlMemory_t mem = { 0 };
        nvmlDevice_t gpu = NULL;
        unsigned current = 0, pending = 0, max = 0;
        nvmlReturn_t r;

        if (ok(&c, "nvmlDeviceGetHandleByPciBusId_v2", n->nvmlDeviceGetHandleByPciBusId_v2(bdf, &gpu))) {
                r = n->nvmlDeviceGetMigMode(gpu, &current, &pending);
                if (r == NVML_ERROR_NOT_SUPPORTED)
                        r = NVML_SUCCESS;               /* no MIG on this GPU: off */
                l.enabled = r == NVML_SUCCESS && current == NVML_DEVICE_MIG_ENABLE;
                if (ok(&c, "nvmlDeviceGetMigMode", r) && l.enabled &&
                    ok(&c, "nvmlDeviceGetMaxMigDeviceCount", n->nvmlDeviceGetMaxMigDeviceCount(gpu, &max)))
                        (void) ok(&c, "nvmlDeviceGetMemoryInfo", n->nvmlDeviceGetMemoryInfo(gpu, &mem));
        }
        for (unsigned i = 0; !c.name && i < max; i++) {
                nvmlDevice_t m = NULL;

                r = n->nvmlDeviceGetMigDeviceHandleByIndex(gpu, i, &m);
                if (r == NVML_ERROR_NOT_FOUND)
                        continue;               /* no MIG device at this index */
                if (!ok(&c, "nvmlDeviceGetMigDeviceHandleByIndex", r))
                        break;
                if (l.n == GPU_MIG_MAX) {
                        c = (mig_call){ "nvmlDeviceGetMaxMigDeviceCount", NVML_ERROR_INSUFFICIENT_SIZE, NULL };
                        break;
                }
                if (query_device(n, gpu, m, mem.total, &l.devices[l.n], &c))
                        l.n++;
        }
        if (c.name) {
                if (reterr_call)
                        *reterr_call = c.name;
                if (reterr_code)
                        *reterr_code = c.code;
                if (reterr_why)
                        *reterr_why = c.why;
                return c.why ? -EBADMSG : gpu_nvml_errno(c.code) ?: -EIO;
        }
        *ret = l;
        return 0;
}

/* ---- capability files ---- */

int gpu_mig_parse_access(const char *text, unsigned *ret_minor, const char **reterr_why) {
        const char *why = "no DeviceFileMinor line";
        unsigned long minor = 0;
        bool have = false;

        for (const char *line = text ? text : ""; *line; line += strcspn(line, "\n") + (line[strcspn(line, "\n")] != '\0')) {
                static const char key[] = "DeviceFileMinor:";
                const char *v;
                char *end;

                if (strncmp(line, key, strlen(key)) != 0)
                        continue;
                if (have) {
                        why = "two DeviceFileMinor lines";
                        have = false;
                        break;
                }
                v = line + strlen(key);
                v += strspn(v, " \t");
                errno = 0;
                minor = strtoul(v, &end, 10);
                end += strspn(end, " \t\r");
                if (errno || end == v || (*end != '\n' && *end != '\0') || v[0] == '-' || v[0] == '+' ||
                    minor > (1UL << 20) - 1) {
                        why = "its DeviceFileMinor is not a number from 0 to 1048575";
                        break;
                }
                have = true;
        }
        if (!have) {
                if (reterr_why)
                        *reterr_why = why;
                return -EBADMSG;
        }
        *ret_minor = (unsigned) minor;
        return 0;
}

int gpu_mig_read_access(const kdp_backend_ctx *ctx, unsigned gpu_minor, unsigned gi, int ci, unsigned *ret_minor,
                        const char **reterr_why) {
        _cleanup_free_ char *rel = NULL, *text = NULL;
        int r;

        r = ci < 0 ? asprintf(&rel, "driver/nvidia/capabilities/gpu%u/mig/gi%u/access", gpu_minor, gi)
                   : asprintf(&rel, "driver/nvidia/capabilities/gpu%u/mig/gi%u/ci%d/access", gpu_minor, gi, ci);
        if (r < 0)
                return -ENOMEM;
        r = nvidia_read_proc(ctx, rel, &text);
        if (r < 0)
                return r;
        return gpu_mig_parse_access(text, ret_minor, reterr_why);
}
