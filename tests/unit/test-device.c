/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kdp/cleanup.h>

#include "device.h"

#include "kdp-test.h"

/* ---- helpers ---- */

static void mkdir_p(const char *root, const char *rel) {
        _cleanup_free_ char *p = NULL;

        ck_assert_int_ge(asprintf(&p, "%s/%s", root, rel), 0);
        for (char *s = p + strlen(root) + 1; (s = strchr(s, '/')); s++) {
                *s = '\0';
                ck_assert(mkdir(p, 0755) == 0 || errno == EEXIST);
                *s = '/';
        }
        ck_assert(mkdir(p, 0755) == 0 || errno == EEXIST);
}

/* A sysfs fixture: one PCI device behind a root port, as /sys has it. */
static char *make_sysfs(void) {
        _cleanup_free_ char *link = NULL, *target = NULL;
        char *root = strdup("/tmp/kdp-test-device-XXXXXX");

        ck_assert_ptr_nonnull(root);
        ck_assert_ptr_nonnull(mkdtemp(root));
        mkdir_p(root, "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0");
        mkdir_p(root, "bus/pci/devices");
        ck_assert_int_ge(asprintf(&link, "%s/bus/pci/devices/0000:3b:00.0", root), 0);
        ck_assert_int_eq(symlink("../../../devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0", link), 0);
        free(link);
        ck_assert_int_ge(asprintf(&link, "%s/bus/pci/devices/0000:3c:00.0", root), 0);
        ck_assert_int_eq(symlink("../../../devices/pci0000:3a/0000:3a:00.0/gone", link), 0);
        free(link);
        /* links of other shapes than sysfs's own, resolved as realpath() does */
        ck_assert_int_ge(asprintf(&link, "%s/bus/pci/devices/0000:3d:00.0", root), 0);
        ck_assert_int_eq(symlink("../../../devices/pci0000:3a/0000:3a:00.0/../0000:3a:00.0/0000:3b:00.0", link), 0);
        free(link);
        ck_assert_int_ge(asprintf(&link, "%s/bus/pci/devices/0000:3e:00.0", root), 0);
        ck_assert_int_ge(asprintf(&target, "%s/devices/pci0000:3a/0000:3a:00.0", root), 0);
        ck_assert_int_eq(symlink(target, link), 0);
        return root;
}

static void device_from(const kdp_device_info *info, kdp_device *ret) {
        ck_assert_int_eq(kdp_device_from_info(info, NULL, ret), 0);
}

static void list_add(kdp_device_list *l, const char *id) {
        kdp_device d;

        device_from(&(kdp_device_info) { .id = id }, &d);
        ck_assert_int_eq(kdp_device_list_append(l, &d), 0);
        ck_assert_ptr_null(d.id);
}

/* ---- IDs ---- */

START_TEST(test_device_id_is_valid_accepts_printable_ascii_up_to_63) {
        char id[65];

        ck_assert(kdp_device_id_is_valid("0"));
        ck_assert(kdp_device_id_is_valid("GPU-8d6f0d2c-aa0b-4b8e-bd63-7c3a2fd0e0f1"));
        ck_assert(kdp_device_id_is_valid("0000:3b:00.0"));
        ck_assert(kdp_device_id_is_valid("!\"#$%&'()*+,-./~"));
        memset(id, 'a', 63);
        id[63] = '\0';
        ck_assert(kdp_device_id_is_valid(id));
}
END_TEST

START_TEST(test_device_id_is_valid_rejects_empty_long_spaced_and_non_ascii) {
        char id[65];

        memset(id, 'a', 64);
        id[64] = '\0';
        ck_assert(!kdp_device_id_is_valid(id));
        ck_assert(!kdp_device_id_is_valid(""));
        ck_assert(!kdp_device_id_is_valid(NULL));
        ck_assert(!kdp_device_id_is_valid("gpu 0"));
        ck_assert(!kdp_device_id_is_valid("gpu\t0"));
        ck_assert(!kdp_device_id_is_valid("gpu\n"));
        ck_assert(!kdp_device_id_is_valid("gpu\x7f"));
        ck_assert(!kdp_device_id_is_valid("gp\xc3\xbc"));
}
END_TEST

/* ---- resource names: docs/kubelet.md §1.3, every row, plus the length limits ---- */

static char long_prefix_ok[300], long_prefix_bad[300], long_name_ok[300], long_name_bad[300];

