#!/usr/bin/env python3
"""Safe to run as root in CI: what a full disk, a device, a FIFO, a link and
a signal do to a run against the built-in mock.

- A full disk (a 64 KiB tmpfs) as the artifact directory, as --records, and
  as $TMPDIR under --no-artifacts: no SIGBUS, exit 3 with "no space left on
  DIR" naming the file, the results on stdout and wherever space remains,
  records.jsonl whole lines only, no temporary file left.  The tmpfs needs
  root (mount); without it those checks print a TAP SKIP with the reason.
- --json at a symbolic link, a FIFO and a character device made with mknod
  in a temporary directory (never under /dev): the link stays a link, the
  FIFO's reader gets the document, the node is still the same node, and
  nothing is written beside them.
- SIGHUP mid-run writes the results (like SIGINT and SIGTERM); SIGINT in the
  middle of a level's duration makes it partial, with the time it ran, in
  the text, the JSON and the exports; compare flags it.
- A run over 10% failed requests says so in one line without
  --max-error-rate.
Every run is bounded in time.  Prints TAP."""
import glob
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tp_check import SCALE, check, done, skip  # noqa: E402

TOKPERF = sys.argv[1]
tmp = tempfile.mkdtemp(prefix="tp_safe_")
# Fast answers and a count, so a run writes a few hundred kilobytes of
# records (about 560 bytes a request) in a second or two, whatever the
# machine's load.
FAST = ["profile", "--mock", "--mock-ttft-ms", "0", "--mock-itl-ms", "0", "--mock-output-tokens", "2", "--concurrency", "8",
        "--request-count", "600"]
TIMEOUT = 120 * SCALE


def run(args, env=None, timeout=TIMEOUT):
    e = dict(os.environ)
    if env:
        e.update(env)
    return subprocess.run([TOKPERF] + args, capture_output=True, text=True, timeout=timeout, env=e)


def mount_full(path):
    """A 64 KiB tmpfs at path; None, or why it cannot be had."""
    os.makedirs(path, exist_ok=True)
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", path], capture_output=True, text=True)
    return None if p.returncode == 0 else (p.stderr.strip() or "mount exited %d" % p.returncode)


def umount(path):
    subprocess.run(["umount", path], capture_output=True)


def temporaries(root):
    return [f for f in glob.glob(os.path.join(root, "**", "*"), recursive=True) if ".tmp." in os.path.basename(f)]


def whole_lines(path):
    """(lines, every line is a whole JSON object and the file ends with a
    newline)."""
    data = open(path, "rb").read()
    if not data:
        return 0, True
    if not data.endswith(b"\n"):
        return data.count(b"\n"), False
    n = 0
    for line in data.split(b"\n")[:-1]:
        try:
            if not isinstance(json.loads(line), dict):
                return n, False
        except ValueError:
            return n, False
        n += 1
    return n, True


def measured(doc):
    return sum(lv["requests"] for lv in doc["levels"])


# ---------------------------------------------------------------------------
# A full disk in three places.

full = os.path.join(tmp, "full")
why = mount_full(full)
if why:
    for what in ("full artifact directory", "full --records", "full $TMPDIR"):
        skip(what, "cannot mount a 64 KiB tmpfs (the test needs root): " + why)
