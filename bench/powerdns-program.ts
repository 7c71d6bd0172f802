/**
 * Programming PowerDNS: Zonekeeper's backend (read back, one PATCH per zone) against a naive client
 * that sends one PATCH per RRset (what per-record operators do), on the same pdns_server.
 *
 *   npx node bench/powerdns-program.ts [--zones 100] [--records 100] [--runs 3] [--storage lmdb|sqlite]
 *
 * Each run programs `zones × records` records (one record per RRset: A, AAAA, TXT, MX) into fresh zones
 * with each client, then changes 10% of the records of every zone. Zonekeeper goes through its real
 * path (Controller, MemoryStore, backend factory, PowerDnsBackend) and is timed until every zone is
 * Programmed (its serial read back); the naive client until its last PATCH returns. Both use the same
 * HTTP client and two zones at a time. Prints a Markdown table for docs/benchmarks.md.
 */
import { availableParallelism, cpus } from 'node:os';
import { parseArgs } from 'node:util';
import type { DNSZone } from '../src/api/index.ts';
import { BuiltinBackend } from '../src/backends/builtin/builtin-backend.ts';
import { PowerDnsClient } from '../src/backends/powerdns/client.ts';
import { type ApplyStats, PowerDnsBackend } from '../src/backends/powerdns/powerdns-backend.ts';
import { BACKENDS, createBackendFactory } from '../src/backends/registry.ts';
import { Controller } from '../src/control/controller.ts';
import { MemoryStore } from '../src/control/memory-store.ts';
import { MemorySerialStore } from '../src/control/serial-store.ts';
import { ZoneTable } from '../src/server/zone-table.ts';
import { type PowerDnsStorage, startPowerDns } from '../test/support/powerdns.ts';
import { recordSet, zone, zoneClass } from '../test/support/resources.ts';

const { values } = parseArgs({
  options: {
    zones: { type: 'string', default: '100' },
    records: { type: 'string', default: '100' },
    runs: { type: 'string', default: '3' },
    storage: { type: 'string', default: 'lmdb' },
  },
});
const ZONES = Number(values.zones);
const RECORDS = Number(values.records);
const RUNS = Number(values.runs);
const STORAGE = values.storage as PowerDnsStorage;
const CONCURRENCY = 2; // the controller's zone work queue runs two zones at a time
const NAME_SERVERS = ['ns1.example.net.', 'ns2.example.net.'];

interface Rec {
  name: string;
  type: 'A' | 'AAAA' | 'TXT' | 'MX';
  value: string;
}

/** The records of zone `z`; `version` changes every tenth record. */
function records(z: number, version: number): Rec[] {
  const out: Rec[] = [];
  for (let i = 0; i < RECORDS; i++) {
    const v = i % 10 === 0 ? version : 0;
    const kind = i % 10;
    if (kind < 7)
      out.push({ name: `host-${i}`, type: 'A', value: `10.${z % 250}.${(i >> 8) & 255}.${(i + v) & 255}` });
    else if (kind < 9)
      out.push({
        name: `host-${i}`,
        type: 'AAAA',
        value: `2001:db8:${z.toString(16)}::${(i + v).toString(16)}`,
      });
    else if (i % 20 === 9)
      out.push({ name: `txt-${i}`, type: 'TXT', value: `"v=spf1 ip4:192.0.2.${i % 250} -all" "${v}"` });
    else out.push({ name: `mx-${i}`, type: 'MX', value: `${10 + v} mail-${i}.example.net.` });
  }
  return out;
}

async function pool<T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

const pdns = await startPowerDns({ storage: STORAGE });
const client = new PowerDnsClient({
  url: pdns.apiUrl,
  serverId: 'localhost',
  apiKey: async () => pdns.apiKey,
  timeoutMs: 60_000,
});

