/**
 * Datum's DNS API (`dns.networking.miloapis.com/v1alpha1`) through the real programs: Datum's example
 * manifests (test/support/datum-upstream, unchanged) served by `zonekeeper serve --manifests` and
 * answered by dig; a record set changed and removed; a Zonekeeper DNSRecordSet and a Datum one on one
 * name in one zone; `zonekeeper validate` on the examples and on what Datum's rules refuse.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import { dig, rdataOf } from './support/dig.ts';
import {
  CLI,
  ROOT,
  removeAll,
  type ServeProcess,
  startServe,
  tempDir,
  waitFor,
} from './support/zonekeeper-process.ts';

const run = promisify(execFile);
const UPSTREAM = path.join(ROOT, 'test/support/datum-upstream');
const G = 'dns.networking.miloapis.com';
const SAMPLES = [
  'dns_v1alpha1_dnszoneclass.yaml',
  'dns_v1alpha1_dnszone.yaml',
  'dns_v1alpha1_dnsrecordset.yaml',
];

const CLASS = `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZoneClass
metadata:
  name: builtin
spec:
  backend:
    builtin: {}
  nameServers: [ns1.example.net., ns2.example.net.]
`;

interface Cond {
  type: string;
  status: string;
  reason: string;
  message: string;
}
interface Item {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; finalizers?: string[] };
  status?: {
    nameservers?: string[];
    recordCount?: number;
    serial?: number;
    conditions?: Cond[];
    recordSets?: { name: string; conditions?: Cond[] }[];
  };
}

/** A Datum object from serve's resources (never Zonekeeper's own kind of the same name). */
async function datum(serve: ServeProcess, kind: string, key: string): Promise<Item | undefined> {
  const { items } = (await (await fetch(`${serve.httpUrl}/api/v1/resources`)).json()) as { items: Item[] };
  return items.find(
    (i) =>
      i.apiVersion === `${G}/v1alpha1` &&
      i.kind === kind &&
      (i.metadata.namespace ? `${i.metadata.namespace}/${i.metadata.name}` : i.metadata.name) === key,
  );
}

const cond = (o: Item | undefined, type: string) => o?.status?.conditions?.find((c) => c.type === type);

async function withSamples<T>(body: (serve: ServeProcess, dir: string) => Promise<T>): Promise<T> {
  const dir = await tempDir('datum-example');
  const state = await tempDir('datum-state');
  await writeFile(path.join(dir, 'class.yaml'), CLASS);
  for (const file of SAMPLES) await copyFile(path.join(UPSTREAM, file), path.join(dir, file));
  const serve = await startServe(dir, state);
  try {
    return await body(serve, dir);
  } finally {
    await serve.stop();
    await removeAll(dir, state);
  }
}

describe("Datum's examples through zonekeeper serve", () => {
  test('served with the class default TTL; changed; a conflict with a Zonekeeper record set; removed', async () => {
    await withSamples(async (serve, dir) => {
      await waitFor(async () =>
        rdataOf(await dig(serve.dnsPort, 'www.example.com', 'A'), 'A')[0] === '10.0.0.1' ? true : undefined,
      );
      assert.match((await dig(serve.dnsPort, 'www.example.com', 'A')).answer[0]!, / 300 IN A 10\.0\.0\.1$/);
      const { value: zone } = await waitFor(async () => {
        const z = await datum(serve, 'DNSZone', 'default/example-com');
        return cond(z, 'Programmed')?.status === 'True' ? z : undefined;
      });
      assert.deepEqual(zone.status?.nameservers, ['ns1.example.net', 'ns2.example.net']);
      const soa = rdataOf(await dig(serve.dnsPort, 'example.com', 'SOA'), 'SOA')[0]!.split(/\s+/);
      assert.equal(Number(soa[2]), zone.status?.serial);
      const cls = await datum(serve, 'DNSZoneClass', 'powerdns-static');
      assert.equal(cond(cls, 'Accepted')?.status, 'True');
      assert.equal(cond(cls, 'Programmed')?.reason, 'NameServersDiffer');
      await waitFor(async () => {
        const r = await datum(serve, 'DNSRecordSet', 'default/www-example-com');
        return cond(r, 'Programmed')?.status === 'True' ? true : undefined;
      });

      // Changed: two values, the TTL left to the class's default.
      await writeFile(
        path.join(dir, 'dns_v1alpha1_dnsrecordset.yaml'),
        `apiVersion: ${G}/v1alpha1
kind: DNSRecordSet
metadata:
  name: www-example-com
spec:
  dnsZoneRef: {name: example-com}
  recordType: A
  records:
  - {name: www, a: {content: 10.0.0.2}}
  - {name: www, a: {content: 10.0.0.3}}
`,
      );
      await waitFor(async () =>
        rdataOf(await dig(serve.dnsPort, 'www.example.com', 'A'), 'A')
          .sort()
          .join(',') === '10.0.0.2,10.0.0.3'
          ? true
          : undefined,
      );

      // A Zonekeeper record set first, then a Datum one on the same name: the Datum one loses.
      await writeFile(
        path.join(dir, 'native.yaml'),
        'apiVersion: dns.zonekeeper.dev/v1alpha1\nkind: DNSRecordSet\nmetadata: {name: api}\nspec: {name: api.example.com., type: A, records: [192.0.2.1]}\n',
      );
      await waitFor(async () =>
        rdataOf(await dig(serve.dnsPort, 'api.example.com', 'A'), 'A')[0] === '192.0.2.1' ? true : undefined,
      );
      await writeFile(
        path.join(dir, 'late.yaml'),
        `apiVersion: ${G}/v1alpha1\nkind: DNSRecordSet\nmetadata: {name: api}\nspec:\n  dnsZoneRef: {name: example-com}\n  recordType: A\n  records: [{name: api, a: {content: 192.0.2.99}}]\n`,
      );
      const { value: loser } = await waitFor(async () => {
        const r = await datum(serve, 'DNSRecordSet', 'default/api');
        return cond(r, 'Accepted')?.reason === 'Conflict' ? r : undefined;
      });
      assert.equal(loser.status?.recordSets?.[0]?.conditions?.[0]?.reason, 'Conflict');
      assert.deepEqual(rdataOf(await dig(serve.dnsPort, 'api.example.com', 'A'), 'A'), ['192.0.2.1']);

      // Removed: no longer answered.
      await rm(path.join(dir, 'dns_v1alpha1_dnsrecordset.yaml'));
      await waitFor(async () =>
        (await dig(serve.dnsPort, 'www.example.com', 'A')).status === 'NXDOMAIN' ? true : undefined,
      );
      await waitFor(async () =>
        (await datum(serve, 'DNSRecordSet', 'default/www-example-com')) === undefined ? true : undefined,
      );
    });
  });
});

