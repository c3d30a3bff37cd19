/* Settings tables: the one walker behind defaults, validation, parsing,
 * help, the man page, completions and the JSON echo (tokperf/settings.h). */
#include "tokperf/settings.h"

#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <jansson.h>

#include "tokperf/parse.h"
#include "util/tp_common.h"

#define FIELD(base, s, T) ((T *)(void *)((char *)(base) + (s)->offset))
#define CFIELD(base, s, T) ((const T *)(const void *)((const char *)(base) + (s)->offset))

static bool has_range(const tp_setting *s) { return s->min <= s->max && !(s->min == 0 && s->max == 0); }

/* ---- choices ------------------------------------------------------------ */

/* Walks "a|b=0|c": each name with its index (its position among the
 * canonical names, or the number after '=' for an alias). */
typedef struct choice_iter {
  const char *p;
  int pos;
} choice_iter;

static bool next_choice(choice_iter *it, const char **name, size_t *len, int *index, bool *alias) {
  if (!it->p || !*it->p) return false;
  const char *bar = strchr(it->p, '|');
  size_t l = bar ? (size_t)(bar - it->p) : strlen(it->p);
  const char *eq = memchr(it->p, '=', l);
  *name = it->p;
  *alias = eq != NULL;
  if (eq) {
    *len = (size_t)(eq - it->p);
    *index = atoi(eq + 1);
  } else {
    *len = l;
    *index = it->pos++;
  }
  it->p = bar ? bar + 1 : it->p + l;
  return true;
}

/* "constant, poisson or gamma": the canonical names (aliases left out). */
static void choices_phrase(const tp_setting *s, char *out, size_t outlen) {
  choice_iter it = {s->choices, 0};
  const char *name;
  size_t len, n = 0, k = 0, used = 0;
  int idx;
  bool alias;
  while (next_choice(&it, &name, &len, &idx, &alias)) n += !alias;
  it = (choice_iter){s->choices, 0};
  out[0] = 0;
  while (next_choice(&it, &name, &len, &idx, &alias)) {
    if (alias) continue;
    k++;
    const char *sep = k == 1 ? "" : k == n ? " or " : ", ";
    int w = snprintf(out + used, outlen - used, "%s%.*s", sep, (int)len, name);
    if (w < 0 || (size_t)w >= outlen - used) break;
    used += (size_t)w;
  }
}

static int enum_lookup(const tp_setting *s, const char *v, int *out) {
  choice_iter it = {s->choices, 0};
  const char *name;
  size_t len;
  int idx;
  bool alias;
  while (next_choice(&it, &name, &len, &idx, &alias)) {
    if (strlen(v) == len && strncmp(v, name, len) == 0) {
      *out = idx;
      return 0;
    }
  }
  return TP_EINVAL;
}

static const char *enum_name(const tp_setting *s, int v, size_t *len) {
  choice_iter it = {s->choices, 0};
  const char *name;
  int idx;
  bool alias;
  while (next_choice(&it, &name, len, &idx, &alias))
    if (!alias && idx == v) return name;
  return NULL;
}

/* ---- values --------------------------------------------------------------- */

static int range_error(const tp_setting *s, char *err, size_t errlen) {
  if (s->max >= 1e300)
    tp_seterr(err, errlen, "must be at least %g", s->min);
  else
    tp_seterr(err, errlen, "expected %g to %g", s->min, s->max);
  return TP_EINVAL;
}

static int check_number(const tp_setting *s, double v, char *err, size_t errlen) {
  if ((s->flags_mask & TP_SETF_NONZERO) && v == 0) {
    tp_seterr(err, errlen, "must be above zero");
    return TP_EINVAL;
  }
  if (has_range(s) && (v < s->min || v > s->max)) return range_error(s, err, errlen);
  return 0;
}

static int parse_bool(const char *v, bool *out) {
  static const char *const yes[] = {"true", "on", "yes", "1"}, *const no[] = {"false", "off", "no", "0"};
  for (size_t i = 0; i < 4; i++) {
    if (strcasecmp(v, yes[i]) == 0) return *out = true, 0;
    if (strcasecmp(v, no[i]) == 0) return *out = false, 0;
  }
  return TP_EINVAL;
}

/* Decimals, or whole-number lists and ranges ("100:1000:100"). */
static int parse_f64_list(const char *v, tp_f64_list *l, char *err, size_t errlen) {
  uint32_t *ints = NULL;
  size_t ni = 0;
  char e[200];
  if (tp_parse_uint_list(v, &ints, &ni, TP_LIST_MAX, e, sizeof(e)) == 0) {
    for (size_t i = 0; i < ni; i++) l->v[i] = ints[i];
    l->n = ni;
    free(ints);
    return 0;
  }
  size_t n = 0;
  const char *p = v;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    char buf[64];
    if (len == 0 || len >= sizeof(buf) || n >= TP_LIST_MAX) goto bad;
    memcpy(buf, p, len);
    buf[len] = 0;
    if (tp_parse_double(buf, &l->v[n], NULL, 0)) goto bad;
    n++;
    if (!comma) break;
    p = comma + 1;
  }
  l->n = n;
  return 0;
