#!/usr/bin/python3
"""tokperf (the client under test) against a KServe v2 server written with
python3-grpcio.

usage: test_grpcio_server.py PATH/TO/tokperf

The server imitates Triton with a TensorRT-LLM 'ensemble' and a vLLM
'vllm_model', plus models that misbehave on purpose ('strict', 'slow',
'unready').  It records every call (method, model, id, inputs, parameters,
deadline, metadata) and checks each inference request against the model's
declared inputs; a byte relay in front of it keeps what tokperf wrote so the
request headers grpcio hides (te, content-type, grpc-timeout) can be read
back with libnghttp2's HPACK decoder.  Each case runs the real tokperf
binary and asserts on its exit status, its --json report, its --records
lines, and on what the server counted.

Output: TAP.
"""

import json
import os
import subprocess
import sys
import threading
import time
from concurrent import futures

# Keep the source tree free of __pycache__ when importing the helper.
sys.dont_write_bytecode = True
import interop_common as ic  # noqa: E402

ic.import_grpc_or_skip()
import grpc  # noqa: E402

SCALE = ic.time_scale()
TOKEN_SLEEP_S = 0.002  # between tokens; also before the first one
SLOW_TOKEN_SLEEP_S = 0.3

TRTLLM_INPUTS = [("text_input", "BYTES", [-1, 1]), ("max_tokens", "INT32", [-1, 1]),
                 ("stream", "BOOL", [-1, 1]), ("min_length", "INT32", [-1, 1])]
VLLM_INPUTS = [("text_input", "BYTES", [1]), ("stream", "BOOL", [1]),
               ("sampling_parameters", "BYTES", [1]), ("exclude_input_in_output", "BOOL", [1])]

# name -> (platform, inputs, outputs, ready, behaviour)
MODELS = {
    "ensemble": ("ensemble", TRTLLM_INPUTS, [("text_output", "BYTES", [-1, -1])], True, "ok"),
    "strict": ("ensemble", TRTLLM_INPUTS, [("text_output", "BYTES", [-1, -1])], True, "strict"),
    "slow": ("ensemble", TRTLLM_INPUTS, [("text_output", "BYTES", [-1, -1])], True, "slow"),
    "unready": ("ensemble", TRTLLM_INPUTS, [("text_output", "BYTES", [-1, -1])], False, "ok"),
    "vllm_model": ("vllm", VLLM_INPUTS, [("text_output", "BYTES", [-1])], True, "ok"),
    # A TensorRT-LLM v0.16+ ensemble: it takes exclude_input_in_output, and
    # its non-streaming answer repeats the prompt unless that is true
    #.
    # vLLM backend r23.10-r24.02: every streamed response holds all the text
    # so far.
    "vllm_cumulative": ("vllm", VLLM_INPUTS, [("text_output", "BYTES", [-1])], True, "cumulative"),
    "ensemble_echo": ("ensemble", TRTLLM_INPUTS + [("exclude_input_in_output", "BOOL", [-1, 1])],
                      [("text_output", "BYTES", [-1, -1])], True, "echo"),
}

PROMPTS = ["the water of the world", "people made many things", "go back home now"]


def unknown_model_message(name):
    return "Request for unknown model: '%s' is not found" % name


