/* Running a tokenizer.json pipeline backwards: ids -> text, through the
 * file's decoders. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tp_tok_hf.h"

/* ------------------------------------------------------------------------ */
/* Decoding                                                                 */

static const char *token_of(const tp__hf *h, int32_t id, size_t *len) {
  size_t lo = 0, hi = h->n_added;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (h->added_ids[mid] < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < h->n_added && h->added_ids[lo] == id) {
    const tp__added *a = &h->added[h->added_idx[lo]];
    *len = a->len;
    return a->content;
  }
  return tp__bpe_token(&h->bpe, id, len);
}

static int dpush(tp__plist *out, tp_buf *buf, size_t start) {
  return tp__hf_plist_push(out, start, buf->len - start, false);
}

/* ByteLevel: every token's characters back to bytes (a token with a
 * character outside the table is taken as its UTF-8 bytes), then one lossy
 * UTF-8 string of it all. */
static int dec_bytelevel(tp__hf_tls *s, const tp__plist *in, tp__plist *out, tp_buf *buf) {
  int rv = 0;
  tp_buf *raw = &s->clean;
  tp_buf_reset(raw);
  for (size_t i = 0; i < in->n && rv == 0; i++) {
    const char *t = in->base + in->v[i].off;
    size_t n = in->v[i].len, mark = raw->len, l;
    bool all = true;
    for (size_t k = 0; k < n && all; k += l) {
      int b = tp__bytelevel_byte(tp__cp_at(t + k, &l));
      if (b < 0)
        all = false;
      else
        rv = tp_buf_append(raw, &(uint8_t){(uint8_t)b}, 1);
    }
    if (!all) {
      raw->len = mark;
      rv = tp_buf_append(raw, t, n);
    }
  }
  if (rv == 0) rv = tp__utf8_lossy(buf, raw->data ? (char *)raw->data : "", raw->len);
  if (rv == 0) rv = dpush(out, buf, 0);
  return rv;
}

static int dec_metaspace(const tp__dec *d, const tp__plist *in, tp__plist *out, tp_buf *buf) {
  int rv = 0;
  for (size_t i = 0; i < in->n && rv == 0; i++) {
    const char *t = in->base + in->v[i].off;
    size_t n = in->v[i].len, start = buf->len, l;
    for (size_t k = 0; k < n && rv == 0; k += l) {
      (void)tp__cp_at(t + k, &l);
      if (l == d->ch_len && memcmp(t + k, d->ch, l) == 0) {
        if (!(i == 0 && d->prepend != TP_PREPEND_NEVER)) rv = tp_buf_append(buf, " ", 1);
      } else {
        rv = tp_buf_append(buf, t + k, l);
      }
    }
    if (rv == 0) rv = dpush(out, buf, start);
  }
  return rv;
}

static int dec_replace(const tp__dec *d, tp__hf_tls *s, const tp__plist *in, tp__plist *out, tp_buf *buf) {
  int rv = 0;
  for (size_t i = 0; i < in->n && rv == 0; i++) {
    size_t start = buf->len;
    rv = tp__hf_replace_all(d->re, s->re, in->base + in->v[i].off, in->v[i].len, d->text, d->text_len, buf);
    if (rv == 0) rv = dpush(out, buf, start);
  }
  return rv;
}

/* The byte a "<0xNN>" token stands for, or -1: u8::from_str_radix(&t[3..5],
 * 16), which takes a '+' sign. */
static int fallback_byte(const char *t, size_t len) {
  if (len != 6 || memcmp(t, "<0x", 3) != 0 || t[5] != '>') return -1;
  int v = 0, digits = 0;
  for (int k = 3; k < 5; k++) {
    char c = t[k];
    if (k == 3 && c == '+') continue;
    int x = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (x < 0) return -1;
    v = v * 16 + x, digits++;
  }
  return digits > 0 ? v : -1;
}

/* Appends a run of fallback bytes: their string when valid UTF-8, else one
 * U+FFFD per byte. */
static int flush_bytes(const uint8_t *bytes, size_t nb, tp__plist *out, tp_buf *buf) {
  int rv = 0;
  if (tp__utf8_valid((const char *)bytes, nb) == nb) {
    size_t start = buf->len;
    rv = tp_buf_append(buf, bytes, nb);
    if (rv == 0) rv = dpush(out, buf, start);
    return rv;
  }
  for (size_t k = 0; k < nb && rv == 0; k++) {
    size_t start = buf->len;
    rv = tp_buf_append(buf, "\xEF\xBF\xBD", 3);
    if (rv == 0) rv = dpush(out, buf, start);
  }
  return rv;
}

/* ByteFallback: runs of <0xNN> tokens become the string of their bytes
 * when that is valid UTF-8, else one U+FFFD per byte. */
