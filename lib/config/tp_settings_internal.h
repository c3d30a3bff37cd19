/* What the parts of the settings machinery share (tp_settings.c: values,
 * formatting and checks; tp_settings_flags.c: the command line;
 * tp_settings_doc.c: help, man page and completions; tp_settings_json.c:
 * the JSON echo).  Private to config/. */
#ifndef TP_SETTINGS_INTERNAL_H
#define TP_SETTINGS_INTERNAL_H

#include "tokperf/settings.h"

#include <stdbool.h>
#include <stddef.h>

#define FIELD(base, s, T) ((T *)(void *)((char *)(base) + (s)->offset))
#define CFIELD(base, s, T) ((const T *)(const void *)((const char *)(base) + (s)->offset))

/* Walks "a|b=0|c": each name with its index (its position among the
 * canonical names, or the number after '=' for an alias). */
typedef struct choice_iter {
  const char *p;
  int pos;
} choice_iter;

bool tp__settings_next_choice(choice_iter *it, const char **name, size_t *len, int *index, bool *alias);
/* The canonical name of choice v, or NULL. */
const char *tp__settings_enum_name(const tp_setting *s, int v, size_t *len);

/* Appends to out at *used; stops quietly when full. */
void tp__settings_app(char *out, size_t outlen, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Walks "-u|--url": each spelling as the command line writes it, with the
 * part's prefix put before long ones.  Short flags are not prefixed; a
 * prefixed part offers none. */
typedef struct flag_iter {
  const char *p;
  const char *prefix;
} flag_iter;

bool tp__settings_next_flag(flag_iter *it, char *out, size_t outlen);
/* The canonical flag: the first long spelling ("--url"), prefixed. */
bool tp__settings_canonical_flag(const tp_setting *s, const char *prefix, char *out, size_t outlen);

static inline bool takes_value(const tp_setting *s) { return s->type != TP_SET_FLAG; }

#endif
