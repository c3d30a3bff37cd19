#!/usr/bin/env python3
"""gRPC over TLS against Debian's python3-grpcio with a certificate made at
test time by openssl: verification on by default, --ca-file, --insecure,
client certificates, and -H headers arriving as gRPC metadata.  TAP."""
import json
import os
import subprocess
import sys
import tempfile
from concurrent import futures

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
import interop_common as ic  # noqa: E402

try:
    import grpc  # noqa: E402
except ImportError:
    print("1..0 # SKIP python3-grpcio missing")
    sys.exit(0)
import test_grpcio_server as srvmod  # noqa: E402

SCALE = float(os.environ.get("TP_TEST_TIMEOUT_MULTIPLIER", "1"))


def main():
    tokperf = sys.argv[1]
    tap = ic.Tap()
    tmp = tempfile.mkdtemp(prefix="tp-tls-")
    servers = []
    try:
        cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
        ccert, ckey = os.path.join(tmp, "client.pem"), os.path.join(tmp, "client-key.pem")
        for c, k, cn in ((cert, key, "127.0.0.1"), (ccert, ckey, "tokperf-client")):
            r = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", k, "-out", c,
                                "-days", "1", "-subj", "/CN=" + cn, "-addext", "subjectAltName=IP:127.0.0.1"],
                               capture_output=True, timeout=60)
            tap.check(r.returncode == 0, "openssl made a certificate for %s" % cn, r.stderr.decode()[-300:])
        pb, pbg = ic.generate_stubs(tmp)
        servicer = srvmod.make_servicer(pb, pbg, ic.words())
        pem = lambda p: open(p, "rb").read()  # noqa: E731

        def start(creds):
            s = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
            pbg.add_GRPCInferenceServiceServicer_to_server(servicer, s)
            port = s.add_secure_port("127.0.0.1:0", creds)
            s.start()
            servers.append(s)
            return port

        port = start(grpc.ssl_server_credentials([(pem(key), pem(cert))]))
        mport = start(grpc.ssl_server_credentials([(pem(key), pem(cert))], root_certificates=pem(ccert),
                                                  require_client_auth=True))

        def run(args, p=port):
            js = os.path.join(tmp, "r.json")
            if os.path.exists(js):
                os.unlink(js)
            cmd = [tokperf, "profile", "-q", "--no-artifacts", "-u", "grpcs://127.0.0.1:%d" % p, "-m", "ensemble",
                   "--concurrency", "2", "--request-count", "4", "--output-tokens-mean", "3", "--json", js] + args
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=60 * SCALE)
            doc = json.load(open(js)) if os.path.exists(js) else None
            return res, doc

        servicer.reset()
        res, doc = run(["--ca-file", cert, "-H", "X-Trace-Id: abc123"])
        tap.check(res.returncode == 0 and doc and doc["levels"][0]["succeeded"] == 4,
                  "grpcs with --ca-file: every request succeeds", res.stderr[-600:])
        md = [dict(c["metadata"]) for c in servicer.calls if c["method"] == "ModelStreamInfer"]
        tap.check(md and all(m.get("x-trace-id") == "abc123" for m in md),
                  "-H arrives as gRPC metadata (name lower-cased)", "%r" % md[:1])
        res, doc = run([])
        tap.check(res.returncode == 3 and "certificate verification failed" in res.stderr and "--ca-file" in res.stderr,
                  "without the CA: exit 3, a clear verification error naming --ca-file", res.stderr[-600:])
        res, doc = run(["--insecure"])
        tap.check(res.returncode == 0 and doc and doc["levels"][0]["succeeded"] == 4, "--insecure passes",
                  res.stderr[-600:])
        res, doc = run(["--ca-file", cert, "--reader-thread"])
        tap.check(res.returncode == 0 and doc and doc["levels"][0]["succeeded"] == 4,
                  "grpcs with --reader-thread: the records read on the reader thread decrypt, every request succeeds",
                  res.stderr[-600:])
        res, doc = run(["--reader-thread"])
        tap.check(res.returncode == 3 and "certificate verification failed" in res.stderr,
                  "with --reader-thread a failed handshake is still a clear verification error", res.stderr[-600:])
        res, doc = run(["--ca-file", cert, "--cert", ccert, "--key", ckey], p=mport)
        tap.check(res.returncode == 0 and doc and doc["levels"][0]["succeeded"] == 4,
                  "a server that requires a client certificate accepts --cert/--key", res.stderr[-600:])
        res, doc = run(["--ca-file", cert], p=mport)
        tap.check(res.returncode == 3, "without the client certificate the handshake is refused (exit 3)",
                  res.stderr[-600:])
        res, doc = run(["--ca-file", os.path.join(tmp, "missing.pem")])
        tap.check(res.returncode == 2 and "missing.pem" in res.stderr and "--ca-file" in res.stderr,
                  "an unreadable CA file is an input error (exit 2) naming the file", res.stderr[-400:])
    except Exception:
        tap.crashed("tls")
    finally:
        for s in servers:
            s.stop(0).wait(5)
        subprocess.run(["rm", "-rf", tmp])
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
