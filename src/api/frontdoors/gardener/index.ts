/**
 * Gardener's DNS record extension contract as a front door: `extensions.gardener.cloud/v1alpha1`
 * `DNSRecord`, one object per owner name and type, mapped to one DNSRecordSet in the object's
 * namespace. Only records whose `spec.type` is one of the configured provider types
 * (`--gardener-types`, default `zonekeeper`) are Zonekeeper's; the others belong to another extension
 * controller and are left strictly alone (`owns`). The status follows the extension contract:
 * `lastOperation`, `lastError`, `observedGeneration`, `zone`; the `gardener.cloud/operation` annotation
 * drives migrate and restore. Pure: no I/O. See docs/compat/gardener.md.
 */
import type { RecordTypeName } from '../../../dns/rrtype.ts';
import type { DNSRecordSetSpec, DNSRecordSetStatus } from '../../dnsrecordset.ts';
import { AGE_COLUMN } from '../../kind.ts';
import type { Problem } from '../../schema.ts';
import type { ForeignObject, FrontDoor, OutputStatus } from '../front-door.ts';
import {
  type GardenerDNSRecordSpec,
  type GardenerDNSRecordStatus,
  gardenerDNSRecordSpecSchema,
  gardenerDNSRecordStatusSchema,
} from './schema.ts';

export * from './schema.ts';

export const GARDENER_GROUP = 'extensions.gardener.cloud';
export const GARDENER_VERSION = 'v1alpha1';
export const GARDENER_FINALIZER = 'extensions.gardener.cloud/zonekeeper-dnsrecord';
export const OPERATION_ANNOTATION = 'gardener.cloud/operation';
export const DEFAULT_GARDENER_TYPES: readonly string[] = ['zonekeeper'];
export const DEFAULT_GARDENER_TTL = 120;

let configuredTypes: ReadonlySet<string> = new Set(DEFAULT_GARDENER_TYPES);

/** The provider types (`spec.type`) Zonekeeper reconciles (`--gardener-types`). */
export function setGardenerTypes(types: readonly string[]): void {
  const cleaned = types.map((t) => t.trim()).filter((t) => t !== '');
  if (cleaned.length === 0) throw new Error('--gardener-types: name at least one provider type');
  configuredTypes = new Set(cleaned);
}

export function gardenerTypes(): readonly string[] {
  return [...configuredTypes];
}

type GardenerObject = ForeignObject<GardenerDNSRecordSpec, GardenerDNSRecordStatus>;
export type OperationType = 'Create' | 'Reconcile' | 'Delete' | 'Migrate' | 'Restore';
type OperationState = 'Processing' | 'Succeeded' | 'Error' | 'Failed';

function annotation(object: GardenerObject): string | undefined {
  return object.metadata.annotations?.[OPERATION_ANNOTATION];
}

/** Whether the last operation was a migration that succeeded (and no restore asks to take it back). */
export function isMigrated(object: GardenerObject): boolean {
  const last = object.status?.lastOperation;
  return last?.type === 'Migrate' && last.state === 'Succeeded' && annotation(object) !== 'restore';
}

/**
 * The operation the object asks for now. Precedence: migrate > delete > restore > create > reconcile
 * (the extension contract's order): a `migrate` annotation wins even over a deletion; a record never
 * reconciled successfully before is being created; a new generation or a `reconcile` annotation is a
 * reconcile; otherwise the last operation goes on.
 */
export function operationOf(object: GardenerObject): OperationType {
  const op = annotation(object);
  if (op === 'migrate') return 'Migrate';
  if (object.metadata.deletionTimestamp) return 'Delete';
  if (op === 'restore') return 'Restore';
  if (isMigrated(object)) return 'Migrate';
  const last = object.status?.lastOperation;
  if (!last || (last.type === 'Create' && last.state !== 'Succeeded')) return 'Create';
  // Nothing new asked for (same generation, no annotation): the last operation goes on.
  if (op !== 'reconcile' && object.metadata.generation === object.status?.observedGeneration)
    return last.type;
  return 'Reconcile';
}

/**
 * The zone reference: `spec.zone` first, then `status.zone` (written on the first reconcile), as a
 * DNSZone `namespace/name`. A `spec.zone` that is a domain leaves the zone to autodetection (the
 * deepest served zone containing the name), which `admit` keeps inside that domain.
 */
