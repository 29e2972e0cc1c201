/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The standard process_* families of the Prometheus client libraries, for
 * kdpd itself: CPU time, memory, fds and start time, read from /proc/self
 * at each scrape (the boot time from /proc/stat at the first). A file that
 * cannot be read leaves its families out. Any thread.
 */
#pragma once

#include <stdio.h>

void kdp_process_metrics_write(FILE *f);
