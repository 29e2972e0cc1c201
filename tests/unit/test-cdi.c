/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The CDI writer: the spec files a list of devices makes, read back as JSON, and when they are (re)written. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libfyaml.h>

#include <kdp/cleanup.h>

#include "cdi.h"
#include "device.h"

#include "kdp-test.h"

KDP_DEFINE_CLEANUP_FUNC(struct fy_document, fy_document_destroy)

/* ---- helpers ---- */

static char *make_dir(void) {
        char *dir = strdup("/tmp/kdp-test-cdi-XXXXXX");

        ck_assert_ptr_nonnull(dir);
        ck_assert_ptr_nonnull(mkdtemp(dir));
        return dir;
}

static char *join(const char *dir, const char *name) {
        char *p = NULL;

        ck_assert_int_ge(asprintf(&p, "%s/%s", dir, name), 0);
        return p;
}

static void add(kdp_device_list *l, const kdp_device_info *info) {
        kdp_device d;

        ck_assert_int_eq(kdp_device_from_info(info, NULL, &d), 0);
        ck_assert_int_eq(kdp_device_list_append(l, &d), 0);
}

static void list_init(kdp_device_list *l) {
        ck_assert_int_eq(kdp_device_list_init(l, "nvidia.com/gpu"), 0);
}

/* Three GPUs, IDs in another order than their CDI names, every kind of edit, one unhealthy. */
static void three_gpus(kdp_device_list *l) {
        list_init(l);
        add(l, &(kdp_device_info){
                .id = "gpu-1", .health = KDP_HEALTHY,
                .dev_nodes = (const kdp_dev_node[]){ { .host_path = "/dev/nvidia1" },
                                                     { "/dev/nvidiactl", "/dev/ctl", "rwm" }, { 0 } },
                .mounts = (const kdp_mount[]){ { "/usr/lib/nvidia", "/usr/lib/x86_64-linux-gnu/nvidia", 1 }, { 0 } },
                .envs = (const kdp_kv[]){ { "NVIDIA_VISIBLE_DEVICES", "1" }, { 0 } },
                .cdi_devices = (const char *const[]){ "nvidia.com/gpu=GPU-bbbb", NULL },
        });
        add(l, &(kdp_device_info){
                .id = "gpu-0", .health = KDP_UNHEALTHY, .health_reason = "Xid 79",
                .dev_nodes = (const kdp_dev_node[]){ { "/dev/nvidia0", "/dev/gpu0", "r" }, { 0 } },
                .mounts = (const kdp_mount[]){ { .host_path = "/opt/tools" }, { 0 } },
                .cdi_devices = (const char *const[]){ "nvidia.com/gpu=GPU-aaaa", NULL },
        });
        add(l, &(kdp_device_info){
                .id = "gpu-2", .health = KDP_HEALTHY,
                .envs = (const kdp_kv[]){ { "A", "1" }, { "B", "" }, { 0 } },
                .cdi_devices = (const char *const[]){ "nvidia.com/gpu=0", NULL },
        });
        kdp_device_list_sort(l);
}

/* Parses a spec strictly as JSON. */
static struct fy_document *load(const char *path) {
        const struct fy_parse_cfg cfg = { .flags = FYPCF_QUIET | FYPCF_JSON_FORCE };
        struct fy_document *doc = fy_document_build_from_file(&cfg, path);

        ck_assert_msg(doc, "%s is not JSON", path);
        return doc;
}

static struct fy_node *at(struct fy_document *doc, const char *path) {
        struct fy_node *n = fy_node_by_path(fy_document_root(doc), path, FY_NT, FYNWF_DONT_FOLLOW);

        ck_assert_msg(n, "no %s", path);
        return n;
}

static bool exists_at(struct fy_document *doc, const char *path) {
        return fy_node_by_path(fy_document_root(doc), path, FY_NT, FYNWF_DONT_FOLLOW) != NULL;
}

/* The JSON string at `path` (a quoted scalar, not a number or a boolean). */
static const char *str_at(struct fy_document *doc, const char *path) {
        struct fy_node *n = at(doc, path);

        ck_assert_int_eq(fy_node_get_type(n), FYNT_SCALAR);
        ck_assert_msg(fy_node_get_style(n) == FYNS_DOUBLE_QUOTED, "%s is not a JSON string", path);
        return fy_node_get_scalar0(n);
}

/* Items of the array, or keys of the object, at `path`. */
static int len_at(struct fy_document *doc, const char *path) {
        struct fy_node *n = at(doc, path);

        if (fy_node_get_type(n) == FYNT_SEQUENCE)
                return fy_node_sequence_item_count(n);
        ck_assert_int_eq(fy_node_get_type(n), FYNT_MAPPING);
        return fy_node_mapping_item_count(n);
}

