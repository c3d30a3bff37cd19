/* Exports for other tools: perf_analyzer's profile export, GenAI-Perf's
 * summary files, responses.jsonl and accuracy, and the artifact directory
 * that holds them.  See tp_export.h for the layouts.
 *
 * Views only: timestamps and texts come from the records, figures from
 * tp_level_result.  The one thing computed here is accuracy (exact match
 * and ROUGE-L), which nothing else computes. */
#include "tp_export.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "report/tp_html.h"
#include "report/tp_records.h"
#include "tokperf/tokperf.h"

/* ------------------------------------------------------------------------ */
/* Small shared helpers                                                     */

uint64_t tp_export_wall_ns(uint64_t anchor_mono_ns, uint64_t anchor_wall_ns, uint64_t mono_ns) {
  if (!mono_ns) return 0;
  /* Signed offset: a time taken before the anchor (a warm-up request sent
   * while the anchor was being read) stays correct instead of wrapping. */
  int64_t d = (int64_t)(mono_ns - anchor_mono_ns);
  return (uint64_t)((int64_t)anchor_wall_ns + d);
}

size_t tp__utf8_len(const unsigned char *s, size_t avail) {
  if (!avail) return 0;
  unsigned c = s[0];
  if (c < 0x80) return 1;
  size_t n;
  unsigned min;
  unsigned cp;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
    min = 0x80;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    min = 0x800;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    min = 0x10000;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (avail < n) return 0;
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3F);
  }
  /* Overlong forms, UTF-16 surrogates and code points past U+10FFFF are
   * not UTF-8; a strict JSON reader (Python's) would reject them. */
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

int tp__json_escape(tp_buf *out, const char *s, size_t len) {
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0, run = 0; /* run: bytes since i that need no escape */
  int rv = 0;
  while (i + run < len && rv == 0) {
    unsigned c = p[i + run];
    size_t ul = c < 0x80 ? 1 : tp__utf8_len(p + i + run, len - i - run);
    if (c >= 0x20 && c != '"' && c != '\\' && ul) {
      run += ul;
      continue;
    }
    if (run) rv = tp_buf_append(out, p + i, run);
    i += run;
    run = 0;
    if (rv) break;
    if (!ul) {
      rv = tp_buf_append(out, "\xEF\xBF\xBD", 3);
      i++;
      continue;
    }
    switch (c) {
      case '"': rv = tp_buf_append(out, "\\\"", 2); break;
      case '\\': rv = tp_buf_append(out, "\\\\", 2); break;
      case '\n': rv = tp_buf_append(out, "\\n", 2); break;
      case '\r': rv = tp_buf_append(out, "\\r", 2); break;
      case '\t': rv = tp_buf_append(out, "\\t", 2); break;
      default: rv = tp_buf_printf(out, "\\u%04x", c); break;
    }
    i++;
  }
  if (rv == 0 && run) rv = tp_buf_append(out, p + i, run);
  return rv;
}

static int json_str(tp_buf *out, const char *s, size_t len) {
  int rv = tp_buf_append(out, "\"", 1);
  if (!rv && s) rv = tp__json_escape(out, s, len);
  if (!rv) rv = tp_buf_append(out, "\"", 1);
  return rv;
}

/* The text the request sent, as one JSON string: its head pieces, then the
 * prompt (each piece whole UTF-8, so escaping them apart is escaping the
 * whole). */
static int json_sent(tp_buf *out, const tp_export_request *q) {
  int rv = tp_buf_append(out, "\"", 1);
  for (int i = 0; i < 3 && !rv; i++)
    if (q->head[i]) rv = tp__json_escape(out, q->head[i], q->head_len[i]);
  if (!rv && q->prompt) rv = tp__json_escape(out, q->prompt, q->prompt_len);
  if (!rv) rv = tp_buf_append(out, "\"", 1);
  return rv;
}

void tp__level_name(const tp_level_result *lr, char *buf, size_t len) {
  int o;
  switch (lr->load_mode) {
    case TP_LOAD_RATE: o = snprintf(buf, len, "request rate %g/s", lr->request_rate); break;
    case TP_LOAD_SCHEDULE: o = snprintf(buf, len, "trace schedule"); break;
    default: o = snprintf(buf, len, "concurrency %" PRIu32, lr->concurrency); break;
  }
  if (o > 0 && (size_t)o < len && lr->input_tokens_mean)
    o += snprintf(buf + o, len - (size_t)o, ", input %" PRIu32 " tokens", lr->input_tokens_mean);
  if (o > 0 && (size_t)o < len && lr->output_tokens_mean)
    snprintf(buf + o, len - (size_t)o, ", output %" PRIu32 " tokens", lr->output_tokens_mean);
}

void tp__level_tag(const tp_level_result *lr, char *buf, size_t len) {
  int o;
  switch (lr->load_mode) {
    case TP_LOAD_RATE: o = snprintf(buf, len, "%g/s", lr->request_rate); break;
    case TP_LOAD_SCHEDULE: o = snprintf(buf, len, "trace"); break;
    default: o = snprintf(buf, len, "%" PRIu32, lr->concurrency); break;
  }
  if (o > 0 && (size_t)o < len && lr->input_tokens_mean)
    o += snprintf(buf + o, len - (size_t)o, " in%" PRIu32, lr->input_tokens_mean);
  if (o > 0 && (size_t)o < len && lr->output_tokens_mean)
    snprintf(buf + o, len - (size_t)o, " out%" PRIu32, lr->output_tokens_mean);
}

static int write_all(int fd, const void *data, size_t n) {
  const char *p = data;
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Opens a new temporary file next to path (mode 0666 so the umask applies
 * as for any new file; mkstemp would leave it 0600).  Returns the fd and
 * the owned name in *tmp_out, or -1 with errno set. */
static int open_temp(const char *path, char **tmp_out) {
  static unsigned counter;
  size_t tlen = strlen(path) + 64;
  char *tmp = malloc(tlen);
  if (!tmp) {
    errno = ENOMEM;
    return -1;
  }
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
    snprintf(tmp, tlen, "%s.tmp.%ld.%u", path, (long)getpid(), counter++);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    int e = errno;
    free(tmp);
    errno = e;
    return -1;
  }
  *tmp_out = tmp;
  return fd;
}

