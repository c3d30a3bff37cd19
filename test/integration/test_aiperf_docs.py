#!/usr/bin/env python3
"""AIPerf's documented command lines, run by `tokperf aiperf profile`.

Each line is copied from AIPerf's docs (https://github.com/ai-dynamo/aiperf
at commit db4f6397d11ee2d4cfbb41f70b2327315163dcf0, the file named beside
it), with `aiperf profile` swapped for `tokperf aiperf profile` and only
the server's address (--url, or -u where the line has none) pointed at a
`tokperf mock` process that serves the line's model.  The input files are
the ones the docs write (cat/echo in the same document).  The Hugging Face
cache holds the lines' models' tokenizers (a test tokenizer under their
names), as it would on a machine that ran them.

A line runs (exit 0, every measured request answered, the count AIPerf
would send, and AIPerf's files where AIPerf writes them) or is refused
(exit 2, the message naming what to write instead).  Prints TAP."""
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tp_check import SCALE, check, done, free_port, hf_cache_put, skip, wait_port  # noqa: E402

TOKPERF = sys.argv[1]
WORDS = os.environ.get("TP_WORDS_MODEL")
tmp = tempfile.mkdtemp(prefix="tp_aiperf_docs_")

# docs/tutorials/fixed-schedule.md
PRECISE = """{"timestamp": 0, "input_length": 100, "hash_ids": [3001]}
{"timestamp": 500, "input_length": 200, "hash_ids": [3002]}
{"timestamp": 750, "input_length": 150, "hash_ids": [3003]}
{"timestamp": 1000, "input_length": 300, "hash_ids": [3004]}
{"timestamp": 1250, "input_length": 180, "hash_ids": [3005]}
{"timestamp": 2000, "input_length": 400, "hash_ids": [3006]}
{"timestamp": 2500, "input_length": 250, "hash_ids": [3007]}
{"timestamp": 3000, "input_length": 350, "hash_ids": [3008]}
{"timestamp": 4000, "input_length": 500, "hash_ids": [3009]}
{"timestamp": 5000, "input_length": 600, "hash_ids": [3010, 3050]}
"""
# docs/tutorials/trace-benchmarking.md
PRODUCTION = """{"text_input": "What is the capital of France?", "output_length": 20}
{"text_input": "Explain quantum computing in simple terms.", "output_length": 100}
{"text_input": "Write a Python function to calculate fibonacci numbers.", "output_length": 150}
{"text_input": "Summarize the main causes of World War II.", "output_length": 200}
{"text_input": "How do neural networks learn?", "output_length": 80}
"""
# docs/benchmark_modes/trace_replay.md
EXAMPLE_TRACE = """{"timestamp": 0, "input_length": 655, "output_length": 52, "hash_ids": [46, 47]}
{"timestamp": 10535, "input_length": 672, "output_length": 26, "hash_ids": [46, 47]}
{"timestamp": 27482, "input_length": 655, "output_length": 52, "hash_ids": [46, 47]}
"""
for name, text in (("precise_schedule.jsonl", PRECISE), ("production_queries.jsonl", PRODUCTION),
                   ("example_trace.jsonl", EXAMPLE_TRACE)):
    with open(os.path.join(tmp, name), "w") as f:
        f.write(text)

QWEN = "Qwen/Qwen3-0.6B"
DEEPSEEK = "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B"