def make_servicer(pb, pbg, words):
    class Servicer(pbg.GRPCInferenceServiceServicer):
        def __init__(self):
            self.lock = threading.Lock()
            self.reset()

        def reset(self):
            with getattr(self, "lock", threading.Lock()):
                self.calls = []      # every RPC: dict(method, model, time_remaining, metadata)
                self.infers = []     # every inference request, decoded
                self.sent_text = {}  # request id -> text the server generated
                self.active = {}     # id prefix ("c4") -> streams open now
                self.max_active = {}
                self.peer_active = {}  # client connection -> streams open now
                self.peer_max = {}
                self.counter = 0

        # -- bookkeeping ------------------------------------------------------

        def note_call(self, method, context, model=None):
            tr = context.time_remaining()
            c = {"method": method, "model": model, "peer": context.peer(),
                 "time_remaining": tr,
                 "metadata": [(m.key, m.value) for m in context.invocation_metadata()]}
            with self.lock:
                self.calls.append(c)
            return c

        def enter(self, prefix):
            with self.lock:
                n = self.active.get(prefix, 0) + 1
                self.active[prefix] = n
                self.max_active[prefix] = max(self.max_active.get(prefix, 0), n)

        def leave(self, prefix):
            with self.lock:
                self.active[prefix] -= 1

        def new_text(self, rid, n):
            with self.lock:
                k = self.counter
                self.counter += 1
            toks = [" " + words[(7 * k + 3 * i) % len(words)] for i in range(n)]
            with self.lock:
                self.sent_text[rid] = "".join(toks)
            return toks

        # -- request checking --------------------------------------------------

        def decode(self, req, method):
            """Decodes one ModelInferRequest and lists what is wrong with it
            for its model (as Triton would refuse it)."""
            d = {"method": method, "model": req.model_name, "id": req.id, "inputs": {},
                 "params": {}, "outputs": [o.name for o in req.outputs], "problems": []}
            for k, v in req.parameters.items():
                d["params"][k] = (v.WhichOneof("parameter_choice"),
                                  getattr(v, v.WhichOneof("parameter_choice"))
                                  if v.WhichOneof("parameter_choice") else None)
            probs = d["problems"]
            if len(req.raw_input_contents) != len(req.inputs):
                probs.append("%d raw_input_contents for %d inputs" %
                             (len(req.raw_input_contents), len(req.inputs)))
            for i, t in enumerate(req.inputs):
                if t.name in d["inputs"]:
                    probs.append("input '%s' given twice" % t.name)
                if t.HasField("contents"):
                    probs.append("input '%s' has typed contents" % t.name)
                raw = req.raw_input_contents[i] if i < len(req.raw_input_contents) else b""
                d["inputs"][t.name] = (t.datatype, list(t.shape), bytes(raw))
            spec = MODELS.get(req.model_name)
            if spec is None:
                return d
            declared = {n: (dt, shp) for n, dt, shp in spec[1]}
            batch = spec[1][0][2][0] == -1
            for name, (dt, shape, raw) in d["inputs"].items():
                if name not in declared:
                    probs.append("unexpected inference input '%s'" % name)
                    continue
                if dt != declared[name][0]:
                    probs.append("input '%s' is %s, expected %s" % (name, dt, declared[name][0]))
                want_shape = [1, 1] if batch else [1]
                if shape != want_shape:
                    probs.append("input '%s' has shape %s, expected %s" % (name, shape, want_shape))
                size = {"INT32": 4, "BOOL": 1}.get(dt)
                if size and len(raw) != size:
                    probs.append("input '%s' holds %d bytes, expected %d" % (name, len(raw), size))
                if dt == "BYTES":
                    try:
                        els = ic.split_bytes_elements(raw)
                        if len(els) != 1:
                            probs.append("input '%s' has %d elements" % (name, len(els)))
                        else:
                            d[name] = els[0].decode("utf-8")
                    except (ValueError, UnicodeDecodeError) as e:
                        probs.append("input '%s': %s" % (name, e))
            if "text_input" not in d["inputs"]:
                probs.append("input 'text_input' is missing")
            if "max_tokens" in d["inputs"] and len(d["inputs"]["max_tokens"][2]) == 4:
                d["max_tokens"] = int.from_bytes(d["inputs"]["max_tokens"][2], "little", signed=True)
            if "stream" in d["inputs"] and len(d["inputs"]["stream"][2]) == 1:
                d["stream"] = d["inputs"]["stream"][2][0]
            if "exclude_input_in_output" in d["inputs"]:
                d["exclude"] = d["inputs"]["exclude_input_in_output"][2]
            if "sampling_parameters" in d:
                try:
                    d["sampling"] = json.loads(d["sampling_parameters"])
                    d["max_tokens"] = d["sampling"]["max_tokens"]
                except (ValueError, KeyError, TypeError) as e:
                    probs.append("sampling_parameters: %s" % e)
            if batch and "max_tokens" not in d:
                probs.append("input 'max_tokens' is missing")
            if not isinstance(d.get("max_tokens"), int) or not 0 < d["max_tokens"] <= 4096:
                probs.append("max_tokens %r out of range" % (d.get("max_tokens"),))
            if any(o != "text_output" for o in d["outputs"]):
                probs.append("unknown requested output in %s" % d["outputs"])
            return d

        def response(self, req, text, final):
            r = pb.ModelInferResponse(model_name=req.model_name, model_version="1", id=req.id)
            if final is not None:
                r.parameters["triton_final_response"].bool_param = final
            if text is not None:
                r.outputs.add(name="text_output", datatype="BYTES", shape=[1])
                r.raw_output_contents.append(ic.bytes_element(text))
            return r

        # -- health and metadata --------------------------------------------------

        def ServerLive(self, request, context):
            self.note_call("ServerLive", context)
            return pb.ServerLiveResponse(live=True)

        def ServerReady(self, request, context):
            self.note_call("ServerReady", context)
            return pb.ServerReadyResponse(ready=True)

        def ModelReady(self, request, context):
            self.note_call("ModelReady", context, request.name)
            spec = MODELS.get(request.name)
            if spec is None:
                context.abort(grpc.StatusCode.NOT_FOUND, unknown_model_message(request.name))
            return pb.ModelReadyResponse(ready=spec[3])

        def ModelMetadata(self, request, context):
            self.note_call("ModelMetadata", context, request.name)
            spec = MODELS.get(request.name)
            if spec is None:
                context.abort(grpc.StatusCode.NOT_FOUND, unknown_model_message(request.name))
            r = pb.ModelMetadataResponse(name=request.name, versions=["1"], platform=spec[0])
            for n, dt, shp in spec[1]:
                r.inputs.add(name=n, datatype=dt, shape=shp)
            for n, dt, shp in spec[2]:
                r.outputs.add(name=n, datatype=dt, shape=shp)
            return r

        # -- inference ------------------------------------------------------------

        def ModelInfer(self, request, context):
            call = self.note_call("ModelInfer", context, request.model_name)
            d = self.decode(request, "ModelInfer")
            d["call"] = call
            with self.lock:
                self.infers.append(d)
            spec = MODELS.get(request.model_name)
            if spec is None:
                context.abort(grpc.StatusCode.NOT_FOUND, unknown_model_message(request.model_name))
            if spec[4] == "strict":
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, "unexpected inference input 'x'")
            if d["problems"]:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, "; ".join(d["problems"]))
            toks = self.new_text(request.id, d["max_tokens"])
            time.sleep(TOKEN_SLEEP_S * len(toks))
            echo = spec[4] == "echo" and d.get("exclude") != b"\x01"
            return self.response(request, (d["text_input"] if echo else "") + "".join(toks), None)

        def ModelStreamInfer(self, request_iterator, context):
            call = self.note_call("ModelStreamInfer", context)
            prefix = None
            peer = context.peer()
            with self.lock:
                n = self.peer_active.get(peer, 0) + 1
                self.peer_active[peer] = n
                self.peer_max[peer] = max(self.peer_max.get(peer, 0), n)
            try:
                for req in request_iterator:
                    d = self.decode(req, "ModelStreamInfer")
                    d["call"] = call
                    with self.lock:
                        self.infers.append(d)
                    if prefix is None:
                        prefix = req.id.split("-")[0]
                        self.enter(prefix)
                    spec = MODELS.get(req.model_name)
                    if spec is None:
                        # Triton: one in-band error, the stream stays usable.
                        yield pb.ModelStreamInferResponse(
                            error_message=unknown_model_message(req.model_name),
                            infer_response=pb.ModelInferResponse(id=req.id))
                        continue
                    if spec[4] == "strict":
                        context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                      "unexpected inference input 'x'")
                    if d["problems"]:
                        yield pb.ModelStreamInferResponse(
                            error_message="interop server: " + "; ".join(d["problems"]),
                            infer_response=pb.ModelInferResponse(id=req.id))
                        continue
                    sleep = SLOW_TOKEN_SLEEP_S if spec[4] == "slow" else TOKEN_SLEEP_S
                    toks = self.new_text(req.id, d["max_tokens"])
                    vllm = spec[0] == "vllm"
                    for i, t in enumerate(toks):
                        time.sleep(sleep)
                        if not context.is_active():
                            return
                        if spec[4] == "cumulative":
                            t = "".join(toks[:i + 1])
                        # vLLM attaches FINAL to its last data response; the
                        # ensemble may send it alone.
                        yield pb.ModelStreamInferResponse(
                            infer_response=self.response(req, t, vllm and i == len(toks) - 1))
                    want_empty = d["params"].get("triton_enable_empty_final_response")
                    if not vllm and want_empty == ("bool_param", True):
                        yield pb.ModelStreamInferResponse(
                            infer_response=self.response(req, None, True))
            finally:
                with self.lock:
                    self.peer_active[peer] -= 1
                if prefix is not None:
                    self.leave(prefix)

    return Servicer()


