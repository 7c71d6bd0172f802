/**
 * The PowerDNS backend against the backend contract kit, on a real pdns_server (LMDB with the
 * settings of Datum Cloud's deployment, and SQLite), made through the backend registry. State is read
 * from PowerDNS's own API; drift and a record set in the way are made by hand through that API; the
 * outage is pdns_server stopped.
 */

import { BuiltinBackend } from '../src/backends/builtin/builtin-backend.ts';
import { heldFromRecords } from '../src/backends/contract/held.ts';
import { backendContract, rrset } from '../src/backends/contract/kit.ts';
import { type BackendFactory, createBackendFactory } from '../src/backends/registry.ts';
import { fileAndEnvSecrets } from '../src/control/secrets.ts';
import { printRdata } from '../src/dns/rdata.ts';
import { ZoneTable } from '../src/server/zone-table.ts';
import { type PowerDnsProcess, startPowerDns } from './support/powerdns.ts';
import { zoneClass } from './support/resources.ts';

/** A change by hand through the API (SQLite answers 500 "database is locked" now and then: again). */
async function hand(pdns: PowerDnsProcess, origin: string, rrsets: unknown[]): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const r = await pdns.api('PATCH', `/api/v1/servers/localhost/zones/${origin}`, { rrsets });
    if (r.status === 204 || r.status === 200) return;
    if (r.status !== 500 || attempt >= 20)
      throw new Error(`PATCH ${origin}: ${r.status} ${JSON.stringify(r.body)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const replace = (name: string, type: string, contents: string[]) => ({
  name,
  type,
  ttl: 300,
  changetype: 'REPLACE',
  records: contents.map((content) => ({ content, disabled: false })),
});

for (const storage of ['lmdb', 'sqlite'] as const) {
  let pdns: PowerDnsProcess;
  let factory: BackendFactory;
  backendContract(`powerdns (pdns_server, ${storage})`, {
    start: async () => {
      pdns = await startPowerDns({ storage });
      factory = createBackendFactory({
        builtin: new BuiltinBackend(new ZoneTable()),
        secrets: fileAndEnvSecrets({ ZK_CONTRACT_PDNS_KEY: pdns.apiKey }),
      });
      return factory(
        zoneClass('pdns', ['ns1.contract.example.'], {
          backend: {
            powerdns: {
              url: pdns.apiUrl,
              apiKeySecretRef: { env: 'ZK_CONTRACT_PDNS_KEY' },
              timeoutSeconds: 5,
            },
          },
        }),
      );
    },
    stop: async () => {
      factory?.close();
      await pdns?.stop();
    },
    read: async (origin) => {
      const r = await pdns.api('GET', `/api/v1/servers/localhost/zones/${origin}`);
      if (r.status === 404 || r.status === 422) return undefined;
      if (r.status !== 200) throw new Error(`GET ${origin}: ${r.status} ${JSON.stringify(r.body)}`);
      const rrsets = (r.body as { rrsets: { name: string; type: string; records: { content: string }[] }[] })
        .rrsets;
      return heldFromRecords(
        origin,
        rrsets.flatMap((s) => s.records.map((x) => ({ owner: s.name, type: s.type, rdata: x.content }))),
      );
    },
    drift: async (origin, changed) => {
      await hand(pdns, origin, [
        replace(changed.owner, changed.type, ['203.0.113.99']),
        { name: `docs.${origin}`, type: 'CNAME', changetype: 'DELETE' },
      ]);
    },
    handMade: async (origin, made) => {
      await hand(pdns, origin, [
        replace(
          made.owner,
          made.type,
          made.rdata.map((r) => printRdata(r)),
        ),
      ]);
    },
    refuse: async (origin) => {
      // A hand-made RRset where the zone wants one: PowerDNS holds it, Zonekeeper must not take it.
      await hand(pdns, origin, [replace(`taken.${origin}`, 'A', ['198.51.100.8'])]);
      return { rrset: rrset(origin, 'taken', 'A', ['192.0.2.8']), reason: 'Conflict' };
    },
    outage: async () => {
      await pdns.halt();
      return () => pdns.start();
    },
  });
}
