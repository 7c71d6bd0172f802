import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import type { DNSRecordSet } from '../../api/index.ts';
import { GROUP, VERSION } from '../../api/meta.ts';
import type {
  RememberedRequest,
  WriteBatch,
  WriteStore,
  WrittenRecordSet,
} from '../../writes/record-writer.ts';
import { WRITE_ANNOTATION_PREFIX, WRITTEN_BY_LABEL } from '../../writes/write-request.ts';
import { splitKey } from '../../zones/resource-key.ts';
import { isStatus, KubeApi, toKubeError } from '../kubernetes/kube-api.ts';

/** Where the store reports what it had to leave undone. */
export type WriteStoreLog = (
  level: 'info' | 'warn' | 'error',
  message: string,
  fields?: Record<string, unknown>,
) => void;

/** The ConfigMap (in the operator's namespace) that makes a request of several objects all or none. */
export const WRITE_JOURNAL = 'zonekeeper-write-journal';
/**
 * Remembered requests are dropped beyond this much JSON (a ConfigMap holds 1 MiB): each credential
 * keeps an equal share, its oldest going first (`trimRemembered`).
 */
const MAX_REMEMBERED_BYTES = 512 * 1024;
const PLURAL = 'dnsrecordsets';

async function call<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    throw toKubeError(e);
  }
}

/**
 * A cluster's store of API-written record sets: `DNSRecordSet` objects labelled
 * `dns.zonekeeper.dev/written-by: <credential>`, written only by the operator's leader (RBAC gives it
 * create and delete on dnsrecordsets; the chart's ValidatingAdmissionPolicy limits those to labelled
 * objects and keeps everyone else from setting the label).
 *
 * Kubernetes has no transaction over several objects, so a request is made all-or-none by a write-ahead
 * journal: the whole batch is first written into one ConfigMap (one object: atomic, conditional on its
 * resourceVersion), then the objects are created, replaced or deleted, then the journal entry is
 * cleared. A leader that dies in between leaves the batch in the journal; the next `load` (a new
 * leader, or the next request after a failed one) rolls it forward, so every request ends applied whole
 * (ADR 0016). The journal also keeps the remembered request ids.
 */
export class KubernetesWriteStore implements WriteStore {
  private readonly api: KubeApi;
  private readonly custom: CustomObjectsApi;
  private readonly namespace: string;
  private journalVersion: string | undefined;
  private remembered: RememberedRequest[] = [];
  private readonly log: WriteStoreLog;
  /** Objects of the last rolled-forward batch left alone because they are not the writer's (for tests and logs). */
  lastSkipped: string[] = [];

  constructor(config: KubeConfig, namespace: string, log?: WriteStoreLog) {
    this.api = new KubeApi(config);
    this.custom = config.makeApiClient(CustomObjectsApi);
    this.namespace = namespace;
    this.log = log ?? (() => {});
  }

  async load(): Promise<{ recordSets: WrittenRecordSet[]; remembered: RememberedRequest[] }> {
    const journal = await this.api.readConfigMap(this.namespace, WRITE_JOURNAL);
    this.journalVersion = journal?.resourceVersion;
    this.remembered = parseJson<RememberedRequest[]>(journal?.data.remembered) ?? [];
    const pending = parseJson<WriteBatch>(journal?.data.pending);
    if (pending) {
      // Rolling forward: an object someone else put at one of the batch's names since (a tenant deleted
      // the labelled one and created its own) is left alone and reported. It must never keep the
      // journal from clearing, or one tenant would stop every tenant's writes.
      this.lastSkipped = await this.applyObjects(pending, true);
      for (const skipped of this.lastSkipped)
        this.log('warn', "a journalled write was not applied: the object is not the writer's", {
          object: skipped,
        });
      await this.writeJournal(undefined);
    }
    const list = (await call(() =>
      this.custom.listClusterCustomObject({
        group: GROUP,
        version: VERSION,
        plural: PLURAL,
        labelSelector: WRITTEN_BY_LABEL,
      }),
    )) as { items?: DNSRecordSet[] };
    const recordSets = (list.items ?? []).map((o) => ({
      resource: clean(o),
      created: o.metadata.creationTimestamp ?? new Date(0).toISOString(),
    }));
    return { recordSets, remembered: [...this.remembered] };
  }

  async commit(batch: WriteBatch): Promise<void> {
    const forget = new Set(batch.forget.map((f) => `${f.credential}/${f.id}`));
    this.remembered = this.remembered.filter((r) => !forget.has(`${r.credential}/${r.id}`));
    if (batch.remember) this.remembered.push(batch.remember);
    // 1. The intent, whole, in one object. A conflict (another writer) fails the request before anything changed.
    await this.writeJournal(batch);
    // 2. The objects. 3. The intent is done. A failure between 1 and 3 leaves it for `load` to finish.
    await this.applyObjects(batch);
    await this.writeJournal(undefined);
  }

  private async writeJournal(pending: WriteBatch | undefined): Promise<void> {
    this.remembered = trimRemembered(this.remembered, MAX_REMEMBERED_BYTES);
    const remembered = JSON.stringify(this.remembered);
    const record = {
      name: WRITE_JOURNAL,
      labels: { 'app.kubernetes.io/managed-by': 'zonekeeper' },
      data: { remembered, ...(pending ? { pending: JSON.stringify(pending) } : {}) },
    };
    const written =
      this.journalVersion === undefined
        ? await this.api.createConfigMap(this.namespace, record)
        : await this.api.replaceConfigMap(this.namespace, {
            ...record,
            resourceVersion: this.journalVersion,
          });
    this.journalVersion = written.resourceVersion;
  }

