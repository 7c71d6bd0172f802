/**
 * The homelab webhook backend against the backend contract kit, programming zones into Zonekeeper's
 * own provider: a `zonekeeper serve --homelab-api` whose manifests serve each zone the kit names
 * (`t<n>.contract.example`), every one delegating its apex and every name below it to the caller's
 * namespace `contract` for the types the kit writes (NS, A, AAAA, CNAME, MX, TXT). The backend's
 * caller is the provider's `webhook-hmac` credential `contract-caller` of namespace `contract`.
 *
 * Each kit zone is a served zone of its own, not a name under one served parent: the kit's zones
 * carry an apex NS RRset, and written under a parent zone that NS is a delegation that leaves every
 * other record of the zone below a zone cut, never served. In a served zone the apex NS the caller
 * writes is stored but not served (apex NS records come from the DNSZoneClass's `nameServers`, which
 * are set to the kit's two name servers), so what DNS answers is still exactly the kit's zone.
 *
 * - read: the provider's state from the provider — its resources API (which record sets the caller
 *   wrote, and whether they are reconciled) and its DNS (AXFR of the zone) — never through the backend.
 * - drift and handMade: upserts and deletes signed by hand here (node:crypto, not Zonekeeper's
 *   signing code) with the caller's own secret. A second caller of the same namespace could not
 *   change these record sets: the record writer answers `403 NOT_OWNER` to a write of a record set
 *   another caller wrote. So the change behind the backend's back is someone else using the same
 *   key, which is what the provider cannot tell apart from the backend and must be repaired.
 * - refuse: an SRV record, a type no delegation admits: `403 NOT_DELEGATED`, reported on the record
 *   set as BackendRejected.
 * - outage: the provider process stopped (SIGSTOP) so requests time out; SIGCONT brings it back.
 */
import assert from 'node:assert/strict';
import { createHmac, randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { BuiltinBackend } from '../src/backends/builtin/builtin-backend.ts';
import { heldFromRecords } from '../src/backends/contract/held.ts';
import { backendContract, rrset } from '../src/backends/contract/kit.ts';
import { type BackendFactory, createBackendFactory } from '../src/backends/registry.ts';
import { fileAndEnvSecrets } from '../src/control/secrets.ts';
import { type Name, nameKey } from '../src/dns/name.ts';
import type { Rdata } from '../src/dns/rdata/types.ts';
import { printRdata } from '../src/dns/rdata.ts';
import { typeName } from '../src/dns/rrtype.ts';
import { axfr } from '../src/server/transfer/axfr-client.ts';
import { ZoneTable } from '../src/server/zone-table.ts';
import { zoneClass } from './support/resources.ts';
import { removeAll, type ServeProcess, startServe, tempDir, waitFor } from './support/zonekeeper-process.ts';

const SECRET = 'contract-zonekeeper-secret';
const NAMESPACE = 'contract';
/** The backend's credential at the provider (a `webhook-hmac` caller of the write-access file). */
const CALLER = 'contract-caller';
/** More zones than the kit names (it counts t1, t2, … per suite). */
const ZONES = 16;

function manifests(): string {
  const docs = [
    `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZoneClass
metadata: {name: contract}
spec:
  backend: {builtin: {}}
  nameServers: [ns1.contract.example., ns2.contract.example.]
  transfers: {allowFrom: [127.0.0.1], requireTsig: false}
`,
  ];
  for (let i = 1; i <= ZONES; i++)
    docs.push(`apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZone
metadata: {name: t${i}, namespace: dns}
spec:
  domainName: t${i}.contract.example
  className: contract
  delegations:
    - {namespaces: [${NAMESPACE}], names: ['@', '*'], types: [NS, A, AAAA, CNAME, MX, TXT]}
`);
  return docs.join('---\n');
}

interface Item {
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    generation?: number;
    deletionTimestamp?: string;
    labels?: Record<string, string>;
  };
  spec: { name?: string; type?: string };
  status?: {
    observedGeneration?: number;
    zone?: { namespace: string; name: string };
    conditions?: { type: string; status: string; reason: string; observedGeneration?: number }[];
  };
}

