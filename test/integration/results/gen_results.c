/* Writes a complete set of result files for the script tests in this
 * folder to read back with other tools' parsers (Python's json, csv and
 * xml.etree; headless Chromium):
 *
 *   OUT/art/...        an artifact directory of a three-level sweep
 *                      (profile export, GenAI-Perf files, responses.jsonl,
 *                      accuracy.json, report.html)
 *   OUT/a.json, b.json two --json documents, B slower than A
 *   OUT/junit.xml      tokperf compare A B --fail-on ... --junit
 *   OUT/compare.txt    the comparison as printed
 *   OUT/expect.json    the figures the files must show, from
 *                      tp_level_compute over the same records
 *
 * Usage: gen_results OUT_DIR */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "metrics/tp_stats.h"
#include "report/tp_compare.h"
#include "report/tp_export.h"
#include "report/tp_report.h"
#include "tokperf/tokperf.h"

#define MONO0 7000000000ULL
#define WALL0 1710000000123456789ULL

static const uint32_t concs[] = {1, 4, 16};
enum { NLEVELS = 3, NRESP = 16 };

typedef struct level {
  tp_record *r;
  tp_export_request *q;
  char **prompts;
  char **refs;
  size_t n;
  tp_level_result lr;
} level;

/* A level of n requests: every response carries text (so the first
 * response is the first token, as the perf_analyzer guide's script
 * assumes); TTFT and ITL grow with the concurrency and with slow. */
static void make_level(level *L, uint32_t conc, size_t n, double slow) {
  L->n = n;
  L->r = calloc(n, sizeof(*L->r));
  L->q = calloc(n, sizeof(*L->q));
  L->prompts = calloc(n, sizeof(char *));
  L->refs = calloc(n, sizeof(char *));
  uint64_t base = MONO0 + (uint64_t)conc * 100000000000ULL;
  for (size_t i = 0; i < n; i++) {
    tp_record *r = &L->r[i];
    tp_record_init(r);
    r->seq = i;
    r->prompt_index = (uint32_t)(i % 50);
    /* conc requests in flight: request i starts when i - conc ended,
     * roughly; a fixed spacing keeps the file reproducible. */
    r->sent_ns = r->planned_ns =
        base + (uint64_t)(i / conc) * 150000000ULL + (uint64_t)(i % conc) * 1000000ULL;
    double ttft_ms = (15 + 2.0 * conc + (double)(i % 10)) * slow;
    double gap_ms = (6 + 0.25 * conc) * slow;
    for (int k = 0; k < NRESP; k++)
      tp_record_add_response(r, r->sent_ns + (uint64_t)((ttft_ms + gap_ms * k) * 1e6), true);
    r->done_ns = r->resp_ns[NRESP - 1];
    char *p = malloc(96), *ref = malloc(64);
    snprintf(p, 96, "Question %zu: what is %zu + %zu? <answer in words> & \"quote\"", i, i % 50, (size_t)7);
    snprintf(ref, 64, "the answer is %zu", i % 50 + 7);
    L->prompts[i] = p;
    L->refs[i] = ref;
    /* 7 in 10 answers exact; the others share three of four words. */
    if (i % 10 < 7)
      tp_buf_append_str(&r->text, ref);
    else
      tp_buf_printf(&r->text, " the answer was %zu", i % 50 + 7);
    r->input_tokens = 30;
    r->output_tokens = NRESP;
    L->q[i] = (tp_export_request){r, p, strlen(p), ref, 64, NULL, {0}, {0}};
  }
  if (conc == 4 && n > 5) tp_record_fail(&L->r[5], TP_ERRCLASS_TIMEOUT, 4, "deadline exceeded", 17);
  tp_level_compute(&L->lr, L->r, n);
  L->lr.concurrency = conc;
  L->lr.max_in_flight = conc;
}

