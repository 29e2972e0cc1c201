/* SPDX-License-Identifier: GPL-2.0-or-later */
/* `kdpctl who`'s join: rows from PodResources answers and plugin lists, a plugin's resource, both formats. */
#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ctl-who-table.h"

#include "kdp-test.h"

/*
 * ---- messages, built on the heap and freed with *__free_unpacked ----
 * NUMA node -1: no topology.
 */

static char *str_copy(const char *s) {
        char *d = strdup(s);

        ck_assert_ptr_nonnull(d);
        return d;
}

static void *zalloc(size_t n, size_t size) {
        void *p = calloc(n ? n : 1, size);

        ck_assert_ptr_nonnull(p);
        return p;
}

static V1__TopologyInfo *topology(int64_t node) {
        V1__TopologyInfo *t = zalloc(1, sizeof(*t));

        v1__topology_info__init(t);
        t->nodes = zalloc(1, sizeof(*t->nodes));
        t->nodes[0] = zalloc(1, sizeof(*t->nodes[0]));
        v1__numanode__init(t->nodes[0]);
        t->nodes[0]->id = node;
        t->n_nodes = 1;
        return t;
}

/* The NULL-terminated pointers from `first` on (`first` NULL: none) in a new array, their number in *n. */
static void *collect(void *first, va_list ap, size_t *n) {
        void **v = zalloc(16, sizeof(*v));

        for (void *p = first; p; p = va_arg(ap, void *)) {
                ck_assert_uint_lt(*n, 16);
                v[(*n)++] = p;
        }
        return v;
}

/* One ContainerDevices: `resource` with the NULL-terminated IDs, on NUMA node `node`. */
static V1__ContainerDevices *devs(const char *resource, int64_t node, const char *first, ...) {
        V1__ContainerDevices *d = zalloc(1, sizeof(*d));
        va_list ap;

        v1__container_devices__init(d);
        d->resource_name = str_copy(resource);
        va_start(ap, first);
        d->device_ids = collect((void *) first, ap, &d->n_device_ids);
        va_end(ap);
        for (size_t i = 0; i < d->n_device_ids; i++)
                d->device_ids[i] = str_copy(d->device_ids[i]);
        if (node >= 0)
                d->topology = topology(node);
        return d;
}

/* A container holding the NULL-terminated ContainerDevices. */
static V1__ContainerResources *ctr(const char *name, V1__ContainerDevices *first, ...) {
        V1__ContainerResources *c = zalloc(1, sizeof(*c));
        va_list ap;

        v1__container_resources__init(c);
        c->name = str_copy(name);
        va_start(ap, first);
        c->devices = collect(first, ap, &c->n_devices);
        va_end(ap);
        return c;
}

static V1__PodResources *pod(const char *ns, const char *name, V1__ContainerResources *first, ...) {
        V1__PodResources *p = zalloc(1, sizeof(*p));
        va_list ap;

        v1__pod_resources__init(p);
        p->namespace_ = str_copy(ns);
        p->name = str_copy(name);
        va_start(ap, first);
        p->containers = collect(first, ap, &p->n_containers);
        va_end(ap);
        return p;
}

static V1__ListPodResourcesResponse *pods(V1__PodResources *first, ...) {
        V1__ListPodResourcesResponse *m = zalloc(1, sizeof(*m));
        va_list ap;

        v1__list_pod_resources_response__init(m);
        va_start(ap, first);
        m->pod_resources = collect(first, ap, &m->n_pod_resources);
        va_end(ap);
        return m;
}

static V1__AllocatableResourcesResponse *allocatable(V1__ContainerDevices *first, ...) {
        V1__AllocatableResourcesResponse *m = zalloc(1, sizeof(*m));
        va_list ap;

        v1__allocatable_resources_response__init(m);
        va_start(ap, first);
        m->devices = collect(first, ap, &m->n_devices);
        va_end(ap);
        return m;
}

static V1beta1__Device *dev(const char *id, const char *health, int64_t node) {
        V1beta1__Device *d = zalloc(1, sizeof(*d));

        v1beta1__device__init(d);
        d->id = str_copy(id);
        d->health = str_copy(health);
        if (node >= 0) {
                d->topology = zalloc(1, sizeof(*d->topology));
                v1beta1__topology_info__init(d->topology);
                d->topology->nodes = zalloc(1, sizeof(*d->topology->nodes));
                d->topology->nodes[0] = zalloc(1, sizeof(*d->topology->nodes[0]));
                v1beta1__numanode__init(d->topology->nodes[0]);
                d->topology->nodes[0]->id = node;
                d->topology->n_nodes = 1;
        }
        return d;
}

