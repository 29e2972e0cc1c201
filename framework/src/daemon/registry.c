/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Backend loading and hook calls (see registry.h).
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kdp/log.h>

#include "registry.h"

#define BACKEND_PREFIX "kdp-backend-"
#define BACKEND_SUFFIX ".so"

static int find_backend(const char *name_or_path, const char *const *dirs, char **ret) {
        if (strchr(name_or_path, '/')) {
                if (access(name_or_path, R_OK) < 0)
                        return -errno;
                *ret = strdup(name_or_path);
                return *ret ? 0 : -ENOMEM;
        }
        for (size_t i = 0; dirs && dirs[i]; i++) {
                char *p;

                if (asprintf(&p, "%s/" BACKEND_PREFIX "%s" BACKEND_SUFFIX, dirs[i], name_or_path) < 0)
                        return -ENOMEM;
                if (access(p, R_OK) == 0) {
                        *ret = p;
                        return 0;
                }
                free(p);
        }
        return -ENOENT;
}

/* "dir/kdp-backend-gpu.so" -> "gpu"; NULL if the file is not so named. */
static char *name_from_path(const char *path) {
        const char *base = strrchr(path, '/');
        size_t n;

        base = base ? base + 1 : path;
        n = strlen(base);
        if (strncmp(base, BACKEND_PREFIX, strlen(BACKEND_PREFIX)) != 0 || n <= strlen(BACKEND_PREFIX) + 3 ||
            strcmp(base + n - 3, BACKEND_SUFFIX) != 0)
                return NULL;
        return strndup(base + strlen(BACKEND_PREFIX), n - strlen(BACKEND_PREFIX) - 3);
}

static int refuse(const char *path, const char *reason, int r) {
        return kdp_log_error(r, "Refused backend", KDP_F_STR("path", path), KDP_F_STR("reason", reason));
}

static int check_ops(const kdp_backend_ops *ops, const char *path) {
        _cleanup_free_ char *file_name = name_from_path(path);

        if (ops->abi_major != KDP_BACKEND_ABI_MAJOR) {
                kdp_log_error(-EPROTO, "Refused backend", KDP_F_STR("path", path),
                              KDP_F_STR("reason", "ABI major version mismatch"),
                              KDP_F_INT("backendAbi", ops->abi_major), KDP_F_INT("kdpAbi", KDP_BACKEND_ABI_MAJOR));
                return -EPROTO;
        }
        if (ops->struct_size < offsetof(kdp_backend_ops, fini) + sizeof(ops->fini))
                return refuse(path, "ops table too small", -EPROTO);
        if (!ops->name || !ops->init || !ops->scan || !ops->fini)
                return refuse(path, "missing required hook (name, init, scan or fini)", -EPROTO);
        if (file_name && strcmp(file_name, ops->name) != 0)
                return refuse(path, "ops name does not match the file name", -EPROTO);
        return 0;
}

static void take_optional_hooks(kdp_backend *b) {
        const kdp_backend_ops *ops = b->ops;

        if (KDP_OPS_HAS(ops, allocate))
                b->allocate = ops->allocate;
        if (KDP_OPS_HAS(ops, preferred))
                b->preferred = ops->preferred;
        if (KDP_OPS_HAS(ops, pre_start))
                b->pre_start = ops->pre_start;
        if (KDP_OPS_HAS(ops, probe))
                b->probe = ops->probe;
        if (KDP_OPS_HAS(ops, probe_interval_ms))
                b->probe_interval_ms = ops->probe_interval_ms;
        if (KDP_OPS_HAS(ops, rescan_interval_ms))
                b->rescan_interval_ms = ops->rescan_interval_ms;
        if (KDP_OPS_HAS(ops, device_event))
                b->device_event = ops->device_event;
        if (KDP_OPS_HAS(ops, reload))
                b->reload = ops->reload;
        if (KDP_OPS_HAS(ops, allocated))
                b->allocated = ops->allocated;
        if (b->probe && b->probe_interval_ms == 0)
                b->probe_interval_ms = 5000;
}

static int open_backend(kdp_backend *b) {
        kdp_backend_entry_fn entry;
        int r;

        b->dl = dlopen(b->path, RTLD_NOW | RTLD_LOCAL);
        if (!b->dl) {
                kdp_log_error(-ELIBBAD, "Refused backend", KDP_F_STR("path", b->path),
                              KDP_F_STR("reason", "dlopen failed"), KDP_F_STR("dlerror", dlerror()));
                return -ELIBBAD;
        }
        *(void **) &entry = dlsym(b->dl, KDP_BACKEND_ENTRY_SYMBOL);
        if (!entry)
                return refuse(b->path, "no " KDP_BACKEND_ENTRY_SYMBOL " symbol", -ENOEXEC);
        b->ops = entry();
        if (!b->ops)
                return refuse(b->path, KDP_BACKEND_ENTRY_SYMBOL " returned NULL", -ENOEXEC);
        r = check_ops(b->ops, b->path);
        if (r < 0)
                return r;
        b->name = strdup(b->ops->name);
        if (!b->name)
                return -ENOMEM;
        take_optional_hooks(b);
        return 0;
}

