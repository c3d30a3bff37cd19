"""What every stand-alone integration script shares: one TAP stream
(check, then done, which prints the plan and exits 1 when any check
failed), the time scale of slow builds, and a free loopback port.

A script in test/integration or one directory below puts this directory on
sys.path and imports from here; the TAP producer itself is the interop
tests' (interop/interop_common.py)."""
import os
import shutil
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


HF_COMMIT = "0123456789abcdef0123456789abcdef01234567"


def hf_cache_put(hub, model, tokenizer, commit=HF_COMMIT):
    """model ("ORG/NAME") in a Hugging Face cache at hub, laid out as
    huggingface_hub lays it out (refs/main naming a snapshot that holds the
    tokenizer file), the file a copy of tokenizer (its name kept when it is
    a tokenizer.json, else tokenizer.model).  Returns the repo's folder."""
    repo = os.path.join(hub, "models--" + model.replace("/", "--"))
    snap = os.path.join(repo, "snapshots", commit)
    os.makedirs(snap, exist_ok=True)
    os.makedirs(os.path.join(repo, "refs"), exist_ok=True)
    with open(os.path.join(repo, "refs", "main"), "w") as f:
        f.write(commit)
    name = "tokenizer.json" if tokenizer.endswith(".json") else "tokenizer.model"
    shutil.copy(tokenizer, os.path.join(snap, name))
    return repo
