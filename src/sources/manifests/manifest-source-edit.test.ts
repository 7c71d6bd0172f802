import assert from 'node:assert/strict';
import { link, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import type { DNSRecordSet, Resource } from '../../api/index.ts';
import { MemoryStore } from '../../control/memory-store.ts';
import { FolderHold } from './folder-hold.ts';
import { ManifestSource } from './manifest-source.ts';
import { StateStore } from './state-file.ts';

const record = (name: string, address: string, labels = '') =>
  `apiVersion: dns.zonekeeper.dev/v1alpha1\nkind: DNSRecordSet\nmetadata: {name: ${name}, namespace: dns${labels}}\nspec:\n  zoneRef: {name: z}\n  name: ${name}\n  type: A\n  records: ["${address}"]\n`;

const zone = `apiVersion: dns.zonekeeper.dev/v1alpha1\nkind: DNSZone\nmetadata: {name: z, namespace: dns}\nspec:\n  domainName: example.com\n  className: builtin\n`;

/** A file of the zone and `n` record sets (more than a packed file's fewest), `changed` overriding some. */
const file = (n: number, changed: Record<number, string> = {}) =>
  [zone, ...Array.from({ length: n }, (_, i) => changed[i] ?? record(`r${i}`, '192.0.2.1'))].join('---\n');

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('ManifestSource: an edit of one object in a file of many', () => {
  let dir: string;
  let applied: string[];
  let put: string[];
  let store: MemoryStore;
  let state: StateStore;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'zk-edit-'));
    applied = [];
    put = [];
    store = new (class extends MemoryStore {
      override apply(desired: Resource, created?: string, generation?: number) {
        applied.push(desired.metadata.name);
        return super.apply(desired, created, generation);
      }
    })();
    state = await StateStore.open(undefined);
    const putObject = state.putObject.bind(state);
    state.putObject = (id, object, tag) => {
      put.push(id);
      putObject(id, object, tag);
    };
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const spec = (name: string) => (store.get('DNSRecordSet', `dns/${name}`) as DNSRecordSet).spec;

  test("applies only the objects whose version changed; the file's others keep their versions and the state's", async () => {
    const source = new ManifestSource({ dir, store, state });
    await writeFile(path.join(dir, 'a.yaml'), file(50));
    await source.reload();
    const r7 = store.get('DNSRecordSet', 'dns/r7')!;
    applied.length = 0;
    put.length = 0;
    await writeFile(path.join(dir, 'a.yaml'), file(50, { 3: record('r3', '192.0.2.9') }));
    await source.reload();
    assert.deepEqual(applied, ['r3']);
    assert.deepEqual(put, ['DNSRecordSet/dns/r3']);
    assert.deepEqual(spec('r3').records, ['192.0.2.9']);
    assert.equal(store.get('DNSRecordSet', 'dns/r3')!.metadata.generation, 2);
    assert.equal(store.get('DNSRecordSet', 'dns/r7'), r7, 'an unchanged object is the same object');
    assert.equal(
      state.object('DNSRecordSet/dns/r3')!.resource!.spec,
      spec('r3'),
      'the state shares the spec',
    );
    assert.equal(source.definitionOf('DNSRecordSet/dns/r7')?.document, 9);

    // A change of metadata alone is a change of the version: applied, and the state holds it.
    applied.length = 0;
    await writeFile(
      path.join(dir, 'a.yaml'),
      file(50, { 3: record('r3', '192.0.2.9'), 4: record('r4', '192.0.2.1', ', labels: {team: a}') }),
    );
    await source.reload();
    assert.deepEqual(applied, ['r4']);
    assert.deepEqual(store.get('DNSRecordSet', 'dns/r4')!.metadata.labels, { team: 'a' });
    assert.deepEqual(state.object('DNSRecordSet/dns/r4')!.resource!.metadata.labels, { team: 'a' });

    // An object moved to another file, and back, is applied each time (its file is the state's).
    applied.length = 0;
    await writeFile(path.join(dir, 'a.yaml'), file(50, { 5: '' }).replace(/---\n---\n/, '---\n'));
    await writeFile(path.join(dir, 'b.yaml'), record('r5', '192.0.2.1'));
    await source.reload();
    assert.equal(source.definitionOf('DNSRecordSet/dns/r5')?.file, path.join(dir, 'b.yaml'));
    assert.equal(state.object('DNSRecordSet/dns/r5')!.file, 'b.yaml');
    await writeFile(path.join(dir, 'a.yaml'), file(50, { 3: record('r3', '192.0.2.9') }));
    await rm(path.join(dir, 'b.yaml'));
    await source.reload();
    assert.equal(state.object('DNSRecordSet/dns/r5')!.file, 'a.yaml');
    assert.equal(store.get('DNSRecordSet', 'dns/r4')!.metadata.labels, undefined);
    assert.equal(store.count('DNSRecordSet'), 50);
  });

  test('a removal the change safety holds, then the same file back: every object is defined by it again', async () => {
    const source = new ManifestSource({
      dir,
      store,
      state,
      folderHold: new FolderHold({ windowMs: 0, confirmations: () => [], confirmHint: () => 'by hand' }),
    });
    await writeFile(path.join(dir, 'a.yaml'), file(50));
    await source.reload();
    await writeFile(path.join(dir, 'a.yaml'), file(1));
    await source.reload();
    assert.ok(source.heldRemovals.has('dns/z'), 'the removal of 49 of 50 is held');
    assert.equal(store.count('DNSRecordSet'), 50);
    applied.length = 0;
    await writeFile(path.join(dir, 'a.yaml'), file(50));
    await source.reload();
    assert.equal(source.heldRemovals.size, 0, 'nothing is held any more');
    assert.deepEqual(applied, [], 'every version was the one served');
    assert.equal(source.definitionOf('DNSRecordSet/dns/r20')?.file, path.join(dir, 'a.yaml'));
    // Removed for real afterwards: the objects go (they are defined by the file, not held).
    await writeFile(path.join(dir, 'a.yaml'), file(48));
    await source.reload();
    assert.equal(store.count('DNSRecordSet'), 48);
  });
});

