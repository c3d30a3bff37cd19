#!/usr/bin/python3
"""A small streaming server on aiohttp (Debian's python3-aiohttp): OpenAI
completions and chat over SSE or plain JSON, and Triton's generate /
generate_stream, over HTTP or HTTPS.  tokperf's HTTP client is tested against
it: an HTTP stack we did not write.

The prompt selects what happens (words anywhere in it):
  err500      HTTP 500 with an OpenAI error body
  err400flat  HTTP 400 with the flat {"object":"error",...} body
  errstream   two tokens, then data: {"error":{...}}, then [DONE]
  errevent    one token, then "event: error" with a JSON message, then [DONE]
  cut         two tokens, then the connection is dropped mid-body
  nodone      tokens without finish_reason and without [DONE]
  reason      (chat) reasoning_content chunks before the content
  crlf        CRLF line ends;  nospace  "data:" without the space
  split       every event written in two pieces, 5 ms apart
  comments    ": keep-alive" comment lines between events
  slow        500 ms per token
  notjson     one event whose data is not JSON
Every event's send time (time.monotonic_ns(), the same CLOCK_MONOTONIC as
tokperf's clock) is kept, with the request's headers and body, and served
as JSON at GET /_stats.  The chosen port is printed as "PORT n".
"""
import argparse
import asyncio
import json
import ssl
import sys
import time

from aiohttp import web

ARGS = None
STATS = {"requests": [], "connections": []}


def now_ns():
    return time.monotonic_ns()


def record(request, body):
    peer = request.transport.get_extra_info("peername") if request.transport else None
    conn = "%s:%s" % (peer[0], peer[1]) if peer else "?"
    if conn not in STATS["connections"]:
        STATS["connections"].append(conn)
    rec = {
        "method": request.method,
        "path": request.path,
        "headers": {k.lower(): v for k, v in request.headers.items()},
        "body": body,
        "conn": conn,
        "t_recv_ns": now_ns(),
        "events": [],
    }
    STATS["requests"].append(rec)
    return rec


def check_key(request):
    """401 when a key is required and the bearer token differs.  The message
    echoes what came, as careless servers do, so that the test can show the
    client never prints a key even when the server does."""
    if not ARGS.api_key:
        return None
    got = request.headers.get("Authorization", "")
    if got == "Bearer " + ARGS.api_key:
        return None
    return web.json_response(
        {"error": {"message": "invalid API key in '%s'" % got, "type": "AuthenticationError", "code": 401}},
        status=401)


