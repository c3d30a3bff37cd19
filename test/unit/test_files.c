/* tp_files: output paths checked before a run (issue #13).  Builds a small
 * tree in a temporary directory and asks about paths in it.  Permission
 * cases are skipped as root, who may write anywhere. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tp_test.h"
#include "util/tp_common.h"
#include "util/tp_files.h"

static char root[256];

static const char *at(const char *rel) {
  static char buf[4][512];
  static int k;
  k = (k + 1) % 4;
  snprintf(buf[k], sizeof(buf[k]), "%s/%s", root, rel);
  return buf[k];
}

int main(void) {
  snprintf(root, sizeof(root), "/tmp/tp_files_XXXXXX");
  if (!mkdtemp(root)) return 1;
  mkdir(at("dir"), 0755);
  FILE *f = fopen(at("file"), "w");
  fputs("x", f);
  fclose(f);

  char why[512];
  struct {
    const char *rel;
    int want;
    const char *phrase;
  } files[] = {
      {"new.json", 0, NULL},
      {"file", 0, NULL},
      {"dir/new.json", 0, NULL},
      {"dir", TP_EIO, "is a directory"},
      {"missing/new.json", TP_EIO, "No such file"},
      {"file/new.json", TP_EIO, "is not a directory"},
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(files); i++) {
    why[0] = 0;
    int rv = tp_file_check_writable(at(files[i].rel), why, sizeof(why));
    CHECK(rv == files[i].want && (!files[i].phrase || strstr(why, files[i].phrase)),
          "file %s: %s%s", files[i].rel, files[i].want ? "refused: " : "accepted", files[i].phrase ? files[i].phrase : "");
    if (rv != files[i].want || (files[i].phrase && !strstr(why, files[i].phrase))) printf("#   why: %s\n", why);
  }
  CHECK(tp_file_check_writable("", why, sizeof(why)) == TP_EIO, "file: an empty path is refused");
  CHECK(tp_file_check_writable("/dev/null", why, sizeof(why)) == 0, "file: /dev/null is accepted");

  struct {
    const char *rel;
    int want;
    const char *phrase;
  } dirs[] = {
      {"dir", 0, NULL},
      {"dir/", 0, NULL},
      {"dir/a/b/c", 0, NULL},
      {"brand/new", 0, NULL},
      {"file", TP_EIO, "is not a directory"},
      {"file/sub", TP_EIO, "is not a directory"},
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(dirs); i++) {
    why[0] = 0;
    int rv = tp_dir_check_creatable(at(dirs[i].rel), why, sizeof(why));
    CHECK(rv == dirs[i].want && (!dirs[i].phrase || strstr(why, dirs[i].phrase)),
          "directory %s: %s%s", dirs[i].rel, dirs[i].want ? "refused: " : "accepted", dirs[i].phrase ? dirs[i].phrase : "");
    if (rv != dirs[i].want || (dirs[i].phrase && !strstr(why, dirs[i].phrase))) printf("#   why: %s\n", why);
  }
  CHECK(tp_dir_check_creatable("relative/new/dir", why, sizeof(why)) == 0,
        "directory: a relative path under the working directory is accepted");

  if (geteuid() != 0) {
    mkdir(at("locked"), 0555);
    CHECK(tp_file_check_writable(at("locked/x"), why, sizeof(why)) == TP_EIO && strstr(why, "not writable"),
          "file in a read-only directory: refused, not writable");
    CHECK(tp_dir_check_creatable(at("locked/sub"), why, sizeof(why)) == TP_EIO && strstr(why, "not writable"),
          "directory under a read-only one: refused, not writable");
    rmdir(at("locked"));
  }
  unlink(at("file"));
  rmdir(at("dir"));
  rmdir(root);
  return tp_test_done();
}
