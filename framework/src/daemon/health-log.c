/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A resource's device changes, logged (see health-log.h). The new list is
 * walked in ID order beside the spells of the last one, also in ID order: a
 * device still unhealthy takes its spell over, ID string included, so a
 * steady problem costs no allocation; one that became unhealthy gets a new
 * spell; the spells left over (recovered, removed) are freed.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <kdp/cleanup.h>
#include <kdp/log.h>

#include "debounce.h"
#include "health-log.h"

struct kdp_health_spell {
        char *id;
        unsigned flaps;
};

static bool same_text(const char *a, const char *b) {
        return a == b || (a && b && strcmp(a, b) == 0);
}

/* The cause a reason names: the reason, but for a held one's "recovering: ". */
static const char *cause_of(const char *reason) {
        const char *held = kdp_debounce_held_cause(reason);

        return held ? held : reason;
}

/*
 * Logs how the health of `n` changed from `o`'s (NULL: a new device), `flaps`
 * being its flaps so far (0: none known); returns its flaps now (0 when healthy).
 */
static unsigned log_health(const char *resource, const kdp_device *n, const kdp_device *o, unsigned flaps,
                           kdp_metrics_resource *series) {
        bool was_unhealthy = o && o->health == KDP_UNHEALTHY;

        if (n->health != KDP_UNHEALTHY) {
                if (was_unhealthy)
                        kdp_log_info("Device recovered", KDP_F_STR("resource", resource), KDP_F_STR("device", n->id),
                                     KDP_F_INT("flaps", flaps));
                return 0;
        }
        if (!was_unhealthy) {
                kdp_log_warning("Device became unhealthy", KDP_F_STR("resource", resource),
                                KDP_F_STR("device", n->id), KDP_F_STR("reason", n->health_reason));
                kdp_metrics_resource_unhealthy(series, n->health_reason);
                return 1;
        }
        if (kdp_debounce_held_cause(o->health_reason) && !kdp_debounce_held_cause(n->health_reason))
                flaps++;        /* held, it failed again */
        if (!same_text(cause_of(n->health_reason), cause_of(o->health_reason)))
                /* the reason an operator reads is the one that holds now (unbound, then removed) */
                kdp_log_info("Device unhealthy for another reason", KDP_F_STR("resource", resource),
                             KDP_F_STR("device", n->id), KDP_F_STR("reason", n->health_reason));
        else if (!same_text(n->health_reason, o->health_reason))
                kdp_log_v(2, "Device health reason changed for the same cause", KDP_F_STR("resource", resource),
                          KDP_F_STR("device", n->id), KDP_F_STR("reason", n->health_reason),
                          KDP_F_INT("flaps", flaps));
        return flaps;
}

static size_t count_unhealthy(const kdp_device_list *l) {
        size_t n = 0;

        for (size_t i = 0; i < l->n_devices; i++)
                n += l->devices[i].health == KDP_UNHEALTHY;
        return n;
}

static void spells_free(kdp_health_spell *v, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(v[i].id);
        free(v);
}

void kdp_health_log_update(kdp_health_log *h, const char *resource, const kdp_device_list *old,
                           const kdp_device_list *new, kdp_metrics_resource *series) {
        kdp_health_spell *next = calloc(count_unhealthy(new) + 1, sizeof(*next));
        size_t n_next = 0, k = 0;

        for (size_t i = 0; i < new->n_devices; i++) {
                const kdp_device *n = &new->devices[i];
                const kdp_device *o = old ? kdp_device_list_find(old, n->id) : NULL;
                kdp_health_spell *was;
                unsigned flaps;

                if (!o)
                        kdp_log_v(4, "Added device", KDP_F_STR("resource", resource), KDP_F_STR("device", n->id));
                while (k < h->n && strcmp(h->spells[k].id, n->id) < 0)
                        k++;
                was = k < h->n && strcmp(h->spells[k].id, n->id) == 0 ? &h->spells[k++] : NULL;
                flaps = log_health(resource, n, o, was ? was->flaps : 0, series);
                if (n->health != KDP_UNHEALTHY || !next)
                        continue;
                next[n_next].id = was ? KDP_TAKE_PTR(was->id) : strdup(n->id);
                if (next[n_next].id)
                        next[n_next++].flaps = flaps;
        }
        for (size_t i = 0; old && i < old->n_devices; i++)
                if (!kdp_device_list_find(new, old->devices[i].id))
                        kdp_log_info("Removed device", KDP_F_STR("resource", resource),
                                     KDP_F_STR("device", old->devices[i].id));
        spells_free(h->spells, h->n);
        h->spells = next;
        h->n = n_next;
}

void kdp_health_log_done(kdp_health_log *h) {
        spells_free(h->spells, h->n);
        *h = (kdp_health_log){ 0 };
}
