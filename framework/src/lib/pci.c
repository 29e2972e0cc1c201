/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * PCI discovery (see <kdp/pci.h>): libpci's sysfs method under a configurable
 * root, plus the sysfs facts libpci does not fill.
 *
 * Enumeration is ours, filling is libpci's. We list <root>/bus/pci/devices
 * ourselves, in name order, and have libpci (method PCI_ACCESS_SYS_BUS_PCI,
 * sysfs.path = <root>/bus/pci) fill one pci_get_dev() device at a time inside
 * a guard. libpci reports every failure ("Cannot open .../vendor", out of
 * memory) through a->error, which must not return; ours longjmps back to the
 * guard of the device being filled, so a bad entry costs that entry only.
 * pci_scan_bus() is not used: an error inside its readdir loop would end the
 * whole scan and leak its DIR and the half-made device.
 *
 * The guard pointer is this file's one mutable static: libpci's hooks get no
 * user pointer, so the hook finds its guard there. It is thread-local, so
 * scans on different threads never share it.
 *
 * A skipped entry is warned about through the backend's skip log (skip-log.h)
 * in one of two scopes: SCOPE_DEVICES for PCI functions that could not be
 * read, by address, and SCOPE_ENTRIES for entries that are no PCI address, by
 * name; the class devices of a function in a scope of their own.
 *
 * From libpci (PCI_FILL_*): vendor and device IDs, NUMA node, driver, IOMMU
 * group. Read here: the 24-bit class (libpci keeps 16 bits), subsystem IDs,
 * SR-IOV, physfn, the sysfs path and the parent; and the driver and IOMMU
 * group again from the bare link when libpci could not resolve it (a fixture
 * or umockdev tree whose link targets outside devices/ are dangling).
 */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pci/pci.h>

#include <kdp/cleanup.h>
#include <kdp/log.h>
#include <kdp/pci.h>

#include "backend-ctx.h"
#include "skip-log.h"
#include "sysfs.h"

#define PCI_FILL_FLAGS \
        (PCI_FILL_IDENT | PCI_FILL_CLASS | PCI_FILL_NUMA_NODE | PCI_FILL_DRIVER | PCI_FILL_IOMMU_GROUP)
#define PCI_CLASS_BRIDGE_PCI_24 0x0604  /* class >> 8 of a PCI-to-PCI bridge */
#define SCOPE_DEVICES "pci"
#define SCOPE_ENTRIES "pci-entries"

struct kdp_pci_list {
        kdp_pci_device *devices;
        size_t n;
        size_t allocated;
        kdp_pci_skipped *skipped;
        size_t n_skipped;
        size_t allocated_skipped;
};

KDP_DEFINE_CLEANUP_FUNC(kdp_pci_list, kdp_pci_list_free)
KDP_DEFINE_CLEANUP_FUNC(struct pci_access, pci_cleanup)

/* ---- addresses ---- */

typedef struct pci_bdf {
        uint32_t domain;
        unsigned bus, dev, fn;
} pci_bdf;

