/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The GPU backend's config (see gpu.h and README.md): its params, parsed once
 * in init into a gpu_config, and the rules that follow from them — which PCI
 * functions are GPUs of ours, under which resource name, with how many
 * replicas. A bad value is logged with the key, the value, where it was set
 * (file:line or the -o flag) and why, and init fails.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <kdp/backend.h>
#include <kdp/cleanup.h>

#include "gpu.h"

static const char *const vendor_names[_GPU_VENDOR_MAX] = {
        [GPU_NVIDIA] = "nvidia", [GPU_AMD] = "amd", [GPU_INTEL] = "intel",
};
static const uint16_t vendor_ids[_GPU_VENDOR_MAX] = {
        [GPU_NVIDIA] = 0x10de, [GPU_AMD] = 0x1002, [GPU_INTEL] = 0x8086,
};

static void strv_free(char **v) {
        for (size_t i = 0; v && v[i]; i++)
                free(v[i]);
        free(v);
}

static void strv_freep(char ***v) {
        strv_free(*v);
}

/* "a, b,c" -> {"a","b","c",NULL}; empty entries are dropped. */
static int split_list(const char *text, char ***ret) {
        _cleanup_free_ char *copy = strdup(text ? text : "");
        char **v = calloc(1, sizeof(char *)), *state = NULL;
        size_t n = 0;

        if (!copy || !v) {
                free(v);
                return -ENOMEM;
        }
        for (char *t = strtok_r(copy, ",", &state); t; t = strtok_r(NULL, ",", &state)) {
                char **nv;

                t += strspn(t, " \t");
                for (char *e = t + strlen(t); e > t && (e[-1] == ' ' || e[-1] == '\t'); )
                        *--e = '\0';
                if (!*t)
                        continue;
                nv = realloc(v, (n + 2) * sizeof(char *));
                if (!nv || !(nv[n] = strdup(t))) {
                        strv_free(nv ? nv : v);
                        return -ENOMEM;
                }
                v = nv;
                v[++n] = NULL;
        }
        *ret = v;
        return 0;
}

/* Logs a bad value of param `key` ("gpu.<param>") with where it was set. */
static int param_error(const gpu_config *s, const char *key, const char *value, const char *why) {
        const char *origin = kdp_backend_param_origin(s->ctx, key + strlen("gpu."));

        kdp_backend_log_error(s->ctx, -EINVAL, "Rejected config value", KDP_F_STR("key", key),
                              KDP_F_STR("value", value), KDP_F_STR("origin", origin ? origin : "?"),
                              KDP_F_STR("reason", why));
        return -EINVAL;
}

static int parse_pci_id(const char *text, uint16_t *vendor, uint16_t *device) {
        unsigned v, d;
        int end = 0;

        if (sscanf(text, "%4x:%4x%n", &v, &d, &end) != 2 || text[end] || strlen(text) != 9)
                return -EINVAL;
        *vendor = (uint16_t) v;
        *device = (uint16_t) d;
        return 0;
}

/* allow/deny entries: "vvvv:dddd", "vvvv:*" or a PCI address. */
static int check_filter(const gpu_config *s, const char *key, char **list) {
        for (size_t i = 0; list[i]; i++) {
                uint16_t v, d;
                unsigned a, b, c, f;
                char tail;

                if (parse_pci_id(list[i], &v, &d) >= 0)
                        continue;
                if (strlen(list[i]) == 6 && strcmp(list[i] + 4, ":*") == 0 && sscanf(list[i], "%4x", &a) == 1)
                        continue;
                if (sscanf(list[i], "%x:%2x:%2x.%1x%c", &a, &b, &c, &f, &tail) == 4)
                        continue;
                return param_error(s, key, list[i], "not vendor:device, vendor:* or a PCI address");
        }
        return 0;
}

