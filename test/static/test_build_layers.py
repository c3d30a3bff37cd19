"""The build draws the architecture: one static library per layer, and each
test links only the layer it tests.

Meson hands this script the tables it builds from (lib/meson.build,
lib/run/meson.build, mock/meson.build, test/unit/meson.build,
test/fuzz/meson.build), so what is checked is what is linked:

  lib:LAYER:BELOW:EXTERNAL:SOURCES   a layer's library: the layers and the
                                     external dependencies it declares, and
                                     its .c files (comma-separated lists)
  test:KIND:FILE:LAYERS              a test program and the layers it links
  up:LAYER:FOLDER:FILE:BELOW:EXTERNAL  an upward dependency of the C code,
                                     stated until it is removed: LAYER links
                                     FILE of the layer FOLDER above it, built
                                     as a library of its own

A library must declare exactly the layers and the external dependencies its
own files include (no more: util/ never links libcurl; no less: a layer
reached only through another layer's declaration breaks when that one
changes), and hold every .c file of its folder.  A test must link only the
layers whose headers it includes, and include only what those layers (and
the layers below them) provide: a test that links a layer above the code it
tests fails here, and one that reaches a layer above the one it links fails
to link, or here if it uses only that layer's headers."""
import os
import re
import sys

# The headers of each external dependency, by the name meson's table gives
# the dependency.  A header that is in neither this table nor SYSTEM is an
# error: a new dependency is added here on purpose.
EXTERNAL = {
    "uv.h": "libuv",
    "math.h": "m",
    "pthread.h": "threads",
    "jansson.h": "jansson",
    "nghttp2/": "libnghttp2",
    "openssl/": "openssl",
    "curl/": "libcurl",
    "pcre2.h": "libpcre2-8",
    "utf8proc.h": "libutf8proc",
    "protobuf-c/": "libprotobuf-c",
    "mpi.h": "ompi-c",
    # Generated or our own, but outside lib/: the KServe v2 messages and the
    # sentencepiece shim.
    "grpc_service.pb-c.h": "proto",
    "tp_spm_shim.h": "spm_shim",
}
# The C library and the kernel's headers: no dependency to declare.
SYSTEM = {
    "arpa/inet.h", "ctype.h", "dirent.h", "errno.h", "fcntl.h", "inttypes.h", "limits.h", "netdb.h",
    "netinet/in.h", "netinet/tcp.h", "poll.h", "sched.h", "signal.h", "stdarg.h", "stdatomic.h",
    "stdbool.h", "stddef.h", "stdint.h", "stdio.h", "stdlib.h", "string.h", "strings.h", "sys/epoll.h",
    "sys/eventfd.h", "sys/ioctl.h", "sys/mman.h", "sys/resource.h", "sys/socket.h", "sys/stat.h", "sys/time.h",
    "sys/timerfd.h", "sys/types.h", "sys/uio.h", "sys/wait.h", "time.h", "unistd.h", "assert.h",
    "float.h", "stdnoreturn.h", "sys/random.h", "getopt.h", "locale.h", "setjmp.h", "linux/tcp.h", "linux/sockios.h", "linux/errqueue.h", "linux/net_tstamp.h", "poll.h",
    "sys/statvfs.h", "stdio_ext.h",
}
# Public headers that belong to one layer (the others, tokperf.h and the
# bottom layers' errors.h and parse.h, are shared declarations).
PUBLIC_LAYER = {"tokperf/settings.h": "config", "tokperf/mock.h": "mock"}

INCLUDE = re.compile(r'^\s*#\s*include\s+([<"])([^>"]+)[>"]', re.M)


def split(s):
    return [x for x in s.split(",") if x]


def external_of(name):
    for key, dep in EXTERNAL.items():
        if name == key or (key.endswith("/") and name.startswith(key)):
            return dep
    return None


def scan(paths, layers, own_dir):
    """The layers, external dependencies and unknown headers that files include."""
    inc_layers, exts, unknown = set(), set(), set()
    for path in paths:
        text = open(path, encoding="utf-8", errors="replace").read()
        for kind, name in INCLUDE.findall(text):
            top = name.split("/")[0] if "/" in name else None
            ext = external_of(name)
            if ext:
                exts.add(ext)
            elif kind == '"' and top in layers:
                inc_layers.add(top)
            elif kind == '"' and name in PUBLIC_LAYER:
                inc_layers.add(PUBLIC_LAYER[name])
            elif kind == '"' and (top == "tokperf" or name == "config.h"):
                pass
            elif kind == '"' and "/" not in name and own_dir and os.path.exists(os.path.join(own_dir, name)):
                pass  # a header of the same folder
            elif kind == '<' and name in SYSTEM:
                pass
            elif kind == '"' and "/" not in name:
                pass  # a test's own helper header (tp_test.h and the like)
            else:
                unknown.add(("<%s>" if kind == "<" else '"%s"') % name)
    return inc_layers, exts, unknown


class Tap:
    def __init__(self):
        self.n, self.failed = 0, 0

    def report(self, ok, what, why):
        self.n += 1
        print("%s %d - %s" % ("ok" if ok else "not ok", self.n, what))
        if not ok:
            self.failed += 1
            for w in why:
                print("#   " + w)

    def todo(self, what, why):
        # Stated, not hidden: TAP's TODO keeps it in every test log until it
        # is fixed and its exception goes.
        self.n += 1
        print("not ok %d - %s # TODO %s" % (self.n, what, why))


