/* tp_run_new refuses a configuration naming the setting by its key
 * ("load.concurrency"), the name the settings table and the JSON echo
 * use, never by a command-line flag: a program using the library has no
 * flags, and the CLI turns keys into flags itself. */
#include <string.h>

#include "tokperf/tokperf.h"
#include "tp_test.h"

static const uint32_t zero_conc[] = {0};
static const double bad_rate[] = {-1};
static const double one_rate[] = {10};
static const char *const bad_assert[] = {"speed >= 1"};

static void conc_zero(tp_config *c) {
  c->load.concurrency = zero_conc;
  c->load.n_concurrency = 1;
}
static void no_levels(tp_config *c) {
  c->load.concurrency = NULL;
  c->load.n_concurrency = 0;
}
static void rate_negative(tp_config *c) {
  c->load.request_rates = bad_rate;
  c->load.n_request_rates = 1;
}
static void gamma_flat(tp_config *c) {
  c->load.arrival = TP_ARRIVAL_GAMMA;
  c->load.burstiness = 0;
}
static void no_model(tp_config *c) {
  c->server.model = NULL;
}
static void no_url(tp_config *c) {
  c->server.url = "";
}
static void bad_backend(tp_config *c) {
  c->server.backend = (tp_backend)7;
}
static void prefix_no_tok(tp_config *c) {
  c->prompts.prefix_tokens = 16;
}
static void special_no_tok(tp_config *c) {
  c->prompts.tokenizer_add_special_tokens = true;
}
static void schedule_and_rate(tp_config *c) {
  c->load.schedule_file = "trace.jsonl";
  c->load.request_rates = one_rate;
  c->load.n_request_rates = 1;
}
static void zero_duration(tp_config *c) {
  c->measure.measure_mode = TP_MEASURE_DURATION;
  c->measure.duration_ms = 0;
}
static void zero_window(tp_config *c) {
  c->measure.measure_mode = TP_MEASURE_TIME_WINDOWS;
  c->measure.measurement_interval_ms = 0;
}
static void bad_gate(tp_config *c) {
  c->measure.asserts = bad_assert;
  c->measure.n_asserts = 1;
  c->artifacts.no_artifacts = true;
}

int main(void) {
  static const struct {
    void (*set)(tp_config *);
    const char *want; /* the start of the message */
  } cases[] = {
      {conc_zero, "load.concurrency: 0 is out of range"},
      {no_levels, "load.concurrency: no levels given"},
      {rate_negative, "load.request_rate: -1 is out of range"},
      {gamma_flat, "load.burstiness: must be above 0"},
      {no_model, "server.model: a model name is needed"},
      {no_url, "server.url: a server address is needed"},
      {bad_backend, "server.backend: expected tensorrtllm or vllm"},
      {prefix_no_tok, "prompts.prefix_tokens needs prompts.tokenizer"},
      {special_no_tok, "prompts.tokenizer_add_special_tokens needs prompts.tokenizer"},
      {schedule_and_rate, "load.schedule_file replays its own times and lengths: drop load.request_rate"},
      {zero_duration, "measure.duration_ms: the measurement window must be longer than 0"},
      {zero_window, "measure.measurement_interval_ms: the measurement window must be longer than 0"},
      {bad_gate, "goals.asserts 'speed >= 1': unknown metric 'speed'"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    tp_config c;
    tp_config_default(&c);
    c.output.progress = NULL;
    cases[i].set(&c);
    char err[2048] = "";
    tp_run *run = NULL;
    int rv = tp_run_new(&run, &c, err, sizeof(err));
    CHECK(rv == TP_EINVAL && run == NULL && strncmp(err, cases[i].want, strlen(cases[i].want)) == 0,
          "refused naming the key: %s (got: %s)", cases[i].want, err);
    CHECK(strstr(err, "--") == NULL, "and no command-line flag: %s", err);
    if (run) tp_run_free(run);
  }
  return tp_test_done();
}