/* A plugin at `path` listing the NULL-terminated devices. */
static kdp_ctl_who_plugin plugin(const char *path, V1beta1__Device *first, ...) {
        V1beta1__ListAndWatchResponse *m = zalloc(1, sizeof(*m));
        va_list ap;

        v1beta1__list_and_watch_response__init(m);
        va_start(ap, first);
        m->devices = collect(first, ap, &m->n_devices);
        va_end(ap);
        return (kdp_ctl_who_plugin){ .path = path, .list = m };
}

/* The `n` plugins that follow in a new array. */
static kdp_ctl_who_plugin *plugins(size_t n, ...) {
        kdp_ctl_who_plugin *v = zalloc(n, sizeof(*v));
        va_list ap;

        va_start(ap, n);
        for (size_t i = 0; i < n; i++)
                v[i] = va_arg(ap, kdp_ctl_who_plugin);
        va_end(ap);
        return v;
}

/* ---- the inputs of one test, and its table ---- */

typedef struct fixture {
        kdp_ctl_who_input in;
        kdp_ctl_who_table *table;
} fixture;

static void fixture_done(fixture *f) {
        kdp_ctl_who_input_done(&f->in);
        f->table = kdp_ctl_who_table_free(f->table);
}

static int build(fixture *f, size_t *reterr) {
        return kdp_ctl_who_table_build(&f->in, &f->table, reterr);
}

/* The `allocatable` of row `i`. */
typedef struct nth {
        size_t i, seen;
        int allocatable;
} nth;

static int take_nth(const kdp_ctl_who_row *row, void *userdata) {
        nth *n = userdata;

        if (n->seen++ == n->i)
                n->allocatable = row->allocatable;
        return 0;
}

static int row_allocatable(const kdp_ctl_who_table *t, size_t i) {
        nth n = { .i = i, .allocatable = 99 };

        ck_assert_uint_lt(i, kdp_ctl_who_table_n_rows(t));
        ck_assert_int_eq(kdp_ctl_who_table_foreach(t, take_nth, &n), 0);
        return n.allocatable;
}

static char *table_text(const kdp_ctl_who_table *t, bool json) {
        char *buf = NULL;
        size_t size = 0;
        FILE *m = open_memstream(&buf, &size);

        ck_assert_ptr_nonnull(m);
        if (json)
                ck_assert_int_eq(kdp_ctl_who_table_print_json(m, t), 0);
        else
                ck_assert_int_eq(kdp_ctl_who_table_print(m, t), 0);
        ck_assert_int_eq(fclose(m), 0);
        return buf;
}

static void assert_text(const kdp_ctl_who_table *t, bool json, const char *expected) {
        _cleanup_free_ char *got = table_text(t, json);

        ck_assert_str_eq(got, expected);
}

/*
 * The kubelet's view alone: a device split over two NUMA nodes (one entry
 * per node) is one row on both; a device two containers hold is a row per
 * holder, sorted; a held device that is not allocatable keeps HEALTH "-";
 * the allocatable devices no one holds are free.
 */
START_TEST(test_ctl_who_table_joins_holders_and_free_devices) {
        _cleanup_(fixture_done) fixture f = { .in = {
                .pods = pods(pod("ns-b", "train", ctr("main", devs("example.com/gpu", 0, "gpu-1", NULL),
                                                      devs("example.com/gpu", 1, "gpu-1", NULL), NULL),
                                 NULL),
                             pod("ns-a", "infer", ctr("side", devs("example.com/gpu", 0, "gpu-1", NULL), NULL),
                                 ctr("app", devs("example.com/nic", -1, "vf-3", "vf-0", NULL), NULL), NULL),
                             NULL),
                .allocatable = allocatable(devs("example.com/gpu", 0, "gpu-1", NULL),
                                           devs("example.com/gpu", 1, "gpu-1", NULL),
                                           devs("example.com/gpu", 1, "gpu-0", NULL),
                                           devs("example.com/nic", -1, "vf-0", NULL),
                                           devs("example.com/nic", -1, "vf-1", NULL), NULL),
        } };

        ck_assert_int_eq(build(&f, NULL), 0);
        ck_assert_uint_eq(kdp_ctl_who_table_n_rows(f.table), 6);
        ck_assert_int_eq(row_allocatable(f.table, 5), 0);
        assert_text(f.table, false,
                    "RESOURCE         DEVICE  HEALTH   NUMA  NAMESPACE  POD    CONTAINER\n"
                    "example.com/gpu  gpu-0   Healthy  1     -          -      -\n"
                    "example.com/gpu  gpu-1   Healthy  0,1   ns-a       infer  side\n"
                    "example.com/gpu  gpu-1   Healthy  0,1   ns-b       train  main\n"
                    "example.com/nic  vf-0    Healthy  -     ns-a       infer  app\n"
                    "example.com/nic  vf-1    Healthy  -     -          -      -\n"
                    "example.com/nic  vf-3    -        -     ns-a       infer  app\n");
}
END_TEST

