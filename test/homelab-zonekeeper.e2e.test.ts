/**
 * Zonekeeper's homelab client against Zonekeeper's homelab provider: one `zonekeeper serve
 * --homelab-api` serves example.com with a delegation of lab.example.com to the caller's namespace;
 * a second `zonekeeper serve --manifests` holds DNSClass/DNSRecord manifests whose class points at
 * the first (HMAC secret from a file). All seven record types are pushed and dig at the provider
 * answers them; records written in a form the provider canonicalises (upper case, trailing dots,
 * uncompressed IPv6, SRV metadata keys in another order) are not pushed again at drift checks
 * (the provider's upsert counter stays put while its GET counter climbs); edits, renames and deletes
 * propagate.
 */
import assert from 'node:assert/strict';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dig, rdataOf } from './support/dig.ts';
import { removeAll, type ServeProcess, startServe, tempDir, waitFor } from './support/zonekeeper-process.ts';

const ZONE = `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZoneClass
metadata: {name: builtin}
spec:
  backend: {builtin: {}}
  nameServers: [ns1.example.com.]
---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZone
metadata: {name: example, namespace: dns}
spec:
  domainName: example.com
  className: builtin
  delegations:
    - {namespaces: [home], names: ['lab', '*.lab']}
`;

const record = (name: string, spec: string) => `apiVersion: dns.homelab.mortenolsen.pro/v1alpha1
kind: DNSRecord
metadata: {name: ${name}, namespace: home}
spec:
  domain: lab.example.com
  dnsClassRef: {name: zonekeeper}
${spec
  .trim()
  .split('\n')
  .map((l) => `  ${l}`)
  .join('\n')}
`;

/** The seven types, several in a form the provider answers differently in its GET. */
const RECORDS: Record<string, string> = {
  www: record('www', 'type: A\nsubdomain: www\nvalues: ["192.0.2.10", "192.0.2.11"]\nttl: 60'),
  v6: record('v6', 'type: AAAA\nsubdomain: v6\nvalues: ["2001:DB8:0:0:0:0:0:1"]'),
  alias: record('alias', 'type: CNAME\nsubdomain: alias\nvalues: ["WWW.Lab.Example.com."]'),
  txt: record('txt', 'type: TXT\nsubdomain: txt\nvalues: ["hello world"]'),
  mail: record(
    'mail',
    'type: MX\nsubdomain: "@"\nvalues: ["mail.lab.example.com."]\nmetadata: {priority: 10}',
  ),
  sip: record(
    'sip',
    'type: SRV\nsubdomain: _sip._tcp\nvalues: ["sip.lab.example.com."]\nmetadata: {port: 5060, weight: 20, priority: 5}',
  ),
  sub: record('sub', 'type: NS\nsubdomain: sub\nvalues: ["ns1.sub.example.net"]'),
};

interface Item {
  kind: string;
  metadata: { name: string };
  status?: { conditions?: { type: string; status: string; reason: string; message: string }[] };
}

