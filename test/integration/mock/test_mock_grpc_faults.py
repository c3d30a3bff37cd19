#!/usr/bin/python3
"""Fault injection on the mock's gRPC side, seen by python3-grpcio (and, for
what grpcio hides, by nghttp's frame log and raw sockets).

usage: test_mock_grpc_faults.py PATH/TO/mock_harness

Every fault kind is asked for per request with the string parameter
tokperf_fault (and tokperf_fault_after), then the server-wide draw
(fault_kind + fault_rate, seeded) is checked request by request against a
restatement of the draw, and the connection-level faults (refuse for a time,
refuse the first N, GOAWAY after N streams).  Each check also reads what
the server counted.  Output: TAP.
"""

import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import time

sys.dont_write_bytecode = True
import mock_common as mc  # noqa: E402

ic = mc.ic
ic.import_grpc_or_skip()
import grpc  # noqa: E402

SCALE = mc.SCALE
OUT = 8
T = 10 * SCALE  # per-call deadline, s


def vllm_request(pb, rid, fault=None, after=None, stream=True, prompt="the water of the world"):
    r = pb.ModelInferRequest(model_name="vllm_model", id=rid)
    r.inputs.add(name="text_input", datatype="BYTES", shape=[1])
    r.raw_input_contents.append(ic.bytes_element(prompt))
    r.inputs.add(name="stream", datatype="BOOL", shape=[1])
    r.raw_input_contents.append(b"\x01" if stream else b"\x00")
    r.inputs.add(name="exclude_input_in_output", datatype="BOOL", shape=[1])
    r.raw_input_contents.append(b"\x01")
    if fault is not None:
        r.parameters["tokperf_fault"].string_param = fault
    if after is not None:
        r.parameters["tokperf_fault_after"].int64_param = after
    return r


def text_of(resp):
    ir = resp.infer_response
    for i, o in enumerate(ir.outputs):
        if o.name == "text_output" and i < len(ir.raw_output_contents):
            return b"".join(ic.split_bytes_elements(ir.raw_output_contents[i]))
    return None


class Ctx:
    def __init__(self, tap, pb, pbg, exe):
        self.tap, self.pb, self.pbg, self.exe = tap, pb, pbg, exe

    def stream(self, port, reqs, timeout=T):
        """One ModelStreamInfer call; returns (responses, code, details, seconds)."""
        ch = grpc.insecure_channel("127.0.0.1:%d" % port)
        stub = self.pbg.GRPCInferenceServiceStub(ch)
        got = []
        t0 = time.monotonic()
        call = stub.ModelStreamInfer(iter(reqs), timeout=timeout)
        try:
            for r in call:
                got.append(r)
        except grpc.RpcError:
            pass
        dt = time.monotonic() - t0
        code, details = call.code(), call.details()
        ch.close()
        return got, code, details, dt

    def unary(self, port, req, timeout=T):
        ch = grpc.insecure_channel("127.0.0.1:%d" % port)
        stub = self.pbg.GRPCInferenceServiceStub(ch)
        try:
            resp = stub.ModelInfer(req, timeout=timeout)
            code, details = grpc.StatusCode.OK, ""
        except grpc.RpcError as e:
            resp, code, details = None, e.code(), e.details()
        ch.close()
        return resp, code, details


def nghttp_frames(port, method, body, timeout_s=5, copies=1):
    """Runs nghttp -v with one gRPC-framed body (sent `copies` times, in one
    go, the copies on the paths METHOD?2, METHOD?3...); returns its output."""
    nghttp = shutil.which("nghttp")
    if not nghttp:
        return None
    d = ic.make_tmpdir("tp-mock-nghttp-")
    try:
        path = os.path.join(d, "body.bin")
        with open(path, "wb") as f:
            f.write(body)
        res = subprocess.run([nghttp, "-v", "-n", "--no-dep", "-t", str(int(timeout_s * SCALE)),
                              "-H", "content-type: application/grpc", "-H", "te: trailers",
                              "-d", path] +
                             ["http://127.0.0.1:%d/inference.GRPCInferenceService/%s%s" %
                              (port, method, "?%d" % i if i > 1 else "") for i in range(1, copies + 1)],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30 * SCALE)
        return res.stdout.decode(errors="replace")
    finally:
        ic.remove_tmpdir(d)


