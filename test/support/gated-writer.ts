/**
 * The record writer as `serve` runs it, for unit tests of its front doors: a folder store, a catalog
 * the store feeds, and the gate (`catalogGate`) asking each zone's model as a reconcile leaves it —
 * rebuilt from the catalog at every question, or held as it was (`freeze`: a zone whose reconcile
 * has not taken the latest writes yet).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { DNSRecordSet, DNSZone, DNSZoneClass } from '../../src/api/index.ts';
import { MemoryStore } from '../../src/control/memory-store.ts';
import { catalogGate } from '../../src/sources/writes/catalog-gate.ts';
import { FolderWriteStore } from '../../src/sources/writes/folder-write-store.ts';
import { type CredentialLookup, WriteCoordinator, type WriteGate } from '../../src/writes/record-writer.ts';
import { Catalog } from '../../src/zones/catalog.ts';
import type { ResourceKey } from '../../src/zones/resource-key.ts';
import { ZoneModel } from '../../src/zones/zone-model.ts';

export interface GatedWriter {
  writer: WriteCoordinator;
  /** The writer's gate (front doors that ask it before writing). */
  gate: WriteGate;
  store: MemoryStore;
  catalog: Catalog;
  /** The zone's model as the gate sees it now. */
  model(zone: ResourceKey): ZoneModel | undefined;
  /** From now on the gate sees each zone's model as it is now (`thaw` lets it follow again). */
  freeze(): void;
  thaw(): void;
  close(): Promise<void>;
}

export async function gatedWriter(input: {
  classes: DNSZoneClass[];
  zones: DNSZone[];
  records?: DNSRecordSet[];
  credentials: CredentialLookup;
}): Promise<GatedWriter> {
  const store = new MemoryStore();
  const catalog = new Catalog();
  catalog.load(input.classes, input.zones, input.records ?? []);
  store.watch((event) => {
    if (event.kind !== 'DNSRecordSet') return;
    if (event.type === 'delete') catalog.deleteRecord(event.key);
    else catalog.setRecord(event.object as DNSRecordSet, event.key);
  });
  const frozen = new Map<ResourceKey, ZoneModel | undefined>();
  let freezing = false;
  const build = (key: ResourceKey): ZoneModel | undefined => {
    const verdict = catalog.zoneVerdict(key);
    const zone = catalog.zones.get(key);
    if (!verdict?.accepted || !zone) return undefined;
    const model = new ZoneModel(zone, verdict.zoneClass, verdict.origin);
    model.update(catalog.zoneMembers(key), [], true);
    return model;
  };
  const model = (key: ResourceKey) => {
    if (!freezing) return build(key);
    if (!frozen.has(key)) frozen.set(key, build(key));
    return frozen.get(key);
  };
  const dir = await mkdtemp(path.join(tmpdir(), 'zk-gated-'));
  const writes = await FolderWriteStore.open(dir, store);
  const gate = catalogGate(catalog, store, model);
  const writer = new WriteCoordinator({
    store: writes,
    gate,
    credentials: input.credentials,
  });
  await writer.start();
  return {
    writer,
    gate,
    store,
    catalog,
    model,
    freeze: () => {
      freezing = true;
      frozen.clear();
      for (const key of catalog.acceptedZones()) frozen.set(key, build(key));
    },
    thaw: () => {
      freezing = false;
    },
    close: async () => {
      await writes.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
