/* Settings on the command line: flags and their spellings, parsing argv,
 * and naming settings by their flags in messages. */
#include "tp_settings_internal.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/tp_common.h"

/* ---- flags ----------------------------------------------------------------------- */

bool tp__settings_next_flag(flag_iter *it, char *out, size_t outlen) {
  while (it->p && *it->p) {
    const char *bar = strchr(it->p, '|');
    size_t l = bar ? (size_t)(bar - it->p) : strlen(it->p);
    const char *f = it->p;
    it->p = bar ? bar + 1 : it->p + l;
    bool lng = l > 2 && f[0] == '-' && f[1] == '-';
    if (it->prefix && *it->prefix) {
      if (!lng) continue;
      snprintf(out, outlen, "%s%.*s", it->prefix, (int)(l - 2), f + 2);
    } else {
      snprintf(out, outlen, "%.*s", (int)l, f);
    }
    return true;
  }
  return false;
}

/* The canonical flag: the first long spelling ("--url"), prefixed. */
bool tp__settings_canonical_flag(const tp_setting *s, const char *prefix, char *out, size_t outlen) {
  flag_iter it = {s->flags, prefix};
  char f[128];
  bool any = false;
  while (tp__settings_next_flag(&it, f, sizeof(f))) {
    if (!any) snprintf(out, outlen, "%s", f);
    any = true;
    if (f[1] == '-') {
      snprintf(out, outlen, "%s", f);
      return true;
    }
  }
  return any;
}

static const tp_setting *find_flag(const tp_settings_part *parts, size_t n_parts, const char *name, size_t len,
                                   size_t *part) {
  for (size_t k = 0; k < n_parts; k++) {
    for (size_t i = 0; i < parts[k].n; i++) {
      flag_iter it = {parts[k].rows[i].flags, parts[k].prefix};
      char f[128];
      while (tp__settings_next_flag(&it, f, sizeof(f))) {
        if (strlen(f) == len && memcmp(f, name, len) == 0) {
          *part = k;
          return &parts[k].rows[i];
        }
      }
    }
  }
  return NULL;
}
/* Optimal string alignment distance (insertions, deletions, substitutions
 * and swaps of neighbours each cost 1), ASCII case folded, capped: the
 * caller only cares about small distances. */
