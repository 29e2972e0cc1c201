/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NVLink in GetPreferredAllocation (gpu.h, README "Preferred allocation").
 *
 *   scan (gpu.c) --gpu_nvlink_read()--> a GPU's active links, one remote PCI address each
 *   preferred (gpu.c) --gpu_nvlink_pick(candidates, link counts)--> the devices to add
 *
 * The pick is the framework's objective (framework/src/daemon/preferred.h) with a pair's
 * closeness widened to (NVLink links between the two, PCIe closeness), compared links first:
 * every search below is exhaustive over the candidate sets, lowest IDs first, so the first set
 * found among equals is the lowest one, as the framework's criterion 4 wants.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdp/cleanup.h>

#include "gpu.h"
#include "nvml.h"

/* ---- reading ---- */

int gpu_nvlink_read(gpu_nvml *n, const char *bdf, char (*ret)[KDP_PCI_ADDRESS_MAX], size_t max, size_t *ret_n) {
        nvmlDevice_t dev;
        nvmlReturn_t r;
        size_t k = 0;

        r = n->nvmlDeviceGetHandleByPciBusId_v2(bdf, &dev);
        if (r != NVML_SUCCESS)
                return gpu_nvml_errno(r);
        for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS && k < max; link++) {
                nvmlEnableState_t on = NVML_FEATURE_DISABLED;
                nvmlPciInfo_t pci;

                /* NOT_SUPPORTED: no such link on this GPU; down, or no remote: no link to count */
                if (n->nvmlDeviceGetNvLinkState(dev, link, &on) != NVML_SUCCESS || on != NVML_FEATURE_ENABLED)
                        continue;
                if (n->nvmlDeviceGetNvLinkRemotePciInfo_v2(dev, link, &pci) != NVML_SUCCESS)
                        continue;
                if (gpu_nvml_bdf(&pci, ret[k]) == 0)
                        k++;
        }
        *ret_n = k;
        return 0;
}

/* ---- scoring ---- */

/* The closeness of two GPUs: the framework's depth of their lowest common ancestor. */
static uint64_t closeness(const gpu_nvlink_gpu *a, const gpu_nvlink_gpu *b) {
        const char *x = a->pci_path, *y = b->pci_path;
        uint64_t c = 1;                         /* their NUMA node (or both none) */

        if (a->numa_node != b->numa_node)
                return 0;
        while (x && y && *x && *y) {
                size_t lx = strcspn(x, "/"), ly = strcspn(y, "/");

                if (lx != ly || memcmp(x, y, lx) != 0)
                        break;
                c++;
                x += lx + (x[lx] == '/');
                y += ly + (y[ly] == '/');
        }
        return c;
}

/* A pair's key: links first, then closeness (never above 255 on any PCI tree). */
#define KEY(links, close) ((uint64_t) (links) << 8 | ((close) > 255 ? 255 : (close)))

typedef struct score {
        uint64_t worst;                 /* 1: the least key of a pair of S (UINT64_MAX: no pair) */
        uint64_t links, close;          /* 2, 3: over the pairs of S */
        uint64_t free_links, free_close;        /* 4: over the pairs of A \ F */
} score;

static int score_compare(const score *a, const score *b) {
        const uint64_t x[] = { a->worst, a->links, a->close, a->free_links, a->free_close };
        const uint64_t y[] = { b->worst, b->links, b->close, b->free_links, b->free_close };

        for (size_t i = 0; i < sizeof(x) / sizeof(x[0]); i++)
                if (x[i] != y[i])
                        return x[i] > y[i] ? 1 : -1;
        return 0;
}

typedef struct search {
        size_t n, n_must, m;
        const unsigned *links;          /* [n × n] */
        uint64_t *close;                /* [n × n] */
        size_t *order;                  /* the free candidates, by ID */
        size_t n_free;
        uint64_t *to_must_links, *to_must_close, *to_must_worst, *row_links, *row_close;       /* [n] */
        score base;                     /* M alone, and A's pairs */
        size_t *chosen, *best;          /* [m] */
        score best_score;
        bool found;
} search;

static uint64_t min_u64(uint64_t a, uint64_t b) {
        return a < b ? a : b;
}

