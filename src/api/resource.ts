/** The resource kinds together, and validation of whole objects (manifests folder, CLI `validate`). */

import { pushAll } from '../util/push-all.ts';
import { type DNSRecordSet, dnsRecordSetDefinition, dnsRecordSetSpecSchema } from './dnsrecordset.ts';
import { type DNSZone, dnsZoneDefinition } from './dnszone.ts';
import { type DNSZoneClass, dnsZoneClassDefinition } from './dnszoneclass.ts';
import { type Domain, domainDefinition } from './domain.ts';
import type { KindDefinition } from './kind.ts';
import {
  API_VERSION,
  DNS1123_LABEL,
  DNS1123_SUBDOMAIN,
  GROUP,
  labelMessage,
  type ObjectMeta,
  subdomainMessage,
} from './meta.ts';
import {
  type Accept,
  capProblems,
  compileAccept,
  describeValue,
  hasDefault,
  isPlainObject,
  joinPath,
  normalize,
  type Problem,
  quote,
  REJECTED,
  rulesHold,
  rulesOf,
  type Schema,
  s,
  unknownFieldMessage,
  validateValue,
} from './schema.ts';

export type Resource = DNSZoneClass | DNSZone | DNSRecordSet | Domain;
export type Kind = Resource['kind'];
export type ResourceOfKind<K extends Kind> = Extract<Resource, { kind: K }>;

export const KINDS: readonly Kind[] = ['DNSZoneClass', 'DNSZone', 'DNSRecordSet', 'Domain'];

export const KIND_DEFINITIONS: { readonly [K in Kind]: KindDefinition<K> } = {
  DNSZoneClass: dnsZoneClassDefinition,
  DNSZone: dnsZoneDefinition,
  DNSRecordSet: dnsRecordSetDefinition,
  Domain: domainDefinition,
};

export function isKind(value: unknown): value is Kind {
  return typeof value === 'string' && (KINDS as readonly string[]).includes(value);
}

export function isNamespaced(kind: Kind): boolean {
  return KIND_DEFINITIONS[kind].scope === 'Namespaced';
}

/** The namespace a namespaced object without one lands in, as with kubectl. */
export const DEFAULT_NAMESPACE = 'default';

export type ValidationResult =
  | { ok: true; resource: Resource }
  | { ok: false; kind?: string; name?: string; problems: Problem[] };

export interface ValidateOptions {
  /**
   * Keep and validate `status` (for objects read back from the API server or a state file). By default
   * status is input the user does not own, and is dropped.
   */
  keepStatus?: boolean;
}

const VERSION_HINT = 'this version of Zonekeeper serves v1alpha1 only';

export const TOP_LEVEL_FIELDS = ['apiVersion', 'kind', 'metadata', 'spec', 'status'];

// Kubernetes ObjectMeta fields Zonekeeper does not keep: accepted (so `kubectl get -o yaml` output
// validates) and dropped.
const IGNORED_METADATA = [
  'generateName',
  'selfLink',
  'ownerReferences',
  'managedFields',
  'deletionGracePeriodSeconds',
];

// Label/annotation keys: an optional DNS-subdomain prefix and '/', then a name (Kubernetes qualified name).
const QUALIFIED_NAME =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

const metadataSchemas = {
  name: s.string({
    minLength: 1,
    maxLength: 253,
    pattern: DNS1123_SUBDOMAIN,
    patternMessage: subdomainMessage,
  }),
  namespace: s.string({ minLength: 1, maxLength: 63, pattern: DNS1123_LABEL, patternMessage: labelMessage }),
  uid: s.string(),
  generation: s.integer({ minimum: 0 }),
  resourceVersion: s.string(),
  creationTimestamp: s.string(),
  deletionTimestamp: s.string(),
  labels: s.map(s.string({ maxLength: 63 })),
  annotations: s.map(s.string()),
  finalizers: s.array(s.string({ minLength: 1, maxLength: 316 }), { listType: 'set' }),
} satisfies Record<keyof ObjectMeta, Schema>;

