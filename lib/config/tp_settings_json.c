/* The JSON echo of settings: every row's value under its dotted key. */
#include "tp_settings_internal.h"

#include <jansson.h>
#include <string.h>

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
      const char *name = tp__settings_enum_name(s, *CFIELD(base, s, int), &len);
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
    if (s->flags_mask & (TP_SETF_NOECHO | TP_SETF_NOOP | TP_SETF_REFUSED)) continue;
    const char *leaf;
    json_t *parent = parent_of(root, s->key, &leaf);
    json_t *v = row_json(s, base);
    if (!parent || !v || json_object_set_new(parent, leaf, v)) return TP_ENOMEM;
  }
  return 0;
}
