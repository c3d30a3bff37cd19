/* The built-in mock Triton server's gRPC side.
 *
 * One libuv loop (on a thread of its own, or the caller's) accepts h2c
 * connections, runs one nghttp2 server session per connection and answers
 * the KServe v2 gRPC methods a load generator uses.  Two models imitate the
 * TensorRT-LLM ensemble and the vLLM backend; the timing of every token
 * comes from tp_mock_engine and is kept with tp_timers, so the client sees
 * deadlines accurate to tens of microseconds.
 *
 * Its output (tp_mock_grpc_out.c) and its inference requests
 * (tp_mock_grpc_infer.c) share the objects of tp_mock_grpc.h. */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>
#include <uv.h>

#include "config.h"
#include "grpc_service.pb-c.h"
#include "mock/tp_mock_engine.h"
#include "mock/tp_mock_grpc.h"
#include "mock/tp_mock_internal.h"
#include "util/tp_reader.h"
#include "transport/tp_grpc.h"
#include "util/tp_common.h"
#include "util/tp_timer.h"

#define SERVICE_PREFIX "/inference.GRPCInferenceService/"
#define MAX_MSG_BYTES (64u << 20)       /* larger requests: RESOURCE_EXHAUSTED */
#define STREAM_WINDOW_BYTES (16u << 20) /* SETTINGS_INITIAL_WINDOW_SIZE */
#define CONN_WINDOW_BYTES (64u << 20)   /* connection receive window */
#define MAX_CONCURRENT_STREAMS 1024u

static const struct {
  const char *name;
  method m;
} methods[] = {
    {"ServerLive", M_SERVER_LIVE},
    {"ServerReady", M_SERVER_READY},
    {"ModelReady", M_MODEL_READY},
    {"ServerMetadata", M_SERVER_METADATA},
    {"ModelMetadata", M_MODEL_METADATA},
    {"ModelInfer", M_MODEL_INFER},
    {"ModelStreamInfer", M_MODEL_STREAM_INFER},
    {"ModelStatistics", M_MODEL_STATISTICS},
};

/* ---- unary methods --------------------------------------------------------------- */

static void reply_bool(mstream *st, const ProtobufCMessageDescriptor *d, bool v) {
  /* ServerLive/ServerReady/ModelReady responses all are { bool = 1 }. */
  Inference__ServerLiveResponse live = INFERENCE__SERVER_LIVE_RESPONSE__INIT;
  Inference__ServerReadyResponse ready = INFERENCE__SERVER_READY_RESPONSE__INIT;
  Inference__ModelReadyResponse mready = INFERENCE__MODEL_READY_RESPONSE__INIT;
  if (d == &inference__server_live_response__descriptor) {
    live.live = v;
    tp__mock_stream_reply(st, &live.base);
  } else if (d == &inference__server_ready_response__descriptor) {
    ready.ready = v;
    tp__mock_stream_reply(st, &ready.base);
  } else {
    mready.ready = v;
    tp__mock_stream_reply(st, &mready.base);
  }
}

static void reply_model_metadata(mstream *st, const uint8_t *data, size_t len) {
  Inference__ModelMetadataRequest *q = inference__model_metadata_request__unpack(NULL, len, data);
  if (!q) {
    tp__mock_stream_finish(st, TP_GRPC_INTERNAL, "cannot parse ModelMetadataRequest");
    return;
  }
  const tp__mock_model *md = tp__mock_find_model(q->name);
  char err[256];
  if (!md || (q->version[0] && strcmp(q->version, "1") != 0)) {
    if (q->version[0] && md)
      snprintf(err, sizeof(err), "Request for unknown model: '%s' version %s is not found", q->name,
               q->version);
    else
      snprintf(err, sizeof(err), "Request for unknown model: '%s' is not found", q->name);
    inference__model_metadata_request__free_unpacked(q, NULL);
    tp__mock_stream_finish(st, TP_GRPC_NOT_FOUND, err);
    return;
  }
  inference__model_metadata_request__free_unpacked(q, NULL);
  Inference__ModelMetadataResponse__TensorMetadata tin[16], tout[4];
  Inference__ModelMetadataResponse__TensorMetadata *pin[16], *pout[4];
  for (size_t i = 0; i < md->n_inputs; i++) {
    Inference__ModelMetadataResponse__TensorMetadata t =
        INFERENCE__MODEL_METADATA_RESPONSE__TENSOR_METADATA__INIT;
    t.name = (char *)md->inputs[i].name;
    t.datatype = (char *)md->inputs[i].datatype;
    t.n_shape = md->inputs[i].n_dims;
    t.shape = (int64_t *)md->inputs[i].dims;
    tin[i] = t;
    pin[i] = &tin[i];
  }
  for (size_t i = 0; i < md->n_outputs; i++) {
    Inference__ModelMetadataResponse__TensorMetadata t =
        INFERENCE__MODEL_METADATA_RESPONSE__TENSOR_METADATA__INIT;
    t.name = (char *)md->outputs[i].name;
    t.datatype = (char *)md->outputs[i].datatype;
    t.n_shape = md->outputs[i].n_dims;
    t.shape = (int64_t *)md->outputs[i].dims;
    tout[i] = t;
    pout[i] = &tout[i];
  }
  char *versions[1] = {"1"};
  Inference__ModelMetadataResponse r = INFERENCE__MODEL_METADATA_RESPONSE__INIT;
  r.name = (char *)md->name;
  r.n_versions = 1;
  r.versions = versions;
  r.platform = (char *)md->platform;
  r.n_inputs = md->n_inputs;
  r.inputs = pin;
  r.n_outputs = md->n_outputs;
  r.outputs = pout;
  tp__mock_stream_reply(st, &r.base);
}