  /**
   * Idempotent: creates or replaces each put, deletes each delete (gone already is fine). An object at a
   * batch's name that is not the writer's (another written-by label, or none) is never changed: in a new
   * request that fails the commit; when `resume` (rolling a journalled batch forward) it is skipped and
   * its key returned.
   */
  private async applyObjects(batch: WriteBatch, resume = false): Promise<string[]> {
    const skipped: string[] = [];
    for (const w of batch.put) {
      const { namespace, name } = w.resource.metadata as { namespace: string; name: string };
      const body = {
        apiVersion: w.resource.apiVersion,
        kind: 'DNSRecordSet',
        metadata: {
          name,
          namespace,
          labels: w.resource.metadata.labels ?? {},
          ...(w.resource.metadata.annotations ? { annotations: w.resource.metadata.annotations } : {}),
        },
        spec: w.resource.spec,
      };
      try {
        await call(() =>
          this.custom.createNamespacedCustomObject({
            group: GROUP,
            version: VERSION,
            namespace,
            plural: PLURAL,
            body,
          }),
        );
        continue;
      } catch (e) {
        if (!isStatus(e, 409)) throw e;
      }
      const live = (await call(() =>
        this.custom.getNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace,
          plural: PLURAL,
          name,
        }),
      )) as DNSRecordSet;
      if (live.metadata.labels?.[WRITTEN_BY_LABEL] !== w.resource.metadata.labels?.[WRITTEN_BY_LABEL]) {
        if (resume) {
          skipped.push(`${namespace}/${name}`);
          continue;
        }
        throw new Error(
          `DNSRecordSet ${namespace}/${name} exists and is not the writer's; it is left as it is`,
        );
      }
      await call(() =>
        this.custom.replaceNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace,
          plural: PLURAL,
          name,
          body: {
            ...body,
            metadata: {
              ...live.metadata,
              labels: body.metadata.labels,
              // The writer's annotations replace its earlier ones; any others on the object stay.
              annotations: {
                ...Object.fromEntries(
                  Object.entries(live.metadata.annotations ?? {}).filter(
                    ([k]) => !k.startsWith(WRITE_ANNOTATION_PREFIX),
                  ),
                ),
                ...w.resource.metadata.annotations,
              },
            },
          },
        }),
      );
    }
    for (const key of batch.delete) {
      const { namespace, name } = splitKey(key) as { namespace: string; name: string };
      try {
        await call(() =>
          this.custom.deleteNamespacedCustomObject({
            group: GROUP,
            version: VERSION,
            namespace,
            plural: PLURAL,
            name,
          }),
        );
      } catch (e) {
        if (isStatus(e, 404)) continue;
        // The chart's admission policy refuses deleting an unlabelled object: a tenant's own, put at the
        // name after the writer's was deleted. Rolling forward leaves it alone; anything else is retried.
        if (resume && isStatus(e, 403) && !(await this.labelled(namespace, name))) {
          skipped.push(`${namespace}/${name}`);
          continue;
        }
        throw e;
      }
    }
    return skipped;
  }

  /** Whether the object at the name (still) carries the written-by label; false when it is gone. */
  private async labelled(namespace: string, name: string): Promise<boolean> {
    try {
      const live = (await call(() =>
        this.custom.getNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace,
          plural: PLURAL,
          name,
        }),
      )) as DNSRecordSet;
      return live.metadata.labels?.[WRITTEN_BY_LABEL] !== undefined;
    } catch (e) {
      if (isStatus(e, 404)) return false;
      throw e;
    }
  }
}

/**
 * Remembered requests (oldest first) within `maxBytes` of JSON: when over, each credential that has some
 * gets an equal share and loses its own oldest beyond it, so one credential's flood of request ids
 * cannot push out another's replay memory.
 */
export function trimRemembered(remembered: RememberedRequest[], maxBytes: number): RememberedRequest[] {
  if (JSON.stringify(remembered).length <= maxBytes) return remembered;
  const sizes = new Map<string, number>();
  const size = (r: RememberedRequest) => JSON.stringify(r).length + 1;
  for (const r of remembered) sizes.set(r.credential, (sizes.get(r.credential) ?? 0) + size(r));
  const share = Math.floor((maxBytes - 2) / sizes.size);
  const kept: RememberedRequest[] = [];
  for (const r of remembered) {
    const held = sizes.get(r.credential) ?? 0;
    if (held > share) sizes.set(r.credential, held - size(r));
    else kept.push(r);
  }
  return kept;
}

function parseJson<T>(text: string | undefined): T | undefined {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined;
  }
}

/** The parts of an object the writer compares (spec and identity), without server fields. */
function clean(o: DNSRecordSet): DNSRecordSet {
  return {
    apiVersion: o.apiVersion,
    kind: 'DNSRecordSet',
    metadata: {
      name: o.metadata.name,
      ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}),
      ...(o.metadata.labels ? { labels: { [WRITTEN_BY_LABEL]: o.metadata.labels[WRITTEN_BY_LABEL]! } } : {}),
      ...(writeAnnotations(o) ? { annotations: writeAnnotations(o)! } : {}),
    },
    spec: o.spec,
  };
}

/** The annotations a write set on the object (`WRITE_ANNOTATION_PREFIX`), or undefined when none. */
function writeAnnotations(o: DNSRecordSet): Record<string, string> | undefined {
  const own = Object.entries(o.metadata.annotations ?? {}).filter(([k]) =>
    k.startsWith(WRITE_ANNOTATION_PREFIX),
  );
  return own.length > 0
    ? Object.fromEntries(own.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    : undefined;
}