static int dec_bytefallback(const tp__plist *in, tp__plist *out, tp_buf *buf) {
  int rv = 0;
  uint8_t *bytes = NULL;
  size_t nb = 0;
  for (size_t i = 0; i <= in->n && rv == 0; i++) {
    int byte = i < in->n ? fallback_byte(in->base + in->v[i].off, in->v[i].len) : -1;
    if (byte >= 0) {
      uint8_t *nbuf = realloc(bytes, nb + 1);
      if (nbuf == NULL) {
        rv = TP_ENOMEM;
        break;
      }
      bytes = nbuf;
      bytes[nb++] = (uint8_t)byte;
      continue;
    }
    if (nb) {
      rv = flush_bytes(bytes, nb, out, buf);
      nb = 0;
    }
    if (i < in->n && rv == 0) {
      size_t start = buf->len;
      rv = tp_buf_append(buf, in->base + in->v[i].off, in->v[i].len);
      if (rv == 0) rv = dpush(out, buf, start);
    }
  }
  free(bytes);
  return rv;
}

static int dec_fuse(const tp__plist *in, tp__plist *out, tp_buf *buf) {
  int rv = 0;
  for (size_t i = 0; i < in->n && rv == 0; i++)
    rv = tp_buf_append(buf, in->base + in->v[i].off, in->v[i].len);
  if (rv == 0) rv = dpush(out, buf, 0);
  return rv;
}

static int dec_strip(const tp__dec *d, const tp__plist *in, tp__plist *out, tp_buf *buf) {
  int rv = 0;
  for (size_t i = 0; i < in->n && rv == 0; i++) {
    const char *t = in->base + in->v[i].off;
    size_t n = in->v[i].len, a = 0, b = n, l;
    for (size_t k = 0; k < d->start && a < n; k++) {
      (void)tp__cp_at(t + a, &l);
      if (l != d->ch_len || memcmp(t + a, d->ch, l) != 0) break;
      a += l;
    }
    for (size_t k = 0; k < d->stop && b > 0; k++) {
      size_t c = b - 1;
      while (c > 0 && ((unsigned char)t[c] & 0xC0) == 0x80) c--;
      if (b - c != d->ch_len || memcmp(t + c, d->ch, d->ch_len) != 0) break;
      b = c;
    }
    size_t start = buf->len;
    if (b > a) rv = tp_buf_append(buf, t + a, b - a);
    if (rv == 0) rv = dpush(out, buf, start);
  }
  return rv;
}

/* One decoder step over the token list in (on in->base) into out/buf. */
static int decode_step(const tp__dec *d, tp__hf_tls *s, const tp__plist *in, tp__plist *out, tp_buf *buf) {
  tp_buf_reset(buf);
  out->n = 0;
  int rv = 0;
  switch (d->kind) {
    case TP_DEC_BYTELEVEL: rv = dec_bytelevel(s, in, out, buf); break;
    case TP_DEC_METASPACE: rv = dec_metaspace(d, in, out, buf); break;
    case TP_DEC_REPLACE: rv = dec_replace(d, s, in, out, buf); break;
    case TP_DEC_BYTEFALLBACK: rv = dec_bytefallback(in, out, buf); break;
    case TP_DEC_FUSE: rv = dec_fuse(in, out, buf); break;
    case TP_DEC_STRIP: rv = dec_strip(d, in, out, buf); break;
  }
  out->base = buf->data ? (char *)buf->data : "";
  return rv;
}

int tp__hf_decode(const tp_tok *t, const int32_t *ids, size_t n, char **text, size_t *len) {
  tp__hf *h = t->impl;
  *text = NULL;
  *len = 0;
  tp__hf_tls *s = tp__hf_tls_get(h);
  if (s == NULL) return TP_ENOMEM;
  tp__plist *cur = &s->dlist[0], *nxt = &s->dlist[1];
  tp_buf *b0 = &s->dbuf[0];
  tp_buf_reset(b0);
  cur->n = 0;
  for (size_t i = 0; i < n; i++) {
    size_t l;
    const char *tok = token_of(h, ids[i], &l);
    if (tok == NULL) return TP_EINVAL; /* no token has this id */
    size_t start = b0->len;
    if (tp_buf_append(b0, tok, l) || dpush(cur, b0, start)) return TP_ENOMEM;
  }
  cur->base = b0->data ? (char *)b0->data : "";
  int wb = 1;
  for (size_t i = 0; i < h->n_decs; i++) {
    int rv = decode_step(&h->decs[i], s, cur, nxt, &s->dbuf[wb]);
    if (rv) return rv;
    wb ^= 1;
    tp__plist *x = cur;
    cur = nxt;
    nxt = x;
  }
  tp_buf res;
  tp_buf_init(&res);
  if (tp_buf_append(&res, "", 0)) return TP_ENOMEM; /* "" when nothing follows */
  for (size_t i = 0; i < cur->n; i++) {
    /* Without a decoder, tokenizers joins the tokens with spaces. */
    if ((i && !h->has_decoder && tp_buf_append(&res, " ", 1)) ||
        tp_buf_append(&res, cur->base + cur->v[i].off, cur->v[i].len)) {
      tp_buf_fini(&res);
      return TP_ENOMEM;
    }
  }
  *text = tp_buf_steal(&res, len);
  return *text ? 0 : TP_ENOMEM;
}