static void reply_model_ready(mstream *st, const uint8_t *data, size_t len) {
  Inference__ModelReadyRequest *q = inference__model_ready_request__unpack(NULL, len, data);
  if (!q) {
    tp__mock_stream_finish(st, TP_GRPC_INTERNAL, "cannot parse ModelReadyRequest");
    return;
  }
  bool ready = tp__mock_find_model(q->name) && (!q->version[0] || strcmp(q->version, "1") == 0);
  inference__model_ready_request__free_unpacked(q, NULL);
  reply_bool(st, &inference__model_ready_response__descriptor, ready);
}

static void reply_server_metadata(mstream *st) {
  char *ext[3] = {"parameters", "binary_tensor_data", "statistics"};
  Inference__ServerMetadataResponse r = INFERENCE__SERVER_METADATA_RESPONSE__INIT;
  r.name = "tokperf-mock";
  r.version = TP_VERSION;
  r.n_extensions = 3;
  r.extensions = ext;
  tp__mock_stream_reply(st, &r.base);
}

static void fill_duration(Inference__StatisticDuration *d, const tp_mock_duration *v) {
  inference__statistic_duration__init(d);
  d->count = v->count;
  d->ns = v->ns;
}

/* ModelStatistics: one entry per model, or the one asked for; the ensemble's
 * composing models (preprocessing, tensorrt_llm, postprocessing) are
 * listed too, as Triton lists every model it has loaded. */