bad:
  tp_seterr(err, errlen, "expected numbers: a list like 10,50,100 or 0.5,2.5, or a range like 100:1000:100 "
            "(at most %d values)", TP_LIST_MAX);
  return TP_EINVAL;
}

int tp_setting_set(const tp_setting *s, void *base, const char *v, char *err, size_t errlen) {
  char e[256];
  uint64_t u;
  double d;
  switch (s->type) {
    case TP_SET_FLAG:
    case TP_SET_BOOL: {
      bool b = !(s->flags_mask & TP_SETF_CLEAR);
      if (v && parse_bool(v, &b)) {
        tp_seterr(err, errlen, "expected true or false");
        return TP_EINVAL;
      }
      *FIELD(base, s, bool) = b;
      return 0;
    }
    case TP_SET_STR:
      *FIELD(base, s, const char *) = v;
      return 0;
    case TP_SET_U32:
    case TP_SET_U64:
      /* The value parsers write their own phrase into err. */
      if (tp_parse_count(v, &u, err, errlen)) return TP_EINVAL;
      if (s->type == TP_SET_U32 && u > UINT32_MAX) {
        tp_seterr(err, errlen, "must be at most %" PRIu32, UINT32_MAX);
        return TP_EINVAL;
      }
      if (check_number(s, (double)u, err, errlen)) return TP_EINVAL;
      if (s->type == TP_SET_U32)
        *FIELD(base, s, uint32_t) = (uint32_t)u;
      else
        *FIELD(base, s, uint64_t) = u;
      return 0;
    case TP_SET_INT:
    case TP_SET_I64: {
      char *end;
      long long x = strtoll(v, &end, 10);
      if (!*v || *end) {
        tp_seterr(err, errlen, "expected a whole number");
        return TP_EINVAL;
      }
      if (check_number(s, (double)x, err, errlen)) return TP_EINVAL;
      if (s->type == TP_SET_INT) {
        if (x < INT_MIN || x > INT_MAX) {
          tp_seterr(err, errlen, "expected a whole number from %d to %d", INT_MIN, INT_MAX);
          return TP_EINVAL;
        }
        *FIELD(base, s, int) = (int)x;
      } else {
        *FIELD(base, s, int64_t) = (int64_t)x;
      }
      return 0;
    }
    case TP_SET_MS:
      if (tp_parse_duration_ns(v, TP_NS_PER_MS, &u, err, errlen)) return TP_EINVAL;
      /* Rounded up: "1us" is not "no time at all". */
      u = u / TP_NS_PER_MS + (u % TP_NS_PER_MS != 0);
      if (check_number(s, (double)u, err, errlen)) return TP_EINVAL;
      *FIELD(base, s, uint64_t) = u;
      return 0;
    case TP_SET_SIZE:
      if (tp_parse_size(v, &u, err, errlen) || check_number(s, (double)u, err, errlen)) return TP_EINVAL;
      *FIELD(base, s, uint64_t) = u;
      return 0;
    case TP_SET_F64:
    case TP_SET_FRACTION:
      if (s->type == TP_SET_F64 ? tp_parse_double(v, &d, err, errlen) : tp_parse_fraction(v, &d, err, errlen))
        return TP_EINVAL;
      if (check_number(s, d, err, errlen)) return TP_EINVAL;
      *FIELD(base, s, double) = d;
      return 0;
    case TP_SET_ENUM: {
      int idx;
      if (enum_lookup(s, v, &idx)) {
        choices_phrase(s, e, sizeof(e));
        tp_seterr(err, errlen, "expected %s", e);
        return TP_EINVAL;
      }
      *FIELD(base, s, int) = idx;
      return 0;
    }
    case TP_SET_U32_LIST: {
      uint32_t *vals = NULL;
      size_t n = 0;
      if (tp_parse_uint_list(v, &vals, &n, TP_LIST_MAX, e, sizeof(e))) {
        tp_seterr(err, errlen, "%s", e);
        return TP_EINVAL;
      }
      for (size_t i = 0; i < n; i++) {
        if (check_number(s, vals[i], err, errlen)) {
          free(vals);
          return TP_EINVAL;
        }
      }
      tp_u32_list *l = FIELD(base, s, tp_u32_list);
      memcpy(l->v, vals, n * sizeof(*vals));
      l->n = n;
      free(vals);
      return 0;
    }
    case TP_SET_F64_LIST: {
      tp_f64_list tmp;
      if (parse_f64_list(v, &tmp, err, errlen)) return TP_EINVAL;
      for (size_t i = 0; i < tmp.n; i++)
        if (check_number(s, tmp.v[i], err, errlen)) return TP_EINVAL;
      tp_f64_list *l = FIELD(base, s, tp_f64_list);
      memcpy(l->v, tmp.v, tmp.n * sizeof(double));
      l->n = tmp.n;
      return 0;
    }
    case TP_SET_STR_LIST: {
      tp_str_list *l = FIELD(base, s, tp_str_list);
      if (l->n >= TP_STR_LIST_MAX) {
        tp_seterr(err, errlen, "given more than %d times", TP_STR_LIST_MAX);
        return TP_EINVAL;
      }
      l->v[l->n++] = v;
      return 0;
    }
    case TP_SET_CUSTOM:
      return s->parse ? s->parse(base, s, v, err, errlen) : TP_EINVAL;
  }
  return TP_EINVAL;
}

