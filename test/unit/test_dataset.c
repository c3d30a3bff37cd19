/* Tests for the prompt loader and the synthetic prompts
 * (lib/dataset/tp_dataset.c). */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset/tp_dataset.h"
#include "dataset/tp_dataset_line.h"
#include "tp_test.h"
#include "util/tp_common.h"
#include "util/tp_words.h"

static char tmpdir[256];
static char err[512];

/* Names written, so that main can remove them. */
static char created[64][512];
static size_t n_created;

static const char *write_file(const char *name, const void *data, size_t len) {
  static char path[512];
  snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
  if (n_created < TP_ARRAY_LEN(created)) memcpy(created[n_created++], path, sizeof(path));
  FILE *f = fopen(path, "wb");
  if (!f) return path;
  fwrite(data, 1, len, f);
  fclose(f);
  return path;
}

#define WRITE(name, lit) write_file((name), (lit), sizeof(lit) - 1)

/* ---- whole files ------------------------------------------------------- */

/* vLLM's custom dataset: {"prompt", "output_tokens"}; max_tokens and
 * AIPerf's output_length come first when a line holds several. */
static void test_load_vllm_custom(void) {
  const char *path = WRITE("vllm_custom.jsonl",
    "{\"prompt\": \"What is the capital of India?\", \"output_tokens\": 10}\n"
    "{\"prompt\": \"b\", \"output_tokens\": 7, \"max_tokens\": 3}\n"
    "{\"prompt\": \"c\", \"output_tokens\": 7, \"output_length\": 5}\n"
    "{\"prompt\": \"d\"}\n");
  tp_dataset ds;
  err[0] = 0;
  int rv = tp_dataset_load_jsonl(&ds, path, err, sizeof(err));
  CHECK(rv == 0 && ds.n == 4, "vLLM's custom dataset loads (%s)", err);
  if (ds.n == 4) {
    CHECK_INT(ds.items[0].max_tokens, 10, "output_tokens is the request's max_tokens");
    CHECK_INT(ds.items[1].max_tokens, 3, "max_tokens wins over output_tokens");
    CHECK_INT(ds.items[2].max_tokens, 5, "output_length wins over output_tokens");
    CHECK_INT(ds.items[3].max_tokens, -1, "none: -1");
  }
  tp_dataset_free(&ds);
}

