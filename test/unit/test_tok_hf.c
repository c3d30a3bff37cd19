/* Unit tests of the tokenizer.json backend (lib/tokenizer/tp_tok_hf*.c).
 *
 * Exactness on real files is test/tok's job (id for id against Hugging
 * Face's library).  Here: small hand-made tokenizers whose ids are worked
 * out by hand (merge ranks, ties, byte fallback, unk, added-token flags),
 * a table of bad files that must each give a message naming the file and
 * the field at fault, every prefix of a file (truncation at each byte),
 * input ending right before an unmapped page, the directory dispatch,
 * concurrent encoding from several threads, and the post-processors read
 * to add special tokens (TP_TOK_FLAG_SPECIAL_TOKENS). */
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tokenizer/tp_tok.h"
#include "tokenizer/tp_tok_hf.h"
#include "tp_test.h"
#include "util/tp_common.h"

static char tmp_root[256];

static void write_file(const char *path, const char *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (f == NULL) {
    printf("# cannot write %s: %s\n", path, strerror(errno));
    return;
  }
  fwrite(data, 1, n, f);
  fclose(f);
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(p);
}

/* ------------------------------------------------------------------------ */
/* Hand-made tokenizers                                                     */

/* The GPT-2 character of byte b, as UTF-8. */
static void bl_char(tp_buf *b, int byte) {
  uint32_t cp = (uint32_t)byte;
  if (byte <= 32)
    cp = 256u + (uint32_t)byte;
  else if (byte >= 127 && byte <= 160)
    cp = 256u + 33u + (uint32_t)(byte - 127);
  else if (byte == 173)
    cp = 256u + 33u + 34u;
  if (cp < 0x80) {
    tp_buf_append(b, &(char){(char)cp}, 1);
  } else {
    char u[2] = {(char)(0xC0 | (cp >> 6)), (char)(0x80 | (cp & 0x3F))};
    tp_buf_append(b, u, 2);
  }
}

/* A byte-level BPE: byte b has id b; merged tokens follow from 256 in the
 * order of merges[] ("left right", in GPT-2 characters).  `extra` is
 * spliced into the top-level object (normalizer, added tokens, ...). */
static char *bytelevel_json(const char *const *merges, size_t n_merges, const char *pre, const char *extra) {
  tp_buf b;
  tp_buf_init(&b);
  tp_buf_append_str(&b, "{\"version\":\"1.0\",");
  tp_buf_append_str(&b, extra);
  tp_buf_printf(&b, "\"pre_tokenizer\":%s,", pre);
  tp_buf_append_str(&b,
                    "\"decoder\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,"
                    "\"trim_offsets\":false,\"use_regex\":false},"
                    "\"model\":{\"type\":\"BPE\",\"byte_fallback\":false,\"vocab\":{");
  for (int i = 0; i < 256; i++) {
    tp_buf_append_str(&b, i ? ",\"" : "\"");
    if (i == '"' || i == '\\') tp_buf_append_str(&b, "\\");
    bl_char(&b, i);
    tp_buf_printf(&b, "\":%d", i);
  }
  for (size_t m = 0; m < n_merges; m++) {
    const char *sp = strchr(merges[m], ' ');
    tp_buf_printf(&b, ",\"%.*s%s\":%zu", (int)(sp - merges[m]), merges[m], sp + 1, 256 + m);
  }
  tp_buf_append_str(&b, "},\"merges\":[");
  for (size_t m = 0; m < n_merges; m++) tp_buf_printf(&b, "%s\"%s\"", m ? "," : "", merges[m]);
  tp_buf_append_str(&b, "]}}");
  return tp_buf_steal(&b, NULL);
}

static const char k_qwen_pre[] =
    "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"Regex\":"
    "\"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}| "
    "?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+\"},"
    "\"behavior\":\"Isolated\",\"invert\":false},{\"type\":\"ByteLevel\",\"add_prefix_space\":"
    "false,\"trim_offsets\":false,\"use_regex\":false}]}";

static tp_tok *load_mem(const char *json, const char *name) {
  char err[1024];
  tp_tok *t = NULL;
  int rc = tp__tok_hf_load_mem(&t, name, json, strlen(json), 0, err, sizeof(err));
  if (rc != 0) printf("# load %s failed: %s\n", name, err);
  return t;
}

static bool encode_is(const tp_tok *t, const char *text, size_t len, const int32_t *want, size_t n_want) {
  int32_t *ids = NULL;
  size_t n = 0;
  int rc = tp_tok_encode(t, text, len, &ids, &n);
  bool ok = rc == 0 && n == n_want && (n == 0 || memcmp(ids, want, n * sizeof(int32_t)) == 0);
  if (!ok) {
    printf("#   rc %d, got", rc);
    for (size_t i = 0; i < n; i++) printf(" %d", ids[i]);
    printf(", want");
    for (size_t i = 0; i < n_want; i++) printf(" %d", want[i]);
    printf("\n");
  }
  free(ids);
  return ok;
}

#define ENC(t, text, ...)                                              \
  encode_is((t), (text), strlen(text), (const int32_t[]){__VA_ARGS__}, \
            sizeof((const int32_t[]){__VA_ARGS__}) / sizeof(int32_t))

static char *decode_str(const tp_tok *t, const int32_t *ids, size_t n) {
  char *s = NULL;
  size_t len = 0;
  if (tp_tok_decode(t, ids, n, &s, &len) != 0) return NULL;
  return s;
}