/* fsync before rename: otherwise a crash can leave the new name pointing at
 * an empty file on some filesystems.  Closes fd; on failure removes tmp. */
static int commit_temp(int fd, const char *tmp, const char *path) {
  int rv = fsync(fd);
  int e = errno;
  if (close(fd) && rv == 0) {
    rv = -1;
    e = errno;
  }
  if (rv == 0 && rename(tmp, path)) {
    rv = -1;
    e = errno;
  }
  if (rv) unlink(tmp);
  errno = e;
  return rv;
}

int tp__write_atomic(const char *path, const void *data, size_t len) {
  char *tmp = NULL;
  int fd = open_temp(path, &tmp);
  if (fd < 0) return -1;
  int rv = write_all(fd, data, len);
  if (rv) {
    int e = errno;
    close(fd);
    unlink(tmp);
    free(tmp);
    errno = e;
    return -1;
  }
  rv = commit_temp(fd, tmp, path);
  int e = errno;
  free(tmp);
  errno = e;
  return rv;
}

/* mkdir -p.  Returns 0 or -1 with errno set. */
static int make_dirs(const char *path) {
  char *p = tp_strndup(path, strlen(path));
  if (!p) {
    errno = ENOMEM;
    return -1;
  }
  int rv = 0;
  for (char *s = p + 1; rv == 0; s++) {
    if (*s != '/' && *s != '\0') continue;
    char save = *s;
    *s = '\0';
    if (mkdir(p, 0777) && errno != EEXIST) rv = -1;
    if (rv == 0) {
      struct stat st;
      if (stat(p, &st))
        rv = -1;
      else if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        rv = -1;
      }
    }
    *s = save;
    if (save == '\0') break;
  }
  int e = errno;
  free(p);
  errno = e;
  return rv;
}

static char *join_path(const char *dir, const char *name) {
  size_t dl = strlen(dir), nl = strlen(name);
  char *p = malloc(dl + nl + 2);
  if (!p) return NULL;
  memcpy(p, dir, dl);
  size_t o = dl;
  if (dl && dir[dl - 1] != '/') p[o++] = '/';
  memcpy(p + o, name, nl + 1);
  return p;
}

static const char *rec_text(const tp_record *r, size_t *len) {
  *len = r->text.len;
  return r->text.data ? (const char *)r->text.data : "";
}

/* The whole record of q: its response times and text read back from the
 * records file when the run let go of them (tp_records.h).  *full stays
 * valid until the next call for a request with the same reader. */
static int whole(const tp_export_request *q, tp_record *full) {
  return tp_records_load(q->from, q->rec, full, NULL, 0);
}

/* Where a writer spills its buffer as it goes, so that a level of millions
 * of requests never sits whole in memory; NULL = keep it all in the
 * buffer (the public writers). */
typedef struct sink {
  int fd;   /* >= 0: write here */
  FILE *fp; /* else here */
} sink;

#define SPILL_BYTES (1u << 20)

