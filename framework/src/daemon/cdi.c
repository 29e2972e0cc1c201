/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The CDI writer (see cdi.h).
 *
 * A sync runs in three steps, so that running out of memory never leaves
 * files and records out of step:
 *   1. collect every (CDI name, device) pair of the list and sort them by
 *      kind, then name, then list order;
 *   2. build each kind's JSON in memory (libfyaml document, JSON emitter);
 *      nothing on disk is touched if this fails;
 *   3. write what changed, remove what is gone, and record the outcome.
 *
 * Every string scalar carries the tag !!str: libfyaml's JSON emitter writes
 * a plain scalar that looks like a JSON number, boolean or null unquoted, and
 * a CDI device name is often just "0".
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libfyaml.h>

#include <kdp/atomic-file.h>
#include <kdp/cleanup.h>
#include <kdp/log.h>

#include "cdi.h"

KDP_DEFINE_CLEANUP_FUNC(struct fy_document, fy_document_destroy)

typedef struct cdi_spec {
        char *kind;             /* "vendor.com/class" */
        char *path;             /* <cdi_dir>/kdp-<vendor>-<class>.json */
        char *content;          /* the JSON, only while a sync runs */
        size_t size;            /* of the content last written */
        uint64_t digest;        /* FNV-1a of it: what is kept between syncs, not the JSON itself */
        bool known;             /* size and digest describe the file; false: write again */
        size_t n_devices;       /* entries in content (for the log) */
} cdi_spec;

struct kdp_cdi_specs {
        cdi_spec *specs;
        size_t n_specs;
};

/* One CDI name of one device. */
typedef struct cdi_entry {
        const char *name;       /* "vendor.com/class=dev" */
        size_t kind_len;        /* bytes before '=' */
        const kdp_device *device;
        size_t seq;             /* position in the list, then in the device's names */
} cdi_entry;

/* 64-bit FNV-1a: a spec is compared by size and digest, so 4096 devices do not keep ~1 MB of JSON. */
static uint64_t digest_of(const char *data, size_t size) {
        uint64_t h = 14695981039346656037ULL;

        for (size_t i = 0; i < size; i++)
                h = (h ^ (unsigned char) data[i]) * 1099511628211ULL;
        return h;
}

static void cdi_spec_done(cdi_spec *s) {
        free(s->kind);
        free(s->path);
        free(s->content);
        *s = (cdi_spec) { 0 };
}

static void cdi_specs_done(cdi_spec *specs, size_t n) {
        for (size_t i = 0; i < n; i++)
                cdi_spec_done(&specs[i]);
        free(specs);
}

kdp_cdi_specs *kdp_cdi_specs_free(kdp_cdi_specs *s) {
        if (!s)
                return NULL;
        cdi_specs_done(s->specs, s->n_specs);
        free(s);
        return NULL;
}

static cdi_spec *find_kind(cdi_spec *specs, size_t n, const char *kind) {
        for (size_t i = 0; i < n; i++)
                if (strcmp(specs[i].kind, kind) == 0)
                        return &specs[i];
        return NULL;
}

static bool path_in(const cdi_spec *specs, size_t n, const char *path) {
        for (size_t i = 0; i < n; i++)
                if (strcmp(specs[i].path, path) == 0)
                        return true;
        return false;
}

/* ---- collecting names ---- */

static int entry_compare(const void *pa, const void *pb) {
        const cdi_entry *a = pa, *b = pb;
        size_t n = a->kind_len < b->kind_len ? a->kind_len : b->kind_len;
        int c;

        c = memcmp(a->name, b->name, n);
        if (c == 0 && a->kind_len != b->kind_len)
                c = a->kind_len < b->kind_len ? -1 : 1;
        if (c == 0)
                c = strcmp(a->name + a->kind_len + 1, b->name + b->kind_len + 1);
        if (c == 0)
                c = a->seq < b->seq ? -1 : a->seq > b->seq;
        return c;
}

