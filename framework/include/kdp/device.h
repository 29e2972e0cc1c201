/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The device model a backend fills during scan().
 *
 * A scan builds a complete snapshot: every resource the backend serves and
 * every device of it. The framework copies all it is given (strings and arrays
 * are borrowed only for the duration of the call), diffs the snapshot against
 * the previous one and streams it to the kubelet.
 *
 * Arrays in kdp_device_info are terminated by an all-zero element, so they can
 * be written as compound literals:
 *
 *   kdp_device_tree_add(tree, "example.com/widget", &(kdp_device_info){
 *           .id = "widget-0",
 *           .health = KDP_HEALTHY,
 *           .numa_nodes = { 0 }, .n_numa_nodes = 1,
 *           .dev_nodes = (const kdp_dev_node[]){ { .host_path = "/dev/widget0" }, { 0 } },
 *           .envs = (const kdp_kv[]){ { "WIDGET", "0" }, { 0 } },
 *   });
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The kubelet's limit on a device ID (api.proto). */
#define KDP_DEVICE_ID_MAX 63
/* NUMA nodes one device may report. */
#define KDP_DEVICE_NUMA_MAX 8

typedef enum kdp_health {
        KDP_HEALTHY,
        KDP_UNHEALTHY,
        _KDP_HEALTH_MAX,
        _KDP_HEALTH_INVALID = -EINVAL,
} kdp_health;

/* A device node passed into the container (DeviceSpec). */
typedef struct kdp_dev_node {
        const char *host_path;          /* required, absolute */
        const char *container_path;     /* NULL: same as host_path */
        const char *permissions;        /* subset of "rwm"; NULL: "rw" */
} kdp_dev_node;

/* A bind mount into the container. */
typedef struct kdp_mount {
        const char *host_path;          /* required, absolute */
        const char *container_path;     /* NULL: same as host_path */
        int read_only;
} kdp_mount;

typedef struct kdp_kv {
        const char *key;
        const char *value;
} kdp_kv;

typedef struct kdp_device_info {
        const char *id;                 /* required; 1..63 printable characters, unique per resource */
        kdp_health health;
        const char *health_reason;      /* why Unhealthy; logged when it turns Unhealthy and when the reason changes */
        int numa_nodes[KDP_DEVICE_NUMA_MAX];
        unsigned n_numa_nodes;          /* 0: no NUMA affinity (sysfs numa_node -1) */
        const char *pci_address;        /* "0000:3b:00.0"; the framework derives PCI locality from it */
        const kdp_dev_node *dev_nodes;  /* { 0 }-terminated, may be NULL */
        const kdp_mount *mounts;        /* { 0 }-terminated, may be NULL */
        const kdp_kv *envs;             /* { 0 }-terminated; merged over all allocated devices */
        const kdp_kv *annotations;      /* { 0 }-terminated */
        const char *const *cdi_devices; /* NULL-terminated fully qualified names "vendor.com/class=name" */
} kdp_device_info;

typedef struct kdp_device_tree kdp_device_tree;

/*
 * Declares a resource even when it has no device now, so the kubelet keeps
 * seeing it (with capacity 0) instead of forgetting it.
 * Returns 0, -EINVAL for a name the kubelet would refuse (docs/kubelet.md §1.3),
 * -ENOMEM.
 */
int kdp_device_tree_add_resource(kdp_device_tree *tree, const char *resource);

/*
 * Whether the kubelet takes `name` as an extended resource name, "<domain>/<name>"
 * (docs/kubelet.md §1.3: IsExtendedResourceName).
 */
bool kdp_device_resource_name_is_valid(const char *name);

/*
 * Adds one device to `resource` (declared on first use).
 * Returns 0; -EINVAL for an invalid resource name, an empty, over-long or
 * non-printable ID, a bad health value, a relative path, a bad CDI name or a
 * negative NUMA node; -EEXIST when the ID is already in the resource; -ENOMEM.
 * A rejected device is not added; the rest of the scan goes on.
 */
int kdp_device_tree_add(kdp_device_tree *tree, const char *resource, const kdp_device_info *info);

/* The longest reason kdp_device_tree_not_served() keeps, in bytes; a longer one is cut. */
#define KDP_NOT_SERVED_REASON_MAX 255

/*
 * Declares a device that scan() looked at and does not serve, and why (a GPU
 * bound to another driver, filtered out by the config, whose driver files are
 * missing or malformed, ...). Nothing a backend skips should be skipped
 * silently: kdpd logs each such device once at info level (any --v), when it
 * first appears, when its reason changes and when it is served or gone, never
 * on a scan where nothing changed, and lists the current set for
 * `kdpctl not-served` (a file in kdpd's --state-dir).
 *
 * `address` names the device across scans: its PCI address ("0000:3b:00.0")
 * where it has one, else another stable name (a sysfs name); 1..63 printable
 * characters without spaces. `reason` is one line of text for operators; it
 * is cut at KDP_NOT_SERVED_REASON_MAX bytes and control characters become
 * spaces. Both are borrowed for the call (the tree copies them).
 *
 * Threads: only from scan(), with the tree scan() was given (the loop thread,
 * under the backend's lock). A device the framework itself refuses
 * (kdp_device_tree_add() failing) lands in the same set under its pci_address
 * (else its ID). A second call for an address already in the set keeps the
 * first reason and returns 0. A device declared here and also added is
 * reported as both.
 *
 * Returns 0; -EINVAL for a NULL tree, an invalid address or an empty reason;
 * -ENOMEM.
 */
int kdp_device_tree_not_served(kdp_device_tree *tree, const char *address, const char *reason);

#ifdef __cplusplus
}
#endif