/* The size of a row's field, to zero it. */
static size_t field_size(const tp_setting *s) {
  switch (s->type) {
    case TP_SET_FLAG:
    case TP_SET_BOOL: return sizeof(bool);
    case TP_SET_STR: return sizeof(const char *);
    case TP_SET_U32: return sizeof(uint32_t);
    case TP_SET_U64:
    case TP_SET_MS:
    case TP_SET_SIZE: return sizeof(uint64_t);
    case TP_SET_I64: return sizeof(int64_t);
    case TP_SET_INT: return sizeof(int);
    case TP_SET_F64:
    case TP_SET_FRACTION: return sizeof(double);
    case TP_SET_ENUM: return sizeof(int);
    case TP_SET_U32_LIST: return sizeof(tp_u32_list);
    case TP_SET_F64_LIST: return sizeof(tp_f64_list);
    case TP_SET_STR_LIST: return sizeof(tp_str_list);
    case TP_SET_CUSTOM: return 0; /* its parser owns its fields */
  }
  return 0;
}

void tp_settings_defaults(const tp_setting *rows, size_t n, void *base) {
  for (size_t i = 0; i < n; i++) {
    const tp_setting *s = &rows[i];
    size_t sz = field_size(s);
    if (sz) memset((char *)base + s->offset, 0, sz);
    if (!s->dflt) continue;
    char e[256];
    /* A default that does not parse is a mistake in the table, caught by
     * the settings unit test, which checks every row of every table. */
    (void)tp_setting_set(s, base, s->dflt, e, sizeof(e));
  }
}

/* ---- formatting -------------------------------------------------------------- */

/* A duration in the largest unit that divides it: "10s", "500ms", "2m". */
static void fmt_ms(uint64_t ms, char *out, size_t outlen) {
  if (ms && ms % 3600000 == 0)
    snprintf(out, outlen, "%" PRIu64 "h", ms / 3600000);
  else if (ms && ms % 60000 == 0)
    snprintf(out, outlen, "%" PRIu64 "m", ms / 60000);
  else if (ms && ms % 1000 == 0)
    snprintf(out, outlen, "%" PRIu64 "s", ms / 1000);
  else
    snprintf(out, outlen, "%" PRIu64 "ms", ms);
}

static void fmt_size(uint64_t b, char *out, size_t outlen) {
  if (b && b % (1ULL << 30) == 0)
    snprintf(out, outlen, "%" PRIu64 "G", b >> 30);
  else if (b && b % (1ULL << 20) == 0)
    snprintf(out, outlen, "%" PRIu64 "M", b >> 20);
  else if (b && b % (1ULL << 10) == 0)
    snprintf(out, outlen, "%" PRIu64 "k", b >> 10);
  else
    snprintf(out, outlen, "%" PRIu64, b);
}

