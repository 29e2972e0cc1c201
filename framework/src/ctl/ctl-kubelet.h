/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The stand-in kubelet behind `kdpctl kubelet`: serves Registration on
 * <dir>/kubelet.sock, dials every registered plugin back, follows its
 * ListAndWatch and admits test pods, printing one event per stdout line.
 * With a PodResources socket it answers v1 List there with the pods admitted
 * (pod-<n> in namespace default, one container c0) and their devices, until
 * SIGUSR2 ends them all: their devices are free for later admissions and
 * List no longer names them ("freed resource=R ids=..." per pod). Each List
 * answered prints "listed pods=N"; with `pod_list` List answers those bytes
 * instead, whatever they are, and prints "listed bytes=N". GetAllocatableResources answers the
 * healthy devices of every resource ever registered (a plugin gone has none:
 * its devices went unhealthy), and prints "allocatable devices=N"; or, as
 * `get_allocatable` says, fails as a kubelet that does not serve it. Devices
 * come one ContainerDevices per device and NUMA node, with its topology
 * (one without topology for a device without), as the kubelet's own.
 *
 * With a plugins registry it is also the kubelet's plugin watcher: every
 * socket there at start or created later (not named ".*") is dialled and
 * asked GetInfo; a DevicePlugin whose supported versions hold v1beta1 and
 * whose name is a valid resource is connected to as a Register's endpoint
 * would be (its endpoint, or the registry socket itself) and told
 * NotifyRegistrationStatus(registered) after GetDevicePluginOptions, with the
 * same events ("registered ... endpoint=<the path dialled>"). A refusal is
 * told to the plugin (but for a failed dial or GetInfo) and printed as
 * register-rejected, with the kubelet's own texts; a refusal before the
 * connection is tried again after 0.5 s, doubling to 8 s, while the socket
 * stays (a failed connection is not: the kubelet counts such a plugin as
 * registered until its socket changes). Removing or replacing the socket
 * deregisters it: "deregistered resource=R endpoint=P", its connection closed
 * and its devices unhealthy, as at the end of its stream.
 *
 * A second registration of a resource (docs/kubelet.md §1.6) replaces the first
 * as a kubelet before 1.25 does: the older connection is closed at once, its
 * stream's end goes unprinted, and the newer one serves the resource. With
 * `duplicate_registration` keep-old it is a kubelet 1.25-1.36 instead
 * (k/k#121994): the newest registration takes the resource name (admissions
 * and allocations go to it) but the older connection stays open and the
 * device lists its stream still sends are applied to the resource and
 * printed; when that older stream ends, the client registered under the name
 * then (the newer one) is disconnected: "stream-ended" (the older stream's
 * status) and a devices line with every device unhealthy, as at the end of
 * the live stream, and the newer connection closed. A connection the
 * stand-in closed itself ends with no such look-up (the kubelet's finds no
 * client then, but for a registration in that instant). The plugin watcher's
 * deregistration still drops only the connection of the socket removed.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One pod asking `n` devices of `resource`, admitted after its first device list. */
typedef struct kdp_ctl_kubelet_admit {
        const char *resource;                   /* borrowed */
        unsigned n;
} kdp_ctl_kubelet_admit;

/* How GetAllocatableResources is answered. */
typedef enum kdp_ctl_kubelet_allocatable {
        KDP_CTL_KUBELET_ALLOCATABLE_SERVED,
        KDP_CTL_KUBELET_ALLOCATABLE_UNIMPLEMENTED,      /* before 1.21: "unknown method ..." */
        KDP_CTL_KUBELET_ALLOCATABLE_DISABLED,           /* 1.21-1.27, gate off: Unknown "... disabled" */
        _KDP_CTL_KUBELET_ALLOCATABLE_MAX,
        _KDP_CTL_KUBELET_ALLOCATABLE_INVALID = -EINVAL,
} kdp_ctl_kubelet_allocatable;

/* What a second registration of a resource does to the first (docs/kubelet.md §1.6). */
typedef enum kdp_ctl_kubelet_duplicate {
        KDP_CTL_KUBELET_DUPLICATE_REPLACE,              /* up to 1.24: the older one closed at once */
        KDP_CTL_KUBELET_DUPLICATE_KEEP_OLD,             /* 1.25-1.36: kept; its end disconnects the newer */
        _KDP_CTL_KUBELET_DUPLICATE_MAX,
        _KDP_CTL_KUBELET_DUPLICATE_INVALID = -EINVAL,
} kdp_ctl_kubelet_duplicate;

typedef struct kdp_ctl_kubelet_config {
        const char *dir;                        /* the device-plugins directory */
        const kdp_ctl_kubelet_admit *admits;
        size_t n_admits;
        bool exit_after_admit;                  /* stop once every admission is done */
        int64_t duration_ms;                    /* stop after this long; 0 = at SIGTERM/SIGINT */
        const char *pod_resources;              /* serve PodResources List on this socket; NULL: not */
        kdp_ctl_kubelet_allocatable get_allocatable;
        const uint8_t *pod_list;                /* List answered with these bytes (borrowed); NULL: the pods */
        size_t pod_list_size;
        unsigned drop_before_stream;            /* the first N registrations dropped before ListAndWatch */
        unsigned fail_dial_back;                /* the first N registrations' dial-backs fail */
        const char *plugins_registry;           /* also watch this plugins_registry directory; NULL: not */
        kdp_ctl_kubelet_duplicate duplicate_registration;
} kdp_ctl_kubelet_config;

/*
 * Runs until SIGTERM/SIGINT, the duration or the last admission, then shuts
 * down cleanly. Must be called before any other thread exists (it blocks the
 * signals). Returns the exit code: 0, or 1 on a start-up failure, a failed
 * admission (with exit_after_admit) or admissions still pending at the end
 * of the duration.
 */
int kdp_ctl_kubelet_run(const kdp_ctl_kubelet_config *cfg);

/* docs/kubelet.md §1.3: IsExtendedResourceName, exactly. */
bool kdp_ctl_kubelet_resource_name_valid(const char *name);