describe('ManifestSource watching: the files the watcher names', () => {
  let dir: string;
  let store: MemoryStore;
  let source: ManifestSource;
  let listings: number;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'zk-named-'));
    store = new MemoryStore();
    // No rescan during the test: what is seen is what the watcher's events bring.
    source = new ManifestSource({
      dir,
      store,
      state: await StateStore.open(undefined),
      rescanMs: 3_600_000,
      debounceMs: 10,
    });
    listings = 0;
    const inside = source as unknown as { list: () => Promise<unknown> };
    const list = inside.list.bind(source);
    inside.list = () => {
      listings++;
      return list();
    };
  });
  afterEach(async () => {
    source.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const value = (name: string) =>
    (store.get('DNSRecordSet', `dns/${name}`) as DNSRecordSet | undefined)?.spec.records[0];
  const until = async (done: () => boolean, what: string) => {
    for (let i = 0; i < 300 && !done(); i++) await wait(10);
    assert.ok(done(), what);
  };

  test('an edit of a file read before reads it alone; new, removed and moved files still list the folder', async () => {
    await writeFile(path.join(dir, 'a.yaml'), `${zone}---\n${record('a', '192.0.2.1')}`);
    await writeFile(path.join(dir, 'b.yaml'), record('b', '192.0.2.1'));
    await source.start();
    assert.equal(listings, 1);

    await writeFile(path.join(dir, 'b.yaml'), record('b', '192.0.2.2'));
    await until(() => value('b') === '192.0.2.2', 'the edit was seen');
    assert.equal(listings, 1, 'the folder was not listed for an edit of a file read before');

    // A new file: the folder is listed.
    await writeFile(path.join(dir, 'c.yaml'), record('c', '192.0.2.3'));
    await until(() => value('c') === '192.0.2.3', 'the new file was seen');
    assert.ok(listings >= 2);

    // A removed file: its objects go.
    await rm(path.join(dir, 'b.yaml'));
    await until(() => value('b') === undefined, 'the removal was seen');

    // A new folder with a file, then an edit of that file (watched from then on).
    await mkdir(path.join(dir, 'sub'));
    await writeFile(path.join(dir, 'sub', 'd.yaml'), record('d', '192.0.2.4'));
    await until(() => value('d') === '192.0.2.4', 'the file of the new folder was seen');
    await wait(50);
    const before = listings;
    await writeFile(path.join(dir, 'sub', 'd.yaml'), record('d', '192.0.2.5'));
    await until(() => value('d') === '192.0.2.5', 'the edit in the new folder was seen');
    assert.equal(listings, before);

    // An edit of a file replaced by a folder of the same name lists the folder (it is no file).
    await rm(path.join(dir, 'c.yaml'));
    await mkdir(path.join(dir, 'c.yaml'));
    await until(() => value('c') === undefined, 'the file replaced by a folder was seen gone');
  });

  test('an edit through a hard link reads every file: the same file under an earlier name, the winner, changes too', async () => {
    await writeFile(path.join(dir, 'a.yaml'), record('w', '192.0.2.1'));
    // The same file again, later in path order; and the same object in another file after both.
    await link(path.join(dir, 'a.yaml'), path.join(dir, 'live.yaml'));
    await writeFile(path.join(dir, 'b.yaml'), record('w', '192.0.2.99'));
    await writeFile(path.join(dir, 'z.yaml'), zone);
    await source.start();
    assert.equal(value('w'), '192.0.2.1');
    // Written through the later name: the watcher names live.yaml only, yet a.yaml (the first in
    // path order, the winner) holds the new version too.
    await writeFile(path.join(dir, 'live.yaml'), record('w', '192.0.2.2'));
    await until(() => value('w') === '192.0.2.2', 'the earlier name of the same file was read again');
    assert.ok(listings >= 2, 'the folder was listed');
  });
});
