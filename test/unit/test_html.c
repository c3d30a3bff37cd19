/* Unit tests for lib/report/tp_html.c: the structure of report.html
 * (charts found by their data-chart attribute, element counts per chart),
 * self-containment (nothing that loads from the network), escaping of
 * text that comes from prompts, model names and servers, and the digest's
 * per-request values against the level's own statistics. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "metrics/tp_stats.h"
#include "report/tp_html.h"
#include "tp_test.h"
#include "tp_test_config.h"
#include "tokperf/tokperf.h"

#define MONO0 1000000000ULL

static size_t count(const char *hay, const char *needle) {
  size_t n = 0, l = strlen(needle);
  for (const char *p = strstr(hay, needle); p; p = strstr(p + l, needle)) n++;
  return n;
}

/* The text of one chart: from its data-chart attribute to its </svg>.
 * Returns owned text or NULL. */
static char *chart(const char *html, const char *name) {
  char attr[96];
  snprintf(attr, sizeof(attr), "data-chart=\"%s\"", name);
  const char *s = strstr(html, attr);
  if (!s) return NULL;
  const char *e = strstr(s, "</svg>");
  if (!e) return NULL;
  size_t n = (size_t)(e - s);
  char *c = malloc(n + 1);
  memcpy(c, s, n);
  c[n] = '\0';
  return c;
}

static size_t chart_count(const char *html, const char *name, const char *needle) {
  char *c = chart(html, name);
  size_t n = c ? count(c, needle) : (size_t)-1;
  free(c);
  return n;
}

/* A level: n requests, every third with two text responses only (so ITL
 * holds for the others), request i sent at 2 ms x i. */
typedef struct lvl {
  tp_record *r;
  tp_export_request *q;
  size_t n;
  tp_level_result lr;
} lvl;

static const char *prompt_evil = "<script>alert('x')</script> & \"quotes\" \x01\x02 bad\xff byte";

static void lvl_init(lvl *L, uint32_t conc, size_t n, bool tokens, double slow) {
  L->n = n;
  L->r = calloc(n, sizeof(*L->r));
  L->q = calloc(n, sizeof(*L->q));
  for (size_t i = 0; i < n; i++) {
    tp_record *r = &L->r[i];
    tp_record_init(r);
    r->seq = i;
    r->sent_ns = r->planned_ns = MONO0 + i * 2000000;
    uint64_t ttft = (uint64_t)((10 + (double)(i % 7)) * slow * 1e6);
    int nresp = 4;
    for (int k = 0; k < nresp; k++)
      tp_record_add_response(r, r->sent_ns + ttft + (uint64_t)k * 3000000, true);
    r->done_ns = r->resp_ns[nresp - 1];
    tp_buf_append_str(&r->text, "a b c d e f g h");
    r->output_tokens = tokens ? 8 : -1;
    r->input_tokens = tokens ? 5 : -1;
    L->q[i].rec = r;
    L->q[i].prompt = i == 1 ? prompt_evil : "What is the capital of France?";
    L->q[i].prompt_len = strlen(L->q[i].prompt);
  }
  if (n > 3) tp_record_fail(&L->r[3], TP_ERRCLASS_SERVER, -1, "<b>oops</b>", 11);
  tp_level_compute(&L->lr, L->r, n);
  L->lr.concurrency = conc;
}

