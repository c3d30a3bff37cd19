/* The client's live figures (lib/metrics/tp_live.c, docs/metrics.md "Live
 * metrics"): bucket placement at and around each bound (a bucket's bound
 * is inclusive, as "le" says), what one ended request adds (its class, its
 * TTFT, latency, send lag, the gaps between its text responses, its merged
 * responses), and the exposition itself read back line by line against
 * the text format 0.0.4: every sample belongs to a family whose TYPE came
 * first, bucket counts never fall, +Inf equals _count, values parse. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/tp_live.h"
#include "tokperf/tokperf.h"
#include "tp_alloc_count.h"
#include "tp_test.h"

#define T0 1000000000ULL
#define MS(x) ((uint64_t)((x)*1e6))

/* The value of the sample whose name and labels are exactly key, or NAN. */
static double sample(const char *text, const char *key) {
  size_t kl = strlen(key);
  for (const char *p = text; p && *p;) {
    const char *nl = strchr(p, '\n');
    if (strncmp(p, key, kl) == 0 && p[kl] == ' ') return strtod(p + kl + 1, NULL);
    p = nl ? nl + 1 : NULL;
  }
  return NAN;
}

/* Reads the exposition back per the format; returns the number of
 * problems and says each. */
static int check_format(const char *text) {
  int bad = 0;
  char types[64][96];
  size_t nt = 0;
  char last_bucket_family[96] = "";
  double last_bucket = -1;
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    if (!nl) {
      printf("# the exposition does not end with a newline\n");
      return bad + 1;
    }
    char ln[600];
    size_t n = (size_t)(nl - p) < sizeof(ln) - 1 ? (size_t)(nl - p) : sizeof(ln) - 1;
    memcpy(ln, p, n);
    ln[n] = 0;
    p = nl + 1;
    if (strncmp(ln, "# TYPE ", 7) == 0) {
      char name[96], type[32];
      if (sscanf(ln + 7, "%95s %31s", name, type) != 2 || nt == 64) {
        printf("# bad TYPE line: %s\n", ln);
        bad++;
        continue;
      }
      snprintf(types[nt++], sizeof(types[0]), "%s", name);
      if (strcmp(type, "counter") && strcmp(type, "gauge") && strcmp(type, "histogram")) bad++;
      continue;
    }
    if (strncmp(ln, "# HELP ", 7) == 0) continue;
    if (ln[0] == '#') {
      bad++;
      continue;
    }
    /* name{labels} value */
    size_t i = 0;
    while (ln[i] && (ln[i] == '_' || (ln[i] >= 'a' && ln[i] <= 'z') || (ln[i] >= '0' && ln[i] <= '9'))) i++;
    char name[96];
    snprintf(name, sizeof(name), "%.*s", (int)i, ln);
    if (strncmp(name, "tokperf_", 8) != 0) {
      printf("# sample without the prefix: %s\n", ln);
      bad++;
    }
    const char *rest = ln + i;
    if (*rest == '{') {
      const char *e = strchr(rest, '}');
      if (!e) {
        bad++;
        continue;
      }
      rest = e + 1;
    }
    if (*rest != ' ') {
      printf("# no space before the value: %s\n", ln);
      bad++;
      continue;
    }
    char *end;
    double v = strtod(rest + 1, &end);
    if (*end || end == rest + 1) {
      printf("# value does not parse: %s\n", ln);
      bad++;
    }
    /* Its family: the name, or the name less a histogram's suffix. */
    bool found = false;
    for (size_t k = 0; k < nt && !found; k++) {
      size_t tl = strlen(types[k]);
      found = strcmp(types[k], name) == 0 ||
              (strncmp(types[k], name, tl) == 0 &&
               (!strcmp(name + tl, "_bucket") || !strcmp(name + tl, "_sum") || !strcmp(name + tl, "_count")));
    }
    if (!found) {
      printf("# sample before its TYPE: %s\n", ln);
      bad++;
    }
    size_t nl2 = strlen(name);
    if (nl2 > 7 && strcmp(name + nl2 - 7, "_bucket") == 0) {
      if (strcmp(last_bucket_family, name)) last_bucket = -1;
      if (v < last_bucket) {
        printf("# bucket count falls: %s\n", ln);
        bad++;
      }
      last_bucket = v;
      snprintf(last_bucket_family, sizeof(last_bucket_family), "%s", name);
    }
  }
  return bad;
}

