/* The JSON readers of tp_mock_json.h. */
#include "mock/tp_mock_json.h"

#include <stdlib.h>

bool tp__mock_real_int(double d, int64_t *v) {
  if (d != d) return false;
  /* 2^63 is exact as a double; anything from there on saturates. */
  if (d >= 9223372036854775808.0)
    *v = INT64_MAX;
  else if (d <= -9223372036854775808.0)
    *v = INT64_MIN;
  else
    *v = (int64_t)d;
  return true;
}

bool tp__mock_json_int(json_t *j, int64_t *v, bool whole) {
  if (json_is_integer(j)) {
    *v = json_integer_value(j);
    return true;
  }
  if (json_is_real(j)) return tp__mock_real_int(json_real_value(j), v);
  if (json_is_string(j)) {
    char *end;
    long long x = strtoll(json_string_value(j), &end, 10);
    if (end == json_string_value(j) || (whole && *end)) return false;
    *v = x;
    return true;
  }
  return false;
}

bool tp__mock_json_truthy(json_t *j) {
  if (json_is_boolean(j)) return json_is_true(j);
  if (json_is_string(j)) return json_string_length(j) > 0;
  if (json_is_integer(j)) return json_integer_value(j) != 0;
  if (json_is_real(j)) return json_real_value(j) != 0;
  return false;
}
