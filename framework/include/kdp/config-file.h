/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reading a config file that a person or a ConfigMap wrote, before a parser
 * sees it (kdpd's --config, a backend's own file).
 *
 * The file is opened O_NONBLOCK, so a FIFO cannot hang the caller, and is
 * refused unless it is a regular file (a symlink to one is fine) of at most
 * `max_size` bytes. Its text is then checked byte by byte: libfyaml ends its
 * input without an error at a NUL byte or at a byte sequence that is not
 * UTF-8 (even in a comment), which would silently drop the rest of the file,
 * so either is refused here with its line and column.
 *
 * The caller logs: on failure *reterr says why in words that fit a log field
 * ("a FIFO, not a regular file"), and where, when the problem is at a place in
 * the text. The caller owns `path`, *ret_text (free()) and *reterr's storage;
 * reason strings are static.
 */
#pragma once

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KDP_CONFIG_FILE_SIZE_MAX ((size_t) 1024 * 1024)

typedef struct kdp_config_file_error {
        const char *reason;     /* static text, NULL when the failure was an errno of a system call */
        unsigned line;          /* 1-based; 0: the problem has no place in the text */
        unsigned column;        /* 1-based, in characters */
} kdp_config_file_error;

/*
 * Reads `path` whole into *ret_text (NUL-terminated, *ret_size bytes without
 * the terminator). Returns 0; -errno of open/read; -EISDIR for a directory;
 * -EINVAL for another file that is not regular; -EFBIG when longer than
 * `max_size`; -EILSEQ for a NUL byte or a byte that is not UTF-8 (with line
 * and column). *reterr is written on failure only.
 */
int kdp_config_file_read(const char *path, size_t max_size, char **ret_text, size_t *ret_size,
                         kdp_config_file_error *reterr);

/*
 * Checks that `text` holds no NUL byte and is UTF-8 (no overlong form, no
 * surrogate, nothing above U+10FFFF). Returns 0 or -EILSEQ with *reterr set.
 */
int kdp_config_file_check_text(const char *text, size_t size, kdp_config_file_error *reterr);

/*
 * The 1-based line and column (in characters) of byte `offset` of `text` (a
 * byte that exists), as kdp_config_file_check_text() counts them (line breaks
 * LF, CR LF, CR). Since kdp 1.6.
 */
void kdp_config_file_position(const char *text, size_t offset, unsigned *ret_line, unsigned *ret_column);

#ifdef __cplusplus
}
#endif
