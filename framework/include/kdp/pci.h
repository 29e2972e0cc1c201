/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * PCI discovery for backends: libpci's sysfs method, always under the
 * configured sysfs root (--sysfs-root), plus the sysfs facts libpci does not
 * fill (SR-IOV, the PCI path from the host bridge down).
 *
 * libpci's default error handler exits the process; libkdp installs one that
 * jumps back to the scan, so a device that vanishes mid-scan, a device
 * directory without `vendor`, or an entry that is no PCI address is skipped
 * with a warning and the scan goes on. The list names each PCI function it
 * skipped, with the reason (kdp_pci_list_skipped_get()), so a backend can
 * declare it not served (kdp_device_tree_not_served()).
 *
 * Warnings about skipped entries. Through a backend's ctx (kdp_pci_list_scan(),
 * kdp_pci_children(), and kdp_subsystem_enumerate()) each is written once per
 * backend, with its backend="..." field, when the entry is first skipped (or
 * skipped for another reason), and an info line follows once when that ends:
 *
 *   W... pci.c:...] "Skipped PCI device" backend="gpu" pciAddress="0000:3a:05.0" reason="Cannot open ..."
 *   I... pci.c:...] "PCI device no longer skipped" backend="gpu" pciAddress="0000:3a:05.0"
 *                   (or "Skipped PCI device is gone" when its entry went away)
 *
 * so re-reading the list on every scan repeats nothing. kdp_pci_list_scan_root()
 * has no backend to remember for: it writes every warning, every time.
 *
 * A kdp_pci_list is a snapshot: plain values, sorted by address, owned by the
 * list; nothing in it changes when the hardware does.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kdp/backend.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "dddd:bb:dd.f", with up to 8 hex digits of domain (VMD, Hyper-V) and the NUL */
#define KDP_PCI_ADDRESS_MAX 20

typedef struct kdp_pci_device {
        char address[KDP_PCI_ADDRESS_MAX];
        uint16_t vendor_id;
        uint16_t device_id;
        uint16_t subsystem_vendor_id;           /* 0 when the file is absent */
        uint16_t subsystem_device_id;
        uint32_t class_code;                    /* 24 bits: base class, sub-class, prog-if */
        char driver[64];                        /* bound driver's name; "" when unbound */
        int numa_node;                          /* -1: no affinity */
        int iommu_group;                        /* -1: no IOMMU group */
        int sriov_totalvfs;                     /* -1: not SR-IOV capable */
        int sriov_numvfs;                       /* VFs enabled now (0 when not capable) */
        char physfn[KDP_PCI_ADDRESS_MAX];       /* the PF of a VF; "" otherwise */
        char parent[KDP_PCI_ADDRESS_MAX];       /* the upstream bridge; "" below a host bridge */
        char path[256];                         /* "pci0000:3a/0000:3a:00.0/0000:3b:00.0" */
        bool is_bridge;                         /* class 0x0604xx */
        /* after the fields above, whose offsets backends built against earlier headers use */
        bool numa_node_absent;                  /* no numa_node file (numa_node is -1): see kdp_pci_numa_node() */
} kdp_pci_device;

typedef struct kdp_pci_list kdp_pci_list;

/*
 * Scans every PCI device under the ctx's sysfs root. -ENOENT without a PCI bus
 * there. Threads: the ctx's backend's hooks (it updates the ctx's record of
 * what was warned about).
 */
int kdp_pci_list_scan(const kdp_backend_ctx *ctx, kdp_pci_list **ret);
/* The same for an explicit root ("/sys", a fixture tree). */
int kdp_pci_list_scan_root(const char *sysfs_root, kdp_pci_list **ret);
kdp_pci_list *kdp_pci_list_free(kdp_pci_list *l);

size_t kdp_pci_list_size(const kdp_pci_list *l);
const kdp_pci_device *kdp_pci_list_get(const kdp_pci_list *l, size_t i);
/* `address` is compared by value: "0000:3B:00.0" finds 0000:3b:00.0. NULL if absent or not an address. */
const kdp_pci_device *kdp_pci_list_find(const kdp_pci_list *l, const char *address);

