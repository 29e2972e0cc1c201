/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The KFD topology (HARDWARE-GPU §4.2): the GPUs amdgpu's compute driver
 * serves. A GPU that is bound but missing here cannot run ROCm work, so its
 * absence is a health verdict. Nodes are matched to PCI devices by address,
 * never by order: KFD node order is not bus order. In partition modes (CPX)
 * several nodes share one address; the low bits of location_id then hold the
 * partition index, so the function is always 0.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdp/cleanup.h>

#include "gpu.h"

static const char *const topology_dirs[] = {
        "class/kfd/kfd/topology/nodes",
        "devices/virtual/kfd/kfd/topology/nodes",
};

/* The decimal value of `key` in "key value\n" lines; -ENOENT when absent. */
static int property(const char *text, const char *key, uint64_t *ret) {
        size_t klen = strlen(key);

        for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
                char *end;

                if (strncmp(line, key, klen) != 0 || line[klen] != ' ')
                        continue;
                errno = 0;
                *ret = strtoull(line + klen + 1, &end, 10);
                if (errno || end == line + klen + 1 || (*end && *end != '\n'))
                        return -EBADMSG;
                return 0;
        }
        return -ENOENT;
}

int amd_kfd_parse_properties(const char *text, char bdf[KDP_PCI_ADDRESS_MAX], unsigned *ret_render_minor) {
        uint64_t simd = 0, location = 0, domain = 0, render = 0;
        int r;

        r = property(text, "simd_count", &simd);
        if (r < 0)
                return r;
        if (simd == 0)
                return 0;                       /* a CPU node */
        if ((r = property(text, "location_id", &location)) < 0 ||
            (r = property(text, "domain", &domain)) < 0 ||
            (r = property(text, "drm_render_minor", &render)) < 0)
                return r;
        if (domain > UINT32_MAX || render > UINT32_MAX)
                return -EBADMSG;
        snprintf(bdf, KDP_PCI_ADDRESS_MAX, "%04" PRIx64 ":%02" PRIx64 ":%02" PRIx64 ".0", domain,
                 (location >> 8) & 0xff, (location >> 3) & 0x1f);
        *ret_render_minor = (unsigned) render;
        return 1;
}

static int add_node(amd_kfd *kfd, const char *bdf) {
        void *b = realloc(kfd->bdfs, (kfd->n + 1) * sizeof(*kfd->bdfs));

        if (!b)
                return -ENOMEM;
        kfd->bdfs = b;
        snprintf(kfd->bdfs[kfd->n++], KDP_PCI_ADDRESS_MAX, "%s", bdf);
        return 0;
}

static int read_node(amd_kfd *kfd, const char *nodes_dir, const char *name) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        char bdf[KDP_PCI_ADDRESS_MAX];
        unsigned render;
        int r;

        if (asprintf(&path, "%s/%s/properties", nodes_dir, name) < 0)
                return -ENOMEM;
        r = kdp_sysfs_read_text(path, &text);
        if (r < 0)
                return r == -ENOENT ? 0 : r;    /* a node being removed */
        r = amd_kfd_parse_properties(text, bdf, &render);
        if (r <= 0)
                return r == -ENOENT || r == -EBADMSG ? 0 : r;
        return add_node(kfd, bdf);
}

static int open_nodes(const kdp_backend_ctx *ctx, char **ret_path, DIR **ret_dir) {
        for (size_t i = 0; i < sizeof(topology_dirs) / sizeof(topology_dirs[0]); i++) {
                _cleanup_free_ char *path = NULL;
                DIR *d;
                int r = kdp_backend_path(ctx, KDP_PATH_SYSFS, topology_dirs[i], &path);

                if (r < 0)
                        return r;
                d = opendir(path);
                if (d) {
                        *ret_path = KDP_TAKE_PTR(path);
                        *ret_dir = d;
                        return 0;
                }
        }
        return -ENOENT;
}

int amd_kfd_read(const kdp_backend_ctx *ctx, amd_kfd *ret) {
        _cleanup_free_ char *nodes_dir = NULL;
        amd_kfd kfd = { 0 };
        struct dirent *de;
        DIR *d;
        int r;

        r = open_nodes(ctx, &nodes_dir, &d);
        if (r == -ENOENT) {
                *ret = kfd;
                return 0;
        }
        if (r < 0)
                return r;
        kfd.present = true;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.' && (r = read_node(&kfd, nodes_dir, de->d_name)) < 0)
                        break;
        closedir(d);
        if (r < 0) {
                amd_kfd_done(&kfd);
                return r;
        }
        *ret = kfd;
        return 0;
}

bool amd_kfd_has(const amd_kfd *kfd, const char *bdf) {
        for (size_t i = 0; i < kfd->n; i++)
                if (strcmp(kfd->bdfs[i], bdf) == 0)
                        return true;
        return false;
}

void amd_kfd_done(amd_kfd *kfd) {
        free(kfd->bdfs);
        *kfd = (amd_kfd){ 0 };
}
