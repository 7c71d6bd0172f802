/**
 * Starts the ExternalDNS webhook provider the same way in `serve` and `operator`: its domain filter
 * from the zones the namespace may write, its precheck from the write gate (delegations, ownership),
 * its listing from the store, its writes through the process's record writer.
 */
import type { DNSRecordSet, DNSZone } from '../../api/index.ts';
import type { ResourceStore } from '../../control/resource-store.ts';
import { parseName } from '../../dns/name.ts';
import type { RecordTypeName } from '../../dns/rrtype.ts';
import type { HttpConnectionLimits } from '../../util/http-limits.ts';
import type { WriteAccessConfig } from '../../writes/credentials.ts';
import {
  checkUpsertContent,
  type PendingAtName,
  type WriteGate,
  writtenObjectName,
} from '../../writes/record-writer.ts';
import { WRITTEN_BY_LABEL } from '../../writes/write-request.ts';
import { delegationNamesNamespace } from '../../zones/delegation.ts';
import { type ResourceKey, resourceKey } from '../../zones/resource-key.ts';
import { ENDPOINT_TYPES, rrsetKeyOf } from './endpoints.ts';
import {
  EXTERNALDNS_CREDENTIAL,
  ExternalDnsWebhook,
  type ExternalDnsWebhookOptions,
  type Refusal,
} from './webhook.ts';

/** `--externaldns-webhook` and `--externaldns-webhook-namespace`. */
export interface ExternalDnsWebhookSettings {
  listen: string;
  namespace: string;
  /** The listener's connection limits (`--externaldns-webhook-max-connections` and the like). */
  connectionLimits?: Partial<HttpConnectionLimits>;
}

export interface StartExternalDnsWebhookOptions
  extends Pick<ExternalDnsWebhookOptions, 'writer' | 'registry' | 'log'> {
  settings: ExternalDnsWebhookSettings;
  store: Pick<ResourceStore, 'list' | 'get'>;
  /** The write gate while the zones are judged here (serve; the operator's leader). */
  gate: () => WriteGate | undefined;
  /** Whether the store holds the zones (a cluster's cache synced). */
  loaded: () => boolean;
  onRefused?: (refusal: Refusal) => void;
}

/**
 * The write-access table with the webhook's credential added: kind `externaldns-webhook`, named
 * `externaldns-webhook`, writing into the namespace; refused when the table already names one so.
 */
export function withExternalDnsCredential(
  access: WriteAccessConfig | undefined,
  settings: ExternalDnsWebhookSettings | undefined,
): WriteAccessConfig | undefined {
  if (!settings) return access;
  const base = access ?? { credentials: [] };
  if (base.credentials.some((c) => c.name === EXTERNALDNS_CREDENTIAL))
    throw new Error(
      `--externaldns-webhook: --write-access already has a credential named ${EXTERNALDNS_CREDENTIAL}; rename it`,
    );
  return {
    ...base,
    credentials: [
      ...base.credentials,
      { name: EXTERNALDNS_CREDENTIAL, kind: 'externaldns-webhook', namespace: settings.namespace },
    ],
  };
}

/**
 * The domains `namespace` may write in, as ExternalDNS's domain filter takes them: every zone of the
 * namespace, and in zones of other namespaces the names their delegations give it (a delegation
 * without names: the zone; `@` or `*`: the zone; `api`: api.<zone>; `*.apps`: apps.<zone>, which
 * ExternalDNS matches with the names below it). Types are not considered: a refused type is refused
 * when written, and filtered by /adjustendpoints.
 */
export function writableDomains(zones: readonly DNSZone[], namespace: string): string[] {
  const out = new Set<string>();
  for (const zone of zones) {
    const origin = zone.spec.domainName.replace(/\.$/, '').toLowerCase();
    if (zone.metadata.namespace === namespace) {
      out.add(origin);
      continue;
    }
    for (const d of zone.spec.delegations ?? []) {
      if (!delegationNamesNamespace(d, namespace)) continue;
      const names = d.names ?? [];
      if (names.length === 0) out.add(origin);
      for (const pattern of names) {
        const rest = pattern === '@' || pattern === '*' ? '' : pattern.replace(/^\*\./, '');
        out.add(rest === '' ? origin : `${rest.replace(/\.$/, '').toLowerCase()}.${origin}`);
      }
    }
  }
  // A domain inside another one listed adds nothing to the filter.
  const all = [...out];
  return all.filter((d) => !all.some((o) => o !== d && d.endsWith(`.${o}`))).sort();
}

