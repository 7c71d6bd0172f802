/**
 * The PowerDNS backend against a real pdns_server (4.7 here), with the LMDB settings of Datum Cloud's deployment
 * and with the SQLite backend: the Controller in-process (MemoryStore, the backend factory, the API key
 * from a file), PowerDNS queried with dig and read through its API. Then `zonekeeper serve` on the
 * examples, programming PowerDNS, compared with `zonekeeper serve` answering itself.
 */
import assert from 'node:assert/strict';
import { cp, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { DNSZone, DNSZoneClass, Kind, Resource } from '../src/api/index.ts';
import { BuiltinBackend } from '../src/backends/builtin/builtin-backend.ts';
import { DNSSEC_METADATA } from '../src/backends/powerdns/dnssec.ts';
import {
  type ApplyStats,
  CREATED_METADATA,
  OWNERSHIP_METADATA,
  PowerDnsBackend,
} from '../src/backends/powerdns/powerdns-backend.ts';
import { BACKENDS, createBackendFactory } from '../src/backends/registry.ts';
import { Controller } from '../src/control/controller.ts';
import { MemoryStore } from '../src/control/memory-store.ts';
import { fileAndEnvSecrets } from '../src/control/secrets.ts';
import { MemorySerialStore } from '../src/control/serial-store.ts';
import { ZoneTable } from '../src/server/zone-table.ts';
import { type DigResult, dig, rdataOf } from './support/dig.ts';
import {
  type PowerDnsProcess,
  type PowerDnsStorage,
  powerDnsAvailable,
  type StubResolver,
  startPowerDns,
  startStubResolver,
} from './support/powerdns.ts';
import { recordSet, zone, zoneClass } from './support/resources.ts';
import {
  ROOT,
  removeAll,
  type ServeProcess,
  startServe,
  tempDir,
  waitFor,
} from './support/zonekeeper-process.ts';

const ZONE = 'dns/example-com';

function cond(store: MemoryStore, kind: Kind, key: string, type: string) {
  return (store.get(kind, key) as Resource | undefined)?.status?.conditions?.find((c) => c.type === type);
}

interface Rig {
  pdns: PowerDnsProcess;
  resolver: StubResolver;
  store: MemoryStore;
  controller: Controller;
  applies: { origin: string; stats: ApplyStats }[];
  dir: string;
  close(): Promise<void>;
}

async function rig(storage: PowerDnsStorage): Promise<Rig> {
  const resolver = await startStubResolver({
    'cdn.example.net': { A: ['198.51.100.44'], AAAA: ['2001:db8::44'] },
  });
  const pdns = await startPowerDns({ storage, resolver: resolver.address });
  const dir = await tempDir('pdns-key');
  const keyFile = path.join(dir, 'api-key');
  await writeFile(keyFile, `${pdns.apiKey}\n`);
  const store = new MemoryStore();
  const applies: Rig['applies'] = [];
  const builtin = new BuiltinBackend(new ZoneTable());
  const secrets = fileAndEnvSecrets();
  const factory = createBackendFactory({
    builtin,
    secrets,
    registry: {
      ...BACKENDS,
      powerdns: {
        ...BACKENDS.powerdns,
        create: (settings) =>
          new PowerDnsBackend({
            settings,
            secrets,
            onApply: (origin, stats) => applies.push({ origin, stats }),
          }),
      },
    },
  });
  const controller = new Controller({ store, backend: factory, serials: new MemorySerialStore(), secrets });
  store.apply(
    zoneClass('powerdns', ['ns1.example.com.', 'ns2.example.com.'], {
      backend: { powerdns: { url: pdns.apiUrl, apiKeySecretRef: { file: keyFile }, resyncSeconds: 1 } },
      defaults: { ttl: 300, soa: { rname: 'hostmaster@example.com' } },
    }),
  );
  store.apply(zone('dns', 'example-com', 'example.com', { className: 'powerdns' }));
  const records: [string, string, string[]][] = [
    ['www', 'A', ['192.0.2.10', '192.0.2.11']],
    ['www', 'AAAA', ['2001:db8::10']],
    ['@', 'MX', ['10 mail']],
    ['@', 'TXT', ['"v=spf1 mx -all"', '"quote \\" and backslash \\\\ and caf\\195\\169"']],
    ['@', 'ALIAS', ['cdn.example.net.']],
    ['@', 'CAA', ['0 issue "letsencrypt.org"']],
    ['@', 'HTTPS', ['1 . alpn="h3,h2" ipv4hint=192.0.2.10']],
    ['_dns', 'SVCB', ['1 www alpn=h2 port=8443 dohpath=/dns-query{?dns}']],
    ['_sip._tcp', 'SRV', ['10 60 5060 sip']],
    ['docs', 'CNAME', ['www']],
    ['mail', 'A', ['192.0.2.25']],
    ['*.wild', 'A', ['192.0.2.99']],
    ['legacy', 'NS', ['ns1.legacy.example.net.']],
    ['legacy', 'DS', ['60485 13 2 d4b7d520e7bb5f0f67674a0cceb1e3e0614b93c4f9e99b8383f6a1e4469da50a']],
  ];
  for (const [name, type, values] of records) {
    const id = `${name.replace(/[^a-z0-9]/g, '') || 'apex'}-${type.toLowerCase()}`;
    store.apply(
      recordSet('dns', id, { zoneRef: { name: 'example-com' }, name, type: type as never, records: values }),
    );
  }
  controller.start();
  return {
    pdns,
    resolver,
    store,
    controller,
    applies,
    dir,
    async close() {
      controller.stop();
      factory.close();
      await pdns.stop();
      await resolver.stop();
      await removeAll(dir);
    },
  };
}

/** Waits until the zone is Programmed at a serial above `after` (and returns it). */
async function programmed(r: Rig, after = 0, timeoutMs = 10_000): Promise<number> {
  const { value } = await waitFor(async () => {
    const z = r.store.get('DNSZone', ZONE) as DNSZone | undefined;
    const c = cond(r.store, 'DNSZone', ZONE, 'Programmed');
    return c?.status === 'True' && (z?.status?.serial ?? 0) > after ? z!.status!.serial! : undefined;
  }, timeoutMs);
  return value;
}

async function heldRRsets(pdns: PowerDnsProcess, zoneName = 'example.com.') {
  const r = await pdns.api('GET', `/api/v1/servers/localhost/zones/${zoneName}`);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return (r.body as { rrsets: { name: string; type: string; ttl: number; records: { content: string }[] }[] })
    .rrsets;
}

async function held(pdns: PowerDnsProcess, name: string, type: string): Promise<string[] | undefined> {
  const rrset = (await heldRRsets(pdns)).find((x) => x.name === name && x.type === type);
  return rrset?.records.map((x) => x.content).sort();
}

/**
 * A change made by hand through the API. PowerDNS on SQLite answers 500 ("database is locked") while
 * another request holds the database, so it is tried again (Zonekeeper's own requests are retried
 * with backoff the same way).
 */
async function hand(pdns: PowerDnsProcess, method: string, apiPath: string, body: unknown): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const r = await pdns.api(method, apiPath, body);
    if (r.status === 500 && attempt < 20) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      continue;
    }
    assert.ok(
      r.status === 204 || r.status === 200 || r.status === 201,
      `${method} ${apiPath}: ${r.status} ${JSON.stringify(r.body)}`,
    );
    return;
  }
}

