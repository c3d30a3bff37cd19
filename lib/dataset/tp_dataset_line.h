/* The JSONL prompt parser without the file read, so the fuzz target and the
 * unit tests can drive it from memory.  Private to lib/dataset and its
 * tests. */
#ifndef TP_DATASET_LINE_H
#define TP_DATASET_LINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dataset/tp_dataset.h"

/* Parses one line of a JSONL file.  `line` (borrowed, len bytes, need not
 * be NUL-terminated) holds the line without its '\n'; a trailing '\r' is
 * ignored.  `file` and `lineno` only label messages.  On success fills
 * *out (owned strings, free them with the dataset or by hand) and sets
 * *blank to false, or sets *blank to true and leaves *out untouched when
 * the line holds only JSON whitespace.  Returns 0, TP_EINVAL with the
 * message in err ("FILE:LINE[:COL]: ..."), or TP_ENOMEM. */
int tp__dataset_parse_line(const char *line, size_t len, const char *file, size_t lineno,
                           tp_prompt *out, bool *blank, char *err, size_t errlen);

/* Parses a whole JSONL document (borrowed) into ds, which it initialises;
 * `name` (borrowed, copied into ds->source) labels messages.  Handles a
 * UTF-8 byte order mark at the start, CRLF or LF line ends, blank lines and
 * a last line without a newline.  Returns 0, TP_EINVAL (a bad line, or no
 * prompt at all) with the message in err, or TP_ENOMEM.  ds must be freed
 * with tp_dataset_free whatever the result. */
int tp__dataset_parse_buffer(tp_dataset *ds, const char *name, const char *data, size_t len,
                             char *err, size_t errlen);

/* Tells the form of a whole input file (borrowed) and parses it into ds
 * (tp_dataset_load without the file read).  Same results as
 * tp__dataset_parse_buffer for JSONL. */
int tp__dataset_parse_any(tp_dataset *ds, const char *name, const char *data, size_t len, char *err,
                          size_t errlen);

/* The two whole-document forms, for the fuzz targets and tests: `root` is
 * the parsed document (borrowed).  ds is initialised by the caller (source
 * set); prompts are appended.  Return 0, TP_EINVAL with a message naming
 * `name` and the entry, or TP_ENOMEM. */
#include <jansson.h>
int tp__dataset_perf_analyzer(tp_dataset *ds, const char *name, const json_t *root, char *err,
                              size_t errlen);
int tp__dataset_sharegpt(tp_dataset *ds, const char *name, const json_t *root, char *err, size_t errlen);

/* A conversations file (docs/sessions.md): true when the first non-blank
 * line of the document is an object with a "turns" list. */
bool tp__dataset_is_sessions(const char *data, size_t len);
/* Parses a conversations file into ds (initialised here, like
 * tp__dataset_parse_buffer).  Returns 0, TP_EINVAL with "FILE:LINE: ..."
 * in err, or TP_ENOMEM; ds must be freed whatever the result. */
int tp__dataset_sessions(tp_dataset *ds, const char *name, const char *data, size_t len, char *err,
                         size_t errlen);

/* Appends one prompt (taken over) to ds, growing it.  Returns 0 or
 * TP_ENOMEM (the prompt is then still the caller's). */
int tp__dataset_push(tp_dataset *ds, const tp_prompt *p);

#endif
