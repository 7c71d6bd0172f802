import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import type { DNSRecordSet } from '../../api/index.ts';
import { MemoryStore } from '../../control/memory-store.ts';
import { ManifestSource } from './manifest-source.ts';
import { StateStore } from './state-file.ts';

const record = (name: string, address: string, meta = '') =>
  `apiVersion: dns.zonekeeper.dev/v1alpha1\nkind: DNSRecordSet\nmetadata: {name: ${name}, namespace: dns${meta}}\nspec:\n  zoneRef: {name: z}\n  name: ${name}\n  type: A\n  records: ["${address}"]\n`;

describe('folder mode: two files defining one object, across restarts', () => {
  let dir: string;
  let stateDir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'zk-rv-'));
    stateDir = await mkdtemp(path.join(tmpdir(), 'zk-rv-state-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
    await rm(stateDir, { recursive: true, force: true });
  });
  const run = async () => {
    const state = await StateStore.open(stateDir, { compactMinBytes: 1 });
    const store = new MemoryStore();
    const source = new ManifestSource({ dir, store, state });
    await source.reload();
    return { state, store, source };
  };
  const x = (store: MemoryStore) => store.get('DNSRecordSet', 'dns/x') as DNSRecordSet | undefined;

  for (const meta of ['', ', labels: {team: a}, annotations: {note: "n"}']) {
    test(`winner made invalid, restart, winner removed: the other file's own version${meta ? ' (labelled)' : ''}`, async () => {
      await writeFile(path.join(dir, 'a.yaml'), record('x', '192.0.2.1', meta));
      await writeFile(path.join(dir, 'b.yaml'), record('x', '192.0.2.2'));
      const first = await run();
      assert.equal(x(first.store)?.spec.records.join(), '192.0.2.1');
      const labels = x(first.store)?.metadata.labels;
      await writeFile(path.join(dir, 'a.yaml'), record('x', '192.0.2.999', meta));
      await first.source.reload();
      assert.equal(x(first.store)?.spec.records.join(), '192.0.2.1');
      await first.state.close();
      // While stopped b.yaml changes too.
      await writeFile(path.join(dir, 'b.yaml'), record('x', '192.0.2.3'));
      const second = await run();
      assert.equal(x(second.store)?.spec.records.join(), '192.0.2.1', 'kept version of a.yaml');
      assert.deepEqual(x(second.store)?.metadata.labels, labels);
      assert.equal(x(second.store)?.metadata.generation, x(first.store)?.metadata.generation);
      await rm(path.join(dir, 'a.yaml'));
      await second.source.reload();
      assert.equal(x(second.store)?.spec.records.join(), '192.0.2.3', "b.yaml's own version");
      await second.state.close();
      const third = await run();
      assert.equal(x(third.store)?.spec.records.join(), '192.0.2.3');
      assert.equal(third.state.object('DNSRecordSet/dns/x')?.file, 'b.yaml');
      // a.yaml comes back, earlier in path order: it wins; b.yaml then invalid; a.yaml removed.
      await writeFile(path.join(dir, 'a.yaml'), record('x', '192.0.2.4', meta));
      await third.source.reload();
      assert.equal(x(third.store)?.spec.records.join(), '192.0.2.4');
      await writeFile(path.join(dir, 'b.yaml'), record('x', '192.0.2.777'));
      await third.source.reload();
      await rm(path.join(dir, 'a.yaml'));
      await third.source.reload();
      // b.yaml has nothing valid: its last valid version (192.0.2.3) is the one to serve.
      assert.equal(x(third.store)?.spec.records.join(), '192.0.2.3');
      await third.state.close();
      const fourth = await run();
      assert.equal(x(fourth.store)?.spec.records.join(), '192.0.2.3');
      await fourth.state.close();
    });
  }

  test('which files define each object is rebuilt after a restart: the duplicate is reported, removing the first hands over, a file removed while stopped takes its object', async () => {
    await writeFile(path.join(dir, 'a.yaml'), record('x', '192.0.2.1'));
    await writeFile(path.join(dir, 'b.yaml'), record('x', '192.0.2.2'));
    await writeFile(path.join(dir, 'c.yaml'), record('y', '192.0.2.3'));
    const first = await run();
    assert.equal(x(first.store)?.spec.records.join(), '192.0.2.1');
    assert.deepEqual(
      first.source.problems().map((p) => [p.code, path.basename(p.file)]),
      [['DUPLICATE', 'b.yaml']],
    );
    await first.state.close();
    const second = await run();
    assert.equal(x(second.store)?.spec.records.join(), '192.0.2.1');
    assert.deepEqual(
      second.source.problems().map((p) => [p.code, path.basename(p.file)]),
      [['DUPLICATE', 'b.yaml']],
      'both files known again as defining x',
    );
    await rm(path.join(dir, 'a.yaml'));
    await second.source.reload();
    assert.equal(x(second.store)?.spec.records.join(), '192.0.2.2', 'handed over to b.yaml');
    assert.equal(second.state.object('DNSRecordSet/dns/x')?.file, 'b.yaml');
    assert.deepEqual(second.source.problems(), []);
    await second.state.close();
    await rm(path.join(dir, 'c.yaml'));
    const third = await run();
    assert.equal(x(third.store)?.spec.records.join(), '192.0.2.2');
    assert.equal(third.store.get('DNSRecordSet', 'dns/y'), undefined, 'removed while stopped');
    assert.equal(third.state.object('DNSRecordSet/dns/y'), undefined);
    await rm(path.join(dir, 'b.yaml'));
    await third.source.reload();
    assert.equal(x(third.store), undefined, 'no file defines x any more');
    assert.equal(third.state.object('DNSRecordSet/dns/x'), undefined);
    await third.state.close();
    const fourth = await run();
    assert.equal(x(fourth.store), undefined);
    assert.deepEqual([...fourth.state.objectIds()], []);
    await fourth.state.close();
  });

  test('a file removed while another still defines the object, then restart with the survivor broken', async () => {
    await writeFile(path.join(dir, 'a.yaml'), record('x', '192.0.2.1'));
    const first = await run();
    await writeFile(path.join(dir, 'b.yaml'), record('x', '192.0.2.2'));
    await first.source.reload();
    await rm(path.join(dir, 'a.yaml'));
    await first.source.reload();
    assert.equal(x(first.store)?.spec.records.join(), '192.0.2.2');
    await first.state.close();
    await writeFile(path.join(dir, 'b.yaml'), 'kind: [broken\n');
    const second = await run();
    assert.equal(x(second.store)?.spec.records.join(), '192.0.2.2');
    await second.state.close();
  });
});

