"""Shared pieces of the python3-grpcio interoperability tests.

The tests hold tokperf (client and mock server) against an independent
implementation of gRPC: Debian's python3-grpcio, whose core is gRPC's own C
library.  Python stubs are generated at test time from proto/grpc_service.proto
into a temporary directory, so they always match the .proto tokperf is built
from and nothing generated is ever committed.

Run these scripts with /usr/bin/python3: the Debian packages python3-grpcio
and python3-grpc-tools install into the system interpreter only.
"""

import ctypes
import ctypes.util
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))


def source_root():
    root = os.environ.get("TP_SOURCE_ROOT")
    if root:
        return root
    return os.path.normpath(os.path.join(HERE, "..", "..", ".."))


def time_scale():
    """Slow (sanitizer) builds scale every time limit by this factor."""
    try:
        return max(1.0, float(os.environ.get("TP_TEST_TIMEOUT_MULTIPLIER", "1")))
    except ValueError:
        return 1.0


# --------------------------------------------------------------------------
# TAP


class Tap:
    """TAP producer: one line per check, the plan at the end, exit status 1
    when any check failed.  Diagnostics go to stdout as '#' lines, which TAP
    consumers show next to the failing test."""

    def __init__(self):
        self.n = 0
        self.failed = 0
        self.lock = threading.Lock()

    def check(self, cond, desc, detail=None):
        with self.lock:
            self.n += 1
            if cond:
                print("ok %d - %s" % (self.n, desc), flush=True)
            else:
                self.failed += 1
                print("not ok %d - %s" % (self.n, desc), flush=True)
                if detail is not None:
                    self.diag(detail)
        return bool(cond)

    def equal(self, got, want, desc):
        return self.check(got == want, desc, "got %r, want %r" % (got, want))

    def skip(self, desc, why):
        with self.lock:
            self.n += 1
            print("ok %d - %s # SKIP %s" % (self.n, desc, why), flush=True)

    def diag(self, text):
        for line in str(text).splitlines() or [""]:
            print("# " + line, flush=True)

    def crashed(self, desc):
        """Records an unexpected exception as a failed check."""
        self.check(False, desc + " (raised an exception)", traceback.format_exc())

    def finish(self):
        print("1..%d" % self.n, flush=True)
        return 1 if self.failed or self.n == 0 else 0


def skip_all(reason):
    print("1..0 # SKIP %s" % reason, flush=True)
    sys.exit(0)


# --------------------------------------------------------------------------
# Stubs


def import_grpc_or_skip():
    try:
        import grpc  # noqa: F401
        import grpc_tools  # noqa: F401
    except ImportError:
        skip_all("python3-grpcio missing (run with /usr/bin/python3; Debian packages "
                 "python3-grpcio and python3-grpc-tools)")


def generate_stubs(tmpdir):
    """Generates grpc_service_pb2{,_grpc}.py into tmpdir from the project's
    .proto and imports them.  Returns (pb2, pb2_grpc)."""
    proto_dir = os.path.join(source_root(), "proto")
    cmd = [sys.executable, "-m", "grpc_tools.protoc", "-I", proto_dir,
           "--python_out=" + tmpdir, "--grpc_python_out=" + tmpdir,
           os.path.join(proto_dir, "grpc_service.proto")]
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         timeout=60 * time_scale())
    if res.returncode != 0:
        raise RuntimeError("grpc_tools.protoc failed (%d): %s" %
                           (res.returncode, res.stderr.decode(errors="replace")))
    sys.path.insert(0, tmpdir)
    import grpc_service_pb2
    import grpc_service_pb2_grpc
    return grpc_service_pb2, grpc_service_pb2_grpc


def generate_proto_stubs(tmpdir, name):
    """Generates NAME_pb2{,_grpc}.py into tmpdir from proto/NAME.proto and
    imports them.  Returns (pb2, pb2_grpc)."""
    import importlib
    proto_dir = os.path.join(source_root(), "proto")
    cmd = [sys.executable, "-m", "grpc_tools.protoc", "-I", proto_dir,
           "--python_out=" + tmpdir, "--grpc_python_out=" + tmpdir,
           os.path.join(proto_dir, name + ".proto")]
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         timeout=60 * time_scale())
    if res.returncode != 0:
        raise RuntimeError("grpc_tools.protoc failed (%d): %s" %
                           (res.returncode, res.stderr.decode(errors="replace")))
    if tmpdir not in sys.path:
        sys.path.insert(0, tmpdir)
    return importlib.import_module(name + "_pb2"), importlib.import_module(name + "_pb2_grpc")


