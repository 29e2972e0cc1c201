/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libkdp internal: the tree a backend's scan() fills (public API in
 * <kdp/device.h>). The daemon creates it, lets the backend fill it, calls
 * kdp_device_tree_finish() and then moves each resource's list out.
 */
#pragma once

#include "device.h"

struct kdp_device_tree {
        char *sysfs_root;               /* owned; NULL: pci_path not resolved */
        kdp_device_list *resources;
        size_t n_resources;
        unsigned n_rejected;            /* devices refused by kdp_device_tree_add() */
};

int kdp_device_tree_new(const char *sysfs_root, kdp_device_tree **ret);
kdp_device_tree *kdp_device_tree_free(kdp_device_tree *t);
KDP_DEFINE_CLEANUP_FUNC(kdp_device_tree, kdp_device_tree_free)

/*
 * Sorts every resource by ID. A resource that mixes devices with and without
 * NUMA affinity loses the affinity of all of them (KUBELET.md §7), logged once.
 */
void kdp_device_tree_finish(kdp_device_tree *t);
/* NULL if the resource was not declared. */
kdp_device_list *kdp_device_tree_find(kdp_device_tree *t, const char *resource);
