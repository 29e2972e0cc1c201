/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `kdpctl who`'s join: the kubelet's PodResources answers (which pod's
 * container holds which device; which devices are allocatable) and the
 * first ListAndWatch message of each plugin socket given (health, NUMA
 * nodes) become one row per device and holder, printed as a table or JSON.
 * Pure: no I/O but the FILE written to (ctl-who.c asks the sockets).
 *
 * The resource of a plugin socket (ListAndWatch does not name it): the
 * RESOURCE of `--socket RESOURCE=PATH`, else the one kdpd's socket name
 * kdp-BACKEND-DOMAIN_NAME.PID.SEQ.sock spells (the one the kubelet reports,
 * when BACKEND or DOMAIN holds a '-' and the split is ambiguous), else the
 * resource of the kubelet's answers that shares the most device IDs with it.
 *
 * Rows, sorted by resource, device ID, namespace, pod and container:
 *   - every device a container holds (List), one row per holder;
 *   - every allocatable device no container holds (GetAllocatableResources:
 *     the kubelet's healthy devices of registered resources), as free;
 *   - every device of a plugin socket that neither names, as free.
 * NUMA nodes: the plugin's when it lists the device, else the kubelet's.
 *
 * The table: RESOURCE DEVICE HEALTH NUMA NAMESPACE POD CONTAINER, columns
 * padded to their widest cell and two spaces apart, "-" for what is not
 * known or free. HEALTH is the plugin's ("Healthy", "Unhealthy"), else
 * "Healthy" for a device the kubelet counts allocatable, else "-". Control
 * characters are escaped (\n, \t, \xNN) so a row stays one line.
 *
 * The JSON (stable: keys are only ever added):
 *   {
 *     "allocatableKnown": true,          false: GetAllocatableResources did not answer
 *     "devices": [
 *       {"resource": "example.com/widget", "id": "widget-0",
 *        "health": "Healthy",              the plugin's; null without a socket listing it
 *        "numa": [0],                      [] without topology
 *        "allocatable": true,              null when allocatableKnown is false
 *        "namespace": "default", "pod": "pod-0", "container": "c0"},   null when free
 *       ...
 *     ]
 *   }
 * one device object a line, in the table's order.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <kdp/cleanup.h>

#include "deviceplugin/v1beta1/api.pb-c.h"
#include "podresources/v1/api.pb-c.h"

/* One plugin socket and its first ListAndWatch message. */
typedef struct kdp_ctl_who_plugin {
        const char *path;                       /* borrowed: the socket, as given after any RESOURCE= */
        char *resource;                         /* owned; NULL until told (kdp_ctl_who_table_build) */
        V1beta1__ListAndWatchResponse *list;    /* owned; NULL until asked */
} kdp_ctl_who_plugin;

/* What was asked; owns all of it. */
typedef struct kdp_ctl_who_input {
        V1__ListPodResourcesResponse *pods;                     /* NULL: no pods */
        V1__AllocatableResourcesResponse *allocatable;          /* NULL: not known */
        kdp_ctl_who_plugin *plugins;                            /* malloc'ed array */
        size_t n_plugins;
} kdp_ctl_who_input;

/* One row; everything borrowed (from the input, or for the duration of a kdp_ctl_who_table_foreach() call). */
typedef struct kdp_ctl_who_row {
        const char *resource, *id;
        const char *health;                     /* the plugin's; NULL when no plugin lists the device */
        int allocatable;                        /* 1 or 0 as GetAllocatableResources says; -1 not known */
        const int64_t *numa;                    /* sorted, unique */
        size_t n_numa;
        const char *namespace_, *pod, *container;       /* all NULL when free */
} kdp_ctl_who_row;

/* The join: the inputs' entries sorted; rows are made from them one at a time (nothing is held per row). */
typedef struct kdp_ctl_who_table kdp_ctl_who_table;

/*
 * "[RESOURCE=]PATH" → *ret (path borrowed from `spec`, resource copied).
 * RESOURCE= counts only when it is a valid extended resource name; anything
 * else is all path. -ENOMEM.
 */
int kdp_ctl_who_table_parse_socket(const char *spec, kdp_ctl_who_plugin *ret);
void kdp_ctl_who_plugin_done(kdp_ctl_who_plugin *p);
/* Frees the messages, the plugins and their array. */
void kdp_ctl_who_input_done(kdp_ctl_who_input *in);

/*
 * Tells each plugin's resource (setting its `resource`), then joins. The
 * table borrows from `in`'s messages, which must outlive it. Errors: -ENXIO,
 * the resource of plugin *reterr_plugin cannot be told; -EEXIST, plugin
 * *reterr_plugin serves the resource an earlier one does; -ENOMEM.
 */
int kdp_ctl_who_table_build(kdp_ctl_who_input *in, kdp_ctl_who_table **ret, size_t *reterr_plugin);
kdp_ctl_who_table *kdp_ctl_who_table_free(kdp_ctl_who_table *t);
KDP_DEFINE_CLEANUP_FUNC(kdp_ctl_who_table, kdp_ctl_who_table_free)

typedef int (*kdp_ctl_who_row_fn)(const kdp_ctl_who_row *row, void *userdata);
/* Each row in order to `fn`, made as it goes; stops at the first negative return of fn, returned. -ENOMEM. */
int kdp_ctl_who_table_foreach(const kdp_ctl_who_table *t, kdp_ctl_who_row_fn fn, void *userdata);
size_t kdp_ctl_who_table_n_rows(const kdp_ctl_who_table *t);
bool kdp_ctl_who_table_allocatable_known(const kdp_ctl_who_table *t);

/* 0, or -ENOMEM (the output may then stop short). */
int kdp_ctl_who_table_print(FILE *f, const kdp_ctl_who_table *t);
int kdp_ctl_who_table_print_json(FILE *f, const kdp_ctl_who_table *t);
