/* Exports for other tools: responses.jsonl, accuracy, and the artifact
 * directory that holds every export.  See tp_export.h for the layouts;
 * the writers of the other files are tp_export_pa.c (perf_analyzer),
 * tp_export_summary.c (GenAI-Perf's and AIPerf's summaries, from the metric
 * registry) with tp_export_genai.c (GenAI-Perf's input_config), and their
 * shared helpers are tp_export_util.c.
 *
 * Views only: timestamps and texts come from the records, figures from
 * tp_level_result. */
#include "tp_export_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report/tp_html.h"
#include "report/tp_records.h"
#include "tokperf/tokperf.h"
#include "util/tp_files.h"

/* ------------------------------------------------------------------------ */
/* Accuracy of a level's requests                                           */

static bool scorable(const tp_export_request *q) {
  return q->rec && !q->rec->warmup && tp_record_ok(q->rec) && q->reference;
}

int tp_accuracy_compute(tp_accuracy *acc, const tp_export_request *reqs, size_t n) {
  memset(acc, 0, sizeof(*acc));
  for (size_t i = 0; i < n; i++) {
    if (!scorable(&reqs[i])) continue;
    tp_record full;
    int lrv = tp__whole(&reqs[i], &full);
    if (lrv) return lrv;
    size_t tl;
    const char *t = tp__rec_text(&full, &tl);
    const char *ref = reqs[i].reference;
    double f = tp_rouge_l_f1(t, tl, ref, strlen(ref));
    if (f < 0) return TP_ENOMEM;
    acc->scored++;
    acc->exact += tp_exact_match(t, tl, ref, strlen(ref));
    acc->rouge_l_f1_sum += f;
  }
  tp_accuracy_rates(acc);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* responses.jsonl                                                          */

static int json_tokens(tp_buf *out, int64_t v) {
  return v >= 0 ? tp__json_u64(out, (uint64_t)v) : tp_buf_append_str(out, "null");
}

/* ,"request_id":...,"server_request_id":...: the id sent (NULL prefix: not
 * known, left out) and the server's own (null when none came). */
static int request_ids(tp_buf *out, const char *id_prefix, const tp_record *r) {
  int rv = 0;
  if (id_prefix) {
    char id[96];
    snprintf(id, sizeof(id), "%s%" PRIu64, id_prefix, r->seq);
    rv = tp_buf_append_str(out, ",\"request_id\":");
    if (!rv) rv = tp__json_str(out, id, strlen(id));
  }
  if (!rv) rv = tp_buf_append_str(out, ",\"server_request_id\":");
  if (!rv) rv = r->server_id[0] ? tp__json_str(out, r->server_id, strlen(r->server_id)) : tp_buf_append_str(out, "null");
  return rv;
}

static int responses_jsonl(tp_buf *out, const tp__sink *sk, const tp_level_result *lr,
                           const tp_export_request *reqs, size_t n, const char *id_prefix) {
  char name[128];
  tp__level_name(lr, name, sizeof(name));
  int rv = 0;
  for (size_t i = 0; i < n && rv == 0; i++) {
    const tp_export_request *q = &reqs[i];
    if (!tp__measured(q)) continue;
    tp_record full;
    rv = tp__whole(q, &full);
    if (rv) break;
    const tp_record *r = &full;
    size_t tl;
    const char *t = tp__rec_text(r, &tl);
    rv = tp_buf_append_str(out, "{\"level\":");
    if (!rv) rv = tp__json_str(out, name, strlen(name));
    if (!rv && lr->ranks) rv = tp_buf_printf(out, ",\"rank\":%" PRIu32, r->rank);
    if (!rv) rv = tp_buf_append_str(out, ",\"concurrency\":");
    if (!rv) rv = tp__json_u64(out, lr->concurrency);
    if (!rv) rv = tp_buf_append_str(out, ",\"id\":");
    if (!rv) rv = tp__json_u64(out, r->seq);
    if (!rv) rv = request_ids(out, id_prefix, r);
    if (!rv) rv = tp_buf_append_str(out, ",\"prompt_index\":");
    if (!rv) rv = tp__json_u64(out, r->prompt_index);
    if (!rv) rv = tp_buf_append_str(out, ",\"prompt\":");
    if (!rv) rv = q->prompt ? tp__json_sent(out, q) : tp_buf_append_str(out, "null");
    if (!rv && q->reference) {
      rv = tp_buf_append_str(out, ",\"reference\":");
      if (!rv) rv = tp__json_str(out, q->reference, strlen(q->reference));
    }
    if (!rv) rv = tp_buf_append_str(out, ",\"output\":");
    if (!rv) rv = tp__json_str(out, t, tl);
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
        if (!rv) rv = tp__json_str(out, (const char *)e.data, e.len);
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
    if (!rv) rv = tp__sink_spill(out, sk);
  }
  return rv;
}

int tp_export_responses_jsonl(tp_buf *out, const tp_level_result *lr, const tp_export_request *reqs,
                              size_t n) {
  return responses_jsonl(out, NULL, lr, reqs, n, NULL);
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
  bool mock; /* the target is the in-process mock: report.html names it so */
  size_t timeline_max;
  bool finished;

  tp_html_level *levels;
  tp_accuracy *acc;
  size_t n_levels, cap_levels;
  tp_accuracy total;
  bool any_reference;
};

static int io_err(char *err, size_t errlen, const char *what, const char *path, int e) {
  char full[600];
  if (tp_errno_full(e) && tp_write_error(full, sizeof(full), path, e))
    tp_seterr(err, errlen, "%s", full);
  else
    tp_seterr(err, errlen, "cannot %s %s: %s (check that the directory is writable; see --artifact-dir)",
              what, path, strerror(e));
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
  a->pe_path = strchr(pe, '/') ? tp_strndup(pe, strlen(pe)) : (a->dir ? tp__join_path(a->dir, pe) : NULL);
  a->resp_path = a->dir ? tp__join_path(a->dir, "responses.jsonl") : NULL;
  /* GenAI-Perf's stem: the file name without its last extension. */
  const char *base = strrchr(pe, '/') ? strrchr(pe, '/') + 1 : pe;
  const char *dot = strrchr(base, '.');
  a->stem = tp_strndup(base, dot && dot != base ? (size_t)(dot - base) : strlen(base));
  if (!a->dir || !a->pe_path || !a->resp_path || !a->stem) {
    tp_artifacts_free(a);
    return TP_ENOMEM;
  }
  if (tp__make_dirs(a->dir)) {
    int rv = io_err(err, errlen, "create", a->dir, errno);
    tp_artifacts_free(a);
    return rv;
  }
  a->pe_fd = tp__open_temp(a->pe_path, &a->pe_tmp);
  if (a->pe_fd < 0) {
    int rv = io_err(err, errlen, "create", a->pe_path, errno);
    tp_artifacts_free(a);
    return rv;
  }
  static const char head[] = "{\"experiments\":[";
  if (tp__write_all(a->pe_fd, head, sizeof(head) - 1)) {
    int rv = io_err(err, errlen, "write", a->pe_path, errno);
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
    /* As GenAI-Perf names them, from Python's float: request_rate20.0. */
    case TP_LOAD_RATE:
      o = snprintf(base, sizeof(base), lr->request_rate == floor(lr->request_rate) ? "request_rate%.1f" : "request_rate%g",
                   lr->request_rate);
      break;
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
  return tp__join_path(a->dir, name);
}

/* The message of a failed read-back of the level's records, NULL when none
 * failed. */
static const char *read_back_error(const tp_export_request *reqs, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (reqs[i].from) return tp_records_reader_error(reqs[i].from);
  return NULL;
}

/* Room for one more level's digest and accuracy. */
static int grow_levels(tp_artifacts *a) {
  if (a->n_levels < a->cap_levels) return 0;
  size_t nc = a->cap_levels ? a->cap_levels * 2 : 8;
  tp_html_level *nl = realloc(a->levels, nc * sizeof(*nl));
  if (nl) a->levels = nl;
  tp_accuracy *na = nl ? realloc(a->acc, nc * sizeof(*na)) : NULL;
  if (!na) return TP_ENOMEM;
  a->acc = na;
  a->cap_levels = nc;
  return 0;
}

/* dir/<stem><suffix>, owned; NULL when out of memory. */
static char *stem_path(const tp_artifacts *a, const char *dir, const char *suffix) {
  size_t sl = strlen(a->stem) + strlen(suffix) + 1;
  char *fname = malloc(sl);
  if (!fname) return NULL;
  snprintf(fname, sl, "%s%s", a->stem, suffix);
  char *p = tp__join_path(dir, fname);
  free(fname);
  return p;
}

/* One JSON text (owned, consumed) as a file with a final newline. */
static int write_json_text(tp_buf *b, char *js, const char *path, char *err, size_t errlen) {
  if (!js || !path) {
    free(js);
    return TP_ENOMEM;
  }
  tp_buf_reset(b);
  int rv = tp_buf_append(b, js, strlen(js));
  if (!rv) rv = tp_buf_append(b, "\n", 1);
  if (!rv) rv = write_file(path, b->data, b->len, err, errlen);
  free(js);
  return rv;
}

/* The end of a profile export, after its experiments: what perf_analyzer
 * writes there, and what GenAI-Perf reads to know the API. */
static int pe_tail(tp_buf *b, const tp_config *cfg) {
  int rv = tp_buf_append_str(b, "],\"version\":");
  if (!rv) rv = tp__json_str(b, tp_version(), strlen(tp_version()));
  tp__tool_api api = tp__tool_api_of(cfg);
  if (!rv) rv = tp_buf_append_str(b, ",\"service_kind\":");
  if (!rv) rv = tp__json_str(b, api.service_kind, strlen(api.service_kind));
  if (!rv) rv = tp_buf_append_str(b, ",\"endpoint\":");
  if (!rv) rv = tp__json_str(b, api.endpoint, strlen(api.endpoint));
  if (!rv) rv = tp_buf_append_str(b, "}\n");
  return rv;
}

/* Bytes [from, to) of the file at path appended to file out.  Returns 0
 * or -1 with errno. */
static int copy_range(const char *path, off_t from, off_t to, int out) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char chunk[1 << 16];
  int rv = 0;
  while (from < to && rv == 0) {
    size_t want = (size_t)(to - from) < sizeof(chunk) ? (size_t)(to - from) : sizeof(chunk);
    ssize_t got = pread(fd, chunk, want, from);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      if (got == 0) errno = EIO;
      rv = -1;
    } else if (tp__write_all(out, chunk, (size_t)got)) {
      rv = -1;
    }
    from += got > 0 ? got : 0;
  }
  int e = errno;
  close(fd);
  errno = e;
  return rv;
}

