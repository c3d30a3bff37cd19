/* The tokenizer.json backend: loading the pipeline, and per-thread state.
 *
 * Loading reads the file with our own JSON reader (tp_tok_hf_json.c; 5-10x
 * faster than jansson on these files), builds the BPE tables, compiles the
 * file's regexes with PCRE2, and resolves added tokens.  Every problem is
 * reported with the JSON path of the field at fault ("model.merges[17]:
 * token \"xyz\" is not in model.vocab"), and unknown component types are
 * refused by name rather than skipped, since a skipped normalizer or
 * pre-tokenizer would silently give other counts than the model's server.
 *
 * Thread safety: after loading, everything here is read-only.  Encoding
 * needs scratch space, PCRE2 match data and a word cache; each thread gets
 * its own (tp__hf_tls) through a pthread key on its first call, so threads
 * never share anything mutable and take no lock after that first call. */
#include "tokenizer/tp_tok_hf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tokenizer/tp_tok_hf_json.h"
#include "tokenizer/tp_tok_hf_load.h"

/* tokenizer.json files are 2-30 MB; this only stops a wrong path (a
 * weights file) from being read into memory. */
#define MAX_FILE_BYTES (1024u * 1024u * 1024u)

static const tp_tok_ops hf_ops;

/* ------------------------------------------------------------------------ */
/* Per-thread state                                                         */

static void tls_free(tp__hf_tls *s) {
  if (s == NULL) return;
  tp__re_state_free(s->re);
  tp__bpe_scratch_free(s->bpe);
  tp_buf_fini(&s->clean);
  for (int i = 0; i < 2; i++) {
    tp_buf_fini(&s->norm[i]);
    tp_buf_fini(&s->pbuf[i]);
    tp_buf_fini(&s->dbuf[i]);
    free(s->plist[i].v);
    free(s->dlist[i].v);
  }
  free(s->segs);
  free(s);
}

/* Runs at thread exit (libuv's pool threads exit when the loop library is
 * torn down); it is never called after tp_tok_free deleted the key. */
static void tls_destructor(void *p) {
  tp__hf_tls *s = p;
  tp__hf *h = s->owner;
  pthread_mutex_lock(&h->mu);
  if (s->prev)
    s->prev->next = s->next;
  else
    h->threads = s->next;
  if (s->next) s->next->prev = s->prev;
  pthread_mutex_unlock(&h->mu);
  tls_free(s);
}

tp__hf_tls *tp__hf_tls_get(tp__hf *h) {
  tp__hf_tls *s = pthread_getspecific(h->key);
  if (s != NULL) return s;
  s = calloc(1, sizeof(*s));
  if (s == NULL) return NULL;
  s->owner = h;
  s->re = tp__re_state_new();
  s->bpe = tp__bpe_scratch_new();
  if (s->re == NULL || s->bpe == NULL) {
    tls_free(s);
    return NULL;
  }
  pthread_mutex_lock(&h->mu);
  s->next = h->threads;
  if (h->threads) h->threads->prev = s;
  h->threads = s;
  pthread_mutex_unlock(&h->mu);
  if (pthread_setspecific(h->key, s) != 0) {
    tls_destructor(s);
    return NULL;
  }
  return s;
}

/* ------------------------------------------------------------------------ */
/* Freeing                                                                  */

static void trie_fini(tp__trie *t) {
  free(t->nodes);
  memset(t, 0, sizeof(*t));
}

static void hf_free(tp__hf *h, bool key_made) {
  if (h == NULL) return;
  if (key_made) {
    /* No destructor runs after this; states of threads still alive are
     * freed from the list (the caller guarantees none is encoding).  The
     * calling thread's value is cleared first, so a key created later in
     * the same slot cannot see it (glibc also guards this with sequence
     * numbers; POSIX does not promise it). */
    pthread_setspecific(h->key, NULL);
    pthread_key_delete(h->key);
    while (h->threads) {
      tp__hf_tls *s = h->threads;
      h->threads = s->next;
      tls_free(s);
    }
    pthread_mutex_destroy(&h->mu);
  }
  tp__bpe_fini(&h->bpe);
  for (size_t i = 0; i < h->n_norms; i++) {
    tp__re_free(h->norms[i].re);
    free(h->norms[i].text);
  }
  free(h->norms);
  for (size_t i = 0; i < h->n_pres; i++) tp__re_free(h->pres[i].re);
  free(h->pres);
  for (size_t i = 0; i < h->n_decs; i++) {
    tp__re_free(h->decs[i].re);
    free(h->decs[i].text);
  }
  free(h->decs);
  tp__re_free(h->gpt2);
  tp__re_free(h->word_char);
  for (size_t i = 0; i < h->n_added; i++) {
    if (h->added[i].match != h->added[i].content) free(h->added[i].match);
    free(h->added[i].content);
  }
  free(h->added);
  trie_fini(&h->raw);
  trie_fini(&h->normalized);
  free(h->added_ids);
  free(h->added_idx);
  free(h);
}