class Stream:
    """Writes SSE events with the framing the prompt asks for."""

    def __init__(self, request, rec, prompt):
        self.request = request
        self.rec = rec
        self.eol = "\r\n" if "crlf" in prompt else "\n"
        self.prefix = "data:" if "nospace" in prompt else "data: "
        self.split = "split" in prompt
        self.comments = "comments" in prompt
        self.resp = None

    async def start(self):
        self.resp = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream; charset=utf-8",
                                                            "Cache-Control": "no-cache"})
        self.resp.enable_chunked_encoding()
        await self.resp.prepare(self.request)

    async def raw(self, text, kind, data):
        b = text.encode()
        t = now_ns()
        self.rec["events"].append({"t_ns": t, "kind": kind, "data": data})
        if self.split and len(b) > 1:
            await self.resp.write(b[: len(b) // 2])
            await asyncio.sleep(0.005)
            await self.resp.write(b[len(b) // 2:])
        else:
            await self.resp.write(b)

    async def event(self, obj, kind="chunk", event_type=None):
        data = obj if isinstance(obj, str) else json.dumps(obj, separators=(",", ":"))
        text = ""
        if self.comments:
            text += ": keep-alive" + self.eol
        if event_type:
            text += "event: " + event_type + self.eol
        text += self.prefix + data + self.eol + self.eol
        await self.raw(text, kind, data)

    async def end(self):
        await self.resp.write_eof()


def prompt_of(api, body):
    if api == "chat":
        msgs = body.get("messages") or [{}]
        return str(msgs[-1].get("content", ""))
    if api == "generate":
        return str(body.get("text_input", ""))
    p = body.get("prompt", "")
    return p if isinstance(p, str) else json.dumps(p)


def max_tokens_of(body):
    n = body.get("max_tokens")
    if n is None:
        n = (body.get("parameters") or {}).get("max_tokens")
    return int(n) if n is not None else 16


async def drop(request):
    # Close the socket without the terminating chunk.
    request.transport.close()


async def openai_handler(request, api):
    try:
        body = await request.json()
    except Exception:
        return web.json_response({"error": {"message": "body is not JSON", "code": 400}}, status=400)
    rec = record(request, body)
    denied = check_key(request)
    if denied is not None:
        return denied
    prompt = prompt_of(api, body)
    if "err500" in prompt:
        return web.json_response({"error": {"message": "injected failure", "type": "InternalServerError",
                                            "param": None, "code": 500}}, status=500)
    if "err400flat" in prompt:
        return web.json_response({"object": "error", "message": "flat injected failure", "type": "BadRequestError",
                                  "param": None, "code": 400}, status=400)
    n = max_tokens_of(body)
    delay = 0.5 if "slow" in prompt else ARGS.token_delay_ms / 1000.0
    words = ["tok%d " % i for i in range(n)]
    usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": n,
             "total_tokens": len(prompt.split()) + n, "prompt_tokens_details": {"cached_tokens": 3}}
    obj_name = "chat.completion.chunk" if api == "chat" else "text_completion"

    def chunk(text=None, finish=None, role=False, reasoning=None):
        if api == "chat":
            delta = {}
            if role:
                delta = {"role": "assistant", "content": ""}
            if text is not None:
                delta["content"] = text
            if reasoning is not None:
                delta["reasoning_content"] = reasoning
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        else:
            choice = {"index": 0, "text": text or "", "logprobs": None, "finish_reason": finish,
                      "stop_reason": None}
        return {"id": "x-1", "object": obj_name, "created": 1700000000, "model": body.get("model"),
                "choices": [choice]}

    if not body.get("stream"):
        await asyncio.sleep(delay * n)
        text = "".join(words)
        if api == "chat":
            choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"}
        else:
            choice = {"index": 0, "text": text, "finish_reason": "length"}
        t = now_ns()
        rec["events"].append({"t_ns": t, "kind": "reply", "data": text})
        return web.json_response({"id": "x-1", "object": "chat.completion" if api == "chat" else "text_completion",
                                  "model": body.get("model"), "choices": [choice], "usage": usage})

    s = Stream(request, rec, prompt)
    await s.start()
    if api == "chat":
        # vLLM's role-only first chunk, well before the first token.
        await s.event(chunk(role=True), "role")
        await asyncio.sleep(ARGS.first_delay_ms / 1000.0)
        if "reason" in prompt:
            for i in range(2):
                await s.event(chunk(reasoning="think%d " % i), "reasoning")
                await asyncio.sleep(delay)
    if "notjson" in prompt:
        await s.event("this is not json", "bad")
        await s.end()
        return s.resp
    for i, w in enumerate(words):
        if "errstream" in prompt and i == 2:
            await s.event({"error": {"message": "injected stream error", "type": "InternalServerError",
                                     "code": 500}}, "error")
            await s.event("[DONE]", "done")
            await s.end()
            return s.resp
        if "errevent" in prompt and i == 1:
            await s.event({"message": "event error"}, "error", event_type="error")
            await s.event("[DONE]", "done")
            await s.end()
            return s.resp
        if "cut" in prompt and i == 2:
            await drop(request)
            return s.resp
        last = i == n - 1 and "nodone" not in prompt
        await s.event(chunk(text=w, finish="length" if last else None), "token")
        if not last:
            await asyncio.sleep(delay)
    if "nodone" in prompt:
        await s.end()
        return s.resp
    so = body.get("stream_options") or {}
    if so.get("include_usage"):
        await s.event({"id": "x-1", "object": obj_name, "model": body.get("model"), "choices": [],
                       "usage": usage}, "usage")
    await s.event("[DONE]", "done")
    await s.end()
    return s.resp


async def quietly(coro):
    # A client that gives up (timeouts, cancels) closes the connection under
    # a stream being written: that is part of the test, not an error.
    try:
        return await coro
    except (ConnectionResetError, ConnectionError, asyncio.CancelledError):
        return web.Response(status=499)


async def completions(request):
    return await quietly(openai_handler(request, "completions"))


async def chat(request):
    return await quietly(openai_handler(request, "chat"))


async def models(request):
    record(request, None)
    denied = check_key(request)
    if denied is not None:
        return denied
    if ARGS.no_models:
        return web.json_response({"detail": "Not Found"}, status=404)
    return web.json_response({"object": "list", "data": [{"id": m, "object": "model"} for m in ARGS.models]})


async def health_ready(request):
    record(request, None)
    return web.Response(status=200)


def known_model(request):
    return request.match_info["model"] in ARGS.models


async def model_ready(request):
    record(request, None)
    if not known_model(request):
        return web.json_response({"error": "Request for unknown model: '%s' is not found"
                                  % request.match_info["model"]}, status=400)
    return web.Response(status=200)


async def model_meta(request):
    record(request, None)
    if not known_model(request):
        return web.json_response({"error": "unknown model"}, status=400)
    inputs = [{"name": n, "datatype": d, "shape": [1]} for n, d in
              (("text_input", "BYTES"), ("max_tokens", "INT32"), ("stream", "BOOL"), ("min_tokens", "INT32"))]
    return web.json_response({"name": request.match_info["model"], "versions": ["1"], "platform": "ensemble",
                              "inputs": inputs, "outputs": [{"name": "text_output", "datatype": "BYTES",
                                                             "shape": [-1]}]})


async def generate(request, streaming):
    try:
        body = await request.json()
    except Exception:
        return web.json_response({"error": "body is not JSON"}, status=400)
    rec = record(request, body)
    if not known_model(request):
        return web.json_response({"error": "Request for unknown model"}, status=400)
    prompt = prompt_of("generate", body)
    if "err500" in prompt:
        return web.json_response({"error": "injected failure"}, status=500)
    n = max_tokens_of(body)
    delay = ARGS.token_delay_ms / 1000.0
    model = request.match_info["model"]
    words = ["tok%d " % i for i in range(n)]
    if not streaming:
        await asyncio.sleep(delay * n)
        text = "".join(words)
        rec["events"].append({"t_ns": now_ns(), "kind": "reply", "data": text})
        return web.json_response({"model_name": model, "model_version": "1", "text_output": text})
    s = Stream(request, rec, prompt)
    await s.start()
    for i, w in enumerate(words):
        if "errstream" in prompt and i == 2:
            await s.event({"error": "Error generating stream: injected"}, "error")
            break
        await s.event({"model_name": model, "model_version": "1", "text_output": w}, "token")
        if i < n - 1:
            await asyncio.sleep(delay)
    # No [DONE]: the stream ends with the chunked body.
    await s.end()
    return s.resp


async def generate_stream(request):
    return await quietly(generate(request, True))


async def generate_once(request):
    return await quietly(generate(request, False))


async def stats(request):
    return web.json_response(STATS)


async def main():
    app = web.Application()
    app.router.add_post("/v1/completions", completions)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_post("/custom/path", chat)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/v2/health/ready", health_ready)
    app.router.add_get("/v2/models/{model}/ready", model_ready)
    app.router.add_get("/v2/models/{model}", model_meta)
    app.router.add_post("/v2/models/{model}/generate_stream", generate_stream)
    app.router.add_post("/v2/models/{model}/generate", generate_once)
    app.router.add_get("/_stats", stats)
    ctx = None
    if ARGS.tls_cert:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(ARGS.tls_cert, ARGS.tls_key)
        ctx.set_alpn_protocols(["http/1.1"])
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", ARGS.port, ssl_context=ctx)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    print("PORT %d" % port, flush=True)
    # Ends when the test closes our stdin (or kills us).
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)
    await runner.cleanup()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--api-key")
    ap.add_argument("--token-delay-ms", type=float, default=20)
    ap.add_argument("--first-delay-ms", type=float, default=60)
    ap.add_argument("--models", default="m1,m2")
    ap.add_argument("--no-models", action="store_true")
    ARGS = ap.parse_args()
    ARGS.models = ARGS.models.split(",")
    asyncio.run(main())