/*
 * The NUMA node a backend should record for a function it recorded before as `known` (-1 if
 * never): the node read now, except when the numa_node file is absent. The kernel removes a
 * function's attributes before its directory, so a scan in the middle of a hot-unplug can find
 * the function without the file; its node has not changed, and a device kept after the unplug
 * must keep the topology a kdpd started on the final node advertises for its peers. A kernel
 * without CONFIG_NUMA has no such file at all: `known` is -1 there. A file that reads -1 is taken.
 */
static inline int kdp_pci_numa_node(const kdp_pci_device *p, int known) {
        return p->numa_node_absent ? known : p->numa_node;
}

/*
 * A PCI list a backend keeps between its scans and reads again only when it may have changed:
 * after a pci event that adds, removes, binds or unbinds a function (the backend's device_event
 * sets `dirty`), or once the list is `max_age_ms` old on the backend's clock
 * (kdp_backend_now_usec()), for what sends no event. The scans in between read each function's
 * own files only.
 */
typedef struct kdp_pci_list_cache {
        kdp_pci_list *list;                     /* as last read; NULL before that and without a PCI bus */
        bool dirty;                             /* set by the backend: read again at the next refresh */
        bool listed;                            /* read at least once */
        uint64_t listed_ms;                     /* when, on the backend's clock */
} kdp_pci_list_cache;

/*
 * Reads the list again (kdp_pci_list_scan()) when it is due as above; a node without a PCI bus
 * has the empty list (NULL). 0, or the scan's negative errno with the previous list kept.
 */
int kdp_pci_list_cache_refresh(const kdp_backend_ctx *ctx, kdp_pci_list_cache *c, uint32_t max_age_ms);
/* Frees the list: the cache is as new. */
void kdp_pci_list_cache_done(kdp_pci_list_cache *c);

/*
 * A PCI function the scan skipped: its entry in <sysfs root>/bus/pci/devices/
 * is a PCI address, but the function could not be read (its directory is
 * gone or unreadable, libpci failed on it, a file is missing or malformed).
 * `reason` is one line for operators, short enough for
 * kdp_device_tree_not_served(). vendor_id and device_id are 0 when they were
 * not read (libpci failed before them).
 */
typedef struct kdp_pci_skipped {
        char address[KDP_PCI_ADDRESS_MAX];
        uint16_t vendor_id;
        uint16_t device_id;
        char reason[KDP_NOT_SERVED_REASON_MAX + 1];
} kdp_pci_skipped;

/*
 * The functions skipped, in address order. Entries that are no PCI address are
 * not among them, nor is a function whose entry vanished mid-scan (its link
 * dangles: it is being removed); those are only warned about.
 */
size_t kdp_pci_list_skipped_size(const kdp_pci_list *l);
const kdp_pci_skipped *kdp_pci_list_skipped_get(const kdp_pci_list *l, size_t i);

/*
 * Reads <sysfs root>/bus/pci/devices/<address>/<attr>, without the trailing
 * newline, into *ret (free()). -ENOENT when the device or the file is gone;
 * -EINVAL unless `address` is a PCI address as the kernel prints it and `attr`
 * a relative path without "..".
 */
int kdp_pci_read_attr(const kdp_backend_ctx *ctx, const char *address, const char *attr, char **ret);

/*
 * The class devices below a PCI device whose sysfs class is `subsystem`
 * (e.g. "drm" → card1, renderD128; "net" → ens1f0; "infiniband_verbs" →
 * uverbs0), sorted by name in version order (card2 before card10), found in
 * sysfs under the configured root.
 * devnode is the host path under the dev root (from the child's uevent
 * DEVNAME), "" for devices without a node (net).
 *
 * A device without such class devices (no <address>/<subsystem>/ directory)
 * gives *ret NULL and *ret_n 0; -ENOENT when the PCI device itself is gone.
 * A class device whose name or node path does not fit is skipped with a
 * warning, once per backend while that lasts (see above).
 */
typedef struct kdp_pci_child {
        char name[64];
        char devnode[256];
} kdp_pci_child;

int kdp_pci_children(const kdp_backend_ctx *ctx, const char *address, const char *subsystem,
                     kdp_pci_child **ret, size_t *ret_n);

#ifdef __cplusplus
}
#endif