/* Appends to out at *used; stops quietly when full. */
static void app(char *out, size_t outlen, size_t *used, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void app(char *out, size_t outlen, size_t *used, const char *fmt, ...) {
  if (*used >= outlen) return;
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(out + *used, outlen - *used, fmt, ap);
  va_end(ap);
  if (w > 0) *used += (size_t)w < outlen - *used ? (size_t)w : outlen - *used - 1;
}

void tp_setting_format(const tp_setting *s, const void *base, char *out, size_t outlen) {
  size_t used = 0;
  out[0] = 0;
  switch (s->type) {
    case TP_SET_FLAG:
    case TP_SET_BOOL: app(out, outlen, &used, "%s", *CFIELD(base, s, bool) ? "true" : "false"); break;
    case TP_SET_STR: {
      const char *v = *CFIELD(base, s, const char *);
      if (s->flags_mask & TP_SETF_SECRET)
        app(out, outlen, &used, "%s", v && *v ? "(set)" : "");
      else if (v)
        app(out, outlen, &used, "%s", v);
      break;
    }
    case TP_SET_U32: app(out, outlen, &used, "%" PRIu32, *CFIELD(base, s, uint32_t)); break;
    case TP_SET_U64: app(out, outlen, &used, "%" PRIu64, *CFIELD(base, s, uint64_t)); break;
    case TP_SET_I64: app(out, outlen, &used, "%" PRId64, *CFIELD(base, s, int64_t)); break;
    case TP_SET_INT: app(out, outlen, &used, "%d", *CFIELD(base, s, int)); break;
    case TP_SET_F64: app(out, outlen, &used, "%g", *CFIELD(base, s, double)); break;
    case TP_SET_FRACTION: app(out, outlen, &used, "%g", *CFIELD(base, s, double)); break;
    case TP_SET_MS: fmt_ms(*CFIELD(base, s, uint64_t), out, outlen); break;
    case TP_SET_SIZE: fmt_size(*CFIELD(base, s, uint64_t), out, outlen); break;
    case TP_SET_ENUM: {
      size_t len;
      const char *name = enum_name(s, *CFIELD(base, s, int), &len);
      if (name) app(out, outlen, &used, "%.*s", (int)len, name);
      break;
    }
    case TP_SET_U32_LIST: {
      const tp_u32_list *l = CFIELD(base, s, tp_u32_list);
      for (size_t i = 0; i < l->n; i++) app(out, outlen, &used, "%s%" PRIu32, i ? "," : "", l->v[i]);
      break;
    }
    case TP_SET_F64_LIST: {
      const tp_f64_list *l = CFIELD(base, s, tp_f64_list);
      for (size_t i = 0; i < l->n; i++) app(out, outlen, &used, "%s%g", i ? "," : "", l->v[i]);
      break;
    }
    case TP_SET_STR_LIST: {
      const tp_str_list *l = CFIELD(base, s, tp_str_list);
      for (size_t i = 0; i < l->n; i++)
        app(out, outlen, &used, "%s%s", i ? " " : "", (s->flags_mask & TP_SETF_SECRET) ? "(set)" : l->v[i]);
      break;
    }
    case TP_SET_CUSTOM:
      if (s->format) s->format(base, s, out, outlen);
      break;
  }
}

/* ---- checks -------------------------------------------------------------------- */

int tp_setting_check(const tp_setting *s, const void *base, char *err, size_t errlen) {
  char e[200];
  double v;
  switch (s->type) {
    case TP_SET_U32: v = *CFIELD(base, s, uint32_t); break;
    case TP_SET_U64:
    case TP_SET_MS:
    case TP_SET_SIZE: v = (double)*CFIELD(base, s, uint64_t); break;
    case TP_SET_I64: v = (double)*CFIELD(base, s, int64_t); break;
    case TP_SET_INT: v = (double)*CFIELD(base, s, int); break;
    case TP_SET_F64:
    case TP_SET_FRACTION:
      v = *CFIELD(base, s, double);
      if (!isfinite(v)) {
        tp_seterr(err, errlen, "%s: not a finite number", s->key);
        return TP_EINVAL;
      }
      if (s->type == TP_SET_FRACTION && (v < 0 || v > 1)) {
        tp_seterr(err, errlen, "%s: %g is not a fraction from 0 to 1", s->key, v);
        return TP_EINVAL;
      }
      break;
    case TP_SET_ENUM: {
      size_t len;
      if (!enum_name(s, *CFIELD(base, s, int), &len)) {
        choices_phrase(s, e, sizeof(e));
        tp_seterr(err, errlen, "%s: %d is not one of the choices (%s)", s->key, *CFIELD(base, s, int), e);
        return TP_EINVAL;
      }
      return 0;
    }
    case TP_SET_U32_LIST: {
      const tp_u32_list *l = CFIELD(base, s, tp_u32_list);
      if (l->n > TP_LIST_MAX) goto too_long;
      for (size_t i = 0; i < l->n; i++) {
        if (check_number(s, l->v[i], e, sizeof(e))) {
          tp_seterr(err, errlen, "%s: %" PRIu32 " is out of range; %s", s->key, l->v[i], e);
          return TP_EINVAL;
        }
      }
      return 0;
    }
    case TP_SET_F64_LIST: {
      const tp_f64_list *l = CFIELD(base, s, tp_f64_list);
      if (l->n > TP_LIST_MAX) goto too_long;
      for (size_t i = 0; i < l->n; i++) {
        if (!isfinite(l->v[i]) || check_number(s, l->v[i], e, sizeof(e))) {
          tp_seterr(err, errlen, "%s: %g is out of range; %s", s->key, l->v[i], isfinite(l->v[i]) ? e : "not finite");
          return TP_EINVAL;
        }
      }
      return 0;
    }
    case TP_SET_STR_LIST:
      if (CFIELD(base, s, tp_str_list)->n > TP_STR_LIST_MAX) goto too_long;
      return 0;
    default: return 0;
  }
  /* A NONZERO row's 0 is its "not set", never typed but a valid value. */
  if ((s->flags_mask & TP_SETF_NONZERO) && v == 0) return 0;
  if (check_number(s, v, e, sizeof(e))) {
    char val[64];
    tp_setting_format(s, base, val, sizeof(val));
    tp_seterr(err, errlen, "%s: %s is out of range; %s", s->key, val, e);
    return TP_EINVAL;
  }
  return 0;
too_long:
  tp_seterr(err, errlen, "%s: the list is longer than its limit", s->key);
  return TP_EINVAL;
}

int tp_settings_check(const tp_setting *rows, size_t n, const void *base, char *err, size_t errlen) {
  for (size_t i = 0; i < n; i++) {
    int rv = tp_setting_check(&rows[i], base, err, errlen);
    if (rv) return rv;
  }
  return 0;
}

const tp_setting *tp_settings_find_key(const tp_setting *rows, size_t n, const char *key) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(rows[i].key, key) == 0) return &rows[i];
  return NULL;
}

