/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The FPGA backend's config (see fpga.h and README.md): its params, parsed once in init into an
 * fpga_config, and the rules that follow from them: which mode, which cards allow/deny let
 * through, which resource a model_resources entry gives a card. allow, deny and model_resources
 * take the GPU backend's forms; `program` declares per card (PCI address) or per kind of card
 * (interface ID) the AFU it should carry, whose bitstream lies under `bitstream_dir`. A bad value is logged with the key, the value, where it was set
 * (file:line or the -o flag) and why, and init fails.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <kdp/backend.h>
#include <kdp/cleanup.h>

#include "fpga.h"
#include "program.h"

#define HOLD_MAX_S 3600

static const char *const mode_names[_FPGA_MODE_MAX] = {
        [FPGA_MODE_AF] = "af", [FPGA_MODE_REGION] = "region", [FPGA_MODE_REGIONDEVEL] = "regiondevel",
};

fpga_mode fpga_config_mode_from_string(const char *s) {
        for (fpga_mode m = 0; s && m < _FPGA_MODE_MAX; m++)
                if (strcmp(mode_names[m], s) == 0)
                        return m;
        return _FPGA_MODE_INVALID;
}

const char *fpga_config_mode_to_string(fpga_mode m) {
        return m >= 0 && m < _FPGA_MODE_MAX ? mode_names[m] : NULL;
}

static int reject(const fpga_config *c, const char *param, const char *value, const char *why) {
        const char *origin = kdp_backend_param_origin(c->ctx, param);
        char key[64];

        snprintf(key, sizeof(key), "fpga.%s", param);
        kdp_backend_log_error(c->ctx, -EINVAL, "Rejected config value", KDP_F_STR("key", key),
                              KDP_F_STR("value", value), KDP_F_STR("origin", origin ? origin : "?"),
                              KDP_F_STR("reason", why));
        return -EINVAL;
}

static void strv_free(char **v) {
        for (size_t i = 0; v && v[i]; i++)
                free(v[i]);
        free(v);
}

/* The comma-separated entries of `text`, trimmed, empty ones left out, into a NULL-terminated array. */
static int list_entries(const char *text, char ***ret) {
        char **v = calloc(1, sizeof(char *));
        size_t n = 0;

        if (!v)
                return -ENOMEM;
        for (const char *p = text ? text : ""; *p;) {
                size_t len = strcspn(p, ","), lead = strspn(p, " \t");
                size_t end = len;
                char **nv;

                while (end > lead && (p[end - 1] == ' ' || p[end - 1] == '\t'))
                        end--;
                if (end > lead) {
                        nv = realloc(v, (n + 2) * sizeof(char *));
                        if (!nv) {
                                strv_free(v);
                                return -ENOMEM;
                        }
                        v = nv;
                        v[n] = strndup(p + lead, end - lead);
                        v[n + 1] = NULL;
                        if (!v[n]) {
                                strv_free(v);
                                return -ENOMEM;
                        }
                        n++;
                }
                p += len;
                if (*p == ',')
                        p++;
        }
        *ret = v;
        return 0;
}

/* "vvvv:dddd" -> 1; "vvvv:*" -> 2 (device any); else 0. */
static int pci_id_form(const char *text, uint16_t *vendor, uint16_t *device) {
        unsigned v, d;
        int end = 0;

        if (strlen(text) == 9 && sscanf(text, "%4x:%4x%n", &v, &d, &end) == 2 && end == 9) {
                *vendor = (uint16_t) v;
                *device = (uint16_t) d;
                return 1;
        }
        if (strlen(text) == 6 && strcmp(text + 4, ":*") == 0 && sscanf(text, "%4x%n", &v, &end) == 1 && end == 4) {
                *vendor = (uint16_t) v;
                return 2;
        }
        return 0;
}

static bool is_pci_address(const char *text) {
        unsigned a, b, c, f;
        char tail;

        return sscanf(text, "%x:%2x:%2x.%1x%c", &a, &b, &c, &f, &tail) == 4 ||
               (strlen(text) == 7 && sscanf(text, "%2x:%2x.%1x%c", &b, &c, &f, &tail) == 3);
}

