/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `kdpctl discover`: the PCI tree as kdp sees it (kdp_pci_list_scan_root()),
 * one device per line, each below its upstream bridge:
 *
 *   ADDRESS           ID         CLASS   DRIVER     NUMA  IOMMU  SRIOV
 *   0000:3a:00.0      8086:347a  060400  pcieport   0     10
 *     0000:3b:00.0    1000:c030  060400  pcieport   0     11
 *       0000:3c:00.0  1000:c030  060400  pcieport   0     12
 *
 * "-" for no driver, no NUMA affinity, no IOMMU group; SRIOV is vfs=N/M
 * (enabled/total) on a PF and pf=ADDR on a VF.
 */
#pragma once

#include <stdio.h>

#include <kdp/pci.h>

/* Prints `l` as above. Returns 0 or -ENOMEM. */
int kdp_ctl_discover_print(FILE *out, const kdp_pci_list *l);

/* Scans `sysfs_root` and prints to stdout; returns kdpctl's exit code (1 with a message on stderr). */
int kdp_ctl_discover_run(const char *sysfs_root);
