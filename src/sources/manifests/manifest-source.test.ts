import assert from 'node:assert/strict';
import { cp, mkdir, mkdtemp, readdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import type { DNSRecordSet, DNSZone } from '../../api/index.ts';
import { MemoryStore } from '../../control/memory-store.ts';
import { FolderHold } from './folder-hold.ts';
import { LocalManifestParser, type ManifestParser, ManifestParserPool } from './manifest-parser.ts';
import { ManifestSource, refusalText } from './manifest-source.ts';
import { StateStore } from './state-file.ts';

const record = (name: string, address: string, type = 'A') =>
  `apiVersion: dns.zonekeeper.dev/v1alpha1\nkind: DNSRecordSet\nmetadata: {name: ${name}, namespace: dns}\nspec:\n  zoneRef: {name: z}\n  name: ${name}\n  type: ${type}\n  records: ["${address}"]\n`;

const zone = (name: string, domain: string) =>
  `apiVersion: dns.zonekeeper.dev/v1alpha1\nkind: DNSZone\nmetadata: {name: ${name}, namespace: dns}\nspec:\n  domainName: ${domain}\n  className: builtin\n`;

describe('ManifestSource', () => {
  let dir: string;
  let store: MemoryStore;
  let source: ManifestSource;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'zk-src-'));
    store = new MemoryStore();
    source = new ManifestSource({ dir, store, state: await StateStore.open(undefined) });
  });
  afterEach(async () => {
    source.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const records = () =>
    (store.list('DNSRecordSet') as DNSRecordSet[])
      .map((r) => `${r.metadata.name}=${r.spec.records.join()}`)
      .sort();

  test('loads multi-document files from nested folders, .yml too, hidden ones skipped', async () => {
    await writeFile(path.join(dir, 'a.yaml'), `${record('a', '192.0.2.1')}---\n${record('b', '192.0.2.2')}`);
    await writeFile(path.join(dir, 'c.yml'), record('c', '192.0.2.3'));
    await writeFile(path.join(dir, '.hidden.yaml'), record('h', '192.0.2.4'));
    await source.reload();
    assert.deepEqual(records(), ['a=192.0.2.1', 'b=192.0.2.2', 'c=192.0.2.3']);
    assert.deepEqual(source.problems(), []);
  });

  test('an invalid new version keeps the last valid one and reports file, line and field', async () => {
    const file = path.join(dir, 'a.yaml');
    await writeFile(file, record('a', '192.0.2.1'));
    await source.reload();
    await writeFile(file, record('a', '192.0.2.1', 'BOGUS'));
    await source.reload();
    assert.deepEqual(records(), ['a=192.0.2.1']);
    const [p] = source.problems();
    assert.equal(p?.file, file);
    assert.equal(p?.line, 7);
    assert.equal(p?.path, 'spec.type');
    assert.equal(p?.object, 'DNSRecordSet dns/a');
  });

  test('a record value that does not parse is invalid like a schema error: the last valid version stays, shown Accepted=False', async () => {
    const file = path.join(dir, 'a.yaml');
    await writeFile(file, record('a', '192.0.2.53'));
    await source.reload();
    await writeFile(file, record('a', '192.0.2.531'));
    await source.reload();
    assert.deepEqual(records(), ['a=192.0.2.53']);
    const [p] = source.problems();
    assert.equal(p?.code, 'INVALID_RDATA');
    assert.equal(p?.path, 'spec.records[0]');
    assert.equal(p?.line, 8);
    assert.match(p?.message ?? '', /spec\.records\[0\] "192\.0\.2\.531": A address/);
    const shown = source.present(store.get('DNSRecordSet', 'dns/a')!);
    const accepted = shown.status?.conditions?.find((c) => c.type === 'Accepted');
    assert.equal(accepted?.status, 'False');
    assert.equal(accepted?.reason, 'Invalid');
    assert.match(accepted?.message ?? '', /last valid version .* is still served: .*192\.0\.2\.531/);
    assert.equal(shown.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'False');
    // Fixed: accepted again, nothing kept.
    await writeFile(file, record('a', '192.0.2.54'));
    await source.reload();
    assert.deepEqual(records(), ['a=192.0.2.54']);
    assert.equal(source.keptObjects().size, 0);
    assert.equal(source.present(store.get('DNSRecordSet', 'dns/a')!), store.get('DNSRecordSet', 'dns/a'));
  });

  test('record values checked on a parse thread: wrong ones are refused as on this thread, at their file and line, the last valid version kept', async () => {
    const values = async (parser: ManifestParser) => {
      const here = await mkdtemp(path.join(tmpdir(), 'zk-src-values-'));
      const store = new MemoryStore(() => new Date(0));
      const loaded = new ManifestSource({
        dir: here,
        store,
        state: await StateStore.open(undefined),
        parser,
      });
      try {
        const file = path.join(here, 'a.yaml');
        const docs = (bad: boolean) =>
          [
            record('a', bad ? '192.0.2.531' : '192.0.2.1'),
            record('b', bad ? '2001:db8::1' : '192.0.2.2'),
            record('t', bad ? '\\"open' : 'v=spf1 -all', 'TXT'),
            record('c', 'h.example.com.', 'CNAME'),
            `${record('d', '192.0.2.4').replace('["192.0.2.4"]', bad ? '["192.0.2.4", "192.0.2.4"]' : '["192.0.2.4", "192.0.2.5"]')}`,
          ].join('---\n');
        await writeFile(file, docs(false));
        await loaded.reload();
        const before = JSON.stringify(store.list('DNSRecordSet'));
        assert.deepEqual(loaded.problems(), []);
        await writeFile(file, docs(true));
        await loaded.reload();
        assert.equal(JSON.stringify(store.list('DNSRecordSet')), before, 'every last valid version kept');
        return loaded.problems();
      } finally {
        loaded.stop();
        await parser.close();
        await rm(here, { recursive: true, force: true });
      }
    };
    const pooled = await values(new ManifestParserPool(1));
    const local = await values(new LocalManifestParser());
    assert.deepEqual(
      pooled.map(({ file, ...p }) => ({ ...p, file: path.basename(file) })),
      local.map(({ file, ...p }) => ({ ...p, file: path.basename(file) })),
    );
    assert.deepEqual(
      pooled.map((p) => [p.object, p.code, p.path, p.line]),
      [
        ['DNSRecordSet dns/a', 'INVALID_RDATA', 'spec.records[0]', 8],
        ['DNSRecordSet dns/b', 'INVALID_RDATA', 'spec.records[0]', 17],
        ['DNSRecordSet dns/t', 'INVALID_RDATA', 'spec.records[0]', 26],
        ['DNSRecordSet dns/d', 'INVALID_RDATA', 'spec.records[1]', 44],
      ],
    );
    assert.match(pooled[3]!.message, /repeats spec\.records\[0\]/);
  });

  test('relative names in values are checked against the zone: a name too long with the origin is invalid', async () => {
    const long = `${'a'.repeat(60)}.${'b'.repeat(60)}.${'c'.repeat(60)}`;
    await writeFile(path.join(dir, 'zone.yaml'), zone('z', `${'d'.repeat(60)}.example.com`));
    await writeFile(path.join(dir, 'r.yaml'), record('r', long, 'CNAME'));
    await source.reload();
    const problem = source.problems().find((p) => p.object === 'DNSRecordSet dns/r');
    assert.equal(problem?.code, 'INVALID_RDATA', JSON.stringify(source.problems()));
  });

  test('a YAML syntax error keeps every object of the file', async () => {
    const file = path.join(dir, 'a.yaml');
    await writeFile(file, `${record('a', '192.0.2.1')}---\n${record('b', '192.0.2.2')}`);
    await source.reload();
    await writeFile(file, 'kind: [broken\n');
    await source.reload();
    assert.deepEqual(records(), ['a=192.0.2.1', 'b=192.0.2.2']);
    assert.ok(source.problems().some((p) => p.code === 'YAML_INVALID'));
    assert.ok(source.problems().some((p) => p.code === 'KEPT_PREVIOUS'));
  });

  test('removing a document or a file deletes its objects', async () => {
    const file = path.join(dir, 'a.yaml');
    await writeFile(file, `${record('a', '192.0.2.1')}---\n${record('b', '192.0.2.2')}`);
    await source.reload();
    await writeFile(file, record('a', '192.0.2.1'));
    await source.reload();
    assert.deepEqual(records(), ['a=192.0.2.1']);
    await rm(file);
    await source.reload();
    assert.deepEqual(records(), []);
  });

  test('an object defined in two files: the first path wins, the other is reported; removing the first hands over', async () => {
    await writeFile(path.join(dir, 'a.yaml'), record('x', '192.0.2.1'));
    await writeFile(path.join(dir, 'b.yaml'), record('x', '192.0.2.2'));
    await source.reload();
    assert.deepEqual(records(), ['x=192.0.2.1']);
    assert.equal(source.problems()[0]?.code, 'DUPLICATE');
    await rm(path.join(dir, 'a.yaml'));
    await source.reload();
    assert.deepEqual(records(), ['x=192.0.2.2']);
    assert.deepEqual(source.problems(), []);
  });

  describe('problems found after later files were parsed keep their line', () => {
    // a.yaml's problems (a duplicate and a value that does not parse) are found on the main thread;
    // by then the parser has parsed the later files too.
    const files = async () => {
      await writeFile(
        path.join(dir, 'a.yaml'),
        [
          zone('z', 'example.com'),
          record('x', '192.0.2.1'),
          record('x', '192.0.2.2'),
          record('m', 'x y z', 'MX'),
        ].join('---\n'),
      );
      for (let i = 0; i < 12; i++)
        await writeFile(path.join(dir, `b${String(i).padStart(2, '0')}.yaml`), record(`b${i}`, '192.0.2.9'));
    };
    /** A parser keeping only the last file's text for `locate`, as a parse thread keeps only a few. */
    const forgetful = (inner: ManifestParser): ManifestParser => {
      let last: number | undefined;
      return {
        parse: async (file, maxBytes) => {
          const parsed = await inner.parse(file, maxBytes);
          if (last !== undefined) inner.release(last);
          last = parsed.token;
          return parsed;
        },
        locate: (token, requests) => inner.locate(token, requests),
        release: (token) => inner.release(token),
        close: () => inner.close(),
      };
    };
    /**
     * A parser that keeps a file's text only until another file's parse starts: a parse thread with
     * several files in flight drops it that soon on a busy machine.
     */
    const evicting = (inner: ManifestParser): ManifestParser => {
      let started = 0;
      const parsedAt = new Map<number, number>();
      return {
        parse: async (file, maxBytes) => {
          const at = ++started;
          const parsed = await inner.parse(file, maxBytes);
          parsedAt.set(parsed.token, at);
          return parsed;
        },
        locate: (token, requests) =>
          parsedAt.get(token) === started
            ? inner.locate(token, requests)
            : Promise.resolve(requests.map(() => undefined)),
        release: (token) => {
          parsedAt.delete(token);
          inner.release(token);
        },
        close: () => inner.close(),
      };
    };
    const lines = (loaded: ManifestSource) =>
      loaded
        .problems()
        .filter((p) => path.basename(p.file) === 'a.yaml')
        .map((p) => `${p.code} ${p.line}`)
        .sort();
    const expected = ['DUPLICATE 16', 'INVALID_RDATA 33'];

    for (const [name, make] of [
      ['a parser keeping one file', () => forgetful(new LocalManifestParser())],
      // Every first `locate` of a file taken early misses: its lines come from parsing it again.
      ['a parser dropping a file once another parse starts', () => evicting(new LocalManifestParser())],
      ['parse threads (2)', () => new ManifestParserPool(2)],
      ['parse threads (4)', () => new ManifestParserPool(4)],
    ] as const) {
      test(`${name}: on a first load and a restart with a state`, async () => {
        await files();
        const state = await StateStore.open(undefined);
        for (let load = 0; load < 2; load++) {
          const parser = make();
          const loaded = new ManifestSource({ dir, store: new MemoryStore(), state, parser });
          try {
            await loaded.reload();
            assert.deepEqual(lines(loaded), expected, `load ${load + 1}`);
          } finally {
            loaded.stop();
            await parser.close();
          }
        }
      });
    }

    test('a file changed since it was read gets no line from its new version', async () => {
      await files();
      // a.yaml's text is gone when its lines are first asked for (whatever else was parsed by then),
      // so it is parsed again, and it changed just before that second parse.
      const inner = new LocalManifestParser();
      let aParses = 0;
      let aFirst: number | undefined;
      const parser: ManifestParser = {
        parse: async (file, maxBytes) => {
          const isA = path.basename(file) === 'a.yaml';
          if (isA && ++aParses === 2)
            await writeFile(
              path.join(dir, 'a.yaml'),
              `# moved down\n\n\n${await readFile(path.join(dir, 'a.yaml'), 'utf8')}`,
            );
          const parsed = await inner.parse(file, maxBytes);
          if (isA && aParses === 1) aFirst = parsed.token;
          return parsed;
        },
        locate: (token, requests) =>
          token === aFirst ? Promise.resolve(requests.map(() => undefined)) : inner.locate(token, requests),
        release: (token) => inner.release(token),
        close: () => inner.close(),
      };
      const loaded = new ManifestSource({
        dir,
        store: new MemoryStore(),
        state: await StateStore.open(undefined),
        parser,
      });
      try {
        await loaded.reload();
        assert.deepEqual(lines(loaded), ['DUPLICATE undefined', 'INVALID_RDATA undefined']);
      } finally {
        loaded.stop();
        await parser.close();
      }
    });
  });

  test("one object per record set: the state and the file hold the store's spec, no parsed copy; handing over between files loses no version", async () => {
    const state = await StateStore.open(undefined);
    source = new ManifestSource({ dir, store, state });
    await writeFile(path.join(dir, 'b.yaml'), `${record('x', '192.0.2.2')}---\n${record('y', '192.0.2.3')}`);
    await source.reload();
    const served = store.get('DNSRecordSet', 'dns/x')!;
    assert.equal(state.object('DNSRecordSet/dns/x')?.resource?.spec, served.spec, "the store's spec, shared");
    // Re-read unchanged (another document edited): the store keeps its spec, and so does the state.
    await writeFile(path.join(dir, 'b.yaml'), `${record('x', '192.0.2.2')}---\n${record('y', '192.0.2.4')}`);
    await source.reload();
    assert.equal(store.get('DNSRecordSet', 'dns/x')!.spec, served.spec);
    assert.equal(state.object('DNSRecordSet/dns/x')?.resource?.spec, served.spec);
    // A file earlier in path order takes x over; b.yaml's own version stays b.yaml's.
    await writeFile(path.join(dir, 'a.yaml'), record('x', '192.0.2.1'));
    await source.reload();
    assert.deepEqual(records(), ['x=192.0.2.1', 'y=192.0.2.4']);
    assert.equal(source.definitionOf('DNSRecordSet/dns/x')?.file, path.join(dir, 'a.yaml'));
    // b.yaml's x is made invalid while it is not served, then a.yaml goes: nothing valid is left of
    // b.yaml's x but the version it had, which is served again (not a.yaml's).
    await writeFile(
      path.join(dir, 'b.yaml'),
      `${record('x', '192.0.2.999')}---\n${record('y', '192.0.2.4')}`,
    );
    await source.reload();
    await rm(path.join(dir, 'a.yaml'));
    await source.reload();
    assert.deepEqual(records(), ['x=192.0.2.2', 'y=192.0.2.4']);
    assert.deepEqual((state.object('DNSRecordSet/dns/x')!.resource as DNSRecordSet).spec.records, [
      '192.0.2.2',
    ]);
    assert.deepEqual([...source.keptObjects().keys()], ['DNSRecordSet/dns/x']);
    assert.deepEqual(source.definitionOf('DNSRecordSet/dns/x'), {
      file: path.join(dir, 'b.yaml'),
      document: 1,
    });
    // Deleted and added again: nothing of the old one is left, the new one served.
    await writeFile(path.join(dir, 'b.yaml'), record('y', '192.0.2.4'));
    await source.reload();
    assert.equal(state.object('DNSRecordSet/dns/x'), undefined);
    await writeFile(path.join(dir, 'b.yaml'), `${record('y', '192.0.2.4')}---\n${record('x', '192.0.2.7')}`);
    await source.reload();
    assert.deepEqual(records(), ['x=192.0.2.7', 'y=192.0.2.4']);
    assert.deepEqual(source.definitionOf('DNSRecordSet/dns/x'), {
      file: path.join(dir, 'b.yaml'),
      document: 2,
    });
  });

  test("record sets of a zone share one frozen zoneRef; edits, moves, renames, deletes and re-adds keep each one's own zone", async () => {
    const inZone = (name: string, zoneName: string, address: string, ref = `{name: ${zoneName}}`) =>
      record(name, address).replace('zoneRef: {name: z}', `zoneRef: ${ref}`);
    const state = await StateStore.open(undefined);
    source = new ManifestSource({ dir, store, state });
    const file = path.join(dir, 'a.yaml');
    const write = (...docs: string[]) => writeFile(file, docs.join('---\n'));
    const specOf = (name: string) => (store.get('DNSRecordSet', `dns/${name}`) as DNSRecordSet).spec;
    const zoneRefs = () =>
      (store.list('DNSRecordSet') as DNSRecordSet[])
        .map((r) => `${r.metadata.name}:${JSON.stringify(r.spec.zoneRef)}`)
        .sort();
    await write(
      inZone('a', 'z', '192.0.2.1'),
      inZone('b', 'z', '192.0.2.2'),
      inZone('c', 'y', '192.0.2.3'),
      inZone('d', 'z', '192.0.2.4', '{name: z, namespace: dns}'),
    );
    await source.reload();
    assert.deepEqual(zoneRefs(), [
      'a:{"name":"z"}',
      'b:{"name":"z"}',
      'c:{"name":"y"}',
      'd:{"name":"z","namespace":"dns"}',
    ]);
    const shared = specOf('a').zoneRef;
    assert.equal(specOf('b').zoneRef, shared, 'one object for the zone');
    assert.ok(Object.isFrozen(shared), 'no holder can change it for the others');
    assert.throws(() => {
      (shared as { name: string }).name = 'other';
    }, TypeError);
    assert.notEqual(specOf('c').zoneRef, shared);
    assert.notEqual(specOf('d').zoneRef, shared, 'a zoneRef with more than a name is its own');
    // b moves to y and its address changes, a is renamed to e, c is deleted; then c is added back in z.
    await write(inZone('e', 'z', '192.0.2.1'), inZone('b', 'y', '192.0.2.12'), inZone('d', 'z', '192.0.2.4'));
    await source.reload();
    assert.deepEqual(zoneRefs(), ['b:{"name":"y"}', 'd:{"name":"z"}', 'e:{"name":"z"}']);
    assert.equal(specOf('e').zoneRef, shared);
    assert.equal(specOf('d').zoneRef, shared);
    assert.deepEqual(specOf('b'), { zoneRef: { name: 'y' }, name: 'b', type: 'A', records: ['192.0.2.12'] });
    assert.deepEqual(
      (state.object('DNSRecordSet/dns/b')!.resource as DNSRecordSet).spec,
      specOf('b'),
      'the state holds the same version',
    );
    await write(
      inZone('e', 'z', '192.0.2.1'),
      inZone('b', 'y', '192.0.2.12'),
      inZone('d', 'z', '192.0.2.4'),
      inZone('c', 'z', '192.0.2.3'),
    );
    await source.reload();
    assert.deepEqual(records(), ['b=192.0.2.12', 'c=192.0.2.3', 'd=192.0.2.4', 'e=192.0.2.1']);
    assert.equal(specOf('c').zoneRef, shared);
    assert.equal(specOf('c').zoneRef?.name, 'z');
    assert.deepEqual(source.problems(), []);
  });

  test('only changed files are re-read', async () => {
    await writeFile(path.join(dir, 'a.yaml'), record('a', '192.0.2.1'));
    await writeFile(path.join(dir, 'b.yaml'), record('b', '192.0.2.2'));
    await source.reload();
    const versions = () =>
      store
        .list('DNSRecordSet')
        .map((r) => r.metadata.resourceVersion)
        .join();
    const before = versions();
    await source.reload();
    assert.equal(versions(), before, 'nothing changed, nothing applied');
    await writeFile(path.join(dir, 'b.yaml'), record('b', '192.0.2.3'));
    await source.reload();
    const a = store.get('DNSRecordSet', 'dns/a')!;
    assert.equal(a.metadata.generation, 1);
    assert.equal((store.get('DNSRecordSet', 'dns/b') as DNSRecordSet).metadata.generation, 2);
  });

  test('a one-record edit under folder change safety lists none of the store: its work is the file', async () => {
    // Counted: a list of every object per reload cost work proportional to the whole folder.
    const listed: string[] = [];
    const counting = new (class extends MemoryStore {
      override list(kind: Parameters<MemoryStore['list']>[0]) {
        listed.push(kind);
        return super.list(kind);
      }
    })();
    const held = new ManifestSource({
      dir,
      store: counting,
      state: await StateStore.open(undefined),
      folderHold: new FolderHold({ windowMs: 0, confirmations: () => [], confirmHint: () => 'by hand' }),
    });
    const many = Array.from({ length: 50 }, (_, i) => record(`r${i}`, '192.0.2.1')).join('---\n');
    await writeFile(path.join(dir, 'a.yaml'), `${zone('z', 'example.com')}---\n${many}`);
    await writeFile(path.join(dir, 'b.yaml'), record('b', '192.0.2.2'));
    await held.reload();
    listed.length = 0;
    await writeFile(path.join(dir, 'b.yaml'), record('b', '192.0.2.3'));
    await held.reload();
    assert.equal((counting.get('DNSRecordSet', 'dns/b') as DNSRecordSet).spec.records[0], '192.0.2.3');
    assert.deepEqual(listed, [], 'the store was listed');
    // Emptying the big file is still held as removing most of the folder (the count is the store's).
    await writeFile(path.join(dir, 'a.yaml'), record('r0', '192.0.2.1'));
    await held.reload();
    assert.equal(counting.count('DNSRecordSet'), 51, 'the removal of 49 of 51 is held');
    assert.ok(held.heldRemovals.has('dns/z'));
  });

  test('a confirmed removal and a change in another file apply in one reload, each to its own object', async () => {
    // The change safety looks up each touched object's winner; the apply after it reuses them for
    // the touched objects and looks up the released ones (which come after them) itself.
    const confirmed: string[] = [];
    const held = new ManifestSource({
      dir,
      store,
      state: await StateStore.open(undefined),
      folderHold: new FolderHold({
        windowMs: 0,
        confirmations: () => confirmed,
        confirmHint: () => 'by hand',
      }),
    });
    const many = Array.from({ length: 50 }, (_, i) => record(`r${i}`, '192.0.2.1')).join('---\n');
    await writeFile(path.join(dir, 'a.yaml'), `${zone('z', 'example.com')}---\n${many}`);
    await writeFile(path.join(dir, 'b.yaml'), `${record('b', '192.0.2.2')}---\n${record('c', '192.0.2.4')}`);
    await held.reload();
    await writeFile(path.join(dir, 'a.yaml'), `${zone('z', 'example.com')}---\n${record('r0', '192.0.2.1')}`);
    await held.reload();
    const hold = held.heldRemovals.get('dns/z');
    assert.ok(hold, 'the removal of 49 of 52 is held');
    assert.equal(store.count('DNSRecordSet'), 52);
    confirmed.push(hold.hash);
    // b changes and the held removal is confirmed.
    await writeFile(path.join(dir, 'b.yaml'), `${record('b', '192.0.2.3')}---\n${record('c', '192.0.2.4')}`);
    await held.reload();
    assert.equal(held.heldRemovals.size, 0);
    assert.deepEqual(records(), ['b=192.0.2.3', 'c=192.0.2.4', 'r0=192.0.2.1']);
    assert.equal(store.get('DNSRecordSet', 'dns/b')?.metadata.generation, 2);
    assert.equal(held.definitionOf('DNSRecordSet/dns/b')?.file, path.join(dir, 'b.yaml'));
    held.stop();
  });

  test("a parse thread's record sets, taken as they arrive, give the store and the state of a local parse", async () => {
    const ttl = record('t', '192.0.2.9').replace('  type: A', '  type: A\n  ttl: 60');
    const labelled = record('l', '192.0.2.8').replace('namespace: dns}', 'namespace: dns, labels: {a: b}}');
    await writeFile(
      path.join(dir, 'a.yaml'),
      [zone('z', 'example.com'), record('a', '192.0.2.1'), ttl, labelled, record('b', '192.0.2.2')].join(
        '---\n',
      ),
    );
    const load = async (parser: ManifestParser) => {
      const store = new MemoryStore(() => new Date(0));
      const state = await StateStore.open(undefined);
      const loaded = new ManifestSource({ dir, store, state, parser, now: () => new Date(0) });
      await loaded.reload();
      loaded.stop();
      await parser.close();
      const ids = [...state.objectIds()].sort();
      // Either way, the record sets naming zone z by name share its one frozen zoneRef.
      const refs = (store.list('DNSRecordSet') as DNSRecordSet[])
        .filter((r) => r.spec.zoneRef?.name === 'z' && r.spec.zoneRef.namespace === undefined)
        .map((r) => r.spec.zoneRef);
      assert.ok(refs.length >= 2 && refs.every((r) => r === refs[0] && Object.isFrozen(r)));
      return {
        store: JSON.stringify(['DNSZone', 'DNSRecordSet'].map((k) => store.list(k as 'DNSZone'))),
        state: JSON.stringify(ids.map((id) => [id, state.object(id)])),
        specKeys: (store.list('DNSRecordSet') as DNSRecordSet[]).map((r) => Object.keys(r.spec).join()),
      };
    };
    const pooled = await load(new ManifestParserPool(1));
    const local = await load(new LocalManifestParser());
    assert.equal(pooled.store, local.store);
    assert.equal(pooled.state, local.state);
    assert.deepEqual(pooled.specKeys, local.specKeys);
    assert.ok(pooled.specKeys.includes('zoneRef,name,type,records,ttl'), pooled.specKeys.join(' / '));
  });

  test('follows the folder live', async () => {
    await source.start();
    await writeFile(path.join(dir, 'a.yaml'), record('a', '192.0.2.1'));
    for (let i = 0; i < 200 && records().length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(records(), ['a=192.0.2.1']);
  });
});

describe('manifest parsing', () => {
  test('fast and precise parses agree, and problems still carry lines', async () => {
    const { parseManifestText } = await import('./load-manifests.ts');
    const text = `# comment\n---\napiVersion: v1\nkind: A\nmetadata:\n  name: x\n---\n---\nkind: B\nspec:\n  records:\n    - one\n    - 2020-01-01\n`;
    const read = parseManifestText(text, 'f.yaml');
    assert.equal(read.documents.length, 2);
    assert.deepEqual(
      read.documents[1]!.value,
      { kind: 'B', spec: { records: ['one', '2020-01-01'] } },
      'dates stay strings (YAML 1.2 core)',
    );
    assert.equal(read.documents[1]!.document, 3, 'a leading comment belongs to the first document');
    assert.equal(read.documents[1]!.line, 8, 'a document starts at its --- marker');
    assert.equal(read.documents[1]!.lineOf('spec.records[1]'), 13);
  });

  test('anchors take the precise path, which caps alias expansion', async () => {
    const { parseManifestText } = await import('./load-manifests.ts');
    const bomb = ['a: &a ["x","x","x","x","x","x","x","x","x"]'];
    for (let i = 0; i < 12; i++)
      bomb.push(
        `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)}]`,
      );
    const read = parseManifestText(bomb.join('\n'), 'bomb.yaml');
    assert.equal(read.documents.length, 0);
    assert.match(read.fileErrors[0]?.message ?? '', /YAML: .*alias/i);
  });

  test('a repeated key refuses its document at the repetition, in block and flow mappings, at any depth', async () => {
    const { parseManifestText } = await import('./load-manifests.ts');
    const text = [
      'kind: A', // document 1: fine, 1 and "1" are different keys
      'spec: {1: x, "1": y}',
      '---',
      'kind: B', // document 2: a repeated key two levels down
      'spec:',
      '  inner:',
      '    name: a',
      '    name: b',
      '---',
      'kind: C', // document 3: in a flow mapping
      'spec: {a: 1, b: 2, a: 3}',
    ].join('\n');
    const read = parseManifestText(text, 'dup.yaml');
    assert.deepEqual(
      read.documents.map((d) => d.document),
      [1],
    );
    assert.deepEqual(
      read.fileErrors.map((e) => [e.document, e.line, e.message]),
      [
        [2, 8, 'YAML: Map keys must be unique'],
        [3, 11, 'YAML: Map keys must be unique'],
      ],
    );
  });

  test('a mapping of 20,000 keys is parsed and located (duplicate keys found with one set per mapping)', async () => {
    const { parseManifestText } = await import('./load-manifests.ts');
    const keys = Array.from({ length: 20_000 }, (_, i) => `  k${i}: 1`).join('\n');
    const read = parseManifestText(`kind: A\nspec:\n${keys}\n`, 'big.yaml');
    assert.equal(read.documents[0]!.lineOf('spec.k19999'), 20_002);
  });
});

describe('ManifestSource watching', () => {
  test('follows edits made by renaming a new file over the old one, again and again', async () => {
    const { mkdtemp, rename, rm, writeFile } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const dir = await mkdtemp(path.join(tmpdir(), 'zk-rename-'));
    const outside = await mkdtemp(path.join(tmpdir(), 'zk-rename-src-'));
    const store = new MemoryStore();
    const source = new ManifestSource({ dir, store, state: await StateStore.open(undefined) });
    const file = path.join(dir, 'a.yaml');
    const value = () => (store.get('DNSRecordSet', 'dns/a') as DNSRecordSet | undefined)?.spec.records[0];
    try {
      await writeFile(file, record('a', '192.0.2.1'));
      await source.start();
      for (const address of ['192.0.2.2', '192.0.2.3', '192.0.2.4']) {
        // Written outside the watched folder, then renamed in (as git and ConfigMap volumes do).
        const tmp = path.join(outside, `a.yaml.${address}`);
        await writeFile(tmp, record('a', address));
        await rename(tmp, file); // as editors, git and ConfigMap volumes do
        for (let i = 0; i < 150 && value() !== address; i++) await new Promise((r) => setTimeout(r, 10));
        assert.equal(value(), address, `the edit to ${address} was seen`);
      }
    } finally {
      source.stop();
      await rm(dir, { recursive: true, force: true });
      await rm(outside, { recursive: true, force: true });
    }
  });
});

describe('ManifestSource with a state folder', () => {
  let dir: string;
  let stateDir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'zk-src-'));
    stateDir = await mkdtemp(path.join(tmpdir(), 'zk-src-state-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
    await rm(stateDir, { recursive: true, force: true });
  });

  /** One `serve` lifetime: a fresh store and source over the same folder and state folder. */
  const run = async () => {
    const state = await StateStore.open(stateDir);
    const store = new MemoryStore();
    const source = new ManifestSource({ dir, store, state });
    await source.reload();
    return { state, store, source };
  };
  const value = (store: MemoryStore, name: string) =>
    (store.get('DNSRecordSet', `dns/${name}`) as DNSRecordSet | undefined)?.spec.records.join();

  test('kept versions, creation times and immutable fields survive a restart; what left while stopped is gone', async () => {
    await writeFile(path.join(dir, 'zone.yaml'), zone('z', 'example.com'));
    await writeFile(path.join(dir, 'a.yaml'), `${record('a', '192.0.2.1')}---\n${record('b', '192.0.2.2')}`);
    await writeFile(path.join(dir, 'c.yaml'), record('c', '192.0.2.3'));
    await writeFile(path.join(dir, 'd.yaml'), record('d', '192.0.2.4'));
    const first = await run();
    const created = first.store.get('DNSRecordSet', 'dns/a')!.metadata.creationTimestamp;
    // a: a bad value; b: a schema error; the zone: another domain; d: a YAML error. Then a restart.
    await writeFile(
      path.join(dir, 'a.yaml'),
      `${record('a', '192.0.2.999')}---\n${record('b', '192.0.2.2').replace('type: A', 'type: A\n  ttl: 0')}`,
    );
    await writeFile(path.join(dir, 'zone.yaml'), zone('z', 'example.org'));
    await writeFile(path.join(dir, 'd.yaml'), 'kind: [broken\n');
    await first.source.reload();
    assert.deepEqual([...first.source.keptObjects().keys()].sort(), [
      'DNSRecordSet/dns/a',
      'DNSRecordSet/dns/b',
      'DNSRecordSet/dns/d',
      'DNSZone/dns/z',
    ]);
    await first.state.close();
    // While stopped, c.yaml is removed.
    await rm(path.join(dir, 'c.yaml'));

    const second = await run();
    assert.equal(value(second.store, 'a'), '192.0.2.1', 'kept value');
    assert.equal(
      (second.store.get('DNSRecordSet', 'dns/b') as DNSRecordSet).spec.ttl,
      undefined,
      'kept schema',
    );
    assert.equal(value(second.store, 'd'), '192.0.2.4', 'kept through a YAML error');
    assert.equal(value(second.store, 'c'), undefined, 'removed while stopped');
    assert.equal((second.store.get('DNSZone', 'dns/z') as DNSZone).spec.domainName, 'example.com');
    assert.equal(second.store.get('DNSRecordSet', 'dns/a')!.metadata.creationTimestamp, created);
    const codes = second.source
      .problems()
      .map((p) => p.code)
      .sort();
    assert.deepEqual(codes, ['IMMUTABLE', 'INVALID_RDATA', 'KEPT_PREVIOUS', 'TOO_SMALL', 'YAML_INVALID']);
    assert.equal(
      second.source.present(second.store.get('DNSZone', 'dns/z')!).status?.conditions?.[0]?.reason,
      'Invalid',
    );
    await second.state.close();

    // Fixed while stopped: the new versions are taken, and the state forgets c for good.
    await writeFile(
      path.join(dir, 'a.yaml'),
      `${record('a', '192.0.2.11')}---\n${record('b', '192.0.2.12')}`,
    );
    await writeFile(path.join(dir, 'zone.yaml'), zone('z', 'example.com'));
    const third = await run();
    assert.equal(value(third.store, 'a'), '192.0.2.11');
    assert.equal(third.source.keptObjects().size, 1, 'only d, still broken');
    assert.equal(third.state.object('DNSRecordSet/dns/c'), undefined);
    await third.state.close();
  });
  test('generations go on across restarts: the same version keeps its generation, a changed one is the next', async () => {
    await writeFile(path.join(dir, 'a.yaml'), `${record('a', '192.0.2.1')}---\n${record('b', '192.0.2.2')}`);
    const first = await run();
    await writeFile(path.join(dir, 'a.yaml'), `${record('a', '192.0.2.11')}---\n${record('b', '192.0.2.2')}`);
    await first.source.reload();
    await writeFile(path.join(dir, 'a.yaml'), `${record('a', '192.0.2.21')}---\n${record('b', '192.0.2.2')}`);
    await first.source.reload();
    const generation = (s: MemoryStore, name: string) =>
      s.get('DNSRecordSet', `dns/${name}`)?.metadata.generation;
    assert.equal(generation(first.store, 'a'), 3);
    assert.equal(generation(first.store, 'b'), 1);
    await first.state.close();

    // Restarted unchanged: generation 3 (before: 1, so observedGeneration 3 of a remembered condition
    // would have been ahead of the object).
    const second = await run();
    assert.equal(generation(second.store, 'a'), 3);
    assert.equal(generation(second.store, 'b'), 1);
    await second.state.close();

    // Changed while stopped: the next generation.
    await writeFile(path.join(dir, 'a.yaml'), `${record('a', '192.0.2.31')}---\n${record('b', '192.0.2.2')}`);
    const third = await run();
    assert.equal(generation(third.store, 'a'), 4);
    await third.state.close();
  });

  test('a first start as serve runs it (compactions held): a crash after the first answer, before the release wrote the objects, restarts as a first start; once written, versions are kept', async () => {
    await writeFile(path.join(dir, 'zone.yaml'), zone('z', 'example.com'));
    await writeFile(path.join(dir, 'a.yaml'), `${record('a', '192.0.2.1')}---\n${record('b', '192.0.2.2')}`);
    const state = await StateStore.open(stateDir);
    const release = state.holdCompaction();
    const store = new MemoryStore();
    const source = new ManifestSource({ dir, store, state });
    await source.reload();
    // The first answer: the zone's serial is saved before it is served (ADR 0014).
    await state.set('example.com.', { serial: 7, hash: 'h' });
    const created = store.get('DNSRecordSet', 'dns/a')!.metadata.creationTimestamp;

    /** A restart from the state folder as a crash leaves it now, over the manifests as they are then. */
    const restartFromCrash = async (check: (s: StateStore, st: MemoryStore, src: ManifestSource) => void) => {
      const crashed = `${stateDir}-crashed`;
      await cp(stateDir, crashed, { recursive: true });
      try {
        const s = await StateStore.open(crashed);
        const st = new MemoryStore();
        const src = new ManifestSource({ dir, store: st, state: s });
        await src.reload();
        check(s, st, src);
        await s.close();
      } finally {
        await rm(crashed, { recursive: true, force: true });
      }
    };
    // Before the release: the serial is there, the objects are read from the folder again.
    await restartFromCrash((s, st) => {
      assert.deepEqual(s.get('example.com.'), { serial: 7, hash: 'h' });
      assert.equal(value(st, 'a'), '192.0.2.1');
      assert.equal(value(st, 'b'), '192.0.2.2');
      assert.equal((st.get('DNSZone', 'dns/z') as DNSZone).spec.domainName, 'example.com');
    });

    // Once released (every zone programmed), the snapshot holds every object: a crash after it keeps
    // the last valid version of a manifest broken meanwhile, and the creation times.
    release();
    await state.compactionsSettled();
    await writeFile(
      path.join(dir, 'a.yaml'),
      `${record('a', '192.0.2.999')}---\n${record('b', '192.0.2.2')}`,
    );
    await restartFromCrash((s, st, src) => {
      assert.deepEqual(s.get('example.com.'), { serial: 7, hash: 'h' });
      assert.equal(value(st, 'a'), '192.0.2.1', 'kept value');
      assert.ok(src.keptObjects().has('DNSRecordSet/dns/a'));
      assert.equal(st.get('DNSRecordSet', 'dns/a')!.metadata.creationTimestamp, created);
    });
    source.stop();
    await state.close();
  });

  test('objects only invalid manifests name are listed as refused, with why, until one is valid', async () => {
    await writeFile(path.join(dir, 'zone.yaml'), zone('z', 'z3..example'));
    const { source, store, state } = await run();
    assert.equal(store.get('DNSZone', 'dns/z'), undefined);
    const why = source.refusedObjects().get('DNSZone/dns/z');
    assert.equal(why?.[0]?.path, 'spec.domainName', JSON.stringify(why));
    assert.match(refusalText(why ?? []), /^spec\.domainName: .*empty label/);
    // Kept versions are not refused: they are served.
    await writeFile(path.join(dir, 'a.yaml'), record('a', '192.0.2.1'));
    await source.reload();
    await writeFile(path.join(dir, 'a.yaml'), record('a', '192.0.2.999'));
    await source.reload();
    assert.ok(source.keptObjects().has('DNSRecordSet/dns/a'));
    assert.equal(source.refusedObjects().has('DNSRecordSet/dns/a'), false);
    await writeFile(path.join(dir, 'zone.yaml'), zone('z', 'example.com'));
    await source.reload();
    assert.equal(source.refusedObjects().size, 0);
    await state.close();
  });
});

