/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Warnings about skipped entries, written once per problem (see skip-log.h).
 *
 * The entries are a plain array searched linearly: a backend skips a handful
 * of entries at most, usually none. Each keeps the text of its last warning
 * (message, err and fields, without the prefix, which is the backend's and
 * never changes) to tell "the same problem" from "another one".
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "skip-log.h"

typedef struct skip_entry {
        char *scope;
        char *key;
        char *what;             /* the warning, rendered */
        bool seen;              /* warned about in the running pass of its scope */
} skip_entry;

struct kdp_skip_log {
        skip_entry *entries;
        size_t n;
        size_t allocated;
};

static void skip_entry_done(skip_entry *e) {
        free(e->scope);
        free(e->key);
        free(e->what);
}

int kdp_skip_log_new(kdp_skip_log **ret) {
        kdp_skip_log *s = calloc(1, sizeof(*s));

        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

kdp_skip_log *kdp_skip_log_free(kdp_skip_log *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n; i++)
                skip_entry_done(&s->entries[i]);
        free(s->entries);
        free(s);
        return NULL;
}

/* "<msg>\n<err>\n<key>=<value>\n..." (free()), or NULL when out of memory. */
static char *render(int err, const char *msg, const kdp_log_field *fields, size_t n_fields) {
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);

        if (!m)
                return NULL;
        fprintf(m, "%s\n%d\n", msg, err);
        for (size_t i = 0; i < n_fields; i++) {
                if (fields[i].type == KDP_LOG_FIELD_STR)
                        fprintf(m, "%s=%s\n", fields[i].key, fields[i].str ? fields[i].str : "");
                else if (fields[i].type == KDP_LOG_FIELD_INT)
                        fprintf(m, "%s=%" PRId64 "\n", fields[i].key, fields[i].num);
        }
        if (fclose(m) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

static skip_entry *find(kdp_skip_log *s, const char *scope, const char *key) {
        for (size_t i = 0; i < s->n; i++)
                if (strcmp(s->entries[i].key, key) == 0 && strcmp(s->entries[i].scope, scope) == 0)
                        return &s->entries[i];
        return NULL;
}

/* Remembers a new entry, taking `what`; false (and `what` still the caller's) when it cannot. */
static bool add(kdp_skip_log *s, const char *scope, const char *key, char *what) {
        skip_entry e = { .seen = true };

        if (s->n >= KDP_SKIP_LOG_MAX)
                return false;
        if (s->n == s->allocated) {
                size_t n = s->allocated ? s->allocated * 2 : 8;
                skip_entry *v = reallocarray(s->entries, n, sizeof(*v));

                if (!v)
                        return false;
                s->entries = v;
                s->allocated = n;
        }
        e.scope = strdup(scope);
        e.key = strdup(key);
        if (!e.scope || !e.key) {
                skip_entry_done(&e);
                return false;
        }
        e.what = what;
        s->entries[s->n++] = e;
        return true;
}

void kdp_skip_log_begin(kdp_skip_log *s, const char *scope) {
        if (!s)
                return;
        for (size_t i = 0; i < s->n; i++)
                if (strcmp(s->entries[i].scope, scope) == 0)
                        s->entries[i].seen = false;
}

void kdp_skip_log_warn(kdp_skip_log *s, const char *scope, const char *key, const kdp_log_field *prefix,
                       const char *file, int line, int err, const char *msg, const kdp_log_field *fields,
                       size_t n_fields) {
        char *what;
        skip_entry *e;

        if (s && (what = render(err, msg, fields, n_fields))) {
                e = find(s, scope, key);
                if (e) {
                        e->seen = true;
                        if (strcmp(e->what, what) == 0) {
                                free(what);
                                return;         /* reported already */
                        }
                        free(e->what);
                        e->what = what;         /* another problem of the same entry: reported anew */
                } else if (!add(s, scope, key, what))
                        free(what);
        }
        (void) kdp_log_emit(KDP_LOG_WARNING, err, file, line, msg, prefix, prefix ? 1 : 0, fields, n_fields);
}

void kdp_skip_log_end(kdp_skip_log *s, const char *scope, kdp_skip_log_ended_fn ended, void *userdata) {
        size_t kept = 0;

        if (!s)
                return;
        /* in the order they were first warned about */
        for (size_t i = 0; i < s->n; i++) {
                skip_entry *e = &s->entries[i];

                if (e->seen || strcmp(e->scope, scope) != 0) {
                        s->entries[kept++] = *e;
                        continue;
                }
                if (ended)
                        ended(e->key, userdata);
                skip_entry_done(e);
        }
        s->n = kept;
}
