#!/usr/bin/env python3
"""`tokperf aiperf profile` against AIPerf's `aiperf profile`, flag by flag.

- test/parity/aiperf_profile.flags is every option string of AIPerf's
  profile command, taken from AIPerf's code (the commit is in its header);
  aiperf_profile.txt marks each same, mapped or refused.  The two lists
  hold the same flags, and every one is in `tokperf aiperf profile --help`.
- Every same or mapped flag runs against a `tokperf mock` process with each
  of AIPerf's value forms (exit 0, requests answered; a flag without an
  effect in tokperf says so); every refused flag or value exits 2 with its
  message, which names the flag.
- What the flags do, held to what a real peer saw: the mock's log of the
  requests (prompts, max_tokens, the stream flag), the request count and
  warm-ups, the artifact directory AIPerf would name and the files AIPerf
  writes there (profile_export_aiperf.json and .csv, profile_export.jsonl,
  inputs.json), a trace cut by the fixed schedule's offsets.
Prints TAP."""
import json
import os
import re
import shlex
import signal
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
MODEL = "Qwen/Qwen3-0.6B"
tmp = tempfile.mkdtemp(prefix="tp_aiperf_parity_")


def write_jsonl(name, rows):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    return path


# AIPerf's dataset types, as its docs write them (docs/benchmark_datasets.md,
# docs/tutorials/trace-benchmarking.md, docs/benchmark_modes/trace_replay.md).
single = write_jsonl("single.jsonl", [{"text": "what is the sea number %d" % i} for i in range(4)])
multi = write_jsonl("multi.jsonl", [{"session_id": "s%d" % s, "turns": [
    {"texts": ["hello there %d" % s], "delay": 0}, {"texts": ["and then what"], "delay": 10}]} for s in range(2)])
trace = write_jsonl("trace.jsonl", [{"timestamp": t, "text_input": "trace line at %d" % t, "output_length": 2}
                                    for t in (0, 50, 100, 150, 200)])
texttrace = write_jsonl("texttrace.jsonl", [{"text_input": "query %d" % i, "output_length": 2} for i in range(3)])
hashtrace = write_jsonl("hashtrace.jsonl", [{"timestamp": 20 * i, "input_length": 40, "output_length": 2,
                                             "hash_ids": [0, 1 + i]} for i in range(3)])
pool = write_jsonl("pool.jsonl", [{"text": "pooled query %d" % i} for i in range(5)])
results = os.path.join(tmp, "results")

# One mock process for the whole walk, serving AIPerf's docs' model name.
port = free_port()


def start_mock(port, log=None):
    args = [TOKPERF, "mock", "--grpc-port", "0", "--http-port", str(port), "-q", "--served-model-name", MODEL]
    if log:
        args += ["--log", log, "--log-prompts"]
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop_mock(p):
    """SIGINT: the mock stops and writes the rest of its log."""
    p.send_signal(signal.SIGINT)
    try:
        p.wait(timeout=10 * SCALE)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


mock = start_mock(port)
URL = "127.0.0.1:%d" % port
check(wait_port(port, 20 * SCALE), "tokperf mock listens on %s" % URL)

PLACE = {"url": URL, "single": single, "multi": multi, "trace": trace, "texttrace": texttrace,
         "hashtrace": hashtrace, "pool": pool, "tok": WORDS or "", "dir": results}


def expand(word):
    for k, v in PLACE.items():
        word = word.replace("{%s}" % k, v)
    return word


def run(args, timeout=TIMEOUT, cwd=None):
    p = subprocess.run([TOKPERF, "aiperf", "profile"] + args, capture_output=True, text=True, timeout=timeout,
                       cwd=cwd or tmp)
    return p.returncode, p.stdout, p.stderr


def succeeded(out):
    for line in out.splitlines():
        m = re.match(r"Requests: [\d,]+ measured, ([\d,]+) succeeded", line)
        if m:
            return int(m.group(1).replace(",", ""))
    return -1


def base(words):
    b = ["-u", URL, "-m", MODEL, "-q", "--isl", "8", "--osl", "2"]
    if not any(w.split("=")[0] in ("--benchmark-duration", "--benchmark-grace-period") for w in words):
        b += ["--request-count", "2"]
    return b


