/* Prompts: a JSONL loader and a synthetic generator.
 *
 * Choices the header leaves open, made here:
 * - A line is blank when it holds only JSON whitespace (space, tab, CR);
 *   blank lines are skipped but still counted, so line numbers in messages
 *   match what an editor shows.
 * - The first key of "text_input", "input", "prompt", "text" that is
 *   present decides; if it holds anything but a string the line is
 *   refused rather than falling through to the next key, so a typo in the
 *   data cannot silently pick another field.
 * - A JSON null under "output", "reference" or "max_tokens" counts as
 *   absent (data exported from data frames writes null for missing
 *   values).  Other wrong types are errors.
 * - An empty prompt string is accepted: the server decides what it means.
 * - Strings holding \u0000 are refused (jansson's default), because the
 *   prompt travels on as a C string in places.
 * - Column numbers are jansson's: characters, not bytes, counted from 1 on
 *   the line (after a byte order mark on line 1). */
#include "tp_dataset.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "dataset/tp_dataset_line.h"
#include "util/tp_common.h"
#include "util/tp_words.h"

static const char *const prompt_keys[] = {"text_input", "input", "prompt", "text"};

static bool is_json_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

static const char *json_type_name(const json_t *j) {
  switch (json_typeof(j)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
  }
  return "a value";
}

/* jansson quotes the offending input in its text; control bytes from a
 * binary file would reach the user's terminal, so they are masked. */
static void mask_controls(char *s) {
  for (; *s; s++)
    if ((unsigned char)*s < 0x20 || *s == 0x7f) *s = '?';
}

/* Fields of other tools' files that tokperf reads past: bit flags that
 * parse_buffer gathers into the data set's note. */
enum { IGN_TIMESTAMP = 1, IGN_DELAY = 2 };

/* Appends the text of a chat message's content: a string, or a list of
 * parts of which the "text" ones count (an image part has no text to
 * count).  null (an assistant turn that only called tools) adds nothing.
 * Returns 0, 1 for a content of another form, or TP_ENOMEM. */
static int append_content(tp_buf *b, const json_t *content) {
  if (json_is_null(content)) return 0;
  if (json_is_string(content))
    return tp_buf_append(b, json_string_value(content), json_string_length(content)) ? TP_ENOMEM : 0;
  if (!json_is_array(content)) return 1;
  size_t i;
  json_t *part;
  bool first = true;
  json_array_foreach(content, i, part) {
    if (!json_is_object(part)) return 1;
    json_t *t = json_object_get(part, "text");
    if (!t) continue;
    if (!json_is_string(t)) return 1;
    if ((!first && tp_buf_append(b, "\n", 1)) || tp_buf_append(b, json_string_value(t), json_string_length(t)))
      return TP_ENOMEM;
    first = false;
  }
  return 0;
}

/* Checks an OpenAI "messages" array and joins its text into b.  Returns 0,
 * TP_EINVAL with the message, or TP_ENOMEM. */
static int read_messages(const json_t *msgs, tp_buf *b, const char *file, size_t lineno, char *err,
                         size_t errlen) {
  if (!json_is_array(msgs) || json_array_size(msgs) == 0) {
    tp_seterr(err, errlen, "%s:%zu: \"messages\" must be a non-empty list of {\"role\", \"content\"} objects",
              file, lineno);
    return TP_EINVAL;
  }
  size_t i;
  json_t *m;
  json_array_foreach(msgs, i, m) {
    json_t *role = json_object_get(m, "role");
    int rv = json_is_object(m) && json_is_string(role) ? 0 : 1;
    if (!rv && i && tp_buf_append(b, "\n", 1)) return TP_ENOMEM;
    if (!rv) rv = append_content(b, json_object_get(m, "content"));
    if (rv == TP_ENOMEM) return rv;
    if (rv) {
      tp_seterr(err, errlen,
                "%s:%zu: \"messages\"[%zu]: expected {\"role\": \"...\", \"content\": \"...\"} (content a "
                "string, a list of {\"type\": \"text\", \"text\": \"...\"} parts, or null)",
                file, lineno, i);
      return TP_EINVAL;
    }
  }
  return 0;
}

