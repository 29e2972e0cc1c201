/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/byte_buffer_reader.h>
#include <grpc/slice.h>

#include "deviceplugin/v1beta1/api.pb-c.h"
#include "pluginregistration/v1/api.pb-c.h"
#include "podresources/v1/api.pb-c.h"
#include "proto-conv.h"
#include "wire-walk.h"

typedef V1beta1__ContainerAllocateResponse__EnvsEntry EnvsEntry;
typedef V1beta1__ContainerAllocateResponse__AnnotationsEntry AnnotationsEntry;

static int pack_message(const ProtobufCMessage *m, uint8_t **ret, size_t *ret_size) {
        size_t size = protobuf_c_message_get_packed_size(m);
        uint8_t *buf = malloc(size ? size : 1);

        if (!buf)
                return -ENOMEM;
        *ret_size = protobuf_c_message_pack(m, buf);
        *ret = buf;
        return 0;
}

grpc_byte_buffer *kdp_proto_conv_buffer(const uint8_t *data, size_t size) {
        grpc_slice slice = grpc_slice_from_copied_buffer((const char *) data, size);
        grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&slice, 1);

        grpc_slice_unref(slice);
        return bb;
}

static int pack_buffer(const ProtobufCMessage *m, grpc_byte_buffer **ret) {
        _cleanup_free_ uint8_t *buf = NULL;
        size_t size;
        int r;

        r = pack_message(m, &buf, &size);
        if (r < 0)
                return r;
        *ret = kdp_proto_conv_buffer(buf, size);
        return *ret ? 0 : -ENOMEM;
}

static const char *health_string(kdp_health h) {
        return h == KDP_HEALTHY ? "Healthy" : "Unhealthy";
}

/* Per device: the Device, its TopologyInfo and its NUMANodes, all in one block. */
typedef struct device_msg {
        V1beta1__Device dev;
        V1beta1__TopologyInfo topo;
        V1beta1__NUMANode nodes[KDP_DEVICE_NUMA_MAX];
        V1beta1__NUMANode *node_ptrs[KDP_DEVICE_NUMA_MAX];
} device_msg;

static void fill_device(device_msg *m, const kdp_device *d) {
        v1beta1__device__init(&m->dev);
        m->dev.id = d->id;
        m->dev.health = (char *) health_string(d->health);
        if (d->n_numa_nodes == 0)
                return;
        v1beta1__topology_info__init(&m->topo);
        for (unsigned i = 0; i < d->n_numa_nodes; i++) {
                v1beta1__numanode__init(&m->nodes[i]);
                m->nodes[i].id = d->numa_nodes[i];
                m->node_ptrs[i] = &m->nodes[i];
        }
        m->topo.n_nodes = d->n_numa_nodes;
        m->topo.nodes = m->node_ptrs;
        m->dev.topology = &m->topo;
}

int kdp_proto_conv_pack_list(const kdp_device_list *l, uint8_t **ret, size_t *ret_size) {
        V1beta1__ListAndWatchResponse resp = V1BETA1__LIST_AND_WATCH_RESPONSE__INIT;
        _cleanup_free_ device_msg *msgs = NULL;
        _cleanup_free_ V1beta1__Device **ptrs = NULL;
        size_t n = l->n_devices;

        msgs = calloc(n ? n : 1, sizeof(*msgs));
        ptrs = calloc(n ? n : 1, sizeof(*ptrs));
        if (!msgs || !ptrs)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                fill_device(&msgs[i], &l->devices[i]);
                ptrs[i] = &msgs[i].dev;
        }
        resp.n_devices = n;
        resp.devices = ptrs;
        return pack_message(&resp.base, ret, ret_size);
}

int kdp_proto_conv_pack_options(bool pre_start_required, bool preferred_available, grpc_byte_buffer **ret) {
        V1beta1__DevicePluginOptions o = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;

        o.pre_start_required = pre_start_required;
        o.get_preferred_allocation_available = preferred_available;
        return pack_buffer(&o.base, ret);
}

int kdp_proto_conv_pack_empty(grpc_byte_buffer **ret) {
        V1beta1__Empty e = V1BETA1__EMPTY__INIT;

        return pack_buffer(&e.base, ret);
}

