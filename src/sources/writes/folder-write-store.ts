import path from 'node:path';
import type { DNSRecordSet } from '../../api/index.ts';
import type { MemoryStore } from '../../control/memory-store.ts';
import type {
  RememberedRequest,
  WriteBatch,
  WriteStore,
  WrittenRecordSet,
} from '../../writes/record-writer.ts';
import { WRITTEN_BY_LABEL } from '../../writes/write-request.ts';
import { type ResourceKey, resourceKey } from '../../zones/resource-key.ts';
import { type BatchOp, StateStore } from '../manifests/state-file.ts';

/** The folder below --state-dir that holds API-written record sets (its own log and snapshots). */
export const WRITES_DIR = 'api-writes';

const RECORD = 'DNSRecordSet/';
const REQUEST = 'request/';

/**
 * Folder mode's store of API-written record sets: an append-only log with snapshots (ADR 0015) in
 * `<state-dir>/api-writes`, one log line per request (so a crash replays all of a request or none of
 * it), published into the MemoryStore the manifests source feeds, where the controller takes them like
 * any DNSRecordSet. A manifest object at the same name wins: its object is never replaced or removed.
 */
export class FolderWriteStore implements WriteStore {
  readonly state: StateStore;
  private readonly store: MemoryStore;

  private constructor(state: StateStore, store: MemoryStore) {
    this.state = state;
    this.store = store;
  }

  /** Without a state folder everything stays in memory (lost on restart, as serials are). */
  static async open(
    stateDir: string | undefined,
    store: MemoryStore,
    log?: (level: 'info' | 'warn' | 'error', message: string) => void,
  ): Promise<FolderWriteStore> {
    const state = await StateStore.open(
      stateDir === undefined ? undefined : path.join(stateDir, WRITES_DIR),
      {
        ...(log ? { log } : {}),
      },
    );
    return new FolderWriteStore(state, store);
  }

  async load(): Promise<{ recordSets: WrittenRecordSet[]; remembered: RememberedRequest[] }> {
    // A batch whose write failed is still pending: written now, it is completed (rolled forward).
    await this.state.flush();
    const recordSets: WrittenRecordSet[] = [];
    const remembered: RememberedRequest[] = [];
    const held = new Set<ResourceKey>();
    for (const id of this.state.objectIds()) {
      const o = this.state.object(id)!;
      if (id.startsWith(RECORD) && o.resource?.kind === 'DNSRecordSet') {
        const w = { resource: o.resource, created: o.created };
        recordSets.push(w);
        held.add(resourceKey(o.resource.metadata));
        this.publish(w);
      } else if (id.startsWith(REQUEST) && o.note !== undefined) {
        try {
          remembered.push(JSON.parse(o.note) as RememberedRequest);
        } catch {
          // a note that does not parse is not a request we can answer: forgotten
        }
      }
    }
    // What the store shows that the state no longer holds (a batch given up before it was written).
    // Visited with the store's own keys, the label read first: at start-up this walks every record
    // set of the folder (a million), where a list of them and a key string made for each were work
    // on the main thread before the first answer that found nothing (docs/benchmarks.md, fourteenth
    // round). Removed after the walk, which must not change the store it walks.
    const gone: ResourceKey[] = [];
    this.store.forEachKeyed('DNSRecordSet', (object, key) => {
      if (object.metadata.labels?.[WRITTEN_BY_LABEL] !== undefined && !held.has(key)) gone.push(key);
    });
    for (const key of gone) this.unpublish(key);
    return { recordSets, remembered };
  }

  async commit(batch: WriteBatch): Promise<void> {
    const ops: BatchOp[] = [];
    for (const w of batch.put)
      ops.push({
        id: RECORD + resourceKey(w.resource.metadata),
        object: { created: w.created, resource: w.resource },
      });
    for (const key of batch.delete) ops.push({ id: RECORD + key });
    for (const f of batch.forget) ops.push({ id: `${REQUEST}${f.credential}/${f.id}` });
    if (batch.remember)
      ops.push({
        id: `${REQUEST}${batch.remember.credential}/${batch.remember.id}`,
        object: { created: batch.remember.at, note: JSON.stringify(batch.remember) },
      });
    await this.state.commitBatch(ops);
    // Durable: now visible, in one synchronous step (the controller sees the whole request at once).
    for (const w of batch.put) this.publish(w);
    for (const key of batch.delete) this.unpublish(key);
  }

  close(): Promise<void> {
    return this.state.close();
  }

  private publish(w: WrittenRecordSet): void {
    const key = resourceKey(w.resource.metadata);
    const live = this.store.get('DNSRecordSet', key);
    if (live && live.metadata.labels?.[WRITTEN_BY_LABEL] === undefined) return; // a manifest's object
    this.store.apply(w.resource as DNSRecordSet, w.created);
  }

  private unpublish(key: ResourceKey): void {
    const live = this.store.get('DNSRecordSet', key);
    if (live && live.metadata.labels?.[WRITTEN_BY_LABEL] !== undefined)
      this.store.remove('DNSRecordSet', key);
  }
}