def make_tmpdir(prefix):
    d = tempfile.mkdtemp(prefix=prefix)
    return d


def remove_tmpdir(d):
    shutil.rmtree(d, ignore_errors=True)


def words():
    """The words of lib/util/tp_words.c, which the mock emits and the test
    words model (TP_WORDS_MODEL) holds one piece each."""
    path = os.path.join(source_root(), "lib", "util", "tp_words.c")
    with open(path, encoding="utf-8") as f:
        src = f.read()
    body = src[src.index("{") + 1:src.index("};")]
    ws = re.findall(r'"([^"]*)"', body)
    if len(ws) < 16:
        raise RuntimeError("cannot read the word list from %s" % path)
    return ws


# --------------------------------------------------------------------------
# Raw tensors


def bytes_element(s):
    b = s.encode("utf-8") if isinstance(s, str) else s
    return struct.pack("<I", len(b)) + b


def split_bytes_elements(raw):
    """Splits a raw BYTES tensor into its elements; raises ValueError on a
    bad length prefix."""
    out, off = [], 0
    while off < len(raw):
        if off + 4 > len(raw):
            raise ValueError("truncated length prefix at byte %d" % off)
        (n,) = struct.unpack_from("<I", raw, off)
        off += 4
        if off + n > len(raw):
            raise ValueError("element of %d bytes overruns the tensor at byte %d" % (n, off))
        out.append(raw[off:off + n])
        off += n
    return out


# --------------------------------------------------------------------------
# A byte relay that records what the client sends, and an HPACK decoder
# (libnghttp2's own, through ctypes) to read the request headers back.
#
# grpcio hides te, content-type and grpc-timeout from the application
# (invocation_metadata() shows custom metadata and user-agent only), so the
# tests read those headers off the wire instead.


class _NV(ctypes.Structure):
    _fields_ = [("name", ctypes.c_void_p), ("value", ctypes.c_void_p),
                ("namelen", ctypes.c_size_t), ("valuelen", ctypes.c_size_t),
                ("flags", ctypes.c_uint8)]


_HD_INFLATE_FINAL = 0x01
_HD_INFLATE_EMIT = 0x02
_nghttp2 = None


def _lib():
    global _nghttp2
    if _nghttp2 is None:
        name = ctypes.util.find_library("nghttp2") or "libnghttp2.so.14"
        lib = ctypes.CDLL(name)
        lib.nghttp2_hd_inflate_new.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        lib.nghttp2_hd_inflate_new.restype = ctypes.c_int
        lib.nghttp2_hd_inflate_hd2.argtypes = [ctypes.c_void_p, ctypes.POINTER(_NV),
                                               ctypes.POINTER(ctypes.c_int), ctypes.c_void_p,
                                               ctypes.c_size_t, ctypes.c_int]
        lib.nghttp2_hd_inflate_hd2.restype = ctypes.c_ssize_t
        lib.nghttp2_hd_inflate_end_headers.argtypes = [ctypes.c_void_p]
        lib.nghttp2_hd_inflate_del.argtypes = [ctypes.c_void_p]
        lib.nghttp2_hd_inflate_del.restype = None
        _nghttp2 = lib
    return _nghttp2


class _Inflater:
    def __init__(self):
        self.lib = _lib()
        self.p = ctypes.c_void_p()
        if self.lib.nghttp2_hd_inflate_new(ctypes.byref(self.p)) != 0:
            raise RuntimeError("nghttp2_hd_inflate_new failed")

    def decode(self, block):
        buf = ctypes.create_string_buffer(bytes(block), len(block))
        base = ctypes.addressof(buf)
        off, out = 0, []
        while True:
            nv, flags = _NV(), ctypes.c_int(0)
            rv = self.lib.nghttp2_hd_inflate_hd2(self.p, ctypes.byref(nv), ctypes.byref(flags),
                                                 base + off, len(block) - off, 1)
            if rv < 0:
                raise ValueError("HPACK decoding failed (%d)" % rv)
            off += rv
            if flags.value & _HD_INFLATE_EMIT:
                out.append((ctypes.string_at(nv.name, nv.namelen).decode("latin-1"),
                            ctypes.string_at(nv.value, nv.valuelen).decode("latin-1")))
            if flags.value & _HD_INFLATE_FINAL:
                self.lib.nghttp2_hd_inflate_end_headers(self.p)
                return out
            if rv == 0 and not flags.value & _HD_INFLATE_EMIT:
                raise ValueError("HPACK block ended early")

    def close(self):
        if self.p:
            self.lib.nghttp2_hd_inflate_del(self.p)
            self.p = None


