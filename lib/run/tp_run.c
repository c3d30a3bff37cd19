/* A run: the sweep of points (concurrency or rate, times input and output
 * lengths), each measured as one level.  This file builds a run from its
 * settings (validation, the points, the inputs), gives its results and
 * frees it; tp_run_internal.h names the other parts. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "run/tp_run_internal.h"
#include "report/tp_report.h"
#include "util/tp_files.h"
#include "util/tp_stamp.h"

void tpr_progress(tp_run *r, const char *fmt, ...) {
  if (!r->cfg.output.progress) return;
  va_list ap;
  va_start(ap, fmt);
  if (r->progress_tty) fputs("\r\033[K", r->cfg.output.progress);
  fputs("tokperf: ", r->cfg.output.progress);
  vfprintf(r->cfg.output.progress, fmt, ap);
  fputc('\n', r->cfg.output.progress);
  fflush(r->cfg.output.progress);
  va_end(ap);
}

/* Warnings are not progress: --quiet silences progress, never a warning. */
void tpr_warn(tp_run *r, const char *fmt, ...) {
  FILE *out = r->cfg.output.progress ? r->cfg.output.progress : stderr;
  va_list ap;
  va_start(ap, fmt);
  if (r->progress_tty) fputs("\r\033[K", out);
  fprintf(out, "tokperf: %swarning: ", r->rank_tag);
  vfprintf(out, fmt, ap);
  fputc('\n', out);
  fflush(out);
  va_end(ap);
}

void tpr_output_failed(tp_run *r, const char *fmt, ...) {
  char msg[sizeof(r->output_error)];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  tpr_warn(r, "%s", msg);
  if (!r->output_error[0]) snprintf(r->output_error, sizeof(r->output_error), "%s", msg);
}

const char *tp_run_output_error(const tp_run *r) {
  return r->output_error[0] ? r->output_error : NULL;
}

/* Chat messages go to /v1/chat/completions as they are; a marker or a
 * shared prefix is put before the prompt text, which for messages would
 * mean rewriting one of them, so the two are not combined. */
static int check_messages_use(tp_run *r, char *err, size_t errlen) {
  if (r->cfg.server.service_kind != TP_SERVICE_OPENAI_CHAT ||
      !(r->cfg.prompts.cache_bust || r->cfg.prompts.prefix_tokens))
    return 0;
  for (size_t i = 0; i < r->ds.n; i++) {
    if (r->ds.items[i].messages) {
      tp_seterr(err, errlen,
                "%s: chat \"messages\" lines cannot take prompts.cache_bust or prompts.prefix_tokens "
                "(they rewrite the prompt); use prompt lines, or drop those options",
                r->ds.source);
      return TP_EINVAL;
    }
  }
  return 0;
}

/* What the prompts need: a source, and a tokenizer for exact token counts. */
static int validate_prompts(const tp_config *c, char *err, size_t errlen) {
  if (!c->prompts.input_file && (c->prompts.num_prompts == 0 || c->prompts.synthetic_input_words == 0)) {
    tp_seterr(err, errlen,
              "synthetic prompts need prompts.num_prompts and prompts.synthetic_input_words above 0");
    return TP_EINVAL;
  }
  if (c->prompts.n_input_tokens_means && !c->prompts.tokenizer) {
    tp_seterr(err, errlen,
              "prompts.synthetic_input_tokens_mean needs prompts.tokenizer: prompts are cut to an exact "
              "number of the model's tokens");
    return TP_EINVAL;
  }
  if (c->prompts.n_input_tokens_means && c->prompts.input_file) {
    tp_seterr(err, errlen, "prompts.synthetic_input_tokens_mean and prompts.input_file exclude each other");
    return TP_EINVAL;
  }
  if (c->prompts.prefix_tokens && !c->prompts.tokenizer) {
    tp_seterr(err, errlen,
              "prompts.prefix_tokens needs prompts.tokenizer: the shared prefixes are cut to an exact number "
              "of the model's tokens");
    return TP_EINVAL;
  }
  if (c->prompts.tokenizer_add_special_tokens && !c->prompts.tokenizer) {
    tp_seterr(err, errlen,
              "prompts.tokenizer_add_special_tokens needs prompts.tokenizer: it says how the tokenizer "
              "counts prompts");
    return TP_EINVAL;
  }
  return 0;
}

