/* Input files of other tools: perf_analyzer's input data, ShareGPT, and the
 * detection that tells them from tokperf's JSONL.
 *
 * Choices made here:
 * - Detection is by content only.  A document whose first line is not a
 *   whole JSON value but whose whole text is one is a pretty-printed
 *   document (perf_analyzer files usually are); a document that is one
 *   object with a "data" list is perf_analyzer's; a list whose first
 *   element has "conversations" is ShareGPT.  Everything else is JSONL,
 *   so a JSONL file reads exactly as before.
 * - perf_analyzer: the prompt is the first string of "text_input", else of
 *   "PROMPT", else of the first input whose name says prompt, text or
 *   input (case aside) and whose first element is a string.  max_tokens
 *   comes from "max_tokens", "request_output_len" or "max_new_tokens", or
 *   from a "sampling_parameters" JSON string.  The other inputs (stream,
 *   temperature...) are named in the note: tokperf builds those tensors
 *   from its options.
 * - ShareGPT: as vLLM's benchmark, the prompt is the first human turn and
 *   the answer the first gpt turn after it; entries with fewer than two
 *   turns, or without that pair, are skipped and counted in the note. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "dataset/tp_dataset.h"
#include "dataset/tp_dataset_line.h"
#include "util/tp_base64.h"
#include "util/tp_common.h"

/* Input names and JSON values are quoted in messages; control bytes in
 * them would reach the user's terminal, so they are masked. */
static void mask_controls(char *s) {
  for (; *s; s++)
    if ((unsigned char)*s < 0x20 || *s == 0x7f) *s = '?';
}

/* ---- perf_analyzer --------------------------------------------------------- */

/* The values of one input: a list (nested lists are flattened row-major by
 * perf_analyzer, so the first scalar is found depth first), or
 * {"content": [...], "shape": [...]}, or {"b64": "..."}.  Sets *first to
 * the first scalar (NULL for b64 or an empty list) and *b64 to the base64
 * string (or NULL).  Returns false when the value has none of those forms. */
static bool input_values(const json_t *v, const json_t **first, const json_t **b64) {
  *first = NULL;
  *b64 = NULL;
  if (json_is_object(v)) {
    json_t *c = json_object_get(v, "content");
    json_t *b = json_object_get(v, "b64");
    json_t *shape = json_object_get(v, "shape");
    if (shape) {
      size_t i;
      json_t *d;
      if (!json_is_array(shape)) return false;
      json_array_foreach(shape, i, d) if (!json_is_integer(d) || json_integer_value(d) < 0) return false;
    }
    if (json_is_string(b) && !c) {
      *b64 = b;
      return true;
    }
    if (!c) return false;
    v = c;
  }
  if (!json_is_array(v)) return false;
  /* Depth first through nested lists; the depth is bounded by jansson's
   * own nesting limit. */
  while (json_is_array(v) && json_array_size(v)) v = json_array_get(v, 0);
  if (json_is_array(v) || json_is_object(v)) return json_is_array(v);
  *first = v;
  return true;
}

/* The first element of a BYTES tensor given as base64: a 4-byte
 * little-endian length, then the bytes.  Returns 0 with *s owned, 1 when
 * the bytes are not such an element, or TP_ENOMEM. */
static int b64_first_string(const json_t *b64, char **s, size_t *slen) {
  unsigned char *raw;
  size_t n;
  int rv = tp_base64_decode(json_string_value(b64), json_string_length(b64), &raw, &n);
  if (rv) return rv == TP_ENOMEM ? rv : 1;
  rv = 1;
  if (n >= 4) {
    size_t el = (size_t)raw[0] | (size_t)raw[1] << 8 | (size_t)raw[2] << 16 | (size_t)raw[3] << 24;
    /* The prompt travels on as a C string: no NUL inside. */
    if (el <= n - 4 && !memchr(raw + 4, 0, el)) {
      *s = tp_strndup((const char *)raw + 4, el);
      *slen = el;
      rv = *s ? 0 : TP_ENOMEM;
    }
  }
  free(raw);
  return rv;
}

