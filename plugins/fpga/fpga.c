/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fpga: Intel DFL/OPAE FPGAs and AMD-Xilinx Alveo cards under the resource names pods of
 * Intel's and AMD's plugins already ask for (README.md has every name, path and param).
 *
 *   init          params -> state
 *   scan          PCI list -> fpga_discover() -> units (what is served: a port in af mode, an
 *                 FME with its ports in region modes, an Alveo card) -> devices; health read
 *                 anew each time (the periodic rescan polls what sends no event); a port
 *                 of a card `program` declares that does not carry its AFU is programmed
 *                 on a thread of its own once per round (start, each reload; in region
 *                 modes the card's ports one after the other), its unit Unhealthy
 *                 "programming" meanwhile, the result reaped by a later scan; an
 *                 Alveo card's logic UUID checked against its declared one
 *   reload        the next round of `program`: declared cards are looked at again
 *   device_event  pci add/remove/bind/unbind: read the PCI list again at the next scan
 *   allocate      from units[] (gRPC thread, under the backend lock)
 *   pre_start     af mode: each port's afu_id read again and checked against the AFU its
 *                 resource promises; a drifted one is programmed from bitstream_dir
 *                 (reprogram.c, without the lock, the card's units Unhealthy "programming"
 *                 meanwhile, one programming per card at a time), else the start fails,
 *                 logged with the card, the port and both IDs
 *
 * A unit once served stays in the table: unbound, released or removed, it is Unhealthy with
 * the reason instead of vanishing. A port whose afu_id changes moves to the resource of its
 * new AFU, unless bitstream_dir holds the bitstream of the AFU it was listed with (PreStart
 * programs that back; the declared AFU moves it all the same); a resource once served stays declared (capacity 0 when empty). A transient state
 * (afu_id busy during PR or reset, XRT dev_offline, rom.* gone in a reset) keeps the unit's
 * health and resource for busy_hold_s; a unit first seen in one is not served until it ends.
 * What scan looks at and does not serve is declared with kdp_device_tree_not_served().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kdp/backend.h>
#include <kdp/cleanup.h>
#include <kdp/health.h>
#include <kdp/pci.h>

#include "fpga.h"
#include "program.h"

#define PCI_RELIST_MS 30000             /* the PCI list is read again at least this often, events or not */
#define UNIT_NODES_MAX 9                /* an FME, 8 ports */
#define RESOURCES_MAX 256               /* resources declared since start */
#define REMOVED "removed from the PCI bus"
#define PROGRAM_WAIT_MS 20000           /* how long a PreStart waits for another programming of its card */
#define PROGRAM_POLL_US (50 * 1000)
#define PROGRAM_RESCAN_MS 250           /* scans while a programming at start or reload runs */

typedef enum unit_kind {
        UNIT_PORT,                      /* af: one Intel port */
        UNIT_REGION,                    /* region, regiondevel: one FME and its ports */
        UNIT_XRT,                       /* one Alveo card (its user PF) */
        _UNIT_KIND_MAX,
        _UNIT_KIND_INVALID = -EINVAL,
} unit_kind;

typedef struct unit {
        unit_kind kind;
        char id[FPGA_SYSNAME_MAX];              /* port name, FME name, user PF address */
        char pci_address[KDP_PCI_ADDRESS_MAX];
        char driver[64];                        /* the PCI driver it was served with */
        char resource[FPGA_RESOURCE_MAX];
        char afu_id[FPGA_ID_MAX];               /* af: the AFU its resource promises */
        char devpath[FPGA_DEVPATH_MAX];         /* a port's sysfs directory (pre_start reads its afu_id) */
        fpga_fme fme;                           /* a port's card, as the last scan found it */
        unsigned program_round;                 /* the round (start, reloads) `program` last looked at it */
        char program_failed[FPGA_REASON_MAX];   /* why that round's programming failed; "" if it did not */
        char nodes[UNIT_NODES_MAX][FPGA_NODE_MAX];      /* host paths */
        size_t n_nodes;
        int numa_node;
        kdp_health_pci pci;
        bool bound;                             /* bound to its driver at the last scan */
        bool present;                           /* found by this scan */
        uint64_t transient_since_ms;            /* 0: no transient state */
        bool was_healthy;                       /* health the last scan reported */
        char reason[FPGA_REASON_MAX];           /* this scan's: "" = healthy */
        fpga_health health;
} unit;

typedef struct served_resource {
        char name[FPGA_RESOURCE_MAX];
        char afu_id[FPGA_ID_MAX];               /* an af resource's AFU; "" for others */
} served_resource;

typedef struct fpga_state {
        kdp_backend_ctx *ctx;
        fpga_config cfg;
        fpga_reprogram_busy busy;               /* cards being programmed now */
        fpga_reprogram_runner runner;           /* programming at start and reload */
        unsigned program_round;                 /* 1 at start, +1 at each reload */
        char *dev_root;                         /* --dev-root without a trailing '/' */
        kdp_pci_list_cache pci;
        unsigned relists;                       /* scans that read the PCI list again after an event */
        unit *units;
        size_t n_units;
        served_resource *resources;             /* every resource served since start */
        size_t n_resources;
} fpga_state;

static uint64_t now_ms(const fpga_state *s) {
        return kdp_backend_now_usec(s->ctx) / 1000;
}

/* ---- ops ---- */

static void fpga_fini(void *state) {
        fpga_state *s = state;

        if (!s)
                return;
        fpga_reprogram_runner_done(&s->runner);         /* first: a programming in progress ends */
        kdp_pci_list_cache_done(&s->pci);
        fpga_config_done(&s->cfg);
        fpga_reprogram_busy_done(&s->busy);
        free(s->units);
        free(s->resources);
        free(s->dev_root);
        free(s);
}

static int fpga_init(kdp_backend_ctx *ctx, void **ret_state) {
        fpga_state *s = calloc(1, sizeof(*s));
        int r;

        if (!s)
                return -ENOMEM;
        s->ctx = ctx;
        s->program_round = 1;
        r = fpga_reprogram_runner_init(&s->runner);
        if (r < 0) {
                free(s);
                return r;
        }
        r = kdp_backend_path(ctx, KDP_PATH_DEV, "", &s->dev_root);
        if (r >= 0) {
                size_t n = strlen(s->dev_root);

                while (n > 1 && s->dev_root[n - 1] == '/')
                        s->dev_root[--n] = '\0';
                r = fpga_config_parse(ctx, &s->cfg);
        }
        if (r < 0) {
                fpga_fini(s);
                return r;
        }
        kdp_backend_log_info(ctx, "FPGA backend ready", KDP_F_STR("mode", fpga_config_mode_to_string(s->cfg.mode)));
        *ret_state = s;
        return 0;
}

/* ---- the table of units ---- */

static unit *find_unit(fpga_state *s, unit_kind kind, const char *id) {
        for (size_t i = 0; i < s->n_units; i++)
                if (s->units[i].kind == kind && strcmp(s->units[i].id, id) == 0)
                        return &s->units[i];
        return NULL;
}

static unit *add_unit(fpga_state *s, unit_kind kind, const char *id, const kdp_pci_device *p) {
        unit *n = realloc(s->units, (s->n_units + 1) * sizeof(*n));

        if (!n)
                return NULL;
        s->units = n;
        n = &s->units[s->n_units++];
        *n = (unit){ .kind = kind, .numa_node = -1, .was_healthy = true };
        snprintf(n->id, sizeof(n->id), "%s", id);
        snprintf(n->pci_address, sizeof(n->pci_address), "%s", p->address);
        snprintf(n->driver, sizeof(n->driver), "%s", p->driver);
        return n;
}

/* `afu_id`: the AFU an af resource promises, else NULL. */
static void remember_resource(fpga_state *s, const char *resource, const char *afu_id) {
        served_resource *n;

        for (size_t i = 0; i < s->n_resources; i++)
                if (strcmp(s->resources[i].name, resource) == 0)
                        return;
        if (s->n_resources >= RESOURCES_MAX || !(n = realloc(s->resources, (s->n_resources + 1) * sizeof(*s->resources))))
                return;
        s->resources = n;
        n = &s->resources[s->n_resources++];
        snprintf(n->name, sizeof(n->name), "%s", resource);
        snprintf(n->afu_id, sizeof(n->afu_id), "%s", afu_id ? afu_id : "");
}

/* The AFU an af resource served since start promises; NULL for any other resource. */
static const char *resource_afu(const fpga_state *s, const char *resource) {
        for (size_t i = 0; i < s->n_resources; i++)
                if (strcmp(s->resources[i].name, resource) == 0)
                        return s->resources[i].afu_id[0] ? s->resources[i].afu_id : NULL;
        return NULL;
}

/* Sets the unit's resource (an af one promising `afu_id`); a port whose AFU changed moves, and says so. */
static void set_resource(fpga_state *s, unit *u, const char *resource, const char *afu_id) {
        if (u->resource[0] && strcmp(u->resource, resource) != 0)
                kdp_backend_log_info(s->ctx, "FPGA moved to another resource", KDP_F_STR("device", u->id),
                                     KDP_F_STR("pciAddress", u->pci_address), KDP_F_STR("from", u->resource),
                                     KDP_F_STR("to", resource));
        snprintf(u->resource, sizeof(u->resource), "%s", resource);
        remember_resource(s, resource, afu_id);
}

static void unit_node(unit *u, const char *host_path) {
        if (host_path[0] && u->n_nodes < UNIT_NODES_MAX)
                snprintf(u->nodes[u->n_nodes++], FPGA_NODE_MAX, "%s", host_path);
}

/* Starts a unit's scan: found, with its PCI function's facts and health; `card`: its FME's PCI function. */
static void unit_found(fpga_state *s, unit *u, const kdp_pci_device *p, const char *card) {
        _cleanup_free_ char *why = NULL;
        unsigned checks = KDP_HEALTH_PCI_PRESENT | KDP_HEALTH_PCI_DRIVER | KDP_HEALTH_PCI_AER_FATAL;
        bool bound = strcmp(p->driver, u->driver) == 0;

        u->present = true;
        u->numa_node = kdp_pci_numa_node(p, u->numa_node);
        u->n_nodes = 0;
        u->reason[0] = '\0';
        u->health = (fpga_health){ 0 };
        if (bound && !u->bound)
                (void) kdp_health_pci_rebase(s->ctx, u->pci_address, &u->pci);  /* (re)bound: counters anew */
        u->bound = bound;
        if (kdp_health_pci_check(s->ctx, u->pci_address, u->driver, checks, &u->pci, &why) == KDP_UNHEALTHY && why)
                fpga_health_add(u->health.reason, strcmp(why, "device removed") == 0 ? REMOVED : why);
        if (fpga_reprogram_busy_has(&s->busy, card))
                fpga_health_add(u->health.reason, "programming");
}

/* Merges one part's health into the unit's, its text after `prefix` ("dfl-port.0: "). */
static void merge_health(fpga_health *into, const fpga_health *part, const char *prefix) {
        char text[FPGA_REASON_MAX];

        if (part->reason[0]) {
                snprintf(text, sizeof(text), "%s%s", prefix, part->reason);
                fpga_health_add(into->reason, text);
        }
        if (part->transient) {
                snprintf(text, sizeof(text), "%s%s", prefix, part->transient_reason);
                into->transient = true;
                fpga_health_add(into->transient_reason, text);
        }
}

/* ---- Intel ---- */

/* The resource of an Intel unit by mode and IDs, or why it has none now (NULL: it has one). */
static const char *intel_resource(const fpga_state *s, const kdp_pci_device *p, const fpga_fme *fme,
                                  const fpga_port *port, char resource[FPGA_RESOURCE_MAX], char *why, size_t why_size) {
        const char *model = fpga_config_model_resource(&s->cfg, p);
        int r;

        if (model) {
                snprintf(resource, FPGA_RESOURCE_MAX, "%s", model);
                return NULL;
        }
        if (fme->interface_err < 0) {
                snprintf(why, why_size, "PR region interface ID unreadable: %s", strerror(-fme->interface_err));
                return why;
        }
        if (!port) {
                r = fpga_name_region(fme->interface_id, resource);
        } else {
                if (port->afu_err < 0) {
                        snprintf(why, why_size, "afu_id unreadable: %s", strerror(-port->afu_err));
                        return why;
                }
                r = fpga_name_af(fme->interface_id, port->afu_id, resource);
        }
        if (r < 0) {
                snprintf(why, why_size, "no resource name for interface %s and AFU %s: %s", fme->interface_id,
                         port ? port->afu_id : "-", strerror(-r));
                return why;
        }
        return NULL;
}

/*
 * With bitstream_dir, a port listed under an af resource whose afu_id drifted stays under that
 * resource (PreStart programs the promised AFU back); Unhealthy when the bitstream is missing.
 */
static bool keep_drifted(fpga_state *s, unit *u, const fpga_fme *fme, const fpga_port *port) {
        _cleanup_free_ char *path = NULL;
        char text[FPGA_REASON_MAX];

        const char *declared = fpga_config_declared(&s->cfg, fme->pci_address, fme->interface_id);

        if (!s->cfg.bitstream_dir || !u->resource[0] || !resource_afu(s, u->resource) || port->afu_err < 0 ||
            fpga_name_id_all_f(port->afu_id) || strcmp(port->afu_id, u->afu_id) == 0 ||
            (declared && strcmp(port->afu_id, declared) == 0))
                return false;
        if (fpga_program_gbs_path(s->cfg.bitstream_dir, fme->interface_id, u->afu_id, &path) < 0 ||
            access(path, F_OK) < 0) {
                snprintf(text, sizeof(text), "carries AFU %s; no bitstream %s", port->afu_id, path ? path : "for its AFU");
                fpga_health_add(u->health.reason, text);
        }
        return true;
}

/*
 * At start and at each reload (a new round): a port of a card `program` declares that does not
 * carry the declared AFU is programmed on a thread of its own; the scans show it "programming",
 * reap the result (reap_programs()) and move the port to its new AFU's resource.
 */
static void program_declared(fpga_state *s, unit *u, const fpga_fme *fme, const fpga_port *port) {
        _cleanup_(fpga_reprogram_job_done) fpga_reprogram_job job = { 0 };
        _cleanup_free_ char *why = NULL;
        const char *want = fpga_config_declared(&s->cfg, fme->pci_address, fme->interface_id);
        int r;

        if (!want || u->program_round == s->program_round || port->afu_err < 0 ||
            fpga_reprogram_busy_has(&s->busy, fme->pci_address))
                return;         /* none declared, looked at this round, or later: afu_id busy, the card programming */
        u->program_round = s->program_round;
        u->program_failed[0] = '\0';
        if (strcmp(port->afu_id, want) == 0)
                return;
        if (!s->cfg.bitstream_dir) {
                snprintf(u->program_failed, sizeof(u->program_failed),
                         "declared AFU %s, and no fpga.bitstream_dir to program it from", want);
                return;
        }
        r = fpga_reprogram_job_init(s->ctx, s->cfg.bitstream_dir, fme, port, want, &job, &why);
        if (r >= 0)
                r = fpga_reprogram_busy_add(&s->busy, job.card);
        if (r >= 0) {
                kdp_backend_log_info(s->ctx, "Programming the declared AFU", KDP_F_STR("device", job.port),
                                     KDP_F_STR("card", job.card), KDP_F_STR("want", job.want),
                                     KDP_F_STR("have", job.have), KDP_F_STR("bitstream", job.gbs_path));
                r = fpga_reprogram_start(&s->runner, &job);
                if (r < 0)
                        fpga_reprogram_busy_remove(&s->busy, fme->pci_address);
        }
        if (r < 0) {
                kdp_backend_log_error(s->ctx, r, "Cannot program the declared AFU", KDP_F_STR("device", u->id),
                                      KDP_F_STR("card", fme->pci_address), KDP_F_STR("want", want),
                                      KDP_F_STR("have", port->afu_id), KDP_F_STR("reason", why ? why : ""));
                snprintf(u->program_failed, sizeof(u->program_failed), "%s", why ? why : strerror(-r));
                return;
        }
        fpga_health_add(u->health.reason, "programming");
}

/*
 * Region modes: the ports of a declared card, one after the other (one programming per card):
 * the first that does not carry the declared AFU is programmed; when it is done (reap_programs()
 * looks at the unit again) the next one is. The round ends when every port carries it or one failed.
 */
static void program_region(fpga_state *s, unit *u, const fpga_discovery *d, size_t k) {
        const fpga_fme *fme = &d->fmes[k];
        const char *want = fpga_config_declared(&s->cfg, fme->pci_address, fme->interface_id);

        if (!want || u->program_round == s->program_round || fpga_reprogram_busy_has(&s->busy, fme->pci_address))
                return;
        for (size_t i = 0; i < d->n_ports; i++) {
                const fpga_port *port = &d->ports[i];

                if (port->fme != (int) k)
                        continue;
                if (port->afu_err < 0)
                        return;         /* afu_id busy: later */
                if (strcmp(port->afu_id, want) != 0) {
                        program_declared(s, u, fme, port);
                        return;
                }
        }
        u->program_round = s->program_round;
        u->program_failed[0] = '\0';
}

/* The unit a programming at start or reload was for: the port (af) or its card (region modes). */
static unit *job_unit(fpga_state *s, const fpga_reprogram_job *job) {
        unit *u = find_unit(s, UNIT_PORT, job->port);

        for (size_t i = 0; !u && i < s->n_units; i++)
                if (s->units[i].kind == UNIT_REGION && strcmp(s->units[i].pci_address, job->card) == 0)
                        u = &s->units[i];
        return u;
}

/* The programmings at start or reload that ended: the card is free again; a failure stays the port's reason. */
static void reap_programs(fpga_state *s) {
        fpga_reprogram_job job;
        int result;

        while (fpga_reprogram_reap(&s->runner, &job, &result) > 0) {
                unit *u = job_unit(s, &job);

                fpga_reprogram_busy_remove(&s->busy, job.card);
                if (result < 0) {
                        kdp_backend_log_error(s->ctx, result, "Cannot program the declared AFU",
                                              KDP_F_STR("device", job.port), KDP_F_STR("card", job.card),
                                              KDP_F_STR("want", job.want), KDP_F_STR("have", job.have),
                                              KDP_F_STR("reason", job.reason ? job.reason : ""));
                        if (u)
                                snprintf(u->program_failed, sizeof(u->program_failed),
                                         "%s%sprogramming the declared AFU %s failed: %s",
                                         u->kind == UNIT_REGION ? job.port : "", u->kind == UNIT_REGION ? ": " : "",
                                         job.want, strerror(-result));
                } else {
                        if (u && u->kind == UNIT_REGION)
                                u->program_round = 0;   /* the card's next port, at the next scan */
                        kdp_backend_log_info(s->ctx, "Programmed the declared AFU", KDP_F_STR("device", job.port),
                                             KDP_F_STR("card", job.card), KDP_F_STR("afu", job.want));
                }
                fpga_reprogram_job_done(&job);
        }
}

/* A port in af mode. */
static void scan_port(fpga_state *s, kdp_device_tree *tree, const kdp_pci_list *l, const fpga_discovery *d,
                      const fpga_port *port) {
        const kdp_pci_device *p = kdp_pci_list_find(l, port->pci_address);
        const fpga_fme *fme = port->fme >= 0 ? &d->fmes[port->fme] : NULL;
        char resource[FPGA_RESOURCE_MAX], why[FPGA_REASON_MAX];
        const char *filtered, *no_name = NULL;
        fpga_health part = { 0 };
        unit *u = find_unit(s, UNIT_PORT, port->name);

        if (!p)
                return;
        if ((filtered = fpga_config_filtered(&s->cfg, p))) {
                (void) kdp_device_tree_not_served(tree, p->address, filtered);
                return;
        }
        if (!fme) {
                (void) kdp_device_tree_not_served(tree, port->name, "no FME found for the port (neither on its "
                                                                    "function nor on its PF)");
                return;
        }
        no_name = intel_resource(s, p, fme, port, resource, why, sizeof(why));
        if (!u && no_name) {
                (void) kdp_device_tree_not_served(tree, port->name, no_name);  /* tried again next scan */
                return;
        }
        if (!u && !(u = add_unit(s, UNIT_PORT, port->name, p)))
                return;
        unit_found(s, u, p, fme->pci_address);
        u->fme = *fme;
        /*
         * a port whose AFU crashed (all f) or is busy stays where it was, and so does a drifted one
         * that PreStart can program back; first seen so, it goes by Intel's name
         */
        if (!keep_drifted(s, u, fme, port) && !no_name &&
            (!u->resource[0] || (!fpga_name_id_all_f(port->afu_id) && !fpga_name_id_all_f(fme->interface_id)))) {
                set_resource(s, u, resource, fpga_config_model_resource(&s->cfg, p) ? NULL : port->afu_id);
                snprintf(u->afu_id, sizeof(u->afu_id), "%s", port->afu_id);
        }
        program_declared(s, u, fme, port);
        if (u->program_failed[0])
                fpga_health_add(u->health.reason, u->program_failed);
        snprintf(u->devpath, sizeof(u->devpath), "%s", port->devpath);
        unit_node(u, port->devnode);
        fpga_health_port(s->ctx, port, &part);
        merge_health(&u->health, &part, "");
        part = (fpga_health){ 0 };
        fpga_health_fme(s->ctx, fme, &part);
        merge_health(&u->health, &part, "card: ");
}

/* An FME with its ports in region modes. */
static void scan_region(fpga_state *s, kdp_device_tree *tree, const kdp_pci_list *l, const fpga_discovery *d,
                        size_t k) {
        const fpga_fme *fme = &d->fmes[k];
        const kdp_pci_device *p = kdp_pci_list_find(l, fme->pci_address);
        char resource[FPGA_RESOURCE_MAX], why[FPGA_REASON_MAX];
        const char *filtered, *no_name;
        fpga_health part = { 0 };
        unit *u = find_unit(s, UNIT_REGION, fme->name);
        size_t n_ports = 0;

        if (!p)
                return;
        if ((filtered = fpga_config_filtered(&s->cfg, p))) {
                (void) kdp_device_tree_not_served(tree, p->address, filtered);
                return;
        }
        for (size_t i = 0; i < d->n_ports; i++)
                n_ports += d->ports[i].fme == (int) k;
        if (!u && n_ports == 0) {
                (void) kdp_device_tree_not_served(tree, fme->name, "FME without ports (released to VFs?)");
                return;
        }
        no_name = intel_resource(s, p, fme, NULL, resource, why, sizeof(why));
        if (!u && no_name) {
                (void) kdp_device_tree_not_served(tree, fme->name, no_name);
                return;
        }
        if (!u && !(u = add_unit(s, UNIT_REGION, fme->name, p)))
                return;
        unit_found(s, u, p, fme->pci_address);
        if (!no_name && (!u->resource[0] || !fpga_name_id_all_f(fme->interface_id)))
                set_resource(s, u, resource, NULL);
        program_region(s, u, d, k);
        if (u->program_failed[0])
                fpga_health_add(u->health.reason, u->program_failed);
        for (size_t i = 0; i < d->n_ports; i++) {
                char prefix[FPGA_SYSNAME_MAX + 4];

                if (d->ports[i].fme != (int) k)
                        continue;
                unit_node(u, d->ports[i].devnode);
                part = (fpga_health){ 0 };
                fpga_health_port(s->ctx, &d->ports[i], &part);
                snprintf(prefix, sizeof(prefix), "%s: ", d->ports[i].name);
                merge_health(&u->health, &part, prefix);
        }
        if (n_ports == 0)
                fpga_health_add(u->health.reason, "no ports (released to VFs?)");
        if (s->cfg.mode == FPGA_MODE_REGIONDEVEL)
                unit_node(u, fme->devnode);
        part = (fpga_health){ 0 };
        fpga_health_fme(s->ctx, fme, &part);
        merge_health(&u->health, &part, "");
}

/* ---- AMD ---- */

/* A `program` entry for the card (its user or management PF) names the xclbin's logic UUID it must carry. */
static void check_xclbin(fpga_state *s, unit *u, const fpga_xrt *x) {
        const char *want = fpga_config_declared(&s->cfg, x->user, NULL);
        char text[FPGA_REASON_MAX];

        if (!want && x->mgmt[0])
                want = fpga_config_declared(&s->cfg, x->mgmt, NULL);
        if (!want || strcmp(want, x->logic_uuid) == 0)
                return;
        if (x->logic_uuid[0])
                snprintf(text, sizeof(text), "xclbin logic UUID %s, not the declared %s", x->logic_uuid, want);
        else
                snprintf(text, sizeof(text), "no xclbin logic UUID readable, the declared is %s", want);
        fpga_health_add(u->health.reason, text);
}

static void scan_xrt(fpga_state *s, kdp_device_tree *tree, const kdp_pci_list *l, const fpga_xrt *x) {
        const kdp_pci_device *p = kdp_pci_list_find(l, x->user);
        char resource[FPGA_RESOURCE_MAX], why[FPGA_REASON_MAX];
        const char *filtered, *model;
        bool named = false;
        unit *u = find_unit(s, UNIT_XRT, x->user);
        int r;

        if (!p)
                return;
        if ((filtered = fpga_config_filtered(&s->cfg, p))) {
                (void) kdp_device_tree_not_served(tree, p->address, filtered);
                return;
        }
        model = fpga_config_model_resource(&s->cfg, p);
        if (model) {
                snprintf(resource, sizeof(resource), "%s", model);
                named = true;
        } else if (x->rom_err < 0) {
                snprintf(why, sizeof(why), "shell ROM (rom.*) unreadable: %s", strerror(-x->rom_err));
        } else if ((r = fpga_name_xilinx(s->cfg.xilinx_prefix, x->vbnv, x->timestamp, resource)) < 0) {
                snprintf(why, sizeof(why), "VBNV '%s' and timestamp '%s' make no resource name: %s", x->vbnv,
                         x->timestamp, strerror(-r));
        } else
                named = true;
        if (!u && !named) {
                (void) kdp_device_tree_not_served(tree, x->user, why);  /* tried again next scan */
                return;
        }
        if (!u && !(u = add_unit(s, UNIT_XRT, x->user, p)))
                return;
        unit_found(s, u, p, NULL);
        if (named)
                set_resource(s, u, resource, NULL);
        unit_node(u, x->render_node);
        if (s->cfg.xilinx_mgmt_node)
                unit_node(u, x->mgmt_node);
        fpga_health_xrt(s->ctx, x, s->cfg.xilinx_mgmt_node, &u->health);
        check_xclbin(s, u, x);
}

/* ---- health over time ---- */

/*
 * The unit's health this scan: its reasons; else a transient state keeps the health it had
 * until busy_hold_ms passed (then the state is the reason); else healthy. *next_ms: when the
 * next hold ends (0: none).
 */
static void settle_health(fpga_state *s, unit *u, uint64_t now, uint64_t *next_ms) {
        uint64_t hold = s->cfg.busy_hold_ms;

        if (!u->health.transient)
                u->transient_since_ms = 0;
        else if (!u->transient_since_ms)
                u->transient_since_ms = now ? now : 1;
        if (u->health.reason[0]) {
                snprintf(u->reason, sizeof(u->reason), "%s", u->health.reason);
        } else if (u->health.transient && now - u->transient_since_ms < hold) {
                uint64_t left = hold - (now - u->transient_since_ms);

                if (!u->was_healthy)
                        snprintf(u->reason, sizeof(u->reason), "%s", u->health.transient_reason);
                if (!*next_ms || left < *next_ms)
                        *next_ms = left;
        } else if (u->health.transient) {
                char held[32];

                snprintf(u->reason, sizeof(u->reason), "%s", u->health.transient_reason);
                snprintf(held, sizeof(held), "for %llu s", (unsigned long long) (hold / 1000));
                fpga_health_add(u->reason, held);
        }
        u->was_healthy = !u->reason[0];
}

/* A unit this scan did not find: its PCI function's state says why. */
static void unit_missing(fpga_state *s, unit *u) {
        _cleanup_free_ char *why = NULL;

        u->reason[0] = '\0';
        u->bound = false;
        u->transient_since_ms = 0;
        if (kdp_health_pci_check(s->ctx, u->pci_address, u->driver, KDP_HEALTH_PCI_PRESENT | KDP_HEALTH_PCI_DRIVER,
                                 NULL, &why) == KDP_UNHEALTHY && why)
                snprintf(u->reason, sizeof(u->reason), "%s", strcmp(why, "device removed") == 0 ? REMOVED : why);
        else
                snprintf(u->reason, sizeof(u->reason), "%s gone from sysfs", u->kind == UNIT_XRT ? "card" : u->id);
        u->was_healthy = false;
}

/* ---- devices ---- */

typedef struct node_set {
        char container[UNIT_NODES_MAX][FPGA_NODE_MAX];
        kdp_dev_node nodes[UNIT_NODES_MAX + 1];         /* { 0 }-terminated */
        size_t n;
} node_set;

/* The unit's nodes as DeviceSpecs: Intel's rw, AMD's rwm (what their plugins hand out). */
static void node_set_fill(node_set *ns, const fpga_state *s, const unit *u) {
        size_t root_len = strcmp(s->dev_root, "/") == 0 ? 0 : strlen(s->dev_root);

        *ns = (node_set){ 0 };
        for (size_t i = 0; i < u->n_nodes; i++) {
                const char *host = u->nodes[i];
                const char *rel = strncmp(host, s->dev_root, root_len) == 0 && host[root_len] == '/' ?
                                          host + root_len + 1 : NULL;

                if (!rel)
                        continue;
                snprintf(ns->container[ns->n], FPGA_NODE_MAX, "/dev/%s", rel);
                ns->nodes[ns->n] = (kdp_dev_node){ .host_path = host, .container_path = ns->container[ns->n],
                                                   .permissions = u->kind == UNIT_XRT ? "rwm" : "rw" };
                ns->nodes[++ns->n] = (kdp_dev_node){ 0 };
        }
}

static int emit_unit(const fpga_state *s, kdp_device_tree *tree, const unit *u) {
        char cdi[FPGA_RESOURCE_MAX + FPGA_SYSNAME_MAX + 2];
        const char *cdis[2] = { cdi, NULL };
        kdp_device_info info = {
                .id = u->id,
                .health = u->reason[0] ? KDP_UNHEALTHY : KDP_HEALTHY,
                .health_reason = u->reason[0] ? u->reason : NULL,
                .pci_address = u->pci_address,
        };
        node_set ns;

        node_set_fill(&ns, s, u);
        info.dev_nodes = ns.nodes;
        if (u->numa_node >= 0) {
                info.numa_nodes[0] = u->numa_node;
                info.n_numa_nodes = 1;
        }
        if (s->cfg.cdi) {
                snprintf(cdi, sizeof(cdi), "%s=%s", u->resource, u->id);
                info.cdi_devices = cdis;
        }
        return kdp_device_tree_add(tree, u->resource, &info);
}

static int fpga_scan(void *state, kdp_device_tree *tree) {
        fpga_state *s = state;
        fpga_discovery d = { 0 };
        uint64_t now = now_ms(s), next = 0;
        const kdp_pci_list *l;
        int r;

        reap_programs(s);
        if (s->relists > 0) {
                s->relists--;
                s->pci.dirty = true;
        }
        r = kdp_pci_list_cache_refresh(s->ctx, &s->pci, PCI_RELIST_MS);
        if (r < 0)
                return r;
        l = s->pci.list;
        r = fpga_discover(s->ctx, l, &d);
        if (r < 0)
                return r;
        for (size_t i = 0; i < d.n_skips; i++)
                (void) kdp_device_tree_not_served(tree, d.skips[i].address, d.skips[i].reason);
        for (size_t i = 0; i < s->n_units; i++)
                s->units[i].present = false;
        if (s->cfg.mode == FPGA_MODE_AF)
                for (size_t i = 0; i < d.n_ports; i++)
                        scan_port(s, tree, l, &d, &d.ports[i]);
        else
                for (size_t i = 0; i < d.n_fmes; i++)
                        scan_region(s, tree, l, &d, i);
        for (size_t i = 0; i < d.n_xrts; i++)
                scan_xrt(s, tree, l, &d.xrts[i]);
        fpga_discover_done(&d);

        for (size_t i = 0; i < s->n_resources; i++)
                (void) kdp_device_tree_add_resource(tree, s->resources[i].name);
        for (size_t i = 0; i < s->n_units; i++) {
                unit *u = &s->units[i];

                if (u->present)
                        settle_health(s, u, now, &next);
                else
                        unit_missing(s, u);
                /* a refused device is noted by the tree, under the unit's PCI address */
                (void) emit_unit(s, tree, u);
        }
        if (fpga_reprogram_running(&s->runner) > 0 && (!next || next > PROGRAM_RESCAN_MS))
                next = PROGRAM_RESCAN_MS;
        if (next)
                (void) kdp_backend_rescan_after(s->ctx, (uint32_t) (next > UINT32_MAX ? UINT32_MAX : next));
        return 0;
}

/* kdpd's SIGHUP with this backend's config unchanged: declared cards are looked at again (a retry). */
static void fpga_reload(void *state) {
        fpga_state *s = state;

        s->program_round++;
}

static void fpga_device_event(void *state, const kdp_device_event *ev) {
        fpga_state *s = state;

        /*
         * A function came, went, or changed driver: the list is read at the next scan and at the
         * one after it (the periodic one), for a "remove" is sent before its directory goes.
         */
        if (strcmp(ev->subsystem, "pci") == 0 && strcmp(ev->action, "change") != 0)
                s->relists = 2;
}

/* ---- Allocate ---- */

static const unit *unit_by_id(const fpga_state *s, const char *resource, const char *id) {
        for (size_t i = 0; i < s->n_units; i++)
                if (strcmp(s->units[i].id, id) == 0 && strcmp(s->units[i].resource, resource) == 0)
                        return &s->units[i];
        return NULL;
}

/* "a,b" of the distinct PCI functions of the units, in request order. */
static int pci_list_env(const unit *const *units, size_t n, char **ret) {
        size_t len = 1;
        char *out;

        for (size_t i = 0; i < n; i++)
                len += strlen(units[i]->pci_address) + 1;
        out = calloc(len, 1);
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                bool dup = false;

                for (size_t k = 0; k < i && !dup; k++)
                        dup = strcmp(units[k]->pci_address, units[i]->pci_address) == 0;
                if (dup)
                        continue;
                if (*out)
                        strcat(out, ",");
                strcat(out, units[i]->pci_address);
        }
        *ret = out;
        return 0;
}