describe('ManifestSource starting without its folder', () => {
  test('what the state remembers is served, kept, until the folder can be read', async () => {
    const parent = await mkdtemp(path.join(tmpdir(), 'zk-src-'));
    const dir = path.join(parent, 'manifests');
    const stateDir = path.join(parent, 'state');
    try {
      await mkdir(dir);
      await writeFile(path.join(dir, 'a.yaml'), record('a', '192.0.2.1'));
      const first = await StateStore.open(stateDir);
      await new ManifestSource({ dir, store: new MemoryStore(), state: first }).reload();
      await first.close();
      await rename(dir, `${dir}.away`);
      const store = new MemoryStore();
      const state = await StateStore.open(stateDir);
      const source = new ManifestSource({ dir, store, state });
      await source.reload();
      assert.equal((store.get('DNSRecordSet', 'dns/a') as DNSRecordSet).spec.records[0], '192.0.2.1');
      assert.equal(source.folderProblem()?.code, 'FOLDER_UNREADABLE');
      assert.equal(source.keptObjects().get('DNSRecordSet/dns/a')?.[0]?.code, 'FOLDER_UNREADABLE');
      await rename(`${dir}.away`, dir);
      await writeFile(path.join(dir, 'a.yaml'), record('a', '192.0.2.2'));
      await source.reload();
      assert.equal((store.get('DNSRecordSet', 'dns/a') as DNSRecordSet).spec.records[0], '192.0.2.2');
      assert.equal(source.keptObjects().size, 0);
      await state.close();
    } finally {
      await rm(parent, { recursive: true, force: true });
    }
  });
});

