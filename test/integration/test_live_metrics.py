#!/usr/bin/env python3
"""Live metrics (--metrics-port, docs/metrics.md "Live metrics") against the
built-in mock: a two-level rate sweep is scraped over HTTP with urllib while
it runs; every scrape is read by a parser of the Prometheus text exposition
format 0.0.4 written here from the format's specification
(https://prometheus.io/docs/instrumenting/exposition_formats/), and by
python3-prometheus-client's parser too when it is installed.

Held: each scrape is well formed (TYPE before its samples, a family's
samples together, histogram buckets in increasing "le" with counts that
never fall, +Inf equal to _count); every counter and histogram series never
decreases from one scrape to the next; the level and target-rate gauges
follow the sweep; and the last scrape (taken during --metrics-hold) agrees
with what the run wrote: completed + failed equals the report's request
count, the TTFT, latency and send-lag buckets hold exactly the records'
values (recomputed from records.jsonl), the ITL and loop-lag counts equal
the levels' itl_pooled and loop_lag counts, the token counters the records'
sums.  Then the refusals: a port in use, --metrics-hold without a port.
Prints TAP."""
import json
import math
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tp_check import SCALE, check, done, free_port, skip  # noqa: E402

TOKPERF = sys.argv[1]
tmp = tempfile.mkdtemp(prefix="tp_live_")

# ---------------------------------------------------------------------------
# A parser of the text format, version 0.0.4, as its specification gives it.

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


class FormatError(Exception):
    pass


def parse_value(s):
    """A sample value: a Go ParseFloat float, NaN and +Inf/-Inf included."""
    if s in ("NaN", "+Inf", "-Inf", "Inf"):
        return float(s.replace("Inf", "inf").replace("NaN", "nan"))
    if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", s):
        raise FormatError("value %r is not a float" % s)
    return float(s)


def unescape(s, quote):
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\":
            if i + 1 >= len(s):
                raise FormatError("a backslash ends %r" % s)
            n = s[i + 1]
            if n == "n":
                out.append("\n")
            elif n == "\\" or (quote and n == '"'):
                out.append(n)
            else:
                raise FormatError("unknown escape \\%s" % n)
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def parse_labels(s, i, line):
    """From the '{' at s[i]: the labels and the index after the '}'."""
    labels = {}
    i += 1
    while True:
        while i < len(s) and s[i] in " \t":
            i += 1
        if i < len(s) and s[i] == "}":
            return labels, i + 1
        m = LABEL.match(s, i)
        if not m:
            raise FormatError("bad label name in %r" % line)
        name = m.group(0)
        i = m.end()
        if s[i:i + 2] != '="':
            raise FormatError("expected =\" after %s in %r" % (name, line))
        i += 2
        j = i
        while j < len(s) and s[j] != '"':
            j += 2 if s[j] == "\\" else 1
        if j >= len(s):
            raise FormatError("label value not closed in %r" % line)
        if name in labels:
            raise FormatError("label %s twice in %r" % (name, line))
        labels[name] = unescape(s[i:j], True)
        i = j + 1
        if i < len(s) and s[i] == ",":
            i += 1
        elif i < len(s) and s[i] == "}":
            return labels, i + 1
        else:
            raise FormatError("expected , or } in %r" % line)


def family_of(name, types):
    if name in types:
        return name
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[: -len(suffix)]
        if name.endswith(suffix) and types.get(base) in ("histogram", "summary"):
            return base
    return name


