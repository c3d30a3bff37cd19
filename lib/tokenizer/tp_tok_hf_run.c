/* Running a tokenizer.json pipeline: encode (text -> ids) and decode.
 *
 * The order of steps and every split rule follow the Rust `tokenizers`
 * library, the reference the tests compare against id for id.  Unlike it,
 * no character-level alignment to the original text is kept: offsets are
 * not asked for, and tracking them is most of that library's cost.  The one
 * place the original position matters, Metaspace's prepend_scheme "first",
 * only needs to know whether a piece starts where the input starts
 * (tp__piece.origin).
 *
 * Input that is not valid UTF-8 is first made valid the way Rust's
 * String::from_utf8_lossy does (U+FFFD per maximal invalid sequence): the
 * reference only accepts strings, so that is what it would have been
 * given. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tokenizer/tp_tok_hf.h"
#include "util/tp_utf8.h"

/* The longest text encode takes (TP_ETOOBIG beyond). */
#define MAX_TEXT_BYTES (1u << 30)

typedef struct enc {
  const tp__hf *h;
  tp__hf_tls *s;
  tp__ids *out;
} enc;

/* ------------------------------------------------------------------------ */
/* UTF-8                                                                    */

size_t tp__utf8_valid(const char *s, size_t n) {
  return tp_utf8_valid(s, n);
}

int tp__utf8_lossy(tp_buf *out, const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0, run = 0;
  while (i < n) {
    bool ok;
    size_t k = u[i] < 0x80 ? (ok = true, 1) : tp_utf8_step(u + i, n - i, &ok);
    if (ok) {
      i += k;
      continue;
    }
    if (tp_buf_append(out, s + run, i - run) || tp_buf_append(out, "\xEF\xBF\xBD", 3)) return TP_ENOMEM;
    i += k;
    run = i;
  }
  return tp_buf_append(out, s + run, n - run) ? TP_ENOMEM : 0;
}

/* Rust's char::is_whitespace (the White_Space property). */
static inline bool is_ws(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

/* Rust's char::is_numeric: general categories Nd, Nl, No. */
static inline bool is_numeric(uint32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)c);
  return k == UTF8PROC_CATEGORY_ND || k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_NO;
}

static bool all_ascii(const char *s, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v;
    memcpy(&v, s + i, 8);
    if (v & 0x8080808080808080ULL) return false;
  }
  for (; i < n; i++)
    if ((unsigned char)s[i] >= 0x80) return false;
  return true;
}

/* ------------------------------------------------------------------------ */
/* Normalizers                                                              */

typedef struct repl_ctx {
  tp_buf *dst;
  const char *src;
  size_t last;
  const char *with;
  size_t with_len;
} repl_ctx;

static int repl_cb(void *user_data, size_t start, size_t end) {
  repl_ctx *c = user_data;
  if (tp_buf_append(c->dst, c->src + c->last, start - c->last) || tp_buf_append(c->dst, c->with, c->with_len))
    return TP_ENOMEM;
  c->last = end;
  return 0;
}

/* Replaces every match of re in s[0..n) with `with`, appending to dst. */
int tp__hf_replace_all(const tp__re *re, tp__re_state *st, const char *s, size_t n, const char *with,
                       size_t with_len, tp_buf *dst) {
  repl_ctx c = {.dst = dst, .src = s, .last = 0, .with = with, .with_len = with_len};
  int rv = tp__re_find_all(re, st, s, n, repl_cb, &c);
  if (rv) return rv;
  return tp_buf_append(dst, s + c.last, n - c.last) ? TP_ENOMEM : 0;
}

static int unicode_form(const char *s, size_t n, int options, tp_buf *dst) {
  if (all_ascii(s, n)) return tp_buf_append(dst, s, n) ? TP_ENOMEM : 0;
  utf8proc_uint8_t *r = NULL;
  utf8proc_ssize_t got = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &r,
                                      (utf8proc_option_t)(UTF8PROC_STABLE | options));
  if (got < 0) return got == UTF8PROC_ERROR_NOMEM ? TP_ENOMEM : TP_EINVAL;
  int rv = tp_buf_append(dst, r, (size_t)got) ? TP_ENOMEM : 0;
  free(r);
  return rv;
}

