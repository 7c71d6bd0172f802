/**
 * A usual record set read straight from its text (`RecordSetReader` in `fast-yaml.ts`, `USUAL_TEXT`
 * in `manifest-parser.ts`) against the reader's objects checked by `acceptUsualRecordSet`, and a
 * parse thread's whole answer (`parseManifestFileToSend`) against `parseManifestFile`'s (the reader,
 * `acceptResource` and the full checks): the same values, the same message bytes, the same problems
 * and lines, over the repository's YAML, the bench's shape and thousands of generated variants and
 * mutations of usual record sets in flow and block style.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { prng } from '../../../test/support/prng.ts';
import { repositoryYaml } from '../../../test/support/repository-yaml.ts';
import { mutateYaml, pick, YAML_INSERTS, YAML_INSERTS_RARE } from '../../../test/support/yaml-mutations.ts';
import { acceptUsualRecordSet } from '../../api/resource.ts';
import { fastLoadAll, TAKEN } from './fast-yaml.ts';
import {
  encodeDocuments,
  parseManifestFile,
  parseManifestFileToSend,
  USUAL_TEXT,
} from './manifest-parser.ts';

interface Counts {
  /** Documents the text path took. */
  taken: number;
  /** Usual record sets (`acceptUsualRecordSet` takes the reader's object) the text path declined. */
  declined: number;
  /** Texts the reader refuses (then the text path gives nothing either). */
  fallback: number;
  texts: number;
}

const newCounts = (): Counts => ({ taken: 0, declined: 0, fallback: 0, texts: 0 });

/**
 * The text path's answer for `text` against the reader's: the same documents, and for each the text
 * path took, exactly what `acceptUsualRecordSet` makes of the reader's object (never a document it
 * refuses).
 */
function compareText(text: string, label: string, counts: Counts): void {
  counts.texts++;
  const taken: unknown[] = [];
  const withText = fastLoadAll(text, USUAL_TEXT, taken);
  const values = fastLoadAll(text);
  if (values === undefined) {
    assert.equal(withText, undefined, `${label}: the text path took a text the reader refuses:\n${text}`);
    assert.equal(taken.length, 0);
    counts.fallback++;
    return;
  }
  assert.ok(withText !== undefined, `${label}: the text path refused what the reader takes:\n${text}`);
  assert.equal(withText.length, values.length, `${label}: another number of documents:\n${text}`);
  for (let i = 0; i < values.length; i++) {
    const usual = acceptUsualRecordSet(values[i], i + 1);
    if (withText[i] === TAKEN) {
      assert.ok(
        usual !== undefined,
        `${label}: document ${i + 1} taken from its text, refused from its object:\n${JSON.stringify(text)}\n${JSON.stringify(taken[i])}`,
      );
      assert.deepStrictEqual(
        taken[i],
        usual,
        `${label}: document ${i + 1} differs from its object's:\n${JSON.stringify(text)}`,
      );
      counts.taken++;
    } else {
      assert.equal(taken[i], undefined);
      assert.deepStrictEqual(withText[i], values[i], `${label}: document ${i + 1} read otherwise`);
      if (usual !== undefined) counts.declined++;
    }
  }
}