static void make_long_names(void) {
        /* 244 = 253 - strlen("requests."): labels of 60 and dots, ending at exactly 244 */
        char prefix[246];

        memset(prefix, 'a', 244);
        for (int i = 60; i < 243; i += 61)
                prefix[i] = '.';
        prefix[244] = '\0';
        ck_assert_uint_eq(strlen(prefix), 244);
        (void) snprintf(long_prefix_ok, sizeof(long_prefix_ok), "%s/gpu", prefix);
        prefix[244] = 'b';
        prefix[245] = '\0';
        (void) snprintf(long_prefix_bad, sizeof(long_prefix_bad), "%s/gpu", prefix);

        (void) snprintf(long_name_ok, sizeof(long_name_ok), "example.com/%063d", 7);
        (void) snprintf(long_name_bad, sizeof(long_name_bad), "example.com/%064d", 7);
}

static const struct {
        const char *name;
        bool valid;
} resource_table[] = {
        /* the table of docs/kubelet.md §1.3 */
        { "nvidia.com/gpu", true },
        { "example.com/GPU_x.1", true },
        { "gpu", false },
        { "kubernetes.io/gpu", false },
        { "foo.kubernetes.io/gpu", false },
        { "requests.example.com/gpu", false },
        { "Example.com/gpu", false },
        { "example_com/gpu", false },
        { "example.com/", false },
        { "/gpu", false },
        { "a.com/b/c", false },
        { "example.com/-gpu", false },
        /* around the rules */
        { "example.com/g", true },
        { "example/gpu", true },
        { "kubernetes.io.example.com/gpu", true },      /* "kubernetes.io/" does not occur */
        { "example.com/requests.gpu", true },
        { "xkubernetes.io/gpu", false },
        { "example.com/kubernetes.io/gpu", false },
        { "example.com/gpu-", false },
        { "example.com/gpu_", false },
        { "example.com/g.p-u_0", true },
        { "example.com/gp u", false },
        { "-example.com/gpu", false },
        { "example-.com/gpu", false },
        { "example..com/gpu", false },
        { ".example.com/gpu", false },
        { "example.com./gpu", false },
        { "ex-ample.com/gpu", true },
        { "1.2.3/gpu", true },
        { "", false },
};

START_TEST(test_device_resource_name_is_valid_follows_kubelet_table) {
        ck_assert_msg(kdp_device_resource_name_is_valid(resource_table[_i].name) == resource_table[_i].valid,
                      "'%s' should be %s", resource_table[_i].name, resource_table[_i].valid ? "valid" : "invalid");
}
END_TEST

START_TEST(test_device_resource_name_is_valid_limits_prefix_to_244_and_name_to_63) {
        make_long_names();
        ck_assert(kdp_device_resource_name_is_valid(long_prefix_ok));
        ck_assert(!kdp_device_resource_name_is_valid(long_prefix_bad));
        ck_assert(kdp_device_resource_name_is_valid(long_name_ok));
        ck_assert(!kdp_device_resource_name_is_valid(long_name_bad));
        ck_assert(!kdp_device_resource_name_is_valid(NULL));
}
END_TEST

/* ---- CDI names (container-device-interface pkg/parser rules) ---- */

static const struct {
        const char *name;
        bool valid;
} cdi_table[] = {
        { "vendor.com/class=name", true },
        { "nvidia.com/gpu=0", true },
        { "nvidia.com/gpu=all", true },
        { "a/b=c", true },
        { "Vendor_x-1.io/class.sub_x-y=dev:0.1-a_b", true },
        { "vendor.com/class=0", true },
        { "vendor.com/class", false },
        { "vendor.com=name", false },
        { "/class=name", false },
        { "vendor.com/=name", false },
        { "vendor.com/class=", false },
        { "=name", false },
        { "1vendor.com/class=name", false },
        { "vendor.com-/class=name", false },
        { "vendor.com/1class=name", false },
        { "vendor.com/class-=name", false },
        { "vendor.com/cl/ass=name", false },
        { "vendor.com/class=-name", false },
        { "vendor.com/class=name:", false },
        { "vendor.com/class=na=me", false },
        { "vendor.com/class=na me", false },
        { "vendor.com/class=na/me", false },
        { "", false },
};

