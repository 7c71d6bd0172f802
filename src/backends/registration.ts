/**
 * What a backend kind registers (src/backends/registry.ts): the schema of its settings (a pure module
 * under src/api/backends), its capabilities, and how to make it.
 */
import type { BackendKind, BackendSchemaOf, BackendSettings } from '../api/index.ts';
import type { SecretResolver } from '../api/secret-ref.ts';
import type { Backend, BackendCapabilities } from './backend.ts';

/** What the process hands every backend it makes. */
export interface BackendContext {
  /** The process's built-in server (one for every builtin class). */
  builtin: Backend;
  /** Reads secrets by reference: files and environment variables in folder mode, Secrets in the operator. */
  secrets: SecretResolver;
  log?: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
  /**
   * Whether a health check may probe an address (`--health-probe-allow` and the denied networks),
   * for backends whose server probes (PowerDNS LUA records). Absent: every address may.
   */
  probePermitted?: (address: string) => boolean;
}

/** A backend as the factory keeps it: settings changed in place, connections closed at shutdown. */
export interface ManagedBackend extends Backend {
  /** Takes a class's new settings for the same target (see `BackendRegistration.target`). */
  configure?(settings: never): void;
  close?(): void;
}

export interface BackendRegistration<K extends BackendKind> {
  /** `spec.backend.<kind>`: the API's schema, the very object the CRD is generated from. */
  schema: BackendSchemaOf<K>;
  /** What the backend can do; every backend `create` makes carries exactly these. */
  capabilities: BackendCapabilities;
  /**
   * What in the settings names the target: the same value keeps the class's backend (configured in
   * place), another one makes another backend, and the controller moves the zones there.
   */
  target(settings: BackendSettings<K>): string;
  create(settings: BackendSettings<K>, context: BackendContext): ManagedBackend;
}

/** Every kind the API accepts, registered: the compiler demands an entry for each. */
export type BackendRegistry = { readonly [K in BackendKind]: BackendRegistration<K> };