static bool name_says_prompt(const char *name) {
  char low[64];
  size_t i = 0;
  for (; name[i] && i < sizeof(low) - 1; i++) low[i] = (char)tolower((unsigned char)name[i]);
  low[i] = 0;
  return strstr(low, "prompt") || strstr(low, "text") || strstr(low, "input");
}

static const char *const pa_max_keys[] = {"max_tokens", "request_output_len", "max_new_tokens"};

/* max_tokens of one entry, or -1.  Returns 0 or TP_EINVAL. */
static int pa_max_tokens(const json_t *entry, const char *name, size_t idx, int64_t *out, char *err,
                         size_t errlen) {
  *out = -1;
  for (size_t k = 0; k < TP_ARRAY_LEN(pa_max_keys); k++) {
    json_t *v = json_object_get(entry, pa_max_keys[k]);
    if (!v) continue;
    const json_t *first, *b64;
    if (!input_values(v, &first, &b64) || b64 || !json_is_integer(first) || json_integer_value(first) <= 0) {
      tp_seterr(err, errlen, "%s: data[%zu]: input \"%s\": expected a list holding one positive integer, "
                "like [256] or {\"content\": [256], \"shape\": [1]}",
                name, idx, pa_max_keys[k]);
      return TP_EINVAL;
    }
    *out = json_integer_value(first);
    return 0;
  }
  /* The vLLM backend: a JSON string of sampling parameters. */
  json_t *sp = json_object_get(entry, "sampling_parameters");
  if (!sp) return 0;
  const json_t *first, *b64;
  json_t *params = NULL;
  if (input_values(sp, &first, &b64) && json_is_string(first))
    params = json_loadb(json_string_value(first), json_string_length(first), 0, NULL);
  json_t *mt = json_object_get(params, "max_tokens");
  int rv = 0;
  if (!json_is_object(params) || (mt && !json_is_null(mt) && (!json_is_integer(mt) || json_integer_value(mt) <= 0))) {
    tp_seterr(err, errlen, "%s: data[%zu]: input \"sampling_parameters\": expected a list holding one JSON "
              "object string, like [\"{\\\"max_tokens\\\": 256}\"], whose max_tokens is a positive integer",
              name, idx);
    rv = TP_EINVAL;
  } else if (json_is_integer(mt)) {
    *out = json_integer_value(mt);
  }
  json_decref(params);
  return rv;
}

/* Adds to `unused` the input names that are neither prompt nor length, once. */
static void note_unused(json_t *unused, const json_t *entry, const char *prompt_name) {
  const char *key;
  json_t *v;
  json_object_foreach((json_t *)entry, key, v) {
    bool used = strcmp(key, prompt_name) == 0 || strcmp(key, "sampling_parameters") == 0;
    for (size_t k = 0; k < TP_ARRAY_LEN(pa_max_keys); k++) used |= strcmp(key, pa_max_keys[k]) == 0;
    if (!used) json_object_set_new(unused, key, json_true());
  }
}

/* An entry must be an object whose every input has one of
 * perf_analyzer's forms. */
static int pa_check_entry(const json_t *entry, const char *name, size_t idx, char *err, size_t errlen) {
  if (json_is_array(entry)) {
    tp_seterr(err, errlen, "%s: data[%zu]: a list of steps (perf_analyzer's sequence data) is not supported; "
              "expected an object mapping input names to values",
              name, idx);
    return TP_EINVAL;
  }
  if (!json_is_object(entry)) {
    tp_seterr(err, errlen, "%s: data[%zu]: expected an object mapping input names to values, like "
              "{\"text_input\": [\"...\"], \"max_tokens\": [256]}",
              name, idx);
    return TP_EINVAL;
  }
  const char *key;
  json_t *v;
  /* Every input must have one of perf_analyzer's forms, even those not used. */
  json_object_foreach((json_t *)entry, key, v) {
    const json_t *first, *b64;
    if (!input_values(v, &first, &b64)) {
      tp_seterr(err, errlen, "%s: data[%zu]: input \"%s\": expected a list of values, {\"content\": [...], "
                "\"shape\": [...]} or {\"b64\": \"...\"}",
                name, idx, key);
      return TP_EINVAL;
    }
  }
  return 0;
}

