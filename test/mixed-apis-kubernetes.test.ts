/**
 * A mixed cluster on a real control plane: the homelab DNS operator's DNSRecord (pushed by the
 * operator's homelab controller to the operator's own homelab DNS API, which writes it into the zone),
 * Zonekeeper's DNSRecordSet, kubizone's Record and Gardener's DNSRecord publishing into one zone (a
 * kubizone Zone, served in the default class), answered by `zonekeeper server` over dig. Each API also
 * claims one shared name: the oldest object wins whatever its API, and each loser reads why in its own
 * API's status shape (the homelab record is the oldest: its provider protocol has no way to say
 * "accepted but shadowed"); when the winner goes, the next oldest takes over.
 *
 * Each API is one entry of `APIS` (how to write a record, how its loser reports the conflict). The
 * same runs twice: with a kubizone Zone (kubizone's Records join only zones of their own kind, by its
 * adoption rules) and with a Datum Cloud DNSZone (Datum's DNSRecordSets name their zone by
 * `dnsZoneRef`), so every API publishes into one zone with the others and conflicts across all of them.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { stringify } from 'yaml';
import { chartAccessDocs, renderChart } from './support/chart.ts';
import { dig, rdataOf } from './support/dig.ts';
import { type KubeCluster, serviceAccountUser, startKube } from './support/kube.ts';
import { type KubeProcess, startOperatorProcess, startServerProcess } from './support/zonekeeper-kube.ts';
import { ROOT, waitFor } from './support/zonekeeper-process.ts';

const SYSTEM = 'zonekeeper-system';
const OPERATOR = serviceAccountUser(SYSTEM, 'zonekeeper-operator');
const SERVER = serviceAccountUser(SYSTEM, 'zonekeeper-server');
const NS = 'dns';
const ZONE = 'example.org';
const SHARED = `www.${ZONE}`;

// biome-ignore lint/suspicious/noExplicitAny: objects of several APIs, read through their own status shapes
type Json = any;

/** One API that publishes records into the zone. */
interface RecordApi {
  name: string;
  /** The kubectl resource of its record kind. */
  resource: string;
  /** A manifest: one A record `fqdn` → `address`, object `name` in namespace NS. */
  record(name: string, fqdn: string, address: string): object;
  /** How a record of this API that lost a conflict says so in its own status, or undefined if it does not (yet). */
  conflict(object: Json): string | undefined;
  /** How it reads while served (undefined: not yet). */
  served(object: Json): boolean;
  /** How a loser's message names an object `name` of this API that won. */
  named(name: string): string | RegExp;
}

/** The homelab DNS API of the operator (its port, once it listens), which the homelab DNSClass names. */
const HOMELAB_SECRET = 'mixed-cluster-homelab-secret';
const homelabClass = (port: string) => ({
  apiVersion: 'dns.homelab.mortenolsen.pro/v1alpha1',
  kind: 'DNSClass',
  metadata: { name: 'zonekeeper' },
  spec: { server: `http://127.0.0.1:${port}`, hmacAuth: { secret: HOMELAB_SECRET, algorithm: 'SHA256' } },
});

const readyCondition = (o: Json, type: string) =>
  (
    o?.status?.conditions as { type: string; status: string; reason: string; message: string }[] | undefined
  )?.find((c) => c.type === type);