static void test_merge_ranks(void) {
  /* Lower rank first: with "b c" ranked before "a b", "abc" goes
   * a + bc -> abc; with "a b" first, ab + c -> abc through another merge
   * (the ids show which path was taken). */
  static const char *const m1[] = {"b c", "a b", "a bc"};
  char *j1 = bytelevel_json(m1, 3, k_qwen_pre, "");
  tp_tok *t1 = load_mem(j1, "ranks1.json");
  CHECK(t1 != NULL, "byte-level tokenizer loads");
  if (t1) {
    CHECK(ENC(t1, "abc", 258), "b c merges before a b: abc is a+bc (id 258)");
    CHECK(ENC(t1, "ab", 257), "a b alone merges");
    CHECK(ENC(t1, "cab", 'c', 257), "c + ab");
    /* 60 x "abc" is 180 symbols: the heap merge loop must keep the rank
     * order too (a wrong order gives ab + c, which has no merge here). */
    char w[181];
    int32_t want[60];
    for (int i = 0; i < 60; i++) memcpy(w + 3 * i, "abc", 3), want[i] = 258;
    w[180] = 0;
    CHECK(encode_is(t1, w, 180, want, 60), "60 x abc -> 60 x a+bc on the heap path");
    CHECK_STR(tp_tok_name(t1), "tokenizer.json", "backend name");
    tp_tok_free(t1);
  }
  free(j1);

  static const char *const m2[] = {"a b", "b c", "ab c"};
  char *j2 = bytelevel_json(m2, 3, k_qwen_pre, "");
  tp_tok *t2 = load_mem(j2, "ranks2.json");
  if (t2) {
    CHECK(ENC(t2, "abc", 258), "a b merges first: abc is ab+c (id 258)");
    CHECK(ENC(t2, "bc", 257), "b c alone");
    tp_tok_free(t2);
  }
  free(j2);

  /* Ties go to the leftmost pair: "aaa" is aa + a, "aaaaa" aa aa a. */
  static const char *const m3[] = {"a a"};
  char *j3 = bytelevel_json(m3, 1, k_qwen_pre, "");
  tp_tok *t3 = load_mem(j3, "ties.json");
  if (t3) {
    CHECK(ENC(t3, "aaa", 256, 'a'), "aaa: leftmost pair merges first");
    CHECK(ENC(t3, "aaaaa", 256, 256, 'a'), "aaaaa: aa aa a");
    /* Long words take the heap path: the same rule must hold. */
    char big[1001];
    memset(big, 'a', 1000);
    big[1000] = 0;
    int32_t want[500];
    for (int i = 0; i < 500; i++) want[i] = 256;
    CHECK(encode_is(t3, big, 1000, want, 500), "1000 a's: 500 aa (heap merge loop)");
    big[999] = 0;
    int32_t want2[500];
    for (int i = 0; i < 499; i++) want2[i] = 256;
    want2[499] = 'a';
    CHECK(encode_is(t3, big, 999, want2, 500), "999 a's: 499 aa and a");
    tp_tok_free(t3);
  }
  free(j3);
}

static void test_bytelevel(void) {
  /* "Ġ" is GPT-2's character for the space byte. */
  static const char *const m[] = {"\xc4\xa0 t", "h e", "\xc4\xa0t he", "l l", "e ll"};
  char *j = bytelevel_json(m, 5, k_qwen_pre,
                           "\"normalizer\":{\"type\":\"NFC\"},\"added_tokens\":[{\"id\":261,"
                           "\"content\":\"<|im_start|>\",\"single_word\":false,\"lstrip\":false,"
                           "\"rstrip\":false,\"normalized\":false,\"special\":true}],");
  tp_tok *t = load_mem(j, "bytelevel.json");
  CHECK(t != NULL, "byte-level tokenizer with NFC and an added token loads");
  if (t == NULL) {
    free(j);
    return;
  }
  /* "the" -> t + he; " the" -> Ġthe; " hello" -> Ġ he ll o ("he ll" has
   * no merge, "e ll" needs a lone e). */
  CHECK(ENC(t, "the", 't', 257), "the -> t he");
  CHECK(ENC(t, " the", 258), "' the' -> one token");
  CHECK(ENC(t, " hello", 32, 257, 259, 'o'), "' hello' -> Ġ he ll o");
  CHECK(ENC(t, "ell", 260), "ell -> e ll merged");
  /* An added token is cut out first, so text after it starts a new word. */
  CHECK(ENC(t, "x<|im_start|> the", 'x', 261, 258), "added token in the middle");
  CHECK(ENC(t, "<|im_start|>", 261), "added token alone");
  CHECK(ENC(t, "<|im_start", '<', '|', 'i', 'm', '_', 's', 't', 'a', 'r', 't'),
        "a partial added token is plain text");
  /* NFC: e + U+0301 is é (C3 A9), each byte its own token. */
  CHECK(ENC(t, "e\xcc\x81", 0xC3, 0xA9), "NFC composes e + combining acute");
  /* Invalid UTF-8 is replaced by U+FFFD (EF BF BD) first. */
  CHECK(ENC(t, "a\xff", 'a', 0xEF, 0xBF, 0xBD), "invalid byte -> U+FFFD");
  CHECK(ENC(t, "\xe2\x82", 0xEF, 0xBF, 0xBD), "truncated sequence -> one U+FFFD");
  int32_t *ids = (int32_t *)1;
  size_t n = 7;
  CHECK(tp_tok_encode(t, "", 0, &ids, &n) == 0 && n == 0, "empty text -> no ids");
  free(ids);
  size_t count = 0;
  CHECK(tp_tok_count(t, " the hello", 10, &count) == 0 && count == 5, "count: 5 tokens");

  /* Decode inverts encode, added tokens included. */
  static const char *const samples[] = {"the hello", "h\xc3\xa9llo w\xc3\xb6rld\n\ttabs",
                                        "<|im_start|>user\nhi", "\xf0\x9f\x98\x80 emoji", ""};
  for (size_t i = 0; i < TP_ARRAY_LEN(samples); i++) {
    int32_t *v = NULL;
    size_t k = 0;
    tp_tok_encode(t, samples[i], strlen(samples[i]), &v, &k);
    char *s = decode_str(t, v, k);
    CHECK_STR(s, samples[i], "decode(encode(x)) == x");
    free(s);
    free(v);
  }
  /* Half a character decodes to U+FFFD, as from_utf8_lossy does. */
  char *s = decode_str(t, (const int32_t[]){0xC3}, 1);
  CHECK_STR(s, "\xef\xbf\xbd", "a lone lead byte decodes to U+FFFD");
  free(s);
  char *out = NULL;
  size_t len = 0;
  CHECK_INT(tp_tok_decode(t, (const int32_t[]){5000}, 1, &out, &len), TP_EINVAL,
            "an id no token has: TP_EINVAL");
  CHECK_INT(tp_tok_decode(t, (const int32_t[]){-1}, 1, &out, &len), TP_EINVAL, "a negative id: TP_EINVAL");
  tp_tok_free(t);
  free(j);
}

/* A sentencepiece-style BPE (Llama 2 / Mistral): ▁ for spaces through the
 * Prepend + Replace normalizers, <0xNN> byte fallback, <unk>. */
