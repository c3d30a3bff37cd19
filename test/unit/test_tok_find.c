/* Tests for finding a tokenizer by model name in the Hugging Face cache
 * (tp_tok_find).  The environment is a table handed to the finder, and the
 * cache is a fake one built in a temporary folder with huggingface_hub's
 * layout: models--ORG--NAME/refs/REV holding a commit hash, and
 * snapshots/HASH/ holding the files. */
#include <errno.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tokenizer/tp_tok.h"
#include "tokenizer/tp_tok_find.h"
#include "tp_test.h"
#include "util/tp_common.h"

#define H1 "1111111111111111111111111111111111111111"
#define H2 "2222222222222222222222222222222222222222"

/* An environment: NULL-terminated name/value pairs. */
typedef struct env_tab {
  const char *kv[12];
} env_tab;

static const char *tab_env(void *ud, const char *name) {
  const env_tab *t = ud;
  for (size_t i = 0; t->kv[i] != NULL; i += 2)
    if (strcmp(t->kv[i], name) == 0) return t->kv[i + 1];
  return NULL;
}

static char g_root[] = "/tmp/tp-tok-find-XXXXXX";

static void mkdirs(const char *rel) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s", g_root, rel);
  for (char *p = path + strlen(g_root) + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    mkdir(path, 0755);
    *p = '/';
  }
  mkdir(path, 0755);
}

static void write_file(const char *rel, const char *text) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s", g_root, rel);
  char *slash = strrchr(path, '/');
  *slash = '\0';
  mkdirs(path + strlen(g_root) + 1);
  *slash = '/';
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    printf("Bail out! cannot write %s: %s\n", path, strerror(errno));
    exit(1);
  }
  fputs(text, f);
  fclose(f);
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(p);
}

