/**
 * Front doors: another API's kinds read as Zonekeeper's own. A front door is one pure definition —
 * which group, version and kind it reads, its schema and admission rules, how each of its objects maps
 * onto DNSZone and DNSRecordSet inputs, whether several objects merge into one RRset, and how the
 * conditions Zonekeeper reaches are shown in its own status shape, under its own finalizer. It does no
 * I/O: the stores read and write the foreign objects, the translating store
 * (`src/control/front-door-store.ts`) runs the mapping, and everything downstream — tenancy,
 * delegations, conflicts, serials — sees ordinary DNSZone and DNSRecordSet objects.
 */

import { nameKey, parseName } from '../../dns/name.ts';
import type { DNSRecordSetSpec, DNSRecordSetStatus } from '../dnsrecordset.ts';
import type { DNSZoneSpec, DNSZoneStatus } from '../dnszone.ts';
import type { DNSZoneClass } from '../dnszoneclass.ts';
import type { KindDefinition } from '../kind.ts';
import type { Condition, ObjectMeta } from '../meta.ts';
import type { Problem } from '../schema.ts';

/** An object of a front door's kind, validated against its schema (spec and status as the door defines). */
export interface ForeignObject<Spec = Record<string, unknown>, Status = Record<string, unknown>> {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec: Spec;
  status?: Status;
}

/**
 * One native input an object maps onto. `key` names the output within its object (`''` for the only
 * one); for a door that merges (`merge: 'byKey'`), record-set outputs with the same key in the same
 * namespace are one RRset. Outputs always land in the object's own namespace; only a cluster-scoped
 * kind names one (`namespace`), since only cluster administrators write it.
 */
export type TranslatedOutput =
  | { kind: 'DNSZone'; key: string; spec: DNSZoneSpec; namespace?: string }
  | { kind: 'DNSRecordSet'; key: string; spec: DNSRecordSetSpec; namespace?: string };

/** The class of zones whose API names none, as `src/zones/default-class.ts` chooses it. */
export type DefaultClass =
  | { ok: true; zoneClass: DNSZoneClass; why: 'annotated' | 'only' }
  | { ok: false; code: 'NO_DEFAULT_CLASS' | 'SEVERAL_DEFAULT_CLASSES'; message: string };

export interface TranslateContext {
  /**
   * The native name of the DNSZone that object `name` (of this door, in the same namespace) maps
   * to with output key `key`: what a record set's `spec.zoneRef.name` names to reach a zone of this door.
   */
  zoneName(name: string, key?: string): string;
  /**
   * The valid objects of another kind of the same group (for a door that declares it in `reads`):
   * for APIs whose objects find each other (a record adopted by the longest matching zone). The list
   * is the same array until an object's spec, deletion or existence changes (so a door may index it,
   * keyed by the array); status, labels and annotations in it may be older than the object's.
   */
  related(kind: string): readonly ForeignObject[];
  /** The zone class for zones whose API names none (`defaultZoneClass` over the current classes). */
  defaultClass(): DefaultClass;
}

/** A change of an object of a kind a door `reads`: its version before (absent: created) and after (absent: gone). */
export interface RelatedChange {
  kind: string;
  before?: ForeignObject;
  after?: ForeignObject;
}

/**
 * What one native output reports, for the status of one of the objects it came from. Its conditions'
 * `observedGeneration` is the foreign object's own generation that the native status saw (absent when
 * the native status is older than anything of this object).
 */
export interface OutputStatus {
  kind: 'DNSZone' | 'DNSRecordSet';
  key: string;
  /** The native object's namespace and name (as conditions and `status.zone` refer to it). */
  namespace: string;
  name: string;
  /** The native status, with conditions' observedGeneration in the foreign object's generations. */
  status?: DNSZoneStatus | DNSRecordSetStatus;
  /** Other objects merged into the same RRset, oldest first (this one included). */
  mergedWith?: readonly string[];
}

export interface StatusInput<Spec, Status> {
  object: ForeignObject<Spec, Status>;
  outputs: readonly OutputStatus[];
  /**
   * Why the newest version of the object is not used (schema or admission problems): the last valid
   * version, if any, is still what `outputs` report on.
   */
  problems?: readonly Problem[];
  /** Now, for lastTransitionTime of conditions that change. */
  now: string;
  /** The same view of other objects as `translate` had. */
  context?: TranslateContext;
}

/** An event about an object, in its API's words (the store files it as an events.k8s.io Event). */
export interface ForeignEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  action: string;
  note: string;
}