# (doc file, the line as written, outcome): outcome is the number of
# requests AIPerf measures, "duration" (a time-based run), or
# ("refused", fragment of the message).
LINES = [
    ("README.md", "aiperf profile --model Qwen/Qwen3-0.6B --url localhost:8000 --endpoint-type chat", 10),
    ("README.md", "aiperf profile --model your_model_name --url http://localhost:8000 --endpoint-type chat "
     "--streaming", 10),
    ("README.md", "aiperf profile --model Qwen/Qwen3-0.6B --url http://localhost:8000 --endpoint-type chat "
     "--concurrency 10 --request-count 100 --streaming", 100),
    ("docs/tutorial.md", "aiperf profile --model Qwen/Qwen3-0.6B --endpoint-type chat --endpoint /v1/chat/completions "
     "--streaming --url localhost:8080 --synthetic-input-tokens-mean 100 --synthetic-input-tokens-stddev 0 "
     "--output-tokens-mean 200 --output-tokens-stddev 0 --extra-inputs min_tokens:200 --extra-inputs ignore_eos:true "
     "--concurrency 4 --request-count 64 --warmup-request-count 1 --conversation-num 8 --random-seed 100", 64),
    ("docs/tutorial.md", "aiperf profile --model Qwen/Qwen3-0.6B --endpoint-type chat --endpoint /v1/chat/completions "
     "--streaming --request-rate 32 --request-count 64 --url localhost:8000", 64),
    ("docs/tutorials/fixed-schedule.md", "aiperf profile --model Qwen/Qwen3-0.6B --endpoint-type chat --endpoint "
     "/v1/chat/completions --streaming --url localhost:8000 --input-file precise_schedule.jsonl "
     "--custom-dataset-type mooncake_trace --fixed-schedule-auto-offset", 10),
    ("docs/tutorials/fixed-schedule.md", "aiperf profile --model Qwen/Qwen3-0.6B --endpoint-type chat --endpoint "
     "/v1/chat/completions --streaming --url localhost:8000 --input-file precise_schedule.jsonl "
     "--custom-dataset-type mooncake_trace --fixed-schedule-start-offset 2000 --fixed-schedule-end-offset 4000", 4),
    ("docs/tutorials/goodput.md", "aiperf profile -m Qwen/Qwen3-0.6B --endpoint-type chat --streaming --url "
     "localhost:8000 --request-count 20 --goodput \"time_to_first_token:100 inter_token_latency:3.40\"", 20),
    ("docs/tutorials/request-cancellation.md", "aiperf profile --model Qwen/Qwen3-0.6B --endpoint-type chat "
     "--endpoint /v1/chat/completions --streaming --url localhost:8000 --request-cancellation-rate 10 "
     "--request-cancellation-delay 0.5 --synthetic-input-tokens-mean 800 --synthetic-input-tokens-stddev 80 "
     "--output-tokens-mean 400 --output-tokens-stddev 40 --concurrency 8 --request-count 50 "
     "--warmup-request-count 5", ("refused", "tokperf does not cancel requests on purpose; leave it out")),
    ("docs/tutorials/request-cancellation.md", "aiperf profile --model Qwen/Qwen3-0.6B --endpoint-type chat "
     "--endpoint /v1/chat/completions --streaming --url localhost:8000 --request-cancellation-rate 50 "
     "--request-cancellation-delay 1.0 --synthetic-input-tokens-mean 1200 --output-tokens-mean 600 "
     "--concurrency 10 --request-count 40", ("refused", "tokperf does not cancel requests on purpose; leave it out")),
    ("docs/tutorials/request-cancellation.md", "aiperf profile --model Qwen/Qwen3-0.6B --endpoint-type chat "
     "--endpoint /v1/chat/completions --streaming --url localhost:8000 --request-cancellation-rate 30 "
     "--request-cancellation-delay 0.0 --synthetic-input-tokens-mean 500 --output-tokens-mean 100 "
     "--concurrency 15 --request-count 60", ("refused", "tokperf does not cancel requests on purpose; leave it out")),
    ("docs/tutorials/sequence-distributions.md", "aiperf profile --model Qwen/Qwen3-0.6B --endpoint-type chat "
     "--endpoint /v1/chat/completions --streaming --url localhost:8000 --sequence-distribution "
     "\"64|10,32|8:70;256|40,128|20:20;1024|100,512|50:10\"", ("refused", "run one line per pair with --isl N --osl N")),
    ("docs/tutorials/time-based-benchmarking.md", "aiperf profile --model Qwen/Qwen3-0.6B --endpoint-type chat "
     "--endpoint /v1/chat/completions --streaming --url localhost:8000 --benchmark-duration 30.0 "
     "--benchmark-grace-period 15.0 --synthetic-input-tokens-mean 200 --synthetic-input-tokens-stddev 50 "
     "--output-tokens-mean 100 --output-tokens-stddev 20 --concurrency 5 --warmup-request-count 3 "
     "--random-seed 33333", "duration"),
    ("docs/tutorials/trace-benchmarking.md", "aiperf profile --model Qwen/Qwen3-0.6B --endpoint-type chat --endpoint "
     "/v1/chat/completions --streaming --url localhost:8000 --input-file production_queries.jsonl "
     "--custom-dataset-type mooncake_trace --concurrency 2 --warmup-request-count 1", 5),
    ("docs/benchmark_modes/trace_replay.md", "aiperf profile -m deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B "
     "--input-file example_trace.jsonl --custom-dataset-type mooncake_trace --fixed-schedule", 3),
]

# The Hugging Face cache, holding each model's tokenizer (the test one).
hub = os.path.join(tmp, "hub")
env = dict(os.environ)
if WORDS:
    for model in (QWEN, DEEPSEEK):
        hf_cache_put(hub, model, WORDS, "0" * 40)
    env["HF_HUB_CACHE"] = hub
    env["HF_HUB_OFFLINE"] = "1"