static int fpga_allocate(void *state, const kdp_alloc_request *req, kdp_alloc_response *resp) {
        _cleanup_free_ const unit **units = NULL;
        _cleanup_free_ char *addresses = NULL;
        const fpga_state *s = state;
        int r = 0;

        if (req->n_device_ids == 0)
                return -EOPNOTSUPP;
        units = calloc(req->n_device_ids, sizeof(*units));
        if (!units)
                return -ENOMEM;
        for (size_t i = 0; i < req->n_device_ids; i++)
                if (!(units[i] = unit_by_id(s, req->resource, req->device_ids[i])))
                        return -EOPNOTSUPP;     /* not ours any more: the device records answer */
        for (size_t i = 0; i < req->n_device_ids && r >= 0; i++) {
                char cdi[FPGA_RESOURCE_MAX + FPGA_SYSNAME_MAX + 2];
                node_set ns;

                if (s->cfg.cdi) {
                        snprintf(cdi, sizeof(cdi), "%s=%s", units[i]->resource, units[i]->id);
                        r = kdp_alloc_response_add_cdi_device(resp, cdi);
                        continue;       /* the runtime injects the nodes from the spec */
                }
                node_set_fill(&ns, s, units[i]);
                for (size_t k = 0; k < ns.n && r >= 0; k++)
                        r = kdp_alloc_response_add_dev_node(resp, &ns.nodes[k]);
        }
        if (r < 0)
                return r;
        r = pci_list_env((const unit *const *) units, req->n_device_ids, &addresses);
        if (r < 0)
                return r;
        return kdp_alloc_response_add_env(resp, "KDP_FPGA_PCI_ADDRESSES", addresses);
}

