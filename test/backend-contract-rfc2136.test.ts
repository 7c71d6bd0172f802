/**
 * The RFC 2136 backend against the backend contract kit, on a real Knot DNS (`knotd`) and a real BIND
 * (`named`), each an UPDATE-accepting primary with TSIG, made through the backend registry. State is
 * read from the server by AXFR (with the transfer-only key, not through the backend); drift, a
 * record set in the way and the RRsets ignore rules keep are made by hand with nsupdate; the outage
 * is the server stopped.
 *
 * The zones exist on the server before Zonekeeper programs them (an RFC 2136 primary is configured
 * with its zones): "the server holds the zone" here means it holds Zonekeeper's ownership record,
 * and deleting a zone removes everything Zonekeeper owns in it, the ownership record last.
 */
import { BuiltinBackend } from '../src/backends/builtin/builtin-backend.ts';
import { heldFromRecords } from '../src/backends/contract/held.ts';
import { backendContract, rrset } from '../src/backends/contract/kit.ts';
import { type BackendFactory, createBackendFactory } from '../src/backends/registry.ts';
import { ownershipName } from '../src/backends/rfc2136/plan.ts';
import { fileAndEnvSecrets } from '../src/control/secrets.ts';
import { nameEquals } from '../src/dns/name.ts';
import { printRdata, type Rdata } from '../src/dns/rdata.ts';
import { RRType, typeName } from '../src/dns/rrtype.ts';
import { parseTsigKey } from '../src/dns/tsig.ts';
import { AxfrError, axfr } from '../src/server/transfer/axfr-client.ts';
import { ZoneTable } from '../src/server/zone-table.ts';
import { zoneClass } from './support/resources.ts';
import { newKey, startUpdatePrimary, type UpdatePrimary } from './support/update-primaries.ts';

const ZONES = Array.from({ length: 12 }, (_, i) => `t${i + 1}.contract.example.`);

for (const kind of ['knot', 'bind'] as const) {
  let primary: UpdatePrimary;
  let factory: BackendFactory;
  const updateKey = newKey('zonekeeper-update');
  const transferKey = newKey('transfer-only');
  const handKey = newKey('by-hand');
  backendContract(`rfc2136 (${kind === 'knot' ? 'knotd' : 'named'})`, {
    start: async () => {
      primary = await startUpdatePrimary({ kind, zones: ZONES, updateKey, transferKey, handKey });
      factory = createBackendFactory({
        builtin: new BuiltinBackend(new ZoneTable()),
        secrets: fileAndEnvSecrets({ ZK_CONTRACT_RFC2136_KEY: updateKey.secret }),
      });
      return factory(
        zoneClass('rfc2136', ['ns1.contract.example.'], {
          backend: {
            rfc2136: {
              server: '127.0.0.1',
              port: primary.port,
              tsigKey: {
                name: updateKey.name,
                algorithm: updateKey.algorithm,
                secretRef: { env: 'ZK_CONTRACT_RFC2136_KEY' },
              },
              timeoutSeconds: 5,
            },
          },
        }),
      );
    },
    stop: async () => {
      factory?.close();
      await primary?.close();
    },
    read: async (origin) => {
      let records: Awaited<ReturnType<typeof axfr>>['records'];
      try {
        ({ records } = await axfr({
          host: '127.0.0.1',
          port: primary.port,
          zone: origin,
          key: parseTsigKey(transferKey),
          timeoutMs: 5000,
          maxRecords: 100_000,
        }));
      } catch (e) {
        if (e instanceof AxfrError && e.code === 'AXFR_REFUSED') return undefined;
        throw e;
      }
      const marker = ownershipName(origin);
      if (!records.some((r) => r.type === RRType.TXT && nameEquals(r.name, marker))) return undefined;
      return heldFromRecords(
        origin,
        records
          .filter((r) => !(r.type === RRType.TXT && nameEquals(r.name, marker)))
          .map((r) => ({ owner: r.name, type: typeName(r.type), rdata: printRdata(r.data as Rdata) })),
      );
    },
    drift: async (origin, changed) => {
      await primary.nsupdate(origin, [
        `update delete ${changed.owner} ${changed.type}`,
        `update add ${changed.owner} 300 ${changed.type} 203.0.113.99`,
        `update delete docs.${origin} CNAME`,
      ]);
    },
    handMade: async (origin, made) => {
      // By hand, as an operator would: the RRset replaced whole, in one UPDATE.
      await primary.nsupdate(origin, [
        `update delete ${made.owner} ${made.type}`,
        ...made.rdata.map((r) => `update add ${made.owner} ${made.ttl} ${made.type} ${printRdata(r)}`),
      ]);
    },
    refuse: async (origin) => {
      // A hand-made RRset where the zone wants one: the server holds it, Zonekeeper must not take it.
      await primary.nsupdate(origin, [`update add taken.${origin} 300 A 198.51.100.8`]);
      return { rrset: rrset(origin, 'taken', 'A', ['192.0.2.8']), reason: 'Conflict' };
    },
    outage: async () => {
      await primary.halt();
      return () => primary.start();
    },
  });
}
