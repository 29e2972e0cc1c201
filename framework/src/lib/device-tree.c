/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The device tree a backend's scan() fills: resources in the order they were
 * declared, each with a device list kept sorted by ID (see device.c).
 *
 * A device that kdp_device_tree_add() refuses is counted in n_rejected and
 * logged as a warning naming the resource, the device and the error; the scan
 * goes on. A pointer from kdp_device_tree_find() stays valid until the next
 * resource is declared.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <kdp/log.h>

#include "device-tree.h"

int kdp_device_tree_new(const char *sysfs_root, kdp_device_tree **ret) {
        _cleanup_(kdp_device_tree_freep) kdp_device_tree *t = NULL;

        assert(ret);

        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        if (sysfs_root) {
                t->sysfs_root = strdup(sysfs_root);
                if (!t->sysfs_root)
                        return -ENOMEM;
        }

        *ret = KDP_TAKE_PTR(t);
        return 0;
}

kdp_device_tree *kdp_device_tree_free(kdp_device_tree *t) {
        if (!t)
                return NULL;

        for (size_t i = 0; i < t->n_resources; i++)
                kdp_device_list_done(&t->resources[i]);
        free(t->resources);
        free(t->sysfs_root);
        free(t);
        return NULL;
}

kdp_device_list *kdp_device_tree_find(kdp_device_tree *t, const char *resource) {
        if (!t || !resource)
                return NULL;

        for (size_t i = 0; i < t->n_resources; i++)
                if (strcmp(t->resources[i].resource, resource) == 0)
                        return &t->resources[i];
        return NULL;
}

/* Returns the list of a valid `resource`, declaring it when new. */
static int tree_declare(kdp_device_tree *t, const char *resource, kdp_device_list **ret) {
        kdp_device_list *l;
        int r;

        l = kdp_device_tree_find(t, resource);
        if (l) {
                *ret = l;
                return 0;
        }

        if (t->n_resources >= SIZE_MAX / sizeof(kdp_device_list) - 1)
                return -ENOMEM;
        l = realloc(t->resources, (t->n_resources + 1) * sizeof(kdp_device_list));
        if (!l)
                return -ENOMEM;
        t->resources = l;

        l = &t->resources[t->n_resources];
        r = kdp_device_list_init(l, resource);
        if (r < 0)
                return r;
        t->n_resources++;

        *ret = l;
        return 0;
}

int kdp_device_tree_add_resource(kdp_device_tree *tree, const char *resource) {
        kdp_device_list *l;

        if (!tree)
                return -EINVAL;
        if (!kdp_device_resource_name_is_valid(resource))
                return kdp_log_warning_errno(-EINVAL, "Rejected resource", KDP_F_STR("resource", resource));

        return tree_declare(tree, resource, &l);
}

/* *ret_reason says why, for the warning, when the answer is a refusal. */
static int tree_add(kdp_device_tree *t, const char *resource, const kdp_device_info *info, const char **ret_reason) {
        _cleanup_(kdp_device_done) kdp_device d = {};
        kdp_device_list *l;
        int r;

        if (!kdp_device_resource_name_is_valid(resource)) {
                *ret_reason = "resource name is not <domain>/<name>";
                return -EINVAL;
        }
        if (!info) {
                *ret_reason = "no device record";
                return -EINVAL;
        }

        /* the resource is declared even when its device is refused, so it is not lost */
        r = tree_declare(t, resource, &l);
        if (r < 0)
                return r;

        (void) kdp_device_take_rejection();
        r = kdp_device_from_info(info, t->sysfs_root, &d);
        if (r < 0) {
                *ret_reason = kdp_device_take_rejection();
                return r;
        }

        r = kdp_device_list_append(l, &d);
        if (r == -EEXIST)
                *ret_reason = "ID already in the resource";
        return r;
}

int kdp_device_tree_add(kdp_device_tree *tree, const char *resource, const kdp_device_info *info) {
        const char *reason = NULL;
        int r;

        if (!tree)
                return -EINVAL;

        r = tree_add(tree, resource, info, &reason);
        if (r < 0) {
                tree->n_rejected++;
                kdp_log_warning_errno(r, "Rejected device", KDP_F_STR("resource", resource),
                                      KDP_F_STR("device", info ? info->id : NULL),
                                      KDP_F_STR("reason", reason ? reason : "out of memory"));
        }
        return r;
}

/* Drops the second and later of equal IDs in a sorted list (only lists not built by append() have them). */
static void list_drop_duplicates(kdp_device_tree *t, kdp_device_list *l) {
        size_t n = 0;

        for (size_t i = 0; i < l->n_devices; i++) {
                if (n > 0 && strcmp(l->devices[n - 1].id, l->devices[i].id) == 0) {
                        t->n_rejected++;
                        kdp_log_warning_errno(-EEXIST, "Rejected device", KDP_F_STR("resource", l->resource),
                                              KDP_F_STR("device", l->devices[i].id));
                        kdp_device_done(&l->devices[i]);
                        continue;
                }
                if (n != i)
                        l->devices[n] = l->devices[i];
                n++;
        }
        l->n_devices = n;
}

/* KUBELET.md §7: a resource whose devices do not all report NUMA affinity reports none. */
static void list_fix_topology(kdp_device_list *l) {
        size_t with = 0;

        for (size_t i = 0; i < l->n_devices; i++)
                if (kdp_device_has_topology(&l->devices[i]))
                        with++;
        if (with == 0 || with == l->n_devices)
                return;

        for (size_t i = 0; i < l->n_devices; i++) {
                l->devices[i].n_numa_nodes = 0;
                memset(l->devices[i].numa_nodes, 0, sizeof(l->devices[i].numa_nodes));
        }
        kdp_log_warning("Dropped NUMA affinity of a resource that mixes devices with and without it",
                        KDP_F_STR("resource", l->resource), KDP_F_INT("withTopology", with),
                        KDP_F_INT("withoutTopology", l->n_devices - with));
}

void kdp_device_tree_finish(kdp_device_tree *t) {
        assert(t);

        for (size_t i = 0; i < t->n_resources; i++) {
                kdp_device_list *l = &t->resources[i];

                kdp_device_list_sort(l);
                list_drop_duplicates(t, l);
                list_fix_topology(l);
        }
}
