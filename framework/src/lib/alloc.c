/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The response builders of allocate() and preferred() (see alloc.h).
 *
 * Every setter validates its arguments (-EINVAL) and copies what it keeps.
 * Keys stay unique: env and annotation values are replaced by a later value
 * for the same key, a dev node or mount whose container path is already
 * present is dropped, CDI names are de-duplicated. The arrays grow one
 * element at a time: a response holds a few dozen entries at most, and a
 * linear look-up over them is cheaper than anything cleverer.
 *
 * kdp_alloc_response_add_device() stops at the first failing entry and leaves
 * what it added before; a failed Allocate discards the whole response anyway.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <kdp/cleanup.h>

#include "alloc.h"

/* realloc() for one more element; NULL (the array untouched) on overflow or OOM. */
static void *grow(void *array, size_t n, size_t elem_size) {
        if (n + 1 > SIZE_MAX / elem_size)
                return NULL;
        return realloc(array, (n + 1) * elem_size);
}

static bool permissions_are_valid(const char *p) {
        static const char letters[] = "rwm";
        bool seen[3] = { false, false, false };

        if (!*p)
                return false;
        for (; *p; p++) {
                const char *c = strchr(letters, *p);

                if (!c || seen[c - letters])
                        return false;
                seen[c - letters] = true;
        }
        return true;
}

void kdp_alloc_response_init(kdp_alloc_response *r, const kdp_device_list *devices) {
        *r = (kdp_alloc_response) { .devices = devices };
}

static void kvs_free(kdp_kv *kvs, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free((char *) kvs[i].key);
                free((char *) kvs[i].value);
        }
        free(kvs);
}

void kdp_alloc_response_done(kdp_alloc_response *r) {
        if (!r)
                return;

        kvs_free(r->envs, r->n_envs);
        for (size_t i = 0; i < r->n_dev_nodes; i++) {
                free((char *) r->dev_nodes[i].host_path);
                free((char *) r->dev_nodes[i].container_path);
                free((char *) r->dev_nodes[i].permissions);
        }
        free(r->dev_nodes);
        for (size_t i = 0; i < r->n_mounts; i++) {
                free((char *) r->mounts[i].host_path);
                free((char *) r->mounts[i].container_path);
        }
        free(r->mounts);
        kvs_free(r->annotations, r->n_annotations);
        for (size_t i = 0; i < r->n_cdi_devices; i++)
                free(r->cdi_devices[i]);
        free(r->cdi_devices);

        *r = (kdp_alloc_response) { .devices = r->devices };
}

/* Sets key=value in a unique-key array: a later value replaces the earlier one. */
static int kvs_set(kdp_kv **kvs, size_t *n, const char *key, const char *value) {
        _cleanup_free_ char *k = NULL, *v = NULL;
        kdp_kv *p;

        v = strdup(value);
        if (!v)
                return -ENOMEM;

        for (size_t i = 0; i < *n; i++)
                if (strcmp((*kvs)[i].key, key) == 0) {
                        free((char *) (*kvs)[i].value);
                        (*kvs)[i].value = KDP_TAKE_PTR(v);
                        return 0;
                }

        k = strdup(key);
        if (!k)
                return -ENOMEM;
        p = grow(*kvs, *n, sizeof(kdp_kv));
        if (!p)
                return -ENOMEM;
        *kvs = p;
        p[(*n)++] = (kdp_kv) { .key = KDP_TAKE_PTR(k), .value = KDP_TAKE_PTR(v) };
        return 0;
}

int kdp_alloc_response_add_env(kdp_alloc_response *resp, const char *key, const char *value) {
        if (!resp || !key || !*key || strchr(key, '=') || !value)
                return -EINVAL;

        return kvs_set(&resp->envs, &resp->n_envs, key, value);
}

int kdp_alloc_response_add_annotation(kdp_alloc_response *resp, const char *key, const char *value) {
        if (!resp || !key || !*key || !value)
                return -EINVAL;

        return kvs_set(&resp->annotations, &resp->n_annotations, key, value);
}

int kdp_alloc_response_add_dev_node(kdp_alloc_response *resp, const kdp_dev_node *node) {
        _cleanup_free_ char *host = NULL, *container = NULL, *perm = NULL;
        const char *container_path;
        kdp_dev_node *p;

        if (!resp || !node || !node->host_path || node->host_path[0] != '/')
                return -EINVAL;
        if (node->container_path && node->container_path[0] != '/')
                return -EINVAL;
        if (node->permissions && !permissions_are_valid(node->permissions))
                return -EINVAL;

        container_path = node->container_path ?: node->host_path;
        for (size_t i = 0; i < resp->n_dev_nodes; i++)
                if (strcmp(resp->dev_nodes[i].container_path, container_path) == 0)
                        return 0;       /* the first node for a container path wins */

        host = strdup(node->host_path);
        container = strdup(container_path);
        perm = strdup(node->permissions ?: "rw");
        if (!host || !container || !perm)
                return -ENOMEM;
        p = grow(resp->dev_nodes, resp->n_dev_nodes, sizeof(kdp_dev_node));
        if (!p)
                return -ENOMEM;
        resp->dev_nodes = p;
        resp->dev_nodes[resp->n_dev_nodes++] = (kdp_dev_node) {
                .host_path = KDP_TAKE_PTR(host),
                .container_path = KDP_TAKE_PTR(container),
                .permissions = KDP_TAKE_PTR(perm),
        };
        return 0;
}