def parse_exposition(text):
    """{family: {"type", "help", "samples": [(name, labels, value)]}}; raises
    FormatError on anything the format does not allow."""
    if text and not text.endswith("\n"):
        raise FormatError("the exposition does not end with a line feed")
    fams, types, order = {}, {}, []
    done_fams = set()
    current = None
    for line in text.split("\n")[:-1]:
        if not line.strip():
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                name = parts[2]
                if not NAME.fullmatch(name):
                    raise FormatError("bad name in %r" % line)
                f = fams.setdefault(name, {"type": "untyped", "help": None, "samples": []})
                if parts[1] == "TYPE":
                    t = parts[3] if len(parts) > 3 else ""
                    if t not in TYPES:
                        raise FormatError("unknown type in %r" % line)
                    if name in types or f["samples"]:
                        raise FormatError("TYPE of %s twice or after its samples" % name)
                    types[name] = f["type"] = t
                else:
                    if f["help"] is not None:
                        raise FormatError("HELP of %s twice" % name)
                    f["help"] = unescape(parts[3] if len(parts) > 3 else "", False)
                if current != name:
                    if name in done_fams:
                        raise FormatError("%s comes back after another family" % name)
                    if current:
                        done_fams.add(current)
                    current = name
            continue
        m = NAME.match(line)
        if not m:
            raise FormatError("bad sample line %r" % line)
        name = m.group(0)
        i = m.end()
        labels = {}
        if i < len(line) and line[i] == "{":
            labels, i = parse_labels(line, i, line)
        rest = line[i:].split()
        if not rest or len(rest) > 2 or line[i] not in " \t":
            raise FormatError("bad value in %r" % line)
        value = parse_value(rest[0])
        if len(rest) == 2 and not re.fullmatch(r"-?\d+", rest[1]):
            raise FormatError("bad timestamp in %r" % line)
        fam = family_of(name, types)
        if fam != current:
            if fam in done_fams:
                raise FormatError("%s comes back after another family" % fam)
            if current:
                done_fams.add(current)
            current = fam
        f = fams.setdefault(fam, {"type": "untyped", "help": None, "samples": []})
        f["samples"].append((name, labels, value))
        order.append(fam)
    for fam, f in fams.items():
        if f["type"] == "histogram":
            check_histogram(fam, f["samples"])
        if f["type"] == "counter":
            for _, _, v in f["samples"]:
                if v < 0 or math.isnan(v):
                    raise FormatError("counter %s is %r" % (fam, v))
    return fams


def check_histogram(fam, samples):
    buckets = [(s[1], s[2]) for s in samples if s[0] == fam + "_bucket"]
    count = [s[2] for s in samples if s[0] == fam + "_count"]
    total = [s[2] for s in samples if s[0] == fam + "_sum"]
    if not buckets or len(count) != 1 or len(total) != 1:
        raise FormatError("histogram %s lacks its buckets, _sum or _count" % fam)
    les = [parse_value(b[0].get("le", "")) if "le" in b[0] else None for b in buckets]
    if None in les or les[-1] != math.inf:
        raise FormatError("histogram %s: every bucket needs le, the last +Inf" % fam)
    if any(a >= b for a, b in zip(les, les[1:])):
        raise FormatError("histogram %s: le not increasing" % fam)
    vals = [b[1] for b in buckets]
    if any(a > b for a, b in zip(vals, vals[1:])):
        raise FormatError("histogram %s: bucket counts fall" % fam)
    if vals[-1] != count[0]:
        raise FormatError("histogram %s: +Inf %g != _count %g" % (fam, vals[-1], count[0]))


def series(fams):
    """{(name, sorted labels): value} of every sample."""
    out = {}
    for fam, f in fams.items():
        for name, labels, v in f["samples"]:
            out[(name, tuple(sorted(labels.items())))] = (f["type"], v)
    return out


def value(fams, name, **labels):
    key = (name, tuple(sorted(labels.items())))
    return series(fams).get(key, (None, None))[1]


try:
    from prometheus_client.parser import text_string_to_metric_families as prom_parse  # noqa: E402
except ImportError:
    prom_parse = None

