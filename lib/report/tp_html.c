/* report.html: one self-contained page with inline SVG charts.
 *
 * The page loads nothing: no script, no link, no url() in the CSS, no
 * image; fonts are the reader's own (a generic family).  Tooltips are SVG
 * <title> elements, which need no script.  Every string that comes from
 * outside (model name, target, prompts, error messages) goes through
 * tp_html_escape. */
#include "tp_html.h"
#include "report/tp_report_fidelity.h"

#include "report/tp_report.h"
#include "report/tp_report_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include <time.h>

#include "metrics/tp_stats.h"
#include "report/tp_html_svg.h"
#include "tokperf/tokperf.h"

#define LABEL_MAX_BYTES 96

/* ------------------------------------------------------------------------ */
/* Escaping                                                                 */

int tp_html_escape(tp_buf *out, const char *s, size_t len) {
  const unsigned char *p = (const unsigned char *)s;
  int rv = 0;
  size_t i = 0;
  while (i < len && rv == 0) {
    unsigned c = p[i];
    switch (c) {
      case '&':
        rv = tp_buf_append_str(out, "&amp;");
        i++;
        continue;
      case '<':
        rv = tp_buf_append_str(out, "&lt;");
        i++;
        continue;
      case '>':
        rv = tp_buf_append_str(out, "&gt;");
        i++;
        continue;
      case '"':
        rv = tp_buf_append_str(out, "&quot;");
        i++;
        continue;
      case '\'':
        rv = tp_buf_append_str(out, "&#39;");
        i++;
        continue;
      default: break;
    }
    /* Control characters are parse errors in HTML and invalid in the SVG
     * (XML) parts; a tooltip loses nothing by showing a space. */
    if (c < 0x20 || c == 0x7f) {
      rv = tp_buf_append(out, " ", 1);
      i++;
      continue;
    }
    size_t ul = tp__utf8_len(p + i, len - i);
    if (!ul) {
      rv = tp_buf_append(out, "\xEF\xBF\xBD", 3);
      i++;
      continue;
    }
    rv = tp_buf_append(out, p + i, ul);
    i += ul;
  }
  return rv;
}

int tp__html_esc(tp_buf *out, const char *s) {
  return s ? tp_html_escape(out, s, strlen(s)) : 0;
}

/* ------------------------------------------------------------------------ */
/* Per-level digest                                                         */

static bool sent_measured(const tp_export_request *q) {
  return !q->rec->warmup && q->rec->sent_ns != 0;
}

/* A prompt excerpt cut at a character boundary, so the label stays valid
 * UTF-8 (invalid bytes are replaced when escaped). */
static char *excerpt(const char *s, size_t len) {
  if (!s || !len) return NULL;
  size_t cut = 0;
  while (cut < len) {
    size_t ul = tp__utf8_len((const unsigned char *)s + cut, len - cut);
    if (!ul) ul = 1;
    if (cut + ul > LABEL_MAX_BYTES) break;
    cut += ul;
  }
  size_t extra = cut < len ? 3 : 0;
  char *e = malloc(cut + extra + 1);
  if (!e) return NULL;
  memcpy(e, s, cut);
  if (extra) memcpy(e + cut, "...", 3);
  e[cut + extra] = '\0';
  return e;
}

void tp_html_level_fini(tp_html_level *lv) {
  free(lv->ttft_ms);
  free(lv->itl_ms);
  for (size_t i = 0; i < lv->n_timeline; i++) free(lv->timeline[i].label);
  free(lv->timeline);
  memset(lv, 0, sizeof(*lv));
}