/* AIPerf's "texts": a non-empty list of strings, joined by "\n". */
static int read_texts(const json_t *texts, tp_buf *b, const char *file, size_t lineno, char *err,
                      size_t errlen) {
  size_t i;
  json_t *t;
  bool ok = json_is_array(texts) && json_array_size(texts) > 0;
  if (ok) {
    json_array_foreach(texts, i, t) {
      if (!json_is_string(t)) {
        ok = false;
        break;
      }
      if ((i && tp_buf_append(b, "\n", 1)) || tp_buf_append(b, json_string_value(t), json_string_length(t)))
        return TP_ENOMEM;
    }
  }
  if (!ok) {
    tp_seterr(err, errlen, "%s:%zu: \"texts\" must be a non-empty list of strings", file, lineno);
    return TP_EINVAL;
  }
  return 0;
}

/* The line's prompt: a string under one of prompt_keys (*prompt), or
 * else chat "messages" or AIPerf "texts" joined into joined. */
static int find_prompt(json_t *root, tp_buf *joined, const char *file, size_t lineno, json_t **prompt_out,
                       json_t **jmsgs_out, json_t **jtexts_out, char *err, size_t errlen) {
  json_t *prompt = NULL;
  const char *prompt_key = NULL;
  for (size_t k = 0; k < TP_ARRAY_LEN(prompt_keys) && !prompt; k++) {
    prompt = json_object_get(root, prompt_keys[k]);
    prompt_key = prompt_keys[k];
  }
  /* Other tools' prompt fields, read only when none of tokperf's own is
   * there: OpenAI chat "messages" and AIPerf's "texts". */
  json_t *jmsgs = prompt ? NULL : json_object_get(root, "messages");
  json_t *jtexts = prompt || jmsgs ? NULL : json_object_get(root, "texts");
  *prompt_out = prompt, *jmsgs_out = jmsgs, *jtexts_out = jtexts;
  if (jmsgs || jtexts)
    return jmsgs ? read_messages(jmsgs, joined, file, lineno, err, errlen)
                 : read_texts(jtexts, joined, file, lineno, err, errlen);
  if (prompt && json_is_string(prompt)) return 0;
  if (prompt)
    tp_seterr(err, errlen,
              "%s:%zu: no prompt: expected a string under \"text_input\", \"input\", "
              "\"prompt\" or \"text\" (\"%s\" holds %s)",
              file, lineno, prompt_key, json_type_name(prompt));
  else
    tp_seterr(err, errlen,
              "%s:%zu: no prompt: expected a string under \"text_input\", \"input\", "
              "\"prompt\" or \"text\", a list of chat \"messages\", or AIPerf's \"texts\"",
              file, lineno);
  return TP_EINVAL;
}

/* The line's reference output and its max_tokens (-1: not given). */
static int read_ref_max(json_t *root, const char *file, size_t lineno, json_t **jref_out, int64_t *max_tokens,
                        char *err, size_t errlen) {
  const char *ref_key = "output";
  json_t *jref = json_object_get(root, ref_key);
  if (!jref || json_is_null(jref)) jref = json_object_get(root, ref_key = "reference");
  *jref_out = jref;
  if (jref && !json_is_null(jref) && !json_is_string(jref)) {
    tp_seterr(err, errlen, "%s:%zu: \"%s\" must be a string (found %s)", file, lineno, ref_key,
              json_type_name(jref));
    return TP_EINVAL;
  }

  /* AIPerf calls it output_length, vLLM output_tokens; OpenAI and tokperf max_tokens. */
  *max_tokens = -1;
  const char *max_key = "max_tokens";
  json_t *jmax = json_object_get(root, max_key);
  if (!jmax || json_is_null(jmax)) jmax = json_object_get(root, max_key = "output_length");
  /* vLLM's custom dataset calls it output_tokens. */
  if (!jmax || json_is_null(jmax)) jmax = json_object_get(root, max_key = "output_tokens");
  if (jmax && !json_is_null(jmax)) {
    if (!json_is_integer(jmax) || json_integer_value(jmax) <= 0) {
      tp_seterr(err, errlen, "%s:%zu: \"%s\" must be a positive integer", file, lineno, max_key);
      return TP_EINVAL;
    }
    *max_tokens = (int64_t)json_integer_value(jmax);
  }
  return 0;
}

