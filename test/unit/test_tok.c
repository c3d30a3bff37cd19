/* Tests for the tokenizer interface and its sentencepiece backend.
 *
 * The models are trained at build time (test/data/meson.build) and found
 * through TP_WORDS_MODEL and TP_PROSE_MODEL.  The reference for "correct
 * ids" is sentencepiece's own spm_encode command, so these tests pin our
 * shim to the library's behaviour rather than to numbers copied from an
 * earlier run.
 *
 * Special tokens (TP_TOK_FLAG_SPECIAL_TOKENS): the test models have BOS 1
 * and EOS 2 (spm_train's defaults); a model without BOS is trained here,
 * and tokenizer_config.json files are written beside symlinks to the
 * models. */
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tokenizer/tp_tok.h"
#include "tp_test.h"
#include "util/tp_common.h"
#include "util/tp_words.h"

/* Sentences compared id for id with spm_encode.  None may hold a newline,
 * because spm_encode reads one sentence per line. */
static const char *const k_sentences[] = {
    "Hello, world!",
    "the quick brown fox jumps over the lazy dog",
    "  leading and trailing spaces  ",
    "multiple   spaces\tand\ttabs\t\tinside",
    "",
    "   ",
    "naïve café 東京",
    "Numbers: 3.14159, 2024-06-11, 1e10 and 007.",
    "UPPER lower MiXeD CaSe",
    "The clockmaker repaired the pendulum near the harbour.",
    "emoji 🙂 and symbols © ± ∞",
    "full-width ＡＢＣ１２３ folds under NFKC",
    "don't won't it's \"quoted\" (parenthesised) [bracketed]",
    "a",
    " the of and to in is that it",
    "supercalifragilisticexpialidocious",
    "Ünïcödé àccents çà et là",
    "https://example.com/path?q=1&r=2#frag",
    "ﬁ ligature and ½ fraction",
    ("Percentiles are more honest: the ninety-ninth percentile is the latency that "
     "only one request in a hundred exceeds, and a histogram trades precision for space."),
    "time time time time words words sentence better best across during",
};
#define N_SENTENCES (sizeof(k_sentences) / sizeof(k_sentences[0]))

typedef struct ids_vec {
  int32_t *ids;
  size_t n;
} ids_vec;

static char tmp_root[256];

/* Single-quotes s for /bin/sh, so build paths with spaces still work. */
static void shell_quote(tp_buf *b, const char *s) {
  tp_buf_append_str(b, "'");
  for (; *s; s++) {
    if (*s == '\'')
      tp_buf_append_str(b, "'\\''");
    else
      tp_buf_append(b, s, 1);
  }
  tp_buf_append_str(b, "'");
}

static int write_file(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (f == NULL) return -1;
  size_t w = len ? fwrite(data, 1, len, f) : 0;
  int rc = fclose(f);
  return (w == len && rc == 0) ? 0 : -1;
}

static int copy_file(const char *from, const char *to) {
  FILE *f = fopen(from, "rb");
  if (f == NULL) return -1;
  tp_buf b;
  tp_buf_init(&b);
  char chunk[4096];
  size_t r;
  while ((r = fread(chunk, 1, sizeof(chunk), f)) > 0) tp_buf_append(&b, chunk, r);
  fclose(f);
  int rc = write_file(to, b.data, b.len);
  tp_buf_fini(&b);
  return rc;
}

/* Runs spm_encode over every sentence (one per line of a temporary file)
 * and parses the ids it prints, one line per sentence.  Returns the number
 * of lines parsed. */