static char *spm_json(bool byte_fallback, bool fuse_unk) {
  tp_buf b;
  tp_buf_init(&b);
  tp_buf_append_str(
      &b,
      "{\"added_tokens\":[{\"id\":0,\"content\":\"<unk>\",\"special\":true,\"normalized\":false},"
      "{\"id\":1,\"content\":\"<s>\",\"special\":true,\"normalized\":false}],"
      "\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Prepend\",\"prepend\":"
      "\"\xe2\x96\x81\"},{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":"
      "\"\xe2\x96\x81\"}]},\"pre_tokenizer\":null,"
      "\"decoder\":{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"Replace\",\"pattern\":"
      "{\"String\":\"\xe2\x96\x81\"},\"content\":\" \"},{\"type\":\"ByteFallback\"},{\"type\":"
      "\"Fuse\"},{\"type\":\"Strip\",\"content\":\" \",\"start\":1,\"stop\":0}]},");
  tp_buf_printf(&b,
                "\"model\":{\"type\":\"BPE\",\"unk_token\":\"<unk>\",\"byte_fallback\":%s,"
                "\"fuse_unk\":%s,\"vocab\":{\"<unk>\":0,\"<s>\":1",
                byte_fallback ? "true" : "false", fuse_unk ? "true" : "false");
  for (int i = 0; i < 256; i++) tp_buf_printf(&b, ",\"<0x%02X>\":%d", i, 2 + i);
  /* 258 ▁, 259 h, 260 i, 261 ▁h, 262 ▁hi */
  tp_buf_append_str(&b,
                    ",\"\xe2\x96\x81\":258,\"h\":259,\"i\":260,\"\xe2\x96\x81h\":261,"
                    "\"\xe2\x96\x81hi\":262},\"merges\":[[\"\xe2\x96\x81\",\"h\"],"
                    "[\"\xe2\x96\x81h\",\"i\"]]}}");
  return tp_buf_steal(&b, NULL);
}

static void test_sentencepiece_style(void) {
  char *j = spm_json(true, true);
  tp_tok *t = load_mem(j, "spm.json");
  CHECK(t != NULL, "sentencepiece-style tokenizer.json loads");
  if (t) {
    CHECK(ENC(t, "hi", 262), "hi -> ▁hi (Prepend, then pair merges)");
    CHECK(ENC(t, "hi hi", 262, 262), "space -> ▁ (Replace)");
    CHECK(ENC(t, "hx", 261, 2 + 'x'), "x is not in the vocabulary: <0x78>");
    CHECK(ENC(t, "h\xe2\x82\xac", 261, 2 + 0xE2, 2 + 0x82, 2 + 0xAC), "the euro sign as 3 bytes");
    CHECK(ENC(t, "<s>hi", 1, 262), "<s> cut out; the rest gets its own ▁");
    char *s = decode_str(t, (const int32_t[]){262, 258, 2 + 0xE2, 2 + 0x82, 2 + 0xAC}, 5);
    CHECK_STR(s, "hi \xe2\x82\xac", "decode: ▁ to space, bytes fused, leading space stripped");
    free(s);
    s = decode_str(t, (const int32_t[]){262, 2 + 0xE2, 2 + 0x82}, 3);
    CHECK_STR(s, "hi\xef\xbf\xbd\xef\xbf\xbd", "decode: invalid bytes -> one U+FFFD each");
    free(s);
    tp_tok_free(t);
  }
  free(j);
  /* Without byte fallback unknown characters become <unk>: runs fused into
   * one with fuse_unk, one each without. */
  j = spm_json(false, true);
  t = load_mem(j, "spm-unk-fuse.json");
  if (t) {
    CHECK(ENC(t, "hxyi", 261, 0, 260), "fuse_unk: x y -> one <unk>");
    tp_tok_free(t);
  }
  free(j);
  j = spm_json(false, false);
  t = load_mem(j, "spm-unk.json");
  if (t) {
    CHECK(ENC(t, "hxyi", 261, 0, 0, 260), "no fuse_unk: one <unk> per character");
    tp_tok_free(t);
  }
  free(j);
}

static void test_added_flags(void) {
  static const char *const m[] = {"h e"};
  char *j = bytelevel_json(
      m, 1, k_qwen_pre,
      "\"added_tokens\":["
      "{\"id\":400,\"content\":\"[A]\",\"lstrip\":true,\"special\":true,\"normalized\":false},"
      "{\"id\":401,\"content\":\"[B]\",\"rstrip\":true,\"special\":true,\"normalized\":false},"
      "{\"id\":402,\"content\":\"he\",\"single_word\":true,\"special\":false,\"normalized\":true},"
      "{\"id\":9,\"content\":\"[C]\",\"special\":false,\"normalized\":false}],");
  tp_tok *t = load_mem(j, "flags.json");
  CHECK(t != NULL, "tokenizer with added-token flags loads");
  if (t) {
    /* Ids: "he" is in the vocabulary (256); [A] [B] [C] are not, so they
     * take 257, 258, 259 whatever the file says. */
    CHECK(ENC(t, "x  [A]y", 'x', 257, 'y'), "lstrip eats the spaces before [A]");
    CHECK(ENC(t, "x[B]  y", 'x', 258, 'y'), "rstrip eats the spaces after [B]");
    CHECK(ENC(t, "x [A] [B] y", 'x', 257, 32, 258, 'y'), "the space between [A] and [B] is neither's");
    CHECK(ENC(t, "he", 256), "single_word: he alone matches");
    CHECK(ENC(t, "the", 't', 256), "single_word: he inside a word is not the added token");
    CHECK(ENC(t, "hex", 256, 'x'), "single_word: he before a letter is not the added token");
    CHECK(ENC(t, "a he b", 'a', 32, 256, 32, 'b'), "single_word: between spaces it is cut out");
    CHECK(ENC(t, "[C]", 259), "ids are assigned past the vocabulary, file ids ignored");
    tp_tok_free(t);
  }
  free(j);
}

/* ------------------------------------------------------------------------ */
/* Bad files                                                                */

typedef struct bad_case {
  const char *what;
  const char *json;
  int rc;
  const char *needle; /* must appear in the message */
} bad_case;

#define V2 "\"vocab\":{\"a\":0,\"b\":1,\"ab\":2}"
#define MODEL(extra) "{\"model\":{\"type\":\"BPE\"," V2 ",\"merges\":[\"a b\"]" extra "}}"
#define WITH(field) "{" field ",\"model\":{\"type\":\"BPE\"," V2 ",\"merges\":[\"a b\"]}}"

