/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Programming one port from bitstream_dir, and the cards being programmed (see fpga.h).
 *
 *   pre_start (locked)   fpga_reprogram_job_init(): port id, paths, bitstream file exists
 *                        fpga_reprogram_busy_add(card): scans show the card's ports "programming"
 *   unlocked             fpga_reprogram_job_run() -> fpga_program_run(): PR, afu_id read back
 *   locked again         fpga_reprogram_busy_remove(card)
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kdp/backend.h>
#include <kdp/cleanup.h>

#include "fpga.h"
#include "program.h"

/* Sets *ret (when not NULL) to a formatted message; returns r. */
static int why(int r, char **ret, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int why(int r, char **ret, const char *fmt, ...) {
        va_list ap;

        if (!ret)
                return r;
        va_start(ap, fmt);
        if (vasprintf(ret, fmt, ap) < 0)
                *ret = NULL;
        va_end(ap);
        return r;
}

int fpga_reprogram_job_init(const kdp_backend_ctx *ctx, const char *bitstream_dir, const fpga_fme *fme,
                            const fpga_port *port, const char *want, fpga_reprogram_job *ret, char **ret_reason) {
        _cleanup_(fpga_reprogram_job_done) fpga_reprogram_job j = { 0 };
        _cleanup_free_ char *id = NULL, *rel = NULL;
        char *end = NULL;
        unsigned long n;
        int r;

        snprintf(j.card, sizeof(j.card), "%s", fme->pci_address);
        snprintf(j.port, sizeof(j.port), "%s", port->name);
        snprintf(j.want, sizeof(j.want), "%s", want);
        snprintf(j.have, sizeof(j.have), "%s", port->afu_id);
        if (fme->layout != FPGA_LAYOUT_DFL || !fme->devnode[0] || !fme->interface_file[0])
                return why(-EOPNOTSUPP, ret_reason,
                           "card %s port %s carries AFU %s, not AFU %s, and cannot be programmed: %s", j.card,
                           j.port, j.have, j.want,
                           fme->layout != FPGA_LAYOUT_DFL ? "not a DFL card" :
                           !fme->devnode[0] ? "its FME has no device node" : "its PR region has no interface ID");
        r = fpga_program_gbs_path(bitstream_dir, fme->interface_id, want, &j.gbs_path);
        if (r < 0)
                return why(r, ret_reason, "card %s port %s: no bitstream path for interface %s and AFU %s", j.card,
                           j.port, fme->interface_id, want);
        if (access(j.gbs_path, F_OK) < 0)
                return why(-errno, ret_reason, "card %s port %s carries AFU %s, not AFU %s, and there is no "
                                               "bitstream %s", j.card, j.port, j.have, j.want, j.gbs_path);
        r = fpga_discover_read_attr(ctx, port->devpath, "id", &id);
        if (r < 0)
                return why(r, ret_reason, "card %s port %s: cannot read its id: %s", j.card, j.port, strerror(-r));
        errno = 0;
        n = strtoul(id, &end, 10);
        if (errno || end == id || *end || n > UINT32_MAX)
                return why(-EINVAL, ret_reason, "card %s port %s: its id '%s' is not a number", j.card, j.port, id);
        j.port_id = (uint32_t) n;
        j.fme_node = strdup(fme->devnode);
        if (!j.fme_node || asprintf(&rel, "devices/%s", fme->interface_file) < 0)
                return -ENOMEM;
        r = kdp_backend_path(ctx, KDP_PATH_SYSFS, rel, &j.compat_path);
        free(rel);
        rel = NULL;
        if (r >= 0 && asprintf(&rel, "devices/%s/afu_id", port->devpath) < 0)
                r = -ENOMEM;
        if (r >= 0)
                r = kdp_backend_path(ctx, KDP_PATH_SYSFS, rel, &j.afu_path);
        if (r < 0)
                return r;
        *ret = j;
        j = (fpga_reprogram_job){ 0 };
        return 0;
}

int fpga_reprogram_job_run(void *userdata) {
        fpga_reprogram_job *j = userdata;
        fpga_program_card card = {
                .name = j->card,
                .fme_node = j->fme_node,
                .compat_id_path = j->compat_path,
                .afu_id_path = j->afu_path,
                .port_id = j->port_id,
        };

        free(j->reason);
        j->reason = NULL;
        return fpga_program_run(&card, j->gbs_path, j->want, &j->reason);
}

void fpga_reprogram_job_done(fpga_reprogram_job *j) {
        free(j->fme_node);
        free(j->compat_path);
        free(j->afu_path);
        free(j->gbs_path);
        free(j->reason);
        *j = (fpga_reprogram_job){ 0 };
}

bool fpga_reprogram_busy_has(const fpga_reprogram_busy *b, const char *card) {
        for (size_t i = 0; card && i < b->n; i++)
                if (strcmp(b->cards[i], card) == 0)
                        return true;
        return false;
}

int fpga_reprogram_busy_add(fpga_reprogram_busy *b, const char *card) {
        void *n;

        if (fpga_reprogram_busy_has(b, card))
                return -EBUSY;
        n = realloc(b->cards, (b->n + 1) * sizeof(*b->cards));
        if (!n)
                return -ENOMEM;
        b->cards = n;
        snprintf(b->cards[b->n++], KDP_PCI_ADDRESS_MAX, "%s", card);
        return 0;
}

void fpga_reprogram_busy_remove(fpga_reprogram_busy *b, const char *card) {
        for (size_t i = 0; i < b->n; i++)
                if (strcmp(b->cards[i], card) == 0) {
                        memmove(&b->cards[i], &b->cards[i + 1], (b->n - i - 1) * sizeof(*b->cards));
                        b->n--;
                        return;
                }
}

void fpga_reprogram_busy_done(fpga_reprogram_busy *b) {
        free(b->cards);
        *b = (fpga_reprogram_busy){ 0 };
}

/* ---- jobs on threads of their own ---- */

struct fpga_reprogram_thread {
        fpga_reprogram_runner *runner;
        pthread_t thread;
        fpga_reprogram_job job;
        int result;
        bool done;                      /* under runner->lock */
        fpga_reprogram_thread *next;
};

static void *thread_main(void *userdata) {
        fpga_reprogram_thread *t = userdata;
        int r = fpga_reprogram_job_run(&t->job);

        pthread_mutex_lock(&t->runner->lock);
        t->result = r;
        t->done = true;
        pthread_mutex_unlock(&t->runner->lock);
        return NULL;
}

int fpga_reprogram_runner_init(fpga_reprogram_runner *r) {
        *r = (fpga_reprogram_runner){ 0 };
        return -pthread_mutex_init(&r->lock, NULL);
}

int fpga_reprogram_start(fpga_reprogram_runner *r, fpga_reprogram_job *job) {
        fpga_reprogram_thread *t = calloc(1, sizeof(*t));
        int e;

        if (!t)
                return -ENOMEM;
        t->runner = r;
        t->job = *job;
        pthread_mutex_lock(&r->lock);
        e = pthread_create(&t->thread, NULL, thread_main, t);
        if (e == 0) {
                t->next = r->threads;
                r->threads = t;
                r->n_running++;
        }
        pthread_mutex_unlock(&r->lock);
        if (e != 0) {
                free(t);
                return -e;
        }
        *job = (fpga_reprogram_job){ 0 };       /* the thread's now */
        return 0;
}

int fpga_reprogram_reap(fpga_reprogram_runner *r, fpga_reprogram_job *ret_job, int *ret_result) {
        fpga_reprogram_thread *t = NULL;

        pthread_mutex_lock(&r->lock);
        for (fpga_reprogram_thread **p = &r->threads; *p; p = &(*p)->next)
                if ((*p)->done) {
                        t = *p;
                        *p = t->next;
                        r->n_running--;
                        break;
                }
        pthread_mutex_unlock(&r->lock);
        if (!t)
                return 0;
        (void) pthread_join(t->thread, NULL);
        *ret_job = t->job;
        *ret_result = t->result;
        free(t);
        return 1;
}

size_t fpga_reprogram_running(fpga_reprogram_runner *r) {
        size_t n;

        pthread_mutex_lock(&r->lock);
        n = r->n_running;
        pthread_mutex_unlock(&r->lock);
        return n;
}

void fpga_reprogram_runner_done(fpga_reprogram_runner *r) {
        fpga_reprogram_thread *t = r->threads;

        while (t) {
                fpga_reprogram_thread *next = t->next;

                (void) pthread_join(t->thread, NULL);
                fpga_reprogram_job_done(&t->job);
                free(t);
                t = next;
        }
        r->threads = NULL;
        (void) pthread_mutex_destroy(&r->lock);
}
