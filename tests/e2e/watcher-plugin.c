/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * watcher-plugin SOCKET [--type T] [--name N] [--versions V,V...] [--endpoint PATH]
 *                       [--fail-info N] [--fail-options] [--devices ID,ID...]
 *
 * A device plugin that registers through the kubelet's plugin watcher, for the
 * tests of the stand-in kubelet's watcher: it serves pluginregistration.
 * Registration (GetInfo, NotifyRegistrationStatus) and v1beta1.DevicePlugin
 * (GetDevicePluginOptions, ListAndWatch, Allocate) on SOCKET, and on PATH too
 * when --endpoint names one. GetInfo answers type T (default DevicePlugin),
 * name N (default example.com/pw), the versions V (default v1beta1; "" none)
 * and the endpoint PATH (default none). The first N GetInfo calls fail with
 * UNAVAILABLE (--fail-info); with --fail-options every GetDevicePluginOptions
 * fails with UNAVAILABLE "no options". ListAndWatch sends the devices (default
 * dev-0,dev-1), all healthy, once, and holds the stream open.
 *
 * One line on stdout per event, flushed:
 *   listening                          both sockets serve
 *   info                               a GetInfo answered
 *   info-failed                        a GetInfo failed on purpose
 *   notify registered=B error=TEXT     what NotifyRegistrationStatus told
 *   options                            a GetDevicePluginOptions answered (or failed)
 *   stream-opened                      a ListAndWatch sent its list
 *   stream-cancelled                   a ListAndWatch was ended by its caller
 *   allocate ids=ID,ID                 an Allocate answered (env WATCHER_PLUGIN=ids)
 *
 * Runs until SIGTERM or SIGINT, then removes its sockets (if still its own)
 * and exits 0. A test program: one thread, one completion queue.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include "deviceplugin/v1beta1/api.pb-c.h"
#include "pluginregistration/v1/api.pb-c.h"

#define MAX_SOCKETS 2

typedef struct tag {
        void (*on_done)(struct tag *t, bool ok);
} tag;

typedef struct call {
        tag tag;                                /* first: the call is its own tag */
        grpc_call *call;
        grpc_call_details details;
        grpc_metadata_array md;
        grpc_byte_buffer *in, *out;
        char *method;
        int cancelled;
} call;

static struct {
        const char *type, *name, *endpoint;
        char **versions, **devices;             /* into versions_buf, devices_buf */
        char *versions_buf, *devices_buf;
        size_t n_versions, n_devices;
        unsigned fail_info;
        bool fail_options;
        const char *sockets[MAX_SOCKETS];
        struct stat socket_st[MAX_SOCKETS];
        size_t n_sockets;
        grpc_server *server;
        grpc_completion_queue *cq;
        bool stopping, shut_down;
} plugin = {
        .type = "DevicePlugin",
        .name = "example.com/pw",
        .endpoint = "",
};

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig) {
        (void) sig;
        stop_requested = 1;
}