static int hex_digit(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/*
 * "dddd:bb:dd.f" with 4 to 8 hex digits of domain, either case. The domain is
 * at most 0x7fffffff (libpci keeps it in an int), the device at most 0x1f.
 */
static bool bdf_parse(const char *s, pci_bdf *ret) {
        uint32_t domain = 0;
        size_t n = 0;
        int h[4];

        for (; n < 8 && hex_digit(s[n]) >= 0; n++)
                domain = domain * 16 + (uint32_t) hex_digit(s[n]);
        if (n < 4 || s[n] != ':' || domain > 0x7fffffff)
                return false;
        s += n + 1;
        h[0] = hex_digit(s[0]);
        h[1] = hex_digit(s[1]);
        h[2] = hex_digit(s[3]);
        h[3] = hex_digit(s[4]);
        if (h[0] < 0 || h[1] < 0 || s[2] != ':' || h[2] < 0 || h[3] < 0 || s[5] != '.' || s[6] < '0' ||
            s[6] > '7' || s[7] != '\0')
                return false;
        if (h[2] * 16 + h[3] > 0x1f)
                return false;

        *ret = (pci_bdf){
                .domain = domain,
                .bus = (unsigned) (h[0] * 16 + h[1]),
                .dev = (unsigned) (h[2] * 16 + h[3]),
                .fn = (unsigned) (s[6] - '0'),
        };
        return true;
}

static void bdf_format(const pci_bdf *b, char buf[static KDP_PCI_ADDRESS_MAX]) {
        (void) snprintf(buf, KDP_PCI_ADDRESS_MAX, "%04x:%02x:%02x.%x", b->domain, b->bus, b->dev, b->fn);
}

/* True if `s` is a PCI address exactly as the kernel prints it (lower case, 4+ digit domain). */
static bool bdf_canonical(const char *s, pci_bdf *ret) {
        char buf[KDP_PCI_ADDRESS_MAX];
        pci_bdf b;

        if (!bdf_parse(s, &b))
                return false;
        bdf_format(&b, buf);
        if (strcmp(buf, s) != 0)
                return false;
        if (ret)
                *ret = b;
        return true;
}

static int bdf_compare(const pci_bdf *a, const pci_bdf *b) {
        if (a->domain != b->domain)
                return a->domain < b->domain ? -1 : 1;
        if (a->bus != b->bus)
                return a->bus < b->bus ? -1 : 1;
        if (a->dev != b->dev)
                return a->dev < b->dev ? -1 : 1;
        if (a->fn != b->fn)
                return a->fn < b->fn ? -1 : 1;
        return 0;
}


/* ---- reading sysfs ---- */

/* "0x10de" or "10de", at most `max`. */
static int parse_hex(const char *s, uint32_t max, uint32_t *ret) {
        unsigned long v;
        char *end;

        if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
                s += 2;
        if (hex_digit(*s) < 0)
                return -EBADMSG;
        errno = 0;
        v = strtoul(s, &end, 16);
        if (errno != 0 || *end != '\0' || v > max)
                return -EBADMSG;
        *ret = (uint32_t) v;
        return 0;
}

/* Unsigned decimal, at most INT_MAX. */
static int parse_uint(const char *s, int *ret) {
        unsigned long v;
        char *end;

        if (*s < '0' || *s > '9')
                return -EBADMSG;
        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno != 0 || *end != '\0' || v > INT_MAX)
                return -EBADMSG;
        *ret = (int) v;
        return 0;
}

static int read_hex_at(int dirfd, const char *name, uint32_t max, uint32_t *ret) {
        _cleanup_free_ char *s = NULL;
        int r;

        r = kdp_sysfs_read_text_at(dirfd, name, &s);
        if (r < 0)
                return r;
        return parse_hex(s, max, ret);
}

static int read_uint_at(int dirfd, const char *name, int *ret) {
        _cleanup_free_ char *s = NULL;
        int r;

        r = kdp_sysfs_read_text_at(dirfd, name, &s);
        if (r < 0)
                return r;
        return parse_uint(s, ret);
}

/* ---- libpci, behind a guard ---- */

typedef struct pci_guard {
        jmp_buf env;
        char message[512];
} pci_guard;

static _Thread_local pci_guard *pci_guard_current;

