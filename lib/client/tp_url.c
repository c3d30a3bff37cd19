/* URL parsing and joining for -u/--url and --endpoint (see tp_url.h). */
#include "client/tp_url.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "util/tp_common.h"

static const struct {
  const char *name;
  tp_url_scheme scheme;
} schemes[] = {
    {"http", TP_URL_HTTP},
    {"https", TP_URL_HTTPS},
    {"grpc", TP_URL_GRPC},
    {"grpcs", TP_URL_GRPCS},
};

const char *tp_url_scheme_name(tp_url_scheme s) {
  for (size_t i = 0; i < TP_ARRAY_LEN(schemes); i++)
    if (schemes[i].scheme == s) return schemes[i].name;
  return "http";
}

bool tp_url_tls(const tp_url *u) {
  return u->scheme == TP_URL_HTTPS || u->scheme == TP_URL_GRPCS;
}

static bool has_ctl_or_space(const char *s) {
  for (; *s; s++)
    if ((unsigned char)*s <= 0x20 || *s == 0x7f) return true;
  return false;
}

/* The scheme before "://", or -1 when the text has none. */
static int parse_scheme(const char *s, size_t *skip, tp_url_scheme *out) {
  const char *sep = strstr(s, "://");
  /* "host:port/x://y" has no scheme: a scheme holds letters only and comes
   * before any '/' or ':'. */
  if (!sep || (size_t)(sep - s) != strcspn(s, ":/?")) return -1;
  size_t n = (size_t)(sep - s);
  *skip = n + 3;
  for (size_t i = 0; i < TP_ARRAY_LEN(schemes); i++) {
    if (strlen(schemes[i].name) == n && strncasecmp(s, schemes[i].name, n) == 0) {
      *out = schemes[i].scheme;
      return 0;
    }
  }
  *out = TP_URL_NONE;
  return 1; /* a scheme we do not speak */
}

/* ":port" digits (without the colon), n of them; 0 = invalid. */
static int parse_port(const char *s, size_t n) {
  if (n == 0 || n > 5) return 0;
  int v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return 0;
    v = v * 10 + (s[i] - '0');
  }
  return v >= 1 && v <= 65535 ? v : 0;
}

/* The authority a[0..alen) of URL s: host (a bracketed IPv6 address, or
 * a name or IPv4 address) and port, into u. */
static int parse_authority(const char *s, const char *a, size_t alen, tp_url *u, char *err, size_t errlen) {
  const char *aend = a + alen;
  /* The host: a bracketed IPv6 address, or everything up to the last ':'. */
  const char *hend;
  const char *port = NULL;
  if (alen && a[0] == '[') {
    const char *rb = memchr(a, ']', alen);
    if (!rb || rb == a + 1) {
      tp_seterr(err, errlen, "URL '%s': an IPv6 address needs its closing ']' (like [::1]:8000)", s);
      return TP_EINVAL;
    }
    u->ipv6 = true;
    hend = rb;
    if (rb + 1 < a + alen) {
      if (rb[1] != ':') {
        tp_seterr(err, errlen, "URL '%s': expected ':PORT' after the IPv6 address", s);
        return TP_EINVAL;
      }
      port = rb + 2;
    }
    a++;
  } else {
    const char *colon = memchr(a, ':', alen);
    hend = colon ? colon : a + alen;
    if (colon) port = colon + 1;
  }
  size_t hlen = (size_t)(hend - a);
  if (hlen == 0) {
    tp_seterr(err, errlen, "URL '%s' has no host (expected HOST:PORT or http://HOST:PORT)", s);
    return TP_EINVAL;
  }
  if (hlen >= sizeof(u->host)) {
    tp_seterr(err, errlen, "URL '%s': the host name is longer than %zu characters", s, sizeof(u->host) - 1);
    return TP_EINVAL;
  }
  if (!u->ipv6 && memchr(a, ']', hlen)) {
    tp_seterr(err, errlen, "URL '%s': a ']' without '[' in the host", s);
    return TP_EINVAL;
  }
  memcpy(u->host, a, hlen);
  u->host[hlen] = 0;
  if (port) {
    size_t plen = (size_t)(aend - port);
    u->port = parse_port(port, plen);
    if (!u->port) {
      tp_seterr(err, errlen, "URL '%s': the port '%.*s' is not a number from 1 to 65535", s, (int)plen, port);
      return TP_EINVAL;
    }
  }
  return 0;
}