export interface FrontDoor<Spec = Record<string, unknown>, Status = Record<string, unknown>>
  extends KindDefinition {
  /** The API group and version read, e.g. `example.test` and `v1`. */
  group: string;
  version: string;
  /** The finalizer put on the foreign objects while Zonekeeper serves what they map to. */
  finalizer: string;
  /**
   * `'byKey'`: record-set outputs of objects of one namespace with the same key merge into one RRset
   * (an API with one object per record). The oldest object (creation time, then name) decides
   * everything but the records: TTL, name, zoneRef; the records are the union, oldest first. Objects of
   * different namespaces never merge. `'none'`: every object's outputs are its own.
   */
  merge: 'none' | 'byKey';
  /**
   * The API's own admission rules beyond its schema, with paths into the foreign object and the
   * API's own codes and wording. `old` is the version accepted before (transition rules).
   */
  admit?(object: ForeignObject<Spec, Status>, old?: ForeignObject<Spec, Status>): Problem[];
  /**
   * What else the translation reads: `kinds` of the same group (`context.related`) and, with
   * `defaultClass`, the DNSZoneClasses (`context.defaultClass`). The store translates the door's
   * objects again when a spec of those kinds or a class changes. Without it, a translation depends on
   * the object alone.
   */
  reads?: {
    kinds?: readonly string[];
    defaultClass?: boolean;
    /**
     * The objects of this door whose translation a change of a read kind can alter (namespace and
     * name), so that only they are translated again; `context` already holds the change. `'all'`, or
     * absent: every object of the door.
     */
    affected?(
      change: RelatedChange,
      context: TranslateContext,
    ): readonly { namespace?: string | undefined; name: string }[] | 'all';
  };
  /** The native inputs of one valid object: pure, from the object (and what `reads` declares). */
  translate(object: ForeignObject<Spec, Status>, context: TranslateContext): TranslatedOutput[];
  /**
   * For a door whose objects map to DNSZones: the native status (`serial`, `hash`) that the object's
   * own status carries, recorded there by the operator. `zonekeeper server` replicas only read, so
   * this is how they learn the serial to serve for a translated zone. Absent: they never learn it.
   * With an `Accepted=True` condition (`servedCondition`) when the object's status says its zone was
   * served for the domain it asks for now: read by every process on its first look at the object (an
   * operator after a restart too), it keeps the zone the incumbent of its domain, as a DNSZone's own
   * status does (the older object does not take a served domain).
   */
  nativeStatus?(
    object: ForeignObject<Spec, Status>,
    key: string,
    /** The domain the object's zone has now (its translation's `spec.domainName`). */
    domain: string,
  ): DNSZoneStatus | undefined;
  /**
   * Labels the API keeps on its objects (e.g. the parent an object was adopted by), from the same
   * input as `project`: `undefined` removes one. Written, one merge patch each, only when they differ.
   */
  labels?(input: StatusInput<Spec, Status>): Record<string, string | undefined>;
  /** The object's status in its API's shape (schema `status`), from what its outputs report. */
  project(input: StatusInput<Spec, Status>): Status;
  /**
   * `true`: the door's objects map onto no native inputs. Their status and finalizer belong to a
   * controller of the door's own (the edge starts it); the translating store leaves them alone. For an
   * API whose objects are pushed elsewhere (the homelab DNS operator's records go to an external
   * provider), so that the seam still gives the kind its schema, admission, CRD, `validate` and both
   * sources.
   */
  external?: boolean;
  /**
   * `false`: the object belongs to another controller (e.g. a provider type not configured here).
   * The translating store leaves it strictly alone: it maps onto nothing, gets no status, no
   * finalizer and no Event. Absent: every object is the door's.
   */
  owns?(object: ForeignObject<Spec, Status>): boolean;
  /**
   * `false`: the object's outputs stay served but the door's finalizer is taken off it (and not put
   * back) — e.g. a record handed over to another controller that must be deletable without Zonekeeper.
   * `true` while it was off: the store puts it back. Absent: the finalizer follows the native one.
   */
  holdsFinalizer?(object: ForeignObject<Spec, Status>): boolean;
  /**
   * Annotations to take off the object once `status` (the projection just made) is written: an API
   * whose annotations request an operation and are removed when it starts or succeeds. Objects of a
   * door with this hook are projected on every change, metadata included, so the status shows an
   * operation as soon as it starts.
   */
  annotationsToRemove?(object: ForeignObject<Spec, Status>, status: Status): string[];
  /** An Event worth filing when the status changes from `before` to `after` (optional). */
  event?(before: Status | undefined, after: Status): ForeignEvent | undefined;
}

/** `Kind.group`: a front door's identity, also its kind's id in stores (never a native kind name). */
export function frontDoorId(door: Pick<FrontDoor, 'kind' | 'group'>): string {
  return `${door.kind}.${door.group}`;
}