def sequential_calls(c, port, prefix, n, pause_s):
    """n unary ModelInfer calls one after the other on one channel, pause_s
    apart; the status of each ("OK" or the gRPC code)."""
    pb = c.pb
    ch = grpc.insecure_channel("127.0.0.1:%d" % port)
    stub = c.pbg.GRPCInferenceServiceStub(ch)
    codes = []
    for i in range(n):
        try:
            stub.ModelInfer(vllm_request(pb, "%s%d" % (prefix, i), stream=False), timeout=T)
            codes.append("OK")
        except grpc.RpcError as e:
            codes.append(str(e.code()))
        time.sleep(pause_s)
    ch.close()
    return codes


def framed(msg):
    b = msg.SerializeToString()
    return b"\x00" + struct.pack(">I", len(b)) + b


def per_request_faults(c, h):
    tap, pb = c.tap, c.pb
    port = h.grpc_port

    got, code, _, _ = c.stream(port, [vllm_request(pb, "ok")])
    tap.check(code == grpc.StatusCode.OK and len(got) == OUT, "no fault: %d responses, OK" % OUT,
              "got %d, %s" % (len(got), code))

    got, code, det, _ = c.stream(port, [vllm_request(pb, "s1", "grpc_status:14:overloaded")])
    tap.check(code == grpc.StatusCode.UNAVAILABLE and det == "overloaded" and not got,
              "grpc_status:14:overloaded at arrival: UNAVAILABLE 'overloaded', no response",
              "%s %r %d" % (code, det, len(got)))

    got, code, det, _ = c.stream(port, [vllm_request(pb, "s2", "grpc_status:8", after=3)])
    tap.check(code == grpc.StatusCode.RESOURCE_EXHAUSTED and len(got) == 3,
              "grpc_status:8 after 3 tokens: 3 responses then RESOURCE_EXHAUSTED", "%s %d" % (code, len(got)))

    _, code, det = c.unary(port, vllm_request(pb, "u1", "http_status:429:slow down", stream=False))
    tap.check(code == grpc.StatusCode.RESOURCE_EXHAUSTED and det == "slow down",
              "http_status:429 on gRPC: RESOURCE_EXHAUSTED", "%s %r" % (code, det))

    got, code, det, _ = c.stream(port, [vllm_request(pb, "t1", "trailers_only:13:boom")])
    tap.check(code == grpc.StatusCode.INTERNAL and det == "boom", "trailers_only:13:boom: INTERNAL 'boom'",
              "%s %r" % (code, det))

    got, code, det, _ = c.stream(port, [vllm_request(pb, "r1", "rst_stream", after=2)])
    tap.check(code == grpc.StatusCode.INTERNAL and len(got) == 2 and "RST_STREAM" in det,
              "rst_stream after 2: 2 responses, then RST_STREAM INTERNAL_ERROR (INTERNAL)",
              "%s %r %d" % (code, det, len(got)))
    got, code, det, _ = c.stream(port, [vllm_request(pb, "r2", "rst_stream:7")])
    tap.check(code == grpc.StatusCode.UNAVAILABLE, "rst_stream:7 (REFUSED_STREAM): UNAVAILABLE",
              "%s %r" % (code, det))

    got, code, det, _ = c.stream(port, [vllm_request(pb, "i1", "inband_error:oops", after=2)])
    errs = [r for r in got if r.error_message]
    tap.check(code == grpc.StatusCode.OK and len(got) == 3 and len(errs) == 1 and got[-1].error_message == "oops",
              "inband_error:oops after 2: 2 responses, an error_message response, then OK trailers",
              "%s %d %r" % (code, len(got), [r.error_message for r in got]))
    if errs:
        ir = errs[0].infer_response
        fin = ir.parameters["triton_final_response"].bool_param if "triton_final_response" in ir.parameters else None
        tap.check(ir.id == "i1" and ir.model_name == "vllm_model" and fin is True,
                  "inband_error: infer_response carries id, model_name, triton_final_response=true",
                  "%r %r %r" % (ir.id, ir.model_name, fin))
    # The stream stays usable after an in-band error: a second request on it completes.
    got, code, _, _ = c.stream(port, [vllm_request(pb, "i2", "inband_error:x"), vllm_request(pb, "i3")])
    tap.check(code == grpc.StatusCode.OK and sum(1 for r in got if r.infer_response.id == "i3") == OUT,
              "inband_error leaves the stream usable: the next request on it completes", "%s %d" % (code, len(got)))

    before = h.stats()["faults_injected"]
    got, code, det, dt = c.stream(port, [vllm_request(pb, "st", "stall", after=2)], timeout=0.6 * SCALE)
    tap.check(code == grpc.StatusCode.DEADLINE_EXCEEDED and len(got) == 2 and dt >= 0.55 * SCALE,
              "stall after 2: 2 responses, then nothing until the client's deadline",
              "%s %d %.2fs" % (code, len(got), dt))
    st = h.wait_stats(lambda s: s["faults_injected"] > before)
    tap.equal(st["faults_injected"], before + 1, "stall counted once in faults_injected")

    # trickle: every byte of every message in its own DATA frame, ~1 ms apart.
    got, code, det, dt = c.stream(port, [vllm_request(pb, "tr", "trickle")])
    nbytes = sum(len(framed(r)) for r in got)
    tap.check(code == grpc.StatusCode.OK and len(got) == OUT and dt >= 0.8e-3 * nbytes,
              "trickle: all %d responses arrive, %d bytes take >= ~1 ms each" % (OUT, nbytes),
              "%s %d %.3fs" % (code, len(got), dt))
    body = framed(vllm_request(pb, "trn", "trickle"))
    out = nghttp_frames(port, "ModelStreamInfer", body)
    if out is None:
        tap.skip("trickle: 1-byte DATA frames on the wire", "nghttp not installed")
    else:
        ones = len(re.findall(r"recv DATA frame <length=1, ", out))
        tap.check(ones >= 100, "trickle: the wire carries 1-byte DATA frames (%d seen)" % ones, out[-800:])

    got, code, det, _ = c.stream(port, [vllm_request(pb, "m1", "malformed", after=1)])
    tap.check(code == grpc.StatusCode.INTERNAL and len(got) == 1,
              "malformed after 1: one good response, then a message grpcio cannot parse (INTERNAL)",
              "%s %r %d" % (code, det, len(got)))

    got, code, det, _ = c.stream(port, [vllm_request(pb, "o1", "oversize")])
    tap.check(code == grpc.StatusCode.RESOURCE_EXHAUSTED,
              "oversize: an 80 MiB prefix is refused by grpcio's 4 MiB limit (RESOURCE_EXHAUSTED)",
              "%s %r" % (code, det))

    got, code, det, _ = c.stream(port, [vllm_request(pb, "u8", "invalid_utf8", after=1)])
    texts = [text_of(r) for r in got]
    bad = [t for t in texts if t is not None and t.startswith(b"\xff\xfe")]
    tap.check(code == grpc.StatusCode.OK and len(got) == OUT and len(bad) == 1 and texts[1].startswith(b"\xff\xfe"),
              "invalid_utf8 after 1: response #1 starts with bytes ff fe, the others are UTF-8",
              "%s %r" % (code, texts[:3]))

    ch = grpc.insecure_channel("127.0.0.1:%d" % port)
    stub = c.pbg.GRPCInferenceServiceStub(ch)
    call = stub.ModelStreamInfer(iter([vllm_request(pb, "en", "endless")]), timeout=T)
    n = 0
    for _ in call:
        n += 1
        if n >= 5 * OUT:
            break
    call.cancel()
    ch.close()
    tap.check(n >= 5 * OUT, "endless: %d responses and more (output_tokens is %d), until the client cancels" % (n, OUT))
    st = h.wait_stats(lambda s: s["max_active_streams"] >= 1)

    got, code, det, _ = c.stream(port, [vllm_request(pb, "cc", "close_conn", after=2)])
    tap.check(code == grpc.StatusCode.UNAVAILABLE and len(got) == 2,
              "close_conn after 2: 2 responses, then the connection drops (UNAVAILABLE)",
              "%s %r %d" % (code, det, len(got)))

    # goaway: nghttp shows the GOAWAY frame with its last-stream-id and code.
    out = nghttp_frames(port, "ModelStreamInfer", framed(vllm_request(pb, "ga", "goaway:2")))
    if out is None:
        tap.skip("goaway: GOAWAY frame on the wire", "nghttp not installed")
    else:
        m = re.search(r"send HEADERS frame <length=\d+, flags=0x\w+, stream_id=(\d+)>", out)
        g = re.search(r"recv GOAWAY frame.*?\n\s*\(last_stream_id=(\d+), error_code=(\w+)", out, re.S)
        sid = int(m.group(1)) if m else -1
        tap.check(g is not None and int(g.group(1)) == max(sid - 2, 0) and g.group(2) == "INTERNAL_ERROR",
                  "goaway:2 at arrival: GOAWAY(last_stream_id below the request's stream, INTERNAL_ERROR)",
                  out[-1200:])

    # Trailers-Only on the wire: one HEADERS block with END_STREAM and grpc-status.
    out = nghttp_frames(port, "ModelInfer", framed(vllm_request(pb, "to", "trailers_only:14:busy", stream=False)))
    if out is None:
        tap.skip("trailers_only: one HEADERS block", "nghttp not installed")
    else:
        heads = re.findall(r"recv HEADERS frame <length=\d+, flags=(0x\w+), stream_id=\d+>", out)
        tap.check(len(heads) == 1 and int(heads[0], 16) & 0x1 and "grpc-status: 14" in out
                  and "recv DATA" not in out,
                  "trailers_only: a single HEADERS (END_STREAM) with grpc-status 14, no DATA", out[-1200:])
        out = nghttp_frames(port, "ModelInfer", framed(vllm_request(pb, "gs", "grpc_status:14:busy", stream=False)))
        heads = re.findall(r"recv HEADERS frame <length=\d+, flags=(0x\w+), stream_id=\d+>", out)
        tap.check(len(heads) == 2 and not int(heads[0], 16) & 0x1 and int(heads[1], 16) & 0x1,
                  "grpc_status: HEADERS, then trailers in a second HEADERS (END_STREAM)", out[-1200:])

    # A bad spec is the client's mistake: in-band on a stream, INVALID_ARGUMENT on a unary call.
    got, code, det, _ = c.stream(port, [vllm_request(pb, "bad", "explode")])
    tap.check(code == grpc.StatusCode.OK and len(got) == 1 and "unknown fault kind 'explode'" in got[0].error_message,
              "unknown fault kind: in-band error naming it", "%s %r" % (code, [r.error_message for r in got]))
    _, code, det = c.unary(port, vllm_request(pb, "bad2", "grpc_status:99", stream=False))
    tap.check(code == grpc.StatusCode.INVALID_ARGUMENT and "1..16" in det,
              "grpc_status:99 on a unary call: INVALID_ARGUMENT naming the range", "%s %r" % (code, det))


