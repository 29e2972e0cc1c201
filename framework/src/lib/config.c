/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kdpd's configuration file (see config.h), read with libfyaml.
 *
 * Input. A path ending in ".json" is parsed in JSON mode (FYPCF_JSON_FORCE),
 * anything else as YAML 1.2 with JSON input disabled (FYPCF_JSON_NONE); this is
 * what FYPCF_JSON_AUTO does, decided here so that it does not depend on how the
 * input is handed to libfyaml. libfyaml's diagnostics are collected, never
 * printed, and each becomes one log line.
 *
 * Shape. One document; an empty file (also a .json one), a file of comments
 * or an empty or null document is an empty config. The top level is a mapping of sections; a
 * section is a mapping of keys to scalars, or null (no keys). Keys and
 * section names are non-empty scalars. Anchors are allowed, aliases (and so
 * merge keys) are not: every value is written where it applies.
 *
 * Values are kept as the text of the scalar ("16", "true", "0x10"); the
 * consumer decides the type. A null value (`key:`, `key: ~`, `key: null`, JSON
 * null) is stored as the empty string, the same as `-o backend.key=`: the key
 * is set, to nothing, and a consumer that needs a number or a boolean reports
 * it as malformed instead of silently using the default. A quoted "null" is the
 * four-letter string.
 *
 * Limits. Before libfyaml builds a document, kdp_config_shape_check()
 * walks the file's events: nesting, entries per list or mapping and values per
 * file past its limits refuse the file (one line naming line, column, key and
 * the limit), so no hostile shape costs more than a few megabytes.
 *
 * Errors. Every problem in the file is logged at error level as
 *   "Rejected config file" path="..." line=N key="section.key" reason="..."
 * (line is 1-based; line and key are left out when they do not exist, column
 * is added for syntax errors), all problems of the file are reported, and the
 * load fails with -EINVAL. Duplicate sections and keys are detected here, not
 * by libfyaml, so that the error names the section and key.
 *
 * Lookup. Entries keep their order: file entries first, then overrides in the
 * order given. The last entry for section.key is the effective one, so a later
 * -o wins over an earlier one and over the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <libfyaml.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kdp/cleanup.h>
#include <kdp/config-file.h>
#include <kdp/config-shape.h>
#include <kdp/log.h>

#include "config.h"

typedef struct yaml_input {
        char *text;                     /* the file's bytes: libfyaml reads them in place */
        struct fy_diag *diag;
        struct fy_parser *parser;
        struct fy_document *doc;
        struct fy_document *extra;      /* a second document, which is an error */
} yaml_input;

static void yaml_input_done(yaml_input *y) {
        if (y->parser) {
                if (y->extra)
                        fy_parse_document_destroy(y->parser, y->extra);
                if (y->doc)
                        fy_parse_document_destroy(y->parser, y->doc);
                fy_parser_destroy(y->parser);
        }
        if (y->diag)
                fy_diag_destroy(y->diag);
        free(y->text);
        *y = (yaml_input) {};
}

typedef struct reason_count {
        const char *reason;     /* static */
        size_t n;
} reason_count;

typedef struct config_loader {
        kdp_config *config;
        const char *path;
        const char *text;       /* the file's bytes, which libfyaml's marks point into */
        size_t size;
        int r;                  /* the first error */
        reason_count reasons[16];       /* the problem kinds seen, in order of their first line */
        size_t n_reasons;
} config_loader;

static void diag_discard(struct fy_diag *diag, void *user, const char *buf, size_t len) {
}

static kdp_log_field field_line(int line) {
        return (kdp_log_field) {
                .key = "line",
                .type = line > 0 ? KDP_LOG_FIELD_INT : KDP_LOG_FIELD_NONE,
                .num = line,
        };
}

/* "section.key" (free()), or NULL when out of memory. */
static char *join_key(const char *section, const char *key) {
        char *s;

        if (asprintf(&s, "%s.%s", section, key) < 0)
                return NULL;
        return s;
}

