/**
 * PowerDnsBackend against a small in-memory stand-in for the PowerDNS API, for what a real
 * pdns_server cannot be made to do on demand: refuse a spelling, refuse a record, take requests in a
 * known order. test/powerdns.test.ts runs the real thing.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { parseRdata } from '../../dns/rdata.ts';
import type { RecordTypeName } from '../../dns/rrtype.ts';
import type { RRset } from '../../zones/rrset.ts';
import type { ProgrammedZone } from '../backend.ts';
import { DNSSEC_METADATA } from './dnssec.ts';
import {
  type ApplyStats,
  CREATED_METADATA,
  OWNERSHIP_METADATA,
  PowerDnsBackend,
} from './powerdns-backend.ts';

interface FakeRRset {
  name: string;
  type: string;
  ttl: number;
  records: { content: string; disabled: boolean }[];
}

/** Zones, metadata and a request log; `refuse` decides a 422 for a PATCH entry. */
function fakePowerDns(refuse: (rr: FakeRRset) => string | undefined = () => undefined) {
  const zones = new Map<string, { kind: string; rrsets: FakeRRset[]; metadata: Map<string, string[]> }>();
  const log: string[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      const url = new URL(req.url!, 'http://x');
      const m = /^\/api\/v1\/servers\/localhost(?:\/zones(?:\/([^/]+))?(?:\/metadata\/(.+))?)?$/.exec(
        url.pathname,
      );
      const send = (status: number, value?: unknown) => {
        res.writeHead(status, { 'Content-Type': 'application/json' });
        res.end(value === undefined ? '' : JSON.stringify(value));
      };
      if (req.headers['x-api-key'] !== 'key') return send(401, { error: 'Unauthorized' });
      const id = m?.[1] ? decodeURIComponent(m[1]) : undefined;
      const kind = m?.[2];
      const input = body === '' ? undefined : JSON.parse(body);
      log.push(
        `${req.method} ${id ?? ''}${kind ? ` ${kind}` : ''}${req.method === 'PATCH' ? ` ${input.rrsets.length}` : ''}`,
      );
      const zone = id ? zones.get(id) : undefined;
      if (!m) return send(404, { error: 'Not Found' });
      if (id === undefined && req.method === 'POST') {
        if (zones.has(input.name)) return send(409, { error: 'Conflict' });
        const rrsets: FakeRRset[] = [...input.rrsets];
        rrsets.push({
          name: input.name,
          type: 'NS',
          ttl: 3600,
          records: input.nameservers.map((content: string) => ({ content, disabled: false })),
        });
        zones.set(input.name, { kind: input.kind, rrsets, metadata: new Map() });
        return send(201, {
          id: input.name,
          name: input.name,
          kind: input.kind,
          soa_edit_api: '',
          soa_edit: '',
          rrsets,
        });
      }
      if (id === undefined) return send(200, { version: 'fake' });
      if (!zone) return send(404, { error: 'Not Found' });
      if (kind !== undefined) {
        // Per kind, as PowerDNS keeps it; a kind never set reads as an empty list.
        if (req.method === 'GET') return send(200, { kind, metadata: zone.metadata.get(kind) ?? [] });
        if (req.method === 'PUT') {
          zone.metadata.set(kind, input.metadata);
          return send(200, { kind, metadata: input.metadata });
        }
        if (req.method === 'DELETE') {
          zone.metadata.delete(kind);
          return send(200, {});
        }
      }
      if (req.method === 'GET') {
        const name = url.searchParams.get('rrset_name');
        const type = url.searchParams.get('rrset_type');
        const rrsets = zone.rrsets.filter((r) => (!name || r.name === name) && (!type || r.type === type));
        return send(200, { id, name: id, kind: zone.kind, soa_edit_api: '', soa_edit: '', rrsets });
      }
      if (req.method === 'DELETE') {
        zones.delete(id!);
        return send(204);
      }
      if (req.method === 'PATCH') {
        for (const change of input.rrsets) {
          const error = change.changetype === 'REPLACE' ? refuse(change) : undefined;
          if (error) return send(422, { error });
        }
        for (const change of input.rrsets) {
          zone.rrsets = zone.rrsets.filter((r) => !(r.name === change.name && r.type === change.type));
          if (change.changetype === 'REPLACE')
            zone.rrsets.push({
              name: change.name,
              type: change.type,
              ttl: change.ttl,
              records: change.records,
            });
        }
        return send(204);
      }
      send(405, { error: 'Method not allowed' });
    });
  });
  return {
    zones,
    log,
    async start(): Promise<string> {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const origin = 'example.com.';

function rrset(owner: string, type: RecordTypeName, records: string[], name = owner.split('.')[0]!): RRset {
  return {
    owner,
    type,
    ttl: 300,
    rdata: records.map((r) => parseRdata(type, r, origin)),
    origin: { kind: 'recordSet', namespace: 'dns', name },
  };
}

function programmed(serial: number, rrsets: RRset[]): ProgrammedZone {
  return {
    key: 'dns/example-com',
    origin,
    serial,
    soa: {
      ttl: 300,
      mname: 'ns1.example.com.',
      rname: 'hostmaster.example.com.',
      refresh: 3600,
      retry: 600,
      expire: 1209600,
      minimum: 300,
    },
    rrsets: () => [rrset(origin, 'NS', ['ns1.example.com.', 'ns2.example.com.'], 'apex'), ...rrsets],
  };
}

async function withBackend(
  fake: ReturnType<typeof fakePowerDns>,
  run: (backend: PowerDnsBackend, stats: ApplyStats[]) => Promise<void>,
  maxPatchBytes?: number,
) {
  const url = await fake.start();
  const stats: ApplyStats[] = [];
  const backend = new PowerDnsBackend({
    settings: { url, apiKeySecretRef: { env: 'PDNS_KEY' } },
    secrets: async () => 'key',
    onApply: (_o, s) => stats.push(s),
    ...(maxPatchBytes !== undefined ? { maxPatchBytes } : {}),
  });
  try {
    await run(backend, stats);
  } finally {
    backend.close();
    await fake.stop();
  }
}

describe('PowerDnsBackend (against a stand-in API)', () => {
  test('creates, claims before it patches, then one PATCH; the serial is read back', async () => {
    const fake = fakePowerDns();
    await withBackend(fake, async (backend, stats) => {
      const result = await backend.applyZone(programmed(7, [rrset('www.example.com.', 'A', ['192.0.2.1'])]));
      assert.deepEqual(result, {});
      assert.deepEqual(fake.log, [
        'GET example.com.',
        `GET example.com. ${OWNERSHIP_METADATA}`,
        'POST ',
        // Created here (201): marked as Zonekeeper's, so deleting the DNSZone deletes it.
        `PUT example.com. ${CREATED_METADATA}`,
        `PUT example.com. ${OWNERSHIP_METADATA}`,
        'PATCH example.com. 3',
        // The first apply of a zone checks whether Zonekeeper signs it (later ones reuse what it found).
        `GET example.com. ${DNSSEC_METADATA}`,
      ]);
      assert.deepEqual(fake.zones.get(origin)!.metadata.get('X-ZONEKEEPER-RRSETS') ?? [], ['www A']);
      assert.deepEqual(stats[0], {
        created: true,
        replaced: 3,
        deleted: 0,
        unchanged: 0,
        patches: 1,
        requests: 7,
      });
      assert.equal(await backend.servedSerial(origin), 7);
      // Again: nothing to send.
      fake.log.length = 0;
      await backend.applyZone(programmed(7, [rrset('www.example.com.', 'A', ['192.0.2.1'])]));
      assert.deepEqual(fake.log, ['GET example.com.', `GET example.com. ${OWNERSHIP_METADATA}`]);
      // A deletion: PATCH first, then the entry goes.
      fake.log.length = 0;
      await backend.applyZone(programmed(8, []));
      assert.deepEqual(fake.log, [
        'GET example.com.',
        `GET example.com. ${OWNERSHIP_METADATA}`,
        'PATCH example.com. 2',
        `PUT example.com. ${OWNERSHIP_METADATA}`,
      ]);
      assert.deepEqual(fake.zones.get(origin)!.metadata.get('X-ZONEKEEPER-RRSETS') ?? [], []);
      // The controller's follow-up apply of the same serial with nothing changed (to hash the zone):
      // the read-back of a moment ago stands; only servedSerial reads again.
      fake.log.length = 0;
      await backend.applyZone({ ...programmed(8, []), delta: { fromSerial: 8, upserts: [], deletes: [] } });
      assert.deepEqual(fake.log, []);
      await backend.deleteZone(origin);
      assert.equal(await backend.servedSerial(origin), undefined);
      await backend.deleteZone(origin); // gone already: fine
    });
  });

  test('PowerDNS spelling a content its own way: learned, re-sent, remembered', async () => {
    // As PowerDNS 4.7 does for SVCB ("alpn=h2" not "alpn=\"h2\""); here a made-up rule for MX.
    const fake = fakePowerDns((rr) =>
      rr.type === 'MX' && rr.records[0]!.content === '10 mail.example.com.'
        ? `Record ${rr.name}/MX '10 mail.example.com.': Not in expected format (parsed as '10 MAIL.example.com.')`
        : undefined,
    );
    await withBackend(fake, async (backend) => {
      const result = await backend.applyZone(programmed(1, [rrset(origin, 'MX', ['10 mail'])]));
      assert.deepEqual(result, {});
      const mx = fake.zones.get(origin)!.rrsets.find((r) => r.type === 'MX')!;
      assert.equal(mx.records[0]!.content, '10 MAIL.example.com.');
      fake.log.length = 0;
      await backend.applyZone(
        programmed(2, [rrset(origin, 'MX', ['10 mail']), rrset('a.example.com.', 'A', ['192.0.2.9'])]),
      );
      assert.equal(fake.log.filter((l) => l.startsWith('PATCH')).length, 1, 'the spelling is remembered');
    });
  });

  test('a record PowerDNS refuses is left out and reported; the rest is programmed', async () => {
    const fake = fakePowerDns((rr) =>
      rr.name === 'bad.example.com.'
        ? `Record bad.example.com./TXT '"x"': Parsing record content (try 'pdnsutil check-zone'): too odd`
        : undefined,
    );
    await withBackend(fake, async (backend) => {
      const result = await backend.applyZone(
        programmed(1, [
          rrset('bad.example.com.', 'TXT', ['"x"']),
          rrset('good.example.com.', 'A', ['192.0.2.1']),
        ]),
      );
      assert.equal(result.problems?.length, 1);
      const p = result.problems![0]!;
      assert.equal(p.reason, 'BackendRejected');
      assert.deepEqual(p.origin, { kind: 'recordSet', namespace: 'dns', name: 'bad' });
      assert.match(p.message, /PowerDNS refused bad\.example\.com\. TXT: Parsing record content .*too odd/);
      const names = fake.zones
        .get(origin)!
        .rrsets.map((r) => `${r.name} ${r.type}`)
        .sort();
      assert.deepEqual(names, ['example.com. NS', 'example.com. SOA', 'good.example.com. A']);
      assert.deepEqual(
        fake.zones.get(origin)!.metadata.get('X-ZONEKEEPER-RRSETS') ?? [],
        ['good A'],
        'no entry for what was not created',
      );
      assert.equal(await backend.servedSerial(origin), 1);
    });
  });

  test('a 422 about nothing in particular fails the apply with PowerDNS words', async () => {
    const fake = fakePowerDns(() => 'Zone is locked for maintenance');
    await withBackend(fake, async (backend) => {
      await assert.rejects(
        backend.applyZone(programmed(1, [])),
        (e: Error & { code?: string; reason?: string }) => {
          assert.equal(e.code, 'PDNS_UNPROCESSABLE');
          assert.equal(e.reason, 'BackendRejected');
          assert.match(e.message, /rejected PATCH zone example\.com\.: Zone is locked for maintenance/);
          return true;
        },
      );
    });
  });

  test('a change over the body limit is split; the SOA comes in the last PATCH', async () => {
    const fake = fakePowerDns();
    await withBackend(
      fake,
      async (backend, stats) => {
        const many = Array.from({ length: 60 }, (_, i) => rrset(`h${i}.example.com.`, 'A', [`192.0.2.${i}`]));
        await backend.applyZone(programmed(3, many));
        assert.ok(stats[0]!.patches > 1, `${stats[0]!.patches} PATCHes`);
        assert.equal(fake.zones.get(origin)!.rrsets.length, 62);
        assert.equal(await backend.servedSerial(origin), 3);
      },
      2000,
    );
  });

  test('health names the server and version; a wrong key is a clear error', async () => {
    const fake = fakePowerDns();
    const url = await fake.start();
    const backend = new PowerDnsBackend({
      settings: { url, apiKeySecretRef: { env: 'PDNS_KEY' }, resyncSeconds: 30 },
      secrets: async () => 'wrong',
    });
    try {
      assert.equal(backend.resyncIntervalMs, 30_000);
      await assert.rejects(backend.health(), /refused the API key/);
      backend.configure({ url, apiKeySecretRef: { env: 'PDNS_KEY' } });
      assert.equal(backend.resyncIntervalMs, 300_000);
    } finally {
      backend.close();
      await fake.stop();
    }
  });
});
