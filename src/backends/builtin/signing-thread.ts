/**
 * Zone signing on a worker thread of its own: the whole-zone signing of a new serial (seconds for a
 * large zone) never runs on a thread that answers DNS. The thread keeps each zone's incremental signer
 * (`KeptSigners`, dnssec-incremental.ts), so a change signs only what it touches.
 */
import { Worker } from 'node:worker_threads';
import type { EffectiveDnssec } from '../../api/dnssec.ts';
import type { Name } from '../../dns/name.ts';
import type { ZoneDnssecData } from '../../server/zone-dnssec.ts';
import type { ZoneKey } from '../../zones/dnssec-key-set.ts';
import type { RRsetData } from '../../zones/rrset.ts';
import type { SoaFields } from '../../zones/soa.ts';

export interface ZoneToSignRequest {
  origin: Name;
  soa: SoaFields;
  serial: number;
  rrsets: RRsetData[];
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

export type SigningResponse = { id: number; data: ZoneDnssecData } | { id: number; error: string };

export class SigningThread {
  private worker: Worker | undefined;
  private next = 0;
  private readonly waiting = new Map<
    number,
    { resolve: (d: ZoneDnssecData) => void; reject: (e: Error) => void }
  >();

  sign(
    zone: ZoneToSignRequest,
    settings: EffectiveDnssec,
    keys: readonly ZoneKey[],
    signedAt: number,
  ): Promise<ZoneDnssecData> {
    const worker = this.start();
    const id = ++this.next;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      worker.postMessage({
        type: 'sign',
        id,
        zone: {
          origin: zone.origin,
          soa: zone.soa,
          serial: zone.serial,
          // Plain RRset data only (the zone's RRsets carry their origins and steering besides).
          rrsets: zone.rrsets.map((r) => ({ owner: r.owner, type: r.type, ttl: r.ttl, rdata: r.rdata })),
        },
        settings,
        keys: [...keys],
        signedAt,
      } satisfies SigningRequest);
    });
  }

  /** Drops a zone's kept signatures (it is no longer signed or served). */
  forget(origin: Name): void {
    this.worker?.postMessage({ type: 'forget', origin } satisfies SigningRequest);
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate();
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(new URL('./signing-worker.ts', import.meta.url));
    worker.unref();
    worker.on('message', (m: SigningResponse) => {
      const waiting = this.waiting.get(m.id);
      if (!waiting) return;
      this.waiting.delete(m.id);
      if ('error' in m) waiting.reject(new Error(m.error));
      else waiting.resolve(m.data);
    });
    const fail = (error: Error) => {
      if (this.worker === worker) this.worker = undefined;
      for (const w of this.waiting.values()) w.reject(error);
      this.waiting.clear();
    };
    worker.on('error', (e) => fail(new Error(`zone signing thread: ${e.message}`)));
    worker.on('exit', (code) => fail(new Error(`zone signing thread exited with code ${code}`)));
    this.worker = worker;
    return worker;
  }
}
