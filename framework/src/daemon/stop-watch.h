/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The stop's watchdog. kdpd's stop waits on things outside it: the calls in
 * progress (a PreStartContainer programming a card) and each backend's fini
 * (threads in an ioctl). A step that outlasts the timeout is abandoned: the
 * watchdog thread logs which step, and of which backend, at error level and
 * ends the process with status 1, so a programming stuck in the kernel cannot
 * keep kdpd from exiting until the kubelet's grace period ends in SIGKILL.
 *
 *   loop thread   kdp_stop_watch_new() as the stop begins, _step() before each
 *                 wait, _free() when the stop is over (joins the watchdog)
 *   watchdog      sleeps until the current step's deadline; a step still
 *                 current then ends kdpd (_exit(1): no cleanup may run while
 *                 the stuck step's thread still uses what it would free)
 */
#pragma once

#include <stdint.h>

#include <kdp/cleanup.h>

typedef struct kdp_stop_watch kdp_stop_watch;

/* Starts the watchdog: each step may take timeout_ms. */
int kdp_stop_watch_new(uint64_t timeout_ms, kdp_stop_watch **ret);
/* Names the step that begins now ("calls in progress", "backend stop"); backend may be NULL. */
void kdp_stop_watch_step(kdp_stop_watch *w, const char *step, const char *backend);
/* The stop is over: ends the watchdog. NULL-safe. */
kdp_stop_watch *kdp_stop_watch_free(kdp_stop_watch *w);
KDP_DEFINE_CLEANUP_FUNC(kdp_stop_watch, kdp_stop_watch_free)
