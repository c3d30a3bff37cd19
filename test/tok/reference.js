#!/usr/bin/env node
// Prints the reference token ids (Hugging Face's `tokenizers`, the Rust
// library through its Node binding) for every text of a JSONL file, one line
// per text, in the format test/tok/tok_ids.c prints tokperf's.
//
// Usage: node reference.js [--decode] [--special-out FILE] TOKENIZER.json TEXTS.jsonl
// NODE_PATH (or a node_modules beside the caller) must let require() find
// `tokenizers`.  Encoding adds no special tokens (addSpecialTokens: false);
// --decode prints decode(ids, skipSpecialTokens = false) as a JSON string.
// --special-out also writes to FILE, in the same format, the ids with the
// special tokens the tokenizer adds (addSpecialTokens: true): loading the
// tokenizer is most of the run, so one run gives both.
'use strict';
const fs = require('fs');

function main() {
  const args = process.argv.slice(2);
  let decode = false;
  let specialOut = null;
  for (;;) {
    if (args[0] === '--decode') {
      decode = true;
      args.shift();
    } else if (args[0] === '--special-out' && args.length > 1) {
      specialOut = args[1];
      args.splice(0, 2);
    } else {
      break;
    }
  }
  if (args.length !== 2) {
    process.stderr.write('usage: reference.js [--decode] [--special-out FILE] TOKENIZER.json TEXTS.jsonl\n');
    process.exit(2);
  }
  const { Tokenizer } = require('tokenizers');
  const tok = Tokenizer.fromFile(args[0]);
  const lines = fs.readFileSync(args[1], 'utf8').split('\n').filter((l) => l.length > 0);
  const texts = lines.map((l) => JSON.parse(l).text);
  return (async () => {
    // One batch keeps the run short; encodeBatch gives the same ids as
    // encode, text by text.
    const encs = await tok.encodeBatch(texts, { addSpecialTokens: false });
    const out = [];
    for (const e of encs) {
      const ids = e.getIds();
      if (decode) out.push(JSON.stringify(await tok.decode(Array.from(ids), false)));
      else out.push(Array.from(ids).join(' '));
    }
    process.stdout.write(out.join('\n') + '\n');
    if (specialOut !== null) {
      const sp = await tok.encodeBatch(texts, { addSpecialTokens: true });
      fs.writeFileSync(specialOut, sp.map((e) => Array.from(e.getIds()).join(' ')).join('\n') + '\n');
    }
  })();
}

main().catch((e) => {
  process.stderr.write(`reference.js: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
