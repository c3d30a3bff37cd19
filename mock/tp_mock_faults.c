#include "tp_mock_faults.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TP_MOCK_FAULT_STR(name, str) str,
static const char *const fault_names[] = {TP_MOCK_FAULTS(TP_MOCK_FAULT_STR)};
#undef TP_MOCK_FAULT_STR

const char *tp_mock_fault_name(tp_mock_fault_kind k) {
  return (unsigned)k < TP_MOCK_FAULT_COUNT ? fault_names[k] : "?";
}

static const char kinds_accepted[] =
    "none, rst_stream[:H2CODE], grpc_status[:CODE[:TEXT]], trailers_only[:CODE[:TEXT]], "
    "http_status[:CODE[:TEXT]], inband_error[:TEXT], stall, trickle, malformed, sse_garbage, "
    "oversize[:BYTES], invalid_utf8, endless, close_conn, goaway[:H2CODE]; or mixed, or a list KIND,KIND,...";

/* A decimal number in [lo, hi]; the whole of s..s+n must be digits. */
static bool parse_num(const char *s, size_t n, uint64_t lo, uint64_t hi, uint64_t *out) {
  if (n == 0 || n > 19) return false;
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  if (v < lo || v > hi) return false;
  *out = v;
  return true;
}

static void set_text(tp_mock_fault *f, const char *s, size_t n) {
  if (n >= sizeof(f->text)) n = sizeof(f->text) - 1;
  memcpy(f->text, s, n);
  f->text[n] = 0;
}

static int parse_one(const char *spec, size_t len, tp_mock_fault *out, char *err, size_t errlen);

static void mix_add(tp_mock_fault *out, const tp_mock_fault *one) {
  out->mix[out->n_mix].kind = one->kind;
  out->mix[out->n_mix].code = one->code;
  out->mix[out->n_mix].size_bytes = one->size_bytes;
  out->n_mix++;
}

/* "mixed", or a list KIND[:NUMBER],KIND[:NUMBER],... */
static int parse_mix(const char *spec, size_t len, tp_mock_fault *out, char *err, size_t errlen) {
  tp_mock_fault one;
  if (len == 5 && memcmp(spec, "mixed", 5) == 0) {
    for (int k = TP_MOCK_FAULT_NONE + 1; k < TP_MOCK_FAULT_COUNT; k++) {
      parse_one(fault_names[k], strlen(fault_names[k]), &one, NULL, 0);
      mix_add(out, &one);
    }
  } else {
    for (size_t at = 0; at <= len;) {
      const char *comma = memchr(spec + at, ',', len - at);
      size_t il = comma ? (size_t)(comma - (spec + at)) : len - at;
      if (out->n_mix == TP_MOCK_FAULT_MIX_MAX) {
        tp_seterr(err, errlen, "a fault list holds at most %d kinds", TP_MOCK_FAULT_MIX_MAX);
        return TP_EINVAL;
      }
      int rv = parse_one(spec + at, il, &one, err, errlen);
      if (rv) return rv;
      if (one.text[0] || one.kind == TP_MOCK_FAULT_NONE) {
        tp_seterr(err, errlen, "fault list item '%.*s': a list takes kinds and numbers, no 'none' and no texts",
                  (int)TP_MIN(il, 64), spec + at);
        return TP_EINVAL;
      }
      mix_add(out, &one);
      at += il + 1;
    }
  }
  /* The first kind stands for the mix where one kind is asked for. */
  out->kind = out->mix[0].kind;
  out->code = out->mix[0].code;
  out->size_bytes = out->mix[0].size_bytes;
  return 0;
}

int tp_mock_fault_parse(const char *spec, size_t len, tp_mock_fault *out, char *err, size_t errlen) {
  memset(out, 0, sizeof(*out));
  if (memchr(spec, ',', len) || (len == 5 && memcmp(spec, "mixed", 5) == 0))
    return parse_mix(spec, len, out, err, errlen);
  return parse_one(spec, len, out, err, errlen);
}

