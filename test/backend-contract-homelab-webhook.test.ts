/**
 * The homelab webhook backend against the backend contract kit, programming zones into the
 * independent provider written in Python's standard library (it verifies every signature, the
 * 5-minute window and nonces itself), made through the backend registry. State is read from the
 * provider's own store; drift is a change made there by hand; a refused RRset is one the provider is
 * told to refuse (400 INVALID_VALUE); the outage is the provider closing connections unanswered.
 */

import { BuiltinBackend } from '../src/backends/builtin/builtin-backend.ts';
import { heldFromRecords } from '../src/backends/contract/held.ts';
import { backendContract, rrset } from '../src/backends/contract/kit.ts';
import { type BackendFactory, createBackendFactory } from '../src/backends/registry.ts';
import { fileAndEnvSecrets } from '../src/control/secrets.ts';
import { printRdata } from '../src/dns/rdata.ts';
import { ZoneTable } from '../src/server/zone-table.ts';
import { type PythonProvider, type StoredRecord, startPythonProvider } from './support/homelab-provider.ts';
import { zoneClass } from './support/resources.ts';

/** A provider's record in presentation form, as the provider holds it (not through the backend). */
function presentation(r: StoredRecord): string[] {
  const name = (v: string) => (v.endsWith('.') ? v : `${v}.`);
  return r.values.map((v) => {
    switch (r.type) {
      case 'CNAME':
      case 'NS':
        return name(v);
      case 'MX':
        return `${r.metadata?.priority ?? 0} ${name(v)}`;
      case 'SRV':
        return `${r.metadata?.priority ?? 0} ${r.metadata?.weight ?? 0} ${r.metadata?.port ?? 0} ${name(v)}`;
      case 'TXT':
        return JSON.stringify(v);
      default:
        return v;
    }
  });
}

for (const algorithm of ['SHA256', 'SHA512'] as const) {
  let provider: PythonProvider;
  let factory: BackendFactory;
  backendContract(`homelabWebhook (Python provider, ${algorithm})`, {
    start: async () => {
      provider = await startPythonProvider({ secret: 'contract-secret', algorithm });
      factory = createBackendFactory({
        builtin: new BuiltinBackend(new ZoneTable()),
        secrets: fileAndEnvSecrets({ ZK_CONTRACT_HOMELAB: 'contract-secret' }),
      });
      return factory(
        zoneClass('homelab', ['ns1.contract.example.'], {
          backend: {
            homelabWebhook: {
              url: provider.url,
              hmacAuth: { secretRef: { env: 'ZK_CONTRACT_HOMELAB' }, algorithm },
              timeoutSeconds: 5,
            },
          },
        }),
      );
    },
    stop: async () => {
      factory?.close();
      await provider?.stop();
    },
    read: async (origin) => {
      const domain = origin.replace(/\.$/, '').toLowerCase();
      const records = (await provider.records()).filter((r) => r.domain.toLowerCase() === domain);
      if (records.length === 0) return undefined;
      return heldFromRecords(
        origin,
        records.flatMap((r) =>
          presentation(r).map((rdata) => ({
            owner: r.subdomain === '@' ? origin : `${r.subdomain}.${origin}`,
            type: r.type,
            rdata,
          })),
        ),
      );
    },
    drift: async (origin, changed) => {
      const domain = origin.replace(/\.$/, '');
      const subdomain = changed.owner === origin ? '@' : changed.owner.slice(0, -origin.length - 1);
      await provider.drift({ type: changed.type, domain, subdomain, values: ['203.0.113.99'], ttl: 300 });
      await provider.drift({ type: 'CNAME', domain, subdomain: 'docs', delete: true });
    },
    handMade: async (origin, made) => {
      // Written at the provider directly, as its owner would by hand (the kit uses A and TXT).
      const domain = origin.replace(/\.$/, '');
      const subdomain = made.owner === origin ? '@' : made.owner.slice(0, -origin.length - 1);
      const values = made.rdata.map((r) => {
        const text = printRdata(r);
        return made.type === 'TXT' ? (JSON.parse(text) as string) : text;
      });
      await provider.drift({ type: made.type, domain, subdomain, values, ttl: made.ttl });
    },
    refuse: async (origin) => {
      await provider.reject('A', origin.replace(/\.$/, ''), 'taken');
      return { rrset: rrset(origin, 'taken', 'A', ['192.0.2.8']), reason: 'BackendRejected' };
    },
    outage: async () => {
      await provider.fail('drop');
      return () => provider.fail(null);
    },
  });
}
