#!/usr/bin/env python3
"""vLLM's documented `vllm bench serve` command lines run by `tokperf
vllm-bench` (docs/vllm-bench.md): every such line of vLLM's benchmark CLI
guide (docs/benchmarking/cli.md in github.com/vllm-project/vllm at commit
9ba5e24cf917f98c4d60f9ede0b837f71dfa12b0), continuation lines joined, with
`vllm bench serve` swapped for `tokperf vllm-bench`, the server's address
pointed at a mock serving the line's model, and the guide's placeholder
paths at small files of the same formats.  Each line either runs and
completes the requests it asks for, or is refused (exit 2) with a message
naming what to write instead; none is silently misread.  Prints TAP."""
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tp_check import SCALE, check, done, hf_cache_put  # noqa: E402

TOKPERF = sys.argv[1]
WORDS = os.environ.get("TP_WORDS_MODEL")
tmp = tempfile.mkdtemp(prefix="tp_vllm_docs_")
SRC = "docs/benchmarking/cli.md"

# (section of the guide, the line as published, expected: a count of
# completed requests, or ("refused", a fragment of the message)).
LINES = [
    ("Online Benchmark", "vllm bench serve --backend vllm --model NousResearch/Hermes-3-Llama-3.1-8B "
     "--endpoint /v1/completions --dataset-name sharegpt "
     "--dataset-path <your data path>/ShareGPT_V3_unfiltered_cleaned_split.json --num-prompts 10", 10),
    ("Custom Dataset", "vllm bench serve --port 9001 --save-result --save-detailed --backend vllm "
     "--model meta-llama/Llama-3.1-8B-Instruct --endpoint /v1/completions --dataset-name custom "
     "--dataset-path <path-to-your-data-jsonl> --custom-skip-chat-template --num-prompts 80 --max-concurrency 1 "
     "--temperature=0.3 --top-p=0.75 --result-dir \"./log/\"", 80),
    ("Custom multimodal dataset", "vllm bench serve --save-result --save-detailed --backend openai-chat "
     "--model Qwen/Qwen2-VL-7B-Instruct --endpoint /v1/chat/completions --dataset-name custom_mm "
     "--dataset-path <path-to-your-mm-data-jsonl> --allowed-local-media-path /path/to/image/folder",
     ("refused", "text prompts only")),
    ("VisionArena Benchmark", "vllm bench serve --backend openai-chat --model Qwen/Qwen2-VL-7B-Instruct "
     "--endpoint /v1/chat/completions --dataset-name hf --dataset-path lmarena-ai/VisionArena-Chat "
     "--hf-split train --num-prompts 1000", ("refused", "--dataset-name custom")),
    ("InstructCoder Benchmark", "vllm bench serve --model meta-llama/Meta-Llama-3-8B-Instruct --dataset-name hf "
     "--dataset-path likaixin/InstructCoder --num-prompts 2048", ("refused", "--dataset-name custom")),
    ("Spec Bench Benchmark", "vllm bench serve --model meta-llama/Meta-Llama-3-8B-Instruct "
     "--dataset-name spec_bench --dataset-path \"<YOUR_DOWNLOADED_PATH>/data/spec_bench/question.jsonl\" "
     "--num-prompts -1", ("refused", "--dataset-name custom")),
    ("Other HuggingFaceDataset Examples", "vllm bench serve --backend openai-chat --model Qwen/Qwen2-VL-7B-Instruct "
     "--endpoint /v1/chat/completions --dataset-name hf --dataset-path lmms-lab/LLaVA-OneVision-Data "
     "--hf-split train --hf-subset \"chart2text(cauldron)\" --num-prompts 10", ("refused", "--dataset-name custom")),
    ("Other HuggingFaceDataset Examples", "vllm bench serve --backend openai-chat --model Qwen/Qwen2-VL-7B-Instruct "
     "--endpoint /v1/chat/completions --dataset-name hf --dataset-path Aeala/ShareGPT_Vicuna_unfiltered "
     "--hf-split train --num-prompts 10", ("refused", "--dataset-name custom")),
    ("Other HuggingFaceDataset Examples", "vllm bench serve --model Qwen/QwQ-32B --dataset-name hf "
     "--dataset-path AI-MO/aimo-validation-aime --num-prompts 10 --seed 42", ("refused", "--dataset-name custom")),
    ("Other HuggingFaceDataset Examples", "vllm bench serve --model Qwen/QwQ-32B --dataset-name hf "
     "--dataset-path philschmid/mt-bench --num-prompts 80", ("refused", "--dataset-name custom")),
    ("Other HuggingFaceDataset Examples", "vllm bench serve --model Qwen/QwQ-32B --dataset-name hf "
     "--dataset-path vdaita/edit_5k_char --num-prompts 90 --blazedit-min-distance 0.01 "
     "--blazedit-max-distance 0.99", ("refused", "--dataset-name custom")),
    ("Running With Sampling Parameters", "vllm bench serve --backend vllm --model NousResearch/Hermes-3-Llama-3.1-8B "
     "--endpoint /v1/completions --dataset-name sharegpt "
     "--dataset-path <your data path>/ShareGPT_V3_unfiltered_cleaned_split.json --top-k 10 --top-p 0.9 "
     "--temperature 0.5 --num-prompts 10", 10),
    ("Prefix Repetition Dataset", "vllm bench serve --backend openai --model meta-llama/Llama-2-7b-chat-hf "
     "--dataset-name prefix_repetition --num-prompts 100 --prefix-repetition-prefix-len 512 "
     "--prefix-repetition-suffix-len 128 --prefix-repetition-num-prefixes 5 --prefix-repetition-output-len 128",
     100),
    ("Images (ShareGPT4V)", "vllm bench serve --backend openai-chat --model Qwen/Qwen2.5-VL-7B-Instruct "
     "--dataset-name sharegpt --dataset-path /path/to/ShareGPT4V/sharegpt4v_instruct_gpt4-vision_cap100k.json "
     "--num-prompts 100 --save-result --result-dir ~/vllm_benchmark_results --save-detailed "
     "--endpoint /v1/chat/completions", 100),
    ("Videos (ShareGPT4Video)", "vllm bench serve --backend openai-chat --model Qwen/Qwen2.5-VL-7B-Instruct "
     "--dataset-name sharegpt "
     "--dataset-path /path/to/ShareGPT4Video/llava_v1_5_mix665k_with_video_chatgpt72k_share4video28k.json "
     "--num-prompts 100 --save-result --result-dir ~/vllm_benchmark_results --save-detailed "
     "--endpoint /v1/chat/completions", 100),
    ("Synthetic Random Images (random-mm)", "vllm bench serve --backend openai-chat "
     "--model Qwen/Qwen2.5-VL-3B-Instruct --endpoint /v1/chat/completions --dataset-name random-mm "
     "--num-prompts 100 --max-concurrency 10 --random-prefix-len 25 --random-input-len 300 "
     "--random-output-len 40 --random-range-ratio 0.2 --random-mm-base-items-per-request 2 "
     "--random-mm-limit-mm-per-prompt '{\"image\": 3, \"video\": 0}' "
     "--random-mm-bucket-config '{(224, 224, 1): 1.0}' --request-rate inf --ignore-eos --seed 42",
     ("refused", "text prompts only")),
]

