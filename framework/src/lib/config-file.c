/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Safe reads of config files (see kdp/config-file.h).
 *
 * Line breaks, for the line and column of a bad byte, are those of YAML 1.2:
 * LF, CR LF and a lone CR. A column counts characters, so it matches what an
 * editor shows and what libfyaml's own diagnostics say.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
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

