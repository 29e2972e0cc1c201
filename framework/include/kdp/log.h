/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Structured logging in the klog text format, on stderr:
 *
 *   I1129 10:04:31.228811    4127 server.c:88] "Registered with kubelet" resource="example.com/widget"
 *
 * Messages are constant strings (capitalised, past tense, no trailing period);
 * variable data goes into typed fields whose keys are lowerCamelCase:
 *
 *   kdp_log_info("Served resource", KDP_F_STR("resource", name), KDP_F_INT("devices", n));
 *   return kdp_log_error(r, "Failed to read config", KDP_F_STR("path", p));   (adds err="...", returns r)
 *   kdp_log_v(4, "Scanned device", KDP_F_STR("device", id));                  (only when --v >= 4)
 *
 * String values are quoted with Go %q escaping, so a line is always one line.
 * Thread-safe: one write(2) per line.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kdp_log_field_type {
        KDP_LOG_FIELD_NONE,
        KDP_LOG_FIELD_STR,
        KDP_LOG_FIELD_INT,
} kdp_log_field_type;

typedef struct kdp_log_field {
        const char *key;
        kdp_log_field_type type;
        const char *str;        /* KDP_LOG_FIELD_STR; NULL prints as "" */
        int64_t num;            /* KDP_LOG_FIELD_INT */
} kdp_log_field;

#define KDP_F_STR(k, v) ((kdp_log_field){ .key = (k), .type = KDP_LOG_FIELD_STR, .str = (v) })
#define KDP_F_INT(k, v) ((kdp_log_field){ .key = (k), .type = KDP_LOG_FIELD_INT, .num = (int64_t) (v) })

/* Severity letters as klog prints them. */
typedef enum kdp_log_level {
        KDP_LOG_INFO = 'I',
        KDP_LOG_WARNING = 'W',
        KDP_LOG_ERROR = 'E',
} kdp_log_level;

/* Verbosity threshold (klog --v); messages with v > threshold are dropped. Default 0. */
void kdp_log_set_verbosity(int v);
int kdp_log_get_verbosity(void);

/*
 * Writes one line. `prefix` fields (may be NULL) come first, e.g. backend="gpu".
 * `err` != 0 appends err="<strerror(-err)>". Returns `err`.
 */
int kdp_log_emit(kdp_log_level level, int err, const char *file, int line, const char *msg,
                 const kdp_log_field *prefix, size_t n_prefix,
                 const kdp_log_field *fields, size_t n_fields);

/* Writes one line to a caller-given fd (for tests); same format. */
int kdp_log_emit_fd(int fd, kdp_log_level level, int err, const char *file, int line, const char *msg,
                    const kdp_log_field *prefix, size_t n_prefix,
                    const kdp_log_field *fields, size_t n_fields);

/* Internal helpers of the macros below: a leading dummy field makes empty lists legal. */
#define KDP_LOG_FIELDS_(...) ((const kdp_log_field[]){ { 0 }, ##__VA_ARGS__ })
#define KDP_LOG_NFIELDS_(...) (sizeof(KDP_LOG_FIELDS_(__VA_ARGS__)) / sizeof(kdp_log_field) - 1)
#define KDP_LOG_(level, err, msg, ...)                                                           \
        kdp_log_emit((level), (err), __FILE__, __LINE__, (msg), NULL, 0,                         \
                     KDP_LOG_FIELDS_(__VA_ARGS__) + 1, KDP_LOG_NFIELDS_(__VA_ARGS__))

#define kdp_log_info(msg, ...) ((void) KDP_LOG_(KDP_LOG_INFO, 0, msg, ##__VA_ARGS__))
#define kdp_log_warning(msg, ...) ((void) KDP_LOG_(KDP_LOG_WARNING, 0, msg, ##__VA_ARGS__))
/* Logs at error level with err="..." and evaluates to `r` (a negative errno). */
#define kdp_log_error(r, msg, ...) KDP_LOG_(KDP_LOG_ERROR, (r), msg, ##__VA_ARGS__)
/* Warning with err="..."; evaluates to `r`. */
#define kdp_log_warning_errno(r, msg, ...) KDP_LOG_(KDP_LOG_WARNING, (r), msg, ##__VA_ARGS__)
#define kdp_log_v(v, msg, ...)                                                                   \
        ((void) ((v) <= kdp_log_get_verbosity() ? KDP_LOG_(KDP_LOG_INFO, 0, msg, ##__VA_ARGS__) : 0))

#ifdef __cplusplus
}
#endif