int tp_url_parse(const char *s, tp_url *u, char *err, size_t errlen) {
  memset(u, 0, sizeof(*u));
  if (!s || !*s) {
    tp_seterr(err, errlen, "empty URL (expected HOST:PORT or http://HOST:PORT[/PATH])");
    return TP_EINVAL;
  }
  size_t slen = strlen(s);
  if (slen >= TP_URL_PATH_MAX) {
    tp_seterr(err, errlen, "URL '%.40s...' is longer than %d characters", s, TP_URL_PATH_MAX - 1);
    return TP_EINVAL;
  }
  if (has_ctl_or_space(s)) {
    tp_seterr(err, errlen, "URL '%s' holds a space or control character", s);
    return TP_EINVAL;
  }
  if (strchr(s, '#')) {
    tp_seterr(err, errlen, "URL '%s' has a fragment ('#...'), which is never sent to a server", s);
    return TP_EINVAL;
  }
  size_t skip = 0;
  int sr = parse_scheme(s, &skip, &u->scheme);
  if (sr == 1) {
    tp_seterr(err, errlen, "URL '%s': unknown scheme '%.*s' (use http://, https://, grpc:// or grpcs://)", s,
              (int)(skip - 3), s);
    return TP_EINVAL;
  }
  const char *a = s + skip;
  size_t alen = strcspn(a, "/?");
  if (memchr(a, '@', alen)) {
    tp_seterr(err, errlen, "URL '%s': user names in URLs are not supported (use --api-key-file or -H)", s);
    return TP_EINVAL;
  }
  if (parse_authority(s, a, alen, u, err, errlen)) return TP_EINVAL;
  const char *p = s + skip + alen;
  size_t plen = strcspn(p, "?");
  while (plen > 0 && p[plen - 1] == '/') plen--;
  memcpy(u->path, p, plen);
  u->path[plen] = 0;
  if (p[strcspn(p, "?")] == '?') snprintf(u->query, sizeof(u->query), "%s", p + strcspn(p, "?") + 1);
  return 0;
}

size_t tp_url_authority(const tp_url *u, char *out, size_t n) {
  char port[8] = "";
  if (u->port) snprintf(port, sizeof(port), ":%d", u->port);
  int w = snprintf(out, n, "%s%s%s%s", u->ipv6 ? "[" : "", u->host, u->ipv6 ? "]" : "", port);
  return w < 0 ? 0 : (size_t)w;
}

size_t tp_url_origin(const tp_url *u, char *out, size_t n) {
  char auth[TP_URL_HOST_MAX + 16];
  tp_url_authority(u, auth, sizeof(auth));
  int w = snprintf(out, n, "%s://%s", tp_url_tls(u) ? "https" : "http", auth);
  return w < 0 ? 0 : (size_t)w;
}

/* ---- joining -------------------------------------------------------------- */

/* Whether path ends with suffix on a segment boundary ("/a/v1" ends with
 * "/v1"; "/av1" does not). */
static bool ends_with_segments(const char *path, size_t plen, const char *suffix) {
  size_t sl = strlen(suffix);
  return sl <= plen && memcmp(path + plen - sl, suffix, sl) == 0 && (sl == 0 || suffix[0] == '/');
}

/* The endpoint a path names by its last segments, longest first, or NULL:
 * these are the request paths of every HTTP API tokperf speaks. */
static const char *named_endpoint(const char *path, size_t plen) {
  static const char *const known[] = {"/chat/completions", "/completions", "/generate_stream", "/generate",
                                      "/models"};
  for (size_t i = 0; i < TP_ARRAY_LEN(known); i++)
    if (ends_with_segments(path, plen, known[i])) return known[i];
  return NULL;
}

/* "v1", "v2", "v1beta", "v1alpha2": a version segment. */
static bool version_segment(const char *seg, size_t n) {
  if (n < 2 || (seg[0] != 'v' && seg[0] != 'V') || seg[1] < '0' || seg[1] > '9') return false;
  for (size_t i = 2; i < n; i++) {
    char c = seg[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) return false;
  }
  return true;
}

