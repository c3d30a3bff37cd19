#!/usr/bin/python3
"""tokperf (the client under test) against servers of the engines' own gRPC
protocols written with python3-grpcio: vLLM's VllmEngine and SGLang's
SglangScheduler, from tokperf's proto/vllm_engine.proto and
proto/sglang_scheduler.proto (stubs generated at test time).

usage: test_grpcio_engines.py PATH/TO/tokperf

Each peer streams the way its engine does: several token ids per chunk;
vLLM with the counts of each step and a final complete repeating the last
chunk, SGLang with running totals and the last step's ids in the complete;
errors as vLLM's gRPC status or SGLang's GenerateError; an Abort call that
it logs.  The peer keeps its own log: when each request arrived, when it
began to send each message (time.monotonic_ns, the clock tokperf's records
use), how many ids it sent, the cached tokens it reported.  The checks hold
tokperf's --records and --json against that log.

Output: TAP.
"""

import json
import os
import subprocess
import sys
import threading
import time
from concurrent import futures

sys.dont_write_bytecode = True
import interop_common as ic  # noqa: E402

ic.import_grpc_or_skip()
import grpc  # noqa: E402

SCALE = ic.time_scale()
FIRST_DELAY_S = 0.004  # before the first chunk
GAP_S = 0.002          # between chunks
CHUNK_SIZES = (1, 2, 3)  # ids per chunk, in turn
INPUT_TOKENS = 20
OUTPUT_TOKENS = 12
# The bound the timing checks hold every response to: the peer's send
# stamp is taken just before its write, tokperf's is the kernel's receive
# stamp, on the same monotonic clock.
TOL_NS = 500_000


