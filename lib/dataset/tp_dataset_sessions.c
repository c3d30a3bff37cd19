/* Conversations files: one session per line (docs/sessions.md).
 *
 *   {"session_id": "s1", "turns": [
 *      {"text": "user text", "assistant": "fixed answer", "max_tokens": 64, "delay_ms": 0},
 *      {"text": "next question", "delay_ms": 1500}]}
 *
 * AIPerf's multi_turn lines read the same way: "texts" (a list of strings,
 * or of {"name", "contents": [...]}) for "text", "delay" for "delay_ms";
 * its "timestamp" (a fixed start time) is not replayed and is said in the
 * note.  Each turn becomes one prompt of the dataset, so token counting and
 * exports see the turns as prompts; the session table and the per-turn
 * table say how they group. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "dataset/tp_dataset.h"
#include "dataset/tp_dataset_line.h"
#include "util/tp_common.h"

/* The first non-blank line's bounds (after a byte order mark). */
static const char *first_line(const char *data, size_t len, size_t *out_len) {
  const char *p = data, *end = data + len;
  if (len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0) p += 3;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *le = nl ? nl : end;
    for (const char *q = p; q < le; q++)
      if (*q != ' ' && *q != '\t' && *q != '\r') {
        *out_len = (size_t)(le - p);
        return p;
      }
    p = nl ? nl + 1 : end;
  }
  return NULL;
}

bool tp__dataset_is_sessions(const char *data, size_t len) {
  size_t n = 0;
  const char *l = first_line(data, len, &n);
  if (!l) return false;
  json_t *o = json_loadb(l, n, 0, NULL);
  bool yes = json_is_object(o) && json_is_array(json_object_get(o, "turns"));
  json_decref(o);
  return yes;
}

/* "text", or AIPerf's "texts" joined by "\n".  Returns the owned text or
 * NULL with *why saying what is wrong. */
static char *turn_text(const json_t *t, size_t *len, const char **why) {
  const json_t *s = json_object_get(t, "text");
  if (json_is_string(s) && strlen(json_string_value(s)) != json_string_length(s)) {
    *why = "the text holds a NUL character (\\u0000)";
    return NULL;
  }
  if (json_is_string(s)) {
    *len = json_string_length(s);
    return tp_strndup(json_string_value(s), *len);
  }
  const json_t *ts = json_object_get(t, "texts");
  if (!json_is_array(ts) || json_array_size(ts) == 0) {
    *why = "needs \"text\" (a string) or \"texts\" (a non-empty list)";
    return NULL;
  }
  tp_buf b;
  tp_buf_init(&b);
  size_t i;
  const json_t *e;
  json_array_foreach(ts, i, e) {
    /* A string, or {"name": ..., "contents": ["...", ...]}. */
    const json_t *parts = json_is_object(e) ? json_object_get(e, "contents") : NULL;
    size_t n = json_is_array(parts) ? json_array_size(parts) : 1;
    for (size_t k = 0; k < n; k++) {
      const json_t *v = parts ? json_array_get(parts, k) : e;
      if (!json_is_string(v)) {
        *why = "\"texts\" must hold strings or {\"contents\": [strings]}";
        tp_buf_fini(&b);
        return NULL;
      }
      if (strlen(json_string_value(v)) != json_string_length(v)) {
        *why = "the text holds a NUL character (\\u0000)";
        tp_buf_fini(&b);
        return NULL;
      }
      if (b.len) tp_buf_append(&b, "\n", 1);
      tp_buf_append(&b, json_string_value(v), json_string_length(v));
    }
  }
  char *out = tp_buf_steal(&b, len);
  if (!out) *why = "out of memory";
  return out;
}

/* A non-negative number of milliseconds under key, or -1 when absent, -2
 * when of the wrong kind. */
static int64_t ms_of(const json_t *t, const char *key) {
  const json_t *v = json_object_get(t, key);
  if (!v || json_is_null(v)) return -1;
  if (json_is_integer(v) && json_integer_value(v) >= 0) return json_integer_value(v);
  if (json_is_real(v) && json_real_value(v) >= 0 && json_real_value(v) < 1e12) return (int64_t)json_real_value(v);
  return -2;
}

static int grow(void **arr, size_t n, size_t elem) {
  if (n && (n & (n - 1))) return 0; /* capacity doubles at powers of two */
  void *a = realloc(*arr, (n ? n * 2 : 16) * elem);
  if (!a) return TP_ENOMEM;
  *arr = a;
  return 0;
}

/* One turn appended as a prompt.  Returns 0, TP_EINVAL (message in err) or
 * TP_ENOMEM. */