# The guide's data files, small and of the same formats: ShareGPT's
# conversations (ShareGPT4V's and ShareGPT4Video's carry an image or video
# name beside them), custom JSONL, Spec Bench's questions.
def conversations(n, extra):
    return [dict({"id": "c%d" % i, "conversations": [
        {"from": "human", "value": "Question %d: tell me about the number %d and its neighbours." % (i, i)},
        {"from": "gpt", "value": "The number %d sits between %d and %d, as every number does." % (i, i - 1, i + 1)}]},
        **extra) for i in range(n)]


files = {}
for key, extra in (("sharegpt", {}), ("sharegpt4v", {"image": "coco/train2017/000000000009.jpg"}),
                   ("sharegpt4video", {"video": "videos/v_0001.mp4"})):
    files[key] = os.path.join(tmp, key + ".json")
    with open(files[key], "w") as f:
        json.dump(conversations(120, extra), f)
files["custom"] = os.path.join(tmp, "data.jsonl")
with open(files["custom"], "w") as f:
    for i in range(100):
        f.write(json.dumps({"prompt": "What is the capital of country number %d?" % i}) + "\n")
files["mm"] = os.path.join(tmp, "mm_data.jsonl")
with open(files["mm"], "w") as f:
    f.write(json.dumps({"prompt": "How many animals?", "image_files": ["/path/to/image/folder/horse.jpg"]}) + "\n")
files["spec"] = os.path.join(tmp, "question.jsonl")
with open(files["spec"], "w") as f:
    f.write(json.dumps({"question_id": 1, "category": "writing", "turns": ["Write a haiku."]}) + "\n")
PLACEHOLDERS = [
    ("<your data path>/ShareGPT_V3_unfiltered_cleaned_split.json", files["sharegpt"]),
    ("<path-to-your-data-jsonl>", files["custom"]),
    ("<path-to-your-mm-data-jsonl>", files["mm"]),
    ("<YOUR_DOWNLOADED_PATH>/data/spec_bench/question.jsonl", files["spec"]),
    ("/path/to/ShareGPT4V/sharegpt4v_instruct_gpt4-vision_cap100k.json", files["sharegpt4v"]),
    ("/path/to/ShareGPT4Video/llava_v1_5_mix665k_with_video_chatgpt72k_share4video28k.json",
     files["sharegpt4video"]),
]

