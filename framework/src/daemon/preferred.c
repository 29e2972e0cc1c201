/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The default GetPreferredAllocation (see preferred.h for the contract).
 *
 * The index is nothing but one path per device: the tree node indices from the
 * root (0) down to the device's location, i.e. its NUMA node and then one node
 * per pci_path component. Nodes are numbered while the paths are built; equal
 * (parent, component) pairs share a node. During a pick, device d is in
 * addition a leaf of its own, node n_nodes + d, below its location.
 *
 * A pick works on a scratch array over those n_nodes + n_devices nodes. It
 * counts the free devices below each node and links every node that has one
 * into its parent's list of active children, so everything after the
 * counting only walks nodes that hold available devices.
 */
#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "preferred.h"

#define NONE SIZE_MAX

struct kdp_preferred_index {
        size_t n_devices;
        size_t n_nodes;
        size_t *path_start;     /* [n_devices + 1]: d's path is paths[path_start[d] .. path_start[d + 1]) */
        size_t *paths;          /* node indices, root first, location last */
};

/* ---- building ---- */

/* A child of `parent`: a NUMA node (s == NULL, numa = id or -1) or a pci_path component. */
typedef struct node_key {
        size_t parent;
        const char *s;          /* borrowed from the devs, only while building */
        size_t len;
        int numa;
        size_t node;
} node_key;

typedef struct node_table {
        node_key *slots;        /* open addressing; node == NONE marks a free slot */
        size_t mask;
        size_t n_nodes;
} node_table;

static size_t key_hash(const node_key *k) {
        uint64_t h = 14695981039346656037ULL ^ k->parent;

        h *= 1099511628211ULL;
        if (!k->s)
                return (size_t) ((h ^ (uint64_t) (uint32_t) k->numa) * 1099511628211ULL);
        for (size_t i = 0; i < k->len; i++)
                h = (h ^ (unsigned char) k->s[i]) * 1099511628211ULL;
        return (size_t) h;
}

static bool key_equal(const node_key *a, const node_key *b) {
        if (a->parent != b->parent || !a->s != !b->s)
                return false;
        if (!a->s)
                return a->numa == b->numa;
        return a->len == b->len && memcmp(a->s, b->s, a->len) == 0;
}

/* The node for key `k`, numbered on first sight. The table never fills: it has room for every key. */
static size_t node_table_get(node_table *t, const node_key *k) {
        for (size_t i = key_hash(k) & t->mask;; i = (i + 1) & t->mask) {
                node_key *slot = &t->slots[i];

                if (slot->node == NONE) {
                        *slot = *k;
                        slot->node = t->n_nodes++;
                        return slot->node;
                }
                if (key_equal(slot, k))
                        return slot->node;
        }
}

/* The next non-empty '/'-separated component at *cursor (length in *ret_len), or NULL at the end. */
static const char *next_component(const char **cursor, size_t *ret_len) {
        const char *c = *cursor + strspn(*cursor, "/");

        if (*c == '\0')
                return NULL;
        *ret_len = strcspn(c, "/");
        *cursor = c + *ret_len;
        return c;
}

static size_t device_path_length(const kdp_device *d) {
        const char *cursor = d->pci_path;
        size_t n = 2, len;      /* root, NUMA node */

        if (cursor)
                while (next_component(&cursor, &len))
                        n++;
        return n;
}

int kdp_preferred_index_new(const kdp_device *devs, size_t n, kdp_preferred_index **ret) {
        _cleanup_(kdp_preferred_index_freep) kdp_preferred_index *idx = NULL;
        _cleanup_free_ node_key *slots = NULL;
        node_table table;
        size_t n_paths = 0, capacity = 1, p = 0;

        assert(devs || n == 0);
        assert(ret);

        for (size_t i = 0; i < n; i++)
                n_paths += device_path_length(&devs[i]);
        /* every path entry but the root may be a new node: keep the table at most half full */
        while (capacity < 2 * n_paths + 2)
                capacity *= 2;

        idx = calloc(1, sizeof(*idx));
        if (!idx)
                return -ENOMEM;
        idx->n_devices = n;
        idx->path_start = calloc(n + 1, sizeof(size_t));
        idx->paths = calloc(n_paths ? n_paths : 1, sizeof(size_t));
        slots = calloc(capacity, sizeof(node_key));
        if (!idx->path_start || !idx->paths || !slots)
                return -ENOMEM;
        for (size_t i = 0; i < capacity; i++)
                slots[i].node = NONE;
        table = (node_table){ .slots = slots, .mask = capacity - 1, .n_nodes = 1 };

        for (size_t i = 0; i < n; i++) {
                const kdp_device *d = &devs[i];
                const char *cursor = d->pci_path, *c;
                size_t node, len;

                idx->path_start[i] = p;
                idx->paths[p++] = 0;
                node = node_table_get(&table, &(node_key){
                        .parent = 0,
                        .numa = d->n_numa_nodes > 0 ? d->numa_nodes[0] : -1,
                });
                idx->paths[p++] = node;
                while (cursor && (c = next_component(&cursor, &len))) {
                        node = node_table_get(&table, &(node_key){ .parent = node, .s = c, .len = len });
                        idx->paths[p++] = node;
                }
        }
        idx->path_start[n] = p;
        assert(p == n_paths);
        idx->n_nodes = table.n_nodes;

        *ret = KDP_TAKE_PTR(idx);
        return 0;
}

