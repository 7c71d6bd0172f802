/**
 * The watch thread's keep-alive agents (watch-worker.ts): one per TLS setting in use. A setting is
 * known by a SHA-256 of it, so no private key or passphrase sits in plain text as a map key; when a
 * client certificate rotates, the agent of the previous setting is destroyed as soon as no watch runs
 * on it any more (a watch holds its connection while it runs), instead of staying for the process's life.
 */
import { createHash } from 'node:crypto';
import type { WatchTls } from './watch-thread.ts';

export interface Destroyable {
  destroy(): void;
}

const FIELDS = ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername'] as const;

/** SHA-256 of the settings, field by field, each length-prefixed (no two settings run together). */
export function tlsKey(tls: WatchTls): string {
  const hash = createHash('sha256');
  for (const field of FIELDS) {
    const value = tls[field];
    if (value === undefined) continue;
    const bytes =
      value instanceof Uint8Array
        ? value
        : Buffer.from(typeof value === 'string' ? value : String(value), 'utf8');
    const head = Buffer.alloc(4);
    head.writeUInt32BE(bytes.length);
    hash.update(field).update(head).update(bytes);
  }
  return hash.digest('hex');
}

export class AgentCache<A extends Destroyable> {
  private readonly entries = new Map<string, { agent: A; users: number }>();
  private readonly create: (tls: WatchTls) => A;
  /** The setting of the latest watch: its agent stays while idle, for the next watch. */
  private current: string | undefined;

  constructor(create: (tls: WatchTls) => A) {
    this.create = create;
  }

  /** The hashes of the settings held (tests). */
  get keys(): string[] {
    return [...this.entries.keys()];
  }

  /** The agent for a watch with these settings; `release` when the watch has ended (once). */
  acquire(tls: WatchTls): { agent: A; release: () => void } {
    const key = tlsKey(tls);
    let entry = this.entries.get(key);
    if (!entry) {
      entry = { agent: this.create(tls), users: 0 };
      this.entries.set(key, entry);
    }
    entry.users++;
    this.current = key;
    this.sweep();
    const held = entry;
    let released = false;
    return {
      agent: held.agent,
      release: () => {
        if (released) return;
        released = true;
        held.users--;
        this.sweep();
      },
    };
  }

  /** Agents of replaced settings with no watch left: destroyed (their idle sockets closed). */
  private sweep(): void {
    for (const [key, entry] of this.entries) {
      if (key === this.current || entry.users > 0) continue;
      this.entries.delete(key);
      entry.agent.destroy();
    }
  }
}