static const bad_case k_bad[] = {
    {"empty file", "", TP_EINVAL, "no JSON value"},
    {"only spaces", "  \n ", TP_EINVAL, "no JSON value"},
    {"truncated JSON", "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0", TP_EINVAL, "truncated"},
    {"not an object", "[1,2,3]", TP_EINVAL, "expected a tokenizer.json object"},
    {"no model", "{\"version\":\"1.0\"}", TP_EINVAL, "\"model\" is missing"},
    {"model not an object", "{\"model\":[]}", TP_EINVAL, "\"model\" is an array"},
    {"unknown model type", "{\"model\":{\"type\":\"Unigram\",\"vocab\":[]}}", TP_EUNSUPPORTED,
     "model.type \"Unigram\" is not supported"},
    {"WordPiece model", "{\"model\":{\"type\":\"WordPiece\",\"vocab\":{}}}", TP_EUNSUPPORTED,
     "\"WordPiece\""},
    {"model type not a string", "{\"model\":{\"type\":7,\"merges\":[]}}", TP_EINVAL,
     "model.type is a number"},
    {"no type and no merges", "{\"model\":{\"vocab\":{}}}", TP_EUNSUPPORTED, "not a BPE model"},
    {"missing merges", "{\"model\":{\"type\":\"BPE\"," V2 "}}", TP_EINVAL, "model.merges is missing"},
    {"missing vocab", "{\"model\":{\"type\":\"BPE\",\"merges\":[]}}", TP_EINVAL, "model.vocab is missing"},
    {"vocab not an object", "{\"model\":{\"type\":\"BPE\",\"vocab\":[\"a\"],\"merges\":[]}}", TP_EINVAL,
     "model.vocab is an array, expected an object"},
    {"vocab id a string", "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":\"0\"},\"merges\":[]}}", TP_EINVAL,
     "model.vocab[\"a\"] is a string"},
    {"vocab id negative", "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":-1},\"merges\":[]}}", TP_EINVAL,
     "model.vocab[\"a\"] is not a valid id"},
    {"vocab id fractional", "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":1.5},\"merges\":[]}}", TP_EINVAL,
     "not a valid id"},
    {"vocab ids sparse", "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":100000000},\"merges\":[]}}",
     TP_EINVAL, "too sparse"},
    {"merge names an unknown token", "{\"model\":{\"type\":\"BPE\"," V2 ",\"merges\":[\"a b\",\"a c\"]}}",
     TP_EINVAL, "model.merges[1]: token \"c\" is not in model.vocab"},
    {"merged token missing", "{\"model\":{\"type\":\"BPE\"," V2 ",\"merges\":[\"b a\"]}}", TP_EINVAL,
     "model.merges[0]: the merged token \"ba\" is not in model.vocab"},
    {"merge without a space", "{\"model\":{\"type\":\"BPE\"," V2 ",\"merges\":[\"ab\"]}}", TP_EINVAL,
     "expected two tokens separated by one space"},
    {"merge with two spaces", "{\"model\":{\"type\":\"BPE\"," V2 ",\"merges\":[\"a b c\"]}}", TP_EINVAL,
     "model.merges[0] is \"a b c\""},
    {"merges of both forms", "{\"model\":{\"type\":\"BPE\"," V2 ",\"merges\":[\"a b\",[\"a\",\"b\"]]}}",
     TP_EINVAL, "merges are either all strings"},
    {"merge pair of three", "{\"model\":{\"type\":\"BPE\"," V2 ",\"merges\":[[\"a\",\"b\",\"c\"]]}}",
     TP_EINVAL, "model.merges[0] is not a pair"},
    {"merges not an array", "{\"model\":{\"type\":\"BPE\"," V2 ",\"merges\":{}}}", TP_EINVAL,
     "model.merges is an object"},
    {"unk_token not in vocab", MODEL(",\"unk_token\":\"<unk>\""), TP_EINVAL,
     "model.unk_token \"<unk>\" is not in model.vocab"},
    {"dropout out of range", MODEL(",\"dropout\":2"), TP_EINVAL, "model.dropout"},
    {"byte_fallback not a boolean", MODEL(",\"byte_fallback\":\"yes\""), TP_EINVAL,
     "model.byte_fallback is a string"},
    {"unknown normalizer", WITH("\"normalizer\":{\"type\":\"BertNormalizer\"}"), TP_EUNSUPPORTED,
     "normalizer.type \"BertNormalizer\" is not supported"},
    {"normalizer without type", WITH("\"normalizer\":{\"prepend\":\"x\"}"), TP_EINVAL,
     "normalizer has no \"type\""},
    {"normalizer in a sequence",
     WITH("\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFC\"},"
          "{\"type\":\"Precompiled\"}]}"),
     TP_EUNSUPPORTED, "normalizer.normalizers[1].type \"Precompiled\""},
    {"sequence without a list", WITH("\"normalizer\":{\"type\":\"Sequence\"}"), TP_EINVAL,
     "without a \"normalizers\" array"},
    {"unknown pre-tokenizer", WITH("\"pre_tokenizer\":{\"type\":\"Whitespace\"}"), TP_EUNSUPPORTED,
     "pre_tokenizer.type \"Whitespace\" is not supported"},
    {"bad regex",
     WITH("\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"Regex\":\"(ab\"},\"behavior\":"
          "\"Isolated\",\"invert\":false}"),
     TP_EINVAL, "pre_tokenizer.pattern: the regex \"(ab\" cannot be used"},
    {"nested character class",
     WITH("\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"Regex\":\"[a[bc]]\"},"
          "\"behavior\":\"Isolated\",\"invert\":false}"),
     TP_EUNSUPPORTED, "nested"},
    {"bad split behavior",
     WITH("\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"String\":\" \"},\"behavior\":"
          "\"Sideways\",\"invert\":false}"),
     TP_EINVAL, "pre_tokenizer.behavior must be one of"},
    {"pattern not an object",
     WITH("\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":\" \",\"behavior\":\"Isolated\"}"), TP_EINVAL,
     "pre_tokenizer.pattern is a string"},
    {"metaspace replacement of two characters",
     WITH("\"pre_tokenizer\":{\"type\":\"Metaspace\",\"replacement\":\"ab\"}"), TP_EINVAL,
     "pre_tokenizer.replacement must be a single character"},
    {"bad prepend_scheme",
     WITH("\"pre_tokenizer\":{\"type\":\"Metaspace\",\"replacement\":\"_\",\"prepend_scheme\":"
          "\"sometimes\"}"),
     TP_EINVAL, "prepend_scheme must be"},
    {"unknown decoder", WITH("\"decoder\":{\"type\":\"WordPiece\"}"), TP_EUNSUPPORTED,
     "decoder.type \"WordPiece\" is not supported"},
    {"added_tokens not an array", WITH("\"added_tokens\":{}"), TP_EINVAL, "added_tokens is an object"},
    {"added token without content", WITH("\"added_tokens\":[{\"id\":3,\"special\":true}]"), TP_EINVAL,
     "added_tokens[0].content is missing"},
    {"added token not an object", WITH("\"added_tokens\":[\"<s>\"]"), TP_EINVAL,
     "added_tokens[0] is a string"},
    {"invalid UTF-8", "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"\xff\":0},\"merges\":[]}}", TP_EINVAL,
     "not valid UTF-8"},
    {"lone surrogate", "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"\\ud800\":0},\"merges\":[]}}", TP_EINVAL,
     "lone leading surrogate"},
    {"bad escape", "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"\\q\":0},\"merges\":[]}}", TP_EINVAL,
     "invalid escape"},
    {"raw newline in a string", "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\nb\":0}}}", TP_EINVAL,
     "control character inside a string"},
    {"trailing garbage", "{\"model\":{}} x", TP_EINVAL, "trailing characters"},
    {"missing comma", "{\"model\":{} \"x\":1}", TP_EINVAL, "line 1, column 13: expected ',' or '}'"},
    {"error on a later line", "{\n  \"model\": {\n    \"type\": BPE\n  }\n}", TP_EINVAL, "line 3, column 13"},
    {"bad number", "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":01},\"merges\":[]}}", TP_EINVAL,
     "expected ',' or '}'"},
};