kdp_preferred_index *kdp_preferred_index_free(kdp_preferred_index *idx) {
        if (!idx)
                return NULL;
        free(idx->path_start);
        free(idx->paths);
        free(idx);
        return NULL;
}

static const size_t *device_path(const kdp_preferred_index *idx, size_t d, size_t *ret_len) {
        *ret_len = idx->path_start[d + 1] - idx->path_start[d];
        return idx->paths + idx->path_start[d];
}

/* Length of the common prefix of two paths: the depth of the lowest common ancestor plus one. */
static size_t common_prefix(const size_t *a, size_t n_a, const size_t *b, size_t n_b) {
        size_t i = 0;

        while (i < n_a && i < n_b && a[i] == b[i])
                i++;
        return i;
}

unsigned kdp_preferred_distance(const kdp_preferred_index *idx, size_t a, size_t b) {
        const size_t *pa, *pb;
        size_t n_a, n_b, n_common;

        assert(idx);
        assert(a < idx->n_devices && b < idx->n_devices);

        pa = device_path(idx, a, &n_a);
        pb = device_path(idx, b, &n_b);
        n_common = common_prefix(pa, n_a, pb, n_b);
        return (unsigned) ((n_a - n_common) + (n_b - n_common));
}

/* ---- picking ---- */

typedef struct pick_node {
        size_t n_free;          /* available devices below, not picked */
        size_t n_must;          /* must_include devices below */
        size_t min_device;      /* lowest free device index below */
        size_t first_child;     /* active children: n_free > 0 */
        size_t next_sibling;
} pick_node;

typedef struct pick {
        const kdp_preferred_index *idx;
        pick_node *nodes;       /* [n_nodes + n_devices] */
        size_t *children;       /* [n_nodes + n_devices]: sort buffer for one node's children */
        size_t *picked;
        size_t n_picked;
} pick;

static bool pick_is_device(const pick *p, size_t node) {
        return node >= p->idx->n_nodes;
}

static void pick_mark_must(pick *p, size_t d) {
        const size_t *path;
        size_t n;

        path = device_path(p->idx, d, &n);
        for (size_t i = 0; i < n; i++)
                p->nodes[path[i]].n_must++;
        p->nodes[p->idx->n_nodes + d].n_must = 1;
        p->picked[p->n_picked++] = d;
}

static void pick_mark_free(pick *p, size_t d) {
        size_t child = p->idx->n_nodes + d, n;
        const size_t *path = device_path(p->idx, d, &n);
        bool child_new = true;

        p->nodes[child] = (pick_node){ .n_free = 1, .min_device = d, .first_child = NONE };
        for (size_t i = n; i-- > 0;) {
                pick_node *u = &p->nodes[path[i]];

                if (child_new) {
                        p->nodes[child].next_sibling = u->first_child;
                        u->first_child = child;
                }
                child_new = u->n_free == 0;
                if (child_new || d < u->min_device)
                        u->min_device = d;
                u->n_free++;
                child = path[i];
        }
}

/* Takes every free device below `node`. */
static void pick_take_all(pick *p, size_t node) {
        if (pick_is_device(p, node)) {
                p->picked[p->n_picked++] = node - p->idx->n_nodes;
                return;
        }
        for (size_t c = p->nodes[node].first_child; c != NONE; c = p->nodes[c].next_sibling)
                pick_take_all(p, c);
}

/* Children holding must_include devices first, then more free devices first, then the lowest device. */
static int pick_compare_children(const void *a, const void *b, void *userdata) {
        const pick_node *x = &((const pick_node *) userdata)[*(const size_t *) a];
        const pick_node *y = &((const pick_node *) userdata)[*(const size_t *) b];

        if ((x->n_must > 0) != (y->n_must > 0))
                return x->n_must > 0 ? -1 : 1;
        if (x->n_free != y->n_free)
                return x->n_free > y->n_free ? -1 : 1;
        return x->min_device < y->min_device ? -1 : x->min_device > y->min_device;
}

/*
 * Takes `k` (<= n_free) devices below `node`. Walks the children in the order
 * above; when the current group (must-holding or not) has a child that holds
 * all that is still missing, descends into the best fit of them: the one with
 * the fewest free devices, the lowest device on ties. Otherwise it takes the
 * child whole and goes on.
 */