int tp_html_level_init(tp_html_level *lv, const tp_level_result *lr, const tp_export_request *reqs, size_t n,
                       size_t timeline_max) {
  memset(lv, 0, sizeof(*lv));
  lv->lr = *lr;
  if (!timeline_max) timeline_max = 500;
  lv->ttft_ms = malloc((n ? n : 1) * sizeof(double));
  lv->itl_ms = malloc((n ? n : 1) * sizeof(double));
  if (!lv->ttft_ms || !lv->itl_ms) goto nomem;

  /* Per-request values from tp_level_compute over a one-record slice: the
   * same code, and so the same definition and the same exclusions, as the
   * level's own statistics.  A record left out of a statistic there (a
   * failed request, one with fewer than two tokens for ITL) yields n == 0
   * here and is left out too. */
  tp_level_result one;
  for (size_t i = 0; i < n; i++) {
    if (!reqs[i].rec || reqs[i].rec->warmup) continue;
    if (tp_level_compute(&one, reqs[i].rec, 1)) goto nomem;
    if (one.ttft_ms.n) lv->ttft_ms[lv->n_ttft++] = one.ttft_ms.avg;
    if (one.itl_ms.n) lv->itl_ms[lv->n_itl++] = one.itl_ms.avg;
  }

  size_t *idx;
  size_t k = tp__order_by_send(reqs, n, sent_measured, &idx);
  if (k == SIZE_MAX) goto nomem;
  lv->n_measured = k;
  size_t m = k < timeline_max ? k : timeline_max;
  lv->timeline = calloc(m ? m : 1, sizeof(*lv->timeline));
  if (!lv->timeline) {
    free(idx);
    goto nomem;
  }
  uint64_t base = k ? reqs[idx[0]].rec->sent_ns : 0;
  for (size_t j = 0; j < m; j++) {
    const tp_export_request *q = &reqs[idx[j]];
    const tp_record *r = q->rec;
    tp_html_req *t = &lv->timeline[j];
    t->seq = r->seq;
    t->send_ms = (double)(r->sent_ns - base) / 1e6;
    t->first_ms =
        r->first_token_ns >= r->sent_ns && r->first_token_ns ? (double)(r->first_token_ns - base) / 1e6 : -1;
    t->done_ms = r->done_ns >= r->sent_ns && r->done_ns ? (double)(r->done_ns - base) / 1e6 : -1;
    t->ok = tp_record_ok(r);
    if (q->prompt && q->prompt_len && !(t->label = excerpt(q->prompt, q->prompt_len))) {
      lv->n_timeline = j;
      free(idx);
      goto nomem;
    }
    lv->n_timeline = j + 1;
  }
  free(idx);
  return 0;

nomem:
  tp_html_level_fini(lv);
  lv->lr = *lr;
  return TP_ENOMEM;
}

/* ------------------------------------------------------------------------ */
/* Table and page                                                           */

int tp__html_cell_num(tp_buf *o, bool avail, double v, int decimals) {
  if (!avail || !isfinite(v)) return tp_buf_append_str(o, "<td class=\"na\">n/a</td>");
  return tp_buf_printf(o, "<td>%.*f</td>", decimals, v);
}