class Peer:
    """One protocol's servicer and its log.  proto: "vllm" or "sglang"."""

    def __init__(self, proto, pb):
        self.proto = proto
        self.pb = pb
        self.lock = threading.Lock()
        self.vocab = 4096
        self.error_every = 0
        self.first_delay = FIRST_DELAY_S
        self.gap = GAP_S
        self.default_max = 16
        self.reset()

    def reset(self):
        with self.lock:
            self.reqs = {}   # request id -> log entry
            self.order = 0
            self.aborts = []  # (t_ns, [ids])
            self.health = 0
            self.model_info = 0

    # -- the log -----------------------------------------------------------------

    def begin(self, request, context):
        now = time.monotonic_ns()
        sp = request.sampling_params
        d = {"recv_ns": now, "sends": [], "ids_sent": 0, "cached": 0, "error": False,
             "cancelled": False, "stream": request.stream, "done": False, "ended": False}
        if self.proto == "vllm":
            kind = request.WhichOneof("input")
            d["n_ids"] = len(request.tokenized.input_ids) if kind == "tokenized" else 0
            d["text"] = request.text if kind == "text" else None
            d["max"] = sp.max_tokens if sp.HasField("max_tokens") else None
            d["min"] = sp.min_tokens
            d["temperature"] = sp.temperature if sp.HasField("temperature") else None
            d["seed"] = sp.seed if sp.HasField("seed") else None
            d["top_p"], d["top_k"] = sp.top_p, sp.top_k
            d["ids"] = list(request.tokenized.input_ids) if kind == "tokenized" else []
        else:
            d["n_ids"] = len(request.tokenized.input_ids)
            d["text"] = None
            d["max"] = sp.max_new_tokens if sp.HasField("max_new_tokens") else None
            d["min"] = sp.min_new_tokens
            d["temperature"], d["top_p"], d["top_k"] = sp.temperature, sp.top_p, sp.top_k
            d["seed"] = None
            d["ids"] = list(request.tokenized.input_ids)
        d["ignore_eos"] = sp.ignore_eos
        d["stop"] = list(sp.stop)
        with self.lock:
            d["k"] = self.order
            self.order += 1
            self.reqs[request.request_id] = d
        return d

    # -- the service ---------------------------------------------------------------

    def Generate(self, request, context):
        pb = self.pb
        rid = request.request_id
        d = self.begin(request, context)
        # The call's end, however it came: the peer's own view of a cancel.
        context.add_callback(lambda: d.__setitem__("ended", True))
        n_total = d["max"] if d["max"] else self.default_max
        prompt = d["n_ids"] if d["n_ids"] else len((d["text"] or "").split())
        # Cached tokens: whole blocks of 16 of the prompt, its last token never.
        cached = ((prompt - 1) // 16) * 16 if prompt > 1 else 0
        d["cached"] = cached
        k = d["k"]
        fail = self.error_every and k % self.error_every == self.error_every - 1
        time.sleep(self.first_delay)
        if fail:
            d["error"] = True
            if self.proto == "vllm":
                context.abort(grpc.StatusCode.INTERNAL, "peer error on %s" % rid)
            yield pb.GenerateResponse(request_id=rid, error=pb.GenerateError(
                message="peer error on %s" % rid, http_status_code="500"))
            return
        groups, i, c = [], 0, 0
        while i < n_total:
            n = min(CHUNK_SIZES[c % len(CHUNK_SIZES)], n_total - i)
            groups.append([(7 * k + 3 * (i + j)) % 200 + 5 for j in range(n)])
            i += n
            c += 1
        sent = 0
        for gi, ids in enumerate(groups):
            if gi:
                time.sleep(self.gap)
            if not context.is_active() or rid in self.aborted_ids():
                d["cancelled"] = True
                return
            last = gi == len(groups) - 1
            sent += len(ids)
            d["ids_sent"] = sent
            if not d["stream"]:
                if last:
                    yield from self.emit(d, self.complete(rid, [x for g in groups for x in g], prompt, sent,
                                                          cached), sent)
                continue
            if self.proto == "vllm":
                yield from self.emit(d, pb.GenerateResponse(chunk=pb.GenerateStreamChunk(
                    token_ids=ids, prompt_tokens=prompt, completion_tokens=len(ids), cached_tokens=cached)),
                    len(ids))
                if last:
                    yield pb.GenerateResponse(complete=pb.GenerateComplete(
                        output_ids=ids, finish_reason="length", prompt_tokens=prompt,
                        completion_tokens=len(ids), cached_tokens=cached))
            elif not last:
                yield from self.emit(d, pb.GenerateResponse(request_id=rid, chunk=pb.GenerateStreamChunk(
                    token_ids=ids, prompt_tokens=prompt, completion_tokens=sent, cached_tokens=cached)), len(ids))
            else:
                yield from self.emit(d, pb.GenerateResponse(request_id=rid, complete=pb.GenerateComplete(
                    output_ids=ids, finish_reason="length", prompt_tokens=prompt, completion_tokens=sent,
                    cached_tokens=cached)), len(ids))
        d["done"] = True

    @staticmethod
    def emit(d, msg, n):
        """Yields msg and logs when its sending began and ended: grpcio's
        server hands a yielded message to the transport and waits for that
        to complete before it asks for the next, so the generator resumes
        only after the bytes left."""
        ent = [time.monotonic_ns(), None, n]
        d["sends"].append(ent)
        yield msg
        ent[1] = time.monotonic_ns()

    def complete(self, rid, ids, prompt, n, cached):
        pb = self.pb
        c = pb.GenerateComplete(output_ids=ids, finish_reason="length", prompt_tokens=prompt,
                                completion_tokens=n, cached_tokens=cached)
        if self.proto == "vllm":
            return pb.GenerateResponse(complete=c)
        return pb.GenerateResponse(request_id=rid, complete=c)

    def aborted_ids(self):
        with self.lock:
            return {i for _, ids in self.aborts for i in ids}

    def HealthCheck(self, request, context):
        with self.lock:
            self.health += 1
        return self.pb.HealthCheckResponse(healthy=True, message="ok")

    def GetModelInfo(self, request, context):
        with self.lock:
            self.model_info += 1
        return self.pb.GetModelInfoResponse(model_path="/models/peer-model", served_model_name="peer-model",
                                            is_generation=True, max_context_length=4096,
                                            vocab_size=self.vocab)

    def Abort(self, request, context):
        ids = list(request.request_ids) if self.proto == "vllm" else [request.request_id]
        with self.lock:
            self.aborts.append((time.monotonic_ns(), ids))
        if self.proto == "vllm":
            return self.pb.AbortResponse()
        return self.pb.AbortResponse(success=True, message="aborted")

    def snapshot(self):
        with self.lock:
            return {"reqs": {k: dict(v) for k, v in self.reqs.items()}, "aborts": list(self.aborts),
                    "health": self.health, "model_info": self.model_info}


def add_servicer(proto, pbg, peer, server):
    """Binds peer's methods to the generated servicer class of proto."""
    if proto == "vllm":
        base, add = pbg.VllmEngineServicer, pbg.add_VllmEngineServicer_to_server
    else:
        base, add = pbg.SglangSchedulerServicer, pbg.add_SglangSchedulerServicer_to_server

    class S(base):
        def Generate(self, request, context):
            return peer.Generate(request, context)

        def HealthCheck(self, request, context):
            return peer.HealthCheck(request, context)

        def GetModelInfo(self, request, context):
            return peer.GetModelInfo(request, context)

        def Abort(self, request, context):
            return peer.Abort(request, context)

    add(S(), server)


class Harness:
    def __init__(self, tap, tokperf, tmp):
        self.tap = tap
        self.tokperf = tokperf
        self.tmp = tmp
        self.model = os.environ.get("TP_WORDS_MODEL")
        if self.model and not os.path.exists(self.model):
            self.model = None
        self.runs = 0

    def run(self, peer, port, kind, args, tokenizer=True, timeout=90):
        self.runs += 1
        jpath = os.path.join(self.tmp, "run%d.json" % self.runs)
        rpath = os.path.join(self.tmp, "run%d.jsonl" % self.runs)
        if peer:
            peer.reset()
        cmd = [self.tokperf, "profile", "-u", "127.0.0.1:%d" % port, "--service-kind", kind, "-q",
               "--json", jpath, "--records", rpath] + args
        if tokenizer and self.model:
            cmd += ["--tokenizer", self.model]
        res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout * SCALE)
        out = {"cmd": cmd, "rc": res.returncode, "stderr": res.stderr.decode(errors="replace"),
               "doc": None, "records": []}
        if os.path.exists(jpath):
            with open(jpath) as f:
                out["doc"] = json.load(f)
        if os.path.exists(rpath):
            with open(rpath) as f:
                out["records"] = [json.loads(x) for x in f if x.strip()]
        time.sleep(0.05)
        out["peer"] = peer.snapshot() if peer else None
        return out

    def show(self, r):
        self.tap.diag("command: " + " ".join(r["cmd"]))
        self.tap.diag("exit %d; stderr:\n%s" % (r["rc"], r["stderr"][-2000:]))

    def ok_exit(self, r, name, want=0):
        if not self.tap.equal(r["rc"], want, "%s: tokperf exits %d" % (name, want)):
            self.show(r)
            return False
        return True