static int validate(const tp_config *c, char *err, size_t errlen) {
  if (c->load.search && (c->load.schedule_file || c->prompts.n_input_tokens_means > 1 ||
                         c->prompts.n_output_tokens_means > 1)) {
    tp_seterr(err, errlen,
              "search.mode probes one load at a time: it goes without load.schedule_file and lists of token "
              "lengths");
    return TP_EINVAL;
  }
  if (!c->load.request_rates || !c->load.n_request_rates) {
    if (!c->load.schedule_file && (!c->load.n_concurrency || !c->load.concurrency)) {
      tp_seterr(err, errlen, "load.concurrency: no levels given; expected a list like 1,4,8");
      return TP_EINVAL;
    }
  }
  for (size_t i = 0; i < c->load.n_concurrency; i++) {
    if (c->load.concurrency[i] == 0 || c->load.concurrency[i] > 100000) {
      tp_seterr(err, errlen, "load.concurrency: %u is out of range; expected 1 to 100000",
                c->load.concurrency[i]);
      return TP_EINVAL;
    }
  }
  for (size_t i = 0; i < c->load.n_request_rates; i++) {
    if (!(c->load.request_rates[i] > 0) || c->load.request_rates[i] > 1e7) {
      tp_seterr(err, errlen, "load.request_rate: %g is out of range; expected above 0, at most 10000000",
                c->load.request_rates[i]);
      return TP_EINVAL;
    }
  }
  if (c->load.ramp) {
    /* The ramp's progress counts the level's requests: it needs their
     * number, and one level. */
    if (c->load.n_request_rates != 1 || c->measure.measure_mode != TP_MEASURE_COUNT || !c->measure.request_count) {
      tp_seterr(err, errlen, "load.ramp: a rate ramp needs one request rate level and a request count");
      return TP_EINVAL;
    }
    if (!(c->load.ramp_start_rps > 0) || !(c->load.ramp_end_rps >= c->load.ramp_start_rps) ||
        c->load.ramp_end_rps > 1e7) {
      tp_seterr(err, errlen, "load.ramp: start %g and end %g requests/s: expected 0 < start <= end <= 10000000",
                c->load.ramp_start_rps, c->load.ramp_end_rps);
      return TP_EINVAL;
    }
  }
  if (c->load.arrival == TP_ARRIVAL_GAMMA && !(c->load.burstiness > 0)) {
    tp_seterr(err, errlen, "load.burstiness: must be above 0 (1 is Poisson)");
    return TP_EINVAL;
  }
  /* OpenAI servers take the first model they list; the engine protocols
   * name none (one server, one model). */
  bool openai = c->server.service_kind == TP_SERVICE_OPENAI_CHAT ||
                c->server.service_kind == TP_SERVICE_OPENAI_COMPLETIONS ||
                c->server.service_kind == TP_SERVICE_VLLM_GRPC || c->server.service_kind == TP_SERVICE_SGLANG_GRPC;
  if (!c->server.model || (!*c->server.model && !openai)) {
    tp_seterr(err, errlen, "server.model: a model name is needed (e.g. ensemble)");
    return TP_EINVAL;
  }
  if (!c->server.url || !*c->server.url) {
    tp_seterr(err, errlen, "server.url: a server address is needed (HOST:PORT)");
    return TP_EINVAL;
  }
  if (c->server.backend != TP_BACKEND_TENSORRTLLM && c->server.backend != TP_BACKEND_VLLM) {
    tp_seterr(err, errlen, "server.backend: expected tensorrtllm or vllm");
    return TP_EINVAL;
  }
  if (validate_prompts(c, err, errlen)) return TP_EINVAL;
  if (c->measure.measure_mode == TP_MEASURE_TIME_WINDOWS && c->measure.measurement_interval_ms == 0) {
    tp_seterr(err, errlen, "measure.measurement_interval_ms: the measurement window must be longer than 0");
    return TP_EINVAL;
  }
  if (c->measure.measure_mode == TP_MEASURE_DURATION && c->measure.duration_ms == 0) {
    tp_seterr(err, errlen, "measure.duration_ms: the measurement window must be longer than 0");
    return TP_EINVAL;
  }
  if (!c->output.metrics_port && ((c->output.metrics_host && *c->output.metrics_host) || c->output.metrics_hold_ms)) {
    tp_seterr(err, errlen,
              "output.metrics_host and output.metrics_hold_ms (--metrics-host, --metrics-hold) go with "
              "output.metrics_port: give --metrics-port PORT to serve the live metrics");
    return TP_EINVAL;
  }
  if (c->load.schedule_file && (c->load.n_request_rates || c->prompts.n_input_tokens_means)) {
    tp_seterr(err, errlen,
              "load.schedule_file replays its own times and lengths: drop load.request_rate and "
              "prompts.synthetic_input_tokens_mean");
    return TP_EINVAL;
  }
  return 0;
}