/** `metadataSchemas` as validateMetadata walks it, each field with its path. */
const METADATA_FIELDS = (Object.entries(metadataSchemas) as [keyof ObjectMeta, Schema][]).map(
  ([key, schema]) => [key, schema, `metadata.${key}`] as const,
);
const KNOWN_METADATA: ReadonlySet<string> = new Set([...Object.keys(metadataSchemas), ...IGNORED_METADATA]);

function validateQualifiedKeys(map: Record<string, unknown>, path: string): Problem[] {
  const problems: Problem[] = [];
  for (const key of Object.keys(map)) {
    const slash = key.indexOf('/');
    const name = slash < 0 ? key : key.slice(slash + 1);
    const prefix = slash < 0 ? '' : key.slice(0, slash);
    if (!QUALIFIED_NAME.test(key) || name.length > 63 || prefix.length > 253) {
      problems.push({
        path: `${path}[${key}]`,
        code: 'INVALID_KEY',
        message: `${quote(key)} is not a valid key: use an optional DNS-subdomain prefix and "/", then a name of at most 63 letters, digits, "-", "_" or "."`,
      });
    }
  }
  return problems;
}

/** Validates `metadata` of an object of `kind` (a native kind, or a front door's kind and scope). */
export function validateMetadata(
  meta: Record<string, unknown>,
  kind: Kind | { kind: string; namespaced: boolean },
): { problems: Problem[]; metadata: ObjectMeta | undefined } {
  const namespaced = typeof kind === 'string' ? isNamespaced(kind) : kind.namespaced;
  const kindName = typeof kind === 'string' ? kind : kind.kind;
  const problems: Problem[] = [];
  for (const key of Object.keys(meta)) {
    if (!KNOWN_METADATA.has(key)) {
      problems.push({
        path: joinPath('metadata', key),
        code: 'UNKNOWN_FIELD',
        message: unknownFieldMessage(key, Object.keys(metadataSchemas)),
      });
    }
  }
  const out: Record<string, unknown> = {};
  for (const [key, schema, path] of METADATA_FIELDS) {
    const value = meta[key];
    if (value === undefined || value === null) {
      if (key === 'name') problems.push({ path, code: 'REQUIRED', message: 'required field is missing' });
      continue;
    }
    if (key === 'namespace' && !namespaced) {
      problems.push({
        path,
        code: 'CLUSTER_SCOPED',
        message: `${kindName} is cluster-scoped and has no namespace; remove metadata.namespace`,
      });
      continue;
    }
    const found = validateValue(schema, value, path);
    if (found.length === 0 && (key === 'labels' || key === 'annotations') && isPlainObject(value)) {
      pushAll(found, validateQualifiedKeys(value, path));
      if (key === 'labels') {
        for (const [k, v] of Object.entries(value)) {
          if (typeof v === 'string' && !LABEL_VALUE.test(v)) {
            found.push({
              path: `${path}[${k}]`,
              code: 'PATTERN',
              message: `${quote(v)} is not a valid label value: use letters, digits, "-", "_" and ".", starting and ending with a letter or digit`,
            });
          }
        }
      }
    }
    pushAll(problems, found);
    if (found.length === 0) out[key] = normalize(schema, value);
  }
  if (namespaced && out.namespace === undefined) out.namespace = DEFAULT_NAMESPACE;
  return { problems, metadata: problems.length === 0 ? (out as unknown as ObjectMeta) : undefined };
}

/**
 * Validates an object as the API server would (schema, CEL rules) and more strictly where the API
 * server would silently drop data: unknown fields are problems, not pruned. `old` is the previous
 * version of the same object, for transition rules (the immutable DNSZone domainName).
 *
 * On success the resource is a clean copy: metadata limited to ObjectMeta, the namespace defaulted to
 * "default" for namespaced kinds, nulls removed, status dropped (unless `options.keepStatus`).
 */
export function validateResource(
  obj: unknown,
  old?: Resource,
  options: ValidateOptions = {},
): ValidationResult {
  // Most objects are valid: `acceptResource` says so without building a path or a message. Transition
  // rules need the old object, so an update takes the full check.
  if (old === undefined) {
    const resource = acceptResource(obj, options.keepStatus === true);
    if (resource !== undefined) return { ok: true, resource };
  }
  return checkResource(obj, old, options);
}

