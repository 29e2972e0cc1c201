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

/*
 * Entry `name` of the subsystem directory `dir_path` into *ret: 1 if read, 0 if skipped (vanished,
 * not a device directory, a field too long). Only -ENOMEM stops the enumeration.
 */
static int device_read(const char *sysfs_root, const char *dev_root, const char *dir_path, const char *name,
                       kdp_subsystem_device *ret) {
        _cleanup_free_ char *link = NULL, *real = NULL;
        _cleanup_close_ int fd = -1;
        kdp_subsystem_device d = { 0 };
        const char *tail = NULL;
        size_t len;
        int r;

        if (strlen(name) >= sizeof(d.name)) {
                kdp_log_warning("Skipped device with a too long name", KDP_F_STR("path", dir_path),
                                KDP_F_STR("device", name));
                return 0;
        }
        strcpy(d.name, name);

        if (asprintf(&link, "%s/%s", dir_path, name) < 0)
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
                kdp_log_warning("Skipped device with a too long path", KDP_F_STR("device", name),
                                KDP_F_STR("path", real));
                return 0;
        }
        memcpy(d.devpath, tail, len + 1);

        r = kdp_sysfs_devnode_at(fd, "uevent", dev_root, d.devnode, sizeof(d.devnode));
        if (r == -ENOMEM)
                return r;
        if (r == -ENAMETOOLONG) {
                kdp_log_warning("Skipped device with a too long node path", KDP_F_STR("device", name),
                                KDP_F_STR("path", real));
                return 0;
        }
        if (r < 0) {
                kdp_log_v(4, "Skipped vanished device", KDP_F_STR("path", real), KDP_F_STR("err", strerror(-r)));
                return 0;
        }

        r = kdp_sysfs_link_base_at(fd, "driver", d.driver, sizeof(d.driver));
        if (r == -ENAMETOOLONG) {
                kdp_log_warning("Skipped device with a too long driver name", KDP_F_STR("device", name),
                                KDP_F_STR("path", real));
                return 0;
        }
        if (r < 0)
                d.driver[0] = '\0';     /* unbound: no link (or no link but a file) */

        r = device_find_pci(sysfs_root, real, tail, d.pci_address);
        if (r < 0)
                return r;

        kdp_log_v(4, "Scanned device", KDP_F_STR("device", d.name), KDP_F_STR("path", d.devpath),
                  KDP_F_STR("pciAddress", d.pci_address));
        *ret = d;
        return 1;
}

typedef struct subsystem_dir {
        const char *sysfs_root, *dev_root, *path;
} subsystem_dir;

static int device_read_entry(const char *name, void *elem, void *userdata) {
        const subsystem_dir *sd = userdata;

        return device_read(sd->sysfs_root, sd->dev_root, sd->path, name, elem);
}

int kdp_subsystem_enumerate(const kdp_backend_ctx *ctx, const char *subsystem, kdp_subsystem_device **ret,
                            size_t *ret_n) {
        _cleanup_free_ char *sysfs_root = NULL, *dev_root = NULL, *dir_path = NULL;
        _cleanup_closedir_ DIR *dir = NULL;
        int r;

        if (!ctx || !kdp_sysfs_name_valid(subsystem) || !ret || !ret_n)
                return -EINVAL;

        r = kdp_backend_path(ctx, KDP_PATH_SYSFS, "", &sysfs_root);
        if (r < 0)
                return r;
        r = kdp_backend_path(ctx, KDP_PATH_DEV, "", &dev_root);
        if (r < 0)
                return r;
        r = subsystem_open(sysfs_root, subsystem, &dir, &dir_path);
        if (r < 0)
                return r;

        return kdp_sysfs_collect(dir, sizeof(kdp_subsystem_device), device_read_entry,
                                 &(subsystem_dir){ sysfs_root, dev_root, dir_path }, (void **) ret, ret_n);
}
