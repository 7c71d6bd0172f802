/**
 * The ExternalDNS webhook backend beyond the contract kit, against ExternalDNS's own code
 * (test/gotools): ownership isolation both ways with a real ExternalDNS instance (its webhook client,
 * TXT registry and planner, owner ID "other") writing into the same in-memory provider; the
 * provider's domain filter and the record types it can hold; and a hostile provider — a proxy in
 * front of the real one answering garbage, oversize or slow answers, and 5xx — where nothing may be
 * reported Programmed that the provider does not hold.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { type Backend, BackendError, type ProgrammedZone, readBack } from '../src/backends/backend.ts';
import { rrset } from '../src/backends/contract/kit.ts';
import { ExternalDnsWebhookBackend } from '../src/backends/externaldns-webhook/webhook-backend.ts';
import type { RRset } from '../src/zones/rrset.ts';
import { heldZone, isRegistryRecord } from './support/externaldns-held.ts';
import {
  externalDnsOwner,
  type InMemoryWebhook,
  startInMemoryWebhook,
} from './support/externaldns-webhook.ts';

const SOA = {
  ttl: 300,
  mname: 'ns1.example.org.',
  rname: 'hostmaster.example.org.',
  refresh: 3600,
  retry: 600,
  expire: 604800,
  minimum: 300,
};

function zoneOf(origin: string, serial: number, rrsets: RRset[]): ProgrammedZone {
  return { key: `test/${origin}`, origin, soa: SOA, serial, rrsets: () => rrsets };
}

function backendFor(
  url: string,
  extra: { maxResponseBytes?: number; timeoutSeconds?: number } = {},
): Backend {
  return new ExternalDnsWebhookBackend({
    settings: { url, timeoutSeconds: extra.timeoutSeconds ?? 5 },
    backoffMs: 50,
    ...(extra.maxResponseBytes !== undefined ? { maxResponseBytes: extra.maxResponseBytes } : {}),
  });
}

async function applied(backend: Backend, zone: ProgrammedZone) {
  const result = (await backend.applyZone(zone)) ?? {};
  return { problems: result.problems ?? [], read: await readBack(backend, zone) };
}

const problemsOf = (p: readonly { owner: string; type: string; reason: string }[]) =>
  p.map((x) => `${x.owner} ${x.type} ${x.reason}`).sort();

describe('ownership: Zonekeeper and an ExternalDNS instance with another owner ID share one provider', () => {
  let provider: InMemoryWebhook;
  let backend: Backend;
  const origin = 'zk.example.org.';
  const other = (desired: { name: string; type: string; targets: string[] }[]) =>
    externalDnsOwner({ url: provider.url, owner: 'other', domain: 'example.org', desired });

  before(async () => {
    provider = await startInMemoryWebhook({ zones: ['example.org'] });
    backend = backendFor(provider.url);
  });
  after(async () => {
    await provider?.stop();
  });

  test('neither takes, changes or deletes the records the other owns', async () => {
    // ExternalDNS owns app.zk.example.org before Zonekeeper programs the zone.
    const first = await other([
      { name: 'app.zk.example.org', type: 'A', targets: ['198.51.100.1'] },
      { name: 'svc.example.org', type: 'CNAME', targets: ['lb.example.net'] },
    ]);
    assert.equal(first.create, 2);
    const v1 = [
      rrset(origin, '@', 'NS', ['ns1.example.org.']),
      rrset(origin, 'www', 'A', ['192.0.2.1']),
      rrset(origin, 'api', 'AAAA', ['2001:db8::1']),
      rrset(origin, 'app', 'A', ['192.0.2.99']),
      rrset(origin, '@', 'TXT', ['"v=spf1 -all"']),
    ];
    const one = await applied(backend, zoneOf(origin, 1, v1));
    assert.deepEqual(problemsOf(one.problems), ['app.zk.example.org. A Conflict']);
    assert.match(one.problems[0]!.message, /owned by ExternalDNS owner "other"/);
    assert.ok(one.read.programmed, one.read.message);
    let held = heldZone(origin, await provider.records())!;
    assert.deepEqual(
      held.rrsets.get('app.zk.example.org. A'),
      ['198.51.100.1'],
      "ExternalDNS's record is untouched",
    );
    assert.deepEqual(held.rrsets.get('www.zk.example.org. A'), ['192.0.2.1']);

    // ExternalDNS's next reconciliation (policy sync over all of example.org) wants www too, and no
    // longer has svc: it sees www owned by "zonekeeper" and leaves it; it deletes only its own.
    const second = await other([
      { name: 'app.zk.example.org', type: 'A', targets: ['198.51.100.2'] },
      { name: 'www.zk.example.org', type: 'A', targets: ['198.51.100.3'] },
    ]);
    const owners = Object.fromEntries(
      second.records.map((r) => [`${r.name} ${r.type}`, `${r.owner} ${r.targets}`]),
    );
    assert.equal(owners['www.zk.example.org A'], 'zonekeeper 192.0.2.1', 'Zonekeeper keeps its record');
    assert.equal(owners['api.zk.example.org AAAA'], 'zonekeeper 2001:db8::1');
    assert.equal(owners['app.zk.example.org A'], 'other 198.51.100.2', 'ExternalDNS updates its own');
    assert.equal(owners['svc.example.org CNAME'], undefined, 'and deletes its own');
    held = heldZone(origin, await provider.records())!;
    assert.deepEqual(held.rrsets.get('www.zk.example.org. A'), ['192.0.2.1']);

    // Zonekeeper's zone, unchanged, is still served; its change to www goes through.
    const v2 = v1.map((r) =>
      r.type === 'A' && r.owner.startsWith('www') ? rrset(origin, 'www', 'A', ['192.0.2.2']) : r,
    );
    // plan --live first: the change to its own www, ExternalDNS's app as not owned, nothing else.
    const live = await backend.liveDiff!(zoneOf(origin, 2, v2));
    assert.deepEqual(
      live.change.map((c) => `${c.owner} ${c.type} ${c.before.records} -> ${c.after.records}`),
      ['www.zk.example.org. A 192.0.2.1 -> 192.0.2.2'],
    );
    assert.deepEqual(live.add, []);
    assert.deepEqual(live.delete, []);
    assert.deepEqual(
      live.notOwned.map((r) => `${r.owner} ${r.type}`),
      ['app.zk.example.org. A'],
    );
    assert.deepEqual(problemsOf(live.problems), ['app.zk.example.org. A Conflict']);
    const two = await applied(backend, zoneOf(origin, 2, v2));
    assert.deepEqual(problemsOf(two.problems), ['app.zk.example.org. A Conflict']);
    assert.ok(two.read.programmed, two.read.message);

    // Zonekeeper deletes its zone: ExternalDNS's record under it stays, with its ownership record.
    await backend.deleteZone(origin);
    const listing = await provider.records();
    assert.deepEqual(
      heldZone(origin, listing)?.rrsets,
      new Map([['app.zk.example.org. A', ['198.51.100.2']]]),
    );
    assert.deepEqual(
      listing.filter(isRegistryRecord).map((e) => `${e.dnsName} ${e.targets}`),
      ['a-app.zk.example.org "heritage=external-dns,external-dns/owner=other"'],
      "only ExternalDNS's ownership record is left",
    );
    // And ExternalDNS, now free to, takes www.
    const third = await other([{ name: 'www.zk.example.org', type: 'A', targets: ['198.51.100.3'] }]);
    assert.ok(third.records.some((r) => r.name === 'www.zk.example.org' && r.owner === 'other'));
  });
});

describe("the provider's domain filter and the record types it can hold", () => {
  let provider: InMemoryWebhook;
  let backend: Backend;

  before(async () => {
    provider = await startInMemoryWebhook({
      zones: ['example.org'],
      domainFilter: ['example.org'],
      exclude: ['int.filtered.example.org'],
      types: ['A', 'AAAA', 'CNAME', 'TXT'],
    });
    backend = backendFor(provider.url);
  });
  after(async () => {
    await provider?.stop();
  });

  test('a zone outside the filter is refused whole and nothing is written', async () => {
    const origin = 'elsewhere.test.';
    await assert.rejects(
      backend.applyZone(zoneOf(origin, 1, [rrset(origin, 'www', 'A', ['192.0.2.1'])])),
      (e) => {
        assert.ok(e instanceof BackendError);
        assert.equal(e.code, 'OUTSIDE_DOMAIN_FILTER');
        assert.match(
          e.message,
          /outside the provider's domain filter \(include example\.org; exclude int\.filtered\.example\.org\)/,
        );
        return true;
      },
    );
    assert.deepEqual(await provider.records(), []);
  });

  test('excluded names and types the provider drops are reported per record set; the rest is programmed', async () => {
    const origin = 'filtered.example.org.';
    const rrsets = [
      rrset(origin, 'www', 'A', ['192.0.2.1']),
      rrset(origin, 'int', 'A', ['192.0.2.2']),
      rrset(origin, '@', 'MX', ['10 mail.example.org.']),
      rrset(origin, '@', 'CAA', ['0 issue "ca.example"']),
    ];
    const { problems, read } = await applied(backend, zoneOf(origin, 1, rrsets));
    assert.deepEqual(problemsOf(problems), [
      'filtered.example.org. CAA BackendRejected',
      'filtered.example.org. MX BackendRejected',
      'int.filtered.example.org. A BackendRejected',
    ]);
    const byType = Object.fromEntries(problems.map((p) => [p.type, p.message]));
    assert.match(byType.MX!, /dropped the endpoint in \/adjustendpoints/);
    assert.match(byType.CAA!, /no CAA records/);
    assert.ok(read.programmed, read.message);
    assert.deepEqual(
      heldZone(origin, await provider.records())?.rrsets,
      new Map([['www.filtered.example.org. A', ['192.0.2.1']]]),
    );
  });
});

/** A proxy in front of the real provider that can answer in hostile ways. */
type Mode =
  | 'pass'
  | 'garbage-records'
  | 'wrong-content-type'
  | 'oversize-records'
  | 'slow-records'
  | 'post-503'
  | 'post-503-once'
  | 'post-400'
  | 'refuse-name';

