/* util/tp_status_line: the live status line cut to the terminal's width,
 * least kept fields first, whole fields only, UTF-8 counted by character;
 * and the width read from a pseudo-terminal. */
#include <fcntl.h>
#include <pty.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "tp_test.h"
#include "util/tp_status_line.h"

static const tp_status_field line[] = {
    {"tokperf: ", 1},
    {"level 2/5", 11},
    {" concurrency 16", 7},
    {": 37 of 200 done", 12},
    {", 16 in flight", 4},
    {", 0 failed", 3},
    {", 25.3 req/s", 5},
    {", TTFT p50 35 p99 49 ms", 6},
    {", 12 s", 2},
    {", ~6 s left", 9},
    {"", 20},
    {NULL, 20},
};
#define N (sizeof(line) / sizeof(line[0]))

static void check_fit(size_t width, const char *want) {
  char out[256];
  size_t cols = tp_status_fit(line, N, width, out, sizeof(out));
  CHECK(strcmp(out, want) == 0 && cols == strlen(want) && (!width || cols <= width),
        "width %zu: '%s' (%zu columns)", width, out, cols);
}

int main(void) {
  check_fit(
      0,
      "tokperf: level 2/5 concurrency 16: 37 of 200 done, 16 in flight, 0 failed, 25.3 req/s, TTFT p50 35 "
      "p99 49 ms, 12 s, ~6 s left");
  check_fit(200,
            "tokperf: level 2/5 concurrency 16: 37 of 200 done, 16 in flight, 0 failed, 25.3 req/s, TTFT p50 "
            "35 p99 49 ms, 12 s, ~6 s left");
  /* 79 columns (an 80-column terminal less its last): the prefix, the
   * elapsed time, the zero failures, in flight and the rate go, in that
   * order. */
  check_fit(
      119,
      "level 2/5 concurrency 16: 37 of 200 done, 16 in flight, 0 failed, 25.3 req/s, TTFT p50 35 p99 49 "
      "ms, 12 s, ~6 s left");
  check_fit(79, "level 2/5 concurrency 16: 37 of 200 done, TTFT p50 35 p99 49 ms, ~6 s left");
  check_fit(60, "level 2/5 concurrency 16: 37 of 200 done, ~6 s left");
  check_fit(40, "level 2/5: 37 of 200 done, ~6 s left");
  check_fit(26, "level 2/5: 37 of 200 done");
  check_fit(16, ": 37 of 200 done");
  /* The most kept field alone too wide: cut at the width. */
  check_fit(8, ": 37 of ");

  /* Failures, when there are some, outlast the time left. */
  const tp_status_field failing[] = {
      {"level 1/1", 11}, {": 5 done", 12}, {", 3 failed", 10}, {", ~9 s left", 9}};
  char out[128];
  tp_status_fit(failing, 4, 32, out, sizeof(out));
  CHECK_STR(out, "level 1/1: 5 done, 3 failed", "failures outlast the time left");
  /* Ties: the rightmost goes first. */
  const tp_status_field tie[] = {{"aaaa", 1}, {"bbbb", 1}, {"cccc", 5}};
  tp_status_fit(tie, 3, 8, out, sizeof(out));
  CHECK_STR(out, "aaaacccc", "a tie drops the rightmost");
  /* UTF-8: columns are characters, and a character is never split. */
  const tp_status_field u[] = {{"é—é—é", 5}};
  size_t cols = tp_status_fit(u, 1, 3, out, sizeof(out));
  CHECK(strcmp(out, "é—é") == 0 && cols == 3, "UTF-8 counted by character, cut between characters: '%s'",
        out);
  /* A small buffer: NUL-terminated, never a split character. */
  char small[4];
  tp_status_fit(u, 1, 0, small, sizeof(small));
  CHECK_STR(small, "é", "a short buffer holds whole characters only");

  /* The width: a pseudo-terminal's window size; a pipe is no terminal. */
  int master, slave;
  struct winsize ws = {.ws_row = 24, .ws_col = 93};
  if (openpty(&master, &slave, NULL, NULL, &ws) == 0) {
    FILE *f = fdopen(slave, "w");
    CHECK_INT(tp_status_width(f), 93, "TIOCGWINSZ of a pseudo-terminal");
    ws.ws_col = 57;
    ioctl(master, TIOCSWINSZ, &ws);
    CHECK_INT(tp_status_width(f), 57, "a resized window is read again");
    fclose(f);
    close(master);
  } else {
    CHECK(0, "openpty");
  }
  int p[2];
  if (pipe(p) == 0) {
    FILE *f = fdopen(p[1], "w");
    CHECK_INT(tp_status_width(f), 0, "a pipe is no terminal: 0");
    fclose(f);
    close(p[0]);
  }
  return tp_test_done();
}
