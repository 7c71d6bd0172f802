/**
 * Zone signing on a worker thread of its own: the whole-zone signing of a new serial (seconds for a
 * large zone) never runs on a thread that answers DNS. The thread keeps each zone's incremental signer
 * (`KeptSigners`, dnssec-incremental.ts), so a change signs only what it touches.
 */
import { Worker } from 'node:worker_threads';
import type { EffectiveDnssec } from '../../api/dnssec.ts';
import { type Name, nameKey } from '../../dns/name.ts';
import type { ZoneDnssecData } from '../../server/zone-dnssec.ts';
import type { ZoneKey } from '../../zones/dnssec-key-set.ts';
import type { RRsetData, RRsetDelta, RRsetKey } from '../../zones/rrset.ts';
import type { SoaFields } from '../../zones/soa.ts';
import { type PackedRecords, unpackRecords } from './zone-signing.ts';

export interface ZoneToSignRequest {
  origin: Name;
  soa: SoaFields;
  serial: number;
  /** Every RRset of the zone; absent when `change` is given. */
  rrsets?: RRsetData[];
  /** The change from the serial the thread holds the zone at (sent instead of the whole content). */
  change?: ContentChange;
}

/** A zone's change from `fromSerial`, RRset by RRset. */
export interface ContentChange {
  fromSerial: number;
  upserts: RRsetData[];
  deletes: RRsetKey[];
}

export type SigningRequest =
  | {
      type: 'sign';
      id: number;
      zone: ZoneToSignRequest;
      settings: EffectiveDnssec;
      keys: ZoneKey[];
      signedAt: number;
    }
  | { type: 'forget'; origin: Name };

export type SigningResponse =
  | { id: number; data: Omit<ZoneDnssecData, 'records'>; packed: PackedRecords }
  | { id: number; error: string };

export class SigningThread {
  private worker: Worker | undefined;
  private next = 0;
  /** The serial the thread holds each zone's content at (nameKey), after its last signing. */
  private readonly held = new Map<string, number>();
  private readonly waiting = new Map<
    number,
    { resolve: (d: ZoneDnssecData) => void; reject: (e: Error) => void }
  >();

  /**
   * Signs the zone at `zone.serial`. With `delta` (the change from `delta.fromSerial`) and the thread
   * holding the zone at that serial, only the change crosses to the thread; else the whole content.
   */
  sign(
    zone: { origin: Name; soa: SoaFields; serial: number; rrsets: readonly RRsetData[] },
    settings: EffectiveDnssec,
    keys: readonly ZoneKey[],
    signedAt: number,
    delta?: RRsetDelta<RRsetData> & { fromSerial: number },
  ): Promise<ZoneDnssecData> {
    const worker = this.start();
    const id = ++this.next;
    const key = nameKey(zone.origin);
    const held = this.held.get(key);
    // Plain RRset data only (the zone's RRsets carry their origins and steering besides).
    const plain = (r: RRsetData): RRsetData => ({ owner: r.owner, type: r.type, ttl: r.ttl, rdata: r.rdata });
    const request: ZoneToSignRequest = { origin: zone.origin, soa: zone.soa, serial: zone.serial };
    if (delta && held === delta.fromSerial)
      request.change = {
        fromSerial: delta.fromSerial,
        upserts: delta.upserts.map(plain),
        deletes: delta.deletes.map((d) => ({ owner: d.owner, type: d.type })),
      };
    else request.rrsets = zone.rrsets.map(plain);
    // Until the thread answers, what it holds is not known.
    this.held.delete(key);
    return new Promise<ZoneDnssecData>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      worker.postMessage({
        type: 'sign',
        id,
        zone: request,
        settings,
        keys: [...keys],
        signedAt,
      } satisfies SigningRequest);
    }).then((data) => {
      if (this.worker === worker) this.held.set(key, zone.serial);
      return data;
    });
  }

  /** Drops a zone's kept signatures (it is no longer signed or served). */
  forget(origin: Name): void {
    this.held.delete(nameKey(origin));
    this.worker?.postMessage({ type: 'forget', origin } satisfies SigningRequest);
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate();
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(new URL('./signing-worker.ts', import.meta.url), { name: 'zk-signing' });
    worker.unref();
    worker.on('message', (m: SigningResponse) => {
      const waiting = this.waiting.get(m.id);
      if (!waiting) return;
      this.waiting.delete(m.id);
      if ('error' in m) waiting.reject(new Error(m.error));
      else waiting.resolve({ ...m.data, records: unpackRecords(m.packed) });
    });
    const fail = (error: Error) => {
      if (this.worker === worker) this.worker = undefined;
      this.held.clear();
      for (const w of this.waiting.values()) w.reject(error);
      this.waiting.clear();
    };
    worker.on('error', (e) => fail(new Error(`zone signing thread: ${e.message}`)));
    worker.on('exit', (code) => fail(new Error(`zone signing thread exited with code ${code}`)));
    this.worker = worker;
    return worker;
  }
}
