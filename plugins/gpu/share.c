/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Replicas: one GPU advertised as N IDs "<id>::0" ... "<id>::<N-1>", for
 * time-sliced sharing. The kubelet knows nothing of the grouping, so the
 * preferred allocation is where it is honoured:
 *
 *   spread  each pick takes a replica of the GPU with the most replicas still
 *           free (of those not yet picked in this request), so N replicas land
 *           on N distinct GPUs when there are N; ties go to the first GPU
 *   pack    each pick takes a replica of the GPU with the fewest free replicas
 *           left (a GPU already shared fills up before a fresh one is touched)
 *
 * must_include comes first in both. Everything is computed on the request's
 * own arrays: a request holds at most the resource's IDs, a few thousand.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <kdp/cleanup.h>

#include "gpu.h"

size_t gpu_replica_base_len(const char *id) {
        const char *sep = strstr(id, GPU_REPLICA_SEP);

        return sep ? (size_t) (sep - id) : strlen(id);
}

static bool same_gpu(const char *a, const char *b) {
        size_t n = gpu_replica_base_len(a);

        return n == gpu_replica_base_len(b) && strncmp(a, b, n) == 0;
}

typedef struct candidate {
        const char *id;
        size_t gpu;             /* index of its GPU's first candidate */
        bool taken;
} candidate;

/* Free replicas of GPU `gpu` and whether one of it was picked already. */
static size_t free_of(const candidate *c, size_t n, size_t gpu, bool *picked) {
        size_t k = 0;

        *picked = false;
        for (size_t i = 0; i < n; i++)
                if (c[i].gpu == gpu) {
                        if (c[i].taken)
                                *picked = true;
                        else
                                k++;
                }
        return k;
}

/* The GPU the policy picks next; SIZE_MAX when nothing is free. */
static size_t choose_gpu(gpu_replica_policy policy, const candidate *c, size_t n) {
        size_t best = SIZE_MAX, best_free = 0;
        bool best_picked = true;

        for (size_t i = 0; i < n; i++) {
                bool picked;
                size_t k;

                if (c[i].gpu != i)
                        continue;       /* judge each GPU once, at its first candidate */
                k = free_of(c, n, i, &picked);
                if (k == 0)
                        continue;
                if (best == SIZE_MAX ||
                    (policy == GPU_REPLICAS_SPREAD &&
                     (picked < best_picked || (picked == best_picked && k > best_free))) ||
                    (policy == GPU_REPLICAS_PACK && k < best_free)) {
                        best = i;
                        best_free = k;
                        best_picked = picked;
                }
        }
        return best;
}

static int take(candidate *c, size_t i, kdp_pref_response *resp) {
        c[i].taken = true;
        return kdp_pref_response_add(resp, c[i].id);
}

static int take_of_gpu(candidate *c, size_t n, size_t gpu, kdp_pref_response *resp) {
        for (size_t i = 0; i < n; i++)
                if (c[i].gpu == gpu && !c[i].taken)
                        return take(c, i, resp);
        return -ENOENT;
}

static candidate *candidates_new(const kdp_pref_request *req) {
        candidate *c = calloc(req->n_available ? req->n_available : 1, sizeof(*c));

        if (!c)
                return NULL;
        for (size_t i = 0; i < req->n_available; i++) {
                c[i].id = req->available[i];
                c[i].gpu = i;
                for (size_t j = 0; j < i; j++)
                        if (c[j].gpu == j && same_gpu(c[j].id, c[i].id)) {       /* each GPU's first */
                                c[i].gpu = c[j].gpu;
                                break;
                        }
        }
        return c;
}

static int take_must_include(candidate *c, const kdp_pref_request *req, kdp_pref_response *resp) {
        for (size_t m = 0; m < req->n_must_include; m++) {
                bool found = false;

                for (size_t i = 0; i < req->n_available && !found; i++)
                        if (!c[i].taken && strcmp(c[i].id, req->must_include[m]) == 0) {
                                int r = take(c, i, resp);

                                if (r < 0)
                                        return r;
                                found = true;
                        }
                if (!found)
                        return -EINVAL;
        }
        return 0;
}

int gpu_replicas_preferred(gpu_replica_policy policy, const kdp_pref_request *req, kdp_pref_response *resp) {
        _cleanup_free_ candidate *c = NULL;
        size_t n = req->n_available, picked;
        int r;

        if (req->size > n || req->n_must_include > req->size)
                return -EINVAL;
        c = candidates_new(req);
        if (!c)
                return -ENOMEM;
        r = take_must_include(c, req, resp);
        if (r < 0)
                return r;
        for (picked = req->n_must_include; picked < req->size; picked++) {
                size_t gpu = choose_gpu(policy, c, n);

                if (gpu == SIZE_MAX)
                        return -EINVAL;
                r = take_of_gpu(c, n, gpu, resp);
                if (r < 0)
                        return r;
        }
        return 0;
}
