/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libkdp internal: reading sysfs (and procfs) text files. Their st_size is
 * a page or 0, so files are read to EOF; the kernel's trailing newline goes.
 */
#pragma once

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stddef.h>

/* Bigger than any sysfs attribute (a page) kdp reads; larger files give -EFBIG. */
#define KDP_SYSFS_TEXT_MAX (64 * 1024)

/*
 * Reads `name` relative to `dirfd` (AT_FDCWD for a path) into *ret (free()),
 * without trailing newlines. -errno of open/read, -EFBIG, -ENOMEM.
 */
int kdp_sysfs_read_text_at(int dirfd, const char *name, char **ret);

/* One path component: non-empty, no '/', not "." or "..". */
bool kdp_sysfs_name_valid(const char *s);

/*
 * The last component of symlink `name`'s target (relative to `dirfd`) into
 * buf, even when the link dangles ("driver" → "nvidia"). -errno of readlinkat
 * (-ENOENT without the link, -EINVAL if it is no link), -EINVAL for an empty
 * last component, -ENAMETOOLONG when it does not fit `size`.
 */
int kdp_sysfs_link_base_at(int dirfd, const char *name, char *buf, size_t size);

/*
 * The device node of the device whose uevent file is `uevent` (relative to
 * `dirfd`): "<dev_root>/<DEVNAME>" into buf, or "" when the uevent has no
 * DEVNAME= or there is no uevent file. A dev root of "/" gives "/dri/card1",
 * not "//dri/card1". -ENAMETOOLONG when it does not fit `size`; other -errno
 * of reading the file.
 */
int kdp_sysfs_devnode_at(int dirfd, const char *uevent, const char *dev_root, char *buf, size_t size);

/*
 * qsort() comparator for arrays of structs whose first member is a char array
 * holding a sysfs name: version order, so card2 sorts before card10.
 */
int kdp_sysfs_compare_names(const void *a, const void *b);

/* Entries read from one sysfs directory at most. */
#define KDP_SYSFS_ENTRIES_MAX (1024 * 1024)

/* Fills *elem from directory entry `name`: 1 kept, 0 skipped, <0 error. */
typedef int (*kdp_sysfs_entry_fn)(const char *name, void *elem, void *userdata);

/*
 * Calls read_one for every entry of `dir` not starting with '.', into a
 * growing array of elem_size elements whose first member is the name, and
 * sorts the kept ones with kdp_sysfs_compare_names. *ret (free()) is NULL and
 * *ret_n 0 when none was kept. -E2BIG past KDP_SYSFS_ENTRIES_MAX, -ENOMEM,
 * -errno of readdir, or read_one's error.
 */
int kdp_sysfs_collect(DIR *dir, size_t elem_size, kdp_sysfs_entry_fn read_one, void *userdata, void **ret,
                      size_t *ret_n);
