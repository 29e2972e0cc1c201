/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The not-served list files (see not-served.h).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kdp/atomic-file.h>
#include <kdp/cleanup.h>

#include "not-served.h"

#define SUFFIX ".not-served"
#define HEADER "# kdpd not-served v1 backend="

int kdp_not_served_path(const char *dir, const char *backend, char **ret) {
        return asprintf(ret, "%s/%s" SUFFIX, dir, backend) < 0 ? -ENOMEM : 0;
}

int kdp_not_served_write(const char *dir, const char *backend, const kdp_not_served_entry *v, size_t n) {
        _cleanup_free_ char *path = NULL, *tmp = NULL, *text = NULL;
        size_t size = 0;
        FILE *f;
        int r;

        r = kdp_atomic_file_mkdir_p(dir, 0755);
        if (r < 0)
                return r;
        r = kdp_not_served_path(dir, backend, &path);
        if (r < 0)
                return r;
        if (asprintf(&tmp, "%s/.%s" SUFFIX ".XXXXXX", dir, backend) < 0)
                return -ENOMEM;
        f = open_memstream(&text, &size);
        if (!f)
                return -ENOMEM;
        fprintf(f, HEADER "%s\n", backend);
        for (size_t i = 0; i < n; i++)
                fprintf(f, "%s\t%s\n", v[i].address, v[i].reason);
        if (fclose(f) != 0)
                return -ENOMEM;
        return kdp_atomic_file_write(path, tmp, text, size, 0644);
}

int kdp_not_served_remove(const char *dir, const char *backend) {
        _cleanup_free_ char *path = NULL;
        int r;

        r = kdp_not_served_path(dir, backend, &path);
        if (r < 0)
                return r;
        return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
}

/* Prints the entries of one list file; their number, or -errno. */
static int print_file(const char *path, FILE *out) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        _cleanup_free_ char *line = NULL;
        size_t size = 0;
        ssize_t len;
        int n = 0;

        if (!f)
                return -errno;
        while ((len = getline(&line, &size, f)) >= 0) {
                char *tab;

                if (len > 0 && line[len - 1] == '\n')
                        line[--len] = '\0';
                tab = strchr(line, '\t');
                if (line[0] == '#' || !tab)
                        continue;
                *tab = '\0';
                fprintf(out, "not served: %s %s\n", line, tab + 1);
                n++;
        }
        return ferror(f) ? -EIO : n;
}

static int is_list(const struct dirent *e) {
        size_t n = strlen(e->d_name);

        return e->d_name[0] != '.' && n > strlen(SUFFIX) && strcmp(e->d_name + n - strlen(SUFFIX), SUFFIX) == 0;
}

int kdp_not_served_print(const char *dir, const char *backend, FILE *out) {
        struct dirent **names = NULL;
        int n, r = 0, total = 0, files = 0;

        if (backend) {
                _cleanup_free_ char *path = NULL;

                r = kdp_not_served_path(dir, backend, &path);
                return r < 0 ? r : print_file(path, out);
        }
        n = scandir(dir, &names, is_list, alphasort);
        if (n < 0)
                return -errno;
        for (int i = 0; i < n; i++) {
                _cleanup_free_ char *path = NULL;

                if (r >= 0 && asprintf(&path, "%s/%s", dir, names[i]->d_name) < 0)
                        r = -ENOMEM;
                if (r >= 0) {
                        r = print_file(path, out);
                        if (r == -ENOENT)
                                r = 0;          /* removed since the listing: a kdpd that stopped */
                        else if (r >= 0)
                                files++;
                }
                if (r >= 0)
                        total += r;
                free(names[i]);
        }
        free(names);
        if (r < 0)
                return r;
        return files == 0 ? -ENOENT : total;
}