/* ---- PreStartContainer ---- */

static int pause_unlocked(void *userdata) {
        (void) userdata;
        (void) usleep(PROGRAM_POLL_US);
        return 0;
}

/*
 * Loads `want` into a drifted port (its afu_id read `now`) from bitstream_dir, without the lock;
 * its card is busy meanwhile. `u` is not valid after (scans ran).
 */
static int reprogram(fpga_state *s, const unit *u, const fpga_port *now, const char *want) {
        _cleanup_(fpga_reprogram_job_done) fpga_reprogram_job job = { 0 };
        _cleanup_free_ char *why = NULL;
        int r;

        r = fpga_reprogram_job_init(s->ctx, s->cfg.bitstream_dir, &u->fme, now, want, &job, &why);
        if (r < 0)
                return kdp_backend_log_error(s->ctx, r, "Cannot program the port before the container start",
                                             KDP_F_STR("device", u->id), KDP_F_STR("card", u->fme.pci_address),
                                             KDP_F_STR("want", want), KDP_F_STR("have", now->afu_id),
                                             KDP_F_STR("reason", why ? why : ""));
        r = fpga_reprogram_busy_add(&s->busy, job.card);
        if (r < 0)
                return r;
        kdp_backend_log_info(s->ctx, "Programming the port before the container start", KDP_F_STR("device", job.port),
                             KDP_F_STR("card", job.card), KDP_F_STR("want", job.want), KDP_F_STR("have", job.have),
                             KDP_F_STR("bitstream", job.gbs_path));
        r = kdp_backend_run_unlocked(s->ctx, fpga_reprogram_job_run, &job);
        fpga_reprogram_busy_remove(&s->busy, job.card);
        if (r < 0)
                return kdp_backend_log_error(s->ctx, r, "Cannot program the port before the container start",
                                             KDP_F_STR("device", job.port), KDP_F_STR("card", job.card),
                                             KDP_F_STR("want", job.want), KDP_F_STR("have", job.have),
                                             KDP_F_STR("reason", job.reason ? job.reason : ""));
        kdp_backend_log_info(s->ctx, "Programmed the port before the container start", KDP_F_STR("device", job.port),
                             KDP_F_STR("card", job.card), KDP_F_STR("afu", job.want));
        return 0;
}

