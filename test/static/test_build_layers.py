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
    "sys/eventfd.h", "sys/ioctl.h", "sys/mman.h", "sys/socket.h", "sys/stat.h", "sys/time.h",
    "sys/timerfd.h", "sys/types.h", "sys/uio.h", "sys/wait.h", "time.h", "unistd.h", "assert.h",
    "float.h", "stdnoreturn.h", "sys/random.h", "getopt.h", "locale.h", "setjmp.h",
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


def main():
    src = sys.argv[1]
    libs, tests, ups = {}, [], []
    for arg in sys.argv[2:]:
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

    folders = {d: os.path.join(src, "lib", d) for d in os.listdir(os.path.join(src, "lib"))
               if d != "include" and os.path.isdir(os.path.join(src, "lib", d))}
    folders["mock"] = os.path.join(src, "mock")
    n, failed = 0, 0

    def report(ok, what, why):
        nonlocal n, failed
        n += 1
        print("%s %d - %s" % ("ok" if ok else "not ok", n, what))
        if not ok:
            failed += 1
            for w in why:
                print("#   " + w)

    closure = {}

    def below(layer, seen=()):
        if layer in closure:
            return closure[layer]
        if layer in seen or layer not in libs:
            return set()
        out = set()
        for b in libs[layer][0]:
            out |= {b} | below(b, seen + (layer,))
        closure[layer] = out
        return out

    for layer in sorted(folders):
        path = folders[layer]
        if layer not in libs:
            report(False, "%s is one library" % layer, ["no library builds the folder %s" % os.path.relpath(path, src)])
            continue
        decl_below, decl_ext, sources = libs[layer]
        why = []
        files = sorted(f for f in os.listdir(path) if f.endswith((".c", ".h")))
        c_files = {f for f in files if f.endswith(".c")}
        for f in sorted(c_files - set(sources)):
            why.append("%s is in the folder but not in its library" % f)
        for f in sorted(set(sources) - c_files):
            why.append("%s is in the library but not in the folder" % f)
        report(not why, "%s is one library with every file of its folder" % layer, why)

        borrowed = {u[2] for u in ups if u[1] == layer}
        inc_layers, exts, unknown = scan([os.path.join(path, f) for f in files if f not in borrowed],
                                         set(folders), path)
        inc_layers.discard(layer)
        why = ["includes %s but does not link it" % x for x in sorted(inc_layers - decl_below)]
        why += ["links %s but includes none of its headers" % x for x in sorted(decl_below - inc_layers)]
        report(not why, "%s links exactly the layers it includes" % layer, why)

        why = ["includes the headers of %s but does not declare it" % x for x in sorted(exts - decl_ext)]
        why += ["declares %s but includes none of its headers" % x for x in sorted(decl_ext - exts)]
        why += ["includes %s, a header of no known dependency (add it to EXTERNAL or SYSTEM)" % u
                for u in sorted(unknown)]
        report(not why, "%s declares exactly the external dependencies it includes" % layer, why)
    for layer in sorted(set(libs) - set(folders)):
        report(False, "library %s is a folder" % layer, ["no folder lib/%s" % layer])

    for layer in sorted(libs):
        below(layer)
        cyc = layer in below(layer)
        report(not cyc, "%s is not below itself" % layer, ["its dependencies lead back to it"])

    for layer, folder, name, decl_below, decl_ext in ups:
        path = os.path.join(folders.get(folder, os.path.join(src, "lib", folder)), name)
        if not os.path.exists(path):
            report(False, "%s links %s/%s" % (layer, folder, name), ["no such file"])
            continue
        inc_layers, exts, unknown = scan([path], set(folders), os.path.dirname(path))
        inc_layers.discard(folder)
        why = ["includes %s but does not link it" % x for x in sorted(inc_layers - decl_below)]
        why += ["links %s but includes none of its headers" % x for x in sorted(decl_below - inc_layers)]
        why += ["includes the headers of %s but does not declare it" % x for x in sorted(exts - decl_ext)]
        why += ["declares %s but includes none of its headers" % x for x in sorted(decl_ext - exts)]
        why += ["includes %s, a header of no known dependency" % u for u in sorted(unknown)]
        if layer not in below(folder):
            why.append("%s is not above %s: link the layer, not one of its files" % (folder, layer))
        report(not why, "%s/%s, linked by %s, declares exactly what it includes" % (folder, name, layer), why)
        # Stated, not hidden: TAP's TODO keeps it in every test log until the
        # definitions move down and the exception goes.
        print("not ok %d - %s links no file of a layer above it # TODO it links %s/%s"
              % (n + 1, layer, folder, name))
        n += 1

    for kind, rel, linked in tests:
        path = os.path.join(src, rel)
        why = []
        if not os.path.exists(path):
            report(False, "%s links only its layer" % rel, ["no such file"])
            continue
        if kind == "unit" and len(linked) != 1:
            why.append("a unit test links one layer, not %s" % ",".join(linked) or "none")
        reach = set()
        for layer in linked:
            if layer not in libs:
                why.append("links %s, which is no layer" % layer)
                continue
            reach |= {layer} | below(layer)
            for other in linked:
                if other != layer and other in below(layer):
                    why.append("links %s twice: %s is below %s" % (other, other, layer))
        inc_layers, _, _ = scan([path], set(folders), None)
        for layer in sorted(set(linked) - inc_layers):
            why.append("links %s, a layer above the code it tests (it includes none of its headers)" % layer)
        for layer in sorted(inc_layers - reach):
            why.append("includes %s, a layer it does not link (above its own, or beside it)" % layer)
        report(not why, "%s links only the layer it tests (%s)" % (rel, ",".join(linked)), why)
    print("1..%d" % n)
    return 1 if failed or n == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
