/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuzz/config-yaml: kdpd's config file (kdp_config_load()) read in YAML mode, then looked up as kdpd does. */
#include "fuzz.h"
#include "fuzz-config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        return fuzz_config_one("config.yaml", data, size);
}