/* Entries of `dir` but "." and "..", or -1 if it does not exist. */
static int count_entries(const char *dir) {
        _cleanup_closedir_ DIR *d = opendir(dir);
        struct dirent *de;
        int n = 0;

        if (!d) {
                ck_assert_int_eq(errno, ENOENT);
                return -1;
        }
        while ((de = readdir(d)))
                if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                        n++;
        return n;
}

static struct stat stat_of(const char *path) {
        struct stat st;

        ck_assert_msg(stat(path, &st) == 0, "no %s", path);
        return st;
}

static bool exists(const char *path) {
        struct stat st;

        return stat(path, &st) == 0;
}

/* ---- what goes into a spec ---- */

START_TEST(test_cdi_sync_writes_every_field_of_every_device) {
        _cleanup_(kdp_test_rm_rfp) char *dir = make_dir();
        _cleanup_free_ char *path = join(dir, "kdp-nvidia.com-gpu.json");
        _cleanup_(fy_document_destroyp) struct fy_document *doc = NULL;
        _cleanup_(kdp_cdi_specs_freep) kdp_cdi_specs *specs = NULL;
        _cleanup_free_ char *log = NULL, *expected = NULL;
        kdp_test_capture c;
        kdp_device_list l;
        const char *p;

        three_gpus(&l);
        kdp_test_capture_begin(&c);
        ck_assert_int_eq(kdp_cdi_sync(dir, &l, &specs), 0);
        log = kdp_test_capture_end(&c);
        ck_assert_ptr_nonnull(specs);

        p = log;
        ck_assert_int_ge(asprintf(&expected, "\"Wrote CDI spec\" path=\"%s\" devices=3", path), 0);
        kdp_test_expect_line(&p, 'I', "cdi.c", expected);
        ck_assert_str_eq(p, "");

        ck_assert_int_eq(count_entries(dir), 1);
        ck_assert_int_eq(stat_of(path).st_mode & 07777, 0644);
        ck_assert(S_ISREG(stat_of(path).st_mode));

        doc = load(path);
        ck_assert_int_eq(len_at(doc, "/"), 3);
        ck_assert_str_eq(str_at(doc, "/cdiVersion"), "0.6.0");
        ck_assert_str_eq(str_at(doc, "/kind"), "nvidia.com/gpu");
        ck_assert_int_eq(len_at(doc, "/devices"), 3);

        /* sorted by CDI name, not by ID: "0" < "GPU-aaaa" < "GPU-bbbb"; "0" stays a string */
        ck_assert_int_eq(len_at(doc, "/devices/0"), 2);
        ck_assert_str_eq(str_at(doc, "/devices/0/name"), "0");
        ck_assert_int_eq(len_at(doc, "/devices/0/containerEdits"), 1);         /* no empty arrays */
        ck_assert_int_eq(len_at(doc, "/devices/0/containerEdits/env"), 2);
        ck_assert_str_eq(str_at(doc, "/devices/0/containerEdits/env/0"), "A=1");
        ck_assert_str_eq(str_at(doc, "/devices/0/containerEdits/env/1"), "B=");

        /* the unhealthy one stays */
        ck_assert_str_eq(str_at(doc, "/devices/1/name"), "GPU-aaaa");
        ck_assert_int_eq(len_at(doc, "/devices/1/containerEdits"), 2);
        ck_assert_int_eq(len_at(doc, "/devices/1/containerEdits/deviceNodes"), 1);
        ck_assert_int_eq(len_at(doc, "/devices/1/containerEdits/deviceNodes/0"), 3);
        ck_assert_str_eq(str_at(doc, "/devices/1/containerEdits/deviceNodes/0/path"), "/dev/gpu0");
        ck_assert_str_eq(str_at(doc, "/devices/1/containerEdits/deviceNodes/0/hostPath"), "/dev/nvidia0");
        ck_assert_str_eq(str_at(doc, "/devices/1/containerEdits/deviceNodes/0/permissions"), "r");
        ck_assert_int_eq(len_at(doc, "/devices/1/containerEdits/mounts"), 1);
        ck_assert_int_eq(len_at(doc, "/devices/1/containerEdits/mounts/0"), 3);
        ck_assert_str_eq(str_at(doc, "/devices/1/containerEdits/mounts/0/hostPath"), "/opt/tools");
        ck_assert_str_eq(str_at(doc, "/devices/1/containerEdits/mounts/0/containerPath"), "/opt/tools");
        ck_assert_int_eq(len_at(doc, "/devices/1/containerEdits/mounts/0/options"), 3);
        ck_assert_str_eq(str_at(doc, "/devices/1/containerEdits/mounts/0/options/0"), "nosuid");
        ck_assert_str_eq(str_at(doc, "/devices/1/containerEdits/mounts/0/options/1"), "nodev");
        ck_assert_str_eq(str_at(doc, "/devices/1/containerEdits/mounts/0/options/2"), "bind");
        ck_assert(!exists_at(doc, "/devices/1/containerEdits/env"));

        ck_assert_str_eq(str_at(doc, "/devices/2/name"), "GPU-bbbb");
        ck_assert_int_eq(len_at(doc, "/devices/2/containerEdits"), 3);
        ck_assert_int_eq(len_at(doc, "/devices/2/containerEdits/deviceNodes"), 2);
        ck_assert_str_eq(str_at(doc, "/devices/2/containerEdits/deviceNodes/0/path"), "/dev/nvidia1");      /* no container path */
        ck_assert_str_eq(str_at(doc, "/devices/2/containerEdits/deviceNodes/0/hostPath"), "/dev/nvidia1");
        ck_assert_str_eq(str_at(doc, "/devices/2/containerEdits/deviceNodes/0/permissions"), "rw");         /* default */
        ck_assert_str_eq(str_at(doc, "/devices/2/containerEdits/deviceNodes/1/path"), "/dev/ctl");
        ck_assert_str_eq(str_at(doc, "/devices/2/containerEdits/deviceNodes/1/hostPath"), "/dev/nvidiactl");
        ck_assert_str_eq(str_at(doc, "/devices/2/containerEdits/deviceNodes/1/permissions"), "rwm");
        ck_assert_str_eq(str_at(doc, "/devices/2/containerEdits/mounts/0/hostPath"), "/usr/lib/nvidia");
        ck_assert_str_eq(str_at(doc, "/devices/2/containerEdits/mounts/0/containerPath"),
                         "/usr/lib/x86_64-linux-gnu/nvidia");
        ck_assert_int_eq(len_at(doc, "/devices/2/containerEdits/mounts/0/options"), 4);
        ck_assert_str_eq(str_at(doc, "/devices/2/containerEdits/mounts/0/options/0"), "ro");
        ck_assert_str_eq(str_at(doc, "/devices/2/containerEdits/mounts/0/options/1"), "nosuid");
        ck_assert_str_eq(str_at(doc, "/devices/2/containerEdits/mounts/0/options/2"), "nodev");
        ck_assert_str_eq(str_at(doc, "/devices/2/containerEdits/mounts/0/options/3"), "bind");
        ck_assert_int_eq(len_at(doc, "/devices/2/containerEdits/env"), 1);
        ck_assert_str_eq(str_at(doc, "/devices/2/containerEdits/env/0"), "NVIDIA_VISIBLE_DEVICES=1");

        kdp_device_list_done(&l);
}
END_TEST