/* The prompt input's name, its values in *first / *b64; NULL when none. */
static const char *pa_prompt_key(const json_t *entry, const json_t **first, const json_t **b64) {
  /* The prompt: the names the TRT-LLM and vLLM models use, then any input
   * named like one that holds a string. */
  const char *pkey = NULL;
  const char *key;
  json_t *v;
  const char *named[] = {"text_input", "PROMPT"};
  for (size_t k = 0; k < 2 && !pkey; k++) {
    json_t *pv = json_object_get(entry, named[k]);
    if (pv) {
      pkey = named[k];
      input_values(pv, first, b64);
    }
  }
  if (!pkey) {
    json_object_foreach((json_t *)entry, key, v) {
      input_values(v, first, b64);
      if (name_says_prompt(key) && (*b64 || json_is_string(*first))) {
        pkey = key;
        break;
      }
    }
  }
  return pkey;
}

/* perf_analyzer's OpenAI form: {"payload": [BODY]}, BODY a request body of
 * the chat ("messages") or completions ("prompt") API.  The prompt, the
 * messages and max_tokens are taken; the body's other fields are said in
 * the note, since tokperf builds the rest of the body from its options. */
static int pa_payload_entry(tp_dataset *ds, const char *name, size_t idx, const json_t *entry, json_t *unused,
                            char *err, size_t errlen) {
  const json_t *pl = json_object_get(entry, "payload");
  const json_t *body = json_is_array(pl) && json_array_size(pl) == 1 ? json_array_get(pl, 0) : NULL;
  if (json_object_get(entry, "session_id") || json_object_get(entry, "delay")) {
    tp_seterr(err, errlen,
              "%s: data[%zu]: perf_analyzer's sessions (\"session_id\", \"delay\") are not read "
              "here: write them as a conversations file (docs/sessions.md)",
              name, idx);
    return TP_EINVAL;
  }
  const json_t *msgs = json_object_get(body, "messages"), *prompt = json_object_get(body, "prompt");
  const json_t *mt = json_object_get(body, "max_tokens");
  if (!mt) mt = json_object_get(body, "max_completion_tokens");
  tp_buf b;
  tp_buf_init(&b);
  bool ok =
      json_is_object(body) && (json_is_string(prompt) || (json_is_array(msgs) && json_array_size(msgs)));
  size_t i;
  const json_t *m;
  if (ok && !prompt) {
    json_array_foreach(msgs, i, m) {
      const json_t *c = json_object_get(m, "content");
      if (!json_is_string(json_object_get(m, "role")) || !json_is_string(c)) {
        ok = false;
        break;
      }
      if ((i && tp_buf_append(&b, "\n", 1)) ||
          tp_buf_append(&b, json_string_value(c), json_string_length(c))) {
        tp_buf_fini(&b);
        return TP_ENOMEM;
      }
    }
  } else if (ok && tp_buf_append(&b, json_string_value(prompt), json_string_length(prompt))) {
    tp_buf_fini(&b);
    return TP_ENOMEM;
  }
  if (ok && mt && (!json_is_integer(mt) || json_integer_value(mt) <= 0)) ok = false;
  if (!ok) {
    tp_buf_fini(&b);
    tp_seterr(err, errlen,
              "%s: data[%zu]: \"payload\": expected a list holding one request body with "
              "\"messages\" ({\"role\", \"content\"} strings) or a \"prompt\" string, and a positive "
              "\"max_tokens\" if any",
              name, idx);
    return TP_EINVAL;
  }
  tp_prompt p;
  memset(&p, 0, sizeof(p));
  p.input_tokens = -1;
  p.max_tokens = mt ? json_integer_value(mt) : -1;
  p.text_len = b.len;
  p.text = tp_strndup(b.len ? (const char *)b.data : "", b.len);
  tp_buf_fini(&b);
  if (!p.text || (!prompt && !(p.messages = json_dumps(msgs, JSON_COMPACT)))) {
    free(p.text);
    return TP_ENOMEM;
  }
  const char *key;
  json_t *v;
  json_object_foreach((json_t *)body, key, v) {
    static const char *const taken[] = {"messages", "prompt", "max_tokens", "max_completion_tokens",
                                        "model",    "stream"};
    bool used = false;
    for (size_t k = 0; k < TP_ARRAY_LEN(taken); k++) used |= strcmp(key, taken[k]) == 0;
    char full[128];
    snprintf(full, sizeof(full), "payload.%s", key);
    if (!used) json_object_set_new(unused, full, json_true());
  }
  int rv = tp__dataset_push(ds, &p);
  if (rv) {
    free(p.text);
    free(p.messages);
  }
  return rv;
}

