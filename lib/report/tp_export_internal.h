/* What the export writers share inside report/: the helpers of
 * tp_export_util.c, perf_analyzer's streamed experiment (tp_export_pa.c)
 * and the registry walk of the tools' summaries (tp_export_summary.c).
 * Not part of tp_export.h, whose readers are the run and the tests. */
#ifndef TP_EXPORT_INTERNAL_H
#define TP_EXPORT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "tp_export.h"

/* Where a writer spills its buffer as it goes, so that a level of millions
 * of requests never sits whole in memory; NULL = keep it all in the
 * buffer (the public writers). */
typedef struct tp__sink {
  int fd;   /* >= 0: write here */
  FILE *fp; /* else here */
} tp__sink;

#define TP__SPILL_BYTES (1u << 20)

/* Writes out's bytes to the sink once they reach TP__SPILL_BYTES and
 * empties out; with k NULL keeps them all.  Returns 0 or TP_EIO. */
int tp__sink_spill(tp_buf *out, const tp__sink *k);

/* Writes all n bytes, retrying on EINTR.  Returns 0 or -1 with errno. */
int tp__write_all(int fd, const void *data, size_t n);
/* Opens a new temporary file next to the file path names (its symbolic
 * links followed).  Returns the fd and the owned name in *tmp_out, or -1
 * with errno set.  A target that is not a regular file (a FIFO, a
 * character device) is opened to be written in place: its own fd, and
 * *tmp_out NULL. */
int tp__open_temp(const char *path, char **tmp_out);
/* fsync, close and rename tmp over the file it was made beside (a NULL
 * tmp: close only); on failure removes tmp.  Returns 0 or -1 with errno
 * set. */
int tp__commit_temp(int fd, const char *tmp, const char *path);
/* Gives up a temporary: closes fd and removes tmp (if any); errno kept. */
void tp__discard_temp(int fd, const char *tmp);
/* mkdir -p.  Returns 0 or -1 with errno set. */
int tp__make_dirs(const char *path);
/* dir "/" name, owned (free()); NULL when out of memory. */
char *tp__join_path(const char *dir, const char *name);

/* v in decimal, without printf (a level of a million requests writes
 * millions of times and counts).  Returns 0 or TP_ENOMEM. */
int tp__json_u64(tp_buf *out, uint64_t v);

/* s as a JSON string with its quotes.  Returns 0 or TP_ENOMEM. */
int tp__json_str(tp_buf *out, const char *s, size_t len);
/* The text q sent (its head pieces, then the prompt) as one JSON string. */
int tp__json_sent(tp_buf *out, const tp_export_request *q);

/* The record's text ("" when none) and its length. */
const char *tp__rec_text(const tp_record *r, size_t *len);
/* The whole record of q, read back from the records file when the run let
 * go of its response times and text. */
int tp__whole(const tp_export_request *q, tp_record *full);
/* A measured request: not warm-up. */
bool tp__measured(const tp_export_request *q);

/* perf_analyzer's experiment of one level, spilled to sk as it grows (NULL
 * = kept in out); see tp_export_pa_experiment. */
int tp__pa_experiment(tp_buf *out, const tp__sink *sk, const tp_export_level *lv, const tp_config *cfg,
                      uint32_t default_max_tokens, uint64_t anchor_mono_ns, uint64_t anchor_wall_ns);

/* One response's own text: len bytes at text, from the record's text or,
 * when reasoning, its reasoning. */
typedef struct tp__piece {
  const char *text;
  size_t len;
  bool reasoning;
} tp__piece;

/* Response i's piece of r (tp_record.resp_text_at): from where it starts
 * to where the next piece of the same buffer starts, or with cumulative
 * (each response held all text so far) from the buffer's start, both
 * moved back to a UTF-8 character's first byte.  Returns 1 when the
 * response carried text, 0 when not or when r keeps no offsets (*pc is
 * then empty). */
int tp__pa_piece(const tp_record *r, uint32_t i, bool cumulative, tp__piece *pc);

/* What an OpenAI server sent as response i of r, carrying pc, as
 * perf_analyzer records it: streamed, "data: " CHUNK "\n\n" (the last
 * followed by "data: [DONE]\n\n"), else the body; cfg gives the API
 * (chat or completions), streaming and the model.  created_s: the chunk's
 * "created".  Appended to o; returns 0, TP_ENOMEM, or TP_EINVAL for a
 * service that is not OpenAI's. */
int tp__pa_openai_payload(tp_buf *o, const tp_config *cfg, const tp_record *r, uint64_t created_s, uint32_t i,
                          const tp__piece *pc);

/* AIPerf's per-record lines of one level, spilled to sk as they grow (NULL
 * = kept in out); see tp_export_aiperf_records. */
int tp__aiperf_records(tp_buf *out, const tp__sink *sk, const tp_export_level *lv, bool streaming,
                       uint64_t anchor_mono_ns, uint64_t anchor_wall_ns);

/* The figures of one level as tool writes them, walking the metric
 * registry (tp_export_summary.c): an object with one member per exported
 * row; NULL when out of memory.  The CSV is appended to out. */
/* What GenAI-Perf and perf_analyzer call the run's API: service kind
 * ("triton" or "openai"), endpoint path ("v1/chat/completions", "" for
 * KServe gRPC) and endpoint type ("kserve", "chat", "completions",
 * "generate"); the run's own --endpoint wins. */
typedef struct tp__tool_api {
  const char *service_kind, *endpoint, *endpoint_type;
} tp__tool_api;
tp__tool_api tp__tool_api_of(const tp_config *cfg);

json_t *tp__summary_json(const tp_level_result *lr, tp_export_tool tool, bool streaming);
int tp__summary_csv(tp_buf *out, const tp_level_result *lr, tp_export_tool tool, bool streaming);

#endif