def drawn_faults(c):
    """fault_kind + fault_rate: exactly the requests the seeded draw picks fail."""
    tap, pb = c.tap, c.pb
    seed, rate, n = 7, 0.4, 40
    h = mc.Harness(c.exe, ttft_ms=1, itl_ms=0.5, output_tokens=2, seed=seed, fault_kind="grpc_status:14:drawn",
                   fault_rate=rate)
    try:
        failed = []
        for i in range(n):
            _, code, det = c.unary(h.grpc_port, vllm_request(pb, "d%d" % i, stream=False))
            if code != grpc.StatusCode.OK:
                failed.append(i)
                if code != grpc.StatusCode.UNAVAILABLE or det != "drawn":
                    tap.diag("request %d: %s %r" % (i, code, det))
        want = [i for i in range(n) if mc.fault_drawn(seed, i, rate)]
        tap.check(failed == want and 0 < len(want) < n,
                  "fault_rate 0.4, seed 7: the requests that fail are exactly the seeded draw's (%d of %d)"
                  % (len(want), n), "failed %r\nwant   %r" % (failed, want))
        st = h.wait_stats(lambda s: s["faults_injected"] >= len(want))
        tap.equal((st["requests"], st["faults_injected"]), (n, len(want)),
                  "server counted every request and each drawn fault")
        _, code, _ = c.unary(h.grpc_port, vllm_request(pb, "none", "none", stream=False))
        st2 = h.stats()
        tap.check(code == grpc.StatusCode.OK, "tokperf_fault=none exempts a request from the draw")
    finally:
        h.finish(tap, "drawn faults")
    h = mc.Harness(c.exe, ttft_ms=1, itl_ms=0.5, output_tokens=6, fault_kind="inband_error:late",
                   fault_after_tokens=4)
    try:
        got, code, _, _ = c.stream(h.grpc_port, [vllm_request(pb, "late")])
        tap.check(code == grpc.StatusCode.OK and len(got) == 5 and got[-1].error_message == "late",
                  "fault_after_tokens 4: four tokens, then the drawn in-band error",
                  "%s %r" % (code, [r.error_message for r in got]))
    finally:
        h.finish(tap, "fault_after_tokens")


