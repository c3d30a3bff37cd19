/* Tests for URL parsing and joining (lib/client/tp_url.c): the URLs users
 * write for -u/--url and --endpoint, in tables. */
#include <string.h>

#include "client/tp_url.h"
#include "tp_test.h"
#include "util/tp_common.h"

static char err[512];

static void test_parse_good(void) {
  static const struct {
    const char *s;
    tp_url_scheme scheme;
    const char *host;
    int port;
    const char *path, *query;
    const char *authority, *origin;
  } t[] = {
      {"localhost:8001", TP_URL_NONE, "localhost", 8001, "", "", "localhost:8001", "http://localhost:8001"},
      {"h", TP_URL_NONE, "h", 0, "", "", "h", "http://h"},
      {"http://h:8000", TP_URL_HTTP, "h", 8000, "", "", "h:8000", "http://h:8000"},
      {"http://h:8000/", TP_URL_HTTP, "h", 8000, "", "", "h:8000", "http://h:8000"},
      {"HTTPS://api.example.com/v1", TP_URL_HTTPS, "api.example.com", 0, "/v1", "", "api.example.com",
       "https://api.example.com"},
      {"https://h/v1/", TP_URL_HTTPS, "h", 0, "/v1", "", "h", "https://h"},
      {"https://h/v1//", TP_URL_HTTPS, "h", 0, "/v1", "", "h", "https://h"},
      {"grpc://10.0.0.9:8001", TP_URL_GRPC, "10.0.0.9", 8001, "", "", "10.0.0.9:8001",
       "http://10.0.0.9:8001"},
      {"grpcs://h:443", TP_URL_GRPCS, "h", 443, "", "", "h:443", "https://h:443"},
      {"[::1]:8000", TP_URL_NONE, "::1", 8000, "", "", "[::1]:8000", "http://[::1]:8000"},
      {"http://[fe80::1]/v1", TP_URL_HTTP, "fe80::1", 0, "/v1", "", "[fe80::1]", "http://[fe80::1]"},
      {"h:8000/v1/chat/completions", TP_URL_NONE, "h", 8000, "/v1/chat/completions", "", "h:8000",
       "http://h:8000"},
      {"https://r.azure.com/openai/deployments/d?api-version=2024-02-01", TP_URL_HTTPS, "r.azure.com", 0,
       "/openai/deployments/d", "api-version=2024-02-01", "r.azure.com", "https://r.azure.com"},
      {"http://h:65535?x=1", TP_URL_HTTP, "h", 65535, "", "x=1", "h:65535", "http://h:65535"},
      {"h:1/a://b", TP_URL_NONE, "h", 1, "/a://b", "", "h:1", "http://h:1"},
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(t); i++) {
    tp_url u;
    int rv = tp_url_parse(t[i].s, &u, err, sizeof(err));
    char auth[300], origin[300];
    tp_url_authority(&u, auth, sizeof(auth));
    tp_url_origin(&u, origin, sizeof(origin));
    bool ok = rv == 0 && u.scheme == t[i].scheme && strcmp(u.host, t[i].host) == 0 && u.port == t[i].port &&
              strcmp(u.path, t[i].path) == 0 && strcmp(u.query, t[i].query) == 0 &&
              strcmp(auth, t[i].authority) == 0 && strcmp(origin, t[i].origin) == 0;
    CHECK(ok, "parse '%s'", t[i].s);
    if (!ok)
      printf("#   rv %d (%s) scheme %d host '%s' port %d path '%s' query '%s' authority '%s' origin '%s'\n",
             rv, rv ? err : "", (int)u.scheme, u.host, u.port, u.path, u.query, auth, origin);
  }
}

static void test_parse_bad(void) {
  static const struct {
    const char *s, *says;
  } t[] = {
      {"", "empty URL"},
      {"ftp://h:21", "unknown scheme 'ftp'"},
      {"http://", "no host"},
      {"http://:8000/v1", "no host"},
      {":8000", "no host"},
      {"h:0", "port '0'"},
      {"h:65536", "port '65536'"},
      {"h:80a", "port '80a'"},
      {"h:", "port ''"},
      {"http://h:8000#frag", "fragment"},
      {"http://h :8000", "space"},
      {"http://h\r\nX: y", "control"},
      {"http://user:pw@h", "user names"},
      {"[::1", "closing ']'"},
      {"[]:80", "closing ']'"},
      {"[::1]x", "':PORT'"},
      {"h]:80", "']' without '['"},
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(t); i++) {
    tp_url u;
    err[0] = 0;
    int rv = tp_url_parse(t[i].s, &u, err, sizeof(err));
    CHECK(rv == TP_EINVAL && strstr(err, t[i].says), "refuse '%s': %s", t[i].s, err);
  }
  char longurl[2000];
  memset(longurl, 'a', sizeof(longurl) - 1);
  longurl[sizeof(longurl) - 1] = 0;
  tp_url u;
  CHECK(tp_url_parse(longurl, &u, err, sizeof(err)) == TP_EINVAL && strstr(err, "longer than"),
        "refuse a URL too long: %s", err);
  char longhost[400] = "http://";
  memset(longhost + 7, 'h', 300);
  CHECK(tp_url_parse(longhost, &u, err, sizeof(err)) == TP_EINVAL && strstr(err, "host name is longer"),
        "refuse a host name too long");
}

