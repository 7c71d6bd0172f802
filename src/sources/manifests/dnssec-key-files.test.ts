import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { EffectiveDnssec } from '../../api/dnssec.ts';
import { FolderKeyStore, keyFileName } from './dnssec-key-files.ts';

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
