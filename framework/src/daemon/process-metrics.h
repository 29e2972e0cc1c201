/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The standard process_* families of the Prometheus client libraries, for
 * kdpd itself: CPU time, memory, fds and start time, read from /proc/self
 * (and the boot time from /proc/stat) at each scrape. A file that cannot be
 * read leaves its families out.
 */
#pragma once

#include <stdio.h>

void kdp_process_metrics_write(FILE *f);
