/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuzz/kfd-properties: a KFD topology node's `properties` (amd_kfd_parse_properties()). */
#include "fuzz.h"
#include "gpu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *text = fuzz_text(data, size);
        char bdf[KDP_PCI_ADDRESS_MAX];
        unsigned minor = 0;
        int r;

        memset(bdf, 'x', sizeof(bdf));
        r = amd_kfd_parse_properties(text, bdf, &minor);
        if (r == 1 && strnlen(bdf, sizeof(bdf)) == sizeof(bdf))
                abort();
        free(text);
        return 0;
}
