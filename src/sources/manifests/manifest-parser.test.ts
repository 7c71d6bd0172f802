import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { fstatSync, openSync, readSync } from 'node:fs';
import { mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { DNSRecordSet } from '../../api/index.ts';
import type { UsualRecordSet } from '../../api/resource.ts';
import { loadFrontDoors } from '../front-door-modules.ts';
import {
  DEFAULT_MAX_MANIFEST_BYTES,
  decodeDocuments,
  encodeDocuments,
  LocalManifestParser,
  ManifestParserPool,
  type ParsedDocument,
  parseManifestFile,
  parseManifestFileToSend,
  readLimited,
  readLimitedSync,
} from './manifest-parser.ts';

const recordSet = (i: number) =>
  [
    'apiVersion: dns.zonekeeper.dev/v1alpha1',
    'kind: DNSRecordSet',
    `metadata: { name: r${i}, namespace: default }`,
    `spec: { zoneRef: { name: example }, name: h${i}, type: A, records: ["192.0.2.${i % 250}"] }`,
    '',
  ].join('\n');

/** A zone `z` of `namespace` (example.com.) as a parse thread has it. */
function zoneDocument(document: number, namespace: string): ParsedDocument {
  return {
    document,
    identity: { kind: 'DNSZone', key: `${namespace}/z` },
    resource: {
      apiVersion: 'dns.zonekeeper.dev/v1alpha1',
      kind: 'DNSZone',
      metadata: { name: 'z', namespace },
      spec: { domainName: 'example.com.', className: 'c' },
    },
  };
}

/** A usual record set as a parse thread has it: its spec's keys in the usual order, a TTL only when given. */
function usualDocument(
  document: number,
  namespace: string,
  name: string,
  {
    zone = 'z',
    owner = 'w',
    type = 'A',
    records = ['192.0.2.1'],
    ttl,
  }: { zone?: string; owner?: string; type?: string; records?: string[]; ttl?: number | undefined } = {},
): ParsedDocument {
  const zoneRef = { name: zone };
  return {
    document,
    identity: { kind: 'DNSRecordSet', key: `${namespace}/${name}` },
    resource: {
      apiVersion: 'dns.zonekeeper.dev/v1alpha1',
      kind: 'DNSRecordSet',
      metadata: { name, namespace },
      spec:
        ttl === undefined
          ? { zoneRef, name: owner, type: type as 'A', records }
          : { zoneRef, name: owner, type: type as 'A', ttl, records },
    },
  };
}

/** A usual record set as it crossed (`encodeDocuments`): the values sent, by what they are. */
interface Sent {
  document: number;
  checked: boolean;
  /** Left out (undefined) where the record set before it in the message had the same. */
  namespace?: string;
  id: string;
  zone?: string;
  /** The spec's name, or the place in the message's array of an earlier record set's same one. */
  owner: string | number;
  type?: string;
  ttl?: number;
  /** Records of one value as that string. */
  records: string | string[];
  /** How many values it took. */
  length: number;
}

/**
 * The usual record sets of a message (`encodeDocuments`), each read from the values it crossed as:
 * a number (the document's times 16, plus 1 with a TTL, 2 with the namespace, 4 with the zone, 8
 * with the type; negated where its values hold anywhere), then `namespace?, id, zone?, owner, type?,
 * ttl?, records`. Written out here apart from `decodeDocuments`, so that a change of either side shows.
 */
function usualSent(json: string): Sent[] {
  const values = JSON.parse(json) as unknown[];
  const out: Sent[] = [];
  for (let i = 0; i < values.length; ) {
    const head = values[i];
    if (typeof head !== 'number') {
      i++;
      continue;
    }
    const from = i++;
    const n = Math.abs(head);
    const flags = n % 16;
    const sent: Partial<Sent> = { document: (n - flags) / 16, checked: head < 0 };
    if (flags & 2) sent.namespace = values[i++] as string;
    sent.id = values[i++] as string;
    if (flags & 4) sent.zone = values[i++] as string;
    sent.owner = values[i++] as string | number;
    if (flags & 8) sent.type = values[i++] as string;
    if (flags & 1) sent.ttl = values[i++] as number;
    sent.records = values[i++] as string | string[];
    sent.length = i - from;
    out.push(sent as Sent);
  }
  return out;
}

/**
 * A parse thread's documents with the identity of each record set that came with its id instead
 * (`ParsedManifest.ids`), as the local parse has them: every such id is its kind and key.
 */
function withIdentities(parsed: { documents: ParsedDocument[]; ids?: readonly (string | undefined)[] }) {
  return parsed.documents.map((d, i) => {
    const id = parsed.ids?.[i];
    if (id === undefined) return d;
    assert.equal(d.identity, undefined);
    assert.ok(id.startsWith('DNSRecordSet/'), id);
    const { document, ...rest } = d;
    return { document, identity: { kind: 'DNSRecordSet', key: id.slice('DNSRecordSet/'.length) }, ...rest };
  });
}

describe('ManifestParserPool', () => {
  let dir: string;
  const files: string[] = [];
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'zk-parser-pool-'));
    for (let f = 0; f < 6; f++) {
      const file = path.join(dir, `f${f}.yaml`);
      const docs = Array.from({ length: 200 }, (_, i) => recordSet(f * 1000 + i));
      // The last file has an invalid document (a bad type), found by the schema check with its line.
      if (f === 5) docs[3] = docs[3]!.replace('type: A', 'type: NOPE');
      await writeFile(file, docs.join('---\n'));
      files.push(file);
    }
    const broken = path.join(dir, 'broken.yaml');
    await writeFile(broken, 'apiVersion: [unclosed\nkind: DNSRecordSet\n');
    files.push(broken);
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('files in flight at once are parsed on different threads, with the results of a local parse', async () => {
    const pool = new ManifestParserPool(2);
    const local = new LocalManifestParser();
    try {
      const pooled = await Promise.all(files.map((f) => pool.parse(f, DEFAULT_MAX_MANIFEST_BYTES)));
      const per = pool.parsedPerThread();
      assert.equal(per.length, 2);
      assert.ok(
        per.every((n) => n > 0),
        `every thread parsed some files: ${per.join('/')}`,
      );
      assert.equal(
        per.reduce((a, b) => a + b, 0),
        files.length,
      );
      for (let i = 0; i < files.length; i++) {
        const mine = await local.parse(files[i]!, DEFAULT_MAX_MANIFEST_BYTES);
        assert.deepEqual(withIdentities(pooled[i]!), mine.documents, files[i]);
        assert.deepEqual(pooled[i]!.fileErrors, mine.fileErrors, files[i]);
      }
      // Every record set of these files came in the usual shape (but the invalid one): each is marked
      // as made in the shape the manifest source keeps (the local parser marks none).
      for (let i = 0; i < 6; i++)
        assert.deepEqual(
          pooled[i]!.compact,
          pooled[i]!.documents.map((d) => d.resource !== undefined),
        );
      assert.equal(pooled[5]!.compact![3], false);
      assert.equal((await local.parse(files[0]!, DEFAULT_MAX_MANIFEST_BYTES)).compact, undefined);
      // Their values (A addresses) were found valid in any zone where they were parsed, alike on a
      // parse thread and locally; the invalid document's are not.
      for (let i = 0; i < 6; i++) {
        const mine = await local.parse(files[i]!, DEFAULT_MAX_MANIFEST_BYTES);
        assert.deepEqual(pooled[i]!.checked, mine.checked, files[i]);
        assert.deepEqual(
          pooled[i]!.checked,
          pooled[i]!.documents.map((d) => d.resource !== undefined),
        );
      }
      // The YAML error is reported through the precise parser's path, with its line.
      assert.equal(pooled.at(-1)!.documents.length, 0);
      assert.ok(pooled.at(-1)!.fileErrors.length > 0);
      const invalid = pooled[5]!.documents[3]!;
      assert.equal(invalid.resource, undefined);
      assert.ok(invalid.problems?.some((p) => p.line !== undefined));
    } finally {
      await pool.close();
      await local.close();
    }
  });

  test('locate asks the thread that parsed the file; a released file is no longer located', async () => {
    const pool = new ManifestParserPool(2);
    const local = new LocalManifestParser();
    try {
      const [a, b] = await Promise.all([
        pool.parse(files[0]!, DEFAULT_MAX_MANIFEST_BYTES),
        pool.parse(files[1]!, DEFAULT_MAX_MANIFEST_BYTES),
      ]);
      assert.deepEqual(pool.parsedPerThread(), [1, 1]);
      const asks = [
        { document: 2 },
        { document: 2, path: 'spec.type' },
        { document: 3, path: 'spec.records[0]' },
      ];
      for (const [pooled, file] of [
        [a!, files[0]!],
        [b!, files[1]!],
      ] as const) {
        const mine = await local.parse(file, DEFAULT_MAX_MANIFEST_BYTES);
        const want = await local.locate(mine.token, asks);
        assert.ok(want.every((line) => typeof line === 'number'));
        assert.deepEqual(await pool.locate(pooled.token, asks), want);
      }
      pool.release(a!.token);
      assert.deepEqual(await pool.locate(a!.token, [{ document: 2 }]), [undefined]);
      assert.equal(typeof (await pool.locate(b!.token, [{ document: 2 }]))[0], 'number');
    } finally {
      await pool.close();
      await local.close();
    }
  });

  test('after shrink, new files go to the remaining thread and the others close once released', async () => {
    const pool = new ManifestParserPool(3);
    try {
      const first = await Promise.all(
        files.slice(0, 3).map((f) => pool.parse(f, DEFAULT_MAX_MANIFEST_BYTES)),
      );
      assert.deepEqual(pool.parsedPerThread(), [1, 1, 1]);
      pool.shrink(1);
      assert.equal(pool.threads, 1);
      // A file still held on a closing thread can be located until it is released.
      assert.deepEqual(await pool.locate(first[2]!.token, [{ document: 1 }]), [1]);
      for (const p of first) pool.release(p.token);
      const later = await Promise.all(
        files.slice(3, 6).map((f) => pool.parse(f, DEFAULT_MAX_MANIFEST_BYTES)),
      );
      assert.deepEqual(pool.parsedPerThread(), [4, 1, 1]);
      assert.equal(later[0]!.documents.length, 200);
    } finally {
      await pool.close();
    }
  });

  test('the threads of a pool share the files kept for locate: more threads hold no more text', async () => {
    const pool = new ManifestParserPool(4);
    try {
      // One at a time, every file goes to the first thread, which keeps the last 2 (8 shared by 4).
      const tokens: number[] = [];
      for (const f of files.slice(0, 3)) tokens.push((await pool.parse(f, DEFAULT_MAX_MANIFEST_BYTES)).token);
      assert.deepEqual(pool.parsedPerThread(), [3, 0, 0, 0]);
      assert.deepEqual(await pool.locate(tokens[0]!, [{ document: 1 }]), [undefined]);
      assert.deepEqual(await pool.locate(tokens[1]!, [{ document: 1 }]), [1]);
      assert.deepEqual(await pool.locate(tokens[2]!, [{ document: 1 }]), [1]);
    } finally {
      await pool.close();
    }
  });

  test('documents reach the main thread as the local parse has them: strings of every kind, maps, lists, problems', async () => {
    const file = path.join(dir, 'values.yaml');
    const docs = [
      [
        'apiVersion: dns.zonekeeper.dev/v1alpha1',
        'kind: DNSRecordSet',
        'metadata:',
        '  name: txt',
        '  namespace: team',
        '  labels: { app: web, "example.com/tier": "1" }',
        String.raw`  annotations: { "example.com/c": "__proto__", "a/b": "caf\u00e9 \"quoted\" \U0001F600 \ud800" }`,
        'spec:',
        '  zoneRef: { name: example }',
        '  name: "@"',
        '  type: TXT',
        '  ttl: 60',
        String.raw`  records: ["\"v=spf1 -all\"", "\"caf\u00e9\" \"\\\\ \\065\""]`,
        '',
      ].join('\n'),
      [
        'apiVersion: dns.zonekeeper.dev/v1alpha1',
        'kind: DNSZone',
        'metadata: { name: example, namespace: team }',
        'spec: { domainName: example.com., className: c }',
        '',
      ].join('\n'),
      // Invalid: problems with their lines.
      [
        'apiVersion: dns.zonekeeper.dev/v1alpha1',
        'kind: DNSRecordSet',
        'metadata: { name: bad, namespace: team }',
        'spec: { name: www, type: A, records: [], colour: blue }',
        '',
      ].join('\n'),
      // More than one message's worth of documents.
      ...Array.from({ length: 1_200 }, (_, i) => recordSet(i)),
    ];
    await writeFile(file, docs.join('---\n'));
    const pool = new ManifestParserPool(1);
    const local = new LocalManifestParser();
    try {
      const pooled = await pool.parse(file, DEFAULT_MAX_MANIFEST_BYTES);
      const mine = await local.parse(file, DEFAULT_MAX_MANIFEST_BYTES);
      assert.deepEqual(pooled.fileErrors, []);
      assert.equal(pooled.documents.length, docs.length);
      assert.deepEqual(withIdentities(pooled), mine.documents);
      // Every usual record set came with its id (the 1,200 of them), nothing else did.
      assert.equal(pooled.ids?.filter((id) => id !== undefined).length, 1_200);
      const txt = pooled.documents[0]!.resource as { metadata: { annotations: Record<string, string> } };
      assert.ok(txt.metadata.annotations['a/b']!.endsWith('\ud800'));
      assert.ok((pooled.documents[2]!.problems?.length ?? 0) >= 2);
    } finally {
      await pool.close();
      await local.close();
    }
  });

  test("a file whose documents cannot be sent is that file's error; the thread goes on with the next file", async () => {
    // A front door (a module a platform team may add) with a defect: what it admits holds a BigInt,
    // which no JSON text can carry to the main thread. Before, the request failed and so did the
    // reload of the whole folder, at every try.
    const module = path.join(dir, 'bigint-door.ts');
    await writeFile(
      module,
      `import { dnsEndpointFrontDoor } from ${JSON.stringify(path.resolve(import.meta.dirname, '../../api/frontdoors/externaldns/index.ts'))};\n` +
        'export const frontDoor = { ...dnsEndpointFrontDoor, group: "bigint.example", admit: (object) => { object.spec.weight = 1n; return []; } };\n',
    );
    const bad = path.join(dir, 'bigint.yaml');
    await writeFile(
      bad,
      'apiVersion: bigint.example/v1alpha1\nkind: DNSEndpoint\nmetadata: {name: e, namespace: dns}\nspec: {endpoints: []}\n',
    );
    const pool = new ManifestParserPool(1, [module]);
    try {
      const failed = await pool.parse(bad, DEFAULT_MAX_MANIFEST_BYTES);
      assert.deepEqual(failed.documents, []);
      assert.equal(failed.fileErrors.length, 1);
      assert.equal(failed.fileErrors[0]?.code, 'FILE_NOT_PARSED');
      assert.equal(failed.fileErrors[0]?.file, bad);
      assert.match(
        failed.fileErrors[0]!.message,
        /^cannot parse or check the file: .*BigInt.*; the objects it defined keep/,
      );
      assert.deepEqual(await pool.locate(failed.token, [{ document: 1 }]), [undefined]);
      pool.release(failed.token);
      const next = await pool.parse(files[0]!, DEFAULT_MAX_MANIFEST_BYTES);
      assert.equal(next.documents.length, 200);
      // Parsed on the calling thread (`validate`), the file fails alike.
      const local = new LocalManifestParser(await loadFrontDoors([module]));
      const here = await local.parse(bad, DEFAULT_MAX_MANIFEST_BYTES);
      assert.deepEqual(here.documents, []);
      assert.deepEqual(here.fileErrors, failed.fileErrors);
    } finally {
      await pool.close();
    }
  });

  test('a pool needs a thread', () => {
    assert.throws(() => new ManifestParserPool(0), /at least one thread/);
  });
});

