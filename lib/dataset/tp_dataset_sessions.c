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
 * table say how they group.
 *
 * A trace's session form (the mooncake trace with "session_id", as AIPerf
 * reads it) has one line per turn instead:
 *
 *   {"session_id": "s1", "timestamp": 0, "input_length": 655, "output_length": 52, "hash_ids": [0, 1]}
 *   {"session_id": "s1", "delay": 2000, "text_input": "next question", "output_length": 30}
 *
 * Lines of different sessions may interleave; each session's turns keep
 * their file order.  A turn is its text ("text_input", "text", "prompt" or
 * "input") or an "input_length" of tokens made once the tokenizer is loaded
 * (tp_trace_make_prompts: the same "hash_ids" blocks give the same text);
 * "output_length" is its max_tokens, "delay" its think time in ms. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "dataset/tp_dataset.h"
#include "dataset/tp_dataset_line.h"
#include "util/tp_common.h"
#include "util/tp_u64map.h"

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

/* Lines of a file, one after another (after a byte order mark). */
typedef struct line_cursor {
  const char *p, *end;
} line_cursor;

static line_cursor cursor_at(const char *data, size_t len) {
  line_cursor c = {data, data + len};
  if (len >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0) c.p += 3;
  return c;
}

/* The next line in *line and *len (0 for a blank one); false at the end. */
static bool cursor_next(line_cursor *c, const char **line, size_t *len) {
  if (c->p >= c->end) return false;
  const char *nl = memchr(c->p, '\n', (size_t)(c->end - c->p));
  *line = c->p;
  *len = (size_t)((nl ? nl : c->end) - c->p);
  bool blank = true;
  for (size_t i = 0; i < *len && blank; i++) blank = c->p[i] == ' ' || c->p[i] == '\t' || c->p[i] == '\r';
  if (blank) *len = 0;
  c->p = nl ? nl + 1 : c->end;
  return true;
}

static const char *const TEXT_KEYS[] = {"text_input", "text", "prompt", "input"};

/* A line of a trace's session form: a session id and a turn's input. */
static bool is_trace_turn(const json_t *o) {
  if (!json_is_object(o) || !json_object_get(o, "session_id") || json_object_get(o, "turns")) return false;
  if (json_object_get(o, "input_length") || json_object_get(o, "messages")) return true;
  for (size_t k = 0; k < TP_ARRAY_LEN(TEXT_KEYS); k++)
    if (json_object_get(o, TEXT_KEYS[k])) return true;
  return false;
}

