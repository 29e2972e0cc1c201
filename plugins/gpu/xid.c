/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NVIDIA Xid errors from the kernel log (see xid.h; docs/hardware-gpu.md §3.4, §3.6, §7).
 *
 * Parsing is by hand, not with POSIX regex: a record is a byte range, not a C
 * string (one read() of /dev/kmsg gives `len` bytes, a FIFO buffer holds many
 * records back to back), regexec() would need a NUL-terminated copy of each,
 * and the shape is a fixed run of literals and digit runs that the bounded
 * cursor helpers below walk with overflow checks. The shape follows NVIDIA's
 * own health monitor:
 *
 *   NVRM: Xid \((?:PCI:)?([0-9a-f]+:[0-9a-f]{2}:[0-9a-f]{2})(?: GPU-I:(\d+))?(?: GPU-CI:(\d+))?\): (\d+),
 *
 * anchored at the start of the text (theirs is not, since they read syslog
 * lines with prefixes; a kmsg record's text starts with the driver's "NVRM: ",
 * and anchoring keeps a kernel line that quotes foreign text, such as a USB
 * product string, from passing for an Xid). The domain is read as a number
 * and printed back "%04x" like the kernel's sysfs names, so "PCI:03F8CFDD"
 * gives "3f8cfdd:..." and the BDF compares equal to kdp_pci_device.address.
 *
 * Reader: a character device (/dev/kmsg) gives one record per read(), its
 * continuation lines (" SUBSYSTEM=...") included; a FIFO or a regular file
 * gives a byte stream in which a read() may end mid-line. Both go through one
 * path: bytes are appended to the buffer and every complete line is handled
 * (lines starting with a space are continuation lines and skipped). For a
 * character device a read() is a whole record, so the buffer is empty again
 * after it; for a stream the partial last line stays for the next read, and a
 * line that fills the whole buffer is dropped up to its '\n' and counted lost.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kdp/cleanup.h>
#include <kdp/log.h>

#include "xid.h"

#define XID_PREFIX "NVRM: Xid ("
#define XID_CAUSE " caused by previous Xid "
/* consecutive EINVALs from a character device before it counts as broken (kmsg skips a record each time) */
#define KMSG_EINVAL_MAX 64
#define SET_SPACE " \t\r\n"

struct gpu_kmsg {
        int fd;
        char *path;                     /* for log lines */
        bool records;                   /* character device: one record per read() */
        bool drained;                   /* the first drain (replay) is over */
        bool skipping;                  /* stream: dropping the rest of a line longer than the buffer */
        bool have_seq;
        uint64_t last_seq;
        uint64_t lost;
        size_t len;                     /* stream: bytes of an incomplete line at the start of buf */
        char buf[GPU_KMSG_BUFFER_SIZE];
};

/* ---- a cursor over a byte range ---- */

typedef struct cursor {
        const char *p;
        const char *end;
} cursor;

static bool cursor_skip(cursor *c, const char *literal) {
        size_t n = strlen(literal);

        if ((size_t) (c->end - c->p) < n || memcmp(c->p, literal, n) != 0)
                return false;
        c->p += n;
        return true;
}

static int digit_value(char c, unsigned base) {
        int v;

        if (c >= '0' && c <= '9')
                v = c - '0';
        else if (c >= 'a' && c <= 'f')
                v = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
                v = c - 'A' + 10;
        else
                return -1;
        return v < (int) base ? v : -1;
}

/*
 * Reads 1 to max_digits (0: any number of) digits in `base` whose value is at
 * most `max`. -EINVAL without a digit, -ERANGE above max; moves only on success.
 */
static int cursor_number(cursor *c, unsigned base, size_t max_digits, uint64_t max, uint64_t *ret) {
        const char *p = c->p;
        uint64_t v = 0;
        int d;

        for (; p < c->end && (max_digits == 0 || (size_t) (p - c->p) < max_digits); p++) {
                d = digit_value(*p, base);
                if (d < 0)
                        break;
                if ((uint64_t) d > max || v > (max - (uint64_t) d) / base)
                        return -ERANGE;
                v = v * base + (uint64_t) d;
        }
        if (p == c->p)
                return -EINVAL;
        c->p = p;
        *ret = v;
        return 0;
}

