/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `kdpctl who`'s join and its two formats (see ctl-who-table.h).
 *
 * Every (resource, device ID) the inputs name becomes an `entry` pointing
 * into its message: one per ID of each ContainerDevices of a container
 * (List) or of GetAllocatableResources, one per device of a plugin's list.
 * Sorted by resource, ID, source and holder, each run of one device gives
 * its rows. The kubelet's entries are sorted first on their own, to tell
 * the plugins' resources from them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdp/cleanup.h>

#include "ctl-client.h"
#include "ctl-kubelet.h"
#include "ctl-who-table.h"

#define N_COLUMNS 7

/* The sort order of a device's entries: the plugin's first, the holders last. */
typedef enum source {
        FROM_PLUGIN,
        FROM_ALLOCATABLE,
        FROM_POD,
} source;

typedef struct entry {
        const char *resource, *id;
        source from;
        const V1__PodResources *pod;                    /* FROM_POD */
        const V1__ContainerResources *container;        /* FROM_POD */
        const V1__TopologyInfo *topology;               /* FROM_POD, FROM_ALLOCATABLE */
        const V1beta1__Device *device;                  /* FROM_PLUGIN */
} entry;

typedef struct entries {
        entry *v;
        size_t n;
} entries;

static void entries_done(entries *e) {
        free(e->v);
}

static int cmp_holder(const entry *x, const entry *y) {
        int c = strcmp(x->pod->namespace_, y->pod->namespace_);

        if (c == 0)
                c = strcmp(x->pod->name, y->pod->name);
        return c ? c : strcmp(x->container->name, y->container->name);
}

static int cmp_entry(const void *a, const void *b) {
        const entry *x = a, *y = b;
        int c = strcmp(x->resource, y->resource);

        if (c == 0)
                c = strcmp(x->id, y->id);
        if (c == 0)
                c = (int) x->from - (int) y->from;
        if (c == 0 && x->from == FROM_POD)
                c = cmp_holder(x, y);
        return c;
}

static bool same_device(const entry *x, const entry *y) {
        return strcmp(x->resource, y->resource) == 0 && strcmp(x->id, y->id) == 0;
}

/* ---- gathering: e->v has room for every entry (count_entries) ---- */

static size_t count_ids(V1__ContainerDevices *const *devs, size_t n) {
        size_t total = 0;

        for (size_t i = 0; i < n; i++)
                total += devs[i]->n_device_ids;
        return total;
}

static size_t count_entries(const kdp_ctl_who_input *in) {
        const V1__ListPodResourcesResponse *l = in->pods;
        size_t total = 0;

        for (size_t p = 0; l && p < l->n_pod_resources; p++)
                for (size_t c = 0; c < l->pod_resources[p]->n_containers; c++)
                        total += count_ids(l->pod_resources[p]->containers[c]->devices,
                                           l->pod_resources[p]->containers[c]->n_devices);
        if (in->allocatable)
                total += count_ids(in->allocatable->devices, in->allocatable->n_devices);
        for (size_t i = 0; i < in->n_plugins; i++)
                total += in->plugins[i].list ? in->plugins[i].list->n_devices : 0;
        return total;
}

static void add_kubelet_devices(entries *e, V1__ContainerDevices *const *devs, size_t n, source from,
                                const V1__PodResources *pod, const V1__ContainerResources *container) {
        for (size_t i = 0; i < n; i++)
                for (size_t j = 0; j < devs[i]->n_device_ids; j++)
                        e->v[e->n++] = (entry){
                                .resource = devs[i]->resource_name,
                                .id = devs[i]->device_ids[j],
                                .from = from,
                                .pod = pod,
                                .container = container,
                                .topology = devs[i]->topology,
                        };
}

static void add_kubelet(entries *e, const kdp_ctl_who_input *in) {
        const V1__ListPodResourcesResponse *l = in->pods;

        for (size_t p = 0; l && p < l->n_pod_resources; p++)
                for (size_t c = 0; c < l->pod_resources[p]->n_containers; c++) {
                        const V1__ContainerResources *cr = l->pod_resources[p]->containers[c];

                        add_kubelet_devices(e, cr->devices, cr->n_devices, FROM_POD, l->pod_resources[p], cr);
                }
        if (in->allocatable)
                add_kubelet_devices(e, in->allocatable->devices, in->allocatable->n_devices, FROM_ALLOCATABLE,
                                    NULL, NULL);
}

static void add_plugin(entries *e, const kdp_ctl_who_plugin *p) {
        for (size_t i = 0; p->list && i < p->list->n_devices; i++)
                e->v[e->n++] = (entry){
                        .resource = p->resource,
                        .id = p->list->devices[i]->id,
                        .from = FROM_PLUGIN,
                        .device = p->list->devices[i],
                };
}

