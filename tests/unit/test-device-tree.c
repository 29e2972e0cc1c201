/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kdp/cleanup.h>
#include <kdp/device.h>

#include "device-tree.h"

#include "kdp-test.h"

/* ---- helpers ---- */

/* The tree's notes, one a line: "<kind> <key>: <text>" (+ " with=N without=M"), in the order they were made. */
static char *notes_text(const kdp_device_tree *t) {
        static const char *const kinds[] = { "not-served", "bad-resource", "mixed-topology", "refused-resource" };
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);

        ck_assert_ptr_nonnull(m);
        for (size_t i = 0; i < t->n_notes; i++) {
                const kdp_tree_note *n = &t->notes[i];

                fprintf(m, "%s %s: %s", kinds[n->kind], n->key, n->text);
                if (n->kind == KDP_TREE_NOTE_MIXED_TOPOLOGY)
                        fprintf(m, " with=%lld without=%lld", (long long) n->with, (long long) n->without);
                fputc('\n', m);
        }
        ck_assert_int_eq(fclose(m), 0);
        return buf;
}

/* ---- declaring ---- */

START_TEST(test_device_tree_new_copies_sysfs_root_and_starts_empty) {
        _cleanup_(kdp_device_tree_freep) kdp_device_tree *t = NULL, *u = NULL;
        char root[] = "/tmp/fixture/sys";

        ck_assert_int_eq(kdp_device_tree_new(root, &t), 0);
        root[1] = 'X';
        ck_assert_str_eq(t->sysfs_root, "/tmp/fixture/sys");
        ck_assert_uint_eq(t->n_resources, 0);
        ck_assert_uint_eq(t->n_rejected, 0);
        ck_assert_ptr_null(kdp_device_tree_find(t, "example.com/widget"));

        ck_assert_int_eq(kdp_device_tree_new(NULL, &u), 0);
        ck_assert_ptr_null(u->sysfs_root);
        ck_assert_ptr_null(kdp_device_tree_free(NULL));
}
END_TEST

START_TEST(test_device_tree_add_resource_declares_a_resource_once) {
        _cleanup_(kdp_device_tree_freep) kdp_device_tree *t = NULL;
        kdp_device_list *l;

        ck_assert_int_eq(kdp_device_tree_new(NULL, &t), 0);
        ck_assert_int_eq(kdp_device_tree_add_resource(t, "example.com/widget"), 0);
        ck_assert_int_eq(kdp_device_tree_add_resource(t, "example.com/gadget"), 0);
        ck_assert_int_eq(kdp_device_tree_add_resource(t, "example.com/widget"), 0);

        ck_assert_uint_eq(t->n_resources, 2);
        ck_assert_str_eq(t->resources[0].resource, "example.com/widget");
        ck_assert_str_eq(t->resources[1].resource, "example.com/gadget");
        l = kdp_device_tree_find(t, "example.com/gadget");
        ck_assert_ptr_eq(l, &t->resources[1]);
        ck_assert_uint_eq(l->n_devices, 0);
        ck_assert_ptr_null(kdp_device_tree_find(t, "example.com/other"));
        ck_assert_ptr_null(kdp_device_tree_find(t, NULL));
        ck_assert_ptr_null(kdp_device_tree_find(NULL, "example.com/widget"));
}
END_TEST

START_TEST(test_device_tree_add_resource_rejects_invalid_name_with_a_note) {
        _cleanup_(kdp_device_tree_freep) kdp_device_tree *t = NULL;
        _cleanup_free_ char *log = NULL, *notes = NULL;
        kdp_test_capture c;

        ck_assert_int_eq(kdp_device_tree_new(NULL, &t), 0);
        kdp_test_capture_begin(&c);
        ck_assert_int_eq(kdp_device_tree_add_resource(t, "kubernetes.io/gpu"), -EINVAL);
        ck_assert_int_eq(kdp_device_tree_add_resource(t, NULL), -EINVAL);
        ck_assert_int_eq(kdp_device_tree_add_resource(NULL, "example.com/widget"), -EINVAL);
        log = kdp_test_capture_end(&c);

        ck_assert_uint_eq(t->n_resources, 0);
        /* nothing is logged here: kdpd logs each note once while it holds (conditions.c) */
        ck_assert_str_eq(log, "");
        notes = notes_text(t);
        ck_assert_str_eq(notes, "bad-resource kubernetes.io/gpu: not <domain>/<name> as the kubelet wants it\n"
                                "bad-resource -: not <domain>/<name> as the kubelet wants it\n");
}
END_TEST

