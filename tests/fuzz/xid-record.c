/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz/xid-record: one /dev/kmsg record (gpu_xid_parse_record()), given as it is read: not
 * NUL-terminated, so a read past its end is caught.
 */
#include "fuzz.h"
#include "xid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *line = malloc(size ? size : 1);
        gpu_xid x;

        if (!line)
                abort();
        memcpy(line, data, size);
        if (gpu_xid_parse_record(line, size, &x) == 0 && strnlen(x.bdf, sizeof(x.bdf)) == sizeof(x.bdf))
                abort();
        free(line);
        return 0;
}