static void test_bad_files(void) {
  char path[512];
  for (size_t i = 0; i < TP_ARRAY_LEN(k_bad); i++) {
    const bad_case *c = &k_bad[i];
    snprintf(path, sizeof(path), "%s/bad_%02zu.json", tmp_root, i);
    write_file(path, c->json, strlen(c->json));
    char err[1024] = "";
    tp_tok *t = (tp_tok *)1;
    int rc = tp_tok_load(&t, path, err, sizeof(err));
    bool named = strstr(err, path) != NULL, found = strstr(err, c->needle) != NULL;
    bool clean = true;
    for (const char *p = err; *p; p++)
      if ((unsigned char)*p < 0x20) clean = false;
    CHECK(rc == c->rc && t == NULL && named && found && clean, "%s: %s", c->what, err);
    if (!(rc == c->rc && found))
      printf("#   rc %d (want %d), want \"%s\" in the message\n", rc, c->rc, c->needle);
  }
  /* 2000 nested arrays: an error, not a stack overflow. */
  tp_buf b;
  tp_buf_init(&b);
  tp_buf_append_str(&b, "{\"model\":");
  for (int i = 0; i < 2000; i++) tp_buf_append_str(&b, "[");
  char err[1024] = "";
  tp_tok *t = NULL;
  int rc = tp__tok_hf_load_mem(&t, "deep.json", (char *)b.data, b.len, 0, err, sizeof(err));
  CHECK(rc == TP_EINVAL && strstr(err, "nested too deeply"), "deep nesting: %s", err);
  tp_buf_fini(&b);
  /* A file that is not there, and a directory given as a file. */
  snprintf(path, sizeof(path), "%s/nope/tokenizer.json", tmp_root);
  CHECK_INT(tp_tok_hf_load(&t, path, 0, err, sizeof(err)), TP_ENOTFOUND, "missing file");
  CHECK(strstr(err, path) != NULL, "missing-file message names it: %s", err);
  CHECK_INT(tp_tok_hf_load(&t, tmp_root, 0, err, sizeof(err)), TP_EIO, "a directory is not a file");
}

/* Every proper prefix of a valid file fails cleanly; the whole file loads. */
static void test_truncation(void) {
  static const char *const m[] = {"a b", "ab c"};
  char *j = bytelevel_json(m, 2, k_qwen_pre,
                           "\"normalizer\":{\"type\":\"NFC\"},\"added_tokens\":[{\"id\":300,"
                           "\"content\":\"<s>\",\"special\":true,\"normalized\":false}],");
  size_t n = strlen(j);
  size_t bad = 0, first_bad = 0;
  for (size_t k = 0; k < n; k++) {
    char err[1024] = "";
    tp_tok *t = NULL;
    int rc = tp__tok_hf_load_mem(&t, "cut.json", j, k, 0, err, sizeof(err));
    if (rc != TP_EINVAL || t != NULL || strncmp(err, "cannot load tokenizer 'cut.json'", 32) != 0) {
      if (bad++ == 0) first_bad = k;
      tp_tok_free(t);
    }
  }
  CHECK(bad == 0, "all %zu proper prefixes fail with TP_EINVAL naming the file (first bad: %zu)", n,
        first_bad);
  tp_tok *t = load_mem(j, "whole.json");
  CHECK(t != NULL, "the whole file loads");
  tp_tok_free(t);
  free(j);
}

/* Input ending right before an unmapped page: reading one byte too far
 * faults. */