static void event(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void event(const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        putchar('\n');
        fflush(stdout);
}

/* "a,b,c" -> {a, b, c}; "" -> none. The strings point into `s`. */
static char **split(char *s, size_t *ret_n) {
        char **v = calloc(strlen(s) + 1, sizeof(*v));
        size_t n = 0;

        if (!v)
                abort();
        for (char *save = NULL, *p = strtok_r(s, ",", &save); p; p = strtok_r(NULL, ",", &save))
                v[n++] = p;
        *ret_n = n;
        return v;
}

static call *call_free(call *c) {
        if (c->call)
                grpc_call_unref(c->call);
        if (c->in)
                grpc_byte_buffer_destroy(c->in);
        if (c->out)
                grpc_byte_buffer_destroy(c->out);
        grpc_call_details_destroy(&c->details);
        grpc_metadata_array_destroy(&c->md);
        free(c->method);
        free(c);
        return NULL;
}

static grpc_byte_buffer *pack(const ProtobufCMessage *m) {
        grpc_slice s = grpc_slice_malloc(protobuf_c_message_get_packed_size(m));
        grpc_byte_buffer *bb;

        (void) protobuf_c_message_pack(m, GRPC_SLICE_START_PTR(s));
        bb = grpc_raw_byte_buffer_create(&s, 1);
        grpc_slice_unref(s);
        return bb;
}

static ProtobufCMessage *unpack(const ProtobufCMessageDescriptor *d, grpc_byte_buffer *bb) {
        grpc_byte_buffer_reader r;
        ProtobufCMessage *m;
        grpc_slice s;

        if (!bb || !grpc_byte_buffer_reader_init(&r, bb))
                return NULL;
        s = grpc_byte_buffer_reader_readall(&r);
        grpc_byte_buffer_reader_destroy(&r);
        m = protobuf_c_message_unpack(d, NULL, GRPC_SLICE_LENGTH(s), GRPC_SLICE_START_PTR(s));
        grpc_slice_unref(s);
        return m;
}

static void start(call *c, grpc_op *ops, size_t n, void (*on_done)(tag *t, bool ok)) {
        c->tag.on_done = on_done;
        if (grpc_call_start_batch(c->call, ops, n, &c->tag, NULL) != GRPC_CALL_OK)
                c = call_free(c);
}

static void on_finished(tag *t, bool ok) {
        (void) ok;
        (void) call_free((call *) t);
}

/* Answers with `out` (taken; NULL: only the status). */
static void reply(call *c, grpc_status_code code, const char *text, grpc_byte_buffer *out) {
        grpc_slice details = grpc_slice_from_copied_string(text);
        grpc_op ops[3] = { 0 }, *op = ops;

        c->out = out;
        if (out) {
                op->op = GRPC_OP_SEND_MESSAGE;
                op->data.send_message.send_message = out;
                op++;
        }
        op->op = GRPC_OP_SEND_STATUS_FROM_SERVER;
        op->data.send_status_from_server.status = code;
        op->data.send_status_from_server.status_details = &details;
        op++;
        op->op = GRPC_OP_RECV_CLOSE_ON_SERVER;
        op->data.recv_close_on_server.cancelled = &c->cancelled;
        op++;
        start(c, ops, (size_t) (op - ops), on_finished);
        grpc_slice_unref(details);
}

static void on_stream_closed(tag *t, bool ok) {
        (void) ok;
        if (!plugin.stopping)
                event("stream-cancelled");
        (void) call_free((call *) t);
}

static void on_list_sent(tag *t, bool ok) {
        call *c = (call *) t;
        grpc_op op = { .op = GRPC_OP_RECV_CLOSE_ON_SERVER };

        if (!ok) {
                (void) call_free(c);
                return;
        }
        op.data.recv_close_on_server.cancelled = &c->cancelled;
        start(c, &op, 1, on_stream_closed);
}

static void list_and_watch(call *c) {
        V1beta1__ListAndWatchResponse m = V1BETA1__LIST_AND_WATCH_RESPONSE__INIT;
        V1beta1__Device *devs = calloc(plugin.n_devices + 1, sizeof(*devs));
        V1beta1__Device **ptrs = calloc(plugin.n_devices + 1, sizeof(*ptrs));
        grpc_op op = { .op = GRPC_OP_SEND_MESSAGE };

        if (!devs || !ptrs)
                abort();
        for (size_t i = 0; i < plugin.n_devices; i++) {
                v1beta1__device__init(&devs[i]);
                devs[i].id = plugin.devices[i];
                devs[i].health = (char *) "Healthy";
                ptrs[i] = &devs[i];
        }
        m.n_devices = plugin.n_devices;
        m.devices = ptrs;
        c->out = pack(&m.base);
        free(devs);
        free(ptrs);
        op.data.send_message.send_message = c->out;
        event("stream-opened");
        start(c, &op, 1, on_list_sent);
}

static void get_info(call *c) {
        Pluginregistration__PluginInfo m = PLUGINREGISTRATION__PLUGIN_INFO__INIT;

        if (plugin.fail_info > 0) {
                plugin.fail_info--;
                event("info-failed");
                reply(c, GRPC_STATUS_UNAVAILABLE, "not ready yet", NULL);
                return;
        }
        m.type = (char *) plugin.type;
        m.name = (char *) plugin.name;
        m.endpoint = (char *) plugin.endpoint;
        m.n_supported_versions = plugin.n_versions;
        m.supported_versions = plugin.versions;
        event("info");
        reply(c, GRPC_STATUS_OK, "", pack(&m.base));
}

static void notify(call *c) {
        Pluginregistration__RegistrationStatusResponse resp = PLUGINREGISTRATION__REGISTRATION_STATUS_RESPONSE__INIT;
        Pluginregistration__RegistrationStatus *m;

        m = (Pluginregistration__RegistrationStatus *) unpack(&pluginregistration__registration_status__descriptor,
                                                              c->in);
        if (!m) {
                reply(c, GRPC_STATUS_INTERNAL, "undecodable RegistrationStatus", NULL);
                return;
        }
        event("notify registered=%s error=%s", m->plugin_registered ? "true" : "false", m->error);
        protobuf_c_message_free_unpacked(&m->base, NULL);
        reply(c, GRPC_STATUS_OK, "", pack(&resp.base));
}

static void allocate(call *c) {
        V1beta1__AllocateResponse resp = V1BETA1__ALLOCATE_RESPONSE__INIT;
        V1beta1__ContainerAllocateResponse cr = V1BETA1__CONTAINER_ALLOCATE_RESPONSE__INIT;
        V1beta1__ContainerAllocateResponse *crs[] = { &cr };
        V1beta1__ContainerAllocateResponse__EnvsEntry env = V1BETA1__CONTAINER_ALLOCATE_RESPONSE__ENVS_ENTRY__INIT;
        V1beta1__ContainerAllocateResponse__EnvsEntry *envs[] = { &env };
        V1beta1__AllocateRequest *m;
        char ids[1024] = "";

        m = (V1beta1__AllocateRequest *) unpack(&v1beta1__allocate_request__descriptor, c->in);
        if (!m || m->n_container_requests != 1) {
                reply(c, GRPC_STATUS_INVALID_ARGUMENT, "one container expected", NULL);
                if (m)
                        protobuf_c_message_free_unpacked(&m->base, NULL);
                return;
        }
        for (size_t i = 0; i < m->container_requests[0]->n_devices_ids; i++)
                snprintf(ids + strlen(ids), sizeof(ids) - strlen(ids), "%s%s", i > 0 ? "," : "",
                         m->container_requests[0]->devices_ids[i]);
        protobuf_c_message_free_unpacked(&m->base, NULL);
        env.key = (char *) "WATCHER_PLUGIN";
        env.value = ids;
        cr.n_envs = 1;
        cr.envs = envs;
        resp.n_container_responses = 1;
        resp.container_responses = crs;
        event("allocate ids=%s", ids);
        reply(c, GRPC_STATUS_OK, "", pack(&resp.base));
}

static void on_request(tag *t, bool ok) {
        V1beta1__DevicePluginOptions options = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
        call *c = (call *) t;

        if (!ok) {
                (void) call_free(c);
                return;
        }
        if (strcmp(c->method, "/pluginregistration.Registration/GetInfo") == 0)
                get_info(c);
        else if (strcmp(c->method, "/pluginregistration.Registration/NotifyRegistrationStatus") == 0)
                notify(c);
        else if (strcmp(c->method, "/v1beta1.DevicePlugin/GetDevicePluginOptions") == 0) {
                event("options");
                if (plugin.fail_options)
                        reply(c, GRPC_STATUS_UNAVAILABLE, "no options", NULL);
                else
                        reply(c, GRPC_STATUS_OK, "", pack(&options.base));
        } else if (strcmp(c->method, "/v1beta1.DevicePlugin/ListAndWatch") == 0)
                list_and_watch(c);
        else if (strcmp(c->method, "/v1beta1.DevicePlugin/Allocate") == 0)
                allocate(c);
        else
                reply(c, GRPC_STATUS_UNIMPLEMENTED, "unknown method", NULL);
}

static void arm(void);

static void on_new_call(tag *t, bool ok) {
        call *c = (call *) t;
        grpc_op ops[2] = { { .op = GRPC_OP_SEND_INITIAL_METADATA }, { .op = GRPC_OP_RECV_MESSAGE } };

        if (!ok) {
                (void) call_free(c);
                return;
        }
        arm();
        c->method = grpc_slice_to_c_string(c->details.method);
        ops[1].data.recv_message.recv_message = &c->in;
        start(c, ops, 2, on_request);
}

static void arm(void) {
        call *c = calloc(1, sizeof(*c));

        if (!c)
                abort();
        c->tag.on_done = on_new_call;
        grpc_call_details_init(&c->details);
        grpc_metadata_array_init(&c->md);
        if (grpc_server_request_call(plugin.server, &c->call, &c->details, &c->md, plugin.cq, plugin.cq, &c->tag) !=
            GRPC_CALL_OK)
                c = call_free(c);
}

static void on_shutdown(tag *t, bool ok) {
        (void) t;
        (void) ok;
        plugin.shut_down = true;
}

static int usage(void) {
        fputs("usage: watcher-plugin SOCKET [--type T] [--name N] [--versions V,V...] [--endpoint PATH]\n"
              "                      [--fail-info N] [--fail-options] [--devices ID,ID...]\n", stderr);
        return 2;
}

static int parse(int argc, char **argv) {
        char versions[] = "v1beta1", devices[] = "dev-0,dev-1";
        char *v = versions, *d = devices;

        if (argc < 2 || argv[1][0] == '-')
                return usage();
        plugin.sockets[plugin.n_sockets++] = argv[1];
        for (int i = 2; i < argc; i += 2) {
                const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

                if (strcmp(opt, "--fail-options") == 0) {
                        plugin.fail_options = true;
                        i--;
                        continue;
                }
                if (!val)
                        return usage();
                if (strcmp(opt, "--type") == 0)
                        plugin.type = val;
                else if (strcmp(opt, "--name") == 0)
                        plugin.name = val;
                else if (strcmp(opt, "--versions") == 0)
                        v = argv[i + 1];
                else if (strcmp(opt, "--endpoint") == 0 && plugin.n_sockets < MAX_SOCKETS)
                        plugin.endpoint = plugin.sockets[plugin.n_sockets++] = val;
                else if (strcmp(opt, "--fail-info") == 0)
                        plugin.fail_info = (unsigned) strtoul(val, NULL, 10);
                else if (strcmp(opt, "--devices") == 0)
                        d = argv[i + 1];
                else
                        return usage();
        }
        plugin.versions_buf = strdup(v);
        plugin.devices_buf = strdup(d);
        if (!plugin.versions_buf || !plugin.devices_buf)
                abort();
        plugin.versions = split(plugin.versions_buf, &plugin.n_versions);
        plugin.devices = split(plugin.devices_buf, &plugin.n_devices);
        return 0;
}

static int serve(void) {
        grpc_server_credentials *creds = grpc_insecure_server_credentials_create();
        char addr[4096];

        plugin.cq = grpc_completion_queue_create_for_next(NULL);
        plugin.server = grpc_server_create(NULL, NULL);
        grpc_server_register_completion_queue(plugin.server, plugin.cq, NULL);
        for (size_t i = 0; i < plugin.n_sockets; i++) {
                snprintf(addr, sizeof(addr), "unix:%s", plugin.sockets[i]);
                if (!grpc_server_add_http2_port(plugin.server, addr, creds)) {
                        fprintf(stderr, "watcher-plugin: cannot listen on %s\n", plugin.sockets[i]);
                        return 1;
                }
        }
        grpc_server_credentials_release(creds);
        grpc_server_start(plugin.server);
        for (size_t i = 0; i < plugin.n_sockets; i++)
                (void) stat(plugin.sockets[i], &plugin.socket_st[i]);
        arm();
        event("listening");
        return 0;
}

/* Its sockets go, unless another plugin took their place. */
static void remove_sockets(void) {
        struct stat st;

        for (size_t i = 0; i < plugin.n_sockets; i++)
                if (stat(plugin.sockets[i], &st) == 0 && st.st_ino == plugin.socket_st[i].st_ino &&
                    st.st_dev == plugin.socket_st[i].st_dev)
                        (void) unlink(plugin.sockets[i]);
}

static void run(void) {
        tag shutdown = { .on_done = on_shutdown };

        while (!plugin.shut_down) {
                grpc_event ev = grpc_completion_queue_next(
                        plugin.cq, gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(100, GPR_TIMESPAN)),
                        NULL);

                if (ev.type == GRPC_OP_COMPLETE)
                        ((tag *) ev.tag)->on_done(ev.tag, ev.success);
                if (stop_requested && !plugin.stopping) {
                        plugin.stopping = true;
                        remove_sockets();
                        grpc_server_shutdown_and_notify(plugin.server, plugin.cq, &shutdown);
                        grpc_server_cancel_all_calls(plugin.server);
                }
        }
        grpc_server_destroy(plugin.server);
        grpc_completion_queue_shutdown(plugin.cq);
        for (;;) {
                grpc_event ev = grpc_completion_queue_next(plugin.cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);

                if (ev.type == GRPC_QUEUE_SHUTDOWN)
                        break;
                if (ev.type == GRPC_OP_COMPLETE)
                        ((tag *) ev.tag)->on_done(ev.tag, false);
        }
        grpc_completion_queue_destroy(plugin.cq);
}

int main(int argc, char **argv) {
        struct sigaction sa = { .sa_handler = on_signal };
        int r;

        r = parse(argc, argv);
        if (r != 0)
                return r;
        (void) sigaction(SIGTERM, &sa, NULL);
        (void) sigaction(SIGINT, &sa, NULL);
        grpc_init();
        r = serve();
        if (r == 0)
                run();
        grpc_shutdown();
        free(plugin.versions);
        free(plugin.versions_buf);
        free(plugin.devices);
        free(plugin.devices_buf);
        return r;
}