static int parse_one(const char *spec, size_t len, tp_mock_fault *out, char *err, size_t errlen) {
  memset(out, 0, sizeof(*out));
  const char *colon = memchr(spec, ':', len);
  size_t kl = colon ? (size_t)(colon - spec) : len;
  const char *rest = colon ? colon + 1 : NULL;
  size_t rl = colon ? len - kl - 1 : 0;

  int kind = -1;
  for (int i = 0; i < TP_MOCK_FAULT_COUNT; i++)
    if (strlen(fault_names[i]) == kl && memcmp(fault_names[i], spec, kl) == 0) kind = i;
  if (kind < 0 && kl == 11 && memcmp(spec, "sse_garbage", 11) == 0) kind = TP_MOCK_FAULT_MALFORMED;
  if (kind < 0) {
    tp_seterr(err, errlen, "unknown fault kind '%.*s' (expected %s)", (int)TP_MIN(kl, 64), spec,
              kinds_accepted);
    return TP_EINVAL;
  }
  out->kind = (tp_mock_fault_kind)kind;
  out->size_bytes = TP_MOCK_OVERSIZE_DEFAULT_BYTES;

  /* Kinds with a number first, then an optional text. */
  uint64_t lo = 0, hi = 0;
  bool numbered = true, texted = false;
  switch (out->kind) {
    case TP_MOCK_FAULT_RST_STREAM: out->code = 2, lo = 0, hi = 0xd; break;
    case TP_MOCK_FAULT_GOAWAY: out->code = 0, lo = 0, hi = 0xd; break;
    case TP_MOCK_FAULT_GRPC_STATUS:
    case TP_MOCK_FAULT_TRAILERS_ONLY: out->code = 14, lo = 1, hi = 16, texted = true; break;
    case TP_MOCK_FAULT_HTTP_STATUS: out->code = 503, lo = 400, hi = 599, texted = true; break;
    case TP_MOCK_FAULT_OVERSIZE: lo = 1, hi = UINT32_MAX; break;
    case TP_MOCK_FAULT_INBAND_ERROR:
      numbered = false;
      texted = true;
      break;
    default: numbered = false; break;
  }
  if (!rest) return 0;
  if (!numbered && !texted) {
    tp_seterr(err, errlen, "fault '%s' takes no argument (got '%.*s')", fault_names[kind], (int)TP_MIN(rl, 64),
              rest);
    return TP_EINVAL;
  }
  if (!numbered) {
    set_text(out, rest, rl);
    return 0;
  }
  const char *c2 = memchr(rest, ':', rl);
  size_t nl = c2 ? (size_t)(c2 - rest) : rl;
  if (c2 && !texted) {
    tp_seterr(err, errlen, "fault '%s' takes one number (got '%.*s')", fault_names[kind], (int)TP_MIN(rl, 64),
              rest);
    return TP_EINVAL;
  }
  uint64_t v;
  if (!parse_num(rest, nl, lo, hi, &v)) {
    tp_seterr(err, errlen, "fault '%s': '%.*s' is not a number within %llu..%llu", fault_names[kind],
              (int)TP_MIN(nl, 32), rest, (unsigned long long)lo, (unsigned long long)hi);
    return TP_EINVAL;
  }
  if (out->kind == TP_MOCK_FAULT_OVERSIZE)
    out->size_bytes = (uint32_t)v;
  else
    out->code = (int)v;
  if (c2) set_text(out, c2 + 1, rl - nl - 1);
  return 0;
}

/* splitmix64, the engine's generator, on a stream of its own. */
static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

bool tp_mock_fault_draw(uint64_t seed, uint64_t number, double rate) {
  if (!(rate > 0)) return false;
  if (rate >= 1) return true;
  uint64_t x = mix(mix(seed ^ 0x6661756c74ULL /* "fault" */) ^ number);
  double u = (double)(x >> 11) * 0x1.0p-53;
  return u < rate;
}

void tp_mock_fault_pick(const tp_mock_fault *f, uint64_t seed, uint64_t number, tp_mock_fault *out) {
  *out = *f;
  if (!f->n_mix) return;
  uint64_t x = mix(mix(seed ^ 0x6d6978ULL /* "mix" */) ^ number);
  size_t i = (size_t)(x % f->n_mix);
  out->kind = f->mix[i].kind;
  out->code = f->mix[i].code;
  out->size_bytes = f->mix[i].size_bytes;
  out->text[0] = 0;
  out->n_mix = 0;
}

int tp_mock_fault_grpc_status(const tp_mock_fault *f) {
  switch (f->kind) {
    case TP_MOCK_FAULT_GRPC_STATUS:
    case TP_MOCK_FAULT_TRAILERS_ONLY: return f->code;
    case TP_MOCK_FAULT_HTTP_STATUS:
      switch (f->code) {
        case 400: return 3;  /* INVALID_ARGUMENT */
        case 401: return 16; /* UNAUTHENTICATED */
        case 403: return 7;  /* PERMISSION_DENIED */
        case 404: return 5;  /* NOT_FOUND */
        case 429: return 8;  /* RESOURCE_EXHAUSTED */
        case 501: return 12; /* UNIMPLEMENTED */
        case 502:
        case 503:
        case 504: return 14; /* UNAVAILABLE */
        default: return 13;  /* INTERNAL */
      }
    default: return 13;
  }
}

int tp_mock_fault_http_status(const tp_mock_fault *f) {
  switch (f->kind) {
    case TP_MOCK_FAULT_HTTP_STATUS: return f->code;
    case TP_MOCK_FAULT_GRPC_STATUS:
    case TP_MOCK_FAULT_TRAILERS_ONLY:
      switch (f->code) {
        case 3: return 400;
        case 5: return 404;
        case 8: return 429;
        case 12: return 501;
        case 14: return 503;
        case 16: return 401;
        default: return 500;
      }
    default: return 500;
  }
}

const char *tp_mock_fault_message(const tp_mock_fault *f) {
  if (f->text[0]) return f->text;
  switch (f->kind) {
    case TP_MOCK_FAULT_GRPC_STATUS:
    case TP_MOCK_FAULT_TRAILERS_ONLY:
    case TP_MOCK_FAULT_HTTP_STATUS: return "tokperf mock: injected error status";
    case TP_MOCK_FAULT_INBAND_ERROR: return "tokperf mock: injected inference error";
    default: return "tokperf mock: injected fault";
  }
}

bool tp_mock_fault_is_discrete(tp_mock_fault_kind k) {
  switch (k) {
    case TP_MOCK_FAULT_RST_STREAM:
    case TP_MOCK_FAULT_GRPC_STATUS:
    case TP_MOCK_FAULT_TRAILERS_ONLY:
    case TP_MOCK_FAULT_HTTP_STATUS:
    case TP_MOCK_FAULT_INBAND_ERROR:
    case TP_MOCK_FAULT_STALL:
    case TP_MOCK_FAULT_MALFORMED:
    case TP_MOCK_FAULT_OVERSIZE:
    case TP_MOCK_FAULT_CLOSE_CONN:
    case TP_MOCK_FAULT_GOAWAY: return true;
    default: return false;
  }
}
