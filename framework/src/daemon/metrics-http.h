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
 * they share the total), each closed after IDLE_S seconds without a byte,
 * with MEMORY_LIMIT bytes for its request; while every slot is taken, new
 * connections wait in the listen backlog. The answers are written on the
 * metrics thread from the registry, whose lock only the loop shares: the CQ
 * threads never wait on a scrape, and the loop only for the copy of the
 * list of resources.
 *
 * Threads: kdp_metrics_http_new() and _free() on the loop thread; the
 * metrics thread only reads the registry, which outlives the endpoint.
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