/* The level's experiment as a profile export of its own, <level>/<stem>.json,
 * as GenAI-Perf's artifact directory of one run holds it beside its
 * summary (genai-perf process-export-files reads such directories); then
 * the same bytes appended to the run's profile export, which holds every
 * level.  Both are streamed through temporary files a MiB at a time, so a
 * long sweep never holds a level's records. */
static int add_pa(tp_artifacts *a, tp_buf *b, const tp_export_level *lv, const char *ldir, char *err,
                  size_t errlen) {
  uint32_t def_max = a->cfg && a->cfg->prompts.output_tokens_mean ? a->cfg->prompts.output_tokens_mean : 128;
  char *path = stem_path(a, ldir, ".json"), *tmp = NULL;
  if (!path) return TP_ENOMEM;
  int fd = tp__open_temp(path, &tmp);
  if (fd < 0) {
    int rv = io_err(err, errlen, "create", path, errno);
    free(path);
    return rv;
  }
  static const char head[] = "{\"experiments\":[";
  tp_buf_reset(b);
  tp__sink sk = {fd, NULL};
  int rv = tp_buf_append(b, head, sizeof(head) - 1);
  if (!rv) rv = tp__pa_experiment(b, &sk, lv, a->cfg, def_max, a->anchor_mono_ns, a->anchor_wall_ns);
  if (rv == TP_EIO && !read_back_error(lv->reqs, lv->n)) rv = io_err(err, errlen, "write", path, errno);
  if (!rv && tp__write_all(fd, b->data, b->len)) rv = io_err(err, errlen, "write", path, errno);
  off_t end = rv || !tmp ? -1 : lseek(fd, 0, SEEK_CUR);
  if (!rv && tmp && end < 0) rv = io_err(err, errlen, "write", path, errno);
  tp_buf_reset(b);
  if (!rv) rv = pe_tail(b, a->cfg);
  if (!rv && tp__write_all(fd, b->data, b->len)) rv = io_err(err, errlen, "write", path, errno);
  /* Where the run's export ends before this level: a level that cannot be
   * appended whole is cut off again, so the file stays one JSON document
   * of the levels that fit. */
  off_t pe_end = a->pe_tmp ? lseek(a->pe_fd, 0, SEEK_CUR) : -1;
  if (!rv && a->pe_levels && tp__write_all(a->pe_fd, ",", 1))
    rv = io_err(err, errlen, "write", a->pe_path, errno);
  /* The same bytes into the run's export: copied from the level's file,
   * or, where that was written in place (a device someone put there),
   * made again. */
  if (!rv && tmp && copy_range(tmp, (off_t)sizeof(head) - 1, end, a->pe_fd))
    rv = io_err(err, errlen, "write", a->pe_path, errno);
  if (!rv && !tmp) {
    tp__sink pe_sink = {a->pe_fd, NULL};
    tp_buf_reset(b);
    rv = tp__pa_experiment(b, &pe_sink, lv, a->cfg, def_max, a->anchor_mono_ns, a->anchor_wall_ns);
    if (rv == TP_EIO && !read_back_error(lv->reqs, lv->n))
      rv = io_err(err, errlen, "write", a->pe_path, errno);
    if (!rv && tp__write_all(a->pe_fd, b->data, b->len)) rv = io_err(err, errlen, "write", a->pe_path, errno);
  }
  if (rv && pe_end >= 0 && (ftruncate(a->pe_fd, pe_end) || lseek(a->pe_fd, pe_end, SEEK_SET) < 0)) {
    /* Cannot be cut: the export cannot be trusted any more. */
    tp__discard_temp(a->pe_fd, a->pe_tmp);
    a->pe_fd = -1;
  }
  if (rv) {
    tp__discard_temp(fd, tmp);
  } else if (tp__commit_temp(fd, tmp, path)) {
    rv = io_err(err, errlen, "write", path, errno);
  }
  if (!rv) a->pe_levels++;
  free(tmp);
  free(path);
  return rv;
}