START_TEST(test_cdi_sync_writes_one_file_per_kind) {
        _cleanup_(kdp_test_rm_rfp) char *dir = make_dir();
        _cleanup_free_ char *gpu = join(dir, "kdp-nvidia.com-gpu.json");
        _cleanup_free_ char *mig = join(dir, "kdp-nvidia.com-mig.json");
        _cleanup_(fy_document_destroyp) struct fy_document *a = NULL, *b = NULL;
        _cleanup_(kdp_cdi_specs_freep) kdp_cdi_specs *specs = NULL;
        kdp_device_list l;

        list_init(&l);
        add(&l, &(kdp_device_info){
                .id = "gpu-0",
                .dev_nodes = (const kdp_dev_node[]){ { .host_path = "/dev/nvidia0" }, { 0 } },
                .cdi_devices = (const char *const[]){ "nvidia.com/mig=0:1", "nvidia.com/gpu=0", NULL },
        });
        add(&l, &(kdp_device_info){
                .id = "gpu-1",
                .dev_nodes = (const kdp_dev_node[]){ { .host_path = "/dev/nvidia1" }, { 0 } },
                .cdi_devices = (const char *const[]){ "nvidia.com/gpu=1", NULL },
        });
        kdp_device_list_sort(&l);
        ck_assert_int_eq(kdp_cdi_sync(dir, &l, &specs), 0);
        ck_assert_int_eq(count_entries(dir), 2);

        a = load(gpu);
        ck_assert_str_eq(str_at(a, "/kind"), "nvidia.com/gpu");
        ck_assert_int_eq(len_at(a, "/devices"), 2);
        ck_assert_str_eq(str_at(a, "/devices/0/name"), "0");
        ck_assert_str_eq(str_at(a, "/devices/1/name"), "1");
        ck_assert_str_eq(str_at(a, "/devices/1/containerEdits/deviceNodes/0/hostPath"), "/dev/nvidia1");

        b = load(mig);
        ck_assert_str_eq(str_at(b, "/kind"), "nvidia.com/mig");
        ck_assert_int_eq(len_at(b, "/devices"), 1);
        ck_assert_str_eq(str_at(b, "/devices/0/name"), "0:1");
        ck_assert_str_eq(str_at(b, "/devices/0/containerEdits/deviceNodes/0/hostPath"), "/dev/nvidia0");
        kdp_device_list_done(&l);
}
END_TEST

