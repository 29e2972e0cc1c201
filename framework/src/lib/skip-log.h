/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libkdp internal: what a backend's enumerations have warned about, so a
 * steady problem (a PCI function whose `vendor` cannot be read, a class
 * device with a too long name) is logged when it starts and when it ends,
 * not on every re-read.
 *
 * An enumeration is a pass over one scope ("pci", the class devices of one
 * PCI function, one subsystem); a skipped entry is named by its key in that
 * scope (a PCI address, a sysfs name):
 *
 *   kdp_skip_log_begin(s, scope);
 *   for each entry: KDP_SKIP_LOG_WARN(s, scope, key, prefix, err, "Skipped ...", fields...);
 *   kdp_skip_log_end(s, scope, ended, userdata);      only after a pass that read every entry
 *
 * A warning is written when its entry was not warned about in the pass
 * before, or was with other text (another message, err or field); else it is
 * dropped. kdp_skip_log_end() hands each entry of the scope that was not
 * warned about in this pass (its problem is over: the entry is gone or read
 * now) to `ended`, which logs that, and forgets it. A pass that stops early
 * (out of memory) ends nothing. With s NULL every warning is written (a
 * one-shot caller without a backend: kdpctl discover).
 *
 * Ownership and threads: one kdp_skip_log per backend, owned by its
 * kdp_backend_ctx (created and freed with it); it is used only from the
 * backend's hooks, which run under the backend's lock, so it has no lock of
 * its own. The strings it keeps are copies. At most KDP_SKIP_LOG_MAX entries
 * are remembered; past that, warnings are written every time.
 */
#pragma once

#include <stddef.h>

#include <kdp/cleanup.h>
#include <kdp/log.h>

#define KDP_SKIP_LOG_MAX 4096

typedef struct kdp_skip_log kdp_skip_log;

int kdp_skip_log_new(kdp_skip_log **ret);
kdp_skip_log *kdp_skip_log_free(kdp_skip_log *s);
KDP_DEFINE_CLEANUP_FUNC(kdp_skip_log, kdp_skip_log_free)

/* Starts a pass over `scope`: none of its entries has been warned about in it yet. */
void kdp_skip_log_begin(kdp_skip_log *s, const char *scope);

/*
 * Writes the warning `msg` (with err="..." when err != 0, the prefix field
 * when not NULL, then `fields`) about entry `key` of `scope`, unless the pass
 * before wrote the same one; the entry counts as skipped in this pass either
 * way. Out of memory, the warning is written and not remembered.
 */
void kdp_skip_log_warn(kdp_skip_log *s, const char *scope, const char *key, const kdp_log_field *prefix,
                       const char *file, int line, int err, const char *msg, const kdp_log_field *fields,
                       size_t n_fields);

/* Called by kdp_skip_log_end() for an entry whose problem is over; `key` is valid during the call. */
typedef void (*kdp_skip_log_ended_fn)(const char *key, void *userdata);

/* Ends a pass over `scope`: each of its entries not warned about since kdp_skip_log_begin() goes to `ended`. */
void kdp_skip_log_end(kdp_skip_log *s, const char *scope, kdp_skip_log_ended_fn ended, void *userdata);

#define KDP_SKIP_LOG_WARN(s, scope, key, prefix, err, msg, ...)                                     \
        kdp_skip_log_warn((s), (scope), (key), (prefix), __FILE__, __LINE__, (err), (msg),          \
                          KDP_LOG_FIELDS_(__VA_ARGS__) + 1, KDP_LOG_NFIELDS_(__VA_ARGS__))

/* An info line with the optional prefix field (NULL: none): the end of a skip. */
#define KDP_SKIP_LOG_INFO(prefix, msg, ...)                                                         \
        ((void) kdp_log_emit(KDP_LOG_INFO, 0, __FILE__, __LINE__, (msg), (prefix), (prefix) ? 1 : 0, \
                             KDP_LOG_FIELDS_(__VA_ARGS__) + 1, KDP_LOG_NFIELDS_(__VA_ARGS__)))