static int summary_table(tp_buf *o, const tp_html_input *in) {
  int rv =
      tp_buf_append_str(o,
                        "<table class=\"summary\"><thead><tr><th>Level</th><th>Requests</th><th>Failed</th>"
                        "<th>Request/s</th><th>Output tok/s</th><th>Input tok/s</th><th>TTFT avg ms</th>"
                        "<th>TTFT p50 ms</th><th>TTFT p99 ms</th><th>ITL avg ms</th><th>ITL p50 ms</th>"
                        "<th>ITL p99 ms</th><th>Latency avg ms</th><th>Latency p99 ms</th>");
  if (!rv && in->accuracy) rv = tp_buf_append_str(o, "<th>Exact match %</th><th>ROUGE-L F1</th>");
  if (!rv) rv = tp_buf_append_str(o, "</tr></thead><tbody>\n");
  for (size_t i = 0; i < in->n_levels && !rv; i++) {
    const tp_level_result *lr = &in->levels[i].lr;
    char lname[128];
    tp__level_name(lr, lname, sizeof(lname));
    rv = tp_buf_printf(o, "<tr><td class=\"lvl\">%s%s</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td>", lname,
                       lr->partial ? " (partial)" : "", lr->requests, lr->failed);
    if (!rv) rv = tp__html_cell_num(o, true, lr->request_throughput, 2);
    if (!rv) rv = tp__html_cell_num(o, lr->tokens_available, lr->output_token_throughput, 2);
    if (!rv) rv = tp__html_cell_num(o, lr->input_tokens.n > 0, lr->input_token_throughput, 2);
    if (!rv) rv = tp__html_cell_num(o, lr->ttft_ms.n, lr->ttft_ms.avg, 2);
    if (!rv) rv = tp__html_cell_num(o, lr->ttft_ms.n, lr->ttft_ms.p50, 2);
    if (!rv) rv = tp__html_cell_num(o, lr->ttft_ms.n, lr->ttft_ms.p99, 2);
    if (!rv) rv = tp__html_cell_num(o, lr->itl_ms.n, lr->itl_ms.avg, 2);
    if (!rv) rv = tp__html_cell_num(o, lr->itl_ms.n, lr->itl_ms.p50, 2);
    if (!rv) rv = tp__html_cell_num(o, lr->itl_ms.n, lr->itl_ms.p99, 2);
    if (!rv) rv = tp__html_cell_num(o, lr->latency_ms.n, lr->latency_ms.avg, 2);
    if (!rv) rv = tp__html_cell_num(o, lr->latency_ms.n, lr->latency_ms.p99, 2);
    if (!rv && in->accuracy) {
      const tp_accuracy *a = &in->accuracy[i];
      rv = tp__html_cell_num(o, a->scored, a->exact_match_rate * 100, 1);
      if (!rv) rv = tp__html_cell_num(o, a->scored, a->rouge_l_f1, 3);
    }
    if (!rv) rv = tp_buf_append_str(o, "</tr>\n");
  }
  if (!rv) rv = tp_buf_append_str(o, "</tbody></table>\n");
  for (size_t i = 0; i < in->n_levels && !rv; i++) {
    const tp_level_result *lr = &in->levels[i].lr;
    if (!lr->partial) continue;
    char lname[128];
    tp__level_name(lr, lname, sizeof(lname));
    rv = tp_buf_printf(o, "<p class=\"err\">%c%s is partial: interrupted after %.1f s",
                       toupper((unsigned char)lname[0]), lname + 1, lr->partial_ran_s);
    if (!rv && lr->partial_planned_s > 0) rv = tp_buf_printf(o, " of %.1f s", lr->partial_planned_s);
    if (!rv) rv = tp_buf_append_str(o, "; its figures cover what ran.</p>\n");
  }
  for (size_t i = 0; i < in->n_levels && !rv; i++) {
    const tp_level_result *lr = &in->levels[i].lr;
    if (!lr->first_error[0]) continue;
    char lname[128];
    tp__level_name(lr, lname, sizeof(lname));
    rv = tp_buf_printf(o, "<p class=\"err\">%c%s, sample error: ", toupper((unsigned char)lname[0]),
                       lname + 1);
    if (!rv) rv = tp__html_esc(o, lr->first_error);
    if (!rv) rv = tp_buf_append_str(o, "</p>\n");
  }
  return rv;
}

/* A distributed run (docs/scale-out.md): per level, who measured it, how
 * each rank's clock stood against rank 0's, and who failed. */
