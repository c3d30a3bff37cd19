#!/usr/bin/python3
"""The reference client of bench/run.sh: a Triton gRPC load loop written the way
the original llm_perf.py seed script works (grpc.aio, one asyncio task per
concurrent slot, one ModelStreamInfer call per request, every response decoded
with the generated protobuf classes and timestamped on arrival).

Usage: grpc_aio_client.py STUBDIR HOST:PORT REQUEST.bin CONCURRENCY WARMUP_S MEASURE_S [--unary]

STUBDIR holds grpc_service_pb2{,_grpc}.py (python3 -m grpc_tools.protoc on
proto/grpc_service.proto).  REQUEST.bin is one framed ModelInferRequest (as
written by bench_body); it is parsed once and sent for every request.

Measurement matches tokperf's --duration/--warmup-duration: requests started
during the first WARMUP_S seconds are left out; the measured ones are those
started in the next MEASURE_S seconds, and the window runs from the first
measured send to the last measured request's end.  Prints one JSON line:
requests, responses, errors, duration_s, responses_per_s, requests_per_s, and
cpu_s, the CPU time the process (all threads) used in that window, so the
figure can be put per CPU-second when the machine is shared.

Run it with /usr/bin/python3 (Debian's grpcio), pinned with taskset.
"""
import asyncio
import json
import resource
import sys
import time


def cpu_s():
    """CPU time of the whole process (all of grpc's threads), in seconds."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def main():
    if len(sys.argv) < 7:
        sys.stderr.write(__doc__)
        return 2
    stubdir, target, req_path = sys.argv[1], sys.argv[2], sys.argv[3]
    conc, warm_s, meas_s = int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
    unary = "--unary" in sys.argv[7:]
    sys.path.insert(0, stubdir)
    import grpc
    import grpc_service_pb2 as pb
    import grpc_service_pb2_grpc as pbg

    raw = open(req_path, "rb").read()
    req = pb.ModelInferRequest()
    req.ParseFromString(raw[5:])  # drop the 5-byte gRPC length prefix

    stats = {"requests": 0, "responses": 0, "errors": 0, "first_sent": None, "last_done": 0,
             "cpu0": None, "cpu1": 0.0}

    def text_of(ir):
        # What the seed script does per response: find text_output, strip the
        # 4-byte BYTES length, decode, and read the final flag.
        text = ""
        for i, out in enumerate(ir.outputs):
            if out.name == "text_output" and i < len(ir.raw_output_contents):
                rawc = ir.raw_output_contents[i]
                n = int.from_bytes(rawc[:4], "little")
                text = rawc[4:4 + n].decode("utf-8", "replace")
        final = False
        if "triton_final_response" in ir.parameters:
            final = ir.parameters["triton_final_response"].bool_param
        return text, final

    async def one(stub, measured):
        if measured and stats["cpu0"] is None:
            stats["cpu0"] = cpu_s()
        sent = time.monotonic_ns()
        first = None
        n = 0
        pieces = []
        try:
            if unary:
                r = await stub.ModelInfer(req)
                t = time.monotonic_ns()
                text, _ = text_of(r)
                pieces.append(text)
                first = t
                n = 1
            else:
                async for r in stub.ModelStreamInfer(iter((req,))):
                    t = time.monotonic_ns()
                    if r.error_message:
                        raise RuntimeError(r.error_message)
                    text, final = text_of(r.infer_response)
                    if text and first is None:
                        first = t
                    pieces.append(text)
                    n += 1
            done = time.monotonic_ns()
            ok = True
        except Exception:  # noqa: BLE001 - counted, as the seed script prints and goes on
            done = time.monotonic_ns()
            ok = False
        _generated = "".join(pieces)  # the seed script keeps the text to count tokens
        if measured:
            stats["requests"] += 1
            if ok:
                stats["responses"] += n
            else:
                stats["errors"] += 1
            if stats["first_sent"] is None or sent < stats["first_sent"]:
                stats["first_sent"] = sent
            if done > stats["last_done"]:
                stats["last_done"] = done
                stats["cpu1"] = cpu_s()

    async def run():
        opts = [("grpc.max_receive_message_length", 2**31 - 1)]
        async with grpc.aio.insecure_channel(target, options=opts) as ch:
            stub = pbg.GRPCInferenceServiceStub(ch)
            t0 = time.monotonic()
            t_meas, t_end = t0 + warm_s, t0 + warm_s + meas_s

            async def slot():
                while True:
                    now = time.monotonic()
                    if now >= t_end:
                        return
                    await one(stub, now >= t_meas)

            await asyncio.gather(*(slot() for _ in range(conc)))

    asyncio.run(run())
    dur = (stats["last_done"] - (stats["first_sent"] or 0)) / 1e9 if stats["first_sent"] else 0.0
    out = {
        "concurrency": conc,
        "unary": unary,
        "requests": stats["requests"],
        "responses": stats["responses"],
        "errors": stats["errors"],
        "duration_s": dur,
        "responses_per_s": stats["responses"] / dur if dur > 0 else 0.0,
        "requests_per_s": (stats["requests"] - stats["errors"]) / dur if dur > 0 else 0.0,
        # CPU the process used from the first measured send to the last end.
        "cpu_s": stats["cpu1"] - stats["cpu0"] if stats["cpu0"] is not None else None,
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