/* ---- flags ----------------------------------------------------------------------- */

/* Walks "-u|--url": each spelling as the command line writes it, with the
 * part's prefix put before long ones.  Short flags are not prefixed; a
 * prefixed part offers none. */
typedef struct flag_iter {
  const char *p;
  const char *prefix;
} flag_iter;

static bool next_flag(flag_iter *it, char *out, size_t outlen) {
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
static bool canonical_flag(const tp_setting *s, const char *prefix, char *out, size_t outlen) {
  flag_iter it = {s->flags, prefix};
  char f[128];
  bool any = false;
  while (next_flag(&it, f, sizeof(f))) {
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
      while (next_flag(&it, f, sizeof(f))) {
        if (strlen(f) == len && memcmp(f, name, len) == 0) {
          *part = k;
          return &parts[k].rows[i];
        }
      }
    }
  }
  return NULL;
}

static bool takes_value(const tp_setting *s) { return s->type != TP_SET_FLAG; }

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
      tp_seterr(err, errlen, "unknown option '%.*s'", (int)len, a);
      return TP_EINVAL;
    }
    const char *v = NULL;
    if (takes_value(s)) {
      if (eq) {
        v = eq + 1;
      } else if (i + 1 < argc) {
        v = argv[++i];
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
      return rv;
    }
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
    if (best && canonical_flag(best, best_prefix, f, sizeof(f))) {
      app(out, outlen, &used, "%s", f);
      p += best_len;
    } else {
      out[used++] = *p++;
      out[used] = 0;
    }
  }
}

/* ---- help and man page --------------------------------------------------------------- */

static unsigned term_width(void) {
  struct winsize ws;
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40) return ws.ws_col;
  const char *c = getenv("COLUMNS");
  if (c && atoi(c) >= 40) return (unsigned)atoi(c);
  return 100;
}

static bool visible(const tp_setting *s) { return s->flags && !(s->flags_mask & TP_SETF_HIDDEN); }

/* "-u, --url HOST:PORT" */
static void row_head(const tp_setting *s, const char *prefix, char *out, size_t outlen) {
  size_t used = 0;
  out[0] = 0;
  flag_iter it = {s->flags, prefix};
  char f[128];
  bool first = true;
  while (next_flag(&it, f, sizeof(f))) {
    app(out, outlen, &used, "%s%s", first ? "" : ", ", f);
    first = false;
  }
  if (takes_value(s)) app(out, outlen, &used, " %s", s->arg ? s->arg : "VALUE");
}

/* The default as help shows it: the field's value; nothing for a flag
 * that is off or an empty value. */
static void row_default(const tp_setting *s, const void *base, char *out, size_t outlen) {
  out[0] = 0;
  if (s->type == TP_SET_FLAG) {
    if (*CFIELD(base, s, bool) && !(s->flags_mask & TP_SETF_CLEAR)) snprintf(out, outlen, "on");
    return;
  }
  if (s->type == TP_SET_STR_LIST || (s->flags_mask & TP_SETF_SECRET)) return;
  tp_setting_format(s, base, out, outlen);
  if ((s->flags_mask & TP_SETF_UNSET0) && (strcmp(out, "0") == 0 || strcmp(out, "0ms") == 0)) out[0] = 0;
}

/* Writes text wrapped to width, each line after the first indented. */
static void wrap(FILE *out, const char *text, size_t col, size_t indent, size_t width) {
  const char *p = text;
  while (*p) {
    while (*p == ' ') p++;
    const char *w = p;
    while (*p && *p != ' ') p++;
    size_t wl = (size_t)(p - w);
    if (!wl) break;
    if (col > indent && col + 1 + wl > width) {
      fprintf(out, "\n%*s", (int)indent, "");
      col = indent;
    } else if (col > indent) {
      fputc(' ', out);
      col++;
    }
    fwrite(w, 1, wl, out);
    col += wl;
  }
  fputc('\n', out);
}