static int ranks_section(tp_buf *o, const tp_html_input *in) {
  int rv = 0;
  bool any = false;
  for (size_t i = 0; i < in->n_levels; i++) any |= in->levels[i].lr.ranks > 0;
  if (!any) return 0;
  rv =
      tp_buf_append_str(o,
                        "<section><h2>Ranks</h2>\n<p class=\"meta\">Each rank's clock offset from rank 0 was "
                        "measured before the level (shortest ping-pong round trip over MPI, the true offset "
                        "within &#177; half of it); the figures above come from the union of the reporting "
                        "ranks' records on rank 0's time line.</p>\n");
  for (size_t i = 0; i < in->n_levels && !rv; i++) {
    const tp_level_result *lr = &in->levels[i].lr;
    if (!lr->ranks) continue;
    char lname[128];
    tp__level_name(lr, lname, sizeof(lname));
    rv = tp_buf_printf(o,
                       "<h3>%c%s: %" PRIu32 " of %" PRIu32
                       " ranks reporting%s</h3>\n"
                       "<table class=\"summary\"><thead><tr><th>Rank</th><th>Host</th><th>Concurrency</th>"
                       "<th>Requests</th><th>Max in flight</th><th>Clock offset &#181;s</th>"
                       "<th>&#177; &#181;s</th><th>Status</th></tr></thead><tbody>\n",
                       toupper((unsigned char)lname[0]), lname + 1, lr->ranks_reporting, lr->ranks,
                       lr->incomplete ? " (incomplete)" : "");
    for (uint32_t k = 0; lr->rank_info && k < lr->ranks && !rv; k++) {
      const tp_rank_info *x = &lr->rank_info[k];
      rv = tp_buf_printf(o, "<tr><td>%" PRIu32 "</td><td class=\"lvl\">", x->rank);
      if (!rv) rv = tp__html_esc(o, x->host);
      if (!rv)
        rv = tp_buf_printf(o, "</td><td>%" PRIu32 "</td><td>%" PRIu64 "</td><td>%" PRIu32 "</td>",
                           x->concurrency, x->requests, x->max_in_flight);
      if (!rv)
        rv = tp_buf_printf(o, "<td>%.1f</td><td>%.1f</td>", x->clock_offset_us, x->clock_uncertainty_us);
      if (!rv) rv = tp_buf_append_str(o, x->ok ? "<td class=\"lvl\">ok" : "<td class=\"lvl err\">failed: ");
      if (!rv && !x->ok) rv = tp__html_esc(o, x->failure);
      if (!rv) rv = tp_buf_append_str(o, "</td></tr>\n");
    }
    if (!rv) rv = tp_buf_append_str(o, "</tbody></table>\n");
  }
  if (!rv) rv = tp_buf_append_str(o, "</section>\n");
  return rv;
}

static const char css[] =
    "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:1000px;"
    "color:#222;background:#fff;padding:0 16px}"
    "h1{font-size:1.6em;margin-bottom:4px}h2{font-size:1.25em;border-bottom:1px solid "
    "#ccc;padding-bottom:4px;"
    "margin-top:32px}h3{font-size:1.05em;margin:16px 0 4px}"
    ".meta{color:#555;margin:2px 0}figure{margin:12px 0}figcaption{color:#555;font-size:.9em}"
    "svg.chart{max-width:100%;height:auto;background:#fff}"
    ".grid{stroke:#e6e6e6;stroke-width:1}.axis{stroke:#444;stroke-width:1}"
    ".tick{font-size:11px;fill:#444}.label{font-size:12px;fill:#222}.nodata{font-size:13px;fill:#888}"
    ".legend text{font-size:12px;fill:#222}.pt-label{font-size:10px;fill:#333}"
    "path.series{fill:none;stroke-width:2}.s-p50{stroke:#1f77b4;fill:#1f77b4}"
    ".s-p99{stroke:#d62728;fill:#d62728}path.s-p99,.legend line.s-p99{stroke-dasharray:6 3}.legend "
    "line{stroke-width:3}"
    ".box{fill:#9ecae1;stroke:#3182bd}.whisker{stroke:#3182bd}.median{stroke:#08306b;stroke-width:2}"
    ".p99{stroke:#d62728;stroke-width:2}.bar{fill:#6baed6}"
    ".req{fill:#9ecae1}.req.failed{fill:#fd8d3c}.ft{stroke:#08306b;stroke-width:1.5}"
    ".hists{display:flex;flex-wrap:wrap;gap:12px}.hists figure{margin:4px 0}"
    "table.summary{border-collapse:collapse;font-size:.85em;margin-top:8px}"
    "table.summary th,table.summary td{border:1px solid #ccc;padding:3px 6px;text-align:right}"
    "table.summary th{background:#f2f2f2}table.summary "
    "td.lvl{text-align:left}td.na{color:#999}.err{color:#a33;font-size:.9em}"
    ".probe.pass{fill:#2ca02c}.probe.fail{fill:#d62728}"
    ".s-tps{stroke:#17becf}.s-wait{stroke:#ff7f0e}.s-run{stroke:#2ca02c}.s-kv{stroke:#9467bd}"
    ".s-gpu{stroke:#8c564b}.sat{stroke:#d62728;stroke-width:1.5;stroke-dasharray:4 3}"
    "@media print{body{margin:0;max-width:none;font-size:10pt}figure,table{break-inside:avoid}"
    "h2{break-after:avoid}}";

