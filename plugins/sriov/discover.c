/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * discover.c: what one PCI function is, as the pools see it (sriov_func, sriov.h).
 *
 * The PCI scan's kdp_pci_device already holds the IDs, class, driver, NUMA node,
 * IOMMU group, physfn and the SR-IOV counts; this module reads the rest, every path
 * under the ctx's sysfs and dev roots, through libkdp's readers (kdp_pci_read_attr()
 * for files below a function, kdp_pci_children() for its class devices):
 *
 *   <PF>/virtfn<N>                      VF index: the link that resolves to this VF (§1, §2)
 *   <PF>/net/<if>[/phys_port_name]      PF name: its one netdev, or, when its net/ holds
 *                                       several (switchdev), the uplink "p<N>"; never a
 *                                       representor "[c<C>]pf<N>vf<M>" / "pf<N>sf<M>" (§10)
 *   <BDF>/net/<if>                      netdev; none (vfio, uio) or an empty net/ (moved into
 *                                       a pod's netns, §6) both give ""
 *   <BDF>/net/<if>/type                 link type: ARPHRD 1 "ether", 32 "infiniband", another
 *                                       number ""; without a netdev, the PF name's
 *   <BDF>/acpi_index                    trimmed; absent ""
 *   <BDF>/iommu_group/name              "vfio-noiommu": a no-IOMMU group (§5)
 *   <BDF>/uio/uio<M>                    uio index M
 *   <BDF>/infiniband/<ibdev>/           RDMA device (the first, in version order); its nodes
 *                                       are the class devices below the function whose ibdev
 *                                       file names it: infiniband_cm/ucm<K>,
 *                                       infiniband_mad/issm<K>, infiniband_mad/umad<K>,
 *                                       infiniband_verbs/uverbs<K>, then the shared
 *                                       <dev>/infiniband/rdma_cm if it exists (§7's order)
 *   <BDF>/infiniband/<ibdev>/ports/1/pkeys/0   pkey, of an "infiniband" function only
 *   bus/vdpa/devices/<name>             a vDPA device whose directory is a child of the
 *                                       function; its driver link: virtio_vdpa "virtio",
 *                                       vhost_vdpa "vhost" with its child vhost-vdpa-<N>,
 *                                       the node /dev/vhost-vdpa-<N>
 *
 * Device node paths (rdma_nodes, vdpa_path) are "/dev/<name>", as a container sees
 * them; on the host the same <name> lies under the dev root.
 *
 * Not read here: the default route (rtnetlink's, not sysfs's; default_route stays
 * false) and the DDP profile (devlink's; ddp_profile stays "").
 *
 * Errors. A file a function may lack leaves its field empty. A function whose sysfs
 * directory is gone (at the start, or once everything is read) gives -ENOENT, as does a
 * VF its PF no longer lists (it is being removed). A file that exists but cannot be read
 * or holds what the kernel never writes gives its -errno (-EBADMSG when malformed), with
 * a reason naming the file.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if_arp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kdp/cleanup.h>

#include "sriov.h"

/* The reason of the last failure on this thread (sriov_discover()'s *ret_why). */
static _Thread_local char why_text[2 * SRIOV_PATH_MAX];

typedef struct discover {
        const kdp_backend_ctx *ctx;
        const char *address;
        char *dir;                      /* <sysfs>/bus/pci/devices/<address> */
        int fd;                         /* O_PATH of that directory, opened at the start */
        const char *why;
} discover;

static void discover_done(discover *d) {
        free(d->dir);
        if (d->fd >= 0)
                (void) close(d->fd);
}

/* r, with a reason; `owner` is "its " or "its PF's ", `what` the rest ("sysfs file net/x/type"). */
static int fail(discover *d, int r, const char *owner, const char *what, const char *name, const char *verdict) {
        (void) snprintf(why_text, sizeof(why_text), "%s%s%s %s", owner, what, name, verdict);
        d->why = why_text;
        return r;
}

static int file_error(discover *d, int r, const char *owner, const char *rel) {
        return fail(d, r, owner, "sysfs file ", rel, r == -EBADMSG ? "is malformed" : "could not be read");
}

static bool function_gone(const discover *d) {
        struct stat st;

        return stat(d->dir, &st) < 0 && (errno == ENOENT || errno == ENOTDIR);
}

/* <address>/<rel> into *ret, NULL when there is no such file. */
static int read_file(discover *d, const char *address, const char *owner, const char *rel, char **ret) {
        int r = kdp_pci_read_attr(d->ctx, address, rel, ret);

        if (r == -ENOENT) {
                *ret = NULL;
                return 0;
        }
        return r < 0 ? file_error(d, r, owner, rel) : 0;
}

/* The class devices of `subsystem` below `address` (*ret NULL when none). */
static int read_children(discover *d, const char *address, const char *owner, const char *subsystem,
                         kdp_pci_child **ret, size_t *ret_n) {
        int r = kdp_pci_children(d->ctx, address, subsystem, ret, ret_n);

        if (r == -ENOENT)
                return fail(d, r, owner, "sysfs directory", "", "is gone");
        return r < 0 ? fail(d, r, owner, "sysfs directory ", subsystem, "could not be read") : 0;
}

/* All of s is a decimal number of at most `max`. */
static bool parse_uint(const char *s, unsigned long max, unsigned long *ret) {
        unsigned long v;
        char *end;

        if (*s < '0' || *s > '9')
                return false;
        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno != 0 || *end != '\0' || v > max)
                return false;
        *ret = v;
        return true;
}

/* s is `prefix` followed by a decimal number (into *ret, may be NULL). */
static bool prefixed_uint(const char *s, const char *prefix, unsigned long *ret) {
        unsigned long v;
        size_t n = strlen(prefix);

        if (strncmp(s, prefix, n) != 0 || !parse_uint(s + n, INT_MAX, &v))
                return false;
        if (ret)
                *ret = v;
        return true;
}

/* Moves *s past "<prefix><digits>"; false when it does not start so. */
static bool skip_token(const char **s, const char *prefix) {
        size_t n = strlen(prefix);
        const char *p = *s + n;

        if (strncmp(*s, prefix, n) != 0 || *p < '0' || *p > '9')
                return false;
        while (*p >= '0' && *p <= '9')
                p++;
        *s = p;
        return true;
}

/* phys_port_name of an uplink: "p<N>" */
static bool port_is_uplink(const char *s) {
        return skip_token(&s, "p") && *s == '\0';
}

/* phys_port_name of a representor: "[c<C>]pf<N>vf<M>" or "[c<C>]pf<N>sf<M>" */
static bool port_is_representor(const char *s) {
        (void) skip_token(&s, "c");
        return skip_token(&s, "pf") && (skip_token(&s, "vf") || skip_token(&s, "sf")) && *s == '\0';
}

/*
 * The netdev of `address` (the function's own, or its PF's for the PF name): its only one,
 * else the uplink, else the first that is no representor; "" when none.
 */
static int pick_netdev(discover *d, const char *address, const char *owner, char ret[IF_NAMESIZE]) {
        _cleanup_free_ kdp_pci_child *c = NULL;
        size_t n = 0, first = SIZE_MAX;
        int r;

        r = read_children(d, address, owner, "net", &c, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                if (strlen(c[i].name) >= IF_NAMESIZE)
                        return fail(d, -ENAMETOOLONG, owner, "sysfs entry net/", c[i].name, "is no netdev name");

        ret[0] = '\0';
        if (n == 1)
                first = 0;
        for (size_t i = 0; n > 1 && i < n; i++) {
                _cleanup_free_ char *rel = NULL, *port = NULL;

                if (asprintf(&rel, "net/%s/phys_port_name", c[i].name) < 0)
                        return -ENOMEM;
                /* a driver without port names fails the read with EOPNOTSUPP */
                r = kdp_pci_read_attr(d->ctx, address, rel, &port);
                if (r < 0 && r != -ENOENT && r != -EOPNOTSUPP && r != -ENODEV)
                        return file_error(d, r, owner, rel);
                if (port && port_is_uplink(port)) {
                        first = i;
                        break;
                }
                if (first == SIZE_MAX && !(port && port_is_representor(port)))
                        first = i;
        }
        if (first != SIZE_MAX)
                strcpy(ret, c[first].name);
        return 0;
}

/* The link type of netdev `ifname` of `address` into ret; *ret_present false when the netdev is gone. */
static int read_link_type(discover *d, const char *address, const char *owner, const char *ifname,
                          char ret[16], bool *ret_present) {
        _cleanup_free_ char *rel = NULL, *text = NULL;
        unsigned long type;
        int r;

        if (asprintf(&rel, "net/%s/type", ifname) < 0)
                return -ENOMEM;
        r = read_file(d, address, owner, rel, &text);
        if (r < 0)
                return r;
        *ret_present = text != NULL;
        ret[0] = '\0';
        if (!text)
                return 0;
        if (!parse_uint(text, UINT16_MAX, &type))
                return file_error(d, -EBADMSG, owner, rel);
        if (type == ARPHRD_ETHER)
                strcpy(ret, "ether");
        else if (type == ARPHRD_INFINIBAND)
                strcpy(ret, "infiniband");
        return 0;
}

/* Opens directory `path` for reading: -errno, -ENOENT when absent. */
static int open_dir_at(int dirfd, const char *path, DIR **ret) {
        int fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (fd < 0)
                return errno == ENOTDIR ? -ENOENT : -errno;
        *ret = fdopendir(fd);
        if (!*ret) {
                int r = -errno;

                (void) close(fd);
                return r;
        }
        return 0;
}

static bool same_file(const struct stat *a, const struct stat *b) {
        return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* The N of the PF's virtfn<N> link that resolves to this function. */
static int read_vf_index(discover *d, const char *pf, int *ret) {
        _cleanup_free_ char *rel = NULL, *path = NULL;
        _cleanup_closedir_ DIR *dir = NULL;
        struct dirent *de;
        struct stat self;
        int r;

        if (fstat(d->fd, &self) < 0)
                return -errno;
        if (asprintf(&rel, "bus/pci/devices/%s", pf) < 0)
                return -ENOMEM;
        r = kdp_backend_path(d->ctx, KDP_PATH_SYSFS, rel, &path);
        if (r < 0)
                return r;
        r = open_dir_at(AT_FDCWD, path, &dir);
        if (r == -ENOENT)
                return fail(d, r, "its PF's ", "sysfs directory", "", "is gone");
        if (r < 0)
                return fail(d, r, "its PF's ", "sysfs directory", "", "could not be read");

        for (errno = 0; (de = readdir(dir)); errno = 0) {
                unsigned long n;
                struct stat st;

                if (prefixed_uint(de->d_name, "virtfn", &n) && fstatat(dirfd(dir), de->d_name, &st, 0) == 0 &&
                    same_file(&st, &self)) {
                        *ret = (int) n;
                        return 0;
                }
        }
        if (errno != 0)
                return fail(d, -errno, "its PF's ", "sysfs directory", "", "could not be read");
        /* the PF removes the link first when it removes the VF */
        return fail(d, -ENOENT, "its PF ", "lists no virtfn link to it", "", "(it is being removed)");
}

/* The size of a class device's name (kdp_pci_child.name) */
#define CHILD_NAME_SIZE sizeof(((kdp_pci_child *) 0)->name)

/* The name of the function's first class device of `subsystem` (version order); "" without. */
static int first_child(discover *d, const char *subsystem, char ret[static CHILD_NAME_SIZE]) {
        _cleanup_free_ kdp_pci_child *c = NULL;
        size_t n = 0;
        int r;

        ret[0] = '\0';
        r = read_children(d, d->address, "its ", subsystem, &c, &n);
        if (r >= 0 && n > 0)
                strcpy(ret, c[0].name);
        return r;
}

/* The uio<M> of the function; -1 without. */
static int read_uio(discover *d, int *ret) {
        char name[CHILD_NAME_SIZE];
        unsigned long m;
        int r;

        *ret = -1;
        r = first_child(d, "uio", name);
        if (r < 0 || !name[0])
                return r;
        if (!prefixed_uint(name, "uio", &m))
                return fail(d, -EBADMSG, "its ", "sysfs entry uio/", name, "is malformed");
        *ret = (int) m;
        return 0;
}

/* Appends "/dev/infiniband/<K>" for the class device of `subsystem` named <prefix><digits> serving rdma_dev. */
static int add_rdma_node(discover *d, sriov_func *f, const kdp_pci_child *c, size_t n, const char *subsystem,
                         const char *prefix) {
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *rel = NULL, *ibdev = NULL;
                int r;

                if (!prefixed_uint(c[i].name, prefix, NULL))
                        continue;
                if (asprintf(&rel, "%s/%s/ibdev", subsystem, c[i].name) < 0)
                        return -ENOMEM;
                r = read_file(d, d->address, "its ", rel, &ibdev);
                if (r < 0)
                        return r;
                if (!ibdev || strcmp(ibdev, f->rdma_dev) != 0)
                        continue;
                (void) snprintf(f->rdma_nodes[f->n_rdma_nodes++], SRIOV_PATH_MAX, "/dev/infiniband/%s", c[i].name);
                return 0;
        }
        return 0;
}

static int add_rdma_nodes_of(discover *d, sriov_func *f, const char *subsystem, const char *const *prefixes) {
        _cleanup_free_ kdp_pci_child *c = NULL;
        size_t n = 0;
        int r;

        r = read_children(d, d->address, "its ", subsystem, &c, &n);
        for (; r >= 0 && *prefixes; prefixes++)
                r = add_rdma_node(d, f, c, n, subsystem, *prefixes);
        return r;
}

/* rdma_dev and its character devices, in the order ucm, issm, umad, uverbs, rdma_cm. */
static int read_rdma(discover *d, sriov_func *f) {
        _cleanup_free_ char *rdma_cm = NULL;
        struct stat st;
        int r;

        _Static_assert(sizeof(f->rdma_dev) >= CHILD_NAME_SIZE, "an ibdev name fits");
        r = first_child(d, "infiniband", f->rdma_dev);
        if (r < 0 || !f->rdma_dev[0])
                return r;

        r = add_rdma_nodes_of(d, f, "infiniband_cm", (const char *const[]){ "ucm", NULL });
        if (r >= 0)
                r = add_rdma_nodes_of(d, f, "infiniband_mad", (const char *const[]){ "issm", "umad", NULL });
        if (r >= 0)
                r = add_rdma_nodes_of(d, f, "infiniband_verbs", (const char *const[]){ "uverbs", NULL });
        if (r < 0)
                return r;

        r = kdp_backend_path(d->ctx, KDP_PATH_DEV, "infiniband/rdma_cm", &rdma_cm);
        if (r < 0)
                return r;
        if (stat(rdma_cm, &st) == 0)
                strcpy(f->rdma_nodes[f->n_rdma_nodes++], "/dev/infiniband/rdma_cm");
        else if (errno != ENOENT && errno != ENOTDIR)
                return fail(d, -errno, "", "device node ", rdma_cm, "could not be read");
        return 0;
}

/* The pkey at index 0 of port 1 of rdma_dev: "0x" and 1 to 4 hex digits. */
static int read_pkey(discover *d, sriov_func *f) {
        _cleanup_free_ char *rel = NULL, *text = NULL;
        size_t len;
        int r;

        if (asprintf(&rel, "infiniband/%s/ports/1/pkeys/0", f->rdma_dev) < 0)
                return -ENOMEM;
        r = read_file(d, d->address, "its ", rel, &text);
        if (r < 0 || !text)
                return r;
        len = strlen(text);
        if (len < 3 || len > 6 || strncmp(text, "0x", 2) != 0 || strspn(text + 2, "0123456789abcdefABCDEF") != len - 2)
                return file_error(d, -EBADMSG, "its ", rel);
        strcpy(f->pkey, text);
        return 0;
}

/* The smallest name (version order) of an entry of directory `name` below the function, as `pick` wants it. */
static int first_entry_at(discover *d, const char *name, bool (*pick)(discover *d, int dirfd, const char *entry),
                          char *ret, size_t size) {
        _cleanup_closedir_ DIR *dir = NULL;
        struct dirent *de;
        int r;

        ret[0] = '\0';
        r = open_dir_at(d->fd, name, &dir);
        if (r < 0)
                return r;
        for (errno = 0; (de = readdir(dir)); errno = 0)
                if (de->d_name[0] != '.' && strlen(de->d_name) < size && pick(d, dirfd(dir), de->d_name) &&
                    (!ret[0] || strverscmp(de->d_name, ret) < 0))
                        strcpy(ret, de->d_name);
        return errno != 0 ? -errno : 0;
}

/* A device of the vdpa bus (dirfd: bus/vdpa/devices) whose directory is the function's child. */
static bool pick_vdpa_child(discover *d, int dirfd, const char *entry) {
        struct stat bus, child;

        return fstatat(dirfd, entry, &bus, 0) == 0 && S_ISDIR(bus.st_mode) &&
               fstatat(d->fd, entry, &child, 0) == 0 && same_file(&bus, &child);
}

static bool pick_vhost_vdpa(discover *d, int dirfd, const char *entry) {
        (void) d;
        (void) dirfd;
        return prefixed_uint(entry, "vhost-vdpa-", NULL);
}

/* vdpa_type, vdpa_dev and vdpa_path of the function's first vDPA device. */
static int read_vdpa(discover *d, sriov_func *f) {
        _cleanup_free_ char *bus = NULL, *link = NULL, *target = NULL;
        char name[NAME_MAX + 1], node[64];   /* "vhost-vdpa-<N>" */
        const char *driver;
        int r;

        r = kdp_backend_path(d->ctx, KDP_PATH_SYSFS, "bus/vdpa/devices", &bus);
        if (r < 0)
                return r;
        r = first_entry_at(d, bus, pick_vdpa_child, name, sizeof(name));
        if (r == -ENOENT)               /* no vdpa bus: no vDPA device */
                return 0;
        if (r < 0)
                return fail(d, r, "", "sysfs directory ", "bus/vdpa/devices", "could not be read");
        if (!name[0])
                return 0;

        if (asprintf(&link, "%s/%s/driver", d->dir, name) < 0)
                return -ENOMEM;
        target = realpath(link, NULL);
        if (!target)                    /* not bound (or its driver's directory is missing) */
                return errno == ENOMEM ? -ENOMEM : 0;
        driver = strrchr(target, '/') ? strrchr(target, '/') + 1 : target;

        if (strcmp(driver, "virtio_vdpa") == 0) {
                strcpy(f->vdpa_type, "virtio");
                (void) snprintf(f->vdpa_dev, sizeof(f->vdpa_dev), "%s", name);
                return 0;
        }
        if (strcmp(driver, "vhost_vdpa") != 0)
                return 0;
        r = first_entry_at(d, name, pick_vhost_vdpa, node, sizeof(node));
        if (r < 0 && r != -ENOENT)
                return fail(d, r, "its ", "sysfs directory ", name, "could not be read");
        if (r < 0 || !node[0])          /* the vhost device is not there yet */
                return 0;
        strcpy(f->vdpa_type, "vhost");
        (void) snprintf(f->vdpa_dev, sizeof(f->vdpa_dev), "%s", name);
        (void) snprintf(f->vdpa_path, sizeof(f->vdpa_path), "/dev/%s", node);
        return 0;
}

/* acpi_index, trimmed: a decimal number. */
static int read_acpi_index(discover *d, sriov_func *f) {
        _cleanup_free_ char *text = NULL;
        const char *s;
        size_t len;
        int r;

        r = read_file(d, d->address, "its ", "acpi_index", &text);
        if (r < 0 || !text)
                return r;
        s = text + strspn(text, " \t\n");
        len = strspn(s, "0123456789");
        if (len == 0 || len >= sizeof(f->acpi_index) || s[len + strspn(s + len, " \t\n")] != '\0')
                return file_error(d, -EBADMSG, "its ", "acpi_index");
        memcpy(f->acpi_index, s, len);
        f->acpi_index[len] = '\0';
        return 0;
}

static int read_noiommu(discover *d, sriov_func *f) {
        _cleanup_free_ char *name = NULL;
        int r;

        if (f->iommu_group < 0)
                return 0;
        r = read_file(d, d->address, "its ", "iommu_group/name", &name);
        if (r >= 0)
                f->noiommu = name && strcmp(name, "vfio-noiommu") == 0;
        return r;
}

/* The netdev, the PF name and the link type. */
static int read_net(discover *d, sriov_func *f) {
        bool present = false;
        int r;

        if (f->pf_address[0]) {
                r = pick_netdev(d, f->pf_address, "its PF's ", f->pf_name);
                if (r < 0)
                        return r;
        }
        r = pick_netdev(d, d->address, "its ", f->netdev);
        if (r < 0)
                return r;
        if (f->netdev[0]) {
                r = read_link_type(d, d->address, "its ", f->netdev, f->link_type, &present);
                if (r < 0)
                        return r;
                if (!present)           /* moved into a pod's netns meanwhile */
                        f->netdev[0] = '\0';
        }
        if (!present && f->pf_name[0])
                r = read_link_type(d, f->pf_address, "its PF's ", f->pf_name, f->link_type, &present);
        return r;
}

static int discover_read(discover *d, const kdp_pci_device *p, sriov_func *f) {
        _cleanup_free_ char *rel = NULL;
        int r;

        if (asprintf(&rel, "bus/pci/devices/%s", p->address) < 0)
                return -ENOMEM;
        r = kdp_backend_path(d->ctx, KDP_PATH_SYSFS, rel, &d->dir);
        if (r < 0)
                return r;
        d->fd = open(d->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (d->fd < 0)
                return fail(d, -errno, "its ", "sysfs directory", "", "could not be opened");

        *f = (sriov_func){
                .class_code = p->class_code,
                .numa_node = p->numa_node,
                .is_pf_with_vfs = p->sriov_totalvfs >= 0 && p->sriov_numvfs > 0,
                .vf_index = -1,
                .iommu_group = p->iommu_group,
                .uio_index = -1,
        };
        (void) snprintf(f->address, sizeof(f->address), "%s", p->address);
        (void) snprintf(f->vendor, sizeof(f->vendor), "%04x", p->vendor_id);
        (void) snprintf(f->device, sizeof(f->device), "%04x", p->device_id);
        (void) snprintf(f->driver, sizeof(f->driver), "%s", p->driver);
        (void) snprintf(f->pf_address, sizeof(f->pf_address), "%s", p->physfn);

        r = read_acpi_index(d, f);
        if (r >= 0 && f->pf_address[0])
                r = read_vf_index(d, f->pf_address, &f->vf_index);
        if (r >= 0)
                r = read_net(d, f);
        if (r >= 0)
                r = read_noiommu(d, f);
        if (r >= 0)
                r = read_uio(d, &f->uio_index);
        if (r >= 0)
                r = read_rdma(d, f);
        if (r >= 0 && f->rdma_dev[0] && strcmp(f->link_type, "infiniband") == 0)
                r = read_pkey(d, f);
        if (r >= 0)
                r = read_vdpa(d, f);
        return r;
}

int sriov_discover(const kdp_backend_ctx *ctx, const kdp_pci_device *p, sriov_func *ret, const char **ret_why) {
        _cleanup_(discover_done) discover d = { .ctx = ctx, .address = p->address, .fd = -1 };
        sriov_func f;
        int r;

        r = discover_read(&d, p, &f);
        /* whatever failed or not, a function that went away meanwhile is gone */
        if (d.dir && function_gone(&d)) {
                r = -ENOENT;
                d.why = "its sysfs directory is gone";
        }
        if (ret_why)
                *ret_why = r < 0 ? d.why : NULL;
        if (r < 0)
                return r;
        *ret = f;
        return 0;
}