_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def decode_client_headers(data):
    """Parses the bytes a client sent on one connection (preface and HTTP/2
    frames) and returns [(stream_id, [(name, value), ...]), ...]: every
    header block, in wire order.  Raises ValueError on malformed input."""
    if not data.startswith(_PREFACE):
        raise ValueError("connection does not start with the HTTP/2 client preface")
    off = len(_PREFACE)
    inf = _Inflater()
    blocks, pending, pending_sid = [], None, 0
    try:
        while off + 9 <= len(data):
            length = int.from_bytes(data[off:off + 3], "big")
            ftype, flags = data[off + 3], data[off + 4]
            sid = int.from_bytes(data[off + 5:off + 9], "big") & 0x7FFFFFFF
            payload = data[off + 9:off + 9 + length]
            if len(payload) < length:
                break  # the capture ended mid-frame
            off += 9 + length
            if ftype == 0x1:  # HEADERS
                p = 0
                pad = 0
                if flags & 0x8:  # PADDED
                    pad = payload[0]
                    p = 1
                if flags & 0x20:  # PRIORITY
                    p += 5
                frag = payload[p:len(payload) - pad]
                pending, pending_sid = bytearray(frag), sid
                if flags & 0x4:  # END_HEADERS
                    blocks.append((sid, inf.decode(pending)))
                    pending = None
            elif ftype == 0x9:  # CONTINUATION
                if pending is None or sid != pending_sid:
                    raise ValueError("CONTINUATION without HEADERS on stream %d" % sid)
                pending += payload
                if flags & 0x4:
                    blocks.append((sid, inf.decode(pending)))
                    pending = None
    finally:
        inf.close()
    return blocks


class CaptureRelay:
    """Listens on 127.0.0.1 (any free port) and relays every connection to
    127.0.0.1:target_port, keeping a copy of what the client sent."""

    def __init__(self, target_port):
        self.target_port = target_port
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(64)
        self.lsock.settimeout(0.1)
        self.port = self.lsock.getsockname()[1]
        self.lock = threading.Lock()
        self.captures = []  # one bytearray per client connection
        self.socks = []
        self.threads = []
        self.stopping = False
        self.acceptor = threading.Thread(target=self._accept, daemon=True)
        self.acceptor.start()

    def _accept(self):
        while not self.stopping:
            try:
                c, _ = self.lsock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            try:
                s = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
                s.settimeout(None)
            except OSError:
                c.close()
                continue
            c.settimeout(None)
            buf = bytearray()
            with self.lock:
                self.captures.append(buf)
                self.socks += [c, s]
            for src, dst, cap in ((c, s, buf), (s, c, None)):
                t = threading.Thread(target=self._pump, args=(src, dst, cap), daemon=True)
                t.start()
                self.threads.append(t)

    def _pump(self, src, dst, cap):
        try:
            while True:
                b = src.recv(65536)
                if not b:
                    break
                if cap is not None:
                    with self.lock:
                        cap += b
                dst.sendall(b)
        except OSError:
            pass
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def take(self):
        """Returns the captures so far (bytes per connection) and starts
        afresh."""
        with self.lock:
            caps = [bytes(c) for c in self.captures]
            self.captures = []
        return caps

    def requests(self):
        """Decodes and clears the captures: a list of request header lists,
        [(name, value), ...] in wire order, one per stream the client
        opened (trailers, which clients never send on gRPC, would be
        listed too)."""
        out = []
        for cap in self.take():
            seen = set()
            for sid, hdrs in decode_client_headers(cap):
                if sid in seen:
                    continue
                seen.add(sid)
                out.append(hdrs)
        return out

    def close(self):
        self.stopping = True
        try:
            self.lsock.close()
        except OSError:
            pass
        with self.lock:
            socks = list(self.socks)
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
        self.acceptor.join(2)
        for t in self.threads:
            t.join(2)


GRPC_TIMEOUT_RE = re.compile(r"^([0-9]{1,8})([HMSmun])$")
_UNIT_S = {"H": 3600.0, "M": 60.0, "S": 1.0, "m": 1e-3, "u": 1e-6, "n": 1e-9}


def parse_grpc_timeout(v):
    """grpc-timeout value in seconds, or None when malformed (the gRPC over HTTP/2
    specification, PROTOCOL-HTTP2.md)."""
    m = GRPC_TIMEOUT_RE.match(v)
    if not m:
        return None
    return int(m.group(1)) * _UNIT_S[m.group(2)]


def wait_port(port, timeout_s):
    """True once 127.0.0.1:port accepts a connection, False after timeout_s."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