int kdp_proto_conv_pack_plugin_info(const char *resource, grpc_byte_buffer **ret) {
        Pluginregistration__PluginInfo info = PLUGINREGISTRATION__PLUGIN_INFO__INIT;
        char *versions[] = { (char *) "v1beta1" };

        info.type = (char *) "DevicePlugin";
        info.name = (char *) resource;
        info.endpoint = (char *) "";            /* this socket serves the DevicePlugin service too */
        info.n_supported_versions = KDP_ELEMENTSOF(versions);
        info.supported_versions = versions;
        return pack_buffer(&info.base, ret);
}

int kdp_proto_conv_pack_register(const char *resource, const char *endpoint, bool pre_start_required,
                            bool preferred_available, grpc_byte_buffer **ret) {
        V1beta1__RegisterRequest req = V1BETA1__REGISTER_REQUEST__INIT;
        V1beta1__DevicePluginOptions o = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;

        o.pre_start_required = pre_start_required;
        o.get_preferred_allocation_available = preferred_available;
        req.version = (char *) "v1beta1";
        req.endpoint = (char *) endpoint;
        req.resource_name = (char *) resource;
        req.options = &o;
        return pack_buffer(&req.base, ret);
}

/* Scaffolding of one ContainerAllocateResponse; every string is borrowed. */
typedef struct container_msg {
        V1beta1__ContainerAllocateResponse msg;
        EnvsEntry *envs;
        EnvsEntry **env_ptrs;
        AnnotationsEntry *annotations;
        AnnotationsEntry **annotation_ptrs;
        V1beta1__Mount *mounts;
        V1beta1__Mount **mount_ptrs;
        V1beta1__DeviceSpec *devices;
        V1beta1__DeviceSpec **device_ptrs;
        V1beta1__CDIDevice *cdi;
        V1beta1__CDIDevice **cdi_ptrs;
} container_msg;

static void container_msg_done(container_msg *c) {
        free(c->envs);
        free(c->env_ptrs);
        free(c->annotations);
        free(c->annotation_ptrs);
        free(c->mounts);
        free(c->mount_ptrs);
        free(c->devices);
        free(c->device_ptrs);
        free(c->cdi);
        free(c->cdi_ptrs);
}

#define ALLOC_PAIR(items, ptrs, n) \
        ((items) = calloc((n) ? (n) : 1, sizeof(*(items))), (ptrs) = calloc((n) ? (n) : 1, sizeof(*(ptrs))), \
         (items) && (ptrs))

static int fill_container(container_msg *c, const kdp_alloc_response *r) {
        v1beta1__container_allocate_response__init(&c->msg);
        if (!ALLOC_PAIR(c->envs, c->env_ptrs, r->n_envs) ||
            !ALLOC_PAIR(c->annotations, c->annotation_ptrs, r->n_annotations) ||
            !ALLOC_PAIR(c->mounts, c->mount_ptrs, r->n_mounts) ||
            !ALLOC_PAIR(c->devices, c->device_ptrs, r->n_dev_nodes) ||
            !ALLOC_PAIR(c->cdi, c->cdi_ptrs, r->n_cdi_devices))
                return -ENOMEM;
        for (size_t i = 0; i < r->n_envs; i++) {
                v1beta1__container_allocate_response__envs_entry__init(&c->envs[i]);
                c->envs[i].key = (char *) r->envs[i].key;
                c->envs[i].value = (char *) r->envs[i].value;
                c->env_ptrs[i] = &c->envs[i];
        }
        for (size_t i = 0; i < r->n_annotations; i++) {
                v1beta1__container_allocate_response__annotations_entry__init(&c->annotations[i]);
                c->annotations[i].key = (char *) r->annotations[i].key;
                c->annotations[i].value = (char *) r->annotations[i].value;
                c->annotation_ptrs[i] = &c->annotations[i];
        }
        for (size_t i = 0; i < r->n_mounts; i++) {
                v1beta1__mount__init(&c->mounts[i]);
                c->mounts[i].host_path = (char *) r->mounts[i].host_path;
                c->mounts[i].container_path = (char *) r->mounts[i].container_path;
                c->mounts[i].read_only = r->mounts[i].read_only != 0;
                c->mount_ptrs[i] = &c->mounts[i];
        }
        for (size_t i = 0; i < r->n_dev_nodes; i++) {
                v1beta1__device_spec__init(&c->devices[i]);
                c->devices[i].host_path = (char *) r->dev_nodes[i].host_path;
                c->devices[i].container_path = (char *) r->dev_nodes[i].container_path;
                c->devices[i].permissions = (char *) r->dev_nodes[i].permissions;
                c->device_ptrs[i] = &c->devices[i];
        }
        for (size_t i = 0; i < r->n_cdi_devices; i++) {
                v1beta1__cdidevice__init(&c->cdi[i]);
                c->cdi[i].name = r->cdi_devices[i];
                c->cdi_ptrs[i] = &c->cdi[i];
        }
        c->msg.n_envs = r->n_envs;
        c->msg.envs = c->env_ptrs;
        c->msg.n_annotations = r->n_annotations;
        c->msg.annotations = c->annotation_ptrs;
        c->msg.n_mounts = r->n_mounts;
        c->msg.mounts = c->mount_ptrs;
        c->msg.n_devices = r->n_dev_nodes;
        c->msg.devices = c->device_ptrs;
        c->msg.n_cdi_devices = r->n_cdi_devices;
        c->msg.cdi_devices = c->cdi_ptrs;
        return 0;
}

