import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { effectiveDnssec } from '../../api/dnssec.ts';
import { BuiltinBackend } from '../../backends/builtin/builtin-backend.ts';
import { generateDnssecKey } from '../../dns/dnssec/keys.ts';
import { ZoneTable } from '../../server/zone-table.ts';
import { encodeKeyFile, generateZoneKeys } from '../../zones/dnssec-key-set.ts';
import {
  ABSENT_KEYS_TTL_MS,
  DNSSEC_KEYS_LABEL,
  keySecretName,
  SecretKeyStore,
} from './dnssec-key-secrets.ts';
import { KubeApiError, type SecretRecord } from './kube-api.ts';

/** Secrets as the API server keeps them: create-only (409), conditional replace (409 on a stale version). */
function secretApi() {
  const secrets = new Map<string, SecretRecord>();
  const reads: string[] = [];
  let version = 0;
  const conflict = () => new KubeApiError(409, 'AlreadyExists', 'exists');
  return {
    secrets,
    reads,
    api: {
      readSecret: async (_ns: string, name: string) => {
        reads.push(name);
        const s = secrets.get(name);
        return s ? structuredClone(s) : undefined;
      },
      writeSecret: async (_ns: string, record: SecretRecord) => {
        const held = secrets.get(record.name);
        if (record.resourceVersion === undefined ? held : held?.resourceVersion !== record.resourceVersion)
          throw conflict();
        secrets.set(record.name, { ...structuredClone(record), resourceVersion: String(++version) });
      },
    },
  };
}

const CSK = effectiveDnssec(undefined, { enabled: true })!;
const SPLIT = effectiveDnssec(undefined, { enabled: true, keys: 'Split' })!;