static void reply_model_statistics(mstream *st, const uint8_t *data, size_t len) {
  tp_mock *m = st->c->m;
  Inference__ModelStatisticsRequest *q = inference__model_statistics_request__unpack(NULL, len, data);
  if (!q) {
    tp__mock_stream_finish(st, TP_GRPC_INTERNAL, "cannot parse ModelStatisticsRequest");
    return;
  }
  int which = TP_MOCK_SM_COUNT;
  if (q->name[0]) {
    for (int i = 0; i < TP_MOCK_SM_COUNT; i++)
      if (strcmp(q->name, tp_mock_stats_model_name((tp_mock_stats_model)i)) == 0) which = i;
    const tp__mock_model *md = which == TP_MOCK_SM_COUNT ? tp__mock_find_model(q->name) : NULL;
    if (md) which = (int)md->stats_model;
  }
  if ((q->name[0] && which == TP_MOCK_SM_COUNT) || (q->version[0] && strcmp(q->version, "1") != 0)) {
    char err[300];
    if (q->version[0] && which != TP_MOCK_SM_COUNT)
      snprintf(err, sizeof(err), "requested model version is not available for model '%s'", q->name);
    else
      snprintf(err, sizeof(err), "requested model '%s' is not available", q->name);
    inference__model_statistics_request__free_unpacked(q, NULL);
    tp__mock_stream_finish(st, TP_GRPC_NOT_FOUND, err);
    return;
  }
  inference__model_statistics_request__free_unpacked(q, NULL);

  Inference__ModelStatistics ms[TP_MOCK_SM_COUNT], *pms[TP_MOCK_SM_COUNT];
  Inference__InferStatistics is[TP_MOCK_SM_COUNT];
  Inference__InferBatchStatistics bs[TP_MOCK_SM_COUNT], *pbs[TP_MOCK_SM_COUNT];
  Inference__StatisticDuration d[TP_MOCK_SM_COUNT][11];
  size_t n = 0;
  for (int i = 0; i < TP_MOCK_SM_COUNT; i++) {
    if (which != TP_MOCK_SM_COUNT && which != i) continue;
    const tp_mock_model_stats *v = &m->stats.models[i];
    static const tp_mock_duration zero;
    Inference__StatisticDuration *dd = d[n];
    fill_duration(&dd[0], &v->success);
    fill_duration(&dd[1], &v->fail);
    fill_duration(&dd[2], &v->queue);
    fill_duration(&dd[3], &v->compute_input);
    fill_duration(&dd[4], &v->compute_infer);
    fill_duration(&dd[5], &v->compute_output);
    fill_duration(&dd[6], &zero);
    fill_duration(&dd[7], &zero);
    fill_duration(&dd[8], &v->compute_input);
    fill_duration(&dd[9], &v->compute_infer);
    fill_duration(&dd[10], &v->compute_output);
    inference__infer_statistics__init(&is[n]);
    is[n].success = &dd[0];
    is[n].fail = &dd[1];
    is[n].queue = &dd[2];
    is[n].compute_input = &dd[3];
    is[n].compute_infer = &dd[4];
    is[n].compute_output = &dd[5];
    is[n].cache_hit = &dd[6];
    is[n].cache_miss = &dd[7];
    inference__infer_batch_statistics__init(&bs[n]);
    bs[n].batch_size = 1;
    bs[n].compute_input = &dd[8];
    bs[n].compute_infer = &dd[9];
    bs[n].compute_output = &dd[10];
    pbs[n] = &bs[n];
    inference__model_statistics__init(&ms[n]);
    ms[n].name = (char *)tp_mock_stats_model_name((tp_mock_stats_model)i);
    ms[n].version = "1";
    ms[n].last_inference = v->last_inference_ms;
    ms[n].inference_count = v->inference_count;
    ms[n].execution_count = v->execution_count;
    ms[n].inference_stats = &is[n];
    /* Every execution is a batch of one (no Triton-level batching). */
    ms[n].n_batch_stats = v->execution_count ? 1 : 0;
    ms[n].batch_stats = &pbs[n];
    pms[n] = &ms[n];
    n++;
  }
  Inference__ModelStatisticsResponse r = INFERENCE__MODEL_STATISTICS_RESPONSE__INIT;
  r.n_model_stats = n;
  r.model_stats = pms;
  tp__mock_stream_reply(st, &r.base);
}

static int on_message(void *user_data, const uint8_t *data, size_t len, bool compressed) {
  mstream *st = user_data;
  if (st->finished) return TP_ECANCELED;
  if (compressed) {
    /* No grpc-encoding is accepted (none is advertised either). */
    tp__mock_stream_finish(st, TP_GRPC_UNIMPLEMENTED, "compressed messages are not supported");
    return TP_EUNSUPPORTED;
  }
  if (st->method != M_MODEL_STREAM_INFER) {
    if (st->got_message) {
      tp__mock_stream_finish(st, TP_GRPC_INTERNAL, "more than one request message on a unary call");
      return TP_EPROTO;
    }
    st->got_message = true;
  }
  switch (st->method) {
    case M_SERVER_LIVE: reply_bool(st, &inference__server_live_response__descriptor, true); break;
    case M_SERVER_READY: reply_bool(st, &inference__server_ready_response__descriptor, true); break;
    case M_MODEL_READY: reply_model_ready(st, data, len); break;
    case M_SERVER_METADATA: reply_server_metadata(st); break;
    case M_MODEL_METADATA: reply_model_metadata(st, data, len); break;
    case M_MODEL_INFER: tp__mock_start_infer(st, data, len, true); break;
    case M_MODEL_STREAM_INFER: tp__mock_start_infer(st, data, len, false); break;
    case M_MODEL_STATISTICS: reply_model_statistics(st, data, len); break;
    case M_ENGINE_GENERATE:
    case M_ENGINE_HEALTH:
    case M_ENGINE_ABORT:
    case M_ENGINE_MODEL_INFO: tp__mock_engine_message(st, data, len); break;
    default: break;
  }
  return 0;
}

/* ---- streams ------------------------------------------------------------------------ */

