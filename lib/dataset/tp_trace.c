/* The trace reader (--schedule, tp_trace.h), and the prompts of a trace
 * that gave only lengths. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <jansson.h>

#include "dataset/tp_synth.h"
#include "dataset/tp_trace.h"
#include "util/tp_common.h"
#include "util/tp_rng.h"

/* An entry's prompt: its text, or the length to make one of (kept as a
 * marker, -2 - length, in input_tokens until tp_trace_make_prompts) with
 * its hash ids as "h1,h2,..." in the reference slot. */
static int read_prompt(json_t *o, tp_prompt *p, const char *path, size_t lineno, bool have_tokenizer, char *err,
                       size_t errlen) {
  memset(p, 0, sizeof(*p));
  p->max_tokens = -1;
  p->input_tokens = -1;
  const char *keys[] = {"text_input", "prompt", "input", "text"};
  for (size_t k = 0; k < 4 && !p->text; k++) {
    json_t *t = json_object_get(o, keys[k]);
    if (json_is_string(t)) {
      p->text = tp_strndup(json_string_value(t), json_string_length(t));
      p->text_len = json_string_length(t);
    }
  }
  if (p->text) return 0;
  json_t *il = json_object_get(o, "input_length");
  if (!json_is_integer(il) || json_integer_value(il) <= 0) {
    tp_seterr(err, errlen, "%s:%zu: expected a prompt (\"text_input\", \"prompt\", \"input\" or \"text\") "
              "or a positive \"input_length\"", path, lineno);
    return TP_EINVAL;
  }
  if (!have_tokenizer) {
    tp_seterr(err, errlen, "%s:%zu: \"input_length\" needs --tokenizer to make prompts of that many tokens",
              path, lineno);
    return TP_EINVAL;
  }
  /* Filled once the tokenizer is loaded: remember the lengths. */
  p->input_tokens = -2 - json_integer_value(il); /* marker: still to make */
  json_t *h = json_object_get(o, "hash_ids");
  if (json_is_array(h) && json_array_size(h) > 0) {
    /* Kept as "h1,h2,..." in the reference slot until the prompt is made. */
    tp_buf b;
    tp_buf_init(&b);
    size_t idx;
    json_t *v;
    json_array_foreach(h, idx, v) tp_buf_printf(&b, "%s%lld", idx ? "," : "", (long long)json_integer_value(v));
    p->reference = tp_buf_steal(&b, NULL);
  }
  return 0;
}

/* jansson quotes the offending input in its text; control bytes from a
 * binary file would reach the user's terminal, so they are masked (as the
 * input readers do). */
static void mask_controls(char *s) {
  for (; *s; s++)
    if ((unsigned char)*s < 0x20 || *s == 0x7f) *s = '?';
}

/* One line's object, or an error naming the line. */
static json_t *read_object(const char *line, size_t len, const char *path, size_t lineno, char *err,
                           size_t errlen) {
  json_error_t je;
  json_t *o = json_loadb(line, len, 0, &je);
  if (!o || !json_is_object(o)) {
    mask_controls(je.text);
    tp_seterr(err, errlen, "%s:%zu:%d: %s", path, lineno, o ? 1 : je.column,
              o ? "expected a JSON object" : je.text);
    json_decref(o);
    return NULL;
  }
  json_t *ts = json_object_get(o, "timestamp");
  if (!json_is_number(ts) || json_number_value(ts) < 0) {
    tp_seterr(err, errlen, "%s:%zu: \"timestamp\" must be a number of milliseconds, 0 or more", path, lineno);
    json_decref(o);
    return NULL;
  }
  return o;
}

/* Room for one more entry and prompt. */
static int grow(tp_dataset *ds, tp_trace_entry **entries, size_t n, size_t *cap) {
  if (n < *cap) return 0;
  *cap *= 2;
  tp_trace_entry *t = realloc(*entries, *cap * sizeof(*t));
  tp_prompt *p = t ? realloc(ds->items, *cap * sizeof(*p)) : NULL;
  if (t) *entries = t;
  if (p) ds->items = p;
  return t && p ? 0 : TP_ENOMEM;
}