START_TEST(test_device_cdi_name_is_valid_follows_cdi_parser) {
        ck_assert_msg(kdp_device_cdi_name_is_valid(cdi_table[_i].name) == cdi_table[_i].valid,
                      "'%s' should be %s", cdi_table[_i].name, cdi_table[_i].valid ? "valid" : "invalid");
}
END_TEST

START_TEST(test_device_cdi_name_is_valid_rejects_null) {
        ck_assert(!kdp_device_cdi_name_is_valid(NULL));
}
END_TEST

/* ---- kdp_device_from_info ---- */

START_TEST(test_device_from_info_copies_everything_and_resolves_defaults) {
        _cleanup_(kdp_device_done) kdp_device d = {};
        char host[] = "/dev/widget0", key[] = "WIDGET";

        ck_assert_int_eq(kdp_device_from_info(&(kdp_device_info) {
                .id = "widget-0",
                .health = KDP_HEALTHY,
                .health_reason = "ignored while healthy",
                .numa_nodes = { 1, 3 },
                .n_numa_nodes = 2,
                .pci_address = "0000:3b:00.0",
                .dev_nodes = (const kdp_dev_node[]) {
                        { .host_path = host },
                        { .host_path = "/dev/widget-ctl", .container_path = "/dev/ctl", .permissions = "rwm" },
                        { 0 },
                },
                .mounts = (const kdp_mount[]) {
                        { .host_path = "/opt/widget" },
                        { .host_path = "/var/lib/w", .container_path = "/w", .read_only = 7 },
                        { 0 },
                },
                .envs = (const kdp_kv[]) { { key, "0" }, { "EMPTY", NULL }, { 0 } },
                .annotations = (const kdp_kv[]) { { "example.com/slot", "3" }, { 0 } },
                .cdi_devices = (const char *const[]) { "example.com/widget=0", NULL },
        }, NULL, &d), 0);

        /* the copy does not borrow the caller's storage */
        host[1] = 'X';
        key[0] = 'X';

        ck_assert_str_eq(d.id, "widget-0");
        ck_assert_int_eq(d.health, KDP_HEALTHY);
        ck_assert_ptr_null(d.health_reason);
        ck_assert_uint_eq(d.n_numa_nodes, 2);
        ck_assert_int_eq(d.numa_nodes[0], 1);
        ck_assert_int_eq(d.numa_nodes[1], 3);
        ck_assert(kdp_device_has_topology(&d));
        ck_assert_str_eq(d.pci_address, "0000:3b:00.0");
        ck_assert_ptr_null(d.pci_path);

        ck_assert_uint_eq(d.n_dev_nodes, 2);
        ck_assert_str_eq(d.dev_nodes[0].host_path, "/dev/widget0");
        ck_assert_str_eq(d.dev_nodes[0].container_path, "/dev/widget0");
        ck_assert_str_eq(d.dev_nodes[0].permissions, "rw");
        ck_assert_str_eq(d.dev_nodes[1].host_path, "/dev/widget-ctl");
        ck_assert_str_eq(d.dev_nodes[1].container_path, "/dev/ctl");
        ck_assert_str_eq(d.dev_nodes[1].permissions, "rwm");

        ck_assert_uint_eq(d.n_mounts, 2);
        ck_assert_str_eq(d.mounts[0].host_path, "/opt/widget");
        ck_assert_str_eq(d.mounts[0].container_path, "/opt/widget");
        ck_assert_int_eq(d.mounts[0].read_only, 0);
        ck_assert_str_eq(d.mounts[1].container_path, "/w");
        ck_assert_int_eq(d.mounts[1].read_only, 1);

        ck_assert_uint_eq(d.n_envs, 2);
        ck_assert_str_eq(d.envs[0].key, "WIDGET");
        ck_assert_str_eq(d.envs[0].value, "0");
        ck_assert_str_eq(d.envs[1].key, "EMPTY");
        ck_assert_str_eq(d.envs[1].value, "");
        ck_assert_uint_eq(d.n_annotations, 1);
        ck_assert_str_eq(d.annotations[0].key, "example.com/slot");
        ck_assert_str_eq(d.annotations[0].value, "3");
        ck_assert_uint_eq(d.n_cdi_devices, 1);
        ck_assert_str_eq(d.cdi_devices[0], "example.com/widget=0");
}
END_TEST

