/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Resource names the pods of Intel's and AMD's FPGA plugins already ask for (README.md,
 * "Resources"): Intel's af-/region- names, byte for byte, and AMD's <VBNV>-<timestamp>. Pure
 * functions over strings; the IDs they take are canonical (fpga_name_canonical_id()).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fpga.h"

#define INTEL_DOMAIN "fpga.intel.com/"
#define NAME_PART_MAX 63                /* the kubelet's limit on the part after the '/' */

int fpga_name_canonical_id(const char *text, char ret[FPGA_ID_MAX]) {
        char out[FPGA_ID_MAX];
        size_t n = 0;

        if (!text)
                return -EINVAL;
        while (isspace((unsigned char) *text))
                text++;
        for (const char *p = text; *p; p++) {
                if (*p == '-')
                        continue;
                if (isspace((unsigned char) *p)) {
                        const char *q = p;

                        while (isspace((unsigned char) *q))
                                q++;
                        if (*q)
                                return -EINVAL;         /* white space inside */
                        break;
                }
                if (!isxdigit((unsigned char) *p) || n + 1 >= sizeof(out))
                        return -EINVAL;
                out[n++] = (char) tolower((unsigned char) *p);
        }
        if (n == 0)
                return -EINVAL;
        out[n] = '\0';
        memcpy(ret, out, n + 1);
        return 0;
}

bool fpga_name_id_all_f(const char *id) {
        if (!id || !*id)
                return false;
        return strspn(id, "fF") == strlen(id);
}

static int hex_value(char c) {
        return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

/* The part after the domain must fit the kubelet's 63 characters. */
static int finish(const char *domain, const char *part, char ret[FPGA_RESOURCE_MAX]) {
        if (strlen(part) > NAME_PART_MAX || strlen(domain) + strlen(part) >= FPGA_RESOURCE_MAX)
                return -ENAMETOOLONG;
        return snprintf(ret, FPGA_RESOURCE_MAX, "%s%s", domain, part) < FPGA_RESOURCE_MAX ? 0 : -ENAMETOOLONG;
}

int fpga_name_af(const char *interface_id, const char *afu_id, char ret[FPGA_RESOURCE_MAX]) {
        static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        unsigned char bytes[FPGA_ID_MAX];
        char hex[2 * FPGA_ID_MAX], part[2 * FPGA_ID_MAX];
        size_t n_hex, n_bytes, k;

        if (!interface_id || !afu_id || strlen(interface_id) < 3 || strlen(afu_id) < 3)
                return -EINVAL;
        n_hex = (size_t) snprintf(hex, sizeof(hex), "%s%s", interface_id, afu_id);
        if (n_hex % 2 || strspn(hex, "0123456789abcdef") != n_hex)
                return -EINVAL;
        n_bytes = n_hex / 2;
        if (n_bytes > sizeof(bytes))
                return -ENAMETOOLONG;
        for (size_t i = 0; i < n_bytes; i++)
                bytes[i] = (unsigned char) (hex_value(hex[2 * i]) << 4 | hex_value(hex[2 * i + 1]));
        k = (size_t) snprintf(part, sizeof(part), "af-%.3s.%.3s.", interface_id, afu_id);
        /* base64url without padding: 3 bytes -> 4 characters, a tail of 1 or 2 bytes -> 2 or 3 */
        for (size_t i = 0; i < n_bytes && k + 4 < sizeof(part); i += 3) {
                unsigned v = (unsigned) bytes[i] << 16;
                size_t left = n_bytes - i;

                if (left > 1)
                        v |= (unsigned) bytes[i + 1] << 8;
                if (left > 2)
                        v |= bytes[i + 2];
                part[k++] = b64[v >> 18 & 63];
                part[k++] = b64[v >> 12 & 63];
                if (left > 1)
                        part[k++] = b64[v >> 6 & 63];
                if (left > 2)
                        part[k++] = b64[v & 63];
        }
        part[k] = '\0';
        return finish(INTEL_DOMAIN, part, ret);
}

int fpga_name_region(const char *interface_id, char ret[FPGA_RESOURCE_MAX]) {
        char part[FPGA_ID_MAX + 8];

        if (!interface_id || !*interface_id)
                return -EINVAL;
        snprintf(part, sizeof(part), "region-%s", interface_id);
        return finish(INTEL_DOMAIN, part, ret);
}

int fpga_name_xilinx(const char *prefix, const char *vbnv, const char *timestamp, char ret[FPGA_RESOURCE_MAX]) {
        const char *slash;
        char part[FPGA_RESOURCE_MAX + 40];
        char domain[FPGA_RESOURCE_MAX];

        if (!prefix || !vbnv || !*vbnv || !timestamp || !*timestamp)
                return -EINVAL;
        slash = strchr(prefix, '/');
        if (!slash || strlen(prefix) >= sizeof(domain))
                return -EINVAL;
        /* the prefix may carry the start of the name part ("xilinx.com/fpga-") */
        snprintf(domain, sizeof(domain), "%.*s", (int) (slash - prefix + 1), prefix);
        snprintf(part, sizeof(part), "%s%s-%s", slash + 1, vbnv, timestamp);
        for (const char *p = part; *p; p++)
                if (!isalnum((unsigned char) *p) && *p != '-' && *p != '_' && *p != '.')
                        return -EINVAL;
        return finish(domain, part, ret);
}
