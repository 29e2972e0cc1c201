/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Safe reads of config files (see kdp/config-file.h).
 *
 * Line breaks, for the line and column of a bad byte, are those of YAML 1.2:
 * LF, CR LF and a lone CR. A column counts characters, so it matches what an
 * editor shows and what libfyaml's own diagnostics say.
 *
 * Shape. kdp_config_file_check_shape() runs a parser of its own over the text
 * and only counts its events (a stack of KDP_CONFIG_FILE_DEPTH_MAX frames, no
 * node built), so a file nested a million deep or with a list of 150 000 entries
 * is refused having cost a few kilobytes. It never asks libfyaml for a scalar's
 * text (libfyaml 0.8 leaks some of those, see config.c): a key's name in the
 * path is the scalar's source bytes, cut to fit.
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

static void set_error(kdp_config_file_error *reterr, const char *reason, unsigned line, unsigned column) {
        if (reterr)
                *reterr = (kdp_config_file_error) { .reason = reason, .line = line, .column = column };
}

/* Length of the UTF-8 sequence at `p` (at most `left` bytes), 0 if it is not one. */
static size_t utf8_length(const unsigned char *p, size_t left) {
        unsigned char lo = 0x80, hi = 0xBF;
        size_t n;

        if (p[0] < 0x80)
                return 1;
        if (p[0] >= 0xC2 && p[0] <= 0xDF)
                n = 2;
        else if (p[0] >= 0xE0 && p[0] <= 0xEF) {
                n = 3;
                if (p[0] == 0xE0)
                        lo = 0xA0;      /* overlong */
                else if (p[0] == 0xED)
                        hi = 0x9F;      /* surrogates */
        } else if (p[0] >= 0xF0 && p[0] <= 0xF4) {
                n = 4;
                if (p[0] == 0xF0)
                        lo = 0x90;      /* overlong */
                else if (p[0] == 0xF4)
                        hi = 0x8F;      /* above U+10FFFF */
        } else
                return 0;

        if (left < n || p[1] < lo || p[1] > hi)
                return 0;
        for (size_t i = 2; i < n; i++)
                if (p[i] < 0x80 || p[i] > 0xBF)
                        return 0;
        return n;
}

void kdp_config_file_position(const char *text, size_t offset, unsigned *ret_line, unsigned *ret_column) {
        unsigned line = 1, column = 1;

        for (size_t i = 0; text && i < offset; i++) {
                unsigned char ch = (unsigned char) text[i];

                if (ch == '\n' || (ch == '\r' && text[i + 1] != '\n')) {
                        line++;
                        column = 1;
                } else if (ch != '\r' && (ch & 0xC0) != 0x80) {
                        column++;       /* a character's first byte */
                }
        }
        *ret_line = line;
        *ret_column = column;
}

/* Sets *reterr to `reason` at byte `offset` of `text`; returns -EILSEQ. */
static int text_error(const char *text, size_t offset, const char *reason, kdp_config_file_error *reterr) {
        unsigned line, column;

        kdp_config_file_position(text, offset, &line, &column);
        set_error(reterr, reason, line, column);
        return -EILSEQ;
}

int kdp_config_file_check_text(const char *text, size_t size, kdp_config_file_error *reterr) {
        const unsigned char *p = (const unsigned char *) text;

        if (!text && size > 0)
                return -EINVAL;

        for (size_t i = 0, n; i < size; i += n) {
                if (p[i] == '\0')
                        return text_error(text, i, "a NUL byte", reterr);
                n = utf8_length(p + i, size - i);
                if (n == 0)
                        return text_error(text, i, "a byte that is not UTF-8", reterr);
        }
        return 0;
}

/* Why a file of this type is refused, or NULL for a regular file. */
static const char *file_type_refusal(mode_t mode) {
        if (S_ISREG(mode))
                return NULL;
        if (S_ISDIR(mode))
                return "a directory, not a regular file";
        if (S_ISFIFO(mode))
                return "a FIFO, not a regular file";
        if (S_ISCHR(mode))
                return "a character device, not a regular file";
        if (S_ISBLK(mode))
                return "a block device, not a regular file";
        if (S_ISSOCK(mode))
                return "a socket, not a regular file";
        return "not a regular file";
}

