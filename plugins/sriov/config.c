/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The SR-IOV network device plugin's config.json (§12) as sriov_config, and which pool a PCI
 * function goes to (sriov_config_match).
 *
 * Reading. The file is read with kdp_config_file_read(): a regular file of at most 1 MiB, what a
 * ConfigMap holds (a FIFO or a device is refused, never waited on), with no NUL byte and nothing that is not UTF-8, which
 * libfyaml would silently stop at. It is JSON whatever its name: libfyaml parses it in JSON mode, which refuses
 * comments, trailing commas, single quotes, bare words and a second value, as Go's decoder does; a
 * UTF-8 byte order mark, which libfyaml skips and Go's decoder refuses, is refused before.
 * Values are then read the way encoding/json fills sriovdp's structs:
 *   - a key of a struct (resourceName, pfNames, isRdma, ...) matches case-insensitively, so
 *     "IsRdma" is isRdma; when a key comes twice the later one is used; a key the struct lacks is
 *     dropped. A selector key that sriovdp's selector struct for the pool's deviceType lacks, or
 *     that its provider never applies (acpiIndexes on an accelerator), is dropped the same way;
 *   - null leaves a field at its zero value (no list, false, ""); a null element of a list is "";
 *   - any other type than the field's refuses the file, except inside a pool's selectors:
 *     sriovdp decodes those for each pool on its own after the file, and drops (warns) the pool
 *     they do not decode for, before it checks its name. The selectors are read quietly first
 *     (loader.probing); at their first wrong type the pool is dropped with one warning naming
 *     it, else they are read again, messages and all. No pool left refuses the file;
 *   - the keys of additionalInfo and of its maps are map keys: exact, case-sensitive.
 *
 * Limits. Before a document is built, kdp_config_shape_check() refuses nesting, lists, objects
 * and files past the framework's limits (kdp/config-shape.h); a resourceList of more than
 * SRIOV_POOLS_MAX pools is refused, since each pool is a socket, a gRPC server and their fds.
 *
 * Messages. Everything sriovdp refuses is logged at error level and fails the load with -EINVAL
 * after all problems of the file were reported; what sriovdp silently drops or mis-parses is
 * accepted with a warning. Both name the file, the line and the key ("resourceList[1].selectors[0]
 * .pfNames[0]"): the line is where the value starts (for an object or a list, where its first
 * member starts).
 *
 * Matching. A pool applies only the fields of its deviceType and only to functions of its class
 * (§11, §12): netDevice base class 0x02, accelerator 0x12, pci (kdp's own) any class with the
 * accelerator's fields. auxNetDevice pools hold auxiliary devices (SFs), never PCI functions, so
 * they take none here. The first pool in config order, and in it the first selector object, that
 * takes a function gets it.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <libfyaml.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kdp/backend.h>
#include <kdp/cleanup.h>
#include <kdp/config-file.h>
#include <kdp/config-shape.h>
#include <kdp/log.h>

#include "sriov.h"

#define CONFIG_SIZE_MAX KDP_CONFIG_FILE_SIZE_MAX
#define VF_INDEX_MAX 65535u                     /* TotalVFs is 16 bits: a higher index never exists */
#define DEFAULT_PREFIX "intel.com"

static const char *const device_type_names[_SRIOV_DEVICE_TYPE_MAX] = {
        [SRIOV_NET_DEVICE] = "netDevice",
        [SRIOV_ACCELERATOR] = "accelerator",
        [SRIOV_AUX_NET_DEVICE] = "auxNetDevice",
        [SRIOV_PCI] = "pci",
};

const char *sriov_config_device_type_to_string(sriov_device_type t) {
        return t >= 0 && t < _SRIOV_DEVICE_TYPE_MAX ? device_type_names[t] : NULL;
}

/* ---- the selector fields and the pool types that apply them (§12) ---- */

#define TYPE_BIT(t) (1u << (t))
#define NET TYPE_BIT(SRIOV_NET_DEVICE)
#define ACC TYPE_BIT(SRIOV_ACCELERATOR)
#define AUX TYPE_BIT(SRIOV_AUX_NET_DEVICE)
#define PCI TYPE_BIT(SRIOV_PCI)

typedef enum field_kind {
        FIELD_STRINGS,          /* sriov_strings at `offset` */
        FIELD_PF_MATCHES,       /* sriov_pf_match * at `offset`, its count at `n_offset` */
        FIELD_BOOL,             /* bool at `offset` */
        FIELD_VDPA_TYPE,        /* vdpa_type */
} field_kind;

typedef struct selector_field {
        const char *key;
        unsigned types;         /* TYPE_BIT()s of the pool types whose provider applies it */
        field_kind kind;
        size_t offset;
        size_t n_offset;
} selector_field;

static const selector_field selector_fields[] = {
        { "vendors", NET | ACC | AUX | PCI, FIELD_STRINGS, offsetof(sriov_selector, vendors), 0 },
        { "devices", NET | ACC | AUX | PCI, FIELD_STRINGS, offsetof(sriov_selector, devices), 0 },
        { "drivers", NET | ACC | AUX | PCI, FIELD_STRINGS, offsetof(sriov_selector, drivers), 0 },
        { "pciAddresses", NET | ACC | PCI, FIELD_STRINGS, offsetof(sriov_selector, pci_addresses), 0 },
        { "acpiIndexes", NET, FIELD_STRINGS, offsetof(sriov_selector, acpi_indexes), 0 },
        { "pfNames", NET | AUX, FIELD_PF_MATCHES, offsetof(sriov_selector, pf_names),
          offsetof(sriov_selector, n_pf_names) },
        { "rootDevices", NET | AUX, FIELD_PF_MATCHES, offsetof(sriov_selector, root_devices),
          offsetof(sriov_selector, n_root_devices) },
        { "linkTypes", NET | AUX, FIELD_STRINGS, offsetof(sriov_selector, link_types), 0 },
        { "ddpProfiles", NET, FIELD_STRINGS, offsetof(sriov_selector, ddp_profiles), 0 },
        { "pKeys", NET, FIELD_STRINGS, offsetof(sriov_selector, pkeys), 0 },
        { "isRdma", NET | AUX, FIELD_BOOL, offsetof(sriov_selector, is_rdma), 0 },
        { "needVhostNet", NET | AUX, FIELD_BOOL, offsetof(sriov_selector, need_vhost_net), 0 },
        { "vdpaType", NET, FIELD_VDPA_TYPE, offsetof(sriov_selector, vdpa_type), 0 },
        { "auxTypes", AUX, FIELD_STRINGS, offsetof(sriov_selector, aux_types), 0 },
};

static const selector_field *selector_field_find(const char *key) {
        for (size_t i = 0; i < KDP_ELEMENTSOF(selector_fields); i++)
                if (strcasecmp(selector_fields[i].key, key) == 0)
                        return &selector_fields[i];
        return NULL;
}

/* ---- freeing ---- */

static void strings_done(sriov_strings *s) {
        for (size_t i = 0; i < s->n; i++)
                free(s->v[i]);
        free(s->v);
        *s = (sriov_strings) {};
}

static void pf_matches_free(sriov_pf_match *m, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(m[i].pf);
                free(m[i].vf_bits);
        }
        free(m);
}

static void selector_done(sriov_selector *s) {
        for (size_t i = 0; i < KDP_ELEMENTSOF(selector_fields); i++) {
                const selector_field *f = &selector_fields[i];

                if (f->kind == FIELD_STRINGS)
                        strings_done((sriov_strings *) ((char *) s + f->offset));
        }
        pf_matches_free(s->pf_names, s->n_pf_names);
        pf_matches_free(s->root_devices, s->n_root_devices);
        *s = (sriov_selector) {};
}