int kdp_proto_conv_pack_allocate(const kdp_alloc_response *containers, size_t n, grpc_byte_buffer **ret) {
        V1beta1__AllocateResponse resp = V1BETA1__ALLOCATE_RESPONSE__INIT;
        _cleanup_free_ container_msg *msgs = calloc(n ? n : 1, sizeof(container_msg));
        _cleanup_free_ V1beta1__ContainerAllocateResponse **ptrs = calloc(n ? n : 1, sizeof(*ptrs));
        int r = msgs && ptrs ? 0 : -ENOMEM;

        for (size_t i = 0; r >= 0 && i < n; i++) {
                r = fill_container(&msgs[i], &containers[i]);
                ptrs[i] = &msgs[i].msg;
        }
        if (r >= 0) {
                resp.n_container_responses = n;
                resp.container_responses = ptrs;
                r = pack_buffer(&resp.base, ret);
        }
        for (size_t i = 0; msgs && i < n; i++)
                container_msg_done(&msgs[i]);
        return r;
}

int kdp_proto_conv_pack_preferred(const kdp_pref_response *containers, size_t n, grpc_byte_buffer **ret) {
        V1beta1__PreferredAllocationResponse resp = V1BETA1__PREFERRED_ALLOCATION_RESPONSE__INIT;
        _cleanup_free_ V1beta1__ContainerPreferredAllocationResponse *msgs = calloc(n ? n : 1, sizeof(*msgs));
        _cleanup_free_ V1beta1__ContainerPreferredAllocationResponse **ptrs = calloc(n ? n : 1, sizeof(*ptrs));

        if (!msgs || !ptrs)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                v1beta1__container_preferred_allocation_response__init(&msgs[i]);
                msgs[i].n_deviceids = containers[i].n_ids;
                msgs[i].deviceids = (char **) containers[i].ids;
                ptrs[i] = &msgs[i];
        }
        resp.n_container_responses = n;
        resp.container_responses = ptrs;
        return pack_buffer(&resp.base, ret);
}

#define F(type, number) { &type##__descriptor, number }
#define BOUND(w, m, ...) { .what = w, .max = m, .fields = { __VA_ARGS__ } }

static const kdp_wire_bound allocate_bounds[] = {
        BOUND("container requests", KDP_PROTO_CONV_MAX_CONTAINERS, F(v1beta1__allocate_request, 1)),
        BOUND("device IDs", KDP_PROTO_CONV_MAX_IDS, F(v1beta1__container_allocate_request, 1)),
};

static const kdp_wire_bound preferred_bounds[] = {
        BOUND("container requests", KDP_PROTO_CONV_MAX_CONTAINERS, F(v1beta1__preferred_allocation_request, 1)),
        BOUND("available device IDs", KDP_PROTO_CONV_MAX_IDS, F(v1beta1__container_preferred_allocation_request, 1)),
        BOUND("must_include device IDs", KDP_PROTO_CONV_MAX_IDS,
              F(v1beta1__container_preferred_allocation_request, 2)),
};

static const kdp_wire_bound prestart_bounds[] = {
        BOUND("device IDs", KDP_PROTO_CONV_MAX_IDS, F(v1beta1__pre_start_container_request, 1)),
};

/* What the kubelet reports of a node: devices, CPUs and memory of one node, a few hundred pods */
#define POD_BOUNDS_COMMON \
        BOUND("device IDs", KDP_PROTO_CONV_MAX_IDS, F(v1__container_devices, 2)), \
        BOUND("NUMA nodes", 2 * KDP_PROTO_CONV_MAX_IDS, F(v1__topology_info, 1))

