/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sim-check: the client that tests/sim-node/test-sim-node.sh runs under sim-node. It prints what
 * a device plugin would see, one fact per line, so the script can compare exact text.
 *
 *   sim-check enum                 libudev and libpci enumeration of the node, then "counts ..."
 *   sim-check monitor [udev|kernel]
 *                                  prints "ready", then every uevent as it arrives, and answers
 *                                  requests read from stdin (one per line) until stdin ends:
 *                                    check SYSPATH   sysfs state of one device
 *                                    attr SYSPATH NAME
 *                                    count           a fresh libudev and libpci count
 *                                    file PATH       what "files" prints for PATH
 *                                    mark TEXT       echoes "mark TEXT"
 *                                    hold PATH       prints "held", then reads nothing (no
 *                                                    uevent, no request) until PATH exists: a
 *                                                    listener that falls behind
 *                                  Before each request it reads every uevent already queued, so a
 *                                  request written after sim-node finished a command comes after
 *                                  that command's events in the output.
 *   sim-check files PATH...        one line per PATH, through the plain calls a backend makes
 *                                  (lstat, readlink, opendir/readdir, open/read, stat):
 *                                    file PATH missing | dir: NAME... | link -> TARGET
 *                                    | char|block MAJ:MIN | text=CONTENT (C escapes)
 *   sim-check kmsg BYTES           opens /dev/kmsg O_RDONLY|O_NONBLOCK as a kmsg reader does;
 *                                  with BYTES 0, one read() must fail with EAGAIN ("kmsg empty"),
 *                                  not report EOF; else it polls and reads until BYTES bytes
 *                                  came and prints them ("kmsg text=...", C escapes)
 *   sim-check fpga NODE [PORT IMAGE]
 *                                  the ioctls a DFL tool makes on an FME node, one answer per line:
 *                                  "api N" (DFL_FPGA_GET_API_VERSION), "extension N"
 *                                  (DFL_FPGA_CHECK_EXTENSION), "unknown errno=E" (a request the
 *                                  FME does not know), "short-argsz errno=E" (a PR whose argsz is
 *                                  too small); with PORT and IMAGE, the PR of the file IMAGE for
 *                                  port id PORT: "pr ok" or "pr errno=E"
 *
 * Who owns what: each mode owns its udev context, enumerator or monitor and its pci_access, and
 * frees them before returning; every udev_device lives for one loop iteration.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libudev.h>
#include <limits.h>
#include <pci/pci.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fpga-dfl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <kdp/cleanup.h>

KDP_DEFINE_CLEANUP_FUNC(struct udev, udev_unref);
KDP_DEFINE_CLEANUP_FUNC(struct udev_enumerate, udev_enumerate_unref);
KDP_DEFINE_CLEANUP_FUNC(struct udev_device, udev_device_unref);
KDP_DEFINE_CLEANUP_FUNC(struct udev_monitor, udev_monitor_unref);

static void pci_accessp(struct pci_access **a) {
        if (*a)
                pci_cleanup(*a);
}

static jmp_buf pci_guard;

static void __attribute__((noreturn, format(printf, 1, 2))) pci_error(char *fmt, ...) {
        va_list ap;

        fputs("sim-check: libpci: ", stdout);
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        fputc('\n', stdout);
        longjmp(pci_guard, 1);
}

static void pci_quiet(char *fmt, ...) {
}

/* "0x10de\n" -> "0x10de"; NULL -> "-" */
static const char *or_dash(const char *s) {
        return s && *s ? s : "-";
}

static void read_attr(const char *dir, const char *name, char *buf, size_t size) {
        char path[PATH_MAX];
        _cleanup_fclose_ FILE *f = NULL;
        size_t n;

        buf[0] = '\0';
        (void) snprintf(path, sizeof(path), "%s/%s", dir, name);
        f = fopen(path, "re");
        if (!f)
                return;
        n = fread(buf, 1, size - 1, f);
        buf[n] = '\0';
        while (n > 0 && buf[n - 1] == '\n')
                buf[--n] = '\0';
}

