/* The JSON readers both sides use on request bodies and parameters. */
#ifndef TP_MOCK_JSON_H
#define TP_MOCK_JSON_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

/* d truncated towards zero, saturated to the range of int64_t; false for
 * NaN. */
bool tp__mock_real_int(double d, int64_t *v);

/* A JSON number (a real one as tp__mock_real_int reads it), or a string holding one: vLLM casts
 * each sampling parameter to its Python type, so "64" works as well as 64.
 * whole: the string must be the number and nothing more (request bodies);
 * else a number at its start is enough (sampling_parameters, as the mock
 * has always read them).  False for NULL and other types. */
bool tp__mock_json_int(json_t *j, int64_t *v, bool whole);

/* Python's bool() on the value, as the vLLM backend applies it: a non-empty
 * string, even "false", is true. */
bool tp__mock_json_truthy(json_t *j);

#endif