static const kdp_wire_bound pod_list_bounds[] = {
        BOUND("pods", KDP_PROTO_CONV_MAX_PODS, F(v1__list_pod_resources_response, 1)),
        BOUND("containers", 8 * KDP_PROTO_CONV_MAX_PODS, F(v1__pod_resources, 3)),
        BOUND("device entries", KDP_PROTO_CONV_MAX_IDS, F(v1__container_resources, 2)),
        BOUND("CPU IDs", KDP_PROTO_CONV_MAX_IDS, F(v1__container_resources, 3)),
        BOUND("memory entries", 8 * KDP_PROTO_CONV_MAX_PODS, F(v1__container_resources, 4)),
        BOUND("dynamic resources", 8 * KDP_PROTO_CONV_MAX_PODS, F(v1__container_resources, 5)),
        BOUND("claim resources", 8 * KDP_PROTO_CONV_MAX_PODS, F(v1__dynamic_resource, 4)),
        BOUND("CDI devices", KDP_PROTO_CONV_MAX_IDS, F(v1__claim_resource, 1)),
        POD_BOUNDS_COMMON,
};

static const kdp_wire_bound allocatable_bounds[] = {
        BOUND("device entries", KDP_PROTO_CONV_MAX_IDS, F(v1__allocatable_resources_response, 1)),
        BOUND("CPU IDs", KDP_PROTO_CONV_MAX_IDS, F(v1__allocatable_resources_response, 2)),
        BOUND("memory entries", 8 * KDP_PROTO_CONV_MAX_PODS, F(v1__allocatable_resources_response, 3)),
        POD_BOUNDS_COMMON,
};

#define LIMITS(b, unknown) { .bounds = b, .n_bounds = KDP_ELEMENTSOF(b), .max_unknown = unknown }

static const struct {
        const ProtobufCMessageDescriptor *message;
        kdp_wire_limits limits;
} limits_table[] = {
        { &v1beta1__allocate_request__descriptor, LIMITS(allocate_bounds, KDP_PROTO_CONV_MAX_UNKNOWN) },
        { &v1beta1__preferred_allocation_request__descriptor, LIMITS(preferred_bounds, KDP_PROTO_CONV_MAX_UNKNOWN) },
        { &v1beta1__pre_start_container_request__descriptor, LIMITS(prestart_bounds, KDP_PROTO_CONV_MAX_UNKNOWN) },
        { &v1__list_pod_resources_response__descriptor, LIMITS(pod_list_bounds, KDP_PROTO_CONV_MAX_IDS) },
        { &v1__allocatable_resources_response__descriptor, LIMITS(allocatable_bounds, KDP_PROTO_CONV_MAX_IDS) },
};

static const kdp_wire_limits other_limits = { .max_unknown = KDP_PROTO_CONV_MAX_UNKNOWN };

const kdp_wire_limits *kdp_proto_conv_limits(const ProtobufCMessageDescriptor *desc) {
        for (size_t i = 0; i < KDP_ELEMENTSOF(limits_table); i++)
                if (limits_table[i].message == desc)
                        return &limits_table[i].limits;
        return &other_limits;
}

int kdp_proto_conv_unpack_bytes(const uint8_t *data, size_t size, const ProtobufCMessageDescriptor *desc,
                                ProtobufCMessage **ret, char *err, size_t err_size) {
        ProtobufCMessage *m;
        int r;

        r = kdp_wire_walk_message(desc, kdp_proto_conv_limits(desc), data, size, err, err_size);
        if (r < 0)
                return r;
        m = protobuf_c_message_unpack(desc, NULL, size, data);
        if (!m)
                return -EBADMSG;
        *ret = m;
        return 0;
}

int kdp_proto_conv_unpack_checked(grpc_byte_buffer *bb, const ProtobufCMessageDescriptor *desc, ProtobufCMessage **ret,
                                  char *err, size_t err_size) {
        grpc_byte_buffer_reader reader;
        grpc_slice slice;
        int r;

        if (!bb)
                return kdp_proto_conv_unpack_bytes(NULL, 0, desc, ret, err, err_size);
        if (!grpc_byte_buffer_reader_init(&reader, bb))
                return -EBADMSG;
        slice = grpc_byte_buffer_reader_readall(&reader);
        grpc_byte_buffer_reader_destroy(&reader);
        r = kdp_proto_conv_unpack_bytes(GRPC_SLICE_START_PTR(slice), GRPC_SLICE_LENGTH(slice), desc, ret, err,
                                        err_size);
        grpc_slice_unref(slice);
        return r;
}

