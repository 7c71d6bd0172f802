import assert from 'node:assert/strict';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dig, rdataOf } from './support/dig.ts';
import { removeAll, type ServeProcess, startServe, tempDir, waitFor } from './support/zonekeeper-process.ts';

/**
 * Tenancy as a hostile namespace would try it, against the real `zonekeeper serve` and dig: a newer
 * zone above an older zone of another namespace (ZoneShadowed), names with escaped dots against a
 * delegation, public suffixes, and wildcard NS.
 */

const HEADER = 'apiVersion: dns.zonekeeper.dev/v1alpha1';

const BASE = `${HEADER}
kind: DNSZoneClass
metadata: { name: builtin }
spec:
  backend: { builtin: {} }
  nameServers: [ns1.example.net.]
---
${HEADER}
kind: DNSZone
metadata: { name: a-b, namespace: dns }
spec: { domainName: a.b.example.net, className: builtin }
---
${HEADER}
kind: DNSRecordSet
metadata: { name: www-a-b, namespace: dns }
spec: { zoneRef: { name: a-b }, name: www, type: A, records: ["192.0.2.10"] }
---
${HEADER}
kind: DNSZone
metadata: { name: example-com, namespace: dns }
spec:
  domainName: example.com
  className: builtin
  delegations:
    - { namespaces: [team-a], names: ["*.apps"], types: [A] }
---
${HEADER}
kind: DNSRecordSet
metadata: { name: www, namespace: dns }
spec: { zoneRef: { name: example-com }, name: www, type: A, records: ["192.0.2.1"] }
`;

/** team-c's newer zone above dns/a-b, with records meant to take its names over. */
function teamC(delegations: string): string {
  return `${HEADER}
kind: DNSZone
metadata: { name: b, namespace: team-c }
spec:
  domainName: b.example.net
  className: builtin
  delegations: ${delegations}
---
${HEADER}
kind: DNSRecordSet
metadata: { name: star-a, namespace: team-c }
spec: { zoneRef: { name: b }, name: "*.a", type: A, records: ["203.0.113.66"] }
---
${HEADER}
kind: DNSRecordSet
metadata: { name: ns-a, namespace: team-c }
spec: { zoneRef: { name: b }, name: a, type: NS, records: [ns.attacker.example.] }
---
${HEADER}
kind: DNSRecordSet
metadata: { name: apex, namespace: team-c }
spec: { zoneRef: { name: b }, name: "@", type: TXT, records: ["team-c"] }
`;
}

interface Item {
  kind: string;
  metadata: { name: string; namespace?: string };
  status?: { conditions?: { type: string; status: string; reason: string; message: string }[] };
}

