/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The sockets kdpd binds: born with their mode and group; nothing after
 * bind() follows a name someone swapped for a symlink; a directory others may
 * write without a sticky bit refused; and asking whether a socket is served
 * never waits, even on a listener whose backlog is full.
 *
 * Linked with -Wl,--wrap=bind (tests/unit/CMakeLists.txt): when asked,
 * __wrap_bind moves the socket it just bound away and leaves in its place a
 * symlink to a file of ours, as whoever could write that directory would.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <kdp/cleanup.h>

#include "unix-socket.h"

#include "kdp-test.h"

int __real_bind(int fd, const struct sockaddr *sa, socklen_t len);
int __wrap_bind(int fd, const struct sockaddr *sa, socklen_t len);

static const char *symlink_after_bind;  /* the file the planted symlink points at, or NULL */

int __wrap_bind(int fd, const struct sockaddr *sa, socklen_t len) {
        const struct sockaddr_un *un = (const struct sockaddr_un *) sa;
        char moved[sizeof(un->sun_path) + 8];
        int r = __real_bind(fd, sa, len);

        if (r == 0 && symlink_after_bind && sa->sa_family == AF_UNIX) {
                snprintf(moved, sizeof(moved), "%s.moved", un->sun_path);
                ck_assert_int_eq(rename(un->sun_path, moved), 0);
                ck_assert_int_eq(symlink(symlink_after_bind, un->sun_path), 0);
                ck_assert_int_eq(unlink(moved), 0);
        }
        return r;
}

/* A fresh directory of mode `mode`, malloc()ed. */
static char *make_dir(mode_t mode) {
        char *dir = strdup("/tmp/kdp-unix-socket.XXXXXX");

        ck_assert_ptr_nonnull(dir);
        ck_assert_ptr_nonnull(mkdtemp(dir));
        ck_assert_int_eq(chmod(dir, mode), 0);
        return dir;
}

static char *join(const char *dir, const char *name) {
        char *p = NULL;

        ck_assert_int_ge(asprintf(&p, "%s/%s", dir, name), 0);
        return p;
}

/* A group other than ours that we may give a file: any as root, else one we are in; (gid_t) -1 if none. */
static gid_t other_group(void) {
        gid_t groups[64];
        int n;

        if (geteuid() == 0)
                return 4242;
        n = getgroups(KDP_ELEMENTSOF(groups), groups);
        for (int i = 0; i < n; i++)
                if (groups[i] != getegid())
                        return groups[i];
        return (gid_t) -1;
}

/* The directory holds `n` entries besides . and .. */
static void expect_entries(const char *dir, unsigned n) {
        _cleanup_closedir_ DIR *d = opendir(dir);
        struct dirent *e;
        unsigned seen = 0;

        ck_assert_ptr_nonnull(d);
        while ((e = readdir(d)))
                seen += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
        ck_assert_uint_eq(seen, n);
}

/* `path` is a socket of ours with exactly `mode` and `gid` */
static void expect_socket(const char *path, mode_t mode, gid_t gid) {
        struct stat st;

        ck_assert_int_eq(lstat(path, &st), 0);
        ck_assert(S_ISSOCK(st.st_mode));
        ck_assert_uint_eq(st.st_mode & 07777, mode);
        ck_assert_uint_eq(st.st_uid, geteuid());
        ck_assert_uint_eq(st.st_gid, gid);
}

START_TEST(test_unix_socket_born_0600_and_0660_of_the_group) {
        _cleanup_(kdp_test_rm_rfp) char *dir = make_dir(0755);
        _cleanup_free_ char *path = join(dir, "a.sock"), *grouped = join(dir, "b.sock");
        _cleanup_close_ int fd = -1, fd2 = -1;
        gid_t gid = other_group();

        umask(0);                       /* whatever the umask */
        ck_assert_int_eq(kdp_unix_socket_listen(path, (gid_t) -1, 0600, &fd), 0);
        expect_socket(path, 0600, getegid());
        ck_assert_uint_eq(umask(022), 0);       /* given back */
        if (gid == (gid_t) -1)
                return;                 /* no group to give: the rest needs one */
        ck_assert_int_eq(kdp_unix_socket_listen(grouped, gid, 0660, &fd2), 0);
        expect_socket(grouped, 0660, gid);
        expect_entries(dir, 2);         /* the private directory is gone */
        ck_assert_int_eq(kdp_unix_socket_served(grouped), 1);
}
END_TEST