static int sink_spill(tp_buf *out, const sink *k) {
  if (!k || out->len < SPILL_BYTES) return 0;
  int bad = k->fd >= 0 ? write_all(k->fd, out->data, out->len) : fwrite(out->data, 1, out->len, k->fp) != out->len;
  if (bad) return TP_EIO;
  tp_buf_reset(out);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Accuracy                                                                 */

static bool is_ws(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static void trim(const char **s, size_t *len) {
  const unsigned char *p = (const unsigned char *)*s;
  size_t n = *len;
  while (n && is_ws(*p)) p++, n--;
  while (n && is_ws(p[n - 1])) n--;
  *s = (const char *)p;
  *len = n;
}

bool tp_exact_match(const char *cand, size_t cand_len, const char *ref, size_t ref_len) {
  if (!cand) cand_len = 0, cand = "";
  if (!ref) ref_len = 0, ref = "";
  trim(&cand, &cand_len);
  trim(&ref, &ref_len);
  return cand_len == ref_len && memcmp(cand, ref, cand_len) == 0;
}

typedef struct tok {
  const char *p;
  size_t len;
  uint64_t hash;
} tok;

/* Splits s into whitespace-separated tokens.  Returns the count, or
 * SIZE_MAX when out of memory; *out is owned (free()). */
static size_t split_tokens(const char *s, size_t len, tok **out) {
  *out = NULL;
  size_t n = 0, cap = 0;
  tok *v = NULL;
  size_t i = 0;
  while (i < len) {
    while (i < len && is_ws((unsigned char)s[i])) i++;
    if (i >= len) break;
    size_t start = i;
    /* FNV-1a: equal tokens have equal hashes, so the LCS inner loop
     * compares bytes only when the hashes agree. */
    uint64_t h = 1469598103934665603ULL;
    while (i < len && !is_ws((unsigned char)s[i])) {
      h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
      i++;
    }
    if (n == cap) {
      size_t nc = cap ? cap * 2 : 64;
      tok *nv = realloc(v, nc * sizeof(*nv));
      if (!nv) {
        free(v);
        return SIZE_MAX;
      }
      v = nv;
      cap = nc;
    }
    v[n++] = (tok){s + start, i - start, h};
  }
  *out = v;
  return n;
}

static bool tok_eq(const tok *a, const tok *b) {
  return a->hash == b->hash && a->len == b->len && memcmp(a->p, b->p, a->len) == 0;
}

double tp_rouge_l_f1(const char *cand, size_t cand_len, const char *ref, size_t ref_len) {
  tok *c = NULL, *r = NULL;
  size_t nc = split_tokens(cand ? cand : "", cand ? cand_len : 0, &c);
  size_t nr = split_tokens(ref ? ref : "", ref ? ref_len : 0, &r);
  if (nc == SIZE_MAX || nr == SIZE_MAX) {
    free(c);
    free(r);
    return TP_ENOMEM;
  }
  double f1 = 0;
  if (nc && nr) {
    /* Two rows of the DP table over the reference: the LCS length only
     * needs the previous row. */
    uint32_t *prev = calloc(nr + 1, sizeof(*prev)), *cur = calloc(nr + 1, sizeof(*cur));
    if (!prev || !cur) {
      free(prev);
      free(cur);
      free(c);
      free(r);
      return TP_ENOMEM;
    }
    for (size_t i = 1; i <= nc; i++) {
      for (size_t j = 1; j <= nr; j++) {
        if (tok_eq(&c[i - 1], &r[j - 1]))
          cur[j] = prev[j - 1] + 1;
        else
          cur[j] = prev[j] > cur[j - 1] ? prev[j] : cur[j - 1];
      }
      uint32_t *t = prev;
      prev = cur;
      cur = t;
    }
    double lcs = prev[nr];
    if (lcs > 0) {
      double p = lcs / (double)nc, rc = lcs / (double)nr;
      f1 = 2 * p * rc / (p + rc);
    }
    free(prev);
    free(cur);
  }
  free(c);
  free(r);
  return f1;
}

static bool scorable(const tp_export_request *q) {
  return q->rec && !q->rec->warmup && tp_record_ok(q->rec) && q->reference;
}

static void accuracy_rates(tp_accuracy *a) {
  a->exact_match_rate = a->scored ? (double)a->exact / (double)a->scored : 0;
  a->rouge_l_f1 = a->scored ? a->rouge_l_f1_sum / (double)a->scored : 0;
}

int tp_accuracy_compute(tp_accuracy *acc, const tp_export_request *reqs, size_t n) {
  memset(acc, 0, sizeof(*acc));
  for (size_t i = 0; i < n; i++) {
    if (!scorable(&reqs[i])) continue;
    tp_record full;
    int lrv = whole(&reqs[i], &full);
    if (lrv) return lrv;
    size_t tl;
    const char *t = rec_text(&full, &tl);
    const char *ref = reqs[i].reference;
    double f = tp_rouge_l_f1(t, tl, ref, strlen(ref));
    if (f < 0) return TP_ENOMEM;
    acc->scored++;
    acc->exact += tp_exact_match(t, tl, ref, strlen(ref));
    acc->rouge_l_f1_sum += f;
  }
  accuracy_rates(acc);
  return 0;
}

void tp_accuracy_merge(tp_accuracy *a, const tp_accuracy *b) {
  a->scored += b->scored;
  a->exact += b->exact;
  a->rouge_l_f1_sum += b->rouge_l_f1_sum;
  accuracy_rates(a);
}

/* ------------------------------------------------------------------------ */
/* perf_analyzer profile export                                             */

static bool measured(const tp_export_request *q) {
  return q->rec && !q->rec->warmup;
}

typedef struct send_key {
  uint64_t sent_ns;
  uint64_t seq;
  size_t i;
} send_key;

static int cmp_send_key(const void *a, const void *b) {
  const send_key *x = a, *y = b;
  if (x->sent_ns != y->sent_ns) return x->sent_ns < y->sent_ns ? -1 : 1;
  if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

size_t tp__order_by_send(const tp_export_request *reqs, size_t n, bool (*keep)(const tp_export_request *),
                         size_t **out) {
  send_key *keys = malloc((n ? n : 1) * sizeof(*keys));
  size_t *idx = malloc((n ? n : 1) * sizeof(*idx));
  if (!keys || !idx) {
    free(keys);
    free(idx);
    return SIZE_MAX;
  }
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (reqs[i].rec && (!keep || keep(&reqs[i])))
      keys[k++] = (send_key){reqs[i].rec->sent_ns, reqs[i].rec->seq, i};
  qsort(keys, k, sizeof(*keys), cmp_send_key);
  for (size_t j = 0; j < k; j++) idx[j] = keys[j].i;
  free(keys);
  *out = idx;
  return k;
}

static bool measured_ok(const tp_export_request *q) {
  return measured(q) && tp_record_ok(q->rec);
}

static int pa_experiment(tp_buf *out, const sink *sk, const tp_export_level *lv, uint32_t default_max_tokens,
                         uint64_t anchor_mono_ns, uint64_t anchor_wall_ns) {
  const tp_level_result *lr = lv->lr;
  const tp_export_request *reqs = lv->reqs;
  size_t n = lv->n;
  size_t *idx;
  size_t k = tp__order_by_send(reqs, n, measured_ok, &idx);
  if (k == SIZE_MAX) return TP_ENOMEM;
#define W(ts) tp_export_wall_ns(anchor_mono_ns, anchor_wall_ns, (ts))
  /* perf_analyzer writes {"mode": "concurrency", "value": N} or, with no
   * concurrency, {"mode": "request_rate", "value": rate}; a trace has no
   * rate of its own and is written as request_rate 0. */
  int rv = lr->load_mode == TP_LOAD_CONCURRENCY
               ? tp_buf_printf(
                     out, "{\"experiment\":{\"mode\":\"concurrency\",\"value\":%" PRIu32 "},\"requests\":[",
                     lr->concurrency)
               : tp_buf_printf(
                     out, "{\"experiment\":{\"mode\":\"request_rate\",\"value\":%.17g},\"requests\":[",
                     lr->load_mode == TP_LOAD_RATE && isfinite(lr->request_rate) ? lr->request_rate : 0.0);
  for (size_t j = 0; j < k && rv == 0; j++) {
    const tp_export_request *q = &reqs[idx[j]];
    tp_record full;
    rv = whole(q, &full);
    if (rv) break;
    const tp_record *r = &full;
    uint32_t max_tokens = q->max_tokens ? q->max_tokens : default_max_tokens;
    rv = tp_buf_printf(out, "%s{\"timestamp\":%" PRIu64 ",\"request_inputs\":{\"text_input\":", j ? "," : "",
                       W(r->sent_ns));
    if (!rv) rv = json_sent(out, q);
    if (!rv) rv = tp_buf_printf(out, ",\"max_tokens\":%" PRIu32 "},\"response_timestamps\":[", max_tokens);
    size_t text_at = SIZE_MAX;
    for (uint32_t i = 0; i < r->n_resp && rv == 0; i++) {
      if (text_at == SIZE_MAX && r->first_token_ns && r->resp_ns[i] == r->first_token_ns) text_at = i;
      rv = tp_buf_printf(out, "%s%" PRIu64, i ? "," : "", W(r->resp_ns[i]));
    }
    if (!rv) rv = tp_buf_append_str(out, "],\"response_outputs\":[");
    for (uint32_t i = 0; i < r->n_resp && rv == 0; i++) {
      rv = tp_buf_append_str(out, i ? ",{\"text_output\":" : "{\"text_output\":");
      size_t tl = 0;
      const char *t = i == text_at ? rec_text(r, &tl) : "";
      if (!rv) rv = json_str(out, t, tl);
      if (!rv) rv = tp_buf_append(out, "}", 1);
    }
    if (!rv) rv = tp_buf_append(out, "]", 1);
    /* A distributed run says which rank sent it (docs/scale-out.md). */
    if (!rv && lr->ranks) rv = tp_buf_printf(out, ",\"rank\":%" PRIu32, r->rank);
    if (!rv) rv = tp_buf_append(out, "}", 1);
    if (!rv) rv = sink_spill(out, sk);
  }
  free(idx);
  if (rv) return rv;

  /* The window is the level's: it opens at the first measured send and is
   * duration_s long, the figure the throughputs were divided by. */
  uint64_t start_ns = 0;
  for (size_t i = 0; i < n; i++)
    if (measured(&reqs[i]) && reqs[i].rec->sent_ns && (!start_ns || reqs[i].rec->sent_ns < start_ns))
      start_ns = reqs[i].rec->sent_ns;
  rv = tp_buf_append_str(out, "],\"window_boundaries\":[");
  if (!rv && lv->window_end_ns > lv->window_start_ns) {
    rv = tp_buf_printf(out, "%" PRIu64 ",%" PRIu64, W(lv->window_start_ns), W(lv->window_end_ns));
  } else if (!rv && start_ns) {
    uint64_t dur_ns = lr->duration_s > 0 ? (uint64_t)llround(lr->duration_s * 1e9) : 0;
    rv = tp_buf_printf(out, "%" PRIu64 ",%" PRIu64, W(start_ns), W(start_ns) + dur_ns);
  }
  if (!rv) rv = tp_buf_append(out, "]}", 2);
#undef W
  return rv;
}

int tp_export_pa_experiment(tp_buf *out, const tp_export_level *lv, uint32_t default_max_tokens,
                            uint64_t anchor_mono_ns, uint64_t anchor_wall_ns) {
  return pa_experiment(out, NULL, lv, default_max_tokens, anchor_mono_ns, anchor_wall_ns);
}

/* ------------------------------------------------------------------------ */
/* GenAI-Perf summary                                                       */

static const char *backend_name(tp_backend b) {
  switch (b) {
    case TP_BACKEND_TENSORRTLLM: return "tensorrtllm";
    case TP_BACKEND_VLLM: return "vllm";
  }
  return "unknown";
}

static int jset(json_t *o, const char *k, json_t *v) {
  return json_object_set_new(o, k, v) ? -1 : 0;
}

static json_t *jstr(const char *s) {
  return s ? json_string(s) : json_null();
}

static json_t *jreal(double v) {
  return isfinite(v) ? json_real(v) : json_null();
}

/* GenAI-Perf's statistics block, in its key order. */
static json_t *genai_stat(const tp_stat *st, const char *unit) {
  json_t *o = json_object();
  if (!o) return NULL;
  int bad = jset(o, "unit", json_string(unit));
  bad |= jset(o, "avg", jreal(st->avg));
  bad |= jset(o, "p99", jreal(st->p99));
  bad |= jset(o, "p95", jreal(st->p95));
  bad |= jset(o, "p90", jreal(st->p90));
  bad |= jset(o, "p75", jreal(st->p75));
  bad |= jset(o, "p50", jreal(st->p50));
  bad |= jset(o, "p25", jreal(st->p25));
  bad |= jset(o, "max", jreal(st->max));
  bad |= jset(o, "min", jreal(st->min));
  bad |= jset(o, "std", jreal(st->std));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static json_t *genai_scalar(double v, const char *unit) {
  json_t *o = json_object();
  if (!o) return NULL;
  int bad = jset(o, "unit", json_string(unit));
  bad |= jset(o, "avg", jreal(v));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static json_t *genai_input_config(const tp_level_result *lr, const tp_config *cfg, const char *pe_path,
                                  const char *artifact_dir) {
  static const tp_config none;
  if (!cfg) cfg = &none;
  json_t *o = json_object(), *models = json_array(), *extra = json_object();
  if (!o || !models || !extra) {
    json_decref(o);
    json_decref(models);
    json_decref(extra);
    return NULL;
  }
  int bad = 0;
  if (cfg->model) bad |= json_array_append_new(models, json_string(cfg->model));
  if (cfg->output_tokens_mean) bad |= jset(extra, "max_tokens", json_integer(cfg->output_tokens_mean));
  /* GenAI-Perf's argument names, so tools that read input_config find
   * them; -1 is GenAI-Perf's "not set" for output_tokens_mean. */
  bad |= jset(o, "model", models);
  bad |= jset(o, "formatted_model_name", jstr(cfg->model));
  bad |= jset(o, "backend", json_string(backend_name(cfg->backend)));
  bad |= jset(o, "endpoint", json_null());
  bad |= jset(o, "endpoint_type", json_string("kserve"));
  bad |= jset(o, "service_kind", json_string("triton"));
  bad |= jset(o, "streaming", json_boolean(cfg->streaming));
  bad |= jset(o, "u", jstr(cfg->url));
  bad |= jset(o, "input_file", jstr(cfg->input_file));
  bad |= jset(o, "prompt_source", json_string(cfg->input_file ? "file" : "synthetic"));
  bad |= jset(o, "num_prompts", json_integer(cfg->num_prompts));
  bad |= jset(o, "output_tokens_mean",
              json_integer(cfg->output_tokens_mean ? (json_int_t)cfg->output_tokens_mean : -1));
  bad |= jset(o, "output_tokens_mean_deterministic", json_boolean(cfg->output_tokens_deterministic));
  bad |= jset(
      o, "random_seed",
      cfg->random_seed <= (uint64_t)INT64_MAX ? json_integer((json_int_t)cfg->random_seed) : json_null());
  bad |= jset(o, "concurrency",
              lr->load_mode == TP_LOAD_CONCURRENCY ? json_integer(lr->concurrency) : json_null());
  bad |= jset(o, "request_rate", lr->load_mode == TP_LOAD_RATE ? jreal(lr->request_rate) : json_null());
  bad |= jset(
      o, "measurement_interval",
      cfg->measurement_interval_ms ? json_integer((json_int_t)cfg->measurement_interval_ms) : json_null());
  bad |= jset(o, "request_count", json_integer((json_int_t)cfg->request_count));
  bad |= jset(o, "profile_export_file", jstr(pe_path));
  bad |= jset(o, "artifact_dir", jstr(artifact_dir));
  bad |= jset(o, "tokenizer", jstr(cfg->tokenizer));
  /* Whether input token counts include BOS and the like (output counts
   * never do). */
  bad |= jset(o, "tokenizer_add_special_tokens", json_boolean(cfg->tokenizer_add_special_tokens));
  bad |= jset(o, "extra_inputs", extra);
  char gen[64];
  snprintf(gen, sizeof(gen), "tokperf %s", tp_version());
  bad |= jset(o, "generator", json_string(gen));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

char *tp_export_genai_json(const tp_level_result *lr, const tp_config *cfg, const char *profile_export_path,
                           const char *artifact_dir) {
  json_t *doc = json_object();
  if (!doc) return NULL;
  int bad = 0;
  /* GenAI-Perf's order: request metrics and system metrics interleaved as
   * its Statistics dict holds them. */
  if (lr->requests)
    bad |= jset(doc, "request_throughput", genai_scalar(lr->request_throughput, "requests/sec"));
  if (lr->latency_ms.n) bad |= jset(doc, "request_latency", genai_stat(&lr->latency_ms, "ms"));
  if (lr->ttft_ms.n) bad |= jset(doc, "time_to_first_token", genai_stat(&lr->ttft_ms, "ms"));
  if (lr->itl_ms.n) bad |= jset(doc, "inter_token_latency", genai_stat(&lr->itl_ms, "ms"));
  if (lr->tokens_available)
    bad |= jset(doc, "output_token_throughput", genai_scalar(lr->output_token_throughput, "tokens/sec"));
  if (lr->output_tps_per_user.n)
    bad |=
        jset(doc, "output_token_throughput_per_request", genai_stat(&lr->output_tps_per_user, "tokens/sec"));
  if (lr->output_tokens.n)
    bad |= jset(doc, "output_sequence_length", genai_stat(&lr->output_tokens, "tokens"));
  if (lr->input_tokens.n) bad |= jset(doc, "input_sequence_length", genai_stat(&lr->input_tokens, "tokens"));
  bad |= jset(doc, "input_config", genai_input_config(lr, cfg, profile_export_path, artifact_dir));
  char *text = bad ? NULL : json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
  json_decref(doc);
  return text;
}

/* Python's f"{v:,.2f}": two decimals, a comma between thousands. */
static void fmt_thousands(char *buf, size_t len, double v) {
  char raw[64];
  snprintf(raw, sizeof(raw), "%.2f", v);
  const char *digits = raw[0] == '-' ? raw + 1 : raw;
  size_t int_len = strcspn(digits, ".");
  char tmp[96];
  size_t o = 0;
  if (raw[0] == '-') tmp[o++] = '-';
  for (size_t i = 0; i < int_len && o + 2 < sizeof(tmp); i++) {
    if (i && (int_len - i) % 3 == 0) tmp[o++] = ',';
    tmp[o++] = digits[i];
  }
  snprintf(tmp + o, sizeof(tmp) - o, "%s", digits + int_len);
  snprintf(buf, len, "%s", tmp);
}

/* One CSV field, quoted when it holds a comma, as Python's csv writer
 * (QUOTE_MINIMAL) does. */
static int csv_field(tp_buf *out, const char *s, bool first) {
  int rv = first ? 0 : tp_buf_append(out, ",", 1);
  if (rv) return rv;
  if (strchr(s, ',') || strchr(s, '"')) {
    rv = tp_buf_append(out, "\"", 1);
    for (const char *p = s; *p && !rv; p++)
      rv = *p == '"' ? tp_buf_append(out, "\"\"", 2) : tp_buf_append(out, p, 1);
    if (!rv) rv = tp_buf_append(out, "\"", 1);
    return rv;
  }
  return tp_buf_append_str(out, s);
}

static int csv_stat_row(tp_buf *out, const char *label, const tp_stat *st) {
  if (!st->n) return 0;
  const double v[9] = {st->avg, st->min, st->max, st->p99, st->p95, st->p90, st->p75, st->p50, st->p25};
  int rv = csv_field(out, label, true);
  for (int i = 0; i < 9 && !rv; i++) {
    char b[64];
    fmt_thousands(b, sizeof(b), v[i]);
    rv = csv_field(out, b, false);
  }
  if (!rv) rv = tp_buf_append(out, "\r\n", 2);
  return rv;
}

int tp_export_genai_csv(tp_buf *out, const tp_level_result *lr, bool streaming) {
  int rv = tp_buf_append_str(out, "Metric,avg,min,max,p99,p95,p90,p75,p50,p25\r\n");
  if (!rv && streaming) rv = csv_stat_row(out, "Time To First Token (ms)", &lr->ttft_ms);
  if (!rv && streaming) rv = csv_stat_row(out, "Inter Token Latency (ms)", &lr->itl_ms);
  if (!rv) rv = csv_stat_row(out, "Request Latency (ms)", &lr->latency_ms);
  if (!rv) rv = csv_stat_row(out, "Output Sequence Length", &lr->output_tokens);
  if (!rv) rv = csv_stat_row(out, "Input Sequence Length", &lr->input_tokens);
  if (!rv) rv = tp_buf_append_str(out, "\r\nMetric,Value\r\n");
  if (!rv && lr->tokens_available)
    rv = tp_buf_printf(out, "Output Token Throughput (per sec),%.2f\r\n", lr->output_token_throughput);
  if (!rv) rv = tp_buf_printf(out, "Request Throughput (per sec),%.2f\r\n", lr->request_throughput);
  return rv;
}

/* ------------------------------------------------------------------------ */
/* responses.jsonl                                                          */

static int json_tokens(tp_buf *out, int64_t v) {
  return v >= 0 ? tp_buf_printf(out, "%" PRId64, v) : tp_buf_append_str(out, "null");
}

static int responses_jsonl(tp_buf *out, const sink *sk, const tp_level_result *lr, const tp_export_request *reqs,
                           size_t n) {
  char name[128];
  tp__level_name(lr, name, sizeof(name));
  int rv = 0;
  for (size_t i = 0; i < n && rv == 0; i++) {
    const tp_export_request *q = &reqs[i];
    if (!measured(q)) continue;
    tp_record full;
    rv = whole(q, &full);
    if (rv) break;
    const tp_record *r = &full;
    size_t tl;
    const char *t = rec_text(r, &tl);
    rv = tp_buf_append_str(out, "{\"level\":");
    if (!rv) rv = json_str(out, name, strlen(name));
    if (!rv && lr->ranks) rv = tp_buf_printf(out, ",\"rank\":%" PRIu32, r->rank);
    if (!rv)
      rv = tp_buf_printf(
          out, ",\"concurrency\":%" PRIu32 ",\"id\":%" PRIu64 ",\"prompt_index\":%" PRIu32 ",\"prompt\":",
          lr->concurrency, r->seq, r->prompt_index);
    if (!rv) rv = q->prompt ? json_sent(out, q) : tp_buf_append_str(out, "null");
    if (!rv && q->reference) {
      rv = tp_buf_append_str(out, ",\"reference\":");
      if (!rv) rv = json_str(out, q->reference, strlen(q->reference));
    }
    if (!rv) rv = tp_buf_append_str(out, ",\"output\":");
    if (!rv) rv = json_str(out, t, tl);
    if (!rv) rv = tp_buf_append_str(out, ",\"input_tokens\":");
    if (!rv) rv = json_tokens(out, r->input_tokens);
    if (!rv) rv = tp_buf_append_str(out, ",\"output_tokens\":");
    if (!rv) rv = json_tokens(out, r->output_tokens);
    bool ok = tp_record_ok(r);
    if (!rv) rv = tp_buf_printf(out, ",\"ok\":%s,\"error\":", ok ? "true" : "false");
    if (!rv) {
      if (ok) {
        rv = tp_buf_append_str(out, "null");
      } else {
        /* The same words the report uses: a request with no class never
         * finished. */
        tp_buf e;
        tp_buf_init(&e);
        rv = tp_buf_append_str(
            &e, r->err_class == TP_ERRCLASS_NONE ? "unfinished" : tp_error_class_name(r->err_class));
        if (!rv && r->err_msg && *r->err_msg)
          rv = tp_buf_printf(&e, ": %s", r->err_msg);
        else if (!rv && r->err_class == TP_ERRCLASS_NONE)
          rv = tp_buf_append_str(&e, ": no final response");
        if (!rv) rv = json_str(out, (const char *)e.data, e.len);
        tp_buf_fini(&e);
      }
    }
    if (!rv && scorable(q)) {
      double f = tp_rouge_l_f1(t, tl, q->reference, strlen(q->reference));
      if (f < 0) rv = TP_ENOMEM;
      if (!rv)
        rv = tp_buf_printf(out, ",\"exact_match\":%s,\"rouge_l_f1\":%.6g",
                           tp_exact_match(t, tl, q->reference, strlen(q->reference)) ? "true" : "false", f);
    }
    if (!rv) rv = tp_buf_append(out, "}\n", 2);
    if (!rv) rv = sink_spill(out, sk);
  }
  return rv;
}

int tp_export_responses_jsonl(tp_buf *out, const tp_level_result *lr, const tp_export_request *reqs,
                              size_t n) {
  return responses_jsonl(out, NULL, lr, reqs, n);
}

/* ------------------------------------------------------------------------ */
/* The artifact directory                                                   */

struct tp_artifacts {
  const struct tp_search_summary *search; /* NULL = no capacity search */
  char *dir;
  char *pe_path; /* profile export, final name */
  char *pe_tmp;  /* its temporary file */
  char *stem;
  int pe_fd;
  size_t pe_levels;
  char *resp_path;
  FILE *resp;
  const tp_config *cfg;
  uint64_t anchor_mono_ns, anchor_wall_ns;
  bool html;
  size_t timeline_max;
  bool finished;

  tp_html_level *levels;
  tp_accuracy *acc;
  size_t n_levels, cap_levels;
  tp_accuracy total;
  bool any_reference;
};

static int io_err(char *err, size_t errlen, const char *what, const char *path, int e) {
  tp_seterr(err, errlen, "cannot %s %s: %s (check that the directory is writable; see --artifact-dir)", what,
            path, strerror(e));
  return e == ENOMEM ? TP_ENOMEM : TP_EIO;
}

int tp_artifacts_open(tp_artifacts **out, const tp_artifacts_opts *o, char *err, size_t errlen) {
  *out = NULL;
  if (!o || !o->dir || !*o->dir) {
    tp_seterr(err, errlen, "no artifact directory given (see --artifact-dir)");
    return TP_EINVAL;
  }
  const char *pe =
      o->profile_export_file && *o->profile_export_file ? o->profile_export_file : "profile_export.json";
  tp_artifacts *a = calloc(1, sizeof(*a));
  if (!a) return TP_ENOMEM;
  a->pe_fd = -1;
  a->cfg = o->cfg;
  a->anchor_mono_ns = o->anchor_mono_ns;
  a->anchor_wall_ns = o->anchor_wall_ns;
  a->html = o->html;
  a->timeline_max = o->html_timeline_max ? o->html_timeline_max : 500;
  a->dir = tp_strndup(o->dir, strlen(o->dir));
  a->pe_path = strchr(pe, '/') ? tp_strndup(pe, strlen(pe)) : (a->dir ? join_path(a->dir, pe) : NULL);
  a->resp_path = a->dir ? join_path(a->dir, "responses.jsonl") : NULL;
  /* GenAI-Perf's stem: the file name without its last extension. */
  const char *base = strrchr(pe, '/') ? strrchr(pe, '/') + 1 : pe;
  const char *dot = strrchr(base, '.');
  a->stem = tp_strndup(base, dot && dot != base ? (size_t)(dot - base) : strlen(base));
  if (!a->dir || !a->pe_path || !a->resp_path || !a->stem) {
    tp_artifacts_free(a);
    return TP_ENOMEM;
  }
  if (make_dirs(a->dir)) {
    int rv = io_err(err, errlen, "create", a->dir, errno);
    tp_artifacts_free(a);
    return rv;
  }
  a->pe_fd = open_temp(a->pe_path, &a->pe_tmp);
  if (a->pe_fd < 0) {
    int rv = io_err(err, errlen, "create", a->pe_path, errno);
    tp_artifacts_free(a);
    return rv;
  }
  static const char head[] = "{\"experiments\":[";
  if (write_all(a->pe_fd, head, sizeof(head) - 1)) {
    int rv = io_err(err, errlen, "write", a->pe_tmp, errno);
    tp_artifacts_free(a);
    return rv;
  }
  a->resp = fopen(a->resp_path, "w");
  if (!a->resp) {
    int rv = io_err(err, errlen, "create", a->resp_path, errno);
    tp_artifacts_free(a);
    return rv;
  }
  *out = a;
  return 0;
}

static int write_file(const char *path, const void *data, size_t len, char *err, size_t errlen) {
  if (tp__write_atomic(path, data, len)) return io_err(err, errlen, "write", path, errno);
  return 0;
}

/* The level's directory, named as GenAI-Perf names its artifact
 * directories' last part: concurrency<N> or request_rate<R> (schedule for
 * a trace), then _input<I> / _output<O> for a swept length; _2, _3 ...
 * when a sweep repeats a point, so a repeat never overwrites the first. */
static char *level_dir(tp_artifacts *a, const tp_level_result *lr) {
  char name[128], base[112];
  int o;
  switch (lr->load_mode) {
    case TP_LOAD_RATE: o = snprintf(base, sizeof(base), "request_rate%g", lr->request_rate); break;
    case TP_LOAD_SCHEDULE: o = snprintf(base, sizeof(base), "schedule"); break;
    default: o = snprintf(base, sizeof(base), "concurrency%" PRIu32, lr->concurrency); break;
  }
  if (lr->input_tokens_mean && o > 0 && (size_t)o < sizeof(base))
    o += snprintf(base + o, sizeof(base) - (size_t)o, "_input%" PRIu32, lr->input_tokens_mean);
  if (lr->output_tokens_mean && o > 0 && (size_t)o < sizeof(base))
    snprintf(base + o, sizeof(base) - (size_t)o, "_output%" PRIu32, lr->output_tokens_mean);
  unsigned seen = 0;
  for (size_t i = 0; i < a->n_levels; i++) {
    const tp_level_result *p = &a->levels[i].lr;
    seen += p->load_mode == lr->load_mode && p->concurrency == lr->concurrency &&
            p->request_rate == lr->request_rate && p->input_tokens_mean == lr->input_tokens_mean &&
            p->output_tokens_mean == lr->output_tokens_mean;
  }
  if (seen)
    snprintf(name, sizeof(name), "%s_%u", base, seen + 1);
  else
    snprintf(name, sizeof(name), "%s", base);
  return join_path(a->dir, name);
}

/* The message of a failed read-back of the level's records, NULL when none
 * failed. */
static const char *read_back_error(const tp_export_request *reqs, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (reqs[i].from) return tp_records_reader_error(reqs[i].from);
  return NULL;
}

int tp_artifacts_add_level(tp_artifacts *a, const tp_export_level *lv_in, tp_accuracy *acc_out, char *err,
                           size_t errlen) {
  const tp_level_result *lr = lv_in->lr;
  const tp_export_request *reqs = lv_in->reqs;
  size_t n = lv_in->n;
  if (a->finished) {
    tp_seterr(err, errlen, "artifacts already finished");
    return TP_EINVAL;
  }
  if (a->n_levels == a->cap_levels) {
    size_t nc = a->cap_levels ? a->cap_levels * 2 : 8;
    tp_html_level *nl = realloc(a->levels, nc * sizeof(*nl));
    if (nl) a->levels = nl;
    tp_accuracy *na = nl ? realloc(a->acc, nc * sizeof(*na)) : NULL;
    if (!na) {
      tp_seterr(err, errlen, "cannot write the artifacts of a level: out of memory");
      return TP_ENOMEM;
    }
    a->acc = na;
    a->cap_levels = nc;
  }
  int rv = 0;
  tp_buf b;
  tp_buf_init(&b);

  /* 1. The profile export: one experiment, streamed into the temporary
   * file so a long sweep never holds every level's records. */
  uint32_t def_max = a->cfg && a->cfg->output_tokens_mean ? a->cfg->output_tokens_mean : 128;
  sink pe_sink = {a->pe_fd, NULL};
  if (a->pe_levels) rv = tp_buf_append(&b, ",", 1);
  if (!rv) rv = pa_experiment(&b, &pe_sink, lv_in, def_max, a->anchor_mono_ns, a->anchor_wall_ns);
  if (rv == TP_EIO && !read_back_error(reqs, n)) {
    rv = io_err(err, errlen, "write", a->pe_tmp, errno);
    goto done;
  }
  if (rv) goto done;
  if (write_all(a->pe_fd, b.data, b.len)) {
    rv = io_err(err, errlen, "write", a->pe_tmp, errno);
    goto done;
  }
  a->pe_levels++;

  /* 2. GenAI-Perf's files, in a directory per level. */
  char *ldir = level_dir(a, lr);
  if (!ldir) {
    rv = TP_ENOMEM;
    goto done;
  }
  if (make_dirs(ldir)) {
    rv = io_err(err, errlen, "create", ldir, errno);
    free(ldir);
    goto done;
  }
  size_t sl = strlen(a->stem) + 32;
  char *fname = malloc(sl);
  char *jpath = NULL, *cpath = NULL;
  if (fname) {
    snprintf(fname, sl, "%s_genai_perf.json", a->stem);
    jpath = join_path(ldir, fname);
    snprintf(fname, sl, "%s_genai_perf.csv", a->stem);
    cpath = join_path(ldir, fname);
  }
  char *js = jpath && cpath ? tp_export_genai_json(lr, a->cfg, a->pe_path, ldir) : NULL;
  if (!js) {
    rv = TP_ENOMEM;
  } else {
    size_t jl = strlen(js);
    tp_buf jb;
    tp_buf_init(&jb);
    rv = tp_buf_append(&jb, js, jl);
    if (!rv) rv = tp_buf_append(&jb, "\n", 1);
    if (!rv) rv = write_file(jpath, jb.data, jb.len, err, errlen);
    tp_buf_fini(&jb);
    free(js);
  }
  if (!rv) {
    tp_buf_reset(&b);
    rv = tp_export_genai_csv(&b, lr, a->cfg ? a->cfg->streaming : true);
    if (!rv) rv = write_file(cpath, b.data, b.len, err, errlen);
  }
  free(fname);
  free(jpath);
  free(cpath);
  free(ldir);
  if (rv) goto done;

  /* 3. responses.jsonl, appended and flushed so an interrupted run keeps
   * every finished level. */
  tp_buf_reset(&b);
  sink resp_sink = {-1, a->resp};
  rv = responses_jsonl(&b, &resp_sink, lr, reqs, n);
  if (rv == TP_EIO && !read_back_error(reqs, n)) {
    rv = io_err(err, errlen, "write", a->resp_path, errno);
    goto done;
  }
  if (rv) goto done;
  if ((b.len && fwrite(b.data, 1, b.len, a->resp) != b.len) || fflush(a->resp)) {
    rv = io_err(err, errlen, "write", a->resp_path, errno);
    goto done;
  }

  /* 4. Accuracy and the page's digest. */
  tp_accuracy acc;
  rv = tp_accuracy_compute(&acc, reqs, n);
  if (rv) goto done;
  for (size_t i = 0; i < n; i++)
    if (reqs[i].reference) a->any_reference = true;
  tp_html_level *lv = &a->levels[a->n_levels];
  if (a->html) {
    rv = tp_html_level_init(lv, lr, reqs, n, a->timeline_max);
  } else {
    memset(lv, 0, sizeof(*lv));
    lv->lr = *lr;
  }
  if (rv) goto done;
  a->acc[a->n_levels] = acc;
  a->n_levels++;
  tp_accuracy_merge(&a->total, &acc);
  if (acc_out) *acc_out = acc;

done:
  if (rv && read_back_error(reqs, n))
    tp_seterr(err, errlen, "%s", read_back_error(reqs, n));
  else if (rv == TP_ENOMEM)
    tp_seterr(err, errlen, "cannot write the artifacts of a level: out of memory");
  tp_buf_fini(&b);
  return rv;
}

void tp_artifacts_accuracy(const tp_artifacts *a, tp_accuracy *out) {
  *out = a->total;
}

static int accuracy_json(tp_artifacts *a, char *err, size_t errlen) {
  tp_buf b;
  tp_buf_init(&b);
  int rv = tp_buf_append_str(&b,
                             "{\n  \"definitions\": {\"exact_match\": \"generated text equals the "
                             "reference after trimming surrounding whitespace\", \"rouge_l_f1\": "
                             "\"F1 of the longest common subsequence of whitespace tokens\"},\n"
                             "  \"levels\": [");
  for (size_t i = 0; i < a->n_levels && !rv; i++) {
    const tp_accuracy *c = &a->acc[i];
    char name[128];
    tp__level_name(&a->levels[i].lr, name, sizeof(name));
    rv = tp_buf_printf(&b, "%s\n    {\"level\": ", i ? "," : "");
    if (!rv) rv = json_str(&b, name, strlen(name));
    if (!rv)
      rv =
          tp_buf_printf(&b,
                        ", \"concurrency\": %" PRIu32 ", \"scored\": %" PRIu64 ", \"exact\": %" PRIu64
                        ", \"exact_match_rate\": %.9g, \"rouge_l_f1\": %.9g}",
                        a->levels[i].lr.concurrency, c->scored, c->exact, c->exact_match_rate, c->rouge_l_f1);
  }
  if (!rv)
    rv = tp_buf_printf(&b,
                       "\n  ],\n  \"run\": {\"scored\": %" PRIu64 ", \"exact\": %" PRIu64
                       ", \"exact_match_rate\": %.9g, \"rouge_l_f1\": %.9g}\n}\n",
                       a->total.scored, a->total.exact, a->total.exact_match_rate, a->total.rouge_l_f1);
  char *path = rv ? NULL : join_path(a->dir, "accuracy.json");
  if (!rv && !path) rv = TP_ENOMEM;
  if (!rv) rv = write_file(path, b.data, b.len, err, errlen);
  free(path);
  tp_buf_fini(&b);
  return rv;
}

int tp_artifacts_finish(tp_artifacts *a, char *err, size_t errlen) {
  if (a->finished) return 0;
  tp_buf b;
  tp_buf_init(&b);
  int rv = tp_buf_append_str(&b, "],\"version\":");
  if (!rv) rv = json_str(&b, tp_version(), strlen(tp_version()));
  if (!rv) rv = tp_buf_append_str(&b, ",\"service_kind\":\"triton\",\"endpoint\":\"\"}\n");
  if (rv) {
    tp_buf_fini(&b);
    return rv;
  }
  if (write_all(a->pe_fd, b.data, b.len)) {
    rv = io_err(err, errlen, "write", a->pe_tmp, errno);
  } else {
    int fd = a->pe_fd;
    a->pe_fd = -1;
    if (commit_temp(fd, a->pe_tmp, a->pe_path)) rv = io_err(err, errlen, "write", a->pe_path, errno);
    free(a->pe_tmp);
    a->pe_tmp = NULL;
  }
  tp_buf_fini(&b);
  if (rv) return rv;
  a->finished = true;

  if (a->resp && fclose(a->resp)) {
    a->resp = NULL;
    return io_err(err, errlen, "write", a->resp_path, errno);
  }
  a->resp = NULL;

  if (a->any_reference && (rv = accuracy_json(a, err, errlen))) return rv;

  if (a->html) {
    char *path = join_path(a->dir, "report.html");
    if (!path) return TP_ENOMEM;
    tp_html_input in = {
        .cfg = a->cfg,
        .levels = a->levels,
        .n_levels = a->n_levels,
        .timeline_level = SIZE_MAX,
        .start_wall_ns = a->anchor_wall_ns,
        .accuracy = a->any_reference ? a->acc : NULL,
        .search = a->search,
    };
    rv = tp_html_write(path, &in, err, errlen);
    free(path);
  }
  return rv;
}

void tp_artifacts_set_search(tp_artifacts *a, const struct tp_search_summary *s) { a->search = s; }

void tp_artifacts_free(tp_artifacts *a) {
  if (!a) return;
  if (a->pe_fd >= 0) close(a->pe_fd);
  if (a->pe_tmp) unlink(a->pe_tmp);
  if (a->resp) fclose(a->resp);
  for (size_t i = 0; i < a->n_levels; i++) tp_html_level_fini(&a->levels[i]);
  free(a->levels);
  free(a->acc);
  free(a->pe_tmp);
  free(a->dir);
  free(a->pe_path);
  free(a->resp_path);
  free(a->stem);
  free(a);
}