static void pool_done(sriov_pool *p) {
        for (size_t i = 0; i < p->n_selectors; i++)
                selector_done(&p->selectors[i]);
        free(p->selectors);
        for (size_t i = 0; i < p->n_info; i++) {
                free(p->info[i].key);
                strings_done(&p->info[i].keys);
                strings_done(&p->info[i].values);
        }
        free(p->info);
        *p = (sriov_pool) {};
}

void sriov_config_done(sriov_config *c) {
        if (!c)
                return;
        for (size_t i = 0; i < c->n_pools; i++)
                pool_done(&c->pools[i]);
        free(c->pools);
        free(c->path);
        *c = (sriov_config) {};
}

/* ---- JSON nodes ---- */

typedef enum json_type {
        JSON_NULL,
        JSON_BOOL,
        JSON_NUMBER,
        JSON_STRING,
        JSON_ARRAY,
        JSON_OBJECT,
} json_type;

static const char *const json_type_names[] = {
        [JSON_NULL] = "null",
        [JSON_BOOL] = "a boolean",
        [JSON_NUMBER] = "a number",
        [JSON_STRING] = "a string",
        [JSON_ARRAY] = "a list",
        [JSON_OBJECT] = "an object",
};

static bool scalar_is(struct fy_node *n, const char *text) {
        size_t len = 0;
        const char *s = fy_node_get_scalar(n, &len);

        return s && len == strlen(text) && memcmp(s, text, len) == 0;
}

/* What a node of a document parsed in JSON mode is (libfyaml refused any other bare word). */
static json_type json_type_of(struct fy_node *n) {
        if (!n)
                return JSON_NULL;
        switch (fy_node_get_type(n)) {
        case FYNT_SEQUENCE:
                return JSON_ARRAY;
        case FYNT_MAPPING:
                return JSON_OBJECT;
        case FYNT_SCALAR:
                break;
        }
        if (fy_node_get_style(n) == FYNS_DOUBLE_QUOTED)
                return JSON_STRING;
        if (scalar_is(n, "null"))
                return JSON_NULL;
        if (scalar_is(n, "true") || scalar_is(n, "false"))
                return JSON_BOOL;
        return JSON_NUMBER;
}

/* The 1-based line where `n` starts (an object or list: its first member), else `fallback`. */
static unsigned node_line(struct fy_node *n, unsigned fallback) {
        void *it = NULL;

        if (!n)
                return fallback;
        if (fy_node_get_type(n) == FYNT_SCALAR) {
                struct fy_token *t = fy_node_get_scalar_token(n);
                const struct fy_mark *m = t ? fy_token_start_mark(t) : NULL;

                return m ? (unsigned) m->line + 1 : fallback;
        }
        if (fy_node_get_type(n) == FYNT_MAPPING) {
                struct fy_node_pair *p = fy_node_mapping_iterate(n, &it);

                return p ? node_line(fy_node_pair_key(p), fallback) : fallback;
        }
        return node_line(fy_node_sequence_iterate(n, &it), fallback);
}

/* ---- messages ---- */

typedef struct loader {
        const kdp_backend_ctx *ctx;
        const char *path;
        int r;                  /* -EINVAL once something was refused */
        unsigned n_errors;
        /* a pool's selectors read once quietly first: their first wrong type drops the pool */
        bool probing;           /* nothing is logged, nothing refused */
        bool probe_failed;      /* a wrong type was seen while probing: probe_* hold the first */
        unsigned probe_line;
        char probe_key[SRIOV_PATH_MAX];
        char probe_reason[128];
} loader;

typedef enum problem {
        PROBLEM_WARNING,        /* accepted, as sriovdp accepts it */
        PROBLEM_ERROR,          /* refused, as sriovdp refuses it */
} problem;

__attribute__((format(printf, 5, 6)))
static void loader_log(loader *ld, problem level, unsigned line, const char *key, const char *format, ...) {
        kdp_log_field fline = { .key = "line", .type = line > 0 ? KDP_LOG_FIELD_INT : KDP_LOG_FIELD_NONE,
                                .num = line };
        kdp_log_field fkey = { .key = "key", .type = key && *key ? KDP_LOG_FIELD_STR : KDP_LOG_FIELD_NONE,
                               .str = key };
        char reason[512];
        va_list ap;

        if (ld->probing)
                return;
        va_start(ap, format);
        (void) vsnprintf(reason, sizeof(reason), format, ap);
        va_end(ap);

        if (level == PROBLEM_ERROR) {
                (void) kdp_backend_log_error(ld->ctx, -EINVAL, "Rejected SR-IOV config file",
                                             KDP_F_STR("path", ld->path), fline, fkey,
                                             KDP_F_STR("reason", reason));
                ld->r = -EINVAL;
                ld->n_errors++;
        } else
                kdp_backend_log_warning(ld->ctx, "Accepted SR-IOV config file with a problem",
                                        KDP_F_STR("path", ld->path), fline, fkey, KDP_F_STR("reason", reason));
}

static void loader_wrong_type(loader *ld, unsigned line, const char *key, const char *want, json_type got) {
        if (ld->probing) {
                if (!ld->probe_failed) {
                        ld->probe_failed = true;
                        ld->probe_line = line;
                        (void) snprintf(ld->probe_key, sizeof(ld->probe_key), "%s", key ?: "");
                        (void) snprintf(ld->probe_reason, sizeof(ld->probe_reason), "wrong type: want %s, got %s",
                                        want, json_type_names[got]);
                }
                return;
        }
        loader_log(ld, PROBLEM_ERROR, line, key, "wrong type: want %s, got %s", want, json_type_names[got]);
}

/* `parent`, `sep` and `name` joined into buf, cut to fit (it is only for messages); no overlap. */
static const char *key_join(char *buf, size_t size, const char *parent, const char *sep, const char *name) {
        const char *parts[] = { parent ?: "", sep, name };
        size_t len = 0;

        for (size_t i = 0; i < KDP_ELEMENTSOF(parts); i++) {
                size_t n = strnlen(parts[i], size - 1 - len);

                memcpy(buf + len, parts[i], n);
                len += n;
        }
        buf[len] = '\0';
        return buf;
}

/* "parent.name" */
static const char *key_member(char *buf, size_t size, const char *parent, const char *name) {
        return key_join(buf, size, parent, parent && *parent ? "." : "", name);
}

/* "parent[i]" */
static const char *key_index(char *buf, size_t size, const char *parent, size_t i) {
        char index[32];

        (void) snprintf(index, sizeof(index), "[%zu]", i);
        return key_join(buf, size, parent, "", index);
}

/*
 * The text of a string node (free()). 0 and *ret NULL when it holds a NUL character (refused,
 * logged), -ENOMEM.
 */
static int node_string(loader *ld, struct fy_node *n, unsigned line, const char *key, char **ret) {
        size_t len = 0;
        const char *s = fy_node_get_scalar(n, &len);
        char *c;

        *ret = NULL;
        if (!s)
                len = 0;
        if (len > 0 && memchr(s, '\0', len)) {
                loader_log(ld, PROBLEM_ERROR, line, key, "string holds a NUL character");
                return 0;
        }
        c = strndup(s ?: "", len);
        if (!c)
                return -ENOMEM;
        *ret = c;
        return 0;
}