void tp_settings_help(FILE *out, const tp_settings_part *parts, size_t n_parts, unsigned width) {
  if (!width) width = term_width();
  if (width > 160) width = 160;
  /* The head column fits the longest head, within reason. */
  size_t headw = 0;
  for (size_t k = 0; k < n_parts; k++)
    for (size_t i = 0; i < parts[k].n; i++) {
      if (!visible(&parts[k].rows[i])) continue;
      char head[160];
      row_head(&parts[k].rows[i], parts[k].prefix, head, sizeof(head));
      headw = TP_MAX(headw, strlen(head));
    }
  headw = TP_MIN(headw, (size_t)34);
  size_t indent = 2 + headw + 2;
  /* Groups in the order they first appear, across the parts. */
  const char *groups[64];
  size_t ng = 0;
  for (size_t k = 0; k < n_parts; k++)
    for (size_t i = 0; i < parts[k].n; i++) {
      const char *g = parts[k].rows[i].group ? parts[k].rows[i].group : "Options";
      if (!visible(&parts[k].rows[i])) continue;
      bool seen = false;
      for (size_t j = 0; j < ng; j++) seen |= strcmp(groups[j], g) == 0;
      if (!seen && ng < TP_ARRAY_LEN(groups)) groups[ng++] = g;
    }
  for (size_t gi = 0; gi < ng; gi++) {
    fprintf(out, "%s%s:\n", gi ? "\n" : "", groups[gi]);
    for (size_t k = 0; k < n_parts; k++)
      for (size_t i = 0; i < parts[k].n; i++) {
        const tp_setting *s = &parts[k].rows[i];
        const char *g = s->group ? s->group : "Options";
        if (!visible(s) || strcmp(g, groups[gi]) != 0) continue;
        char head[160], dflt[256], text[1400];
        row_head(s, parts[k].prefix, head, sizeof(head));
        row_default(s, parts[k].base, dflt, sizeof(dflt));
        snprintf(text, sizeof(text), "%s%s%s%s", s->help ? s->help : "", dflt[0] ? " [default: " : "", dflt,
                 dflt[0] ? "]" : "");
        if (strlen(head) > headw) {
          fprintf(out, "  %s\n%*s", head, (int)indent, "");
        } else {
          fprintf(out, "  %-*s  ", (int)headw, head);
        }
        wrap(out, text, indent, indent, width);
      }
  }
}

/* roff: a backslash doubled, a hyphen that is an option's made a minus, a
 * line that would start with a control character guarded. */
static void roff(FILE *out, const char *s) {
  if (*s == '.' || *s == '\'') fputs("\\&", out);
  for (; *s; s++) {
    if (*s == '\\')
      fputs("\\e", out);
    else if (*s == '-')
      fputs("\\-", out);
    else
      fputc(*s, out);
  }
}

void tp_settings_man(FILE *out, const tp_settings_part *parts, size_t n_parts) {
  const char *last_group = NULL;
  for (size_t k = 0; k < n_parts; k++)
    for (size_t i = 0; i < parts[k].n; i++) {
      const tp_setting *s = &parts[k].rows[i];
      if (!visible(s)) continue;
      const char *g = s->group ? s->group : "Options";
      if (!last_group || strcmp(g, last_group) != 0) {
        fputs(".SS ", out);
        roff(out, g);
        fputc('\n', out);
        last_group = g;
      }
      fputs(".TP\n.B ", out);
      flag_iter it = {s->flags, parts[k].prefix};
      char f[128];
      bool first = true;
      while (next_flag(&it, f, sizeof(f))) {
        if (!first) fputs(", ", out);
        roff(out, f);
        first = false;
      }
      if (takes_value(s)) {
        fputs(" \\fI", out);
        roff(out, s->arg ? s->arg : "VALUE");
        fputs("\\fR", out);
      }
      fputc('\n', out);
      roff(out, s->help ? s->help : "");
      char dflt[256];
      row_default(s, parts[k].base, dflt, sizeof(dflt));
      if (dflt[0]) {
        fputs(" Default: ", out);
        roff(out, dflt);
        fputc('.', out);
      }
      if (s->example) {
        fputs(" Example: \\fB", out);
        char ex[128];
        canonical_flag(s, parts[k].prefix, ex, sizeof(ex));
        roff(out, ex);
        fputc(' ', out);
        roff(out, s->example);
        fputs("\\fR.", out);
      }
      fputc('\n', out);
    }
}

/* ---- completions ----------------------------------------------------------------------- */

