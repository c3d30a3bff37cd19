/* The models the mock serves, over gRPC and HTTP alike: their names,
 * platforms and tensors as Triton's model metadata gives them. */
#include <string.h>

#include "mock/tp_mock_internal.h"
#include "util/tp_common.h"

/* ---- the two models ------------------------------------------------------ */

/* TensorRT-LLM's ensemble batches (max_batch_size > 0), so every shape has
 * a leading -1 batch dimension. */
static const tp__mock_tensor ensemble_inputs[] = {
    {"text_input", "BYTES", 2, {-1, 1}}, {"max_tokens", "INT32", 2, {-1, 1}},
    {"bad_words", "BYTES", 2, {-1, -1}}, {"stop_words", "BYTES", 2, {-1, -1}},
    {"end_id", "INT32", 2, {-1, 1}},     {"pad_id", "INT32", 2, {-1, 1}},
    {"top_k", "INT32", 2, {-1, 1}},      {"top_p", "FP32", 2, {-1, 1}},
    {"temperature", "FP32", 2, {-1, 1}}, {"min_length", "INT32", 2, {-1, 1}},
    {"stream", "BOOL", 2, {-1, 1}},      {"exclude_input_in_output", "BOOL", 2, {-1, 1}},
};
static const tp__mock_tensor ensemble_outputs[] = {{"text_output", "BYTES", 2, {-1, -1}}};

/* The vLLM backend forces max_batch_size 0: no batch dimension. */
static const tp__mock_tensor vllm_inputs[] = {
    {"text_input", "BYTES", 1, {1}},
    {"stream", "BOOL", 1, {1}},
    {"sampling_parameters", "BYTES", 1, {1}},
    {"exclude_input_in_output", "BOOL", 1, {1}},
    {"return_num_output_tokens", "BOOL", 1, {1}},
};
static const tp__mock_tensor vllm_outputs[] = {
    {"text_output", "BYTES", 1, {-1}},
    {"num_output_tokens", "UINT32", 1, {-1}},
};

/* The model of vLLM's quick-deploy tutorial for Triton (a Python model,
 * no batch dimension): upper-case names, and each response is the prompt
 * followed by all the text so far. */
static const tp__mock_tensor tutorial_inputs[] = {
    {"PROMPT", "BYTES", 1, {1}},
    {"STREAM", "BOOL", 1, {1}},
    {"SAMPLING_PARAMETERS", "BYTES", 1, {1}},
};
static const tp__mock_tensor tutorial_outputs[] = {{"TEXT", "BYTES", 1, {-1}}};

static const tp__mock_model models[] = {
    {"ensemble", "ensemble", true, ensemble_inputs, TP_ARRAY_LEN(ensemble_inputs), ensemble_outputs,
     TP_ARRAY_LEN(ensemble_outputs), TP_MOCK_SM_ENSEMBLE, "text_output", false},
    {"vllm_model", "vllm", false, vllm_inputs, TP_ARRAY_LEN(vllm_inputs), vllm_outputs,
     TP_ARRAY_LEN(vllm_outputs), TP_MOCK_SM_VLLM, "text_output", false},
    {"vllm", "python", false, tutorial_inputs, TP_ARRAY_LEN(tutorial_inputs), tutorial_outputs,
     TP_ARRAY_LEN(tutorial_outputs), TP_MOCK_SM_VLLM, "TEXT", true},
};

/* The served names of the mock that carries them (tp_mock_config.
 * served_model_name): every protocol layer resolves names here, the
 * protobuf parsers included, which know no mock.  A process runs one such
 * mock (the CLI's); mocks without served names leave it alone. */
static const char *served_names;

void tp__mock_set_served_names(const char *list) {
  served_names = list;
}

static const tp__mock_model *by_name(const char *name, size_t len) {
  for (size_t i = 0; i < TP_ARRAY_LEN(models); i++)
    if (strlen(models[i].name) == len && strncmp(models[i].name, name, len) == 0) return &models[i];
  return NULL;
}

const tp__mock_model *tp__mock_find_model(const char *name) {
  const tp__mock_model *md = by_name(name, strlen(name));
  if (md) return md;
  /* "NAME" answers as vllm_model, "NAME=MODEL" as MODEL. */
  size_t n = strlen(name);
  for (const char *p = served_names; p && *p;) {
    size_t len = strcspn(p, ",");
    size_t nl = strcspn(p, "=,");
    if (nl == n && strncmp(p, name, n) == 0)
      return nl < len ? by_name(p + nl + 1, len - nl - 1) : by_name("vllm_model", 10);
    p += len;
    if (*p == ',') p++;
  }
  return NULL;
}

bool tp__mock_name_in_list(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; p && *p;) {
    size_t len = strcspn(p, ",");
    if (strcspn(p, "=,") == n && strncmp(p, name, n) == 0) return true;
    p += len;
    if (*p == ',') p++;
  }
  return false;
}

bool tp__mock_model_has_input(const tp__mock_model *md, const char *name) {
  for (size_t i = 0; i < md->n_inputs; i++)
    if (strcmp(md->inputs[i].name, name) == 0) return true;
  return false;
}