describe('tenancy: zones and names another namespace must not take over (zonekeeper serve + dig)', () => {
  let manifests: string;
  let state: string;
  let serve: ServeProcess;

  async function accepted(
    kind: string,
    key: string,
  ): Promise<{ status: string; reason: string; message: string } | undefined> {
    const body = (await (await fetch(`${serve.httpUrl}/api/v1/resources`)).json()) as { items: Item[] };
    const item = body.items.find(
      (i) => i.kind === kind && `${i.metadata.namespace}/${i.metadata.name}` === key,
    );
    return item?.status?.conditions?.find((c) => c.type === 'Accepted');
  }

  /** Waits until the resource's Accepted condition has this reason, and returns it. */
  async function until(kind: string, key: string, reason: string) {
    const { value } = await waitFor(async () => {
      const c = await accepted(kind, key);
      return c?.reason === reason ? c : undefined;
    });
    return value;
  }

  before(async () => {
    manifests = await tempDir('tenancy');
    state = await tempDir('tenancy-state');
    await writeFile(path.join(manifests, 'base.yaml'), BASE);
    serve = await startServe(manifests, state);
  });
  after(async () => {
    await serve?.stop();
    await removeAll(manifests, state);
  });

  test('a newer parent zone from another namespace is ZoneShadowed until it delegates; the older zone keeps serving', async () => {
    const www = await dig(serve.dnsPort, 'www.a.b.example.net', 'A');
    assert.deepEqual(rdataOf(www, 'A'), ['192.0.2.10']);
    assert.ok(www.flags.includes('aa'));

    const file = path.join(manifests, 'team-c.yaml');
    await writeFile(file, teamC('[]'));
    const shadowed = await until('DNSZone', 'team-c/b', 'ZoneShadowed');
    assert.equal(shadowed.status, 'False');
    assert.match(shadowed.message, /DNSZone dns\/a-b/);
    assert.match(shadowed.message, /\{namespaces: \[dns\], names: \[a\], types: \[NS\]\}/);
    assert.equal((await accepted('DNSZone', 'dns/a-b'))?.reason, 'Accepted');
    assert.match(
      (await accepted('DNSRecordSet', 'team-c/star-a'))?.message ?? '',
      /is refused \(ZoneShadowed\)/,
    );

    for (const tool of ['dig', 'kdig'] as const) {
      const still = await dig(serve.dnsPort, 'www.a.b.example.net', 'A', { tool });
      assert.equal(still.status, 'NOERROR', still.raw);
      assert.ok(still.flags.includes('aa'), still.raw);
      assert.deepEqual(rdataOf(still, 'A'), ['192.0.2.10'], `${tool}: the older zone keeps its name`);
    }
    const other = await dig(serve.dnsPort, 'other.a.b.example.net', 'A');
    assert.equal(other.status, 'NXDOMAIN', 'no wildcard of the newer zone answers in the older one');
    assert.match(other.authority[0] ?? '', /^a\.b\.example\.net\. \d+ IN SOA /);
    const ns = await dig(serve.dnsPort, 'a.b.example.net', 'NS');
    assert.deepEqual(rdataOf(ns, 'NS'), ['ns1.example.net.'], 'not a referral to the newer zone’s servers');
    assert.ok(ns.flags.includes('aa'));
    assert.equal(
      (await dig(serve.dnsPort, 'b.example.net', 'TXT')).status,
      'REFUSED',
      'the shadowed zone is not served',
    );

    // With the delegation the parent is served above the child; the child's names stay the child's.
    await writeFile(file, teamC('[{ namespaces: [dns], names: [a], types: [NS] }]'));
    await until('DNSZone', 'team-c/b', 'Accepted');
    await waitFor(async () =>
      rdataOf(await dig(serve.dnsPort, 'b.example.net', 'TXT'), 'TXT').join() === '"team-c"'
        ? true
        : undefined,
    );
    assert.deepEqual(rdataOf(await dig(serve.dnsPort, 'www.a.b.example.net', 'A'), 'A'), ['192.0.2.10']);
    assert.equal((await dig(serve.dnsPort, 'other.a.b.example.net', 'A')).status, 'NXDOMAIN');
    assert.equal((await accepted('DNSRecordSet', 'team-c/ns-a'))?.reason, 'OutOfZone');
    assert.equal((await accepted('DNSRecordSet', 'team-c/star-a'))?.reason, 'OutOfZone');

    // Withdrawn again: refused again, at once.
    await writeFile(file, teamC('[]'));
    await until('DNSZone', 'team-c/b', 'ZoneShadowed');
    await waitFor(async () =>
      (await dig(serve.dnsPort, 'b.example.net', 'TXT')).status === 'REFUSED' ? true : undefined,
    );
    assert.deepEqual(rdataOf(await dig(serve.dnsPort, 'www.a.b.example.net', 'A'), 'A'), ['192.0.2.10']);
    await rm(file);
  });

  test('an escaped dot does not pass for a label separator: *.apps admits neither evil\\.apps nor www\\046apps', async () => {
    const dir = path.join(manifests, 'team-a');
    await mkdir(dir, { recursive: true });
    await writeFile(
      path.join(dir, 'records.yaml'),
      `${HEADER}
kind: DNSRecordSet
metadata: { name: escaped, namespace: team-a }
spec: { zoneRef: { name: example-com, namespace: dns }, name: 'evil\\.apps', type: A, records: ["203.0.113.66"] }
---
${HEADER}
kind: DNSRecordSet
metadata: { name: decimal, namespace: team-a }
spec: { name: 'www\\046apps.example.com.', type: A, records: ["203.0.113.66"] }
---
${HEADER}
kind: DNSRecordSet
metadata: { name: decimal-ref, namespace: team-a }
spec: { zoneRef: { name: example-com, namespace: dns }, name: 'x\\046apps', type: A, records: ["203.0.113.66"] }
---
${HEADER}
kind: DNSRecordSet
metadata: { name: web, namespace: team-a }
spec: { zoneRef: { name: example-com, namespace: dns }, name: web.apps, type: A, records: ["192.0.2.80"] }
`,
    );
    await waitFor(async () =>
      rdataOf(await dig(serve.dnsPort, 'web.apps.example.com', 'A'), 'A').join() === '192.0.2.80'
        ? true
        : undefined,
    );
    for (const key of ['team-a/escaped', 'team-a/decimal', 'team-a/decimal-ref']) {
      const c = await until('DNSRecordSet', key, 'NotDelegated');
      assert.match(c.message, /does not delegate (evil|www|x)\\\.apps A to namespace team-a/, key);
    }
    for (const name of ['evil\\.apps.example.com', 'www\\.apps.example.com', 'x\\046apps.example.com']) {
      const r = await dig(serve.dnsPort, name, 'A');
      assert.equal(r.status, 'NXDOMAIN', `${name}: ${r.raw}`);
      assert.deepEqual(r.answer, []);
    }
  });

  test('a zone for a public suffix is refused (PublicSuffix); a zone below it is served', async () => {
    const file = path.join(manifests, 'suffix.yaml');
    await writeFile(
      file,
      `${HEADER}
kind: DNSZone
metadata: { name: co-uk, namespace: team-c }
spec: { domainName: co.uk, className: builtin }
---
${HEADER}
kind: DNSRecordSet
metadata: { name: star, namespace: team-c }
spec: { zoneRef: { name: co-uk }, name: "*", type: A, records: ["203.0.113.66"] }
---
${HEADER}
kind: DNSZone
metadata: { name: shop, namespace: shop }
spec: { domainName: shop.co.uk, className: builtin }
---
${HEADER}
kind: DNSRecordSet
metadata: { name: www, namespace: shop }
spec: { zoneRef: { name: shop }, name: www, type: A, records: ["192.0.2.44"] }
`,
    );
    const refused = await until('DNSZone', 'team-c/co-uk', 'PublicSuffix');
    assert.match(refused.message, /co\.uk\. is a public suffix \(ICANN section of the Public Suffix List\)/);
    await waitFor(async () =>
      rdataOf(await dig(serve.dnsPort, 'www.shop.co.uk', 'A'), 'A').join() === '192.0.2.44'
        ? true
        : undefined,
    );
    assert.equal((await dig(serve.dnsPort, 'anything.co.uk', 'A')).status, 'REFUSED');
    await rm(file);
  });

  test('a wildcard NS record set is refused with RFC 4592 §4.2; the zone answers as before', async () => {
    const file = path.join(manifests, 'wildcard-ns.yaml');
    await writeFile(
      file,
      `${HEADER}
kind: DNSRecordSet
metadata: { name: wild-ns, namespace: dns }
spec: { zoneRef: { name: example-com }, name: "*.wild", type: NS, records: [ns.elsewhere.example.] }
---
${HEADER}
kind: DNSRecordSet
metadata: { name: wild-ns-escaped, namespace: dns }
spec: { zoneRef: { name: example-com }, name: '\\042.tame', type: NS, records: [ns.elsewhere.example.] }
`,
    );
    const problem = await waitFor(async () => {
      const body = (await (await fetch(`${serve.httpUrl}/api/v1/resources`)).json()) as {
        problems: { file: string; path?: string; message: string }[];
      };
      return body.problems.find((p) => p.file === file);
    });
    assert.equal(problem.value.path, 'spec.name');
    assert.match(problem.value.message, /RFC 4592 §4\.2/);
    const escaped = await until('DNSRecordSet', 'dns/wild-ns-escaped', 'Invalid');
    assert.match(escaped.message, /RFC 4592 §4\.2/);
    for (const name of ['x.wild.example.com', 'x.tame.example.com']) {
      const r = await dig(serve.dnsPort, name, 'A');
      assert.equal(r.status, 'NXDOMAIN', `${name}: ${r.raw}`);
      assert.ok(r.flags.includes('aa'), 'an authoritative answer, not a referral');
    }
    await rm(file);
  });
});
