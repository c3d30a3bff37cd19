#!/usr/bin/env python3
"""Several hosts for real (issue #10, docs/scale-out.md): two ranks in two
network namespaces, each with its own address on a bridge, drive the mock
in a third namespace; Open MPI's launcher reaches the "hosts" through a
small agent that enters the namespace (in place of ssh), and MPI's own
traffic is held to the test subnet.  The merged run is then held against
the same run done in one process from one of the namespaces.

The bridge and mpirun live in a fourth namespace, the hub: a fresh
namespace has no firewall rules, so whatever the machine's own firewall
does to forwarded or bridged traffic, the test's packets get through, and
the machine's own network is never touched.  The namespaces and veth pairs
are made here and removed on every way out (a finally, SIGTERM from meson's
timeout, each step bounded in time).  Skips when not root or when
`ip netns` is unavailable.

usage: test_mpi_netns.py TOKPERF MOCK_HARNESS MPIRUN.  Prints TAP."""
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mpi_common as mc  # noqa: E402

TOKPERF, HARNESS = sys.argv[1], sys.argv[2]
MPIRUN = mc.mpirun_or_skip(sys.argv[3] if len(sys.argv) > 3 else None)
SCALE = mc.SCALE

if os.geteuid() != 0:
    mc.skip_all("network namespaces need root")
IP = shutil.which("ip")
if not IP:
    mc.skip_all("the ip command (iproute2) is missing")

tap = mc.Tap()
tmp = tempfile.mkdtemp(prefix="tp_mpi_netns_")
ENV = mc.mpi_env()
TAG = "%d" % (os.getpid() % 100000)
SUBNET = "10.231.%d" % (os.getpid() % 200 + 20)
BRIDGE = "tpbr" + TAG
HUB = "tpmpiH" + TAG
HOSTS = [("ns-a", "tpmpiA" + TAG, "tpvA" + TAG, SUBNET + ".1"),
         ("ns-b", "tpmpiB" + TAG, "tpvB" + TAG, SUBNET + ".2"),
         ("ns-m", "tpmpiM" + TAG, "tpvM" + TAG, SUBNET + ".3")]
NS = {h: ns for h, ns, _, _ in HOSTS}
# A UTS namespace per host gives each its own host name; some containers
# refuse one even to root, and the test then goes on without names.
UTS = shutil.which("unshare") is not None and subprocess.run(
    ["unshare", "--uts", "true"], capture_output=True, timeout=10).returncode == 0
ADDR = {h: a for h, _, _, a in HOSTS}
made = []


def ip(*args, check=True):
    p = subprocess.run([IP] + list(args), capture_output=True, text=True, timeout=10)
    if check and p.returncode != 0:
        raise RuntimeError("ip %s: %s" % (" ".join(args), p.stderr.strip()))
    return p


def teardown():
    # Deleting a namespace deletes the links inside it, and a veth end takes
    # its pair along; the hub, with the bridge, goes last.
    while made:
        ip("netns", "del", made.pop(), check=False)


def on_term(signum, frame):
    teardown()
    sys.exit(1)


signal.signal(signal.SIGTERM, on_term)
signal.signal(signal.SIGINT, on_term)