START_TEST(test_device_from_info_keeps_reason_of_unhealthy_device) {
        _cleanup_(kdp_device_done) kdp_device d = {}, e = {};

        device_from(&(kdp_device_info) { .id = "w0", .health = KDP_UNHEALTHY, .health_reason = "link down" }, &d);
        ck_assert_int_eq(d.health, KDP_UNHEALTHY);
        ck_assert_str_eq(d.health_reason, "link down");
        ck_assert(!kdp_device_has_topology(&d));

        device_from(&(kdp_device_info) { .id = "w1", .health = KDP_UNHEALTHY }, &e);
        ck_assert_ptr_null(e.health_reason);
        ck_assert_uint_eq(e.n_dev_nodes + e.n_mounts + e.n_envs + e.n_annotations + e.n_cdi_devices, 0);
        ck_assert_ptr_null(e.dev_nodes);
}
END_TEST

START_TEST(test_device_from_info_accepts_eight_numa_nodes_and_empty_arrays) {
        _cleanup_(kdp_device_done) kdp_device d = {};

        device_from(&(kdp_device_info) {
                .id = "w0",
                .numa_nodes = { 0, 1, 2, 3, 4, 5, 6, 7 },
                .n_numa_nodes = KDP_DEVICE_NUMA_MAX,
                .dev_nodes = (const kdp_dev_node[]) { { 0 } },
                .envs = (const kdp_kv[]) { { 0 } },
                .cdi_devices = (const char *const[]) { NULL },
        }, &d);
        ck_assert_uint_eq(d.n_numa_nodes, 8);
        ck_assert_int_eq(d.numa_nodes[7], 7);
        ck_assert_uint_eq(d.n_dev_nodes, 0);
        ck_assert_uint_eq(d.n_envs, 0);
        ck_assert_uint_eq(d.n_cdi_devices, 0);
}
END_TEST

#define A8 "aaaaaaaa"

/* file scope: the compound literals in these tables have static storage */
static const kdp_device_info bad_infos[] = {
        { .id = NULL },
        { .id = "" },
        { .id = A8 A8 A8 A8 A8 A8 A8 A8 },      /* 64 */
        { .id = "w 0" },
        { .id = "w0", .health = _KDP_HEALTH_MAX },
        { .id = "w0", .health = (kdp_health) -1 },
        { .id = "w0", .n_numa_nodes = KDP_DEVICE_NUMA_MAX + 1 },
        { .id = "w0", .numa_nodes = { 0, -1 }, .n_numa_nodes = 2 },
        { .id = "w0", .dev_nodes = (const kdp_dev_node[]) { { .host_path = "dev/w0" }, { 0 } } },
        { .id = "w0", .dev_nodes = (const kdp_dev_node[]) { { .container_path = "/dev/w0" }, { 0 } } },
        { .id = "w0", .dev_nodes = (const kdp_dev_node[]) { { "/dev/w0", "dev/w0", NULL }, { 0 } } },
        { .id = "w0", .dev_nodes = (const kdp_dev_node[]) { { "/dev/w0", NULL, "" }, { 0 } } },
        { .id = "w0", .dev_nodes = (const kdp_dev_node[]) { { "/dev/w0", NULL, "rwx" }, { 0 } } },
        { .id = "w0", .dev_nodes = (const kdp_dev_node[]) { { "/dev/w0", NULL, "rr" }, { 0 } } },
        { .id = "w0", .dev_nodes = (const kdp_dev_node[]) { { .host_path = "/dev/ok" }, { .host_path = "rel" }, { 0 } } },
        { .id = "w0", .mounts = (const kdp_mount[]) { { .host_path = "opt" }, { 0 } } },
        { .id = "w0", .mounts = (const kdp_mount[]) { { .host_path = "/opt", .container_path = "opt" }, { 0 } } },
        { .id = "w0", .mounts = (const kdp_mount[]) { { .read_only = 1 }, { 0 } } },
        { .id = "w0", .envs = (const kdp_kv[]) { { "", "x" }, { 0 } } },
        { .id = "w0", .envs = (const kdp_kv[]) { { "A=B", "x" }, { 0 } } },
        { .id = "w0", .envs = (const kdp_kv[]) { { NULL, "x" }, { 0 } } },
        { .id = "w0", .annotations = (const kdp_kv[]) { { "", "x" }, { 0 } } },
        { .id = "w0", .cdi_devices = (const char *const[]) { "example.com/widget", NULL } },
        { .id = "w0", .pci_address = "3b:00.0" },
        { .id = "w0", .pci_address = "0000:3b:00.8" },
        { .id = "w0", .pci_address = "0000:3b:00.0/../.." },
        { .id = "w0", .pci_address = "" },
};

