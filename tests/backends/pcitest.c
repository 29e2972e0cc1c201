/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pcitest: a test backend that serves real (or simulated) PCI devices with
 * libkdp's discovery and health helpers — what the hardware backends do, in
 * a page, for the hardware-layer e2e tests on simulated nodes.
 *
 * Every non-bridge PCI device of vendor `vendor` (and `device`, if set)
 * becomes a device of `resource` whose ID is its PCI address, with its NUMA
 * node and PCI address (for locality). Health: present, bound to `driver`
 * (any driver when unset), enabled, AER fatal and non-fatal counters not
 * risen since the device was first seen (or rebound). Scans on every pci
 * uevent and every 250 ms (AER counters and `enable` send no uevent).
 * A PCI function libkdp could not read is declared not served with the
 * reason, unless the IDs it did read say it is not one of ours.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdp/backend.h>
#include <kdp/cleanup.h>
#include <kdp/health.h>
#include <kdp/pci.h>

typedef struct seen {
        char address[KDP_PCI_ADDRESS_MAX];
        kdp_health_pci health;
        int bound;                      /* had a driver at the last scan */
} seen;

typedef struct pcitest_state {
        const kdp_backend_ctx *ctx;
        unsigned vendor, device;        /* device 0: any */
        const char *resource, *driver;  /* borrowed from the ctx */
        seen *seen;
        size_t n_seen;
} pcitest_state;

static int parse_hex_id(const kdp_backend_ctx *ctx, const char *name, unsigned *ret) {
        const char *v = kdp_backend_param(ctx, name);
        char *end;
        unsigned long id;

        if (!v || !*v) {
                *ret = 0;
                return 0;
        }
        id = strtoul(v, &end, 16);
        if (*end || id > 0xffff) {
                kdp_backend_log_error(ctx, -EINVAL, "Rejected PCI ID", KDP_F_STR("key", name), KDP_F_STR("value", v));
                return -EINVAL;
        }
        *ret = (unsigned) id;
        return 0;
}

static int pcitest_init(kdp_backend_ctx *ctx, void **ret_state) {
        pcitest_state *s = calloc(1, sizeof(*s));
        int r;

        if (!s)
                return -ENOMEM;
        s->ctx = ctx;
        s->resource = kdp_backend_param(ctx, "resource");
        s->driver = kdp_backend_param(ctx, "driver");
        if (s->driver && !*s->driver)
                s->driver = NULL;
        r = parse_hex_id(ctx, "vendor", &s->vendor);
        if (r >= 0)
                r = parse_hex_id(ctx, "device", &s->device);
        if (r < 0) {
                free(s);
                return r;
        }
        *ret_state = s;
        return 0;
}

static void pcitest_fini(void *state) {
        pcitest_state *s = state;

        if (!s)
                return;
        free(s->seen);
        free(s);
}

/* The health record of a device, created at first sight. */
static seen *seen_get(pcitest_state *s, const char *address) {
        seen *v;

        for (size_t i = 0; i < s->n_seen; i++)
                if (strcmp(s->seen[i].address, address) == 0)
                        return &s->seen[i];
        v = realloc(s->seen, (s->n_seen + 1) * sizeof(*v));
        if (!v)
                return NULL;
        s->seen = v;
        v = &s->seen[s->n_seen++];
        *v = (seen){ 0 };
        snprintf(v->address, sizeof(v->address), "%s", address);
        return v;
}

static int add_device(pcitest_state *s, kdp_device_tree *tree, const kdp_pci_device *p) {
        _cleanup_free_ char *reason = NULL;
        kdp_device_info info = { .id = p->address, .pci_address = p->address };
        seen *h = seen_get(s, p->address);
        int health;

        if (!h)
                return -ENOMEM;
        if (p->driver[0] && !h->bound)          /* (re)bound: its counters start anew */
                (void) kdp_health_pci_rebase(s->ctx, p->address, &h->health);
        h->bound = p->driver[0] != 0;
        health = kdp_health_pci_check(s->ctx, p->address, s->driver, KDP_HEALTH_PCI_ALL, &h->health, &reason);
        info.health = health == KDP_HEALTHY ? KDP_HEALTHY : KDP_UNHEALTHY;
        info.health_reason = health < 0 ? "health check failed" : reason;
        if (p->numa_node >= 0) {
                info.numa_nodes[0] = p->numa_node;
                info.n_numa_nodes = 1;
        }
        return kdp_device_tree_add(tree, s->resource, &info);
}

static int pcitest_scan(void *state, kdp_device_tree *tree) {
        pcitest_state *s = state;
        kdp_pci_list *l = NULL;
        int r;

        r = kdp_device_tree_add_resource(tree, s->resource);
        if (r < 0)
                return r;
        r = kdp_pci_list_scan(s->ctx, &l);
        if (r == -ENOENT)
                return 0;                       /* no PCI bus: no devices */
        if (r < 0)
                return r;
        for (size_t i = 0; i < kdp_pci_list_size(l); i++) {
                const kdp_pci_device *p = kdp_pci_list_get(l, i);

                if (p->is_bridge || p->vendor_id != s->vendor || (s->device && p->device_id != s->device))
                        continue;
                (void) add_device(s, tree, p); /* a refused device is logged by the tree */
        }
        for (size_t i = 0; i < kdp_pci_list_skipped_size(l); i++) {
                const kdp_pci_skipped *k = kdp_pci_list_skipped_get(l, i);

                if (k->vendor_id && (k->vendor_id != s->vendor || (s->device && k->device_id != s->device)))
                        continue;       /* read far enough to tell it is not ours */
                (void) kdp_device_tree_not_served(tree, k->address, k->reason);
        }
        kdp_pci_list_free(l);
        return 0;
}

static const kdp_param_spec pcitest_params[] = {
        { "vendor", "10de", "PCI vendor ID (hex) of the devices to serve" },
        { "device", "", "PCI device ID (hex); empty: any" },
        { "driver", "", "driver the devices must be bound to; empty: any" },
        { "resource", "test.example.com/pci", "extended resource name" },
        { 0 },
};

static const kdp_backend_ops pcitest_ops = {
        .abi_major = KDP_BACKEND_ABI_MAJOR,
        .struct_size = sizeof(kdp_backend_ops),
        .name = "pcitest",
        .udev_subsystems = (const char *const[]){ "pci", NULL },
        .params = pcitest_params,
        .init = pcitest_init,
        .scan = pcitest_scan,
        .fini = pcitest_fini,
        .rescan_interval_ms = 250,
};

KDP_BACKEND_REGISTER(pcitest_ops);