#define DUP_LIST(dst, src, n, type)                              \
  do {                                                           \
    if ((n) > 0) {                                               \
      (dst) = malloc((n) * sizeof(type));                        \
      if (!(dst)) goto nomem;                                    \
      memcpy((dst), (src), (n) * sizeof(type));                  \
    }                                                            \
  } while (0)


/* The sweep: input lengths outermost, then output lengths, then the load. */
static int make_points(tp_run *r) {
  const tp_config *c = &r->cfg;
  size_t ni = c->prompts.n_input_tokens_means ? c->prompts.n_input_tokens_means : 1;
  size_t no = c->prompts.n_output_tokens_means ? c->prompts.n_output_tokens_means : 1;
  size_t nl = c->load.search            ? tp_sweep_search_max_levels(c)
              : c->load.schedule_file   ? 1
              : c->load.n_request_rates ? c->load.n_request_rates
                                        : c->load.n_concurrency;
  /* --num-profile-runs: each point that many times in a row. */
  size_t nr = c->measure.num_profile_runs > 1 ? c->measure.num_profile_runs : 1;
  r->n_points = ni * no * nl * nr;
  r->points = calloc(r->n_points, sizeof(point));
  if (!r->points) return TP_ENOMEM;
  size_t k = 0;
  for (size_t i = 0; i < ni; i++)
    for (size_t o = 0; o < no; o++)
      for (size_t l = 0; l < nl * nr; l++) {
        point *p = &r->points[k++];
        p->input_tokens = c->prompts.n_input_tokens_means ? r->in_means[i] : 0;
        p->output_tokens = c->prompts.n_output_tokens_means ? r->out_means[o] : c->prompts.output_tokens_mean;
        if (c->load.schedule_file) {
          p->mode = TP_LOAD_SCHEDULE;
          p->concurrency = c->load.max_concurrency;
        } else if (c->load.n_request_rates) {
          p->mode = TP_LOAD_RATE;
          p->rate = r->rates[l / nr];
          p->concurrency = c->load.max_concurrency;
        } else {
          p->mode = TP_LOAD_CONCURRENCY;
          p->concurrency = c->load.search ? 0 : r->concurrency[l / nr];
        }
      }
  return 0;
}

/* Reads a trace: one JSON object per line with "timestamp" in ms and either
 * a prompt or an "input_length"; prompts are added to r->ds. */
static int load_schedule(tp_run *r, char *err, size_t errlen);

/* The artifact directory: --artifact-dir, or GenAI-Perf's naming under
 * artifacts/: the model, then the service and what it speaks
 * (triton-tensorrtllm, triton-vllm, openai-chat, openai-completions,
 * openai-generate: GenAI-Perf counts the generate endpoint as an OpenAI-style
 * HTTP service), then the load mode.  A run without a model name (an
 * OpenAI server that ignores it) leaves the model part out. */
