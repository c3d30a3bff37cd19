#!/usr/bin/env python3
"""Prints every option string of vLLM's `vllm bench serve` parser, one a
line, in the parser's order: the form of test/parity/vllm_bench_serve.flags.

    tools/capture_vllm_flags.py VLLM_CHECKOUT/vllm/benchmarks/datasets/datasets.py \\
                                VLLM_CHECKOUT/vllm/benchmarks/serve.py

Reads the files' Python without running it (no vLLM needed): every
.add_argument(...) call inside the functions that build the parser
(add_cli_args, add_dataset_parser, add_random_dataset_base_args,
add_random_multimodal_dataset_args), each option string of it; an argument
with action=argparse.BooleanOptionalAction also gives its --no- form, as
argparse does.  A function of that list called from another one is read
where it is called, so the order is the parser's.  Give the files in the
order vLLM calls them (the dataset parser first: add_cli_args calls it
first)."""
import ast
import sys

PARSER_FUNCS = ("add_cli_args", "add_dataset_parser", "add_random_dataset_base_args",
                "add_random_multimodal_dataset_args")


def functions(paths):
    found = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=path)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name in PARSER_FUNCS and node.name not in found:
                found[node.name] = node
    return found


def call_name(call):
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None


def flags_of(fn, found, seen_fns, out):
    seen_fns.add(fn.name)
    calls = sorted((n for n in ast.walk(fn) if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset))
    for call in calls:
        name = call_name(call)
        if name in found and name not in seen_fns:
            flags_of(found[name], found, seen_fns, out)
            continue
        if name != "add_argument":
            continue
        opts = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
                and a.value.startswith("-")]
        boolean_optional = any(k.arg == "action" and isinstance(k.value, ast.Attribute)
                               and k.value.attr == "BooleanOptionalAction" for k in call.keywords)
        for o in opts:
            if o not in out:
                out.append(o)
            if boolean_optional and o.startswith("--") and "--no-" + o[2:] not in out:
                out.append("--no-" + o[2:])


def main(paths):
    found = functions(paths)
    missing = [f for f in ("add_cli_args", "add_dataset_parser") if f not in found]
    if missing:
        sys.stderr.write("capture_vllm_flags: %s not found in %s\n" % (", ".join(missing), " ".join(paths)))
        return 2
    out = []
    flags_of(found["add_cli_args"], found, set(), out)
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.stderr.write(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