class Harness:
    def __init__(self, tap, tokperf, tmp, servicer, relay):
        self.tap = tap
        self.tokperf = tokperf
        self.tmp = tmp
        self.srv = servicer
        self.relay = relay
        self.model = os.environ.get("TP_WORDS_MODEL")
        if self.model and not os.path.exists(self.model):
            self.model = None
        self.prompts = os.path.join(tmp, "prompts.jsonl")
        with open(self.prompts, "w") as f:
            for p in PROMPTS:
                f.write(json.dumps({"text_input": p}) + "\n")
        self.runs = 0

    def run(self, args, use_tokenizer=True):
        """Runs tokperf profile against the relay.  Returns a dict with rc,
        stdout, stderr, doc (the --json document or None), records (list),
        requests (decoded request headers) and the server's recordings."""
        self.runs += 1
        jpath = os.path.join(self.tmp, "run%d.json" % self.runs)
        rpath = os.path.join(self.tmp, "run%d.jsonl" % self.runs)
        self.srv.reset()
        self.relay.take()
        cmd = [self.tokperf, "profile", "-u", "127.0.0.1:%d" % self.relay.port, "-q",
               "--input-file", self.prompts, "--json", jpath, "--records", rpath] + args
        if use_tokenizer and self.model:
            cmd += ["--tokenizer", self.model]
        res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             timeout=60 * SCALE)
        out = {"cmd": cmd, "rc": res.returncode, "stdout": res.stdout.decode(errors="replace"),
               "stderr": res.stderr.decode(errors="replace"), "doc": None, "records": []}
        if os.path.exists(jpath):
            with open(jpath) as f:
                out["doc"] = json.load(f)
        if os.path.exists(rpath):
            with open(rpath) as f:
                out["records"] = [json.loads(line) for line in f if line.strip()]
        # Let the relay see the connection close, then read the headers back.
        time.sleep(0.05)
        out["requests"] = self.relay.requests()
        with self.srv.lock:
            out["calls"] = list(self.srv.calls)
            out["infers"] = list(self.srv.infers)
            out["sent_text"] = dict(self.srv.sent_text)
            out["max_active"] = dict(self.srv.max_active)
        return out

    def show(self, r):
        self.tap.diag("command: " + " ".join(r["cmd"]))
        self.tap.diag("exit %d; stderr:\n%s" % (r["rc"], r["stderr"][-2000:]))

    # -- shared checks --------------------------------------------------------------

    def check_exit(self, r, want, name):
        if not self.tap.equal(r["rc"], want, "%s: tokperf exits %d" % (name, want)):
            self.show(r)

    def check_report(self, r, name, concs, per_level):
        t = self.tap
        doc = r["doc"]
        if not t.check(doc is not None, "%s: --json report written" % name):
            return None
        t.equal(doc.get("schema"), "tokperf.report/1", "%s: report schema" % name)
        t.equal(doc.get("generator", {}).get("name"), "tokperf", "%s: report generator" % name)
        levels = doc.get("levels") or []
        t.equal([lv.get("concurrency") for lv in levels], concs, "%s: one level per concurrency" % name)
        for lv in levels:
            c = lv.get("concurrency")
            t.equal((lv.get("requests"), lv.get("succeeded"), lv.get("failed")),
                    (per_level[0], per_level[1], per_level[2]),
                    "%s: c=%s requests/succeeded/failed" % (name, c))
        return levels

    def check_errors(self, lv, name, want):
        """errors_by_class must be exactly `want` (class -> count), every
        other class 0."""
        ebc = lv.get("errors_by_class") or {}
        nonzero = {k: v for k, v in ebc.items() if v}
        self.tap.equal(nonzero, want, "%s: c=%s errors_by_class" % (name, lv.get("concurrency")))
        self.tap.check("none" in ebc and "grpc_status" in ebc and "timeout" in ebc,
                       "%s: errors_by_class lists every class" % name, "got %r" % ebc)

    def check_stat_exact(self, lv, key, value, name):
        st = lv.get(key)
        ok = st is not None and st.get("min") == value and st.get("max") == value
        self.tap.check(ok, "%s: c=%s %s is exactly %s" % (name, lv.get("concurrency"), key, value),
                       "got %r" % (st,))

    def check_headers(self, r, name, path_suffix, timeout_s):
        """Every request tokperf sent: pseudo-headers first, te: trailers,
        content-type application/grpc*, user-agent tokperf/..., and
        grpc-timeout right after the pseudo-headers when a timeout is set."""
        t = self.tap
        reqs = [h for h in r["requests"]
                if dict(h).get(":path") == "/inference.GRPCInferenceService/" + path_suffix]
        want_n = len([i for i in r["infers"] if i["method"] == path_suffix])
        t.equal(len(reqs), want_n,
                "%s: relay saw one %s HEADERS per request the server got" % (name, path_suffix))
        bad = []
        for h in reqs:
            names = [k for k, _ in h]
            d = dict(h)
            npseudo = sum(1 for k in names if k.startswith(":"))
            if any(k.startswith(":") for k in names[npseudo:]):
                bad.append("pseudo-header after a regular header: %r" % names)
            if (d.get(":method"), d.get(":scheme")) != ("POST", "http"):
                bad.append(":method/:scheme %r %r" % (d.get(":method"), d.get(":scheme")))
            if d.get(":authority") != "127.0.0.1:%d" % self.relay.port:
                bad.append(":authority %r" % d.get(":authority"))
            if d.get("te") != "trailers":
                bad.append("te %r" % d.get("te"))
            if not (d.get("content-type") or "").startswith("application/grpc"):
                bad.append("content-type %r" % d.get("content-type"))
            if not (d.get("user-agent") or "").startswith("tokperf/"):
                bad.append("user-agent %r" % d.get("user-agent"))
            if names.count("te") != 1 or names.count("content-type") != 1:
                bad.append("te/content-type repeated: %r" % names)
            gt = d.get("grpc-timeout")
            if timeout_s is None:
                if gt is not None:
                    bad.append("grpc-timeout %r without --request-timeout" % gt)
            else:
                if gt is None or ic.parse_grpc_timeout(gt) is None:
                    bad.append("grpc-timeout %r is not 1-8 digits and a unit" % gt)
                elif abs(ic.parse_grpc_timeout(gt) - timeout_s) > 1e-9:
                    bad.append("grpc-timeout %r is not %gs" % (gt, timeout_s))
                elif names.index("grpc-timeout") != npseudo:
                    bad.append("grpc-timeout is not right after the pseudo-headers: %r" % names)
        t.check(reqs and not bad, "%s: %s request headers (te, content-type, user-agent%s)" %
                (name, path_suffix, ", grpc-timeout" if timeout_s else ""), "\n".join(bad[:5]))
        return reqs

    def check_records_text(self, r, name, n_words, n_resp):
        t = self.tap
        recs = r["records"]
        bad = []
        for rec in recs:
            want = r["sent_text"].get(rec.get("id"))
            if not rec.get("ok"):
                bad.append("%s failed: %s" % (rec.get("id"), rec.get("error")))
            elif want is None:
                bad.append("%s: the server never saw this id" % rec.get("id"))
            elif rec.get("text") != want:
                bad.append("%s: text %r, server sent %r" % (rec.get("id"), rec.get("text"), want))
            elif len(rec["text"].split()) != n_words:
                bad.append("%s: %d words" % (rec.get("id"), len(rec["text"].split())))
            if len(rec.get("response_ns") or []) != n_resp:
                bad.append("%s: %d responses recorded, want %d" %
                           (rec.get("id"), len(rec.get("response_ns") or []), n_resp))
            if self.model:
                if rec.get("output_tokens") != n_words:
                    bad.append("%s: output_tokens %r" % (rec.get("id"), rec.get("output_tokens")))
                p = PROMPTS[rec.get("prompt_index", 0) % len(PROMPTS)]
                if rec.get("input_tokens") != len(p.split()):
                    bad.append("%s: input_tokens %r for %r" % (rec.get("id"), rec.get("input_tokens"), p))
        t.check(recs and not bad, "%s: every record's text is exactly what the server sent "
                "(%d words, %d responses%s)" % (name, n_words, n_resp,
                                                ", token counts" if self.model else ""),
                "\n".join(bad[:8]))

    def check_server_inputs(self, r, name, method, model, shape, expect):
        """The server decoded every request without a problem and saw the
        expected inputs.  expect: function(decoded) -> list of problems."""
        t = self.tap
        infers = [i for i in r["infers"] if i["method"] == method]
        bad = []
        for d in infers:
            bad += ["%s: %s" % (d["id"], p) for p in d["problems"]]
            if d["model"] != model:
                bad.append("%s: model %r" % (d["id"], d["model"]))
            for n, (dt, shp, _) in d["inputs"].items():
                if shp != shape:
                    bad.append("%s: %s shape %r" % (d["id"], n, shp))
            if d.get("text_input") not in PROMPTS:
                bad.append("%s: text_input %r is not a prompt of the input file" %
                           (d["id"], d.get("text_input")))
            bad += ["%s: %s" % (d["id"], p) for p in expect(d)]
        ids = sorted(i["id"] for i in infers)
        rec_ids = sorted(rec["id"] for rec in r["records"])
        t.equal(ids, rec_ids, "%s: the server got exactly the requests recorded (ids)" % name)
        t.check(infers and not bad, "%s: the server checked every request's inputs" % name,
                "\n".join(bad[:8]))
        return infers


