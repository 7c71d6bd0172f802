import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';
import jsYaml from 'js-yaml';
import { prng } from '../../../test/support/prng.ts';
import { repositoryYaml } from '../../../test/support/repository-yaml.ts';
import { mutateYaml, pick, YAML_INSERTS, YAML_INSERTS_RARE } from '../../../test/support/yaml-mutations.ts';
import { FAST_YAML_MAX_DEPTH, fastLoadAll } from './fast-yaml.ts';
import { parseManifestText } from './load-manifests.ts';

/** What the product ran before the fast path: js-yaml's loadAll with the core schema, or its error. */
function reference(text: string): { values: unknown[] } | { error: string } {
  try {
    const values: unknown[] = [];
    jsYaml.loadAll(text, (doc) => values.push(doc), { schema: jsYaml.CORE_SCHEMA, json: false });
    return { values };
  } catch (e) {
    return { error: (e as Error).message };
  }
}

type Outcome = 'fast' | 'fallback';

/** The fast path's answer must be js-yaml's, or none at all. */
function compare(text: string, label: string): Outcome {
  const fast = fastLoadAll(text);
  if (fast === undefined) return 'fallback';
  const ref = reference(text);
  assert.ok(
    'values' in ref,
    `${label}: js-yaml refuses what the fast path took (${JSON.stringify(ref)}):\n${text}`,
  );
  assert.deepStrictEqual(
    fast,
    ref.values,
    `${label}: the fast path differs from js-yaml:\n${JSON.stringify(text)}`,
  );
  // deepStrictEqual ignores the order of keys; what the checks and the state write depend on it.
  assert.deepStrictEqual(keyOrder(fast), keyOrder(ref.values), `${label}: keys in another order`);
  return 'fast';
}

/** Every object's own keys, in order, depth first. */
function keyOrder(value: unknown, out: string[][] = []): string[][] {
  if (value !== null && typeof value === 'object') {
    if (!Array.isArray(value)) out.push(Reflect.ownKeys(value).map(String));
    for (const v of Object.values(value)) keyOrder(v, out);
  }
  return out;
}

/** Plain scalars the subset takes, typed or not: js-yaml's core schema's edges among them. */
const PLAIN = [
  'a',
  'www',
  'z1-r5',
  'A',
  'TXT',
  'scale',
  'ns1.example.',
  'null',
  'Null',
  'NULL',
  'nULL',
  '~',
  '~~',
  'true',
  'True',
  'TRUE',
  'tRUE',
  'false',
  'False',
  'FALSE',
  'yes',
  'no',
  'on',
  'off',
  'y',
  'n',
  'nul',
  'nulls',
  'tru',
  'fals',
  'ttl',
  'true1',
  '1',
  '0',
  '-0',
  '+0',
  '+1',
  '-1',
  '007',
  '08',
  '0x1F',
  '0x',
  '0X1F',
  '0xg',
  '-0x1F',
  '0o17',
  '0o8',
  '0b101',
  '0b2',
  '0b',
  '1.5',
  '-1.5',
  '.5',
  '+.5',
  '-.5',
  '5.',
  '1e3',
  '1E3',
  '1e400',
  '-1e400',
  '1.0e+3',
  '1e',
  '.inf',
  '-.inf',
  '+.Inf',
  '.INF',
  '.iNf',
  '.NaN',
  '.nan',
  '-.nan',
  '.',
  '..',
  '-.',
  '+',
  '9007199254740993',
  '12345678901234567890',
  '2026-01-01',
  '2026-01-01T00:00:00Z',
  '1_000',
  '1,000',
  '0.1.2',
  '192.0.2.1',
  '2001:db8::1',
  'http://x.example/a',
  'a:b',
  'a#b',
  '-x',
  '--',
  'x,y',
  'x]',
  'x}',
  'ü',
  '日本',
  '😀',
  'a\u00a0b',
  'a b',
  'a  b',
  "it's",
  'say "x"',
  'v=spf1 mx -all',
  '10 mail',
  'constructor',
  'toString',
  '<<',
];

