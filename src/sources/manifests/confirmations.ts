/**
 * Confirmations of held changes in folder mode: `zonekeeper confirm --state-dir DIR ZONE HASH` writes
 * `DIR/confirmations/<namespace>/<name>` holding the hash; a running `serve` polls the folder and
 * reconsiders the zone. A confirmation releases only the change with exactly that hash; one left from an
 * earlier change does nothing (and the held zone's condition says so).
 */
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DEFAULT_NAMESPACE } from '../../api/index.ts';

const DIR = 'confirmations';
const HASH = /^[0-9a-f]{32}$/;
const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** `namespace/name` of a zone given as `NAME` or `NAMESPACE/NAME`; throws with what to fix. */
export function zoneKeyOf(zone: string): string {
  const [namespace, name] = zone.includes('/') ? zone.split('/', 2) : [DEFAULT_NAMESPACE, zone];
  if (!LABEL.test(namespace ?? '') || !SUBDOMAIN.test(name ?? '') || zone.split('/').length > 2)
    throw new Error(
      `${JSON.stringify(zone)} is not a DNSZone; give NAME or NAMESPACE/NAME, e.g. default/example-com`,
    );
  return `${namespace}/${name}`;
}

/** Writes a confirmation (atomically: a temporary file renamed into place). */
export async function writeConfirmation(stateDir: string, zone: string, hash: string): Promise<string> {
  const key = zoneKeyOf(zone);
  if (!HASH.test(hash))
    throw new Error(
      `${JSON.stringify(hash)} is not a change hash; copy the 32 hex digits from the zone's Programmed condition (reason ChangeHeld)`,
    );
  const [namespace, name] = key.split('/') as [string, string];
  const dir = path.join(stateDir, DIR, namespace);
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, name);
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, `${hash}\n`);
  await rename(temporary, file);
  return file;
}

/** Reads every confirmation under the state folder: zone key → hash. */
export async function readConfirmations(stateDir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  let namespaces: string[];
  try {
    namespaces = await readdir(path.join(stateDir, DIR));
  } catch {
    return out;
  }
  for (const namespace of namespaces) {
    if (!LABEL.test(namespace)) continue;
    let names: string[];
    try {
      names = await readdir(path.join(stateDir, DIR, namespace));
    } catch {
      continue;
    }
    for (const name of names) {
      if (!SUBDOMAIN.test(name)) continue;
      try {
        const hash = (await readFile(path.join(stateDir, DIR, namespace, name), 'utf8')).trim();
        if (HASH.test(hash)) out.set(`${namespace}/${name}`, hash);
      } catch {
        // gone meanwhile
      }
    }
  }
  return out;
}

/** Follows the confirmations of a state folder by polling it (a few small files). */
export class ConfirmationFiles {
  private current = new Map<string, string>();
  private timer?: NodeJS.Timeout;
  private polling = false;
  private readonly stateDir: string | undefined;
  private readonly pollMs: number;

  constructor(stateDir: string | undefined, pollMs = 1000) {
    this.stateDir = stateDir;
    this.pollMs = pollMs;
  }

  /** The hashes confirmed for a zone (at most one file per zone). */
  get(key: string): readonly string[] {
    const hash = this.current.get(key);
    return hash === undefined ? [] : [hash];
  }

  /** Reads them once, then polls; `changed` gets the zone keys whose confirmation changed. */
  async start(changed: (keys: string[]) => void): Promise<void> {
    if (this.stateDir === undefined) return;
    const dir = this.stateDir;
    this.current = await readConfirmations(dir);
    this.timer = setInterval(() => {
      if (this.polling) return;
      this.polling = true;
      readConfirmations(dir)
        .then((next) => {
          const keys: string[] = [];
          for (const [key, hash] of next) if (this.current.get(key) !== hash) keys.push(key);
          for (const key of this.current.keys()) if (!next.has(key)) keys.push(key);
          this.current = next;
          if (keys.length > 0) changed(keys);
        })
        .finally(() => {
          this.polling = false;
        });
    }, this.pollMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
