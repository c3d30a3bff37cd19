/* URLs as users write them for -u/--url and --endpoint: parsing into
 * scheme, host, port, path and query, and the join of a base URL with an
 * API's request path.  Pure functions: no I/O, no allocation.
 *
 * Accepted forms: "host:port", "host", "[v6addr]:port", and any of those
 * after "http://", "https://", "grpc://" or "grpcs://" (case-insensitive),
 * optionally followed by a path and a query ("?a=b").  A fragment ("#...")
 * is refused: it is never sent to a server and is most likely a typo.
 *
 * The join (tp_url_resolve) follows what users copy from elsewhere:
 *   http://h:8000                      -> http://h:8000/v1/chat/completions
 *   https://h/v1   (OpenAI SDK base)   -> https://h/v1/chat/completions
 *   https://h/v1beta/openai/v1         -> .../v1beta/openai/v1/chat/completions
 *   http://h:8000/v1/chat/completions  -> used as given
 *   http://h/proxy (a path prefix)     -> http://h/proxy/v1/chat/completions
 * The API path is "/VERSION/TAIL" ("/v1" + "/chat/completions", "/v2" +
 * "/models/M/generate").  A URL path ending in the whole TAIL names the
 * endpoint itself; one whose last segment is a version ("v1", "v2",
 * "v1beta") is an API base that TAIL is appended to; any other path is a
 * prefix that the whole API path is appended to.  A path that names an
 * endpoint of another kind (".../completions" for chat) is refused, so
 * that a chat body is never posted to the completions endpoint. */
#ifndef TP_URL_H
#define TP_URL_H

#include <stdbool.h>
#include <stddef.h>

typedef enum tp_url_scheme {
  TP_URL_NONE = 0, /* no "scheme://" was written */
  TP_URL_HTTP,
  TP_URL_HTTPS,
  TP_URL_GRPC,
  TP_URL_GRPCS,
} tp_url_scheme;

#define TP_URL_HOST_MAX 256
#define TP_URL_PATH_MAX 1024
#define TP_URL_QUERY_MAX 512
/* Room for any URL tp_url_resolve writes. */
#define TP_URL_MAX (16 + TP_URL_HOST_MAX + 8 + 2 * TP_URL_PATH_MAX + TP_URL_QUERY_MAX)

typedef struct tp_url {
  tp_url_scheme scheme;
  char host[TP_URL_HOST_MAX];   /* an IPv6 address without its brackets */
  bool ipv6;                    /* host was written in brackets */
  int port;                     /* 1..65535; 0 = none written */
  char path[TP_URL_PATH_MAX];   /* "" or "/..."; trailing slashes removed */
  char query[TP_URL_QUERY_MAX]; /* after '?', without it; "" = none */
} tp_url;

/* Parses s.  Returns 0, or TP_EINVAL with a message quoting s and saying
 * what is wrong (unknown scheme, no host, bad port, fragment, control
 * characters, too long). */
int tp_url_parse(const char *s, tp_url *u, char *err, size_t errlen);

/* True for https:// and grpcs://. */
bool tp_url_tls(const tp_url *u);
/* "http", "https", "grpc", "grpcs"; http for TP_URL_NONE. */
const char *tp_url_scheme_name(tp_url_scheme s);

/* "host:port" ("[v6]:port"; no ":port" when port is 0).  Returns the
 * length it needed, like snprintf. */
size_t tp_url_authority(const tp_url *u, char *out, size_t n);
/* "scheme://host:port" with http:// for no scheme (grpc:// and grpcs://
 * become http:// and https://). */
size_t tp_url_origin(const tp_url *u, char *out, size_t n);

typedef struct tp_url_resolved {
  /* The full URL requests go to. */
  char endpoint[TP_URL_MAX];
  /* The API base: the full URL other paths of the same API hang below
   * ("https://h/v1": the model list is api_base + "/models"), without the
   * query. */
  char api_base[TP_URL_MAX];
  /* "?query" of the URL (or ""), to add to other requests of the API. */
  char query[TP_URL_QUERY_MAX + 1];
  bool as_given; /* the URL's path named the endpoint itself */
} tp_url_resolved;

/* Joins u with api_path ("/v1/chat/completions", "/v2/models/M/generate";
 * its first segment is the version).  override (--endpoint; NULL or "" =
 * none) replaces the result's endpoint: a full http(s):// URL as it is, a
 * path starting with '/' on u's origin (as RFC 3986 resolves an absolute
 * path), any other text below u's own path, as GenAI-Perf joins --url and
 * --endpoint ("h:8000" + "v1/chat/completions").  Returns
 * 0, or TP_EINVAL with a message when u's path names another endpoint
 * than api_path's or a result does not fit. */
int tp_url_resolve(const tp_url *u, const char *api_path, const char *override, tp_url_resolved *out,
                   char *err, size_t errlen);

#endif