describe('Datum through zonekeeper validate and crds', () => {
  test("validate accepts Datum's examples unchanged and reports Datum's rules", async () => {
    const dir = await tempDir('datum-validate');
    try {
      await writeFile(path.join(dir, 'class.yaml'), CLASS);
      for (const file of SAMPLES) await copyFile(path.join(UPSTREAM, file), path.join(dir, file));
      const ok = await run(process.execPath, [CLI, 'validate', dir]);
      assert.match(ok.stdout, / 0 error\(s\), 1 warning\(s\)/);
      // The class is accepted; its own name servers are not the ones served: a warning saying so.
      assert.match(
        ok.stdout,
        /warning: .*DNSZoneClass powerdns-static: zones of this class are served with the name servers of DNSZoneClass builtin/,
      );
      await writeFile(
        path.join(dir, 'bad.yaml'),
        `apiVersion: ${G}/v1alpha1
kind: DNSRecordSet
metadata: {name: bad}
spec:
  dnsZoneRef: {name: example-com}
  recordType: MX
  records:
  - {name: "@", txt: {content: nope}}
---
apiVersion: ${G}/v1alpha1
kind: DNSZone
metadata: {name: tld}
spec: {domainName: com}
---
apiVersion: ${G}/v1alpha1
kind: DNSRecordSet
metadata: {name: escape}
spec:
  dnsZoneRef: {name: example-com}
  recordType: A
  records:
  - {name: www.victim.test., a: {content: 192.0.2.1}}
`,
      );
      const result = await run(process.execPath, [CLI, 'validate', dir]).then(
        (r) => ({ code: 0, stdout: r.stdout }),
        (e: { code: number; stdout: string }) => ({ code: e.code, stdout: e.stdout }),
      );
      assert.equal(result.code, 1, result.stdout);
      assert.match(
        result.stdout,
        /DNSRecordSet default\/bad spec\.records\[0\]: DNSRecordSet: exactly one type-specific field, mx/,
      );
      assert.match(result.stdout, /DNSZone default\/tld spec\.domainName: Must have at least two segments/);
      assert.match(result.stdout, /DNSRecordSet default\/escape.*outside the zone example\.com\./);
    } finally {
      await removeAll(dir);
    }
  });

  test("crds writes Datum's CRDs with the upstream names, printer columns and selectable fields", async () => {
    const dir = await tempDir('datum-crds');
    try {
      await run(process.execPath, [CLI, 'crds', '--out', dir]);
      const { readFile } = await import('node:fs/promises');
      const zone = await readFile(path.join(dir, `${G}_dnszones.yaml`), 'utf8');
      for (const field of ['domainName', 'dnsZoneClassName', 'nameservers', 'recordCount', 'domainRef'])
        assert.match(zone, new RegExp(`${field}:`));
      assert.match(
        zone,
        /selectableFields:\n\s+- jsonPath: \.spec\.domainName\n\s+- jsonPath: \.status\.domainRef\.name/,
      );
      const rs = await readFile(path.join(dir, `${G}_dnsrecordsets.yaml`), 'utf8');
      for (const field of ['dnsZoneRef', 'recordType', 'recordSets', 'matchingType', 'certData'])
        assert.match(rs, new RegExp(`${field}:`));
      assert.match(
        rs,
        /selectableFields:\n\s+- jsonPath: \.spec\.dnsZoneRef\.name\n\s+- jsonPath: \.spec\.recordType/,
      );
      const cls = await readFile(path.join(dir, `${G}_dnszoneclasses.yaml`), 'utf8');
      assert.match(cls, /scope: Cluster/);
      for (const field of ['controllerName', 'nameServerPolicy', 'defaultTTL'])
        assert.match(cls, new RegExp(`${field}:`));
    } finally {
      await removeAll(dir);
    }
  });
});
