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


# perf_analyzer's input data, pretty-printed, three model layouts.
pa = write("pa.json", json.dumps({"data": [
    {"text_input": ["the of and to"], "max_tokens": [5], "stream": [True]},
    {"PROMPT": {"content": ["in is that"], "shape": [1]}, "STREAM": [True]},
    {"text_input": ["it was"], "sampling_parameters": ['{"max_tokens": 9}']},
]}, indent=2))
rc, err, recs = profile(pa, n=6)
check(rc == 0 and len(recs) == 6, "perf_analyzer input data runs", err)
check(by_prompt(recs, "max_tokens") == {0: 5, 1: 128, 2: 9},
      "perf_analyzer: max_tokens from the max_tokens tensor and sampling_parameters", by_prompt(recs, "max_tokens"))
if WORDS:
    check(by_prompt(recs, "input_tokens") == {0: 4, 1: 3, 2: 2},
          "perf_analyzer: the prompts of text_input and PROMPT arrived (input tokens)", by_prompt(recs, "input_tokens"))
check(err.count("inputs not sent as given") == 1 and "stream STREAM" in err,
      "perf_analyzer: the inputs tokperf sets itself are named once on stderr", err)
rc, out, err = run(["profile", "--mock", "--input-data", "random"])
check(rc == 2 and "--input-data random (perf_analyzer's generated tensors) is not supported" in err,
      "--input-data random refused with a reason", err)
bad = write("pa_bad.json", '{\n "data": [\n  {"text_input": ["a"]},\n  {"max_tokens": [3]}\n ]\n}\n')
rc, out, err = run(["profile", "--mock", "--input-data", bad])
check(rc == 2 and bad + ": data[1]: no prompt" in err, "perf_analyzer: a bad entry is named", err)

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