bool tp__dataset_is_sessions(const char *data, size_t len) {
  size_t n = 0;
  const char *l = first_line(data, len, &n);
  if (!l) return false;
  json_t *o = json_loadb(l, n, 0, NULL);
  bool yes = json_is_object(o) && (json_is_array(json_object_get(o, "turns")) || is_trace_turn(o));
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

static int trace_sessions(tp_dataset *ds, const char *name, const char *data, size_t len, char *err,
                          size_t errlen);

int tp__dataset_sessions(tp_dataset *ds, const char *name, const char *data, size_t len, char *err,
                         size_t errlen) {
  size_t fl = 0;
  const char *l = first_line(data, len, &fl);
  json_t *first = l ? json_loadb(l, fl, 0, NULL) : NULL;
  bool trace = is_trace_turn(first);
  json_decref(first);
  if (trace) return trace_sessions(ds, name, data, len, err, errlen);
  memset(ds, 0, sizeof(*ds));
  ds->source = tp_strndup(name, strlen(name));
  ds->format = "sessions";
  if (!ds->source) return TP_ENOMEM;
  line_cursor cur = cursor_at(data, len);
  bool timestamps = false;
  const char *p;
  size_t n;
  for (size_t lineno = 1; cursor_next(&cur, &p, &n); lineno++) {
    if (n) {
      int rv = add_line(ds, name, lineno, p, n, &timestamps, err, errlen);
      if (rv == TP_ENOMEM) tp_seterr(err, errlen, "%s:%zu: out of memory", name, lineno);
      if (rv) return rv;
    }
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

/* ---- a trace's session form: one line per turn --------------------------- */

typedef struct trace_line {
  json_t *o;
  size_t lineno;
  size_t session; /* index in first-appearance order */
} trace_line;

typedef struct trace_ids {
  tp_u64map by_hash; /* FNV-1a of the id (moved on by 1 past a collision) -> index + 1 */
  char **ids;
  size_t *turns;
  size_t n;
} trace_ids;

static uint64_t fnv1a(const char *s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ULL;
  return h ? h : 1;
}

/* The index of session id, added on its first line.  Returns 0 or
 * TP_ENOMEM. */
static int trace_session_index(trace_ids *t, const char *id, size_t *out) {
  uint64_t v = 0;
  for (uint64_t h = fnv1a(id);; h = h + 1 ? h + 1 : 1) {
    if (!tp_u64map_get(&t->by_hash, h, &v)) {
      if (grow((void **)&t->ids, t->n, sizeof(char *)) || grow((void **)&t->turns, t->n, sizeof(size_t)))
        return TP_ENOMEM;
      t->ids[t->n] = tp_strndup(id, strlen(id));
      if (!t->ids[t->n] || tp_u64map_put(&t->by_hash, h, t->n + 1)) {
        free(t->ids[t->n]);
        return TP_ENOMEM;
      }
      t->turns[t->n] = 0;
      *out = t->n++;
      return 0;
    }
    if (strcmp(t->ids[v - 1], id) == 0) {
      *out = (size_t)v - 1;
      return 0;
    }
  }
}

/* "session_id" as text: a string, or an integer written out. */
static bool trace_id_of(const json_t *o, char *buf, size_t len) {
  const json_t *id = json_object_get(o, "session_id");
  if (json_is_string(id) && strlen(json_string_value(id)) == json_string_length(id))
    snprintf(buf, len, "%s", json_string_value(id));
  else if (json_is_integer(id))
    snprintf(buf, len, "%lld", (long long)json_integer_value(id));
  else
    return false;
  return true;
}

/* The turn's text, or the marker of an input length (tp_trace_make_prompts)
 * with its hash ids as "h1,h2" in the reference slot.  Returns NULL in *why
 * when well formed. */
static const char *trace_turn_input(const json_t *o, tp_prompt *p) {
  for (size_t k = 0; k < TP_ARRAY_LEN(TEXT_KEYS); k++) {
    const json_t *t = json_object_get(o, TEXT_KEYS[k]);
    if (!t) continue;
    if (!json_is_string(t) || strlen(json_string_value(t)) != json_string_length(t))
      return "the turn's text must be a string without NUL characters";
    p->text_len = json_string_length(t);
    p->text = tp_strndup(json_string_value(t), p->text_len);
    return p->text ? NULL : "out of memory";
  }
  if (json_object_get(o, "messages"))
    return "\"messages\" turns are not read: give each turn's new text in \"text_input\" (the history is "
           "sent by tokperf) or an \"input_length\"";
  const json_t *il = json_object_get(o, "input_length");
  if (!json_is_integer(il) || json_integer_value(il) <= 0 || json_integer_value(il) > 10000000)
    return "expected the turn's text (\"text_input\") or a positive \"input_length\"";
  p->input_tokens = -2 - json_integer_value(il); /* made once the tokenizer is loaded */
  const json_t *h = json_object_get(o, "hash_ids");
  if (json_is_array(h) && json_array_size(h) > 0) {
    tp_buf b;
    tp_buf_init(&b);
    size_t i;
    const json_t *v;
    json_array_foreach(h, i, v) {
      if (!json_is_integer(v)) {
        tp_buf_fini(&b);
        return "\"hash_ids\" must be a list of integers";
      }
      tp_buf_printf(&b, "%s%lld", i ? "," : "", (long long)json_integer_value(v));
    }
    p->reference = tp_buf_steal(&b, NULL);
  }
  return NULL;
}

/* One line's turn appended as a prompt of the dataset. */
static int trace_add_turn(tp_dataset *ds, const char *name, const trace_line *tl, bool *timestamps, char *err,
                          size_t errlen) {
  tp_prompt p;
  memset(&p, 0, sizeof(p));
  p.max_tokens = -1;
  p.input_tokens = -1;
  const char *why = trace_turn_input(tl->o, &p);
  const json_t *ol = json_object_get(tl->o, "output_length");
  if (!ol) ol = json_object_get(tl->o, "max_tokens");
  int64_t d = ms_of(tl->o, "delay");
  if (d == -1) d = ms_of(tl->o, "delay_ms");
  if (!why && ol && !json_is_null(ol) && (!json_is_integer(ol) || json_integer_value(ol) <= 0))
    why = "\"output_length\" must be a positive integer";
  if (!why && d == -2) why = "\"delay\" must be a non-negative number of milliseconds";
  if (why) {
    free(p.text);
    free(p.reference);
    tp_seterr(err, errlen, "%s:%zu: %s", name, tl->lineno, why);
    return strcmp(why, "out of memory") == 0 ? TP_ENOMEM : TP_EINVAL;
  }
  if (json_is_integer(ol)) p.max_tokens = json_integer_value(ol);
  if (json_object_get(tl->o, "timestamp")) *timestamps = true;
  if (grow((void **)&ds->turns, ds->n, sizeof(tp_turn)) || tp__dataset_push(ds, &p)) {
    free(p.text);
    free(p.reference);
    return TP_ENOMEM;
  }
  tp_turn *tt = &ds->turns[ds->n - 1];
  tt->delay_ms = d > 0 ? (uint64_t)d : 0;
  tt->assistant = NULL;
  return 0;
}

/* Reads every line, numbering the sessions as they first appear. */
static int trace_read_lines(const char *name, const char *data, size_t len, trace_line **lines, size_t *n_lines,
                            trace_ids *ids, char *err, size_t errlen) {
  line_cursor cur = cursor_at(data, len);
  const char *p;
  size_t n;
  for (size_t lineno = 1; cursor_next(&cur, &p, &n); lineno++) {
    if (n) {
      json_t *o = json_loadb(p, n, 0, NULL);
      char id[64];
      if (!is_trace_turn(o) || !trace_id_of(o, id, sizeof(id))) {
        json_decref(o);
        tp_seterr(err, errlen, "%s:%zu: not a turn of a session: expected {\"session_id\": \"...\", "
                  "\"text_input\" or \"input_length\": ...}", name, lineno);
        return TP_EINVAL;
      }
      size_t si = 0;
      if (grow((void **)lines, *n_lines, sizeof(trace_line)) || trace_session_index(ids, id, &si)) {
        json_decref(o);
        return TP_ENOMEM;
      }
      (*lines)[(*n_lines)++] = (trace_line){o, lineno, si};
      ids->turns[si]++;
    }
  }
  return 0;
}

/* Each session's turns, in file order, one session after another. */
static int trace_build(tp_dataset *ds, const char *name, trace_line *lines, size_t n_lines, trace_ids *ids,
                       bool *timestamps, char *err, size_t errlen) {
  size_t *order = malloc((n_lines ? n_lines : 1) * sizeof(size_t));
  size_t *start = calloc(ids->n + 1, sizeof(size_t));
  ds->sessions = calloc(ids->n ? ids->n : 1, sizeof(tp_session));
  if (!order || !start || !ds->sessions) {
    free(order);
    free(start);
    return TP_ENOMEM;
  }
  for (size_t s = 0; s < ids->n; s++) start[s + 1] = start[s] + ids->turns[s];
  for (size_t i = 0; i < n_lines; i++) order[start[lines[i].session]++] = i; /* counting sort, stable */
  int rv = 0;
  for (size_t s = 0, k = 0; s < ids->n && !rv; s++) {
    tp_session *se = &ds->sessions[ds->n_sessions++];
    se->id = ids->ids[s];
    ids->ids[s] = NULL; /* the dataset owns it now */
    se->first = ds->n;
    se->turns = 0;
    for (size_t t = 0; t < ids->turns[s] && !rv; t++, k++) {
      rv = trace_add_turn(ds, name, &lines[order[k]], timestamps, err, errlen);
      if (!rv) se->turns++;
    }
  }
  free(order);
  free(start);
  return rv;
}

static int trace_sessions(tp_dataset *ds, const char *name, const char *data, size_t len, char *err,
                          size_t errlen) {
  memset(ds, 0, sizeof(*ds));
  ds->source = tp_strndup(name, strlen(name));
  ds->format = "sessions (trace)";
  if (!ds->source) return TP_ENOMEM;
  trace_line *lines = NULL;
  size_t n_lines = 0;
  trace_ids ids = {0};
  tp_u64map_init(&ids.by_hash);
  bool timestamps = false;
  int rv = trace_read_lines(name, data, len, &lines, &n_lines, &ids, err, errlen);
  if (!rv && n_lines == 0) {
    tp_seterr(err, errlen, "%s: no sessions", name);
    rv = TP_EINVAL;
  }
  if (!rv) rv = trace_build(ds, name, lines, n_lines, &ids, &timestamps, err, errlen);
  if (rv == TP_ENOMEM && !err[0]) tp_seterr(err, errlen, "%s: out of memory", name);
  for (size_t i = 0; i < n_lines; i++) json_decref(lines[i].o);
  for (size_t i = 0; i < ids.n; i++) free(ids.ids[i]);
  free(lines);
  free(ids.ids);
  free(ids.turns);
  tp_u64map_fini(&ids.by_hash);
  if (!rv && timestamps)
    snprintf(ds->note, sizeof(ds->note),
             "%s: turn \"timestamp\"s are not replayed: sessions start on --concurrency or --request-rate, "
             "and turns follow their \"delay\"s",
             name);
  return rv;
}
