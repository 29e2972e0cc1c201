/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A rate limit for one kind of log line that a peer can cause at will (a
 * refused call): at most `burst` lines per `window_usec`; what is dropped is
 * counted and handed out once, with the first line allowed after the window,
 * so the caller can log "suppressed N" before it. Thread-safe; the caller
 * owns the struct and passes the time in (a test sets it).
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct kdp_log_limit {
        pthread_mutex_t lock;
        uint64_t window_usec;
        unsigned burst;
        uint64_t window_start;          /* under lock */
        unsigned n_logged;              /* in this window, under lock */
        uint64_t n_suppressed;          /* since the last line allowed, under lock */
        bool started;                   /* under lock */
} kdp_log_limit;

void kdp_log_limit_init(kdp_log_limit *l, unsigned burst, uint64_t window_usec);
void kdp_log_limit_done(kdp_log_limit *l);

/*
 * True if a line may be logged at `now_usec`; then *ret_suppressed is how many
 * were dropped before it (0 mostly), and the count starts again. False: the
 * line is dropped and counted.
 */
bool kdp_log_limit_allow(kdp_log_limit *l, uint64_t now_usec, uint64_t *ret_suppressed);
