/* Help, the man page and shell completions, written from the settings
 * tables. */
#include "tp_settings_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "util/tp_common.h"

/* ---- help and man page --------------------------------------------------------------- */

static unsigned term_width(void) {
  struct winsize ws;
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40) return ws.ws_col;
  const char *c = getenv("COLUMNS");
  if (c && atoi(c) >= 40) return (unsigned)atoi(c);
  return 100;
}

static bool visible(const tp_setting *s) { return s->flags && !(s->flags_mask & TP_SETF_HIDDEN); }

/* What a row is when it is not an ordinary setting: put before its help, so
 * that a reader of --help or the man page knows before trying it. */
static const char *status_word(const tp_setting *s) {
  if (s->flags_mask & TP_SETF_REFUSED) return "refused: ";
  if (s->flags_mask & TP_SETF_NOOP) return "no effect: ";
  return "";
}

/* "-u, --url HOST:PORT" */
static void row_head(const tp_setting *s, const char *prefix, char *out, size_t outlen) {
  size_t used = 0;
  out[0] = 0;
  flag_iter it = {s->flags, prefix};
  char f[128];
  bool first = true;
  while (tp__settings_next_flag(&it, f, sizeof(f))) {
    tp__settings_app(out, outlen, &used, "%s%s", first ? "" : ", ", f);
    first = false;
  }
  if (takes_value(s)) tp__settings_app(out, outlen, &used, " %s", s->arg ? s->arg : "VALUE");
}

/* The default as help shows it: the field's value; nothing for a flag
 * that is off or an empty value. */
static void row_default(const tp_setting *s, const void *base, char *out, size_t outlen) {
  out[0] = 0;
  if (s->type == TP_SET_FLAG) {
    if (*CFIELD(base, s, bool) && !(s->flags_mask & TP_SETF_CLEAR)) snprintf(out, outlen, "on");
    return;
  }
  if (s->type == TP_SET_STR_LIST || (s->flags_mask & TP_SETF_SECRET)) return;
  tp_setting_format(s, base, out, outlen);
  if ((s->flags_mask & TP_SETF_UNSET0) && (strcmp(out, "0") == 0 || strcmp(out, "0ms") == 0)) out[0] = 0;
}

/* Writes text wrapped to width, each line after the first indented. */
static void wrap(FILE *out, const char *text, size_t col, size_t indent, size_t width) {
  const char *p = text;
  while (*p) {
    while (*p == ' ') p++;
    const char *w = p;
    while (*p && *p != ' ') p++;
    size_t wl = (size_t)(p - w);
    if (!wl) break;
    if (col > indent && col + 1 + wl > width) {
      fprintf(out, "\n%*s", (int)indent, "");
      col = indent;
    } else if (col > indent) {
      fputc(' ', out);
      col++;
    }
    fwrite(w, 1, wl, out);
    col += wl;
  }
  fputc('\n', out);
}

void tp_settings_help(FILE *out, const tp_settings_part *parts, size_t n_parts, unsigned width) {
  if (!width) width = term_width();
  if (width > 160) width = 160;
  /* The head column fits the longest head, within reason. */
  size_t headw = 0;
  for (size_t k = 0; k < n_parts; k++)
    for (size_t i = 0; i < parts[k].n; i++) {
      if (!visible(&parts[k].rows[i])) continue;
      char head[160];
      row_head(&parts[k].rows[i], parts[k].prefix, head, sizeof(head));
      headw = TP_MAX(headw, strlen(head));
    }
  headw = TP_MIN(headw, (size_t)34);
  size_t indent = 2 + headw + 2;
  /* Groups in the order they first appear, across the parts. */
  const char *groups[64];
  size_t ng = 0;
  for (size_t k = 0; k < n_parts; k++)
    for (size_t i = 0; i < parts[k].n; i++) {
      const char *g = parts[k].rows[i].group ? parts[k].rows[i].group : "Options";
      if (!visible(&parts[k].rows[i])) continue;
      bool seen = false;
      for (size_t j = 0; j < ng; j++) seen |= strcmp(groups[j], g) == 0;
      if (!seen && ng < TP_ARRAY_LEN(groups)) groups[ng++] = g;
    }
  for (size_t gi = 0; gi < ng; gi++) {
    fprintf(out, "%s%s:\n", gi ? "\n" : "", groups[gi]);
    for (size_t k = 0; k < n_parts; k++)
      for (size_t i = 0; i < parts[k].n; i++) {
        const tp_setting *s = &parts[k].rows[i];
        const char *g = s->group ? s->group : "Options";
        if (!visible(s) || strcmp(g, groups[gi]) != 0) continue;
        char head[160], dflt[256], text[1400];
        row_head(s, parts[k].prefix, head, sizeof(head));
        row_default(s, parts[k].base, dflt, sizeof(dflt));
        snprintf(text, sizeof(text), "%s%s%s%s%s", status_word(s), s->help ? s->help : "", dflt[0] ? " [default: " : "",
                 dflt, dflt[0] ? "]" : "");
        if (strlen(head) > headw) {
          fprintf(out, "  %s\n%*s", head, (int)indent, "");
        } else {
          fprintf(out, "  %-*s  ", (int)headw, head);
        }
        wrap(out, text, indent, indent, width);
      }
  }
}