test('a first load into an empty state gives what a first load into a state holding another object gives', async () => {
  const { FolderHold } = await import('./folder-hold.ts');
  const dir = await mkdtemp(path.join(tmpdir(), 'zk-rv-fresh-'));
  try {
    await writeFile(
      path.join(dir, 'a.yaml'),
      [record('x', '192.0.2.1'), record('y', '192.0.2.2')].join('---\n'),
    );
    await writeFile(
      path.join(dir, 'b.yaml'),
      [record('x', '192.0.2.3'), record('z', '192.0.2.4')].join('---\n'),
    );
    await writeFile(
      path.join(dir, 'c.yaml'),
      [record('w', '192.0.2.5'), record('v', '192.0.2.999')].join('---\n'),
    );
    const load = async (holdingAnother: boolean) => {
      const state = await StateStore.open(undefined);
      if (holdingAnother)
        state.putObject('DNSRecordSet/dns/gone', {
          created: '2026-01-01T00:00:00.000Z',
          file: 'gone.yaml',
          resource: {
            apiVersion: 'dns.zonekeeper.dev/v1alpha1',
            kind: 'DNSRecordSet',
            metadata: { name: 'gone', namespace: 'dns' },
            spec: { zoneRef: { name: 'z' }, name: 'gone', type: 'A', records: ['192.0.2.6'] },
          },
        });
      const store = new MemoryStore();
      const source = new ManifestSource({
        dir,
        store,
        state,
        now: () => new Date('2026-02-01T00:00:00.000Z'),
        folderHold: new FolderHold({ windowMs: 60_000, confirmations: () => [], confirmHint: () => '' }),
      });
      await source.reload();
      const loaded = {
        records: store
          .list('DNSRecordSet')
          .map((rs) => [rs.metadata.name, (rs as DNSRecordSet).spec.records]),
        problems: source.problems().map((p) => [p.code, path.basename(p.file), p.object]),
        // Which files define each object (kept in the state's entries once loaded), by name.
        state: [...state.objectIds()].map((id) => {
          const tag = state.tagOf(id) as string | Set<string> | undefined;
          const files = typeof tag === 'string' ? [tag] : [...(tag ?? [])];
          return [id, state.object(id)?.file, files.map((f) => path.basename(f)).sort()];
        }),
      };
      // Which files define each object, known after the load: removing the first file hands x over.
      await rm(path.join(dir, 'a.yaml'));
      await source.reload();
      const after = {
        x: (store.get('DNSRecordSet', 'dns/x') as DNSRecordSet | undefined)?.spec.records,
        y: store.get('DNSRecordSet', 'dns/y'),
        problems: source.problems().map((p) => [p.code, path.basename(p.file)]),
      };
      await writeFile(
        path.join(dir, 'a.yaml'),
        [record('x', '192.0.2.1'), record('y', '192.0.2.2')].join('---\n'),
      );
      return { loaded, after };
    };
    const fresh = await load(false);
    assert.deepEqual(fresh.loaded.records, [
      ['x', ['192.0.2.1']],
      ['y', ['192.0.2.2']],
      ['z', ['192.0.2.4']],
      ['w', ['192.0.2.5']],
    ]);
    assert.deepEqual(
      fresh.loaded.problems.map(([code, file]) => [code, file]),
      [
        ['INVALID_RDATA', 'c.yaml'],
        ['DUPLICATE', 'b.yaml'],
      ],
    );
    assert.deepEqual(fresh.loaded.state, [
      ['DNSRecordSet/dns/x', 'a.yaml', ['a.yaml', 'b.yaml']],
      ['DNSRecordSet/dns/y', 'a.yaml', ['a.yaml']],
      ['DNSRecordSet/dns/z', 'b.yaml', ['b.yaml']],
      ['DNSRecordSet/dns/w', 'c.yaml', ['c.yaml']],
    ]);
    assert.deepEqual(fresh.after.x, ['192.0.2.3']);
    assert.equal(fresh.after.y, undefined);
    assert.deepEqual(await load(true), fresh);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