/* ---- adding devices ---- */

START_TEST(test_device_tree_add_stores_devices_sorted_per_resource) {
        _cleanup_(kdp_device_tree_freep) kdp_device_tree *t = NULL;
        kdp_device_list *w, *g;

        ck_assert_int_eq(kdp_device_tree_new(NULL, &t), 0);
        ck_assert_int_eq(kdp_device_tree_add(t, "example.com/widget", &(kdp_device_info) {
                .id = "w1",
                .dev_nodes = (const kdp_dev_node[]) { { .host_path = "/dev/w1" }, { 0 } },
        }), 0);
        ck_assert_int_eq(kdp_device_tree_add(t, "example.com/gadget", &(kdp_device_info) { .id = "g0" }), 0);
        ck_assert_int_eq(kdp_device_tree_add(t, "example.com/widget", &(kdp_device_info) { .id = "w0" }), 0);
        kdp_device_tree_finish(t);

        ck_assert_uint_eq(t->n_rejected, 0);
        ck_assert_uint_eq(t->n_resources, 2);
        w = kdp_device_tree_find(t, "example.com/widget");
        g = kdp_device_tree_find(t, "example.com/gadget");
        ck_assert_uint_eq(w->n_devices, 2);
        ck_assert_str_eq(w->devices[0].id, "w0");
        ck_assert_str_eq(w->devices[1].id, "w1");
        ck_assert_str_eq(w->devices[1].dev_nodes[0].container_path, "/dev/w1");
        ck_assert_uint_eq(g->n_devices, 1);
        ck_assert_str_eq(g->devices[0].id, "g0");
}
END_TEST

START_TEST(test_device_tree_add_rejects_long_id) {
        _cleanup_(kdp_device_tree_freep) kdp_device_tree *t = NULL;
        _cleanup_free_ char *log = NULL, *expect = NULL, *notes = NULL;
        char id[65];
        kdp_test_capture c;

        ck_assert_int_eq(kdp_device_tree_new(NULL, &t), 0);
        memset(id, 'a', sizeof(id) - 1);
        id[sizeof(id) - 1] = '\0';

        kdp_test_capture_begin(&c);
        ck_assert_int_eq(kdp_device_tree_add(t, "example.com/widget", &(kdp_device_info) { .id = id }), -EINVAL);
        log = kdp_test_capture_end(&c);

        ck_assert_uint_eq(t->n_rejected, 1);
        /* the resource is declared all the same, so the kubelet keeps seeing it */
        ck_assert_uint_eq(t->n_resources, 1);
        ck_assert_uint_eq(kdp_device_tree_find(t, "example.com/widget")->n_devices, 0);

        ck_assert_str_eq(log, "");
        ck_assert_int_ge(asprintf(&expect, "not-served %s: refused by kdpd for example.com/widget: ID is empty, "
                                           "longer than 63 characters or not printable ASCII\n", id), 0);
        notes = notes_text(t);
        ck_assert_str_eq(notes, expect);
}
END_TEST

START_TEST(test_device_tree_add_rejects_invalid_resource_name_without_declaring_it) {
        _cleanup_(kdp_device_tree_freep) kdp_device_tree *t = NULL;
        _cleanup_free_ char *log = NULL, *notes = NULL;
        kdp_test_capture c;

        ck_assert_int_eq(kdp_device_tree_new(NULL, &t), 0);
        kdp_test_capture_begin(&c);
        ck_assert_int_eq(kdp_device_tree_add(t, "widget", &(kdp_device_info) { .id = "w0" }), -EINVAL);
        ck_assert_int_eq(kdp_device_tree_add(t, "example.com/widget", NULL), -EINVAL);
        ck_assert_int_eq(kdp_device_tree_add(NULL, "example.com/widget", &(kdp_device_info) { .id = "w0" }), -EINVAL);
        log = kdp_test_capture_end(&c);

        ck_assert_uint_eq(t->n_rejected, 2);
        ck_assert_uint_eq(t->n_resources, 0);
        ck_assert_str_eq(log, "");
        /* a NULL record names no device: counted, not noted */
        notes = notes_text(t);
        ck_assert_str_eq(notes, "not-served w0: refused by kdpd for widget: resource name is not <domain>/<name>\n");
}
END_TEST