export function apiVersionOf(door: Pick<FrontDoor, 'group' | 'version'>): string {
  return `${door.group}/${door.version}`;
}

/**
 * The native name of an output. A character no Kubernetes name has (`:`) keeps it apart from every
 * native object; the door's plural and group keep doors apart.
 */
export function nativeName(door: FrontDoor, objectName: string, key: string): string {
  const prefix = `${door.plural}.${door.group}:`;
  return key === '' ? `${prefix}${objectName}` : `${prefix}${objectName}:${key}`;
}

/** The native name of a merged RRset (merge key, no object name). */
export function mergedName(door: FrontDoor, key: string): string {
  return `${door.plural}.${door.group}:=${key}`;
}

/**
 * Conditions as apimachinery's SetStatusCondition keeps them: `lastTransitionTime` from `previous`
 * while the status stays the same. For status projections, so that an unchanged state writes nothing.
 */
export function keepTransitionTimes(
  previous: readonly Condition[] | undefined,
  next: readonly Condition[],
): Condition[] {
  return next.map((c) => {
    const before = previous?.find((p) => p.type === c.type);
    return before && before.status === c.status ? { ...c, lastTransitionTime: before.lastTransitionTime } : c;
  });
}

/** The registered front doors, found by API version and kind or by id. */
export class FrontDoors {
  readonly all: readonly FrontDoor[];
  /** By API version, then kind: found without building a key (every manifest document asks). */
  private readonly byType = new Map<string, Map<string, FrontDoor>>();
  /** By group, then kind: the first door registered of each. */
  private readonly byGroup = new Map<string, Map<string, FrontDoor>>();
  private readonly byId = new Map<string, FrontDoor>();

  constructor(doors: readonly FrontDoor[] = []) {
    this.all = doors;
    for (const door of doors) {
      const id = frontDoorId(door);
      if (this.byId.has(id)) throw new Error(`front door ${id} is registered twice`);
      if (door.group === 'dns.zonekeeper.dev')
        throw new Error(`front door ${id}: the group dns.zonekeeper.dev is Zonekeeper's own`);
      this.byId.set(id, door);
      const apiVersion = apiVersionOf(door);
      const kinds = this.byType.get(apiVersion) ?? new Map<string, FrontDoor>();
      this.byType.set(apiVersion, kinds.set(door.kind, door));
      const groupKinds = this.byGroup.get(door.group) ?? new Map<string, FrontDoor>();
      if (!groupKinds.has(door.kind)) groupKinds.set(door.kind, door);
      this.byGroup.set(door.group, groupKinds);
    }
  }

  get size(): number {
    return this.all.length;
  }

  ids(): string[] {
    return [...this.byId.keys()];
  }

  get(id: string): FrontDoor | undefined {
    return this.byId.get(id);
  }

  /** The door reading this apiVersion and kind. */
  find(apiVersion: unknown, kind: unknown): FrontDoor | undefined {
    if (typeof apiVersion !== 'string' || typeof kind !== 'string') return undefined;
    return this.byType.get(apiVersion)?.get(kind);
  }

  /** A door of this group and kind at another version (to tell the user which version is read). */
  findKind(apiVersion: unknown, kind: unknown): FrontDoor | undefined {
    if (typeof apiVersion !== 'string' || typeof kind !== 'string') return undefined;
    const slash = apiVersion.indexOf('/');
    const kinds = this.byGroup.get(slash < 0 ? apiVersion : apiVersion.slice(0, slash));
    return kinds?.get(kind);
  }
}

export const NO_FRONT_DOORS = new FrontDoors();

/**
 * The `Accepted=True` condition of a translated zone's native status (`FrontDoor.nativeStatus`) when
 * its object's own status says the zone was served (`served`: the object's condition saying so, True)
 * for `servedDomain`, and its object asks for that domain still (`domain`); undefined otherwise. A
 * zone whose object changed its domain since (an old object renamed onto a served domain) claims it
 * anew: it is not the incumbent there.
 */
export function servedCondition(
  served: Condition | undefined,
  servedDomain: string | undefined,
  domain: string | undefined,
): Condition | undefined {
  if (served?.status !== 'True' || servedDomain === undefined || domain === undefined) return undefined;
  try {
    // Both are fully qualified (Datum writes them without the final dot).
    const key = (n: string) => nameKey(parseName(n.endsWith('.') ? n : `${n}.`));
    if (key(servedDomain) !== key(domain)) return undefined;
  } catch {
    return undefined;
  }
  return {
    type: 'Accepted',
    status: 'True',
    reason: 'Accepted',
    message: "served before this process started (from the object's status)",
    lastTransitionTime: served.lastTransitionTime,
  };
}
