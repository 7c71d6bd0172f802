/**
 * The backend of each DNSZoneClass, for `ControllerOptions.backend`: the built-in server for
 * `backend.builtin`, one PowerDnsBackend per class and PowerDNS server for `backend.powerdns`.
 * Independent of the source (manifests folder or Kubernetes): secrets come through the resolver given.
 */
import type { DNSZoneClass } from '../api/index.ts';
import type { SecretResolver } from '../api/secret-ref.ts';
import type { Backend } from './backend.ts';
import { PowerDnsBackend, type PowerDnsSettings } from './powerdns/powerdns-backend.ts';

export interface BackendFactoryOptions {
  /** The shared built-in backend (one server for every builtin class). */
  builtin: Backend;
  /** Reads API keys: files and environment variables in folder mode, Secrets in the operator. */
  secrets: SecretResolver;
  log?: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
  /** Makes a PowerDNS backend (tests and benchmarks replace it). */
  makePowerDns?: (settings: PowerDnsSettings) => PowerDnsBackend;
}

export interface BackendFactory {
  (zoneClass: DNSZoneClass): Backend;
  /** The PowerDNS backends made so far (for shutdown and tests). */
  readonly powerDnsBackends: ReadonlyMap<string, PowerDnsBackend>;
  /** Closes the PowerDNS backends' connections. */
  close(): void;
}

/**
 * One backend per class and target: a class keeps its PowerDnsBackend while its URL and server id stay
 * (its other settings — key, kind, TLS, intervals — are updated in place, so changing them never
 * moves zones); a new URL or server id is another PowerDNS, so its zones move there (the controller
 * deletes them from the old one first).
 */
export function createBackendFactory(options: BackendFactoryOptions): BackendFactory {
  const powerDns = new Map<string, PowerDnsBackend>();
  const make =
    options.makePowerDns ??
    ((settings: PowerDnsSettings) =>
      new PowerDnsBackend({
        settings,
        secrets: options.secrets,
        ...(options.log ? { log: options.log } : {}),
      }));
  const factory = ((zoneClass: DNSZoneClass): Backend => {
    const settings = zoneClass.spec.backend.powerdns;
    if (settings === undefined) return options.builtin;
    const key = [
      zoneClass.metadata.name,
      settings.url.replace(/\/+$/, ''),
      settings.serverId ?? 'localhost',
    ].join('\u0000');
    let backend = powerDns.get(key);
    if (backend === undefined) {
      backend = make(settings);
      powerDns.set(key, backend);
    } else {
      backend.configure(settings);
    }
    return backend;
  }) as BackendFactory;
  Object.defineProperty(factory, 'powerDnsBackends', { get: () => powerDns });
  factory.close = () => {
    for (const backend of powerDns.values()) backend.close();
  };
  return factory;
}