int kdp_proto_conv_unpack(grpc_byte_buffer *bb, const ProtobufCMessageDescriptor *desc, ProtobufCMessage **ret) {
        return kdp_proto_conv_unpack_checked(bb, desc, ret, NULL, 0);
}

/* One (resource, ID) pair of a ListPodResourcesResponse, borrowed from it. */
typedef struct pod_pair {
        const char *resource, *id;
} pod_pair;

static int cmp_pair(const void *a, const void *b) {
        const pod_pair *x = a, *y = b;
        int c = strcmp(x->resource, y->resource);

        return c ? c : strcmp(x->id, y->id);
}

static void free_pod_response(V1__ListPodResourcesResponse **m) {
        if (*m)
                v1__list_pod_resources_response__free_unpacked(*m, NULL);
}

static int pod_pairs(const V1__ListPodResourcesResponse *m, pod_pair **ret, size_t *ret_n) {
        _cleanup_free_ pod_pair *v = NULL;
        size_t n = 0, size = 0;

        for (size_t p = 0; p < m->n_pod_resources; p++)
                for (size_t c = 0; c < m->pod_resources[p]->n_containers; c++) {
                        const V1__ContainerResources *cr = m->pod_resources[p]->containers[c];

                        for (size_t d = 0; d < cr->n_devices; d++) {
                                const V1__ContainerDevices *cd = cr->devices[d];

                                if (!cd->resource_name || !*cd->resource_name)
                                        continue;
                                for (size_t i = 0; i < cd->n_device_ids; i++) {
                                        if (!cd->device_ids[i] || !*cd->device_ids[i])
                                                continue;
                                        if (n == size) {
                                                pod_pair *w = reallocarray(v, size ? size * 2 : 16, sizeof(*v));

                                                if (!w)
                                                        return -ENOMEM;
                                                v = w;
                                                size = size ? size * 2 : 16;
                                        }
                                        v[n++] = (pod_pair){ cd->resource_name, cd->device_ids[i] };
                                }
                        }
                }
        if (n > 0)
                qsort(v, n, sizeof(*v), cmp_pair);
        *ret = KDP_TAKE_PTR(v);
        *ret_n = n;
        return 0;
}

/* Appends the pairs [from, to), one resource, its IDs sorted with duplicates, as a new entry. */
static int pod_group(kdp_pod_resources_list *l, const pod_pair *v, size_t from, size_t to) {
        kdp_pod_devices *e;

        e = &l->resources[l->n_resources];
        *e = (kdp_pod_devices){ .resource = strdup(v[from].resource), .ids = calloc(to - from, sizeof(char *)) };
        l->n_resources++;       /* even half-built: kdp_pod_resources_list_done() frees it */
        if (!e->resource || !e->ids)
                return -ENOMEM;
        for (size_t i = from; i < to; i++) {
                if (e->n_ids > 0 && strcmp(e->ids[e->n_ids - 1], v[i].id) == 0)
                        continue;
                if (!(e->ids[e->n_ids] = strdup(v[i].id)))
                        return -ENOMEM;
                e->n_ids++;
        }
        return 0;
}

int kdp_proto_conv_unpack_pod_resources(grpc_byte_buffer *bb, size_t max_size, kdp_pod_resources_list *ret,
                                        char *err, size_t err_size) {
        _cleanup_(free_pod_response) V1__ListPodResourcesResponse *m = NULL;
        _cleanup_free_ pod_pair *v = NULL;
        kdp_pod_resources_list l = { 0 };
        size_t n = 0, groups = 0;
        int r;

        if (bb && grpc_byte_buffer_length(bb) > max_size)
                return -EMSGSIZE;
        r = kdp_proto_conv_unpack_checked(bb, &v1__list_pod_resources_response__descriptor, (ProtobufCMessage **) &m,
                                          err, err_size);
        if (r < 0)
                return r;
        r = pod_pairs(m, &v, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                groups += i == 0 || strcmp(v[i].resource, v[i - 1].resource) != 0;
        if (groups > 0 && !(l.resources = calloc(groups, sizeof(*l.resources))))
                return -ENOMEM;
        for (size_t i = 0, from = 0; r >= 0 && i < n; i++)
                if (i + 1 == n || strcmp(v[i].resource, v[i + 1].resource) != 0) {
                        r = pod_group(&l, v, from, i + 1);
                        from = i + 1;
                }
        if (r < 0) {
                kdp_pod_resources_list_done(&l);
                return r;
        }
        *ret = l;
        return 0;
}