/* ---- a plugin's resource ---- */

int kdp_ctl_who_table_parse_socket(const char *spec, kdp_ctl_who_plugin *ret) {
        const char *eq = strchr(spec, '=');
        _cleanup_free_ char *resource = eq ? strndup(spec, (size_t) (eq - spec)) : NULL;

        if (eq && !resource)
                return -ENOMEM;
        if (resource && !kdp_ctl_kubelet_resource_name_valid(resource)) {
                free(resource);
                resource = NULL;
        }
        *ret = (kdp_ctl_who_plugin){ .path = resource ? eq + 1 : spec, .resource = KDP_TAKE_PTR(resource) };
        return 0;
}

void kdp_ctl_who_plugin_done(kdp_ctl_who_plugin *p) {
        free(p->resource);
        if (p->list)
                v1beta1__list_and_watch_response__free_unpacked(p->list, NULL);
        p->resource = NULL;
        p->list = NULL;
}

void kdp_ctl_who_input_done(kdp_ctl_who_input *in) {
        if (in->pods)
                v1__list_pod_resources_response__free_unpacked(in->pods, NULL);
        if (in->allocatable)
                v1__allocatable_resources_response__free_unpacked(in->allocatable, NULL);
        for (size_t i = 0; i < in->n_plugins; i++)
                kdp_ctl_who_plugin_done(&in->plugins[i]);
        free(in->plugins);
        *in = (kdp_ctl_who_input){ 0 };
}

/* `k` sorted: whether the kubelet's answers name `resource`. */
static bool kubelet_knows(const entries *k, const char *resource) {
        for (size_t i = 0; i < k->n; i++)
                if (strcmp(k->v[i].resource, resource) == 0)
                        return true;
        return false;
}

/* Strips ".<digits>" from the end of s[0, *len). */
static bool strip_number(const char *s, size_t *len) {
        size_t n = *len;

        while (n > 0 && s[n - 1] >= '0' && s[n - 1] <= '9')
                n--;
        if (n == *len || n == 0 || s[n - 1] != '.')
                return false;
        *len = n - 1;
        return true;
}

/* BACKEND-DOMAIN_NAME of kdpd's socket name kdp-BACKEND-DOMAIN_NAME.PID.SEQ.sock, or NULL. */
static const char *socket_name_middle(const char *path, size_t *ret_len) {
        const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
        size_t n = strlen(base);

        if (strncmp(base, "kdp-", 4) != 0 || n < 5 || strcmp(base + n - 5, ".sock") != 0)
                return NULL;
        n -= 5;
        if (!strip_number(base, &n) || !strip_number(base, &n) || n <= 4)
                return NULL;
        *ret_len = n - 4;
        return base + 4;
}

/*
 * The resource a kdpd socket name spells: DOMAIN holds no '_', so the first
 * '_' was the '/'; each '-' before it may end BACKEND. The split the kubelet
 * knows wins, else the first valid one (a BACKEND without '-'). 1 if told.
 */
static int resource_from_name(const entries *k, const char *path, char **ret) {
        _cleanup_free_ char *first = NULL;
        const char *m, *underscore;
        size_t n;

        m = socket_name_middle(path, &n);
        underscore = m ? memchr(m, '_', n) : NULL;
        if (!underscore)
                return 0;
        for (const char *dash = memchr(m, '-', (size_t) (underscore - m)); dash;
             dash = memchr(dash + 1, '-', (size_t) (underscore - dash - 1))) {
                _cleanup_free_ char *c = strndup(dash + 1, (size_t) (m + n - dash - 1));

                if (!c)
                        return -ENOMEM;
                c[underscore - dash - 1] = '/';
                if (!kdp_ctl_kubelet_resource_name_valid(c))
                        continue;
                if (kubelet_knows(k, c)) {
                        *ret = KDP_TAKE_PTR(c);
                        return 1;
                }
                if (!first)
                        first = KDP_TAKE_PTR(c);
        }
        if (!first)
                return 0;
        *ret = KDP_TAKE_PTR(first);
        return 1;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* How many distinct devices of the kubelet's resource starting at k->v[*i] are in `ids`; *i moves past it. */
static size_t shared_ids(const entries *k, size_t *i, char **ids, size_t n_ids) {
        size_t from = *i, count = 0, j;

        for (j = from; j < k->n && strcmp(k->v[j].resource, k->v[from].resource) == 0; j++)
                if ((j == from || strcmp(k->v[j].id, k->v[j - 1].id) != 0) &&
                    bsearch(&k->v[j].id, ids, n_ids, sizeof(*ids), cmp_str))
                        count++;
        *i = j;
        return count;
}

/* `k` sorted: the kubelet's resource sharing the most device IDs with the plugin (no tie). 1 if told. */
static int resource_from_ids(const entries *k, const V1beta1__ListAndWatchResponse *m, char **ret) {
        _cleanup_free_ char **ids = NULL;
        const char *best = NULL;
        size_t n_best = 0;
        bool tie = false;

        if (!m || m->n_devices == 0)
                return 0;
        ids = calloc(m->n_devices, sizeof(*ids));
        if (!ids)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_devices; i++)
                ids[i] = m->devices[i]->id;
        qsort(ids, m->n_devices, sizeof(*ids), cmp_str);
        for (size_t i = 0; i < k->n;) {
                const char *resource = k->v[i].resource;
                size_t count = shared_ids(k, &i, ids, m->n_devices);

                if (count > n_best) {
                        best = resource;
                        n_best = count;
                        tie = false;
                } else if (count > 0 && count == n_best)
                        tie = true;
        }
        if (!best || tie)
                return 0;
        *ret = strdup(best);
        return *ret ? 1 : -ENOMEM;
}

