/**
 * The manifest source's parse worker (a worker thread): reads, parses and validates manifest files
 * for `WorkerManifestParser`, so that YAML never runs on a thread that answers DNS.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { flushCompileCache } from '../../util/compile-cache.ts';
import { loadFrontDoors } from '../front-door-modules.ts';
import {
  DOCUMENTS_PER_MESSAGE,
  encodeDocuments,
  type LocateRequest,
  notParsed,
  type ParserRequest,
  type ParserResponse,
  parseManifestFileToSend,
} from './manifest-parser.ts';

const data = workerData as { frontDoorModules?: string[]; held?: number } | null;
/** Files kept for `locate` until released; the oldest go first beyond this many (a pool shares 8). */
const HELD = data?.held ?? 8;

const port = parentPort;
if (!port) throw new Error('parse-worker.ts runs as a worker thread');
const held = new Map<number, (requests: readonly LocateRequest[]) => (number | undefined)[]>();
let next = 0;
const send = (m: ParserResponse) => port.postMessage(m);
const doors = loadFrontDoors(data?.frontDoorModules ?? []);
// A module that fails to load fails each parse request (awaited there), not the worker.
doors.catch(() => undefined);
// This thread's modules are loaded: their compiled form goes to the cache now (docs/adr/0030).
flushCompileCache();

port.on('message', async (m: ParserRequest) => {
  try {
    switch (m.type) {
      case 'parse': {
        // A front-door module that failed to load fails the request (the reload), not the file.
        const loaded = await doors;
        try {
          const { parsed, locate } = await parseManifestFileToSend(m.file, m.maxBytes, loaded);
          for (let i = 0; i < parsed.documents.length; i += DOCUMENTS_PER_MESSAGE) {
            send({
              type: 'documents',
              id: m.id,
              json: encodeDocuments(
                parsed.documents,
                parsed.checked,
                i,
                Math.min(i + DOCUMENTS_PER_MESSAGE, parsed.documents.length),
              ),
            });
          }
          const token = ++next;
          if (locate) {
            held.set(token, locate);
            while (held.size > HELD) held.delete(held.keys().next().value!);
          }
          send({ type: 'parsed', id: m.id, token, fileErrors: parsed.fileErrors });
        } catch (e) {
          // Documents that cannot be sent (a value no JSON text carries, as a front door's BigInt): the
          // file's error, not the reload's.
          send({ type: 'unparsed', id: m.id, error: notParsed(m.file, e) });
        }
        return;
      }
      case 'locate': {
        const locate = held.get(m.token);
        send({
          type: 'located',
          id: m.id,
          lines: locate ? locate(m.requests) : m.requests.map(() => undefined),
        });
        return;
      }
      case 'release':
        held.delete(m.token);
        return;
    }
  } catch (e) {
    if (m.type !== 'release') send({ type: 'failed', id: m.id, message: (e as Error).message });
  }
});