START_TEST(test_device_tree_add_rejects_duplicate_id_and_keeps_the_first) {
        _cleanup_(kdp_device_tree_freep) kdp_device_tree *t = NULL;
        _cleanup_free_ char *log = NULL, *notes = NULL;
        kdp_device_list *l;
        kdp_test_capture c;

        ck_assert_int_eq(kdp_device_tree_new(NULL, &t), 0);
        kdp_test_capture_begin(&c);
        ck_assert_int_eq(kdp_device_tree_add(t, "example.com/widget", &(kdp_device_info) { .id = "w0" }), 0);
        ck_assert_int_eq(kdp_device_tree_add(t, "example.com/widget", &(kdp_device_info) {
                .id = "w0", .health = KDP_UNHEALTHY }), -EEXIST);
        /* the same ID in another resource is fine */
        ck_assert_int_eq(kdp_device_tree_add(t, "example.com/gadget", &(kdp_device_info) { .id = "w0" }), 0);
        log = kdp_test_capture_end(&c);

        ck_assert_uint_eq(t->n_rejected, 1);
        l = kdp_device_tree_find(t, "example.com/widget");
        ck_assert_uint_eq(l->n_devices, 1);
        ck_assert_int_eq(l->devices[0].health, KDP_HEALTHY);
        ck_assert_str_eq(log, "");
        notes = notes_text(t);
        ck_assert_str_eq(notes, "not-served w0: duplicate ID \"w0\" in example.com/widget\n");
}
END_TEST

/* Two GPUs that report one UUID: the second is refused under its own PCI address, naming the first's. */
START_TEST(test_device_tree_add_names_the_pci_address_of_a_refused_duplicate) {
        _cleanup_(kdp_device_tree_freep) kdp_device_tree *t = NULL;
        _cleanup_free_ char *notes = NULL;
        kdp_device_list *l;

        ck_assert_int_eq(kdp_device_tree_new(NULL, &t), 0);
        ck_assert_int_eq(kdp_device_tree_add(t, "nvidia.com/gpu", &(kdp_device_info) {
                .id = "GPU-1", .pci_address = "0000:18:00.0" }), 0);
        ck_assert_int_eq(kdp_device_tree_add(t, "nvidia.com/gpu", &(kdp_device_info) {
                .id = "GPU-1", .pci_address = "0000:19:00.0" }), -EEXIST);
        /* a second replica of the same refused GPU keeps the one note */
        ck_assert_int_eq(kdp_device_tree_add(t, "nvidia.com/gpu", &(kdp_device_info) {
                .id = "GPU-1", .pci_address = "0000:19:00.0" }), -EEXIST);
        ck_assert_int_eq(kdp_device_tree_not_served(t, "0000:3a:00.0", "driver unbound"), 0);
        ck_assert_int_eq(kdp_device_tree_not_served(t, "0000:3a:00.0", "another reason"), 0);
        kdp_device_tree_finish(t);

        ck_assert_uint_eq(t->n_rejected, 2);
        l = kdp_device_tree_find(t, "nvidia.com/gpu");
        ck_assert_uint_eq(l->n_devices, 1);
        ck_assert_str_eq(l->devices[0].pci_address, "0000:18:00.0");
        notes = notes_text(t);
        ck_assert_str_eq(notes, "not-served 0000:19:00.0: duplicate ID \"GPU-1\" in nvidia.com/gpu: already served for "
                                "0000:18:00.0\n"
                                "not-served 0000:3a:00.0: driver unbound\n");
}
END_TEST