# The parser on its own, on inputs the format refuses.
bad_inputs = {
    "no final line feed": "a 1",
    "a value that is no float": "a one\n",
    "an unclosed label value": 'a{x="1} 2\n',
    "an unknown escape": 'a{x="\\t"} 1\n',
    "TYPE after samples": "a 1\n# TYPE a counter\n",
    "a family split": "# TYPE a gauge\na 1\n# TYPE b gauge\nb 1\na 2\n",
    "buckets that fall": '# TYPE h histogram\nh_bucket{le="1"} 3\nh_bucket{le="+Inf"} 2\nh_sum 1\nh_count 2\n',
    "+Inf unlike _count": '# TYPE h histogram\nh_bucket{le="1"} 1\nh_bucket{le="+Inf"} 2\nh_sum 1\nh_count 3\n',
    "no +Inf bucket": '# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 1\nh_count 1\n',
}
refused = []
for what, text in bad_inputs.items():
    try:
        parse_exposition(text)
    except FormatError:
        refused.append(what)
check(len(refused) == len(bad_inputs), "the test's parser refuses what the format does not allow",
      set(bad_inputs) - set(refused))
good = parse_exposition('# HELP a x\\ny\n# TYPE a counter\na{l="q\\"\\\\",m="2",} 3 1700000000000\nb NaN\n')
check(good["a"]["help"] == "x\ny" and good["a"]["samples"][0][1] == {"l": 'q"\\', "m": "2"} and
      math.isnan(good["b"]["samples"][0][2]), "and reads escapes, a trailing comma, a timestamp and NaN")

# ---------------------------------------------------------------------------
# A sweep, scraped while it runs.

MOCK = ["--mock", "--mock-ttft-ms", "20", "--mock-itl-ms", "4", "--service-kind", "openai"]
port = free_port()
art = os.path.join(tmp, "art")
json_path = os.path.join(tmp, "run.json")
records = os.path.join(tmp, "records.jsonl")
HOLD_S = 4 * SCALE
cmd = [TOKPERF, "profile"] + MOCK + ["--request-rate", "15,30", "--request-count", "45", "--max-tokens", "24",
                                     "--metrics-port", str(port), "--metrics-hold", "%gs" % HOLD_S,
                                     "--json", json_path, "--records", records, "--artifact-dir", art]
proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
url = "http://127.0.0.1:%d/metrics" % port
scrapes, problems, prom_problems, headers = [], [], [], None
deadline = time.monotonic() + 120 * SCALE
while proc.poll() is None and time.monotonic() < deadline:
    try:
        with urllib.request.urlopen(url, timeout=5 * SCALE) as resp:
            body = resp.read().decode("utf-8")
            headers = headers or dict(resp.headers)
    except (urllib.error.URLError, ConnectionError, socket.timeout, OSError):
        time.sleep(0.05)
        continue
    try:
        fams = parse_exposition(body)
        scrapes.append((time.monotonic(), fams))
    except FormatError as e:
        problems.append(str(e))
    if prom_parse:
        try:
            list(prom_parse(body))
        except Exception as e:  # noqa: BLE001 - any refusal is the finding
            prom_problems.append(repr(e))
    time.sleep(0.15)
if proc.poll() is None:
    proc.kill()
out, err = proc.communicate()
check(proc.returncode == 0, "the sweep ran (%s)" % proc.returncode, err[-2000:])
check("live metrics at http://127.0.0.1:%d/metrics" % port in err, "and said where its metrics are", err[-800:])
check(headers is not None and headers.get("Content-Type", "").startswith("text/plain; version=0.0.4"),
      "scrapes answer with the text format's content type", headers)
check(len(scrapes) >= 10 and not problems, "%d scrapes, every one well formed" % len(scrapes), problems[:5])
if prom_parse:
    check(not prom_problems, "python3-prometheus-client's parser reads every scrape too", prom_problems[:3])
else:
    skip("python3-prometheus-client's parser reads every scrape", "python3-prometheus-client is not installed")

# Every name documented, prefixed, typed.
doc = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "metrics.md")).read()
fams = scrapes[-1][1] if scrapes else {}
undocumented = [f for f in fams if not f.startswith("tokperf_") or "`%s`" % f not in doc]
check(fams and not undocumented, "every family is tokperf_-prefixed and documented in docs/metrics.md",
      undocumented)