static void pick_fill(pick *p, size_t node, size_t k) {
        while (k > 0) {
                size_t n_children = 0, next = NONE;

                if (pick_is_device(p, node)) {
                        pick_take_all(p, node);
                        return;
                }
                for (size_t c = p->nodes[node].first_child; c != NONE; c = p->nodes[c].next_sibling)
                        p->children[n_children++] = c;
                qsort_r(p->children, n_children, sizeof(size_t), pick_compare_children, p->nodes);

                for (size_t i = 0; i < n_children && k > 0; i++) {
                        const pick_node *c = &p->nodes[p->children[i]];
                        bool must = c->n_must > 0;
                        size_t best = i;

                        if (c->n_free < k) {
                                pick_take_all(p, p->children[i]);
                                k -= c->n_free;
                                continue;
                        }
                        /* the last fitting child of this group, then the first with as few free */
                        while (best + 1 < n_children &&
                               (p->nodes[p->children[best + 1]].n_must > 0) == must &&
                               p->nodes[p->children[best + 1]].n_free >= k)
                                best++;
                        while (best > i &&
                               p->nodes[p->children[best - 1]].n_free == p->nodes[p->children[best]].n_free)
                                best--;
                        next = p->children[best];
                        break;
                }
                if (next == NONE)
                        return;
                node = next;
        }
}

static int compare_size(const void *a, const void *b) {
        size_t x = *(const size_t *) a, y = *(const size_t *) b;

        return x < y ? -1 : x > y;
}

static bool contains(const size_t *v, size_t n, size_t x) {
        for (size_t i = 0; i < n; i++)
                if (v[i] == x)
                        return true;
        return false;
}

/* Without memory for the scratch array: no locality, O(size × n), but still a valid answer. */
static size_t pick_fallback(const kdp_preferred_index *idx,
                            const size_t *available, size_t n_available,
                            const size_t *must_include, size_t n_must_include,
                            size_t size, size_t *ret_picked) {
        size_t n = 0;

        for (size_t i = 0; i < n_must_include && n < size; i++)
                if (must_include[i] < idx->n_devices && !contains(ret_picked, n, must_include[i]))
                        ret_picked[n++] = must_include[i];
        for (size_t i = 0; i < n_available && n < size; i++)
                if (available[i] < idx->n_devices && !contains(ret_picked, n, available[i]))
                        ret_picked[n++] = available[i];
        return n;
}

size_t kdp_preferred_pick(const kdp_preferred_index *idx,
                          const size_t *available, size_t n_available,
                          const size_t *must_include, size_t n_must_include,
                          size_t size, size_t *ret_picked) {
        _cleanup_free_ pick_node *nodes = NULL;
        size_t n_scratch, n_must, need, n_must_path = 0, start = 0;
        const size_t *must_path = NULL;
        pick p;

        assert(idx);
        assert(available || n_available == 0);
        assert(must_include || n_must_include == 0);
        assert(ret_picked || size == 0);

        if (size == 0)
                return 0;

        n_scratch = idx->n_nodes + idx->n_devices;
        nodes = calloc(n_scratch, sizeof(pick_node) + sizeof(size_t));
        if (!nodes)
                return pick_fallback(idx, available, n_available, must_include, n_must_include,
                                     size, ret_picked);
        p = (pick){ .idx = idx, .nodes = nodes, .children = (size_t *) (nodes + n_scratch),
                    .picked = ret_picked };
        for (size_t i = 0; i < idx->n_nodes; i++)
                nodes[i].first_child = NONE;

        /* must_include first, and the path to their lowest common ancestor */
        for (size_t i = 0; i < n_must_include && p.n_picked < size; i++) {
                size_t d = must_include[i], n;
                const size_t *path;

                if (d >= idx->n_devices || nodes[idx->n_nodes + d].n_must > 0)
                        continue;
                pick_mark_must(&p, d);
                path = device_path(idx, d, &n);
                n_must_path = must_path ? common_prefix(must_path, n_must_path, path, n) : n;
                must_path = path;
        }
        n_must = p.n_picked;
        need = size - n_must;
        if (need == 0)
                return n_must;

        for (size_t i = 0; i < n_available; i++) {
                size_t d = available[i];

                if (d < idx->n_devices && nodes[idx->n_nodes + d].n_must == 0 &&
                    nodes[idx->n_nodes + d].n_free == 0)
                        pick_mark_free(&p, d);
        }

        /* the smallest subtree holding every must_include device and enough free ones */
        for (size_t i = n_must_path; i-- > 1;)
                if (nodes[must_path[i]].n_free >= need) {
                        start = must_path[i];
                        break;
                }
        if (nodes[start].n_free <= need)
                pick_take_all(&p, start);
        else
                pick_fill(&p, start, need);

        qsort(ret_picked + n_must, p.n_picked - n_must, sizeof(size_t), compare_size);
        return p.n_picked;
}
