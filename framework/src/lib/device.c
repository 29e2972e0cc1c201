/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The framework's copy of a device record, and sorted per-resource lists.
 *
 * Validation rules (kdp_device_from_info):
 *   id            kdp_device_id_is_valid(): 1..63 bytes of printable ASCII, no space
 *   health        KDP_HEALTHY or KDP_UNHEALTHY; health_reason is dropped when healthy
 *   numa_nodes    n_numa_nodes <= KDP_DEVICE_NUMA_MAX, every node >= 0
 *   pci_address   NULL or "DDDD:BB:DD.F" (hex, 4 to 8 domain digits, function 0-7)
 *   dev_nodes     host_path absolute; container_path absolute when given;
 *                 permissions a non-empty subset of "rwm", each letter once
 *   mounts        host_path absolute; container_path absolute when given
 *   envs          key non-empty without '='; a NULL value is ""
 *   annotations   key non-empty; a NULL value is ""
 *   cdi_devices   kdp_device_cdi_name_is_valid()
 * The reason for a refusal is logged at verbosity 4 (libkdp does not log above it);
 * the caller decides whether the refusal is worth a warning.
 *
 * Lists: kdp_device_list_append() pushes at the end and finds duplicates in a
 * hash of the IDs (O(1)); kdp_device_list_sort() sorts once, when the scan is
 * finished, and drops the hash. Lookups use the hash while there is one, else
 * a binary search, so a list filled by hand must be sorted before lookups.
 */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kdp/log.h>

#include "device.h"

static bool streq_null(const char *a, const char *b) {
        if (!a || !b)
                return a == b;
        return strcmp(a, b) == 0;
}