const TOP_LEVEL: ReadonlySet<string> = new Set(TOP_LEVEL_FIELDS);
/**
 * `Object.hasOwn`, called as the prototype's method: inside a `for...in` over the same object V8's
 * optimizing compiler answers it from the loop's own key list (about a quarter of the cost; an own
 * field named `hasOwnProperty` cannot shadow it).
 */
const hasOwn = Object.prototype.hasOwnProperty;
const METADATA_ACCEPTS = METADATA_FIELDS.map(([key, schema]) => [key, compileAccept(schema)] as const);
/** Each kept metadata field's index in METADATA_ACCEPTS (its bit in `acceptMetadata`), -1 for a dropped one. */
const METADATA_INDEX: ReadonlyMap<string, number> = new Map([
  ...METADATA_FIELDS.map(([key], i) => [key, i] as const),
  ...IGNORED_METADATA.map((key) => [key, -1] as const),
]);
const ALL_METADATA = 2 ** METADATA_FIELDS.length - 1;
const NAME_BIT = 1 << METADATA_INDEX.get('name')!;
const specAccepts = new Map<Kind, Accept>();
const statusAccepts = new Map<Kind, Accept>();

function acceptOf(cache: Map<Kind, Accept>, kind: Kind, schema: Schema): Accept {
  let accept = cache.get(kind);
  if (accept === undefined) {
    accept = compileAccept(schema);
    cache.set(kind, accept);
  }
  return accept;
}

/**
 * The clean copy `validateResource` (without an old object) makes of `obj` when it finds no problem
 * in it, or undefined when it would find one: checks compiled once per kind (`compileAccept`), no
 * problem built. Undefined says only "not accepted here"; `checkResource` says what is wrong.
 */
export function acceptResource(obj: unknown, keepStatus = false): Resource | undefined {
  if (!isPlainObject(obj) || obj.apiVersion !== API_VERSION) return undefined;
  const kind = obj.kind;
  if (!isKind(kind)) return undefined;
  for (const key in obj) if (hasOwn.call(obj, key) && !TOP_LEVEL.has(key)) return undefined;
  const meta = obj.metadata;
  if (!isPlainObject(meta)) return undefined;
  const definition = KIND_DEFINITIONS[kind];
  const metadata = acceptMetadata(meta, definition.scope === 'Namespaced');
  if (metadata === undefined || obj.spec === undefined || obj.spec === null) return undefined;
  const spec = acceptOf(specAccepts, kind, definition.spec)(obj.spec);
  if (spec === REJECTED) return undefined;
  const resource: Record<string, unknown> = { apiVersion: API_VERSION, kind, metadata, spec };
  if (keepStatus && obj.status !== undefined && obj.status !== null) {
    const status = acceptOf(statusAccepts, kind, definition.status)(obj.status);
    if (status === REJECTED) return undefined;
    resource.status = status;
  }
  return resource as unknown as Resource;
}

/** `validateMetadata`'s metadata when it finds no problem, else undefined (see `acceptResource`). */
function acceptMetadata(meta: Record<string, unknown>, namespaced: boolean): ObjectMeta | undefined {
  // One pass over the fields the document has (most have a name and a namespace, some labels): an
  // unknown one rejects, a kept one sets its bit; then only those are looked up and checked, in
  // METADATA_ACCEPTS order (the clean copy's key order), not all ten.
  let present = 0;
  for (const key in meta) {
    const index = METADATA_INDEX.get(key);
    if (index === undefined) {
      if (hasOwn.call(meta, key)) return undefined;
    } else if (index >= 0) present |= 1 << index;
  }
  // Another prototype may hold fields for-in does not list (a getter): every field is looked up.
  const proto = Object.getPrototypeOf(meta);
  if (proto !== Object.prototype && proto !== null) present = ALL_METADATA;
  if ((present & NAME_BIT) === 0) return undefined;
  const out: Record<string, unknown> = {};
  for (let rest = present; rest !== 0; rest &= rest - 1) {
    const [key, accept] = METADATA_ACCEPTS[31 - Math.clz32(rest & -rest)]!;
    const value = meta[key];
    if (value === undefined || value === null) {
      if (key === 'name') return undefined;
      continue;
    }
    if (key === 'namespace' && !namespaced) return undefined;
    const normalized = accept(value);
    if (normalized === REJECTED) return undefined;
    if ((key === 'labels' || key === 'annotations') && isPlainObject(value)) {
      if (validateQualifiedKeys(value, key).length > 0) return undefined;
      if (key === 'labels') {
        for (const v of Object.values(value))
          if (typeof v === 'string' && !LABEL_VALUE.test(v)) return undefined;
      }
    }
    out[key] = normalized;
  }
  if (namespaced && out.namespace === undefined) out.namespace = DEFAULT_NAMESPACE;
  return out as unknown as ObjectMeta;
}