static int header(tp_buf *o, const tp_html_input *in) {
  const char *title = in->title ? in->title : "tokperf report";
  int rv = tp_buf_append_str(o,
                             "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                             "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                             "<title>");
  if (!rv) rv = tp__html_esc(o, title);
  if (!rv && in->cfg && in->cfg->server.model) {
    rv = tp_buf_append_str(o, ": ");
    if (!rv) rv = tp__html_esc(o, in->cfg->server.model);
  }
  if (!rv) rv = tp_buf_printf(o, "</title>\n<style>%s</style>\n</head>\n<body>\n<header><h1>", css);
  if (!rv) rv = tp__html_esc(o, title);
  if (!rv) rv = tp_buf_append_str(o, "</h1>\n");
  if (!rv && in->cfg) {
    const tp_config *c = in->cfg;
    rv = tp_buf_append_str(o, "<p class=\"meta\">Model: ");
    if (!rv) rv = tp__html_esc(o, c->server.model ? c->server.model : "n/a");
    if (!rv) rv = tp_buf_append_str(o, " · target: ");
    if (!rv) rv = tp__html_esc(o, in->mock ? "built-in mock" : c->server.url ? c->server.url : "n/a");
    if (!rv)
      rv = tp_buf_printf(o, " · backend: %s · streaming: %s · tokenizer: ", tp__report_backend_label(c),
                         c->server.streaming ? "on" : "off");
    if (!rv) rv = tp__html_esc(o, c->prompts.tokenizer ? c->prompts.tokenizer : "none");
    if (!rv && c->prompts.tokenizer && c->prompts.tokenizer_add_special_tokens)
      rv = tp_buf_append_str(o, " (input counted with special tokens)");
    if (!rv) rv = tp_buf_append_str(o, " · prompts: ");
    if (!rv) rv = tp__html_esc(o, c->prompts.input_file ? c->prompts.input_file : "synthetic");
    if (!rv) rv = tp_buf_append_str(o, "</p>\n");
  }
  if (!rv) {
    char when[64] = "";
    if (in->start_wall_ns) {
      time_t t = (time_t)(in->start_wall_ns / 1000000000ULL);
      struct tm tm;
      if (gmtime_r(&t, &tm)) strftime(when, sizeof(when), " · started %Y-%m-%d %H:%M:%S UTC", &tm);
    }
    rv = tp_buf_printf(o, "<p class=\"meta\">tokperf %s%s · %zu level%s</p>\n</header>\n", tp_version(), when,
                       in->n_levels, in->n_levels == 1 ? "" : "s");
  }
  return rv;
}