/* The port must carry `want`: read its afu_id again; a drifted one is programmed, or fails the start. */
static int check_afu(fpga_state *s, const unit *u, const char *want) {
        fpga_port now = { .fme = -1 };

        snprintf(now.name, sizeof(now.name), "%s", u->id);
        snprintf(now.devpath, sizeof(now.devpath), "%s", u->devpath);
        snprintf(now.pci_address, sizeof(now.pci_address), "%s", u->pci_address);
        fpga_discover_read_afu(s->ctx, &now);
        if (now.afu_err < 0)
                return kdp_backend_log_error(s->ctx, now.afu_err, "Cannot read the port's afu_id before the container start",
                                             KDP_F_STR("device", u->id), KDP_F_STR("pciAddress", u->pci_address));
        if (strcmp(now.afu_id, want) == 0)
                return 0;
        if (!s->cfg.bitstream_dir)
                return kdp_backend_log_error(s->ctx, -EIO, "Port carries another AFU than its resource promises",
                                             KDP_F_STR("device", u->id), KDP_F_STR("pciAddress", u->pci_address),
                                             KDP_F_STR("resource", u->resource), KDP_F_STR("want", want),
                                             KDP_F_STR("have", now.afu_id));
        return reprogram(s, u, &now, want);
}

/*
 * af mode: every port must still carry the AFU its resource promises: the AFU of the af
 * resource the kubelet names (the port may have moved away from it since it was listed), or
 * for a model_resources name the port's AFU as listed. Waits (unlocked) while another
 * programming of the port's card runs.
 */