static void hf_ops_free(tp_tok *t) {
  hf_free(t->impl, true);
  t->impl = NULL;
}

/* ------------------------------------------------------------------------ */
/* The whole file                                                           */

static int load_doc(loader *L) {
  tp__hf *h = L->h;
  const tp__json *d = L->d;
  int rv;
  if (tp__json_at(d, 0)->type != TP_JSON_OBJECT) {
    tp_seterr(L->why, L->whylen, "the file is %s, expected a tokenizer.json object",
              tp__json_type_name(d, 0));
    return TP_EINVAL;
  }
  uint32_t model = tp__json_get(d, 0, "model");
  if (model == 0 || tp__json_at(d, model)->type != TP_JSON_OBJECT) {
    tp_seterr(L->why, L->whylen, "\"model\" is %s, expected an object (is this a tokenizer.json?)",
              model ? tp__json_type_name(d, model) : "missing");
    return TP_EINVAL;
  }
  uint32_t type = tp__json_get(d, model, "type");
  if (type == 0 && tp__json_get(d, model, "merges") == 0) {
    tp_seterr(L->why, L->whylen, "model has no \"type\" and no \"merges\": not a BPE model");
    return TP_EUNSUPPORTED;
  }
  if (type != 0 && !tp__json_str_is(d, type, "BPE")) {
    if (tp__json_at(d, type)->type != TP_JSON_STRING)
      return tp__hfl_bad(L, "model.type", "is %s, expected a string", tp__json_type_name(d, type));
    char q[128];
    tp_seterr(L->why, L->whylen,
              "model.type \"%s\" is not supported (this backend reads BPE models: GPT-2, "
              "Llama 3, Qwen, Mistral and the like)",
              tp__json_quote(q, sizeof(q), tp__json_str(d, type), tp__json_strlen(d, type), 40));
    return TP_EUNSUPPORTED;
  }
  if ((rv = tp__bpe_load(&h->bpe, d, model, L->why, L->whylen)) != 0) return rv;

  size_t cap = 0;
  uint32_t v = tp__json_get(d, 0, "normalizer");
  if (v && tp__json_at(d, v)->type != TP_JSON_NULL && (rv = tp__hfl_load_norm(L, v, "normalizer", &cap)))
    return rv;
  cap = 0;
  v = tp__json_get(d, 0, "pre_tokenizer");
  if (v && tp__json_at(d, v)->type != TP_JSON_NULL && (rv = tp__hfl_load_pre(L, v, "pre_tokenizer", &cap)))
    return rv;
  /* A ByteLevel step at the end maps bytes to characters only so the model
   * can look them up; the model does that itself, per byte (faster). */
  if (h->n_pres && h->pres[h->n_pres - 1].kind == TP_PRE_BYTELEVEL) {
    h->pres[h->n_pres - 1].deferred = true;
    tp__bpe_set_bytelevel(&h->bpe);
  }
  cap = 0;
  v = tp__json_get(d, 0, "decoder");
  if (v && tp__json_at(d, v)->type != TP_JSON_NULL) {
    if ((rv = tp__hfl_load_dec(L, v, "decoder", &cap))) return rv;
    h->has_decoder = true;
  }
  v = tp__json_get(d, 0, "added_tokens");
  if (v && tp__json_at(d, v)->type != TP_JSON_NULL) {
    if (tp__json_at(d, v)->type != TP_JSON_ARRAY)
      return tp__hfl_bad(L, "added_tokens", "is %s, expected an array", tp__json_type_name(d, v));
    if ((rv = tp__hfl_load_added(L, v))) return rv;
  }
  if ((rv = tp__hfl_index_added(L))) return rv;
  return (L->flags & TP_TOK_FLAG_SPECIAL_TOKENS) ? tp__hfl_load_post_processor(L) : 0;
}