/* One tool's summary of the level, <dir>/<stem><suffix>.json and .csv. */
static int add_summary(tp_artifacts *a, tp_buf *b, const tp_level_result *lr, const char *dir, bool genai,
                       char *err, size_t errlen) {
  bool streaming = a->cfg ? a->cfg->server.streaming : true;
  char *jpath = stem_path(a, dir, genai ? "_genai_perf.json" : "_aiperf.json");
  char *cpath = stem_path(a, dir, genai ? "_genai_perf.csv" : "_aiperf.csv");
  char *js = genai ? tp_export_genai_json(lr, a->cfg, a->pe_path, dir) : tp_export_aiperf_json(lr, streaming);
  int rv = write_json_text(b, js, jpath, err, errlen);
  if (!rv && !cpath) rv = TP_ENOMEM;
  if (!rv) {
    tp_buf_reset(b);
    rv = genai ? tp_export_genai_csv(b, lr, streaming) : tp_export_aiperf_csv(b, lr, streaming);
    if (!rv) rv = write_file(cpath, b->data, b->len, err, errlen);
  }
  free(jpath);
  free(cpath);
  return rv;
}

/* AIPerf's timeslice files beside its summary, when --slice-duration was
 * given (AIPerf writes them only then). */
static int add_timeslices(tp_artifacts *a, tp_buf *b, const tp_level_result *lr, const char *dir, char *err,
                          size_t errlen) {
  if (!a->cfg || !(a->cfg->measure.slice_duration_s > 0) || !lr->n_slices) return 0;
  bool streaming = a->cfg->server.streaming;
  char *jpath = stem_path(a, dir, "_aiperf_timeslices.json");
  char *cpath = stem_path(a, dir, "_aiperf_timeslices.csv");
  int rv = write_json_text(b, tp_export_aiperf_timeslices_json(lr, streaming), jpath, err, errlen);
  if (!rv && !cpath) rv = TP_ENOMEM;
  if (!rv) {
    tp_buf_reset(b);
    rv = tp_export_aiperf_timeslices_csv(b, lr, streaming);
    if (!rv) rv = write_file(cpath, b->data, b->len, err, errlen);
  }
  free(jpath);
  free(cpath);
  return rv;
}