static int parse_models(gpu_config *s) {
        _cleanup_(strv_freep) char **list = NULL;
        int r = split_list(kdp_backend_param(s->ctx, "model_resources"), &list);

        if (r < 0)
                return r;
        for (size_t i = 0; list[i]; i++) {
                char *eq = strchr(list[i], '=');
                model_resource m = { 0 };
                model_resource *nm;

                if (!eq || eq[1] == '\0')
                        return param_error(s, "gpu.model_resources", list[i], "expected vendor:device=resource");
                *eq = '\0';
                if (parse_pci_id(list[i], &m.vendor, &m.device) < 0)
                        return param_error(s, "gpu.model_resources", list[i], "not a vendor:device PCI ID");
                if (strlen(eq + 1) >= GPU_RESOURCE_MAX)
                        return param_error(s, "gpu.model_resources", eq + 1, "resource name too long");
                nm = realloc(s->models, (s->n_models + 1) * sizeof(*nm));
                if (!nm)
                        return -ENOMEM;
                s->models = nm;
                m.resource = strdup(eq + 1);
                if (!m.resource)
                        return -ENOMEM;
                s->models[s->n_models++] = m;
        }
        return 0;
}

static int parse_count(const gpu_config *s, const char *text, unsigned *ret) {
        char *end;
        unsigned long n;

        errno = 0;
        n = strtoul(text, &end, 10);
        if (errno || end == text || *end || n < 1 || n > GPU_REPLICA_DEVICES_MAX)
                return param_error(s, "gpu.replicas", text,
                                   "replicas must be 1..16384 (the most devices kdpd makes of one resource)");
        *ret = (unsigned) n;
        return 0;
}

/*
 * "4" (every resource) or "nvidia.com/gpu=4,amd.com/gpu=2". A resource may be named as NVIDIA's
 * plugin names a MIG profile's ("nvidia.com/mig-1g.10gb+me"): no resource name holds a '+', and
 * mig_strategy mixed serves that one as "nvidia.com/mig-1g.10gb.me" (gpu_mig_resource()). A name
 * without a domain is in nvidia_resource's, as NVIDIA's plugin reads it in its own ("gpu" is
 * "nvidia.com/gpu"); a name the kubelet would refuse is refused.
 */
static int parse_replicas(gpu_config *s) {
        _cleanup_(strv_freep) char **list = NULL;
        int r = split_list(kdp_backend_param(s->ctx, "replicas"), &list);

        if (r < 0)
                return r;
        for (size_t i = 0; list[i]; i++) {
                char *eq = strchr(list[i], '=');
                resource_replicas rr = { 0 }, *nr;

                r = parse_count(s, eq ? eq + 1 : list[i], &rr.n);
                if (r < 0)
                        return r;
                if (eq) {
                        const char *nv = kdp_backend_param(s->ctx, "nvidia_resource");
                        const char *slash = strchr(nv, '/');

                        *eq = '\0';
                        if (strchr(list[i], '/'))
                                rr.resource = strdup(list[i]);
                        else if (asprintf(&rr.resource, "%.*s/%s", slash ? (int) (slash - nv) : (int) strlen(nv), nv,
                                          list[i]) < 0)
                                rr.resource = NULL;
                        if (!rr.resource)
                                return -ENOMEM;
                        for (char *p = strchr(rr.resource, '+'); p; p = strchr(p, '+'))
                                *p = '.';
                        if (!kdp_device_resource_name_is_valid(rr.resource)) {
                                free(rr.resource);
                                return param_error(s, "gpu.replicas", list[i], "not a resource name the kubelet takes");
                        }
                }
                nr = realloc(s->replicas, (s->n_replicas + 1) * sizeof(*nr));
                if (!nr) {
                        free(rr.resource);
                        return -ENOMEM;
                }
                s->replicas = nr;
                s->replicas[s->n_replicas++] = rr;
        }
        return 0;
}

static int parse_vendors(gpu_config *s) {
        _cleanup_(strv_freep) char **list = NULL;
        int r = split_list(kdp_backend_param(s->ctx, "vendors"), &list);

        if (r < 0)
                return r;
        for (size_t i = 0; list[i]; i++) {
                gpu_vendor v = 0;

                while (v < _GPU_VENDOR_MAX && strcmp(vendor_names[v], list[i]) != 0)
                        v++;
                if (v == _GPU_VENDOR_MAX)
                        return param_error(s, "gpu.vendors", list[i], "not one of nvidia, amd, intel");
                s->vendor_on[v] = true;
        }
        return 0;
}