static size_t spm_encode_cli(const char *model, ids_vec *out, size_t n_out) {
  tp_buf path, cmd;
  tp_buf_init(&path);
  tp_buf_init(&cmd);
  tp_buf_printf(&path, "%s/sentences.txt", tmp_root);
  FILE *f = fopen((char *)path.data, "wb");
  if (f == NULL) return 0;
  for (size_t i = 0; i < n_out; i++) fprintf(f, "%s\n", k_sentences[i]);
  fclose(f);

  tp_buf_append_str(&cmd, "spm_encode --output_format=id --model=");
  shell_quote(&cmd, model);
  tp_buf_append_str(&cmd, " ");
  shell_quote(&cmd, (char *)path.data);
  FILE *p = popen((char *)cmd.data, "r");
  size_t lines = 0;
  if (p != NULL) {
    char *line = NULL;
    size_t cap = 0;
    while (lines < n_out && getline(&line, &cap, p) >= 0) {
      ids_vec *v = &out[lines++];
      v->ids = malloc((strlen(line) + 1) * sizeof(int32_t));
      v->n = 0;
      char *s = line, *end;
      for (;;) {
        long id = strtol(s, &end, 10);
        if (end == s) break;
        v->ids[v->n++] = (int32_t)id;
        s = end;
      }
    }
    free(line);
    pclose(p);
  }
  unlink((char *)path.data);
  tp_buf_fini(&path);
  tp_buf_fini(&cmd);
  return lines;
}

static bool ids_equal(const int32_t *a, size_t na, const int32_t *b, size_t nb) {
  return na == nb && (na == 0 || memcmp(a, b, na * sizeof(*a)) == 0);
}

static void print_ids(const char *label, const int32_t *ids, size_t n) {
  printf("#   %s:", label);
  for (size_t i = 0; i < n; i++) printf(" %d", (int)ids[i]);
  printf("\n");
}

static void test_matches_spm_encode(const tp_tok *t, const char *model, const char *name) {
  ids_vec want[N_SENTENCES];
  memset(want, 0, sizeof(want));
  size_t lines = spm_encode_cli(model, want, N_SENTENCES);
  CHECK_INT(lines, N_SENTENCES, "spm_encode printed one line per sentence");
  for (size_t i = 0; i < lines; i++) {
    int32_t *ids = NULL;
    size_t n = 0;
    int rc = tp_tok_encode(t, k_sentences[i], strlen(k_sentences[i]), &ids, &n);
    bool same = rc == 0 && ids_equal(ids, n, want[i].ids, want[i].n);
    CHECK(same, "%s: ids for sentence %zu equal spm_encode's", name, i);
    if (!same) {
      printf("#   sentence \"%s\" rc %d\n", k_sentences[i], rc);
      print_ids("got", ids, n);
      print_ids("want", want[i].ids, want[i].n);
    }
    size_t count = SIZE_MAX;
    CHECK(tp_tok_count(t, k_sentences[i], strlen(k_sentences[i]), &count) == 0 &&
              count == want[i].n,
          "%s: count for sentence %zu is spm_encode's id count (%zu)", name, i, want[i].n);
    free(ids);
    free(want[i].ids);
  }
}

/* Every list word, as the mock emits it (" word"), is one piece of its own,
 * and that piece decodes back to the word. */
static void test_words_one_token_each(const tp_tok *t) {
  int32_t seen[512];
  size_t bad_count = 0, bad_decode = 0, dup = 0;
  CHECK_INT(tp_words_n, 256, "the word list has 256 words");
  for (size_t i = 0; i < tp_words_n; i++) {
    char text[64];
    int len = snprintf(text, sizeof(text), " %s", tp_words[i]);
    int32_t *ids = NULL;
    size_t n = 0;
    if (tp_tok_encode(t, text, (size_t)len, &ids, &n) != 0 || n != 1) {
      if (bad_count++ < 5) printf("#   \"%s\" gave %zu tokens\n", text, n);
      free(ids);
      seen[i] = -1;
      continue;
    }
    seen[i] = ids[0];
    for (size_t j = 0; j < i; j++)
      if (seen[j] == ids[0]) dup++;
    char *back = NULL;
    size_t back_len = 0;
    if (tp_tok_decode(t, ids, 1, &back, &back_len) != 0 || strcmp(back, tp_words[i]) != 0) {
      if (bad_decode++ < 5) printf("#   id %d decodes to \"%s\"\n", ids[0], back ? back : "");
    }
    free(back);
    free(ids);
  }
  CHECK_INT(bad_count, 0, "words model: every \" word\" is exactly one token");
  CHECK_INT(dup, 0, "words model: the 256 words have 256 distinct ids");
  CHECK_INT(bad_decode, 0, "words model: each word's id decodes to the word");
}