# ---- the lists -------------------------------------------------------------
captured = read_flags(os.path.join(PARITY, "aiperf_profile.flags"))
rows = read_rows(os.path.join(PARITY, "aiperf_profile.txt"))
listed = check_list("AIPerf's profile", captured, rows, 100)

rc, helptext, err = run(["--help"])
check(rc == 0, "aiperf profile --help", err)
helpwords = set(helptext.replace("|", " ").replace(",", " ").split())
absent = [f for f in listed if f not in helpwords]
check(not absent, "every listed flag is in tokperf aiperf profile --help", absent)

# ---- the walk ---------------------------------------------------------------
counts = {"same": 0, "mapped": 0, "refused": 0}
for n, cols in rows:
    flag, status, detail = cols[0], cols[1], cols[2]
    note = cols[3] if len(cols) > 3 else ""
    if status == "refused":
        words = flag.split("=", 1) if "=" in flag else [flag]
        rc, out, err = run(base(words) + words)
        check(rc == 2 and detail in err and words[0] in err,
              "line %d: %s refused (exit 2), saying '%s'" % (n, " ".join(words), detail), "rc %d: %s" % (rc, err))
        counts[status] += 1
        continue
    if "{tok}" in detail and not WORDS:
        skip("line %d: %s" % (n, flag), "no TP_WORDS_MODEL tokenizer")
        continue
    for form in detail.split(" || "):
        if "{tok}" in form and not WORDS:
            skip("line %d: %s %s" % (n, flag, form), "no TP_WORDS_MODEL tokenizer")
            continue
        words = [expand(w) for w in shlex.split(form)]
        rc, out, err = run(base(words) + words)
        ok = rc == 0 and any(w == flag or w.startswith(flag + "=") for w in words) and succeeded(out) > 0
        if note:
            ok = ok and note in err and flag in err
        check(ok, "line %d: %s %s: %s, exit 0%s" % (n, flag, status, form[:90], ", says '%s'" % note if note else ""),
              "rc %d\n%s%s" % (rc, err[-1500:], out[-300:]))
    counts[status] += 1
print("# %d same, %d mapped, %d refused" % (counts["same"], counts["mapped"], counts["refused"]))


# ---- what the flags do, at the mock -------------------------------------------
def mock_requests(log):
    out = []
    with open(log) as f:
        for ln in f:
            j = json.loads(ln)
            if j.get("ev") == "request":
                out.append(j)
    return out


def fresh_dir(name):
    d = os.path.join(tmp, name)
    os.makedirs(d, exist_ok=True)
    return d


# AIPerf's defaults: concurrency 1, --request-count 10 measured after the
# warm-up, non-streaming, the artifact directory named from the model, the
# endpoint type and the stimulus.
cwd = fresh_dir("defaults")
rc, out, err = run(["-m", MODEL, "-u", URL, "--osl", "2", "--isl", "8", "--warmup-request-count", "2"], cwd=cwd)
adir = os.path.join(cwd, "artifacts", "Qwen_Qwen3-0.6B-openai-chat-concurrency1")
check(rc == 0 and succeeded(out) == 10, "defaults: 10 requests measured (AIPerf's --request-count)", err[-800:])
check("max in flight (requests): 1" in out, "defaults: one request in flight at a time", out[-600:])
check(os.path.isdir(adir), "defaults: artifacts/<model>-openai-chat-concurrency1, as AIPerf names it",
      os.listdir(os.path.join(cwd, "artifacts")) if os.path.isdir(os.path.join(cwd, "artifacts")) else "none")
for name in ("profile_export_aiperf.json", "profile_export_aiperf.csv", "profile_export.jsonl", "inputs.json"):
    check(os.path.isfile(os.path.join(adir, name)), "defaults: %s at the top of the artifact directory" % name)
if os.path.isfile(os.path.join(adir, "profile_export.jsonl")):
    with open(os.path.join(adir, "profile_export.jsonl")) as f:
        recs = [json.loads(ln) for ln in f if ln.strip()]
    check(len(recs) == 10, "profile_export.jsonl: one line per measured request (10; the 2 warm-ups left out)",
          len(recs))
if os.path.isfile(os.path.join(adir, "profile_export_aiperf.json")):
    with open(os.path.join(adir, "profile_export_aiperf.json")) as f:
        summ = json.load(f)
    rc_ = summ.get("request_count", {})
    check(rc_.get("avg") == 10 or rc_.get("value") == 10 or "10" in json.dumps(rc_),
          "profile_export_aiperf.json: request_count 10", rc_)