START_TEST(test_device_tree_not_served_checks_and_cleans_its_arguments) {
        _cleanup_(kdp_device_tree_freep) kdp_device_tree *t = NULL;
        _cleanup_free_ char *notes = NULL;
        char long_reason[400];

        ck_assert_int_eq(kdp_device_tree_new(NULL, &t), 0);
        memset(long_reason, 'x', sizeof(long_reason) - 1);
        long_reason[sizeof(long_reason) - 1] = '\0';
        ck_assert_int_eq(kdp_device_tree_not_served(NULL, "0000:01:00.0", "why"), -EINVAL);
        ck_assert_int_eq(kdp_device_tree_not_served(t, NULL, "why"), -EINVAL);
        ck_assert_int_eq(kdp_device_tree_not_served(t, "", "why"), -EINVAL);
        ck_assert_int_eq(kdp_device_tree_not_served(t, "has space", "why"), -EINVAL);
        ck_assert_int_eq(kdp_device_tree_not_served(t, "0000:01:00.0", NULL), -EINVAL);
        ck_assert_int_eq(kdp_device_tree_not_served(t, "0000:01:00.0", ""), -EINVAL);
        ck_assert_int_eq(kdp_device_tree_not_served(t, "0000:01:00.0", "two\nlines\tand a tab"), 0);
        ck_assert_int_eq(kdp_device_tree_not_served(t, "widget-7", long_reason), 0);

        ck_assert_uint_eq(t->n_notes, 2);
        ck_assert_str_eq(t->notes[0].text, "two lines and a tab");
        ck_assert_uint_eq(strlen(t->notes[1].text), KDP_NOT_SERVED_REASON_MAX);
        ck_assert_str_eq(t->notes[1].key, "widget-7");
        /* nothing refused by the tree itself */
        ck_assert_uint_eq(t->n_rejected, 0);
}
END_TEST

static const kdp_device_info refused[] = {
        { .id = "w0", .pci_address = "0000:00:01.0", .health = (kdp_health) 5 },
        { .id = "w0", .pci_address = "0000:00:02.0", .numa_nodes = { -1 }, .n_numa_nodes = 1 },
        { .id = "w0", .pci_address = "0000:00:03.0", .dev_nodes = (const kdp_dev_node[]) { { .host_path = "dev/w0" }, { 0 } } },
        { .id = "w0", .pci_address = "0000:00:04.0",
          .mounts = (const kdp_mount[]) { { .host_path = "/opt", .container_path = "opt" }, { 0 } } },
        { .id = "w0", .pci_address = "0000:00:05.0", .cdi_devices = (const char *const[]) { "not-cdi", NULL } },
        { .id = "" },
        { .id = "w\n0" },
};

/* each refusal says which device and why */
static const char refused_notes[] =
        "not-served 0000:00:01.0: refused by kdpd for example.com/widget: health is neither healthy nor unhealthy\n"
        "not-served 0000:00:02.0: refused by kdpd for example.com/widget: negative NUMA node\n"
        "not-served 0000:00:03.0: refused by kdpd for example.com/widget: device node host path is not absolute\n"
        "not-served 0000:00:04.0: refused by kdpd for example.com/widget: mount container path is not absolute\n"
        "not-served 0000:00:05.0: refused by kdpd for example.com/widget: CDI device name is not "
        "\"vendor/class=name\"\n"
        "not-served -: refused by kdpd for example.com/widget: ID is empty, longer than 63 characters or not "
        "printable ASCII\n"
        "not-served w_0: refused by kdpd for example.com/widget: ID is empty, longer than 63 characters or not "
        "printable ASCII\n";

START_TEST(test_device_tree_add_counts_every_refused_device) {
        _cleanup_(kdp_device_tree_freep) kdp_device_tree *t = NULL;
        _cleanup_free_ char *log = NULL, *notes = NULL;
        kdp_test_capture c;

        ck_assert_int_eq(kdp_device_tree_new(NULL, &t), 0);
        kdp_test_capture_begin(&c);
        for (size_t i = 0; i < KDP_ELEMENTSOF(refused); i++)
                ck_assert_int_eq(kdp_device_tree_add(t, "example.com/widget", &refused[i]), -EINVAL);
        ck_assert_int_eq(kdp_device_tree_add(t, "example.com/widget", &(kdp_device_info) { .id = "ok" }), 0);
        log = kdp_test_capture_end(&c);

        ck_assert_uint_eq(t->n_rejected, KDP_ELEMENTSOF(refused));
        ck_assert_uint_eq(kdp_device_tree_find(t, "example.com/widget")->n_devices, 1);
        ck_assert_str_eq(log, "");
        notes = notes_text(t);
        ck_assert_str_eq(notes, refused_notes);
}
END_TEST