static void link_name(const char *dir, const char *name, char *buf, size_t size) {
        char path[PATH_MAX], target[PATH_MAX];
        const char *base;
        ssize_t n;

        buf[0] = '\0';
        (void) snprintf(path, sizeof(path), "%s/%s", dir, name);
        n = readlink(path, target, sizeof(target) - 1);
        if (n < 0)
                return;
        target[n] = '\0';
        base = strrchr(target, '/') ? strrchr(target, '/') + 1 : target;
        if (strlen(base) < size)
                memcpy(buf, base, strlen(base) + 1);
}

static const char *attr_of(struct udev_device *d, const char *name, char *buf, size_t size) {
        const char *v = udev_device_get_sysattr_value(d, name);

        (void) snprintf(buf, size, "%s", v ? v : "-");
        buf[strcspn(buf, "\n")] = '\0';
        return buf;
}

static int enum_subsystem(struct udev *udev, const char *subsystem, struct udev_enumerate **ret) {
        _cleanup_(udev_enumerate_unrefp) struct udev_enumerate *e = udev_enumerate_new(udev);
        int r;

        if (!e)
                return -ENOMEM;
        r = udev_enumerate_add_match_subsystem(e, subsystem);
        if (r < 0)
                return r;
        r = udev_enumerate_scan_devices(e);
        if (r < 0)
                return r;
        *ret = KDP_TAKE_PTR(e);
        return 0;
}

/* udev-pci lines; returns the count or <0 */
static int print_udev_pci(struct udev *udev, bool print) {
        _cleanup_(udev_enumerate_unrefp) struct udev_enumerate *e = NULL;
        struct udev_list_entry *le;
        int n = 0, r;

        r = enum_subsystem(udev, "pci", &e);
        if (r < 0)
                return r;
        udev_list_entry_foreach(le, udev_enumerate_get_list_entry(e)) {
                _cleanup_(udev_device_unrefp) struct udev_device *d =
                        udev_device_new_from_syspath(udev, udev_list_entry_get_name(le));
                char vendor[32], device[32], cls[32], numa[32], iommu[64], bus[PATH_MAX];
                char real[PATH_MAX], drvreal[PATH_MAX], drvpath[PATH_MAX];
                const char *syspath, *name;

                if (!d)
                        continue;
                n++;
                if (!print)
                        continue;
                syspath = udev_device_get_syspath(d);
                name = udev_device_get_sysname(d);
                link_name(syspath, "iommu_group", iommu, sizeof(iommu));
                /* the bus link must resolve to the very directory libudev enumerated */
                (void) snprintf(bus, sizeof(bus), "/sys/bus/pci/devices/%s", name);
                if (!realpath(bus, real))
                        (void) snprintf(real, sizeof(real), "unresolved");
                (void) snprintf(drvpath, sizeof(drvpath), "%s/driver", syspath);
                if (!realpath(drvpath, drvreal))
                        (void) snprintf(drvreal, sizeof(drvreal), "-");
                printf("udev-pci %s %s:%s class=%s numa=%s driver=%s iommu=%s PCI_ID=%s bus-link=%s "
                       "driver-dir=%s\n",
                       name, attr_of(d, "vendor", vendor, sizeof(vendor)) + 2,
                       attr_of(d, "device", device, sizeof(device)) + 2, attr_of(d, "class", cls, sizeof(cls)),
                       attr_of(d, "numa_node", numa, sizeof(numa)), or_dash(udev_device_get_driver(d)),
                       or_dash(iommu), or_dash(udev_device_get_property_value(d, "PCI_ID")),
                       strcmp(real, syspath) == 0 ? "ok" : real, drvreal);
        }
        return n;
}

static unsigned long long pci_key(const struct pci_dev *d) {
        return (unsigned long long) d->domain << 24 | (unsigned) d->bus << 16 | (unsigned) d->dev << 8 | d->func;
}