/** Plain scalars the subset refuses, or that end a scalar early. */
const PLAIN_EDGE = [
  'a: b',
  'a:',
  'a #b',
  '@x',
  '`x',
  '%x',
  '&a',
  '*a',
  '!t',
  '!!str x',
  '|',
  '>',
  '?x',
  '? x',
  ':x',
  '- x',
  '-',
  '---',
  '...',
  '[x]',
  '{x}',
  'a\u2028b',
  'a\x7fb',
  'a\x85b',
  'a\ufeffb',
  'a\ud800b',
  '__proto__',
];

/** The inside of a double-quoted scalar: escapes js-yaml takes, and some it refuses. */
const DOUBLE = [
  'x',
  '',
  ' ',
  '2001:db8::10',
  'a\\nb',
  'a\\tb',
  '\\x41',
  '\\xZZ',
  '\\u00e9',
  '\\ud800',
  '\\U0001F600',
  '\\"',
  '\\\\',
  '\\/',
  '\\ ',
  '\\N\\_\\L\\P\\e\\0\\a\\b\\v\\f\\r',
  "it's",
  '#not a comment',
  'a: b',
  '@',
  'é😀',
];

/** Escapes js-yaml refuses (or this subset does). */
const DOUBLE_EDGE = ['\\U00110000', '\\UFFFFFFFF', '\\q', '\\', 'a\nb'];

/** The inside of a single-quoted scalar. */
const SINGLE = ['x', '', "it''s", '"quoted"', 'a\\nb', '#x', "''", 'a: b', ' '];

const KEYS = [
  'apiVersion',
  'kind',
  'metadata',
  'name',
  'namespace',
  'spec',
  'records',
  'type',
  'a',
  'a b',
  'x.y/z',
  'n',
  '<<',
  'toString',
  'a#b',
  'ü',
  '"quoted key"',
  "'single'",
  '"1"',
  '-k',
];

/** Keys that would not stay strings, or are no plain keys. */
const KEYS_EDGE = ['true', 'null', '1', '0x1', '.inf', '~', '__proto__', '"__proto__"', '[k]', '? k', '&k k'];

/** Mostly from `inside`, now and then from `edge`. */
function mostly<T>(rng: () => number, inside: readonly T[], edge: readonly T[]): T {
  return rng() < 0.03 ? pick(rng, edge) : pick(rng, inside);
}

const key = (rng: () => number) => mostly(rng, KEYS, KEYS_EDGE);

/** A scalar as written: plain, double- or single-quoted. */
function scalar(rng: () => number): string {
  const r = rng();
  if (r < 0.6) return mostly(rng, PLAIN, PLAIN_EDGE);
  if (r < 0.85) return `"${mostly(rng, DOUBLE, DOUBLE_EDGE)}"`;
  return `'${pick(rng, SINGLE)}'`;
}

function flow(rng: () => number, depth: number): string {
  const n = Math.floor(rng() * 4);
  const spaced = rng() < 0.5;
  const entry = () => (depth < 3 && rng() < 0.2 ? flow(rng, depth + 1) : scalar(rng));
  const items: string[] = [];
  const mapping = rng() < 0.5;
  for (let i = 0; i < n; i++) items.push(mapping ? `${key(rng)}: ${entry()}` : entry());
  const inner = items.join(rng() < 0.8 ? ', ' : ',');
  return mapping ? (spaced ? `{ ${inner} }` : `{${inner}}`) : spaced ? `[ ${inner} ]` : `[${inner}]`;
}

function comment(rng: () => number): string {
  return rng() < 0.15 ? ` # ${pick(rng, ['c', 'a: b', '- x', '"', ''])}` : '';
}

/** A value after `key:` or `- `: inline, or lines below at a deeper indent (or a sequence at the same). */
function value(rng: () => number, indent: number, depth: number, lines: string[], head: string): void {
  const r = rng();
  if (depth < 5 && r < 0.3) {
    lines.push(head + comment(rng));
    const step = rng() < 0.8 ? 2 : Math.floor(rng() * 4);
    const nested = indent + step;
    if (rng() < 0.5) mapping(rng, nested, depth + 1, lines);
    else sequence(rng, rng() < 0.3 ? indent : nested, depth + 1, lines);
  } else if (r < 0.35) {
    lines.push(head + comment(rng)); // empty: null
  } else if (r < 0.5) {
    lines.push(`${head} ${flow(rng, 0)}${comment(rng)}`);
  } else {
    lines.push(`${head} ${scalar(rng)}${comment(rng)}`);
  }
}