static void free_level(level *L) {
  for (size_t i = 0; i < L->n; i++) {
    tp_record_fini(&L->r[i]);
    free(L->prompts[i]);
    free(L->refs[i]);
  }
  free(L->r);
  free(L->q);
  free(L->prompts);
  free(L->refs);
}

static int write_report(const char *path, const tp_config *cfg, level *lv) {
  tp_level_result lr[NLEVELS];
  for (int i = 0; i < NLEVELS; i++) lr[i] = lv[i].lr;
  tp_report_input in = {.cfg = cfg, .target = "127.0.0.1:8001", .levels = lr, .n_levels = NLEVELS};
  char err[256];
  int rv = tp_report_json(path, &in, err, sizeof(err));
  if (rv) fprintf(stderr, "gen_results: %s\n", err);
  return rv;
}

static void stat_json(FILE *f, const char *name, const tp_stat *st) {
  fprintf(
      f,
      "\"%s\": {\"n\": %zu, \"avg\": %.17g, \"min\": %.17g, \"max\": %.17g, \"p1\": %.17g, \"p5\": %.17g, "
      "\"p10\": %.17g, \"p25\": %.17g, \"p50\": %.17g, \"p75\": %.17g, \"p90\": %.17g, \"p95\": %.17g, "
      "\"p99\": %.17g, \"std\": %.17g}",
      name, st->n, st->avg, st->min, st->max, st->p1, st->p5, st->p10, st->p25, st->p50, st->p75, st->p90,
      st->p95, st->p99, st->std);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: gen_results OUT_DIR\n");
    return 2;
  }
  const char *out = argv[1];
  char path[1024], art[1024], err[512];
  mkdir(out, 0777);
  snprintf(art, sizeof(art), "%s/art", out);

  tp_config cfg;
  tp_config_default(&cfg);
  cfg.server.model = "llama <7b> & \"friends\"";
  cfg.server.url = "127.0.0.1:8001";
  cfg.server.streaming = true;
  cfg.load.concurrency = concs;
  cfg.load.n_concurrency = NLEVELS;
  cfg.prompts.tokenizer = "tokenizer.model";
  cfg.prompts.output_tokens_mean = 64;

  level lv[NLEVELS];
  static const size_t sizes[NLEVELS] = {20, 60, 600};
  for (int i = 0; i < NLEVELS; i++) make_level(&lv[i], concs[i], sizes[i], 1.0);

  tp_artifacts_opts o = {
      .dir = art, .cfg = &cfg, .anchor_mono_ns = MONO0, .anchor_wall_ns = WALL0, .html = true};
  tp_artifacts *a;
  if (tp_artifacts_open(&a, &o, err, sizeof(err))) {
    fprintf(stderr, "gen_results: %s\n", err);
    return 1;
  }
  tp_accuracy acc[NLEVELS];
  for (int i = 0; i < NLEVELS; i++) {
    tp_export_level el = {&lv[i].lr, lv[i].q, lv[i].n, 0, 0, NULL};
    if (tp_artifacts_add_level(a, &el, &acc[i], err, sizeof(err))) {
      fprintf(stderr, "gen_results: %s\n", err);
      return 1;
    }
  }
  tp_accuracy total;
  tp_artifacts_accuracy(a, &total);
  if (tp_artifacts_finish(a, err, sizeof(err))) {
    fprintf(stderr, "gen_results: %s\n", err);
    return 1;
  }
  tp_artifacts_free(a);

  /* Run A is this sweep; run B the same load 30 % slower. */
  char pa[1024], pb[1024], junit[1024];
  snprintf(pa, sizeof(pa), "%s/a.json", out);
  snprintf(pb, sizeof(pb), "%s/b.json", out);
  snprintf(junit, sizeof(junit), "%s/junit.xml", out);
  if (write_report(pa, &cfg, lv)) return 1;
  level slow[NLEVELS];
  for (int i = 0; i < NLEVELS; i++) make_level(&slow[i], concs[i], sizes[i], 1.3);
  if (write_report(pb, &cfg, slow)) return 1;
  snprintf(path, sizeof(path), "%s/compare.txt", out);
  FILE *ct = fopen(path, "w");
  const char *rules[] = {"ttft.p99:+10%", "output_token_throughput:-50%", "latency.avg:+100%"};
  int crv = tp_compare_run(pa, pb, rules, 3, ct, junit, err, sizeof(err));
  if (ct) fclose(ct);

  snprintf(path, sizeof(path), "%s/expect.json", out);
  FILE *f = fopen(path, "w");
  if (!f) return 1;
  fprintf(f,
          "{\"wall0\": %" PRIu64 ", \"mono0\": %" PRIu64
          ", \"model\": \"llama <7b> & \\\"friends\\\"\",\n\"levels\": [\n",
          (uint64_t)WALL0, (uint64_t)MONO0);
  for (int i = 0; i < NLEVELS; i++) {
    const tp_level_result *lr = &lv[i].lr;
    fprintf(f,
            "{\"concurrency\": %" PRIu32 ", \"requests\": %" PRIu64 ", \"succeeded\": %" PRIu64
            ", \"failed\": %" PRIu64
            ", \"duration_s\": %.17g, \"output_token_throughput\": %.17g, \"request_throughput\": %.17g, ",
            lr->concurrency, lr->requests, lr->succeeded, lr->failed, lr->duration_s,
            lr->output_token_throughput, lr->request_throughput);
    stat_json(f, "ttft_ms", &lr->ttft_ms);
    fputs(", ", f);
    stat_json(f, "itl_ms", &lr->itl_ms);
    fputs(", ", f);
    stat_json(f, "latency_ms", &lr->latency_ms);
    fputs(", ", f);
    stat_json(f, "output_tokens", &lr->output_tokens);
    fputs(", ", f);
    stat_json(f, "input_tokens", &lr->input_tokens);
    fputs(", ", f);
    stat_json(f, "output_tps_per_user", &lr->output_tps_per_user);
    fputs(", ", f);
    stat_json(f, "tpot_ms", &lr->tpot_ms);
    fputs(", ", f);
    stat_json(f, "latency_last_text_ms", &lr->latency_last_text_ms);
    fputs(", ", f);
    stat_json(f, "ttst_ms", &lr->ttst_ms);
    fputs(", ", f);
    stat_json(f, "output_tps_per_user_itl", &lr->output_tps_per_user_itl);
    fprintf(f,
            ", \"accuracy\": {\"scored\": %" PRIu64 ", \"exact\": %" PRIu64
            ", \"exact_match_rate\": %.17g, \"rouge_l_f1\": %.17g}}%s\n",
            acc[i].scored, acc[i].exact, acc[i].exact_match_rate, acc[i].rouge_l_f1,
            i + 1 < NLEVELS ? "," : "");
  }
  fprintf(f,
          "],\n\"accuracy\": {\"scored\": %" PRIu64 ", \"exact\": %" PRIu64
          ", \"exact_match_rate\": %.17g, \"rouge_l_f1\": %.17g},\n",
          total.scored, total.exact, total.exact_match_rate, total.rouge_l_f1);
  /* 4 sweep charts, a TTFT and an ITL histogram per level, 1 timeline. */
  fprintf(f, "\"svg_count\": %d, \"timeline_rects\": 500, \"timeline_measured\": %zu,\n", 4 + 2 * NLEVELS + 1,
          sizes[2]);
  fprintf(f, "\"compare_rc\": %d, \"compare_failed\": %d, \"compare_err\": \"", crv,
          crv == TP_COMPARE_FAILED);
  for (const char *p = err; crv && *p; p++) fprintf(f, *p == '"' || *p == '\\' ? "\\%c" : "%c", *p);
  fputs("\"}\n", f);
  fclose(f);
  for (int i = 0; i < NLEVELS; i++) {
    free_level(&lv[i]);
    free_level(&slow[i]);
  }
  return 0;
}
