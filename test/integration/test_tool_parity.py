#!/usr/bin/env python3
"""Other tools' command lines against tokperf, flag by flag.

For each tool of TOOLS: test/parity/<tool>.flags is every option of the
tool's parser, taken from its code (the commit is in its header), and
<tool>.txt marks each same, mapped or refused (the format is in its header).
- The two lists hold the same flags, each once, and every one is in the
  tokperf command's --help.
- Every same or mapped flag runs against the mock with each of the tool's
  value forms: exit 0 and requests that succeeded; a flag without an effect
  in tokperf says so on stderr, naming itself.
- Every refused flag or value exits 2, naming itself, with its message (which
  names what to write instead).
Prints TAP."""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tp_check import SCALE, check, done, free_port, skip, wait_port  # noqa: E402
from tp_parity import check_list, read_flags, read_rows  # noqa: E402

TOKPERF = sys.argv[1]
SRC = os.environ.get("TP_SOURCE_ROOT", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PARITY = os.path.join(SRC, "test", "parity")
WORDS = os.environ.get("TP_WORDS_MODEL")
TIMEOUT = 60 * SCALE
tmp = tempfile.mkdtemp(prefix="tp_tool_parity_")

MOCK_MODEL = ["--mock-output-tokens", "2", "--mock-ttft-ms", "1", "--mock-itl-ms", "1"]
PROFILE = ["profile", "-q"]
# tool: (the tokperf command's words before the flags, the words that point
# it at the in-process mock, the words that keep every run small, what
# counts the requests that succeeded)
TOOLS = {
    "genai_perf_profile": (PROFILE, ["--mock"] + MOCK_MODEL, [], "profile"),
    "perf_analyzer": (PROFILE, ["--mock"] + MOCK_MODEL, [], "profile"),
    "sglang_bench_serving": (["sglang-bench", "-q"], ["--mock"], ["--dataset-name", "random", "--num-prompts", "2",
                                                                  "--random-input-len", "8", "--random-output-len", "2"],
                             "vllm"),
}


def run(args, timeout=TIMEOUT):
    p = subprocess.run([TOKPERF] + args, capture_output=True, text=True, timeout=timeout, cwd=tmp)
    return p.returncode, p.stdout, p.stderr


def succeeded(out, kind):
    """Requests that succeeded: from profile's text report (summed over
    levels), or vLLM's result layout; -1 when the report has none."""
    pattern = r"^Requests: \d+ measured, (\d+) succeeded" if kind == "profile" else r"^Successful requests:\s+(\d+)"
    n = [int(m.group(1)) for m in re.finditer(pattern, out, re.M)]
    return sum(n) if n else -1


# Input files and a mock beside the runs, for the placeholders.
jsonl = os.path.join(tmp, "prompts.jsonl")
with open(jsonl, "w") as f:
    for i in range(5):
        f.write('{"text": "question number %d about the sea"}\n' % i)
pa_json = os.path.join(tmp, "pa.json")
with open(pa_json, "w") as f:
    f.write('{"data": [{"text_input": ["hello there"], "max_tokens": [2]}, '
            '{"text_input": ["the sea"], "max_tokens": [2]}]}\n')
trace = os.path.join(tmp, "payload.jsonl")
with open(trace, "w") as f:
    for i in range(3):
        f.write('{"timestamp": %d, "text_input": "the sea number %d"}\n' % (10 * i, i))
pem = os.path.join(tmp, "ca.pem")
with open(pem, "w") as f:
    f.write("read only for https and grpcs\n")
sharegpt = os.path.join(tmp, "sharegpt.json")
with open(sharegpt, "w") as f:
    json.dump([{"id": str(i), "conversations": [{"from": "human", "value": "tell me about %d ships" % i},
                                                  {"from": "gpt", "value": "there were %d ships at sea" % i}]}
               for i in range(4)], f)
results = os.path.join(tmp, "results")
os.makedirs(results)
grpc_port, http_port = free_port(), free_port()
mock = subprocess.Popen([TOKPERF, "mock", "-q", "--host", "127.0.0.1", "--grpc-port", str(grpc_port), "--http-port",
                         str(http_port), "--output-tokens", "2", "--ttft-ms", "1", "--itl-ms", "1",
                         "--served-model-name", "meta-llama/Llama-3.1-8B-Instruct"],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


up = wait_port(grpc_port, 10 * SCALE) and wait_port(http_port, 10 * SCALE)
check(up, "the mock beside the runs listens on gRPC and HTTP ports")
PLACE = {"jsonl": jsonl, "trace": trace, "pa_json": pa_json, "pem": pem, "sharegpt": sharegpt, "tok": WORDS or "", "dir": results,
         "port": str(http_port),
         "grpc": "127.0.0.1:%d" % grpc_port, "http": "127.0.0.1:%d" % http_port}


def expand(word):
    for k, v in PLACE.items():
        word = word.replace("{%s}" % k, v)
    return word


helps = {}
try:
    for tool, (cmd, mock_words, small, kind) in TOOLS.items():
        name = tool + ".txt"
        captured = read_flags(os.path.join(PARITY, tool + ".flags"))
        rows = read_rows(os.path.join(PARITY, name))
        listed = check_list(tool, captured, rows, 20, refused_cols=3)
        key = " ".join(cmd[:1])
        if key not in helps:
            rc, out, err = run(cmd[:1] + ["--help"])
            helps[key] = out if rc == 0 else ""
        helptext = helps[key]
        # A flag stands in --help as itself: "-b, --batch-size" or "  --isl".
        absent = [f for f in listed if not re.search(r"(^|[\s,])%s([\s,]|$)" % re.escape(f), helptext, re.M)]
        check(helptext and not absent, "%s: every listed flag is in tokperf %s --help" % (tool, key), absent)

        counts = {"same": 0, "mapped": 0, "refused": 0}
        for n, cols in rows:
            flag, status, detail = cols[0], cols[1], cols[2]
            note = cols[3] if len(cols) > 3 else ""
            if status == "refused":
                words = flag.split("=", 1) if re.match(r"^-[-\w]+=", flag) else [flag]
                rc, out, err = run(cmd + mock_words + small + words)
                check(rc == 2 and detail in err and words[0] in err,
                      "%s line %d: %s refused (exit 2), saying '%s'" % (tool, n, " ".join(words), detail),
                      "rc %d: %s" % (rc, err[-800:]))
                counts[status] += 1
                continue
            if "{tok}" in detail and not WORDS:
                skip("%s line %d: %s" % (tool, n, flag), "no TP_WORDS_MODEL tokenizer")
                continue
            for form in detail.split(" || "):
                beside = "{grpc}" in form or "{http}" in form or "{port}" in form
                words = [expand(w) for w in shlex.split(form)]
                rc, out, err = run(cmd + ([] if beside else mock_words) + small + words)
                ok = rc == 0 and flag in words and succeeded(out, kind) > 0
                if note:
                    ok = ok and note in err and flag in err
                check(ok, "%s line %d: %s %s: %s, exit 0, requests succeeded%s" %
                      (tool, n, flag, status, form[:90], ", says '%s'" % note if note else ""),
                      "rc %d\n%s%s" % (rc, err[-1500:], out[-300:]))
            counts[status] += 1
        print("# %s: %d same, %d mapped, %d refused" % (tool, counts["same"], counts["mapped"], counts["refused"]))
    # GenAI-Perf's passthrough: the words after a lone "--" are perf_analyzer's
    # flags, which profile reads with perf_analyzer's meanings.
    rc, out, err = run(PROFILE + ["--mock"] + MOCK_MODEL + ["--concurrency", "2", "--", "--max-threads=256",
                                                           "--request-count", "5"])
    check(rc == 0 and succeeded(out, "profile") == 5 and "--max-threads is accepted" in err,
          "genai-perf's '-- PERF_ANALYZER_FLAGS': read as profile's perf_analyzer flags (5 requests)",
          "rc %d\n%s%s" % (rc, err[-800:], out[-300:]))
finally:
    mock.terminate()
    mock.wait(timeout=10)
done()
