/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * epoll event loop (see loop.h). Ownership: the loop owns every source; a
 * removed source is unlinked from epoll at once and freed after the dispatch
 * round, so an epoll event already fetched for it is skipped, never used after
 * free. Posted functions sit in a mutex-guarded FIFO drained on an eventfd.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>

#include "loop.h"

typedef enum source_kind { SOURCE_FD, SOURCE_TIMER, SOURCE_WAKE } source_kind;

struct kdp_loop_source {
        kdp_loop *loop;
        source_kind kind;
        int fd;
        bool dead;
        kdp_loop_fd_fn fd_fn;
        kdp_loop_fn timer_fn;
        void *userdata;
        kdp_loop_source *next_dead;
};

typedef struct posted {
        kdp_loop_fn fn;
        void *userdata;
        struct posted *next;
} posted;

struct kdp_loop {
        int epfd;
        kdp_loop_source *wake;
        kdp_loop_source *dead;
        pthread_mutex_t lock;           /* guards posts, quit */
        posted *head, *tail;
        bool quit;
        int code;
};

static int loop_watch(kdp_loop *loop, kdp_loop_source *s, uint32_t events) {
        struct epoll_event ev = { .events = events, .data.ptr = s };

        if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, s->fd, &ev) < 0)
                return -errno;
        return 0;
}

static int source_new(kdp_loop *loop, source_kind kind, int fd, uint32_t events, kdp_loop_source **ret) {
        kdp_loop_source *s;
        int r;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        *s = (kdp_loop_source){ .loop = loop, .kind = kind, .fd = fd };
        r = loop_watch(loop, s, events);
        if (r < 0) {
                free(s);
                return r;
        }
        *ret = s;
        return 0;
}

static void wake_fd(kdp_loop *loop) {
        uint64_t one = 1;

        (void) !write(loop->wake->fd, &one, sizeof(one));
}

int kdp_loop_new(kdp_loop **ret) {
        kdp_loop *loop;
        int r, fd;

        loop = calloc(1, sizeof(*loop));
        if (!loop)
                return -ENOMEM;
        pthread_mutex_init(&loop->lock, NULL);
        loop->epfd = epoll_create1(EPOLL_CLOEXEC);
        if (loop->epfd < 0) {
                r = -errno;
                kdp_loop_free(loop);
                return r;
        }
        fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (fd < 0) {
                r = -errno;
                kdp_loop_free(loop);
                return r;
        }
        r = source_new(loop, SOURCE_WAKE, fd, EPOLLIN, &loop->wake);
        if (r < 0) {
                (void) close(fd);
                kdp_loop_free(loop);
                return r;
        }
        *ret = loop;
        return 0;
}

static void free_dead(kdp_loop *loop) {
        while (loop->dead) {
                kdp_loop_source *s = loop->dead;

                loop->dead = s->next_dead;
                free(s);
        }
}

kdp_loop *kdp_loop_free(kdp_loop *loop) {
        if (!loop)
                return NULL;
        /* posted functions still release what they carry */
        while (loop->head) {
                posted *p = loop->head;

                loop->head = p->next;
                p->fn(loop, p->userdata);
                free(p);
        }
        loop->tail = NULL;
        if (loop->wake) {
                (void) close(loop->wake->fd);
                free(loop->wake);
        }
        free_dead(loop);
        if (loop->epfd >= 0)
                (void) close(loop->epfd);
        pthread_mutex_destroy(&loop->lock);
        free(loop);
        return NULL;
}

int kdp_loop_add_fd(kdp_loop *loop, int fd, uint32_t events, kdp_loop_fd_fn fn, void *userdata,
                    kdp_loop_source **ret) {
        kdp_loop_source *s;
        int r;

        r = source_new(loop, SOURCE_FD, fd, events, &s);
        if (r < 0)
                return r;
        s->fd_fn = fn;
        s->userdata = userdata;
        if (ret)
                *ret = s;
        return 0;
}

int kdp_loop_add_timer(kdp_loop *loop, kdp_loop_fn fn, void *userdata, kdp_loop_source **ret) {
        kdp_loop_source *s;
        int fd, r;

        fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (fd < 0)
                return -errno;
        r = source_new(loop, SOURCE_TIMER, fd, EPOLLIN, &s);
        if (r < 0) {
                (void) close(fd);
                return r;
        }
        s->timer_fn = fn;
        s->userdata = userdata;
        *ret = s;
        return 0;
}

