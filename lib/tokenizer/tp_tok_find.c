/* Finding a tokenizer by model name in the Hugging Face cache (see
 * tp_tok_find.h for the layout).  Only the lookup lives here; loading the
 * directory found is tp_tok_load's.  Every path tried is remembered, so a
 * miss can say exactly where tokperf looked: a cache in an unexpected place
 * (a different HF_HOME under sudo or in a container) is the usual reason. */
#include "tokenizer/tp_tok_find.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define REPO_ID_MAX 96
/* A ref file holds one commit hash (40 hex digits today); anything much
 * longer is not a ref file. */
#define REF_MAX 128

const char *tp_tok_env_process(void *ud, const char *name) {
  (void)ud;
  return getenv(name);
}

static bool repo_char(int c) {
  return isalnum(c) || c == '-' || c == '_' || c == '.';
}

static bool repo_part_ok(const char *s, size_t n) {
  if (n == 0 || s[0] == '-' || s[0] == '.' || s[n - 1] == '-' || s[n - 1] == '.') return false;
  for (size_t i = 0; i < n; i++) {
    if (!repo_char((unsigned char)s[i])) return false;
    if (i > 0 && (s[i] == '-' || s[i] == '.') && s[i - 1] == s[i]) return false; /* "--", ".." */
  }
  return true;
}

bool tp_tok_is_repo_id(const char *name) {
  if (name == NULL) return false;
  size_t n = strlen(name);
  const char *slash = strchr(name, '/');
  if (n > REPO_ID_MAX || slash == NULL || strchr(slash + 1, '/') != NULL) return false;
  return repo_part_ok(name, (size_t)(slash - name)) &&
         repo_part_ok(slash + 1, n - (size_t)(slash - name) - 1);
}

static const char *env_get(tp_tok_env_fn env, void *ud, const char *name) {
  const char *v = env(ud, name);
  return v != NULL && v[0] != '\0' ? v : NULL; /* set but empty counts as unset */
}

/* Appends a path from the environment with a leading "~" expanded, as
 * huggingface_hub does with os.path.expanduser. */
static int append_expanded(tp_buf *out, const char *path, tp_tok_env_fn env, void *ud) {
  const char *home = env_get(env, ud, "HOME");
  if (path[0] == '~' && (path[1] == '/' || path[1] == '\0') && home != NULL)
    return tp_buf_printf(out, "%s%s", home, path + 1);
  return tp_buf_append_str(out, path);
}

static void trim_slashes(tp_buf *b) {
  while (b->len > 1 && b->data[b->len - 1] == '/') b->data[--b->len] = '\0';
}

int tp_tok_hub_cache_dir(tp_tok_env_fn env, void *ud, tp_buf *out, const char **from) {
  /* In huggingface_hub's order of precedence; the first that is set
   * decides, the others are not consulted. */
  static const struct {
    const char *var, *tail;
  } vars[] = {
      {"HF_HUB_CACHE", ""},
      {"HUGGINGFACE_HUB_CACHE", ""},
      {"HF_HOME", "/hub"},
      {"XDG_CACHE_HOME", "/huggingface/hub"},
      {"HOME", "/.cache/huggingface/hub"},
  };
  for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
    const char *v = env_get(env, ud, vars[i].var);
    if (v == NULL) continue;
    tp_buf val;
    tp_buf_init(&val);
    int rv = append_expanded(&val, v, env, ud);
    if (rv == 0) {
      trim_slashes(&val);
      rv = tp_buf_printf(out, "%s%s", (char *)val.data, vars[i].tail);
    }
    tp_buf_fini(&val);
    if (from != NULL) *from = vars[i].var;
    return rv;
  }
  return TP_ENOTFOUND;
}

static bool is_commit_hash(const char *s) {
  size_t n = 0;
  for (; s[n] != '\0'; n++)
    if (!isxdigit((unsigned char)s[n]) || isupper((unsigned char)s[n])) return false;
  return n == 40;
}

/* A revision is a path below refs/ (branches and tags such as main, v1.0,
 * refs/pr/1); one that could climb out of the repository is refused. */
static bool revision_ok(const char *rev) {
  return rev[0] != '/' && strstr(rev, "..") == NULL && strchr(rev, '\\') == NULL;
}

static bool is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && !S_ISDIR(st.st_mode);
}

static bool is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Reads the commit hash from a ref file into hash (REF_MAX bytes).
 * Returns 0, or a short reason for the message. */
static const char *read_ref(const char *path, char *hash) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return errno == ENOENT ? "missing" : strerror(errno);
  size_t n = fread(hash, 1, REF_MAX - 1, f);
  fclose(f);
  hash[n] = '\0';
  while (n > 0 && isspace((unsigned char)hash[n - 1])) hash[--n] = '\0';
  if (n == 0 || n == REF_MAX - 1) return "does not hold a commit hash";
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)hash[i])) return "does not hold a commit hash";
  return NULL;
}

/* One "PATH (why)" entry of the places looked at. */
static int place(tp_buf *places, const char *path, const char *why) {
  return tp_buf_printf(places, "%s%s (%s)", places->len ? "; " : "", path, why);
}

