#!/usr/bin/python3
"""tokperf's mock server (`tokperf mock`) against a python3-grpcio client.

usage: test_grpcio_client.py PATH/TO/tokperf

Starts `tokperf mock --grpc-port 0 --ttft-ms 5 --itl-ms 1 --output-tokens 8`,
reads the port from its start-up line on stderr ("tokperf mock: listening on
HOST:PORT ..."), and drives it with grpcio stubs generated from
proto/grpc_service.proto: health, model readiness and metadata, streaming
inference for the TensorRT-LLM ensemble and the vLLM model, several requests
multiplexed on one stream, unary inference, in-band and status errors, and an
unknown method.  Ends the mock with SIGINT and checks it exits cleanly.

Output: TAP.
"""

import json
import queue
import re
import signal
import subprocess
import sys
import threading
import time

# Keep the source tree free of __pycache__ when importing the helper.
sys.dont_write_bytecode = True
import interop_common as ic  # noqa: E402

ic.import_grpc_or_skip()
import grpc  # noqa: E402

SCALE = ic.time_scale()
RPC_TIMEOUT_S = 10 * SCALE
OUT_TOKENS = 8
TTFT_MS = 5
ITL_MS = 1
SERVICE = "/inference.GRPCInferenceService/"
PROMPT = "the water of the world"
LISTEN_RE = re.compile(r"listening on ([0-9.]+|\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):([0-9]+)")


class Mock:
    """A `tokperf mock` child process with its stderr drained by a thread
    (a full pipe would block the mock)."""

    def __init__(self, tokperf, port):
        self.cmd = [tokperf, "mock", "--host", "127.0.0.1", "--grpc-port", str(port),
                    "--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS),
                    "--output-tokens", str(OUT_TOKENS)]
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.lines = queue.Queue()
        self.stderr = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for raw in iter(self.proc.stderr.readline, b""):
            line = raw.decode(errors="replace").rstrip("\n")
            self.stderr.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def announced_port(self, timeout_s):
        """The port from the start-up line, or None when it does not come."""
        end = time.monotonic() + timeout_s
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return None
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                return None
            if line is None:
                return None
            m = LISTEN_RE.search(line)
            if m and "tokperf mock" in line:
                return int(m.group(2))

    def stop(self, timeout_s):
        """SIGINT, as Ctrl-C; returns the exit status (None when it had to be
        killed)."""
        if self.proc.poll() is not None:
            return self.proc.returncode
        self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        self.reader.join(2)
        for f in (self.proc.stdout, self.proc.stderr):
            try:
                f.close()
            except OSError:
                pass


def start_mock(tap, tokperf):
    """Starts the mock on port 0 and reads the port back; when the mock does
    not announce it, fails that check and retries on a port picked here so
    the remaining checks still run."""
    m = Mock(tokperf, 0)
    port = m.announced_port(10 * SCALE)
    if tap.check(port is not None and port > 0,
                 "mock announces 'tokperf mock: listening on HOST:PORT' on stderr",
                 "stderr: %r" % m.stderr[-5:]):
        return m, port
    m.kill()
    port = ic.free_port()
    m = Mock(tokperf, port)
    if m.announced_port(10 * SCALE) is None and not ic.wait_port(port, 10 * SCALE):
        m.kill()
        raise RuntimeError("tokperf mock did not start on port %d: %r" % (port, m.stderr[-5:]))
    return m, port