void tpr_artifact_dir_name(const tp_config *c, char *out, size_t outlen) {
  if (c->artifacts.artifact_dir) {
    snprintf(out, outlen, "%s", c->artifacts.artifact_dir);
    return;
  }
  const char *mode = c->load.schedule_file     ? "schedule"
                     : c->load.n_request_rates ? "request_rate"
                                               : "concurrency";
  const char *api = c->server.backend == TP_BACKEND_VLLM ? "triton-vllm" : "triton-tensorrtllm";
  switch (c->server.service_kind) {
    case TP_SERVICE_OPENAI_CHAT: api = "openai-chat"; break;
    case TP_SERVICE_OPENAI_COMPLETIONS: api = "openai-completions"; break;
    case TP_SERVICE_TRITON_GENERATE: api = "openai-generate"; break;
    case TP_SERVICE_VLLM_GRPC: api = "vllm-grpc"; break;
    case TP_SERVICE_SGLANG_GRPC: api = "sglang-grpc"; break;
    case TP_SERVICE_TRITON: break;
  }
  bool named = c->server.model && *c->server.model;
  snprintf(out, outlen, "artifacts/%s%s%s-%s", named ? c->server.model : "", named ? "-" : "", api, mode);
  for (char *p = out + 10; *p; p++)
    if (*p == '/' || *p == ' ') *p = '_';
}

/* Under mpirun only rank 0 writes results (docs/scale-out.md); the launcher
 * says which rank this process is before MPI is even initialised. */
static bool writes_results(void) {
  const char *rank = getenv("OMPI_COMM_WORLD_RANK");
  if (!rank) rank = getenv("PMIX_RANK");
  return !rank || strcmp(rank, "0") == 0;
}

/* Every file and directory the run will write is checked before anything
 * is sent, so a run never measures for an hour and then fails to write. */
static int check_outputs(const tp_config *c, char *err, size_t errlen) {
  if (!writes_results()) return 0;
  char why[600];
  struct {
    const char *opt, *path;
  } files[] = {{"output.json_path", c->output.json_path},
               {"output.records_path", c->output.records_path},
               {"output.latency_report_file", c->output.latency_report_file},
               {"output.profile_export_file", c->artifacts.profile_export_file &&
                                                      strchr(c->artifacts.profile_export_file, '/') &&
                                                      !c->artifacts.no_artifacts
                                                  ? c->artifacts.profile_export_file
                                                  : NULL}};
  for (size_t i = 0; i < TP_ARRAY_LEN(files); i++) {
    if (!files[i].path) continue;
    if (tp_file_check_writable(files[i].path, why, sizeof(why))) {
      tp_seterr(err, errlen, "%s: cannot write '%s': %s (choose a writable path)", files[i].opt, files[i].path,
                why);
      return TP_EINVAL;
    }
  }
  if (!c->artifacts.no_artifacts) {
    char dir[1024];
    tpr_artifact_dir_name(c, dir, sizeof(dir));
    if (tp_dir_check_creatable(dir, why, sizeof(why))) {
      tp_seterr(err, errlen,
                "%s: cannot write the artifact directory '%s': %s (choose another with "
                "output.artifact_dir, or output.no_artifacts)",
                c->artifacts.artifact_dir ? "output.artifact_dir" : "artifacts", dir, why);
      return TP_EINVAL;
    }
  }
  return 0;
}

/* The prompts: a trace (--schedule), an input file, or synthetic ones
 * (words now, or exact token lengths per point, made once the tokenizer is
 * loaded). */
