/* The HTTP clients: OpenAI-compatible completions and chat over SSE (or
 * plain JSON), and Triton's generate / generate_stream, on tp_http (libcurl
 * on the run's loop) with the tp_openai adapters and the tp_sse parser.
 *
 * Events: one tp_client_event per JSON document the server sends (an SSE
 * event's data, or the whole non-streaming reply).  Each is handed over
 * when the next one arrives or the stream ends, so the last one can carry
 * `final`; its arrival_ns is always its own read time.  The OpenAI "[DONE]"
 * sentinel ends the stream without an event of its own.  A chat chunk with
 * only the role has no text (it is a response, not a first token); text
 * from `reasoning_content` comes in events with `reasoning` set. After
 * cancel / cancel_all no event is delivered; on_done follows (CANCELLED),
 * never from inside the cancel call. */
#ifndef TP_CLIENT_HTTP_H
#define TP_CLIENT_HTTP_H

#include <stdbool.h>
#include <stdint.h>

#include "api/tp_openai.h"
#include "client/tp_client.h"

typedef struct tp_client_http_opts {
  tp_http_api api;
  /* The server's URL as the user wrote it ("host:port", "https://h/v1",
   * "http://h:8000/v1/chat/completions"; see tp_url.h for how it joins the
   * API's path); NULL = "http://" + tp_client_opts.target. */
  const char *url;
  /* --endpoint: a full http(s) URL, a path on the URL's host ("/x/y"), or
   * a path below the API base ("chat/completions"); NULL = the API's. */
  const char *endpoint;
  /* Sent as "Authorization: Bearer KEY" only; never printed or logged.
   * NULL = none. */
  const char *api_key;
  const char *const *headers; /* "Name: value" lines (borrowed for the call) */
  size_t n_headers;
  /* Extra body fields: "name:value" items or JSON objects (see
   * tp_openai_parse_extra), merged into every request body. */
  const char *const *extra_inputs;
  size_t n_extra_inputs;
  const char *ca_file;   /* PEM CA bundle, NULL = the system's */
  const char *cert_file; /* client certificate, NULL = none */
  const char *key_file;  /* its key, NULL = inside cert_file */
  bool insecure;         /* no certificate or host name verification */
  bool http1_only;       /* do not offer HTTP/2 */
  bool include_usage;    /* streaming OpenAI: stream_options.include_usage (default true) */
} tp_client_http_opts;

/* Fills o with the defaults: openai-completions, everything else unset,
 * include_usage on. */
void tp_client_http_opts_default(tp_client_http_opts *o);

/* Creates an HTTP client.  From tp_client_opts it uses target (when ho->url
 * is NULL), model (for OpenAI, "" or NULL = the first model /v1/models
 * lists, found by preflight), model_version and backend (Triton generate),
 * streaming, and max_response_bytes (largest SSE event or JSON reply, 0 =
 * 64 MiB); `connections` is not a cap here: HTTP/1.1 needs a connection per
 * request in flight.  Returns 0, or TP_EINVAL with a message (bad URL,
 * header, extra input, API key, unreadable CA/cert/key file), or TP_ENOMEM.
 *
 * Preflight: OpenAI GET /v1/models (below the API base of the URL: see
 * tp_url.h).  401/403 is TP_ECONNECT (the API key); any other status that
 * is not 2xx leaves a warning (tp_client_warning) when a model name
 * was given, and is TP_ENOTFOUND when not; a model not in a list it
 * returns is TP_ENOTFOUND.  Triton: GET /v2/health/ready,
 * /v2/models/M/ready, then the metadata to choose input names.
 * TP_ECONNECT: cannot connect, TLS failure, not ready. */
int tp_client_http_new(tp_client **out, uv_loop_t *loop, const tp_client_opts *o,
                       const tp_client_http_opts *ho, const tp_client_cbs *cbs, char *err, size_t errlen);

/* The model name requests carry (after preflight: the discovered one). */
const char *tp_client_http_model(const tp_client *c);
/* What preflight found worth a warning (a model list that answered 501,
 * say), "" when nothing; also tp_client_warning. */
const char *tp_client_http_warning(const tp_client *c);
/* The full URL requests go to; also tp_client_endpoint. */
const char *tp_client_http_endpoint(const tp_client *c);
/* Connections opened so far; also tp_client_connections_opened. */
uint32_t tp_client_http_connections_opened(const tp_client *c);

#endif
