/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz/aer: a PCI device's health files as kdp_health_pci_check() reads them twice (the first
 * look is the baseline, the second compares). The input: aer_dev_fatal, aer_dev_nonfatal of the
 * first look, the same two of the second, then `enable`, separated by FUZZ_SEP.
 */
#include <kdp/health.h>

#include "backend-ctx.h"
#include "fuzz.h"

static kdp_backend_ctx *ctx;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        _cleanup_free_ char *sysfs_root = fuzz_pci_tree();
        const char *roots[_KDP_PATH_KIND_MAX] = { [KDP_PATH_SYSFS] = sysfs_root };
        static const kdp_param_spec none[] = { { 0 } };

        if (kdp_backend_ctx_new("fuzz", roots, none, NULL, &ctx) < 0)
                abort();
        return 0;
}

static void write_part(const char *file, const fuzz_part *p) {
        char rel[256];

        snprintf(rel, sizeof(rel), "%s/%s", FUZZ_PCI_DEVICE, file);
        fuzz_write(rel, p->data, p->size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        kdp_health_pci state = { 0 };
        fuzz_part parts[5];

        fuzz_split(data, size, parts, 5);
        write_part("enable", &parts[4]);
        for (unsigned look = 0; look < 2; look++) {
                _cleanup_free_ char *reason = NULL;

                write_part("aer_dev_fatal", &parts[2 * look]);
                write_part("aer_dev_nonfatal", &parts[2 * look + 1]);
                if (kdp_health_pci_check(ctx, FUZZ_PCI_ADDRESS, "nvidia", KDP_HEALTH_PCI_ALL, &state, &reason) < 0)
                        break;
        }
        return 0;
}
