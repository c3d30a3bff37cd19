#include "tp_grpc.h"

#include <string.h>

#define TP_GRPC_NAME(n, name) case n: return #name;
const char *tp_grpc_status_name(int status) {
  switch (status) {
    TP_GRPC_STATUSES(TP_GRPC_NAME)
  }
  return "UNKNOWN_STATUS";
}
#undef TP_GRPC_NAME

void tp_grpc_reader_init(tp_grpc_reader *r, uint32_t max_msg_bytes) {
  memset(r, 0, sizeof(*r));
  tp_buf_init(&r->partial);
  r->max_msg_bytes = max_msg_bytes;
}

void tp_grpc_reader_fini(tp_grpc_reader *r) { tp_buf_fini(&r->partial); }

bool tp_grpc_reader_mid_message(const tp_grpc_reader *r) {
  return r->prefix_have > 0 || r->in_body;
}

int tp_grpc_reader_feed(tp_grpc_reader *r, const uint8_t *data, size_t len,
                        tp_grpc_msg_cb cb, void *user_data) {
  size_t off = 0;
  int rv;
  while (off < len) {
    if (!r->in_body) {
      /* Gather the 5-byte prefix, which may itself be split across feeds. */
      size_t take = TP_MIN(TP_GRPC_PREFIX_BYTES - r->prefix_have, len - off);
      memcpy(r->prefix + r->prefix_have, data + off, take);
      r->prefix_have += take;
      off += take;
      if (r->prefix_have < TP_GRPC_PREFIX_BYTES) break;
      r->msg_len = (uint32_t)r->prefix[1] << 24 | (uint32_t)r->prefix[2] << 16 |
                   (uint32_t)r->prefix[3] << 8 | (uint32_t)r->prefix[4];
      if (r->msg_len > r->max_msg_bytes) return TP_ETOOBIG;
      r->in_body = true;
      tp_buf_reset(&r->partial);
      if (r->msg_len == 0) {
        /* An empty protobuf message serializes to zero bytes. */
        r->in_body = false;
        r->prefix_have = 0;
        rv = cb(user_data, (const uint8_t *)"", 0, r->prefix[0] != 0);
        if (rv < 0) return rv;
        continue;
      }
    }
    size_t want = r->msg_len - r->partial.len;
    size_t avail = len - off;
    if (r->partial.len == 0 && avail >= want) {
      /* The whole body is in this feed: hand it over without copying. */
      r->in_body = false;
      r->prefix_have = 0;
      rv = cb(user_data, data + off, want, r->prefix[0] != 0);
      off += want;
      if (rv < 0) return rv;
      continue;
    }
    size_t take = TP_MIN(want, avail);
    rv = tp_buf_append(&r->partial, data + off, take);
    if (rv) return rv;
    off += take;
    if (r->partial.len == r->msg_len) {
      r->in_body = false;
      r->prefix_have = 0;
      rv = cb(user_data, r->partial.data, r->partial.len, r->prefix[0] != 0);
      tp_buf_reset(&r->partial);
      if (rv < 0) return rv;
    }
  }
  return 0;
}

void tp_grpc_put_prefix(uint8_t out[TP_GRPC_PREFIX_BYTES], uint32_t msg_len) {
  out[0] = 0;
  out[1] = (uint8_t)(msg_len >> 24);
  out[2] = (uint8_t)(msg_len >> 16);
  out[3] = (uint8_t)(msg_len >> 8);
  out[4] = (uint8_t)msg_len;
}

/* Units from finest to coarsest; the value must fit in 8 digits. */
static const struct {
  char unit;
  uint64_t ns;
} timeout_units[] = {
  {'n', 1ULL},
  {'u', 1000ULL},
  {'m', 1000000ULL},
  {'S', 1000000000ULL},
  {'M', 60ULL * 1000000000ULL},
  {'H', 3600ULL * 1000000000ULL},
};