int tp_trace_read(FILE *f, const char *path, double speedup, bool have_tokenizer, tp_dataset *ds,
                  tp_trace_entry **entries, size_t *n_entries, char *err, size_t errlen) {
  size_t cap = 256;
  *entries = calloc(cap, sizeof(**entries));
  ds->items = calloc(cap, sizeof(tp_prompt));
  ds->source = tp_strndup(path, strlen(path));
  if (!*entries || !ds->items || !ds->source) return TP_ENOMEM;
  char *line = NULL;
  size_t linecap = 0;
  ssize_t len;
  size_t lineno = 0;
  double first_ms = 0;
  int rv = 0;
  while ((len = getline(&line, &linecap, f)) > 0) {
    lineno++;
    size_t i = 0;
    while (i < (size_t)len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r' || line[i] == '\n')) i++;
    if (i == (size_t)len) continue;
    json_t *o = read_object(line, (size_t)len, path, lineno, err, errlen);
    if (!o) {
      rv = TP_EINVAL;
      break;
    }
    rv = grow(ds, entries, *n_entries, &cap);
    if (rv) {
      json_decref(o);
      break;
    }
    double ms = json_number_value(json_object_get(o, "timestamp"));
    if (*n_entries == 0) first_ms = ms;
    if (ms < first_ms) ms = first_ms;
    tp_trace_entry *e = &(*entries)[*n_entries];
    e->offset_ns = (uint64_t)llround((ms - first_ms) * 1e6 / speedup);
    e->prompt_index = (uint32_t)*n_entries;
    json_t *ol = json_object_get(o, "output_length");
    e->output_tokens = json_is_integer(ol) && json_integer_value(ol) > 0 ? (uint32_t)json_integer_value(ol) : 0;
    rv = read_prompt(o, &ds->items[*n_entries], path, lineno, have_tokenizer, err, errlen);
    json_decref(o);
    if (rv) break;
    ds->n++;
    (*n_entries)++;
  }
  free(line);
  if (rv == 0 && *n_entries == 0) {
    tp_seterr(err, errlen, "%s: no requests (the file is empty)", path);
    rv = TP_EINVAL;
  }
  return rv;
}

/* The prefix blocks of one prompt, one per hash id while they fit in want
 * tokens; *covered says how many tokens they hold. */
static int prefix_blocks(tp_prompt *p, const tp_tok *tok, uint32_t block_tokens, uint64_t seed, uint32_t want,
                         tp_buf *b, uint32_t *covered, char *err, size_t errlen) {
  for (char *s = p->reference; *s && *covered + block_tokens <= want;) {
    long long h = strtoll(s, &s, 10);
    if (*s == ',') s++;
    char *t;
    size_t tl;
    int rv = tp_synth_text(tok, block_tokens, tp_rng_mix(seed ^ 0x5eed, (uint64_t)h), &t, &tl);
    if (rv) {
      tp_seterr(err, errlen, "cannot make a %u-token prefix block: %s", block_tokens, tp_strerror(rv));
      return rv;
    }
    tp_buf_append(b, t, tl);
    free(t);
    *covered += block_tokens;
  }
  free(p->reference);
  p->reference = NULL;
  return 0;
}

bool tp_trace_has_lengths(const tp_dataset *ds) {
  for (size_t i = 0; i < ds->n; i++)
    if (ds->items[i].input_tokens <= -2) return true;
  return false;
}

int tp_trace_make_prompts(tp_dataset *ds, const tp_tok *tok, uint32_t block_tokens, uint64_t seed, char *err,
                          size_t errlen) {
  for (size_t i = 0; i < ds->n; i++) {
    tp_prompt *p = &ds->items[i];
    if (p->input_tokens > -2) continue;
    uint32_t want = (uint32_t)(-(p->input_tokens + 2));
    tp_buf b;
    tp_buf_init(&b);
    uint32_t covered = 0;
    if (p->reference) {
      int rv = prefix_blocks(p, tok, block_tokens, seed, want, &b, &covered, err, errlen);
      if (rv) {
        tp_buf_fini(&b);
        return rv;
      }
    }
    if (covered < want) {
      char *t;
      size_t tl;
      int rv = tp_synth_text(tok, want - covered, tp_rng_mix(seed, i + 1), &t, &tl);
      if (rv) {
        tp_buf_fini(&b);
        tp_seterr(err, errlen, "cannot make a prompt of %u tokens: %s", want - covered, tp_strerror(rv));
        return rv;
      }
      if (b.len) tp_buf_append(&b, " ", 1);
      tp_buf_append(&b, t, tl);
      free(t);
    }
    p->text = tp_buf_steal(&b, &p->text_len);
    p->input_tokens = -1; /* counted like any prompt */
  }
  return 0;
}
