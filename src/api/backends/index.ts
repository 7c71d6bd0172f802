/**
 * Every backend kind the API accepts, with the schema of its settings (`spec.backend.<kind>` of a
 * DNSZoneClass). Pure: schemas only. Adding a backend is one schema module here and one line in
 * BACKEND_SCHEMAS; the compiler then demands its registration (factory, capabilities) in
 * src/backends/registry.ts.
 */
import { type Infer, s } from '../schema.ts';
import { builtinBackendSchema } from './builtin.ts';
import { externalDnsWebhookBackendSchema } from './externaldns-webhook.ts';
import { homelabWebhookBackendSchema } from './homelab-webhook.ts';
import { powerDnsBackendSchema } from './powerdns.ts';
import { rfc2136BackendSchema } from './rfc2136.ts';

export const BACKEND_SCHEMAS = {
  builtin: builtinBackendSchema,
  powerdns: powerDnsBackendSchema,
  homelabWebhook: homelabWebhookBackendSchema,
  rfc2136: rfc2136BackendSchema,
  externalDNSWebhook: externalDnsWebhookBackendSchema,
} as const;

export type BackendKind = keyof typeof BACKEND_SCHEMAS;
export type BackendSchemaOf<K extends BackendKind> = (typeof BACKEND_SCHEMAS)[K];
/** The settings a class gives a backend of kind K. */
export type BackendSettings<K extends BackendKind> = Infer<BackendSchemaOf<K>>;

/** The kinds in declaration order (the CRD lists them in this order). */
export const BACKEND_KINDS = Object.keys(BACKEND_SCHEMAS) as BackendKind[];

export function isBackendKind(key: string): key is BackendKind {
  return Object.hasOwn(BACKEND_SCHEMAS, key);
}

/** `spec.backend`'s properties: every kind, optional (exactly one is set, checked by a rule). */
export function optionalBackendProperties(): {
  [K in BackendKind]: BackendSchemaOf<K> & { optional: true };
} {
  return Object.fromEntries(BACKEND_KINDS.map((k) => [k, s.optional(BACKEND_SCHEMAS[k])])) as never;
}

/**
 * The kind a class's `spec.backend` sets, with its settings; `undefined` when it sets none, several,
 * or only keys that are no kind (validation refuses those; a caller reports them, never guesses).
 */
export function backendOf(
  backend: Readonly<Record<string, unknown>>,
): { [K in BackendKind]: { kind: K; settings: BackendSettings<K> } }[BackendKind] | undefined {
  const set = Object.keys(backend).filter((k) => backend[k] !== undefined && backend[k] !== null);
  if (set.length !== 1 || !isBackendKind(set[0]!)) return undefined;
  const kind = set[0];
  return { kind, settings: backend[kind] } as never;
}