static int parse_line_ex(const char *line, size_t len, const char *file, size_t lineno, tp_prompt *out,
                         bool *blank, unsigned *ignored, char *err, size_t errlen) {
  if (len && line[len - 1] == '\r') len--;
  size_t i = 0;
  while (i < len && is_json_space(line[i])) i++;
  *blank = i == len;
  if (*blank) return 0;

  json_error_t jerr;
  /* JSON_DECODE_ANY so that a line holding a scalar or an array gets the
   * clearer "expected a JSON object" rather than jansson's token error. */
  json_t *root = json_loadb(line, len, JSON_DECODE_ANY, &jerr);
  if (!root) {
    mask_controls(jerr.text);
    /* jansson names its own flag here; say what it means for a prompt. */
    const char *why = strstr(jerr.text, "JSON_ALLOW_NUL") ? "\\u0000 is not allowed in prompts"
                                                          : jerr.text;
    tp_seterr(err, errlen, "%s:%zu:%d: invalid JSON: %s", file, lineno,
              jerr.column > 0 ? jerr.column : 1, why);
    return TP_EINVAL;
  }
  int rv = TP_EINVAL;
  char *text = NULL, *ref = NULL, *msgs = NULL;
  size_t text_len = 0;
  tp_buf joined;
  tp_buf_init(&joined);
  if (!json_is_object(root)) {
    tp_seterr(err, errlen, "%s:%zu: expected a JSON object (found %s)", file, lineno,
              json_type_name(root));
    goto out;
  }

  json_t *prompt, *jmsgs, *jtexts, *jref;
  int64_t max_tokens;
  if ((rv = find_prompt(root, &joined, file, lineno, &prompt, &jmsgs, &jtexts, err, errlen)) ||
      (rv = read_ref_max(root, file, lineno, &jref, &max_tokens, err, errlen)))
    goto out;
  if (json_object_get(root, "timestamp")) *ignored |= IGN_TIMESTAMP;
  if (json_object_get(root, "delay")) *ignored |= IGN_DELAY;

  rv = TP_ENOMEM;
  if (jmsgs || jtexts) {
    /* An empty buffer is stolen without its terminating NUL written. */
    text = tp_buf_steal(&joined, &text_len);
    if (!text) goto out;
    text[text_len] = 0;
    if (jmsgs && !(msgs = json_dumps(jmsgs, JSON_COMPACT))) goto out;
  } else {
    text_len = json_string_length(prompt);
    text = tp_strndup(json_string_value(prompt), text_len);
  }
  if (!text) goto out;
  if (jref && json_is_string(jref)) {
    ref = tp_strndup(json_string_value(jref), json_string_length(jref));
    if (!ref) goto out;
  }
  out->text = text;
  out->text_len = text_len;
  out->reference = ref;
  out->max_tokens = max_tokens;
  out->input_tokens = -1;
  out->messages = msgs;
  out->inputs = NULL;
  text = ref = msgs = NULL;
  rv = 0;

out:
  if (rv == TP_ENOMEM) tp_seterr(err, errlen, "%s:%zu: out of memory", file, lineno);
  free(text);
  free(ref);
  free(msgs);
  tp_buf_fini(&joined);
  json_decref(root);
  return rv;
}