#define CHAT "/v1/chat/completions"
#define COMPL "/v1/completions"
#define GEN "/v2/models/ensemble/generate_stream"

static void test_resolve(void) {
  static const struct {
    const char *url, *api, *override;
    const char *endpoint, *api_base;
    bool as_given;
  } t[] = {
      /* No path: the API's own. */
      {"h:8000", CHAT, NULL, "http://h:8000/v1/chat/completions", "http://h:8000/v1", false},
      {"http://h:8000", COMPL, NULL, "http://h:8000/v1/completions", "http://h:8000/v1", false},
      {"http://h:8000/", GEN, NULL, "http://h:8000/v2/models/ensemble/generate_stream", "http://h:8000/v2",
       false},
      {"https://h", CHAT, "", "https://h/v1/chat/completions", "https://h/v1", false},
      /* The OpenAI SDK's base URL. */
      {"https://h/v1", CHAT, NULL, "https://h/v1/chat/completions", "https://h/v1", false},
      {"https://h/v1/", COMPL, NULL, "https://h/v1/completions", "https://h/v1", false},
      {"https://api.groq.com/openai/v1", CHAT, NULL, "https://api.groq.com/openai/v1/chat/completions",
       "https://api.groq.com/openai/v1", false},
      {"https://g.example.com/v1beta", CHAT, NULL, "https://g.example.com/v1beta/chat/completions",
       "https://g.example.com/v1beta", false},
      {"http://h:8000/v2", GEN, NULL, "http://h:8000/v2/models/ensemble/generate_stream", "http://h:8000/v2",
       false},
      /* The endpoint itself. */
      {"http://h:8000/v1/chat/completions", CHAT, NULL, "http://h:8000/v1/chat/completions",
       "http://h:8000/v1", true},
      {"h:8000/v1/completions/", COMPL, NULL, "http://h:8000/v1/completions", "http://h:8000/v1", true},
      {"https://h/openai/chat/completions", CHAT, NULL, "https://h/openai/chat/completions",
       "https://h/openai", true},
      {"http://h:8000/v2/models/ensemble/generate_stream", GEN, NULL,
       "http://h:8000/v2/models/ensemble/generate_stream", "http://h:8000/v2", true},
      /* A prefix (a reverse proxy's). */
      {"http://h/llama", CHAT, NULL, "http://h/llama/v1/chat/completions", "http://h/llama/v1", false},
      {"http://h/triton", GEN, NULL, "http://h/triton/v2/models/ensemble/generate_stream",
       "http://h/triton/v2", false},
      {"http://h/av1", CHAT, NULL, "http://h/av1/v1/chat/completions", "http://h/av1/v1", false},
      /* A query stays on the requests. */
      {"https://r/openai/v1?api-version=1", CHAT, NULL, "https://r/openai/v1/chat/completions?api-version=1",
       "https://r/openai/v1", false},
      {"https://r/v1/chat/completions?k=v", CHAT, NULL, "https://r/v1/chat/completions?k=v", "https://r/v1",
       true},
      /* --endpoint: a full URL as it is, an absolute path on the origin,
       * anything else below the URL's own path (GenAI-Perf's join). */
      {"h:8000", CHAT, "v1/chat/completions", "http://h:8000/v1/chat/completions", "http://h:8000/v1", false},
      {"http://h:8000/llama", COMPL, "v1/completions", "http://h:8000/llama/v1/completions",
       "http://h:8000/llama/v1", false},
      {"http://h:8000/v1", CHAT, "http://other:9/x", "http://other:9/x", "http://h:8000/v1", false},
      {"http://h:8000/v1", CHAT, "/v1/chat/completions", "http://h:8000/v1/chat/completions",
       "http://h:8000/v1", false},
      {"http://h:8000/prefix", CHAT, "/custom/path", "http://h:8000/custom/path", "http://h:8000/prefix/v1",
       false},
      {"http://h:8000/v1", CHAT, "my/chat", "http://h:8000/v1/my/chat", "http://h:8000/v1", false},
      {"https://h:8443", COMPL, "/v1/completions", "https://h:8443/v1/completions", "https://h:8443/v1",
       false},
      /* grpc:// schemes map to their HTTP twins (for --metrics-url-like use). */
      {"grpcs://h:443", CHAT, NULL, "https://h:443/v1/chat/completions", "https://h:443/v1", false},
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(t); i++) {
    tp_url u;
    tp_url_resolved r;
    int rv = tp_url_parse(t[i].url, &u, err, sizeof(err));
    if (!rv) rv = tp_url_resolve(&u, t[i].api, t[i].override, &r, err, sizeof(err));
    bool ok = rv == 0 && strcmp(r.endpoint, t[i].endpoint) == 0 && strcmp(r.api_base, t[i].api_base) == 0 &&
              r.as_given == t[i].as_given;
    CHECK(ok, "'%s' + %s%s%s -> %s", t[i].url, t[i].api, t[i].override ? " with --endpoint " : "",
          t[i].override ? t[i].override : "", t[i].endpoint);
    if (!ok)
      printf("#   rv %d (%s) endpoint '%s' api_base '%s' as_given %d\n", rv, rv ? err : "",
             rv ? "" : r.endpoint, rv ? "" : r.api_base, rv ? 0 : r.as_given);
  }
}