static void stream_free(mstream *st) {
  conn *c = st->c;
  tp_mock *m = c->m;
  if (m->timers) tp_timer_stop(m->timers, &st->trickle_timer);
  while (st->reqs) tp__mock_req_free(st->reqs, TP__MOCK_CANCELLED);
  if (st->counted) c->m->active_streams--;
  if (st->prev)
    st->prev->next = st->next;
  else
    c->streams = st->next;
  if (st->next) st->next->prev = st->prev;
  tp_grpc_reader_fini(&st->reader);
  tp_buf_fini(&st->out);
  tp__mock_fill_blanks(m, &st->blanks, st->blanks_head, 0);
  tp_buf_fini(&st->blanks);
  free(st->message);
  free(st);
}

static void stream_begin(mstream *st) {
  tp_mock *m = st->c->m;
  conn *c = st->c;
  if (c->goaway_sent && st->id > c->goaway_last) {
    /* Above the last_stream_id the GOAWAY announced (it crossed the
     * GOAWAY): never processed, so the client may send it again on another
     * connection (RFC 9113 section 6.8). */
    st->finished = true;
    nghttp2_submit_rst_stream(c->h2, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_REFUSED_STREAM);
    tp__mock_conn_dirty(c);
    return;
  }
  if (st->id > c->last_id) c->last_id = st->id;
  if (st->bad_content_type) {
    nghttp2_nv nv[1] = {{(uint8_t *)":status", (uint8_t *)"415", 7, 3, NGHTTP2_NV_FLAG_NONE}};
    st->finished = true;
    nghttp2_submit_response(st->c->h2, st->id, nv, 1, NULL);
    tp__mock_conn_dirty(st->c);
    return;
  }
  size_t pl = strlen(SERVICE_PREFIX);
  if (!st->path_too_long && strncmp(st->path, SERVICE_PREFIX, pl) == 0) {
    for (size_t i = 0; i < TP_ARRAY_LEN(methods); i++)
      if (strcmp(st->path + pl, methods[i].name) == 0) st->method = methods[i].m;
  }
  if (st->method == M_UNKNOWN && !st->path_too_long) st->method = tp__mock_engine_method(st->path, &st->engine);
  if (st->method == M_UNKNOWN) {
    char msg[200];
    snprintf(msg, sizeof(msg), "Method not found: %s", st->path);
    tp__mock_stream_finish(st, TP_GRPC_UNIMPLEMENTED, msg);
    return;
  }
  if (st->method == M_MODEL_INFER || st->method == M_MODEL_STREAM_INFER || st->method == M_ENGINE_GENERATE) {
    st->counted = true;
    tp__mock_raise_max(&m->max_streams, ++m->active_streams);
    /* goaway_after_streams: this stream is the last one the connection
     * takes; later ones are refused and the connection closes once the
     * streams it has are done. */
    if (++c->n_streams == m->cfg.goaway_after_streams) tp__mock_conn_goaway(c, st->id);
  }
  /* A streaming call's response HEADERS go out with its first request
   * message (tp__mock_start_infer), before any response: gRPC servers send initial
   * metadata before the first message, and waiting for the request lets a
   * trailers_only fault answer with one HEADERS block. */
}

static void stream_remote_close(mstream *st) {
  if (st->remote_closed) return;
  st->remote_closed = true;
  if (st->finished) return;
  if (tp_grpc_reader_mid_message(&st->reader)) {
    tp__mock_stream_finish(st, TP_GRPC_INTERNAL, "the request stream ended inside a message");
    return;
  }
  if (st->method != M_MODEL_STREAM_INFER && !st->got_message) {
    tp__mock_stream_finish(st, TP_GRPC_INTERNAL, "missing request message");
    return;
  }
  tp__mock_stream_maybe_done(st);
}

/* ---- nghttp2 callbacks ----------------------------------------------------------------- */

/* idle_close_ms: a connection with no stream in progress for that long
 * gets a GOAWAY naming the last stream it processed, then closes. */
static void on_idle_close(tp_timer *t, uint64_t now_ns) {
  (void)now_ns;
  conn *c = t->data;
  if (!c->streams) tp__mock_conn_goaway(c, c->last_id);
}

static void conn_arm_idle(conn *c) {
  tp_mock *m = c->m;
  if (!m->cfg.idle_close_ms || c->streams || c->goaway_sent || c->closing || c->lingering || !m->timers)
    return;
  tp_timer_start(m->timers, &c->idle_timer, tp_now_ns() + m->cfg.idle_close_ms * TP_NS_PER_MS);
}