mocks = {}


def mock_for(model):
    """A mock serving model, quick (the lines' token counts at 1 ms a
    token), started on first use."""
    if model not in mocks:
        port = free_port()
        p = subprocess.Popen([TOKPERF, "mock", "--grpc-port", "0", "--http-port", str(port), "-q",
                              "--served-model-name", model, "--ttft-ms", "5", "--itl-ms", "1",
                              "--prefill-us-per-token", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        check(wait_port(port, 20 * SCALE), "a mock serving %s listens" % model)
        mocks[model] = (p, "127.0.0.1:%d" % port)
    return mocks[model][1]


def pointed(words, url):
    """The line with its server address, and only that, pointed at url."""
    out, i, had = [], 0, False
    while i < len(words):
        w = words[i]
        if w in ("--url", "-u") and i + 1 < len(words):
            v = words[i + 1]
            out += [w, ("http://" + url) if v.startswith("http://") else url]
            had = True
            i += 2
            continue
        out.append(w)
        i += 1
    return out if had else out + ["-u", url]


def artifact_dir(cwd):
    root = os.path.join(cwd, "artifacts")
    names = os.listdir(root) if os.path.isdir(root) else []
    return os.path.join(root, names[0]) if len(names) == 1 else None


ran = refused = 0
for n, (doc, line, outcome) in enumerate(LINES, 1):
    words = shlex.split(line)
    assert words[:2] == ["aiperf", "profile"]
    model = words[words.index("-m" if "-m" in words else "--model") + 1]
    # Traces of input_length make their prompts with the model's tokenizer.
    needs_tok = "precise_schedule.jsonl" in words or "example_trace.jsonl" in words
    if needs_tok and not WORDS:
        skip("%d. %s" % (n, doc), "no TP_WORDS_MODEL tokenizer for the Hugging Face cache")
        continue
    url = mock_for(model)
    args = pointed(words[2:], url)
    cwd = os.path.join(tmp, "line%d" % n)
    os.makedirs(cwd)
    for f in ("precise_schedule.jsonl", "production_queries.jsonl", "example_trace.jsonl"):
        shutil.copy(os.path.join(tmp, f), cwd)
    p = subprocess.run([TOKPERF, "aiperf", "profile"] + args, capture_output=True, text=True, cwd=cwd, env=env,
                       timeout=300 * SCALE)
    what = "%d. %s: %s" % (n, doc, line[len("aiperf profile "):][:100])
    if isinstance(outcome, tuple):
        check(p.returncode == 2 and outcome[1] in p.stderr, what + ": refused (exit 2), saying '%s'" % outcome[1],
              "rc %d: %s" % (p.returncode, p.stderr[-600:]))
        refused += p.returncode == 2
        continue
    got = -1
    for ln in p.stdout.splitlines():
        m = re.match(r"Requests: ([\d,]+) measured, ([\d,]+) succeeded", ln)
        if m:
            got = (int(m.group(1).replace(",", "")), int(m.group(2).replace(",", "")))
    ok = p.returncode == 0 and got != -1 and got[0] == got[1] and (got[0] == outcome if outcome != "duration"
                                                                     else got[0] > 0)
    check(ok, what + ": runs, %s requests measured, all answered" % outcome,
          "rc %d, requests %s\n%s\n%s" % (p.returncode, got, p.stderr[-1200:],
                                            [x for x in p.stdout.splitlines() if x.startswith("Requests")]))
    d = artifact_dir(cwd)
    files = ["profile_export_aiperf.json", "profile_export_aiperf.csv", "profile_export.jsonl", "inputs.json"]
    check(d is not None and all(os.path.isfile(os.path.join(d, f)) for f in files),
          "%d. AIPerf's files in %s" % (n, os.path.relpath(d, cwd) if d else "artifacts/?"),
          os.listdir(d) if d else "no single artifact directory")
    if d and os.path.isfile(os.path.join(d, "profile_export.jsonl")) and outcome != "duration":
        with open(os.path.join(d, "profile_export.jsonl")) as f:
            recs = [json.loads(x) for x in f if x.strip()]
        check(len(recs) == outcome, "%d. profile_export.jsonl: %d records" % (n, outcome), len(recs))
    ran += p.returncode == 0

print("# AIPerf's documented lines: %d ran, %d refused with what to write instead, of %d" % (ran, refused, len(LINES)))
for p, _ in mocks.values():
    p.send_signal(signal.SIGINT)
    try:
        p.wait(timeout=10 * SCALE)
    except subprocess.TimeoutExpired:
        p.kill()
done()