static void test_load_good(void) {
  /* BOM, CRLF, blank lines (empty, spaces, a lone CR), every prompt key,
   * reference keys, nulls, escapes, non-ASCII, last line without '\n'. */
  const char *path = WRITE("good.jsonl",
    "\xEF\xBB\xBF{\"text_input\": \"What is ML?\", \"max_tokens\": 128}\r\n"
    "\r\n"
    "{\"input\": \"tab\\there\", \"output\": \"ref one\"}\n"
    "   \n"
    "{\"prompt\": \"caf\xC3\xA9 \\u00e9\", \"reference\": \"ref two\", \"max_tokens\": null}\n"
    "\t\r\n"
    "{\"text\": \"\", \"output\": null, \"reference\": \"fallback\"}\n"
    "\n"
    "{\"text\": \"b\", \"text_input\": \"a\", \"extra\": [1, {\"x\": 2}]}");
  tp_dataset ds;
  err[0] = 0;
  int rv = tp_dataset_load_jsonl(&ds, path, err, sizeof(err));
  CHECK(rv == 0, "good file loads (%s)", err);
  CHECK_INT(ds.n, 5, "five prompts, blank lines skipped");
  CHECK_STR(ds.source, path, "source is the path");
  if (ds.n == 5) {
    CHECK_STR(ds.items[0].text, "What is ML?", "BOM stripped, text_input read");
    CHECK_INT(ds.items[0].text_len, 11, "text_len");
    CHECK_INT(ds.items[0].max_tokens, 128, "max_tokens read");
    CHECK(ds.items[0].reference == NULL, "no reference");
    CHECK_STR(ds.items[1].text, "tab\there", "escape decoded, CRLF line before is fine");
    CHECK_STR(ds.items[1].reference, "ref one", "output read as reference");
    CHECK_INT(ds.items[1].max_tokens, -1, "absent max_tokens is -1");
    CHECK_STR(ds.items[2].text, "caf\xC3\xA9 \xC3\xA9", "UTF-8 and \\u escapes");
    CHECK_STR(ds.items[2].reference, "ref two", "reference key read");
    CHECK_INT(ds.items[2].max_tokens, -1, "null max_tokens is absent");
    CHECK_STR(ds.items[3].text, "", "empty prompt accepted");
    CHECK_INT(ds.items[3].text_len, 0, "empty prompt length");
    CHECK_STR(ds.items[3].reference, "fallback", "null output falls back to reference");
    CHECK_STR(ds.items[4].text, "a", "text_input wins over text whatever the key order");
    int all_unset = 1;
    for (size_t i = 0; i < ds.n; i++) all_unset &= ds.items[i].input_tokens == -1;
    CHECK(all_unset, "input_tokens is -1 until counted");
  }
  tp_dataset_free(&ds);
  CHECK(ds.items == NULL && ds.n == 0 && ds.source == NULL, "free clears the dataset");

  /* The same prompts with LF ends and no BOM read the same. */
  const char *p2 = WRITE("single.jsonl", "{\"text\":\"one\"}\n");
  rv = tp_dataset_load_jsonl(&ds, p2, err, sizeof(err));
  CHECK(rv == 0 && ds.n == 1 && strcmp(ds.items[0].text, "one") == 0,
        "one line with a final newline");
  tp_dataset_free(&ds);

  /* A line long enough to cross the reader's 64 KiB chunks. */
  size_t big = 200000;
  char *line = malloc(big + 32);
  memcpy(line, "{\"text\":\"", 9);
  for (size_t i = 0; i < big; i++) line[9 + i] = (char)('a' + i % 26);
  memcpy(line + 9 + big, "\"}\n{\"text\":\"z\"}", 15);
  const char *p3 = write_file("big.jsonl", line, 9 + big + 15);
  rv = tp_dataset_load_jsonl(&ds, p3, err, sizeof(err));
  CHECK(rv == 0 && ds.n == 2, "long line loads (%s)", err);
  if (rv == 0 && ds.n == 2) {
    CHECK_MEM(ds.items[0].text, ds.items[0].text_len, line + 9, big, "long prompt intact");
    CHECK_STR(ds.items[1].text, "z", "line after the long one");
  }
  tp_dataset_free(&ds);
  free(line);
}

static void expect_error(const char *name, const char *body, size_t len, int want_rv,
                         const char *want_tail, bool prefix_only) {
  const char *path = write_file(name, body, len);
  char want[512];
  snprintf(want, sizeof(want), "%s%s", path, want_tail);
  tp_dataset ds;
  err[0] = 0;
  int rv = tp_dataset_load_jsonl(&ds, path, err, sizeof(err));
  CHECK_INT(rv, want_rv, name);
  if (prefix_only)
    CHECK(strncmp(err, want, strlen(want)) == 0, "%s: message starts \"%s\" (got \"%s\")", name,
          want, err);
  else
    CHECK_STR(err, want, name);
  tp_dataset_free(&ds);
}

/* want_tail is the message after the file name. */
#define EXPECT_ERROR(name, lit, rv, tail, pfx) \
  expect_error((name), (lit), sizeof(lit) - 1, (rv), (tail), (pfx))

