/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A stop with a time limit (see stop-watch.h). The lock guards every field but timeout_ms, stop and userdata. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <kdp/log.h>

#include "stop-watch.h"

struct kdp_stop_watch {
        uint64_t timeout_ms;
        void (*stop)(void *userdata, kdp_stop_watch *w);
        void *userdata;
        pthread_mutex_t lock;
        pthread_cond_t cond;            /* on CLOCK_MONOTONIC: a step began, or the stop is over */
        const char *step;
        char backend[64];               /* copied: the stop frees the backend's name */
        struct timespec deadline;
        bool over, abandoned;
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

static void watch_free(kdp_stop_watch *w) {
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->lock);
        free(w);
}

static void *stopper_main(void *userdata) {
        kdp_stop_watch *w = userdata;
        bool abandoned;

        w->stop(w->userdata, w);
        pthread_mutex_lock(&w->lock);
        w->over = true;
        abandoned = w->abandoned;
        pthread_cond_signal(&w->cond);
        pthread_mutex_unlock(&w->lock);
        if (abandoned)
                watch_free(w);          /* the caller is gone */
        return NULL;
}

/* Under w->lock: waits until the stop is over (0) or its current step outlasted its deadline (-ETIMEDOUT). */
static int wait_stop(kdp_stop_watch *w) {
        while (!w->over) {
                struct timespec deadline = w->deadline;

                if (pthread_cond_timedwait(&w->cond, &w->lock, &deadline) == ETIMEDOUT && !w->over &&
                    w->deadline.tv_sec == deadline.tv_sec && w->deadline.tv_nsec == deadline.tv_nsec)
                        return -ETIMEDOUT;
        }
        return 0;
}

int kdp_stop_watch_run(uint64_t timeout_ms, void (*stop)(void *userdata, kdp_stop_watch *w), void *userdata) {
        kdp_stop_watch *w = calloc(1, sizeof(*w));
        pthread_condattr_t attr;
        pthread_t thread;
        int r;

        if (!w) {
                stop(userdata, NULL);   /* without its watch: unbounded */
                return 0;
        }
        *w = (kdp_stop_watch){ .timeout_ms = timeout_ms, .stop = stop, .userdata = userdata, .step = "sockets and CDI specs" };
        pthread_mutex_init(&w->lock, NULL);
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&w->cond, &attr);
        pthread_condattr_destroy(&attr);
        w->deadline = deadline_after(timeout_ms);
        if (pthread_create(&thread, NULL, stopper_main, w) != 0) {
                watch_free(w);
                stop(userdata, NULL);
                return 0;
        }
        pthread_mutex_lock(&w->lock);
        r = wait_stop(w);
        if (r < 0) {
                w->abandoned = true;
                kdp_log_error(r, "Abandoned the stop: a step outlasted the stop timeout", KDP_F_STR("step", w->step),
                              KDP_F_STR("backend", w->backend), KDP_F_INT("timeoutMs", w->timeout_ms));
        }
        pthread_mutex_unlock(&w->lock);
        if (r < 0) {
                (void) pthread_detach(thread);
                return r;
        }
        (void) pthread_join(thread, NULL);
        watch_free(w);
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