/* roff: a backslash doubled, a hyphen that is an option's made a minus, a
 * line that would start with a control character guarded. */
static void roff(FILE *out, const char *s) {
  if (*s == '.' || *s == '\'') fputs("\\&", out);
  for (; *s; s++) {
    if (*s == '\\')
      fputs("\\e", out);
    else if (*s == '-')
      fputs("\\-", out);
    else
      fputc(*s, out);
  }
}

void tp_settings_man(FILE *out, const tp_settings_part *parts, size_t n_parts) {
  const char *last_group = NULL;
  for (size_t k = 0; k < n_parts; k++)
    for (size_t i = 0; i < parts[k].n; i++) {
      const tp_setting *s = &parts[k].rows[i];
      if (!visible(s)) continue;
      const char *g = s->group ? s->group : "Options";
      if (!last_group || strcmp(g, last_group) != 0) {
        fputs(".SS ", out);
        roff(out, g);
        fputc('\n', out);
        last_group = g;
      }
      fputs(".TP\n.B ", out);
      flag_iter it = {s->flags, parts[k].prefix};
      char f[128];
      bool first = true;
      while (tp__settings_next_flag(&it, f, sizeof(f))) {
        if (!first) fputs(", ", out);
        roff(out, f);
        first = false;
      }
      if (takes_value(s)) {
        fputs(" \\fI", out);
        roff(out, s->arg ? s->arg : "VALUE");
        fputs("\\fR", out);
      }
      fputc('\n', out);
      roff(out, status_word(s));
      roff(out, s->help ? s->help : "");
      char dflt[256];
      row_default(s, parts[k].base, dflt, sizeof(dflt));
      if (dflt[0]) {
        fputs(" Default: ", out);
        roff(out, dflt);
        fputc('.', out);
      }
      if (s->example) {
        fputs(" Example: \\fB", out);
        char ex[128];
        tp__settings_canonical_flag(s, parts[k].prefix, ex, sizeof(ex));
        roff(out, ex);
        fputc(' ', out);
        roff(out, s->example);
        fputs("\\fR.", out);
      }
      fputc('\n', out);
    }
}

/* ---- completions ----------------------------------------------------------------------- */

/* The words a value completes to: the canonical choice names. */
static void choice_words(const tp_setting *s, char *out, size_t outlen) {
  size_t used = 0;
  out[0] = 0;
  choice_iter it = {s->choices, 0};
  const char *name;
  size_t len;
  int idx;
  bool alias;
  while (tp__settings_next_choice(&it, &name, &len, &idx, &alias))
    if (!alias) tp__settings_app(out, outlen, &used, "%s%.*s", used ? " " : "", (int)len, name);
}

static void bash_command(FILE *out, const tp_settings_command *c) {
  fprintf(out, "    %s)\n      case \"$prev\" in\n", c->name);
  for (size_t k = 0; k < c->n_parts; k++)
    for (size_t i = 0; i < c->parts[k].n; i++) {
      const tp_setting *s = &c->parts[k].rows[i];
      if (!visible(s) || !takes_value(s)) continue;
      if (!(s->flags_mask & (TP_SETF_FILE | TP_SETF_DIR)) && s->type != TP_SET_ENUM) continue;
      flag_iter it = {s->flags, c->parts[k].prefix};
      char f[128];
      bool first = true;
      fputs("        ", out);
      while (tp__settings_next_flag(&it, f, sizeof(f))) {
        fprintf(out, "%s%s", first ? "" : "|", f);
        first = false;
      }
      if (s->type == TP_SET_ENUM) {
        char words[512];
        choice_words(s, words, sizeof(words));
        fprintf(out, ") COMPREPLY=($(compgen -W \"%s\" -- \"$cur\")); return ;;\n", words);
      } else {
        fprintf(out, ") COMPREPLY=($(compgen -%s -- \"$cur\")); return ;;\n",
                (s->flags_mask & TP_SETF_DIR) ? "d" : "f");
      }
    }
  fputs("      esac\n      opts=\"", out);
  bool first = true;
  for (size_t k = 0; k < c->n_parts; k++)
    for (size_t i = 0; i < c->parts[k].n; i++) {
      const tp_setting *s = &c->parts[k].rows[i];
      if (!visible(s)) continue;
      flag_iter it = {s->flags, c->parts[k].prefix};
      char f[128];
      while (tp__settings_next_flag(&it, f, sizeof(f))) {
        if (f[1] != '-') continue;
        fprintf(out, "%s%s", first ? "" : " ", f);
        first = false;
      }
    }
  fputs(" --help\" ;;\n", out);
}