/**
 * This provider's RRsets at `fqdn` (as the endpoint names it, `endpointFqdn`; `name` parsed) that a
 * plan deletes (`going`: the webhook's `rrsetKey`s), by the keys of the record sets holding them, as
 * gone (the record writer's `PendingAtName`). Looked up per type: nothing is parsed per key.
 */
function goingAt(
  fqdn: string,
  name: string,
  namespace: string,
  going: ReadonlySet<string> | undefined,
): PendingAtName {
  const out = new Map<ResourceKey, null>();
  if (going === undefined || going.size === 0) return out;
  for (const type of ENDPOINT_TYPES)
    if (going.has(rrsetKeyOf(fqdn, type)))
      out.set(resourceKey({ name: writtenObjectName(name, type), namespace }), null);
  return out;
}

export async function startExternalDnsWebhook(
  options: StartExternalDnsWebhookOptions,
): Promise<ExternalDnsWebhook> {
  const { namespace } = options.settings;
  const webhook = new ExternalDnsWebhook({
    listen: options.settings.listen,
    namespace,
    writer: options.writer,
    recordSets: () =>
      (options.store.list('DNSRecordSet') as DNSRecordSet[]).filter(
        (rs) =>
          rs.metadata.namespace === namespace &&
          rs.metadata.labels?.[WRITTEN_BY_LABEL] === EXTERNALDNS_CREDENTIAL,
      ),
    domains: () =>
      options.loaded() ? writableDomains(options.store.list('DNSZone') as DNSZone[], namespace) : undefined,
    precheck: (fqdn, type, upsert, going) => {
      let name: string;
      try {
        name = parseName(fqdn);
      } catch (e) {
        return { code: 'INVALID_CHANGE', message: `${fqdn}: ${(e as Error).message}` };
      }
      const t = type as RecordTypeName;
      const key = resourceKey({ name: writtenObjectName(name, t), namespace });
      const live = options.store.get('DNSRecordSet', key) as DNSRecordSet | undefined;
      const by = live?.metadata.labels?.[WRITTEN_BY_LABEL];
      if (live && by !== EXTERNALDNS_CREDENTIAL)
        return {
          code: 'NOT_OWNER',
          message: `${fqdn} ${type}: DNSRecordSet ${key} ${by ? `was written by ${by}` : 'is defined by a manifest or tenant'}; only it can change it`,
        };
      // In the writer's order: another's RRset, then the delegation.
      const gate = options.gate();
      const other = gate?.otherOwner?.(namespace, name, t, key);
      if (other)
        return {
          code: 'NOT_OWNER',
          message: `${fqdn} ${type}: ${other} defines this RRset; change it where it is defined`,
        };
      const admitted = gate?.admit(namespace, name, t);
      if (admitted && !admitted.ok)
        return { code: 'NOT_DELEGATED', message: `${fqdn} ${type}: ${admitted.message}` };
      // TTL and records as the writer judges them (in the zone that takes the name; without the
      // zones judged here, names in records are read as absolute, as ExternalDNS writes them).
      if (upsert) {
        const checked = checkUpsertContent(
          upsert,
          name,
          namespace,
          EXTERNALDNS_CREDENTIAL,
          admitted?.ok ? admitted.origin : name,
        );
        if (!checked.ok) return { code: 'INVALID_CHANGE', message: `${fqdn} ${type}: ${checked.message}` };
        // An older CNAME or ALIAS at the name (or older data, for a CNAME): never served (RFC 1034 §3.6.2).
        const clash = admitted?.ok
          ? gate?.exclusivity?.(namespace, name, t, key, goingAt(fqdn, name, namespace, going))
          : undefined;
        if (clash) return { code: 'NAME_CONFLICT', message: `${fqdn} ${type}: ${clash.message}` };
      }
      return undefined;
    },
    ...(options.onRefused ? { onRefused: options.onRefused } : {}),
    ...(options.settings.connectionLimits ? { connectionLimits: options.settings.connectionLimits } : {}),
    ...(options.registry ? { registry: options.registry } : {}),
    log: options.log,
  });
  await webhook.start();
  return webhook;
}