/* Takes text (malloc'd, len bytes) and frees it in every case. */
static int load_owned(tp_tok **out, const char *name, char *text, size_t len, unsigned flags, char *err,
                      size_t errlen) {
  char why[512] = "";
  int rv;
  tp__json doc;
  memset(&doc, 0, sizeof(doc));
  *out = NULL;
  tp__hf *h = calloc(1, sizeof(*h));
  tp_tok *t = calloc(1, sizeof(*t));
  char *path = tp_strndup(name, strlen(name));
  bool key_made = false;
  if (text == NULL || h == NULL || t == NULL || path == NULL) {
    rv = TP_ENOMEM;
    goto fail;
  }
  if (pthread_key_create(&h->key, tls_destructor) != 0) {
    snprintf(why, sizeof(why), "too many tokenizers loaded at once (no thread key left)");
    rv = TP_ENOMEM;
    goto fail;
  }
  pthread_mutex_init(&h->mu, NULL);
  key_made = true;
  if ((rv = tp__json_parse(&doc, text, len, why, sizeof(why))) != 0) {
    if (rv == TP_EINVAL) {
      char tmp[512];
      snprintf(tmp, sizeof(tmp), "%s", why);
      snprintf(why, sizeof(why), "not valid JSON: %.480s", tmp);
    }
    goto fail;
  }
  loader L = {.h = h, .d = &doc, .why = why, .whylen = sizeof(why), .flags = flags};
  tp_buf_init(&L.post.desc);
  rv = load_doc(&L);
  if (rv == 0 && L.post.n) rv = tp__tok_set_special(t, L.post.v, L.post.n, (char *)L.post.desc.data);
  tp__hfl_tmpl_fini(&L.post);
  if (rv != 0) goto fail;
  tp__json_fini(&doc);
  free(text);
  t->ops = &hf_ops;
  t->impl = h;
  t->path = path;
  *out = t;
  return 0;
fail:
  tp__json_fini(&doc);
  free(text);
  hf_free(h, key_made);
  free(t);
  free(path);
  if (rv == TP_ENOMEM && why[0] == 0) snprintf(why, sizeof(why), "out of memory");
  if (rv == TP_EINVAL)
    tp_seterr(err, errlen, "cannot load tokenizer '%s': not a valid tokenizer.json: %s", name, why);
  else
    tp_seterr(err, errlen, "cannot load tokenizer '%s': %s", name, why);
  return rv;
}

int tp__tok_hf_load_mem(tp_tok **out, const char *name, const char *data, size_t len, unsigned flags,
                        char *err, size_t errlen) {
  char *text = malloc(len ? len : 1);
  if (text != NULL && len) memcpy(text, data, len);
  return load_owned(out, name, text, len, flags, err, errlen);
}

int tp_tok_hf_load(tp_tok **out, const char *file, unsigned flags, char *err, size_t errlen) {
  *out = NULL;
  FILE *f = fopen(file, "rb");
  if (f == NULL) {
    int e = errno;
    tp_seterr(err, errlen, "cannot read tokenizer '%s': %s%s", file, strerror(e),
              e == ENOENT ? " (pass a tokenizer.json file or a model directory holding one)"
                          : " (check its permissions)");
    return e == ENOENT ? TP_ENOTFOUND : TP_EIO;
  }
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    fclose(f);
    tp_seterr(err, errlen, "cannot read tokenizer '%s': not a regular file", file);
    return TP_EIO;
  }
  if ((uint64_t)st.st_size > MAX_FILE_BYTES) {
    fclose(f);
    tp_seterr(err, errlen,
              "cannot load tokenizer '%s': the file is %lld bytes, too large for a "
              "tokenizer.json (is it a weights file?)",
              file, (long long)st.st_size);
    return TP_EINVAL;
  }
  size_t size = (size_t)st.st_size;
  char *buf = tp__json_big_alloc(size);
  if (buf == NULL) {
    fclose(f);
    tp_seterr(err, errlen, "cannot load tokenizer '%s': out of memory", file);
    return TP_ENOMEM;
  }
  size_t got = fread(buf, 1, size, f);
  bool read_err = ferror(f) != 0;
  fclose(f);
  if (read_err || got != size) {
    free(buf);
    tp_seterr(err, errlen, "cannot read tokenizer '%s': read error", file);
    return TP_EIO;
  }
  return load_owned(out, file, buf, size, flags, err, errlen);
}

static const tp_tok_ops hf_ops = {
    .name = "tokenizer.json",
    .encode = tp__hf_encode,
    .decode = tp__hf_decode,
    .free = hf_ops_free,
};
