"""Shared pieces of the mock server's integration tests.

The tests start test/integration/mock/mock_harness (a small program that
runs the mock through the public API with any tp_mock_config field set from
its arguments), talk to it over loopback with python3-grpcio, the stdlib's
http.client, raw sockets, curl and nghttp, and assert on what came back and
on what the server counted (tp_mock_stats through the harness's `stats`
command).

Run with /usr/bin/python3 (Debian's python3-grpcio lives there only).  TAP
and the grpcio stub generation come from ../interop/interop_common.py.
"""

import json
import os
import queue
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(HERE, "..", "interop"))
import interop_common as ic  # noqa: E402

Tap = ic.Tap
SCALE = ic.time_scale()


class Harness:
    """One mock_harness child: the mock with the given config fields."""

    def __init__(self, exe, prefix=(), **fields):
        # prefix: a command to run it under (ip netns exec NAME, for one).
        args = list(prefix) + [exe] + ["%s=%s" % (k, v) for k, v in fields.items()]
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.lines = queue.Queue()
        self.stderr = []
        threading.Thread(target=self._read_out, daemon=True).start()
        self._err_thread = threading.Thread(target=self._read_err, daemon=True)
        self._err_thread.start()
        first = self._line(10 * SCALE)
        if first is None:
            self.kill()
            raise RuntimeError("mock_harness did not start: %r" % self.stderr[-5:])
        info = json.loads(first)
        if "error" in info:
            # The reason is on stderr: let the child exit and its reader
            # thread take everything before quoting it.
            try:
                self.proc.wait(timeout=10 * SCALE)
            except subprocess.TimeoutExpired:
                pass
            self._err_thread.join(timeout=5 * SCALE)
            self.kill()
            raise RuntimeError("mock_harness cannot start: %r" % self.stderr[-5:])
        self.grpc_port = info["grpc_port"]
        self.http_port = info["http_port"]

    def _read_out(self):
        for raw in iter(self.proc.stdout.readline, b""):
            self.lines.put(raw.decode(errors="replace").strip())
        self.lines.put(None)

    def _read_err(self):
        for raw in iter(self.proc.stderr.readline, b""):
            self.stderr.append(raw.decode(errors="replace").rstrip("\n"))

    def _line(self, timeout_s):
        try:
            return self.lines.get(timeout=timeout_s)
        except queue.Empty:
            return None

    def stats(self):
        self.proc.stdin.write(b"stats\n")
        self.proc.stdin.flush()
        line = self._line(10 * SCALE)
        if line is None:
            raise RuntimeError("mock_harness gave no stats")
        return json.loads(line)

    def wait_stats(self, pred, timeout_s=3.0):
        """Polls the counters until pred(stats) holds (the server finishes a
        request a moment after the client saw its end); returns the last."""
        end = time.monotonic() + timeout_s * SCALE
        st = self.stats()
        while not pred(st) and time.monotonic() < end:
            time.sleep(0.02)
            st = self.stats()
        return st

    def stop(self, timeout_s=10.0):
        """Stops the mock; returns the exit status (None when killed)."""
        try:
            self.proc.stdin.write(b"quit\n")
            self.proc.stdin.flush()
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(timeout_s * SCALE)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def finish(self, tap, what):
        """Stops the mock and checks it exits 0 (a sanitizer report or a
        leak makes it fail), showing its stderr when not."""
        rc = self.stop()
        if not tap.check(rc == 0, "%s: mock stops cleanly (exit 0)" % what, "exit %r" % rc):
            tap.diag("\n".join(self.stderr[-40:]))
        return rc

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def splitmix(x):
    x = (x + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return x ^ (x >> 31)


def fault_drawn(seed, number, rate):
    """tp_mock_fault_draw, restated: whether request `number` draws the
    server-wide fault."""
    if rate <= 0:
        return False
    if rate >= 1:
        return True
    x = splitmix(splitmix(seed ^ 0x6661756C74) ^ number)
    return (x >> 11) * (2.0 ** -53) < rate


def words():
    return ic.words()