static int pa_entry(tp_dataset *ds, const char *name, size_t idx, const json_t *entry, json_t *unused,
                    char *err, size_t errlen) {
  if (json_is_object(entry) && json_object_get(entry, "payload"))
    return pa_payload_entry(ds, name, idx, entry, unused, err, errlen);
  int rv = pa_check_entry(entry, name, idx, err, errlen);
  if (rv) return rv;
  const json_t *first = NULL, *b64 = NULL;
  const char *pkey = pa_prompt_key(entry, &first, &b64);
  if (!pkey) {
    tp_seterr(err, errlen, "%s: data[%zu]: no prompt: expected a BYTES input \"text_input\" or \"PROMPT\" "
              "holding a string, like {\"text_input\": [\"Hello\"]}",
              name, idx);
    return TP_EINVAL;
  }
  tp_prompt p;
  memset(&p, 0, sizeof(p));
  p.input_tokens = -1;
  if (b64) {
    rv = b64_first_string(b64, &p.text, &p.text_len);
    if (rv == TP_ENOMEM) return rv;
    if (rv) {
      tp_seterr(err, errlen, "%s: data[%zu]: input \"%s\": \"b64\" must be base64 of a BYTES tensor "
                "(a 4-byte little-endian length, then that many bytes, no NUL)",
                name, idx, pkey);
      return TP_EINVAL;
    }
  } else if (json_is_string(first)) {
    p.text_len = json_string_length(first);
    p.text = tp_strndup(json_string_value(first), p.text_len);
    if (!p.text) return TP_ENOMEM;
  } else {
    tp_seterr(err, errlen, "%s: data[%zu]: input \"%s\": expected a list holding the prompt string", name, idx,
              pkey);
    return TP_EINVAL;
  }
  rv = pa_max_tokens(entry, name, idx, &p.max_tokens, err, errlen);
  if (!rv && !(p.inputs = json_dumps(entry, JSON_COMPACT))) rv = TP_ENOMEM;
  if (!rv) {
    note_unused(unused, entry, pkey);
    rv = tp__dataset_push(ds, &p);
  }
  if (rv) {
    free(p.text);
    free(p.inputs);
  }
  return rv;
}