static int parse_policy(gpu_config *s) {
        const char *p = kdp_backend_param(s->ctx, "replica_policy");

        if (strcmp(p, "spread") == 0)
                s->policy = GPU_REPLICAS_SPREAD;
        else if (strcmp(p, "pack") == 0)
                s->policy = GPU_REPLICAS_PACK;
        else
                return param_error(s, "gpu.replica_policy", p, "not spread or pack");
        return 0;
}

const char *const gpu_mig_strategy_names[_GPU_MIG_STRATEGY_MAX] = {
        [GPU_MIG_NONE] = "none", [GPU_MIG_SINGLE] = "single", [GPU_MIG_MIXED] = "mixed",
};

/* The index in names[] (n of them) of param `key`'s value into *ret; -EINVAL (logged, with `choices`) for another. */
static int parse_choice(gpu_config *s, const char *key, const char *const *names, int n, const char *choices, int *ret) {
        const char *p = kdp_backend_param(s->ctx, key + strlen("gpu."));

        for (int m = 0; m < n; m++)
                if (strcmp(p, names[m]) == 0) {
                        *ret = m;
                        return 0;
                }
        return param_error(s, key, p, choices);
}

static int parse_modes(gpu_config *s) {
        static const char *const amd[_GPU_AMD_PARTITIONS_MAX] = {
                [GPU_AMD_WHOLE] = "whole", [GPU_AMD_SINGLE] = "single", [GPU_AMD_MIXED] = "mixed",
        };
        int a = 0, m = 0, r;

        r = parse_choice(s, "gpu.amd_partitions", amd, _GPU_AMD_PARTITIONS_MAX, "not whole, single or mixed", &a);
        if (r >= 0)
                r = parse_choice(s, "gpu.mig_strategy", gpu_mig_strategy_names, _GPU_MIG_STRATEGY_MAX, "not none, single or mixed", &m);
        s->amd_partitions = (gpu_amd_partitions) a;
        s->mig_strategy = (gpu_mig_strategy) m;
        return r;
}

/*
 * xid_ignore: Xid numbers, or "all" (also as one entry of a list, as NVIDIA's plugin takes it). An
 * entry that is neither is skipped, as NVIDIA's plugin skips it, with a warning naming it.
 */
static int parse_xid(gpu_config *s) {
        const char *ignore = kdp_backend_param(s->ctx, "xid_ignore");
        _cleanup_(strv_freep) char **list = NULL;
        _cleanup_free_ char *skipped = NULL;
        int64_t recovery;
        int r;

        r = split_list(ignore, &list);
        if (r < 0)
                return r;
        for (size_t i = 0; list[i] && !s->xid_off; i++)
                s->xid_off = strcmp(list[i], "all") == 0;
        if (!s->xid_off) {
                r = gpu_xid_set_parse(ignore, &s->xid_ignore, &skipped);
                if (r < 0)
                        return r;
        }
        if (skipped) {
                const char *origin = kdp_backend_param_origin(s->ctx, "xid_ignore");

                kdp_backend_log_warning(s->ctx, "Skipped xid_ignore entries that are no Xid numbers",
                                        KDP_F_STR("key", "gpu.xid_ignore"), KDP_F_STR("skipped", skipped),
                                        KDP_F_STR("origin", origin ? origin : "?"));
        }
        r = kdp_backend_param_int(s->ctx, "xid_recovery_s", 0, 7 * 24 * 3600, &recovery);
        if (r < 0)
                return r;
        s->xid_recovery_ms = (uint64_t) recovery * 1000;
        return 0;
}

