/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kdpd's state machine, on the loop thread:
 *
 *   start    config → load and start backends → remove our stale sockets →
 *            scan → per resource: snapshot, server on a fresh socket, Register
 *   scan     (udev event of a declared subsystem, timer, probe, reload) →
 *            health hysteresis → diff per resource:
 *            new → serve + register; changed → publish; gone → empty list, stop
 *   kubelet.sock created → exactly one successful Register per resource per
 *            kubelet (kubelet-client.h): a resource already registering or
 *            registered with that very file, on a socket the kubelet's cleanup
 *            left intact, keeps it; every other one is re-served on a fresh
 *            socket and registers
 *   stream lost → re-served and re-registered only if the kubelet it
 *            registered with still is kubelet.sock and alive (k/k#121994);
 *            a stopped or killed kubelet's successor registers us instead
 *   plugin watcher (--registration): the sockets go to plugins_registry and
 *            nothing calls Register; the kubelet finds a socket, asks GetInfo,
 *            connects and says NotifyRegistrationStatus, taken as the
 *            registration (kdp_kubelet_client_adopt()). A new kubelet finds the
 *            sockets again: kubelet.sock created re-serves only a resource
 *            whose socket is gone, and a stream lost or a registration with no
 *            stream re-serves on a fresh socket, which the watcher sees as a
 *            new plugin
 *   kubelet dir removed or moved, then back → as kubelet.sock created: every
 *            resource whose socket went with it is re-served in the new one
 *   serving fails (the name taken by a symlink, a directory, a live socket
 *            of another process; the dir unwritable) → retried on the next
 *            name with Register's back-off, forever
 *   listener check (every 10 s) → a plugin socket whose listener left a
 *            connection unanswered for two checks (grpc core stops accepting
 *            after an EMFILE) is re-served on a fresh socket and re-registered
 *   SIGHUP   reload config; only backends whose section changed restart, and
 *            only their resources re-register
 *   SIGTERM/SIGINT  stop serving, remove our sockets and not-served lists, exit
 *
 * pod-resources.h: after an Allocate (coalesced) and periodically, kdpd asks
 * the kubelet's PodResources List which devices are in use and hands each
 * backend with an allocated hook the IDs of its own resources.
 *
 * After each scan the backend's conditions (conditions.h: devices it does not
 * serve, refused resources, dropped NUMA affinity) are diffed against its
 * previous scan's and logged only where they changed; when the devices not
 * served changed, <state dir>/<backend>.not-served is rewritten (not-served.h).
 * Each resource's device changes are logged as its list changes, a device's
 * health problem once when it starts and once when it ends (health-log.h).
 *
 * Metrics (metrics.h) are counted whether or not they are served: the
 * loop counts scans, device events, kubelet restarts, registrations and
 * devices that became unhealthy, and times each change from the event or
 * scan that found it (the snapshot's changed_ns) to its ListAndWatch send;
 * the servers count their calls and streams. With --metrics-address the
 * endpoint (metrics-http.h) serves them on its own thread, with /healthz fed
 * by heartbeats (the loop's beat timer, the CQ threads' bounded waits) and
 * /readyz by each resource's registration and streams.
 *
 * The daemon owns backends, resources, the kubelet client, the server
 * runtime, the metrics and their endpoint; a resource borrows its backend
 * and holds the metrics list's reference on its series; a server borrows its
 * resource's backend and holds its own snapshot and series references. At
 * the stop the endpoint goes first and the metrics last.
 */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include <kdp/backend.h>
#include <kdp/cleanup.h>

typedef struct kdp_daemon kdp_daemon;

/* How the kubelet learns of kdpd's sockets (docs/kubelet.md §1.5, §1.7). */
typedef enum kdp_registration_mode {
        KDP_REGISTRATION_AUTO,          /* the plugin watcher when its directory exists, else kubelet.sock */
        KDP_REGISTRATION_KUBELET_SOCK,  /* Register on kubelet.sock, sockets in the kubelet dir */
        KDP_REGISTRATION_PLUGIN_WATCHER,        /* sockets in plugins_registry, found by the kubelet */
} kdp_registration_mode;

typedef struct kdp_daemon_options {
        const char *const *backends;    /* names or paths, NULL-terminated */
        const char *config_path;        /* may be NULL */
        const char *const *overrides;   /* "backend.key=value", NULL-terminated, may be NULL */
        const char *kubelet_dir;
        kdp_registration_mode registration;
        const char *plugins_registry;   /* NULL: plugins_registry beside the kubelet dir */
        const char *state_dir;          /* the not-served lists (not-served.h); NULL: /run/kdp */
        const char *roots[_KDP_PATH_KIND_MAX];  /* NULL: default */
        const char *const *backend_dirs;        /* NULL: kdp_registry_default_dirs() */
        uint64_t health_hold_ms;                /* a flapping device stays Unhealthy this long; 0: off */
        const char *udev_source;                /* "udev", "kernel", or NULL: chosen by udevd's presence */
        /* PodResources socket: NULL = <kubelet_dir>/../pod-resources/kubelet.sock, "" = not asked */
        const char *pod_resources_socket;
        uint64_t pod_resources_period_ms;       /* 0: KDP_POD_RESOURCES_PERIOD_MS */
        bool socket_group_set;                  /* plugin sockets 0660 and of socket_gid, else 0600 */
        gid_t socket_gid;
        uint64_t stop_timeout_ms;               /* a step of kdp_daemon_stop() longer is abandoned; 0: 20 s */
        const char *metrics_address;            /* HOST:PORT or /PATH (metrics-http.h); NULL: no endpoint */
        bool metrics_device_health;             /* kdp_device_health: a series per device */
        uint64_t metrics_stall_ms;              /* /healthz fails past it; 0: KDP_METRICS_STALL_MS */
} kdp_daemon_options;

/* Everything up to the first registrations; errors are logged. */
int kdp_daemon_new(const kdp_daemon_options *opts, kdp_daemon **ret);
/* Serves until SIGTERM or SIGINT; returns 0 on a clean stop. */
int kdp_daemon_run(kdp_daemon *d);
kdp_daemon *kdp_daemon_free(kdp_daemon *d);
/*
 * Frees d as kdpd stops, each step that waits on something outside kdpd (the
 * calls in progress, each backend's stop) within opts->stop_timeout_ms
 * (stop-watch.h): 0, or -ETIMEDOUT when a step was abandoned (logged) and d is
 * left to the thread stuck in it.
 */
int kdp_daemon_stop(kdp_daemon *d);
KDP_DEFINE_CLEANUP_FUNC(kdp_daemon, kdp_daemon_free)

/* Prints each backend's params (for --help). */
int kdp_daemon_print_params(const char *const *backends, const char *const *backend_dirs);