START_TEST(test_device_from_info_rejects_invalid_record_without_writing_ret) {
        kdp_device d;

        memset(&d, 0x5a, sizeof(d));
        ck_assert_int_eq(kdp_device_from_info(&bad_infos[_i], NULL, &d), -EINVAL);
        for (size_t i = 0; i < sizeof(d); i++)
                ck_assert_int_eq(((unsigned char *) &d)[i], 0x5a);
}
END_TEST

START_TEST(test_device_from_info_rejects_null_arguments) {
        kdp_device d;

        ck_assert_int_eq(kdp_device_from_info(NULL, NULL, &d), -EINVAL);
        ck_assert_int_eq(kdp_device_from_info(&(kdp_device_info) { .id = "w0" }, NULL, NULL), -EINVAL);
}
END_TEST

START_TEST(test_device_from_info_resolves_pci_path_below_devices) {
        _cleanup_(kdp_test_rm_rfp) char *sysfs = make_sysfs();
        _cleanup_(kdp_device_done) kdp_device d = {}, e = {}, f = {}, g = {}, h = {}, i = {}, j = {};
        _cleanup_free_ char *slash = NULL;

        ck_assert_int_eq(kdp_device_from_info(&(kdp_device_info) { .id = "w0", .pci_address = "0000:3b:00.0" },
                                              sysfs, &d), 0);
        ck_assert_str_eq(d.pci_path, "pci0000:3a/0000:3a:00.0/0000:3b:00.0");

        /* a link with ".." in it, an absolute one: their real paths */
        ck_assert_int_eq(kdp_device_from_info(&(kdp_device_info) { .id = "w4", .pci_address = "0000:3d:00.0" },
                                              sysfs, &i), 0);
        ck_assert_str_eq(i.pci_path, "pci0000:3a/0000:3a:00.0/0000:3b:00.0");
        ck_assert_int_eq(kdp_device_from_info(&(kdp_device_info) { .id = "w5", .pci_address = "0000:3e:00.0" },
                                              sysfs, &j), 0);
        ck_assert_str_eq(j.pci_path, "pci0000:3a/0000:3a:00.0");

        /* a root given with a trailing slash resolves the same */
        ck_assert_int_ge(asprintf(&slash, "%s/", sysfs), 0);
        ck_assert_int_eq(kdp_device_from_info(&(kdp_device_info) { .id = "w0", .pci_address = "0000:3b:00.0" },
                                              slash, &e), 0);
        ck_assert_str_eq(e.pci_path, "pci0000:3a/0000:3a:00.0/0000:3b:00.0");
        ck_assert(kdp_device_equal(&d, &e));

        /* absent, dangling or unrequested: NULL and no error */
        ck_assert_int_eq(kdp_device_from_info(&(kdp_device_info) { .id = "w1", .pci_address = "0000:99:00.0" },
                                              sysfs, &f), 0);
        ck_assert_str_eq(f.pci_address, "0000:99:00.0");
        ck_assert_ptr_null(f.pci_path);
        ck_assert_int_eq(kdp_device_from_info(&(kdp_device_info) { .id = "w2", .pci_address = "0000:3c:00.0" },
                                              sysfs, &g), 0);
        ck_assert_ptr_null(g.pci_path);
        ck_assert_int_eq(kdp_device_from_info(&(kdp_device_info) { .id = "w3" }, sysfs, &h), 0);
        ck_assert_ptr_null(h.pci_address);
        ck_assert_ptr_null(h.pci_path);
}
END_TEST

/* ---- equality ---- */

#define BASE_INFO                                                                          \
        .id = "w0", .health = KDP_UNHEALTHY, .health_reason = "hot", .numa_nodes = { 1 },   \
        .n_numa_nodes = 1, .pci_address = "0000:3b:00.0",                                  \
        .dev_nodes = (const kdp_dev_node[]) { { "/dev/w0", NULL, NULL }, { 0 } },          \
        .mounts = (const kdp_mount[]) { { "/opt/w", NULL, 0 }, { 0 } },                    \
        .envs = (const kdp_kv[]) { { "W", "0" }, { 0 } },                                  \
        .annotations = (const kdp_kv[]) { { "a", "b" }, { 0 } },                           \
        .cdi_devices = (const char *const[]) { "example.com/w=0", NULL }

