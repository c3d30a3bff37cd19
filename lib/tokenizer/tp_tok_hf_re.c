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

static size_t utf8_len(unsigned char c) {
  return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
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

/* Rewrites the Oniguruma (Ruby syntax) pattern p[0..n) for PCRE2. */
static int translate(tp_buf *o, const char *p, size_t n, char *why, size_t whylen) {
  bool in_class = false;
  size_t class_start = 0;
  int rv = 0;
  for (size_t i = 0; i < n && rv == 0;) {
    char c = p[i];
    if (c == '\\') {
      if (i + 1 >= n) {
        rv = tp_buf_append(o, p + i, 1); /* PCRE2 reports the dangling escape */
        i++;
        continue;
      }
      char e = p[i + 1];
      switch (e) {
        case 's':
          rv = tp_buf_append_str(o, "\\p{White_Space}");
          i += 2;
          continue;
        case 'S':
          rv = tp_buf_append_str(o, "\\P{White_Space}");
          i += 2;
          continue;
        case 'w':
          rv = tp_buf_append_str(o, in_class ? ONIG_WORD : "[" ONIG_WORD "]");
          i += 2;
          continue;
        case 'W':
          if (in_class) return unsupported(why, whylen, i, "\\W inside a character class");
          rv = tp_buf_append_str(o, "[^" ONIG_WORD "]");
          i += 2;
          continue;
        case 'h':
          rv = tp_buf_append_str(o, in_class ? "0-9a-fA-F" : "[0-9a-fA-F]");
          i += 2;
          continue;
        case 'H':
          if (in_class) return unsupported(why, whylen, i, "\\H inside a character class");
          rv = tp_buf_append_str(o, "[^0-9a-fA-F]");
          i += 2;
          continue;
        case 'u':
          if (i + 6 <= n && is_hex(p[i + 2]) && is_hex(p[i + 3]) && is_hex(p[i + 4]) && is_hex(p[i + 5])) {
            rv = tp_buf_printf(o, "\\x{%.4s}", p + i + 2);
            i += 6;
            continue;
          }
          break;
        case 'p':
        case 'P': {
          /* \p{Name}: a script name is pinned to the Script property. */
          if (i + 2 < n && p[i + 2] == '{') {
            const char *close = memchr(p + i + 3, '}', n - i - 3);
            size_t nl = close ? (size_t)(close - (p + i + 3)) : 0;
            const char *name = p + i + 3;
            bool neg = nl && name[0] == '^';
            if (neg) name++, nl--;
            if (close && nl > 0 && nl < 64 && is_script(name, nl)) {
              rv = tp_buf_printf(o, "\\%c{%ssc:%.*s}", e, neg ? "^" : "", (int)nl, name);
              i = (size_t)(close - p) + 1;
              continue;
            }
          }
          break;
        }
        case 'Q': {
          /* Quoted text is copied as it is, up to \E. */
          const char *q = NULL;
          for (size_t k = i + 2; k + 1 < n; k++)
            if (p[k] == '\\' && p[k + 1] == 'E') {
              q = p + k + 2;
              break;
            }
          size_t end = q ? (size_t)(q - p) : n;
          rv = tp_buf_append(o, p + i, end - i);
          i = end;
          continue;
        }
        default: break;
      }
      /* Any other escape: the backslash and the whole next character. */
      size_t cl = utf8_len((unsigned char)e);
      if (i + 1 + cl > n) cl = n - i - 1;
      rv = tp_buf_append(o, p + i, 1 + cl);
      i += 1 + cl;
      continue;
    }
    if (in_class) {
      if (c == '[') {
        if (i + 1 < n && p[i + 1] == ':') {
          /* A POSIX bracket [:alpha:]: copied through its ":]". */
          size_t k = i + 2;
          while (k + 1 < n && !(p[k] == ':' && p[k + 1] == ']')) k++;
          size_t end = k + 1 < n ? k + 2 : n;
          rv = tp_buf_append(o, p + i, end - i);
          i = end;
          continue;
        }
        return unsupported(why, whylen, i, "a character class nested in a class");
      }
      if (c == '&' && i + 1 < n && p[i + 1] == '&')
        return unsupported(why, whylen, i, "class intersection (&&)");
      /* ']' right after '[' or '[^' is a literal in both dialects. */
      if (c == ']' && i > class_start) in_class = false;
      rv = tp_buf_append(o, p + i, 1);
      i++;
      continue;
    }
    if (c == '[') {
      in_class = true;
      size_t k = i + 1;
      if (k < n && p[k] == '^') k++;
      class_start = k; /* a ']' here is a literal */
      rv = tp_buf_append(o, p + i, k - i);
      i = k;
      continue;
    }
    if (c == '(' && i + 2 < n && p[i + 1] == '?') {
      /* Option groups (?imx-imx) and (?imx-imx:...): Ruby's m is PCRE2's s. */
      size_t k = i + 2;
      while (k < n && (p[k] == 'i' || p[k] == 'm' || p[k] == 'x' || p[k] == '-')) k++;
      if (k > i + 2 && k < n && (p[k] == ':' || p[k] == ')')) {
        rv = tp_buf_append_str(o, "(?");
        for (size_t j = i + 2; j < k && rv == 0; j++) rv = tp_buf_append(o, p[j] == 'm' ? "s" : p + j, 1);
        i = k;
        continue;
      }
    }
    size_t cl = utf8_len((unsigned char)c);
    if (i + cl > n) cl = n - i;
    rv = tp_buf_append(o, p + i, cl);
    i += cl;
  }
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
      last_end += last_end < len ? utf8_len((unsigned char)s[last_end]) : 1;
      continue;
    }
    last_end = me;
    last_match_end = me;
    have_last = true;
    if ((rc = cb(user_data, ms, me)) != 0) return rc;
  }
  return 0;
}
