/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The devices of one sysfs subsystem (see <kdp/subsystem.h>).
 *
 * Each entry of class/<subsystem>/ or bus/<subsystem>/devices/ is resolved
 * with realpath() and read through an O_PATH descriptor of the device
 * directory, so a device that goes away between readdir() and the reads
 * costs only that entry. The PCI function of a device is found the way the
 * kernel defines it: a directory on its path that bus/pci/devices/ links to
 * (compared by inode), so no PCI address parsing is needed and a fixture tree
 * works as /sys does.
 *
 * An entry skipped with a warning is reported through the backend's skip log
 * (skip-log.h), in the scope "subsystem <name>", so a steady problem is
 * logged when it starts and when it ends, not on every enumeration.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kdp/cleanup.h>
#include <kdp/log.h>
#include <kdp/subsystem.h>

#include "backend-ctx.h"
#include "skip-log.h"
#include "sysfs.h"


/* devices are sorted with kdp_sysfs_compare_names() */
_Static_assert(offsetof(kdp_subsystem_device, name) == 0, "kdp_subsystem_device must start with its name");

/*
 * Opens <sysfs_root>/class/<subsystem>, else <sysfs_root>/bus/<subsystem>/devices, and returns the
 * directory and its path. 0 with *ret NULL when neither exists.
 */
static int subsystem_open(const char *sysfs_root, const char *subsystem, DIR **ret, char **ret_path) {
        for (int bus = 0; bus <= 1; bus++) {
                _cleanup_free_ char *path = NULL;
                DIR *dir;
                int n;

                n = bus ? asprintf(&path, "%s/bus/%s/devices", sysfs_root, subsystem)
                        : asprintf(&path, "%s/class/%s", sysfs_root, subsystem);
                if (n < 0)
                        return -ENOMEM;
                dir = opendir(path);
                if (!dir) {
                        if (errno == ENOENT || errno == ENOTDIR)
                                continue;
                        return -errno;
                }
                *ret = dir;
                *ret_path = KDP_TAKE_PTR(path);
                return 0;
        }
        *ret = NULL;
        *ret_path = NULL;
        return 0;
}

/*
 * The last component of real's `tail` (real's part below devices/) that
 * <sysfs_root>/bus/pci/devices/ links to, into buf; "" if none.
 */
static int device_find_pci(const char *sysfs_root, const char *real, const char *tail,
                           char buf[static KDP_PCI_ADDRESS_MAX]) {
        _cleanup_free_ char *prefix = strdup(real);
        size_t head = (size_t) (tail - real), end = strlen(real);

        if (!prefix)
                return -ENOMEM;
        buf[0] = '\0';

        while (end > head) {
                size_t start = end;

                while (start > head && prefix[start - 1] != '/')
                        start--;
                if (end - start < KDP_PCI_ADDRESS_MAX) {
                        char link[PATH_MAX];
                        struct stat ls, ds;
                        int n;

                        prefix[end] = '\0';
                        n = snprintf(link, sizeof(link), "%s/bus/pci/devices/%s", sysfs_root, prefix + start);
                        if (n > 0 && (size_t) n < sizeof(link) && stat(link, &ls) == 0 && stat(prefix, &ds) == 0 &&
                            ls.st_dev == ds.st_dev && ls.st_ino == ds.st_ino) {
                                memcpy(buf, prefix + start, end - start + 1);
                                return 0;
                        }
                }
                if (start == head)
                        break;
                end = start - 1;        /* the '/' before this component */
        }
        return 0;
}

/* One enumeration of one subsystem. */
typedef struct subsystem_dir {
        const char *sysfs_root, *dev_root, *subsystem;
        const char *path;                       /* the class or bus directory; NULL without either */
        const char *scope;                      /* of the skip log */
        kdp_skip_log *skips;
        const kdp_log_field *prefix;            /* backend="..." */
        const kdp_subsystem_device *devices;    /* the result, for device_ended() */
        size_t n_devices;
} subsystem_dir;

