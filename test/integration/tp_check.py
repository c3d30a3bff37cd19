"""What every stand-alone integration script shares: one TAP stream
(check, then done, which prints the plan and exits 1 when any check
failed), the time scale of slow builds, and a free loopback port.

A script in test/integration or one directory below puts this directory on
sys.path and imports from here; the TAP producer itself is the interop
tests' (interop/interop_common.py)."""
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "interop"))
import interop_common as ic  # noqa: E402

# Sanitizer builds set TP_TEST_TIMEOUT_MULTIPLIER: every timeout is scaled by it.
SCALE = ic.time_scale()
free_port = ic.free_port
wait_port = ic.wait_port  # (port, timeout_s): True once 127.0.0.1:port accepts

_tap = ic.Tap()


def check(cond, what, detail=""):
    """One TAP line; on failure, up to 30 lines of detail as diagnostics."""
    note = None
    if not cond and detail is not None and str(detail) != "":
        note = "\n".join(str(detail).splitlines()[:30])
    return _tap.check(cond, what, note)


def skip(what, why):
    """One TAP line that did not run, and why (# SKIP): never a silent pass."""
    _tap.skip(what, why)


def done():
    """The plan, then exit: 1 when any check failed (or none ran), else 0."""
    sys.exit(_tap.finish())