check(all(f["type"] in ("counter", "gauge", "histogram") and f["help"] for f in fams.values()),
      "and has its TYPE and HELP")

# Counters never decrease between scrapes.
decreases = []
prev = {}
for _, fams_i in scrapes:
    for key, (typ, v) in series(fams_i).items():
        if typ in ("counter", "histogram") and key in prev and v < prev[key]:
            decreases.append((key, prev[key], v))
        prev[key] = v
check(scrapes and not decreases, "every counter and histogram series only grows", decreases[:5])
completed = [value(f, "tokperf_requests_completed_total") for _, f in scrapes]
check(len(set(completed)) >= 3, "completions seen growing while the run ran (%d distinct values)" % len(set(completed)))

# The level gauges follow the sweep.
seen = [(value(f, "tokperf_level"), value(f, "tokperf_level_target_rate"),
         value(f, "tokperf_level_info", mode="rate")) for _, f in scrapes]
check({s[0] for s in seen} >= {1, 2} and all(s[0] in (1, 2) for s in seen), "levels 1 and 2 seen",
      sorted({s[0] for s in seen}))
check(all(s[1] == {1: 15, 2: 30}[s[0]] and s[2] == 1 for s in seen if s[0] in (1, 2)),
      "each with its target rate and mode", seen[:5])
check(all(value(f, "tokperf_levels") == 2 for _, f in scrapes), "levels planned: 2")

# The last scrape, during --metrics-hold, against what the run wrote.
try:
    run = json.load(open(json_path))
except (OSError, ValueError):
    run = {"levels": []}
recs = []
if os.path.exists(records):
    with open(records) as fh:
        recs = [json.loads(ln) for ln in fh if ln.strip()]
levels = run["levels"]
last = scrapes[-1][1] if scrapes else {}
failed = sum(value(last, "tokperf_requests_failed_total", **{"class": c}) or 0 for c in
             ("connect", "grpc_status", "stream_reset", "timeout", "protocol", "server_error", "cancelled", "tls",
              "http_status", "not_sent"))
done_n = (value(last, "tokperf_requests_completed_total") or 0) + failed
want = sum(lv["requests"] for lv in levels)
check(len(levels) == 2 and want == 90 and done_n == want,
      "at the end completed + failed = the report's requests (%s = %s)" % (done_n, want))
check(value(last, "tokperf_requests_completed_total") == sum(lv["succeeded"] for lv in levels) and
      failed == sum(lv["failed"] for lv in levels), "completed = succeeded, failed = failed")
check(value(last, "tokperf_requests_sent_total") == len([r for r in recs if r.get("sent_ns")]) == len(recs) == want,
      "sent = the records' sent requests")
check(value(last, "tokperf_requests_in_flight") == 0, "nothing in flight at the end")
level2 = [f for _, f in scrapes if value(f, "tokperf_level") == 2]
check(level2 and all((value(f, "tokperf_requests_completed_total") or 0) >= levels[0]["requests"] for f in level2),
      "while level 2 runs, level 1's requests are all counted")

ok = [r for r in recs if r.get("ok")]


def hist_of(fams, name):
    buckets = [(parse_value(lb["le"]), v) for n, lb, v in fams.get(name, {}).get("samples", [])
               if n == name + "_bucket"]
    return buckets, value(fams, name + "_count"), value(fams, name + "_sum")


def same_buckets(name, values):
    buckets, count, total = hist_of(last, name)
    want_b = [(le, sum(1 for x in values if x <= le)) for le, _ in buckets]
    return (buckets == want_b and count == len(values) and
            total is not None and abs(total - sum(values)) <= 1e-9 * max(1, len(values))), (buckets, want_b)