/* Text built the way the mock server builds it, " w1 w2 ... wN", counts N
 * tokens, for lengths from 1 to several hundred. */
static void test_words_sentences(const tp_tok *t) {
  uint64_t s = 0x9e3779b97f4a7c15ULL;
  size_t wrong = 0;
  for (size_t n_words = 1; n_words <= 400; n_words += 7) {
    tp_buf b;
    tp_buf_init(&b);
    for (size_t k = 0; k < n_words; k++) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      tp_buf_printf(&b, " %s", tp_words[(s >> 33) % tp_words_n]);
    }
    size_t count = 0;
    if (tp_tok_count(t, (char *)b.data, b.len, &count) != 0 || count != n_words) {
      if (wrong++ < 5) printf("#   %zu words counted as %zu\n", n_words, count);
    }
    tp_buf_fini(&b);
  }
  CHECK_INT(wrong, 0, "words model: a text of N list words counts N tokens");

  /* The length argument is honoured: no reading up to a NUL. */
  const char *text = " the of and to";
  size_t count = 0;
  CHECK(tp_tok_count(t, text, strlen(" the of"), &count) == 0 && count == 2,
        "count stops at len, not at the NUL (got %zu)", count);
}

static void check_roundtrip(const tp_tok *t, const char *name, const char *text) {
  int32_t *ids = NULL;
  size_t n = 0;
  char *back = NULL;
  size_t back_len = 0;
  int rc = tp_tok_encode(t, text, strlen(text), &ids, &n);
  if (rc == 0) rc = tp_tok_decode(t, ids, n, &back, &back_len);
  CHECK(rc == 0 && back != NULL && back_len == strlen(text) && strcmp(back, text) == 0,
        "%s: decode(encode(\"%.40s\")) round-trips", name, text);
  if (rc != 0 || back == NULL || strcmp(back, text) != 0)
    printf("#   rc %d, got \"%s\"\n", rc, back ? back : "(null)");
  free(ids);
  free(back);
}

static void test_prose_merges(const tp_tok *t) {
  /* BPE merges happened: a common word is one piece, a long sentence has
   * far fewer pieces than characters, and a word the corpus never saw is
   * split into several pieces. */
  size_t count = 0;
  CHECK(tp_tok_count(t, " the", 4, &count) == 0 && count == 1,
        "prose model: \" the\" is one piece (got %zu)", count);
  const char *long_text = k_sentences[19];
  size_t chars = strlen(long_text);
  CHECK(tp_tok_count(t, long_text, chars, &count) == 0 && count > 0 && count * 2 < chars,
        "prose model: %zu pieces for %zu characters (pieces average over 2)", count, chars);
  const char *rare = "supercalifragilisticexpialidocious";
  CHECK(tp_tok_count(t, rare, strlen(rare), &count) == 0 && count > 1 && count < strlen(rare),
        "prose model: an unseen word splits into %zu pieces", count);
}

/* Several threads encode the same sentences at once; every result must
 * equal the single-threaded one (the thread pool counts concurrently). */
typedef struct thread_arg {
  const tp_tok *t;
  const ids_vec *ref;
  size_t mismatches;
} thread_arg;

static void *encode_worker(void *p) {
  thread_arg *a = p;
  for (int round = 0; round < 50; round++) {
    for (size_t i = 0; i < N_SENTENCES; i++) {
      int32_t *ids = NULL;
      size_t n = 0;
      if (tp_tok_encode(a->t, k_sentences[i], strlen(k_sentences[i]), &ids, &n) != 0 ||
          !ids_equal(ids, n, a->ref[i].ids, a->ref[i].n))
        a->mismatches++;
      free(ids);
    }
  }
  return NULL;
}

