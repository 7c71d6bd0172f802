import assert from 'node:assert/strict';
import { watch } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { EffectiveDnssec } from '../../api/dnssec.ts';
import { BuiltinBackend } from '../../backends/builtin/builtin-backend.ts';
import { generateDnssecKey } from '../../dns/dnssec/keys.ts';
import { ZoneTable } from '../../server/zone-table.ts';
import { encodeKeyFile, generateZoneKeys } from '../../zones/dnssec-key-set.ts';
import { FolderKeyStore, type KeyFolderIo, keyFileName } from './dnssec-key-files.ts';

const CSK: EffectiveDnssec = {
  algorithm: 'ECDSAP256SHA256',
  denial: 'NSEC',
  keys: 'CSK',
  zskLifetimeSeconds: 0,
  kskLifetimeSeconds: 0,
};
const pub = (keys: { key: { publicKey: Uint8Array } }[]) =>
  keys.map((k) => Buffer.from(k.key.publicKey).toString('base64'));

describe('DNSSEC keys in the state directory', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'zonekeeper-keys-'));
  });
  after(async () => rm(dir, { recursive: true, force: true }));

  test('generated once, stored mode 0600 in a 0700 folder, the same keys after a restart', async () => {
    const first = await new FolderKeyStore(dir).keysFor('Example.COM.', CSK);
    assert.deepEqual(
      first.map((k) => [k.role, k.key.algorithm, k.key.flags]),
      [['CSK', 13, 257]],
    );
    const file = path.join(dir, 'dnssec', 'example.com.json');
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    assert.equal((await stat(path.join(dir, 'dnssec'))).mode & 0o777, 0o700);
    const again = await new FolderKeyStore(dir).keysFor('example.com.', CSK);
    assert.deepEqual(pub(again), pub(first));
  });

  test('another algorithm or key mode keeps the keys (a rollover replaces them)', async () => {
    const split = await new FolderKeyStore(dir).keysFor('split.test.', {
      ...CSK,
      algorithm: 'ED25519',
      keys: 'Split',
    });
    assert.deepEqual(
      split.map((k) => [k.role, k.key.algorithm, k.key.flags]),
      [
        ['KSK', 15, 257],
        ['ZSK', 15, 256],
      ],
    );
    const kept = await new FolderKeyStore(dir).keysFor('split.test.', { ...CSK, keys: 'Split' });
    assert.deepEqual(pub(kept), pub(split), 'ECDSAP256SHA256 asked: the ED25519 keys stay until rolled');
    const csk = await new FolderKeyStore(dir).keysFor('split.test.', CSK);
    assert.deepEqual(pub(csk), pub(split), 'CSK asked: the split keys stay until rolled');
  });

  test('rollover steps are stored with the keys (ids, timed events, rollover states) and read back after a restart', async () => {
    const store = new FolderKeyStore(dir);
    const keys = await store.keysFor('roll.test.', { ...CSK, keys: 'Split' });
    assert.deepEqual(
      keys.map((k) => k.id),
      [1, 2],
    );
    const events = [{ at: 100, active: false, published: true, ds: false }];
    const next = await store.update('roll.test.', (held) => ({
      keys: [...held.keys, { ...held.keys[1]!, id: 3, events }],
      zskRoll: 'Publish 100 3 2',
      keyRoll: 'Idle 0',
      disable: 'Disabling 100 60',
    }));
    assert.equal(next.keys.length, 3);
    // Nothing to change: nothing written.
    assert.equal(await store.update('roll.test.', () => undefined), next);
    const again = new FolderKeyStore(dir);
    const read = await again.keysFor('roll.test.', { ...CSK, keys: 'Split' });
    assert.deepEqual(
      read.map((k) => [k.id, k.events]),
      [
        [1, undefined],
        [2, undefined],
        [3, events],
      ],
    );
    const held = await again.update('roll.test.', () => undefined);
    assert.equal(held.zskRoll, 'Publish 100 3 2');
    assert.equal(held.keyRoll, 'Idle 0');
    assert.equal(held.disable, 'Disabling 100 60');
    // A malformed state change fails loudly.
    const file = path.join(dir, 'dnssec', 'roll.test.json');
    const data = JSON.parse(await readFile(file, 'utf8'));
    data.keys[2].events[0].at = 'soon';
    await writeFile(file, JSON.stringify(data));
    await assert.rejects(new FolderKeyStore(dir).keysFor('roll.test.', CSK), /malformed state change/);
  });

  test('a damaged key file fails loudly instead of signing with a broken key', async () => {
    await new FolderKeyStore(dir).keysFor('broken.test.', CSK);
    const file = path.join(dir, 'dnssec', 'broken.test.json');
    const data = JSON.parse(await readFile(file, 'utf8'));
    data.keys[0].privateKey = Buffer.from('short').toString('base64');
    await writeFile(file, JSON.stringify(data));
    await assert.rejects(
      new FolderKeyStore(dir).keysFor('broken.test.', CSK),
      /DNSSEC_KEY_LENGTH|private key/,
    );
  });

  test('file names: the origin without its final dot, the root as root', () => {
    assert.equal(keyFileName('Example.com.'), 'example.com.json');
    assert.equal(keyFileName('.'), 'root.json');
  });
});

