/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Plain sysfs and /dev fixture trees for the unit tests, built in a mkdtemp
 * directory (header-only, like kdp-test.h; include that first).
 *
 * The layout is the kernel's, with relative links as the kernel makes them:
 *
 *   <root>/sys/devices/pci0000:3a/0000:3a:00.0/...      device directories
 *   <root>/sys/bus/pci/devices/<addr>                  -> ../../../devices/<path>
 *   <dev dir>/driver                                   -> ../..(depth)../bus/pci/drivers/<name>
 *   <dev dir>/iommu_group                              -> ../..(depth)../kernel/iommu_groups/<n>
 *   <dev dir>/physfn, <pf dir>/virtfn<N>               -> ../<addr>
 *   <root>/dev/...                                     device nodes (regular files)
 *
 * Every attribute is written with the kernel's trailing newline.
 *
 *   _cleanup_(kdp_test_rm_rfp) char *root = kdp_test_tree_new("pci");
 *   kdp_test_pci_add(root, &(kdp_test_pci_dev){ .path = "pci0000:3a/0000:3a:00.0", .vendor = "0x8086", ... });
 *   kdp_test_tree_write(root, "sys/devices/.../drm/card1/uevent", "DEVNAME=dri/card1\n");
 *   ctx = kdp_test_tree_ctx(root);        sysfs root <root>/sys, dev root <root>/dev
 */
#pragma once

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kdp/backend.h>

#include "backend-ctx.h"

/* A new empty directory /tmp/kdp-test-<name>-XXXXXX (free(); pair with _cleanup_(kdp_test_rm_rfp)). */
static inline char *kdp_test_tree_new(const char *name) {
        char *root = NULL;

        ck_assert_int_ge(asprintf(&root, "/tmp/kdp-test-%s-XXXXXX", name), 0);
        ck_assert_ptr_nonnull(mkdtemp(root));
        return root;
}

/* "<root>/<rel>" (free()). */
static inline char *kdp_test_tree_path(const char *root, const char *rel) {
        char *path = NULL;

        ck_assert_int_ge(asprintf(&path, "%s/%s", root, rel), 0);
        return path;
}