/* Sorted by resource, then by ID as bytes ("id-10" before "id-2"), whatever order the kubelet answers in. */
START_TEST(test_ctl_who_table_rows_sorted_by_resource_and_id) {
        _cleanup_(fixture_done) fixture f = { .in = {
                .pods = pods(pod("ns", "p", ctr("c", devs("b.com/x", -1, "id-2", NULL), NULL), NULL), NULL),
                .allocatable = allocatable(devs("b.com/x", -1, "id-10", "id-1", NULL),
                                           devs("a.com/x", -1, "id-9", NULL), NULL),
        } };

        ck_assert_int_eq(build(&f, NULL), 0);
        assert_text(f.table, false,
                    "RESOURCE  DEVICE  HEALTH   NUMA  NAMESPACE  POD  CONTAINER\n"
                    "a.com/x   id-9    Healthy  -     -          -    -\n"
                    "b.com/x   id-1    Healthy  -     -          -    -\n"
                    "b.com/x   id-10   Healthy  -     -          -    -\n"
                    "b.com/x   id-2    -        -     ns         p    c\n");
}
END_TEST

/*
 * A plugin's view: its health and NUMA nodes win over the kubelet's, and its
 * devices the kubelet does not name (unhealthy, so not allocatable) are rows.
 */
START_TEST(test_ctl_who_table_plugin_health_and_numa_win) {
        _cleanup_(fixture_done) fixture f = { .in = {
                .pods = pods(pod("default", "p0", ctr("c0", devs("example.com/widget", 0, "w-0", NULL), NULL),
                                 NULL),
                             NULL),
                .allocatable = allocatable(devs("example.com/widget", 0, "w-1", NULL), NULL),
                .plugins = plugins(1, plugin("/dp/kdp-example-example.com_widget.77.1.sock",
                                             dev("w-0", "Unhealthy", 1), dev("w-1", "Healthy", 0),
                                             dev("w-2", "Unhealthy", -1), NULL)),
                .n_plugins = 1,
        } };

        ck_assert_int_eq(build(&f, NULL), 0);
        ck_assert_str_eq(f.in.plugins[0].resource, "example.com/widget");
        assert_text(f.table, false,
                    "RESOURCE            DEVICE  HEALTH     NUMA  NAMESPACE  POD  CONTAINER\n"
                    "example.com/widget  w-0     Unhealthy  1     default    p0   c0\n"
                    "example.com/widget  w-1     Healthy    0     -          -    -\n"
                    "example.com/widget  w-2     Unhealthy  -     -          -    -\n");
        assert_text(f.table, true,
                    "{\n"
                    "  \"allocatableKnown\": true,\n"
                    "  \"devices\": [\n"
                    "    {\"resource\": \"example.com/widget\", \"id\": \"w-0\", \"health\": \"Unhealthy\", "
                    "\"numa\": [1], \"allocatable\": false, \"namespace\": \"default\", \"pod\": \"p0\", "
                    "\"container\": \"c0\"},\n"
                    "    {\"resource\": \"example.com/widget\", \"id\": \"w-1\", \"health\": \"Healthy\", "
                    "\"numa\": [0], \"allocatable\": true, \"namespace\": null, \"pod\": null, \"container\": null},\n"
                    "    {\"resource\": \"example.com/widget\", \"id\": \"w-2\", \"health\": \"Unhealthy\", "
                    "\"numa\": [], \"allocatable\": false, \"namespace\": null, \"pod\": null, \"container\": null}\n"
                    "  ]\n"
                    "}\n");
}
END_TEST