static int lowercase(const char *s, size_t n, tp_buf *dst) {
  if (tp_buf_reserve(dst, n + 8)) return TP_ENOMEM;
  for (size_t i = 0; i < n;) {
    size_t l;
    uint32_t c = tp__cp_at(s + i, &l);
    i += l;
    char w[8];
    size_t k;
    if (c == 0x130) {
      /* Full lowercase mapping (SpecialCasing): I with dot above becomes
       * i + U+0307, the one unconditional mapping to two characters. */
      k = tp_utf8_put(w, 'i');
      k += tp_utf8_put(w + k, 0x307);
    } else {
      k = tp_utf8_put(w, (uint32_t)utf8proc_tolower((utf8proc_int32_t)c));
    }
    if (tp_buf_append(dst, w, k)) return TP_ENOMEM;
  }
  return 0;
}

static int apply_norm(const tp__norm *nm, tp__re_state *st, const char *s, size_t n, tp_buf *dst) {
  switch (nm->kind) {
    case TP_NORM_NFC: return unicode_form(s, n, UTF8PROC_COMPOSE, dst);
    case TP_NORM_NFD: return unicode_form(s, n, UTF8PROC_DECOMPOSE, dst);
    case TP_NORM_NFKC: return unicode_form(s, n, UTF8PROC_COMPOSE | UTF8PROC_COMPAT, dst);
    case TP_NORM_NFKD: return unicode_form(s, n, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT, dst);
    case TP_NORM_LOWERCASE:
      if (all_ascii(s, n)) {
        if (tp_buf_reserve(dst, n)) return TP_ENOMEM;
        for (size_t i = 0; i < n; i++)
          dst->data[dst->len + i] = (uint8_t)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
        dst->len += n;
        dst->data[dst->len] = 0;
        return 0;
      }
      return lowercase(s, n, dst);
    case TP_NORM_PREPEND:
      /* Only a non-empty string gets the prefix. */
      if (n && tp_buf_append(dst, nm->text, nm->text_len)) return TP_ENOMEM;
      return tp_buf_append(dst, s, n) ? TP_ENOMEM : 0;
    case TP_NORM_REPLACE: return tp__hf_replace_all(nm->re, st, s, n, nm->text, nm->text_len, dst);
    case TP_NORM_STRIP: {
      size_t a = 0, b = n, l;
      if (nm->left)
        while (a < b && is_ws(tp__cp_at(s + a, &l))) a += l;
      if (nm->right)
        while (b > a) {
          size_t k = b - 1;
          while (k > a && ((unsigned char)s[k] & 0xC0) == 0x80) k--;
          if (!is_ws(tp__cp_at(s + k, &l))) break;
          b = k;
        }
      return tp_buf_append(dst, s + a, b - a) ? TP_ENOMEM : 0;
    }
  }
  return TP_EINVAL;
}