int tp__dataset_perf_analyzer(tp_dataset *ds, const char *name, const json_t *root, char *err,
                              size_t errlen) {
  ds->format = "perf_analyzer";
  json_t *data = json_object_get(root, "data");
  if (!json_is_array(data) || json_array_size(data) == 0) {
    tp_seterr(err, errlen, "%s: perf_analyzer input data: \"data\" must be a non-empty list of entries like "
              "{\"text_input\": [\"...\"], \"max_tokens\": [256]}",
              name);
    return TP_EINVAL;
  }
  json_t *unused = json_object();
  if (!unused) return TP_ENOMEM;
  size_t i;
  json_t *e;
  int rv = 0;
  json_array_foreach(data, i, e) {
    if ((rv = pa_entry(ds, name, i, e, unused, err, errlen))) break;
  }
  if (rv == TP_ENOMEM) tp_seterr(err, errlen, "%s: out of memory", name);
  if (!rv && json_object_size(unused)) {
    int n = snprintf(ds->note, sizeof(ds->note), "%s: inputs not sent as given (tokperf sets them from its "
                     "options):", name);
    const char *key;
    json_t *v;
    json_object_foreach(unused, key, v) {
      if (n < 0 || (size_t)n >= sizeof(ds->note)) break;
      n += snprintf(ds->note + n, sizeof(ds->note) - (size_t)n, " %s", key);
    }
  }
  json_decref(unused);
  mask_controls(ds->note);
  if (rv) mask_controls(err);
  return rv;
}

/* ---- ShareGPT ---------------------------------------------------------------- */

static bool is_from(const json_t *turn, const char *const *names, size_t n) {
  const char *from = json_string_value(json_object_get(turn, "from"));
  for (size_t k = 0; from && k < n; k++)
    if (strcmp(from, names[k]) == 0) return true;
  return false;
}

int tp__dataset_sharegpt(tp_dataset *ds, const char *name, const json_t *root, char *err, size_t errlen) {
  static const char *const human[] = {"human", "user"};
  static const char *const gpt[] = {"gpt", "assistant", "chatgpt", "bard", "bing"};
  ds->format = "sharegpt";
  ds->max_tokens_from_reference = true;
  if (!json_is_array(root)) {
    tp_seterr(err, errlen, "%s: ShareGPT: expected a list of {\"conversations\": [...]} entries", name);
    return TP_EINVAL;
  }
  size_t i, skipped = 0;
  json_t *e;
  json_array_foreach(root, i, e) {
    json_t *conv = json_object_get(e, "conversations");
    if (!json_is_object(e) || !json_is_array(conv)) {
      tp_seterr(err, errlen, "%s: [%zu]: expected an object with a \"conversations\" list of {\"from\", "
                "\"value\"} turns",
                name, i);
      return TP_EINVAL;
    }
    size_t t;
    json_t *turn;
    json_array_foreach(conv, t, turn) {
      if (!json_is_object(turn) || !json_is_string(json_object_get(turn, "from")) ||
          !json_is_string(json_object_get(turn, "value"))) {
        tp_seterr(err, errlen, "%s: [%zu].conversations[%zu]: expected {\"from\": \"human\"|\"gpt\", \"value\": "
                  "\"...\"}",
                  name, i, t);
        return TP_EINVAL;
      }
    }
    const json_t *q = NULL, *a = NULL;
    json_array_foreach(conv, t, turn) {
      if (!q && is_from(turn, human, TP_ARRAY_LEN(human))) q = turn;
      else if (q && !a && is_from(turn, gpt, TP_ARRAY_LEN(gpt))) a = turn;
    }
    if (json_array_size(conv) < 2 || !q || !a) {
      skipped++;
      continue;
    }
    json_t *qv = json_object_get(q, "value"), *av = json_object_get(a, "value");
    tp_prompt p;
    memset(&p, 0, sizeof(p));
    p.input_tokens = -1;
    p.max_tokens = -1;
    p.text_len = json_string_length(qv);
    p.text = tp_strndup(json_string_value(qv), p.text_len);
    p.reference = tp_strndup(json_string_value(av), json_string_length(av));
    if (!p.text || !p.reference || tp__dataset_push(ds, &p)) {
      free(p.text);
      free(p.reference);
      tp_seterr(err, errlen, "%s: out of memory", name);
      return TP_ENOMEM;
    }
  }
  if (ds->n == 0) {
    tp_seterr(err, errlen, "%s: ShareGPT: no entry has a human turn followed by a gpt turn (%zu entries)", name,
              json_array_size(root));
    return TP_EINVAL;
  }
  if (skipped)
    snprintf(ds->note, sizeof(ds->note), "%s: %zu of %zu ShareGPT entries skipped (fewer than two turns, or no "
             "human turn followed by a gpt turn)",
             name, skipped, json_array_size(root));
  return 0;
}