/* The words a value completes to: the canonical choice names. */
static void choice_words(const tp_setting *s, char *out, size_t outlen) {
  size_t used = 0;
  out[0] = 0;
  choice_iter it = {s->choices, 0};
  const char *name;
  size_t len;
  int idx;
  bool alias;
  while (next_choice(&it, &name, &len, &idx, &alias))
    if (!alias) app(out, outlen, &used, "%s%.*s", used ? " " : "", (int)len, name);
}

static void bash_command(FILE *out, const tp_settings_command *c) {
  fprintf(out, "    %s)\n      case \"$prev\" in\n", c->name);
  for (size_t k = 0; k < c->n_parts; k++)
    for (size_t i = 0; i < c->parts[k].n; i++) {
      const tp_setting *s = &c->parts[k].rows[i];
      if (!visible(s) || !takes_value(s)) continue;
      if (!(s->flags_mask & (TP_SETF_FILE | TP_SETF_DIR)) && s->type != TP_SET_ENUM) continue;
      flag_iter it = {s->flags, c->parts[k].prefix};
      char f[128];
      bool first = true;
      fputs("        ", out);
      while (next_flag(&it, f, sizeof(f))) {
        fprintf(out, "%s%s", first ? "" : "|", f);
        first = false;
      }
      if (s->type == TP_SET_ENUM) {
        char words[512];
        choice_words(s, words, sizeof(words));
        fprintf(out, ") COMPREPLY=($(compgen -W \"%s\" -- \"$cur\")); return ;;\n", words);
      } else {
        fprintf(out, ") COMPREPLY=($(compgen -%s -- \"$cur\")); return ;;\n",
                (s->flags_mask & TP_SETF_DIR) ? "d" : "f");
      }
    }
  fputs("      esac\n      opts=\"", out);
  bool first = true;
  for (size_t k = 0; k < c->n_parts; k++)
    for (size_t i = 0; i < c->parts[k].n; i++) {
      const tp_setting *s = &c->parts[k].rows[i];
      if (!visible(s)) continue;
      flag_iter it = {s->flags, c->parts[k].prefix};
      char f[128];
      while (next_flag(&it, f, sizeof(f))) {
        if (f[1] != '-') continue;
        fprintf(out, "%s%s", first ? "" : " ", f);
        first = false;
      }
    }
  fputs(" --help\" ;;\n", out);
}

static void zsh_quote(FILE *out, const char *s) {
  for (; *s; s++) {
    if (*s == '\'')
      fputs("'\\''", out);
    else if (*s == '[' || *s == ']' || *s == ':')
      fprintf(out, "\\%c", *s);
    else
      fputc(*s, out);
  }
}

static void zsh_command(FILE *out, const tp_settings_command *c) {
  fprintf(out, "    %s)\n      _arguments \\\n", c->name);
  for (size_t k = 0; k < c->n_parts; k++)
    for (size_t i = 0; i < c->parts[k].n; i++) {
      const tp_setting *s = &c->parts[k].rows[i];
      if (!visible(s)) continue;
      flag_iter it = {s->flags, c->parts[k].prefix};
      char f[128];
      while (next_flag(&it, f, sizeof(f))) {
        fprintf(out, "        '%s%s[", s->type == TP_SET_STR_LIST ? "*" : "", f);
        zsh_quote(out, s->help ? s->help : "");
        fputc(']', out);
        if (takes_value(s)) {
          fputs(":", out);
          zsh_quote(out, s->arg ? s->arg : "value");
          if (s->type == TP_SET_ENUM) {
            char words[512];
            choice_words(s, words, sizeof(words));
            fprintf(out, ":(%s)", words);
          } else if (s->flags_mask & TP_SETF_DIR) {
            fputs(":_directories", out);
          } else if (s->flags_mask & TP_SETF_FILE) {
            fputs(":_files", out);
          } else {
            fputs(": ", out);
          }
        }
        fputs("' \\\n", out);
      }
    }
  fputs("        '(-h --help)'{-h,--help}'[show the help]' ;;\n", out);
}