def case_streaming(h):
    name = "stream"
    t = h.tap
    r = h.run(["-m", "ensemble", "--concurrency", "1,4", "--request-count", "8",
               "--output-tokens-mean", "5"])
    h.check_exit(r, 0, name)
    levels = h.check_report(r, name, [1, 4], (8, 8, 0)) or []
    for lv in levels:
        h.check_errors(lv, name, {})
        if h.model:
            h.check_stat_exact(lv, "output_tokens", 5, name)
            t.check(lv.get("tokens_available") is True, "%s: c=%s tokens_available" %
                    (name, lv["concurrency"]))
        # 5 text responses and the empty final one.
        h.check_stat_exact(lv, "responses_per_request", 6, name)
        t.equal(lv.get("max_in_flight"), lv["concurrency"],
                "%s: c=%s max_in_flight" % (name, lv["concurrency"]))
        lat = lv.get("request_latency_ms") or {}
        ttft = lv.get("time_to_first_token_ms") or {}
        # The server sleeps 2 ms before each of the 5 tokens: nothing can be
        # faster than that.
        t.check((lat.get("min") or 0) >= 5 * TOKEN_SLEEP_S * 1000 and
                (ttft.get("min") or 0) >= TOKEN_SLEEP_S * 1000,
                "%s: c=%s latency >= 10 ms and TTFT >= 2 ms (server sleeps)" % (name, lv["concurrency"]),
                "latency %r, ttft %r" % (lat, ttft))
    t.equal(r["max_active"], {"c1": 1, "c4": 4},
            "%s: streams open at once, as the server counted them per level" % name)
    t.equal(len(r["records"]), 16, "%s: 16 --records lines" % name)
    h.check_records_text(r, name, 5, 6)
    t.check(all(rec.get("id", "").startswith("c%d-" % rec.get("concurrency")) for rec in r["records"]),
            "%s: record ids carry their level" % name)

    def expect(d):
        p = []
        if set(d["inputs"]) != {"text_input", "max_tokens", "stream"}:
            p.append("inputs %s" % sorted(d["inputs"]))
        if [d["inputs"][k][0] for k in ("text_input", "max_tokens", "stream") if k in d["inputs"]] != \
                ["BYTES", "INT32", "BOOL"]:
            p.append("datatypes")
        if d.get("max_tokens") != 5:
            p.append("max_tokens %r" % d.get("max_tokens"))
        if d.get("stream") != 1:
            p.append("stream %r" % d.get("stream"))
        if d["params"].get("triton_enable_empty_final_response") != ("bool_param", True):
            p.append("parameters %r" % d["params"])
        if d["outputs"] != ["text_output"]:
            p.append("requested outputs %r" % d["outputs"])
        return p
    infers = h.check_server_inputs(r, name, "ModelStreamInfer", "ensemble", [1, 1], expect)
    t.check(all(i["call"]["time_remaining"] is None or i["call"]["time_remaining"] > 1e5
                for i in infers),
            "%s: no deadline without --request-timeout" % name,
            "time_remaining %r" % [i["call"]["time_remaining"] for i in infers][:4])
    t.check(all(("user-agent", "tokperf/") in [(k, v[:8]) for k, v in i["call"]["metadata"]]
                for i in infers), "%s: grpcio metadata shows user-agent tokperf/" % name,
            "%r" % (infers[0]["call"]["metadata"] if infers else None))
    h.check_headers(r, name, "ModelStreamInfer", None)
    seq = [(c["method"], c["model"]) for c in r["calls"]]
    first_infer = next((i for i, c in enumerate(seq) if c[0] == "ModelStreamInfer"), len(seq))
    t.equal(seq[:3], [("ServerLive", None), ("ModelReady", "ensemble"), ("ModelMetadata", "ensemble")],
            "%s: preflight ServerLive, ModelReady, ModelMetadata" % name)
    t.equal(first_infer, 3, "%s: inference starts after the preflight" % name)