/* 1 if the plugin's resource is told, 0 if not. */
static int plugin_resource(const entries *k, kdp_ctl_who_plugin *p) {
        int r;

        if (p->resource)
                return 1;
        r = resource_from_name(k, p->path, &p->resource);
        return r != 0 ? r : resource_from_ids(k, p->list, &p->resource);
}

static int tell_resources(const entries *k, kdp_ctl_who_input *in, size_t *reterr_plugin) {
        for (size_t i = 0; i < in->n_plugins; i++) {
                int r = plugin_resource(k, &in->plugins[i]);

                if (r < 0)
                        return r;
                if (r == 0) {
                        *reterr_plugin = i;
                        return -ENXIO;
                }
                for (size_t j = 0; j < i; j++)
                        if (strcmp(in->plugins[j].resource, in->plugins[i].resource) == 0) {
                                *reterr_plugin = i;
                                return -EEXIST;
                        }
        }
        return 0;
}

/* ---- rows ---- */

static int cmp_int64(const void *a, const void *b) {
        int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;

        return (x > y) - (x < y);
}

static void numa_add_v1(int64_t *v, size_t *n, const V1__TopologyInfo *t) {
        for (size_t i = 0; t && i < t->n_nodes; i++)
                v[(*n)++] = t->nodes[i]->id;
}

/* The plugin's NUMA nodes of the device when it lists it, else every node the kubelet gives it. */
static int group_numa(const entry *g, size_t n, int64_t **ret, size_t *ret_n) {
        size_t size = 0, k = 0;
        int64_t *v;

        if (g[0].from == FROM_PLUGIN)
                size = g[0].device->topology ? g[0].device->topology->n_nodes : 0;
        else
                for (size_t i = 0; i < n; i++)
                        size += g[i].topology ? g[i].topology->n_nodes : 0;
        v = calloc(size ? size : 1, sizeof(*v));
        if (!v)
                return -ENOMEM;
        if (g[0].from == FROM_PLUGIN)
                for (size_t i = 0; i < size; i++)
                        v[k++] = g[0].device->topology->nodes[i]->id;
        else
                for (size_t i = 0; i < n; i++)
                        numa_add_v1(v, &k, g[i].topology);
        qsort(v, k, sizeof(*v), cmp_int64);
        *ret_n = 0;
        for (size_t i = 0; i < k; i++)
                if (i == 0 || v[i] != v[i - 1])
                        v[(*ret_n)++] = v[i];
        *ret = v;
        return 0;
}

struct kdp_ctl_who_table {
        entries e;                      /* sorted; each run of one device gives its rows */
        size_t n_rows;
        bool allocatable_known;
};

/* Hands `row`, held by `holder` (NULL: free), to fn. */
static int emit_row(kdp_ctl_who_row row, const entry *holder, kdp_ctl_who_row_fn fn, void *userdata) {
        if (holder) {
                row.namespace_ = holder->pod->namespace_;
                row.pod = holder->pod->name;
                row.container = holder->container->name;
        }
        return fn(&row, userdata);
}

