/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The device tree a backend's scan() fills: resources in the order they were
 * declared, each with a device list kept sorted by ID (see device.c).
 *
 * A device that kdp_device_tree_add() refuses is counted in n_rejected and
 * becomes a NOT_SERVED note under its PCI address (else its ID) saying why;
 * the scan goes on. A refused resource name, a device a backend declares with
 * kdp_device_tree_not_served() and a resource whose NUMA affinity is dropped
 * become notes too. Nothing here logs: the daemon logs each note when it
 * starts, changes and ends (conditions.c), so a condition that holds scan
 * after scan is logged once. A pointer from kdp_device_tree_find() stays
 * valid until the next resource is declared.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device-tree.h"

/* Keys are device addresses or resource names (a DNS prefix of up to 253 characters, '/', 63). */
#define NOTE_KEY_MAX 320

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
        for (size_t i = 0; i < t->n_notes; i++)
                kdp_device_tree_note_done(&t->notes[i]);
        free(t->notes);
        free(t->sysfs_root);
        free(t);
        return NULL;
}

void kdp_device_tree_note_done(kdp_tree_note *n) {
        free(n->key);
        free(n->text);
        *n = (kdp_tree_note){ 0 };
}

int kdp_device_tree_note_compare(const void *a, const void *b) {
        const kdp_tree_note *x = a, *y = b;

        if (x->kind != y->kind)
                return x->kind < y->kind ? -1 : 1;
        return strcmp(x->key, y->key);
}

/* A copy of at most `max` bytes of `s` in which `bad` characters become `with`. */
static char *copy_clean(const char *s, size_t max, bool no_spaces, char with) {
        size_t n = strnlen(s, max);
        char *c = strndup(s, n);

        for (size_t i = 0; c && i < n; i++)
                if ((unsigned char) c[i] < 0x20 || c[i] == 0x7f || (no_spaces && c[i] == ' '))
                        c[i] = with;
        return c;
}

int kdp_device_tree_note(kdp_device_tree *t, kdp_tree_note_kind kind, const char *key, const char *text,
                         int64_t with, int64_t without) {
        kdp_tree_note n = { .kind = kind, .with = with, .without = without }, *v;

        assert(t);
        assert(kind >= 0 && kind < _KDP_TREE_NOTE_KIND_MAX);

        if (!key || !*key)
                key = "-";
        for (size_t i = 0; i < t->n_notes; i++)
                if (t->notes[i].kind == kind && strncmp(t->notes[i].key, key, NOTE_KEY_MAX) == 0 &&
                    strlen(t->notes[i].key) == strnlen(key, NOTE_KEY_MAX))
                        return 0;       /* the first reason stays */
        if (t->n_notes >= SIZE_MAX / sizeof(kdp_tree_note) - 1)
                return -ENOMEM;
        v = realloc(t->notes, (t->n_notes + 1) * sizeof(kdp_tree_note));
        if (!v)
                return -ENOMEM;
        t->notes = v;
        n.key = copy_clean(key, NOTE_KEY_MAX, true, '_');
        n.text = copy_clean(text ? text : "", KDP_NOT_SERVED_REASON_MAX, false, ' ');
        if (!n.key || !n.text) {
                kdp_device_tree_note_done(&n);
                return -ENOMEM;
        }
        t->notes[t->n_notes++] = n;
        return 0;
}

int kdp_device_tree_not_served(kdp_device_tree *tree, const char *address, const char *reason) {
        if (!tree || !kdp_device_id_is_valid(address) || !reason || !*reason)
                return -EINVAL;
        return kdp_device_tree_note(tree, KDP_TREE_NOTE_NOT_SERVED, address, reason, 0, 0);
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
        if (!kdp_device_resource_name_is_valid(resource)) {
                (void) kdp_device_tree_note(tree, KDP_TREE_NOTE_BAD_RESOURCE, resource,
                                            "not <domain>/<name> as the kubelet wants it", 0, 0);
                return -EINVAL;
        }

        return tree_declare(tree, resource, &l);
}

/* *ret_reason says why, for the note, when the answer is a refusal (static text). */
static int tree_add(kdp_device_tree *t, const char *resource, const kdp_device_info *info, const char **ret_reason,
                    kdp_device_list **ret_list) {
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
        *ret_list = l;

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

/* The name a refused device is noted under: its PCI address, else its ID. */
static const char *device_address(const char *pci_address, const char *id) {
        return pci_address && *pci_address ? pci_address : id;
}

/* Notes a device that kdp_device_tree_add() or finish refused: which one, and why (`holder`: a duplicate's). */
static void note_rejected(kdp_device_tree *t, const char *resource, const char *pci_address, const char *id,
                          const char *reason, const kdp_device *holder) {
        _cleanup_free_ char *text = NULL;
        int r;

        t->n_rejected++;
        if (holder && holder->pci_address && (!pci_address || strcmp(holder->pci_address, pci_address) != 0))
                r = asprintf(&text, "duplicate ID \"%s\" in %s: already served for %s", id, resource,
                             holder->pci_address);
        else if (holder)
                r = asprintf(&text, "duplicate ID \"%s\" in %s", id, resource);
        else
                r = asprintf(&text, "refused by kdpd for %s: %s", resource ? resource : "",
                             reason ? reason : "out of memory");
        if (r < 0)
                text = NULL;
        (void) kdp_device_tree_note(t, KDP_TREE_NOTE_NOT_SERVED, device_address(pci_address, id),
                                    text ? text : "refused by kdpd", 0, 0);
}

int kdp_device_tree_add(kdp_device_tree *tree, const char *resource, const kdp_device_info *info) {
        const char *reason = NULL;
        kdp_device_list *l = NULL;
        int r;

        if (!tree)
                return -EINVAL;

        r = tree_add(tree, resource, info, &reason, &l);
        if (r < 0 && info)
                note_rejected(tree, resource, info->pci_address, info->id, reason,
                              r == -EEXIST && l ? kdp_device_list_find(l, info->id) : NULL);
        else if (r < 0)
                tree->n_rejected++;
        return r;
}

/* Drops the second and later of equal IDs in a sorted list (only lists not built by append() have them). */
static void list_drop_duplicates(kdp_device_tree *t, kdp_device_list *l) {
        size_t n = 0;

        for (size_t i = 0; i < l->n_devices; i++) {
                if (n > 0 && strcmp(l->devices[n - 1].id, l->devices[i].id) == 0) {
                        note_rejected(t, l->resource, l->devices[i].pci_address, l->devices[i].id, NULL,
                                      &l->devices[n - 1]);
                        kdp_device_done(&l->devices[i]);
                        continue;
                }
                if (n != i)
                        l->devices[n] = l->devices[i];
                n++;
        }
        l->n_devices = n;
}

/* docs/kubelet.md §7: a resource whose devices do not all report NUMA affinity reports none. */
static void list_fix_topology(kdp_device_tree *t, kdp_device_list *l) {
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
        (void) kdp_device_tree_note(t, KDP_TREE_NOTE_MIXED_TOPOLOGY, l->resource, NULL, (int64_t) with,
                                    (int64_t) (l->n_devices - with));
}

void kdp_device_tree_finish(kdp_device_tree *t) {
        assert(t);

        for (size_t i = 0; i < t->n_resources; i++) {
                kdp_device_list *l = &t->resources[i];

                kdp_device_list_sort(l);
                list_drop_duplicates(t, l);
                list_fix_topology(t, l);
        }
}
