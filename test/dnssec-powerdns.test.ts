/**
 * DNSSEC through the PowerDNS backend, against a real pdns_server (SQLite and LMDB): `spec.dnssec` on a
 * DNSZone creates the keys through the API, PowerDNS signs live, the zone status carries the key tags
 * and the DS, and BIND's `delv` — with the zone's key as its only trust anchor — validates positive
 * answers, NXDOMAIN and NODATA with NSEC and with NSEC3 (RFC 9276 parameters). Turning DNSSEC off
 * removes what Zonekeeper added; a zone someone signed by hand is left signed.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { DNSZone, Resource } from '../src/api/index.ts';
import { BuiltinBackend } from '../src/backends/builtin/builtin-backend.ts';
import { PowerDnsClient } from '../src/backends/powerdns/client.ts';
import { applyDnssec } from '../src/backends/powerdns/dnssec.ts';
import { BACKENDS, createBackendFactory } from '../src/backends/registry.ts';
import { Controller } from '../src/control/controller.ts';
import { MemoryStore } from '../src/control/memory-store.ts';
import { fileAndEnvSecrets } from '../src/control/secrets.ts';
import { MemorySerialStore } from '../src/control/serial-store.ts';
import { dsOf, parseDnskey } from '../src/dns/dnssec/keys.ts';
import { ZoneTable } from '../src/server/zone-table.ts';
import { delv, trustAnchorFile } from './support/delv.ts';
import { dig, rdataOf } from './support/dig.ts';
import { type PowerDnsProcess, powerDnsAvailable, startPowerDns } from './support/powerdns.ts';
import { startPowerDnsControlled } from './support/powerdns-dnssec.ts';
import { recordSet, zone, zoneClass } from './support/resources.ts';
import { removeAll, tempDir, waitFor } from './support/zonekeeper-process.ts';

const KEY = 'dns/signed';
const ORIGIN = 'signed.example.';

for (const storage of ['sqlite', 'lmdb'] as const) {
  describe(`DNSSEC through PowerDNS (${storage})`, async () => {
    const unavailable = await powerDnsAvailable(storage);
    let pdns: PowerDnsProcess;
    let store: MemoryStore;
    let controller: Controller;
    let factory: ReturnType<typeof createBackendFactory>;
    let dir: string;

    const status = () => (store.get('DNSZone', KEY) as DNSZone | undefined)?.status;
    const programmedWith = async (check: (z: DNSZone['status']) => boolean) =>
      waitFor(async () => {
        const s = status();
        const p = s?.conditions?.find((c) => c.type === 'Programmed');
        return p?.status === 'True' && check(s) ? s : undefined;
      }, 20_000);
    const apply = (r: Resource) => store.apply(r);
    const signedZone = (dnssec: NonNullable<DNSZone['spec']['dnssec']> | undefined) =>
      zone('dns', 'signed', 'signed.example', { className: 'powerdns', ...(dnssec ? { dnssec } : {}) });
    const pdnsApi = (method: string, rest: string, body?: unknown) =>
      pdns.api(method, `/api/v1/servers/localhost/zones/${ORIGIN}${rest}`, body);

    before(async () => {
      if (unavailable) return;
      ({ pdns, dir, store, factory, controller } = await startPowerDnsControlled({
        pdns: { storage, dnssec: true },
        dirPrefix: 'dnssec-pdns',
        nameServers: ['ns1.signed.example.'],
        defaults: { ttl: 300, soa: { rname: 'hostmaster@signed.example' } },
      }));
      apply(signedZone({ enabled: true }));
      for (const [name, type, records] of [
        ['ns1', 'A', ['192.0.2.53']],
        ['www', 'A', ['192.0.2.10', '192.0.2.11']],
        ['*.wild', 'TXT', ['"wildcard"']],
        ['alias', 'CNAME', ['www']],
        ['secure', 'NS', ['ns.secure.elsewhere.example.']],
        ['secure', 'DS', ['60485 13 2 d4b7d520e7bb5f0f67674a0cceb1e3e0614b93c4f9e99b8383f6a1e4469da50a']],
        ['insecure', 'NS', ['ns.elsewhere.example.']],
      ] as const)
        apply(
          recordSet('dns', `${name.replace(/\W/g, '')}-${type.toLowerCase()}`, {
            zoneRef: { name: 'signed' },
            name,
            type,
            records: [...records],
          }),
        );
      controller.start();
    });
    after(async () => {
      controller?.stop();
      factory?.close();
      await pdns?.stop();
      if (dir) await removeAll(dir);
    });

    const validates = async (name: string, type: string, expect: RegExp) => {
      const anchors = await trustAnchorFile(dir, pdns.dnsPort, ORIGIN);
      const r = await delv(pdns.dnsPort, anchors, ORIGIN, name, type);
      assert.match(r.verdict, expect, `${name} ${type}: ${r.raw}`);
      return r;
    };

    test('spec.dnssec.enabled: one CSK, the DS in the status equals the DNSKEY served, delv validates (NSEC)', async (t) => {
      if (unavailable) return t.skip(unavailable);
      const { value: s } = await programmedWith((z) => (z?.dnssec?.ds?.length ?? 0) > 0);
      assert.equal(s!.dnssec!.keys!.length, 1);
      const [key] = s!.dnssec!.keys!;
      assert.equal(key!.role, 'CSK');
      assert.equal(key!.algorithm, 13);
      const served = rdataOf(await dig(pdns.dnsPort, ORIGIN, 'DNSKEY'), 'DNSKEY').map(parseDnskey);
      assert.equal(served.length, 1);
      const ds = dsOf(ORIGIN, served[0]!);
      assert.deepEqual(s!.dnssec!.ds, [`${ds.keyTag} 13 2 ${ds.digest}`]);
      assert.equal(s!.dnssec!.cds, 'Published');
      assert.equal(
        rdataOf(await dig(pdns.dnsPort, ORIGIN, 'CDS'), 'CDS').length,
        1,
        'CDS published (RFC 7344)',
      );
      const www = await validates('www.signed.example', 'A', /^fully validated/);
      assert.ok(www.answer.some((l) => l.includes('192.0.2.10')));
      await validates('nope.signed.example', 'A', /negative response, fully validated/);
      await validates('www.signed.example', 'TXT', /negative response, fully validated/);
      await validates('x.wild.signed.example', 'TXT', /^fully validated/);
      await validates('alias.signed.example', 'A', /^fully validated/);
      // Delegations: the DS of the secure one validates; the insecure one's lack of DS is proven.
      await validates('secure.signed.example', 'DS', /^fully validated/);
      await validates('insecure.signed.example', 'DS', /negative response, fully validated/);
    });

    test('denial NSEC3: NSEC3PARAM 1 0 0 - and validated NXDOMAIN and NODATA', async (t) => {
      if (unavailable) return t.skip(unavailable);
      apply({
        ...signedZone({ enabled: true, denial: 'NSEC3' }),
        metadata: { ...signedZone(undefined).metadata, generation: 2 },
      });
      await waitFor(async () => {
        const p = rdataOf(await dig(pdns.dnsPort, ORIGIN, 'NSEC3PARAM'), 'NSEC3PARAM');
        return p[0] === '1 0 0 -' ? true : undefined;
      }, 20_000);
      await validates('nope.signed.example', 'A', /negative response, fully validated/);
      await validates('www.signed.example', 'MX', /negative response, fully validated/);
      await validates('www.signed.example', 'A', /^fully validated/);
    });

    test('a record change is signed by PowerDNS at once (live signing); the serial is the status serial', async (t) => {
      if (unavailable) return t.skip(unavailable);
      const before = status()!.serial!;
      apply(
        recordSet('dns', 'new-a', {
          zoneRef: { name: 'signed' },
          name: 'new',
          type: 'A',
          records: ['192.0.2.77'],
        }),
      );
      await programmedWith((z) => (z?.serial ?? 0) > before);
      const soa = rdataOf(await dig(pdns.dnsPort, ORIGIN, 'SOA'), 'SOA')[0]!;
      assert.equal(Number(soa.split(' ')[2]), status()!.serial);
      const r = await validates('new.signed.example', 'A', /^fully validated/);
      assert.ok(r.answer.some((l) => l.includes('192.0.2.77')));
    });

    test('a signed child zone: its DS published in the signed parent; delv validates the child from the parent key', async (t) => {
      if (unavailable) return t.skip(unavailable);
      apply(
        zone('dns', 'child', 'child.signed.example', { className: 'powerdns', dnssec: { enabled: true } }, 5),
      );
      apply(
        recordSet('dns', 'child-www', {
          zoneRef: { name: 'child' },
          name: 'www',
          type: 'A',
          records: ['192.0.2.200'],
        }),
      );
      const { value: childDs } = await waitFor(async () => {
        const c = (store.get('DNSZone', 'dns/child') as DNSZone | undefined)?.status?.dnssec?.ds;
        return c && c.length > 0 ? c : undefined;
      }, 20_000);
      await waitFor(async () => {
        // dig prints a long digest in groups: join them back.
        const ds = rdataOf(await dig(pdns.dnsPort, 'child.signed.example', 'DS'), 'DS').map((d) => {
          const [tag, alg, type, ...digest] = d.toLowerCase().split(/\s+/);
          return `${tag} ${alg} ${type} ${digest.join('')}`;
        });
        return ds.length > 0 && childDs.every((d) => ds.includes(d)) ? true : undefined;
      }, 20_000);
      // Only the parent's key is trusted: the answer validates through the DS at the cut.
      const r = await validates('www.child.signed.example', 'A', /^fully validated/);
      assert.ok(r.answer.some((l) => l.includes('192.0.2.200')));
    });

    test('disabled: Zonekeeper removes its keys and the zone answers unsigned; a zone signed by hand stays signed', async (t) => {
      if (unavailable) return t.skip(unavailable);
      apply({ ...signedZone(undefined), metadata: { ...signedZone(undefined).metadata, generation: 3 } });
      await waitFor(
        async () =>
          rdataOf(await dig(pdns.dnsPort, ORIGIN, 'DNSKEY'), 'DNSKEY').length === 0 ? true : undefined,
        20_000,
      );
      await programmedWith((z) => z?.dnssec === undefined);
      assert.equal(rdataOf(await dig(pdns.dnsPort, ORIGIN, 'NSEC3PARAM'), 'NSEC3PARAM').length, 0);
      // Signed by hand (a key made through the API, no Zonekeeper mark): the next applies keep it.
      const made = await pdnsApi('POST', '/cryptokeys', {
        keytype: 'csk',
        active: true,
        algorithm: 'ecdsa256',
      });
      assert.equal(made.status, 201, JSON.stringify(made.body));
      const before = status()!.serial!;
      apply(
        recordSet('dns', 'other-a', {
          zoneRef: { name: 'signed' },
          name: 'other',
          type: 'A',
          records: ['192.0.2.78'],
        }),
      );
      await programmedWith((z) => (z?.serial ?? 0) > before);
      controller.stop();
      controller.start(); // a restart: the full apply checks DNSSEC again
      await new Promise((r) => setTimeout(r, 2500)); // a resync interval (1 s) and more
      assert.equal(
        rdataOf(await dig(pdns.dnsPort, ORIGIN, 'DNSKEY'), 'DNSKEY').length,
        1,
        'the hand-made key stays',
      );
      // Asking Zonekeeper to sign it now does not take it over (turning DNSSEC off later would delete
      // keys it never made): the backend refuses, saying why, and the hand-made key stays either way.
      const client = new PowerDnsClient({
        url: pdns.apiUrl,
        serverId: 'localhost',
        apiKey: async () => pdns.apiKey,
        timeoutMs: 10_000,
      });
      try {
        await assert.rejects(
          applyDnssec(client, ORIGIN, {
            algorithm: 'ECDSAP256SHA256',
            denial: 'NSEC',
            keys: 'CSK',
            zskLifetimeSeconds: 0,
            kskLifetimeSeconds: 0,
          }),
          /signed by hand.*pdnsutil remove-zone-key/s,
        );
        await applyDnssec(client, ORIGIN, undefined);
      } finally {
        client.close();
      }
      assert.equal(
        rdataOf(await dig(pdns.dnsPort, ORIGIN, 'DNSKEY'), 'DNSKEY').length,
        1,
        'still the hand-made key',
      );
    });
  });
}

describe('DNSSEC through PowerDNS whose backend has DNSSEC off (SQLite without gsqlite3-dnssec)', async () => {
  const unavailable = await powerDnsAvailable('sqlite');
  test('the zone is not Programmed, and the condition says what to enable', async (t) => {
    if (unavailable) return t.skip(unavailable);
    const pdns = await startPowerDns({ storage: 'sqlite' });
    const dir = await tempDir('dnssec-pdns-off');
    const store = new MemoryStore();
    const secrets = fileAndEnvSecrets();
    const factory = createBackendFactory({
      builtin: new BuiltinBackend(new ZoneTable()),
      secrets,
      registry: BACKENDS,
    });
    const controller = new Controller({ store, backend: factory, serials: new MemorySerialStore(), secrets });
    try {
      const keyFile = path.join(dir, 'api-key');
      await writeFile(keyFile, `${pdns.apiKey}\n`);
      store.apply(
        zoneClass('powerdns', ['ns1.signed.example.'], {
          backend: { powerdns: { url: pdns.apiUrl, apiKeySecretRef: { file: keyFile } } },
        }),
      );
      store.apply(
        zone('dns', 'signed', 'signed.example', { className: 'powerdns', dnssec: { enabled: true } }),
      );
      controller.start();
      const { value: programmed } = await waitFor(async () => {
        const c = (store.get('DNSZone', KEY) as DNSZone | undefined)?.status?.conditions?.find(
          (x) => x.type === 'Programmed',
        );
        return c?.status === 'False' && c.message.includes('gsqlite3-dnssec') ? c : undefined;
      }, 20_000);
      assert.equal(programmed.reason, 'BackendRejected');
    } finally {
      controller.stop();
      factory.close();
      await pdns.stop();
      await removeAll(dir);
    }
  });
});

describe('automatic ZSK rollover through PowerDNS (keys: Split, compressed time)', async () => {
  const unavailable = await powerDnsAvailable('lmdb');
  test('pre-publish, sign with the new ZSK, retire the old one: delv validates at every moment in between', async (t) => {
    if (unavailable) return t.skip(unavailable);
    const { pdns, dir, store, factory, controller } = await startPowerDnsControlled({
      pdns: { storage: 'lmdb' },
      dirPrefix: 'dnssec-rollover',
      nameServers: ['ns1.rolled.example.'],
    });
    const origin = 'rolled.example.';
    try {
      // TTLs of 2 s and a refresh of 1 s: Ipub = Iret = 3 s; a ZSK signs for 6 s.
      store.apply(
        zone('dns', 'rolled', 'rolled.example', {
          className: 'powerdns',
          ttl: 2,
          soa: { refresh: 1, minimum: 2 },
          dnssec: { enabled: true, keys: 'Split', zskLifetimeSeconds: 6 },
        }),
      );
      store.apply(
        recordSet('dns', 'www', {
          zoneRef: { name: 'rolled' },
          name: 'www',
          type: 'A',
          records: ['192.0.2.1'],
        }),
      );
      controller.start();
      const zsks = async () =>
        rdataOf(await dig(pdns.dnsPort, origin, 'DNSKEY'), 'DNSKEY')
          .filter((k) => k.startsWith('256 '))
          .map((k) => parseDnskey(k));
      await waitFor(async () => ((await zsks()).length === 1 ? true : undefined), 20_000);
      const first = (await zsks())[0]!;
      const anchors = await trustAnchorFile(dir, pdns.dnsPort, origin); // the KSK: it does not roll
      const phases = new Set<string>();
      let verdicts = 0;
      const { value: second } = await waitFor(async () => {
        const r = await delv(pdns.dnsPort, anchors, origin, 'www.rolled.example', 'A');
        assert.match(r.verdict, /^fully validated/, `validation failed during the rollover: ${r.raw}`);
        verdicts++;
        const phase = (store.get('DNSZone', 'dns/rolled') as DNSZone | undefined)?.status?.dnssec?.rollover
          ?.phase;
        if (phase) phases.add(phase);
        const now = await zsks();
        if (now.length === 2) phases.add('two ZSKs published');
        return now.length === 1 &&
          Buffer.compare(Buffer.from(now[0]!.publicKey), Buffer.from(first.publicKey)) !== 0
          ? now[0]
          : undefined;
      }, 40_000);
      assert.ok(second, 'a new ZSK replaced the first');
      assert.ok(
        phases.has('two ZSKs published'),
        `the new ZSK was pre-published (seen: ${[...phases].join(', ')})`,
      );
      assert.ok(verdicts >= 5, `validated ${verdicts} times across the rollover`);
    } finally {
      controller.stop();
      factory.close();
      await pdns.stop();
      await removeAll(dir);
    }
  });
});