def case_unary(h):
    name = "unary"
    t = h.tap
    r = h.run(["-m", "ensemble", "--no-streaming", "--concurrency", "2", "--request-count", "6",
               "--output-tokens-mean", "5"])
    h.check_exit(r, 0, name)
    for lv in h.check_report(r, name, [2], (6, 6, 0)) or []:
        h.check_errors(lv, name, {})
        h.check_stat_exact(lv, "responses_per_request", 1, name)
        if h.model:
            h.check_stat_exact(lv, "output_tokens", 5, name)
    h.check_records_text(r, name, 5, 1)

    def expect(d):
        p = []
        if d.get("stream") != 0:
            p.append("stream %r (want false)" % d.get("stream"))
        if "triton_enable_empty_final_response" in d["params"]:
            p.append("streaming-only parameter on a unary call")
        if d.get("max_tokens") != 5:
            p.append("max_tokens %r" % d.get("max_tokens"))
        return p
    h.check_server_inputs(r, name, "ModelInfer", "ensemble", [1, 1], expect)
    t.equal(len([c for c in r["calls"] if c["method"] == "ModelStreamInfer"]), 0,
            "%s: no ModelStreamInfer call" % name)
    h.check_headers(r, name, "ModelInfer", None)


def case_unary_echo(h):
    name = "unary exclude_input_in_output"
    t = h.tap
    r = h.run(["-m", "ensemble_echo", "--no-streaming", "--concurrency", "1", "--request-count", "3",
               "--output-tokens-mean", "5"])
    h.check_exit(r, 0, name)
    for lv in h.check_report(r, name, [1], (3, 3, 0)) or []:
        if h.model:
            h.check_stat_exact(lv, "output_tokens", 5, name)
    # Without exclude_input_in_output=true the answer starts with the
    # prompt, which would be counted as generated text.
    h.check_records_text(r, name, 5, 1)
    h.check_server_inputs(r, name, "ModelInfer", "ensemble_echo", [1, 1],
                          lambda d: [] if d.get("exclude") == b"\x01" else
                          ["exclude_input_in_output %r, want true" % d.get("exclude")])