static int cmp_pci_dev(const void *a, const void *b) {
        unsigned long long x = pci_key(*(struct pci_dev *const *) a), y = pci_key(*(struct pci_dev *const *) b);

        return x < y ? -1 : x > y;
}

/* libpci lines, sysfs method at /sys/bus/pci; returns the count or <0 */
static int print_libpci(bool print) {
        _cleanup_(pci_accessp) struct pci_access *a = pci_alloc();
        int n = 0;

        if (!a)
                return -ENOMEM;
        a->error = pci_error;
        a->warning = pci_quiet;
        a->debug = pci_quiet;
        a->method = PCI_ACCESS_SYS_BUS_PCI;
        if (setjmp(pci_guard))
                return -EIO;
        pci_init(a);
        pci_scan_bus(a);
        for (struct pci_dev *d = a->devices; d; d = d->next)
                n++;
        if (!print)
                return n;
        /* libpci's list order follows readdir(); print in address order */
        _cleanup_free_ struct pci_dev **v = calloc((size_t) n, sizeof(*v));
        size_t i = 0;

        if (!v)
                return -ENOMEM;
        for (struct pci_dev *d = a->devices; d; d = d->next)
                v[i++] = d;
        qsort(v, i, sizeof(*v), cmp_pci_dev);
        for (i = 0; i < (size_t) n; i++) {
                struct pci_dev *d = v[i];

                pci_fill_info(d, PCI_FILL_IDENT | PCI_FILL_CLASS | PCI_FILL_NUMA_NODE | PCI_FILL_DRIVER |
                                         PCI_FILL_IOMMU_GROUP);
                printf("libpci %04x:%02x:%02x.%d %04x:%04x class=%04x numa=%d driver=%s iommu=%s\n", d->domain,
                       d->bus, d->dev, d->func, d->vendor_id, d->device_id, d->device_class, d->numa_node,
                       or_dash(pci_get_string_property(d, PCI_FILL_DRIVER)),
                       or_dash(pci_get_string_property(d, PCI_FILL_IOMMU_GROUP)));
        }
        return n;
}

static int print_class(struct udev *udev, const char *subsystem) {
        _cleanup_(udev_enumerate_unrefp) struct udev_enumerate *e = NULL;
        struct udev_list_entry *le;
        int n = 0, r;

        r = enum_subsystem(udev, subsystem, &e);
        if (r < 0)
                return r;
        udev_list_entry_foreach(le, udev_enumerate_get_list_entry(e)) {
                _cleanup_(udev_device_unrefp) struct udev_device *d =
                        udev_device_new_from_syspath(udev, udev_list_entry_get_name(le));
                struct udev_device *parent;
                char a1[256], a2[256], devlink[PATH_MAX], real[PATH_MAX];
                const char *name;

                if (!d)
                        continue;
                n++;
                name = udev_device_get_sysname(d);
                parent = udev_device_get_parent(d);    /* borrowed from d */
                if (strcmp(subsystem, "net") == 0) {
                        /* /sys/class/net/<if>/device must lead back to the PCI function */
                        (void) snprintf(devlink, sizeof(devlink), "/sys/class/net/%s/device", name);
                        if (!realpath(devlink, real))
                                (void) snprintf(real, sizeof(real), "unresolved");
                        printf("net %s parent=%s device-link=%s operstate=%s carrier=%s\n", name,
                               parent ? udev_device_get_sysname(parent) : "-",
                               parent && strcmp(real, udev_device_get_syspath(parent)) == 0 ? "ok" : real,
                               attr_of(d, "operstate", a1, sizeof(a1)), attr_of(d, "carrier", a2, sizeof(a2)));
                } else if (strcmp(subsystem, "node") == 0)
                        printf("node %s cpulist=%s\n", name, attr_of(d, "cpulist", a1, sizeof(a1)));
                else {
                        const char *node = udev_device_get_devnode(d);
                        struct stat sb;

                        printf("%s %s parent=%s devnode=%s type=%s\n", subsystem, name,
                               parent ? udev_device_get_sysname(parent) : "-", or_dash(node),
                               !node || stat(node, &sb) < 0 ? "missing" :
                               S_ISCHR(sb.st_mode) ? "char" : S_ISBLK(sb.st_mode) ? "block" : "other");
                }
        }
        return n;
}

