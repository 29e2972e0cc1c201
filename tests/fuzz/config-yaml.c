/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuzz/config-yaml: kdpd's config file (kdp_config_load()) read in YAML mode, then looked up as kdpd does. */
#include "config.h"
#include "fuzz.h"

static const kdp_param_spec specs[] = {
        { "devices", "8", "" },
        { "resource", "example.com/widget", "" },
        { 0 },
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(kdp_config_freep) kdp_config *c = NULL;
        char *path = fuzz_path("config.yaml");
        const char *origin = NULL;

        fuzz_write("config.yaml", data, size);
        if (kdp_config_load(path, &c) == 0) {
                (void) kdp_config_get(c, "example", "devices", &origin);
                (void) kdp_config_check_section(c, "example", specs);
                if (!kdp_config_section_equal(c, c, "example"))
                        abort();
        }
        free(path);
        return 0;
}
