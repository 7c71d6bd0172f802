import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import type { DNSRecordSet } from '../../api/index.ts';
import { MemoryStore } from '../../control/memory-store.ts';
import { ManifestSource } from './manifest-source.ts';
import { StateFile } from './state-file.ts';

const record = (name: string, address: string, type = 'A') =>
  `apiVersion: dns.zonekeeper.dev/v1alpha1\nkind: DNSRecordSet\nmetadata: {name: ${name}, namespace: dns}\nspec:\n  zoneRef: {name: z}\n  name: ${name}\n  type: ${type}\n  records: ["${address}"]\n`;

describe('ManifestSource', () => {
  let dir: string;
  let store: MemoryStore;
  let source: ManifestSource;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'zk-src-'));
    store = new MemoryStore();
    source = new ManifestSource({ dir, store, state: new StateFile(undefined) });
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
});

describe('ManifestSource watching', () => {
  test('follows edits made by renaming a new file over the old one, again and again', async () => {
    const { mkdtemp, rename, rm, writeFile } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const dir = await mkdtemp(path.join(tmpdir(), 'zk-rename-'));
    const outside = await mkdtemp(path.join(tmpdir(), 'zk-rename-src-'));
    const store = new MemoryStore();
    const source = new ManifestSource({ dir, store, state: new StateFile(undefined) });
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