/* Looks in one snapshot directory; on success leaves its path in found. */
static int probe_snapshot(tp_buf *snap, tp_buf *places, bool *found) {
  static const char *const files[] = {"tokenizer.json", "tokenizer.model"};
  *found = false;
  if (!is_dir((char *)snap->data)) return place(places, (char *)snap->data, "missing");
  size_t base = snap->len;
  for (size_t i = 0; i < 2; i++) {
    int rv = tp_buf_printf(snap, "/%s", files[i]);
    if (rv != 0) return rv;
    bool ok = is_file((char *)snap->data);
    if (!ok && (rv = place(places, (char *)snap->data, "missing")) != 0) return rv;
    snap->len = base;
    snap->data[base] = '\0';
    if (ok) {
      *found = true;
      return 0;
    }
  }
  return 0;
}

static int not_found(const char *name, const char *rev, bool rev_given, const char *from, const tp_buf *cache,
                     const tp_buf *places, char *err, size_t errlen) {
  char revarg[160] = "";
  if (rev_given) snprintf(revarg, sizeof(revarg), " --revision %s", rev);
  tp_seterr(err, errlen,
            "tokenizer '%s' not found: it is no local file or directory, and revision '%s' of it is not "
            "in the Hugging Face cache %s (from %s).  Looked at: %s.  Fetch the files tokperf reads (once, "
            "online): hf download %s tokenizer.json tokenizer_config.json%s (older huggingface_hub: "
            "huggingface-cli download, same arguments; a model without a tokenizer.json: tokenizer.model "
            "instead), or pass the model's directory",
            name, rev, cache->len ? (char *)cache->data : "(none)", from, (char *)places->data, name, revarg);
  return TP_ENOTFOUND;
}

static int lookup(const char *name, const char *rev, bool rev_given, tp_tok_env_fn env, void *ud,
                  tp_buf *cache, tp_buf *places, tp_buf *snap, bool *found, char *err, size_t errlen) {
  const char *from = "nowhere: neither HF_HUB_CACHE, HF_HOME, XDG_CACHE_HOME nor HOME is set";
  int rv = place(places, name, "no such file or directory");
  if (rv == 0) rv = tp_tok_hub_cache_dir(env, ud, cache, &from);
  if (rv == TP_ENOTFOUND) return not_found(name, rev, rev_given, from, cache, places, err, errlen);
  if (rv != 0) return rv;

  const char *slash = strchr(name, '/');
  tp_buf repo;
  tp_buf_init(&repo);
  rv = tp_buf_printf(&repo, "%s/models--%.*s--%s", (char *)cache->data, (int)(slash - name), name, slash + 1);
  if (rv == 0 && is_commit_hash(rev)) {
    rv = tp_buf_printf(snap, "%s/snapshots/%s", (char *)repo.data, rev);
    if (rv == 0) rv = probe_snapshot(snap, places, found);
  } else if (rv == 0) {
    char hash[REF_MAX];
    tp_buf ref;
    tp_buf_init(&ref);
    rv = tp_buf_printf(&ref, "%s/refs/%s", (char *)repo.data, rev);
    const char *why = rv == 0 ? read_ref((char *)ref.data, hash) : NULL;
    if (rv == 0 && why != NULL) rv = place(places, (char *)ref.data, why);
    if (rv == 0 && why == NULL) {
      rv = tp_buf_printf(snap, "%s/snapshots/%s", (char *)repo.data, hash);
      if (rv == 0) rv = probe_snapshot(snap, places, found);
    }
    tp_buf_fini(&ref);
  }
  tp_buf_fini(&repo);
  if (rv != 0 || *found) return rv;
  return not_found(name, rev, rev_given, from, cache, places, err, errlen);
}

int tp_tok_find(const char *name, const char *revision, tp_tok_env_fn env, void *ud, char **path, char *err,
                size_t errlen) {
  *path = NULL;
  bool rev_given = revision != NULL && revision[0] != '\0' && strcmp(revision, "main") != 0;
  const char *rev = rev_given ? revision : "main";
  struct stat st;
  if (name == NULL || name[0] == '\0' || stat(name, &st) == 0 || !tp_tok_is_repo_id(name)) {
    /* A local path (or something tp_tok_load explains better) */
    *path = name != NULL ? tp_strndup(name, strlen(name)) : NULL;
    return name != NULL && *path == NULL ? TP_ENOMEM : 0;
  }
  if (!revision_ok(rev)) {
    tp_seterr(err, errlen,
              "tokenizer revision '%s' is not a branch, tag or commit hash (it must stay below refs/)", rev);
    return TP_EINVAL;
  }
  tp_buf cache, places, snap;
  bool found = false;
  tp_buf_init(&cache);
  tp_buf_init(&places);
  tp_buf_init(&snap);
  int rv = lookup(name, rev, rev_given, env, ud, &cache, &places, &snap, &found, err, errlen);
  if (rv == 0 && found) *path = tp_buf_steal(&snap, NULL);
  if (rv == TP_ENOMEM) tp_seterr(err, errlen, "cannot look up tokenizer '%s': out of memory", name);
  tp_buf_fini(&cache);
  tp_buf_fini(&places);
  tp_buf_fini(&snap);
  return rv;
}
