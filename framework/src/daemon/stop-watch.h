/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A stop with a time limit. kdpd's stop waits on things outside it: the
 * calls in progress (a PreStartContainer programming a card) and each
 * backend's fini (threads in an ioctl). The stop runs on a thread of its own,
 * naming each step as it begins; the caller waits for it, each step at most
 * the timeout. A step that outlasts it is abandoned: logged at error level
 * with the step and the backend, and the caller goes on to return from
 * main() while the stopping thread stays where it is stuck (exit ends it).
 *
 *   caller (main)    kdp_stop_watch_run(): starts the stopper, waits
 *   stopper thread   stop(userdata, w), calling kdp_stop_watch_step() before
 *                    each wait; frees what it stops
 * Ownership: the watch is freed by whichever of the two is last; after an
 * abandoned step that is the stopper, if it ever returns.
 */
#pragma once

#include <stdint.h>

typedef struct kdp_stop_watch kdp_stop_watch;

/* Runs stop(userdata, w) on a thread of its own: 0 when it ended, -ETIMEDOUT when a step outlasted timeout_ms. */
int kdp_stop_watch_run(uint64_t timeout_ms, void (*stop)(void *userdata, kdp_stop_watch *w), void *userdata);
/* Names the step that begins now ("calls in progress", "backend stop"); backend may be NULL. NULL-safe. */
void kdp_stop_watch_step(kdp_stop_watch *w, const char *step, const char *backend);