/* Whether key node `k` is [name, name+len): exactly, or folding ASCII case when `fold`. */
static bool key_is(struct fy_node *k, const char *name, size_t len, bool fold) {
        size_t klen = 0;
        const char *s = fy_node_get_scalar(k, &klen);

        return s && klen == len && (fold ? strncasecmp(s, name, len) : memcmp(s, name, len)) == 0;
}

/*
 * Go's decoder uses the last of a struct's keys that fold to the same name (`fold`) or of a map's
 * equal keys; true when a later key of `map` replaces the one of `pair` (warned).
 */
static bool key_replaced_later(loader *ld, struct fy_node *map, struct fy_node_pair *pair, const char *text,
                               bool fold, const char *key) {
        struct fy_node_pair *p;
        void *it = NULL;
        bool after = false;

        while ((p = fy_node_mapping_iterate(map, &it))) {
                if (p == pair) {
                        after = true;
                        continue;
                }
                if (after && key_is(fy_node_pair_key(p), text, strlen(text), fold)) {
                        loader_log(ld, PROBLEM_WARNING, node_line(fy_node_pair_key(pair), 0), key,
                                   "key given again at line %u: the later one is used, as in sriovdp",
                                   node_line(fy_node_pair_key(p), 0));
                        return true;
                }
        }
        return false;
}

/*
 * The key of `pair`, one pair of the mapping `map` (the value at `key`, on `line`), for a loop
 * over it: its text (*ret_name, free()) and its path ("key.name") in `k` (SRIOV_PATH_MAX bytes).
 * *ret_name is NULL for a pair to pass over: a key that is no string (warned by node_string), or
 * one a later key replaces (`fold`: Go's case-folded struct fields; warned). <0 only for -ENOMEM.
 */
static int pair_key(loader *ld, struct fy_node *map, struct fy_node_pair *pair, unsigned line, const char *key,
                    bool fold, char **ret_name, char *k) {
        struct fy_node *kn = fy_node_pair_key(pair);
        _cleanup_free_ char *name = NULL;
        int r;

        *ret_name = NULL;
        r = node_string(ld, kn, node_line(kn, line), key, &name);
        if (r < 0 || !name)
                return r;
        key_member(k, SRIOV_PATH_MAX, key, name);
        if (key_replaced_later(ld, map, pair, name, fold, k))
                return 0;
        *ret_name = KDP_TAKE_PTR(name);
        return 0;
}

/* ---- values ---- */

/* A JSON string or null ("") into *ret (free()); 0 also when refused (logged), -ENOMEM. */
static int parse_string(loader *ld, struct fy_node *n, unsigned line, const char *key, char **ret) {
        json_type t = json_type_of(n);
        char *s = NULL;
        int r;

        if (t == JSON_STRING) {
                r = node_string(ld, n, line, key, &s);
                if (r < 0)
                        return r;
                if (!s)
                        return 0;
        } else if (t == JSON_NULL) {
                s = strdup("");
                if (!s)
                        return -ENOMEM;
        } else {
                loader_wrong_type(ld, line, key, "a string", t);
                return 0;
        }
        free(*ret);
        *ret = s;
        return 0;
}

static int parse_bool(loader *ld, struct fy_node *n, unsigned line, const char *key, bool *ret) {
        json_type t = json_type_of(n);

        if (t == JSON_BOOL)
                *ret = scalar_is(n, "true");
        else if (t != JSON_NULL)
                loader_wrong_type(ld, line, key, "a boolean", t);
        return 0;
}

/* A list of strings as Go's []string: null is no list, a null element is "". */
static int parse_strings(loader *ld, struct fy_node *n, unsigned line, const char *key, sriov_strings *ret) {
        _cleanup_(strings_done) sriov_strings s = {};
        json_type t = json_type_of(n);
        struct fy_node *item;
        void *it = NULL;
        int count, r;

        if (t == JSON_NULL) {
                strings_done(ret);
                return 0;
        }
        if (t != JSON_ARRAY) {
                loader_wrong_type(ld, line, key, "a list of strings", t);
                return 0;
        }
        count = fy_node_sequence_item_count(n);
        s.v = calloc(count > 0 ? (size_t) count : 1, sizeof(char *));
        if (!s.v)
                return -ENOMEM;
        while ((item = fy_node_sequence_iterate(n, &it))) {
                unsigned item_line = node_line(item, line);
                json_type it_type = json_type_of(item);
                char k[SRIOV_PATH_MAX];

                key_index(k, sizeof(k), key, s.n);
                if (it_type == JSON_NULL) {
                        s.v[s.n] = strdup("");
                        if (!s.v[s.n])
                                return -ENOMEM;
                } else if (it_type != JSON_STRING) {
                        loader_wrong_type(ld, item_line, k, "a string", it_type);
                        return 0;
                } else {
                        r = node_string(ld, item, item_line, k, &s.v[s.n]);
                        if (r < 0)
                                return r;
                        if (!s.v[s.n])
                                return 0;
                }
                s.n++;
        }
        strings_done(ret);
        *ret = s;
        s = (sriov_strings) {};
        return 0;
}

/* ---- "<PF name or BDF>#<i>,<a>-<b>,..." ---- */

/* Go's strconv.Atoi on [s, s+len) for a non-negative index: an optional '+' and decimal digits. */
static bool parse_index(const char *s, size_t len, uint64_t *ret) {
        uint64_t v = 0;
        size_t i = 0;

        if (len > 0 && s[0] == '+')
                i++;
        if (i == len)
                return false;
        for (; i < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return false;
                if (v > (INT64_MAX - (uint64_t) (s[i] - '0')) / 10)
                        return false;           /* out of Go's int range */
                v = v * 10 + (uint64_t) (s[i] - '0');
        }
        *ret = v;
        return true;
}

static int pf_match_select(sriov_pf_match *m, uint64_t first, uint64_t last) {
        size_t words;

        if (first > last || first > VF_INDEX_MAX)
                return 0;
        if (last > VF_INDEX_MAX)
                last = VF_INDEX_MAX;
        words = (size_t) last / 64 + 1;
        if (words > m->n_vf_words) {
                uint64_t *b = realloc(m->vf_bits, words * sizeof(uint64_t));

                if (!b)
                        return -ENOMEM;
                memset(b + m->n_vf_words, 0, (words - m->n_vf_words) * sizeof(uint64_t));
                m->vf_bits = b;
                m->n_vf_words = words;
        }
        for (uint64_t i = first; i <= last; i++)
                m->vf_bits[i / 64] |= UINT64_C(1) << (i % 64);
        return 0;
}

/*
 * Parses one pfNames/rootDevices entry as sriovdp's isSelected() reads it: the ranges are tried in
 * order and the first malformed one ends the list, so only the VFs of the ranges before it are
 * selected (warned).
 */