const APIS: RecordApi[] = [
  {
    name: 'homelab DNSRecord',
    resource: 'dnsrecords.dns.homelab.mortenolsen.pro',
    record: (name, fqdn, address) => ({
      apiVersion: 'dns.homelab.mortenolsen.pro/v1alpha1',
      kind: 'DNSRecord',
      metadata: { name, namespace: NS },
      spec: {
        type: 'A',
        domain: ZONE,
        subdomain: fqdn.slice(0, -ZONE.length - 1),
        dnsClassRef: { name: 'zonekeeper' },
        values: [address],
      },
    }),
    // Its provider answers a write, not whether the record is shadowed: it takes part as the oldest.
    conflict: () => undefined,
    served: (o) => readyCondition(o, 'Ready')?.status === 'True',
    // The record set the homelab DNS API wrote for it (named by a digest).
    named: () => new RegExp(`DNSRecordSet ${NS}/[a-z0-9.-]+,`),
  },
  {
    name: 'Zonekeeper DNSRecordSet',
    resource: 'dnsrecordsets.dns.zonekeeper.dev',
    record: (name, fqdn, address) => ({
      apiVersion: 'dns.zonekeeper.dev/v1alpha1',
      kind: 'DNSRecordSet',
      metadata: { name, namespace: NS },
      spec: { name: `${fqdn}.`, type: 'A', records: [address] },
    }),
    conflict: (o) => {
      const c = readyCondition(o, 'Accepted');
      return c?.status === 'False' && c.reason === 'Conflict' ? c.message : undefined;
    },
    served: (o) => readyCondition(o, 'Programmed')?.status === 'True',
    named: (name) => `DNSRecordSet ${NS}/${name},`,
  },
  {
    name: 'kubizone Record',
    resource: 'records.kubi.zone',
    record: (name, fqdn, address) => ({
      apiVersion: 'kubi.zone/v1alpha1',
      kind: 'Record',
      metadata: { name, namespace: NS },
      spec: { domainName: `${fqdn}.`, type: 'A', rdata: address },
    }),
    conflict: (o) => {
      const c = readyCondition(o, 'Ready');
      return c?.status === 'False' && c.reason === 'Conflict' ? c.message : undefined;
    },
    served: (o) => readyCondition(o, 'Ready')?.status === 'True',
    named: (name) => `Record ${NS}/${name} (kubi.zone)`,
  },
  {
    name: 'Gardener DNSRecord',
    resource: 'dnsrecords.extensions.gardener.cloud',
    record: (name, fqdn, address) => ({
      apiVersion: 'extensions.gardener.cloud/v1alpha1',
      kind: 'DNSRecord',
      metadata: { name, namespace: NS },
      spec: {
        type: 'zonekeeper',
        secretRef: { name: 'unused', namespace: NS },
        name: fqdn,
        recordType: 'A',
        values: [address],
      },
    }),
    conflict: (o) =>
      o?.status?.lastOperation?.state === 'Error' &&
      /conflict|older/i.test(o.status.lastError?.description ?? '')
        ? (o.status.lastError.description as string)
        : undefined,
    served: (o) => o?.status?.lastOperation?.state === 'Succeeded',
    named: (name) => `DNSRecord ${NS}/${name} (extensions.gardener.cloud)`,
  },
];

const DATUM: RecordApi = {
  name: 'Datum DNSRecordSet',
  resource: 'dnsrecordsets.dns.networking.miloapis.com',
  record: (name, fqdn, address) => ({
    apiVersion: 'dns.networking.miloapis.com/v1alpha1',
    kind: 'DNSRecordSet',
    metadata: { name, namespace: NS },
    spec: {
      dnsZoneRef: { name: 'example-org' },
      recordType: 'A',
      records: [{ name: fqdn.slice(0, -ZONE.length - 1), a: { content: address } }],
    },
  }),
  conflict: (o) => {
    const c = readyCondition(o, 'Accepted');
    return c?.status === 'False' && c.reason === 'Conflict' ? c.message : undefined;
  },
  served: (o) => readyCondition(o, 'Programmed')?.status === 'True',
  named: (name) => `DNSRecordSet ${NS}/${name} (dns.networking.miloapis.com)`,
};

const names = (message: string, winner: string | RegExp) =>
  typeof winner === 'string' ? message.includes(winner) : winner.test(message);

/** Object names: `own-<i>` publishes a name of its own, `shared-<i>` claims SHARED. */
const own = (i: number) => `own-${i}`;
const shared = (i: number) => `shared-${i}`;
const ownName = (i: number) => `api${i}.${ZONE}`;
const ownAddress = (i: number) => `192.0.2.${10 + i}`;
const sharedAddress = (i: number) => `198.51.100.${10 + i}`;