/**
 * A DNSRecordSet in its usual shape, by the values of the clean copy `acceptResource` makes of it:
 * `[document, namespace, name, zoneRef name, spec name, type, records, ttl?]`, the first a number
 * of the caller's (the manifest parser's document number).
 */
export type UsualRecordSet =
  | [number, string, string, string, string, string, string[]]
  | [number, string, string, string, string, string, string[], number];

const SPEC_PROPERTIES = dnsRecordSetSpecSchema.properties;
const ZONE_REF = SPEC_PROPERTIES.zoneRef;
const RECORDS = SPEC_PROPERTIES.records;
/** The spec's fields the usual shape may have, in the schema's order. */
const USUAL_SPEC_ORDER: readonly string[] = ['zoneRef', 'name', 'type', 'ttl', 'records'];
const USUAL_ACCEPTS = {
  name: compileAccept(metadataSchemas.name),
  namespace: compileAccept(metadataSchemas.namespace),
  zone: compileAccept(ZONE_REF.properties.name),
  owner: compileAccept(SPEC_PROPERTIES.name),
  type: compileAccept(SPEC_PROPERTIES.type),
  ttl: compileAccept(SPEC_PROPERTIES.ttl),
  record: compileAccept(RECORDS.items),
};
const SPEC_RULES = rulesOf(dnsRecordSetSpecSchema);
/**
 * Whether `acceptUsualRecordSet` may answer for `acceptResource`: the schema is still one where a
 * spec of these fields alone is copied as they are (no other field required or defaulted; a zoneRef
 * of a name alone; records a plain list), and the metadata schemas are the ones `acceptMetadata`
 * compiles. A schema changed otherwise turns it off, and every document takes `acceptResource`.
 */
const USUAL_ENABLED =
  dnsRecordSetDefinition.scope === 'Namespaced' &&
  METADATA_FIELDS[0]?.[0] === 'name' &&
  METADATA_FIELDS[1]?.[0] === 'namespace' &&
  METADATA_FIELDS[0][1] === metadataSchemas.name &&
  METADATA_FIELDS[1][1] === metadataSchemas.namespace &&
  metadataSchemas.name.rules === undefined &&
  metadataSchemas.namespace.rules === undefined &&
  Object.entries(SPEC_PROPERTIES).every(([key, p]) =>
    USUAL_SPEC_ORDER.includes(key)
      ? !hasDefault(p) && (p.optional === true) === (key === 'zoneRef' || key === 'ttl')
      : p.optional === true && !hasDefault(p),
  ) &&
  Object.keys(SPEC_PROPERTIES)
    .filter((key) => USUAL_SPEC_ORDER.includes(key))
    .join() === USUAL_SPEC_ORDER.join() &&
  ZONE_REF.kind === 'object' &&
  rulesOf(ZONE_REF).length === 0 &&
  ZONE_REF.properties.name.optional !== true &&
  !hasDefault(ZONE_REF.properties.name) &&
  Object.values(ZONE_REF.properties).every((p) => p === ZONE_REF.properties.name || !hasDefault(p)) &&
  RECORDS.kind === 'array' &&
  RECORDS.listType === undefined &&
  rulesOf(RECORDS).length === 0;
const NAME_PRESENT = 1;
const NAMESPACE_PRESENT = 2;