static int parse_filter(fpga_config *c, const char *param, char ***ret) {
        char **v = NULL;
        int r = list_entries(kdp_backend_param(c->ctx, param), &v);

        if (r < 0)
                return r;
        for (size_t i = 0; v[i]; i++) {
                uint16_t vendor, device;

                if (!pci_id_form(v[i], &vendor, &device) && !is_pci_address(v[i])) {
                        r = reject(c, param, v[i], "not vendor:device, vendor:* or a PCI address");
                        strv_free(v);
                        return r;
                }
        }
        *ret = v;
        return 0;
}

static int add_model(fpga_config *c, const char *entry) {
        const char *eq = strchr(entry, '=');
        fpga_model_resource m = { 0 }, *nm;
        char id[16];

        if (!eq || !eq[1] || (size_t) (eq - entry) >= sizeof(id))
                return reject(c, "model_resources", entry, "expected vendor:device=resource");
        snprintf(id, sizeof(id), "%.*s", (int) (eq - entry), entry);
        if (pci_id_form(id, &m.vendor, &m.device) != 1)
                return reject(c, "model_resources", entry, "not a vendor:device PCI ID");
        if (strlen(eq + 1) >= FPGA_RESOURCE_MAX || !strchr(eq + 1, '/'))
                return reject(c, "model_resources", entry, "the resource is not domain/name of up to 127 characters");
        nm = realloc(c->models, (c->n_models + 1) * sizeof(*nm));
        if (!nm)
                return -ENOMEM;
        c->models = nm;
        m.resource = strdup(eq + 1);
        if (!m.resource)
                return -ENOMEM;
        c->models[c->n_models++] = m;
        return 0;
}

static int parse_models(fpga_config *c) {
        char **v = NULL;
        int r = list_entries(kdp_backend_param(c->ctx, "model_resources"), &v);

        for (size_t i = 0; r >= 0 && v[i]; i++)
                r = add_model(c, v[i]);
        strv_free(v);
        return r;
}

/* "3b:00.0" or "0000:3B:00.0" -> "0000:3b:00.0"; false unless a PCI address. */
static bool canonical_address(const char *text, char ret[FPGA_ID_MAX]) {
        if (!is_pci_address(text) || strlen(text) >= FPGA_ID_MAX - 5)
                return false;
        snprintf(ret, FPGA_ID_MAX, "%s%s", strlen(text) == 7 ? "0000:" : "", text);
        for (char *p = ret; *p; p++)
                *p = (char) tolower((unsigned char) *p);
        return true;
}

/* One `program` entry: <PCI address or interface ID>=<AFU ID>. */
static int add_program(fpga_config *c, const char *entry) {
        const char *eq = strchr(entry, '=');
        fpga_program_decl d = { 0 }, *nd;
        _cleanup_free_ char *target = NULL;

        if (!eq || eq == entry || !eq[1])
                return reject(c, "program", entry, "expected <PCI address or interface ID>=<AFU ID>");
        target = strndup(entry, (size_t) (eq - entry));
        if (!target)
                return -ENOMEM;
        d.by_address = canonical_address(target, d.target);
        if (!d.by_address && fpga_program_canonical_id(target, d.target) < 0)
                return reject(c, "program", entry, "the card is neither a PCI address nor an interface ID "
                                                   "(32 to 64 hex digits)");
        if (fpga_program_canonical_id(eq + 1, d.afu_id) < 0)
                return reject(c, "program", entry, "the AFU ID is not 32 to 64 hex digits");
        if (!d.by_address && !c->bitstream_dir)
                return reject(c, "program", entry, "programming by interface ID needs fpga.bitstream_dir");
        for (size_t i = 0; i < c->n_programs; i++)
                if (strcmp(c->programs[i].target, d.target) == 0)
                        return reject(c, "program", entry, "the card is declared twice");
        nd = realloc(c->programs, (c->n_programs + 1) * sizeof(*nd));
        if (!nd)
                return -ENOMEM;
        c->programs = nd;
        c->programs[c->n_programs++] = d;
        return 0;
}

