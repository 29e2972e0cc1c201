/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The CDI writer: Container Device Interface spec files made from the device
 * records of one resource, so that the container runtime can resolve the CDI
 * names the kubelet passes on from Allocate ("nvidia.com/gpu=GPU-…").
 *
 * Who owns what:
 *
 *   daemon (loop thread)        one kdp_cdi_specs per resource, NULL until the first sync
 *     └─ kdp_cdi_specs          what that resource last wrote: kind -> path + content
 *          └─ <cdi_dir>/kdp-<vendor>-<class>.json     one file per kind, 0644
 *
 *   The files are ours alone: kdp writes, replaces and removes only the paths
 *   it recorded in a kdp_cdi_specs. Nothing here reads other specs.
 *
 * When files are written:
 *
 *   kdp_cdi_sync()      after every scan that changed the resource's list (and
 *                       may be called after any scan: it is cheap when nothing
 *                       changed). Each kind's JSON is rebuilt in memory and the
 *                       file written (temp file, fsync, rename) only when the
 *                       content differs from what this kdp_cdi_specs last wrote,
 *                       or when the file is gone or has the wrong size. Kinds
 *                       that no longer appear in the list lose their file.
 *                       cdi_dir is created (0755, with parents) when a file is
 *                       first written.
 *   kdp_cdi_remove()    when the resource is retired (backend gone, resource
 *                       dropped from the config on SIGHUP): every file goes.
 *   kdp_cdi_specs_free() at shutdown: the files stay, because containers that
 *                       restart while kdpd is down still need them, and the
 *                       next kdpd rewrites them (same names, same content).
 *
 * Errors are logged here, with the path, and returned; none is fatal to the
 * caller, and the next sync retries what failed (a failed write forgets the
 * content, so the file is written again; a failed removal is remembered).
 *
 * What goes into a spec (cdiVersion "0.6.0"):
 * - one device per distinct CDI name of the kind, sorted by name; a name on
 *   several devices (replicas of one GPU) is described by the first of them
 *   in list order. Unhealthy devices stay: a restarting container may still
 *   need them.
 * - containerEdits from the record: deviceNodes (path = container path,
 *   hostPath, permissions), mounts (options nosuid,nodev,bind, "ro" first when
 *   read-only), env "KEY=VALUE". Empty arrays are left out.
 * - a name whose device has no node, mount or env is left out: CDI rejects a
 *   device with empty edits (and with it the whole spec), and such a name is
 *   taken to refer to a spec someone else wrote (e.g. nvidia-ctk's). A kind
 *   with no device left has no file.
 *
 * Not handled: two resources sharing a kind. Each resource's kdp_cdi_specs
 * would write the same file and the last writer wins; it does not happen in
 * practice (the GPU backend uses kind = resource name). Note that a spec for
 * the same kind written by another tool (same device names) makes the runtime
 * see conflicting devices; backends that rely on such a spec should give
 * their devices CDI names only, without nodes, mounts or env.
 *
 * Loop thread only; not thread-safe.
 */
#pragma once

#include <kdp/cleanup.h>

#include "device.h"

/* The CDI version the files declare. */
#define KDP_CDI_VERSION "0.6.0"

typedef struct kdp_cdi_specs kdp_cdi_specs;     /* what one resource last wrote: kind -> file + content */

/*
 * Makes the CDI spec files in `cdi_dir` match the CDI names of `list`: one
 * file per kind (the part before '='), written atomically only when its
 * content changed; files of kinds that no longer appear are removed. *specs
 * is created on first use. Returns 0 or the first error (each logged, never
 * fatal to the caller; the next sync retries).
 */
int kdp_cdi_sync(const char *cdi_dir, const kdp_device_list *list, kdp_cdi_specs **specs);

/* Removes every file *specs wrote and frees it (resource retired); *specs becomes NULL. */
void kdp_cdi_remove(const char *cdi_dir, kdp_cdi_specs **specs);

/* Frees without touching files (shutdown: specs stay for containers that restart). */
kdp_cdi_specs *kdp_cdi_specs_free(kdp_cdi_specs *s);
KDP_DEFINE_CLEANUP_FUNC(kdp_cdi_specs, kdp_cdi_specs_free)