static int entries_collect(const kdp_device_list *list, cdi_entry **ret, size_t *ret_n) {
        _cleanup_free_ cdi_entry *entries = NULL;
        size_t n = 0, total = 0;

        for (size_t i = 0; i < list->n_devices; i++)
                total += list->devices[i].n_cdi_devices;
        if (total > 0) {
                entries = calloc(total, sizeof(cdi_entry));
                if (!entries)
                        return -ENOMEM;
        }

        for (size_t i = 0; i < list->n_devices; i++) {
                const kdp_device *d = &list->devices[i];

                for (size_t j = 0; j < d->n_cdi_devices; j++) {
                        const char *eq = strchr(d->cdi_devices[j], '=');

                        assert(eq);     /* validated by kdp_device_from_info() */
                        entries[n] = (cdi_entry) {
                                .name = d->cdi_devices[j],
                                .kind_len = (size_t) (eq - d->cdi_devices[j]),
                                .device = d,
                                .seq = n,
                        };
                        n++;
                }
        }

        if (n > 1)
                qsort(entries, n, sizeof(cdi_entry), entry_compare);
        *ret = KDP_TAKE_PTR(entries);
        *ret_n = n;
        return 0;
}

static bool entry_same_kind(const cdi_entry *a, const cdi_entry *b) {
        return a->kind_len == b->kind_len && memcmp(a->name, b->name, a->kind_len) == 0;
}

static bool entry_same_name(const cdi_entry *a, const cdi_entry *b) {
        return strcmp(a->name, b->name) == 0;
}

static bool device_has_edits(const kdp_device *d) {
        return d->n_dev_nodes > 0 || d->n_mounts > 0 || d->n_envs > 0;
}

/* ---- building one spec ---- */

/* Attaches `item` (may be NULL: allocation failed) to `seq`; frees it on failure. */
static int seq_add(struct fy_node *seq, struct fy_node *item) {
        if (!item)
                return -ENOMEM;
        if (fy_node_sequence_append(seq, item) < 0) {
                (void) fy_node_free(item);
                return -ENOMEM;
        }
        return 0;
}

/* Attaches `value` (may be NULL: allocation failed) under the static string `key`; frees it on failure. */
static int map_add(struct fy_node *map, const char *key, struct fy_node *value) {
        struct fy_node *k;

        if (!value)
                return -ENOMEM;
        k = fy_node_create_scalar(fy_node_document(map), key, FY_NT);
        if (!k || fy_node_mapping_append(map, k, value) < 0) {
                if (k)
                        (void) fy_node_free(k);
                (void) fy_node_free(value);
                return -ENOMEM;
        }
        return 0;
}

/* A copy of `s` that the JSON emitter always quotes; NULL on allocation failure. */
static struct fy_node *str_new(struct fy_document *doc, const char *s) {
        struct fy_node *n = fy_node_create_scalar_copy(doc, s, strlen(s));

        if (n && fy_node_set_tag(n, "!!str", FY_NT) < 0) {
                (void) fy_node_free(n);
                return NULL;
        }
        return n;
}

static int map_add_str(struct fy_node *map, const char *key, const char *value) {
        return map_add(map, key, str_new(fy_node_document(map), value));
}

/* Attaches a new, empty container under `key` and returns it (borrowed) through *ret. */
static int map_add_container(struct fy_node *map, const char *key, bool sequence, struct fy_node **ret) {
        struct fy_document *doc = fy_node_document(map);
        struct fy_node *c = sequence ? fy_node_create_sequence(doc) : fy_node_create_mapping(doc);
        int r;

        r = map_add(map, key, c);
        if (r < 0)
                return r;
        *ret = c;
        return 0;
}

static int seq_add_mapping(struct fy_node *seq, struct fy_node **ret) {
        struct fy_node *m = fy_node_create_mapping(fy_node_document(seq));
        int r;

        r = seq_add(seq, m);
        if (r < 0)
                return r;
        *ret = m;
        return 0;
}

