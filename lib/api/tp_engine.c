/* The engine protocols' request side and the preflight's answers
 * (tp_engine.h); the Generate responses are tp_engine_parse.c's. */
#include "tp_engine.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sglang_scheduler.pb-c.h"
#include "transport/tp_grpc.h"
#include "vllm_engine.pb-c.h"

#define TP_ENGINE_NAME(e, name, service) \
  case e: return name;
const char *tp_engine_name(tp_engine_proto p) {
  switch (p) {
    TP_ENGINE_PROTOS(TP_ENGINE_NAME)
    default: break;
  }
  return "?";
}
#undef TP_ENGINE_NAME

#define TP_ENGINE_SERVICE(e, name, service) \
  case e: return service;
const char *tp_engine_service(tp_engine_proto p) {
  switch (p) {
    TP_ENGINE_PROTOS(TP_ENGINE_SERVICE)
    default: break;
  }
  return "?";
}
#undef TP_ENGINE_SERVICE

void tp_engine_path(tp_engine_proto p, const char *method, char *out, size_t outlen) {
  snprintf(out, outlen, "/%s/%s", tp_engine_service(p), method);
}

/* ---- --extra-inputs -------------------------------------------------------- */

void tp_engine_sampling_fini(tp_engine_sampling *s) {
  for (size_t i = 0; i < s->n_stop; i++) free(s->stop[i]);
  free(s->stop);
  free(s->stop_token_ids);
  memset(s, 0, sizeof(*s));
}

static const char *const known_fields =
    "temperature, top_p, top_k, min_p, frequency_penalty, presence_penalty, repetition_penalty, max_tokens, "
    "min_tokens, ignore_eos, skip_special_tokens, stop, stop_token_ids";

static int bad(char *err, size_t errlen, tp_engine_proto p, const char *key, const char *why) {
  tp_seterr(err, errlen, "--extra-inputs '%s': %s (%s)", key, why, tp_engine_name(p));
  return TP_EINVAL;
}

static int read_float(const json_t *v, float *out, bool *has) {
  if (!json_is_number(v)) return TP_EINVAL;
  double d = json_number_value(v);
  if (!isfinite(d)) return TP_EINVAL;
  *out = (float)d;
  *has = true;
  return 0;
}

/* An integer in [lo, hi]. */
static int read_int(const json_t *v, int64_t lo, int64_t hi, int64_t *out) {
  if (!json_is_integer(v)) return TP_EINVAL;
  json_int_t i = json_integer_value(v);
  if (i < lo || i > hi) return TP_EINVAL;
  *out = (int64_t)i;
  return 0;
}

static int read_stop(tp_engine_sampling *s, const json_t *v) {
  size_t n = json_is_string(v) ? 1 : json_is_array(v) ? json_array_size(v) : 0;
  if (!json_is_string(v) && !json_is_array(v)) return TP_EINVAL;
  char **l = calloc(n ? n : 1, sizeof(char *));
  if (!l) return TP_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    const json_t *e = json_is_string(v) ? v : json_array_get(v, i);
    if (!json_is_string(e)) {
      for (size_t k = 0; k < i; k++) free(l[k]);
      free(l);
      return TP_EINVAL;
    }
    l[i] = tp_strndup(json_string_value(e), json_string_length(e));
    if (!l[i]) {
      for (size_t k = 0; k < i; k++) free(l[k]);
      free(l);
      return TP_ENOMEM;
    }
  }
  for (size_t i = 0; i < s->n_stop; i++) free(s->stop[i]);
  free(s->stop);
  s->stop = l;
  s->n_stop = n;
  return 0;
}

static int read_stop_ids(tp_engine_sampling *s, const json_t *v) {
  if (!json_is_array(v)) return TP_EINVAL;
  size_t n = json_array_size(v);
  uint32_t *ids = calloc(n ? n : 1, sizeof(uint32_t));
  if (!ids) return TP_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    int64_t id;
    if (read_int(json_array_get(v, i), 0, UINT32_MAX, &id)) {
      free(ids);
      return TP_EINVAL;
    }
    ids[i] = (uint32_t)id;
  }
  free(s->stop_token_ids);
  s->stop_token_ids = ids;
  s->n_stop_token_ids = n;
  return 0;
}