static int load_inputs(tp_run *r, const tp_config *cfg, char *err, size_t errlen) {
  int rv;
  if (cfg->load.schedule_file) {
    rv = load_schedule(r, err, errlen);
    if (rv) return rv;
  } else if (cfg->prompts.input_file) {
    rv = tp_dataset_load(&r->ds, cfg->prompts.input_file, err, errlen);
    if (rv) return rv;
    if (!cfg->prompts.tokenizer && tp_trace_has_lengths(&r->ds)) {
      tp_seterr(err, errlen,
                "%s: turns given as \"input_length\" need prompts.tokenizer to make prompts of that many "
                "tokens",
                cfg->prompts.input_file);
      return TP_EINVAL;
    }
    rv = check_messages_use(r, err, errlen);
    if (rv) return rv;
    /* The entry's own tensors go out unless an option must rewrite the
     * prompt or the length, or no metadata gives their datatypes. */
    r->file_inputs = strcmp(r->ds.format, "perf_analyzer") == 0 &&
                     cfg->server.service_kind == TP_SERVICE_TRITON && !cfg->server.skip_preflight &&
                     !cfg->prompts.cache_bust && !cfg->prompts.prefix_tokens &&
                     !cfg->prompts.output_tokens_deterministic && !cfg->prompts.output_tokens_mean &&
                     !cfg->prompts.n_output_tokens_means;
    if (r->ds.note[0] && !r->file_inputs) tpr_warn(r, "%s", r->ds.note);
    if (strcmp(r->ds.format, "jsonl") == 0)
      snprintf(r->ds_desc, sizeof(r->ds_desc), "%s (%zu prompts)", cfg->prompts.input_file, r->ds.n);
    else
      snprintf(r->ds_desc, sizeof(r->ds_desc), "%s (%zu prompts, %s)", cfg->prompts.input_file, r->ds.n,
               r->ds.format);
  } else if (!cfg->prompts.n_input_tokens_means) {
    rv = tp_dataset_synthetic(&r->ds, cfg->prompts.num_prompts, cfg->prompts.synthetic_input_words,
                              cfg->prompts.random_seed);
    if (rv) {
      tp_seterr(err, errlen, "cannot make synthetic prompts: %s", tp_strerror(rv));
      return rv;
    }
    snprintf(r->ds_desc, sizeof(r->ds_desc), "synthetic (%zu prompts of %u words, seed %" PRIu64 ")", r->ds.n,
             cfg->prompts.synthetic_input_words, cfg->prompts.random_seed);
  } else {
    snprintf(r->ds_desc, sizeof(r->ds_desc), "synthetic (%u prompts of exact token length, seed %" PRIu64 ")",
             cfg->prompts.num_prompts, cfg->prompts.random_seed);
  }
  return 0;
}

int tp_run_new(tp_run **out, const tp_config *cfg, char *err, size_t errlen) {
  *out = NULL;
  int rv = validate(cfg, err, errlen);
  if (!rv) rv = check_outputs(cfg, err, errlen);
  if (rv) return rv;
  tp_run *r = calloc(1, sizeof(*r));
  if (!r) return TP_ENOMEM;
  r->cfg = *cfg;
  DUP_LIST(r->concurrency, cfg->load.concurrency, cfg->load.n_concurrency, uint32_t);
  DUP_LIST(r->rates, cfg->load.request_rates, cfg->load.n_request_rates, double);
  DUP_LIST(r->in_means, cfg->prompts.input_tokens_means, cfg->prompts.n_input_tokens_means, uint32_t);
  DUP_LIST(r->out_means, cfg->prompts.output_tokens_means, cfg->prompts.n_output_tokens_means, uint32_t);
  r->cfg.load.concurrency = r->concurrency;
  r->cfg.load.request_rates = r->rates;
  r->cfg.prompts.input_tokens_means = r->in_means;
  r->cfg.prompts.output_tokens_means = r->out_means;
  if (r->cfg.load.replay_speedup <= 0) r->cfg.load.replay_speedup = 1;
  if (r->cfg.load.prefix_block_tokens == 0) r->cfg.load.prefix_block_tokens = 512;
  if (r->cfg.load.burstiness <= 0 && r->cfg.load.arrival != TP_ARRIVAL_GAMMA) r->cfg.load.burstiness = 1;
  if (r->cfg.measure.measurement_interval_ms == 0) r->cfg.measure.measurement_interval_ms = 10000;
  if (r->cfg.measure.measurement_request_count == 0) r->cfg.measure.measurement_request_count = 50;
  if (r->cfg.measure.stability_percentage <= 0) r->cfg.measure.stability_percentage = 10;
  if (r->cfg.measure.max_trials == 0) r->cfg.measure.max_trials = 10;
  if (r->cfg.measure.max_trials > MAX_WINDOWS) r->cfg.measure.max_trials = MAX_WINDOWS;
  atomic_init(&r->interrupt_flag, false);
  uv_loop_init(&r->loop);
  uv_mutex_init(&r->records_lock);
  /* jansson seeds its hash function lazily; do it here, before any pool
   * thread builds a record line. */
  json_object_seed(0);

  rv = tp_gates_new(&r->gates, cfg->measure.asserts, cfg->measure.n_asserts, err, errlen);
  if (rv) goto fail;
  if (cfg->load.search) {
    rv = tp_sweep_search_new(&r->search, cfg, err, errlen);
    if (rv) goto fail;
  }
  rv = make_points(r);
  if (rv) goto fail;

  rv = load_inputs(r, cfg, err, errlen);
  if (rv) goto fail;
  r->levels = calloc(r->n_points, sizeof(*r->levels));
  r->server_stats = calloc(r->n_points, sizeof(*r->server_stats));
  r->server_metrics = calloc(r->n_points, sizeof(*r->server_metrics));
  if (!r->levels || !r->server_stats || !r->server_metrics) goto nomem;
  *out = r;
  return 0;
nomem:
  rv = TP_ENOMEM;
fail:
  tp_run_free(r);
  return rv;
}

