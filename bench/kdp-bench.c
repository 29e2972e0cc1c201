/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kdp-bench: measures a v1beta1 device plugin from the kubelet's side of its
 * socket, with the gRPC C core and protobuf-c. Any plugin works (kdpd, the Go
 * baseline in bench/go-plugin, a vendor's); nothing kdp-specific is assumed.
 *
 *   kdp-bench --socket PATH [--concurrency C] [--calls N] [--warmup W]
 *             [--law-samples K] [--devices-per-call D] [--channels shared|per-thread]
 *             [--method allocate|preferred|prestart] [--size S]
 *
 * What it does, in order:
 *  1. Opens one channel, as the kubelet does: it multiplexes every RPC to a
 *     plugin over one connection (docs/kubelet.md §1.4). --channels per-thread gives
 *     each thread its own connection instead, for comparison.
 *  2. ListAndWatch first-message latency: opens a stream, times the arrival of
 *     the first message, cancels. The first sample also connects the channel
 *     (reported apart); then K samples on the warm channel. The first message
 *     supplies the device IDs used below.
 *  3. Allocate round trip: C threads, each with its own completion queue,
 *     share the N calls; each asks for D devices (default 1), rotating over
 *     the advertised IDs. W untimed calls per thread come first. The timer
 *     covers building the request, the call, and unpacking the answer, which
 *     is what the kubelet pays.
 *     With --method preferred the calls are GetPreferredAllocation instead:
 *     one ContainerPreferredAllocationRequest per call, every advertised ID
 *     available, none required, allocation_size S; an answer counts when it
 *     holds S IDs. A plugin that does not implement the call fails every one
 *     (its GetDevicePluginOptions are not asked). With --method prestart they
 *     are PreStartContainer calls, D IDs each, rotating as Allocate's.
 *
 * Output is one name=value line per figure (times in µs). Exit status 0 when
 * every call succeeded, 1 otherwise.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

#include "deviceplugin/v1beta1/api.pb-c.h"

#define METHOD_LIST_AND_WATCH "/v1beta1.DevicePlugin/ListAndWatch"
#define METHOD_ALLOCATE "/v1beta1.DevicePlugin/Allocate"
#define METHOD_PREFERRED "/v1beta1.DevicePlugin/GetPreferredAllocation"
#define METHOD_PRESTART "/v1beta1.DevicePlugin/PreStartContainer"
#define CALL_TIMEOUT_MS 10000
#define MAX_DEVICES_PER_CALL 1024

typedef struct options {
        const char *socket;
        unsigned concurrency;
        size_t calls;
        size_t warmup;
        size_t law_samples;
        size_t devices_per_call;
        bool per_thread_channels;
        bool preferred;                 /* GetPreferredAllocation instead of Allocate */
        bool prestart;                  /* PreStartContainer instead of Allocate */
        size_t size;                    /* its allocation_size */
} options;

/* What the plugin advertised: borrowed by the workers, read only. */
typedef struct device_ids {
        char **ids;
        size_t n;
} device_ids;

typedef struct worker {
        pthread_t thread;
        const options *opts;
        const device_ids *devs;
        grpc_channel *channel;          /* shared, or owned when per-thread */
        pthread_barrier_t *start;
        size_t first;                   /* global index of this worker's first call */
        size_t n_calls;
        double *latency_us;             /* [n_calls] */
        size_t n_errors;
} worker;

static double now_us(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec * 1e6 + (double) ts.tv_nsec / 1e3;
}

static gpr_timespec deadline_after_ms(int64_t ms) {
        return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(ms, GPR_TIMESPAN));
}