/* AIPerf's per-record <stem>.jsonl beside its summary, streamed through a
 * temporary file a MiB at a time. */
static int add_aiperf_records(tp_artifacts *a, tp_buf *b, const tp_export_level *lv, const char *ldir,
                              char *err, size_t errlen) {
  char *path = stem_path(a, ldir, ".jsonl"), *tmp = NULL;
  if (!path) return TP_ENOMEM;
  int fd = tp__open_temp(path, &tmp);
  if (fd < 0) {
    int rv = io_err(err, errlen, "create", path, errno);
    free(path);
    return rv;
  }
  tp_buf_reset(b);
  tp__sink sk = {fd, NULL};
  int rv = tp__aiperf_records(b, &sk, lv, a->cfg ? a->cfg->server.streaming : true, a->anchor_mono_ns,
                              a->anchor_wall_ns);
  if (rv == TP_EIO && !read_back_error(lv->reqs, lv->n)) rv = io_err(err, errlen, "write", path, errno);
  if (!rv && tp__write_all(fd, b->data, b->len)) rv = io_err(err, errlen, "write", path, errno);
  if (rv) {
    tp__discard_temp(fd, tmp);
  } else if (tp__commit_temp(fd, tmp, path)) {
    rv = io_err(err, errlen, "write", path, errno);
  }
  free(tmp);
  free(path);
  return rv;
}

