/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Health hysteresis (see debounce.h). State per resource: a sorted array of
 * the devices that were unhealthy at some point, with when they last were and
 * why. A device healthy for hold_ms is dropped from it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "debounce.h"

#define HELD_PREFIX "recovering: "

typedef struct held {
        char *id;
        uint64_t last_unhealthy_ms;
        char *reason;
} held;

typedef struct resource_state {
        char *resource;
        held *held;
        size_t n_held;
} resource_state;

struct kdp_debounce {
        uint64_t hold_ms;
        resource_state *resources;
        size_t n_resources;
};

int kdp_debounce_new(uint64_t hold_ms, kdp_debounce **ret) {
        kdp_debounce *db = calloc(1, sizeof(*db));

        if (!db)
                return -ENOMEM;
        db->hold_ms = hold_ms;
        *ret = db;
        return 0;
}

static void held_done(held *h) {
        free(h->id);
        free(h->reason);
}

static void resource_state_done(resource_state *rs) {
        for (size_t i = 0; i < rs->n_held; i++)
                held_done(&rs->held[i]);
        free(rs->held);
        free(rs->resource);
}

kdp_debounce *kdp_debounce_free(kdp_debounce *db) {
        if (!db)
                return NULL;
        for (size_t i = 0; i < db->n_resources; i++)
                resource_state_done(&db->resources[i]);
        free(db->resources);
        free(db);
        return NULL;
}

static resource_state *find_state(kdp_debounce *db, const char *resource) {
        resource_state *rs;

        for (size_t i = 0; i < db->n_resources; i++)
                if (strcmp(db->resources[i].resource, resource) == 0)
                        return &db->resources[i];
        rs = realloc(db->resources, (db->n_resources + 1) * sizeof(*rs));
        if (!rs)
                return NULL;
        db->resources = rs;
        rs = &db->resources[db->n_resources];
        *rs = (resource_state){ .resource = strdup(resource) };
        if (!rs->resource)
                return NULL;
        db->n_resources++;
        return rs;
}

static held *find_held(resource_state *rs, const char *id) {
        for (size_t i = 0; i < rs->n_held; i++)
                if (strcmp(rs->held[i].id, id) == 0)
                        return &rs->held[i];
        return NULL;
}

static int set_reason(char **dst, const char *reason) {
        char *copy = strdup(reason ? reason : "unhealthy");

        if (!copy)
                return -ENOMEM;
        free(*dst);
        *dst = copy;
        return 0;
}

/* The device failed now: (re)start its hold. */
static void note_unhealthy(resource_state *rs, const char *id, const char *reason, uint64_t now) {
        held *h = find_held(rs, id);

        if (!h) {
                held *v = realloc(rs->held, (rs->n_held + 1) * sizeof(*v));

                if (!v)
                        return;
                rs->held = v;
                h = &rs->held[rs->n_held];
                *h = (held){ .id = strdup(id) };
                if (!h->id)
                        return;
                rs->n_held++;
        }
        h->last_unhealthy_ms = now;
        (void) set_reason(&h->reason, reason);
}

/* A healthy report of a held device: keep it Unhealthy until its hold is over. */
static uint64_t hold_healthy(const held *h, kdp_device *d, uint64_t hold_ms, uint64_t now) {
        uint64_t until = h->last_unhealthy_ms + hold_ms;
        char *reason;

        if (now >= until)
                return 0;
        if (asprintf(&reason, HELD_PREFIX "%s", h->reason) < 0)
                return until;
        free(d->health_reason);
        d->health_reason = reason;
        d->health = KDP_UNHEALTHY;
        return until;
}

/* Drops held entries whose hold ended. */
static void forget_released(resource_state *rs, uint64_t hold_ms, uint64_t now) {
        size_t k = 0;

        for (size_t i = 0; i < rs->n_held; i++) {
                held *h = &rs->held[i];

                if (now >= h->last_unhealthy_ms + hold_ms)
                        held_done(h);
                else
                        rs->held[k++] = *h;
        }
        rs->n_held = k;
}

const char *kdp_debounce_held_cause(const char *reason) {
        size_t n = strlen(HELD_PREFIX);

        return reason && strncmp(reason, HELD_PREFIX, n) == 0 ? reason + n : NULL;
}

uint64_t kdp_debounce_apply(kdp_debounce *db, const kdp_device_list *old, kdp_device_list *list,
                            uint64_t now_ms) {
        resource_state *rs;
        uint64_t next = 0;

        if (db->hold_ms == 0 || !list->resource)
                return 0;
        rs = find_state(db, list->resource);
        if (!rs)
                return 0;
        for (size_t i = 0; old && i < old->n_devices; i++)
                if (!kdp_device_list_find(list, old->devices[i].id))
                        note_unhealthy(rs, old->devices[i].id, "removed", now_ms);
        for (size_t i = 0; i < list->n_devices; i++) {
                kdp_device *d = &list->devices[i];
                const held *h;
                uint64_t until;

                if (d->health == KDP_UNHEALTHY) {
                        note_unhealthy(rs, d->id, d->health_reason, now_ms);
                        continue;
                }
                h = find_held(rs, d->id);
                until = h ? hold_healthy(h, d, db->hold_ms, now_ms) : 0;
                if (until && (!next || until < next))
                        next = until;
        }
        forget_released(rs, db->hold_ms, now_ms);
        return next;
}
