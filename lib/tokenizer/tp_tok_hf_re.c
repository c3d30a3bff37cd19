/* PCRE2 behind the patterns of tokenizer.json files; see tp_tok_hf_re.h
 * for the Oniguruma escapes that are rewritten and why. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/tp_tok_hf_re.h"

#include <pcre2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/tp_common.h"
#include "util/tp_utf8.h"

struct tp__re {
  pcre2_code *code;
  bool jit; /* JIT compiled: match with pcre2_jit_match */
  /* A non-empty {"String": ...} pattern is searched with memmem: the same
   * matches (UTF-8 cannot match inside a character), without PCRE2's cost
   * per call, which Replace(" ", "\u2581") pays once per space. */
  char *lit;
  size_t lit_len;
};

struct tp__re_state {
  pcre2_match_data *md;
  pcre2_match_context *mctx;
  pcre2_jit_stack *jit_stack;
};

/* Oniguruma's \w in Unicode mode (its documentation: Letter, Mark, Number,
 * Connector_Punctuation), written as the inside of a PCRE2 class. */
#define ONIG_WORD "\\p{L}\\p{M}\\p{N}\\p{Pc}"

static int unsupported(char *why, size_t whylen, size_t at, const char *what) {
  tp_seterr(why, whylen, "at pattern offset %zu: %s (Oniguruma syntax that PCRE2 cannot express)", at, what);
  return TP_EUNSUPPORTED;
}

static bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Whether PCRE2 knows name as a script: then \p{name} is a script test
 * (not a general category or binary property), which Oniguruma makes on
 * the Script property and PCRE2 on Script_Extensions unless told sc:. */
static bool is_script(const char *name, size_t n) {
  char pat[96];
  int ec;
  PCRE2_SIZE eo;
  snprintf(pat, sizeof(pat), "\\p{sc:%.*s}", (int)n, name);
  pcre2_code *c =
      pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &ec, &eo, NULL);
  pcre2_code_free(c);
  return c != NULL;
}

/* The rewriting of one pattern: the text, where it stands, and the
 * refusal (TP_EUNSUPPORTED with why set) that stops it. */
typedef struct tr {
  tp_buf *o;
  const char *p;
  size_t n, i;
  bool in_class;
  size_t class_start; /* a ']' here is a literal */
  char *why;
  size_t whylen;
  int fail;
} tr;

static int tr_refuse(tr *x, const char *what) {
  x->fail = unsupported(x->why, x->whylen, x->i, what);
  return x->fail;
}

static int tr_put(tr *x, const char *s, size_t skip) {
  x->i += skip;
  return tp_buf_append_str(x->o, s);
}

/* \s \S \w \W \h \H, which the dialects read differently; *done when e is
 * one of them. */
static int tr_class_escape(tr *x, char e, bool *done) {
  *done = true;
  switch (e) {
    case 's': return tr_put(x, "\\p{White_Space}", 2);
    case 'S': return tr_put(x, "\\P{White_Space}", 2);
    case 'w': return tr_put(x, x->in_class ? ONIG_WORD : "[" ONIG_WORD "]", 2);
    case 'W':
      if (x->in_class) return tr_refuse(x, "\\W inside a character class");
      return tr_put(x, "[^" ONIG_WORD "]", 2);
    case 'h': return tr_put(x, x->in_class ? "0-9a-fA-F" : "[0-9a-fA-F]", 2);
    case 'H':
      if (x->in_class) return tr_refuse(x, "\\H inside a character class");
      return tr_put(x, "[^0-9a-fA-F]", 2);
    default: *done = false; return 0;
  }
}

/* \uXXXX, \p{Script} and \Q...\E; *done when rewritten. */
static int tr_long_escape(tr *x, char e, bool *done) {
  const char *p = x->p;
  size_t i = x->i, n = x->n;
  *done = true;
  if (e == 'u' && i + 6 <= n && is_hex(p[i + 2]) && is_hex(p[i + 3]) && is_hex(p[i + 4]) &&
      is_hex(p[i + 5])) {
    x->i += 6;
    return tp_buf_printf(x->o, "\\x{%.4s}", p + i + 2);
  }
  if ((e == 'p' || e == 'P') && i + 2 < n && p[i + 2] == '{') {
    /* \p{Name}: a script name is pinned to the Script property. */
    const char *close = memchr(p + i + 3, '}', n - i - 3);
    size_t nl = close ? (size_t)(close - (p + i + 3)) : 0;
    const char *name = p + i + 3;
    bool neg = nl && name[0] == '^';
    if (neg) name++, nl--;
    if (close && nl > 0 && nl < 64 && is_script(name, nl)) {
      x->i = (size_t)(close - p) + 1;
      return tp_buf_printf(x->o, "\\%c{%ssc:%.*s}", e, neg ? "^" : "", (int)nl, name);
    }
  }
  if (e == 'Q') {
    /* Quoted text is copied as it is, up to \E. */
    const char *q = NULL;
    for (size_t k = i + 2; k + 1 < n; k++)
      if (p[k] == '\\' && p[k + 1] == 'E') {
        q = p + k + 2;
        break;
      }
    size_t end = q ? (size_t)(q - p) : n;
    x->i = end;
    return tp_buf_append(x->o, p + i, end - i);
  }
  *done = false;
  return 0;
}

