/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuzz/nvidia-information: /proc/driver/nvidia/gpus/<bdf>/information (nvidia_parse_information()). */
#include "fuzz.h"
#include "gpu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *text = fuzz_text(data, size);
        const char *why = NULL;
        nvidia_info info;
        int r;

        r = nvidia_parse_information(text, "0000:3d:00.0", &info, &why);
        if (r == 0 && strnlen(info.uuid, sizeof(info.uuid)) == sizeof(info.uuid))
                abort();
        if (r == -EBADMSG && !why)
                abort();
        free(text);
        return 0;
}