static size_t edit_distance(const char *a, size_t la, const char *b, size_t lb) {
  enum { MAXL = 64 };
  if (la >= MAXL || lb >= MAXL) return SIZE_MAX;
  size_t d[MAXL][MAXL];
  for (size_t i = 0; i <= la; i++) d[i][0] = i;
  for (size_t j = 0; j <= lb; j++) d[0][j] = j;
  for (size_t i = 1; i <= la; i++) {
    for (size_t j = 1; j <= lb; j++) {
      char ca = (char)tolower((unsigned char)a[i - 1]), cb = (char)tolower((unsigned char)b[j - 1]);
      size_t best = d[i - 1][j - 1] + (ca != cb);
      if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
          tolower((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1;
      d[i][j] = best;
    }
  }
  return d[la][lb];
}

/* The one long flag of every part's spellings (aliases included) nearest
 * to an unknown one, when it is near enough to be a typo: one edit for a
 * name of up to four letters, two up to twelve, three beyond; a name
 * nearer to nothing gets no guess.  Ties go to the first in the tables. */
static bool nearest_flag(const tp_settings_part *parts, size_t n_parts, const char *name, size_t len,
                         char *out, size_t outlen) {
  if (len < 3 || name[0] != '-' || name[1] != '-') return false;
  size_t letters = len - 2, limit = letters <= 4 ? 1 : letters <= 12 ? 2 : 3, best = SIZE_MAX;
  for (size_t k = 0; k < n_parts; k++) {
    for (size_t i = 0; i < parts[k].n; i++) {
      flag_iter it = {parts[k].rows[i].flags, parts[k].prefix};
      char f[128];
      while (tp__settings_next_flag(&it, f, sizeof(f))) {
        if (f[0] != '-' || f[1] != '-') continue;
        size_t d = edit_distance(name + 2, letters, f + 2, strlen(f + 2));
        if (d <= limit && d < best) {
          best = d;
          snprintf(out, outlen, "%s", f);
        }
      }
    }
  }
  return best != SIZE_MAX;
}

int tp_settings_parse(const tp_settings_part *parts, size_t n_parts, int argc, char **argv,
                      int (*positional)(void *ud, const char *arg, char *err, size_t errlen), void *ud, bool *help,
                      char *err, size_t errlen) {
  if (help) *help = false;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] != '-' || a[1] == 0) {
      if (positional) {
        int rv = positional(ud, a, err, errlen);
        if (rv) return rv;
        continue;
      }
      tp_seterr(err, errlen, "unexpected argument '%s'", a);
      return TP_EINVAL;
    }
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      if (help) *help = true;
      continue;
    }
    const char *eq = a[1] == '-' ? strchr(a, '=') : NULL;
    size_t len = eq ? (size_t)(eq - a) : strlen(a);
    size_t k = 0;
    int flag_at = i; /* before a value moves i on */
    const tp_setting *s = find_flag(parts, n_parts, a, len, &k);
    if (!s) {
      char near[128];
      if (nearest_flag(parts, n_parts, a, len, near, sizeof(near)))
        tp_seterr(err, errlen, "unknown option '%.*s'; did you mean %s?", (int)len, a, near);
      else
        tp_seterr(err, errlen, "unknown option '%.*s'", (int)len, a);
      return TP_EINVAL;
    }
    if (s->flags_mask & TP_SETF_REFUSED) {
      /* Refused before its value is read: the message is the same whatever
       * follows, and nothing of the option is taken for another meaning. */
      tp_seterr(err, errlen, "%.*s is not supported: %s", (int)len, a, s->help ? s->help : "");
      return TP_EINVAL;
    }
    const char *v = NULL;
    char *joined = NULL; /* a value over several words (TP_SETF_NARGS) */
    if (takes_value(s)) {
      if (eq) {
        v = eq + 1;
      } else if (i + 1 < argc) {
        v = argv[++i];
        /* Other tools take such values as separate words (argparse's
         * nargs): the words up to the next option are one value. */
        int last = i;
        while ((s->flags_mask & TP_SETF_NARGS) && last + 1 < argc && argv[last + 1][0] != '-') last++;
        /* A list keeps pointers into argv: each word is appended as the
         * option repeated would append it. */
        for (; s->type == TP_SET_STR_LIST && i < last; i++) {
          char e[512];
          int rv = tp_setting_set(s, parts[k].base, argv[i], e, sizeof(e));
          if (rv) {
            tp_seterr(err, errlen, "%.*s '%s': %s", (int)len, a, argv[i], e);
            return rv;
          }
          v = argv[i + 1];
        }
        if (last > i) {
          size_t n = 0;
          for (int j = i; j <= last; j++) n += strlen(argv[j]) + 1;
          joined = malloc(n);
          if (!joined) {
            tp_seterr(err, errlen, "out of memory");
            return TP_ENOMEM;
          }
          size_t at = 0;
          for (int j = i; j <= last; j++) {
            size_t l = strlen(argv[j]);
            memcpy(joined + at, argv[j], l);
            at += l;
            joined[at++] = j < last ? ' ' : 0;
          }
          v = joined;
          i = last;
        }
      } else {
        tp_seterr(err, errlen, "%.*s needs a value (%s)", (int)len, a, s->arg ? s->arg : "VALUE");
        return TP_EINVAL;
      }
    } else if (eq) {
      tp_seterr(err, errlen, "%.*s takes no value", (int)len, a);
      return TP_EINVAL;
    }
    bool said = false;
    for (int j = 0; j < flag_at && (s->flags_mask & TP_SETF_NOOP); j++) {
      size_t k2 = 0;
      const char *b = argv[j];
      const char *beq = b[0] == '-' && b[1] == '-' ? strchr(b, '=') : NULL;
      if (b[0] == '-' && find_flag(parts, n_parts, b, beq ? (size_t)(beq - b) : strlen(b), &k2) == s) said = true;
    }
    if ((s->flags_mask & TP_SETF_NOOP) && !said) {
      /* Said once per setting, on stderr, where progress and warnings go. */
      fprintf(stderr, "tokperf: note: %.*s is accepted for compatibility and has no effect: %s\n", (int)len, a,
              s->help ? s->help : "");
    }
    if (parts[k].given) parts[k].given[s - parts[k].rows] = 1;
    char e[512];
    int rv = tp_setting_set(s, parts[k].base, v, e, sizeof(e));
    if (rv) {
      if (v)
        tp_seterr(err, errlen, "%.*s '%s': %s", (int)len, a, v, e);
      else
        tp_seterr(err, errlen, "%.*s: %s", (int)len, a, e);
    }
    free(joined);
    if (rv) return rv;
  }
  return 0;
}

void tp_settings_flagify(const tp_settings_part *parts, size_t n_parts, const char *msg, char *out,
                         size_t outlen) {
  size_t used = 0;
  out[0] = 0;
  const char *p = msg;
  while (*p && used + 1 < outlen) {
    /* The longest key that starts here, on a word boundary. */
    const tp_setting *best = NULL;
    const char *best_prefix = NULL;
    size_t best_len = 0;
    bool boundary = p == msg || !(p[-1] == '_' || p[-1] == '.' || (p[-1] >= 'a' && p[-1] <= 'z'));
    for (size_t k = 0; boundary && k < n_parts; k++) {
      for (size_t i = 0; i < parts[k].n; i++) {
        const tp_setting *s = &parts[k].rows[i];
        size_t kl = strlen(s->key);
        if (kl <= best_len || strncmp(p, s->key, kl) != 0 || !s->flags) continue;
        char c = p[kl];
        if (c == '_' || c == '.' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) continue;
        best = s;
        best_prefix = parts[k].prefix;
        best_len = kl;
      }
    }
    char f[128];
    if (best && tp__settings_canonical_flag(best, best_prefix, f, sizeof(f))) {
      tp__settings_app(out, outlen, &used, "%s", f);
      p += best_len;
    } else {
      out[used++] = *p++;
      out[used] = 0;
    }
  }
}
