/** The zone signing thread (see signing-thread.ts): signs zones, keeping each zone's incremental signer. */
import { parentPort } from 'node:worker_threads';
import type { SigningRequest, SigningResponse } from './signing-thread.ts';
import { KeptSigners, packRecords, signForServing } from './zone-signing.ts';

const port = parentPort;
if (!port) throw new Error('signing-worker.ts runs as a worker thread');
const kept = new KeptSigners();

port.on('message', (m: SigningRequest) => {
  if (m.type === 'forget') {
    kept.forget(m.origin);
    return;
  }
  try {
    const rrsets = kept.content(m.zone.origin, m.zone.serial, m.zone.rrsets, m.zone.change);
    const { records, ...data } = signForServing(
      { ...m.zone, rrsets },
      m.settings,
      m.keys,
      m.signedAt,
      undefined,
      kept,
    );
    const packed = packRecords(records);
    port.postMessage({ id: m.id, data, packed } satisfies SigningResponse, [
      packed.fields.buffer,
      packed.rdata.buffer,
    ]);
  } catch (e) {
    port.postMessage({
      id: m.id,
      error: e instanceof Error ? e.message : String(e),
    } satisfies SigningResponse);
  }
});
