/**
 * `zone export`, the pure part: pick the serial `serve` would publish for an assembled zone and print
 * the zone file. Loading the manifests is the CLI's job (src/cli/zone-export.ts).
 */
import type { ZoneSerialState } from '../control/serial-store.ts';
import type { AssembledZone } from './assemble.ts';
import { nextSerial } from './serial.ts';
import { printZoneFile } from './zone-file.ts';

/**
 * The serial `serve` publishes for this content, from its persisted state: the stored serial while the
 * stored content hash is this content's, or while the hash is still pending (a running serve stores the
 * serial of a change at once and its hash a moment later); the next serial (`max(YYYYMMDD00,
 * last + 1)`) when the content differs from what was published, as serve decides on its next start;
 * the date serial when nothing is stored.
 */
export function servedSerial(zone: AssembledZone, stored: ZoneSerialState | undefined, now: Date): number {
  if (stored && (stored.hash === undefined || stored.hash === zone.hash)) return stored.serial;
  return nextSerial(stored?.serial, now);
}

export interface ZoneExport {
  serial: number;
  text: string;
}

/** The zone file of `zone` exactly as served at the serial `serve` would publish. */
export function exportZone(
  zone: AssembledZone,
  stored: ZoneSerialState | undefined,
  now: Date,
  source: string,
): ZoneExport {
  const serial = servedSerial(zone, stored, now);
  const header = [
    `${zone.origin} as \`zonekeeper serve --manifests ${source}\` serves it`,
    `serial ${serial}, content hash ${zone.hash.slice(0, 16)}`,
  ].join('\n');
  return { serial, text: printZoneFile(zone, serial, header) };
}