/* An escape at x->i. */
static int tr_escape(tr *x) {
  const char *p = x->p;
  size_t i = x->i, n = x->n;
  if (i + 1 >= n) {
    x->i++;
    return tp_buf_append(x->o, p + i, 1); /* PCRE2 reports the dangling escape */
  }
  char e = p[i + 1];
  bool done;
  int rv = tr_class_escape(x, e, &done);
  if (done) return rv;
  rv = tr_long_escape(x, e, &done);
  if (done) return rv;
  /* Any other escape: the backslash and the whole next character. */
  size_t cl = tp_utf8_lead_len((unsigned char)e);
  if (i + 1 + cl > n) cl = n - i - 1;
  x->i += 1 + cl;
  return tp_buf_append(x->o, p + i, 1 + cl);
}

/* A character other than an escape inside a class. */
static int tr_in_class(tr *x) {
  const char *p = x->p;
  size_t i = x->i, n = x->n;
  char c = p[i];
  if (c == '[') {
    if (i + 1 < n && p[i + 1] == ':') {
      /* A POSIX bracket [:alpha:]: copied through its ":]". */
      size_t k = i + 2;
      while (k + 1 < n && !(p[k] == ':' && p[k + 1] == ']')) k++;
      size_t end = k + 1 < n ? k + 2 : n;
      x->i = end;
      return tp_buf_append(x->o, p + i, end - i);
    }
    return tr_refuse(x, "a character class nested in a class");
  }
  if (c == '&' && i + 1 < n && p[i + 1] == '&') return tr_refuse(x, "class intersection (&&)");
  /* ']' right after '[' or '[^' is a literal in both dialects. */
  if (c == ']' && i > x->class_start) x->in_class = false;
  x->i++;
  return tp_buf_append(x->o, p + i, 1);
}

/* A character other than an escape outside a class. */
static int tr_outside(tr *x) {
  const char *p = x->p;
  size_t i = x->i, n = x->n;
  char c = p[i];
  if (c == '[') {
    x->in_class = true;
    size_t k = i + 1;
    if (k < n && p[k] == '^') k++;
    x->class_start = k;
    x->i = k;
    return tp_buf_append(x->o, p + i, k - i);
  }
  if (c == '(' && i + 2 < n && p[i + 1] == '?') {
    /* Option groups (?imx-imx) and (?imx-imx:...): Ruby's m is PCRE2's s. */
    size_t k = i + 2;
    while (k < n && (p[k] == 'i' || p[k] == 'm' || p[k] == 'x' || p[k] == '-')) k++;
    if (k > i + 2 && k < n && (p[k] == ':' || p[k] == ')')) {
      int rv = tp_buf_append_str(x->o, "(?");
      for (size_t j = i + 2; j < k && rv == 0; j++) rv = tp_buf_append(x->o, p[j] == 'm' ? "s" : p + j, 1);
      x->i = k;
      return rv;
    }
  }
  size_t cl = tp_utf8_lead_len((unsigned char)c);
  if (i + cl > n) cl = n - i;
  x->i += cl;
  return tp_buf_append(x->o, p + i, cl);
}

/* Rewrites the Oniguruma (Ruby syntax) pattern p[0..n) for PCRE2. */
static int translate(tp_buf *o, const char *p, size_t n, char *why, size_t whylen) {
  tr x = {.o = o, .p = p, .n = n, .why = why, .whylen = whylen};
  int rv = 0;
  while (x.i < n && rv == 0) {
    if (p[x.i] == '\\')
      rv = tr_escape(&x);
    else
      rv = x.in_class ? tr_in_class(&x) : tr_outside(&x);
  }
  if (x.fail) return x.fail;
  if (rv) {
    tp_seterr(why, whylen, "out of memory");
    return TP_ENOMEM;
  }
  return 0;
}

