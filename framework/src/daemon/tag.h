/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Every tag kdpd puts on the gRPC completion queue is a kdp_tag embedded in
 * the object that waits for it; the CQ thread just calls on_done (docs/style.md §7).
 */
#pragma once

#include <stdbool.h>

typedef struct kdp_tag kdp_tag;
struct kdp_tag {
        void (*on_done)(kdp_tag *tag, bool ok);
};

#define KDP_CONTAINER_OF(ptr, type, member) ((type *) ((char *) (ptr) - offsetof(type, member)))
