/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz/sriov-link: an rtnetlink datagram (RTM_NEWLINK/DELLINK/NEWROUTE/DELROUTE and control
 * messages) as the SR-IOV backend's link table reads it from its socket (sriov_link_feed()),
 * into a fresh table watching two netdevs, then queried as a scan does.
 */
#include "backend-ctx.h"
#include "fuzz.h"
#include "sriov.h"

static kdp_backend_ctx *ctx;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        const char *roots[_KDP_PATH_KIND_MAX] = { 0 };
        static const kdp_param_spec none[] = { { 0 } };

        if (kdp_backend_ctx_new("sriov", roots, none, NULL, &ctx) < 0)
                abort();
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const char *const served[] = { "ens1f0", "ens1f0v1" };
        _cleanup_(sriov_link_freep) sriov_link *l = NULL;
        int r;

        if (sriov_link_new_unopened(ctx, &l) < 0 || sriov_link_set_served(l, served, 2) < 0)
                abort();
        r = sriov_link_feed(l, data, size);
        if (r > 1)
                abort();
        for (size_t i = 0; i < 2; i++) {
                if (!sriov_link_state_to_string(sriov_link_get_state(l, served[i])))
                        abort();
                (void) sriov_link_has_default_route(l, served[i]);
        }
        (void) sriov_link_take_route_change(l);
        return 0;
}
