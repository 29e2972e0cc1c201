/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libudev monitor on the event loop (see udev-monitor.h). The monitor owns its
 * udev context; each received udev_device lives only during the callback.
 */
#include <errno.h>
#include <libudev.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <kdp/log.h>

#include "udev-monitor.h"

#define UDEVD_CONTROL "/run/udev/control"
/* enough for a burst of hot-plug events while the loop is busy with a scan */
#define RECEIVE_BUFFER (4 * 1024 * 1024)

struct kdp_udev_monitor {
        struct udev *udev;
        struct udev_monitor *monitor;
        kdp_loop_source *source;
        const char *source_name;
        kdp_udev_monitor_fn fn;
        void *userdata;
};

void kdp_udev_monitor_drain(kdp_udev_monitor *m) {
        struct udev_device *dev;

        if (!m)
                return;
        while ((dev = udev_monitor_receive_device(m->monitor))) {
                kdp_udev_event ev = {
                        .action = udev_device_get_action(dev),
                        .subsystem = udev_device_get_subsystem(dev),
                        .devpath = udev_device_get_devpath(dev),
                        .sysname = udev_device_get_sysname(dev),
                        .driver = udev_device_get_driver(dev),
                        .seqnum = udev_device_get_seqnum(dev),
                };

                if (ev.action && ev.subsystem && ev.devpath) {
                        kdp_log_v(2, "Received device event", KDP_F_STR("action", ev.action),
                                  KDP_F_STR("subsystem", ev.subsystem), KDP_F_STR("device", ev.sysname),
                                  KDP_F_INT("seqnum", (int64_t) ev.seqnum));
                        m->fn(&ev, m->userdata);
                }
                udev_device_unref(dev);
        }
}

static void on_readable(kdp_loop *loop, int fd, uint32_t events, void *userdata) {
        kdp_udev_monitor_drain(userdata);
}

static const char *default_source(void) {
        return access(UDEVD_CONTROL, F_OK) == 0 ? "udev" : "kernel";
}

/* "pci,drm": every subsystem watched, for the log (cut at the buffer's end). */
static void join_names(const char *const *names, char *buf, size_t size) {
        size_t len = 0;

        buf[0] = '\0';
        for (size_t i = 0; names[i] && len < size; i++) {
                int n = snprintf(buf + len, size - len, "%s%s", i > 0 ? "," : "", names[i]);

                if (n < 0)
                        break;
                len += (size_t) n;
        }
}

int kdp_udev_monitor_new(kdp_loop *loop, const char *const *subsystems, const char *source,
                         kdp_udev_monitor_fn fn, void *userdata, kdp_udev_monitor **ret) {
        _cleanup_(kdp_udev_monitor_freep) kdp_udev_monitor *m = NULL;
        char names[256];
        int r;

        if (!subsystems || !subsystems[0] || !fn)
                return -EINVAL;
        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->fn = fn;
        m->userdata = userdata;
        m->source_name = source ? source : default_source();
        m->udev = udev_new();
        if (!m->udev)
                return -ENOMEM;
        m->monitor = udev_monitor_new_from_netlink(m->udev, m->source_name);
        if (!m->monitor)
                return -errno ? -errno : -EIO;
        for (size_t i = 0; subsystems[i]; i++) {
                r = udev_monitor_filter_add_match_subsystem_devtype(m->monitor, subsystems[i], NULL);
                if (r < 0)
                        return r;
        }
        (void) udev_monitor_set_receive_buffer_size(m->monitor, RECEIVE_BUFFER);
        r = udev_monitor_enable_receiving(m->monitor);
        if (r < 0)
                return r;
        r = kdp_loop_add_fd(loop, udev_monitor_get_fd(m->monitor), EPOLLIN, on_readable, m, &m->source);
        if (r < 0)
                return r;
        join_names(subsystems, names, sizeof(names));
        kdp_log_info("Watching device events", KDP_F_STR("source", m->source_name), KDP_F_STR("subsystems", names));
        *ret = KDP_TAKE_PTR(m);
        return 0;
}

kdp_udev_monitor *kdp_udev_monitor_free(kdp_udev_monitor *m) {
        if (!m)
                return NULL;
        kdp_loop_remove(m->source);
        if (m->monitor)
                udev_monitor_unref(m->monitor);
        if (m->udev)
                udev_unref(m->udev);
        free(m);
        return NULL;
}

const char *kdp_udev_monitor_source(const kdp_udev_monitor *m) {
        return m->source_name;
}