def case_timeout(h):
    t = h.tap
    name = "timeout"
    r = h.run(["-m", "ensemble", "--concurrency", "1", "--request-count", "3",
               "--output-tokens-mean", "5", "--request-timeout", "1s"])
    h.check_exit(r, 0, name)
    for lv in h.check_report(r, name, [1], (3, 3, 0)) or []:
        h.check_errors(lv, name, {})
    infers = [i for i in r["infers"] if i["method"] == "ModelStreamInfer"]
    trs = [i["call"]["time_remaining"] for i in infers]
    t.check(len(trs) == 3 and all(tr is not None and 0 < tr <= 1.0 for tr in trs),
            "%s: grpcio saw a deadline of at most 1 s (grpc-timeout)" % name, "time_remaining %r" % trs)
    h.check_headers(r, name, "ModelStreamInfer", 1.0)

    # A model slower than the deadline: 5 tokens x 300 ms against 500 ms.
    name = "deadline"
    r = h.run(["-m", "slow", "--concurrency", "2", "--request-count", "2",
               "--output-tokens-mean", "5", "--request-timeout", "500ms"])
    # Every request failed: the run completes but never exits 0 (issue #5).
    h.check_exit(r, 1, name)
    t.check("every one of the" in r["stderr"], "%s: stderr says every request failed" % name, r["stderr"][-400:])
    for lv in h.check_report(r, name, [2], (2, 0, 2)) or []:
        ebc = {k: v for k, v in (lv.get("errors_by_class") or {}).items() if v}
        t.check(sum(ebc.values()) == 2 and set(ebc) <= {"timeout", "grpc_status"},
                "%s: failures counted as timeout (or the server's DEADLINE_EXCEEDED)" % name,
                "errors_by_class %r" % ebc)
    bad = []
    for rec in r["records"]:
        if rec.get("grpc_status") != 4:
            bad.append("%s: grpc_status %r (%s)" % (rec.get("id"), rec.get("grpc_status"), rec.get("error")))
        took = (rec.get("done_ns", 0) - rec.get("sent_ns", 0)) / 1e9
        if not 0.4 <= took <= 0.5 + 1.0 * SCALE:
            bad.append("%s: ended after %.3f s" % (rec.get("id"), took))
    t.check(len(r["records"]) == 2 and not bad,
            "%s: each request ends with DEADLINE_EXCEEDED about 500 ms after it was sent" % name,
            "\n".join(bad))
    h.check_headers(r, name, "ModelStreamInfer", 0.5)


def case_not_ready(h):
    t = h.tap
    for model, words in (("missing_model", ("not found", "not ready")), ("unready", ("not ready",))):
        name = "model %s" % model
        r = h.run(["-m", model, "--concurrency", "1", "--request-count", "2"])
        h.check_exit(r, 3, name)
        err = r["stderr"]
        t.check("'%s'" % model in err and any(w in err for w in words),
                "%s: stderr names the model and says it is %s" % (name, " or ".join(words)),
                "stderr: %r" % err)
        if model == "missing_model":
            t.check(unknown_model_message(model) in err, "%s: stderr quotes the server's message" % name,
                    "stderr: %r" % err)
        t.equal([(c["method"], c["model"]) for c in r["calls"]][1:2], [("ModelReady", model)],
                "%s: the server was asked ModelReady" % name)
        t.equal(len(r["infers"]), 0, "%s: no inference request was sent" % name)

    name = "backend mismatch"
    r = h.run(["-m", "vllm_model", "--backend", "tensorrtllm", "--concurrency", "1",
               "--request-count", "2"])
    h.check_exit(r, 3, name)
    t.check("'vllm_model'" in r["stderr"] and "max_tokens" in r["stderr"] and
            "--backend vllm" in r["stderr"],
            "%s: stderr names the model, the missing input and suggests --backend vllm" % name,
            "stderr: %r" % r["stderr"])
    t.equal(len(r["infers"]), 0, "%s: no inference request was sent" % name)


def case_strict(h):
    t = h.tap
    msg = "unexpected inference input 'x'"
    for mode in ("stream", "unary"):
        name = "strict %s" % mode
        args = ["-m", "strict", "--concurrency", "2", "--request-count", "4",
                "--output-tokens-mean", "5"]
        if mode == "unary":
            args.append("--no-streaming")
        r = h.run(args)
        # Every request failed: the run completes but never exits 0 (issue #5).
        h.check_exit(r, 1, name)
        t.check("every one of the" in r["stderr"], "%s: stderr says every request failed" % name, r["stderr"][-400:])
        for lv in h.check_report(r, name, [2], (4, 0, 4)) or []:
            h.check_errors(lv, name, {"grpc_status": 4})
            fe = lv.get("first_error") or ""
            t.check(msg in fe, "%s: first_error carries the server's message" % name, "first_error %r" % fe)
            t.check("INVALID_ARGUMENT" in fe, "%s: first_error names the status INVALID_ARGUMENT" % name,
                    "first_error %r" % fe)
        bad = [rec for rec in r["records"]
               if rec.get("ok") or rec.get("error_class") != "grpc_status" or
               rec.get("grpc_status") != 3 or msg not in (rec.get("error") or "")]
        t.check(len(r["records"]) == 4 and not bad,
                "%s: every record failed with class grpc_status, status 3 and the message" % name,
                "%r" % bad[:2])
        t.check(msg in r["stdout"], "%s: the text report shows the sample error" % name,
                r["stdout"][-1500:])
        t.equal(len(r["infers"]), 4, "%s: the server got 4 requests" % name)