static int read_one(tp_engine_sampling *s, tp_engine_proto p, const char *k, const json_t *v, char *err,
                    size_t errlen) {
  int64_t i;
  int rv;
  bool vllm = p == TP_ENGINE_VLLM;
  if (strcmp(k, "temperature") == 0) {
    if (read_float(v, &s->temperature, &s->has_temperature) || s->temperature < 0)
      return bad(err, errlen, p, k, "expected a number >= 0");
  } else if (strcmp(k, "top_p") == 0) {
    if (read_float(v, &s->top_p, &s->has_top_p) || !(s->top_p > 0 && s->top_p <= 1))
      return bad(err, errlen, p, k, "expected a number in (0, 1]");
  } else if (strcmp(k, "min_p") == 0) {
    if (read_float(v, &s->min_p, &s->has_min_p) || s->min_p < 0 || s->min_p > 1)
      return bad(err, errlen, p, k, "expected a number in [0, 1]");
  } else if (strcmp(k, "frequency_penalty") == 0) {
    if (read_float(v, &s->frequency_penalty, &s->has_frequency_penalty))
      return bad(err, errlen, p, k, "expected a number");
  } else if (strcmp(k, "presence_penalty") == 0) {
    if (read_float(v, &s->presence_penalty, &s->has_presence_penalty))
      return bad(err, errlen, p, k, "expected a number");
  } else if (strcmp(k, "repetition_penalty") == 0) {
    if (read_float(v, &s->repetition_penalty, &s->has_repetition_penalty) || s->repetition_penalty <= 0)
      return bad(err, errlen, p, k, "expected a number > 0");
  } else if (strcmp(k, "top_k") == 0) {
    /* vLLM's field is unsigned (0 = every token); SGLang's takes -1 for that. */
    if (read_int(v, vllm ? 0 : -1, INT32_MAX, &i) || (!vllm && i == 0))
      return bad(
          err, errlen, p, k,
          vllm ? "expected an integer >= 0 (0 = all tokens)" : "expected -1 (all tokens) or an integer >= 1");
    s->top_k = (int32_t)i;
    s->has_top_k = true;
  } else if (strcmp(k, "seed") == 0) {
    if (!vllm) return bad(err, errlen, p, k, "SGLang's SamplingParams message has no seed field");
    if (read_int(v, INT32_MIN, INT32_MAX, &i)) return bad(err, errlen, p, k, "expected a 32-bit integer");
    s->seed = (int32_t)i;
    s->has_seed = true;
  } else if (strcmp(k, "max_tokens") == 0 || strcmp(k, "max_new_tokens") == 0) {
    if (read_int(v, 1, INT32_MAX, &i)) return bad(err, errlen, p, k, "expected an integer >= 1");
    s->max_tokens = (uint32_t)i;
    s->has_max_tokens = true;
  } else if (strcmp(k, "min_tokens") == 0 || strcmp(k, "min_new_tokens") == 0) {
    if (read_int(v, 0, INT32_MAX, &i)) return bad(err, errlen, p, k, "expected an integer >= 0");
    s->min_tokens = (uint32_t)i;
    s->has_min_tokens = true;
  } else if (strcmp(k, "ignore_eos") == 0 || strcmp(k, "skip_special_tokens") == 0) {
    if (!json_is_boolean(v)) return bad(err, errlen, p, k, "expected true or false");
    if (k[0] == 'i') {
      s->ignore_eos = json_is_true(v);
      s->has_ignore_eos = true;
    } else {
      s->skip_special_tokens = json_is_true(v);
      s->has_skip_special_tokens = true;
    }
  } else if (strcmp(k, "stop") == 0) {
    if ((rv = read_stop(s, v)))
      return rv == TP_ENOMEM ? rv : bad(err, errlen, p, k, "expected a string or a list of strings");
  } else if (strcmp(k, "stop_token_ids") == 0) {
    if ((rv = read_stop_ids(s, v)))
      return rv == TP_ENOMEM ? rv : bad(err, errlen, p, k, "expected a list of token ids");
  } else {
    tp_seterr(err, errlen, "--extra-inputs '%s': %s's SamplingParams has no such field; it takes %s%s", k,
              tp_engine_name(p), known_fields, vllm ? ", seed" : "");
    return TP_EINVAL;
  }
  return 0;
}