function mapping(rng: () => number, indent: number, depth: number, lines: string[], first = ''): void {
  const n = 1 + Math.floor(rng() * 4);
  for (let i = 0; i < n; i++) {
    if (rng() < 0.08) lines.push(`${' '.repeat(Math.floor(rng() * 6))}# comment`);
    if (rng() < 0.05) lines.push('');
    const pad = i === 0 && first ? first : ' '.repeat(indent);
    value(rng, indent, depth, lines, `${pad}${key(rng)}:`);
  }
}

function sequence(rng: () => number, indent: number, depth: number, lines: string[]): void {
  const n = 1 + Math.floor(rng() * 4);
  for (let i = 0; i < n; i++) {
    const pad = ' '.repeat(indent);
    if (depth < 5 && rng() < 0.25) {
      // `- key: value`, the mapping's keys at the column after `- `
      const gap = rng() < 0.85 ? 1 : 2;
      mapping(rng, indent + 1 + gap, depth + 1, lines, `${pad}-${' '.repeat(gap)}`);
    } else {
      value(rng, indent, depth, lines, `${pad}-`);
    }
  }
}

function documentText(rng: () => number): string {
  const docs: string[] = [];
  const count = 1 + Math.floor(rng() * 3);
  for (let d = 0; d < count; d++) {
    const lines: string[] = [];
    if (rng() < 0.1) lines.push('# a file comment');
    if (rng() < 0.1) {
      // an empty document
    } else if (rng() < 0.85) mapping(rng, 0, 0, lines);
    else sequence(rng, 0, 0, lines);
    docs.push(lines.join('\n'));
  }
  let text =
    (rng() < 0.2 ? '---\n' : '') + docs.join(pick(rng, ['\n---\n', '\n---\n', '\n--- # next\n', '\n']));
  if (rng() < 0.7) text += '\n';
  if (rng() < 0.05) text += '---\n';
  return text;
}

