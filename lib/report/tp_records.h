/* The records file (--records; records.jsonl in an artifact directory): one
 * JSON line per request, written as each request ends.
 *
 * The file is also where a request's per-response data lives once it is
 * over.  A finished record lets go of its response times, text and
 * reasoning (tp_record_shed) after its line is written, and the exports
 * read them back from the line (tp_records_load), so memory over a long run
 * grows by one fixed-size record per request, not by every response. */
#ifndef TP_RECORDS_H
#define TP_RECORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record/tp_record.h"
#include "util/tp_common.h"
#include "tokperf/tokperf.h"

/* What a line says besides the record itself. */
typedef struct tp_records_line {
  const char *id;       /* the request id sent to the server */
  size_t level;         /* index of the level in the run */
  tp_load_mode mode;    /* "concurrency" or "request_rate" is written from it */
  uint32_t concurrency;
  double rate;
  bool with_rank;       /* a distributed run: write "rank" */
  const char *session_id; /* a session's turn (rec->session > 0): the file's session id */
  /* Whether the record counts in the level's statistics; PENDING when it
   * is not known yet as the line is written (stability windows, chosen at
   * the level's end): written false, then set by tp_records_mark_measured. */
  enum { TP_RECORD_UNMEASURED = 0, TP_RECORD_MEASURED, TP_RECORD_PENDING } measured;
  /* The run's --token-source ("auto", "client", "server"), written so that
   * a reader knows from the line alone which counts the report used; NULL =
   * not written. */
  const char *token_source;
} tp_records_line;

/* Every line begins with this key, so its value can be set in place:
 * `false` or `true ` (padded to the same width; JSON allows the space). */
#define TP_RECORDS_MEASURED_KEY "{\"measured\":"

/* Sets "measured" to true on the lines of level `level` in the records file
 * at path, from byte *from to the end, whose record measured(ctx, seq, rank)
 * says was measured; *from is moved to the end, where the next level's
 * lines begin.  Lines already written true are left alone.  The file must
 * be a regular file (all lines flushed).  Returns 0, or TP_EIO with the
 * file and the reason in err. */
int tp_records_mark_measured(const char *path, uint64_t *from, size_t level,
                             bool (*measured)(void *ctx, uint64_t seq, uint32_t rank), void *ctx, char *err,
                             size_t errlen);

/* One line of the records file as owned text (free()), without the newline;
 * NULL when out of memory.  Text that is not valid UTF-8 has each bad byte
 * replaced by U+FFFD (JSON strings must be UTF-8). */
char *tp_records_format(const tp_record *rec, const tp_records_line *line);

/* Whether rec's line gives back its text and reasoning byte for byte: both
 * valid UTF-8 without NUL bytes.  Only such records may be shed. */
bool tp_records_lossless(const tp_record *rec);

/* Reads lines of a records file back (not thread-safe; one per level or
 * run). */
typedef struct tp_records_reader tp_records_reader;

/* Opens path for reading.  Returns 0, or TP_EIO / TP_ENOMEM with "cannot
 * read back the records file PATH: reason" in err. */
int tp_records_reader_open(tp_records_reader **out, const char *path, char *err, size_t errlen);
void tp_records_reader_free(tp_records_reader *rd);

/* The whole of rec: when rec was shed (rec->line_off != 0), *full is a copy
 * of rec whose resp_ns, text and reasoning are read back from its line and
 * belong to the reader until its next call; otherwise *full is a shallow
 * copy of rec.  rd may be NULL when nothing was shed.  Returns 0, or
 * TP_EIO / TP_EPROTO / TP_ENOMEM with the file, the byte offset and what is
 * wrong in err. */
int tp_records_load(tp_records_reader *rd, const tp_record *rec, tp_record *full, char *err, size_t errlen);

/* The message of the reader's last tp_records_load when it failed, else
 * NULL. */
const char *tp_records_reader_error(const tp_records_reader *rd);

/* Internal (the reader, its tests and fuzz target): what tp_records_load
 * takes from a line.  A line is read without building it as a JSON tree:
 * at a million requests, two read-backs per record through a general JSON
 * parser were 80% of the time from the last request to the exit. */
typedef struct tp__records_fields {
  bool has_seq;      /* "seq" is an integer */
  uint64_t seq;
  bool has_resp;     /* "response_ns" is an array */
  bool resp_ints;    /* ... and all its elements are integers */
  uint64_t *resp_ns; /* its values (n_resp of them; the array grows as needed, free()) */
  size_t n_resp, cap_resp;
  bool has_at;       /* "response_text_at" is an array */
  bool at_ok;        /* ... of null or offsets as the writer writes them */
  uint32_t *text_at; /* its values as tp_record.resp_text_at holds them (n_at, free()) */
  size_t n_at, cap_at;
  tp_buf text, reasoning; /* the strings, decoded; empty when absent or not strings */
} tp__records_fields;

/* Reads line[0..n) (one JSON object, trailing white space allowed) into f,
 * whose buffers are reused from call to call.  Returns 0, TP_EPROTO when
 * the line is not one valid JSON object (or a string in it is not valid
 * UTF-8), or TP_ENOMEM.  The last of repeated keys counts, as in a JSON
 * object built from the line.  f must start zeroed; tp__records_fields_fini
 * frees it. */
int tp__records_scan(const char *line, size_t n, tp__records_fields *f);
void tp__records_fields_fini(tp__records_fields *f);

#endif