START_TEST(test_cdi_sync_describes_a_shared_name_once_from_the_first_device) {
        _cleanup_(kdp_test_rm_rfp) char *dir = make_dir();
        _cleanup_free_ char *path = join(dir, "kdp-nvidia.com-gpu.json");
        _cleanup_(fy_document_destroyp) struct fy_document *doc = NULL;
        _cleanup_(kdp_cdi_specs_freep) kdp_cdi_specs *specs = NULL;
        char id[16], val[16];
        kdp_device_list l;

        /* four replicas of one GPU (time-slicing), each with its own env, in list order r-0 .. r-3 */
        list_init(&l);
        for (int i = 0; i < 4; i++) {
                snprintf(id, sizeof(id), "r-%d", i);
                snprintf(val, sizeof(val), "%d", i);
                add(&l, &(kdp_device_info){
                        .id = id,
                        .dev_nodes = (const kdp_dev_node[]){ { .host_path = "/dev/nvidia0" }, { 0 } },
                        .envs = (const kdp_kv[]){ { "REPLICA", val }, { 0 } },
                        .cdi_devices = (const char *const[]){ "nvidia.com/gpu=GPU-aaaa", NULL },
                });
        }
        kdp_device_list_sort(&l);
        ck_assert_int_eq(kdp_cdi_sync(dir, &l, &specs), 0);

        doc = load(path);
        ck_assert_int_eq(len_at(doc, "/devices"), 1);
        ck_assert_str_eq(str_at(doc, "/devices/0/name"), "GPU-aaaa");
        ck_assert_str_eq(str_at(doc, "/devices/0/containerEdits/env/0"), "REPLICA=0");
        kdp_device_list_done(&l);
}
END_TEST

START_TEST(test_cdi_sync_round_trips_quotes_backslashes_and_control_characters) {
        _cleanup_(kdp_test_rm_rfp) char *dir = make_dir();
        _cleanup_free_ char *path = join(dir, "kdp-example.com-widget.json");
        _cleanup_(fy_document_destroyp) struct fy_document *doc = NULL;
        _cleanup_(kdp_cdi_specs_freep) kdp_cdi_specs *specs = NULL;
        static const char value[] = "say \"hi\" \\ C:\\dir\\ tab\there\nnew line ünï {x: [1]} # not a comment";
        _cleanup_free_ char *expected = NULL;
        kdp_device_list l;

        list_init(&l);
        add(&l, &(kdp_device_info){
                .id = "w-0",
                .envs = (const kdp_kv[]){ { "QUOTED", value }, { "NUM", "123" }, { 0 } },
                .cdi_devices = (const char *const[]){ "example.com/widget=true", NULL },
        });
        ck_assert_int_eq(kdp_cdi_sync(dir, &l, &specs), 0);

        doc = load(path);
        ck_assert_int_ge(asprintf(&expected, "QUOTED=%s", value), 0);
        ck_assert_str_eq(str_at(doc, "/devices/0/containerEdits/env/0"), expected);
        ck_assert_str_eq(str_at(doc, "/devices/0/containerEdits/env/1"), "NUM=123");
        ck_assert_str_eq(str_at(doc, "/devices/0/name"), "true");      /* a string, not a boolean */
        kdp_device_list_done(&l);
}
END_TEST

START_TEST(test_cdi_sync_writes_nothing_for_devices_without_cdi_names_or_edits) {
        _cleanup_(kdp_test_rm_rfp) char *dir = make_dir();
        _cleanup_free_ char *sub = join(dir, "cdi");
        _cleanup_(kdp_cdi_specs_freep) kdp_cdi_specs *specs = NULL;
        kdp_device_list l;

        list_init(&l);
        add(&l, &(kdp_device_info){
                .id = "plain",
                .dev_nodes = (const kdp_dev_node[]){ { .host_path = "/dev/nvidia0" }, { 0 } },
        });
        /* a name with nothing to describe refers to someone else's spec: CDI would reject an empty device */
        add(&l, &(kdp_device_info){
                .id = "named",
                .cdi_devices = (const char *const[]){ "nvidia.com/gpu=all", NULL },
        });
        kdp_device_list_sort(&l);
        ck_assert_int_eq(kdp_cdi_sync(sub, &l, &specs), 0);
        ck_assert_ptr_nonnull(specs);
        ck_assert_int_eq(count_entries(sub), -1);       /* not even the directory */
        kdp_device_list_done(&l);

        /* an empty list too */
        list_init(&l);
        ck_assert_int_eq(kdp_cdi_sync(sub, &l, &specs), 0);
        ck_assert_int_eq(count_entries(sub), -1);
        kdp_device_list_done(&l);
}
END_TEST

