/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The default GetPreferredAllocation (see preferred.h for the objective and
 * the method).
 *
 * The index holds one path per device: the tree node indices from the root
 * (0) down to the device's location, i.e. its NUMA node and then one node per
 * pci_path component. Nodes are numbered while the paths are built; equal
 * (parent, component) pairs share a node. The paths give distances; the picks
 * work on the compressed tree built from them: its "kept" nodes are the root
 * and every node that holds two devices or more and either has devices of its
 * own or two children or more. Any other node is a link in a chain above a
 * kept node (with the same devices below it) or holds one device only. A
 * kept node's parent has a lower number; the root is kept node 0.
 *
 * A pick works on scratch arrays over the devices and the kept nodes, and,
 * for the exact and scored methods, on stacks for the tables of the dynamic
 * programme (scores, and sets or splits), allocated once at the size
 * tables_cost_of computed for the method: nothing grows while they are
 * built, and a bug in that count fails the method (assert) rather than
 * writing past them.
 */
#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "preferred.h"

#define NONE SIZE_MAX
#define UNNUMBERED (SIZE_MAX - 1)

typedef struct kept_node {
        size_t parent;          /* NONE for the root */
        size_t weight;          /* tree nodes it stands for: its depth minus its parent's (root: 0) */
        size_t depth;           /* depth of its lowest tree node: root 0, NUMA node 1, ... */
        size_t level;           /* kept nodes above it */
        size_t deepest;         /* depth of the deepest bag below it, its own included */
} kept_node;