int kdp_registry_load(const char *name_or_path, const char *const *search_dirs, kdp_backend **ret) {
        _cleanup_(kdp_registry_freep) kdp_backend *b = NULL;
        int r;

        b = calloc(1, sizeof(*b));
        if (!b)
                return -ENOMEM;
        pthread_mutex_init(&b->lock, NULL);
        pthread_cond_init(&b->unlocked, NULL);
        r = find_backend(name_or_path, search_dirs, &b->path);
        if (r < 0)
                return kdp_log_error(r, "Refused backend", KDP_F_STR("backend", name_or_path),
                                     KDP_F_STR("reason", "file not found"));
        r = open_backend(b);
        if (r < 0)
                return r;
        kdp_log_v(2, "Loaded backend", KDP_F_STR("backend", b->name), KDP_F_STR("path", b->path));
        *ret = KDP_TAKE_PTR(b);
        return 0;
}

kdp_backend *kdp_registry_free(kdp_backend *b) {
        if (!b)
                return NULL;
        kdp_registry_stop(b);
        if (b->dl)
                (void) dlclose(b->dl);
        pthread_cond_destroy(&b->unlocked);
        pthread_mutex_destroy(&b->lock);
        free(b->name);
        free(b->path);
        free(b);
        return NULL;
}

static int exe_dir(char **ret) {
        char buf[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
        char *slash;

        if (n < 0)
                return -errno;
        buf[n] = '\0';
        slash = strrchr(buf, '/');
        if (slash)
                *slash = '\0';
        *ret = strdup(buf);
        return *ret ? 0 : -ENOMEM;
}

int kdp_registry_default_dirs(char ***ret) {
        _cleanup_free_ char *dir = NULL;
        char **dirs;
        size_t n = 0;
        int r;

        dirs = calloc(4, sizeof(char *));
        if (!dirs)
                return -ENOMEM;
        r = exe_dir(&dir);
        if (r >= 0) {
                /* the build tree keeps backends in plugins/ beside the binaries */
                if (asprintf(&dirs[n], "%s/plugins", dir) >= 0)
                        n++;
                /* an installed tree, wherever it was installed: <prefix>/bin/kdpd */
                if (asprintf(&dirs[n], "%s/../" KDP_INSTALL_LIBDIR "/kdp/backends", dir) >= 0)
                        n++;
        }
        dirs[n] = strdup(KDP_INSTALL_BACKEND_DIR);
        *ret = dirs;
        return 0;
}

void kdp_registry_set_host(kdp_backend *b, const kdp_backend_host *host, void *data) {
        b->host = host;
        b->host_data = data;
}

/* The backend whose pre_start this thread runs now, with its lock held; NULL otherwise. */
static __thread kdp_backend *pre_start_of;

static int run_unlocked(void *data, kdp_backend_unlocked_fn fn, void *userdata) {
        kdp_backend *b = data;
        int r;

        if (pre_start_of != b)
                return -EPERM;
        pre_start_of = NULL;
        b->n_unlocked++;
        pthread_mutex_unlock(&b->lock);
        r = fn(userdata);
        pthread_mutex_lock(&b->lock);
        if (--b->n_unlocked == 0)
                pthread_cond_broadcast(&b->unlocked);
        pre_start_of = b;
        return r;
}

int kdp_registry_start(kdp_backend *b, const kdp_config *config, const char *const roots[_KDP_PATH_KIND_MAX]) {
        _cleanup_(kdp_backend_ctx_freep) kdp_backend_ctx *ctx = NULL;
        void *state = NULL;
        int r;

        if (b->started)
                return -EALREADY;
        r = kdp_backend_ctx_new(b->name, roots, b->ops->params, config, &ctx);
        if (r < 0)
                return r;
        kdp_backend_ctx_set_host(ctx, b->host, b->host_data);
        kdp_backend_ctx_set_unlocker(ctx, run_unlocked, b);
        pthread_mutex_lock(&b->lock);
        r = b->ops->init(ctx, &state);
        pthread_mutex_unlock(&b->lock);
        if (r < 0)
                return kdp_log_error(r, "Failed to start backend", KDP_F_STR("backend", b->name));
        b->ctx = KDP_TAKE_PTR(ctx);
        b->state = state;
        b->started = true;
        return 0;
}

void kdp_registry_stop(kdp_backend *b) {
        if (!b || !b->started)
                return;
        pthread_mutex_lock(&b->lock);
        b->stopping = true;
        if (b->n_unlocked > 0)
                kdp_log_info("Waiting for PreStartContainer calls before stopping backend",
                             KDP_F_STR("backend", b->name), KDP_F_INT("preStarts", b->n_unlocked));
        while (b->n_unlocked > 0)
                pthread_cond_wait(&b->unlocked, &b->lock);
        b->ops->fini(b->state);
        b->state = NULL;
        b->started = false;
        b->stopping = false;
        pthread_mutex_unlock(&b->lock);
        b->ctx = kdp_backend_ctx_free(b->ctx);
}

static void probe_devices(kdp_backend *b, kdp_device_tree *tree) {
        for (size_t i = 0; i < tree->n_resources; i++) {
                kdp_device_list *l = &tree->resources[i];

                for (size_t j = 0; j < l->n_devices; j++) {
                        kdp_device *d = &l->devices[j];
                        char *reason = NULL;
                        int h = b->probe(b->state, l->resource, d->id, &reason);

                        if (h < 0 || h == KDP_HEALTHY) {
                                free(reason);
                                continue;       /* a failed probe keeps what scan said */
                        }
                        d->health = KDP_UNHEALTHY;
                        free(d->health_reason);
                        d->health_reason = reason ? reason : strdup("probe reported unhealthy");
                }
        }
}

int kdp_registry_scan(kdp_backend *b, const char *sysfs_root, kdp_device_tree **ret) {
        _cleanup_(kdp_device_tree_freep) kdp_device_tree *tree = NULL;
        int r;

        if (!b->started)
                return -ESRCH;
        r = kdp_device_tree_new(sysfs_root, &tree);
        if (r < 0)
                return r;
        pthread_mutex_lock(&b->lock);
        r = b->ops->scan(b->state, tree);
        if (r >= 0 && b->probe)
                probe_devices(b, tree);
        pthread_mutex_unlock(&b->lock);
        if (r < 0)
                return r;       /* the caller logs it, once while it keeps failing */
        kdp_device_tree_finish(tree);
        *ret = KDP_TAKE_PTR(tree);
        return 0;
}

int kdp_registry_allocate(kdp_backend *b, const kdp_alloc_request *req, kdp_alloc_response *resp) {
        int r = -EOPNOTSUPP;

        if (!b->allocate)
                return r;
        pthread_mutex_lock(&b->lock);
        if (b->started)
                r = b->allocate(b->state, req, resp);
        pthread_mutex_unlock(&b->lock);
        return r;
}

int kdp_registry_preferred(kdp_backend *b, const kdp_pref_request *req, kdp_pref_response *resp) {
        int r = -EOPNOTSUPP;

        if (!b->preferred)
                return r;
        pthread_mutex_lock(&b->lock);
        if (b->started)
                r = b->preferred(b->state, req, resp);
        pthread_mutex_unlock(&b->lock);
        return r;
}

int kdp_registry_pre_start(kdp_backend *b, const kdp_prestart_request *req) {
        int r = 0;

        pthread_mutex_lock(&b->lock);
        if (b->stopping)
                r = -EAGAIN;
        else if (b->pre_start && b->started) {
                pre_start_of = b;
                r = b->pre_start(b->state, req);
                pre_start_of = NULL;
        }
        pthread_mutex_unlock(&b->lock);
        return r;
}

void kdp_registry_allocated(kdp_backend *b, const kdp_allocated *a) {
        pthread_mutex_lock(&b->lock);
        if (b->allocated && b->started)
                b->allocated(b->state, a);
        pthread_mutex_unlock(&b->lock);
}

void kdp_registry_device_event(kdp_backend *b, const kdp_device_event *ev) {
        pthread_mutex_lock(&b->lock);
        if (b->device_event && b->started)
                b->device_event(b->state, ev);
        pthread_mutex_unlock(&b->lock);
}

int kdp_registry_reload(kdp_backend *b) {
        int r = -ESRCH;

        pthread_mutex_lock(&b->lock);
        if (!b->reload)
                r = -EOPNOTSUPP;
        else if (b->started) {
                b->reload(b->state);
                r = 0;
        }
        pthread_mutex_unlock(&b->lock);
        return r;
}

int kdp_registry_fd_ready(kdp_backend *b, kdp_backend_fd_fn fn, int fd) {
        int r = -ESRCH;

        pthread_mutex_lock(&b->lock);
        if (b->started)
                r = fn(b->state, fd);
        pthread_mutex_unlock(&b->lock);
        return r;
}