/* Counts a problem of kind `reason` (static); true if its line is to be logged. */
static bool loader_count(config_loader *ld, const char *reason) {
        size_t i;

        if (ld->r == 0)
                ld->r = -EINVAL;
        for (i = 0; i < ld->n_reasons; i++)
                if (ld->reasons[i].reason == reason)
                        return ++ld->reasons[i].n <= KDP_CONFIG_LINES_PER_KIND;
        if (i == KDP_ELEMENTSOF(ld->reasons))
                return true;    /* more kinds than the loader has: not counted, all logged */
        ld->reasons[ld->n_reasons++] = (reason_count) { .reason = reason, .n = 1 };
        return true;
}

/* One line per kind of problem that had more lines than were logged. */
static void loader_summary(config_loader *ld) {
        for (size_t i = 0; i < ld->n_reasons; i++)
                if (ld->reasons[i].n > KDP_CONFIG_LINES_PER_KIND)
                        kdp_log_error(-EINVAL, "Omitted more problems of the config file", KDP_F_STR("path", ld->path),
                                      KDP_F_STR("reason", ld->reasons[i].reason),
                                      KDP_F_INT("omitted", ld->reasons[i].n - KDP_CONFIG_LINES_PER_KIND));
}

/* Logs one problem of the file; `section` and `key` may be NULL; `reason` is static. */
static void loader_error(config_loader *ld, int line, const char *section, const char *key, const char *reason) {
        _cleanup_free_ char *full = NULL;
        const char *k = section;

        if (!loader_count(ld, reason))
                return;
        if (section && key) {
                full = join_key(section, key);
                k = full ?: key;
        }

        kdp_log_error(-EINVAL, "Rejected config file", KDP_F_STR("path", ld->path), field_line(line),
                      (kdp_log_field) { .key = "key", .type = k ? KDP_LOG_FIELD_STR : KDP_LOG_FIELD_NONE, .str = k },
                      KDP_F_STR("reason", reason));
}

/* The 1-based line where a node starts, 0 when libfyaml does not know. */
static int node_line(struct fy_node *n) {
        void *it = NULL;

        if (!n)
                return 0;

        switch (fy_node_get_type(n)) {
        case FYNT_SCALAR: {
                struct fy_token *t = fy_node_get_scalar_token(n);
                const struct fy_mark *m = t ? fy_token_start_mark(t) : NULL;

                return m ? m->line + 1 : 0;
        }
        case FYNT_MAPPING: {
                struct fy_node_pair *p = fy_node_mapping_iterate(n, &it);

                return p ? node_line(fy_node_pair_key(p)) : 0;
        }
        case FYNT_SEQUENCE:
                return node_line(fy_node_sequence_iterate(n, &it));
        }
        return 0;
}

static bool node_is_alias(struct fy_node *n) {
        return n && fy_node_get_type(n) == FYNT_SCALAR && fy_node_get_style(n) == FYNS_ALIAS;
}

/* A plain scalar that YAML 1.2 (core schema) and JSON read as null, or no node at all. */
static bool node_is_null(struct fy_node *n) {
        static const char *const nulls[] = { "", "~", "null", "Null", "NULL" };
        const char *s;
        size_t len;

        if (!n)
                return true;
        if (fy_node_get_type(n) != FYNT_SCALAR || fy_node_get_style(n) != FYNS_PLAIN)
                return false;

        s = fy_node_get_scalar(n, &len);
        if (!s)
                return true;
        for (size_t i = 0; i < KDP_ELEMENTSOF(nulls); i++)
                if (len == strlen(nulls[i]) && memcmp(s, nulls[i], len) == 0)
                        return true;
        return false;
}

/* The escaped quotes ('') in `len` bytes of a single-quoted scalar's source. */
static size_t quote_escapes(const char *s, size_t len) {
        size_t n = 0;

        for (size_t i = 0; i + 1 < len; i++)
                if (s[i] == '\'' && s[i + 1] == '\'') {
                        n++;
                        i++;
                }
        return n;
}

/*
 * A single-quoted scalar with more than one escaped quote ('') in its source.
 * libfyaml 0.8 (Debian bookworm) leaks the text it builds for some of them
 * (three escapes with spaces or line breaks between are enough; found by
 * fuzz/config-yaml; none of 2400 random scalars with two or fewer leaked), so
 * such a scalar is refused before its text is read and the error says to use
 * double quotes; 'it''s' still reads. A scalar's marks span its source
 * between the quotes.
 */
