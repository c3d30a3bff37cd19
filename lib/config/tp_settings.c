/* Settings tables: the one walker behind defaults, validation, parsing,
 * help, the man page, completions and the JSON echo (tokperf/settings.h).
 * This part: choices, values, defaults, formatting and checks. */
#include "tp_settings_internal.h"

#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tokperf/parse.h"
#include "util/tp_common.h"

static bool has_range(const tp_setting *s) { return s->min <= s->max && !(s->min == 0 && s->max == 0); }

/* ---- choices ------------------------------------------------------------ */

bool tp__settings_next_choice(choice_iter *it, const char **name, size_t *len, int *index, bool *alias) {
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
  while (tp__settings_next_choice(&it, &name, &len, &idx, &alias)) n += !alias;
  it = (choice_iter){s->choices, 0};
  out[0] = 0;
  while (tp__settings_next_choice(&it, &name, &len, &idx, &alias)) {
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
  while (tp__settings_next_choice(&it, &name, &len, &idx, &alias)) {
    if (strlen(v) == len && strncmp(v, name, len) == 0) {
      *out = idx;
      return 0;
    }
  }
  return TP_EINVAL;
}

const char *tp__settings_enum_name(const tp_setting *s, int v, size_t *len) {
  choice_iter it = {s->choices, 0};
  const char *name;
  int idx;
  bool alias;
  while (tp__settings_next_choice(&it, &name, len, &idx, &alias))
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

/* Decimals, lists and ranges ("0.5,2.5", "1.0:4.0:0.1", "1:64:x2"). */
static int parse_f64_list(const char *v, tp_f64_list *l, char *err, size_t errlen) {
  double *vals = NULL;
  size_t n = 0;
  if (tp_parse_f64_list(v, &vals, &n, TP_LIST_MAX, err, errlen)) return TP_EINVAL;
  memcpy(l->v, vals, n * sizeof(double));
  l->n = n;
  free(vals);
  return 0;
}

/* One helper per type of row: each parses v, checks it against the row's
 * range and stores it. */

static int set_bool(const tp_setting *s, void *base, const char *v, char *err, size_t errlen) {
  bool b = !(s->flags_mask & TP_SETF_CLEAR);
  if (v && parse_bool(v, &b)) {
    tp_seterr(err, errlen, "expected true or false");
    return TP_EINVAL;
  }
  *FIELD(base, s, bool) = b;
  return 0;
}

static int set_unsigned(const tp_setting *s, void *base, const char *v, char *err, size_t errlen) {
  uint64_t u;
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
}

static int set_signed(const tp_setting *s, void *base, const char *v, char *err, size_t errlen) {
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

static int set_ms(const tp_setting *s, void *base, const char *v, char *err, size_t errlen) {
  uint64_t u;
  if (tp_parse_duration_ns(v, TP_NS_PER_MS, &u, err, errlen)) return TP_EINVAL;
  /* Rounded up: "1us" is not "no time at all". */
  u = u / TP_NS_PER_MS + (u % TP_NS_PER_MS != 0);
  if (check_number(s, (double)u, err, errlen)) return TP_EINVAL;
  *FIELD(base, s, uint64_t) = u;
  return 0;
}

static int set_size(const tp_setting *s, void *base, const char *v, char *err, size_t errlen) {
  uint64_t u;
  if (tp_parse_size(v, &u, err, errlen) || check_number(s, (double)u, err, errlen)) return TP_EINVAL;
  *FIELD(base, s, uint64_t) = u;
  return 0;
}

static int set_double(const tp_setting *s, void *base, const char *v, char *err, size_t errlen) {
  double d;
  if (s->type == TP_SET_F64 ? tp_parse_double(v, &d, err, errlen) : tp_parse_fraction(v, &d, err, errlen))
    return TP_EINVAL;
  if (check_number(s, d, err, errlen)) return TP_EINVAL;
  *FIELD(base, s, double) = d;
  return 0;
}

static int set_enum(const tp_setting *s, void *base, const char *v, char *err, size_t errlen) {
  char e[256];
  int idx;
  if (enum_lookup(s, v, &idx)) {
    choices_phrase(s, e, sizeof(e));
    tp_seterr(err, errlen, "expected %s", e);
    return TP_EINVAL;
  }
  *FIELD(base, s, int) = idx;
  return 0;
}

static int set_u32_list(const tp_setting *s, void *base, const char *v, char *err, size_t errlen) {
  char e[256];
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

static int set_f64_list(const tp_setting *s, void *base, const char *v, char *err, size_t errlen) {
  tp_f64_list tmp;
  if (parse_f64_list(v, &tmp, err, errlen)) return TP_EINVAL;
  for (size_t i = 0; i < tmp.n; i++)
    if (check_number(s, tmp.v[i], err, errlen)) return TP_EINVAL;
  tp_f64_list *l = FIELD(base, s, tp_f64_list);
  memcpy(l->v, tmp.v, tmp.n * sizeof(double));
  l->n = tmp.n;
  return 0;
}

static int set_str_list(const tp_setting *s, void *base, const char *v, char *err, size_t errlen) {
  tp_str_list *l = FIELD(base, s, tp_str_list);
  if (l->n >= TP_STR_LIST_MAX) {
    tp_seterr(err, errlen, "given more than %d times", TP_STR_LIST_MAX);
    return TP_EINVAL;
  }
  l->v[l->n++] = v;
  return 0;
}

int tp_setting_set(const tp_setting *s, void *base, const char *v, char *err, size_t errlen) {
  switch (s->type) {
    case TP_SET_FLAG:
    case TP_SET_BOOL: return set_bool(s, base, v, err, errlen);
    case TP_SET_STR:
      *FIELD(base, s, const char *) = v;
      return 0;
    case TP_SET_U32:
    case TP_SET_U64: return set_unsigned(s, base, v, err, errlen);
    case TP_SET_INT:
    case TP_SET_I64: return set_signed(s, base, v, err, errlen);
    case TP_SET_MS: return set_ms(s, base, v, err, errlen);
    case TP_SET_SIZE: return set_size(s, base, v, err, errlen);
    case TP_SET_F64:
    case TP_SET_FRACTION: return set_double(s, base, v, err, errlen);
    case TP_SET_ENUM: return set_enum(s, base, v, err, errlen);
    case TP_SET_U32_LIST: return set_u32_list(s, base, v, err, errlen);
    case TP_SET_F64_LIST: return set_f64_list(s, base, v, err, errlen);
    case TP_SET_STR_LIST: return set_str_list(s, base, v, err, errlen);
    case TP_SET_CUSTOM: return s->parse ? s->parse(base, s, v, err, errlen) : TP_EINVAL;
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
void tp__settings_app(char *out, size_t outlen, size_t *used, const char *fmt, ...) {
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
    case TP_SET_BOOL: tp__settings_app(out, outlen, &used, "%s", *CFIELD(base, s, bool) ? "true" : "false"); break;
    case TP_SET_STR: {
      const char *v = *CFIELD(base, s, const char *);
      if (s->flags_mask & TP_SETF_SECRET)
        tp__settings_app(out, outlen, &used, "%s", v && *v ? "(set)" : "");
      else if (v)
        tp__settings_app(out, outlen, &used, "%s", v);
      break;
    }
    case TP_SET_U32: tp__settings_app(out, outlen, &used, "%" PRIu32, *CFIELD(base, s, uint32_t)); break;
    case TP_SET_U64: tp__settings_app(out, outlen, &used, "%" PRIu64, *CFIELD(base, s, uint64_t)); break;
    case TP_SET_I64: tp__settings_app(out, outlen, &used, "%" PRId64, *CFIELD(base, s, int64_t)); break;
    case TP_SET_INT: tp__settings_app(out, outlen, &used, "%d", *CFIELD(base, s, int)); break;
    case TP_SET_F64: tp__settings_app(out, outlen, &used, "%g", *CFIELD(base, s, double)); break;
    case TP_SET_FRACTION: tp__settings_app(out, outlen, &used, "%g", *CFIELD(base, s, double)); break;
    case TP_SET_MS: fmt_ms(*CFIELD(base, s, uint64_t), out, outlen); break;
    case TP_SET_SIZE: fmt_size(*CFIELD(base, s, uint64_t), out, outlen); break;
    case TP_SET_ENUM: {
      size_t len;
      const char *name = tp__settings_enum_name(s, *CFIELD(base, s, int), &len);
      if (name) tp__settings_app(out, outlen, &used, "%.*s", (int)len, name);
      break;
    }
    case TP_SET_U32_LIST: {
      const tp_u32_list *l = CFIELD(base, s, tp_u32_list);
      for (size_t i = 0; i < l->n; i++) tp__settings_app(out, outlen, &used, "%s%" PRIu32, i ? "," : "", l->v[i]);
      break;
    }
    case TP_SET_F64_LIST: {
      const tp_f64_list *l = CFIELD(base, s, tp_f64_list);
      for (size_t i = 0; i < l->n; i++) tp__settings_app(out, outlen, &used, "%s%g", i ? "," : "", l->v[i]);
      break;
    }
    case TP_SET_STR_LIST: {
      const tp_str_list *l = CFIELD(base, s, tp_str_list);
      for (size_t i = 0; i < l->n; i++)
        tp__settings_app(out, outlen, &used, "%s%s", i ? " " : "", (s->flags_mask & TP_SETF_SECRET) ? "(set)" : l->v[i]);
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
      if (!tp__settings_enum_name(s, *CFIELD(base, s, int), &len)) {
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