/* The rows of one device: one per distinct holder, or one free. */
static int device_rows(const kdp_ctl_who_table *t, const entry *g, size_t n, kdp_ctl_who_row_fn fn,
                       void *userdata) {
        _cleanup_free_ int64_t *numa = NULL;
        kdp_ctl_who_row row = {
                .resource = g[0].resource,
                .id = g[0].id,
                .health = g[0].from == FROM_PLUGIN ? g[0].device->health : NULL,
                .allocatable = t->allocatable_known ? 0 : -1,
        };
        bool held = false;
        int r;

        r = group_numa(g, n, &numa, &row.n_numa);
        if (r < 0)
                return r;
        row.numa = numa;
        for (size_t i = 0; i < n; i++)
                if (g[i].from == FROM_ALLOCATABLE && t->allocatable_known)
                        row.allocatable = 1;
        for (size_t i = 0; r >= 0 && i < n; i++) {
                if (g[i].from != FROM_POD || (held && cmp_holder(&g[i - 1], &g[i]) == 0))
                        continue;
                r = emit_row(row, &g[i], fn, userdata);
                held = true;
        }
        return held ? r : emit_row(row, NULL, fn, userdata);
}

int kdp_ctl_who_table_foreach(const kdp_ctl_who_table *t, kdp_ctl_who_row_fn fn, void *userdata) {
        const entries *e = &t->e;
        int r = 0;

        for (size_t i = 0, j; r >= 0 && i < e->n; i = j) {
                for (j = i + 1; j < e->n && same_device(&e->v[i], &e->v[j]); j++)
                        ;
                r = device_rows(t, &e->v[i], j - i, fn, userdata);
        }
        return r;
}

size_t kdp_ctl_who_table_n_rows(const kdp_ctl_who_table *t) {
        return t->n_rows;
}

bool kdp_ctl_who_table_allocatable_known(const kdp_ctl_who_table *t) {
        return t->allocatable_known;
}

kdp_ctl_who_table *kdp_ctl_who_table_free(kdp_ctl_who_table *t) {
        if (!t)
                return NULL;
        entries_done(&t->e);
        free(t);
        return NULL;
}

static int count_row(const kdp_ctl_who_row *row, void *userdata) {
        (*(size_t *) userdata)++;
        return 0;
}

int kdp_ctl_who_table_build(kdp_ctl_who_input *in, kdp_ctl_who_table **ret, size_t *reterr_plugin) {
        _cleanup_(kdp_ctl_who_table_freep) kdp_ctl_who_table *t = calloc(1, sizeof(*t));
        entries *e;
        int r;

        if (!t)
                return -ENOMEM;
        e = &t->e;
        e->v = calloc(count_entries(in) ?: 1, sizeof(*e->v));
        if (!e->v)
                return -ENOMEM;
        add_kubelet(e, in);
        qsort(e->v, e->n, sizeof(*e->v), cmp_entry);
        r = tell_resources(e, in, reterr_plugin);
        if (r < 0)
                return r;
        for (size_t i = 0; i < in->n_plugins; i++)
                add_plugin(e, &in->plugins[i]);
        qsort(e->v, e->n, sizeof(*e->v), cmp_entry);
        t->allocatable_known = in->allocatable != NULL;
        r = kdp_ctl_who_table_foreach(t, count_row, &t->n_rows);
        if (r < 0)
                return r;
        *ret = KDP_TAKE_PTR(t);
        return 0;
}

/* ---- the table ---- */

/* `s` escaped to one line; an empty string as "". */
static void put_text(FILE *f, const char *s) {
        kdp_ctl_client_put_value(f, *s ? s : "\"\"");
}

/* `s` as put_text() does, "-" when NULL (free, not known). */
static void put_optional(FILE *f, const char *s) {
        if (s)
                put_text(f, s);
        else
                fputs("-", f);
}

static void put_numa(FILE *f, const kdp_ctl_who_row *r) {
        if (r->n_numa == 0)
                fputs("-", f);
        for (size_t i = 0; i < r->n_numa; i++)
                fprintf(f, "%s%lld", i > 0 ? "," : "", (long long) r->numa[i]);
}

static const char *health_text(const kdp_ctl_who_row *r) {
        if (r->health && *r->health)
                return r->health;
        return r->allocatable == 1 ? "Healthy" : "-";
}

static const char *const header[N_COLUMNS] = {
        "RESOURCE", "DEVICE", "HEALTH", "NUMA", "NAMESPACE", "POD", "CONTAINER",
};

/* Cell `col` of row `r` (NULL: the header) on `f`. */
static void put_cell(FILE *f, const kdp_ctl_who_row *r, size_t col) {
        if (!r) {
                fputs(header[col], f);
                return;
        }
        switch (col) {
        case 0: put_text(f, r->resource); break;
        case 1: put_text(f, r->id); break;
        case 2: fputs(health_text(r), f); break;
        case 3: put_numa(f, r); break;
        case 4: put_optional(f, r->namespace_); break;
        case 5: put_optional(f, r->pod); break;
        default: put_optional(f, r->container); break;
        }
}