/* The files written per level, in a directory of their own laid out as
 * GenAI-Perf's artifact directory of one run: the level's profile export
 * and GenAI-Perf's summary, and no other *.json (genai-perf
 * process-export-files takes a directory's first *.json not named
 * *_genai_perf* as its profile export).  AIPerf's files are in aiperf/,
 * as AIPerf's own artifact directory holds them. */
static int add_level_files(tp_artifacts *a, tp_buf *b, const tp_export_level *lv, char *err, size_t errlen) {
  char *ldir = level_dir(a, lv->lr);
  char *adir = ldir ? tp__join_path(ldir, "aiperf") : NULL;
  int rv = 0;
  if (!adir)
    rv = TP_ENOMEM;
  else if (tp__make_dirs(adir))
    rv = io_err(err, errlen, "create", adir, errno);
  if (!rv) rv = add_pa(a, b, lv, ldir, err, errlen);
  if (!rv) rv = add_summary(a, b, lv->lr, ldir, true, err, errlen);
  if (!rv) rv = add_summary(a, b, lv->lr, adir, false, err, errlen);
  if (!rv) rv = add_aiperf_records(a, b, lv, adir, err, errlen);
  if (!rv) rv = add_timeslices(a, b, lv->lr, adir, err, errlen);
  free(adir);
  free(ldir);
  return rv;
}

/* responses.jsonl, appended and flushed so an interrupted run keeps every
 * finished level. */
static int add_responses(tp_artifacts *a, tp_buf *b, const tp_export_level *lv, char *err, size_t errlen) {
  if (!a->resp) return io_err(err, errlen, "write", a->resp_path, EIO);
  tp_buf_reset(b);
  /* A level that cannot be written whole is cut off again (a full disk):
   * the file keeps the earlier levels' lines, every one whole. */
  off_t good = ftello(a->resp);
  tp__sink resp_sink = {-1, a->resp};
  int rv = responses_jsonl(b, &resp_sink, lv->lr, lv->reqs, lv->n, lv->id_prefix);
  if (rv == TP_EIO && !read_back_error(lv->reqs, lv->n))
    rv = io_err(err, errlen, "write", a->resp_path, errno);
  if (!rv && ((b->len && fwrite(b->data, 1, b->len, a->resp) != b->len) || fflush(a->resp)))
    rv = io_err(err, errlen, "write", a->resp_path, errno);
  if (rv && good >= 0) {
    __fpurge(a->resp);
    clearerr(a->resp);
    if (ftruncate(fileno(a->resp), good) || fseeko(a->resp, good, SEEK_SET)) {
      fclose(a->resp);
      a->resp = NULL;
    }
  }
  return rv;
}

/* Accuracy and the page's digest. */
static int add_digest(tp_artifacts *a, const tp_export_level *lv, tp_accuracy *acc_out) {
  tp_accuracy acc;
  int rv = tp_accuracy_compute(&acc, lv->reqs, lv->n);
  if (rv) return rv;
  for (size_t i = 0; i < lv->n; i++)
    if (lv->reqs[i].reference) a->any_reference = true;
  tp_html_level *hl = &a->levels[a->n_levels];
  if (a->html) {
    rv = tp_html_level_init(hl, lv->lr, lv->reqs, lv->n, a->timeline_max);
  } else {
    memset(hl, 0, sizeof(*hl));
    hl->lr = *lv->lr;
  }
  if (rv) return rv;
  a->acc[a->n_levels] = acc;
  a->n_levels++;
  tp_accuracy_merge(&a->total, &acc);
  if (acc_out) *acc_out = acc;
  return 0;
}

