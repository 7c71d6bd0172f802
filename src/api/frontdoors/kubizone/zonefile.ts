/**
 * kubizone's `ZoneFile` (`kubi.zone/v1alpha1`, from kubizone's zonefile controller): each Zone it
 * references is rendered as an RFC 1035 zone file into one ConfigMap in the ZoneFile's namespace, one
 * key per origin; its status maps origin → hash and origin → serial. The door is `external`: a
 * ZoneFile maps onto nothing served; its controller (`src/control/kubizone-zonefiles.ts`) renders the
 * zones with the printer of `zonekeeper zone export` and writes the ConfigMap.
 *
 * Pure rules here: which Zones a ZoneFile may read (those of its own namespace), which ConfigMap it
 * may write (one that does not exist, or that carries this ZoneFile's ownerReference), what the
 * ConfigMap holds, and the status.
 */
import { AGE_COLUMN, READY_COLUMN } from '../../kind.ts';
import { type Condition, conditionsSchema } from '../../meta.ts';
import type { Problem } from '../../schema.ts';
import { type Infer, s } from '../../schema.ts';
import { type ForeignObject, type FrontDoor, keepTransitionTimes } from '../front-door.ts';

export const zoneFileSpecSchema = s.object(
  {
    zoneRefs: s.array(
      s.object(
        {
          name: s.string({ description: 'Name of the Zone.', minLength: 1, maxLength: 253 }),
          namespace: s.optional(
            s.string({
              description:
                "Namespace of the Zone. Default: the ZoneFile's. Zonekeeper renders Zones of the ZoneFile's own namespace only.",
              maxLength: 63,
            }),
          ),
        },
        { description: 'A Zone to render.' },
      ),
      { description: 'The Zones rendered, one ConfigMap key (their origin) each.', maxItems: 256 },
    ),
    configMapName: s.optional(
      s.string({
        description:
          "The ConfigMap written, in the ZoneFile's namespace. Default: the ZoneFile's name. Only a ConfigMap that does not exist, or that carries this ZoneFile's ownerReference, is written.",
        minLength: 1,
        maxLength: 253,
      }),
    ),
  },
  { description: 'Zones rendered as RFC 1035 zone files into a ConfigMap.' },
);
export type ZoneFileSpec = Infer<typeof zoneFileSpecSchema>;

export const zoneFileStatusSchema = s.object(
  {
    hash: s.optional(
      s.map(s.string({ maxLength: 128 }), {
        description: 'Origin → content hash of the zone file the ConfigMap holds.',
      }),
    ),
    serial: s.optional(
      s.map(s.integer({ minimum: 0, maximum: 4294967295 }), {
        description: 'Origin → SOA serial of the zone file the ConfigMap holds.',
      }),
    ),
    conditions: conditionsSchema('Zonekeeper: Ready, with why not.'),
  },
  { description: 'What the ConfigMap holds.' },
);
export type ZoneFileStatus = Infer<typeof zoneFileStatusSchema>;
export type ZoneFileObject = ForeignObject<ZoneFileSpec, ZoneFileStatus>;

/** RFC 1123 subdomain, as Kubernetes requires of a ConfigMap name. */
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export const zoneFileFrontDoor: FrontDoor<ZoneFileSpec, ZoneFileStatus> = {
  group: 'kubi.zone',
  version: 'v1alpha1',
  kind: 'ZoneFile',
  plural: 'zonefiles',
  singular: 'zonefile',
  listKind: 'ZoneFileList',
  shortNames: [],
  scope: 'Namespaced',
  description:
    'kubizone ZoneFile: Zones of its namespace rendered as RFC 1035 zone files into a ConfigMap it owns, one key per origin.',
  spec: zoneFileSpecSchema,
  status: zoneFileStatusSchema,
  printerColumns: [
    { name: 'configmap', type: 'string', jsonPath: '.spec.configMapName' },
    READY_COLUMN,
    AGE_COLUMN,
  ],
  // No finalizer: the ConfigMap carries the ZoneFile's ownerReference, so the garbage collector
  // deletes it with the ZoneFile.
  finalizer: 'kubi.zone/zonekeeper',
  merge: 'none',
  external: true,
  admit(object) {
    const problems: Problem[] = [];
    const name = object.spec.configMapName;
    if (name !== undefined && (!SUBDOMAIN.test(name) || name.length > 253))
      problems.push({
        path: 'spec.configMapName',
        code: 'InvalidConfigMapName',
        message: `ZoneFile: ${JSON.stringify(name)} is not a ConfigMap name (lower-case RFC 1123 subdomain: letters, digits, "-" and ".")`,
      });
    return problems;
  },
  translate: () => [],
  project: ({ object }) => object.status ?? {},
};