static int parse_params(gpu_config *s) {
        int r;

        if ((r = parse_vendors(s)) < 0 || (r = parse_models(s)) < 0 || (r = parse_replicas(s)) < 0 ||
            (r = parse_policy(s)) < 0 || (r = parse_modes(s)) < 0 || (r = parse_xid(s)) < 0)
                return r;
        if ((r = split_list(kdp_backend_param(s->ctx, "allow"), &s->allow)) < 0 ||
            (r = split_list(kdp_backend_param(s->ctx, "deny"), &s->deny)) < 0)
                return r;
        if ((r = check_filter(s, "gpu.allow", s->allow)) < 0 || (r = check_filter(s, "gpu.deny", s->deny)) < 0)
                return r;
        if ((r = kdp_backend_param_bool(s->ctx, "nvidia_device_specs", &s->device_specs)) < 0 ||
            (r = kdp_backend_param_bool(s->ctx, "cdi", &s->cdi)) < 0)
                return r;
        return 0;
}

static bool is_gpu_class(uint32_t class_code) {
        return (class_code >> 16) == 0x03 || (class_code >> 8) == 0x1200;
}

int gpu_config_vendor(const gpu_config *s, const kdp_pci_device *p) {
        for (gpu_vendor v = 0; v < _GPU_VENDOR_MAX; v++)
                if (p->vendor_id == vendor_ids[v])
                        return s->vendor_on[v] && is_gpu_class(p->class_code) ? (int) v : -ENOENT;
        return -ENOENT;
}

bool gpu_config_may_be_gpu(uint16_t vendor_id) {
        if (vendor_id == 0)
                return true;            /* not read */
        for (gpu_vendor v = 0; v < _GPU_VENDOR_MAX; v++)
                if (vendor_id == vendor_ids[v])
                        return true;
        return false;
}

const char *gpu_config_vendor_off(const gpu_config *s, const kdp_pci_device *p) {
        for (gpu_vendor v = 0; v < _GPU_VENDOR_MAX; v++)
                if (p->vendor_id == vendor_ids[v])
                        return !s->vendor_on[v] && is_gpu_class(p->class_code) ? vendor_names[v] : NULL;
        return NULL;
}

static bool filter_matches(char **list, const kdp_pci_device *p) {
        for (size_t i = 0; list[i]; i++) {
                uint16_t v, d;
                unsigned vv;

                if (parse_pci_id(list[i], &v, &d) >= 0) {
                        if (v == p->vendor_id && d == p->device_id)
                                return true;
                } else if (strcmp(list[i] + 4, ":*") == 0) {
                        if (sscanf(list[i], "%4x", &vv) == 1 && vv == p->vendor_id)
                                return true;
                } else if (strcasecmp(list[i], p->address) == 0)
                        return true;
        }
        return false;
}

const char *gpu_config_filtered(const gpu_config *s, const kdp_pci_device *p) {
        if (s->allow[0] && !filter_matches(s->allow, p))
                return "not in gpu.allow";
        return filter_matches(s->deny, p) ? "in gpu.deny" : NULL;
}

bool gpu_config_allows(const gpu_config *s, const kdp_pci_device *p) {
        return !gpu_config_filtered(s, p);
}

/* The driver a vendor's GPU must be bound to; Intel: i915 or xe. */
bool gpu_driver_expected(gpu_vendor v, const char *driver) {
        switch (v) {
        case GPU_NVIDIA:
                return strcmp(driver, "nvidia") == 0;
        case GPU_AMD:
                return strcmp(driver, "amdgpu") == 0;
        case GPU_INTEL:
                return strcmp(driver, "i915") == 0 || strcmp(driver, "xe") == 0;
        default:
                return false;
        }
}

const char *gpu_config_resource(const gpu_config *s, gpu_vendor v, const kdp_pci_device *p) {
        for (size_t i = 0; i < s->n_models; i++)
                if (s->models[i].vendor == p->vendor_id && s->models[i].device == p->device_id)
                        return s->models[i].resource;
        switch (v) {
        case GPU_NVIDIA:
                return kdp_backend_param(s->ctx, "nvidia_resource");
        case GPU_AMD:
                return kdp_backend_param(s->ctx, "amd_resource");
        default:
                return kdp_backend_param(s->ctx, strcmp(p->driver, "xe") == 0 ? "xe_resource" : "i915_resource");
        }
}