int tp__hf_normalize(const tp__hf *h, tp__hf_tls *tls, const char *s, size_t n, tp_buf *out) {
  tp_buf *tmp = &tls->norm[1];
  tp_buf *bufs[2] = {out, tmp};
  int w = 0;
  tp_buf_reset(out);
  if (h->n_norms == 0) return tp_buf_append(out, s, n) ? TP_ENOMEM : 0;
  /* Each step reads the buffer the previous one wrote and writes the other. */
  for (size_t i = 0; i < h->n_norms; i++, w ^= 1) {
    tp_buf_reset(bufs[w]);
    int rv = apply_norm(&h->norms[i], tls->re, s, n, bufs[w]);
    if (rv) return rv;
    s = bufs[w]->data ? (char *)bufs[w]->data : "";
    n = bufs[w]->len;
  }
  if (bufs[w ^ 1] != out) {
    tp_buf x = *out;
    *out = *tmp;
    *tmp = x;
  }
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Pre-tokenizers                                                           */

int tp__hf_plist_push(tp__plist *l, size_t off, size_t len, bool origin) {
  if (off + len > UINT32_MAX) return TP_ETOOBIG; /* normalizing made it past 4 GiB */
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 64;
    tp__piece *v = realloc(l->v, cap * sizeof(*v));
    if (v == NULL) return TP_ENOMEM;
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = (tp__piece){(uint32_t)off, (uint32_t)len, origin};
  return 0;
}

static int seg_push(tp__hf_tls *s, size_t start, size_t end, bool match) {
  if (s->n_segs == s->cap_segs) {
    size_t cap = s->cap_segs ? s->cap_segs * 2 : 64;
    tp__seg *v = realloc(s->segs, cap * sizeof(*v));
    if (v == NULL) return TP_ENOMEM;
    s->segs = v;
    s->cap_segs = cap;
  }
  s->segs[s->n_segs++] = (tp__seg){(uint32_t)start, (uint32_t)end, match};
  return 0;
}

typedef struct seg_ctx {
  tp__hf_tls *s;
  size_t prev;
} seg_ctx;

/* Rust's Pattern::find_matches for a regex: matches and the gaps between
 * them, in order, covering the text. */
static int seg_cb(void *user_data, size_t start, size_t end) {
  seg_ctx *c = user_data;
  if (c->prev != start && seg_push(c->s, c->prev, start, false)) return TP_ENOMEM;
  if (seg_push(c->s, start, end, true)) return TP_ENOMEM;
  c->prev = end;
  return 0;
}

/* Segments of s[0..n) for a character class or a single character (Rust's
 * find_matches for a char predicate: each matching character is its own
 * match). */
static int char_segs(tp__hf_tls *s, const char *t, size_t n, tp__char_class cls, const char *ch,
                     size_t ch_len) {
  size_t last = 0;
  for (size_t i = 0; i < n;) {
    size_t l;
    uint32_t c = tp__cp_at(t + i, &l);
    bool m = cls == TP_CHARS_NUMERIC      ? is_numeric(c)
             : cls == TP_CHARS_WHITESPACE ? is_ws(c)
                                          : (l == ch_len && memcmp(t + i, ch, l) == 0);
    if (m) {
      if (last < i && seg_push(s, last, i, false)) return TP_ENOMEM;
      if (seg_push(s, i, i + l, true)) return TP_ENOMEM;
      last = i + l;
    }
    i += l;
  }
  if (last < n && seg_push(s, last, n, false)) return TP_ENOMEM;
  return 0;
}

/* Splits every piece of in into out (same base) by the segments the
 * pattern gives, applying invert and the behaviour as
 * NormalizedString::split does; empty results are dropped. */
static int split_list(enc *e, const tp__re *re, tp__char_class cls, const char *ch, size_t ch_len,
                      tp__split_behavior behavior, bool invert, const tp__plist *in, tp__plist *out) {
  tp__hf_tls *s = e->s;
  out->n = 0;
  out->base = in->base;
  for (size_t p = 0; p < in->n; p++) {
    const tp__piece pc = in->v[p];
    const char *t = in->base + pc.off;
    s->n_segs = 0;
    int rv;
    if (re != NULL) {
      seg_ctx c = {.s = s, .prev = 0};
      rv = tp__re_find_all(re, s->re, t, pc.len, seg_cb, &c);
      if (rv == 0 && c.prev != pc.len) rv = seg_push(s, c.prev, pc.len, false);
    } else {
      rv = char_segs(s, t, pc.len, cls, ch, ch_len);
    }
    if (rv) return rv;
    size_t n = s->n_segs;
    tp__seg *g = s->segs;
    if (invert)
      for (size_t i = 0; i < n; i++) g[i].match = !g[i].match;
    /* Fold in place: k is the number of kept ranges; a kept range's match
     * flag says "remove" for TP_SPLIT_REMOVED only. */
    size_t k = 0;
    bool prev = false;
    switch (behavior) {
      case TP_SPLIT_ISOLATED:
        for (size_t i = 0; i < n; i++) g[i].match = false;
        k = n;
        break;
      case TP_SPLIT_REMOVED: k = n; break;
      case TP_SPLIT_CONTIGUOUS:
        for (size_t i = 0; i < n; i++) {
          bool m = g[i].match;
          if (m == prev && k > 0)
            g[k - 1].end = g[i].end;
          else
            g[k++] = (tp__seg){g[i].start, g[i].end, false};
          prev = m;
        }
        break;
      case TP_SPLIT_MERGED_WITH_PREVIOUS:
        for (size_t i = 0; i < n; i++) {
          bool m = g[i].match;
          if (m && !prev && k > 0)
            g[k - 1].end = g[i].end;
          else
            g[k++] = (tp__seg){g[i].start, g[i].end, false};
          prev = m;
        }
        break;
      case TP_SPLIT_MERGED_WITH_NEXT: {
        /* Rust folds from the end; do the same, filling from the back. */
        size_t w = n;
        for (size_t i = n; i-- > 0;) {
          bool m = g[i].match;
          if (m && !prev && w < n)
            g[w].start = g[i].start;
          else
            g[--w] = (tp__seg){g[i].start, g[i].end, false};
          prev = m;
        }
        memmove(g, g + w, (n - w) * sizeof(*g));
        k = n - w;
        break;
      }
    }
    for (size_t i = 0; i < k; i++) {
      if (g[i].match || g[i].start == g[i].end) continue;
      if (tp__hf_plist_push(out, pc.off + g[i].start, g[i].end - g[i].start, pc.origin && g[i].start == 0))
        return TP_ENOMEM;
    }
  }
  return 0;
}

enum { XF_PREFIX_SPACE, XF_BYTELEVEL, XF_METASPACE };

/* Rewrites every piece of in into buf, listing the results in out. */
static int transform_list(const tp__pre *p, int kind, const tp__plist *in, tp__plist *out, tp_buf *buf) {
  tp_buf_reset(buf);
  out->n = 0;
  for (size_t i = 0; i < in->n; i++) {
    const tp__piece pc = in->v[i];
    const char *t = in->base + pc.off;
    size_t start = buf->len;
    int rv = 0;
    switch (kind) {
      case XF_PREFIX_SPACE:
        if (pc.len == 0 || t[0] != ' ') rv = tp_buf_append(buf, " ", 1);
        if (rv == 0) rv = tp_buf_append(buf, t, pc.len);
        break;
      case XF_BYTELEVEL:
        if ((rv = tp_buf_reserve(buf, 2 * (size_t)pc.len)) != 0) break;
        for (size_t b = 0; b < pc.len; b++)
          buf->len += tp_utf8_put((char *)buf->data + buf->len, tp__bytelevel_cp((uint8_t)t[b]));
        buf->data[buf->len] = 0;
        break;
      case XF_METASPACE: {
        /* Whether the piece starts with the replacement once its spaces
         * are replaced. */
        bool starts =
            (pc.len && t[0] == ' ') || (pc.len >= p->repl_len && memcmp(t, p->repl, p->repl_len) == 0);
        if (!starts && (p->prepend == TP_PREPEND_ALWAYS || (p->prepend == TP_PREPEND_FIRST && pc.origin)))
          rv = tp_buf_append(buf, p->repl, p->repl_len);
        for (size_t b = 0; b < pc.len && rv == 0;) {
          size_t run = b;
          while (run < pc.len && t[run] != ' ') run++;
          rv = tp_buf_append(buf, t + b, run - b);
          if (rv == 0 && run < pc.len) rv = tp_buf_append(buf, p->repl, p->repl_len);
          b = run + 1;
        }
        break;
      }
    }
    if (rv) return TP_ENOMEM;
    if (tp__hf_plist_push(out, start, buf->len - start, pc.origin)) return TP_ENOMEM;
  }
  out->base = buf->data ? (char *)buf->data : "";
  return 0;
}

static int pretokenize_and_model(enc *e, const char *text, size_t len, bool origin) {
  const tp__hf *h = e->h;
  tp__hf_tls *s = e->s;
  if (len == 0) return 0;
  if (h->n_pres == 0) return tp__bpe_word(&h->bpe, s->bpe, text, len, e->out);
  tp__plist *cur = &s->plist[0], *nxt = &s->plist[1];
  int wb = 0, rv = 0;
  cur->n = 0;
  cur->base = text;
  if (tp__hf_plist_push(cur, 0, len, origin)) return TP_ENOMEM;
#define SWAP()           \
  do {                   \
    tp__plist *x_ = cur; \
    cur = nxt;           \
    nxt = x_;            \
  } while (0)
  for (size_t i = 0; i < h->n_pres && rv == 0; i++) {
    const tp__pre *p = &h->pres[i];
    switch (p->kind) {
      case TP_PRE_SPLIT:
        if ((rv = split_list(e, p->re, p->chars, NULL, 0, p->behavior, p->invert, cur, nxt)) == 0) SWAP();
        break;
      case TP_PRE_BYTELEVEL:
        if (p->add_prefix_space) {
          if ((rv = transform_list(p, XF_PREFIX_SPACE, cur, nxt, &s->pbuf[wb])) != 0) break;
          wb ^= 1;
          SWAP();
        }
        if (p->use_regex) {
          if ((rv = split_list(e, h->gpt2, TP_CHARS_NONE, NULL, 0, TP_SPLIT_ISOLATED, false, cur, nxt)) != 0)
            break;
          SWAP();
        }
        if (!p->deferred) {
          if ((rv = transform_list(p, XF_BYTELEVEL, cur, nxt, &s->pbuf[wb])) != 0) break;
          wb ^= 1;
          SWAP();
        }
        break;
      case TP_PRE_METASPACE:
        if ((rv = transform_list(p, XF_METASPACE, cur, nxt, &s->pbuf[wb])) != 0) break;
        wb ^= 1;
        SWAP();
        if (p->split) {
          if ((rv = split_list(e, NULL, TP_CHARS_NONE, p->repl, p->repl_len, TP_SPLIT_MERGED_WITH_NEXT, false,
                               cur, nxt)) != 0)
            break;
          SWAP();
        }
        break;
    }
  }
#undef SWAP
  for (size_t i = 0; i < cur->n && rv == 0; i++)
    rv = tp__bpe_word(&h->bpe, s->bpe, cur->base + cur->v[i].off, cur->v[i].len, e->out);
  return rv;
}

/* ------------------------------------------------------------------------ */
/* Added tokens                                                             */

typedef int (*gap_fn)(enc *e, const char *s, size_t n, bool origin);

/* Rust's `c.is_alphanumeric() || c == '_'` for the character before or
 * at a position (h->word_char matches one such character). */
static int stop_at_first(void *user_data, size_t start, size_t end) {
  (void)user_data;
  (void)start;
  (void)end;
  return 1;
}

static bool is_word_before(const enc *e, const char *s, size_t at) {
  size_t k = at - 1;
  while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80) k--;
  size_t l;
  (void)tp__cp_at(s + k, &l);
  return tp__re_find_all(e->h->word_char, e->s->re, s + k, l, stop_at_first, NULL) == 1;
}