describe('SecretKeyStore: DNSSEC keys in a Secret per zone origin', () => {
  test('the leader creates them once, labelled, named from the origin; a replica reads the same keys', async () => {
    const { api, secrets } = secretApi();
    const leader = new SecretKeyStore({ api, namespace: 'zk', create: true });
    const made = await leader.keysFor('Example.COM.', CSK);
    assert.equal(secrets.size, 1);
    const secret = secrets.get(keySecretName('example.com.'))!;
    assert.equal(secret.labels[DNSSEC_KEYS_LABEL], 'true');
    assert.match(secret.name, /^zonekeeper-dnssec-[0-9a-f]{24}$/);
    const replica = new SecretKeyStore({ api, namespace: 'zk', create: false });
    const read = await replica.keysFor('example.com.', CSK);
    assert.deepEqual(read, made);
    // A second leader (a handover) takes the stored keys, it makes none.
    assert.deepEqual(
      await new SecretKeyStore({ api, namespace: 'zk', create: true }).keysFor('example.com.', CSK),
      made,
    );
  });

  test('a replica never makes keys: missing, it fails (and keeps what it serves); of other settings, it signs with them until the leader rolls them', async () => {
    const { api, secrets } = secretApi();
    const replica = new SecretKeyStore({ api, namespace: 'zk', create: false });
    await assert.rejects(
      replica.keysFor('example.com.', CSK),
      /no DNSSEC keys in Secret zk\/zonekeeper-dnssec-/,
    );
    assert.equal(secrets.size, 0);
    const csk = await new SecretKeyStore({ api, namespace: 'zk', create: true }).keysFor('example.com.', CSK);
    assert.deepEqual(await replica.keysFor('example.com.', SPLIT), csk);
    // A Secret without a usable key set (a lone ZSK) is not signed with.
    const broken = secrets.get(keySecretName('example.com.'))!;
    secrets.set(broken.name, {
      ...broken,
      data: { 'keys.json': encodeKeyFile('example.com.', [{ ...csk[0]!, role: 'ZSK' }]) },
    });
    await assert.rejects(replica.keysFor('example.com.', SPLIT), /are not ECDSAP256SHA256\/Split yet/);
  });

  test("the leader keeps keys of other settings (a rollover replaces them); a create race takes the first writer's keys", async () => {
    const held = secretApi();
    const { api } = held;
    const secretsOf = (_: unknown) => held.secrets;
    const a = new SecretKeyStore({ api, namespace: 'zk', create: true });
    const csk = await a.keysFor('example.com.', CSK);
    assert.deepEqual(
      await a.keysFor('example.com.', SPLIT),
      csk,
      'another key mode: the same keys until rolled',
    );
    secretsOf(api).delete(keySecretName('example.com.'));
    const split = await new SecretKeyStore({ api, namespace: 'zk', create: true }).keysFor(
      'example.com.',
      SPLIT,
    );
    assert.notDeepEqual(split, csk);
    assert.deepEqual(
      await new SecretKeyStore({ api, namespace: 'zk', create: false }).keysFor('example.com.', SPLIT),
      split,
    );
    // The Secret replaced (deleted and made again by a new leader): a replica signs with what it holds now.
    const replica = new SecretKeyStore({ api, namespace: 'zk', create: false });
    assert.deepEqual(await replica.keysFor('example.com.', SPLIT), split);
    secretsOf(api).delete(keySecretName('example.com.'));
    const again = await new SecretKeyStore({ api, namespace: 'zk', create: true }).keysFor(
      'example.com.',
      SPLIT,
    );
    assert.deepEqual(await replica.keysFor('example.com.', SPLIT), again);
    assert.notDeepEqual(again, split);
    // Two leaders racing on a new zone: the second's create is refused, it takes the first one's keys.
    const b = new SecretKeyStore({ api, namespace: 'zk', create: true });
    const c = new SecretKeyStore({ api, namespace: 'zk', create: true });
    const [kb, kc] = await Promise.all([b.keysFor('race.example.', CSK), c.keysFor('race.example.', CSK)]);
    assert.deepEqual(kb, kc);
  });

  test("a Secret holding another zone's keys is refused (a copied Secret would sign with the wrong DS)", async () => {
    const { api, secrets } = secretApi();
    const other = await new SecretKeyStore({ api, namespace: 'zk', create: true }).keysFor(
      'other.example.',
      CSK,
    );
    secrets.set(keySecretName('example.com.'), {
      name: keySecretName('example.com.'),
      labels: {},
      annotations: {},
      data: { 'keys.json': encodeKeyFile('other.example.', other) },
      resourceVersion: '99',
    });
    await assert.rejects(
      new SecretKeyStore({ api, namespace: 'zk', create: false }).keysFor('example.com.', CSK),
      /holds the keys of other.example., not of example.com./,
    );
  });

  test('the leader records rollover steps in the Secret (conditionally); replicas cannot, and read them', async () => {
    const { api, secrets } = secretApi();
    const leader = new SecretKeyStore({ api, namespace: 'zk', create: true });
    const replica = new SecretKeyStore({ api, namespace: 'zk', create: false });
    assert.equal(replica.update, undefined, 'a replica has no way to write keys');
    const keys = await leader.keysFor('example.com.', SPLIT);
    const events = [{ at: 50, active: false, published: true, ds: false }];
    let calls = 0;
    const step = await leader.update!('example.com.', (held) => {
      calls++;
      return { keys: [...held.keys, { ...keys[1]!, id: 3, events }], zskRoll: 'Publish 50 3 2' };
    });
    assert.equal(calls, 1);
    assert.equal(step.keys.length, 3);
    const read = await replica.keysFor('example.com.', SPLIT);
    assert.deepEqual(read.at(-1)?.events, events);
    // Another writer changed the Secret in between: the step runs again on what it holds now.
    let seen = 0;
    await leader.update!('example.com.', (held) => {
      seen++;
      if (seen === 1) secrets.get(keySecretName('example.com.'))!.resourceVersion = 'changed';
      return { ...held, zskRoll: 'Retire 60 3 2' };
    });
    assert.equal(seen, 2, 'the step ran again after the conflict');
    const held = await leader.update!('example.com.', () => undefined);
    assert.equal(held.zskRoll, 'Retire 60 3 2');
  });

  test('the leader reads a missing Secret of an unsigned zone once per minute, however often asked', async () => {
    const { api, reads, secrets } = secretApi();
    let clock = 1_000_000;
    const leader = new SecretKeyStore({ api, namespace: 'zk', create: true, now: () => clock });
    const backend = new BuiltinBackend(new ZoneTable(), undefined, { dnssecKeys: leader });
    for (let visit = 0; visit < 5; visit++)
      for (const origin of ['a.test.', 'b.test.'])
        assert.equal(await backend.signingTurnedOff(origin), false);
    assert.deepEqual(reads.sort(), [keySecretName('a.test.'), keySecretName('b.test.')].sort());
    await assert.rejects(
      leader.update!('a.test.', () => undefined),
      /no DNSSEC keys in Secret zk\//,
    );
    assert.equal(reads.length, 2);
    // Made by another writer (a leader before this one, a restore from a backup): nothing reports
    // it, so it is read once the absence is a minute old.
    const keys = generateZoneKeys(CSK, generateDnssecKey);
    secrets.set(keySecretName('a.test.'), {
      name: keySecretName('a.test.'),
      labels: { [DNSSEC_KEYS_LABEL]: 'true' },
      annotations: {},
      data: { 'keys.json': encodeKeyFile('a.test.', keys, { disable: 'Disabling 100 60' }) },
      resourceVersion: '1',
    });
    clock += ABSENT_KEYS_TTL_MS - 1;
    assert.equal(await backend.signingTurnedOff('a.test.'), false);
    assert.equal(reads.length, 2);
    clock += 1;
    assert.equal(await backend.signingTurnedOff('a.test.'), true);
    assert.equal(await backend.signingTurnedOff('a.test.'), true);
    assert.equal(reads.length, 4, 'a Secret that is there is read at every visit, as before');
    assert.equal(await backend.signingTurnedOff('b.test.'), false);
    assert.equal(reads.length, 5, 'the other absence expired too');
  });

  test('keys the leader makes itself are found at once, not after the absence expires', async () => {
    const { api, reads } = secretApi();
    const leader = new SecretKeyStore({ api, namespace: 'zk', create: true, now: () => 0 });
    await assert.rejects(
      leader.update!('example.com.', () => undefined),
      /no DNSSEC keys/,
    );
    const made = await leader.keysFor('example.com.', CSK);
    assert.equal(reads.length, 2, 'keysFor reads whatever was believed');
    const held = await leader.update!('example.com.', () => undefined);
    assert.deepEqual(held.keys, made);
    // Found by keysFor (made by another leader before): forgotten too.
    const other = new SecretKeyStore({ api, namespace: 'zk', create: true, now: () => 0 });
    await assert.rejects(
      other.update!('two.test.', () => undefined),
      /no DNSSEC keys/,
    );
    const theirs = await leader.keysFor('two.test.', CSK);
    assert.deepEqual(await other.keysFor('two.test.', CSK), theirs);
    assert.deepEqual((await other.update!('two.test.', () => undefined)).keys, theirs);
  });
});