describe('the documents of a message (encodeDocuments, decodeDocuments)', () => {
  const roundTrip = (documents: readonly ParsedDocument[]) => {
    const json = encodeDocuments(documents);
    const back: ParsedDocument[] = [];
    decodeDocuments(json, back);
    return { json, back, tuples: usualSent(json).length };
  };
  /** Equal as JSON text too: the same keys in the same order, as the state log would write them. */
  const sameAsJson = (back: readonly ParsedDocument[], documents: readonly ParsedDocument[]) => {
    assert.equal(JSON.stringify(back), JSON.stringify(documents));
    assert.deepStrictEqual(back, JSON.parse(JSON.stringify(documents)));
  };

  test('a parsed file comes back as parsed, its usual record sets sent as their values', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'zk-parser-wire-'));
    const file = path.join(dir, 'mixed.yaml');
    const head = 'apiVersion: dns.zonekeeper.dev/v1alpha1\nkind: DNSRecordSet\n';
    await writeFile(
      file,
      [
        recordSet(1),
        recordSet(2),
        `${head}metadata: { name: ttl0, namespace: team }\nspec: { zoneRef: { name: z }, name: "@", type: TXT, ttl: 1, records: ["\\"caf\\u00e9 \\U0001F600 \\ud800\\""] }\n`,
        `${head}metadata: { name: ttl, namespace: team }\nspec: { ttl: 300, records: ["a.example."], type: CNAME, name: w, zoneRef: { name: z } }\n`,
        `${head}metadata: { name: absolute, namespace: team }\nspec: { name: www.example.com., type: A, records: ["192.0.2.1"] }\n`,
        `${head}metadata: { name: other-ns, namespace: team }\nspec: { zoneRef: { name: z, namespace: infra }, name: w, type: A, records: ["192.0.2.1"] }\n`,
        `${head}metadata: { name: labelled, namespace: team, labels: { a: b } }\nspec: { zoneRef: { name: z }, name: w, type: A, records: ["192.0.2.1"] }\n`,
        `${head}metadata: { name: no-namespace }\nspec: { zoneRef: { name: z }, name: w, type: A, records: ["192.0.2.1"] }\n`,
        `${head}metadata: { name: invalid, namespace: team }\nspec: { zoneRef: { name: z }, name: w, type: NOPE, records: [] }\n`,
        'apiVersion: dns.zonekeeper.dev/v1alpha1\nkind: DNSZone\nmetadata: { name: z, namespace: team }\nspec: { domainName: example.com., className: c }\n',
        'kind: Unknown\n',
      ].join('---\n'),
    );
    const local = new LocalManifestParser();
    try {
      const { documents } = await local.parse(file, DEFAULT_MAX_MANIFEST_BYTES);
      assert.equal(documents.length, 11);
      const { json, back, tuples } = roundTrip(documents);
      sameAsJson(back, documents);
      // The first four (the TTL given before the other fields included: the schema orders them) and the
      // namespace the schema fills in; not the one without a zoneRef, another namespace's zone or labels.
      assert.equal(tuples, 5);
      assert.ok(json.length < JSON.stringify(documents).length);
      const ttl = back[3]!.resource as { spec: Record<string, unknown> };
      assert.deepEqual(Object.keys(ttl.spec), ['zoneRef', 'name', 'type', 'ttl', 'records']);
    } finally {
      await local.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('a parse thread sends the same text as the general path, usual record sets taken straight from YAML', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'zk-parser-send-'));
    const head = 'apiVersion: dns.zonekeeper.dev/v1alpha1\nkind: DNSRecordSet\n';
    const rs = (meta: string, spec: string) => `${head}metadata: ${meta}\nspec: ${spec}\n`;
    const documents = [
      recordSet(1),
      recordSet(2),
      rs(
        '{ name: t, namespace: team }',
        '{ zoneRef: { name: z }, name: "@", type: TXT, ttl: 1, records: ["\\"caf\\u00e9\\""] }',
      ),
      rs(
        '{ namespace: team, name: order }',
        '{ ttl: 60, records: ["a.example."], type: CNAME, name: w, zoneRef: { name: z } }',
      ),
      rs('{ name: no-namespace }', '{ zoneRef: { name: z }, name: w, type: A, records: ["192.0.2.1"] }'),
      rs(
        '{ name: null-ttl, namespace: team }',
        '{ zoneRef: { name: z }, name: w, type: A, ttl: null, records: ["192.0.2.1"] }',
      ),
      rs(
        '{ name: bad-value, namespace: team }',
        '{ zoneRef: { name: z }, name: w, type: A, records: ["192.0.2.999"] }',
      ),
      rs(
        '{ name: twice, namespace: team }',
        '{ zoneRef: { name: z }, name: w, type: A, records: ["192.0.2.1", "192.0.2.1"] }',
      ),
      rs(
        '{ name: mx, namespace: team }',
        '{ zoneRef: { name: z }, name: w, type: MX, records: ["10 mail"] }',
      ),
      rs(
        '{ name: cname2, namespace: team }',
        '{ zoneRef: { name: z }, name: w, type: CNAME, records: ["a.", "b."] }',
      ),
      rs('{ name: soa, namespace: team }', '{ zoneRef: { name: z }, name: w, type: SOA, records: ["x"] }'),
      rs(
        '{ name: Bad, namespace: team }',
        '{ zoneRef: { name: z }, name: w, type: A, records: ["192.0.2.1"] }',
      ),
      rs('{ name: no-records, namespace: team }', '{ zoneRef: { name: z }, name: w, type: A, records: [] }'),
      rs(
        '{ name: big-ttl, namespace: team }',
        '{ zoneRef: { name: z }, name: w, type: A, ttl: 2147483648, records: ["192.0.2.1"] }',
      ),
      rs('{ name: number, namespace: team }', '{ zoneRef: { name: z }, name: w, type: A, records: [1] }'),
      rs(
        '{ name: other-ns, namespace: team }',
        '{ zoneRef: { name: z, namespace: infra }, name: w, type: A, records: ["192.0.2.1"] }',
      ),
      rs(
        '{ name: labelled, namespace: team, labels: { a: b } }',
        '{ zoneRef: { name: z }, name: w, type: A, records: ["192.0.2.1"] }',
      ),
      rs(
        '{ name: absolute, namespace: team }',
        '{ name: www.example.com., type: A, records: ["192.0.2.1"] }',
      ),
      rs(
        '{ name: steered, namespace: team }',
        '{ zoneRef: { name: z }, name: w, type: TXT, placement: ActiveActive, records: ["x"] }',
      ),
      `${head}metadata: { name: status, namespace: team }\nspec: { zoneRef: { name: z }, name: w, type: A, records: ["192.0.2.1"] }\nstatus: { observedGeneration: 1 }\n`,
      `${head}metadata: { name: extra, namespace: team }\nspec: { zoneRef: { name: z }, name: w, type: A, records: ["192.0.2.1"] }\nextra: 1\n`,
      'apiVersion: dns.zonekeeper.dev/v1alpha1\nkind: DNSZone\nmetadata: { name: z, namespace: team }\nspec: { domainName: example.com., className: c }\n',
      'apiVersion: homelab.zonekeeper.dev/v1alpha1\nkind: Nope\nmetadata: { name: n }\n',
      'kind: Unknown\n',
    ];
    const file = path.join(dir, 'mixed.yaml');
    const anchored = path.join(dir, 'anchored.yaml');
    await writeFile(file, documents.join('---\n'));
    // Read by js-yaml, not the fast reader: the same either way.
    await writeFile(anchored, `${documents.join('---\n')}---\nx: &a 1\ny: *a\n`);
    try {
      for (const doors of [undefined, await loadFrontDoors([])]) {
        for (const f of [file, anchored]) {
          const general = (await parseManifestFile(f, DEFAULT_MAX_MANIFEST_BYTES, doors)).parsed;
          const sent = (await parseManifestFileToSend(f, DEFAULT_MAX_MANIFEST_BYTES, doors)).parsed;
          assert.deepStrictEqual(sent.checked, general.checked);
          assert.deepStrictEqual(sent.fileErrors, general.fileErrors);
          assert.equal(sent.documents.length, general.documents.length);
          for (const [from, to] of [
            [0, sent.documents.length],
            [0, 7],
            [7, sent.documents.length],
          ])
            assert.equal(
              encodeDocuments(sent.documents, sent.checked, from, to),
              encodeDocuments(general.documents, general.checked, from, to),
            );
          // Taken straight from YAML: the two usual ones, the TXT, the reordered CNAME,
          // the one without a namespace, the bad value and the repeated one (their verdicts false) and the MX.
          const taken = sent.documents.filter((d) => Array.isArray(d)).length;
          assert.equal(taken, 8);
          // The one with a null TTL and the one with a status (dropped) are of the usual shape once
          // checked, and cross as arrays too, from the general path.
          assert.equal(usualSent(encodeDocuments(sent.documents)).length, 10);
        }
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('record sets made from the array form without a TTL are marked as made in the shape the source keeps', () => {
    const doc = (ttl?: number): ParsedDocument => usualDocument(1, 'ns', 'r', { ttl });
    const zone = zoneDocument(2, 'ns');
    const back: ParsedDocument[] = [];
    const compact: boolean[] = [];
    decodeDocuments(encodeDocuments([doc(), zone, doc(60)]), back, compact);
    assert.deepEqual(compact, [true, false, false]);
    // Exactly the fields of the source's usual shape, in its order (\`compactRecordSet\`).
    const rs = back[0]!.resource as unknown as Record<string, Record<string, unknown>>;
    assert.deepEqual(Object.keys(rs), ['apiVersion', 'kind', 'metadata', 'spec']);
    assert.deepEqual(Object.keys(rs.metadata!), ['name', 'namespace']);
    assert.deepEqual(Object.keys(rs.spec!), ['zoneRef', 'name', 'type', 'records']);
    assert.deepEqual(Object.keys(rs.spec!.zoneRef as object), ['name']);
    // Without the list, nothing is marked and the documents are the same.
    const plain: ParsedDocument[] = [];
    decodeDocuments(encodeDocuments([doc(), zone, doc(60)]), plain);
    assert.deepStrictEqual(plain, back);
  });

  test('a namespace, zone or type the record set before had is left out of the message, and comes back as it was', () => {
    const doc = (
      document: number,
      namespace: string,
      zone: string,
      type: string,
      ttl?: number,
    ): ParsedDocument => usualDocument(document, namespace, `r${document}`, { zone, type, ttl });
    const zone = zoneDocument(4, 'b');
    const documents = [
      doc(1, 'a', 'z', 'A'),
      doc(2, 'a', 'z', 'A'),
      doc(3, 'b', 'z', 'A', 60),
      zone,
      doc(5, 'b', 'y', 'A'),
      doc(6, 'b', 'y', 'AAAA'),
      doc(7, 'a', 'y', 'AAAA'),
      doc(8, 'a', 'y', 'AAAA', 30),
    ];
    const json = encodeDocuments(documents);
    const sent = usualSent(json);
    assert.deepEqual(
      sent.map((d) => [d.namespace, d.zone, d.type, d.ttl]),
      [
        ['a', 'z', 'A', undefined],
        [undefined, undefined, undefined, undefined],
        ['b', undefined, undefined, 60],
        [undefined, 'y', undefined, undefined],
        [undefined, undefined, 'AAAA', undefined],
        ['a', undefined, undefined, undefined],
        [undefined, undefined, undefined, 30],
      ],
    );
    assert.deepEqual(
      sent.map((d) => d.length),
      [7, 4, 6, 5, 5, 5, 5],
    );
    const back: ParsedDocument[] = [];
    decodeDocuments(json, back);
    assert.deepStrictEqual(back, documents);
    // In two messages: the second starts with every value again.
    const twice: ParsedDocument[] = [];
    const ids: (string | undefined)[] = [];
    decodeDocuments(encodeDocuments(documents, undefined, 0, 2), twice, undefined, undefined, ids);
    const second = encodeDocuments(documents, undefined, 2, 8);
    assert.deepEqual(usualSent(second)[0], {
      document: 3,
      checked: false,
      namespace: 'b',
      id: 'DNSRecordSet/b/r3',
      zone: 'z',
      owner: 'w',
      type: 'A',
      ttl: 60,
      records: '192.0.2.1',
      length: 8,
    });
    decodeDocuments(second, twice, undefined, undefined, ids);
    assert.deepStrictEqual(withIdentities({ documents: twice, ids }), documents);
    assert.deepEqual(ids, [
      'DNSRecordSet/a/r1',
      'DNSRecordSet/a/r2',
      'DNSRecordSet/b/r3',
      undefined,
      'DNSRecordSet/b/r5',
      'DNSRecordSet/b/r6',
      'DNSRecordSet/a/r7',
      'DNSRecordSet/a/r8',
    ]);
  });

  test('a usual record set crosses with its id, and its name comes back cut from it', () => {
    const doc = (document: number, namespace: string, name: string, ttl?: number): ParsedDocument =>
      usualDocument(document, namespace, name, { ttl });
    // Names and namespaces of lengths around what V8 copies or slices (13 characters), a namespace
    // changing between record sets, with and without a TTL.
    const long = `r${'x'.repeat(62)}`;
    const documents = [
      doc(1, 'a', 'r'),
      doc(2, 'a', 'r23456789012', 60),
      doc(3, 'team-of-many', 'r234567890123'),
      doc(4, 'team-of-many', long, 1),
      doc(5, 'b', long),
      doc(6, 'b', 'r6'),
    ];
    const json = encodeDocuments(documents);
    assert.deepEqual(
      usualSent(json).map((d) => d.id),
      documents.map((d) => `DNSRecordSet/${d.identity!.key}`),
    );
    assert.deepEqual(
      usualSent(json).map((d) => d.length),
      [7, 5, 5, 5, 5, 4],
    );
    const back: ParsedDocument[] = [];
    const ids: (string | undefined)[] = [];
    decodeDocuments(json, back, undefined, undefined, ids);
    assert.deepStrictEqual(withIdentities({ documents: back, ids }), documents);
    assert.equal(
      JSON.stringify(back.map((d) => d.resource)),
      JSON.stringify(documents.map((d) => d.resource)),
    );
    const plain: ParsedDocument[] = [];
    decodeDocuments(json, plain);
    assert.deepStrictEqual(plain, documents);
  });

  test("a file's first message says whether its documents' ids are distinct (ParsedManifest.distinct)", () => {
    const doc = (document: number, namespace: string, name: string): ParsedDocument =>
      usualDocument(document, namespace, name);
    const zone = zoneDocument(9, 'a');
    /** What the main thread ends with: the file in messages of `per` documents, as a parse thread sends it. */
    const received = (documents: ParsedDocument[], per: number) => {
      const back: ParsedDocument[] = [];
      const ids: (string | undefined)[] = [];
      const file = { distinct: false };
      const texts: string[] = [];
      for (let from = 0; from < documents.length; from += per) {
        const text = encodeDocuments(documents, undefined, from, Math.min(from + per, documents.length));
        texts.push(text);
        decodeDocuments(text, back, undefined, undefined, ids, file);
      }
      assert.deepStrictEqual(withIdentities({ documents: back, ids }), documents);
      // Only a file's first message may say so.
      for (const text of texts.slice(1)) assert.notEqual(JSON.parse(text)[0], true);
      return { distinct: file.distinct, said: JSON.parse(texts[0]!)[0] === true };
    };
    const distinct = [
      doc(1, 'a', 'r1'),
      doc(2, 'a', 'r2'),
      doc(3, 'b', 'r1'),
      doc(4, 'a', 'r3'),
      doc(5, 'b', 'r2'),
    ];
    for (const per of [1, 2, 5]) {
      assert.deepEqual(received(distinct, per), { distinct: true, said: true }, `${per} a message`);
      // The same name twice in one namespace, in one message or in two, after another namespace between.
      const twice = [...distinct, doc(6, 'a', 'r2')];
      assert.deepEqual(received(twice, per), { distinct: false, said: false }, `${per} a message`);
      // Other documents between them: their ids count too (a zone of the same name is another id).
      const mixed = [...distinct.slice(0, 3), zone, ...distinct.slice(3)];
      assert.deepEqual(received(mixed, per), { distinct: true, said: true }, `${per} a message`);
      assert.deepEqual(
        received([...mixed, { ...zone, document: 10 }], per),
        { distinct: false, said: false },
        `${per} a message`,
      );
      // A record set not of the usual shape (labelled: it crosses as an object) with a usual one's id.
      const labelled = doc(7, 'b', 'r1');
      (labelled.resource!.metadata as { labels?: Record<string, string> }).labels = { a: 'b' };
      assert.deepEqual(
        received([...mixed, labelled], per),
        { distinct: false, said: false },
        `${per} a message`,
      );
      assert.deepEqual(
        received([...mixed, { ...labelled, identity: { kind: 'DNSRecordSet', key: 'b/r9' } }], per),
        { distinct: true, said: true },
        `${per} a message`,
      );
      // Documents without an identity have no id.
      const anonymous: ParsedDocument = { document: 11, problems: [{ path: '', code: 'X', message: 'x' }] };
      assert.deepEqual(
        received([anonymous, ...mixed, anonymous], per),
        { distinct: true, said: true },
        `${per} a message`,
      );
    }
    // A namespace with a slash (refused by the schema) would let two ids be the same from different pairs.
    assert.deepEqual(received([doc(1, 'a/b', 'c'), doc(2, 'a', 'b/c')], 2), { distinct: false, said: false });
    // As a parse thread sends them (arrays) or the local parse has them (objects): the same text.
    const sent = distinct.map((d) => {
      const r = d.resource as DNSRecordSet;
      return [
        d.document,
        r.metadata.namespace!,
        r.metadata.name,
        'z',
        'w',
        'A',
        ['192.0.2.1'],
      ] as UsualRecordSet;
    });
    assert.equal(encodeDocuments(sent), encodeDocuments(distinct));
    // A message that says so after documents of its file were received: not distinct.
    const back: ParsedDocument[] = [];
    const ids: (string | undefined)[] = [];
    const file = { distinct: false };
    decodeDocuments(encodeDocuments(distinct, undefined, 0, 2), back, undefined, undefined, ids, file);
    assert.equal(file.distinct, true);
    decodeDocuments(encodeDocuments(distinct), back, undefined, undefined, ids, file);
    assert.equal(file.distinct, false);
  });

  test('the verdict on record values crosses with usual record sets only, the documents unchanged', () => {
    const doc = (document: number, records: string[], ttl?: number): ParsedDocument =>
      usualDocument(document, 'ns', `r${document}`, { records, ttl });
    const labelled = doc(4, ['192.0.2.4']);
    (labelled.resource!.metadata as { labels?: Record<string, string> }).labels = { a: 'b' };
    const documents = [doc(1, ['192.0.2.1']), doc(2, ['192.0.2.999']), doc(3, ['192.0.2.3'], 60), labelled];
    const checked = [true, false, true, true];
    const back: ParsedDocument[] = [];
    const compact: boolean[] = [];
    const crossed: boolean[] = [];
    // In two messages, as a parse thread sends them.
    decodeDocuments(encodeDocuments(documents, checked, 0, 2), back, compact, crossed);
    decodeDocuments(encodeDocuments(documents, checked, 2, 4), back, compact, crossed);
    assert.deepStrictEqual(back, documents);
    assert.deepEqual(compact, [true, true, false, false]);
    // The labelled one is not in the usual shape: its verdict stays behind (its values are parsed
    // again where it is received).
    assert.deepEqual(crossed, [true, false, true, false]);
    // Without the verdicts, the same text as before.
    assert.equal(encodeDocuments(documents, undefined), encodeDocuments(documents));
    assert.equal(encodeDocuments(documents, [false, false, false, false]), encodeDocuments(documents));
  });

  test('owners sent once a message, one record as a string: random record sets come back as they were', () => {
    // A fixed generator (no seed from the clock): the same cases every run.
    let state = 7;
    const next = (n: number) => {
      state = (state * 1103515245 + 12345) % 2 ** 31;
      return state % n;
    };
    const pick = <T>(list: readonly T[]): T => list[next(list.length)]!;
    const owners = ['@', 'www', 'mail', 'a', '1', '0', 'x'.repeat(11), 'sub.domain.example.com.'];
    const documents: ParsedDocument[] = [];
    const checked: boolean[] = [];
    for (let document = 1; documents.length < 3000; document++) {
      if (next(40) === 0) {
        documents.push(zoneDocument(document, 'ns'));
        checked.push(false);
        continue;
      }
      // Document numbers far above a file's, too: the first value stays exact.
      const number = next(50) === 0 ? document * 2 ** 30 : document;
      const namespace = pick(['a', 'team-of-many', 'b']);
      const name = `r${document}${'x'.repeat(next(20))}`;
      const records = Array.from({ length: pick([0, 1, 1, 1, 2, 3]) }, (_, i) => `192.0.2.${i}`);
      const ttl = next(4) === 0 ? next(100000) : undefined;
      const zone = pick(['z', 'y']);
      const owner = pick(owners);
      const type = pick(['A', 'AAAA', 'TXT']);
      documents.push(usualDocument(number, namespace, name, { zone, owner, type, records, ttl }));
      checked.push(next(2) === 0);
    }
    const back: ParsedDocument[] = [];
    const compact: boolean[] = [];
    const crossed: boolean[] = [];
    const ids: (string | undefined)[] = [];
    let backrefs = 0;
    let single = 0;
    for (let from = 0; from < documents.length; ) {
      const to = Math.min(documents.length, from + 1 + next(600));
      const json = encodeDocuments(documents, checked, from, to);
      for (const sent of usualSent(json)) {
        if (typeof sent.owner === 'number') {
          backrefs++;
          // The place of the same owner, sent as a string earlier in this message.
          assert.equal(typeof (JSON.parse(json) as unknown[])[sent.owner], 'string');
        }
        if (typeof sent.records === 'string') single++;
      }
      decodeDocuments(json, back, compact, crossed, ids);
      from = to;
    }
    assert.ok(backrefs > 1000 && single > 500, `${backrefs} ${single}`);
    assert.deepStrictEqual(withIdentities({ documents: back, ids }), documents);
    assert.equal(JSON.stringify(withIdentities({ documents: back, ids })), JSON.stringify(documents));
    for (let i = 0; i < documents.length; i++) {
      const r = documents[i]!.resource!;
      const usual = r.kind === 'DNSRecordSet';
      assert.equal(crossed[i], usual && checked[i]);
      assert.equal(compact[i], usual && !('ttl' in r.spec));
      if (usual) assert.ok(Array.isArray((back[i]!.resource as typeof r).spec.records));
    }
  });

  test('what is not exactly the usual shape goes as it is', () => {
    const usual = (): ParsedDocument => ({
      document: 1,
      identity: { kind: 'DNSRecordSet', key: 'ns/r' },
      resource: {
        apiVersion: 'dns.zonekeeper.dev/v1alpha1',
        kind: 'DNSRecordSet',
        metadata: { name: 'r', namespace: 'ns' },
        spec: { zoneRef: { name: 'z' }, name: 'w', type: 'A', records: ['192.0.2.1'] },
      },
    });
    assert.equal(roundTrip([usual()]).tuples, 1);
    type Loose = Omit<ParsedDocument, 'resource'> & {
      resource: {
        apiVersion: unknown;
        status?: unknown;
        metadata: Record<string, unknown>;
        spec: Record<string, unknown>;
      };
    };
    const variants: ((d: Loose) => void)[] = [
      (d) => {
        d.identity = { kind: 'DNSRecordSet', key: 'other/r' };
      },
      // The key compared piece by piece: the separator, each side, the length.
      (d) => {
        d.identity = { kind: 'DNSRecordSet', key: 'ns.r' };
      },
      (d) => {
        d.identity = { kind: 'DNSRecordSet', key: 'nx/r' };
      },
      (d) => {
        d.identity = { kind: 'DNSRecordSet', key: 'ns/x' };
      },
      (d) => {
        d.identity = { kind: 'DNSRecordSet', key: 'ns/r/' };
      },
      (d) => {
        d.identity = { kind: 'DNSRecordSet', key: 'ns/' };
      },
      (d) => {
        delete d.identity;
      },
      (d) => {
        d.resource.apiVersion = 'dns.zonekeeper.dev/v1beta1';
      },
      (d) => {
        d.resource.spec.ttl = undefined;
      },
      (d) => {
        d.resource.spec.ttl = '60';
      },
      (d) => {
        d.resource.spec.records = 'not a list';
      },
      (d) => {
        d.resource.metadata.namespace = 7;
      },
      (d) => {
        d.resource.spec = { name: 'w', zoneRef: { name: 'z' }, type: 'A', records: [] };
      },
      (d) => {
        d.resource.status = { conditions: [] };
      },
      (d) => {
        (d as { problems?: unknown[] }).problems = [];
      },
      (d) => {
        d.resource.spec.zoneRef = null;
      },
    ];
    for (const change of variants) {
      const loose = usual() as unknown as Loose;
      change(loose);
      const d = loose as unknown as ParsedDocument;
      const { back, tuples } = roundTrip([d]);
      assert.equal(tuples, 0, JSON.stringify(d));
      sameAsJson(back, [d]);
    }
  });
});

describe('a parse thread reads its file with blocking calls (readLimitedSync)', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'zonekeeper-read-limited-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  /** Both reads' answers, or the messages and codes of what they throw. */
  const both = async (file: string, maxBytes: number) => {
    const settle = async (read: () => Promise<unknown>) => {
      try {
        return { value: await read() };
      } catch (e) {
        return { error: (e as Error).message, code: (e as { code?: string }).code };
      }
    };
    return {
      sync: await settle(async () => readLimitedSync(file, maxBytes)),
      async: await settle(() => readLimited(file, maxBytes)),
    };
  };

  test('the same text as the read without blocking: non-ASCII bytes anywhere, a BOM, invalid UTF-8, CRLF', async () => {
    const head = Buffer.from('apiVersion: v1\nkind: A\n');
    const odd = [
      Buffer.from('\u00e9'),
      Buffer.from('\u{1F600}'),
      Buffer.from([0xef, 0xbb, 0xbf]), // a BOM
      Buffer.from([0xff]),
      Buffer.from([0xc3]), // a sequence cut short
      Buffer.from([0xe2, 0x82]),
      Buffer.from([0xed, 0xa0, 0x80]), // a surrogate's encoding
      Buffer.from([0xc0, 0xaf]), // an overlong encoding
      Buffer.from([0x80]),
      Buffer.from('\r\n'),
      Buffer.from([0]),
    ];
    let k = 0;
    for (const bytes of odd) {
      for (let at = 0; at <= head.length; at++) {
        const content = Buffer.concat([head.subarray(0, at), bytes, head.subarray(at)]);
        const file = path.join(dir, `odd-${k++}.yaml`);
        await writeFile(file, content);
        const { sync, async } = await both(file, 2 ** 20);
        assert.deepStrictEqual(sync, async);
        assert.deepStrictEqual(sync, { value: { text: content.toString('utf8') } });
      }
    }
    const empty = path.join(dir, 'empty.yaml');
    await writeFile(empty, '');
    assert.deepStrictEqual(await both(empty, 2 ** 20), {
      sync: { value: { text: '' } },
      async: { value: { text: '' } },
    });
  });

  test('the same size limit and the same errors', async () => {
    const file = path.join(dir, 'ten.yaml');
    await writeFile(file, 'a: 123456\n');
    for (const max of [0, 9, 10, 11]) {
      const { sync, async } = await both(file, max);
      assert.deepStrictEqual(sync, async, `limit ${max}`);
      assert.deepStrictEqual(sync, { value: max < 10 ? { tooLarge: 10 } : { text: 'a: 123456\n' } });
    }
    for (const missing of [path.join(dir, 'missing.yaml'), dir]) {
      const { sync, async } = await both(missing, 2 ** 20);
      // Neither is a regular file: left to the read without blocking, whose error the parse reports
      assert.deepStrictEqual(sync, { value: undefined });
      assert.ok('error' in async, JSON.stringify(async));
      // And a parse thread reports it as the local parse does.
      const sent = await parseManifestFileToSend(missing, 2 ** 20);
      const local = await parseManifestFile(missing, 2 ** 20);
      assert.deepStrictEqual(sent.parsed.fileErrors, local.parsed.fileErrors);
      assert.equal(sent.parsed.fileErrors[0]?.code, 'FILE_UNREADABLE');
    }
    const sent = await parseManifestFileToSend(file, 9);
    assert.deepStrictEqual(sent.parsed.fileErrors, (await parseManifestFile(file, 9)).parsed.fileErrors);
    assert.equal(sent.parsed.fileErrors[0]?.code, 'FILE_TOO_LARGE');
  });

  test('anything but a regular file is left to the read without blocking, and no writer is waited for', () => {
    const fifo = path.join(dir, 'fifo.yaml');
    execFileSync('mkfifo', [fifo]);
    // Opening a FIFO to read would wait for a writer: this returns at once
    assert.equal(readLimitedSync(fifo, 2 ** 20), undefined);
    assert.equal(readLimitedSync('/dev/null', 2 ** 20), undefined);
    assert.equal(readLimitedSync(dir, 2 ** 20), undefined);
  });

  test("a FIFO's waiting writer is not woken: the FIFO is never opened here", async () => {
    const fifo = path.join(dir, 'fifo-with-writer.yaml');
    execFileSync('mkfifo', [fifo]);
    // A writer waits in its open for a reader.
    const writer = spawn('sh', ['-c', `printf 'kept: 1\\n' > '${fifo}'`], { stdio: 'ignore' });
    const exited = new Promise<void>((resolve) => writer.once('exit', () => resolve()));
    let done = false;
    void exited.then(() => {
      done = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(readLimitedSync(fifo, 2 ** 20), undefined);
    // An open here (even one that does not wait) would have let the writer write into a descriptor
    // closed at once, and the writer would have ended.
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(done, false, 'the writer was woken');
    // What it writes is still there for the read that takes it (readLimited's own open).
    const handle = await open(fifo, 'r');
    const text = await handle.readFile('utf8');
    await handle.close();
    await exited;
    assert.equal(text, 'kept: 1\n');
  });

  test('an open or a read that would wait (EAGAIN: a lease held by another process, a FUSE file system) is left to the read without blocking', async () => {
    const file = path.join(dir, 'leased.yaml');
    await writeFile(file, 'a: 1\n');
    const failing = (code: string) => () => {
      throw Object.assign(new Error(`${code}: refused, '${file}'`), { code });
    };
    const opened: number[] = [];
    const openCounted = (f: string, flags: number) => {
      const fd = openSync(f, flags);
      opened.push(fd);
      return fd;
    };
    for (const code of ['EAGAIN', 'EWOULDBLOCK']) {
      // At the open (a lease), and at a read (a FUSE file system, a mandatory lock).
      assert.equal(readLimitedSync(file, 2 ** 20, { open: failing(code), read: readSync }), undefined, code);
      assert.equal(
        readLimitedSync(file, 2 ** 20, { open: openCounted, read: failing(code) }),
        undefined,
        code,
      );
    }
    // Any other error is the read's error, as before.
    assert.throws(() => readLimitedSync(file, 2 ** 20, { open: failing('EACCES'), read: readSync }), {
      code: 'EACCES',
    });
    assert.throws(() => readLimitedSync(file, 2 ** 20, { open: openCounted, read: failing('EIO') }), {
      code: 'EIO',
    });
    // Every descriptor opened was closed.
    for (const fd of opened) assert.throws(() => fstatSync(fd), { code: 'EBADF' });
    // Unrefused, the same file is read here.
    assert.deepStrictEqual(readLimitedSync(file, 2 ** 20), { text: 'a: 1\n' });
  });
});
