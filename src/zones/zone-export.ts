/**
 * `zone export`, the pure part: pick the serial `serve` would publish for an assembled zone and print
 * the zone file. Loading the manifests is the CLI's job (src/cli/zone-export.ts).
 */
import type { AssembledZone } from './assemble.ts';
import type { ZoneSerialState } from './serial.ts';
import { chooseSerial } from './serial-policy.ts';
import { printZoneFile } from './zone-file.ts';

/**
 * The serial `serve` publishes for this content, from its persisted state, by the rule serve applies
 * when it starts (ADR 0005, `chooseSerial`): the stored serial when the stored content hash is this content's; the
 * next serial (`max(YYYYMMDD00, last + 1)`) when it is another content's, or unknown (a running serve
 * saves the hash of a change's serial a moment after the serial; until then it cannot be known which
 * content that serial was served with, so this content is shown under the serial it would get); the
 * date serial when nothing is stored. So an export never shows a serial with content other than what
 * serve served under it.
 */
export function servedSerial(zone: AssembledZone, stored: ZoneSerialState | undefined, now: Date): number {
  return chooseSerial({ known: stored, hash: zone.hash, now }).serial;
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