int tp_engine_sampling_read(tp_engine_sampling *s, tp_engine_proto p, const json_t *extra, char *err,
                            size_t errlen) {
  memset(s, 0, sizeof(*s));
  if (!extra) return 0;
  if (!json_is_object(extra)) {
    tp_seterr(err, errlen, "--extra-inputs: expected NAME:VALUE or a JSON object");
    return TP_EINVAL;
  }
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)extra, k, v) {
    int rv = read_one(s, p, k, v, err, errlen);
    if (rv) return rv;
  }
  return 0;
}

/* ---- requests ---------------------------------------------------------------- */

/* Appends msg framed with its gRPC prefix to out. */
static int put_framed(tp_buf *out, const ProtobufCMessage *msg) {
  size_t n = protobuf_c_message_get_packed_size(msg);
  if (n > UINT32_MAX) return TP_EINVAL;
  int rv = tp_buf_reserve(out, TP_GRPC_PREFIX_BYTES + n);
  if (rv) return rv;
  uint8_t *p = out->data + out->len;
  tp_grpc_put_prefix(p, (uint32_t)n);
  protobuf_c_message_pack(msg, p + TP_GRPC_PREFIX_BYTES);
  out->len += TP_GRPC_PREFIX_BYTES + n;
  return 0;
}

int tp_engine_build_empty(tp_buf *out) {
  static const uint8_t empty[TP_GRPC_PREFIX_BYTES] = {0, 0, 0, 0, 0};
  return tp_buf_append(out, empty, sizeof(empty));
}

/* The output length and the stop on EOS: the run's, unless --extra-inputs
 * set them (the extra fields come last, as in the HTTP bodies). */
static void lengths(const tp_engine_gen *g, const tp_engine_sampling *s, uint32_t *max, uint32_t *min,
                    bool *ignore_eos) {
  *max = s && s->has_max_tokens ? s->max_tokens : g->max_tokens;
  *min = s && s->has_min_tokens ? s->min_tokens : g->min_tokens;
  *ignore_eos = s && s->has_ignore_eos ? s->ignore_eos : g->min_tokens > 0;
}

static int build_vllm(tp_buf *out, const tp_engine_gen *g, const tp_engine_sampling *s) {
  Vllm__Grpc__Engine__SamplingParams sp = VLLM__GRPC__ENGINE__SAMPLING_PARAMS__INIT;
  uint32_t max, min;
  bool ignore_eos;
  lengths(g, s, &max, &min, &ignore_eos);
  if (max) {
    sp.opt_max_tokens_case = VLLM__GRPC__ENGINE__SAMPLING_PARAMS__OPT_MAX_TOKENS_MAX_TOKENS;
    sp.max_tokens = max;
  }
  sp.min_tokens = min;
  sp.ignore_eos = ignore_eos;
  if (s) {
    if (s->has_temperature) {
      sp.opt_temperature_case = VLLM__GRPC__ENGINE__SAMPLING_PARAMS__OPT_TEMPERATURE_TEMPERATURE;
      sp.temperature = s->temperature;
    }
    if (s->has_seed) {
      sp.opt_seed_case = VLLM__GRPC__ENGINE__SAMPLING_PARAMS__OPT_SEED_SEED;
      sp.seed = s->seed;
    }
    sp.top_p = s->has_top_p ? s->top_p : 0;
    sp.top_k = s->has_top_k ? (uint32_t)s->top_k : 0;
    sp.min_p = s->min_p;
    sp.frequency_penalty = s->frequency_penalty;
    sp.presence_penalty = s->presence_penalty;
    sp.repetition_penalty = s->has_repetition_penalty ? s->repetition_penalty : 0;
    sp.skip_special_tokens = s->skip_special_tokens;
    sp.n_stop = s->n_stop;
    sp.stop = s->stop;
    sp.n_stop_token_ids = s->n_stop_token_ids;
    sp.stop_token_ids = s->stop_token_ids;
  }
  Vllm__Grpc__Engine__TokenizedInput ti = VLLM__GRPC__ENGINE__TOKENIZED_INPUT__INIT;
  Vllm__Grpc__Engine__GenerateRequest r = VLLM__GRPC__ENGINE__GENERATE_REQUEST__INIT;
  r.request_id = (char *)g->id;
  r.sampling_params = &sp;
  r.stream = g->stream;
  /* protobuf-c packs strings with strlen: text carries no NUL (the run's
   * prompts are C strings). */
  char *text = NULL;
  if (g->text && (!g->ids || g->send_text)) {
    text = tp_strndup(g->text, g->text_len);
    if (!text) return TP_ENOMEM;
  }
  if (g->ids) {
    ti.n_input_ids = g->n_ids;
    ti.input_ids = (uint32_t *)g->ids; /* ids are >= 0: the same varints */
    if (text) ti.original_text = text;
    r.input_case = VLLM__GRPC__ENGINE__GENERATE_REQUEST__INPUT_TOKENIZED;
    r.tokenized = &ti;
  } else {
    r.input_case = VLLM__GRPC__ENGINE__GENERATE_REQUEST__INPUT_TEXT;
    r.text = text ? text : "";
  }
  int rv = put_framed(out, &r.base);
  free(text);
  return rv;
}

