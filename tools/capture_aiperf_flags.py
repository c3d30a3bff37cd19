#!/usr/bin/env python3
"""Prints every option string of AIPerf's `aiperf profile` command, one a
line, in the configuration files' order: the form of
test/parity/aiperf_profile.flags.

    tools/capture_aiperf_flags.py AIPERF_CHECKOUT/aiperf/common/config

Reads the files' Python without running it (no AIPerf or cyclopts needed):
`aiperf profile` takes UserConfig and ServiceConfig (aiperf/cli.py), whose
fields cyclopts flattens into flags named by the name= of each field's
CLIParameter or DeveloperOnlyCLI annotation (the developer flags are parsed
only under AIPERF_DEV_MODE); a DisableCLI field has no flag.  CLIParameter
sets negative=False, so no flag has a --no- form.  (Newer AIPerf keeps the
same files under src/aiperf/common/config.)"""
import ast
import os
import sys

FILES = ("endpoint_config.py", "input_config.py", "conversation_config.py", "prompt_config.py", "audio_config.py",
         "image_config.py", "output_config.py", "tokenizer_config.py", "loadgen_config.py", "service_config.py",
         "worker_config.py", "zmq_config.py", "dev_config.py")
ANNOTATIONS = ("CLIParameter", "DeveloperOnlyCLI")


def main(config_dir):
    for name in FILES:
        path = os.path.join(config_dir, name)
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=path)
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") in ANNOTATIONS]
        for call in sorted(calls, key=lambda c: c.lineno):
            for kw in call.keywords:
                if kw.arg != "name":
                    continue
                v = kw.value
                for e in (v.elts if isinstance(v, ast.Tuple) else [v]):
                    print(e.value)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: capture_aiperf_flags.py AIPERF_CHECKOUT/aiperf/common/config")
    main(sys.argv[1])