static int add_turn(tp_dataset *ds, const json_t *t, const char *name, size_t lineno, size_t k, bool *timestamps,
                    char *err, size_t errlen) {
  if (!json_is_object(t)) {
    tp_seterr(err, errlen, "%s:%zu: turn %zu: not a JSON object (expected {\"text\": \"...\"})", name, lineno, k + 1);
    return TP_EINVAL;
  }
  const char *why = "out of memory";
  tp_prompt p;
  memset(&p, 0, sizeof(p));
  p.max_tokens = -1;
  p.input_tokens = -1;
  p.text = turn_text(t, &p.text_len, &why);
  if (!p.text) {
    tp_seterr(err, errlen, "%s:%zu: turn %zu: %s", name, lineno, k + 1, why);
    return why && strcmp(why, "out of memory") == 0 ? TP_ENOMEM : TP_EINVAL;
  }
  const json_t *mt = json_object_get(t, "max_tokens");
  if (mt && !json_is_null(mt)) {
    if (!json_is_integer(mt) || json_integer_value(mt) <= 0) {
      free(p.text);
      tp_seterr(err, errlen, "%s:%zu: turn %zu: \"max_tokens\" must be a positive integer", name, lineno, k + 1);
      return TP_EINVAL;
    }
    p.max_tokens = json_integer_value(mt);
  }
  int64_t d = ms_of(t, "delay_ms");
  if (d == -1) d = ms_of(t, "delay");
  const json_t *as = json_object_get(t, "assistant");
  if (d == -2 || (as && !json_is_null(as) && (!json_is_string(as) || strlen(json_string_value(as)) != json_string_length(as)))) {
    free(p.text);
    tp_seterr(err, errlen, "%s:%zu: turn %zu: %s", name, lineno, k + 1,
              d == -2 ? "\"delay_ms\" (or \"delay\") must be a non-negative number of milliseconds"
                      : "\"assistant\" must be a string without NUL characters (the fixed answer)");
    return TP_EINVAL;
  }
  if (json_object_get(t, "timestamp")) *timestamps = true;
  if (grow((void **)&ds->turns, ds->n, sizeof(tp_turn)) || tp__dataset_push(ds, &p)) {
    free(p.text);
    return TP_ENOMEM;
  }
  tp_turn *tt = &ds->turns[ds->n - 1];
  tt->delay_ms = d > 0 ? (uint64_t)d : 0;
  tt->assistant = json_is_string(as) ? tp_strndup(json_string_value(as), json_string_length(as)) : NULL;
  return 0;
}

static int add_line(tp_dataset *ds, const char *name, size_t lineno, const char *line, size_t n, bool *timestamps,
                    char *err, size_t errlen) {
  json_error_t je;
  json_t *o = json_loadb(line, n, 0, &je);
  if (!json_is_object(o)) {
    json_decref(o);
    tp_seterr(err, errlen, "%s:%zu: not a session: expected {\"session_id\": \"...\", \"turns\": [{\"text\": \"...\"}]}",
              name, lineno);
    return TP_EINVAL;
  }
  const json_t *turns = json_object_get(o, "turns");
  const json_t *id = json_object_get(o, "session_id");
  int rv = 0;
  if (!json_is_array(turns) || json_array_size(turns) == 0 || json_array_size(turns) > UINT32_MAX) {
    tp_seterr(err, errlen, "%s:%zu: \"turns\" must be a non-empty list of turns", name, lineno);
    rv = TP_EINVAL;
  } else if (id && !json_is_null(id) && !json_is_string(id) && !json_is_integer(id)) {
    tp_seterr(err, errlen, "%s:%zu: \"session_id\" must be a string", name, lineno);
    rv = TP_EINVAL;
  } else if (grow((void **)&ds->sessions, ds->n_sessions, sizeof(tp_session))) {
    rv = TP_ENOMEM;
  }
  if (rv) {
    json_decref(o);
    return rv;
  }
  tp_session *s = &ds->sessions[ds->n_sessions];
  s->first = ds->n;
  s->turns = 0;
  char idbuf[48];
  if (json_is_string(id))
    s->id = tp_strndup(json_string_value(id), json_string_length(id));
  else {
    if (json_is_integer(id))
      snprintf(idbuf, sizeof(idbuf), "%lld", (long long)json_integer_value(id));
    else
      snprintf(idbuf, sizeof(idbuf), "line %zu", lineno);
    s->id = tp_strndup(idbuf, strlen(idbuf));
  }
  if (!s->id) rv = TP_ENOMEM;
  for (size_t k = 0; !rv && k < json_array_size(turns); k++) {
    rv = add_turn(ds, json_array_get(turns, k), name, lineno, k, timestamps, err, errlen);
    if (!rv) s->turns++;
  }
  ds->n_sessions++; /* counted even when cut short, so its id is freed */
  json_decref(o);
  return rv;
}

int tp__dataset_sessions(tp_dataset *ds, const char *name, const char *data, size_t len, char *err,
                         size_t errlen) {
  memset(ds, 0, sizeof(*ds));
  ds->source = tp_strndup(name, strlen(name));
  ds->format = "sessions";
  if (!ds->source) return TP_ENOMEM;
  const char *p = data, *end = data + len;
  if (len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0) p += 3;
  bool timestamps = false;
  for (size_t lineno = 1; p < end; lineno++) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = (size_t)((nl ? nl : end) - p);
    bool blank = true;
    for (size_t i = 0; i < n && blank; i++) blank = p[i] == ' ' || p[i] == '\t' || p[i] == '\r';
    if (!blank) {
      int rv = add_line(ds, name, lineno, p, n, &timestamps, err, errlen);
      if (rv == TP_ENOMEM) tp_seterr(err, errlen, "%s:%zu: out of memory", name, lineno);
      if (rv) return rv;
    }
    p = nl ? nl + 1 : end;
  }
  if (!ds->n_sessions) {
    tp_seterr(err, errlen, "%s: no sessions", name);
    return TP_EINVAL;
  }
  if (timestamps)
    snprintf(ds->note, sizeof(ds->note),
             "%s: turn \"timestamp\"s are not replayed: sessions start on --concurrency or --request-rate, "
             "and turns follow their delays",
             name);
  return 0;
}