START_TEST(test_device_tree_add_resolves_pci_path_under_sysfs_root) {
        _cleanup_(kdp_device_tree_freep) kdp_device_tree *t = NULL;
        _cleanup_(kdp_test_rm_rfp) char *root = strdup("/tmp/kdp-test-tree-XXXXXX");
        _cleanup_free_ char *dir = NULL, *link = NULL;
        kdp_device_list *l;

        ck_assert_ptr_nonnull(mkdtemp(root));
        ck_assert_int_ge(asprintf(&dir, "%s/devices", root), 0);
        ck_assert_int_eq(mkdir(dir, 0755), 0);
        free(dir);
        ck_assert_int_ge(asprintf(&dir, "%s/devices/pci0000:00", root), 0);
        ck_assert_int_eq(mkdir(dir, 0755), 0);
        free(dir);
        ck_assert_int_ge(asprintf(&dir, "%s/devices/pci0000:00/0000:00:02.0", root), 0);
        ck_assert_int_eq(mkdir(dir, 0755), 0);
        free(dir);
        ck_assert_int_ge(asprintf(&dir, "%s/bus", root), 0);
        ck_assert_int_eq(mkdir(dir, 0755), 0);
        free(dir);
        ck_assert_int_ge(asprintf(&dir, "%s/bus/pci", root), 0);
        ck_assert_int_eq(mkdir(dir, 0755), 0);
        free(dir);
        ck_assert_int_ge(asprintf(&dir, "%s/bus/pci/devices", root), 0);
        ck_assert_int_eq(mkdir(dir, 0755), 0);
        ck_assert_int_ge(asprintf(&link, "%s/0000:00:02.0", dir), 0);
        ck_assert_int_eq(symlink("../../../devices/pci0000:00/0000:00:02.0", link), 0);

        ck_assert_int_eq(kdp_device_tree_new(root, &t), 0);
        ck_assert_int_eq(kdp_device_tree_add(t, "example.com/gpu", &(kdp_device_info) {
                .id = "card0", .pci_address = "0000:00:02.0" }), 0);
        l = kdp_device_tree_find(t, "example.com/gpu");
        ck_assert_str_eq(l->devices[0].pci_path, "pci0000:00/0000:00:02.0");
}
END_TEST

/* ---- finishing ---- */