static void test_resolve_mismatch(void) {
  static const struct {
    const char *url, *api, *says;
  } t[] = {
      {"http://h:8000/v1/completions", CHAT, "names another endpoint than this API's /v1/chat/completions"},
      {"http://h:8000/v1/chat/completions", COMPL, "give the base URL http://h:8000/v1"},
      {"http://h:8000/v1/models", CHAT, "'/v1/models'"},
      {"http://h:8000/v2/models/other/generate_stream", GEN, "give the base URL http://h:8000/v2"},
      {"http://h:8000/v2/models/ensemble/generate", GEN, "names another endpoint"},
      {"http://h:8000/v1/chat/completions", GEN, "names another endpoint"},
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(t); i++) {
    tp_url u;
    tp_url_resolved r;
    err[0] = 0;
    int rv = tp_url_parse(t[i].url, &u, err, sizeof(err));
    if (!rv) rv = tp_url_resolve(&u, t[i].api, NULL, &r, err, sizeof(err));
    CHECK(rv == TP_EINVAL && strstr(err, t[i].says), "'%s' for %s refused: %s", t[i].url, t[i].api, err);
  }
}

/* --endpoint is checked as the URL's path is: another API's endpoint is
 * refused, a path no API names is the user's. */
static void test_override_mismatch(void) {
  static const struct {
    const char *url, *api, *override;
  } t[] = {
      {"http://h:8000", CHAT, "v1/completions"},
      {"http://h:8000/v1", CHAT, "/v1/completions/"},
      {"http://h:8000/v1", COMPL, "chat/completions"},
      {"http://h:8000", COMPL, "http://other:9/v1/chat/completions?x=1"},
      {"http://h:8000", CHAT, "/v1/models"},
      {"http://h:8000", GEN, "/v2/models/ensemble/generate"},
      {"http://h:8000", CHAT, "https://h/v2/models/ensemble/generate_stream"},
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(t); i++) {
    tp_url u;
    tp_url_resolved r;
    err[0] = 0;
    int rv = tp_url_parse(t[i].url, &u, err, sizeof(err));
    if (!rv) rv = tp_url_resolve(&u, t[i].api, t[i].override, &r, err, sizeof(err));
    CHECK(rv == TP_EINVAL && strstr(err, "server.endpoint '") && strstr(err, t[i].override) &&
              strstr(err, "names another endpoint than this API's") && strstr(err, t[i].api),
          "--endpoint '%s' for %s refused: %s", t[i].override, t[i].api, err);
  }
}

static void test_override_bad(void) {
  tp_url u;
  tp_url_resolved r;
  tp_url_parse("http://h:8000/v1", &u, err, sizeof(err));
  err[0] = 0;
  int rv = tp_url_resolve(&u, CHAT, "/v1/chat completions", &r, err, sizeof(err));
  CHECK(rv == TP_EINVAL && strstr(err, "space or control"), "an endpoint with a space is refused: %s", err);
  rv = tp_url_resolve(&u, CHAT, "/x\r\nHost: evil", &r, err, sizeof(err));
  CHECK(rv == TP_EINVAL, "an endpoint with a line break is refused");
}

int main(void) {
  test_override_bad();
  test_parse_good();
  test_parse_bad();
  test_resolve();
  test_resolve_mismatch();
  test_override_mismatch();
  return tp_test_done();
}
