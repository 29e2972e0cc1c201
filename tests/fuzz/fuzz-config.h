/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The config targets' body (header-only; include fuzz.h first): one input written to a file of
 * the given name, whose extension chooses YAML or JSON, loaded by kdp_config_load() and looked up
 * as kdpd does (a param, a section's check against its specs, a section compared with itself).
 */
#pragma once

#include "config.h"

static const kdp_param_spec fuzz_config_specs[] = {
        { "devices", "8", "" },
        { "resource", "example.com/widget", "" },
        { 0 },
};

static inline int fuzz_config_one(const char *name, const uint8_t *data, size_t size) {
        _cleanup_(kdp_config_freep) kdp_config *c = NULL;
        char *path = fuzz_path(name);
        const char *origin = NULL;

        fuzz_write(name, data, size);
        if (kdp_config_load(path, &c) == 0) {
                (void) kdp_config_get(c, "example", "devices", &origin);
                (void) kdp_config_check_section(c, "example", fuzz_config_specs);
                if (!kdp_config_section_equal(c, c, "example"))
                        abort();
        }
        free(path);
        return 0;
}