/** One PATCH per RRset, after creating the zone with its name servers. */
async function naive(
  origins: string[],
  version: number,
  create: boolean,
): Promise<{ ms: number; requests: number }> {
  let requests = 0;
  // PowerDNS on SQLite answers 500 ("database is locked") to concurrent writes: try again, as any
  // client must (Zonekeeper's work queue does the same, with backoff).
  const send = async (method: string, path: string, body: unknown): Promise<void> => {
    for (let attempt = 0; ; attempt++) {
      requests++;
      try {
        await client.request(method, path, method, { body });
        return;
      } catch (e) {
        if ((e as { code?: string }).code !== 'PDNS_SERVER_ERROR' || attempt >= 50) throw e;
        await new Promise((r) => setTimeout(r, 5));
      }
    }
  };
  const started = performance.now();
  await pool(
    origins.map((o, z) => ({ o, z })),
    async ({ o, z }) => {
      if (create) {
        await send('POST', client.serverPath('/zones'), {
          name: o,
          kind: 'Native',
          nameservers: NAME_SERVERS,
          soa_edit_api: '',
        });
      }
      for (const r of records(z, version)) {
        if (!create && version > 0 && !(Number(r.name.split('-')[1]) % 10 === 0)) continue;
        await send('PATCH', client.zonePath(o), {
          rrsets: [
            {
              name: `${r.name}.${o}`,
              type: r.type,
              ttl: 300,
              changetype: 'REPLACE',
              records: [{ content: r.value, disabled: false }],
            },
          ],
        });
      }
    },
  );
  return { ms: performance.now() - started, requests };
}

/** Zonekeeper's path: resources into a MemoryStore, the Controller programs PowerDNS. */
async function zonekeeper(suffix: string) {
  const store = new MemoryStore();
  const stats: ApplyStats[] = [];
  const secrets = async () => pdns.apiKey;
  let readBacks = 0;
  /** Counts the controller's serial read-backs (one GET each). */
  class Counting extends PowerDnsBackend {
    override servedSerial(origin: string) {
      readBacks++;
      return super.servedSerial(origin);
    }
  }
  const factory = createBackendFactory({
    builtin: new BuiltinBackend(new ZoneTable()),
    secrets,
    registry: {
      ...BACKENDS,
      powerdns: {
        ...BACKENDS.powerdns,
        create: (settings) => new Counting({ settings, secrets, onApply: (_o, s) => stats.push(s) }),
      },
    },
  });
  const controller = new Controller({ store, backend: factory, serials: new MemorySerialStore() });
  store.apply(
    zoneClass('pdns', NAME_SERVERS, {
      backend: { powerdns: { url: pdns.apiUrl, apiKeySecretRef: { env: 'UNUSED' }, resyncSeconds: 86400 } },
    }),
  );
  const apply = (version: number) => {
    for (let z = 0; z < ZONES; z++) {
      if (version === 0)
        store.apply(zone('bench', `z${z}`, `zone-${z}.${suffix}.test`, { className: 'pdns' }));
      for (const r of records(z, version)) {
        if (version > 0 && Number(r.name.split('-')[1]) % 10 !== 0) continue;
        store.apply(
          recordSet('bench', `z${z}-${r.name}-${r.type.toLowerCase()}`, {
            zoneRef: { name: `z${z}` },
            name: r.name,
            type: r.type,
            records: [r.value],
          }),
        );
      }
    }
  };
  const allProgrammed = (after: Map<string, number>) =>
    store.list('DNSZone').every((o) => {
      const z = o as DNSZone;
      const c = z.status?.conditions?.find((x) => x.type === 'Programmed');
      return c?.status === 'True' && (z.status?.serial ?? 0) > (after.get(z.metadata.name) ?? 0);
    });
  const serials = () =>
    new Map(store.list('DNSZone').map((o) => [o.metadata.name, (o as DNSZone).status?.serial ?? 0]));
  const timed = async (version: number) => {
    const before = serials();
    const mark = stats.length;
    const readBacksBefore = readBacks;
    const started = performance.now();
    apply(version);
    // Until every zone is Programmed at its new serial (later reconciles, e.g. to hash, do not count).
    while (!allProgrammed(before)) await new Promise((r) => setTimeout(r, 5));
    const ms = performance.now() - started;
    await controller.idle();
    await new Promise((r) => setTimeout(r, 1500)); // the follow-up (hash) reconciles, for the count
    const done = stats.slice(mark);
    return {
      ms,
      requests: done.reduce((n, s) => n + s.requests, 0) + readBacks - readBacksBefore,
      patches: done.reduce((n, s) => n + s.patches, 0),
    };
  };
  controller.start();
  const create = await timed(0);
  const update = await timed(1);
  controller.stop();
  factory.close();
  return { create, update };
}

