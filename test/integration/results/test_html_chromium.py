#!/usr/bin/env python3
"""report.html in a real browser: headless Chromium loads the page from a
file, with networking features off, and must show no console message,
build the expected number of SVG charts in its DOM, and paint a
screenshot that is not blank (distinct colours counted from the PNG with
zlib and struct, no imaging library).  Prints TAP; skips when Chromium is
not installed."""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tp_check import SCALE, check, done  # noqa: E402

GEN = sys.argv[1]


def png_pixels(path):
    """Decodes an 8-bit RGB or RGBA, non-interlaced PNG: returns (width,
    height, channels, rows as bytes)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        length, ctype = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if ctype == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif ctype == b"IDAT":
            idat += body
        elif ctype == b"IEND":
            break
        pos += 12 + length
    w, h, depth, colour, _, _, interlace = ihdr
    if depth != 8 or colour not in (2, 6) or interlace:
        raise ValueError("unsupported PNG (depth %d, colour type %d)" % (depth, colour))
    ch = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * ch
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(h):
        ftype = raw[i]
        line = bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - ch] if x >= ch else 0
            b = prev[x]
            c = prev[x - ch] if x >= ch else 0
            if ftype == 1:
                line[x] = (line[x] + a) & 0xFF
            elif ftype == 2:
                line[x] = (line[x] + b) & 0xFF
            elif ftype == 3:
                line[x] = (line[x] + ((a + b) >> 1)) & 0xFF
            elif ftype == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                pr = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + pr) & 0xFF
        rows.append(bytes(line))
        prev = line
    return w, h, ch, rows


chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
if not chromium:
    print("1..0 # SKIP chromium not installed (apt-get install chromium)")
    sys.exit(0)

tmp = tempfile.mkdtemp(prefix="tp_html_chromium_")
try:
    p = subprocess.run([GEN, tmp], capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, "gen_results wrote report.html", p.stderr)
    with open(os.path.join(tmp, "expect.json")) as f:
        expect = json.load(f)
    page = os.path.join(tmp, "art", "report.html")
    url = "file://" + page
    base = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
            "--hide-scrollbars", "--virtual-time-budget=5000", "--enable-logging=stderr", "--v=0"]

    def run(extra, name):
        prof = tempfile.mkdtemp(prefix="prof_", dir=tmp)
        r = subprocess.run(base + ["--user-data-dir=" + prof] + extra + [url], capture_output=True, text=True,
                           timeout=120 * SCALE)
        return r

    # The console check must be able to fail: a canary page that logs and
    # throws has to show up in the same log.
    canary = os.path.join(tmp, "canary.html")
    with open(canary, "w") as f:
        f.write("<!DOCTYPE html><html><body><script>console.log('tp-canary'); noSuchFunction();"
                "</script></body></html>")
    prof = tempfile.mkdtemp(prefix="prof_", dir=tmp)
    r = subprocess.run(base + ["--user-data-dir=" + prof, "--dump-dom", "file://" + canary], capture_output=True,
                       text=True, timeout=120 * SCALE)
    seen = [l for l in r.stderr.splitlines() if "CONSOLE" in l]
    check(any("tp-canary" in l for l in seen) and any("Uncaught" in l for l in seen),
          "the log shows a canary page's console message and uncaught error", r.stderr[-2000:])

    r = run(["--dump-dom"], "dom")
    check(r.returncode == 0 and "</html>" in r.stdout, "chromium dumps the DOM", r.stderr[-2000:])
    dom = r.stdout
    # Console messages are logged as "...:CONSOLE(line)] message"; uncaught
    # errors and failed loads would appear there or as net errors.
    console = [l for l in r.stderr.splitlines() if "CONSOLE" in l or "Uncaught" in l]
    check(not console, "no console messages", "\n".join(console))
    neterr = [l for l in r.stderr.splitlines() if "net::ERR" in l or "Failed to load" in l]
    check(not neterr, "no failed loads", "\n".join(neterr))
    svgs = len(re.findall(r"<svg\b", dom))
    check(svgs == expect["svg_count"], "the DOM holds %d SVG charts" % expect["svg_count"], "got %d" % svgs)
    tl = re.search(r'data-chart="timeline".*?</svg>', dom, re.S)
    reqs = len(re.findall(r'<rect class="req', tl.group(0))) if tl else -1
    check(reqs == expect["timeline_rects"], "the timeline holds %d request bars" % expect["timeline_rects"],
          "got %d" % reqs)
    check(len(re.findall(r'<circle class="pt', dom)) == 2 * 2 * len(expect["levels"]),
          "throughput charts: a point per level, percentile and chart")
    check("<script" not in dom, "the parsed page holds no script")
    check("llama &lt;7b&gt; &amp; \"friends\"" in dom or "llama &lt;7b&gt; &amp; &quot;friends&quot;" in dom,
          "the model name arrives as text, not markup")

    shot = os.path.join(tmp, "shot.png")
    r = run(["--screenshot=" + shot, "--window-size=1100,1400"], "shot")
    check(r.returncode == 0 and os.path.exists(shot), "chromium writes a screenshot", r.stderr[-2000:])
    console = [l for l in r.stderr.splitlines() if "CONSOLE" in l or "Uncaught" in l]
    check(not console, "no console messages while painting", "\n".join(console))
    if os.path.exists(shot):
        w, h, ch, rows = png_pixels(shot)
        check(w == 1100 and h == 1400, "screenshot is the window size", "%dx%d" % (w, h))
        colours = set()
        for row in rows[::4]:
            for x in range(0, len(row), ch * 2):
                colours.add(row[x:x + 3])
        check(len(colours) >= 20, "the screenshot is not blank (%d distinct colours)" % len(colours))
        white = sum(1 for row in rows[::4] for x in range(0, len(row), ch * 2) if row[x:x + 3] == b"\xff\xff\xff")
        total = sum(len(row) // (ch * 2) for row in rows[::4])
        check(white < total * 0.99, "ink covers more than 1 %% of the page (%.1f %% white)" % (100.0 * white / total))
        # The series colours of the stylesheet are painted: the p50 and p99
        # curves (#1f77b4, #d62728).
        check(b"\x1f\x77\xb4" in colours and b"\xd6\x27\x28" in colours,
              "the p50 (blue) and p99 (red) curves are painted")
finally:
    shutil.rmtree(tmp, ignore_errors=True)

done()
