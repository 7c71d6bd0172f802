/**
 * kubizone's ZoneFile controller: each referenced Zone, as Zonekeeper serves it, printed as an RFC 1035
 * zone file (the printer of `zonekeeper zone export`) into the ConfigMap the ZoneFile names, one key
 * per origin; the ZoneFile's status maps origin → hash and serial.
 *
 * Level-triggered and idempotent: a ZoneFile is reconciled when it changes, when a Zone of its
 * namespace changes (the Zone's status carries the serial and hash Zonekeeper serves, so a served
 * change reaches it), and again every `resyncMs` (an edited ConfigMap is put back). The ConfigMap is
 * written only when its data differ, the status only when it changed.
 *
 * Hostile tenants: only the ZoneFile's namespace is written; a ConfigMap is created with the ZoneFile's
 * ownerReference, and one that exists without it (a tenant's own, another ZoneFile's) is never
 * written — the ZoneFile says so in `Ready`. Zones of other namespaces are not rendered
 * (`ZoneRefOutsideNamespace`): the operator could read them, the tenant maybe not.
 */
import { type ForeignObject, frontDoorId, nativeName } from '../api/frontdoors/front-door.ts';
import { zoneFrontDoor } from '../api/frontdoors/kubizone/index.ts';
import {
  configMapNameOf,
  type OwnerReference,
  ownedBy,
  planZoneFile,
  type RenderedZone,
  type ZoneFileObject,
  zoneFileFrontDoor,
  zoneFileOwnerReference,
  zoneRefNamespace,
} from '../api/frontdoors/kubizone/zonefile.ts';
import type { Condition, DNSZone, DNSZoneStatus } from '../api/index.ts';
import { assembleZone } from '../zones/assemble.ts';
import type { Catalog } from '../zones/catalog.ts';
import { printZoneFile } from '../zones/zone-file.ts';
import { zoneAssemblyInput } from '../zones/zone-inputs.ts';
import { jsonEqual } from './conditions.ts';
import type { ForeignObjectStore, ResourceStore } from './resource-store.ts';
import { type ReconcileResult, WorkQueue } from './work-queue.ts';

export const ZONEFILE_DOOR = frontDoorId(zoneFileFrontDoor);
const ZONE_DOOR = frontDoorId(zoneFrontDoor);

/** A ConfigMap as far as this controller reads and writes it. */
export interface ZoneFileConfigMap {
  name: string;
  resourceVersion?: string;
  ownerReferences?: OwnerReference[];
  data: Record<string, string>;
}

/**
 * The ConfigMaps of the cluster, by namespace and name. Nothing is listed or watched: the controller
 * reads the one ConfigMap a ZoneFile names.
 */
export interface ConfigMapPort {
  read(namespace: string, name: string): Promise<ZoneFileConfigMap | undefined>;
  /** Fails (conflict) if it exists. */
  create(namespace: string, configMap: ZoneFileConfigMap): Promise<void>;
  /** Conditional on `resourceVersion` (conflict when it moved on). */
  replace(namespace: string, configMap: ZoneFileConfigMap): Promise<void>;
}

export interface ZoneFileControllerOptions {
  /** The source's objects: ZoneFiles and kubizone Zones. */
  store: ForeignObjectStore;
  /** The native objects the Zones map to (the translating store): their served serial and hash. */
  native: Pick<ResourceStore, 'get'>;
  /** The controller's catalog: the content each zone is assembled from. */
  catalog: Catalog;
  configMaps: ConfigMapPort;
  /** How often each ZoneFile is reconciled without a change (ConfigMap drift). Default 5 minutes. */
  resyncMs?: number;
  now?: () => Date;
  log?: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
}

export class ZoneFileController {
  private readonly o: ZoneFileControllerOptions;
  private readonly queue: WorkQueue;
  private unsubscribe?: () => void;

  constructor(options: ZoneFileControllerOptions) {
    this.o = options;
    this.queue = new WorkQueue((key) => this.reconcile(key), { concurrency: 2 });
    this.queue.onResult = (key, error) => {
      if (error !== undefined)
        options.log?.('warn', `ZoneFile ${key}: ${(error as Error).message}; retrying`, { key });
    };
  }

  start(): void {
    const { store } = this.o;
    this.unsubscribe = store.watchForeign((event) => {
      if (event.door === ZONEFILE_DOOR) this.queue.add(event.key);
      else if (event.door === ZONE_DOOR)
        for (const key of this.referencing(event.object)) this.queue.add(key);
    });
    for (const zf of store.listForeign(ZONEFILE_DOOR)) this.queue.add(keyOf(zf));
    this.queue.start();
  }

  stop(): void {
    this.unsubscribe?.();
    this.queue.shutdown();
  }

  /** Resolves when nothing is queued or running. For tests. */
  idle(): Promise<void> {
    return this.queue.idle();
  }

  /** The ZoneFiles of a Zone's namespace that name it. */
  private referencing(zone: ForeignObject): string[] {
    const namespace = zone.metadata.namespace ?? 'default';
    const out: string[] = [];
    for (const zf of this.o.store.listForeign(ZONEFILE_DOOR) as ZoneFileObject[]) {
      if ((zf.metadata.namespace ?? 'default') !== namespace) continue;
      if (
        zf.spec.zoneRefs.some((r) => r.name === zone.metadata.name && zoneRefNamespace(zf, r) === namespace)
      )
        out.push(keyOf(zf));
    }
    return out;
  }

