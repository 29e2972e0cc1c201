/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * FPGA discovery, sysfs only (README.md, "Discovery"): from each PCI function down.
 *
 *   Intel DFL   <pci>/fpga_region/region<M>/dfl-fme.<N> and dfl-port.<N> (a base region; a
 *               VF bound to dfl-pci has one with a port only); the FME's PR region
 *               dfl-fme-region.<n>/fpga_region/region<m>/compat_id is the interface ID
 *   Intel OPAE  <pci>/fpga/intel-fpga-dev.<i>/intel-fpga-fme.<j> (pr/interface_id) and
 *               intel-fpga-port.<k>
 *   AMD XRT     user PF (bound to xocl) and management PF (bound to xclmgmt)
 *               paired by domain:bus:device; rom.<id>/VBNV and timestamp, logic_uuids, the
 *               user PF's drm/renderD<N>, /dev/xclmgmt<instance>
 *
 * Names are matched by prefix and never computed from each other (region and bridge numbers
 * depend on probe order). A device node's path comes from the device's uevent DEVNAME, else
 * from its name when it has a `dev` file. No FPGA node is ever opened: an open can take the
 * port from the workload or block partial reconfiguration.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <kdp/backend.h>
#include <kdp/cleanup.h>
#include <kdp/pci.h>

#include "fpga.h"

#define ENTRIES_MAX 256

typedef fpga_discover_names name_list;

void fpga_discover_names_done(fpga_discover_names *l) {
        free(l->names);
        *l = (fpga_discover_names){ 0 };
}

static int compare_names(const void *a, const void *b) {
        return strverscmp(a, b);
}

int fpga_discover_list(const kdp_backend_ctx *ctx, const char *rel, const char *prefix, name_list *ret) {
        _cleanup_free_ char *path = NULL, *sub = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        name_list l = { 0 };
        struct dirent *de;

        if (asprintf(&sub, "devices/%s", rel) < 0)
                return -ENOMEM;
        if (kdp_backend_path(ctx, KDP_PATH_SYSFS, sub, &path) < 0)
                return -ENOMEM;
        d = opendir(path);
        if (!d) {
                *ret = l;
                return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
        }
        while ((de = readdir(d))) {
                size_t len = strlen(de->d_name);
                void *nn;

                if (strncmp(de->d_name, prefix, strlen(prefix)) != 0 || len >= FPGA_SYSNAME_MAX)
                        continue;
                if (l.n >= ENTRIES_MAX)
                        break;
                nn = realloc(l.names, (l.n + 1) * sizeof(*l.names));
                if (!nn) {
                        fpga_discover_names_done(&l);
                        return -ENOMEM;
                }
                l.names = nn;
                memcpy(l.names[l.n++], de->d_name, len + 1);
        }
        if (l.n)
                qsort(l.names, l.n, sizeof(*l.names), compare_names);
        *ret = l;
        return 0;
}

int fpga_discover_read_attr(const kdp_backend_ctx *ctx, const char *rel, const char *file, char **ret) {
        _cleanup_free_ char *path = NULL, *sub = NULL;

        if (asprintf(&sub, "devices/%s/%s", rel, file) < 0)
                return -ENOMEM;
        if (kdp_backend_path(ctx, KDP_PATH_SYSFS, sub, &path) < 0)
                return -ENOMEM;
        return kdp_sysfs_read_text(path, ret);
}

static bool has_attr(const kdp_backend_ctx *ctx, const char *rel, const char *file) {
        _cleanup_free_ char *path = NULL, *sub = NULL;
        struct stat st;

        if (asprintf(&sub, "devices/%s/%s", rel, file) < 0 || kdp_backend_path(ctx, KDP_PATH_SYSFS, sub, &path) < 0)
                return false;
        return lstat(path, &st) == 0;
}

/* Reads an ID attribute in canonical form into ret ("" and the -errno when it fails). */
static int read_id(const kdp_backend_ctx *ctx, const char *rel, const char *file, char ret[FPGA_ID_MAX]) {
        _cleanup_free_ char *text = NULL;
        int r = fpga_discover_read_attr(ctx, rel, file, &text);
        const char *last;

        ret[0] = '\0';
        if (r < 0)
                return r;
        last = strrchr(text, '\n');    /* logic_uuids: one per line, the last one counts */
        return fpga_name_canonical_id(last ? last + 1 : text, ret);
}