static bool is_word_at(const enc *e, const char *s) {
  size_t l;
  (void)tp__cp_at(s, &l);
  return tp__re_find_all(e->h->word_char, e->s->re, s, l, stop_at_first, NULL) == 1;
}

/* Cuts the added tokens of trie out of s[0..n): ids for tokens, gap() for
 * the text between them.  Matching is leftmost-longest and resumes after
 * each match, whether it is kept or not, as the Aho-Corasick iterator of
 * AddedVocabulary::find_matches does; then single_word, lstrip and rstrip
 * apply as there. */
static int split_added(enc *e, const tp__trie *trie, const char *s, size_t n, bool origin, gap_fn gap) {
  const tp__hf *h = e->h;
  if (trie->n == 0) return gap(e, s, n, origin);
  size_t done = 0, i = 0;
  int rv;
  while (i < n) {
    if (!trie->first[(unsigned char)s[i]]) {
      i++;
      continue;
    }
    int32_t node = 0, best = -1;
    size_t best_end = 0;
    for (size_t j = i; j < n; j++) {
      int32_t c = trie->nodes[node].child;
      while (c >= 0 && trie->nodes[c].byte != (unsigned char)s[j]) c = trie->nodes[c].sibling;
      if (c < 0) break;
      node = c;
      if (trie->nodes[c].tok >= 0) best = trie->nodes[c].tok, best_end = j + 1;
    }
    if (best < 0) {
      i++;
      continue;
    }
    const tp__added *a = &h->added[best];
    size_t start = i, stop = best_end, l;
    i = best_end;
    if (a->single_word) {
      bool start_space = start == 0 || !is_word_before(e, s, start);
      bool stop_space = stop == n || !is_word_at(e, s + stop);
      if (!start_space || !stop_space) continue;
    }
    if (a->lstrip) {
      size_t k = start;
      while (k > 0) {
        size_t c = k - 1;
        while (c > 0 && ((unsigned char)s[c] & 0xC0) == 0x80) c--;
        if (!is_ws(tp__cp_at(s + c, &l))) break;
        k = c;
      }
      start = k > done ? k : done;
    }
    if (a->rstrip)
      while (stop < n && is_ws(tp__cp_at(s + stop, &l))) stop += l;
    if (start < done) start = done; /* an overlap only hand-made files can cause */
    if (done < start && (rv = gap(e, s + done, start - done, origin && done == 0)) != 0) return rv;
    if (tp__ids_push(e->out, a->id)) return TP_ENOMEM;
    done = stop;
  }
  if (done < n) return gap(e, s + done, n - done, origin && done == 0);
  return 0;
}

