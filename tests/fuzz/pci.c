/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz/pci: a PCI device's sysfs attributes as libkdp's PCI scan reads them (through libpci and
 * its own readers, kdp_pci_list_scan_root()). The input is the files' contents, in the order of
 * `files`, separated by FUZZ_SEP; a file past the input's last part is empty.
 */
#include <kdp/pci.h>

#include "fuzz.h"

static const char *const files[] = { "vendor", "device", "class", "subsystem_vendor", "subsystem_device",
                                     "sriov_totalvfs", "sriov_numvfs", "numa_node", "irq", "resource",
                                     "config", "revision" };
#define N_FILES (sizeof(files) / sizeof(files[0]))

static char *sysfs_root;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        sysfs_root = fuzz_pci_tree();
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        kdp_pci_list *l = NULL;
        fuzz_part parts[N_FILES];

        fuzz_split(data, size, parts, N_FILES);
        for (size_t i = 0; i < N_FILES; i++) {
                char rel[256];

                snprintf(rel, sizeof(rel), "%s/%s", FUZZ_PCI_DEVICE, files[i]);
                fuzz_write(rel, parts[i].data, parts[i].size);
        }
        if (kdp_pci_list_scan_root(sysfs_root, &l) < 0)
                return 0;
        /* at most the one device, listed or skipped */
        if (kdp_pci_list_size(l) + kdp_pci_list_skipped_size(l) != 1)
                abort();
        for (size_t i = 0; i < kdp_pci_list_size(l); i++)
                if (strcmp(kdp_pci_list_get(l, i)->address, FUZZ_PCI_ADDRESS) != 0)
                        abort();
        kdp_pci_list_free(l);
        return 0;
}