/** Node's own file system calls, counted. */
function countingIo(options: { watchFails?: boolean } = {}) {
  const counts = { readFile: 0, readdir: 0, watch: 0 };
  const io: KeyFolderIo = {
    readFile: (file) => {
      counts.readFile++;
      return readFile(file, 'utf8');
    },
    readdir: (dir) => {
      counts.readdir++;
      return readdir(dir);
    },
    watch: (dir, changed) => {
      counts.watch++;
      if (options.watchFails) throw new Error('ENOSPC: no inotify watches left (test)');
      return watch(dir, { persistent: false }, () => changed());
    },
  };
  return { io, counts };
}

/** A key file written from outside the store (copied back from a backup), with signing being turned off. */
async function restoreKeyFile(stateDir: string, origin: string, how: 'rename' | 'write' = 'rename') {
  const keys = generateZoneKeys(CSK, generateDnssecKey);
  const text = encodeKeyFile(origin, keys, { disable: 'Disabling 100 60' });
  const folder = path.join(stateDir, 'dnssec');
  await mkdir(folder, { recursive: true, mode: 0o700 });
  const file = path.join(folder, keyFileName(origin));
  if (how === 'write') return writeFile(file, text, { mode: 0o600 });
  await writeFile(`${file}.restore`, text, { mode: 0o600 });
  await rename(`${file}.restore`, file);
}

/** Waits (without a deadline of its own beyond a generous cap) until `seen` holds. */
async function eventually(seen: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (await seen()) return;
    await sleep(10);
  }
  assert.fail(`never seen: ${what}`);
}

