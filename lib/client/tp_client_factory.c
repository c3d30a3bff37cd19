/* The client for a service kind, opened from the URL as given. */
#include "client/tp_client_factory.h"

#include <stdio.h>
#include <string.h>

#include "client/tp_client_engine.h"
#include "client/tp_client_http.h"
#include "client/tp_client_triton.h"
#include "client/tp_url.h"

void tp_client_spec_default(tp_client_spec *s) {
  memset(s, 0, sizeof(*s));
  s->kind = TP_SERVICE_TRITON;
  s->include_usage = true;
}

/* The URL, and the checks only gRPC needs: its address has no path and
 * no default port. */
static int read_url(const tp_client_spec *s, tp_url *u, char *err, size_t errlen) {
  char why[512];
  if (tp_url_parse(s->url, u, why, sizeof(why))) {
    tp_seterr(err, errlen, "server.url: %s", why);
    return TP_EINVAL;
  }
  if (!tp_service_kind_is_grpc(s->kind)) return 0;
  /* gRPC has no path; a URL with one was meant for an HTTP API. */
  if (u->path[0] || u->query[0]) {
    tp_seterr(err, errlen,
              "server.url '%s': a gRPC address has no path (give HOST:PORT; for an HTTP API set "
              "server.service_kind to openai or triton-generate)",
              s->url);
    return TP_EINVAL;
  }
  if (!u->port) {
    tp_seterr(err, errlen, "server.url '%s': gRPC needs HOST:PORT (%s)", s->url,
              s->kind == TP_SERVICE_VLLM_GRPC     ? "vLLM's gRPC server listens on 50051 by default"
              : s->kind == TP_SERVICE_SGLANG_GRPC ? "SGLang's gRPC mode listens on its --port"
                                                  : "Triton's gRPC port is 8001");
    return TP_EINVAL;
  }
  return 0;
}

static int open_http(tp_client **out, uv_loop_t *loop, const tp_client_spec *s, tp_http_api api,
                     const tp_client_opts *co, const tp_client_cbs *cbs, char *err, size_t errlen) {
  tp_client_http_opts ho;
  tp_client_http_opts_default(&ho);
  ho.api = api;
  ho.url = s->url;
  ho.endpoint = s->endpoint;
  ho.api_key = s->api_key;
  ho.headers = co->headers;
  ho.n_headers = co->n_headers;
  ho.extra_inputs = s->extra_inputs;
  ho.n_extra_inputs = s->n_extra_inputs;
  ho.ca_file = co->ca_file;
  ho.cert_file = co->cert_file;
  ho.key_file = co->key_file;
  ho.insecure = co->insecure;
  ho.http1_only = s->http1_only;
  ho.include_usage = s->include_usage;
  return tp_client_http_new(out, loop, co, &ho, cbs, err, errlen);
}

int tp_client_open(tp_client **out, uv_loop_t *loop, const tp_client_spec *s, const tp_client_cbs *cbs,
                   char *target, size_t target_len, char *err, size_t errlen) {
  tp_url u;
  int rv = read_url(s, &u, err, errlen);
  if (rv) return rv;
  char authority[TP_URL_HOST_MAX + 16];
  tp_url_authority(&u, authority, sizeof(authority));
  if (target && target_len) snprintf(target, target_len, "%s", authority);
  tp_client_opts co = s->opts;
  co.target = authority;
  co.tls = tp_url_tls(&u);
  co.host = u.host; /* for certificate checks and SNI; the client keeps a copy */
  switch (s->kind) {
    case TP_SERVICE_TRITON: return tp_client_triton_new(out, loop, &co, cbs, err, errlen);
    case TP_SERVICE_OPENAI_COMPLETIONS:
      return open_http(out, loop, s, TP_HTTP_API_OPENAI_COMPLETIONS, &co, cbs, err, errlen);
    case TP_SERVICE_OPENAI_CHAT: return open_http(out, loop, s, TP_HTTP_API_OPENAI_CHAT, &co, cbs, err, errlen);
    case TP_SERVICE_TRITON_GENERATE:
      return open_http(out, loop, s, TP_HTTP_API_TRITON_GENERATE, &co, cbs, err, errlen);
    case TP_SERVICE_VLLM_GRPC:
      return tp_client_engine_new(out, loop, TP_ENGINE_VLLM, &co, s->extra_inputs, s->n_extra_inputs, cbs, err,
                                  errlen);
    case TP_SERVICE_SGLANG_GRPC:
      return tp_client_engine_new(out, loop, TP_ENGINE_SGLANG, &co, s->extra_inputs, s->n_extra_inputs, cbs, err,
                                  errlen);
  }
  tp_seterr(err, errlen, "unknown service kind %d", (int)s->kind);
  return TP_EINVAL;
}
