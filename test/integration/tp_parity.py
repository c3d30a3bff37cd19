"""The flag parity lists of test/parity/ (their format is in each list's
header): reading a list and its captured flags, and the checks every
walker makes of them before walking (test_vllm_parity.py,
test_aiperf_parity.py, test_tool_parity.py)."""
import re

from tp_check import check

STATUSES = ("same", "mapped", "refused")


def read_flags(path):
    """The option strings captured from a tool's code, one a line."""
    with open(path) as f:
        return [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]


def read_rows(path):
    """(line number, tab-separated columns) of each row of a list."""
    rows = []
    with open(path) as f:
        for n, ln in enumerate(f, 1):
            if ln.strip() and not ln.startswith("#"):
                rows.append((n, ln.rstrip("\n").split("\t")))
    return rows


def listed_flags(rows):
    """The flags a list names; a FLAG=VALUE row (a value refused on its
    own) names no flag of its own."""
    return [c[0] for _, c in rows if not re.match(r"^-[-\w]+=", c[0])]


def check_list(what, captured, rows, min_flags, refused_cols=None):
    """The list against the captured flags: every flag listed, only those,
    each once, every row well formed.  Returns the listed flags."""
    listed = listed_flags(rows)
    check(len(captured) > min_flags and len(set(captured)) == len(captured),
          "%s: %d flags captured from the tool's code, no repeats" % (what, len(captured)))
    missing = [f for f in captured if f not in listed]
    extra = [f for f in listed if f not in captured]
    check(not missing, "%s: every flag of the tool's parser is in the parity list" % what, "missing: %s" % missing)
    check(not extra, "%s: the parity list holds only the tool's flags" % what, "not the tool's: %s" % extra)
    check(len(listed) == len(set(listed)), "%s: each flag listed once" % what)
    bad = [(n, c) for n, c in rows if len(c) < 3 or c[1] not in STATUSES
           or (refused_cols and c[1] == "refused" and len(c) != refused_cols)]
    check(not bad, "%s: every line is FLAG, same|mapped|refused and its detail" % what, bad)
    return listed
