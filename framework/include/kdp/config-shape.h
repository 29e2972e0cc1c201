/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The shape of a config file (kdpd's --config, a backend's own), checked before
 * a parser builds a document of it: one ConfigMap edit reaches every node at
 * once, and a hostile shape must cost a few megabytes, not hundreds. The caller
 * owns `text` and `ret_key`; reason strings are static.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <kdp/config-file.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The most a config file may hold, whatever reads it: collections nested at most
 * KDP_CONFIG_SHAPE_DEPTH_MAX deep (a list or a mapping is one level), at most
 * KDP_CONFIG_SHAPE_ENTRIES_MAX entries in one list or keys in one mapping, and at
 * most KDP_CONFIG_SHAPE_VALUES_MAX values in the file (every scalar, key, list and
 * mapping is one, and so is every anchor, tag and alias). Since kdp 1.7.
 */
#define KDP_CONFIG_SHAPE_DEPTH_MAX 16
#define KDP_CONFIG_SHAPE_ENTRIES_MAX 4096
#define KDP_CONFIG_SHAPE_VALUES_MAX 16384
#define KDP_CONFIG_SHAPE_KEY_MAX 256     /* the size of the key path kdp_config_shape_check() writes */

/*
 * Checks, before a document is built from it, that `text` (YAML, or JSON when
 * `json`) stays within the limits above, in memory of its own that stays under a
 * few megabytes whatever the text (see framework/src/lib/config-shape.c). Returns 0 when it does
 * (also for text the parser stops at: the caller's parse reports that), -E2BIG
 * with *reterr (the reason naming the limit, the line and column of the first
 * value past it) and `ret_key` set, or -ENOMEM. `ret_key` is the path of the
 * collection nested too deep, or of the list or mapping too long or holding the
 * value past the file's limit ("resourceList[0].selectors[0].vendors", "" for
 * the top level). Since kdp 1.7.
 */
int kdp_config_shape_check(const char *text, size_t size, bool json, kdp_config_file_error *reterr,
                                char ret_key[KDP_CONFIG_SHAPE_KEY_MAX]);

#ifdef __cplusplus
}
#endif