static int load_schedule(tp_run *r, char *err, size_t errlen) {
  const char *path = r->cfg.load.schedule_file;
  FILE *f = fopen(path, "r");
  if (!f) {
    tp_seterr(err, errlen, "%s: %s (check load.schedule_file)", path, strerror(errno));
    return errno == ENOENT ? TP_ENOTFOUND : TP_EIO;
  }
  int rv = tp_trace_read(f, path, r->cfg.load.replay_speedup, r->cfg.prompts.tokenizer != NULL, &r->ds,
                         &r->trace, &r->n_trace, err, errlen);
  fclose(f);
  if (rv == 0)
    snprintf(r->ds_desc, sizeof(r->ds_desc), "%s (%zu requests, speed-up %g)", path, r->n_trace,
             r->cfg.load.replay_speedup);
  return rv;
}

size_t tp_run_level_count(const tp_run *r) { return r->n_levels; }

const tp_level_result *tp_run_level(const tp_run *r, size_t i) {
  return i < r->n_levels ? &r->levels[i] : NULL;
}

void tp_run_set_mock(tp_run *r, const tp_mock_config *cfg) { r->mock_cfg = cfg; }

void tp_run_set_mock_stats(tp_run *r, const tp_mock_stats *stats) {
  r->mock_stats = *stats;
  r->have_mock_stats = true;
}

int tp_run_mock_stats(const tp_run *r, tp_mock_stats *out) {
  if (!r->have_mock_stats) return TP_ENOTFOUND;
  *out = r->mock_stats;
  return 0;
}

const char *tp_run_artifact_dir(const tp_run *r) { return r->artifacts ? r->artifact_dir : ""; }

int tp_run_check_gates(const tp_run *r, FILE *out) {
  if (r->search) return tp_sweep_search_check(r->search, r->gates, r->levels, out);
  return tp_gates_check(r->gates, r->levels, r->n_levels, r->cfg.measure.max_error_rate, out);
}

static void fill_report(const tp_run *r, tp_report_input *in) {
  memset(in, 0, sizeof(*in));
  in->cfg = &r->cfg;
  in->target = r->target;
  in->tokenizer_desc = r->tok ? r->tok_desc : NULL;
  in->dataset_desc = r->ds_desc;
  in->levels = r->levels;
  in->n_levels = r->n_levels;
  in->interrupted = r->interrupted;
  in->mock_config = r->mock_cfg;
  in->have_mock_stats = r->have_mock_stats;
  in->mock_stats = r->mock_stats;
  in->search = r->search ? tp_sweep_search_summary(r->search) : NULL;
}

