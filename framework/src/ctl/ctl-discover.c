/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `kdpctl discover` (see ctl-discover.h).
 *
 * The tree comes from each device's parent (the upstream bridge in its sysfs
 * path): devices whose parent is not in the list (below a host bridge, behind
 * a VMD domain) are roots, and siblings go in address order. VFs sit next to
 * their PF, under the same bridge, as they do in sysfs. A parent cycle (only
 * a crafted tree can have one) is broken where it is first met.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <kdp/cleanup.h>

#include "ctl-discover.h"

#define NONE SIZE_MAX
#define INDENT 2

typedef struct tree {
        size_t n;
        size_t *first_child;            /* the children of i, descending: first_child[i], next_sibling[...] */
        size_t *next_sibling;
        size_t *order;                  /* the print order: depth-first, siblings ascending */
        size_t *depth;                  /* by position in order */
        size_t n_order;
        size_t *stack, *stack_depth;    /* the walk's to-do list */
        bool *seen;
} tree;

static void tree_done(tree *t) {
        free(t->first_child);
        free(t->next_sibling);
        free(t->order);
        free(t->depth);
        free(t->stack);
        free(t->stack_depth);
        free(t->seen);
}

/* Appends `root` and everything below it not yet printed to the order. */
static void tree_walk(tree *t, size_t root) {
        size_t top = 0;

        if (t->seen[root])
                return;
        t->seen[root] = true;
        t->stack[top] = root;
        t->stack_depth[top++] = 0;

        while (top > 0) {
                size_t i, d;

                top--;
                i = t->stack[top];
                d = t->stack_depth[top];

                t->order[t->n_order] = i;
                t->depth[t->n_order++] = d;
                /* children are listed descending, so they come off the stack ascending */
                for (size_t c = t->first_child[i]; c != NONE; c = t->next_sibling[c]) {
                        if (t->seen[c])
                                continue;
                        t->seen[c] = true;
                        t->stack[top] = c;
                        t->stack_depth[top++] = d + 1;
                }
        }
}

static int tree_build(const kdp_pci_list *l, tree *t) {
        const kdp_pci_device *first = kdp_pci_list_get(l, 0);
        size_t n = kdp_pci_list_size(l);

        *t = (tree){ .n = n };
        if (n == 0)
                return 0;
        t->first_child = malloc(n * sizeof(size_t));
        t->next_sibling = malloc(n * sizeof(size_t));
        t->order = malloc(n * sizeof(size_t));
        t->depth = malloc(n * sizeof(size_t));
        t->stack = malloc(n * sizeof(size_t));
        t->stack_depth = malloc(n * sizeof(size_t));
        t->seen = calloc(n, sizeof(bool));
        if (!t->first_child || !t->next_sibling || !t->order || !t->depth || !t->stack || !t->stack_depth ||
            !t->seen)
                return -ENOMEM;

        for (size_t i = 0; i < n; i++)
                t->first_child[i] = t->next_sibling[i] = NONE;
        /* ascending i, each put first: every child list ends up descending */
        for (size_t i = 0; i < n; i++) {
                const kdp_pci_device *p = kdp_pci_list_find(l, kdp_pci_list_get(l, i)->parent);
                size_t pi;

                if (!p)
                        continue;
                pi = (size_t) (p - first);
                t->next_sibling[i] = t->first_child[pi];
                t->first_child[pi] = i;
        }

        for (size_t i = 0; i < n; i++) {
                const kdp_pci_device *d = kdp_pci_list_get(l, i);

                if (!kdp_pci_list_find(l, d->parent))
                        tree_walk(t, i);
        }
        for (size_t i = 0; i < n; i++)          /* what a cycle kept from the roots */
                tree_walk(t, i);
        return 0;
}

static void print_row(FILE *out, size_t depth, int address_width, const char *address, const char *id,
                      const char *class_code, int driver_width, const char *driver, const char *numa,
                      const char *iommu, const char *sriov) {
        char line[512];
        size_t len;

        (void) snprintf(line, sizeof(line), "%*s%-*s  %-9s  %-6s  %-*s  %-4s  %-5s  %s", (int) (depth * INDENT), "",
                        address_width - (int) (depth * INDENT), address, id, class_code, driver_width, driver, numa,
                        iommu, sriov);
        len = strlen(line);
        while (len > 0 && line[len - 1] == ' ')
                len--;
        line[len] = '\0';
        fprintf(out, "%s\n", line);
}

int kdp_ctl_discover_print(FILE *out, const kdp_pci_list *l) {
        _cleanup_(tree_done) tree t = { 0 };
        int address_width = (int) strlen("ADDRESS"), driver_width = (int) strlen("DRIVER");
        int r;

        r = tree_build(l, &t);
        if (r < 0)
                return r;

        for (size_t k = 0; k < t.n_order; k++) {
                const kdp_pci_device *d = kdp_pci_list_get(l, t.order[k]);
                int w = (int) (t.depth[k] * INDENT + strlen(d->address));

                if (w > address_width)
                        address_width = w;
                if ((int) strlen(d->driver) > driver_width)
                        driver_width = (int) strlen(d->driver);
        }

        print_row(out, 0, address_width, "ADDRESS", "ID", "CLASS", driver_width, "DRIVER", "NUMA", "IOMMU", "SRIOV");
        for (size_t k = 0; k < t.n_order; k++) {
                const kdp_pci_device *d = kdp_pci_list_get(l, t.order[k]);
                char id[16], class_code[16], numa[16] = "-", iommu[16] = "-", sriov[48] = "";

                (void) snprintf(id, sizeof(id), "%04x:%04x", d->vendor_id, d->device_id);
                (void) snprintf(class_code, sizeof(class_code), "%06x", (unsigned) d->class_code);
                if (d->numa_node >= 0)
                        (void) snprintf(numa, sizeof(numa), "%d", d->numa_node);
                if (d->iommu_group >= 0)
                        (void) snprintf(iommu, sizeof(iommu), "%d", d->iommu_group);
                if (d->physfn[0])
                        (void) snprintf(sriov, sizeof(sriov), "pf=%s", d->physfn);
                else if (d->sriov_totalvfs >= 0)
                        (void) snprintf(sriov, sizeof(sriov), "vfs=%d/%d", d->sriov_numvfs, d->sriov_totalvfs);
                print_row(out, t.depth[k], address_width, d->address, id, class_code, driver_width,
                          d->driver[0] ? d->driver : "-", numa, iommu, sriov);
        }
        return 0;
}

KDP_DEFINE_CLEANUP_FUNC(kdp_pci_list, kdp_pci_list_free)

int kdp_ctl_discover_run(const char *sysfs_root) {
        _cleanup_(kdp_pci_list_freep) kdp_pci_list *l = NULL;
        int r;

        r = kdp_pci_list_scan_root(sysfs_root, &l);
        if (r == -ENOENT) {
                fprintf(stderr, "error: no PCI bus under %s (%s/bus/pci/devices is missing)\n", sysfs_root,
                        sysfs_root);
                return 1;
        }
        if (r < 0) {
                fprintf(stderr, "error: scanning %s: %s\n", sysfs_root, strerror(-r));
                return 1;
        }
        r = kdp_ctl_discover_print(stdout, l);
        if (r < 0) {
                fprintf(stderr, "error: %s\n", strerror(-r));
                return 1;
        }
        if (fflush(stdout) != 0 || ferror(stdout)) {
                fprintf(stderr, "error: writing the tree: %s\n", strerror(errno));
                return 1;
        }
        return 0;
}