good, why = same_buckets("tokperf_ttft_seconds", [(r["first_token_ns"] - r["sent_ns"]) / 1e9 for r in ok])
check(good, "the TTFT buckets hold exactly the records' TTFTs", why)
good, why = same_buckets("tokperf_request_latency_seconds", [(r["done_ns"] - r["sent_ns"]) / 1e9 for r in ok])
check(good, "the latency buckets hold exactly the records' latencies", why)
good, why = same_buckets("tokperf_send_lag_seconds", [(r["sent_ns"] - r["planned_ns"]) / 1e9 for r in recs])
check(good, "the send-lag buckets hold exactly the records' send lags", why)
late = sum(1 for r in recs if (r["sent_ns"] - r["planned_ns"]) / 1e9 > 0.001)
check(value(last, "tokperf_late_sends_total") == late == sum(lv["late_sends"] for lv in levels),
      "late sends as the report counts them (%d)" % late)
itl_n = sum(lv["itl_pooled_ms"]["n"] for lv in levels)
check(value(last, "tokperf_itl_seconds_count") == itl_n > 0, "ITL gaps = the levels' pooled ITL count (%d)" % itl_n)
lag_n = sum(lv["fidelity"]["loop_lag_ms"]["n"] for lv in levels)
check(value(last, "tokperf_loop_lag_seconds_count") == lag_n > 0, "loop lags = the levels' count (%d)" % lag_n)
check(value(last, "tokperf_loop_reads_total") >= sum(lv["fidelity"]["reads"] for lv in levels),
      "reads at least the levels' reads")
gaps = sum(lv["fidelity"]["text_response_gaps"] for lv in levels)
check(value(last, "tokperf_response_gaps_total") == gaps and
      value(last, "tokperf_merged_responses_total") == sum(lv["fidelity"]["merged_text_responses"] for lv in levels),
      "text response gaps and merged responses as the levels' fidelity counts them")
out_tokens = sum(r["server_output_tokens"] for r in recs if (r.get("server_output_tokens") or 0) > 0)
in_tokens = sum(r["server_input_tokens"] for r in recs if (r.get("server_input_tokens") or 0) > 0)
check(value(last, "tokperf_output_tokens_total") == out_tokens == 90 * 24 and
      value(last, "tokperf_input_tokens_total") == in_tokens > 0,
      "tokens as the server counted them in the records (%s, %s)" % (out_tokens, in_tokens))
verdict = value(last, "tokperf_fidelity_verdict")
check(verdict == levels[-1]["fidelity"]["verdict_code"] if levels else False,
      "the verdict gauge is the last level's (%s)" % verdict)
cpu = value(last, "tokperf_process_cpu_seconds_total")
check(cpu is not None and 0 < value(last, "tokperf_loop_cpu_seconds_total") <= cpu, "CPU counters")

# Refusals.
blocker = socket.socket()
blocker.bind(("127.0.0.1", 0))
blocker.listen(1)
busy = blocker.getsockname()[1]
p = subprocess.run([TOKPERF, "profile"] + MOCK + ["--request-count", "4", "--metrics-port", str(busy),
                                                  "--no-artifacts"],
                   capture_output=True, text=True, timeout=60 * SCALE)
check(p.returncode != 0 and "--metrics-port %d: cannot listen on 127.0.0.1:%d" % (busy, busy) in p.stderr and
      "choose another port" in p.stderr, "a port in use is refused, named, with what to do", p.stderr[-600:])
blocker.close()
p = subprocess.run([TOKPERF, "profile"] + MOCK + ["--request-count", "4", "--metrics-hold", "5s", "--no-artifacts"],
                   capture_output=True, text=True, timeout=60 * SCALE)
check(p.returncode != 0 and "--metrics-port" in p.stderr, "--metrics-hold without a port is refused",
      p.stderr[-600:])
p = subprocess.run([TOKPERF, "profile"] + MOCK + ["--request-count", "4", "--metrics-port", "70000",
                                                  "--no-artifacts"], capture_output=True, text=True,
                   timeout=60 * SCALE)
check(p.returncode != 0 and "--metrics-port" in p.stderr, "a port past 65535 is refused", p.stderr[-600:])
done()
