#!/usr/bin/env python3
"""Distributed runs on this machine (issue #10, docs/scale-out.md): N ranks
under mpirun share one run against one mock server.

- Closed loop: the concurrency is split with the remainder spread (7 over 2
  ranks: 4 + 3; 10 over 4: 3 3 2 2), and the mock's own count of open
  streams reaches the total and never passes it.
- Open loop: at 2,000 requests/s the mock's log of true arrival times shows
  the ranks' union at that rate within 0.5%, and the ranks in step.
- The merged report's percentiles and throughput equal those recomputed here
  from the merged per-request records (every rank's, with a rank column).
- Requests are numbered across ranks: no two ranks send the same one.
- A rank that cannot reach the server, and a rank killed mid-level, are
  reported by rank and host; the others' results are kept and the levels
  marked incomplete.
- Options a distributed run cannot honour are refused up front.

usage: test_mpi.py TOKPERF MOCK_HARNESS MPIRUN.  Prints TAP."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mpi_common as mc  # noqa: E402

TOKPERF, HARNESS = sys.argv[1], sys.argv[2]
MPIRUN = mc.mpirun_or_skip(sys.argv[3] if len(sys.argv) > 3 else None)
SCALE = mc.SCALE
tap = mc.Tap()
tmp = tempfile.mkdtemp(prefix="tp_mpi_")
ENV = mc.mpi_env()
FIGURES = []  # measured figures, printed at the end for the record


def mpirun(np_or_apps, args, mpi_args=(), timeout=120, name="run"):
    """Runs tokperf profile under mpirun.  np_or_apps is a rank count, or a
    list of (ranks, extra args) for an MPMD launch.  Returns (returncode,
    stdout, stderr, JSON document, records)."""
    js = os.path.join(tmp, name + ".json")
    rec = os.path.join(tmp, name + ".jsonl")
    for p in (js, rec):
        if os.path.exists(p):
            os.unlink(p)
    base = [TOKPERF, "profile", "-q", "--no-artifacts", "--json", js, "--records", rec] + list(args)
    cmd = [MPIRUN, "--oversubscribe"] + list(mpi_args)
    if isinstance(np_or_apps, int):
        cmd += ["-np", str(np_or_apps)] + base
    else:
        for i, (n, extra) in enumerate(np_or_apps):
            cmd += ([":"] if i else []) + ["-np", str(n)] + base + list(extra)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout * SCALE, env=ENV)
    return p.returncode, p.stdout, p.stderr, mc.load_json(js), mc.read_jsonl(rec)


def url(mock):
    return "127.0.0.1:%d" % mock.grpc_port


def check_figures(what, level, recs):
    bad = mc.compare_figures(level, recs)
    tap.check(not bad, "%s: the merged percentiles and throughput equal those recomputed from the per-rank "
              "records" % what, "\n".join("%s: report %r, records %r" % b for b in bad[:10]))


# ---- closed loop -------------------------------------------------------------------

def closed_loop(np, conc, shares):
    what = "np=%d, concurrency %d" % (np, conc)
    mock = mc.Mock(HARNESS, **mc.FAST_MOCK)
    try:
        rc, out, err, doc, recs = mpirun(np, ["-u", url(mock), "--concurrency", str(conc), "--request-count",
                                              str(40 * conc), "--output-tokens-mean", "8", "--num-prompts", "5000"],
                                         name="closed%d" % np)
        st = mock.stats()
    finally:
        mock.stop()
    if not tap.check(rc == 0 and doc, "%s: the run completes (exit 0)" % what, err[-1500:]):
        return
    lv = doc["levels"][0]
    mp = lv.get("mpi") or {}
    per = mp.get("per_rank", [])
    tap.equal([r["concurrency"] for r in per], shares,
              "%s: the concurrency is split %s (the remainder to the lowest ranks)" % (what, "+".join(map(str, shares))))
    tap.check(sum(r["concurrency"] for r in per) == conc, "%s: the shares sum to %d exactly" % (what, conc))
    tap.check(st["max_active_streams"] == conc,
              "%s: the mock's own count of open streams reaches %d and never passes it" % (what, conc),
              "mock max_active_streams %r" % st["max_active_streams"])
    FIGURES.append("%s: mock max streams %d, report max in flight %d" % (what, st["max_active_streams"],
                                                                         lv["max_in_flight"]))
    tap.check(lv["max_in_flight"] == conc and all(r["max_in_flight"] == s for r, s in zip(per, shares)),
              "%s: each rank held exactly its share in flight" % what,
              [(r["rank"], r["max_in_flight"]) for r in per])
    tap.check(st["requests"] == lv["requests"] == 40 * conc and len(recs) == 40 * conc,
              "%s: %d requests in all: the server got them, the report counts them, the records hold them"
              % (what, 40 * conc), "mock %r, report %r, records %d" % (st["requests"], lv["requests"], len(recs)))
    by_rank = {}
    for r in recs:
        by_rank.setdefault(r["rank"], []).append(r)
    tap.check(sorted(by_rank) == list(range(np)) and
              all(len(by_rank[k]) == per[k]["requests"] for k in range(np)),
              "%s: every rank's records are in, with a rank column" % what,
              {k: len(v) for k, v in by_rank.items()})
    counts = [len(by_rank.get(k, [])) for k in range(np)]
    tap.check(all(abs(c / (40 * conc) - s / conc) <= 1.0 / (40 * conc) + 1e-9 for c, s in zip(counts, shares)),
              "%s: the request count is split in proportion to the shares (%s)" % (what, counts))
    seqs = [r["seq"] for r in recs]
    prompts = [r["prompt_index"] for r in recs]
    tap.check(len(set(seqs)) == len(seqs) and all(r["seq"] % np == r["rank"] for r in recs),
              "%s: request numbers are unique across ranks (rank k sends k, k+N, ...)" % what)
    tap.check(len(set(prompts)) == len(prompts) and
              not any(set(p["prompt_index"] for p in by_rank[a]) & set(p["prompt_index"] for p in by_rank[b])
                      for a in by_rank for b in by_rank if a < b),
              "%s: no two ranks send the same prompt (prompts by index)" % what)
    ids = [r["id"] for r in recs]
    tap.check(len(set(ids)) == len(ids), "%s: request ids are unique across ranks" % what)
    check_figures(what, lv, recs)
    offs = [(r["clock_offset_us"], r["clock_uncertainty_us"]) for r in per[1:]]
    # One machine, one CLOCK_MONOTONIC: the true offset is 0, so every
    # estimate must bracket it.
    tap.check(all(abs(o) <= u + 1.0 for o, u in offs),
              "%s: the measured clock offsets bracket 0 on one machine (%s)" %
              (what, ", ".join("%+.1f+/-%.1f us" % x for x in offs)))
    FIGURES.append("%s: clock offsets %s" % (what, ", ".join("%+.2f+/-%.2f us" % x for x in offs)))
    tap.check("Ranks (MPI): %d of %d reporting" % (np, np) in out and "INCOMPLETE" not in out,
              "%s: the text report lists the ranks and their clocks" % what)


closed_loop(2, 7, [4, 3])
closed_loop(4, 10, [3, 3, 2, 2])


# ---- open loop -------------------------------------------------------------------

def open_loop(np, rate, secs):
    what = "np=%d, %d requests/s" % (np, rate)
    log = os.path.join(tmp, "mock_rate%d.jsonl" % np)
    mock = mc.Mock(HARNESS, log_path=log, **mc.FAST_MOCK)
    try:
        rc, out, err, doc, recs = mpirun(np, ["-u", url(mock), "--request-rate", str(rate), "--arrival", "constant",
                                              "--duration", "%ds" % secs, "--output-tokens-mean", "2",
                                              "--num-prompts", "100000"], name="open%d" % np)
    finally:
        mock.stop()
    if not tap.check(rc == 0 and doc, "%s: the run completes (exit 0)" % what, err[-1500:]):
        return
    lv = doc["levels"][0]
    arrivals = {}
    for e in mc.read_jsonl(log):
        if e.get("ev") == "request":
            arrivals[e["id"]] = e["t_ns"]
    measured = [r for r in recs if not r["warmup"]]
    t = sorted(arrivals[r["id"]] for r in measured if r["id"] in arrivals)
    got = (len(t) - 1) / ((t[-1] - t[0]) / 1e9) if len(t) > 1 else 0
    FIGURES.append("%s: %d requests, rate at the mock %.2f/s (%+.3f%%), report's achieved send rate %.2f/s"
                   % (what, len(t), got, 100 * (got / rate - 1), lv["achieved_send_rate_rps"]))
    tap.check(len(t) == len(measured) and len(t) >= rate * secs * 0.99,
              "%s: the mock logged every one of the %d measured requests" % (what, len(measured)),
              "logged %d of %d" % (len(t), len(measured)))
    tap.check(abs(got / rate - 1) <= 0.005,
              "%s: the union's rate at the server is within 0.5%% of the target (%.2f/s)" % (what, got))
    tap.check(abs(lv["achieved_send_rate_rps"] / rate - 1) <= 0.005,
              "%s: the report's achieved send rate is within 0.5%% (%.2f/s)" % (what, lv["achieved_send_rate_rps"]))
    # In step: each rank's typical delay from the merged plan to the true
    # arrival is the same whichever rank sent, so the ranks' time lines
    # agree; a rank started late would show its lag here.
    med = {}
    for k in range(np):
        lags = sorted(arrivals[r["id"]] - r["planned_ns"] for r in measured if r["rank"] == k and r["id"] in arrivals)
        med[k] = lags[len(lags) // 2] / 1e3 if lags else float("nan")
    spread = max(med.values()) - min(med.values())
    FIGURES.append("%s: median plan-to-arrival per rank %s us (spread %.1f us)" %
                   (what, ", ".join("%.1f" % med[k] for k in range(np)), spread))
    tap.check(spread <= 500, "%s: the ranks are in step: their median plan-to-arrival times agree within 0.5 ms "
              "(spread %.1f us)" % (what, spread), med)
    seqs = [r["seq"] for r in recs]
    tap.check(len(set(seqs)) == len(seqs) and all(r["seq"] % np == r["rank"] for r in recs) and
              sorted(seqs) == list(range(len(seqs))),
              "%s: rank k took arrivals k, k+N, ... of the one schedule: together, every arrival once" % what)
    planned = sorted(r["planned_ns"] for r in measured)
    gaps = set(b - a for a, b in zip(planned, planned[1:]))
    tap.check(all(abs(g - 1e9 / rate) <= 1 for g in gaps),
              "%s: on the merged time line the ranks' planned arrivals interleave into one even schedule" % what,
              sorted(gaps)[:5])
    check_figures(what, lv, recs)


open_loop(2, 2000, 4)
open_loop(4, 2000, 4)


# ---- a rank that cannot reach the server ----------------------------------------------

mock = mc.Mock(HARNESS, **mc.FAST_MOCK)
dead = "127.0.0.1:%d" % mc.free_port()
try:
    # MPMD: rank 1 alone is pointed at a port nobody listens on.
    rc, out, err, doc, recs = mpirun([(1, ["-u", url(mock)]), (1, ["-u", dead])],
                                     ["--concurrency", "4", "--request-count", "40", "--output-tokens-mean", "4"],
                                     name="unreachable")
finally:
    mock.stop()
lv = doc["levels"][0] if doc else {}
mp = lv.get("mpi") or {}
per = mp.get("per_rank", [{}, {}])
host = per[1].get("host", "?") if len(per) > 1 else "?"
tap.check(rc == 1 and doc is not None, "unreachable server on rank 1: the run ends with exit 1 and a report",
          "exit %r; %s" % (rc, err[-800:]))
tap.check(mp.get("complete") is False and mp.get("ranks_reporting") == 1,
          "unreachable server on rank 1: the level is marked incomplete, 1 of 2 ranks reporting")
tap.check(len(per) > 1 and per[1].get("ok") is False and "cannot connect" in (per[1].get("failure") or "") and
          dead in (per[1].get("failure") or ""),
          "unreachable server on rank 1: the report names rank 1, its host and why", per[1:] if per else None)
tap.check(lv.get("requests") == 20 and len(recs) == 20 and all(r["rank"] == 0 for r in recs) and
          lv.get("succeeded") == 20,
          "unreachable server on rank 1: rank 0's own share is measured and kept (20 requests)",
          "requests %r, records %d" % (lv.get("requests"), len(recs)))
tap.check(("rank 1 on %s: cannot connect" % host) in err,
          "unreachable server on rank 1: rank 1 says why on stderr, prefixed with its rank and host", err[-800:])
tap.check("INCOMPLETE" in out and ("rank 1 on %s: concurrency 2, FAILED: could not start" % host) in out and
          "tokperf: incomplete: 1 of 2 ranks failed" in err,
          "unreachable server on rank 1: the text report and the exit gate say the level is incomplete")
FIGURES.append("unreachable: %s" % (per[1].get("failure") if len(per) > 1 else None))


# ---- a rank killed mid-level ----------------------------------------------------------

mock = mc.Mock(HARNESS, **mc.FAST_MOCK)
js = os.path.join(tmp, "crash.json")
rec = os.path.join(tmp, "crash.jsonl")
cmd = [MPIRUN, "--oversubscribe", "--enable-recovery", "-np", "3", TOKPERF, "profile", "-q", "--no-artifacts",
       "-u", url(mock), "--concurrency", "6,6", "--duration", "2s", "--output-tokens-mean", "4", "--json", js,
       "--records", rec, "--mpi-timeout", "10s"]
t0 = time.monotonic()
proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
victim = None
try:
    # Once the first level is under way (rank 0's records are flowing), rank
    # 2 is killed outright.
    deadline = time.monotonic() + 30 * SCALE
    while time.monotonic() < deadline and len(mc.read_jsonl(rec)) < 20 and proc.poll() is None:
        time.sleep(0.05)
    victim = mc.child_pid(proc.pid, 2)
    if victim:
        os.kill(victim, signal.SIGKILL)
    killed_at = time.monotonic() - t0
    out, err = proc.communicate(timeout=90 * SCALE)
except subprocess.TimeoutExpired:
    proc.kill()
    out, err = proc.communicate()
finally:
    mock.stop()
took = time.monotonic() - t0
doc = mc.load_json(js)
recs = mc.read_jsonl(rec)
tap.check(victim is not None, "killed rank: rank 2's process was found and sent SIGKILL")
tap.check(doc is not None and len(doc["levels"]) == 2,
          "killed rank: rank 0 finishes both levels and writes its report (%.1f s)" % took, err[-1500:])
if doc:
    l1, l2 = (doc["levels"][i].get("mpi") or {} for i in (0, 1))
    f1 = l1["per_rank"][2]["failure"] or ""
    f2 = l2["per_rank"][2]["failure"] or ""
    FIGURES.append("killed rank: level 1: %s; level 2: %s" % (f1, f2))
    tap.check(not l1["complete"] and l1["ranks_reporting"] == 2 and "died" in f1,
              "killed rank: level 1 is incomplete and names rank 2 as died", f1)
    tap.check(not l2["complete"] and l2["ranks_reporting"] == 2 and "out since level 1" in f2,
              "killed rank: level 2 runs on with ranks 0 and 1, marked incomplete", f2)
    ranks = [sorted(set(r["rank"] for r in recs if r["level"] == lv)) for lv in (0, 1)]
    tap.check(ranks == [[0, 1], [0, 1]] and doc["levels"][0]["succeeded"] > 0,
              "killed rank: the live ranks' records are kept in both levels", ranks)
    # Under --enable-recovery mpirun exits 0 whatever the ranks return
    # (Open MPI 4.1): the verdict is rank 0's gate line and its report.
    tap.check("tokperf: incomplete: 1 of 3 ranks failed" in err and "rank 2 on" in err,
              "killed rank: rank 0's exit gate says the levels are incomplete, naming rank 2",
              "exit %r; %s" % (proc.returncode, err[-600:]))
    tap.check(took < killed_at + 15 * SCALE, "killed rank: nothing hangs: done %.1f s after the kill"
              % (took - killed_at))


# ---- refused up front, artifacts, and the MPI build without mpirun ---------------------------

rc, out, err, doc, recs = mpirun(2, ["--mock", "--concurrency", "2", "--request-count", "4"], name="mock")
tap.check(rc == 2 and "--mock runs the server inside one process" in err,
          "--mock under 2 ranks is refused with what to do instead (exit 2)", err[-600:])
rc, out, err, doc, recs = mpirun(2, ["-u", "127.0.0.1:1", "--concurrency", "2", "--measurement-interval", "1s"],
                                 name="windows")
tap.check(rc == 2 and "stability windows" in err, "stability windows under MPI are refused (exit 2)", err[-600:])

mock = mc.Mock(HARNESS, **mc.FAST_MOCK)
art = os.path.join(tmp, "art")
try:
    p = subprocess.run([MPIRUN, "--oversubscribe", "-np", "2", TOKPERF, "profile", "-q", "-u", url(mock),
                        "--concurrency", "4", "--request-count", "32", "--output-tokens-mean", "4",
                        "--artifact-dir", art], capture_output=True, text=True, timeout=120 * SCALE, env=ENV)
    single = os.path.join(tmp, "single.jsonl")
    sjs = os.path.join(tmp, "single.json")
    env1 = {k: v for k, v in ENV.items() if not k.startswith(("OMPI_", "PMIX_"))}
    p1 = subprocess.run([TOKPERF, "profile", "-q", "--no-artifacts", "-u", url(mock), "--concurrency", "4",
                         "--request-count", "8", "--output-tokens-mean", "4", "--records", single, "--json", sjs],
                        capture_output=True, text=True, timeout=120 * SCALE, env=env1)
finally:
    mock.stop()
pe = mc.load_json(os.path.join(art, "profile_export.json"))
reqs = pe["experiments"][0]["requests"] if pe and pe.get("experiments") else []
arecs = mc.read_jsonl(os.path.join(art, "records.jsonl"))
tap.check(p.returncode == 0 and len(reqs) == 32 and sorted(set(q.get("rank") for q in reqs)) == [0, 1],
          "artifacts: the profile export holds both ranks' requests, each with its rank",
          "exit %r, %d requests; %s" % (p.returncode, len(reqs), p.stderr[-400:]))
tap.check(len(arecs) == 32 and sorted(set(r["rank"] for r in arecs)) == [0, 1],
          "artifacts: records.jsonl holds every rank's requests with a rank column")
srecs = mc.read_jsonl(single)
sdoc = mc.load_json(sjs)
tap.check(p1.returncode == 0 and len(srecs) == 8 and not any("rank" in r for r in srecs) and sdoc and
          "mpi" not in sdoc["levels"][0],
          "without mpirun the MPI build runs one process, with no rank column and no mpi figures", p1.stderr[-400:])

for line in FIGURES:
    tap.diag(line)
sys.exit(tap.finish())