static int pf_match_parse(loader *ld, const char *text, unsigned line, const char *key, sriov_pf_match *ret) {
        const char *hash = strchr(text, '#'), *p;
        int r;

        ret->pf = strndup(text, hash ? (size_t) (hash - text) : strlen(text));
        if (!ret->pf)
                return -ENOMEM;
        if (!hash) {
                ret->all_vfs = true;
                return 0;
        }
        if (strchr(hash + 1, '#')) {
                ret->malformed = true;
                loader_log(ld, PROBLEM_WARNING, line, key,
                           "more than one '#' in '%s': the entry selects no VF, as in sriovdp", text);
                return 0;
        }

        p = hash + 1;
        for (;;) {
                size_t len = strcspn(p, ",");
                const char *dash = memchr(p, '-', len);
                uint64_t first, last;
                bool ok;

                if (dash) {
                        size_t len2 = len - (size_t) (dash - p) - 1;

                        ok = !memchr(dash + 1, '-', len2) && parse_index(p, (size_t) (dash - p), &first) &&
                             parse_index(dash + 1, len2, &last);
                } else {
                        ok = parse_index(p, len, &first);
                        last = first;
                }
                if (!ok) {
                        ret->malformed = true;
                        loader_log(ld, PROBLEM_WARNING, line, key,
                                   "malformed VF range '%.*s' in '%s': it and the ranges after it select no VF, "
                                   "as in sriovdp", (int) len, p, text);
                        return 0;
                }
                r = pf_match_select(ret, first, last);
                if (r < 0)
                        return r;
                if (p[len] == '\0')
                        return 0;
                p += len + 1;
        }
}

static int parse_pf_matches(loader *ld, struct fy_node *n, unsigned line, const char *key, sriov_pf_match **ret,
                            size_t *ret_n) {
        _cleanup_(strings_done) sriov_strings s = {};
        sriov_pf_match *m;
        int r;

        r = parse_strings(ld, n, line, key, &s);
        if (r < 0 || s.n == 0)
                return r;

        m = calloc(s.n, sizeof(sriov_pf_match));
        if (!m)
                return -ENOMEM;
        pf_matches_free(*ret, *ret_n);
        *ret = m;
        *ret_n = s.n;

        for (size_t i = 0; i < s.n; i++) {
                struct fy_node *item = fy_node_sequence_get_by_index(n, (int) i);
                unsigned item_line = node_line(item, line);
                char k[SRIOV_PATH_MAX];

                key_index(k, sizeof(k), key, i);
                r = pf_match_parse(ld, s.v[i], item_line, k, &m[i]);
                if (r < 0)
                        return r;
                for (size_t j = 0; j < i; j++)
                        if (strcasecmp(m[j].pf, m[i].pf) == 0) {
                                loader_log(ld, PROBLEM_WARNING, item_line, k,
                                           "'%s' names the PF of entry %zu again: sriovdp reads only the first "
                                           "entry of a PF, so this one selects no VF", m[i].pf, j);
                                break;
                        }
        }
        return 0;
}

/* ---- a selector object ---- */

static int parse_selector(loader *ld, struct fy_node *n, unsigned line, const char *key, sriov_device_type type,
                          sriov_selector *ret) {
        char vdpa_key[SRIOV_PATH_MAX] = "", links_key[SRIOV_PATH_MAX] = "", aux_key[SRIOV_PATH_MAX] = "";
        unsigned rdma_line = 0, vdpa_line = 0, links_line = 0, aux_line = 0;
        struct fy_node_pair *pair;
        json_type t = json_type_of(n);
        void *it = NULL;
        int r;

        if (t != JSON_OBJECT) {
                loader_wrong_type(ld, line, key, "a selector object", t);
                return 0;
        }

        while ((pair = fy_node_mapping_iterate(n, &it))) {
                struct fy_node *kn = fy_node_pair_key(pair), *v = fy_node_pair_value(pair);
                unsigned kline = node_line(kn, line);
                _cleanup_free_ char *name = NULL;
                const selector_field *f;
                char k[SRIOV_PATH_MAX];
                void *field;

                r = pair_key(ld, n, pair, line, key, true, &name, k);
                if (r < 0)
                        return r;
                if (!name)
                        continue;

                f = selector_field_find(name);
                if (!f) {
                        loader_log(ld, PROBLEM_WARNING, kline, k, "unknown key: ignored, as in sriovdp");
                        continue;
                }
                if (!(f->types & TYPE_BIT(type))) {
                        loader_log(ld, PROBLEM_WARNING, kline, k,
                                   "%s does not apply to %s pools: ignored, as in sriovdp", f->key,
                                   device_type_names[type]);
                        continue;
                }

                field = (char *) ret + f->offset;
                switch (f->kind) {
                case FIELD_STRINGS:
                        r = parse_strings(ld, v, kline, k, field);
                        if (field == &ret->link_types) {
                                links_line = kline;
                                strcpy(links_key, k);
                        } else if (field == &ret->aux_types) {
                                aux_line = kline;
                                strcpy(aux_key, k);
                        }
                        break;
                case FIELD_PF_MATCHES:
                        r = parse_pf_matches(ld, v, kline, k, field, (size_t *) ((char *) ret + f->n_offset));
                        break;
                case FIELD_BOOL:
                        r = parse_bool(ld, v, kline, k, field);
                        if (field == &ret->is_rdma)
                                rdma_line = kline;
                        break;
                case FIELD_VDPA_TYPE: {
                        _cleanup_free_ char *s = NULL;

                        r = parse_string(ld, v, kline, k, &s);
                        if (r < 0 || !s)
                                break;
                        if (*s && strcmp(s, "virtio") != 0 && strcmp(s, "vhost") != 0)
                                loader_log(ld, PROBLEM_WARNING, kline, k,
                                           "vdpaType '%s' is neither 'virtio' nor 'vhost': the selector takes "
                                           "no device, as in sriovdp", s);
                        (void) snprintf(ret->vdpa_type, sizeof(ret->vdpa_type), "%s", s);
                        vdpa_line = kline;
                        strcpy(vdpa_key, k);
                        break;
                }
                }
                if (r < 0)
                        return r;
        }

        if (ret->is_rdma && ret->vdpa_type[0])
                loader_log(ld, PROBLEM_ERROR, vdpa_line, vdpa_key,
                           "vdpaType together with isRdma (line %u): sriovdp refuses the pair", rdma_line);
        /* sriovdp's auxNetDevice provider refuses (exits on) a selector without auxTypes, or with
         * another type than "sf" */
        if (type == SRIOV_AUX_NET_DEVICE && ret->aux_types.n == 0)
                loader_log(ld, PROBLEM_ERROR, aux_line ?: line, aux_line ? aux_key : key,
                           "no auxTypes: sriovdp refuses an auxNetDevice selector without them");
        for (size_t i = 0; type == SRIOV_AUX_NET_DEVICE && i < ret->aux_types.n; i++)
                if (strcmp(ret->aux_types.v[i], "sf") != 0) {
                        char k[SRIOV_PATH_MAX];

                        loader_log(ld, PROBLEM_ERROR, aux_line, key_index(k, sizeof(k), aux_key, i),
                                   "auxTypes '%s': sriovdp supports only 'sf'", ret->aux_types.v[i]);
                }
        if (ret->link_types.n > 1)
                loader_log(ld, PROBLEM_WARNING, links_line, links_key,
                           "more than one linkTypes value: any of them matches, sriovdp warns the same");
        return 0;
}

/*
 * Room for the items of the list (`want` JSON_ARRAY) or object (JSON_OBJECT) `n` at `key`: *ret
 * (free()) holds *ret_n zeroed items of `size` bytes. null, an empty one, or a value of another
 * type (warned: `what` was wanted) gives none: 0, *ret NULL. <0 only for -ENOMEM.
 */
static int items_alloc(loader *ld, struct fy_node *n, unsigned line, const char *key, json_type want,
                       const char *what, size_t size, void **ret, size_t *ret_n) {
        json_type t = json_type_of(n);
        int count;

        *ret = NULL;
        *ret_n = 0;
        if (t == JSON_NULL)
                return 0;
        if (t != want) {
                loader_wrong_type(ld, line, key, what, t);
                return 0;
        }
        count = want == JSON_ARRAY ? fy_node_sequence_item_count(n) : fy_node_mapping_item_count(n);
        if (count <= 0)
                return 0;
        *ret = calloc((size_t) count, size);
        if (!*ret)
                return -ENOMEM;
        *ret_n = (size_t) count;
        return 0;
}

