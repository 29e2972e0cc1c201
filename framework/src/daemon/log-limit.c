/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Rate limit of a kind of log line (see log-limit.h). A window starts at the
 * first line after the previous one ended; a clock that goes back starts a
 * new window too.
 */
#include <assert.h>

#include "log-limit.h"

void kdp_log_limit_init(kdp_log_limit *l, unsigned burst, uint64_t window_usec) {
        assert(l);
        *l = (kdp_log_limit) { .window_usec = window_usec, .burst = burst };
        pthread_mutex_init(&l->lock, NULL);
}

void kdp_log_limit_done(kdp_log_limit *l) {
        if (l)
                pthread_mutex_destroy(&l->lock);
}

bool kdp_log_limit_allow(kdp_log_limit *l, uint64_t now_usec, uint64_t *ret_suppressed) {
        bool allow;

        assert(l && ret_suppressed);
        pthread_mutex_lock(&l->lock);
        if (!l->started || now_usec < l->window_start || now_usec - l->window_start >= l->window_usec) {
                l->started = true;
                l->window_start = now_usec;
                l->n_logged = 0;
        }
        allow = l->n_logged < l->burst;
        if (allow) {
                l->n_logged++;
                *ret_suppressed = l->n_suppressed;
                l->n_suppressed = 0;
        } else
                l->n_suppressed++;
        pthread_mutex_unlock(&l->lock);
        return allow;
}