static bool node_has_quote_escapes(const config_loader *ld, struct fy_node *n) {
        struct fy_token *t;
        const struct fy_mark *start, *end;

        if (fy_node_get_type(n) != FYNT_SCALAR || fy_node_get_style(n) != FYNS_SINGLE_QUOTED)
                return false;
        t = fy_node_get_scalar_token(n);
        start = t ? fy_token_start_mark(t) : NULL;
        end = t ? fy_token_end_mark(t) : NULL;
        if (!start || !end || start->input_pos > end->input_pos || end->input_pos > ld->size)
                return true;    /* its source unknown: not read either */
        return quote_escapes(ld->text + start->input_pos, end->input_pos - start->input_pos) > 1;
}

#define QUOTE_ESCAPE_REASON "more than one escaped quote ('') in single quotes (write the value in double quotes)"

/* Copies a scalar's text; -EINVAL if it holds a NUL byte, -EBADMSG for node_has_quote_escapes(). */
static int node_text(const config_loader *ld, struct fy_node *n, char **ret) {
        const char *s;
        size_t len = 0;
        char *c;

        if (node_has_quote_escapes(ld, n))
                return -EBADMSG;
        s = fy_node_get_scalar(n, &len);
        if (!s)
                len = 0;
        if (len > 0 && memchr(s, '\0', len))
                return -EINVAL;

        c = strndup(s ?: "", len);
        if (!c)
                return -ENOMEM;
        *ret = c;
        return 0;
}

typedef struct key_ref {
        const char *text;
        size_t len;
        size_t index;           /* position in the mapping */
} key_ref;

static int key_ref_compare(const void *a, const void *b) {
        const key_ref *x = a, *y = b;
        int c = memcmp(x->text, y->text, x->len < y->len ? x->len : y->len);

        if (c != 0)
                return c;
        if (x->len != y->len)
                return x->len < y->len ? -1 : 1;
        return x->index < y->index ? -1 : x->index > y->index;
}

/*
 * *ret[i] (free()) is true when the i-th key of `map` has the text of an
 * earlier scalar key. One sort of the keys, so n log n for n keys: a file of
 * 40 000 keys must not take minutes.
 */
static int mapping_duplicates(const config_loader *ld, struct fy_node *map, bool **ret) {
        _cleanup_free_ key_ref *refs = NULL;
        _cleanup_free_ bool *dup = NULL;
        struct fy_node_pair *p;
        size_t n = 0, n_refs = 0;
        void *it = NULL;
        int count;

        count = fy_node_mapping_item_count(map);
        n = count > 0 ? (size_t) count : 0;
        dup = calloc(n + 1, sizeof(bool));
        refs = calloc(n + 1, sizeof(key_ref));
        if (!dup || !refs)
                return -ENOMEM;

        for (size_t i = 0; i < n && (p = fy_node_mapping_iterate(map, &it)); i++) {
                struct fy_node *k = fy_node_pair_key(p);
                const char *text;
                size_t len = 0;

                if (!k || fy_node_get_type(k) != FYNT_SCALAR || node_is_alias(k) || node_has_quote_escapes(ld, k))
                        continue;
                text = fy_node_get_scalar(k, &len);
                if (!text)
                        continue;
                refs[n_refs++] = (key_ref) { .text = text, .len = len, .index = i };
        }

        qsort(refs, n_refs, sizeof(key_ref), key_ref_compare);
        for (size_t i = 1; i < n_refs; i++)
                if (refs[i].len == refs[i - 1].len && memcmp(refs[i].text, refs[i - 1].text, refs[i].len) == 0)
                        dup[refs[i].index] = true;

        *ret = KDP_TAKE_PTR(dup);
        return 0;
}

static int config_append(kdp_config *c, const char *section, const char *key, const char *value,
                         const char *origin) {
        _cleanup_free_ char *s = NULL, *k = NULL, *v = NULL, *o = NULL;
        kdp_config_entry *e;

        s = strdup(section);
        k = strdup(key);
        v = strdup(value);
        o = strdup(origin);
        if (!s || !k || !v || !o)
                return -ENOMEM;

        if (c->n_entries == c->n_allocated) {
                size_t n = c->n_allocated ? c->n_allocated * 2 : 16;

                if (n > SIZE_MAX / sizeof(kdp_config_entry))
                        return -ENOMEM;
                e = realloc(c->entries, n * sizeof(kdp_config_entry));
                if (!e)
                        return -ENOMEM;
                c->entries = e;
                c->n_allocated = n;
        }

        c->entries[c->n_entries++] = (kdp_config_entry) {
                .section = KDP_TAKE_PTR(s),
                .key = KDP_TAKE_PTR(k),
                .value = KDP_TAKE_PTR(v),
                .origin = KDP_TAKE_PTR(o),
        };
        return 0;
}

