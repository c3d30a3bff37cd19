#!/usr/bin/env python3
"""The command line as a user meets it: help, exit codes, and one clear
message for each mistake (naming the option, file and line, or peer), plus
runs against the built-in mock.  Prints TAP."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tp_check import SCALE, check, done, free_port, wait_port  # noqa: E402

TOKPERF = sys.argv[1]
WORDS = os.environ.get("TP_WORDS_MODEL")


def run(args, timeout=60):
    p = subprocess.run([TOKPERF] + args, capture_output=True, text=True, timeout=timeout * SCALE)
    return p.returncode, p.stdout, p.stderr



tmp = tempfile.mkdtemp(prefix="tp_cli_")

# Help and version.
rc, out, err = run(["--help"])
check(rc == 0 and "tokperf profile" in out and "Exit codes" in out, "--help prints usage and exit codes", err)
rc, out, err = run(["profile", "--help"])
for flag in ["--concurrency", "--input-file", "--tokenizer", "--request-count", "--warmup-request-count",
             "--measurement-interval", "--random-seed", "--backend", "--streaming", "--json", "--mock",
             "--input-data", "--tokenizer-path", "-u, --url", "-m, --model", "--mock-ttft-ms", "--no-streaming",
             "--tokenizer-revision", "--tokenizer-trust-remote-code"]:
    check(rc == 0 and flag in out, "profile --help documents %s" % flag)
check("[default: 1]" in out and "[default: localhost:8001]" in out, "profile --help shows defaults")
check("  3 " in out and "could not start" in out, "profile --help documents exit codes")
flat = " ".join(out.split())
check("--tokenizer-add-special-tokens" in out and "output tokens never include them --random-seed" in flat,
      "profile --help documents --tokenizer-add-special-tokens, with no default (off)")
check("--streaming stream tokens with ModelStreamInfer [default: on]" in flat
      and "--no-streaming one unary ModelInfer answer per request --ca-file" in flat,
      "a flag that is on by default says so; its negation shows none")
check("--max-error-rate R" in out and "default: no limit Connections" in flat,
      "a setting whose 0 means 'not set' shows no default")
# The same tables give the man page and the completions.
rc, man, err = run(["man"])
check(rc == 0 and man.startswith(".TH TOKPERF 1") and "\\-\\-concurrency" in man and "\\-\\-mock\\-ttft\\-ms" in man,
      "tokperf man: a roff page with every option", man[:200])
rc, comp, err = run(["completion", "bash"])
check(rc == 0 and "--concurrency" in comp and "--mock-itl-ms" in comp and "profile" in comp,
      "tokperf completion bash lists the subcommands and their flags", comp[:200])
check(all(w in comp for w in ("--ids", "--fail-on", "--junit", "--random-input-len", "vllm-bench")),
      "tokperf completion bash: tokenize, compare and vllm-bench complete their flags from their tables", comp[-600:])
check(all(h in man for h in ('.SH "TOKENIZE OPTIONS"', '.SH "COMPARE OPTIONS"', '.SH "VLLM\\-BENCH OPTIONS"'))
      and "\\-\\-fail\\-on" in man, "tokperf man documents tokenize, compare and vllm-bench options", man[-300:])
rc, comp, err = run(["completion", "zsh"])
check(rc == 0 and "--concurrency" in comp and "compdef" in comp, "tokperf completion zsh", comp[:200])
rc, comp, err = run(["completion", "fish"])
check(rc == 2 and "fish" in err, "an unknown shell: exit 2, named", err)
rc, out, err = run(["tokenize", "--help"])
check(rc == 0 and "--tokenizer-add-special-tokens" in out and "[default: off]" in out,
      "tokenize --help documents --tokenizer-add-special-tokens, off by default")
rc, out, err = run(["profile", "--mock", "--tokenizer-add-special-tokens"])
check(rc == 2 and "--tokenizer-add-special-tokens needs --tokenizer" in err,
      "--tokenizer-add-special-tokens without --tokenizer: exit 2, named", err)
# The library names a setting by its key (prompts.prefix_tokens); the CLI
# prints the flag the user typed in its place, and no key is left over.
for args, want in [
        (["profile", "--mock", "--prefix-tokens", "16"], "tokperf: --prefix-tokens needs --tokenizer:"),
        (["profile", "--mock", "--schedule", "t.jsonl", "--request-rate", "5"],
         "tokperf: --schedule replays its own times and lengths: drop --request-rate and "
         "--synthetic-input-tokens-mean"),
        (["profile", "--mock", "--search", "concurrency"],
         "tokperf: --search: give at least one --slo, like 'ttft.p99 <= 300ms' (or --max-error-rate)"),
        (["profile", "--mock", "--assert", "speed >= 1"], "tokperf: --assert 'speed >= 1': unknown metric 'speed'"),
        (["profile", "--mock", "--search", "concurrency", "--slo", "speed <= 3"],
         "tokperf: --slo 'speed <= 3': unknown metric 'speed'"),
        (["profile", "-u", "localhost:1/v1", "--no-artifacts"],
         "--url 'localhost:1/v1': a gRPC address has no path (give HOST:PORT; for an HTTP API set --service-kind "
         "to openai or triton-generate)")]:
    rc, out, err = run(args)
    check(rc == 2 and want in err and not any(k in err for k in ("prompts.", "load.", "search.", "goals.", "server.")),
          "a library refusal names the flag: %s" % " ".join(args[1:]), err)
rc, out, err = run(["mock", "--help"])
check(rc == 0 and "--grpc-port" in out and "--itl-ms" in out, "mock --help documents its options")
rc, out, err = run(["--version"])
check(rc == 0 and "libuv" in out and "nghttp2" in out and "sentencepiece" in out, "--version names libraries", out)

# Usage errors: exit 2, the option and value named.
rc, out, err = run(["profile", "--bogus"])
check(rc == 2 and "unknown option '--bogus'" in err, "unknown option: exit 2, named", err)
rc, out, err = run(["profile", "--concurrency", "0"])
check(rc == 2 and "--concurrency '0'" in err, "bad --concurrency: exit 2, option and value named", err)
rc, out, err = run(["profile", "--concurrency", "8:4"])
check(rc == 2 and "--concurrency '8:4'" in err, "backwards range rejected", err)
rc, out, err = run(["profile", "--backend", "tgi"])
check(rc == 2 and "tensorrtllm or vllm" in err, "bad --backend lists what is accepted", err)
rc, out, err = run(["profile", "--measurement-interval", "5 parsecs"])
check(rc == 2 and "--measurement-interval" in err, "bad duration rejected", err)
rc, out, err = run(["profile", "--concurrency"])
check(rc == 2 and "needs a value" in err, "missing value reported", err)

# Input file errors: exit 2, file and line named.
bad = os.path.join(tmp, "bad.jsonl")
with open(bad, "w") as f:
    f.write('{"text_input": "fine"}\n{"text_input": "broken"\n')
rc, out, err = run(["profile", "--mock", "--input-file", bad])
check(rc == 2 and bad + ":2" in err, "malformed input line: exit 2, file:line named", err)
noprompt = os.path.join(tmp, "noprompt.jsonl")
with open(noprompt, "w") as f:
    f.write('{"question": "x"}\n')
rc, out, err = run(["profile", "--mock", "--input-file", noprompt])
check(rc == 2 and noprompt + ":1" in err and "text_input" in err, "line without a prompt: keys listed", err)
rc, out, err = run(["profile", "--mock", "--input-file", os.path.join(tmp, "missing.jsonl")])
check(rc == 2 and "missing.jsonl" in err, "missing input file: exit 2, named", err)

# More bad input (issue #7): each names the file and line, the option, or the
# path, and exits 2; a tokenizer of the wrong kind cannot start (exit 3).
empty = os.path.join(tmp, "empty.jsonl")
open(empty, "w").close()
rc, out, err = run(["profile", "--mock", "--input-file", empty])
check(rc == 2 and empty in err and "empty" in err, "empty input file: exit 2, named as empty", err)
huge = os.path.join(tmp, "huge.jsonl")
with open(huge, "w") as f:
    f.write('{"text_input": "%s"}\n' % ("word " * 400000))
    f.write('{"text_input": broken}\n')
rc, out, err = run(["profile", "--mock", "--input-file", huge])
check(rc == 2 and huge + ":2" in err, "a 2 MB line is read; the bad line after it is named", err[-300:])
badutf = os.path.join(tmp, "badutf.jsonl")
with open(badutf, "wb") as f:
    f.write(b'{"text_input": "ok"}\n{"text_input": "caf\xe9"}\n')
rc, out, err = run(["profile", "--mock", "--input-file", badutf])
check(rc == 2 and badutf + ":2" in err, "invalid UTF-8: exit 2, line named", err)
rc, out, err = run(["profile", "--request-rate", "-1"])
check(rc == 2 and "--request-rate '-1'" in err, "--request-rate -1: exit 2, option and value named", err)
rc, out, err = run(["profile", "--duration", "5x"])
check(rc == 2 and "--duration '5x'" in err, "--duration 5x: exit 2, option and value named", err)
if os.geteuid() != 0:
    locked = os.path.join(tmp, "locked.jsonl")
    with open(locked, "w") as f:
        f.write('{"text_input": "x"}\n')
    os.chmod(locked, 0)
    rc, out, err = run(["profile", "--mock", "--input-file", locked])
    check(rc == 2 and locked in err, "unreadable input file: exit 2, named", err)
rc, out, err = run(["profile", "--mock", "--input-file", tmp])
check(rc == 2 and tmp in err, "a directory given as the input file: exit 2, named", err)
rc, out, err = run(["profile", "--mock", "--tokenizer", bad])
check(rc == 3 and bad in err, "a JSONL file given as the tokenizer: exit 3, the file named", err)

# Issue #13: every output path is checked before the first request.  The
# server address points at nothing, so a check made after connecting would
# exit 3 ("cannot connect"); these must exit 2 naming the option and path.
nothing = "127.0.0.1:%d" % free_port()
afile = os.path.join(tmp, "afile")
with open(afile, "w") as f:
    f.write("x")
for opt, path, why in [
        ("--json", os.path.join(tmp, "no", "such", "dir", "r.json"), "No such file or directory"),
        ("--json", tmp, "is a directory"),
        ("--records", os.path.join(afile, "records.jsonl"), "not a directory"),
        ("--profile-export-file", os.path.join(tmp, "missing-dir", "pe.json"), "No such file or directory"),
        ("--artifact-dir", os.path.join(afile, "sub"), "not a directory")]:
    rc, out, err = run(["profile", "-u", nothing, "--request-count", "2", opt, path])
    check(rc == 2 and opt in err and path in err and why in err,
          "%s %s: refused before any request, exit 2, option, path and cause named" % (opt, why), err)
rc, out, err = run(["profile", "-u", nothing, "--request-count", "2", "--artifact-dir",
                    os.path.join(tmp, "new", "deeper")])
check(rc == 3 and "cannot connect" in err, "an artifact directory still to be made is accepted (the run goes on)", err)

# Start-up failures: exit 3 with the cause.
port = free_port()
rc, out, err = run(["profile", "-u", "127.0.0.1:%d" % port, "--request-count", "2"])
check(rc == 3 and ("cannot connect to 127.0.0.1:%d" % port) in err and "refused" in err,
      "unreachable server: exit 3, peer and reason named", err)
rc, out, err = run(["profile", "--mock", "--tokenizer", os.path.join(tmp, "nope")])
check(rc == 3 and "nope" in err, "missing tokenizer: exit 3, path named", err)

mock_port = free_port()
mock = subprocess.Popen([TOKPERF, "mock", "--grpc-port", str(mock_port), "--ttft-ms", "2", "--itl-ms", "1",
                         "--output-tokens", "6"], stderr=subprocess.PIPE, text=True)
try:
    wait_port(mock_port, 10 * SCALE)
    url = "127.0.0.1:%d" % mock_port
    rc, out, err = run(["profile", "-u", url, "-m", "no_such_model", "--request-count", "2"])
    check(rc == 3 and "no_such_model" in err and ("not ready" in err or "not found" in err),
          "unknown model: exit 3, model named", err)
    rc, out, err = run(["profile", "-u", url, "-m", "vllm_model", "--request-count", "2"])
    check(rc == 3 and "--backend vllm" in err, "wrong backend for the model: exit 3, fix suggested", err)
    # Real runs against the standalone mock: ensemble, vLLM, unary.
    js = os.path.join(tmp, "run.json")
    args = ["profile", "-u", url, "--concurrency", "1,3", "--request-count", "6", "--json", js]
    if WORDS:
        args += ["--tokenizer", WORDS]
    rc, out, err = run(args)
    check(rc == 0, "ensemble sweep against the mock: exit 0", err)
    check("Time to first token (ms)" in out and "Request throughput" in out, "report has the level table", out)
    check(0 < out.find("Sweep summary") < out.find("LLM metrics, concurrency 1") < out.find("LLM metrics, concurrency 3"),
          "the sweep summary comes first, then each level's table in order", out[:600])
    try:
        doc = json.load(open(js))
        lv = doc["levels"]
        check(doc["schema"].startswith("tokperf.report/") and [l["concurrency"] for l in lv] == [1, 3],
              "--json has both levels")
        check(all(l["succeeded"] == 6 and l["failed"] == 0 for l in lv), "--json: every request succeeded")
        if WORDS:
            check(all(l["output_tokens"]["avg"] == 6 for l in lv), "--json: 6 output tokens per request")
    except Exception as e:  # noqa: BLE001
        check(False, "--json readable", repr(e))
    rc, out, err = run(["profile", "-u", url, "-m", "vllm_model", "--backend", "vllm", "--request-count", "4"])
    check(rc == 0 and "4 succeeded" in err.replace("4 succeeded,", "4 succeeded"), "vLLM model run succeeds", err)
    rc, out, err = run(["profile", "-u", url, "--no-streaming", "--request-count", "4", "--json", js])
    ok = rc == 0
    if ok:
        l0 = json.load(open(js))["levels"][0]
        ok = l0["succeeded"] == 4 and l0["responses_per_request"]["max"] == 1
    check(ok, "unary ModelInfer run: one response per request", err)
finally:
    mock.send_signal(signal.SIGINT)
    try:
        mock.wait(timeout=10 * SCALE)
    except subprocess.TimeoutExpired:
        mock.kill()
check(mock.returncode == 0, "mock stops cleanly on SIGINT", mock.stderr.read() if mock.stderr else "")

# tokperf tokenize: counts and ids per line, JSONL texts, clear errors.
if WORDS:
    p = subprocess.run([TOKPERF, "tokenize", "--tokenizer", WORDS], input="the water of the world\n\nsee people\n",
                       capture_output=True, text=True, timeout=30 * SCALE)
    check(p.returncode == 0 and p.stdout.split() == ["5", "0", "2"], "tokenize: one count per line", p.stdout + p.stderr)
    p = subprocess.run([TOKPERF, "tokenize", "--tokenizer", WORDS, "--ids"], input="the water\n",
                       capture_output=True, text=True, timeout=30 * SCALE)
    ids = json.loads(p.stdout.strip() or "null")
    check(p.returncode == 0 and isinstance(ids, list) and len(ids) == 2 and ids[0] != ids[1], "tokenize --ids: a JSON array")
    p = subprocess.run([TOKPERF, "tokenize", "--tokenizer", WORDS, "--jsonl"],
                       input='{"text": "the water\\nof the world"}\n', capture_output=True, text=True,
                       timeout=30 * SCALE)
    check(p.returncode == 0 and p.stdout.split() == ["5"], "tokenize --jsonl: a text may hold a newline", p.stdout + p.stderr)
    bad = os.path.join(tmp, "bad_tok.jsonl")
    with open(bad, "w") as f:
        f.write('{"text": "x"}\n{"txt": 1}\n')
    p = subprocess.run([TOKPERF, "tokenize", "--tokenizer", WORDS, "--jsonl", bad], capture_output=True, text=True,
                       timeout=30 * SCALE)
    check(p.returncode == 2 and bad + ":2" in p.stderr, "tokenize: a bad JSONL line names file:line", p.stderr)
    # --tokenizer-add-special-tokens: the words model has a BOS and no
    # tokenizer_config.json beside it, so every count grows by one (the
    # empty line too) and the ids start with BOS.
    p = subprocess.run([TOKPERF, "tokenize", "--tokenizer", WORDS, "--tokenizer-add-special-tokens"],
                       input="the water of the world\n\nsee people\n", capture_output=True, text=True,
                       timeout=30 * SCALE)
    check(p.returncode == 0 and p.stdout.split() == ["6", "1", "3"],
          "tokenize --tokenizer-add-special-tokens: count + 1 per line", p.stdout + p.stderr)
    p = subprocess.run([TOKPERF, "tokenize", "--tokenizer", WORDS, "--ids", "--tokenizer-add-special-tokens"],
                       input="the water\n", capture_output=True, text=True, timeout=30 * SCALE)
    sp_ids = json.loads(p.stdout.strip() or "null")
    check(p.returncode == 0 and isinstance(sp_ids, list) and sp_ids[1:] == ids and sp_ids[0] not in ids,
          "tokenize --ids --tokenizer-add-special-tokens: BOS, then the same ids", p.stdout + p.stderr)
    # profile: input tokens include the BOS, output tokens do not, and the
    # report says how tokens were counted.
    js = os.path.join(tmp, "special.json")
    art = os.path.join(tmp, "art-special")
    rc, out, err = run(["profile", "--mock", "--tokenizer", WORDS, "--tokenizer-add-special-tokens",
                        "--request-count", "4", "--mock-output-tokens", "5", "--artifact-dir", art, "--json", js])
    ok = rc == 0
    if ok:
        doc = json.load(open(js))
        l0 = doc["levels"][0]
        ok = (l0["input_tokens"]["avg"] == 65 and l0["output_tokens"]["avg"] == 5
              and doc["config"]["tokenizer_add_special_tokens"] is True and "<s> $A" in doc["tokenizer"])
    check(ok, "profile --tokenizer-add-special-tokens: 64 words count 65 input tokens, output stays 5", err)
    # GenAI-Perf's summary has no setting for it (its input_config is
    # GenAI-Perf's own configuration): its input lengths are the counts.
    try:
        genai = json.load(open(os.path.join(art, "concurrency1", "profile_export_genai_perf.json")))
        ok = genai["input_sequence_length"]["avg"] == 65 and genai["output_sequence_length"]["avg"] == 5
    except (OSError, ValueError, KeyError) as e:
        ok, err = False, repr(e)
    check(ok, "the GenAI-Perf export's input lengths count the special tokens", err)
p = subprocess.run([TOKPERF, "tokenize", "--tokenizer", os.path.join(tmp, "none")], input="x\n",
                   capture_output=True, text=True, timeout=30 * SCALE)
check(p.returncode == 3 and "none" in p.stderr, "tokenize: a missing tokenizer exits 3 naming it", p.stderr)

# --tokenizer ORG/NAME: found offline in a Hugging Face cache laid out as
# huggingface_hub lays it out (issue #16).
if WORDS:
    hub = os.path.join(tmp, "hub")
    repo = os.path.join(hub, "models--test-org--words")
    commit = "0123456789abcdef0123456789abcdef01234567"
    os.makedirs(os.path.join(repo, "snapshots", commit))
    os.makedirs(os.path.join(repo, "refs"))
    shutil.copy(WORDS, os.path.join(repo, "snapshots", commit, "tokenizer.model"))
    with open(os.path.join(repo, "refs", "main"), "w") as f:
        f.write(commit)
    env = dict(os.environ, HF_HUB_CACHE=hub)
    js = os.path.join(tmp, "byname.json")
    p = subprocess.run([TOKPERF, "profile", "--mock", "--tokenizer", "test-org/words", "--request-count", "4",
                        "--mock-output-tokens", "5", "--no-artifacts", "--json", js,
                        "--tokenizer-trust-remote-code", "--tokenizer-trust-remote-code"],
                       capture_output=True, text=True, timeout=60 * SCALE, env=env)
    ok = p.returncode == 0
    if ok:
        doc = json.load(open(js))
        l0 = doc["levels"][0]
        ok = (l0["input_tokens"]["avg"] == 64 and l0["output_tokens"]["avg"] == 5
              and os.path.join("snapshots", commit) in doc["tokenizer"])
    check(ok, "profile --tokenizer ORG/NAME: found in HF_HUB_CACHE at refs/main, tokens counted", p.stderr)
    check(p.stderr.count("--tokenizer-trust-remote-code is accepted for compatibility and has no effect") == 1,
          "--tokenizer-trust-remote-code is accepted and said once to have no effect", p.stderr)
    rc = subprocess.run([TOKPERF, "profile", "--mock", "--tokenizer", "test-org/words", "--tokenizer-revision",
                         commit, "--request-count", "2", "--no-artifacts", "-q"],
                        capture_output=True, text=True, timeout=60 * SCALE, env=env)
    check(rc.returncode == 0, "--tokenizer-revision COMMIT uses snapshots/COMMIT", rc.stderr)
    p = subprocess.run([TOKPERF, "profile", "--mock", "--tokenizer", "test-org/words", "--tokenizer-revision",
                        "v2", "--request-count", "2", "--no-artifacts"],
                       capture_output=True, text=True, timeout=60 * SCALE, env=env)
    check(p.returncode == 3 and os.path.join(repo, "refs", "v2") + " (missing)" in p.stderr
          and "hf download test-org/words tokenizer.json tokenizer_config.json --revision v2" in p.stderr,
          "an absent revision: exit 3, the ref file looked at and the download command named", p.stderr)
    p = subprocess.run([TOKPERF, "profile", "--mock", "--tokenizer", "test-org/absent", "--request-count", "2"],
                       capture_output=True, text=True, timeout=60 * SCALE,
                       env=dict(os.environ, HF_HUB_CACHE="", HF_HOME=os.path.join(tmp, "hfhome")))
    check(p.returncode == 3 and os.path.join(tmp, "hfhome", "hub", "models--test-org--absent", "refs", "main")
          in p.stderr and "test-org/absent (no such file or directory)" in p.stderr,
          "an absent model: exit 3, every place looked at named (HF_HOME/hub)", p.stderr)
    rc, out, err = run(["profile", "--mock", "--tokenizer-revision", "v2"])
    check(rc == 2 and "--tokenizer-revision 'v2' needs --tokenizer" in err,
          "--tokenizer-revision without --tokenizer: exit 2, named", err)
    # No --tokenizer: a --model ORG/NAME whose tokenizer the cache holds
    # counts the tokens (as AIPerf and vLLM do), said on stderr; found through
    # HF_HUB_CACHE and through HF_HOME/hub alike.  The mock's TGI dialect
    # answers any model name.
    hfhome = os.path.join(tmp, "hfhome-words")
    os.makedirs(hfhome)
    os.symlink(hub, os.path.join(hfhome, "hub"))
    MT = ["profile", "--mock", "--mock-http-dialect", "tgi", "--skip-preflight", "--service-kind", "openai",
          "--request-count", "3", "--mock-output-tokens", "5", "--token-source", "client", "--no-artifacts"]
    snap = os.path.join("models--test-org--words", "snapshots", commit)
    for name, e in [("HF_HUB_CACHE", env), ("HF_HOME", dict(os.environ, HF_HUB_CACHE="", HF_HOME=hfhome))]:
        js = os.path.join(tmp, "model-tok.json")
        p = subprocess.run([TOKPERF] + MT + ["-m", "test-org/words", "--json", js], capture_output=True, text=True,
                           timeout=60 * SCALE, env=e)
        doc = json.load(open(js)) if p.returncode == 0 and os.path.exists(js) else {"levels": [{}]}
        l0 = doc["levels"][0]
        check(p.returncode == 0 and snap in (doc.get("tokenizer") or "")
              and (l0.get("input_tokens") or {}).get("avg") == 64 and (l0.get("output_tokens") or {}).get("avg") == 5,
              "no --tokenizer, --model ORG/NAME in the cache (%s): its tokenizer counts the tokens" % name,
              p.stderr[-400:] + json.dumps(doc.get("tokenizer")))
        check("note: no --tokenizer: tokens are counted with the tokenizer of --model test-org/words, found in" in p.stderr
              and snap in p.stderr, "the model's tokenizer: said on stderr with where it was found (%s)" % name,
              p.stderr[-400:])
    p = subprocess.run([TOKPERF] + MT + ["-m", "test-org/words", "--tokenizer", WORDS, "--json", js],
                       capture_output=True, text=True, timeout=60 * SCALE, env=env)
    doc = json.load(open(js)) if p.returncode == 0 else {}
    check(p.returncode == 0 and "tokenizer of --model" not in p.stderr and snap not in (doc.get("tokenizer") or "-")
          and WORDS in (doc.get("tokenizer") or ""), "--tokenizer given: it wins over --model's", p.stderr[-300:])
    p = subprocess.run([TOKPERF] + MT + ["-m", "test-org/absent", "--token-source", "auto", "--json", js],
                       capture_output=True, text=True, timeout=60 * SCALE, env=env)
    doc = json.load(open(js)) if p.returncode == 0 else {"tokenizer": "?"}
    check(p.returncode == 0 and "tokenizer of --model" not in p.stderr and doc.get("tokenizer") is None,
          "--model not in the cache: no tokenizer taken, the run goes on", p.stderr[-300:])
    p = subprocess.run([TOKPERF, "tokenize", "--tokenizer", "test-org/words"], input="the water\n",
                       capture_output=True, text=True, timeout=30 * SCALE, env=env)
    check(p.returncode == 0 and p.stdout.split() == ["2"], "tokenize --tokenizer ORG/NAME", p.stdout + p.stderr)

# The API key never appears in any output, file or log (issue #4).
secret = "sk-tokperf-test-4f1d9c2b7e"
art = os.path.join(tmp, "art-key")
os.makedirs(art)
env = dict(os.environ, OPENAI_API_KEY=secret)
p = subprocess.run([TOKPERF, "profile", "--mock", "--service-kind", "openai", "-m", "ensemble", "--concurrency", "2",
                    "--request-count", "4", "--output-tokens-mean", "4", "--artifact-dir", art,
                    "--json", os.path.join(art, "run.json"), "--mock-log", os.path.join(art, "mock.jsonl"),
                    "-H", "X-Api-Key: " + secret],
                   capture_output=True, text=True, timeout=60 * SCALE, env=env)
leaks = [f for f in (os.path.join(d, x) for d, _, fs in os.walk(art) for x in fs) if secret in open(f, errors="replace").read()]
check(p.returncode == 0 and os.path.exists(os.path.join(art, "run.json")), "OpenAI run with a key: exit 0", p.stderr[-400:])
check(secret not in p.stdout and secret not in p.stderr and not leaks,
      "the API key appears in no output, artifact, export or log", "leaks in %r" % leaks)
doc = json.load(open(os.path.join(art, "run.json")))
check(doc["config"]["api_key"] == "***" and any(h.endswith("***") for h in doc["config"]["headers"]),
      "the saved configuration says a key was set, and masks key-like headers")

# AIPerf's and GenAI-Perf's scripts write --endpoint-type without
# --service-kind: the OpenAI API is meant.  With no --model the first model
# the server lists is asked for, and the header names it and the API (not
# a Triton backend).
http_port = free_port()
mock = subprocess.Popen([TOKPERF, "mock", "--grpc-port", "0", "--http-port", str(http_port), "-q", "--ttft-ms", "1",
                         "--itl-ms", "1", "--output-tokens", "4"], stderr=subprocess.PIPE, text=True)
try:
    wait_port(http_port, 10 * SCALE)
    import urllib.request
    with urllib.request.urlopen("http://127.0.0.1:%d/v1/models" % http_port, timeout=10 * SCALE) as resp:
        first_model = json.load(resp)["data"][0]["id"]
    for ep, kind in [("chat", "openai-chat"), ("completions", "openai-completions")]:
        js = os.path.join(tmp, "ep-%s.json" % ep)
        rc, out, err = run(["profile", "-u", "http://127.0.0.1:%d" % http_port, "--endpoint-type", ep,
                            "--request-count", "3", "--no-artifacts", "-q", "--json", js])
        doc = json.load(open(js)) if rc == 0 and os.path.exists(js) else {"config": {}}
        head = out.splitlines()[0] if out else ""
        check(rc == 0 and doc["config"].get("service_kind") == kind,
              "--endpoint-type %s without --service-kind: the OpenAI API (%s)" % (ep, kind), err[-300:])
        check(("model: %s, backend: %s," % (first_model, kind)) in head and doc["config"].get("model") == first_model
              and doc["config"].get("backend") == kind,
              "--endpoint-type %s, no --model: the header and JSON name the listed model %s and the API" %
              (ep, first_model), head + json.dumps(doc["config"].get("model")))
finally:
    mock.terminate()
    mock.wait(timeout=10)

# perf_analyzer's fractional --request-rate-range START:END:STEP: each
# level START + k * STEP, the last step kept although a running sum of 0.1s
# overshoots it.
js = os.path.join(tmp, "rates.json")
rc, out, err = run(["profile", "--mock", "--request-rate-range=20:20.3:0.1", "--request-count", "3",
                    "--no-artifacts", "-q", "--json", js])
rates = [l.get("request_rate_rps") for l in json.load(open(js))["levels"]] if rc == 0 and os.path.exists(js) else []
check(rc == 0 and rates == [20, 20.1, 20.2, 20.3],
      "--request-rate-range=20:20.3:0.1: four levels, 20 to 20.3 exactly", repr(rates) + err[-300:])

# perf_analyzer's -f: its latency report CSV, rows by throughput, beside it
# one file per composing model; the figures are the --json document's.
csvdir = os.path.join(tmp, "pa-csv")
os.makedirs(csvdir)
csvp, jsp = os.path.join(csvdir, "perf.csv"), os.path.join(csvdir, "run.json")
rc, out, err = run(["profile", "--mock", "--concurrency", "2,1", "--request-count", "4", "--output-tokens-mean", "4",
                    "--no-artifacts", "-f", csvp, "--verbose-csv", "--json", jsp, "-q"])
rows = [l.rstrip("\n").split(",") for l in open(csvp)] if rc == 0 and os.path.exists(csvp) else []
check(len(rows) == 3 and rows[0][:2] == ["Concurrency", "Inferences/Second"] and rows[0][-3:] == [
      "Avg latency", "request/response", "response wait"] and all(len(r) == 16 for r in rows),
      "-f FILE --verbose-csv: perf_analyzer's header and a row per level", err[-400:] + repr(rows[:1]))
if len(rows) == 3:
    lv = {l["concurrency"]: l for l in json.load(open(jsp))["levels"]}
    tput = [float(r[1]) for r in rows[1:]]
    check(tput == sorted(tput), "-f: rows in increasing order of throughput", repr(tput))
    ok = True
    for r in rows[1:]:
        l = lv[int(r[0])]
        lat = l["request_latency_from_planned_ms"]
        srv = l["server"][0]
        ok &= abs(float(r[1]) - l["request_throughput_rps"]) <= 1e-5 * l["request_throughput_rps"]
        ok &= int(r[9]) == int(lat["p50"] * 1000) and int(r[12]) == int(lat["p99"] * 1000)
        ok &= int(r[4]) == int(srv["avg_queue_us"]) and int(r[6]) == int(srv["avg_compute_infer_us"])
        ok &= int(r[2]) == int(l["send_lag_ms"]["avg"] * 1000) and int(r[8]) == 0
    check(ok, "-f: throughput, latency percentiles, send and server times are the JSON's", repr(rows))
    comp = sorted(f for f in os.listdir(csvdir) if f.endswith("_v1.perf.csv"))
    check(comp == ["postprocessing_v1.perf.csv", "preprocessing_v1.perf.csv", "tensorrt_llm_v1.perf.csv"],
          "-f: one file per composing model of the ensemble, NAME_vVERSION.FILE", repr(os.listdir(csvdir)))
rc, out, err = run(["profile", "--mock", "--concurrency", "1", "--request-count", "2", "--no-artifacts",
                    "-f", os.path.join(tmp, "no", "such", "perf.csv")])
check(rc == 2 and "--latency-report-file: cannot write" in err and "no/such/perf.csv" in err,
      "-f to an unwritable path: refused before the run, naming -f and the path", err[-300:])

# Ctrl-C during a run: exit 130 and the partial level is still reported.
p = subprocess.Popen([TOKPERF, "profile", "--mock", "--mock-itl-ms", "20", "--concurrency", "4",
                      "--request-count", "1000", "--output-tokens-mean", "20"],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
time.sleep(1.5 * SCALE)
p.send_signal(signal.SIGINT)
try:
    out, err = p.communicate(timeout=30 * SCALE)
except subprocess.TimeoutExpired:
    p.kill()
    out, err = p.communicate()
check(p.returncode == 130, "SIGINT: exit 130", err)
check("Request latency (ms)" in out and "interrupted" in (out + err).lower(),
      "SIGINT: the measured part is still reported", out + err)

# On a terminal, tables fit its width: a wide table is split into several,
# each repeating the first column; off a terminal they are whole.
def run_on_pty(args, cols, stream="stdout"):
    """Runs tokperf with one stream (stdout or stderr) on a pseudo-terminal
    of cols columns; returns the exit status and what that stream wrote."""
    import fcntl
    import pty
    import struct
    import termios
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, cols, 0, 0))
    outs = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    outs[stream] = slave
    p = subprocess.Popen([TOKPERF] + args, stdout=outs["stdout"], stderr=outs["stderr"], close_fds=True)
    os.close(slave)
    chunks = []
    while True:
        try:
            b = os.read(master, 65536)
        except OSError:
            break
        if not b:
            break
        chunks.append(b)
    p.wait(timeout=120)
    os.close(master)
    return p.returncode, b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")


args = ["profile", "--mock", "--concurrency", "1,2", "--request-count", "4", "--no-artifacts", "-q"]
rc, out = run_on_pty(args, 100)
box = [l for l in out.splitlines() if l[:1] in "┏┃┡│└"]
widest = max(len(l) for l in box) if box else 0
check(rc == 0 and widest <= 100 and "(continued)" in out and "Latency p99 ms" in out,
      "on a 100-column terminal every table fits (split, nothing dropped)", "widest %d\n%s" % (widest, out[-1500:]))
rc, out, err = run(args)
check(rc == 0 and "(continued)" not in out and max(len(l) for l in out.splitlines() if l[:1] in "┏┃┡│└") > 100,
      "off a terminal the tables stay whole")

# Every usage error of the command line: exit 2, the option and what to do
# named.  (An API key file that is empty is made here.)
empty_key = os.path.join(tmp, "empty.key")
open(empty_key, "w").close()
for args, want in [
        (["profile", "--mock", "-H", "no colon"], "--header 'no colon': expected 'Name: value'"),
        (["profile", "--mock", "--duration", "5s", "--measurement-interval", "1s"], "exclude each other"),
        (["profile", "--service-kind", "openai", "--endpoint-type", "generate"],
         "--endpoint-type generate goes with --service-kind triton -i http"),
        (["profile", "--service-kind", "triton", "--endpoint-type", "chat"],
         "--endpoint-type chat is an OpenAI API, and --service-kind triton is not one: write --service-kind openai, "
         "or leave --service-kind out"),
        (["profile", "--endpoint-type", "embeddings"],
         "--endpoint-type embeddings: tokperf measures generated tokens (chat, completions, Triton's generate); "
         "embeddings endpoints generate none and are not supported"),
        (["profile", "--endpoint-type", "rankings"], "rankings endpoints generate none and are not supported"),
        (["profile", "--endpoint-type", "huggingface_generate"],
         "TGI's own /generate API is not supported; TGI serves the OpenAI API too: write --endpoint-type chat"),
        (["profile", "--endpoint-type", "multimodal"], "for text, write --endpoint-type chat"),
        (["profile", "--endpoint-type", "template"], "GenAI-Perf's template endpoint is not supported"),
        (["profile", "--service-kind", "vllm-grpc", "--endpoint-type", "completions"],
         "--endpoint-type completions is an OpenAI API, and --service-kind vllm-grpc is not one"),
        (["profile", "--service-kind", "openai", "--api-key-file", empty_key], "the file's first line is empty"),
        (["profile", "--mock", "--tokenizer-revision", "v1"], "needs --tokenizer ORG/NAME"),
        (["profile", "--mock", "--mock", "--no-usage=yes"], "--no-usage takes no value"),
        (["profile", "--mock", "--concurrency", "0"], "--concurrency '0'"),
        (["profile", "--mock", "--request-rate", "-2"], "--request-rate '-2': value -2 is negative"),
        (["profile", "--mock", "--request-rate-range=1.0:4.0:-0.1"],
         "--request-rate-range '1.0:4.0:-0.1': range step -0.1 is negative"),
        (["profile", "--mock", "--request-rate-range", "1.0:4.0:0"],
         "--request-rate-range '1.0:4.0:0': range step 0 never reaches the end 4"),
        (["profile", "--mock", "--request-rate-range", "1.0:0"],
         "--request-rate-range '1.0:0': range end 0: an open range that rises until a latency bound is met is "
         "tokperf's --search request-rate with --slo"),
        (["profile", "--mock", "--max-error-rate", "150%"], "--max-error-rate '150%'"),
        (["profile", "--mock", "--mock-http-dialect", "nginx"], "expected vllm, llamacpp, tgi or trtllm-serve"),
        (["mock", "--http-port", "70000"], "--http-port '70000': expected a port"),
        (["compare", "a.json", "b.json", "c.json"], "more than two documents are compared only as a page"),
        (["compare", "a.json", "b.json", "--junit"], "--junit needs a value"),
        (["compare", "a.json", "--bogus", "b.json"], "unknown option '--bogus'"),
        (["profile", "--mock", "--concurency", "4"], "unknown option '--concurency'; did you mean --concurrency?"),
        (["profile", "--mock", "--mock-itl-sm", "4"], "unknown option '--mock-itl-sm'; did you mean --mock-itl-ms?"),
        (["profile", "--tokenizer-pat", "x"], "unknown option '--tokenizer-pat'; did you mean --tokenizer-path?"),
        (["mock", "--grpc-prot", "0"], "unknown option '--grpc-prot'; did you mean --grpc-port?"),
        (["tokenize", "--tokenizer", "x", "a.txt", "b.txt"], "unexpected argument 'b.txt' (one FILE at most)"),
        (["tokenize", "--ids"], "--tokenizer PATH is needed"),
        (["completion", "fish"], "unknown shell 'fish'")]:
    rc, out, err = run(args)
    check(rc == 2 and want in err, "usage error, exit 2: %s" % want, "rc %d: %s" % (rc, err[-400:]))

# Other tools' flag families (the seeds test runs whole command lines): each
# mapping, and a clear error for each bad form.
M = ["profile", "--mock", "--no-artifacts", "--request-count", "4", "-q"]
rc, out, err = run(M + ["--prompt-source", "dataset"])
check(rc == 2 and "--prompt-source dataset" in err and "--input-file" in err,
      "GenAI-Perf --prompt-source dataset: exit 2, says to give --input-file", err)
rc, out, err = run(M + ["--prompt-source", "file"])
check(rc == 2 and "needs --input-file" in err, "--prompt-source file without a file: exit 2", err)
rc, out, err = run(M + ["--concurrency", "1,2", "--request-rate", "5"])
check(rc == 2 and "give one value" in err, "a list of concurrencies beside --request-rate: exit 2, one cap asked", err)
js = os.path.join(tmp, "cap.json")
rc, out, err = run(M + ["--concurrency", "3", "--request-rate", "50", "--json", js])
doc = json.load(open(js)) if rc == 0 and os.path.exists(js) else None
check(doc and doc["levels"][0]["concurrency"] == 3 and doc["levels"][0]["mode"] == "request_rate",
      "--concurrency beside --request-rate is the in-flight cap", err)
rc, out, err = run(M + ["--async", "--async", "-v", "--shape", "text_input:1"])
check(rc == 0 and err.count("--async is accepted for compatibility and has no effect") == 1 and "-v" in err
      and "--shape" in err, "perf_analyzer's --async, -v, --shape: accepted, each said once to have no effect", err)
rc, out, err = run(["profile", "--mock", "--no-artifacts", "-q", "-p", "300", "-s", "50", "--max-trials", "3",
                    "--json", js])
doc = json.load(open(js)) if rc == 0 and os.path.exists(js) else None
check(doc and doc["levels"][0]["stability_trials"] >= 3, "perf_analyzer's -p (ms) and -s: stability windows", err)
rc, out, err = run(M + ["--output-format", "vllm", "-m", "vllm_model", "--json", js])
doc = json.load(open(js)) if rc == 0 and os.path.exists(js) else None
check(doc and doc["config"].get("backend") == "vllm", "GenAI-Perf's --output-format vllm is the vLLM backend",
      (doc or {}).get("config", err))
rc, out, err = run(M + ["--output-format", "llama"])
check(rc == 2 and "--output-format 'llama'" in err and "trtllm" in err, "a bad --output-format lists the forms", err)
for bad, what in [(["--request-rate", "fast"], "--request-rate 'fast'"),
                  (["--metric-percentiles", "42"], "--metric-percentiles '42'"),
                  (["--percentile-metrics", "ttft,speed"], "--percentile-metrics"),
                  (["--dataset-name", "sharegpt"], "--dataset-path"),
                  (["--backend", "nope"], "--backend 'nope'")]:
    rc, out, err = run(["vllm-bench", "--mock", "-q"] + bad)
    check(rc == 2 and what in err, "vllm-bench %s: exit 2, named" % " ".join(bad), err)
rc, out, err = run(["vllm-bench", "--mock", "-q", "--num-prompts", "6", "--random-input-len", "16",
                    "--random-output-len", "4", "--request-rate", "inf", "--max-concurrency", "3", "--disable-tqdm"])
check(rc == 0 and "Successful requests:                     6" in out and "Maximum request concurrency:             3"
      in out, "vllm-bench: --num-prompts is the request count, --request-rate inf within --max-concurrency", out + err)
itl = [float(l.split()[-1]) for l in out.splitlines() if l.startswith("Mean ITL (ms):")]
check(itl and itl[0] > 0, "vllm-bench: ITL is vLLM's pooled chunk gaps, measured", out[-600:])
check(re.search(r"=\nFidelity \(tokperf\): (ok|degraded: .* > .*|client-bound: .* > .*)\n$", out),
      "vllm-bench: after vLLM's block, tokperf's verdict on its own figures", out[-300:])

# On a terminal, progress is one status line redrawn in place: the level of
# how many, in the user's words, requests done, in flight, failed, the live
# TTFT and the time left; off a terminal, plain lines (checked above).
rc, err = run_on_pty(["profile", "--mock", "--concurrency", "1,2", "--request-count", "4", "--mock-itl-ms", "40",
                      "--output-tokens-mean", "40", "--no-artifacts"], 160, "stderr")
status = [l for l in err.split("\r") if "level " in l]
check(rc == 0 and any("level 1/2 concurrency 1" in l and "of 4 done" in l and "in flight" in l for l in status)
      and any("TTFT p50" in l and "s left" in l for l in status) and any("level 2/2 concurrency 2" in l for l in status),
      "on a terminal, a live status line: level k of N by name, done, in flight, live TTFT, time left",
      "\n".join(status[:6]) or err[-800:])

# The status line fits the terminal: at 80 and 120 columns every redraw is
# at most that wide (least useful fields dropped) and redrawn in place (a
# carriage return, never a newline, between redraws); in duration mode it
# says how much of the measured time is left.
for cols in (80, 120):
    rc, err = run_on_pty(["profile", "--mock", "--concurrency", "1,16", "--duration", "2500ms", "--mock-itl-ms", "20",
                          "--output-tokens-mean", "20", "--no-artifacts"], cols, "stderr")
    redraws = [seg for seg in err.split("\r") if seg.startswith("\033[K") and "level " in seg]
    texts = [seg[len("\033[K"):] for seg in redraws]
    widest = max((len(t) for t in texts), default=0)
    check(rc == 0 and len(redraws) >= 2 and widest <= cols,
          "%d columns: %d status redraws, the widest %d columns" % (cols, len(redraws), widest),
          "\n".join(texts[:6]) or err[-800:])
    check(rc == 0 and redraws and not any("\n" in seg for seg in redraws)
          and all(any("level %d/2" % k in t for t in texts) for k in (1, 2)),
          "%d columns: each level's status redrawn in place (\\r and clear-to-end, no newline)" % cols,
          repr(redraws[:4]))
    check(any(re.search(r": \d+ done, .*~\d+ s left$", t) for t in texts),
          "%d columns: duration mode shows the time left" % cols, "\n".join(texts[:6]))
# Off a terminal (a log), a whole line every 5 s: no carriage return, no
# escape, nothing cut.
p = subprocess.run([TOKPERF, "profile", "--mock", "--concurrency", "2", "--duration", "6s", "--mock-itl-ms", "20",
                    "--output-tokens-mean", "20", "--no-artifacts"], capture_output=True, text=True,
                   timeout=60 * SCALE)
logl = [l for l in p.stderr.splitlines() if " done, " in l]
check(p.returncode == 0 and logl and "\r" not in p.stderr and "\033" not in p.stderr
      and all(re.match(r"tokperf: level 1/1 concurrency 2, output 20: \d+ done, \d+ in flight, [\d.]+ requests/s, "
                                r"\d+ failed, \d+ s$", l) for l in logl),
      "off a terminal: plain progress lines for a log, whole", p.stderr[-600:])

# --goodput: the other tools' spellings, as separate words after the flag
# (GenAI-Perf's and vLLM's argparse take nargs), with the tools' meanings
# (docs/metrics.md, "Goodput").  The table: the words, then the bounds the
# config echo must hold.
G = ["profile", "--mock", "--no-artifacts", "-q", "--service-kind", "openai", "--endpoint-type", "completions",
     "--request-count", "6", "--concurrency", "2", "--output-tokens-mean", "6", "--mock-itl-ms", "2"]
gjs = os.path.join(tmp, "goodput.json")
for words, want in [
        (["ttft:200", "itl:25"], {"ttft_ms": 200.0, "itl_ms": 25.0}),
        (["ttft:200 itl:25,latency:2s"], {"ttft_ms": 200.0, "itl_ms": 25.0, "latency_ms": 2000.0}),
        (["time_to_first_token:75", "inter_token_latency:19.75"], {"ttft_ms": 75.0, "itl_ms": 19.75}),
        (["time_to_second_token:40", "request_latency:900"], {"ttst_ms": 40.0, "latency_ms": 900.0}),
        (["output_token_throughput_per_user:50"], {"output_tps_per_user_min": 50.0}),
        (["ttst:40", "tpot:10", "e2el:800"], {"ttst_ms": 40.0, "tpot_ms": 10.0, "latency_ms": 800.0})]:
    rc, out, err = run(G + ["--goodput"] + words + ["--json", gjs])
    doc = json.load(open(gjs)) if rc == 0 and os.path.exists(gjs) else {}
    check(rc == 0 and doc.get("config", {}).get("goodput") == want,
          "--goodput %s: bounds %s" % (" ".join(words), want),
          json.dumps(doc.get("config", {}).get("goodput")) + err[-300:])
    os.path.exists(gjs) and os.unlink(gjs)
# The meanings, against the mock's 2 ms between tokens: a time to second
# token bound is a ceiling on the second response's gap, the per-user
# throughput (1000 / ITL, about 500 tokens/s here) a floor.
for words, frac in [(["time_to_second_token:1000"], 1.0), (["time_to_second_token:0.001"], 0.0),
                    (["output_token_throughput_per_user:1"], 1.0),
                    (["output_token_throughput_per_user:1000000"], 0.0),
                    (["time_to_first_token:10000", "output_token_throughput_per_user:1"], 1.0)]:
    rc, out, err = run(G + ["--goodput"] + words + ["--json", gjs])
    lv = json.load(open(gjs))["levels"][0] if rc == 0 and os.path.exists(gjs) else {}
    # On a busy machine a request's first two responses can be read
    # together: it then has no second-token time nor ITL of its own, is
    # unjudged (docs/metrics.md, "Fidelity"), and fails the bound; every
    # other request must be judged as the bound says.
    unj = lv.get("goodput_unjudged")
    n = lv.get("requests") or 1
    want = frac * (n - (unj or 0)) / n
    check(unj is not None and abs((lv.get("goodput_fraction") or 0) - want) < 1e-9 and
          unj <= (lv.get("fidelity") or {}).get("merged_text_responses", 0),
          "--goodput %s: %.0f%% of the judged requests met it (%s unjudged, from merged responses)"
          % (" ".join(words), 100 * frac, unj),
          json.dumps({k: lv.get(k) for k in ("goodput_fraction", "goodput_unjudged")}) + err[-300:])
    os.path.exists(gjs) and os.unlink(gjs)
rc, out, err = run(G + ["--goodput", "ttft:200", "speed:3"])
check(rc == 2 and "--goodput 'ttft:200 speed:3'" in err and "'speed' is no goodput key" in err and
      all(k in err for k in ("time_to_second_token", "output_token_throughput_per_user", "inter_token_latency",
                             "e2el", "ttst")),
      "an unknown --goodput key: exit 2, the accepted keys named", err)
rc, out, err = run(G + ["--goodput", "output_token_throughput_per_user:fast"])
check(rc == 2 and "tokens per second" in err, "a per-user throughput bound needs tokens/s", err)
# vllm-bench: vLLM's --goodput takes its SLOs as separate words.
V = ["vllm-bench", "--mock", "-q", "--num-prompts", "6", "--random-input-len", "16", "--random-output-len", "4",
     "--save-result", "--result-dir", tmp, "--result-filename", "vg.json"]
vjs = os.path.join(tmp, "vg.json")
for words, good in [(["ttft:100000", "tpot:100000"], True), (["ttft:100000", "e2el:0.001"], False),
                    (["ttft:100000", "tpot:100000", "e2el:100000"], True)]:
    rc, out, err = run(V + ["--goodput"] + words)
    res = json.load(open(vjs)) if rc == 0 and os.path.exists(vjs) else {}
    gp, thr = res.get("request_goodput"), res.get("request_throughput")
    check(rc == 0 and gp is not None and thr and (abs(gp - thr) <= 1e-9 * thr if good else gp == 0),
          "vllm-bench --goodput %s: goodput %s" % (" ".join(words), "= throughput" if good else "0"),
          json.dumps([gp, thr]) + err[-300:])
    os.path.exists(vjs) and os.unlink(vjs)
rc, out, err = run(V + ["--goodput", "ttft:30", "speed:10"])
check(rc == 2 and "speed" in err and all(k in err for k in ("ttft", "tpot", "e2el")),
      "vllm-bench: an unknown --goodput key, exit 2, vLLM's keys named", err)

subprocess.run(["rm", "-rf", tmp])
done()