describe('DNSSEC key files of zones that are not signed', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'zonekeeper-keys-absent-'));
  });
  after(async () => rm(dir, { recursive: true, force: true }));

  test('unsigned zones visited many times read no key file: the watched folder is listed once', async () => {
    const state = path.join(dir, 'many');
    const { io, counts } = countingIo();
    const store = new FolderKeyStore(state, undefined, io);
    const backend = new BuiltinBackend(new ZoneTable(), undefined, { dnssecKeys: store });
    for (let visit = 0; visit < 5; visit++)
      for (const origin of ['a.test.', 'b.test.', 'c.test.'])
        assert.equal(await backend.signingTurnedOff(origin), false);
    assert.deepEqual(await store.update('a.test.', () => undefined), { keys: [] });
    assert.deepEqual(counts, { readFile: 0, readdir: 1, watch: 1 });
    assert.equal(
      (await stat(path.join(state, 'dnssec'))).mode & 0o777,
      0o700,
      'the folder is made to be watched',
    );
    store.close();
  });

  test('a key file that appears later is picked up (renamed into place or written in place)', async () => {
    const state = path.join(dir, 'late');
    const { io, counts } = countingIo();
    const store = new FolderKeyStore(state, undefined, io);
    const backend = new BuiltinBackend(new ZoneTable(), undefined, { dnssecKeys: store });
    assert.equal(await backend.signingTurnedOff('late.test.'), false);
    assert.equal(await backend.signingTurnedOff('late.test.'), false);
    assert.equal(counts.readFile, 0);
    await restoreKeyFile(state, 'late.test.');
    await eventually(() => backend.signingTurnedOff('late.test.'), 'the renamed key file');
    assert.ok(counts.readdir >= 2, 'listed again after the change');
    // Listed again: other zones cost no read again, the one with a file is read.
    const reads = counts.readFile;
    assert.equal(await backend.signingTurnedOff('other.test.'), false);
    assert.equal(await backend.signingTurnedOff('late.test.'), true);
    assert.equal(counts.readFile, reads + 1);
    await restoreKeyFile(state, 'copied.test.', 'write');
    await eventually(() => backend.signingTurnedOff('copied.test.'), 'the key file written in place');
    store.close();
  });

  test('a listing is believed a minute at most: a key file the watcher never reported is found after it', async (t) => {
    const state = path.join(dir, 'silent');
    const { io, counts } = countingIo();
    // A watcher that never reports (the folder replaced behind a symbolic link, a network file system).
    const silent: KeyFolderIo = { ...io, watch: (folder) => io.watch(folder, () => {}) };
    t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
    const store = new FolderKeyStore(state, undefined, silent);
    const backend = new BuiltinBackend(new ZoneTable(), undefined, { dnssecKeys: store });
    assert.equal(await backend.signingTurnedOff('silent.test.'), false);
    await restoreKeyFile(state, 'silent.test.');
    assert.equal(
      await backend.signingTurnedOff('silent.test.'),
      false,
      'not seen while the listing is young',
    );
    t.mock.timers.tick(61_000);
    assert.equal(await backend.signingTurnedOff('silent.test.'), true, 'seen once it is older than a minute');
    assert.equal(counts.readdir, 2);
    store.close();
  });

  test('keys the store makes itself are found without waiting for the watcher', async () => {
    const state = path.join(dir, 'own');
    const store = new FolderKeyStore(state);
    assert.deepEqual(await store.update('own.test.', () => undefined), { keys: [] });
    const made = await store.keysFor('own.test.', CSK);
    assert.deepEqual(pub((await store.update('own.test.', () => undefined)).keys), pub(made));
    // Another store on the same folder (a restart) lists it with the file.
    const again = new FolderKeyStore(state);
    assert.deepEqual(pub((await again.update('own.test.', () => undefined)).keys), pub(made));
    store.close();
    again.close();
  });

  test('the key folder removed and made again: a key file in the new folder is picked up', async () => {
    const state = path.join(dir, 'removed');
    const store = new FolderKeyStore(state);
    assert.deepEqual(await store.update('gone.test.', () => undefined), { keys: [] });
    await rm(path.join(state, 'dnssec'), { recursive: true });
    // The removal is reported; the next update makes the folder again and watches the new one.
    await eventually(async () => {
      await store.update('gone.test.', () => undefined);
      return (await stat(path.join(state, 'dnssec')).catch(() => undefined)) !== undefined;
    }, 'the folder made again');
    await restoreKeyFile(state, 'gone.test.');
    await eventually(
      async () => (await store.update('gone.test.', () => undefined)).keys.length > 0,
      'the key file in the new folder',
    );
    store.close();
  });

  test("a folder that cannot be watched: every visit reads the zone's file, as without the listing", async () => {
    const state = path.join(dir, 'unwatched');
    const { io, counts } = countingIo({ watchFails: true });
    const warnings: string[] = [];
    const store = new FolderKeyStore(state, (_, message) => warnings.push(message), io);
    for (let i = 0; i < 3; i++)
      assert.deepEqual(await store.update('u.test.', () => undefined), { keys: [] });
    assert.deepEqual(counts, { readFile: 3, readdir: 0, watch: 1 });
    assert.match(warnings.join('\n'), /cannot watch .*dnssec.*read at each visit/);
    await restoreKeyFile(state, 'u.test.');
    assert.equal((await store.update('u.test.', () => undefined)).keys.length, 1);
  });
});