/* Chooses F's entries from `depth` on among order[from ..), lowest IDs first. */
static void search_from(search *s, size_t depth, size_t from, score cur) {
        if (depth == s->m) {
                if (!s->found || score_compare(&cur, &s->best_score) > 0) {
                        s->found = true;
                        s->best_score = cur;
                        memcpy(s->best, s->chosen, s->m * sizeof(size_t));
                }
                return;
        }
        for (size_t i = from; i + (s->m - depth) <= s->n_free; i++) {
                size_t f = s->order[i];
                score next = cur;

                next.worst = min_u64(next.worst, s->to_must_worst[f]);
                next.links += s->to_must_links[f];
                next.close += s->to_must_close[f];
                next.free_links -= s->row_links[f];
                next.free_close -= s->row_close[f];
                for (size_t j = 0; j < depth; j++) {
                        size_t g = s->chosen[j];
                        uint64_t l = s->links[f * s->n + g], c = s->close[f * s->n + g];

                        next.worst = min_u64(next.worst, KEY(l, c));
                        next.links += l;
                        next.close += c;
                        next.free_links += l;   /* the pair was taken off twice */
                        next.free_close += c;
                }
                if (s->found && next.worst < s->best_score.worst)
                        continue;       /* adding devices never raises the worst pair: no set below beats the best */
                s->chosen[depth] = f;
                search_from(s, depth + 1, i + 1, next);
        }
}

/* C(n, k), saturating at `cap`. */
static uint64_t binomial_capped(size_t n, size_t k, uint64_t cap) {
        uint64_t c = 1;

        if (k > n - k)
                k = n - k;
        for (size_t i = 1; i <= k; i++) {
                c = c * (n - k + i) / i;        /* exact: C(n-k+i, i) */
                if (c > cap)
                        return cap + 1;
        }
        return c;
}

static int order_compare(const void *a, const void *b, void *userdata) {
        const gpu_nvlink_gpu *gpus = userdata;

        return strcmp(gpus[*(const size_t *) a].id, gpus[*(const size_t *) b].id);
}

int gpu_nvlink_pick(const gpu_nvlink_gpu *gpus, size_t n, size_t n_must, const unsigned *links, size_t m,
                    size_t *ret) {
        _cleanup_free_ uint64_t *close = NULL, *per = NULL;
        _cleanup_free_ size_t *idx = NULL;
        search s = { .n = n, .n_must = n_must, .m = m, .links = links, .n_free = n - n_must };

        if (m == 0 || m >= s.n_free)
                return -EINVAL;
        if (binomial_capped(s.n_free, m, GPU_NVLINK_SETS_MAX) * m > GPU_NVLINK_SETS_MAX)
                return -E2BIG;
        close = calloc(n * n, sizeof(uint64_t));
        per = calloc(5 * n, sizeof(uint64_t));
        idx = calloc(s.n_free + 2 * m, sizeof(size_t));
        if (!close || !per || !idx)
                return -ENOMEM;
        s.close = close;
        s.to_must_links = per;
        s.to_must_close = per + n;
        s.to_must_worst = per + 2 * n;
        s.row_links = per + 3 * n;
        s.row_close = per + 4 * n;
        s.order = idx;
        s.chosen = idx + s.n_free;
        s.best = idx + s.n_free + m;

        for (size_t i = 0; i < n; i++)
                for (size_t j = 0; j < n; j++)
                        close[i * n + j] = i == j ? 0 : closeness(&gpus[i], &gpus[j]);
        s.base = (score){ .worst = UINT64_MAX };
        for (size_t i = 0; i < n; i++) {
                s.to_must_worst[i] = UINT64_MAX;
                for (size_t j = 0; j < n; j++) {
                        uint64_t l = links[i * n + j], c = close[i * n + j];

                        if (j == i)
                                continue;
                        if (j < n_must) {
                                s.to_must_links[i] += l;
                                s.to_must_close[i] += c;
                                s.to_must_worst[i] = min_u64(s.to_must_worst[i], KEY(l, c));
                        } else {
                                s.row_links[i] += l;
                                s.row_close[i] += c;
                        }
                        if (j > i && i < n_must && j < n_must) {
                                s.base.worst = min_u64(s.base.worst, KEY(l, c));
                                s.base.links += l;
                                s.base.close += c;
                        }
                        if (j > i && i >= n_must) {
                                s.base.free_links += l;
                                s.base.free_close += c;
                        }
                }
        }
        for (size_t i = 0; i < s.n_free; i++)
                s.order[i] = n_must + i;
        qsort_r(s.order, s.n_free, sizeof(size_t), order_compare, (void *) gpus);
        search_from(&s, 0, 0, s.base);
        memcpy(ret, s.best, m * sizeof(size_t));
        return 0;
}
