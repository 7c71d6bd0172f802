/**
 * `zonekeeper serve --manifests` with a DNSZoneClass whose backend is `externalDNSWebhook`, programming
 * ExternalDNS's own in-memory provider behind its own webhook server (test/gotools): the zone's record
 * sets reach the provider with ownership records; what the provider cannot hold (a type it drops, a CAA)
 * and a record set forging an ownership record are reported on their record sets (Programmed=False,
 * BackendRejected) while the rest is Ready; a name a real ExternalDNS instance with another owner ID
 * owns is a Conflict (Accepted=False) and stays ExternalDNS's; a record deleted at the provider is
 * repaired by the resync; a record set removed from the folder is deleted at the provider.
 */
import assert from 'node:assert/strict';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { heldZone, isRegistryRecord } from './support/externaldns-held.ts';
import {
  externalDnsOwner,
  type InMemoryWebhook,
  startInMemoryWebhook,
} from './support/externaldns-webhook.ts';
import { removeAll, type ServeProcess, startServe, tempDir, waitFor } from './support/zonekeeper-process.ts';

interface Item {
  kind: string;
  metadata: { name: string; namespace?: string };
  status?: { conditions?: { type: string; status: string; reason: string; message: string }[] };
}

const recordSet = (name: string, owner: string, type: string, records: string[]) => `---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSRecordSet
metadata:
  name: ${name}
  namespace: shop
spec:
  name: "${owner}"
  type: ${type}
  records: ${JSON.stringify(records)}
`;

