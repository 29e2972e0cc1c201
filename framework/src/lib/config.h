/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libkdp internal: kdpd's configuration file, read with libfyaml.
 *
 * One YAML (or JSON) document whose top-level mapping has one section per
 * backend; each section maps param names to scalar values:
 *
 *   example:
 *     devices: 16
 *     resource: example.com/widget
 *
 * -o BACKEND.KEY=VALUE overrides (and may add) a key. Every entry remembers
 * where it came from, so errors can name the file, line and key, or the flag.
 * The parsed document is flattened into entries and freed at load. A file past
 * the shape limits of kdp/config-shape.h (4096 keys per section among them) is
 * refused before libfyaml builds it. Loading, lookups and checks are n log n,
 * and a problem repeated often is logged a few times and then counted.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <kdp/backend.h>
#include <kdp/cleanup.h>

/* Lines logged per kind of config problem; the rest are counted in one summary line per kind. */
#define KDP_CONFIG_LINES_PER_KIND 3

typedef struct kdp_config_entry {
        char *section;
        char *key;
        char *value;
        char *origin;           /* "/etc/kdp/config.yaml:12" or "-o example.devices=4" */
} kdp_config_entry;

typedef struct kdp_config {
        char *path;             /* NULL when no file */
        kdp_config_entry *entries;
        size_t n_entries;
        size_t n_allocated;
        size_t *order;          /* entry indexes sorted by section, key, index: lookups bisect */
} kdp_config;

/*
 * Reads `path` (NULL: empty config). Returns 0, -ENOENT/-EACCES when
 * unreadable, -EISDIR/-EINVAL for a file that is not regular, -EFBIG above
 * KDP_CONFIG_FILE_SIZE_MAX, -EINVAL for a NUL byte or a byte that is not UTF-8,
 * a shape past kdp_config_shape_check()'s limits, a syntax error, a top level
 * that is not a mapping, a section that is not a mapping, a non-scalar value or
 * a duplicate key; every error is logged with path, line (and column or key).
 */
int kdp_config_load(const char *path, kdp_config **ret);
kdp_config *kdp_config_free(kdp_config *c);
KDP_DEFINE_CLEANUP_FUNC(kdp_config, kdp_config_free)

/* Applies "backend.key=value"; -EINVAL (logged) if it does not have that shape. */
int kdp_config_add_override(kdp_config *c, const char *assignment);

/* The value of section.key or NULL; *ret_origin (may be NULL) gets where it came from. */
const char *kdp_config_get(const kdp_config *c, const char *section, const char *key,
                           const char **ret_origin);

/*
 * -EINVAL if `section` has a key not in `specs`: the first offenders are
 * logged with origin and key, the rest counted in one line.
 */
int kdp_config_check_section(const kdp_config *c, const char *section, const kdp_param_spec *specs);

/* True if both configs give `section` the same keys with the same values. */
bool kdp_config_section_equal(const kdp_config *a, const kdp_config *b, const char *section);