/** The ConfigMap a ZoneFile writes: `spec.configMapName`, else the ZoneFile's name. */
export function configMapNameOf(zoneFile: ZoneFileObject): string {
  return zoneFile.spec.configMapName ?? zoneFile.metadata.name;
}

/** An ownerReference as the ConfigMap carries it. */
export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/**
 * The ownerReference that marks a ConfigMap as this ZoneFile's: its controller. blockOwnerDeletion is
 * left off (it would need the right to delete ZoneFiles, and foreground deletion gains nothing here).
 */
export function zoneFileOwnerReference(zoneFile: ZoneFileObject): OwnerReference {
  return {
    apiVersion: 'kubi.zone/v1alpha1',
    kind: 'ZoneFile',
    name: zoneFile.metadata.name,
    uid: zoneFile.metadata.uid ?? '',
    controller: true,
  };
}

/** Whether a ConfigMap carries this ZoneFile's ownerReference (by uid: a re-created ZoneFile is another). */
export function ownedBy(
  ownerReferences: readonly OwnerReference[] | undefined,
  zoneFile: ZoneFileObject,
): boolean {
  const uid = zoneFile.metadata.uid;
  return uid !== undefined && (ownerReferences ?? []).some((r) => r.uid === uid && r.kind === 'ZoneFile');
}

/** One referenced Zone, as the controller found it. */
export type RenderedZone =
  | { state: 'ready'; origin: string; serial: number; hash: string; text: string }
  /** Served, but the content now assembled is not yet the one its serial was published with. */
  | { state: 'pending'; origin: string; message: string }
  /** Not served (no such Zone, not adopted, refused): why, in the Zone's words. */
  | { state: 'missing'; reason: string; message: string };

export interface ZoneFilePlan {
  /** The ConfigMap's data: one key per origin. */
  data: Record<string, string>;
  /** Whether `data` may be written (false: the ConfigMap stays as it is). */
  write: boolean;
  status: ZoneFileStatus;
}

/** What the data of one ConfigMap may take: the API server refuses objects above 1 MiB in all. */
export const MAX_CONFIGMAP_DATA_BYTES = 1_000_000;

/** The namespace of a zoneRef: its own, else the ZoneFile's. */
export function zoneRefNamespace(zoneFile: ZoneFileObject, ref: { namespace?: string | undefined }): string {
  return ref.namespace ?? zoneFile.metadata.namespace ?? 'default';
}

/**
 * What the ConfigMap holds and the status says. Zones of other namespaces are refused: the operator
 * reads every Zone with its own rights, so rendering one into the ZoneFile's namespace would let a
 * tenant read zones it may not read itself. An origin whose newest content is not served yet keeps
 * what the ConfigMap held for it (and its status entries): a zone file is never shown with a serial
 * it was not served under, and nothing reports Ready while a change is pending.
 */