function patch(pdns: PowerDnsProcess, rrsets: unknown[]): Promise<void> {
  return hand(pdns, 'PATCH', '/api/v1/servers/localhost/zones/example.com.', { rrsets });
}

const replace = (name: string, type: string, contents: string[], ttl = 300) => ({
  name,
  type,
  ttl,
  changetype: 'REPLACE',
  records: contents.map((content) => ({ content, disabled: false })),
});

async function digSerial(port: number): Promise<number> {
  const r = await dig(port, 'example.com', 'SOA');
  return Number(rdataOf(r, 'SOA')[0]?.split(' ')[2]);
}

for (const storage of ['lmdb', 'sqlite'] as const) {
  describe(`PowerDNS backend, pdns_server with ${storage === 'lmdb' ? 'LMDB (Datum Cloud settings)' : 'SQLite'}`, async () => {
    const unavailable = await powerDnsAvailable(storage);
    let r: Rig;

    before(async () => {
      if (unavailable) return;
      r = await rig(storage);
    });
    after(async () => {
      await r?.close();
    });

    test('creates the zone with its records in one PATCH; Programmed only at the serial read back', async (t) => {
      if (unavailable) return t.skip(unavailable);
      const serial = await programmed(r);
      const first = r.applies.find((a) => a.stats.created);
      assert.ok(first, 'the zone was created');
      assert.equal(first.stats.patches, 1, 'every RRset in one PATCH');
      assert.equal(first.stats.replaced, 16, 'SOA, apex NS and 14 record sets');
      const zoneInfo = (await r.pdns.api('GET', '/api/v1/servers/localhost/zones/example.com.?rrsets=false'))
        .body as { kind: string; soa_edit_api: string; soa_edit: string; serial: number };
      assert.equal(zoneInfo.kind, 'Native');
      assert.equal(zoneInfo.soa_edit_api, '');
      assert.equal(zoneInfo.soa_edit, '');
      assert.equal(zoneInfo.serial, serial, 'PowerDNS serves exactly the status serial');
      assert.equal(await digSerial(r.pdns.dnsPort), serial);
      assert.deepEqual(await held(r.pdns, 'example.com.', 'NS'), ['ns1.example.com.', 'ns2.example.com.']);
      for (const [name, type, want] of [
        ['www.example.com', 'A', ['192.0.2.10', '192.0.2.11']],
        ['www.example.com', 'AAAA', ['2001:db8::10']],
        ['example.com', 'MX', ['10 mail.example.com.']],
        ['docs.example.com', 'CNAME', ['www.example.com.']],
        ['x.wild.example.com', 'A', ['192.0.2.99']],
        ['example.com', 'CAA', ['0 issue "letsencrypt.org"']],
        ['_sip._tcp.example.com', 'SRV', ['10 60 5060 sip.example.com.']],
        ['_dns.example.com', 'SVCB', ['1 www.example.com. alpn="h2" port=8443 key7="/dns-query{?dns}"']],
      ] as const) {
        const answer = await dig(r.pdns.dnsPort, name, type);
        assert.equal(answer.status, 'NOERROR', answer.raw);
        assert.ok(answer.flags.includes('aa'), `${name} ${type} authoritative`);
        assert.deepEqual(rdataOf(answer, type).sort(), [...want].sort(), `${name} ${type}`);
      }
      const txt = rdataOf(await dig(r.pdns.dnsPort, 'example.com', 'TXT'), 'TXT').sort();
      assert.deepEqual(txt, ['"quote \\" and backslash \\\\ and caf\\195\\169"', '"v=spf1 mx -all"']);
      const owned = (
        await r.pdns.api('GET', `/api/v1/servers/localhost/zones/example.com./metadata/${OWNERSHIP_METADATA}`)
      ).body as { metadata: string[] };
      assert.ok(
        owned.metadata.includes('www A') && owned.metadata.includes('@ ALIAS'),
        JSON.stringify(owned),
      );
      for (const type of ['Accepted', 'Programmed', 'Ready'])
        assert.equal(cond(r.store, 'DNSRecordSet', 'dns/www-a', type)?.status, 'True', type);
    });

    test('ALIAS is answered by PowerDNS through the loopback resolver', async (t) => {
      if (unavailable) return t.skip(unavailable);
      assert.deepEqual(await held(r.pdns, 'example.com.', 'ALIAS'), ['cdn.example.net.']);
      const a = await dig(r.pdns.dnsPort, 'example.com', 'A');
      assert.deepEqual(rdataOf(a, 'A'), ['198.51.100.44'], a.raw);
      const aaaa = await dig(r.pdns.dnsPort, 'example.com', 'AAAA');
      assert.deepEqual(rdataOf(aaaa, 'AAAA'), ['2001:db8::44'], aaaa.raw);
      assert.ok(
        r.resolver.queries.some((q) => q.startsWith('cdn.example.net.')),
        'asked the loopback resolver',
      );
    });

    test('an update and a deletion together: one PATCH, a higher serial, the new answers', async (t) => {
      if (unavailable) return t.skip(unavailable);
      const before = await programmed(r);
      const mark = r.applies.length;
      r.store.apply(
        recordSet('dns', 'www-a', {
          zoneRef: { name: 'example-com' },
          name: 'www',
          type: 'A',
          records: ['192.0.2.12'],
        }),
      );
      r.store.remove('DNSRecordSet', 'dns/mail-a');
      const serial = await programmed(r, before);
      const patches = r.applies.slice(mark).filter((a) => a.stats.patches > 0);
      assert.equal(patches.length, 1, JSON.stringify(r.applies.slice(mark)));
      assert.deepEqual(
        {
          patches: patches[0]!.stats.patches,
          replaced: patches[0]!.stats.replaced,
          deleted: patches[0]!.stats.deleted,
        },
        { patches: 1, replaced: 2, deleted: 1 },
        'www A and the SOA replaced, mail A deleted',
      );
      assert.equal(await digSerial(r.pdns.dnsPort), serial);
      assert.deepEqual(rdataOf(await dig(r.pdns.dnsPort, 'www.example.com', 'A'), 'A'), ['192.0.2.12']);
      assert.equal((await dig(r.pdns.dnsPort, 'mail.example.com', 'A')).status, 'NXDOMAIN');
      await waitFor(async () => (r.store.get('DNSRecordSet', 'dns/mail-a') === undefined ? true : undefined));
    });

    test('RRsets made by hand in PowerDNS are never touched; one in the way is a Conflict, not a 422', async (t) => {
      if (unavailable) return t.skip(unavailable);
      await patch(r.pdns, [
        replace('hand.example.com.', 'A', ['198.51.100.7']),
        replace('taken.example.com.', 'A', ['198.51.100.8']),
        replace('cname.example.com.', 'TXT', ['"hand-made"']),
      ]);
      const before = await programmed(r);
      r.store.apply(
        recordSet('dns', 'taken-a', {
          zoneRef: { name: 'example-com' },
          name: 'taken',
          type: 'A',
          records: ['192.0.2.8'],
        }),
      );
      r.store.apply(
        recordSet('dns', 'cname', {
          zoneRef: { name: 'example-com' },
          name: 'cname',
          type: 'CNAME',
          records: ['www'],
        }),
      );
      r.store.apply(
        recordSet('dns', 'new-a', {
          zoneRef: { name: 'example-com' },
          name: 'new',
          type: 'A',
          records: ['192.0.2.77'],
        }),
      );
      await programmed(r, before);
      const taken = await waitFor(async () => {
        const c = cond(r.store, 'DNSRecordSet', 'dns/taken-a', 'Accepted');
        return c?.reason === 'Conflict' ? c : undefined;
      });
      assert.equal(taken.value.status, 'False');
      assert.match(
        taken.value.message,
        /^backend powerdns: PowerDNS already holds taken\.example\.com\. A \("198\.51\.100\.8"\), which Zonekeeper did not create; delete or rename it in PowerDNS/,
      );
      const cname = cond(r.store, 'DNSRecordSet', 'dns/cname', 'Accepted');
      assert.equal(cname?.reason, 'Conflict');
      assert.match(
        cname?.message ?? '',
        /cname\.example\.com\. TXT .*a CNAME cannot share its name with other data/,
      );
      assert.equal(cond(r.store, 'DNSRecordSet', 'dns/new-a', 'Ready')?.status, 'True');
      assert.equal(cond(r.store, 'DNSZone', ZONE, 'Ready')?.status, 'True', 'the rest of the zone is served');
      assert.deepEqual(await held(r.pdns, 'hand.example.com.', 'A'), ['198.51.100.7']);
      assert.deepEqual(await held(r.pdns, 'taken.example.com.', 'A'), ['198.51.100.8']);
      assert.deepEqual(await held(r.pdns, 'cname.example.com.', 'TXT'), ['"hand-made"']);
      // Removing the hand-made RRset in PowerDNS clears the conflict at the next read-back (resync).
      await patch(r.pdns, [{ name: 'taken.example.com.', type: 'A', changetype: 'DELETE' }]);
      await waitFor(async () =>
        cond(r.store, 'DNSRecordSet', 'dns/taken-a', 'Ready')?.status === 'True' ? true : undefined,
      );
      assert.deepEqual(await held(r.pdns, 'taken.example.com.', 'A'), ['192.0.2.8']);
      // Deleting record sets removes only what is ours.
      r.store.remove('DNSRecordSet', 'dns/taken-a');
      r.store.remove('DNSRecordSet', 'dns/cname');
      await waitFor(async () =>
        (await held(r.pdns, 'taken.example.com.', 'A')) === undefined &&
        r.store.get('DNSRecordSet', 'dns/taken-a') === undefined &&
        r.store.get('DNSRecordSet', 'dns/cname') === undefined
          ? true
          : undefined,
      );
      assert.deepEqual(await held(r.pdns, 'hand.example.com.', 'A'), ['198.51.100.7']);
      assert.deepEqual(await held(r.pdns, 'cname.example.com.', 'TXT'), ['"hand-made"']);
    });

    test('drift behind Zonekeeper’s back is repaired at the next read-back; hand-made RRsets stay', async (t) => {
      if (unavailable) return t.skip(unavailable);
      const serial = await programmed(r);
      // An owned RRset edited, one deleted, the SOA serial rewritten, and a stray RRset marked as ours
      // (as if a crash had left it behind).
      await patch(r.pdns, [
        replace('www.example.com.', 'A', ['203.0.113.66']),
        { name: 'docs.example.com.', type: 'CNAME', changetype: 'DELETE' },
        replace('stray.example.com.', 'A', ['203.0.113.1']),
        replace('example.com.', 'SOA', ['ns1.example.com. hostmaster.example.com. 1 3600 600 1209600 300']),
      ]);
      const metadataPath = `/api/v1/servers/localhost/zones/example.com./metadata/${OWNERSHIP_METADATA}`;
      const owned = (await r.pdns.api('GET', metadataPath)).body as { metadata: string[] };
      await hand(r.pdns, 'PUT', metadataPath, { metadata: [...owned.metadata, 'stray A'] });
      // And the zone's settings: PowerDNS would rewrite the serial with SOA-EDIT-API.
      await hand(r.pdns, 'PUT', '/api/v1/servers/localhost/zones/example.com.', {
        kind: 'Master',
        soa_edit_api: 'DEFAULT',
      });
      await waitFor(async () => {
        const www = rdataOf(await dig(r.pdns.dnsPort, 'www.example.com', 'A'), 'A');
        const docs = await dig(r.pdns.dnsPort, 'docs.example.com', 'CNAME');
        const stray = await dig(r.pdns.dnsPort, 'stray.example.com', 'A');
        return www[0] === '192.0.2.12' && rdataOf(docs, 'CNAME').length === 1 && stray.status === 'NXDOMAIN'
          ? true
          : undefined;
      }, 8000);
      const now = (r.store.get('DNSZone', ZONE) as DNSZone).status?.serial;
      assert.equal(now, serial, 'repair needs no new serial');
      await waitFor(async () => ((await digSerial(r.pdns.dnsPort)) === serial ? true : undefined));
      await waitFor(async () => {
        const info = (await r.pdns.api('GET', '/api/v1/servers/localhost/zones/example.com.?rrsets=false'))
          .body as { kind: string; soa_edit_api: string };
        return info.kind === 'Native' && info.soa_edit_api === '' ? true : undefined;
      });
      assert.deepEqual(await held(r.pdns, 'hand.example.com.', 'A'), ['198.51.100.7']);
    });

    test('PowerDNS stopped mid-change: BackendUnreachable, nothing lost, applied when it is back', async (t) => {
      if (unavailable) return t.skip(unavailable);
      const before = await programmed(r);
      await r.pdns.halt();
      r.store.apply(
        recordSet('dns', 'outage-a', {
          zoneRef: { name: 'example-com' },
          name: 'outage',
          type: 'A',
          records: ['192.0.2.200'],
        }),
      );
      const down = await waitFor(async () => {
        const c = cond(r.store, 'DNSZone', ZONE, 'Programmed');
        return c?.status === 'False' && c.reason === 'BackendUnreachable' ? c : undefined;
      });
      // Refused, or reset when the stop caught a request in flight.
      assert.match(
        down.value.message,
        /cannot reach PowerDNS at http:\/\/127\.0\.0\.1:\d+ .*\((ECONNREFUSED|ECONNRESET)\)/,
      );
      assert.equal(cond(r.store, 'DNSRecordSet', 'dns/outage-a', 'Programmed')?.status, 'False');
      await new Promise((resolve) => setTimeout(resolve, 300));
      await r.pdns.start();
      const serial = await programmed(r, before, 15_000);
      assert.deepEqual(rdataOf(await dig(r.pdns.dnsPort, 'outage.example.com', 'A'), 'A'), ['192.0.2.200']);
      assert.equal(await digSerial(r.pdns.dnsPort), serial);
      await waitFor(async () =>
        cond(r.store, 'DNSRecordSet', 'dns/outage-a', 'Ready')?.status === 'True' ? true : undefined,
      );
    });

    test('a zone that existed before Zonekeeper took it over survives deleting its DNSZone: only Zonekeeper’s RRsets and keys go', async (t) => {
      if (unavailable) return t.skip(unavailable);
      const api = (method: string, rest = '', body?: unknown) =>
        r.pdns.api(method, `/api/v1/servers/localhost/zones/taken.example.${rest}`, body);
      const meta = async (kind: string) =>
        ((await api('GET', `/metadata/${kind}`)).body as { metadata?: string[] } | undefined)?.metadata ?? [];
      // Made by hand (or by another tool) before any DNSZone names it.
      await hand(r.pdns, 'POST', '/api/v1/servers/localhost/zones', {
        name: 'taken.example.',
        kind: 'Native',
        nameservers: ['ns.hand.example.'],
        rrsets: [
          replace('hand.taken.example.', 'A', ['198.51.100.70']),
          replace('taken.example.', 'TXT', ['"hand-made"']),
        ],
      });
      // LMDB always signs; the SQLite rig has DNSSEC off in its backend.
      const signed = storage === 'lmdb';
      r.store.apply(
        zone('dns', 'taken', 'taken.example', {
          className: 'powerdns',
          ...(signed ? { dnssec: { enabled: true } } : {}),
        }),
      );
      r.store.apply(
        recordSet('dns', 'taken-www', {
          zoneRef: { name: 'taken' },
          name: 'www',
          type: 'A',
          records: ['192.0.2.70'],
        }),
      );
      await waitFor(async () =>
        cond(r.store, 'DNSRecordSet', 'dns/taken-www', 'Ready')?.status === 'True' &&
        cond(r.store, 'DNSZone', 'dns/taken', 'Ready')?.status === 'True'
          ? true
          : undefined,
      );
      assert.deepEqual(await meta(CREATED_METADATA), [], 'not marked as created');
      if (signed) {
        const keys = (await api('GET', '/cryptokeys')).body as unknown[];
        assert.equal(keys.length, 1, 'Zonekeeper signed the zone with its own key');
      }
      r.store.remove('DNSZone', 'dns/taken');
      await waitFor(
        async () => (r.store.get('DNSZone', 'dns/taken') === undefined ? true : undefined),
        15_000,
      );
      const info = await api('GET');
      assert.equal(info.status, 200, 'the zone is still there');
      const rrsets = (
        info.body as { rrsets: { name: string; type: string; records: { content: string }[] }[] }
      ).rrsets;
      const find = (name: string, type: string) =>
        rrsets.find((x) => x.name === name && x.type === type)?.records.map((x) => x.content);
      assert.deepEqual(find('hand.taken.example.', 'A'), ['198.51.100.70'], 'foreign RRset kept');
      assert.deepEqual(find('taken.example.', 'TXT'), ['"hand-made"'], 'foreign RRset kept');
      assert.equal(find('www.taken.example.', 'A'), undefined, 'Zonekeeper’s RRset removed');
      assert.deepEqual(await meta(OWNERSHIP_METADATA), [], 'the ownership list is gone');
      assert.deepEqual(await meta(DNSSEC_METADATA), [], 'the DNSSEC mark is gone');
      assert.deepEqual((await api('GET', '/cryptokeys')).body, [], 'Zonekeeper’s key removed');
      const answer = await dig(r.pdns.dnsPort, 'hand.taken.example', 'A');
      assert.deepEqual(rdataOf(answer, 'A'), ['198.51.100.70'], 'PowerDNS still serves the zone');
    });

    test('deleting the DNSZone deletes the zone; the finalizer holds until PowerDNS confirms', async (t) => {
      if (unavailable) return t.skip(unavailable);
      await programmed(r);
      const mark = await r.pdns.api(
        'GET',
        `/api/v1/servers/localhost/zones/example.com./metadata/${CREATED_METADATA}`,
      );
      assert.deepEqual((mark.body as { metadata?: string[] }).metadata, ['1'], 'Zonekeeper created it');
      await r.pdns.halt();
      r.store.remove('DNSZone', ZONE);
      await new Promise((resolve) => setTimeout(resolve, 400));
      const held = r.store.get('DNSZone', ZONE) as DNSZone | undefined;
      assert.ok(
        held?.metadata.deletionTimestamp,
        'still there, held by the finalizer while PowerDNS is down',
      );
      await r.pdns.start();
      await waitFor(async () => (r.store.get('DNSZone', ZONE) === undefined ? true : undefined), 15_000);
      assert.equal((await r.pdns.api('GET', '/api/v1/servers/localhost/zones/example.com.')).status, 404);
      assert.equal((await dig(r.pdns.dnsPort, 'www.example.com', 'A')).status, 'REFUSED');
    });
  });
}