/**
 * What `acceptResource(obj)` (no status kept) gives, as its values, when `obj` is a DNSRecordSet of
 * exactly the fields of the usual shape (the API version, its kind, metadata of a name and perhaps a
 * namespace, a spec of a zoneRef by name, a name, a type, perhaps a TTL, and records; none null; plain
 * objects) and `acceptResource` accepts it; undefined when it is not of that shape or not accepted
 * (then `acceptResource` and `checkResource` say what it is). The same compiled checks of each field
 * and the same rules of the spec as `acceptResource` runs, without its clean copy of five objects:
 * the values are those of the copy (strings as they are, the TTL normalized), the records the
 * document's own list. A parse thread takes most documents of a folder this way
 * (docs/benchmarks.md, twelfth round); `validate-fast.test.ts` holds it to `acceptResource`.
 */
export function acceptUsualRecordSet(obj: unknown, document: number): UsualRecordSet | undefined {
  if (!USUAL_ENABLED || !isPlainObject(obj) || Object.getPrototypeOf(obj) !== Object.prototype)
    return undefined;
  let count = 0;
  for (const key in obj) {
    if (
      !hasOwn.call(obj, key) ||
      !(key === 'apiVersion' || key === 'kind' || key === 'metadata' || key === 'spec')
    )
      return undefined;
    count++;
  }
  if (count !== 4 || obj.apiVersion !== API_VERSION || obj.kind !== 'DNSRecordSet') return undefined;
  const meta = obj.metadata;
  const spec = obj.spec;
  if (!isPlainObject(meta) || Object.getPrototypeOf(meta) !== Object.prototype) return undefined;
  if (!isPlainObject(spec) || Object.getPrototypeOf(spec) !== Object.prototype) return undefined;
  let present = 0;
  for (const key in meta) {
    if (!hasOwn.call(meta, key)) return undefined;
    if (key === 'name') present |= NAME_PRESENT;
    else if (key === 'namespace') present |= NAMESPACE_PRESENT;
    else return undefined;
  }
  if ((present & NAME_PRESENT) === 0) return undefined;
  let fields = 0;
  for (const key in spec) {
    if (!hasOwn.call(spec, key)) return undefined;
    // Bits in the schema's order of the fields (USUAL_SPEC_ORDER)
    if (key === 'zoneRef') fields |= 1;
    else if (key === 'name') fields |= 2;
    else if (key === 'type') fields |= 4;
    else if (key === 'ttl') fields |= 8;
    else if (key === 'records') fields |= 16;
    else return undefined;
  }
  // zoneRef, name, type and records; ttl (bit 3) when given
  if ((fields | 8) !== 31) return undefined;
  const ref = spec.zoneRef;
  if (!isPlainObject(ref) || Object.getPrototypeOf(ref) !== Object.prototype) return undefined;
  let refKeys = 0;
  for (const key in ref) {
    if (!hasOwn.call(ref, key) || key !== 'name') return undefined;
    refKeys++;
  }
  if (refKeys !== 1) return undefined;
  const records = spec.records;
  if (!Array.isArray(records) || Object.getPrototypeOf(records) !== Array.prototype) return undefined;
  return usualValues(
    document,
    meta.name,
    (present & NAMESPACE_PRESENT) !== 0,
    meta.namespace,
    ref.name,
    spec.name,
    spec.type,
    (fields & 8) !== 0,
    spec.ttl,
    records,
    spec,
  );
}

/**
 * `acceptUsualRecordSet` for a DNSRecordSet read from its text (`RecordSetReader` of
 * `fast-yaml.ts`): the fields the YAML reader would have made of it (the API version and kind are
 * the reader's to compare), in the objects of exactly the usual shape. What
 * `acceptUsualRecordSet` answers for the object the YAML reader makes of the same text
 * (`record-set-text.test.ts` holds the two to each other).
 */
