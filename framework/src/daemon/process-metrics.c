/* SPDX-License-Identifier: GPL-2.0-or-later */
/* process_* families from /proc/self (see process-metrics.h). */
#include <dirent.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <kdp/cleanup.h>

#include "exposition.h"
#include "process-metrics.h"

typedef struct proc_stat {
        unsigned long long utime, stime, starttime, vsize, rss;
} proc_stat;

/* Parses the fields after the command name, which may hold spaces and ')' itself. */
static bool read_stat(proc_stat *st) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/stat", "re");
        char line[1024], *p;

        if (!f || !fgets(line, sizeof(line), f) || !(p = strrchr(line, ')')))
                return false;
        /* proc(5): from field 3 (state) on; 14 utime, 15 stime, 22 starttime, 23 vsize, 24 rss */
        return sscanf(p + 2, "%*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu %llu %*s %*s %*s %*s %*s %*s %llu %llu %llu",
                      &st->utime, &st->stime, &st->starttime, &st->vsize, &st->rss) == 5;
}

static bool read_boot_time(unsigned long long *ret) {
        _cleanup_fclose_ FILE *f = fopen("/proc/stat", "re");
        char line[256];

        while (f && fgets(line, sizeof(line), f))
                if (sscanf(line, "btime %llu", ret) == 1)
                        return true;
        return false;
}

static bool has_boot_time;
static unsigned long long boot_time;

static void read_boot_time_once(void) {
        has_boot_time = read_boot_time(&boot_time);
}

static uint64_t count_fds(void) {
        _cleanup_closedir_ DIR *d = opendir("/proc/self/fd");
        uint64_t n = 0;
        struct dirent *e;

        while (d && (e = readdir(d)))
                n += e->d_name[0] != '.';
        return n;
}

static void write_one(FILE *f, const char *name, const char *type, const char *help, double v) {
        kdp_exposition_family(f, name, type, help);
        kdp_exposition_double(f, name, NULL, v);
}

void kdp_process_metrics_write(FILE *f) {
        static pthread_once_t once = PTHREAD_ONCE_INIT;
        double hz = (double) sysconf(_SC_CLK_TCK), page = (double) sysconf(_SC_PAGESIZE);
        struct rlimit rl;
        proc_stat st;

        (void) pthread_once(&once, read_boot_time_once);      /* /proc/stat is long on a large host */

        if (read_stat(&st)) {
                write_one(f, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.",
                          (double) (st.utime + st.stime) / hz);
                write_one(f, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
                          (double) st.rss * page);
                write_one(f, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.",
                          (double) st.vsize);
                if (has_boot_time)
                        write_one(f, "process_start_time_seconds", "gauge",
                                  "Start time of the process since unix epoch in seconds.",
                                  (double) boot_time + (double) st.starttime / hz);
        }
        write_one(f, "process_open_fds", "gauge", "Number of open file descriptors.", (double) count_fds());
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
                write_one(f, "process_max_fds", "gauge", "Maximum number of open file descriptors.",
                          rl.rlim_cur == RLIM_INFINITY ? -1 : (double) rl.rlim_cur);
}