describe('fastLoadAll against js-yaml', () => {
  test('every YAML file and YAML block of the repository: the same values, or a fallback', () => {
    const all = repositoryYaml();
    assert.ok(all.length > 50, `found ${all.length}`);
    const taken: string[] = [];
    for (const { label, text } of all) if (compare(text, label) === 'fast') taken.push(label);
    // The examples are what manifests look like: each is read by the fast path.
    const examples = all.filter((f) => f.label.startsWith(`examples${path.sep}`));
    assert.ok(examples.length >= 5);
    for (const f of examples) assert.ok(taken.includes(f.label), `${f.label} fell back`);
    assert.ok(taken.length > all.length / 2, `${taken.length} of ${all.length} taken`);
  });

  test('the shapes the product and its bench write', () => {
    const texts = [
      'apiVersion: dns.zonekeeper.dev/v1alpha1\nkind: DNSRecordSet\nmetadata: { name: z1-r5, namespace: scale }\nspec: { zoneRef: { name: z1 }, name: "a.b", type: A, records: ["192.0.2.1"] }\n',
      'apiVersion: v1\nkind: DNSZoneClass\nmetadata: { name: builtin }\nspec:\n  backend: { builtin: {} }\n  nameServers: ["ns1.", "ns2."]\n  defaults: { ttl: 300, soa: { rname: "hostmaster@x.test" } }\n',
      'a:\n- 1\n- two\nb:\n  - c: d\n    e: [f, g]\n  -\n  - "h"\n',
      'a: 1\n---\n---\nb: 2\n---\n',
      '# only a comment\n',
      '\n\n',
      '\n',
      '',
      '   ',
      '---',
      'a: 0x1F\nb: 0o17\nc: .inf\nd: -.Inf\ne: .nan\nf: -0\ng: ~\nh: Null\ni: TRUE\nj: 1e3\nk: 5.\nl: 007\nm: 2026-01-01\n',
      'key : v\n"quoted": \'x\'\n',
      'a: x\n   # a deeper comment ends a plain scalar\nb: [y]\n     # and follows a flow collection\n',
    ];
    for (const text of texts) compare(text, 'shape');
    assert.deepStrictEqual(fastLoadAll(texts[3]!), [{ a: 1 }, null, { b: 2 }, null]);
    assert.deepStrictEqual(fastLoadAll('\n\n'), [null]);
    assert.deepStrictEqual(fastLoadAll('\n'), []);
    // js-yaml reads `-0` as the integer 0 (not -0): so does the fast path, by its resolver.
    assert.ok(Object.is((fastLoadAll('a: -0') as [{ a: number }])[0].a, 0));
    assert.notEqual(fastLoadAll(texts[0]!), undefined);
    assert.notEqual(fastLoadAll(texts[2]!), undefined);
    assert.deepStrictEqual(fastLoadAll(texts.at(-1)!), [{ a: 'x', b: ['y'] }]);
  });

  test('outside the subset: a fallback, whatever js-yaml does with it', () => {
    for (const text of [
      'a: &x 1\nb: *x\n',
      'a: !!str 1\n',
      '%YAML 1.2\n---\na: 1\n',
      'a: |\n  x\n',
      'a: >\n  x\n',
      'a: "x\n  y"\n',
      'a: x\n  y\n',
      'a: [x,\n  y]\n',
      '? a\n: b\n',
      '[a]: b\n',
      'a:\tb\n',
      'a: b\r\n',
      '\ufeffa: b\n',
      'a: 1\na: 2\n',
      'a: {b: 1, b: 2}\n',
      '1: a\n',
      'null: a\n',
      '__proto__: a\n',
      'a: 1\n...\n',
      '  a: 1\n',
      'plain scalar\n',
      '[a, b]\n',
      'a: b: c\n',
      'a: [b, ]\n',
      'a: {b}\n',
      '- - a\n',
      'a:\n  -\n- x\n',
      'a: "\\q"\n',
      'a: b\x85c\n',
    ]) {
      assert.equal(fastLoadAll(text), undefined, JSON.stringify(text));
    }
  });

  test('seeded random documents, in and just outside the subset: the same values, or a fallback', (t) => {
    const counts = { fast: 0, fallback: 0, mutatedFast: 0, mutatedFallback: 0, jsYamlErrors: 0 };
    for (let seed = 1; seed <= 3000; seed++) {
      const rng = prng(seed);
      const text = documentText(rng);
      counts[compare(text, `seed ${seed}`)]++;
      for (let m = 0; m < 2; m++) {
        const mutated = mutateYaml(rng, text, { inserts: YAML_INSERTS, rare: YAML_INSERTS_RARE });
        if ('error' in reference(mutated)) counts.jsYamlErrors++;
        if (compare(mutated, `seed ${seed} mutation ${m}`) === 'fast') counts.mutatedFast++;
        else counts.mutatedFallback++;
      }
    }
    t.diagnostic(JSON.stringify(counts));
    // Enough of each kind that the comparison means something.
    assert.ok(counts.fast > 600, JSON.stringify(counts));
    assert.ok(counts.mutatedFast > 600, JSON.stringify(counts));
    assert.ok(counts.mutatedFallback > 1000, JSON.stringify(counts));
    assert.ok(counts.jsYamlErrors > 500, JSON.stringify(counts));
  });

  test('mapping keys met again, alike, repeated or past sixteen: the same values, or a fallback', (t) => {
    // Keys from a few characters, so that many share a length, their first and last characters and
    // their packed halves (a flow key's first seven and next seven characters); lengths around 7, 14
    // and 15, spaces inside, non-ASCII, and keys the resolvers take.
    const letters = ['a', 'b', 'n', ' ', 'e', '1', '.', 'ü', '-'];
    const rng = prng(7);
    const word = (): string => {
      if (rng() < 0.05) return pick(rng, ['1', 'null', 'true', '~', '.inf', '0x1', '__proto__', 'n']);
      const length = pick(rng, [1, 2, 6, 7, 8, 13, 14, 15, 16, 20]);
      let w = '';
      for (let i = 0; i < length; i++) w += rng() < 0.9 ? pick(rng, letters.slice(0, 4)) : pick(rng, letters);
      return w;
    };
    const counts = { fast: 0, fallback: 0 };
    for (let round = 0; round < 1500; round++) {
      const keys: string[] = [];
      const count = 1 + Math.floor(rng() * 20);
      for (let i = 0; i < count; i++) keys.push(rng() < 0.08 && keys.length > 0 ? pick(rng, keys) : word());
      const flowText = `m: {${keys.map((k, i) => `${k}: ${i}`).join(', ')}}\n`;
      const blockText = `m:\n${keys.map((k, i) => `  ${k}: ${i}`).join('\n')}\n`;
      const nested = `- { a: { ${keys[0]}: x }, ${keys.at(-1)}: [1] }\n- ${keys[0]}: 1\n`;
      for (const text of [flowText, blockText, nested]) counts[compare(text, `round ${round}`)]++;
    }
    t.diagnostic(JSON.stringify(counts));
    assert.ok(counts.fast > 1000 && counts.fallback > 1000, JSON.stringify(counts));
    // Keys alike but for three characters among their first seven, or after them, read one after
    // another, in flow mappings then in block mappings: many share a place in the table of keys met
    // before, none is taken for another.
    const abc = 'abcdefghijklmnopqrstuvwxyz';
    for (const flow of [true, false])
      for (const a of abc)
        for (const b of abc)
          for (const c of abc)
            for (const k of [`${a}${b}${c}kkkkkkk`, `kkkkkkk${a}${b}${c}`, `kkkkkkkkkkk${a}${b}${c}`]) {
              const value = fastLoadAll(flow ? `m: {${k}: 1}\n` : `${k}: 1\n`)?.[0] as Record<
                string,
                unknown
              >;
              assert.deepEqual(Object.keys(flow ? (value.m as object) : value), [k]);
            }
    // A repeated key is refused wherever it comes: among the first sixteen keys or after them.
    const many = Array.from({ length: 20 }, (_, i) => `k${i}`);
    for (const at of [1, 15, 16, 17, 19]) {
      const keys = [...many.slice(0, at), many[at - 1]!];
      assert.equal(
        fastLoadAll(`{${keys.map((k) => `${k}: 1`).join(', ')}}\n`.replace(/^/, 'm: ')),
        undefined,
      );
      assert.equal(fastLoadAll(keys.map((k) => `${k}: 1\n`).join('')), undefined);
      assert.notEqual(
        fastLoadAll(
          many
            .slice(0, at + 1)
            .map((k) => `${k}: 1\n`)
            .join(''),
        ),
        undefined,
      );
    }
  });

  test('parseManifestText gives the documents js-yaml gave, numbered the same, and the same errors', () => {
    const text =
      '# head\n---\napiVersion: v1\nkind: A\nmetadata: {name: a}\n---\n---\nkind: B\nmetadata:\n  name: b\n  labels: {x: "1"}\n';
    const read = parseManifestText(text, 'f.yaml');
    assert.deepStrictEqual(
      read.documents.map((d) => [d.document, d.value, d.line]),
      [
        [1, { apiVersion: 'v1', kind: 'A', metadata: { name: 'a' } }, 2],
        [3, { kind: 'B', metadata: { name: 'b', labels: { x: '1' } } }, 7],
      ],
    );
    assert.equal(read.documents[1]!.lineOf('metadata.labels'), 11);
    // A repeated key still goes to the precise parse, with its line.
    const dup = parseManifestText('kind: A\nmetadata:\n  name: a\n  name: b\n', 'dup.yaml');
    assert.deepStrictEqual(dup.fileErrors, [
      { file: 'dup.yaml', document: 1, line: 4, message: 'YAML: Map keys must be unique' },
    ]);
  });
});