static int check_port(fpga_state *s, const char *resource, const char *id) {
        const char *af = resource_afu(s, resource);
        bool promised = af;
        char want[FPGA_ID_MAX];
        uint64_t until = now_ms(s) + PROGRAM_WAIT_MS;
        const unit *u;

        if (af)
                snprintf(want, sizeof(want), "%s", af);         /* the table may grow while unlocked */
        for (;;) {
                u = promised ? find_unit(s, UNIT_PORT, id) : unit_by_id(s, resource, id);
                if (!u || u->kind != UNIT_PORT)
                        return 0;       /* regions and Alveo cards promise no AFU */
                if (!fpga_reprogram_busy_has(&s->busy, u->fme.pci_address))
                        break;
                if (now_ms(s) >= until)
                        return kdp_backend_log_error(s->ctx, -EBUSY, "Port's card still being programmed at the "
                                                                     "container start",
                                                     KDP_F_STR("device", u->id), KDP_F_STR("card", u->fme.pci_address));
                (void) kdp_backend_run_unlocked(s->ctx, pause_unlocked, NULL);
        }
        if (!promised)
                snprintf(want, sizeof(want), "%s", u->afu_id);
        return check_afu(s, u, want);
}

static int fpga_pre_start(void *state, const kdp_prestart_request *req) {
        fpga_state *s = state;

        for (size_t i = 0; i < req->n_device_ids; i++) {
                int r = check_port(s, req->resource, req->device_ids[i]);

                if (r < 0)
                        return r;
        }
        return 0;
}