/* ---- detection ------------------------------------------------------------- */

int tp__dataset_parse_any(tp_dataset *ds, const char *name, const char *data, size_t len, char *err,
                          size_t errlen) {
  const char *p = data;
  size_t n = len;
  if (n >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0) {
    p += 3;
    n -= 3;
  }
  if (tp__dataset_is_sessions(p, n)) return tp__dataset_sessions(ds, name, data, len, err, errlen);
  size_t i = 0;
  while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n')) i++;
  if (i == n || (p[i] != '{' && p[i] != '[')) return tp__dataset_parse_buffer(ds, name, data, len, err, errlen);

  /* One JSON value over the whole document?  A JSONL file of two or more
   * objects is not; a one-line JSONL file is, and is told apart below. */
  json_error_t je;
  json_t *root = json_loadb(p, n, 0, &je);
  bool pa = json_is_object(root) && json_is_array(json_object_get(root, "data"));
  const json_t *e0 = json_array_get(root, 0);
  bool sharegpt = json_is_array(root) && json_object_get(e0, "conversations");
  if (!root && p[i] == '{' && memchr(p, '\n', n)) {
    /* Not one value.  When the first line is not a JSON value either, the
     * file is a pretty-printed document with an error: jansson's line and
     * column over the whole file point at it. */
    const char *nl = memchr(p + i, '\n', n - i);
    json_t *line1 = json_loadb(p + i, (size_t)(nl - (p + i)), JSON_DECODE_ANY, NULL);
    json_decref(line1);
    if (!line1) {
      memset(ds, 0, sizeof(*ds));
      mask_controls(je.text);
      tp_seterr(err, errlen, "%s:%d:%d: invalid JSON: %s", name, je.line, je.column > 0 ? je.column : 1,
                je.text);
      return TP_EINVAL;
    }
  }
  if (!pa && !sharegpt) {
    /* A document that is one object over several lines but not a prompt
     * line would give a confusing "line 1" error as JSONL: say what a
     * whole-file form needs instead. */
    const char *nl = memchr(p, '\n', n);
    bool multiline = nl && (size_t)(nl - p) < n;
    if (json_is_array(root) && multiline) {
      tp_seterr(err, errlen, "%s: a JSON list, but not ShareGPT: expected [{\"conversations\": [{\"from\": "
                "\"human\", \"value\": \"...\"}, ...]}, ...] (or one JSON object per line)",
                name);
      json_decref(root);
      memset(ds, 0, sizeof(*ds));
      return TP_EINVAL;
    }
    if (json_is_object(root) && multiline && json_object_get(root, "data")) {
      json_decref(root);
      memset(ds, 0, sizeof(*ds));
      ds->source = tp_strndup(name, strlen(name));
      tp_seterr(err, errlen, "%s: perf_analyzer input data: \"data\" must be a non-empty list of entries "
                "like {\"text_input\": [\"...\"], \"max_tokens\": [256]}",
                name);
      return TP_EINVAL;
    }
    json_decref(root);
    return tp__dataset_parse_buffer(ds, name, data, len, err, errlen);
  }
  memset(ds, 0, sizeof(*ds));
  ds->source = tp_strndup(name, strlen(name));
  int rv = TP_ENOMEM;
  if (!ds->source)
    tp_seterr(err, errlen, "%s: out of memory", name);
  else
    rv = pa ? tp__dataset_perf_analyzer(ds, name, root, err, errlen)
            : tp__dataset_sharegpt(ds, name, root, err, errlen);
  json_decref(root);
  return rv;
}