struct kdp_preferred_index {
        size_t n_devices;
        size_t n_nodes;
        size_t *path_start;     /* [n_devices + 1]: d's path is paths[path_start[d] .. path_start[d + 1]) */
        size_t *paths;          /* node indices, root first, location last */
        size_t n_kept;
        kept_node *kept;        /* [n_kept] */
        size_t *bag_of;         /* [n_devices]: the kept node whose bag holds the device */
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

static const size_t *device_path(const kdp_preferred_index *idx, size_t d, size_t *ret_len) {
        *ret_len = idx->path_start[d + 1] - idx->path_start[d];
        return idx->paths + idx->path_start[d];
}

/* Builds the kept nodes and the bags from the paths (see the top of this file). */
static int index_compress(kdp_preferred_index *idx) {
        size_t n_nodes = idx->n_nodes, n_kept = 0;
        _cleanup_free_ size_t *scratch = calloc(6 * n_nodes, sizeof(size_t));
        size_t *parent, *depth, *total, *own, *n_children, *kept_id;

        if (!scratch)
                return -ENOMEM;
        parent = scratch;
        depth = parent + n_nodes;
        total = depth + n_nodes;
        own = total + n_nodes;
        n_children = own + n_nodes;
        kept_id = n_children + n_nodes;

        for (size_t d = 0; d < idx->n_devices; d++) {
                size_t len;
                const size_t *path = device_path(idx, d, &len);

                for (size_t i = 0; i < len; i++) {
                        parent[path[i]] = i > 0 ? path[i - 1] : NONE;
                        depth[path[i]] = i;
                        total[path[i]]++;
                }
                own[path[len - 1]]++;
        }
        for (size_t v = 1; v < n_nodes; v++)
                n_children[parent[v]]++;
        for (size_t v = 0; v < n_nodes; v++) {
                bool kept = v == 0 || (total[v] >= 2 && (own[v] > 0 || n_children[v] >= 2));

                kept_id[v] = kept ? UNNUMBERED : NONE;
                n_kept += kept;
        }

        idx->kept = calloc(n_kept, sizeof(kept_node));
        idx->bag_of = calloc(idx->n_devices ? idx->n_devices : 1, sizeof(size_t));
        if (!idx->kept || !idx->bag_of)
                return -ENOMEM;

        /* numbered on first sight along the paths, root first: parents before children */
        for (size_t d = 0; d < idx->n_devices; d++) {
                size_t len, last = NONE;
                const size_t *path = device_path(idx, d, &len);

                for (size_t i = 0; i < len; i++) {
                        size_t v = path[i];

                        if (kept_id[v] == NONE)
                                continue;
                        if (kept_id[v] == UNNUMBERED) {
                                kept_id[v] = idx->n_kept++;
                                idx->kept[kept_id[v]] = last == NONE ? (kept_node){ .parent = NONE } : (kept_node){
                                        .parent = kept_id[last],
                                        .weight = depth[v] - depth[last],
                                        .depth = depth[v],
                                        .level = idx->kept[kept_id[last]].level + 1,
                                };
                        }
                        last = v;
                }
                idx->bag_of[d] = kept_id[last];
                idx->kept[kept_id[last]].deepest = depth[last];
        }
        for (size_t k = idx->n_kept; k-- > 1;) {
                kept_node *up = &idx->kept[idx->kept[k].parent];

                up->deepest = up->deepest > idx->kept[k].deepest ? up->deepest : idx->kept[k].deepest;
        }
        return 0;
}

int kdp_preferred_index_new(const kdp_device *devs, size_t n, kdp_preferred_index **ret) {
        _cleanup_(kdp_preferred_index_freep) kdp_preferred_index *idx = NULL;
        _cleanup_free_ node_key *slots = NULL;
        node_table table;
        size_t n_paths = 0, capacity = 1, p = 0;
        int r;

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

        r = index_compress(idx);
        if (r < 0)
                return r;
        *ret = KDP_TAKE_PTR(idx);
        return 0;
}

kdp_preferred_index *kdp_preferred_index_free(kdp_preferred_index *idx) {
        if (!idx)
                return NULL;
        free(idx->path_start);
        free(idx->paths);
        free(idx->kept);
        free(idx->bag_of);
        free(idx);
        return NULL;
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

enum {
        DEVICE_UNUSED,
        DEVICE_MUST,            /* in M */
        DEVICE_FREE,            /* in A */
};

/* Criteria 2 and 3 of a set of picks, relative to picking nothing; compared as a pair. */
typedef struct score {
        int64_t p;              /* closeness within the pick */
        int64_t q;              /* closeness of what stays free */
} score;

typedef struct pick_node {
        size_t n_free;          /* devices of A below */
        size_t n_must;          /* devices of M below */
        size_t n_own;           /* devices of A in its bag */
        size_t bag;             /* where they start in pick.bags, ascending */
        size_t min_device;      /* lowest device of A below */
        size_t first_child;     /* kept children with n_free > 0 */
        size_t next_sibling;
        size_t split;           /* scored: offset in pick.splits of the merge that added it to its parent's table */
        size_t take;            /* scored, greedy: devices of A picked below */
} pick_node;

/* The best picks below one kept node for each count 0..n: one score each and, with sets, the set. */
typedef struct table {
        size_t n;
        size_t scores;          /* offset in pick.scores of [n + 1] */
        size_t sets;            /* offset in pick.sets, set c (c devices) at c(c − 1)/2; NONE: prefixes of bag */
        const size_t *bag;
        size_t min_device;      /* lowest device of A it covers */
} table;

/* A pick's scratch (see the top of this file). */
typedef struct pick {
        const kdp_preferred_index *idx;
        uint8_t *state;         /* [n_devices]: DEVICE_* */
        pick_node *nodes;       /* [n_kept] */
        size_t *bags;           /* every device of A, grouped by bag */
        size_t m;               /* devices to add to M */
        bool with_sets;
        score *scores;          /* stack of the tables' scores */
        size_t n_scores, scores_capacity;
        size_t *sets;           /* stack of the tables' sets */
        size_t n_sets, sets_capacity;
        uint32_t *splits;       /* NULL, or per merge the count its child got, for each count */
        size_t n_splits, splits_capacity;
        uint64_t operations;    /* score operations made */
        uint64_t operations_max;
} pick;

static size_t min_size(size_t a, size_t b) {
        return a < b ? a : b;
}

static size_t max_size(size_t a, size_t b) {
        return a > b ? a : b;
}

static int64_t pairs(size_t n) {
        return (int64_t) (n * (n - (n > 0)) / 2);
}

/* Entries of the sets of a table of n: sets 1..n of 1..n devices. */
static size_t set_entries(size_t n) {
        return n * (n + 1) / 2;
}

/*
 * What a kept node adds when f of its a free devices are picked: its weight
 * times (C(mu + f, 2) − C(mu, 2), C(a − f, 2) − C(a, 2)).
 */
static score node_score(size_t weight, size_t mu, size_t a, size_t f) {
        int64_t w = (int64_t) weight, fi = (int64_t) f;

        return (score){
                .p = w * (fi * (int64_t) mu + pairs(f)),
                .q = w * (pairs(f) - fi * ((int64_t) a - 1)),
        };
}

static score score_add(score a, score b) {
        return (score){ .p = a.p + b.p, .q = a.q + b.q };
}

static int score_compare(score a, score b) {
        if (a.p != b.p)
                return a.p < b.p ? -1 : 1;
        return a.q < b.q ? -1 : a.q > b.q;
}

/* Counts n score operations; false once the limit is passed. */
static bool spend(pick *p, uint64_t n) {
        p->operations += n;
        return p->operations <= p->operations_max;
}

/* Whether the stacks have room for `scores` scores and `sets` set entries in all. */
static bool stacks_have(const pick *p, size_t scores, size_t sets) {
        bool room = scores <= p->scores_capacity && sets <= p->sets_capacity;

        assert(room);           /* tables_cost_of counted them */
        return room;
}

static const size_t *table_set(const pick *p, const table *t, size_t c) {
        if (t->sets == NONE)
                return t->bag;
        return p->sets + t->sets + c * (c - (c > 0)) / 2;
}

/* The bag of kept node v: its c lowest devices for each count c, all of score 0. */
static bool table_of_bag(pick *p, size_t v, table *ret) {
        const pick_node *u = &p->nodes[v];
        table t = {
                .n = min_size(p->m, u->n_own),
                .scores = p->n_scores,
                .sets = NONE,
                .bag = p->bags + u->bag,
                .min_device = u->n_own > 0 ? p->bags[u->bag] : NONE,
        };

        if (!stacks_have(p, t.scores + t.n + 1, 0) || !spend(p, t.n + 1))
                return false;
        memset(p->scores + t.scores, 0, (t.n + 1) * sizeof(score));
        p->n_scores += t.n + 1;
        *ret = t;
        return true;
}

/*
 * The lowest device in exactly one of the sorted sets x and y, and whether it
 * is in x; NONE when they are equal. Counts its steps.
 */
static size_t first_difference(pick *p, const size_t *x, size_t n_x, const size_t *y, size_t n_y, bool *ret_in_x) {
        size_t i = 0, j = 0;

        while (i < n_x && j < n_y && x[i] == y[j])
                i++, j++;
        p->operations += i + 1;
        if (i < n_x && (j == n_y || x[i] < y[j])) {
                *ret_in_x = true;
                return x[i];
        }
        *ret_in_x = false;
        return j < n_y ? y[j] : NONE;
}

/*
 * Whether a's set of c − s with b's set of s is lower than a's set of c −
 * best with b's set of best: the two unions compare by the lowest device in
 * one and not the other; a and b share no device.
 */
static bool union_is_lower(pick *p, const table *a, const table *b, size_t c, size_t s, size_t best) {
        bool x_new, y_new;
        size_t x = first_difference(p, table_set(p, a, c - s), c - s, table_set(p, a, c - best), c - best, &x_new);
        size_t y = first_difference(p, table_set(p, b, s), s, table_set(p, b, best), best, &y_new);

        return x < y ? x_new : y_new;
}

static void merge_sets(const size_t *x, size_t n_x, const size_t *y, size_t n_y, size_t *out) {
        size_t i = 0, j = 0;

        while (i < n_x || j < n_y)
                *out++ = j == n_y || (i < n_x && x[i] < y[j]) ? x[i++] : y[j++];
}

/*
 * The best of a and b together (disjoint subtrees; b is the table of kept
 * node `child`) for each count, pushed on the stacks. Ties go: with sets, to
 * the lower union; recording splits, to more of b if b's lowest device is
 * below a's, else to less of b.
 */
static bool table_merge(pick *p, const table *a, const table *b, size_t child, table *ret) {
        size_t n = min_size(p->m, a->n + b->n);
        table t = {
                .n = n,
                .scores = p->n_scores,
                .sets = p->with_sets ? p->n_sets : NONE,
                .min_device = min_size(a->min_device, b->min_device),
        };
        bool more_of_b = b->min_device < a->min_device;

        if (!stacks_have(p, t.scores + n + 1, p->with_sets ? t.sets + set_entries(n) : 0) ||
            (p->splits && p->n_splits + n + 1 > p->splits_capacity))
                return false;
        p->n_scores += n + 1;
        if (p->with_sets)
                p->n_sets += set_entries(n);

        for (size_t c = 0; c <= n; c++) {
                size_t lo = c > a->n ? c - a->n : 0, hi = min_size(c, b->n), best = lo;
                score best_score = score_add(p->scores[a->scores + c - lo], p->scores[b->scores + lo]);

                if (!spend(p, hi - lo + 1 + (p->with_sets ? c : 0)))
                        return false;
                for (size_t s = lo + 1; s <= hi; s++) {
                        score x = score_add(p->scores[a->scores + c - s], p->scores[b->scores + s]);
                        int r = score_compare(x, best_score);

                        if (r == 0 && p->with_sets) {
                                r = union_is_lower(p, a, b, c, s, best) ? 1 : -1;
                                if (p->operations > p->operations_max)
                                        return false;
                        } else if (r == 0 && p->splits && more_of_b)
                                r = 1;
                        if (r > 0) {
                                best = s;
                                best_score = x;
                        }
                }
                p->scores[t.scores + c] = best_score;
                if (p->with_sets)
                        merge_sets(table_set(p, a, c - best), c - best, table_set(p, b, best), best,
                                   p->sets + t.sets + c * (c - (c > 0)) / 2);
                if (p->splits)
                        p->splits[p->n_splits + c] = (uint32_t) best;
        }
        if (p->splits) {
                p->nodes[child].split = p->n_splits;
                p->n_splits += n + 1;
        }
        *ret = t;
        return true;
}

/* Moves table t down to the given stack offsets (at or below where it is) and drops what was above. */
static void table_move(pick *p, table *t, size_t scores, size_t sets) {
        memmove(p->scores + scores, p->scores + t->scores, (t->n + 1) * sizeof(score));
        t->scores = scores;
        p->n_scores = scores + t->n + 1;
        p->n_sets = sets;
        if (t->sets != NONE) {
                memmove(p->sets + sets, p->sets + t->sets, set_entries(t->n) * sizeof(size_t));
                t->sets = sets;
                p->n_sets += set_entries(t->n);
        }
}

/* The table of kept node v's subtree, pushed on the stacks. */
static bool table_of_subtree(pick *p, size_t v, table *ret) {
        size_t mark_scores = p->n_scores, mark_sets = p->n_sets;
        const pick_node *u = &p->nodes[v];
        table acc;

        if (!table_of_bag(p, v, &acc))
                return false;
        for (size_t c = u->first_child; c != NONE; c = p->nodes[c].next_sibling) {
                table child, merged;

                if (!table_of_subtree(p, c, &child))
                        return false;
                if (acc.n == 0)
                        merged = child;
                else if (!table_merge(p, &acc, &child, c, &merged))
                        return false;
                table_move(p, &merged, mark_scores, mark_sets);
                acc = merged;
        }
        if (!spend(p, acc.n + 1))
                return false;
        for (size_t c = 0; c <= acc.n; c++)
                p->scores[acc.scores + c] = score_add(p->scores[acc.scores + c],
                                                      node_score(p->idx->kept[v].weight, u->n_must, u->n_free, c));
        *ret = acc;
        return true;
}

/* What building a table takes (subtree_need). */
typedef struct tables_need {
        size_t scores;          /* the most scores on the stack at once */
        size_t sets;            /* the most set entries at once, with sets */
        size_t splits;          /* split entries of the table */
        uint64_t operations;    /* rows written and score sums, with and without sets */
        uint64_t set_entries;   /* set entries written by merges, with sets */
} tables_need;

/* Score sums of a merge of tables of a and b into n = min(m, a + b): the (i, j), i ≤ a, j ≤ b, i + j ≤ n. */
static uint64_t merge_sums(uint64_t a, uint64_t b, uint64_t n) {
        uint64_t k, over;

        if (n == a + b)
                return (a + 1) * (b + 1);
        /* (a − i) + (b − j) ≤ k, less the parts past a or past b */
        k = a + b - n - 1;
        over = (k + 1) * (k + 2) / 2;
        if (k > a)
                over -= (k - a) * (k - a + 1) / 2;
        if (k > b)
                over -= (k - b) * (k - b + 1) / 2;
        return (a + 1) * (b + 1) - over;
}

/*
 * What table_of_subtree(v) takes, the stacks holding `scores` scores and
 * `sets` set entries when it starts (with sets): the peaks, the split entries
 * and the operations (but for tie comparisons) go into *need. Returns the
 * table's n and in *ret_sets its set entries. O(nodes below v).
 */
static size_t subtree_need(const pick *p, size_t v, size_t scores, size_t sets, tables_need *need, size_t *ret_sets) {
        const pick_node *u = &p->nodes[v];
        size_t t = min_size(p->m, u->n_own), t_sets = 0;

        need->scores = max_size(need->scores, scores + t + 1);
        need->operations += t + 1;
        for (size_t c = u->first_child; c != NONE; c = p->nodes[c].next_sibling) {
                size_t c_sets, ct = subtree_need(p, c, scores + t + 1, sets + t_sets, need, &c_sets), n;

                if (t == 0) {
                        t = ct;
                        t_sets = c_sets;
                        continue;
                }
                n = min_size(p->m, t + ct);
                need->scores = max_size(need->scores, scores + (t + 1) + (ct + 1) + (n + 1));
                need->sets = max_size(need->sets, sets + t_sets + c_sets + set_entries(n));
                need->splits += n + 1;
                need->operations += merge_sums(t, ct, n);
                need->set_entries += set_entries(n);
                t = n;
                t_sets = set_entries(n);
        }
        need->operations += t + 1;
        *ret_sets = t_sets;
        return t;
}

/* The best score of m picks below kept node x, x included. */
static bool subtree_score(pick *p, size_t x, score *ret) {
        table t;

        p->n_scores = p->n_sets = 0;
        if (!table_of_subtree(p, x, &t))
                return false;
        assert(t.n == p->m);
        *ret = p->scores[t.scores + p->m];
        return true;
}

/* What x's ancestors add when all m picks are below x (the same for x's siblings). */
static score ancestors_score(const pick *p, size_t x) {
        score s = { 0, 0 };

        for (size_t a = p->idx->kept[x].parent; a != NONE; a = p->idx->kept[a].parent)
                s = score_add(s, node_score(p->idx->kept[a].weight, p->nodes[a].n_must, p->nodes[a].n_free, p->m));
        return s;
}

/*
 * m = 1: both criteria are sums along the device's path, so the best single
 * device is the first of the bag with the best path.
 */
static void best_single(const pick *p, size_t v, score above, score *best, size_t *ret) {
        const pick_node *u = &p->nodes[v];
        score s = score_add(above, node_score(p->idx->kept[v].weight, u->n_must, u->n_free, 1));

        if (u->n_own > 0) {
                size_t d = p->bags[u->bag];
                int r = *ret == NONE ? 1 : score_compare(s, *best);

                if (r > 0 || (r == 0 && d < *ret)) {
                        *best = s;
                        *ret = d;
                }
        }
        for (size_t c = u->first_child; c != NONE; c = p->nodes[c].next_sibling)
                best_single(p, c, s, best, ret);
}

static int compare_size(const void *a, const void *b) {
        size_t x = *(const size_t *) a, y = *(const size_t *) b;

        return x < y ? -1 : x > y;
}

/* Sorts the picks ascending; they often come sorted (one bag's, or whole subtrees in order). */
static void sort_picks(size_t *v, size_t n) {
        for (size_t i = 1; i < n; i++)
                if (v[i - 1] > v[i]) {
                        qsort(v, n, sizeof(size_t), compare_size);
                        return;
                }
}

/* Appends every device of A below x to out (unsorted); returns the end. */
static size_t *take_all(const pick *p, size_t x, size_t *out) {
        const pick_node *u = &p->nodes[x];

        memcpy(out, p->bags + u->bag, u->n_own * sizeof(size_t));
        out += u->n_own;
        for (size_t c = u->first_child; c != NONE; c = p->nodes[c].next_sibling)
                out = take_all(p, c, out);
        return out;
}

/* The best m picks below candidate x, ascending, into out: exact. */
static bool candidate_set(pick *p, size_t x, size_t *out) {
        table t;

        if (p->m == 1) {
                score none = { 0, 0 }, best = { 0, 0 };

                out[0] = NONE;
                best_single(p, x, none, &best, out);
                return true;
        }
        if (p->nodes[x].n_free == p->m) {
                (void) take_all(p, x, out);
                sort_picks(out, p->m);
                return true;
        }
        p->with_sets = true;
        p->n_scores = p->n_sets = 0;
        if (!table_of_subtree(p, x, &t))
                return false;
        memcpy(out, table_set(p, &t, p->m), p->m * sizeof(size_t));
        return true;
}

static size_t kept_lca(const kdp_preferred_index *idx, size_t a, size_t b) {
        while (idx->kept[a].level > idx->kept[b].level)
                a = idx->kept[a].parent;
        while (idx->kept[b].level > idx->kept[a].level)
                b = idx->kept[b].parent;
        while (a != b) {
                a = idx->kept[a].parent;
                b = idx->kept[b].parent;
        }
        return a;
}

/*
 * Counts M and A per kept node, links the nodes holding some of A to their
 * parents, fills the bags: O(n_devices + n_kept + |M| × depth).
 */
static void pick_count(pick *p, const size_t *must, size_t n_must) {
        const kdp_preferred_index *idx = p->idx;
        size_t offset = 0;

        for (size_t k = 0; k < idx->n_kept; k++)
                p->nodes[k] = (pick_node){
                        .min_device = NONE,
                        .first_child = NONE,
                        .next_sibling = NONE,
                        .split = NONE,
                };
        for (size_t i = 0; i < n_must; i++)
                for (size_t k = idx->bag_of[must[i]]; k != NONE; k = idx->kept[k].parent)
                        p->nodes[k].n_must++;
        /*
         * Ascending, so that bags are sorted and a bag's first device is its
         * lowest; without branches on the state, which follows no pattern
         * (a device not free goes to the spare slot at the end of bags).
         */
        for (size_t d = 0; d < idx->n_devices; d++) {
                pick_node *u = &p->nodes[idx->bag_of[d]];
                bool is_free = p->state[d] == DEVICE_FREE;

                u->min_device = min_size(u->min_device, is_free ? d : NONE);
                u->n_own += is_free;
        }
        for (size_t k = 0; k < idx->n_kept; k++) {
                p->nodes[k].bag = offset;
                offset += p->nodes[k].n_own;
        }
        for (size_t d = 0; d < idx->n_devices; d++) {
                pick_node *u = &p->nodes[idx->bag_of[d]];
                bool is_free = p->state[d] == DEVICE_FREE;

                p->bags[is_free ? u->bag : offset] = d;
                u->bag += is_free;
        }
        /* children have higher numbers than their parents */
        for (size_t k = idx->n_kept; k-- > 0;) {
                pick_node *u = &p->nodes[k], *parent;

                u->bag -= u->n_own;
                u->n_free += u->n_own;
                if (u->n_free == 0 || k == 0)
                        continue;
                parent = &p->nodes[idx->kept[k].parent];
                parent->n_free += u->n_free;
                parent->min_device = min_size(parent->min_device, u->min_device);
                u->next_sibling = parent->first_child;
                parent->first_child = k;
        }
}

/* Criterion 1: the candidates for the lowest common ancestor, into ret (room for n_kept). */
static size_t pick_candidates(const pick *p, const size_t *must, size_t n_must, size_t *ret) {
        const kdp_preferred_index *idx = p->idx;
        size_t n = 0, depth = 0;

        if (n_must > 0) {
                size_t x = idx->bag_of[must[0]];

                for (size_t i = 1; i < n_must; i++)
                        x = kept_lca(idx, x, idx->bag_of[must[i]]);
                while (p->nodes[x].n_free < p->m)
                        x = idx->kept[x].parent;
                ret[0] = x;
                return 1;
        }
        if (p->m == 1) {
                ret[0] = 0;
                return 1;
        }
        for (size_t k = 0; k < idx->n_kept; k++) {
                if (p->nodes[k].n_free < p->m || idx->kept[k].depth < depth)
                        continue;
                if (idx->kept[k].depth > depth) {
                        depth = idx->kept[k].depth;
                        n = 0;
                }
                ret[n++] = k;
        }
        return n;
}

typedef struct candidate {
        size_t node;
        size_t min_device;
        score above;            /* what its ancestors add */
        int64_t bound;          /* at least score.p */
        score score;
        bool scored;
} candidate;

static int compare_size_descending(const void *a, const void *b) {
        return compare_size(b, a);
}

/*
 * An upper bound of the p of candidate x (several candidates: M is empty).
 * x adds its exact share; a pair below child c of x adds at most the depth of
 * c's deepest bag below x; and Σ C(f_c, 2) over the children, f_c no more
 * than their free devices, Σ f_c ≤ m, is largest when the fullest children
 * are filled first.
 */
static int64_t candidate_bound(const pick *p, size_t x, size_t *scratch) {
        const kdp_preferred_index *idx = p->idx;
        size_t n = 0, left = p->m, reach = 0;
        int64_t pairs_below = 0;

        for (size_t c = p->nodes[x].first_child; c != NONE; c = p->nodes[c].next_sibling) {
                scratch[n++] = p->nodes[c].n_free;
                if (idx->kept[c].deepest - idx->kept[x].depth > reach)
                        reach = idx->kept[c].deepest - idx->kept[x].depth;
        }
        if (n > 1)
                qsort(scratch, n, sizeof(size_t), compare_size_descending);
        for (size_t i = 0; i < n && left > 0; i++) {
                pairs_below += pairs(min_size(scratch[i], left));
                left -= min_size(scratch[i], left);
        }
        return node_score(idx->kept[x].weight, p->nodes[x].n_must, p->nodes[x].n_free, p->m).p +
               (int64_t) reach * pairs_below;
}

/* Whether the subtrees of x and y hold the same counts in the same shape: then they score the same. */
static bool subtree_equal(const pick *p, size_t x, size_t y) {
        const pick_node *u = &p->nodes[x], *v = &p->nodes[y];
        size_t a = u->first_child, b = v->first_child;

        if (p->idx->kept[x].weight != p->idx->kept[y].weight || u->n_free != v->n_free ||
            u->n_own != v->n_own || u->n_must != v->n_must)
                return false;
        for (; a != NONE && b != NONE; a = p->nodes[a].next_sibling, b = p->nodes[b].next_sibling)
                if (!subtree_equal(p, a, b))
                        return false;
        return a == NONE && b == NONE;
}

/*
 * The candidates with what their ancestors add and the bound of their p,
 * into c (room for n), and the highest bound.
 */
static int64_t candidates_bound(const pick *p, const size_t *nodes, size_t n, candidate *c, size_t *scratch) {
        size_t last_parent = NONE;
        score above = { 0, 0 };
        int64_t top = INT64_MIN;

        for (size_t i = 0; i < n; i++) {
                if (p->idx->kept[nodes[i]].parent != last_parent) {
                        last_parent = p->idx->kept[nodes[i]].parent;
                        above = ancestors_score(p, nodes[i]);
                }
                c[i] = (candidate){
                        .node = nodes[i],
                        .min_device = p->nodes[nodes[i]].min_device,
                        .above = above,
                        .bound = above.p + candidate_bound(p, nodes[i], scratch),
                };
                if (c[i].bound > top)
                        top = c[i].bound;
        }
        return top;
}

/*
 * Scores the candidates without sets, those with the highest bound first,
 * while their bound reaches the best score (a subtree like the last one
 * scored takes its score). Returns the best one with the lowest free device,
 * or NONE when the limit was reached.
 */
static size_t candidates_score(pick *p, candidate *c, size_t n, int64_t top, score *ret_best) {
        size_t last = NONE, first = NONE;
        score last_score = { 0, 0 }, best = { INT64_MIN, INT64_MIN };

        p->with_sets = false;
        for (unsigned round = 0; round < 2; round++)
                for (size_t i = 0; i < n; i++) {
                        if (c[i].scored || (round == 0 ? c[i].bound < top : c[i].bound < best.p))
                                continue;
                        if (last == NONE || !subtree_equal(p, last, c[i].node)) {
                                if (!subtree_score(p, c[i].node, &last_score))
                                        return NONE;
                                last = c[i].node;
                        }
                        c[i].score = score_add(last_score, c[i].above);
                        c[i].scored = true;
                        if (score_compare(c[i].score, best) > 0)
                                best = c[i].score;
                }
        for (size_t i = 0; i < n; i++)
                if (c[i].scored && score_compare(c[i].score, best) == 0 &&
                    (first == NONE || c[i].min_device < c[first].min_device))
                        first = i;
        *ret_best = best;
        return first;
}

/*
 * Exact: criteria 2 to 4 over the candidates, the m devices to add,
 * ascending, into out; false when the limit was reached. Of the best
 * candidates, sets are built from the lowest free device up, and then only
 * for a candidate whose lowest free device is below the first device of the
 * set found.
 */
static bool pick_exact(pick *p, const size_t *nodes, size_t n, candidate *c, size_t *set, size_t *scratch,
                       size_t *out) {
        size_t first;
        score best;

        if (n == 1)
                return candidate_set(p, nodes[0], out);
        first = candidates_score(p, c, n, candidates_bound(p, nodes, n, c, scratch), &best);
        if (first == NONE || !candidate_set(p, c[first].node, out))
                return false;
        for (size_t i = 0; i < n; i++) {
                if (i == first || !c[i].scored || score_compare(c[i].score, best) != 0 ||
                    c[i].min_device >= out[0])
                        continue;
                if (!candidate_set(p, c[i].node, set))
                        return false;
                if (set[0] < out[0])
                        memcpy(out, set, p->m * sizeof(size_t));
        }
        return true;
}

/*
 * Appends the picks below x to out (unsorted): x takes pick_node.take, and
 * each node's children what their splits say (traced: last child first) or
 * their own take, and its bag the rest, lowest first. `stack` has room for
 * the nodes below x.
 */
static void emit_takes(pick *p, size_t x, bool traced, size_t *stack, size_t *out) {
        size_t top = 0;

        stack[top++] = x;
        while (top > 0) {
                size_t v = stack[--top], left = p->nodes[v].take, base = top;

                for (size_t c = p->nodes[v].first_child; c != NONE; c = p->nodes[c].next_sibling)
                        stack[top++] = c;
                for (size_t i = top; i-- > base;) {
                        pick_node *u = &p->nodes[stack[i]];

                        if (traced)
                                u->take = u->split == NONE ? left : p->splits[u->split + left];
                        left -= u->take;
                }
                assert(left <= p->nodes[v].n_own);
                memcpy(out, p->bags + p->nodes[v].bag, left * sizeof(size_t));
                out += left;
                for (size_t i = base; i < top; i++)
                        if (p->nodes[stack[i]].take > 0)
                                stack[base++] = stack[i];
                top = base;
        }
}

/*
 * Scored: criteria 1 to 3 exact, 4 by the tie rules of table_merge and the
 * lowest free device among the best candidates; false when the limit was
 * reached. The tables hold scores and, for the candidate taken, each merge's
 * best split for each count, traced back from its table.
 */
static bool pick_scored(pick *p, const size_t *nodes, size_t n, candidate *c, size_t *scratch, size_t *out) {
        size_t x = nodes[0];
        uint32_t *splits = p->splits;
        table t;

        if (n > 1) {
                size_t first;
                score best;

                p->splits = NULL;
                first = candidates_score(p, c, n, candidates_bound(p, nodes, n, c, scratch), &best);
                p->splits = splits;
                if (first == NONE)
                        return false;
                x = c[first].node;
        }
        if (p->nodes[x].n_free == p->m) {
                (void) take_all(p, x, out);
                sort_picks(out, p->m);
                return true;
        }
        p->with_sets = false;
        p->n_scores = p->n_sets = p->n_splits = 0;
        if (!table_of_subtree(p, x, &t))
                return false;
        p->nodes[x].take = p->m;
        emit_takes(p, x, true, scratch, out);
        sort_picks(out, p->m);
        return true;
}

/* ---- greedy: no tables ---- */

typedef struct greedy_child {
        size_t node;
        size_t n_free;
        size_t n_must;
        size_t min_device;
} greedy_child;

/* Most of M and A first, then the lowest free device. */
static int greedy_child_compare(const void *a, const void *b) {
        const greedy_child *x = a, *y = b;

        if (x->n_free + x->n_must != y->n_free + y->n_must)
                return x->n_free + x->n_must > y->n_free + y->n_must ? -1 : 1;
        return x->min_device < y->min_device ? -1 : x->min_device > y->min_device;
}

/* Sets take to what it holds of A on every node below v, v included, and adds their score to *s. */
static void greedy_whole(pick *p, size_t v, score *s) {
        pick_node *u = &p->nodes[v];

        u->take = u->n_free;
        *s = score_add(*s, node_score(p->idx->kept[v].weight, u->n_must, u->n_free, u->n_free));
        for (size_t c = u->first_child; c != NONE; c = p->nodes[c].next_sibling)
                greedy_whole(p, c, s);
}

static void greedy_clear(pick *p, size_t v) {
        p->nodes[v].take = 0;
        for (size_t c = p->nodes[v].first_child; c != NONE; c = p->nodes[c].next_sibling)
                greedy_clear(p, c);
}

/*
 * A fill of m below candidate x (pick_node.take), and its score: at each
 * node, children whole while they fit, those with most of M and A first; the
 * rest into one more child (the one with most of M, then fewest free, then
 * lowest device), followed down, or into the node's own bag when no child
 * is left or when one device goes where no device of M is. O(nodes below x
 * × log).
 */
static score greedy_fill(pick *p, size_t x, greedy_child *scratch) {
        score s = { 0, 0 };
        size_t v = x, left = p->m;

        greedy_clear(p, x);
        while (left > 0) {
                pick_node *u = &p->nodes[v];
                size_t n = 0, next = NONE;

                if (left == u->n_free) {
                        greedy_whole(p, v, &s);
                        break;
                }
                u->take = left;
                s = score_add(s, node_score(p->idx->kept[v].weight, u->n_must, u->n_free, left));
                for (size_t c = u->first_child; c != NONE; c = p->nodes[c].next_sibling)
                        scratch[n++] = (greedy_child){
                                .node = c,
                                .n_free = p->nodes[c].n_free,
                                .n_must = p->nodes[c].n_must,
                                .min_device = p->nodes[c].min_device,
                        };
                if (n > 1)
                        qsort(scratch, n, sizeof(greedy_child), greedy_child_compare);
                for (size_t i = 0; i < n; i++)
                        if (scratch[i].n_free <= left) {
                                greedy_whole(p, scratch[i].node, &s);
                                left -= scratch[i].n_free;
                        }
                for (size_t i = 0; i < n && left > 0; i++) {
                        const greedy_child *g = &scratch[i], *b = next == NONE ? NULL : &scratch[next];

                        if (p->nodes[g->node].take > 0)
                                continue;       /* taken whole */
                        if (!b || g->n_must > b->n_must ||
                            (g->n_must == b->n_must && (g->n_free < b->n_free ||
                                                        (g->n_free == b->n_free && g->min_device < b->min_device))))
                                next = i;
                }
                if (next == NONE || (left == 1 && u->n_own > 0 && scratch[next].n_must == 0))
                        break;
                v = scratch[next].node;
        }
        return s;
}

/*
 * Greedy: criterion 1 only. Fills each candidate (greedy_fill) and takes
 * the fill that scores best, then the one with the lowest free device.
 */
static void pick_greedy(pick *p, const size_t *nodes, size_t n, greedy_child *scratch, size_t *stack, size_t *out) {
        size_t best_node = NONE, last_parent = NONE;
        score best = { 0, 0 }, above = { 0, 0 };

        for (size_t i = 0; i < n; i++) {
                score s;

                if (p->idx->kept[nodes[i]].parent != last_parent) {
                        last_parent = p->idx->kept[nodes[i]].parent;
                        above = ancestors_score(p, nodes[i]);
                }
                s = score_add(above, greedy_fill(p, nodes[i], scratch));
                if (best_node == NONE || score_compare(s, best) > 0 ||
                    (score_compare(s, best) == 0 && p->nodes[nodes[i]].min_device < p->nodes[best_node].min_device)) {
                        best = s;
                        best_node = nodes[i];
                }
        }
        /* the candidates' subtrees are disjoint: the best one's takes are still there */
        emit_takes(p, best_node, false, stack, out);
        sort_picks(out, p->m);
}

/* ---- the methods in turn ---- */

/* What the methods with tables need for the candidates, in bytes and score operations. */
typedef struct tables_cost {
        size_t scores, sets, splits;    /* the most any candidate needs */
        size_t exact_bytes, scored_bytes;
        uint64_t exact_operations, scored_operations;
} tables_cost;

/*
 * The tables of each candidate, simulated (subtree_need): with several
 * candidates, all are scored without sets (at most: the bounds prune some),
 * then the exact method builds sets for one (and for more only when they
 * tie, counted as they are built) and the scored one its splits. O(nodes
 * below the candidates).
 */
static void tables_cost_of(const pick *p, const size_t *nodes, size_t n, tables_cost *ret) {
        uint64_t scoring = 0, with_sets = 0, without = 0;
        tables_cost cost = { 0 };

        for (size_t i = 0; i < n; i++) {
                tables_need need = { 0 };
                size_t sets;

                (void) subtree_need(p, nodes[i], 0, 0, &need, &sets);
                cost.scores = max_size(cost.scores, need.scores);
                cost.sets = max_size(cost.sets, need.sets);
                cost.splits = max_size(cost.splits, need.splits);
                scoring += n > 1 ? need.operations : 0;
                with_sets = with_sets > need.operations + need.set_entries ? with_sets : need.operations + need.set_entries;
                without = without > need.operations ? without : need.operations;
        }
        cost.exact_bytes = cost.scores * sizeof(score) + cost.sets * sizeof(size_t);
        cost.scored_bytes = cost.scores * sizeof(score) + cost.splits * sizeof(uint32_t);
        cost.exact_operations = scoring + with_sets;
        cost.scored_operations = scoring + without;
        *ret = cost;
}

static bool candidates_are_bags(const pick *p, const size_t *nodes, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (p->nodes[nodes[i]].first_child != NONE)
                        return false;
        return true;
}

/* The stacks for a method: scores, and sets or splits; false without memory. */
static bool stacks_new(pick *p, size_t scores, size_t sets, size_t splits) {
        p->scores = malloc(max_size(scores, 1) * sizeof(score));
        p->sets = malloc(max_size(sets, 1) * sizeof(size_t));
        p->splits = splits > 0 ? malloc(splits * sizeof(uint32_t)) : NULL;     /* NULL: no splits recorded */
        p->scores_capacity = scores;
        p->sets_capacity = sets;
        p->splits_capacity = splits;
        p->operations = 0;
        return p->scores && p->sets && (splits == 0 || p->splits);
}

static void stacks_free(pick *p) {
        free(p->scores);
        free(p->sets);
        free(p->splits);
        p->scores = NULL;
        p->sets = NULL;
        p->splits = NULL;
        p->scores_capacity = p->sets_capacity = p->splits_capacity = 0;
}

/*
 * The m devices to add, ascending, into out, by the most exact method the
 * limits allow; returns the method, or -ENOMEM without memory for the
 * arrays over the candidates and kept nodes.
 */
static int pick_best(pick *p, const size_t *nodes, size_t n, const kdp_preferred_limits *limits, size_t *out) {
        _cleanup_free_ candidate *c = NULL;
        _cleanup_free_ size_t *set = NULL, *scratch = NULL;
        _cleanup_free_ greedy_child *children = NULL;
        tables_cost cost;
        bool ok;

        /* no tables */
        if (p->m == 1 || (n == 1 && p->nodes[nodes[0]].n_free == p->m)) {
                ok = candidate_set(p, nodes[0], out);
                assert(ok);
                return KDP_PREFERRED_EXACT;
        }

        c = malloc(n * sizeof(candidate));
        set = malloc(p->m * sizeof(size_t));
        scratch = malloc(p->idx->n_kept * sizeof(size_t));
        children = malloc(p->idx->n_kept * sizeof(greedy_child));
        if (!c || !set || !scratch || !children)
                return -ENOMEM;
        /* a bag is filled one way only: the greedy score is its score, and the set its lowest m */
        if (candidates_are_bags(p, nodes, n)) {
                pick_greedy(p, nodes, n, children, scratch, out);
                return KDP_PREFERRED_EXACT;
        }
        tables_cost_of(p, nodes, n, &cost);
        p->operations_max = limits->operations;

        if (limits->method <= KDP_PREFERRED_EXACT &&
            cost.exact_bytes <= limits->table_bytes && cost.exact_operations <= limits->operations) {
                ok = stacks_new(p, cost.scores, cost.sets, 0) && pick_exact(p, nodes, n, c, set, scratch, out);
                stacks_free(p);
                if (ok)
                        return KDP_PREFERRED_EXACT;
        }
        if (limits->method <= KDP_PREFERRED_SCORED && p->m <= UINT32_MAX &&
            cost.scored_bytes <= limits->table_bytes && cost.scored_operations <= limits->operations) {
                ok = stacks_new(p, cost.scores, 0, cost.splits) && pick_scored(p, nodes, n, c, scratch, out);
                stacks_free(p);
                if (ok)
                        return KDP_PREFERRED_SCORED;
        }
        pick_greedy(p, nodes, n, children, scratch, out);
        return KDP_PREFERRED_GREEDY;
}

static bool contains(const size_t *v, size_t n, size_t x) {
        for (size_t i = 0; i < n; i++)
                if (v[i] == x)
                        return true;
        return false;
}

/* Without memory for the scratch state: no locality, O(size × n), but still a valid answer. */
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

size_t kdp_preferred_pick_limited(const kdp_preferred_index *idx,
                                  const size_t *available, size_t n_available,
                                  const size_t *must_include, size_t n_must_include,
                                  size_t size, const kdp_preferred_limits *limits,
                                  size_t *ret_picked, kdp_preferred_method *ret_method) {
        _cleanup_free_ uint8_t *state = NULL;
        _cleanup_free_ pick_node *nodes = NULL;
        _cleanup_free_ size_t *bags = NULL, *candidates = NULL;
        size_t n_must = 0, n_free = 0, n_candidates;
        kdp_preferred_method method = KDP_PREFERRED_EXACT;
        pick p;
        int r;

        assert(idx);
        assert(available || n_available == 0);
        assert(must_include || n_must_include == 0);
        assert(limits && limits->method >= 0 && limits->method < _KDP_PREFERRED_METHOD_MAX);
        assert(ret_picked || size == 0);

        if (ret_method)
                *ret_method = KDP_PREFERRED_EXACT;
        if (size == 0)
                return 0;
        state = calloc(idx->n_devices + 1, sizeof(uint8_t));
        if (!state) {
                if (ret_method)
                        *ret_method = KDP_PREFERRED_NO_MEMORY;
                return pick_fallback(idx, available, n_available, must_include, n_must_include,
                                     size, ret_picked);
        }

        for (size_t i = 0; i < n_must_include && n_must < size; i++) {
                size_t d = must_include[i];

                if (d < idx->n_devices && state[d] == DEVICE_UNUSED) {
                        state[d] = DEVICE_MUST;
                        ret_picked[n_must++] = d;
                }
        }
        for (size_t i = 0; i < n_available; i++) {
                size_t d = available[i];

                if (d < idx->n_devices && state[d] == DEVICE_UNUSED) {
                        state[d] = DEVICE_FREE;
                        n_free++;
                }
        }
        if (n_must == size || n_free == 0)
                return n_must;
        if (size - n_must >= n_free) {
                size_t n = n_must;

                for (size_t d = 0; d < idx->n_devices; d++)
                        if (state[d] == DEVICE_FREE)
                                ret_picked[n++] = d;
                return n;
        }

        nodes = malloc(idx->n_kept * sizeof(pick_node));
        bags = malloc((n_free + 1) * sizeof(size_t));
        candidates = malloc(idx->n_kept * sizeof(size_t));
        r = -ENOMEM;
        if (nodes && bags && candidates) {
                p = (pick){ .idx = idx, .state = state, .nodes = nodes, .bags = bags, .m = size - n_must };
                pick_count(&p, ret_picked, n_must);
                n_candidates = pick_candidates(&p, ret_picked, n_must, candidates);
                r = pick_best(&p, candidates, n_candidates, limits, ret_picked + n_must);
        }
        if (r < 0) {
                method = KDP_PREFERRED_NO_MEMORY;
                size = pick_fallback(idx, available, n_available, must_include, n_must_include, size, ret_picked);
        } else
                method = (kdp_preferred_method) r;
        if (ret_method)
                *ret_method = method;
        return size;
}

size_t kdp_preferred_pick(const kdp_preferred_index *idx,
                          const size_t *available, size_t n_available,
                          const size_t *must_include, size_t n_must_include,
                          size_t size, size_t *ret_picked) {
        static const kdp_preferred_limits limits = {
                .table_bytes = KDP_PREFERRED_TABLE_BYTES_MAX,
                .operations = KDP_PREFERRED_OPERATIONS_MAX,
                .method = KDP_PREFERRED_EXACT,
        };

        return kdp_preferred_pick_limited(idx, available, n_available, must_include, n_must_include, size,
                                          &limits, ret_picked, NULL);
}
