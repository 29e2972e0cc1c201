/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libkdp internal: the tree a backend's scan() fills (public API in
 * <kdp/device.h>). The daemon creates it, lets the backend fill it, calls
 * kdp_device_tree_finish() and then moves each resource's list out.
 */
#pragma once

#include <stdint.h>

#include "device.h"

/*
 * What one scan found that is not a device served: each is a condition kdpd
 * logs when it starts, changes and ends (daemon/conditions.c), never again
 * while it holds. A note is identified by its kind and key.
 */
typedef enum kdp_tree_note_kind {
        KDP_TREE_NOTE_NOT_SERVED,       /* key: the device's address; text: why it is not served */
        KDP_TREE_NOTE_BAD_RESOURCE,     /* key: a resource name kdp_device_tree_add_resource() refused */
        KDP_TREE_NOTE_MIXED_TOPOLOGY,   /* key: a resource whose NUMA affinity was dropped; counts */
        KDP_TREE_NOTE_REFUSED_RESOURCE, /* key: a resource another backend serves; text: that backend */
        _KDP_TREE_NOTE_KIND_MAX,
        _KDP_TREE_NOTE_KIND_INVALID = -EINVAL,
} kdp_tree_note_kind;

typedef struct kdp_tree_note {
        kdp_tree_note_kind kind;
        char *key;                      /* owned; printable, no spaces, at most 320 characters */
        char *text;                     /* owned; one line, may be "" */
        int64_t with, without;          /* MIXED_TOPOLOGY: devices with and without NUMA affinity */
} kdp_tree_note;

struct kdp_device_tree {
        char *sysfs_root;               /* owned; NULL: pci_path not resolved */
        kdp_device_list *resources;
        size_t n_resources;
        unsigned n_rejected;            /* devices refused by kdp_device_tree_add() */
        kdp_tree_note *notes;           /* in the order they were made; at most one per kind and key */
        size_t n_notes;
};

int kdp_device_tree_new(const char *sysfs_root, kdp_device_tree **ret);
kdp_device_tree *kdp_device_tree_free(kdp_device_tree *t);
KDP_DEFINE_CLEANUP_FUNC(kdp_device_tree, kdp_device_tree_free)

/*
 * Sorts every resource by ID. A resource that mixes devices with and without
 * NUMA affinity loses the affinity of all of them (docs/kubelet.md §7) and gets a
 * MIXED_TOPOLOGY note; a duplicate ID dropped here gets a NOT_SERVED note.
 */
void kdp_device_tree_finish(kdp_device_tree *t);
/* NULL if the resource was not declared. */
kdp_device_list *kdp_device_tree_find(kdp_device_tree *t, const char *resource);

/*
 * Adds a note; `key` (NULL or "": "-") is cut to 320 characters and made printable
 * (a space or control character becomes '_'), `text` (NULL: "") to
 * KDP_NOT_SERVED_REASON_MAX bytes on one line. A second note of the same kind
 * and key is dropped (the first stays). 0 or -ENOMEM.
 */
int kdp_device_tree_note(kdp_device_tree *t, kdp_tree_note_kind kind, const char *key, const char *text,
                         int64_t with, int64_t without);
void kdp_device_tree_note_done(kdp_tree_note *n);
/* Orders notes by kind, then key (strcmp); for qsort() and bsearch(). */
int kdp_device_tree_note_compare(const void *a, const void *b);