static int on_begin_headers(nghttp2_session *h2, const nghttp2_frame *f, void *user_data) {
  conn *c = user_data;
  if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
  if (c->m->timers) tp_timer_stop(c->m->timers, &c->idle_timer);
  mstream *st = calloc(1, sizeof(*st));
  if (!st) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  st->c = c;
  st->id = f->hd.stream_id;
  tp_grpc_reader_init(&st->reader, MAX_MSG_BYTES);
  tp_buf_init(&st->out);
  tp_buf_init(&st->blanks);
  tp_timer_init(&st->trickle_timer, tp__mock_on_trickle, st);
  st->next = c->streams;
  if (c->streams) c->streams->prev = st;
  c->streams = st;
  nghttp2_session_set_stream_user_data(h2, st->id, st);
  return 0;
}

static int on_header(nghttp2_session *h2, const nghttp2_frame *f, const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags, void *user_data) {
  if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
  mstream *st = nghttp2_session_get_stream_user_data(h2, f->hd.stream_id);
  if (!st) return 0;
  if (namelen == 5 && memcmp(name, ":path", 5) == 0) {
    if (valuelen >= sizeof(st->path)) {
      st->path_too_long = true;
      valuelen = sizeof(st->path) - 1;
    }
    memcpy(st->path, value, valuelen);
    st->path[valuelen] = 0;
  } else if (namelen == 12 && memcmp(name, "content-type", 12) == 0) {
    st->bad_content_type = valuelen < 16 || memcmp(value, "application/grpc", 16) != 0;
  } else if (namelen == 11 && memcmp(name, "traceparent", 11) == 0 && valuelen < sizeof(st->traceparent)) {
    /* Logged with the request (nghttp2 has refused control bytes). */
    memcpy(st->traceparent, value, valuelen);
    st->traceparent[valuelen] = 0;
  }
  return 0;
}

static int on_frame_recv(nghttp2_session *h2, const nghttp2_frame *f, void *user_data) {
  if (f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA) return 0;
  mstream *st = nghttp2_session_get_stream_user_data(h2, f->hd.stream_id);
  if (!st) return 0;
  if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST) {
    /* Stats: the inference stream counts from its request HEADERS. */
    stream_begin(st);
  }
  if (f->hd.flags & NGHTTP2_FLAG_END_STREAM) stream_remote_close(st);
  return 0;
}

static int on_data_chunk(nghttp2_session *h2, uint8_t flags, int32_t sid, const uint8_t *data, size_t len,
                         void *user_data) {
  mstream *st = nghttp2_session_get_stream_user_data(h2, sid);
  if (!st || st->finished) return 0;
  int rv = tp_grpc_reader_feed(&st->reader, data, len, on_message, st);
  if (rv == TP_ETOOBIG)
    tp__mock_stream_finish(st, TP_GRPC_RESOURCE_EXHAUSTED, "received message larger than max (64 MiB)");
  else if (rv == TP_ENOMEM)
    tp__mock_stream_finish(st, TP_GRPC_RESOURCE_EXHAUSTED, "out of memory");
  return 0;
}

/* A call that ends before the client half-closed is followed by
 * RST_STREAM(NO_ERROR) so both sides can free it (PROTOCOL-HTTP2.md). */
static int on_frame_send(nghttp2_session *h2, const nghttp2_frame *f, void *user_data) {
  if (f->hd.type != NGHTTP2_HEADERS || !(f->hd.flags & NGHTTP2_FLAG_END_STREAM)) return 0;
  mstream *st = nghttp2_session_get_stream_user_data(h2, f->hd.stream_id);
  if (st && !st->remote_closed)
    nghttp2_submit_rst_stream(h2, NGHTTP2_FLAG_NONE, f->hd.stream_id, NGHTTP2_NO_ERROR);
  return 0;
}

/* Every way a stream ends (completion or the client's RST_STREAM) comes
 * here; requests still running on it are cancelled and free their batch
 * slots. */
static int on_stream_close(nghttp2_session *h2, int32_t sid, uint32_t error_code, void *user_data) {
  conn *c = user_data;
  mstream *st = nghttp2_session_get_stream_user_data(h2, sid);
  if (!st) return 0;
  nghttp2_session_set_stream_user_data(h2, sid, NULL);
  stream_free(st);
  /* close_after_stream: one finished stream ends the connection, as a
   * server with a limit on streams per connection does; the streams
   * already taken still finish. */
  if (c->m->cfg.close_after_stream) tp__mock_conn_goaway(c, c->last_id);
  conn_arm_idle(c);
  return 0;
}

