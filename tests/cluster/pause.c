/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The test cluster's sandbox process: holds a pod's namespaces, reaps the
 * children it inherits, and exits 0 on SIGINT or SIGTERM. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig) { (void)sig; _exit(0); }

static void on_child(int sig)
{
        (void)sig;
        while (waitpid(-1, NULL, WNOHANG) > 0)
                ;
}

int main(void)
{
        struct sigaction stop = { .sa_handler = on_stop };
        struct sigaction child = { .sa_handler = on_child, .sa_flags = SA_NOCLDSTOP | SA_RESTART };

        if (sigaction(SIGINT, &stop, NULL) || sigaction(SIGTERM, &stop, NULL) ||
            sigaction(SIGCHLD, &child, NULL))
                return 1;
        for (;;)
                pause();
}
