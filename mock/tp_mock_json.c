/* The JSON readers of tp_mock_json.h. */
#include "mock/tp_mock_json.h"

#include <stdlib.h>

bool tp__mock_json_int(json_t *j, int64_t *v, bool whole) {
  if (json_is_integer(j)) {
    *v = json_integer_value(j);
    return true;
  }
  if (json_is_real(j)) {
    *v = (int64_t)json_real_value(j);
    return true;
  }
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
