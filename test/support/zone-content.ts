/**
 * A zone's content as served, read whole at one serial: by AXFR from Zonekeeper (real `dig`), or from
 * a Knot secondary through its control socket (`knotc zone-read`, a consistent view of the zone).
 * Records become `owner TTL TYPE RDATA` lines (owner lowercased, class dropped, spaces collapsed),
 * sorted and without the SOA, so that two servers' versions of one serial compare as strings.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { KNOTC } from './knot.ts';
import type { Secondary } from './secondaries.ts';

const run = promisify(execFile);

export interface ZoneVersion {
  serial: number;
  /** Sorted record lines without the SOA. */
  content: string;
}

/** Normalizes `owner TTL [IN] TYPE RDATA...` lines into a ZoneVersion; undefined without a SOA. */
export function zoneVersion(lines: readonly string[]): ZoneVersion | undefined {
  let serial: number | undefined;
  const records = new Set<string>();
  for (const raw of lines) {
    const fields = raw.trim().split(/\s+/);
    if (fields.length < 4 || raw.trimStart().startsWith(';')) continue;
    const [owner, ttl, ...rest] = fields;
    if (rest[0] === 'IN') rest.shift();
    const [type, ...rdata] = rest;
    if (type === 'SOA') {
      serial = Number(rdata[2]);
      continue;
    }
    records.add(`${owner!.toLowerCase()} ${ttl} ${type} ${rdata.join(' ')}`);
  }
  return serial === undefined ? undefined : { serial, content: [...records].sort().join('\n') };
}

/** AXFR over TCP with `dig`; undefined when the transfer fails (server down, refused). */
export async function axfr(port: number, zone: string): Promise<ZoneVersion | undefined> {
  try {
    const { stdout } = await run(
      'dig',
      [
        '@127.0.0.1',
        '-p',
        String(port),
        zone,
        'AXFR',
        '+tcp',
        '+time=2',
        '+tries=1',
        '+nocmd',
        '+nostats',
        '+nocomments',
      ],
      { timeout: 10_000 },
    );
    if (/Transfer failed|connection refused|timed out|no servers/i.test(stdout)) return undefined;
    return zoneVersion(stdout.split('\n'));
  } catch {
    return undefined;
  }
}

/** The zone as a Knot secondary holds it (`knotc zone-read`); undefined when it holds none yet. */
export async function knotZone(secondary: Secondary, zone: string): Promise<ZoneVersion | undefined> {
  if (secondary.kind !== 'knot') throw new Error('knotZone reads a Knot secondary');
  try {
    const { stdout } = await run(KNOTC, ['-c', path.join(secondary.dir, 'knot.conf'), 'zone-read', zone], {
      timeout: 10_000,
    });
    // `[example.com.] owner TTL TYPE RDATA`
    return zoneVersion(stdout.split('\n').map((l) => l.replace(/^\[[^\]]*\]\s*/, '')));
  } catch {
    return undefined;
  }
}

/**
 * Every (serial, content) seen from any server: a serial seen again with other content is a
 * violation of "one serial, one content".
 */
export class SerialLedger {
  private readonly seen = new Map<number, { content: string; source: string }>();
  readonly violations: string[] = [];

  get size(): number {
    return this.seen.size;
  }

  /** The highest serial seen (RFC 1982 order is not needed: the test's serials never wrap). */
  get highest(): number | undefined {
    let max: number | undefined;
    for (const s of this.seen.keys()) if (max === undefined || s > max) max = s;
    return max;
  }

  note(version: ZoneVersion | undefined, source: string): void {
    if (!version) return;
    const before = this.seen.get(version.serial);
    if (!before) {
      this.seen.set(version.serial, { content: version.content, source });
      return;
    }
    if (before.content !== version.content)
      this.violations.push(
        `serial ${version.serial}: ${before.source} served\n${before.content}\n--- and ${source} served\n${version.content}`,
      );
  }

  content(serial: number): string | undefined {
    return this.seen.get(serial)?.content;
  }
}