static int do_enum(void) {
        _cleanup_(udev_unrefp) struct udev *udev = udev_new();
        int n_udev, n_pci, n_net, n_node, n_nvme, n_block;

        if (!udev)
                return 1;
        n_udev = print_udev_pci(udev, true);
        n_pci = print_libpci(true);
        n_net = print_class(udev, "net");
        n_node = print_class(udev, "node");
        n_nvme = print_class(udev, "nvme");
        n_block = print_class(udev, "block");
        printf("counts udev-pci=%d libpci=%d net=%d node=%d nvme=%d block=%d\n", n_udev, n_pci, n_net, n_node,
               n_nvme, n_block);
        return n_udev < 0 || n_pci < 0 ? 1 : 0;
}

static void print_event(struct udev_device *d, unsigned long long *last_seqnum) {
        static const char *const extra[] = { "ERROR_EVENT", "DEVICE_ONLINE", "SIM_TEST" };
        unsigned long long seq = udev_device_get_seqnum(d);

        /*
         * DRIVER= as the event carries it. udev_device_get_driver() is not printed: for an event
         * without DRIVER= (add, unbind, remove) libudev reads the live driver link when asked,
         * which on a real node too depends on whether the driver has bound by then.
         */
        printf("event %s %s %s DRIVER=%s", or_dash(udev_device_get_action(d)),
               or_dash(udev_device_get_subsystem(d)), or_dash(udev_device_get_devpath(d)),
               or_dash(udev_device_get_property_value(d, "DRIVER")));
        for (size_t i = 0; i < KDP_ELEMENTSOF(extra); i++) {
                const char *v = udev_device_get_property_value(d, extra[i]);

                if (v)
                        printf(" %s=%s", extra[i], v);
        }
        putchar('\n');
        if (seq <= *last_seqnum)
                printf("error seqnum %llu after %llu\n", seq, *last_seqnum);
        *last_seqnum = seq;
}

static void do_check(const char *syspath) {
        char drv[128], uevent[4096], enable[32], link[PATH_MAX + 64], *p;
        const char *name = strrchr(syspath, '/') ? strrchr(syspath, '/') + 1 : syspath;
        const char *udev_driver = "-";
        struct stat sb;
        unsigned dom, bus, dev, fn;
        char tail;

        link_name(syspath, "driver", drv, sizeof(drv));
        if (drv[0]) {
                /* the link must lead to /sys/bus/pci/drivers/<drv> */
                char path[PATH_MAX], real[PATH_MAX], want[PATH_MAX];

                (void) snprintf(path, sizeof(path), "%s/driver", syspath);
                (void) snprintf(want, sizeof(want), "/sys/bus/pci/drivers/%s", drv);
                if (!realpath(path, real) || strcmp(real, want) != 0)
                        (void) snprintf(drv + strlen(drv), sizeof(drv) - strlen(drv), "(dangling)");
        }
        read_attr(syspath, "uevent", uevent, sizeof(uevent));
        p = strstr(uevent, "DRIVER=");
        if (p && (p == uevent || p[-1] == '\n')) {
                p += 7;
                p[strcspn(p, "\n")] = '\0';
                udev_driver = p;
        }
        read_attr(syspath, "enable", enable, sizeof(enable));
        if (sscanf(name, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &tail) == 4)
                (void) snprintf(link, sizeof(link), "/sys/bus/pci/devices/%s", name);
        else {
                /* class devices: /sys/class/<the glue directory's name>/<name> */
                char dir[PATH_MAX - 64], *slash;

                (void) snprintf(dir, sizeof(dir), "%s", syspath);
                slash = strrchr(dir, '/');
                if (slash)
                        *slash = '\0';
                slash = strrchr(dir, '/');
                (void) snprintf(link, sizeof(link), "/sys/class/%s/%s", slash ? slash + 1 : dir, name);
        }
        printf("check %s exists=%d link=%d driver=%s DRIVER=%s enable=%s\n", syspath,
               stat(syspath, &sb) == 0 && S_ISDIR(sb.st_mode), lstat(link, &sb) == 0, or_dash(drv),
               udev_driver, or_dash(enable));
}

