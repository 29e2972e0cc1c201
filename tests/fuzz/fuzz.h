/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the libFuzzer targets of tests/fuzz share (header-only; each target is one .c defining
 * LLVMFuzzerTestOneInput and, when it needs set-up, LLVMFuzzerInitialize).
 *
 *   fuzz_dir()            a private directory for the files a parser reads (in memory), made at the first
 *                         call and removed (with what is in it) when the process exits, or by
 *                         the next target when a crash or hang ended it
 *   fuzz_write()          writes one input's bytes to a file below it
 *   fuzz_split()          cuts an input into the contents of several files at FUZZ_SEP
 *
 * Ownership: every path returned is the caller's (free()). A target must not keep state from
 * one input to the next beyond what its set-up made, or crashes would not reproduce alone.
 */
#pragma once

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <ftw.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* The byte that separates files in a multi-file input (ASCII's record separator). */
#define FUZZ_SEP '\x1e'

static char fuzz_dir_path[PATH_MAX];

static int fuzz_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st;
        (void) flag;
        (void) ftw;
        (void) remove(path);
        return 0;
}

static void fuzz_dir_remove(void) {
        if (fuzz_dir_path[0])
                (void) nftw(fuzz_dir_path, fuzz_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Removes the kdp-fuzz.<pid>.* directories in `tmp` of processes gone (a crash or hang ends one at once). */
static void fuzz_dir_sweep(const char *tmp) {
        DIR *d = opendir(tmp);
        struct dirent *e;

        if (!d)
                return;
        while ((e = readdir(d))) {
                char path[PATH_MAX];
                int pid;

                if (sscanf(e->d_name, "kdp-fuzz.%d.", &pid) != 1 || pid <= 0 || kill(pid, 0) == 0 || errno != ESRCH)
                        continue;
                snprintf(path, sizeof(path), "%s/%s", tmp, e->d_name);
                (void) nftw(path, fuzz_rm_one, 16, FTW_DEPTH | FTW_PHYS);
        }
        closedir(d);
}

/*
 * Below $TMPDIR, else /dev/shm, else /tmp: a file system in memory, where rewriting a file is
 * 8 times faster than on ext4 (which writes a file truncated and rewritten back at close).
 */
static inline const char *fuzz_dir(void) {
        if (!fuzz_dir_path[0]) {
                const char *tmp = getenv("TMPDIR");

                if (!tmp || !*tmp)
                        tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
                fuzz_dir_sweep(tmp);
                snprintf(fuzz_dir_path, sizeof(fuzz_dir_path), "%s/kdp-fuzz.%d.XXXXXX", tmp, (int) getpid());
                if (!mkdtemp(fuzz_dir_path))
                        abort();
                atexit(fuzz_dir_remove);
        }
        return fuzz_dir_path;
}

/* <fuzz_dir()>/<rel> (free()); aborts when out of memory. */
static inline char *fuzz_path(const char *rel) {
        char *p;

        if (asprintf(&p, "%s/%s", fuzz_dir(), rel) < 0)
                abort();
        return p;
}

/* Makes every directory of `path` below fuzz_dir() (the last component is a file). */
static inline void fuzz_mkdirs(const char *path) {
        char buf[PATH_MAX];

        snprintf(buf, sizeof(buf), "%s", path);
        for (char *p = buf + strlen(fuzz_dir()) + 1; (p = strchr(p, '/')); p++) {
                *p = '\0';
                (void) mkdir(buf, 0700);
                *p = '/';
        }
}

/* Replaces <fuzz_dir()>/<rel> by data[0..size); aborts when it cannot (the target would test nothing). */
static inline void fuzz_write(const char *rel, const uint8_t *data, size_t size) {
        char *path = fuzz_path(rel);
        int fd;

        /* the directories are made once: a mkdir() per component on every input halved the speed */
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0 && errno == ENOENT) {
                fuzz_mkdirs(path);
                fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        }
        if (fd < 0)
                abort();
        for (size_t off = 0; off < size;) {
                ssize_t n = write(fd, data + off, size - off);

                if (n <= 0)
                        abort();
                off += (size_t) n;
        }
        close(fd);
        free(path);
}

/* A symlink <fuzz_dir()>/<rel> → target (replaced). */
static inline void fuzz_symlink(const char *target, const char *rel) {
        char *path = fuzz_path(rel);

        fuzz_mkdirs(path);
        (void) unlink(path);
        if (symlink(target, path) < 0)
                abort();
        free(path);
}

typedef struct fuzz_part {
        const uint8_t *data;
        size_t size;
} fuzz_part;

/* Cuts data at FUZZ_SEP into parts[0..n): the parts past the last separator are empty. */
static inline void fuzz_split(const uint8_t *data, size_t size, fuzz_part *parts, size_t n) {
        for (size_t i = 0; i < n; i++) {
                const uint8_t *end = memchr(data, FUZZ_SEP, size);
                size_t len = end ? (size_t) (end - data) : size;

                parts[i] = (fuzz_part){ data, len };
                data += end ? len + 1 : len;
                size -= end ? len + 1 : len;
        }
}

/* data as a NUL-terminated string (free()): a NUL inside ends the text, as it would a file read as a string. */
static inline char *fuzz_text(const uint8_t *data, size_t size) {
        char *s = malloc(size + 1);

        if (!s)
                abort();
        memcpy(s, data, size);
        s[size] = '\0';
        return s;
}

/* The PCI address of the device of fuzz_pci_device() */
#define FUZZ_PCI_ADDRESS "0000:3d:00.0"
#define FUZZ_PCI_DEVICE "sys/devices/pci0000:3a/0000:3a:00.0/" FUZZ_PCI_ADDRESS

/*
 * A sysfs tree below fuzz_dir()/sys with one PCI device, FUZZ_PCI_ADDRESS behind a bridge, as the
 * kernel links it (bus/pci/devices/<address>, driver, iommu_group); the caller writes its
 * attribute files into FUZZ_PCI_DEVICE. Returns the sysfs root (free()).
 */
static inline char *fuzz_pci_tree(void) {
        fuzz_symlink("../../../devices/pci0000:3a/0000:3a:00.0/" FUZZ_PCI_ADDRESS,
                     "sys/bus/pci/devices/" FUZZ_PCI_ADDRESS);
        fuzz_symlink("../../../../bus/pci/drivers/nvidia", FUZZ_PCI_DEVICE "/driver");
        fuzz_symlink("../../../../kernel/iommu_groups/41", FUZZ_PCI_DEVICE "/iommu_group");
        fuzz_write("sys/bus/pci/drivers/nvidia/.keep", NULL, 0);
        fuzz_write("sys/kernel/iommu_groups/41/.keep", NULL, 0);
        return fuzz_path("sys");
}