export function acceptUsualFields(document: number, f: RecordSetFields): UsualRecordSet | undefined {
  if (!USUAL_ENABLED) return undefined;
  const hasTtl = f.ttl !== undefined;
  const records = f.records;
  // The spec the rules see: its fields as the document's (the rules read no other).
  const spec = hasTtl
    ? { zoneRef: { name: f.zone }, name: f.owner, type: f.type, ttl: f.ttl, records }
    : { zoneRef: { name: f.zone }, name: f.owner, type: f.type, records };
  return usualValues(
    document,
    f.name,
    f.namespace !== undefined,
    f.namespace,
    f.zone,
    f.owner,
    f.type,
    hasTtl,
    f.ttl,
    records,
    spec,
  );
}

/**
 * A DNSRecordSet's fields as a YAML reader makes them (`RecordSetReader` of `fast-yaml.ts`): each the
 * value of its scalar, typed as the reader types it; undefined where the field is absent.
 */
export interface RecordSetFields {
  /** `metadata.name`, `metadata.namespace`. */
  name: unknown;
  namespace: unknown;
  /** `spec.zoneRef.name`, `spec.name`, `spec.type`, `spec.ttl`. */
  zone: unknown;
  owner: unknown;
  type: unknown;
  ttl: unknown;
  /** `spec.records`: a new list of its entries' values. */
  records: unknown[];
}

/**
 * The namespace and the zone name the checks last accepted (`NOTHING` before any): a folder's record
 * sets repeat them, one namespace and one zone for a run of record sets, and a string equal to one
 * accepted is accepted again without its pattern (a compiled string check is a function of the
 * string alone: no flags on its pattern, no state). Only strings the check accepted are kept.
 */
const NOTHING: unknown = Symbol('nothing accepted yet');
/** Whether both checks are plain string checks (a rule of code would be another matter: none then kept). */
const KEEP_ACCEPTED =
  metadataSchemas.namespace.kind === 'string' &&
  metadataSchemas.namespace.rules === undefined &&
  ZONE_REF.properties.name.kind === 'string' &&
  ZONE_REF.properties.name.rules === undefined;
let acceptedNamespace: unknown = NOTHING;
let acceptedZone: unknown = NOTHING;

/** The checks of a usual record set's fields (`acceptUsualRecordSet`), `spec` the object of its spec. */
function usualValues(
  document: number,
  rawName: unknown,
  hasNamespace: boolean,
  rawNamespace: unknown,
  rawZone: unknown,
  rawOwner: unknown,
  rawType: unknown,
  hasTtl: boolean,
  rawTtl: unknown,
  records: unknown[],
  spec: Record<string, unknown>,
): UsualRecordSet | undefined {
  const name = USUAL_ACCEPTS.name(rawName);
  if (typeof name !== 'string') return undefined;
  let namespace: unknown = DEFAULT_NAMESPACE;
  if (hasNamespace) {
    if (rawNamespace === acceptedNamespace) namespace = rawNamespace;
    else {
      namespace = USUAL_ACCEPTS.namespace(rawNamespace);
      if (typeof namespace !== 'string') return undefined;
      if (KEEP_ACCEPTED) acceptedNamespace = namespace;
    }
  }
  let zone: unknown = rawZone;
  if (rawZone !== acceptedZone) {
    zone = USUAL_ACCEPTS.zone(rawZone);
    if (KEEP_ACCEPTED && typeof zone === 'string') acceptedZone = zone;
  }
  const owner = USUAL_ACCEPTS.owner(rawOwner);
  const type = USUAL_ACCEPTS.type(rawType);
  if (typeof zone !== 'string' || typeof owner !== 'string' || typeof type !== 'string') return undefined;
  const { minItems, maxItems } = RECORDS;
  if (
    (minItems !== undefined && records.length < minItems) ||
    (maxItems !== undefined && records.length > maxItems)
  )
    return undefined;
  for (let i = 0; i < records.length; i++) {
    // A hole reads as undefined, which the check refuses (as `acceptResource`'s).
    const record = records[i];
    if (typeof record !== 'string' || USUAL_ACCEPTS.record(record) !== record) return undefined;
  }
  let ttl: unknown;
  if (hasTtl) {
    ttl = USUAL_ACCEPTS.ttl(rawTtl);
    if (typeof ttl !== 'number') return undefined;
  }
  if (!rulesHold(SPEC_RULES, spec)) return undefined;
  return ttl === undefined
    ? [document, namespace as string, name, zone, owner, type, records as string[]]
    : [document, namespace as string, name, zone, owner, type, records as string[], ttl as number];
}

