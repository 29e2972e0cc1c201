/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libkdp internal: the framework's own copy of a device record (kdp_device),
 * made from a backend's kdp_device_info, and sorted per-resource lists of them.
 *
 * A kdp_device owns every string it points to. kdp_device_from_info() lays
 * them out in one heap block (arrays first, then strings) so a table of
 * thousands of devices costs one allocation per device; health_reason stays
 * a separate string because the daemon rewrites it (probes, hysteresis). Defaults are resolved at copy
 * time: dev_nodes[].container_path and .permissions and mounts[].container_path
 * are never NULL. pci_path is the device's sysfs path below "devices/" with the
 * host bridge first ("pci0000:3a/0000:3a:00.0/0000:3b:00.0"), resolved under the
 * sysfs root from pci_address, or NULL when there is no such PCI device.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <kdp/cleanup.h>
#include <kdp/device.h>

typedef struct kdp_device {
        char *id;
        kdp_health health;
        char *health_reason;            /* NULL when healthy or unexplained */
        int numa_nodes[KDP_DEVICE_NUMA_MAX];
        unsigned n_numa_nodes;
        char *pci_address;
        char *pci_path;
        kdp_dev_node *dev_nodes;        /* strings owned (cast away const) */
        size_t n_dev_nodes;
        kdp_mount *mounts;
        size_t n_mounts;
        kdp_kv *envs;
        size_t n_envs;
        kdp_kv *annotations;
        size_t n_annotations;
        char **cdi_devices;
        size_t n_cdi_devices;
        void *block;                    /* when set, everything above but health_reason lives in it */
} kdp_device;

/*
 * All devices of one resource; sorted by ID (strcmp) after kdp_device_list_sort().
 * While a scan appends, a hash of the IDs finds duplicates in O(1), so
 * building a list of n devices costs O(n log n) whatever the order.
 */
typedef struct kdp_device_list {
        char *resource;
        kdp_device *devices;
        size_t n_devices;
        size_t n_allocated;
        size_t *id_slots;               /* open addressing: device index + 1, 0 = free */
        size_t n_id_slots;              /* a power of two, or 0 */
        bool unsorted;                  /* appended out of order since the last sort */
} kdp_device_list;

/*
 * Validates `info` and deep-copies it into *ret. `sysfs_root` (may be NULL)
 * resolves pci_path. Returns 0 or the errors listed at kdp_device_tree_add().
 */
int kdp_device_from_info(const kdp_device_info *info, const char *sysfs_root, kdp_device *ret);
/* Why kdp_device_from_info() last refused a record on this thread (a static string), then NULL. */
const char *kdp_device_take_rejection(void);
void kdp_device_done(kdp_device *d);
/* Deep equality of everything the kubelet or Allocate can see. */
bool kdp_device_equal(const kdp_device *a, const kdp_device *b);
/* True if the device reports NUMA affinity. */
bool kdp_device_has_topology(const kdp_device *d);

/* "vendor.com/class=name" as the CDI spec and the kubelet want it. */
bool kdp_device_cdi_name_is_valid(const char *name);
/* 1..63 printable ASCII characters, no spaces. */
bool kdp_device_id_is_valid(const char *id);

int kdp_device_list_init(kdp_device_list *l, const char *resource);
void kdp_device_list_done(kdp_device_list *l);
/* Appends (moves) *d; -EEXIST if the ID is present (then *d is untouched). */
int kdp_device_list_append(kdp_device_list *l, kdp_device *d);
void kdp_device_list_sort(kdp_device_list *l);
/* Binary search in a sorted list; NULL if absent. */
const kdp_device *kdp_device_list_find(const kdp_device_list *l, const char *id);
/* True if both lists hold equal devices in the same order. */
bool kdp_device_list_equal(const kdp_device_list *a, const kdp_device_list *b);
