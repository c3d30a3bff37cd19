"""The library's layers include only the layers below them.

Each folder of lib/ is a layer; a layer may include its own headers, the
layers listed for it here, and of the public headers only those listed (the
bottom layers see the error codes and value parsers, never tokperf.h, which
describes the run).  The mock server is a peer of the client, never inside
it: neither includes the other.  A new include across layers must be added
here on purpose."""
import os
import re
import sys

SRC = sys.argv[1] if len(sys.argv) > 1 else os.environ["TP_SOURCE_ROOT"]
LIB = os.path.join(SRC, "lib")

ALL_PUBLIC = {"tokperf/tokperf.h", "tokperf/errors.h", "tokperf/parse.h", "tokperf/settings.h", "tokperf/mock.h"}
BASE_PUBLIC = {"tokperf/errors.h", "tokperf/parse.h"}
ALLOWED = {
    "util": ({"util"}, BASE_PUBLIC),
    "config": ({"util"}, BASE_PUBLIC | {"tokperf/settings.h"}),
    "load": ({"util"}, BASE_PUBLIC),
    "record": ({"util"}, BASE_PUBLIC),
    "tokenizer": ({"util"}, BASE_PUBLIC),
    "transport": ({"util"}, BASE_PUBLIC),
    "dataset": ({"util", "tokenizer"}, BASE_PUBLIC),
    "api": ({"util", "transport"}, ALL_PUBLIC),
    "metrics": ({"util", "record"}, ALL_PUBLIC),
    "sched": ({"util"}, ALL_PUBLIC),
    "client": ({"util", "transport", "api"}, ALL_PUBLIC),
    "report": ({"util", "record", "metrics"}, ALL_PUBLIC),
    "run": ({"util", "config", "load", "record", "tokenizer", "transport", "dataset", "api", "metrics", "sched",
             "client", "report"}, ALL_PUBLIC),
}
# The mock server, a library of its own at the top of the tree: the bottom
# layers, the transport's framing and its own public header; no layer of the
# client library includes its internals (the run starts it through
# tokperf/mock.h).
MOCK = ({"util", "transport"}, BASE_PUBLIC | {"tokperf/mock.h"})

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
n = 0
failed = 0
dirs = [(layer, os.path.join(LIB, layer)) for layer in sorted(os.listdir(LIB))]
dirs.append(("mock", os.path.join(SRC, "mock")))
ALLOWED["mock"] = MOCK
for layer, path in dirs:
    if not os.path.isdir(path) or layer == "include":
        continue
    n += 1
    if layer not in ALLOWED:
        print("not ok %d - lib/%s is a layer with no rule in test/static/test_layers.py" % (n, layer))
        failed += 1
        continue
    layers, public = ALLOWED[layer]
    bad = []
    for name in sorted(os.listdir(path)):
        if not name.endswith((".c", ".h")):
            continue
        text = open(os.path.join(path, name), encoding="utf-8", errors="replace").read()
        for inc in INCLUDE.findall(text):
            if "/" not in inc:
                continue  # a header of the same folder
            top = inc.split("/")[0]
            if top == "tokperf":
                if inc not in public:
                    bad.append("%s includes %s" % (name, inc))
            elif top != layer and top not in layers:
                bad.append("%s includes %s" % (name, inc))
    if bad:
        failed += 1
        print("not ok %d - %s includes only the layers below it" % (n, os.path.relpath(path, SRC)))
        for b in bad:
            print("#   " + b)
    else:
        print("ok %d - %s includes only the layers below it" % (n, os.path.relpath(path, SRC)))
print("1..%d" % n)
sys.exit(1 if failed or n == 0 else 0)
