/* A protocol client: one transport plus one API adapter, seen by the run as
 * "send this prompt, tell me about every response and about the end".
 *
 * The run (scheduler, records, statistics) knows nothing of protocols; a
 * client knows nothing of scheduling or statistics.  Triton over gRPC is the
 * first client; HTTP clients (OpenAI-compatible, Triton generate) implement
 * the same operations.  A caller opens one with tp_client_open
 * (tp_client_factory.h) and reaches what only some clients offer through
 * the wrappers at the end of this header. */
#ifndef TP_CLIENT_H
#define TP_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "util/tp_common.h"
#include "tokperf/tokperf.h"

/* One decoded response, as the run needs it.  Pointers are borrowed for the
 * duration of the callback. */
typedef struct tp_client_event {
  const uint8_t *text; /* generated text in this response (delta, or all so far) */
  size_t text_len;
  bool final;          /* this response completes the request */
  const char *error;   /* an in-band error message, or NULL */
  tp_error_class error_class;
  int64_t server_output_tokens; /* the server's own count in this response, -1 = none */
  bool bad_message;             /* the bytes could not be decoded */
  /* What a client fills where its protocol says it; the others leave -1 /
   * NULL / false, so the run reads every event the same way. */
  bool reasoning;            /* text is the model's reasoning (reasoning_content), counted apart */
  int64_t prompt_tokens;     /* the server's usage.prompt_tokens, -1 = not in this event */
  int64_t completion_tokens; /* its usage.completion_tokens (cumulative), -1 = not in this event */
  int64_t cached_tokens;     /* its prompt tokens found cached, -1 = not reported */
  const char *finish_reason; /* "stop", "length", ... or NULL */
  /* An OpenAI chunk with a non-empty choices array (a usage-only chunk
   * has none): where vLLM's client ends a request. */
  bool has_choices;
  /* The HTTP status of the reply this event came in; -1 = not known yet
   * (gRPC's status comes with the call's end, in tp_client_done). */
  int status;
  /* The engine protocols (vllm-grpc, sglang-grpc) answer with token ids,
   * not text: ids is set and token_ids counts the ids new in this
   * response, which the run counts as the output exactly. */
  bool ids;
  uint32_t token_ids;
} tp_client_event;

/* How a request ended at the transport level. */
typedef struct tp_client_done {
  tp_error_class err_class; /* TP_ERRCLASS_NONE = the call completed */
  int status;               /* gRPC status or HTTP status; -1 = none */
  const char *message;      /* borrowed */
  uint64_t sent_ns;         /* when the request's last byte went out; 0 = never */
  uint64_t end_ns;
  /* Times the request was sent again on a fresh connection because the
   * reused one it went out on failed before any byte of the answer came
   * (a server that closes kept-alive connections, an HTTP/2 GOAWAY whose
   * last_stream_id excludes it, REFUSED_STREAM).  sent_ns is then the
   * re-send's.  Not a failure: the report counts these as reconnects. */
  uint32_t resends;
  /* The server's own id of the request, borrowed, NULL = none came: the
   * first id of an OpenAI stream's chunks (or of its reply), KServe's
   * response id, the engines' request id, else the reply's x-request-id
   * header. */
  const char *server_id;
} tp_client_done;

typedef struct tp_client_cbs {
  /* A response arrived; arrival_ns is when the bytes were read. */
  void (*on_event)(void *req, const tp_client_event *ev, uint64_t arrival_ns);
  /* The request is over; called exactly once per successful send, last. */
  void (*on_done)(void *req, const tp_client_done *d);
} tp_client_cbs;

typedef struct tp_client_send {
  const char *id;     /* unique per request within the run */
  const char *prompt; /* borrowed for the call */
  size_t prompt_len;
  uint32_t max_tokens;
  uint32_t min_tokens; /* > 0: ask the server not to stop earlier */
  uint64_t timeout_ns; /* 0 = none */
  /* Where the client stores a handle for cancel (may be NULL); valid until
   * on_done. */
  void **handle;
  /* An input file's tensors for this request (perf_analyzer's form, a JSON
   * object; borrowed), sent instead of the ones built from prompt and
   * max_tokens by a client opened with file_inputs.  NULL = build them. */
  const char *inputs;
  /* An input file's chat messages (a JSON array; borrowed), sent as they
   * are by a chat client.  NULL = the prompt. */
  const char *messages;
  /* 0, or the number of the session this request is a turn of: a session
   * keeps to one connection where the protocol allows (session_end). */
  uint64_t session;
  /* A W3C traceparent header to send with the request (HTTP header, gRPC
   * metadata), or NULL.  The id above goes as x-request-id over HTTP and
   * as the protocol's request id field over gRPC. */
  const char *traceparent;
} tp_client_send;

typedef struct tp_client tp_client;

/* Server statistics read while the loop runs: done(ud, rv, counters, n,
 * err), counters owned by the callee (free()) when rv is 0. */
struct tp_triton_model_counters;
typedef void (*tp_client_stats_cb)(void *ud, int rv, struct tp_triton_model_counters *counters, size_t n,
                                   const char *err);