/**
 * `validateResource` in full: every problem with its path and message. Exported for the tests that
 * hold `acceptResource` to it.
 */
export function checkResource(obj: unknown, old?: Resource, options: ValidateOptions = {}): ValidationResult {
  if (!isPlainObject(obj)) {
    return {
      ok: false,
      problems: [
        {
          path: '',
          code: 'INVALID_TYPE',
          message: 'expected a mapping with apiVersion, kind, metadata and spec',
        },
      ],
    };
  }
  const problems: Problem[] = [];
  const rawKind = obj.kind;
  const rawName = isPlainObject(obj.metadata) ? obj.metadata.name : undefined;
  const fail = (): ValidationResult => ({
    ok: false,
    ...(typeof rawKind === 'string' ? { kind: rawKind } : {}),
    ...(typeof rawName === 'string' ? { name: rawName } : {}),
    problems: capProblems(problems),
  });

  if (obj.apiVersion === undefined || obj.apiVersion === null) {
    problems.push({
      path: 'apiVersion',
      code: 'REQUIRED',
      message: `required; set apiVersion: ${API_VERSION}`,
    });
  } else if (obj.apiVersion !== API_VERSION) {
    const got = typeof obj.apiVersion === 'string' ? quote(obj.apiVersion) : describeValue(obj.apiVersion);
    const hint =
      typeof obj.apiVersion === 'string' && obj.apiVersion.startsWith(`${GROUP}/`)
        ? `; ${VERSION_HINT}`
        : '; Zonekeeper resources use this group and version';
    problems.push({
      path: 'apiVersion',
      code: 'API_VERSION',
      message: `must be ${API_VERSION}, got ${got}${hint}`,
    });
  }

  if (!isKind(rawKind)) {
    problems.push({
      path: 'kind',
      code: rawKind === undefined || rawKind === null ? 'REQUIRED' : 'KIND',
      message:
        rawKind === undefined || rawKind === null
          ? `required; one of ${KINDS.join(', ')}`
          : `${typeof rawKind === 'string' ? quote(rawKind) : describeValue(rawKind)} is not one of ${KINDS.join(', ')}`,
    });
    return fail();
  }
  const kind = rawKind;
  const definition = KIND_DEFINITIONS[kind];

  for (const key of Object.keys(obj)) {
    if (!TOP_LEVEL_FIELDS.includes(key)) {
      problems.push({
        path: key,
        code: 'UNKNOWN_FIELD',
        message: unknownFieldMessage(key, TOP_LEVEL_FIELDS),
      });
    }
  }

  let metadata: ObjectMeta | undefined;
  if (!isPlainObject(obj.metadata)) {
    problems.push({
      path: 'metadata',
      code: obj.metadata === undefined || obj.metadata === null ? 'REQUIRED' : 'INVALID_TYPE',
      message: 'required: a mapping with at least a name',
    });
  } else {
    const result = validateMetadata(obj.metadata, kind);
    pushAll(problems, result.problems);
    metadata = result.metadata;
  }

  const oldSpec = old !== undefined && old.kind === kind ? old.spec : undefined;
  if (obj.spec === undefined || obj.spec === null) {
    problems.push({ path: 'spec', code: 'REQUIRED', message: 'required field is missing' });
  } else {
    pushAll(problems, validateValue(definition.spec, obj.spec, 'spec', oldSpec));
  }

  const keepStatus = options.keepStatus === true && obj.status !== undefined && obj.status !== null;
  if (keepStatus) pushAll(problems, validateValue(definition.status, obj.status, 'status'));

  if (problems.length > 0 || metadata === undefined) return fail();
  const resource: Record<string, unknown> = {
    apiVersion: API_VERSION,
    kind,
    metadata,
    spec: normalize(definition.spec, obj.spec),
  };
  if (keepStatus) resource.status = normalize(definition.status, obj.status);
  return { ok: true, resource: resource as unknown as Resource };
}