static void do_attr(const char *syspath, const char *name) {
        char path[PATH_MAX], value[8192] = "";
        _cleanup_fclose_ FILE *f = NULL;

        /* the file as it is, trailing newline included */
        (void) snprintf(path, sizeof(path), "%s/%s", syspath, name);
        f = fopen(path, "re");
        if (f)
                value[fread(value, 1, sizeof(value) - 1, f)] = '\0';
        printf("attr %s %s=", syspath, name);
        for (const char *p = value; *p; p++)
                if (*p == '\n')
                        fputs("\\n", stdout);
                else
                        putchar(*p);
        putchar('\n');
}

/* text with \n \t \\ and \xNN for other control bytes */
static void print_escaped(const char *text, size_t len) {
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char) text[i];

                if (c == '\n')
                        fputs("\\n", stdout);
                else if (c == '\t')
                        fputs("\\t", stdout);
                else if (c == '\\')
                        fputs("\\\\", stdout);
                else if (c < 0x20 || c == 0x7f)
                        printf("\\x%02x", c);
                else
                        putchar(c);
        }
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static void do_file(const char *path) {
        struct stat sb;

        printf("file %s ", path);
        if (lstat(path, &sb) < 0)
                fputs(errno == ENOENT ? "missing" : strerror(errno), stdout);
        else if (S_ISLNK(sb.st_mode)) {
                char target[PATH_MAX];
                ssize_t n = readlink(path, target, sizeof(target) - 1);

                printf("link -> %.*s", (int) (n < 0 ? 0 : n), target);
        } else if (S_ISDIR(sb.st_mode)) {
                _cleanup_closedir_ DIR *d = opendir(path);
                char *names[256];
                size_t n = 0;
                struct dirent *e;

                fputs("dir:", stdout);
                while (d && (e = readdir(d)) && n < KDP_ELEMENTSOF(names))
                        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                                names[n++] = strdup(e->d_name);
                qsort(names, n, sizeof(char *), cmp_str);
                for (size_t i = 0; i < n; i++) {
                        printf(" %s", names[i] ? names[i] : "?");
                        free(names[i]);
                }
                if (!d)
                        printf(" (opendir: %s)", strerror(errno));
        } else if (S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode))
                printf("%s %u:%u", S_ISCHR(sb.st_mode) ? "char" : "block", major(sb.st_rdev),
                       minor(sb.st_rdev));
        else {
                _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
                char buf[8192];
                size_t len = 0;
                ssize_t n = 0;

                while (fd >= 0 && len < sizeof(buf) && (n = read(fd, buf + len, sizeof(buf) - len)) > 0)
                        len += (size_t) n;
                if (fd < 0 || n < 0)
                        printf("(read: %s)", strerror(errno));
                else {
                        fputs("text=", stdout);
                        print_escaped(buf, len);
                }
        }
        putchar('\n');
}

static int do_files(int argc, char **argv) {
        for (int i = 0; i < argc; i++)
                do_file(argv[i]);
        return 0;
}