static void test_buckets(void) {
  tp_live *l = tp_live_new();
  CHECK(l != NULL, "made");
  tp_buf out;
  tp_buf_init(&out);
  /* TTFT bounds 0.001 0.0025 ...: a value at a bound counts in it. */
  tp_live_observe(l, TP_LIVE_TTFT, 0.001);
  tp_live_observe(l, TP_LIVE_TTFT, 0.0010001);
  tp_live_observe(l, TP_LIVE_TTFT, 0.0);
  tp_live_observe(l, TP_LIVE_TTFT, 1000.0); /* above every bound: +Inf only */
  tp_live_observe(l, TP_LIVE_TTFT, -1.0);   /* refused */
  tp_live_observe(l, TP_LIVE_TTFT, NAN);    /* refused */
  tp_live_state st = {0};
  st.verdict = -1;
  CHECK_INT(tp_live_render(l, &st, &out), 0, "rendered");
  const char *t = (const char *)out.data;
  CHECK(sample(t, "tokperf_ttft_seconds_bucket{le=\"0.001\"}") == 2, "le=0.001 holds 0 and 0.001");
  CHECK(sample(t, "tokperf_ttft_seconds_bucket{le=\"0.0025\"}") == 3, "le=0.0025 is cumulative");
  CHECK(sample(t, "tokperf_ttft_seconds_bucket{le=\"60\"}") == 3, "1000 s is above the last bound");
  CHECK(sample(t, "tokperf_ttft_seconds_bucket{le=\"+Inf\"}") == 4, "+Inf holds all four");
  CHECK(sample(t, "tokperf_ttft_seconds_count") == 4, "count 4 (a negative and a NaN refused)");
  CHECK_NEAR(sample(t, "tokperf_ttft_seconds_sum"), 1000.0020001, 1e-9, "sum");
  CHECK(isnan(sample(t, "tokperf_fidelity_verdict")), "no verdict yet: NaN");
  CHECK(sample(t, "tokperf_level_info{mode=\"none\"}") == 1, "no level yet");
  CHECK_INT(check_format(t), 0, "the exposition reads back per the format");
  tp_buf_fini(&out);
  tp_live_free(l);
}

/* A streamed answer: sent 0.2 ms late, first text at 10 ms, then text at
 * 12, 12 (one read: merged), 15 ms, a final response without text at 15. */
static void streamed(tp_record *r) {
  tp_record_init(r);
  r->planned_ns = T0;
  r->sent_ns = T0 + MS(0.2);
  uint64_t at[] = {T0 + MS(10), T0 + MS(12), T0 + MS(12), T0 + MS(15)};
  for (size_t i = 0; i < 4; i++) {
    tp_record_add_response(r, at[i], true);
    tp_record_append_text(r, false, "ab", 2, false);
  }
  tp_record_add_response(r, T0 + MS(15), false);
  r->done_ns = T0 + MS(15);
  r->input_tokens = 7;
  r->output_tokens = 4;
}