interface Scenario {
  title: string;
  apis: RecordApi[];
  /** The zone (and what it needs), applied before the records. */
  zone: object[];
  /** CRD files to install beside the chart's (Datum's kinds are installed apart). */
  crds?: string[];
}

const KUBIZONE_ZONE = {
  apiVersion: 'kubi.zone/v1alpha1',
  kind: 'Zone',
  metadata: { name: 'example-org', namespace: NS },
  spec: { domainName: `${ZONE}.`, delegations: [{ namespaces: [NS], records: [{ pattern: '*' }] }] },
};
const DATUM_ZONE = [
  {
    apiVersion: 'dns.networking.miloapis.com/v1alpha1',
    kind: 'DNSZoneClass',
    metadata: { name: 'datum' },
    spec: {
      controllerName: 'zonekeeper',
      nameServerPolicy: { mode: 'Static', static: { servers: ['ns1.example.net', 'ns2.example.net'] } },
    },
  },
  {
    apiVersion: 'dns.networking.miloapis.com/v1alpha1',
    kind: 'DNSZone',
    metadata: { name: 'example-org', namespace: NS },
    spec: { domainName: ZONE, dnsZoneClassName: 'datum' },
  },
];

const SCENARIOS: Scenario[] = [
  { title: 'a kubizone Zone', apis: APIS, zone: [KUBIZONE_ZONE] },
  {
    title: 'a Datum Cloud DNSZone',
    // The homelab record first (the oldest, see above); kubizone's Records join only kubizone Zones.
    apis: [APIS[0]!, APIS[1]!, DATUM, APIS[3]!],
    zone: DATUM_ZONE,
    crds: ['dnszoneclasses', 'dnszones', 'dnsrecordsets'].map((plural) =>
      path.join(ROOT, `deploy/crds/dns.networking.miloapis.com_${plural}.yaml`),
    ),
  },
];