def case_vllm(h):
    name = "vllm"
    t = h.tap
    r = h.run(["-m", "vllm_model", "--backend", "vllm", "--concurrency", "2", "--request-count", "6",
               "--output-tokens-mean", "5"])
    h.check_exit(r, 0, name)
    for lv in h.check_report(r, name, [2], (6, 6, 0)) or []:
        h.check_errors(lv, name, {})
        # FINAL rides on the 5th data response: no extra message.
        h.check_stat_exact(lv, "responses_per_request", 5, name)
        if h.model:
            h.check_stat_exact(lv, "output_tokens", 5, name)
    h.check_records_text(r, name, 5, 5)

    def expect(d):
        p = []
        if set(d["inputs"]) != {"text_input", "stream", "sampling_parameters", "exclude_input_in_output"}:
            p.append("inputs %s" % sorted(d["inputs"]))
        s = d.get("sampling")
        if not isinstance(s, dict) or s.get("max_tokens") != 5 or type(s.get("max_tokens")) is not int:
            p.append("sampling_parameters %r" % d.get("sampling_parameters"))
        if d.get("stream") != 1 or d.get("exclude") != b"\x01":
            p.append("stream %r exclude_input_in_output %r" % (d.get("stream"), d.get("exclude")))
        if d["params"].get("triton_enable_empty_final_response") != ("bool_param", True):
            p.append("parameters %r" % d["params"])
        return p
    h.check_server_inputs(r, name, "ModelStreamInfer", "vllm_model", [1], expect)
    h.check_headers(r, name, "ModelStreamInfer", None)


def case_inband_error(h):
    name = "in-band error"
    t = h.tap
    r = h.run(["-m", "missing_model", "--skip-preflight", "--concurrency", "1", "--request-count", "2",
               "--output-tokens-mean", "5"])
    # Every request failed: the run completes but never exits 0 (issue #5).
    h.check_exit(r, 1, name)
    t.check("every one of the" in r["stderr"], "%s: stderr says every request failed" % name, r["stderr"][-400:])
    for lv in h.check_report(r, name, [1], (2, 0, 2)) or []:
        h.check_errors(lv, name, {"server_error": 2})
        fe = lv.get("first_error") or ""
        t.check(unknown_model_message("missing_model") in fe,
                "%s: first_error carries the in-band error_message" % name, "first_error %r" % fe)
    t.equal([c["method"] for c in r["calls"]], ["ModelStreamInfer"] * 2,
            "%s: --skip-preflight sends no health or metadata call" % name)


def case_cumulative(h):
    """Cumulative streamed text must replace, not append: with
    --streaming-text cumulative the record holds the answer once."""
    name = "cumulative text"
    t = h.tap
    r = h.run(["-m", "vllm_cumulative", "--backend", "vllm", "--streaming-text", "cumulative",
               "--concurrency", "2", "--request-count", "4", "--output-tokens-mean", "5"])
    h.check_exit(r, 0, name)
    for lv in h.check_report(r, name, [2], (4, 4, 0)) or []:
        if h.model:
            h.check_stat_exact(lv, "output_tokens", 5, name)
    h.check_records_text(r, name, 5, 5)
    # The same server read as deltas gives 1+2+3+4+5 words: the flag matters.
    r = h.run(["-m", "vllm_cumulative", "--backend", "vllm", "--concurrency", "1", "--request-count", "2",
               "--output-tokens-mean", "5"])
    t.check(all(len(rec.get("text", "").split()) == 15 for rec in r["records"]) and r["records"],
            "%s: read as deltas the text piles up (15 words), so the setting is what fixes it" % name,
            "%r" % [rec.get("text") for rec in r["records"]])


def case_stream_limit(h):
    """A server that allows 2 streams per connection: tokperf must open more
    connections rather than exceed the limit, and still hold 6 in flight."""
    name = "stream-limit"
    t = h.tap
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=32),
                         options=[("grpc.max_concurrent_streams", 2)])
    h.srv_pbg.add_GRPCInferenceServiceServicer_to_server(h.srv, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        h.srv.reset()
        cmd = [h.tokperf, "profile", "-u", "127.0.0.1:%d" % port, "-q", "-m", "ensemble",
               "--input-file", h.prompts, "--concurrency", "6", "--connections", "1",
               "--request-count", "18", "--output-tokens-mean", "4"]
        res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60 * SCALE)
        err = res.stderr.decode(errors="replace")
        t.check(res.returncode == 0, "%s: exit 0" % name, err[-800:])
        t.check("18 measured, 18 succeeded, 0 failed" in res.stdout.decode(errors="replace"),
                "%s: every request succeeded" % name, res.stdout.decode(errors="replace")[-800:])
        with h.srv.lock:
            peer_max = dict(h.srv.peer_max)
            level_max = dict(h.srv.max_active)
        t.check(len(peer_max) >= 3, "%s: at least 3 connections opened for 6 streams" % name,
                "peers %r" % peer_max)
        t.check(peer_max and max(peer_max.values()) <= 2,
                "%s: no connection carried more than the server's 2 streams" % name, "peers %r" % peer_max)
        t.equal(level_max.get("c6"), 6, "%s: 6 streams in flight across connections" % name)
    finally:
        server.stop(0).wait(5 * SCALE)


