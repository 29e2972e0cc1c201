/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The front door of kdpd's plugin sockets. kdpd listens on each socket
 * itself; the gate thread accepts a connection, hands gRPC one end of a
 * socketpair for it (grpc_server_add_channel_from_fd) and relays bytes
 * between the peer and gRPC, reading the frame headers of what the peer
 * sends. gRPC 1.51 parses whatever it reads and queues every call it parsed
 * until kdpd takes it (~14 KB a call), with no limit of its own that binds a
 * peer which never acks SETTINGS. The gate bounds it where the bytes still are:
 *
 *   new streams   a HEADERS frame that opens a stream passes only while the
 *                 connection has fewer than KDP_GATE_MAX_UNSEEN streams that
 *                 kdpd has not yet taken as calls (kdp_gate_call_seen()) and
 *                 that passed less than KDP_GATE_UNSEEN_MS ago (a stream its
 *                 peer resets before kdpd takes it never becomes a call);
 *                 until then the gate reads nothing more from that peer
 *   answers       while a connection's answers wait for its peer to read
 *                 them (a full relay buffer), the gate reads nothing from that
 *                 peer: its calls and PINGs wait in its own socket
 *   connections   at most KDP_GATE_MAX_CONNECTIONS per socket; the next one
 *                 closes the oldest connection without a ListAndWatch stream
 *
 * A peer that reads its answers and opens streams no faster than kdpd takes
 * them, as the kubelet does, never waits on the gate.
 *
 * Threads and ownership:
 *   loop thread    kdp_gate_listen() and kdp_gate_close() of a server's socket
 *   gate thread    accepts, relays, closes; owns every connection and its fds
 *                  (gRPC owns its end of each socketpair)
 *   CQ thread      kdp_gate_call_seen(), kdp_gate_stream_end(),
 *                  kdp_gate_set_registrar(), kdp_gate_is_registrar()
 * With heartbeats (metrics.h) the gate thread wakes at least every beat
 * period and stamps its own, so /healthz names it when it is stuck.
 * The gate's lock guards the listener and connection lists and the counters
 * the CQ thread changes; an eventfd wakes the gate thread. A closed listener
 * adds no channel to its server once kdp_gate_close() returns.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <grpc/grpc.h>

#include "metrics.h"

#define KDP_GATE_MAX_UNSEEN 16
#define KDP_GATE_UNSEEN_MS 200
#define KDP_GATE_MAX_CONNECTIONS 64

typedef struct kdp_gate kdp_gate;
typedef struct kdp_gate_listener kdp_gate_listener;

/*
 * With `metrics` (may be NULL), the gate thread gets a heartbeat /healthz
 * watches and wakes at least every kdp_metrics_beat_ms() to stamp it.
 */
int kdp_gate_new(kdp_metrics *metrics, kdp_gate **ret);
/* Ends the gate thread and closes every connection and listener left. */
kdp_gate *kdp_gate_free(kdp_gate *g);

/*
 * Takes `fd` (closed on failure too), a listening unix socket bound at `path`; its connections become
 * channels of `server` (started). `resource` names it in the log. The socket
 * file is removed by kdp_gate_close() if it is still this socket's.
 */
int kdp_gate_listen(kdp_gate *g, int fd, const char *path, grpc_server *server, const char *resource,
                    kdp_gate_listener **ret);
/* Stops accepting and removes the socket file; the connections stay until gRPC closes them. */
void kdp_gate_close(kdp_gate *g, kdp_gate_listener *l);

/* Who is at the other end of a connection: SO_PEERCRED when it was accepted. */
typedef struct kdp_gate_peer {
        pid_t pid;                      /* 0: not known (another PID namespace) */
        uid_t uid;                      /* (uid_t) -1: not known */
} kdp_gate_peer;

/*
 * kdpd took a call whose peer (grpc_call_get_peer()) is `peer`: the stream
 * counts no longer as unseen. Returns the connection's ID (0 when no
 * connection of the gate has that peer, and then *ret_cred is left alone),
 * which a ListAndWatch (`stream`) hands back to kdp_gate_stream_end() when it
 * ends; *ret_cred (may be NULL) gets the connection's peer.
 */
uint64_t kdp_gate_call_seen(kdp_gate *g, const char *peer, bool stream, kdp_gate_peer *ret_cred);
void kdp_gate_stream_end(kdp_gate *g, uint64_t conn_id);

/*
 * A plugin watcher's GetInfo came on connection `conn_id`: the kubelet tells
 * how registering went (NotifyRegistrationStatus) on that same connection,
 * and kdp_gate_is_registrar() says so for as long as it lives. IDs are never
 * reused, so a connection gone (or 0) is never a registrar.
 */
void kdp_gate_set_registrar(kdp_gate *g, uint64_t conn_id);
bool kdp_gate_is_registrar(kdp_gate *g, uint64_t conn_id);

/*
 * Where a peer's bytes may pass (the gate's reading of HTTP/2 frames, RFC 9113
 * §3.4 and §4.1): the client preface, then 9-byte frame headers; a HEADERS
 * frame on a stream above every stream before opens it.
 */
typedef struct kdp_gate_scan {
        uint32_t preface_left;          /* bytes of the client preface not yet passed */
        uint32_t payload_left;          /* of the frame being passed */
        uint32_t last_stream;           /* the highest stream a HEADERS frame opened */
} kdp_gate_scan;

void kdp_gate_scan_init(kdp_gate_scan *sc);
/*
 * Scans `buf` (bytes not yet passed, from where the last scan stopped) and
 * returns how many may pass: it stops at a frame header not yet whole, and
 * before the HEADERS frame that would open stream `credits` + 1;
 * *ret_opened is the streams the passed bytes open.
 */
size_t kdp_gate_scan_bytes(kdp_gate_scan *sc, const uint8_t *buf, size_t len, unsigned credits,
                           unsigned *ret_opened);
