/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The devices of one sysfs subsystem, under the configured sysfs root: for
 * devices that are not the class children of a PCI function (kdp_pci_children
 * covers those), e.g. DFL FPGA ports on the platform bus, fpga_region,
 * infiniband.
 *
 * A subsystem is a class (<sysfs root>/class/<subsystem>/) or, without such a
 * class directory, a bus (<sysfs root>/bus/<subsystem>/devices/). Each entry
 * there is a link to the device's directory under <sysfs root>/devices/.
 */
#pragma once

#include <stddef.h>

#include <kdp/backend.h>
#include <kdp/pci.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kdp_subsystem_device {
        char name[64];                          /* the sysname: "region0", "dfl-port.0", "lo" */
        char devpath[512];                      /* below <sysfs root>/devices/, like kdp_pci_device.path:
                                                   "pci0000:3a/0000:3a:00.0/0000:3b:00.0/fpga_region/region0" */
        char devnode[256];                      /* "<dev root>/<DEVNAME>" from the device's uevent; "" if none */
        char driver[64];                        /* bound driver's name; "" if none */
        char pci_address[KDP_PCI_ADDRESS_MAX];  /* the nearest PCI function on devpath (the device itself if
                                                   it is one); "" if none */
} kdp_subsystem_device;

/*
 * Lists the devices of `subsystem` ("fpga_region", "platform", "net") into
 * *ret (free()) and their number into *ret_n, sorted by name in version order
 * (card2 before card10).
 *
 * Reads <sysfs root>/class/<subsystem>/ if that directory exists, else
 * <sysfs root>/bus/<subsystem>/devices/. devpath is what follows the last
 * "/devices/" of the entry's resolved path. pci_address is the last component
 * of devpath that <sysfs root>/bus/pci/devices/ links to.
 *
 * Without either directory, *ret is NULL and *ret_n 0: the subsystem has no
 * devices (yet), which is no error; so is a subsystem without entries. An
 * entry that vanishes mid-enumeration (a dangling link) is skipped, and so,
 * with a warning, is one whose name, devpath, devnode or driver does not fit
 * its field. That warning is written once per backend while the problem
 * lasts, and one info line when it ends ("Device no longer skipped" or
 * "Skipped device is gone", with subsystem= and device=), like the warnings
 * of <kdp/pci.h>. -EINVAL unless `subsystem` is one path component; -ENOMEM;
 * other -errno of reading the directory. Threads: the ctx's backend's hooks.
 */
int kdp_subsystem_enumerate(const kdp_backend_ctx *ctx, const char *subsystem, kdp_subsystem_device **ret,
                            size_t *ret_n);

#ifdef __cplusplus
}
#endif
