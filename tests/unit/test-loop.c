/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "loop.h"

#include "kdp-test.h"

typedef struct counter {
        int fired;
        int order[8];
        int n_order;
        kdp_loop_source *self;
} counter;

static void on_timer_quit(kdp_loop *loop, void *userdata) {
        counter *c = userdata;

        c->fired++;
        if (c->fired == 3)
                kdp_loop_quit(loop, 42);
}

START_TEST(test_loop_timer_repeats_until_quit) {
        _cleanup_(kdp_loop_freep) kdp_loop *loop = NULL;
        counter c = { 0 };
        kdp_loop_source *t;

        ck_assert_int_eq(kdp_loop_new(&loop), 0);
        ck_assert_int_eq(kdp_loop_add_timer(loop, on_timer_quit, &c, &t), 0);
        ck_assert_int_eq(kdp_loop_timer_arm(t, 0, 1), 0);
        ck_assert_int_eq(kdp_loop_run(loop), 42);
        ck_assert_int_eq(c.fired, 3);
        kdp_loop_remove(t);
}
END_TEST

static void record(kdp_loop *loop, void *userdata) {
        counter *c = userdata;

        c->order[c->n_order++] = c->fired++;
        if (c->n_order == 4)
                kdp_loop_quit(loop, 0);
}

typedef struct poster {
        kdp_loop *loop;
        counter *c;
} poster;

static void *post_from_thread(void *userdata) {
        poster *p = userdata;

        for (int i = 0; i < 4; i++)
                ck_assert_int_eq(kdp_loop_post(p->loop, record, p->c), 0);
        return NULL;
}

START_TEST(test_loop_post_runs_in_order_from_another_thread) {
        _cleanup_(kdp_loop_freep) kdp_loop *loop = NULL;
        counter c = { 0 };
        poster p;
        pthread_t th;

        ck_assert_int_eq(kdp_loop_new(&loop), 0);
        p = (poster){ loop, &c };
        ck_assert_int_eq(pthread_create(&th, NULL, post_from_thread, &p), 0);
        ck_assert_int_eq(kdp_loop_run(loop), 0);
        pthread_join(th, NULL);
        ck_assert_int_eq(c.n_order, 4);
        for (int i = 0; i < 4; i++)
                ck_assert_int_eq(c.order[i], i);
}
END_TEST

static void on_readable_remove_self(kdp_loop *loop, int fd, uint32_t events, void *userdata) {
        counter *c = userdata;
        char b;

        c->fired++;
        (void) !read(fd, &b, 1);
        kdp_loop_remove(c->self);               /* removal from inside the callback */
        kdp_loop_remove(c->self);               /* twice is harmless */
        kdp_loop_quit(loop, 7);
}

START_TEST(test_loop_fd_source_can_remove_itself) {
        _cleanup_(kdp_loop_freep) kdp_loop *loop = NULL;
        counter c = { 0 };
        int p[2];

        ck_assert_int_eq(pipe(p), 0);
        ck_assert_int_eq(kdp_loop_new(&loop), 0);
        ck_assert_int_eq(kdp_loop_add_fd(loop, p[0], EPOLLIN, on_readable_remove_self, &c, &c.self), 0);
        ck_assert_int_eq(write(p[1], "xx", 2), 2);
        ck_assert_int_eq(kdp_loop_run(loop), 7);
        ck_assert_int_eq(c.fired, 1);
        close(p[0]);
        close(p[1]);
}
END_TEST

static void never(kdp_loop *loop, void *userdata) {
        ck_abort_msg("a disarmed timer fired");
}

static void quit_soon(kdp_loop *loop, void *userdata) {
        kdp_loop_quit(loop, 0);
}

START_TEST(test_loop_disarmed_timer_does_not_fire) {
        _cleanup_(kdp_loop_freep) kdp_loop *loop = NULL;
        kdp_loop_source *t, *q;

        ck_assert_int_eq(kdp_loop_new(&loop), 0);
        ck_assert_int_eq(kdp_loop_add_timer(loop, never, NULL, &t), 0);
        ck_assert_int_eq(kdp_loop_add_timer(loop, quit_soon, NULL, &q), 0);
        ck_assert_int_eq(kdp_loop_timer_arm(t, 20, 0), 0);
        ck_assert_int_eq(kdp_loop_timer_disarm(t), 0);
        ck_assert_int_eq(kdp_loop_timer_arm(q, 60, 0), 0);
        ck_assert_int_eq(kdp_loop_run(loop), 0);
        ck_assert_int_eq(kdp_loop_timer_arm(NULL, 1, 0), -EINVAL);
        kdp_loop_remove(t);
        ck_assert_int_eq(kdp_loop_timer_arm(t, 1, 0), -ESTALE);    /* removed, not yet freed */
        ck_assert_int_eq(kdp_loop_timer_disarm(t), -ESTALE);
        kdp_loop_remove(q);
}
END_TEST

static void count_posted(kdp_loop *loop, void *userdata) {
        (*(int *) userdata)++;
}

START_TEST(test_loop_free_runs_pending_posts) {
        kdp_loop *loop = NULL;
        int ran = 0;

        ck_assert_int_eq(kdp_loop_new(&loop), 0);
        ck_assert_int_eq(kdp_loop_post(loop, count_posted, &ran), 0);
        ck_assert_int_eq(kdp_loop_post(loop, count_posted, &ran), 0);
        ck_assert_ptr_null(kdp_loop_free(loop));
        ck_assert_int_eq(ran, 2);
}
END_TEST

static Suite *loop_suite(void) {
        Suite *s = suite_create("loop");
        TCase *tc = tcase_create("loop");

        tcase_set_timeout(tc, 10);
        tcase_add_test(tc, test_loop_timer_repeats_until_quit);
        tcase_add_test(tc, test_loop_post_runs_in_order_from_another_thread);
        tcase_add_test(tc, test_loop_fd_source_can_remove_itself);
        tcase_add_test(tc, test_loop_disarmed_timer_does_not_fire);
        tcase_add_test(tc, test_loop_free_runs_pending_posts);
        suite_add_tcase(s, tc);

        return s;
}

int main(void) {
        return kdp_test_run(loop_suite());
}
