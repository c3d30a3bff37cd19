#!/usr/bin/env python3
"""Command lines from GenAI-Perf's, perf_analyzer's and SGLang's own docs, run
by tokperf against the mock as written: only the program is swapped
(`genai-perf profile` and `perf_analyzer` for `tokperf profile`, `python3 -m
sglang.bench_serving` for `tokperf sglang-bench`) and the server's address
pointed at a mock, which answers to the docs' model names
(tokperf mock --served-model-name).  Each line either runs (exit 0, every
request succeeded) or is refused with a message that names what to write
instead; none is silently misread.  The files are cited at the commits the
parity lists name (test/parity/*.flags): perf_analyzer's repository (GenAI-Perf
lives in its genai-perf/ folder) at 263c5f6e0c7a6c15472a54409174981f67930cfe,
its LLM guide before it was removed (docs/llm.md at dda189f3), SGLang's
docs/developer_guide/bench_serving.md at 0229689b6730cccb5b7f0d4eeef06d7de423b6e1
and the usage lines of python/sglang/bench_serving.py.
Prints TAP."""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tp_check import SCALE, check, done, free_port, hf_cache_put, skip, wait_port  # noqa: E402

TOKPERF = sys.argv[1]
WORDS = os.environ.get("TP_WORDS_MODEL")
tmp = tempfile.mkdtemp(prefix="tp_doc_lines_")

