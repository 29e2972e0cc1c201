/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * When to read config.json again (sriov.h): inotify on the file's directory, settled, and the
 * file's identity compared at each scan.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kdp/backend.h>
#include <kdp/cleanup.h>

#include "sriov.h"

/* what may change the file: an entry written, created, renamed in or out, removed, chmod'ed */
#define DIR_EVENTS                                                                                   \
        (IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_ATTRIB |           \
         IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

/* The file as last read: another dev, inode, size, mtime or ctime is another file. */
typedef struct file_id {
        dev_t dev;
        ino_t ino;
        off_t size;
        struct timespec mtime, ctime;
        int error;                              /* stat()'s -errno, 0 when it worked */
} file_id;

struct sriov_watch {
        kdp_backend_ctx *ctx;
        kdp_backend_fd_fn on_fd;
        char *path;
        char *dir;                              /* the directory watched: path's */
        char *base;                             /* path's last component */
        char head[NAME_MAX + 1];                /* the first component of path's symlink target in dir ("..data"); "" */
        int fd;                                 /* inotify; -1 while not watching */
        bool watched;                           /* fd is on kdpd's loop */
        int error;                              /* why the last try to watch failed; 0 */
        bool pending;                           /* an event named the file: read it once settled */
        uint64_t due_usec;                      /* ... at this time (the backend's clock) */
        file_id id;
};

static file_id file_id_of(const char *path) {
        struct stat st;

        if (stat(path, &st) < 0)
                return (file_id){ .error = -errno };
        return (file_id){ .dev = st.st_dev, .ino = st.st_ino, .size = st.st_size, .mtime = st.st_mtim,
                          .ctime = st.st_ctim };
}

static bool file_id_equal(const file_id *a, const file_id *b) {
        return a->error == b->error && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
               a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
               a->ctime.tv_sec == b->ctime.tv_sec && a->ctime.tv_nsec == b->ctime.tv_nsec;
}

/* path's symlink target, when relative and below dir: its first component; else "". */
static void read_head(sriov_watch *w) {
        char target[PATH_MAX];
        ssize_t n = readlink(w->path, target, sizeof(target) - 1);
        size_t len;

        w->head[0] = '\0';
        if (n <= 0 || target[0] == '/')
                return;
        target[n] = '\0';
        len = strcspn(target, "/");
        if (len == 0 || len > NAME_MAX || (len == 1 && target[0] == '.') ||
            (len == 2 && target[0] == '.' && target[1] == '.'))
                return;
        memcpy(w->head, target, len);
        w->head[len] = '\0';
}

static void watch_close(sriov_watch *w) {
        if (w->fd < 0)
                return;
        if (w->watched)
                kdp_backend_unwatch_fd(w->ctx, w->fd);
        w->watched = false;
        (void) close(w->fd);
        w->fd = -1;
}

/* Watches the directory; a failure is logged when it starts or changes, and the recovery too. */
static void watch_open(sriov_watch *w) {
        int r = 0;

        if (w->fd >= 0)
                return;
        w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (w->fd < 0)
                r = -errno;
        else if (inotify_add_watch(w->fd, w->dir, DIR_EVENTS) < 0)
                r = -errno;
        else {
                r = kdp_backend_watch_fd(w->ctx, w->fd, w->on_fd);
                w->watched = r == 0;
                if (r == -EOPNOTSUPP)
                        r = 0;          /* no kdpd loop (tools): the caller dispatches */
        }
        if (r < 0) {
                watch_close(w);
                if (r != w->error)
                        kdp_backend_log_warning(w->ctx, "Cannot watch the config file's directory: its changes are seen at scans",
                                                KDP_F_STR("path", w->dir), KDP_F_STR("err", strerror(-r)));
                w->error = r;
                return;
        }
        if (w->error)
                kdp_backend_log_info(w->ctx, "Watching the config file's directory again", KDP_F_STR("path", w->dir));
        w->error = 0;
        read_head(w);
}

static bool names_the_file(const sriov_watch *w, const char *name) {
        return strcmp(name, w->base) == 0 || (w->head[0] && strcmp(name, w->head) == 0);
}

int sriov_watch_new(kdp_backend_ctx *ctx, const char *path, kdp_backend_fd_fn on_fd, sriov_watch **ret) {
        _cleanup_(sriov_watch_freep) sriov_watch *w = calloc(1, sizeof(*w));
        const char *slash;

        if (!w)
                return -ENOMEM;
        w->ctx = ctx;
        w->on_fd = on_fd;
        w->fd = -1;
        slash = strrchr(path, '/');
        w->path = strdup(path);
        w->dir = slash == path ? strdup("/") : slash ? strndup(path, (size_t) (slash - path)) : strdup(".");
        w->base = strdup(slash ? slash + 1 : path);
        if (!w->path || !w->dir || !w->base)
                return -ENOMEM;
        w->id = file_id_of(path);
        watch_open(w);
        *ret = KDP_TAKE_PTR(w);
        return 0;
}

sriov_watch *sriov_watch_free(sriov_watch *w) {
        if (!w)
                return NULL;
        watch_close(w);
        free(w->path);
        free(w->dir);
        free(w->base);
        free(w);
        return NULL;
}

int sriov_watch_fd(const sriov_watch *w) {
        return w->fd;
}

/* An event that may have changed the file: it is read once SRIOV_WATCH_SETTLE_MS passed without another. */
static void settle(sriov_watch *w) {
        w->pending = true;
        w->due_usec = kdp_backend_now_usec(w->ctx) + (uint64_t) SRIOV_WATCH_SETTLE_MS * 1000;
        (void) kdp_backend_rescan_after(w->ctx, SRIOV_WATCH_SETTLE_MS);
}

int sriov_watch_dispatch(sriov_watch *w) {
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        bool named = false, lost = false;

        while (w->fd >= 0) {
                ssize_t n = read(w->fd, buf, sizeof(buf));

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        lost = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
                        break;
                }
                for (char *p = buf; p < buf + n;) {
                        const struct inotify_event *e = (const struct inotify_event *) p;

                        if (e->mask & IN_Q_OVERFLOW)
                                named = true;
                        if (e->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT))
                                lost = true;
                        if (e->len > 0 && names_the_file(w, e->name))
                                named = true;
                        p += sizeof(*e) + e->len;
                }
        }
        if (lost) {
                /* the directory went (or moved): watch it anew at the next scan, and read the file then */
                kdp_backend_log_warning(w->ctx, "The config file's directory went away: watching it again at the next scan",
                                        KDP_F_STR("path", w->dir));
                watch_close(w);
                w->error = -ENOENT;
                named = true;
        }
        if (named)
                settle(w);
        return 0;
}

bool sriov_watch_unchanged(sriov_watch *w) {
        file_id id = file_id_of(w->path);

        if (w->fd >= 0)
                (void) sriov_watch_dispatch(w);
        return !w->pending && file_id_equal(&id, &w->id);
}

const char *sriov_watch_check(sriov_watch *w, bool asked) {
        file_id id;

        watch_open(w);
        /*
         * The file's identity first, the waiting events next: a change in the watched directory
         * that this stat() sees has its event read below, and is the watch's (read once settled).
         */
        id = file_id_of(w->path);
        if (w->fd >= 0)
                (void) sriov_watch_dispatch(w);
        if (asked) {
                w->pending = false;
                w->id = file_id_of(w->path);
                read_head(w);
                return "SIGHUP";
        }
        if (w->pending) {
                if (kdp_backend_now_usec(w->ctx) < w->due_usec)
                        return NULL;            /* not settled: the rescan asked for reads it */
                w->pending = false;
                w->id = file_id_of(w->path);
                read_head(w);
                return "inotify";
        }
        if (file_id_equal(&id, &w->id))
                return NULL;
        w->id = id;
        read_head(w);
        return "scan";
}