/* One timeline per level (docs/metrics.md, "Time series"). */
static int series_section(tp_buf *o, const tp_html_input *in) {
  bool any = false;
  for (size_t i = 0; i < in->n_levels; i++) any |= in->levels[i].lr.n_slices > 0;
  if (!any) return 0;
  int rv = tp_buf_append_str(
      o,
      "<section id=\"time-series\"><h2>Time series per level</h2>\n<p class=\"meta\">Per slice of the level: "
      "TTFT of the requests whose first token came in it, output tokens that arrived in it "
      "(placed evenly over each request's first to last text); below, the server's figures "
      "as scraped from --metrics-url, on the same clock.</p>\n");
  for (size_t i = 0; i < in->n_levels && !rv; i++) {
    const tp_level_result *lr = &in->levels[i].lr;
    if (!lr->n_slices) continue;
    char lname[128];
    tp__level_name(lr, lname, sizeof(lname));
    rv = tp_buf_printf(o, "<h3>%c%s, %.3g s slices</h3>\n<figure>", toupper((unsigned char)lname[0]),
                       lname + 1, lr->slice_s);
    if (!rv) rv = tp__html_chart_series(o, &in->levels[i], i);
    if (!rv) rv = tp_buf_append_str(o, "</figure>\n");
  }
  if (!rv) rv = tp_buf_append_str(o, "</section>\n");
  return rv;
}

int tp_html_render(tp_buf *o, const tp_html_input *in) {
  int rv = header(o, in);
  if (!rv)
    rv = tp_buf_append_str(
        o,
        "<section><h2>Throughput and latency across the sweep</h2>\n"
        "<p class=\"meta\">Each point is one level, labelled with its concurrency (or rate). "
        "Up and to the right: more throughput at a higher latency.</p>\n<figure>");
  if (!rv) rv = tp__html_chart_tput(o, in, false);
  if (!rv) rv = tp_buf_append_str(o, "</figure>\n<figure>");
  if (!rv) rv = tp__html_chart_tput(o, in, true);
  if (!rv) rv = tp_buf_append_str(o, "</figure>\n</section>\n");
  /* The timelines next: what happened during each level, beside the
   * server's own state, before the distributions over it. */
  if (!rv) rv = series_section(o, in);
  if (!rv)
    rv = tp_buf_append_str(o,
                           "<section><h2>Distributions per level</h2>\n"
                           "<figure>");
  if (!rv) rv = tp__html_chart_box(o, in, false);
  if (!rv)
    rv = tp_buf_append_str(o, "<figcaption>Time to first token per level.</figcaption></figure>\n<figure>");
  if (!rv) rv = tp__html_chart_box(o, in, true);
  if (!rv) rv = tp_buf_append_str(o, "<figcaption>Inter-token latency per level.</figcaption></figure>\n");
  for (size_t i = 0; i < in->n_levels && !rv; i++) {
    const tp_html_level *lv = &in->levels[i];
    char lname[128];
    tp__level_name(&lv->lr, lname, sizeof(lname));
    rv =
        tp_buf_printf(o, "<h3>%c%s</h3>\n<div class=\"hists\">", toupper((unsigned char)lname[0]), lname + 1);
    for (int itl = 0; itl < 2 && !rv; itl++) {
      size_t n = itl ? lv->n_itl : lv->n_ttft;
      if (!n || !tp__html_pick_stat(&lv->lr, itl)->n) {
        rv = tp_buf_printf(o, "<p class=\"meta\">No %s values at this level.</p>", itl ? "ITL" : "TTFT");
        continue;
      }
      rv = tp_buf_append_str(o, "<figure>");
      if (!rv) rv = tp__html_chart_hist(o, lv, i, itl);
      if (!rv) rv = tp_buf_append_str(o, "</figure>");
    }
    if (!rv) rv = tp_buf_append_str(o, "</div>\n");
  }
  if (!rv) rv = tp_buf_append_str(o, "</section>\n");
  if (!rv && in->n_levels) {
    size_t tl = in->timeline_level < in->n_levels ? in->timeline_level : in->n_levels - 1;
    const tp_html_level *lv = &in->levels[tl];
    char lname[128];
    tp__level_name(&lv->lr, lname, sizeof(lname));
    rv = tp_buf_printf(o, "<section><h2>Request timeline, %s</h2>\n", lname);
    if (!rv && lv->n_timeline < lv->n_measured)
      rv = tp_buf_printf(o, "<p class=\"meta\">The first %zu of %zu requests, in send order.</p>\n",
                         lv->n_timeline, lv->n_measured);
    if (!rv) rv = tp_buf_append_str(o, "<figure>");
    if (!rv) rv = tp__html_chart_timeline(o, lv);
    if (!rv)
      rv = tp_buf_append_str(o,
                             "<figcaption>Bar: send to final response (orange: failed). Dark mark: first "
                             "token.</figcaption></figure>\n</section>\n");
  }
  if (!rv && in->search) rv = tp__html_chart_search(o, in->search);
  for (size_t i = 0; i < in->n_levels && !rv; i++)
    if (in->levels[i].lr.n_turns) rv = tp__html_chart_turns(o, &in->levels[i]);
  if (!rv) rv = tp_buf_append_str(o, "<section><h2>Summary</h2>\n");
  if (!rv) rv = summary_table(o, in);
  if (!rv) rv = tp_buf_append_str(o, "</section>\n");
  if (!rv) rv = ranks_section(o, in);
  /* Last: the client's own figures. */
  if (!rv) rv = tp__html_fidelity(o, in);
  if (!rv) rv = tp_buf_append_str(o, "</body>\n</html>\n");
  return rv;
}

