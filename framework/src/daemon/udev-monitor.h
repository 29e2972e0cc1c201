/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One libudev monitor for the whole daemon, on the loop thread.
 *
 * The source is "udev" (events after udevd processed them, with the device
 * nodes in place) when udevd runs (/run/udev/control exists), else "kernel"
 * (in containers without udevd, and under umockdev). Only the subsystems some
 * backend declared are let through the socket filter. Every event reaches
 * `fn` once, in order, as the loop drains the socket.
 */
#pragma once

#include <kdp/cleanup.h>

#include "loop.h"

typedef struct kdp_udev_monitor kdp_udev_monitor;

typedef struct kdp_udev_event {
        const char *action;             /* add remove change bind unbind move online offline */
        const char *subsystem;
        const char *devpath;            /* /devices/... */
        const char *sysname;            /* 0000:3b:00.0, renderD128, ens1f0 */
        const char *driver;             /* NULL when none */
        unsigned long long seqnum;
} kdp_udev_event;

typedef void (*kdp_udev_monitor_fn)(const kdp_udev_event *ev, void *userdata);

/* `subsystems` NULL-terminated, not empty. `source` NULL: chosen as above. */
int kdp_udev_monitor_new(kdp_loop *loop, const char *const *subsystems, const char *source,
                         kdp_udev_monitor_fn fn, void *userdata, kdp_udev_monitor **ret);
kdp_udev_monitor *kdp_udev_monitor_free(kdp_udev_monitor *m);
KDP_DEFINE_CLEANUP_FUNC(kdp_udev_monitor, kdp_udev_monitor_free)

/* Hands the events queued on the socket to `fn` now, as the loop would. NULL is fine. */
void kdp_udev_monitor_drain(kdp_udev_monitor *m);

/* "udev" or "kernel". */
const char *kdp_udev_monitor_source(const kdp_udev_monitor *m);
