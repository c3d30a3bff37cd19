#!/usr/bin/python3
"""Server-side statistics of the mock (issue #9): the ModelStatistics RPC
for the ensemble, its composing models and vllm_model, the same over HTTP
(/v2/models/stats), Prometheus /metrics, and the prefix cache (usage
cached_tokens, a shorter TTFT, vLLM's prefix-cache counters).  The counters
must equal what the test sent.

usage: test_mock_server_stats.py PATH/TO/mock_harness

Output: TAP.
"""

import http.client
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True
import mock_common as mc  # noqa: E402

ic = mc.ic
SCALE = mc.SCALE
OUT = 4
K_ENS = 3
K_VLLM = 2


def ens_request(pb, rid, fault=None):
    r = pb.ModelInferRequest(model_name="ensemble", id=rid)
    r.inputs.add(name="text_input", datatype="BYTES", shape=[1, 1])
    r.raw_input_contents.append(ic.bytes_element("one two three"))
    r.inputs.add(name="max_tokens", datatype="INT32", shape=[1, 1])
    r.raw_input_contents.append((16).to_bytes(4, "little"))
    r.inputs.add(name="stream", datatype="BOOL", shape=[1, 1])
    r.raw_input_contents.append(b"\x01")
    if fault:
        r.parameters["tokperf_fault"].string_param = fault
    return r


def vllm_request(pb, rid):
    r = pb.ModelInferRequest(model_name="vllm_model", id=rid)
    r.inputs.add(name="text_input", datatype="BYTES", shape=[1])
    r.raw_input_contents.append(ic.bytes_element("a b"))
    return r


def http_get(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10 * SCALE)
    c.request("GET", path)
    r = c.getresponse()
    b = r.read()
    c.close()
    return r.status, b


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_prom(text):
    """A strict reading of the text exposition format: every sample after
    its family's HELP and TYPE; returns ({(name, labels): value}, problems)."""
    fams, samples, problems = {}, {}, []
    cur, ctype = None, None
    for line in text.splitlines():
        if line.startswith("# HELP "):
            cur = line.split(" ", 3)[2]
            if cur in fams:
                problems.append("family twice: " + cur)
            fams[cur] = None
            ctype = None
        elif line.startswith("# TYPE "):
            _, _, name, t = line.split(" ", 3)
            if name != cur or t not in ("counter", "gauge", "histogram", "summary", "untyped"):
                problems.append("bad TYPE: " + line)
            ctype = t
            fams[cur] = t
        elif line.startswith("#") or not line:
            continue
        else:
            m = SAMPLE.match(line)
            if not m:
                problems.append("not a sample: " + line)
                continue
            name = m.group(1)
            base = name
            if ctype == "histogram":
                for suf in ("_bucket", "_sum", "_count"):
                    if name.endswith(suf) and name[:-len(suf)] == cur:
                        base = cur
            if base != cur or ctype is None:
                problems.append("sample outside its family: " + line)
            labels = tuple(sorted(LABEL.findall(m.group(2) or "")))
            try:
                samples[(name, labels)] = float(m.group(3))
            except ValueError:
                problems.append("bad value: " + line)
    return samples, fams, problems


def value(samples, name, **labels):
    for (n, ls), v in samples.items():
        if n == name and all((k, str(x)) in ls for k, x in labels.items()):
            return v
    return None


