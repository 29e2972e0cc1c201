/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The Allocate answer of an SR-IOV pool, as the SR-IOV network device plugin
 * (sriovdp) gives it, so that the CNIs and the pod software written for it
 * work unchanged (docs/hardware-sriov.md §13).
 *
 * Env, for the functions f0..fn of one container (request order):
 *
 *   PCIDEVICE_<PREFIX>_<NAME>       = "<bdf0>,<bdf1>,..."
 *   PCIDEVICE_<PREFIX>_<NAME>_INFO  = {"<bdf>":{"<provider>":{"<k>":"<v>",...},...},...}
 *
 * The key is "PCIDEVICE_" + prefix + "_" + name upper-cased with only '.'
 * replaced by '_': a '-' of the resource name stays (the key is then no
 * shell identifier, as with sriovdp). The _INFO value is what Go's
 * encoding/json makes of sriovdp's map of maps: keys sorted bytewise at every
 * level, no spaces, strings escaped as json.Marshal does (Go >= 1.22, the
 * version sriovdp builds with): \" \\ \b \f \n \r \t, other control
 * characters and the HTML-unsafe < > & as \u00XX (lower-case hex), U+2028 and
 * U+2029 as \u2028 \u2029, each byte that is not part of valid UTF-8 as
 * \ufffd; everything else (DEL and valid UTF-8 included) as is.
 *
 * The providers of one function (sriovdp's pkg/infoprovider), each an object
 * of string values:
 *
 *   generic  always                 deviceID = the BDF
 *   vfio     driver vfio-pci        mount = /dev/vfio/vfio, dev-mount = /dev/vfio/<group>
 *                                   (the container path, in no-IOMMU mode too; no
 *                                   dev-mount when the function has no IOMMU group)
 *   uio      driver uio, igb_uio    mount = /dev/uio<M> ({} when it has no uio node)
 *   extra    the pool has           the "*" entry, then the function's own entry over it;
 *            additionalInfo         {} when it is {} (null or no key: no provider)
 *   vdpa     selector vdpaType and  mount = its vhost-vdpa node, when the device is of the
 *            a vDPA device          selector's type and that type is "vhost"; else {}
 *   rdma     selector isRdma (and   uverbs, umad, issm, rdma_cm: the container paths of
 *            no vdpaType) and an    its RDMA nodes (the last node whose path contains the
 *            RDMA device            word, checked in that order; ucm has no key),
 *                                   rdma_dev = the RDMA device ("mlx5_2")
 *   vhost    selector needVhostNet  net-mount = /dev/vhost-net, tun-mount = /dev/net/tun
 *            and /dev/vhost-net
 *
 * Doc/code mismatch: sriovdp's README shows "vfio":{"vfio-dev-mount":...,
 * "vfio-mount":...} and an "extraInfo" provider; its code emits "dev-mount",
 * "mount" and "extra" (plus "generic"), which is what consumers parse. We
 * follow the code.
 *
 * DeviceSpecs, function by function in request order, each provider's in the
 * order above, all "rw", the first one of a host path kept: vfio:
 * /dev/vfio/vfio, then the group node (host /dev/vfio/noiommu-<N>, container
 * /dev/vfio/<N> in no-IOMMU mode); uio: /dev/uio<M>; vdpa: its node; rdma:
 * its nodes in §7's order (ucm, issm, umad, uverbs, rdma_cm, as discover.c
 * lists them); vhost: /dev/vhost-net and /dev/net/tun, both or neither
 * (neither when /dev/net/tun is missing; the env still names both, as
 * sriovdp's does). Host paths are under the ctx's dev root, container paths
 * under /dev (a node path of sriov_func outside /dev is passed as is on both
 * sides). The response itself keeps the first node of a container path,
 * which here is the same rule (see node_add()).
 *
 * Where we differ on purpose: sriovdp tests /dev/vhost-net when it builds
 * its device list, we at Allocate; sriovdp fills the uio and vdpa "mount"
 * keys only once it has computed that device's DeviceSpecs, which its Allocate
 * does after the env, so its first answer for a device can lack them: we
 * always give them.
 *
 * A selector's vDPA, RDMA or vhost-net that the function or the node tree
 * lacks is left out with a warning naming the function, at each Allocate (as
 * sriovdp logs it).
 *
 * Device-info files (Device Information Specification 1.1.0, of the Network
 * Plumbing Working Group; sriov.c writes none for accelerator pools, as sriovdp): Multus reads <dir>/<resource>-<ID>-device.json when
 * a network attachment names the resource, and hands the JSON on to the CNI.
 * The name has every '/' of the resource and of the ID replaced by '-'
 * ("intel.com-e810_netdev-0000:8a:01.0-device.json"); the content is what
 * Go's json.Marshal makes of the spec's struct (the network-attachment-
 * definition client's DeviceInfo): members in struct order, empty ones left
 * out, no spaces, no newline at the end:
 *
 *   {"type":"pci","version":"1.1.0","pci":{"pci-address":"<bdf>",
 *    "vhost-net":"/dev/vhost-net","rdma-device":"mlx5_2","pf-pci-address":"<PF bdf>"}}
 *
 *   pci-address     always
 *   vhost-net       selector needVhostNet and /dev/vhost-net there (as its Allocate)
 *   rdma-device     selector isRdma and the function has an RDMA device (sriovdp
 *                   makes a device RDMA only for an isRdma selector)
 *   pf-pci-address  a VF: its PF
 *
 * A function of a vdpaType selector whose vDPA device is of that type is
 * described as one instead (as sriovdp does):
 *
 *   {"type":"vdpa","version":"1.1.0","vdpa":{"parent-device":"vdpa0",
 *    "driver":"vhost","path":"/dev/vhost-vdpa-0","pci-address":"<bdf>","pf-pci-address":"<PF bdf>"}}
 *
 * with "path" for a vhost device only (sriovdp has none for virtio).
 * "representor-device" (a switchdev VF's representor netdev) is not
 * discovered and never written.
 *
 * Ownership: reads the pool, the functions and their selectors (all the
 * caller's); writes copies into the caller's kdp_alloc_response; everything
 * it allocates is freed before it returns.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <kdp/backend.h>
#include <kdp/cleanup.h>

#include "sriov.h"

/* ---- a JSON object of strings and objects, written with sorted keys ---- */

typedef struct json_obj json_obj;

typedef struct json_member {
        char *key;
        char *value;                    /* a string member; NULL for an object member */
        json_obj *obj;                  /* an object member; NULL for a string member */
} json_member;

struct json_obj {
        json_member *v;
        size_t n;
};

static json_obj *json_free(json_obj *o) {
        if (!o)
                return NULL;
        for (size_t i = 0; i < o->n; i++) {
                free(o->v[i].key);
                free(o->v[i].value);
                json_free(o->v[i].obj);
        }
        free(o->v);
        free(o);
        return NULL;
}
KDP_DEFINE_CLEANUP_FUNC(json_obj, json_free)

static json_member *json_find(json_obj *o, const char *key) {
        for (size_t i = 0; i < o->n; i++)
                if (strcmp(o->v[i].key, key) == 0)
                        return &o->v[i];
        return NULL;
}

static json_member *json_append(json_obj *o, const char *key) {
        _cleanup_free_ char *k = strdup(key);
        json_member *v;

        if (!k)
                return NULL;
        v = realloc(o->v, (o->n + 1) * sizeof(*v));
        if (!v)
                return NULL;
        o->v = v;
        o->v[o->n] = (json_member){ .key = KDP_TAKE_PTR(k) };
        return &o->v[o->n++];
}

/* Sets the string member `key` (a map: a later value replaces an earlier one). */
static int json_set(json_obj *o, const char *key, const char *value) {
        _cleanup_free_ char *s = strdup(value);
        json_member *m;

        if (!s)
                return -ENOMEM;
        m = json_find(o, key) ?: json_append(o, key);
        if (!m)
                return -ENOMEM;
        m->obj = json_free(m->obj);
        free(m->value);
        m->value = KDP_TAKE_PTR(s);
        return 0;
}

/* The object member `key`, made empty if there was none (or a string). */
static int json_child(json_obj *o, const char *key, json_obj **ret) {
        json_member *m = json_find(o, key) ?: json_append(o, key);

        if (!m)
                return -ENOMEM;
        if (!m->obj) {
                m->obj = calloc(1, sizeof(json_obj));
                if (!m->obj)
                        return -ENOMEM;
                free(m->value);
                m->value = NULL;
        }
        *ret = m->obj;
        return 0;
}

/* Bytes of the valid UTF-8 sequence at s (1-4), or 0 when s[0] starts none (Go's accept ranges). */
static size_t utf8_len(const unsigned char *s) {
        unsigned char lo = 0x80, hi = 0xbf;
        size_t n;

        if (s[0] >= 0xc2 && s[0] <= 0xdf)
                n = 2;
        else if (s[0] >= 0xe0 && s[0] <= 0xef) {
                n = 3;
                if (s[0] == 0xe0)
                        lo = 0xa0;              /* overlong */
                else if (s[0] == 0xed)
                        hi = 0x9f;              /* surrogates */
        } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
                n = 4;
                if (s[0] == 0xf0)
                        lo = 0x90;              /* overlong */
                else if (s[0] == 0xf4)
                        hi = 0x8f;              /* beyond U+10FFFF */
        } else
                return 0;
        if (s[1] < lo || s[1] > hi)
                return 0;
        for (size_t i = 2; i < n; i++)
                if (s[i] < 0x80 || s[i] > 0xbf)
                        return 0;
        return n;
}

/* `s` as a JSON string the way Go's json.Marshal writes it (see the top of the file). */
static void json_write_string(FILE *f, const char *s) {
        static const char hex[] = "0123456789abcdef";
        const unsigned char *p = (const unsigned char *) s;

        fputc('"', f);
        while (*p) {
                unsigned char c = *p;
                size_t n;

                if (c >= 0x80) {
                        n = utf8_len(p);
                        if (n == 0) {
                                fputs("\\ufffd", f);
                                p++;
                        } else if (n == 3 && p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9)) {
                                fprintf(f, "\\u202%c", p[2] == 0xa8 ? '8' : '9');
                                p += n;
                        } else {
                                fwrite(p, 1, n, f);
                                p += n;
                        }
                        continue;
                }
                p++;
                switch (c) {
                case '"': fputs("\\\"", f); break;
                case '\\': fputs("\\\\", f); break;
                case '\b': fputs("\\b", f); break;
                case '\f': fputs("\\f", f); break;
                case '\n': fputs("\\n", f); break;
                case '\r': fputs("\\r", f); break;
                case '\t': fputs("\\t", f); break;
                default:
                        if (c < 0x20 || c == '<' || c == '>' || c == '&')
                                fprintf(f, "\\u00%c%c", hex[c >> 4], hex[c & 0xf]);
                        else
                                fputc(c, f);
                }
        }
        fputc('"', f);
}

static int member_cmp(const void *a, const void *b) {
        return strcmp((*(const json_member *const *) a)->key, (*(const json_member *const *) b)->key);
}

static int json_write(FILE *f, const json_obj *o) {
        _cleanup_free_ const json_member **order = NULL;

        if (o->n > 0) {
                order = calloc(o->n, sizeof(*order));
                if (!order)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < o->n; i++)
                order[i] = &o->v[i];
        if (o->n > 1)
                qsort(order, o->n, sizeof(*order), member_cmp);

        fputc('{', f);
        for (size_t i = 0; i < o->n; i++) {
                int r;

                if (i > 0)
                        fputc(',', f);
                json_write_string(f, order[i]->key);
                fputc(':', f);
                if (order[i]->obj) {
                        r = json_write(f, order[i]->obj);
                        if (r < 0)
                                return r;
                } else
                        json_write_string(f, order[i]->value);
        }
        fputc('}', f);
        return 0;
}

static int json_to_string(const json_obj *o, char **ret) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        int r;

        if (!f)
                return -ENOMEM;
        r = json_write(f, o);
        if (ferror(f) && r >= 0)
                r = -ENOMEM;
        if (fclose(f) != 0 && r >= 0)
                r = -ENOMEM;
        if (r < 0)
                return r;
        *ret = KDP_TAKE_PTR(buf);
        return 0;
}

/* ---- DeviceSpecs ---- */

/* Where the nodes go: the response, and the ctx whose dev root holds the host paths. */
typedef struct answer_nodes {
        const kdp_backend_ctx *ctx;
        kdp_alloc_response *resp;
} answer_nodes;

/*
 * Adds the node the container sees at `container`: its host path is `host_rel` (or, when NULL,
 * what follows "/dev/" in `container`) under the dev root; a path outside /dev is used as is.
 * The response keeps the first node of a container path: as the host path follows from it
 * (a group is either no-IOMMU or not), that is sriovdp's first node of a host path.
 */
static int node_add(answer_nodes *a, const char *container, const char *host_rel) {
        _cleanup_free_ char *host = NULL;

        if (strncmp(container, "/dev/", 5) == 0) {
                int r = kdp_backend_path(a->ctx, KDP_PATH_DEV, host_rel ?: container + 5, &host);

                if (r < 0)
                        return r;
        } else if (!(host = strdup(container)))
                return -ENOMEM;

        return kdp_alloc_response_add_dev_node(a->resp, &(kdp_dev_node){
                .host_path = host, .container_path = container, .permissions = "rw" });
}

/* True if <dev root>/<rel> exists (stat: a link to a node counts). */
static bool dev_exists(const kdp_backend_ctx *ctx, const char *rel) {
        _cleanup_free_ char *path = NULL;
        struct stat st;

        return kdp_backend_path(ctx, KDP_PATH_DEV, rel, &path) >= 0 && stat(path, &st) == 0;
}

/* ---- the providers of one function ---- */

static int provider_vfio(answer_nodes *a, json_obj *dev, const sriov_func *f) {
        char container[32], host_rel[32];
        json_obj *p;
        int r;

        r = json_child(dev, "vfio", &p);
        if (r < 0)
                return r;
        r = json_set(p, "mount", "/dev/vfio/vfio");
        if (r < 0)
                return r;
        r = node_add(a, "/dev/vfio/vfio", NULL);
        if (r < 0 || f->iommu_group < 0)
                return r;

        snprintf(container, sizeof(container), "/dev/vfio/%d", f->iommu_group);
        snprintf(host_rel, sizeof(host_rel), "vfio/%s%d", f->noiommu ? "noiommu-" : "", f->iommu_group);
        r = json_set(p, "dev-mount", container);
        if (r < 0)
                return r;
        return node_add(a, container, host_rel);
}

static int provider_uio(answer_nodes *a, json_obj *dev, const sriov_func *f) {
        char path[32];
        json_obj *p;
        int r;

        r = json_child(dev, "uio", &p);
        if (r < 0 || f->uio_index < 0)
                return r;
        snprintf(path, sizeof(path), "/dev/uio%d", f->uio_index);
        r = json_set(p, "mount", path);
        if (r < 0)
                return r;
        return node_add(a, path, NULL);
}

static int extra_merge(json_obj *p, const sriov_info_entry *e) {
        for (size_t i = 0; i < e->keys.n && i < e->values.n; i++) {
                int r = json_set(p, e->keys.v[i], e->values.v[i]);

                if (r < 0)
                        return r;
        }
        return 0;
}

static int provider_extra(json_obj *dev, const sriov_pool *pool, const sriov_func *f) {
        json_obj *p;
        int r;

        r = json_child(dev, "extra", &p);
        for (size_t i = 0; r >= 0 && i < pool->n_info; i++)
                if (pool->info[i].key && strcmp(pool->info[i].key, "*") == 0)
                        r = extra_merge(p, &pool->info[i]);
        for (size_t i = 0; r >= 0 && i < pool->n_info; i++)
                if (pool->info[i].key && strcmp(pool->info[i].key, f->address) == 0)
                        r = extra_merge(p, &pool->info[i]);
        return r;
}

static int provider_vdpa(answer_nodes *a, json_obj *dev, const sriov_selector *sel, const sriov_func *f) {
        json_obj *p;
        int r;

        r = json_child(dev, "vdpa", &p);
        if (r < 0 || strcmp(f->vdpa_type, sel->vdpa_type) != 0 || strcmp(f->vdpa_type, "vhost") != 0 ||
            !f->vdpa_path[0])
                return r;
        r = json_set(p, "mount", f->vdpa_path);
        if (r < 0)
                return r;
        return node_add(a, f->vdpa_path, NULL);
}

static int provider_rdma(answer_nodes *a, json_obj *dev, const sriov_func *f) {
        static const char *const words[] = { "uverbs", "umad", "issm", "rdma_cm" };
        json_obj *p;
        int r;

        r = json_child(dev, "rdma", &p);
        for (size_t i = 0; r >= 0 && i < f->n_rdma_nodes && i < SRIOV_RDMA_NODES_MAX; i++) {
                const char *node = f->rdma_nodes[i];

                r = node_add(a, node, NULL);
                for (size_t w = 0; r >= 0 && w < KDP_ELEMENTSOF(words); w++)
                        if (strstr(node, words[w])) {
                                r = json_set(p, words[w], node);
                                break;
                        }
        }
        if (r >= 0)
                r = json_set(p, "rdma_dev", f->rdma_dev);
        return r;
}

static int provider_vhost(answer_nodes *a, json_obj *dev, const sriov_func *f) {
        json_obj *p;
        int r;

        r = json_child(dev, "vhost", &p);
        if (r >= 0)
                r = json_set(p, "net-mount", "/dev/vhost-net");
        if (r >= 0)
                r = json_set(p, "tun-mount", "/dev/net/tun");
        if (r < 0)
                return r;
        if (!dev_exists(a->ctx, "net/tun")) {
                kdp_backend_log_warning(a->ctx, "Left out vhost-net and tun: tun is missing",
                                        KDP_F_STR("pciAddress", f->address), KDP_F_STR("path", "/dev/net/tun"));
                return 0;
        }
        r = node_add(a, "/dev/vhost-net", NULL);
        if (r >= 0)
                r = node_add(a, "/dev/net/tun", NULL);
        return r;
}

/* Adds `f`'s entry to the _INFO object and its nodes to the response. */
static int answer_func(answer_nodes *a, json_obj *info, const sriov_pool *pool, const sriov_selector *sel,
                       const sriov_func *f) {
        json_obj *dev, *generic;
        int r;

        r = json_child(info, f->address, &dev);
        if (r >= 0)
                r = json_child(dev, "generic", &generic);
        if (r >= 0)
                r = json_set(generic, "deviceID", f->address);
        if (r < 0)
                return r;
        if (strcmp(f->driver, "vfio-pci") == 0)
                r = provider_vfio(a, dev, f);
        else if (strcmp(f->driver, "uio") == 0 || strcmp(f->driver, "igb_uio") == 0)
                r = provider_uio(a, dev, f);
        if (r >= 0 && (pool->has_info || pool->n_info > 0))
                r = provider_extra(dev, pool, f);
        if (r < 0 || !sel)
                return r;

        if (sel->vdpa_type[0]) {
                if (f->vdpa_type[0])
                        r = provider_vdpa(a, dev, sel, f);
                else
                        kdp_backend_log_warning(a->ctx, "Left out vDPA: the function has no vDPA device",
                                                KDP_F_STR("pciAddress", f->address));
        } else if (sel->is_rdma) {
                if (f->rdma_dev[0])
                        r = provider_rdma(a, dev, f);
                else
                        kdp_backend_log_warning(a->ctx, "Left out RDMA: the function has no RDMA device",
                                                KDP_F_STR("pciAddress", f->address));
        }
        if (r < 0 || !sel->need_vhost_net)
                return r;
        if (!dev_exists(a->ctx, "vhost-net")) {
                kdp_backend_log_warning(a->ctx, "Left out vhost-net: it is missing",
                                        KDP_F_STR("pciAddress", f->address), KDP_F_STR("path", "/dev/vhost-net"));
                return 0;
        }
        return provider_vhost(a, dev, f);
}

/* ---- the device-info file a CNI reads ---- */

/* Appends `,"key":"value"` (no comma first when *first), nothing when value is empty. */
static void devinfo_member(FILE *f, bool *first, const char *key, const char *value) {
        if (!value || !value[0])
                return;
        if (!*first)
                fputc(',', f);
        *first = false;
        json_write_string(f, key);
        fputc(':', f);
        json_write_string(f, value);
}

int sriov_answer_devinfo_name(const char *resource, const char *id, char **ret) {
        char *name;

        if (!resource || !resource[0] || !id || !id[0] || !ret)
                return -EINVAL;
        if (asprintf(&name, "%s-%s-device.json", resource, id) < 0)
                return -ENOMEM;
        for (char *p = name; *p; p++)
                if (*p == '/')
                        *p = '-';
        *ret = name;
        return 0;
}

int sriov_answer_devinfo(const kdp_backend_ctx *ctx, const sriov_selector *sel, const sriov_func *f, char **ret) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        bool first = true, vdpa;
        FILE *m;
        int r = 0;

        if (!ctx || !f || !f->address[0] || !ret)
                return -EINVAL;
        vdpa = sel && sel->vdpa_type[0] && f->vdpa_dev[0] && strcmp(f->vdpa_type, sel->vdpa_type) == 0;
        m = open_memstream(&buf, &len);
        if (!m)
                return -ENOMEM;
        fprintf(m, "{\"type\":\"%s\",\"version\":\"1.1.0\",\"%s\":{", vdpa ? "vdpa" : "pci", vdpa ? "vdpa" : "pci");
        if (vdpa) {
                devinfo_member(m, &first, "parent-device", f->vdpa_dev);
                devinfo_member(m, &first, "driver", f->vdpa_type);
                if (strcmp(f->vdpa_type, "vhost") == 0)
                        devinfo_member(m, &first, "path", f->vdpa_path);
                devinfo_member(m, &first, "pci-address", f->address);
        } else {
                devinfo_member(m, &first, "pci-address", f->address);
                if (sel && sel->need_vhost_net && dev_exists(ctx, "vhost-net"))
                        devinfo_member(m, &first, "vhost-net", "/dev/vhost-net");
                if (sel && sel->is_rdma)
                        devinfo_member(m, &first, "rdma-device", f->rdma_dev);
        }
        devinfo_member(m, &first, "pf-pci-address", f->pf_address);
        fputs("}}", m);
        if (ferror(m))
                r = -ENOMEM;
        if (fclose(m) != 0 && r >= 0)
                r = -ENOMEM;
        if (r < 0)
                return r;
        *ret = KDP_TAKE_PTR(buf);
        return 0;
}