int tp__dataset_parse_line(const char *line, size_t len, const char *file, size_t lineno,
                           tp_prompt *out, bool *blank, char *err, size_t errlen) {
  unsigned ignored = 0;
  return parse_line_ex(line, len, file, lineno, out, blank, &ignored, err, errlen);
}

int tp__dataset_push(tp_dataset *ds, const tp_prompt *p) {
  /* Items only ever come through here, so the capacity follows from n:
   * 64, then doubling. */
  size_t n = ds->n;
  if (n == 0 || (n >= 64 && (n & (n - 1)) == 0)) {
    size_t ncap = n ? n * 2 : 64;
    if (ncap > SIZE_MAX / sizeof(tp_prompt)) return TP_ENOMEM;
    tp_prompt *items = realloc(ds->items, ncap * sizeof(*items));
    if (!items) return TP_ENOMEM;
    ds->items = items;
  }
  ds->items[ds->n++] = *p;
  return 0;
}

static void free_prompt(tp_prompt *p) {
  free(p->text);
  free(p->reference);
  free(p->messages);
  free(p->inputs);
}

int tp__dataset_parse_buffer(tp_dataset *ds, const char *name, const char *data, size_t len,
                             char *err, size_t errlen) {
  memset(ds, 0, sizeof(*ds));
  ds->source = tp_strndup(name, strlen(name));
  if (!ds->source) goto nomem;
  ds->format = "jsonl";

  /* A byte order mark is legal (if pointless) in UTF-8 and editors on
   * Windows write one; jansson would refuse it as a token. */
  if (len >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0) {
    data += 3;
    len -= 3;
  }
  size_t lineno = 0;
  unsigned ignored = 0;
  const char *p = data, *end = data + len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *eol = nl ? nl : end;
    tp_prompt prompt;
    bool blank;
    lineno++;
    int rv = parse_line_ex(p, (size_t)(eol - p), name, lineno, &prompt, &blank, &ignored, err, errlen);
    if (rv) return rv;
    if (!blank && tp__dataset_push(ds, &prompt)) {
      free_prompt(&prompt);
      goto nomem;
    }
    p = nl ? nl + 1 : end;
  }
  if (ds->n == 0) {
    tp_seterr(err, errlen, "%s: no prompts (%s)", name,
              len == 0 ? "the file is empty" : "the file holds only blank lines");
    return TP_EINVAL;
  }
  /* AIPerf's single_turn timing fields: tokperf paces by its own options
   * (or a --schedule file), so a file's times would be silently dropped. */
  if (ignored)
    snprintf(ds->note, sizeof(ds->note),
             "%s: the %s%s%s field%s of the lines %s ignored: requests are paced by --request-rate, "
             "--concurrency or --schedule",
             name, ignored & IGN_TIMESTAMP ? "\"timestamp\"" : "", ignored == 3 ? " and " : "",
             ignored & IGN_DELAY ? "\"delay\"" : "", ignored == 3 ? "s" : "", ignored == 3 ? "are" : "is");
  return 0;

nomem:
  tp_seterr(err, errlen, "%s: out of memory", name);
  return TP_ENOMEM;
}

/* Reads the whole file: prompt files are small next to the memory a run
 * uses, and parsing from memory keeps the parsers free of I/O (and
 * fuzzable). */
