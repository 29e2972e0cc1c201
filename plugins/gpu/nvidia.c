/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NVIDIA's procfs view of one GPU (docs/hardware-gpu.md §3.1, §3.2).
 *
 * The driver writes /proc/driver/nvidia/gpus/<bdf>/information as
 * "Key: \t value" lines. The device minor (/dev/nvidia<minor>) is handed out
 * in probe order and may change after a remove and rescan, so it is read
 * here every scan, never computed from the address. The UUID line is absent
 * while the driver has not cached it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <kdp/cleanup.h>

#include "gpu.h"

const char *const nvidia_shared_nodes[] = {
        "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset", NULL,
};

static char *trim(char *s) {
        char *end;

        s += strspn(s, " \t");
        end = s + strlen(s);
        while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
                *--end = '\0';
        return s;
}

static int parse_minor(const char *v, unsigned *ret) {
        char *end;
        unsigned long m;

        errno = 0;
        m = strtoul(v, &end, 10);
        if (errno || end == v || *end || m > 247)       /* NV_MINOR_DEVICE_NUMBER_REGULAR_MAX */
                return -EBADMSG;
        *ret = (unsigned) m;
        return 0;
}

/* *why: what is wrong with the line, when it is. */
static int apply_line(char *line, nvidia_info *info, bool *have_bus, bool *have_minor, const char *bdf,
                      const char **why) {
        char *colon = strchr(line, ':'), *key, *value;

        if (!colon)
                return 0;
        *colon = '\0';
        key = trim(line);
        value = trim(colon + 1);
        if (strcmp(key, "GPU UUID") == 0) {
                *why = "its GPU UUID is longer than 47 characters";
                if (strlen(value) >= sizeof(info->uuid))
                        return -EBADMSG;
                strcpy(info->uuid, value);
        } else if (strcmp(key, "Device Minor") == 0) {
                *have_minor = true;
                *why = "its Device Minor is not a number from 0 to 247";
                return parse_minor(value, &info->minor);
        } else if (strcmp(key, "Bus Location") == 0) {
                *have_bus = true;
                *why = "its Bus Location names another PCI address";
                if (strcasecmp(value, bdf) != 0)
                        return -EBADMSG;
        } else if (strcmp(key, "GPU Excluded") == 0)
                info->excluded = strcmp(value, "Yes") == 0;
        return 0;
}

int nvidia_parse_information(const char *text, const char *bdf, nvidia_info *ret, const char **reterr_why) {
        _cleanup_free_ char *copy = strdup(text ? text : "");
        nvidia_info info = { 0 };
        bool have_bus = false, have_minor = false;
        const char *why = NULL;
        char *state = NULL;
        int r;

        if (!copy)
                return -ENOMEM;
        for (char *line = strtok_r(copy, "\n", &state); line; line = strtok_r(NULL, "\n", &state)) {
                r = apply_line(line, &info, &have_bus, &have_minor, bdf, &why);
                if (r < 0) {
                        if (reterr_why)
                                *reterr_why = why;
                        return r;
                }
        }
        if (!have_bus || !have_minor) {
                if (reterr_why)
                        *reterr_why = !have_bus ? "no Bus Location line" : "no Device Minor line";
                return -EBADMSG;
        }
        *ret = info;
        return 0;
}

int nvidia_read_proc(const kdp_backend_ctx *ctx, const char *rel, char **ret) {
        _cleanup_free_ char *path = NULL;
        int r = kdp_backend_path(ctx, KDP_PATH_PROC, rel, &path);

        if (r < 0)
                return r;
        r = kdp_sysfs_read_text(path, ret);          /* procfs reports size 0 */
        return r == -ENOTDIR ? -ENOENT : r;
}

int nvidia_read_information(const kdp_backend_ctx *ctx, const char *bdf, nvidia_info *ret, const char **reterr_why) {
        _cleanup_free_ char *rel = NULL, *text = NULL;
        int r;

        if (asprintf(&rel, "driver/nvidia/gpus/%s/information", bdf) < 0)
                return -ENOMEM;
        r = nvidia_read_proc(ctx, rel, &text);
        if (r < 0)
                return r;
        return nvidia_parse_information(text, bdf, ret, reterr_why);
}