static void test_requests(void) {
  tp_live *l = tp_live_new();
  tp_buf out;
  tp_buf_init(&out);
  tp_record ok, late, failed, not_sent;
  streamed(&ok);
  streamed(&late);
  late.sent_ns = T0 + MS(3); /* 3 ms late: a late send */
  tp_record_init(&failed);
  failed.planned_ns = failed.sent_ns = T0;
  tp_record_fail(&failed, TP_ERRCLASS_HTTP_STATUS, -1, "503", 3);
  failed.done_ns = T0 + MS(1);
  tp_record_init(&not_sent);
  not_sent.planned_ns = T0;
  tp_record_fail(&not_sent, TP_ERRCLASS_NOT_SENT, -1, "not sent", 8);
  not_sent.done_ns = T0 + MS(1);
  for (int i = 0; i < 3; i++) tp_live_sent(l);
  tp_live_done(l, &ok);
  tp_live_done(l, &late);
  tp_live_done(l, &failed);
  tp_live_done(l, &not_sent);
  tp_live_tokens(l, &ok);
  tp_live_tokens(l, &failed); /* counts of -1: nothing */
  tp_live_read_lag(l, 20000); /* 20 us */
  CHECK_INT((int)tp_live_completed(l), 2, "two completed");
  CHECK_INT((int)tp_live_failed(l), 2, "two failed");
  tp_live_state st = {2, 3, TP_LOAD_RATE, 0, 12.5, 5, 9, 1.5, 42, 0.25, 0.5, 1};
  CHECK_INT(tp_live_render(l, &st, &out), 0, "rendered");
  const char *t = (const char *)out.data;
  CHECK(sample(t, "tokperf_requests_sent_total") == 3, "sent 3");
  CHECK(sample(t, "tokperf_requests_completed_total") == 2, "completed 2");
  CHECK(sample(t, "tokperf_requests_failed_total{class=\"http_status\"}") == 1, "http_status 1");
  CHECK(sample(t, "tokperf_requests_failed_total{class=\"not_sent\"}") == 1, "not_sent 1");
  CHECK(sample(t, "tokperf_requests_failed_total{class=\"timeout\"}") == 0,
        "timeout 0, there from the start");
  CHECK(isnan(sample(t, "tokperf_requests_failed_total{class=\"none\"}")), "no class none");
  CHECK(sample(t, "tokperf_input_tokens_total") == 7 && sample(t, "tokperf_output_tokens_total") == 4,
        "tokens of the counted request only");
  /* TTFT 9.8 ms and 7 ms; latency 14.8 ms and 12 ms. */
  CHECK(sample(t, "tokperf_ttft_seconds_count") == 2, "two TTFTs (the failed ones have none)");
  CHECK_NEAR(sample(t, "tokperf_ttft_seconds_sum"), 0.0098 + 0.007, 1e-12, "TTFT sum");
  CHECK(sample(t, "tokperf_ttft_seconds_bucket{le=\"0.005\"}") == 0 &&
            sample(t, "tokperf_ttft_seconds_bucket{le=\"0.01\"}") == 2,
        "both TTFTs in le=0.01");
  CHECK_NEAR(sample(t, "tokperf_request_latency_seconds_sum"), 0.0148 + 0.012, 1e-12, "latency sum");
  /* Gaps of each: 2 ms, (0: merged, left out), 3 ms. */
  CHECK(sample(t, "tokperf_itl_seconds_count") == 4, "two gaps each, the merged one left out");
  CHECK_NEAR(sample(t, "tokperf_itl_seconds_sum"), 2 * 0.005, 1e-12, "gap sum");
  CHECK(sample(t, "tokperf_merged_responses_total") == 2 && sample(t, "tokperf_response_gaps_total") == 6,
        "merged 2 of 6 gaps");
  CHECK(sample(t, "tokperf_first_response_pairs_total") == 2 &&
            sample(t, "tokperf_first_responses_merged_total") == 0,
        "first pairs");
  /* Send lag of the three with a send time: 0.2 ms, 3 ms, 0. */
  CHECK(sample(t, "tokperf_send_lag_seconds_count") == 3, "send lag of the sent ones");
  CHECK(sample(t, "tokperf_late_sends_total") == 1, "one late send");
  CHECK(sample(t, "tokperf_loop_lag_seconds_bucket{le=\"1e-05\"}") == 0 &&
            sample(t, "tokperf_loop_lag_seconds_bucket{le=\"5e-05\"}") == 1,
        "a loop lag of 20 us");
  CHECK(sample(t, "tokperf_level") == 2 && sample(t, "tokperf_levels") == 3, "level 2 of 3");
  CHECK(sample(t, "tokperf_level_info{mode=\"rate\"}") == 1, "mode rate");
  CHECK(sample(t, "tokperf_level_target_rate") == 12.5, "target rate");
  CHECK(sample(t, "tokperf_requests_in_flight") == 5 && sample(t, "tokperf_requests_in_flight_max") == 9,
        "in flight");
  CHECK(sample(t, "tokperf_loop_reads_total") == 42, "reads");
  CHECK(sample(t, "tokperf_fidelity_verdict") == 1, "verdict");
  CHECK_INT(check_format(t), 0, "the exposition reads back per the format");

  /* A reused buffer: later scrapes allocate nothing. */
  unsigned long before = n_allocs;
  for (int i = 0; i < 20; i++) {
    tp_buf_reset(&out);
    tp_live_done(l, &ok);
    tp_live_render(l, &st, &out);
  }
  if (TP_COUNT_ALLOCS)
    CHECK(n_allocs == before, "twenty more renders into the same buffer allocate nothing (%lu)",
          n_allocs - before);
  tp_record_fini(&ok);
  tp_record_fini(&late);
  tp_record_fini(&failed);
  tp_record_fini(&not_sent);
  tp_buf_fini(&out);
  tp_live_free(l);
}

int main(void) {
  test_buckets();
  test_requests();
  return tp_test_done();
}