void tp_grpc_timeout_format(char out[10], uint64_t timeout_ns) {
  for (size_t i = 0; i < TP_ARRAY_LEN(timeout_units); i++) {
    /* Round up so the deadline the server sees is never shorter than ours. */
    uint64_t v = timeout_ns / timeout_units[i].ns +
                 (timeout_ns % timeout_units[i].ns ? 1 : 0);
    if (v <= 99999999ULL) {
      int n = 0;
      char digits[9];
      do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
      } while (v);
      for (int j = 0; j < n; j++) out[j] = digits[n - 1 - j];
      out[n] = timeout_units[i].unit;
      out[n + 1] = 0;
      return;
    }
  }
  /* Beyond 99,999,999 hours: send the largest value the format allows. */
  memcpy(out, "99999999H", 10);
}

int tp_grpc_timeout_parse(const char *s, size_t len, uint64_t *timeout_ns) {
  if (len < 2 || len > 9) return TP_EINVAL;
  uint64_t v = 0;
  for (size_t i = 0; i + 1 < len; i++) {
    if (s[i] < '0' || s[i] > '9') return TP_EINVAL;
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  for (size_t i = 0; i < TP_ARRAY_LEN(timeout_units); i++) {
    if (timeout_units[i].unit == s[len - 1]) {
      /* 99,999,999 hours does not fit in 64-bit nanoseconds: saturate. */
      if (v > UINT64_MAX / timeout_units[i].ns)
        *timeout_ns = UINT64_MAX;
      else
        *timeout_ns = v * timeout_units[i].ns;
      return 0;
    }
  }
  return TP_EINVAL;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

size_t tp_grpc_message_decode(char *out, const char *in, size_t len) {
  size_t o = 0;
  for (size_t i = 0; i < len; i++) {
    if (in[i] == '%' && i + 2 < len) {
      int hi = hexval(in[i + 1]), lo = hexval(in[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out[o++] = (char)(hi << 4 | lo);
        i += 2;
        continue;
      }
    }
    /* A malformed escape is kept as it is, as the gRPC spec asks. */
    out[o++] = in[i];
  }
  out[o] = 0;
  return o;
}

size_t tp_grpc_message_encode(char *out, const char *in, size_t len) {
  static const char hex[] = "0123456789ABCDEF";
  size_t o = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)in[i];
    if (c >= 0x20 && c <= 0x7e && c != '%') {
      out[o++] = (char)c;
    } else {
      out[o++] = '%';
      out[o++] = hex[c >> 4];
      out[o++] = hex[c & 15];
    }
  }
  out[o] = 0;
  return o;
}

int tp_grpc_status_from_http(int http_status) {
  switch (http_status) {
    case 400: return TP_GRPC_INTERNAL;
    case 401: return TP_GRPC_UNAUTHENTICATED;
    case 403: return TP_GRPC_PERMISSION_DENIED;
    case 404: return TP_GRPC_UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504: return TP_GRPC_UNAVAILABLE;
    case 431: return TP_GRPC_INTERNAL;
    default: return TP_GRPC_UNKNOWN;
  }
}

int tp_grpc_status_from_rst(uint32_t h2_error_code) {
  switch (h2_error_code) {
    case 0x7: return TP_GRPC_UNAVAILABLE;        /* REFUSED_STREAM: safe to retry */
    case 0x8: return TP_GRPC_CANCELLED;          /* CANCEL */
    case 0xb: return TP_GRPC_RESOURCE_EXHAUSTED; /* ENHANCE_YOUR_CALM */
    case 0xc: return TP_GRPC_PERMISSION_DENIED;  /* INADEQUATE_SECURITY */
    default: return TP_GRPC_INTERNAL;            /* NO_ERROR included: a trailer was due */
  }
}

int tp_grpc_status_parse(const char *s, size_t len) {
  if (len == 0 || len > 9) return -1;
  int v = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

bool tp_grpc_may_resend(const tp_grpc_unanswered *u) {
  if (u->resends >= TP_GRPC_MAX_RESENDS || u->got_response || u->local_failed) return false;
  if (!u->on_wire) return true; /* the server never saw it */
  if (u->rst_code == TP_H2_REFUSED_STREAM) return true;
  if (u->goaway) return u->stream_id > u->goaway_last;
  /* A guess (the server may have read it before closing): once only. */
  return u->conn_lost && u->conn_reused && u->resends == 0;
}