START_TEST(test_cdi_sync_leaves_out_only_the_names_without_edits) {
        _cleanup_(kdp_test_rm_rfp) char *dir = make_dir();
        _cleanup_free_ char *path = join(dir, "kdp-nvidia.com-gpu.json");
        _cleanup_(fy_document_destroyp) struct fy_document *doc = NULL;
        _cleanup_(kdp_cdi_specs_freep) kdp_cdi_specs *specs = NULL;
        _cleanup_free_ char *log = NULL, *expected = NULL;
        kdp_test_capture c;
        kdp_device_list l;

        list_init(&l);
        add(&l, &(kdp_device_info){
                .id = "a", .cdi_devices = (const char *const[]){ "nvidia.com/gpu=all", NULL } });
        add(&l, &(kdp_device_info){
                .id = "b", .envs = (const kdp_kv[]){ { "X", "1" }, { 0 } },
                .cdi_devices = (const char *const[]){ "nvidia.com/gpu=1", NULL } });
        kdp_device_list_sort(&l);
        kdp_test_capture_begin(&c);
        ck_assert_int_eq(kdp_cdi_sync(dir, &l, &specs), 0);
        log = kdp_test_capture_end(&c);
        ck_assert_int_ge(asprintf(&expected, "\"Wrote CDI spec\" path=\"%s\" devices=1", path), 0);
        kdp_test_expect_line(&(const char *){ log }, 'I', "cdi.c", expected);

        doc = load(path);
        ck_assert_int_eq(len_at(doc, "/devices"), 1);
        ck_assert_str_eq(str_at(doc, "/devices/0/name"), "1");
        kdp_device_list_done(&l);
}
END_TEST

/* ---- when files are written and removed ---- */