else:
    real_full = os.path.realpath(full)
    try:
        # The artifact directory: records.jsonl and the exports fill it.
        out_json = os.path.join(tmp, "a.json")
        p = run(FAST + ["--artifact-dir", os.path.join(full, "a"), "--json", out_json])
        check(p.returncode == 3, "full artifact directory: exit 3 (not SIGBUS, 135)", "rc %d\n%s" % (p.returncode, p.stderr))
        art = os.path.join(real_full, "a")
        check("no space left on " + art in p.stderr and "records.jsonl" in p.stderr,
              "full artifact directory: 'no space left on DIR' names the directory and the file", p.stderr)
        last = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
        check(last.startswith("tokperf: no space left on"), "full artifact directory: said last on stderr", last)
        check("Sweep summary" in p.stdout and "c=8" in p.stdout, "full artifact directory: the results on stdout",
              p.stdout[-2000:])
        doc = json.load(open(out_json)) if os.path.exists(out_json) else None
        check(doc is not None and measured(doc) == 600,
              "full artifact directory: --json elsewhere holds all 600 measured requests",
              doc and measured(doc))
        n, ok = whole_lines(os.path.join(full, "a", "records.jsonl"))
        check(ok and 0 < n < 600, "full artifact directory: records.jsonl holds %d whole lines, no partial one" % n)
        check("first %d records" % n in p.stderr, "full artifact directory: the message says how many it holds",
              p.stderr)
        rn, rok = whole_lines(os.path.join(full, "a", "responses.jsonl"))
        check(rok, "full artifact directory: responses.jsonl holds %d whole lines, no partial one" % rn)
        check(temporaries(full) == [], "full artifact directory: no temporary file left", temporaries(full))
        pe = os.path.join(full, "a", "profile_export.json")
        if os.path.exists(pe):
            try:
                json.load(open(pe))
                valid = True
            except ValueError:
                valid = False
            check(valid, "full artifact directory: the profile export that fit is one JSON document")
        umount(full)

        # --records on the full disk, the artifacts elsewhere.
        mount_full(full)
        art2 = os.path.join(tmp, "art2")
        rec = os.path.join(full, "records.jsonl")
        p = run(FAST + ["--artifact-dir", art2, "--records", rec])
        check(p.returncode == 3, "full --records: exit 3", "rc %d\n%s" % (p.returncode, p.stderr))
        check("no space left on %s (records.jsonl" % real_full in p.stderr, "full --records: the message names it",
              p.stderr)
        n, ok = whole_lines(rec)
        check(ok and 0 < n < 600, "full --records: %d whole lines, no partial one" % n)
        check("Sweep summary" in p.stdout, "full --records: the results on stdout")
        pe = json.load(open(os.path.join(art2, "profile_export.json")))
        got = sum(len(x["requests"]) for x in pe["experiments"])
        check(got == 600, "full --records: the exports elsewhere hold every request (read back from memory)", got)
        check(temporaries(full) == [] and temporaries(art2) == [], "full --records: no temporary file left")
        umount(full)

        # $TMPDIR under --no-artifacts: only the records' working file is
        # there, and it moves to memory: nothing is lost, exit 0.
        mount_full(full)
        p = run(FAST + ["--no-artifacts"], env={"TMPDIR": full})
        check(p.returncode == 0, "full $TMPDIR: exit 0, nothing lost (was SIGBUS)", "rc %d\n%s" % (p.returncode, p.stderr))
        check("too little space for the records' working file" in p.stderr and full in p.stderr,
              "full $TMPDIR: the move to memory is said, naming the directory", p.stderr)
        check("Sweep summary" in p.stdout, "full $TMPDIR: the results on stdout")
        check(os.listdir(full) == [], "full $TMPDIR: nothing left in it", os.listdir(full))
        p = run(FAST + ["--no-artifacts", "--format", "json"], env={"TMPDIR": full})
        try:
            fj = json.loads(p.stdout)
        except ValueError:
            fj = None
        check(p.returncode == 0 and fj and measured(fj) == 600, "full $TMPDIR: --format json prints the document",
              p.stderr)
        # And with outputs on it too: --json and -f into a $TMPDIR that has
        # no room left.
        with open(os.path.join(full, "filler"), "wb", buffering=0) as f:
            try:
                while True:
                    f.write(b"\0" * 4096)
            except OSError:
                pass
        js, csv = os.path.join(full, "out.json"), os.path.join(full, "lat.csv")
        p = run(FAST + ["--no-artifacts", "--json", js, "-f", csv], env={"TMPDIR": full})
        check(p.returncode == 3, "full $TMPDIR with --json and -f there: exit 3", "rc %d\n%s" % (p.returncode, p.stderr))
        check("no space left on %s (out.json" % real_full in p.stderr and
              "no space left on %s (lat.csv" % real_full in p.stderr,
              "full $TMPDIR: both named with the directory", p.stderr)
        check("Sweep summary" in p.stdout, "full $TMPDIR: the results on stdout")
        check(sorted(os.listdir(full)) == ["filler"], "full $TMPDIR: no temporary or partial file left",
              os.listdir(full))
    finally:
        umount(full)