def connection_faults(c):
    tap, pb = c.tap, c.pb
    # refuse_connections_ms: bound but not listening, so connect() is refused.
    h = mc.Harness(c.exe, ttft_ms=1, itl_ms=0.5, output_tokens=2, refuse_connections_ms=int(400 * SCALE))
    try:
        t0 = time.monotonic()
        refused = False
        try:
            socket.create_connection(("127.0.0.1", h.grpc_port), timeout=2).close()
        except ConnectionRefusedError:
            refused = True
        tap.check(refused and time.monotonic() - t0 < 0.3 * SCALE,
                  "refuse_connections_ms: a connect at once is refused (ECONNREFUSED)")
        ok = False
        while time.monotonic() - t0 < 5 * SCALE:
            try:
                socket.create_connection(("127.0.0.1", h.grpc_port), timeout=2).close()
                ok = True
                break
            except ConnectionRefusedError:
                time.sleep(0.02)
        dt = time.monotonic() - t0
        tap.check(ok and dt >= 0.35 * SCALE, "refuse_connections_ms: connects succeed after the window (%.2f s)" % dt)
        _, code, _ = c.unary(h.grpc_port, vllm_request(pb, "after", stream=False))
        tap.equal(code, grpc.StatusCode.OK, "refuse_connections_ms: requests are served after the window")
    finally:
        h.finish(tap, "refuse_connections_ms")

    # refuse_connections: the first N are accepted and reset.
    h = mc.Harness(c.exe, ttft_ms=1, itl_ms=0.5, output_tokens=2, refuse_connections=2)
    try:
        resets = 0
        for _ in range(2):
            # The reset may come while connect() returns or at the first read.
            try:
                s = socket.create_connection(("127.0.0.1", h.grpc_port), timeout=2)
            except ConnectionResetError:
                resets += 1
                continue
            s.settimeout(2 * SCALE)
            try:
                s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
                data = s.recv(100)
                resets += data == b""
            except (ConnectionResetError, BrokenPipeError):
                resets += 1
            s.close()
        tap.equal(resets, 2, "refuse_connections 2: the first two connections are reset")
        _, code, _ = c.unary(h.grpc_port, vllm_request(pb, "third", stream=False))
        tap.equal(code, grpc.StatusCode.OK, "refuse_connections 2: the third connection is served")
        st = h.stats()
        tap.equal((st["connections"], st["connections_refused"]), (3, 2), "server counted 3 connections, 2 refused")
    finally:
        h.finish(tap, "refuse_connections")

    # goaway_after_streams: one channel, sequential calls, a new connection every 2 streams.
    h = mc.Harness(c.exe, ttft_ms=1, itl_ms=0.5, output_tokens=2, goaway_after_streams=2)
    try:
        codes = sequential_calls(c, h.grpc_port, "g", 6, 0.05)
        st = h.stats()
        tap.check(codes == ["OK"] * 6 and st["connections"] == 3,
                  "goaway_after_streams 2: 6 calls on one channel all succeed over 3 connections",
                  "%r, %d connections" % (codes, st["connections"]))
        out = nghttp_frames(h.grpc_port, "ModelInfer", framed(vllm_request(pb, "n1", stream=False)))
        if out is not None:
            tap.check("recv GOAWAY" not in out, "goaway_after_streams 2: no GOAWAY after one stream")
    finally:
        h.finish(tap, "goaway_after_streams")


