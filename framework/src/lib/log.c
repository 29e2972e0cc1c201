/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * klog-compatible structured logging (see <kdp/log.h>).
 *
 *   I0612 10:04:31.228811    4127 kubelet-client.c:88] "Registered with kubelet" resource="example.com/gpu"
 *
 * The header is klog's: severity letter, month and day, local wall-clock time
 * with microseconds, the PID right-aligned in 7 columns, the basename of the
 * source file and the line. The message and every string value are quoted the
 * way Go's strconv.Quote (%q) does, so a line never spans two lines.
 *
 * Each line is formatted into a stack buffer (a heap buffer when longer) and
 * written with one write(2), so lines from several threads never interleave.
 * errno is preserved across a call.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <kdp/cleanup.h>
#include <kdp/log.h>

#define LOG_STACK_SIZE 4096

static int log_verbosity = 0;

void kdp_log_set_verbosity(int v) {
        __atomic_store_n(&log_verbosity, v, __ATOMIC_RELAXED);
}

int kdp_log_get_verbosity(void) {
        return __atomic_load_n(&log_verbosity, __ATOMIC_RELAXED);
}

/*
 * A sink that counts every byte put into it but stores only what fits: the
 * first pass learns the line's length, a second pass (into a heap buffer)
 * runs only when the stack buffer was too small.
 */
typedef struct line_buf {
        char *p;
        size_t size;
        size_t len;
} line_buf;

static void buf_put(line_buf *b, const char *s, size_t n) {
        if (b->len < b->size) {
                size_t room = b->size - b->len;

                memcpy(b->p + b->len, s, n < room ? n : room);
        }
        b->len += n;
}

static void buf_puts(line_buf *b, const char *s) {
        buf_put(b, s, strlen(s));
}

static void buf_putc(line_buf *b, char c) {
        buf_put(b, &c, 1);
}

static void buf_put_hex(line_buf *b, const char *prefix, uint32_t v, int digits) {
        static const char hex[] = "0123456789abcdef";
        char s[8];

        buf_puts(b, prefix);
        for (int i = digits - 1; i >= 0; i--)
                s[digits - 1 - i] = hex[(v >> (4 * i)) & 0xf];
        buf_put(b, s, (size_t) digits);
}

/*
 * Decodes one UTF-8 sequence at s (n bytes available). Returns its length and
 * the code point, or 0 when the bytes are not valid UTF-8 (overlong forms,
 * surrogates and values above U+10FFFF are invalid, as in Go).
 */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *ret_cp) {
        uint32_t cp, min;
        size_t len;

        if (s[0] < 0x80) {
                *ret_cp = s[0];
                return 1;
        }
        if (s[0] >= 0xc2 && s[0] <= 0xdf) {
                len = 2;
                cp = s[0] & 0x1f;
                min = 0x80;
        } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
                len = 3;
                cp = s[0] & 0x0f;
                min = 0x800;
        } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
                len = 4;
                cp = s[0] & 0x07;
                min = 0x10000;
        } else
                return 0;

        if (n < len)
                return 0;
        for (size_t i = 1; i < len; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
                return 0;

        *ret_cp = cp;
        return len;
}

/*
 * Non-ASCII code points printed escaped. Go's unicode.IsPrint tables are
 * approximated: the C1 controls, the line and paragraph separators and the
 * zero-width and BOM formatting characters are escaped; everything else is kept.
 */
static bool rune_is_printable(uint32_t cp) {
        if (cp >= 0x80 && cp <= 0x9f)
                return false;
        if (cp == 0x2028 || cp == 0x2029)
                return false;
        if ((cp >= 0x200b && cp <= 0x200f) || cp == 0xfeff)
                return false;
        return true;
}

/* Appends s as Go's strconv.Quote would print it. NULL prints as "". */
static void buf_put_quoted(line_buf *b, const char *str) {
        const unsigned char *s = (const unsigned char *) (str ?: "");
        size_t n = strlen((const char *) s);

        buf_putc(b, '"');
        while (n > 0) {
                uint32_t cp;
                size_t k;

                k = utf8_decode(s, n, &cp);
                if (k == 0) {
                        buf_put_hex(b, "\\x", s[0], 2);
                        s++;
                        n--;
                        continue;
                }

                if (k > 1) {
                        if (rune_is_printable(cp))
                                buf_put(b, (const char *) s, k);
                        else if (cp < 0x10000)
                                buf_put_hex(b, "\\u", cp, 4);
                        else
                                buf_put_hex(b, "\\U", cp, 8);
                } else
                        switch (cp) {
                        case '"':
                                buf_puts(b, "\\\"");
                                break;
                        case '\\':
                                buf_puts(b, "\\\\");
                                break;
                        case '\a':
                                buf_puts(b, "\\a");
                                break;
                        case '\b':
                                buf_puts(b, "\\b");
                                break;
                        case '\f':
                                buf_puts(b, "\\f");
                                break;
                        case '\n':
                                buf_puts(b, "\\n");
                                break;
                        case '\r':
                                buf_puts(b, "\\r");
                                break;
                        case '\t':
                                buf_puts(b, "\\t");
                                break;
                        case '\v':
                                buf_puts(b, "\\v");
                                break;
                        default:
                                if (cp < 0x20 || cp == 0x7f)
                                        buf_put_hex(b, "\\x", cp, 2);
                                else
                                        buf_putc(b, (char) cp);
                        }
                s += k;
                n -= k;
        }
        buf_putc(b, '"');
}