/**
 * Status, AA and the three sections of a response, order normalised, for comparison. With
 * `additional: false` the additional section is left out (see ADDITIONAL_FROM_OTHER_ZONES).
 */
function shape(result: DigResult, additional = true): string {
  const norm = (lines: string[]) =>
    lines
      .map((l) => {
        const f = l.split(' ');
        return [f[0]!.toLowerCase(), f[1], f[2], f[3], ...f.slice(4)].join(' ');
      })
      .sort();
  return JSON.stringify({
    status: result.status,
    aa: result.flags.includes('aa'),
    answer: norm(result.answer),
    authority: norm(result.authority),
    ...(additional ? { additional: norm(result.additional) } : {}),
  });
}

/**
 * Where Zonekeeper adds addresses from another zone it serves and PowerDNS only from the zone of the
 * answer: the NS of the child zone sub.example.com, whose hosts live in example.com. Both follow
 * RFC 1034 §4.3.2 step 6 (additional data is optional); PowerDNS's must be a subset of ours.
 */
const ADDITIONAL_FROM_OTHER_ZONES = new Set(['sub.example.com NS']);

describe('zonekeeper serve programming PowerDNS answers like zonekeeper serve itself (the examples)', async () => {
  const unavailable = await powerDnsAvailable('lmdb');
  let pdns: PowerDnsProcess;
  let resolver: StubResolver;
  let own: ServeProcess;
  let programmer: ServeProcess;
  const dirs: string[] = [];

  before(async () => {
    if (unavailable) return;
    // The ALIAS target of the examples as a resolver would give it fresh from the zone (TTL 300); the
    // built-in server resolves it from its own copy of the zone.
    resolver = await startStubResolver(
      { 'www.example.com': { A: ['192.0.2.10', '192.0.2.11'], AAAA: ['2001:db8::10'] } },
      { ttl: 300 },
    );
    pdns = await startPowerDns({ storage: 'lmdb', resolver: resolver.address });
    const examples = await tempDir('examples');
    const viaPdns = await tempDir('examples-pdns');
    const states = [await tempDir('state'), await tempDir('state')];
    dirs.push(examples, viaPdns, ...states);
    await cp(path.join(ROOT, 'examples'), examples, { recursive: true });
    await cp(path.join(ROOT, 'examples'), viaPdns, { recursive: true });
    // Same manifests; the class named "builtin" now programs PowerDNS, with the API key from a file.
    const keyFile = path.join(viaPdns, '..', `${path.basename(viaPdns)}.key`);
    await writeFile(keyFile, pdns.apiKey);
    dirs.push(keyFile);
    const classFile = path.join(viaPdns, '00-builtin-class.yaml');
    const text = await readFile(classFile, 'utf8');
    await writeFile(
      classFile,
      text.replace(
        /backend:\n\s+builtin: \{\}/,
        `backend:\n    powerdns:\n      url: ${pdns.apiUrl}\n      apiKeySecretRef: { file: ${JSON.stringify(keyFile)} }`,
      ),
    );
    [own, programmer] = await Promise.all([
      startServe(examples, states[0]!),
      startServe(viaPdns, states[1]!),
    ]);
  });
  after(async () => {
    await Promise.all([own?.stop(), programmer?.stop()]);
    await pdns?.stop();
    await resolver?.stop();
    await removeAll(...dirs);
  });

  test('every zone Ready through PowerDNS; dig gives the same answers from both', async (t) => {
    if (unavailable) return t.skip(unavailable);
    const zones = await waitFor(async () => {
      const body = (await (await fetch(`${programmer.httpUrl}/api/v1/resources`)).json()) as {
        items: Resource[];
      };
      const list = body.items.filter((o): o is DNSZone => o.kind === 'DNSZone');
      const ready = list.every((z) =>
        z.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
      );
      return list.length > 0 && ready ? list : undefined;
    }, 15_000);
    assert.ok(programmer.log().includes('powerdns: zone example.com. programmed'), programmer.log());
    const classes = (await (await fetch(`${programmer.httpUrl}/api/v1/resources`)).json()) as {
      items: Resource[];
    };
    const zoneClass = classes.items.find((o): o is DNSZoneClass => o.kind === 'DNSZoneClass');
    assert.match(
      zoneClass?.status?.conditions?.[0]?.message ?? '',
      /PowerDNS authoritative 4\.\d+\.\d+ at http/,
    );
    assert.doesNotMatch(programmer.log(), new RegExp(pdns.apiKey), 'the API key is never logged');
    const queries: [string, string][] = [
      ['example.com', 'SOA'],
      ['example.com', 'NS'],
      ['example.com', 'A'],
      ['example.com', 'AAAA'],
      ['example.com', 'MX'],
      ['example.com', 'TXT'],
      ['example.com', 'CAA'],
      ['example.com', 'HTTPS'],
      ['www.example.com', 'A'],
      ['www.example.com', 'AAAA'],
      ['www.example.com', 'SSHFP'],
      ['docs.example.com', 'CNAME'],
      ['_sip._tcp.example.com', 'SRV'],
      ['sip.example.com', 'NAPTR'],
      ['_443._tcp.www.example.com', 'TLSA'],
      ['_dns.example.com', 'SVCB'],
      ['anything.wild.example.com', 'A'],
      ['mail.example.com', 'A'],
      ['api.example.com', 'A'],
      ['shop.apps.example.com', 'CNAME'],
      ['missing.example.com', 'A'],
      ['www.example.com', 'TXT'],
      ['10.2.0.192.in-addr.arpa', 'PTR'],
      ['www.sub.example.com', 'A'],
      ['sub.example.com', 'SOA'],
      ['sub.example.com', 'NS'],
      ['legacy.example.com', 'DS'],
      ['legacy.example.com', 'NS'],
      ['host.legacy.example.com', 'A'],
      ['ns1.example.com', 'A'],
      ['wild.example.com', 'A'],
      ['example.com', 'SSHFP'],
    ];
    const differences: string[] = [];
    for (const [name, type] of queries) {
      const [a, b] = await Promise.all([dig(own.dnsPort, name, type), dig(pdns.dnsPort, name, type)]);
      const full = !ADDITIONAL_FROM_OTHER_ZONES.has(`${name} ${type}`);
      if (!full)
        assert.ok(
          b.additional.every((line) => a.additional.includes(line)),
          `${name} ${type}: ${b.raw}`,
        );
      if (shape(a, full) !== shape(b, full))
        differences.push(`${name} ${type}\n  zonekeeper: ${shape(a)}\n  powerdns:   ${shape(b)}`);
    }
    assert.deepEqual(differences, [], `${zones.value.length} zones`);
  });
});