START_TEST(test_unix_socket_symlink_planted_after_bind_is_never_followed) {
        _cleanup_(kdp_test_rm_rfp) char *dir = make_dir(0755);
        _cleanup_free_ char *path = join(dir, "a.sock"), *victim = join(dir, "victim");
        _cleanup_close_ int fd = -1, victim_fd = -1;
        gid_t gid = other_group();
        struct stat st;

        victim_fd = open(victim, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        ck_assert_int_ge(victim_fd, 0);
        ck_assert_int_eq(fchmod(victim_fd, 0644), 0);
        symlink_after_bind = victim;
        (void) kdp_unix_socket_listen(path, gid, 0660, &fd);
        symlink_after_bind = NULL;
        ck_assert_int_eq(stat(victim, &st), 0);
        ck_assert_uint_eq(st.st_mode & 07777, 0644);
        ck_assert_uint_eq(st.st_gid, getegid());
}
END_TEST

START_TEST(test_unix_socket_open_directory_without_sticky_bit_refused) {
        _cleanup_(kdp_test_rm_rfp) char *open_dir = make_dir(0777), *group_dir = make_dir(0775),
                                        *sticky_dir = make_dir(01777);
        _cleanup_free_ char *path = join(open_dir, "a.sock"), *group_path = join(group_dir, "a.sock"),
                            *sticky_path = join(sticky_dir, "a.sock"), *log = NULL, *want = NULL, *want2 = NULL;
        _cleanup_close_ int fd = -1;
        kdp_test_capture c;
        const char *p;

        kdp_test_capture_begin(&c);
        ck_assert_int_eq(kdp_unix_socket_listen(path, (gid_t) -1, 0600, &fd), -EPERM);
        ck_assert_int_eq(kdp_unix_socket_listen(group_path, (gid_t) -1, 0600, &fd), -EPERM);
        log = kdp_test_capture_end(&c);
        ck_assert_int_ge(asprintf(&want, "\"Refused socket directory: others may write it and it has no sticky bit\" "
                                  "dir=\"%s\" mode=\"0777\" err=\"Operation not permitted\"", open_dir), 0);
        ck_assert_int_ge(asprintf(&want2, "\"Refused socket directory: others may write it and it has no sticky bit\" "
                                  "dir=\"%s\" mode=\"0775\" err=\"Operation not permitted\"", group_dir), 0);
        p = log;
        kdp_test_expect_line(&p, 'E', "unix-socket.c", want);
        kdp_test_expect_line(&p, 'E', "unix-socket.c", want2);
        ck_assert_str_eq(p, "");
        expect_entries(open_dir, 0);
        ck_assert_int_eq(kdp_unix_socket_listen(sticky_path, (gid_t) -1, 0600, &fd), 0);
        ck_assert_int_eq(kdp_unix_socket_check_dir(sticky_dir), 0);
}
END_TEST

START_TEST(test_unix_socket_full_backlog_is_served_without_waiting) {
        _cleanup_(kdp_test_rm_rfp) char *dir = make_dir(0755);
        _cleanup_free_ char *busy = join(dir, "busy.sock"), *dead = join(dir, "dead.sock"), *none = join(dir, "none");
        _cleanup_close_ int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), a = -1, b = -1, fd = -1,
                            unserved = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        /* listen(0) takes one connection unaccepted; the second fills it: the next connect would wait */
        strcpy(sa.sun_path, busy);
        ck_assert_int_eq(__real_bind(listener, (struct sockaddr *) &sa, sizeof(sa)), 0);
        ck_assert_int_eq(listen(listener, 0), 0);
        ck_assert_int_eq(kdp_unix_socket_connect(busy, &a), 0);
        ck_assert_int_eq(kdp_unix_socket_connect(busy, &b), -EAGAIN);
        ck_assert_int_eq(kdp_unix_socket_served(busy), 2);
        ck_assert_int_eq(kdp_unix_socket_listen(busy, (gid_t) -1, 0600, &fd), -EADDRINUSE);
        /* bound, never listening: stale, removed and replaced */
        strcpy(sa.sun_path, dead);
        ck_assert_int_eq(__real_bind(unserved, (struct sockaddr *) &sa, sizeof(sa)), 0);
        ck_assert_int_eq(kdp_unix_socket_served(dead), 0);
        ck_assert_int_eq(kdp_unix_socket_listen(dead, (gid_t) -1, 0600, &fd), 0);
        ck_assert_int_eq(kdp_unix_socket_served(dead), 1);
        ck_assert_int_eq(kdp_unix_socket_connect(none, &b), -ENOENT);
}
END_TEST

static Suite *unix_socket_suite(void) {
        Suite *s = suite_create("unix-socket");
        TCase *tc = tcase_create("listen");

        tcase_add_test(tc, test_unix_socket_born_0600_and_0660_of_the_group);
        tcase_add_test(tc, test_unix_socket_symlink_planted_after_bind_is_never_followed);
        tcase_add_test(tc, test_unix_socket_open_directory_without_sticky_bit_refused);
        tcase_add_test(tc, test_unix_socket_full_backlog_is_served_without_waiting);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return kdp_test_run(unix_socket_suite());
}
