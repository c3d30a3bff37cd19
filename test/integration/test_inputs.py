#!/usr/bin/env python3
"""Input files of other tools (docs/inputs.md): perf_analyzer's input data,
OpenAI chat messages lines, ShareGPT, AIPerf single_turn.  Each runs
`tokperf profile --mock` and the records must show the file's prompts
(input tokens counted with the words tokenizer, whose tokens are words) and
lengths; chat messages are checked at a small capture server, which must
receive them as messages.  Prints TAP."""
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tp_check import SCALE, check, done  # noqa: E402

TOKPERF = sys.argv[1]
WORDS = os.environ.get("TP_WORDS_MODEL")
tmp = tempfile.mkdtemp(prefix="tp_inputs_")


def run(args, timeout=60):
    p = subprocess.run([TOKPERF] + args, capture_output=True, text=True, timeout=timeout * SCALE)
    return p.returncode, p.stdout, p.stderr


def write(name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def profile(path, extra=(), n=4):
    art = os.path.join(tmp, "art_" + os.path.basename(path))
    args = ["profile", "--mock", "--input-file", path, "--request-count", str(n), "--artifact-dir", art, "-q"]
    if WORDS:
        args += ["--tokenizer", WORDS]
    rc, out, err = run(args + list(extra))
    recs = []
    if rc == 0:
        with open(os.path.join(art, "records.jsonl")) as f:
            recs = [json.loads(line) for line in f if line.strip()]
    return rc, err, recs


def by_prompt(recs, key):
    """{prompt_index: value} over the records (the same for every request of a prompt)."""
    seen = {}
    for r in recs:
        seen.setdefault(r["prompt_index"], set()).add(r[key])
    return {k: (v.pop() if len(v) == 1 else sorted(v)) for k, v in seen.items()}


# perf_analyzer's input data on Triton gRPC: each entry's tensors are sent as
# given, with the model's datatypes (BYTES, INT32, BOOL, FP32, base64 raw).
pa = write("pa.json", json.dumps({"data": [
    {"text_input": ["the of and to"], "max_tokens": [5], "stream": [True], "temperature": [0.5],
     "top_k": {"content": [3], "shape": [1]}},
    {"text_input": {"b64": "CgAAAGluIGlzIHRoYXQ="}, "max_tokens": [4], "stream": [True]},
]}, indent=2))
rc, err, recs = profile(pa)
check(rc == 0 and len(recs) == 4 and all(r["ok"] for r in recs), "perf_analyzer input data runs on the ensemble",
      err)
check(by_prompt(recs, "max_tokens") == {0: 5, 1: 4}, "perf_analyzer: max_tokens from the max_tokens tensor",
      by_prompt(recs, "max_tokens"))
if WORDS:
    check(by_prompt(recs, "input_tokens") == {0: 4, 1: 3},
          "perf_analyzer: the text_input prompts, list and base64, are counted", by_prompt(recs, "input_tokens"))
    check(by_prompt(recs, "output_tokens") == {0: 5, 1: 4}, "perf_analyzer: the model honoured max_tokens",
          by_prompt(recs, "output_tokens"))
check("not sent as given" not in err, "perf_analyzer: nothing said dropped when the tensors are sent", err)
# The file's own stream tensor decides: false gives one answer per request,
# where tokperf's own requests would stream one response per token.
pa1 = write("pa_unary.json", '{"data": [{"text_input": ["the of"], "max_tokens": [6], "stream": [false]}]}')
rc, err, recs = profile(pa1, n=2)
check(rc == 0 and recs and all(len(r["response_ns"]) == 1 for r in recs),
      "perf_analyzer: the file's stream=false reached the model (one response each)",
      [len(r["response_ns"]) for r in recs] or err)
rc, err, recs = profile(pa1, ["--cache-bust"], n=2)
check(rc == 0 and recs and all(len(r["response_ns"]) > 1 for r in recs) and
      err.count("inputs not sent as given (tokperf sets them from its options): stream") == 1,
      "perf_analyzer with --cache-bust: tokperf builds the tensors and says which were not sent", err)
pav = write("pa_vllm.json", '{"data": [{"text_input": ["it was"], "stream": [true], '
                            '"sampling_parameters": ["{\\"max_tokens\\": 9}"]}]}')
rc, err, recs = profile(pav, ["-m", "vllm_model", "--backend", "vllm"], n=2)
check(rc == 0 and by_prompt(recs, "max_tokens") == {0: 9} and
      (not WORDS or by_prompt(recs, "output_tokens") == {0: 9}),
      "perf_analyzer: vLLM sampling_parameters sent and read", err or by_prompt(recs, "output_tokens"))
old = write("pa_old.json", '{"data": [{"text_input": ["a"]}, {"PROMPT": ["in is that"], "STREAM": [true]}]}')
rc, out, err = run(["profile", "--mock", "--input-file", old])
check(rc == 2 and old + ': data[1]: input "PROMPT": model \'ensemble\' has no such input' in err,
      "perf_analyzer: an input the model lacks is named with its entry before the run", err)
rc, err, recs = profile(old, ["--service-kind", "openai", "--endpoint-type", "completions"])
check(rc == 0 and by_prompt(recs, "input_tokens" if WORDS else "max_tokens") == ({0: 1, 1: 3} if WORDS else {0: 128, 1: 128}),
      "perf_analyzer over HTTP: the PROMPT of the old vLLM tutorial model is the prompt", err)
check(err.count("inputs not sent as given (tokperf sets them from its options): STREAM") == 1,
      "perf_analyzer over HTTP: the inputs not sent are named once", err)
rc, out, err = run(["profile", "--mock", "--input-data", "random"])
check(rc == 2 and "--input-data random (perf_analyzer's generated tensors) is not supported" in err,
      "--input-data random refused with a reason", err)
bad = write("pa_bad.json", '{\n "data": [\n  {"text_input": ["a"]},\n  {"max_tokens": [3]}\n ]\n}\n')
rc, out, err = run(["profile", "--mock", "--input-data", bad])
check(rc == 2 and bad + ": data[1]: no prompt" in err, "perf_analyzer: a bad entry is named", err)
bad = write("pa_type.json", '{"data": [{"text_input": ["a"], "max_tokens": [5]}, {"text_input": ["b"], "max_tokens": [1.5]}]}')
rc, out, err = run(["profile", "--mock", "--input-data", bad])
check(rc == 2 and bad + ': data[1]: input "max_tokens": expected a list holding one positive integer' in err,
      "perf_analyzer: a value of the wrong type is named", err)
bad = write("pa_dtype.json", '{"data": [{"text_input": ["a"], "stream": ["yes"]}]}')
rc, out, err = run(["profile", "--mock", "--input-data", bad])
check(rc == 2 and bad + ': data[0]: input "stream": element 0 does not fit the model\'s datatype BOOL' in err,
      "perf_analyzer: a value the model's datatype cannot take is named", err)

# AIPerf single_turn.
ai = write("ai.jsonl", '{"text": "with his they at", "output_length": 6, "timestamp": 0}\n'
                       '{"texts": ["be this", "from"], "timestamp": 100}\n')
rc, err, recs = profile(ai)
check(rc == 0 and len(recs) == 4, "AIPerf single_turn runs", err)
check(by_prompt(recs, "max_tokens") == {0: 6, 1: 128}, "AIPerf: output_length is max_tokens",
      by_prompt(recs, "max_tokens"))
if WORDS:
    check(by_prompt(recs, "input_tokens") == {0: 4, 1: 3}, "AIPerf: text and texts arrived",
          by_prompt(recs, "input_tokens"))
check(err.count('"timestamp" field of the lines is ignored') == 1, "AIPerf: timestamps said ignored, once", err)
bad = write("ai_bad.jsonl", '{"text": "a"}\n{"texts": [1]}\n')
rc, out, err = run(["profile", "--mock", "--input-file", bad])
check(rc == 2 and bad + ':2: "texts" must be a non-empty list of strings' in err, "AIPerf: a bad line is named", err)

# ShareGPT: the first human turn; the answer's length is max_tokens.
sg = write("sg.json", json.dumps([
    {"id": "a", "conversations": [{"from": "human", "value": "have or by one had"},
                                  {"from": "gpt", "value": "not but what"}, {"from": "human", "value": "x"}]},
    {"id": "b", "conversations": [{"from": "human", "value": "alone"}]},
]))
rc, err, recs = profile(sg)
check(rc == 0 and len(recs) == 4, "ShareGPT runs", err)
if WORDS:
    check(by_prompt(recs, "input_tokens") == {0: 5}, "ShareGPT: the first human turn is the prompt",
          by_prompt(recs, "input_tokens"))
    check(by_prompt(recs, "max_tokens") == {0: 3}, "ShareGPT: the first answer's tokens are max_tokens",
          by_prompt(recs, "max_tokens"))
check("1 of 2 ShareGPT entries skipped" in err, "ShareGPT: short entries skipped and counted", err)
bad = write("sg_bad.json", '[{"conversations": [{"from": "human", "value": "a"}, {"from": "gpt"}]}]')
rc, out, err = run(["profile", "--mock", "--input-file", bad])
check(rc == 2 and bad + ": [0].conversations[1]: expected" in err, "ShareGPT: a bad turn is named", err)

# Chat messages against the mock (Triton and OpenAI chat): the text of all
# messages is the prompt.
chat = write("chat.jsonl",
             '{"messages": [{"role": "system", "content": "all were when"}, '
             '{"role": "user", "content": "we there can an"}], "max_tokens": 7}\n'
             '{"messages": [{"role": "user", "content": "your which"}]}\n')
rc, err, recs = profile(chat)
check(rc == 0 and by_prompt(recs, "max_tokens") == {0: 7, 1: 128}, "chat lines run on Triton (text joined)", err)
if WORDS:
    check(by_prompt(recs, "input_tokens") == {0: 7, 1: 2}, "chat: input tokens are those of all messages",
          by_prompt(recs, "input_tokens"))
rc, err, recs = profile(chat, ["--service-kind", "openai", "--endpoint-type", "chat"])
check(rc == 0 and len(recs) == 4 and all(r["ok"] for r in recs), "chat lines run on the mock's chat API", err)
bad = write("chat_bad.jsonl", '{"messages": [{"role": "user", "content": "a"}, {"content": "b"}]}\n')
rc, out, err = run(["profile", "--mock", "--input-file", bad])
check(rc == 2 and bad + ':1: "messages"[1]: expected' in err, "chat: a bad message is named", err)


# A capture server: what arrives at /v1/chat/completions and /v1/completions.
bodies = []


class Capture(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, obj):
        data = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.reply({"object": "list", "data": [{"id": "m", "object": "model"}]})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        bodies.append((self.path, body))
        usage = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
        if self.path.endswith("/chat/completions"):
            self.reply({"id": "c", "object": "chat.completion", "usage": usage, "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "a b"}, "finish_reason": "stop"}]})
        else:
            self.reply({"id": "c", "object": "text_completion", "usage": usage,
                        "choices": [{"index": 0, "text": "a b", "finish_reason": "stop"}]})


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Capture)
threading.Thread(target=srv.serve_forever, daemon=True).start()
url = "http://127.0.0.1:%d" % srv.server_address[1]
for kind in ["chat", "completions"]:
    del bodies[:]
    rc, out, err = run(["profile", "--service-kind", "openai", "--endpoint-type", kind, "-u", url, "-m", "m",
                        "--no-streaming", "--input-file", chat, "--request-count", "2", "-q",
                        "--artifact-dir", os.path.join(tmp, "cap_" + kind)])
    posts = [b for p, b in bodies if p.startswith("/v1/")]
    check(rc == 0 and len(posts) >= 2, "%s: requests reach the capture server" % kind, err)
    first = next((b for b in posts if b.get("max_tokens") == 7), {})
    if kind == "chat":
        check(first.get("messages") == [{"role": "system", "content": "all were when"},
                                         {"role": "user", "content": "we there can an"}],
              "chat: the file's two messages arrive as two messages", json.dumps(first))
    else:
        check(first.get("prompt") == "all were when\nwe there can an",
              "completions: the messages arrive joined by a newline", json.dumps(first))
srv.shutdown()

done()