static int fits(int w, size_t n, const char *what, char *err, size_t errlen) {
  if (w >= 0 && (size_t)w < n) return 0;
  tp_seterr(err, errlen, "the %s URL would be longer than %zu characters", what, n - 1);
  return TP_EINVAL;
}

int tp_url_resolve(const tp_url *u, const char *api_path, const char *override, tp_url_resolved *out,
                   char *err, size_t errlen) {
  memset(out, 0, sizeof(*out));
  /* api_path = "/VERSION" + tail. */
  const char *tail = strchr(api_path + (api_path[0] == '/'), '/');
  if (!tail) tail = api_path + strlen(api_path);
  size_t vlen = (size_t)(tail - api_path);
  char origin[TP_URL_HOST_MAX + 32];
  tp_url_origin(u, origin, sizeof(origin));
  if (u->query[0]) snprintf(out->query, sizeof(out->query), "?%s", u->query);

  const char *p = u->path;
  size_t plen = strlen(p);
  const char *named = named_endpoint(p, plen);
  int w;
  if (named) {
    /* The path names an endpoint: it must be this API's, whole. */
    const char *mine = named_endpoint(api_path, strlen(api_path));
    if (!ends_with_segments(p, plen, tail) || !mine || strcmp(named, mine) != 0) {
      tp_seterr(err, errlen,
                "the URL's path '%s' names another endpoint than this API's %s (give the base URL %s%.*s, "
                "or the endpoint that matches)",
                p, api_path, origin, (int)vlen, api_path);
      return TP_EINVAL;
    }
    out->as_given = true;
    w = snprintf(out->api_base, sizeof(out->api_base), "%s%.*s", origin, (int)(plen - strlen(tail)), p);
  } else {
    const char *last = strrchr(p, '/');
    last = last ? last + 1 : p;
    size_t llen = plen - (size_t)(last - p);
    if (version_segment(last, llen))
      w = snprintf(out->api_base, sizeof(out->api_base), "%s%s", origin, p); /* an SDK's base URL */
    else
      w = snprintf(out->api_base, sizeof(out->api_base), "%s%s%.*s", origin, p, (int)vlen, api_path);
  }
  if (fits(w, sizeof(out->api_base), "API base", err, errlen)) return TP_EINVAL;

  if (override && *override) {
    if (has_ctl_or_space(override)) {
      tp_seterr(err, errlen, "the endpoint '%s' holds a space or control character", override);
      return TP_EINVAL;
    }
    if (strncasecmp(override, "http://", 7) == 0 || strncasecmp(override, "https://", 8) == 0)
      w = snprintf(out->endpoint, sizeof(out->endpoint), "%s", override);
    else if (override[0] == '/')
      w = snprintf(out->endpoint, sizeof(out->endpoint), "%s%s", origin, override);
    else /* below the URL as given, as GenAI-Perf joins --url and --endpoint */
      w = snprintf(out->endpoint, sizeof(out->endpoint), "%s%s/%s", origin,
                   strcmp(u->path, "/") == 0 ? "" : u->path, override);
    out->as_given = false;
    /* Checked as the URL's path is: an endpoint another API's path names
     * (a completions path for chat) is a mistake; a path no API names (a
     * proxy's own) is the user's to choose. */
    const char *ep = strstr(out->endpoint, "://");
    ep = ep ? ep + 3 + strcspn(ep + 3, "/?") : out->endpoint;
    size_t elen = strcspn(ep, "?");
    while (elen > 0 && ep[elen - 1] == '/') elen--;
    const char *names = named_endpoint(ep, elen), *mine = named_endpoint(api_path, strlen(api_path));
    if (names && mine && strcmp(names, mine) != 0) {
      tp_seterr(err, errlen,
                "server.endpoint '%s' names another endpoint than this API's %s (leave server.endpoint out, or "
                "give the endpoint that matches)",
                override, api_path);
      return TP_EINVAL;
    }
  } else {
    w = snprintf(out->endpoint, sizeof(out->endpoint), "%s%s%s", out->api_base, tail, out->query);
  }
  return fits(w, sizeof(out->endpoint), "endpoint", err, errlen);
}