int tp_settings_completion(FILE *out, const char *shell, const char *program, const tp_settings_command *cmds,
                           size_t n_cmds) {
  if (strcmp(shell, "bash") == 0) {
    fprintf(out, "# bash completion for %s (generated from its settings tables)\n", program);
    fprintf(out, "_%s() {\n  local cur prev opts\n  cur=\"${COMP_WORDS[COMP_CWORD]}\"\n"
                 "  prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n  if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
                 "    COMPREPLY=($(compgen -W \"", program);
    for (size_t i = 0; i < n_cmds; i++) fprintf(out, "%s%s", i ? " " : "", cmds[i].name);
    fputs(" --help --version\" -- \"$cur\"))\n    return\n  fi\n  case \"${COMP_WORDS[1]}\" in\n", out);
    for (size_t i = 0; i < n_cmds; i++) bash_command(out, &cmds[i]);
    fputs("    *) return ;;\n  esac\n  COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n}\n", out);
    fprintf(out, "complete -F _%s %s\n", program, program);
    return 0;
  }
  if (strcmp(shell, "zsh") == 0) {
    fprintf(out, "#compdef %s\n# zsh completion for %s (generated from its settings tables)\n", program, program);
    fprintf(out, "_%s() {\n  local context state line\n  if (( CURRENT == 2 )); then\n    compadd -- ", program);
    for (size_t i = 0; i < n_cmds; i++) fprintf(out, "%s%s", i ? " " : "", cmds[i].name);
    fputs(" --help --version\n    return\n  fi\n  shift words\n  (( CURRENT-- ))\n  case \"$words[1]\" in\n", out);
    for (size_t i = 0; i < n_cmds; i++) zsh_command(out, &cmds[i]);
    fprintf(out, "  esac\n}\n_%s \"$@\"\n", program);
    return 0;
  }
  return TP_EINVAL;
}

/* ---- JSON echo --------------------------------------------------------------------------- */

/* The object a dotted key lives in, made as needed; *leaf is the last part. */
static json_t *parent_of(json_t *root, const char *key, const char **leaf) {
  json_t *o = root;
  const char *p = key;
  const char *dot;
  while ((dot = strchr(p, '.'))) {
    char part[64];
    snprintf(part, sizeof(part), "%.*s", (int)(dot - p), p);
    json_t *next = json_object_get(o, part);
    if (!json_is_object(next)) {
      next = json_object();
      if (!next || json_object_set_new(o, part, next)) return NULL;
    }
    o = next;
    p = dot + 1;
  }
  *leaf = p;
  return o;
}

static json_t *row_json(const tp_setting *s, const void *base) {
  switch (s->type) {
    case TP_SET_FLAG:
    case TP_SET_BOOL: return json_boolean(*CFIELD(base, s, bool));
    case TP_SET_STR: {
      const char *v = *CFIELD(base, s, const char *);
      if (s->flags_mask & TP_SETF_SECRET) return json_boolean(v && *v);
      return v ? json_string(v) : json_null();
    }
    case TP_SET_U32: return json_integer(*CFIELD(base, s, uint32_t));
    case TP_SET_U64:
    case TP_SET_MS:
    case TP_SET_SIZE: return json_integer((json_int_t)*CFIELD(base, s, uint64_t));
    case TP_SET_I64: return json_integer((json_int_t)*CFIELD(base, s, int64_t));
    case TP_SET_INT: return json_integer((json_int_t)*CFIELD(base, s, int));
    case TP_SET_F64:
    case TP_SET_FRACTION: return json_real(*CFIELD(base, s, double));
    case TP_SET_ENUM: {
      size_t len;
      const char *name = enum_name(s, *CFIELD(base, s, int), &len);
      return name ? json_stringn(name, len) : json_null();
    }
    case TP_SET_U32_LIST: {
      const tp_u32_list *l = CFIELD(base, s, tp_u32_list);
      json_t *a = json_array();
      for (size_t i = 0; a && i < l->n; i++) json_array_append_new(a, json_integer(l->v[i]));
      return a;
    }
    case TP_SET_F64_LIST: {
      const tp_f64_list *l = CFIELD(base, s, tp_f64_list);
      json_t *a = json_array();
      for (size_t i = 0; a && i < l->n; i++) json_array_append_new(a, json_real(l->v[i]));
      return a;
    }
    case TP_SET_STR_LIST: {
      const tp_str_list *l = CFIELD(base, s, tp_str_list);
      if (s->flags_mask & TP_SETF_SECRET) return json_integer((json_int_t)l->n);
      json_t *a = json_array();
      for (size_t i = 0; a && i < l->n; i++) json_array_append_new(a, json_string(l->v[i] ? l->v[i] : ""));
      return a;
    }
    case TP_SET_CUSTOM: {
      char buf[1024];
      buf[0] = 0;
      if (s->format) s->format(base, s, buf, sizeof(buf));
      return buf[0] ? json_string(buf) : json_null();
    }
  }
  return json_null();
}

int tp_settings_to_json(void *json_object, const tp_setting *rows, size_t n, const void *base) {
  json_t *root = json_object;
  for (size_t i = 0; i < n; i++) {
    const tp_setting *s = &rows[i];
    if (s->flags_mask & (TP_SETF_NOECHO | TP_SETF_NOOP)) continue;
    const char *leaf;
    json_t *parent = parent_of(root, s->key, &leaf);
    json_t *v = row_json(s, base);
    if (!parent || !v || json_object_set_new(parent, leaf, v)) return TP_ENOMEM;
  }
  return 0;
}