int tp_html_write(const char *path, const tp_html_input *in, char *err, size_t errlen) {
  tp_buf b;
  tp_buf_init(&b);
  int rv = tp_html_render(&b, in);
  if (rv) {
    tp_buf_fini(&b);
    tp_seterr(err, errlen, "cannot write %s: out of memory", path);
    return rv;
  }
  if (tp__write_atomic(path, b.data, b.len)) {
    tp__write_err(err, errlen, path, errno, "check that the directory exists and is writable");
    rv = TP_EIO;
  }
  tp_buf_fini(&b);
  return rv;
}

/* ------------------------------------------------------------------------ */
/* Comparison of runs (tokperf compare --html)                              */

static const char *const run_colours[] = {"#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2"};

static int chart_compare_metric(tp_buf *o, const tp_html_cmp *in, const tp_html_cmp_metric *m) {
  double ymax = 0;
  size_t nv = in->n_levels * in->n_runs;
  for (size_t i = 0; i < nv; i++)
    if (isfinite(m->values[i])) ymax = fmax(ymax, m->values[i]);
  double ys;
  frame f;
  tp__html_init_frame(&f, CW, CH, 0, (double)in->n_levels, 0, tp__html_nice_top(ymax > 0 ? ymax : 1, &ys));
  int rv = tp_buf_append_str(o, "<section><h2>");
  if (!rv) rv = tp__html_esc(o, m->name);
  if (!rv)
    rv = tp_buf_printf(o, " (%s)</h2>\n<p class=\"meta\">%s</p>\n<div class=\"hists\"><figure>", m->unit,
                       m->better < 0   ? "Lower is better."
                       : m->better > 0 ? "Higher is better."
                                       : "");
  if (!rv) rv = tp__html_svg_open(o, "compare", CW, CH, m->name);
  if (!rv) rv = tp__html_axes(o, &f, 1e300, ys, false, true, "level", m->unit);
  double slot = (f.px1 - f.px0) / (double)(in->n_levels ? in->n_levels : 1);
  double bw = slot * 0.8 / (double)(in->n_runs ? in->n_runs : 1);
  for (size_t l = 0; l < in->n_levels && !rv; l++) {
    for (size_t r = 0; r < in->n_runs && !rv; r++) {
      double v = m->values[l * in->n_runs + r];
      if (!isfinite(v)) continue;
      double x = f.px0 + slot * (double)l + slot * 0.1 + bw * (double)r;
      double y = tp__html_fy(&f, v);
      rv =
          tp_buf_printf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>",
                        x, y, bw, f.py0 - y, run_colours[r % (sizeof(run_colours) / sizeof(run_colours[0]))]);
      if (!rv) rv = tp__html_esc(o, in->runs[r]);
      if (!rv) rv = tp_buf_append_str(o, ", ");
      if (!rv) rv = tp__html_esc(o, in->levels[l]);
      if (!rv) rv = tp_buf_printf(o, ": %.4g %s</title></rect>", v, m->unit);
    }
    if (!rv) {
      rv = tp_buf_printf(o, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
                         f.px0 + slot * ((double)l + 0.5), f.py0 + 16);
      if (!rv) rv = tp__html_esc(o, in->levels[l]);
      if (!rv) rv = tp_buf_append_str(o, "</text>");
    }
  }
  if (!rv) rv = tp_buf_append_str(o, "</svg><figcaption>");
  for (size_t r = 0; r < in->n_runs && !rv; r++) {
    rv = tp_buf_printf(o, "%s<span style=\"color:%s\">&#9632;</span> ", r ? " · " : "",
                       run_colours[r % (sizeof(run_colours) / sizeof(run_colours[0]))]);
    if (!rv) rv = tp__html_esc(o, in->runs[r]);
  }
  if (!rv) rv = tp_buf_append_str(o, "</figcaption></figure>\n<table class=\"summary\"><tr><th>Level</th>");
  for (size_t r = 0; r < in->n_runs && !rv; r++) {
    rv = tp_buf_append_str(o, "<th>");
    if (!rv) rv = tp__html_esc(o, in->runs[r]);
    if (!rv) rv = tp_buf_append_str(o, "</th>");
  }
  if (!rv && in->n_runs >= 2) rv = tp_buf_append_str(o, "<th>Last vs first</th>");
  if (!rv) rv = tp_buf_append_str(o, "</tr>\n");
  for (size_t l = 0; l < in->n_levels && !rv; l++) {
    rv = tp_buf_append_str(o, "<tr><td>");
    if (!rv) rv = tp__html_esc(o, in->levels[l]);
    if (!rv) rv = tp_buf_append_str(o, "</td>");
    for (size_t r = 0; r < in->n_runs && !rv; r++) {
      double v = m->values[l * in->n_runs + r];
      rv = tp__html_cell_num(o, isfinite(v), v, 2);
    }
    if (!rv && in->n_runs >= 2) {
      double a = m->values[l * in->n_runs], b = m->values[l * in->n_runs + in->n_runs - 1];
      if (isfinite(a) && isfinite(b) && a != 0)
        rv = tp_buf_printf(o, "<td>%+.1f%%</td>", (b - a) / fabs(a) * 100);
      else
        rv = tp_buf_append_str(o, "<td class=\"na\">n/a</td>");
    }
    if (!rv) rv = tp_buf_append_str(o, "</tr>\n");
  }
  if (!rv) rv = tp_buf_append_str(o, "</table></div>\n</section>\n");
  return rv;
}

int tp_html_compare_render(tp_buf *o, const tp_html_cmp *in) {
  int rv =
      tp_buf_printf(o,
                    "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                    "<title>tokperf compare</title>\n<style>%s</style>\n</head>\n<body>\n<header><h1>tokperf "
                    "compare</h1>\n<p class=\"meta\">",
                    css);
  for (size_t r = 0; r < in->n_runs && !rv; r++) {
    rv = tp_buf_printf(o, "%sRun %zu: ", r ? " · " : "", r + 1);
    if (!rv) rv = tp__html_esc(o, in->runs[r]);
  }
  if (!rv)
    rv = tp_buf_printf(o, "</p>\n<p class=\"meta\">tokperf %s · %zu level%s in common</p>\n</header>\n",
                       tp_version(), in->n_levels, in->n_levels == 1 ? "" : "s");
  for (size_t i = 0; i < in->n_metrics && !rv; i++) rv = chart_compare_metric(o, in, &in->metrics[i]);
  if (!rv) rv = tp_buf_append_str(o, "</body>\n</html>\n");
  return rv;
}