let dir: string;
let provider: ServeProcess;
let apiPort: string;
let factory: BackendFactory;

/** One protocol request signed here by hand (HMAC-SHA256 over method, path, timestamp, nonce, body). */
async function signed(method: 'POST' | 'DELETE', requestPath: string, body?: unknown): Promise<void> {
  const timestamp = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const nonce = randomUUID();
  const text = body === undefined ? undefined : JSON.stringify(body);
  const signature = createHmac('sha256', SECRET)
    .update([method, requestPath, timestamp, nonce, ...(text === undefined ? [] : [text])].join('\n'))
    .digest('hex');
  const answer = await fetch(`http://127.0.0.1:${apiPort}${requestPath}`, {
    method,
    headers: {
      'content-type': 'application/json',
      'X-DNS-Timestamp': timestamp,
      'X-DNS-Nonce': nonce,
      'X-DNS-Signature': signature,
    },
    ...(text !== undefined ? { body: text } : {}),
  });
  assert.equal(answer.status, 200, `${method} ${requestPath}: ${await answer.text()}`);
}

const where = (origin: Name, owner: Name) => ({
  domain: origin.replace(/\.$/, ''),
  subdomain: nameKey(owner) === nameKey(origin) ? '@' : owner.slice(0, -origin.length - 1),
});

/** Record sets the caller wrote into the served zone `origin`, from the provider's resources API. */
async function written(origin: Name): Promise<Item[]> {
  const items = ((await (await fetch(`${provider.httpUrl}/api/v1/resources`)).json()) as { items: Item[] })
    .items;
  const zone = nameKey(origin);
  return items.filter(
    (i) =>
      i.kind === 'DNSRecordSet' &&
      i.metadata.namespace === NAMESPACE &&
      i.metadata.labels?.['dns.zonekeeper.dev/written-by'] === CALLER &&
      (nameKey(i.spec.name ?? '') === zone || nameKey(i.spec.name ?? '').endsWith(`.${zone}`)),
  );
}

/** Whether every record set has been taken in by the controller (or refused by it) at its generation. */
const reconciled = (i: Item) =>
  i.metadata.deletionTimestamp === undefined &&
  i.status?.observedGeneration === i.metadata.generation &&
  (i.status?.conditions ?? []).some(
    (c) =>
      c.observedGeneration === i.metadata.generation &&
      ((c.type === 'Programmed' && c.status === 'True') || (c.type === 'Accepted' && c.status === 'False')),
  );

const isApexNs = (origin: Name, i: Item) =>
  i.spec.type === 'NS' && nameKey(i.spec.name ?? '') === nameKey(origin);

async function served(origin: Name) {
  const { records } = await axfr({
    host: '127.0.0.1',
    port: provider.dnsPort,
    zone: origin,
    timeoutMs: 5000,
    maxRecords: 10_000,
  });
  return records
    .filter((r) => typeName(r.type) !== 'SOA')
    .map((r) => ({ owner: r.name, type: typeName(r.type), rdata: printRdata(r.data as Rdata) }));
}