if os.path.isfile(os.path.join(adir, "inputs.json")):
    with open(os.path.join(adir, "inputs.json")) as f:
        inputs = json.load(f)
    pl = [p for s in inputs["data"] for p in s["payloads"]]
    check(len(pl) == 10 and all(p["model"] == MODEL and p["stream"] is False and p["max_tokens"] == 2 and
                                p["messages"][0]["role"] == "user" for p in pl),
          "inputs.json: AIPerf's {data: [{session_id, payloads}]}, each a chat body, stream false", pl[:1])

# Rate and concurrency together: the rate's name in the directory, the cap.
cwd = fresh_dir("rate")
rc, out, err = run(["-m", MODEL, "-u", URL, "--osl", "2", "--isl", "8", "--request-rate", "40", "--concurrency", "3",
                    "--request-count", "6"], cwd=cwd)
check(rc == 0 and os.path.isdir(os.path.join(cwd, "artifacts",
                                             "Qwen_Qwen3-0.6B-openai-chat-concurrency3-request_rate40.0")),
      "--request-rate 40 --concurrency 3: artifacts/...-concurrency3-request_rate40.0", err[-600:])

# --artifact-dir is used as given; --profile-export-file names the JSONL.
cwd = fresh_dir("named")
rc, out, err = run(["-m", MODEL, "-u", URL, "--osl", "2", "--isl", "8", "--request-count", "3", "--artifact-dir",
                    "mine", "--profile-export-file", "recs.jsonl"], cwd=cwd)
check(rc == 0 and os.path.isfile(os.path.join(cwd, "mine", "recs.jsonl")) and
      os.path.isfile(os.path.join(cwd, "mine", "profile_export_aiperf.json")),
      "--artifact-dir mine --profile-export-file recs.jsonl: mine/recs.jsonl", err[-600:])

# What a mock of its own received: the prompts of a single_turn file,
# max_tokens of --osl.
port2 = free_port()
log2 = os.path.join(tmp, "mock2.jsonl")
mock2 = start_mock(port2, log2)
check(wait_port(port2, 20 * SCALE), "a second mock, with a log, listens")
cwd = fresh_dir("single")
rc, out, err = run(["-m", MODEL, "-u", "127.0.0.1:%d" % port2, "--input-file", single, "--custom-dataset-type",
                    "single_turn", "--request-count", "4", "--osl", "3", "--streaming"], cwd=cwd)
stop_mock(mock2)
reqs = mock_requests(log2)
prompts = [r.get("prompt", "") for r in reqs]
check(rc == 0 and len(reqs) == 4 and all(p.startswith("what is the sea number") for p in prompts),
      "single_turn: the mock received the file's 4 prompts", (rc, prompts, err[-400:]))
check(len(reqs) == 4 and all(r.get("max_tokens") == 3 for r in reqs), "--osl 3: max_tokens 3 at the mock",
      reqs[:1])

# A mooncake trace without timestamps: each line once, whatever --request-count.
cwd = fresh_dir("texttrace")
rc, out, err = run(["-m", MODEL, "-u", URL, "--input-file", texttrace, "--custom-dataset-type", "mooncake_trace",
                    "--request-count", "50"], cwd=cwd)
check(rc == 0 and succeeded(out) == 3, "mooncake_trace without timestamps: each of its 3 lines once", out[-400:])

# A trace cut by the fixed schedule's offsets: only 50..150 ms, both ends in.
cwd = fresh_dir("offsets")
rc, out, err = run(["-m", MODEL, "-u", URL, "--input-file", trace, "--custom-dataset-type", "mooncake_trace",
                    "--fixed-schedule-start-offset", "50", "--fixed-schedule-end-offset", "150"], cwd=cwd)
check(rc == 0 and succeeded(out) == 3, "--fixed-schedule-start-offset 50 --fixed-schedule-end-offset 150: the 3 "
      "lines within", out[-400:] + err[-400:])
check(os.path.isdir(os.path.join(cwd, "artifacts", "Qwen_Qwen3-0.6B-openai-chat-fixed_schedule")),
      "a fixed schedule's directory: ...-fixed_schedule")