def raw_h2(port, requests):
    """A bare HTTP/2 client: the preface, empty SETTINGS, then for each
    (stream id, method, framed body) a request HEADERS block (HPACK literals
    without indexing) and its DATA with END_STREAM; then reads until the
    server closes.  Returns ([(type, stream id, payload)], EOF seen, seconds)."""
    def frame(ftype, flags, sid, payload):
        return len(payload).to_bytes(3, "big") + bytes([ftype, flags]) + sid.to_bytes(4, "big") + payload

    def literal(name, value):
        n, v = name.encode(), value.encode()
        return b"\x00" + bytes([len(n)]) + n + bytes([len(v)]) + v

    out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b"")
    for sid, method, body in requests:
        block = b"".join(literal(k, v) for k, v in [
            (":method", "POST"), (":scheme", "http"), (":path", "/inference.GRPCInferenceService/" + method),
            (":authority", "127.0.0.1:%d" % port), ("content-type", "application/grpc"), ("te", "trailers")])
        out += frame(1, 0x4, sid, block) + frame(0, 0x1, sid, body)
    s = socket.create_connection(("127.0.0.1", port), timeout=5 * SCALE)
    t0 = time.time()
    data, eof, acked = b"", False, False
    try:
        s.sendall(out)
        while True:
            chunk = s.recv(65536)
            if not chunk:
                eof = True
                break
            data += chunk
            if not acked:
                # Acknowledge the server's SETTINGS, as a client must.
                s.sendall(frame(4, 1, 0, b""))
                acked = True
    except OSError:
        pass
    secs = time.time() - t0
    s.close()
    frames, off = [], 0
    while off + 9 <= len(data):
        n = int.from_bytes(data[off:off + 3], "big")
        sid = int.from_bytes(data[off + 5:off + 9], "big") & 0x7fffffff
        frames.append((data[off + 3], sid, data[off + 9:off + 9 + n]))
        off += 9 + n
    return frames, eof, secs