describe('a hostile or failing provider: bounded, timed out, retried, never reported Programmed', () => {
  let provider: InMemoryWebhook;
  let proxy: http.Server;
  let url: string;
  let mode: Mode = 'pass';
  let posts = 0;
  let oversizeSent = 0;
  const origin = 'hostile.example.org.';
  const zone1 = zoneOf(origin, 1, [rrset(origin, 'www', 'A', ['192.0.2.1'])]);
  const zone2 = zoneOf(origin, 2, [rrset(origin, 'www', 'A', ['192.0.2.2'])]);

  before(async () => {
    provider = await startInMemoryWebhook({ zones: ['example.org'] });
    proxy = http.createServer(async (req, res) => {
      const body = await new Promise<Buffer>((resolve) => {
        const chunks: Buffer[] = [];
        req.on('data', (c) => chunks.push(c));
        req.on('end', () => resolve(Buffer.concat(chunks)));
      });
      const records = req.url === '/records';
      if (records && req.method === 'POST') posts++;
      if (mode === 'wrong-content-type' && req.url === '/') {
        res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
        return;
      }
      if (records && req.method === 'GET') {
        if (mode === 'garbage-records') {
          res.writeHead(200, { 'Content-Type': 'text/html' }).end('<html>login</html>');
          return;
        }
        if (mode === 'oversize-records') {
          // An endless answer: the client must stop reading, never buffer it whole.
          res.writeHead(200, { 'Content-Type': 'application/external.dns.webhook+json;version=1' });
          const chunk = Buffer.alloc(16 << 10, 0x20);
          const more = () => {
            while (!res.destroyed && oversizeSent < 64 << 20) {
              oversizeSent += chunk.length;
              if (!res.write(chunk)) return void res.once('drain', more);
            }
            res.end();
          };
          res.on('close', () => {});
          more();
          return;
        }
        if (mode === 'slow-records') return; // never answers
      }
      if (records && req.method === 'POST') {
        if (mode === 'post-503' || (mode === 'post-503-once' && posts === 1)) {
          res.writeHead(503).end('busy');
          return;
        }
        if (mode === 'post-400') {
          res.writeHead(400).end('bad batch');
          return;
        }
        // A provider that refuses one record at apply time (not in /adjustendpoints), as ExternalDNS's
        // in-memory provider answers a batch it cannot apply: 500 for the whole batch.
        if (mode === 'refuse-name' && body.includes('refused.hostile.example.org')) {
          res.writeHead(500).end('record refused.hostile.example.org is not allowed');
          return;
        }
      }
      const upstream = await fetch(`${provider.url}${req.url}`, {
        method: req.method!,
        headers: Object.fromEntries(
          Object.entries(req.headers).filter(([k]) => ['accept', 'content-type'].includes(k)) as [
            string,
            string,
          ][],
        ),
        ...(req.method === 'POST' ? { body } : {}),
      });
      const text = Buffer.from(await upstream.arrayBuffer());
      res.writeHead(upstream.status, Object.fromEntries(upstream.headers)).end(text);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  });
  after(async () => {
    proxy?.closeAllConnections();
    await new Promise((resolve) => proxy?.close(resolve));
    await provider?.stop();
  });

  const fails = async (backend: Backend, zone: ProgrammedZone, code: string) => {
    await assert.rejects(backend.applyZone(zone), (e) => {
      assert.ok(e instanceof BackendError, String(e));
      assert.equal(e.code, code, e.message);
      return true;
    });
    const read = await readBack(backend, zone).catch((e: Error) => ({
      programmed: false,
      message: e.message,
    }));
    assert.equal(read.programmed, false, `not Programmed after ${code}: ${read.message}`);
  };

  test('garbage, a foreign media type, an oversize and a slow answer fail the apply with their code', async () => {
    const backend = backendFor(url, { maxResponseBytes: 256 << 10, timeoutSeconds: 1 });
    mode = 'pass';
    assert.ok((await applied(backend, zone1)).read.programmed);
    mode = 'garbage-records';
    await fails(backend, zone2, 'PROVIDER_INVALID_ANSWER');
    mode = 'wrong-content-type';
    await fails(backend, zone2, 'NEGOTIATION_FAILED');
    mode = 'oversize-records';
    await fails(backend, zone2, 'RESPONSE_TOO_LARGE');
    assert.ok(oversizeSent < 64 << 20, `the client stopped reading (${oversizeSent} bytes sent)`);
    mode = 'slow-records';
    await fails(backend, zone2, 'PROVIDER_TIMEOUT');
    // The provider still holds serial 1's content, and is back.
    mode = 'pass';
    assert.deepEqual(heldZone(origin, await provider.records())?.rrsets.get('www.hostile.example.org. A'), [
      '192.0.2.1',
    ]);
    const ok = await applied(backend, zone2);
    assert.ok(ok.read.programmed, ok.read.message);
  });

  test('a 5xx to the batch is retried from a fresh listing; a 4xx is not retried; nothing Programmed meanwhile', async () => {
    const backend = backendFor(url);
    mode = 'pass';
    await applied(backend, zone1);
    mode = 'post-503-once';
    posts = 0;
    const retried = await applied(backend, zone2);
    assert.equal(posts, 2, 'the batch was sent again after the 503');
    assert.ok(retried.read.programmed, retried.read.message);
    const zone3 = zoneOf(origin, 3, [rrset(origin, 'www', 'A', ['192.0.2.3'])]);
    mode = 'post-503';
    posts = 0;
    await fails(backend, zone3, 'PROVIDER_ERROR');
    assert.equal(
      posts,
      4,
      'three attempts, then an empty batch that fails too (the provider fails as a whole): the apply fails, the controller retries later',
    );
    mode = 'post-400';
    posts = 0;
    await fails(backend, zone3, 'PROVIDER_REFUSED');
    assert.equal(posts, 2, 'the batch and the empty batch; not retried');
    mode = 'pass';
    assert.deepEqual(heldZone(origin, await provider.records())?.rrsets.get('www.hostile.example.org. A'), [
      '192.0.2.2',
    ]);
  });
});

describe('a provider refusing one record in POST /records (not in /adjustendpoints)', () => {
  test('the batch is refused, the changes are sent one by one: the record set is reported, the rest programmed', async () => {
    // Reuses nothing from the suites above: its own provider and proxy.
    const provider = await startInMemoryWebhook({ zones: ['example.org'] });
    let posts = 0;
    const proxy = http.createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const body = Buffer.concat(chunks);
      if (req.method === 'POST' && req.url === '/records') {
        posts++;
        if (body.includes('refused.one.example.org')) {
          res.writeHead(500).end('record refused.one.example.org is not allowed');
          return;
        }
      }
      const upstream = await fetch(`${provider.url}${req.url}`, {
        method: req.method!,
        headers: { Accept: 'application/external.dns.webhook+json;version=1' },
        ...(req.method === 'POST' ? { body } : {}),
      });
      res
        .writeHead(upstream.status, Object.fromEntries(upstream.headers))
        .end(Buffer.from(await upstream.arrayBuffer()));
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const backend = backendFor(`http://127.0.0.1:${(proxy.address() as AddressInfo).port}`);
      const origin = 'one.example.org.';
      const www = rrset(origin, 'www', 'A', ['192.0.2.1']);
      const refused = rrset(origin, 'refused', 'A', ['192.0.2.2']);
      const api = rrset(origin, 'api', 'AAAA', ['2001:db8::2']);
      const v1 = zoneOf(origin, 1, [www, refused, api]);
      const one = await applied(backend, v1);
      assert.deepEqual(problemsOf(one.problems), ['refused.one.example.org. A BackendRejected']);
      assert.match(
        one.problems[0]!.message,
        /refused refused\.one\.example\.org\. A: .*HTTP 500: record refused\.one\.example\.org is not allowed/,
      );
      assert.ok(one.read.programmed, one.read.message);
      assert.deepEqual(
        heldZone(origin, await provider.records())?.rrsets,
        new Map([
          ['www.one.example.org. A', ['192.0.2.1']],
          ['api.one.example.org. AAAA', ['2001:db8::2']],
        ]),
      );
      // The resync: the same again, still reported, still programmed; nothing else is sent twice.
      posts = 0;
      const again = await applied(backend, v1);
      assert.deepEqual(problemsOf(again.problems), ['refused.one.example.org. A BackendRejected']);
      assert.ok(again.read.programmed, again.read.message);
      assert.equal(
        posts,
        5,
        'the batch (only the refused record) three times (a 5xx may pass), the empty batch, the record alone',
      );
      // The record set removed: nothing left to report.
      const fixed = await applied(backend, zoneOf(origin, 2, [www, api]));
      assert.deepEqual(fixed.problems, []);
      assert.ok(fixed.read.programmed, fixed.read.message);
    } finally {
      proxy.closeAllConnections();
      await new Promise((resolve) => proxy.close(resolve));
      await provider.stop();
    }
  });
});

describe("a batch larger than the provider's body limit", () => {
  test('answered 413, the changes go record by record and the zone is programmed', async () => {
    const provider = await startInMemoryWebhook({ zones: ['example.org'], maxBody: 4096 });
    try {
      const backend = backendFor(provider.url);
      const origin = 'big.example.org.';
      const rrsets = Array.from({ length: 40 }, (_, i) =>
        rrset(origin, `host${i}`, 'A', [`192.0.2.${i + 1}`]),
      );
      const { problems, read } = await applied(backend, zoneOf(origin, 1, rrsets));
      assert.deepEqual(problems, []);
      assert.ok(read.programmed, read.message);
      assert.equal(heldZone(origin, await provider.records())?.rrsets.size, 40);
    } finally {
      await provider.stop();
    }
  });
});