/* "<dev root>/<DEVNAME>" of the device at rel, or "<dev root>/<name>" with a `dev` file; "" for neither. */
static void read_devnode(const kdp_backend_ctx *ctx, const char *rel, const char *name, char ret[FPGA_NODE_MAX]) {
        _cleanup_free_ char *uevent = NULL, *node = NULL;
        const char *devname = NULL;

        ret[0] = '\0';
        if (fpga_discover_read_attr(ctx, rel, "uevent", &uevent) >= 0)
                for (char *line = uevent; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
                        if (strncmp(line, "DEVNAME=", 8) == 0) {
                                char *end = strchr(line, '\n');

                                if (end)
                                        *end = '\0';
                                devname = line + 8;
                                break;
                        }
        if (!devname && has_attr(ctx, rel, "dev"))
                devname = name;
        while (devname && *devname == '/')
                devname++;
        if (!devname || !*devname || kdp_backend_path(ctx, KDP_PATH_DEV, devname, &node) < 0)
                return;
        if (strlen(node) < FPGA_NODE_MAX)
                snprintf(ret, FPGA_NODE_MAX, "%s", node);
}

static int skip(fpga_discovery *d, const char *address, const char *reason) {
        fpga_skip *n = realloc(d->skips, (d->n_skips + 1) * sizeof(*n));

        if (!n)
                return -ENOMEM;
        d->skips = n;
        n = &d->skips[d->n_skips++];
        snprintf(n->address, sizeof(n->address), "%s", address);
        snprintf(n->reason, sizeof(n->reason), "%s", reason);
        return 0;
}

/* ---- Intel ---- */

/* PF and VF device IDs of the cards dfl-pci (and intel-fpga-pci) serve. */
static const struct { uint16_t vendor, device; } intel_ids[] = {
        { 0x8086, 0x09c4 }, { 0x8086, 0x09c5 }, { 0x8086, 0x0b30 }, { 0x8086, 0x0b31 },
        { 0x8086, 0x0b2b }, { 0x8086, 0x0b2c }, { 0x8086, 0xbcce }, { 0x8086, 0xbccf },
        { 0x8086, 0xbcbd }, { 0x8086, 0xbcbe }, { 0x8086, 0xbcbf }, { 0x8086, 0xbcc0 },
        { 0x8086, 0xbcc1 }, { 0x1c2c, 0x1000 }, { 0x1c2c, 0x1001 },
};

static bool intel_driver(const char *driver) {
        return strcmp(driver, "dfl-pci") == 0 || strcmp(driver, "intel-fpga-pci") == 0;
}

static bool intel_id(const kdp_pci_device *p) {
        for (size_t i = 0; i < KDP_ELEMENTSOF(intel_ids); i++)
                if (intel_ids[i].vendor == p->vendor_id && intel_ids[i].device == p->device_id)
                        return true;
        return false;
}

/* Vendors of Alveo-like cards AMD's plugin lists; only Xilinx's own ID says "FPGA" without a marker. */
static bool xrt_vendor(uint16_t vendor) {
        return vendor == 0x10ee || vendor == 0x13fe || vendor == 0x1d0f || vendor == 0x3475;
}

/*
 * XRT's PFs by their drivers. The drivers' empty marker files (user_pf, mgmt_pf) say the same
 * while they are bound and go with them; a function on another driver (vfio-pci) is no card
 * of ours.
 */
static bool xrt_user(const kdp_pci_device *p) {
        return xrt_vendor(p->vendor_id) && strcmp(p->driver, "xocl") == 0;
}

static bool xrt_mgmt(const kdp_pci_device *p) {
        return xrt_vendor(p->vendor_id) && strcmp(p->driver, "xclmgmt") == 0;
}

bool fpga_discover_is_candidate(const kdp_pci_device *p) {
        return intel_id(p) || intel_driver(p->driver) || p->vendor_id == 0x10ee || strcmp(p->driver, "xocl") == 0 ||
               strcmp(p->driver, "xclmgmt") == 0;
}

static int add_fme(fpga_discovery *d, const kdp_backend_ctx *ctx, const kdp_pci_device *p, const char *rel,
                   const char *name, fpga_layout layout) {
        fpga_fme *n = realloc(d->fmes, (d->n_fmes + 1) * sizeof(*n));
        _cleanup_free_ char *fme_rel = NULL;
        name_list regions = { 0 }, inner = { 0 };
        int r = 0;

        if (!n)
                return -ENOMEM;
        d->fmes = n;
        n = &d->fmes[d->n_fmes++];
        *n = (fpga_fme){ .layout = layout, .interface_err = -ENOENT };
        snprintf(n->name, sizeof(n->name), "%s", name);
        if (snprintf(n->devpath, sizeof(n->devpath), "%s/%s", rel, name) >= (int) sizeof(n->devpath)) {
                d->n_fmes--;            /* no sysfs path is that long */
                return 0;
        }
        snprintf(n->pci_address, sizeof(n->pci_address), "%s", p->address);
        read_devnode(ctx, n->devpath, name, n->devnode);
        if (layout == FPGA_LAYOUT_OPAE) {
                n->interface_err = read_id(ctx, n->devpath, "pr/interface_id", n->interface_id);
                snprintf(n->interface_file, sizeof(n->interface_file), "%s/pr/interface_id", n->devpath);
                return 0;
        }
        /* the PR region: dfl-fme-region.<n>/fpga_region/region<m>/compat_id */
        r = fpga_discover_list(ctx, n->devpath, "dfl-fme-region.", &regions);
        for (size_t i = 0; r >= 0 && i < regions.n && n->interface_err < 0; i++) {
                char sub[FPGA_DEVPATH_MAX + FPGA_SYSNAME_MAX + 16];

                snprintf(sub, sizeof(sub), "%s/%s/fpga_region", n->devpath, regions.names[i]);
                r = fpga_discover_list(ctx, sub, "region", &inner);
                for (size_t k = 0; r >= 0 && k < inner.n; k++) {
                        if (asprintf(&fme_rel, "%s/%s", sub, inner.names[k]) < 0) {
                                r = -ENOMEM;
                                break;
                        }
                        n->interface_err = read_id(ctx, fme_rel, "compat_id", n->interface_id);
                        if (n->interface_err >= 0)
                                snprintf(n->interface_file, sizeof(n->interface_file), "%s/compat_id", fme_rel);
                        free(fme_rel);
                        fme_rel = NULL;
                        if (n->interface_err >= 0)
                                break;
                }
                fpga_discover_names_done(&inner);
        }
        fpga_discover_names_done(&regions);
        return r < 0 ? r : 0;
}

static int add_port(fpga_discovery *d, const kdp_backend_ctx *ctx, const kdp_pci_device *p, const char *rel,
                    const char *name, fpga_layout layout, int fme) {
        fpga_port *n = realloc(d->ports, (d->n_ports + 1) * sizeof(*n));

        if (!n)
                return -ENOMEM;
        d->ports = n;
        n = &d->ports[d->n_ports++];
        *n = (fpga_port){ .layout = layout, .fme = fme };
        snprintf(n->name, sizeof(n->name), "%s", name);
        if (snprintf(n->devpath, sizeof(n->devpath), "%s/%s", rel, name) >= (int) sizeof(n->devpath)) {
                d->n_ports--;
                return 0;
        }
        snprintf(n->pci_address, sizeof(n->pci_address), "%s", p->address);
        read_devnode(ctx, n->devpath, name, n->devnode);
        fpga_discover_read_afu(ctx, n);
        return 0;
}

void fpga_discover_read_afu(const kdp_backend_ctx *ctx, fpga_port *port) {
        port->afu_err = read_id(ctx, port->devpath, "afu_id", port->afu_id);
}

/* One container (a DFL base region or an OPAE intel-fpga-dev.N): its FME, then its ports. Returns the items found. */
static int walk_container(fpga_discovery *d, const kdp_backend_ctx *ctx, const kdp_pci_device *p, const char *rel,
                          fpga_layout layout) {
        const char *fme_prefix = layout == FPGA_LAYOUT_DFL ? "dfl-fme." : "intel-fpga-fme.";
        const char *port_prefix = layout == FPGA_LAYOUT_DFL ? "dfl-port." : "intel-fpga-port.";
        name_list fmes = { 0 }, ports = { 0 };
        int r, fme = -1, found = 0;

        r = fpga_discover_list(ctx, rel, fme_prefix, &fmes);
        if (r >= 0)
                r = fpga_discover_list(ctx, rel, port_prefix, &ports);
        for (size_t i = 0; r >= 0 && i < fmes.n; i++) {
                r = add_fme(d, ctx, p, rel, fmes.names[i], layout);
                fme = (int) d->n_fmes - 1;
                found++;
        }
        for (size_t i = 0; r >= 0 && i < ports.n; i++) {
                r = add_port(d, ctx, p, rel, ports.names[i], layout, fme);
                found++;
        }
        fpga_discover_names_done(&fmes);
        fpga_discover_names_done(&ports);
        return r < 0 ? r : found;
}

/* Every container under one Intel function; the number of FMEs and ports found. */
static int walk_intel(fpga_discovery *d, const kdp_backend_ctx *ctx, const kdp_pci_device *p) {
        static const struct { const char *dir, *prefix; fpga_layout layout; } kinds[] = {
                { "fpga_region", "region", FPGA_LAYOUT_DFL },
                { "fpga", "intel-fpga-dev.", FPGA_LAYOUT_OPAE },
        };
        int found = 0;

        for (size_t k = 0; k < KDP_ELEMENTSOF(kinds); k++) {
                char sub[FPGA_DEVPATH_MAX];
                name_list l = { 0 };
                int r;

                snprintf(sub, sizeof(sub), "%s/%s", p->path, kinds[k].dir);
                r = fpga_discover_list(ctx, sub, kinds[k].prefix, &l);
                for (size_t i = 0; r >= 0 && i < l.n; i++) {
                        char rel[FPGA_DEVPATH_MAX + FPGA_SYSNAME_MAX];

                        snprintf(rel, sizeof(rel), "%s/%s", sub, l.names[i]);
                        r = walk_container(d, ctx, p, rel, kinds[k].layout);
                        if (r > 0)
                                found += r;
                }
                fpga_discover_names_done(&l);
                if (r == -ENOMEM)
                        return r;
        }
        return found;
}

/* Ports without an FME in their own container (on a VF) take their PF's. */
static void link_vf_ports(fpga_discovery *d, const kdp_pci_list *l) {
        for (size_t i = 0; i < d->n_ports; i++) {
                const kdp_pci_device *p;

                if (d->ports[i].fme >= 0 || !(p = kdp_pci_list_find(l, d->ports[i].pci_address)) || !p->physfn[0])
                        continue;
                for (size_t k = 0; k < d->n_fmes; k++)
                        if (strcmp(d->fmes[k].pci_address, p->physfn) == 0) {
                                d->ports[i].fme = (int) k;
                                break;
                        }
        }
}

/* ---- AMD XRT ---- */

/* "dddd:bb:dd" of "dddd:bb:dd.f": the card's slot. */
static bool same_slot(const char *a, const char *b) {
        size_t la = strlen(a), lb = strlen(b);

        return la == lb && la > 2 && strncmp(a, b, la - 2) == 0;
}

/* VBNV and timestamp of the first rom.* of the function that has them. */
static int read_rom(const kdp_backend_ctx *ctx, const kdp_pci_device *p, fpga_xrt *x) {
        name_list roms = { 0 };
        int r = fpga_discover_list(ctx, p->path, "rom.", &roms);

        if (r >= 0)
                r = -ENOENT;
        for (size_t i = 0; i < roms.n; i++) {
                _cleanup_free_ char *vbnv = NULL, *ts = NULL;
                char rel[FPGA_DEVPATH_MAX + FPGA_SYSNAME_MAX];

                snprintf(rel, sizeof(rel), "%s/%s", p->path, roms.names[i]);
                r = fpga_discover_read_attr(ctx, rel, "VBNV", &vbnv);
                if (r >= 0)
                        r = fpga_discover_read_attr(ctx, rel, "timestamp", &ts);
                if (r >= 0 && (!*vbnv || strlen(vbnv) >= sizeof(x->vbnv) || !*ts || strlen(ts) >= sizeof(x->timestamp)))
                        r = -EBADMSG;
                if (r >= 0) {
                        snprintf(x->vbnv, sizeof(x->vbnv), "%s", vbnv);
                        snprintf(x->timestamp, sizeof(x->timestamp), "%s", ts);
                        break;
                }
        }
        fpga_discover_names_done(&roms);
        return r;
}

static void read_mgmt_node(const kdp_backend_ctx *ctx, const kdp_pci_device *m, fpga_xrt *x) {
        _cleanup_free_ char *inst = NULL, *node = NULL, *rel = NULL;
        char *end;
        unsigned long v;

        if (fpga_discover_read_attr(ctx, m->path, "instance", &inst) < 0)
                return;
        errno = 0;
        v = strtoul(inst, &end, 10);
        if (errno || end == inst || *end || asprintf(&rel, "xclmgmt%lu", v) < 0 ||
            kdp_backend_path(ctx, KDP_PATH_DEV, rel, &node) < 0 || strlen(node) >= sizeof(x->mgmt_node))
                return;
        snprintf(x->mgmt_node, sizeof(x->mgmt_node), "%s", node);
}

static int walk_xrt(fpga_discovery *d, const kdp_backend_ctx *ctx, const kdp_pci_list *l, const kdp_pci_device *u) {
        _cleanup_free_ kdp_pci_child *children = NULL;
        const kdp_pci_device *m = NULL;
        size_t n_children = 0;
        fpga_xrt *x = realloc(d->xrts, (d->n_xrts + 1) * sizeof(*x));

        if (!x)
                return -ENOMEM;
        d->xrts = x;
        x = &d->xrts[d->n_xrts++];
        *x = (fpga_xrt){ 0 };
        snprintf(x->user, sizeof(x->user), "%s", u->address);
        for (size_t i = 0; i < kdp_pci_list_size(l) && !m; i++) {
                const kdp_pci_device *c = kdp_pci_list_get(l, i);

                if (c != u && same_slot(c->address, u->address) && xrt_mgmt(c))
                        m = c;
        }
        if (m) {
                snprintf(x->mgmt, sizeof(x->mgmt), "%s", m->address);
                read_mgmt_node(ctx, m, x);
        }
        x->rom_err = read_rom(ctx, u, x);
        if (x->rom_err < 0 && m)
                x->rom_err = read_rom(ctx, m, x);
        if (read_id(ctx, u->path, "logic_uuids", x->logic_uuid) < 0 && m)
                (void) read_id(ctx, m->path, "logic_uuids", x->logic_uuid);
        if (kdp_pci_children(ctx, u->address, "drm", &children, &n_children) >= 0)
                for (size_t i = 0; i < n_children; i++)
                        if (strncmp(children[i].name, "renderD", 7) == 0 && children[i].devnode[0]) {
                                snprintf(x->render_node, sizeof(x->render_node), "%s", children[i].devnode);
                                break;
                        }
        return 0;
}

/* ---- the walk ---- */

static int walk_function(fpga_discovery *d, const kdp_backend_ctx *ctx, const kdp_pci_list *l,
                         const kdp_pci_device *p) {
        char why[FPGA_REASON_MAX];
        bool has_user = false;
        int r;

        if (xrt_user(p))
                return walk_xrt(d, ctx, l, p);
        if (xrt_mgmt(p)) {
                for (size_t i = 0; i < kdp_pci_list_size(l); i++) {
                        const kdp_pci_device *c = kdp_pci_list_get(l, i);

                        has_user = has_user || (c != p && same_slot(c->address, p->address) && xrt_user(c));
                }
                return has_user ? 0 : skip(d, p->address, "Alveo management PF without its user PF (xocl) on this host");
        }
        if (intel_driver(p->driver)) {
                r = walk_intel(d, ctx, p);
                if (r != 0)
                        return r < 0 ? r : 0;
                snprintf(why, sizeof(why), "%s bound, but no FPGA region with an FME or port under it", p->driver);
                return skip(d, p->address, why);
        }
        if (intel_id(p) || p->vendor_id == 0x10ee) {
                if (p->driver[0])
                        snprintf(why, sizeof(why), "bound to %s, not %s", p->driver,
                                 p->vendor_id == 0x10ee ? "xocl or xclmgmt" : "dfl-pci or intel-fpga-pci");
                else
                        snprintf(why, sizeof(why), "no driver bound (%s)",
                                 p->vendor_id == 0x10ee ? "xocl or xclmgmt serve Alveo cards" : "dfl-pci serves DFL cards");
                return skip(d, p->address, why);
        }
        return 0;
}

int fpga_discover(const kdp_backend_ctx *ctx, const kdp_pci_list *l, fpga_discovery *ret) {
        fpga_discovery d = { 0 };
        int r = 0;

        for (size_t i = 0; r >= 0 && i < kdp_pci_list_size(l); i++)
                r = walk_function(&d, ctx, l, kdp_pci_list_get(l, i));
        if (r < 0) {
                fpga_discover_done(&d);
                return r;
        }
        link_vf_ports(&d, l);
        *ret = d;
        return 0;
}

void fpga_discover_done(fpga_discovery *d) {
        free(d->fmes);
        free(d->ports);
        free(d->xrts);
        free(d->skips);
        *d = (fpga_discovery){ 0 };
}
