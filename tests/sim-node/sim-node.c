/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sim-node: run a command on a simulated node and drive hot-plug events at it.
 *
 *   sim-node [-v] [-f] FIXTURE... [--script FILE] [--control FIFO] -- COMMAND [ARGS...]
 *
 * Run it through the wrapper tests/sim-node/sim-node, which puts umockdev's preload library
 * (libumockdev-preload.so.0) in LD_PRELOAD. This program then:
 *   1. creates a UMockdevTestbed (a directory whose path goes into UMOCKDEV_DIR),
 *   2. loads every FIXTURE (umockdev record files; records with N: lines get their /dev nodes),
 *   3. creates what the records point at outside /sys/devices, so that links resolve as on a real
 *      node: /sys/bus/pci/drivers/<drv>/ with its <bdf> back-links and bind/unbind/new_id/remove_id,
 *      /sys/kernel/iommu_groups/<n>/devices/<bdf>; and for a record with an N: line, the /dev
 *      side as udev makes it: stat() of the node and of its S: links gives the record's "dev"
 *      number (dev/.node/<name>, see "Plain files"), and S: links are relative ("../card1"),
 *   4. copies FIXTURE.files/ (FIXTURE without its ".umockdev", plus ".files"), if that directory
 *      exists, into the testbed root: see "Plain files" below,
 *   5. runs COMMAND as a child with UMOCKDEV_DIR and LD_PRELOAD in its environment, so the child
 *      (and everything it starts) sees the testbed as /sys, /dev and /run/udev,
 *   6. while the child runs, applies the commands of --script FILE and of lines written to
 *      --control FIFO (the two run independently; each runs its own lines in order),
 *   7. exits with the child's status (128+N if a signal N killed it).
 * SIGTERM, SIGINT and SIGHUP to sim-node go on to the child; a child told to stop (SIGTERM,
 * SIGINT) that has not exited 30 s later, or on a second such signal, gets SIGKILL. The child
 * gets SIGKILL when sim-node dies in any way (PR_SET_PDEATHSIG), so it never outlives its node.
 * Its own errors (bad arguments, a bad fixture, a command that names no device, ...) print
 * "sim-node: ..." on stderr, stop the child (SIGTERM) and exit 2. Without the preload it exits 77.
 *
 * Commands (one per line; blank lines and lines starting with '#' are skipped). ADDR is a PCI
 * address (0000:18:00.0 or 18:00.0), a syspath (/sys/devices/...), a devpath (/devices/...) or
 * SUBSYSTEM/NAME (net/ens1f0np0):
 *   unplug ADDR           the kernel's hot-remove order (pci_stop_and_remove_bus_device()): for
 *                         every bound PCI function of the subtree, children first and the last
 *                         function of a bus first, its class devices get "remove" (net/<if>...)
 *                         and it gets "unbind"; then every device of the subtree, in the same
 *                         order, gets "remove" and leaves the testbed. VFs are functions of their
 *                         own bus: unplugging a PF leaves them (a PF driver's remove() would
 *                         disable SR-IOV first; "sriov ADDR 0" before the unplug models that).
 *                         ADDR may be a class device alone ("unplug net/ens3f0v1"): it gets
 *                         "remove" and goes, its PCI function and driver stay, as when a CNI
 *                         moves a VF's netdev into a pod's network namespace
 *   replug ADDR           re-adds the subtree from the saved records in the kernel's rescan order:
 *                         "add" for every PCI function, with no driver yet, bus by bus (all
 *                         functions of a bus, then the buses behind its bridges); then, bus by bus
 *                         again, each function whose record has a driver gets its class devices
 *                         ("add") and "bind" with DRIVER=. VFs count as functions of their bus
 *                         (on a real node they come back only when sriov_numvfs is written), so
 *                         a replug of a PF brings back with it the VFs its record enables, which
 *                         are not below it: "add" of the PF, then of each VF, then the PF's
 *                         probe, then each VF's. A class device alone ("replug net/ens3f0v1")
 *                         comes back with "add" (the netdev returning from a pod)
 *   unbind ADDR           removes the device's class devices ("remove"), its driver link, DRIVER=
 *                         from its uevent file, sets enable to 0, sends "unbind"; leaving vfio-pci,
 *                         the last member of an iommu group takes its vfio group device along (see
 *                         "vfio groups" below) before "unbind"
 *   bind ADDR DRIVER      sets driver -> ../(one per devpath level)bus/pci/drivers/DRIVER, DRIVER=,
 *                         enable 1; re-adds the class devices if DRIVER is the record's driver; on
 *                         vfio-pci, adds the vfio group device of its iommu group if missing;
 *                         sends "bind"
 *   set ADDR ATTR VALUE   umockdev_testbed_set_attribute(); VALUE is the rest of the line with C
 *                         escapes (\n, \t, \\) expanded, and a "\n" is appended as the kernel
 *                         prints it; no uevent
 *   uevent ADDR ACTION [KEY=VALUE...]   one uevent; the KEY=VALUEs ride on this event only (they
 *                         sit in the uevent file while umockdev reads it, then go)
 *   wait [MS]             blocks until every listener has read every uevent sent so far (at most
 *                         MS, default 5000), see "Delivery" below
 *   wait-listeners [N [MS]]  blocks until at least N (default 1) uevent listeners (libudev
 *                         monitors, in any process) exist in the testbed; an error after MS
 *                         (default 10000). Put it before the first event of a script: the script
 *                         starts when the child does, before the child has opened its monitor
 *   sleep MS              pauses this command stream
 *   echo TEXT             prints TEXT on stdout, for tests to synchronise on
 *   kmsg RECORD           writes RECORD and a "\n" to the testbed's /dev/kmsg FIFO in one write();
 *                         RECORD is the rest of the line, verbatim (a kmsg record such as
 *                         "4,8820,91234570700,c;NVRM: Xid (PCI:0000:3a:00): 79, pid=0, GPU has
 *                         fallen off the bus."), except that the two characters \n become a
 *                         newline, for continuation lines (" SUBSYSTEM=pci"). The kernel prints a
 *                         backslash in a record as \x5c, so a real record never holds \n. A
 *                         timestamp field "@" (4,8812,@,c;...) becomes CLOCK_MONOTONIC in µs at
 *                         the write, the clock printk uses, for readers that check a record's age.
 *                         At most PIPE_BUF (4096) bytes with the newline. An error if the fixture
 *                         has no dev/kmsg, or if the FIFO is full (1 MiB unread). Each record is
 *                         also appended to $UMOCKDEV_DIR/kmsg.log (see the FIFO's limits below)
 *   rm PATH               removes PATH (below the testbed root: proc/driver/nvidia/gpus/<bdf>,
 *                         dev/nvidia2), a directory with everything in it, a link and not its
 *                         target; an error if PATH does not exist
 *   write PATH TEXT       creates or replaces the file PATH with TEXT (C escapes expanded as for
 *                         "set", "\n" appended), creating missing directories; the new file is
 *                         renamed over the old one, so a reader sees one text or the other
 *   mkdir PATH            mkdir -p
 *   sriov ADDR N          `echo N > sriov_numvfs` on the PF ADDR: its first N VFs appear (or, for
 *                         0, all of them go) with the kernel's uevents, see sim_sriov(). The VFs
 *                         are the records whose "L: physfn=../<ADDR>" names the PF, VF i being
 *                         the i-th in address order; those the PF's record does not enable (i >=
 *                         its sriov_numvfs) are held back at load and come only with this
 *                         command, and a replug brings back only those the record enables. As
 *                         in the kernel: the same N again does nothing, another N>0 while VFs are
 *                         enabled is an error (EBUSY), and so is a PF without a driver
 *   fpga-pr NODE MODE [MS] how the FME node NODE (dfl-fme.0, or /dev/dfl-fme.0) answers its
 *                         partial reconfigurations (see "DFL FPGA" below), MS after each call
 *                         came: good (default 100 ms), fail (EIO, default 100) or slow (good,
 *                         default 5000); calls still waiting take the new mode and MS too, so
 *                         "slow 3600000" holds a call until a later "good 0" lets it end
 *   drift ADDR AFU_ID     the port ADDR (platform/dfl-port.0, or its path) shows AFU_ID
 *                         (hex digits, no dashes) in afu_id, as after a reprogramming behind the
 *                         plugin's back: no uevent, as on a real node
 *   PATH is relative to the testbed root ("proc/...", "dev/...", "sys/..."); an absolute PATH, a
 *   ".." component or the root itself is refused like any bad command (exit 2; in a script,
 *   before the child starts). These three edit plain files only: no uevent, and sim-node's device
 *   table does not notice (use unplug/unbind/set for devices).
 *
 * vfio groups. A record /devices/virtual/vfio/<N> (SUBSYSTEM=vfio; noiommu-<N> in no-IOMMU mode),
 * with its N: vfio/<N> node, is the vfio group device of iommu group N (the group of the PCI
 * records whose L: iommu_group= ends in N). As vfio-pci does, it exists only while a present
 * member of the group is bound to vfio-pci: at load the others leave before the child starts, a
 * "bind ADDR vfio-pci" (also from "sriov" and "replug") adds it ("add") before "bind" if it is
 * missing, and an "unbind" of the group's last vfio-pci member removes it ("remove") before
 * "unbind". So /dev/vfio/<N> comes and goes with the binding, and a shared group keeps it while
 * any member stays on vfio-pci. The iommu group itself (/sys/kernel/iommu_groups/<N>) stays
 * with its members whatever their driver, also in no-IOMMU mode, where the kernel would drop it.
 *
 * DFL FPGA. Each record with an N: dfl-fme.<n> node gets umockdev's ioctl emulation
 * (UMockdevIoctlBase attached to the node; the handler runs on the testbed's worker thread). A
 * client that opens /dev/dfl-fme.<n> gets the kernel's answers (include/uapi/linux/fpga-dfl.h):
 * DFL_FPGA_GET_API_VERSION returns DFL_FPGA_API_VERSION (0), DFL_FPGA_CHECK_EXTENSION returns 0
 * (no extension), any other request fails with ENOTTY. DFL_FPGA_FME_PORT_PR reads its struct
 * dfl_fpga_fme_port_pr and the buffer from the client's memory: argsz below the struct's size or
 * flags other than 0 fail with EINVAL, a NULL pointer or buffer with EFAULT, an empty buffer or
 * one over 64 MiB with EINVAL. The emulated hardware takes the AFU ID from the image: its first
 * line is "SIM-BITSTREAM afu_id=<hex>"; an image without one fails with EIO, like an image the
 * hardware rejects. The call returns when the card's mode says (fpga-pr above; at load, the
 * record's property E: SIM_FPGA_PR=MODE [MS] sets it, a property nothing else reads): then, for
 * good and slow, the port of the same container region whose `id` is port_id shows the new
 * afu_id (no such port: EINVAL), and for fail nothing changes and the call fails with EIO.
 * With -v each call is logged, then its image's size and SHA-256 ("PR image of port N: B bytes,
 * sha256 X"). Calls of several cards run at once; the main loop completes them. A call on an FME whose
 * earlier call still runs fails at once with EBUSY, as the kernel's exclusive open and its
 * in-progress PR answer a second client (the earlier call goes on).
 *
 * Plain files (FIXTURE.files/). Every directory at the top of the tree (dev/, proc/, sys/) is
 * merged into the testbed root; files at the top (SOURCE.md) are notes and stay out. Regular
 * files, directories and relative links are copied; an absolute link, another file type, or a
 * name that the records (or another fixture) already made is an error (exit 2): the tree adds,
 * it never overwrites. Files named .gitkeep are skipped: they only make git keep an empty
 * directory. An empty regular file dev/kmsg is a placeholder: sim-node makes a FIFO of it and
 * keeps a read-write fd on it, so a reader never sees EOF (read() gives EAGAIN, or blocks, when
 * no record waits), and records written before the child opens it wait in the FIFO.
 * The preload redirects a path under /dev, /sys or /proc to the testbed when the testbed has it
 * (checked for /proc with umockdev 0.17.16: open, openat, fopen, stat, lstat, fstatat, statx,
 * access, readlink, realpath, opendir/readdir, chdir), so proc/driver/nvidia/gpus/<bdf>/information
 * is what the child reads as /proc/driver/nvidia/gpus/<bdf>/information, and the rest of /proc
 * stays the real one. A directory in the tree hides the real one of the same path: with a
 * proc/driver/ in the tree, /proc/driver lists only what the tree holds. Not redirected, for
 * /dev, /sys and /proc alike: glibc's scandir(), glob() and nftw() (they call the internal
 * opendir/open, which the preload cannot see), and a link whose target is missing (the preload
 * tests existence through the link). A file under dev/ is reported by stat() as a char device
 * (the preload's rule for emulated nodes); its number is read from the link dev/.node/<name,
 * with '/' as '_'> -> "MAJOR:MINOR", which a files tree carries for nodes that are not udev's
 * (dev/.node/nvidia0 -> 195:0), else it is 0:0.
 * /dev/kmsg as a FIFO differs from the kernel's in three ways a reader may notice: records that
 * wait together can come in one read() (split them at each "\n" that no " " follows); each
 * record goes to one reader only, where the kernel gives every opener the whole log (a second
 * reader can be fed $UMOCKDEV_DIR/kmsg.log, every record written so far); lseek()
 * fails with ESPIPE (no SEEK_END, no SEEK_DATA), and there is no EPIPE for lost records.
 *
 * Delivery (umockdev 0.17.16, checked): the preload turns a process's uevent netlink socket into
 * an AF_UNIX datagram socket bound to $UMOCKDEV_DIR/event<fd>, and umockdev_testbed_uevent() sends
 * to every such socket it finds there, from any process: a libudev monitor ("udev" or "kernel") in
 * the child receives what this process sends. The message carries ACTION, DEVPATH, SUBSYSTEM,
 * SEQNUM, DEVNAME/DEVTYPE and the device's uevent file, read at sending time (so DRIVER= is
 * whatever the uevent file says then). The send is synchronous: when a command returns, its events
 * are queued in the listeners' sockets. "wait" then polls those sockets' receive queues through
 * NETLINK_SOCK_DIAG until they are empty, i.e. until the listener has read them. Such a socket
 * holds only net.unix.max_dgram_qlen + 1 unread uevents (umockdev aborts on the next): sending
 * waits for a listener that fell that far behind (sim_make_room()), so a slow one loses nothing.
 * Two processes that both have a monitor on the same fd number share the name event<fd>: only the
 * one that bound last receives anything ("wait" reports it on stderr), and when both bind at the
 * same moment one of them fails with EADDRINUSE. umockdev_testbed_add_from_string() itself sends
 * "add" for each record (the initial load reaches no listener: the child does not exist yet);
 * umockdev_testbed_remove_device() sends nothing, so "remove" goes out before the removal, while
 * the device still exists for umockdev to describe. The testbed directory must not lie under
 * /dev, /sys, /proc or /run/udev (the preload would redirect the testbed's own files).
 *
 * Who owns what: main() owns the sim_node for the life of the process. The sim_node owns the
 * testbed (unref deletes its directory), the device table, the two command streams, the control
 * FIFO fds, the kmsg FIFO fd and the signalfd. Each simdev owns its strings and the record text
 * it came from, which replug and bind replay; it stays in the table while unplugged (present =
 * false). The child owns nothing of ours.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fpga-dfl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <umockdev.h>

#include <kdp/cleanup.h>

#define EXIT_SIM_ERROR 2
#define EXIT_SKIP 77
#define LINE_MAX_LEN 4096
#define WAIT_DEFAULT_MS 5000
#define WAIT_FALLBACK_MS 100
#define CHILD_GRACE_MS 30000          /* after a SIGTERM or SIGINT passed on, then SIGKILL */
#define ROOM_TIMEOUT_MS 120000

typedef struct simdev {
        char *devpath;                  /* "/devices/..." as in the record's P: line */
        char *syspath;                  /* "/sys" + devpath, what umockdev's API takes */
        char *record;                   /* the record as the fixture has it */
        char *subsystem;                /* E: SUBSYSTEM= */
        char *slot;                     /* PCI_SLOT_NAME= (or the name) for pci devices, else NULL */
        char *record_driver;            /* E: DRIVER= of the record, NULL if it has none */
        char *driver_link;              /* L: driver= target of the record, NULL if none */
        char *iommu_group;              /* basename of the record's L: iommu_group= target */
        char *driver;                   /* the driver bound now, NULL when unbound */
        char *node;                     /* the record's N: name ("dri/renderD128"), NULL if none */
        char *node_target;              /* what umockdev linked <testbed>/dev/<node> to at the first add */
        char *physfn;                   /* a VF: its PF's address (L: physfn=../<bdf>), else NULL */
        /* what the FPGA itself holds, kept across unbind/bind and unplug/replug as the card keeps it */
        char *hw_afu_id;                /* a port's afu_id ("<hex>\n") since a PR or drift, else NULL */
        char *hw_status;                /* an fpga_manager's status since a PR ("" or "<error>\n"), else NULL */
        bool present;
} simdev;

typedef enum sim_verb {
        VERB_UNPLUG,
        VERB_REPLUG,
        VERB_UNBIND,
        VERB_BIND,
        VERB_SET,
        VERB_UEVENT,
        VERB_WAIT,
        VERB_WAIT_LISTENERS,
        VERB_SLEEP,
        VERB_ECHO,
        VERB_KMSG,
        VERB_RM,
        VERB_WRITE,
        VERB_MKDIR,
        VERB_SRIOV,
        VERB_FPGA_PR,
        VERB_DRIFT,
        _VERB_MAX,
        _VERB_INVALID = -EINVAL,
} sim_verb;

static const char *const verb_names[_VERB_MAX] = {
        [VERB_UNPLUG] = "unplug", [VERB_REPLUG] = "replug", [VERB_UNBIND] = "unbind",
        [VERB_BIND] = "bind",     [VERB_SET] = "set",       [VERB_UEVENT] = "uevent",
        [VERB_WAIT] = "wait",     [VERB_WAIT_LISTENERS] = "wait-listeners",
        [VERB_SLEEP] = "sleep",   [VERB_ECHO] = "echo",       [VERB_KMSG] = "kmsg",
        [VERB_RM] = "rm",         [VERB_WRITE] = "write",     [VERB_MKDIR] = "mkdir",
        [VERB_SRIOV] = "sriov",   [VERB_FPGA_PR] = "fpga-pr", [VERB_DRIFT] = "drift",
};

typedef enum sim_pr_mode {
        PR_GOOD,
        PR_FAIL,
        PR_SLOW,
        _PR_MODE_MAX,
        _PR_MODE_INVALID = -EINVAL,
} sim_pr_mode;

static const char *const pr_mode_names[_PR_MODE_MAX] = { [PR_GOOD] = "good", [PR_FAIL] = "fail", [PR_SLOW] = "slow" };
static const long pr_mode_default_ms[_PR_MODE_MAX] = { [PR_GOOD] = 100, [PR_FAIL] = 100, [PR_SLOW] = 5000 };

#define PR_BUFFER_MAX (64u << 20)
#define PR_IMAGE_TAG "SIM-BITSTREAM afu_id="

/* How one FME node answers DFL_FPGA_FME_PORT_PR. */
typedef struct sim_fme {
        char *node;                     /* "dfl-fme.0" */
        sim_pr_mode mode;
        long ms;
} sim_fme;

/* A DFL_FPGA_FME_PORT_PR call waiting for its time, in the order the calls came. */
typedef struct sim_pr {
        UMockdevIoctlClient *client;    /* a reference */
        char *node;                     /* the FME node, "dfl-fme.0" */
        uint32_t port_id;
        char *afu_id;                   /* from the image */
        char *image_sha256;             /* of the image as the client's memory held it (g_free) */
        size_t image_size;
        sim_pr_mode mode;
        int64_t start_ms, due_ms;
        struct sim_pr *next;
} sim_pr;

typedef struct sim_cmd {
        sim_verb verb;
        char *addr;                     /* unplug replug unbind bind set uevent sriov */
        char *arg;                      /* bind: driver; set: attribute; uevent: action;
                                         * rm write mkdir: the path below the testbed root */
        char *value;                    /* set, write: value (escapes expanded, "\n" appended);
                                         * echo: text; kmsg: the record, "\n"-terminated;
                                         * uevent: extra KEY=VALUE lines, "\n"-terminated */
        long ms;                        /* wait, wait-listeners, sleep */
        long count;                     /* wait-listeners; sriov: the number of VFs */
} sim_cmd;

/* One command stream: the script, or the lines read from the control FIFO. */
typedef struct sim_stream {
        const char *name;               /* "script" or "control", for messages; static */
        char **lines;                   /* owned, each owned */
        size_t n_lines, n_done, lines_size;
        int64_t resume_at_ms;           /* after "sleep": monotonic time to go on at */
} sim_stream;

typedef struct sim_node {
        UMockdevTestbed *tb;
        char *root;                     /* the testbed directory ($UMOCKDEV_DIR) */
        simdev **devs;                  /* sorted by devpath: parents before children */
        size_t n_devs, devs_size;
        sim_stream script, control;
        int control_fd, control_keep_fd;
        char control_buf[LINE_MAX_LEN];
        size_t control_len;
        int signal_fd;
        int kmsg_fd;                    /* read-write on the testbed's dev/kmsg FIFO, or -1 */
        pid_t child;
        int64_t child_kill_at;          /* when to SIGKILL a child told to stop; -1: not told */
        bool verbose;
        bool diag_unavailable_told;
        unsigned queue_room;            /* unread uevents a listener's socket takes, see sim_make_room() */
        unsigned n_unread_max;          /* uevents sent since every listener was last seen drained */
        char **orphans_told;            /* event socket names already reported as shadowed */
        size_t n_orphans_told;
        /* DFL FPGA: fmes, prs and the pipe's write end are shared with umockdev's worker thread */
        UMockdevIoctlBase *fme_handler;
        pthread_mutex_t fpga_lock;
        sim_fme *fmes;
        size_t n_fmes;
        sim_pr *prs;
        int pr_pipe[2];                 /* the worker wakes the main loop: a PR call came */
} sim_node;

static void sim_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sim_log(const char *fmt, ...) {
        va_list ap;

        fputs("sim-node: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
}

static int64_t now_ms(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t now_us(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void sleep_ms(long ms) {
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

static char *strdup_or_die(const char *s) {
        char *p = strdup(s);

        if (!p) {
                sim_log("out of memory");
                abort();
        }
        return p;
}

static char *join(const char *a, const char *b) {
        char *p;

        if (asprintf(&p, "%s%s", a, b) < 0) {
                sim_log("out of memory");
                abort();
        }
        return p;
}

static const char *basename_of(const char *path) {
        const char *s = strrchr(path, '/');

        return s ? s + 1 : path;
}

static int read_file(const char *path, char **ret) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, size = 0;

        f = fopen(path, "re");
        if (!f)
                return -errno;
        for (;;) {
                size_t n;

                if (size - len < 4096) {
                        char *nb = realloc(buf, size + 65536);

                        if (!nb)
                                return -ENOMEM;
                        buf = nb;
                        size += 65536;
                }
                n = fread(buf + len, 1, size - len - 1, f);
                len += n;
                if (n == 0)
                        break;
        }
        if (ferror(f))
                return -EIO;
        buf[len] = '\0';
        *ret = KDP_TAKE_PTR(buf);
        return 0;
}

static int write_file(const char *path, const char *text) {
        _cleanup_close_ int fd = -1;
        size_t len = strlen(text), off = 0;

        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        while (off < len) {
                ssize_t n = write(fd, text + off, len - off);

                if (n < 0)
                        return -errno;
                off += (size_t) n;
        }
        return 0;
}

static int mkdir_p(const char *path) {
        _cleanup_free_ char *p = strdup_or_die(path);

        for (char *s = p + 1; *s; s++) {
                if (*s != '/')
                        continue;
                *s = '\0';
                if (mkdir(p, 0755) < 0 && errno != EEXIST)
                        return -errno;
                *s = '/';
        }
        if (mkdir(p, 0755) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

/* "a/b/../c/./d" -> "a/c/d"; path must be absolute. Returns a new string. */
static char *normalize_path(const char *path) {
        _cleanup_free_ char *copy = strdup_or_die(path);
        char *out = calloc(1, strlen(path) + 2), *save = NULL;
        size_t len = 0;

        if (!out) {
                sim_log("out of memory");
                abort();
        }
        for (char *tok = strtok_r(copy, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
                if (strcmp(tok, ".") == 0)
                        continue;
                if (strcmp(tok, "..") == 0) {
                        while (len > 0 && out[len - 1] != '/')
                                len--;
                        if (len > 0)
                                len--;
                        out[len] = '\0';
                        continue;
                }
                out[len++] = '/';
                strcpy(out + len, tok);
                len += strlen(tok);
        }
        if (len == 0)
                strcpy(out, "/");
        return out;
}

/* -------------------------------------------------------------------------------------------- */
/* The device table */

static simdev *simdev_free(simdev *d) {
        if (!d)
                return NULL;
        free(d->devpath);
        free(d->syspath);
        free(d->record);
        free(d->subsystem);
        free(d->slot);
        free(d->record_driver);
        free(d->driver_link);
        free(d->iommu_group);
        free(d->driver);
        free(d->node);
        free(d->node_target);
        free(d->hw_afu_id);
        free(d->hw_status);
        free(d->physfn);
        free(d);
        return NULL;
}
KDP_DEFINE_CLEANUP_FUNC(simdev, simdev_free);

static bool simdev_is_pci(const simdev *d) {
        return strcmp(d->subsystem, "pci") == 0;
}

/* true if d lies strictly below ancestor */
static bool simdev_is_under(const simdev *d, const simdev *ancestor) {
        size_t len = strlen(ancestor->devpath);

        return strncmp(d->devpath, ancestor->devpath, len) == 0 && d->devpath[len] == '/';
}

/* Parses one record (the lines of one device, no blank line) into a new simdev. */
static int simdev_new_from_record(const char *record, const char *where, simdev **ret) {
        _cleanup_(simdev_freep) simdev *d = NULL;
        _cleanup_free_ char *copy = strdup_or_die(record);
        char *save = NULL;

        d = calloc(1, sizeof(*d));
        if (!d)
                return -ENOMEM;
        d->record = strdup_or_die(record);
        for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                if (line[0] == '#') {
                        sim_log("%s: '#' comments are not part of the umockdev 0.17 record format "
                                "(describe the fixture in a README instead)", where);
                        return -EINVAL;
                }
                if (strncmp(line, "P: ", 3) == 0 && !d->devpath)
                        d->devpath = strdup_or_die(line + 3);
                else if (strncmp(line, "E: SUBSYSTEM=", 13) == 0)
                        d->subsystem = strdup_or_die(line + 13);
                else if (strncmp(line, "E: DRIVER=", 10) == 0)
                        d->record_driver = strdup_or_die(line + 10);
                else if (strncmp(line, "E: PCI_SLOT_NAME=", 17) == 0)
                        d->slot = strdup_or_die(line + 17);
                else if (strncmp(line, "L: driver=", 10) == 0)
                        d->driver_link = strdup_or_die(line + 10);
                else if (strncmp(line, "L: iommu_group=", 15) == 0)
                        d->iommu_group = strdup_or_die(basename_of(line + 15));
                else if (strncmp(line, "L: physfn=", 10) == 0)
                        d->physfn = strdup_or_die(basename_of(line + 10));
        }
        if (!d->devpath || strncmp(d->devpath, "/devices/", 9) != 0) {
                sim_log("%s: a record must start with a \"P: /devices/...\" line", where);
                return -EINVAL;
        }
        if (!d->subsystem) {
                sim_log("%s: record %s has no E: SUBSYSTEM= line", where, d->devpath);
                return -EINVAL;
        }
        if (simdev_is_pci(d) && !d->slot)
                d->slot = strdup_or_die(basename_of(d->devpath));
        d->syspath = join("/sys", d->devpath);
        d->driver = d->record_driver ? strdup_or_die(d->record_driver) : NULL;
        d->present = true;
        *ret = KDP_TAKE_PTR(d);
        return 0;
}

/* The record without its E: DRIVER= and L: driver= lines: a device that has just appeared. */
static char *simdev_record_unbound(const simdev *d) {
        _cleanup_free_ char *copy = strdup_or_die(d->record);
        char *out = calloc(1, strlen(d->record) + 2), *save = NULL;

        if (!out) {
                sim_log("out of memory");
                abort();
        }
        for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                if (strncmp(line, "E: DRIVER=", 10) == 0 || strncmp(line, "L: driver=", 10) == 0)
                        continue;
                strcat(out, line);
                strcat(out, "\n");
        }
        return out;
}

static int cmp_devs(const void *a, const void *b) {
        const simdev *const *x = a, *const *y = b;

        return strcmp((*x)->devpath, (*y)->devpath);
}

static simdev *sim_find_devpath(sim_node *s, const char *devpath) {
        for (size_t i = 0; i < s->n_devs; i++)
                if (strcmp(s->devs[i]->devpath, devpath) == 0)
                        return s->devs[i];
        return NULL;
}

/* The nearest PCI ancestor of d (the device whose driver owns d), or NULL. */
static simdev *sim_owner(sim_node *s, const simdev *d) {
        simdev *best = NULL;

        for (size_t i = 0; i < s->n_devs; i++) {
                simdev *a = s->devs[i];

                if (simdev_is_pci(a) && simdev_is_under(d, a) &&
                    (!best || strlen(a->devpath) > strlen(best->devpath)))
                        best = a;
        }
        return best;
}

/* A class device of pci device p: below p, not a PCI device, with p as nearest PCI ancestor. */
static bool sim_is_class_child(sim_node *s, const simdev *d, const simdev *p) {
        return !simdev_is_pci(d) && simdev_is_under(d, p) && sim_owner(s, d) == p;
}

static char *sim_path(sim_node *s, const char *syspath_or_rel) {
        return join(s->root, syspath_or_rel);
}

/* The devpath a /sys link of the testbed points at ("/sys/bus/pci/devices/<bdf>"), or NULL. */
static char *sim_link_devpath(sim_node *s, const char *rel) {
        _cleanup_free_ char *link = sim_path(s, rel), *abs = NULL, *norm = NULL;
        char target[PATH_MAX];
        ssize_t n;

        n = readlink(link, target, sizeof(target) - 1);
        if (n < 0)
                return NULL;
        target[n] = '\0';
        /* relative to the link's directory */
        if (asprintf(&abs, "%.*s%s", (int) (basename_of(rel) - rel), rel, target) < 0)
                abort();
        norm = normalize_path(abs);
        return strncmp(norm, "/sys/devices/", 13) == 0 ? strdup_or_die(norm + 4) : NULL;
}

/*
 * Resolves ADDR to a device in the table. Present devices are looked up in the testbed itself
 * (/sys/bus/pci/devices/<bdf>, /sys/class/<subsystem>/<name>), unplugged ones in the records.
 */
static int sim_resolve(sim_node *s, const char *addr, simdev **ret) {
        _cleanup_free_ char *devpath = NULL, *rel = NULL;
        const char *slash = strchr(addr, '/');
        simdev *d;

        if (strncmp(addr, "/sys/devices/", 13) == 0)
                devpath = normalize_path(addr + 4);
        else if (strncmp(addr, "/devices/", 9) == 0)
                devpath = normalize_path(addr);
        else if (slash) {
                /* SUBSYSTEM/NAME: a class device, or a device of a bus */
                int len = (int) (slash - addr);

                if (asprintf(&rel, "/sys/class/%.*s/%s", len, addr, slash + 1) < 0)
                        return -ENOMEM;
                devpath = sim_link_devpath(s, rel);
                free(rel);
                if (asprintf(&rel, "/sys/bus/%.*s/devices/%s", len, addr, slash + 1) < 0)
                        return -ENOMEM;
                if (!devpath)
                        devpath = sim_link_devpath(s, rel);
                for (size_t i = 0; i < s->n_devs && !devpath; i++)
                        if (strncmp(s->devs[i]->subsystem, addr, (size_t) len) == 0 &&
                            s->devs[i]->subsystem[len] == '\0' &&
                            strcmp(basename_of(s->devs[i]->devpath), slash + 1) == 0)
                                devpath = strdup_or_die(s->devs[i]->devpath);
        } else {
                /* a PCI address; the domain may be left out */
                unsigned dom = 0, bus, dev, fn;
                char bdf[32], tail;

                if (sscanf(addr, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &tail) != 4 &&
                    (dom = 0, sscanf(addr, "%x:%x.%x%c", &bus, &dev, &fn, &tail) != 3)) {
                        sim_log("'%s' is not a PCI address, /sys/devices/... path or SUBSYSTEM/NAME", addr);
                        return -EINVAL;
                }
                (void) snprintf(bdf, sizeof(bdf), "%04x:%02x:%02x.%x", dom, bus, dev, fn);
                if (asprintf(&rel, "/sys/bus/pci/devices/%s", bdf) < 0)
                        return -ENOMEM;
                devpath = sim_link_devpath(s, rel);
                for (size_t i = 0; i < s->n_devs && !devpath; i++)
                        if (s->devs[i]->slot && strcmp(s->devs[i]->slot, bdf) == 0)
                                devpath = strdup_or_die(s->devs[i]->devpath);
        }
        if (!devpath) {
                sim_log("no device '%s' in the testbed or the fixture records", addr);
                return -ENODEV;
        }
        d = sim_find_devpath(s, devpath);
        if (!d) {
                sim_log("'%s' resolves to %s, which no fixture record declares", addr, devpath);
                return -ENODEV;
        }
        *ret = d;
        return 0;
}

/* -------------------------------------------------------------------------------------------- */
/* Testbed edits */

static int sim_make_room(sim_node *s);

static int sim_send(sim_node *s, simdev *d, const char *action) {
        int r = sim_make_room(s);

        if (r < 0)
                return r;
        if (s->verbose)
                sim_log("uevent %s %s (%s)", action, d->devpath, d->subsystem);
        umockdev_testbed_uevent(s->tb, d->syspath, action);
        return 0;
}

/* path -> target, replacing what is there; makes the parent too (umockdev drops an emptied /dev/dri). */
static int sim_symlink(const char *target, const char *path) {
        _cleanup_free_ char *dir = strdup_or_die(path);
        int r;

        *strrchr(dir, '/') = '\0';
        r = mkdir_p(dir);
        if (r < 0)
                return r;
        (void) unlink(path);
        if (symlink(target, path) < 0)
                return -errno;
        return 0;
}

static int sim_touch(const char *path) {
        _cleanup_close_ int fd = -1;

        if (access(path, F_OK) == 0)
                return 0;
        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0200);
        return fd < 0 ? -errno : 0;
}

/*
 * The symbolic link SYSPATH/NAME -> TARGET in the testbed. umockdev aborts the process (SIGTRAP)
 * when the link exists already, which an inconsistent record can cause: -EEXIST then, for the
 * caller to name.
 */
static int sim_set_link(sim_node *s, const char *syspath, const char *name, const char *target) {
        _cleanup_free_ char *path = NULL;
        struct stat st;

        if (asprintf(&path, "%s%s/%s", s->root, syspath, name) < 0)
                return -ENOMEM;
        if (lstat(path, &st) == 0)
                return -EEXIST;
        umockdev_testbed_set_attribute_link(s->tb, syspath, name, target);
        return 0;
}

/* /sys/bus/<subsystem>/drivers/<driver> in the testbed */
static char *sim_driver_dir(sim_node *s, simdev *d, const char *driver) {
        char *dir;

        if (asprintf(&dir, "%s/sys/bus/%s/drivers/%s", s->root, d->subsystem, driver) < 0)
                abort();
        return dir;
}

/* Creates the driver's directory with its files, and its back-link to d. */
static int sim_link_driver(sim_node *s, simdev *d) {
        static const char *const files[] = { "bind", "unbind", "new_id", "remove_id" };
        _cleanup_free_ char *dir = NULL, *link = NULL, *target = NULL;
        int r;

        if (!d->driver)
                return 0;
        dir = sim_driver_dir(s, d, d->driver);
        r = mkdir_p(dir);
        if (r < 0)
                return r;
        for (size_t i = 0; i < KDP_ELEMENTSOF(files); i++) {
                _cleanup_free_ char *f = NULL;

                if (asprintf(&f, "%s/%s", dir, files[i]) < 0)
                        return -ENOMEM;
                r = sim_touch(f);
                if (r < 0)
                        return r;
        }
        /* /sys/bus/pci/drivers/<drv>/<name> -> ../../../../devices/... */
        if (asprintf(&link, "%s/%s", dir, basename_of(d->devpath)) < 0)
                return -ENOMEM;
        target = join("../../../..", d->devpath);
        return sim_symlink(target, link);
}

static void sim_unlink_driver(sim_node *s, simdev *d, const char *driver) {
        _cleanup_free_ char *dir = sim_driver_dir(s, d, driver), *link = NULL;

        if (asprintf(&link, "%s/%s", dir, basename_of(d->devpath)) < 0)
                abort();
        (void) unlink(link);
}

/* /sys/kernel/iommu_groups/<n>/devices/<bdf> -> ../../../../devices/... */
static int sim_link_iommu(sim_node *s, simdev *d) {
        _cleanup_free_ char *dir = NULL, *link = NULL, *target = NULL;
        int r;

        if (!d->iommu_group)
                return 0;
        if (asprintf(&dir, "%s/sys/kernel/iommu_groups/%s/devices", s->root, d->iommu_group) < 0)
                return -ENOMEM;
        r = mkdir_p(dir);
        if (r < 0)
                return r;
        if (asprintf(&link, "%s/%s", dir, basename_of(d->devpath)) < 0)
                return -ENOMEM;
        target = join("../../../..", d->devpath);
        return sim_symlink(target, link);
}

static void sim_unlink_iommu(sim_node *s, simdev *d) {
        _cleanup_free_ char *dir = NULL, *link = NULL;

        if (!d->iommu_group)
                return;
        if (asprintf(&dir, "%s/sys/kernel/iommu_groups/%s", s->root, d->iommu_group) < 0 ||
            asprintf(&link, "%s/devices/%s", dir, basename_of(d->devpath)) < 0)
                abort();
        (void) unlink(link);
        /* the kernel frees a group with its last device */
        free(link);
        link = join(dir, "/devices");
        if (rmdir(link) == 0)
                (void) rmdir(dir);
}

/* dev/.node/<name, '/' -> '_'> -> devnum: where the preload's stat() reads a node's number */
static int sim_link_devnum(sim_node *s, const char *name, const char *devnum) {
        _cleanup_free_ char *dir = sim_path(s, "/dev/.node"), *link = NULL;
        int r;

        r = mkdir_p(dir);
        if (r < 0)
                return r;
        if (asprintf(&link, "%s/%s", dir, name) < 0)
                return -ENOMEM;
        for (char *p = link + strlen(dir) + 1; *p; p++)
                if (*p == '/')
                        *p = '_';
        return sim_symlink(devnum, link);
}

/* The link text that leads from the directory of dev/<from> to dev/<to>: "../card1". */
static char *relative_target(const char *from, const char *to) {
        size_t common = 0, ups = 0;
        char *out;

        /* the longest common prefix of whole directories */
        for (size_t i = 0; from[i] && from[i] == to[i]; i++)
                if (from[i] == '/')
                        common = i + 1;
        for (const char *p = from + common; *p; p++)
                ups += *p == '/';
        out = calloc(1, ups * 3 + strlen(to) + 1);
        if (!out) {
                sim_log("out of memory");
                abort();
        }
        for (size_t i = 0; i < ups; i++)
                strcat(out, "../");
        strcat(out, to + common);
        return out;
}

/*
 * The record's /dev node as udev would leave it: dev/.node entries, so that stat() of the node
 * and of its S: links gives the record's "dev" number (without them st_rdev is 0:0), and S:
 * links made relative ("../card1"; umockdev points them at the testbed's absolute path).
 */
static int sim_link_devnode(sim_node *s, simdev *d) {
        _cleanup_free_ char *copy = strdup_or_die(d->record), *node = NULL, *devnum = NULL;
        char *save = NULL, *links[16];
        size_t n_links = 0;
        unsigned maj, min;
        int r = 0;

        for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                if (strncmp(line, "N: ", 3) == 0 && !node)
                        /* "N: name" or "N: name=<contents in hex>" */
                        node = strndup(line + 3, strcspn(line + 3, "="));
                else if (strncmp(line, "S: ", 3) == 0 && n_links < KDP_ELEMENTSOF(links))
                        links[n_links++] = line + 3;
                else if (sscanf(line, "A: dev=%u:%u", &maj, &min) == 2 && !devnum &&
                         asprintf(&devnum, "%u:%u", maj, min) < 0)
                        return -ENOMEM;
        }
        if (!node)
                return 0;
        if (devnum)
                r = sim_link_devnum(s, node, devnum);
        for (size_t i = 0; i < n_links && r >= 0; i++) {
                _cleanup_free_ char *path = NULL, *target = relative_target(links[i], node);

                if (asprintf(&path, "%s/dev/%s", s->root, links[i]) < 0)
                        return -ENOMEM;
                r = sim_symlink(target, path);
                if (r >= 0 && devnum)
                        r = sim_link_devnum(s, links[i], devnum);
        }
        return r;
}

/*
 * Makes every L: link of the record that points outside /sys/devices resolve (mkdir -p of the
 * target), then adds the driver and iommu back-links and the device number of the /dev node.
 */
static int sim_materialize(sim_node *s, simdev *d) {
        _cleanup_free_ char *copy = strdup_or_die(d->record);
        char *save = NULL;
        int r;

        for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                _cleanup_free_ char *abs = NULL, *norm = NULL, *path = NULL;
                const char *name = line + 3;
                size_t dir_len;
                char *eq;

                if (strncmp(line, "L: ", 3) != 0 || !(eq = strchr(line, '=')))
                        continue;
                if (strncmp(line, "L: driver=", 10) == 0 && !d->driver)
                        continue;
                /* relative to the link's own directory: "L: a/b=../x" sits in <dev>/a */
                dir_len = 0;
                for (const char *p = name; p < eq; p++)
                        if (*p == '/')
                                dir_len = (size_t) (p - name) + 1;
                if (asprintf(&abs, "%s/%.*s%s", d->syspath, (int) dir_len, name, eq + 1) < 0)
                        return -ENOMEM;
                norm = normalize_path(abs);
                if (strncmp(norm, "/sys/", 5) != 0 || strncmp(norm, "/sys/devices/", 13) == 0)
                        continue;
                path = sim_path(s, norm);
                r = mkdir_p(path);
                if (r < 0) {
                        sim_log("cannot create %s for %s: %s", norm, d->devpath, strerror(-r));
                        return r;
                }
        }
        r = sim_link_driver(s, d);
        if (r < 0)
                return r;
        r = sim_link_iommu(s, d);
        if (r < 0)
                return r;
        return sim_link_devnode(s, d);
}

/* The record without its N: lines. */
static char *record_without_node(const char *record) {
        _cleanup_free_ char *copy = strdup_or_die(record);
        char *out = calloc(1, strlen(record) + 2), *save = NULL;

        if (!out)
                return NULL;
        for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
                if (strncmp(line, "N: ", 3) != 0) {
                        strcat(out, line);
                        strcat(out, "\n");
                }
        return out;
}

/* Remembers the record's /dev node and where umockdev pointed it (a pty or a file). */
static void sim_note_node(sim_node *s, simdev *d, const char *record) {
        _cleanup_free_ char *path = NULL;
        const char *n = strstr(record, "\nN: ");
        char target[PATH_MAX];
        ssize_t len;

        if (!n && strncmp(record, "N: ", 3) == 0)
                n = record - 1;
        if (!n)
                return;
        d->node = strndup(n + 4, strcspn(n + 4, "=\n"));
        if (!d->node || asprintf(&path, "%s/dev/%s", s->root, d->node) < 0)
                return;
        len = readlink(path, target, sizeof(target) - 1);
        if (len > 0) {
                target[len] = '\0';
                d->node_target = strdup(target);
        }
}

/*
 * umockdev (0.17) keeps a removed device's pty in its table and aborts when a record with the
 * same N: name is added again; a re-added device therefore gets its record without the N: line
 * and its old node back, as the kernel gives a re-bound device the same node.
 */
/* The record with its "A: NAME=" line's value replaced by `value` (newlines as "\\n"); a copy if it has none. */
static char *record_with_attr(const char *record, const char *name, const char *value) {
        size_t nlen = strlen(name), vlen = strlen(value);
        char *out = calloc(1, strlen(record) + 2 * vlen + 2), *o = out;

        if (!out)
                return NULL;
        for (const char *p = record; *p;) {
                size_t len = strcspn(p, "\n");

                if (strncmp(p, "A: ", 3) == 0 && len > 3 + nlen && strncmp(p + 3, name, nlen) == 0 &&
                    p[3 + nlen] == '=') {
                        o += sprintf(o, "A: %s=", name);
                        for (const char *v = value; *v; v++)
                                o += *v == '\n' ? sprintf(o, "\\n") : sprintf(o, "%c", *v);
                } else {
                        memcpy(o, p, len);
                        o += len;
                }
                p += len;
                if (*p == '\n')
                        *o++ = *p++;
        }
        return out;
}

static int sim_add_record(sim_node *s, simdev *d, const char *record) {
        _cleanup_free_ char *stripped = NULL, *path = NULL, *afu = NULL, *status = NULL;
        GError *error = NULL;
        int r;

        r = sim_make_room(s);           /* umockdev sends "add" */
        if (r < 0)
                return r;
        if (s->verbose)
                sim_log("add %s", d->devpath);
        if (d->hw_afu_id) {
                afu = record_with_attr(record, "afu_id", d->hw_afu_id);
                if (!afu)
                        return -ENOMEM;
                record = afu;
        }
        if (d->hw_status) {
                status = record_with_attr(record, "status", d->hw_status);
                if (!status)
                        return -ENOMEM;
                record = status;
        }
        if (d->node_target) {
                stripped = record_without_node(record);
                if (!stripped || asprintf(&path, "%s/dev/%s", s->root, d->node) < 0)
                        return -ENOMEM;
                record = stripped;
        }
        if (!umockdev_testbed_add_from_string(s->tb, record, &error)) {
                sim_log("umockdev rejected the record of %s: %s", d->devpath, error->message);
                g_error_free(error);
                return -EINVAL;
        }
        d->present = true;
        if (path) {
                r = sim_symlink(d->node_target, path);
                if (r < 0)
                        return r;
        }
        return sim_materialize(s, d);
}

static void sim_remove(sim_node *s, simdev *d) {
        char parent[PATH_MAX], *slash;

        if (s->verbose)
                sim_log("remove %s", d->devpath);
        sim_unlink_iommu(s, d);
        if (d->driver)
                sim_unlink_driver(s, d, d->driver);
        umockdev_testbed_remove_device(s->tb, d->syspath);
        d->present = false;
        /* the kernel drops the class glue directory (".../net") with its last device */
        (void) snprintf(parent, sizeof(parent), "%s%s", s->root, d->syspath);
        slash = strrchr(parent, '/');
        if (slash) {
                *slash = '\0';
                if (strcmp(basename_of(parent), d->subsystem) == 0)
                        (void) rmdir(parent);
        }
}

/* Rewrites the uevent file with DRIVER=driver right after SUBSYSTEM=, or without DRIVER=. */
static int sim_uevent_set_driver(sim_node *s, simdev *d, const char *driver) {
        _cleanup_free_ char *path = NULL, *text = NULL, *out = NULL;
        char *save = NULL;
        bool placed = false;
        size_t size;
        int r;

        if (asprintf(&path, "%s%s/uevent", s->root, d->syspath) < 0)
                return -ENOMEM;
        r = read_file(path, &text);
        if (r < 0)
                return r;
        size = strlen(text) + (driver ? strlen(driver) : 0) + 16;
        out = calloc(1, size);
        if (!out)
                return -ENOMEM;
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                if (strncmp(line, "DRIVER=", 7) == 0)
                        continue;
                strcat(out, line);
                strcat(out, "\n");
                if (driver && !placed && strncmp(line, "SUBSYSTEM=", 10) == 0) {
                        strcat(out, "DRIVER=");
                        strcat(out, driver);
                        strcat(out, "\n");
                        placed = true;
                }
        }
        if (driver && !placed) {
                _cleanup_free_ char *rest = strdup_or_die(out);

                (void) snprintf(out, size, "DRIVER=%s\n%s", driver, rest);
        }
        return write_file(path, out);
}

static void sim_set_enable(sim_node *s, simdev *d, const char *value) {
        _cleanup_free_ char *path = NULL;

        if (asprintf(&path, "%s%s/enable", s->root, d->syspath) < 0)
                abort();
        if (access(path, F_OK) == 0)
                umockdev_testbed_set_attribute(s->tb, d->syspath, "enable", value);
}

/* The iommu group a vfio group device stands for: "106" for .../vfio/106 and .../vfio/noiommu-106;
 * NULL for any other device. */
static const char *simdev_vfio_group(const simdev *d) {
        const char *name;

        if (strcmp(d->subsystem, "vfio") != 0)
                return NULL;
        name = basename_of(d->devpath);
        return strncmp(name, "noiommu-", 8) == 0 ? name + 8 : name;
}

/* true if a present PCI device of iommu group `group`, other than `except`, is bound to vfio-pci */
static bool sim_group_on_vfio(sim_node *s, const char *group, const simdev *except) {
        for (size_t i = 0; i < s->n_devs; i++) {
                simdev *d = s->devs[i];

                if (d != except && d->present && simdev_is_pci(d) && d->iommu_group && d->driver &&
                    strcmp(d->iommu_group, group) == 0 && strcmp(d->driver, "vfio-pci") == 0)
                        return true;
        }
        return false;
}

/*
 * The vfio group device of d's iommu group follows vfio-pci: its probe() creates the group's
 * device (and /dev/vfio/<N>) for the first member of the group it takes (binding), its remove()
 * deletes it with the last one (d leaving vfio-pci). Called before "bind" and before "unbind".
 */
static int sim_vfio_follow(sim_node *s, simdev *d, bool binding) {
        int r;

        if (!d->iommu_group || !simdev_is_pci(d))
                return 0;
        for (size_t i = 0; i < s->n_devs; i++) {
                simdev *g = s->devs[i];
                const char *group = simdev_vfio_group(g);

                if (!group || strcmp(group, d->iommu_group) != 0)
                        continue;
                if (binding && !g->present) {
                        r = sim_add_record(s, g, g->record);   /* umockdev sends "add" */
                        if (r < 0)
                                return r;
                } else if (!binding && g->present && !sim_group_on_vfio(s, group, d)) {
                        r = sim_send(s, g, "remove");
                        if (r < 0)
                                return r;
                        sim_remove(s, g);
                }
        }
        return 0;
}

/* At load: the vfio group devices of groups with no member on vfio-pci leave the testbed before
 * the child starts (no uevent); they stay in the table for sim_vfio_follow(). */
static void sim_hold_back_vfio_groups(sim_node *s) {
        for (size_t i = 0; i < s->n_devs; i++) {
                simdev *g = s->devs[i];
                const char *group = simdev_vfio_group(g);

                if (group && g->present && !sim_group_on_vfio(s, group, NULL))
                        sim_remove(s, g);
        }
}

static int sim_unbind(sim_node *s, simdev *d) {
        _cleanup_free_ char *link = NULL, *old = NULL;
        int r;

        if (!d->present) {
                sim_log("unbind: %s is unplugged", d->devpath);
                return -ENODEV;
        }
        if (!d->driver) {
                sim_log("unbind: %s has no driver", d->devpath);
                return -ENODEV;
        }
        /* the driver's remove() deletes the class devices it created, deepest first */
        for (size_t i = s->n_devs; i-- > 0;) {
                simdev *c = s->devs[i];

                if (c->present && sim_is_class_child(s, c, d)) {
                        r = sim_send(s, c, "remove");
                        if (r < 0)
                                return r;
                        sim_remove(s, c);
                }
        }
        if (strcmp(d->driver, "vfio-pci") == 0 && (r = sim_vfio_follow(s, d, false)) < 0)
                return r;
        if (asprintf(&link, "%s%s/driver", s->root, d->syspath) < 0)
                return -ENOMEM;
        (void) unlink(link);
        sim_unlink_driver(s, d, d->driver);
        old = KDP_TAKE_PTR(d->driver);
        r = sim_uevent_set_driver(s, d, NULL);
        if (r < 0) {
                sim_log("unbind: cannot rewrite the uevent file of %s: %s", d->devpath, strerror(-r));
                return r;
        }
        sim_set_enable(s, d, "0\n");
        return sim_send(s, d, "unbind");
}

static int sim_bind(sim_node *s, simdev *d, const char *driver) {
        _cleanup_free_ char *target = NULL;
        int r;

        if (!d->present) {
                sim_log("bind: %s is unplugged", d->devpath);
                return -ENODEV;
        }
        if (d->driver) {
                sim_log("bind: %s is already bound to %s", d->devpath, d->driver);
                return -EBUSY;
        }
        if (d->driver_link) {
                /* the record's own link, with the driver's name swapped */
                size_t keep = (size_t) (basename_of(d->driver_link) - d->driver_link);

                if (asprintf(&target, "%.*s%s", (int) keep, d->driver_link, driver) < 0)
                        return -ENOMEM;
        } else {
                /* one "../" per level of the devpath: /sys/devices/a/b -> ../../../bus/... */
                size_t levels = 0;

                for (const char *p = d->devpath; *p; p++)
                        levels += *p == '/';
                target = calloc(1, levels * 3 + strlen(d->subsystem) + strlen(driver) + 32);
                if (!target)
                        return -ENOMEM;
                for (size_t i = 0; i < levels; i++)
                        strcat(target, "../");
                strcat(target, "bus/");
                strcat(target, d->subsystem);
                strcat(target, "/drivers/");
                strcat(target, driver);
        }
        r = sim_set_link(s, d->syspath, "driver", target);
        if (r < 0) {
                sim_log("bind: %s has a driver link already (its record has one with no driver bound)", d->devpath);
                return r;
        }
        d->driver = strdup_or_die(driver);
        r = sim_link_driver(s, d);
        if (r < 0)
                return r;
        r = sim_uevent_set_driver(s, d, driver);
        if (r < 0) {
                sim_log("bind: cannot rewrite the uevent file of %s: %s", d->devpath, strerror(-r));
                return r;
        }
        sim_set_enable(s, d, "1\n");
        if (strcmp(driver, "vfio-pci") == 0 && (r = sim_vfio_follow(s, d, true)) < 0)
                return r;
        /* probe() creates the class devices before the driver core sends "bind" */
        if (d->record_driver && strcmp(d->record_driver, driver) == 0)
                for (size_t i = 0; i < s->n_devs; i++) {
                        simdev *c = s->devs[i];

                        if (!c->present && sim_is_class_child(s, c, d)) {
                                r = sim_add_record(s, c, c->record);   /* umockdev sends "add" */
                                if (r < 0)
                                        return r;
                        }
                }
        return sim_send(s, d, "bind");
}

static int sim_unplug(sim_node *s, simdev *d) {
        int r;

        if (!d->present) {
                sim_log("unplug: %s is already unplugged", d->devpath);
                return -ENODEV;
        }
        /* pci_stop_bus_device(): drivers go first, children before parents */
        for (size_t i = s->n_devs; i-- > 0;) {
                simdev *c = s->devs[i];

                if ((c == d || simdev_is_under(c, d)) && c->present && simdev_is_pci(c) && c->driver) {
                        r = sim_unbind(s, c);
                        if (r < 0)
                                return r;
                }
        }
        /* pci_remove_bus_device(): then the devices, children before parents */
        for (size_t i = s->n_devs; i-- > 0;) {
                simdev *c = s->devs[i];

                if ((c == d || simdev_is_under(c, d)) && c->present) {
                        r = sim_send(s, c, "remove");
                        if (r < 0)
                                return r;
                        sim_remove(s, c);
                }
        }
        return 0;
}

/* -------------------------------------------------------------------------------------------- */
/* SR-IOV: VFs are the records with an L: physfn= link; the PF's sriov_numvfs says which exist */

/* The value of a record's "A: attr=<number>" line, or -1. */
static long record_number(const char *record, const char *attr) {
        size_t len = strlen(attr);

        for (const char *p = record; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
                if (strncmp(p, "A: ", 3) == 0 && strncmp(p + 3, attr, len) == 0 && p[3 + len] == '=')
                        return strtol(p + 4 + len, NULL, 10);
        return -1;
}

static simdev *sim_find_slot(sim_node *s, const char *slot) {
        for (size_t i = 0; i < s->n_devs; i++)
                if (s->devs[i]->slot && strcmp(s->devs[i]->slot, slot) == 0)
                        return s->devs[i];
        return NULL;
}

/* The VFs the records declare for pf, in address order: VF i is the i-th (sriov_offset and
 * sriov_stride are the fixture's business). Returns their number; at most max go to ret. */
static size_t sim_vfs_of(sim_node *s, const simdev *pf, simdev **ret, size_t max) {
        size_t n = 0;

        for (size_t i = 0; i < s->n_devs; i++) {
                simdev *d = s->devs[i];

                if (d->physfn && pf->slot && strcmp(d->physfn, pf->slot) == 0) {
                        if (n < max)
                                ret[n] = d;
                        n++;
                }
        }
        return n;
}

/* d is a VF that its PF's record does not enable (its number is not below the record's
 * sriov_numvfs): it exists only while an "sriov" command has it enabled. */
static bool sim_vf_held_back(sim_node *s, const simdev *d) {
        simdev *pf, *vfs[256];
        size_t n;
        long enabled;

        if (!d->physfn || !(pf = sim_find_slot(s, d->physfn)))
                return false;
        enabled = record_number(pf->record, "sriov_numvfs");
        n = sim_vfs_of(s, pf, vfs, KDP_ELEMENTSOF(vfs));
        for (size_t i = 0; i < n && i < KDP_ELEMENTSOF(vfs); i++)
                if (vfs[i] == d)
                        return (long) i >= enabled;
        return false;
}

/* At load: the held-back VFs and their class devices leave the testbed before the child starts
 * (no listener yet, so no uevent); they stay in the table, as unplugged devices do. */
static void sim_hold_back_vfs(sim_node *s) {
        for (size_t i = s->n_devs; i-- > 0;) {
                simdev *d = s->devs[i], *owner = simdev_is_pci(d) ? d : sim_owner(s, d);

                if (d->present && owner && sim_vf_held_back(s, owner))
                        sim_remove(s, d);
        }
}

/* c is a function on the bus behind bridge p (a VF only if its PF's record enables it: after a
 * rescan a PF's VFs come back only when sriov_numvfs is written) */
static bool sim_on_bus_of(sim_node *s, const simdev *c, const simdev *p) {
        return simdev_is_pci(c) && simdev_is_under(c, p) && sim_owner(s, c) == p && !sim_vf_held_back(s, c);
}

/* pci_device_add(): the function appears with no driver; umockdev sends "add" */
static int sim_appear(sim_node *s, simdev *d) {
        int r;

        free(d->driver);
        d->driver = NULL;
        if (d->record_driver) {
                _cleanup_free_ char *rec = simdev_record_unbound(d);

                return sim_add_record(s, d, rec);
        }
        r = sim_add_record(s, d, d->record);
        if (r < 0)
                return r;
        /* class devices of a function no driver owns come with it */
        for (size_t i = 0; i < s->n_devs; i++) {
                simdev *c = s->devs[i];

                if (!c->present && sim_is_class_child(s, c, d)) {
                        r = sim_add_record(s, c, c->record);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* pci_scan_child_bus(): every function on the bus appears, then the buses behind its bridges */
static int sim_scan_bus(sim_node *s, simdev *bridge) {
        int r;

        for (size_t i = 0; i < s->n_devs; i++)
                if (sim_on_bus_of(s, s->devs[i], bridge)) {
                        r = sim_appear(s, s->devs[i]);
                        if (r < 0)
                                return r;
                }
        for (size_t i = 0; i < s->n_devs; i++)
                if (sim_on_bus_of(s, s->devs[i], bridge)) {
                        r = sim_scan_bus(s, s->devs[i]);
                        if (r < 0)
                                return r;
                }
        return 0;
}

/* pci_bus_add_devices(): drivers probe every function on the bus, then the buses behind it */
static int sim_probe_bus(sim_node *s, simdev *bridge) {
        int r;

        for (size_t i = 0; i < s->n_devs; i++) {
                simdev *c = s->devs[i];

                if (sim_on_bus_of(s, c, bridge) && c->record_driver) {
                        r = sim_bind(s, c, c->record_driver);
                        if (r < 0)
                                return r;
                }
        }
        for (size_t i = 0; i < s->n_devs; i++)
                if (sim_on_bus_of(s, s->devs[i], bridge)) {
                        r = sim_probe_bus(s, s->devs[i]);
                        if (r < 0)
                                return r;
                }
        return 0;
}

static int sim_replug(sim_node *s, simdev *d) {
        simdev *vfs[256];
        bool back[256];
        size_t n_vfs;
        int r;

        if (d->present) {
                sim_log("replug: %s is present; unplug it first", d->devpath);
                return -EEXIST;
        }
        for (size_t i = 0; i < s->n_devs; i++) {
                simdev *a = s->devs[i];

                if (simdev_is_under(d, a) && !a->present) {
                        sim_log("replug: the parent %s of %s is unplugged; replug it first",
                                a->devpath, d->devpath);
                        return -ENODEV;
                }
        }
        if (!simdev_is_pci(d)) {
                /* a class device alone: it comes back as its driver would create it */
                return sim_add_record(s, d, d->record);
        }
        /* the rescan: the subtree appears without drivers, bus by bus ... */
        r = sim_appear(s, d);
        if (r >= 0)
                r = sim_scan_bus(s, d);
        if (r < 0)
                return r;
        /* ... and so do the VFs that d's record enables, functions of d's own bus */
        n_vfs = sim_vfs_of(s, d, vfs, KDP_ELEMENTSOF(vfs));
        n_vfs = n_vfs < KDP_ELEMENTSOF(vfs) ? n_vfs : KDP_ELEMENTSOF(vfs);
        for (size_t i = 0; i < n_vfs; i++) {
                back[i] = !vfs[i]->present && !sim_vf_held_back(s, vfs[i]);
                if (back[i] && (r = sim_appear(s, vfs[i])) < 0)
                        return r;
        }
        /* ... then the drivers probe, bus by bus */
        if (d->record_driver) {
                r = sim_bind(s, d, d->record_driver);
                if (r < 0)
                        return r;
        }
        r = sim_probe_bus(s, d);
        for (size_t i = 0; i < n_vfs && r >= 0; i++)
                if (back[i] && vfs[i]->record_driver)
                        r = sim_bind(s, vfs[i], vfs[i]->record_driver);
        return r;
}

/*
 * "sriov PF N": what `echo N > sriov_numvfs` does (docs/hardware-sriov.md §3; drivers/pci/iov.c). The
 * value is set first: a reader of sriov_numvfs waits on the device lock until the write is over,
 * so no reader sees VFs beside the old value. Enable: for each VF in order, "add" (no driver),
 * the virtfn<i> link and a "change", then the driver's probe ("add" of its class devices and
 * "bind"); at the end a "change" on the PF. Disable: for each VF in order, its virtfn<i> link
 * goes, then it is unplugged (class devices "remove", "unbind", "remove"); no event on the PF.
 */
static int sim_sriov(sim_node *s, simdev *pf, long n) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        simdev *vfs[256];
        size_t n_vfs = sim_vfs_of(s, pf, vfs, KDP_ELEMENTSOF(vfs));
        char value[32];
        long now;
        int r;

        if (!pf->present) {
                sim_log("sriov: %s is unplugged", pf->devpath);
                return -ENODEV;
        }
        if (asprintf(&path, "%s%s/sriov_numvfs", s->root, pf->syspath) < 0)
                return -ENOMEM;
        if (read_file(path, &text) < 0) {
                sim_log("sriov: %s has no sriov_numvfs (not an SR-IOV PF)", pf->devpath);
                return -ENODEV;
        }
        now = strtol(text, NULL, 10);
        if (n == now)
                return 0;               /* the kernel: writing the current value does nothing */
        if (!pf->driver) {
                sim_log("sriov: %s has no driver to enable VFs (the kernel gives ENOENT)", pf->devpath);
                return -ENOENT;
        }
        if (n > 0 && now > 0) {
                sim_log("sriov: %s has %ld VFs enabled; write 0 first (the kernel gives EBUSY)", pf->devpath, now);
                return -EBUSY;
        }
        if ((size_t) n > n_vfs || n_vfs > KDP_ELEMENTSOF(vfs)) {
                sim_log("sriov: the records declare %zu VFs of %s (L: physfn=), not %ld", n_vfs, pf->devpath, n);
                return -ERANGE;
        }
        (void) snprintf(value, sizeof(value), "%ld\n", n);
        umockdev_testbed_set_attribute(s->tb, pf->syspath, "sriov_numvfs", value);
        if (n == 0) {
                for (long i = 0; i < now && (size_t) i < n_vfs; i++) {
                        _cleanup_free_ char *link = NULL;

                        if (asprintf(&link, "%s%s/virtfn%ld", s->root, pf->syspath, i) < 0)
                                return -ENOMEM;
                        (void) unlink(link);
                        if (vfs[i]->present && (r = sim_unplug(s, vfs[i])) < 0)
                                return r;
                }
                return 0;
        }
        for (long i = 0; i < n; i++) {
                simdev *vf = vfs[i];
                char name[32], target[64];

                if (vf->present) {
                        sim_log("sriov: the VF %s is present already", vf->devpath);
                        return -EEXIST;
                }
                r = sim_appear(s, vf);
                if (r < 0)
                        return r;
                (void) snprintf(name, sizeof(name), "virtfn%ld", i);
                (void) snprintf(target, sizeof(target), "../%s", vf->slot);
                r = sim_set_link(s, pf->syspath, name, target);
                if (r < 0) {
                        sim_log("sriov: %s has %s already while sriov_numvfs was %ld (its record is inconsistent)",
                                pf->devpath, name, now);
                        return r;
                }
                r = sim_send(s, vf, "change");
                if (r < 0)
                        return r;
                if (vf->record_driver && (r = sim_bind(s, vf, vf->record_driver)) < 0)
                        return r;
        }
        return sim_send(s, pf, "change");
}

/* -------------------------------------------------------------------------------------------- */
/* "wait": the listeners' receive queues, through NETLINK_SOCK_DIAG */

typedef struct listener_state {
        unsigned n_live, n_pending;
        char shadowed[PATH_MAX];        /* a socket name bound twice, if any */
} listener_state;

static int sim_query_listeners(sim_node *s, listener_state *ret) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *prefix = join(s->root, "/event");
        struct {
                struct nlmsghdr nlh;
                struct unix_diag_req req;
        } msg = {
                .nlh = { .nlmsg_len = sizeof(msg), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
                         .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
                .req = { .sdiag_family = AF_UNIX, .udiag_states = ~0U,
                         .udiag_show = UDIAG_SHOW_NAME | UDIAG_SHOW_VFS | UDIAG_SHOW_RQLEN },
        };
        struct sockaddr_nl nladdr = { .nl_family = AF_NETLINK };
        listener_state st = { 0 };
        long buf[8192 / sizeof(long)];
        bool done = false;

        fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
        if (fd < 0)
                return -errno;
        if (sendto(fd, &msg, sizeof(msg), 0, (struct sockaddr *) &nladdr, sizeof(nladdr)) < 0)
                return -errno;
        while (!done) {
                ssize_t n = recv(fd, buf, sizeof(buf), 0);

                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                for (struct nlmsghdr *h = (struct nlmsghdr *) buf; NLMSG_OK(h, (size_t) n);
                     h = NLMSG_NEXT(h, n)) {
                        struct unix_diag_msg *m = NLMSG_DATA(h);
                        char name[PATH_MAX] = "";
                        bool have_vfs = false, have_rq = false;
                        struct unix_diag_vfs vfs = { 0 };
                        struct unix_diag_rqlen rq = { 0 };
                        struct stat sb;
                        int len;

                        if (h->nlmsg_type == NLMSG_DONE) {
                                done = true;
                                break;
                        }
                        if (h->nlmsg_type == NLMSG_ERROR) {
                                struct nlmsgerr *e = NLMSG_DATA(h);

                                return e->error ? e->error : -EIO;
                        }
                        len = (int) (h->nlmsg_len - NLMSG_LENGTH(sizeof(*m)));
                        for (struct rtattr *a = (struct rtattr *) (m + 1); RTA_OK(a, len);
                             a = RTA_NEXT(a, len)) {
                                size_t plen = RTA_PAYLOAD(a);

                                if (a->rta_type == UNIX_DIAG_NAME && plen < sizeof(name)) {
                                        memcpy(name, RTA_DATA(a), plen);
                                        name[plen] = '\0';
                                } else if (a->rta_type == UNIX_DIAG_VFS && plen >= sizeof(vfs)) {
                                        memcpy(&vfs, RTA_DATA(a), sizeof(vfs));
                                        have_vfs = true;
                                } else if (a->rta_type == UNIX_DIAG_RQLEN && plen >= sizeof(rq)) {
                                        memcpy(&rq, RTA_DATA(a), sizeof(rq));
                                        have_rq = true;
                                }
                        }
                        if (strncmp(name, prefix, strlen(prefix)) != 0 || !have_vfs)
                                continue;
                        /* a socket whose name was unlinked and re-bound by another fd is deaf */
                        if (stat(name, &sb) < 0 || sb.st_ino != vfs.udiag_vfs_ino) {
                                (void) snprintf(st.shadowed, sizeof(st.shadowed), "%s", name);
                                continue;
                        }
                        st.n_live++;
                        if (have_rq && rq.udiag_rqueue > 0)
                                st.n_pending++;
                }
        }
        *ret = st;
        return 0;
}

static void sim_tell_shadowed(sim_node *s, const char *name) {
        for (size_t i = 0; i < s->n_orphans_told; i++)
                if (strcmp(s->orphans_told[i], name) == 0)
                        return;
        sim_log("warning: two uevent listeners were bound to %s (monitors on the same fd number in two "
                "processes); only the newer one receives uevents", name);
        char **v = realloc(s->orphans_told, (s->n_orphans_told + 1) * sizeof(char *));
        if (!v)
                return;
        s->orphans_told = v;
        s->orphans_told[s->n_orphans_told++] = strdup_or_die(name);
}

/*
 * Polls until every listener has read every uevent sent so far: 0 then, -ETIMEDOUT after
 * timeout_ms, or NETLINK_SOCK_DIAG's error when it is unavailable. why names the caller for -v.
 */
static int sim_drain(sim_node *s, long timeout_ms, const char *why, listener_state *ret_st) {
        int64_t deadline = now_ms() + timeout_ms;
        bool told = false;

        for (;;) {
                int r = sim_query_listeners(s, ret_st);

                if (r < 0)
                        return r;
                if (ret_st->shadowed[0])
                        sim_tell_shadowed(s, ret_st->shadowed);
                if (ret_st->n_pending == 0) {
                        s->n_unread_max = 0;
                        return 0;
                }
                if (s->verbose && !told)
                        sim_log("%s: %u listener(s) hold unread uevents: waiting until they have read them",
                                why, ret_st->n_pending);
                told = true;
                if (now_ms() >= deadline)
                        return -ETIMEDOUT;
                sleep_ms(2);
        }
}

static void sim_wait(sim_node *s, long timeout_ms) {
        listener_state st;
        int r = sim_drain(s, timeout_ms, "wait", &st);

        if (r == -ETIMEDOUT)
                sim_log("warning: wait: %u of %u listener(s) still hold unread uevents after %ld ms",
                        st.n_pending, st.n_live, timeout_ms);
        else if (r < 0) {
                if (!s->diag_unavailable_told)
                        sim_log("warning: NETLINK_SOCK_DIAG unavailable (%s); \"wait\" settles for %d ms "
                                "instead", strerror(-r), WAIT_FALLBACK_MS);
                s->diag_unavailable_told = true;
                sleep_ms(WAIT_FALLBACK_MS);
        } else if (s->verbose)
                sim_log("wait: %u listener(s), all drained", st.n_live);
}

static int sim_wait_listeners(sim_node *s, long count, long timeout_ms) {
        int64_t deadline = now_ms() + timeout_ms;

        for (;;) {
                listener_state st;
                int r = sim_query_listeners(s, &st);

                if (r < 0) {
                        sim_log("wait-listeners: NETLINK_SOCK_DIAG unavailable: %s", strerror(-r));
                        return r;
                }
                if (st.n_live >= (unsigned long) count)
                        return 0;
                if (now_ms() >= deadline) {
                        sim_log("wait-listeners: %u of %ld listener(s) after %ld ms", st.n_live, count,
                                timeout_ms);
                        return -ETIMEDOUT;
                }
                sleep_ms(2);
        }
}

/*
 * Flow control. umockdev sends each uevent with a non-blocking sendmsg() to each listener's
 * datagram socket and abort()s when one fails; such a socket takes net.unix.max_dgram_qlen + 1
 * unread messages (10 + 1 by default), where the kernel's uevent socket takes megabytes. So a
 * listener slower than this process (kdpd under valgrind, a loaded machine) would kill it, and
 * the child with it, in the middle of a script. Every listener's queue holds at most the uevents
 * sent since all queues were last seen empty; once that number reaches the room of one queue,
 * sending waits until they are empty again. A listener gets every uevent in order, later: what
 * the kernel gives a reader that falls behind. One that reads nothing for ROOM_TIMEOUT_MS is an
 * error (the command fails) rather than the abort. Without NETLINK_SOCK_DIAG, sending goes on as
 * umockdev does it.
 */
static unsigned read_queue_room(void) {
        _cleanup_free_ char *text = NULL;
        long n;

        if (read_file("/proc/sys/net/unix/max_dgram_qlen", &text) < 0)
                return 10;
        n = strtol(text, NULL, 10);
        return n < 1 ? 1 : n > 1000 ? 1000 : (unsigned) n;
}

static int sim_make_room(sim_node *s) {
        listener_state st;
        int r;

        if (s->n_unread_max < s->queue_room) {
                s->n_unread_max++;
                return 0;
        }
        r = sim_drain(s, ROOM_TIMEOUT_MS, "flow control", &st);
        if (r == -ETIMEDOUT) {
                sim_log("%u uevent listener(s) still hold unread uevents after %d ms; one more could "
                        "overflow their sockets (%u unread at most)", st.n_pending, ROOM_TIMEOUT_MS,
                        s->queue_room + 1);
                return r;
        }
        if (r < 0 && !s->diag_unavailable_told)
                sim_log("warning: NETLINK_SOCK_DIAG unavailable (%s); a listener that falls %u uevents "
                        "behind makes umockdev abort", strerror(-r), s->queue_room);
        s->diag_unavailable_told |= r < 0;
        s->n_unread_max = 1;
        return 0;
}

/* -------------------------------------------------------------------------------------------- */
/* Plain files: FIXTURE.files/, dev/kmsg, and the rm / write / mkdir commands */

/* A path below the testbed root: relative, no ".." component, and not the root itself. */
static bool testbed_path_ok(const char *path) {
        bool named = false;

        if (!*path || path[0] == '/')
                return false;
        for (const char *p = path; *p;) {
                size_t len = strcspn(p, "/");

                if (len == 2 && strncmp(p, "..", 2) == 0)
                        return false;
                if (len > 0 && !(len == 1 && p[0] == '.'))
                        named = true;
                p += len;
                while (*p == '/')
                        p++;
        }
        return named;
}

static int copy_file(const char *src, const char *dst, mode_t mode) {
        _cleanup_close_ int in = -1, out = -1;
        char buf[65536];

        in = open(src, O_RDONLY | O_CLOEXEC);
        if (in < 0)
                return -errno;
        out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        if (out < 0)
                return -errno;
        for (;;) {
                ssize_t n = read(in, buf, sizeof(buf));

                if (n < 0)
                        return -errno;
                if (n == 0)
                        return 0;
                for (ssize_t off = 0; off < n;) {
                        ssize_t w = write(out, buf + off, (size_t) (n - off));

                        if (w < 0)
                                return -errno;
                        off += w;
                }
        }
}

static int cmp_strp(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The names in a directory, sorted, without "." and "..". Takes d. */
static int list_names(DIR *d, char ***ret, size_t *ret_n) {
        _cleanup_closedir_ DIR *dir = d;
        char **names = NULL;
        size_t n = 0, size = 0;
        struct dirent *e;

        if (!dir)
                return -errno;
        while ((e = readdir(dir))) {
                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                        continue;
                if (n == size) {
                        char **v = realloc(names, (size = size ? size * 2 : 16) * sizeof(char *));

                        if (!v) {
                                sim_log("out of memory");
                                abort();
                        }
                        names = v;
                }
                names[n++] = strdup_or_die(e->d_name);
        }
        if (n > 0)
                qsort(names, n, sizeof(char *), cmp_strp);
        *ret = names;
        *ret_n = n;
        return 0;
}

static void free_names(char **names, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        free(names);
}

/*
 * Copies the directory src into the testbed directory dst; rel is dst's path below the testbed
 * root ("" at the top). At the top only directories are copied (SOURCE.md and other notes stay
 * out); files named .gitkeep are skipped (they only make git keep an empty directory); the
 * placeholder dev/kmsg becomes a FIFO. Nothing already in the testbed is overwritten.
 */
static int copy_tree(sim_node *s, const char *src, const char *dst, const char *rel) {
        char **names = NULL;
        size_t n = 0;
        int r;

        r = list_names(opendir(src), &names, &n);
        if (r < 0) {
                sim_log("cannot read %s: %s", src, strerror(-r));
                return r;
        }
        for (size_t i = 0; i < n && r >= 0; i++) {
                _cleanup_free_ char *from = NULL, *to = NULL, *where = NULL;
                struct stat st, dt;
                bool exists;

                if (asprintf(&from, "%s/%s", src, names[i]) < 0 ||
                    asprintf(&to, "%s/%s", dst, names[i]) < 0 ||
                    asprintf(&where, "%s%s%s", rel, *rel ? "/" : "", names[i]) < 0)
                        abort();
                if (lstat(from, &st) < 0) {
                        r = -errno;
                        sim_log("cannot stat %s: %s", from, strerror(-r));
                        break;
                }
                exists = lstat(to, &dt) == 0;
                if (!*rel && !S_ISDIR(st.st_mode))
                        continue;
                if (S_ISDIR(st.st_mode)) {
                        if (exists && !S_ISDIR(dt.st_mode)) {
                                sim_log("%s: %s is already in the testbed and is not a directory",
                                        from, where);
                                r = -EEXIST;
                        } else if (!exists && mkdir(to, (st.st_mode & 07777) | 0700) < 0) {
                                r = -errno;
                                sim_log("cannot create %s: %s", to, strerror(-r));
                        } else
                                r = copy_tree(s, from, to, where);
                        continue;
                }
                if (S_ISREG(st.st_mode) && strcmp(names[i], ".gitkeep") == 0)
                        continue;
                if (exists) {
                        sim_log("%s: %s is already in the testbed (from a record or another fixture)",
                                from, where);
                        r = -EEXIST;
                } else if (S_ISREG(st.st_mode) && strcmp(where, "dev/kmsg") == 0) {
                        /* the kernel log: a FIFO that our read-write fd keeps from ever reporting EOF */
                        if (mkfifo(to, 0644) < 0 ||
                            (s->kmsg_fd = open(to, O_RDWR | O_NONBLOCK | O_CLOEXEC)) < 0) {
                                r = -errno;
                                sim_log("cannot create the FIFO %s: %s", to, strerror(-r));
                        } else
                                (void) fcntl(s->kmsg_fd, F_SETPIPE_SZ, 1 << 20);
                } else if (S_ISREG(st.st_mode)) {
                        r = copy_file(from, to, st.st_mode & 07777);
                        if (r < 0)
                                sim_log("cannot copy %s to %s: %s", from, to, strerror(-r));
                } else if (S_ISLNK(st.st_mode)) {
                        char target[PATH_MAX];
                        ssize_t len = readlink(from, target, sizeof(target) - 1);

                        if (len < 0) {
                                r = -errno;
                                sim_log("cannot read the link %s: %s", from, strerror(-r));
                                continue;
                        }
                        target[len] = '\0';
                        if (target[0] == '/') {
                                sim_log("%s: absolute link target '%s' (it would point out of "
                                        "the testbed); make it relative", from, target);
                                r = -EINVAL;
                        } else if (symlink(target, to) < 0) {
                                r = -errno;
                                sim_log("cannot create the link %s: %s", to, strerror(-r));
                        }
                } else {
                        sim_log("%s: only regular files, directories and relative links can be "
                                "copied", from);
                        r = -EINVAL;
                }
        }
        free_names(names, n);
        return r < 0 ? r : 0;
}

/* Copies FIXTURE.files/ (FIXTURE without ".umockdev") into the testbed root, if it exists. */
static int load_files(sim_node *s, const char *fixture) {
        _cleanup_free_ char *dir = NULL;
        size_t len = strlen(fixture), suffix = strlen(".umockdev");
        struct stat st;

        if (len > suffix && strcmp(fixture + len - suffix, ".umockdev") == 0)
                len -= suffix;
        if (asprintf(&dir, "%.*s.files", (int) len, fixture) < 0)
                return -ENOMEM;
        if (stat(dir, &st) < 0) {
                if (errno == ENOENT)
                        return 0;
                sim_log("cannot read %s: %s", dir, strerror(errno));
                return -errno;
        }
        if (!S_ISDIR(st.st_mode)) {
                sim_log("%s is not a directory", dir);
                return -ENOTDIR;
        }
        if (s->verbose)
                sim_log("copying %s into the testbed", dir);
        return copy_tree(s, dir, s->root, "");
}

/* "kmsg RECORD": the record and its newline in one write(), so a reader gets it whole. */
static int sim_kmsg(sim_node *s, const char *record) {
        size_t len = strlen(record);
        ssize_t n;

        if (s->kmsg_fd < 0) {
                sim_log("kmsg: the testbed has no dev/kmsg FIFO (put an empty dev/kmsg file in the "
                        "fixture's .files tree)");
                return -ENOENT;
        }
        if (len > PIPE_BUF) {
                sim_log("kmsg: a record of %zu bytes (newline included) is longer than PIPE_BUF (%d), "
                        "which a FIFO writes in one piece", len, PIPE_BUF);
                return -E2BIG;
        }
        n = write(s->kmsg_fd, record, len);
        if (n < 0) {
                int r = -errno;

                if (r == -EAGAIN)
                        sim_log("kmsg: the dev/kmsg FIFO is full: the child reads no records");
                else
                        sim_log("kmsg: write failed: %s", strerror(-r));
                return r;
        }
        if ((size_t) n != len) {
                sim_log("kmsg: short write (%zd of %zu bytes)", n, len);
                return -EIO;
        }
        return 0;
}

/* The record with a timestamp field "@" ("4,8812,@,c;...") made CLOCK_MONOTONIC in µs, the
 * printk clock: a record written now, as a reader that checks its age must see it. */
static char *kmsg_stamp(const char *record) {
        const char *semi = strchr(record, ';'), *ts = strchr(record, ',');
        char *out;

        ts = ts ? strchr(ts + 1, ',') : NULL;
        if (!semi || !ts || ts > semi || strncmp(ts + 1, "@", 1) != 0 || (ts[2] != ',' && ts[2] != ';'))
                return strdup_or_die(record);
        if (asprintf(&out, "%.*s%" PRId64 "%s", (int) (ts + 1 - record), record, now_us(), ts + 2) < 0)
                abort();
        return out;
}

/*
 * The kernel gives every opener of /dev/kmsg the whole log; the FIFO gives each record to one
 * reader. So every record also goes to <testbed>/kmsg.log ($UMOCKDEV_DIR/kmsg.log, outside
 * what the preload redirects), from which a reader that comes later can be fed the log.
 */
static int sim_kmsg_keep(sim_node *s, const char *record) {
        _cleanup_free_ char *path = join(s->root, "/kmsg.log");
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

        if (fd < 0 || write(fd, record, strlen(record)) != (ssize_t) strlen(record)) {
                sim_log("kmsg: cannot append to %s: %s", path, strerror(errno));
                return -EIO;
        }
        return 0;
}

/* rm -r of name, relative to dir_fd; links are removed, not followed. */
static int rm_rf_at(int dir_fd, const char *name) {
        struct stat st;

        if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        if (S_ISDIR(st.st_mode)) {
                _cleanup_close_ int fd = -1;
                char **names = NULL;
                size_t n = 0;
                DIR *d;
                int r;

                fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return -errno;
                /* the DIR gets a copy, and fd stays ours for the unlinkat()s below */
                r = fcntl(fd, F_DUPFD_CLOEXEC, 3);
                if (r < 0)
                        return -errno;
                d = fdopendir(r);
                if (!d) {
                        int err = -errno;

                        (void) close(r);
                        return err;
                }
                /* names first: removing entries while readdir() walks them is unspecified */
                r = list_names(d, &names, &n);
                for (size_t i = 0; i < n && r >= 0; i++)
                        r = rm_rf_at(fd, names[i]);
                free_names(names, n);
                if (r < 0)
                        return r;
                if (unlinkat(dir_fd, name, AT_REMOVEDIR) < 0)
                        return -errno;
                return 0;
        }
        if (unlinkat(dir_fd, name, 0) < 0)
                return -errno;
        return 0;
}

static int sim_rm(sim_node *s, const char *rel) {
        _cleanup_free_ char *path = NULL;
        struct stat st;
        int r;

        if (asprintf(&path, "%s/%s", s->root, rel) < 0)
                return -ENOMEM;
        if (lstat(path, &st) < 0) {
                r = -errno;
                sim_log("rm: %s: %s", rel, strerror(-r));
                return r;
        }
        r = rm_rf_at(AT_FDCWD, path);
        if (r < 0)
                sim_log("rm: %s: %s", rel, strerror(-r));
        return r;
}

/*
 * Creates or replaces the file rel with text: a new file renamed over the old one, so a reader
 * sees the old text or the new one, never a half-written file.
 */
static int sim_write(sim_node *s, const char *rel, const char *text) {
        _cleanup_free_ char *path = NULL, *tmp = NULL;
        _cleanup_close_ int fd = -1;
        size_t len = strlen(text), dir_len;
        struct stat st;
        int r;

        if (asprintf(&path, "%s/%s", s->root, rel) < 0)
                return -ENOMEM;
        dir_len = (size_t) (basename_of(path) - path);
        if (asprintf(&tmp, "%.*s", (int) dir_len, path) < 0)
                return -ENOMEM;
        r = mkdir_p(tmp);
        if (r < 0) {
                sim_log("write: cannot create the directories of %s: %s", rel, strerror(-r));
                return r;
        }
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
                sim_log("write: %s is a directory", rel);
                return -EISDIR;
        }
        free(tmp);
        if (asprintf(&tmp, "%.*s.sim-node-write.XXXXXX", (int) dir_len, path) < 0)
                return -ENOMEM;
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0) {
                r = -errno;
                sim_log("write: cannot create a file beside %s: %s", rel, strerror(-r));
                return r;
        }
        for (size_t off = 0; off < len;) {
                ssize_t n = write(fd, text + off, len - off);

                if (n < 0) {
                        r = -errno;
                        (void) unlink(tmp);
                        sim_log("write: %s: %s", rel, strerror(-r));
                        return r;
                }
                off += (size_t) n;
        }
        (void) fchmod(fd, 0644);
        if (rename(tmp, path) < 0) {
                r = -errno;
                (void) unlink(tmp);
                sim_log("write: %s: %s", rel, strerror(-r));
                return r;
        }
        return 0;
}

static int sim_mkdir(sim_node *s, const char *rel) {
        _cleanup_free_ char *path = NULL;
        struct stat st;
        int r;

        if (asprintf(&path, "%s/%s", s->root, rel) < 0)
                return -ENOMEM;
        r = mkdir_p(path);
        if (r >= 0 && (stat(path, &st) < 0 || !S_ISDIR(st.st_mode)))
                r = -ENOTDIR;
        if (r < 0)
                sim_log("mkdir: %s: %s", rel, strerror(-r));
        return r;
}

/* -------------------------------------------------------------------------------------------- */
/* Commands */

/* -------------------------------------------------------------------------------------------- */
/* DFL FPGA: the FME nodes' ioctls */

static sim_pr_mode pr_mode_from_string(const char *s) {
        for (int i = 0; i < _PR_MODE_MAX; i++)
                if (strcmp(s, pr_mode_names[i]) == 0)
                        return (sim_pr_mode) i;
        return _PR_MODE_INVALID;
}

/* "dfl-fme.0" of "/dev/dfl-fme.0" or "dfl-fme.0". */
static const char *fme_name(const char *node) {
        return strncmp(node, "/dev/", 5) == 0 ? node + 5 : node;
}

/* Under fpga_lock. */
static sim_fme *sim_find_fme(sim_node *s, const char *node) {
        for (size_t i = 0; i < s->n_fmes; i++)
                if (strcmp(s->fmes[i].node, fme_name(node)) == 0)
                        return &s->fmes[i];
        return NULL;
}

static void sim_pr_free(sim_pr *pr) {
        if (!pr)
                return;
        if (pr->client)
                g_object_unref(pr->client);
        free(pr->node);
        free(pr->afu_id);
        g_free(pr->image_sha256);
        free(pr);
}

/* The AFU ID the image carries on its first line, lower case; NULL if it has none. */
static char *image_afu_id(const uint8_t *data, size_t size) {
        size_t tag = strlen(PR_IMAGE_TAG), n = 0;

        if (size <= tag || memcmp(data, PR_IMAGE_TAG, tag) != 0)
                return NULL;
        while (tag + n < size && isxdigit(data[tag + n]))
                n++;
        if (n < 32 || (tag + n < size && data[tag + n] != '\n'))
                return NULL;
        char *id = strndup((const char *) data + tag, n);
        for (size_t i = 0; id && i < n; i++)
                id[i] = (char) tolower((unsigned char) id[i]);
        return id;
}

/* Worker thread: reads the request and the image, then queues the call for the main loop. */
static gboolean fme_port_pr(sim_node *s, UMockdevIoctlClient *client) {
        UMockdevIoctlData *arg = umockdev_ioctl_client_get_arg(client), *req = NULL, *buf = NULL;
        struct dfl_fpga_fme_port_pr pr;
        GError *error = NULL;
        sim_pr *job;
        sim_fme *fme;

        req = umockdev_ioctl_data_resolve(arg, 0, sizeof(pr), &error);
        if (!req) {
                if (error)
                        g_error_free(error);
                umockdev_ioctl_client_complete(client, -1, EFAULT);
                return TRUE;
        }
        memcpy(&pr, req->data, sizeof(pr));
        if (pr.argsz < sizeof(pr) || pr.flags != 0 || pr.buffer_size == 0 || pr.buffer_size > PR_BUFFER_MAX) {
                g_object_unref(req);
                umockdev_ioctl_client_complete(client, -1, EINVAL);
                return TRUE;
        }
        buf = umockdev_ioctl_data_resolve(req, offsetof(struct dfl_fpga_fme_port_pr, buffer_address),
                                          pr.buffer_size, &error);
        if (!buf) {
                if (error)
                        g_error_free(error);
                g_object_unref(req);
                umockdev_ioctl_client_complete(client, -1, EFAULT);
                return TRUE;
        }
        job = calloc(1, sizeof(*job));
        if (!job) {
                g_object_unref(buf);
                g_object_unref(req);
                umockdev_ioctl_client_complete(client, -1, ENOMEM);
                return TRUE;
        }
        job->client = g_object_ref(client);
        job->node = strdup_or_die(fme_name(umockdev_ioctl_client_get_devnode(client)));
        job->port_id = pr.port_id;
        job->afu_id = image_afu_id(buf->data, (size_t) buf->data_len);
        job->image_size = (size_t) buf->data_len;
        job->image_sha256 = g_compute_checksum_for_data(G_CHECKSUM_SHA256, buf->data, (gsize) buf->data_len);
        g_object_unref(buf);
        g_object_unref(req);
        pthread_mutex_lock(&s->fpga_lock);
        for (sim_pr *q = s->prs; q; q = q->next)
                if (strcmp(q->node, job->node) == 0) {
                        uint32_t running = q->port_id;

                        pthread_mutex_unlock(&s->fpga_lock);
                        if (s->verbose)
                                sim_log("%s: PR of port %u refused: a PR of port %u still runs (EBUSY)", job->node,
                                        job->port_id, running);
                        umockdev_ioctl_client_complete(client, -1, EBUSY);
                        sim_pr_free(job);
                        return TRUE;
                }
        fme = sim_find_fme(s, job->node);
        job->mode = fme ? fme->mode : PR_GOOD;
        job->start_ms = now_ms();
        job->due_ms = job->start_ms + (fme ? fme->ms : pr_mode_default_ms[PR_GOOD]);
        sim_pr **tail = &s->prs;
        while (*tail)
                tail = &(*tail)->next;
        *tail = job;
        pthread_mutex_unlock(&s->fpga_lock);
        if (s->verbose) {
                sim_log("%s: PR of port %u with afu_id %s, %s", job->node, job->port_id,
                        job->afu_id ? job->afu_id : "(none)", pr_mode_names[job->mode]);
                sim_log("%s: PR image of port %u: %zu bytes, sha256 %s", job->node, job->port_id, job->image_size,
                        job->image_sha256 ? job->image_sha256 : "(none)");
        }
        (void) !write(s->pr_pipe[1], "x", 1);
        return TRUE;
}

/* Worker thread: every ioctl on an FME node. */
static gboolean on_fme_ioctl(UMockdevIoctlBase *base, UMockdevIoctlClient *client, gpointer userdata) {
        sim_node *s = userdata;
        gulong request = umockdev_ioctl_client_get_request(client);

        (void) base;
        switch (request) {
        case DFL_FPGA_GET_API_VERSION:
                umockdev_ioctl_client_complete(client, DFL_FPGA_API_VERSION, 0);
                return TRUE;
        case DFL_FPGA_CHECK_EXTENSION:
                umockdev_ioctl_client_complete(client, 0, 0);
                return TRUE;
        case DFL_FPGA_FME_PORT_PR:
                return fme_port_pr(s, client);
        default:
                umockdev_ioctl_client_complete(client, -1, ENOTTY);
                return TRUE;
        }
}

/* The port of the FME node's container region whose id is port_id; NULL if none. */
static simdev *sim_fme_port(sim_node *s, const char *node, uint32_t port_id) {
        const simdev *fme = NULL;
        size_t dir_len;

        for (size_t i = 0; i < s->n_devs && !fme; i++)
                if (s->devs[i]->present && s->devs[i]->node && strcmp(s->devs[i]->node, node) == 0)
                        fme = s->devs[i];
        if (!fme)
                return NULL;
        dir_len = (size_t) (strrchr(fme->devpath, '/') - fme->devpath);
        for (size_t i = 0; i < s->n_devs; i++) {
                simdev *d = s->devs[i];
                _cleanup_free_ char *path = NULL, *id = NULL;

                if (!d->present || strncmp(d->devpath, fme->devpath, dir_len + 1) != 0 ||
                    strchr(d->devpath + dir_len + 1, '/') ||
                    strncmp(d->devpath + dir_len + 1, "dfl-port.", 9) != 0)
                        continue;
                if (asprintf(&path, "%s%s/id", s->root, d->syspath) < 0 || read_file(path, &id) < 0)
                        continue;
                if (strtoul(id, NULL, 10) == port_id)
                        return d;
        }
        return NULL;
}

/* The fpga_manager class device below the FME node's platform device; NULL if none. */
static simdev *sim_fme_manager(sim_node *s, const char *node) {
        const simdev *fme = NULL;
        size_t len;

        for (size_t i = 0; i < s->n_devs && !fme; i++)
                if (s->devs[i]->present && s->devs[i]->node && strcmp(s->devs[i]->node, node) == 0)
                        fme = s->devs[i];
        if (!fme)
                return NULL;
        len = strlen(fme->devpath);
        for (size_t i = 0; i < s->n_devs; i++) {
                simdev *d = s->devs[i];

                if (d->present && strcmp(d->subsystem, "fpga_manager") == 0 &&
                    strncmp(d->devpath, fme->devpath, len) == 0 && d->devpath[len] == '/')
                        return d;
        }
        return NULL;
}

/* Sets a sysfs attribute that the FPGA holds: it stays when the device is removed and added again. */
static void sim_set_hw(sim_node *s, simdev *d, const char *attr, char **kept, const char *value) {
        free(*kept);
        *kept = strdup_or_die(value);
        umockdev_testbed_set_attribute(s->tb, d->syspath, attr, value);
}

/*
 * The manager's status after a PR, as dfl-fme-mgr shows its PR error register: a failed PR
 * leaves "reconfig incompatible image" (the image the emulated hardware rejects), the next
 * PR clears it (fme_mgr_write_init() clears the error bits) and a good one leaves it empty.
 */
static void sim_fpga_status(sim_node *s, const char *node, bool failed) {
        simdev *mgr = sim_fme_manager(s, node);

        if (mgr)
                sim_set_hw(s, mgr, "status", &mgr->hw_status, failed ? "reconfig incompatible image\n" : "");
}

/* Main loop: answers the PR calls that are due; returns the time the next one is, or -1. */
static int64_t sim_fpga_run(sim_node *s) {
        int64_t next = -1, now = now_ms();
        char drain[64];

        while (read(s->pr_pipe[0], drain, sizeof(drain)) > 0)
                ;
        for (;;) {
                sim_pr *pr = NULL;

                pthread_mutex_lock(&s->fpga_lock);
                for (sim_pr **p = &s->prs; *p; p = &(*p)->next)
                        if ((*p)->due_ms <= now) {
                                pr = *p;
                                *p = pr->next;
                                break;
                        }
                if (!pr)
                        for (sim_pr *q = s->prs; q; q = q->next)
                                if (next < 0 || q->due_ms < next)
                                        next = q->due_ms;
                pthread_mutex_unlock(&s->fpga_lock);
                if (!pr)
                        return next;
                if (pr->mode == PR_FAIL || !pr->afu_id) {
                        if (s->verbose)
                                sim_log("%s: PR of port %u failed (%s)", pr->node, pr->port_id,
                                        pr->afu_id ? "fail mode" : "no afu_id in the image");
                        sim_fpga_status(s, pr->node, true);
                        umockdev_ioctl_client_complete(pr->client, -1, EIO);
                } else {
                        simdev *port = sim_fme_port(s, pr->node, pr->port_id);
                        _cleanup_free_ char *text = NULL;

                        if (!port || asprintf(&text, "%s\n", pr->afu_id) < 0)
                                umockdev_ioctl_client_complete(pr->client, -1, EINVAL);
                        else {
                                sim_fpga_status(s, pr->node, false);
                                sim_set_hw(s, port, "afu_id", &port->hw_afu_id, text);
                                if (s->verbose)
                                        sim_log("%s: PR of port %u done: %s afu_id %s", pr->node, pr->port_id,
                                                port->devpath, pr->afu_id);
                                umockdev_ioctl_client_complete(pr->client, 0, 0);
                        }
                }
                sim_pr_free(pr);
        }
}

/* Sets how the FME node answers PR calls from now on. */
static int sim_fpga_mode(sim_node *s, const char *node, sim_pr_mode mode, long ms) {
        sim_fme *fme;

        pthread_mutex_lock(&s->fpga_lock);
        fme = sim_find_fme(s, node);
        if (fme) {
                fme->mode = mode;
                fme->ms = ms >= 0 ? ms : pr_mode_default_ms[mode];
                for (sim_pr *pr = s->prs; pr; pr = pr->next)
                        if (strcmp(pr->node, fme->node) == 0) {
                                pr->mode = mode;
                                pr->due_ms = pr->start_ms + fme->ms;
                        }
        }
        pthread_mutex_unlock(&s->fpga_lock);
        if (!fme) {
                sim_log("fpga-pr: %s is not an FME node of the fixtures", node);
                return -ENODEV;
        }
        return 0;
}

/* "MODE [MS]" of the record's E: SIM_FPGA_PR=, or of the fpga-pr command. */
static int parse_pr_mode(const char *text, sim_pr_mode *ret_mode, long *ret_ms) {
        char mode[16];
        long ms = -1;
        int n;

        n = sscanf(text, "%15s %ld", mode, &ms);
        if (n < 1 || (n == 2 && ms < 0) || pr_mode_from_string(mode) < 0)
                return -EINVAL;
        *ret_mode = pr_mode_from_string(mode);
        *ret_ms = ms;
        return 0;
}

/* Attaches the ioctl handler to every FME node of the fixtures; at load, before the child. */
static int sim_fpga_attach(sim_node *s) {
        for (size_t i = 0; i < s->n_devs; i++) {
                simdev *d = s->devs[i];
                _cleanup_free_ char *dev = NULL;
                GError *error = NULL;
                const char *prop;
                sim_fme *v;

                if (!d->node || strncmp(d->node, "dfl-fme.", 8) != 0)
                        continue;
                if (!s->fme_handler) {
                        s->fme_handler = umockdev_ioctl_base_new();
                        g_signal_connect(s->fme_handler, "handle-ioctl", G_CALLBACK(on_fme_ioctl), s);
                        if (pipe2(s->pr_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
                                return -errno;
                }
                v = realloc(s->fmes, (s->n_fmes + 1) * sizeof(*v));
                if (!v)
                        return -ENOMEM;
                s->fmes = v;
                v = &s->fmes[s->n_fmes++];
                *v = (sim_fme){ .node = strdup_or_die(d->node), .mode = PR_GOOD, .ms = pr_mode_default_ms[PR_GOOD] };
                prop = strstr(d->record, "\nE: SIM_FPGA_PR=");
                if (prop) {
                        _cleanup_free_ char *text = strndup(prop + 16, strcspn(prop + 16, "\n"));
                        long ms;

                        if (!text || parse_pr_mode(text, &v->mode, &ms) < 0) {
                                sim_log("%s: SIM_FPGA_PR=%s: expected good|fail|slow [MS]", d->devpath,
                                        text ? text : "");
                                return -EINVAL;
                        }
                        v->ms = ms >= 0 ? ms : pr_mode_default_ms[v->mode];
                }
                if (asprintf(&dev, "/dev/%s", d->node) < 0)
                        return -ENOMEM;
                if (!umockdev_testbed_attach_ioctl(s->tb, dev, s->fme_handler, &error)) {
                        sim_log("umockdev cannot emulate the ioctls of %s: %s", dev,
                                error ? error->message : "unknown error");
                        if (error)
                                g_error_free(error);
                        return -EIO;
                }
                if (s->verbose)
                        sim_log("%s: PR %s after %ld ms", dev, pr_mode_names[v->mode], v->ms);
        }
        return 0;
}

/* Sets a port's afu_id as a reprogramming behind the plugin's back would. */
static int sim_drift(sim_node *s, simdev *d, const char *afu_id) {
        _cleanup_free_ char *text = NULL;
        size_t n = strspn(afu_id, "0123456789abcdefABCDEF");

        if (n < 32 || afu_id[n]) {
                sim_log("drift: '%s' is not an AFU ID (32 or more hex digits)", afu_id);
                return -EINVAL;
        }
        if (!d->present) {
                sim_log("drift: %s is unplugged", d->devpath);
                return -ENODEV;
        }
        if (asprintf(&text, "%s\n", afu_id) < 0)
                return -ENOMEM;
        for (char *c = text; *c; c++)
                *c = (char) tolower((unsigned char) *c);
        sim_set_hw(s, d, "afu_id", &d->hw_afu_id, text);
        return 0;
}

static void sim_fpga_done(sim_node *s) {
        while (s->prs) {
                sim_pr *pr = s->prs;

                s->prs = pr->next;
                umockdev_ioctl_client_complete(pr->client, -1, EIO);
                sim_pr_free(pr);
        }
        for (size_t i = 0; i < s->n_fmes; i++)
                free(s->fmes[i].node);
        free(s->fmes);
        for (int i = 0; i < 2; i++)
                if (s->pr_pipe[i] >= 0)
                        (void) close(s->pr_pipe[i]);
}

static void sim_cmd_done(sim_cmd *c) {
        free(c->addr);
        free(c->arg);
        free(c->value);
        *c = (sim_cmd) { 0 };
}

/* Splits off the next whitespace-separated word of *p; NULL at the end. */
static char *next_word(const char **p) {
        const char *s = *p, *e;

        while (*s && isspace((unsigned char) *s))
                s++;
        if (!*s)
                return NULL;
        e = s;
        while (*e && !isspace((unsigned char) *e))
                e++;
        *p = e;
        return strndup(s, (size_t) (e - s));
}

static const char *skip_space(const char *p) {
        while (*p && isspace((unsigned char) *p))
                p++;
        return p;
}

static int parse_ms(const char *word, long *ret) {
        char *end;
        long v;

        errno = 0;
        v = strtol(word, &end, 10);
        if (errno || *end || v < 0 || v > 24L * 3600 * 1000)
                return -EINVAL;
        *ret = v;
        return 0;
}

/* Parses one line. Returns 0 and fills ret, 1 for a blank or comment line, <0 on a bad line. */
static int parse_command(const char *line, const char *where, sim_cmd *ret) {
        _cleanup_free_ char *verb = NULL, *extra = NULL;
        sim_cmd c = { .verb = _VERB_INVALID };
        const char *p = skip_space(line);

        if (!*p || *p == '#')
                return 1;
        verb = next_word(&p);
        for (int i = 0; i < _VERB_MAX; i++)
                if (strcmp(verb, verb_names[i]) == 0)
                        c.verb = (sim_verb) i;
        switch (c.verb) {
        case VERB_UNPLUG:
        case VERB_REPLUG:
        case VERB_UNBIND:
                c.addr = next_word(&p);
                extra = next_word(&p);
                if (!c.addr || extra) {
                        sim_log("%s: usage: %s ADDR", where, verb);
                        sim_cmd_done(&c);
                        return -EINVAL;
                }
                break;
        case VERB_BIND:
                c.addr = next_word(&p);
                c.arg = next_word(&p);
                extra = next_word(&p);
                if (!c.addr || !c.arg || extra) {
                        sim_log("%s: usage: bind ADDR DRIVER", where);
                        sim_cmd_done(&c);
                        return -EINVAL;
                }
                break;
        case VERB_SET: {
                gchar *v;

                c.addr = next_word(&p);
                c.arg = next_word(&p);
                if (!c.addr || !c.arg) {
                        sim_log("%s: usage: set ADDR ATTR VALUE", where);
                        sim_cmd_done(&c);
                        return -EINVAL;
                }
                if (*p)
                        p++;    /* the one separator; the rest is the value, spaces and all */
                v = g_strcompress(p);
                c.value = join(v, "\n");
                g_free(v);
                break;
        }
        case VERB_UEVENT: {
                size_t size = strlen(p) + 2;
                char *kv;

                c.addr = next_word(&p);
                c.arg = next_word(&p);
                if (!c.addr || !c.arg) {
                        sim_log("%s: usage: uevent ADDR ACTION [KEY=VALUE...]", where);
                        sim_cmd_done(&c);
                        return -EINVAL;
                }
                c.value = calloc(1, size);
                if (!c.value)
                        return -ENOMEM;
                while ((kv = next_word(&p))) {
                        if (!strchr(kv, '=') || kv[0] == '=') {
                                sim_log("%s: uevent: '%s' is not KEY=VALUE", where, kv);
                                free(kv);
                                sim_cmd_done(&c);
                                return -EINVAL;
                        }
                        strcat(c.value, kv);
                        strcat(c.value, "\n");
                        free(kv);
                }
                break;
        }
        case VERB_WAIT:
        case VERB_SLEEP: {
                _cleanup_free_ char *ms = next_word(&p);

                extra = next_word(&p);
                c.ms = WAIT_DEFAULT_MS;
                if ((c.verb == VERB_SLEEP && !ms) || extra || (ms && parse_ms(ms, &c.ms) < 0)) {
                        sim_log("%s: usage: %s", where, c.verb == VERB_SLEEP ? "sleep MS" : "wait [MS]");
                        return -EINVAL;
                }
                break;
        }
        case VERB_WAIT_LISTENERS: {
                _cleanup_free_ char *n = next_word(&p), *ms = next_word(&p);

                extra = next_word(&p);
                c.count = 1;
                c.ms = 10000;
                if (extra || (n && parse_ms(n, &c.count) < 0) || (ms && parse_ms(ms, &c.ms) < 0)) {
                        sim_log("%s: usage: wait-listeners [N [MS]]", where);
                        return -EINVAL;
                }
                break;
        }
        case VERB_ECHO:
                if (*p)
                        p++;
                c.value = strdup_or_die(p);
                break;
        case VERB_KMSG: {
                char *v;

                if (*p)
                        p++;    /* the one separator; the record is the rest, verbatim */
                if (!*p) {
                        sim_log("%s: usage: kmsg RECORD", where);
                        return -EINVAL;
                }
                /* only the two characters \n mean something: a newline (continuation lines) */
                c.value = v = calloc(1, strlen(p) + 2);
                if (!v)
                        return -ENOMEM;
                for (; *p; p++) {
                        if (p[0] == '\\' && p[1] == 'n') {
                                *v++ = '\n';
                                p++;
                        } else
                                *v++ = *p;
                }
                *v = '\n';
                break;
        }
        case VERB_RM:
        case VERB_MKDIR:
        case VERB_WRITE:
                c.arg = next_word(&p);
                if (c.verb != VERB_WRITE)
                        extra = next_word(&p);
                if (!c.arg || extra) {
                        sim_log("%s: usage: %s PATH%s", where, verb,
                                c.verb == VERB_WRITE ? " TEXT" : "");
                        sim_cmd_done(&c);
                        return -EINVAL;
                }
                if (!testbed_path_ok(c.arg)) {
                        sim_log("%s: %s: '%s' is not a path below the testbed root (relative, no '..')",
                                where, verb, c.arg);
                        sim_cmd_done(&c);
                        return -EINVAL;
                }
                if (c.verb == VERB_WRITE) {
                        gchar *v;

                        if (*p)
                                p++;
                        v = g_strcompress(p);
                        c.value = join(v, "\n");
                        g_free(v);
                }
                break;
        case VERB_SRIOV: {
                _cleanup_free_ char *n = NULL;

                c.addr = next_word(&p);
                n = next_word(&p);
                extra = next_word(&p);
                if (!c.addr || !n || extra || parse_ms(n, &c.count) < 0 || c.count > 65535) {
                        sim_log("%s: usage: sriov ADDR N", where);
                        sim_cmd_done(&c);
                        return -EINVAL;
                }
                break;
        }
        case VERB_FPGA_PR: {
                sim_pr_mode mode;

                c.arg = next_word(&p);
                if (!c.arg || parse_pr_mode(p, &mode, &c.ms) < 0) {
                        sim_log("%s: usage: fpga-pr NODE good|fail|slow [MS]", where);
                        sim_cmd_done(&c);
                        return -EINVAL;
                }
                c.count = mode;
                break;
        }
        case VERB_DRIFT:
                c.addr = next_word(&p);
                c.value = next_word(&p);
                extra = next_word(&p);
                if (!c.addr || !c.value || extra) {
                        sim_log("%s: usage: drift ADDR AFU_ID", where);
                        sim_cmd_done(&c);
                        return -EINVAL;
                }
                break;
        default:
                sim_log("%s: unknown command '%s' (unplug replug unbind bind set uevent wait "
                        "wait-listeners sleep echo kmsg rm write mkdir sriov fpga-pr drift)", where, verb);
                return -EINVAL;
        }
        *ret = c;
        return 0;
}

/* Sends one uevent with extra KEY=VALUE lines appended to the uevent file for its duration. */
static int sim_uevent_with(sim_node *s, simdev *d, const char *action, const char *extra) {
        _cleanup_free_ char *path = NULL, *saved = NULL, *text = NULL;
        int r, w;

        if (!extra || !*extra)
                return sim_send(s, d, action);
        if (asprintf(&path, "%s%s/uevent", s->root, d->syspath) < 0)
                return -ENOMEM;
        r = read_file(path, &saved);
        if (r < 0)
                return r;
        text = join(saved, extra);
        r = write_file(path, text);
        if (r < 0)
                return r;
        r = sim_send(s, d, action);
        w = write_file(path, saved);
        return r < 0 ? r : w;
}

/* Runs one parsed command. Returns <0 on error (already reported), else 0; sleep sets *ret_ms. */
static int sim_execute(sim_node *s, const sim_cmd *c, const char *where, long *ret_sleep_ms) {
        simdev *d = NULL;
        int r;

        *ret_sleep_ms = 0;
        if (c->addr) {
                r = sim_resolve(s, c->addr, &d);
                if (r < 0) {
                        sim_log("%s: %s failed", where, verb_names[c->verb]);
                        return r;
                }
        }
        if (s->verbose) {
                const char *what = c->addr ? c->addr : c->verb == VERB_KMSG ? c->value : c->arg;

                sim_log("%s: %s%s%s", where, verb_names[c->verb], what ? " " : "", what ? what : "");
        }
        switch (c->verb) {
        case VERB_UNPLUG:
                r = sim_unplug(s, d);
                break;
        case VERB_REPLUG:
                r = sim_replug(s, d);
                break;
        case VERB_UNBIND:
                r = sim_unbind(s, d);
                break;
        case VERB_BIND:
                r = sim_bind(s, d, c->arg);
                break;
        case VERB_SET:
        case VERB_UEVENT:
                if (!d->present) {
                        sim_log("%s: %s is unplugged", where, d->devpath);
                        r = -ENODEV;
                        break;
                }
                if (c->verb == VERB_SET) {
                        umockdev_testbed_set_attribute(s->tb, d->syspath, c->arg, c->value);
                        r = 0;
                } else
                        r = sim_uevent_with(s, d, c->arg, c->value);
                break;
        case VERB_WAIT:
                sim_wait(s, c->ms);
                r = 0;
                break;
        case VERB_WAIT_LISTENERS:
                r = sim_wait_listeners(s, c->count, c->ms);
                break;
        case VERB_SLEEP:
                *ret_sleep_ms = c->ms;
                r = 0;
                break;
        case VERB_ECHO:
                printf("%s\n", c->value);
                (void) fflush(stdout);
                r = 0;
                break;
        case VERB_KMSG: {
                _cleanup_free_ char *record = kmsg_stamp(c->value);

                r = sim_kmsg(s, record);
                if (r >= 0)
                        r = sim_kmsg_keep(s, record);
                break;
        }
        case VERB_SRIOV:
                r = sim_sriov(s, d, c->count);
                break;
        case VERB_RM:
                r = sim_rm(s, c->arg);
                break;
        case VERB_WRITE:
                r = sim_write(s, c->arg, c->value);
                break;
        case VERB_MKDIR:
                r = sim_mkdir(s, c->arg);
                break;
        case VERB_FPGA_PR:
                r = sim_fpga_mode(s, c->arg, (sim_pr_mode) c->count, c->ms);
                break;
        case VERB_DRIFT:
                r = sim_drift(s, d, c->value);
                break;
        default:
                r = -EINVAL;
        }
        if (r < 0)
                sim_log("%s: %s failed", where, verb_names[c->verb]);
        return r;
}

/* -------------------------------------------------------------------------------------------- */
/* Streams */

static void stream_push(sim_stream *st, const char *line) {
        if (st->n_lines == st->lines_size) {
                size_t n = st->lines_size ? st->lines_size * 2 : 16;
                char **v = realloc(st->lines, n * sizeof(char *));

                if (!v) {
                        sim_log("out of memory");
                        abort();
                }
                st->lines = v;
                st->lines_size = n;
        }
        st->lines[st->n_lines++] = strdup_or_die(line);
}

static void stream_done(sim_stream *st) {
        for (size_t i = 0; i < st->n_lines; i++)
                free(st->lines[i]);
        free(st->lines);
        *st = (sim_stream) { .name = st->name };
}

/* Runs the stream's lines until it sleeps or runs dry. <0 on a failed command. */
static int stream_run(sim_node *s, sim_stream *st) {
        while (st->n_done < st->n_lines) {
                _cleanup_free_ char *where = NULL;
                sim_cmd c;
                long ms;
                int r;

                if (st->resume_at_ms > now_ms())
                        return 0;
                st->resume_at_ms = 0;
                if (asprintf(&where, "%s line %zu", st->name, st->n_done + 1) < 0)
                        return -ENOMEM;
                r = parse_command(st->lines[st->n_done], where, &c);
                st->n_done++;
                if (r < 0)
                        return r;
                if (r > 0)
                        continue;
                r = sim_execute(s, &c, where, &ms);
                sim_cmd_done(&c);
                if (r < 0)
                        return r;
                if (ms > 0)
                        st->resume_at_ms = now_ms() + ms;
        }
        return 0;
}

static int64_t stream_next_deadline(const sim_stream *st) {
        if (st->n_done < st->n_lines && st->resume_at_ms > 0)
                return st->resume_at_ms;
        return -1;
}

static int load_script(sim_node *s, const char *path) {
        _cleanup_free_ char *text = NULL;
        size_t n = 0;
        int r;

        r = read_file(path, &text);
        if (r < 0) {
                sim_log("cannot read script %s: %s", path, strerror(-r));
                return r;
        }
        /* keep empty lines so that line numbers in messages match the file */
        for (char *p = text, *nl; p && *p; p = nl ? nl + 1 : NULL) {
                _cleanup_free_ char *where = NULL;
                sim_cmd c;

                nl = strchr(p, '\n');
                if (nl)
                        *nl = '\0';
                stream_push(&s->script, p);
                if (asprintf(&where, "%s line %zu", s->script.name, ++n) < 0)
                        return -ENOMEM;
                r = parse_command(p, where, &c);       /* syntax errors before the child runs */
                if (r < 0)
                        return r;
                if (r == 0)
                        sim_cmd_done(&c);
        }
        return 0;
}

/* Reads what the FIFO has; complete lines go to the control stream. */
static int control_read(sim_node *s) {
        for (;;) {
                ssize_t n = read(s->control_fd, s->control_buf + s->control_len,
                                 sizeof(s->control_buf) - s->control_len - 1);
                char *start, *nl;

                if (n < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                return 0;
                        sim_log("reading the control FIFO failed: %s", strerror(errno));
                        return -errno;
                }
                if (n == 0)
                        return 0;
                s->control_len += (size_t) n;
                s->control_buf[s->control_len] = '\0';
                start = s->control_buf;
                while ((nl = strchr(start, '\n'))) {
                        *nl = '\0';
                        stream_push(&s->control, start);
                        start = nl + 1;
                }
                s->control_len -= (size_t) (start - s->control_buf);
                memmove(s->control_buf, start, s->control_len);
                if (s->control_len >= sizeof(s->control_buf) - 1) {
                        sim_log("control FIFO: line longer than %d bytes", LINE_MAX_LEN - 1);
                        return -E2BIG;
                }
        }
}

static int control_open(sim_node *s, const char *path) {
        struct stat sb;

        if (stat(path, &sb) < 0) {
                if (errno != ENOENT || mkfifo(path, 0600) < 0) {
                        sim_log("cannot create the control FIFO %s: %s", path, strerror(errno));
                        return -errno;
                }
        } else if (!S_ISFIFO(sb.st_mode)) {
                sim_log("%s exists and is not a FIFO", path);
                return -EINVAL;
        }
        s->control_fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (s->control_fd < 0) {
                sim_log("cannot open the control FIFO %s: %s", path, strerror(errno));
                return -errno;
        }
        /* our own writer keeps the FIFO from reporting EOF between the test's writers */
        s->control_keep_fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (s->control_keep_fd < 0) {
                sim_log("cannot open the control FIFO %s for writing: %s", path, strerror(errno));
                return -errno;
        }
        return 0;
}

/* -------------------------------------------------------------------------------------------- */
/* Setup */

static int load_fixture(sim_node *s, const char *path) {
        _cleanup_free_ char *text = NULL;
        size_t line = 1;
        char *p;
        int r;

        r = read_file(path, &text);
        if (r < 0) {
                sim_log("cannot read fixture %s: %s", path, strerror(-r));
                return r;
        }
        for (p = text; *p;) {
                _cleanup_free_ char *where = NULL, *record = NULL;
                _cleanup_(simdev_freep) simdev *d = NULL;
                GError *error = NULL;
                char *end;

                /* records are separated by blank lines */
                while (*p == '\n') {
                        p++;
                        line++;
                }
                if (!*p)
                        break;
                if (asprintf(&where, "%s:%zu", path, line) < 0)
                        return -ENOMEM;
                for (end = p; *end && !(end[0] == '\n' && (end[1] == '\n' || end[1] == '\0')); end++)
                        line += *end == '\n';
                if (*end)
                        end++;          /* keep the record's last newline */
                record = strndup(p, (size_t) (end - p));
                if (!record)
                        return -ENOMEM;
                p = end;
                line++;
                r = simdev_new_from_record(record, where, &d);
                if (r < 0)
                        return r;
                if (sim_find_devpath(s, d->devpath)) {
                        sim_log("%s: %s is declared twice", where, d->devpath);
                        return -EEXIST;
                }
                if (!umockdev_testbed_add_from_string(s->tb, record, &error)) {
                        sim_log("%s: umockdev rejected the record: %s", where, error->message);
                        g_error_free(error);
                        return -EINVAL;
                }
                sim_note_node(s, d, record);
                if (s->n_devs == s->devs_size) {
                        size_t n = s->devs_size ? s->devs_size * 2 : 64;
                        simdev **v = realloc(s->devs, n * sizeof(simdev *));

                        if (!v)
                                return -ENOMEM;
                        s->devs = v;
                        s->devs_size = n;
                }
                s->devs[s->n_devs++] = KDP_TAKE_PTR(d);
        }
        return 0;
}

static bool preload_active(void) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/maps", "re");
        char line[1024];

        if (!f)
                return false;
        while (fgets(line, sizeof(line), f))
                if (strstr(line, "libumockdev-preload"))
                        return true;
        return false;
}

static void sim_node_done(sim_node *s) {
        sim_fpga_done(s);
        for (size_t i = 0; i < s->n_devs; i++)
                simdev_free(s->devs[i]);
        free(s->devs);
        stream_done(&s->script);
        stream_done(&s->control);
        for (size_t i = 0; i < s->n_orphans_told; i++)
                free(s->orphans_told[i]);
        free(s->orphans_told);
        if (s->control_fd >= 0)
                (void) close(s->control_fd);
        if (s->control_keep_fd >= 0)
                (void) close(s->control_keep_fd);
        if (s->signal_fd >= 0)
                (void) close(s->signal_fd);
        if (s->kmsg_fd >= 0)
                (void) close(s->kmsg_fd);
        g_free(s->root);
        if (s->tb)
                g_object_unref(s->tb);  /* deletes the testbed directory */
        if (s->fme_handler)
                g_object_unref(s->fme_handler);
        pthread_mutex_destroy(&s->fpga_lock);
}

static int exit_status(int status) {
        if (WIFEXITED(status))
                return WEXITSTATUS(status);
        if (WIFSIGNALED(status))
                return 128 + WTERMSIG(status);
        return EXIT_SIM_ERROR;
}

/* Stops the child after an error of ours: SIGTERM, 2 s, SIGKILL. */
static void stop_child(sim_node *s) {
        int status;

        if (s->child <= 0)
                return;
        (void) kill(s->child, SIGTERM);
        for (int i = 0; i < 200; i++) {
                if (waitpid(s->child, &status, WNOHANG) == s->child) {
                        s->child = 0;
                        return;
                }
                sleep_ms(10);
        }
        (void) kill(s->child, SIGKILL);
        (void) waitpid(s->child, &status, 0);
        s->child = 0;
}

/* The fds open at start: what our caller meant the child to have. */
typedef struct fd_set_snapshot {
        int fds[256];
        size_t n;
} fd_set_snapshot;

static void fds_snapshot(fd_set_snapshot *snap) {
        _cleanup_closedir_ DIR *d = opendir("/proc/self/fd");
        struct dirent *e;

        snap->n = 0;
        if (!d)
                return;
        while ((e = readdir(d)) && snap->n < KDP_ELEMENTSOF(snap->fds))
                if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(d))
                        snap->fds[snap->n++] = atoi(e->d_name);
}

/*
 * Marks close-on-exec every fd opened since the snapshot that is not yet: umockdev keeps the
 * masters of its emulated char devices (ptys) open without FD_CLOEXEC.
 */
static void fds_cloexec_new(const fd_set_snapshot *snap) {
        _cleanup_closedir_ DIR *d = opendir("/proc/self/fd");
        struct dirent *e;

        if (!d)
                return;
        while ((e = readdir(d))) {
                int fd = atoi(e->d_name), flags;
                bool inherited = false;

                if (e->d_name[0] == '.' || fd == dirfd(d))
                        continue;
                for (size_t i = 0; i < snap->n; i++)
                        inherited |= snap->fds[i] == fd;
                flags = fcntl(fd, F_GETFD);
                if (!inherited && flags >= 0 && !(flags & FD_CLOEXEC))
                        (void) fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
        }
}

static int spawn_child(sim_node *s, char **argv, const sigset_t *old_mask) {
        pid_t parent = getpid();
        int pipefd[2], err = 0;
        ssize_t n;

        /* a CLOEXEC pipe tells us whether exec worked */
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return -errno;
        (void) fflush(stdout);
        (void) fflush(stderr);
        s->child = fork();
        if (s->child < 0) {
                err = -errno;
                (void) close(pipefd[0]);
                (void) close(pipefd[1]);
                return err;
        }
        if (s->child == 0) {
                (void) close(pipefd[0]);
                /* the child dies with us, even when we are SIGKILLed: it runs on our testbed */
                if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
                        _exit(EXIT_SIM_ERROR);
                (void) signal(SIGPIPE, SIG_DFL);
                (void) pthread_sigmask(SIG_SETMASK, old_mask, NULL);
                execvp(argv[0], argv);
                err = errno;
                (void) !write(pipefd[1], &err, sizeof(err));
                _exit(127);
        }
        (void) close(pipefd[1]);
        do
                n = read(pipefd[0], &err, sizeof(err));
        while (n < 0 && errno == EINTR);
        (void) close(pipefd[0]);
        if (n == sizeof(err)) {
                int status;

                (void) waitpid(s->child, &status, 0);
                s->child = 0;
                sim_log("cannot run '%s': %s", argv[0], strerror(err));
                return -err;
        }
        return 0;
}

static void usage(FILE *f) {
        fputs("usage: sim-node [-v] [-f] FIXTURE... [--script FILE] [--control FIFO] -- COMMAND [ARG...]\n"
              "Runs COMMAND on a umockdev testbed loaded from the FIXTURE record files and applies\n"
              "hot-plug events from FILE and from lines written to FIFO. See the top of sim-node.c.\n",
              f);
}

/*
 * SIGTERM, SIGINT and SIGHUP go on to the child. A child told to stop (SIGTERM, SIGINT) gets
 * CHILD_GRACE_MS to exit, a second such signal or the end of the grace gets it SIGKILL: we end
 * only with the child, and it must not outlive us.
 */
static void pass_signal(sim_node *s, int sig) {
        if (sig != SIGTERM && sig != SIGINT) {
                (void) kill(s->child, sig);
                return;
        }
        if (s->child_kill_at >= 0) {
                (void) kill(s->child, SIGKILL);
                return;
        }
        (void) kill(s->child, sig);
        s->child_kill_at = now_ms() + CHILD_GRACE_MS;
}

/* The main loop: commands, the control FIFO and signals until the child exits. */
static int run(sim_node *s) {
        int r;

        for (;;) {
                struct pollfd pfd[3] = {
                        { .fd = s->signal_fd, .events = POLLIN },
                        { .fd = s->pr_pipe[0], .events = POLLIN },
                        { .fd = s->control_fd, .events = POLLIN },
                };
                int64_t deadline = -1, t;
                int timeout = -1;

                r = stream_run(s, &s->script);
                if (r < 0)
                        return r;
                r = stream_run(s, &s->control);
                if (r < 0)
                        return r;
                t = stream_next_deadline(&s->script);
                if (t >= 0)
                        deadline = t;
                t = stream_next_deadline(&s->control);
                if (t >= 0 && (deadline < 0 || t < deadline))
                        deadline = t;
                t = s->fme_handler ? sim_fpga_run(s) : -1;
                if (t >= 0 && (deadline < 0 || t < deadline))
                        deadline = t;
                if (s->child_kill_at >= 0) {
                        if (now_ms() >= s->child_kill_at) {
                                sim_log("the child did not exit %d s after it was told to stop: SIGKILL",
                                        CHILD_GRACE_MS / 1000);
                                (void) kill(s->child, SIGKILL);
                                s->child_kill_at = INT64_MAX;
                        } else if (deadline < 0 || s->child_kill_at < deadline)
                                deadline = s->child_kill_at;
                }
                if (deadline >= 0) {
                        int64_t left = deadline - now_ms();

                        timeout = left < 0 ? 0 : (int) left;
                }
                r = poll(pfd, s->control_fd >= 0 ? 3 : 2, timeout);
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (pfd[0].revents & POLLIN) {
                        struct signalfd_siginfo si;

                        if (read(s->signal_fd, &si, sizeof(si)) == sizeof(si)) {
                                if (si.ssi_signo == SIGCHLD) {
                                        int status;

                                        if (waitpid(s->child, &status, WNOHANG) == s->child) {
                                                s->child = 0;
                                                return exit_status(status);
                                        }
                                } else
                                        pass_signal(s, (int) si.ssi_signo);
                        }
                }
                if (s->control_fd >= 0 && (pfd[2].revents & POLLIN)) {
                        r = control_read(s);
                        if (r < 0)
                                return r;
                }
        }
}

/* Takes the value of "--name VALUE" or "--name=VALUE" at argv[*i]; NULL if argv[*i] is not it. */
static const char *option_value(int argc, char **argv, int *i, const char *shortname, const char *name) {
        size_t len = strlen(name);

        if ((shortname && strcmp(argv[*i], shortname) == 0) || strcmp(argv[*i], name) == 0) {
                if (*i + 1 >= argc)
                        return NULL;
                return argv[++*i];
        }
        if (strncmp(argv[*i], name, len) == 0 && argv[*i][len] == '=')
                return argv[*i] + len + 1;
        return NULL;
}

int main(int argc, char **argv) {
        sim_node s = { .control_fd = -1, .control_keep_fd = -1, .signal_fd = -1, .kmsg_fd = -1,
                       .child_kill_at = -1, .script.name = "script", .control.name = "control",
                       .pr_pipe = { -1, -1 } };
        fd_set_snapshot inherited;
        const char *fixtures[64], *script = NULL, *control = NULL, *v;
        size_t n_fixtures = 0;
        sigset_t mask, old_mask;
        int i, r;

        for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
                if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
                        usage(stdout);
                        return 0;
                } else if (strcmp(argv[i], "-v") == 0 || strcmp(argv[i], "--verbose") == 0)
                        s.verbose = true;
                else if ((v = option_value(argc, argv, &i, NULL, "--script")))
                        script = v;
                else if ((v = option_value(argc, argv, &i, NULL, "--control")))
                        control = v;
                else if ((v = option_value(argc, argv, &i, "-f", "--fixture")) || argv[i][0] != '-') {
                        if (n_fixtures == KDP_ELEMENTSOF(fixtures)) {
                                sim_log("too many fixtures");
                                return EXIT_SIM_ERROR;
                        }
                        fixtures[n_fixtures++] = v ? v : argv[i];
                } else {
                        sim_log("unknown or incomplete option '%s'", argv[i]);
                        usage(stderr);
                        return EXIT_SIM_ERROR;
                }
        }
        if (i + 1 >= argc || n_fixtures == 0) {
                usage(stderr);
                return EXIT_SIM_ERROR;
        }
        argv += i + 1;

        if (!preload_active()) {
                sim_log("umockdev's preload library is not loaded; run sim-node through "
                        "tests/sim-node/sim-node (it sets LD_PRELOAD=libumockdev-preload.so.0)");
                return EXIT_SKIP;
        }

        pthread_mutex_init(&s.fpga_lock, NULL);
        s.queue_room = read_queue_room();
        fds_snapshot(&inherited);
        /* a reader of our stdout that went away must not kill us before the testbed is gone */
        (void) signal(SIGPIPE, SIG_IGN);

        /*
         * Block the signals we read through the signalfd before the testbed exists: umockdev
         * starts threads (for emulated char devices), and a thread that does not block SIGCHLD
         * would take it and leave the signalfd waiting for a child that is long gone.
         */
        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        (void) pthread_sigmask(SIG_BLOCK, &mask, &old_mask);

        s.tb = umockdev_testbed_new();      /* sets UMOCKDEV_DIR, which the child inherits */
        s.root = umockdev_testbed_get_root_dir(s.tb);
        /* the preload redirects these prefixes, the testbed's own files included: it would loop */
        static const char *const trapped[] = { "/dev/", "/sys/", "/proc/", "/run/udev/" };
        for (size_t j = 0; j < KDP_ELEMENTSOF(trapped); j++)
                if (strncmp(s.root, trapped[j], strlen(trapped[j])) == 0) {
                        sim_log("the testbed directory %s lies under %s, which umockdev redirects; "
                                "point TMPDIR elsewhere", s.root, trapped[j]);
                        sim_node_done(&s);
                        return EXIT_SIM_ERROR;
                }
        for (size_t j = 0; j < n_fixtures; j++) {
                r = load_fixture(&s, fixtures[j]);
                if (r < 0) {
                        sim_node_done(&s);
                        return EXIT_SIM_ERROR;
                }
        }
        qsort(s.devs, s.n_devs, sizeof(simdev *), cmp_devs);
        for (size_t j = 0; j < s.n_devs; j++) {
                r = sim_materialize(&s, s.devs[j]);
                if (r < 0) {
                        sim_node_done(&s);
                        return EXIT_SIM_ERROR;
                }
        }
        sim_hold_back_vfs(&s);
        sim_hold_back_vfio_groups(&s);
        r = sim_fpga_attach(&s);
        if (r < 0) {
                sim_node_done(&s);
                return EXIT_SIM_ERROR;
        }
        for (size_t j = 0; j < n_fixtures; j++) {
                r = load_files(&s, fixtures[j]);
                if (r < 0) {
                        sim_node_done(&s);
                        return EXIT_SIM_ERROR;
                }
        }
        if (s.verbose)
                sim_log("testbed %s: %zu devices", s.root, s.n_devs);
        if (script && load_script(&s, script) < 0) {
                sim_node_done(&s);
                return EXIT_SIM_ERROR;
        }
        if (control && control_open(&s, control) < 0) {
                sim_node_done(&s);
                return EXIT_SIM_ERROR;
        }

        s.signal_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        if (s.signal_fd < 0) {
                sim_log("signalfd failed: %s", strerror(errno));
                sim_node_done(&s);
                return EXIT_SIM_ERROR;
        }
        fds_cloexec_new(&inherited);
        if (spawn_child(&s, argv, &old_mask) < 0) {
                sim_node_done(&s);
                return EXIT_SIM_ERROR;
        }
        r = run(&s);
        if (r < 0) {
                stop_child(&s);
                sim_node_done(&s);
                return EXIT_SIM_ERROR;
        }
        sim_node_done(&s);
        return r;
}