static const kdp_device_info base_info = { BASE_INFO };

/* Each differs from base_info in one field: later designators override BASE_INFO's. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverride-init"
static const kdp_device_info variant_infos[] = {
        { BASE_INFO, .id = "w1" },
        { BASE_INFO, .health = KDP_HEALTHY },
        { BASE_INFO, .health_reason = "cold" },
        { BASE_INFO, .health_reason = NULL },
        { BASE_INFO, .numa_nodes = { 2 } },
        { BASE_INFO, .n_numa_nodes = 0 },
        { BASE_INFO, .pci_address = "0000:3b:00.1" },
        { BASE_INFO, .pci_address = NULL },
        { BASE_INFO, .dev_nodes = (const kdp_dev_node[]) { { "/dev/w1", NULL, NULL }, { 0 } } },
        { BASE_INFO, .dev_nodes = (const kdp_dev_node[]) { { "/dev/w0", "/dev/x", NULL }, { 0 } } },
        { BASE_INFO, .dev_nodes = (const kdp_dev_node[]) { { "/dev/w0", NULL, "r" }, { 0 } } },
        { BASE_INFO, .dev_nodes = NULL },
        { BASE_INFO, .mounts = (const kdp_mount[]) { { "/opt/w", NULL, 1 }, { 0 } } },
        { BASE_INFO, .mounts = (const kdp_mount[]) { { "/opt/w", "/w", 0 }, { 0 } } },
        { BASE_INFO, .mounts = (const kdp_mount[]) { { "/opt/x", "/opt/w", 0 }, { 0 } } },
        { BASE_INFO, .envs = (const kdp_kv[]) { { "W", "1" }, { 0 } } },
        { BASE_INFO, .envs = (const kdp_kv[]) { { "X", "0" }, { 0 } } },
        { BASE_INFO, .envs = (const kdp_kv[]) { { "W", "0" }, { "X", "1" }, { 0 } } },
        { BASE_INFO, .annotations = (const kdp_kv[]) { { "a", "c" }, { 0 } } },
        { BASE_INFO, .annotations = NULL },
        { BASE_INFO, .cdi_devices = (const char *const[]) { "example.com/w=1", NULL } },
        { BASE_INFO, .cdi_devices = NULL },
};
#pragma GCC diagnostic pop

START_TEST(test_device_equal_sees_every_field) {
        _cleanup_(kdp_device_done) kdp_device a = {}, b = {};
        device_from(&base_info, &a);
        device_from(&variant_infos[_i], &b);
        ck_assert(!kdp_device_equal(&a, &b));
        ck_assert(!kdp_device_equal(&b, &a));
}
END_TEST

START_TEST(test_device_equal_holds_for_copies_of_one_record) {
        _cleanup_(kdp_device_done) kdp_device a = {}, b = {};

        device_from(&base_info, &a);
        device_from(&base_info, &b);
        ck_assert(kdp_device_equal(&a, &b));
        ck_assert(kdp_device_equal(&a, &a));
        ck_assert(!kdp_device_equal(&a, NULL));
        ck_assert(kdp_device_equal(NULL, NULL));
}
END_TEST

/* ---- lists ---- */

START_TEST(test_device_list_append_finds_ids_and_sort_orders_them) {
        _cleanup_(kdp_device_list_done) kdp_device_list l = {};
        static const char *const ids[] = { "w10", "w2", "w1", "a", "z", "w3" };
        static const char *const sorted[] = { "a", "w1", "w10", "w2", "w3", "z" };

        ck_assert_int_eq(kdp_device_list_init(&l, "example.com/widget"), 0);
        ck_assert_str_eq(l.resource, "example.com/widget");
        ck_assert_ptr_null(kdp_device_list_find(&l, "a"));

        for (size_t i = 0; i < KDP_ELEMENTSOF(ids); i++)
                list_add(&l, ids[i]);
        ck_assert_uint_eq(l.n_devices, 6);
        ck_assert(l.unsorted);
        for (size_t i = 0; i < KDP_ELEMENTSOF(ids); i++) {
                ck_assert_str_eq(l.devices[i].id, ids[i]);      /* appended in order given */
                ck_assert_ptr_eq(kdp_device_list_find(&l, ids[i]), &l.devices[i]);
        }
        ck_assert_ptr_null(kdp_device_list_find(&l, "w"));

        kdp_device_list_sort(&l);
        ck_assert(!l.unsorted);
        ck_assert_ptr_null(l.id_slots);
        for (size_t i = 0; i < KDP_ELEMENTSOF(sorted); i++) {
                ck_assert_str_eq(l.devices[i].id, sorted[i]);
                ck_assert_ptr_eq(kdp_device_list_find(&l, sorted[i]), &l.devices[i]);
        }
        ck_assert_ptr_null(kdp_device_list_find(&l, "w"));
        ck_assert_ptr_null(kdp_device_list_find(&l, "zz"));
        ck_assert_ptr_null(kdp_device_list_find(&l, "0"));
        ck_assert_ptr_null(kdp_device_list_find(&l, NULL));
        ck_assert_ptr_null(kdp_device_list_find(NULL, "a"));
}
END_TEST

