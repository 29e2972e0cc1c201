/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A config file's shape against the limits of kdp/config-shape.h, checked before
 * any document is built (kdp_config_shape_check()).
 *
 * Two passes, both of fixed memory:
 *   - a byte scan of the flow collections ([...] and {...}, all of JSON): their
 *     nesting, entries and values. libfyaml's scanner keeps every token of an
 *     open flow collection until it closes (any of it may be an implicit key),
 *     so its parser cannot be the first to look at one: a megabyte of brackets
 *     cost it ~290 MB before its first event. The scan skips quoted scalars,
 *     comments and block scalars (| and >), and takes a bracket in block context
 *     as a collection only where a node starts (line start, after "- ", ": ",
 *     "? ", a tag or an anchor), never inside a plain scalar;
 *   - libfyaml's parser walked event by event, counting nesting, entries and
 *     values of the whole file (block style too, which the parser streams) with a
 *     stack of KDP_CONFIG_SHAPE_DEPTH_MAX frames; after a refusal of the byte
 *     scan, over the text before it only, to name the key.
 * The first limit passed in the file is reported: its reason, line and column,
 * and a key path. The walk never asks libfyaml for a scalar's text (libfyaml 0.8
 * leaks some of those, see config.c): a key's name in the path is the scalar's
 * source bytes, cut to fit.
 */
#include <errno.h>
#include <libfyaml.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <kdp/cleanup.h>
#include <kdp/config-file.h>
#include <kdp/config-shape.h>

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

static const char REASON_DEPTH[] = "nested deeper than " STRINGIFY(KDP_CONFIG_SHAPE_DEPTH_MAX) " levels";
static const char REASON_LIST[] = "a list of more than " STRINGIFY(KDP_CONFIG_SHAPE_ENTRIES_MAX) " entries";
static const char REASON_MAPPING[] = "a mapping of more than " STRINGIFY(KDP_CONFIG_SHAPE_ENTRIES_MAX) " keys";
static const char REASON_VALUES[] = "more than " STRINGIFY(KDP_CONFIG_SHAPE_VALUES_MAX) " values in the file";

/* ---- the byte scan of flow collections ---- */

typedef struct flow_scan {
        const char *text;
        size_t size;
        bool json;
        size_t depth;                   /* open flow collections */
        bool mapping[KDP_CONFIG_SHAPE_DEPTH_MAX];
        size_t entries[KDP_CONFIG_SHAPE_DEPTH_MAX];
        size_t values;                  /* flow nodes so far */
        bool want_node;                 /* the next token starts a node */
        bool entry;                     /* ...which is an entry of the innermost collection, not a value */
        bool json_like;                 /* the last token was quoted or a closing bracket: ':' may follow it */
        const char *reason;             /* the limit passed, NULL while none */
        size_t at;                      /* where */
} flow_scan;