int tp__re_compile(tp__re **out, const char *pattern, size_t len, bool literal, char *why, size_t whylen) {
  *out = NULL;
  tp_buf t;
  tp_buf_init(&t);
  int rv;
  if (literal) {
    rv = tp_buf_append(&t, pattern, len) ? TP_ENOMEM : 0;
  } else {
    rv = translate(&t, pattern, len, why, whylen);
  }
  if (rv) {
    tp_buf_fini(&t);
    return rv;
  }
  int ec;
  PCRE2_SIZE eoff;
  /* PCRE2_LITERAL refuses UCP and MULTILINE, which mean nothing to it. */
  uint32_t opts = PCRE2_UTF | PCRE2_NO_UTF_CHECK | (literal ? PCRE2_LITERAL : PCRE2_UCP | PCRE2_MULTILINE);
  pcre2_code *code = pcre2_compile((PCRE2_SPTR)(t.data ? (char *)t.data : ""), t.len, opts, &ec, &eoff, NULL);
  tp_buf_fini(&t);
  if (code == NULL) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(ec, msg, sizeof(msg));
    if (ec == PCRE2_ERROR_NOMEMORY) {
      tp_seterr(why, whylen, "out of memory");
      return TP_ENOMEM;
    }
    tp_seterr(why, whylen, "PCRE2 cannot compile it: %s", (char *)msg);
    return TP_EINVAL;
  }
  tp__re *re = calloc(1, sizeof(*re));
  if (re == NULL) {
    pcre2_code_free(code);
    tp_seterr(why, whylen, "out of memory");
    return TP_ENOMEM;
  }
  re->code = code;
  if (literal && len > 0) {
    if ((re->lit = tp_strndup(pattern, len)) == NULL) {
      tp__re_free(re);
      tp_seterr(why, whylen, "out of memory");
      return TP_ENOMEM;
    }
    re->lit_len = len;
  }
  /* Without JIT (an architecture PCRE2 has no JIT for) the interpreter
   * gives the same matches, only slower. */
  re->jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  *out = re;
  return 0;
}

void tp__re_free(tp__re *re) {
  if (re == NULL) return;
  pcre2_code_free(re->code);
  free(re->lit);
  free(re);
}

tp__re_state *tp__re_state_new(void) {
  tp__re_state *st = calloc(1, sizeof(*st));
  if (st == NULL) return NULL;
  st->md = pcre2_match_data_create(1, NULL);
  st->mctx = pcre2_match_context_create(NULL);
  /* PCRE2's default JIT stack is 32 KiB on the machine stack; a private
   * one that may grow to 1 MiB keeps long inputs off libuv's small thread
   * stacks. */
  st->jit_stack = pcre2_jit_stack_create(32 * 1024, 1024 * 1024, NULL);
  if (st->md == NULL || st->mctx == NULL || st->jit_stack == NULL) {
    tp__re_state_free(st);
    return NULL;
  }
  pcre2_jit_stack_assign(st->mctx, NULL, st->jit_stack);
  return st;
}

void tp__re_state_free(tp__re_state *st) {
  if (st == NULL) return;
  pcre2_match_data_free(st->md);
  pcre2_match_context_free(st->mctx);
  pcre2_jit_stack_free(st->jit_stack);
  free(st);
}

static int search(const tp__re *re, tp__re_state *st, const char *s, size_t len, size_t start, size_t *ms,
                  size_t *me) {
  int rc;
  if (re->jit) {
    rc = pcre2_jit_match(re->code, (PCRE2_SPTR)s, len, start, 0, st->md, st->mctx);
    /* Out of JIT stack: the interpreter keeps its backtracking on the
     * heap and can finish the same search. */
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
      rc = pcre2_match(re->code, (PCRE2_SPTR)s, len, start, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, st->md,
                       st->mctx);
  } else {
    rc = pcre2_match(re->code, (PCRE2_SPTR)s, len, start, PCRE2_NO_UTF_CHECK, st->md, st->mctx);
  }
  if (rc == PCRE2_ERROR_NOMATCH) return 0;
  if (rc < 0) return TP_EINVAL;
  PCRE2_SIZE *ov = pcre2_get_ovector_pointer(st->md);
  *ms = ov[0];
  *me = ov[1];
  return 1;
}

int tp__re_find_all(const tp__re *re, tp__re_state *st, const char *s, size_t len, tp__re_match_cb cb,
                    void *user_data) {
  size_t last_end = 0;
  bool have_last = false;
  size_t last_match_end = 0;
  if (s == NULL) s = "";
  if (re->lit != NULL) {
    for (size_t pos = 0; pos + re->lit_len <= len;) {
      const char *m = memmem(s + pos, len - pos, re->lit, re->lit_len);
      if (m == NULL) break;
      size_t at = (size_t)(m - s);
      int rc = cb(user_data, at, at + re->lit_len);
      if (rc != 0) return rc;
      pos = at + re->lit_len;
    }
    return 0;
  }
  while (last_end <= len) {
    size_t ms, me;
    int rc = search(re, st, s, len, last_end, &ms, &me);
    if (rc <= 0) return rc;
    if (ms == me && have_last && last_match_end == me) {
      last_end += last_end < len ? tp_utf8_lead_len((unsigned char)s[last_end]) : 1;
      continue;
    }
    last_end = me;
    last_match_end = me;
    have_last = true;
    if ((rc = cb(user_data, ms, me)) != 0) return rc;
  }
  return 0;
}