async function deleteAll(): Promise<void> {
  const zones = (await client.json<{ name: string }[]>('GET', client.serverPath('/zones'), 'GET zones')).map(
    (z) => z.name,
  );
  await pool(zones, async (name) => {
    await client.request('DELETE', client.zonePath(name), 'DELETE', { expect: [404] });
  });
}

/** Both clients left the same records: compares the RRsets of one zone of each. */
async function check(run: number): Promise<void> {
  const a = await client.json<{ rrsets: { name: string; type: string; records: { content: string }[] }[] }>(
    'GET',
    client.zonePath(`zone-7.naive${run}.test.`),
    'GET',
  );
  const b = await client.json<{ rrsets: { name: string; type: string; records: { content: string }[] }[] }>(
    'GET',
    client.zonePath(`zone-7.zk${run}.test.`),
    'GET',
  );
  const norm = (z: typeof a, origin: string) =>
    z.rrsets
      .filter((r) => r.type !== 'SOA' && r.type !== 'NS')
      .map((r) => `${r.name.replace(origin, '')} ${r.type} ${r.records.map((x) => x.content).join(',')}`)
      .sort()
      .join('\n');
  if (norm(a, `zone-7.naive${run}.test.`) !== norm(b, `zone-7.zk${run}.test.`))
    throw new Error('the two clients left different records');
}

const results: {
  naive: { ms: number; requests: number }[];
  naiveUpdate: { ms: number; requests: number }[];
  zk: { ms: number; requests: number; patches: number }[];
  zkUpdate: { ms: number; requests: number; patches: number }[];
} = { naive: [], naiveUpdate: [], zk: [], zkUpdate: [] };
try {
  for (let run = 0; run < RUNS; run++) {
    const origins = Array.from({ length: ZONES }, (_, z) => `zone-${z}.naive${run}.test.`);
    results.naive.push(await naive(origins, 0, true));
    results.naiveUpdate.push(await naive(origins, 1, false));
    const zk = await zonekeeper(`zk${run}`);
    results.zk.push(zk.create);
    results.zkUpdate.push(zk.update);
    await check(run);
    await deleteAll();
    process.stderr.write(
      `run ${run + 1}/${RUNS}: naive ${results.naive.at(-1)!.ms.toFixed(0)} ms, zonekeeper ${zk.create.ms.toFixed(0)} ms; update: naive ${results.naiveUpdate.at(-1)!.ms.toFixed(0)} ms, zonekeeper ${zk.update.ms.toFixed(0)} ms\n`,
    );
  }
} finally {
  client.close();
  await pdns.stop();
}

const row = (
  what: string,
  n: { ms: number; requests: number }[],
  z: { ms: number; requests: number; patches: number }[],
) => {
  const nm = median(n.map((x) => x.ms));
  const zm = median(z.map((x) => x.ms));
  return `| ${what} | ${(nm / 1000).toFixed(2)} s (${n[0]!.requests} requests) | ${(zm / 1000).toFixed(2)} s (${z[0]!.requests} requests, ${z[0]!.patches} PATCHes) | ${(nm / zm).toFixed(1)}× |`;
};
const total = ZONES * RECORDS;
console.log(
  `PowerDNS ${pdns.version} (${STORAGE === 'lmdb' ? 'LMDB, seed settings' : 'SQLite'}), ${ZONES} zones × ${RECORDS} records, median of ${RUNS} runs, ${cpus()[0]?.model ?? 'CPU'} × ${availableParallelism()}, Node ${process.version}`,
);
console.log('');
console.log('| scenario | one PATCH per RRset | Zonekeeper | speed-up |');
console.log('| --- | --- | --- | --- |');
console.log(row(`create ${total.toLocaleString('en')} records`, results.naive, results.zk));
console.log(
  row(
    `change ${(total / 10).toLocaleString('en')} records (10% of each zone)`,
    results.naiveUpdate,
    results.zkUpdate,
  ),
);