static int build_sglang(tp_buf *out, const tp_engine_gen *g, const tp_engine_sampling *s) {
  if (!g->ids) return TP_EINVAL;
  Sglang__Grpc__Scheduler__SamplingParams sp = SGLANG__GRPC__SCHEDULER__SAMPLING_PARAMS__INIT;
  uint32_t max, min;
  bool ignore_eos;
  lengths(g, s, &max, &min, &ignore_eos);
  if (max) {
    sp.opt_max_new_tokens_case = SGLANG__GRPC__SCHEDULER__SAMPLING_PARAMS__OPT_MAX_NEW_TOKENS_MAX_NEW_TOKENS;
    sp.max_new_tokens = (int32_t)TP_MIN(max, (uint32_t)INT32_MAX);
  }
  sp.min_new_tokens = (int32_t)TP_MIN(min, (uint32_t)INT32_MAX);
  sp.ignore_eos = ignore_eos;
  /* The scheduler takes every value as sent: the engine's defaults are
   * written out. */
  sp.temperature = s && s->has_temperature ? s->temperature : 1.0f;
  sp.top_p = s && s->has_top_p ? s->top_p : 1.0f;
  sp.top_k = s && s->has_top_k ? s->top_k : -1;
  sp.repetition_penalty = s && s->has_repetition_penalty ? s->repetition_penalty : 1.0f;
  sp.skip_special_tokens = s && s->has_skip_special_tokens ? s->skip_special_tokens : true;
  sp.spaces_between_special_tokens = true;
  sp.n = 1;
  if (s) {
    sp.min_p = s->min_p;
    sp.frequency_penalty = s->frequency_penalty;
    sp.presence_penalty = s->presence_penalty;
    sp.n_stop = s->n_stop;
    sp.stop = s->stop;
    sp.n_stop_token_ids = s->n_stop_token_ids;
    sp.stop_token_ids = s->stop_token_ids;
  }
  char *text = NULL;
  if (g->text && g->send_text) {
    text = tp_strndup(g->text, g->text_len);
    if (!text) return TP_ENOMEM;
  }
  Sglang__Grpc__Scheduler__TokenizedInput ti = SGLANG__GRPC__SCHEDULER__TOKENIZED_INPUT__INIT;
  ti.n_input_ids = g->n_ids;
  ti.input_ids = (uint32_t *)g->ids;
  if (text) ti.original_text = text;
  Sglang__Grpc__Scheduler__GenerateRequest r = SGLANG__GRPC__SCHEDULER__GENERATE_REQUEST__INIT;
  r.request_id = (char *)g->id;
  r.tokenized = &ti;
  r.sampling_params = &sp;
  r.stream = g->stream;
  int rv = put_framed(out, &r.base);
  free(text);
  return rv;
}