RUN, REFUSED, START = "run", "refused", "start"
# (cite, the line as the docs write it, outcome, a fragment of the message (or
#  a tuple of them: a line with two refused parts says whichever the parser
#  meets first), the mock's served names: NAME answers as vllm_model,
#  NAME=MODEL as MODEL)
GP = [
    ("genai-perf/README.md:157", "genai-perf profile -m gpt2 --backend tensorrtllm --streaming", RUN, None,
     "gpt2=ensemble"),
    ("genai-perf/README.md:280",
     "genai-perf profile -m gpt2 --backend tensorrtllm --streaming --concurrency 1 --generate-plots", RUN,
     "--generate-plots is accepted for compatibility and has no effect", "gpt2=ensemble"),
    ("genai-perf/README.md:423",
     "genai-perf profile --tokenizer deepseek-ai/DeepSeek-R1-Distill-Llama-8B -m "
     "deepseek-ai/DeepSeek-R1-Distill-Llama-8B --endpoint-type chat --url http://localhost:8000 --streaming "
     "--input-file payload:sin_b512_t600_rr5.0-20.0-150.0_io3000150-3000150-0.2-0.8-10.jsonl",
     RUN, "is read as --schedule", "deepseek-ai/DeepSeek-R1-Distill-Llama-8B"),
    ("genai-perf/docs/tutorial.md:56",
     "genai-perf profile -m gpt2 --backend tensorrtllm --synthetic-input-tokens-mean 200 "
     "--synthetic-input-tokens-stddev 0 --output-tokens-mean 100 --output-tokens-stddev 0 "
     "--output-tokens-mean-deterministic --streaming --request-count 50 --warmup-request-count 10", RUN, None,
     "gpt2=ensemble"),
    ("genai-perf/docs/tutorial.md:96",
     "genai-perf profile -m gpt2 --backend vllm --synthetic-input-tokens-mean 200 --synthetic-input-tokens-stddev 0 "
     "--output-tokens-mean 100 --output-tokens-stddev 0 --output-tokens-mean-deterministic --streaming "
     "--request-count 50 --warmup-request-count 10", RUN, None, "gpt2=vllm_model"),
    ("genai-perf/docs/tutorial.md:139",
     "genai-perf profile -m HuggingFaceH4/zephyr-7b-beta --endpoint-type chat --synthetic-input-tokens-mean 200 "
     "--synthetic-input-tokens-stddev 0 --output-tokens-mean 100 --output-tokens-stddev 0 --streaming "
     "--request-count 50 --warmup-request-count 10", RUN, None, "HuggingFaceH4/zephyr-7b-beta"),
    ("genai-perf/docs/tutorial.md:181",
     "genai-perf profile -m gpt2 --endpoint-type completions --synthetic-input-tokens-mean 200 "
     "--synthetic-input-tokens-stddev 0 --output-tokens-mean 100 --output-tokens-stddev 0 --request-count 50 "
     "--warmup-request-count 10", RUN, None, "gpt2"),
    ("genai-perf/docs/goodput.md:63",
     "genai-perf profile -m HuggingFaceH4/zephyr-7b-beta --endpoint-type chat --streaming --request-count 10 "
     "--goodput time_to_first_token:75 inter_token_latency:19.75", RUN, None, "HuggingFaceH4/zephyr-7b-beta"),
    ("genai-perf/docs/goodput.md:120",
     "genai-perf profile -m intfloat/e5-mistral-7b-instruct --endpoint-type embeddings --batch-size-text 2 "
     "--input-file embeddings.jsonl --measurement-interval 1000 --goodput request_latency:22.5",
     REFUSED, ("chat, completions", "one prompt per request"), "intfloat/e5-mistral-7b-instruct"),
    ("genai-perf/docs/huggingface_tgi.md:53",
     "genai-perf profile -m llava-hf/llava-v1.6-mistral-7b-hf --endpoint-type huggingface_generate --url "
     "localhost:8080 --batch-size-image 1 --image-width-mean 100 --image-height-mean 100 "
     "--synthetic-input-tokens-mean 10", REFUSED, ("chat, completions", "text prompts only"),
     "llava-hf/llava-v1.6-mistral-7b-hf"),
    ("genai-perf/docs/lora.md:36", "genai-perf profile -m lora_adapter1 lora_adapter2 lora_adapter3 --tokenizer "
     "model_name", REFUSED, "-m names one model per run", "lora_adapter1"),
    ("genai-perf/docs/lora.md:100",
     "genai-perf profile -m adapter1 adapter2 --tokenizer meta-llama/Llama-2-7b-hf --endpoint-type completions "
     "--model-selection-strategy round_robin", REFUSED, "-m names one model per run", "adapter1"),
    ("genai-perf/docs/multi_turn.md:62",
     "genai-perf profile -m TinyLlama/TinyLlama-1.1B-Chat-v1.0 --endpoint-type chat --num-sessions 10 "
     "--session-concurrency 5 --session-turns-mean 2 --session-turns-stddev 0 --session-turn-delay-mean 1000 "
     "--session-turn-delay-stddev 5 --synthetic-input-tokens-mean 50 --output-tokens-mean 50 "
     "--num-prefix-prompts 3 --prefix-prompt-length 15", REFUSED, "--input-file conv.jsonl",
     "TinyLlama/TinyLlama-1.1B-Chat-v1.0"),
    ("genai-perf/docs/multi_turn.md:137",
     "genai-perf profile -m TinyLlama/TinyLlama-1.1B-Chat-v1.0 --endpoint-type chat --input-file "
     "payload:inputs.jsonl --session-concurrency 2 --session-delay-ratio 0.5", REFUSED, "--input-file conv.jsonl",
     "TinyLlama/TinyLlama-1.1B-Chat-v1.0"),
    ("genai-perf/docs/dynamo.md:81",
     "genai-perf profile -m deepseek-ai/DeepSeek-R1-Distill-Llama-8B --endpoint-type chat "
     "--synthetic-input-tokens-mean 128 --synthetic-input-tokens-stddev 0 --output-tokens-mean 100 "
     "--output-tokens-stddev 0 --url localhost:8080 --streaming --request-count 10 --warmup-request-count 2", RUN,
     None, "deepseek-ai/DeepSeek-R1-Distill-Llama-8B"),
    ("genai-perf/docs/dynamo.md:134",
     "genai-perf profile -m deepseek-ai/DeepSeek-R1-Distill-Llama-8B --endpoint-type chat "
     "--synthetic-input-tokens-mean 128 --synthetic-input-tokens-stddev 0 --output-tokens-mean 20 "
     "--output-tokens-stddev 0 --streaming --request-count 10 --warmup-request-count 2", RUN, None,
     "deepseek-ai/DeepSeek-R1-Distill-Llama-8B"),
    ("genai-perf/docs/gpu_telemetry.md:183",
     "genai-perf profile -m gpt2 --endpoint-type chat --server-metrics-urls http://localhost:9400/metrics --verbose",
     RUN, "--verbose is accepted for compatibility and has no effect", "gpt2"),
    ("genai-perf/docs/embeddings.md:45",
     "genai-perf profile -m intfloat/e5-mistral-7b-instruct --endpoint-type embeddings --batch-size-text 2",
     REFUSED, ("chat, completions", "one prompt per request"), "intfloat/e5-mistral-7b-instruct"),
    ("genai-perf/docs/rankings.md:96",
     "genai-perf profile -m BAAI/bge-reranker-base --endpoint-type rankings --endpoint rerank --input-file "
     "rankings_jsonl/ -u localhost:8080 --extra-inputs rankings:tei", REFUSED, "chat, completions",
     "BAAI/bge-reranker-base"),
    ("genai-perf/docs/multi_modal.md:51",
     "genai-perf profile -m llava-hf/llava-v1.6-mistral-7b-hf --endpoint-type multimodal --image-width-mean 50 "
     "--image-height-mean 50 --synthetic-input-tokens-mean 10 --output-tokens-mean 10 --streaming", REFUSED,
     ("chat, completions", "text prompts only"), "llava-hf/llava-v1.6-mistral-7b-hf"),
]
PA = [
    ("README.md:126", "perf_analyzer -m simple", START, "model 'simple' is not ready", ""),
    ("docs/quick_start.md:76", "perf_analyzer -m simple", START, "model 'simple' is not ready", ""),
    ("docs/benchmarking.md:69",
     "perf_analyzer -m facebook/opt-125m --input-data=input_data.json --service-kind=openai "
     "--endpoint=v1/chat/completions --async", RUN, "--async is accepted for compatibility and has no effect",
     "facebook/opt-125m"),
    ("docs/benchmarking.md:177",
     "perf_analyzer -m facebook/opt-125m --session-concurrency=2 --input-data=input_data.json "
     "--profile-export-file=profile_export.json --service-kind=openai --endpoint=v1/chat/completions --async",
     REFUSED, "--input-file conv.jsonl", "facebook/opt-125m"),
    ("docs/benchmarking.md:244",
     "perf_analyzer -m my_model --service-kind=triton_c_api --triton-server-directory=/opt/tritonserver "
     "--model-repository=/my/model/repository", REFUSED, "expected triton, openai-completions, openai", ""),
    ("docs/benchmarking.md:402",
     "perf_analyzer --service-kind=dynamic_grpc -u=localhost:8001 --input-data=inputs.json "
     "--grpc-method=v1.Simple/Echo", REFUSED, "expected triton, openai-completions, openai", ""),
    ("docs/benchmarking.md:438",
     "perf_analyzer -m resnet50 --service-kind tfserving -i grpc -b 1 -p 5000 -u localhost:8500", REFUSED,
     "expected triton, openai-completions, openai", ""),
    ("docs/benchmarking.md:512",
     "perf_analyzer -m resnet50 --service-kind torchserve -i http -u localhost:8080 -b 1 -p 5000 --input-data "
     "data.json", REFUSED, "expected triton, openai-completions, openai", ""),
    ("docs/inference_load_modes.md:63",
     "perf_analyzer -m <model_name> -i grpc --async --streaming --profile-export-file profile.json "
     "--periodic-concurrency-range 10:100:30 --request-period 10 --request-parameter max_tokens:256:int",
     REFUSED, "--concurrency-range START:END:STEP", ""),
    ("docs/input_data.md:64", "perf_analyzer -m mymodel -b 4 --shape IMAGE:3,224,224", REFUSED,
     "one prompt per request", ""),
    ("docs/measurements_metrics.md:100", "perf_analyzer -m inception_graphdef --concurrency-range 1:4 -f perf.csv",
     START, "model 'inception_graphdef' is not ready", ""),
    ("docs/measurements_metrics.md:158",
     "perf_analyzer -m resnet50_libtorch --collect-metrics -f output.csv --verbose-csv", START,
     "model 'resnet50_libtorch' is not ready", ""),
    ("docs/llm.md:102 (dda189f3)",
     "perf_analyzer -m vllm -i grpc --async --streaming --input-data=prompts.json "
     "--profile-export-file=profile_export.json --measurement-mode=count_windows --measurement-request-count=10 "
     "--stability-percentage=999", RUN, None, ""),
]
SG = [
    ("bench_serving.md, Quick start, sglang",
     "python3 -m sglang.bench_serving --backend sglang --host 127.0.0.1 --port 30000 --num-prompts 1000 --model "
     "meta-llama/Llama-3.1-8B-Instruct", REFUSED, "needs --dataset-path FILE", "meta-llama/Llama-3.1-8B-Instruct"),
    ("bench_serving.md, Quick start, OpenAI-compatible",
     "python3 -m sglang.bench_serving --backend vllm --base-url http://127.0.0.1:8000 --num-prompts 1000 --model "
     "meta-llama/Llama-3.1-8B-Instruct", REFUSED, "needs --dataset-path FILE", "meta-llama/Llama-3.1-8B-Instruct"),
    ("bench_serving.md, Examples 1 (image)",
     "python -m sglang.bench_serving --backend sglang-oai-chat --dataset-name image --num-prompts 500 --image-count 3 "
     "--image-resolution 720p --random-input-len 512 --random-output-len 512", REFUSED, "text prompts only", ""),
    ("bench_serving.md, Examples 2 (random)",
     "python3 -m sglang.bench_serving --backend sglang --dataset-name random --num-prompts 3000 --random-input 1024 "
     "--random-output 1024 --random-range-ratio 0.5", RUN, "not SGLang's native /generate", ""),
    ("bench_serving.md, End-to-end 1) sglang /generate",
     "python3 -m sglang.bench_serving --backend sglang --host 127.0.0.1 --port 30000 --model "
     "meta-llama/Llama-3.1-8B-Instruct --dataset-name random --random-input-len 1024 --random-output-len 1024 "
     "--random-range-ratio 0.5 --num-prompts 2000 --request-rate 100 --max-concurrency 512 --output-file "
     "sglang_random.jsonl --output-details", RUN, "not SGLang's native /generate",
     "meta-llama/Llama-3.1-8B-Instruct"),
    ("bench_serving.md, End-to-end 2) Completions",
     "python3 -m sglang.bench_serving --backend vllm --base-url http://127.0.0.1:8000 --model "
     "meta-llama/Llama-3.1-8B-Instruct --dataset-name sharegpt --num-prompts 1000 --sharegpt-output-len 256",
     REFUSED, "needs --dataset-path FILE", "meta-llama/Llama-3.1-8B-Instruct"),
    ("bench_serving.md, End-to-end 3) Chat Completions",
     "python3 -m sglang.bench_serving --backend vllm-chat --base-url http://127.0.0.1:8000 --model "
     "meta-llama/Llama-3.1-8B-Instruct --dataset-name random --num-prompts 500 --apply-chat-template", RUN,
     "--apply-chat-template is accepted for compatibility and has no effect", "meta-llama/Llama-3.1-8B-Instruct"),
    ("bench_serving.md, End-to-end 4) Images",
     "python3 -m sglang.bench_serving --backend sglang --host 127.0.0.1 --port 30000 --model your-vlm-model "
     "--dataset-name image --image-count 2 --image-resolution 720p --random-input-len 128 --random-output-len 256 "
     "--num-prompts 200 --apply-chat-template", REFUSED, "text prompts only", "your-vlm-model"),
    ("bench_serving.md, End-to-end 4b) 1080p PNG",
     "python3 -m sglang.bench_serving --backend sglang --host 127.0.0.1 --port 30000 --model your-vlm-model "
     "--dataset-name image --image-count 1 --image-resolution 1080p --image-format png --image-content blank "
     "--random-input-len 64 --random-output-len 128 --num-prompts 100 --apply-chat-template", REFUSED,
     "text prompts only", "your-vlm-model"),
    ("bench_serving.md, End-to-end 5) shared prefix",
     "python3 -m sglang.bench_serving --backend sglang --host 127.0.0.1 --port 30000 --model "
     "meta-llama/Llama-3.1-8B-Instruct --dataset-name generated-shared-prefix --gsp-num-groups 64 "
     "--gsp-prompts-per-group 16 --gsp-system-prompt-len 2048 --gsp-question-len 128 --gsp-output-len 256 "
     "--num-prompts 1024", REFUSED, "--prefix-tokens N --num-prefixes K", "meta-llama/Llama-3.1-8B-Instruct"),
    ("bench_serving.md, End-to-end 6) tokenized prompts",
     "python3 -m sglang.bench_serving --backend sglang --host 127.0.0.1 --port 30000 --model "
     "meta-llama/Llama-3.1-8B-Instruct --dataset-name random --tokenize-prompt --random-input-len 2048 "
     "--random-output-len 256 --random-range-ratio 0.2", REFUSED, "--service-kind sglang-grpc",
     "meta-llama/Llama-3.1-8B-Instruct"),
    ("bench_serving.md, End-to-end 7) profiling, cache flush",
     "python3 -m sglang.bench_serving --backend sglang --host 127.0.0.1 --port 30000 --model "
     "meta-llama/Llama-3.1-8B-Instruct --profile --flush-cache", REFUSED, "the server's profiler",
     "meta-llama/Llama-3.1-8B-Instruct"),
    ("bench_serving.md, End-to-end 8) TensorRT-LLM",
     "python3 -m sglang.bench_serving --backend trt --base-url http://127.0.0.1:8000 --model your-trt-llm-model "
     "--dataset-name random --num-prompts 100 --disable-ignore-eos", REFUSED, "tokperf profile -m ensemble -i http",
     "your-trt-llm-model"),
    ("bench_serving.md, End-to-end 9) mooncake",
     "python3 -m sglang.bench_serving --backend sglang --host 127.0.0.1 --port 30000 --model model-name "
     "--dataset-name mooncake-conversation --mooncake-slowdown-factor 1.0 --mooncake-num-rounds 1000 "
     "--use-trace-timestamps true --random-output-len 256", REFUSED, "expected sharegpt, random", "model-name"),
    ("bench_serving.py:8 (usage, 0033168f)", "python3 -m sglang.bench_serving --backend sglang --num-prompt 10",
     REFUSED, "needs --dataset-path FILE", ""),
    ("bench_serving.py:10 (usage, 0033168f)",
     "python3 -m sglang.bench_serving --backend sglang --dataset-name random --num-prompts 3000 --random-input 1024 "
     "--random-output 1024 --random-range-ratio 0.5", RUN, "not SGLang's native /generate", ""),
]