def parse_args(args):
    libs, ups, tests = {}, [], []
    for arg in args:
        parts = arg.split(":")
        if parts[0] == "lib" and len(parts) == 5:
            if parts[1] in libs:
                sys.exit("layer %s has two libraries" % parts[1])
            libs[parts[1]] = (set(split(parts[2])), set(split(parts[3])), split(parts[4]))
        elif parts[0] == "up" and len(parts) == 6:
            ups.append((parts[1], parts[2], parts[3], set(split(parts[4])), set(split(parts[5]))))
        elif parts[0] == "test" and len(parts) == 4:
            tests.append((parts[1], parts[2], split(parts[3])))
        else:
            sys.exit("bad argument: %s" % arg)
    return libs, ups, tests


def below_of(libs):
    """The layers each library reaches through its declarations."""
    out = {}

    def walk(layer, seen):
        got = set()
        for b in libs.get(layer, ((), ()))[0]:
            got.add(b)
            if b not in seen:
                got |= walk(b, seen | {b})
        return got
    for layer in libs:
        out[layer] = walk(layer, {layer})
    return out


def exact(what, included, declared):
    why = ["includes %s but does not declare it" % x for x in sorted(included - declared)]
    why += ["declares %s but includes none of its headers" % x for x in sorted(declared - included)]
    return ["%s: %s" % (what, w) for w in why]


def check_folder(tap, layer, path, lib, borrowed, folders):
    decl_below, decl_ext, sources = lib
    files = sorted(f for f in os.listdir(path) if f.endswith((".c", ".h")))
    c_files = {f for f in files if f.endswith(".c")}
    why = ["%s is in the folder but not in its library" % f for f in sorted(c_files - set(sources))]
    why += ["%s is in the library but not in the folder" % f for f in sorted(set(sources) - c_files)]
    tap.report(not why, "%s is one library with every file of its folder" % layer, why)

    inc_layers, exts, unknown = scan([os.path.join(path, f) for f in files if f not in borrowed],
                                     set(folders), path)
    inc_layers.discard(layer)
    tap.report(inc_layers == decl_below, "%s links exactly the layers it includes" % layer,
               exact("layer", inc_layers, decl_below))
    why = exact("dependency", exts, decl_ext)
    why += ["includes %s, a header of no known dependency (add it to EXTERNAL or SYSTEM)" % u
            for u in sorted(unknown)]
    tap.report(not why, "%s declares exactly the external dependencies it includes" % layer, why)


def check_up(tap, up, folders, below):
    layer, folder, name, decl_below, decl_ext = up
    path = os.path.join(folders.get(folder, folder), name)
    if not os.path.exists(path):
        tap.report(False, "%s links %s/%s" % (layer, folder, name), ["no such file"])
        return
    inc_layers, exts, unknown = scan([path], set(folders), os.path.dirname(path))
    inc_layers.discard(folder)
    why = exact("layer", inc_layers, decl_below) + exact("dependency", exts, decl_ext)
    why += ["includes %s, a header of no known dependency" % u for u in sorted(unknown)]
    if layer not in below.get(folder, set()):
        why.append("%s is not above %s: link the layer, not one of its files" % (folder, layer))
    tap.report(not why, "%s/%s, linked by %s, declares exactly what it includes" % (folder, name, layer), why)
    tap.todo("%s links no file of a layer above it" % layer, "it links %s/%s" % (folder, name))


def check_test(tap, src, test, folders, below):
    kind, rel, linked = test
    path = os.path.join(src, rel)
    if not os.path.exists(path):
        tap.report(False, "%s links only its layer" % rel, ["no such file"])
        return
    why = []
    if kind == "unit" and len(linked) != 1:
        why.append("a unit test links one layer, not %s" % (",".join(linked) or "none"))
    reach = set()
    for layer in linked:
        if layer not in below:
            why.append("links %s, which is no layer" % layer)
            continue
        reach |= {layer} | below[layer]
        why += ["links %s twice: it is below %s" % (o, layer) for o in linked if o != layer and o in below[layer]]
    inc_layers, _, _ = scan([path], set(folders), None)
    why += ["links %s, a layer above the code it tests (it includes none of its headers)" % x
            for x in sorted(set(linked) - inc_layers)]
    why += ["includes %s, a layer it does not link (above its own, or beside it)" % x
            for x in sorted(inc_layers - reach)]
    tap.report(not why, "%s links only the layer it tests (%s)" % (rel, ",".join(linked)), why)


def main():
    src = sys.argv[1]
    libs, ups, tests = parse_args(sys.argv[2:])
    lib_dir = os.path.join(src, "lib")
    folders = {d: os.path.join(lib_dir, d) for d in os.listdir(lib_dir)
               if d != "include" and os.path.isdir(os.path.join(lib_dir, d))}
    folders["mock"] = os.path.join(src, "mock")
    below = below_of(libs)
    tap = Tap()
    for layer in sorted(folders):
        if layer not in libs:
            tap.report(False, "%s is one library" % layer,
                       ["no library builds the folder %s" % os.path.relpath(folders[layer], src)])
            continue
        borrowed = {u[2] for u in ups if u[1] == layer}
        check_folder(tap, layer, folders[layer], libs[layer], borrowed, folders)
    for layer in sorted(set(libs) - set(folders)):
        tap.report(False, "library %s is a folder" % layer, ["no folder lib/%s" % layer])
    for layer in sorted(libs):
        tap.report(layer not in below[layer], "%s is not below itself" % layer,
                   ["its dependencies lead back to it"])
    for up in ups:
        check_up(tap, up, folders, below)
    for test in tests:
        check_test(tap, src, test, folders, below)
    print("1..%d" % tap.n)
    return 1 if tap.failed or tap.n == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