static struct timespec ms_to_ts(uint64_t ms) {
        return (struct timespec){ .tv_sec = ms / 1000, .tv_nsec = (long) (ms % 1000) * 1000000L };
}

int kdp_loop_timer_arm(kdp_loop_source *timer, uint64_t delay_ms, uint64_t interval_ms) {
        struct itimerspec its = { .it_value = ms_to_ts(delay_ms), .it_interval = ms_to_ts(interval_ms) };

        if (!timer || timer->kind != SOURCE_TIMER)
                return -EINVAL;
        if (timer->dead)
                return -ESTALE;         /* removed: its fd is closed and may be reused */
        if (delay_ms == 0)
                its.it_value.tv_nsec = 1;       /* 0 would disarm */
        if (timerfd_settime(timer->fd, 0, &its, NULL) < 0)
                return -errno;
        return 0;
}

int kdp_loop_timer_disarm(kdp_loop_source *timer) {
        struct itimerspec its = { 0 };

        if (!timer || timer->kind != SOURCE_TIMER)
                return -EINVAL;
        if (timer->dead)
                return -ESTALE;
        if (timerfd_settime(timer->fd, 0, &its, NULL) < 0)
                return -errno;
        return 0;
}

void kdp_loop_remove(kdp_loop_source *s) {
        if (!s || s->dead)
                return;
        (void) epoll_ctl(s->loop->epfd, EPOLL_CTL_DEL, s->fd, NULL);
        if (s->kind == SOURCE_TIMER)
                (void) close(s->fd);
        s->dead = true;
        s->next_dead = s->loop->dead;
        s->loop->dead = s;
}

int kdp_loop_post(kdp_loop *loop, kdp_loop_fn fn, void *userdata) {
        posted *p;

        p = malloc(sizeof(*p));
        if (!p)
                return -ENOMEM;
        *p = (posted){ .fn = fn, .userdata = userdata };
        pthread_mutex_lock(&loop->lock);
        if (loop->tail)
                loop->tail->next = p;
        else
                loop->head = p;
        loop->tail = p;
        pthread_mutex_unlock(&loop->lock);
        wake_fd(loop);
        return 0;
}

void kdp_loop_quit(kdp_loop *loop, int code) {
        pthread_mutex_lock(&loop->lock);
        if (!loop->quit) {
                loop->quit = true;
                loop->code = code;
        }
        pthread_mutex_unlock(&loop->lock);
        wake_fd(loop);
}

static void run_posted(kdp_loop *loop) {
        uint64_t n;
        posted *list;

        (void) !read(loop->wake->fd, &n, sizeof(n));
        pthread_mutex_lock(&loop->lock);
        list = loop->head;
        loop->head = loop->tail = NULL;
        pthread_mutex_unlock(&loop->lock);
        while (list) {
                posted *p = list;

                list = p->next;
                p->fn(loop, p->userdata);
                free(p);
        }
}

static void dispatch(kdp_loop *loop, kdp_loop_source *s, uint32_t events) {
        uint64_t expirations;

        if (s->dead)
                return;
        switch (s->kind) {
        case SOURCE_WAKE:
                run_posted(loop);
                break;
        case SOURCE_TIMER:
                if (read(s->fd, &expirations, sizeof(expirations)) != sizeof(expirations))
                        break;          /* re-armed or disarmed meanwhile */
                s->timer_fn(loop, s->userdata);
                break;
        case SOURCE_FD:
                s->fd_fn(loop, s->fd, events, s->userdata);
                break;
        }
}

static bool loop_should_quit(kdp_loop *loop, int *ret_code) {
        bool q;

        pthread_mutex_lock(&loop->lock);
        q = loop->quit;
        *ret_code = loop->code;
        pthread_mutex_unlock(&loop->lock);
        return q;
}

int kdp_loop_run(kdp_loop *loop) {
        struct epoll_event events[32];
        int code = 0;

        while (!loop_should_quit(loop, &code)) {
                int n = epoll_wait(loop->epfd, events, (int) KDP_ELEMENTSOF(events), -1);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                for (int i = 0; i < n; i++)
                        dispatch(loop, events[i].data.ptr, events[i].events);
                free_dead(loop);
        }
        return code;
}