START_TEST(test_device_list_append_rejects_duplicate_id_and_leaves_device) {
        _cleanup_(kdp_device_list_done) kdp_device_list l = {};
        _cleanup_(kdp_device_done) kdp_device d = {};

        ck_assert_int_eq(kdp_device_list_init(&l, "example.com/widget"), 0);
        list_add(&l, "w0");
        list_add(&l, "w1");
        device_from(&(kdp_device_info) { .id = "w0", .health = KDP_UNHEALTHY }, &d);
        ck_assert_int_eq(kdp_device_list_append(&l, &d), -EEXIST);
        ck_assert_str_eq(d.id, "w0");
        ck_assert_int_eq(d.health, KDP_UNHEALTHY);
        ck_assert_uint_eq(l.n_devices, 2);
        ck_assert_int_eq(l.devices[0].health, KDP_HEALTHY);
}
END_TEST

START_TEST(test_device_list_sort_orders_a_list_built_by_hand) {
        _cleanup_(kdp_device_list_done) kdp_device_list l = {};

        ck_assert_int_eq(kdp_device_list_init(&l, NULL), 0);
        ck_assert_ptr_null(l.resource);
        l.devices = calloc(3, sizeof(kdp_device));
        ck_assert_ptr_nonnull(l.devices);
        l.n_allocated = 3;
        device_from(&(kdp_device_info) { .id = "c" }, &l.devices[0]);
        device_from(&(kdp_device_info) { .id = "a" }, &l.devices[1]);
        device_from(&(kdp_device_info) { .id = "b" }, &l.devices[2]);
        l.n_devices = 3;

        kdp_device_list_sort(&l);
        ck_assert_str_eq(l.devices[0].id, "a");
        ck_assert_str_eq(l.devices[1].id, "b");
        ck_assert_str_eq(l.devices[2].id, "c");
        ck_assert_str_eq(kdp_device_list_find(&l, "c")->id, "c");
}
END_TEST

START_TEST(test_device_list_equal_compares_devices_in_order) {
        _cleanup_(kdp_device_list_done) kdp_device_list a = {}, b = {}, c = {};
        kdp_device d;

        ck_assert_int_eq(kdp_device_list_init(&a, "example.com/widget"), 0);
        ck_assert_int_eq(kdp_device_list_init(&b, "example.com/widget"), 0);
        ck_assert_int_eq(kdp_device_list_init(&c, "example.com/widget"), 0);
        ck_assert(kdp_device_list_equal(&a, &b));

        list_add(&a, "w0");
        list_add(&a, "w1");
        list_add(&b, "w1");
        list_add(&b, "w0");
        ck_assert(!kdp_device_list_equal(&a, &b));     /* order matters */
        kdp_device_list_sort(&b);
        ck_assert(kdp_device_list_equal(&a, &b));

        list_add(&c, "w0");
        ck_assert(!kdp_device_list_equal(&a, &c));
        device_from(&(kdp_device_info) { .id = "w1", .health = KDP_UNHEALTHY }, &d);
        ck_assert_int_eq(kdp_device_list_append(&c, &d), 0);
        ck_assert(!kdp_device_list_equal(&a, &c));
        ck_assert(!kdp_device_list_equal(&a, NULL));
}
END_TEST

