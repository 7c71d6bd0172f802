/**
 * kubizone's `kubi.zone/v1alpha1` front door through the real programs: kubizone's own example
 * manifests (test/support/kubizone-upstream, unchanged) served by `zonekeeper serve --manifests` and
 * answered by dig as their comments say; several Records merged into one RRset; a sub-zone's NS and
 * glue in its parent; Zone status entries; `zonekeeper validate` and `zonekeeper crds`.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFile, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
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
const UPSTREAM = path.join(ROOT, 'test/support/kubizone-upstream');

const CLASS = `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZoneClass
metadata:
  name: builtin
spec:
  backend:
    builtin: {}
  nameServers: [ns1.example.net., ns2.example.net.]
`;

interface Item {
  kind: string;
  metadata: { name: string; namespace?: string; finalizers?: string[]; labels?: Record<string, string> };
  status?: {
    fqdn?: string;
    serial?: number;
    hash?: string;
    entries?: { fqdn: string; type: string; class: string; ttl: number; rdata: string }[];
    conditions?: { type: string; status: string; reason: string; message: string }[];
  };
}

async function items(serve: ServeProcess): Promise<Item[]> {
  return ((await (await fetch(`${serve.httpUrl}/api/v1/resources`)).json()) as { items: Item[] }).items;
}

async function object(serve: ServeProcess, kind: string, key: string): Promise<Item | undefined> {
  return (await items(serve)).find(
    (i) => i.kind === kind && `${i.metadata.namespace ?? 'default'}/${i.metadata.name}` === key,
  );
}

async function ready(serve: ServeProcess, kind: string, key: string) {
  return (await object(serve, kind, key))?.status?.conditions?.find((c) => c.type === 'Ready');
}

async function withExample<T>(file: string, body: (serve: ServeProcess) => Promise<T>): Promise<T> {
  const dir = await tempDir('kubizone-example');
  const state = await tempDir('kubizone-state');
  await writeFile(path.join(dir, 'class.yaml'), CLASS);
  await copyFile(path.join(UPSTREAM, file), path.join(dir, file));
  const serve = await startServe(dir, state);
  try {
    return await body(serve);
  } finally {
    await serve.stop();
    await removeAll(dir, state);
  }
}

describe("kubizone's examples through zonekeeper serve", () => {
  test('simple-record-delegation: the record is adopted and answered; status fqdn and entries', async () => {
    await withExample('simple-record-delegation.yaml', async (serve) => {
      await waitFor(async () =>
        rdataOf(await dig(serve.dnsPort, 'www.example.org', 'A'), 'A')[0] === '192.168.0.2'
          ? true
          : undefined,
      );
      // The content hash of a first serial is written a second after the zone's first answer.
      const { value: zone } = await waitFor(async () => {
        const z = await object(serve, 'Zone', 'default/example-org');
        return z?.status?.entries && z.status.entries.length > 1 && z.status.hash ? z : undefined;
      });
      assert.equal(zone.status?.fqdn, 'example.org.');
      assert.ok(zone.status?.hash);
      const soa = await dig(serve.dnsPort, 'example.org', 'SOA');
      const served = rdataOf(soa, 'SOA')[0]!.split(/\s+/);
      assert.equal(Number(served[2]), zone.status?.serial);
      // kubizone's SOA timers: refresh 86400, retry 7200, expire 3600000, negative caching 360.
      assert.deepEqual(served.slice(3).map(Number), [86400, 7200, 3600000, 360]);
      assert.equal(zone.status?.entries?.[0]?.type, 'SOA');
      assert.deepEqual(zone.status?.entries?.slice(1), [
        { fqdn: 'www.example.org.', type: 'A', class: 'IN', ttl: 360, rdata: '192.168.0.2' },
      ]);
      const record = await object(serve, 'Record', 'default/www-example-org');
      assert.equal(record?.status?.fqdn, 'www.example.org.');
      assert.deepEqual(record?.metadata.finalizers, ['kubi.zone/zonekeeper']);
      await waitFor(async () =>
        (await ready(serve, 'Record', 'default/www-example-org'))?.status === 'True' ? true : undefined,
      );
    });
  });

  test('no-delegation: a record of the zone namespace needs a delegation too', async () => {
    await withExample('no-delegation.yaml', async (serve) => {
      await waitFor(async () =>
        (await dig(serve.dnsPort, 'example.org', 'SOA')).status === 'NOERROR' ? true : undefined,
      );
      const { value } = await waitFor(async () => {
        const c = await ready(serve, 'Record', 'default/www-example-org');
        return c?.reason === 'NotDelegated' ? c : undefined;
      });
      assert.match(value.message, /no delegation admitting A www\.example\.org\. from namespace default/);
      assert.equal((await dig(serve.dnsPort, 'www.example.org', 'A')).status, 'NXDOMAIN');
    });
  });

  test('cross-namespace-delegation: *.dev from development is adopted, *.prod from development is not', async () => {
    await withExample('cross-namespace-delegation.yaml', async (serve) => {
      await waitFor(async () =>
        rdataOf(await dig(serve.dnsPort, 'www.dev.example.org', 'A'), 'A')[0] === '192.168.0.2'
          ? true
          : undefined,
      );
      assert.equal((await dig(serve.dnsPort, 'www.prod.example.org', 'A')).status, 'NXDOMAIN');
      const refused = await ready(serve, 'Record', 'development/www-prod-example-org');
      assert.equal(refused?.reason, 'NotDelegated');
    });
  });

  test('longest-matching-wins: the sub-zone adopts the record; the parent publishes the cut', async () => {
    await withExample('longest-matching-wins.yaml', async (serve) => {
      await waitFor(async () =>
        rdataOf(await dig(serve.dnsPort, 'www.sub.example.org', 'A'), 'A')[0] === '192.168.0.2'
          ? true
          : undefined,
      );
      const { value: sub } = await waitFor(async () => {
        const z = await object(serve, 'Zone', 'default/sub-example-org');
        return z?.status?.entries?.some((e) => e.type === 'A') ? z : undefined;
      });
      assert.deepEqual(
        sub.status?.entries?.slice(1).map((e) => e.fqdn),
        ['www.sub.example.org.'],
      );
      // kubizone's parent-zone label, on the sub-zone and on the adopted Record.
      assert.equal(sub.metadata.labels?.['kubi.zone/parent-zone'], 'example-org.default');
      const { value: rec } = await waitFor(async () => {
        const r = await object(serve, 'Record', 'default/www-sub-example-org');
        return r?.metadata.labels?.['kubi.zone/parent-zone'] ? r : undefined;
      });
      assert.equal(rec.metadata.labels?.['kubi.zone/parent-zone'], 'sub-example-org.default');
      const parent = await object(serve, 'Zone', 'default/example-org');
      assert.equal(parent?.status?.entries?.filter((e) => e.type === 'A').length, 0);
      // The parent answers with a referral to the sub-zone.
      const referral = await dig(serve.dnsPort, 'sub.example.org', 'NS');
      assert.ok(referral.status === 'NOERROR');
    });
  });

  test('delegations-forbids-adoption: the sub-zone refuses A and the parent does not take it', async () => {
    await withExample('delegations-forbids-adoption.yaml', async (serve) => {
      await waitFor(async () =>
        (await dig(serve.dnsPort, 'sub.example.org', 'SOA')).status === 'NOERROR' ? true : undefined,
      );
      const { value } = await waitFor(async () => {
        const c = await ready(serve, 'Record', 'default/www-sub-example-org');
        return c?.reason === 'NotDelegated' ? c : undefined;
      });
      assert.match(value.message, /sub-example-org/);
      assert.equal((await dig(serve.dnsPort, 'www.sub.example.org', 'A')).status, 'NXDOMAIN');
    });
  });
});

const SCENARIO = `apiVersion: kubi.zone/v1alpha1
kind: Zone
metadata:
  name: example-com
  namespace: dns
spec:
  domainName: example.com.
  delegations:
    - namespaces: [dns]
      records:
        - pattern: "*"
    - namespaces: [web]
      records:
        - pattern: "dev*"
          types: [A]
    - zones: [lab]
      namespaces: [lab]
---
apiVersion: kubi.zone/v1alpha1
kind: Zone
metadata:
  name: lab
  namespace: lab
spec:
  domainName: lab
  zoneRef: { name: example-com, namespace: dns }
  delegations:
    - records:
        - pattern: "*"
        - pattern: "@"
          types: [NS]
---
apiVersion: kubi.zone/v1alpha1
kind: Record
metadata: { name: lab-ns, namespace: lab }
spec: { domainName: "@", zoneRef: { name: lab }, type: NS, rdata: ns.lab.example.com. }
---
apiVersion: kubi.zone/v1alpha1
kind: Record
metadata: { name: lab-glue, namespace: lab }
spec: { domainName: ns, zoneRef: { name: lab }, type: A, rdata: 192.0.2.53 }
---
apiVersion: kubi.zone/v1alpha1
kind: Record
metadata: { name: web-1, namespace: dns }
spec: { domainName: web.example.com., type: A, rdata: 192.0.2.1 }
---
apiVersion: kubi.zone/v1alpha1
kind: Record
metadata: { name: web-2, namespace: dns }
spec: { domainName: web.example.com., type: A, rdata: 192.0.2.2 }
---
apiVersion: kubi.zone/v1alpha1
kind: Record
metadata: { name: web-3, namespace: dns }
spec: { domainName: web, zoneRef: { name: example-com }, type: A, rdata: 192.0.2.3 }
---
apiVersion: kubi.zone/v1alpha1
kind: Record
metadata: { name: dev1, namespace: web }
spec: { domainName: dev-1.example.com., type: A, rdata: 198.51.100.1 }
---
apiVersion: kubi.zone/v1alpha1
kind: Record
metadata: { name: grab-mx, namespace: web }
spec: { domainName: dev-1.example.com., type: TXT, rdata: '"grab"' }
---
apiVersion: kubi.zone/v1alpha1
kind: Record
metadata: { name: grab-www, namespace: web }
spec: { domainName: www.example.com., type: A, rdata: 198.51.100.66 }
---
# Hostile: a Zone of the web namespace claiming a sub-zone the parent does not delegate to it.
apiVersion: kubi.zone/v1alpha1
kind: Zone
metadata: { name: shop, namespace: web }
spec:
  domainName: shop.example.com.
  delegations:
    - records:
        - pattern: "*"
---
apiVersion: kubi.zone/v1alpha1
kind: Record
metadata: { name: shop-www, namespace: web }
spec: { domainName: www.shop.example.com., type: A, rdata: 198.51.100.77 }
`;
const STEAL = `apiVersion: kubi.zone/v1alpha1
kind: Zone
metadata: { name: steal, namespace: web }
spec:
  domainName: example.com.
  delegations:
    - records:
        - pattern: "*"
`;

describe('kubizone Zones and Records through zonekeeper serve', () => {
  let dir: string;
  let state: string;
  let serve: ServeProcess;

  before(async () => {
    dir = await tempDir('kubizone-scenario');
    state = await tempDir('kubizone-scenario-state');
    await writeFile(path.join(dir, 'class.yaml'), CLASS);
    await writeFile(path.join(dir, 'objects.yaml'), SCENARIO);
    serve = await startServe(dir, state);
  });

  after(async () => {
    await serve?.stop();
    await removeAll(dir, state);
  });

  test('three Records of one name and type answer as one RRset, one written relative to zoneRef', async () => {
    await waitFor(async () =>
      rdataOf(await dig(serve.dnsPort, 'web.example.com', 'A'), 'A').length === 3 ? true : undefined,
    );
    assert.deepEqual(rdataOf(await dig(serve.dnsPort, 'web.example.com', 'A'), 'A').sort(), [
      '192.0.2.1',
      '192.0.2.2',
      '192.0.2.3',
    ]);
    const zone = await object(serve, 'Zone', 'dns/example-com');
    assert.deepEqual(
      zone?.status?.entries?.filter((e) => e.fqdn === 'web.example.com.').map((e) => e.rdata),
      ['192.0.2.1', '192.0.2.2', '192.0.2.3'],
    );
  });

  test('a dev* pattern admits another namespace for its name and type only', async () => {
    await waitFor(async () =>
      rdataOf(await dig(serve.dnsPort, 'dev-1.example.com', 'A'), 'A')[0] === '198.51.100.1'
        ? true
        : undefined,
    );
    assert.deepEqual(rdataOf(await dig(serve.dnsPort, 'dev-1.example.com', 'TXT'), 'TXT'), []);
    assert.equal((await dig(serve.dnsPort, 'www.example.com', 'A')).status, 'NXDOMAIN');
    assert.equal((await ready(serve, 'Record', 'web/grab-mx'))?.reason, 'NotDelegated');
    assert.equal((await ready(serve, 'Record', 'web/grab-www'))?.reason, 'NotDelegated');
  });

  test('hostile: an undelegated sub-zone and a second Zone for the same domain are not served', async () => {
    const { value: shop } = await waitFor(async () => {
      const c = await ready(serve, 'Zone', 'web/shop');
      return c?.reason === 'NotDelegated' ? c : undefined;
    });
    assert.match(shop.message, /no delegation admitting sub-zone shop\.example\.com\./);
    // Not served: the server answers for example.com, where the name does not exist.
    assert.equal((await dig(serve.dnsPort, 'www.shop.example.com', 'A')).status, 'NXDOMAIN');
    // A younger Zone of another namespace for the same domain.
    await waitFor(async () =>
      rdataOf(await dig(serve.dnsPort, 'dev-1.example.com', 'A'), 'A')[0] === '198.51.100.1'
        ? true
        : undefined,
    );
    await writeFile(path.join(dir, 'steal.yaml'), STEAL);
    const { value: steal } = await waitFor(async () => {
      const c = await ready(serve, 'Zone', 'web/steal');
      return c?.status === 'False' && c.reason !== 'Pending' ? c : undefined;
    });
    assert.notEqual(steal.reason, 'Served');
    assert.match(steal.message, /example\.com/);
    // The first Zone keeps the domain: its records still answer.
    assert.equal(rdataOf(await dig(serve.dnsPort, 'dev-1.example.com', 'A'), 'A')[0], '198.51.100.1');
    await rm(path.join(dir, 'steal.yaml'));
  });

  test('a partial sub-zone of another namespace: its NS and glue in the parent, its entries in its status', async () => {
    await waitFor(async () =>
      rdataOf(await dig(serve.dnsPort, 'ns.lab.example.com', 'A'), 'A')[0] === '192.0.2.53'
        ? true
        : undefined,
    );
    const { value: parent } = await waitFor(async () => {
      const z = await object(serve, 'Zone', 'dns/example-com');
      return z?.status?.entries?.some((e) => e.type === 'NS') ? z : undefined;
    });
    assert.deepEqual(
      parent.status?.entries
        ?.filter((e) => e.fqdn.endsWith('lab.example.com.'))
        .map((e) => [e.fqdn, e.type, e.rdata]),
      [
        ['lab.example.com.', 'NS', 'ns.lab.example.com.'],
        ['ns.lab.example.com.', 'A', '192.0.2.53'],
      ],
    );
    const lab = await object(serve, 'Zone', 'lab/lab');
    assert.equal(lab?.status?.fqdn, 'lab.example.com.');
  });

  test('removing a Record takes its record out of the merged RRset', async () => {
    const text = await readFile(path.join(dir, 'objects.yaml'), 'utf8');
    await writeFile(
      path.join(dir, 'objects.yaml'),
      text.replace(
        '---\napiVersion: kubi.zone/v1alpha1\nkind: Record\nmetadata: { name: web-2, namespace: dns }\nspec: { domainName: web.example.com., type: A, rdata: 192.0.2.2 }\n',
        '',
      ),
    );
    await waitFor(async () =>
      rdataOf(await dig(serve.dnsPort, 'web.example.com', 'A'), 'A').length === 2 ? true : undefined,
    );
    assert.deepEqual(rdataOf(await dig(serve.dnsPort, 'web.example.com', 'A'), 'A').sort(), [
      '192.0.2.1',
      '192.0.2.3',
    ]);
  });
});

describe('kubizone through zonekeeper validate and crds', () => {
  test('validate accepts every example unchanged and reports the door rules', async () => {
    const dir = await tempDir('kubizone-validate');
    try {
      await writeFile(path.join(dir, 'class.yaml'), CLASS);
      await copyFile(path.join(UPSTREAM, 'cross-namespace-delegation.yaml'), path.join(dir, 'x.yaml'));
      // kubizone's example is valid as it is; the Record it refuses on purpose is a warning.
      const ok = await run(process.execPath, [CLI, 'validate', dir]);
      assert.match(
        ok.stdout,
        /warning: .*Record development\/www-prod-example-org.*NotDelegated|warning: .*Record development\/www-prod-example-org.*not served: Zone default\/example-org/,
      );
      assert.doesNotMatch(ok.stdout, /www-dev-example-org/);
      await writeFile(
        path.join(dir, 'bad.yaml'),
        'apiVersion: kubi.zone/v1alpha1\nkind: Record\nmetadata: { name: bad }\nspec: { domainName: www, type: A, class: CH, rdata: 192.0.2.1 }\n',
      );
      const result = await run(process.execPath, [CLI, 'validate', dir]).then(
        (r) => ({ code: 0, stdout: r.stdout }),
        (e: { code: number; stdout: string }) => ({ code: e.code, stdout: e.stdout }),
      );
      assert.equal(result.code, 1, result.stdout);
      assert.match(result.stdout, /Record default\/bad spec\.class: Record: class CH is not served/);
      assert.match(result.stdout, /Record default\/bad spec\.domainName: Record: "www" is relative/);
      await rm(path.join(dir, 'bad.yaml'));
    } finally {
      await removeAll(dir);
    }
  });

  test("validate accepts the zonefile controller's example unchanged; a ZoneFile's ConfigMap name is checked", async () => {
    const dir = await tempDir('kubizone-zonefile-validate');
    try {
      await writeFile(path.join(dir, 'class.yaml'), CLASS);
      await copyFile(path.join(UPSTREAM, 'simple-zonefile.yaml'), path.join(dir, 'x.yaml'));
      const ok = await run(process.execPath, [CLI, 'validate', dir]);
      assert.doesNotMatch(ok.stdout, /error: .*ZoneFile/);
      await writeFile(
        path.join(dir, 'bad.yaml'),
        'apiVersion: kubi.zone/v1alpha1\nkind: ZoneFile\nmetadata: { name: bad }\nspec: { zoneRefs: [{ name: example-org }], configMapName: Not_A_Name }\n',
      );
      const result = await run(process.execPath, [CLI, 'validate', dir]).then(
        (r) => ({ code: 0, stdout: r.stdout }),
        (e: { code: number; stdout: string }) => ({ code: e.code, stdout: e.stdout }),
      );
      assert.equal(result.code, 1, result.stdout);
      assert.match(
        result.stdout,
        /ZoneFile default\/bad spec\.configMapName: ZoneFile: "Not_A_Name" is not a ConfigMap name/,
      );
    } finally {
      await removeAll(dir);
    }
  });

  test('crds writes the kubi.zone CRDs with the upstream field names', async () => {
    const dir = await tempDir('kubizone-crds');
    try {
      await run(process.execPath, [CLI, 'crds', '--out', dir]);
      const zone = await readFile(path.join(dir, 'kubi.zone_zones.yaml'), 'utf8');
      for (const field of [
        'domainName',
        'zoneRef',
        'delegations',
        'negativeResponseCache',
        'entries',
        'hash',
      ])
        assert.match(zone, new RegExp(`${field}:`));
      const record = await readFile(path.join(dir, 'kubi.zone_records.yaml'), 'utf8');
      for (const field of ['domainName', 'rdata', 'class', 'ttl', 'fqdn'])
        assert.match(record, new RegExp(`${field}:`));
      const zoneFile = await readFile(path.join(dir, 'kubi.zone_zonefiles.yaml'), 'utf8');
      for (const field of ['zoneRefs', 'configMapName', 'hash', 'serial'])
        assert.match(zoneFile, new RegExp(`${field}:`));
    } finally {
      await removeAll(dir);
    }
  });
});
