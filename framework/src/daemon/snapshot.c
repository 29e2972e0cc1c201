/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>

#include "proto-conv.h"
#include "snapshot.h"

int kdp_snapshot_new(kdp_device_list *list, uint64_t generation, kdp_snapshot **ret) {
        _cleanup_(kdp_snapshot_unrefp) kdp_snapshot *s = NULL;
        _cleanup_free_ uint8_t *law = NULL;
        int r;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        atomic_init(&s->refs, 1);
        s->law_slice = grpc_empty_slice();
        s->generation = generation;
        s->list = *list;
        *list = (kdp_device_list){ 0 };
        for (size_t i = 0; i < s->list.n_devices; i++)
                if (s->list.devices[i].health == KDP_HEALTHY)
                        s->n_healthy++;
        r = kdp_preferred_index_new(s->list.devices, s->list.n_devices, &s->pref);
        if (r < 0)
                return r;
        r = kdp_proto_conv_pack_list(&s->list, &law, &s->law_size);
        if (r < 0)
                return r;
        if (s->law_size > KDP_SNAPSHOT_MAX_MESSAGE)
                return -EMSGSIZE;
        s->law_slice = grpc_slice_from_copied_buffer((const char *) law, s->law_size);
        *ret = KDP_TAKE_PTR(s);
        return 0;
}

kdp_snapshot *kdp_snapshot_ref(kdp_snapshot *s) {
        if (s)
                atomic_fetch_add(&s->refs, 1);
        return s;
}

kdp_snapshot *kdp_snapshot_unref(kdp_snapshot *s) {
        if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
                return NULL;
        kdp_device_list_done(&s->list);
        kdp_preferred_index_free(s->pref);
        grpc_slice_unref(s->law_slice);
        free(s);
        return NULL;
}

ssize_t kdp_snapshot_find(const kdp_snapshot *s, const char *id) {
        const kdp_device *d = kdp_device_list_find(&s->list, id);

        return d ? d - s->list.devices : -1;
}
