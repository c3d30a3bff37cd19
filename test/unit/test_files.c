/* tp_files: output paths checked before a run (issue #13).  Builds a small
 * tree in a temporary directory and asks about paths in it.  Permission
 * cases are skipped as root, who may write anywhere. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
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
  /* Links are followed to the file they name: relative ones from their
   * own directory, chains, a link to a file not made yet; a loop is an
   * error. */
  symlink("../file", at("dir/rel"));
  symlink(at("dir/rel"), at("abs"));
  symlink("dir/later.json", at("dangling"));
  symlink("loop2", at("loop1"));
  symlink("loop1", at("loop2"));
  char *t = tp_resolve_target(at("dir/rel"));
  CHECK(t && strcmp(t, at("dir/../file")) == 0, "resolve: a relative link from its own directory (%s)", t);
  free(t);
  t = tp_resolve_target(at("abs"));
  CHECK(t && strcmp(t, at("dir/../file")) == 0, "resolve: a chain of two links (%s)", t);
  free(t);
  t = tp_resolve_target(at("dangling"));
  CHECK(t && strcmp(t, at("dir/later.json")) == 0, "resolve: a link to a file not made yet (%s)", t);
  free(t);
  t = tp_resolve_target(at("file"));
  CHECK(t && strcmp(t, at("file")) == 0, "resolve: a file is itself");
  free(t);
  errno = 0;
  t = tp_resolve_target(at("loop1"));
  CHECK(!t && errno == ELOOP, "resolve: a loop of links is ELOOP");
  free(t);
  CHECK(tp_file_check_writable(at("dangling"), why, sizeof(why)) == 0,
        "file: a link to a new file in a writable directory");
  symlink("missing/x.json", at("dangling2"));
  CHECK(tp_file_check_writable(at("dangling2"), why, sizeof(why)) == TP_EIO && strstr(why, "missing"),
        "file: a link into a missing directory names it (%s)", why);

  /* What an output may be: files and new paths are replaced through a
   * rename; FIFOs and character devices written in place; directories,
   * sockets refused with their kind named. */
  CHECK_INT(tp_target_kind_of(at("file"), NULL, 0), TP_TARGET_FILE, "kind: a regular file");
  CHECK_INT(tp_target_kind_of(at("nothing.json"), NULL, 0), TP_TARGET_FILE, "kind: a new path");
  CHECK_INT(tp_target_kind_of("/dev/null", NULL, 0), TP_TARGET_STREAM, "kind: /dev/null is written in place");
  mkfifo(at("fifo"), 0600);
  CHECK_INT(tp_target_kind_of(at("fifo"), NULL, 0), TP_TARGET_STREAM, "kind: a FIFO is written in place");
  CHECK(tp_file_check_writable(at("fifo"), why, sizeof(why)) == 0, "file: a FIFO is accepted");
  why[0] = 0;
  CHECK(tp_target_kind_of(at("dir"), why, sizeof(why)) == TP_TARGET_REFUSED && strstr(why, "directory"),
        "kind: a directory is refused (%s)", why);
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", at("sock"));
  if (s >= 0 && bind(s, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
    why[0] = 0;
    CHECK(tp_file_check_writable(at("sock"), why, sizeof(why)) == TP_EIO && strstr(why, "socket"),
          "file: a socket is refused, its kind named (%s)", why);
  }
  if (s >= 0) close(s);

  /* A full disk's words name the directory (as the file system knows it)
   * and the file. */
  char want[600], real[512];
  CHECK(tp_write_error(why, sizeof(why), at("dir/../file"), ENOSPC) == 1, "full: ENOSPC is a full disk");
  snprintf(want, sizeof(want), "no space left on %s (file not written whole)",
           realpath(root, real) ? real : root);
  CHECK_STR(why, want, "full: the directory resolved and the file named");
  CHECK(tp_write_error(why, sizeof(why), at("x"), EDQUOT) == 1 && strstr(why, "no space left on"),
        "full: a quota is a full disk too");
  CHECK(tp_write_error(why, sizeof(why), at("x"), EACCES) == 0 && strstr(why, strerror(EACCES)) &&
            strstr(why, at("x")),
        "full: another error is said as it is (%s)", why);

  const char *links[] = {"dir/rel", "abs", "dangling", "dangling2", "loop1", "loop2", "fifo", "sock"};
  for (size_t i = 0; i < TP_ARRAY_LEN(links); i++) unlink(at(links[i]));
  unlink(at("file"));
  rmdir(at("dir"));
  rmdir(root);
  return tp_test_done();
}