/* The config keys fpga_config_parse() reads (README.md, "Parameters"). */
static const kdp_param_spec fpga_params[] = {
        { "mode", "af", "Intel cards: af (a device per port, by AFU), region (a device per FME, all its ports) "
                        "or regiondevel (region plus the FME node)" },
        { "allow", "", "serve only these cards: vendor:device, vendor:* or PCI addresses (empty: all)" },
        { "deny", "", "never serve these cards (same forms as allow)" },
        { "model_resources", "", "per-model resources: vendor:device=resource,... (e.g. 10ee:5005=amd.com/u250)" },
        { "xilinx_prefix", "amd.com/", "what precedes <VBNV>-<timestamp> in an Alveo card's resource "
                                       "(xilinx.com/fpga- for older AMD plugin names)" },
        { "xilinx_mgmt_node", "false", "also hand out an Alveo card's management node /dev/xclmgmt<N>" },
        { "cdi", "false", "write CDI specs into --cdi-dir and return CDI device names" },
        { "bitstream_dir", "", "where bitstreams lie, as <interface_id>/<afu_id>.gbs (Intel's /srv/intel.com/fpga "
                               "layout); empty: no programming" },
        { "program", "", "the AFU each card should carry: <PCI address or interface ID>=<AFU ID>,... (an "
                         "Alveo card by address: the logic UUID of its xclbin)" },
        { "busy_hold_s", "30", "seconds a passing state (afu_id busy during PR, XRT dev_offline, rom.* gone "
                               "in a reset) keeps the last health before it counts as unhealthy" },
        { 0 },
};

static const char *const fpga_subsystems[] = { "pci", "platform", "fpga_region", "drm", NULL };

static const kdp_backend_ops fpga_ops = {
        .abi_major = KDP_BACKEND_ABI_MAJOR,
        .struct_size = sizeof(kdp_backend_ops),
        .name = "fpga",
        .udev_subsystems = fpga_subsystems,
        .params = fpga_params,
        .init = fpga_init,
        .scan = fpga_scan,
        .fini = fpga_fini,
        .allocate = fpga_allocate,
        .pre_start = fpga_pre_start,
        .rescan_interval_ms = 2000,     /* error registers, afu_id, XRT status and hwmon send no uevent */
        .device_event = fpga_device_event,
        .reload = fpga_reload,
};

KDP_BACKEND_REGISTER(fpga_ops);