# The files the lines read, in the working directory, as the docs write them.
with open(os.path.join(tmp, "input_data.json"), "w") as f:
    json.dump({"data": [{"payload": [{"model": "facebook/opt-125m", "messages": [
        {"role": "user", "content": "Who wrote the play Romeo and Juliet?"}], "max_tokens": 32}]}]}, f)
with open(os.path.join(tmp, "sin_b512_t600_rr5.0-20.0-150.0_io3000150-3000150-0.2-0.8-10.jsonl"), "w") as f:
    for i in range(4):  # GenAI-Perf's payload trace: times in ms, lengths in tokens
        f.write(json.dumps({"timestamp": 25 * i, "input_length": 12, "output_length": 2}) + "\n")
with open(os.path.join(tmp, "prompts.json"), "w") as f:  # the LLM guide's: "PROMPT" and "STREAM" inputs
    json.dump({"data": [{"PROMPT": ["Hello, my name is"], "STREAM": [True]}]}, f)

# The tokenizers the lines name (GenAI-Perf's default among them) in a
# Hugging Face cache laid out as the hub lays it out, as a user who ran the
# docs has them: the words model stands in for each.
env = dict(os.environ)
if WORDS:
    for name in ["hf-internal-testing/llama-tokenizer", "deepseek-ai/DeepSeek-R1-Distill-Llama-8B"]:
        hf_cache_put(os.path.join(tmp, "hub"), name, WORDS)
    env["HF_HUB_CACHE"] = os.path.join(tmp, "hub")
    env.pop("HF_HOME", None)