def levels(doc):
    return doc.get("levels", []) if doc else []


def case_sweep(h, proto, kind, peer, port):
    """--concurrency 1,8,64: every figure against the peer's log."""
    name = "%s sweep" % kind
    if not h.model:
        h.tap.skip(name, "TP_WORDS_MODEL missing: the prompts are made of exact token counts")
        return
    r = h.run(peer, port, kind, ["--concurrency", "1,8,64", "--request-count", "128",
                                 "--synthetic-input-tokens-mean", str(INPUT_TOKENS),
                                 "--output-tokens-mean", str(OUTPUT_TOKENS)])
    if not h.ok_exit(r, name):
        return
    log = r["peer"]["reqs"]
    recs = [x for x in r["records"] if not x.get("warmup")]
    h.tap.equal(len(recs), 3 * 128, "%s: a record per request" % name)
    h.tap.equal(sorted(x["id"] for x in recs), sorted(log), "%s: the request ids sent are tokperf's" % name)
    bad_out = [(x["id"], x["output_tokens"], log[x["id"]]["ids_sent"]) for x in recs
               if x["id"] in log and x["output_tokens"] != log[x["id"]]["ids_sent"]]
    h.tap.check(not bad_out, "%s: output tokens of every request = the ids the peer sent (%d)" %
                (name, OUTPUT_TOKENS), bad_out[:5])
    bad_in = [(k, v["n_ids"]) for k, v in log.items() if v["n_ids"] != INPUT_TOKENS]
    h.tap.check(not bad_in, "%s: every prompt went as exactly %d token ids" % (name, INPUT_TOKENS), bad_in[:5])
    bad_in = [(x["id"], x["input_tokens"]) for x in recs if x["input_tokens"] != INPUT_TOKENS]
    h.tap.check(not bad_in, "%s: input tokens of every record = %d" % (name, INPUT_TOKENS), bad_in[:5])
    h.tap.check(all(v["max"] == OUTPUT_TOKENS for v in log.values()),
                "%s: max_tokens %d asked of the peer" % (name, OUTPUT_TOKENS))
    lv = levels(r["doc"])
    h.tap.equal(len(lv), 3, "%s: three levels" % name)
    for L in lv:
        c = L.get("concurrency")
        h.tap.check(L.get("failed") == 0 and L.get("succeeded") == L.get("requests"),
                    "%s c=%s: every request succeeded" % (name, c), {k: L.get(k) for k in ("requests", "failed",
                                                                                           "first_error")})
        ids = {x["id"] for x in recs if x["concurrency"] == c}
        want_cached = sum(log[i]["cached"] for i in ids if i in log)
        h.tap.equal(L.get("server_cached_tokens"), want_cached,
                    "%s c=%s: cached tokens reported = the peer's (%d)" % (name, c, want_cached))
    # Timing at c=8, against the peer's log of when it sent each message
    # (it stamps the start of the write and when grpcio says it is done; the
    # bytes may leave a little after that, on grpcio's own thread).
    c8 = [x for x in recs if x["concurrency"] == 8]
    early, off = [], []
    client_ttft, peer_ttft, client_itl, peer_itl = [], [], [], []
    for x in c8:
        p = log.get(x["id"])
        if not p:
            continue
        sends = [(b, a) for b, a, n in p["sends"] if n > 0]
        # vLLM's complete repeats the last chunk: a response of its own at
        # the client, after the ones compared here.
        for t, (b, a) in zip(x["response_ns"], sends):
            if t < b:
                early.append((x["id"], b - t))
            off.append(max(0, t - (a or b)))
        # TTFT from tokperf's own send stamp to the peer's first send: the
        # figure's end is what the peer's log can vouch for.
        client_ttft.append(x["first_token_ns"] - x["sent_ns"])
        peer_ttft.append(sends[0][0] - x["sent_ns"])
        n = x["output_tokens"]
        if n > 1 and len(sends) > 1:
            client_itl.append((x["last_token_ns"] - x["first_token_ns"]) / (n - 1))
            peer_itl.append((sends[-1][0] - sends[0][0]) / (n - 1))
    off.sort()

    def avg(v):
        return sum(v) / len(v) if v else float("nan")

    def p50(v):
        return sorted(v)[len(v) // 2] if v else float("nan")

    figs = [("TTFT avg", avg(client_ttft), avg(peer_ttft)), ("TTFT p50", p50(client_ttft), p50(peer_ttft)),
            ("ITL avg", avg(client_itl), avg(peer_itl)), ("ITL p50", p50(client_itl), p50(peer_itl))]
    h.tap.diag("%s c=8: responses after the peer's write: p50 %.3f ms, p95 %.3f ms, max %.3f ms; %s" % (
        name, off[len(off) // 2] / 1e6, off[int(len(off) * 0.95)] / 1e6, off[-1] / 1e6,
        ", ".join("%s %.3f/%.3f ms" % (f, c / 1e6, p / 1e6) for f, c, p in figs)))
    h.tap.check(not early, "%s c=8: no response dated before the peer began to send it" % name, early[:5])
    h.tap.check(off and off[int(len(off) * 0.95)] <= TOL_NS,
                "%s c=8: 95%% of responses dated within 0.5 ms of the peer's send" % name, off[-5:])
    for f, c, p in figs:
        h.tap.check(abs(c - p) <= TOL_NS, "%s c=8: %s within 0.5 ms of the peer's log" % (name, f),
                    "tokperf %.3f ms, peer %.3f ms" % (c / 1e6, p / 1e6))
    bad = [x["id"] for x in c8 if x["id"] in log and x["sent_ns"] > log[x["id"]]["recv_ns"]]
    h.tap.check(not bad, "%s c=8: every request dated sent before the peer had it" % name, bad[:5])
    h.tap.check(r["peer"]["health"] >= 1 and r["peer"]["model_info"] >= 1,
                "%s: preflight called HealthCheck and GetModelInfo" % name)


def case_errors(h, proto, kind, peer, port):
    """Every 4th request fails: vLLM's status, SGLang's GenerateError."""
    name = "%s errors" % kind
    peer.error_every = 4
    try:
        r = h.run(peer, port, kind, ["--concurrency", "4", "--request-count", "16", "--output-tokens-mean", "6",
                                     "--synthetic-input-tokens-mean", "10"])
    finally:
        peer.error_every = 0
    if r["rc"] not in (0, 1):
        h.show(r)
    lv = levels(r["doc"])
    if not h.tap.check(len(lv) == 1, "%s: one level reported" % name):
        h.show(r)
        return
    L = lv[0]
    want = sum(1 for v in r["peer"]["reqs"].values() if v["error"])
    cls = "grpc_status" if proto == "vllm" else "server_error"
    h.tap.equal(L.get("errors_by_class", {}).get(cls), want, "%s: %d failures counted as %s" % (name, want, cls))
    h.tap.equal(L.get("failed"), want, "%s: failed = the peer's errors" % name)
    h.tap.check("peer error on" in (L.get("first_error") or ""), "%s: the peer's message is kept" % name,
                L.get("first_error"))
    bad = [x["id"] for x in r["records"] if x["ok"] == r["peer"]["reqs"].get(x["id"], {}).get("error")]
    h.tap.check(not bad, "%s: exactly the requests the peer failed are failed" % name, bad[:5])


def case_abort(h, proto, kind, peer, port):
    """Requests tokperf cancels (--max-output-tokens, --request-timeout)
    reach the peer as Abort calls naming them, and their streams end."""
    name = "%s abort" % kind
    peer.gap = 0.02
    try:
        r = h.run(peer, port, kind, ["--concurrency", "2", "--request-count", "4", "--output-tokens-mean", "40",
                                     "--max-output-tokens", "3", "--synthetic-input-tokens-mean", "10"])
    finally:
        peer.gap = GAP_S
    p = r["peer"]
    aborted = {i for _, ids in p["aborts"] for i in ids}
    sent = set(p["reqs"])
    h.tap.check(sent and sent <= aborted, "%s: every cancelled request named in an Abort call" % name,
                "sent %s, aborted %s" % (sorted(sent), sorted(aborted)))
    h.tap.check(p["reqs"] and all(v["ended"] and not v["done"] and v["ids_sent"] < 40 for v in p["reqs"].values()),
                "%s: the peer saw each call cancelled before its 40 tokens" % name,
                {k: (v["ids_sent"], v["ended"], v["done"]) for k, v in p["reqs"].items()})
    lv = levels(r["doc"])
    h.tap.check(lv and lv[0].get("failed") == 4, "%s: the cancelled answers count as failed" % name,
                lv[0] if lv else r["stderr"][-500:])
    peer.first_delay = 0.5
    try:
        r = h.run(peer, port, kind, ["--concurrency", "2", "--request-count", "2", "--request-timeout", "100ms",
                                     "--synthetic-input-tokens-mean", "10"])
    finally:
        peer.first_delay = FIRST_DELAY_S
    p = r["peer"]
    aborted = {i for _, ids in p["aborts"] for i in ids}
    h.tap.check(p["reqs"] and set(p["reqs"]) <= aborted, "%s: requests past --request-timeout are aborted" % name,
                "sent %s, aborted %s" % (sorted(p["reqs"]), sorted(aborted)))
    lv = levels(r["doc"])
    h.tap.check(lv and lv[0].get("errors_by_class", {}).get("timeout") == 2, "%s: counted as timeouts" % name,
                lv[0].get("errors_by_class") if lv else r["stderr"][-500:])


def case_sampling(h, proto, kind, peer, port):
    name = "%s sampling" % kind
    args = ["--concurrency", "1", "--request-count", "2", "--output-tokens-mean", "5",
            "--output-tokens-mean-deterministic", "--synthetic-input-tokens-mean", "8",
            "--extra-inputs", "temperature:0", "--extra-inputs", "stop:END"]
    if proto == "vllm":
        args += ["--extra-inputs", "seed:7"]
    r = h.run(peer, port, kind, args)
    if not h.ok_exit(r, name):
        return
    reqs = list(r["peer"]["reqs"].values())
    h.tap.check(reqs and all(v["temperature"] == 0 for v in reqs), "%s: temperature 0 sent" % name)
    h.tap.check(all(v["min"] == 5 and v["ignore_eos"] for v in reqs),
                "%s: deterministic length: min tokens 5 and ignore_eos" % name)
    h.tap.check(all(v["stop"] == ["END"] for v in reqs), "%s: stop strings sent" % name)
    if proto == "vllm":
        h.tap.check(all(v["seed"] == 7 for v in reqs), "%s: seed sent" % name)
    else:
        h.tap.check(all(abs(v["top_p"] - 1) < 1e-6 and v["top_k"] == -1 for v in reqs),
                    "%s: the engine's defaults written out (top_p 1, top_k -1)" % name)
        r = h.run(peer, port, kind, ["--concurrency", "1", "--request-count", "1", "--extra-inputs", "seed:7"])
        h.tap.check(r["rc"] != 0 and "no seed field" in r["stderr"], "%s: seed refused, with why" % name,
                    r["stderr"][-300:])
    r = h.run(peer, port, kind, ["--concurrency", "1", "--request-count", "1", "--extra-inputs", "beam_width:4"])
    h.tap.check(r["rc"] != 0 and "'beam_width'" in r["stderr"] and "--extra-inputs" in r["stderr"],
                "%s: an unknown field is named" % name, r["stderr"][-300:])


def case_unary_and_text(h, proto, kind, peer, port):
    name = "%s unary" % kind
    r = h.run(peer, port, kind, ["--concurrency", "2", "--request-count", "4", "--output-tokens-mean", "7",
                                 "--no-streaming", "--synthetic-input-tokens-mean", "8"])
    if h.ok_exit(r, name):
        h.tap.check(all(not v["stream"] for v in r["peer"]["reqs"].values()), "%s: stream false sent" % name)
        h.tap.check(r["records"] and all(x["output_tokens"] == 7 for x in r["records"]),
                    "%s: output counted from the complete's ids" % name,
                    [x["output_tokens"] for x in r["records"]])
    if proto != "vllm":
        r = h.run(peer, port, kind, ["--concurrency", "1", "--request-count", "1"], tokenizer=False)
        h.tap.check(r["rc"] != 0 and "--tokenizer" in r["stderr"], "%s: token ids need --tokenizer" % kind,
                    r["stderr"][-300:])
        return
    name = "%s text" % kind
    r = h.run(peer, port, kind, ["--concurrency", "2", "--request-count", "4", "--output-tokens-mean", "9"],
              tokenizer=False)
    if h.ok_exit(r, name):
        reqs = list(r["peer"]["reqs"].values())
        h.tap.check(reqs and all(v["text"] and v["n_ids"] == 0 for v in reqs),
                    "%s: without a tokenizer the prompt goes as text" % name)
        h.tap.check(all(x["output_tokens"] == 9 for x in r["records"]),
                    "%s: output tokens exact with no tokenizer" % name,
                    [x["output_tokens"] for x in r["records"]])


def case_vocab(h, proto, kind, peer, port):
    name = "%s vocabulary" % kind
    if not h.model:
        h.tap.skip(name, "TP_WORDS_MODEL missing")
        return
    peer.vocab = 8
    try:
        r = h.run(peer, port, kind, ["--concurrency", "1", "--request-count", "2",
                                     "--synthetic-input-tokens-mean", "8"])
    finally:
        peer.vocab = 4096
    lv = levels(r["doc"])
    h.tap.check(lv and lv[0].get("failed") == 2 and "outside the vocabulary" in (lv[0].get("first_error") or ""),
                "%s: ids beyond the server's vocabulary fail the request, saying why" % name,
                lv[0].get("first_error") if lv else r["stderr"][-300:])
    h.tap.equal(len(r["peer"]["reqs"]), 0, "%s: nothing was sent" % name)


def case_wrong_port(h, kind, other_kind, port, what):
    r = h.run(None, port, kind, ["--concurrency", "1", "--request-count", "1"])
    h.tap.check(r["rc"] != 0 and ("this port speaks %s" % what) in r["stderr"],
                "%s against a %s port: says what the port speaks" % (kind, what), r["stderr"][-400:])


def start_server(register):
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=96))
    register(server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, port


def main():
    if len(sys.argv) != 2:
        print("usage: %s PATH/TO/tokperf" % sys.argv[0], file=sys.stderr)
        return 2
    tokperf = sys.argv[1]
    tap = ic.Tap()
    tmp = ic.make_tmpdir("tp-interop-engines-")
    servers = []
    try:
        h = Harness(tap, tokperf, tmp)
        if not h.model:
            tap.diag("TP_WORDS_MODEL not set or missing: the token id checks are skipped")
        ports = {}
        peers = {}
        for proto in ("vllm", "sglang"):
            pb, pbg = ic.generate_proto_stubs(tmp, "vllm_engine" if proto == "vllm" else "sglang_scheduler")
            peer = Peer(proto, pb)
            srv, port = start_server(lambda s, p=proto, g=pbg, pe=peer: add_servicer(p, g, pe, s))
            servers.append(srv)
            ports[proto], peers[proto] = port, peer
        kpb, kpbg = ic.generate_stubs(tmp)

        class Kserve(kpbg.GRPCInferenceServiceServicer):
            def ServerLive(self, request, context):
                return kpb.ServerLiveResponse(live=True)

        ksrv, kport = start_server(lambda s: kpbg.add_GRPCInferenceServiceServicer_to_server(Kserve(), s))
        servers.append(ksrv)
        for proto, kind in (("vllm", "vllm-grpc"), ("sglang", "sglang-grpc")):
            for case in (case_sweep, case_errors, case_abort, case_sampling, case_unary_and_text, case_vocab):
                try:
                    case(h, proto, kind, peers[proto], ports[proto])
                except Exception:
                    tap.crashed("%s %s" % (kind, case.__name__))
        try:
            case_wrong_port(h, "sglang-grpc", "vllm-grpc", ports["vllm"], "vllm-grpc")
            case_wrong_port(h, "vllm-grpc", "sglang-grpc", ports["sglang"], "sglang-grpc")
            case_wrong_port(h, "vllm-grpc", "triton", kport, "Triton KServe")
        except Exception:
            tap.crashed("wrong ports")
    except Exception:
        tap.crashed("setup")
    finally:
        for s in servers:
            s.stop(0).wait(5 * SCALE)
        ic.remove_tmpdir(tmp)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