/* Exactly two hex digits. */
static bool cursor_hex2(cursor *c, uint64_t *ret) {
        const char *start = c->p;

        return cursor_number(c, 16, 2, 0xff, ret) >= 0 && c->p - start == 2;
}

/* ---- records ---- */

typedef struct record {
        uint64_t prio;
        uint64_t seq;
        uint64_t ts_usec;
        const char *text;               /* up to the first '\n'; not NUL-terminated */
        size_t text_len;
} record;

/* "prio,seq,ts_usec,flags[,more];text": three decimal fields, non-empty flags, anything up to ';'. */
static int record_parse(const char *line, size_t len, record *ret) {
        const char *eol, *semi;
        uint64_t prio, seq, ts;
        cursor c;

        if (!line)
                return -EINVAL;
        eol = memchr(line, '\n', len);
        if (eol)
                len = (size_t) (eol - line);
        semi = memchr(line, ';', len);
        if (!semi)
                return -EINVAL;

        c = (cursor){ line, semi };
        if (cursor_number(&c, 10, 0, UINT64_MAX, &prio) < 0 || !cursor_skip(&c, ",") ||
            cursor_number(&c, 10, 0, UINT64_MAX, &seq) < 0 || !cursor_skip(&c, ",") ||
            cursor_number(&c, 10, 0, UINT64_MAX, &ts) < 0 || !cursor_skip(&c, ",") ||
            c.p == c.end || *c.p == ',')
                return -EINVAL;

        *ret = (record){
                .prio = prio,
                .seq = seq,
                .ts_usec = ts,
                .text = semi + 1,
                .text_len = len - (size_t) (semi + 1 - line),
        };
        return 0;
}

/* N of a text that ends in " caused by previous Xid N", else 0. */
static unsigned xid_cause(const char *p, const char *end) {
        size_t n = strlen(XID_CAUSE);
        const char *digits = end;
        uint64_t v;
        cursor c;

        while (digits > p && digit_value(digits[-1], 10) >= 0)
                digits--;
        if (digits == end || (size_t) (digits - p) < n || memcmp(digits - n, XID_CAUSE, n) != 0)
                return 0;
        c = (cursor){ digits, end };
        if (cursor_number(&c, 10, 0, UINT_MAX, &v) < 0)
                return 0;
        return (unsigned) v;
}

/* "GPU-I:NN" / "GPU-CI:NN" when `label` is next: *ret = NN; absent: -1 and true. False when malformed. */
static bool xid_instance(cursor *c, const char *label, int *ret) {
        uint64_t v;

        *ret = -1;
        if (!cursor_skip(c, label))
                return true;
        if (cursor_number(c, 10, 0, INT_MAX, &v) < 0)
                return false;
        *ret = (int) v;
        return true;
}

/* 1 and *ret (bdf, code, cause, instances) for an Xid text, 0 for any other. */
static int xid_parse_text(const char *text, size_t len, gpu_xid *ret) {
        cursor c = { text, text + len };
        uint64_t domain, bus, dev, code;
        gpu_xid x = {};
        int n;

        if (!cursor_skip(&c, XID_PREFIX))
                return 0;
        (void) cursor_skip(&c, "PCI:");
        if (cursor_number(&c, 16, 0, UINT32_MAX, &domain) < 0 || !cursor_skip(&c, ":") ||
            !cursor_hex2(&c, &bus) || !cursor_skip(&c, ":") || !cursor_hex2(&c, &dev))
                return 0;
        if (!xid_instance(&c, " GPU-I:", &x.gpu_instance) ||
            !xid_instance(&c, " GPU-CI:", &x.compute_instance))
                return 0;
        if (!cursor_skip(&c, "): ") || cursor_number(&c, 10, 0, UINT_MAX, &code) < 0 || !cursor_skip(&c, ","))
                return 0;

        n = snprintf(x.bdf, sizeof(x.bdf), "%04x:%02x:%02x.0",
                     (unsigned) domain, (unsigned) bus, (unsigned) dev);
        if (n < 0 || (size_t) n >= sizeof(x.bdf))
                return 0;
        x.code = (unsigned) code;
        x.cause = xid_cause(c.p, c.end);
        *ret = x;
        return 1;
}