# ---------------------------------------------------------------------------
# Outputs that are not regular files.

SMALL = ["profile", "--mock", "--mock-ttft-ms", "1", "--mock-itl-ms", "1", "--concurrency", "2", "--request-count", "8",
         "--no-artifacts", "-q"]
tdir = os.path.join(tmp, "targets")
os.makedirs(tdir)
os.symlink("real.json", os.path.join(tdir, "link.json"))
p = run(SMALL + ["--json", os.path.join(tdir, "link.json")])
check(p.returncode == 0, "--json at a link: exit 0", p.stderr)
check(os.path.islink(os.path.join(tdir, "link.json")), "--json at a link: the link is still a link")
doc = json.load(open(os.path.join(tdir, "real.json"))) if os.path.exists(os.path.join(tdir, "real.json")) else None
check(doc is not None and measured(doc) == 8, "--json at a link: its target holds the document")

fifo = os.path.join(tdir, "fifo")
os.mkfifo(fifo)
got = []


def reader():
    with open(fifo, "rb") as f:
        got.append(f.read())


t = threading.Thread(target=reader, daemon=True)
t.start()
p = run(SMALL + ["--json", fifo])
t.join(30 * SCALE)
check(p.returncode == 0, "--json at a FIFO: exit 0", p.stderr)
try:
    fdoc = json.loads(got[0]) if got else None
except ValueError:
    fdoc = None
check(fdoc is not None and measured(fdoc) == 8, "--json at a FIFO: the reader got the document")
check(stat.S_ISFIFO(os.lstat(fifo).st_mode), "--json at a FIFO: it is still a FIFO")

node = os.path.join(tdir, "null")
try:
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    made = None
except OSError as e:
    made = str(e)
if made:
    skip("--json at a device node", "mknod: " + made)
else:
    before = set(os.listdir(tdir))
    p = run(SMALL + ["--json", node, "-f", node])
    check(p.returncode == 0, "--json and -f at a device node: exit 0", p.stderr)
    st = os.lstat(node)
    check(stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3),
          "--json at a device node: the node is still the same device node")
    check(set(os.listdir(tdir)) == before, "--json at a device node: nothing written beside it",
          sorted(set(os.listdir(tdir)) - before))

sock_path = os.path.join(tdir, "sock")
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sock_path)
p = run(SMALL + ["--json", sock_path])
check(p.returncode == 2 and "socket" in p.stderr and sock_path in p.stderr,
      "--json at a socket: refused before the run, naming it", p.stderr)
s.close()

# ---------------------------------------------------------------------------
# Signals: an interrupted run writes what it measured; a level cut short is
# partial with the time it ran.


def start(args):
    return subprocess.Popen([TOKPERF] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_line(proc, needle, timeout):
    """Reads stderr until a line holds needle; returns the lines read."""
    lines = []
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line)
        if needle in line:
            return lines, True
    return lines, False


SLOW = ["profile", "--mock", "--mock-ttft-ms", "20", "--mock-itl-ms", "5", "--mock-output-tokens", "8"]
hup_json = os.path.join(tmp, "hup.json")
hup_art = os.path.join(tmp, "hup_art")
proc = start(SLOW + ["--concurrency", "2", "--duration", "20s", "--json", hup_json, "--artifact-dir", hup_art])
_, seen = wait_line(proc, "measuring for", 30 * SCALE)
time.sleep(1.0)
t_sig = time.monotonic()
proc.send_signal(signal.SIGHUP)
out, err = proc.communicate(timeout=60 * SCALE)
elapsed_after = time.monotonic() - t_sig
check(seen and proc.returncode == 130, "SIGHUP: the run ends as interrupted (130), not killed",
      "rc %s\n%s" % (proc.returncode, err))
check(elapsed_after < 15 * SCALE, "SIGHUP: it ends well before the 20 s duration (%.1f s after)" % elapsed_after)
hdoc = json.load(open(hup_json)) if os.path.exists(hup_json) else None
check(hdoc is not None and hdoc["interrupted"] and measured(hdoc) > 0,
      "SIGHUP: --json written with what was measured", err)
