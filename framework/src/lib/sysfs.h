/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libkdp internal: reading sysfs (and procfs) text files. Their st_size is
 * a page or 0, so files are read to EOF; the kernel's trailing newline goes.
 */
#pragma once

#include <stdbool.h>

/* Bigger than any sysfs attribute (a page) kdp reads; larger files give -EFBIG. */
#define KDP_SYSFS_TEXT_MAX (64 * 1024)

/*
 * Reads `name` relative to `dirfd` (AT_FDCWD for a path) into *ret (free()),
 * without trailing newlines. -errno of open/read, -EFBIG, -ENOMEM.
 */
int kdp_sysfs_read_text_at(int dirfd, const char *name, char **ret);

/* One path component: non-empty, no '/', not "." or "..". */
bool kdp_sysfs_name_valid(const char *s);