int gpu_config_mixed_resource(const gpu_config *s, const char *mode, char *ret, size_t size) {
        const char *amd = kdp_backend_param(s->ctx, "amd_resource");
        const char *slash = strchr(amd, '/');
        int len = slash ? (int) (slash - amd) : (int) strlen(amd);
        int n = snprintf(ret, size, "%.*s/%s", len, amd, mode);

        return n < 0 || (size_t) n >= size ? -ENAMETOOLONG : 0;
}

unsigned gpu_config_replicas(const gpu_config *s, const char *resource) {
        unsigned n = 1;

        for (size_t i = 0; i < s->n_replicas; i++)
                if (!s->replicas[i].resource || strcmp(s->replicas[i].resource, resource) == 0)
                        n = s->replicas[i].n;
        return n;
}

const kdp_param_spec gpu_params[] = {
        { "vendors", "nvidia,amd,intel", "which vendors' GPUs to serve (comma-separated)" },
        { "allow", "", "serve only these GPUs: vendor:device, vendor:* or PCI addresses (empty: all)" },
        { "deny", "", "never serve these GPUs (same forms as allow)" },
        { "nvidia_resource", "nvidia.com/gpu", "resource of NVIDIA GPUs" },
        { "amd_resource", "amd.com/gpu", "resource of AMD GPUs" },
        { "i915_resource", "gpu.intel.com/i915", "resource of Intel GPUs bound to i915" },
        { "xe_resource", "gpu.intel.com/xe", "resource of Intel GPUs bound to xe" },
        { "amd_partitions", "single", "AMD partitions (MI300 CPX, ...): single (each partition a device of amd_resource, "
          "AMD's plugin's default), mixed (of <domain>/<compute>_<memory>) or whole (a GPU is one device with every "
          "partition's nodes)" },
        { "mig_strategy", "none", "NVIDIA MIG: none (a GPU in MIG mode is served whole), single (each MIG device a "
          "device of nvidia_resource) or mixed (of <domain>/mig-<profile>); needs NVML" },
        { "model_resources", "", "per-model resources: vendor:device=resource,... (e.g. 10de:2330=nvidia.com/h100)" },
        { "replicas", "", "time-sliced sharing: N for every resource, or resource=N,... (1..16384; a resource without "
          "a domain is in nvidia_resource's)" },
        { "replica_policy", "spread", "spread (replicas on distinct GPUs first) or pack" },
        { "nvidia_device_specs", "false", "also return NVIDIA device nodes as DeviceSpecs" },
        { "cdi", "false", "write CDI specs into --cdi-dir and return CDI device names" },
        { "xid_ignore", "13,31,43,45,68,109", "Xids that do not make a GPU unhealthy, or 'all' for no Xid health "
          "(an entry that is no number is skipped with a warning)" },
        { "xid_recovery_s", "300", "seconds after a critical Xid a GPU is healthy again without a reset; 0: only a reset" },
        { "kmsg", "kmsg", "kernel log, relative to --dev-root (or absolute); empty: none (NVML may serve Xids)" },
        { "nvml", "libnvidia-ml.so.1", "NVML library loaded at run time when present (a name or a path); "
                                       "empty: never load it" },
        { 0 },
};


int gpu_config_parse(const kdp_backend_ctx *ctx, gpu_config *ret) {
        gpu_config c = { .ctx = ctx };
        int r = parse_params(&c);

        if (r < 0) {
                gpu_config_done(&c);
                return r;
        }
        *ret = c;
        return 0;
}

void gpu_config_done(gpu_config *c) {
        gpu_xid_set_done(&c->xid_ignore);
        strv_free(c->allow);
        strv_free(c->deny);
        for (size_t i = 0; i < c->n_models; i++)
                free(c->models[i].resource);
        free(c->models);
        for (size_t i = 0; i < c->n_replicas; i++)
                free(c->replicas[i].resource);
        free(c->replicas);
        *c = (gpu_config){ 0 };
}