START_TEST(test_device_tree_finish_drops_numa_of_a_resource_that_mixes_it) {
        _cleanup_(kdp_device_tree_freep) kdp_device_tree *t = NULL;
        _cleanup_free_ char *log = NULL, *notes = NULL;
        kdp_device_list *mixed, *all, *none;
        kdp_test_capture c;

        ck_assert_int_eq(kdp_device_tree_new(NULL, &t), 0);
        ck_assert_int_eq(kdp_device_tree_add(t, "example.com/mixed", &(kdp_device_info) {
                .id = "m0", .numa_nodes = { 0 }, .n_numa_nodes = 1 }), 0);
        ck_assert_int_eq(kdp_device_tree_add(t, "example.com/mixed", &(kdp_device_info) { .id = "m1" }), 0);
        ck_assert_int_eq(kdp_device_tree_add(t, "example.com/mixed", &(kdp_device_info) {
                .id = "m2", .numa_nodes = { 1, 0 }, .n_numa_nodes = 2 }), 0);
        ck_assert_int_eq(kdp_device_tree_add(t, "example.com/all", &(kdp_device_info) {
                .id = "a0", .numa_nodes = { 1 }, .n_numa_nodes = 1 }), 0);
        ck_assert_int_eq(kdp_device_tree_add(t, "example.com/all", &(kdp_device_info) {
                .id = "a1", .numa_nodes = { 0 }, .n_numa_nodes = 1 }), 0);
        ck_assert_int_eq(kdp_device_tree_add(t, "example.com/none", &(kdp_device_info) { .id = "n0" }), 0);

        kdp_test_capture_begin(&c);
        kdp_device_tree_finish(t);
        log = kdp_test_capture_end(&c);

        mixed = kdp_device_tree_find(t, "example.com/mixed");
        for (size_t i = 0; i < mixed->n_devices; i++) {
                ck_assert(!kdp_device_has_topology(&mixed->devices[i]));
                ck_assert_int_eq(mixed->devices[i].numa_nodes[0], 0);
                ck_assert_int_eq(mixed->devices[i].numa_nodes[1], 0);
        }
        all = kdp_device_tree_find(t, "example.com/all");
        ck_assert_uint_eq(all->devices[0].n_numa_nodes, 1);
        ck_assert_int_eq(all->devices[0].numa_nodes[0], 1);
        ck_assert_int_eq(all->devices[1].numa_nodes[0], 0);
        none = kdp_device_tree_find(t, "example.com/none");
        ck_assert(!kdp_device_has_topology(&none->devices[0]));

        ck_assert_str_eq(log, "");
        notes = notes_text(t);
        ck_assert_str_eq(notes, "mixed-topology example.com/mixed:  with=2 without=1\n");

        /* a second finish finds nothing left to fix */
        kdp_device_tree_finish(t);
        ck_assert_uint_eq(t->n_notes, 1);
}
END_TEST

START_TEST(test_device_tree_finish_sorts_and_deduplicates_a_list_filled_by_hand) {
        _cleanup_(kdp_device_tree_freep) kdp_device_tree *t = NULL;
        _cleanup_free_ char *log = NULL, *notes = NULL;
        kdp_device_list *l;
        kdp_test_capture c;

        ck_assert_int_eq(kdp_device_tree_new(NULL, &t), 0);
        ck_assert_int_eq(kdp_device_tree_add_resource(t, "example.com/widget"), 0);
        l = kdp_device_tree_find(t, "example.com/widget");
        l->devices = calloc(4, sizeof(kdp_device));
        ck_assert_ptr_nonnull(l->devices);
        l->n_allocated = 4;
        ck_assert_int_eq(kdp_device_from_info(&(kdp_device_info) { .id = "b" }, NULL, &l->devices[0]), 0);
        ck_assert_int_eq(kdp_device_from_info(&(kdp_device_info) { .id = "a" }, NULL, &l->devices[1]), 0);
        ck_assert_int_eq(kdp_device_from_info(&(kdp_device_info) { .id = "b" }, NULL, &l->devices[2]), 0);
        ck_assert_int_eq(kdp_device_from_info(&(kdp_device_info) { .id = "c" }, NULL, &l->devices[3]), 0);
        l->n_devices = 4;

        kdp_test_capture_begin(&c);
        kdp_device_tree_finish(t);
        log = kdp_test_capture_end(&c);

        ck_assert_uint_eq(l->n_devices, 3);
        ck_assert_str_eq(l->devices[0].id, "a");
        ck_assert_str_eq(l->devices[1].id, "b");
        ck_assert_str_eq(l->devices[2].id, "c");
        ck_assert_uint_eq(t->n_rejected, 1);
        ck_assert_str_eq(log, "");
        notes = notes_text(t);
        ck_assert_str_eq(notes, "not-served b: duplicate ID \"b\" in example.com/widget\n");
}
END_TEST

