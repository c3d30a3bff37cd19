#!/usr/bin/env python3
"""Writes a synthetic tokenizer.json the size and shape of Qwen2's.

    bench/make_qwen_tokenizer.py OUT.json [--merges N] [--seed S]

The start-up benchmark (bench/startup.py) needs a tokenizer as large as the
ones users load, and the benchmark downloads nothing.  This file has the
layout of Qwen2's tokenizer.json: an NFC normalizer, a Sequence
pre-tokenizer of a Split on Qwen2's regex (Isolated) and a ByteLevel with
use_regex false, a ByteLevel decoder, a BPE model of 151,643 entries
(256 byte symbols + 151,387 merges, the counts of Qwen2) and 22 added
special tokens at ids 151643-151664.

Every merge joins two tokens already in the vocabulary into a new one, so
the file is a valid BPE model.  The merges are the prefix chains of
generated words: for a word w, (w[:1], w[1]) makes w[:2], then (w[:2], w[2])
makes w[:3], and so on.  The words are, first, the project's synthetic
prompt words (lib/util/tp_words.c) with and without a leading space and
capitalised, so that a synthetic prompt encodes one token per word as it
does with Qwen's own file; then whitespace runs; then pseudo-random words
of English letter frequencies and runs of CJK characters, until the count
is reached.  Output is deterministic for a given seed (Python's
random.Random is specified to be reproducible).
"""

import argparse
import json
import os
import random
import re
import sys

# Qwen2's pre-tokenizer regex, as its tokenizer.json holds it.
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
            "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
            "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>",
            "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
            "<|repo_name|>", "<|file_sep|>"]

LETTERS = "etaoinshrdlcumwfgypbvkjxqz"
# Rough English letter frequencies (per mille), in LETTERS' order.
LETTER_WEIGHTS = [127, 91, 82, 75, 70, 67, 63, 61, 60, 43, 40, 28, 28, 24, 24, 22, 20, 20, 19, 15, 10, 8, 2, 2, 1, 1]


def bytes_to_unicode():
    """GPT-2's byte-to-symbol map that ByteLevel uses (public specification)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + \
        list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


B2U = bytes_to_unicode()


def sym(text):
    """A text as its byte-level symbols, one per UTF-8 byte."""
    return [B2U[b] for b in text.encode("utf-8")]


def prompt_words(root):
    path = os.path.join(root, "lib", "util", "tp_words.c")
    try:
        with open(path, encoding="utf-8") as f:
            return re.findall(r'"([a-z]+)"', f.read())
    except OSError:
        return []


def build(n_merges, seed, root):
    rng = random.Random(seed)
    vocab = {}
    for b in range(256):
        vocab[B2U[b]] = len(vocab)
    merges = []

    def add_chain(symbols):
        if len(symbols) < 2:
            return
        cur = symbols[0]
        for s in symbols[1:]:
            nxt = cur + s
            if nxt not in vocab:
                if len(merges) >= n_merges:
                    return
                vocab[nxt] = len(vocab)
                merges.append(cur + " " + s)
            cur = nxt

    for w in prompt_words(root):
        for form in (" " + w, w, " " + w.capitalize(), w.capitalize()):
            add_chain(sym(form))
    for k in range(2, 17):
        add_chain(sym(" " * k))
        add_chain(sym("\n" * min(k, 4)))
    while len(merges) < n_merges:
        r = rng.random()
        if r < 0.12:
            # CJK: a run of 1-4 characters from the common block.
            text = "".join(chr(0x4E00 + rng.randrange(0x5000)) for _ in range(rng.randint(1, 4)))
        else:
            n = min(max(2, int(rng.gauss(9, 4))), 24)
            word = "".join(rng.choices(LETTERS, LETTER_WEIGHTS, k=n))
            if r < 0.55:
                word = " " + word
            elif r < 0.65:
                word = " " + word.capitalize()
            text = word
        add_chain(sym(text))
    return vocab, merges


def document(vocab, merges):
    base = len(vocab)
    added = [{"id": base + i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, s in enumerate(SPECIALS)]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": QWEN2_REGEX}, "behavior": "Isolated", "invert": False},
            byte_level]},
        "post_processor": dict(byte_level),
        "decoder": dict(byte_level),
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                  "vocab": vocab, "merges": merges},
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--merges", type=int, default=151387)
    ap.add_argument("--seed", type=int, default=2)
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    vocab, merges = build(a.merges, a.seed, root)
    tmp = a.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(document(vocab, merges), f, ensure_ascii=False, indent=None, separators=(",", ":"))
    os.replace(tmp, a.out)
    print(f"{a.out}: {len(vocab)} vocabulary entries + {len(SPECIALS)} added, {len(merges)} merges, "
          f"{os.path.getsize(a.out)} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