/*
 * Checks a mapping key (`section` NULL: a section name). Returns 1 and its text
 * in *ret, 0 when it is not usable (logged), or a negative errno.
 */
static int loader_key(config_loader *ld, struct fy_node_pair *pair, bool duplicate, const char *section,
                      char **ret) {
        struct fy_node *key = fy_node_pair_key(pair);
        int line = node_line(key) ?: node_line(fy_node_pair_value(pair));
        _cleanup_free_ char *text = NULL;
        int r;

        if (!key || fy_node_get_type(key) != FYNT_SCALAR) {
                loader_error(ld, line, section, NULL, section ? "key is not a scalar" : "section name is not a scalar");
                return 0;
        }
        if (node_is_alias(key)) {
                loader_error(ld, line, section, NULL, "aliases are not supported");
                return 0;
        }
        r = node_text(ld, key, &text);
        if (r == -EINVAL || r == -EBADMSG) {
                loader_error(ld, line, section, NULL, r == -EINVAL ? "contains a NUL byte" : QUOTE_ESCAPE_REASON);
                return 0;
        }
        if (r < 0)
                return r;
        if (!*text) {
                loader_error(ld, line, section, NULL, section ? "empty key" : "empty section name");
                return 0;
        }
        if (duplicate) {
                loader_error(ld, line, section ?: text, section ? text : NULL,
                             section ? "duplicate key" : "duplicate section");
                return 0;
        }

        *ret = KDP_TAKE_PTR(text);
        return 1;
}