def setup():
    ip("netns", "add", HUB)
    made.append(HUB)
    ip("-n", HUB, "link", "set", "lo", "up")
    ip("-n", HUB, "link", "add", BRIDGE, "type", "bridge")
    # mpirun runs in the hub: the daemons reach it at this address.
    ip("-n", HUB, "addr", "add", SUBNET + ".254/24", "dev", BRIDGE)
    ip("-n", HUB, "link", "set", BRIDGE, "up")
    for host, ns, veth, addr in HOSTS:
        ip("netns", "add", ns)
        made.append(ns)
        ip("-n", HUB, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
        ip("-n", HUB, "link", "set", veth, "master", BRIDGE, "up")
        ip("-n", ns, "addr", "add", addr + "/24", "dev", "eth0")
        ip("-n", ns, "link", "set", "eth0", "up")
        ip("-n", ns, "link", "set", "lo", "up")


def write_agent():
    """Open MPI's launcher runs `AGENT HOST COMMAND...` as it would run ssh:
    the command is one shell line for the other side.  Here the other side
    is the host's namespace, with the host's name (a UTS namespace of its
    own) so every rank reports where it runs."""
    path = os.path.join(tmp, "netns-agent.sh")
    cases = "".join("  %s) ns=%s ;;\n" % (h, NS[h]) for h in ("ns-a", "ns-b"))
    uts = 'unshare --uts /bin/sh -c "hostname $host; $*"' if UTS else '/bin/sh -c "$*"'
    with open(path, "w") as f:
        f.write("#!/bin/sh\n# Enters the network namespace that stands for HOST, then runs the command.\n"
                "host=$1\nshift\ncase \"$host\" in\n%s  *) echo \"netns-agent: unknown host $host\" >&2; exit 1 ;;\n"
                "esac\nexec %s netns exec \"$ns\" %s\n" % (cases, IP, uts))
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


def tx_bytes(ns):
    p = ip("-n", ns, "-s", "-j", "link", "show", "eth0")
    return json.loads(p.stdout)[0]["stats64"]["tx"]["bytes"]


def run(cmd, name, env=ENV, timeout=120):
    js = os.path.join(tmp, name + ".json")
    rec = os.path.join(tmp, name + ".jsonl")
    p = subprocess.run(cmd + ["--json", js, "--records", rec], capture_output=True, text=True,
                       timeout=timeout * SCALE, env=env)
    return p, mc.load_json(js), mc.read_jsonl(rec)


try:
    try:
        setup()
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        teardown()
        mc.skip_all("cannot make network namespaces here: %s" % e)
    agent = write_agent()
    mock = mc.Mock(HARNESS, prefix=[IP, "netns", "exec", NS["ns-m"]], host=ADDR["ns-m"], **mc.FAST_MOCK)
    target = "%s:%d" % (ADDR["ns-m"], mock.grpc_port)
    net = SUBNET + ".0/24"
    # --bind-to none: each "host" would bind its rank to its first core, and
    # here both hosts are one machine, so both ranks would share core 0.
    mpi = [IP, "netns", "exec", HUB, MPIRUN, "--mca", "plm_rsh_agent", agent, "-H", "ns-a,ns-b", "-np", "2", "--bind-to", "none",
           "--mca", "oob_tcp_if_include", net, "--mca", "btl_tcp_if_include", net, "--mca", "btl", "tcp,self"]
    single = [IP, "netns", "exec", NS["ns-a"]]
    env1 = {k: v for k, v in ENV.items() if not k.startswith(("OMPI_", "PMIX_"))}
    common = [TOKPERF, "profile", "-q", "--no-artifacts", "-u", target, "--num-prompts", "10000"]
    rate_args = ["--request-rate", "500", "--arrival", "constant", "--duration", "4s", "--output-tokens-mean", "4"]
    conc_args = ["--concurrency", "8", "--request-count", "800", "--output-tokens-mean", "8"]

    try:
        # The closed loop first, so the mock's highest stream count is its.
        before = {h: tx_bytes(NS[h]) for h in ("ns-a", "ns-b")}
        pc, dc, rc_ = run(mpi + common + conc_args, "conc_mpi")
        sent = {h: tx_bytes(NS[h]) - before[h] for h in ("ns-a", "ns-b")}
        st = mock.stats()
        pr, dr, rr = run(mpi + common + rate_args, "rate_mpi")
        p1r, d1r, r1r = run(single + common + rate_args, "rate_single", env=env1)
        p1c, d1c, r1c = run(single + common + conc_args, "conc_single", env=env1)
    finally:
        mock.stop()

    ok = tap.check(pr.returncode == 0 and dr and pc.returncode == 0 and dc,
                   "two ranks in two namespaces run against the mock in a third (exit 0)",
                   (pr.stderr + pc.stderr)[-2000:])
    if ok:
        lr, lc = dr["levels"][0], dc["levels"][0]
        hosts = [x["host"] for x in lr["mpi"]["per_rank"]]
        tap.check(lr["mpi"]["complete"] and lc["mpi"]["complete"] and lr["mpi"]["ranks"] == 2,
                  "both ranks report in both runs")
        if UTS:
            tap.equal(hosts, ["ns-a", "ns-b"], "each rank runs on its own host (namespace), as the report says")
        tap.check(sorted(set(r["rank"] for r in rr)) == [0, 1] and sent["ns-a"] > 50000 and sent["ns-b"] > 50000,
                  "each rank drove the server over its own address (%d and %d bytes out of ns-a and ns-b)"
                  % (sent["ns-a"], sent["ns-b"]))
        offs = [(x["clock_offset_us"], x["clock_uncertainty_us"]) for x in (lr["mpi"]["per_rank"][1],
                                                                             lc["mpi"]["per_rank"][1])]
        # The namespaces share one kernel clock: the true offset is 0.
        tap.check(all(abs(o) <= u + 1.0 for o, u in offs),
                  "the clock offset measured over the veth pairs brackets the true 0 (%s)"
                  % ", ".join("%+.1f+/-%.1f us" % x for x in offs))
        tap.check(st["max_active_streams"] == 8, "concurrency 8 over two hosts: the mock saw at most and at "
                  "last 8 streams", st)
        for what, level, recs in (("rate", lr, rr), ("concurrency", lc, rc_)):
            bad = mc.compare_figures(level, recs)
            tap.check(not bad, "%s: the merged figures equal those recomputed from the per-rank records" % what,
                      bad[:5])

    if tap.check(p1r.returncode == 0 and d1r and p1c.returncode == 0 and d1c,
                 "the same runs in one process from ns-a (exit 0)", (p1r.stderr + p1c.stderr)[-1000:]) and ok:
        tap.diag("figure                     two ranks      one process")
        for what, m, s in (("rate", dr["levels"][0], d1r["levels"][0]), ("concurrency", dc["levels"][0],
                                                                         d1c["levels"][0])):
            unc = m["mpi"]["clock_uncertainty_us"]
            # What the report says of its own time line: a span between two
            # ranks' times is off by at most twice the uncertainty.
            tl = 2 * unc * 1e-6 / m["duration_s"]
            rows = [("requests", m["requests"], s["requests"]),
                    ("request_throughput_rps", m["request_throughput_rps"], s["request_throughput_rps"]),
                    ("achieved_send_rate_rps", m["achieved_send_rate_rps"], s["achieved_send_rate_rps"]),
                    ("ttft_p50_ms", m["time_to_first_token_ms"]["p50"], s["time_to_first_token_ms"]["p50"]),
                    ("ttft_p99_ms", m["time_to_first_token_ms"]["p99"], s["time_to_first_token_ms"]["p99"]),
                    ("latency_p50_ms", m["request_latency_ms"]["p50"], s["request_latency_ms"]["p50"])]
            for name, a, b in rows:
                tap.diag("%-12s %-22s %12.4f %12.4f" % (what, name, a, b))
            tap.diag("%-12s timeline precision +/- %.1f us (%.5f%% of the window)" % (what, unc, 100 * tl))
            tap.equal(m["requests"], s["requests"], "%s: the same number of requests measured" % what)
            if what == "rate":
                tap.check(abs(m["achieved_send_rate_rps"] / s["achieved_send_rate_rps"] - 1) <= 0.005 + tl,
                          "rate: the achieved rate matches one process within 0.5% plus the time line's precision")
                tap.check(abs(m["request_throughput_rps"] / s["request_throughput_rps"] - 1) <= 0.01 + tl,
                          "rate: throughput matches one process within 1% plus the time line's precision")
            else:
                tap.check(abs(m["request_throughput_rps"] / s["request_throughput_rps"] - 1) <= 0.05 + tl,
                          "concurrency: throughput matches one process within 5% (closed-loop run-to-run noise)")
            for key in ("time_to_first_token_ms", "request_latency_ms"):
                d = abs(m[key]["p50"] - s[key]["p50"])
                tap.check(d <= 0.5, "%s: %s p50 matches one process within 0.5 ms (%.3f ms apart)" % (what, key, d))
finally:
    teardown()
    listed = ip("netns", "list", check=False).stdout
    left = [ns for ns in [HUB] + [h[1] for h in HOSTS] if ns in listed]
    tap.check(not left and not any(v in ip("link", "show", check=False).stdout for _, _, v, _ in HOSTS),
              "the namespaces, veth pairs and bridge are gone", left)
sys.exit(tap.finish())