/* mkdir -p <root>/<rel>. */
static inline void kdp_test_tree_mkdir(const char *root, const char *rel) {
        char *path = kdp_test_tree_path(root, rel);

        for (char *p = path + strlen(root) + 1;; p++) {
                char c = *p;

                if (c != '/' && c != '\0')
                        continue;
                *p = '\0';
                ck_assert_msg(mkdir(path, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", path, strerror(errno));
                *p = c;
                if (c == '\0')
                        break;
        }
        free(path);
}

/* The directory part of rel ("" for none), made under root. */
static inline void kdp_test_tree_mkparent(const char *root, const char *rel) {
        char *dir = strdup(rel);
        char *slash;

        ck_assert_ptr_nonnull(dir);
        slash = strrchr(dir, '/');
        if (slash) {
                *slash = '\0';
                kdp_test_tree_mkdir(root, dir);
        }
        free(dir);
}

/* Writes <root>/<rel> (replacing it), making its directories. */
static inline void kdp_test_tree_write(const char *root, const char *rel, const char *content) {
        char *path = kdp_test_tree_path(root, rel);
        FILE *f;

        kdp_test_tree_mkparent(root, rel);
        f = fopen(path, "we");
        ck_assert_msg(f != NULL, "fopen %s: %s", path, strerror(errno));
        ck_assert_int_eq(fputs(content, f) >= 0, 1);
        ck_assert_int_eq(fclose(f), 0);
        free(path);
}

/* Makes <root>/<rel> a symlink to `target` (replacing it), making its directories. */
static inline void kdp_test_tree_link(const char *root, const char *rel, const char *target) {
        char *path = kdp_test_tree_path(root, rel);

        kdp_test_tree_mkparent(root, rel);
        (void) unlink(path);
        ck_assert_msg(symlink(target, path) == 0, "symlink %s: %s", path, strerror(errno));
        free(path);
}

/* Removes the file or empty directory <root>/<rel>. */
static inline void kdp_test_tree_remove(const char *root, const char *rel) {
        char *path = kdp_test_tree_path(root, rel);

        ck_assert_msg(remove(path) == 0, "remove %s: %s", path, strerror(errno));
        free(path);
}

/* A ctx for backend "test" whose sysfs root is <root>/sys and dev root <root>/dev (free with kdp_backend_ctx_free). */
static inline kdp_backend_ctx *kdp_test_tree_ctx(const char *root) {
        char *sys = kdp_test_tree_path(root, "sys"), *dev = kdp_test_tree_path(root, "dev");
        const char *roots[_KDP_PATH_KIND_MAX] = { [KDP_PATH_SYSFS] = sys, [KDP_PATH_DEV] = dev };
        kdp_backend_ctx *ctx = NULL;

        ck_assert_int_eq(kdp_backend_ctx_new("test", roots, NULL, NULL, &ctx), 0);
        free(sys);
        free(dev);
        return ctx;
}

/* ---- PCI devices ---- */

typedef struct kdp_test_pci_dev {
        const char *path;                       /* below sys/devices: "pci0000:3a/0000:3a:00.0/0000:3b:00.0" */
        const char *vendor, *device, *class_code; /* "0x10de", "0x2330", "0x030200"; NULL: no file */
        const char *subsystem_vendor, *subsystem_device;
        const char *numa_node;                  /* "0", "-1"; NULL: no file */
        const char *driver;                     /* NULL: unbound (no link) */
        const char *iommu_group;                /* "13"; NULL: no link */
        const char *enable;                     /* NULL: no file */
        const char *sriov_totalvfs, *sriov_numvfs;
        const char *physfn;                     /* the PF's address (a sibling): physfn and the PF's virtfn<vf_index> */
        int vf_index;
} kdp_test_pci_dev;

/* "<path>/<file>" below sys/devices (free()). */
static inline char *kdp_test_pci_rel(const kdp_test_pci_dev *d, const char *file) {
        char *rel = NULL;

        ck_assert_int_ge(asprintf(&rel, "sys/devices/%s/%s", d->path, file), 0);
        return rel;
}

static inline void kdp_test_pci_attr(const char *root, const kdp_test_pci_dev *d, const char *file,
                                     const char *value) {
        char *rel, *content = NULL;

        if (!value)
                return;
        rel = kdp_test_pci_rel(d, file);
        ck_assert_int_ge(asprintf(&content, "%s\n", value), 0);
        kdp_test_tree_write(root, rel, content);
        free(content);
        free(rel);
}

/* A link <dev dir>/<name> to "sys/<target>", relative as the kernel makes it. */
static inline void kdp_test_pci_sys_link(const char *root, const kdp_test_pci_dev *d, const char *name,
                                         const char *target) {
        char *rel = kdp_test_pci_rel(d, name), *up = NULL, *link = NULL;
        size_t depth = 1;                       /* "devices" */

        for (const char *p = d->path; *p; p++)
                depth += *p == '/';
        depth++;                                /* the last component of path */
        up = calloc(depth * 3 + 1, 1);
        ck_assert_ptr_nonnull(up);
        for (size_t i = 0; i < depth; i++)
                strcat(up, "../");
        ck_assert_int_ge(asprintf(&link, "%s%s", up, target), 0);
        kdp_test_tree_link(root, rel, link);
        free(link);
        free(up);
        free(rel);
}

/* Adds one PCI device with its attributes and links. */
static inline void kdp_test_pci_add(const char *root, const kdp_test_pci_dev *d) {
        const char *address = strrchr(d->path, '/') ? strrchr(d->path, '/') + 1 : d->path;
        char *rel = NULL, *target = NULL, *uevent = NULL;

        /* the directory itself, even without any attribute */
        rel = kdp_test_pci_rel(d, "");
        kdp_test_tree_mkdir(root, rel);
        free(rel);

        kdp_test_pci_attr(root, d, "vendor", d->vendor);
        kdp_test_pci_attr(root, d, "device", d->device);
        kdp_test_pci_attr(root, d, "class", d->class_code);
        kdp_test_pci_attr(root, d, "subsystem_vendor", d->subsystem_vendor);
        kdp_test_pci_attr(root, d, "subsystem_device", d->subsystem_device);
        kdp_test_pci_attr(root, d, "numa_node", d->numa_node);
        kdp_test_pci_attr(root, d, "enable", d->enable);
        kdp_test_pci_attr(root, d, "sriov_totalvfs", d->sriov_totalvfs);
        kdp_test_pci_attr(root, d, "sriov_numvfs", d->sriov_numvfs);
        ck_assert_int_ge(asprintf(&uevent, "%s%s%sPCI_SLOT_NAME=%s", d->driver ? "DRIVER=" : "",
                                  d->driver ? d->driver : "", d->driver ? "\n" : "", address), 0);
        kdp_test_pci_attr(root, d, "uevent", uevent);
        free(uevent);

        ck_assert_int_ge(asprintf(&rel, "sys/bus/pci/devices/%s", address), 0);
        ck_assert_int_ge(asprintf(&target, "../../../devices/%s", d->path), 0);
        kdp_test_tree_link(root, rel, target);
        free(target);
        free(rel);

        if (d->driver) {
                ck_assert_int_ge(asprintf(&rel, "sys/bus/pci/drivers/%s", d->driver), 0);
                kdp_test_tree_mkdir(root, rel);
                kdp_test_pci_sys_link(root, d, "driver", rel + strlen("sys/"));
                free(rel);
        }
        if (d->iommu_group) {
                ck_assert_int_ge(asprintf(&rel, "sys/kernel/iommu_groups/%s/devices", d->iommu_group), 0);
                kdp_test_tree_mkdir(root, rel);
                free(rel);
                ck_assert_int_ge(asprintf(&rel, "kernel/iommu_groups/%s", d->iommu_group), 0);
                kdp_test_pci_sys_link(root, d, "iommu_group", rel);
                free(rel);
        }
        if (d->physfn) {
                char *parent = strdup(d->path), *slash;

                ck_assert_ptr_nonnull(parent);
                slash = strrchr(parent, '/');
                ck_assert_ptr_nonnull(slash);
                *slash = '\0';
                ck_assert_int_ge(asprintf(&target, "../%s", d->physfn), 0);
                rel = kdp_test_pci_rel(d, "physfn");
                kdp_test_tree_link(root, rel, target);
                free(rel);
                free(target);
                ck_assert_int_ge(asprintf(&rel, "sys/devices/%s/%s/virtfn%d", parent, d->physfn, d->vf_index), 0);
                ck_assert_int_ge(asprintf(&target, "../%s", address), 0);
                kdp_test_tree_link(root, rel, target);
                free(rel);
                free(target);
                free(parent);
        }
}
