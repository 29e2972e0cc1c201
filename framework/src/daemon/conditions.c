/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Conditions of a backend's scans, diffed and logged at their transitions
 * (see conditions.h). The notes of one scan are sorted, then walked beside
 * the previous scan's: a note only in the new set started, one only in the
 * old set ended, one in both changed if its text or counts differ.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <kdp/log.h>

#include "conditions.h"

static bool note_changed(const kdp_tree_note *a, const kdp_tree_note *b) {
        return strcmp(a->text, b->text) != 0 || a->with != b->with || a->without != b->without;
}

static void log_started(const char *backend, const kdp_tree_note *n, const kdp_tree_note *was) {
        switch (n->kind) {
        case KDP_TREE_NOTE_NOT_SERVED:
                if (was)
                        kdp_log_info("Device not served, for another reason", KDP_F_STR("backend", backend),
                                     KDP_F_STR("address", n->key), KDP_F_STR("reason", n->text),
                                     KDP_F_STR("previousReason", was->text));
                else
                        kdp_log_info("Device not served", KDP_F_STR("backend", backend), KDP_F_STR("address", n->key),
                                     KDP_F_STR("reason", n->text));
                break;
        case KDP_TREE_NOTE_BAD_RESOURCE:
                kdp_log_warning_errno(-EINVAL, "Rejected resource", KDP_F_STR("backend", backend),
                                      KDP_F_STR("resource", n->key), KDP_F_STR("reason", n->text));
                break;
        case KDP_TREE_NOTE_MIXED_TOPOLOGY:
                kdp_log_warning("Dropped NUMA affinity of a resource that mixes devices with and without it",
                                KDP_F_STR("resource", n->key), KDP_F_INT("withTopology", n->with),
                                KDP_F_INT("withoutTopology", n->without));
                break;
        case KDP_TREE_NOTE_REFUSED_RESOURCE:
                kdp_log_error(-EEXIST, "Refused resource served by another backend", KDP_F_STR("resource", n->key),
                              KDP_F_STR("backend", backend), KDP_F_STR("servedBy", n->text));
                break;
        default:
                break;
        }
}

static void log_ended(const char *backend, const kdp_tree_note *n, kdp_conditions_served_fn served, void *userdata) {
        switch (n->kind) {
        case KDP_TREE_NOTE_NOT_SERVED:
                if (served && served(n->key, userdata))
                        kdp_log_info("Device served now", KDP_F_STR("backend", backend), KDP_F_STR("address", n->key),
                                     KDP_F_STR("previousReason", n->text));
                else
                        kdp_log_info("Device not served is gone", KDP_F_STR("backend", backend),
                                     KDP_F_STR("address", n->key), KDP_F_STR("previousReason", n->text));
                break;
        case KDP_TREE_NOTE_BAD_RESOURCE:
                kdp_log_info("Resource no longer rejected", KDP_F_STR("backend", backend), KDP_F_STR("resource", n->key));
                break;
        case KDP_TREE_NOTE_MIXED_TOPOLOGY:
                kdp_log_info("Resource no longer mixes devices with and without NUMA affinity",
                             KDP_F_STR("resource", n->key));
                break;
        case KDP_TREE_NOTE_REFUSED_RESOURCE:
                kdp_log_info("Resource no longer refused", KDP_F_STR("resource", n->key), KDP_F_STR("backend", backend));
                break;
        default:
                break;
        }
}

static void notes_free(kdp_tree_note *v, size_t n) {
        for (size_t i = 0; i < n; i++)
                kdp_device_tree_note_done(&v[i]);
        free(v);
}

int kdp_conditions_update(kdp_conditions *c, const char *backend, kdp_device_tree *tree,
                          kdp_conditions_served_fn served, void *userdata) {
        kdp_tree_note *next = tree->notes;
        size_t n_next = tree->n_notes, i = 0, j = 0;
        bool not_served_changed = false;

        tree->notes = NULL;
        tree->n_notes = 0;
        if (n_next > 1)
                qsort(next, n_next, sizeof(*next), kdp_device_tree_note_compare);
        while (i < c->n || j < n_next) {
                int cmp = i >= c->n ? 1 : j >= n_next ? -1 : kdp_device_tree_note_compare(&c->notes[i], &next[j]);
                const kdp_tree_note *changed = NULL;

                if (cmp < 0)
                        log_ended(backend, &c->notes[i], served, userdata);
                else if (cmp > 0)
                        log_started(backend, &next[j], NULL);
                else if (note_changed(&c->notes[i], &next[j]))
                        log_started(backend, &next[j], changed = &c->notes[i]);
                if ((cmp != 0 || changed) &&
                    (cmp < 0 ? c->notes[i].kind : next[j].kind) == KDP_TREE_NOTE_NOT_SERVED)
                        not_served_changed = true;
                if (cmp <= 0)
                        i++;
                if (cmp >= 0)
                        j++;
        }
        notes_free(c->notes, c->n);
        c->notes = next;
        c->n = n_next;
        return not_served_changed;
}

int kdp_conditions_not_served(const kdp_conditions *c, kdp_not_served_entry **ret, size_t *ret_n) {
        kdp_not_served_entry *v = calloc(c->n + 1, sizeof(*v));
        size_t n = 0;

        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < c->n; i++)
                if (c->notes[i].kind == KDP_TREE_NOTE_NOT_SERVED)
                        v[n++] = (kdp_not_served_entry){ .address = c->notes[i].key, .reason = c->notes[i].text };
        *ret = v;
        *ret_n = n;
        return 0;
}

void kdp_conditions_done(kdp_conditions *c) {
        notes_free(c->notes, c->n);
        *c = (kdp_conditions){ 0 };
}