int kdp_config_file_read(const char *path, size_t max_size, char **ret_text, size_t *ret_size,
                         kdp_config_file_error *reterr) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        const char *refusal;
        struct stat st;
        size_t len = 0, cap;
        int r;

        if (!path || !ret_text || !ret_size || max_size == 0 || max_size >= SIZE_MAX)
                return -EINVAL;

        /* O_NONBLOCK: opening a FIFO that no one writes must not block */
        fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                r = -errno;
                set_error(reterr, NULL, 0, 0);
                return r;
        }
        if (fstat(fd, &st) < 0) {
                r = -errno;
                set_error(reterr, NULL, 0, 0);
                return r;
        }
        refusal = file_type_refusal(st.st_mode);
        if (refusal) {
                set_error(reterr, refusal, 0, 0);
                return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
        }
        if ((uintmax_t) st.st_size > max_size) {
                set_error(reterr, "larger than the size limit", 0, 0);
                return -EFBIG;
        }

        /* the size may have changed since fstat(): read until EOF, and at most one byte past the limit */
        cap = (size_t) st.st_size + 1;
        buf = malloc(cap);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t n;

                if (len == cap) {
                        char *b;

                        cap = cap > max_size / 2 ? max_size + 1 : cap * 2;
                        b = realloc(buf, cap);
                        if (!b)
                                return -ENOMEM;
                        buf = b;
                }
                n = read(fd, buf + len, cap - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        r = -errno;
                        set_error(reterr, NULL, 0, 0);
                        return r;
                }
                if (n == 0)
                        break;
                len += (size_t) n;
                if (len > max_size) {
                        set_error(reterr, "larger than the size limit", 0, 0);
                        return -EFBIG;
                }
        }

        r = kdp_config_file_check_text(buf, len, reterr);
        if (r < 0)
                return r;

        if (len == cap) {
                char *b = realloc(buf, len + 1);

                if (!b)
                        return -ENOMEM;
                buf = b;
        }
        buf[len] = '\0';
        *ret_text = KDP_TAKE_PTR(buf);
        *ret_size = len;
        return 0;
}

/* ---- shape ---- */

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

#define REASON_DEPTH "nested deeper than " STRINGIFY(KDP_CONFIG_FILE_DEPTH_MAX) " levels"
#define REASON_LIST "a list of more than " STRINGIFY(KDP_CONFIG_FILE_ENTRIES_MAX) " entries"
#define REASON_MAPPING "a mapping of more than " STRINGIFY(KDP_CONFIG_FILE_ENTRIES_MAX) " keys"
#define REASON_VALUES "more than " STRINGIFY(KDP_CONFIG_FILE_VALUES_MAX) " values in the file"

typedef struct shape_frame {
        bool mapping;
        bool want_key;          /* mapping: the next value is a key */
        bool is_key;            /* this collection is a key of its parent */
        size_t n;               /* entries of a list, keys of a mapping, so far */
        char name[64];          /* mapping: the key whose value is being read */
} shape_frame;

typedef struct shape_scan {
        const char *text;
        size_t size;
        shape_frame frames[KDP_CONFIG_FILE_DEPTH_MAX];
        size_t depth;
        size_t values;
} shape_scan;