/* 1 and *ret for a kernel record whose text is an Xid, else 0. */
static int record_xid(const record *rec, gpu_xid *ret) {
        gpu_xid x;

        /* facility != 0: written from userspace, which must not be able to fake an Xid */
        if (rec->prio >= 8)
                return 0;
        if (xid_parse_text(rec->text, rec->text_len, &x) == 0)
                return 0;
        x.seq = rec->seq;
        x.ts_usec = rec->ts_usec;
        *ret = x;
        return 1;
}

int gpu_xid_parse_record(const char *line, size_t len, gpu_xid *ret) {
        record rec;
        int r;

        assert(ret);

        r = record_parse(line, len, &rec);
        if (r < 0)
                return r;
        return record_xid(&rec, ret);
}

const char *gpu_xid_bucket(unsigned code) {
        switch (code) {
        case 13:
        case 31:
        case 68:
        case 94:
                return "RESTART_APP";
        case 43:
        case 63:
        case 92:
                return "IGNORE";
        case 45:
                return "WORKFLOW_XID_45";
        case 48:
                return "WORKFLOW_XID_48";
        case 64:
        case 95:
        case 109:
        case 119:
        case 120:
                return "RESET_GPU";
        case 74:
                return "WORKFLOW_NVLINK_ERR";
        case 79:
                return "RESTART_BM";
        case 154:
                return "FOLLOW_OTHER_XID";
        default:
                return "UNKNOWN";
        }
}

/* ---- sets of codes ---- */

static int unsigned_compare(const void *a, const void *b) {
        unsigned x = *(const unsigned *) a, y = *(const unsigned *) b;

        return x < y ? -1 : x > y;
}

/*
 * Appends the entry text[0..len) (spaces around it allowed, empty skipped) to codes[*n]; an entry
 * that is no number is appended to *skipped (",x" after the first) and left out.
 */
static int set_entry(const char *text, size_t len, unsigned *codes, size_t *n, char **skipped) {
        cursor c = { text, text + len };
        const char *start;
        uint64_t v;
        int w;

        while (c.p < c.end && strchr(SET_SPACE, *c.p))
                c.p++;
        while (c.end > c.p && strchr(SET_SPACE, c.end[-1]))
                c.end--;
        if (c.p == c.end)
                return 0;
        start = c.p;
        if (cursor_number(&c, 10, 0, UINT_MAX, &v) < 0 || c.p != c.end) {
                char *more = NULL;

                w = *skipped ? asprintf(&more, "%s,%.*s", *skipped, (int) (c.end - start), start)
                             : asprintf(&more, "%.*s", (int) (c.end - start), start);

                if (w < 0)
                        return -ENOMEM;
                free(*skipped);
                *skipped = more;
                return 0;
        }
        codes[(*n)++] = (unsigned) v;
        return 0;
}

/* Sorts codes[0..n) and keeps each value once; returns the new count. */
static size_t set_unique(unsigned *codes, size_t n) {
        size_t i, m = 0;

        qsort(codes, n, sizeof(*codes), unsigned_compare);
        for (i = 0; i < n; i++)
                if (m == 0 || codes[m - 1] != codes[i])
                        codes[m++] = codes[i];
        return m;
}

int gpu_xid_set_parse(const char *text, gpu_xid_set *ret, char **ret_skipped) {
        _cleanup_free_ unsigned *codes = NULL;
        _cleanup_free_ char *skipped = NULL;
        size_t n = 0, n_max = 1, len;
        const char *p;
        int r;

        if (!text || !ret)
                return -EINVAL;

        for (p = text; *p; p++)
                n_max += *p == ',';
        codes = calloc(n_max, sizeof(*codes));
        if (!codes)
                return -ENOMEM;
        for (p = text;; p += len + 1) {
                len = strcspn(p, ",");
                r = set_entry(p, len, codes, &n, &skipped);
                if (r < 0)
                        return r;
                if (p[len] == '\0')
                        break;
        }

        n = set_unique(codes, n);
        *ret = (gpu_xid_set){ .codes = n > 0 ? KDP_TAKE_PTR(codes) : NULL, .n = n };
        if (ret_skipped)
                *ret_skipped = KDP_TAKE_PTR(skipped);
        return 0;
}

