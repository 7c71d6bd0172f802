import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import type { DNSRecordSet } from '../../api/index.ts';
import { MemoryStore } from '../../control/memory-store.ts';
import { LocalManifestParser, type ManifestParser } from './manifest-parser.ts';
import { ManifestSource } from './manifest-source.ts';
import { StateStore } from './state-file.ts';

const record = (name: string, value: string) =>
  `apiVersion: dns.zonekeeper.dev/v1alpha1\nkind: DNSRecordSet\nmetadata: {name: ${name}, namespace: dns}\n` +
  `spec:\n  zoneRef: {name: z}\n  name: ${name}\n  type: A\n  records: ["${value}"]\n`;
const zone =
  'apiVersion: dns.zonekeeper.dev/v1alpha1\nkind: DNSZone\nmetadata: {name: z, namespace: dns}\n' +
  'spec:\n  domainName: example.com\n  className: builtin\n';

test('a reload that fails after it took a changed file: the next reload applies the change, though the file did not change again', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'zk-reload-failure-'));
  try {
    await writeFile(path.join(dir, 'a.yaml'), `${zone}---\n${record('x', '192.0.2.1')}`);
    await writeFile(path.join(dir, 'b.yaml'), record('y', '192.0.2.1'));
    const inner = new LocalManifestParser();
    let fail = false;
    // A problem's line asked of a parse thread that stopped (once).
    const parser: ManifestParser = {
      parse: (file, mode) => inner.parse(file, mode),
      locate: async (token, requests) => {
        if (fail) {
          fail = false;
          throw new Error('the parse thread stopped');
        }
        return inner.locate(token, requests);
      },
      release: (token) => inner.release(token),
      close: () => inner.close(),
    };
    const store = new MemoryStore();
    const state = await StateStore.open(undefined);
    const errors: string[] = [];
    const source = new ManifestSource({
      dir,
      store,
      state,
      parser,
      settleMs: 3_600_000,
      now: () => new Date(0),
      log: (_level: string, message: string) => errors.push(message),
    } as never);
    await source.reload();
    assert.deepEqual((store.get('DNSRecordSet', 'dns/x') as DNSRecordSet | undefined)?.spec.records, [
      '192.0.2.1',
    ]);
    // a.yaml changes; b.yaml gets an invalid value, whose line is asked for and fails once.
    await writeFile(path.join(dir, 'a.yaml'), `${zone}---\n${record('x', '192.0.2.22')}`);
    await writeFile(path.join(dir, 'b.yaml'), record('y', '192.0.2.999'));
    fail = true;
    await source.reload();
    assert.equal(fail, false, 'the locate failed');
    assert.match(errors.join('\n'), /the parse thread stopped/);
    // Until a reload succeeds, the failure is said (serve is not ready meanwhile).
    assert.match(source.reloadFailure() ?? '', /^reading .*: the parse thread stopped$/);
    // Nothing changed on disk since (the folder's periodic rescan runs this reload).
    await source.reload();
    assert.deepEqual((store.get('DNSRecordSet', 'dns/x') as DNSRecordSet | undefined)?.spec.records, [
      '192.0.2.22',
    ]);
    assert.equal(source.reloadFailure(), undefined);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