/* A stream that only counts what is written to it, into the size_t its cookie points to. */
static ssize_t count_write(void *cookie, const char *buf, size_t size) {
        *(size_t *) cookie += size;
        return (ssize_t) size;
}

typedef struct printer {
        FILE *f, *counter;              /* the output; a stream that counts */
        size_t count;                   /* what the counter counted */
        size_t width[N_COLUMNS];
} printer;

/* The bytes put_cell() writes, counted. */
static size_t cell_width(printer *p, const kdp_ctl_who_row *r, size_t col) {
        size_t before = p->count;

        put_cell(p->counter, r, col);
        (void) fflush(p->counter);
        return p->count - before;
}

static int widen(const kdp_ctl_who_row *r, void *userdata) {
        printer *p = userdata;

        for (size_t col = 0; col < N_COLUMNS; col++) {
                size_t w = cell_width(p, r, col);

                if (w > p->width[col])
                        p->width[col] = w;
        }
        return 0;
}

/* Row `r` (NULL: the header), each cell but the last padded to its column's width and two spaces. */
static int put_row(const kdp_ctl_who_row *r, void *userdata) {
        printer *p = userdata;

        for (size_t col = 0; col < N_COLUMNS; col++) {
                put_cell(p->f, r, col);
                if (col == N_COLUMNS - 1)
                        putc('\n', p->f);
                else
                        fprintf(p->f, "%*s", (int) (p->width[col] - cell_width(p, r, col) + 2), "");
        }
        return 0;
}

/*
 * Two passes over the rows as they are joined, each cell written where it
 * goes (first to a stream that counts, for the widths): no row is held.
 */
int kdp_ctl_who_table_print(FILE *f, const kdp_ctl_who_table *t) {
        printer p = { .f = f };
        int r;

        p.counter = fopencookie(&p.count, "w", (cookie_io_functions_t){ .write = count_write });
        if (!p.counter)
                return -ENOMEM;
        for (size_t col = 0; col < N_COLUMNS; col++)
                p.width[col] = strlen(header[col]);
        r = kdp_ctl_who_table_foreach(t, widen, &p);
        if (r >= 0) {
                (void) put_row(NULL, &p);
                r = kdp_ctl_who_table_foreach(t, put_row, &p);
        }
        (void) fclose(p.counter);
        return r;
}

/* ---- JSON ---- */

static void json_string(FILE *f, const char *s) {
        if (!s) {
                fputs("null", f);
                return;
        }
        putc('"', f);
        for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
                if (*p == '"' || *p == '\\')
                        fprintf(f, "\\%c", *p);
                else if (*p == '\n')
                        fputs("\\n", f);
                else if (*p == '\t')
                        fputs("\\t", f);
                else if (*p < 0x20)
                        fprintf(f, "\\u%04x", *p);
                else
                        putc(*p, f);
        }
        putc('"', f);
}

static void json_field(FILE *f, const char *key, const char *value) {
        fprintf(f, ", \"%s\": ", key);
        json_string(f, value);
}

typedef struct json {
        FILE *f;
        size_t n;                       /* rows written */
} json;

static int json_row(const kdp_ctl_who_row *r, void *userdata) {
        json *j = userdata;
        FILE *f = j->f;

        fputs(j->n++ > 0 ? ",\n    " : "\n    ", f);
        fputs("{\"resource\": ", f);
        json_string(f, r->resource);
        json_field(f, "id", r->id);
        json_field(f, "health", r->health);
        fputs(", \"numa\": [", f);
        for (size_t i = 0; i < r->n_numa; i++)
                fprintf(f, "%s%lld", i > 0 ? ", " : "", (long long) r->numa[i]);
        fprintf(f, "], \"allocatable\": %s",
                r->allocatable < 0 ? "null" : r->allocatable ? "true" : "false");
        json_field(f, "namespace", r->namespace_);
        json_field(f, "pod", r->pod);
        json_field(f, "container", r->container);
        putc('}', f);
        return 0;
}

int kdp_ctl_who_table_print_json(FILE *f, const kdp_ctl_who_table *t) {
        json j = { .f = f };
        int r;

        fprintf(f, "{\n  \"allocatableKnown\": %s,\n  \"devices\": [", t->allocatable_known ? "true" : "false");
        r = kdp_ctl_who_table_foreach(t, json_row, &j);
        fputs(j.n > 0 ? "\n  ]\n}\n" : "]\n}\n", f);
        return r;
}