/* ---- the module's interface ---- */

int sriov_answer_env_key(const sriov_pool *pool, char **ret) {
        char *key;

        if (!pool || !ret || !pool->resource_prefix[0] || !pool->resource_name[0])
                return -EINVAL;
        if (asprintf(&key, "PCIDEVICE_%s_%s", pool->resource_prefix, pool->resource_name) < 0)
                return -ENOMEM;
        for (char *p = key; *p; p++)
                if (*p == '.')
                        *p = '_';
                else if (*p >= 'a' && *p <= 'z')
                        *p = (char) (*p - 'a' + 'A');
        *ret = key;
        return 0;
}

int sriov_answer(const kdp_backend_ctx *ctx, const sriov_pool *pool, const sriov_func *const *funcs,
                 const size_t *selectors, size_t n, kdp_alloc_response *resp) {
        answer_nodes a = { .ctx = ctx, .resp = resp };
        _cleanup_(json_freep) json_obj *info = NULL;
        _cleanup_free_ char *key = NULL, *info_key = NULL, *ids = NULL, *json = NULL;
        size_t ids_len = 0;
        FILE *f;
        int r;

        if (!ctx || !pool || !funcs || n == 0 || !resp)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (!funcs[i] || !funcs[i]->address[0] || (selectors && selectors[i] >= pool->n_selectors))
                        return -EINVAL;

        r = sriov_answer_env_key(pool, &key);
        if (r < 0)
                return r;
        if (asprintf(&info_key, "%s_INFO", key) < 0)
                return -ENOMEM;
        info = calloc(1, sizeof(json_obj));
        if (!info)
                return -ENOMEM;

        f = open_memstream(&ids, &ids_len);
        if (!f)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                fprintf(f, "%s%s", i > 0 ? "," : "", funcs[i]->address);
        r = ferror(f) ? -ENOMEM : 0;
        if (fclose(f) != 0 || r < 0)
                return -ENOMEM;

        for (size_t i = 0; i < n; i++) {
                r = answer_func(&a, info, pool, selectors ? &pool->selectors[selectors[i]] : NULL, funcs[i]);
                if (r < 0)
                        return r;
        }
        r = json_to_string(info, &json);
        if (r < 0)
                return r;

        r = kdp_alloc_response_add_env(resp, key, ids);
        if (r < 0)
                return r;
        return kdp_alloc_response_add_env(resp, info_key, json);
}