static void test_load_errors(void) {
  EXPECT_ERROR("empty.jsonl", "", TP_EINVAL, ": no prompts (the file is empty)", false);
  EXPECT_ERROR("blank.jsonl", "\n \r\n\t\n", TP_EINVAL, ": no prompts", true);
  EXPECT_ERROR("bom.jsonl", "\xEF\xBB\xBF", TP_EINVAL, ": no prompts", true);
  EXPECT_ERROR("badjson.jsonl", "{\"text\":\"a\"}\n{\"a\":}\n", TP_EINVAL,
               ":2:6: invalid JSON: unexpected token near '}'", false);
  /* Blank lines and CRLF count in line numbers; columns count characters. */
  EXPECT_ERROR("badcol.jsonl", "\r\n{\"text\":\"a\"}\r\n\r\n{\"\xC3\xA9\":x}\r\n", TP_EINVAL,
               ":4:6: invalid JSON: ", true);
  EXPECT_ERROR("bomcol.jsonl", "\xEF\xBB\xBF{\"a\":}", TP_EINVAL, ":1:6: invalid JSON: ", true);
  EXPECT_ERROR("bom2.jsonl", "{\"text\":\"a\"}\n\xEF\xBB\xBF{\"text\":\"b\"}", TP_EINVAL,
               ":2:1: invalid JSON: ", true);
  EXPECT_ERROR("trunc.jsonl", "{\"text\":\"a\"", TP_EINVAL, ":1:11: invalid JSON: ", true);
  EXPECT_ERROR("trailing.jsonl", "{\"text\":\"a\"} x", TP_EINVAL, ":1:14: invalid JSON: ",
               true);
  EXPECT_ERROR("twoobj.jsonl", "{\"text\":\"a\"}{\"text\":\"b\"}", TP_EINVAL,
               ":1:13: invalid JSON: ", true);
  EXPECT_ERROR("nul.jsonl", "{\"text\":\"a\\u0000b\"}", TP_EINVAL,
               ":1:18: invalid JSON: \\u0000 is not allowed in prompts", false);
  EXPECT_ERROR("rawnul.jsonl", "{\"text\":\"a\"}\n{\"text\":\"a\0b\"}", TP_EINVAL, ":2:",
               true);
  EXPECT_ERROR("array.jsonl", "[1, 2]\n", TP_EINVAL, ":1: expected a JSON object", true);
  EXPECT_ERROR("string.jsonl", "\"hello\"\n", TP_EINVAL, ":1: expected a JSON object", true);
  EXPECT_ERROR("noprompt.jsonl", "{\"text\":\"a\"}\n{\"txt\":\"b\"}\n", TP_EINVAL,
               ":2: no prompt: expected a string under \"text_input\", \"input\", \"prompt\" "
               "or \"text\", a list of chat \"messages\", or AIPerf's \"texts\"", false);
  EXPECT_ERROR("numprompt.jsonl", "{\"text_input\": 5, \"text\": \"b\"}\n", TP_EINVAL,
               ":1: no prompt: expected a string under \"text_input\", \"input\", \"prompt\" "
               "or \"text\" (\"text_input\" holds an integer)", false);
  EXPECT_ERROR("nullprompt.jsonl", "{\"prompt\": null}\n", TP_EINVAL, ":1: no prompt: ", true);
  EXPECT_ERROR("maxzero.jsonl", "{\"text\":\"a\",\"max_tokens\":0}", TP_EINVAL,
               ":1: \"max_tokens\" must be a positive integer", false);
  EXPECT_ERROR("maxneg.jsonl", "{\"text\":\"a\",\"max_tokens\":-3}", TP_EINVAL,
               ":1: \"max_tokens\" must be a positive integer", false);
  EXPECT_ERROR("maxreal.jsonl", "{\"text\":\"a\",\"max_tokens\":12.0}", TP_EINVAL,
               ":1: \"max_tokens\" must be a positive integer", false);
  EXPECT_ERROR("maxstr.jsonl", "{\"text\":\"a\",\"max_tokens\":\"12\"}", TP_EINVAL,
               ":1: \"max_tokens\" must be a positive integer", false);
  EXPECT_ERROR("maxhuge.jsonl", "{\"text\":\"a\",\"max_tokens\":99999999999999999999}",
               TP_EINVAL, ":1:", true);
  EXPECT_ERROR("outzero.jsonl", "{\"prompt\":\"a\",\"output_tokens\":0}", TP_EINVAL,
               ":1: \"output_tokens\" must be a positive integer", false);
  EXPECT_ERROR("outstr.jsonl", "{\"prompt\":\"a\",\"output_tokens\":\"3\"}", TP_EINVAL,
               ":1: \"output_tokens\" must be a positive integer", false);
  EXPECT_ERROR("refnum.jsonl", "{\"text\":\"a\",\"output\":3}", TP_EINVAL,
               ":1: \"output\" must be a string", true);
  EXPECT_ERROR("refobj.jsonl", "{\"text\":\"a\",\"reference\":{}}", TP_EINVAL,
               ":1: \"reference\" must be a string", true);
  EXPECT_ERROR("vtab.jsonl", "\v\n", TP_EINVAL, ":1:1: invalid JSON: ", true);

  tp_dataset ds;
  char path[512];
  snprintf(path, sizeof(path), "%s/does-not-exist.jsonl", tmpdir);
  char want[600];
  snprintf(want, sizeof(want), "%s: no such file (check --input-file)", path);
  CHECK_INT(tp_dataset_load_jsonl(&ds, path, err, sizeof(err)), TP_ENOTFOUND, "missing file");
  CHECK_STR(err, want, "missing file message");
  tp_dataset_free(&ds);

  CHECK_INT(tp_dataset_load_jsonl(&ds, tmpdir, err, sizeof(err)), TP_EIO, "a directory");
  CHECK(strncmp(err, tmpdir, strlen(tmpdir)) == 0 && strstr(err, "cannot read"),
        "directory message names the path: %s", err);
  tp_dataset_free(&ds);

  if (geteuid() != 0) {
    const char *p = WRITE("noperm.jsonl", "{\"text\":\"a\"}\n");
    chmod(p, 0);
    CHECK_INT(tp_dataset_load_jsonl(&ds, p, err, sizeof(err)), TP_EIO, "unreadable file");
    tp_dataset_free(&ds);
  }

  /* Control bytes quoted back by jansson are masked for the terminal. */
  const char *p = WRITE("ctl.jsonl", "\x01\x1b[31m\n");
  tp_dataset_load_jsonl(&ds, p, err, sizeof(err));
  bool clean = true;
  for (const char *c = err; *c; c++) clean &= (unsigned char)*c >= 0x20 && *c != 0x7f;
  CHECK(clean && strstr(err, "invalid JSON"), "no control bytes in the message: %s", err);
  tp_dataset_free(&ds);
}