/* One connection per channel even when several channels share a target. */
static grpc_channel *channel_new(const char *socket, bool own_connection) {
        grpc_arg args[] = {
                /* the kubelet's :authority */
                { .type = GRPC_ARG_STRING, .key = (char *) GRPC_ARG_DEFAULT_AUTHORITY,
                  .value.string = (char *) "localhost" },
                { .type = GRPC_ARG_INTEGER, .key = (char *) GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL,
                  .value.integer = own_connection },
        };
        grpc_channel_args cargs = { .num_args = sizeof(args) / sizeof(args[0]), .args = args };
        grpc_channel_credentials *creds = grpc_insecure_credentials_create();
        char target[4096];
        grpc_channel *ch;

        snprintf(target, sizeof(target), "unix:%s", socket);
        ch = grpc_channel_create(target, creds, &cargs);
        grpc_channel_credentials_release(creds);
        return ch;
}

static grpc_byte_buffer *byte_buffer_from(const ProtobufCMessage *msg) {
        grpc_slice s = grpc_slice_malloc(protobuf_c_message_get_packed_size(msg));
        grpc_byte_buffer *bb;

        protobuf_c_message_pack(msg, GRPC_SLICE_START_PTR(s));
        bb = grpc_raw_byte_buffer_create(&s, 1);
        grpc_slice_unref(s);
        return bb;
}

/* Unpacks a received message; NULL if there is none or it does not parse. */
static ProtobufCMessage *unpack(const ProtobufCMessageDescriptor *desc, grpc_byte_buffer *bb,
                                size_t *ret_size) {
        grpc_byte_buffer_reader reader;
        ProtobufCMessage *msg;
        grpc_slice s;

        if (!bb || !grpc_byte_buffer_reader_init(&reader, bb))
                return NULL;
        s = grpc_byte_buffer_reader_readall(&reader);
        grpc_byte_buffer_reader_destroy(&reader);
        msg = protobuf_c_message_unpack(desc, NULL, GRPC_SLICE_LENGTH(s), GRPC_SLICE_START_PTR(s));
        if (ret_size)
                *ret_size = GRPC_SLICE_LENGTH(s);
        grpc_slice_unref(s);
        return msg;
}

static void report_status(const char *what, grpc_status_code status, grpc_slice details) {
        char *text = grpc_slice_to_c_string(details);

        fprintf(stderr, "kdp-bench: %s failed: status %d: %s\n", what, (int) status, text);
        gpr_free(text);
}

/*
 * One unary call on `cq` (a pluck queue): the whole exchange is one batch of
 * six ops. Returns the response buffer (caller destroys it), or NULL after
 * reporting the failure.
 */
static grpc_byte_buffer *unary_call(grpc_channel *ch, grpc_completion_queue *cq, const char *method,
                                    grpc_byte_buffer *request, bool wait_for_ready) {
        grpc_metadata_array initial_md, trailing_md;
        grpc_byte_buffer *response = NULL;
        grpc_status_code status = GRPC_STATUS_UNKNOWN;
        grpc_slice details = grpc_empty_slice();
        grpc_op ops[6];
        grpc_call *call;
        grpc_event ev;

        grpc_metadata_array_init(&initial_md);
        grpc_metadata_array_init(&trailing_md);
        memset(ops, 0, sizeof(ops));
        ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
        ops[0].flags = wait_for_ready ? GRPC_INITIAL_METADATA_WAIT_FOR_READY : 0;
        ops[1].op = GRPC_OP_SEND_MESSAGE;
        ops[1].data.send_message.send_message = request;
        ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
        ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
        ops[3].data.recv_initial_metadata.recv_initial_metadata = &initial_md;
        ops[4].op = GRPC_OP_RECV_MESSAGE;
        ops[4].data.recv_message.recv_message = &response;
        ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
        ops[5].data.recv_status_on_client.trailing_metadata = &trailing_md;
        ops[5].data.recv_status_on_client.status = &status;
        ops[5].data.recv_status_on_client.status_details = &details;

        call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq,
                                        grpc_slice_from_static_string(method), NULL,
                                        deadline_after_ms(CALL_TIMEOUT_MS), NULL);
        if (grpc_call_start_batch(call, ops, 6, call, NULL) != GRPC_CALL_OK) {
                fprintf(stderr, "kdp-bench: %s: could not start the call\n", method);
                status = GRPC_STATUS_INTERNAL;
        } else {
                ev = grpc_completion_queue_pluck(cq, call, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
                if (!ev.success)
                        status = GRPC_STATUS_INTERNAL;
        }
        if (status != GRPC_STATUS_OK) {
                report_status(method, status, details);
                if (response)
                        grpc_byte_buffer_destroy(response);
                response = NULL;
        }
        grpc_slice_unref(details);
        grpc_metadata_array_destroy(&initial_md);
        grpc_metadata_array_destroy(&trailing_md);
        grpc_call_unref(call);
        return response;
}