static void test_threads(const tp_tok *t) {
  ids_vec ref[N_SENTENCES];
  for (size_t i = 0; i < N_SENTENCES; i++)
    tp_tok_encode(t, k_sentences[i], strlen(k_sentences[i]), &ref[i].ids, &ref[i].n);
  enum { N_THREADS = 4 };
  pthread_t th[N_THREADS];
  thread_arg args[N_THREADS];
  int started = 0;
  for (int i = 0; i < N_THREADS; i++) {
    args[i] = (thread_arg){.t = t, .ref = ref, .mismatches = 0};
    if (pthread_create(&th[i], NULL, encode_worker, &args[i]) == 0) started++;
  }
  size_t mismatches = 0;
  for (int i = 0; i < started; i++) {
    pthread_join(th[i], NULL);
    mismatches += args[i].mismatches;
  }
  CHECK_INT(started, N_THREADS, "encode threads started");
  CHECK_INT(mismatches, 0, "concurrent encodes equal the single-threaded ones");
  for (size_t i = 0; i < N_SENTENCES; i++) free(ref[i].ids);
}

static void test_edges(const tp_tok *t) {
  int32_t *ids = NULL;
  size_t n = 99;
  CHECK(tp_tok_encode(t, NULL, 0, &ids, &n) == 0 && n == 0 && ids != NULL,
        "encode of NULL/0 gives zero ids and a freeable array");
  free(ids);
  CHECK_INT(tp_tok_encode(t, NULL, 3, &ids, &n), TP_EINVAL, "encode of NULL with len > 0");

  char *text = NULL;
  size_t len = 99;
  CHECK(tp_tok_decode(t, NULL, 0, &text, &len) == 0 && text != NULL && len == 0 &&
            text[0] == '\0',
        "decode of no ids gives \"\"");
  free(text);
  int32_t bad_hi[] = {3, 1000000};
  text = NULL;
  CHECK_INT(tp_tok_decode(t, bad_hi, 2, &text, &len), TP_EINVAL, "decode of an id past the vocabulary");
  CHECK(text == NULL, "failed decode returns no text");
  int32_t bad_neg[] = {-1};
  CHECK_INT(tp_tok_decode(t, bad_neg, 1, &text, &len), TP_EINVAL, "decode of a negative id");
  CHECK_STR(tp_tok_name(t), "sentencepiece", "backend name");
  tp_tok_free(NULL); /* must be a no-op */
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

static void make_path(tp_buf *b, const char *a, const char *c) {
  tp_buf_reset(b);
  tp_buf_printf(b, "%s/%s", a, c);
}

static void test_errors(const char *words_model) {
  char err[1024];
  tp_tok *t = (tp_tok *)1;
  tp_buf p, d;
  tp_buf_init(&p);
  tp_buf_init(&d);

  /* Missing path. */
  make_path(&p, tmp_root, "no/such/tokenizer.model");
  err[0] = 0;
  CHECK_INT(tp_tok_load(&t, (char *)p.data, err, sizeof(err)), TP_ENOTFOUND, "missing path");
  CHECK(t == NULL, "failed load leaves *out NULL");
  CHECK(strstr(err, (char *)p.data) != NULL, "missing-path message names the path: %s", err);

  CHECK_INT(tp_tok_load(&t, "", err, sizeof(err)), TP_EINVAL, "empty path");
  CHECK_INT(tp_tok_load(&t, NULL, NULL, 0), TP_EINVAL, "NULL path, no err buffer");

  /* A directory without tokenizer.model: the message names the directory,
   * what was looked for and what is there. */
  make_path(&d, tmp_root, "model-dir");
  mkdir((char *)d.data, 0700);
  make_path(&p, (char *)d.data, "config.json");
  write_file((char *)p.data, "{}", 2);
  make_path(&p, (char *)d.data, "model.safetensors");
  write_file((char *)p.data, "x", 1);
  make_path(&p, (char *)d.data, "snapshots");
  mkdir((char *)p.data, 0700);
  err[0] = 0;
  CHECK_INT(tp_tok_load(&t, (char *)d.data, err, sizeof(err)), TP_ENOTFOUND,
            "directory without tokenizer.model");
  CHECK(strstr(err, (char *)d.data) && strstr(err, "tokenizer.model") &&
            strstr(err, "tokenizer.json") && strstr(err, "config.json") &&
            strstr(err, "model.safetensors") && strstr(err, "snapshots/"),
        "message names the directory, what was looked for and found: %s", err);

  /* A sibling *.model is pointed out, not silently loaded. */
  make_path(&p, (char *)d.data, "spiece.model");
  CHECK(symlink(words_model, (char *)p.data) == 0, "symlink spiece.model");
  CHECK_INT(tp_tok_load(&t, (char *)d.data, err, sizeof(err)), TP_ENOTFOUND,
            "directory with only spiece.model");
  CHECK(strstr(err, "spiece.model") != NULL, "message points at spiece.model: %s", err);

  /* An empty directory. */
  make_path(&p, tmp_root, "empty-dir");
  mkdir((char *)p.data, 0700);
  CHECK_INT(tp_tok_load(&t, (char *)p.data, err, sizeof(err)), TP_ENOTFOUND, "empty directory");
  CHECK(strstr(err, "empty") != NULL, "message says the directory is empty: %s", err);

  /* The directory gains a tokenizer.model (a symlink): it loads, and gives
   * the same ids as the model loaded directly. */
  make_path(&p, (char *)d.data, "tokenizer.model");
  CHECK(symlink(words_model, (char *)p.data) == 0, "symlink tokenizer.model");
  tp_tok *direct = NULL;
  int rc_direct = tp_tok_load(&direct, words_model, err, sizeof(err));
  err[0] = 0;
  int rc = tp_tok_load(&t, (char *)d.data, err, sizeof(err));
  CHECK(rc == 0 && t != NULL, "directory with tokenizer.model loads (rc %d: %s)", rc, err);
  if (rc == 0 && rc_direct == 0) {
    CHECK_STR(t->path, (char *)p.data, "loaded path is the directory's tokenizer.model");
    int32_t *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    const char *s = k_sentences[1];
    tp_tok_encode(t, s, strlen(s), &a, &na);
    tp_tok_encode(direct, s, strlen(s), &b, &nb);
    CHECK(na > 0 && ids_equal(a, na, b, nb), "same ids through the directory");
    free(a);
    free(b);
    tp_tok_free(t);
  }
  tp_tok_free(direct);

  /* A copy under a name without .model loads: content decides. */
  make_path(&p, tmp_root, "tok.bin");
  CHECK(copy_file(words_model, (char *)p.data) == 0, "copy the model");
  t = NULL;
  err[0] = 0;
  rc = tp_tok_load(&t, (char *)p.data, err, sizeof(err));
  CHECK(rc == 0 && t != NULL, "a model named tok.bin loads (rc %d: %s)", rc, err);
  tp_tok_free(t);

  /* A garbage file: TP_EINVAL, naming the file and sentencepiece's reason. */
  static const char garbage[] = "this is not a sentencepiece model \x01\x02\xff\xfe\x80";
  make_path(&p, tmp_root, "garbage.model");
  write_file((char *)p.data, garbage, sizeof(garbage) - 1);
  err[0] = 0;
  CHECK_INT(tp_tok_load(&t, (char *)p.data, err, sizeof(err)), TP_EINVAL, "garbage file");
  CHECK(strstr(err, (char *)p.data) && strstr(err, "sentencepiece"),
        "garbage message names the file: %s", err);
  /* sentencepiece's own reason follows our wording, and is not empty. */
  const char *reason = strstr(err, "sentencepiece says: ");
  CHECK(reason != NULL && strcspn(reason + strlen("sentencepiece says: "), ")") > 3,
        "garbage message carries sentencepiece's reason");

  /* Truncated model: the first half of a real one. */
  FILE *f = fopen(words_model, "rb");
  char half[2048];
  size_t got = f ? fread(half, 1, sizeof(half), f) : 0;
  if (f) fclose(f);
  make_path(&p, tmp_root, "truncated.model");
  write_file((char *)p.data, half, got / 2);
  CHECK_INT(tp_tok_load(&t, (char *)p.data, err, sizeof(err)), TP_EINVAL, "truncated model");

  make_path(&p, tmp_root, "zero.model");
  write_file((char *)p.data, "", 0);
  CHECK_INT(tp_tok_load(&t, (char *)p.data, err, sizeof(err)), TP_EINVAL, "empty file");
  CHECK(strstr(err, "empty") != NULL, "message says the file is empty: %s", err);

  /* tokenizer.json goes to its own backend (test_tok_hf.c tests it in
   * depth): an incomplete one is refused naming the file and what is
   * missing, whether given as the file, its directory, or another name. */
  static const char json[] = "{\n  \"version\": \"1.0\",\n  \"model\": {\"type\": \"BPE\"}\n}\n";
  make_path(&d, tmp_root, "hf-dir");
  mkdir((char *)d.data, 0700);
  make_path(&p, (char *)d.data, "tokenizer.json");
  write_file((char *)p.data, json, sizeof(json) - 1);
  err[0] = 0;
  CHECK_INT(tp_tok_load(&t, (char *)p.data, err, sizeof(err)), TP_EINVAL, "incomplete tokenizer.json refused");
  CHECK(strstr(err, "tokenizer.json") && strstr(err, "vocab"), "the message names the file and the missing vocab: %s",
        err);
  err[0] = 0;
  CHECK_INT(tp_tok_load(&t, (char *)d.data, err, sizeof(err)), TP_EINVAL,
            "a directory with only tokenizer.json goes to the tokenizer.json backend");
  CHECK(strstr(err, "vocab") != NULL, "and gets its message: %s", err);
  /* JSON content under another name is recognised too. */
  make_path(&p, tmp_root, "tok.dat");
  write_file((char *)p.data, json, sizeof(json) - 1);
  CHECK_INT(tp_tok_load(&t, (char *)p.data, err, sizeof(err)), TP_EINVAL, "JSON content without .json");

  tp_buf_fini(&p);
  tp_buf_fini(&d);
}

/* ------------------------------------------------------------------------ */
/* Special tokens                                                           */

/* Loads path with TP_TOK_FLAG_SPECIAL_TOKENS and checks what " the of and"
 * becomes: the plain ids (which must not change) wrapped in want_pre and
 * want_post, and the description. */
static void check_special(const char *path, const char *what, const int32_t *pre, size_t n_pre,
                          const int32_t *post, size_t n_post, const char *want_desc) {
  static const char text[] = " the of and";
  char err[1024] = "";
  tp_tok *t = NULL;
  int rc = tp_tok_load_ex(&t, path, TP_TOK_FLAG_SPECIAL_TOKENS, err, sizeof(err));
  CHECK(rc == 0 && t != NULL, "%s: loads with special tokens (rc %d: %s)", what, rc, err);
  if (t == NULL) return;
  int32_t *plain = NULL, *ids = NULL;
  size_t n_plain = 0, n = 0, count = 0;
  CHECK(tp_tok_encode(t, text, strlen(text), &plain, &n_plain) == 0 && n_plain == 3, "%s: plain ids (3)",
        what);
  rc = tp_tok_encode_special(t, text, strlen(text), &ids, &n);
  bool ok = rc == 0 && n == n_pre + n_plain + n_post;
  if (ok && n_pre) ok = memcmp(ids, pre, n_pre * sizeof(int32_t)) == 0;
  if (ok) ok = memcmp(ids + n_pre, plain, n_plain * sizeof(int32_t)) == 0;
  if (ok && n_post) ok = memcmp(ids + n_pre + n_plain, post, n_post * sizeof(int32_t)) == 0;
  CHECK(ok, "%s: ids with special tokens are the plain ids wrapped (%zu before, %zu after)", what, n_pre,
        n_post);
  if (!ok) print_ids("got", ids, n);
  CHECK(tp_tok_count_special(t, text, strlen(text), &count) == 0 && count == n_pre + n_plain + n_post,
        "%s: count with special tokens is %zu (got %zu)", what, n_pre + n_plain + n_post, count);
  CHECK(tp_tok_count_special(t, "", 0, &count) == 0 && count == n_pre + n_post,
        "%s: the empty text counts only its special tokens (%zu)", what, count);
  CHECK_STR(tp_tok_special_desc(t), want_desc, what);
  free(plain);
  free(ids);
  tp_tok_free(t);
}

/* Writes dir/tokenizer_config.json, or removes it when json is NULL. */
static void set_config(const char *dir, const char *json) {
  tp_buf p;
  tp_buf_init(&p);
  make_path(&p, dir, "tokenizer_config.json");
  if (json)
    write_file((char *)p.data, json, strlen(json));
  else
    unlink((char *)p.data);
  tp_buf_fini(&p);
}

static void test_special(const char *words_model) {
  static const int32_t bos[] = {1}, eos[] = {2};
  char err[1024];
  tp_tok *t = NULL;

  /* Loaded plainly: nothing is read, the special calls refuse. */
  CHECK_INT(tp_tok_load(&t, words_model, err, sizeof(err)), 0, "plain load");
  int32_t *ids = (int32_t *)1;
  size_t n = 1, count = 1;
  CHECK_INT(tp_tok_encode_special(t, "a", 1, &ids, &n), TP_EINVAL, "encode_special needs the flag");
  CHECK(ids == NULL && n == 0, "and returns no ids");
  CHECK_INT(tp_tok_count_special(t, "a", 1, &count), TP_EINVAL, "count_special needs the flag");
  CHECK(tp_tok_special_desc(t) == NULL, "no description without the flag");
  tp_tok_free(t);

  /* The model alone: BOS (the model has one), no EOS. */
  check_special(words_model, "words model", bos, 1, NULL, 0, "<s> $A");

  /* A directory holding the model: its tokenizer_config.json decides,
   * whether the directory or the file in it is given. */
  tp_buf d, m;
  tp_buf_init(&d);
  tp_buf_init(&m);
  make_path(&d, tmp_root, "special-dir");
  mkdir((char *)d.data, 0700);
  make_path(&m, (char *)d.data, "tokenizer.model");
  CHECK(symlink(words_model, (char *)m.data) == 0, "symlink the model");
  const char *dir = (char *)d.data, *model = (char *)m.data;
  check_special(dir, "no tokenizer_config.json", bos, 1, NULL, 0, "<s> $A");
  set_config(dir, "{\"add_bos_token\": true, \"add_eos_token\": true, \"model_max_length\": 4096}");
  check_special(dir, "config adds BOS and EOS (directory)", bos, 1, eos, 1, "<s> $A </s>");
  check_special(model, "config adds BOS and EOS (file)", bos, 1, eos, 1, "<s> $A </s>");
  set_config(dir, "{\"add_bos_token\": false}");
  check_special(dir, "config: add_bos_token false", NULL, 0, NULL, 0, "$A");
  set_config(dir, "{\"add_eos_token\": true}");
  check_special(dir, "config: add_eos_token only (BOS stays the default)", bos, 1, eos, 1, "<s> $A </s>");
  set_config(dir, "{\"add_bos_token\": null, \"tokenizer_class\": \"LlamaTokenizer\"}");
  check_special(dir, "config: null is unset", bos, 1, NULL, 0, "<s> $A");

  /* A bad tokenizer_config.json fails only a load that reads it. */
  set_config(dir, "{\"add_bos_token\": \"yes\"}");
  err[0] = 0;
  CHECK_INT(tp_tok_load_ex(&t, dir, TP_TOK_FLAG_SPECIAL_TOKENS, err, sizeof(err)), TP_EINVAL,
            "add_bos_token a string");
  CHECK(strstr(err, "tokenizer_config.json") && strstr(err, "add_bos_token") && strstr(err, "true or false"),
        "the message names the file and the field: %s", err);
  set_config(dir, "{\"add_bos_token\": tru");
  err[0] = 0;
  CHECK_INT(tp_tok_load_ex(&t, dir, TP_TOK_FLAG_SPECIAL_TOKENS, err, sizeof(err)), TP_EINVAL,
            "tokenizer_config.json not JSON");
  CHECK(strstr(err, "tokenizer_config.json") && strstr(err, "not valid JSON"), "the message says so: %s",
        err);
  t = NULL;
  CHECK_INT(tp_tok_load(&t, dir, err, sizeof(err)), 0, "without the flag the broken config is not read");
  tp_tok_free(t);
  set_config(dir, "[true]");
  CHECK_INT(tp_tok_load_ex(&t, dir, TP_TOK_FLAG_SPECIAL_TOKENS, err, sizeof(err)), TP_EINVAL,
            "tokenizer_config.json not an object");
  set_config(dir, NULL);

  /* A model without BOS adds nothing by default, and refuses a config
   * asking for one. */
  tp_buf cmd, nobos;
  tp_buf_init(&cmd);
  tp_buf_init(&nobos);
  make_path(&d, tmp_root, "nobos-dir");
  mkdir((char *)d.data, 0700);
  dir = (char *)d.data;
  make_path(&nobos, dir, "nobos");
  const char *src = getenv("TP_SOURCE_ROOT");
  tp_buf_printf(&cmd, "spm_train --input=%s/test/data/words_corpus.txt --model_prefix=", src ? src : ".");
  shell_quote(&cmd, (char *)nobos.data);
  tp_buf_append_str(&cmd,
                    " --input_sentence_size=0 --shuffle_input_sentence=false --num_threads=1 "
                    "--minloglevel=2 --model_type=word --vocab_size=258 --use_all_vocab=true "
                    "--bos_id=-1 >/dev/null 2>&1");
  int rc = system((char *)cmd.data);
  CHECK(rc == 0, "spm_train made a model without BOS (%s)", (char *)cmd.data);
  make_path(&nobos, dir, "nobos.model");
  if (rc == 0) {
    check_special((char *)nobos.data, "model without BOS", NULL, 0, NULL, 0, "$A");
    set_config(dir, "{\"add_eos_token\": true}");
    check_special((char *)nobos.data, "model without BOS, config adds EOS", NULL, 0, eos, 1, "$A </s>");
    set_config(dir, "{\"add_bos_token\": true}");
    err[0] = 0;
    CHECK_INT(tp_tok_load_ex(&t, (char *)nobos.data, TP_TOK_FLAG_SPECIAL_TOKENS, err, sizeof(err)), TP_EINVAL,
              "config asks for a BOS the model lacks");
    CHECK(strstr(err, "add_bos_token") && strstr(err, "no BOS") && strstr(err, (char *)nobos.data),
          "the message names the model and the setting: %s", err);
  }
  tp_buf_fini(&cmd);
  tp_buf_fini(&nobos);
  tp_buf_fini(&d);
  tp_buf_fini(&m);
}

int main(void) {
  const char *words = getenv("TP_WORDS_MODEL");
  const char *prose = getenv("TP_PROSE_MODEL");
  if (words == NULL || prose == NULL) {
    printf("1..0 # SKIP TP_WORDS_MODEL/TP_PROSE_MODEL not set (spm_train missing?)\n");
    return 0;
  }
  const char *tmp = getenv("TMPDIR");
  snprintf(tmp_root, sizeof(tmp_root), "%s/tp_test_tok.XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (mkdtemp(tmp_root) == NULL) {
    printf("Bail out! mkdtemp: %s\n", strerror(errno));
    return 1;
  }

  char err[1024] = "";
  tp_tok *tw = NULL, *tp = NULL;
  int rc = tp_tok_load(&tw, words, err, sizeof(err));
  CHECK(rc == 0 && tw != NULL, "load words model (rc %d: %s)", rc, err);
  rc = tp_tok_load(&tp, prose, err, sizeof(err));
  CHECK(rc == 0 && tp != NULL, "load prose model (rc %d: %s)", rc, err);

  if (tw != NULL) {
    test_words_one_token_each(tw);
    test_words_sentences(tw);
    test_matches_spm_encode(tw, words, "words");
    check_roundtrip(tw, "words", "the of and to in is that it");
    check_roundtrip(tw, "words", "children found enough paper during the night");
    test_edges(tw);
  }
  if (tp != NULL) {
    test_prose_merges(tp);
    test_matches_spm_encode(tp, prose, "prose");
    check_roundtrip(tp, "prose", "The clockmaker repaired the pendulum near the harbour.");
    check_roundtrip(tp, "prose", "A naïve question, asked in the café at 08:15, took 3 hours.");
    check_roundtrip(tp, "prose", "Rain arrived; gulls argued, and everyone's coffee went cold.");
    check_roundtrip(tp, "prose", "zyxwvut qpq xkcd");
    test_threads(tp);
  }
  test_errors(words);
  test_special(words);

  tp_tok_free(tw);
  tp_tok_free(tp);
  nftw(tmp_root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  return tp_test_done();
}
