/* Reading a KServe v2 ModelInferRequest into what the mock needs of it. */
#ifndef TP_MOCK_INFER_PARSE_H
#define TP_MOCK_INFER_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "grpc_service.pb-c.h"
#include "mock/tp_mock_engine.h"
#include "mock/tp_mock_faults.h"
#include "mock/tp_mock_internal.h"

typedef struct infer_args {
  const tp__mock_model *model;
  const uint8_t *prompt;
  size_t prompt_len;
  bool have_prompt;
  bool stream;
  bool exclude_input;
  bool exclude_input_set;
  bool num_tokens;
  bool empty_final;
  bool have_max_tokens;
  bool have_fault; /* the request asked for a fault (tokperf_fault) */
  tp_mock_fault fault;
  int64_t fault_after; /* tokperf_fault_after, -1 = not given */
  tp_mock_seq_params sp;
} infer_args;

/* Reads what the mock needs out of a ModelInferRequest.  Returns 0, or
 * TP_ENOTFOUND (unknown model or version, grpc NOT_FOUND) / TP_EINVAL (bad
 * inputs, INVALID_ARGUMENT) with Triton-like text in err. */
int tp__mock_parse_infer(const Inference__ModelInferRequest *q, infer_args *a, char *err, size_t errlen);

#endif
