/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuzz/sriov-config: the SR-IOV backend's config.json (sriov_config_load()). */
#include "fuzz.h"
#include "sriov.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *path = fuzz_path("config.json");
        sriov_config c;

        fuzz_write("config.json", data, size);
        (void) sriov_config_load(NULL, path, "intel.com", &c);
        sriov_config_done(&c);
        free(path);
        return 0;
}