static void lvl_fini(lvl *L) {
  for (size_t i = 0; i < L->n; i++) tp_record_fini(&L->r[i]);
  free(L->r);
  free(L->q);
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void test_digest(void) {
  lvl L;
  lvl_init(&L, 4, 40, true, 1.0);
  L.r[0].warmup = true;
  tp_level_compute(&L.lr, L.r, L.n);
  tp_html_level d;
  CHECK_INT(tp_html_level_init(&d, &L.lr, L.q, L.n, 10), 0, "digest builds");
  CHECK_INT(d.n_ttft, L.lr.ttft_ms.n, "per-request TTFT values: as many as the level's statistic counts");
  CHECK_INT(d.n_itl, L.lr.itl_ms.n, "per-request ITL values: as many as the level's statistic counts");
  qsort(d.ttft_ms, d.n_ttft, sizeof(double), cmp_d);
  double sum = 0;
  for (size_t i = 0; i < d.n_ttft; i++) sum += d.ttft_ms[i];
  CHECK_NEAR(d.ttft_ms[0], L.lr.ttft_ms.min, 1e-9, "the values' min is the level's min");
  CHECK_NEAR(d.ttft_ms[d.n_ttft - 1], L.lr.ttft_ms.max, 1e-9, "the values' max is the level's max");
  CHECK_NEAR(sum / (double)d.n_ttft, L.lr.ttft_ms.avg, 1e-9, "the values' mean is the level's avg");
  CHECK_INT(d.n_timeline, 10, "timeline capped");
  CHECK_INT(d.n_measured, 39, "timeline knows how many it was taken from (warm-up out)");
  CHECK(d.timeline[0].seq == 1 && d.timeline[0].send_ms == 0, "timeline starts at the first measured send");
  CHECK_NEAR(d.timeline[1].send_ms, 2.0, 1e-9, "send times in ms from the first send");
  CHECK_NEAR(d.timeline[1].first_ms - d.timeline[1].send_ms, 12.0, 1e-9, "first token mark at the TTFT");
  CHECK(!d.timeline[2].ok && d.timeline[2].seq == 3, "the failed request is on the timeline, marked failed");
  /* The label of the evil prompt keeps its bytes; escaping happens when
   * rendering. */
  CHECK(d.timeline[0].label && !strncmp(d.timeline[0].label, "<script>", 8),
        "label holds the prompt excerpt");
  tp_html_level_fini(&d);

  /* Excerpts stop at a character boundary: 95 ASCII bytes then a 2-byte
   * character would cross the 96-byte limit. */
  char p[200];
  memset(p, 'a', 95);
  memcpy(p + 95, "\xc3\xa9tail", 6);
  L.q[2].prompt = p;
  L.q[2].prompt_len = 101;
  tp_html_level_init(&d, &L.lr, L.q, L.n, 10);
  CHECK(d.timeline[1].label && strlen(d.timeline[1].label) == 98 && !strcmp(d.timeline[1].label + 95, "..."),
        "excerpt cut before a character that would cross the limit, then '...'");
  tp_html_level_fini(&d);
  lvl_fini(&L);
}

static void test_page(void) {
  lvl L[3];
  lvl_init(&L[0], 1, 12, true, 1.0);
  lvl_init(&L[1], 8, 30, true, 1.5);
  lvl_init(&L[2], 32, 60, false, 3.0); /* no tokenizer: no ITL */
  tp_html_level d[3];
  for (int i = 0; i < 3; i++) tp_html_level_init(&d[i], &L[i].lr, L[i].q, L[i].n, 25);
  tp_config cfg;
  tp_test_config_default(&cfg);
  cfg.server.model = "<b>\"M&M's\"</b>";
  cfg.server.url = "gpu-box:8001";
  tp_html_input in = {
      .cfg = &cfg, .levels = d, .n_levels = 3, .timeline_level = 1, .start_wall_ns = 1700000000000000000ULL};
  tp_buf b;
  tp_buf_init(&b);
  CHECK_INT(tp_html_render(&b, &in), 0, "page renders");
  const char *h = (const char *)b.data;

  CHECK(!strncmp(h, "<!DOCTYPE html>\n<html lang=\"en\">", 31), "HTML5 document");
  CHECK(b.len > 7 && !strcmp(h + b.len - 8, "</html>\n"), "ends with </html>");
  CHECK(count(h, "<meta charset=\"utf-8\">") == 1, "declares UTF-8");
  CHECK(count(h, "<style>") == 1, "one inline style sheet");
  /* 4 sweep charts + 1 timeline + histograms: TTFT for 3 levels, ITL for
   * the 2 with a tokenizer. */
  CHECK_INT(count(h, "<svg "), 4 + 1 + 3 + 2, "one <svg> per chart");
  CHECK_INT(count(h, "</svg>"), count(h, "<svg "), "every <svg> closed");
  CHECK_INT(count(h, "<figure>"), count(h, "</figure>"), "every <figure> closed");
  CHECK_INT(count(h, "<section>"), count(h, "</section>"), "every <section> closed");
  CHECK_INT(count(h, "<h2>Ranks</h2>"), 0, "a single-process run has no Ranks section");

  /* Throughput charts: x is request throughput, since one level has no
   * token counts. */
  CHECK_INT(chart_count(h, "tput-ttft", "<path class=\"series"), 2,
            "tput-ttft: one curve per percentile (p50, p99)");
  CHECK_INT(chart_count(h, "tput-ttft", "<circle class=\"pt"), 6,
            "tput-ttft: a point per level and percentile");
  CHECK_INT(chart_count(h, "tput-ttft", "<text class=\"pt-label\""), 6, "tput-ttft: every point labelled");
  CHECK_INT(chart_count(h, "tput-ttft", ">32</text>"), 2, "point labels are the concurrency");
  CHECK(chart_count(h, "tput-ttft", "request throughput (requests/s)") == 1,
        "without token counts everywhere, x is request throughput, and says so");
  CHECK_INT(chart_count(h, "tput-itl", "<circle class=\"pt"), 4, "tput-itl: points only for levels with ITL");
  CHECK_INT(chart_count(h, "box-ttft", "<rect class=\"box\""), 3, "box-ttft: one box per level");
  CHECK_INT(chart_count(h, "box-itl", "<rect class=\"box\""), 2, "box-itl: boxes for levels with ITL");
  CHECK_INT(chart_count(h, "box-itl", ">32</text>"), 1, "box-itl still labels the level without values");
  CHECK(chart(h, "hist-itl-2") == NULL, "no ITL histogram where there are no values");
  CHECK(strstr(h, "No ITL values at this level.") != NULL, "a note says so instead");

  /* Histogram bars add up to the level's values. */
  char *hc = chart(h, "hist-ttft-1");
  size_t bars = hc ? count(hc, "<rect class=\"bar\"") : 0, total = 0;
  for (const char *p = hc ? strstr(hc, "ms: ") : NULL; p; p = strstr(p + 4, "ms: "))
    total += strtoul(p + 4, NULL, 10);
  CHECK(bars >= 1 && bars <= 20, "hist-ttft-1: between 1 and 20 bars (%zu)", bars);
  CHECK_INT(total, L[1].lr.ttft_ms.n, "hist-ttft-1: bar counts add up to the level's TTFT values");
  free(hc);

  /* Timeline: level index 1 (concurrency 8), 25 of 30 requests. */
  CHECK_INT(chart_count(h, "timeline", "<rect class=\"req"), 25, "timeline: one bar per request, capped");
  CHECK_INT(chart_count(h, "timeline", "<rect class=\"req failed\""), 1,
            "timeline: the failed request marked");
  /* The failed request got its first token before failing: it is marked. */
  CHECK_INT(chart_count(h, "timeline", "<line class=\"ft\""), 25,
            "timeline: a first-token mark per request that had one");
  CHECK(strstr(h, "The first 25 of 30 requests") != NULL, "the cap is stated");
  CHECK(strstr(h, "Request timeline, concurrency 8") != NULL, "timeline of the chosen level");

  /* Summary table. */
  CHECK_INT(count(h, "<tr><td class=\"lvl\">concurrency "), 3, "summary: a row per level, named");
  CHECK_INT(count(h, "<td class=\"na\">n/a</td>"), 5,
            "unavailable figures read n/a (level 32: output tok/s, input tok/s, 3 ITL)");

  /* Last, the client's own figures: a row per level, what the records
   * give (send lag, merged share), the rest n/a outside a run. */
  const char *fs = strstr(h, "<h2>Fidelity: the client's own figures</h2>");
  CHECK(fs && fs > strstr(h, "<h2>Summary</h2>"), "the fidelity section comes last");
  CHECK_INT(count(h, "<tr class=\"fid\"><td class=\"lvl\">concurrency "), 3, "fidelity: a row per level");
  CHECK_INT(count(h, "<td class=\"na fid\">n/a</td>"), 3 * 4,
            "fidelity: loop lag, CPU and reads are n/a when no run measured them");
  CHECK_INT(count(h, "<td class=\"lvl\">ok</td></tr>"), 3, "fidelity: each level's verdict");

  /* Self-contained: after removing the SVG namespace, no http at all, and
   * nothing that loads anything. */
  tp_buf s;
  tp_buf_init(&s);
  const char *ns = "xmlns=\"http://www.w3.org/2000/svg\"";
  for (const char *p = h;;) {
    const char *q = strstr(p, ns);
    if (!q) {
      tp_buf_append_str(&s, p);
      break;
    }
    tp_buf_append(&s, p, (size_t)(q - p));
    p = q + strlen(ns);
  }
  CHECK(strstr((const char *)s.data, "http") == NULL && strstr((const char *)s.data, "HTTP") == NULL,
        "no \"http\" outside the SVG namespace");
  CHECK(!strstr(h, "<script") && !strstr(h, "<link") && !strstr(h, "<img") && !strstr(h, "<iframe"),
        "no script, link, img or iframe element");
  CHECK(!strstr(h, " src=") && !strstr(h, " href=") && !strstr(h, "url(") && !strstr(h, "@import"),
        "no src, href, url() or @import");
  tp_buf_fini(&s);

  /* Escaping. */
  CHECK(strstr(h, "&lt;b&gt;&quot;M&amp;M&#39;s&quot;&lt;/b&gt;") != NULL, "model name escaped");
  CHECK(strstr(h, "<b>\"M&M") == NULL, "the raw model name appears nowhere");
  CHECK(strstr(h,
               "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;quotes&quot;    bad\xef\xbf\xbd "
               "byte") != NULL,
        "prompt escaped, control characters as spaces, bad byte as U+FFFD");
  CHECK(strstr(h, "server_error: &lt;b&gt;oops&lt;/b&gt;") != NULL, "a server's error message escaped");
  CHECK(strstr(h, "2023-11-14 22:13:20 UTC") != NULL, "start time in UTC");
  CHECK(strstr(h, "<h3>Concurrency 8</h3>") != NULL, "a heading per level");

  /* A rate level is labelled with its rate wherever a level is named. */
  d[1].lr.load_mode = TP_LOAD_RATE;
  d[1].lr.request_rate = 12.5;
  d[1].lr.output_tokens_mean = 128;
  tp_buf_reset(&b);
  tp_html_render(&b, &in);
  h = (const char *)b.data;
  CHECK_INT(chart_count(h, "tput-ttft", ">12.5/s out128</text>"), 2,
            "rate level: point labels carry the rate");
  CHECK_INT(chart_count(h, "box-ttft", ">12.5/s out128</text>"), 1, "rate level: box label carries the rate");
  CHECK(chart_count(h, "box-ttft", ">level</text>") == 1, "mixed levels: the box axis says level");
  CHECK(strstr(h, "<h3>Request rate 12.5/s, output 128 tokens</h3>") != NULL, "rate level heading");
  CHECK(strstr(h, "Request timeline, request rate 12.5/s, output 128 tokens") != NULL, "rate level timeline");
  hc = chart(h, "hist-ttft-1");
  CHECK(hc != NULL, "histograms are named by the level's index");
  free(hc);
  d[1].lr.load_mode = TP_LOAD_CONCURRENCY;
  d[1].lr.output_tokens_mean = 0;
  tp_buf_fini(&b);

  /* Timeline defaults to the last level; no levels gives a page without
   * charts of levels but still valid. */
  in.timeline_level = SIZE_MAX;
  tp_buf_init(&b);
  tp_html_render(&b, &in);
  CHECK(strstr((const char *)b.data, "Request timeline, concurrency 32") != NULL,
        "timeline defaults to the last level");
  tp_buf_fini(&b);
  in.n_levels = 0;
  tp_buf_init(&b);
  CHECK_INT(tp_html_render(&b, &in), 0, "an empty sweep renders");
  CHECK_INT(count((const char *)b.data, "<svg "), 4, "an empty sweep: the four sweep charts, no timeline");
  CHECK(strstr((const char *)b.data, "no TTFT values") != NULL, "with a no-data note");
  tp_buf_fini(&b);

  /* Written atomically to a file. */
  char path[] = "/tmp/tp_html_XXXXXX";
  int fd = mkstemp(path);
  if (fd >= 0) close(fd);
  in.n_levels = 3;
  char err[256];
  CHECK_INT(tp_html_write(path, &in, err, sizeof(err)), 0, "written to a file");
  FILE *f = fopen(path, "rb");
  char head[16] = "";
  if (f) {
    if (!fread(head, 1, 15, f)) head[0] = '\0';
    fclose(f);
  }
  CHECK(!strncmp(head, "<!DOCTYPE html>", 15), "the file holds the page");
  unlink(path);
  CHECK_INT(tp_html_write("/nonexistent-dir/x/report.html", &in, err, sizeof(err)), TP_EIO,
            "unwritable path: TP_EIO");
  CHECK(strstr(err, "cannot write /nonexistent-dir/x/report.html") != NULL, "naming the path (%s)", err);

  for (int i = 0; i < 3; i++) {
    tp_html_level_fini(&d[i]);
    lvl_fini(&L[i]);
  }
}

/* A distributed run's level: a Ranks section with one row per rank, the
 * failed one named with its reason, escaped; a single-process page has no
 * such section (checked in test_page's document, which has no ranks). */
static void test_ranks(void) {
  lvl L;
  lvl_init(&L, 8, 30, true, 1.0);
  tp_rank_info ri[2];
  memset(ri, 0, sizeof(ri));
  ri[0].rank = 0;
  snprintf(ri[0].host, sizeof(ri[0].host), "node-a");
  ri[0].concurrency = 4;
  ri[0].requests = 15;
  ri[0].max_in_flight = 4;
  ri[0].ok = true;
  ri[1].rank = 1;
  snprintf(ri[1].host, sizeof(ri[1].host), "node<b>");
  ri[1].concurrency = 4;
  ri[1].clock_offset_us = -12.5;
  ri[1].clock_uncertainty_us = 3.25;
  snprintf(ri[1].failure, sizeof(ri[1].failure), "could not start: connection refused & gone");
  L.lr.ranks = 2;
  L.lr.ranks_reporting = 1;
  L.lr.incomplete = true;
  L.lr.rank_info = ri;
  tp_html_level d;
  tp_html_level_init(&d, &L.lr, L.q, L.n, 25);
  tp_config cfg;
  tp_test_config_default(&cfg);
  tp_html_input in = {.cfg = &cfg, .levels = &d, .n_levels = 1, .start_wall_ns = 1700000000000000000ULL};
  tp_buf b;
  tp_buf_init(&b);
  CHECK_INT(tp_html_render(&b, &in), 0, "ranks: page renders");
  const char *h = (const char *)b.data;
  CHECK_INT(count(h, "<h2>Ranks</h2>"), 1, "ranks: one Ranks section");
  CHECK(strstr(h, "1 of 2 ranks reporting (incomplete)") != NULL, "ranks: the level says who reported");
  CHECK(strstr(h, "<td class=\"lvl\">node-a</td>") != NULL, "ranks: rank 0's host");
  CHECK(strstr(h, "node&lt;b&gt;") != NULL && !strstr(h, "node<b>"), "ranks: host names are escaped");
  CHECK(strstr(h, "<td>-12.5</td><td>3.2</td>") != NULL || strstr(h, "<td>-12.5</td><td>3.3</td>") != NULL,
        "ranks: the clock offset and its uncertainty");
  CHECK(strstr(h, "failed: could not start: connection refused &amp; gone") != NULL,
        "ranks: the failed rank and why, escaped");
  CHECK_INT(count(h, "<section>"), count(h, "</section>"), "ranks: every <section> closed");
  tp_buf_fini(&b);
  tp_html_level_fini(&d);
  lvl_fini(&L);
}

/* Path commands of one series in a chart: the number of "M" (pieces) and
 * "L" (segments) in the d attribute of its path. */
static void path_of(const char *c, const char *series, size_t *m, size_t *l) {
  char attr[96];
  snprintf(attr, sizeof(attr), "data-series=\"%s\" d=\"", series);
  *m = *l = 0;
  const char *p = strstr(c, attr);
  if (!p) return;
  for (p += strlen(attr); *p && *p != '"'; p++) {
    *m += *p == 'M';
    *l += *p == 'L';
  }
}

/* The time-series timeline (docs/metrics.md, "Time series"): the client's
 * panels from the slices, a slice without a first token breaking the TTFT
 * line, the server's series by their names, and notes for what was not
 * scraped. */
static void test_series(void) {
  lvl L[2];
  lvl_init(&L[0], 4, 12, true, 1.0);
  lvl_init(&L[1], 8, 12, true, 1.0);
  tp_slice sl[4];
  memset(sl, 0, sizeof(sl));
  for (int i = 0; i < 4; i++) {
    sl[i].start_s = i;
    sl[i].end_s = i + 1;
    sl[i].output_tokens = 100 * (i + 1);
    sl[i].send_lag_p99_ms = 0.1;
    if (i == 2) continue; /* no first token in slice 2 */
    sl[i].ttft_ms.n = 3;
    sl[i].ttft_ms.p50 = 10 * (i + 1);
    sl[i].ttft_ms.p99 = 20 * (i + 1);
  }
  static const double t[] = {0.1, 1.1, 2.1, 3.1, 3.9}, q[] = {0, 3, 7, 4, 0},
                      kv[] = {0.1, 0.4, 0.8, 0.5, 0.1};
  tp_server_series ss[2] = {{"vllm_requests_waiting", "requests", 5, t, q},
                            {"vllm_kv_cache_usage", "fraction", 5, t, kv}};
  for (int i = 0; i < 2; i++) {
    L[i].lr.slice_s = 1;
    L[i].lr.slices = sl;
    L[i].lr.n_slices = 4;
  }
  L[0].lr.server_series = ss;
  L[0].lr.n_server_series = 2;
  L[0].lr.saturation.detected = 1;
  L[0].lr.saturation.at_s = 2.5;
  tp_html_level d[2];
  for (int i = 0; i < 2; i++) tp_html_level_init(&d[i], &L[i].lr, L[i].q, L[i].n, 25);
  tp_config cfg;
  tp_test_config_default(&cfg);
  tp_html_input in = {.cfg = &cfg, .levels = d, .n_levels = 2, .start_wall_ns = 1700000000000000000ULL};
  tp_buf b;
  tp_buf_init(&b);
  CHECK_INT(tp_html_render(&b, &in), 0, "series: page renders");
  const char *h = (const char *)b.data;
  CHECK_INT(count(h, "<h2>Time series per level</h2>"), 1, "series: one section");
  CHECK_INT(count(h, "<section"), count(h, "</section>"), "series: every <section> closed");
  char *c = chart(h, "series-0");
  CHECK(c != NULL, "series: level 1's timeline");
  if (c) {
    CHECK_INT(count(c, "class=\"axis\""), 8, "series: four panels (two axes each), no GPU panel");
    size_t m, l;
    path_of(c, "TTFT p50", &m, &l);
    CHECK(m == 2 && l == 1, "series: the slice without a first token breaks the TTFT line (M %zu, L %zu)", m,
          l);
    path_of(c, "output tokens/s", &m, &l);
    CHECK(m == 1 && l == 3, "series: throughput over the 4 slices (M %zu, L %zu)", m, l);
    path_of(c, "vllm_requests_waiting", &m, &l);
    CHECK(m == 1 && l == 4, "series: the queue's 5 samples (M %zu, L %zu)", m, l);
    path_of(c, "vllm_kv_cache_usage", &m, &l);
    CHECK(m == 1 && l == 4, "series: the KV usage's 5 samples");
    CHECK(!strstr(c, "no queue figure scraped"), "series: no note where the queue was scraped");
    CHECK(count(c, "class=\"sat\"") == 1 && strstr(c, "over-saturated (2.5 s)"),
          "series: the moment of over-saturation is marked");
  }
  free(c);
  c = chart(h, "series-1");
  CHECK(c && strstr(c, "no queue figure scraped (--metrics-url)") && strstr(c, "no KV-cache figure scraped"),
        "series: a level without scrapes says so in the server's panels");
  CHECK(c && !strstr(c, "class=\"sat\""), "series: no mark on a level not over-saturated");
  free(c);
  tp_buf_fini(&b);
  for (int i = 0; i < 2; i++) {
    tp_html_level_fini(&d[i]);
    lvl_fini(&L[i]);
  }
}

static void test_escape(void) {
  tp_buf b;
  tp_buf_init(&b);
  tp_html_escape(&b, "a<b>&\"'\n\x7f\xc3\xa9\xe2\x82", 13);
  CHECK_STR((const char *)b.data, "a&lt;b&gt;&amp;&quot;&#39;  \xc3\xa9\xef\xbf\xbd\xef\xbf\xbd",
            "escape: markup characters, control characters, a truncated sequence");
  tp_buf_reset(&b);
  tp_html_escape(&b, "\xed\xa0\x80 \xc0\xaf", 6);
  CHECK_STR((const char *)b.data, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd",
            "escape: surrogates and overlong forms are not UTF-8");
  tp_buf_fini(&b);
}

int main(void) {
  test_digest();
  test_page();
  test_ranks();
  test_series();
  test_escape();
  return tp_test_done();
}