int tp_artifacts_add_level(tp_artifacts *a, const tp_export_level *lv, tp_accuracy *acc_out, char *err,
                           size_t errlen) {
  if (a->finished) {
    tp_seterr(err, errlen, "artifacts already finished");
    return TP_EINVAL;
  }
  if (grow_levels(a)) {
    tp_seterr(err, errlen, "cannot write the artifacts of a level: out of memory");
    return TP_ENOMEM;
  }
  tp_buf b;
  tp_buf_init(&b);
  /* Each part is tried whatever became of the others (a full disk that
   * stops the level's files may leave room for its lines, and the page's
   * digest is kept in memory); the first failure is returned. */
  char more[600];
  int rv = add_level_files(a, &b, lv, err, errlen);
  int r2 = add_responses(a, &b, lv, rv ? more : err, rv ? sizeof(more) : errlen);
  if (!rv) rv = r2;
  r2 = add_digest(a, lv, acc_out);
  if (!rv) rv = r2;
  if (rv && read_back_error(lv->reqs, lv->n))
    tp_seterr(err, errlen, "%s", read_back_error(lv->reqs, lv->n));
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
    if (!rv) rv = tp__json_str(&b, name, strlen(name));
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
  char *path = rv ? NULL : tp__join_path(a->dir, "accuracy.json");
  if (!rv && !path) rv = TP_ENOMEM;
  if (!rv) rv = write_file(path, b.data, b.len, err, errlen);
  free(path);
  tp_buf_fini(&b);
  return rv;
}

/* Every file is tried, the first failure is returned: a full disk that
 * stops one file still leaves the others that fit. */
int tp_artifacts_finish(tp_artifacts *a, char *err, size_t errlen) {
  if (a->finished) return 0;
  a->finished = true;
  tp_buf b;
  tp_buf_init(&b);
  int rv = pe_tail(&b, a->cfg);
  if (rv) {
    tp_buf_fini(&b);
    return rv;
  }
  if (a->pe_fd < 0) {
    rv = io_err(err, errlen, "write", a->pe_path, EIO);
  } else if (tp__write_all(a->pe_fd, b.data, b.len)) {
    rv = io_err(err, errlen, "write", a->pe_path, errno);
    tp__discard_temp(a->pe_fd, a->pe_tmp);
  } else if (tp__commit_temp(a->pe_fd, a->pe_tmp, a->pe_path)) {
    rv = io_err(err, errlen, "write", a->pe_path, errno);
  }
  a->pe_fd = -1;
  free(a->pe_tmp);
  a->pe_tmp = NULL;
  tp_buf_fini(&b);

  char more[600];
  int r2 = 0;
  if (a->resp && fclose(a->resp)) r2 = io_err(more, sizeof(more), "write", a->resp_path, errno);
  a->resp = NULL;
  if (r2 && !rv) {
    rv = r2;
    tp_seterr(err, errlen, "%s", more);
  }

  if (a->any_reference && (r2 = accuracy_json(a, more, sizeof(more))) && !rv) {
    rv = r2;
    tp_seterr(err, errlen, "%s", more);
  }

  if (a->html) {
    char *path = tp__join_path(a->dir, "report.html");
    if (!path) return rv ? rv : TP_ENOMEM;
    tp_html_input in = {
        .cfg = a->cfg,
        .mock = a->mock,
        .levels = a->levels,
        .n_levels = a->n_levels,
        .timeline_level = SIZE_MAX,
        .start_wall_ns = a->anchor_wall_ns,
        .accuracy = a->any_reference ? a->acc : NULL,
        .search = a->search,
    };
    r2 = tp_html_write(path, &in, more, sizeof(more));
    free(path);
    if (r2 && !rv) {
      rv = r2;
      tp_seterr(err, errlen, "%s", more);
    }
  }
  return rv;
}

void tp_artifacts_set_mock(tp_artifacts *a, bool mock) { a->mock = mock; }

void tp_artifacts_set_search(tp_artifacts *a, const struct tp_search_summary *s) {
  a->search = s;
}

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