static int edits_add_nodes(struct fy_node *edits, const kdp_device *d) {
        struct fy_node *seq;
        int r;

        r = map_add_container(edits, "deviceNodes", true, &seq);
        for (size_t i = 0; r >= 0 && i < d->n_dev_nodes; i++) {
                const kdp_dev_node *n = &d->dev_nodes[i];
                struct fy_node *m;

                r = seq_add_mapping(seq, &m);
                if (r >= 0)
                        r = map_add_str(m, "path", n->container_path ?: n->host_path);
                if (r >= 0)
                        r = map_add_str(m, "hostPath", n->host_path);
                if (r >= 0)
                        r = map_add_str(m, "permissions", n->permissions ?: "rw");
        }
        return r;
}

static int edits_add_mounts(struct fy_node *edits, const kdp_device *d) {
        static const char *const options[] = { "ro", "nosuid", "nodev", "bind" };
        struct fy_node *seq;
        int r;

        r = map_add_container(edits, "mounts", true, &seq);
        for (size_t i = 0; r >= 0 && i < d->n_mounts; i++) {
                const kdp_mount *mt = &d->mounts[i];
                struct fy_node *m, *opts;

                r = seq_add_mapping(seq, &m);
                if (r >= 0)
                        r = map_add_str(m, "hostPath", mt->host_path);
                if (r >= 0)
                        r = map_add_str(m, "containerPath", mt->container_path ?: mt->host_path);
                if (r >= 0)
                        r = map_add_container(m, "options", true, &opts);
                for (size_t k = mt->read_only ? 0 : 1; r >= 0 && k < KDP_ELEMENTSOF(options); k++)
                        r = seq_add(opts, str_new(fy_node_document(m), options[k]));
        }
        return r;
}

static int edits_add_env(struct fy_node *edits, const kdp_device *d) {
        struct fy_node *seq;
        int r;

        r = map_add_container(edits, "env", true, &seq);
        for (size_t i = 0; r >= 0 && i < d->n_envs; i++) {
                _cleanup_free_ char *kv = NULL;

                if (asprintf(&kv, "%s=%s", d->envs[i].key, d->envs[i].value ?: "") < 0)
                        return -ENOMEM;
                r = seq_add(seq, str_new(fy_node_document(edits), kv));
        }
        return r;
}

static int devices_add(struct fy_node *devices, const char *name, const kdp_device *d) {
        struct fy_node *dev, *edits;
        int r;

        r = seq_add_mapping(devices, &dev);
        if (r >= 0)
                r = map_add_str(dev, "name", name);
        if (r >= 0)
                r = map_add_container(dev, "containerEdits", false, &edits);
        if (r >= 0 && d->n_dev_nodes > 0)
                r = edits_add_nodes(edits, d);
        if (r >= 0 && d->n_mounts > 0)
                r = edits_add_mounts(edits, d);
        if (r >= 0 && d->n_envs > 0)
                r = edits_add_env(edits, d);
        return r;
}

/*
 * Builds the spec of one kind from its sorted entries. Returns 0 and sets *ret_content (NULL when no
 * device has edits: no file) and *ret_n_devices, or -ENOMEM.
 */
static int spec_build(const char *kind, const cdi_entry *entries, size_t n,
                      char **ret_content, size_t *ret_n_devices) {
        _cleanup_(fy_document_destroyp) struct fy_document *doc = NULL;
        struct fy_node *root, *devices;
        size_t n_devices = 0;
        char *content;
        int r;

        doc = fy_document_create(NULL);
        if (!doc)
                return -ENOMEM;
        root = fy_node_create_mapping(doc);
        if (!root)
                return -ENOMEM;
        if (fy_document_set_root(doc, root) < 0) {
                (void) fy_node_free(root);
                return -ENOMEM;
        }
        r = map_add_str(root, "cdiVersion", KDP_CDI_VERSION);
        if (r >= 0)
                r = map_add_str(root, "kind", kind);
        if (r >= 0)
                r = map_add_container(root, "devices", true, &devices);

        for (size_t i = 0; r >= 0 && i < n; i++) {
                const char *name = entries[i].name + entries[i].kind_len + 1;

                if (i > 0 && entry_same_name(&entries[i - 1], &entries[i]))
                        continue;       /* replicas: the first device in list order describes the name */
                if (!device_has_edits(entries[i].device)) {
                        kdp_log_v(4, "Left CDI device out of spec", KDP_F_STR("cdiDevice", entries[i].name),
                                  KDP_F_STR("device", entries[i].device->id),
                                  KDP_F_STR("reason", "no device nodes, mounts or env"));
                        continue;
                }
                r = devices_add(devices, name, entries[i].device);
                n_devices++;
        }
        if (r < 0)
                return r;

        if (n_devices == 0)
                content = NULL;
        else {
                content = fy_emit_document_to_string(doc, FYECF_MODE_JSON | FYECF_INDENT_2 | FYECF_WIDTH_INF);
                if (!content)
                        return -ENOMEM;
        }
        *ret_content = content;
        *ret_n_devices = n_devices;
        return 0;
}

