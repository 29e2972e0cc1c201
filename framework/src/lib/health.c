/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Health checks for a backend's probe() (see <kdp/health.h>), all under the
 * ctx's roots.
 *
 * kdp_health_pci_check() runs the requested checks in a fixed order and
 * reports every one that failed, joined with "; ". A device whose sysfs
 * directory is gone is "device removed" and nothing else is checked.
 *
 * AER files (docs/hardware-gpu.md §2.2): lines "<token> <u64>", the total on
 * TOTAL_ERR_FATAL / TOTAL_ERR_NONFATAL; other lines are ignored. A device
 * without the file (no AER capability, an older kernel, a fixture) skips the
 * check. A total below its baseline means the counters started again (the
 * device was removed and re-added); the baseline follows it down.
 *
 * Device nodes: a real device filesystem holds character devices only, but a
 * plain fixture tree cannot (mknod needs privilege). So a regular file counts
 * as a node exactly when the dev root is not a device filesystem, which we
 * tell by <dev root>/null: a character device on every devtmpfs, the host's
 * /dev mounted anywhere (/host/dev) included, and absent from fixture trees.
 * Under a real /dev a regular file where a node should be (something wrote to
 * a missing node's path) is reported.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kdp/cleanup.h>
#include <kdp/health.h>
#include <kdp/pci.h>

#include "sysfs.h"

#define AER_CHECKS (KDP_HEALTH_PCI_AER_FATAL | KDP_HEALTH_PCI_AER_NONFATAL)


/* Appends one reason to *reasons, "; " between two. */
static int reason_add(char **reasons, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int reason_add(char **reasons, const char *fmt, ...) {
        _cleanup_free_ char *one = NULL;
        char *joined;
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vasprintf(&one, fmt, ap);
        va_end(ap);
        if (n < 0) {
                one = NULL;
                return -ENOMEM;
        }
        if (!*reasons) {
                *reasons = KDP_TAKE_PTR(one);
                return 0;
        }
        if (asprintf(&joined, "%s; %s", *reasons, one) < 0)
                return -ENOMEM;
        free(*reasons);
        *reasons = joined;
        return 0;
}

/* The verdict: KDP_UNHEALTHY handing out `reasons`, or KDP_HEALTHY with *ret_reason NULL. */
static int verdict(char **reasons, char **ret_reason) {
        *ret_reason = KDP_TAKE_PTR(*reasons);
        return *ret_reason ? KDP_UNHEALTHY : KDP_HEALTHY;
}

/* ---- PCI ---- */

/* A PCI address as a path component (kdp_pci_read_attr() checks the exact form). */
static bool address_valid(const char *address) {
        return kdp_sysfs_name_valid(address) && strlen(address) < KDP_PCI_ADDRESS_MAX;
}

/* 0 present, -ENOENT gone, other <0: could not tell. */
static int pci_present(const kdp_backend_ctx *ctx, const char *address) {
        _cleanup_free_ char *rel = NULL, *path = NULL;
        struct stat st;
        int r;

        if (asprintf(&rel, "bus/pci/devices/%s", address) < 0)
                return -ENOMEM;
        r = kdp_backend_path(ctx, KDP_PATH_SYSFS, rel, &path);
        if (r < 0)
                return r;
        if (stat(path, &st) < 0)
                return errno == ENOTDIR ? -ENOENT : -errno;
        return S_ISDIR(st.st_mode) ? 0 : -ENOENT;
}

/* The bound driver's name into *ret (free()); -ENOENT when unbound. */
static int pci_driver(const kdp_backend_ctx *ctx, const char *address, char **ret) {
        _cleanup_free_ char *rel = NULL, *path = NULL;
        char target[PATH_MAX];
        const char *base;
        ssize_t n;
        int r;

        if (asprintf(&rel, "bus/pci/devices/%s/driver", address) < 0)
                return -ENOMEM;
        r = kdp_backend_path(ctx, KDP_PATH_SYSFS, rel, &path);
        if (r < 0)
                return r;
        n = readlink(path, target, sizeof(target) - 1);
        if (n < 0)
                return errno == ENOTDIR ? -ENOENT : -errno;
        target[n] = '\0';
        base = strrchr(target, '/');
        base = base ? base + 1 : target;
        if (!*base)
                return -EBADMSG;
        *ret = strdup(base);
        return *ret ? 0 : -ENOMEM;
}

/* TOTAL of `key` in an AER counter file's text; -ENOENT without that line. */
static int aer_total(const char *text, const char *key, uint64_t *ret) {
        size_t key_len = strlen(key);

        for (const char *line = text, *next; line; line = next) {
                bool overflow = false;
                const char *p;
                uint64_t v = 0;

                next = strchr(line, '\n');
                if (next)
                        next++;
                if (strncmp(line, key, key_len) != 0 || line[key_len] != ' ')
                        continue;
                p = line + key_len;
                while (*p == ' ')
                        p++;
                if (*p < '0' || *p > '9')
                        continue;
                for (; *p >= '0' && *p <= '9'; p++) {
                        uint64_t digit = (uint64_t) (*p - '0');

                        if (v > (UINT64_MAX - digit) / 10)
                                overflow = true;
                        v = v * 10 + digit;
                }
                if (overflow || (*p != '\0' && *p != '\n'))
                        continue;       /* not "<token> <u64>" */
                *ret = v;
                return 0;
        }
        return -ENOENT;
}

/* The device's total of `file`'s `key`; -ENOENT when the file or the line is absent. */
static int aer_read(const kdp_backend_ctx *ctx, const char *address, const char *file, const char *key,
                    uint64_t *ret) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = kdp_pci_read_attr(ctx, address, file, &text);
        if (r < 0)
                return r;
        return aer_total(text, key, ret);
}

typedef struct aer_counter {
        unsigned check;                 /* KDP_HEALTH_PCI_AER_* */
        const char *file, *key, *name;
} aer_counter;

static const aer_counter aer_counters[] = {
        { KDP_HEALTH_PCI_AER_FATAL, "aer_dev_fatal", "TOTAL_ERR_FATAL", "fatal" },
        { KDP_HEALTH_PCI_AER_NONFATAL, "aer_dev_nonfatal", "TOTAL_ERR_NONFATAL", "non-fatal" },
};

static uint64_t *aer_base(kdp_health_pci *state, unsigned check) {
        return check == KDP_HEALTH_PCI_AER_FATAL ? &state->aer_fatal_base : &state->aer_nonfatal_base;
}

/* Reads both counters (absent: 0) into the baseline. */
static int aer_rebase(const kdp_backend_ctx *ctx, const char *address, kdp_health_pci *state) {
        uint64_t now[KDP_ELEMENTSOF(aer_counters)];

        for (size_t i = 0; i < KDP_ELEMENTSOF(aer_counters); i++) {
                int r = aer_read(ctx, address, aer_counters[i].file, aer_counters[i].key, &now[i]);

                if (r == -ENOENT)
                        now[i] = 0;
                else if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < KDP_ELEMENTSOF(aer_counters); i++)
                *aer_base(state, aer_counters[i].check) = now[i];
        state->based = 1;
        return 0;
}

static int aer_check(const kdp_backend_ctx *ctx, const char *address, unsigned checks, kdp_health_pci *state,
                     char **reasons) {
        int r;

        if (!state->based)
                return aer_rebase(ctx, address, state);     /* the first look is the baseline */

        for (size_t i = 0; i < KDP_ELEMENTSOF(aer_counters); i++) {
                const aer_counter *c = &aer_counters[i];
                uint64_t now, *base = aer_base(state, c->check);

                if (!(checks & c->check))
                        continue;
                r = aer_read(ctx, address, c->file, c->key, &now);
                if (r == -ENOENT)
                        continue;       /* no AER here: nothing to check */
                if (r < 0)
                        return r;
                if (now < *base)
                        *base = now;    /* the counters started again */
                else if (now > *base) {
                        r = reason_add(reasons, "AER %s errors rose from %" PRIu64 " to %" PRIu64, c->name, *base,
                                       now);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int kdp_health_pci_check(const kdp_backend_ctx *ctx, const char *address, const char *expected_driver,
                         unsigned checks, kdp_health_pci *state, char **ret_reason) {
        _cleanup_free_ char *reasons = NULL, *driver = NULL, *enable = NULL;
        int r;

        if (!ctx || !address_valid(address) || (checks & ~(unsigned) KDP_HEALTH_PCI_ALL) ||
            ((checks & AER_CHECKS) && !state) || (expected_driver && !*expected_driver) || !ret_reason)
                return -EINVAL;
        if (checks == 0)
                return verdict(&reasons, ret_reason);

        r = pci_present(ctx, address);
        if (r == -ENOENT) {
                r = reason_add(&reasons, "device removed");
                if (r < 0)
                        return r;
                return verdict(&reasons, ret_reason);
        }
        if (r < 0)
                return r;

        if (checks & KDP_HEALTH_PCI_DRIVER) {
                r = pci_driver(ctx, address, &driver);
                if (r == -ENOENT)
                        r = expected_driver ? reason_add(&reasons, "driver unbound (expected %s)", expected_driver)
                                            : reason_add(&reasons, "driver unbound");
                else if (r >= 0 && expected_driver && strcmp(driver, expected_driver) != 0)
                        r = reason_add(&reasons, "bound to %s instead of %s", driver, expected_driver);
                if (r < 0)
                        return r;
        }

        if (checks & KDP_HEALTH_PCI_ENABLED) {
                r = kdp_pci_read_attr(ctx, address, "enable", &enable);
                if (r >= 0 && strcmp(enable, "0") == 0)
                        r = reason_add(&reasons, "disabled (enable=0)");
                if (r < 0 && r != -ENOENT)
                        return r;
        }

        if (checks & AER_CHECKS) {
                r = aer_check(ctx, address, checks, state, &reasons);
                if (r < 0)
                        return r;
        }

        return verdict(&reasons, ret_reason);
}

int kdp_health_pci_rebase(const kdp_backend_ctx *ctx, const char *address, kdp_health_pci *state) {
        int r;

        if (!ctx || !address_valid(address) || !state)
                return -EINVAL;

        r = pci_present(ctx, address);
        if (r < 0)
                return r;
        return aer_rebase(ctx, address, state);
}

/* ---- device nodes ---- */

/* True if the dev root is a device filesystem: its `null` is a character device. */
static int dev_root_is_devfs(const kdp_backend_ctx *ctx) {
        _cleanup_free_ char *path = NULL;
        struct stat st;
        int r;

        r = kdp_backend_path(ctx, KDP_PATH_DEV, "null", &path);
        if (r < 0)
                return r;
        return stat(path, &st) == 0 && S_ISCHR(st.st_mode);
}

int kdp_health_check_dev_node(const kdp_backend_ctx *ctx, const char *rel, char **ret_reason) {
        _cleanup_free_ char *path = NULL, *reasons = NULL;
        struct stat st;
        int r;

        if (!ctx || !rel || !*rel || !ret_reason)
                return -EINVAL;

        r = kdp_backend_path(ctx, KDP_PATH_DEV, rel, &path);
        if (r < 0)
                return r;

        if (stat(path, &st) < 0) {
                if (errno != ENOENT && errno != ENOTDIR)
                        return -errno;
                r = reason_add(&reasons, "device node %s missing", path);
        } else if (S_ISCHR(st.st_mode))
                r = 0;
        else {
                r = S_ISREG(st.st_mode) ? dev_root_is_devfs(ctx) : 1;
                if (r > 0)
                        r = reason_add(&reasons, "device node %s is not a character device", path);
        }
        if (r < 0)
                return r;
        return verdict(&reasons, ret_reason);
}

/* ---- network links ---- */

/* class/net/<ifname>/<file> into *ret; -ENOENT when the interface itself is gone. */
static int net_read(const kdp_backend_ctx *ctx, const char *ifname, const char *file, char **ret) {
        _cleanup_free_ char *rel = NULL, *path = NULL;
        int r;

        if (asprintf(&rel, "class/net/%s/%s", ifname, file) < 0)
                return -ENOMEM;
        r = kdp_backend_path(ctx, KDP_PATH_SYSFS, rel, &path);
        if (r < 0)
                return r;
        return kdp_sysfs_read_text_at(AT_FDCWD, path, ret);
}

int kdp_health_check_net_link(const kdp_backend_ctx *ctx, const char *ifname, char **ret_reason) {
        _cleanup_free_ char *dir_rel = NULL, *dir = NULL, *carrier = NULL, *operstate = NULL, *reasons = NULL;
        struct stat st;
        int r;

        if (!ctx || !kdp_sysfs_name_valid(ifname) || strlen(ifname) >= IF_NAMESIZE || !ret_reason)
                return -EINVAL;

        if (asprintf(&dir_rel, "class/net/%s", ifname) < 0)
                return -ENOMEM;
        r = kdp_backend_path(ctx, KDP_PATH_SYSFS, dir_rel, &dir);
        if (r < 0)
                return r;
        if (stat(dir, &st) < 0)
                return errno == ENOTDIR ? -ENOENT : -errno;

        /* carrier fails (EINVAL) while the interface is administratively down */
        r = net_read(ctx, ifname, "carrier", &carrier);
        if (r == -ENOMEM)
                return r;
        r = net_read(ctx, ifname, "operstate", &operstate);
        if (r == -ENOMEM)
                return r;

        /* "unknown": the driver does not track operstate; the kernel says to treat it as usable */
        if (carrier && strcmp(carrier, "1") == 0 && operstate &&
            (strcmp(operstate, "up") == 0 || strcmp(operstate, "unknown") == 0))
                return verdict(&reasons, ret_reason);

        r = reason_add(&reasons, "link down (carrier %s, operstate %s)", carrier ?: "unreadable",
                       operstate ?: "unreadable");
        if (r < 0)
                return r;
        return verdict(&reasons, ret_reason);
}
