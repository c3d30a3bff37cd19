#!/usr/bin/env python3
"""The time series of a level (docs/metrics.md "Time series") against a
stand-alone mock whose own Prometheus endpoint is the --metrics-url: every
slice in --json recomputes from records.jsonl by a reader written from the
definition alone (to 1e-9); the mock's queue and KV-cache series have
samples inside the level on the same clock, and the queue the mock reported
grew (its batch is 2, the load above it); AIPerf's timeslice files carry
the same slices; report.html holds the timeline.  Prints TAP."""
import csv
import http.server
import json
import math
import os
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tp_check import SCALE, check, done, free_port, wait_port  # noqa: E402

TOKPERF = os.path.abspath(sys.argv[1])
WORDS = os.environ["TP_WORDS_MODEL"]
tmp = tempfile.mkdtemp(prefix="tp_series_")

grpc_port, http_port = free_port(), free_port()
mock = subprocess.Popen([TOKPERF, "mock", "--host", "127.0.0.1", "--grpc-port", str(grpc_port), "--http-port",
                         str(http_port), "--ttft-ms", "5", "--itl-ms", "4", "--max-batch", "2",
                         "--prefix-cache-blocks", "64", "--output-tokens", "24", "-q"],
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
check(wait_port(http_port, 10 * SCALE), "the mock listens on its HTTP port")
METRICS = "http://127.0.0.1:%d/metrics" % http_port


class Dcgm(http.server.BaseHTTPRequestHandler):
    """The DCGM exporter's page for two GPUs: utilization 10 + k and 30 + k
    at the k-th scrape (so each sample says which scrape it was), memory
    and power fixed; and SGLang's queue, k + 5 over two ranks."""
    served = 0

    def do_GET(self):
        k = Dcgm.served
        Dcgm.served += 1
        body = ("# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %%).\n# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
                'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-0",Hostname="h"} %d\n'
                'DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-1",Hostname="h"} %d\n'
                "# TYPE DCGM_FI_DEV_FB_USED gauge\n"
                'DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-0"} 1000\nDCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-1"} 2000\n'
                "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
                'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-0"} 100.5\n'
                'DCGM_FI_DEV_POWER_USAGE{gpu="1",UUID="GPU-1"} 200.25\n'
                # SGLang's gauges from two data-parallel ranks, on the same
                # page to check their names: queues add, usage averages.
                "# TYPE sglang:num_queue_reqs gauge\n"
                'sglang:num_queue_reqs{model_name="m",dp_rank="0"} %d\n'
                'sglang:num_queue_reqs{model_name="m",dp_rank="1"} 5\n'
                'sglang:token_usage{model_name="m",dp_rank="0"} 0.25\n'
                'sglang:token_usage{model_name="m",dp_rank="1"} 0.75\n') % (10 + k, 30 + k, k)
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a):
        pass


dcgm = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Dcgm)
threading.Thread(target=dcgm.serve_forever, daemon=True).start()
GPU_METRICS = "http://127.0.0.1:%d/metrics" % dcgm.server_address[1]


def run(name, extra):
    art = os.path.join(tmp, name)
    out = os.path.join(tmp, name + ".json")
    cmd = [TOKPERF, "profile", "-u", "127.0.0.1:%d" % http_port, "-m", "vllm_model", "-q",
           "--service-kind", "openai", "--endpoint-type", "chat", "--streaming", "--artifact-dir", art,
           "--json", out, "--tokenizer", WORDS, "--metrics-url", METRICS, "--metrics-interval", "100ms",
           "--request-rate", "40", "--duration", "3s", "--warmup-request-count", "0"] + extra
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120 * SCALE)
    check(p.returncode == 0, "%s: the run ends with exit 0" % name, p.stderr[-2000:])
    doc, recs = None, []
    if p.returncode == 0:
        with open(out) as f:
            doc = json.load(f)
        with open(os.path.join(art, "records.jsonl")) as f:
            recs = [json.loads(line) for line in f]
    return art, doc, recs