def goaway_last(out):
    """last_stream_id of the first GOAWAY in nghttp -v output, or None."""
    m = re.search(r"recv GOAWAY frame.*\n\s*\(last_stream_id=(\d+)", out)
    return int(m.group(1)) if m else None


def answered_streams(out):
    """Stream ids nghttp saw a grpc-status for."""
    return sorted(set(int(x) for x in re.findall(r"recv \(stream_id=(\d+)\) grpc-status:", out)))


def closing_connections(c):
    """Servers that end connections a client means to reuse: GOAWAY naming
    the last stream processed, streams above it never answered."""
    tap, pb = c.tap, c.pb
    body = framed(vllm_request(pb, "n1", stream=False))

    # close_after_stream: a GOAWAY after every finished stream.
    h = mc.Harness(c.exe, ttft_ms=1, itl_ms=0.5, output_tokens=2, close_after_stream=1)
    try:
        codes = sequential_calls(c, h.grpc_port, "c", 4, 0.05)
        st = h.stats()
        tap.check(codes == ["OK"] * 4 and st["connections"] == 4,
                  "close_after_stream: 4 calls on one channel all succeed over 4 connections",
                  "%r, %d connections" % (codes, st["connections"]))
        frames, eof, secs = raw_h2(h.grpc_port, [(1, "ModelInfer", body)])
        kinds = [(t, sid) for t, sid, _ in frames if t in (1, 7)]
        goaways = [int.from_bytes(p[:4], "big") & 0x7fffffff for t, _, p in frames if t == 7]
        tap.check(kinds == [(1, 1), (1, 1), (7, 0)] and goaways == [1] and eof,
                  "close_after_stream: stream 1 answered (HEADERS, trailers), then GOAWAY last_stream_id 1, then EOF",
                  "HEADERS/GOAWAY frames %r, goaway %r, eof %r" % (kinds, goaways, eof))
    finally:
        h.finish(tap, "close_after_stream")

    # Streams above the announced last_stream_id are never processed: three
    # requests in one write to a server that takes one stream per connection.
    h = mc.Harness(c.exe, ttft_ms=1, itl_ms=0.5, output_tokens=2, goaway_after_streams=1)
    try:
        out = nghttp_frames(h.grpc_port, "ModelInfer", body, copies=3)
        if out is None:
            tap.skip("goaway_after_streams 1: streams crossing a GOAWAY", "nghttp missing")
        else:
            tap.check(goaway_last(out) == 1 and answered_streams(out) == [1],
                      "goaway_after_streams 1: streams 3 and 5, sent with stream 1, are not answered",
                      out[-1500:])
            refused = re.findall(r"RST_STREAM frame <[^>]*stream_id=(\d+)>\s*\n\s*\(error_code=REFUSED_STREAM",
                                 out)
            # Read in one piece with stream 1 they reach the session before its
            # GOAWAY is written, and the mock refuses them itself; read later,
            # nghttp2 drops them silently.  Either way none was processed.
            tap.check(set(refused) <= {"3", "5"}, "goaway_after_streams 1: refused with REFUSED_STREAM (%s)" %
                      (",".join(refused) or "none, dropped after the GOAWAY"), out[-1500:])
        tap.equal(h.stats()["requests"], 1, "goaway_after_streams 1: the mock processed one request")
    finally:
        h.finish(tap, "goaway_after_streams 1")

    # idle_close_ms: a connection without a stream in progress for 100 ms.
    h = mc.Harness(c.exe, ttft_ms=1, itl_ms=0.5, output_tokens=2, idle_close_ms=100)
    try:
        codes = sequential_calls(c, h.grpc_port, "i", 2, 0.4)
        st = h.stats()
        tap.check(codes == ["OK"] * 2 and st["connections"] == 2,
                  "idle_close_ms 100: 2 calls 400 ms apart succeed over 2 connections",
                  "%r, %d connections" % (codes, st["connections"]))
        # A connection that never carries a stream: SETTINGS, then GOAWAY
        # with last_stream_id 0, then the server's half-close (EOF, no reset).
        frames, eof, secs = raw_h2(h.grpc_port, [])
        goaways = [int.from_bytes(p[:4], "big") & 0x7fffffff for t, _, p in frames if t == 7]
        tap.check(goaways == [0] and eof and 0.05 <= secs <= 5 * SCALE,
                  "idle_close_ms 100: an unused connection gets GOAWAY last_stream_id 0, then EOF (%.2f s)" % secs,
                  "frames %r, eof %r" % ([t for t, _, _ in frames], eof))
    finally:
        h.finish(tap, "idle_close_ms")


def main():
    if len(sys.argv) < 2:
        print("usage: test_mock_grpc_faults.py PATH/TO/mock_harness", file=sys.stderr)
        return 2
    tap = mc.Tap()
    tmp = ic.make_tmpdir("tp-mock-grpc-")
    try:
        pb, pbg = ic.generate_stubs(tmp)
        c = Ctx(tap, pb, pbg, sys.argv[1])
        h = mc.Harness(c.exe, ttft_ms=2, itl_ms=1, output_tokens=OUT)
        try:
            per_request_faults(c, h)
        except Exception:
            tap.crashed("per-request faults")
        finally:
            h.finish(tap, "per-request faults")
        for fn in (drawn_faults, connection_faults, closing_connections):
            try:
                fn(c)
            except Exception:
                tap.crashed(fn.__name__)
    finally:
        ic.remove_tmpdir(tmp)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
