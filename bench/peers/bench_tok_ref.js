#!/usr/bin/env node
// The reference side of bench/bench_tok.c: Hugging Face's `tokenizers` (the
// Rust library through its Node binding) on the same texts, measured the
// same way, printed in the same columns.
//
// Usage: RAYON_NUM_THREADS=1 taskset -c 0 node bench_tok_ref.js \
//          [--seconds S] [--loads N] TEXTS TOKENIZER.json...
// TEXTS is read as bench_tok reads it: a .jsonl file of {"text": ...}
// objects, or one text per non-empty line.
// Encoding goes through encodeBatch over all texts at once: one call into
// Rust per pass, so the JavaScript side costs next to nothing and the figure
// is the library's own.  RAYON_NUM_THREADS=1 keeps the batch on one thread
// (rayon would otherwise use every core), and taskset pins the process.
// addSpecialTokens is false, as in tokperf.
'use strict';
const fs = require('fs');
const { Tokenizer } = require('tokenizers');

const now = () => Number(process.hrtime.bigint()) / 1e9;

async function main() {
  const args = process.argv.slice(2);
  let seconds = 3;
  let loads = 5;
  while (args.length && args[0].startsWith('--')) {
    const k = args.shift();
    if (k === '--seconds') seconds = Number(args.shift());
    else if (k === '--loads') loads = Number(args.shift());
    else throw new Error(`unknown option ${k}`);
  }
  if (args.length < 2) throw new Error('usage: bench_tok_ref.js [--seconds S] [--loads N] TEXTS TOKENIZER.json...');
  const lines = fs.readFileSync(args[0], 'utf8').split('\n');
  const texts = args[0].endsWith('.jsonl')
    ? lines.filter((l) => l).map((l) => JSON.parse(l).text)
    : lines.map((l) => l.replace(/\r+$/, '')).filter((l) => l);
  const bytes = texts.reduce((n, t) => n + Buffer.byteLength(t, 'utf8'), 0);
  const opts = { addSpecialTokens: false };
  console.log('tokenizer\tload_ms\ttokens\tbytes\tseconds\ttokens_per_s\tMB_per_s\tcold_tokens_per_s');
  for (const file of args.slice(1)) {
    const count = (encs) => encs.reduce((n, e) => n + e.getIds().length, 0);
    // Each load is followed by one pass (a fresh tokenizer has an empty
    // cache): the median of those is the cold rate, as in bench_tok.
    let best = Infinity;
    let tok = null;
    let cold = 0;
    const colds = [];
    for (let i = 0; i < loads; i++) {
      const t0 = now();
      tok = Tokenizer.fromFile(file);
      best = Math.min(best, now() - t0);
      const c0 = now();
      cold = count(await tok.encodeBatch(texts, opts));
      colds.push(now() - c0);
    }
    colds.sort((a, b) => a - b);
    const nc = colds.length;
    const coldS = nc % 2 ? colds[(nc - 1) / 2] : (colds[nc / 2 - 1] + colds[nc / 2]) / 2;
    // Every pass timed on its own; the median is reported (as bench_tok).
    const times = [];
    let per = 0;
    const t0 = now();
    while (now() - t0 < seconds || times.length < 3) {
      const p0 = now();
      per = count(await tok.encodeBatch(texts, opts));
      times.push(now() - p0);
    }
    times.sort((a, b) => a - b);
    const m = times.length;
    const med = m % 2 ? times[(m - 1) / 2] : (times[m / 2 - 1] + times[m / 2]) / 2;
    const name = file.split('/').slice(-3).join('/');
    console.log([name, (best * 1e3).toFixed(1), per, bytes, med.toFixed(4), (per / med).toFixed(0),
      (bytes / med / 1e6).toFixed(2), (cold / coldS).toFixed(0)].join('\t'));
  }
}

main().catch((e) => {
  process.stderr.write(`bench_tok_ref.js: ${e && e.message ? e.message : e}\n`);
  process.exit(1);
});