def grpc_part(tap, pb, pbg, exe):
    import grpc
    log_path = os.path.join(tempfile.mkdtemp(prefix="tp-mock-stats-"), "mock.jsonl")
    h = mc.Harness(exe, ttft_ms=5, itl_ms=2, output_tokens=OUT, max_batch=1, prefill_us_per_token=0,
                   prefill_queue_ms=0, itl_us_per_seq=0, log_path=log_path)
    queue_ns = None
    try:
        ch = grpc.insecure_channel("127.0.0.1:%d" % h.grpc_port)
        stub = pbg.GRPCInferenceServiceStub(ch)
        results = []

        # The requests leave together (a barrier), so that with one batch
        # slot the second waits about one request's time and the third two.
        start = threading.Barrier(K_ENS)

        def one(i):
            start.wait(timeout=10 * SCALE)
            got = list(stub.ModelStreamInfer(iter([ens_request(pb, "e%d" % i)]), timeout=20 * SCALE))
            results.append(len(got))

        ths = [threading.Thread(target=one, args=(i,)) for i in range(K_ENS)]
        t0_wall = time.time()
        for t in ths:
            t.start()
        for t in ths:
            t.join()
        for i in range(K_VLLM):
            stub.ModelInfer(vllm_request(pb, "v%d" % i), timeout=20 * SCALE)
        try:
            list(stub.ModelStreamInfer(iter([ens_request(pb, "f", "grpc_status:14")]), timeout=20 * SCALE))
        except grpc.RpcError:
            pass
        tap.check(results == [OUT] * K_ENS, "sent %d streamed ensemble requests of %d tokens, %d vllm, 1 failing"
                  % (K_ENS, OUT, K_VLLM), results)
        time.sleep(0.05)
        resp = stub.ModelStatistics(pb.ModelStatisticsRequest(), timeout=10 * SCALE)
        by = {m.name: m for m in resp.model_stats}
        tap.equal(sorted(by), ["ensemble", "postprocessing", "preprocessing", "tensorrt_llm", "vllm_model"],
                  "ModelStatistics lists the ensemble, its composing models and vllm_model")
        e, pre, llm, post, vl = (by.get(n) for n in ("ensemble", "preprocessing", "tensorrt_llm", "postprocessing",
                                                      "vllm_model"))
        if not all((e, pre, llm, post, vl)):
            return h
        es = e.inference_stats
        tap.check(es.success.count == K_ENS and es.fail.count == 1 and e.inference_count == K_ENS
                  and e.execution_count == K_ENS, "ensemble: %d successes, 1 failure" % K_ENS,
                  str(e))
        tap.check(pre.inference_count == K_ENS and llm.inference_count == K_ENS and
                  llm.inference_stats.fail.count == 0,
                  "preprocessing and tensorrt_llm ran once per admitted request (the failure never reached them)")
        tap.equal(post.inference_count, K_ENS * OUT, "postprocessing ran once per streamed response (%d)" % (K_ENS * OUT))
        # max_batch 1: the three requests ran one after the other; the queue
        # time is checked against their logged arrivals once the mock stops.
        one_req_ns = (5 + (OUT - 1) * 2) * 1e6
        queue_ns = llm.inference_stats.queue.ns
        ci = llm.inference_stats.compute_infer
        tap.check(ci.count == K_ENS and ci.ns >= K_ENS * one_req_ns * 0.95 and ci.ns < K_ENS * one_req_ns * 3 * SCALE,
                  "tensorrt_llm compute infer = prefill + decode (%d x %.0f ms)" % (K_ENS, one_req_ns / 1e6),
                  "%.2f ms" % (ci.ns / 1e6))
        tap.check(es.queue.ns >= llm.inference_stats.queue.ns and es.compute_infer.ns >= ci.ns,
                  "ensemble durations include its composing models'")
        tap.check(vl.inference_stats.success.count == K_VLLM and vl.execution_count == K_VLLM,
                  "vllm_model: %d successes" % K_VLLM)
        tap.check(abs(e.last_inference / 1000 - time.time()) < 60 and e.last_inference / 1000 >= t0_wall - 1,
                  "last_inference is the wall clock, in ms")
        one_m = stub.ModelStatistics(pb.ModelStatisticsRequest(name="tensorrt_llm"), timeout=10 * SCALE)
        tap.check(len(one_m.model_stats) == 1 and one_m.model_stats[0].inference_count == K_ENS,
                  "ModelStatistics(name=tensorrt_llm): that model only")
        try:
            stub.ModelStatistics(pb.ModelStatisticsRequest(name="nope"), timeout=10 * SCALE)
            code = grpc.StatusCode.OK
        except grpc.RpcError as ex:
            code = ex.code()
        tap.equal(code, grpc.StatusCode.NOT_FOUND, "ModelStatistics of an unknown model: NOT_FOUND")
        meta = stub.ServerMetadata(pb.ServerMetadataRequest(), timeout=10 * SCALE)
        tap.check("statistics" in meta.extensions, "ServerMetadata lists the statistics extension")
        ch.close()

        # The same over HTTP.
        st, b = http_get(h.http_port, "/v2/models/stats")
        j = json.loads(b or b"{}")
        hs = {m["name"]: m for m in j.get("model_stats", [])}
        tap.check(st == 200 and hs.get("tensorrt_llm", {}).get("inference_stats", {}).get("queue", {}).get("ns")
                  == llm.inference_stats.queue.ns and hs["postprocessing"]["inference_count"] == K_ENS * OUT,
                  "GET /v2/models/stats: the same numbers as the RPC", b[:300])
        st, b = http_get(h.http_port, "/v2/models/ensemble/stats")
        j = json.loads(b or b"{}")
        tap.check(st == 200 and [m["name"] for m in j.get("model_stats", [])] == ["ensemble"],
                  "GET /v2/models/ensemble/stats: one model")

        # Prometheus.
        st, b = http_get(h.http_port, "/metrics")
        samples, fams, problems = parse_prom(b.decode())
        tap.check(st == 200 and not problems and len(fams) >= 30,
                  "/metrics: %d families, every sample under its HELP/TYPE" % len(fams), problems[:5])
        tap.check(value(samples, "nv_inference_request_success", model="ensemble") == K_ENS and
                  value(samples, "nv_inference_request_failure", model="ensemble", reason="BACKEND") == 1 and
                  value(samples, "nv_inference_count", model="postprocessing") == K_ENS * OUT and
                  value(samples, "nv_inference_request_success", model="vllm_model") == K_VLLM,
                  "/metrics: Triton's per-model counters equal what was sent")
        tap.check(abs(value(samples, "nv_inference_queue_duration_us", model="tensorrt_llm")
                      - llm.inference_stats.queue.ns // 1000) <= 1,
                  "/metrics: queue duration in us = the RPC's ns / 1000")
        util = value(samples, "nv_gpu_utilization")
        tap.check(util is not None and 0 < util <= 1 and value(samples, "nv_energy_consumption") > 0 and
                  value(samples, "nv_gpu_memory_used_bytes") < value(samples, "nv_gpu_memory_total_bytes"),
                  "/metrics: GPU utilization in (0, 1], energy, memory", util)
        tap.check(value(samples, "nv_trt_llm_request_metrics", request_type="max") == 1 and
                  value(samples, "nv_trt_llm_request_metrics", request_type="active") == 0 and
                  value(samples, "nv_trt_llm_kv_cache_block_metrics", kv_cache_block_type="used") == 0,
                  "/metrics: TensorRT-LLM request and KV-cache block gauges (idle)")
        n_req = K_ENS + K_VLLM
        tap.check(value(samples, "vllm:time_to_first_token_seconds_count") == n_req and
                  value(samples, "vllm:time_to_first_token_seconds_bucket", le="+Inf") == n_req and
                  value(samples, "vllm:generation_tokens_total") == n_req * OUT and
                  value(samples, "vllm:num_requests_running") == 0,
                  "/metrics: vLLM's counters and TTFT histogram (%d requests)" % n_req)
    finally:
        h.finish(tap, "statistics over gRPC")
    if queue_ns is not None:
        check_queue(tap, log_path, queue_ns, (5 + (OUT - 1) * 2) * 1e6)
    shutil.rmtree(os.path.dirname(log_path), ignore_errors=True)


def check_queue(tap, log_path, queue_ns, one_req_ns):
    """With one batch slot, request i is admitted at max(its arrival, the
    end of the one before); the mock's queue time is the sum of the waits.
    Computed from the arrivals in the mock's log, so a thread that sent late
    on a loaded machine changes the expectation, not the verdict.  A late
    timer only lengthens a request, so the waits are at least this."""
    arrivals = []
    with open(log_path) as f:
        for line in f:
            ev = json.loads(line)
            if ev["ev"] == "request" and ev["model"] == "ensemble" and re.fullmatch(r"e\d+", ev["id"]):
                arrivals.append(ev["t_ns"])
    arrivals.sort()
    want, free_at = 0.0, 0.0
    for a in arrivals:
        admit = max(a, free_at)
        want += admit - a
        free_at = admit + one_req_ns
    tap.check(len(arrivals) == K_ENS, "the mock logged the %d queued requests" % K_ENS, arrivals)
    tap.check(want >= one_req_ns, "the requests overlapped, so some had to wait (%.1f ms of queueing due)"
              % (want / 1e6))
    tap.check(want - 1e6 <= queue_ns <= want + 5 * one_req_ns * SCALE,
              "tensorrt_llm queue time = waiting for the one batch slot (%.2f ms for %.2f ms due)"
              % (queue_ns / 1e6, want / 1e6))


def prefix_part(tap, exe):
    h = mc.Harness(exe, ttft_ms=5, itl_ms=1, output_tokens=2, prefill_us_per_token=1000, prefill_queue_ms=0,
                   prefix_cache=1, prefix_cache_block_words=4, prefix_cache_blocks=64)
    try:
        prompt = " ".join("w%d" % i for i in range(40))
        c = http.client.HTTPConnection("127.0.0.1", h.http_port, timeout=10 * SCALE)
        cached, ttfts = [], []
        for _ in range(2):
            body = {"prompt": prompt, "stream": True, "stream_options": {"include_usage": True}}
            t0 = time.monotonic()
            c.request("POST", "/v1/completions", body=json.dumps(body).encode())
            r = c.getresponse()
            first = None
            data = b""
            while True:
                line = r.readline()
                if not line:
                    break
                if b"\"text\":\" " in line and first is None:
                    first = time.monotonic() - t0
                data += line
                if b"[DONE]" in line:
                    break
            r.read()
            ttfts.append(first)
            usage = [json.loads(l[6:]) for l in data.split(b"\n") if l.startswith(b"data: {") and b'"choices":[]' in l]
            cached.append(usage[0]["usage"]["prompt_tokens_details"]["cached_tokens"] if usage else None)
        c.close()
        tap.equal(cached, [0, 36], "prefix cache: a repeated 40-word prompt finds 9 blocks of 4 (36 words)")
        tap.check(ttfts[0] and ttfts[1] and ttfts[0] >= 0.045 and ttfts[1] < ttfts[0] - 0.025,
                  "prefix cache: the prefill term counts only the 4 uncached words (%.1f ms, then %.1f ms)"
                  % (ttfts[0] * 1000, ttfts[1] * 1000))
        st = h.stats()
        tap.equal((st["prefix_cache_queries_tokens"], st["prefix_cache_hits_tokens"]), (80, 36),
                  "tp_mock_stats: 80 prompt tokens looked up, 36 hit")
        s, b = http_get(h.http_port, "/metrics")
        samples, _, problems = parse_prom(b.decode())
        tap.check(value(samples, "vllm:prefix_cache_queries_total") == 80 and
                  value(samples, "vllm:prefix_cache_hits_total") == 36,
                  "/metrics: vllm:prefix_cache_queries/hits agree")
    finally:
        h.finish(tap, "prefix cache")


def main():
    if len(sys.argv) < 2:
        print("usage: test_mock_server_stats.py PATH/TO/mock_harness", file=sys.stderr)
        return 2
    exe = sys.argv[1]
    tap = mc.Tap()
    tmp = ic.make_tmpdir("tp-mock-stats-")
    try:
        try:
            import grpc  # noqa: F401
            import grpc_tools  # noqa: F401
            pb, pbg = ic.generate_stubs(tmp)
            grpc_part(tap, pb, pbg, exe)
        except ImportError:
            tap.skip("ModelStatistics over gRPC", "python3-grpcio missing")
        except Exception:
            tap.crashed("statistics over gRPC")
        try:
            prefix_part(tap, exe)
        except Exception:
            tap.crashed("prefix cache")
    finally:
        ic.remove_tmpdir(tmp)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