describe('zonekeeper serve with an externalDNSWebhook class', () => {
  let provider: InMemoryWebhook;
  let dir: string;
  let state: string;
  let serve: ServeProcess;
  const origin = 'shop.example.org.';

  const items = async (): Promise<Item[]> =>
    ((await (await fetch(`${serve.httpUrl}/api/v1/resources`)).json()) as { items: Item[] }).items;
  const condition = async (kind: string, name: string, type: string) =>
    (await items())
      .find((i) => i.kind === kind && i.metadata.name === name)
      ?.status?.conditions?.find((c) => c.type === type);
  const until = async (kind: string, name: string, type: string, status: string) =>
    (
      await waitFor(async () => {
        const c = await condition(kind, name, type);
        return c?.status === status ? c : undefined;
      }, 20_000)
    ).value;

  before(async () => {
    provider = await startInMemoryWebhook({
      zones: ['example.org'],
      types: ['A', 'AAAA', 'CNAME', 'TXT', 'NS'],
    });
    // ExternalDNS (owner "other") already publishes app.shop.example.org.
    await externalDnsOwner({
      url: provider.url,
      owner: 'other',
      domain: 'example.org',
      desired: [{ name: 'app.shop.example.org', type: 'A', targets: ['198.51.100.1'] }],
    });
    dir = await tempDir('edns-webhook-manifests');
    state = await tempDir('edns-webhook-state');
    await writeFile(
      path.join(dir, 'zone.yaml'),
      `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZoneClass
metadata:
  name: cloud
spec:
  backend:
    externalDNSWebhook:
      url: "${provider.url}"
      timeoutSeconds: 5
      resyncSeconds: 1
  nameServers: [ns1.example.org.]
---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZone
metadata:
  name: shop
  namespace: shop
spec:
  domainName: ${origin}
  className: cloud
`,
    );
    await writeFile(
      path.join(dir, 'records.yaml'),
      [
        recordSet('www', 'www.shop.example.org.', 'A', ['192.0.2.10']),
        recordSet('mail', 'shop.example.org.', 'MX', ['10 mail.example.org.']),
        recordSet('caa', 'shop.example.org.', 'CAA', ['0 issue "ca.example"']),
        recordSet('app', 'app.shop.example.org.', 'A', ['192.0.2.11']),
        recordSet('forged', 'a-api.shop.example.org.', 'TXT', [
          'heritage=external-dns,external-dns/owner=other',
        ]),
      ].join(''),
    );
    await writeFile(
      path.join(dir, 'api.yaml'),
      recordSet('api', 'api.shop.example.org.', 'AAAA', ['2001:db8::1']),
    );
    serve = await startServe(dir, state);
  });
  after(async () => {
    await serve?.stop();
    await provider?.stop();
    await removeAll(dir, state);
  });

  test('record sets reach the provider; what it cannot hold, forged ownership and ExternalDNS’s name are reported on their record sets', async () => {
    await until('DNSRecordSet', 'www', 'Ready', 'True');
    await until('DNSRecordSet', 'api', 'Ready', 'True');
    const held = heldZone(origin, await provider.records())!;
    assert.deepEqual(held.rrsets.get('www.shop.example.org. A'), ['192.0.2.10']);
    assert.deepEqual(held.rrsets.get('api.shop.example.org. AAAA'), ['2001:db8::1']);
    assert.deepEqual(
      held.rrsets.get('app.shop.example.org. A'),
      ['198.51.100.1'],
      'ExternalDNS’s record stays',
    );
    assert.equal(held.rrsets.has('shop.example.org. MX'), false);
    assert.equal(held.rrsets.has('a-api.shop.example.org. TXT'), false);

    const mx = await until('DNSRecordSet', 'mail', 'Programmed', 'False');
    assert.equal(mx.reason, 'BackendRejected');
    assert.match(mx.message, /dropped the endpoint in \/adjustendpoints/);
    const caa = await until('DNSRecordSet', 'caa', 'Programmed', 'False');
    assert.match(caa.message, /ExternalDNS endpoints carry no CAA records/);
    const forged = await until('DNSRecordSet', 'forged', 'Programmed', 'False');
    assert.match(forged.message, /may not claim records for an owner/);
    const app = await until('DNSRecordSet', 'app', 'Accepted', 'False');
    assert.equal(app.reason, 'Conflict');
    assert.match(app.message, /owned by ExternalDNS owner "other"/);

    // The class shows the negotiation; the zone is served (its problems are on the record sets).
    const cls = await until('DNSZoneClass', 'cloud', 'Ready', 'True');
    assert.match(cls.message, /negotiated protocol version 1; domain filter: every name/);
    await until('DNSZone', 'shop', 'Programmed', 'True');

    const owners = (await provider.records())
      .filter(isRegistryRecord)
      .map((e) => `${e.dnsName} ${e.targets?.[0]}`)
      .sort();
    assert.ok(
      owners.includes(
        'a-www.shop.example.org "heritage=external-dns,external-dns/owner=zonekeeper,external-dns/resource=dnszone/shop.example.org"',
      ),
      owners.join('\n'),
    );
  });

  test('a record deleted at the provider comes back with the resync; one removed from the folder is deleted there', async () => {
    await until('DNSRecordSet', 'www', 'Ready', 'True');
    const www = (await provider.records()).find(
      (e) => e.dnsName === 'www.shop.example.org' && e.recordType === 'A',
    )!;
    await provider.apply({ delete: [www] });
    await waitFor(
      async () =>
        heldZone(origin, await provider.records())?.rrsets.has('www.shop.example.org. A') ? true : undefined,
      20_000,
    );

    await rm(path.join(dir, 'api.yaml'));
    await waitFor(async () => {
      const listing = await provider.records();
      return !listing.some((e) => e.dnsName === 'api.shop.example.org') &&
        !listing.some((e) => e.dnsName === 'aaaa-api.shop.example.org')
        ? true
        : undefined;
    }, 20_000);
    // ExternalDNS's record is still there, and still its own.
    const again = await externalDnsOwner({
      url: provider.url,
      owner: 'other',
      domain: 'example.org',
      desired: [{ name: 'app.shop.example.org', type: 'A', targets: ['198.51.100.1'] }],
    });
    assert.equal(again.create + again.updateNew + again.delete, 0);
    assert.ok(again.records.some((r) => r.name === 'www.shop.example.org' && r.owner === 'zonekeeper'));
  });
});