bool gpu_xid_set_has(const gpu_xid_set *set, unsigned code) {
        if (!set || set->n == 0)
                return false;
        return bsearch(&code, set->codes, set->n, sizeof(*set->codes), unsigned_compare) != NULL;
}

void gpu_xid_set_done(gpu_xid_set *set) {
        if (!set)
                return;
        free(set->codes);
        *set = (gpu_xid_set){};
}

/* ---- the reader ---- */

typedef struct kmsg_drain {
        gpu_xid_fn fn;
        void *userdata;
        bool replay;
        int n_xids;
} kmsg_drain;

/* A gap after the last seq is records lost; a seq going back (new boot, rewound file) is a new baseline. */
static void kmsg_seq(gpu_kmsg *k, uint64_t seq) {
        if (k->have_seq && seq > k->last_seq && seq - k->last_seq > 1)
                k->lost += seq - k->last_seq - 1;
        k->last_seq = seq;
        k->have_seq = true;
}

/* One complete line: a record's first line, or a continuation line (skipped). */
static void kmsg_line(gpu_kmsg *k, kmsg_drain *d, const char *line, size_t len) {
        gpu_xid xid;
        record rec;

        if (len == 0 || line[0] == ' ')
                return;
        if (record_parse(line, len, &rec) < 0) {
                kdp_log_v(4, "Skipped malformed kernel log record", KDP_F_STR("path", k->path));
                return;
        }
        kmsg_seq(k, rec.seq);
        if (record_xid(&rec, &xid) == 0)
                return;

        if (d->n_xids < INT_MAX)
                d->n_xids++;
        kdp_log_v(4, "Read Xid", KDP_F_STR("pciAddress", xid.bdf), KDP_F_INT("xid", xid.code),
                  KDP_F_STR("bucket", gpu_xid_bucket(xid.code)), KDP_F_INT("seq", xid.seq),
                  KDP_F_INT("replay", d->replay));
        if (d->fn)
                d->fn(d->userdata, &xid, d->replay);
}

/* A stream line filled the whole buffer: drop it, counting it lost when its header is readable. */
static void kmsg_drop_long(gpu_kmsg *k) {
        record rec;

        kdp_log_v(4, "Skipped kernel log record longer than the buffer", KDP_F_STR("path", k->path));
        k->skipping = true;
        k->len = 0;
        if (k->buf[0] == ' ' || record_parse(k->buf, sizeof(k->buf), &rec) < 0)
                return;
        kmsg_seq(k, rec.seq);
        k->lost++;
}

/* Handles the n bytes a read() appended to buf: every complete line, then what is left of it. */
static void kmsg_take(gpu_kmsg *k, kmsg_drain *d, size_t n) {
        size_t total = k->len + n, start = 0, tail;
        const char *nl;

        assert(!k->skipping || k->len == 0);
        if (k->skipping) {
                nl = memchr(k->buf, '\n', total);
                if (!nl) {
                        k->len = 0;
                        return;
                }
                start = (size_t) (nl - k->buf) + 1;
                k->skipping = false;
        }
        while ((nl = memchr(k->buf + start, '\n', total - start))) {
                kmsg_line(k, d, k->buf + start, (size_t) (nl - k->buf) - start);
                start = (size_t) (nl - k->buf) + 1;
        }

        tail = total - start;
        if (k->records) {
                /* a read() is a whole record: a last line without '\n' is complete too */
                if (tail > 0)
                        kmsg_line(k, d, k->buf + start, tail);
                k->len = 0;
        } else if (tail == sizeof(k->buf))
                kmsg_drop_long(k);
        else {
                memmove(k->buf, k->buf + start, tail);
                k->len = tail;
        }
}

