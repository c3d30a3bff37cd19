/* The mock's reading of a KServe v2 ModelInferRequest: bytes in, what the
 * mock needs of the request out (the model, the prompt, the streaming
 * flags, the sampling parameters, the fault asked for), with Triton's
 * error texts for what it refuses.  No I/O and no server state.
 *
 * Inputs are found by name (the tutorial model's upper-case names too);
 * their data is either typed contents or, for inputs without contents, the
 * next of raw_input_contents in order, where a BYTES element is a 4-byte
 * little-endian length and the bytes, and numbers are little-endian. */
#ifndef TP_MOCK_INFER_PARSE_H
#define TP_MOCK_INFER_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "grpc_service.pb-c.h"
#include "mock/tp_mock_engine.h"
#include "mock/tp_mock_faults.h"
#include "mock/tp_mock_internal.h"

typedef struct tp__mock_infer_req {
  /* The unpacked message, owned; id, version and prompt point into it. */
  Inference__ModelInferRequest *msg;
  const char *id;      /* "" when none, or when the bytes did not unpack */
  const char *version; /* as requested ("" when none) */
  const tp__mock_model *model;
  const uint8_t *prompt; /* text_input's first element */
  size_t prompt_len;
  bool have_prompt;
  bool stream;
  bool exclude_input;
  bool exclude_input_set;
  bool num_tokens;  /* vLLM return_num_output_tokens */
  bool empty_final; /* triton_enable_empty_final_response */
  bool have_max_tokens;
  bool have_fault; /* the request asked for a fault (tokperf_fault) */
  tp_mock_fault fault;
  int64_t fault_after; /* tokperf_fault_after, -1 = not given */
  /* max_tokens, min_tokens, ignore_eos; prompt, prompt_len and
   * prompt_tokens (its words) once parsing succeeded. */
  tp_mock_seq_params sp;
} tp__mock_infer_req;

/* Parses the len bytes at data (a ModelInferRequest without the gRPC
 * prefix) into *out.  Returns 0, or with Triton-like text in err:
 * TP_EPROTO (not a ModelInferRequest; the server answers INTERNAL),
 * TP_ENOTFOUND (unknown model or version, NOT_FOUND) or TP_EINVAL (bad
 * inputs or parameters, INVALID_ARGUMENT).  Whatever it returns, *out is
 * to be released with tp__mock_infer_req_fini; out->id is usable for an
 * error answer after TP_ENOTFOUND and TP_EINVAL. */
int tp__mock_infer_parse(const uint8_t *data, size_t len, tp__mock_infer_req *out, char *err, size_t errlen);

/* Frees the message *r holds; its pointers are then empty. */
void tp__mock_infer_req_fini(tp__mock_infer_req *r);

#endif
