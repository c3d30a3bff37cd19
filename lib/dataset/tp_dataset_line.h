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

#endif