static int parse_programs(fpga_config *c) {
        const char *dir = kdp_backend_param(c->ctx, "bitstream_dir");
        char **v = NULL;
        int r;

        if (dir && dir[0] && dir[0] != '/')
                return reject(c, "bitstream_dir", dir, "not an absolute path");
        c->bitstream_dir = dir && dir[0] ? dir : NULL;
        r = list_entries(kdp_backend_param(c->ctx, "program"), &v);
        for (size_t i = 0; r >= 0 && v[i]; i++)
                r = add_program(c, v[i]);
        strv_free(v);
        return r;
}

static int parse_all(fpga_config *c) {
        const char *mode = kdp_backend_param(c->ctx, "mode");
        int64_t hold;
        int r;

        c->mode = fpga_config_mode_from_string(mode);
        if (c->mode < 0)
                return reject(c, "mode", mode ? mode : "", "not af, region or regiondevel");
        c->xilinx_prefix = kdp_backend_param(c->ctx, "xilinx_prefix");
        if (!c->xilinx_prefix || !strchr(c->xilinx_prefix, '/') || c->xilinx_prefix[0] == '/')
                return reject(c, "xilinx_prefix", c->xilinx_prefix ? c->xilinx_prefix : "",
                              "expected a domain and '/' (amd.com/), optionally the start of the name");
        if ((r = parse_filter(c, "allow", &c->allow)) < 0 || (r = parse_filter(c, "deny", &c->deny)) < 0 ||
            (r = parse_models(c)) < 0 || (r = parse_programs(c)) < 0)
                return r;
        if ((r = kdp_backend_param_bool(c->ctx, "xilinx_mgmt_node", &c->xilinx_mgmt_node)) < 0 ||
            (r = kdp_backend_param_bool(c->ctx, "cdi", &c->cdi)) < 0 ||
            (r = kdp_backend_param_int(c->ctx, "busy_hold_s", 0, HOLD_MAX_S, &hold)) < 0)
                return r;
        c->busy_hold_ms = (uint64_t) hold * 1000;
        return 0;
}

static bool filter_has(char **list, const kdp_pci_device *p) {
        for (size_t i = 0; list && list[i]; i++) {
                uint16_t vendor = 0, device = 0;

                switch (pci_id_form(list[i], &vendor, &device)) {
                case 1:
                        if (vendor == p->vendor_id && device == p->device_id)
                                return true;
                        break;
                case 2:
                        if (vendor == p->vendor_id)
                                return true;
                        break;
                default:
                        if (strcasecmp(list[i], p->address) == 0 ||
                            (strlen(list[i]) == 7 && strcasecmp(list[i], p->address + 5) == 0))
                                return true;    /* "3b:00.0": domain 0000 */
                        break;
                }
        }
        return false;
}

const char *fpga_config_filtered(const fpga_config *c, const kdp_pci_device *p) {
        if (c->allow && c->allow[0] && !filter_has(c->allow, p))
                return "not in fpga.allow";
        return filter_has(c->deny, p) ? "in fpga.deny" : NULL;
}

const char *fpga_config_model_resource(const fpga_config *c, const kdp_pci_device *p) {
        for (size_t i = 0; i < c->n_models; i++)
                if (c->models[i].vendor == p->vendor_id && c->models[i].device == p->device_id)
                        return c->models[i].resource;
        return NULL;
}

const char *fpga_config_declared(const fpga_config *c, const char *pci_address, const char *interface_id) {
        for (size_t i = 0; i < c->n_programs; i++)
                if (c->programs[i].by_address && strcasecmp(c->programs[i].target, pci_address) == 0)
                        return c->programs[i].afu_id;
        for (size_t i = 0; interface_id && i < c->n_programs; i++)
                if (!c->programs[i].by_address && strcmp(c->programs[i].target, interface_id) == 0)
                        return c->programs[i].afu_id;
        return NULL;
}

int fpga_config_parse(const kdp_backend_ctx *ctx, fpga_config *ret) {
        fpga_config c = { .ctx = ctx };
        int r = parse_all(&c);

        if (r < 0) {
                fpga_config_done(&c);
                return r;
        }
        *ret = c;
        return 0;
}

void fpga_config_done(fpga_config *c) {
        strv_free(c->allow);
        strv_free(c->deny);
        for (size_t i = 0; i < c->n_models; i++)
                free(c->models[i].resource);
        free(c->models);
        free(c->programs);
        *c = (fpga_config){ 0 };
}