static int gap_normalized(enc *e, const char *s, size_t n, bool origin) {
  return pretokenize_and_model(e, s, n, origin);
}

static int gap_raw(enc *e, const char *s, size_t n, bool origin) {
  const tp__hf *h = e->h;
  if (h->n_norms == 0) return split_added(e, &h->normalized, s, n, origin, gap_normalized);
  tp_buf *nb = &e->s->norm[0];
  int rv = tp__hf_normalize(h, e->s, s, n, nb);
  if (rv) return rv;
  return split_added(e, &h->normalized, nb->data ? (char *)nb->data : "", nb->len, origin, gap_normalized);
}

int tp__hf_encode(const tp_tok *t, const char *text, size_t len, int32_t **ids, size_t *n) {
  tp__hf *h = t->impl;
  *ids = NULL;
  *n = 0;
  tp__hf_tls *s = tp__hf_tls_get(h);
  if (s == NULL) return TP_ENOMEM;
  if (text == NULL) text = "";
  /* Pieces keep 32-bit offsets; a 1 GiB text is far past any prompt. */
  if (len > MAX_TEXT_BYTES) return TP_ETOOBIG;
  if (tp__utf8_valid(text, len) != len) {
    tp_buf_reset(&s->clean);
    if (tp__utf8_lossy(&s->clean, text, len)) return TP_ENOMEM;
    text = (char *)s->clean.data;
    len = s->clean.len;
  }
  tp__ids out = {0};
  /* Roughly one token per 4 bytes of text. */
  if (tp__ids_reserve(&out, len / 3 + 8)) return TP_ENOMEM;
  enc e = {.h = h, .s = s, .out = &out};
  int rv = split_added(&e, &h->raw, text, len, true, gap_raw);
  if (rv) {
    free(out.v);
    return rv < 0 ? rv : TP_EINVAL;
  }
  *ids = out.v;
  *n = out.n;
  return 0;
}