/* Without GetAllocatableResources: allocatable is not known (-1, null), HEALTH "-" without a plugin. */
START_TEST(test_ctl_who_table_allocatable_not_known) {
        _cleanup_(fixture_done) fixture f = { .in = {
                .pods = pods(pod("ns", "p", ctr("c", devs("example.com/x", 3, "x-0", NULL), NULL), NULL), NULL),
        } };

        ck_assert_int_eq(build(&f, NULL), 0);
        ck_assert_int_eq(row_allocatable(f.table, 0), -1);
        assert_text(f.table, false,
                    "RESOURCE       DEVICE  HEALTH  NUMA  NAMESPACE  POD  CONTAINER\n"
                    "example.com/x  x-0     -       3     ns         p    c\n");
        assert_text(f.table, true,
                    "{\n"
                    "  \"allocatableKnown\": false,\n"
                    "  \"devices\": [\n"
                    "    {\"resource\": \"example.com/x\", \"id\": \"x-0\", \"health\": null, \"numa\": [3], "
                    "\"allocatable\": null, \"namespace\": \"ns\", \"pod\": \"p\", \"container\": \"c\"}\n"
                    "  ]\n"
                    "}\n");
}
END_TEST

/* Nothing anywhere: the header alone, and an empty JSON list. */
START_TEST(test_ctl_who_table_empty) {
        _cleanup_(fixture_done) fixture f = { .in = { .pods = pods(NULL), .allocatable = allocatable(NULL) } };

        ck_assert_int_eq(build(&f, NULL), 0);
        ck_assert_uint_eq(kdp_ctl_who_table_n_rows(f.table), 0);
        assert_text(f.table, false, "RESOURCE  DEVICE  HEALTH  NUMA  NAMESPACE  POD  CONTAINER\n");
        assert_text(f.table, true, "{\n  \"allocatableKnown\": true,\n  \"devices\": []\n}\n");
}
END_TEST

/* A peer's strings stay one line in the table and valid JSON; an empty ID is "". */
START_TEST(test_ctl_who_table_escapes_what_peers_send) {
        _cleanup_(fixture_done) fixture f = { .in = {
                .pods = pods(pod("ns", "a\"b\\c\nd", ctr("t\tx", devs("example.com/x", -1, "", NULL), NULL),
                                 NULL),
                             NULL),
        } };

        ck_assert_int_eq(build(&f, NULL), 0);
        assert_text(f.table, false,
                    "RESOURCE       DEVICE  HEALTH  NUMA  NAMESPACE  POD       CONTAINER\n"
                    "example.com/x  \"\"      -       -     ns         a\"b\\c\\nd  t\\tx\n");
        assert_text(f.table, true,
                    "{\n"
                    "  \"allocatableKnown\": false,\n"
                    "  \"devices\": [\n"
                    "    {\"resource\": \"example.com/x\", \"id\": \"\", \"health\": null, \"numa\": [], "
                    "\"allocatable\": null, \"namespace\": \"ns\", \"pod\": \"a\\\"b\\\\c\\nd\", "
                    "\"container\": \"t\\tx\"}\n"
                    "  ]\n"
                    "}\n");
}
END_TEST

/* A kdpd socket name whose BACKEND holds '-': the split the kubelet knows wins, else the first. */
START_TEST(test_ctl_who_table_resource_from_socket_name) {
        _cleanup_(fixture_done) fixture f = { .in = {
                .allocatable = allocatable(devs("vendor.com/gpu", -1, "g-0", NULL),
                                           devs("other.com/nic", -1, "n-9", NULL), NULL),
                .plugins = plugins(3,
                                   plugin("unix:/dp/kdp-my-gpu-vendor.com_gpu.12.3.sock", dev("g-0", "Healthy", -1),
                                          NULL),
                                   plugin("kdp-my-gpu-other.com_a_b.12.4.sock", NULL),
                                   plugin("/dp/kdp-gpu-12.5.sock", dev("n-9", "Healthy", -1), NULL)),
                .n_plugins = 3,
        } };

        ck_assert_int_eq(build(&f, NULL), 0);
        ck_assert_str_eq(f.in.plugins[0].resource, "vendor.com/gpu");
        ck_assert_str_eq(f.in.plugins[1].resource, "gpu-other.com/a_b");       /* the kubelet knows neither */
        ck_assert_str_eq(f.in.plugins[2].resource, "other.com/nic");           /* a short name: by its IDs */
}
END_TEST

/*
 * Not a kdpd name: the kubelet's resource sharing the most device IDs; a tie
 * or no ID in common is -ENXIO naming the plugin; RESOURCE= is taken as given.
 */
