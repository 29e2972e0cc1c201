/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuzz/rpc-allocate: a Allocate request message, decoded and answered as kdpd's servers do (fuzz-rpc.h). */
#include "fuzz.h"
#include "fuzz-rpc.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        fuzz_rpc_init();
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        fuzz_rpc_answer("Allocate", data, size);
        return 0;
}
