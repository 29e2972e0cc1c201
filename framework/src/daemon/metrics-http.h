/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kdpd's HTTP endpoint (--metrics-address), on libmicrohttpd with its own
 * polling thread, the metrics thread:
 *
 *   GET|HEAD /metrics   the registry (metrics.h), text format 0.0.4
 *   GET|HEAD /healthz   200 "ok", or 503 naming each watched thread that has
 *                       not run for longer than the bound (event loop, CQ thread)
 *   GET|HEAD /readyz    200 "ok", or 503 naming each resource not registered
 *                       with the kubelet or without a ListAndWatch stream
 *   another path        404; another method 405 (Allow: GET, HEAD)
 *
 * The address is HOST:PORT (an IPv4 literal, [IPv6] or a name; an empty HOST
 * is every address, IPv6 and IPv4 when the host has IPv6; port 0 is one the
 * kernel picks), or an absolute path: a unix socket kdpd binds itself as it
 * does the plugin sockets (unix-socket.h: a stale one is removed, anything
 * else in the way refused), mode 0660 and of the --socket-group when given.
 * kdpd binds and listens, then hands MHD a duplicate of the socket
 * (MHD_OPTION_LISTEN_SOCKET), which MHD closes when stopped.
 *
 * What a scraper that misbehaves can take: MAX_CONNECTIONS connections at
 * once, MAX_PER_IP of them from one IP address (unix peers have no address:
 * they share the total), with MEMORY_LIMIT bytes for its request. A request
 * head must be whole HEAD_S seconds after the connection was accepted (or
 * its last answer sent), however slowly its bytes keep coming; an answer
 * that makes no progress is closed after IDLE_S. A connection past a limit
 * is never turned away: the guard closes the connection of that address (or
 * of all) that has waited longest for its head, else the one answering
 * longest. So a probe, which sends its head at once, is the newest and the
 * last closed, and nobody can hold the endpoint with heads never sent: the
 * kubelet's probes come from the node's own address, as a host-network pod's
 * connections would. The guard is the accept policy and the connection
 * callbacks, on the metrics thread, and its own thread, which closes heads
 * past HEAD_S: both shutdown() a duplicate of the connection's fd, so MHD
 * closes it at its next turn, and a number MHD let go is never reused under
 * them. The answers are written on the
 * metrics thread from the registry, whose lock only the loop shares: the CQ
 * threads never wait on a scrape, and the loop only for the copy of the
 * list of resources.
 *
 * Threads: kdp_metrics_http_new() and _free() on the loop thread (which
 * starts and joins the guard's); the metrics thread only reads the
 * registry, which outlives the endpoint.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include <kdp/cleanup.h>

#include "metrics.h"

typedef struct kdp_metrics_http kdp_metrics_http;

/* An address as --metrics-address gives it: a unix socket path, or a host (empty: any) and a port. */
typedef struct kdp_metrics_http_address {
        bool unix_socket;
        char path[108];                 /* sizeof(sun_path) */
        char host[256];
        char port[8];
} kdp_metrics_http_address;

/* 0, or -EINVAL for what is not "/path", "HOST:PORT", "[IPV6]:PORT" or ":PORT" (port 0 to 65535). */
int kdp_metrics_http_parse_address(const char *text, kdp_metrics_http_address *ret);

/*
 * Binds `address`, a unix socket's group being `socket_gid` ((gid_t) -1: kdpd's),
 * and serves `m`; errors are logged. Logs "Serving metrics" with the address
 * bound (the port the kernel picked for port 0).
 */
int kdp_metrics_http_new(kdp_metrics *m, const char *address, gid_t socket_gid, kdp_metrics_http **ret);
/* The address bound: "127.0.0.1:41234", "[::1]:9400" (the port the kernel picked for 0), or the path. */
const char *kdp_metrics_http_bound(const kdp_metrics_http *h);
/* Stops the metrics thread (a scrape in progress is finished first) and removes a unix socket. */
kdp_metrics_http *kdp_metrics_http_free(kdp_metrics_http *h);
KDP_DEFINE_CLEANUP_FUNC(kdp_metrics_http, kdp_metrics_http_free)