int kdp_alloc_response_add_mount(kdp_alloc_response *resp, const kdp_mount *mount) {
        _cleanup_free_ char *host = NULL, *container = NULL;
        const char *container_path;
        kdp_mount *p;

        if (!resp || !mount || !mount->host_path || mount->host_path[0] != '/')
                return -EINVAL;
        if (mount->container_path && mount->container_path[0] != '/')
                return -EINVAL;

        container_path = mount->container_path ?: mount->host_path;
        for (size_t i = 0; i < resp->n_mounts; i++)
                if (strcmp(resp->mounts[i].container_path, container_path) == 0)
                        return 0;       /* the first mount on a container path wins */

        host = strdup(mount->host_path);
        container = strdup(container_path);
        if (!host || !container)
                return -ENOMEM;
        p = grow(resp->mounts, resp->n_mounts, sizeof(kdp_mount));
        if (!p)
                return -ENOMEM;
        resp->mounts = p;
        resp->mounts[resp->n_mounts++] = (kdp_mount) {
                .host_path = KDP_TAKE_PTR(host),
                .container_path = KDP_TAKE_PTR(container),
                .read_only = !!mount->read_only,
        };
        return 0;
}

int kdp_alloc_response_add_cdi_device(kdp_alloc_response *resp, const char *name) {
        _cleanup_free_ char *copy = NULL;
        char **p;

        if (!resp || !kdp_device_cdi_name_is_valid(name))
                return -EINVAL;

        for (size_t i = 0; i < resp->n_cdi_devices; i++)
                if (strcmp(resp->cdi_devices[i], name) == 0)
                        return 0;

        copy = strdup(name);
        if (!copy)
                return -ENOMEM;
        p = grow(resp->cdi_devices, resp->n_cdi_devices, sizeof(char *));
        if (!p)
                return -ENOMEM;
        resp->cdi_devices = p;
        resp->cdi_devices[resp->n_cdi_devices++] = KDP_TAKE_PTR(copy);
        return 0;
}

int kdp_alloc_response_add_device(kdp_alloc_response *resp, const char *device_id) {
        const kdp_device *d;
        int r;

        if (!resp || !device_id)
                return -EINVAL;

        d = kdp_device_list_find(resp->devices, device_id);
        if (!d)
                return -ENOENT;

        for (size_t i = 0; i < d->n_dev_nodes; i++) {
                r = kdp_alloc_response_add_dev_node(resp, &d->dev_nodes[i]);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < d->n_mounts; i++) {
                r = kdp_alloc_response_add_mount(resp, &d->mounts[i]);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < d->n_envs; i++) {
                r = kdp_alloc_response_add_env(resp, d->envs[i].key, d->envs[i].value);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < d->n_annotations; i++) {
                r = kdp_alloc_response_add_annotation(resp, d->annotations[i].key, d->annotations[i].value);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < d->n_cdi_devices; i++) {
                r = kdp_alloc_response_add_cdi_device(resp, d->cdi_devices[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

void kdp_pref_response_init(kdp_pref_response *r, const kdp_pref_request *req) {
        *r = (kdp_pref_response) { .req = req };
}

void kdp_pref_response_done(kdp_pref_response *r) {
        if (!r)
                return;

        free(r->ids);
        *r = (kdp_pref_response) { .req = r->req };
}

int kdp_pref_response_add(kdp_pref_response *resp, const char *device_id) {
        const char *available = NULL;

        if (!resp || !resp->req || !device_id)
                return -EINVAL;

        for (size_t i = 0; i < resp->req->n_available; i++)
                if (resp->req->available[i] && strcmp(resp->req->available[i], device_id) == 0) {
                        available = resp->req->available[i];
                        break;
                }
        if (!available)
                return -EINVAL;

        for (size_t i = 0; i < resp->n_ids; i++)
                if (strcmp(resp->ids[i], device_id) == 0)
                        return 0;

        if (resp->n_ids == resp->n_allocated) {
                size_t n = resp->n_allocated ? resp->n_allocated * 2 : 8;
                const char **p;

                if (n > SIZE_MAX / sizeof(char *))
                        return -ENOMEM;
                p = realloc(resp->ids, n * sizeof(char *));
                if (!p)
                        return -ENOMEM;
                resp->ids = p;
                resp->n_allocated = n;
        }
        resp->ids[resp->n_ids++] = available;
        return 0;
}
