/* Prompts: from a JSONL file, or synthetic. */
#ifndef TP_DATASET_H
#define TP_DATASET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tp_prompt {
  char *text;           /* owned, NUL-terminated */
  size_t text_len;
  char *reference;      /* the line's "output"/"reference", or NULL */
  int64_t max_tokens;   /* the line's "max_tokens", or -1 */
  int64_t input_tokens; /* counted once by the run, -1 until then */
  /* Chat messages as a compact JSON array (owned), or NULL.  `text` then
   * holds their contents joined by "\n" (no roles, no chat template): what
   * is counted, and what APIs without messages are sent. */
  char *messages;
  /* perf_analyzer: the entry's inputs as a compact JSON object (owned), or
   * NULL.  A Triton gRPC run sends these tensors as given. */
  char *inputs;
} tp_prompt;

/* A conversations file (docs/sessions.md): one session per line, each a
 * list of turns.  Each turn is also a prompt of the dataset (its user text,
 * max_tokens), in file order; a session's turns are items[first ..
 * first + turns - 1]. */
typedef struct tp_session {
  char *id;     /* owned: the line's "session_id", or "line N" */
  size_t first; /* its first turn's prompt index */
  uint32_t turns;
} tp_session;

/* Per turn (parallel to items in a conversations file). */
typedef struct tp_turn {
  uint64_t delay_ms; /* think time before this turn (after the previous turn's answer) */
  char *assistant;   /* owned: the fixed answer sent as history instead of the model's, or NULL */
} tp_turn;

typedef struct tp_dataset {
  tp_prompt *items;
  size_t n;
  char *source; /* file path, or "synthetic" */
  const char *format; /* the detected form (static): "jsonl", "perf_analyzer", "sharegpt"... */
  /* ShareGPT: the reference is the first answer, and its token count is
   * the request's max_tokens when the run has a tokenizer (as vLLM's
   * benchmark does). */
  bool max_tokens_from_reference;
  /* Fields the file holds that tokperf reads but does not use, said once
   * on stderr by the caller ("" = nothing to say). */
  char note[320];
  /* A conversations file: its sessions, and per item its turn (both NULL
   * and 0 otherwise). */
  tp_session *sessions;
  size_t n_sessions;
  tp_turn *turns;
} tp_dataset;

/* Reads JSON Lines: one object per line with the prompt under "text_input",
 * "input", "prompt" or "text" (first found wins, must be a string), an
 * optional "output" or "reference" string, and an optional positive
 * integer "max_tokens".  Blank lines are skipped.  On a bad line returns
 * TP_EINVAL with a message "FILE:LINE:COLUMN: what is wrong (what is
 * expected)"; a missing file gives TP_ENOTFOUND, a read error TP_EIO, an
 * empty file TP_EINVAL.  The dataset must be freed even on failure. */
int tp_dataset_load_jsonl(tp_dataset *ds, const char *path, char *err, size_t errlen);

/* Reads an input file in any of the forms other tools take, told apart by
 * content (docs/inputs.md):
 * - tokperf's JSONL (above), whose lines may also be OpenAI chat lines
 *   {"messages": [{"role", "content"}...], "max_tokens"} or AIPerf
 *   single_turn lines {"text" | "texts", "output_length", "timestamp",
 *   "delay"};
 * - perf_analyzer's input data, a JSON object {"data": [{INPUT: VALUE}...]};
 * - a ShareGPT JSON array [{"conversations": [{"from", "value"}...]}...].
 * - a conversations file (JSONL whose first line has a "turns" list:
 *   tokperf's sessions and AIPerf's multi_turn, docs/sessions.md).
 * Errors name the file and the line or the JSON path of the entry. */
int tp_dataset_load(tp_dataset *ds, const char *path, char *err, size_t errlen);

/* Makes n synthetic prompts of about `words` words each from a fixed word
 * list, reproducible from seed. */
int tp_dataset_synthetic(tp_dataset *ds, size_t n, size_t words, uint64_t seed);

void tp_dataset_free(tp_dataset *ds);

#endif