/* ---- connections --------------------------------------------------------------------- */

static void on_conn_closed(uv_handle_t *h) {
  free(h->data);
}

/* Everything but the socket handle is released at once, so nothing refers
 * to the connection's streams or requests once this returns; the struct
 * itself goes in the close callback, after libuv cancelled pending writes. */
void tp__mock_conn_close(conn *c) {
  if (c->closing) return;
  tp_mock *m = c->m;
  c->closing = true;
  if (c->dirty) {
    conn **pp = &m->dirty;
    while (*pp && *pp != c) pp = &(*pp)->dirty_next;
    if (*pp) *pp = c->dirty_next;
    c->dirty = false;
  }
  if (m->timers) {
    tp_timer_stop(m->timers, &c->idle_timer);
    tp_timer_stop(m->timers, &c->linger_timer);
  }
  while (c->streams) {
    nghttp2_session_set_stream_user_data(c->h2, c->streams->id, NULL);
    stream_free(c->streams);
  }
  tp__mock_fill_blanks(m, &c->chunk_blanks, 0, 0);
  tp_buf_fini(&c->chunk_blanks);
  nghttp2_session_del(c->h2);
  c->h2 = NULL;
  /* Before the socket closes: its fd number may be reused at once. */
  if (c->rsock && m->reader) tp_reader_remove(m->reader, c->rsock);
  c->rsock = NULL;
  if (c->prev)
    c->prev->next = c->next;
  else
    m->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
}

/* A chunk from the reader thread (tp_reader.h), in arrival order: the
 * bytes are fed to nghttp2 here, on the loop, with the request clock at
 * the chunk's arrival stamp, just as a read of the loop's own would be. */
void tp__mock_grpc_on_chunk(void *owner, const uint8_t *data, ssize_t nread, uint64_t stamp_ns) {
  conn *c = owner;
  if (c->closing) return;
  if (nread < 0) {
    tp__mock_conn_close(c);
    return;
  }
  if (nread == 0 || c->lingering) return; /* nothing more is processed */
  c->m->arrival_ns = stamp_ns;
  ssize_t rv = nghttp2_session_mem_recv(c->h2, data, (size_t)nread);
  c->m->arrival_ns = 0;
  if (rv < 0) {
    /* A bad preface or a fatal protocol error: nghttp2 may have queued a
     * GOAWAY; try to send it, then the flush closes the connection. */
    tp__mock_conn_flush(c);
    tp__mock_conn_close(c);
    return;
  }
  tp__mock_conn_dirty(c);
}

void tp__mock_grpc_on_connection(uv_stream_t *server, int status) {
  tp_mock *m = server->data;
  if (status < 0 || m->stopping) return;
  conn *c = calloc(1, sizeof(*c));
  if (!c) return;
  c->m = m;
  c->tcp.data = c;
  tp_timer_init(&c->idle_timer, on_idle_close, c);
  tp_timer_init(&c->linger_timer, tp__mock_on_linger_over, c);
  if (!tp__mock_accept(m, server, &c->tcp, on_conn_closed)) return;
  nghttp2_session *h2;
  if (nghttp2_session_server_new(&h2, m->cbs, c) != 0) {
    uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
    return;
  }
  c->h2 = h2;
  nghttp2_settings_entry iv[2] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, MAX_CONCURRENT_STREAMS},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, STREAM_WINDOW_BYTES},
  };
  nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, iv, 2);
  /* SETTINGS only changes stream windows; the connection window grows by
   * WINDOW_UPDATE on stream 0, which this sends. */
  nghttp2_session_set_local_window_size(c->h2, NGHTTP2_FLAG_NONE, 0, CONN_WINDOW_BYTES);
  c->next = m->conns;
  if (m->conns) m->conns->prev = c;
  m->conns = c;
  uv_os_fd_t fd;
  if (uv_fileno((uv_handle_t *)&c->tcp, &fd) != 0 || !(c->rsock = tp_reader_add(m->reader, fd, c))) {
    tp__mock_conn_close(c);
    return;
  }
  conn_arm_idle(c);
  tp__mock_conn_dirty(c);
}

int tp__mock_grpc_callbacks_new(void **out) {
  nghttp2_session_callbacks *cbs;
  if (nghttp2_session_callbacks_new(&cbs) != 0) return TP_ENOMEM;
  nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
  nghttp2_session_callbacks_set_on_frame_send_callback(cbs, on_frame_send);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
  *out = cbs;
  return 0;
}