START_TEST(test_cdi_sync_does_not_rewrite_an_unchanged_spec) {
        _cleanup_(kdp_test_rm_rfp) char *dir = make_dir();
        _cleanup_free_ char *path = join(dir, "kdp-nvidia.com-gpu.json");
        _cleanup_(kdp_cdi_specs_freep) kdp_cdi_specs *specs = NULL;
        _cleanup_free_ char *log = NULL;
        kdp_device_list l, same;
        kdp_test_capture c;
        struct stat before, after;

        three_gpus(&l);
        ck_assert_int_eq(kdp_cdi_sync(dir, &l, &specs), 0);
        before = stat_of(path);

        three_gpus(&same);      /* an equal list, built again (as after a rescan) */
        kdp_test_capture_begin(&c);
        ck_assert_int_eq(kdp_cdi_sync(dir, &same, &specs), 0);
        ck_assert_int_eq(kdp_cdi_sync(dir, &l, &specs), 0);
        log = kdp_test_capture_end(&c);
        ck_assert_str_eq(log, "");

        after = stat_of(path);
        ck_assert_uint_eq(after.st_ino, before.st_ino);         /* a rename would have made a new inode */
        ck_assert_int_eq(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
        ck_assert_int_eq(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
        ck_assert_int_eq(count_entries(dir), 1);
        kdp_device_list_done(&l);
        kdp_device_list_done(&same);
}
END_TEST

START_TEST(test_cdi_sync_rewrites_a_changed_spec) {
        _cleanup_(kdp_test_rm_rfp) char *dir = make_dir();
        _cleanup_free_ char *path = join(dir, "kdp-nvidia.com-gpu.json");
        _cleanup_(fy_document_destroyp) struct fy_document *doc = NULL;
        _cleanup_(kdp_cdi_specs_freep) kdp_cdi_specs *specs = NULL;
        kdp_device_list l;
        struct stat before, after;

        three_gpus(&l);
        ck_assert_int_eq(kdp_cdi_sync(dir, &l, &specs), 0);
        before = stat_of(path);
        kdp_device_list_done(&l);

        /* gpu-2 is gone: two devices left */
        list_init(&l);
        add(&l, &(kdp_device_info){
                .id = "gpu-0",
                .dev_nodes = (const kdp_dev_node[]){ { .host_path = "/dev/nvidia0" }, { 0 } },
                .cdi_devices = (const char *const[]){ "nvidia.com/gpu=GPU-aaaa", NULL },
        });
        add(&l, &(kdp_device_info){
                .id = "gpu-1",
                .dev_nodes = (const kdp_dev_node[]){ { .host_path = "/dev/nvidia1" }, { 0 } },
                .cdi_devices = (const char *const[]){ "nvidia.com/gpu=GPU-bbbb", NULL },
        });
        ck_assert_int_eq(kdp_cdi_sync(dir, &l, &specs), 0);
        after = stat_of(path);
        ck_assert_uint_ne(after.st_ino, before.st_ino);
        ck_assert_int_eq(after.st_mode & 07777, 0644);
        ck_assert_int_eq(count_entries(dir), 1);        /* no temp file left */

        doc = load(path);
        ck_assert_int_eq(len_at(doc, "/devices"), 2);
        ck_assert_str_eq(str_at(doc, "/devices/0/name"), "GPU-aaaa");
        ck_assert_str_eq(str_at(doc, "/devices/0/containerEdits/deviceNodes/0/path"), "/dev/nvidia0");
        ck_assert(!exists_at(doc, "/devices/0/containerEdits/mounts"));
        ck_assert_str_eq(str_at(doc, "/devices/1/name"), "GPU-bbbb");
        kdp_device_list_done(&l);
}
END_TEST

START_TEST(test_cdi_sync_rewrites_a_deleted_or_truncated_spec) {
        _cleanup_(kdp_test_rm_rfp) char *dir = make_dir();
        _cleanup_free_ char *path = join(dir, "kdp-nvidia.com-gpu.json");
        _cleanup_(kdp_cdi_specs_freep) kdp_cdi_specs *specs = NULL;
        _cleanup_free_ char *first = NULL, *again = NULL;
        kdp_device_list l;
        int fd;

        three_gpus(&l);
        ck_assert_int_eq(kdp_cdi_sync(dir, &l, &specs), 0);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        first = kdp_test_fd_text(fd);
        (void) close(fd);

        ck_assert_int_eq(unlink(path), 0);
        ck_assert_int_eq(kdp_cdi_sync(dir, &l, &specs), 0);
        ck_assert(exists(path));

        ck_assert_int_eq(truncate(path, 10), 0);
        ck_assert_int_eq(kdp_cdi_sync(dir, &l, &specs), 0);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        again = kdp_test_fd_text(fd);
        (void) close(fd);
        ck_assert_str_eq(again, first);
        kdp_device_list_done(&l);
}
END_TEST

START_TEST(test_cdi_sync_removes_the_file_of_a_kind_that_disappears) {
        _cleanup_(kdp_test_rm_rfp) char *dir = make_dir();
        _cleanup_free_ char *gpu = join(dir, "kdp-nvidia.com-gpu.json");
        _cleanup_free_ char *mig = join(dir, "kdp-nvidia.com-mig.json");
        _cleanup_(kdp_cdi_specs_freep) kdp_cdi_specs *specs = NULL;
        _cleanup_free_ char *log = NULL, *expected = NULL;
        kdp_test_capture c;
        kdp_device_list l;
        struct stat before;

        list_init(&l);
        add(&l, &(kdp_device_info){
                .id = "gpu-0",
                .dev_nodes = (const kdp_dev_node[]){ { .host_path = "/dev/nvidia0" }, { 0 } },
                .cdi_devices = (const char *const[]){ "nvidia.com/gpu=0", "nvidia.com/mig=0:0", NULL },
        });
        ck_assert_int_eq(kdp_cdi_sync(dir, &l, &specs), 0);
        ck_assert(exists(mig));
        before = stat_of(gpu);
        kdp_device_list_done(&l);

        list_init(&l);
        add(&l, &(kdp_device_info){
                .id = "gpu-0",
                .dev_nodes = (const kdp_dev_node[]){ { .host_path = "/dev/nvidia0" }, { 0 } },
                .cdi_devices = (const char *const[]){ "nvidia.com/gpu=0", NULL },
        });
        kdp_test_capture_begin(&c);
        ck_assert_int_eq(kdp_cdi_sync(dir, &l, &specs), 0);
        log = kdp_test_capture_end(&c);
        ck_assert_int_ge(asprintf(&expected, "\"Removed CDI spec\" path=\"%s\"", mig), 0);
        kdp_test_expect_line(&(const char *){ log }, 'I', "cdi.c", expected);

        ck_assert(!exists(mig));
        ck_assert_uint_eq(stat_of(gpu).st_ino, before.st_ino);  /* the other kind is untouched */
        ck_assert_int_eq(count_entries(dir), 1);
        kdp_device_list_done(&l);

        /* a list with no CDI name at all removes the last one */
        list_init(&l);
        ck_assert_int_eq(kdp_cdi_sync(dir, &l, &specs), 0);
        ck_assert_int_eq(count_entries(dir), 0);
        kdp_device_list_done(&l);
}
END_TEST

START_TEST(test_cdi_remove_removes_every_file_and_free_keeps_them) {
        _cleanup_(kdp_test_rm_rfp) char *dir = make_dir();
        _cleanup_free_ char *other = join(dir, "vendor.json");
        _cleanup_(kdp_cdi_specs_freep) kdp_cdi_specs *specs = NULL;
        kdp_device_list l;
        int fd;

        /* a spec someone else wrote is never touched */
        fd = open(other, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        ck_assert_int_ge(fd, 0);
        (void) close(fd);

        list_init(&l);
        add(&l, &(kdp_device_info){
                .id = "gpu-0",
                .dev_nodes = (const kdp_dev_node[]){ { .host_path = "/dev/nvidia0" }, { 0 } },
                .cdi_devices = (const char *const[]){ "nvidia.com/gpu=0", "nvidia.com/mig=0:0", NULL },
        });
        ck_assert_int_eq(kdp_cdi_sync(dir, &l, &specs), 0);
        ck_assert_int_eq(count_entries(dir), 3);

        /* shutdown: the files stay */
        specs = kdp_cdi_specs_free(specs);
        ck_assert_int_eq(count_entries(dir), 3);

        /* the next kdpd takes them over with the same names */
        ck_assert_int_eq(kdp_cdi_sync(dir, &l, &specs), 0);
        ck_assert_int_eq(count_entries(dir), 3);

        kdp_cdi_remove(dir, &specs);
        ck_assert_ptr_null(specs);
        ck_assert_int_eq(count_entries(dir), 1);
        ck_assert(exists(other));

        kdp_cdi_remove(dir, &specs);    /* NULL: nothing to do */
        kdp_device_list_done(&l);
}
END_TEST

/* ---- the directory, and errors ---- */

START_TEST(test_cdi_sync_creates_a_missing_directory) {
        _cleanup_(kdp_test_rm_rfp) char *dir = make_dir();
        _cleanup_free_ char *cdi = join(dir, "var/run/cdi");
        _cleanup_free_ char *path = join(cdi, "kdp-nvidia.com-gpu.json");
        _cleanup_(kdp_cdi_specs_freep) kdp_cdi_specs *specs = NULL;
        _cleanup_free_ char *var = join(dir, "var");
        mode_t saved = umask(077);
        kdp_device_list l;

        three_gpus(&l);
        ck_assert_int_eq(kdp_cdi_sync(cdi, &l, &specs), 0);
        (void) umask(saved);
        ck_assert(S_ISDIR(stat_of(cdi).st_mode));
        ck_assert_int_eq(stat_of(cdi).st_mode & 07777, 0755);
        ck_assert_int_eq(stat_of(var).st_mode & 07777, 0755);
        ck_assert_int_eq(stat_of(path).st_mode & 07777, 0644);
        kdp_device_list_done(&l);
}
END_TEST

START_TEST(test_cdi_sync_fails_cleanly_under_a_regular_file_and_retries) {
        _cleanup_(kdp_test_rm_rfp) char *dir = make_dir();
        _cleanup_free_ char *file = join(dir, "file");
        _cleanup_free_ char *cdi = join(dir, "file/cdi");
        _cleanup_free_ char *path = join(cdi, "kdp-nvidia.com-gpu.json");
        _cleanup_(kdp_cdi_specs_freep) kdp_cdi_specs *specs = NULL;
        _cleanup_free_ char *log = NULL, *expected = NULL;
        kdp_test_capture c;
        kdp_device_list l;
        int fd;

        fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        ck_assert_int_ge(fd, 0);
        (void) close(fd);

        three_gpus(&l);
        kdp_test_capture_begin(&c);
        ck_assert_int_eq(kdp_cdi_sync(cdi, &l, &specs), -ENOTDIR);
        log = kdp_test_capture_end(&c);
        ck_assert_int_ge(asprintf(&expected, "\"Failed to create CDI directory\" path=\"%s\" err=\"%s\"",
                                  cdi, strerror(ENOTDIR)), 0);
        kdp_test_expect_line(&(const char *){ log }, 'E', "cdi.c", expected);
        ck_assert_ptr_nonnull(specs);
        ck_assert_int_eq(count_entries(dir), 1);        /* only "file": no temp file anywhere */

        /* the obstacle goes: the next sync writes the spec */
        ck_assert_int_eq(unlink(file), 0);
        ck_assert_int_eq(kdp_cdi_sync(cdi, &l, &specs), 0);
        ck_assert(exists(path));
        kdp_device_list_done(&l);
}
END_TEST

START_TEST(test_cdi_sync_leaves_no_temp_file_when_the_rename_fails) {
        _cleanup_(kdp_test_rm_rfp) char *dir = make_dir();
        _cleanup_free_ char *path = join(dir, "kdp-nvidia.com-gpu.json");
        _cleanup_(kdp_cdi_specs_freep) kdp_cdi_specs *specs = NULL;
        _cleanup_free_ char *log = NULL;
        kdp_test_capture c;
        kdp_device_list l;

        /* a directory where the spec goes: rename() refuses to replace it */
        ck_assert_int_eq(mkdir(path, 0755), 0);
        three_gpus(&l);
        kdp_test_capture_begin(&c);
        ck_assert_int_eq(kdp_cdi_sync(dir, &l, &specs), -EISDIR);
        log = kdp_test_capture_end(&c);
        ck_assert_ptr_nonnull(strstr(log, "\"Failed to write CDI spec\""));
        ck_assert_int_eq(count_entries(dir), 1);
        ck_assert(S_ISDIR(stat_of(path).st_mode));

        /* retried on every sync: still failing, then written once the obstacle is gone */
        ck_assert_int_eq(kdp_cdi_sync(dir, &l, &specs), -EISDIR);
        ck_assert_int_eq(rmdir(path), 0);
        ck_assert_int_eq(kdp_cdi_sync(dir, &l, &specs), 0);
        ck_assert(S_ISREG(stat_of(path).st_mode));
        kdp_device_list_done(&l);
}
END_TEST

START_TEST(test_cdi_sync_refuses_a_second_kind_with_the_same_file_name) {
        _cleanup_(kdp_test_rm_rfp) char *dir = make_dir();
        _cleanup_free_ char *path = join(dir, "kdp-a-b-c.json");
        _cleanup_free_ char *other = join(dir, "kdp-z-z.json");
        _cleanup_(fy_document_destroyp) struct fy_document *doc = NULL;
        _cleanup_(kdp_cdi_specs_freep) kdp_cdi_specs *specs = NULL;
        _cleanup_free_ char *log = NULL, *expected = NULL;
        kdp_test_capture c;
        kdp_device_list l;

        /* first "a/b-c" alone has the file */
        list_init(&l);
        add(&l, &(kdp_device_info){
                .id = "x",
                .envs = (const kdp_kv[]){ { "X", "1" }, { 0 } },
                .cdi_devices = (const char *const[]){ "a/b-c=x", NULL },
        });
        ck_assert_int_eq(kdp_cdi_sync(dir, &l, &specs), 0);
        doc = load(path);
        ck_assert_str_eq(str_at(doc, "/kind"), "a/b-c");
        fy_document_destroy(doc);
        doc = NULL;
        kdp_device_list_done(&l);

        /* then "a-b/c" comes, and sorts first ('-' < '/'): it takes the file over, which is not removed */
        list_init(&l);
        add(&l, &(kdp_device_info){
                .id = "x",
                .envs = (const kdp_kv[]){ { "X", "1" }, { 0 } },
                .cdi_devices = (const char *const[]){ "a/b-c=x", "a-b/c=x", "z/z=x", NULL },
        });
        kdp_test_capture_begin(&c);
        ck_assert_int_eq(kdp_cdi_sync(dir, &l, &specs), -EEXIST);
        log = kdp_test_capture_end(&c);
        ck_assert_int_ge(asprintf(&expected, "\"Refused CDI kind: its file name is taken by another kind\" "
                                  "kind=\"a/b-c\" path=\"%s\" err=\"%s\"", path, strerror(EEXIST)), 0);
        kdp_test_expect_line(&(const char *){ log }, 'E', "cdi.c", expected);

        ck_assert_int_eq(count_entries(dir), 2);       /* the kind after the refused one is written */
        ck_assert(exists(other));
        doc = load(path);
        ck_assert_str_eq(str_at(doc, "/kind"), "a-b/c");

        /* all gone: each file is removed once */
        kdp_device_list_done(&l);
        list_init(&l);
        ck_assert_int_eq(kdp_cdi_sync(dir, &l, &specs), 0);
        ck_assert_int_eq(count_entries(dir), 0);
        kdp_device_list_done(&l);
}
END_TEST

static Suite *cdi_suite(void) {
        Suite *s = suite_create("cdi");
        TCase *tc;

        tc = tcase_create("content");
        tcase_add_test(tc, test_cdi_sync_writes_every_field_of_every_device);
        tcase_add_test(tc, test_cdi_sync_writes_one_file_per_kind);
        tcase_add_test(tc, test_cdi_sync_describes_a_shared_name_once_from_the_first_device);
        tcase_add_test(tc, test_cdi_sync_round_trips_quotes_backslashes_and_control_characters);
        tcase_add_test(tc, test_cdi_sync_writes_nothing_for_devices_without_cdi_names_or_edits);
        tcase_add_test(tc, test_cdi_sync_leaves_out_only_the_names_without_edits);
        suite_add_tcase(s, tc);

        tc = tcase_create("files");
        tcase_add_test(tc, test_cdi_sync_does_not_rewrite_an_unchanged_spec);
        tcase_add_test(tc, test_cdi_sync_rewrites_a_changed_spec);
        tcase_add_test(tc, test_cdi_sync_rewrites_a_deleted_or_truncated_spec);
        tcase_add_test(tc, test_cdi_sync_removes_the_file_of_a_kind_that_disappears);
        tcase_add_test(tc, test_cdi_remove_removes_every_file_and_free_keeps_them);
        suite_add_tcase(s, tc);

        tc = tcase_create("errors");
        tcase_add_test(tc, test_cdi_sync_creates_a_missing_directory);
        tcase_add_test(tc, test_cdi_sync_fails_cleanly_under_a_regular_file_and_retries);
        tcase_add_test(tc, test_cdi_sync_leaves_no_temp_file_when_the_rename_fails);
        tcase_add_test(tc, test_cdi_sync_refuses_a_second_kind_with_the_same_file_name);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return kdp_test_run(cdi_suite());
}