const dir = mkdtempSync(path.join(tmpdir(), 'zonekeeper-record-set-text-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

/** Every field path whose line a later check may ask for. */
const PATHS = [
  '',
  'metadata.name',
  'spec.zoneRef.name',
  'spec.name',
  'spec.type',
  'spec.ttl',
  'spec.records[0]',
];

/**
 * A parse thread's answer for the file (`parseManifestFileToSend`, the text path among it) against
 * `parseManifestFile`'s: the same message text (every value, verdict and problem with its line), the
 * same file errors, and the same line for each field asked for.
 */
async function compareFile(text: string, label: string): Promise<void> {
  const file = path.join(dir, `${files++}.yaml`);
  writeFileSync(file, text);
  const sent = await parseManifestFileToSend(file, 2 ** 20);
  const general = await parseManifestFile(file, 2 ** 20);
  assert.deepStrictEqual(sent.parsed.fileErrors, general.parsed.fileErrors, `${label}: file errors`);
  const n = general.parsed.documents.length;
  assert.equal(sent.parsed.documents.length, n);
  assert.equal(
    encodeDocuments(sent.parsed.documents, sent.parsed.checked),
    encodeDocuments(general.parsed.documents, general.parsed.checked),
    `${label}: another message:\n${JSON.stringify(text)}`,
  );
  // Two documents a message: what `before` carries from one to the next starts again.
  for (let i = 0; i < n; i += 2)
    assert.equal(
      encodeDocuments(sent.parsed.documents, sent.parsed.checked, i, Math.min(i + 2, n)),
      encodeDocuments(general.parsed.documents, general.parsed.checked, i, Math.min(i + 2, n)),
    );
  if (general.locate !== undefined) {
    const requests = general.parsed.documents.flatMap((d) =>
      PATHS.map((p) => (p === '' ? { document: d.document } : { document: d.document, path: p })),
    );
    assert.deepStrictEqual(sent.locate?.(requests), general.locate(requests), `${label}: lines`);
  }
}

const API = 'dns.zonekeeper.dev/v1alpha1';

/** The bench's shape (`recordManifest` of bench/lib/zone.ts) for its kinds of record set. */
function benchDocument(i: number): string {
  const records = [
    ['h1', 'A', '"10.0.0.1"'],
    ['h2', 'AAAA', '"2001:db8:0::2"'],
    ['c70', 'CNAME', '"h20"'],
    ['m80', 'MX', '"10 h30"'],
    ['t85', 'TXT', '"\\"v=spf1 ip4:10.0.0.85 -all\\""'],
    ['_sip._tcp.s90', 'SRV', '"10 5 5060 h40"'],
    ['*.w95', 'A', '"10.0.0.95"'],
  ][i % 7]!;
  return (
    `apiVersion: ${API}\nkind: DNSRecordSet\n` +
    `metadata: { name: z1-r${i}, namespace: scale }\n` +
    `spec: { zoneRef: { name: z1 }, name: "${records[0]}", type: ${records[1]}, records: [${records[2]}] }\n`
  );
}

/** Scalars typed otherwise than strings, or read otherwise, by YAML's core schema, and odd quoting. */
const ODD = [
  '300',
  '-0',
  '0x1F',
  '0o17',
  '1e3',
  '3.0',
  '.inf',
  '-.Inf',
  '.nan',
  'true',
  'False',
  'TRUE',
  'null',
  'Null',
  '~',
  'yes',
  'no',
  '2026-01-01',
  '"300"',
  "'true'",
  '"~"',
  '""',
  "''",
  '"a\\"b"',
  "'it''s'",
  '"\\u00e9"',
  '"\\x41"',
  '"\\U0001F600"',
  '"\\q"',
  'é',
  '\u{1F600}',
  'a#b',
  'a #b',
  'a:b',
  'a: b',
  '-a',
  '- a',
  '*a',
  '&a a',
  '!x a',
  '@a',
  '`a',
  '%a',
  '?a',
  '|',
  '>',
  '[a]',
  '{a: b}',
  '[]',
  '{}',
  'a b',
  ' a ',
  '"a',
  "'a",
  '.',
  '+1',
  '0',
];

const NAMES = ['z1-r5', 'www', 'a.b', '"z1-r6"', "'z1-r7'", 'x1'];
const NAMESPACES = ['scale', 'dns', '"default"', "'scale'"];
const ZONES = ['z1', 'z2', '"z1"', "'bench'"];
const OWNERS = ['h1', '"@"', "'@'", '"*.w1"', '_sip._tcp.s1', '"c70"', 'a.b', 'www', '"10 h1"'];
const TYPES = ['A', 'AAAA', 'CNAME', 'MX', 'TXT', 'SRV', '"A"', "'MX'"];
const ODD_TYPES = ['NS', 'SOA', 'a', 'ALIAS', 'PTR', 'CAA', 'DS'];
const TTLS = ['300', '60', '"300"', '0', '86400'];
const ODD_TTLS = ['0x12C', '+300', '300.0', '3e2', '-1', '2147483648', '.inf', '~', '0o454', '300 # c', '-0'];
const RECORDS = [
  '"192.0.2.1"',
  '192.0.2.1',
  '"10 h1"',
  '10 h1',
  '"h20"',
  'h20',
  '"2001:db8::1"',
  '"\\"v=spf1 -all\\""',
  '\'"v=spf1 -all"\'',
  '"10 5 5060 h4"',
  '"ns1.example."',
];

/** One usual record set, or something near it, in flow or block style. */
function usualDocument(rng: () => number): string {
  const odd = rng() < 0.25;
  const value = (usual: readonly string[], more: readonly string[] = []) =>
    odd && rng() < 0.2 ? pick(rng, [...ODD, ...more]) : pick(rng, usual);
  const apiVersion = odd && rng() < 0.1 ? pick(rng, [`"${API}"`, `'${API}'`, 'v1', `${API}x`]) : API;
  const kind = odd && rng() < 0.1 ? pick(rng, ['"DNSRecordSet"', 'DNSZone', 'dnsrecordset']) : 'DNSRecordSet';
  const meta: [string, string][] = [['name', value(NAMES)]];
  if (rng() < 0.8) meta.push(['namespace', value(NAMESPACES)]);
  if (odd && rng() < 0.1) meta.push([pick(rng, ['labels', 'uid', 'name']), pick(rng, ['{ a: b }', 'x'])]);
  const recordCount = rng() < 0.85 ? 1 : Math.floor(rng() * 4);
  const records: string[] = [];
  for (let r = 0; r < recordCount; r++) records.push(value(RECORDS));
  const spec: [string, string | string[]][] = [
    ['zoneRef', value(ZONES)],
    ['name', value(OWNERS)],
    ['type', odd && rng() < 0.2 ? pick(rng, ODD_TYPES) : value(TYPES)],
  ];
  if (rng() < 0.3) spec.push(['ttl', odd && rng() < 0.5 ? pick(rng, ODD_TTLS) : value(TTLS)]);
  spec.push(['records', records]);
  if (odd && rng() < 0.1)
    spec.push([pick(rng, ['placement', 'status', 'name', 'records', 'zoneRef']), pick(rng, ['x', '1'])]);
  if (odd && rng() < 0.1) spec.splice(Math.floor(rng() * spec.length), 1);
  if (rng() < 0.3) shuffle(rng, spec);
  if (rng() < 0.2) shuffle(rng, meta);
  const sp = () => (rng() < 0.9 ? ' ' : pick(rng, ['', '  ']));
  const flowMap = (pairs: [string, string][]) =>
    `{${sp()}${pairs.map(([k, v]) => `${k}:${rng() < 0.97 ? ' ' : '  '}${v}`).join(`,${sp()}`)}${sp()}}`;
  const flowList = (items: string[]) => `[${sp()}${items.join(`,${sp()}`)}${sp()}]`;
  const trailing = () => (rng() < 0.05 ? pick(rng, ['  ', ' # c', '\t', ' #', '#c']) : '');
  const lines: string[] = [];
  const top: [string, () => void][] = [
    ['apiVersion', () => lines.push(`apiVersion: ${apiVersion}${trailing()}`)],
    ['kind', () => lines.push(`kind: ${kind}${trailing()}`)],
    [
      'metadata',
      () => {
        if (rng() < 0.6) {
          lines.push(`metadata: ${flowMap(meta)}${trailing()}`);
          return;
        }
        const indent = ' '.repeat(1 + Math.floor(rng() * 3));
        lines.push(`metadata:${trailing()}`);
        for (const [k, v] of meta) lines.push(`${indent}${k}: ${v}${trailing()}`);
      },
    ],
    [
      'spec',
      () => {
        if (rng() < 0.55) {
          const pairs = spec.map(([k, v]): [string, string] => [
            k,
            k === 'zoneRef' && typeof v === 'string'
              ? rng() < 0.95
                ? flowMap([['name', v]])
                : v
              : Array.isArray(v)
                ? flowList(v)
                : v,
          ]);
          lines.push(`spec: ${flowMap(pairs)}${trailing()}`);
          return;
        }
        const indent = ' '.repeat(1 + Math.floor(rng() * 3));
        lines.push(`spec:${trailing()}`);
        for (const [k, v] of spec) {
          if (k === 'zoneRef' && typeof v === 'string') {
            if (rng() < 0.5) lines.push(`${indent}zoneRef: ${flowMap([['name', v]])}${trailing()}`);
            else {
              lines.push(`${indent}zoneRef:`);
              const more = ' '.repeat(1 + Math.floor(rng() * 2));
              lines.push(`${indent}${more}name: ${v}${trailing()}`);
              if (odd && rng() < 0.1) lines.push(`${indent}${more}kind: DNSZone`);
            }
          } else if (Array.isArray(v)) {
            if (rng() < 0.4 || v.length === 0) lines.push(`${indent}records: ${flowList(v)}${trailing()}`);
            else {
              lines.push(`${indent}records:${trailing()}`);
              // The entries below the key, or at its indent
              const at = rng() < 0.5 ? indent : indent + ' '.repeat(1 + Math.floor(rng() * 2));
              for (const item of v) lines.push(`${at}- ${item}${trailing()}`);
            }
          } else lines.push(`${indent}${k}: ${v}${trailing()}`);
          if (rng() < 0.03) lines.push(pick(rng, ['', '# a comment', `${indent}# a comment`, '   ']));
        }
      },
    ],
  ];
  if (rng() < 0.15) shuffle(rng, top);
  if (odd && rng() < 0.1) top.splice(Math.floor(rng() * top.length), 1);
  for (const [, write] of top) {
    write();
    if (rng() < 0.03) lines.push(pick(rng, ['', '# a comment', '  # indented comment']));
  }
  if (odd && rng() < 0.1) lines.push(pick(rng, ['status: {}', 'extra: 1', 'kind: DNSRecordSet']));
  return `${lines.join('\n')}\n`;
}

function shuffle<T>(rng: () => number, list: T[]): void {
  for (let i = list.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [list[i], list[j]] = [list[j]!, list[i]!];
  }
}

/** Other documents a file of record sets may hold. */
const OTHERS = [
  `apiVersion: ${API}\nkind: DNSZone\nmetadata: { name: z1, namespace: scale }\nspec: { domainName: "z1.example.", className: bench }\n`,
  `apiVersion: ${API}\nkind: DNSRecordSet\nmetadata:\n  name: x\n  labels: { a: b }\nspec: { zoneRef: { name: z1 }, name: x, type: A, records: ["192.0.2.1"] }\n`,
  '# nothing but a comment\n',
  '',
  'a: 1\n',
];

/** A file of one to four documents, some near the usual record set, perhaps around other documents. */
function fileText(rng: () => number): string {
  const docs: string[] = [];
  const count = 1 + Math.floor(rng() * 4);
  for (let d = 0; d < count; d++)
    docs.push(rng() < 0.85 ? usualDocument(rng) : rng() < 0.5 ? benchDocument(d) : pick(rng, OTHERS));
  let text = docs.join(pick(rng, ['---\n', '---\n', '--- # next\n', '---  \n', '\n---\n']));
  if (rng() < 0.1) text = `---\n${text}`;
  if (rng() < 0.05) text += pick(rng, ['---\n', '...\n', '# end']);
  if (rng() < 0.05) text = text.slice(0, -1);
  return text;
}

/** The shared mutations' rare inserts, and a CRLF. */
const INSERTS_RARE = [...YAML_INSERTS_RARE, '\r\n'];

describe('a usual record set read from its text', () => {
  test('the repository’s YAML: the same documents as the reader’s, checked the same', async () => {
    const counts = newCounts();
    for (const { label, text } of repositoryYaml()) {
      compareText(text, label, counts);
      await compareFile(text, label);
    }
    assert.ok(counts.taken > 0, JSON.stringify(counts));
  });

  test('the bench’s shape: every record set taken, the same message as the general path', async () => {
    const counts = newCounts();
    const docs = Array.from({ length: 70 }, (_, i) => benchDocument(i));
    const text = docs.join('---\n');
    compareText(text, 'bench', counts);
    assert.equal(counts.taken, 70);
    assert.equal(counts.declined, 0);
    await compareFile(text, 'bench');
  });

  test('block style, comments, blank lines and trailing spaces: taken, the same values', async () => {
    const texts = [
      `apiVersion: ${API}\nkind: DNSRecordSet\nmetadata:\n  name: z1-r1\n  namespace: scale\nspec:\n  zoneRef:\n    name: z1\n  name: www\n  type: A\n  ttl: 300\n  records:\n    - 192.0.2.1\n    - "192.0.2.2"\n`,
      `apiVersion: ${API}\nkind: DNSRecordSet\nmetadata:\n  name: z1-r1\nspec:\n  zoneRef: { name: z1 }\n  name: "@"\n  type: MX\n  records:\n  - 10 mail\n  - '20 mail2'\n`,
      `# a record set\napiVersion: ${API}   \nkind: DNSRecordSet # the kind\n\nmetadata: {name: z1-r1,  namespace: scale}  # c\n  # deeper comment\nspec: { records: [ "h1" ], type: CNAME, name: c1, zoneRef: { name: z1 } }\n`,
      `---\nspec: { zoneRef: { name: z1 }, name: t, type: TXT, records: ['"v=spf1 -all"', "\\"a\\" \\"b\\""] }\nmetadata: { namespace: dns, name: z1-t }\nkind: DNSRecordSet\napiVersion: ${API}\n...\n`,
    ];
    const counts = newCounts();
    for (const text of texts) {
      compareText(text, 'block', counts);
      await compareFile(text, 'block');
    }
    // `...` is outside the reader's subset: the last text falls back whole.
    assert.deepStrictEqual(counts, { taken: 3, declined: 0, fallback: 1, texts: 4 });
  });

  test('the API version and kind lines compared at once, then what follows them', async () => {
    const head = `apiVersion: ${API}\nkind: DNSRecordSet\n`;
    const meta = 'metadata: { name: z1-r1, namespace: scale }\n';
    const spec = 'spec: { zoneRef: { name: z1 }, name: www, type: A, records: ["192.0.2.1"] }\n';
    const texts: [string, boolean][] = [
      [head + meta + spec, true],
      [`${head}\n# c\n  # deeper\n${meta}${spec}`, true],
      [`${head}  ${meta}${spec}`, false], // a deeper line after the kind's
      [`${head} ${meta}${spec}`, false],
      [`${head}`, false],
      [`${head}---\n${meta}${spec}`, false],
      [`${head}${head}${meta}${spec}`, false], // both repeated
      [`${head}apiVersion: ${API}\n${meta}${spec}`, false],
      [`${head}kind: DNSRecordSet\n${meta}${spec}`, false],
      [`${head}${meta}${spec}kind: DNSRecordSet\n`, false],
      [`kind: DNSRecordSet\napiVersion: ${API}\n${meta}${spec}`, true],
      [`apiVersion: ${API} \nkind: DNSRecordSet\n${meta}${spec}`, true],
      [`apiVersion: ${API}\nkind: DNSRecordSet # k\n${meta}${spec}`, true],
      [`apiVersion: ${API}\n\nkind: DNSRecordSet\n${meta}${spec}`, true],
      [`apiVersion: ${API}\nkind: DNSRecordSetx\n${meta}${spec}`, false],
      [`apiVersion: ${API}x\nkind: DNSRecordSet\n${meta}${spec}`, false],
      [`${meta}${head}${spec}`, true],
      [`${meta}${spec}${head}`, true],
      [`${meta}${spec}${head.slice(0, -1)}`, true], // no line break at the end
      [`${meta}${spec}${head}  x: 1\n`, false],
      [`${head}${meta}${spec}---\n${head}${meta}${spec}`, true],
    ];
    for (const [text, usual] of texts) {
      const counts = newCounts();
      compareText(text, JSON.stringify(text), counts);
      await compareFile(text, JSON.stringify(text));
      // Taken exactly where the document is a usual record set (each is declined otherwise).
      assert.equal(counts.taken > 0, usual, `${JSON.stringify(text)}: ${JSON.stringify(counts)}`);
      assert.equal(counts.declined, 0, JSON.stringify(text));
    }
  });

  test('scalars typed otherwise than strings are never taken as strings', async () => {
    // Each plain value here is a number, a boolean or null to YAML's core schema: the object's check
    // refuses it, so the text path must not take the document; quoted, each is the string.
    for (const plain of [
      '300',
      '0x1F',
      '0o17',
      '1e3',
      '.inf',
      '-.Inf',
      '.NaN',
      'true',
      'FALSE',
      'Null',
      '~',
      '-0',
      '+12',
      '3.',
      '0.5',
    ]) {
      const counts = newCounts();
      for (const field of ['name', 'namespace', 'zone', 'owner', 'type', 'record', 'ttl']) {
        const texts = (value: string) => {
          const v = (f: string, usual: string) => (f === field ? value : usual);
          return [
            `apiVersion: ${API}\nkind: DNSRecordSet\n` +
              `metadata: { name: ${v('name', 'n1')}, namespace: ${v('namespace', 'dns')} }\n` +
              `spec: { zoneRef: { name: ${v('zone', 'z1')} }, name: ${v('owner', 'www')}, type: ${v('type', 'TXT')}, ttl: ${v('ttl', '60')}, records: [${v('record', 'x')}] }\n`,
            `apiVersion: ${API}\nkind: DNSRecordSet\n` +
              `metadata:\n  name: ${v('name', 'n1')}\n  namespace: ${v('namespace', 'dns')}\n` +
              `spec:\n  zoneRef:\n    name: ${v('zone', 'z1')}\n  name: ${v('owner', 'www')}\n  type: ${v('type', 'TXT')}\n  ttl: ${v('ttl', '60')}\n  records:\n  - ${v('record', 'x')}\n`,
          ];
        };
        for (const text of texts(plain)) {
          compareText(text, `${field}: ${plain}`, counts);
          await compareFile(text, `${field}: ${plain}`);
          const taken: unknown[] = [];
          fastLoadAll(text, USUAL_TEXT, taken);
          // A TTL of a number is taken when it is one the schema allows; no other field may be one.
          if (field !== 'ttl') assert.equal(taken[0], undefined, `${field}: ${plain} taken`);
        }
        for (const text of texts(`"${plain}"`)) {
          compareText(text, `${field}: "${plain}"`, counts);
          await compareFile(text, `${field}: "${plain}"`);
        }
      }
      // The quoted forms of a name, a zone and an owner are taken (the strings are valid there).
      assert.ok(counts.taken >= 4, `${plain}: ${JSON.stringify(counts)}`);
    }
    // `name: 0x1F` read as a string would make the metadata name "0x1F"; the reader makes 31.
    const text = `apiVersion: ${API}\nkind: DNSRecordSet\nmetadata: { name: a1 }\nspec: { zoneRef: { name: z1 }, name: www, type: TXT, ttl: 0x1F, records: ["x"] }\n`;
    const taken: unknown[] = [];
    fastLoadAll(text, USUAL_TEXT, taken);
    assert.deepStrictEqual(taken[0], [1, 'default', 'a1', 'z1', 'www', 'TXT', ['x'], 31]);
  });

  test('generated usual record sets and their mutations: the same as the reader’s and the general path’s', async (t) => {
    const rng = prng(0x17_7e47);
    const counts = newCounts();
    const mutated = newCounts();
    for (let round = 0; round < 2500; round++) {
      const text = fileText(rng);
      compareText(text, `generated ${round}`, counts);
      if (round % 5 === 0) await compareFile(text, `generated ${round}`);
      for (let m = 0; m < 2; m++) {
        const changed = mutateYaml(rng, text, { inserts: YAML_INSERTS, rare: INSERTS_RARE, more: true });
        compareText(changed, `mutated ${round}.${m}`, mutated);
        if (round % 10 === 0) await compareFile(changed, `mutated ${round}.${m}`);
      }
    }
    t.diagnostic(`generated ${JSON.stringify(counts)}, mutated ${JSON.stringify(mutated)}`);
    // Most generated record sets are usual and taken; many mutations leave the subset or the shape.
    assert.ok(counts.taken > 2000 && counts.fallback > 300, JSON.stringify(counts));
    assert.ok(mutated.taken > 500 && mutated.fallback > 1000, JSON.stringify(mutated));
  });
});