/* ---- the line parser from memory ---------------------------------------- */

static void test_parse_line(void) {
  tp_prompt p;
  bool blank = false;
  memset(&p, 0, sizeof(p));
  int rv = tp__dataset_parse_line("{\"text\":\"hi\"}\r", 14, "f", 7, &p, &blank, err, sizeof(err));
  CHECK(rv == 0 && !blank && p.text && strcmp(p.text, "hi") == 0, "line with CR parses");
  free(p.text);
  free(p.reference);

  rv = tp__dataset_parse_line(" \t\r", 3, "f", 7, &p, &blank, err, sizeof(err));
  CHECK(rv == 0 && blank, "whitespace-only line is blank");
  rv = tp__dataset_parse_line("", 0, "f", 7, &p, &blank, err, sizeof(err));
  CHECK(rv == 0 && blank, "empty line is blank");

  /* Only `len` bytes are read: what follows must not matter. */
  rv = tp__dataset_parse_line("{\"text\":\"ab\"}GARBAGE", 13, "f", 1, &p, &blank, err,
                              sizeof(err));
  CHECK(rv == 0 && !blank && strcmp(p.text, "ab") == 0, "length bounds the line");
  free(p.text);

  rv = tp__dataset_parse_line("{\"a\":}", 6, "data.jsonl", 42, &p, &blank, err, sizeof(err));
  CHECK(rv == TP_EINVAL && strncmp(err, "data.jsonl:42:6: invalid JSON: ", 31) == 0,
        "file and line number label the message: %s", err);

  /* Every proper prefix of a valid line is refused (or blank when empty);
   * none is mistaken for a prompt. */
  const char *line = "{\"text_input\": \"x y\", \"output\": \"r\", \"max_tokens\": 12}";
  size_t len = strlen(line);
  int wrong = 0;
  for (size_t cut = 0; cut < len; cut++) {
    rv = tp__dataset_parse_line(line, cut, "f", 1, &p, &blank, err, sizeof(err));
    if (cut == 0 ? !(rv == 0 && blank) : rv != TP_EINVAL) wrong++;
  }
  CHECK_INT(wrong, 0, "every truncation of a valid line is refused");
  rv = tp__dataset_parse_line(line, len, "f", 1, &p, &blank, err, sizeof(err));
  CHECK(rv == 0 && !blank && strcmp(p.text, "x y") == 0 && strcmp(p.reference, "r") == 0 &&
            p.max_tokens == 12 && p.input_tokens == -1,
        "the whole line parses");
  free(p.text);
  free(p.reference);
}