static void test_repo_ids(void) {
  static const struct {
    const char *name;
    bool ok;
  } cases[] = {
      {"meta-llama/Llama-3.1-8B-Instruct", true},
      {"hf-internal-testing/llama-tokenizer", true},
      {"Qwen/Qwen2.5-0.5B", true},
      {"org_x/name.v2", true},
      {"gpt2", false},  /* bare names are not looked up */
      {"a/b/c", false}, /* a path, not a repo id */
      {"/abs/path", false},
      {"org/", false},
      {"/name", false},
      {"org/na--me", false},
      {"org/na..me", false},
      {"org/-name", false},
      {"org/name.", false},
      {"org/na me", false},
      {"./tokenizer.json", false},
      {"models/tokenizer.model", true}, /* shaped like one: looked up only when no such file exists */
      {"", false},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    CHECK(tp_tok_is_repo_id(cases[i].name) == cases[i].ok, "repo id '%s' is %s", cases[i].name,
          cases[i].ok ? "accepted" : "refused");
  char longname[128];
  memset(longname, 'a', sizeof(longname) - 1);
  longname[sizeof(longname) - 1] = '\0';
  longname[3] = '/';
  CHECK(!tp_tok_is_repo_id(longname), "a repo id over 96 bytes is refused");
}

static void test_cache_dir(void) {
  static const struct {
    env_tab env;
    const char *dir, *from;
  } cases[] = {
      {{{"HF_HUB_CACHE", "/c/hub", "HF_HOME", "/h", "HOME", "/home/u", NULL}}, "/c/hub", "HF_HUB_CACHE"},
      {{{"HUGGINGFACE_HUB_CACHE", "/old", "HF_HOME", "/h", NULL}}, "/old", "HUGGINGFACE_HUB_CACHE"},
      {{{"HF_HUB_CACHE", "/new", "HUGGINGFACE_HUB_CACHE", "/old", NULL}}, "/new", "HF_HUB_CACHE"},
      {{{"HF_HOME", "/h/", "XDG_CACHE_HOME", "/x", "HOME", "/home/u", NULL}}, "/h/hub", "HF_HOME"},
      {{{"XDG_CACHE_HOME", "/x", "HOME", "/home/u", NULL}}, "/x/huggingface/hub", "XDG_CACHE_HOME"},
      {{{"HOME", "/home/u", NULL}}, "/home/u/.cache/huggingface/hub", "HOME"},
      {{{"HF_HUB_CACHE", "", "HOME", "/home/u", NULL}}, "/home/u/.cache/huggingface/hub", "HOME"},
      {{{"HF_HOME", "~/hf", "HOME", "/home/u", NULL}}, "/home/u/hf/hub", "HF_HOME"},
      {{{"HF_HUB_CACHE", "/c/hub//", NULL}}, "/c/hub", "HF_HUB_CACHE"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    tp_buf b;
    tp_buf_init(&b);
    const char *from = NULL;
    int rv = tp_tok_hub_cache_dir(tab_env, (void *)&cases[i].env, &b, &from);
    char what[96];
    snprintf(what, sizeof(what), "cache dir, case %zu", i);
    CHECK_INT(rv, 0, what);
    CHECK_STR(rv == 0 ? (char *)b.data : NULL, cases[i].dir, what);
    CHECK_STR(from, cases[i].from, "the variable that decided is named");
    tp_buf_fini(&b);
  }
  env_tab none = {{NULL}};
  tp_buf b;
  tp_buf_init(&b);
  CHECK_INT(tp_tok_hub_cache_dir(tab_env, &none, &b, NULL), TP_ENOTFOUND,
            "no HOME and no variable: no cache");
  tp_buf_fini(&b);
}

/* Two caches: hub1 (named by HF_HUB_CACHE) and home/hub (under HF_HOME). */
static void build_caches(void) {
  write_file("hub1/models--org--a/refs/main", H1 "\n"); /* huggingface_hub writes no newline; be lenient */
  write_file("hub1/models--org--a/refs/v1", H2);
  write_file("hub1/models--org--a/snapshots/" H1 "/tokenizer.json", "{}");
  write_file("hub1/models--org--a/snapshots/" H1 "/tokenizer_config.json", "{}");
  write_file("hub1/models--org--a/snapshots/" H2 "/tokenizer.model", "x");
  write_file("hub1/models--org--norefs/snapshots/" H1 "/tokenizer.json", "{}");
  write_file("hub1/models--org--gone/refs/main", H2);
  write_file("hub1/models--org--weights/refs/main", H1);
  write_file("hub1/models--org--weights/snapshots/" H1 "/config.json", "{}");
  write_file("hub1/models--org--badref/refs/main", "../../etc\n");
  write_file("home/hub/models--org--a/refs/main", H2);
  write_file("home/hub/models--org--a/snapshots/" H2 "/tokenizer.model", "x");
  write_file("local/org/a/tokenizer.json", "{}");
}

static void test_find(void) {
  char hub1[512], home[512];
  snprintf(hub1, sizeof(hub1), "%s/hub1", g_root);
  snprintf(home, sizeof(home), "%s/home", g_root);
  env_tab both = {{"HF_HUB_CACHE", hub1, "HF_HOME", home, "HOME", "/nonexistent", NULL}};
  env_tab home_only = {{"HF_HOME", home, "HOME", "/nonexistent", NULL}};
  static const struct {
    int env; /* 0 both, 1 HF_HOME only */
    const char *name, *rev;
    int rv;
    const char *want; /* the directory found, relative to g_root */
  } cases[] = {
      {0, "org/a", NULL, 0, "hub1/models--org--a/snapshots/" H1},
      {0, "org/a", "main", 0, "hub1/models--org--a/snapshots/" H1},
      {0, "org/a", "", 0, "hub1/models--org--a/snapshots/" H1},
      {0, "org/a", "v1", 0, "hub1/models--org--a/snapshots/" H2},
      {0, "org/a", H2, 0, "hub1/models--org--a/snapshots/" H2}, /* a commit hash needs no ref */
      {1, "org/a", NULL, 0, "home/hub/models--org--a/snapshots/" H2},
      {0, "org/norefs", NULL, TP_ENOTFOUND, NULL},
      {0, "org/norefs", H1, 0, "hub1/models--org--norefs/snapshots/" H1},
      {0, "org/gone", NULL, TP_ENOTFOUND, NULL},
      {0, "org/weights", NULL, TP_ENOTFOUND, NULL},
      {0, "org/badref", NULL, TP_ENOTFOUND, NULL},
      {0, "org/a", "v9", TP_ENOTFOUND, NULL},
      {0, "org/a", "../../x", TP_EINVAL, NULL},
      {0, "org/unknown", NULL, TP_ENOTFOUND, NULL},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char err[2048] = "", want[1024], what[160];
    char *path = NULL;
    int rv = tp_tok_find(cases[i].name, cases[i].rev, tab_env,
                         cases[i].env ? (void *)&home_only : (void *)&both, &path, err, sizeof(err));
    snprintf(what, sizeof(what), "find %s at %s with %s", cases[i].name,
             cases[i].rev ? cases[i].rev : "(none)", cases[i].env ? "HF_HOME" : "HF_HUB_CACHE and HF_HOME");
    CHECK_INT(rv, cases[i].rv, what);
    if (rv != 0 && rv != cases[i].rv) printf("#   %s\n", err);
    if (cases[i].want != NULL) {
      snprintf(want, sizeof(want), "%s/%s", g_root, cases[i].want);
      CHECK_STR(path, want, what);
    } else {
      CHECK(path == NULL, "%s: no path on failure", what);
    }
    free(path);
  }
}

/* The message of a miss names each place looked at and the command. */
static void test_messages(void) {
  char hub1[512];
  snprintf(hub1, sizeof(hub1), "%s/hub1", g_root);
  env_tab env = {{"HF_HUB_CACHE", hub1, NULL}};
  static const struct {
    const char *name, *rev;
    const char *needles[4]; /* a leading '@' stands for the cache dir */
  } cases[] = {
      {"org/unknown",
       NULL,
       {"org/unknown (no such file or directory)", "@/models--org--unknown/refs/main (missing)",
        "hf download org/unknown tokenizer.json tokenizer_config.json (", "from HF_HUB_CACHE"}},
      {"org/norefs",
       "v2",
       {"@/models--org--norefs/refs/v2 (missing)", "tokenizer_config.json --revision v2",
        "huggingface-cli download", NULL}},
      {"org/gone", NULL, {"@/models--org--gone/snapshots/" H2 " (missing)", NULL}},
      {"org/weights",
       NULL,
       {"@/models--org--weights/snapshots/" H1 "/tokenizer.json (missing)",
        "@/models--org--weights/snapshots/" H1 "/tokenizer.model (missing)", NULL}},
      {"org/badref", NULL, {"@/models--org--badref/refs/main (does not hold a commit hash)", NULL}},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char err[2048] = "";
    char *path = NULL;
    tp_tok_find(cases[i].name, cases[i].rev, tab_env, &env, &path, err, sizeof(err));
    free(path);
    for (size_t k = 0; k < 4 && cases[i].needles[k] != NULL; k++) {
      char needle[1024];
      const char *n = cases[i].needles[k];
      snprintf(needle, sizeof(needle), "%s%s", n[0] == '@' ? hub1 : "", n + (n[0] == '@'));
      CHECK(strstr(err, needle) != NULL, "message for %s names '%s'", cases[i].name, needle);
      if (strstr(err, needle) == NULL) printf("#   message: %s\n", err);
    }
  }
  env_tab none = {{NULL}};
  char err[2048] = "";
  char *path = NULL;
  CHECK_INT(tp_tok_find("org/a", NULL, tab_env, &none, &path, err, sizeof(err)), TP_ENOTFOUND,
            "without HOME or any cache variable there is no cache");
  CHECK(strstr(err, "HF_HUB_CACHE") != NULL && strstr(err, "HOME") != NULL,
        "and the message says which variables were missing: %s", err);
}

/* A name that exists as a local path is a path, whatever the cache holds;
 * a missing path that is no repo id is handed back for tp_tok_load to
 * explain. */
static void test_local_paths(void) {
  char hub1[512], cwd[1024];
  snprintf(hub1, sizeof(hub1), "%s/hub1", g_root);
  env_tab env = {{"HF_HUB_CACHE", hub1, NULL}};
  if (getcwd(cwd, sizeof(cwd)) == NULL || chdir(g_root) != 0 || chdir("local") != 0) {
    printf("Bail out! chdir: %s\n", strerror(errno));
    exit(1);
  }
  char err[1024] = "";
  char *path = NULL;
  CHECK_INT(tp_tok_find("org/a", NULL, tab_env, &env, &path, err, sizeof(err)), 0, "a local org/a is found");
  CHECK_STR(path, "org/a", "a local directory wins over the cache");
  free(path);
  path = NULL;
  CHECK_INT(tp_tok_find("missing.model", NULL, tab_env, &env, &path, err, sizeof(err)), 0,
            "a missing file that is no repo id is passed on");
  CHECK_STR(path, "missing.model", "unchanged, for tp_tok_load to report");
  free(path);
  if (chdir(cwd) != 0) printf("# cannot return to %s\n", cwd);
}

/* tp_tok_load itself finds a name at main through the process
 * environment, with the words model copied into a fake snapshot. */
static void test_load_by_name(void) {
  const char *words = getenv("TP_WORDS_MODEL");
  if (words == NULL) {
    CHECK(1, "# SKIP TP_WORDS_MODEL not set (spm_train missing)");
    return;
  }
  char snap[1024], dst[1200], hub[600];
  snprintf(hub, sizeof(hub), "%s/proc-hub", g_root);
  snprintf(snap, sizeof(snap), "proc-hub/models--test-org--words/snapshots/%s", H1);
  write_file("proc-hub/models--test-org--words/refs/main", H1);
  mkdirs(snap);
  snprintf(dst, sizeof(dst), "%s/%s/tokenizer.model", g_root, snap);
  CHECK_INT(symlink(words, dst), 0, "snapshot file links to a blob, as in a real cache");
  setenv("HF_HUB_CACHE", hub, 1);
  tp_tok *t = NULL;
  char err[1024] = "";
  int rv = tp_tok_load(&t, "test-org/words", err, sizeof(err));
  CHECK_INT(rv, 0, "tp_tok_load('test-org/words') loads from the cache");
  if (rv) printf("#   %s\n", err);
  size_t n = 0;
  if (t) CHECK_INT(tp_tok_count(t, "time time", 9, &n), 0, "and counts");
  CHECK(n > 0, "some tokens counted (%zu)", n);
  tp_tok_free(t);
  t = NULL;
  rv = tp_tok_load(&t, "test-org/absent", err, sizeof(err));
  CHECK_INT(rv, TP_ENOTFOUND, "an absent name is not found");
  CHECK(strstr(err, "models--test-org--absent/refs/main") != NULL, "and the message says where: %s", err);
  unsetenv("HF_HUB_CACHE");
}

int main(void) {
  if (mkdtemp(g_root) == NULL) {
    printf("Bail out! mkdtemp: %s\n", strerror(errno));
    return 1;
  }
  build_caches();
  test_repo_ids();
  test_cache_dir();
  test_find();
  test_messages();
  test_local_paths();
  test_load_by_name();
  nftw(g_root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  return tp_test_done();
}