/* "<cdi_dir>/kdp-<vendor>-<class>.json" (tmp: ".kdp-<vendor>-<class>.tmp.XXXXXX") for kind "<vendor>/<class>". */
static int spec_path(const char *cdi_dir, const char *kind, bool tmp, char **ret) {
        const char *slash = strchr(kind, '/');
        size_t dir_len = strlen(cdi_dir);

        assert(slash);
        while (dir_len > 1 && cdi_dir[dir_len - 1] == '/')
                dir_len--;
        if (asprintf(ret, "%.*s%s%skdp-%.*s-%s%s", (int) dir_len, cdi_dir, dir_len == 1 && cdi_dir[0] == '/' ? "" : "/",
                     tmp ? "." : "", (int) (slash - kind), kind, slash + 1, tmp ? ".tmp.XXXXXX" : ".json") < 0)
                return -ENOMEM;
        return 0;
}

/* ---- files ---- */

/* True if `path` is a regular file of `size` bytes. */
static bool file_has_size(const char *path, size_t size) {
        struct stat st;

        return stat(path, &st) == 0 && S_ISREG(st.st_mode) && (size_t) st.st_size == size;
}

/* Writes `spec` to its path through a temp file in cdi_dir; logs failures. */
static int spec_write(const char *cdi_dir, const cdi_spec *spec) {
        _cleanup_free_ char *tmp = NULL;
        int r;

        r = kdp_atomic_file_mkdir_p(cdi_dir, 0755);
        if (r < 0)
                return kdp_log_error(r, "Failed to create CDI directory", KDP_F_STR("path", cdi_dir));
        r = spec_path(cdi_dir, spec->kind, true, &tmp);
        if (r >= 0)
                r = kdp_atomic_file_write(spec->path, tmp, spec->content, spec->size, 0644);
        if (r < 0)
                return kdp_log_error(r, "Failed to write CDI spec", KDP_F_STR("path", spec->path));

        kdp_log_info("Wrote CDI spec", KDP_F_STR("path", spec->path), KDP_F_INT("devices", spec->n_devices));
        return 0;
}

/* Removes one file we wrote; a file already gone is fine. */
static int spec_unlink(const char *path) {
        if (unlink(path) < 0) {
                int r = -errno;

                if (r == -ENOENT)
                        return 0;
                return kdp_log_error(r, "Failed to remove CDI spec", KDP_F_STR("path", path));
        }
        kdp_log_info("Removed CDI spec", KDP_F_STR("path", path));
        return 0;
}

/* ---- sync ---- */

/*
 * Step 2: the specs `entries` call for, in kind order, into `next` (room for at least one per kind).
 * Contents are new and not yet written. Returns 0, -ENOMEM, or -EEXIST when a kind was refused
 * because an earlier one has its file name (the others are built all the same).
 */