static int read_file(const char *path, tp_buf *buf, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    if ((errno == ENOENT || errno == ENOTDIR) && (strcmp(path, "random") == 0 || strcmp(path, "zero") == 0)) {
      tp_seterr(err, errlen, "--input-data %s (perf_analyzer's generated tensors) is not supported: without "
                "--input-file tokperf makes synthetic prompts (--synthetic-input-words, "
                "--synthetic-input-tokens-mean)",
                path);
      return TP_EINVAL;
    }
    if (errno == ENOENT || errno == ENOTDIR) {
      tp_seterr(err, errlen, "%s: no such file (check --input-file)", path);
      return TP_ENOTFOUND;
    }
    tp_seterr(err, errlen, "%s: cannot open: %s (check --input-file)", path, strerror(errno));
    return TP_EIO;
  }
  int rv = 0;
  for (;;) {
    if (tp_buf_reserve(buf, 65536)) {
      tp_seterr(err, errlen, "%s: out of memory", path);
      rv = TP_ENOMEM;
      break;
    }
    size_t got = fread(buf->data + buf->len, 1, buf->cap - buf->len - 1, f);
    buf->len += got;
    if (got == 0) {
      if (ferror(f)) {
        tp_seterr(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        rv = TP_EIO;
      }
      break;
    }
  }
  fclose(f);
  return rv;
}

static int load(tp_dataset *ds, const char *path, bool any, char *err, size_t errlen) {
  memset(ds, 0, sizeof(*ds));
  tp_buf buf;
  tp_buf_init(&buf);
  int rv = read_file(path, &buf, err, errlen);
  const char *data = buf.len ? (const char *)buf.data : "";
  if (rv == 0)
    rv = any ? tp__dataset_parse_any(ds, path, data, buf.len, err, errlen)
             : tp__dataset_parse_buffer(ds, path, data, buf.len, err, errlen);
  tp_buf_fini(&buf);
  return rv;
}

int tp_dataset_load_jsonl(tp_dataset *ds, const char *path, char *err, size_t errlen) {
  return load(ds, path, false, err, errlen);
}

int tp_dataset_load(tp_dataset *ds, const char *path, char *err, size_t errlen) {
  return load(ds, path, true, err, errlen);
}

/* splitmix64 (Steele, Lea and Flood): a tiny PRNG whose output depends only
 * on the seed, so a synthetic data set is the same on every machine. */
static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

int tp_dataset_synthetic(tp_dataset *ds, size_t n, size_t words, uint64_t seed) {
  memset(ds, 0, sizeof(*ds));
  if (n == 0 || words == 0) return TP_EINVAL;
  if (n > SIZE_MAX / sizeof(tp_prompt)) return TP_ENOMEM;
  ds->source = tp_strndup("synthetic", 9);
  ds->items = calloc(n, sizeof(tp_prompt));
  if (!ds->source || !ds->items) goto nomem;
  /* One PRNG stream across all prompts, so prompt i depends on (seed, i,
   * words) only and two prompts of one set differ. */
  uint64_t state = seed;
  tp_buf b;
  tp_buf_init(&b);
  for (size_t i = 0; i < n; i++) {
    for (size_t w = 0; w < words; w++) {
      /* tp_words_n is 256, which divides 2^64: the modulo is unbiased. */
      const char *word = tp_words[splitmix64(&state) % tp_words_n];
      if ((w && tp_buf_append(&b, " ", 1)) || tp_buf_append_str(&b, word)) {
        tp_buf_fini(&b);
        goto nomem;
      }
    }
    tp_prompt *p = &ds->items[i];
    p->text = tp_buf_steal(&b, &p->text_len);
    if (!p->text) goto nomem;
    p->reference = NULL;
    p->messages = NULL;
    p->max_tokens = -1;
    p->input_tokens = -1;
    ds->n = i + 1;
  }
  return 0;

nomem:
  return TP_ENOMEM;
}

void tp_dataset_free(tp_dataset *ds) {
  if (!ds) return;
  for (size_t i = 0; i < ds->n; i++) free_prompt(&ds->items[i]);
  for (size_t i = 0; ds->turns && i < ds->n; i++) free(ds->turns[i].assistant);
  for (size_t i = 0; i < ds->n_sessions; i++) free(ds->sessions[i].id);
  free(ds->turns);
  free(ds->sessions);
  free(ds->items);
  free(ds->source);
  memset(ds, 0, sizeof(*ds));
}