static int parse_selectors(loader *ld, struct fy_node *n, unsigned line, const char *key, sriov_pool *p) {
        json_type t = json_type_of(n);
        struct fy_node *item;
        void *it = NULL, *items;
        int r;

        for (size_t i = 0; i < p->n_selectors; i++)
                selector_done(&p->selectors[i]);
        free(p->selectors);
        p->selectors = NULL;
        p->n_selectors = 0;

        if (t == JSON_NULL)
                return 0;
        if (t == JSON_OBJECT) {
                /* the older syntax: one selector object */
                p->selectors = calloc(1, sizeof(sriov_selector));
                if (!p->selectors)
                        return -ENOMEM;
                p->n_selectors = 1;
                return parse_selector(ld, n, line, key, p->type, &p->selectors[0]);
        }
        r = items_alloc(ld, n, line, key, JSON_ARRAY, "a list of selector objects or one selector object",
                        sizeof(sriov_selector), &items, &p->n_selectors);
        p->selectors = items;
        if (r < 0)
                return r;
        for (size_t i = 0; (item = fy_node_sequence_iterate(n, &it)) && i < p->n_selectors; i++) {
                char k[SRIOV_PATH_MAX];

                r = parse_selector(ld, item, node_line(item, line), key_index(k, sizeof(k), key, i), p->type,
                                   &p->selectors[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- additionalInfo: {"*" or BDF: {key: value}} ---- */

static int parse_info_map(loader *ld, struct fy_node *n, unsigned line, const char *key, sriov_info_entry *e) {
        json_type t = json_type_of(n);
        struct fy_node_pair *pair;
        void *it = NULL;
        int count, r;

        if (t == JSON_NULL)
                return 0;
        if (t != JSON_OBJECT) {
                loader_wrong_type(ld, line, key, "an object of strings", t);
                return 0;
        }
        count = fy_node_mapping_item_count(n);
        e->keys.v = calloc(count > 0 ? (size_t) count : 1, sizeof(char *));
        e->values.v = calloc(count > 0 ? (size_t) count : 1, sizeof(char *));
        if (!e->keys.v || !e->values.v)
                return -ENOMEM;

        while ((pair = fy_node_mapping_iterate(n, &it))) {
                struct fy_node *kn = fy_node_pair_key(pair), *v = fy_node_pair_value(pair);
                unsigned kline = node_line(kn, line);
                _cleanup_free_ char *name = NULL, *value = NULL;
                char k[SRIOV_PATH_MAX];

                r = pair_key(ld, n, pair, line, key, false, &name, k);
                if (r < 0)
                        return r;
                if (!name)
                        continue;
                r = parse_string(ld, v, kline, k, &value);
                if (r < 0)
                        return r;
                if (!value)
                        continue;
                e->keys.v[e->keys.n++] = KDP_TAKE_PTR(name);
                e->values.v[e->values.n++] = KDP_TAKE_PTR(value);
        }
        return 0;
}

static int parse_info(loader *ld, struct fy_node *n, unsigned line, const char *key, sriov_pool *p) {
        struct fy_node_pair *pair;
        void *it = NULL, *items;
        size_t room;
        int r;

        for (size_t i = 0; i < p->n_info; i++) {
                free(p->info[i].key);
                strings_done(&p->info[i].keys);
                strings_done(&p->info[i].values);
        }
        free(p->info);
        p->info = NULL;
        p->n_info = 0;
        /* Go's map: {} is a map with no entry (sriovdp's extra provider still answers), null none */
        p->has_info = json_type_of(n) == JSON_OBJECT;

        r = items_alloc(ld, n, line, key, JSON_OBJECT, "an object of objects of strings", sizeof(sriov_info_entry),
                        &items, &room);
        p->info = items;
        if (r < 0 || !p->info)
                return r;

        while ((pair = fy_node_mapping_iterate(n, &it))) {
                struct fy_node *kn = fy_node_pair_key(pair);
                unsigned kline = node_line(kn, line);
                _cleanup_free_ char *name = NULL;
                sriov_info_entry *e;
                char k[SRIOV_PATH_MAX];

                r = pair_key(ld, n, pair, line, key, false, &name, k);
                if (r < 0)
                        return r;
                if (!name)
                        continue;
                e = &p->info[p->n_info++];
                e->key = KDP_TAKE_PTR(name);
                r = parse_info_map(ld, fy_node_pair_value(pair), kline, k, e);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- a resourceList entry ---- */

static bool resource_name_valid(const char *s) {
        if (!*s)
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
                      *s == '_' || *s == '-'))
                        return false;
        return true;
}

/* The last pair of `map` whose key folds to `name` (Go's rule for a struct field), NULL when none. */
static struct fy_node_pair *pair_lookup_fold(struct fy_node *map, const char *name) {
        struct fy_node_pair *p, *found = NULL;
        void *it = NULL;

        while ((p = fy_node_mapping_iterate(map, &it)))
                if (key_is(fy_node_pair_key(p), name, strlen(name), true))
                        found = p;
        return found;
}

/* deviceType first: the selectors' fields depend on it, wherever it stands in the object. */
static int parse_device_type(loader *ld, struct fy_node *n, unsigned line, const char *key, sriov_pool *p,
                             unsigned *ret_line) {
        struct fy_node_pair *pair = pair_lookup_fold(n, "deviceType");
        _cleanup_free_ char *s = NULL;
        unsigned kline;
        char k[SRIOV_PATH_MAX];
        int r;

        p->type = SRIOV_NET_DEVICE;
        if (!pair)
                return 0;
        kline = node_line(fy_node_pair_key(pair), line);
        *ret_line = kline;
        key_member(k, sizeof(k), key, "deviceType");
        r = parse_string(ld, fy_node_pair_value(pair), kline, k, &s);
        if (r < 0 || !s || !*s)
                return r;
        for (sriov_device_type t = 0; t < _SRIOV_DEVICE_TYPE_MAX; t++)
                if (strcmp(s, device_type_names[t]) == 0) {
                        p->type = t;
                        return 0;
                }
        loader_log(ld, PROBLEM_ERROR, kline, k,
                   "unknown deviceType '%s': want netDevice, accelerator, auxNetDevice or pci", s);
        return 0;
}

/* Copies `s` into a char[SRIOV_NAME_MAX] field; false (refused, logged) when it does not fit. */
static bool name_copy(loader *ld, char *dst, const char *s, unsigned line, const char *key, const char *what) {
        if (strlen(s) >= SRIOV_NAME_MAX) {
                loader_log(ld, PROBLEM_ERROR, line, key, "%s longer than %d characters", what, SRIOV_NAME_MAX - 1);
                return false;
        }
        strcpy(dst, s);
        return true;
}

static int parse_pool(loader *ld, struct fy_node *n, unsigned line, size_t index, const char *default_prefix,
                      sriov_pool *p, unsigned *ret_name_line, bool *ret_dropped) {
        _cleanup_free_ char *name = NULL, *prefix = NULL;
        unsigned name_line = line, selectors_line = line, type_line = line;
        bool has_selectors = false, name_given = false, selectors_refused = false, dropped = false;
        struct fy_node_pair *pair;
        json_type t = json_type_of(n);
        char elem[SRIOV_PATH_MAX], key[SRIOV_PATH_MAX];
        void *it = NULL;
        int r;

        key_index(elem, sizeof(elem), "resourceList", index);
        strcpy(key, elem);
        p->line = line;
        if (t != JSON_OBJECT && t != JSON_NULL) {
                loader_wrong_type(ld, line, key, "a resource object", t);
                return 0;
        }
        if (t == JSON_OBJECT) {
                r = parse_device_type(ld, n, line, key, p, &type_line);
                if (r < 0)
                        return r;
        }

        while (t == JSON_OBJECT && (pair = fy_node_mapping_iterate(n, &it))) {
                struct fy_node *kn = fy_node_pair_key(pair), *v = fy_node_pair_value(pair);
                unsigned kline = node_line(kn, line);
                _cleanup_free_ char *kname = NULL;
                char k[SRIOV_PATH_MAX];

                r = pair_key(ld, n, pair, line, key, true, &kname, k);
                if (r < 0)
                        return r;
                if (!kname)
                        continue;

                if (strcasecmp(kname, "resourceName") == 0) {
                        r = parse_string(ld, v, kline, k, &name);
                        name_line = kline;
                        name_given = true;
                } else if (strcasecmp(kname, "resourcePrefix") == 0)
                        r = parse_string(ld, v, kline, k, &prefix);
                else if (strcasecmp(kname, "deviceType") == 0)
                        r = 0;          /* read first */
                else if (strcasecmp(kname, "excludeTopology") == 0)
                        r = parse_bool(ld, v, kline, k, &p->exclude_topology);
                else if (strcasecmp(kname, "selectors") == 0) {
                        unsigned n_errors = ld->n_errors;

                        /* sriovdp decodes the selectors of each pool on their own, and drops
                         * the pool (with a warning) whose selectors do not decode */
                        ld->probing = true;
                        ld->probe_failed = false;
                        r = parse_selectors(ld, v, kline, k, p);
                        ld->probing = false;
                        dropped = ld->probe_failed;
                        if (r >= 0 && !dropped)
                                r = parse_selectors(ld, v, kline, k, p);
                        selectors_refused = ld->n_errors > n_errors;
                        has_selectors = p->n_selectors > 0;
                        selectors_line = kline;
                } else if (strcasecmp(kname, "additionalInfo") == 0)
                        r = parse_info(ld, v, kline, k, p);
                else {
                        loader_log(ld, PROBLEM_WARNING, kline, k, "unknown key: ignored, as in sriovdp");
                        r = 0;
                }
                if (r < 0)
                        return r;
        }

        *ret_name_line = name_line;
        if (dropped) {
                /* dropped before sriovdp validates names: only its selectors' fault is told */
                loader_log(ld, PROBLEM_WARNING, ld->probe_line, ld->probe_key,
                           "%s: the pool %s is dropped, the others are served, as in sriovdp", ld->probe_reason,
                           name && *name ? name : elem);
                *ret_dropped = true;
                return 0;
        }
        if (!name) {
                if (!name_given)
                        loader_log(ld, PROBLEM_ERROR, line, key, "missing resourceName");
                return 0;
        }
        key_member(key, sizeof(key), elem, "resourceName");
        if (!resource_name_valid(name)) {
                loader_log(ld, PROBLEM_ERROR, name_line, key,
                           "invalid resourceName '%s': sriovdp allows only letters, digits, '_' and '-'", name);
                return 0;
        }
        if (!name_copy(ld, p->resource_name, name, name_line, key, "resourceName"))
                return 0;
        if (!prefix || !*prefix) {
                free(prefix);
                prefix = strdup(default_prefix);
                if (!prefix)
                        return -ENOMEM;
        }
        key_member(key, sizeof(key), elem, "resourcePrefix");
        if (!name_copy(ld, p->resource_prefix, prefix, name_line, key, "resourcePrefix"))
                return 0;
        (void) snprintf(p->resource, sizeof(p->resource), "%s/%s", p->resource_prefix, p->resource_name);

        if (strchr(name, '-')) {
                _cleanup_free_ char *env = NULL;

                r = sriov_answer_env_key(p, &env);
                if (r < 0)
                        return r;
                key_member(key, sizeof(key), elem, "resourceName");
                loader_log(ld, PROBLEM_WARNING, name_line, key,
                           "'-' in resourceName: the env key %s is not a shell identifier", env);
        }
        if (p->type == SRIOV_AUX_NET_DEVICE && !selectors_refused)
                loader_log(ld, PROBLEM_WARNING, type_line, key_member(key, sizeof(key), elem, "deviceType"),
                           "auxNetDevice pools hold auxiliary devices, which this backend does not serve: "
                           "the pool stays empty");
        else if (!has_selectors && !selectors_refused)
                loader_log(ld, PROBLEM_WARNING, selectors_line, key_member(key, sizeof(key), elem, "selectors"),
                           "no selector object: the pool takes no device");
        return 0;
}

/* ---- the file ---- */

/* The file whole, through kdp_config_file_read(): no hang on a FIFO, no byte libfyaml would stop at. */
static int read_file(loader *ld, char **ret, size_t *ret_len) {
        kdp_config_file_error e = {};
        int r;

        r = kdp_config_file_read(ld->path, CONFIG_SIZE_MAX, ret, ret_len, &e);
        if (r == -EILSEQ) {
                loader_log(ld, PROBLEM_ERROR, e.line, NULL, "not JSON: %s (column %u)", e.reason, e.column);
                return 0;
        }
        if (r == -ENOMEM || r >= 0)
                return r;
        if (r == -EFBIG)
                return kdp_backend_log_error(ld->ctx, r, "Failed to read SR-IOV config file", KDP_F_STR("path", ld->path),
                                             KDP_F_STR("reason", e.reason), KDP_F_INT("maxBytes", CONFIG_SIZE_MAX));
        if (e.reason)
                return kdp_backend_log_error(ld->ctx, r, "Failed to read SR-IOV config file", KDP_F_STR("path", ld->path),
                                             KDP_F_STR("reason", e.reason));
        return kdp_backend_log_error(ld->ctx, r, "Failed to read SR-IOV config file", KDP_F_STR("path", ld->path));
}

/* Nesting, entries and values within the framework's limits before a document is built (else logged). */
static int check_shape(loader *ld, const char *text, size_t len) {
        char key[KDP_CONFIG_SHAPE_KEY_MAX];
        kdp_config_file_error e = {};
        int r;

        r = kdp_config_shape_check(text, len, true, &e, key);
        if (r == -E2BIG) {
                loader_log(ld, PROBLEM_ERROR, e.line, key, "%s (column %u)", e.reason, e.column);
                return 0;
        }
        return r;
}

static void diag_drop(struct fy_diag *diag, void *user, const char *buf, size_t len) {
}

typedef struct json_doc {
        struct fy_diag *diag;
        struct fy_parser *parser;
        struct fy_document *doc;
} json_doc;

static void json_doc_done(json_doc *j) {
        if (j->doc)
                fy_parse_document_destroy(j->parser, j->doc);
        if (j->parser)
                fy_parser_destroy(j->parser);
        if (j->diag)
                fy_diag_destroy(j->diag);
        *j = (json_doc) {};
}

/* Parses `text` as one JSON value; libfyaml's complaints are logged, and then *ret->doc is NULL. */
static int json_parse(loader *ld, const char *text, size_t len, json_doc *ret) {
        struct fy_diag_error *e;
        struct fy_diag_cfg dcfg;
        struct fy_parse_cfg pcfg;
        void *it = NULL;
        bool logged = false;

        fy_diag_cfg_default(&dcfg);
        dcfg.fp = NULL;
        dcfg.output_fn = diag_drop;
        ret->diag = fy_diag_create(&dcfg);
        if (!ret->diag)
                return -ENOMEM;
        fy_diag_set_collect_errors(ret->diag, true);
        pcfg = (struct fy_parse_cfg) {
                .flags = FYPCF_QUIET | FYPCF_COLLECT_DIAG | FYPCF_ALLOW_DUPLICATE_KEYS | FYPCF_JSON_FORCE,
                .diag = ret->diag,
        };
        ret->parser = fy_parser_create(&pcfg);
        if (!ret->parser)
                return -ENOMEM;
        if (fy_parser_set_string(ret->parser, text, len) < 0)
                return -ENOMEM;
        ret->doc = fy_parse_load_document(ret->parser);
        if (ret->doc) {
                /* one value and nothing after it, as Go's json.Unmarshal wants */
                struct fy_document *extra = fy_parse_load_document(ret->parser);

                if (extra) {
                        struct fy_document_state *ds = fy_document_get_document_state(extra);
                        const struct fy_mark *m = ds ? fy_document_state_start_mark(ds) : NULL;

                        fy_parse_document_destroy(ret->parser, extra);
                        if (!fy_diag_got_error(ret->diag)) {
                                loader_log(ld, PROBLEM_ERROR, m ? (unsigned) m->line + 1 : 0, NULL,
                                           "not JSON: a second value after the first (column %d)",
                                           m ? m->column + 1 : 0);
                                fy_parse_document_destroy(ret->parser, ret->doc);
                                ret->doc = NULL;
                                return 0;
                        }
                }
        }
        if (!fy_diag_got_error(ret->diag) && ret->doc)
                return 0;

        while ((e = fy_diag_errors_iterate(ret->diag, &it))) {
                if (e->type < FYET_ERROR)
                        continue;
                loader_log(ld, PROBLEM_ERROR, e->line > 0 ? (unsigned) e->line : 0, NULL,
                           "not JSON: %s (column %d)", e->msg, e->column);
                logged = true;
        }
        if (!logged)
                loader_log(ld, PROBLEM_ERROR, 0, NULL, "not JSON");
        if (ret->doc) {
                fy_parse_document_destroy(ret->parser, ret->doc);
                ret->doc = NULL;
        }
        return 0;
}

static int parse_root(loader *ld, struct fy_node *root, const char *default_prefix, sriov_config *c) {
        _cleanup_free_ unsigned *name_lines = NULL;
        _cleanup_free_ size_t *indexes = NULL;  /* of the pools kept, in resourceList */
        struct fy_node *list = NULL, *item;
        struct fy_node_pair *pair;
        json_type t = json_type_of(root);
        unsigned list_line = 0;
        void *it = NULL;
        int count, r;

        if (t != JSON_OBJECT && t != JSON_NULL) {
                loader_wrong_type(ld, node_line(root, 1), NULL, "an object with a resourceList", t);
                return 0;
        }
        while (t == JSON_OBJECT && (pair = fy_node_mapping_iterate(root, &it))) {
                struct fy_node *kn = fy_node_pair_key(pair);
                unsigned kline = node_line(kn, 0);
                _cleanup_free_ char *kname = NULL;

                r = node_string(ld, kn, kline, NULL, &kname);
                if (r < 0)
                        return r;
                if (!kname || key_replaced_later(ld, root, pair, kname, true, kname))
                        continue;
                if (strcasecmp(kname, "resourceList") == 0) {
                        list = fy_node_pair_value(pair);
                        list_line = kline;
                } else
                        loader_log(ld, PROBLEM_WARNING, kline, kname, "unknown key: ignored, as in sriovdp");
        }

        t = json_type_of(list);
        if (t != JSON_ARRAY && t != JSON_NULL) {
                loader_wrong_type(ld, list_line, "resourceList", "a list of resource objects", t);
                return 0;
        }
        count = t == JSON_ARRAY ? fy_node_sequence_item_count(list) : 0;
        if (count <= 0) {
                loader_log(ld, PROBLEM_ERROR, list_line, "resourceList",
                           "no resource: sriovdp does not start without one");
                return 0;
        }
        if (count > SRIOV_POOLS_MAX) {
                item = fy_node_sequence_get_by_index(list, SRIOV_POOLS_MAX);
                loader_log(ld, PROBLEM_ERROR, node_line(item, list_line), "resourceList",
                           "more than %d resources: kdpd serves at most %d from one config file", SRIOV_POOLS_MAX,
                           SRIOV_POOLS_MAX);
                return 0;
        }

        c->pools = calloc((size_t) count, sizeof(sriov_pool));
        name_lines = calloc((size_t) count, sizeof(unsigned));
        indexes = calloc((size_t) count, sizeof(size_t));
        if (!c->pools || !name_lines || !indexes)
                return -ENOMEM;
        it = NULL;
        c->n_pools = 0;
        for (size_t i = 0; (item = fy_node_sequence_iterate(list, &it)) && i < (size_t) count; i++) {
                sriov_pool *p = &c->pools[c->n_pools];
                bool dropped = false;

                r = parse_pool(ld, item, node_line(item, list_line), i, default_prefix, p, &name_lines[c->n_pools],
                               &dropped);
                if (r < 0) {
                        c->n_pools++;           /* freed with the others */
                        return r;
                }
                if (dropped) {
                        pool_done(p);
                        continue;
                }
                indexes[c->n_pools++] = i;
        }
        if (c->n_pools == 0 && ld->r == 0) {
                loader_log(ld, PROBLEM_ERROR, list_line, "resourceList",
                           "no resource left once the pools whose selectors do not load were dropped: sriovdp "
                           "does not start without one");
                return 0;
        }

        /* a resource is one socket and one kubelet registration: sriovdp refuses two */
        for (size_t i = 1; i < c->n_pools; i++)
                for (size_t j = 0; j < i; j++) {
                        char e[SRIOV_PATH_MAX], k[SRIOV_PATH_MAX];

                        if (!c->pools[i].resource[0] || strcmp(c->pools[i].resource, c->pools[j].resource) != 0)
                                continue;
                        key_member(k, sizeof(k), key_index(e, sizeof(e), "resourceList", indexes[i]),
                                   "resourceName");
                        loader_log(ld, PROBLEM_ERROR, name_lines[i], k,
                                   "duplicate resource '%s': resourceList[%zu] (line %u) has it already",
                                   c->pools[i].resource, indexes[j], name_lines[j]);
                        break;
                }
        return 0;
}

int sriov_config_load(const kdp_backend_ctx *ctx, const char *path, const char *default_prefix,
                      sriov_config *ret) {
        _cleanup_(json_doc_done) json_doc j = {};
        _cleanup_free_ char *text = NULL;
        loader ld = { .ctx = ctx, .path = path };
        size_t len = 0;
        int r;

        assert(ret);
        *ret = (sriov_config) {};
        if (!path)
                return -EINVAL;
        ret->path = strdup(path);
        if (!ret->path)
                return -ENOMEM;

        r = read_file(&ld, &text, &len);
        if (r < 0)
                return r;
        if (!text)
                return ld.r;    /* a byte the parser would not read: logged */
        /* Go's decoder takes no byte order mark (sriovdp exits on "invalid character 'ï'");
         * libfyaml would skip it, as YAML allows one */
        if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) {
                loader_log(&ld, PROBLEM_ERROR, 1, NULL, "not JSON: a UTF-8 byte order mark (column 1)");
                return ld.r;
        }
        r = check_shape(&ld, text, len);
        if (r < 0)
                return r;
        if (ld.r < 0)
                return ld.r;    /* logged */
        r = json_parse(&ld, text, len, &j);
        if (r < 0)
                return r;
        if (!j.doc)
                return ld.r;
        r = parse_root(&ld, fy_document_root(j.doc), default_prefix ?: DEFAULT_PREFIX, ret);
        if (r < 0)
                return r;
        return ld.r;
}

/* ---- matching ---- */

/* sriovdp's accelerator provider keeps every function of its class, a PF with VFs too; only
 * one without a driver makes no device there either */
static const char *excluded_from(sriov_device_type type, const sriov_func *f) {
        if (type != SRIOV_ACCELERATOR) {
                if (f->is_pf_with_vfs)
                        return "PF with VFs enabled";
                if (f->default_route)
                        return "carries the default route";
        }
        if (!f->driver[0])
                return "driver unbound";
        return NULL;
}

const char *sriov_config_excluded(const sriov_func *f) {
        return excluded_from(SRIOV_NET_DEVICE, f);
}

static bool strings_have(const sriov_strings *s, const char *v) {
        for (size_t i = 0; i < s->n; i++)
                if (strcmp(s->v[i], v) == 0)
                        return true;
        return false;
}

/* A field given (n > 0) filters; an absent one lets everything through. */
static bool strings_pass(const sriov_strings *s, const char *v) {
        return s->n == 0 || strings_have(s, v);
}

static bool pf_match_selects(const sriov_pf_match *m, int vf_index) {
        if (m->all_vfs)
                return true;
        if (vf_index < 0 || (size_t) vf_index / 64 >= m->n_vf_words)
                return false;
        return m->vf_bits[vf_index / 64] & (UINT64_C(1) << (vf_index % 64));
}

/* sriovdp's getItem() + isSelected(): only the first entry naming the PF decides. */
static bool pf_matches_pass(const sriov_pf_match *m, size_t n, const char *pf, int vf_index) {
        if (n == 0)
                return true;
        if (!*pf || vf_index < 0)
                return false;           /* not a VF: dropped by these selectors */
        for (size_t i = 0; i < n; i++)
                if (strcasecmp(m[i].pf, pf) == 0)
                        return pf_match_selects(&m[i], vf_index);
        return false;
}

static bool selector_takes(const sriov_selector *s, sriov_device_type type, const sriov_func *f) {
        if (!strings_pass(&s->vendors, f->vendor) || !strings_pass(&s->devices, f->device) ||
            !strings_pass(&s->drivers, f->driver) || !strings_pass(&s->pci_addresses, f->address))
                return false;
        if (type != SRIOV_NET_DEVICE)
                return true;            /* accelerator and pci apply no more */

        return strings_pass(&s->acpi_indexes, f->acpi_index) &&
               pf_matches_pass(s->pf_names, s->n_pf_names, f->pf_name, f->vf_index) &&
               pf_matches_pass(s->root_devices, s->n_root_devices, f->pf_address, f->vf_index) &&
               strings_pass(&s->link_types, f->link_type) && strings_pass(&s->ddp_profiles, f->ddp_profile) &&
               strings_pass(&s->pkeys, f->pkey) && (!s->is_rdma || f->rdma_dev[0]) &&
               (!s->vdpa_type[0] || strcmp(s->vdpa_type, f->vdpa_type) == 0);
}

static bool class_fits(sriov_device_type type, uint32_t class_code) {
        switch (type) {
        case SRIOV_NET_DEVICE:
                return (class_code >> 16) == 0x02;
        case SRIOV_ACCELERATOR:
                return (class_code >> 16) == 0x12;
        case SRIOV_PCI:
                return true;
        default:
                return false;           /* auxNetDevice: auxiliary devices, never a PCI function */
        }
}

int sriov_config_match(const sriov_config *c, const sriov_func *f, size_t *ret_selector) {
        for (size_t i = 0; i < c->n_pools; i++) {
                const sriov_pool *p = &c->pools[i];

                if (!class_fits(p->type, f->class_code) || excluded_from(p->type, f))
                        continue;
                for (size_t j = 0; j < p->n_selectors; j++)
                        if (selector_takes(&p->selectors[j], p->type, f)) {
                                if (ret_selector)
                                        *ret_selector = j;
                                return (int) i;
                        }
        }
        return -1;
}

/* ---- equality ---- */

static bool strings_equal(const sriov_strings *a, const sriov_strings *b) {
        if (a->n != b->n)
                return false;
        for (size_t i = 0; i < a->n; i++)
                if (strcmp(a->v[i], b->v[i]) != 0)
                        return false;
        return true;
}

static bool pf_matches_equal(const sriov_pf_match *a, size_t n_a, const sriov_pf_match *b, size_t n_b) {
        if (n_a != n_b)
                return false;
        for (size_t i = 0; i < n_a; i++) {
                size_t words = a[i].n_vf_words > b[i].n_vf_words ? a[i].n_vf_words : b[i].n_vf_words;

                if (strcmp(a[i].pf, b[i].pf) != 0 || a[i].all_vfs != b[i].all_vfs ||
                    a[i].malformed != b[i].malformed)
                        return false;
                for (size_t w = 0; w < words; w++) {
                        uint64_t wa = w < a[i].n_vf_words ? a[i].vf_bits[w] : 0;
                        uint64_t wb = w < b[i].n_vf_words ? b[i].vf_bits[w] : 0;

                        if (wa != wb)
                                return false;
                }
        }
        return true;
}

static bool selectors_equal(const sriov_selector *a, const sriov_selector *b) {
        for (size_t i = 0; i < KDP_ELEMENTSOF(selector_fields); i++) {
                const selector_field *f = &selector_fields[i];

                if (f->kind == FIELD_STRINGS &&
                    !strings_equal((const sriov_strings *) ((const char *) a + f->offset),
                                   (const sriov_strings *) ((const char *) b + f->offset)))
                        return false;
        }
        return pf_matches_equal(a->pf_names, a->n_pf_names, b->pf_names, b->n_pf_names) &&
               pf_matches_equal(a->root_devices, a->n_root_devices, b->root_devices, b->n_root_devices) &&
               a->is_rdma == b->is_rdma && a->need_vhost_net == b->need_vhost_net &&
               strcmp(a->vdpa_type, b->vdpa_type) == 0;
}

bool sriov_config_pool_equal(const sriov_pool *a, const sriov_pool *b) {
        if (strcmp(a->resource_name, b->resource_name) != 0 || strcmp(a->resource_prefix, b->resource_prefix) != 0 ||
            strcmp(a->resource, b->resource) != 0 || a->type != b->type ||
            a->exclude_topology != b->exclude_topology || a->n_selectors != b->n_selectors || a->n_info != b->n_info ||
            a->has_info != b->has_info)
                return false;
        for (size_t i = 0; i < a->n_selectors; i++)
                if (!selectors_equal(&a->selectors[i], &b->selectors[i]))
                        return false;
        for (size_t i = 0; i < a->n_info; i++)
                if (strcmp(a->info[i].key, b->info[i].key) != 0 ||
                    !strings_equal(&a->info[i].keys, &b->info[i].keys) ||
                    !strings_equal(&a->info[i].values, &b->info[i].values))
                        return false;
        return true;
}