static void test_guard_page(void) {
  static const char *const m[] = {"a b", "ab c"};
  char *j = bytelevel_json(m, 2, k_qwen_pre, "\"normalizer\":{\"type\":\"NFC\"},");
  tp_tok *t = load_mem(j, "guard.json");
  long page = sysconf(_SC_PAGESIZE);
  char *mem = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(mem != MAP_FAILED && t != NULL, "guard page mapped");
  if (mem == MAP_FAILED || t == NULL) {
    tp_tok_free(t);
    free(j);
    return;
  }
  mprotect(mem + page, (size_t)page, PROT_NONE);
  static const char *const texts[] = {"abc",   "abcabcabcab", "  \n\t ",   "\xc3\xa9t\xc3\xa9",
                                      "e\xcc", "a\xf0\x9f",   "x\xe2\x82", "1234567890123"};
  bool ok = true;
  for (size_t i = 0; i < TP_ARRAY_LEN(texts); i++) {
    size_t n = strlen(texts[i]);
    char *p = mem + page - n;
    memcpy(p, texts[i], n);
    int32_t *ids = NULL;
    size_t k = 0;
    if (tp_tok_encode(t, p, n, &ids, &k) != 0) ok = false;
    free(ids);
  }
  CHECK(ok, "encoding texts that end at an unmapped page");
  /* The loader, too, on a file ending at the page. */
  size_t n = strlen(j);
  char *big = mmap(NULL, n + (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (big != MAP_FAILED) {
    size_t span = (n + (size_t)page - 1) / (size_t)page * (size_t)page;
    mprotect(big + span, (size_t)page, PROT_NONE);
    memcpy(big + span - n, j, n);
    tp_tok *t2 = NULL;
    char err[512];
    CHECK(tp__tok_hf_load_mem(&t2, "guard2.json", big + span - n, n, 0, err, sizeof(err)) == 0,
          "loading a file that ends at an unmapped page");
    tp_tok_free(t2);
    munmap(big, n + (size_t)page * 2);
  }
  munmap(mem, (size_t)page * 2);
  tp_tok_free(t);
  free(j);
}

/* ------------------------------------------------------------------------ */
/* Dispatch                                                                 */

static void test_dispatch(void) {
  static const char *const m[] = {"a b"};
  char *j = bytelevel_json(m, 1, k_qwen_pre, "");
  char dir[512], p[600];
  snprintf(dir, sizeof(dir), "%s/model", tmp_root);
  mkdir(dir, 0700);
  snprintf(p, sizeof(p), "%s/tokenizer.json", dir);
  write_file(p, j, strlen(j));
  /* A tokenizer.model that is not valid: preferring the JSON never reads it. */
  snprintf(p, sizeof(p), "%s/tokenizer.model", dir);
  write_file(p, "not a model", 11);
  char err[1024] = "";
  tp_tok *t = NULL;
  int rc = tp_tok_load(&t, dir, err, sizeof(err));
  CHECK(rc == 0 && t != NULL, "directory with tokenizer.json and tokenizer.model loads (%s)", err);
  if (t) {
    CHECK_STR(tp_tok_name(t), "tokenizer.json", "tokenizer.json is preferred");
    CHECK(strstr(t->path, "tokenizer.json") != NULL, "the path is the JSON file's");
    CHECK(ENC(t, "ab", 256), "and it encodes");
    tp_tok_free(t);
  }
  /* JSON content under another name goes to this backend too. */
  snprintf(p, sizeof(p), "%s/tok.dat", tmp_root);
  write_file(p, j, strlen(j));
  t = NULL;
  rc = tp_tok_load(&t, p, err, sizeof(err));
  CHECK(rc == 0 && t != NULL && strcmp(tp_tok_name(t), "tokenizer.json") == 0,
        "JSON content without .json loads as tokenizer.json");
  tp_tok_free(t);
  /* A broken tokenizer.json in a directory: its own message, not "not
   * found". */
  snprintf(p, sizeof(p), "%s/tokenizer.json", dir);
  write_file(p, "{\"model\":", 9);
  rc = tp_tok_load(&t, dir, err, sizeof(err));
  CHECK(rc == TP_EINVAL && strstr(err, p) && strstr(err, "truncated"),
        "a broken tokenizer.json in a directory is reported: %s", err);
  free(j);
}

/* ------------------------------------------------------------------------ */
/* Threads                                                                  */

#define N_THREADS 4
#define N_TEXTS 64

typedef struct thread_arg {
  const tp_tok *t;
  char **texts;
  int32_t **want;
  size_t *n_want;
  int mismatches;
  pthread_barrier_t *ready, *go;
} thread_arg;

static void *encoder(void *p) {
  thread_arg *a = p;
  for (int round = 0; round < 20; round++)
    for (int i = 0; i < N_TEXTS; i++) {
      int32_t *ids = NULL;
      size_t n = 0;
      if (tp_tok_encode(a->t, a->texts[i], strlen(a->texts[i]), &ids, &n) != 0 || n != a->n_want[i] ||
          memcmp(ids, a->want[i], n * sizeof(int32_t)) != 0)
        a->mismatches++;
      free(ids);
    }
  if (a->ready) {
    /* Stay alive past tp_tok_free: the thread's state must be freed by
     * tp_tok_free, and its exit must not touch the freed tokenizer. */
    pthread_barrier_wait(a->ready);
    pthread_barrier_wait(a->go);
  }
  return NULL;
}

static void test_threads(void) {
  /* "\xc4\xa0" is Ġ, the space byte's character. */
  static const char *const m[] = {"a b",
                                  "ab c",
                                  "\xc4\xa0 a",
                                  ("\xc4\xa0"
                                   "a b"),
                                  "c c",
                                  "cc c"};
  char *j = bytelevel_json(m, 6, k_qwen_pre, "\"normalizer\":{\"type\":\"NFC\"},");
  tp_tok *t = load_mem(j, "threads.json");
  free(j);
  if (t == NULL) return;
  char *texts[N_TEXTS];
  int32_t *want[N_TEXTS];
  size_t n_want[N_TEXTS];
  unsigned seed = 12345;
  static const char *const frag[] = {"a",   "b",        "c",         " ",  "ab",  "abc",         " ab",
                                     "ccc", "\xc3\xa9", "e\xcc\x81", "\n", "123", "\xe4\xb8\xad"};
  for (int i = 0; i < N_TEXTS; i++) {
    tp_buf b;
    tp_buf_init(&b);
    int k = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 200;
    for (int x = 0; x < k; x++)
      tp_buf_append_str(&b, frag[((seed = seed * 1103515245u + 12345u) >> 16) % TP_ARRAY_LEN(frag)]);
    texts[i] = tp_buf_steal(&b, NULL);
    tp_tok_encode(t, texts[i], strlen(texts[i]), &want[i], &n_want[i]);
  }
  pthread_t th[N_THREADS];
  thread_arg args[N_THREADS];
  for (int i = 0; i < N_THREADS; i++) {
    args[i] = (thread_arg){.t = t, .texts = texts, .want = want, .n_want = n_want};
    pthread_create(&th[i], NULL, encoder, &args[i]);
  }
  int bad = 0;
  for (int i = 0; i < N_THREADS; i++) {
    pthread_join(th[i], NULL);
    bad += args[i].mismatches;
  }
  CHECK(bad == 0, "%d threads x 20 rounds x %d texts give the single-thread ids (%d differ)", N_THREADS,
        N_TEXTS, bad);

  /* Threads still alive when the tokenizer is freed. */
  pthread_barrier_t ready, go;
  pthread_barrier_init(&ready, NULL, N_THREADS + 1);
  pthread_barrier_init(&go, NULL, N_THREADS + 1);
  for (int i = 0; i < N_THREADS; i++) {
    args[i] =
        (thread_arg){.t = t, .texts = texts, .want = want, .n_want = n_want, .ready = &ready, .go = &go};
    pthread_create(&th[i], NULL, encoder, &args[i]);
  }
  pthread_barrier_wait(&ready);
  tp_tok_free(t);
  pthread_barrier_wait(&go);
  bad = 0;
  for (int i = 0; i < N_THREADS; i++) {
    pthread_join(th[i], NULL);
    bad += args[i].mismatches;
  }
  CHECK(bad == 0, "freeing the tokenizer while its threads live (no crash, no leak)");
  pthread_barrier_destroy(&ready);
  pthread_barrier_destroy(&go);
  for (int i = 0; i < N_TEXTS; i++) {
    free(texts[i]);
    free(want[i]);
  }
}

/* ------------------------------------------------------------------------ */
/* Post-processors (special tokens)                                         */

/* The model of the bad-file table: a=0, b=1, ab=2, so "aba" is [2, 0].
 * Special token ids are made up: a post-processor's ids need not be in the
 * vocabulary. */
#define POST(pp) WITH("\"post_processor\":" pp)
#define SPECIAL(name, ids) "\"" name "\":{\"id\":\"" name "\",\"ids\":" ids ",\"tokens\":[\"" name "\"]}"
#define ST(name) "{\"SpecialToken\":{\"id\":\"" name "\",\"type_id\":0}}"
#define SEQ_A "{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}"
#define PAIR ",\"pair\":[" SEQ_A ",{\"Sequence\":{\"id\":\"B\",\"type_id\":1}}]"
#define TEMPLATE(single, specials) \
  "{\"type\":\"TemplateProcessing\",\"single\":[" single "]" PAIR ",\"special_tokens\":{" specials "}}"
#define T_BOS TEMPLATE(ST("<s>") "," SEQ_A, SPECIAL("<s>", "[7]"))
#define T_BOS_EOS \
  TEMPLATE(ST("<s>") "," SEQ_A "," ST("</s>"), SPECIAL("<s>", "[7]") "," SPECIAL("</s>", "[8]"))
#define BYTELEVEL \
  "{\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"trim_offsets\":false,\"use_regex\":true}"
#define BERT "{\"type\":\"BertProcessing\",\"sep\":[\"[SEP]\",102],\"cls\":[\"[CLS]\",101]}"

typedef struct post_case {
  const char *what;
  const char *json;
  int32_t want[8]; /* ids for "aba" with special tokens */
  size_t n_want;
  const char *desc;
} post_case;

static const post_case k_post[] = {
    {"no post_processor", WITH("\"normalizer\":null"), {2, 0}, 2, "$A"},
    {"null", POST("null"), {2, 0}, 2, "$A"},
    {"ByteLevel adds nothing", POST(BYTELEVEL), {2, 0}, 2, "$A"},
    {"empty Sequence", POST("{\"type\":\"Sequence\",\"processors\":[]}"), {2, 0}, 2, "$A"},
    {"TemplateProcessing, BOS", POST(T_BOS), {7, 2, 0}, 3, "<s> $A"},
    {"TemplateProcessing, BOS and EOS", POST(T_BOS_EOS), {7, 2, 0, 8}, 4, "<s> $A </s>"},
    {"TemplateProcessing, a special token of several ids",
     POST(TEMPLATE(ST("<x>") "," SEQ_A, SPECIAL("<x>", "[5,6]"))),
     {5, 6, 2, 0},
     4,
     "<x> $A"},
    {"TemplateProcessing, a special token of no ids",
     POST(TEMPLATE(ST("<x>") "," SEQ_A, SPECIAL("<x>", "[]"))),
     {2, 0},
     2,
     "<x> $A"},
    {"TemplateProcessing, the text twice",
     POST(TEMPLATE(ST("<s>") "," SEQ_A "," SEQ_A, SPECIAL("<s>", "[7]"))),
     {7, 2, 0, 2, 0},
     5,
     "<s> $A $A"},
    {"TemplateProcessing looks special tokens up by key",
     POST(TEMPLATE(ST("<s>") "," SEQ_A, "\"<s>\":{\"id\":\"<other>\",\"ids\":[9],\"tokens\":[\"<s>\"]}")),
     {9, 2, 0},
     3,
     "<s> $A"},
    {"Sequence[ByteLevel, TemplateProcessing] (Llama 3)",
     POST("{\"type\":\"Sequence\",\"processors\":[" BYTELEVEL "," T_BOS "]}"),
     {7, 2, 0},
     3,
     "<s> $A"},
    {"RobertaProcessing",
     POST("{\"type\":\"RobertaProcessing\",\"sep\":[\"</s>\",2],\"cls\":[\"<s>\",0],\"trim_offsets\":true,"
          "\"add_prefix_space\":true}"),
     {0, 2, 0, 2},
     4,
     "<s> $A </s>"},
    {"BertProcessing", POST(BERT), {101, 2, 0, 102}, 4, "[CLS] $A [SEP]"},
    {"Sequence[BertProcessing, TemplateProcessing]: each wraps the one before",
     POST("{\"type\":\"Sequence\",\"processors\":[" BERT "," T_BOS_EOS "]}"),
     {7, 101, 2, 0, 102, 8},
     6,
     "<s> [CLS] $A [SEP] </s>"},
};

/* With the flag: these files are refused, naming the file and the field or
 * type; without it they all load (the post-processor is not read). */
static const bad_case k_bad_post[] = {
    {"unknown post-processor", POST("{\"type\":\"Foo\"}"), TP_EUNSUPPORTED,
     "post_processor.type \"Foo\" is not supported"},
    {"unknown post-processor in a Sequence",
     POST("{\"type\":\"Sequence\",\"processors\":[" BYTELEVEL ",{\"type\":\"Foo\"}]}"), TP_EUNSUPPORTED,
     "post_processor.processors[1].type \"Foo\" is not supported"},
    {"post_processor not an object", POST("3"), TP_EINVAL, "post_processor is a number"},
    {"post_processor without a type", POST("{\"single\":[]}"), TP_EINVAL, "post_processor has no \"type\""},
    {"Sequence without processors", POST("{\"type\":\"Sequence\"}"), TP_EINVAL,
     "without a \"processors\" array"},
    {"template with Sequence B",
     POST(TEMPLATE("{\"Sequence\":{\"id\":\"B\",\"type_id\":0}}", SPECIAL("<s>", "[7]"))), TP_EINVAL,
     "post_processor.single[0] is Sequence B"},
    {"template with another sequence id",
     POST(TEMPLATE("{\"Sequence\":{\"id\":\"C\"}}", SPECIAL("<s>", "[7]"))), TP_EINVAL,
     "whose \"id\" is not \"A\" or \"B\""},
    {"template naming a missing special token", POST(TEMPLATE(ST("<x>") "," SEQ_A, SPECIAL("<s>", "[7]"))),
     TP_EINVAL, "post_processor.single[0] names the special token \"<x>\""},
    {"template item of neither kind", POST(TEMPLATE("{\"Other\":{}}", SPECIAL("<s>", "[7]"))), TP_EINVAL,
     "post_processor.single[0] is not a"},
    {"negative special id", POST(TEMPLATE(ST("<s>") "," SEQ_A, SPECIAL("<s>", "[-1]"))), TP_EINVAL,
     "special_tokens[\"<s>\"].ids[0] is out of range"},
    {"special id a string", POST(TEMPLATE(ST("<s>") "," SEQ_A, SPECIAL("<s>", "[\"1\"]"))), TP_EINVAL,
     "ids[0] is a string, expected a token id"},
    {"special ids not an array", POST(TEMPLATE(ST("<s>") "," SEQ_A, SPECIAL("<s>", "1"))), TP_EINVAL,
     "special_tokens[\"<s>\"].ids is a number"},
    {"template without single", POST("{\"type\":\"TemplateProcessing\",\"special_tokens\":{}}"), TP_EINVAL,
     "post_processor.single is missing"},
    {"template without special_tokens", POST("{\"type\":\"TemplateProcessing\",\"single\":[" SEQ_A "]}"),
     TP_EINVAL, "post_processor.special_tokens is missing"},
    {"Bert without sep", POST("{\"type\":\"BertProcessing\",\"cls\":[\"[CLS]\",101]}"), TP_EINVAL,
     "post_processor.sep must be [\"token\", id]"},
    {"Roberta cls of three",
     POST("{\"type\":\"RobertaProcessing\",\"sep\":[\"</s>\",2],\"cls\":[\"<s>\",0,1]}"), TP_EINVAL,
     "post_processor.cls must be"},
    {"Roberta id out of range",
     POST("{\"type\":\"RobertaProcessing\",\"sep\":[\"</s>\",4294967296],\"cls\":[\"<s>\",0]}"), TP_EINVAL,
     "post_processor.sep[1] is out of range"},
};

static void test_post_processors(void) {
  static const char text[] = "aba";
  for (size_t i = 0; i < TP_ARRAY_LEN(k_post); i++) {
    const post_case *c = &k_post[i];
    char err[1024] = "";
    tp_tok *t = NULL, *plain = load_mem(c->json, "plain.json");
    int rc = tp__tok_hf_load_mem(&t, "post.json", c->json, strlen(c->json), TP_TOK_FLAG_SPECIAL_TOKENS, err,
                                 sizeof(err));
    CHECK(rc == 0 && t != NULL && plain != NULL, "%s: loads (%s)", c->what, err);
    if (t == NULL || plain == NULL) {
      tp_tok_free(t);
      tp_tok_free(plain);
      continue;
    }
    /* The plain ids are the same with and without the flag. */
    CHECK(ENC(plain, text, 2, 0) && ENC(t, text, 2, 0), "%s: plain ids unchanged", c->what);
    int32_t *ids = (int32_t *)1;
    size_t n = 1, count = 0;
    CHECK_INT(tp_tok_encode_special(plain, text, 3, &ids, &n), TP_EINVAL,
              "loaded without the flag, encode_special refuses");
    CHECK(tp_tok_special_desc(plain) == NULL, "and there is no description");
    rc = tp_tok_encode_special(t, text, 3, &ids, &n);
    bool ok = rc == 0 && n == c->n_want && memcmp(ids, c->want, n * sizeof(int32_t)) == 0;
    CHECK(ok, "%s: ids with special tokens", c->what);
    if (!ok) {
      printf("#   rc %d, got", rc);
      for (size_t k = 0; rc == 0 && k < n; k++) printf(" %d", ids[k]);
      printf("\n");
    }
    free(ids);
    CHECK(tp_tok_count_special(t, text, 3, &count) == 0 && count == c->n_want, "%s: count %zu", c->what,
          count);
    /* Each "$A" of the template holds the text's 2 ids. */
    size_t copies = 0;
    for (const char *a = strstr(c->desc, "$A"); a; a = strstr(a + 2, "$A")) copies++;
    CHECK(tp_tok_count_special(t, "", 0, &count) == 0 && count == c->n_want - 2 * copies,
          "%s: the empty text counts its special tokens only (%zu)", c->what, count);
    CHECK_STR(tp_tok_special_desc(t), c->desc, c->what);
    tp_tok_free(t);
    tp_tok_free(plain);
  }

  char path[512];
  for (size_t i = 0; i < TP_ARRAY_LEN(k_bad_post); i++) {
    const bad_case *c = &k_bad_post[i];
    snprintf(path, sizeof(path), "%s/post_%02zu.json", tmp_root, i);
    write_file(path, c->json, strlen(c->json));
    char err[1024] = "";
    tp_tok *t = (tp_tok *)1;
    int rc = tp_tok_load_ex(&t, path, TP_TOK_FLAG_SPECIAL_TOKENS, err, sizeof(err));
    bool named = strstr(err, path) != NULL, found = strstr(err, c->needle) != NULL;
    CHECK(rc == c->rc && t == NULL && named && found, "%s: %s", c->what, err);
    if (!(rc == c->rc && found))
      printf("#   rc %d (want %d), want \"%s\" in the message\n", rc, c->rc, c->needle);
    t = NULL;
    rc = tp_tok_load(&t, path, err, sizeof(err));
    CHECK(rc == 0 && t != NULL && ENC(t, "aba", 2, 0), "%s: loads and encodes without the flag", c->what);
    tp_tok_free(t);
  }

  /* A chain of templates each repeating the text grows past any real one:
   * refused, not built. */
  tp_buf b;
  tp_buf_init(&b);
  tp_buf_append_str(&b, "{\"post_processor\":{\"type\":\"Sequence\",\"processors\":[");
  for (int i = 0; i < 11; i++)
    tp_buf_printf(&b, "%s%s", i ? "," : "", TEMPLATE(SEQ_A "," SEQ_A, SPECIAL("<s>", "[7]")));
  tp_buf_append_str(&b, "]},\"model\":{\"type\":\"BPE\"," V2 ",\"merges\":[\"a b\"]}}");
  char err[1024] = "";
  tp_tok *t = NULL;
  int rc = tp__tok_hf_load_mem(&t, "grow.json", (char *)b.data, b.len, TP_TOK_FLAG_SPECIAL_TOKENS, err,
                               sizeof(err));
  CHECK(rc == TP_EINVAL && t == NULL && strstr(err, "more than 1024"),
        "a template of 2048 texts is refused: %s", err);
  tp_buf_fini(&b);

  /* A tokenizer.json's post-processor decides even when a
   * tokenizer_config.json beside it says otherwise (docs/metrics.md). */
  char dir[512], p[600];
  snprintf(dir, sizeof(dir), "%s/post-model", tmp_root);
  mkdir(dir, 0700);
  snprintf(p, sizeof(p), "%s/tokenizer.json", dir);
  static const char json[] = POST(T_BOS);
  write_file(p, json, strlen(json));
  snprintf(p, sizeof(p), "%s/tokenizer_config.json", dir);
  write_file(p, "{\"add_bos_token\": false, \"add_eos_token\": true}", 47);
  rc = tp_tok_load_ex(&t, dir, TP_TOK_FLAG_SPECIAL_TOKENS, err, sizeof(err));
  CHECK(rc == 0 && t != NULL, "directory with tokenizer.json and tokenizer_config.json loads (%s)", err);
  if (t) {
    CHECK_STR(tp_tok_special_desc(t), "<s> $A", "tokenizer_config.json does not override the post-processor");
    tp_tok_free(t);
  }
}

int main(void) {
  const char *tmp = getenv("TMPDIR");
  snprintf(tmp_root, sizeof(tmp_root), "%s/tp_test_tok_hf.XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (mkdtemp(tmp_root) == NULL) {
    printf("1..0 # SKIP cannot make a temporary directory: %s\n", strerror(errno));
    return 0;
  }
  test_merge_ranks();
  test_bytelevel();
  test_sentencepiece_style();
  test_added_flags();
  test_bad_files();
  test_truncation();
  test_guard_page();
  test_dispatch();
  test_threads();
  test_post_processors();
  nftw(tmp_root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  return tp_test_done();
}