def pct(v, p):
    v = sorted(v)
    rank = p / 100.0 * (len(v) - 1)
    lo = int(math.floor(rank))
    if lo >= len(v) - 1:
        return v[-1]
    return v[lo] + (v[lo + 1] - v[lo]) * (rank - lo)


def slices(recs, t0, w):
    """The slices by the definition in docs/metrics.md "Time series"."""
    rs = [r for r in recs if not r["warmup"] and r["sent_ns"]]
    end = max(max(r[k] or 0 for k in ("sent_ns", "first_token_ns", "last_token_ns", "done_ns")) for r in rs)
    end = max(end, t0)
    span = end - t0
    n = max(1, -(-span // w))

    def idx(t):
        return 0 if t <= t0 else min((t - t0) // w, n - 1)

    def idx_d(t):  # a token placed between two stamps: the same floor, in floats
        i = math.floor((t - float(t0)) / float(w))
        return 0 if not i > 0 else min(i, n - 1)

    out = [{"completed": 0, "failed": 0, "sent": 0, "first_tokens": 0, "output_tokens": 0.0,
            "input_tokens": 0.0, "ttft": [], "itl": [], "lag": [], "busy": 0} for _ in range(n)]
    for r in rs:
        s0, d = r["sent_ns"], r["done_ns"]
        if d and d >= s0:  # time in flight, split over the slices
            a, b = max(s0, t0), min(d, end)
            for i in range(idx(a), n):
                lo, hi = t0 + i * w, (end if i == n - 1 else t0 + (i + 1) * w)
                out[i]["busy"] += max(0, min(b, hi) - max(a, lo))
                if b <= hi:
                    break
        if not r["ok"]:
            out[idx(d or s0)]["failed"] += 1
            continue
        if d:
            out[idx(d)]["completed"] += 1
        si = out[idx(s0)]
        si["sent"] += 1
        si["input_tokens"] += r["input_tokens"]
        if r["planned_ns"] and s0 >= r["planned_ns"]:
            si["lag"].append((s0 - r["planned_ns"]) / 1e6)
        f = r["first_token_ns"]
        if not f:
            continue
        fi = out[idx(f)]
        fi["first_tokens"] += 1
        fi["ttft"].append((f - s0) / 1e6)
        last = r["last_token_ns"] or f
        m = r["output_tokens"]
        if m >= 2 and last > f:
            fi["itl"].append((last - f) / 1e6 / (m - 1))
        # Tokens placed evenly over the text's span: token k of m at
        # f + k (last - f) / (m - 1).
        if m == 1 or (m > 1 and last <= f):
            out[idx(f)]["output_tokens"] += m
        elif m > 1:
            step = (float(last) - float(f)) / (m - 1)
            for k in range(m):
                out[idx_d(float(f) + k * step)]["output_tokens"] += 1
    for i, s in enumerate(out):
        wi = (span if i == n - 1 else (i + 1) * w) - i * w
        s["start_s"], s["end_s"] = i * w / 1e9, (span if i == n - 1 else (i + 1) * w) / 1e9
        s["in_flight_avg"] = s["busy"] / wi if wi else None
    return out


def close(a, b):
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


# 1. Given --slice-duration: the slices, the server series, AIPerf's files.
art, doc, recs = run("sliced", ["--slice-duration", "0.5"])
if doc:
    lv = doc["levels"][0]
    ts = lv["time_series"]
    check(ts["slice_s"] == 0.5, "slice width 0.5 s", ts["slice_s"])
    want = slices(recs, ts["start_ns"], 500000000)
    got = ts["slices"]
    check(len(got) == len(want) and len(got) >= 6, "%d slices, as many as the records give" % len(got),
          (len(got), len(want)))
    bad = []
    for i, (g, s) in enumerate(zip(got, want)):
        pairs = [("start_s", s["start_s"]), ("end_s", s["end_s"]), ("completed", s["completed"]),
                 ("failed", s["failed"]), ("sent", s["sent"]), ("first_tokens", s["first_tokens"]),
                 ("output_tokens", s["output_tokens"]), ("input_tokens", s["input_tokens"]),
                 ("in_flight_avg", s["in_flight_avg"]),
                 ("ttft_p50_ms", pct(s["ttft"], 50) if s["ttft"] else None),
                 ("ttft_p99_ms", pct(s["ttft"], 99) if s["ttft"] else None),
                 ("itl_p50_ms", pct(s["itl"], 50) if s["itl"] else None),
                 ("itl_p99_ms", pct(s["itl"], 99) if s["itl"] else None),
                 ("send_lag_p99_ms", pct(s["lag"], 99) if s["lag"] else None)]
        w = s["end_s"] - s["start_s"]
        pairs.append(("output_token_throughput_tps", s["output_tokens"] / w if w > 0 else None))
        for k, v in pairs:
            if not close(g[k], v):
                bad.append("slice %d %s: %r, recomputed %r" % (i, k, g[k], v))
    check(not bad, "every figure of every slice recomputes from records.jsonl to 1e-9", "\n".join(bad))
    check(sum(g["completed"] for g in got) == lv["succeeded"] and sum(g["sent"] for g in got) == lv["succeeded"],
          "the slices' completions and sends add up to the level's successes",
          (sum(g["completed"] for g in got), lv["succeeded"]))
    check(abs(sum(g["output_tokens"] for g in got) - sum(r["output_tokens"] for r in recs if r["ok"])) < 1e-9,
          "the slices' output tokens add up to the records'")
    check(any(g["in_flight_avg"] > 1.5 for g in got), "requests overlap: some slice has over 1.5 in flight")

    # The mock's own series, on the level's clock.
    sv = ts["server"]
    dur = got[-1]["end_s"]
    for name in ("vllm_requests_waiting", "vllm_requests_running", "vllm_kv_cache_usage"):
        pts = sv.get(name, [])
        inside = [p for p in pts if 0 <= p[0] <= dur]
        check(len(inside) >= 10, "%s: %d samples inside the level (0..%.2f s)" % (name, len(inside), dur),
              pts[:5])
        check(all(b[0] > a[0] for a, b in zip(pts, pts[1:])), "%s: sample times increase" % name)
    waiting = [v for _, v in sv.get("vllm_requests_waiting", [])]
    running = [v for _, v in sv.get("vllm_requests_running", [])]
    check(waiting and max(waiting) >= 1, "the mock's queue grew beyond its batch of 2 (max %r)" %
          (max(waiting) if waiting else None))
    check(running and max(running) <= 2, "the mock never ran more than its batch of 2 (max %r)" %
          (max(running) if running else None))
    kv = [v for _, v in sv.get("vllm_kv_cache_usage", [])]
    check(kv and max(kv) > 0 and max(kv) <= 1, "the mock's KV-cache usage moved, within 0..1 (max %r)" %
          (max(kv) if kv else None))
    check(ts["server_units"].get("vllm_kv_cache_usage") == "fraction", "series carry their units")
    n_samples = len(sv.get("vllm_requests_waiting", []))
    check(n_samples == lv["metrics_scrapes"], "a sample per successful scrape (%d, %d scrapes)" %
          (n_samples, lv["metrics_scrapes"]))

    # AIPerf's timeslice files: the same slices under AIPerf's keys.
    adir = os.path.join(art, "request_rate40.0", "aiperf")
    jpath = os.path.join(adir, "profile_export_aiperf_timeslices.json")
    cpath = os.path.join(adir, "profile_export_aiperf_timeslices.csv")
    check(os.path.exists(jpath) and os.path.exists(cpath), "AIPerf's timeslice JSON and CSV are written", adir)
    if os.path.exists(jpath):
        with open(jpath) as f:
            aj = json.load(f)
        tl = aj["timeslices"]
        check(len(tl) == len(got) and [t["timeslice_index"] for t in tl] == list(range(len(got))),
              "one timeslice per slice, indexed from 0")
        ok = all(close(t["time_to_first_token"]["p50"], g["ttft_p50_ms"]) for t, g in zip(tl, got)
                 if "time_to_first_token" in t) and \
            all(("time_to_first_token" in t) == (g["ttft_p50_ms"] is not None) for t, g in zip(tl, got))
        check(ok, "time_to_first_token per timeslice is the slice's TTFT")
        check(all(t["request_count"]["avg"] == g["completed"] + g["failed"] for t, g in zip(tl, got)),
              "request_count per timeslice: the requests that ended in it")
    if os.path.exists(cpath):
        with open(cpath, newline="") as f:
            rows = list(csv.reader(f))
        check(rows[0] == ["Timeslice", "Metric", "Unit", "Stat", "Value"], "the CSV's header is AIPerf's", rows[:1])
        p50 = {int(r[0]): float(r[4]) for r in rows[1:] if r[1] == "Time to First Token" and r[3] == "p50"}
        check(p50 and all(abs(p50[i] - got[i]["ttft_p50_ms"]) <= 0.005 for i in p50),
              "the CSV's TTFT p50 rows match the slices (to its two decimals)")

    # report.html: the level's timeline with the mock's queue and KV usage.
    with open(os.path.join(art, "report.html")) as f:
        html = f.read()
    check('data-chart="series-0"' in html, "report.html has the level's timeline")
    for s in ('data-series="TTFT p50"', 'data-series="TTFT p99"', 'data-series="output tokens/s"',
              'data-series="vllm_requests_waiting"', 'data-series="vllm_kv_cache_usage"'):
        check(s in html, "the timeline draws %s" % s)

# 2. Without --slice-duration: 1 s slices in --json, no AIPerf timeslice
# files; a second endpoint, the DCGM exporter's, scraped beside the mock's.
art, doc, recs = run("default", ["--gpu-metrics-url", GPU_METRICS])
if doc:
    lv = doc["levels"][0]
    ts = lv["time_series"]
    util = ts["server"].get("dcgm_gpu_utilization", [])
    check(len(util) >= 10 and all(0 <= t <= ts["slices"][-1]["end_s"] + 1 for t, _ in util),
          "the DCGM exporter's utilization: %d samples on the level's clock" % len(util), util[:5])
    ks = [v - 20 for _, v in util]
    check(ks and all(k == int(k) for k in ks) and all(b > a for a, b in zip(ks, ks[1:])) and
          ks[-1] < Dcgm.served, "each sample is the mean over the 2 GPUs of one scrape, in order", ks[:10])
    check(all(v == 3000 for _, v in ts["server"].get("dcgm_gpu_memory_used", [[0, 0]])) and
          all(v == 300.75 for _, v in ts["server"].get("dcgm_gpu_power", [[0, 0]])),
          "memory and power are summed over the GPUs")
    check(ts["server_units"].get("dcgm_gpu_utilization") == "%" and
          ts["server_units"].get("dcgm_gpu_memory_used") == "MiB", "DCGM's units")
    sq = ts["server"].get("sglang_requests_waiting", [])
    check(sq and all(v - 5 == k for (_, v), k in zip(sq, ks)) and
          all(v == 0.5 for _, v in ts["server"].get("sglang_token_usage", [[0, 0]])),
          "SGLang's queue (summed over ranks) and token usage (averaged) by their names", sq[:5])
    sm = lv["server_metrics"]
    check("dcgm_gpu_utilization" in sm and "vllm_requests_waiting" in sm,
          "the level's summary has both endpoints' figures", sorted(sm))
    check(len(ts["server"].get("vllm_requests_waiting", [])) >= 10, "the mock's series are still there")
    check(ts["slice_s"] == 1 and len(ts["slices"]) >= 3, "default: 1 s slices", (ts["slice_s"], len(ts["slices"])))
    adir = os.path.join(art, "request_rate40.0", "aiperf")
    check(os.path.isdir(adir) and not [f for f in os.listdir(adir) if "timeslices" in f],
          "default: no AIPerf timeslice files (AIPerf writes them only when asked)", os.listdir(adir))

dcgm.shutdown()
mock.terminate()
try:
    mock.wait(10 * SCALE)
except subprocess.TimeoutExpired:
    mock.kill()
done()