# A multi_turn file: --request-count counts conversations (AIPerf's credits),
# every turn a record.
cwd = fresh_dir("multi")
rc, out, err = run(["-m", MODEL, "-u", URL, "--input-file", multi, "--custom-dataset-type", "multi_turn",
                    "--request-count", "3", "--osl", "2", "--artifact-dir", "mt"], cwd=cwd)
with open(os.path.join(cwd, "mt", "profile_export.jsonl")) as f:
    turns = [json.loads(x)["metadata"]["turn_index"] for x in f if x.strip()]
check(rc == 0 and "Sessions: 3 measured, 3 completed" in out and sorted(turns) == [0, 0, 0, 1, 1, 1],
      "multi_turn --request-count 3: 3 conversations of 2 turns, 6 records", (rc, turns, err[-400:]))

# Values AIPerf refuses, or tokperf cannot read: exit 2, naming the flag.
for words in (["--goodput", "time_to_first_token"], ["--goodput", "time_to_first_token:-1"],
              ["--goodput", "time_to_first_token:abc"], ["--goodput", "time_to_first_token:"],
              ["--header", "NoColon"], ["--header", ":empty-name"], ["--header", '{"X-A": 1}'],
              ["--request-rate", "0"], ["--request-rate", "-2"], ["--concurrency", "0"], ["--request-count", "0"],
              ["--benchmark-duration", "0.5"], ["--endpoint-type", "generate"], ["--custom-dataset-type", "x"],
              ["--fixed-schedule-start-offset", "9", "--fixed-schedule-end-offset", "3", "--input-file", trace],
              ["--input-file", os.path.join(tmp, "absent.jsonl")]):
    rc, out, err = run(["-m", MODEL, "-u", URL, "--request-count", "2"] + words if "--request-count" not in words
                       and "--benchmark-duration" not in words else ["-m", MODEL, "-u", URL] + words)
    check(rc == 2 and words[0] in err, "%s: exit 2, naming %s" % (" ".join(words)[:70], words[0]),
          "rc %d: %s" % (rc, err[-300:]))

# Random command lines of AIPerf's flags and values, against a closed port:
# every one ends with a usage error (2) or a failed start (3), never a
# crash (under the sanitizers a report fails it).
import random  # noqa: E402

rnd = random.Random(27)
values = ["0", "1", "-1", "2.5", "1e9", "", "x", ":", "a:b", "{", "{}", '{"a": "b"}', "time_to_first_token:1",
          "chat", "completions", "mooncake_trace", "multi_turn", "none", trace, single, tmp, "-", "--", "=" * 3]
flags = [f for f in captured if not f.startswith("-v")]
dead = "127.0.0.1:%d" % free_port()
bad_exit = []
for i in range(120):
    argv = ["-u", dead, "-q", "--artifact-dir", os.path.join(tmp, "fz")]
    for _ in range(rnd.randint(1, 5)):
        f = rnd.choice(flags)
        argv += [f] if rnd.random() < 0.3 else ([f, rnd.choice(values)] if rnd.random() < 0.8 else
                                                 ["%s=%s" % (f, rnd.choice(values))])
    p = subprocess.run([TOKPERF, "aiperf", "profile"] + argv, capture_output=True, text=True, timeout=TIMEOUT,
                       cwd=tmp)
    if p.returncode not in (2, 3) or "Sanitizer" in p.stderr or "runtime error" in p.stderr:
        bad_exit.append((p.returncode, argv, p.stderr[-300:]))
check(not bad_exit, "120 random command lines of AIPerf's flags: exit 2 or 3, no crash", bad_exit[:3])

# AIPerf's own checks.
for words, say in ((["--request-count", "3", "--benchmark-duration", "2"], "exclude each other"),
                   (["--benchmark-grace-period", "2"], "goes with --benchmark-duration"),
                   (["--fixed-schedule"], "need --input-file"),
                   (["--fixed-schedule-end-offset", "100"], "need --input-file"),
                   (["--input-file", trace, "--fixed-schedule-auto-offset", "--fixed-schedule-start-offset", "5"],
                    "exclude each other"),
                   (["--input-file", tmp], "is a directory")):
    rc, out, err = run(["-m", MODEL, "-u", URL] + words)
    check(rc == 2 and say in err, "%s: exit 2, '%s'" % (" ".join(words)[:60], say), err[-300:])
rc, out, err = run(["-u", URL])
check(rc == 2 and "--model" in err, "no --model: exit 2 (AIPerf requires it)", err[-300:])

stop_mock(mock)
done()
