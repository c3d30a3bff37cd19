/* Opening a client from what the user asked for: the service kind picks
 * the client (Triton gRPC, or HTTP for OpenAI completions, chat and
 * Triton's generate), and the URL is read here once, so that a caller
 * never constructs a client by its kind. */
#ifndef TP_CLIENT_FACTORY_H
#define TP_CLIENT_FACTORY_H

#include "client/tp_client.h"

typedef struct tp_client_spec {
  tp_service_kind kind;
  /* -u/--url as the user wrote it (see tp_url.h for its forms).  gRPC
   * needs HOST:PORT with no path; HTTP keeps the scheme and the path,
   * which the client joins with the API's path. */
  const char *url;
  /* Settings common to clients; target, tls and host are ignored: they
   * come from url. */
  tp_client_opts opts;
  /* What only the HTTP clients use (see tp_client_http_opts). */
  const char *endpoint; /* --endpoint, NULL = the API's */
  const char *api_key;  /* NULL = none */
  const char *const *extra_inputs;
  size_t n_extra_inputs;
  bool http1_only;
  bool include_usage;
} tp_client_spec;

/* Fills s with the defaults: Triton gRPC, no URL, include_usage on,
 * everything else zero. */
void tp_client_spec_default(tp_client_spec *s);

/* Reads s->url, writes the server's "host:port" into target (for reports;
 * written as soon as the URL is read, even when opening then fails; may
 * be NULL) and opens the client for s->kind.  Returns 0, or TP_EINVAL with
 * a message naming -u/--url (a URL that cannot be read, a gRPC address
 * with a path or without a port, an unknown kind), or what the client's
 * constructor returns. */
int tp_client_open(tp_client **out, uv_loop_t *loop, const tp_client_spec *s, const tp_client_cbs *cbs,
                   char *target, size_t target_len, char *err, size_t errlen);

#endif
