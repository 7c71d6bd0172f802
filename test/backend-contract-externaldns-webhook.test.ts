/**
 * The ExternalDNS webhook backend against the backend contract kit, programming zones into
 * ExternalDNS's own webhook server and in-memory provider (test/gotools/externaldns-inmemory-webhook,
 * built from the sigs.k8s.io/external-dns module), made through the backend registry. State is read
 * from the provider's own listing (`GET /records`, ownership records left out); drift and hand-made
 * records are `POST /records` batches sent to the provider directly; the refused record set is one a
 * real ExternalDNS instance with another owner ID (its webhook client, TXT registry and planner, in
 * test/gotools/externaldns-webhook-owner) already owns, so the backend reports a Conflict; the outage
 * is the provider process stopped (SIGSTOP: connections hang until the request times out).
 */
import { BuiltinBackend } from '../src/backends/builtin/builtin-backend.ts';
import { backendContract, rrset } from '../src/backends/contract/kit.ts';
import { type BackendFactory, createBackendFactory } from '../src/backends/registry.ts';
import { fileAndEnvSecrets } from '../src/control/secrets.ts';
import { printRdata } from '../src/dns/rdata.ts';
import { ZoneTable } from '../src/server/zone-table.ts';
import { heldZone } from './support/externaldns-held.ts';
import {
  externalDnsOwner,
  type InMemoryWebhook,
  startInMemoryWebhook,
} from './support/externaldns-webhook.ts';
import { zoneClass } from './support/resources.ts';

let provider: InMemoryWebhook;
let factory: BackendFactory;
let pid: number | undefined;

const bare = (name: string) => name.toLowerCase().replace(/\.$/, '');

backendContract('externalDNSWebhook (ExternalDNS in-memory provider)', {
  start: async () => {
    provider = await startInMemoryWebhook({
      zones: ['contract.example'],
      domainFilter: ['contract.example'],
    });
    factory = createBackendFactory({
      builtin: new BuiltinBackend(new ZoneTable()),
      secrets: fileAndEnvSecrets({}),
    });
    return factory(
      zoneClass('externaldns', ['ns1.contract.example.'], {
        backend: { externalDNSWebhook: { url: provider.url, timeoutSeconds: 2 } },
      }),
    );
  },
  stop: async () => {
    factory?.close();
    if (pid !== undefined) process.kill(pid, 'SIGCONT');
    await provider?.stop();
  },
  read: async (origin) => heldZone(origin, await provider.records()),
  drift: async (origin, changed) => {
    const listing = await provider.records();
    const held = listing.find((e) => e.dnsName === bare(changed.owner) && e.recordType === changed.type)!;
    const docs = listing.find((e) => e.dnsName === `docs.${bare(origin)}` && e.recordType === 'CNAME')!;
    await provider.apply({
      updateOld: [held],
      updateNew: [{ ...held, targets: ['203.0.113.99'] }],
      delete: [docs],
    });
  },
  handMade: async (origin, made) => {
    void origin;
    const listing = await provider.records();
    const held = listing.find((e) => e.dnsName === bare(made.owner) && e.recordType === made.type);
    const endpoint = {
      dnsName: bare(made.owner),
      recordType: made.type,
      recordTTL: made.ttl,
      targets: made.rdata.map((r) => printRdata(r)),
    };
    await provider.apply(held ? { updateOld: [held], updateNew: [endpoint] } : { create: [endpoint] });
  },
  refuse: async (origin) => {
    // A real ExternalDNS instance (owner "other") owns taken.<origin> A already.
    await externalDnsOwner({
      url: provider.url,
      owner: 'other',
      domain: `taken.${bare(origin)}`,
      desired: [{ name: `taken.${bare(origin)}`, type: 'A', targets: ['198.51.100.8'] }],
    });
    return { rrset: rrset(origin, 'taken', 'A', ['192.0.2.8']), reason: 'Conflict' };
  },
  outage: async () => {
    pid = provider.pid();
    if (pid === undefined) throw new Error('no provider process');
    process.kill(pid, 'SIGSTOP');
    return async () => {
      process.kill(pid!, 'SIGCONT');
      pid = undefined;
    };
  },
});