describe('ManifestSource: links, limits, a missing folder, logging', () => {
  let dir: string;
  let store: MemoryStore;
  let source: ManifestSource;
  let logged: string[];
  const open = async (options: Partial<ConstructorParameters<typeof ManifestSource>[0]> = {}) => {
    store = new MemoryStore();
    logged = [];
    source = new ManifestSource({
      dir,
      store,
      state: await StateStore.open(undefined),
      log: (level, message) => logged.push(`${level} ${message}`),
      ...options,
    });
  };
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'zk-src-'));
    await open();
  });
  afterEach(async () => {
    source.stop();
    await rm(dir, { recursive: true, force: true });
  });
  const value = (name: string) =>
    (store.get('DNSRecordSet', `dns/${name}`) as DNSRecordSet | undefined)?.spec.records.join();

  /** A ConfigMap volume as the kubelet writes it, and its atomic update (AtomicWriter). */
  const configMap = async (root: string, version: number, files: Record<string, string>) => {
    const timestamped = `..2026_01_0${version}_00_00_00.00000000${version}`;
    await mkdir(path.join(root, timestamped));
    for (const [name, text] of Object.entries(files))
      await writeFile(path.join(root, timestamped, name), text);
    await symlink(timestamped, path.join(root, '..data_tmp'));
    await rename(path.join(root, '..data_tmp'), path.join(root, '..data'));
    for (const name of Object.keys(files)) {
      await symlink(path.join('..data', name), path.join(root, name)).catch((e: NodeJS.ErrnoException) => {
        if (e.code !== 'EEXIST') throw e;
      });
    }
    for (const entry of await readdir(root)) {
      if (entry.startsWith('..2026') && entry !== timestamped)
        await rm(path.join(root, entry), { recursive: true });
    }
  };

  test('a ConfigMap volume: the links are followed, and a ..data swap reloads', async () => {
    await configMap(dir, 1, { 'zone.yaml': record('a', '192.0.2.1') });
    await source.reload();
    assert.equal(value('a'), '192.0.2.1');
    assert.deepEqual(source.problems(), []);
    await configMap(dir, 2, { 'zone.yaml': record('a', '192.0.2.2') });
    await source.reload();
    assert.equal(value('a'), '192.0.2.2');
  });

  test('a ConfigMap update is seen without a rescan (the watcher sees the ..data swap)', async () => {
    await open({ rescanMs: 3_600_000 });
    await configMap(dir, 1, { 'zone.yaml': record('a', '192.0.2.1') });
    await source.start();
    assert.equal(value('a'), '192.0.2.1');
    await configMap(dir, 2, { 'zone.yaml': record('a', '192.0.2.2') });
    for (let i = 0; i < 300 && value('a') !== '192.0.2.2'; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(value('a'), '192.0.2.2');
  });

  test('linked folders are followed once: a link back to a parent is no loop, a second way in no duplicate', async () => {
    await mkdir(path.join(dir, 'sub'));
    await writeFile(path.join(dir, 'sub', 'a.yaml'), record('a', '192.0.2.1'));
    await symlink('..', path.join(dir, 'sub', 'up'));
    await symlink('sub', path.join(dir, 'again'));
    await symlink('sub/a.yaml', path.join(dir, 'b.yaml'));
    await symlink('missing.yaml', path.join(dir, 'broken.yaml'));
    await source.reload();
    assert.equal(value('a'), '192.0.2.1');
    assert.deepEqual(
      source.problems().map((p) => p.code),
      ['BROKEN_LINK'],
      JSON.stringify(source.problems()),
    );
  });

  test('a file above the size limit is not read: a clear problem, and what it defined is kept', async () => {
    const file = path.join(dir, 'big.yaml');
    await writeFile(file, record('a', '192.0.2.1'));
    await open({ maxFileBytes: 1000 });
    await source.reload();
    await writeFile(file, `${record('a', '192.0.2.2')}# ${'x'.repeat(2000)}\n`);
    await source.reload();
    assert.equal(value('a'), '192.0.2.1');
    const problem = source.problems().find((p) => p.code === 'FILE_TOO_LARGE');
    assert.equal(problem?.file, file);
    assert.match(
      problem?.message ?? '',
      /^the file is \d+ bytes, above the limit of 1000 bytes per manifest file; split it into smaller files, or raise the limit with --max-manifest-bytes$/,
    );
    assert.equal(source.keptObjects().get('DNSRecordSet/dns/a')?.[0]?.code, 'FILE_TOO_LARGE');
  });

  test('a missing folder is a problem (serve is not ready), keeps everything, and recovers', async () => {
    await writeFile(path.join(dir, 'a.yaml'), record('a', '192.0.2.1'));
    await source.reload();
    assert.equal(source.folderProblem(), undefined);
    const moved = `${dir}-moved`;
    await rename(dir, moved);
    try {
      await source.reload();
      assert.equal(source.folderProblem()?.code, 'FOLDER_UNREADABLE');
      assert.match(source.folderProblem()?.message ?? '', /cannot read the manifests folder: ENOENT/);
      assert.deepEqual(source.problems(), [source.folderProblem()]);
      assert.equal(value('a'), '192.0.2.1', 'nothing deleted');
    } finally {
      await rename(moved, dir);
    }
    await source.reload();
    assert.equal(source.folderProblem(), undefined);
    assert.deepEqual(source.problems(), []);
  });

  test('a folder with no resources says so', async () => {
    await writeFile(path.join(dir, 'other.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n');
    await open();
    await source.reload();
    assert.ok(
      source.problems().some((p) => p.code === 'KIND'),
      'a foreign kind is reported',
    );
    await rm(path.join(dir, 'other.yaml'));
    await source.reload();
    assert.deepEqual(
      source.problems().map((p) => p.code),
      ['NO_RESOURCES'],
    );
    assert.match(
      source.problems()[0]!.message,
      /no DNSZoneClass, DNSZone or DNSRecordSet found in 0 manifest file/,
    );
  });

  test('problems are logged when they appear and when they go, not at every reload', async () => {
    const file = path.join(dir, 'a.yaml');
    await writeFile(file, record('a', '192.0.2.999'));
    await source.reload();
    await source.reload();
    await source.reload();
    assert.equal(
      logged.filter((l) => l.startsWith('warn ') && l.includes('192.0.2.999')).length,
      1,
      logged.join('\n'),
    );
    await writeFile(file, record('a', '192.0.2.9'));
    await source.reload();
    await source.reload();
    assert.equal(
      logged.filter((l) => l.startsWith('info resolved: ') && l.includes('192.0.2.999')).length,
      1,
    );
  });
});