  private async reconcile(key: string): Promise<ReconcileResult> {
    const { store, configMaps } = this.o;
    const zoneFile = store.getForeign(ZONEFILE_DOOR, key) as ZoneFileObject | undefined;
    // Gone or going: the garbage collector deletes its ConfigMap (the ownerReference).
    if (!zoneFile || zoneFile.metadata.deletionTimestamp) return undefined;
    const namespace = zoneFile.metadata.namespace ?? 'default';
    const zones = zoneFile.spec.zoneRefs.map((ref) =>
      zoneRefNamespace(zoneFile, ref) === namespace ? this.render(namespace, ref.name) : undefined,
    );
    const name = configMapNameOf(zoneFile);
    const existing = await configMaps.read(namespace, name);
    const owned = existing !== undefined && ownedBy(existing.ownerReferences, zoneFile);
    const refusal =
      existing && !owned
        ? {
            reason: 'ConfigMapNotOwned',
            message: `ConfigMap ${namespace}/${name} exists and is not this ZoneFile's (no ownerReference to it); it is left alone. Delete it, or set spec.configMapName to another name`,
          }
        : undefined;
    const plan = planZoneFile({
      zoneFile,
      zones,
      current: owned ? existing.data : undefined,
      ...(refusal ? { configMapRefusal: refusal } : {}),
      now: (this.o.now?.() ?? new Date()).toISOString(),
    });
    if (plan.write) {
      try {
        if (!existing) {
          await configMaps.create(namespace, {
            name,
            ownerReferences: [zoneFileOwnerReference(zoneFile)],
            data: plan.data,
          });
          this.o.log?.('info', `ZoneFile ${key}: ConfigMap ${name} created`, {
            origins: Object.keys(plan.data),
          });
        } else if (!jsonEqual(existing.data, plan.data)) {
          await configMaps.replace(namespace, { ...existing, data: plan.data });
          this.o.log?.('info', `ZoneFile ${key}: ConfigMap ${name} updated`, {
            origins: Object.keys(plan.data),
          });
        }
      } catch (e) {
        // Said in the status, then retried with backoff (a conflict: read again and decided anew).
        const failed = planZoneFile({
          zoneFile,
          zones,
          current: owned ? existing.data : undefined,
          configMapRefusal: {
            reason: 'ConfigMapWriteFailed',
            message: `ConfigMap ${namespace}/${name} could not be written: ${e instanceof Error ? e.message : String(e)}; retrying`,
          },
          now: (this.o.now?.() ?? new Date()).toISOString(),
        });
        const status = {
          ...failed.status,
          hash: zoneFile.status?.hash ?? {},
          serial: zoneFile.status?.serial ?? {},
        };
        if (!jsonEqual(status, zoneFile.status ?? {}))
          await store
            .updateForeignStatus(ZONEFILE_DOOR, key, status as Record<string, unknown>)
            .catch(() => undefined);
        throw e;
      }
    }
    if (!jsonEqual(plan.status, zoneFile.status ?? {}))
      await store.updateForeignStatus(ZONEFILE_DOOR, key, plan.status as Record<string, unknown>);
    return { requeueAfterMs: this.o.resyncMs ?? 300_000 };
  }

  /** One Zone of the namespace as Zonekeeper serves it, printed; or why not. */
  private render(namespace: string, name: string): RenderedZone {
    const zone = this.o.store.getForeign(ZONE_DOOR, `${namespace}/${name}`);
    if (!zone || zone.metadata.deletionTimestamp)
      return { state: 'missing', reason: 'ZoneNotFound', message: 'no such Zone' };
    const nativeKey = `${namespace}/${nativeName(zoneFrontDoor as never, name, '')}`;
    const native = this.o.native.get('DNSZone', nativeKey) as DNSZone | undefined;
    const input = native ? zoneAssemblyInput(this.o.catalog, nativeKey) : undefined;
    if (!native || !input) {
      const ready = (zone.status?.conditions as Condition[] | undefined)?.find((c) => c.type === 'Ready');
      return {
        state: 'missing',
        reason: 'ZoneNotServed',
        message: `the Zone is not served${ready?.status === 'False' ? ` (${ready.reason}: ${ready.message})` : ''}`,
      };
    }
    const assembled = assembleZone(input);
    const status = native.status as DNSZoneStatus | undefined;
    const origin = String(assembled.origin);
    // One serial, one content: a zone file only with the serial its content was served under.
    if (status?.serial === undefined || status.hash !== assembled.hash)
      return {
        state: 'pending',
        origin,
        message: `the newest content of ${origin} is not served yet${status?.serial !== undefined ? ` (serving serial ${status.serial})` : ''}`,
      };
    const header = [
      `${origin} as Zonekeeper serves it (kubizone Zone ${namespace}/${name})`,
      `serial ${status.serial}, content hash ${assembled.hash.slice(0, 16)}`,
    ].join('\n');
    return {
      state: 'ready',
      origin,
      serial: status.serial,
      hash: assembled.hash,
      text: printZoneFile(assembled, status.serial, header),
    };
  }
}

function keyOf(o: ForeignObject): string {
  return `${o.metadata.namespace ?? 'default'}/${o.metadata.name}`;
}
