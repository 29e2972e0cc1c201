/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuzz/xid-set: a list of Xid codes as the gpu backend's params give it (gpu_xid_set_parse()). */
#include "fuzz.h"
#include "xid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *text = fuzz_text(data, size);
        gpu_xid_set set = { 0 };
        char *skipped = NULL;

        if (gpu_xid_set_parse(text, &set, &skipped) == 0) {
                (void) gpu_xid_set_has(&set, 79);
                gpu_xid_set_done(&set);
        }
        free(skipped);
        free(text);
        return 0;
}