static void test_parse_buffer(void) {
  tp_dataset ds;
  /* Counting lines: a final line without '\n', CR-only line ends are not
   * line breaks (a lone CR mid-line is JSON whitespace). */
  static const char doc[] = "{\"text\":\"a\"}\n{\"text\":\"b\"}\r{\"x\":1}";
  int rv = tp__dataset_parse_buffer(&ds, "mem", doc, sizeof(doc) - 1, err, sizeof(err));
  CHECK(rv == TP_EINVAL && strncmp(err, "mem:2:", 6) == 0, "CR alone does not end a line: %s",
        err);
  tp_dataset_free(&ds);

  static const char doc2[] = "\n\n{\"text\":\"a\"}\n\n";
  rv = tp__dataset_parse_buffer(&ds, "mem", doc2, sizeof(doc2) - 1, err, sizeof(err));
  CHECK(rv == 0 && ds.n == 1 && strcmp(ds.source, "mem") == 0, "leading/trailing blank lines");
  tp_dataset_free(&ds);

  /* Many lines: growth of the item array. */
  tp_buf b;
  tp_buf_init(&b);
  for (int i = 0; i < 1000; i++) tp_buf_printf(&b, "{\"text\":\"p%d\",\"max_tokens\":%d}\n", i, i + 1);
  rv = tp__dataset_parse_buffer(&ds, "mem", (const char *)b.data, b.len, err, sizeof(err));
  int ok = rv == 0 && ds.n == 1000;
  for (size_t i = 0; ok && i < ds.n; i++) {
    char want[32];
    snprintf(want, sizeof(want), "p%zu", i);
    ok = strcmp(ds.items[i].text, want) == 0 && ds.items[i].max_tokens == (int64_t)i + 1;
  }
  CHECK(ok, "1000 lines load in order");
  tp_dataset_free(&ds);
  tp_buf_fini(&b);
}

/* Lines that end right before an unmapped page: the parser must not read
 * past `len`. */
static void test_guard_page(void) {
  long pg = sysconf(_SC_PAGESIZE);
  char *mem = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
  if (mem == MAP_FAILED || mprotect(mem + pg, (size_t)pg, PROT_NONE) != 0) {
    CHECK(0, "guard page set up");
    return;
  }
  static const char *const lines[] = {
    "{\"text\":\"hi\"}", "{\"text\":\"hi\"}\r", "{\"text\":\"hi", "{", "\"", "  ", "\r", "1",
    "{\"text\":\"a\",\"max_tokens\":12", "{\"text\":\"\\u00", "\xEF\xBB\xBF",
    "{\"text\":\"a\"}\n{\"text\":\"b\"}", "{\"text\":\"a\"}\n",
  };
  int differ = 0;
  for (size_t i = 0; i < TP_ARRAY_LEN(lines); i++) {
    size_t len = strlen(lines[i]);
    char *s = mem + pg - len;
    memcpy(s, lines[i], len);
    tp_prompt p1 = {0}, p2 = {0};
    bool b1, b2;
    int r1 = 0, r2 = 0;
    if (!memchr(lines[i], '\n', len)) {
      r1 = tp__dataset_parse_line(s, len, "g", 1, &p1, &b1, err, sizeof(err));
      r2 = tp__dataset_parse_line(lines[i], len, "g", 1, &p2, &b2, err, sizeof(err));
      if (r1 != r2 || (r1 == 0 && b1 != b2)) differ++;
      if (r1 == 0 && !b1) free(p1.text), free(p1.reference);
      if (r2 == 0 && !b2) free(p2.text), free(p2.reference);
    }
    tp_dataset ds1, ds2;
    r1 = tp__dataset_parse_buffer(&ds1, "g", s, len, err, sizeof(err));
    r2 = tp__dataset_parse_buffer(&ds2, "g", lines[i], len, err, sizeof(err));
    if (r1 != r2 || ds1.n != ds2.n) differ++;
    tp_dataset_free(&ds1);
    tp_dataset_free(&ds2);
  }
  CHECK_INT(differ, 0, "guard page: lines at a page end parse as ordinary copies do");
  munmap(mem, (size_t)pg * 2);
}