static void pci_error_hook(char *msg, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void pci_warning_hook(char *msg, ...) __attribute__((format(printf, 1, 2)));
static void pci_debug_hook(char *msg, ...) __attribute__((format(printf, 1, 2)));

/* libpci's a->error: never returns, never exits; jumps back to the guard of the running call. */
static void pci_error_hook(char *msg, ...) {
        pci_guard *g = pci_guard_current;
        va_list ap;

        assert(g);      /* every libpci call in this file runs inside a guard */
        va_start(ap, msg);
        (void) vsnprintf(g->message, sizeof(g->message), msg, ap);
        va_end(ap);
        longjmp(g->env, 1);
}

/* libpci's a->warning (e.g. "Cannot open .../config" in a tree without config space). */
static void pci_warning_hook(char *msg, ...) {
        char buf[512];
        va_list ap;

        if (kdp_log_get_verbosity() < 4)
                return;
        va_start(ap, msg);
        (void) vsnprintf(buf, sizeof(buf), msg, ap);
        va_end(ap);
        kdp_log_v(4, "Ignored libpci warning", KDP_F_STR("message", buf));
}

static void pci_debug_hook(char *msg, ...) {
}

/* pci_alloc() + pci_init() for the sysfs method at `bus_dir` ("<root>/bus/pci"). */
static int pci_access_new(char *bus_dir, struct pci_access **ret) {
        pci_guard *prev = pci_guard_current;
        struct pci_access *volatile a = NULL;
        pci_guard g;

        if (setjmp(g.env) != 0) {
                pci_guard_current = prev;
                if (a)
                        pci_cleanup(a);
                kdp_log_v(4, "Failed to set up libpci", KDP_F_STR("path", bus_dir), KDP_F_STR("reason", g.message));
                return -EIO;
        }
        pci_guard_current = &g;

        a = pci_alloc();
        if (!a) {
                pci_guard_current = prev;
                return -ENOMEM;
        }
        a->method = PCI_ACCESS_SYS_BUS_PCI;
        a->error = pci_error_hook;
        a->warning = pci_warning_hook;
        a->debug = pci_debug_hook;
        if (pci_set_param(a, "sysfs.path", bus_dir) < 0) {
                pci_cleanup(a);
                pci_guard_current = prev;
                return -EOPNOTSUPP;
        }
        pci_init(a);

        pci_guard_current = prev;
        *ret = a;
        return 0;
}

/*
 * libpci's part of one device: IDs, NUMA node, driver, IOMMU group. On a
 * libpci error returns -EIO with libpci's message in `reason`.
 */
static int pci_fill_libpci(struct pci_access *a, const pci_bdf *b, kdp_pci_device *out, char *reason,
                           size_t reason_size) {
        pci_guard *prev = pci_guard_current;
        struct pci_dev *volatile d = NULL;
        volatile bool driver_too_long = false;
        const char *s;
        pci_guard g;

        if (setjmp(g.env) != 0) {
                pci_guard_current = prev;
                if (d)
                        pci_free_dev(d);
                (void) snprintf(reason, reason_size, "%s", g.message);
                return -EIO;
        }
        pci_guard_current = &g;

        d = pci_get_dev(a, (int) b->domain, (int) b->bus, (int) b->dev, (int) b->fn);
        (void) pci_fill_info(d, PCI_FILL_FLAGS);
        out->vendor_id = d->vendor_id;
        out->device_id = d->device_id;
        out->numa_node = d->numa_node >= 0 ? d->numa_node : -1;

        s = pci_get_string_property(d, PCI_FILL_DRIVER);
        if (s && strlen(s) >= sizeof(out->driver))
                driver_too_long = true;
        else if (s)
                strcpy(out->driver, s);

        out->iommu_group = -1;
        s = pci_get_string_property(d, PCI_FILL_IOMMU_GROUP);
        if (s && parse_uint(s, &out->iommu_group) < 0)
                out->iommu_group = -1;

        pci_free_dev(d);
        pci_guard_current = prev;

        if (driver_too_long) {
                (void) snprintf(reason, reason_size, "driver name too long");
                return -ENAMETOOLONG;
        }
        return 0;
}

/* ---- one device ---- */

/* path: the realpath below its last "/devices/"; parent: the component before the device, if a PCI address. */
static int pci_set_path(const char *real, kdp_pci_device *dev) {
        const char *tail = NULL, *last, *start;
        size_t len;

        for (const char *p = real; (p = strstr(p, "/devices/")); p++)
                tail = p + strlen("/devices/");
        if (!tail)
                tail = "";
        len = strlen(tail);
        if (len >= sizeof(dev->path))
                return -ENAMETOOLONG;
        memcpy(dev->path, tail, len + 1);

        last = strrchr(dev->path, '/');
        if (!last)
                return 0;
        start = last;
        while (start > dev->path && start[-1] != '/')
                start--;
        len = (size_t) (last - start);
        if (len < KDP_PCI_ADDRESS_MAX) {
                char parent[KDP_PCI_ADDRESS_MAX];

                memcpy(parent, start, len);
                parent[len] = '\0';
                if (bdf_canonical(parent, NULL))
                        memcpy(dev->parent, parent, len + 1);
        }
        return 0;
}

/* The sysfs facts libpci does not give. Returns <0 naming the file that failed in *ret_file. */
static int pci_fill_sysfs(int dirfd, kdp_pci_device *dev, const char **ret_file) {
        char buf[64];
        uint32_t v;
        int r;

        /* libpci reads a missing numa_node as -1; whether it was missing matters (kdp_pci_numa_node()) */
        dev->numa_node_absent = dev->numa_node < 0 && faccessat(dirfd, "numa_node", F_OK, 0) < 0 && errno == ENOENT;

        *ret_file = "class";
        r = read_hex_at(dirfd, "class", 0xffffff, &dev->class_code);
        if (r < 0)
                return r;
        dev->is_bridge = (dev->class_code >> 8) == PCI_CLASS_BRIDGE_PCI_24;

        *ret_file = "subsystem_vendor";
        r = read_hex_at(dirfd, "subsystem_vendor", 0xffff, &v);
        if (r < 0 && r != -ENOENT)
                return r;
        dev->subsystem_vendor_id = r < 0 ? 0 : (uint16_t) v;
        *ret_file = "subsystem_device";
        r = read_hex_at(dirfd, "subsystem_device", 0xffff, &v);
        if (r < 0 && r != -ENOENT)
                return r;
        dev->subsystem_device_id = r < 0 ? 0 : (uint16_t) v;

        *ret_file = "sriov_totalvfs";
        r = read_uint_at(dirfd, "sriov_totalvfs", &dev->sriov_totalvfs);
        if (r == -ENOENT)
                dev->sriov_totalvfs = -1;
        else if (r < 0)
                return r;
        *ret_file = "sriov_numvfs";
        r = read_uint_at(dirfd, "sriov_numvfs", &dev->sriov_numvfs);
        if (r == -ENOENT)
                dev->sriov_numvfs = 0;
        else if (r < 0)
                return r;

        /* a physfn that is not a link to a PCI address is no physfn */
        if (kdp_sysfs_link_base_at(dirfd, "physfn", buf, sizeof(buf)) == 0 && bdf_canonical(buf, NULL))
                strcpy(dev->physfn, buf);

        /* libpci resolves the links with realpath(); a dangling one still names the driver and group */
        if (dev->driver[0] == '\0' && kdp_sysfs_link_base_at(dirfd, "driver", buf, sizeof(buf)) == 0)
                strcpy(dev->driver, buf);
        if (dev->iommu_group < 0 && kdp_sysfs_link_base_at(dirfd, "iommu_group", buf, sizeof(buf)) == 0 &&
            parse_uint(buf, &dev->iommu_group) < 0)
                dev->iommu_group = -1;

        *ret_file = NULL;
        return 0;
}

static int pci_list_append(kdp_pci_list *l, const kdp_pci_device *dev) {
        if (l->n == l->allocated) {
                size_t n = l->allocated ? l->allocated * 2 : 64;
                kdp_pci_device *v = reallocarray(l->devices, n, sizeof(*v));

                if (!v)
                        return -ENOMEM;
                l->devices = v;
                l->allocated = n;
        }
        l->devices[l->n++] = *dev;
        return 0;
}

/* One scan: the list it fills, and where its warnings go. */
typedef struct pci_scan {
        kdp_pci_list *list;
        struct pci_access *access;
        const char *devices_dir;        /* <root>/bus/pci/devices */
        kdp_skip_log *skips;            /* the backend's; NULL: warn every time */
        const kdp_log_field *prefix;    /* backend="..."; NULL: none */
} pci_scan;

#define SKIP_WARN(sc, scope, key, err, msg, ...) \
        KDP_SKIP_LOG_WARN((sc)->skips, (scope), (key), (sc)->prefix, (err), (msg), ##__VA_ARGS__)

/* Adds `dev` (its address and IDs as far as read) to the skipped functions, with the reason. Only -ENOMEM. */
static int pci_list_skip(kdp_pci_list *l, const kdp_pci_device *dev, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static int pci_list_skip(kdp_pci_list *l, const kdp_pci_device *dev, const char *fmt, ...) {
        kdp_pci_skipped *k;
        va_list ap;

        if (l->n_skipped == l->allocated_skipped) {
                size_t n = l->allocated_skipped ? l->allocated_skipped * 2 : 8;
                kdp_pci_skipped *v = reallocarray(l->skipped, n, sizeof(*v));

                if (!v)
                        return -ENOMEM;
                l->skipped = v;
                l->allocated_skipped = n;
        }
        k = &l->skipped[l->n_skipped++];
        *k = (kdp_pci_skipped){ .vendor_id = dev->vendor_id, .device_id = dev->device_id };
        memcpy(k->address, dev->address, sizeof(k->address));
        va_start(ap, fmt);
        (void) vsnprintf(k->reason, sizeof(k->reason), fmt, ap);
        va_end(ap);
        return 0;
}

/*
 * A function whose sysfs directory cannot be opened (error r): one that vanished mid-scan (its link
 * dangles: a hot-unplug in progress) is gone, not skipped; any other error makes it skipped.
 */
static int pci_skip_unopened(kdp_pci_list *l, const kdp_pci_device *dev, int r) {
        if (r == -ENOENT || r == -ENOTDIR)
                return 0;
        return pci_list_skip(l, dev, "its sysfs directory cannot be opened: %s", strerror(-r));
}

/* Adds entry `name` of the devices dir to the list, or skips it with a warning. Only -ENOMEM stops the scan. */
static int pci_scan_entry(pci_scan *sc, const char *name) {
        _cleanup_free_ char *link = NULL, *real = NULL;
        _cleanup_close_ int fd = -1;
        kdp_pci_device dev = { .numa_node = -1, .iommu_group = -1, .sriov_totalvfs = -1 };
        const char *file = NULL;
        char reason[512];
        pci_bdf b;
        int r;

        if (!bdf_canonical(name, &b)) {
                SKIP_WARN(sc, SCOPE_ENTRIES, name, 0, "Skipped sysfs entry that is not a PCI address",
                          KDP_F_STR("path", sc->devices_dir), KDP_F_STR("entry", name));
                return 0;
        }
        bdf_format(&b, dev.address);

        if (asprintf(&link, "%s/%s", sc->devices_dir, name) < 0)
                return -ENOMEM;
        real = realpath(link, NULL);
        if (!real) {
                r = -errno;
                if (r == -ENOMEM)
                        return r;
                SKIP_WARN(sc, SCOPE_DEVICES, dev.address, r, "Skipped PCI device",
                          KDP_F_STR("pciAddress", dev.address), KDP_F_STR("path", link));
                return pci_skip_unopened(sc->list, &dev, r);
        }
        fd = open(real, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
                r = -errno;
                SKIP_WARN(sc, SCOPE_DEVICES, dev.address, r, "Skipped PCI device",
                          KDP_F_STR("pciAddress", dev.address), KDP_F_STR("path", real));
                return pci_skip_unopened(sc->list, &dev, r);
        }

        r = pci_fill_libpci(sc->access, &b, &dev, reason, sizeof(reason));
        if (r < 0) {
                SKIP_WARN(sc, SCOPE_DEVICES, dev.address, 0, "Skipped PCI device",
                          KDP_F_STR("pciAddress", dev.address), KDP_F_STR("reason", reason));
                return pci_list_skip(sc->list, &dev, "%s%s", r == -EIO ? "libpci cannot read it: " : "", reason);
        }
        r = pci_set_path(real, &dev);
        if (r < 0) {
                SKIP_WARN(sc, SCOPE_DEVICES, dev.address, r, "Skipped PCI device",
                          KDP_F_STR("pciAddress", dev.address), KDP_F_STR("path", real));
                return pci_list_skip(sc->list, &dev, "its sysfs path is too long");
        }
        r = pci_fill_sysfs(fd, &dev, &file);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                SKIP_WARN(sc, SCOPE_DEVICES, dev.address, r, "Skipped PCI device",
                          KDP_F_STR("pciAddress", dev.address), KDP_F_STR("file", file));
                return pci_list_skip(sc->list, &dev, "its sysfs file %s cannot be read: %s", file, strerror(-r));
        }

        kdp_log_v(4, "Scanned PCI device", KDP_F_STR("pciAddress", dev.address), KDP_F_STR("path", dev.path));
        return pci_list_append(sc->list, &dev);
}

/* kdp_skip_log_ended_fn of SCOPE_DEVICES: after the list is sorted. */
static void pci_device_ended(const char *address, void *userdata) {
        const pci_scan *sc = userdata;

        if (kdp_pci_list_find(sc->list, address))
                KDP_SKIP_LOG_INFO(sc->prefix, "PCI device no longer skipped", KDP_F_STR("pciAddress", address));
        else
                KDP_SKIP_LOG_INFO(sc->prefix, "Skipped PCI device is gone", KDP_F_STR("pciAddress", address));
}

/* kdp_skip_log_ended_fn of SCOPE_ENTRIES: a name never becomes an address, so the entry is gone. */
static void pci_entry_ended(const char *name, void *userdata) {
        const pci_scan *sc = userdata;

        KDP_SKIP_LOG_INFO(sc->prefix, "Skipped sysfs entry is gone", KDP_F_STR("path", sc->devices_dir),
                          KDP_F_STR("entry", name));
}

static int compare_names(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* By address, for kdp_pci_device and kdp_pci_skipped alike (both start with it). */
static int compare_addresses(const void *a, const void *b) {
        pci_bdf bx, by;

        /* every address in a list is canonical */
        (void) bdf_parse(a, &bx);
        (void) bdf_parse(b, &by);
        return bdf_compare(&bx, &by);
}

_Static_assert(offsetof(kdp_pci_device, address) == 0, "kdp_pci_device must start with its address");
_Static_assert(offsetof(kdp_pci_skipped, address) == 0, "kdp_pci_skipped must start with its address");

typedef struct name_list {
        char **v;
        size_t n;
} name_list;

static void name_list_done(name_list *names) {
        for (size_t i = 0; i < names->n; i++)
                free(names->v[i]);
        free(names->v);
}

/* The entry names of `path` but "." ones, sorted, so that a scan (and its warnings) always goes in one order. */
static int read_names(const char *path, name_list *ret) {
        _cleanup_(name_list_done) name_list names = { 0 };
        _cleanup_closedir_ DIR *dir = NULL;
        size_t allocated = 0;
        struct dirent *de;

        dir = opendir(path);
        if (!dir)
                return errno == ENOTDIR ? -ENOENT : -errno;

        for (errno = 0; (de = readdir(dir)); errno = 0) {
                if (de->d_name[0] == '.')
                        continue;
                if (names.n == allocated) {
                        size_t n = allocated ? allocated * 2 : 64;
                        char **v;

                        if (n > KDP_SYSFS_ENTRIES_MAX)
                                return -E2BIG;
                        v = reallocarray(names.v, n, sizeof(*v));
                        if (!v)
                                return -ENOMEM;
                        names.v = v;
                        allocated = n;
                }
                names.v[names.n] = strdup(de->d_name);
                if (!names.v[names.n])
                        return -ENOMEM;
                names.n++;
        }
        if (errno != 0)
                return -errno;

        if (names.n > 0)
                qsort(names.v, names.n, sizeof(*names.v), compare_names);
        *ret = names;
        names = (name_list){ 0 };
        return 0;
}

/* ---- the public API ---- */

/* The scan behind both entry points; `skips` and `prefix` are the backend's, or NULL. */
static int pci_list_scan(const char *sysfs_root, kdp_skip_log *skips, const kdp_log_field *prefix,
                         kdp_pci_list **ret) {
        _cleanup_free_ char *bus_dir = NULL, *devices_dir = NULL;
        _cleanup_(name_list_done) name_list names = { 0 };
        _cleanup_(kdp_pci_list_freep) kdp_pci_list *l = NULL;
        _cleanup_(pci_cleanupp) struct pci_access *a = NULL;
        pci_scan sc;
        int r;

        if (asprintf(&bus_dir, "%s/bus/pci", sysfs_root) < 0 ||
            asprintf(&devices_dir, "%s/bus/pci/devices", sysfs_root) < 0)
                return -ENOMEM;
        sc = (pci_scan){ .devices_dir = devices_dir, .skips = skips, .prefix = prefix };
        kdp_skip_log_begin(skips, SCOPE_DEVICES);
        kdp_skip_log_begin(skips, SCOPE_ENTRIES);
        r = read_names(devices_dir, &names);
        if (r == -ENOENT) {
                /* no PCI bus (any more): whatever was skipped is gone */
                kdp_skip_log_end(skips, SCOPE_DEVICES, pci_device_ended, &sc);
                kdp_skip_log_end(skips, SCOPE_ENTRIES, pci_entry_ended, &sc);
        }
        if (r < 0)
                return r;

        l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        r = pci_access_new(bus_dir, &a);
        if (r < 0)
                return r;

        sc.list = l;
        sc.access = a;
        for (size_t i = 0; i < names.n; i++) {
                r = pci_scan_entry(&sc, names.v[i]);
                if (r < 0)
                        return r;
        }
        if (l->n > 1)
                qsort(l->devices, l->n, sizeof(*l->devices), compare_addresses);
        if (l->n_skipped > 1)
                qsort(l->skipped, l->n_skipped, sizeof(*l->skipped), compare_addresses);
        kdp_skip_log_end(skips, SCOPE_DEVICES, pci_device_ended, &sc);
        kdp_skip_log_end(skips, SCOPE_ENTRIES, pci_entry_ended, &sc);

        *ret = KDP_TAKE_PTR(l);
        return 0;
}

int kdp_pci_list_scan_root(const char *sysfs_root, kdp_pci_list **ret) {
        if (!sysfs_root || !*sysfs_root || !ret)
                return -EINVAL;
        return pci_list_scan(sysfs_root, NULL, NULL, ret);
}

int kdp_pci_list_scan(const kdp_backend_ctx *ctx, kdp_pci_list **ret) {
        _cleanup_free_ char *root = NULL;
        int r;

        if (!ctx || !ret)
                return -EINVAL;
        r = kdp_backend_path(ctx, KDP_PATH_SYSFS, "", &root);
        if (r < 0)
                return r;
        return pci_list_scan(root, ctx->skips, kdp_backend_log_field(ctx), ret);
}

kdp_pci_list *kdp_pci_list_free(kdp_pci_list *l) {
        if (!l)
                return NULL;
        free(l->devices);
        free(l->skipped);
        free(l);
        return NULL;
}

int kdp_pci_list_cache_refresh(const kdp_backend_ctx *ctx, kdp_pci_list_cache *c, uint32_t max_age_ms) {
        uint64_t now;
        kdp_pci_list *l = NULL;
        int r;

        if (!ctx || !c)
                return -EINVAL;
        now = kdp_backend_now_usec(ctx) / 1000;
        if (c->listed && !c->dirty && now - c->listed_ms < max_age_ms)
                return 0;
        r = kdp_pci_list_scan(ctx, &l);
        if (r < 0 && r != -ENOENT)
                return r;
        kdp_pci_list_free(c->list);
        c->list = l;                    /* NULL (no PCI bus) counts as empty */
        c->dirty = false;
        c->listed = true;
        c->listed_ms = now;
        return 0;
}

void kdp_pci_list_cache_done(kdp_pci_list_cache *c) {
        if (!c)
                return;
        kdp_pci_list_free(c->list);
        *c = (kdp_pci_list_cache){ 0 };
}

size_t kdp_pci_list_skipped_size(const kdp_pci_list *l) {
        return l ? l->n_skipped : 0;
}

const kdp_pci_skipped *kdp_pci_list_skipped_get(const kdp_pci_list *l, size_t i) {
        if (!l || i >= l->n_skipped)
                return NULL;
        return &l->skipped[i];
}

size_t kdp_pci_list_size(const kdp_pci_list *l) {
        return l ? l->n : 0;
}

const kdp_pci_device *kdp_pci_list_get(const kdp_pci_list *l, size_t i) {
        if (!l || i >= l->n)
                return NULL;
        return &l->devices[i];
}

const kdp_pci_device *kdp_pci_list_find(const kdp_pci_list *l, const char *address) {
        pci_bdf key;
        size_t lo = 0, hi;

        if (!l || !address || !bdf_parse(address, &key))
                return NULL;

        hi = l->n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                pci_bdf b;
                int c;

                (void) bdf_parse(l->devices[mid].address, &b);
                c = bdf_compare(&key, &b);
                if (c == 0)
                        return &l->devices[mid];
                if (c < 0)
                        hi = mid;
                else
                        lo = mid + 1;
        }
        return NULL;
}

int kdp_pci_read_attr(const kdp_backend_ctx *ctx, const char *address, const char *attr, char **ret) {
        _cleanup_free_ char *rel = NULL, *path = NULL;
        int r;

        if (!ctx || !address || !bdf_canonical(address, NULL) || !attr || !*attr || attr[0] == '/' ||
            strstr(attr, "..") || !ret)
                return -EINVAL;

        if (asprintf(&rel, "bus/pci/devices/%s/%s", address, attr) < 0)
                return -ENOMEM;
        r = kdp_backend_path(ctx, KDP_PATH_SYSFS, rel, &path);
        if (r < 0)
                return r;
        r = kdp_sysfs_read_text_at(AT_FDCWD, path, ret);
        return r == -ENOTDIR ? -ENOENT : r;
}

/* children are sorted with kdp_sysfs_compare_names() */
_Static_assert(offsetof(kdp_pci_child, name) == 0, "kdp_pci_child must start with its name");

/* The subsystem directory of one PCI function, as kdp_pci_children() reads it. */
typedef struct child_dir {
        int fd;
        const char *dev_root;
        const char *address;
        const char *scope;              /* of the skip log: this function's class devices of one subsystem */
        kdp_skip_log *skips;
        const kdp_log_field *prefix;
        const kdp_pci_child *children;  /* the result, for child_ended() */
        size_t n_children;
} child_dir;

/* One child `name` of the subsystem directory, or 0 without adding it (not a directory; too long). */
static int child_read(const child_dir *cd, const char *name, kdp_pci_child *ret) {
        _cleanup_free_ char *uevent_path = NULL;
        kdp_pci_child c = { 0 };
        struct stat st;
        int r;

        if (fstatat(cd->fd, name, &st, 0) < 0 || !S_ISDIR(st.st_mode))
                return 0;
        if (strlen(name) >= sizeof(c.name)) {
                KDP_SKIP_LOG_WARN(cd->skips, cd->scope, name, cd->prefix, 0,
                                  "Skipped class device with a too long name",
                                  KDP_F_STR("pciAddress", cd->address), KDP_F_STR("device", name));
                return 0;
        }
        strcpy(c.name, name);

        if (asprintf(&uevent_path, "%s/uevent", name) < 0)
                return -ENOMEM;
        r = kdp_sysfs_devnode_at(cd->fd, uevent_path, cd->dev_root, c.devnode, sizeof(c.devnode));
        if (r == -ENAMETOOLONG) {
                KDP_SKIP_LOG_WARN(cd->skips, cd->scope, name, cd->prefix, 0,
                                  "Skipped class device with a too long node path",
                                  KDP_F_STR("pciAddress", cd->address), KDP_F_STR("device", name));
                return 0;
        }
        if (r < 0)
                return r;

        *ret = c;
        return 1;
}

static int child_read_entry(const char *name, void *elem, void *userdata) {
        return child_read(userdata, name, elem);
}

/* kdp_skip_log_ended_fn of a function's class devices. */
static void child_ended(const char *name, void *userdata) {
        const child_dir *cd = userdata;

        for (size_t i = 0; i < cd->n_children; i++)
                if (strcmp(cd->children[i].name, name) == 0) {
                        KDP_SKIP_LOG_INFO(cd->prefix, "Class device no longer skipped",
                                          KDP_F_STR("pciAddress", cd->address), KDP_F_STR("device", name));
                        return;
                }
        KDP_SKIP_LOG_INFO(cd->prefix, "Skipped class device is gone", KDP_F_STR("pciAddress", cd->address),
                          KDP_F_STR("device", name));
}

int kdp_pci_children(const kdp_backend_ctx *ctx, const char *address, const char *subsystem,
                     kdp_pci_child **ret, size_t *ret_n) {
        _cleanup_free_ char *rel = NULL, *dev_path = NULL, *dev_root = NULL, *scope = NULL;
        _cleanup_free_ kdp_pci_child *children = NULL;
        _cleanup_closedir_ DIR *dir = NULL;
        _cleanup_close_ int dfd = -1, sfd = -1;
        child_dir cd;
        size_t n = 0;
        int r;

        if (!ctx || !address || !bdf_canonical(address, NULL) || !kdp_sysfs_name_valid(subsystem) || !ret || !ret_n)
                return -EINVAL;

        if (asprintf(&rel, "bus/pci/devices/%s", address) < 0 || asprintf(&scope, "pci %s %s", address, subsystem) < 0)
                return -ENOMEM;
        r = kdp_backend_path(ctx, KDP_PATH_SYSFS, rel, &dev_path);
        if (r < 0)
                return r;
        r = kdp_backend_path(ctx, KDP_PATH_DEV, "", &dev_root);
        if (r < 0)
                return r;
        cd = (child_dir){ .fd = -1, .dev_root = dev_root, .address = address, .scope = scope, .skips = ctx->skips,
                          .prefix = kdp_backend_log_field(ctx) };
        kdp_skip_log_begin(cd.skips, scope);

        dfd = open(dev_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0) {
                r = errno == ENOTDIR ? -ENOENT : -errno;
                if (r == -ENOENT)       /* the function is gone, and its class devices with it */
                        kdp_skip_log_end(cd.skips, scope, child_ended, &cd);
                return r;
        }
        sfd = openat(dfd, subsystem, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (sfd < 0) {
                if (errno != ENOENT && errno != ENOTDIR)
                        return -errno;
                kdp_skip_log_end(cd.skips, scope, child_ended, &cd);
                *ret = NULL;            /* the device has no such class devices */
                *ret_n = 0;
                return 0;
        }
        dir = fdopendir(sfd);
        if (!dir)
                return -errno;
        sfd = -1;                       /* dir owns it now */

        cd.fd = dirfd(dir);
        r = kdp_sysfs_collect(dir, sizeof(kdp_pci_child), child_read_entry, &cd, (void **) &children, &n);
        if (r < 0)
                return r;
        cd.children = children;
        cd.n_children = n;
        kdp_skip_log_end(cd.skips, scope, child_ended, &cd);

        *ret = KDP_TAKE_PTR(children);
        *ret_n = n;
        return 0;
}