mocks = {}


def mock_for(served):
    """A mock answering to the served names: (gRPC port, HTTP port)."""
    if served not in mocks:
        g, h = free_port(), free_port()
        args = [TOKPERF, "mock", "-q", "--host", "127.0.0.1", "--grpc-port", str(g), "--http-port", str(h),
                "--output-tokens", "2", "--ttft-ms", "1", "--itl-ms", "1"]
        if served:
            args += ["--served-model-name", served]
        p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        up = wait_port(g, 10 * SCALE) and wait_port(h, 10 * SCALE)
        check(up, "a mock answering to %s listens" % (served or "its own names"))
        mocks[served] = (p, g, h)
    return mocks[served][1], mocks[served][2]


ADDR = re.compile(r"^(https?://)?(localhost|127\.0\.0\.1|0\.0\.0\.0):\d+")


def point(words, addr):
    """The words with every server address (host:port, with or without a
    scheme) pointed at addr; the path after it is kept."""
    out = []
    for w in words:
        flag, eq, val = w.partition("=") if w.startswith("-") and "=" in w else ("", "", w)
        m = ADDR.match(val)
        if m:
            val = (m.group(1) or "") + addr + val[m.end():]
        out.append(flag + eq + val if eq else val)
    return out


def has(words, *flags):
    return any(w in flags or w.split("=", 1)[0] in flags for w in words)