def case_sessions_pinned(h):
    """Multi-turn sessions over gRPC, three connections: every turn of a
    session goes over the connection its first turn took (the server sees
    one peer per session), and the sessions are spread over connections."""
    name = "sessions"
    t = h.tap
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=32))
    h.srv_pbg.add_GRPCInferenceServiceServicer_to_server(h.srv, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    conv = os.path.join(h.tmp, "conversations.jsonl")
    with open(conv, "w") as f:
        for k in range(6):
            f.write(json.dumps({"session_id": "s%d" % k,
                                "turns": [{"text": "session %d turn %d" % (k, i)} for i in range(3)]}) + "\n")
    recs = os.path.join(h.tmp, "sessions.jsonl")
    try:
        h.srv.reset()
        cmd = [h.tokperf, "profile", "-u", "127.0.0.1:%d" % port, "-q", "-m", "ensemble", "--input-file", conv,
               "--concurrency", "3", "--connections", "3", "--request-count", "6", "--output-tokens-mean", "3",
               "--records", recs, "--no-artifacts"]
        res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60 * SCALE)
        t.check(res.returncode == 0, "%s: exit 0" % name, res.stderr.decode(errors="replace")[-800:])
        with open(recs) as f:
            records = [json.loads(line) for line in f if line.strip()]
        with h.srv.lock:
            peer_of = {d["id"]: d["call"]["peer"] for d in h.srv.infers if "call" in d}
        by_session = {}
        for r in records:
            by_session.setdefault(r.get("session"), []).append(peer_of.get(r["id"]))
        t.check(len(records) == 18 and len(by_session) == 6 and all(len(v) == 3 for v in by_session.values()),
                "%s: 6 sessions of 3 turns sent" % name, "%d records, sessions %r" % (len(records), by_session))
        t.check(all(None not in v and len(set(v)) == 1 for v in by_session.values()),
                "%s: every turn of a session went over one connection" % name, repr(by_session))
        t.check(len({v[0] for v in by_session.values()}) >= 2,
                "%s: the sessions were spread over the connections" % name, repr(by_session))
    finally:
        server.stop(0).wait(5 * SCALE)


def case_connection_age(h):
    """A server that ends every connection after 100 ms (grpc-core's
    max_connection_age: GOAWAY, then the streams it took finish): no request
    fails, whatever crossed a GOAWAY is re-sent, and `reconnects` counts
    exactly the records re-sent."""
    name = "connection-age"
    t = h.tap
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=32),
                         options=[("grpc.max_connection_age_ms", 100),
                                  ("grpc.max_connection_age_grace_ms", 10000)])
    h.srv_pbg.add_GRPCInferenceServiceServicer_to_server(h.srv, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    jpath = os.path.join(h.tmp, "age.json")
    rpath = os.path.join(h.tmp, "age.jsonl")
    try:
        for mode, extra in (("streaming", []), ("unary", ["--no-streaming"])):
            h.srv.reset()
            cmd = [h.tokperf, "profile", "-u", "127.0.0.1:%d" % port, "-q", "-m", "ensemble",
                   "--input-file", h.prompts, "--concurrency", "8", "--request-count", "200",
                   "--output-tokens-mean", "4", "--json", jpath, "--records", rpath] + extra
            res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120 * SCALE)
            err = res.stderr.decode(errors="replace")
            t.check(res.returncode == 0 and os.path.exists(jpath), "%s, %s: exit 0" % (name, mode), err[-800:])
            if res.returncode != 0 or not os.path.exists(jpath):
                continue
            with open(jpath) as f:
                lv = json.load(f)["levels"][0]
            with open(rpath) as f:
                recs = [json.loads(line) for line in f if line.strip()]
            with h.srv.lock:
                peers = len(set(c["peer"] for c in h.srv.calls))
            t.check(lv["requests"] == 200 and lv["failed"] == 0, "%s, %s: 200 requests, none failed" % (name, mode),
                    "failed %d, first error %r" % (lv["failed"], lv["first_error"]))
            resent = sum(1 for r in recs if r.get("resends", 0) > 0)
            t.check(lv["reconnects"] == resent, "%s, %s: reconnects %d equals the records re-sent" %
                    (name, mode, lv["reconnects"]), "records re-sent %d" % resent)
            t.check(peers > 1, "%s, %s: the server ended connections (%d used)" % (name, mode, peers))
    finally:
        server.stop(0).wait(5 * SCALE)


def main():
    if len(sys.argv) != 2:
        print("usage: %s PATH/TO/tokperf" % sys.argv[0], file=sys.stderr)
        return 2
    tokperf = sys.argv[1]
    tap = ic.Tap()
    tmp = ic.make_tmpdir("tp-interop-server-")
    server = relay = None
    try:
        pb, pbg = ic.generate_stubs(tmp)
        servicer = make_servicer(pb, pbg, ic.words())
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=32))
        pbg.add_GRPCInferenceServiceServicer_to_server(servicer, server)
        port = server.add_insecure_port("127.0.0.1:0")
        tap.check(port > 0, "grpcio server listens on 127.0.0.1")
        server.start()
        relay = ic.CaptureRelay(port)
        h = Harness(tap, tokperf, tmp, servicer, relay)
        h.srv_pbg = pbg
        if not h.model:
            tap.diag("TP_WORDS_MODEL not set or missing: token counts are not checked")
        for case in (case_streaming, case_unary, case_unary_echo, case_timeout, case_not_ready, case_strict,
                     case_vllm, case_inband_error, case_cumulative, case_stream_limit, case_connection_age,
                     case_sessions_pinned):
            try:
                case(h)
            except Exception:
                tap.crashed(case.__name__)
    except Exception:
        tap.crashed("setup")
    finally:
        if relay:
            relay.close()
        if server:
            server.stop(0).wait(5 * SCALE)
        ic.remove_tmpdir(tmp)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
