/* Fuzz target: URL parsing and joining (lib/client/tp_url.c).
 *
 * The input up to its first NUL is a --url, the rest (up to a second NUL)
 * an --endpoint.  Checked, beyond "no crash":
 * - a parsed URL is well formed: a host without control bytes, '/' or '?';
 *   a port of 0..65535; a path that is empty or starts with '/' and has no
 *   trailing '/'; no '?' in the path;
 * - printing it back (origin, path, "?query") and parsing that gives the
 *   same host, port, path, query and TLS;
 * - every refusal writes a message;
 * - for each API path, a resolved endpoint (without --endpoint) starts with
 *   the API base, and resolving that endpoint again gives the same
 *   endpoint and API base, now as given: joining is idempotent.
 * Any difference abort()s. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/tp_url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_parsed(const tp_url *u) {
  size_t hl = strlen(u->host);
  if (hl == 0) abort();
  for (size_t i = 0; i < hl; i++)
    if ((unsigned char)u->host[i] <= 0x20 || u->host[i] == '/' || u->host[i] == '?') abort();
  if (u->port < 0 || u->port > 65535) abort();
  size_t pl = strlen(u->path);
  if (pl && (u->path[0] != '/' || u->path[pl - 1] == '/')) abort();
  if (strchr(u->path, '?')) abort();
}

static void check_round_trip(const tp_url *u) {
  static char text[TP_URL_MAX + 8], err[512];
  size_t n = tp_url_origin(u, text, sizeof(text));
  snprintf(text + n, sizeof(text) - n, "%s%s%s", u->path, u->query[0] ? "?" : "", u->query);
  static tp_url v;
  if (strlen(text) >= TP_URL_PATH_MAX) return; /* printing added a scheme past the limit */
  if (tp_url_parse(text, &v, err, sizeof(err))) abort();
  if (strcmp(u->host, v.host) || u->port != v.port || strcmp(u->path, v.path) || strcmp(u->query, v.query) ||
      u->ipv6 != v.ipv6 || tp_url_tls(u) != tp_url_tls(&v))
    abort();
}

static void check_resolve(const tp_url *u, const char *override) {
  static const char *const apis[] = {"/v1/chat/completions", "/v1/completions",
                                     "/v2/models/m/generate_stream", "/v2/models/m/versions/2/generate"};
  static tp_url_resolved r, r2;
  static tp_url v;
  char err[512];
  for (size_t i = 0; i < sizeof(apis) / sizeof(apis[0]); i++) {
    err[0] = 0;
    if (tp_url_resolve(u, apis[i], override, &r, err, sizeof(err))) {
      if (!err[0]) abort();
      continue;
    }
    if (override && *override) continue;
    if (strncmp(r.endpoint, r.api_base, strlen(r.api_base)) != 0) abort();
    if (strlen(r.endpoint) >= TP_URL_PATH_MAX) continue;
    if (tp_url_parse(r.endpoint, &v, err, sizeof(err))) abort();
    if (tp_url_resolve(&v, apis[i], NULL, &r2, err, sizeof(err))) abort();
    if (strcmp(r.endpoint, r2.endpoint) || strcmp(r.api_base, r2.api_base) || !r2.as_given) abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0;
  char *s = malloc(size + 2);
  if (!s) return 0;
  memcpy(s, data, size);
  s[size] = s[size + 1] = 0;
  size_t ul = strlen(s);
  const char *override = ul < size ? s + ul + 1 : NULL;

  static tp_url u;
  char err[512];
  err[0] = 0;
  if (tp_url_parse(s, &u, err, sizeof(err)) == 0) {
    check_parsed(&u);
    check_round_trip(&u);
    check_resolve(&u, override);
  } else if (!err[0]) {
    abort();
  }
  free(s);
  return 0;
}
