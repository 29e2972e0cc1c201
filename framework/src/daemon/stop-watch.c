/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The stop's watchdog (see stop-watch.h). The lock guards every field but thread and timeout_ms. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <kdp/log.h>

#include "stop-watch.h"

struct kdp_stop_watch {
        pthread_t thread;
        uint64_t timeout_ms;
        pthread_mutex_t lock;
        pthread_cond_t cond;            /* on CLOCK_MONOTONIC: a step began, or the stop is over */
        const char *step;               /* NULL before the first step */
        char backend[64];               /* copied: the stop frees the backend's name */
        struct timespec deadline;
        bool over;
};

static struct timespec deadline_after(uint64_t ms) {
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        t.tv_sec += (time_t) (ms / 1000);
        t.tv_nsec += (long) (ms % 1000) * 1000000L;
        if (t.tv_nsec >= 1000000000L) {
                t.tv_sec++;
                t.tv_nsec -= 1000000000L;
        }
        return t;
}

static void *watch_main(void *userdata) {
        kdp_stop_watch *w = userdata;

        pthread_mutex_lock(&w->lock);
        while (!w->over) {
                const char *step = w->step;
                struct timespec deadline = w->deadline;

                if (!step) {
                        pthread_cond_wait(&w->cond, &w->lock);
                        continue;
                }
                if (pthread_cond_timedwait(&w->cond, &w->lock, &deadline) == ETIMEDOUT && !w->over &&
                    w->step == step && w->deadline.tv_sec == deadline.tv_sec &&
                    w->deadline.tv_nsec == deadline.tv_nsec) {
                        kdp_log_error(-ETIMEDOUT, "Abandoned the stop: a step outlasted the stop timeout",
                                      KDP_F_STR("step", step), KDP_F_STR("backend", w->backend),
                                      KDP_F_INT("timeoutMs", w->timeout_ms));
                        _exit(1);
                }
        }
        pthread_mutex_unlock(&w->lock);
        return NULL;
}

int kdp_stop_watch_new(uint64_t timeout_ms, kdp_stop_watch **ret) {
        kdp_stop_watch *w = calloc(1, sizeof(*w));
        pthread_condattr_t attr;
        int r;

        if (!w)
                return -ENOMEM;
        w->timeout_ms = timeout_ms;
        pthread_mutex_init(&w->lock, NULL);
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&w->cond, &attr);
        pthread_condattr_destroy(&attr);
        r = -pthread_create(&w->thread, NULL, watch_main, w);
        if (r < 0) {
                pthread_cond_destroy(&w->cond);
                pthread_mutex_destroy(&w->lock);
                free(w);
                return r;
        }
        *ret = w;
        return 0;
}

void kdp_stop_watch_step(kdp_stop_watch *w, const char *step, const char *backend) {
        if (!w)
                return;
        pthread_mutex_lock(&w->lock);
        w->step = step;
        (void) snprintf(w->backend, sizeof(w->backend), "%s", backend ? backend : "");
        w->deadline = deadline_after(w->timeout_ms);
        pthread_cond_signal(&w->cond);
        pthread_mutex_unlock(&w->lock);
}

kdp_stop_watch *kdp_stop_watch_free(kdp_stop_watch *w) {
        if (!w)
                return NULL;
        pthread_mutex_lock(&w->lock);
        w->over = true;
        pthread_cond_signal(&w->cond);
        pthread_mutex_unlock(&w->lock);
        (void) pthread_join(w->thread, NULL);
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return NULL;
}