static void zsh_quote(FILE *out, const char *s) {
  for (; *s; s++) {
    if (*s == '\'')
      fputs("'\\''", out);
    else if (*s == '[' || *s == ']' || *s == ':')
      fprintf(out, "\\%c", *s);
    else
      fputc(*s, out);
  }
}

static void zsh_command(FILE *out, const tp_settings_command *c) {
  fprintf(out, "    %s)\n      _arguments \\\n", c->name);
  for (size_t k = 0; k < c->n_parts; k++)
    for (size_t i = 0; i < c->parts[k].n; i++) {
      const tp_setting *s = &c->parts[k].rows[i];
      if (!visible(s)) continue;
      flag_iter it = {s->flags, c->parts[k].prefix};
      char f[128];
      while (tp__settings_next_flag(&it, f, sizeof(f))) {
        fprintf(out, "        '%s%s[", s->type == TP_SET_STR_LIST ? "*" : "", f);
        zsh_quote(out, s->help ? s->help : "");
        fputc(']', out);
        if (takes_value(s)) {
          fputs(":", out);
          zsh_quote(out, s->arg ? s->arg : "value");
          if (s->type == TP_SET_ENUM) {
            char words[512];
            choice_words(s, words, sizeof(words));
            fprintf(out, ":(%s)", words);
          } else if (s->flags_mask & TP_SETF_DIR) {
            fputs(":_directories", out);
          } else if (s->flags_mask & TP_SETF_FILE) {
            fputs(":_files", out);
          } else {
            fputs(": ", out);
          }
        }
        fputs("' \\\n", out);
      }
    }
  fputs("        '(-h --help)'{-h,--help}'[show the help]' ;;\n", out);
}

int tp_settings_completion(FILE *out, const char *shell, const char *program, const tp_settings_command *cmds,
                           size_t n_cmds) {
  if (strcmp(shell, "bash") == 0) {
    fprintf(out, "# bash completion for %s (generated from its settings tables)\n", program);
    fprintf(out, "_%s() {\n  local cur prev opts\n  cur=\"${COMP_WORDS[COMP_CWORD]}\"\n"
                 "  prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n  if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
                 "    COMPREPLY=($(compgen -W \"", program);
    for (size_t i = 0; i < n_cmds; i++) fprintf(out, "%s%s", i ? " " : "", cmds[i].name);
    fputs(" --help --version\" -- \"$cur\"))\n    return\n  fi\n  case \"${COMP_WORDS[1]}\" in\n", out);
    for (size_t i = 0; i < n_cmds; i++) bash_command(out, &cmds[i]);
    fputs("    *) return ;;\n  esac\n  COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n}\n", out);
    fprintf(out, "complete -F _%s %s\n", program, program);
    return 0;
  }
  if (strcmp(shell, "zsh") == 0) {
    fprintf(out, "#compdef %s\n# zsh completion for %s (generated from its settings tables)\n", program, program);
    fprintf(out, "_%s() {\n  local context state line\n  if (( CURRENT == 2 )); then\n    compadd -- ", program);
    for (size_t i = 0; i < n_cmds; i++) fprintf(out, "%s%s", i ? " " : "", cmds[i].name);
    fputs(" --help --version\n    return\n  fi\n  shift words\n  (( CURRENT-- ))\n  case \"$words[1]\" in\n", out);
    for (size_t i = 0; i < n_cmds; i++) zsh_command(out, &cmds[i]);
    fprintf(out, "  esac\n}\n_%s \"$@\"\n", program);
    return 0;
  }
  return TP_EINVAL;
}