export function planZoneFile(input: {
  zoneFile: ZoneFileObject;
  /** Each zoneRef as found (same order); `undefined` for a ref outside the namespace (not looked up). */
  zones: readonly (RenderedZone | undefined)[];
  /** The data the owned ConfigMap holds now (none when it does not exist or is not ours). */
  current: Record<string, string> | undefined;
  /** A refusal of the ConfigMap itself (exists without the ownerReference). */
  configMapRefusal?: { reason: string; message: string };
  now: string;
}): ZoneFilePlan {
  const { zoneFile, zones, current } = input;
  const namespace = zoneFile.metadata.namespace ?? 'default';
  const previous = zoneFile.status ?? {};
  const data: Record<string, string> = {};
  const hash: Record<string, string> = {};
  const serial: Record<string, number> = {};
  const problems: { reason: string; message: string }[] = [];
  let pending: string | undefined;
  zoneFile.spec.zoneRefs.forEach((ref, i) => {
    const refNamespace = zoneRefNamespace(zoneFile, ref);
    const label = `spec.zoneRefs[${i}] (Zone ${refNamespace}/${ref.name})`;
    const zone = zones[i];
    if (refNamespace !== namespace || zone === undefined) {
      problems.push({
        reason: 'ZoneRefOutsideNamespace',
        message: `${label}: a ZoneFile renders Zones of its own namespace (${namespace}) only; create the ZoneFile in ${refNamespace}`,
      });
      return;
    }
    if (zone.state === 'missing') {
      problems.push({ reason: zone.reason, message: `${label}: ${zone.message}` });
      return;
    }
    if (zone.state === 'pending') {
      pending ??= `${label}: ${zone.message}`;
      const kept = current?.[zone.origin];
      if (kept !== undefined) {
        data[zone.origin] = kept;
        const h = previous.hash?.[zone.origin];
        const n = previous.serial?.[zone.origin];
        if (h !== undefined) hash[zone.origin] = h;
        if (n !== undefined) serial[zone.origin] = n;
      }
      return;
    }
    data[zone.origin] = zone.text;
    hash[zone.origin] = zone.hash;
    serial[zone.origin] = zone.serial;
  });
  const generation = zoneFile.metadata.generation;
  const gen = generation !== undefined ? { observedGeneration: generation } : {};
  const bytes = Object.entries(data).reduce(
    (n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v),
    0,
  );
  const tooLarge =
    bytes > MAX_CONFIGMAP_DATA_BYTES
      ? {
          reason: 'ConfigMapTooLarge',
          message: `the zone files take ${bytes} bytes; a ConfigMap holds at most ${MAX_CONFIGMAP_DATA_BYTES}: spread spec.zoneRefs over several ZoneFiles (the ConfigMap keeps what it held)`,
        }
      : undefined;
  const refusal = input.configMapRefusal ?? tooLarge;
  const condition: Condition = refusal
    ? {
        type: 'Ready',
        status: 'False',
        reason: refusal.reason,
        message: refusal.message,
        ...gen,
        lastTransitionTime: input.now,
      }
    : problems.length > 0
      ? {
          type: 'Ready',
          status: 'False',
          reason: problems[0]!.reason,
          message: problems.map((p) => p.message).join('; '),
          ...gen,
          lastTransitionTime: input.now,
        }
      : pending
        ? {
            type: 'Ready',
            status: 'False',
            reason: 'Pending',
            message: pending,
            ...gen,
            lastTransitionTime: input.now,
          }
        : {
            type: 'Ready',
            status: 'True',
            reason: 'Rendered',
            message: `ConfigMap ${configMapNameOf(zoneFile)} holds ${Object.keys(data).length} zone file(s) as served`,
            ...gen,
            lastTransitionTime: input.now,
          };
  // A refused ConfigMap is not written: it holds nothing of this ZoneFile's. One too large keeps what
  // it held, and so does the status.
  const status: ZoneFileStatus = input.configMapRefusal
    ? { hash: {}, serial: {} }
    : tooLarge
      ? { hash: previous.hash ?? {}, serial: previous.serial ?? {} }
      : { hash, serial };
  status.conditions = keepTransitionTimes(previous.conditions as Condition[] | undefined, [condition]);
  return { data, write: refusal === undefined, status };
}
