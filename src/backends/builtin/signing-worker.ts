/** The zone signing thread (see signing-thread.ts): signs whole zones, keeping each zone's signatures. */
import { parentPort } from 'node:worker_threads';
import { SignatureReuse } from '../../dns/dnssec/rrsig.ts';
import { nameKey } from '../../dns/name.ts';
import type { SigningRequest, SigningResponse } from './signing-thread.ts';
import { signForServing } from './zone-signing.ts';

const port = parentPort;
if (!port) throw new Error('signing-worker.ts runs as a worker thread');
const kept = new Map<string, SignatureReuse>();

port.on('message', (m: SigningRequest) => {
  if (m.type === 'forget') {
    kept.delete(nameKey(m.origin));
    return;
  }
  try {
    const key = nameKey(m.zone.origin);
    let reuse = kept.get(key);
    if (!reuse) {
      reuse = new SignatureReuse();
      kept.set(key, reuse);
    }
    const data = signForServing(m.zone, m.settings, m.keys, m.signedAt, undefined, reuse);
    port.postMessage({ id: m.id, data } satisfies SigningResponse);
  } catch (e) {
    port.postMessage({
      id: m.id,
      error: e instanceof Error ? e.message : String(e),
    } satisfies SigningResponse);
  }
});