static int do_kmsg(long want) {
        _cleanup_close_ int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        char buf[65536];
        size_t len = 0;

        if (fd < 0) {
                printf("kmsg open: %s\n", strerror(errno));
                return 1;
        }
        if (want == 0) {
                ssize_t n = read(fd, buf, sizeof(buf));

                if (n < 0 && errno == EAGAIN)
                        printf("kmsg empty\n");
                else if (n == 0)
                        printf("kmsg EOF\n");
                else
                        printf("kmsg read %zd: %s\n", n, n < 0 ? strerror(errno) : "data");
                return 0;
        }
        while (len < (size_t) want && len < sizeof(buf)) {
                struct pollfd pfd = { .fd = fd, .events = POLLIN };
                ssize_t n;

                if (poll(&pfd, 1, 10000) <= 0) {
                        printf("kmsg timeout after %zu bytes\n", len);
                        return 1;
                }
                n = read(fd, buf + len, sizeof(buf) - len);
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        continue;
                if (n <= 0) {
                        printf("kmsg read: %s\n", n == 0 ? "EOF" : strerror(errno));
                        return 1;
                }
                len += (size_t) n;
        }
        fputs("kmsg text=", stdout);
        print_escaped(buf, len);
        putchar('\n');
        return 0;
}

/* "hold PATH": nothing is read until PATH exists, or the writer of our requests is gone (a test
 * that ended early), or after a minute */
static void do_hold(const char *path) {
        printf("held\n");
        (void) fflush(stdout);
        for (int i = 0; i < 6000 && access(path, F_OK) < 0; i++) {
                struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
                int n = poll(&pfd, 1, 10);

                if (n > 0 && (pfd.revents & POLLHUP))
                        return;
                if (n > 0)
                        (void) usleep(10000);       /* a request waits for the end of the hold */
        }
}