#define SKIP_WARN(sd, name, msg, ...) \
        KDP_SKIP_LOG_WARN((sd)->skips, (sd)->scope, (name), (sd)->prefix, 0, (msg), ##__VA_ARGS__)

/*
 * Entry `name` of the subsystem directory into *ret: 1 if read, 0 if skipped (vanished, not a device
 * directory, a field too long). Only -ENOMEM stops the enumeration.
 */
static int device_read(const subsystem_dir *sd, const char *name, kdp_subsystem_device *ret) {
        _cleanup_free_ char *link = NULL, *real = NULL;
        _cleanup_close_ int fd = -1;
        kdp_subsystem_device d = { 0 };
        const char *tail = NULL;
        size_t len;
        int r;

        if (strlen(name) >= sizeof(d.name)) {
                SKIP_WARN(sd, name, "Skipped device with a too long name", KDP_F_STR("path", sd->path),
                          KDP_F_STR("device", name));
                return 0;
        }
        strcpy(d.name, name);

        if (asprintf(&link, "%s/%s", sd->path, name) < 0)
                return -ENOMEM;
        real = realpath(link, NULL);
        if (!real) {
                if (errno == ENOMEM)
                        return -ENOMEM;
                kdp_log_v(4, "Skipped vanished device", KDP_F_STR("path", link), KDP_F_STR("err", strerror(errno)));
                return 0;
        }
        fd = open(real, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
                kdp_log_v(4, "Skipped vanished device", KDP_F_STR("path", real), KDP_F_STR("err", strerror(errno)));
                return 0;
        }

        for (const char *p = real; (p = strstr(p, "/devices/")); p++)
                tail = p + strlen("/devices/");
        if (!tail)
                tail = real + strlen(real);
        len = strlen(tail);
        if (len >= sizeof(d.devpath)) {
                SKIP_WARN(sd, name, "Skipped device with a too long path", KDP_F_STR("device", name),
                          KDP_F_STR("path", real));
                return 0;
        }
        memcpy(d.devpath, tail, len + 1);

        r = kdp_sysfs_devnode_at(fd, "uevent", sd->dev_root, d.devnode, sizeof(d.devnode));
        if (r == -ENOMEM)
                return r;
        if (r == -ENAMETOOLONG) {
                SKIP_WARN(sd, name, "Skipped device with a too long node path", KDP_F_STR("device", name),
                          KDP_F_STR("path", real));
                return 0;
        }
        if (r < 0) {
                kdp_log_v(4, "Skipped vanished device", KDP_F_STR("path", real), KDP_F_STR("err", strerror(-r)));
                return 0;
        }

        r = kdp_sysfs_link_base_at(fd, "driver", d.driver, sizeof(d.driver));
        if (r == -ENAMETOOLONG) {
                SKIP_WARN(sd, name, "Skipped device with a too long driver name", KDP_F_STR("device", name),
                          KDP_F_STR("path", real));
                return 0;
        }
        if (r < 0)
                d.driver[0] = '\0';     /* unbound: no link (or no link but a file) */

        r = device_find_pci(sd->sysfs_root, real, tail, d.pci_address);
        if (r < 0)
                return r;

        kdp_log_v(4, "Scanned device", KDP_F_STR("device", d.name), KDP_F_STR("path", d.devpath),
                  KDP_F_STR("pciAddress", d.pci_address));
        *ret = d;
        return 1;
}

static int device_read_entry(const char *name, void *elem, void *userdata) {
        return device_read(userdata, name, elem);
}

/* kdp_skip_log_ended_fn of one subsystem. */
static void device_ended(const char *name, void *userdata) {
        const subsystem_dir *sd = userdata;

        for (size_t i = 0; i < sd->n_devices; i++)
                if (strcmp(sd->devices[i].name, name) == 0) {
                        KDP_SKIP_LOG_INFO(sd->prefix, "Device no longer skipped",
                                          KDP_F_STR("subsystem", sd->subsystem), KDP_F_STR("device", name));
                        return;
                }
        KDP_SKIP_LOG_INFO(sd->prefix, "Skipped device is gone", KDP_F_STR("subsystem", sd->subsystem),
                          KDP_F_STR("device", name));
}

int kdp_subsystem_enumerate(const kdp_backend_ctx *ctx, const char *subsystem, kdp_subsystem_device **ret,
                            size_t *ret_n) {
        _cleanup_free_ char *sysfs_root = NULL, *dev_root = NULL, *dir_path = NULL, *scope = NULL;
        _cleanup_free_ kdp_subsystem_device *devices = NULL;
        _cleanup_closedir_ DIR *dir = NULL;
        subsystem_dir sd;
        size_t n = 0;
        int r;

        if (!ctx || !kdp_sysfs_name_valid(subsystem) || !ret || !ret_n)
                return -EINVAL;

        if (asprintf(&scope, "subsystem %s", subsystem) < 0)
                return -ENOMEM;
        r = kdp_backend_path(ctx, KDP_PATH_SYSFS, "", &sysfs_root);
        if (r < 0)
                return r;
        r = kdp_backend_path(ctx, KDP_PATH_DEV, "", &dev_root);
        if (r < 0)
                return r;
        r = subsystem_open(sysfs_root, subsystem, &dir, &dir_path);
        if (r < 0)
                return r;

        sd = (subsystem_dir){ .sysfs_root = sysfs_root, .dev_root = dev_root, .subsystem = subsystem,
                              .path = dir_path, .scope = scope, .skips = ctx->skips,
                              .prefix = kdp_backend_log_field(ctx) };
        kdp_skip_log_begin(sd.skips, scope);
        r = kdp_sysfs_collect(dir, sizeof(kdp_subsystem_device), device_read_entry, &sd, (void **) &devices, &n);
        if (r < 0)
                return r;
        sd.devices = devices;
        sd.n_devices = n;
        kdp_skip_log_end(sd.skips, scope, device_ended, &sd);

        *ret = KDP_TAKE_PTR(devices);
        *ret_n = n;
        return 0;
}
