/* Fitting the live status line to the terminal (tp_status_line.h). */
#include "util/tp_status_line.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* Columns of a UTF-8 string: its bytes that start a character. */
static size_t columns(const char *s) {
  size_t n = 0;
  for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
  return n;
}

enum { MAX_FIELDS = 32 };

size_t tp_status_fit(const tp_status_field *f, size_t n, size_t width, char *out, size_t outlen) {
  if (!outlen) return 0;
  out[0] = 0;
  if (n > MAX_FIELDS) n = MAX_FIELDS;
  bool on[MAX_FIELDS];
  size_t total = 0;
  for (size_t i = 0; i < n; i++) {
    on[i] = f[i].text && f[i].text[0];
    if (on[i]) total += columns(f[i].text);
  }
  /* Drop the least kept field while the line is too wide, keeping one. */
  for (;;) {
    if (!width || total <= width) break;
    size_t drop = n, left = 0;
    for (size_t i = 0; i < n; i++) {
      if (!on[i]) continue;
      left++;
      if (drop == n || f[i].keep <= f[drop].keep) drop = i;
    }
    if (left <= 1) break;
    on[drop] = false;
    total -= columns(f[drop].text);
  }
  size_t used = 0, cols = 0;
  for (size_t i = 0; i < n; i++) {
    if (!on[i]) continue;
    for (const char *p = f[i].text; *p; p++) {
      bool starts = ((unsigned char)*p & 0xC0) != 0x80;
      if (starts && width && cols == width) goto full;
      /* The whole character or none of it. */
      size_t len = 1;
      if (starts)
        while ((((unsigned char)p[len]) & 0xC0) == 0x80) len++;
      else
        continue; /* a stray continuation byte: left out */
      if (used + len >= outlen) goto full;
      memcpy(out + used, p, len);
      used += len;
      cols++;
      p += len - 1;
    }
  }
full:
  out[used] = 0;
  return cols;
}

size_t tp_status_width(FILE *out) {
  int fd = out ? fileno(out) : -1;
  if (fd < 0 || !isatty(fd)) return 0;
  struct winsize ws;
  if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  const char *c = getenv("COLUMNS");
  long v = c ? strtol(c, NULL, 10) : 0;
  return v > 0 ? (size_t)v : 80;
}