static int do_monitor(const char *source) {
        _cleanup_(udev_unrefp) struct udev *udev = udev_new();
        _cleanup_(udev_monitor_unrefp) struct udev_monitor *mon = NULL;
        unsigned long long last_seqnum = 0;
        char line[1024];
        size_t len = 0;
        int r;

        if (!udev)
                return 1;
        mon = udev_monitor_new_from_netlink(udev, source);
        if (!mon) {
                printf("error cannot create a %s monitor: %s\n", source, strerror(errno));
                return 1;
        }
        r = udev_monitor_enable_receiving(mon);
        if (r < 0) {
                printf("error cannot bind the %s monitor: %s\n", source, strerror(-r));
                return 1;
        }
        printf("ready %s\n", source);
        (void) fflush(stdout);
        for (;;) {
                struct pollfd pfd[2] = {
                        { .fd = udev_monitor_get_fd(mon), .events = POLLIN },
                        { .fd = STDIN_FILENO, .events = POLLIN },
                };

                if (poll(pfd, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return 1;
                }
                /* events first: everything queued now was sent before any request we read next */
                if (pfd[0].revents & POLLIN)
                        for (;;) {
                                _cleanup_(udev_device_unrefp) struct udev_device *d = udev_monitor_receive_device(mon);

                                if (!d)
                                        break;
                                print_event(d, &last_seqnum);
                        }
                if (pfd[1].revents & (POLLIN | POLLHUP)) {
                        ssize_t n = read(STDIN_FILENO, line + len, sizeof(line) - len - 1);
                        char *start = line, *nl;

                        if (n <= 0) {
                                (void) fflush(stdout);
                                return 0;
                        }
                        /* drain the monitor once more: a request must never overtake an event */
                        for (;;) {
                                _cleanup_(udev_device_unrefp) struct udev_device *d = udev_monitor_receive_device(mon);

                                if (!d)
                                        break;
                                print_event(d, &last_seqnum);
                        }
                        len += (size_t) n;
                        line[len] = '\0';
                        while ((nl = strchr(start, '\n'))) {
                                char *arg, *arg2;

                                *nl = '\0';
                                arg = strchr(start, ' ');
                                if (arg)
                                        *arg++ = '\0';
                                if (strcmp(start, "check") == 0 && arg)
                                        do_check(arg);
                                else if (strcmp(start, "attr") == 0 && arg && (arg2 = strchr(arg, ' '))) {
                                        *arg2++ = '\0';
                                        do_attr(arg, arg2);
                                } else if (strcmp(start, "count") == 0)
                                        printf("count udev-pci=%d libpci=%d\n", print_udev_pci(udev, false),
                                               print_libpci(false));
                                else if (strcmp(start, "file") == 0 && arg)
                                        do_file(arg);
                                else if (strcmp(start, "mark") == 0)
                                        printf("mark %s\n", arg ? arg : "");
                                else if (strcmp(start, "hold") == 0 && arg)
                                        do_hold(arg);
                                else if (*start)
                                        printf("error unknown request '%s'\n", start);
                                start = nl + 1;
                        }
                        len -= (size_t) (start - line);
                        memmove(line, start, len);
                        if (len >= sizeof(line) - 1)
                                len = 0;
                }
                (void) fflush(stdout);
        }
}

static void print_ioctl(const char *what, int r) {
        if (r < 0)
                printf("%s errno=%s\n", what, strerrorname_np(errno));
        else
                printf("%s %d\n", what, r);
}

static int do_fpga(const char *node, const char *port, const char *image) {
        _cleanup_close_ int fd = open(node, O_RDWR | O_CLOEXEC);
        _cleanup_free_ char *buf = NULL;
        struct dfl_fpga_fme_port_pr pr = { .argsz = sizeof(pr) };
        char dummy[8] = "";
        struct stat st;
        int r;

        if (fd < 0) {
                printf("open errno=%s\n", strerrorname_np(errno));
                return 1;
        }
        print_ioctl("api", ioctl(fd, DFL_FPGA_GET_API_VERSION));
        print_ioctl("extension", ioctl(fd, DFL_FPGA_CHECK_EXTENSION, 0));
        print_ioctl("unknown", ioctl(fd, DFL_FPGA_PORT_RESET));
        pr.argsz = 8;
        pr.buffer_size = sizeof(dummy);
        pr.buffer_address = (uint64_t) (uintptr_t) dummy;
        print_ioctl("short-argsz", ioctl(fd, DFL_FPGA_FME_PORT_PR, &pr));
        if (!port)
                return 0;
        {
                _cleanup_close_ int ifd = open(image, O_RDONLY | O_CLOEXEC);

                if (ifd < 0 || fstat(ifd, &st) < 0 || !(buf = malloc((size_t) st.st_size + 1)) ||
                    read(ifd, buf, (size_t) st.st_size) != st.st_size) {
                        printf("image unreadable\n");
                        return 1;
                }
        }
        pr = (struct dfl_fpga_fme_port_pr){
                .argsz = sizeof(pr),
                .port_id = (uint32_t) atoi(port),
                .buffer_size = (uint32_t) st.st_size,
                .buffer_address = (uint64_t) (uintptr_t) buf,
        };
        r = ioctl(fd, DFL_FPGA_FME_PORT_PR, &pr);
        if (r < 0)
                printf("pr errno=%s\n", strerrorname_np(errno));
        else
                printf("pr ok\n");
        return 0;
}

int main(int argc, char **argv) {
        if (argc >= 2 && strcmp(argv[1], "enum") == 0)
                return do_enum();
        if (argc >= 2 && strcmp(argv[1], "monitor") == 0)
                return do_monitor(argc >= 3 ? argv[2] : "udev");
        if (argc >= 2 && strcmp(argv[1], "files") == 0)
                return do_files(argc - 2, argv + 2);
        if (argc == 3 && strcmp(argv[1], "kmsg") == 0)
                return do_kmsg(atol(argv[2]));
        if (argc == 3 && strcmp(argv[1], "fpga") == 0)
                return do_fpga(argv[2], NULL, NULL);
        if (argc == 5 && strcmp(argv[1], "fpga") == 0)
                return do_fpga(argv[2], argv[3], argv[4]);
        fprintf(stderr, "usage: sim-check enum | monitor [udev|kernel] | files PATH... | kmsg BYTES | "
                "fpga NODE [PORT IMAGE]\n");
        return 2;
}