static void buf_put_fields(line_buf *b, const kdp_log_field *fields, size_t n_fields) {
        char num[32];

        if (!fields)
                return;

        for (size_t i = 0; i < n_fields; i++) {
                const kdp_log_field *f = &fields[i];

                /* KDP_LOG_FIELD_NONE (and anything unknown) is skipped: a way to omit a field */
                if (f->type != KDP_LOG_FIELD_STR && f->type != KDP_LOG_FIELD_INT)
                        continue;

                buf_putc(b, ' ');
                buf_puts(b, f->key ?: "?");
                buf_putc(b, '=');
                if (f->type == KDP_LOG_FIELD_STR)
                        buf_put_quoted(b, f->str);
                else {
                        (void) snprintf(num, sizeof(num), "%" PRId64, f->num);
                        buf_puts(b, num);
                }
        }
}

typedef struct log_line {
        char level;
        int err;
        const char *file;
        int line;
        const char *msg;
        const kdp_log_field *prefix;
        size_t n_prefix;
        const kdp_log_field *fields;
        size_t n_fields;
        struct timespec ts;
        pid_t pid;
} log_line;

static void format_line(line_buf *b, const log_line *l) {
        struct tm tm = { 0 };
        const char *base;
        char hdr[128];

        (void) localtime_r(&l->ts.tv_sec, &tm);

        base = l->file ? strrchr(l->file, '/') : NULL;
        base = base ? base + 1 : (l->file ?: "???");

        (void) snprintf(hdr, sizeof(hdr), "%c%02d%02d %02d:%02d:%02d.%06ld %7d ",
                        l->level, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                        l->ts.tv_nsec / 1000, (int) l->pid);
        buf_puts(b, hdr);
        buf_puts(b, base);
        (void) snprintf(hdr, sizeof(hdr), ":%d] ", l->line);
        buf_puts(b, hdr);

        buf_put_quoted(b, l->msg);
        buf_put_fields(b, l->prefix, l->n_prefix);
        buf_put_fields(b, l->fields, l->n_fields);

        if (l->err != 0) {
                char ebuf[128];
                int e = l->err == INT_MIN ? EINVAL : (l->err < 0 ? -l->err : l->err);

                buf_puts(b, " err=");
                buf_put_quoted(b, strerror_r(e, ebuf, sizeof(ebuf)));
        }
        buf_putc(b, '\n');
}

static void write_all(int fd, const char *p, size_t n) {
        while (n > 0) {
                ssize_t k = write(fd, p, n);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return;
                }
                p += k;
                n -= (size_t) k;
        }
}

int kdp_log_emit_fd(int fd, kdp_log_level level, int err, const char *file, int line, const char *msg,
                    const kdp_log_field *prefix, size_t n_prefix,
                    const kdp_log_field *fields, size_t n_fields) {
        static const char truncated[] = " [truncated]\n";
        char stack[LOG_STACK_SIZE];
        _cleanup_free_ char *heap = NULL;
        line_buf b = { .p = stack, .size = sizeof(stack) };
        int saved_errno = errno;
        log_line l = {
                .level = (level == KDP_LOG_INFO || level == KDP_LOG_WARNING) ? (char) level : 'E',
                .err = err,
                .file = file,
                .line = line,
                .msg = msg,
                .prefix = prefix,
                .n_prefix = n_prefix,
                .fields = fields,
                .n_fields = n_fields,
                .pid = getpid(),
        };

        if (fd < 0)
                return err;

        (void) clock_gettime(CLOCK_REALTIME, &l.ts);
        format_line(&b, &l);

        if (b.len > b.size) {
                heap = malloc(b.len);
                if (heap) {
                        b = (line_buf) { .p = heap, .size = b.len };
                        format_line(&b, &l);
                } else {
                        /* out of memory: write what fits, and say that it was cut */
                        memcpy(stack + sizeof(stack) - (sizeof(truncated) - 1), truncated,
                               sizeof(truncated) - 1);
                        b.len = sizeof(stack);
                }
        }

        write_all(fd, b.p, b.len);
        errno = saved_errno;
        return err;
}

int kdp_log_emit(kdp_log_level level, int err, const char *file, int line, const char *msg,
                 const kdp_log_field *prefix, size_t n_prefix,
                 const kdp_log_field *fields, size_t n_fields) {
        return kdp_log_emit_fd(STDERR_FILENO, level, err, file, line, msg, prefix, n_prefix, fields,
                               n_fields);
}