class Client:
    def __init__(self, tap, pb, pbg, channel, words):
        self.tap = tap
        self.pb = pb
        self.channel = channel
        self.stub = pbg.GRPCInferenceServiceStub(channel)
        self.words = set(words)

    # -- requests ------------------------------------------------------------

    def trtllm_request(self, rid, model="ensemble", stream=True, empty_final=True, exclude=None):
        pb = self.pb
        r = pb.ModelInferRequest(model_name=model, id=rid)
        r.inputs.add(name="text_input", datatype="BYTES", shape=[1, 1])
        r.raw_input_contents.append(ic.bytes_element(PROMPT))
        r.inputs.add(name="max_tokens", datatype="INT32", shape=[1, 1])
        r.raw_input_contents.append(OUT_TOKENS.to_bytes(4, "little"))
        r.inputs.add(name="stream", datatype="BOOL", shape=[1, 1])
        r.raw_input_contents.append(b"\x01" if stream else b"\x00")
        if exclude is not None:
            r.inputs.add(name="exclude_input_in_output", datatype="BOOL", shape=[1, 1])
            r.raw_input_contents.append(b"\x01" if exclude else b"\x00")
        r.outputs.add(name="text_output")
        if empty_final:
            r.parameters["triton_enable_empty_final_response"].bool_param = True
        return r

    def vllm_request(self, rid):
        pb = self.pb
        r = pb.ModelInferRequest(model_name="vllm_model", id=rid)
        r.inputs.add(name="text_input", datatype="BYTES", shape=[1])
        r.raw_input_contents.append(ic.bytes_element(PROMPT))
        r.inputs.add(name="stream", datatype="BOOL", shape=[1])
        r.raw_input_contents.append(b"\x01")
        r.inputs.add(name="sampling_parameters", datatype="BYTES", shape=[1])
        r.raw_input_contents.append(ic.bytes_element(json.dumps({"max_tokens": OUT_TOKENS})))
        r.inputs.add(name="exclude_input_in_output", datatype="BOOL", shape=[1])
        r.raw_input_contents.append(b"\x01")
        r.outputs.add(name="text_output")
        r.parameters["triton_enable_empty_final_response"].bool_param = True
        return r

    # -- decoding ------------------------------------------------------------

    @staticmethod
    def final_flag(ir):
        if "triton_final_response" not in ir.parameters:
            return None
        p = ir.parameters["triton_final_response"]
        return p.bool_param if p.WhichOneof("parameter_choice") == "bool_param" else "not bool"

    @staticmethod
    def texts(ir):
        """The text_output elements of one ModelInferResponse (raises
        ValueError when the raw layout is broken)."""
        out = []
        for i, o in enumerate(ir.outputs):
            if o.name != "text_output":
                continue
            if o.datatype != "BYTES":
                raise ValueError("text_output is %s" % o.datatype)
            if i >= len(ir.raw_output_contents):
                raise ValueError("no raw_output_contents entry for output %d" % i)
            out += [e.decode("utf-8") for e in ic.split_bytes_elements(ir.raw_output_contents[i])]
        return out

    def stream(self, requests):
        """Runs one ModelStreamInfer call with these requests, sent at once
        then half-closed.  Returns (responses, code, seconds from the call
        to each response)."""
        t0 = time.monotonic()
        call = self.stub.ModelStreamInfer(iter(requests), timeout=RPC_TIMEOUT_S)
        got, times = [], []
        try:
            for resp in call:
                got.append(resp)
                times.append(time.monotonic() - t0)
        except grpc.RpcError:
            pass
        return got, call.code(), times

    def check_request_responses(self, name, resps, rid, model):
        """One request's responses, in order: OUT_TOKENS text responses
        (" word" each), triton_final_response false on all but the final
        one, and the final last (either on the last text response or alone
        with no outputs)."""
        bad = []
        texts = []
        finals = []
        for k, s in enumerate(resps):
            ir = s.infer_response
            if s.error_message:
                bad.append("#%d: error_message %r" % (k, s.error_message))
            if ir.id != rid:
                bad.append("#%d: id %r" % (k, ir.id))
            if ir.model_name != model:
                bad.append("#%d: model_name %r" % (k, ir.model_name))
            f = self.final_flag(ir)
            finals.append(f)
            try:
                t = self.texts(ir)
            except (ValueError, UnicodeDecodeError) as e:
                bad.append("#%d: %s" % (k, e))
                continue
            if len(t) > 1:
                bad.append("#%d: %d text elements" % (k, len(t)))
            texts += t
            if f is True and t:
                pass  # FINAL on the last data response
            elif f is True and ir.outputs:
                bad.append("#%d: final response with outputs but no text" % k)
        if finals.count(True) != 1 or finals[-1:] != [True]:
            bad.append("triton_final_response flags %r: want one true, on the last response" % finals)
        if any(f not in (True, False) for f in finals):
            bad.append("responses without a bool triton_final_response: %r" % finals)
        if len(texts) != OUT_TOKENS:
            bad.append("%d text responses, want %d" % (len(texts), OUT_TOKENS))
        odd = [t for t in texts if not (t.startswith(" ") and t[1:] in self.words)]
        if odd:
            bad.append("texts that are not ' word' from tp_words: %r" % odd[:3])
        self.tap.check(resps and not bad,
                       "%s: %d ' word' responses then the final one, id and model echoed" %
                       (name, OUT_TOKENS), "\n".join(bad[:8]))
        return texts

    # -- checks ----------------------------------------------------------------

    def expect_status(self, name, fn, code, *needles):
        try:
            fn()
            self.tap.check(False, "%s: %s" % (name, code.name), "the call succeeded")
            return
        except grpc.RpcError as e:
            details = e.details() or ""
            self.tap.check(e.code() == code and all(n in details for n in needles),
                           "%s: %s%s" % (name, code.name,
                                          " naming %s" % ", ".join(needles) if needles else ""),
                           "got %s %r" % (e.code(), details))

    def health(self):
        pb, t, to = self.pb, self.tap, RPC_TIMEOUT_S
        t.equal(self.stub.ServerLive(pb.ServerLiveRequest(), timeout=to).live, True, "ServerLive: live")
        t.equal(self.stub.ServerReady(pb.ServerReadyRequest(), timeout=to).ready, True, "ServerReady: ready")
        for model in ("ensemble", "vllm_model"):
            t.equal(self.stub.ModelReady(pb.ModelReadyRequest(name=model), timeout=to).ready, True,
                    "ModelReady %s: ready" % model)
        # Triton's ModelIsReady answers OK with ready=false for a model it
        # does not know; NOT_FOUND is accepted too (tokperf handles both).
        try:
            r = self.stub.ModelReady(pb.ModelReadyRequest(name="no_such_model"), timeout=to)
            t.check(r.ready is False, "ModelReady no_such_model: ready=false", "got ready=%r" % r.ready)
        except grpc.RpcError as e:
            t.check(e.code() == grpc.StatusCode.NOT_FOUND and "no_such_model" in (e.details() or ""),
                    "ModelReady no_such_model: NOT_FOUND naming the model",
                    "got %s %r" % (e.code(), e.details()))

    def metadata(self):
        pb, t, to = self.pb, self.tap, RPC_TIMEOUT_S
        want = {
            "ensemble": ({"text_input": ("BYTES", [-1, 1]), "max_tokens": ("INT32", [-1, 1]),
                          "stream": ("BOOL", [-1, 1])}, "text_output"),
            "vllm_model": ({"text_input": ("BYTES", [1]), "stream": ("BOOL", [1]),
                            "sampling_parameters": ("BYTES", [1])}, "text_output"),
        }
        for model, (inputs, output) in want.items():
            md = self.stub.ModelMetadata(pb.ModelMetadataRequest(name=model), timeout=to)
            t.equal(md.name, model, "ModelMetadata %s: name" % model)
            have = {i.name: (i.datatype, list(i.shape)) for i in md.inputs}
            t.check(all(have.get(k) == v for k, v in inputs.items()),
                    "ModelMetadata %s: inputs %s" % (model, ", ".join(
                        "%s %s %s" % (k, v[0], v[1]) for k, v in inputs.items())),
                    "got %r" % have)
            outs = {o.name: o.datatype for o in md.outputs}
            t.equal(outs.get(output), "BYTES", "ModelMetadata %s: output %s BYTES" % (model, output))
        self.expect_status("ModelMetadata no_such_model",
                           lambda: self.stub.ModelMetadata(pb.ModelMetadataRequest(name="no_such_model"),
                                                           timeout=to),
                           grpc.StatusCode.NOT_FOUND, "no_such_model")

    def streaming(self):
        t = self.tap
        for model, req in (("ensemble", self.trtllm_request("e1")), ("vllm_model", self.vllm_request("v1"))):
            name = "ModelStreamInfer %s" % model
            resps, code, times = self.stream([req])
            t.equal(code, grpc.StatusCode.OK, "%s: call ends with OK after the half-close" % name)
            texts = self.check_request_responses(name, resps, req.id, model)
            # The mock may not send anything before its timing model says so.
            first = next((times[k] for k, s in enumerate(resps) if self.texts_safe(s)), None)
            t.check(first is not None and first * 1000 >= TTFT_MS and
                    times[-1] * 1000 >= TTFT_MS + (OUT_TOKENS - 1) * ITL_MS,
                    "%s: first token after >= %d ms, last after >= %d ms" %
                    (name, TTFT_MS, TTFT_MS + (OUT_TOKENS - 1) * ITL_MS),
                    "first %r s, last %r s" % (first, times[-1] if times else None))
            if texts:
                t.diag("%s text: %r" % (name, "".join(texts)))

    def texts_safe(self, s):
        try:
            return bool(self.texts(s.infer_response))
        except (ValueError, UnicodeDecodeError):
            return False

    def multiplexed(self):
        t = self.tap
        name = "ModelStreamInfer 2 requests on one stream"
        reqs = [self.trtllm_request("m1"), self.vllm_request("m2")]
        resps, code, _ = self.stream(reqs)
        t.equal(code, grpc.StatusCode.OK, "%s: call ends with OK" % name)
        by_id = {}
        for s in resps:
            by_id.setdefault(s.infer_response.id, []).append(s)
        t.equal(sorted(by_id), ["m1", "m2"], "%s: responses carry only the two ids" % name)
        self.check_request_responses(name + " (m1, ensemble)", by_id.get("m1", []), "m1", "ensemble")
        self.check_request_responses(name + " (m2, vllm_model)", by_id.get("m2", []), "m2", "vllm_model")
        order = "".join("1" if s.infer_response.id == "m1" else "2" for s in resps)
        t.diag("%s: arrival order by id %s" % (name, order))

        # A request written after an earlier one on the same open stream has
        # completed: the stream must stay usable.
        name = "ModelStreamInfer open stream, second request after the first ends"
        q = queue.Queue()
        q.put(self.trtllm_request("s1"))

        def gen():
            while True:
                item = q.get(timeout=RPC_TIMEOUT_S)
                if item is None:
                    return
                yield item
        call = self.stub.ModelStreamInfer(gen(), timeout=RPC_TIMEOUT_S)
        got = {"s1": [], "s2": []}
        try:
            for s in call:
                got.setdefault(s.infer_response.id, []).append(s)
                if s.infer_response.id == "s1" and self.final_flag(s.infer_response) is True:
                    q.put(self.trtllm_request("s2"))
                if s.infer_response.id == "s2" and self.final_flag(s.infer_response) is True:
                    q.put(None)
        except grpc.RpcError:
            q.put(None)
        t.equal(call.code(), grpc.StatusCode.OK, "%s: call ends with OK" % name)
        self.check_request_responses(name + " (s1)", got["s1"], "s1", "ensemble")
        self.check_request_responses(name + " (s2)", got["s2"], "s2", "ensemble")

    def concurrent(self):
        name = "8 ModelStreamInfer calls at once"
        results = [None] * 8

        def one(i):
            try:
                results[i] = self.stream([self.trtllm_request("p%d" % i)])
            except Exception as e:  # reported below
                results[i] = ([], repr(e), [])
        ths = [threading.Thread(target=one, args=(i,)) for i in range(8)]
        for th in ths:
            th.start()
        for th in ths:
            th.join(RPC_TIMEOUT_S + 5)
        bad = []
        for i, r in enumerate(results):
            if r is None:
                bad.append("p%d: did not finish" % i)
                continue
            resps, code, _ = r
            n_text = sum(len(self.texts(s.infer_response)) for s in resps
                         if s.infer_response.id == "p%d" % i and not s.error_message)
            if code != grpc.StatusCode.OK or n_text != OUT_TOKENS:
                bad.append("p%d: %s, %d texts" % (i, code, n_text))
        self.tap.check(not bad, "%s: each gets its %d texts and OK" % (name, OUT_TOKENS), "\n".join(bad))

    def unary(self):
        pb, t, to = self.pb, self.tap, RPC_TIMEOUT_S
        # Non-streaming answers repeat the prompt unless the request sets
        # exclude_input_in_output.
        for exclude, prefix in ((True, ""), (None, PROMPT)):
            name = "ModelInfer ensemble%s" % (" exclude_input_in_output" if exclude else "")
            rid = "u%d" % (1 if exclude else 2)
            r = self.stub.ModelInfer(self.trtllm_request(rid, stream=False, empty_final=False,
                                                         exclude=exclude), timeout=to)
            t.equal((r.id, r.model_name), (rid, "ensemble"), "%s: id and model echoed" % name)
            try:
                texts = self.texts(r)
            except (ValueError, UnicodeDecodeError) as e:
                texts = ["<%s>" % e]
            rest = texts[0][len(prefix):] if len(texts) == 1 and texts[0].startswith(prefix) else ""
            ws = rest.split()
            t.check(len(ws) == OUT_TOKENS and rest.startswith(" ") and all(w in self.words for w in ws),
                    "%s: one text_output element: %s%d words" %
                    (name, "the prompt, then " if prefix else "", OUT_TOKENS), "got %r" % texts)
        self.expect_status("ModelInfer no_such_model",
                           lambda: self.stub.ModelInfer(
                               self.trtllm_request("u2", model="no_such_model", stream=False,
                                                   empty_final=False), timeout=to),
                           grpc.StatusCode.NOT_FOUND, "no_such_model")

    def errors(self):
        t = self.tap
        name = "ModelStreamInfer unknown model"
        bad_req = self.trtllm_request("x1", model="no_such_model")
        good_req = self.trtllm_request("x2")
        resps, code, _ = self.stream([bad_req, good_req])
        t.equal(code, grpc.StatusCode.OK, "%s: the stream still ends with OK" % name)
        errs = [s for s in resps if s.infer_response.id == "x1"]
        t.check(len(errs) == 1 and "no_such_model" in errs[0].error_message,
                "%s: one in-band response with error_message naming the model" % name,
                "got %r" % [(s.error_message, s.infer_response.id) for s in errs])
        self.check_request_responses(name + ": the next request on the stream", [
            s for s in resps if s.infer_response.id == "x2"], "x2", "ensemble")

        for path in (SERVICE + "NoSuchMethod", "/no.such.Service/ModelInfer"):
            fn = self.channel.unary_unary(path)
            self.expect_status("unknown method %s" % path,
                               lambda: fn(b"", timeout=RPC_TIMEOUT_S), grpc.StatusCode.UNIMPLEMENTED)


