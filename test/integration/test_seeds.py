"""Drop-in command lines: every command line of the published tutorials and
posts users benchmark with (test/data/seeds/command_lines.txt: llm_perf.py,
perf_analyzer, GenAI-Perf old and new) runs with its program name swapped
for `tokperf profile`, against the mock, and measures the levels it asks
for with no failed request.

What is changed, and only that: the server address (-u/--url, added where a
line relies on the default port) points at the mock's ports; model names
the mock does not serve are mapped (gpt2 -> the mock's model of the same
backend, `ensemble` over the OpenAI API); local tokenizer paths of the authors' machines point at a test
tokenizer; --measurement-interval is cut to 300 ms (windows of 4-10 s would
take minutes).  Input files are created under the names the lines use, and
the Hugging Face name hf-internal-testing/llama-tokenizer is found in a
Hugging Face cache laid out in a temporary folder, as users have it.

Also vLLM's `vllm bench serve` line through `tokperf vllm-bench`."""
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tp_check import SCALE, check, done, free_port, hf_cache_put, wait_port  # noqa: E402

TOKPERF = os.path.abspath(sys.argv[1])
SRC = os.environ["TP_SOURCE_ROOT"]
WORDS = os.environ["TP_WORDS_MODEL"]
LINES = os.path.join(SRC, "test", "data", "seeds", "command_lines.txt")

