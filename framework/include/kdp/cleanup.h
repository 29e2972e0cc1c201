/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Scope-bound cleanup for kdp and its backends (GNU C `cleanup` attribute).
 *
 *   _cleanup_free_ char *p = NULL;      freed at end of scope
 *   return KDP_TAKE_PTR(p);             hands ownership out, p becomes NULL
 *
 * KDP_DEFINE_CLEANUP_FUNC(type, fn) defines `fnp(type **)` for _cleanup_(fnp).
 */
#pragma once

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _cleanup_free_ _cleanup_(kdp_freep)
#define _cleanup_close_ _cleanup_(kdp_closep)
#define _cleanup_fclose_ _cleanup_(kdp_fclosep)
#define _cleanup_closedir_ _cleanup_(kdp_closedirp)

static inline void kdp_freep(void *p) {
        free(*(void **) p);
}

static inline void kdp_closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                (void) close(*fd);
                errno = saved;
        }
}

static inline void kdp_fclosep(FILE **f) {
        if (*f)
                (void) fclose(*f);
}

static inline void kdp_closedirp(DIR **d) {
        if (*d)
                (void) closedir(*d);
}

/* Returns the pointer and leaves NULL behind. */
#define KDP_TAKE_PTR(p)                            \
        ({                                         \
                __typeof__(p) *_pp = &(p);         \
                __typeof__(p) _v = *_pp;           \
                *_pp = NULL;                       \
                _v;                                \
        })

/* Returns the fd and leaves -1 behind. */
#define KDP_TAKE_FD(fd)                            \
        ({                                         \
                int *_pfd = &(fd);                 \
                int _v = *_pfd;                    \
                *_pfd = -1;                        \
                _v;                                \
        })

#define KDP_DEFINE_CLEANUP_FUNC(type, fn)          \
        static inline void fn##p(type **p) {       \
                if (*p)                            \
                        (void) fn(*p);             \
        }

#define KDP_ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))