static int specs_build(const char *cdi_dir, const cdi_entry *entries, size_t n, cdi_spec *next, size_t *ret_n_next) {
        size_t n_next = 0;
        int r = 0, refused = 0;

        for (size_t b = 0, e; b < n; b = e) {
                cdi_spec spec = { 0 };

                for (e = b + 1; e < n && entry_same_kind(&entries[b], &entries[e]); e++)
                        ;

                spec.kind = strndup(entries[b].name, entries[b].kind_len);
                if (!spec.kind) {
                        r = -ENOMEM;
                        break;
                }
                r = spec_path(cdi_dir, spec.kind, false, &spec.path);
                if (r >= 0)
                        r = spec_build(spec.kind, entries + b, e - b, &spec.content, &spec.n_devices);
                if (r < 0) {
                        cdi_spec_done(&spec);
                        break;
                }
                if (!spec.content) {
                        cdi_spec_done(&spec);   /* nothing to describe: like an absent kind */
                        continue;
                }
                if (path_in(next, n_next, spec.path)) {
                        /* "a-b/c" and "a/b-c" map to one file name: the first kind (in sort order) keeps it */
                        refused = kdp_log_error(-EEXIST, "Refused CDI kind: its file name is taken by another kind",
                                                KDP_F_STR("kind", spec.kind), KDP_F_STR("path", spec.path));
                        cdi_spec_done(&spec);
                        continue;
                }
                spec.size = strlen(spec.content);
                next[n_next++] = spec;
        }

        *ret_n_next = n_next;
        return r < 0 ? r : refused;
}

int kdp_cdi_sync(const char *cdi_dir, const kdp_device_list *list, kdp_cdi_specs **specs) {
        _cleanup_free_ cdi_entry *entries = NULL;
        cdi_spec *next = NULL;
        size_t n_entries = 0, n_next = 0;
        kdp_cdi_specs *s;
        int r, first = 0;

        assert(cdi_dir && cdi_dir[0]);
        assert(list);
        assert(specs);

        if (!*specs) {
                *specs = calloc(1, sizeof(kdp_cdi_specs));
                if (!*specs)
                        return kdp_log_error(-ENOMEM, "Failed to sync CDI specs", KDP_F_STR("path", cdi_dir));
        }
        s = *specs;

        /* steps 1 and 2: in memory only */
        r = entries_collect(list, &entries, &n_entries);
        if (r >= 0 && n_entries + s->n_specs > 0) {
                /* every kind, plus the old kinds whose removal may fail */
                next = calloc(n_entries + s->n_specs, sizeof(cdi_spec));
                if (!next)
                        r = -ENOMEM;
        }
        if (r >= 0)
                r = specs_build(cdi_dir, entries, n_entries, next, &n_next);
        if (r == -ENOMEM) {
                cdi_specs_done(next, n_next);
                return kdp_log_error(r, "Failed to sync CDI specs", KDP_F_STR("path", cdi_dir));
        }
        first = r;      /* 0 or a refused kind (logged) */

        /* step 3: write what changed */
        for (size_t i = 0; i < n_next; i++) {
                cdi_spec *old = find_kind(s->specs, s->n_specs, next[i].kind);

                next[i].digest = digest_of(next[i].content, next[i].size);
                next[i].known = true;
                if (!(old && old->known && old->size == next[i].size && old->digest == next[i].digest &&
                      file_has_size(next[i].path, next[i].size))) {
                        r = spec_write(cdi_dir, &next[i]);
                        if (r < 0) {
                                /* write it again next time; if the kind goes, its file (maybe an old one) is removed */
                                next[i].known = false;
                                next[i].size = 0;
                                first = first ?: r;
                        }
                }
                free(next[i].content);
                next[i].content = NULL;
        }

        /* ... and remove the files no kind needs any more (a file another kind took over stays) */
        for (size_t i = 0; i < s->n_specs; i++) {
                cdi_spec *old = &s->specs[i];

                if (path_in(next, n_next, old->path))
                        continue;
                r = spec_unlink(old->path);
                if (r < 0) {
                        /* keep it, so that the next sync tries again */
                        next[n_next++] = (cdi_spec) { .kind = old->kind, .path = old->path };
                        *old = (cdi_spec) { 0 };
                        first = first ?: r;
                }
        }

        cdi_specs_done(s->specs, s->n_specs);
        s->specs = next;
        s->n_specs = n_next;
        return first;
}

void kdp_cdi_remove(const char *cdi_dir, kdp_cdi_specs **specs) {
        assert(cdi_dir);
        assert(specs);

        if (!*specs)
                return;
        for (size_t i = 0; i < (*specs)->n_specs; i++)
                (void) spec_unlink((*specs)->specs[i].path);
        *specs = kdp_cdi_specs_free(*specs);
}