START_TEST(test_ctl_who_table_resource_from_ids) {
        _cleanup_(fixture_done) fixture told = { .in = {
                .allocatable = allocatable(devs("a.com/x", -1, "d-0", "d-1", NULL),
                                           devs("b.com/x", -1, "d-1", NULL), NULL),
                .plugins = plugins(1, plugin("/p.sock", dev("d-1", "Healthy", -1), dev("d-0", "Healthy", -1), NULL)),
                .n_plugins = 1,
        } };
        _cleanup_(fixture_done) fixture tie = { .in = {
                .allocatable = allocatable(devs("a.com/x", -1, "d-0", NULL), devs("b.com/x", -1, "d-1", NULL), NULL),
                .plugins = plugins(2, plugin("/q.sock", NULL),
                                   plugin("/p.sock", dev("d-1", "Healthy", -1), dev("d-0", "Healthy", -1), NULL)),
                .n_plugins = 2,
        } };
        _cleanup_(fixture_done) fixture given = { .in = {
                .plugins = plugins(1, plugin("/p.sock", dev("d-0", "Healthy", -1), NULL)),
                .n_plugins = 1,
        } };
        size_t bad = 99;

        ck_assert_int_eq(build(&told, NULL), 0);
        ck_assert_str_eq(told.in.plugins[0].resource, "a.com/x");
        tie.in.plugins[0].resource = str_copy("c.com/x");
        ck_assert_int_eq(build(&tie, &bad), -ENXIO);
        ck_assert_uint_eq(bad, 1);
        ck_assert_ptr_null(tie.table);
        bad = 99;
        ck_assert_int_eq(build(&given, &bad), -ENXIO);
        ck_assert_uint_eq(bad, 0);
        given.in.plugins[0].resource = str_copy("c.com/x");
        ck_assert_int_eq(build(&given, NULL), 0);
        ck_assert_uint_eq(kdp_ctl_who_table_n_rows(given.table), 1);
        ck_assert_int_eq(row_allocatable(given.table, 0), -1);
}
END_TEST

/* Two sockets of one resource: -EEXIST naming the second. */
START_TEST(test_ctl_who_table_one_socket_per_resource) {
        _cleanup_(fixture_done) fixture f = { .in = {
                .plugins = plugins(3, plugin("/dp/kdp-example-example.com_w.1.1.sock", NULL),
                                   plugin("/dp/kdp-example-example.com_v.1.2.sock", NULL),
                                   plugin("/dp/kdp-example-example.com_w.1.3.sock", NULL)),
                .n_plugins = 3,
        } };
        size_t bad = 99;

        ck_assert_int_eq(build(&f, &bad), -EEXIST);
        ck_assert_uint_eq(bad, 2);
}
END_TEST

START_TEST(test_ctl_who_table_parse_socket_spec) {
        kdp_ctl_who_plugin p;

        ck_assert_int_eq(kdp_ctl_who_table_parse_socket("example.com/w=/dp/a=b.sock", &p), 0);
        ck_assert_str_eq(p.resource, "example.com/w");
        ck_assert_str_eq(p.path, "/dp/a=b.sock");
        kdp_ctl_who_plugin_done(&p);
        ck_assert_ptr_null(p.resource);
        /* not a resource name before '=': all of it is the path */
        ck_assert_int_eq(kdp_ctl_who_table_parse_socket("/dp/a=b.sock", &p), 0);
        ck_assert_ptr_null(p.resource);
        ck_assert_str_eq(p.path, "/dp/a=b.sock");
        ck_assert_int_eq(kdp_ctl_who_table_parse_socket("unix:/dp/p.sock", &p), 0);
        ck_assert_ptr_null(p.resource);
        ck_assert_str_eq(p.path, "unix:/dp/p.sock");
}
END_TEST

static Suite *ctl_who_table_suite(void) {
        Suite *s = suite_create("ctl-who-table");
        TCase *rows = tcase_create("rows"), *resources = tcase_create("resources");

        tcase_add_test(rows, test_ctl_who_table_joins_holders_and_free_devices);
        tcase_add_test(rows, test_ctl_who_table_rows_sorted_by_resource_and_id);
        tcase_add_test(rows, test_ctl_who_table_plugin_health_and_numa_win);
        tcase_add_test(rows, test_ctl_who_table_allocatable_not_known);
        tcase_add_test(rows, test_ctl_who_table_empty);
        tcase_add_test(rows, test_ctl_who_table_escapes_what_peers_send);
        suite_add_tcase(s, rows);
        tcase_add_test(resources, test_ctl_who_table_resource_from_socket_name);
        tcase_add_test(resources, test_ctl_who_table_resource_from_ids);
        tcase_add_test(resources, test_ctl_who_table_one_socket_per_resource);
        tcase_add_test(resources, test_ctl_who_table_parse_socket_spec);
        suite_add_tcase(s, resources);
        return s;
}

int main(void) {
        return kdp_test_run(ctl_who_table_suite());
}