/*
 * Opens a ListAndWatch stream, waits for its first message, cancels. Returns
 * the µs from starting the call to holding the message, or a negative value
 * on failure. With `ret_devs`, the advertised IDs are copied out.
 */
static double law_first_message(grpc_channel *ch, grpc_completion_queue *cq, bool wait_for_ready,
                                device_ids *ret_devs, size_t *ret_bytes) {
        V1beta1__Empty empty = V1BETA1__EMPTY__INIT;
        grpc_metadata_array initial_md, trailing_md;
        grpc_byte_buffer *request, *response = NULL;
        grpc_status_code status = GRPC_STATUS_UNKNOWN;
        grpc_slice details = grpc_empty_slice();
        V1beta1__ListAndWatchResponse *law;
        double t0, elapsed = -1;
        grpc_op ops[5], status_op;
        grpc_call *call;
        grpc_event ev;
        int first_tag, status_tag;

        grpc_metadata_array_init(&initial_md);
        grpc_metadata_array_init(&trailing_md);
        t0 = now_us();
        request = byte_buffer_from(&empty.base);
        memset(ops, 0, sizeof(ops));
        ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
        ops[0].flags = wait_for_ready ? GRPC_INITIAL_METADATA_WAIT_FOR_READY : 0;
        ops[1].op = GRPC_OP_SEND_MESSAGE;
        ops[1].data.send_message.send_message = request;
        ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
        ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
        ops[3].data.recv_initial_metadata.recv_initial_metadata = &initial_md;
        ops[4].op = GRPC_OP_RECV_MESSAGE;
        ops[4].data.recv_message.recv_message = &response;

        call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq,
                                        grpc_slice_from_static_string(METHOD_LIST_AND_WATCH), NULL,
                                        gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        /* the status op stays pending until the stream ends: here, our cancel */
        memset(&status_op, 0, sizeof(status_op));
        status_op.op = GRPC_OP_RECV_STATUS_ON_CLIENT;
        status_op.data.recv_status_on_client.trailing_metadata = &trailing_md;
        status_op.data.recv_status_on_client.status = &status;
        status_op.data.recv_status_on_client.status_details = &details;
        if (grpc_call_start_batch(call, ops, 5, &first_tag, NULL) != GRPC_CALL_OK ||
            grpc_call_start_batch(call, &status_op, 1, &status_tag, NULL) != GRPC_CALL_OK) {
                fprintf(stderr, "kdp-bench: ListAndWatch: could not start the call\n");
                abort();        /* a programming error, never a plugin's fault */
        }
        ev = grpc_completion_queue_pluck(cq, &first_tag, deadline_after_ms(CALL_TIMEOUT_MS), NULL);
        if (ev.type == GRPC_OP_COMPLETE && ev.success && response) {
                law = (V1beta1__ListAndWatchResponse *) unpack(&v1beta1__list_and_watch_response__descriptor,
                                                               response, ret_bytes);
                elapsed = now_us() - t0;
                if (!law) {
                        fprintf(stderr, "kdp-bench: ListAndWatch: the first message does not parse\n");
                        elapsed = -1;
                } else if (ret_devs) {
                        ret_devs->ids = calloc(law->n_devices ? law->n_devices : 1, sizeof(char *));
                        if (!ret_devs->ids)
                                abort();
                        for (size_t i = 0; i < law->n_devices; i++)
                                if (!(ret_devs->ids[i] = strdup(law->devices[i]->id)))
                                        abort();
                        ret_devs->n = law->n_devices;
                }
                if (law)
                        protobuf_c_message_free_unpacked(&law->base, NULL);
        }
        grpc_call_cancel(call, NULL);
        if (ev.type != GRPC_OP_COMPLETE)        /* timed out: the batch completes after the cancel */
                (void) grpc_completion_queue_pluck(cq, &first_tag, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        (void) grpc_completion_queue_pluck(cq, &status_tag, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        if (elapsed < 0)
                report_status("ListAndWatch", status, details);

        if (response)
                grpc_byte_buffer_destroy(response);
        grpc_byte_buffer_destroy(request);
        grpc_slice_unref(details);
        grpc_metadata_array_destroy(&initial_md);
        grpc_metadata_array_destroy(&trailing_md);
        grpc_call_unref(call);
        return elapsed;
}

/* One Allocate for devices_per_call IDs starting at rotation slot `k`. */
static bool allocate_once(worker *w, grpc_completion_queue *cq, size_t k) {
        const size_t d = w->opts->devices_per_call;
        V1beta1__ContainerAllocateRequest creq = V1BETA1__CONTAINER_ALLOCATE_REQUEST__INIT;
        V1beta1__ContainerAllocateRequest *creqs[1] = { &creq };
        V1beta1__AllocateRequest req = V1BETA1__ALLOCATE_REQUEST__INIT;
        V1beta1__AllocateResponse *resp;
        grpc_byte_buffer *request, *response;
        char *ids[MAX_DEVICES_PER_CALL];
        bool ok;

        for (size_t i = 0; i < d; i++)
                ids[i] = w->devs->ids[(k * d + i) % w->devs->n];
        creq.n_devices_ids = d;
        creq.devices_ids = ids;
        req.n_container_requests = 1;
        req.container_requests = creqs;

        request = byte_buffer_from(&req.base);
        response = unary_call(w->channel, cq, METHOD_ALLOCATE, request, false);
        grpc_byte_buffer_destroy(request);
        resp = (V1beta1__AllocateResponse *) unpack(&v1beta1__allocate_response__descriptor, response, NULL);
        ok = resp && resp->n_container_responses == 1;
        if (response && !ok)
                fprintf(stderr, "kdp-bench: Allocate: unexpected response\n");
        if (resp)
                protobuf_c_message_free_unpacked(&resp->base, NULL);
        if (response)
                grpc_byte_buffer_destroy(response);
        return ok;
}

/*
 * One GetPreferredAllocation: every advertised ID available, none required,
 * `size` wanted. The answer must hold `size` IDs.
 */
static bool preferred_once(worker *w, grpc_completion_queue *cq) {
        V1beta1__ContainerPreferredAllocationRequest creq = V1BETA1__CONTAINER_PREFERRED_ALLOCATION_REQUEST__INIT;
        V1beta1__ContainerPreferredAllocationRequest *creqs[1] = { &creq };
        V1beta1__PreferredAllocationRequest req = V1BETA1__PREFERRED_ALLOCATION_REQUEST__INIT;
        V1beta1__PreferredAllocationResponse *resp;
        grpc_byte_buffer *request, *response;
        bool ok;

        creq.n_available_deviceids = w->devs->n;
        creq.available_deviceids = w->devs->ids;
        creq.allocation_size = (int32_t) w->opts->size;
        req.n_container_requests = 1;
        req.container_requests = creqs;

        request = byte_buffer_from(&req.base);
        response = unary_call(w->channel, cq, METHOD_PREFERRED, request, false);
        grpc_byte_buffer_destroy(request);
        resp = (V1beta1__PreferredAllocationResponse *) unpack(&v1beta1__preferred_allocation_response__descriptor,
                                                               response, NULL);
        ok = resp && resp->n_container_responses == 1 &&
             resp->container_responses[0]->n_deviceids == w->opts->size;
        if (response && !ok)
                fprintf(stderr, "kdp-bench: GetPreferredAllocation: unexpected response\n");
        if (resp)
                protobuf_c_message_free_unpacked(&resp->base, NULL);
        if (response)
                grpc_byte_buffer_destroy(response);
        return ok;
}

/* One PreStartContainer for devices_per_call IDs starting at rotation slot `k`; any answer is success. */
static bool prestart_once(worker *w, grpc_completion_queue *cq, size_t k) {
        const size_t d = w->opts->devices_per_call;
        V1beta1__PreStartContainerRequest req = V1BETA1__PRE_START_CONTAINER_REQUEST__INIT;
        V1beta1__PreStartContainerResponse *resp;
        grpc_byte_buffer *request, *response;
        char *ids[MAX_DEVICES_PER_CALL];
        bool ok;

        for (size_t i = 0; i < d; i++)
                ids[i] = w->devs->ids[(k * d + i) % w->devs->n];
        req.n_devices_ids = d;
        req.devices_ids = ids;
        request = byte_buffer_from(&req.base);
        response = unary_call(w->channel, cq, METHOD_PRESTART, request, false);
        grpc_byte_buffer_destroy(request);
        resp = (V1beta1__PreStartContainerResponse *) unpack(&v1beta1__pre_start_container_response__descriptor,
                                                             response, NULL);
        ok = resp != NULL;
        if (response && !ok)
                fprintf(stderr, "kdp-bench: PreStartContainer: unexpected response\n");
        if (resp)
                protobuf_c_message_free_unpacked(&resp->base, NULL);
        if (response)
                grpc_byte_buffer_destroy(response);
        return ok;
}

/* One timed or warm-up call of the chosen method; `k` is its rotation slot. */
static bool call_once(worker *w, grpc_completion_queue *cq, size_t k) {
        if (w->opts->prestart)
                return prestart_once(w, cq, k);
        return w->opts->preferred ? preferred_once(w, cq) : allocate_once(w, cq, k);
}

static void *worker_run(void *userdata) {
        worker *w = userdata;
        grpc_completion_queue *cq = grpc_completion_queue_create_for_pluck(NULL);

        for (size_t i = 0; i < w->opts->warmup; i++)
                if (!call_once(w, cq, w->first + i))
                        w->n_errors++;
        pthread_barrier_wait(w->start);
        for (size_t i = 0; i < w->n_calls; i++) {
                double t0 = now_us();

                if (!call_once(w, cq, w->first + i))
                        w->n_errors++;
                w->latency_us[i] = now_us() - t0;
        }

        grpc_completion_queue_shutdown(cq);
        while (grpc_completion_queue_pluck(cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
               GRPC_QUEUE_SHUTDOWN)
                ;
        grpc_completion_queue_destroy(cq);
        return NULL;
}

static int compare_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;

        return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted v[0..n), n > 0. */
static double percentile(const double *v, size_t n, double p) {
        size_t rank = (size_t) ceil(p / 100.0 * (double) n);

        return v[rank > 0 ? rank - 1 : 0];
}

static void usage(FILE *f) {
        fprintf(f,
                "Usage: kdp-bench --socket PATH [options]\n"
                "  --socket PATH            the plugin's unix socket\n"
                "  --concurrency C          calling threads (default 1)\n"
                "  --calls N                timed calls in total (default 2000)\n"
                "  --warmup W               untimed calls per thread first (default 100)\n"
                "  --law-samples K          warm ListAndWatch first-message samples (default 20)\n"
                "  --devices-per-call D     device IDs per Allocate (default 1)\n"
                "  --channels shared|per-thread\n"
                "                           one connection for all threads, as the kubelet\n"
                "                           (default), or one per thread\n"
                "  --method allocate|preferred|prestart\n"
                "                           time Allocate (default), GetPreferredAllocation or\n"
                "                           PreStartContainer; the figures are named allocate_*,\n"
                "                           preferred_* or prestart_*\n"
                "  --size S                 GetPreferredAllocation's allocation_size, out of\n"
                "                           every advertised ID (default 1)\n");
}

static bool parse_size(const char *s, size_t min, size_t *ret) {
        char *end;
        unsigned long long v;

        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno || end == s || *end || s[0] == '-' || v < min || v > SIZE_MAX / 2)
                return false;
        *ret = (size_t) v;
        return true;
}

static int parse_options(int argc, char **argv, options *o) {
        static const struct option longopts[] = {
                { "socket", required_argument, NULL, 's' },
                { "concurrency", required_argument, NULL, 'c' },
                { "calls", required_argument, NULL, 'n' },
                { "warmup", required_argument, NULL, 'w' },
                { "law-samples", required_argument, NULL, 'l' },
                { "devices-per-call", required_argument, NULL, 'd' },
                { "channels", required_argument, NULL, 'C' },
                { "method", required_argument, NULL, 'm' },
                { "size", required_argument, NULL, 'S' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        size_t v;
        int c;

        *o = (options){ .concurrency = 1, .calls = 2000, .warmup = 100, .law_samples = 20,
                        .devices_per_call = 1, .size = 1 };
        while ((c = getopt_long(argc, argv, "s:c:n:w:l:d:C:m:S:h", longopts, NULL)) >= 0) {
                switch (c) {
                case 's':
                        o->socket = optarg;
                        break;
                case 'c':
                        if (!parse_size(optarg, 1, &v) || v > 1024)
                                return -EINVAL;
                        o->concurrency = (unsigned) v;
                        break;
                case 'n':
                        if (!parse_size(optarg, 1, &o->calls))
                                return -EINVAL;
                        break;
                case 'w':
                        if (!parse_size(optarg, 0, &o->warmup))
                                return -EINVAL;
                        break;
                case 'l':
                        if (!parse_size(optarg, 0, &o->law_samples))
                                return -EINVAL;
                        break;
                case 'd':
                        if (!parse_size(optarg, 1, &o->devices_per_call) || o->devices_per_call > MAX_DEVICES_PER_CALL)
                                return -EINVAL;
                        break;
                case 'C':
                        if (strcmp(optarg, "shared") == 0)
                                o->per_thread_channels = false;
                        else if (strcmp(optarg, "per-thread") == 0)
                                o->per_thread_channels = true;
                        else
                                return -EINVAL;
                        break;
                case 'm':
                        o->preferred = strcmp(optarg, "preferred") == 0;
                        o->prestart = strcmp(optarg, "prestart") == 0;
                        if (!o->preferred && !o->prestart && strcmp(optarg, "allocate") != 0)
                                return -EINVAL;
                        break;
                case 'S':
                        if (!parse_size(optarg, 1, &o->size) || o->size > MAX_DEVICES_PER_CALL)
                                return -EINVAL;
                        break;
                case 'h':
                        usage(stdout);
                        return 1;
                default:
                        return -EINVAL;
                }
        }
        if (!o->socket || optind != argc)
                return -EINVAL;
        return 0;
}

/* Runs the ListAndWatch part; fills devs. Returns false if the plugin did not answer. */
static bool bench_list_and_watch(const options *o, grpc_channel *ch, device_ids *devs) {
        grpc_completion_queue *cq = grpc_completion_queue_create_for_pluck(NULL);
        double cold, *samples = calloc(o->law_samples ? o->law_samples : 1, sizeof(double));
        size_t bytes = 0, n = 0;
        bool ok;

        if (!samples)
                abort();
        /* waits for the connection: the first sample includes connecting */
        cold = law_first_message(ch, cq, true, devs, &bytes);
        ok = cold >= 0 && devs->n > 0;
        if (ok) {
                printf("devices=%zu\n", devs->n);
                printf("law_message_bytes=%zu\n", bytes);
                printf("law_first_msg_connect_us=%.1f\n", cold);
                for (size_t i = 0; i < o->law_samples; i++) {
                        double t = law_first_message(ch, cq, false, NULL, NULL);

                        if (t >= 0)
                                samples[n++] = t;
                }
                if (n > 0) {
                        qsort(samples, n, sizeof(double), compare_double);
                        printf("law_first_msg_samples=%zu\n", n);
                        printf("law_first_msg_p50_us=%.1f\n", percentile(samples, n, 50));
                        printf("law_first_msg_max_us=%.1f\n", samples[n - 1]);
                }
                ok = n == o->law_samples;
        } else if (cold >= 0) {
                fprintf(stderr, "kdp-bench: the plugin advertises no device\n");
        }
        free(samples);
        grpc_completion_queue_shutdown(cq);
        while (grpc_completion_queue_pluck(cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
               GRPC_QUEUE_SHUTDOWN)
                ;
        grpc_completion_queue_destroy(cq);
        return ok;
}

/* Runs the Allocate (or GetPreferredAllocation) part. Returns the number of failed calls. */
static size_t bench_calls(const options *o, grpc_channel *shared, const device_ids *devs) {
        worker *workers = calloc(o->concurrency, sizeof(worker));
        double *latency = calloc(o->calls, sizeof(double));
        const char *m = o->prestart ? "prestart" : o->preferred ? "preferred" : "allocate";
        pthread_barrier_t start;
        size_t errors = 0, next = 0;
        double t0, elapsed;

        if (!workers || !latency)
                abort();
        pthread_barrier_init(&start, NULL, o->concurrency + 1);
        for (unsigned i = 0; i < o->concurrency; i++) {
                worker *w = &workers[i];
                size_t share = o->calls / o->concurrency + (i < o->calls % o->concurrency);

                *w = (worker){ .opts = o, .devs = devs, .start = &start, .first = next,
                               .n_calls = share, .latency_us = latency + next };
                w->channel = o->per_thread_channels ? channel_new(o->socket, true) : shared;
                next += share;
                if (pthread_create(&w->thread, NULL, worker_run, w) != 0)
                        abort();
        }
        pthread_barrier_wait(&start);
        t0 = now_us();
        for (unsigned i = 0; i < o->concurrency; i++) {
                pthread_join(workers[i].thread, NULL);
                errors += workers[i].n_errors;
                if (o->per_thread_channels)
                        grpc_channel_destroy(workers[i].channel);
        }
        elapsed = now_us() - t0;
        pthread_barrier_destroy(&start);

        qsort(latency, o->calls, sizeof(double), compare_double);
        printf("%s_concurrency=%u\n", m, o->concurrency);
        printf("%s_channels=%s\n", m, o->per_thread_channels ? "per-thread" : "shared");
        if (o->preferred) {
                printf("preferred_size=%zu\n", o->size);
                printf("preferred_available=%zu\n", devs->n);
        } else {
                printf("%s_devices_per_call=%zu\n", m, o->devices_per_call);
        }
        printf("%s_calls=%zu\n", m, o->calls);
        printf("%s_errors=%zu\n", m, errors);
        printf("%s_p50_us=%.1f\n", m, percentile(latency, o->calls, 50));
        printf("%s_p90_us=%.1f\n", m, percentile(latency, o->calls, 90));
        printf("%s_p99_us=%.1f\n", m, percentile(latency, o->calls, 99));
        printf("%s_max_us=%.1f\n", m, latency[o->calls - 1]);
        printf("%s_calls_per_s=%.0f\n", m, (double) o->calls / (elapsed / 1e6));
        free(latency);
        free(workers);
        return errors;
}

int main(int argc, char **argv) {
        device_ids devs = { 0 };
        grpc_channel *ch;
        size_t errors = 0;
        options o;
        bool ok;
        int r;

        r = parse_options(argc, argv, &o);
        if (r > 0)
                return 0;
        if (r < 0) {
                usage(stderr);
                return 2;
        }

        grpc_init();
        ch = channel_new(o.socket, false);
        printf("socket=%s\n", o.socket);
        ok = bench_list_and_watch(&o, ch, &devs);
        if (o.preferred && o.size > devs.n) {
                fprintf(stderr, "kdp-bench: --size %zu: the plugin advertises %zu devices\n", o.size, devs.n);
                ok = false;
        } else if (devs.n > 0) {
                errors = bench_calls(&o, ch, &devs);
        }
        fflush(stdout);
        grpc_channel_destroy(ch);
        grpc_shutdown();

        for (size_t i = 0; i < devs.n; i++)
                free(devs.ids[i]);
        free(devs.ids);
        return ok && errors == 0 ? 0 : 1;
}