/* ---- synthetic prompts ------------------------------------------------- */

static bool is_word(const char *w, size_t len) {
  for (size_t i = 0; i < tp_words_n; i++)
    if (strlen(tp_words[i]) == len && memcmp(tp_words[i], w, len) == 0) return true;
  return false;
}

static void test_synthetic(void) {
  tp_dataset a, b, c;
  CHECK_INT(tp_words_n, 256, "the word list has 256 words");
  CHECK_INT(tp_dataset_synthetic(&a, 20, 50, 7), 0, "synthetic set made");
  CHECK_INT(tp_dataset_synthetic(&b, 20, 50, 7), 0, "again with the same seed");
  CHECK_INT(tp_dataset_synthetic(&c, 20, 50, 8), 0, "with another seed");
  CHECK_INT(a.n, 20, "n prompts");
  CHECK_STR(a.source, "synthetic", "source");
  bool same = a.n == b.n, differs = false, shape = true, distinct = true;
  for (size_t i = 0; i < a.n && same; i++) {
    same = strcmp(a.items[i].text, b.items[i].text) == 0;
    differs |= strcmp(a.items[i].text, c.items[i].text) != 0;
    if (i) distinct &= strcmp(a.items[i].text, a.items[i - 1].text) != 0;
    const char *t = a.items[i].text;
    size_t len = strlen(t), words = 0;
    shape &= len == a.items[i].text_len && len > 0 && t[0] != ' ' && t[len - 1] != ' ';
    shape &= a.items[i].max_tokens == -1 && a.items[i].input_tokens == -1 &&
             a.items[i].reference == NULL;
    for (const char *w = t; *w;) {
      const char *sp = strchr(w, ' ');
      size_t wl = sp ? (size_t)(sp - w) : strlen(w);
      shape &= is_word(w, wl);
      words++;
      w += wl;
      if (*w == ' ') {
        w++;
        shape &= *w != ' ' && *w != 0; /* single spaces only */
      }
    }
    shape &= words == 50;
  }
  CHECK(same, "same seed, same prompts");
  CHECK(differs, "another seed, other prompts");
  CHECK(distinct, "prompts of one set differ from each other");
  CHECK(shape, "50 listed words joined by single spaces, metadata unset");
  tp_dataset_free(&a);
  tp_dataset_free(&b);
  tp_dataset_free(&c);

  /* splitmix64 from seed 0 starts 0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4
   * (the reference implementation's known outputs); the word index is the
   * output modulo 256. */
  CHECK_INT(tp_dataset_synthetic(&a, 2, 1, 0), 0, "seed 0");
  if (a.n == 2) {
    CHECK_STR(a.items[0].text, tp_words[0xaf], "first word from splitmix64(0)");
    CHECK_STR(a.items[1].text, tp_words[0xf4], "second prompt continues the stream");
  }
  tp_dataset_free(&a);

  CHECK_INT(tp_dataset_synthetic(&a, 0, 5, 1), TP_EINVAL, "zero prompts refused");
  tp_dataset_free(&a);
  CHECK_INT(tp_dataset_synthetic(&a, 3, 0, 1), TP_EINVAL, "zero words refused");
  tp_dataset_free(&a);
}

int main(void) {
  const char *t = getenv("TMPDIR");
  snprintf(tmpdir, sizeof(tmpdir), "%s/tp_test_dataset_XXXXXX", t && *t ? t : "/tmp");
  if (!mkdtemp(tmpdir)) {
    printf("Bail out! cannot create a temporary directory: %s\n", strerror(errno));
    return 1;
  }
  test_load_vllm_custom();
  test_load_good();
  test_load_errors();
  test_parse_line();
  test_parse_buffer();
  test_guard_page();
  test_synthetic();
  /* Leave no files behind. */
  for (size_t i = 0; i < n_created; i++) unlink(created[i]);
  if (rmdir(tmpdir) != 0) printf("# could not remove %s: %s\n", tmpdir, strerror(errno));
  return tp_test_done();
}