for (const { title, apis: APIS, zone, crds } of SCENARIOS)
  describe(`a mixed cluster, into ${title}: every API into one zone, conflicts oldest-wins`, {
    timeout: 600_000,
  }, () => {
    let kube: KubeCluster;
    let operator: KubeProcess | undefined;
    let server: KubeProcess | undefined;

    const get = async (api: RecordApi, name: string): Promise<Json | undefined> => {
      const r = await kube.kubectl(['get', api.resource, '-n', NS, name, '-o', 'json']);
      return r.code === 0 ? JSON.parse(r.stdout) : undefined;
    };
    const answers = async (name: string) =>
      rdataOf(await dig(server!.dnsPort, name, 'A'), 'A')
        .sort()
        .join(',');
    const until = <T>(probe: () => Promise<T | undefined>) => waitFor(probe, 60_000, 100);
    const apply = (...objects: object[]) =>
      kube.kubectlOk(['apply', '-f', '-'], { input: objects.map((o) => `---\n${stringify(o)}`).join('') });

    before(async () => {
      kube = await startKube({ users: [OPERATOR, SERVER] });
      for (const ns of [SYSTEM, NS]) await kube.kubectlOk(['create', 'namespace', ns]);
      const rendered = await renderChart(kube.binDir, {
        namespace: SYSTEM,
        set: [
          // The homelab DNS API writes record sets (its ValidatingAdmissionPolicy limits which).
          'operator.apiWrites.enabled=true',
        ],
      });
      const rbac = chartAccessDocs(rendered, { admission: true });
      await kube.kubectlOk(['apply', '--server-side', '-f', '-'], { input: rbac });
      for (const file of crds ?? []) await kube.kubectlOk(['apply', '--server-side', '-f', file]);
      if (crds)
        await kube.kubectlOk([
          'wait',
          '--for=condition=Established',
          '--timeout=60s',
          ...crds.flatMap((f) => ['-f', f]),
        ]);
      await apply(
        {
          apiVersion: 'dns.zonekeeper.dev/v1alpha1',
          kind: 'DNSZoneClass',
          metadata: { name: 'builtin' },
          spec: { backend: { builtin: {} }, nameServers: ['ns1.example.net.', 'ns2.example.net.'] },
        },
        ...zone,
      );
      // The homelab caller: the namespace its writes land in, its HMAC secret.
      const secretFile = path.join(kube.dir, 'homelab-secret');
      await writeFile(secretFile, `${HOMELAB_SECRET}\n`);
      const accessFile = path.join(kube.dir, 'write-access.yaml');
      await writeFile(
        accessFile,
        stringify({
          credentials: [
            { name: 'homelab', kind: 'webhook-hmac', namespace: NS, secretRef: { file: secretFile } },
          ],
        }),
      );
      operator = await startOperatorProcess('operator', kube.kubeconfigFor(OPERATOR), SYSTEM, [
        '--write-access',
        accessFile,
        '--homelab-api',
        '127.0.0.1:0',
      ]);
      await waitFor(async () => (/accepting API writes/.test(operator!.log()) ? true : undefined), 60_000);
      const port = /homelabApi="127\.0\.0\.1:(\d+)"/.exec(operator.log())?.[1];
      assert.ok(port, operator.log());
      await apply(homelabClass(port), ...APIS.map((api, i) => api.record(own(i), ownName(i), ownAddress(i))));
      server = await startServerProcess('server', kube.kubeconfigFor(SERVER));
    });

    after(async () => {
      await Promise.all([operator?.stop(), server?.stop()].map((p) => p?.catch(() => {})));
      if (process.env.KUBE_E2E_LOGS) {
        const { mkdir } = await import('node:fs/promises');
        await mkdir(process.env.KUBE_E2E_LOGS, { recursive: true });
        for (const p of [operator, server])
          if (p) await writeFile(path.join(process.env.KUBE_E2E_LOGS, `${p.name}.log`), p.log());
      }
      await kube?.stop();
    });

    test('each API publishes into the same zone; zonekeeper server answers all of them', async () => {
      for (const [i, api] of APIS.entries()) {
        await until(async () => ((await answers(ownName(i))) === ownAddress(i) ? true : undefined));
        await until(async () => (api.served(await get(api, own(i))) ? true : undefined));
      }
    });

    test('one name claimed by every API: the oldest wins, each loser says so in its own status', async () => {
      // Created one after the other, each once the one before is served or refused: APIS order is age order.
      for (const [i, api] of APIS.entries()) {
        await apply(api.record(shared(i), SHARED, sharedAddress(i)));
        await until(async () => {
          const o = await get(api, shared(i));
          return api.served(o) || api.conflict(o) ? true : undefined;
        });
        // Creation times have a resolution of one second: the next is at least a second younger.
        await new Promise((r) => setTimeout(r, 1100));
      }
      await until(async () => ((await answers(SHARED)) === sharedAddress(0) ? true : undefined));
      assert.ok(APIS[0]!.served(await get(APIS[0]!, shared(0))));
      for (const [i, api] of APIS.entries()) {
        if (i === 0) continue;
        const { value: why } = await until(async () => api.conflict(await get(api, shared(i))));
        assert.ok(names(why, APIS[0]!.named(shared(0))), `${api.name}: ${why}`);
      }
    });

    test('the winner goes: the next oldest, of another API, takes the name; the rest still lose', async () => {
      await kube.kubectlOk(['delete', APIS[0]!.resource, '-n', NS, shared(0), '--wait=false']);
      await until(async () => ((await answers(SHARED)) === sharedAddress(1) ? true : undefined));
      await until(async () => (APIS[1]!.served(await get(APIS[1]!, shared(1))) ? true : undefined));
      for (const [i, api] of APIS.entries()) {
        if (i < 2) continue;
        // It now loses to the new winner, and says which.
        const { value: why } = await until(async () => {
          const m = api.conflict(await get(api, shared(i)));
          return m && !m.includes(shared(0)) ? m : undefined;
        });
        assert.ok(names(why, APIS[1]!.named(shared(1))), `${api.name}: ${why}`);
      }
      // The names of their own are untouched.
      for (const [i] of APIS.entries()) assert.equal(await answers(ownName(i)), ownAddress(i));
    });
  });