check(os.path.exists(os.path.join(hup_art, "profile_export.json")) and
      os.path.exists(os.path.join(hup_art, "records.jsonl")), "SIGHUP: the artifacts written")
if hdoc:
    lv = hdoc["levels"][0]
    check(lv["partial"] and 0.5 <= lv["partial_ran_s"] < 20 and lv["partial_planned_s"] == 20,
          "SIGHUP: the level is partial, ran %.2f of its 20 s" % lv.get("partial_ran_s", -1), lv.get("partial"))

# SIGINT a second into level 2 of --concurrency 1,2 --duration 4s.
int_json = os.path.join(tmp, "int.json")
int_art = os.path.join(tmp, "int_art")
proc = start(SLOW + ["--concurrency", "1,2", "--duration", "4s", "--json", int_json, "--artifact-dir", int_art])
_, seen = wait_line(proc, "concurrency 2: measuring", 60 * SCALE)
time.sleep(1.0)
proc.send_signal(signal.SIGINT)
out, err = proc.communicate(timeout=60 * SCALE)
check(seen and proc.returncode == 130, "SIGINT in level 2: exit 130", "rc %s\n%s" % (proc.returncode, err))
idoc = json.load(open(int_json)) if os.path.exists(int_json) else None
levels = idoc["levels"] if idoc else []
check(len(levels) == 2 and not levels[0]["partial"] and levels[1]["partial"],
      "SIGINT in level 2: level 1 whole, level 2 partial in --json", [lv.get("partial") for lv in levels])
if len(levels) == 2:
    ran = levels[1]["partial_ran_s"]
    # Signalled a second after the level announced itself (its clock starts
    # just after), and long before its 4 s were over.
    check(0.5 <= ran < 4.0 and levels[1]["partial_planned_s"] == 4,
          "SIGINT in level 2: it ran %.2f of 4 s" % ran)
    check("level 2 (concurrency 2) partial: it ran %.1f of 4.0 s" % ran in out and
          "Sweep interrupted: 1 of 2 levels completed (concurrency 1)" in out,
          "SIGINT in level 2: the text says level 2 ran %.1f of 4.0 s, one level completed" % ran, out[-800:])
    check("Partial: interrupted, it ran %.1f of 4.0 s" % ran in out, "SIGINT in level 2: and so does the level")
    check("interrupted %.1f s into level 2 of 2" % ran in err, "SIGINT in level 2: and the last line on stderr", err)
    summ = glob.glob(os.path.join(int_art, "concurrency2", "*_genai_perf.json"))
    gp = json.load(open(summ[0])) if summ else {}
    check(abs(gp.get("tokperf_partial", {}).get("ran_s", -1) - ran) < 1e-6,
          "SIGINT in level 2: the exports' summary says it too", gp.get("tokperf_partial"))
    pe = json.load(open(os.path.join(int_art, "profile_export.json")))
    check([("tokperf_partial" in x) for x in pe["experiments"]] == [False, True],
          "SIGINT in level 2: and the profile export's experiment")
    p = run(["compare", int_json, int_json])
    check(p.returncode == 0 and "Concurrency 2 (partial in A: it ran %.1f of 4.0 s; partial in B" % ran in p.stdout,
          "compare flags the partial level", p.stdout + p.stderr)

# ---------------------------------------------------------------------------
# A failing server is said without --max-error-rate.

p = run(["profile", "--mock", "--mock-fault", "grpc_status:13", "--mock-fault-rate", "0.5", "--concurrency", "2",
         "--request-count", "40", "--no-artifacts", "-q"])
lines = [l for l in p.stderr.splitlines() if "of the measured requests failed" in l]
check(p.returncode == 0 and len(lines) == 1 and "--max-error-rate" in lines[0],
      "an error rate over 10%: one line on stderr, exit 0", p.stderr)
p = run(["profile", "--mock", "--concurrency", "2", "--request-count", "20", "--no-artifacts", "-q"])
check(p.returncode == 0 and "failed" not in p.stderr, "no failures: no such line", p.stderr)

subprocess.run(["rm", "-rf", tmp])
done()