START_TEST(test_device_list_append_handles_4096_devices_in_any_order) {
        _cleanup_(kdp_device_list_done) kdp_device_list l = {};
        char id[32];

        ck_assert_int_eq(kdp_device_list_init(&l, "example.com/widget"), 0);
        /* a permutation of 0..4095 (2654435761 is odd, so coprime with 4096) */
        for (unsigned i = 0; i < 4096; i++) {
                (void) snprintf(id, sizeof(id), "widget-%04u", (unsigned) ((i * 2654435761u) % 4096));
                list_add(&l, id);
        }
        /* and the same again, all refused */
        for (unsigned i = 0; i < 4096; i += 97) {
                kdp_device d;

                (void) snprintf(id, sizeof(id), "widget-%04u", i);
                device_from(&(kdp_device_info) { .id = id }, &d);
                ck_assert_int_eq(kdp_device_list_append(&l, &d), -EEXIST);
                kdp_device_done(&d);
        }

        ck_assert_uint_eq(l.n_devices, 4096);
        for (unsigned i = 0; i < 4096; i++) {
                (void) snprintf(id, sizeof(id), "widget-%04u", i);
                ck_assert_str_eq(kdp_device_list_find(&l, id)->id, id);
        }
        kdp_device_list_sort(&l);
        for (unsigned i = 0; i < 4096; i++) {
                (void) snprintf(id, sizeof(id), "widget-%04u", i);
                ck_assert_str_eq(l.devices[i].id, id);
                ck_assert_ptr_eq(kdp_device_list_find(&l, id), &l.devices[i]);
        }
}
END_TEST

START_TEST(test_device_done_accepts_null_and_twice) {
        kdp_device d;

        kdp_device_done(NULL);
        kdp_device_list_done(NULL);
        device_from(&base_info, &d);
        kdp_device_done(&d);
        kdp_device_done(&d);
        ck_assert_ptr_null(d.id);
}
END_TEST

static Suite *device_suite(void) {
        Suite *s = suite_create("device");
        TCase *tc;

        tc = tcase_create("names");
        tcase_set_timeout(tc, 10);
        tcase_add_test(tc, test_device_id_is_valid_accepts_printable_ascii_up_to_63);
        tcase_add_test(tc, test_device_id_is_valid_rejects_empty_long_spaced_and_non_ascii);
        tcase_add_loop_test(tc, test_device_resource_name_is_valid_follows_kubelet_table, 0,
                            (int) KDP_ELEMENTSOF(resource_table));
        tcase_add_test(tc, test_device_resource_name_is_valid_limits_prefix_to_244_and_name_to_63);
        tcase_add_loop_test(tc, test_device_cdi_name_is_valid_follows_cdi_parser, 0, (int) KDP_ELEMENTSOF(cdi_table));
        tcase_add_test(tc, test_device_cdi_name_is_valid_rejects_null);
        suite_add_tcase(s, tc);

        tc = tcase_create("from-info");
        tcase_set_timeout(tc, 10);
        tcase_add_test(tc, test_device_from_info_copies_everything_and_resolves_defaults);
        tcase_add_test(tc, test_device_from_info_keeps_reason_of_unhealthy_device);
        tcase_add_test(tc, test_device_from_info_accepts_eight_numa_nodes_and_empty_arrays);
        tcase_add_loop_test(tc, test_device_from_info_rejects_invalid_record_without_writing_ret, 0,
                            (int) KDP_ELEMENTSOF(bad_infos));
        tcase_add_test(tc, test_device_from_info_rejects_null_arguments);
        tcase_add_test(tc, test_device_from_info_resolves_pci_path_below_devices);
        tcase_add_test(tc, test_device_done_accepts_null_and_twice);
        suite_add_tcase(s, tc);

        tc = tcase_create("equal");
        tcase_set_timeout(tc, 10);
        tcase_add_loop_test(tc, test_device_equal_sees_every_field, 0, (int) KDP_ELEMENTSOF(variant_infos));
        tcase_add_test(tc, test_device_equal_holds_for_copies_of_one_record);
        suite_add_tcase(s, tc);

        tc = tcase_create("list");
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, test_device_list_append_finds_ids_and_sort_orders_them);
        tcase_add_test(tc, test_device_list_append_rejects_duplicate_id_and_leaves_device);
        tcase_add_test(tc, test_device_list_sort_orders_a_list_built_by_hand);
        tcase_add_test(tc, test_device_list_equal_compares_devices_in_order);
        tcase_add_test(tc, test_device_list_append_handles_4096_devices_in_any_order);
        suite_add_tcase(s, tc);

        return s;
}

int main(void) {
        return kdp_test_run(device_suite());
}