static int loader_section(config_loader *ld, const char *section, int section_line, struct fy_node *map) {
        _cleanup_free_ bool *dup = NULL;
        struct fy_node_pair *pair;
        void *it = NULL;
        int r;

        if (node_is_null(map))
                return 0;
        if (node_is_alias(map)) {
                loader_error(ld, section_line, section, NULL, "aliases are not supported");
                return 0;
        }
        if (fy_node_get_type(map) != FYNT_MAPPING) {
                loader_error(ld, section_line, section, NULL, "section is not a mapping");
                return 0;
        }
        r = mapping_duplicates(ld, map, &dup);
        if (r < 0)
                return r;

        for (size_t i = 0; (pair = fy_node_mapping_iterate(map, &it)); i++) {
                _cleanup_free_ char *key = NULL, *value = NULL, *origin = NULL;
                struct fy_node *v = fy_node_pair_value(pair);
                char *tmp;
                int line;

                r = loader_key(ld, pair, dup[i], section, &key);
                if (r < 0)
                        return r;
                if (r == 0)
                        continue;
                line = node_line(fy_node_pair_key(pair)) ?: section_line;

                if (node_is_alias(v)) {
                        loader_error(ld, line, section, key, "aliases are not supported");
                        continue;
                }
                if (node_is_null(v))
                        value = strdup("");
                else if (fy_node_get_type(v) != FYNT_SCALAR) {
                        loader_error(ld, line, section, key, "value must be a scalar");
                        continue;
                } else {
                        r = node_text(ld, v, &value);
                        if (r == -EINVAL || r == -EBADMSG) {
                                loader_error(ld, line, section, key,
                                             r == -EINVAL ? "contains a NUL byte" : QUOTE_ESCAPE_REASON);
                                continue;
                        }
                        if (r < 0)
                                return r;
                }
                if (!value)
                        return -ENOMEM;

                if (asprintf(&tmp, "%s:%d", ld->path, line) < 0)
                        return -ENOMEM;
                origin = tmp;
                r = config_append(ld->config, section, key, value, origin);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int loader_root(config_loader *ld, struct fy_node *root) {
        _cleanup_free_ bool *dup = NULL;
        struct fy_node_pair *pair;
        void *it = NULL;
        int r;

        if (node_is_null(root))
                return 0;
        if (fy_node_get_type(root) != FYNT_MAPPING) {
                loader_error(ld, node_line(root), NULL, NULL, "top level is not a mapping");
                return 0;
        }
        r = mapping_duplicates(ld, root, &dup);
        if (r < 0)
                return r;

        for (size_t i = 0; (pair = fy_node_mapping_iterate(root, &it)); i++) {
                _cleanup_free_ char *section = NULL;

                r = loader_key(ld, pair, dup[i], NULL, &section);
                if (r < 0)
                        return r;
                if (r == 0)
                        continue;

                r = loader_section(ld, section, node_line(fy_node_pair_key(pair)), fy_node_pair_value(pair));
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Logs libfyaml's collected errors; returns how many there were. */
static unsigned loader_diag_errors(config_loader *ld, struct fy_diag *diag) {
        struct fy_diag_error *e;
        void *it = NULL;
        unsigned n = 0;

        while ((e = fy_diag_errors_iterate(diag, &it))) {
                if (e->type < FYET_ERROR)
                        continue;
                kdp_log_error(-EINVAL, "Rejected config file", KDP_F_STR("path", ld->path), field_line(e->line),
                              KDP_F_INT("column", e->column), KDP_F_STR("reason", e->msg));
                n++;
        }
        if (ld->r == 0)
                ld->r = -EINVAL;
        return n;
}

static bool path_is_json(const char *path) {
        size_t n = strlen(path);

        return n >= 5 && strcmp(path + n - 5, ".json") == 0;
}

/* Logs why the file could not be read; returns r. */
static int log_read_error(const char *path, int r, const kdp_config_file_error *e) {
        if (r == -ENOMEM)
                return r;
        if (e->line > 0)
                return kdp_log_error(-EINVAL, "Rejected config file", KDP_F_STR("path", path), field_line((int) e->line),
                                     KDP_F_INT("column", e->column), KDP_F_STR("reason", e->reason));
        if (r == -EFBIG)
                return kdp_log_error(r, "Failed to open config file", KDP_F_STR("path", path),
                                     KDP_F_STR("reason", e->reason), KDP_F_INT("maxBytes", KDP_CONFIG_FILE_SIZE_MAX));
        if (e->reason)
                return kdp_log_error(r, "Failed to open config file", KDP_F_STR("path", path),
                                     KDP_F_STR("reason", e->reason));
        return kdp_log_error(r, "Failed to open config file", KDP_F_STR("path", path));
}

/*
 * kdp's YAML config takes no tab at all: YAML forbids tabs as indentation,
 * and libfyaml 0.8 (Debian bookworm) corrupts its parser on some tabs within
 * the lines of malformed input, then crashes when the parser is freed (found
 * by fuzz/config-yaml). The error names the first tab, lines and columns
 * counted as kdp_config_file_check_text() counts them.
 */
static int check_no_tab(const char *text, size_t size, kdp_config_file_error *reterr) {
        const char *tab = memchr(text, '\t', size);

        if (!tab)
                return 0;
        *reterr = (kdp_config_file_error){ .reason = "a tab (indent and separate with spaces)" };
        kdp_config_file_position(text, (size_t) (tab - text), &reterr->line, &reterr->column);
        return -EILSEQ;
}

/* The file's shape within kdp_config_shape_check()'s limits, before libfyaml builds a document of it. */
static int check_shape(const char *path, const char *text, size_t size) {
        char key[KDP_CONFIG_SHAPE_KEY_MAX];
        kdp_config_file_error e = {};
        int r;

        r = kdp_config_shape_check(text, size, path_is_json(path), &e, key);
        if (r != -E2BIG)
                return r;
        return kdp_log_error(-EINVAL, "Rejected config file", KDP_F_STR("path", path), field_line((int) e.line),
                             KDP_F_INT("column", e.column),
                             (kdp_log_field) { .key = "key", .type = key[0] ? KDP_LOG_FIELD_STR : KDP_LOG_FIELD_NONE,
                                               .str = key },
                             KDP_F_STR("reason", e.reason));
}

static int config_parse_file(kdp_config *c, const char *path) {
        _cleanup_(yaml_input_done) yaml_input y = {};
        config_loader ld = { .config = c, .path = path };
        kdp_config_file_error fe = {};
        struct fy_diag_cfg dcfg;
        struct fy_parse_cfg pcfg;
        size_t size;
        int r;

        r = kdp_config_file_read(path, KDP_CONFIG_FILE_SIZE_MAX, &y.text, &size, &fe);
        if (r < 0)
                return log_read_error(path, r == -EILSEQ ? -EINVAL : r, &fe);
        if (size == 0)
                return 0;       /* empty, also in JSON mode (where libfyaml wants a value) */
        if (!path_is_json(path)) {
                r = check_no_tab(y.text, size, &fe);
                if (r < 0)
                        return log_read_error(path, -EINVAL, &fe);
        }
        r = check_shape(path, y.text, size);
        if (r < 0)
                return r;

        fy_diag_cfg_default(&dcfg);
        dcfg.fp = NULL;
        dcfg.output_fn = diag_discard;
        y.diag = fy_diag_create(&dcfg);
        if (!y.diag)
                return -ENOMEM;
        fy_diag_set_collect_errors(y.diag, true);

        pcfg = (struct fy_parse_cfg) {
                .flags = FYPCF_QUIET | FYPCF_COLLECT_DIAG | FYPCF_ALLOW_DUPLICATE_KEYS |
                         (path_is_json(path) ? FYPCF_JSON_FORCE : FYPCF_JSON_NONE),
                .diag = y.diag,
        };
        y.parser = fy_parser_create(&pcfg);
        if (!y.parser)
                return -ENOMEM;
        if (fy_parser_set_string(y.parser, y.text, size) < 0)
                return -ENOMEM;

        ld.text = y.text;
        ld.size = size;
        y.doc = fy_parse_load_document(y.parser);
        if (y.doc)
                y.extra = fy_parse_load_document(y.parser);

        if (fy_diag_got_error(y.diag) || (!y.doc && fy_parser_get_stream_error(y.parser))) {
                if (loader_diag_errors(&ld, y.diag) == 0)
                        loader_error(&ld, 0, NULL, NULL, "not valid YAML");
                return ld.r;
        }
        if (!y.doc)
                return 0;       /* no document at all: empty config */

        if (y.extra) {
                struct fy_document_state *ds = fy_document_get_document_state(y.extra);
                const struct fy_mark *m = ds ? fy_document_state_start_mark(ds) : NULL;

                loader_error(&ld, m ? m->line + 1 : 0, NULL, NULL, "more than one document");
        }

        r = loader_root(&ld, fy_document_root(y.doc));
        loader_summary(&ld);
        if (r < 0)
                return r;
        return ld.r;
}

static int entry_compare(const void *a, const void *b, void *userdata) {
        const kdp_config *c = userdata;
        size_t i = *(const size_t *) a, j = *(const size_t *) b;
        int r;

        r = strcmp(c->entries[i].section, c->entries[j].section);
        if (r == 0)
                r = strcmp(c->entries[i].key, c->entries[j].key);
        if (r == 0)
                r = i < j ? -1 : i > j;
        return r;
}

/* Sorts the lookup index anew (after a load, after an override). */
static int config_index(kdp_config *c) {
        size_t *order;

        order = reallocarray(c->order, c->n_entries + 1, sizeof(size_t));
        if (!order)
                return -ENOMEM;
        c->order = order;
        for (size_t i = 0; i < c->n_entries; i++)
                order[i] = i;
        qsort_r(order, c->n_entries, sizeof(size_t), entry_compare, c);
        return 0;
}

int kdp_config_load(const char *path, kdp_config **ret) {
        _cleanup_(kdp_config_freep) kdp_config *c = NULL;
        int r;

        if (!ret)
                return -EINVAL;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;

        if (path) {
                c->path = strdup(path);
                if (!c->path)
                        return -ENOMEM;
                r = config_parse_file(c, path);
                if (r < 0)
                        return r;
        }
        r = config_index(c);
        if (r < 0)
                return r;

        *ret = KDP_TAKE_PTR(c);
        return 0;
}

kdp_config *kdp_config_free(kdp_config *c) {
        if (!c)
                return NULL;

        for (size_t i = 0; i < c->n_entries; i++) {
                free(c->entries[i].section);
                free(c->entries[i].key);
                free(c->entries[i].value);
                free(c->entries[i].origin);
        }
        free(c->entries);
        free(c->order);
        free(c->path);
        free(c);
        return NULL;
}

int kdp_config_add_override(kdp_config *c, const char *assignment) {
        _cleanup_free_ char *section = NULL, *key = NULL, *origin = NULL;
        const char *dot, *eq;
        char *tmp;
        int r;

        if (!c || !assignment)
                return -EINVAL;

        /* section up to the first '.', key up to the first '=' after it, both non-empty */
        dot = strchr(assignment, '.');
        eq = strchr(assignment, '=');
        if (!dot || !eq || eq < dot || dot == assignment || eq == dot + 1)
                return kdp_log_error(-EINVAL, "Rejected config override", KDP_F_STR("override", assignment),
                                     KDP_F_STR("reason", "not of the form BACKEND.KEY=VALUE"));

        section = strndup(assignment, (size_t) (dot - assignment));
        key = strndup(dot + 1, (size_t) (eq - dot - 1));
        if (!section || !key || asprintf(&tmp, "-o %s", assignment) < 0)
                return -ENOMEM;
        origin = tmp;

        r = config_append(c, section, key, eq + 1, origin);
        if (r < 0)
                return r;
        return config_index(c);
}

/* -1, 0, 1 as entry `i` sorts before, with, after section.key. */
static int entry_compare_key(const kdp_config *c, size_t i, const char *section, const char *key) {
        int r = strcmp(c->entries[i].section, section);

        return r != 0 ? r : strcmp(c->entries[i].key, key);
}

/* The last entry for section.key: the index sorts entries of one key by position, so bisect past them. */
static const kdp_config_entry *config_find(const kdp_config *c, const char *section, const char *key) {
        size_t lo = 0, hi;

        if (!c || !section || !key || !c->order)
                return NULL;

        hi = c->n_entries;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (entry_compare_key(c, c->order[mid], section, key) <= 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (lo == 0 || entry_compare_key(c, c->order[lo - 1], section, key) != 0)
                return NULL;
        return &c->entries[c->order[lo - 1]];
}

const char *kdp_config_get(const kdp_config *c, const char *section, const char *key, const char **ret_origin) {
        const kdp_config_entry *e = config_find(c, section, key);

        if (!e)
                return NULL;
        if (ret_origin)
                *ret_origin = e->origin;
        return e->value;
}

static bool spec_has(const kdp_param_spec *specs, const char *key) {
        for (const kdp_param_spec *s = specs; s && s->name; s++)
                if (strcmp(s->name, key) == 0)
                        return true;
        return false;
}

int kdp_config_check_section(const kdp_config *c, const char *section, const kdp_param_spec *specs) {
        size_t n = 0;

        if (!section)
                return -EINVAL;
        if (!c)
                return 0;

        /* every offending entry, from the file and from -o, is counted before failing; the first are logged */
        for (size_t i = 0; i < c->n_entries; i++) {
                const kdp_config_entry *e = &c->entries[i];
                _cleanup_free_ char *full = NULL;

                if (strcmp(e->section, section) != 0 || spec_has(specs, e->key))
                        continue;
                if (++n > KDP_CONFIG_LINES_PER_KIND)
                        continue;

                full = join_key(e->section, e->key);
                kdp_log_error(-EINVAL, "Unknown config key", KDP_F_STR("key", full ?: e->key),
                              KDP_F_STR("origin", e->origin));
        }
        if (n > KDP_CONFIG_LINES_PER_KIND)
                kdp_log_error(-EINVAL, "Omitted more unknown config keys", KDP_F_STR("section", section),
                              KDP_F_INT("omitted", n - KDP_CONFIG_LINES_PER_KIND));
        return n > 0 ? -EINVAL : 0;
}

/* True if every key `a` sets in `section` has the same effective value in `b`. */
static bool section_covered(const kdp_config *a, const kdp_config *b, const char *section) {
        if (!a)
                return true;

        for (size_t i = 0; i < a->n_entries; i++) {
                const kdp_config_entry *e = &a->entries[i];
                const char *va, *vb;

                if (strcmp(e->section, section) != 0)
                        continue;
                va = kdp_config_get(a, section, e->key, NULL);
                vb = kdp_config_get(b, section, e->key, NULL);
                if (!vb || strcmp(va, vb) != 0)
                        return false;
        }
        return true;
}

bool kdp_config_section_equal(const kdp_config *a, const kdp_config *b, const char *section) {
        if (!section)
                return false;

        return section_covered(a, b, section) && section_covered(b, a, section);
}