int tp_engine_build_generate(tp_buf *out, tp_engine_proto p, const tp_engine_gen *g,
                             const tp_engine_sampling *s) {
  return p == TP_ENGINE_VLLM     ? build_vllm(out, g, s)
         : p == TP_ENGINE_SGLANG ? build_sglang(out, g, s)
                                 : TP_EINVAL;
}

int tp_engine_build_abort(tp_buf *out, tp_engine_proto p, const char *const *ids, size_t n,
                          const char *reason) {
  if (p == TP_ENGINE_VLLM) {
    Vllm__Grpc__Engine__AbortRequest a = VLLM__GRPC__ENGINE__ABORT_REQUEST__INIT;
    a.n_request_ids = n;
    a.request_ids = (char **)ids;
    return put_framed(out, &a.base);
  }
  if (p != TP_ENGINE_SGLANG || n != 1) return TP_EINVAL;
  Sglang__Grpc__Scheduler__AbortRequest a = SGLANG__GRPC__SCHEDULER__ABORT_REQUEST__INIT;
  a.request_id = (char *)ids[0];
  if (reason) a.reason = (char *)reason;
  return put_framed(out, &a.base);
}

/* ---- the preflight's answers ----------------------------------------------- */

static void copy_str(char *out, size_t outlen, const char *s) {
  snprintf(out, outlen, "%s", s ? s : "");
}

int tp_engine_parse_health(tp_engine_proto p, const uint8_t *data, size_t len, bool *healthy, char *msg,
                           size_t msglen) {
  if (p == TP_ENGINE_VLLM) {
    Vllm__Grpc__Engine__HealthCheckResponse *r =
        vllm__grpc__engine__health_check_response__unpack(NULL, len, data);
    if (!r) return TP_EPROTO;
    *healthy = r->healthy;
    copy_str(msg, msglen, r->message);
    vllm__grpc__engine__health_check_response__free_unpacked(r, NULL);
    return 0;
  }
  Sglang__Grpc__Scheduler__HealthCheckResponse *r =
      sglang__grpc__scheduler__health_check_response__unpack(NULL, len, data);
  if (!r) return TP_EPROTO;
  *healthy = r->healthy;
  copy_str(msg, msglen, r->message);
  sglang__grpc__scheduler__health_check_response__free_unpacked(r, NULL);
  return 0;
}

int tp_engine_parse_model_info(tp_engine_proto p, const uint8_t *data, size_t len,
                               tp_engine_model_info *out) {
  memset(out, 0, sizeof(*out));
  if (p == TP_ENGINE_VLLM) {
    Vllm__Grpc__Engine__GetModelInfoResponse *r =
        vllm__grpc__engine__get_model_info_response__unpack(NULL, len, data);
    if (!r) return TP_EPROTO;
    copy_str(out->model_path, sizeof(out->model_path), r->model_path);
    copy_str(out->served_model_name, sizeof(out->served_model_name), r->served_model_name);
    out->is_generation = r->is_generation;
    out->max_context_length = r->max_context_length;
    out->vocab_size = r->vocab_size;
    vllm__grpc__engine__get_model_info_response__free_unpacked(r, NULL);
    return 0;
  }
  Sglang__Grpc__Scheduler__GetModelInfoResponse *r =
      sglang__grpc__scheduler__get_model_info_response__unpack(NULL, len, data);
  if (!r) return TP_EPROTO;
  copy_str(out->model_path, sizeof(out->model_path), r->model_path);
  copy_str(out->served_model_name, sizeof(out->served_model_name), r->served_model_name);
  out->is_generation = r->is_generation;
  out->max_context_length = r->max_context_length > 0 ? r->max_context_length : 0;
  out->vocab_size = r->vocab_size > 0 ? r->vocab_size : 0;
  sglang__grpc__scheduler__get_model_info_response__free_unpacked(r, NULL);
  return 0;
}