void tp_run_report_text(const tp_run *r, FILE *out) {
  tp_report_input in;
  fill_report(r, &in);
  tp_report_text(out, &in);
}

int tp_run_write_json(const tp_run *r, const char *path, char *err, size_t errlen) {
  tp_report_input in;
  fill_report(r, &in);
  return tp_report_json(path, &in, err, errlen);
}

int tp_write_file(const char *path, const void *data, size_t len, char *err, size_t errlen) {
  if (tp__write_atomic(path, data, len) == 0) return 0;
  tp__write_err(err, errlen, path, errno, NULL);
  return TP_EIO;
}

int tp_run_print_json(const tp_run *r, FILE *out, char *err, size_t errlen) {
  tp_report_input in;
  fill_report(r, &in);
  return tp_report_json_fp(out, &in, err, errlen);
}

int tp_run_write_latency_csv(const tp_run *r, const char *path, bool verbose, char *err, size_t errlen) {
  char note[600];
  int rv = tp_report_pa_csv_files(path, r->artifacts ? r->artifact_dir : NULL, r->levels, r->n_levels,
                                  verbose, note, sizeof(note));
  if (rv)
    tp_seterr(err, errlen, "%s", note);
  else if (note[0])
    tpr_warn((tp_run *)r, "%s", note);
  return rv;
}

static void walk_close(uv_handle_t *h, void *arg) {
  if (!uv_is_closing(h)) uv_close(h, NULL);
}

void tp_run_free(tp_run *r) {
  if (!r) return;
  if (r->client) {
    r->client->ops->close(r->client);
    r->client = NULL;
  }
  if (r->timers) tp_timers_close(r->timers);
  if (r->scraper) tp_scraper_free(r->scraper);
  if (r->gpu_scraper) tp_scraper_free(r->gpu_scraper);
  tp_live_server_close(r->live_srv); /* freed by the loop's run below */
  r->live_srv = NULL;
  tp_stamp_uninstall(&r->loop);
  /* Close every handle and let libuv finish, so the loop closes cleanly. */
  uv_walk(&r->loop, walk_close, NULL);
  uv_run(&r->loop, UV_RUN_DEFAULT);
  uv_loop_close(&r->loop);
  if (r->records_fp) fclose(r->records_fp);
  tp_artifacts_free(r->artifacts);
  uv_mutex_destroy(&r->records_lock);
  if (r->tok) tp_tok_free(r->tok);
  for (size_t i = 0; i < r->n_prefixes; i++) free(r->prefixes[i]);
  free(r->prefixes);
  free(r->prefix_len);
  tp_buf_fini(&r->sendbuf);
  tp_dataset_free(&r->ds);
  if (r->have_syn_ds) tp_dataset_free(&r->syn_ds);
  free(r->trace);
  tp_rec_arena_free(r->arena);
  tp_gap_pool_free(r->gaps);
  tp_gap_pool_free(r->vllm_gaps);
  tp_gap_pool_free(r->loop_lag);
  tp_live_free(r->live);
  free(r->lv.settled);
  free(r->lv.offsets);
  free(r->done_q);
  tp_gates_free(r->gates);
  tp_sweep_search_free(r->search);
  free(r->stats_before);
  for (size_t i = 0; r->server_stats && i < r->n_points; i++) free(r->server_stats[i]);
  free(r->server_stats);
  for (size_t i = 0; r->server_metrics && i < r->n_points; i++) free(r->server_metrics[i]);
  free(r->server_metrics);
  free(r->points);
  for (size_t i = 0; r->levels && i < r->n_levels; i++) {
    free((void *)r->levels[i].turns);
    free((void *)r->levels[i].vllm_requests);
    free((void *)r->levels[i].slices);
    free((void *)r->levels[i].server_series);
  }
  free(r->levels);
  free(r->concurrency);
  free(r->rates);
  free(r->in_means);
  free(r->out_means);
  free(r->rank_info);
  free(r->rank_in);
  /* Last: MPI_Finalize waits for every rank. */
  tp_mpi_free(r->mpi);
  free(r);
}