export function zoneRefOf(object: GardenerObject): { namespace: string; name: string } | undefined {
  for (const z of [object.spec.zone, object.status?.zone]) {
    if (!z) continue;
    const parts = z.split('/');
    // A zone of another API (a kubizone Zone's DNSZone, `zones.kubi.zone:name`) has no Kubernetes
    // name a zoneRef could hold: it is found again by autodetection.
    if (parts.length === 2 && parts[1]?.includes(':')) return undefined;
    if (parts.length === 2 && parts[0] && parts[1]) return { namespace: parts[0], name: parts[1] };
    if (z === object.spec.zone) return undefined; // a domain: autodetect within it
  }
  return undefined;
}

function fqdn(name: string): string {
  return `${name.toLowerCase().replace(/\.$/, '')}.`;
}

function quoteText(value: string): string {
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

function isInside(name: string, domain: string): boolean {
  const n = fqdn(name);
  const d = fqdn(domain);
  return n === d || n.endsWith(`.${d}`);
}

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

function admitGardener(object: GardenerObject): Problem[] {
  const problems: Problem[] = [];
  const { recordType, values, zone, name } = object.spec;
  if (recordType === 'A')
    values.forEach((v, i) => {
      if (!IPV4.test(v))
        problems.push({
          path: `spec.values[${i}]`,
          code: 'InvalidIPv4',
          message: `DNSRecord: ${JSON.stringify(v)} is not an IPv4 address (recordType A)`,
        });
    });
  if (recordType === 'AAAA')
    values.forEach((v, i) => {
      if (!v.includes(':') || !/^[0-9A-Fa-f:.]+$/.test(v))
        problems.push({
          path: `spec.values[${i}]`,
          code: 'InvalidIPv6',
          message: `DNSRecord: ${JSON.stringify(v)} is not an IPv6 address (recordType AAAA)`,
        });
    });
  if (recordType === 'CNAME' && values.length !== 1)
    problems.push({
      path: 'spec.values',
      code: 'CNAMENeedsOneValue',
      message: `DNSRecord: a CNAME record has exactly one value (a host name); ${values.length} given`,
    });
  if (zone && !zone.includes('/') && !isInside(name, zone))
    problems.push({
      path: 'spec.zone',
      code: 'NameOutsideZone',
      message: `DNSRecord: ${name} is not inside the zone ${zone}; set spec.zone to a zone containing the name`,
    });
  return problems;
}

function recordsOf(spec: GardenerDNSRecordSpec): string[] {
  if (spec.recordType === 'TXT') return spec.values.map(quoteText);
  if (spec.recordType === 'CNAME') return spec.values.map(fqdn);
  return [...spec.values];
}

/** What a native output says about the operation: state, progress, description and error. */
function outcome(
  output: OutputStatus | undefined,
  generation: number | undefined,
  problems: readonly Problem[] | undefined,
): {
  state: OperationState;
  progress: number;
  description: string;
  error?: { description: string; codes: string[] };
} {
  if (problems && problems.length > 0) {
    const description = problems.map((p) => `${p.path}: ${p.message}`).join('; ');
    return {
      state: 'Failed',
      progress: 0,
      description: `the DNSRecord is refused: ${description}`,
      error: { description, codes: ['ERR_CONFIGURATION_PROBLEM'] },
    };
  }
  const native = output?.status;
  const find = (type: string) => native?.conditions?.find((c) => c.type === type);
  const current = native?.observedGeneration !== undefined && native.observedGeneration === generation;
  if (!native || !current)
    return { state: 'Processing', progress: 10, description: 'the DNS record is being published' };
  const accepted = find('Accepted');
  if (accepted?.status === 'False')
    return {
      state: 'Error',
      progress: 50,
      description: `the DNS record is not published: ${accepted.message}`,
      error: { description: `${accepted.reason}: ${accepted.message}`, codes: ['ERR_CONFIGURATION_PROBLEM'] },
    };
  const ready = find('Ready');
  if (ready?.status === 'True')
    return { state: 'Succeeded', progress: 100, description: 'the DNS record is published' };
  return {
    state: 'Processing',
    progress: 50,
    description: `the DNS record is being published: ${ready?.message ?? 'waiting for the servers'}`,
  };
}

export const gardenerDNSRecordFrontDoor: FrontDoor<GardenerDNSRecordSpec, GardenerDNSRecordStatus> = {
  group: GARDENER_GROUP,
  version: GARDENER_VERSION,
  kind: 'DNSRecord',
  plural: 'dnsrecords',
  singular: 'dnsrecord',
  listKind: 'DNSRecordList',
  shortNames: ['dns'],
  scope: 'Namespaced',
  description: 'DNSRecord (Gardener extension contract): one DNS record of a shoot or seed.',
  spec: gardenerDNSRecordSpecSchema,
  status: gardenerDNSRecordStatusSchema,
  printerColumns: [
    { name: 'Type', type: 'string', jsonPath: '.spec.type' },
    { name: 'Domain Name', type: 'string', jsonPath: '.spec.name' },
    { name: 'Record Type', type: 'string', jsonPath: '.spec.recordType' },
    { name: 'Status', type: 'string', jsonPath: '.status.lastOperation.state' },
    AGE_COLUMN,
  ],
  finalizer: GARDENER_FINALIZER,
  merge: 'none',
  owns: (object) => configuredTypes.has((object.spec as Partial<GardenerDNSRecordSpec>).type ?? ''),
  holdsFinalizer: (object) => operationOf(object) !== 'Migrate',
  admit: (object) => admitGardener(object),
  translate(object) {
    const ref = zoneRefOf(object);
    const spec: DNSRecordSetSpec = {
      ...(ref ? { zoneRef: ref } : {}),
      name: fqdn(object.spec.name),
      type: object.spec.recordType as RecordTypeName,
      records: recordsOf(object.spec),
      ttl: object.spec.ttl ?? DEFAULT_GARDENER_TTL,
    };
    return [{ kind: 'DNSRecordSet', key: '', spec }];
  },
  project({ object, outputs, problems, now }): GardenerDNSRecordStatus {
    const generation = object.metadata.generation;
    const type = operationOf(object);
    const output = outputs[0];
    const holds = (object.metadata.finalizers ?? []).includes(GARDENER_FINALIZER);
    let result = outcome(output, generation, problems);
    if (type === 'Migrate')
      // Migrating drops the finalizer and the local state; the records stay served.
      result = holds
        ? { state: 'Processing', progress: 50, description: 'releasing the DNS record for migration' }
        : {
            state: 'Succeeded',
            progress: 100,
            description: 'the DNS record is migrated; its records are kept until it is restored or deleted',
          };
    else if (type === 'Restore' && result.state === 'Succeeded' && !holds)
      result = { state: 'Processing', progress: 90, description: 'taking the DNS record over again' };
    const last = object.status?.lastOperation;
    const same =
      last?.type === type &&
      last.state === result.state &&
      last.progress === result.progress &&
      last.description === result.description;
    const lastOperation = {
      type,
      state: result.state,
      progress: result.progress,
      description: result.description,
      lastUpdateTime: same && last ? last.lastUpdateTime : now,
    };
    // The zone is recorded once a zone took the record (not when it was refused there).
    const native = output?.status as DNSRecordSetStatus | undefined;
    const refused = native?.conditions?.some((c) => c.type === 'Accepted' && c.status === 'False');
    const adopted = refused ? undefined : native?.zone;
    const zone = adopted ? `${adopted.namespace ?? output?.namespace}/${adopted.name}` : object.status?.zone;
    const observed = output?.status?.observedGeneration;
    const previousError = object.status?.lastError;
    const lastError = result.error
      ? {
          description: result.error.description,
          codes: result.error.codes,
          lastUpdateTime:
            previousError && previousError.description === result.error.description
              ? previousError.lastUpdateTime
              : now,
        }
      : undefined;
    return {
      lastOperation,
      ...(lastError ? { lastError } : {}),
      ...(problems?.length && generation !== undefined
        ? { observedGeneration: generation }
        : observed !== undefined
          ? { observedGeneration: observed }
          : object.status?.observedGeneration !== undefined
            ? { observedGeneration: object.status.observedGeneration }
            : {}),
      ...(zone ? { zone } : {}),
    };
  },
  annotationsToRemove(object, status) {
    const op = annotation(object);
    if (op === 'reconcile') return [OPERATION_ANNOTATION];
    const last = status.lastOperation;
    if (op === 'migrate' && last?.type === 'Migrate' && last.state === 'Succeeded')
      return [OPERATION_ANNOTATION];
    if (op === 'restore' && last?.type === 'Restore' && last.state === 'Succeeded')
      return [OPERATION_ANNOTATION];
    return [];
  },
  event(before, after) {
    const was = before?.lastOperation;
    const now = after.lastOperation;
    if (!now || (was?.type === now.type && was.state === now.state)) return undefined;
    if (now.state === 'Error' || now.state === 'Failed')
      return { type: 'Warning', reason: `${now.type}${now.state}`, action: now.type, note: now.description };
    if (now.state === 'Succeeded')
      return { type: 'Normal', reason: `${now.type}Succeeded`, action: now.type, note: now.description };
    return undefined;
  },
};

// biome-ignore lint/suspicious/noExplicitAny: a registry holds doors of different spec types
export const GARDENER_FRONT_DOORS: readonly FrontDoor<any, any>[] = [gardenerDNSRecordFrontDoor];