backendContract("homelabWebhook (Zonekeeper's provider, serve --homelab-api)", {
  start: async () => {
    dir = await tempDir('contract-homelab-zk');
    await mkdir(path.join(dir, 'zones'));
    await writeFile(path.join(dir, 'zones', 'zones.yaml'), manifests());
    await writeFile(path.join(dir, 'secret'), `${SECRET}\n`);
    // The caller, with a rate above the default quota's (5 requests/s, burst 20): the kit writes faster.
    await writeFile(
      path.join(dir, 'write-access.yaml'),
      `credentials:
  - {name: ${CALLER}, kind: webhook-hmac, namespace: ${NAMESPACE}, secretRef: {file: ${path.join(dir, 'secret')}}}
quotas:
  ${NAMESPACE}: {requestsPerSecond: 10000, burst: 10000}
`,
    );
    provider = await startServe(path.join(dir, 'zones'), path.join(dir, 'state'), [
      '--homelab-api',
      '127.0.0.1:0',
      '--write-access',
      path.join(dir, 'write-access.yaml'),
    ]);
    const port = /homelabApi="127\.0\.0\.1:(\d+)"/.exec(provider.log())?.[1];
    assert.ok(port, provider.log());
    apiPort = port;
    factory = createBackendFactory({
      builtin: new BuiltinBackend(new ZoneTable()),
      secrets: fileAndEnvSecrets({}),
    });
    return factory(
      zoneClass('homelab', ['ns1.contract.example.'], {
        backend: {
          homelabWebhook: {
            url: `http://127.0.0.1:${port}`,
            hmacAuth: { secretRef: { file: path.join(dir, 'secret') }, algorithm: 'SHA256' },
            timeoutSeconds: 2,
          },
        },
      }),
    );
  },
  stop: async () => {
    factory?.close();
    await provider?.stop();
    if (dir) await removeAll(dir);
  },
  read: async (origin) => {
    // The writer answers once a write is durable; serving follows. Read once the controller has taken
    // in every record set the caller wrote here and DNS serves exactly the ones it programmed.
    const settled = async () => {
      const sets = await written(origin);
      if (!sets.every(reconciled)) return undefined;
      const rrsets = await served(origin);
      const want = new Set(
        sets
          .filter((i) => !isApexNs(origin, i))
          .filter((i) => i.status?.conditions?.some((c) => c.type === 'Programmed' && c.status === 'True'))
          .map((i) => `${nameKey(i.spec.name!)} ${i.spec.type}`),
      );
      const got = new Set(
        rrsets
          .filter((r) => !(r.type === 'NS' && nameKey(r.owner) === nameKey(origin)))
          .map((r) => `${nameKey(r.owner)} ${r.type}`),
      );
      if (want.size !== got.size || [...want].some((k) => !got.has(k))) return undefined;
      return { sets, rrsets };
    };
    let state: Awaited<ReturnType<typeof settled>>;
    try {
      state = (await waitFor(settled, 15_000, 50)).value;
    } catch {
      // Not settled: report what is there and let the kit's assertion say what differs.
      state = { sets: await written(origin), rrsets: await served(origin) };
    }
    // The zone is served whatever the caller wrote; the caller holds it when it wrote something there.
    if (state.sets.length === 0) return undefined;
    return heldFromRecords(origin, state.rrsets);
  },
  drift: async (origin, changed) => {
    await signed('POST', '/records', {
      record: { type: changed.type, ...where(origin, changed.owner), values: ['203.0.113.99'], ttl: 300 },
      operation: 'upsert',
    });
    const docs = where(origin, `docs.${origin}`);
    await signed('DELETE', `/records/CNAME/${docs.domain}/${docs.subdomain}`);
  },
  handMade: async (origin, made) => {
    // The kit hands A and TXT RRsets.
    const values = made.rdata.map((r) => {
      const text = printRdata(r);
      return made.type === 'TXT' ? (JSON.parse(text) as string) : text;
    });
    await signed('POST', '/records', {
      record: { type: made.type, ...where(origin, made.owner), values, ttl: made.ttl },
      operation: 'upsert',
    });
  },
  refuse: async (origin) => ({
    // No delegation admits SRV: the provider answers 403 NOT_DELEGATED.
    rrset: rrset(origin, '_sip._tcp', 'SRV', ['0 5 5060 sip.contract.example.']),
    reason: 'BackendRejected',
  }),
  outage: async () => {
    process.kill(provider.pid, 'SIGSTOP');
    return async () => {
      process.kill(provider.pid, 'SIGCONT');
    };
  },
});