typedef struct tp_client_ops {
  const char *name;
  /* Checks the server and the model before the run, running the loop until
   * done.  Returns 0, or TP_ECONNECT / TP_ENOTFOUND / TP_EUNSUPPORTED /
   * TP_EPROTO with a message in err. */
  int (*preflight)(tp_client *c, char *err, size_t errlen);
  /* Sends one request; `req` is handed back in the callbacks.  Returns 0
   * (on_done will follow) or a negative code (no callback). */
  int (*send)(tp_client *c, const tp_client_send *s, void *req);
  /* Cancels every request, closes connections and frees the client (after
   * the loop has run its close callbacks). */
  void (*close)(tp_client *c);
  /* Cancels one request by the handle send stored (may be NULL: not
   * offered).  on_done follows, possibly later; safe to call from
   * on_event. */
  void (*cancel)(tp_client *c, void *handle);
  /* Cancels every request in flight (may be NULL: not offered). */
  void (*cancel_all)(tp_client *c);
  /* A session (tp_client_send.session) is over: its connection is let go
   * (may be NULL: the client keeps no per-session state). */
  void (*session_end)(tp_client *c, uint64_t session);

  /* What only some clients offer (NULL = not offered); the run calls them
   * through the tp_client_* wrappers below, never a client by its kind. */
  /* Reads the server's per-model statistics (Triton's ModelStatistics) for
   * every model, running the loop until done; call it only with nothing in
   * flight.  *out is returned owned.  Returns 0, TP_EUNSUPPORTED when the
   * server does not offer them, or another code with a message in err. */
  int (*model_stats)(tp_client *c, struct tp_triton_model_counters **out, size_t *n, char *err, size_t errlen);
  /* The same while the loop runs (requests in flight): done follows from
   * the loop.  Returns 0, or a code (no callback). */
  int (*model_stats_start)(tp_client *c, tp_client_stats_cb done, void *ud);
  /* Checks that one input file entry (tp_client_send.inputs) can be sent,
   * by building its request once; after preflight, on a client opened with
   * file_inputs.  Returns 0, or TP_EINVAL with a message naming the input. */
  int (*check_inputs)(tp_client *c, const char *inputs, char *err, size_t errlen);
  /* Connections opened so far. */
  uint32_t (*connections_opened)(const tp_client *c);
  /* What preflight found worth a warning, "" when nothing: the run prints
   * it, the client prints nothing. */
  const char *(*warning)(const tp_client *c);
  /* The full URL requests go to, for messages and the report. */
  const char *(*endpoint)(const tp_client *c);
  /* While held (calls nest), requests sent are written when the last hold
   * is released, together: the run holds while it sends every request due
   * at once (an open loop that fell behind), so they cost one write. */
  void (*hold)(tp_client *c, bool hold);
} tp_client_ops;

struct tp_client {
  const tp_client_ops *ops;
};

/* Settings common to clients. */
typedef struct tp_client_opts {
  const char *target; /* "host:port"; borrowed for the constructor's call */
  const char *model;
  const char *model_version;
  tp_backend backend;
  bool streaming;
  uint32_t connections;
  uint32_t max_response_bytes;
  /* Extra headers "Name: value" (gRPC metadata for Triton). */
  const char *const *headers;
  size_t n_headers;
  /* TLS (grpcs://), with host the name or address to verify. */
  bool tls;
  const char *host; /* borrowed for the constructor's call */
  const char *ca_file, *cert_file, *key_file;
  bool insecure;
  bool reader_thread; /* gRPC: read the sockets on a thread of their own (tp_h2c_opts) */
  /* gRPC: timers served between slices of a long read (tp_h2c_opts). */
  struct tp_timers *yield_to;
  /* Requests will carry an input file's tensors (tp_client_send.inputs):
   * the Triton client keeps the model's metadata for their datatypes and
   * checks only that the model answers in text_output. */
  bool file_inputs;
  /* The engine protocols send the prompt as token ids: encode gives the
   * run tokenizer's ids of a text (*ids owned by the caller, free()), as
   * the run counts input tokens.  NULL = no tokenizer (text, where the
   * protocol takes it). */
  int (*encode)(void *ud, const char *text, size_t len, int32_t **ids, size_t *n);
  void *encode_ud;
} tp_client_opts;

/* ---- the optional operations, for callers that do not know the client ---- */

static inline bool tp_client_offers_model_stats(const tp_client *c) {
  return c && c->ops->model_stats && c->ops->model_stats_start;
}

static inline int tp_client_model_stats(tp_client *c, struct tp_triton_model_counters **out, size_t *n, char *err,
                                        size_t errlen) {
  if (!c->ops->model_stats) {
    tp_seterr(err, errlen, "the %s client reads no server statistics", c->ops->name);
    return TP_EUNSUPPORTED;
  }
  return c->ops->model_stats(c, out, n, err, errlen);
}

static inline int tp_client_model_stats_start(tp_client *c, tp_client_stats_cb done, void *ud) {
  return c->ops->model_stats_start ? c->ops->model_stats_start(c, done, ud) : TP_EUNSUPPORTED;
}

static inline int tp_client_check_inputs(tp_client *c, const char *inputs, char *err, size_t errlen) {
  if (!c->ops->check_inputs) {
    tp_seterr(err, errlen, "the %s client sends no input file's tensors", c->ops->name);
    return TP_EUNSUPPORTED;
  }
  return c->ops->check_inputs(c, inputs, err, errlen);
}

static inline uint32_t tp_client_connections_opened(const tp_client *c) {
  return c->ops->connections_opened ? c->ops->connections_opened(c) : 0;
}

static inline void tp_client_hold(tp_client *c, bool hold) {
  if (c->ops->hold) c->ops->hold(c, hold);
}

/* "" when the client has nothing to say. */
static inline const char *tp_client_warning(const tp_client *c) {
  const char *w = c->ops->warning ? c->ops->warning(c) : NULL;
  return w ? w : "";
}

/* NULL when the client has no URL to show (gRPC's address is the target). */
static inline const char *tp_client_endpoint(const tp_client *c) {
  return c->ops->endpoint ? c->ops->endpoint(c) : NULL;
}

#endif