tmp = tempfile.mkdtemp(prefix="tokperf-seeds-")
grpc_port, http_port = free_port(), free_port()
mock = subprocess.Popen([TOKPERF, "mock", "--host", "127.0.0.1", "--grpc-port", str(grpc_port), "--http-port",
                         str(http_port), "--ttft-ms", "2", "--itl-ms", "0.5", "--prefill-us-per-token", "0",
                         "--output-tokens", "8", "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


ok = wait_port(grpc_port, 10 * SCALE) and wait_port(http_port, 10 * SCALE)
check(ok, "the mock listens on its gRPC and HTTP ports")

# The input files, under the names the command lines give.
os.makedirs(os.path.join(tmp, "data"))
prompts = ["Summarize the plot of a famous novel in two sentences.", "What is the capital of France?",
           "Write a haiku about the sea.", "Explain how a bicycle stays upright.",
           "List three uses of a paperclip.", "Translate 'good morning' into Spanish.",
           "Why is the sky blue?", "Give a recipe for pancakes.", "Name a prime number above 100.",
           "Describe a sunset to someone who has never seen one."]
for name in ("prompts.jsonl", os.path.join("data", "openorca_10.jsonl")):
    with open(os.path.join(tmp, name), "w") as f:
        for p in prompts:
            f.write(json.dumps({"text_input": p}) + "\n")
with open(os.path.join(tmp, "prompts_perfanalyzer.json"), "w") as f:
    json.dump({"data": [{"text_input": [p], "max_tokens": [16]} for p in prompts]}, f)
with open(os.path.join(tmp, "prompts.json"), "w") as f:  # the vLLM tutorial's, for its model "vllm"
    f.write('{\n    "data": [\n        {\n            "PROMPT": [\n                "Hello, my name is"\n'
            '            ],\n            "STREAM": [\n                true\n            ]\n        }\n    ]\n}\n')

# A Hugging Face cache holding hf-internal-testing/llama-tokenizer.
hub = os.path.join(tmp, "hub")
hf_cache_put(hub, "hf-internal-testing/llama-tokenizer", WORDS)

env = dict(os.environ, HF_HUB_CACHE=hub, TRITON_URI="127.0.0.1:%d" % grpc_port)
PROGRAMS = [["python3", "llm_perf.py"], ["perf_analyzer"], ["genai-perf"]]


def value_of(args, *names):
    for i, a in enumerate(args):
        for n in names:
            if a == n and i + 1 < len(args):
                return args[i + 1]
            if a.startswith(n + "="):
                return a[len(n) + 1:]
    return None


def adapt(args):
    """The line's arguments, with only the changes the docstring lists."""
    openai = value_of(args, "--service-kind") == "openai"
    vllm = value_of(args, "--backend", "--output-format") == "vllm"
    port = http_port if openai else grpc_port
    out, i, has_url = [], 0, False
    while i < len(args):
        a = args[i]
        name, eq, val = a.partition("=")
        takes = i + 1 < len(args) and not eq
        if name in ("-u", "--url"):
            out += [name, "127.0.0.1:%d" % port]
            has_url = True
            i += 1 if eq else 2
            continue
        if name in ("-m", "--model"):
            v = val if eq else args[i + 1]
            if v == "gpt2":
                v = "vllm_model" if vllm and not openai else "ensemble"
            out += [name, v]
            i += 1 if eq else 2
            continue
        if name in ("--tokenizer", "--tokenizer-path") and takes and args[i + 1].startswith("/"):
            out += [name, WORDS]
            i += 2
            continue
        if name == "--measurement-interval":
            out += [name, "300"]
            i += 1 if eq else 2
            continue
        out.append(a)
        i += 1
    if not has_url:
        out += ["-u", "127.0.0.1:%d" % port]
    return out


def levels_asked(args):
    conc = value_of(args, "--concurrency", "--concurrency-range") or "1"
    if ":" in conc:
        a, b, step = (conc.split(":") + ["1"])[:3]
        return len(range(int(a), int(b) + 1, int(step)))
    return len(conc.split(","))


with open(LINES) as f:
    lines = [l.strip() for l in f if l.strip() and not l.startswith("#")]
check(len(lines) >= 13, "the published command lines are all here", len(lines))
for n, line in enumerate(lines, 1):
    words = shlex.split(os.path.expandvars(line.replace("${TRITON_URI}", "$TRITON_URI")), posix=True)
    prog = next(p for p in PROGRAMS if words[:len(p)] == p)
    args = adapt(words[len(prog):])
    js = os.path.join(tmp, "run%d.json" % n)
    cmd = [TOKPERF, "profile"] + args + ["--json", js]
    try:
        p = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=240 * SCALE)
        rc, err = p.returncode, p.stderr
    except subprocess.TimeoutExpired:
        rc, err = -9, "timed out"
    doc = json.load(open(js)) if rc == 0 and os.path.exists(js) else None
    want = levels_asked(args)
    lv = doc["levels"] if doc else []
    good = (doc is not None and len(lv) == want and all(l["succeeded"] > 0 and l["failed"] == 0 for l in lv))
    check(good, "line %d (%s) runs: exit 0, %d level(s), every request answered" % (n, " ".join(prog), want),
          "rc %d\n%s\n%s" % (rc, " ".join(shlex.quote(a) for a in cmd), err[-1500:]))
    if "--tokenizer" in args or "--tokenizer-path" in args:
        check(doc is not None and all(l["tokens_available"] for l in lv), "line %d counts tokens" % n)

# vLLM's bench serve line, with its own meanings, through tokperf vllm-bench.
vcmd = [TOKPERF, "vllm-bench", "--backend", "openai-chat", "--base-url", "http://127.0.0.1:%d" % http_port,
        "--endpoint", "/v1/chat/completions", "--model", "ensemble", "--tokenizer",
        "hf-internal-testing/llama-tokenizer", "--dataset-name",
        "random", "--random-input-len", "128", "--random-output-len", "16", "--num-prompts", "20",
        "--request-rate", "20", "--max-concurrency", "4", "--percentile-metrics", "ttft,tpot,itl,e2el",
        "--metric-percentiles", "50,99", "--save-result", "--result-dir", "results", "--result-filename", "v.json"]
p = subprocess.run(vcmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=120 * SCALE)
check(p.returncode == 0 and "Serving Benchmark Result" in p.stdout and "P99 TPOT (ms):" in p.stdout
      and "Median E2EL (ms):" in p.stdout, "vllm bench serve's line runs as tokperf vllm-bench, vLLM's layout",
      p.stdout[-800:] + p.stderr[-800:])
res = os.path.join(tmp, "results", "v.json")
r = json.load(open(res)) if os.path.exists(res) else {}
check(r.get("completed") == 20 and r.get("total_input_tokens", 0) > 0 and "p99_ttft_ms" in r
      and "median_e2el_ms" in r, "--save-result writes vLLM's keys, 20 completed, tokens counted by name", r)

mock.terminate()
try:
    mock.wait(timeout=10)
except subprocess.TimeoutExpired:
    mock.kill()
shutil.rmtree(tmp, ignore_errors=True)
done()