def tokperf_line(tool, line, served):
    words = shlex.split(line)
    g, h = mock_for(served)
    if tool == "sglang":
        words = ["sglang-bench"] + words[3:]
        words = point(words, "127.0.0.1:%d" % h)
        for i, w in enumerate(words[:-1]):
            if w == "--port":
                words[i + 1] = str(h)
        if not has(words, "--host", "--port", "--base-url"):
            words += ["--base-url", "http://127.0.0.1:%d" % h]
        return words
    words = ["profile"] + (words[2:] if tool == "genai-perf" else words[1:])
    openai = (has(words, "--endpoint-type") and not re.search(r"--endpoint-type[ =]generate", line)) or \
        re.search(r"--service-kind[ =]openai", line) is not None
    http = openai or re.search(r"(^| )-i[ =]?http", line) is not None
    addr = "127.0.0.1:%d" % (h if http else g)
    words = point(words, addr)
    # -u=HOST:PORT and --url=HOST:PORT are handled by point(); -u HOST:PORT too.
    if not has(words, "-u", "--url"):
        words += ["-u", addr]
    if has(words, "--server-metrics-url", "--server-metrics-urls"):
        words = [w.replace("127.0.0.1:%d" % g, "127.0.0.1:%d" % h) for w in words]
    return words


