/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuzz/kfd-properties: a KFD topology node's `properties` (amd_kfd_parse_properties()). */
#include "fuzz.h"
#include "gpu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *text = fuzz_text(data, size);
        amd_kfd_node node;
        int r;

        memset(&node, 'x', sizeof(node));
        r = amd_kfd_parse_properties(text, &node);
        if (r == 1 && (strnlen(node.bdf, sizeof(node.bdf)) == sizeof(node.bdf) || node.partition > 7))
                abort();
        free(text);
        return 0;
}
