#!/usr/bin/env python3
"""`tokperf vllm-bench` against vLLM's `vllm bench serve`, flag by flag.

- test/parity/vllm_bench_serve.flags is every flag of vLLM's parser, taken
  from vLLM's code (the commits are in its header); vllm_bench_serve.txt
  marks each same, mapped or refused.  The two lists hold the same flags,
  and every one is in `tokperf vllm-bench --help`.
- Every same or mapped flag runs against the mock with each of vLLM's value
  forms (exit 0; a flag without an effect in tokperf says so); every refused
  flag or value exits 2 with its message.
- What the flags do, held to what a real peer saw: the request bodies a
  capture server receives (sampling fields, --extra-body over them,
  --logprobs, --header, ignore_eos), --num-warmups requests sent and left
  out, --num-prompts -1 and --no-oversample against the file's prompt count,
  the ramp's arrival times at the server, --ready-check-timeout-sec against
  a mock that refuses connections for a while, and result paths refused
  before the first request.
Prints TAP."""
import http.server
import json
import os
import shlex
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tp_check import SCALE, check, done, free_port, skip  # noqa: E402
from tp_parity import check_list, read_flags, read_rows  # noqa: E402

TOKPERF = sys.argv[1]
SRC = os.environ.get("TP_SOURCE_ROOT", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PARITY = os.path.join(SRC, "test", "parity")
WORDS = os.environ.get("TP_WORDS_MODEL")
TIMEOUT = 60 * SCALE
tmp = tempfile.mkdtemp(prefix="tp_vllm_parity_")

BASE = ["vllm-bench", "--mock", "-q", "--num-prompts", "2", "--random-input-len", "8", "--random-output-len", "2"]


def run(args, timeout=TIMEOUT, cwd=None):
    p = subprocess.run([TOKPERF] + args, capture_output=True, text=True, timeout=timeout, cwd=cwd or tmp)
    return p.returncode, p.stdout, p.stderr


def successful(out):
    for line in out.splitlines():
        if line.startswith("Successful requests:"):
            return int(line.split()[2])
    return -1


# Input files for the placeholders.
custom = os.path.join(tmp, "custom.jsonl")
with open(custom, "w") as f:
    for i in range(5):
        f.write(json.dumps({"prompt": "question number %d about the sea" % i, "output_tokens": 3}) + "\n")
sharegpt = os.path.join(tmp, "sharegpt.json")
with open(sharegpt, "w") as f:
    json.dump([{"id": str(i), "conversations": [{"from": "human", "value": "tell me about %d ships" % i},
                                                  {"from": "gpt", "value": "there were %d ships" % i}]}
               for i in range(4)], f)
results = os.path.join(tmp, "results")
PLACE = {"custom": custom, "sharegpt": sharegpt, "tok": WORDS or "", "dir": results}


def expand(word):
    for k, v in PLACE.items():
        word = word.replace("{%s}" % k, v)
    return word


# ---- the lists -------------------------------------------------------------
captured = read_flags(os.path.join(PARITY, "vllm_bench_serve.flags"))
rows = read_rows(os.path.join(PARITY, "vllm_bench_serve.txt"))
listed = check_list("vLLM's bench serve", captured, rows, 90)

# tools/capture_vllm_flags.py, which makes the .flags file from a vLLM
# checkout, on a parser of vLLM's shape: the dataset parser called first,
# a group's arguments, a helper's, BooleanOptionalAction's --no- form.
sample_ds = os.path.join(tmp, "datasets.py")
with open(sample_ds, "w") as f:
    f.write("def add_dataset_parser(parser):\n"
            "    parser.add_argument('--seed', type=int, default=0)\n"
            "    g = parser.add_argument_group('random')\n"
            "    add_random_dataset_base_args(g)\n"
            "    g.add_argument('--hf-split', type=str)\n"
            "def add_random_dataset_base_args(p):\n"
            "    p.add_argument('--random-input-len', type=int)\n")
sample_serve = os.path.join(tmp, "serve.py")
with open(sample_serve, "w") as f:
    f.write("import argparse\n"
            "def helper(x):\n"
            "    x.add_argument('--not-a-flag-of-the-parser')\n"
            "def add_cli_args(parser):\n"
            "    add_dataset_parser(parser)\n"
            "    parser.add_argument('--label', type=str)\n"
            "    parser.add_argument('--self-timed', action=argparse.BooleanOptionalAction)\n"
            "    sampling = parser.add_argument_group('sampling')\n"
            "    sampling.add_argument('--top-p', type=float)\n")
p = subprocess.run([sys.executable, os.path.join(SRC, "tools", "capture_vllm_flags.py"), sample_ds, sample_serve],
                   capture_output=True, text=True)
check(p.returncode == 0 and p.stdout.split() == ["--seed", "--random-input-len", "--hf-split", "--label",
                                                 "--self-timed", "--no-self-timed", "--top-p"],
      "capture_vllm_flags.py: the parser's flags in its order, helpers read where called", p.stdout + p.stderr)

rc, helptext, err = run(["vllm-bench", "--help"])
check(rc == 0, "vllm-bench --help", err)
absent = [f for f in listed if f not in helptext]
check(not absent, "every listed flag is in tokperf vllm-bench --help", absent)

# ---- the walk ---------------------------------------------------------------
counts = {"same": 0, "mapped": 0, "refused": 0}
for n, cols in rows:
    flag, status, detail = cols[0], cols[1], cols[2]
    note = cols[3] if len(cols) > 3 else ""
    if status == "refused":
        words = flag.split("=", 1) if "=" in flag else [flag]
        rc, out, err = run(BASE + words)
        check(rc == 2 and detail in err and words[0] in err,
              "line %d: %s refused (exit 2), saying '%s'" % (n, " ".join(words), detail), "rc %d: %s" % (rc, err))
        counts[status] += 1
        continue
    if status in ("same", "mapped") and "{tok}" in detail and not WORDS:
        skip("line %d: %s" % (n, flag), "no TP_WORDS_MODEL tokenizer")
        continue
    for form in detail.split(" || "):
        words = [expand(w) for w in shlex.split(form)]
        rc, out, err = run(BASE + words)
        ok = rc == 0 and flag in words and successful(out) > 0
        if note:
            ok = ok and note in err and flag in err
        check(ok, "line %d: %s %s: %s, exit 0%s" % (n, flag, status, form[:90], ", says '%s'" % note if note else ""),
              "rc %d\n%s%s" % (rc, err[-1500:], out[-300:]))
    counts[status] += 1
print("# %d same, %d mapped, %d refused" % (counts["same"], counts["mapped"], counts["refused"]))


# vLLM's parser reads underscores in a flag's name as dashes; a value keeps its own.
rc, out, err = run(["vllm-bench", "--mock", "-q", "--num_prompts", "3", "--random_input_len=8", "--random-output-len",
                    "2", "--label", "a_b", "--save_result", "--result_dir", os.path.join(tmp, "underscores")])
check(rc == 0 and successful(out) == 3 and
      any(n.startswith("a_b-") for n in os.listdir(os.path.join(tmp, "underscores"))),
      "--num_prompts, --random_input_len=8, --save_result: vLLM's underscore spellings; the label keeps its own", err)

# ---- what the flags do: a capture server ------------------------------------
class Capture(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible streaming server that keeps each request: its
    arrival time (this process's monotonic clock), path, headers and body."""
    protocol_version = "HTTP/1.1"
    seen = []
    lock = threading.Lock()

    def log_message(self, *a):
        pass

    def send(self, code, ctype, data):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.send(200, "application/json",
                  json.dumps({"object": "list", "data": [{"id": "m", "object": "model", "root": "m"}]}).encode())

    def do_POST(self):
        t = time.monotonic()
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        with Capture.lock:
            Capture.seen.append((t, self.path, dict(self.headers), body))
        chat = self.path.endswith("/chat/completions")
        events = []
        for w in ["a", " b"]:
            choice = {"index": 0, "delta": {"content": w}} if chat else {"index": 0, "text": w}
            events.append({"id": "x", "choices": [choice]})
        events.append({"id": "x", "choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 2,
                                                            "total_tokens": 6}})
        data = "".join("data: %s\n\n" % json.dumps(e) for e in events) + "data: [DONE]\n\n"
        self.send(200, "text/event-stream", data.encode())


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Capture)
threading.Thread(target=srv.serve_forever, daemon=True).start()
URL = "http://127.0.0.1:%d" % srv.server_address[1]
CAP = ["vllm-bench", "--base-url", URL, "--model", "m", "-q", "--random-input-len", "8", "--random-output-len", "2"]


def capture(args):
    with Capture.lock:
        del Capture.seen[:]
    rc, out, err = run(CAP + args)
    with Capture.lock:
        posts = [s for s in Capture.seen]
    return rc, out, err, posts


SAMPLING = ["--temperature", "0", "--top-p", "0.9", "--top-k", "-1", "--min-p", "0.05", "--frequency-penalty", "0.5",
            "--presence-penalty", "0.25", "--repetition-penalty", "1.1"]
WANT = {"temperature": 0, "top_p": 0.9, "top_k": -1, "min_p": 0.05, "frequency_penalty": 0.5,
        "presence_penalty": 0.25, "repetition_penalty": 1.1}
for backend, path in [("openai", "/v1/completions"), ("openai-chat", "/v1/chat/completions")]:
    rc, out, err, posts = capture(["--backend", backend, "--num-prompts", "3"] + SAMPLING +
                                  ["--extra-body", '{"seed": 7, "top_p": 0.5}', "--header", "x-tenant=a", "x-b=2"])
    check(rc == 0 and len(posts) == 3 and all(p[1] == path for p in posts),
          "%s: 3 requests to %s" % (backend, path), err[-800:])
    b = posts[0][3] if posts else {}
    got = {k: b.get(k) for k in WANT}
    want = dict(WANT, top_p=0.5)  # --extra-body over the sampling flags, as vLLM merges them
    check(got == want and b.get("seed") == 7, "%s: the sampling flags in the body, --extra-body over them" % backend,
          json.dumps(b))
    check(b.get("ignore_eos") is True and b.get("stream") is True,
          "%s: random prompts ask for their whole length (ignore_eos), streamed" % backend, json.dumps(b))
    hdrs = {k.lower(): v for k, v in posts[0][2].items()} if posts else {}
    check(hdrs.get("x-tenant") == "a" and hdrs.get("x-b") == "2", "%s: --header KEY=VALUE words arrive" % backend,
          hdrs)
    if backend == "openai":
        check("logprobs" in b and b["logprobs"] is None, "completions: logprobs null when not given (as vLLM)",
              json.dumps(b))
    else:
        check("logprobs" not in b and "repetition_penalty" in b, "chat: no logprobs field (as vLLM)", json.dumps(b))

rc, out, err, posts = capture(["--backend", "openai", "--num-prompts", "2", "--logprobs", "2"])
b = posts[0][3] if posts else {}
check(rc == 0 and b.get("logprobs") == 2 and b.get("repetition_penalty") == 1.0 and "temperature" not in b,
      "completions: --logprobs 2 sent; repetition_penalty 1.0 and no temperature by default (as vLLM)", json.dumps(b))
rc, out, err = run(CAP + ["--num-prompts", "2", "--extra-body", "[1, 2]"])
check(rc == 2 and "--extra-body" in err and "JSON object" in err, "--extra-body not an object: exit 2, named", err)
rc, out, err = run(CAP + ["--num-prompts", "2", "--header", "novalue"])
check(rc == 2 and "--header 'novalue'" in err and "KEY=VALUE" in err, "--header without '=': exit 2", err)

# Warm-ups: sent, left out of the figures.
rc, out, err, posts = capture(["--num-prompts", "4", "--num-warmups", "3", "--max-concurrency", "1"])
check(rc == 0 and len(posts) == 7 and successful(out) == 4,
      "--num-warmups 3 --num-prompts 4: the server saw 7 requests, 4 counted (%d, %d)" % (len(posts), successful(out)),
      err[-800:])

# The whole file, and no oversampling.
for args, want, what in [(["--num-prompts", "-1"], 5, "--num-prompts -1: one request per prompt of the file"),
                         (["--num-prompts", "0"], 5, "--num-prompts 0: likewise"),
                         (["--num-prompts", "9", "--no-oversample"], 5, "--no-oversample: no more than the file's 5"),
                         (["--num-prompts", "3", "--no-oversample"], 3, "--no-oversample under the file's size: 3"),
                         (["--num-prompts", "9"], 9, "without --no-oversample: 9, prompts repeated")]:
    rc, out, err, posts = capture(["--dataset-name", "custom", "--dataset-path", custom, "--custom-output-len", "-1",
                                   "--skip-chat-template"] + args)
    prompts = [p[3].get("prompt") for p in posts]
    check(rc == 0 and len(posts) == want and successful(out) == want, "%s (%d sent)" % (what, len(posts)), err[-600:])
    if want == 5:
        check(len(set(prompts)) == 5, "  each of the file's prompts once", prompts)
check(all(p[3].get("max_tokens") == 3 for p in posts), "--custom-output-len -1: each line's output_tokens as max_tokens",
      [p[3].get("max_tokens") for p in posts])
rc, out, err = run(CAP + ["--num-prompts", "-1"])
check(rc == 2 and "--num-prompts -1" in err and "--dataset-path" in err,
      "--num-prompts -1 with random prompts: exit 2, says what to give", err)
rc, out, err = run(CAP + ["--dataset-path", custom, "--num-prompts", "2"])
check(rc == 2 and "reads no --dataset-path" in err, "random with --dataset-path: exit 2 (vLLM refuses it too)", err)

# The ramp: linear 10 -> 40 requests/s over 40 requests, gamma shape 100 (gaps
# within about 10% of 1/rate).  The server's arrival times: the first quarter's
# gaps are the ramp's slow end, the last quarter's its fast end.
rc, out, err, posts = capture(["--num-prompts", "40", "--ramp-up-strategy", "linear", "--ramp-up-start-rps", "10",
                               "--ramp-up-end-rps", "40", "--burstiness", "100", "--save-result", "--result-dir",
                               results, "--label", "ramp"])
ts = sorted(p[0] for p in posts)
check(rc == 0 and len(ts) == 40, "ramp: 40 requests", err[-600:])
if len(ts) == 40:
    gaps = [b - a for a, b in zip(ts, ts[1:])]
    first, last = sum(gaps[:9]) / 9, sum(gaps[-9:]) / 9
    rate = lambda i: 10 + 30 * i / 39.0  # noqa: E731
    want_first = sum(1 / rate(i) for i in range(1, 10)) / 9
    want_last = sum(1 / rate(i) for i in range(31, 40)) / 9
    # The ratio of the two is what the ramp sets (2.7 here, 1 without a
    # ramp); a busy machine that delays every arrival alike leaves it be.
    # Gaps of gamma shape 100 vary by 10%: a mean of 9 by 3.3%, the ratio by
    # under 5%; 35% leaves room for a loaded machine's stray delays.
    ratio, want_ratio = first / last, want_first / want_last
    check(abs(ratio / want_ratio - 1) < 0.35,
          "ramp: mean gap %.1f ms at the start (ramp %.1f), %.1f ms at the end (ramp %.1f): ratio %.2f (ramp %.2f)" %
          (first * 1e3, want_first * 1e3, last * 1e3, want_last * 1e3, ratio, want_ratio))
    span, want_span = ts[-1] - ts[0], sum(1 / rate(i) for i in range(1, 40))
    check(abs(span / want_span - 1) < 0.4, "ramp: the run spans %.2f s, the ramp %.2f s" % (span, want_span))
names = [n for n in os.listdir(results) if n.startswith("ramp-ramp-up-linear-10qps-40qps-")]
check(len(names) == 1, "ramp: vLLM's result name LABEL-ramp-up-linear-STARTqps-ENDqps-MODEL-DATE.json",
      os.listdir(results))
if names:
    with open(os.path.join(results, names[0])) as f:
        j = json.load(f)
    check(j.get("ramp_up_strategy") == "linear" and j.get("ramp_up_start_rps") == 10 and
          j.get("ramp_up_end_rps") == 40 and j.get("request_rate") == "inf" and j.get("label") == "ramp",
          "ramp: the result's ramp keys, request_rate inf (as vLLM)", json.dumps(j)[:600])
for args, what in [(["--ramp-up-strategy", "linear", "--ramp-up-start-rps", "1"], "needs --ramp-up-start-rps and --ramp-up-end-rps"),
                   (["--ramp-up-strategy", "linear", "--ramp-up-start-rps", "5", "--ramp-up-end-rps", "2"], "at most"),
                   (["--ramp-up-strategy", "exponential", "--ramp-up-start-rps", "0", "--ramp-up-end-rps", "2"],
                    "start at 1"),
                   (["--ramp-up-strategy", "linear", "--ramp-up-start-rps", "1", "--ramp-up-end-rps", "2",
                     "--request-rate", "5"], "leave out --request-rate"),
                   (["--ramp-up-end-rps", "2"], "go with --ramp-up-strategy")]:
    rc, out, err = run(CAP + ["--num-prompts", "2"] + args)
    check(rc == 2 and what in err, "ramp: %s: exit 2, '%s'" % (" ".join(args), what), err)

# --append-result and --metadata: vLLM's JSON documents, one a line.
app = os.path.join(tmp, "app")
for i in range(2):
    rc, out, err, posts = capture(["--num-prompts", "2", "--append-result", "--result-dir", app, "--result-filename",
                                   "all.json", "--metadata", "run=%d" % i, "tp=1"])
    check(rc == 0, "--append-result run %d" % i, err[-500:])
with open(os.path.join(app, "all.json")) as f:
    docs = [json.loads(ln) for ln in f.read().split("\n") if ln.strip()]
check(len(docs) == 2 and [d.get("run") for d in docs] == ["0", "1"] and all(d.get("tp") == "1" for d in docs),
      "--append-result: two documents, each with its --metadata keys", docs)
rc, out, err, posts = capture(["--num-prompts", "2", "--save-result", "--result-dir", app, "--metadata", "bad"])
check(rc == 2 and "--metadata 'bad'" in err and not posts, "--metadata without '=': exit 2 before any request", err)

# vLLM's default file name: LABEL-RATEqps[-concurrencyN]-MODEL-DATE.json, the
# rate as Python prints a float.
names_dir = os.path.join(tmp, "names")
for args, prefix in [(["--request-rate", "200"], "openai-200.0qps-m-"),
                     (["--request-rate", "2.5", "--max-concurrency", "2"], "openai-2.5qps-concurrency2-m-"),
                     (["--backend", "openai-chat"], "openai-chat-infqps-m-")]:
    rc, out, err, posts = capture(["--num-prompts", "2", "--save-result", "--result-dir", names_dir] + args)
    got = [n for n in os.listdir(names_dir) if n.startswith(prefix)] if os.path.isdir(names_dir) else []
    check(rc == 0 and len(got) == 1 and got[0].endswith(".json"), "result name %s...DATE.json" % prefix,
          os.listdir(names_dir) if os.path.isdir(names_dir) else err)

# Result paths refused before the first request.
afile = os.path.join(tmp, "a_file")
open(afile, "w").close()
rc, out, err, posts = capture(["--num-prompts", "2", "--save-result", "--result-dir", os.path.join(afile, "sub")])
check(rc == 3 and afile in err and not posts,
      "--result-dir under a file: exit 3 naming it, no request sent (%d)" % len(posts), err)
rc, out, err, posts = capture(["--num-prompts", "2", "--save-result", "--result-filename",
                               os.path.join(tmp, "nodir", "r.json")])
check(rc == 3 and "nodir" in err and not posts, "--result-filename in a missing directory: exit 3, nothing sent", err)
ro = os.path.join(tmp, "ro")
os.makedirs(ro)
why = None
if os.geteuid() != 0:
    os.chmod(ro, 0o555)
else:
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", ro], capture_output=True, text=True)
    why = None if p.returncode == 0 else (p.stderr.strip() or "mount exited %d" % p.returncode)
if why:
    skip("--result-dir read-only", "cannot make a read-only directory as root without mount: " + why)
else:
    rc, out, err, posts = capture(["--num-prompts", "2", "--save-result", "--result-dir", ro])
    check(rc == 3 and ro in err and not posts, "--result-dir read-only: exit 3 at once naming it, nothing sent", err)
    rc, out, err, posts = capture(["--num-prompts", "2", "--append-result", "--result-dir", ro])
    check(rc == 3 and ro in err and not posts, "--append-result in a read-only directory: likewise", err)
    if os.geteuid() == 0:
        subprocess.run(["umount", ro], capture_output=True)
srv.shutdown()

# --ready-check-timeout-sec: a mock that refuses connections for 1.5 s.
http_port, grpc_port = free_port(), free_port()
mock = subprocess.Popen([TOKPERF, "mock", "--http-port", str(http_port), "--grpc-port", str(grpc_port),
                         "--refuse-connections-ms", "1500"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    t0 = time.monotonic()
    rc, out, err = run(["vllm-bench", "--base-url", "http://127.0.0.1:%d" % http_port, "--num-prompts", "2",
                        "--random-input-len", "8", "--random-output-len", "2", "--ready-check-timeout-sec", "30"])
    took = time.monotonic() - t0
    check(rc == 0 and successful(out) == 2 and "not ready" in err and "answered" in err and took >= 1.5,
          "--ready-check-timeout-sec 30: waits for the endpoint (%.1f s), then runs" % took, err[-800:])
finally:
    mock.terminate()
    mock.wait()
t0 = time.monotonic()
rc, out, err = run(["vllm-bench", "--base-url", "http://127.0.0.1:%d" % free_port(), "--num-prompts", "2",
                    "--random-input-len", "8", "--ready-check-timeout-sec", "1"])
took = time.monotonic() - t0
check(rc == 3 and "--ready-check-timeout-sec 1" in err and "did not answer" in err and took < 10 * SCALE,
      "--ready-check-timeout-sec 1 and no server: exit 3 after %.1f s, saying so" % took, err[-600:])
done()
