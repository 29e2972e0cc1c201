/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The KFD topology (docs/hardware-gpu.md §4.2): the GPUs amdgpu's compute driver
 * serves. A GPU that is bound but missing here cannot run ROCm work, so its
 * absence is a health verdict. Nodes are matched to PCI devices by address,
 * never by order: KFD node order is not bus order. In partition modes (CPX)
 * several nodes share one address; the low bits of location_id then hold the
 * partition index, so the function is always 0. A partition's node names its
 * render minor: partition 0 is the PCI device's own DRM device, the others
 * are the DRM devices of amdgpu_xcp_<k> platform devices (docs/hardware-gpu.md §4.3);
 * an XCP minor no node names holds no partition in this mode.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

int amd_kfd_parse_properties(const char *text, amd_kfd_node *ret) {
        uint64_t simd = 0, location = 0, domain = 0, render = 0;
        int r;

        r = property(text, "simd_count", &simd);
        if (r < 0)
                return r;
        if (simd == 0)
                return 0;                       /* a CPU node */
        if ((r = property(text, "location_id", &location)) < 0 ||
            (r = property(text, "drm_render_minor", &render)) < 0)
                return r;
        /* older kernels print no domain line (AMD's own capture of a one-GPU node has none): domain 0 */
        r = property(text, "domain", &domain);
        if (r < 0 && r != -ENOENT)
                return r;
        if (domain > UINT32_MAX || render > UINT32_MAX)
                return -EBADMSG;
        snprintf(ret->bdf, sizeof(ret->bdf), "%04" PRIx64 ":%02" PRIx64 ":%02" PRIx64 ".0", domain,
                 (location >> 8) & 0xff, (location >> 3) & 0x1f);
        ret->partition = (unsigned) (location & 7);
        ret->render_minor = (unsigned) render;
        return 1;
}

static int add_node(amd_kfd *kfd, const amd_kfd_node *node) {
        amd_kfd_node *n = realloc(kfd->nodes, (kfd->n + 1) * sizeof(*n));

        if (!n)
                return -ENOMEM;
        kfd->nodes = n;
        kfd->nodes[kfd->n++] = *node;
        return 0;
}

static int read_node(amd_kfd *kfd, const char *nodes_dir, const char *name) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        amd_kfd_node node;
        int r;

        if (asprintf(&path, "%s/%s/properties", nodes_dir, name) < 0)
                return -ENOMEM;
        r = kdp_sysfs_read_text(path, &text);
        if (r < 0)
                return r == -ENOENT ? 0 : r;    /* a node being removed */
        r = amd_kfd_parse_properties(text, &node);
        if (r <= 0)
                return r == -ENOENT || r == -EBADMSG ? 0 : r;
        return add_node(kfd, &node);
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
                if (strcmp(kfd->nodes[i].bdf, bdf) == 0)
                        return true;
        return false;
}

size_t amd_kfd_partitions(const amd_kfd *kfd, const char *bdf, const amd_kfd_node **ret, size_t max) {
        size_t n = 0;

        for (unsigned p = 0; p < 8; p++)
                for (size_t i = 0; i < kfd->n; i++)
                        if (kfd->nodes[i].partition == p && strcmp(kfd->nodes[i].bdf, bdf) == 0) {
                                if (n < max)
                                        ret[n++] = &kfd->nodes[i];
                                break;          /* one node per partition */
                        }
        return n;
}

static const char *const partition_names[] = { "SPX", "DPX", "TPX", "QPX", "CPX" };

int amd_partition_mode(const char *compute, const char *memory, char *ret, size_t size) {
        bool known = false;
        size_t n;

        for (size_t i = 0; i < sizeof(partition_names) / sizeof(partition_names[0]) && !known; i++)
                known = strcasecmp(compute, partition_names[i]) == 0;
        if (!known || strncasecmp(memory, "NPS", 3) != 0 || !memory[3] || strspn(memory + 3, "0123456789") != strlen(memory + 3))
                return -EBADMSG;
        if (strlen(compute) + 1 + strlen(memory) >= size)
                return -ENAMETOOLONG;
        n = (size_t) snprintf(ret, size, "%s_%s", compute, memory);
        for (size_t i = 0; i < n; i++)
                ret[i] = (char) tolower((unsigned char) ret[i]);
        return 0;
}

void amd_kfd_done(amd_kfd *kfd) {
        free(kfd->nodes);
        *kfd = (amd_kfd){ 0 };
}
