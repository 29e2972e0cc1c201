/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The event loop: one epoll thread that owns all device and registration state.
 *
 *   fd sources   (signalfd, inotify, udev monitor)  -> callback on the loop
 *   timers       (timerfd each: back-off, rescans)  -> callback on the loop
 *   kdp_loop_post(fn) from any thread (eventfd)     -> fn on the loop, FIFO
 *
 * Everything but kdp_loop_post() and kdp_loop_quit() must be called on the
 * loop thread. A source may be removed from inside any callback; its memory is
 * released after the current dispatch round.
 */
#pragma once

#include <stdint.h>

#include <kdp/cleanup.h>

typedef struct kdp_loop kdp_loop;
typedef struct kdp_loop_source kdp_loop_source;
typedef void (*kdp_loop_fd_fn)(kdp_loop *loop, int fd, uint32_t events, void *userdata);
typedef void (*kdp_loop_fn)(kdp_loop *loop, void *userdata);

int kdp_loop_new(kdp_loop **ret);
/* Runs the functions still posted, then frees; owners remove their sources first. */
kdp_loop *kdp_loop_free(kdp_loop *loop);
KDP_DEFINE_CLEANUP_FUNC(kdp_loop, kdp_loop_free)

/* Watches `fd` (not owned) for EPOLLIN etc. */
int kdp_loop_add_fd(kdp_loop *loop, int fd, uint32_t events, kdp_loop_fd_fn fn, void *userdata,
                    kdp_loop_source **ret);
/* A timer, disarmed until kdp_loop_timer_arm(). */
int kdp_loop_add_timer(kdp_loop *loop, kdp_loop_fn fn, void *userdata, kdp_loop_source **ret);
/* Fires after delay_ms (0 = as soon as possible), then every interval_ms (0 = once). */
int kdp_loop_timer_arm(kdp_loop_source *timer, uint64_t delay_ms, uint64_t interval_ms);
int kdp_loop_timer_disarm(kdp_loop_source *timer);
/* Stops watching and releases the source (a timer's fd is closed; arming it after gives -ESTALE); NULL is fine. */
void kdp_loop_remove(kdp_loop_source *source);

/* Thread-safe: runs fn(loop, userdata) on the loop thread. */
int kdp_loop_post(kdp_loop *loop, kdp_loop_fn fn, void *userdata);

/* Runs until kdp_loop_quit(); returns the code given to it. */
int kdp_loop_run(kdp_loop *loop);
/* Thread-safe. */
void kdp_loop_quit(kdp_loop *loop, int code);