static bool is_lower_alnum(char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c) {
        return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

static bool is_letter(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_hex(char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* IsDNS1123Subdomain: [a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*, <= 253 */
static bool dns1123_subdomain_is_valid(const char *s, size_t n) {
        size_t label = 0;

        if (n == 0 || n > 253)
                return false;

        for (size_t i = 0; i <= n; i++) {
                if (i == n || s[i] == '.') {
                        if (i == label || !is_lower_alnum(s[label]) || !is_lower_alnum(s[i - 1]))
                                return false;
                        label = i + 1;
                } else if (!is_lower_alnum(s[i]) && s[i] != '-')
                        return false;
        }
        return true;
}

/* The name part of IsQualifiedName: ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], 1..63 */
static bool qualified_name_part_is_valid(const char *s) {
        size_t n = strlen(s);

        if (n == 0 || n > 63)
                return false;
        if (!is_alnum(s[0]) || !is_alnum(s[n - 1]))
                return false;
        for (size_t i = 1; i + 1 < n; i++)
                if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
                        return false;
        return true;
}

bool kdp_device_resource_name_is_valid(const char *name) {
        const char *slash;
        size_t prefix_len;

        if (!name)
                return false;

        /* IsNativeResource: no '/' (implicitly kubernetes.io/), or "kubernetes.io/" anywhere */
        slash = strchr(name, '/');
        if (!slash)
                return false;
        if (strstr(name, "kubernetes.io/"))
                return false;
        if (strncmp(name, "requests.", strlen("requests.")) == 0)
                return false;

        /*
         * IsQualifiedName("requests." + name): exactly one '/'; "requests." + prefix a
         * DNS-1123 subdomain of at most 253 characters, i.e. prefix one of at most 244.
         */
        if (strchr(slash + 1, '/'))
                return false;
        prefix_len = (size_t) (slash - name);
        if (prefix_len > 253 - strlen("requests."))
                return false;
        if (!dns1123_subdomain_is_valid(name, prefix_len))
                return false;

        return qualified_name_part_is_valid(slash + 1);
}

/*
 * The CDI vendor and class rule (container-device-interface pkg/parser,
 * validateVendorOrClassName): a letter, then letters, digits, '_', '-', '.',
 * ending in a letter or digit.
 */
static bool cdi_vendor_or_class_is_valid(const char *s, size_t n) {
        if (n == 0 || !is_letter(s[0]) || !is_alnum(s[n - 1]))
                return false;
        for (size_t i = 1; i + 1 < n; i++)
                if (!is_alnum(s[i]) && s[i] != '_' && s[i] != '-' && s[i] != '.')
                        return false;
        return true;
}

/* ValidateDeviceName: a letter or digit, then letters, digits, '_', '-', '.', ':', ending alphanumeric. */
static bool cdi_device_name_is_valid(const char *s) {
        size_t n = strlen(s);

        if (n == 0 || !is_alnum(s[0]) || !is_alnum(s[n - 1]))
                return false;
        for (size_t i = 1; i + 1 < n; i++)
                if (!is_alnum(s[i]) && s[i] != '_' && s[i] != '-' && s[i] != '.' && s[i] != ':')
                        return false;
        return true;
}

bool kdp_device_cdi_name_is_valid(const char *name) {
        const char *slash, *eq;

        if (!name)
                return false;

        /* ParseQualifiedName: "<vendor>/<class>=<name>", split at the first '=' and then the first '/' */
        eq = strchr(name, '=');
        if (!eq)
                return false;
        slash = memchr(name, '/', (size_t) (eq - name));
        if (!slash)
                return false;

        return cdi_vendor_or_class_is_valid(name, (size_t) (slash - name)) &&
               cdi_vendor_or_class_is_valid(slash + 1, (size_t) (eq - slash - 1)) &&
               cdi_device_name_is_valid(eq + 1);
}

bool kdp_device_id_is_valid(const char *id) {
        size_t n;

        if (!id)
                return false;
        n = strlen(id);
        if (n == 0 || n > KDP_DEVICE_ID_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (id[i] <= ' ' || id[i] > '~')
                        return false;
        return true;
}

/* "DDDD:BB:DD.F": 4..8 hex digits of domain (VMD domains have 5), bus, device, function 0-7. */
static bool pci_address_is_valid(const char *a) {
        size_t n = 0;

        while (is_hex(a[n]))
                n++;
        if (n < 4 || n > 8 || a[n] != ':')
                return false;
        a += n + 1;
        if (!is_hex(a[0]) || !is_hex(a[1]) || a[2] != ':' || !is_hex(a[3]) || !is_hex(a[4]) || a[5] != '.')
                return false;
        return a[6] >= '0' && a[6] <= '7' && a[7] == '\0';
}

static bool permissions_are_valid(const char *p) {
        static const char letters[] = "rwm";
        bool seen[3] = { false, false, false };

        if (!p || !*p)
                return false;
        for (; *p; p++) {
                const char *c = strchr(letters, *p);
                size_t i;

                if (!c)
                        return false;
                i = (size_t) (c - letters);
                if (seen[i])
                        return false;
                seen[i] = true;
        }
        return true;
}

/* Why this thread's last record was refused: kdp_device_tree_add() puts it in its warning. */
static __thread const char *last_rejection;

const char *kdp_device_take_rejection(void) {
        const char *r = last_rejection;

        last_rejection = NULL;
        return r;
}

static int reject(const kdp_device_info *info, const char *reason) {
        (void) info;
        last_rejection = reason;
        return -EINVAL;
}

static int strdup_or_null(const char *s, char **ret) {
        char *c = NULL;

        if (s) {
                c = strdup(s);
                if (!c)
                        return -ENOMEM;
        }
        *ret = c;
        return 0;
}

/*
 * What <root>/bus/pci/devices/<address> resolves to, as realpath() would name it below the root
 * (NULL with errno set when it does not resolve). sysfs makes that link "../../../devices/<path>":
 * one stat() and one readlink() answer it, where realpath() reads every component of the path,
 * ten or more system calls per device at every scan. A link of another shape goes to realpath().
 */
static char *pci_link_target(const char *link) {
        static const char up[] = "../../../devices/";
        char buf[PATH_MAX], *target;
        struct stat st;
        ssize_t n;

        if (stat(link, &st) < 0)
                return NULL;            /* absent or dangling */
        n = readlink(link, buf, sizeof(buf) - 1);
        if (n < 0 || (size_t) n >= sizeof(buf) - 1)
                return realpath(link, NULL);
        buf[n] = '\0';
        if (strncmp(buf, up, strlen(up)) != 0 || strstr(buf + strlen(up), "..") || strstr(buf, "/./") ||
            strstr(buf, "//"))
                return realpath(link, NULL);
        if (asprintf(&target, "/%s", buf + strlen("../../../")) < 0) {
                errno = ENOMEM;
                return NULL;
        }
        return target;
}

static int resolve_pci_path(const char *sysfs_root, const char *pci_address, char **ret) {
        _cleanup_free_ char *link = NULL, *real = NULL;
        const char *tail = NULL;

        if (asprintf(&link, "%s/bus/pci/devices/%s", sysfs_root, pci_address) < 0)
                return -ENOMEM;

        real = pci_link_target(link);
        if (!real) {
                if (errno == ENOMEM)
                        return -ENOMEM;
                *ret = NULL;            /* no such device under this root: not an error */
                return 0;
        }

        for (const char *p = real; (p = strstr(p, "/devices/")); p++)
                tail = p + strlen("/devices/");
        if (!tail || !*tail) {
                *ret = NULL;
                return 0;
        }

        return strdup_or_null(tail, ret);
}

static int copy_dev_nodes(const kdp_device_info *info, kdp_device *d) {
        const kdp_dev_node *src = info->dev_nodes;
        size_t n = 0;

        if (!src)
                return 0;
        while (src[n].host_path || src[n].container_path || src[n].permissions)
                n++;
        if (n == 0)
                return 0;

        d->dev_nodes = calloc(n, sizeof(kdp_dev_node));
        if (!d->dev_nodes)
                return -ENOMEM;
        d->n_dev_nodes = n;

        for (size_t i = 0; i < n; i++) {
                const kdp_dev_node *s = &src[i];
                kdp_dev_node *t = &d->dev_nodes[i];

                if (!s->host_path || s->host_path[0] != '/')
                        return reject(info, "device node host path is not absolute");
                if (s->container_path && s->container_path[0] != '/')
                        return reject(info, "device node container path is not absolute");
                if (s->permissions && !permissions_are_valid(s->permissions))
                        return reject(info, "device node permissions are not a subset of \"rwm\"");

                t->host_path = strdup(s->host_path);
                t->container_path = strdup(s->container_path ?: s->host_path);
                t->permissions = strdup(s->permissions ?: "rw");
                if (!t->host_path || !t->container_path || !t->permissions)
                        return -ENOMEM;
        }
        return 0;
}

static int copy_mounts(const kdp_device_info *info, kdp_device *d) {
        const kdp_mount *src = info->mounts;
        size_t n = 0;

        if (!src)
                return 0;
        while (src[n].host_path || src[n].container_path || src[n].read_only)
                n++;
        if (n == 0)
                return 0;

        d->mounts = calloc(n, sizeof(kdp_mount));
        if (!d->mounts)
                return -ENOMEM;
        d->n_mounts = n;

        for (size_t i = 0; i < n; i++) {
                const kdp_mount *s = &src[i];
                kdp_mount *t = &d->mounts[i];

                if (!s->host_path || s->host_path[0] != '/')
                        return reject(info, "mount host path is not absolute");
                if (s->container_path && s->container_path[0] != '/')
                        return reject(info, "mount container path is not absolute");

                t->host_path = strdup(s->host_path);
                t->container_path = strdup(s->container_path ?: s->host_path);
                t->read_only = !!s->read_only;
                if (!t->host_path || !t->container_path)
                        return -ENOMEM;
        }
        return 0;
}

static int copy_kvs(const kdp_device_info *info, const kdp_kv *src, bool env, kdp_kv **ret, size_t *ret_n) {
        kdp_kv *kvs;
        size_t n = 0;

        if (!src)
                return 0;
        while (src[n].key || src[n].value)
                n++;
        if (n == 0)
                return 0;

        kvs = calloc(n, sizeof(kdp_kv));
        if (!kvs)
                return -ENOMEM;
        /* handed over at once so the caller's cleanup frees a half-built array */
        *ret = kvs;
        *ret_n = n;

        for (size_t i = 0; i < n; i++) {
                if (!src[i].key || !src[i].key[0])
                        return reject(info, env ? "environment variable without a name" : "annotation without a key");
                if (env && strchr(src[i].key, '='))
                        return reject(info, "environment variable name contains '='");

                kvs[i].key = strdup(src[i].key);
                kvs[i].value = strdup(src[i].value ?: "");
                if (!kvs[i].key || !kvs[i].value)
                        return -ENOMEM;
        }
        return 0;
}

static int copy_cdi_devices(const kdp_device_info *info, kdp_device *d) {
        const char *const *src = info->cdi_devices;
        size_t n = 0;

        if (!src)
                return 0;
        while (src[n])
                n++;
        if (n == 0)
                return 0;

        d->cdi_devices = calloc(n, sizeof(char *));
        if (!d->cdi_devices)
                return -ENOMEM;
        d->n_cdi_devices = n;

        for (size_t i = 0; i < n; i++) {
                if (!kdp_device_cdi_name_is_valid(src[i]))
                        return reject(info, "CDI device name is not \"vendor/class=name\"");
                d->cdi_devices[i] = strdup(src[i]);
                if (!d->cdi_devices[i])
                        return -ENOMEM;
        }
        return 0;
}

/* ---- one block per device ---- */

static size_t str_size(const char *s) {
        return s ? strlen(s) + 1 : 0;
}

static size_t device_block_size(const kdp_device *d) {
        size_t n = d->n_dev_nodes * sizeof(kdp_dev_node) + d->n_mounts * sizeof(kdp_mount) +
                   (d->n_envs + d->n_annotations) * sizeof(kdp_kv) + d->n_cdi_devices * sizeof(char *);

        n += str_size(d->id) + str_size(d->pci_address) + str_size(d->pci_path);
        for (size_t i = 0; i < d->n_dev_nodes; i++)
                n += str_size(d->dev_nodes[i].host_path) + str_size(d->dev_nodes[i].container_path) +
                     str_size(d->dev_nodes[i].permissions);
        for (size_t i = 0; i < d->n_mounts; i++)
                n += str_size(d->mounts[i].host_path) + str_size(d->mounts[i].container_path);
        for (size_t i = 0; i < d->n_envs; i++)
                n += str_size(d->envs[i].key) + str_size(d->envs[i].value);
        for (size_t i = 0; i < d->n_annotations; i++)
                n += str_size(d->annotations[i].key) + str_size(d->annotations[i].value);
        for (size_t i = 0; i < d->n_cdi_devices; i++)
                n += str_size(d->cdi_devices[i]);
        return n;
}

/* Copies `s` to *cursor and advances it; NULL stays NULL. */
static char *block_str(char **cursor, const char *s) {
        char *dst = *cursor;
        size_t n = str_size(s);

        if (!s)
                return NULL;
        memcpy(dst, s, n);
        *cursor += n;
        return dst;
}

static void *block_array(char **cursor, const void *src, size_t size) {
        void *dst = *cursor;

        if (size == 0)
                return NULL;
        memcpy(dst, src, size);
        *cursor += size;
        return dst;
}

/* Moves everything but health_reason of a freshly copied device into one block. */
static int device_compact(kdp_device *d) {
        kdp_device c = *d;
        char *block, *cur;

        block = malloc(device_block_size(d) + 1);
        if (!block)
                return -ENOMEM;
        cur = block;
        c.dev_nodes = block_array(&cur, d->dev_nodes, d->n_dev_nodes * sizeof(kdp_dev_node));
        c.mounts = block_array(&cur, d->mounts, d->n_mounts * sizeof(kdp_mount));
        c.envs = block_array(&cur, d->envs, d->n_envs * sizeof(kdp_kv));
        c.annotations = block_array(&cur, d->annotations, d->n_annotations * sizeof(kdp_kv));
        c.cdi_devices = block_array(&cur, d->cdi_devices, d->n_cdi_devices * sizeof(char *));
        c.id = block_str(&cur, d->id);
        c.pci_address = block_str(&cur, d->pci_address);
        c.pci_path = block_str(&cur, d->pci_path);
        for (size_t i = 0; i < c.n_dev_nodes; i++) {
                c.dev_nodes[i].host_path = block_str(&cur, d->dev_nodes[i].host_path);
                c.dev_nodes[i].container_path = block_str(&cur, d->dev_nodes[i].container_path);
                c.dev_nodes[i].permissions = block_str(&cur, d->dev_nodes[i].permissions);
        }
        for (size_t i = 0; i < c.n_mounts; i++) {
                c.mounts[i].host_path = block_str(&cur, d->mounts[i].host_path);
                c.mounts[i].container_path = block_str(&cur, d->mounts[i].container_path);
        }
        for (size_t i = 0; i < c.n_envs; i++) {
                c.envs[i].key = block_str(&cur, d->envs[i].key);
                c.envs[i].value = block_str(&cur, d->envs[i].value);
        }
        for (size_t i = 0; i < c.n_annotations; i++) {
                c.annotations[i].key = block_str(&cur, d->annotations[i].key);
                c.annotations[i].value = block_str(&cur, d->annotations[i].value);
        }
        for (size_t i = 0; i < c.n_cdi_devices; i++)
                c.cdi_devices[i] = block_str(&cur, d->cdi_devices[i]);
        c.block = block;
        d->health_reason = NULL;        /* moved to c */
        kdp_device_done(d);
        *d = c;
        return 0;
}

int kdp_device_from_info(const kdp_device_info *info, const char *sysfs_root, kdp_device *ret) {
        _cleanup_(kdp_device_done) kdp_device d = {};
        int r;

        if (!info || !ret)
                return -EINVAL;

        if (!kdp_device_id_is_valid(info->id))
                return reject(info, "ID is empty, longer than 63 characters or not printable ASCII");
        if ((int) info->health < 0 || info->health >= _KDP_HEALTH_MAX)
                return reject(info, "health is neither healthy nor unhealthy");
        if (info->n_numa_nodes > KDP_DEVICE_NUMA_MAX)
                return reject(info, "more NUMA nodes than KDP_DEVICE_NUMA_MAX");
        for (unsigned i = 0; i < info->n_numa_nodes; i++)
                if (info->numa_nodes[i] < 0)
                        return reject(info, "negative NUMA node");
        if (info->pci_address && !pci_address_is_valid(info->pci_address))
                return reject(info, "PCI address is not DDDD:BB:DD.F");

        d.id = strdup(info->id);
        if (!d.id)
                return -ENOMEM;
        d.health = info->health;
        if (info->health != KDP_HEALTHY) {
                r = strdup_or_null(info->health_reason, &d.health_reason);
                if (r < 0)
                        return r;
        }
        d.n_numa_nodes = info->n_numa_nodes;
        memcpy(d.numa_nodes, info->numa_nodes, sizeof(d.numa_nodes[0]) * info->n_numa_nodes);

        r = strdup_or_null(info->pci_address, &d.pci_address);
        if (r < 0)
                return r;
        if (info->pci_address && sysfs_root) {
                r = resolve_pci_path(sysfs_root, info->pci_address, &d.pci_path);
                if (r < 0)
                        return r;
        }

        r = copy_dev_nodes(info, &d);
        if (r < 0)
                return r;
        r = copy_mounts(info, &d);
        if (r < 0)
                return r;
        r = copy_kvs(info, info->envs, true, &d.envs, &d.n_envs);
        if (r < 0)
                return r;
        r = copy_kvs(info, info->annotations, false, &d.annotations, &d.n_annotations);
        if (r < 0)
                return r;
        r = copy_cdi_devices(info, &d);
        if (r < 0)
                return r;
        r = device_compact(&d);
        if (r < 0)
                return r;

        *ret = d;
        d = (kdp_device) {};
        return 0;
}

static void kvs_free(kdp_kv *kvs, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free((char *) kvs[i].key);
                free((char *) kvs[i].value);
        }
        free(kvs);
}

void kdp_device_done(kdp_device *d) {
        if (!d)
                return;

        free(d->health_reason);
        if (d->block) {
                free(d->block);
                *d = (kdp_device) {};
                return;
        }
        free(d->id);
        free(d->pci_address);
        free(d->pci_path);
        for (size_t i = 0; i < d->n_dev_nodes; i++) {
                free((char *) d->dev_nodes[i].host_path);
                free((char *) d->dev_nodes[i].container_path);
                free((char *) d->dev_nodes[i].permissions);
        }
        free(d->dev_nodes);
        for (size_t i = 0; i < d->n_mounts; i++) {
                free((char *) d->mounts[i].host_path);
                free((char *) d->mounts[i].container_path);
        }
        free(d->mounts);
        kvs_free(d->envs, d->n_envs);
        kvs_free(d->annotations, d->n_annotations);
        for (size_t i = 0; i < d->n_cdi_devices; i++)
                free(d->cdi_devices[i]);
        free(d->cdi_devices);

        *d = (kdp_device) {};
}

static bool kvs_equal(const kdp_kv *a, const kdp_kv *b, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!streq_null(a[i].key, b[i].key) || !streq_null(a[i].value, b[i].value))
                        return false;
        return true;
}

bool kdp_device_equal(const kdp_device *a, const kdp_device *b) {
        if (a == b)
                return true;
        if (!a || !b)
                return false;

        if (!streq_null(a->id, b->id) || a->health != b->health ||
            !streq_null(a->health_reason, b->health_reason))
                return false;
        if (a->n_numa_nodes != b->n_numa_nodes ||
            memcmp(a->numa_nodes, b->numa_nodes, sizeof(a->numa_nodes[0]) * a->n_numa_nodes) != 0)
                return false;
        if (!streq_null(a->pci_address, b->pci_address) || !streq_null(a->pci_path, b->pci_path))
                return false;

        if (a->n_dev_nodes != b->n_dev_nodes || a->n_mounts != b->n_mounts || a->n_envs != b->n_envs ||
            a->n_annotations != b->n_annotations || a->n_cdi_devices != b->n_cdi_devices)
                return false;
        for (size_t i = 0; i < a->n_dev_nodes; i++)
                if (!streq_null(a->dev_nodes[i].host_path, b->dev_nodes[i].host_path) ||
                    !streq_null(a->dev_nodes[i].container_path, b->dev_nodes[i].container_path) ||
                    !streq_null(a->dev_nodes[i].permissions, b->dev_nodes[i].permissions))
                        return false;
        for (size_t i = 0; i < a->n_mounts; i++)
                if (!streq_null(a->mounts[i].host_path, b->mounts[i].host_path) ||
                    !streq_null(a->mounts[i].container_path, b->mounts[i].container_path) ||
                    !a->mounts[i].read_only != !b->mounts[i].read_only)
                        return false;
        if (!kvs_equal(a->envs, b->envs, a->n_envs) || !kvs_equal(a->annotations, b->annotations, a->n_annotations))
                return false;
        for (size_t i = 0; i < a->n_cdi_devices; i++)
                if (!streq_null(a->cdi_devices[i], b->cdi_devices[i]))
                        return false;
        return true;
}

bool kdp_device_has_topology(const kdp_device *d) {
        return d && d->n_numa_nodes > 0;
}

int kdp_device_list_init(kdp_device_list *l, const char *resource) {
        char *r = NULL;

        assert(l);

        if (resource) {
                r = strdup(resource);
                if (!r)
                        return -ENOMEM;
        }
        *l = (kdp_device_list) { .resource = r };
        return 0;
}

void kdp_device_list_done(kdp_device_list *l) {
        if (!l)
                return;

        for (size_t i = 0; i < l->n_devices; i++)
                kdp_device_done(&l->devices[i]);
        free(l->devices);
        free(l->id_slots);
        free(l->resource);
        *l = (kdp_device_list) {};
}

/* The index of `id`, or where it would be inserted; *ret_found tells which. */
/* Binary search in a sorted list: the index of `id`, or where it would go. */
static size_t list_search(const kdp_device_list *l, const char *id, bool *ret_found) {
        size_t lo = 0, hi = l->n_devices;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = strcmp(id, l->devices[mid].id);

                if (c == 0) {
                        *ret_found = true;
                        return mid;
                }
                if (c < 0)
                        hi = mid;
                else
                        lo = mid + 1;
        }
        *ret_found = false;
        return lo;
}

static size_t id_hash(const char *id) {
        size_t h = 14695981039346656037ULL;     /* FNV-1a */

        for (; *id; id++)
                h = (h ^ (unsigned char) *id) * 1099511628211ULL;
        return h;
}

/* The slot holding `id`, or the free slot where it would go. */
static size_t *id_slot(const kdp_device_list *l, const char *id) {
        size_t mask = l->n_id_slots - 1;

        for (size_t i = id_hash(id) & mask;; i = (i + 1) & mask) {
                size_t *slot = &l->id_slots[i];

                if (*slot == 0 || strcmp(l->devices[*slot - 1].id, id) == 0)
                        return slot;
        }
}

/* Keeps the ID hash at most half full, rebuilding it from the devices when it grows. */
static int id_hash_reserve(kdp_device_list *l, size_t n) {
        size_t want = 64;
        size_t *slots;

        while (want < 2 * n)
                want *= 2;
        if (l->id_slots && want <= l->n_id_slots)
                return 0;
        slots = calloc(want, sizeof(size_t));
        if (!slots)
                return -ENOMEM;
        free(l->id_slots);
        l->id_slots = slots;
        l->n_id_slots = want;
        for (size_t i = 0; i < l->n_devices; i++)
                *id_slot(l, l->devices[i].id) = i + 1;
        return 0;
}

static int list_reserve(kdp_device_list *l) {
        size_t n;
        kdp_device *p;

        if (l->n_devices < l->n_allocated)
                return 0;
        n = l->n_allocated ? l->n_allocated * 2 : 16;
        if (n > SIZE_MAX / sizeof(kdp_device))
                return -ENOMEM;
        p = realloc(l->devices, n * sizeof(kdp_device));
        if (!p)
                return -ENOMEM;
        l->devices = p;
        l->n_allocated = n;
        return 0;
}

int kdp_device_list_append(kdp_device_list *l, kdp_device *d) {
        size_t *slot;
        int r;

        assert(l);
        assert(d);
        assert(d->id);

        r = id_hash_reserve(l, l->n_devices + 1);
        if (r < 0)
                return r;
        slot = id_slot(l, d->id);
        if (*slot != 0)
                return -EEXIST;
        r = list_reserve(l);
        if (r < 0)
                return r;
        if (l->n_devices > 0 && strcmp(l->devices[l->n_devices - 1].id, d->id) > 0)
                l->unsorted = true;
        l->devices[l->n_devices] = *d;
        *slot = ++l->n_devices;
        *d = (kdp_device) {};
        return 0;
}

static int device_cmp(const void *a, const void *b) {
        return strcmp(((const kdp_device *) a)->id, ((const kdp_device *) b)->id);
}

void kdp_device_list_sort(kdp_device_list *l) {
        assert(l);

        /* sorting moves devices: the hash is rebuilt by the next append if there is one */
        free(l->id_slots);
        l->id_slots = NULL;
        l->n_id_slots = 0;
        l->unsorted = false;
        for (size_t i = 1; i < l->n_devices; i++)
                if (strcmp(l->devices[i - 1].id, l->devices[i].id) > 0) {
                        qsort(l->devices, l->n_devices, sizeof(kdp_device), device_cmp);
                        return;
                }
}

const kdp_device *kdp_device_list_find(const kdp_device_list *l, const char *id) {
        bool found;
        size_t i;

        if (!l || !id || l->n_devices == 0)
                return NULL;
        if (l->id_slots) {
                size_t *slot = id_slot(l, id);

                return *slot ? &l->devices[*slot - 1] : NULL;
        }
        i = list_search(l, id, &found);
        return found ? &l->devices[i] : NULL;
}

bool kdp_device_list_equal(const kdp_device_list *a, const kdp_device_list *b) {
        if (a == b)
                return true;
        if (!a || !b || a->n_devices != b->n_devices)
                return false;

        for (size_t i = 0; i < a->n_devices; i++)
                if (!kdp_device_equal(&a->devices[i], &b->devices[i]))
                        return false;
        return true;
}