/* The path of the value being read in frames [0, upto): "a.b[3].c". */
static void shape_path(const shape_scan *s, size_t upto, char *buf, size_t size) {
        size_t len = 0;

        buf[0] = '\0';
        for (size_t i = 0; i < upto && len + 1 < size; i++) {
                const shape_frame *f = &s->frames[i];
                int n;

                if (!f->mapping)
                        n = snprintf(buf + len, size - len, "[%zu]", f->n > 0 ? f->n - 1 : 0);
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
static void shape_name(const shape_scan *s, struct fy_event *ev, shape_frame *f) {
        struct fy_token *t = ev->type == FYET_SCALAR ? ev->scalar.value : NULL;
        const struct fy_mark *start = t ? fy_token_start_mark(t) : NULL, *end = t ? fy_token_end_mark(t) : NULL;
        size_t len;

        if (!start || !end || start->input_pos > end->input_pos || end->input_pos > s->size) {
                snprintf(f->name, sizeof(f->name), "?");
                return;
        }
        len = end->input_pos - start->input_pos;
        if (len >= sizeof(f->name))
                len = sizeof(f->name) - 1;
        memcpy(f->name, s->text + start->input_pos, len);
        f->name[len] = '\0';
}

/* Sets the error at the start of `ev` for the path of frames [0, upto); returns -E2BIG. */
static int shape_refuse(const shape_scan *s, struct fy_event *ev, size_t upto, const char *reason,
                        kdp_config_file_error *reterr, char *ret_key) {
        const struct fy_mark *m = fy_event_start_mark(ev);
        unsigned line = 0, column = 0;
        size_t pos;

        if (m && m->input_pos <= s->size) {
                /* a quoted scalar's mark is past its opening quote: the place names the quote */
                pos = m->input_pos;
                if (ev->type == FYET_SCALAR && pos > 0 && (s->text[pos - 1] == '"' || s->text[pos - 1] == '\''))
                        pos--;
                kdp_config_file_position(s->text, pos, &line, &column);
        }
        set_error(reterr, reason, line, column);
        shape_path(s, upto, ret_key, KDP_CONFIG_FILE_KEY_MAX);
        return -E2BIG;
}

/* A value starts (a scalar, an alias, a list or a mapping): counted against every limit. */
static int shape_value(shape_scan *s, struct fy_event *ev, kdp_config_file_error *reterr, char *ret_key) {
        shape_frame *parent = s->depth > 0 ? &s->frames[s->depth - 1] : NULL;
        bool collection = ev->type == FYET_SEQUENCE_START || ev->type == FYET_MAPPING_START;
        bool is_key = parent && parent->mapping && parent->want_key;

        if (parent && (!parent->mapping || is_key) && ++parent->n > KDP_CONFIG_FILE_ENTRIES_MAX)
                return shape_refuse(s, ev, s->depth - 1, parent->mapping ? REASON_MAPPING : REASON_LIST, reterr,
                                    ret_key);
        if (++s->values > KDP_CONFIG_FILE_VALUES_MAX)
                return shape_refuse(s, ev, s->depth, REASON_VALUES, reterr, ret_key);
        if (collection && s->depth == KDP_CONFIG_FILE_DEPTH_MAX)
                return shape_refuse(s, ev, s->depth, REASON_DEPTH, reterr, ret_key);

        if (is_key) {
                shape_name(s, ev, parent);
                parent->want_key = false;
        } else if (parent && parent->mapping && !collection)
                parent->want_key = true;        /* a scalar value: the pair is complete */
        if (collection)
                s->frames[s->depth++] = (shape_frame) {
                        .mapping = ev->type == FYET_MAPPING_START,
                        .want_key = ev->type == FYET_MAPPING_START,
                        .is_key = is_key,
                };
        return 0;
}

/* A list or mapping ends; a value of a mapping completes its pair. */
static void shape_end(shape_scan *s) {
        bool was_key;

        if (s->depth == 0)
                return;
        was_key = s->frames[--s->depth].is_key;
        if (s->depth > 0 && s->frames[s->depth - 1].mapping && !was_key)
                s->frames[s->depth - 1].want_key = true;
}

static void shape_diag_discard(struct fy_diag *diag, void *user, const char *buf, size_t len) {
}

static void fy_diag_destroyp(struct fy_diag **d) {
        if (*d)
                fy_diag_destroy(*d);
}

static void fy_parser_destroyp(struct fy_parser **p) {
        if (*p)
                fy_parser_destroy(*p);
}

int kdp_config_file_check_shape(const char *text, size_t size, bool json, kdp_config_file_error *reterr,
                                char ret_key[KDP_CONFIG_FILE_KEY_MAX]) {
        _cleanup_(fy_diag_destroyp) struct fy_diag *diag = NULL;
        _cleanup_(fy_parser_destroyp) struct fy_parser *parser = NULL;
        shape_scan s = { .text = text, .size = size };
        struct fy_diag_cfg dcfg;
        struct fy_parse_cfg pcfg;
        struct fy_event *ev;
        int r = 0;

        if ((!text && size > 0) || !ret_key)
                return -EINVAL;
        if (size == 0)
                return 0;

        fy_diag_cfg_default(&dcfg);
        dcfg.fp = NULL;
        dcfg.output_fn = shape_diag_discard;
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
        if (fy_parser_set_string(parser, text, size) < 0)
                return -ENOMEM;

        /* NULL at the end and at the first syntax error, which the caller's own parse reports */
        while (r == 0 && (ev = fy_parser_parse(parser))) {
                switch (ev->type) {
                case FYET_SCALAR:
                case FYET_ALIAS:
                case FYET_SEQUENCE_START:
                case FYET_MAPPING_START:
                        r = shape_value(&s, ev, reterr, ret_key);
                        break;
                case FYET_SEQUENCE_END:
                case FYET_MAPPING_END:
                        shape_end(&s);
                        break;
                default:
                        break;
                }
                fy_parser_event_free(parser, ev);
        }
        return r;
}