describe('Zonekeeper homelab client against Zonekeeper homelab provider', () => {
  let dir: string;
  let provider: ServeProcess;
  let client: ServeProcess;
  let records: string;

  /** Answers at the provider, lower-case (names compare without case, RFC 4343). */
  const answers = async (name: string, type: string) =>
    rdataOf(await dig(provider.dnsPort, name, type), type).map((r) => (type === 'TXT' ? r : r.toLowerCase()));
  const served = async (name: string, type: string, want: string[]) => {
    try {
      await servedWithin(name, type, want);
    } catch {
      assert.deepEqual((await answers(name, type)).sort(), [...want].sort(), `${name} ${type}`);
    }
  };
  const servedWithin = (name: string, type: string, want: string[]) =>
    waitFor(async () => {
      const got = (await answers(name, type)).sort();
      return JSON.stringify(got) === JSON.stringify([...want].sort()) ? true : undefined;
    }, 20_000);
  /** The provider's request counter for one endpoint, answered ok. */
  const requests = async (endpoint: string): Promise<number> => {
    const text = await (await fetch(`${provider.httpUrl}/metrics`)).text();
    const re = new RegExp(
      `^zonekeeper_homelab_api_requests_total\\{endpoint="${endpoint}",code="ok"\\} (\\d+)$`,
      'm',
    );
    return Number(re.exec(text)?.[1] ?? 0);
  };
  const notReady = async (): Promise<string[]> => {
    const items = ((await (await fetch(`${client.httpUrl}/api/v1/resources`)).json()) as { items: Item[] })
      .items;
    return items
      .filter((i) => i.kind === 'DNSRecord')
      .filter((i) => !i.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'))
      .map((i) => `${i.metadata.name}: ${JSON.stringify(i.status?.conditions)}`);
  };

  before(async () => {
    dir = await tempDir('homelab-zk2zk');
    const zone = path.join(dir, 'zone');
    records = path.join(dir, 'records');
    for (const d of [zone, records]) await mkdir(d);
    await writeFile(path.join(zone, 'zone.yaml'), ZONE);
    await writeFile(path.join(dir, 'secret'), 'zk-to-zk-secret\n');
    provider = await startServe(zone, path.join(dir, 'provider-state'), [
      '--homelab-api',
      '127.0.0.1:0',
      '--homelab-api-secret-file',
      path.join(dir, 'secret'),
      '--homelab-api-namespace',
      'home',
    ]);
    const port = /homelabApi="127\.0\.0\.1:(\d+)"/.exec(provider.log())?.[1];
    assert.ok(port, provider.log());
    await writeFile(
      path.join(records, 'class.yaml'),
      `apiVersion: dns.homelab.mortenolsen.pro/v1alpha1
kind: DNSClass
metadata: {name: zonekeeper}
spec:
  server: "http://127.0.0.1:${port}"
  hmacAuth:
    secretRef: {name: "file:${path.join(dir, 'secret')}"}
    algorithm: SHA256
`,
    );
    for (const [name, text] of Object.entries(RECORDS))
      await writeFile(path.join(records, `${name}.yaml`), text);
    process.env.DNS_RECORD_RETRY_BASE_DELAY = '50ms';
    process.env.DNS_RECORD_RETRY_MAX_DELAY = '200ms';
    process.env.DNS_RECORD_DRIFT_CHECK_INTERVAL = '200ms';
    client = await startServe(records, path.join(dir, 'client-state'));
  });

  after(async () => {
    await client?.stop();
    await provider?.stop();
    await removeAll(dir);
  });

  test('all seven types reach the provider; dig answers them; drift checks push nothing again', async () => {
    await waitFor(async () => ((await notReady()).length === 0 ? true : undefined));
    await served('www.lab.example.com', 'A', ['192.0.2.10', '192.0.2.11']);
    await served('v6.lab.example.com', 'AAAA', ['2001:db8::1']);
    await served('alias.lab.example.com', 'CNAME', ['www.lab.example.com.']);
    await served('txt.lab.example.com', 'TXT', ['"hello world"']);
    await served('lab.example.com', 'MX', ['10 mail.lab.example.com.']);
    await served('_sip._tcp.lab.example.com', 'SRV', ['5 20 5060 sip.lab.example.com.']);
    await waitFor(async () => {
      const r = await dig(provider.dnsPort, 'host.sub.lab.example.com', 'A');
      return r.authority.some((l) => l.endsWith('NS ns1.sub.example.net.')) ? true : undefined;
    });

    // Drift checks read every record back several times; none is written again.
    const upserts = await requests('upsert');
    assert.ok(upserts >= 7, `upserts ${upserts}`);
    const gets = await requests('get');
    await waitFor(async () => ((await requests('get')) >= gets + 3 * 7 ? true : undefined));
    assert.equal(await requests('upsert'), upserts);
    assert.deepEqual(await notReady(), []);
  });

  test('edits, renames and deletes propagate', async () => {
    await writeFile(
      path.join(records, 'www.yaml'),
      RECORDS.www!.replace('["192.0.2.10", "192.0.2.11"]', '["192.0.2.12"]'),
    );
    await served('www.lab.example.com', 'A', ['192.0.2.12']);
    await writeFile(
      path.join(records, 'txt.yaml'),
      RECORDS.txt!.replace('subdomain: txt', 'subdomain: note'),
    );
    await served('note.lab.example.com', 'TXT', ['"hello world"']);
    await served('txt.lab.example.com', 'TXT', []);
    await rm(path.join(records, 'alias.yaml'));
    await served('alias.lab.example.com', 'CNAME', []);
    await rm(path.join(records, 'sip.yaml'));
    await served('_sip._tcp.lab.example.com', 'SRV', []);
    await waitFor(async () => ((await notReady()).length === 0 ? true : undefined));
  });
});