def run_checks(tap, pb, pbg, channel, words):
    c = Client(tap, pb, pbg, channel, words)
    for part in (c.health, c.metadata, c.streaming, c.multiplexed, c.unary, c.errors, c.concurrent):
        try:
            part()
        except Exception:
            tap.crashed(part.__name__)


def main():
    if len(sys.argv) != 2:
        print("usage: %s PATH/TO/tokperf" % sys.argv[0], file=sys.stderr)
        return 2
    tap = ic.Tap()
    tmp = ic.make_tmpdir("tp-interop-client-")
    mock = channel = None
    try:
        pb, pbg = ic.generate_stubs(tmp)
        words = ic.words()
        mock, port = start_mock(tap, sys.argv[1])
        channel = grpc.insecure_channel("127.0.0.1:%d" % port)
        grpc.channel_ready_future(channel).result(timeout=RPC_TIMEOUT_S)
        run_checks(tap, pb, pbg, channel, words)
        channel.close()
        channel = None
        rc = mock.stop(10 * SCALE)
        tap.equal(rc, 0, "mock exits 0 on SIGINT")
        if rc != 0:
            tap.diag("mock stderr:\n" + "\n".join(mock.stderr[-20:]))
    except Exception:
        tap.crashed("setup")
        if mock:
            tap.diag("mock stderr:\n" + "\n".join(mock.stderr[-20:]))
    finally:
        if channel:
            channel.close()
        if mock:
            mock.kill()
        ic.remove_tmpdir(tmp)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