def run_lines(tool, lines):
    ran = refused = 0
    for cite, line, outcome, fragment, served in lines:
        words = tokperf_line(tool, line, served)
        if WORDS is None and ("tokens-mean" in line or "--isl" in line or "payload:" in line):
            skip("%s %s" % (tool, cite), "no TP_WORDS_MODEL tokenizer")
            continue
        p = subprocess.run([TOKPERF] + words, capture_output=True, text=True, timeout=300 * SCALE, cwd=tmp, env=env)
        out, err = p.stdout, p.stderr
        shown = "tokperf " + " ".join(shlex.quote(w) for w in words)
        if outcome == RUN:
            got = [int(x) for x in re.findall(r"^Requests: \d+ measured, (\d+) succeeded, 0 failed", out, re.M)]
            got += [int(x) for x in re.findall(r"^Successful requests:\s+(\d+)", out, re.M)]
            failed = re.findall(r"^Failed requests:\s+([1-9]\d*)", out, re.M)
            ok = p.returncode == 0 and got and all(n > 0 for n in got) and not failed
            if fragment:
                ok = ok and fragment in err
            check(ok, "%s %s runs against the mock%s" % (tool, cite, ", saying '%s'" % fragment if fragment else ""),
                  "%s\nrc %d\n%s%s" % (shown, p.returncode, err[-1500:], out[-400:]))
            ran += 1
        else:
            code = 2 if outcome == REFUSED else 3
            frags = fragment if isinstance(fragment, tuple) else (fragment,)
            check(p.returncode == code and any(f in err for f in frags),
                  "%s %s %s (exit %d), saying '%s'" % (tool, cite, "refused" if code == 2 else "stops at the start",
                                                        code, "' or '".join(frags)),
                  "%s\nrc %d\n%s" % (shown, p.returncode, err[-1500:]))
            refused += 1
    print("# %s: %d lines run, %d refused with what to write instead" % (tool, ran, refused))


try:
    run_lines("genai-perf", GP)
    run_lines("perf_analyzer", PA)
    run_lines("sglang", SG)
finally:
    for p, _, _ in mocks.values():
        p.terminate()
        p.wait(timeout=10)
done()
