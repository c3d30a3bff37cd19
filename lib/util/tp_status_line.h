/* The live status line on a terminal: fields of one line, each with how
 * long it is kept, fitted to the terminal's width.  A line wider than the
 * terminal wraps, and the carriage return that redraws it then goes back to
 * the start of its last row only: every redraw leaves a row behind.  So
 * the line is cut to fit, least useful fields first, never mid-field
 * unless the most useful field alone is too wide. */
#ifndef TP_STATUS_LINE_H
#define TP_STATUS_LINE_H

#include <stddef.h>
#include <stdio.h>

typedef struct tp_status_field {
  const char *text; /* with its own leading separator (", 3 failed"); "" or NULL: absent */
  int keep;         /* the higher, the longer it stays; ties: the rightmost goes first */
} tp_status_field;

/* Writes the fields that fit in width columns (UTF-8 characters counted as
 * one column each), in their order, into out (NUL-terminated, at most
 * outlen - 1 bytes).  width 0: no limit.  Returns the columns written. */
size_t tp_status_fit(const tp_status_field *f, size_t n, size_t width, char *out, size_t outlen);

/* The columns of the terminal out writes to (TIOCGWINSZ), else $COLUMNS,
 * else 80; 0 when out is no terminal. */
size_t tp_status_width(FILE *out);

#endif