static bool is_blank(char c) {
        return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool is_flow_indicator(char c) {
        return c == '[' || c == ']' || c == '{' || c == '}' || c == ',';
}

/* The byte after the quoted scalar that starts at `i`. */
static size_t skip_quoted(const flow_scan *f, size_t i) {
        char q = f->text[i];

        for (i++; i < f->size; i++) {
                if (q == '"' && f->text[i] == '\\')
                        i++;
                else if (f->text[i] == q) {
                        if (q == '\'' && i + 1 < f->size && f->text[i + 1] == '\'')
                                i++;    /* '' is a quote inside single quotes */
                        else
                                return i + 1;
                }
        }
        return f->size;
}

static size_t skip_line(const flow_scan *f, size_t i) {
        while (i < f->size && f->text[i] != '\n' && f->text[i] != '\r')
                i++;
        return i;
}

/* A value, an anchor, a tag or an alias at `i` (libfyaml holds a token for each); false past the limit. */
static bool flow_count(flow_scan *f, size_t i) {
        if (++f->values > KDP_CONFIG_SHAPE_VALUES_MAX) {
                f->reason = REASON_VALUES;
                f->at = i;
                return false;
        }
        return true;
}

/* The byte after the anchor, tag or alias at `i` (counted); f->size past the limit. */
static size_t skip_property(flow_scan *f, size_t i) {
        if (!flow_count(f, i))
                return f->size;
        while (i < f->size && !is_blank(f->text[i]) && (f->depth == 0 || !is_flow_indicator(f->text[i])))
                i++;
        return i;
}

/* A flow node starts at `i`: counted as an entry or a value; false once a limit is passed. */
static bool flow_node(flow_scan *f, size_t i) {
        bool entry = f->entry;

        if (!f->want_node)
                return true;
        f->want_node = false;
        if (f->depth > 0 && entry && ++f->entries[f->depth - 1] > KDP_CONFIG_SHAPE_ENTRIES_MAX) {
                f->reason = f->mapping[f->depth - 1] ? REASON_MAPPING : REASON_LIST;
                f->at = i;
                return false;
        }
        return flow_count(f, i);
}

/* Opens the collection whose bracket is at `i`. */
static bool flow_open(flow_scan *f, size_t i) {
        f->want_node = f->want_node || f->depth == 0;   /* in block context the caller saw a node start */
        if (!flow_node(f, i))
                return false;
        if (f->depth == KDP_CONFIG_SHAPE_DEPTH_MAX) {
                f->reason = REASON_DEPTH;
                f->at = i;
                return false;
        }
        f->mapping[f->depth] = f->text[i] == '{';
        f->entries[f->depth++] = 0;
        f->want_node = true;
        f->entry = true;
        f->json_like = false;
        return true;
}

/* Scans flow context from the bracket at `i` until its collection closes; returns the byte after. */
static size_t flow_collection(flow_scan *f, size_t i) {
        if (!flow_open(f, i))
                return f->size;
        for (i++; i < f->size && f->depth > 0;) {
                char c = f->text[i], next = i + 1 < f->size ? f->text[i + 1] : ' ';

                if (is_blank(c)) {
                        i++;
                } else if (c == '#' && !f->json && is_blank(f->text[i - 1])) {
                        i = skip_line(f, i);
                } else if (c == '[' || c == '{') {
                        if (!flow_open(f, i))
                                return f->size;
                        i++;
                } else if (c == ']' || c == '}') {
                        f->depth--;
                        f->want_node = false;
                        f->json_like = true;
                        i++;
                } else if (c == ',') {
                        f->want_node = true;
                        f->entry = true;
                        f->json_like = false;
                        i++;
                } else if (c == ':' && (f->json_like || is_blank(next) || is_flow_indicator(next))) {
                        f->want_node = true;
                        f->entry = false;
                        f->json_like = false;
                        i++;
                } else if (c == '?' && !f->json && f->want_node && is_blank(next)) {
                        i++;            /* an explicit key follows */
                } else if (c == '&' || c == '!') {
                        i = skip_property(f, i);        /* the node follows */
                } else {
                        /* a node; or a word after one, which is only counted when it is an alias */
                        if (!(f->want_node ? flow_node(f, i) : c != '*' || flow_count(f, i)))
                                return f->size;
                        if (c == '"' || (c == '\'' && !f->json)) {
                                i = skip_quoted(f, i);
                                f->json_like = true;
                                continue;
                        }
                        /* a plain scalar (or its next word): up to an indicator */
                        f->json_like = false;
                        while (i < f->size && !is_blank(f->text[i]) && !is_flow_indicator(f->text[i]) &&
                               !(f->text[i] == ':' && i + 1 < f->size &&
                                 (is_blank(f->text[i + 1]) || is_flow_indicator(f->text[i + 1]))))
                                i++;
                }
        }
        return i;
}

/* The indentation of the line that starts at `i`, and whether it holds nothing but spaces. */
static size_t line_indent(const flow_scan *f, size_t i, bool *ret_blank) {
        size_t n = 0;

        while (i + n < f->size && f->text[i + n] == ' ')
                n++;
        *ret_blank = i + n == f->size || f->text[i + n] == '\n' || f->text[i + n] == '\r' ||
                     f->text[i + n] == '#';
        return n;
}

/* YAML's block context: finds where flow collections start and scans each. */
static void block_scan(flow_scan *f) {
        size_t i = 0, indent = 0, scalar_indent = 0;
        bool node_start = true, in_block_scalar = false, line_start = true;

        while (i < f->size && !f->reason) {
                char c = f->text[i], next = i + 1 < f->size ? f->text[i + 1] : '\n';

                if (line_start) {
                        bool blank;

                        indent = line_indent(f, i, &blank);
                        if (in_block_scalar && (blank || indent > scalar_indent)) {
                                i = skip_line(f, i + indent);
                                if (i < f->size)
                                        i++;
                                continue;
                        }
                        in_block_scalar = false;
                        line_start = false;
                        node_start = true;
                        i += indent;
                        continue;
                }
                if (c == '\n' || c == '\r') {
                        line_start = true;
                        i++;
                } else if (c == ' ' || c == '\t') {
                        i++;
                } else if (c == '#' && (i == 0 || is_blank(f->text[i - 1]))) {
                        i = skip_line(f, i);
                } else if (c == ':' && is_blank(next)) {
                        node_start = true;
                        i++;
                } else if (!node_start) {
                        /* inside a plain scalar; a word there that libfyaml would take as a property or alias is counted */
                        if ((c == '&' || c == '!' || c == '*') && is_blank(f->text[i - 1]))
                                i = skip_property(f, i);
                        else
                                i++;
                } else if ((c == '-' || c == '?') && is_blank(next)) {
                        i++;
                } else if (c == '-' && i + 3 <= f->size && memcmp(f->text + i, "---", 3) == 0 &&
                           (i + 3 == f->size || is_blank(f->text[i + 3]))) {
                        i += 3;
                } else if (c == '&' || c == '!') {
                        i = skip_property(f, i);        /* an anchor or a tag: the node follows */
                } else if (c == '*') {
                        i = skip_property(f, i);
                        node_start = false;
                } else if (c == '"' || c == '\'') {
                        i = skip_quoted(f, i);
                        node_start = false;
                } else if (c == '[' || c == '{') {
                        i = flow_collection(f, i);
                        node_start = false;
                } else if (c == '|' || c == '>') {
                        in_block_scalar = true;
                        scalar_indent = indent;
                        i = skip_line(f, i);
                } else {
                        node_start = false;
                        i++;
                }
        }
}

/* The first limit the flow collections of `text` pass: true and f->reason, f->at set. */
static bool flow_check(flow_scan *f) {
        if (f->json) {
                for (size_t i = 0; i < f->size && !f->reason;) {
                        char c = f->text[i];

                        if (c == '[' || c == '{')
                                i = flow_collection(f, i);
                        else if (c == '"')
                                i = skip_quoted(f, i);
                        else
                                i++;
                }
        } else
                block_scan(f);
        return f->reason != NULL;
}

/* ---- the walk of libfyaml's events ---- */

typedef struct shape_frame {
        bool mapping;
        bool want_key;          /* mapping: the next value is a key */
        bool is_key;            /* this collection is a key of its parent */
        size_t n;               /* entries of a list, keys of a mapping, so far */
        char name[64];          /* mapping: the key whose value is being read */
} shape_frame;

typedef struct shape_walk {
        const char *text;
        size_t size;
        shape_frame frames[KDP_CONFIG_SHAPE_DEPTH_MAX];
        size_t depth;
        size_t values;
        const char *reason;     /* the limit passed, NULL while none */
        size_t at;
        size_t upto;            /* the key is the path of frames [0, upto) */
} shape_walk;

/*
 * The path of what is being read in frames [0, upto): "a.b[3].c". `next`: the
 * node after the last one of frame upto - 1 (its index one more).
 */
static void walk_path(const shape_walk *w, size_t upto, bool next, char *buf, size_t size) {
        size_t len = 0;

        buf[0] = '\0';
        for (size_t i = 0; i < upto && len + 1 < size; i++) {
                const shape_frame *f = &w->frames[i];
                int n;

                if (!f->mapping)
                        n = snprintf(buf + len, size - len, "[%zu]",
                                     next && i + 1 == upto ? f->n : f->n > 0 ? f->n - 1 : 0);
                else if (f->want_key)
                        break;          /* inside a key: the path ends at its mapping */
                else
                        n = snprintf(buf + len, size - len, "%s%s", len > 0 ? "." : "", f->name);
                if (n < 0)
                        break;
                len += (size_t) n < size - len ? (size_t) n : size - len - 1;
        }
}

/* A scalar key's source bytes as its name in the path (cut to fit); "?" for a key that is no scalar. */
static void walk_name(const shape_walk *w, struct fy_event *ev, shape_frame *f) {
        struct fy_token *t = ev->type == FYET_SCALAR ? ev->scalar.value : NULL;
        const struct fy_mark *start = t ? fy_token_start_mark(t) : NULL, *end = t ? fy_token_end_mark(t) : NULL;
        size_t len;

        if (!start || !end || start->input_pos > end->input_pos || end->input_pos > w->size) {
                snprintf(f->name, sizeof(f->name), "?");
                return;
        }
        len = end->input_pos - start->input_pos;
        if (len >= sizeof(f->name))
                len = sizeof(f->name) - 1;
        memcpy(f->name, w->text + start->input_pos, len);
        f->name[len] = '\0';
}

/* Notes the limit `reason` passed by `ev`, the key being frames [0, upto). */
static void walk_refuse(shape_walk *w, struct fy_event *ev, size_t upto, const char *reason) {
        const struct fy_mark *m = fy_event_start_mark(ev);
        size_t pos = m && m->input_pos <= w->size ? m->input_pos : 0;

        /* a quoted scalar's mark is past its opening quote: the place names the quote */
        if (ev->type == FYET_SCALAR && pos > 0 && (w->text[pos - 1] == '"' || w->text[pos - 1] == '\''))
                pos--;
        w->reason = reason;
        w->at = pos;
        w->upto = upto;
}

/* A value starts (a scalar, an alias, a list or a mapping): counted against every limit. */
static void walk_value(shape_walk *w, struct fy_event *ev) {
        shape_frame *parent = w->depth > 0 ? &w->frames[w->depth - 1] : NULL;
        bool collection = ev->type == FYET_SEQUENCE_START || ev->type == FYET_MAPPING_START;
        bool is_key = parent && parent->mapping && parent->want_key;

        if (parent && (!parent->mapping || is_key) && ++parent->n > KDP_CONFIG_SHAPE_ENTRIES_MAX)
                return walk_refuse(w, ev, w->depth - 1, parent->mapping ? REASON_MAPPING : REASON_LIST);
        if (++w->values > KDP_CONFIG_SHAPE_VALUES_MAX)
                return walk_refuse(w, ev, w->depth > 0 ? w->depth - 1 : 0, REASON_VALUES);
        if (collection && w->depth == KDP_CONFIG_SHAPE_DEPTH_MAX)
                return walk_refuse(w, ev, w->depth, REASON_DEPTH);

        if (is_key) {
                walk_name(w, ev, parent);
                parent->want_key = false;
        } else if (parent && parent->mapping && !collection)
                parent->want_key = true;        /* a scalar value: the pair is complete */
        if (collection)
                w->frames[w->depth++] = (shape_frame) {
                        .mapping = ev->type == FYET_MAPPING_START,
                        .want_key = ev->type == FYET_MAPPING_START,
                        .is_key = is_key,
                };
}

/* A list or mapping ends; a value of a mapping completes its pair. */
static void walk_end(shape_walk *w) {
        bool was_key;

        if (w->depth == 0)
                return;
        was_key = w->frames[--w->depth].is_key;
        if (w->depth > 0 && w->frames[w->depth - 1].mapping && !was_key)
                w->frames[w->depth - 1].want_key = true;
}

static void diag_discard(struct fy_diag *diag, void *user, const char *buf, size_t len) {
}

KDP_DEFINE_CLEANUP_FUNC(struct fy_diag, fy_diag_destroy)

KDP_DEFINE_CLEANUP_FUNC(struct fy_parser, fy_parser_destroy)

/* Walks the events of w->text until a limit is passed, the end, or the first syntax error (the caller's parse reports it). */
static int walk(shape_walk *w, bool json) {
        _cleanup_(fy_diag_destroyp) struct fy_diag *diag = NULL;
        _cleanup_(fy_parser_destroyp) struct fy_parser *parser = NULL;
        struct fy_diag_cfg dcfg;
        struct fy_parse_cfg pcfg;
        struct fy_event *ev;

        if (w->size == 0)
                return 0;
        fy_diag_cfg_default(&dcfg);
        dcfg.fp = NULL;
        dcfg.output_fn = diag_discard;
        diag = fy_diag_create(&dcfg);
        if (!diag)
                return -ENOMEM;
        pcfg = (struct fy_parse_cfg) {
                .flags = FYPCF_QUIET | FYPCF_ALLOW_DUPLICATE_KEYS | (json ? FYPCF_JSON_FORCE : FYPCF_JSON_NONE),
                .diag = diag,
        };
        parser = fy_parser_create(&pcfg);
        if (!parser)
                return -ENOMEM;
        if (fy_parser_set_string(parser, w->text, w->size) < 0)
                return -ENOMEM;

        while (!w->reason && (ev = fy_parser_parse(parser))) {
                switch (ev->type) {
                case FYET_SCALAR:
                case FYET_ALIAS:
                case FYET_SEQUENCE_START:
                case FYET_MAPPING_START:
                        walk_value(w, ev);
                        break;
                case FYET_SEQUENCE_END:
                case FYET_MAPPING_END:
                        walk_end(w);
                        break;
                default:
                        break;
                }
                fy_parser_event_free(parser, ev);
        }
        return 0;
}

int kdp_config_shape_check(const char *text, size_t size, bool json, kdp_config_file_error *reterr,
                                char ret_key[KDP_CONFIG_SHAPE_KEY_MAX]) {
        flow_scan f = { .text = text, .size = size, .json = json };
        shape_walk w = { .text = text, .size = size };
        unsigned line = 0, column = 0;
        int r;

        if ((!text && size > 0) || !ret_key)
                return -EINVAL;

        /* past a flow limit, only the text before it is walked: what the parser holds stays small */
        if (flow_check(&f))
                w.size = f.at;
        r = walk(&w, json);
        if (r < 0)
                return r;

        if (w.reason)
                walk_path(&w, w.upto, false, ret_key, KDP_CONFIG_SHAPE_KEY_MAX);
        else if (f.reason) {
                /* the walk stopped before the node the scan refused: its frames end at that node's parent */
                w.reason = f.reason;
                w.at = f.at;
                if (f.reason == REASON_DEPTH)
                        walk_path(&w, w.depth, true, ret_key, KDP_CONFIG_SHAPE_KEY_MAX);
                else
                        walk_path(&w, w.depth > 0 ? w.depth - 1 : 0, false, ret_key, KDP_CONFIG_SHAPE_KEY_MAX);
        } else
                return 0;

        kdp_config_file_position(text, w.at, &line, &column);
        if (reterr)
                *reterr = (kdp_config_file_error) { .reason = w.reason, .line = line, .column = column };
        return -E2BIG;
}