describe('fastLoadAll on hostile input', () => {
  // Sizes at which quadratic work, or a recursion per level, would not finish or would overflow the
  // stack; each answer is a fallback or js-yaml's own.
  const bounded = (text: string, label: string): Outcome => {
    const fast = fastLoadAll(text);
    if (fast === undefined) return 'fallback';
    return compare(text, label);
  };

  test('deep nesting falls back past the bound, without recursing further', () => {
    const deep = 100_000;
    const block = Array.from({ length: 5_000 }, (_, i) => `${' '.repeat(i)}a:`).join('\n');
    assert.equal(fastLoadAll(block), undefined);
    assert.equal(fastLoadAll(`a: ${'['.repeat(deep)}${']'.repeat(deep)}\n`), undefined);
    assert.equal(fastLoadAll(`a: ${'{a: '.repeat(deep)}1${'}'.repeat(deep)}\n`), undefined);
    assert.equal(fastLoadAll(`${'- '.repeat(deep)}x\n`), undefined);
    const seq = Array.from({ length: 5_000 }, (_, i) => `${' '.repeat(i)}-`).join('\n');
    assert.equal(fastLoadAll(seq), undefined);
    // At the bound, taken and the same as js-yaml's.
    const atBound = Array.from({ length: FAST_YAML_MAX_DEPTH }, (_, i) => `${' '.repeat(i)}a:`).join('\n');
    assert.equal(bounded(atBound, 'at the bound'), 'fast');
    const past = Array.from({ length: FAST_YAML_MAX_DEPTH + 1 }, (_, i) => `${' '.repeat(i)}a:`).join('\n');
    assert.equal(fastLoadAll(past), undefined);
  });

  test('very long lines, many keys, many entries, many documents', () => {
    const long = 'x'.repeat(1_000_000);
    assert.equal(bounded(`a: ${long}\n`, 'long plain'), 'fast');
    assert.equal(bounded(`a: "${long}"\n`, 'long quoted'), 'fast');
    assert.equal(bounded(`a: '${"''".repeat(200_000)}'\n`, 'many quotes'), 'fast');
    assert.equal(bounded(`a: "${'\\n'.repeat(200_000)}"\n`, 'many escapes'), 'fast');
    assert.equal(
      bounded(`a: [${Array.from({ length: 50_000 }, (_, i) => i).join(', ')}]\n`, 'long flow'),
      'fast',
    );
    const keys = Array.from({ length: 50_000 }, (_, i) => `k${i}: ${i}`).join('\n');
    assert.equal(bounded(keys, 'many keys'), 'fast');
    // A repeated key at the very end of a large mapping: found by a look-up, not by comparing pairs.
    assert.equal(fastLoadAll(`${keys}\nk0: again\n`), undefined);
    const entries = Array.from({ length: 50_000 }, (_, i) => `- ${i}`).join('\n');
    assert.equal(bounded(entries, 'many entries'), 'fast');
    assert.equal(bounded('---\n'.repeat(50_000), 'many empty documents'), 'fast');
    assert.equal(bounded('a: 1\n---\n'.repeat(30_000), 'many documents'), 'fast');
  });

  test('pathological indentation, blank lines and comments', () => {
    assert.equal(bounded(`a: 1\n${' '.repeat(1_000_000)}\nb: 2\n`, 'a line of spaces'), 'fast');
    assert.equal(bounded(`a:\n${'\n'.repeat(200_000)}  b: 1\n`, 'blank lines'), 'fast');
    assert.equal(bounded(`a:\n${'      # c\n'.repeat(50_000)}  b: 1\n`, 'comment lines'), 'fast');
    // Every line one space deeper than the one before: a fallback at the first, whatever the length.
    const stairs = Array.from({ length: 20_000 }, (_, i) => `${' '.repeat(i % 1_000)}k${i}: v`).join('\n');
    assert.equal(fastLoadAll(stairs), undefined);
    // Indents that go back and forth inside a long sequence of mappings.
    const zigzag = Array.from({ length: 10_000 }, (_, i) => `- a: ${i}\n  b:\n    c: [${i}]`).join('\n');
    assert.equal(bounded(zigzag, 'zigzag'), 'fast');
    assert.equal(fastLoadAll(`a: 1\n${' '.repeat(1_000_000)}b: 2\n`), undefined);
  });
});