START_TEST(test_device_tree_holds_4096_devices_per_resource) {
        _cleanup_(kdp_device_tree_freep) kdp_device_tree *t = NULL;
        _cleanup_free_ char *log = NULL;
        kdp_device_list *vf, *gpu;
        char id[32];
        kdp_test_capture c;

        ck_assert_int_eq(kdp_device_tree_new(NULL, &t), 0);
        kdp_test_capture_begin(&c);
        for (unsigned i = 0; i < 4096; i++) {
                unsigned n = (i * 2654435761u) % 4096;          /* a permutation: no order to rely on */

                (void) snprintf(id, sizeof(id), "0000:%02x:%02x.%u", n >> 6, (n >> 3) & 7, n & 7);
                ck_assert_int_eq(kdp_device_tree_add(t, "example.com/vf", &(kdp_device_info) {
                        .id = id,
                        .numa_nodes = { (int) (n / 2048) },
                        .n_numa_nodes = 1,
                        .dev_nodes = (const kdp_dev_node[]) { { .host_path = "/dev/vfio/vfio" }, { 0 } },
                        .envs = (const kdp_kv[]) { { "PCIDEVICE", id }, { 0 } },
                }), 0);
                (void) snprintf(id, sizeof(id), "gpu-%u", 4095 - i);
                ck_assert_int_eq(kdp_device_tree_add(t, "example.com/gpu", &(kdp_device_info) { .id = id }), 0);
        }
        kdp_device_tree_finish(t);
        log = kdp_test_capture_end(&c);

        ck_assert_str_eq(log, "");
        ck_assert_uint_eq(t->n_rejected, 0);
        vf = kdp_device_tree_find(t, "example.com/vf");
        gpu = kdp_device_tree_find(t, "example.com/gpu");
        ck_assert_uint_eq(vf->n_devices, 4096);
        ck_assert_uint_eq(gpu->n_devices, 4096);
        for (size_t i = 1; i < 4096; i++) {
                ck_assert_int_lt(strcmp(vf->devices[i - 1].id, vf->devices[i].id), 0);
                ck_assert_int_lt(strcmp(gpu->devices[i - 1].id, gpu->devices[i].id), 0);
        }
        ck_assert_int_eq(kdp_device_list_find(vf, "0000:3f:07.7")->numa_nodes[0], 1);
        ck_assert_int_eq(kdp_device_list_find(vf, "0000:00:00.0")->numa_nodes[0], 0);
        ck_assert_str_eq(kdp_device_list_find(vf, "0000:12:03.4")->envs[0].value, "0000:12:03.4");
        ck_assert_ptr_nonnull(kdp_device_list_find(gpu, "gpu-0"));
        ck_assert_ptr_nonnull(kdp_device_list_find(gpu, "gpu-4095"));
        ck_assert_ptr_null(kdp_device_list_find(gpu, "gpu-4096"));
}
END_TEST

static Suite *device_tree_suite(void) {
        Suite *s = suite_create("device-tree");
        TCase *tc;

        tc = tcase_create("declare");
        tcase_set_timeout(tc, 10);
        tcase_add_test(tc, test_device_tree_new_copies_sysfs_root_and_starts_empty);
        tcase_add_test(tc, test_device_tree_add_resource_declares_a_resource_once);
        tcase_add_test(tc, test_device_tree_add_resource_rejects_invalid_name_with_a_note);
        suite_add_tcase(s, tc);

        tc = tcase_create("add");
        tcase_set_timeout(tc, 10);
        tcase_add_test(tc, test_device_tree_add_stores_devices_sorted_per_resource);
        tcase_add_test(tc, test_device_tree_add_rejects_long_id);
        tcase_add_test(tc, test_device_tree_add_rejects_invalid_resource_name_without_declaring_it);
        tcase_add_test(tc, test_device_tree_add_rejects_duplicate_id_and_keeps_the_first);
        tcase_add_test(tc, test_device_tree_add_counts_every_refused_device);
        tcase_add_test(tc, test_device_tree_add_names_the_pci_address_of_a_refused_duplicate);
        tcase_add_test(tc, test_device_tree_not_served_checks_and_cleans_its_arguments);
        tcase_add_test(tc, test_device_tree_add_resolves_pci_path_under_sysfs_root);
        suite_add_tcase(s, tc);

        tc = tcase_create("finish");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_device_tree_finish_drops_numa_of_a_resource_that_mixes_it);
        tcase_add_test(tc, test_device_tree_finish_sorts_and_deduplicates_a_list_filled_by_hand);
        tcase_add_test(tc, test_device_tree_holds_4096_devices_per_resource);
        suite_add_tcase(s, tc);

        return s;
}

int main(void) {
        return kdp_test_run(device_tree_suite());
}
