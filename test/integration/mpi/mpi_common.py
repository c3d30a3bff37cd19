"""Shared pieces of the distributed-run tests (docs/scale-out.md).

The tests start the mock server once per check (test/integration/mock's
mock_harness: the mock through the public API, with its counters on request
and its log of true arrival times), run `mpirun ... tokperf profile` against
it, and hold the merged report against what the server counted and against
statistics recomputed here from the per-request records.  TAP comes from
../interop/interop_common.py.
"""

import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(HERE, "..", "interop"))
sys.path.insert(0, os.path.join(HERE, "..", "mock"))
import interop_common as ic  # noqa: E402
import mock_common as mc  # noqa: E402

Tap = ic.Tap
SCALE = ic.time_scale()
skip_all = ic.skip_all
free_port = ic.free_port

# A mock fast and flat enough that the client, not the server, sets the
# pace: no prefill cost, no slowdown with more sequences, no batch limit.
FAST_MOCK = {"ttft_ms": 5, "itl_ms": 2, "prefill_us_per_token": 0, "prefill_queue_ms": 0,
             "itl_us_per_seq": 0, "max_batch": 4096, "http_port": -1}


def mpirun_or_skip(path):
    if not path or not os.access(path, os.X_OK):
        skip_all("mpirun not found (Debian package openmpi-bin)")
    return path


def mpi_env():
    """The environment for mpirun: Open MPI refuses root unless told."""
    env = dict(os.environ)
    if os.geteuid() == 0:
        env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
        env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    return env


# One mock_harness child (optionally inside a network namespace: the
# command prefix), its ports, counters and log: the mock tests' harness.
Mock = mc.Harness


def read_jsonl(path):
    if not os.path.exists(path):
        return []
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                out.append(json.loads(line))
    return out


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def percentile(sorted_vals, p):
    """docs/metrics.md: linear interpolation between the closest ranks."""
    n = len(sorted_vals)
    rank = p / 100.0 * (n - 1)
    lo = int(rank)
    if lo >= n - 1:
        return sorted_vals[n - 1]
    return sorted_vals[lo] + (sorted_vals[lo + 1] - sorted_vals[lo]) * (rank - lo)


def stat(values):
    """The report's statistics of a list, computed the way docs/metrics.md
    defines them (sorted, summed in order, population deviation)."""
    v = sorted(values)
    n = len(v)
    mean = sum(v) / n
    mean = min(max(mean, v[0]), v[-1])
    var = sum((x - mean) ** 2 for x in v) / n
    out = {"n": n, "avg": mean, "min": v[0], "max": v[-1], "std": var ** 0.5}
    for p in (25, 50, 75, 90, 95, 99):
        out["p%d" % p] = percentile(v, p)
    return out


def close(a, b, rel=1e-12, abs_=1e-9):
    return abs(a - b) <= max(abs_, rel * max(abs(a), abs(b)))


def recompute(recs):
    """Level figures from the merged per-request records: the statistics
    tp_stats.c computes, recomputed independently."""
    measured = [r for r in recs if not r["warmup"]]
    ok = [r for r in measured if r["ok"]]
    ttft = [(r["first_token_ns"] - r["sent_ns"]) / 1e6 for r in ok if r["first_token_ns"] >= r["sent_ns"] > 0]
    lat = [(r["done_ns"] - r["sent_ns"]) / 1e6 for r in ok if r["done_ns"] >= r["sent_ns"] > 0]
    sent = [r["sent_ns"] for r in measured if r["sent_ns"]]
    done = [r["done_ns"] for r in measured if r["done_ns"]]
    duration = (max(done) - min(sent)) / 1e9
    return {"time_to_first_token_ms": stat(ttft), "request_latency_ms": stat(lat),
            "request_throughput_rps": len(ok) / duration, "duration_s": duration,
            "achieved_send_rate_rps": (len(sent) - 1) / ((max(sent) - min(sent)) / 1e9),
            "requests": len(measured), "succeeded": len(ok)}


def compare_figures(level, recs):
    """Pairs (name, report's, recomputed) that differ beyond rounding."""
    mine = recompute(recs)
    bad = []
    for key in ("time_to_first_token_ms", "request_latency_ms"):
        for s, v in mine[key].items():
            got = level[key][s]
            if not close(got, v):
                bad.append(("%s.%s" % (key, s), got, v))
    for key in ("request_throughput_rps", "duration_s", "achieved_send_rate_rps", "requests", "succeeded"):
        if not close(level[key], mine[key]):
            bad.append((key, level[key], mine[key]))
    return bad


def child_pid(parent, rank, tries=50):
    """The pid of the given rank among mpirun's children (read from each
    child's environment); None when not found."""
    for _ in range(tries):
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % name) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                if ppid != parent:
                    continue
                with open("/proc/%s/environ" % name, "rb") as f:
                    env = f.read().split(b"\0")
                if b"OMPI_COMM_WORLD_RANK=%d" % rank in env:
                    return int(name)
            except (OSError, ValueError, IndexError):
                continue
        time.sleep(0.1)
    return None
