/**
 * The backends, assembled at the edge (the CLI imports this; the core imports no adapter): one
 * registration per kind of `spec.backend`, typed so that a kind added to the API (src/api/backends)
 * does not compile until it is registered here. `createBackendFactory` makes the backend of each
 * DNSZoneClass; a class whose backend is no registered kind gets a backend that refuses every zone
 * with UNKNOWN_BACKEND — never the built-in server.
 */
import { type BackendKind, backendOf, type DNSZoneClass } from '../api/index.ts';
import { type Backend, BackendError } from './backend.ts';
import { builtinRegistration } from './builtin/registration.ts';
import { externalDnsWebhookRegistration } from './externaldns-webhook/registration.ts';
import { homelabWebhookRegistration } from './homelab-webhook/registration.ts';
import { powerDnsRegistration } from './powerdns/registration.ts';
import type { BackendContext, BackendRegistration, BackendRegistry, ManagedBackend } from './registration.ts';
import { rfc2136Registration } from './rfc2136/registration.ts';

export type { BackendContext, BackendRegistration, BackendRegistry } from './registration.ts';

export const BACKENDS: BackendRegistry = {
  builtin: builtinRegistration,
  powerdns: powerDnsRegistration,
  homelabWebhook: homelabWebhookRegistration,
  rfc2136: rfc2136Registration,
  externalDNSWebhook: externalDnsWebhookRegistration,
};

export interface BackendFactoryOptions extends BackendContext {
  /** The registrations to use (tests and benchmarks replace one); default BACKENDS. */
  registry?: BackendRegistry;
}

export interface BackendFactory {
  (zoneClass: DNSZoneClass): Backend;
  /** The backends made so far, per class and target (for shutdown and tests). */
  readonly made: ReadonlyMap<string, Backend>;
  /** Closes the backends' connections. */
  close(): void;
}

/**
 * One backend per class and target: a class keeps its backend while the registration's `target`
 * of its settings stays (other settings are configured in place, so changing them never moves
 * zones); another target is another backend, so its zones move there (the controller deletes them
 * from the old one first).
 */
export function createBackendFactory(options: BackendFactoryOptions): BackendFactory {
  const registry = options.registry ?? BACKENDS;
  const made = new Map<string, ManagedBackend>();
  const factory = ((zoneClass: DNSZoneClass): Backend => {
    const chosen = backendOf(zoneClass.spec.backend);
    if (chosen === undefined) return unknownBackend(zoneClass);
    const registration = registry[chosen.kind] as BackendRegistration<BackendKind>;
    const settings = chosen.settings as never;
    const key = [chosen.kind, zoneClass.metadata.name, registration.target(settings)].join('\u0000');
    let backend = made.get(key);
    if (backend === undefined) {
      backend = registration.create(settings, options);
      made.set(key, backend);
    } else {
      backend.configure?.(settings);
    }
    return backend;
  }) as BackendFactory;
  Object.defineProperty(factory, 'made', { get: () => made });
  factory.close = () => {
    for (const backend of new Set(made.values())) backend.close?.();
  };
  return factory;
}

/**
 * The backend of a class that sets no registered kind (an object that bypassed validation, or one
 * written for a newer Zonekeeper): it serves nothing and refuses every zone with a stable code, so
 * the zones say what to fix instead of being served somewhere else. Deleting succeeds (nothing was
 * ever programmed there), so deletion is never stuck on it.
 */
function unknownBackend(zoneClass: DNSZoneClass): Backend {
  const keys = Object.keys(zoneClass.spec.backend ?? {});
  const error = () =>
    new BackendError(
      'BackendRejected',
      `DNSZoneClass ${zoneClass.metadata.name}: spec.backend sets ${keys.length === 0 ? 'no backend' : keys.join(', ')}; ` +
        `set exactly one of ${Object.keys(BACKENDS).join(', ')}`,
      { code: 'UNKNOWN_BACKEND' },
    );
  return {
    name: keys.length === 1 ? keys[0]! : 'unknown',
    capabilities: {
      serial: 'authority',
      transfers: false,
      alias: false,
      steering: false,
      dnssec: false,
      driftRepair: false,
    },
    applyZone: () => Promise.reject(error()),
    deleteZone: () => Promise.resolve(),
    servedSerial: () => Promise.resolve(undefined),
    health: () => Promise.reject(error()),
  };
}
