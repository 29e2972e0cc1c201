/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The FPGA backend's internal interfaces (one section per module):
 *
 *   fpga.c      ops; the table of FPGA units seen since start; scan, health hysteresis,
 *               Allocate, PreStartContainer's afu_id check and reprogramming
 *   reprogram.c one port's programming as a job run without the lock; the cards being programmed
 *   config.c    params -> fpga_config; mode, allow/deny, model_resources, Xilinx names,
 *               program and bitstream_dir
 *   name.c      resource names: Intel's af-/region- encoding, AMD's <VBNV>-<timestamp>
 *   discover.c  sysfs -> fpga_discovery: Intel DFL and OPAE containers (FMEs, ports, the PR
 *               region's interface ID), Alveo user and management PFs (XRT); never opens a node
 *   health.c    the polled health signals of one FME, port or Alveo card
 *
 * Everything runs under the backend's lock (kdp/backend.h): scan on the loop thread, allocate
 * on the gRPC thread, pre_start on a worker thread. discover.c and health.c only read sysfs
 * (and stat /dev); they hold no state between calls.
 *
 * Programming (partial reconfiguration of a DFL port through its FME): program.c parses GBS
 * files and runs the PR; reprogram.c turns a port of the backend's table into a job for it and
 * keeps the set of cards being programmed. pre_start programs a port whose afu_id drifted from
 * what its resource promises from <bitstream_dir>/<interface_id>/<afu_id>.gbs, the job run
 * through kdp_backend_run_unlocked() (Allocate, scans and other PreStarts go on meanwhile); each
 * scan marks the units of a card being programmed Unhealthy with the reason "programming".
 * Without bitstream_dir a drifted port fails the container start, logged with the port and
 * both AFU IDs. XRT cards carry the loaded xclbin's logic UUID (fpga_xrt.logic_uuid) for a
 * check against a declared one.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kdp/backend.h>
#include <kdp/pci.h>

/* A canonical ID: lower-case hex without dashes; AFU IDs of OpenCL bitstreams have 40 digits. */
#define FPGA_ID_MAX 65
#define FPGA_SYSNAME_MAX 64
#define FPGA_DEVPATH_MAX 512
#define FPGA_NODE_MAX 256
#define FPGA_RESOURCE_MAX 128
#define FPGA_REASON_MAX 256
#define FPGA_VBNV_MAX 96

/* ---- config.c ---- */

typedef enum fpga_mode {
        FPGA_MODE_AF,                   /* one device per port, resource by interface + AFU ID */
        FPGA_MODE_REGION,               /* one device per FME: every port node */
        FPGA_MODE_REGIONDEVEL,          /* region, plus the FME node */
        _FPGA_MODE_MAX,
        _FPGA_MODE_INVALID = -EINVAL,
} fpga_mode;

typedef struct fpga_model_resource {
        uint16_t vendor, device;
        char *resource;
} fpga_model_resource;

/*
 * One `program` entry: the AFU a card should carry. `target` is a canonical PCI address
 * ("0000:3b:00.0": that card) or a canonical interface ID (every card whose PR region has it).
 * For an Alveo card (by address) `afu_id` is the logic UUID of the declared xclbin.
 */
typedef struct fpga_program_decl {
        char target[FPGA_ID_MAX];
        bool by_address;
        char afu_id[FPGA_ID_MAX];
} fpga_program_decl;

typedef struct fpga_config {
        const kdp_backend_ctx *ctx;     /* its params live as long as the ctx */
        fpga_mode mode;
        char **allow, **deny;           /* NULL-terminated filter entries */
        fpga_model_resource *models;
        size_t n_models;
        const char *xilinx_prefix;      /* "amd.com/" */
        bool xilinx_mgmt_node;          /* also hand out /dev/xclmgmt<N> */
        bool cdi;
        uint64_t busy_hold_ms;          /* how long a transient state (EBUSY, dev_offline) keeps health */
        const char *bitstream_dir;      /* <dir>/<interface_id>/<afu_id>.gbs; NULL: no programming */
        fpga_program_decl *programs;
        size_t n_programs;
} fpga_config;

/* Parses every param (fpga.c declares them); -EINVAL (logged with key, value and origin) for a bad one. */
int fpga_config_parse(const kdp_backend_ctx *ctx, fpga_config *ret);
void fpga_config_done(fpga_config *c);
/* "af", "region", "regiondevel" -> the mode; _FPGA_MODE_INVALID otherwise. */
fpga_mode fpga_config_mode_from_string(const char *s);
const char *fpga_config_mode_to_string(fpga_mode m);
/* Why allow/deny filter the PCI function out ("not in fpga.allow", "in fpga.deny"), NULL when they let it through. */
const char *fpga_config_filtered(const fpga_config *c, const kdp_pci_device *p);
/* The model_resources entry of the function's vendor:device, else NULL. */
const char *fpga_config_model_resource(const fpga_config *c, const kdp_pci_device *p);
/*
 * The AFU (or, for an Alveo card, the logic UUID) `program` declares for the card at
 * `pci_address` with PR region `interface_id` (may be NULL): its address entry first, else
 * its interface ID's; NULL when none.
 */
const char *fpga_config_declared(const fpga_config *c, const char *pci_address, const char *interface_id);

/* ---- name.c ---- */

/*
 * Canonical form of an ID as Intel writes it: surrounding white space trimmed, '-' removed,
 * lower case. -EINVAL unless the rest is 1..FPGA_ID_MAX-1 hex digits.
 */
int fpga_name_canonical_id(const char *text, char ret[FPGA_ID_MAX]);
/* True for an ID of only 'f's: what the driver reports when the firmware crashed. */
bool fpga_name_id_all_f(const char *id);
/*
 * "fpga.intel.com/af-<ifid[:3]>.<afuid[:3]>.<base64url, unpadded, of the bytes of ifid‖afuid>":
 * Intel's af resource name. Both IDs canonical with an even number of digits. -ENAMETOOLONG
 * when the name part would pass the kubelet's 63 characters.
 */
int fpga_name_af(const char *interface_id, const char *afu_id, char ret[FPGA_RESOURCE_MAX]);
/* "fpga.intel.com/region-<interface_id>"; -ENAMETOOLONG as above. */
int fpga_name_region(const char *interface_id, char ret[FPGA_RESOURCE_MAX]);
/*
 * "<prefix><vbnv>-<timestamp>" (prefix "amd.com/"): AMD's plugin's name of an Alveo shell.
 * -EINVAL when the VBNV holds a character a resource name cannot; -ENAMETOOLONG as above.
 */
int fpga_name_xilinx(const char *prefix, const char *vbnv, const char *timestamp, char ret[FPGA_RESOURCE_MAX]);

/* ---- discover.c ---- */

typedef enum fpga_layout {
        FPGA_LAYOUT_DFL,                /* in-tree dfl-pci: fpga_region/regionN/dfl-{fme,port}.N */
        FPGA_LAYOUT_OPAE,               /* out-of-tree intel-fpga: fpga/intel-fpga-dev.N/intel-fpga-{fme,port}.N */
        _FPGA_LAYOUT_MAX,
        _FPGA_LAYOUT_INVALID = -EINVAL,
} fpga_layout;

/* One FPGA management engine: one per Intel card, owner of the PR region(s). */
typedef struct fpga_fme {
        char name[FPGA_SYSNAME_MAX];            /* "dfl-fme.0", "intel-fpga-fme.0" */
        char devpath[FPGA_DEVPATH_MAX];         /* below <sysfs root>/devices/ */
        char devnode[FPGA_NODE_MAX];            /* host path under the dev root; "" without one */
        char pci_address[KDP_PCI_ADDRESS_MAX];
        fpga_layout layout;
        char interface_id[FPGA_ID_MAX];         /* canonical; "" when unreadable */
        int interface_err;                      /* 0, or the -errno of reading it */
        char interface_file[FPGA_DEVPATH_MAX + 128];    /* below devices/: the file it was read from */
} fpga_fme;

/* One port: the PR region's user side, with its AFU. */
typedef struct fpga_port {
        char name[FPGA_SYSNAME_MAX];            /* "dfl-port.0", "intel-fpga-port.0" */
        char devpath[FPGA_DEVPATH_MAX];
        char devnode[FPGA_NODE_MAX];
        /* the function it sits under: the PF, or a VF (docs/hardware-fpga.md §7) */
        char pci_address[KDP_PCI_ADDRESS_MAX];
        fpga_layout layout;
        int fme;                                /* index in fpga_discovery.fmes; -1 when none found */
        char afu_id[FPGA_ID_MAX];               /* canonical; "" when unreadable */
        int afu_err;                            /* 0, or the -errno of reading it (-EBUSY during PR) */
} fpga_port;

/* One Alveo card under XRT: its user PF (xocl) and, when on this host, its management PF. */
typedef struct fpga_xrt {
        char user[KDP_PCI_ADDRESS_MAX];
        char mgmt[KDP_PCI_ADDRESS_MAX];         /* "" without one (a VM) */
        char vbnv[FPGA_VBNV_MAX];               /* from rom.*; "" when unreadable */
        char timestamp[32];
        int rom_err;                            /* 0, or why rom.* could not be read (-ENOENT: none) */
        char logic_uuid[FPGA_ID_MAX];           /* the last of logic_uuids; "" when unreadable */
        char render_node[FPGA_NODE_MAX];        /* host path of the user PF's renderD*; "" without one */
        char mgmt_node[FPGA_NODE_MAX];          /* host path of /dev/xclmgmt<instance>; "" without one */
} fpga_xrt;

/* A PCI function looked at and not served, with why. */
typedef struct fpga_skip {
        char address[FPGA_SYSNAME_MAX];
        char reason[FPGA_REASON_MAX];
} fpga_skip;

typedef struct fpga_discovery {
        fpga_fme *fmes;
        size_t n_fmes;
        fpga_port *ports;
        size_t n_ports;
        fpga_xrt *xrts;
        size_t n_xrts;
        fpga_skip *skips;
        size_t n_skips;
} fpga_discovery;

/*
 * Walks down from every PCI function of `l`: DFL base regions and OPAE containers under
 * Intel functions, XRT markers (user_pf, mgmt_pf) or drivers under Alveo ones. A port finds
 * its FME in its own container, else in its PF's (a port on a VF). Functions that look like
 * FPGAs but yield nothing land in skips. Never opens a device node. 0 or -ENOMEM.
 */
int fpga_discover(const kdp_backend_ctx *ctx, const kdp_pci_list *l, fpga_discovery *ret);
void fpga_discover_done(fpga_discovery *d);
/* Re-reads a port's afu_id into port->afu_id/afu_err (PreStartContainer's check). */
void fpga_discover_read_afu(const kdp_backend_ctx *ctx, fpga_port *port);
/* Names in one sysfs directory. */
typedef struct fpga_discover_names {
        char (*names)[FPGA_SYSNAME_MAX];
        size_t n;
} fpga_discover_names;

/* The entries of <sysfs root>/devices/<rel> starting with `prefix`, in version order; none when absent. */
int fpga_discover_list(const kdp_backend_ctx *ctx, const char *rel, const char *prefix, fpga_discover_names *ret);
void fpga_discover_names_done(fpga_discover_names *l);
/* Reads <sysfs root>/devices/<rel>/<file> into *ret (free()), without the trailing newline. */
int fpga_discover_read_attr(const kdp_backend_ctx *ctx, const char *rel, const char *file, char **ret);
/* Whether a PCI function is one the backend looks at (Intel DFL/OPAE or Alveo vendor IDs). */
bool fpga_discover_is_candidate(const kdp_pci_device *p);

/* ---- health.c ---- */

/*
 * The result of one health read. `reason` is "" when healthy; `transient` is set when the
 * only problem is one that passes by itself (afu_id busy during PR or reset, XRT dev_offline,
 * rom.* gone during a reset): fpga.c keeps the previous health for fpga_config.busy_hold_ms.
 */
typedef struct fpga_health {
        char reason[FPGA_REASON_MAX];
        bool transient;
        char transient_reason[FPGA_REASON_MAX];
} fpga_health;

/* FME: its error masks, the PR region's interface ID all f, hwmon crit alarms, the manager's status. */
void fpga_health_fme(const kdp_backend_ctx *ctx, const fpga_fme *fme, fpga_health *h);
/* Port: afu_id unreadable (transient) or all f, errors/errors, the node missing. */
void fpga_health_port(const kdp_backend_ctx *ctx, const fpga_port *port, fpga_health *h);
/* Alveo: ready, dev_offline (transient), device_bad_state, mig_calibration, rom.* (transient), nodes. */
void fpga_health_xrt(const kdp_backend_ctx *ctx, const fpga_xrt *x, bool want_mgmt, fpga_health *h);
/* Appends "; "-joined text to a reason buffer. */
void fpga_health_add(char reason[FPGA_REASON_MAX], const char *text);

/* ---- reprogram.c ---- */

/*
 * One programming of a port from bitstream_dir, in two halves: fpga_reprogram_job_init() under
 * the backend's lock copies all it needs out of the backend's state; fpga_reprogram_job_run()
 * (a kdp_backend_unlocked_fn) then programs through program.c without the lock, touching only
 * the job. The job owns its strings.
 */
typedef struct fpga_reprogram_job {
        char card[KDP_PCI_ADDRESS_MAX];         /* the FME's PCI function: what is busy meanwhile */
        char port[FPGA_SYSNAME_MAX];
        char want[FPGA_ID_MAX], have[FPGA_ID_MAX];
        char *fme_node, *compat_path, *afu_path, *gbs_path;
        uint32_t port_id;
        char *reason;                           /* why fpga_reprogram_job_run() failed (free()) */
} fpga_reprogram_job;

/*
 * A job loading `want` into `port` (its afu_id read `port->afu_id`) through `fme`, from
 * <bitstream_dir>/<interface_id>/<want>.gbs. -EOPNOTSUPP for a card programming cannot reach
 * (OPAE driver, no FME node), -ENOENT when the bitstream file is missing, or the -errno of
 * reading the port's id; *ret_reason (free()) names the card, the port and both AFU IDs.
 */
int fpga_reprogram_job_init(const kdp_backend_ctx *ctx, const char *bitstream_dir, const fpga_fme *fme,
                            const fpga_port *port, const char *want, fpga_reprogram_job *ret, char **ret_reason);
/* fpga_program_run() for the job (blocks for the programming); its error in job->reason. */
int fpga_reprogram_job_run(void *job);
void fpga_reprogram_job_done(fpga_reprogram_job *j);

/* The cards being programmed now, by PCI address: one programming per card at a time. */
typedef struct fpga_reprogram_busy {
        char (*cards)[KDP_PCI_ADDRESS_MAX];
        size_t n;
} fpga_reprogram_busy;

bool fpga_reprogram_busy_has(const fpga_reprogram_busy *b, const char *card);
/* -EBUSY when the card is in already, else 0 or -ENOMEM. */
int fpga_reprogram_busy_add(fpga_reprogram_busy *b, const char *card);
void fpga_reprogram_busy_remove(fpga_reprogram_busy *b, const char *card);
void fpga_reprogram_busy_done(fpga_reprogram_busy *b);

/*
 * Programming at start and at reload runs each job on a thread of its own, so that no hook
 * waits for it; the scans reap the finished ones (on the loop thread, under the backend's lock).
 * The runner's lock guards only its list.
 */
typedef struct fpga_reprogram_thread fpga_reprogram_thread;
typedef struct fpga_reprogram_runner {
        pthread_mutex_t lock;
        fpga_reprogram_thread *threads;
        size_t n_running;                       /* not reaped yet */
} fpga_reprogram_runner;

int fpga_reprogram_runner_init(fpga_reprogram_runner *r);
/* Runs fpga_reprogram_job_run() on a new thread; takes *job (left zeroed) on success. */
int fpga_reprogram_start(fpga_reprogram_runner *r, fpga_reprogram_job *job);
/* One finished job into *ret_job (the caller's to fpga_reprogram_job_done()) and its result: 1; 0 when none finished. */
int fpga_reprogram_reap(fpga_reprogram_runner *r, fpga_reprogram_job *ret_job, int *ret_result);
/* Jobs started and not reaped. */
size_t fpga_reprogram_running(fpga_reprogram_runner *r);
/* Waits for every thread (a programming in progress ends first), then frees everything. */
void fpga_reprogram_runner_done(fpga_reprogram_runner *r);