/* Reads until EAGAIN or the end of a regular file. */
static int kmsg_read(gpu_kmsg *k, kmsg_drain *d) {
        unsigned n_einval = 0;
        ssize_t n;

        for (;;) {
                assert(k->len < sizeof(k->buf));
                n = read(k->fd, k->buf + k->len, sizeof(k->buf) - k->len);
                if (n > 0) {
                        n_einval = 0;
                        kmsg_take(k, d, (size_t) n);
                        continue;
                }
                if (n == 0)
                        return 0;
                if (errno == EINTR)
                        continue;
                if (errno == EAGAIN)
                        return 0;
                if (errno == EPIPE) {
                        /* the kernel moved us to the oldest record; the seq gap that follows counts */
                        kdp_log_v(4, "Skipped overwritten kernel log records", KDP_F_STR("path", k->path));
                        continue;
                }
                if (errno == EINVAL && k->records && ++n_einval < KMSG_EINVAL_MAX) {
                        /* the kernel skipped the record; the seq gap that follows counts */
                        kdp_log_v(4, "Skipped kernel log record longer than the buffer",
                                  KDP_F_STR("path", k->path));
                        continue;
                }
                return -errno;
        }
}

int gpu_kmsg_drain(gpu_kmsg *k, gpu_xid_fn fn, void *userdata) {
        kmsg_drain d = { .fn = fn, .userdata = userdata };
        uint64_t lost;
        int r;

        if (!k)
                return -EINVAL;

        d.replay = !k->drained;
        lost = k->lost;
        r = kmsg_read(k, &d);
        k->drained = true;
        if (k->lost > lost)
                kdp_log_warning("Lost kernel log records", KDP_F_STR("path", k->path),
                                KDP_F_INT("records", k->lost - lost));
        return r < 0 ? r : d.n_xids;
}

/* Opens path non-blocking with `flags` and stats it; returns the fd. */
static int kmsg_open_fd(const char *path, int flags, struct stat *ret_st) {
        _cleanup_close_ int fd = -1;

        fd = open(path, flags | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fstat(fd, ret_st) < 0)
                return -errno;
        return KDP_TAKE_FD(fd);
}

/* Swaps k's read-only FIFO fd for a read-write one: with a writer of our own it never reports end-of-file. */
static int kmsg_reopen_fifo(gpu_kmsg *k, const struct stat *st) {
        struct stat st_rw;
        int fd;

        fd = kmsg_open_fd(k->path, O_RDWR, &st_rw);
        if (fd < 0)
                return fd;
        (void) close(k->fd);
        k->fd = fd;
        if (st_rw.st_dev != st->st_dev || st_rw.st_ino != st->st_ino)
                return -ESTALE;
        return 0;
}

int gpu_kmsg_open(const char *path, gpu_kmsg **ret) {
        _cleanup_(gpu_kmsg_freep) gpu_kmsg *k = NULL;
        struct stat st;
        int r;

        if (!path || !ret)
                return -EINVAL;

        k = calloc(1, sizeof(*k));
        if (!k)
                return -ENOMEM;
        k->fd = -1;
        k->path = strdup(path);
        if (!k->path)
                return -ENOMEM;
        r = kmsg_open_fd(path, O_RDONLY, &st);
        if (r < 0)
                return r;
        k->fd = r;

        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        if (S_ISFIFO(st.st_mode)) {
                r = kmsg_reopen_fifo(k, &st);
                if (r < 0)
                        return r;
        } else if (!S_ISCHR(st.st_mode) && !S_ISREG(st.st_mode))
                return -EINVAL;
        k->records = S_ISCHR(st.st_mode);

        *ret = KDP_TAKE_PTR(k);
        return 0;
}

gpu_kmsg *gpu_kmsg_free(gpu_kmsg *k) {
        if (!k)
                return NULL;
        if (k->fd >= 0)
                (void) close(k->fd);
        free(k->path);
        free(k);
        return NULL;
}

int gpu_kmsg_fd(const gpu_kmsg *k) {
        return k ? k->fd : -EINVAL;
}

uint64_t gpu_kmsg_lost(const gpu_kmsg *k) {
        return k ? k->lost : 0;
}