# The Hugging Face cache holds each model's tokenizer (the test one), as a
# machine that runs vLLM has it: vLLM and tokperf take the tokenizer from
# --model.
home = os.path.join(tmp, "home")
os.makedirs(home)
hub = os.path.join(tmp, "hub")
env = dict(os.environ, HOME=home, HF_HUB_OFFLINE="1", HF_HUB_CACHE=hub)
models = sorted({shlex.split(line)[shlex.split(line).index("--model") + 1] for _, line, _ in LINES})
for model in models if WORDS else []:
    hf_cache_put(hub, model, WORDS)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_mock(model):
    port = free_port()
    p = subprocess.Popen([TOKPERF, "mock", "-q", "--grpc-port", "0", "--http-port", str(port), "--served-model-name",
                          model, "--ttft-ms", "1", "--itl-ms", "0", "--output-tokens", "8"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return p, port
        except OSError:
            time.sleep(0.02)
    return p, port


def argv_of(line, port):
    """The line as a shell would split it (~ expanded), tokperf for vLLM, the
    server at the mock: --host/--port/--base-url dropped, --base-url added."""
    for ph, path in PLACEHOLDERS:
        line = line.replace(ph, path)
    words = shlex.split(line)
    assert words[:3] == ["vllm", "bench", "serve"]
    out, i = [TOKPERF, "vllm-bench"], 3
    while i < len(words):
        w = words[i]
        if w in ("--host", "--port", "--base-url"):
            i += 2
            continue
        out.append(os.path.join(home, w[2:]) if w.startswith("~/") else w)
        i += 1
    return out + ["--base-url", "http://127.0.0.1:%d" % port]


ran = refused = 0
for section, line, want in LINES:
    model = shlex.split(line)[shlex.split(line).index("--model") + 1]
    mock, port = start_mock(model)
    cwd = os.path.join(tmp, "cwd%d" % (ran + refused))
    os.makedirs(cwd)
    try:
        p = subprocess.run(argv_of(line, port), cwd=cwd, env=env, capture_output=True, text=True,
                           timeout=180 * SCALE)
    finally:
        mock.terminate()
        mock.wait()
    what = "%s, %s: %s" % (SRC, section, line[:90])
    if isinstance(want, tuple):
        refused += 1
        check(p.returncode == 2 and want[1] in p.stderr, "refused with what to write instead: " + what,
              "exit %d: %s" % (p.returncode, p.stderr[-600:]))
        continue
    ran += 1
    got = None
    for l in p.stdout.splitlines():
        if l.startswith("Successful requests:"):
            got = int(l.split(":")[1])
    check(p.returncode == 0 and got == want, "runs, %d requests completed: %s" % (want, what),
          "exit %d, successful %r: %s" % (p.returncode, got, (p.stdout + p.stderr)[-1500:]))
    if "--save-result" in line:
        d = os.path.join(home, "vllm_benchmark_results") if "~/" in line else os.path.join(cwd, "log")
        names = os.listdir(d) if os.path.isdir(d) else []
        doc = json.load(open(os.path.join(d, names[0]))) if len(names) >= 1 else {}
        check(doc.get("completed") == want and len(doc.get("ttfts", [])) == want,
              "its result file holds %d requests and, with --save-detailed, their arrays" % want,
              (d, names, {k: doc.get(k) for k in ("completed", "num_prompts")}))
        shutil.rmtree(d, ignore_errors=True)
# A result file that cannot be written fails before the first request, in
# both entries, root or not (a path under /proc: permissions say yes to
# root, the kernel says no).
for argv in ([TOKPERF, "vllm-bench", "--mock", "--num-prompts", "3", "--save-result", "--result-dir", "/proc/tp-nope"],
             [TOKPERF, "sglang-bench", "--mock", "--dataset-name", "random", "--num-prompts", "3", "--output-file",
              "/proc/tp-nope/out.jsonl"]):
    p = subprocess.run(argv, cwd=tmp, env=env, capture_output=True, text=True, timeout=60 * SCALE)
    check(p.returncode == 3 and "/proc/tp-nope" in p.stderr and "Successful requests" not in p.stdout,
          "%s: an unwritable result path fails before any request, naming it" % argv[1],
          "exit %d: %s" % (p.returncode, p.stderr[-600:]))
check(ran >= 6 and ran + refused == len(LINES) >= 12, "%d of vLLM's documented lines: %d ran, %d refused" %
      (len(LINES), ran, refused))
done()