/**
 * Files caught mid-write. A writer that writes in place (`fs.writeFile`, `echo > file`, many editors)
 * truncates the file, then writes it: a reload in between reads it empty, or partial.
 */
describe('ManifestSource: files caught mid-write', () => {
  let dir: string;
  let store: MemoryStore;
  const sources: ManifestSource[] = [];

  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'zk-src-'));
    store = new MemoryStore();
  });
  afterEach(async () => {
    for (const s of sources.splice(0)) s.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const sourceWith = async (options: Partial<ConstructorParameters<typeof ManifestSource>[0]>) => {
    const s = new ManifestSource({ dir, store, state: await StateStore.open(undefined), ...options });
    sources.push(s);
    return s;
  };
  const records = () =>
    (store.list('DNSRecordSet') as DNSRecordSet[])
      .map((r) => `${r.metadata.name}=${r.spec.records.join()}`)
      .sort();
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  test('a file read empty between two writes deletes nothing, and an invalid next version keeps the last valid one', async () => {
    // A settle delay no test run reaches: the empty read is never applied here.
    const source = await sourceWith({ settleMs: 3_600_000 });
    const file = path.join(dir, 'a.yaml');
    await writeFile(file, record('a', '192.0.2.80'));
    await source.reload();
    assert.deepEqual(records(), ['a=192.0.2.80']);
    // Truncated by the next write, and read before its bytes arrive.
    await writeFile(file, '');
    await source.reload();
    assert.deepEqual(records(), ['a=192.0.2.80'], 'nothing deleted by the empty read');
    assert.deepEqual(source.problems(), []);
    // The write completes with an invalid version: the last valid one keeps serving.
    await writeFile(file, record('a', '192.0.2.80', 'BOGUS'));
    await source.reload();
    assert.deepEqual(records(), ['a=192.0.2.80']);
    assert.equal(source.keptObjects().get('DNSRecordSet/dns/a')?.[0]?.path, 'spec.type');
    // And a valid one applies at once.
    await writeFile(file, record('a', '192.0.2.81'));
    await source.reload();
    assert.deepEqual(records(), ['a=192.0.2.81']);
  });

  test('a file emptied on purpose deletes its objects once it has stayed empty for settleMs', async () => {
    const settleMs = 20;
    const source = await sourceWith({ settleMs });
    const file = path.join(dir, 'a.yaml');
    await writeFile(file, `${record('a', '192.0.2.1')}---\n${record('b', '192.0.2.2')}`);
    await source.reload();
    await writeFile(file, '');
    await source.reload();
    assert.deepEqual(records(), ['a=192.0.2.1', 'b=192.0.2.2'], 'not yet');
    await sleep(settleMs * 3);
    await source.reload();
    assert.deepEqual(records(), []);
    assert.equal(source.problems()[0]?.code, 'NO_RESOURCES');
  });

  test('while watching, the settle reload comes by itself', async () => {
    const source = await sourceWith({ settleMs: 20, debounceMs: 10 });
    const file = path.join(dir, 'a.yaml');
    await writeFile(file, record('a', '192.0.2.1'));
    await source.start();
    assert.deepEqual(records(), ['a=192.0.2.1']);
    await writeFile(file, '');
    for (let i = 0; i < 500 && records().length > 0; i++) await sleep(10);
    assert.deepEqual(records(), []);
  });

  test('a file that changed while it was read is read again, not applied', async () => {
    const inner = new LocalManifestParser();
    const file = path.join(dir, 'a.yaml');
    const full = `${record('a', '192.0.2.1')}---\n${record('b', '192.0.2.3')}`;
    let completeWhileRead = false;
    // The real parser, with the writer finishing its write while the file is read.
    const parser: ManifestParser = {
      parse: async (f, maxBytes) => {
        const parsed = await inner.parse(f, maxBytes);
        if (completeWhileRead && f === file) {
          completeWhileRead = false;
          await writeFile(file, full);
        }
        return parsed;
      },
      locate: (token, requests) => inner.locate(token, requests),
      release: (token) => inner.release(token),
      close: () => inner.close(),
    };
    const source = await sourceWith({ parser, settleMs: 3_600_000 });
    await writeFile(file, `${record('a', '192.0.2.1')}---\n${record('b', '192.0.2.2')}`);
    await source.reload();
    // Cut at a document boundary: valid YAML in which b looks removed.
    await writeFile(file, record('a', '192.0.2.1'));
    completeWhileRead = true;
    await source.reload();
    assert.deepEqual(records(), ['a=192.0.2.1', 'b=192.0.2.2'], 'the partial read is not applied');
    await source.reload();
    assert.deepEqual(records(), ['a=192.0.2.1', 'b=192.0.2.3']);
  });

  test('on the first load, what a file read empty defined before the restart is served until it settles', async () => {
    const stateDir = await mkdtemp(path.join(tmpdir(), 'zk-state-'));
    try {
      const file = path.join(dir, 'a.yaml');
      await writeFile(file, record('a', '192.0.2.1'));
      const first = await StateStore.open(stateDir);
      await new ManifestSource({ dir, store: new MemoryStore(), state: first }).reload();
      await first.close();
      await writeFile(file, '');
      const state = await StateStore.open(stateDir);
      const settleMs = 20;
      const source = await sourceWith({ state, settleMs });
      await source.reload();
      assert.deepEqual(records(), ['a=192.0.2.1']);
      assert.equal(source.keptObjects().size, 0);
      await sleep(settleMs * 3);
      await source.reload();
      assert.deepEqual(records(), []);
      await state.close();
    } finally {
      await rm(stateDir, { recursive: true, force: true });
    }
  });

  test('the folder change safety still holds the removal of a file emptied on purpose', async () => {
    const settleMs = 20;
    const source = await sourceWith({
      settleMs,
      folderHold: new FolderHold({ windowMs: 0, confirmations: () => [], confirmHint: () => 'by hand' }),
    });
    const file = path.join(dir, 'a.yaml');
    await writeFile(file, `${zone('z', 'example.com')}---\n${record('a', '192.0.2.1')}`);
    await source.reload();
    await writeFile(file, '');
    await source.reload();
    assert.equal(source.heldRemovals.size, 0, 'nothing decided while the file settles');
    await sleep(settleMs * 3);
    await source.reload();
    assert.deepEqual(records(), ['a=192.0.2.1'], 'the removal is held');
    assert.ok(source.heldRemovals.has('dns/z'));
  });

  test('settleMs 0 applies every read as it is (one-shot reads)', async () => {
    const source = await sourceWith({ settleMs: 0 });
    const file = path.join(dir, 'a.yaml');
    await writeFile(file, record('a', '192.0.2.1'));
    await source.reload();
    await writeFile(file, '');
    await source.reload();
    assert.deepEqual(records(), []);
  });
});
